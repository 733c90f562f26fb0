// Settings → Notifications: which e-mails the signed-in person gets from this organization (a post failed, a
// channel needs reconnecting, a draft waits for review, the daily digest), four switches saved one by one.
// Rules: each switch saves when flipped (PUT /me/notifications with that one field) and says its own error beside
// it, flipped back; failed/reconnect/review are for editors and admins (authors and viewers see them off and
// disabled); a session with no person (signed in with an API key) is told preferences need one.
import { h, t, toTranslate, put, api, mayDo } from './util.js';

const CHOICES = [
  ['failed', toTranslate('A post failed'), toTranslate('With the error and a link to retry or edit it.')],
  ['reconnect', toTranslate('A channel needs reconnecting'), toTranslate('The platform refused its credentials; its posts wait until it is reconnected.')],
  ['review', toTranslate('A draft waits for review'), toTranslate('An agent or an author wrote it; approve or reject it.')],
  ['digest', toTranslate('Daily digest'), toTranslate('At 08:00 in the organization\'s timezone: what went out yesterday, what is due today, what failed.')],
];

export async function notificationsTab(panel) {
  const card = h('section.card.mail-settings', h('h2', t('E-mail notifications')));
  put(panel, card);
  let preferences;
  try {
    preferences = await api('GET', '/me/notifications');
  } catch (error) {
    if (error.status === 403 || error.status === 400) {
      put(card, h('p.hint', t('E-mail notifications belong to a person: sign in with your e-mail and password to choose yours.')));
      return;
    }
    throw error;
  }
  const reviewer = mayDo('editor');
  put(card, h('p.hint', t('Choose the e-mails you get from this organization. Invites and password resets are always sent.')),
    h('ul.mail-switches', CHOICES.map(([name, label, hint]) => h('li', toggle(name, t(label), t(hint), preferences[name],
      name !== 'digest' && !reviewer)))),
    reviewer ? null : h('p.hint', t('The first three are for editors and admins, who can act on them.')));
}

/** One switch: a checkbox with role "switch", its label and hint, and its own status and error beside it. */
function toggle(name, label, hint, on, locked) {
  const id = `mail-${name}`;
  const status = h('span.muted.mail-status', { role: 'status', id: `${id}-status` });
  const error = h('span.mail-error', { role: 'alert', id: `${id}-error` });
  const input = h('input', { type: 'checkbox', role: 'switch', id, name, checked: Boolean(on), disabled: locked,
    'aria-describedby': `${id}-hint ${id}-status ${id}-error`, onchange: async () => {
      status.textContent = '';
      error.textContent = '';
      input.disabled = true;
      try {
        const answer = await api('PUT', '/me/notifications', { [name]: input.checked });
        input.checked = Boolean(answer[name]);
        status.textContent = t('Saved');
      } catch (failure) {
        input.checked = !input.checked;
        error.textContent = failure.message;
      } finally { input.disabled = false; }
    } });
  return h('div.mail-switch', input, h('label', { for: id }, label), h('small.hint', { id: `${id}-hint` }, hint), status, error);
}
