// Calendar: day, week, month and list views of the organization's posts, in its timezone.
// Rules:
// - One card per post made for several channels: the posts of one `multiChannelGroup` at one time (each
//   channel's thread has its own `group`, as in Postiz); posts from before multiChannelGroup, by their same
//   text at the same time. The card shows each channel's avatar and state.
// - Day and week have a linear time axis (HOUR_PX a hour, a card's top is its minute); overlapping cards sit
//   side by side, beyond SIDE_BY_SIDE a "+N more" lists the slot. A month cell holds MONTH_CARDS cards at most.
// - A render builds the period's DOM once and reads no layout per post (500 posts in a month stay fast).
// - Drag a queued post or draft to another slot (undo for UNDO_MS); hovering Previous/Next while dragging
//   switches the period. An empty future slot opens the composer at its time (#/compose?date=<UTC ISO>).
// - Every text through t(); every time through util.js's zone helpers, never the browser's zone.
import {
  h, put, api, session, errorBox, field, parts, zoned, fmtTime, fmtDay, fmtDateTime, isoDay, htmlToText,
  stateBadge, stateLabel, STATES, zone, avatar, mediaImage, go, t, tn, providers, mayDo,
} from './util.js';

const HOUR_MS = 3600000;
const HOUR_PX = 48;
const SIDE_BY_SIDE = 3;
const MONTH_CARDS = 3;
const PAGE_SIZE = 50;
const SWITCH_AFTER_MS = 700;
const UNDO_MS = 10000;
const VIEWS = ['day', 'week', 'month', 'list'];
const MOVABLE = new Set(['QUEUE', 'DRAFT']);
// The state a card of several channels shows first: what needs a look before what went well.
const STATE_RANK = ['ERROR', 'PUBLISHING', 'QUEUE', 'DRAFT', 'PUBLISHED'];

const civil = (y, m, d) => { const u = new Date(Date.UTC(y, m - 1, d)); return { y: u.getUTCFullYear(), m: u.getUTCMonth() + 1, d: u.getUTCDate(), wd: (u.getUTCDay() + 6) % 7 }; };
const addDays = (c, n) => civil(c.y, c.m, c.d + n);
const dayKey = (c) => isoDay(c.y, c.m, c.d);
const parseDay = (text) => { const m = /^(\d{4})-(\d\d)-(\d\d)$/.exec(text || ''); return m ? civil(+m[1], +m[2], +m[3]) : null; };
const noon = (c) => zoned(c.y, c.m, c.d, 12);
const viewName = (view) => ({ day: t('Day'), week: t('Week'), month: t('Month'), list: t('List') }[view]);
const isPhone = () => window.matchMedia('(max-width: 640px)').matches;
/** The composer's address for a new post at an instant: `date` in UTC, to the minute. */
const composeAt = (ms) => `#/compose?date=${new Date(ms).toISOString().slice(0, 16)}:00Z`;

function range(view, anchor) {
  if (view === 'day') return { start: anchor, days: 1 };
  if (view === 'week') return { start: addDays(anchor, -anchor.wd), days: 7 };
  if (view === 'month') { const first = civil(anchor.y, anchor.m, 1); return { start: addDays(first, -first.wd), days: 42 }; }
  return { start: anchor, days: 30 };
}

/** Cards: the posts of one multi-channel group (else with the same text and repetition) at the same time,
 * in time order (posts come sorted). */
function groupCards(posts) {
  const byKey = new Map();
  for (const post of posts) {
    const same = `${post.at}|${post.multiChannelGroup || `${post.intervalInDays || ''}|${post.content}`}`;
    let card = byKey.get(same);
    if (!card) byKey.set(same, (card = { key: post.id, at: post.at, posts: [] }));  // (key: the card's name in the page)
    card.posts.push(post);
  }
  for (const card of byKey.values()) {
    const states = card.posts.map((p) => p.state);
    card.state = STATE_RANK.find((s) => states.includes(s)) || states[0];
    card.movable = mayDo('editor') && card.posts.every((p) => MOVABLE.has(p.state) && !p.actualDate);  // (an editor's move)
    const tags = new Map();
    for (const p of card.posts) for (const { tag } of p.tags || []) if (tag?.name) tags.set(tag.name, tag);
    card.tags = [...tags.values()];
  }
  return [...byKey.values()];
}

/** Columns for overlapping cards of one day: each card holds an hour of the axis; a cluster of cards that
 * overlap shares its column count. -> [{card, col, cols}] */
function placeCards(cards) {
  const placed = [];
  let cluster = [], ends = [], clusterEnd = -Infinity;
  const close = () => { for (const p of cluster) p.cols = ends.length; cluster = []; ends = []; };
  for (const card of cards) {
    if (card.at >= clusterEnd) close();
    let col = ends.findIndex((end) => end <= card.at);
    if (col < 0) col = ends.push(0) - 1;
    ends[col] = card.at + HOUR_MS;
    clusterEnd = Math.max(clusterEnd, card.at + HOUR_MS);
    const place = { card, col, cols: 1 };
    cluster.push(place);
    placed.push(place);
  }
  close();
  return placed;
}

// A card's first words: tags dropped and the common entities decoded, without a DOMParser per card (the
// text only ever becomes a text node; the preview shows the whole text through htmlToText).
const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", nbsp: ' ' };
const snippet = (html) => String(html || '').slice(0, 600).replace(/<[^>]*>/g, ' ').replace(/&(amp|lt|gt|quot|#39|nbsp);/g, (_, name) => ENTITIES[name])
  .replace(/\s+/g, ' ').trim().slice(0, 140);
let platforms = {};  // provider identifier -> its descriptor ({name}), for the avatars' titles
/** "Name (Platform)": a channel as a card's avatar names it. */
const channelLabel = (channel) => { const platform = platforms[channel?.providerIdentifier]?.name; return `${channel?.name || ''}${platform ? ` (${platform})` : ''}`; };
const channelNames = (card) => card.posts.map((p) => p.integration?.name || '').filter(Boolean).join(', ');
const safeColor = (color) => (/^#[0-9a-f]{6}$/i.test(color || '') ? color : null);

function tagDots(tags) {
  if (!tags.length) return null;
  return h('span.tag-dots', { title: tags.map((tag) => tag.name).join(', ') },
    tags.map((tag) => { const dot = h('span.tag-dot', { 'aria-hidden': 'true' }); dot.style.background = safeColor(tag.color) || 'var(--muted)'; return dot; }),
    h('span.sr-state', t('Tags: {tags}', { tags: tags.map((tag) => tag.name).join(', ') })));
}

/** What a card says of its channels' states to a screen reader: one state, or each channel's. */
function statesText(card) {
  const states = new Set(card.posts.map((p) => p.state));
  if (states.size === 1) return `${stateLabel(card.state)}: `;
  return `${card.posts.map((p) => `${p.integration?.name || ''} ${stateLabel(p.state)}`).join(', ')}: `;
}

/** A card: the link to the post (drag handle), and its actions shown on hover or focus. */
function cardElement(card, made) {
  const first = card.posts[0];
  const names = channelNames(card);
  const text = snippet(first.content) || t('(no text)');
  const link = h(`a.post.st-${card.state}${made ? '.just-made' : ''}`, {
    href: `#/post/${first.id}`, draggable: card.movable ? 'true' : 'false', dataset: { id: first.id, state: card.state },
    title: `${stateLabel(card.state)} · ${fmtDateTime(card.at)} · ${names}`,
  },
  h('span.line', h('time', { datetime: new Date(card.at).toISOString() }, fmtTime(card.at)),
    h('span.avs', { 'aria-hidden': 'true' }, card.posts.map((p) => h('span.av', { title: `${channelLabel(p.integration)}: ${stateLabel(p.state)}` },
      avatar(p.integration, 20), h(`span.dot.st-${p.state}`)))),
    tagDots(card.tags)),
  h('span.sr-state', statesText(card)), h('b.names', names), h('span.snippet', text));
  const published = card.posts.find((p) => p.state === 'PUBLISHED');
  const act = (name, label) => h('button.act', { type: 'button', dataset: { act: name } }, label);
  return h('div.cal-card', { dataset: { key: card.key } }, link,
    h('span.acts', act('preview', t('Preview')), act('duplicate', t('Duplicate')),
      published ? h('a.act', { href: `#/post/${published.id}` }, t('Statistics')) : null,
      act('delete', t('Delete'))));
}

export async function calendarPage(main, { query }) {
  const today = (() => { const p = parts(Date.now()); return civil(p.y, p.m, p.d); })();
  const explicitView = VIEWS.includes(query.get('view'));
  let view = explicitView ? query.get('view') : (isPhone() ? 'list' : localStorage.getItem('rustiz.view'));
  if (!VIEWS.includes(view)) view = 'week';
  let anchor = parseDay(query.get('date')) || today;
  const filter = { channel: query.get('channel') || '', group: query.get('group') || '', state: query.get('state') || '', tag: query.get('tag') || '' };
  let listPage = 0;
  let ownAddress = location.hash;  // the address this calendar was drawn for, then the one it last wrote
  const [channels, groups, tags, known] = await Promise.all([api('GET', '/integrations'), api('GET', '/groups'),
    api('GET', '/tags').then((answer) => answer.tags || [], () => []), providers().catch(() => ({}))]);
  platforms = known;
  let cards = [];
  let cardsByKey = new Map();
  let timer = null;
  let loads = 0;  // the latest load: an earlier answer arriving after it is dropped
  let dragging = null;
  const justMade = session.justMade;  // shown once: a reload or another visit is an ordinary calendar
  session.justMade = null;
  const made = new Set(justMade?.ids || []);
  const confirmation = h('p.notice.made', { role: 'status', hidden: true });
  const toast = h('div.cal-toast', { role: 'status' });

  const errors = errorBox();
  const title = h('h1.cal-title', { 'aria-live': 'polite' });
  const body = h('div.cal-body');
  const viewButtons = VIEWS.map((v) => h('button', { type: 'button', dataset: { view: v }, 'aria-pressed': String(v === view), onclick: () => {
    view = v;
    listPage = 0;
    localStorage.setItem('rustiz.view', v);
    sync();
  } }, viewName(v)));
  const step = (sign) => {
    if (view === 'month') anchor = civil(anchor.y, anchor.m + sign, 1);
    else anchor = addDays(anchor, sign * ({ day: 1, week: 7 }[view] || 30));
    listPage = 0;
    sync();
  };
  const previous = h('button.prev', { type: 'button', onclick: () => step(-1), 'aria-label': t('Previous') }, '‹');
  const next = h('button.next', { type: 'button', onclick: () => step(1), 'aria-label': t('Next') }, '›');
  for (const [button, sign] of [[previous, -1], [next, 1]]) switchWhileDragging(button, sign);

  const select = (key, allLabel, options) => h('select', { onchange: (event) => { filter[key] = event.target.value; listPage = 0; sync(); } },
    h('option', { value: '' }, allLabel), options.map(([value, label]) => h('option', { value, selected: value === filter[key] }, label)));
  const filters = h('div.filters',
    field(t('Channel'), select('channel', t('All channels'), channels.map((c) => [c.id, c.name]))),
    groups.length ? field(t('Group'), select('group', t('All groups'), groups.map((g) => [g.id, g.name]))) : null,
    field(t('State'), select('state', t('All states'), Object.keys(STATES).map((s) => [s, stateLabel(s)]))),
    tags.length ? field(t('Tag'), select('tag', t('All tags'), tags.map((tag) => [tag.name, tag.name]))) : null);
  const filtersButton = h('button.filters-toggle', { type: 'button', 'aria-expanded': 'false', onclick: () => {
    const open = filtersButton.getAttribute('aria-expanded') !== 'true';
    filtersButton.setAttribute('aria-expanded', String(open));
    filters.classList.toggle('open', open);
  } }, t('Filters'));

  put(main,
    h('div.cal-bar',
      h('div.group', { role: 'group', 'aria-label': t('View') }, viewButtons),
      h('div.group', { role: 'group', 'aria-label': t('Dates') }, previous,
        h('button', { type: 'button', onclick: () => goToday() }, t('Today')), next),
      title, filtersButton, h('a.button.primary', { href: '#/compose' }, t('New post')), filters),
    h('p.legend', Object.keys(STATES).map((state) => stateBadge(state)),
      h('span.muted', ' ', t('Drag a queued post or draft to another slot to reschedule it; click an empty slot to write a post at that time. Times in {zone}.', { zone: zone() }))),
    errors, confirmation, body, toast);
  if (!channels.length) body.before(h('p.notice', t('No channels yet.'), ' ', h('a', { href: '#/channels' }, t('Connect a channel')), ' ', t('to start posting.')));

  function goToday() { anchor = today; listPage = 0; sync(); }

  /** A listener on the document or window for as long as this calendar is on screen. */
  const whileShown = (target, type, listener) => {
    const once = (event) => { if (main.isConnected) listener(event); else target.removeEventListener(type, once); };
    target.addEventListener(type, once);
  };
  // Arrows move a period, the shell's `t` goes to today.
  whileShown(document, 'keydown', (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
    if (event.target.closest?.('input, textarea, select, [contenteditable], dialog')) return;
    if (event.key === 'ArrowLeft' || event.key === 'ArrowRight') { event.preventDefault(); step(event.key === 'ArrowLeft' ? -1 : 1); }
  });
  whileShown(window, 'rustiz:today', goToday);

  /** While a card is dragged, resting on Previous/Next switches the period; the drop still lands. */
  function switchWhileDragging(button, sign) {
    let wait = null;
    button.addEventListener('dragover', (event) => {
      if (!dragging) return;
      event.preventDefault();
      wait ||= setTimeout(() => { wait = null; step(sign); }, SWITCH_AFTER_MS);
    });
    button.addEventListener('dragleave', () => { clearTimeout(wait); wait = null; });
    button.addEventListener('drop', (event) => { event.preventDefault(); clearTimeout(wait); wait = null; });
  }

  function sync() {
    // Only while the address is still this calendar's own: an address followed since (another page, or
    // another period or view of the calendar) may not have been drawn yet, and rewriting it would undo it.
    if (!main.isConnected || location.hash !== ownAddress) return;
    const q = new URLSearchParams({ view, date: dayKey(anchor) });
    for (const [key, value] of Object.entries(filter)) if (value) q.set(key, value);
    history.replaceState(null, '', `#/calendar?${q}`);
    ownAddress = location.hash;
    for (const b of viewButtons) b.setAttribute('aria-pressed', String(b.dataset.view === view));
    load();
  }

  /** Fetches the period's posts and draws them; a poll (`quiet`) does not redraw under a drag or a dialog. */
  async function load(quiet = false) {
    const { start, days } = range(view, anchor);
    const end = addDays(start, days);
    const from = zoned(start.y, start.m, start.d), to = zoned(end.y, end.m, end.d) - 1000;
    const q = new URLSearchParams({ startDate: new Date(from).toISOString(), endDate: new Date(to).toISOString() });
    if (filter.group) q.set('customer', filter.group);
    if (filter.tag) q.set('tag', filter.tag);
    let posts = [];
    const token = ++loads;
    try {
      const answer = await api('GET', `/posts?${q}`);
      if (token !== loads) return;
      posts = answer.posts.filter((p) => (!filter.channel || p.integration?.id === filter.channel) && (!filter.state || p.state === filter.state)
          && (!filter.tag || (p.tags || []).some(({ tag }) => tag?.name === filter.tag || tag?.id === filter.tag)))
        .map((p) => ({ ...p, at: Date.parse(p.actualDate || p.publishDate) }))
        .sort((a, b) => a.at - b.at || (a.integration?.name || '').localeCompare(b.integration?.name || ''));
      errors.show(null);
    } catch (error) {
      if (token !== loads) return;
      errors.show(error);
    }
    cards = groupCards(posts);
    cardsByKey = new Map(cards.map((card) => [card.key, card]));
    if (!quiet || (!dragging && !document.querySelector('dialog[open]'))) draw(start, days);
    if (justMade && confirmation.hidden) confirmMade(posts);
    schedulePoll(posts);
  }

  /** "Scheduled: …" for the posts the composer just made, their card in view and highlighted. */
  function confirmMade(posts) {
    const mine = posts.filter((p) => made.has(p.id));
    const verb = { schedule: t('Scheduled'), draft: t('Saved as a draft'), now: t('Sent') }[justMade.action] || t('Saved');
    const where = [...new Set(mine.map((p) => p.integration?.name).filter(Boolean))].join(', ');
    const count = mine.length ? groupCards(mine).length : made.size;  // (one post on three channels is one post)
    const what = count === 1 ? t('the post') : tn('{n} post', '{n} posts', count);
    put(confirmation, `${verb}: ${what}`,
      mine.length ? ' ' + (where ? t('for {when} on {where}.', { when: fmtDateTime(mine[0].at), where }) : t('for {when}.', { when: fmtDateTime(mine[0].at) })) + ' ' : '. ',
      mine.length ? h('a', { href: `#/post/${mine[0].id}` }, t('Open the post')) : null);
    confirmation.hidden = false;
    body.querySelector('.post.just-made')?.scrollIntoView({ block: 'center' });
  }

  function schedulePoll(posts) {
    clearTimeout(timer);
    if (!main.isConnected || !body.isConnected) return;
    const busy = posts.some((p) => p.state === 'PUBLISHING' || (p.state === 'QUEUE' && p.at < Date.now() + 120000));
    timer = setTimeout(() => { if (body.isConnected) load(true); }, busy ? 2000 : 30000);
  }

  const card = (c) => cardElement(c, c.posts.some((p) => made.has(p.id)));
  const dayLabel = (c, style) => fmtDay(noon(c), style);
  const when = (c) => (dayKey(c) === dayKey(today) ? 'today' : dayKey(c) < dayKey(today) ? 'past' : '');
  // An empty slot opens the composer for whoever may write (an author and up).
  const addButton = (ms, label) => !mayDo('author') ? null : h('button.add', { type: 'button', dataset: { at: String(ms) } }, h('span.sr-state', label), h('span', { 'aria-hidden': 'true' }, '+'));
  const moreButton = (count, from, to, label) => h('button.more', { type: 'button', dataset: { from: String(from), to: String(to), label } }, t('+{n} more', { n: count }));

  function draw(start, days) {
    const byDay = new Map();
    for (const c of cards) {
      const p = parts(c.at);
      const key = isoDay(p.y, p.m, p.d);
      if (!byDay.has(key)) byDay.set(key, []);
      byDay.get(key).push(Object.assign(c, { hour: p.h, minute: p.mi }));
    }
    const end = addDays(start, days - 1);
    const span = (style) => `${dayLabel(start, style)} – ${dayLabel(end, { ...style, year: 'numeric' })}`;
    title.textContent = view === 'month' ? fmtDay(zoned(anchor.y, anchor.m, 15, 12), { month: 'long', year: 'numeric' })
      : view === 'day' ? dayLabel(start, { weekday: 'long', day: 'numeric', month: 'long', year: 'numeric' })
        : span({ day: 'numeric', month: 'short' });
    if (view === 'month') body.replaceChildren(monthGrid(start, byDay));
    else if (view === 'list') body.replaceChildren(listView(start, days));
    else timeGrid(Array.from({ length: days }, (_, i) => addDays(start, i)), byDay);
    body.dataset.drawn = view;  // (for tests: the period is on screen)
  }

  function timeGrid(days, byDay) {
    const now = Date.now();
    const columns = days.map((c) => {
      const placed = placeCards(byDay.get(dayKey(c)) || []);
      const slots = Array.from({ length: 24 }, (_, hour) => {
        const at = zoned(c.y, c.m, c.d, hour);
        return h(`div.slot${at + HOUR_MS <= now ? '.past' : ''}`, { dataset: { day: dayKey(c), hour: String(hour) } },
          at > now ? addButton(at, t('New post at {when}', { when: fmtDateTime(at) })) : null);
      });
      const hidden = new Map();
      for (const { card: c2, col, cols } of placed) {
        // Beyond SIDE_BY_SIDE, the last column is the "+N more" of the rest.
        const fits = cols > SIDE_BY_SIDE ? SIDE_BY_SIDE - 1 : SIDE_BY_SIDE;
        if (col >= fits) { hidden.set(c2.hour, (hidden.get(c2.hour) || 0) + 1); continue; }
        const el = card(c2);
        const shown = Math.min(cols, SIDE_BY_SIDE);
        el.style.top = `${(c2.minute * HOUR_PX) / 60}px`;
        el.style.left = `${(col * 100) / shown}%`;
        el.style.width = `calc(${100 / shown}% - 2px)`;
        slots[c2.hour].append(el);
      }
      for (const [hour, count] of hidden) slots[hour].append(moreButton(count, zoned(c.y, c.m, c.d, hour), zoned(c.y, c.m, c.d, hour + 1), t('{day} at {hour}:00', { day: dayLabel(c), hour: String(hour).padStart(2, '0') })));
      const column = h(`div.tg-col.${when(c) || 'future'}`, slots);
      if (when(c) === 'today') { const line = h('div.now-line', { 'aria-hidden': 'true' }); const p = parts(now); line.style.top = `${((p.h * 60 + p.mi) * HOUR_PX) / 60}px`; column.append(line); }
      return column;
    });
    const grid = h('div.tg', h('div.tg-head', h('div.tg-corner'), days.map((c) => h(`div.tg-day.${when(c) || 'future'}`, dayLabel(c)))),
      h('div.tg-hours', Array.from({ length: 24 }, (_, hour) => h('div.tg-hour', `${String(hour).padStart(2, '0')}:00`))), columns);
    grid.style.setProperty('--days', days.length);
    grid.style.setProperty('--hour', `${HOUR_PX}px`);
    const box = h('div.tg-scroll', { tabindex: '0', role: 'region', 'aria-label': t('Posts by hour: {period}', { period: title.textContent }) }, grid);
    const period = `${view} ${dayKey(days[0])}`;
    const kept = body.dataset.period === period ? body.querySelector('.tg-scroll')?.scrollTop : undefined;  // a redraw of the same period stays put
    body.dataset.period = period;
    body.replaceChildren(box);
    if (kept !== undefined) { box.scrollTop = kept; return; }
    const inPeriod = days.some((c) => when(c) === 'today');
    const earliest = Math.min(...days.map((c) => { const first = byDay.get(dayKey(c))?.[0]; return first ? first.hour * 60 + first.minute : Infinity; }));
    const nowParts = parts(now);
    const minutes = inPeriod ? nowParts.h * 60 + nowParts.mi : Number.isFinite(earliest) ? earliest : 8 * 60;
    box.scrollTop = Math.max(0, ((minutes - 60) * HOUR_PX) / 60);
  }

  function monthGrid(start, byDay) {
    const names = Array.from({ length: 7 }, (_, i) => h('div.mg-name', dayLabel(addDays(start, i), { weekday: 'short' })));
    const now = Date.now();
    const cells = Array.from({ length: 42 }, (_, i) => {
      const c = addDays(start, i);
      const dayCards = byDay.get(dayKey(c)) || [];
      const long = dayLabel(c, { weekday: 'long', day: 'numeric', month: 'long' });
      const at = zoned(c.y, c.m, c.d, 9);  // a new post on a day: 09:00, or the next hour today
      const newAt = when(c) === 'today' ? Math.max(at, Math.ceil((now + 60000) / HOUR_MS) * HOUR_MS) : at;
      return h(`div.day${c.m !== anchor.m ? '.other' : ''}${when(c) ? `.${when(c)}` : ''}`, { dataset: { day: dayKey(c) } },
        when(c) !== 'past' ? addButton(newAt, t('New post on {day}', { day: long })) : null,
        h('span.date', h('span.sr-state', long), h('span', { 'aria-hidden': 'true' }, c.d)),
        dayCards.slice(0, MONTH_CARDS).map(card),
        dayCards.length > MONTH_CARDS ? moreButton(dayCards.length - MONTH_CARDS, zoned(c.y, c.m, c.d), zoned(c.y, c.m, c.d + 1), long) : null);
    });
    return h('div.month-grid', { role: 'group', 'aria-label': title.textContent }, names, cells);
  }

  function listView(start, days) {
    const pages = Math.max(1, Math.ceil(cards.length / PAGE_SIZE));
    listPage = Math.min(listPage, pages - 1);
    const shown = cards.slice(listPage * PAGE_SIZE, (listPage + 1) * PAGE_SIZE);
    const byDay = new Map();
    for (const c of shown) {
      const p = parts(c.at);
      const key = isoDay(p.y, p.m, p.d);
      if (!byDay.has(key)) byDay.set(key, { day: civil(p.y, p.m, p.d), items: [] });
      byDay.get(key).items.push(c);
    }
    const list = h('ol.agenda', [...byDay.values()].map(({ day, items }) => h(`li.${when(day) || 'future'}`,
      h('h2', dayLabel(day, { weekday: 'long', day: 'numeric', month: 'long', year: 'numeric' })),
      h('ul', items.map((c) => h('li', card(c)))))));
    const pageButton = (label, target) => h('button', { type: 'button', disabled: target < 0 || target >= pages, onclick: () => { listPage = target; draw(start, days); } }, label);
    const pager = pages > 1 ? h('nav.pager', { 'aria-label': t('Pages') }, pageButton(t('Previous page'), listPage - 1),
      h('span', t('Page {page} of {pages}', { page: listPage + 1, pages })), pageButton(t('Next page'), listPage + 1)) : null;
    return h('div', cards.length ? list : h('p.muted', t('No posts in these 30 days.')), pager);
  }

  // --- actions on cards and slots: one listener each for the whole body ---------------------------------------
  body.addEventListener('click', async (event) => {
    const target = event.target.closest('button');
    if (!target || !body.contains(target)) return;
    if (target.classList.contains('add')) { go(composeAt(Number(target.dataset.at))); return; }
    if (target.dataset.from) { showMore(Number(target.dataset.from), Number(target.dataset.to), target.dataset.label); return; }
    const c = cardsByKey.get(target.closest('.cal-card')?.dataset.key);
    if (c) await cardAction(target.dataset.act, c);
  });

  async function cardAction(action, c) {
    if (action === 'preview') { preview(c); return; }
    try {
      if (action === 'duplicate') {
        // one copy per multi-channel group copies all its channels; older posts, one by one
        const sources = new Map(c.posts.map((p) => [p.multiChannelGroup || p.id, p]));
        const copies = [];
        for (const p of sources.values()) copies.push(await api('POST', `/posts/${p.id}/duplicate`));
        const first = copies[0]?.posts?.[0]?.id;
        document.querySelector('dialog[open]')?.close();
        if (first) go(`#/compose?edit=${encodeURIComponent(first)}`);  // (the copy on all its channels)
      } else if (action === 'delete') {
        if (c.posts.some((p) => p.state === 'PUBLISHED')) {  // (issue 28: it may be deleted on its platforms too)
          if (!await (await import('./delete-post.js')).deletePosts(c.posts)) return;
        } else {
          if (!window.confirm(t('Delete this post on {channels}? This cannot be undone.', { channels: channelNames(c) }))) return;
          for (const p of c.posts) await api('DELETE', `/posts/${p.id}`);
        }
        document.querySelector('dialog[open]')?.close();
        load();
      }
    } catch (error) {
      errors.show(error);
      errors.focus();
    }
  }

  /** A dialog: a heading, the content, a Close button; removed when closed. Card actions work inside it. */
  function dialog(heading, ...content) {
    const box = h('dialog.cal-dialog', { 'aria-label': heading }, h('h2', heading), ...content,
      h('form', { method: 'dialog' }, h('button', { type: 'submit' }, t('Close'))));
    box.addEventListener('click', async (event) => {
      if (event.target.closest('a')) box.close();  // (a link leaves the calendar: the dialog goes with it)
      const target = event.target.closest('button[data-act]');
      const c = target && cardsByKey.get(target.closest('.cal-card')?.dataset.key);
      if (c) await cardAction(target.dataset.act, c);
    });
    box.addEventListener('close', () => box.remove());
    document.body.append(box);
    box.showModal();
    return box;
  }

  /** The "+N more" list: every card of the slot or day [from, to). */
  function showMore(from, to, label) {
    const inside = cards.filter((c) => c.at >= from && c.at < to);
    dialog(label, h('ul.more-list', inside.map((c) => h('li', card(c)))));
  }

  function preview(c) {
    const first = c.posts[0];
    dialog(t('Preview'),
      h('ul.preview-channels', c.posts.map((p) => h('li', avatar(p.integration, 24), ' ', channelLabel(p.integration), ' ', stateBadge(p.state)))),
      h('p.muted', fmtDateTime(c.at)),
      h('div.preview-text', htmlToText(first.content).trim() || t('(no text)')),
      (first.image || []).length ? h('div.preview-media', (first.image || []).map((m) => mediaImage(m.path, m.alt || ''))) : null,
      c.tags.length ? h('p', t('Tags: {tags}', { tags: c.tags.map((tag) => tag.name).join(', ') })) : null);
  }

  // --- drag to reschedule, with undo ------------------------------------------------------------------------
  body.addEventListener('dragstart', (event) => {
    const c = cardsByKey.get(event.target.closest?.('.cal-card')?.dataset.key);
    if (!c?.movable) return;
    dragging = c;
    event.dataTransfer.setData('text/x-rustiz-post', c.posts[0].id);
    event.dataTransfer.effectAllowed = 'move';
  });
  whileShown(document, 'dragend', () => { dragging = null; body.querySelector('.over')?.classList.remove('over'); });
  body.addEventListener('dragover', (event) => {
    const target = event.target.closest?.('[data-day]');
    if (!dragging || !target) return;
    event.preventDefault();
    if (!target.classList.contains('over')) { body.querySelector('.over')?.classList.remove('over'); target.classList.add('over'); }
  });
  body.addEventListener('drop', async (event) => {
    const target = event.target.closest?.('[data-day]');
    const c = dragging;
    dragging = null;
    if (!target || !c) return;
    event.preventDefault();
    target.classList.remove('over');
    const day = parseDay(target.dataset.day);
    const old = parts(c.at);
    const at = zoned(day.y, day.m, day.d, target.dataset.hour ? Number(target.dataset.hour) : old.h, old.mi);
    if (at === c.at) return;
    if (at < Date.now()) { errors.show(new Error(t('That time has passed: drop the post on a future slot (or use Post now in the composer).'))); return; }
    await move(c.posts, at, c.at);
  });

  async function move(posts, at, from) {
    try {
      for (const p of posts) await api('PUT', `/posts/${p.id}`, { date: new Date(at).toISOString() });
      errors.show(null);
      if (from !== undefined) offerUndo(posts, from, at);
    } catch (error) {
      errors.show(error);
    }
    load();
  }

  function offerUndo(posts, from, at) {
    const undo = h('button', { type: 'button', onclick: () => { toast.replaceChildren(); move(posts, from); } }, t('Undo'));
    toast.replaceChildren(h('span', t('Moved to {when}.', { when: fmtDateTime(at) })), ' ', undo);
    const shown = toast.firstChild;
    setTimeout(() => { if (toast.firstChild === shown) toast.replaceChildren(); }, UNDO_MS);
  }

  sync();
}
