// Composer: channels, the post and its thread parts, media with alt text, per-channel counters, a text
// of its own for any channel ("Customize", as Postiz's "customize per channel"), the provider's settings
// as a form from its JSON Schema, schedule / now / draft / next free slot; edit.
import { h, avatar, mediaImage, api, session, errorBox, field, nextId, providers, zone, toLocalInput, fromLocalInput, textToHtml, htmlToText, stateBadge, go } from './util.js';
import { measure } from './count.js';

const settingsCache = new Map();
async function providerSettings(channelId) {
  if (!settingsCache.has(channelId)) settingsCache.set(channelId, api('GET', `/integration-settings/${channelId}`).then((a) => a.output).catch(() => ({ maxLength: 0, settings: '', rules: '' })));
  return settingsCache.get(channelId);
}

/** Form fields for a settings JSON Schema: strings, numbers, booleans, enums, arrays of simple items. */
function schemaForm(schema, values) {
  const props = schema && typeof schema === 'object' ? schema.properties || {} : {};
  const required = new Set(schema?.required || []);
  const fields = [];
  const readers = [];
  const skipped = [];
  for (const [name, spec] of Object.entries(props)) {
    const label = name.replace(/_/g, ' ') + (required.has(name) ? ' (required)' : '');
    const current = values?.[name];
    let input;
    let read;
    if (spec.enum) {
      input = h('select', { name }, h('option', { value: '' }, '—'), spec.enum.map((v) => h('option', { value: v, selected: current === v }, v)));
      read = () => input.value || undefined;
    } else if (spec.type === 'string') {
      input = h('input', { type: spec.format === 'url' ? 'url' : 'text', name, value: current ?? '', pattern: undefined });
      read = () => input.value.trim() || undefined;
    } else if (spec.type === 'number' || spec.type === 'integer') {
      input = h('input', { type: 'number', name, value: current ?? '', step: spec.type === 'integer' ? '1' : 'any' });
      read = () => (input.value === '' ? undefined : Number(input.value));
    } else if (spec.type === 'boolean') {
      input = h('input', { type: 'checkbox', name, checked: !!current });
      read = () => input.checked;
      input.id = nextId();
      fields.push(h('div.field.check', input, h('label', { for: input.id }, label), spec.description ? h('small.hint', spec.description) : null));
      readers.push([name, read]);
      continue;
    } else if (spec.type === 'array' && spec.items && ['string', 'number', 'integer'].includes(spec.items.type)) {
      const numeric = spec.items.type !== 'string';
      input = h('input', { type: 'text', name, value: Array.isArray(current) ? current.join(', ') : '' });
      read = () => {
        const list = input.value.split(',').map((s) => s.trim()).filter(Boolean);
        return list.length ? (numeric ? list.map(Number) : list) : undefined;
      };
      fields.push(field(label, input, `${spec.description ? spec.description + ' ' : ''}Comma-separated.`));
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
  return { fields, read, skipped };
}

export async function composerPage(main, { id, query }) {
  const [channels, editing, known] = await Promise.all([api('GET', '/integrations'), id ? api('GET', `/posts/${id}`) : null, providers()]);
  const usable = channels.filter((c) => !c.disabled);
  const errors = errorBox();
  const selected = new Set(editing ? [editing.integration.id] : []);
  const settingsForms = new Map();
  const partsState = [];
  const partsList = h('ol.parts');
  const countersFor = new Map();
  const settingsBox = h('div.settings-forms');
  // A customized channel's own text for each part (the main text stays shared by the others); its
  // counters and preview slot, redrawn as it is typed.
  const overrides = new Map();
  const customCounters = new Map();
  const customPreviews = new Map();
  const customBox = h('section.customs', { 'aria-label': 'Text per channel' });
  const textFor = (channelId, part, index) => overrides.get(channelId)?.[index] ?? part.text;

  const head = h('h1', editing ? 'Edit post' : 'New post');
  main.append(head);
  if (editing) main.append(h('p', stateBadge(editing.state), ` on ${editing.integration.name}`));
  if (!usable.length && !editing) {
    main.append(h('p.notice', 'Connect a channel first: ', h('a', { href: '#/channels' }, 'Channels'), '.'));
    return;
  }

  // channels
  const channelBoxes = h('fieldset.channels', h('legend', 'Channels'),
    (editing ? channels.filter((c) => c.id === editing.integration.id) : usable).map((c) => {
      const box = h('input', { type: 'checkbox', value: c.id, checked: selected.has(c.id), disabled: !!editing, onchange: () => { if (box.checked) selected.add(c.id); else selected.delete(c.id); refreshChannels(); } });
      box.id = nextId('ch');
      return h('label.chip', { for: box.id }, box, avatar(c, 20), ` ${c.name} `, h('small.muted', c.identifier), c.customer ? h('small.muted', ` · ${c.customer.name}`) : null);
    }));

  // parts
  function addPart(initial = {}) {
    const part = { text: initial.text || '', media: initial.media || [], delay: initial.delay || 0, id: initial.id };
    partsState.push(part);
    const textarea = h('textarea', { rows: 5, oninput: () => { part.text = textarea.value; updateCounters(); } });
    textarea.value = part.text;
    const counters = h('div.counters', { 'aria-live': 'polite' });
    countersFor.set(part, counters);
    const previews = h('ul.media');
    const drawMedia = () => { updateCounters(); previews.replaceChildren(...part.media.map((m, i) => {
      const alt = h('input', { type: 'text', value: m.alt || '', oninput: () => { m.alt = alt.value; updatePreviews(); } });
      const isVideo = /\.(mp4|mov|webm)$/i.test(m.path);
      return h('li', isVideo ? h('video', { src: m.path, controls: true, preload: 'metadata' }) : mediaImage(m.path, m.alt || 'uploaded image'),
        field('Alt text', alt), h('button.link', { type: 'button', onclick: () => { part.media.splice(i, 1); drawMedia(); } }, 'Remove'));
    })); };
    drawMedia();
    const uploadErrors = errorBox();
    const file = h('input', { type: 'file', accept: 'image/*,video/mp4', multiple: true, onchange: async () => {
      uploadErrors.show(null);
      for (const f of file.files) {
        const form = new FormData();
        form.append('file', f);
        const status = h('li.muted', `Uploading ${f.name}…`);
        previews.append(status);
        try {
          const media = await api('POST', '/upload', form);
          part.media.push({ id: media.id, path: media.path, alt: '' });
        } catch (error) {
          uploadErrors.show(error);
        }
      }
      file.value = '';
      drawMedia();
    } });
    const index = partsState.length - 1;
    const label = index === 0 ? 'Post' : `Thread part ${index + 1}`;
    const delay = h('input', { type: 'number', min: 0, step: 1, value: part.delay, oninput: () => { part.delay = Math.max(0, Number(delay.value) || 0); } });
    const li = h('li.part', field(label, textarea), counters,
      h('div.part-tools', field(index === 0 ? 'Add images or video' : `Add images or video to part ${index + 1}`, file),
        index > 0 ? field('Delay after the part before (minutes)', delay) : null,
        index > 0 && !editing ? h('button.link', { type: 'button', onclick: () => {
          const position = partsState.indexOf(part);
          partsState.splice(position, 1);
          for (const own of overrides.values()) own.splice(position, 1);
          countersFor.delete(part); li.remove(); drawCustoms();
        } }, 'Remove part') : null),
      uploadErrors, previews);
    partsList.append(li);
    for (const own of overrides.values()) own.push(part.text);
    drawCustoms();
    return textarea;
  }

  const previewBox = h('section.previews', { 'aria-label': 'Previews' });
  const previewOf = (c) => h('article.preview', { dataset: { channel: c.id } },
    h('header', avatar(c, 24), h('strong', c.name), h('small.muted', ` ${c.identifier}`)),
    partsState.map((p, i) => h(`div.preview-part${i ? '.reply' : ''}`, h('p', textFor(c.id, p, i) || '…'),
      p.media.length ? h('div.thumbs', p.media.map((m) => (/\.(mp4|mov|webm)$/i.test(m.path) ? h('span.muted', '🎞 video') : mediaImage(m.path, m.alt || '')))) : null)));
  function updatePreviews() {
    const chosen = channels.filter((x) => selected.has(x.id));
    previewBox.replaceChildren(...(chosen.length ? [h('h2', 'Preview')] : []), ...chosen.map(previewOf));
    for (const [channelId, slot] of customPreviews) slot.replaceChildren(previewOf(channels.find((c) => c.id === channelId)));
  }

  /** A channel's counter for one text: the descriptor says how the server counts; integration-settings, the channel's own limit. */
  function counter(c, text) {
    const descriptor = known[c.identifier];
    const limit = settingsForms.get(c.id)?.spec?.maxLength || descriptor?.maxLength || 0;
    const { length, unit } = measure(descriptor?.counting, text, descriptor?.limits);
    const over = limit && length > limit;
    return h(`span.count${over ? '.over' : ''}`, { dataset: { channel: c.id } }, `${c.name}: ${length}${limit ? ` / ${limit}` : ''} ${unit}${over ? ' — too long' : ''}`);
  }

  function updateCounters() {
    updatePreviews();
    const chosen = channels.filter((x) => selected.has(x.id));
    for (const [part, box] of countersFor) {
      box.replaceChildren(...chosen.map((c) => (overrides.has(c.id)
        ? h('span.count.own', { dataset: { channel: c.id } }, `${c.name}: its own text, below`) : counter(c, part.text))));
    }
    for (const [key, box] of customCounters) {
      const [channelId, index] = key.split(' ');
      const c = channels.find((x) => x.id === channelId);
      box.replaceChildren(counter(c, textFor(channelId, partsState[index], Number(index))));
    }
  }

  /** Each selected channel's "Customize" toggle (with two channels or more) and, once on, its own editor,
   * counter and preview side by side, pre-filled with the main text. */
  function drawCustoms() {
    for (const channelId of [...overrides.keys()]) if (!selected.has(channelId)) overrides.delete(channelId);
    customCounters.clear();
    customPreviews.clear();
    const chosen = channels.filter((x) => selected.has(x.id));
    const shown = !editing && (chosen.length > 1 || overrides.size > 0);
    customBox.replaceChildren(...(shown ? [h('h2', 'Text per channel'), h('p.hint', 'Every channel posts the text above unless you customize it for that channel.')] : []),
      ...(shown ? chosen : []).map((c) => {
        const own = overrides.get(c.id);
        const toggle = h('button', { type: 'button', 'aria-pressed': String(!!own), onclick: () => {
          if (overrides.has(c.id)) overrides.delete(c.id);
          else overrides.set(c.id, partsState.map((p) => p.text));
          drawCustoms();
          if (overrides.has(c.id)) customBox.querySelector(`.custom[data-channel="${c.id}"] textarea`)?.focus();
        } }, own ? `Use the main text on ${c.name}` : `Customize for ${c.name}`);
        const editors = own ? partsState.map((part, i) => {
          const box = h('div.counters', { 'aria-live': 'polite' });
          customCounters.set(`${c.id} ${i}`, box);
          const textarea = h('textarea', { rows: 4, oninput: () => { own[i] = textarea.value; updateCounters(); } });
          textarea.value = own[i];
          return h('div', field(i === 0 ? `Post on ${c.name}` : `Thread part ${i + 1} on ${c.name}`, textarea), box);
        }) : [];
        const preview = h('div.custom-preview');
        if (own) customPreviews.set(c.id, preview);
        return h('section.custom', { dataset: { channel: c.id } }, h('div.custom-head', h('strong', c.name), h('small.muted', ` ${c.identifier}`), toggle),
          own ? h('div.custom-body', h('div.custom-editors', editors), preview) : null);
      }));
    updateCounters();
  }

  async function refreshChannels() {
    for (const channelId of selected) {
      if (settingsForms.has(channelId)) continue;
      const c = channels.find((x) => x.id === channelId);
      const spec = await providerSettings(channelId);
      const values = editing ? editing.settings : {};
      const form = typeof spec.settings === 'object' && spec.settings.properties ? schemaForm(spec.settings, values) : null;
      settingsForms.set(channelId, { spec, form, el: h('fieldset.provider-settings', h('legend', `${c.name} settings`),
        spec.rules ? h('p.hint', spec.rules) : null,
        form ? form.fields : h('p.muted', typeof spec.settings === 'string' && spec.settings ? spec.settings : 'No additional settings required'),
        form?.skipped.length ? h('p.hint', `Set through the API: ${form.skipped.join(', ')}.`) : null) });
    }
    settingsBox.replaceChildren(...[...selected].map((cid) => settingsForms.get(cid)?.el).filter(Boolean));
    drawCustoms();
  }

  const when = h('input', { type: 'datetime-local', required: true, step: 1 });
  // #/compose?date=<UTC ISO, e.g. 2030-01-15T14:00:00Z>: the calendar's empty slot, when still to come.
  const asked = Date.parse(query?.get('date') || '');
  const start = editing ? Date.parse(editing.publishDate) : asked > Date.now() ? asked : Math.ceil((Date.now() + 60000) / 3600000) * 3600000;
  when.value = toLocalInput(start);
  const slotButton = h('button', { type: 'button', onclick: async () => {
    const first = [...selected][0];
    if (!first) { errors.show(new Error('Choose a channel first: the next free slot is per channel.')); return; }
    try {
      const slot = await api('GET', `/find-slot/${first}`);
      when.value = toLocalInput(Date.parse(slot.date.endsWith('Z') ? slot.date : slot.date + 'Z'));
      errors.show(null);
    } catch (error) { errors.show(error); }
  } }, 'Next free slot');

  const buttons = editing
    ? [h('button.primary', { type: 'submit', value: 'save' }, 'Save changes'), h('a.button', { href: `#/post/${editing.id}` }, 'Cancel')]
    : [h('button.primary', { type: 'submit', value: 'schedule' }, 'Schedule'), h('button', { type: 'submit', value: 'now' }, 'Post now'), h('button', { type: 'submit', value: 'draft', formnovalidate: true }, 'Save draft')];

  // Scheduled and drafts: the calendar at their day says so and highlights them; a single post sent now
  // opens its own page, to watch it go out.
  async function create(body, action, date) {
    const created = await api('POST', '/posts', body);
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
    } }, 'Post anyway');
    errors.append(h('p', anyway));
  }

  const form = h('form.composer', { novalidate: true, onsubmit: async (event) => {
    event.preventDefault();
    const action = event.submitter?.value || 'schedule';
    errors.show(null);
    if (!selected.size) { errors.show(new Error('Choose at least one channel.')); errors.focus(); return; }
    const date = fromLocalInput(when.value);
    if (Number.isNaN(date) && action !== 'now') { errors.show(new Error('Enter a date and time.')); return; }
    const settingsOf = (cid) => ({ ...(settingsForms.get(cid)?.form?.read() || {}) });
    const value = (p, i, channelId) => ({ content: textToHtml(textFor(channelId, p, i)), image: p.media.map((m) => ({ id: m.id, path: m.path, ...(m.alt ? { alt: m.alt } : {}) })), delay: i ? p.delay : 0 });
    for (const b of form.querySelectorAll('button')) b.disabled = true;
    let body = null;
    try {
      if (editing) {
        const edit = (p, i) => { const { content, image } = value(p, i); return { content, image }; };
        await api('PUT', `/posts/${editing.id}`, { ...edit(partsState[0], 0), date: new Date(date).toISOString(), settings: settingsOf(editing.integration.id) });
        for (const [i, part] of partsState.entries()) if (i && part.id) await api('PUT', `/posts/${part.id}`, edit(part, i));
        go(`#/post/${editing.id}`);
        return;
      }
      body = {
        type: action, date: new Date(action === 'now' ? Date.now() : date).toISOString(), shortLink: false, tags: [],
        posts: channels.filter((c) => selected.has(c.id)).map((c) => ({ integration: { id: c.id }, value: partsState.map((p, i) => value(p, i, c.id)), settings: { __type: c.identifier, ...settingsOf(c.id) } })),
      };
      await create(body, action, date);
    } catch (error) {
      errors.show(error);
      offerDuplicate(error, body, action, date);
      errors.focus();
    } finally {
      for (const b of form.querySelectorAll('button')) b.disabled = false;
    }
  } },
  channelBoxes, partsList,
  editing ? null : h('button', { type: 'button', onclick: () => addPart().focus() }, '+ Add thread part'),
  customBox, settingsBox,
  h('div.when', field(`Date and time (${zone()})`, when, `Read in the organization's timezone, ${zone()}.`), slotButton),
  errors, h('div.actions', buttons));
  main.append(h('div.compose-layout', form, previewBox));

  if (editing) {
    for (const part of [editing, ...(editing.thread || [])]) addPart({ id: part.id, text: htmlToText(part.content), delay: part.delay || 0, media: (part.image || []).map((m) => ({ id: m.id, path: m.path, alt: m.alt || '' })) });
  } else addPart();
  refreshChannels();
}
