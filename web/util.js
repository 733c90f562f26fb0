// Shared helpers: DOM building, the API client (session cookie + CSRF), times in the organization's zone.
import { t, lang, toTranslate } from './i18n.js';

export { t, tn, lang, toTranslate } from './i18n.js';

// justMade: the posts the composer just made ({action, ids}), for the calendar to confirm and highlight once.
export const session = { organization: null, csrfToken: '', justMade: null, role: 'admin', user: null, organizations: [] };
// A person's role in the organization (viewer < author < editor < admin): mayDo('editor') for an editor or admin.
const ROLE_ORDER = ['viewer', 'author', 'editor', 'admin'];
export const mayDo = (role) => ROLE_ORDER.indexOf(session.role) >= ROLE_ORDER.indexOf(role);

/** h('button#id.primary', {onclick}, 'text', child...) -> an element. Attributes starting with "on" are listeners. */
export function h(tag, attrs, ...children) {
  const [head, ...classes] = tag.split('.');
  const [name, id] = head.split('#');
  const el = document.createElement(name || 'div');
  if (id) el.id = id;
  if (classes.length) el.className = classes.join(' ');
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className += (el.className ? ' ' : '') + value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key in el && key !== 'list' && key !== 'form' && typeof value !== 'string') el[key] = value;
    else el.setAttribute(key, value === true ? '' : value);
  }
  append(el, children);
  return el;
}

/** Append children to an element as h() does: nested lists flattened; null, undefined and false skipped
 * (a page writes `cond ? h(...) : null`; the DOM's own append would print "null"). */
export function put(el, ...children) {
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** A post's picture; one the page may not load (stored elsewhere than rustiz: the policy blocks it) or
 * that is gone says so in words instead of a broken-image icon. */
export function mediaImage(path, alt) {
  const img = h('img', { src: path, alt });
  img.addEventListener('error', () => img.replaceWith(h('span.muted.media-missing', { title: path }, t('Picture not shown: it is not stored in rustiz, or it is gone'))), { once: true });
  return img;
}

/** A channel's picture, fetched through rustiz (the page loads no image from elsewhere), or its initial
 * when it has none or the picture fails to load. */
export function avatar(channel, size = 32) {
  const initial = () => h(`span.avatar${size < 32 ? '.small' : ''}`, { 'aria-hidden': 'true' }, (channel?.name || '?').trim()[0] || '?');
  if (!channel?.picture || !channel.id) return initial();
  const img = h('img.avatar-img', { src: `/public/v1/integrations/${encodeURIComponent(channel.id)}/picture`, alt: '', width: size, height: size });
  img.addEventListener('error', () => img.replaceWith(initial()), { once: true });
  return img;
}

let uid = 0;
export const nextId = (prefix = 'f') => `${prefix}${++uid}`;

/** A labelled field: returns [wrapper, input]. */
export function field(label, input, hint) {
  input.id ||= nextId();
  const hintEl = hint ? h('small.hint', { id: input.id + '-hint' }, hint) : null;
  if (hintEl) input.setAttribute('aria-describedby', hintEl.id);
  return h('div.field', h('label', { for: input.id }, label), input, hintEl);
}

export class ApiError extends Error {
  constructor(status, body) {
    super(describeError(body, status));
    this.status = status;
    this.body = body;
  }
}

/** The API's error bodies, as lines a person can read: message (string or list), {provider,name,message}, msg. */
export function errorLines(body, status) {
  if (!body || typeof body !== 'object') return [typeof body === 'string' && body ? body : t('The server answered {status} without saying why.', { status })];
  if (Array.isArray(body)) return body.flatMap((item) => errorLines(item, status));
  const lines = [];
  const message = body.message ?? body.msg ?? body.error;
  if (Array.isArray(message)) lines.push(...message.map(String));
  else if (message) lines.push((body.provider || body.name ? `${[body.name, body.provider].filter(Boolean).join(' / ')}: ` : '') + message);
  return lines.length ? lines : [t('The server answered {status} without saying why.', { status })];
}

export const describeError = (body, status) => errorLines(body, status).join('\n');

/** Call the API with the session cookie; state-changing requests carry X-CSRF-Token. */
export async function api(method, path, body) {
  const headers = {};
  const options = { method, headers, credentials: 'same-origin' };
  if (method !== 'GET') headers['X-CSRF-Token'] = session.csrfToken;
  if (body instanceof FormData || body instanceof Blob) options.body = body;  // (a Blob's type is its Content-Type)
  else if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    options.body = JSON.stringify(body);
  }
  const url = path.startsWith('/auth/') ? path : '/public/v1' + path;
  const response = await fetch(url, options);
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (response.status === 401 && !path.startsWith('/auth/')) {
    window.dispatchEvent(new CustomEvent('rustiz:signed-out'));
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

let providerList = null;
/** Every provider's descriptor (GET /public/v1/providers) by identifier, fetched once per page load. */
export function providers() {
  providerList ||= api('GET', '/providers').then((list) => Object.fromEntries(list.map((p) => [p.identifier, p])))
    .catch((error) => { providerList = null; throw error; });
  return providerList;
}

/** An element listing an error's lines (role=alert), or an empty one; show(error) fills it. */
export function errorBox() {
  const box = h('div.errors', { role: 'alert', tabindex: '-1', hidden: true });
  box.show = (error) => {
    box.replaceChildren();
    if (!error) { box.hidden = true; return; }
    const lines = error instanceof ApiError ? errorLines(error.body, error.status) : [String(error.message || error)];
    box.append(lines.length > 1 ? h('ul', lines.map((line) => h('li', line))) : h('p', lines[0]));
    box.hidden = false;
  };
  return box;
}

// --- time, always in the organization's zone ------------------------------------------------------

export const zone = () => session.organization?.timezone || 'UTC';
const formats = new Map();
function formatter(options) {
  const key = lang() + zone() + JSON.stringify(options);
  if (!formats.has(key)) formats.set(key, new Intl.DateTimeFormat(lang(), { timeZone: zone(), ...options }));
  return formats.get(key);
}
/** Wall-clock parts {y, m, d, h, mi} of an instant in the organization's zone. */
export function parts(ms) {
  const o = {};
  for (const p of formatter({ hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric', numberingSystem: 'latn' }).formatToParts(ms)) o[p.type] = p.value;
  return { y: +o.year, m: +o.month, d: +o.day, h: +o.hour % 24, mi: +o.minute, s: +o.second };
}
const offsetAt = (ms) => { const p = parts(ms); return Date.UTC(p.y, p.m - 1, p.d, p.h, p.mi, p.s) - Math.floor(ms / 1000) * 1000; };
/** The instant (ms) of a wall-clock time in the organization's zone. */
export function zoned(y, m, d, hour = 0, minute = 0) {
  const guess = Date.UTC(y, m - 1, d, hour, minute);
  let ms = guess - offsetAt(guess);
  const second = guess - offsetAt(ms);
  if (second !== ms) ms = second;
  return ms;
}
export const fmtTime = (ms) => formatter({ hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(ms);
export const fmtDateTime = (ms) => formatter({ dateStyle: 'medium', timeStyle: 'short', hourCycle: 'h23' }).format(ms);
export const fmtDay = (ms, style = { weekday: 'short', day: 'numeric', month: 'short' }) => formatter(style).format(ms);
const pad = (n) => String(n).padStart(2, '0');
/** "YYYY-MM-DDTHH:mm" (for <input type=datetime-local>) of an instant, in the organization's zone. */
export function toLocalInput(ms) {
  const p = parts(ms);
  return `${p.y}-${pad(p.m)}-${pad(p.d)}T${pad(p.h)}:${pad(p.mi)}`;
}
/** The instant of an <input type=datetime-local> value read in the organization's zone. */
export function fromLocalInput(value) {
  const match = /^(\d+)-(\d+)-(\d+)T(\d+):(\d+)(?::(\d+))?/.exec(value || '');
  return match ? zoned(+match[1], +match[2], +match[3], +match[4], +match[5]) + 1000 * (+match[6] || 0) : NaN;
}
export const isoDay = (y, m, d) => `${y}-${pad(m)}-${pad(d)}`;

// --- content ---------------------------------------------------------------------------------------

const escapeHtml = (text) => text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
/** Plain text from the composer -> the HTML Postiz stores: one <p> per line. */
export const textToHtml = (text) => text.split('\n').map((line) => `<p>${escapeHtml(line)}</p>`).join('');
/** Stored HTML -> plain text, without ever running it. */
export function htmlToText(html) {
  const doc = new DOMParser().parseFromString(String(html || '').replace(/<\/p>\s*<p>/g, '</p>\n<p>').replace(/<br\s*\/?>/g, '\n'), 'text/html');
  return doc.body.textContent || '';
}

export const STATES = { QUEUE: toTranslate('Queued'), PUBLISHING: toTranslate('Publishing'), PUBLISHED: toTranslate('Published'), ERROR: toTranslate('Error'), DRAFT: toTranslate('Draft') };
/** A post state's name in the person's language. */
export const stateLabel = (state) => t(STATES[state] || state);
export const stateBadge = (state) => h(`span.badge.st-${state || 'QUEUE'}`, stateLabel(state));

export function go(hash) {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = hash;
}

/** Only http(s) links leave the app (a platform's answer never becomes a javascript: link). */
export const safeUrl = (url) => (/^https?:\/\//i.test(url || '') ? url : null);
