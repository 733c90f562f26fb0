// Post detail, To review and Notifications.
// Rules: every text through t(); times in the organization's zone; no null child ever reaches the page (h/put skip
// them); a decision that changes what the navigation counts tells the shell ('rustiz:counts').
import { h, t, tn, put, avatar, mediaImage, api, errorBox, field, providers, zone, fmtDay, fmtDateTime, htmlToText, stateBadge, toLocalInput, fromLocalInput, go, safeUrl, mayDo } from './util.js';
import { figuresBox } from './widgets.js';
import { deletePosts } from './delete-post.js';
import { postHistory } from './analytics.js';

// --- post detail ----------------------------------------------------------------------------------

const isVideo = (path) => /\.(mp4|mov|webm)$/i.test(path || '');
const mediaList = (images) => ((images || []).length ? h('ul.media', images.map((m) => h('li',
  isVideo(m.path) ? h('video', { src: m.path, controls: true }) : mediaImage(m.path, m.alt || ''),
  m.alt ? h('small', t('Alt: {text}', { text: m.alt })) : null))) : null);

export async function postPage(main, { id }) {
  const [post, known] = await Promise.all([api('GET', `/posts/${id}`), providers().catch(() => ({}))]);
  const errors = errorBox();
  const parts = [post, ...(post.thread || [])];
  const failed = parts.some((p) => p.state === 'ERROR');
  const editable = parts.every((p) => p.state !== 'PUBLISHED' && p.state !== 'PUBLISHING');
  const at = Date.parse(post.publishDate);
  const calendar = `#/calendar?date=${toLocalInput(at).slice(0, 10)}`;
  const channel = post.integration || {};
  // What the person's role lets them do here (the server checks again): an author edits drafts (their own).
  const editor = mayDo('editor');

  const actions = h('div.actions',
    failed && editor ? h('button.primary', { type: 'button', onclick: async () => {
      try { await api('POST', `/posts/${id}/retry`); go(`#/post/${id}`); } catch (error) { errors.show(error); }
    } }, t('Retry')) : null,
    editable && (editor || (mayDo('author') && post.state === 'DRAFT')) ? h('a.button', { href: `#/compose/${id}` }, t('Edit')) : null,
    mayDo('author') ? h('button', { type: 'button', onclick: async () => {
      errors.show(null);
      try {
        const copy = await api('POST', `/posts/${id}/duplicate`);
        go(`#/compose?edit=${encodeURIComponent(copy.posts[0].id)}`);  // (the copy on all its channels)
      } catch (error) { errors.show(error); }
    } }, t('Duplicate')) : null,
    editor ? h('button.danger', { type: 'button', onclick: async () => {
      try { if (await deletePosts([post])) go(calendar); } catch (error) { errors.show(error); }  // (issue 28: on its platform too)
    } }, t('Delete')) : null,
    h('a.button', { href: calendar }, t('Back to calendar')));

  let reschedule = null;
  if (editor && (post.state === 'QUEUE' || post.state === 'DRAFT')) {
    const input = h('input', { type: 'datetime-local', value: toLocalInput(at) });
    reschedule = h('form.inline', { onsubmit: async (event) => {
      event.preventDefault();
      try { await api('PUT', `/posts/${id}`, { date: new Date(fromLocalInput(input.value)).toISOString() }); go(`#/post/${id}`); } catch (error) { errors.show(error); }
    } }, field(t('Reschedule ({zone})', { zone: zone() }), input), h('button', { type: 'submit' }, t('Move')));
  }

  const partView = (p, i) => h(`li.part-view.st-${p.state}`, { dataset: { state: p.state } },
    h('div.part-head', stateBadge(p.state), ' ', i === 0 ? t('Post') : t('Thread part {n}', { n: i + 1 }),
      i && p.delay ? h('span.muted', ' · ', tn('{n} minute after the part before', '{n} minutes after the part before', p.delay)) : null,
      // a reply waiting for its delay goes out later than the post: say when (the API works it out)
      i && p.goesOutAt ? h('span.goes-out', ' · ', t('goes out'), ' ', h('time', { datetime: p.goesOutAt }, fmtDateTime(Date.parse(p.goesOutAt)))) : null),
    h('p.content', htmlToText(p.content)),
    mediaList(p.image),
    p.error ? h('div.post-error', { role: 'alert' }, h('strong', t('Error:')), ' ', h('span.error-text', p.error)) : null,
    safeUrl(p.releaseURL) ? h('p', h('a.release', { href: safeUrl(p.releaseURL), target: '_blank', rel: 'noopener noreferrer' }, t('View it on the platform ↗'))) : null);

  const platform = known[channel.providerIdentifier]?.name || channel.providerIdentifier;
  put(main,
    h('h1', t('Post'), ' ', stateBadge(post.state), post.evergreen ? h('span.badge.evergreen', t('Evergreen')) : null),
    h('dl.facts',
      h('dt', t('Channel')), h('dd.channel-fact', avatar(channel, 24), ' ', channel.name || t('Unknown channel'), platform ? h('span.muted', ` · ${platform}`) : null),
      h('dt', t('Time')), h('dd', h('time.when', { datetime: post.publishDate }, fmtDateTime(at)), h('span.muted', ` · ${zone()}`)),
      queueFacts(post)),
    post.review ? h('p.review-note', { role: 'note' }, post.review === 'review'
      ? [t('Made with a drafts API key: it waits for review before it is scheduled.'), ' ', h('a', { href: '#/review' }, t('Open To review'))]
      : [t('Rejected:'), ' ', h('span.review-reason', post.reviewReason || '')]) : null,
    h('ol.thread', parts.map(partView)),
    errors, actions, reschedule);
  if (post.state === 'PUBLISHED') put(main, figuresBox(`/analytics/post/${id}`, t('Figures from the platform')), postHistory(id));
  import('./comments.js').then((m) => main.isConnected && m.commentsPanel(main, post));  // (issue 25: comments, review links)
  import('./links.js').then((m) => main.isConnected && m.linksPanel(main, post)).catch(() => {});  // (issue 26: short links' clicks)

  if (parts.some((p) => p.state === 'QUEUE' || p.state === 'PUBLISHING') && at < Date.now() + 120000) {
    setTimeout(async function poll() {
      if (!main.isConnected || !location.hash.startsWith(`#/post/${id}`)) return;
      try {
        const fresh = await api('GET', `/posts/${id}`);
        const states = (x) => [x, ...(x.thread || [])].map((p) => p.state).join();
        if (states(fresh) !== states(post)) { go(`#/post/${id}`); return; }
      } catch { /* keep trying */ }
      setTimeout(poll, 1500);
    }, 1500);
  }
}

/** Issue 26: a queued post's place ("In the queue", a link to the channel's queue), a repeating post's rhythm,
 * its end and its next occurrences (GET /posts/:id `occurrences`). */
function queueFacts(post) {
  // (repeatUntil is a local day "YYYY-MM-DD", or an instant)
  const day = (iso) => fmtDay(Date.parse(iso.length === 10 ? `${iso}T12:00:00Z` : iso), { day: 'numeric', month: 'short', year: 'numeric', ...(iso.length === 10 ? { timeZone: 'UTC' } : {}) });
  const next = post.occurrences?.next || [];
  const last = post.occurrences?.last;
  const rhythm = post.intervalInDays ? [tn('every {n} day', 'every {n} days', post.intervalInDays),
    post.repeatUntil ? ` · ${t('until {date}', { date: day(post.repeatUntil) })}` : null,
    post.repeatCount ? ` · ${tn('{n} time in all', '{n} times in all', post.repeatCount)}` : null] : null;
  return [
    post.inQueue ? [h('dt', t('Queue')), h('dd.in-queue', t('In the queue'), ' · ', h('a', { href: `#/queue?channel=${encodeURIComponent(post.integration?.id || '')}` }, t('Open the queue')))] : null,
    rhythm ? [h('dt', t('Repeats')), h('dd.repeats', rhythm)] : null,
    rhythm && next.length ? [h('dt', t('Next')), h('dd', h('ol.occurrences', next.map((iso) => h('li', h('time', { datetime: iso }, fmtDateTime(Date.parse(iso)))))))] : null,
    rhythm && post.occurrences ? [h('dt', t('Last')), h('dd.last-occurrence', last ? h('time', { datetime: last }, fmtDateTime(Date.parse(last))) : t('No end'))] : null];
}

// --- review: drafts made with a drafts API key (agents), approved or rejected by a person -----------------

export async function reviewPage(main) {
  const [waiting, rejected] = await Promise.all([api('GET', '/posts?state=review'), api('GET', '/posts?state=rejected')]);
  // Each post whole (every part of its thread, media, settings), with the version the decision is bound to:
  // a change made after this page loaded is not approved unseen.
  const full = (posts) => Promise.all(posts.map((p) => api('GET', `/posts/${p.id}`).then((post) => ({ ...post, reviewReason: p.reviewReason }))));
  const [waitingPosts, rejectedPosts] = await Promise.all([full(waiting.posts), full(rejected.posts)]);
  const errors = errorBox();
  const chosen = () => waitingPosts.filter((p) => main.querySelector(`li.review-item[data-id="${CSS.escape(p.id)}"] input.pick`)?.checked);
  const reason = h('input', { type: 'text', maxlength: 2000 });
  // One request per post (the API decides one post at a time); what failed is said, the rest is done.
  const decideAll = async (decide) => {
    errors.show(null);
    const picked = chosen();
    if (!picked.length) { errors.show(new Error(t('Select the posts first.'))); return; }
    const outcomes = await Promise.allSettled(picked.map(decide));
    window.dispatchEvent(new CustomEvent('rustiz:counts'));
    const failures = outcomes.filter((o) => o.status === 'rejected');
    if (failures.length) errors.show(new Error(failures.map((o) => o.reason.message).join('\n')));
    else go('#/review');
  };
  const bulk = waitingPosts.length ? h('div.bulk-actions',
    h('label.field.check', h('input.pick-all', { type: 'checkbox', onchange: (event) => {
      for (const box of main.querySelectorAll('ul.review-list input.pick')) box.checked = event.target.checked;
    } }), t('Select all')),
    h('button.primary', { type: 'button', onclick: () => decideAll((p) => api('POST', `/posts/${p.id}/approve`, { version: p.version })) }, t('Approve selected')),
    field(t('Reason for rejecting the selected posts'), reason),
    h('button.danger', { type: 'button', onclick: () => {
      if (!reason.value.trim()) { errors.show(new Error(t('Say why first: the agent reads the reason.'))); reason.focus(); return; }
      decideAll((p) => api('POST', `/posts/${p.id}/reject`, { reason: reason.value.trim() }));
    } }, t('Reject selected'))) : null;
  put(main, h('h1', t('To review'), ' ', h('span.count-pill', { 'aria-label': tn('{n} waiting', '{n} waiting', waitingPosts.length) }, String(waitingPosts.length))),
    h('p.hint', t('Drafts written by authors of your team and by drafts API keys (agents). Approve schedules one at its date, or at the channel\'s next free posting time when that date has passed; reject keeps it as a draft with your reason, which its writer can read. Approve schedules exactly what is shown here: if its writer changes the post meanwhile, you are asked to look again.')));
  put(main, h('section.card', h('h2', t('Waiting ({n})', { n: waitingPosts.length })), bulk, errors,
    waitingPosts.length ? h('ul.review-list', waitingPosts.map((p) => reviewItem(p, true))) : h('p.muted', t('Nothing to review.'))));
  if (rejectedPosts.length) put(main, h('section.card', h('h2', t('Rejected ({n})', { n: rejectedPosts.length })), h('ul.rejected-list', rejectedPosts.map((p) => reviewItem(p, false)))));
}

const settingLabel = (name) => name.replace(/[_-]+/g, ' ').replace(/([a-z])([A-Z])/g, '$1 $2').replace(/^./, (c) => c.toUpperCase());
const settingValue = (value) => (typeof value === 'string' ? value : JSON.stringify(value));

function reviewItem(p, pickable) {
  const errors = errorBox();
  const reason = h('input', { type: 'text', required: true, maxlength: 2000 });
  const parts = [p, ...(p.thread || [])];
  const settings = Object.entries(p.settings && typeof p.settings === 'object' ? p.settings : {}).filter(([name]) => name !== '__type');
  const decided = (error) => {
    errors.show(error);
    if (error.status === 409) errors.append(h('button', { type: 'button', onclick: () => go('#/review') }, t('Show the post as it is now')));
  };
  const done = () => { window.dispatchEvent(new CustomEvent('rustiz:counts')); go('#/review'); };
  const name = p.integration?.name || t('Unknown channel');
  return h('li.review-item', { dataset: { id: p.id } },
    h('div.review-head', pickable ? h('input.pick', { type: 'checkbox', 'aria-label': t('Select the post on {name} at {time}', { name, time: fmtDateTime(Date.parse(p.publishDate)) }) }) : null,
      avatar(p.integration, 24), h('strong', name), ' · ', h('time', { datetime: p.publishDate }, fmtDateTime(Date.parse(p.publishDate))), ` (${zone()}) `,
      h('a', { href: `#/post/${p.id}` }, t('open'))),
    h('ol.review-parts', parts.map((part, i) => h('li.review-part',
      parts.length > 1 ? h('small.muted', i === 0 ? t('Post') : t('Thread part {n}', { n: i + 1 })) : null,
      h('p.content', htmlToText(part.content)), mediaList(part.image)))),
    settings.length ? h('dl.review-settings', { 'aria-label': t('Settings') }, settings.map(([key, value]) => [h('dt', settingLabel(key)), h('dd', settingValue(value))])) : null,
    p.reviewReason ? h('p.review-reason', t('Rejected:'), ' ', p.reviewReason) : null,
    h('form.inline', { onsubmit: async (event) => {
      event.preventDefault();
      errors.show(null);
      try { await api('POST', `/posts/${p.id}/reject`, { reason: reason.value.trim() }); done(); } catch (error) { decided(error); }
    } }, h('button.primary', { type: 'button', onclick: async () => {
      errors.show(null);
      try { await api('POST', `/posts/${p.id}/approve`, { version: p.version }); done(); } catch (error) { decided(error); }
    } }, t('Approve')), ' ', field(t('Reason'), reason), h('button.danger', { type: 'submit' }, t('Reject'))),
    errors);
}

// --- notifications --------------------------------------------------------------------------------

/** Where a notification's link goes: a page of this app (opened here) or elsewhere (a new tab, http(s) only). */
function notificationTarget(link) {
  const url = safeUrl(link);
  if (!url) return null;
  const hash = new URL(url).hash;
  if (new URL(url).origin !== location.origin || !hash.startsWith('#/')) return { href: url, external: true };
  return { href: hash, post: /^#\/post\/([^/?#]+)/.exec(hash)?.[1] || null };
}

export async function notificationsPage(main, { query }) {
  const page = Math.max(0, Number.parseInt(query.get('page'), 10) || 0);  // a link's ?page=abc is the first page
  const answer = await api('GET', `/notifications?page=${page}`);
  const newest = answer.notifications[0]?.createdAt;  // newest first
  window.dispatchEvent(new CustomEvent('rustiz:notifications-seen', { detail: { newest } }));
  // A notification names its post (postId; older ones only through an address of this app in `link`), and
  // may link elsewhere too (where the post went out).
  const targets = answer.notifications.map((n) => notificationTarget(n.link));
  const postOf = (n, target) => n.postId || target?.post || null;
  // The posts the notifications point at, once each: a failed one offers Retry in place.
  const postIds = [...new Set(answer.notifications.map((n, i) => postOf(n, targets[i])).filter(Boolean))];
  const states = Object.fromEntries(await Promise.all(postIds.map((postId) => api('GET', `/posts/${postId}`)
    .then((p) => [postId, p.state], () => [postId, null]))));
  const item = (n, target) => {
    const errors = errorBox();
    const postId = postOf(n, target);
    const retry = postId && states[postId] === 'ERROR' && mayDo('editor') ? h('button.primary', { type: 'button', onclick: async () => {
      errors.show(null);
      try { await api('POST', `/posts/${postId}/retry`); retry.replaceWith(h('span.notice', { role: 'status' }, t('Sent again: it goes out now.'))); } catch (error) { errors.show(error); }
    } }, t('Retry')) : null;
    const open = postId && states[postId] ? h('a', { href: `#/post/${encodeURIComponent(postId)}` }, t('Open the post'))
      : target && !target.external && !target.post ? h('a', { href: target.href }, t('Open')) : null;
    const outside = target?.external ? h('a', { href: target.href, target: '_blank', rel: 'noopener noreferrer' }, t('open ↗')) : null;
    return h('li', h('time', { datetime: n.createdAt }, fmtDateTime(Date.parse(n.createdAt))),
      h('p.notification-text', n.content), open || outside || retry ? h('div.notification-actions', open, outside, retry) : null, errors);
  };
  const pages = Math.max(1, Math.ceil((answer.total || 0) / (answer.limit || 100)));
  put(main, h('h1', t('Notifications')),
    answer.notifications.length ? h('ol.notifications', answer.notifications.map((n, i) => item(n, targets[i]))) : h('p.muted', t('Nothing yet.')),
    page > 0 || answer.hasMore ? h('nav.pager', { 'aria-label': t('Pages') },
      page > 0 ? h('a.button', { href: `#/notifications?page=${page - 1}` }, t('Newer')) : null,
      h('span.muted', t('Page {page} of {pages}', { page: page + 1, pages })),
      answer.hasMore ? h('a.button', { href: `#/notifications?page=${page + 1}` }, t('Older')) : null) : null);
}
