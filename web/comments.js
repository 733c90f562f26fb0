// A post's conversation and its review links (issue 25), under the post's page: the team's and clients' comments
// told apart, a box to add one, and "Share for review": a link a client opens without an account (how many days
// it lasts, whether the client may approve), shown with Copy and Revoke.
// Rules: every text through t(); times in the organization's zone; the link is shown once (rustiz keeps only a
// hash of it); a comment can be deleted by whoever wrote it (or an admin, the server decides).
import { h, t, put, api, errorBox, field, fmtDateTime, mayDo, session } from './util.js';
import { copyText } from './widgets.js';

const MAX_COMMENT = 5000;
// who wrote it: a person of the team, an API key, an agent through MCP, or a client through a review link
const BADGES = { user: () => t('Team'), key: () => t('API key'), mcp: () => t('Agent'), client: () => t('Client') };
const DECISIONS = { approved: () => t('approved the post'), changes: () => t('asked for changes') };

/** The comments and review-link panel of post `post` (GET /posts/:id's answer), appended to `main`. */
export async function commentsPanel(main, post) {
  const panel = h('section.comments-panel.card', { 'aria-labelledby': 'comments-title' });
  const list = h('ol.comment-list');
  const errors = errorBox();
  main.append(panel);

  const draw = async () => {
    try {
      const { comments } = await api('GET', `/posts/${post.id}/comments`);
      list.replaceChildren(...comments.map((c) => commentView(post.id, c, draw, errors)));
      if (!comments.length) list.append(h('li.muted.no-comments', t('No comments yet. Share the post for review to ask a client.')));
    } catch (error) { errors.show(error); }
  };

  const text = h('textarea', { rows: 3, maxlength: MAX_COMMENT, name: 'comment' });
  const form = !mayDo('author') ? null : h('form.comment-form', { onsubmit: async (event) => {
    event.preventDefault();
    errors.show(null);
    if (!text.value.trim()) { errors.show(new Error(t('Write a comment first.'))); return; }
    try {
      await api('POST', `/posts/${post.id}/comments`, { content: text.value });
      text.value = '';
      await draw();
    } catch (error) { errors.show(error); }
  } }, field(t('Add a comment'), text), h('button.primary', { type: 'submit' }, t('Comment')));

  put(panel, h('h2#comments-title', t('Comments')), list, errors, form,
    mayDo('editor') ? shareBox(post) : null);
  await draw();
}

function commentView(postId, c, redraw, errors) {
  const client = c.author.type === 'client';
  const mayDelete = c.own || session.role === 'admin';  // (the server decides the same)
  const remove = mayDelete ? h('button.link.comment-delete', {
    type: 'button', 'aria-label': t('Delete the comment of {name}', { name: c.author.name }), onclick: async () => {
      errors.show(null);
      try { await api('DELETE', `/posts/${postId}/comments/${c.id}`); await redraw(); } catch (error) { errors.show(error); }
    } }, t('Delete')) : null;
  return h(`li.comment.${client ? 'from-client' : 'from-team'}`, { dataset: { kind: c.kind, author: c.author.type } },
    h('p.comment-head', h('strong', c.author.name), ' ', h(`span.who-badge.${client ? 'client' : 'team'}`, BADGES[c.author.type]?.() || t('Team')),
      DECISIONS[c.kind] ? h('span.decision', ' ', DECISIONS[c.kind]()) : null,
      ' ', h('time.muted', { datetime: c.createdAt }, fmtDateTime(Date.parse(c.createdAt))), ' ', remove),
    c.content ? h('p.comment-text', c.content) : null);
}

/** "Share for review": makes a link (days, may the client approve), then shows it with Copy and Revoke. */
function shareBox(post) {
  const errors = errorBox();
  const days = h('input', { type: 'number', min: 1, max: 90, value: 7, required: true, name: 'days' });
  const approval = h('input', { type: 'checkbox', checked: post.review === 'review' || post.review === 'rejected', name: 'approval' });
  const made = h('div.share-made', { 'aria-live': 'polite' });
  const box = h('div.share-box',
    h('h3', t('Share for review')),
    h('p.hint', t('A link for a client without an account: they see the post as each channel shows it, comment, and may approve it.')));
  const form = h('form.share-form', { onsubmit: async (event) => {
    event.preventDefault();
    errors.show(null);
    try {
      const link = await api('POST', `/posts/${post.id}/preview-link`, { expiresInDays: Number(days.value), allowApproval: approval.checked });
      made.replaceChildren(linkView(post, link, made, errors));
    } catch (error) { errors.show(error); }
  } },
  field(t('Link lasts (days, 1 to 90)'), days),
  h('label.share-approval', approval, h('span', t('The client may approve or ask for changes'))),
  h('button', { type: 'submit' }, t('Make a review link')));
  return put(box, form, errors, made);
}

function linkView(post, link, made, errors) {
  const url = h('input.share-url', { type: 'text', readonly: true, value: link.url });
  const status = h('span.muted', { role: 'status' });
  return h('div.share-link',
    field(t('Review link'), url, t('Lasts until {date}. It is shown only now: copy it.', { date: fmtDateTime(Date.parse(link.expiresAt)) })),
    h('div.actions',
      h('button', { type: 'button', onclick: () => { url.select(); copyText(link.url, (text) => { status.textContent = text; }); } }, t('Copy')),
      h('button.danger', { type: 'button', onclick: async () => {
        errors.show(null);
        try {
          await api('DELETE', `/posts/${post.id}/preview-link?token=${encodeURIComponent(link.token)}`);
          made.replaceChildren(h('p.notice', { role: 'status' }, t('The link was revoked: it no longer opens.')));
        } catch (error) { errors.show(error); }
      } }, t('Revoke')),
      status));
}
