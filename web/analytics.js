// Analytics over time (issue 26): a channel's figures day by day over 7, 30 or 90 days (the channels page's
// Analytics), a published post's figures at 1 h, 24 h and 7 days (the post page), and a channel's best times to
// post offered in the composer as buttons that set the date.
// Rules: figures are the platform's own (GET /analytics/:id?date=, /analytics/post/:id/history, GET
// /integrations/:id/best-times); days and times are the organization's (util.js); nothing is drawn for a platform
// that gives no figures; every chart says its numbers in words too (charts.js).
import { h, t, tn, api, errorBox, parts, zoned, fmtDay, fmtDateTime } from './util.js';
import { lineChart, number } from './charts.js';

const PERIODS = [7, 30, 90];
const BEST_TIMES_MINIMUM = 10;  // (the server's: published posts with figures before best times are given)
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
// A platform's day ('YYYY-MM-DD') shown as a short date (noon UTC: the same date in every zone).
const dayLabel = (date) => fmtDay(Date.parse(`${date}T12:00:00Z`), { day: 'numeric', month: 'short' });

/** A channel's figures as one line chart per metric, with a 7 / 30 / 90 days choice. */
export function channelAnalytics(channel) {
  const charts = h('div.chart-grid');
  const errors = errorBox();
  const choice = h('div.period-choice', { role: 'group', 'aria-label': t('Period') });
  const show = async (days) => {
    for (const button of choice.children) button.setAttribute('aria-pressed', String(Number(button.dataset.days) === days));
    try {
      const items = await api('GET', `/analytics/${channel.id}?date=${days}`);
      errors.show(null);
      charts.replaceChildren(...(Array.isArray(items) && items.length
        ? items.filter((item) => item.data?.length).map((item) => lineChart(item.label, item.data.map((p) => ({ label: dayLabel(p.date), value: p.total })), changeNote(item)))
        : [h('p.muted', t('This platform gives no figures.'))]));
    } catch (error) { errors.show(error); charts.replaceChildren(); }
  };
  choice.append(...PERIODS.map((days) => h('button', { type: 'button', dataset: { days: String(days) }, 'aria-pressed': 'false', onclick: () => show(days) },
    tn('{n} day', '{n} days', days))));
  show(30);
  return h('section.analytics', { 'aria-label': t('{name}: figures over time', { name: channel.name }) },
    h('div.analytics-head', h('h2', t('{name}: figures over time', { name: channel.name })), choice),
    h('p.hint', t('Taken once a day from the platform; the first day is today.')), errors, charts);
}

/** "+28% since Nov 7": a series' change over the days shown (none for a single day). */
function changeNote(item) {
  if (item.data.length < 2) return null;
  const change = Number(item.percentageChange) || 0;
  return t('{change} since {date}', { change: `${change > 0 ? '+' : ''}${number(change)}%`, date: dayLabel(item.data[0].date) });
}

/** A published post's figures at about 1 hour, 24 hours and 7 days after it went out; nothing before the first. */
export function postHistory(postId) {
  const box = h('section.analytics.post-history', { 'aria-label': t('Figures over time') });
  const ages = { '1h': t('1 hour'), '24h': t('24 hours'), '7d': t('7 days') };
  api('GET', `/analytics/post/${postId}/history`).then(({ snapshots }) => {
    if (!snapshots?.length) return;
    const metrics = [...new Set(snapshots.flatMap((s) => s.figures.map((f) => f.label)))];
    box.append(h('h2', t('Figures over time')),
      h('p.hint', t('Taken about 1 hour, 24 hours and 7 days after it went out.')),
      h('div.chart-grid', metrics.map((metric) => lineChart(metric, snapshots
        .filter((s) => s.figures.some((f) => f.label === metric))
        .map((s) => ({ label: ages[s.age] || s.age, value: s.figures.find((f) => f.label === metric).total }))))));
  }).catch(() => { /* (the figures box above says what went wrong with the platform) */ });
  return box;
}

/** The next instant (ms) of a weekday and "HH:MM" in the organization's zone, after now. */
export function nextTime(day, time) {
  const today = parts(Date.now());
  const [hour, minute] = time.split(':').map(Number);
  for (let ahead = 0; ahead <= 7; ahead += 1) {
    const date = new Date(Date.UTC(today.y, today.m - 1, today.d + ahead));
    if (WEEKDAYS[date.getUTCDay()] !== day) continue;
    const at = zoned(date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), hour, minute);
    if (at > Date.now() + 60000) return at;
  }
  return zoned(today.y, today.m, today.d + 7, hour, minute);
}

/** The composer's "Best times" button: for each chosen channel, its best times as buttons that set the date
 * (`setWhen(ms)`), or why it has none yet. `chosen()` gives the chosen channels ({id, name}). */
export function bestTimesBlock(chosen, setWhen) {
  const list = h('div.best-times-list', { role: 'status' });
  const errors = errorBox();
  const load = async () => {
    const channels = chosen();
    if (!channels.length) { list.replaceChildren(h('p.hint', t('Choose a channel first: best times are per channel.'))); return; }
    try {
      const answers = await Promise.all(channels.map((c) => api('GET', `/integrations/${c.id}/best-times`)));
      errors.show(null);
      list.replaceChildren(...channels.map((c, i) => bestTimesOf(c, answers[i], setWhen)));
    } catch (error) { errors.show(error); }
  };
  return h('div.best-times', h('button.tool', { type: 'button', onclick: load }, t('Best times')), errors, list);
}

function bestTimesOf(channel, answer, setWhen) {
  const times = answer?.times || [];
  if (!times.length) {
    const missing = Math.max(1, BEST_TIMES_MINIMUM - (answer?.basedOn || 0));
    return h('p.hint', h('strong', channel.name), ' ', answer?.basedOn >= BEST_TIMES_MINIMUM ? t('No engagement on its posts yet.')
      : tn('Not enough history yet: {n} more published post with figures is needed.', 'Not enough history yet: {n} more published posts with figures are needed.', missing));
  }
  return h('div.best-times-channel', h('span.best-times-name', channel.name),
    h('span.best-times-buttons', times.map((slot) => {
      const at = nextTime(slot.day, slot.time);
      const label = fmtDay(at, { weekday: 'short' }) + ' ' + slot.time;
      return h('button.best-time', { type: 'button', title: t('{when}: posts then did {score}× as well as its average', { when: fmtDateTime(at), score: slot.score }),
        onclick: () => setWhen(at) }, label);
    })));
}
