// Telegram through this server's bot (issue 28, as Postiz): a one-time code that the user sends as /connect <code>
// in a channel or group where the bot is; rustiz sees it and adds the channel. The user's own bot (the pasted
// token below it) keeps working, and is what remains when the operator has set up no bot.
// Rules: the code and the bot's name come from GET /social/telegram; a code works once, for an hour.
import { h, t, api, errorBox } from './util.js';
import { copyText } from './widgets.js';

export function telegramConnect() {
  const errors = errorBox();
  const steps = h('div.telegram-steps', { hidden: true });
  const start = h('button.primary', { type: 'button', onclick: async () => {
    errors.show(null);
    start.disabled = true;
    try {
      showSteps(steps, await api('GET', '/social/telegram'));
      start.hidden = true;
    } catch (error) {
      if (error.body?.needsOperatorApp) errors.show(new Error(t('This server has no Telegram bot: connect your own bot below.')));
      else errors.show(error);
      start.disabled = false;
    }
  } }, t('Get a connect code'));
  return h('div.telegram-connect',
    h('p.hint', t("Use this server's bot: add it to your channel or group, then send it a one-time code.")),
    errors, start, steps, h('h4', t('Or use your own bot')));
}

function showSteps(steps, { code, bot }) {
  const command = `/connect ${code}`;
  const copied = h('span.hint', { role: 'status' });
  const link = (query, label) => h('a', { href: `https://t.me/${encodeURIComponent(bot)}?${query}`, target: '_blank', rel: 'noopener noreferrer' }, label);
  steps.replaceChildren(h('ol',
    h('li', t('Add @{bot} to your channel or group as an administrator that may post messages:', { bot }), ' ',
      link('startchannel=true&admin=post_messages+delete_messages', t('add to a channel')), ' · ',
      link('startgroup=true&admin=post_messages+delete_messages', t('add to a group'))),
    h('li', t('Send this message there:'), ' ', h('code.connect-command', command), ' ',
      h('button', { type: 'button', onclick: () => copyText(command, (text) => { copied.textContent = text; }) }, t('Copy')), ' ', copied),
    h('li', t('The channel appears in your list within a minute. The code works once, for an hour.'), ' ',
      h('button', { type: 'button', onclick: () => location.reload() }, t('Show my channels')))));
  steps.hidden = false;
}
