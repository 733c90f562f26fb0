// Post detail, channels, settings and notifications.
import { h, put, avatar, mediaImage, api, errorBox, field, providers, session, zone, fmtDateTime, htmlToText, stateBadge, toLocalInput, fromLocalInput, go, safeUrl } from './util.js';
import { credentialInputs, credentialsOf, credentialsForm } from './credentials.js';

// --- post detail ----------------------------------------------------------------------------------

export async function postPage(main, { id }) {
  const post = await api('GET', `/posts/${id}`);
  const errors = errorBox();
  const parts = [post, ...(post.thread || [])];
  const failed = parts.some((p) => p.state === 'ERROR');
  const editable = parts.every((p) => p.state !== 'PUBLISHED' && p.state !== 'PUBLISHING');
  const at = Date.parse(post.publishDate);

  const actions = h('div.actions',
    failed ? h('button.primary', { type: 'button', onclick: async () => {
      try { await api('POST', `/posts/${id}/retry`); go(`#/post/${id}`); } catch (error) { errors.show(error); }
    } }, 'Retry') : null,
    editable ? h('a.button', { href: `#/compose/${id}` }, 'Edit') : null,
    h('button.danger', { type: 'button', onclick: async () => {
      if (!confirm('Delete this post and its thread on this channel?')) return;
      try { await api('DELETE', `/posts/${id}`); go(`#/calendar?date=${toLocalInput(at).slice(0, 10)}`); } catch (error) { errors.show(error); }
    } }, 'Delete'),
    h('a.button', { href: `#/calendar?date=${toLocalInput(at).slice(0, 10)}` }, 'Back to calendar'));

  let reschedule = null;
  if (post.state === 'QUEUE' || post.state === 'DRAFT') {
    const input = h('input', { type: 'datetime-local', value: toLocalInput(at) });
    reschedule = h('form.inline', { onsubmit: async (event) => {
      event.preventDefault();
      try { await api('PUT', `/posts/${id}`, { date: new Date(fromLocalInput(input.value)).toISOString() }); go(`#/post/${id}`); } catch (error) { errors.show(error); }
    } }, field(`Reschedule (${zone()})`, input), h('button', { type: 'submit' }, 'Move'));
  }

  const partView = (p, i) => h(`li.part-view.st-${p.state}`, { dataset: { state: p.state } },
    h('div.part-head', stateBadge(p.state), ` ${i === 0 ? 'Post' : `Thread part ${i + 1}`}`, i && p.delay ? h('span.muted', ` · ${p.delay} min after the part before`) : null,
      // a reply waiting for its delay goes out later than the post: say when (the API works it out)
      i && p.goesOutAt ? h('span.goes-out', ' · goes out ', h('time', { datetime: p.goesOutAt }, fmtDateTime(Date.parse(p.goesOutAt)))) : null),
    h('p.content', htmlToText(p.content)),
    (p.image || []).length ? h('ul.media', p.image.map((m) => h('li', /\.(mp4|mov|webm)$/i.test(m.path) ? h('video', { src: m.path, controls: true }) : mediaImage(m.path, m.alt || ''), m.alt ? h('small', `Alt: ${m.alt}`) : null))) : null,
    p.error ? h('div.post-error', { role: 'alert' }, h('strong', 'Error: '), h('span.error-text', p.error)) : null,
    safeUrl(p.releaseURL) ? h('p', h('a.release', { href: safeUrl(p.releaseURL), target: '_blank', rel: 'noopener noreferrer' }, 'View it on the platform ↗')) : null);

  put(main,
    h('h1', 'Post ', stateBadge(post.state)),
    h('dl.facts',
      h('dt', 'Channel'), h('dd', `${post.integration?.name || ''} (${post.integration?.providerIdentifier || ''})`),
      h('dt', 'Time'), h('dd', h('time.when', { datetime: post.publishDate }, fmtDateTime(at)), ` (${zone()})`),
      post.intervalInDays ? [h('dt', 'Repeats'), h('dd', `every ${post.intervalInDays} days`)] : null),
    post.review ? h('p.review-note', { role: 'note' }, post.review === 'review'
      ? ['Made with a drafts API key: it waits for ', h('a', { href: '#/review' }, 'review'), ' before it is scheduled.']
      : ['Rejected: ', h('span.review-reason', post.reviewReason || '')]) : null,
    h('ol.thread', parts.map(partView)),
    errors, actions, reschedule);
  if (post.state === 'PUBLISHED') main.append(figuresBox(`/analytics/post/${id}`, 'Figures from the platform'));

  if (parts.some((p) => p.state === 'QUEUE' || p.state === 'PUBLISHING') && at < Date.now() + 120000) {
    setTimeout(async function poll() {
      if (!main.isConnected || !location.hash.startsWith(`#/post/${id}`)) return;
      try {
        const fresh = await api('GET', `/posts/${id}`);
        const states = (x) => [x, ...(x.thread || [])].map((p) => p.state).join();
        if (states(fresh) !== states(post)) { go(`#/post/${id}`); return; }
      } catch { /* keep trying */ }
      setTimeout(poll, 1500);
    }, 1500);
  }
}

// --- channels -------------------------------------------------------------------------------------

// Posting slots are minutes after midnight in the organization's timezone; people read them as HH:MM.
function postingTimes(json) {
  let slots = [];
  try { slots = JSON.parse(json || '[]'); } catch { slots = []; }
  return slots.map(({ time }) => `${String(Math.floor(time / 60)).padStart(2, '0')}:${String(time % 60).padStart(2, '0')}`).join(', ');
}

function parseTimes(text) {
  return text.split(',').map((part) => part.trim()).filter(Boolean).map((part) => {
    const [hours, minutes] = part.split(':').map(Number);
    return { time: hours * 60 + minutes };
  });
}

export async function channelsPage(main, { query } = {}) {
  const [channels, groups, known] = await Promise.all([api('GET', '/integrations'), api('GET', '/groups'), providers()]);
  // Each channel's own row says whether it needs reconnecting (the list keeps Postiz's shape).
  const rows = await Promise.all(channels.map((c) => api('GET', `/integrations/${c.id}`).catch(() => ({}))));
  const errors = errorBox();
  main.append(h('h1', 'Channels'), errors);
  // What an OAuth connection came back with (the server's callback redirects here): codes, in our words
  const outcome = connectOutcome(query, known);
  if (outcome.notice) main.append(h('p.notice', { role: 'status' }, outcome.notice));
  if (outcome.problem) errors.show(outcome.problem);
  const list = h('ul.channel-list');
  const change = async (c, body) => {
    try { await api('PUT', `/integrations/${c.id}`, body); go('#/channels'); } catch (error) { errors.show(error); }
  };
  for (const [index, c] of channels.entries()) {
    const reconnect = rows[index].refreshNeeded || rows[index].inBetweenSteps;
    const rename = h('input', { type: 'text', value: c.name, 'aria-label': `New name for ${c.name}`, required: true });
    const slots = h('input', { type: 'text', value: postingTimes(rows[index].postingTimes), 'aria-label': `Posting times of ${c.name}`,
      pattern: '^\\s*([01]?\\d|2[0-3]):[0-5]\\d(\\s*,\\s*([01]?\\d|2[0-3]):[0-5]\\d)*\\s*$', title: 'Times like 09:00, 13:30, 18:00' });
    list.append(h('li.channel', { dataset: { id: c.id } },
      avatar(c),
      h('div', h('strong', c.name), h('div.muted', `${known[c.identifier]?.name || c.identifier}${c.profile ? ` · ${c.profile}` : ''}${c.customer ? ` · group ${c.customer.name}` : ''}`),
        c.disabled ? h('span.badge.st-DRAFT', 'Disabled') : null,
        rows[index].inBetweenSteps ? h('span.badge.st-ERROR', 'Pick what to post to')
          : reconnect ? h('span.badge.st-ERROR.needs-reconnect', 'Needs reconnect') : null,
        rows[index].inBetweenSteps ? stepPicker(c, errors) : null,
        rows[index].refreshNeeded && known[c.identifier]?.oauth && !known[c.identifier]?.connectable
          ? h('button', { type: 'button', 'aria-label': `Reconnect ${c.name}`, onclick: () => startOAuth(c.identifier, { refresh: c.id }, errors) }, 'Reconnect')
          : null,
        known[c.identifier]?.connectable ? credentialsButton(c, known[c.identifier], rows[index].refreshNeeded,
          rows[index].refreshNeeded && query?.get('channel') === c.id) : null),
      h('form.rename', { onsubmit: (event) => { event.preventDefault(); change(c, { name: rename.value }); } },
        rename, h('button', { type: 'submit', 'aria-label': `Rename ${c.name}` }, 'Rename')),
      h('form.rename', { onsubmit: (event) => { event.preventDefault(); change(c, { postingTimes: parseTimes(slots.value) }); } },
        slots, h('button', { type: 'submit', 'aria-label': `Save posting times of ${c.name}` }, 'Save times')),
      h('button', { type: 'button', 'aria-label': `${c.disabled ? 'Enable' : 'Disable'} ${c.name}`,
        onclick: () => change(c, { disabled: !c.disabled }) }, c.disabled ? 'Enable' : 'Disable'),
      h('button', { type: 'button', 'aria-label': `Figures of ${c.name}`, onclick: (event) => {
        event.target.replaceWith(figuresBox(`/analytics/${c.id}?date=30`, `${c.name}: figures from the platform`));
      } }, 'Figures'),
      h('button.danger', { type: 'button', 'aria-label': `Delete ${c.name}`, onclick: async () => {
        if (!confirm(`Delete the channel ${c.name} and its posts?`)) return;
        try { await api('DELETE', `/integrations/${c.id}`); go('#/channels'); } catch (error) { errors.show(error); }
      } }, 'Delete')));
  }
  main.append(channels.length ? list : h('p.muted', 'No channels yet.'));

  // connect form: the providers rustiz connects, with the credential fields their descriptors name
  const connectable = Object.values(known).filter((p) => p.connectable).sort((a, b) => a.name.localeCompare(b.name));
  const provider = h('select', { name: 'provider', onchange: () => drawFields() }, connectable.map((p) => h('option', { value: p.identifier }, p.name)));
  const fieldsBox = h('div');
  const name = h('input', { type: 'text', name: 'name' });
  const group = h('input', { type: 'text', name: 'customer', list: 'group-names', maxlength: 100 });
  const formErrors = errorBox();
  let inputs = [];
  function drawFields() {
    const p = known[provider.value];
    inputs = credentialInputs(p);
    fieldsBox.replaceChildren(h('p.hint.guide', p.guide),
      ...inputs.map(([f, input]) => field(f.required ? f.label : `${f.label} (optional)`, input, f.help)));
  }
  drawFields();
  const submit = h('button.primary', { type: 'submit' }, 'Connect');
  const form = h('form.card.connect', { onsubmit: async (event) => {
    event.preventDefault();
    formErrors.show(null);
    const body = { provider: provider.value, credentials: credentialsOf(inputs) };
    if (name.value.trim()) body.name = name.value.trim();
    if (group.value.trim()) body.customer = group.value.trim();
    submit.disabled = true;
    submit.textContent = 'Checking with the platform…';
    try {
      await api('POST', '/integrations', body);
      go('#/channels');
    } catch (error) {
      formErrors.show(error);
      formErrors.focus();
    } finally {
      submit.disabled = false;
      submit.textContent = 'Connect';
    }
  } },
  h('h2', 'Connect a channel'), field('Provider', provider), fieldsBox,
  field('Name (optional)', name, "Defaults to the account's name."),
  field('Group (optional)', group, 'A customer or project; a new name makes a new group.'),
  h('datalist#group-names', groups.map((g) => h('option', { value: g.name }))),
  formErrors, submit,
  h('p.hint', 'Or connect with the platform\'s own sign-in below.'));
  main.append(form, oauthForm(known));
}

// The OAuth callback's outcomes, by the code it sends: only these words are ever shown (a link can carry
// any text; a problem's details, with the platform's own words, are in the notifications).
const CONNECT_NOTICES = {
  connected: (p) => `${p} connected`,
  reconnected: (p) => `${p} channel reconnected`,
  pick: (p) => `${p} connected: pick what to post to`,
};
const CONNECT_PROBLEMS = {
  expired: (p, known) => `This ${known ? `${p} ` : ''}connection link has expired or was already used (links last an hour and work once): start again with Connect.`,
  denied: (p) => `${p} did not give rustiz access: nothing was connected. Connect again and allow access to post.`,
  'no-code': (p) => `${p} came back without an authorization code: nothing was connected. Connect again.`,
  refused: (p) => `${p} refused the connection: nothing was connected. What it said is in Notifications. Connect again; if it keeps failing, the operator checks the app's settings (callback URL, permissions).`,
  'no-app': (p) => `${p}'s app is no longer set up on this server: nothing was connected. Ask the operator (details in Notifications).`,
  'channel-gone': () => 'The channel to reconnect was deleted meanwhile: nothing was changed. Connect it as a new channel.',
  'other-organization': (p) => `This ${p} connection was started in another organization than the one you are signed in to, so nothing was connected and the link no longer works. If someone sent you this link, your ${p} account stays yours; to connect it here, use Connect on this page.`,
  'other-account': (p) => `You signed in to ${p} with another account than this channel's: nothing was changed. Sign in with the channel's account, or connect this one as a new channel.`,
};
const UNKNOWN_PROBLEM = 'The connection did not complete: nothing was connected. Connect again.';

function connectOutcome(query, known) {
  const name = Object.hasOwn(known, query?.get('provider') || '') ? known[query.get('provider')].name : null;
  const platform = name || 'The platform';
  const notice = query?.get('notice');
  const problem = query?.get('problem');
  return {
    notice: notice && Object.hasOwn(CONNECT_NOTICES, notice) ? CONNECT_NOTICES[notice](platform, !!name) : null,
    problem: problem ? (Object.hasOwn(CONNECT_PROBLEMS, problem) ? CONNECT_PROBLEMS[problem](platform, !!name) : UNKNOWN_PROBLEM) : null,
  };
}

/** "Update credentials" (or "Reconnect" when the channel needs it) of a channel connected with pasted
 * credentials: opens its form below the channel; `open`: at once (a flagged channel's notification link). */
function credentialsButton(c, provider, needsReconnect, open) {
  const labelled = (label) => { button.textContent = label; button.setAttribute('aria-label', `${label} ${c.name}`); };
  const button = h('button', { type: 'button', onclick: () => {
    const item = button.closest('li.channel');
    item.querySelector('.reconnected')?.remove();
    let form = item.querySelector('.credentials-form');
    if (!form) {
      form = credentialsForm(c, provider, () => {
        item.querySelector('.needs-reconnect')?.remove();
        form.replaceWith(h('p.notice.reconnected', { role: 'status' },
          `${c.name} has its new credentials${needsReconnect ? ': the posts that waited for it go out now' : ''}.`));
        labelled('Update credentials');
        needsReconnect = false;
      });
      item.append(form);
    }
    form.querySelector('input, textarea')?.focus();
  } });
  labelled(needsReconnect ? 'Reconnect' : 'Update credentials');
  if (open) setTimeout(() => { button.click(); button.closest('li.channel')?.scrollIntoView({ block: 'center' }); });
  return button;
}

/** The platform's own counts (GET /analytics/...), drawn as small bars; nothing when it gives none. */
function figuresBox(path, title) {
  const box = h('section.figures', { 'aria-label': title });
  api('GET', path).then((items) => {
    if (!Array.isArray(items) || !items.length) return;
    const totals = items.map((item) => Number(item.data?.[item.data.length - 1]?.total || 0));
    const top = Math.max(1, ...totals);
    const bar = (total) => { const el = h('span.bar'); el.style.width = `${Math.round((total / top) * 100)}%`; return el; };
    box.append(h('h2', title), h('ul.bars', items.map((item, i) => h('li',
      h('span.bar-label', item.label), bar(totals[i]), h('span.bar-total', totals[i].toLocaleString())))));
  }).catch((error) => { const errors = errorBox(); errors.show(error); box.append(errors); });
  return box;
}

/** Start an OAuth connection: to the platform's consent page, or the operator's guide when its app is not set up. */
async function startOAuth(identifier, params, errors, guideBox) {
  errors.show(null);
  try {
    const { url } = await api('GET', `/social/${identifier}?${new URLSearchParams(params)}`);
    location.assign(url);
  } catch (error) {
    if (guideBox && error.body?.needsOperatorApp) {
      guideBox.replaceChildren(h('p', `This server has no ${identifier} app yet. The operator sets ${error.body.variables.join(' and ')} in config.env, registering this callback URL with the app:`),
        h('p', h('code', error.body.callbackUrl)), h('p.hint', error.body.guide));
      guideBox.hidden = false;
    } else errors.show(error);
  }
}

function oauthForm(known) {
  const oauth = Object.values(known).filter((p) => p.oauth).sort((a, b) => a.name.localeCompare(b.name));
  const errors = errorBox();
  const guideBox = h('div.card.operator-guide', { hidden: true });
  const provider = h('select', { name: 'oauthProvider', onchange: () => { instanceField.hidden = provider.value !== 'mastodon'; } },
    oauth.map((p) => h('option', { value: p.identifier }, p.name)));
  const instance = h('input', { type: 'url', name: 'instance', placeholder: 'https://mastodon.social' });
  const instanceField = field('Mastodon server', instance, 'rustiz registers itself on your server: no app or token to make.');
  instanceField.hidden = provider.value !== 'mastodon';
  return h('form.card.connect', { onsubmit: (event) => {
    event.preventDefault();
    guideBox.hidden = true;
    startOAuth(provider.value, provider.value === 'mastodon' ? { instance: instance.value.trim() } : {}, errors, guideBox);
  } }, h('h2', 'Connect with the platform\'s sign-in'), field('Platform', provider), instanceField, errors, guideBox,
  h('button.primary', { type: 'submit' }, 'Continue to sign in'));
}

/** For a channel waiting in inBetweenSteps: its choices (pages, boards) and a button to pick one. */
function stepPicker(c, errors) {
  const box = h('div.steps');
  const load = async () => {
    try {
      const choices = await api('GET', `/integrations/${c.id}/steps`);
      const select = h('select', { 'aria-label': `What ${c.name} posts to` }, choices.map((item) => h('option', { value: item.id }, item.name)));
      box.replaceChildren(select, h('button', { type: 'button', onclick: async () => {
        try { await api('POST', `/integrations/${c.id}/steps`, { id: select.value }); go('#/channels'); } catch (error) { errors.show(error); }
      } }, 'Use this'));
    } catch (error) { errors.show(error); }
  };
  box.append(h('button', { type: 'button', onclick: load }, 'Choose'));
  return box;
}

// --- settings -------------------------------------------------------------------------------------

export async function settingsPage(main) {
  const [org, hooks, channels, alerts] = await Promise.all([api('GET', '/organization'), api('GET', '/webhooks'), api('GET', '/integrations'), api('GET', '/alerts')]);
  main.append(h('h1', 'Settings'));

  // timezone
  const tzErrors = errorBox();
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  if (!zones.includes('UTC')) zones.unshift('UTC');
  if (!zones.includes(org.timezone)) zones.unshift(org.timezone);
  const tz = h('input', { type: 'text', name: 'timezone', value: org.timezone, list: 'zones', autocomplete: 'off' });
  const saved = h('span.muted', { role: 'status' });
  main.append(h('form.card', { onsubmit: async (event) => {
    event.preventDefault();
    tzErrors.show(null);
    try {
      const answer = await api('PUT', '/organization', { timezone: tz.value.trim() });
      session.organization = { ...session.organization, ...answer };
      window.dispatchEvent(new CustomEvent('rustiz:zone'));
      saved.textContent = `Saved: times are now shown in ${answer.timezone}.`;
    } catch (error) { tzErrors.show(error); }
  } }, h('h2', 'Timezone'),
  field('Organization timezone (IANA name)', tz, 'Every time in rustiz is shown and entered in this zone, never the browser\'s; posting slots are local times in it.'),
  h('datalist#zones', zones.map((z) => h('option', { value: z }))), tzErrors, h('button.primary', { type: 'submit' }, 'Save timezone'), ' ', saved));

  // MCP
  const url = `${location.origin}/mcp`;
  const copy = (text, button) => async () => {
    try { await navigator.clipboard.writeText(text); button.textContent = 'Copied'; } catch { button.textContent = 'Select and copy it'; }
    setTimeout(() => { button.textContent = 'Copy'; }, 2000);
  };
  const copyButton = h('button', { type: 'button' }, 'Copy');
  copyButton.addEventListener('click', copy(url, copyButton));
  main.append(h('section.card', h('h2', 'MCP (AI agents)'),
    h('p', 'Point an MCP client (Claude Code, Cursor, …) at this URL, with the header ', h('code', 'Authorization: Bearer <your API key>'), '.'),
    h('div.copy', h('code.mcp-url', url), copyButton),
    h('pre', `claude mcp add --transport http rustiz ${url} --header "Authorization: Bearer YOUR_API_KEY"`)));

  // webhooks
  const hookErrors = errorBox();
  const hookList = h('ul.hooks', hooks.map((w) => h('li', h('strong', w.name), ` → ${w.url} `, w.signed ? h('small.muted', '(signed) ') : null,
    h('small.muted', w.integrations?.length ? `${w.integrations.length} channel(s)` : 'all channels'), ' ',
    h('button.danger', { type: 'button', 'aria-label': `Delete webhook ${w.name}`, onclick: async () => {
      try { await api('DELETE', `/webhooks/${w.id}`); go('#/settings'); } catch (error) { hookErrors.show(error); }
    } }, 'Delete'))));
  const hookName = h('input', { type: 'text', required: true });
  const hookUrl = h('input', { type: 'url', required: true, placeholder: 'https://n8n.example.com/webhook/posts' });
  const hookSecret = h('input', { type: 'password', autocomplete: 'off' });
  const hookChannels = h('select', { multiple: true, size: Math.min(5, Math.max(2, channels.length)) }, channels.map((c) => h('option', { value: c.id }, c.name)));
  main.append(h('section.card', h('h2', 'Outgoing webhooks'),
    h('p.hint', 'Told of every published and failed post (post.published, post.failed), signed with the secret.'),
    hooks.length ? hookList : h('p.muted', 'None yet.'),
    h('form', { onsubmit: async (event) => {
      event.preventDefault();
      hookErrors.show(null);
      const body = { name: hookName.value.trim(), url: hookUrl.value.trim(), integrations: [...hookChannels.selectedOptions].map((o) => o.value) };
      if (hookSecret.value) body.secret = hookSecret.value;
      try { await api('POST', '/webhooks', body); go('#/settings'); } catch (error) { hookErrors.show(error); }
    } }, field('Name', hookName), field('URL', hookUrl), field('Secret (optional)', hookSecret),
    channels.length ? field('Channels (none selected: all)', hookChannels) : null, hookErrors, h('button.primary', { type: 'submit' }, 'Add webhook'))));

  // alerts: the channel trouble is announced on
  const alertErrors = errorBox();
  const alertChannel = h('select', { name: 'alertChannel' }, h('option', { value: '' }, 'None (no alerts)'),
    channels.map((c) => h('option', { value: c.id, selected: c.id === alerts.channel }, `${c.name} (${c.identifier})`)));
  const lateMinutes = h('input', { type: 'number', name: 'lateMinutes', min: 1, max: 10080, step: 1,
    value: alerts.lateMinutes ?? '', placeholder: `${alerts.defaultLateMinutes} (the default)` });
  const alertSaved = h('span.muted', { role: 'status' });
  const alertList = alerts.alerts.length ? h('ul.alerts', alerts.alerts.slice(0, 5).map((a) => h('li',
    h('small.muted', `${fmtDateTime(Date.parse(a.createdAt))} · ${a.status}${a.error ? `: ${a.error}` : ''} `), a.text))) : null;
  main.append(h('section.card', h('h2', 'Alerts'),
    h('p.hint', 'A failed post, a channel that needs reconnecting and a post late by more than the threshold are announced once each on this channel, with the link to fix it, besides the notifications. At most a few an hour; an alert that fails is not announced again.'),
    h('form', { onsubmit: async (event) => {
      event.preventDefault();
      alertErrors.show(null);
      const minutes = lateMinutes.value.trim();
      try {
        const answer = await api('PUT', '/alerts', { channel: alertChannel.value || null, lateMinutes: minutes === '' ? null : Number(minutes) });
        alertSaved.textContent = answer.channel ? 'Saved: alerts go to that channel.' : 'Saved: no alerts.';
      } catch (error) { alertErrors.show(error); }
    } }, field('Alert channel', alertChannel), field('Late after (minutes)', lateMinutes, 'A post still not published this long after its date is announced; empty: the server\'s default.'),
    alertErrors, h('button.primary', { type: 'submit' }, 'Save alerts'), ' ', alertSaved), alertList));

  // organization name and API key
  const orgErrors = errorBox();
  const orgName = h('input', { type: 'text', value: org.name, required: true, maxlength: 100 });
  const newKey = h('div', { role: 'status' });
  main.append(h('section.card', h('h2', 'Organization and API key'),
    h('form', { onsubmit: async (event) => {
      event.preventDefault();
      orgErrors.show(null);
      try {
        const answer = await api('PUT', '/organization', { name: orgName.value.trim() });
        session.organization = { ...session.organization, ...answer };
        go('#/settings');
      } catch (error) { orgErrors.show(error); }
    } }, field('Organization name', orgName), h('button', { type: 'submit' }, 'Save name')),
    h('p.hint', 'rustiz keeps only a hash of the API key, so it cannot show it again. A new key is shown once; the old one stops working at once (scripts and MCP clients need the new one; other browsers signed in with it are signed out, this one stays signed in).'),
    h('button.danger', { type: 'button', onclick: async () => {
      if (!confirm('Make a new API key? The current one stops working at once.')) return;
      orgErrors.show(null);
      try {
        const { apiKey, csrfToken } = await api('POST', '/organization/api-key');
        if (csrfToken) session.csrfToken = csrfToken; // this browser's new session, for the new key
        const keyButton = h('button', { type: 'button' }, 'Copy');
        keyButton.addEventListener('click', copy(apiKey, keyButton));
        newKey.replaceChildren(h('p', 'Your new API key (shown once):'), h('div.copy', h('code.api-key', apiKey), keyButton));
      } catch (error) { orgErrors.show(error); }
    } }, 'Rotate API key'), newKey, orgErrors));
  main.append(keysCard(copy));
  main.append(h('p.hint', 'Web app users (email and password) are added from the command line: ', h('code', 'rustiz user add EMAIL'), '.'));
}

// Named API keys with a scope: full, drafts (an agent: its posts wait for review), read.
function keysCard(copy) {
  const errors = errorBox();
  const list = h('tbody');
  const shown = h('div', { role: 'status' });
  const name = h('input', { type: 'text', required: true, maxlength: 64, placeholder: 'agent' });
  const scope = h('select', ['drafts', 'read', 'full'].map((s) => h('option', { value: s }, s)));
  const when = (iso) => (iso ? fmtDateTime(Date.parse(iso)) : 'never');
  async function load() {
    try {
      const { keys } = await api('GET', '/api-keys');
      list.replaceChildren(...keys.map((k) => h('tr.api-key-row', { dataset: { name: k.name } },
        h('td', { dataset: { label: 'Name' } }, k.name), h('td.scope', { dataset: { label: 'Scope' } }, k.scope),
        h('td', { dataset: { label: 'Created' } }, when(k.createdAt)), h('td.last-use', { dataset: { label: 'Last use' } }, when(k.lastUsedAt)),
        h('td.key-action', k.id === 'default' ? h('small.muted', 'rotate above') : h('button.danger', { type: 'button', 'aria-label': `Revoke key ${k.name}`, onclick: async () => {
          if (!confirm(`Revoke the key ${k.name}? It stops working at once.`)) return;
          errors.show(null);
          try { await api('DELETE', `/api-keys/${encodeURIComponent(k.id)}`); shown.replaceChildren(); load(); } catch (error) { errors.show(error); }
        } }, 'Revoke')))));
    } catch (error) { errors.show(error); }
  }
  load();
  return h('section.card', h('h2', 'API keys'),
    h('p.hint', 'Named keys for scripts and agents. full: everything; drafts: read, upload, and make or edit drafts, which wait in To review; read: look only. Last use is updated at most once a minute.'),
    h('table.api-keys', h('thead', h('tr', h('th', 'Name'), h('th', 'Scope'), h('th', 'Created'), h('th', 'Last use'), h('th', ''))), list),
    h('form', { onsubmit: async (event) => {
      event.preventDefault();
      errors.show(null);
      try {
        const made = await api('POST', '/api-keys', { name: name.value.trim(), scope: scope.value });
        const keyButton = h('button', { type: 'button' }, 'Copy');
        keyButton.addEventListener('click', copy(made.apiKey, keyButton));
        shown.replaceChildren(h('p', `The key ${made.name} (shown once):`), h('div.copy', h('code.new-api-key', made.apiKey), keyButton));
        name.value = '';
        load();
      } catch (error) { errors.show(error); }
    } }, field('Key name', name), field('Key scope', scope), h('button.primary', { type: 'submit' }, 'Add key')),
    shown, errors);
}

// --- review: drafts made with a drafts API key (agents), approved or rejected by a person -----------------

export async function reviewPage(main) {
  const [waiting, rejected] = await Promise.all([api('GET', '/posts?state=review'), api('GET', '/posts?state=rejected')]);
  // Each post whole (every part of its thread, media, settings), with the version the decision is bound to:
  // a change made after this page loaded is not approved unseen.
  const full = (posts) => Promise.all(posts.map((p) => api('GET', `/posts/${p.id}`).then((post) => ({ ...post, reviewReason: p.reviewReason }))));
  const [waitingPosts, rejectedPosts] = await Promise.all([full(waiting.posts), full(rejected.posts)]);
  main.append(h('h1', 'To review'),
    h('p.hint', 'Drafts made with a drafts API key (an agent). Approve schedules one at its date, or at the channel\'s next free posting time when that date has passed; reject keeps it as a draft with your reason, which the agent can read. Approve schedules exactly what is shown here: if the agent changes the post meanwhile, you are asked to look again.'));
  main.append(h('section.card', h('h2', `Waiting (${waitingPosts.length})`),
    waitingPosts.length ? h('ul.review-list', waitingPosts.map(reviewItem)) : h('p.muted', 'Nothing to review.')));
  if (rejectedPosts.length) main.append(h('section.card', h('h2', `Rejected (${rejectedPosts.length})`), h('ul.rejected-list', rejectedPosts.map(reviewItem))));
}

const settingLabel = (name) => name.replace(/[_-]+/g, ' ').replace(/([a-z])([A-Z])/g, '$1 $2').replace(/^./, (c) => c.toUpperCase());
const settingValue = (value) => (typeof value === 'string' ? value : JSON.stringify(value));

function reviewItem(p) {
  const errors = errorBox();
  const reason = h('input', { type: 'text', required: true, maxlength: 2000, 'aria-label': 'Reason for rejecting' });
  const parts = [p, ...(p.thread || [])];
  const settings = Object.entries(p.settings && typeof p.settings === 'object' ? p.settings : {}).filter(([name]) => name !== '__type');
  const decided = (error) => {
    errors.show(error);
    if (error.status === 409) errors.append(h('button', { type: 'button', onclick: () => go('#/review') }, 'Show the post as it is now'));
  };
  return h('li.review-item', { dataset: { id: p.id } },
    h('div', h('strong', p.integration?.name || ''), ' · ', h('time', { datetime: p.publishDate }, fmtDateTime(Date.parse(p.publishDate))), ` (${zone()}) `,
      h('a', { href: `#/post/${p.id}` }, 'open')),
    h('ol.review-parts', parts.map((part, i) => h('li.review-part',
      parts.length > 1 ? h('small.muted', i === 0 ? 'Post' : `Thread part ${i + 1}`) : null,
      h('p.content', htmlToText(part.content)),
      (part.image || []).length ? h('ul.media', part.image.map((m) => h('li', /\.(mp4|mov|webm)$/i.test(m.path) ? h('video', { src: m.path, controls: true }) : h('img', { src: m.path, alt: m.alt || '' }), m.alt ? h('small', `Alt: ${m.alt}`) : null))) : null))),
    settings.length ? h('dl.review-settings', { 'aria-label': 'Settings' }, settings.map(([name, value]) => [h('dt', settingLabel(name)), h('dd', settingValue(value))])) : null,
    p.reviewReason ? h('p.review-reason', 'Rejected: ', p.reviewReason) : null,
    h('form.inline', { onsubmit: async (event) => {
      event.preventDefault();
      errors.show(null);
      try { await api('POST', `/posts/${p.id}/reject`, { reason: reason.value.trim() }); go('#/review'); } catch (error) { decided(error); }
    } }, h('button.primary', { type: 'button', onclick: async () => {
      errors.show(null);
      try { await api('POST', `/posts/${p.id}/approve`, { version: p.version }); go('#/review'); } catch (error) { decided(error); }
    } }, 'Approve'), ' ', field('Reason', reason), h('button.danger', { type: 'submit' }, 'Reject')),
    errors);
}

// --- notifications --------------------------------------------------------------------------------

export async function notificationsPage(main, { query }) {
  const page = Math.max(0, Number.parseInt(query.get('page'), 10) || 0);  // a link's ?page=abc is the first page
  const answer = await api('GET', `/notifications?page=${page}`);
  main.append(h('h1', 'Notifications'),
    answer.notifications.length ? h('ol.notifications', answer.notifications.map((n) => h('li',
      h('time', { datetime: n.createdAt }, fmtDateTime(Date.parse(n.createdAt))), ' ',
      h('span', n.content), safeUrl(n.link) ? [' ', h('a', { href: safeUrl(n.link), target: '_blank', rel: 'noopener noreferrer' }, 'open ↗')] : null))) : h('p.muted', 'Nothing yet.'),
    h('div.actions', page > 0 ? h('a.button', { href: `#/notifications?page=${page - 1}` }, 'Newer') : null,
      answer.hasMore ? h('a.button', { href: `#/notifications?page=${page + 1}` }, 'Older') : null));
}
