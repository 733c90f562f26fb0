// Composer: one compact page. Channels (chips with avatars, or a saved set), the editor with tabs ("Global" and
// one per channel, as Postiz: a channel tab may take its own text and media, "Customize for <Channel>", and holds
// the channel's settings, folded), media (upload with progress, paste, drop, the library, reorder, alt text),
// emoji, signatures, tags, the date in the organization's zone and a repeat interval, a preview that looks like
// the platform's post, and a sticky action bar that says why it cannot schedule and offers the fix.
// Rules: every text through t(); times through util.js (the organization's zone); the page never drops typed
// text without asking (hashchange and beforeunload guards, removed once the page is gone).
// Addresses: #/compose, #/compose?date=<UTC ISO> (an empty calendar slot), #/compose/<postId> and
// #/compose?edit=<postId> (edit one post and its thread: a draft made by Duplicate opens the same way).
import { h, put, t, avatar, mediaImage, api, session, errorBox, errorLines, ApiError, field, nextId, providers, zone, toLocalInput, fromLocalInput, textToHtml, htmlToText, stateBadge, go, mayDo } from './util.js';
import { measure } from './count.js';
import { preview } from './previews.js';
import { emojiButton, insertAtCaret } from './emoji.js';
import { bestTimesBlock } from './analytics.js';

/** Replaces an element's children as h() appends them (null skipped, lists flattened). */
const fill = (el, ...children) => { el.replaceChildren(); return put(el, ...children); };
const isVideo = (path) => /\.(mp4|mov|webm|m4v)(\?|$)/i.test(path || '');
const optional = (promise, key) => promise.then((answer) => answer?.[key] || []).catch(() => []);  // (an API not there yet: none)
const settingsCache = new Map();
function providerSettings(channelId) {
  if (!settingsCache.has(channelId)) settingsCache.set(channelId, api('GET', `/integration-settings/${channelId}`).then((a) => a.output).catch(() => ({ maxLength: 0, settings: '', rules: '' })));
  return settingsCache.get(channelId);
}

/** Form fields for a settings JSON Schema: strings, numbers, booleans, enums, arrays of simple items. */
function schemaForm(schema, values) {
  const required = new Set(schema.required || []);
  const fields = [];
  const readers = [];
  const skipped = [];
  for (const [name, spec] of Object.entries(schema.properties || {})) {
    const label = name.replace(/_/g, ' ') + (required.has(name) ? ` (${t('required')})` : '');
    const current = values?.[name];
    let input;
    let read;
    if (spec.enum) {
      input = h('select', { name }, h('option', { value: '' }, '—'), spec.enum.map((v) => h('option', { value: v, selected: current === v }, v)));
      read = () => input.value || undefined;
    } else if (spec.type === 'string') {
      input = h('input', { type: spec.format === 'url' ? 'url' : 'text', name, value: current ?? '' });
      read = () => input.value.trim() || undefined;
    } else if (spec.type === 'number' || spec.type === 'integer') {
      input = h('input', { type: 'number', name, value: current ?? '', step: spec.type === 'integer' ? '1' : 'any' });
      read = () => (input.value === '' ? undefined : Number(input.value));
    } else if (spec.type === 'boolean') {
      input = h('input', { type: 'checkbox', name, checked: !!current, id: nextId() });
      fields.push(h('div.field.check', input, h('label', { for: input.id }, label), spec.description ? h('small.hint', spec.description) : null));
      readers.push([name, () => input.checked]);
      continue;
    } else if (spec.type === 'array' && ['string', 'number', 'integer'].includes(spec.items?.type)) {
      const numeric = spec.items.type !== 'string';
      input = h('input', { type: 'text', name, value: Array.isArray(current) ? current.join(', ') : '' });
      read = () => {
        const list = input.value.split(',').map((s) => s.trim()).filter(Boolean);
        return list.length ? (numeric ? list.map(Number) : list) : undefined;
      };
      fields.push(field(label, input, `${spec.description ? spec.description + ' ' : ''}${t('Comma-separated.')}`));
      readers.push([name, read]);
      continue;
    } else {
      skipped.push(name);
      continue;
    }
    if (required.has(name)) input.required = true;
    fields.push(field(label, input, spec.description));
    readers.push([name, read]);
  }
  const read = () => {
    const out = {};
    for (const [name, fn] of readers) { const v = fn(); if (v !== undefined) out[name] = v; }
    return out;
  };
  return { fields, read, skipped, required: required.size > 0 };
}

/** Parts of `text` that each fit (`fits(piece)`), cut between sentences, else between words, else anywhere. */
export function splitText(text, fits) {
  const pieces = [];
  let current = '';
  const push = () => { if (current.trim()) pieces.push(current.trim()); current = ''; };
  const add = (unit, joiner) => {
    const joined = current ? current + joiner + unit : unit;
    if (fits(joined)) { current = joined; return true; }
    push();
    if (fits(unit)) { current = unit; return true; }
    return false;
  };
  for (const sentence of text.trim().split(/(?<=[.!?…])\s+|\n+/)) {
    if (add(sentence, ' ')) continue;
    for (const word of sentence.split(/\s+/)) {
      if (add(word, ' ')) continue;
      for (const ch of word) if (!add(ch, '')) return pieces;  // (nothing fits: a limit of 0)
    }
  }
  push();
  return pieces;
}

/** XMLHttpRequest upload (fetch has no upload progress): resolves to the media, calls progress(0..1). */
function upload(file, progress) {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open('POST', '/public/v1/upload');
    request.setRequestHeader('X-CSRF-Token', session.csrfToken);
    request.upload.addEventListener('progress', (event) => { if (event.lengthComputable) progress(event.loaded / event.total); });
    request.addEventListener('load', () => {
      let body = null;
      try { body = JSON.parse(request.responseText); } catch { body = request.responseText; }
      if (request.status >= 200 && request.status < 300) resolve(body); else reject(new ApiError(request.status, body));
    });
    request.addEventListener('error', () => reject(new Error(t('The upload of {name} failed: no answer from the server.', { name: file.name }))));
    const form = new FormData();
    form.append('file', file);
    request.send(form);
  });
}

/** The library's dialog: a searchable grid of the organization's uploads; `choose(media)` for a pick. */
function libraryDialog(choose) {
  const search = h('input', { type: 'search', oninput: () => { page = 1; load(); } });
  const grid = h('div.library-grid');
  const errors = errorBox();
  const paging = h('div.actions');
  let page = 1;
  const dialog = h('dialog.library', { 'aria-labelledby': 'library-title' },
    h('h2#library-title', t('Media library')), field(t('Search by name or alt text'), search), errors, grid, paging,
    h('form', { method: 'dialog' }, h('button', { type: 'submit' }, t('Close'))));
  async function load() {
    errors.show(null);
    try {
      const answer = await api('GET', `/media?page=${page}&search=${encodeURIComponent(search.value.trim())}`);
      const media = answer.media || [];
      grid.replaceChildren(...(media.length ? media.map((m) => h('button.library-item', { type: 'button', onclick: () => { choose(m); dialog.close(); } },
        isVideo(m.path) ? h('span.library-video', '🎞') : mediaImage(m.path, ''), h('span.library-name', m.name || m.originalName || t('Untitled'))))
        : [h('p.muted', t('Nothing uploaded yet matches.'))]));
      const pages = answer.pages || 1;
      paging.replaceChildren(...(pages > 1 ? [
        h('button', { type: 'button', disabled: page <= 1, onclick: () => { page--; load(); } }, t('Previous')),
        h('span', t('Page {page} of {pages}', { page, pages })),
        h('button', { type: 'button', disabled: page >= pages, onclick: () => { page++; load(); } }, t('Next'))] : []));
    } catch (error) { errors.show(error); }
  }
  dialog.addEventListener('close', () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  load();
}

export async function composerPage(main, { id, query }) {
  if (stayed) {  // the person chose to stay: the same page, as it was
    const { nodes, dirty, discard } = stayed;
    stayed = null;
    main.append(...nodes);
    guardLeaving(main, dirty, discard);
    return;
  }
  const groupEdit = id ? '' : query?.get('edit') || '';
  const [channels, editing, known, sets, signatures, knownTags, members] = await Promise.all([api('GET', '/integrations'),
    id ? api('GET', `/posts/${id}`) : null, providers(), optional(api('GET', '/sets'), 'sets'),
    id || groupEdit ? [] : optional(api('GET', '/signatures'), 'signatures'), optional(api('GET', '/tags'), 'tags'),
    groupEdit ? postGroup(groupEdit) : null]);
  const memberOf = new Map((members || []).map((m) => [m.integration.id, m]));  // channel id -> its post of the group
  const usable = editing ? channels.filter((c) => c.id === editing.integration.id) : channels.filter((c) => !c.disabled || memberOf.has(c.id));
  const byId = new Map(channels.map((c) => [c.id, c]));
  const errors = errorBox();
  const selected = new Set(editing ? [editing.integration.id] : []);
  const chosen = () => [...selected].map((cid) => byId.get(cid)).filter(Boolean);
  const globalParts = [];
  const own = new Map();  // channel id -> its own parts (customized)
  const partsOf = (cid) => own.get(cid) || globalParts;
  const settingsForms = new Map();  // channel id -> {spec, form, el}
  const presetSettings = {};  // channel id -> settings values (a set's, or the edited post's)
  let tab = 'global';
  let previewChannel = '';
  const placed = new Map();  // where -> error lines shown there ('part <tab> <index>', 'settings <channel>', 'channel <channel>')
  const tags = [];

  main.append(h('h1', editing || members ? t('Edit post') : t('New post')));
  if (editing) main.append(h('p', stateBadge(editing.state), ' ', t('on {channel}', { channel: editing.integration.name })));
  if (!usable.length) {
    main.append(h('p.notice', t('Connect a channel first:'), ' ', h('a', { href: '#/channels' }, t('Channels')), '.'));
    return;
  }
  const newPart = (from = {}) => ({ text: from.text || '', media: (from.media || []).map((m) => ({ ...m })), delay: from.delay || 0, id: from.id });

  // --- channels and sets -------------------------------------------------------------------------
  const channelBoxes = h('fieldset.channels', h('legend', t('Channels')), usable.map((c) => {
    const box = h('input', { type: 'checkbox', value: c.id, checked: selected.has(c.id), disabled: !!editing, id: nextId('ch'), onchange: () => {
      if (box.checked) selected.add(c.id); else { selected.delete(c.id); own.delete(c.id); if (tab === c.id) tab = 'global'; }
      refreshChannels();
    } });
    return h('label.chip', { for: box.id, title: c.customer ? `${c.name} · ${c.customer.name}` : c.name }, box, avatar(c, 20), h('span.chip-name', c.name));
  }));
  const setPicker = sets.length && !editing ? h('select', { onchange: () => {
    const set = sets.find((s) => s.id === setPicker.value);
    if (!set) return;
    selected.clear();
    for (const cid of set.channels || []) if (usable.some((c) => c.id === cid)) selected.add(cid);
    for (const box of channelBoxes.querySelectorAll('input')) box.checked = selected.has(box.value);
    Object.assign(presetSettings, set.settings || {});
    for (const cid of Object.keys(set.settings || {})) settingsForms.delete(cid);  // drawn again with the set's values
    refreshChannels();
  } }, h('option', { value: '' }, t('Choose a set…')), sets.map((s) => h('option', { value: s.id }, s.name))) : null;

  // --- the editor: tabs, parts, media ------------------------------------------------------------
  const tabs = h('div.editor-tabs', { role: 'tablist', 'aria-label': t('Text for') });
  const panel = h('section.editor-panel', { role: 'tabpanel' });
  let lastTextarea = null;

  function counterFor(c, text) {
    const descriptor = known[c.identifier];
    const limit = settingsForms.get(c.id)?.spec?.maxLength || descriptor?.maxLength || 0;
    const { length, unit } = measure(descriptor?.counting, text, descriptor?.limits);
    return { length, limit, unit: unit === 'weighted' ? t('weighted') : t('characters'), over: limit > 0 && length > limit };
  }
  const counterText = (c, n) => (n.limit ? t('{name}: {length} / {limit} {unit}', { name: c.name, length: n.length, limit: n.limit, unit: n.unit })
    : t('{name}: {length} {unit}', { name: c.name, length: n.length, unit: n.unit })) + (n.over ? ` — ${t('too long')}` : '');

  /** The counters under part `index` of `parts` (the channels that post it). */
  function drawCounters(box, parts, index) {
    const users = tab === 'global' ? chosen().filter((c) => !own.has(c.id)) : [byId.get(tab)];
    box.replaceChildren(...users.map((c) => {
      const n = counterFor(c, parts[index].text);
      return h(`span.count${n.over ? '.over' : ''}`, { dataset: { channel: c.id } }, counterText(c, n));
    }), ...(tab === 'global' ? chosen().filter((c) => own.has(c.id)).map((c) => h('button.count.own', { type: 'button', dataset: { channel: c.id }, onclick: () => openTab(c.id) },
      t('{name}: its own text', { name: c.name }))) : []));
  }

  function mediaList(part, redraw) {
    const list = h('ul.media');
    let dragged = -1;
    const move = (from, to) => { const [m] = part.media.splice(from, 1); part.media.splice(to, 0, m); redraw(); };
    list.append(...part.media.map((m, i) => {
      const alt = h('input', { type: 'text', value: m.alt || '', oninput: () => { m.alt = alt.value; changed(); } });
      return h('li', { draggable: 'true', ondragstart: (event) => { dragged = i; event.dataTransfer.effectAllowed = 'move'; },
        ondragover: (event) => { if (dragged >= 0) event.preventDefault(); }, ondrop: (event) => { if (dragged >= 0) { event.preventDefault(); event.stopPropagation(); move(dragged, i); } } },
      isVideo(m.path) ? h('video', { src: m.path, controls: true, preload: 'metadata' }) : mediaImage(m.path, m.alt || t('uploaded image')),
      field(t('Alt text'), alt),
      h('div.media-tools',
        h('button.tool', { type: 'button', disabled: i === 0, 'aria-label': t('Move left'), title: t('Move left'), onclick: () => move(i, i - 1) }, '←'),
        h('button.tool', { type: 'button', disabled: i === part.media.length - 1, 'aria-label': t('Move right'), title: t('Move right'), onclick: () => move(i, i + 1) }, '→'),
        h('button.link', { type: 'button', onclick: () => { part.media.splice(i, 1); redraw(); } }, t('Remove'))));
    }));
    return list;
  }

  async function addFiles(files, part, list, partErrors, redraw) {
    for (const file of files) {
      const bar = h('progress', { max: 1, value: 0 });
      const status = h('li.uploading', h('span', t('Uploading {name}…', { name: file.name })), bar);
      list.append(status);
      try {
        const media = await upload(file, (share) => { bar.value = share; });
        part.media.push({ id: media.id, path: media.path, alt: media.alt || '' });
      } catch (error) { partErrors.show(error); }
      status.remove();
    }
    redraw();
  }

  /** The editor of one parts list (the global one, or a customized channel's). */
  function partsEditor(parts, channel) {
    const items = parts.map((part, index) => {
      const label = channel ? (index ? t('Thread part {n} on {channel}', { n: index + 1, channel: channel.name }) : t('Post on {channel}', { channel: channel.name }))
        : (index ? t('Thread part {n}', { n: index + 1 }) : t('Post'));
      const textarea = h('textarea', { rows: index ? 3 : 4, onfocus: () => { lastTextarea = textarea; }, oninput: () => { part.text = textarea.value; drawCounters(counters, parts, index); changed(); } });
      textarea.value = part.text;
      const counters = h('div.counters', { 'aria-live': 'polite' });
      drawCounters(counters, parts, index);
      const partErrors = errorBox();
      const redraw = () => { drawPanel(); changed(); };
      const list = mediaList(part, redraw);
      const take = (files) => { const wanted = [...files].filter((f) => /^(image|video)\//.test(f.type)); if (wanted.length) addFiles(wanted, part, list, partErrors, redraw); return wanted.length; };
      textarea.addEventListener('paste', (event) => { if (take(event.clipboardData?.files || [])) event.preventDefault(); });
      const addLabel = index ? t('Add media to part {n}', { n: index + 1 }) : t('Add media');
      const file = h('input.file-input', { type: 'file', 'aria-label': addLabel, accept: 'image/*,video/mp4,video/quicktime,video/webm', multiple: true, onchange: () => { take(file.files); file.value = ''; } });
      const delay = h('input', { type: 'number', min: 0, step: 1, value: part.delay, oninput: () => { part.delay = Math.max(0, Number(delay.value) || 0); changed(); } });
      const where = `part ${channel ? channel.id : 'global'} ${index}`;
      const li = h('li.part', { dataset: { where }, ondragover: (event) => { if (event.dataTransfer?.types?.includes('Files')) { event.preventDefault(); li.classList.add('drop'); } },
        ondragleave: () => li.classList.remove('drop'),
        ondrop: (event) => { li.classList.remove('drop'); if (take(event.dataTransfer?.files || [])) event.preventDefault(); } },
      field(label, textarea), counters,
      placed.has(where) ? h('div.errors.inline-error', { role: 'alert', tabindex: '-1' }, placed.get(where).map((line) => h('p', line))) : null,
      h('div.part-tools',
        h('label.button.tool.file-button', file, h('span', { 'aria-hidden': 'true' }, '+ '), addLabel),
        h('button.tool', { type: 'button', onclick: () => libraryDialog((m) => { part.media.push({ id: m.id, path: m.path, alt: m.alt || '' }); redraw(); }) }, t('From the library')),
        emojiButton(() => textarea),
        index ? h('label.delay', t('Wait'), ' ', delay, ' ', t('min after the part before')) : null,
        index && !editing ? h('button.link', { type: 'button', onclick: () => { parts.splice(index, 1); redraw(); } }, t('Remove part')) : null),
      partErrors, list);
      return li;
    });
    return [h('ol.parts', items), editing && channel ? null : h('button', { type: 'button', onclick: () => {
      parts.push(newPart());
      drawPanel();
      panel.querySelectorAll('textarea')[parts.length - 1]?.focus();
    } }, t('+ Add thread part'))];
  }

  function openTab(which, focusPart) {
    tab = which;
    drawTabs();
    drawPanel();
    if (focusPart !== undefined) panel.querySelectorAll('.part textarea')[focusPart]?.focus();
  }
  function customize(cid) {
    own.set(cid, globalParts.map((p) => newPart(p)));
    refresh();
  }

  function drawTabs() {
    const all = [['global', t('Global'), null], ...chosen().map((c) => [c.id, c.name, c])];
    if (!all.some(([key]) => key === tab)) tab = 'global';
    const hadFocus = tabs.contains(document.activeElement);
    tabs.replaceChildren(...all.map(([key, name, c]) => h('button.tab', { type: 'button', role: 'tab', 'aria-selected': String(tab === key), tabindex: tab === key ? '0' : '-1',
      dataset: { tab: key }, onclick: () => openTab(key), onkeydown: (event) => {
        const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
        if (!step) return;
        const next = all[(all.findIndex(([k]) => k === key) + step + all.length) % all.length][0];
        openTab(next);
        tabs.querySelector(`[data-tab="${next}"]`)?.focus();
      } }, c ? avatar(c, 20) : null, name, c && own.has(c.id) ? h('span.tab-mark', ` · ${t('own text')}`) : null,
      c && partsOf(c.id).some((p) => counterFor(c, p.text).over) ? h('span.tab-mark.tab-over', ` · ${t('too long')}`) : null)));
    if (hadFocus) tabs.querySelector('[aria-selected="true"]').focus();  // (a redraw keeps the keyboard's place)
  }

  /** Draws the tab's panel again; the control that had the focus (and its caret) keeps it: a channel's
   * settings arriving while the person types must not take their text box away. */
  function drawPanel() {
    const controls = () => [...panel.querySelectorAll('textarea, input, select, button')];
    const had = document.activeElement;
    const place = panel.contains(had) ? controls().indexOf(had) : -1;
    const caret = place >= 0 && had.tagName === 'TEXTAREA' ? [had.selectionStart, had.selectionEnd] : null;
    drawPanelContent();
    if (place < 0) return;
    const again = controls()[place];
    again?.focus();
    if (caret && again?.tagName === 'TEXTAREA') again.setSelectionRange(...caret);
  }
  function drawPanelContent() {
    if (tab === 'global') {
      fill(panel, ...partsEditor(globalParts, null));
    } else {
      const c = byId.get(tab);
      const mine = own.get(c.id);
      const settings = settingsForms.get(c.id);
      const where = `settings ${c.id}`;
      fill(panel, 
        placed.has(`channel ${c.id}`) ? h('div.errors.inline-error', { role: 'alert', tabindex: '-1' }, placed.get(`channel ${c.id}`).map((line) => h('p', line))) : null,
        h('div.custom-head', mine ? h('p.hint', t('{channel} posts its own text and media.', { channel: c.name })) : h('p.hint', t('{channel} posts the global text.', { channel: c.name })),
          editing ? null : h('button', { type: 'button', onclick: () => { if (mine) own.delete(c.id); else { customize(c.id); return; } refresh(); } },
            mine ? t('Use the global text on {channel}', { channel: c.name }) : t('Customize for {channel}', { channel: c.name }))),
        mine ? partsEditor(mine, c) : h('div.counters', globalParts.map((p, i) => {
          const n = counterFor(c, p.text);
          return h(`span.count${n.over ? '.over' : ''}`, { dataset: { channel: c.id } }, `${i ? t('Part {n}', { n: i + 1 }) + ' · ' : ''}${counterText(c, n)}`);
        })),
        settings?.form ? h('details.provider-settings', { open: settings.form.required || placed.has(where), dataset: { where }, oninput: () => drawPreview() },
          h('summary', t('{channel} settings', { channel: c.name })),
          placed.has(where) ? h('div.errors.inline-error', { role: 'alert', tabindex: '-1' }, placed.get(where).map((line) => h('p', line))) : null,
          settings.spec.rules ? h('p.hint', settings.spec.rules) : null, settings.form.fields,
          settings.form.skipped.length ? h('p.hint', t('Set through the API: {names}.', { names: settings.form.skipped.join(', ') })) : null) : null);
    }
    drawPreview();
  }

  // --- preview -----------------------------------------------------------------------------------
  const previewPicker = h('select', { onchange: () => { previewChannel = previewPicker.value; drawPreview(); } });
  const previewSlot = h('div.preview-slot');
  const previewBox = h('aside.previews', { 'aria-label': t('Preview') }, h('div.preview-head', h('h2', t('Preview')), field(t('Preview on'), previewPicker)), previewSlot);
  function drawPreview() {
    const list = chosen();
    if (tab !== 'global') previewChannel = tab;
    if (!list.some((c) => c.id === previewChannel)) previewChannel = list[0]?.id || '';
    previewPicker.replaceChildren(...list.map((c) => h('option', { value: c.id, selected: c.id === previewChannel }, c.name)));
    previewBox.hidden = !list.length;
    const c = byId.get(previewChannel);
    // (a title the channel's settings give, Reddit's or a blog's, heads its preview)
    const title = c ? settingsForms.get(c.id)?.form?.read().title : '';
    const parts = c ? partsOf(c.id).map((p, i) => (i === 0 && typeof title === 'string' && title ? { ...p, title } : p)) : [];
    previewSlot.replaceChildren(c ? preview(c, parts, known[c.identifier]?.name) : '');
  }

  // --- the action bar: what is too long, and the fixes ---------------------------------------------
  const reason = h('div.bar-reason', { 'aria-live': 'polite' });
  const overLimits = () => chosen().flatMap((c) => partsOf(c.id).map((p, index) => ({ c, index, ...counterFor(c, p.text) })).filter((x) => x.over));
  function drawBar() {
    const over = overLimits();
    for (const button of form.querySelectorAll('.bar-buttons button[data-checked]')) button.disabled = over.length > 0;
    if (!over.length) { reason.replaceChildren(); return; }
    const first = over[0];
    const fixes = [];
    for (const x of over) {
      if (!own.has(x.c.id) && selected.size > 1 && !editing && !fixes.some((f) => f.dataset.channel === x.c.id)) {
        fixes.push(h('button.tool', { type: 'button', dataset: { channel: x.c.id }, onclick: () => { customize(x.c.id); openTab(x.c.id, x.index); } }, t('Customize for {channel}', { channel: x.c.name })));
      }
    }
    if (!editing) fixes.push(h('button.tool', { type: 'button', onclick: () => splitThread(first) }, t('Split into a thread')));
    fill(reason, h('p', t('Too long for {channel}: {length} / {limit} {unit} (part {n}). Shorten it to schedule.', { channel: first.c.name, length: first.length, limit: first.limit, unit: first.unit, n: first.index + 1 })),
      over.length > 1 ? h('p.muted', t('{n} texts are too long in all.', { n: over.length })) : null, h('div.fixes', fixes));
  }
  /** Splits the over-long part into parts that fit every channel posting it (the smallest limit wins). */
  function splitThread({ c, index }) {
    const parts = partsOf(c.id);
    const users = own.has(c.id) ? [c] : chosen().filter((x) => !own.has(x.id));
    const fits = (text) => users.every((x) => !counterFor(x, text).over);
    const pieces = splitText(parts[index].text, fits);
    if (!pieces.length) return;
    parts[index].text = pieces[0];
    parts.splice(index + 1, 0, ...pieces.slice(1).map((text) => newPart({ text })));
    openTab(own.has(c.id) ? c.id : 'global', index);
    changed();
  }

  // --- when, repeat, tags, signatures --------------------------------------------------------------
  const when = h('input', { type: 'datetime-local', required: true, step: 60 });
  const preset = Date.parse(query?.get('date') || '');
  const start = editing ? Date.parse(editing.publishDate) : preset > Date.now() ? preset : Math.ceil((Date.now() + 60000) / 3600000) * 3600000;
  when.value = toLocalInput(start);
  const slotButton = h('button.tool', { type: 'button', onclick: async () => {
    const first = [...selected][0];
    if (!first) { errors.show(new Error(t('Choose a channel first: the next free slot is per channel.'))); return; }
    try {
      const slot = await api('GET', `/find-slot/${first}`);
      when.value = toLocalInput(Date.parse(slot.date.endsWith('Z') ? slot.date : slot.date + 'Z'));
      errors.show(null);
    } catch (error) { errors.show(error); }
  } }, t('Next free slot'));
  const everyDays = h('input', { type: 'number', min: 1, max: 3650, step: 1, value: 3, hidden: true, 'aria-label': t('Repeat every how many days') });
  const repeat = h('select', { onchange: () => { everyDays.hidden = repeat.value !== 'custom'; changed(); } },
    [['', t('Does not repeat')], ['1', t('Every day')], ['7', t('Every week')], ['14', t('Every two weeks')], ['30', t('Every 30 days')], ['365', t('Every year')], ['custom', t('Every … days')]]
      .map(([value, label]) => h('option', { value }, label)));
  const interval = () => (repeat.value === 'custom' ? Math.min(3650, Math.max(1, Math.round(Number(everyDays.value) || 1))) : Number(repeat.value) || 0);

  // --- issue 26: Add to queue, Evergreen, and when a repeat ends (never, on a date, after a number of times) ---
  const evergreen = h('input', { type: 'checkbox', id: nextId(), checked: !!editing?.evergreen });
  const evergreenField = h('div.field.check.evergreen-field', evergreen, h('label', { for: evergreen.id }, t('Evergreen')),
    h('small.hint', t('Posted again when the channel\'s queue has an empty slot (if its queue takes evergreen posts).')));
  const endDate = h('input', { type: 'date', 'aria-label': t('Last day of the repeat'), hidden: true });
  const endCount = h('input', { type: 'number', min: 1, max: 1000, step: 1, value: 5, 'aria-label': t('How many times in all, the first included'), hidden: true });
  const ends = h('select', { 'aria-label': t('Ends'), onchange: () => drawEnds() },
    [['', t('Never ends')], ['until', t('Ends on a date')], ['count', t('Ends after a number of times')]].map(([value, label]) => h('option', { value }, label)));
  const repeatEnd = h('span.repeat-end', ends, endDate, endCount);
  const drawEnds = () => { repeatEnd.hidden = !repeat.value; endDate.hidden = ends.value !== 'until'; endCount.hidden = ends.value !== 'count'; };
  repeat.addEventListener('change', drawEnds);
  drawEnds();
  /** What the queue and the repeat's end add to a new post's body (a queued post has no date: its slot is its date). */
  const queueFields = (body, action, inter) => {
    if (action === 'queue' && inter) throw new Error(t('A post added to the queue goes out once: choose “Does not repeat”, or Schedule it at a date to repeat it.'));
    if (action === 'queue') delete body.date;
    if (evergreen.checked) body.evergreen = true;
    if (inter && ends.value === 'until' && endDate.value) body.repeatUntil = endDate.value;  // (its last day, in the organization's zone)
    if (inter && ends.value === 'count') body.repeatCount = Math.min(1000, Math.max(1, Math.round(Number(endCount.value) || 1)));
    return body;
  };
  /** An edited post keeps its queue place unless its date was changed; its evergreen mark is saved with it. */
  const editFields = (loadedDate) => ({ evergreen: evergreen.checked, ...(editing?.inQueue && when.value === loadedDate ? { date: undefined } : {}) });
  const loadQueueFields = (post) => {
    evergreen.checked = !!post.evergreen;
    ends.value = post.repeatUntil ? 'until' : post.repeatCount ? 'count' : '';
    if (post.repeatUntil) endDate.value = post.repeatUntil.length === 10 ? post.repeatUntil : toLocalInput(Date.parse(post.repeatUntil)).slice(0, 10);
    if (post.repeatCount) endCount.value = post.repeatCount;
    drawEnds();
  };

  const tagInput = h('input.tag-input', { type: 'text', list: 'known-tags', placeholder: t('Type a tag, then Enter'), onkeydown: (event) => {
    if (event.key !== 'Enter' && event.key !== ',') return;
    event.preventDefault();
    addTag(tagInput.value);
  }, onchange: () => addTag(tagInput.value) });
  const tagChips = h('span.tag-chips');
  function addTag(name) {
    const clean = name.replace(/,/g, '').trim();
    tagInput.value = '';
    if (!clean || tags.some((x) => x.toLowerCase() === clean.toLowerCase())) return;
    tags.push(knownTags.find((x) => x.name.toLowerCase() === clean.toLowerCase())?.name || clean);
    drawTags();
  }
  function drawTags() {
    tagChips.replaceChildren(...tags.map((name, i) => {
      const color = knownTags.find((x) => x.name === name)?.color;
      const dot = /^#[0-9a-f]{6}$/i.test(color || '') ? h('i.tag-dot') : null;
      if (dot) dot.style.background = color;  // (the policy allows styles set from a script, not style attributes)
      return h('span.tag-chip', dot, name,
        h('button.link', { type: 'button', 'aria-label': t('Remove the tag {name}', { name }), onclick: () => { tags.splice(i, 1); drawTags(); } }, '×'));
    }));
  }
  const signaturePicker = signatures.length ? h('select', { onchange: () => {
    const signature = signatures.find((s) => s.id === signaturePicker.value);
    signaturePicker.value = '';
    if (!signature) return;
    const target = lastTextarea?.isConnected ? lastTextarea : panel.querySelector('textarea');
    if (target) insertAtCaret(target, (target.value && !target.value.endsWith('\n') ? '\n' : '') + signatureText(signature));
  } }, h('option', { value: '' }, t('Insert signature…')), signatures.map((s) => h('option', { value: s.id }, signatureText(s).slice(0, 40)))) : null;

  // --- an edited group: its channels, their parts (shared when alike), settings, date, tags, repeat ---------
  const ids = new Map();  // channel id -> the ids of its post's parts (an edit updates them in place)
  const partIds = (cid) => ids.get(cid) || [];
  function loadGroup(posts) {
    const partsOfPost = (m) => [m, ...(m.thread || [])].map((x) => newPart({ text: htmlToText(x.content), delay: x.delay || 0,
      media: (x.image || []).map((img) => ({ id: img.id, path: img.path, alt: img.alt || '' })) }));
    const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
    const shared = partsOfPost(posts[0]);
    globalParts.push(...shared);
    for (const m of posts) {
      const cid = m.integration.id;
      selected.add(cid);
      ids.set(cid, [m, ...(m.thread || [])].map((x) => x.id));
      presetSettings[cid] = m.settings;
      const mine = partsOfPost(m);
      if (!same(mine, shared)) own.set(cid, mine);
    }
    for (const box of channelBoxes.querySelectorAll('input')) box.checked = selected.has(box.value);
    tags.push(...(posts[0].tags || []).map((x) => x.tag?.name || x.name).filter(Boolean));
    drawTags();
    when.value = toLocalInput(Date.parse(posts[0].publishDate));
    const every = String(posts[0].intervalInDays || '');
    repeat.value = [...repeat.options].some((o) => o.value === every) ? every : 'custom';
    everyDays.value = every || 3;
    everyDays.hidden = repeat.value !== 'custom';
    loadQueueFields(posts[0]);
  }

  // --- saving ------------------------------------------------------------------------------------
  const snapshot = () => JSON.stringify([[...selected], globalParts, [...own], tags, repeat.value]);
  let saved = '';
  let leaving = false;
  function changed() { drawBar(); drawPreview(); keepDraft(); markTabs(); }
  /** The tabs' "too long" marks, kept current as the text changes (the tabs themselves keep their focus). */
  function markTabs() {
    for (const c of chosen()) {
      const over = partsOf(c.id).some((p) => counterFor(c, p.text).over);
      const button = tabs.querySelector(`[data-tab="${c.id}"]`);
      if (button && over !== Boolean(button.querySelector('.tab-over'))) drawTabs();
    }
  }
  const dirty = () => !leaving && snapshot() !== saved;
  // A new post's text is kept in this tab (sessionStorage) while it is written, so a reload does not lose it.
  function keepDraft() {
    if (editing || members || !saved) return;
    if (dirty()) sessionStorage.setItem(DRAFT, JSON.stringify({ selected: [...selected], globalParts, own: [...own], tags, when: when.value, repeat: repeat.value, every: everyDays.value }));
    else sessionStorage.removeItem(DRAFT);
  }
  function restoreDraft() {
    let kept = null;
    try { kept = JSON.parse(sessionStorage.getItem(DRAFT) || 'null'); } catch { /* a damaged copy: start afresh */ }
    if (!kept || !Array.isArray(kept.globalParts) || !kept.globalParts.length) return null;
    for (const cid of kept.selected || []) if (usable.some((c) => c.id === cid)) selected.add(cid);
    for (const box of channelBoxes.querySelectorAll('input')) box.checked = selected.has(box.value);
    globalParts.push(...kept.globalParts.map(newPart));
    for (const [cid, parts] of kept.own || []) if (selected.has(cid)) own.set(cid, parts.map(newPart));
    tags.push(...(kept.tags || []));
    drawTags();
    if (kept.when) when.value = kept.when;
    repeat.value = kept.repeat || '';
    everyDays.value = kept.every || 3;
    everyDays.hidden = repeat.value !== 'custom';
    return h('p.notice.restored', { role: 'status' }, t('The post you were writing is back (kept in this tab).'), ' ',
      h('button.link', { type: 'button', onclick: () => { sessionStorage.removeItem(DRAFT); leaving = true; go('#/compose'); } }, t('Start over')));
  }

  async function create(body, action, date) {
    const created = await api('POST', '/posts', body);
    // (an edited group: the channels taken out of it lose their post)
    for (const [cid, m] of memberOf) if (!selected.has(cid)) await api('DELETE', `/posts/${m.id}`);
    leaving = true;
    sessionStorage.removeItem(DRAFT);
    if (action === 'queue') { await import('./queue.js').then((m) => m.showQueued(created, byId)); return; }
    if (action === 'now' && created.length === 1) { go(`#/post/${created[0].postId}`); return; }
    session.justMade = { action, ids: created.map((item) => item.postId) };
    go(`#/calendar?date=${toLocalInput(action === 'now' ? Date.now() : date).slice(0, 10)}`);
  }
  // The same text on a channel within 24 hours is refused (409) with the posts it repeats: say so, and offer to send it anyway.
  function offerDuplicate(error, body, action, date) {
    if (error.status !== 409 || !error.body?.duplicates) return;
    const anyway = h('button', { type: 'button', onclick: async () => {
      anyway.disabled = true;
      try { await create({ ...body, allowDuplicate: true }, action, date); } catch (again) { errors.show(again); errors.focus(); }
    } }, t('Post anyway'));
    errors.append(h('p', anyway));
  }

  /** Puts each line of the API's error next to what it is about (a part, a channel's settings, a channel);
   * the rest stays in the bar. Answers whether any was placed. */
  function placeErrors(error, sentChannels) {
    placed.clear();
    const rest = [];
    const lines = error instanceof ApiError ? errorLines(error.body, error.status) : [String(error.message || error)];
    const named = error instanceof ApiError && error.body?.name ? sentChannels.find((c) => c.name === error.body.name) : null;
    for (const line of lines) {
      const path = /^posts\.(\d+)\.(value\.(\d+)|settings)/.exec(line);
      const c = path ? sentChannels[Number(path[1])] : named;
      let where = null;
      if (c && path?.[3] !== undefined) where = `part ${own.has(c.id) ? c.id : 'global'} ${path[3]}`;
      else if (c && path) where = `settings ${c.id}`;
      else if (c) where = `channel ${c.id}`;
      // (placed, a line need not say where: "posts.0.value.1.content ..." reads "Sky: content ...")
      const said = path && c ? `${c.name}: ${line.slice(path[0].length).replace(/^\.?\s*/, '')}` : line;
      if (where) placed.set(where, [...(placed.get(where) || []), said]); else rest.push(line);
    }
    const first = placed.keys().next().value;
    if (first) {
      const [kind, key] = first.split(' ');
      tab = kind === 'part' || kind === 'settings' || kind === 'channel' ? key : tab;
      drawTabs();
      drawPanel();
      const box = panel.querySelector('.inline-error');
      box?.scrollIntoView({ block: 'center' });
      box?.focus({ preventScroll: true });
    }
    if (rest.length) { errors.show(new Error(rest.join('\n'))); if (!first) errors.focus(); }
    return Boolean(first);
  }

  const valueOf = (p, i) => ({ content: textToHtml(p.text), image: p.media.map((m) => ({ id: m.id, path: m.path, ...(m.alt ? { alt: m.alt } : {}) })), delay: i ? p.delay : 0 });
  const settingsOf = (cid) => ({ ...(settingsForms.get(cid)?.form?.read() || {}) });
  const form = h('form.composer', { novalidate: true, onsubmit: async (event) => {
    event.preventDefault();
    const action = event.submitter?.value || 'schedule';
    errors.show(null);
    placed.clear();
    if (!selected.size) { errors.show(new Error(t('Choose at least one channel.'))); errors.focus(); return; }
    if (action === 'queue' && Number.isNaN(fromLocalInput(when.value))) when.value = toLocalInput(Date.now());  // (issue 26: a queued post's date is its slot's)
    const date = fromLocalInput(when.value);
    if (Number.isNaN(date) && action !== 'now') { errors.show(new Error(t('Enter a date and time.'))); errors.focus(); return; }
    const buttons = [...form.querySelectorAll('.bar-buttons button')];
    for (const b of buttons) b.disabled = true;
    const sentChannels = chosen();
    let body = null;
    try {
      if (editing) {
        const edit = (p, i) => { const { content, image } = valueOf(p, i); return { content, image }; };
        await api('PUT', `/posts/${editing.id}`, { ...edit(globalParts[0], 0), date: new Date(date).toISOString(), settings: settingsOf(editing.integration.id), ...editFields(toLocalInput(Date.parse(editing.publishDate))) });
        for (const [i, part] of globalParts.entries()) if (i && part.id) await api('PUT', `/posts/${part.id}`, edit(part, i));
        leaving = true;
        go(`#/post/${editing.id}`);
        return;
      }
      const inter = interval();
      body = {
        type: action, date: new Date(action === 'now' ? Date.now() : date).toISOString(),
        // Short links (issue 26): the organization's preference, or the person's answer when it is "ask".
        shortLink: await (await import('./links.js')).askShortLink(sentChannels.flatMap((c) => partsOf(c.id).map((p) => p.text))),
        tags: tags.map((name) => ({ value: name, label: name })), ...(inter ? { inter } : {}),
        posts: sentChannels.map((c) => ({ integration: { id: c.id }, settings: { __type: c.identifier, ...settingsOf(c.id) },
          value: partsOf(c.id).map((p, i) => ({ ...valueOf(p, i), ...(partIds(c.id)[i] ? { id: partIds(c.id)[i] } : {}) })) })),
      };
      await create(queueFields(body, action, inter), action, date);
    } catch (error) {
      placeErrors(error, sentChannels);
      offerDuplicate(error, body, action, date);
    } finally {
      for (const b of buttons) b.disabled = false;
      drawBar();
    }
  } });

  async function refreshChannels() {
    await Promise.all([...selected].map(async (cid) => {
      if (settingsForms.has(cid)) return;
      const spec = await providerSettings(cid);
      const values = editing ? editing.settings : presetSettings[cid];
      settingsForms.set(cid, { spec, form: spec.settings?.properties && Object.keys(spec.settings.properties).length ? schemaForm(spec.settings, values) : null });
    }));
    refresh();
  }
  function refresh() {
    drawTabs();
    drawPanel();
    drawBar();
  }

  const buttons = editing
    ? [h('button.primary', { type: 'submit', value: 'save', dataset: { checked: '' } }, t('Save changes')), h('a.button', { href: `#/post/${editing.id}` }, t('Cancel'))]
    : mayDo('editor') ? [h('button.primary', { type: 'submit', value: 'schedule', dataset: { checked: '' } }, t('Schedule')), h('button', { type: 'submit', value: 'queue', dataset: { checked: '' } }, t('Add to queue')),
      h('button', { type: 'submit', value: 'now', dataset: { checked: '' } }, t('Post now')),
      h('button', { type: 'submit', value: 'draft' }, t('Save draft'))]
      // An author's post is a draft an editor reviews before it goes out.
      : [h('button.primary', { type: 'submit', value: 'draft' }, t('Send for review'))];
  put(form,
    setPicker ? h('div.set-row', field(t('Use a set'), setPicker)) : null,
    channelBoxes, tabs, panel,
    h('div.compose-meta',
      field(t('Date and time ({zone})', { zone: zone() }), when), slotButton,
      bestTimesBlock(chosen, (at) => { when.value = toLocalInput(at); changed(); }),  // (issue 26: best times)
      editing ? null : h('div.field.repeat', h('label', { for: repeat.id = nextId() }, t('Repeat')), h('span.repeat-row', repeat, everyDays)),
      editing ? null : h('div.field.tags', h('label', { for: tagInput.id = nextId() }, t('Tags')), h('span.tag-row', tagChips, tagInput),
        h('datalist#known-tags', knownTags.map((x) => h('option', { value: x.name })))),
      signaturePicker ? field(t('Insert signature'), signaturePicker) : null, evergreenField),
    h('div.action-bar', errors, reason, h('div.bar-buttons', buttons)));
  main.append(h('div.compose-layout', form, previewBox));
  everyDays.after(repeatEnd);  // (issue 26: the repeat's end, beside its interval; nowhere when the repeat is not shown)

  if (editing) {
    for (const part of [editing, ...(editing.thread || [])]) globalParts.push(newPart({ id: part.id, text: htmlToText(part.content), delay: part.delay || 0, media: (part.image || []).map((m) => ({ id: m.id, path: m.path, alt: m.alt || '' })) }));
    saved = snapshot();
  } else if (members) {
    loadGroup(members);
    saved = snapshot();
  } else {
    const auto = signatures.find((s) => s.autoAdd);
    globalParts.push(newPart({ text: auto ? `\n\n${signatureText(auto)}` : '' }));
    saved = snapshot();
    if (!query?.get('date')) {
      globalParts.length = 0;
      const notice = restoreDraft();
      if (notice) main.querySelector('h1').after(notice); else globalParts.push(newPart({ text: auto ? `\n\n${signatureText(auto)}` : '' }));
    }
  }
  guardLeaving(main, dirty, () => sessionStorage.removeItem(DRAFT));
  await refreshChannels();
}

const DRAFT = 'rustiz.composer-draft';

/** The posts of the multi-channel group of post `postId` (each with its thread), that post first. */
async function postGroup(postId) {
  const root = await api('GET', `/posts/${postId}`);
  if (!root.multiChannelGroup) return [root];
  const at = Date.parse(root.publishDate);
  const window = `startDate=${new Date(at - 1000).toISOString()}&endDate=${new Date(at + 1000).toISOString()}`;
  const listed = (await api('GET', `/posts?${window}`)).posts || [];
  const others = listed.filter((p) => p.multiChannelGroup === root.multiChannelGroup && p.id !== root.id);
  return [root, ...await Promise.all(others.map((p) => api('GET', `/posts/${p.id}`)))];
}
const signatureText = (signature) => (/<\w/.test(signature.content || '') ? htmlToText(signature.content) : String(signature.content || '')).trim();

// The page a person chose to stay on, carried over the router's redraw: its nodes keep their state.
let stayed = null;

/** Asks before in-app navigation or closing the tab drops typed text; both guards go once the page is gone.
 * The router (app.js) may already be drawing the next page when the question is answered: staying puts the
 * address back and has the router draw this address again, where composerPage takes these very nodes back. */
function guardLeaving(main, dirty, discard) {
  const here = location.href;
  const onHash = () => {
    if (!main.isConnected || !dirty()) { stop(); return; }
    if (confirm(t('Leave this page? The post you are writing is not saved.'))) { stop(); discard(); return; }
    stop();
    history.replaceState(null, '', here);
    stayed = { nodes: [...main.childNodes], dirty, discard };
    window.dispatchEvent(new HashChangeEvent('hashchange'));  // (this guard is gone: the next page sets its own)
  };
  const onUnload = (event) => {
    if (!main.isConnected) { stop(); return; }
    if (dirty()) { event.preventDefault(); event.returnValue = ''; }
  };
  const stop = () => { window.removeEventListener('hashchange', onHash, true); window.removeEventListener('beforeunload', onUnload); };
  window.addEventListener('hashchange', onHash, true);
  window.addEventListener('beforeunload', onUnload);
}
