// rustiz web app: sign-in, the shell (navigation with counts, timezone shown, language and theme switches,
// keyboard shortcuts), and a hash router.
import { h, api, session, errorBox, field, zone, go, mayDo } from './util.js';
import { t, toTranslate, LANGUAGES, lang, loadLanguage, chooseLanguage } from './i18n.js';

const app = document.getElementById('app');
const routes = {
  calendar: () => import('./calendar.js').then((m) => m.calendarPage),
  compose: () => import('./composer.js').then((m) => m.composerPage),
  post: () => import('./pages.js').then((m) => m.postPage),
  channels: () => import('./channels.js').then((m) => m.channelsPage),
  library: () => import('./library.js').then((m) => m.libraryPage),
  settings: () => import('./settings.js').then((m) => m.settingsPage),
  notifications: () => import('./pages.js').then((m) => m.notificationsPage),
  review: () => import('./pages.js').then((m) => m.reviewPage),
  import: () => import('./files.js').then((m) => m.importPage),
  invite: () => import('./team.js').then((m) => m.invitePage),
  reset: () => import('./team.js').then((m) => m.resetPage),
  queue: () => import('./queue.js').then((m) => m.queuePage),  // (issue 26: a channel's queue)
  autopost: () => import('./autopost.js').then((m) => m.autopostPage),
};
// (labels translated when drawn: t() needs the language loaded first)
const NAV = [['calendar', toTranslate('Calendar')], ['queue', toTranslate('Queue')], ['compose', toTranslate('New post')], ['import', toTranslate('Import')], ['channels', toTranslate('Channels')], ['library', toTranslate('Media')], ['notifications', toTranslate('Notifications')], ['review', toTranslate('To review')], ['autopost', toTranslate('RSS feeds')], ['settings', toTranslate('Settings')]];

// --- theme: the system's scheme, or the person's choice kept in this browser --------------------------------
const THEME = 'rustiz.theme';
function applyTheme(choice = localStorage.getItem(THEME) || 'system') {
  if (choice === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = choice;
}
applyTheme();

function preferenceSwitches() {
  const theme = h('select', { 'aria-label': t('Theme'), onchange: () => { localStorage.setItem(THEME, theme.value); applyTheme(theme.value); } },
    [['system', t('Theme: system')], ['light', t('Theme: light')], ['dark', t('Theme: dark')]].map(([value, label]) =>
      h('option', { value, selected: (localStorage.getItem(THEME) || 'system') === value }, label)));
  const language = h('select', { 'aria-label': t('Language'), onchange: async () => {
    await chooseLanguage(language.value);
    if (session.organization) shell(); else loginPage();
  } }, LANGUAGES.map(([code, name]) => h('option', { value: code, selected: code === lang() }, name)));
  return h('div.switches', language, theme);
}

function signIn(result) {
  session.organization = result.organization;
  session.csrfToken = result.csrfToken;
  session.role = result.role || 'admin';
  session.user = result.user || null;
  session.organizations = result.organizations || [];
}

// What each role sees in the navigation (the server refuses the rest anyway, naming the role needed).
const NAV_ROLES = { compose: 'author', import: 'editor', review: 'editor' };

/** The organization's name, or a switcher for a person who is a member of several. */
function organizationSwitcher() {
  if (session.organizations.length < 2) return h('span.org', session.organization.name);
  const picker = h('select.org-switch', { 'aria-label': t('Organization'), onchange: async () => {
    try {
      signIn(await api('POST', '/auth/switch', { organization: picker.value }));
      window.dispatchEvent(new CustomEvent('rustiz:zone'));
      shell();
      go('#/calendar');
    } catch (error) {
      picker.value = session.organization.id;
      const box = errorBox();
      picker.after(box);
      box.show(error);
    }
  } }, session.organizations.map((org) => h('option', { value: org.id, selected: org.id === session.organization.id }, org.name)));
  return picker;
}

const ROLE_LABELS = { viewer: toTranslate('Viewer'), author: toTranslate('Author'), editor: toTranslate('Editor'), admin: toTranslate('Admin') };
/** Who is signed in and as what ("Ana · Editor"); nothing for a session signed in with the API key. */
function personLabel() {
  if (!session.user) return null;
  return h('span.person', { title: session.user.email }, `${session.user.name || session.user.email} · ${t(ROLE_LABELS[session.role])}`);
}

// rustiz's OAuth callback sends a browser here (#/connect?resume=<the callback>) when it came back from the
// platform without its session cookie: signed out, or through a cross-site redirect, which never carries a
// SameSite=Strict cookie. Once signed in, the browser opens the callback again, now with the cookie. The consent
// page of an MCP client (GET /oauth/authorize) comes back the same way.
function connectionToResume() {
  const [name, search] = location.hash.replace(/^#\/?/, '').split('?');
  const resume = name === 'connect' ? new URLSearchParams(search || '').get('resume') : null;
  return resume && /^\/(integrations\/social\/[A-Za-z0-9_-]+|oauth\/authorize)\?[^#]*$/.test(resume) ? resume : null;
}

function resumeConnection() {
  const resume = connectionToResume();
  if (resume) location.replace(resume);
  return resume !== null;
}

function loginPage(message) {
  const [open, search] = location.hash.replace(/^#\/?/, '').split('?');  // an invite, a forgotten password: team.js
  if (['invite', 'forgot', 'reset'].includes(open)) { import('./team.js').then((m) => m.signedOutPage(app, open, new URLSearchParams(search || ''), preferenceSwitches())); return; }
  document.title = `${t('Sign in')} · rustiz`;
  const errors = errorBox();
  const key = h('input', { type: 'password', name: 'apiKey', autocomplete: 'current-password', spellcheck: 'false' });
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'username' });
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'current-password' });
  const submit = h('button.primary', { type: 'submit' }, t('Sign in'));
  let withKey = true;
  const keyPart = h('div', field(t('API key'), key, t('Printed by `rustiz init` (or `rustiz key rotate`); also in config.env as RUSTIZ_API_KEY.')));
  const passwordPart = h('div', { hidden: true }, field(t('Email'), email), field(t('Password'), password, t('Set by the operator with `rustiz user add`.')), h('p', h('a', { href: '#/forgot' }, t('Forgot password?'))));
  const toggle = h('button.link', { type: 'button', onclick: () => {
    withKey = !withKey;
    keyPart.hidden = !withKey;
    passwordPart.hidden = withKey;
    toggle.textContent = withKey ? t('Sign in with email and password instead') : t('Sign in with the API key instead');
    (withKey ? key : email).focus();
  } }, t('Sign in with email and password instead'));
  const form = h('form.card.login', { onsubmit: async (event) => {
    event.preventDefault();
    errors.show(null);
    submit.disabled = true;
    try {
      const body = withKey ? { apiKey: key.value.trim() } : { email: email.value.trim(), password: password.value };
      signIn(await api('POST', '/auth/login', body));
      if (resumeConnection()) return;
      if (!location.hash || location.hash.startsWith('#/login')) location.hash = '#/calendar';
      shell();
    } catch (error) {
      errors.show(error.status === 401 || error.status === 400 ? error : new Error(t('Could not sign in: {reason}', { reason: error.message })));
      errors.focus();
    } finally {
      submit.disabled = false;
    }
  } },
  h('h1', h('img', { src: '/web/icon.svg', alt: '', width: 32, height: 32 }), ' rustiz'),
  message ? h('p.notice', message) : null, keyPart, passwordPart, errors, submit, toggle, preferenceSwitches());
  app.replaceChildren(h('main#main.center', form));
  key.focus();
  import('./sso.js').then((m) => m.offerSingleSignOn(form, { errors, toggle, passwordPart }));
}

let current = null;
async function render() {
  if (!session.organization) return;
  const [name, ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  const route = routes[name.split('?')[0]] ? name.split('?')[0] : 'calendar';
  const query = new URLSearchParams(location.hash.split('?')[1] || '');
  for (const link of document.querySelectorAll('nav.top a')) {
    if (link.dataset.route === route) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const main = document.getElementById('main');
  const token = (current = {});
  const page = await routes[route]();
  if (token !== current) return;
  const title = t(NAV.find(([r]) => r === route)?.[1] || toTranslate('Post'));
  document.title = `${title} · rustiz`;
  const container = h('div.page');  // a render overtaken by another writes into a detached element
  main.replaceChildren(container);
  try {
    await page(container, { id: rest.join('/').split('?')[0], query });
  } catch (error) {
    const box = errorBox();
    container.append(box);
    box.show(error);
  }
}

function shell() {
  const zoneLabel = h('span.zone', { title: t('Every time is shown in this timezone (change it in Settings)') }, t('Times in {zone}', { zone: zone() }));
  window.addEventListener('rustiz:zone', () => { zoneLabel.textContent = t('Times in {zone}', { zone: zone() }); });
  const logout = h('button.link', { type: 'button', onclick: async () => {
    try { await api('POST', '/auth/logout'); } catch { /* signed out anyway */ }
    session.organization = null;
    loginPage(t('Signed out.'));
  } }, t('Sign out'));
  // On a phone the links, the organization and the switches fold behind Menu: the page starts right below.
  const menu = h('button.menu', { type: 'button', 'aria-expanded': 'false', 'aria-controls': 'nav-panel', onclick: () => {
    const open = menu.getAttribute('aria-expanded') !== 'true';
    menu.setAttribute('aria-expanded', String(open));
    panel.classList.toggle('open', open);
  } }, t('Menu'));
  const close = () => { panel.classList.remove('open'); menu.setAttribute('aria-expanded', 'false'); };
  const links = h('ul#nav-links', NAV.filter(([route]) => mayDo(NAV_ROLES[route] || 'viewer')).map(([route, label]) => h('li', h('a', { href: `#/${route}`, dataset: { route }, onclick: close },
    t(label), h('span.count-badge', { dataset: { count: route }, hidden: true })))));
  const panel = h('div#nav-panel.nav-panel', links,
    h('div.who', organizationSwitcher(), personLabel(), zoneLabel, preferenceSwitches(), logout));
  app.replaceChildren(
    h('header.top', h('a.brand', { href: '#/calendar' }, h('img', { src: '/web/icon.svg', alt: '', width: 24, height: 24 }), ' rustiz'),
      h('nav.top', { 'aria-label': t('Main') }, menu, panel)),
    h('main#main', { tabindex: '-1' }));
  render();
  refreshCounts();
}

// --- counts in the navigation: unread notifications, posts waiting for review -------------------------------
// Pages tell the shell with window events: 'rustiz:notifications-seen' (Notifications opened), 'rustiz:counts'
// (a post was approved, rejected or sent to review).
// The mark is the newest notification the page showed (the server's clock) or this browser's now, whichever is
// later: a server clock ahead of the browser's must not leave what was just read counted as unread.
const SEEN = 'rustiz.notifications-seen';  // when this browser last opened Notifications (ms)
window.addEventListener('rustiz:notifications-seen', (event) => {
  const newest = Date.parse(event.detail?.newest) || 0;
  localStorage.setItem(SEEN, String(Math.max(Date.now(), newest)));
  refreshCounts();
});

// Counts are fetched again on every event; only the latest asking may write the badges, or an earlier, slower
// answer would bring back a count just cleared.
let countsAsked = 0;
async function refreshCounts() {
  const asked = ++countsAsked;
  const show = (route, count, label) => {
    const badge = document.querySelector(`.count-badge[data-count="${route}"]`);
    if (!badge) return;
    badge.hidden = !count;
    badge.textContent = count > 99 ? '99+' : String(count);
    badge.setAttribute('aria-label', label);
  };
  try {
    const seen = Number(localStorage.getItem(SEEN) || 0);
    const { notifications = [] } = await api('GET', '/notifications');
    if (asked !== countsAsked) return;
    const unread = notifications.filter((n) => Date.parse(n.createdAt) > seen).length;
    show('notifications', unread, t('{n} unread', { n: unread }));
    const waiting = await api('GET', '/posts?state=review');
    if (asked !== countsAsked) return;
    const count = (waiting.posts || []).length;
    show('review', count, t('{n} waiting', { n: count }));
  } catch { /* counts are a convenience: the pages themselves say what failed */ }
}
window.addEventListener('rustiz:counts', refreshCounts);

// --- keyboard: n new post, t today, ? the list of shortcuts (arrows: the calendar's own) ------------------
const SHORTCUTS = [['n', toTranslate('New post')], ['t', toTranslate('Today in the calendar')], ['← →', toTranslate('Previous or next period in the calendar')], ['?', toTranslate('This list')]];
function showShortcuts() {
  const dialog = h('dialog.shortcuts', { 'aria-labelledby': 'shortcuts-title' },
    h('h2#shortcuts-title', t('Keyboard shortcuts')),
    h('dl', SHORTCUTS.map(([key, what]) => [h('dt', h('kbd', key)), h('dd', t(what))])),
    h('form', { method: 'dialog' }, h('button', { type: 'submit' }, t('Close'))));
  dialog.addEventListener('close', () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
}
document.addEventListener('keydown', (event) => {
  if (!session.organization || event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
  const target = event.target;
  if (target.closest?.('input, textarea, select, [contenteditable], dialog')) return;
  if (event.key === 'n') { event.preventDefault(); go('#/compose'); }
  else if (event.key === 't') { event.preventDefault(); window.dispatchEvent(new CustomEvent('rustiz:today')); if (!location.hash.startsWith('#/calendar')) go('#/calendar'); }
  else if (event.key === '?') { event.preventDefault(); showShortcuts(); }
});

window.addEventListener('hashchange', async () => {
  if (!session.organization) { loginPage(); return; }  // signed out: the sign-in page, or a page open to anyone
  await render();
  const main = document.getElementById('main');  // keyboard and screen-reader users land on the new page
  if (main && !main.contains(document.activeElement)) main.focus({ preventScroll: true });
});
window.addEventListener('rustiz:signed-out', () => {
  if (session.organization) { session.organization = null; loginPage(t('Your session ended: sign in again.')); }
});

(async () => {
  try { await loadLanguage(); } catch { /* English, the language every text is written in */ }
  try {
    const current = await api('GET', '/auth/session');  // {signedIn: false} when this browser has no session
    if (!current.signedIn) { loginPage(connectionToResume() ? t('Sign in to finish connecting your channel.') : undefined); return; }
    signIn(current);
    if (!resumeConnection()) shell();
  } catch {
    loginPage();
  }
})();
