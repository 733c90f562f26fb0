// Calendar: week, month and list views of posts in the organization's timezone; filters; drag to reschedule.
import { h, put, api, session, errorBox, field, parts, zoned, fmtTime, fmtDay, fmtDateTime, isoDay, htmlToText, stateBadge, STATES, zone } from './util.js';

const DAY = 86400000;
const civil = (y, m, d) => { const t = new Date(Date.UTC(y, m - 1, d)); return { y: t.getUTCFullYear(), m: t.getUTCMonth() + 1, d: t.getUTCDate(), wd: (t.getUTCDay() + 6) % 7 }; };
const addDays = (c, n) => civil(c.y, c.m, c.d + n);
const dayKey = (c) => isoDay(c.y, c.m, c.d);
const parseDay = (text) => { const m = /^(\d{4})-(\d\d)-(\d\d)$/.exec(text || ''); return m ? civil(+m[1], +m[2], +m[3]) : null; };
const MOVABLE = new Set(['QUEUE', 'DRAFT']);

function range(view, anchor) {
  if (view === 'week') { const start = addDays(anchor, -anchor.wd); return { start, days: 7 }; }
  if (view === 'month') { const first = civil(anchor.y, anchor.m, 1); const start = addDays(first, -first.wd); return { start, days: 42 }; }
  return { start: anchor, days: 30 };
}

export async function calendarPage(main, { query }) {
  const today = (() => { const p = parts(Date.now()); return civil(p.y, p.m, p.d); })();
  let view = query.get('view') || localStorage.getItem('rustiz.view') || 'week';
  if (!['week', 'month', 'list'].includes(view)) view = 'week';
  let anchor = parseDay(query.get('date')) || today;
  let channelFilter = query.get('channel') || '';
  let groupFilter = query.get('group') || '';
  const [channels, groups] = await Promise.all([api('GET', '/integrations'), api('GET', '/groups')]);
  let posts = [];
  let timer = null;
  const justMade = session.justMade;  // shown once: a reload or another visit is an ordinary calendar
  session.justMade = null;
  const made = new Set(justMade?.ids || []);
  const confirmation = h('p.notice.made', { role: 'status', hidden: true });

  const errors = errorBox();
  const title = h('h1.cal-title', { 'aria-live': 'polite' });
  const body = h('div.cal-body');
  const viewButtons = ['week', 'month', 'list'].map((v) => h('button', { type: 'button', dataset: { view: v }, 'aria-pressed': String(v === view), onclick: () => { view = v; localStorage.setItem('rustiz.view', v); sync(); } }, v[0].toUpperCase() + v.slice(1)));
  const step = (sign) => () => {
    if (view === 'month') anchor = civil(anchor.y, anchor.m + sign, 1);
    else anchor = addDays(anchor, sign * (view === 'week' ? 7 : 30));
    sync();
  };
  const channelSelect = h('select', { onchange: () => { channelFilter = channelSelect.value; sync(); } },
    h('option', { value: '' }, 'All channels'), channels.map((c) => h('option', { value: c.id, selected: c.id === channelFilter }, c.name)));
  const groupSelect = h('select', { onchange: () => { groupFilter = groupSelect.value; sync(); } },
    h('option', { value: '' }, 'All groups'), groups.map((g) => h('option', { value: g.id, selected: g.id === groupFilter }, g.name)));

  put(main,
    h('div.toolbar',
      h('div.group', { role: 'group', 'aria-label': 'View' }, viewButtons),
      h('div.group', { role: 'group', 'aria-label': 'Dates' },
        h('button', { type: 'button', onclick: step(-1), 'aria-label': 'Previous' }, '‹'),
        h('button', { type: 'button', onclick: () => { anchor = today; sync(); } }, 'Today'),
        h('button', { type: 'button', onclick: step(1), 'aria-label': 'Next' }, '›')),
      title,
      h('div.filters', field('Channel', channelSelect), groups.length ? field('Group', groupSelect) : null),
      h('a.button.primary', { href: '#/compose' }, 'New post')),
    h('p.legend', Object.entries(STATES).map(([state]) => stateBadge(state)), h('span.muted', ` Drag a queued post or draft to another slot to reschedule it. Times in ${zone()}.`)),
    errors, confirmation, body);
  if (!channels.length) body.before(h('p.notice', 'No channels yet. ', h('a', { href: '#/channels' }, 'Connect a channel'), ' to start posting.'));

  function sync() {
    const q = new URLSearchParams({ view, date: dayKey(anchor) });
    if (channelFilter) q.set('channel', channelFilter);
    if (groupFilter) q.set('group', groupFilter);
    // Only while the address is still the calendar's: a page picked during the first load has already
    // changed it, and its hashchange may not have been handled yet (rewriting it would undo the click).
    if (main.isConnected && !/^#\/(?!calendar\b)\w/.test(location.hash)) history.replaceState(null, '', `#/calendar?${q}`);
    for (const b of viewButtons) b.setAttribute('aria-pressed', String(b.dataset.view === view));
    load();
  }

  async function load() {
    const { start, days } = range(view, anchor);
    const end = addDays(start, days);
    const from = zoned(start.y, start.m, start.d), to = zoned(end.y, end.m, end.d) - 1000;
    const q = new URLSearchParams({ startDate: new Date(from).toISOString(), endDate: new Date(to).toISOString() });
    if (groupFilter) q.set('customer', groupFilter);
    try {
      const answer = await api('GET', `/posts?${q}`);
      posts = answer.posts.filter((p) => !channelFilter || p.integration?.id === channelFilter)
        .map((p) => ({ ...p, at: Date.parse(p.actualDate || p.publishDate) }))
        .sort((a, b) => a.at - b.at);
      errors.show(null);
    } catch (error) {
      errors.show(error);
      posts = [];
    }
    draw(start, days);
    if (justMade && confirmation.hidden) confirmMade();
    schedulePoll();
  }

  /** "Scheduled: …" for the posts the composer just made, with the first of them in view. */
  function confirmMade() {
    const mine = posts.filter((p) => made.has(p.id));
    const verb = { schedule: 'Scheduled', draft: 'Saved as a draft', now: 'Sent' }[justMade.action] || 'Saved';
    const where = [...new Set(mine.map((p) => p.integration?.name).filter(Boolean))].join(', ');
    put(confirmation, `${verb}: ${made.size === 1 ? 'the post' : `${made.size} posts`}`,
      mine.length ? ` for ${fmtDateTime(mine[0].at)}${where ? ` on ${where}` : ''}. ` : '. ',
      mine.length === 1 ? h('a', { href: `#/post/${mine[0].id}` }, 'Open the post') : null);
    confirmation.hidden = false;
    body.querySelector('.post.just-made')?.scrollIntoView({ block: 'nearest' });
  }

  function schedulePoll() {
    clearTimeout(timer);
    if (!main.isConnected || !body.isConnected) return;
    const busy = posts.some((p) => p.state === 'PUBLISHING' || (p.state === 'QUEUE' && p.at < Date.now() + 120000));
    timer = setTimeout(() => { if (body.isConnected) load(); }, busy ? 2000 : 30000);
  }

  function chip(post) {
    const movable = MOVABLE.has(post.state) && !post.actualDate;
    const text = htmlToText(post.content).trim().slice(0, 80) || '(no text)';
    return h(`a.post.st-${post.state}${made.has(post.id) ? '.just-made' : ''}`, {
      href: `#/post/${post.id}`, draggable: movable ? 'true' : 'false', dataset: { id: post.id, state: post.state },
      title: `${STATES[post.state] || post.state} · ${fmtDateTime(post.at)} · ${post.integration?.name || ''}`,
      ondragstart: movable ? (event) => { event.dataTransfer.setData('text/x-rustiz-post', post.id); event.dataTransfer.effectAllowed = 'move'; } : null,
    }, h('time', { datetime: new Date(post.at).toISOString() }, fmtTime(post.at)), ' ',
    h('span.sr-state', `${STATES[post.state] || post.state}: `),
    h('b', post.integration?.name || ''), h('span.snippet', ` ${text}`));
  }

  function dropTarget(el, day, hour) {
    el.dataset.day = dayKey(day);
    if (hour !== undefined) el.dataset.hour = hour;
    el.addEventListener('dragover', (event) => {
      if ([...event.dataTransfer.types].includes('text/x-rustiz-post')) { event.preventDefault(); el.classList.add('over'); }
    });
    el.addEventListener('dragleave', () => el.classList.remove('over'));
    el.addEventListener('drop', async (event) => {
      event.preventDefault();
      el.classList.remove('over');
      const id = event.dataTransfer.getData('text/x-rustiz-post');
      const post = posts.find((p) => p.id === id);
      if (!post) return;
      const old = parts(post.at);
      const when = zoned(day.y, day.m, day.d, hour ?? old.h, old.mi);
      if (when === post.at) return;
      if (when < Date.now()) { errors.show(new Error('That time has passed: drop the post on a future slot (or use Post now in the composer).')); return; }
      try {
        await api('PUT', `/posts/${id}`, { date: new Date(when).toISOString() });
        errors.show(null);
      } catch (error) {
        errors.show(error);
      }
      load();
    });
    return el;
  }

  function draw(start, days) {
    const byDay = new Map();
    for (const p of posts) {
      const q = parts(p.at);
      const key = isoDay(q.y, q.m, q.d);
      if (!byDay.has(key)) byDay.set(key, []);
      byDay.get(key).push(p);
    }
    const end = addDays(start, days - 1);
    title.textContent = view === 'month'
      ? fmtDay(zoned(anchor.y, anchor.m, 15, 12), { month: 'long', year: 'numeric' })
      : `${fmtDay(zoned(start.y, start.m, start.d, 12), { day: 'numeric', month: 'short' })} – ${fmtDay(zoned(end.y, end.m, end.d, 12), { day: 'numeric', month: 'short', year: 'numeric' })}`;
    const dayLabel = (c, style) => fmtDay(zoned(c.y, c.m, c.d, 12), style);
    const isToday = (c) => dayKey(c) === dayKey(today);
    if (view === 'week') {
      const cols = Array.from({ length: 7 }, (_, i) => addDays(start, i));
      const grid = h('div.week', { role: 'grid', 'aria-label': `Week of ${dayLabel(start)}` },
        h('div.row.head', { role: 'row' }, h('div.hour', { role: 'columnheader' }, ''), cols.map((c) => h('div', { role: 'columnheader', class: isToday(c) ? 'today' : '' }, dayLabel(c)))),
        Array.from({ length: 24 }, (_, hour) => h('div.row', { role: 'row' }, h('div.hour', { role: 'rowheader' }, `${String(hour).padStart(2, '0')}:00`),
          cols.map((c) => dropTarget(h('div.slot', { role: 'gridcell', class: isToday(c) ? 'today' : '', 'aria-label': `${dayLabel(c)} ${hour}:00` },
            (byDay.get(dayKey(c)) || []).filter((p) => parts(p.at).h === hour).map(chip)), c, hour)))));
      body.replaceChildren(h('div.scroll', grid));
      const first = grid.querySelector('.post.just-made') || grid.querySelector('.post');
      const scroller = body.firstChild;
      const hourRow = first ? first.closest('.row') : grid.children[9];
      if (hourRow) scroller.scrollTop = Math.max(0, hourRow.offsetTop - grid.firstChild.offsetHeight - 8);
    } else if (view === 'month') {
      const names = Array.from({ length: 7 }, (_, i) => dayLabel(addDays(start, i), { weekday: 'short' }));
      body.replaceChildren(h('div.scroll', h('div.month', { role: 'grid', 'aria-label': title.textContent },
        h('div.row.head', { role: 'row' }, names.map((n) => h('div', { role: 'columnheader' }, n))),
        Array.from({ length: 6 }, (_, w) => h('div.row', { role: 'row' }, Array.from({ length: 7 }, (_, i) => {
          const c = addDays(start, w * 7 + i);
          return dropTarget(h('div.day', { role: 'gridcell', class: `${c.m !== anchor.m ? 'other' : ''} ${isToday(c) ? 'today' : ''}` },
            h('span.date', { 'aria-label': dayLabel(c, { weekday: 'long', day: 'numeric', month: 'long' }) }, c.d), (byDay.get(dayKey(c)) || []).map(chip)), c);
        }))))));
    } else {
      const list = h('ol.agenda');
      for (let i = 0; i < days; i++) {
        const c = addDays(start, i);
        const items = byDay.get(dayKey(c));
        if (items) list.append(h('li', h('h2', dayLabel(c, { weekday: 'long', day: 'numeric', month: 'long', year: 'numeric' })), h('ul', items.map((p) => h('li', chip(p), ' ', stateBadge(p.state))))));
      }
      body.replaceChildren(list.children.length ? list : h('p.muted', 'No posts in these 30 days.'));
    }
  }

  sync();
}
