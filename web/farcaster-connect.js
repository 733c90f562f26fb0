// Farcaster's connect page (issue 28), where GET /public/v1/social/wrapcast sends the browser. Sign In With
// Neynar answers the page that opened its window with a postMessage (from its own origin, to an origin the
// operator authorized), never with a redirect; this page turns that answer into the usual OAuth callback
// (/integrations/social/wrapcast?code=&state=), Postiz's code being base64 JSON of the signer. The server checks
// the signer with Neynar: nothing here is trusted. A standalone page (no app shell), in the person's language.
import { t, loadLanguage, lang } from './i18n.js';

await loadLanguage();
document.documentElement.lang = lang();
document.getElementById('title').textContent = t('Connect Farcaster');
document.getElementById('hint').textContent = t('Sign in with Neynar in the window that opens and allow rustiz to cast for you; you come back to rustiz with the channel added.');
const query = new URLSearchParams(location.search);
const button = document.getElementById('sign-in');
button.textContent = t('Sign in with Neynar');
const problem = document.getElementById('problem');
let login = null;
let callback = null;
try {
  login = new URL(query.get('login') || '');
  callback = new URL(query.get('callback') || '', location.origin);
} catch { /* shown below */ }
const usable = login && callback && /^https?:$/.test(login.protocol) && callback.origin === location.origin
  && callback.pathname.endsWith('/integrations/social/wrapcast');
let popup = null;

function show(text) {
  problem.textContent = text;
  problem.hidden = false;
}

window.addEventListener('message', (event) => {
  if (!usable || event.origin !== login.origin || !event.data?.is_authenticated) return;
  popup?.close();
  const code = btoa(JSON.stringify({ signer_uuid: String(event.data.signer_uuid || ''), fid: event.data.user?.fid ?? event.data.fid }));
  callback.search = new URLSearchParams({ code, state: query.get('state') || '' }).toString();
  location.assign(callback.href);
});

button.addEventListener('click', () => {
  popup = window.open(login.href, 'neynar-sign-in', 'width=600,height=700');
  if (!popup) show(t('The browser blocked the sign-in window: allow pop-ups for this site, then try again.'));
});
if (!usable) {
  button.disabled = true;
  show(t('This link is incomplete: start again from the Channels page.'));
}
