// Deleting a post, on its platforms too (issue 28): the confirmation offers "Also delete it on …" for the channels whose
// platform lets rustiz delete what it published, then shows what each platform did (DELETE /posts/:id?onPlatform=true).
// Rules: every text through t(); the box is unticked until the person ticks it; a channel that cannot delete is named.
import { h, t, api, errorBox, providers } from './util.js';
import { openDialog } from './widgets.js';

const published = (p) => p.state === 'PUBLISHED' || Boolean(p.releaseURL || p.releaseId);
const channelLabel = (p, known) => {
  const platform = known[p.integration?.providerIdentifier]?.name;
  const name = p.integration?.name || t('Unknown channel');
  return platform ? `${name} (${platform})` : name;
};

/** Asks, then deletes `posts` (GET /posts/:id views, or listing items: those published are read again). Resolves
 * false when the person cancelled; true once deleted (after the platforms' results are read, when asked for). */
export async function deletePosts(posts) {
  const [known, full] = await Promise.all([providers().catch(() => ({})),
    Promise.all(posts.map((p) => ('canDeleteOnPlatform' in p || !published(p) ? p : api('GET', `/posts/${p.id}`))))]);
  const able = full.filter((p) => published(p) && p.canDeleteOnPlatform);
  const unable = full.filter((p) => published(p) && !p.canDeleteOnPlatform);
  const also = able.length ? h('input.on-platform', { type: 'checkbox' }) : null;
  const errors = errorBox();
  const status = h('p.deleting', { role: 'status' });  // (a platform may take a few seconds to answer)
  const names = full.map((p) => p.integration?.name).filter(Boolean).join(', ');
  return new Promise((resolve) => {
    let done = false;
    const yes = h('button.danger', { type: 'button', onclick: async () => {
      yes.disabled = true;
      errors.show(null);
      try {
        const onPlatform = Boolean(also?.checked);
        if (onPlatform) status.textContent = t('Deleting it on the platforms…');
        const answers = [];
        for (const p of full) {
          const answer = await api('DELETE', `/posts/${p.id}${onPlatform ? '?onPlatform=true' : ''}`);
          if (onPlatform) answers.push(...answer.deleted.map((entry) => ({ entry, post: p })));
        }
        done = true;
        dialog.close();
        if (onPlatform) await showResults(answers, known);
        resolve(true);
      } catch (error) { yes.disabled = false; status.textContent = ''; errors.show(error); }
    } }, t('Delete'));
    const dialog = openDialog(t('Delete post'),
      h('p', names ? t('Delete this post and its thread on {channels}? This cannot be undone.', { channels: names })
        : t('Delete this post and its thread on this channel?')),
      also ? h('label.field.check.delete-on-platform', also,
        t('Also delete it on {channels}', { channels: able.map((p) => channelLabel(p, known)).join(', ') })) : null,
      unable.length ? h('p.hint.cannot-delete', t('{channels}: the platform does not let rustiz delete it; delete it there yourself.',
        { channels: unable.map((p) => channelLabel(p, known)).join(', ') })) : null,
      errors, status,
      h('div.actions', yes, h('button', { type: 'button', onclick: () => dialog.close() }, t('Cancel'))));
    dialog.addEventListener('close', () => { if (!done) resolve(false); });
  });
}

/** `text` with each web address in it as a link: a reason names what is left on a platform by its address, to delete
 * it there by hand (the addresses end before a space, a comma or a semicolon, as the server lists them). */
const withLinks = (text) => text.split(/(https?:\/\/[^\s,;]+)/).map((part, index) => (index % 2
  ? h('a', { href: part, target: '_blank', rel: 'noopener noreferrer' }, part) : part));

/** What each platform did: deleted there, or not (the server's reason, which names what is left). */
function showResults(answers, known) {
  return new Promise((resolve) => {
    const line = ({ entry, post }) => h(`li.${entry.deleted ? 'deleted' : 'not-deleted'}`, { dataset: { channel: entry.integration } },
      h('strong', entry.deleted ? t('Deleted on {channel}', { channel: channelLabel(post, known) })
        : t('Not deleted on {channel}', { channel: channelLabel(post, known) })),
      entry.reason && !(entry.deleted && entry.reason.startsWith('deleted on')) ? h('span.muted', ' · ', withLinks(entry.reason)) : null);
    const dialog = openDialog(t('Deleted in rustiz'), h('ul.delete-results', answers.map(line)),
      h('div.actions', h('button', { type: 'button', onclick: () => dialog.close() }, t('Close'))));
    dialog.addEventListener('close', () => resolve());
  });
}
