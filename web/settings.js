// Settings as side tabs (a <select> on a phone): General (timezone, organization name), API keys,
// Webhooks, MCP, Alerts, Tags, Signatures, Sets, Notifications (mail-settings.js), Audit (audit.js), Team (team.js). The tab shown is in the address (#/settings?tab=tags), so a
// change that draws the page again stays on its tab.
// Rules: each tab loads what it shows and says its own errors (one failing API does not blank the others).
import { h, t, toTranslate, put, avatar, api, errorBox, field, session, fmtDateTime, go, mayDo } from './util.js';
import { copyText } from './widgets.js';

// Each tab with the least role that may use it (the others do not see it); the server checks again.
const ALL_TABS = [['general', toTranslate('General'), 'admin'], ['keys', toTranslate('API keys'), 'admin'], ['webhooks', toTranslate('Webhooks'), 'admin'], ['mcp', toTranslate('MCP'), 'admin'],
  ['alerts', toTranslate('Alerts'), 'admin'], ['tags', toTranslate('Tags'), 'editor'], ['signatures', toTranslate('Signatures'), 'editor'], ['sets', toTranslate('Sets'), 'editor'],
  ['notifications', toTranslate('Notifications'), 'viewer'], ['audit', toTranslate('Audit'), 'admin'], ['team', toTranslate('Team'), 'admin']];
const DRAW = { general: generalTab, keys: keysTab, webhooks: webhooksTab, mcp: mcpTab, alerts: alertsTab, tags: tagsTab, signatures: signaturesTab, sets: setsTab,
  notifications: (panel) => import('./mail-settings.js').then((m) => m.notificationsTab(panel)),
  audit: (panel) => import('./audit.js').then((m) => m.auditTab(panel)),
  team: (panel) => import('./team.js').then((m) => m.teamTab(panel)) };

export async function settingsPage(main, { query } = {}) {
  const TABS = ALL_TABS.filter(([, , role]) => mayDo(role));
  const chosen = TABS.some(([id]) => id === query?.get('tab')) ? query.get('tab') : TABS[0][0];
  const tabs = h('div.side-tabs', { role: 'tablist', 'aria-orientation': 'vertical', 'aria-label': t('Settings') });
  const picker = h('select.tab-picker', { 'aria-label': t('Section'), onchange: () => show(picker.value, false) },
    TABS.map(([id, label]) => h('option', { value: id }, t(label))));
  const panels = h('div.tab-panels');
  const drawn = new Set();
  for (const [id, label] of TABS) {
    tabs.append(h('button', { type: 'button', role: 'tab', id: `tab-${id}`, 'aria-controls': `panel-${id}`, onclick: () => show(id, true) }, t(label)));
    panels.append(h('section.tab-panel', { role: 'tabpanel', id: `panel-${id}`, 'aria-labelledby': `tab-${id}`, hidden: true }));
  }
  tabs.addEventListener('keydown', (event) => {
    const ids = TABS.map(([id]) => id);
    const at = ids.indexOf(picker.value);
    const to = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: ids.length - 1 }[event.key];
    if (to === undefined) return;
    event.preventDefault();
    show(ids[(to + ids.length) % ids.length], true);
  });
  function show(id, focusTab) {
    picker.value = id;
    for (const tab of tabs.children) {
      const selected = tab.id === `tab-${id}`;
      tab.setAttribute('aria-selected', String(selected));
      tab.tabIndex = selected ? 0 : -1;
      if (selected && focusTab) tab.focus();
    }
    for (const panel of panels.children) panel.hidden = panel.id !== `panel-${id}`;
    history.replaceState(null, '', `#/settings?tab=${id}`);
    if (!drawn.has(id)) {
      drawn.add(id);
      const panel = panels.querySelector(`#panel-${id}`);
      DRAW[id](panel).catch((error) => { const box = errorBox(); put(panel, box); box.show(error); });
    }
  }
  put(main, h('h1', t('Settings')), picker, h('div.settings-layout', tabs, panels));
  show(chosen, false);
}

/** Draw the page again on the tab `id` (after a change that alters what it lists). */
const reload = (id) => go(`#/settings?tab=${id}`);

async function generalTab(panel) {
  const org = await api('GET', '/organization');
  const tzErrors = errorBox();
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  if (!zones.includes('UTC')) zones.unshift('UTC');
  if (!zones.includes(org.timezone)) zones.unshift(org.timezone);
  const tz = h('input', { type: 'text', name: 'timezone', value: org.timezone, list: 'zones', autocomplete: 'off' });
  const saved = h('span.muted', { role: 'status' });
  put(panel, h('form.card', { onsubmit: async (event) => {
    event.preventDefault();
    tzErrors.show(null);
    try {
      const answer = await api('PUT', '/organization', { timezone: tz.value.trim() });
      session.organization = { ...session.organization, ...answer };
      window.dispatchEvent(new CustomEvent('rustiz:zone'));
      saved.textContent = t('Saved: times are now shown in {zone}.', { zone: answer.timezone });
    } catch (error) { tzErrors.show(error); }
  } }, h('h2', t('Timezone')),
  field(t('Organization timezone (IANA name)'), tz, t('Every time in rustiz is shown and entered in this zone, never the browser\'s; posting slots are local times in it.')),
  h('datalist#zones', zones.map((z) => h('option', { value: z }))), tzErrors, h('button.primary', { type: 'submit' }, t('Save timezone')), ' ', saved));

  const orgErrors = errorBox();
  const orgName = h('input', { type: 'text', value: org.name, required: true, maxlength: 100 });
  put(panel, h('form.card', { onsubmit: async (event) => {
    event.preventDefault();
    orgErrors.show(null);
    try {
      const answer = await api('PUT', '/organization', { name: orgName.value.trim() });
      session.organization = { ...session.organization, ...answer };
      reload('general');
    } catch (error) { orgErrors.show(error); }
  } }, h('h2', t('Organization')), field(t('Organization name'), orgName), orgErrors, h('button', { type: 'submit' }, t('Save name'))));
  put(panel, (await import('./links.js')).shortLinkSetting(org));  // (issue 26: short links)
}

/** A button copying `text`, saying for two seconds whether it worked. */
function copyButton(text) {
  const button = h('button', { type: 'button', onclick: () => copyText(text, (message) => {
    button.textContent = message;
    setTimeout(() => { button.textContent = t('Copy'); }, 2000);
  }) }, t('Copy'));
  return button;
}

async function keysTab(panel) {
  const errors = errorBox();
  const newKey = h('div', { role: 'status' });
  put(panel, h('section.card', h('h2', t('Organization API key')),
    h('p.hint', t('rustiz keeps only a hash of the API key, so it cannot show it again. A new key is shown once; the old one stops working at once (scripts and MCP clients need the new one; other browsers signed in with it are signed out, this one stays signed in).')),
    h('button.danger', { type: 'button', onclick: async () => {
      if (!confirm(t('Make a new API key? The current one stops working at once.'))) return;
      errors.show(null);
      try {
        const { apiKey, csrfToken } = await api('POST', '/organization/api-key');
        if (csrfToken) session.csrfToken = csrfToken; // this browser's new session, for the new key
        newKey.replaceChildren(h('p', t('Your new API key (shown once):')), h('div.copy', h('code.api-key', apiKey), copyButton(apiKey)));
      } catch (error) { errors.show(error); }
    } }, t('Rotate API key')), newKey, errors));
  put(panel, keysCard());
}

// Named API keys with a scope: full, drafts (an agent: its posts wait for review), read.
function keysCard() {
  const errors = errorBox();
  const list = h('tbody');
  const shown = h('div', { role: 'status' });
  const name = h('input', { type: 'text', required: true, maxlength: 64, placeholder: 'agent' });
  const scope = h('select', ['drafts', 'read', 'full'].map((s) => h('option', { value: s }, s)));
  const when = (iso) => (iso ? fmtDateTime(Date.parse(iso)) : t('never'));
  async function load() {
    try {
      const { keys } = await api('GET', '/api-keys');
      list.replaceChildren(...keys.map((k) => h('tr.api-key-row', { dataset: { name: k.name } },
        h('td', { dataset: { label: t('Name') } }, k.name), h('td.scope', { dataset: { label: t('Scope') } }, k.scope),
        h('td', { dataset: { label: t('Created') } }, when(k.createdAt)), h('td.last-use', { dataset: { label: t('Last use') } }, when(k.lastUsedAt)),
        h('td.key-action', k.id === 'default' ? h('small.muted', t('rotate above')) : h('button.danger', { type: 'button', 'aria-label': t('Revoke key {name}', { name: k.name }), onclick: async () => {
          if (!confirm(t('Revoke the key {name}? It stops working at once.', { name: k.name }))) return;
          errors.show(null);
          try { await api('DELETE', `/api-keys/${encodeURIComponent(k.id)}`); shown.replaceChildren(); load(); } catch (error) { errors.show(error); }
        } }, t('Revoke'))))));
    } catch (error) { errors.show(error); }
  }
  load();
  return h('section.card', h('h2', t('API keys')),
    h('p.hint', t('Named keys for scripts and agents. full: everything; drafts: read, upload, and make or edit drafts, which wait in To review; read: look only. Last use is updated at most once a minute.')),
    h('table.api-keys', h('thead', h('tr', h('th', t('Name')), h('th', t('Scope')), h('th', t('Created')), h('th', t('Last use')), h('th', h('span.sr-state', t('Action'))))), list),
    h('form', { onsubmit: async (event) => {
      event.preventDefault();
      errors.show(null);
      try {
        const made = await api('POST', '/api-keys', { name: name.value.trim(), scope: scope.value });
        shown.replaceChildren(h('p', t('The key {name} (shown once):', { name: made.name })), h('div.copy', h('code.new-api-key', made.apiKey), copyButton(made.apiKey)));
        name.value = '';
        load();
      } catch (error) { errors.show(error); }
    } }, field(t('Key name'), name), field(t('Key scope'), scope), h('button.primary', { type: 'submit' }, t('Add key'))),
    shown, errors);
}

async function mcpTab(panel) {
  const url = `${location.origin}/mcp`;
  put(panel, h('section.card', h('h2', t('MCP (AI agents)')),
    h('p', t('Point an MCP client (Claude Code, Cursor, …) at this URL, with the header '), h('code', 'Authorization: Bearer <your API key>'), '.'),
    h('div.copy', h('code.mcp-url', url), copyButton(url)),
    h('pre', `claude mcp add --transport http rustiz ${url} --header "Authorization: Bearer YOUR_API_KEY"`),
    h('p', t('Clients that sign in by themselves (claude.ai, ChatGPT, Cursor, VS Code) need only the URL: they open a page here where you choose the organization and what the agent may do.'))));
  put(panel, connectedAppsCard());
}

// The MCP clients connected through rustiz's OAuth consent page (issue 27), each with Revoke.
function connectedAppsCard() {
  const errors = errorBox();
  const list = h('tbody');
  const empty = h('p.hint', { hidden: true }, t('No connected apps yet.'));
  const when = (iso) => (iso ? fmtDateTime(Date.parse(iso)) : t('never'));
  async function load() {
    try {
      const clients = await api('GET', '/oauth/clients');
      empty.hidden = clients.length > 0;
      list.replaceChildren(...clients.map((c) => h('tr.connected-app', { dataset: { id: c.id } },
        h('td', { dataset: { label: t('Name') } }, c.name), h('td.scope', { dataset: { label: t('Scope') } }, c.scope),
        h('td', { dataset: { label: t('Created') } }, when(c.createdAt)), h('td', { dataset: { label: t('Last use') } }, when(c.lastUsedAt)),
        h('td', h('button.danger', { type: 'button', 'aria-label': t('Revoke {name}', { name: c.name }), onclick: async () => {
          if (!confirm(t('Revoke {name}? It stops working at once.', { name: c.name }))) return;
          errors.show(null);
          try { await api('DELETE', `/oauth/clients/${encodeURIComponent(c.id)}`); load(); } catch (error) { errors.show(error); }
        } }, t('Revoke'))))));
    } catch (error) { errors.show(error); }
  }
  load();
  return h('section.card', h('h2', t('Connected apps')),
    h('p.hint', t('Agents you allowed on the consent page. Last use is when the app last renewed its access (at least hourly while it works).')),
    h('table.api-keys', h('thead', h('tr', h('th', t('Name')), h('th', t('Scope')), h('th', t('Created')), h('th', t('Last use')), h('th', h('span.sr-state', t('Action'))))), list),
    empty, errors);
}

// The events a webhook may be sent, in the users' words (issue 26); a new webhook starts with all of them.
const HOOK_EVENTS = [['post.published', toTranslate('Published')], ['post.failed', toTranslate('Failed')],
  ['post.created', toTranslate('Created')], ['post.updated', toTranslate('Changed')],
  ['post.deleted', toTranslate('Deleted')], ['post.queued', toTranslate('Added to the queue')]];

/** A fieldset of one checkbox per event, `chosen` ticked; onchange(events) when one is ticked or cleared. */
function eventBoxes(legend, chosen, onchange) {
  const boxes = HOOK_EVENTS.map(([event]) => h('input', { type: 'checkbox', value: event, checked: chosen.includes(event),
    onchange: () => onchange?.(picked()) }));
  const picked = () => boxes.filter((box) => box.checked).map((box) => box.value);
  const set = h('fieldset.hook-events', h('legend', legend),
    HOOK_EVENTS.map(([, label], i) => h('label.check', boxes[i], ' ', t(label))));
  return { set, picked };
}

async function webhooksTab(panel) {
  const [hooks, channels] = await Promise.all([api('GET', '/webhooks'), api('GET', '/integrations')]);
  const errors = errorBox();
  const hookList = h('ul.hooks', hooks.map((w) => {
    const saved = h('span.muted', { role: 'status' });
    const events = eventBoxes(t('Events sent to {name}', { name: w.name }), w.events || [], async (chosen) => {
      saved.textContent = '';
      try { await api('PUT', `/webhooks/${w.id}`, { events: chosen }); saved.textContent = t('Saved'); } catch (error) { errors.show(error); }
    });
    return h('li', h('strong', w.name), ` → ${w.url} `, w.signed ? h('small.muted', t('(signed)'), ' ') : null,
      h('small.muted', w.integrations?.length ? t('{n} channel(s)', { n: w.integrations.length }) : t('all channels')), ' ',
      h('button.danger', { type: 'button', 'aria-label': t('Delete webhook {name}', { name: w.name }), onclick: async () => {
        try { await api('DELETE', `/webhooks/${w.id}`); reload('webhooks'); } catch (error) { errors.show(error); }
      } }, t('Delete')), events.set, saved);
  }));
  const name = h('input', { type: 'text', required: true });
  const url = h('input', { type: 'url', required: true, placeholder: 'https://n8n.example.com/webhook/posts' });
  const secret = h('input', { type: 'password', autocomplete: 'off' });
  const chosen = h('select', { multiple: true, size: Math.min(5, Math.max(2, channels.length)) }, channels.map((c) => h('option', { value: c.id }, c.name)));
  const newEvents = eventBoxes(t('Events to send'), HOOK_EVENTS.map(([event]) => event));
  put(panel, h('section.card', h('h2', t('Outgoing webhooks')),
    h('p.hint', t('Told of the events chosen for each webhook (a post published, failed, created, changed, deleted or added to the queue), signed with the secret.')),
    hooks.length ? hookList : h('p.muted', t('None yet.')),
    h('form', { onsubmit: async (event) => {
      event.preventDefault();
      errors.show(null);
      const body = { name: name.value.trim(), url: url.value.trim(), integrations: [...chosen.selectedOptions].map((o) => o.value),
        events: newEvents.picked() };
      if (secret.value) body.secret = secret.value;
      try { await api('POST', '/webhooks', body); reload('webhooks'); } catch (error) { errors.show(error); }
    } }, field(t('Name'), name), field(t('URL'), url), field(t('Secret (optional)'), secret),
    channels.length ? field(t('Channels (none selected: all)'), chosen) : null, newEvents.set, errors,
    h('button.primary', { type: 'submit' }, t('Add webhook')))));
}

async function alertsTab(panel) {
  const [alerts, channels] = await Promise.all([api('GET', '/alerts'), api('GET', '/integrations')]);
  const errors = errorBox();
  const channel = h('select', { name: 'alertChannel' }, h('option', { value: '' }, t('None (no alerts)')),
    channels.map((c) => h('option', { value: c.id, selected: c.id === alerts.channel }, `${c.name} (${c.identifier})`)));
  const lateMinutes = h('input', { type: 'number', name: 'lateMinutes', min: 1, max: 10080, step: 1,
    value: alerts.lateMinutes ?? '', placeholder: t('{n} (the default)', { n: alerts.defaultLateMinutes }) });
  const saved = h('span.muted', { role: 'status' });
  const recent = alerts.alerts.length ? h('ul.alerts', alerts.alerts.slice(0, 5).map((a) => h('li',
    h('small.muted', `${fmtDateTime(Date.parse(a.createdAt))} · ${a.status}${a.error ? `: ${a.error}` : ''} `), a.text))) : null;
  put(panel, h('section.card', h('h2', t('Alerts')),
    h('p.hint', t('A failed post, a channel that needs reconnecting and a post late by more than the threshold are announced once each on this channel, with the link to fix it, besides the notifications. At most a few an hour; an alert that fails is not announced again.')),
    h('form', { onsubmit: async (event) => {
      event.preventDefault();
      errors.show(null);
      const minutes = lateMinutes.value.trim();
      try {
        const answer = await api('PUT', '/alerts', { channel: channel.value || null, lateMinutes: minutes === '' ? null : Number(minutes) });
        saved.textContent = answer.channel ? t('Saved: alerts go to that channel.') : t('Saved: no alerts.');
      } catch (error) { errors.show(error); }
    } }, field(t('Alert channel'), channel), field(t('Late after (minutes)'), lateMinutes, t('A post still not published this long after its date is announced; empty: the server\'s default.')),
    errors, h('button.primary', { type: 'submit' }, t('Save alerts')), ' ', saved), recent));
}

// --- tags, signatures, sets: a list of small forms (one per item, the last one empty to add one) ------------

/** A list card of `items`, each drawn by `editor(item)`, and `editor(null)` to add one. */
function listCard(title, hint, items, editor, empty) {
  return h('section.card', h('h2', title), h('p.hint', hint),
    items.length ? h('ul.editable-list', items.map((item) => h('li', editor(item)))) : h('p.muted', empty),
    h('div.add-item', editor(null)));
}

/** Saves (POST or PUT) or deletes an item of /kind and draws the tab again; errors go to `errors`. */
async function send(kind, method, id, body, errors) {
  errors.show(null);
  try { await api(method, id ? `/${kind}/${id}` : `/${kind}`, body); reload(kind); } catch (error) { errors.show(error); }
}

const deleteButton = (kind, id, label, errors) => h('button.danger', { type: 'button', 'aria-label': label, onclick: () => {
  if (confirm(label)) send(kind, 'DELETE', id, undefined, errors);
} }, t('Delete'));

async function tagsTab(panel) {
  const { tags } = await api('GET', '/tags');
  const editor = (tag) => {
    const errors = errorBox();
    const name = h('input', { type: 'text', required: true, maxlength: 50, value: tag?.name || '' });
    const color = h('input', { type: 'color', value: tag?.color || '#2563eb' });
    const swatch = h('span.swatch', { 'aria-hidden': 'true' });
    const paint = () => { swatch.style.background = color.value; };
    color.addEventListener('input', paint);
    paint();
    return h('form.tag-form', { onsubmit: (event) => {
      event.preventDefault();
      send('tags', tag ? 'PUT' : 'POST', tag?.id, { name: name.value.trim(), color: color.value }, errors);
    } }, swatch,
    field(tag ? t('Name of the tag {name}', { name: tag.name }) : t('New tag'), name),
    field(tag ? t('Colour of the tag {name}', { name: tag.name }) : t('Colour'), color),
    h('button', { type: 'submit', class: tag ? null : 'primary' }, tag ? t('Save') : t('Add tag')),
    tag ? deleteButton('tags', tag.id, t('Delete the tag {name}', { name: tag.name }), errors) : null, errors);
  };
  put(panel, listCard(t('Tags'), t('Tags mark posts (a campaign, a topic); the calendar shows their colour. Deleting a tag keeps its posts.'), tags, editor, t('No tags yet.')));
}

async function signaturesTab(panel) {
  const { signatures } = await api('GET', '/signatures');
  const editor = (signature) => {
    const errors = errorBox();
    const content = h('textarea', { rows: 3, required: true, maxlength: 5000 }, signature?.content || '');
    const auto = h('input', { type: 'checkbox', checked: !!signature?.autoAdd });
    const number = signatures.indexOf(signature) + 1;
    return h('form.signature-form', { onsubmit: (event) => {
      event.preventDefault();
      send('signatures', signature ? 'PUT' : 'POST', signature?.id, { content: content.value, autoAdd: auto.checked }, errors);
    } }, field(signature ? t('Signature {n}', { n: number }) : t('New signature'), content),
    h('label.field.check', auto, t('Add to every new post')),
    h('div.actions', h('button', { type: 'submit', class: signature ? null : 'primary' }, signature ? t('Save') : t('Add signature')),
      signature ? deleteButton('signatures', signature.id, t('Delete signature {n}', { n: number }), errors) : null), errors);
  };
  put(panel, listCard(t('Signatures'), t('Text added at the end of a post in the composer. At most one is added to every new post: choosing another takes it from the first.'),
    signatures, editor, t('No signatures yet.')));
}

async function setsTab(panel) {
  const [{ sets }, channels] = await Promise.all([api('GET', '/sets'), api('GET', '/integrations')]);
  const editor = (set) => {
    const errors = errorBox();
    const name = h('input', { type: 'text', required: true, maxlength: 100, value: set?.name || '' });
    const boxes = channels.map((c) => h('input', { type: 'checkbox', value: c.id, checked: !!set?.channels?.includes(c.id) }));
    return h('form.set-form', { onsubmit: (event) => {
      event.preventDefault();
      // settings: kept as they are (a set's per-channel settings are chosen in the composer)
      send('sets', set ? 'PUT' : 'POST', set?.id, { name: name.value.trim(), channels: boxes.filter((b) => b.checked).map((b) => b.value), settings: set?.settings || {} }, errors);
    } }, field(set ? t('Name of the set {name}', { name: set.name }) : t('New set'), name),
    h('fieldset.set-channels', h('legend', t('Channels')), channels.length ? channels.map((c, i) => h('label.chip', boxes[i], avatar(c, 24), c.name)) : h('p.muted', t('No channels yet.'))),
    h('div.actions', h('button', { type: 'submit', class: set ? null : 'primary' }, set ? t('Save') : t('Add set')),
      set ? deleteButton('sets', set.id, t('Delete the set {name}', { name: set.name }), errors) : null), errors);
  };
  put(panel, listCard(t('Sets'), t('A set is a saved choice of channels: picking it in the composer selects them all.'), sets, editor, t('No sets yet.')));
}
