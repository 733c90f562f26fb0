// Small SVG line charts, drawn by hand (no library): one series each, its numbers also in a visually hidden table.
// Rules: every chart has a title and a description in words (the first and last values, the change), read out
// instead of the drawing (role="img"); the table beside it gives each point to screen readers; colours come from
// the CSS variables (app.css, "analytics (issue 26)"), so dark mode follows.
import { h, t, lang } from './util.js';

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 320, HEIGHT = 120, LEFT = 8, RIGHT = 8, TOP = 12, BOTTOM = 22;
let charts = 0;

/** An SVG element: svg('path', {d: ...}, child...). */
function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) if (value !== null && value !== undefined) el.setAttribute(key, String(value));
  for (const child of children) if (child !== null && child !== undefined) el.append(child);
  return el;
}

export const number = (value) => Number(value).toLocaleString(lang(), { maximumFractionDigits: 2 });

/** A line chart of `points` ([{label, value}], oldest first) titled `title` (with a `note` under it, such as the
 * change over the period): a <figure> with the drawing and the same numbers as a table only screen readers see.
 * A few points are each labelled under the drawing; more, only the first and the last. */
export function lineChart(title, points, note = null) {
  const id = `chart${++charts}`;
  const values = points.map((p) => Number(p.value) || 0);
  const low = Math.min(...values), high = Math.max(...values);
  const span = high - low || Math.max(1, Math.abs(high));
  const x = (i) => LEFT + (points.length > 1 ? (i * (WIDTH - LEFT - RIGHT)) / (points.length - 1) : (WIDTH - LEFT - RIGHT) / 2);
  const y = (v) => TOP + (HEIGHT - TOP - BOTTOM) * (1 - (high === low ? 0.5 : (v - low) / span));
  const first = points[0], last = points[points.length - 1];
  const summary = points.length > 1
    ? t('{title}: from {first} ({from}) to {last} ({to}), lowest {low}, highest {high}.', { title, first: number(values[0]), from: first.label, last: number(values[values.length - 1]), to: last.label, low: number(low), high: number(high) })
    : t('{title}: {last} ({to}).', { title, last: number(values[0]), to: last.label });
  const line = values.map((v, i) => `${i ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  const drawing = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-labelledby': `${id}-title`, 'aria-describedby': `${id}-desc`, class: 'chart-drawing' },
    svg('title', { id: `${id}-title` }, title),
    svg('desc', { id: `${id}-desc` }, summary),
    svg('line', { x1: LEFT, x2: WIDTH - RIGHT, y1: HEIGHT - BOTTOM + 4, y2: HEIGHT - BOTTOM + 4, class: 'chart-axis' }),
    svg('path', { d: line, class: 'chart-line', fill: 'none' }),
    ...values.map((v, i) => svg('circle', { cx: x(i).toFixed(1), cy: y(v).toFixed(1), r: points.length > 40 ? 1.5 : 2.5, class: 'chart-dot' })));
  const table = h('table.sr-only', h('caption', title),
    h('thead', h('tr', h('th', { scope: 'col' }, t('When')), h('th', { scope: 'col' }, t('Value')))),
    h('tbody', points.map((p, i) => h('tr', h('th', { scope: 'row' }, p.label), h('td', number(values[i]))))));
  return h('figure.chart', { dataset: { points: String(points.length) } },
    h('figcaption', h('span.chart-title', title), h('strong.chart-last', number(values[values.length - 1])),
      note ? h('span.chart-note', note) : null),
    drawing,
    h('div.chart-ends', { 'aria-hidden': 'true' }, (points.length <= 4 ? points : [first, last]).map((p) => h('span', p.label))),
    table);
}
