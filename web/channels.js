// Channels: a grid of cards (picture, platform, name and handle, state, id), each with a "⋯" menu (rename, posting
// times, group, credentials, copy id, figures, disable, delete), and "Add channel": one dialog with every platform,
// then its credential form or its own sign-in.
// Rules: a picture that fails shows the initial (util.avatar); a link's query shows only rustiz's own words
// (CONNECT_NOTICES/PROBLEMS); posting times are minutes after midnight in the organization's timezone.
import { h, t, tn, put, avatar, api, errorBox, field, providers, go, mayDo } from './util.js';
import { credentialInputs, credentialsOf, credentialsForm } from './credentials.js';
import { openDialog, confirmDialog, menuButton, copyText } from './widgets.js';
import { channelAnalytics } from './analytics.js';
import { telegramConnect } from './telegram-connect.js';

const pad = (n) => String(n).padStart(2, '0');
const hhmm = (minutes) => `${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`;

/** The posting slots of a channel's postingTimes JSON, as minutes after midnight, in order. */
function slotsOf(json) {
  try { return JSON.parse(json || '[]').map(({ time }) => time).sort((a, b) => a - b); } catch { return []; }
}

/** A platform's mark: its icon (a symbol of provider-icons.svg, drawn in currentColor) on a tile, or its
 * initials for a platform the file does not know; its name for screen readers is given by the caller. */
export function platformMark(provider, identifier) {
  const mark = h('span.platform-mark', { 'aria-hidden': 'true', dataset: { platform: identifier } });
  if (!/^[a-z0-9-]+$/.test(identifier || '')) {
    mark.textContent = (provider?.name || identifier || '?').replace(/[^A-Za-z0-9]/g, '').slice(0, 2) || '?';
    return mark;
  }
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  const use = document.createElementNS('http://www.w3.org/2000/svg', 'use');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('focusable', 'false');
  use.setAttribute('href', `/web/provider-icons.svg#p-${identifier}`);
  svg.append(use);
  mark.append(svg);
  return mark;
}

export async function channelsPage(main, { query } = {}) {
  const [channels, groups, known] = await Promise.all([api('GET', '/integrations'), api('GET', '/groups'), providers()]);
  // Each channel's own row says whether it needs reconnecting and its posting times (the list keeps Postiz's shape).
  const rows = await Promise.all(channels.map((c) => api('GET', `/integrations/${c.id}`).catch(() => ({}))));
  const errors = errorBox();
  // Connecting and changing channels is an admin's (the server checks again); the others see them.
  const admin = mayDo('admin');
  const add = h('button.primary', { type: 'button', onclick: () => addChannelDialog(known) }, t('Add channel'));
  put(main, h('div.page-head', h('h1', t('Channels')), admin ? add : null), errors);
  // What an OAuth connection came back with (the server's callback redirects here): codes, in our words
  const outcome = connectOutcome(query, known);
  if (outcome.notice) put(main, h('p.notice', { role: 'status' }, outcome.notice));
  if (outcome.problem) errors.show(outcome.problem);
  const context = { known, errors, query };
  put(main, channels.length
    ? h('ul.channel-list', channels.map((c, index) => channelCard(c, rows[index], context)))
    : h('div.card.empty', admin ? [h('p', t('No channels yet. Add one to start posting.')), h('button.primary', { type: 'button', onclick: () => add.click() }, t('Add channel'))]
      : h('p', t('No channels yet. An admin of the organization connects them.'))),
  h('datalist#group-names', groups.map((g) => h('option', { value: g.name }))));
}

function channelCard(c, row, { known, errors, query }) {
  const provider = known[c.identifier];
  const change = async (body) => {
    try { await api('PUT', `/integrations/${c.id}`, body); go('#/channels'); } catch (error) { errors.show(error); }
  };
  const extra = h('div.channel-extra');
  const said = h('span.muted.channel-said', { role: 'status' });
  const reconnect = row.refreshNeeded || row.inBetweenSteps;
  const state = c.disabled ? h('span.badge.st-DRAFT', t('Disabled'))
    : row.inBetweenSteps ? h('span.badge.st-ERROR', t('Pick what to post to'))
      : reconnect ? h('span.badge.st-ERROR.needs-reconnect', t('Needs reconnect')) : h('span.badge.st-PUBLISHED.connected', t('Connected'));
  const admin = mayDo('admin');
  const credentials = admin && provider?.connectable ? credentialsButton(c, provider, row.refreshNeeded, extra,
    row.refreshNeeded && query?.get('channel') === c.id) : null;
  const items = [
    admin ? [t('Rename'), () => renameEditor(c, extra, change)] : null,
    admin ? [t('Posting times'), () => postingTimesDialog(c, slotsOf(row.postingTimes))] : null,
    [t('Queue'), () => go(`#/queue?channel=${encodeURIComponent(c.id)}`)],  // (issue 26: the queue and its weekly schedule)
    mayDo('editor') ? [t('Weekly posting schedule'), () => import('./queue.js').then((m) => m.scheduleDialog(c, () => go('#/channels')))] : null,
    admin ? [t('Group'), () => groupDialog(c, change)] : null,
    credentials ? [t('Update credentials'), () => credentials.click()] : null,
    [t('Copy ID'), () => copyText(c.id, (message) => { said.textContent = message; })],
    [t('Analytics'), () => extra.replaceChildren(channelAnalytics(c))],
    admin ? [c.disabled ? t('Enable') : t('Disable'), () => change({ disabled: !c.disabled })] : null,
    admin ? [t('Delete'), () => deleteChannel(c, errors), { danger: true }] : null,
  ].filter(Boolean);
  const slots = slotsOf(row.postingTimes);
  return h('li.channel', { dataset: { id: c.id }, class: c.disabled ? 'disabled' : null },
    h('div.channel-head',
      h('span.channel-picture', avatar(c, 48), platformMark(provider, c.identifier)),
      h('div.channel-name', h('strong', c.name),
        h('span.muted.platform', provider?.name || c.identifier, c.profile ? ` · ${c.profile}` : null)),
      menuButton(t('Actions for {name}', { name: c.name }), items)),
    h('div.channel-state', state,
      admin && row.refreshNeeded && provider?.oauth && !provider?.connectable
        ? h('button', { type: 'button', 'aria-label': t('Reconnect {name}', { name: c.name }), onclick: () => startOAuth(c.identifier, { refresh: c.id }, errors) }, t('Reconnect'))
        : null,
      row.refreshNeeded && credentials ? credentials : null,
      admin && row.inBetweenSteps ? stepPicker(c, errors) : null),
    h('dl.channel-facts',
      c.customer ? [h('dt', t('Group')), h('dd', c.customer.name)] : null,
      h('dt', t('Posting times')), h('dd.posting-times', slots.length ? slots.map(hhmm).join(', ') : t('None')),
      h('dt', t('ID')), h('dd', h('code.channel-id', c.id))),
    said, extra);
}

function renameEditor(c, extra, change) {
  const input = h('input', { type: 'text', value: c.name, required: true, maxlength: 100 });
  const form = h('form.rename', { onsubmit: (event) => { event.preventDefault(); change({ name: input.value.trim() }); } },
    field(t('New name for {name}', { name: c.name }), input),
    h('div.actions', h('button.primary', { type: 'submit' }, t('Save name')), h('button', { type: 'button', onclick: () => form.remove() }, t('Cancel'))));
  form.addEventListener('keydown', (event) => { if (event.key === 'Escape') form.remove(); });
  extra.replaceChildren(form);
  input.select();
}

/** Posting times as a list of time pickers: add, remove, save (sorted, each time once). */
function postingTimesDialog(c, slots) {
  const list = h('ul.time-list');
  const row = (minutes) => {
    const input = h('input', { type: 'time', value: hhmm(minutes), required: true, 'aria-label': t('Posting time') });
    const item = h('li', input, h('button.link', { type: 'button', onclick: () => { item.remove(); }, 'aria-label': t('Remove this time') }, '✕'));
    return item;
  };
  list.append(...slots.map(row));
  const errors = errorBox();
  const dialog = openDialog(t('Posting times of {name}', { name: c.name }),
    h('p.hint', t('The times a post added to the queue goes out, in the organization\'s timezone.')),
    h('form', { onsubmit: async (event) => {
      event.preventDefault();
      const minutes = [...list.querySelectorAll('input')].map((input) => input.value).filter(Boolean)
        .map((value) => { const [hours, mins] = value.split(':').map(Number); return hours * 60 + mins; });
      try {
        await api('PUT', `/integrations/${c.id}`, { postingTimes: [...new Set(minutes)].sort((a, b) => a - b).map((time) => ({ time })) });
        dialog.close();
        go('#/channels');
      } catch (error) { errors.show(error); }
    } }, list,
    h('button', { type: 'button', onclick: () => { const item = row(12 * 60); list.append(item); item.querySelector('input').focus(); } }, t('Add a time')),
    errors,
    h('div.actions', h('button.primary', { type: 'submit' }, t('Save times')), h('button', { type: 'button', onclick: () => dialog.close() }, t('Cancel')))));
}

function groupDialog(c, change) {
  const input = h('input', { type: 'text', value: c.customer?.name || '', list: 'group-names', maxlength: 100 });
  const dialog = openDialog(t('Group of {name}', { name: c.name }),
    h('form', { onsubmit: (event) => { event.preventDefault(); dialog.close(); change({ customer: input.value.trim() }); } },
      field(t('Group'), input, t('A customer or project; a new name makes a new group; empty: no group.')),
      h('div.actions', h('button.primary', { type: 'submit' }, t('Save group')), h('button', { type: 'button', onclick: () => dialog.close() }, t('Cancel')))));
}

/** How many posts deleting a channel removes (every post on it, two years back and ahead); null when unknown. */
async function postsOn(channelId) {
  const year = 365 * 86400000;
  const window = new URLSearchParams({ startDate: new Date(Date.now() - 2 * year).toISOString(), endDate: new Date(Date.now() + 2 * year).toISOString() });
  try {
    const { posts } = await api('GET', `/posts?${window}`);
    return new Set(posts.filter((p) => (p.integration?.id || p.integrationId) === channelId).map((p) => p.id)).size;
  } catch { return null; }
}

async function deleteChannel(c, errors) {
  const count = await postsOn(c.id);
  const question = count === null ? t('Delete the channel {name} and its posts?', { name: c.name })
    // (tn fills {n}; the name goes in after)
    : count ? tn('Delete the channel {name}? It removes its {n} post.', 'Delete the channel {name}? It removes its {n} posts.', count).replace('{name}', c.name)
      : t('Delete the channel {name}? It has no posts.', { name: c.name });
  if (!await confirmDialog(t('Delete channel'), question, t('Delete channel'))) return;
  try { await api('DELETE', `/integrations/${c.id}`); go('#/channels'); } catch (error) { errors.show(error); }
}

// The OAuth callback's outcomes, by the code it sends: only these words are ever shown (a link can carry
// any text; a problem's details, with the platform's own words, are in the notifications).
const CONNECT_NOTICES = {
  connected: (p) => t('{platform} connected', { platform: p }),
  reconnected: (p) => t('{platform} channel reconnected', { platform: p }),
  pick: (p) => t('{platform} connected: pick what to post to', { platform: p }),
};
const CONNECT_PROBLEMS = {
  expired: (p, known) => (known ? t('This {platform} connection link has expired or was already used (links last an hour and work once): start again with Add channel.', { platform: p })
    : t('This connection link has expired or was already used (links last an hour and work once): start again with Add channel.')),
  denied: (p) => t('{platform} did not give rustiz access: nothing was connected. Connect again and allow access to post.', { platform: p }),
  'no-code': (p) => t('{platform} came back without an authorization code: nothing was connected. Connect again.', { platform: p }),
  refused: (p) => t('{platform} refused the connection: nothing was connected. What it said is in Notifications. Connect again; if it keeps failing, the operator checks the app\'s settings (callback URL, permissions).', { platform: p }),
  'no-app': (p) => t('{platform}\'s app is no longer set up on this server: nothing was connected. Ask the operator (details in Notifications).', { platform: p }),
  'channel-gone': () => t('The channel to reconnect was deleted meanwhile: nothing was changed. Connect it as a new channel.'),
  'other-organization': (p) => t('This {platform} connection was started in another organization than the one you are signed in to, so nothing was connected and the link no longer works. If someone sent you this link, your {platform} account stays yours; to connect it here, use Add channel on this page.', { platform: p }),
  'other-account': (p) => t('You signed in to {platform} with another account than this channel\'s: nothing was changed. Sign in with the channel\'s account, or connect this one as a new channel.', { platform: p }),
};

function connectOutcome(query, known) {
  const name = Object.hasOwn(known, query?.get('provider') || '') ? known[query.get('provider')].name : null;
  const platform = name || t('The platform');
  const notice = query?.get('notice');
  const problem = query?.get('problem');
  return {
    notice: notice && Object.hasOwn(CONNECT_NOTICES, notice) ? CONNECT_NOTICES[notice](platform, !!name) : null,
    problem: problem ? (Object.hasOwn(CONNECT_PROBLEMS, problem) ? CONNECT_PROBLEMS[problem](platform, !!name)
      : t('The connection did not complete: nothing was connected. Connect again.')) : null,
  };
}

/** "Update credentials" (or "Reconnect" when the channel needs it) of a channel connected with pasted
 * credentials: opens its form in the card; `open`: at once (a flagged channel's notification link). */
function credentialsButton(c, provider, needsReconnect, extra, open) {
  const labelled = (label) => { button.textContent = label; button.setAttribute('aria-label', `${label} ${c.name}`); };
  const button = h('button', { type: 'button', onclick: () => {
    const item = extra.closest('li.channel');
    let form = extra.querySelector('.credentials-form');
    if (!form) {
      form = credentialsForm(c, provider, () => {
        item.querySelector('.needs-reconnect')?.replaceWith(h('span.badge.st-PUBLISHED.connected', t('Connected')));
        form.replaceWith(h('p.notice.reconnected', { role: 'status' }, needsReconnect
          ? t('{name} has its new credentials: the posts that waited for it go out now.', { name: c.name })
          : t('{name} has its new credentials.', { name: c.name })));
        button.remove();
        needsReconnect = false;
      });
      extra.replaceChildren(form);
    }
    form.querySelector('input, textarea')?.focus();
  } });
  labelled(needsReconnect ? t('Reconnect') : t('Update credentials'));
  if (open) setTimeout(() => { button.click(); extra.closest('li.channel')?.scrollIntoView({ block: 'center' }); });
  return button;
}

/** Start an OAuth connection: to the platform's consent page, or the operator's guide when its app is not set up. */
async function startOAuth(identifier, params, errors, guideBox) {
  errors.show(null);
  try {
    const { url } = await api('GET', `/social/${identifier}?${new URLSearchParams(params)}`);
    location.assign(url);
  } catch (error) {
    if (guideBox && error.body?.needsOperatorApp) {
      guideBox.replaceChildren(h('p', t('This server has no {platform} app yet. The operator sets {variables} in config.env, registering this callback URL with the app:',
        { platform: identifier, variables: error.body.variables.join(' and ') })),
      h('p', h('code', error.body.callbackUrl)), h('p.hint', error.body.guide));
      guideBox.hidden = false;
    } else errors.show(error);
  }
}

/** "Add channel": every platform rustiz connects, searchable; picking one shows its form or its sign-in. */
function addChannelDialog(known) {
  const platforms = Object.values(known).filter((p) => p.connectable || p.oauth).sort((a, b) => a.name.localeCompare(b.name));
  const search = h('input', { type: 'search', autocomplete: 'off', oninput: () => {
    const wanted = search.value.trim().toLowerCase();
    for (const tile of grid.children) tile.hidden = !tile.dataset.name.includes(wanted);
  } });
  const grid = h('ul.provider-grid', platforms.map((p) => h('li', { dataset: { name: p.name.toLowerCase() } },
    h('button.provider', { type: 'button', dataset: { provider: p.identifier }, onclick: () => showProvider(p) }, platformMark(p, p.identifier), h('span', p.name)))));
  const body = h('div.add-channel', field(t('Search platforms'), search), grid);
  const dialog = openDialog(t('Add channel'), body,
    h('div.actions', h('button', { type: 'button', onclick: () => dialog.close() }, t('Close'))));
  dialog.classList.add('wide');
  search.focus();
  function showProvider(p) {
    const back = h('button.link', { type: 'button', onclick: () => { body.replaceChildren(field(t('Search platforms'), search), grid); search.focus(); } }, t('← All platforms'));
    // (a platform with both: its sign-in first, pasted credentials as the other way)
    body.replaceChildren();
    put(body, back, h('h3', platformMark(p, p.identifier), ' ', p.name), p.oauth ? oauthStart(p) : null,
      p.identifier === 'telegram' ? telegramConnect() : null,  // (issue 28: the operator's bot, then the user's own)
      p.oauth && p.connectable ? h('h4', t('Or paste credentials')) : null, p.connectable ? connectForm(p) : null);
    body.querySelector('input, button.primary')?.focus();
  }
}

function connectForm(p) {
  const inputs = credentialInputs(p);
  const name = h('input', { type: 'text', name: 'name' });
  const group = h('input', { type: 'text', name: 'customer', list: 'group-names', maxlength: 100 });
  const errors = errorBox();
  const submit = h('button.primary', { type: 'submit' }, t('Connect'));
  return h('form.connect', { onsubmit: async (event) => {
    event.preventDefault();
    errors.show(null);
    const body = { provider: p.identifier, credentials: credentialsOf(inputs) };
    if (name.value.trim()) body.name = name.value.trim();
    if (group.value.trim()) body.customer = group.value.trim();
    submit.disabled = true;
    submit.textContent = t('Checking with the platform…');
    try {
      await api('POST', '/integrations', body);
      submit.closest('dialog')?.close();
      go('#/channels');
    } catch (error) {
      errors.show(error);
      errors.focus();
    } finally {
      submit.disabled = false;
      submit.textContent = t('Connect');
    }
  } },
  h('p.hint.guide', p.guide),
  ...inputs.map(([f, input]) => field(f.required ? f.label : t('{label} (optional)', { label: f.label }), input, f.help)),
  field(t('Name (optional)'), name, t('Defaults to the account\'s name.')),
  field(t('Group (optional)'), group, t('A customer or project; a new name makes a new group.')),
  errors, submit);
}

function oauthStart(p) {
  const errors = errorBox();
  const guideBox = h('div.card.operator-guide', { hidden: true });
  // (Pixelfed and Friendica are Mastodon's one-click flow on their own servers: issue 28)
  const instance = h('input', { type: 'url', name: 'instance', placeholder: p.identifier === 'friendica' ? 'https://friendica.example.org' : `https://${p.identifier}.social` });
  const mastodon = ['mastodon', 'pixelfed', 'friendica'].includes(p.identifier);
  return h('form.connect', { onsubmit: (event) => {
    event.preventDefault();
    guideBox.hidden = true;
    startOAuth(p.identifier, mastodon ? { instance: instance.value.trim() } : {}, errors, guideBox);
  } }, h('p.hint', t('You sign in on {platform} and allow rustiz to post; you come back here with the channel added.', { platform: p.name })),
  mastodon ? field(p.identifier === 'mastodon' ? t('Mastodon server') : t('{platform} server', { platform: p.name }), instance, t('rustiz registers itself on your server: no app or token to make.')) : null,
  errors, guideBox, h('button.primary', { type: 'submit' }, t('Continue to sign in')));
}

/** For a channel waiting in inBetweenSteps: its choices (pages, boards) and a button to pick one. */
function stepPicker(c, errors) {
  const box = h('div.steps');
  const load = async () => {
    try {
      const choices = await api('GET', `/integrations/${c.id}/steps`);
      const select = h('select', { 'aria-label': t('What {name} posts to', { name: c.name }) }, choices.map((item) => h('option', { value: item.id }, item.name)));
      box.replaceChildren(select, h('button', { type: 'button', onclick: async () => {
        try { await api('POST', `/integrations/${c.id}/steps`, { id: select.value }); go('#/channels'); } catch (error) { errors.show(error); }
      } }, t('Use this')));
    } catch (error) { errors.show(error); }
  };
  box.append(h('button', { type: 'button', onclick: load }, t('Choose')));
  return box;
}
