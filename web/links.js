// Short links (issue 26): the composer's question, the organization's preference in Settings → General, and a
// post's links with their clicks on the post page. The server decides and counts (docs/short-links.md); this
// module only asks, sends the answer and shows the counts.
import { h, t, tn, api, errorBox, fmtDay, lang, nextId, safeUrl, session } from './util.js';
import { openDialog } from './widgets.js';

const LINK = /https?:\/\/\S/i;

/** What to send as `shortLink` for these texts: the preference "yes" or "no" decides; "ask" asks the person when
 * a text has a link. Closing the question keeps the links as written. */
export async function askShortLink(texts) {
  if (!texts.some((text) => LINK.test(text || ''))) return false;
  const { shortLink } = await api('GET', '/organization');
  if (shortLink !== 'ask') return shortLink === 'yes';
  return new Promise((resolve) => {
    let chosen = false;
    const dialog = openDialog(t('Shorten links and count clicks?'),
      h('p', t('Each link in this post goes out as a short link that counts how many people open it.')),
      h('div.actions',
        h('button.primary', { type: 'button', onclick: () => { chosen = true; dialog.close(); } }, t('Shorten links')),
        h('button', { type: 'button', onclick: () => dialog.close() }, t('Keep links as written'))));
    dialog.addEventListener('close', () => resolve(chosen));
  });
}

/** Settings → General: the organization's preference, in words. */
export function shortLinkSetting(org) {
  const errors = errorBox();
  const saved = h('span.muted', { role: 'status' });
  const choice = h('select', { id: nextId() }, [['ask', t('Ask each time')], ['yes', t('Always')], ['no', t('Never')]]
    .map(([value, label]) => h('option', { value, selected: org.shortLink === value }, label)));
  return h('form.card.short-link-setting', { onsubmit: async (event) => {
    event.preventDefault();
    errors.show(null);
    try {
      const answer = await api('PUT', '/organization', { shortLink: choice.value });
      session.organization = { ...session.organization, ...answer };
      saved.textContent = t('Saved.');
    } catch (error) { errors.show(error); }
  } }, h('h2', t('Short links')),
  h('div.field', h('label', { for: choice.id }, t('Shorten links in posts')), choice,
    h('span.hint', t('Links go out as short links that count clicks; bots and link previews are counted apart.'))),
  errors, h('button', { type: 'submit' }, t('Save')), ' ', saved);
}

/** The post page: each link of the post with its clicks, bots apart, and a bar per day (the last 14 with clicks). */
export async function linksPanel(main, post) {
  const { links } = await api('GET', `/posts/${post.id}/links`);
  if (!links.length || !main.isConnected) return;
  const number = (n) => n.toLocaleString(lang());
  const item = (link) => {
    const days = link.days.slice(-14);
    const top = Math.max(1, ...days.map((day) => day.clicks));
    const bar = (clicks) => { const el = h('span.bar'); el.style.width = `${Math.round((clicks / top) * 100)}%`; return el; };
    return h('li.short-link',
      h('p.link-url', safeUrl(link.url) ? h('a', { href: safeUrl(link.url), target: '_blank', rel: 'noopener noreferrer' }, link.url) : link.url),
      h('p.link-counts', h('strong', tn('{n} click', '{n} clicks', link.clicks)),
        h('span.muted', ' · ', tn('{n} from a bot or link preview', '{n} from bots and link previews', link.botClicks))),
      h('p.muted.link-short', link.short),
      days.length ? h('ul.bars.link-days', { 'aria-label': t('Clicks by day') }, days.map((day) => h('li',
        h('span.bar-label', fmtDay(Date.parse(`${day.date}T12:00:00Z`))), bar(day.clicks), h('span.bar-total', number(day.clicks))))) : null);
  };
  const section = h('section.short-links', { 'aria-labelledby': 'short-links-title' },
    h('h2#short-links-title', t('Links')), h('ol.short-link-list', links.map(item)));
  const actions = main.querySelector(':scope > .actions');  // (right under the post, above its comments)
  if (actions) actions.after(section); else main.append(section);
}
