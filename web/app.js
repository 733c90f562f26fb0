// rustiz web app: sign-in, the shell (navigation, timezone shown), and a hash router.
import { h, api, session, errorBox, field, zone } from './util.js';

const app = document.getElementById('app');
const routes = {
  calendar: () => import('./calendar.js').then((m) => m.calendarPage),
  compose: () => import('./composer.js').then((m) => m.composerPage),
  post: () => import('./pages.js').then((m) => m.postPage),
  channels: () => import('./pages.js').then((m) => m.channelsPage),
  settings: () => import('./pages.js').then((m) => m.settingsPage),
  notifications: () => import('./pages.js').then((m) => m.notificationsPage),
  review: () => import('./pages.js').then((m) => m.reviewPage),
  import: () => import('./files.js').then((m) => m.importPage),
};
const NAV = [['calendar', 'Calendar'], ['compose', 'New post'], ['import', 'Import'], ['channels', 'Channels'], ['notifications', 'Notifications'], ['review', 'To review'], ['settings', 'Settings']];

function signIn(result) {
  session.organization = result.organization;
  session.csrfToken = result.csrfToken;
}

// rustiz's OAuth callback sends a browser here (#/connect?resume=<the callback>) when it came back from the
// platform without its session cookie: signed out, or through a cross-site redirect, which never carries a
// SameSite=Strict cookie. Once signed in, the browser opens the callback again, now with the cookie.
function connectionToResume() {
  const [name, search] = location.hash.replace(/^#\/?/, '').split('?');
  const resume = name === 'connect' ? new URLSearchParams(search || '').get('resume') : null;
  return resume && /^\/integrations\/social\/[A-Za-z0-9_-]+\?[^#]*$/.test(resume) ? resume : null;
}

function resumeConnection() {
  const resume = connectionToResume();
  if (resume) location.replace(resume);
  return resume !== null;
}

function loginPage(message) {
  document.title = 'Sign in · rustiz';
  const errors = errorBox();
  const key = h('input', { type: 'password', name: 'apiKey', autocomplete: 'current-password', spellcheck: 'false' });
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'username' });
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'current-password' });
  const submit = h('button.primary', { type: 'submit' }, 'Sign in');
  let withKey = true;
  const keyPart = h('div', field('API key', key, 'Printed by `rustiz init` (or `rustiz key rotate`); also in config.env as RUSTIZ_API_KEY.'));
  const passwordPart = h('div', { hidden: true }, field('Email', email), field('Password', password, 'Set by the operator with `rustiz user add`.'));
  const toggle = h('button.link', { type: 'button', onclick: () => {
    withKey = !withKey;
    keyPart.hidden = !withKey;
    passwordPart.hidden = withKey;
    toggle.textContent = withKey ? 'Sign in with email and password instead' : 'Sign in with the API key instead';
    (withKey ? key : email).focus();
  } }, 'Sign in with email and password instead');
  const form = h('form.card.login', { onsubmit: async (event) => {
    event.preventDefault();
    errors.show(null);
    submit.disabled = true;
    try {
      const body = withKey ? { apiKey: key.value.trim() } : { email: email.value.trim(), password: password.value };
      signIn(await api('POST', '/auth/login', body));
      if (resumeConnection()) return;
      if (!location.hash || location.hash === '#/login') location.hash = '#/calendar';
      shell();
    } catch (error) {
      errors.show(error.status === 401 || error.status === 400 ? error : new Error(`Could not sign in: ${error.message}`));
      errors.focus();
    } finally {
      submit.disabled = false;
    }
  } },
  h('h1', h('img', { src: '/web/icon.svg', alt: '', width: 32, height: 32 }), ' rustiz'),
  message ? h('p.notice', message) : null, keyPart, passwordPart, errors, submit, toggle);
  app.replaceChildren(h('main#main.center', form));
  key.focus();
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
  const title = NAV.find(([r]) => r === route)?.[1] || 'Post';
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
  const zoneLabel = h('span.zone', { title: 'Every time is shown in this timezone (change it in Settings)' }, `Times in ${zone()}`);
  window.addEventListener('rustiz:zone', () => { zoneLabel.textContent = `Times in ${zone()}`; });
  const logout = h('button.link', { type: 'button', onclick: async () => {
    try { await api('POST', '/auth/logout'); } catch { /* signed out anyway */ }
    session.organization = null;
    loginPage('Signed out.');
  } }, 'Sign out');
  const menu = h('button.menu', { type: 'button', 'aria-expanded': 'false', 'aria-controls': 'nav-links', onclick: () => {
    const open = menu.getAttribute('aria-expanded') !== 'true';
    menu.setAttribute('aria-expanded', String(open));
    links.classList.toggle('open', open);
  } }, 'Menu');
  const links = h('ul#nav-links', NAV.map(([route, label]) => h('li', h('a', { href: `#/${route}`, dataset: { route }, onclick: () => { links.classList.remove('open'); menu.setAttribute('aria-expanded', 'false'); } }, label))));
  app.replaceChildren(
    h('header.top', h('a.brand', { href: '#/calendar' }, h('img', { src: '/web/icon.svg', alt: '', width: 24, height: 24 }), ' rustiz'),
      h('nav.top', { 'aria-label': 'Main' }, menu, links),
      h('div.who', h('span.org', session.organization.name), zoneLabel, logout)),
    h('main#main', { tabindex: '-1' }));
  render();
}

window.addEventListener('hashchange', async () => {
  await render();
  const main = document.getElementById('main');  // keyboard and screen-reader users land on the new page
  if (main && !main.contains(document.activeElement)) main.focus({ preventScroll: true });
});
window.addEventListener('rustiz:signed-out', () => {
  if (session.organization) { session.organization = null; loginPage('Your session ended: sign in again.'); }
});

(async () => {
  try {
    const current = await api('GET', '/auth/session');  // {signedIn: false} when this browser has no session
    if (!current.signedIn) { loginPage(connectionToResume() ? 'Sign in to finish connecting your channel.' : undefined); return; }
    signIn(current);
    if (!resumeConnection()) shell();
  } catch {
    loginPage();
  }
})();
