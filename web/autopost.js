// RSS feeds (#/autopost): the organization's RSS/Atom feeds whose new items become posts. The list shows each feed's
// state, last check and what went wrong; the form adds one (address, channels, the post's text with its
// placeholders, when it goes out, a picture or not, how often) with a live preview of the post its newest item
// would make; each feed can be paused, resumed, checked now and deleted (asked first).
// Rules: editors and admins change feeds (the API checks again); others see the list. Pictures of the preview are
// named, not shown (the page loads nothing from elsewhere). Times in the organization's zone.
import { h, t, tn, put, api, errorBox, field, fmtDateTime, mayDo, avatar } from './util.js';
import { confirmDialog } from './widgets.js';

const WHEN = [['queue', 'Add to the queue'], ['now', 'Publish at once'], ['review', 'Save as drafts to review']];
const whenLabel = (mode) => ({ queue: t('Add to the queue'), now: t('Publish at once'), review: t('Save as drafts to review') })[mode] || mode;
const STATE_WORDS = () => ({ new: t('Waiting for its first check'), active: t('Active'), failing: t('Failing'), paused: t('Paused') });
const OUTCOMES = () => ({ posted: t('Posted'), duplicate: t('Skipped: duplicate'), refused: t('Refused'), skipped: t('Skipped') });

export async function autopostPage(main) {
  const errors = errorBox();
  const list = h('ul.feed-list');
  const editor = mayDo('editor');
  const [listing, channels] = await Promise.all([api('GET', '/autopost'), api('GET', '/integrations')]);
  const live = (channels.integrations || channels || []).filter((channel) => !channel.disabled);
  const byId = new Map(live.map((channel) => [channel.id, channel]));

  async function reload() {
    try { show((await api('GET', '/autopost')).feeds); } catch (error) { errors.show(error); }
  }
  async function act(call) {
    errors.show(null);
    try { await call(); } catch (error) { errors.show(error); errors.focus(); }
    await reload();
  }
  function show(feeds) {
    list.replaceChildren(...feeds.map(feedRow));
    if (!feeds.length) list.append(h('li.muted', t('No feeds yet. Add the address of a blog’s or shop’s RSS or Atom feed: its new articles become posts.')));
  }
  function feedRow(feed) {
    const words = STATE_WORDS();
    const path = `/autopost/${encodeURIComponent(feed.id)}`;
    const names = feed.integrations.map((id) => byId.get(id)?.name).filter(Boolean);
    const last = feed.lastFetchAt ? t('Last checked {when}: {result}', { when: fmtDateTime(Date.parse(feed.lastFetchAt)), result: feed.lastError || feed.lastResult || '' }) : t('Not checked yet');
    return h('li.feed', { dataset: { id: feed.id } },
      h('div.feed-head',
        h(`span.badge.feed-${feed.state}`, words[feed.state] || feed.state),
        h('strong.feed-url', feed.url)),
      h('p.muted', t('Every {n} minutes', { n: feed.intervalMinutes }), ' · ', whenLabel(feed.mode), ' · ',
        names.length ? names.join(', ') : t('no channel left')),
      h('p.feed-template', h('code', feed.template)),
      h(feed.lastError ? 'p.feed-error' : 'p.muted', last),
      feed.pausedReason ? h('p.feed-error', t('Paused because {reason}.', { reason: feed.pausedReason })) : null,
      feed.recent.length ? h('ul.feed-recent', feed.recent.map((item) => h('li',
        h('span', `${OUTCOMES()[item.outcome] || item.outcome}: `), item.title || item.link,
        item.reason ? h('small.muted', ` — ${item.reason}`) : null))) : null,
      editor ? h('div.actions',
        h('button', { type: 'button', onclick: () => act(() => api('PUT', path, { paused: !feed.paused })) },
          feed.paused ? t('Resume') : t('Pause')),
        h('button', { type: 'button', onclick: () => act(() => api('POST', `${path}/fetch`)) }, t('Check now')),
        h('button.danger', { type: 'button', onclick: async () => {
          if (await confirmDialog(t('Delete feed'), t('Delete the feed {url}? The posts it made stay.', { url: feed.url }), t('Delete'))) act(() => api('DELETE', path));
        } }, t('Delete'))) : null);
  }

  put(main, h('div.page-head', h('h1', t('RSS feeds'))), errors, h('section.card', h('h2', t('Feeds')), list),
    editor ? addForm(live, reload, errors) : null);
  show(listing.feeds);
}

/** The form that adds a feed, with the preview of the post the feed's newest item would make. */
function addForm(channels, reload, errors) {
  const url = h('input', { type: 'url', name: 'url', required: true, maxlength: 2000, placeholder: 'https://example.com/feed.xml' });
  const template = h('textarea', { name: 'template', rows: 3, maxlength: 2000, required: true }, '{{title}} {{url}}');
  const mode = h('select', { name: 'mode' }, WHEN.map(([value]) => h('option', { value }, whenLabel(value))));
  const image = h('input#feed-include-image', { type: 'checkbox', name: 'includeImage', checked: true });
  const every = h('input', { type: 'number', name: 'intervalMinutes', min: 1, max: 10080, value: 60, required: true });
  const picks = channels.map((channel) => h('label.feed-channel', h('input', { type: 'checkbox', value: channel.id }), avatar(channel, 20), ` ${channel.name}`));
  const chosen = () => picks.map((label) => label.querySelector('input')).filter((box) => box.checked).map((box) => box.value);
  const waiting = () => h('p.muted', t('Type the feed’s address to see the post its newest article would make.'));
  const preview = h('div.feed-preview', { role: 'status', 'aria-live': 'polite' }, waiting());
  let asked = 0;
  let timer = null;
  async function refreshPreview() {
    const mine = ++asked;
    if (!/^https?:\/\/\S+/i.test(url.value.trim())) return;
    preview.replaceChildren(h('p.muted', t('Reading the feed…')));
    try {
      const answer = await api('POST', '/autopost/preview', { url: url.value.trim(), template: template.value || '{{title}}', includeImage: image.checked });
      if (mine !== asked) return;
      preview.replaceChildren(
        h('p.muted', tn('{n} article in the feed; the newest would become:', '{n} articles in the feed; the newest would become:', answer.items)),
        h('div.feed-post', answer.text ? answer.text.split('\n').map((line) => h('p', line)) : h('p.muted', t('(no text)'))),
        answer.image ? h('p.muted.feed-picture', t('With the picture {url}', { url: answer.image })) : null);
    } catch (error) {
      if (mine !== asked) return;
      preview.replaceChildren(h('p.feed-error', error.message));
    }
  }
  const later = () => { clearTimeout(timer); timer = setTimeout(refreshPreview, 500); };
  for (const input of [url, template]) input.addEventListener('input', later);
  image.addEventListener('change', later);
  const submit = h('button.primary', { type: 'submit' }, t('Add feed'));
  const form = h('form.card.feed-form', { onsubmit: async (event) => {
    event.preventDefault();
    errors.show(null);
    submit.disabled = true;
    try {
      await api('POST', '/autopost', { url: url.value.trim(), integrations: chosen(), template: template.value, mode: mode.value, includeImage: image.checked, intervalMinutes: Number(every.value) });
      url.value = '';
      asked += 1;  // (a preview still on its way is of the feed just added)
      preview.replaceChildren(waiting());
      await reload();
    } catch (error) { errors.show(error); errors.focus(); } finally { submit.disabled = false; }
  } },
  h('h2', t('Add a feed')),
  field(t('Feed address'), url, t('The RSS or Atom feed of a blog, a shop or a news site.')),
  h('fieldset.feed-channels', h('legend', t('Post on')), picks.length ? picks : h('p.muted', t('Connect a channel first.'))),
  field(t('Text of each post'), template, t('{{title}} the article’s title, {{url}} its address, {{description}} its summary (up to 300 characters), {{author}} its author.')),
  h('div.feed-row',
    field(t('When a new article appears'), mode),
    field(t('Check every (minutes)'), every)),
  h('div.field.check', image, h('label', { for: 'feed-include-image' }, t('Add the article’s picture'))),
  h('h3', t('Preview')), preview,
  h('div.actions', submit));
  return form;
}
