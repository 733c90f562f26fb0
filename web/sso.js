// Single sign-on on the sign-in page: a "Sign in with <name>" button when the server has it (GET /auth/methods),
// the password form hidden when passwords are off, and what went wrong when the identity provider's sign-in came
// back refused (rustiz sends the browser to #/login?sso=<code>, with the e-mail for some codes). The page words
// each code itself, so a crafted link can show no text of its own (an e-mail address at most).
import { h, api, t } from './util.js';

const EMAIL = /^[^\s@<>"]{1,64}@[^\s@<>"]{1,255}$/;

function problemWords(code, email) {
  if (code.startsWith('token-')) return t("Your identity provider's answer did not pass rustiz's checks ({check}): ask your administrator.", { check: code.slice(6) });
  switch (code) {
    case 'not-member': return t('You are not a member of an organization here: ask an admin of your organization to invite {email}.', { email });
    case 'unverified': return t('Your identity provider has not verified {email}: verify it there, then sign in again.', { email });
    case 'no-email': return t('Your identity provider did not share your e-mail address with rustiz: ask your administrator.');
    case 'expired': return t('This sign-in expired or was already used: sign in again.');
    case 'other-browser': return t('This sign-in was started in another browser: sign in again here.');
    case 'denied': return t('The sign-in was cancelled at your identity provider.');
    case 'unreachable': return t('rustiz could not reach your identity provider: try again in a minute, or ask your administrator.');
    default: return t("Your identity provider refused the sign-in: ask your administrator to check rustiz's single sign-on settings.");
  }
}

// The words for #/login?sso=..., or null.
function ssoProblem() {
  const [name, search] = location.hash.replace(/^#\/?/, '').split('?');
  const query = new URLSearchParams(search || '');
  if (name !== 'login' || !query.get('sso')) return null;
  const email = EMAIL.test(query.get('email') || '') ? query.get('email') : t('your e-mail address');
  return problemWords(query.get('sso'), email);
}

export async function offerSingleSignOn(form, { errors, toggle, passwordPart }) {
  const problem = ssoProblem();
  if (problem) errors.show(new Error(problem));
  let methods;
  try { methods = await api('GET', '/auth/methods'); } catch { return; }  // (an older server: no button)
  if (!methods.sso) return;
  const name = methods.sso.name;
  const button = h('a.button.primary.sso', { href: '/auth/oidc/start' }, name ? t('Sign in with {name}', { name }) : t('Sign in with single sign-on'));
  form.querySelector('h1').after(button);
  if (!methods.password) { toggle.hidden = true; passwordPart.hidden = true; }
}
