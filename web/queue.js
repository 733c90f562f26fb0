// Queue: one channel's next posting slots, day by day in the organization's timezone. Each slot shows its post
// (text, channel picture, a link to the post) or "Empty slot", or where an evergreen post would go; a post with
// a fixed date stays where it is. Queued posts move by dragging their handle (mouse, pen or touch), by the arrow
// keys on that handle, by Move up / Move down / Move to top, or all at once with Shuffle. Switches: pause,
// re-flow after a delete, evergreen and its cooldown. The weekly posting schedule editor lives here too
// (scheduleDialog), opened from this page and from a channel's menu on the Channels page.
// Rules: every reorder sends the channel's whole queue in its new order (POST /queue/reorder lists exactly its
// queued posts), read afresh over the longest span the API answers, so posts beyond the days shown keep their
// place. Times through util.js (the organization's zone). Address: #/queue?channel=<id> (else the first channel).
import { h, t, tn, put, api, avatar, errorBox, field, go, mayDo, htmlToText, parts, fmtDay, fmtTime, fmtDateTime, isoDay, lang, nextId, session } from './util.js';
import { openDialog } from './widgets.js';

const SHOWN_DAYS = 14;
const LONGEST_SPAN = 90;  // (GET /queue's days: 1..90; a queue full for 90 days takes no more posts)
const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
/** A weekday's name in the person's language (1 Jan 2024 was a Monday). */
const weekday = (index, style = 'long') => new Intl.DateTimeFormat(lang(), { weekday: style, timeZone: 'UTC' }).format(Date.UTC(2024, 0, 1 + index));
const dayKey = (ms) => { const p = parts(ms); return isoDay(p.y, p.m, p.d); };
const snippet = (post) => { const text = htmlToText(post.content).replace(/\s+/g, ' ').trim(); return text.length > 140 ? `${text.slice(0, 139)}…` : text || t('(no text)'); };
/** The ids of the queued posts of a GET /queue answer, in their order (each root post once). */
const queuedIds = (answer) => [...new Set(answer.slots.filter((slot) => slot.post?.inQueue).map((slot) => slot.post.id))];

export async function queuePage(main, { query }) {
  const channels = (await api('GET', '/integrations')).filter((c) => !c.disabled);
  if (!channels.length) { put(main, h('h1', t('Queue')), h('p.notice', t('Connect a channel first:'), ' ', h('a', { href: '#/channels' }, t('Channels')), '.')); return; }
  const channel = channels.find((c) => c.id === query?.get('channel')) || channels[0];
  const editor = mayDo('editor');
  let days = SHOWN_DAYS;
  let queue = null;
  let undo = null;  // the order before the last reorder, for Undo
  let focusAfter = null;  // {id, control}: where the keyboard was before a redraw
  const errors = errorBox();  // what a reorder or a load met, above the slots it is about
  const said = h('p.queue-said', { role: 'status' });
  const dayList = h('div.queue-days');
  const paused = h('div.queue-paused', { role: 'status' });
  const picker = h('select', { onchange: () => go(`#/queue?channel=${encodeURIComponent(picker.value)}`) },
    channels.map((c) => h('option', { value: c.id, selected: c.id === channel.id }, c.name)));
  const more = h('button', { type: 'button', onclick: () => { days = Math.min(LONGEST_SPAN, days + SHOWN_DAYS); load(); } }, t('Show more days'));
  const shuffle = editor ? h('button', { type: 'button', onclick: () => reorder((order) => shuffled(order), t('Shuffled: the queued posts are in a new order.')) }, t('Shuffle')) : null;

  put(main, h('div.page-head.queue-head',
    h('h1', avatar(channel, 32), ' ', t('Queue of {name}', { name: channel.name })),
    channels.length > 1 ? field(t('Channel'), picker) : null,
    editor ? h('button', { type: 'button', onclick: () => scheduleDialog(channel, load) }, t('Weekly posting schedule')) : null,
    shuffle));
  const settings = h('details.card.queue-settings', { open: innerWidth > 700 });
  put(main, paused, justQueued(channel), h('div.queue-layout', settings, h('div.queue-list', errors, said, dayList, more)));

  async function load() {
    errors.show(null);
    try { queue = await api('GET', `/queue?integration=${encodeURIComponent(channel.id)}&days=${days}`); } catch (error) { errors.show(error); return; }
    more.hidden = days >= LONGEST_SPAN;
    drawPaused();
    showSettings();
    drawSlots();
  }

  function drawPaused() {
    paused.replaceChildren();
    if (!queue.paused) return;
    put(paused, h('strong', t('This queue is paused.')), ' ', t('Its posts keep their order, but none goes out. When you resume it, they take the next slots from then on, in the same order.'),
      editor ? [' ', h('button', { type: 'button', onclick: () => change({ paused: false }, null) }, t('Resume the queue'))] : null);
  }

  // --- the switches: each saves at once and shows its refusal beside it --------------------------------
  const switches = {};
  const switchRow = (key, label, hint) => {
    const box = switches[key] = h('input', { type: 'checkbox', role: 'switch', disabled: !editor, id: nextId('q') });
    const problem = errorBox();
    box.addEventListener('change', () => change({ [key]: box.checked }, problem));
    return h('div.field.check.queue-switch', box, h('label', { for: box.id }, label), h('small.hint', hint), problem);
  };
  const cooldown = h('input', { type: 'number', min: 1, max: 3650, step: 1, disabled: !editor });
  const cooldownProblem = errorBox();
  cooldown.addEventListener('change', () => {
    const value = Number(cooldown.value);
    if (!Number.isInteger(value) || value < 1 || value > 3650) { cooldownProblem.show(new Error(t('Enter a whole number of days from 1 to 3650.'))); cooldown.focus(); return; }
    change({ evergreenCooldownDays: value }, cooldownProblem);
  });
  put(settings, h('summary', t('Queue settings')), h('div.queue-switches',
    switchRow('paused', t('Pause the queue'), t('Its posts keep their order; its slots are skipped until you switch this off.')),
    switchRow('reflow', t('Move later posts up when one is deleted'), t('Also when one is posted now: the posts after it take the free slot.')),
    switchRow('evergreen', t('Evergreen'), t('Empty slots take an evergreen post of this channel again, the one that went out longest ago.')),
    h('div.queue-cooldown', field(t('Days before an evergreen post goes out again'), cooldown, t('From 1 to 3650 days (30 unless you change it).')), cooldownProblem)));
  function showSettings() {
    for (const [key, box] of Object.entries(switches)) box.checked = !!queue[key];
    cooldown.value = queue.evergreenCooldownDays ?? 30;
  }

  /** Saves queue settings; a refusal shows in `problem` (beside its control) and the controls show what is stored. */
  async function change(body, problem) {
    problem?.show(null);
    said.textContent = '';
    try {
      await api('PUT', `/integrations/${encodeURIComponent(channel.id)}/queue`, body);
      await load();
      said.textContent = t('Saved.');
    } catch (error) {
      showSettings();
      (problem || errors).show(error);
    }
  }

  // --- the slots, day by day -----------------------------------------------------------------------
  function drawSlots() {
    const byDay = new Map();
    const start = Date.now();
    for (let i = 0; i < days; i++) byDay.set(dayKey(start + i * 86400000), []);  // (days without a slot are said too)
    for (const slot of queue.slots) {
      const key = dayKey(Date.parse(slot.date));
      if (!byDay.has(key)) byDay.set(key, []);
      byDay.get(key).push(slot);
    }
    const today = dayKey(start);
    const tomorrow = dayKey(start + 86400000);
    const order = queuedIds(queue);
    dayList.replaceChildren(...[...byDay].map(([key, slots]) => {
      const noon = Date.parse(`${key}T12:00:00Z`);
      const name = fmtDay(noon, { weekday: 'long', day: 'numeric', month: 'long', timeZone: 'UTC' });
      const title = key === today ? t('Today, {day}', { day: name }) : key === tomorrow ? t('Tomorrow, {day}', { day: name }) : name;
      const headingId = nextId('day');
      return h('section.queue-day', { 'aria-labelledby': headingId, dataset: { day: key } },
        h('h2', { id: headingId }, title),
        slots.length ? h('ol.slots', slots.map((slot) => slotItem(slot, order))) : h('p.muted.no-slot', t('No posting time on this day.')));
    }));
    if (focusAfter) {
      const { id, control } = focusAfter;
      focusAfter = null;
      const item = dayList.querySelector(`li.slot[data-post="${CSS.escape(id)}"]`);
      const target = item?.querySelector(`[data-control="${control}"]:not([disabled])`) || item?.querySelector('[data-control="handle"]');
      target?.focus();
      item?.scrollIntoView({ block: 'nearest' });
    }
  }

  function slotItem(slot, order) {
    const at = Date.parse(slot.date);
    const post = slot.post;
    const time = h('time.slot-time', { datetime: slot.date }, fmtTime(at));
    if (!post) {
      return h(`li.slot.empty${slot.evergreen ? '.evergreen-slot' : ''}`, { dataset: { date: slot.date, drop: '' } }, time,
        slot.evergreen ? h('span.slot-body.evergreen-mark', h('span', { 'aria-hidden': 'true' }, '♻ '), t('An evergreen post would go here'))
          : h('span.slot-body.muted', t('Empty slot')));
    }
    const movable = post.inQueue && editor;
    const place = order.indexOf(post.id);
    const text = snippet(post);
    const added = session.justQueued?.some((item) => item.postId === post.id);
    const body = h('div.slot-body',
      avatar(channel, 24),
      h('a.slot-text', { href: `#/post/${encodeURIComponent(post.id)}` }, text),
      h('span.slot-marks',
        post.inQueue ? null : h('span.badge.fixed', { title: t('Scheduled for this date: the queue fills around it') }, t('Fixed date')),
        post.evergreen ? h('span.badge.evergreen', t('Evergreen')) : null,
        post.state === 'DRAFT' ? h('span.badge.st-DRAFT', t('Draft')) : null));
    const tools = movable ? h('div.slot-tools',
      h('button.tool.handle', { type: 'button', dataset: { control: 'handle' }, 'aria-label': t('Move “{text}”: drag, or press the up and down arrow keys', { text: text.slice(0, 40) }),
        title: t('Drag to move, or use the arrow keys'), onpointerdown: (event) => drag(event, post.id),
        onkeydown: (event) => {
          const to = { ArrowUp: place - 1, ArrowDown: place + 1, Home: 0, End: Infinity }[event.key];
          if (to === undefined) return;
          event.preventDefault();
          if (to >= 0 && to !== place) move(post.id, to, 'handle');  // (unchanged: nothing sent)
        } }, h('span', { 'aria-hidden': 'true' }, '⠿')),
      h('button.tool', { type: 'button', dataset: { control: 'up' }, disabled: place <= 0, 'aria-label': t('Move up'), title: t('Move up'), onclick: () => move(post.id, place - 1, 'up') }, '↑'),
      h('button.tool', { type: 'button', dataset: { control: 'down' }, disabled: place >= order.length - 1, 'aria-label': t('Move down'), title: t('Move down'), onclick: () => move(post.id, place + 1, 'down') }, '↓'),
      h('button.tool', { type: 'button', dataset: { control: 'top' }, disabled: place <= 0, onclick: () => move(post.id, 0, 'top') }, t('Move to top'))) : null;
    return h(`li.slot.filled${post.inQueue ? '' : '.fixed'}${added ? '.just-added' : ''}`,
      { dataset: { date: slot.date, post: post.id, ...(post.inQueue ? { drop: '' } : {}) } }, time, body, tools);
  }

  // --- reordering: always the whole queue, read afresh -------------------------------------------------
  /** Moves post `id` to place `to` of the queue (the posts shown are the first of the whole queue, in order). */
  function move(id, to, control) {
    focusAfter = { id, control };
    return reorder((order) => {
      const rest = order.filter((x) => x !== id);
      rest.splice(Math.max(0, Math.min(to, rest.length)), 0, id);
      return rest;
    }, null, id);
  }

  /** Sends `change(order)` of the channel's whole queue; says where `movedId` now goes out (or `message`). */
  async function reorder(change, message, movedId) {
    errors.show(null);
    said.textContent = '';
    try {
      const everything = queuedIds(await api('GET', `/queue?integration=${encodeURIComponent(channel.id)}&days=${LONGEST_SPAN}`));
      const order = change(everything);
      if (order.join() === everything.join()) { focusAfter = null; return; }
      await api('POST', '/queue/reorder', { integration: channel.id, postIds: order });
      undo = everything;
      await load();
      const slot = movedId ? queue.slots.find((s) => s.post?.id === movedId) : null;
      said.replaceChildren(slot ? t('Moved: it now goes out {when}.', { when: fmtDateTime(Date.parse(slot.date)) }) : message || t('Saved.'), ' ',
        h('button.link', { type: 'button', onclick: () => { const before = undo; undo = null; reorder(() => before, t('Back as it was.')); } }, t('Undo')));
    } catch (error) {
      focusAfter = null;
      if (error.status !== 400 && error.status !== 409) { errors.show(error); return; }
      await load();  // (the queue changed meanwhile: a post was added, published or deleted)
      errors.show(new Error(t('The queue changed meanwhile (a post was added, published or deleted): here it is as it is now. Make your change again.')));
    }
  }

  /** Pointer dragging by a post's handle: the post follows the pointer; dropped on another queued post it takes
   * that one's place, on an empty slot it goes where that slot is among the queued posts. */
  function drag(event, id) {
    if (event.button !== 0) return;
    event.preventDefault();
    const handle = event.currentTarget;
    const item = handle.closest('li.slot');
    const startY = event.clientY;
    let target = null;
    handle.setPointerCapture?.(event.pointerId);
    item.classList.add('dragging');
    const over = (e) => {
      item.style.transform = `translateY(${e.clientY - startY}px)`;
      item.style.pointerEvents = 'none';  // (the slot under the pointer, not the dragged one)
      const under = document.elementFromPoint(e.clientX, e.clientY)?.closest('li.slot[data-drop]');
      const next = under && under !== item ? under : null;
      if (next !== target) { target?.classList.remove('drop-here'); target = next; target?.classList.add('drop-here'); }
      if (e.clientY < 60) scrollBy(0, -12); else if (e.clientY > innerHeight - 60) scrollBy(0, 12);
    };
    const end = (e) => {
      handle.removeEventListener('pointermove', over);
      handle.removeEventListener('pointerup', end);
      handle.removeEventListener('pointercancel', end);
      item.classList.remove('dragging');
      item.style.transform = '';
      item.style.pointerEvents = '';
      target?.classList.remove('drop-here');
      if (e.type !== 'pointerup' || !target) return;
      // (a post's own place: it takes that place; an empty slot's: after the queued posts before that slot)
      const slots = [...dayList.querySelectorAll('li.slot')];
      const queued = queuedIds(queue);
      const place = target.dataset.post ? queued.indexOf(target.dataset.post)
        : slots.slice(0, slots.indexOf(target)).filter((li) => li.dataset.post && li.dataset.post !== id && queued.includes(li.dataset.post)).length;
      move(id, place, 'handle');
    };
    handle.addEventListener('pointermove', over);
    handle.addEventListener('pointerup', end);
    handle.addEventListener('pointercancel', end);
  }

  await load();
  if (session.justQueued) setTimeout(() => { session.justQueued = null; });  // (shown once)
}

/** A new order of `order`, never the same one when there are two posts or more. */
function shuffled(order) {
  if (order.length < 2) return order;
  for (;;) {
    const next = [...order];
    for (let i = next.length - 1; i > 0; i--) { const j = Math.floor(Math.random() * (i + 1)); [next[i], next[j]] = [next[j], next[i]]; }
    if (next.join() !== order.join()) return next;
  }
}

/** What the composer's "Add to queue" just did: the slot each channel's post took (session.justQueued). */
function justQueued(channel) {
  const items = session.justQueued || [];
  if (!items.length) return null;
  return h('div.notice.queued-notice', { role: 'status' }, h('p', tn('Added to the queue of {n} channel:', 'Added to the queue of {n} channels:', items.length)),
    h('ul', items.map((item) => h('li', h('strong', item.name), ' — ', item.date ? t('goes out {when}', { when: fmtDateTime(Date.parse(item.date)) }) : t('in the queue'), ' ',
      item.channel !== channel.id ? [h('a', { href: `#/queue?channel=${encodeURIComponent(item.channel)}` }, t('Open its queue')), ' · '] : null,
      h('a', { href: `#/post/${encodeURIComponent(item.postId)}` }, t('Open the post'))))));
}

/** After POST /posts with type "queue": reads where each post went, then opens the first channel's queue. */
export async function showQueued(created, channelsById) {
  session.justQueued = await Promise.all(created.map((item) => api('GET', `/posts/${encodeURIComponent(item.postId)}`)
    .then((post) => post, () => null).then((post) => ({ postId: item.postId, channel: item.integration, date: post?.publishDate || null,
      name: channelsById.get(item.integration)?.name || post?.integration?.name || t('Unknown channel') }))));
  go(`#/queue?channel=${encodeURIComponent(created[0]?.integration || '')}`);
}

// --- the weekly posting schedule ------------------------------------------------------------------------

/** The posting schedule of `channel` by weekday: times per day (add, remove), "Copy Monday to every day", the
 * channel's best times as chips that add a time (when the API has any); `saved()` after it is stored. */
export async function scheduleDialog(channel, saved) {
  const id = encodeURIComponent(channel.id);
  const [schedule, best] = await Promise.all([api('GET', `/integrations/${id}/schedule`).catch((error) => ({ failed: error })),
    api('GET', `/integrations/${id}/best-times`).catch(() => null)]);  // (no best times yet, or no such API: none shown)
  const lists = {};
  const problems = {};
  const timeItem = (day, value) => {
    const input = h('input', { type: 'time', value, required: true, 'aria-label': t('Posting time on {day}', { day: weekday(DAYS.indexOf(day)) }) });
    const item = h('li', input, h('button.link', { type: 'button', 'aria-label': t('Remove {time} on {day}', { time: value || t('this time'), day: weekday(DAYS.indexOf(day)) }), onclick: () => item.remove() }, '✕'));
    return item;
  };
  const times = (day) => [...lists[day].querySelectorAll('input')].map((input) => input.value);
  const addTime = (day, value, focus) => {
    if (value && times(day).includes(value)) return;
    const item = timeItem(day, value);
    lists[day].append(item);
    if (focus) item.querySelector('input').focus();
  };
  const rows = DAYS.map((day, index) => {
    lists[day] = h('ul.schedule-times', { 'aria-label': weekday(index) });
    problems[day] = errorBox();
    for (const value of schedule[day] || []) addTime(day, value);
    return h('div.schedule-day', { dataset: { day } },
      h('span.schedule-day-name', weekday(index)), lists[day],
      h('button.tool', { type: 'button', 'aria-label': t('Add a time on {day}', { day: weekday(index) }), onclick: () => addTime(day, '12:00', true) }, t('+ Add a time')),
      problems[day]);
  });
  const copy = h('button', { type: 'button', onclick: () => {
    const monday = times('monday').filter(Boolean);
    for (const day of DAYS.slice(1)) { lists[day].replaceChildren(); for (const value of monday) addTime(day, value); }
  } }, t('Copy Monday to every day'));
  const chips = (best?.times || []).filter((slot) => DAYS.includes(slot.day) && /^\d\d:\d\d$/.test(slot.time || ''));
  const bestBox = chips.length ? h('div.best-times', h('p.hint', t('Best times for this channel, from how its posts did:')),
    h('div.best-chips', chips.map((slot) => h('button.tool.best-chip', { type: 'button', onclick: (event) => { addTime(slot.day, slot.time); event.currentTarget.disabled = true; } },
      `+ ${weekday(DAYS.indexOf(slot.day), 'short')} ${slot.time}`)))) : null;
  const errors = errorBox();
  if (schedule.failed) errors.show(schedule.failed);
  const form = h('form.schedule-form', { onsubmit: async (event) => {
    event.preventDefault();
    errors.show(null);
    const body = {};
    let incomplete = null;
    for (const day of DAYS) {
      problems[day].show(null);
      const values = times(day);
      if (values.some((value) => !value)) { problems[day].show(new Error(t('Enter the hour and the minutes of each time, or remove it.'))); incomplete ||= lists[day]; }
      body[day] = [...new Set(values.filter(Boolean))].sort();
    }
    if (incomplete) { incomplete.querySelector('input:invalid, input')?.focus(); return; }
    try {
      await api('PUT', `/integrations/${id}/schedule`, body);
      dialog.close();
      saved?.();
    } catch (error) {
      const lines = error.body?.message ? [].concat(error.body.message).map(String) : [];
      const day = DAYS.find((name) => lines.some((line) => line.toLowerCase().includes(name)));
      (day ? problems[day] : errors).show(error);
    }
  } },
  h('p.hint', t('The times a post added to the queue goes out, day by day, in the organization\'s timezone.')),
  schedule.weekly === false ? h('p.hint.same-every-day', t('This channel posts at the same times every day (shown on each day below). Saving keeps a list for each weekday.')) : null,
  bestBox, rows, errors,
  h('div.actions', h('button.primary', { type: 'submit' }, t('Save schedule')), copy, h('button', { type: 'button', onclick: () => dialog.close() }, t('Cancel'))));
  const dialog = openDialog(t('Posting schedule of {name}', { name: channel.name }), form);
  dialog.classList.add('wide');
  return dialog;
}
