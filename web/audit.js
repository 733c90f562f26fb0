// Settings → Audit (admins): who changed what, when and from which address (GET /audit), newest first, 50 a page,
// filtered by person or key (GET /audit/actors) and by kind of change. A table on a wide screen; on a phone each
// entry becomes a small card of labelled lines (CSS: table.audit-log).
// Rules: times in the organization's zone; actions in words ("Post deleted"), never their API names, except an
// action this file does not know yet, shown as written.
import { h, t, toTranslate, put, api, errorBox, field, fmtDateTime } from './util.js';

const ACTIONS = {
  'post.created': toTranslate('Post created'), 'post.edited': toTranslate('Post edited'), 'post.deleted': toTranslate('Post deleted'),
  'post.approved': toTranslate('Post approved'), 'post.rejected': toTranslate('Post rejected'), 'post.retried': toTranslate('Post retried'),
  'post.duplicated': toTranslate('Post duplicated'), 'post.imported': toTranslate('Post imported'),
  'post.status_changed': toTranslate('Post moved between draft and queue'), 'post.release_linked': toTranslate('Post linked to its published copy'),
  'channel.connected': toTranslate('Channel connected'), 'channel.reconnected': toTranslate('Channel reconnected'),
  'channel.updated': toTranslate('Channel changed'), 'channel.deleted': toTranslate('Channel deleted'),
  'key.created': toTranslate('API key created'), 'key.revoked': toTranslate('API key revoked'), 'key.rotated': toTranslate('Organization API key rotated'),
  'organization.updated': toTranslate('Organization settings changed'), 'alerts.updated': toTranslate('Alerts changed'),
  'webhook.created': toTranslate('Webhook added'), 'webhook.deleted': toTranslate('Webhook removed'),
  'webhook.updated': toTranslate('Webhook changed'),
  'autopost.created': toTranslate('RSS feed added'), 'autopost.updated': toTranslate('RSS feed changed'),
  'autopost.deleted': toTranslate('RSS feed deleted'), 'autopost.fetched': toTranslate('RSS feed checked'),
  'tag.created': toTranslate('Tag created'), 'tag.updated': toTranslate('Tag changed'), 'tag.deleted': toTranslate('Tag deleted'),
  'signature.created': toTranslate('Signature created'), 'signature.updated': toTranslate('Signature changed'), 'signature.deleted': toTranslate('Signature deleted'),
  'set.created': toTranslate('Set created'), 'set.updated': toTranslate('Set changed'), 'set.deleted': toTranslate('Set deleted'),
  'media.updated': toTranslate('Media changed'), 'media.deleted': toTranslate('Media deleted'),
  'oauth_client.granted': toTranslate('App connected to MCP'), 'oauth_client.revoked': toTranslate('Connected app revoked'),
  // the other parts of issue 25 (docs/audit.md: the names their routes declare)
  'member.invited': toTranslate('Person invited'), 'member.updated': toTranslate('Role changed'), 'member.removed': toTranslate('Person removed'),
  'invite.revoked': toTranslate('Invitation revoked'), 'invite.accepted': toTranslate('Invitation accepted'),
  'comment.created': toTranslate('Comment added'), 'comment.deleted': toTranslate('Comment deleted'),
  'preview_link.created': toTranslate('Review link shared'), 'preview_link.revoked': toTranslate('Review link revoked'),
};
const KINDS = [['post', toTranslate('Posts')], ['channel', toTranslate('Channels')], ['key', toTranslate('API keys')],
  ['organization', toTranslate('Organization')], ['alerts', toTranslate('Alerts')], ['webhook', toTranslate('Webhooks')],
  ['tag', toTranslate('Tags')], ['signature', toTranslate('Signatures')], ['set', toTranslate('Sets')], ['media', toTranslate('Media')],
  ['member', toTranslate('Team')], ['comment', toTranslate('Comments')], ['preview_link', toTranslate('Review links')]];
const SUBJECTS = { post: toTranslate('Post'), group: toTranslate('Post'), channel: toTranslate('Channel'), key: toTranslate('API key'),
  organization: toTranslate('Organization'), webhook: toTranslate('Webhook'), tag: toTranslate('Tag'), signature: toTranslate('Signature'),
  set: toTranslate('Set'), media: toTranslate('Media'), member: toTranslate('Person'), invite: toTranslate('Invitation'),
  comment: toTranslate('Comment'), preview_link: toTranslate('Review link') };

/** An action in words; one this file does not know (a newer part of rustiz) as written, so it still shows. */
const actionWords = (action) => (ACTIONS[action] ? t(ACTIONS[action]) : action);

/** Who made a change, in words: a person's name or e-mail, a key's name, an agent's key. */
function actorWords(actor) {
  const name = actor.name || actor.email;
  const own = actor.id === 'default';  // (the organization's own key, which has no name of its own)
  if (actor.type === 'mcp' && own) return t('Agent using the organization’s API key');
  if (actor.type === 'key' && own) return t('The organization’s API key');
  if (actor.type === 'user') return name || t('A person no longer in the organization');
  if (actor.type === 'mcp') return name ? t('Agent using the key “{name}”', { name }) : t('An agent (MCP)');
  if (actor.type === 'client') return name ? t('Client {name}', { name }) : t('A client');
  return name ? t('API key “{name}”', { name }) : t('A revoked API key');
}

/** What was changed: its kind, and a link to the post when there is one to open. */
function subjectCell(entry) {
  const subject = entry.subject;
  if (!subject) return '';
  const label = SUBJECTS[subject.type] ? t(SUBJECTS[subject.type]) : subject.type;
  if (subject.type === 'organization') return label;  // (there is only the one)
  const short = subject.id.length > 12 ? `${subject.id.slice(0, 10)}…` : subject.id;
  if (subject.type === 'post' && entry.action !== 'post.deleted') {
    return h('a', { href: `#/post/${encodeURIComponent(subject.id)}`, title: subject.id }, t('{kind} {id}', { kind: label, id: short }));
  }
  return h('span', { title: subject.id }, label, ' ', h('code', short));
}

function row(entry) {
  const cell = (label, ...content) => h('td', { 'data-label': label }, ...content);
  return h('tr',
    cell(t('When'), h('time', { datetime: entry.at }, fmtDateTime(Date.parse(entry.at)))),
    cell(t('Who'), actorWords(entry.actor)),
    cell(t('What'), actionWords(entry.action)),
    cell(t('Subject'), subjectCell(entry)),
    cell(t('Address'), entry.address ? h('code', entry.address) : ''));
}

export async function auditTab(panel) {
  const filters = { actor: '', action: '', page: 1 };
  const errors = errorBox();
  const listing = h('div.audit-listing', { 'aria-live': 'polite' });
  const who = h('select', { name: 'actor', onchange: () => { filters.actor = who.value; filters.page = 1; draw(); } },
    h('option', { value: '' }, t('Everyone')));
  const kind = h('select', { name: 'action', onchange: () => { filters.action = kind.value; filters.page = 1; draw(); } },
    h('option', { value: '' }, t('Every kind of change')), KINDS.map(([id, label]) => h('option', { value: id }, t(label))));
  put(panel, h('section.card',
    h('h2', t('Audit log')),
    h('p.hint', t('Every change made by a person, an API key or an agent, with the address it came from, newest first.')),
    h('div.audit-filters', field(t('Person or key'), who), field(t('Kind of change'), kind)),
    errors, listing));

  api('GET', '/audit/actors').then(({ actors }) => {
    const seen = new Set();
    for (const actor of actors) {
      if (seen.has(actor.id)) continue;
      seen.add(actor.id);
      who.append(h('option', { value: actor.id }, actorWords(actor)));
    }
  }).catch((error) => errors.show(error));

  async function draw() {
    errors.show(null);
    const query = new URLSearchParams({ page: String(filters.page) });
    if (filters.actor) query.set('actor', filters.actor);
    if (filters.action) query.set('action', filters.action);
    let answer;
    try { answer = await api('GET', `/audit?${query}`); } catch (error) { errors.show(error); return; }
    const pages = Math.max(1, Number(answer.pages) || 1);
    const turn = (page) => () => { filters.page = page; draw(); };
    listing.replaceChildren();
    put(listing,
      answer.entries.length
        ? h('table.audit-log', h('caption.sr-state', t('Audit log')),
          h('thead', h('tr', [t('When'), t('Who'), t('What'), t('Subject'), t('Address')].map((title) => h('th', { scope: 'col' }, title)))),
          h('tbody', answer.entries.map(row)))
        : h('p.muted', filters.actor || filters.action ? t('No change matches these filters.') : t('No change recorded yet.')),
      pages > 1 ? h('nav.pager', { 'aria-label': t('Pages') },
        filters.page > 1 ? h('button', { type: 'button', onclick: turn(filters.page - 1) }, t('Newer')) : null,
        h('span.muted', t('Page {page} of {pages}', { page: filters.page, pages })),
        filters.page < pages ? h('button', { type: 'button', onclick: turn(filters.page + 1) }, t('Older')) : null) : null);
  }
  await draw();
}
