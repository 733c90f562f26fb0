// The team: Settings → Team (members and their roles, pending invites, the invite form), and the pages a signed-out
// visitor may open: an invite (#/invite?token=), "Forgot password?" (#/forgot) and a new password (#/reset?token=).
// Rules: an invite or reset link is shown once, when it is made (rustiz keeps only its hash): "Send again" makes a
// new one. Only admins manage the team (settings.js shows the tab to them alone; the API checks again).
import { h, t, toTranslate, put, api, errorBox, field, session, fmtDateTime } from './util.js';
import { copyText } from './widgets.js';

const ROLES = [['admin', toTranslate('Admin')], ['editor', toTranslate('Editor')], ['author', toTranslate('Author')], ['viewer', toTranslate('Viewer')]];
const roleName = (role) => t(ROLES.find(([id]) => id === role)?.[1] || role);

/** A <select> of the roles, `role` chosen, named `label` for screen readers. */
function roleSelect(role, label, onchange) {
  return h('select.role', { 'aria-label': label, onchange }, ROLES.map(([id, name]) => h('option', { value: id, selected: id === role }, t(name))));
}

/** A link to hand over, with a Copy button that says for two seconds whether it worked. */
function linkBox(text, url) {
  const button = h('button', { type: 'button', onclick: () => copyText(url, (message) => {
    button.textContent = message;
    setTimeout(() => { button.textContent = t('Copy'); }, 2000);
  }) }, t('Copy'));
  return [h('p', text), h('div.copy', h('code.invite-link', url), button)];
}

export async function teamTab(panel) {
  const errors = errorBox();
  const shown = h('div.invite-made', { role: 'status' });
  const members = h('ul.team-list');
  const invites = h('ul.team-list');
  const invitesCard = h('section.card', h('h2', t('Pending invites')), invites);
  async function load() {
    let listing;
    try { listing = await api('GET', '/members'); } catch (error) { errors.show(error); return; }
    members.replaceChildren(...listing.members.map(memberRow));
    invites.replaceChildren(...listing.invites.map(inviteRow));
    invitesCard.hidden = !listing.invites.length;
    if (!listing.members.length) members.append(h('li.muted', t('No members yet: only the API key signs in.')));
  }
  async function change(method, path, body) {
    errors.show(null);
    try { const answer = await api(method, path, body); await load(); return answer; } catch (error) { errors.show(error); errors.focus(); await load(); return null; }
  }
  function memberRow(member) {
    const who = member.name || member.email;
    const you = session.user?.id === member.id;
    return h('li.team-member', { dataset: { email: member.email } },
      h('div.who-is', h('strong', who, you ? ` (${t('you')})` : null), member.name ? h('small.muted', member.email) : null,
        h('small.muted', t('Member since {date}', { date: fmtDateTime(Date.parse(member.createdAt)) }))),
      roleSelect(member.role, t('Role of {name}', { name: who }), async (event) => {
        const changed = await change('PUT', `/members/${encodeURIComponent(member.id)}`, { role: event.target.value });
        if (changed && you && changed.role !== 'admin') location.reload();  // no longer an admin: what this person may see changed
      }),
      h('button.danger', { type: 'button', 'aria-label': t('Remove {name}', { name: who }), onclick: () => {
        if (confirm(t('Remove {name} from the organization? They are signed out at once.', { name: who }))) change('DELETE', `/members/${encodeURIComponent(member.id)}`);
      } }, t('Remove')));
  }
  function inviteRow(invite) {
    const expired = Date.parse(invite.expiresAt) <= Date.now();
    return h('li.team-invite', { dataset: { email: invite.email } },
      h('div.who-is', h('strong', invite.email), h('small.muted', `${roleName(invite.role)} · ${expired
        ? t('link expired {date}', { date: fmtDateTime(Date.parse(invite.expiresAt)) })
        : t('link works until {date}', { date: fmtDateTime(Date.parse(invite.expiresAt)) })}`)),
      h('button', { type: 'button', 'aria-label': t('Send the invite to {email} again', { email: invite.email }), onclick: async () => {
        const again = await change('POST', `/members/invites/${encodeURIComponent(invite.id)}/resend`);
        if (again) shown.replaceChildren(...linkBox(t('A new link for {email} (the old one no longer works):', { email: invite.email }), again.inviteUrl));
      } }, t('Send again')),
      h('button.danger', { type: 'button', 'aria-label': t('Revoke the invite to {email}', { email: invite.email }), onclick: () => {
        if (confirm(t('Revoke the invite to {email}? Its link stops working.', { email: invite.email }))) change('DELETE', `/members/invites/${encodeURIComponent(invite.id)}`);
      } }, t('Revoke')));
  }
  const email = h('input', { type: 'email', name: 'email', required: true, autocomplete: 'off', maxlength: 254 });
  const role = roleSelect('editor', t('Role'));
  role.removeAttribute('aria-label');
  put(panel, h('section.card', h('h2', t('Team')),
    h('p.hint', t('Admin: everything, including the team, channels, API keys and settings. Editor: every post (write, schedule, approve), no settings. Author: drafts that wait for review. Viewer: looks only.')),
    members, errors),
  invitesCard,
  h('section.card', h('h2', t('Invite someone')),
    h('p.hint', t('The invite link works once, for 7 days. Send it yourself, or it is e-mailed when rustiz can send e-mail.')),
    h('form.invite-form', { onsubmit: async (event) => {
      event.preventDefault();
      const made = await change('POST', '/members', { email: email.value.trim(), role: role.value });
      if (made) {
        shown.replaceChildren(...linkBox(t('The invite link for {email}:', { email: email.value.trim().toLowerCase() }), made.inviteUrl));
        email.value = '';
      }
    } }, field(t('Email'), email), field(t('Role'), role), h('button.primary', { type: 'submit' }, t('Invite'))), shown));
  await load();
}

// --- pages a signed-out visitor may open ----------------------------------------------------------------------

/** The card of a signed-out page: the brand, a heading, the content, and the language and theme switches. */
function signedOutCard(title, ...content) {
  return h('div.card.login', h('p.brand-line', h('img', { src: '/web/icon.svg', alt: '', width: 32, height: 32 }), ' rustiz'), h('h1', title), ...content);
}

const backToSignIn = () => h('p', h('a', { href: '#/login' }, t('Back to sign in')));

/** After a sign-in made here (an accepted invite): the app starts again, signed in. */
function startSignedIn() {
  history.replaceState(null, '', '#/calendar');
  location.reload();
}

export async function invitePage(main, { query }) {
  document.title = `${t('Invitation')} · rustiz`;
  let invite;
  try {
    invite = await api('GET', `/auth/invite?token=${encodeURIComponent(query.get('token') || '')}`);
  } catch (error) {
    const box = errorBox();
    put(main, signedOutCard(t('Invitation'), box, backToSignIn()));
    box.show(error);
    return;
  }
  let methods = { password: true, sso: null };  // (single sign-on, when the server has it, accepts the invite too)
  try { methods = await api('GET', '/auth/methods'); } catch { /* passwords, then */ }
  const sso = methods.sso ? [h('a.button.primary.sso', { href: '/auth/oidc/start' }, methods.sso.name ? t('Sign in with {name}', { name: methods.sso.name }) : t('Sign in with single sign-on')),
    h('p.hint', t('Sign in there with {email}: the invite is accepted as you sign in.', { email: invite.email }))] : null;
  const errors = errorBox();
  const name = h('input', { type: 'text', name: 'name', autocomplete: 'name', required: true, maxlength: 100 });
  const password = h('input', { type: 'password', name: 'password', required: true, minlength: invite.hasAccount ? null : 10,
    autocomplete: invite.hasAccount ? 'current-password' : 'new-password' });
  const submit = h('button.primary', { type: 'submit' }, t('Join'));
  put(main, signedOutCard(t('Join {organization}', { organization: invite.organization.name }),
    h('p', t('You are invited as {role}, with the email {email}.', { role: roleName(invite.role), email: invite.email })),
    sso,
    h('form', { hidden: !methods.password, onsubmit: async (event) => {
      event.preventDefault();
      errors.show(null);
      submit.disabled = true;
      try {
        const body = { token: query.get('token'), password: password.value };
        if (!invite.hasAccount) body.name = name.value.trim();
        await api('POST', '/auth/invite', body);
        startSignedIn();
      } catch (error) {
        errors.show(error);
        errors.focus();
        submit.disabled = false;
      }
    } },
    h('input', { type: 'email', name: 'email', value: invite.email, autocomplete: 'username', hidden: true, readonly: true, tabindex: -1, 'aria-hidden': 'true' }),
    invite.hasAccount
      ? [h('p.hint', t('You already have an account: give its password to join.')), field(t('Password'), password)]
      : [field(t('Your name'), name), field(t('Choose a password'), password, t('At least 10 characters.'))],
    errors, submit)));
  if (methods.password) (invite.hasAccount ? password : name).focus();
}

export async function forgotPage(main) {
  document.title = `${t('Forgot password?')} · rustiz`;
  const errors = errorBox();
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'username', required: true });
  const done = h('div', { role: 'status' });
  const submit = h('button.primary', { type: 'submit' }, t('Send the link'));
  put(main, signedOutCard(t('Forgot password?'),
    h('p', t('Give the email you sign in with: a link to set a new password is e-mailed to it. It works once, for an hour.')),
    h('form', { onsubmit: async (event) => {
      event.preventDefault();
      errors.show(null);
      submit.disabled = true;
      try {
        await api('POST', '/auth/forgot', { email: email.value.trim() });
        done.replaceChildren(h('p.notice', t('If this email has an account, the link is on its way. Nothing arrives? Ask your organization\'s admin, or whoever runs rustiz.')));
      } catch (error) { errors.show(error); errors.focus(); } finally { submit.disabled = false; }
    } }, field(t('Email'), email), errors, submit), done, backToSignIn()));
  email.focus();
}

export async function resetPage(main, { query }) {
  document.title = `${t('New password')} · rustiz`;
  const errors = errorBox();
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'new-password', required: true, minlength: 10 });
  const form = h('form', { onsubmit: async (event) => {
    event.preventDefault();
    errors.show(null);
    try {
      await api('POST', '/auth/reset', { token: query.get('token') || '', password: password.value });
      form.replaceWith(h('p.notice', { role: 'status' }, t('Your new password is set; every browser signed in with the old one is signed out.')));
    } catch (error) { errors.show(error); errors.focus(); }
  } }, field(t('New password'), password, t('At least 10 characters.')), errors, h('button.primary', { type: 'submit' }, t('Set the password')));
  put(main, signedOutCard(t('New password'), form, backToSignIn()));
  password.focus();
}

const OPEN_PAGES = { invite: invitePage, forgot: forgotPage, reset: resetPage };

/** Draws the signed-out page `name` (one of OPEN_PAGES) into `app`, with the language and theme `switches`. */
export async function signedOutPage(app, name, query, switches) {
  const main = h('main#main.center');
  app.replaceChildren(main);
  await OPEN_PAGES[name](main, { query });
  main.firstElementChild?.append(switches);
}
