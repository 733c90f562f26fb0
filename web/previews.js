// Previews that look like each platform's post: its header (name, handle, avatar), the text with links,
// hashtags and mentions styled as the platform shows them, the media cropped as the platform crops it
// (a grid, a carousel, a video frame, a pin, a cover), and a thread as replies. Rules:
// - every provider gets a preview: STYLES names the ones with a look of their own, any other gets the
//   generic card (a test walks every identifier of GET /public/v1/providers);
// - only text nodes are made from the person's text (never HTML), and no image from outside rustiz;
// - colours come from CSS variables (app.css, composer section): brand colours only as accents.
import { h, t, avatar, mediaImage } from './util.js';

// identifier -> look (a CSS class pv-<look> and the header/media/footer below)
const STYLES = {
  x: 'x', threads: 'threads', bluesky: 'bluesky', mastodon: 'mastodon', nostr: 'x', wrapcast: 'x',
  instagram: 'instagram', 'instagram-standalone': 'instagram', linkedin: 'linkedin', 'linkedin-page': 'linkedin',
  facebook: 'facebook', vk: 'facebook', mewe: 'facebook', tumblr: 'facebook', gmb: 'facebook',
  tiktok: 'tiktok', 'tiktok-business': 'tiktok', youtube: 'youtube', kick: 'youtube', twitch: 'youtube',
  pinterest: 'pinterest', dribbble: 'pinterest', reddit: 'reddit', lemmy: 'reddit',
  discord: 'chat', slack: 'chat', telegram: 'chat', skool: 'chat', whop: 'chat', moltbook: 'chat',
  wordpress: 'blog', devto: 'blog', hashnode: 'blog', medium: 'blog', listmonk: 'blog',
};
/** The look a provider's preview takes ('card' for any without its own). */
export const lookOf = (identifier) => STYLES[identifier] || 'card';

const isVideo = (path) => /\.(mp4|mov|webm|m4v)(\?|$)/i.test(path || '');
const TOKEN = /(https?:\/\/[^\s<>]+[^\s<>.,:;!?)'"]|www\.[^\s<>]+[^\s<>.,:;!?)'"]|#[\p{L}\p{N}_]+|@[\p{L}\p{N}_]+(?:\.[\p{L}\p{N}_]+)*(?:@[\p{L}\p{N}_-]+(?:\.[\p{L}\p{N}_-]+)*)?)/u;

/** The text as the platform shows it: links, #hashtags and @mentions as styled spans (text only, never HTML). */
export function richText(text) {
  const out = [];
  for (const [i, piece] of String(text).split(TOKEN).entries()) {
    if (!piece) continue;
    if (i % 2 === 0) out.push(piece);
    else {
      const kind = piece[0] === '#' ? 'tag' : piece[0] === '@' ? 'mention' : 'link';
      // platforms shorten long links: X to 23 characters, the others to the host and a bit of the path
      out.push(h(`span.pv-${kind}`, kind === 'link' && piece.length > 32 ? `${piece.replace(/^https?:\/\/(www\.)?/, '').slice(0, 28)}…` : piece));
    }
  }
  return out;
}

function mediaItem(m, frame) {
  if (isVideo(m.path)) return h('video', { src: m.path, preload: 'metadata', muted: true, 'aria-label': m.alt || t('Video') });
  const img = mediaImage(m.path, m.alt || '');
  if (frame) img.classList.add(frame);
  return img;
}

/** The media as the look crops it: a grid of up to 4 (x, facebook...), a square carousel (instagram),
 * a tall or wide video frame (tiktok, youtube), one 2:3 pin, one wide cover (blog). */
function mediaFor(look, media) {
  if (!media.length) return null;
  if (look === 'instagram') {
    return h('div.pv-carousel', mediaItem(media[0]), media.length > 1
      ? h('span.pv-dots', { 'aria-label': t('{n} pictures in a carousel', { n: media.length }) }, media.map((_, i) => h(`i${i ? '' : '.on'}`))) : null);
  }
  if (look === 'tiktok' || look === 'youtube') return h(`div.pv-video.pv-${look}-frame`, mediaItem(media[0]), h('span.pv-play', { 'aria-hidden': 'true' }, '▶'));
  if (look === 'pinterest' || look === 'blog') return h(`div.pv-cover.pv-${look}-cover`, mediaItem(media[0]));
  const shown = media.slice(0, 4);
  return h(`div.pv-grid.n${shown.length}`, shown.map((m) => mediaItem(m)));
}

function header(look, channel, name, handle) {
  const who = h('span.pv-who', h('strong.pv-name', name), handle ? h('span.pv-handle', handle) : null);
  const when = { linkedin: t('Now'), facebook: t('Just now'), chat: t('Today') }[look];
  return h('header.pv-head', avatar(channel, 36), who, when ? h('span.pv-when', when) : null);
}

const FOOTERS = {
  x: ['Reply', 'Repost', 'Like', 'Share'], threads: ['Like', 'Reply', 'Repost', 'Share'], bluesky: ['Reply', 'Repost', 'Like'],
  mastodon: ['Reply', 'Boost', 'Favourite'], instagram: ['Like', 'Comment', 'Share', 'Save'], linkedin: ['Like', 'Comment', 'Repost', 'Send'],
  facebook: ['Like', 'Comment', 'Share'], reddit: ['Vote', 'Comment', 'Share'], pinterest: ['Save'], youtube: ['Like', 'Share'], tiktok: ['Like', 'Comment', 'Share'],
};
// (each platform's own words for its buttons; shown so the preview reads as the post will)
const ACTION_WORDS = { Reply: () => t('Reply'), Repost: () => t('Repost'), Like: () => t('Like'), Share: () => t('Share'), Boost: () => t('Boost'),
  Favourite: () => t('Favourite'), Comment: () => t('Comment'), Save: () => t('Save'), Send: () => t('Send'), Vote: () => t('Vote') };

/** One part (the post, or a reply of its thread) as the look shows it. */
function partView(look, channel, part, index, names) {
  const text = part.text || '';
  const reply = index > 0;
  const titled = (look === 'reddit' || look === 'blog' || look === 'pinterest') && !reply;
  const [first, ...rest] = text.split('\n');
  const title = titled ? (part.title || first) : '';
  const body = titled && !part.title ? rest.join('\n').trim() : text;
  const media = mediaFor(look, part.media || []);
  const bodyEl = h('p.pv-text', body ? richText(body) : (title || media ? null : h('span.muted', t('Nothing written yet'))));
  const inner = [];
  if (look === 'instagram' && !reply) inner.push(media, h('p.pv-text', h('strong', names.handle || names.name), ' ', richText(text)));
  else if (look === 'tiktok' || look === 'youtube') inner.push(media, h('p.pv-text', richText(text)));
  else if (titled) inner.push(look === 'blog' ? media : null, h('p.pv-title', richText(title)), bodyEl, look === 'blog' ? null : media);
  else inner.push(bodyEl, media);
  const footer = !reply && FOOTERS[look] ? h('footer.pv-actions', { 'aria-hidden': 'true' }, FOOTERS[look].map((word) => h('span', ACTION_WORDS[word]()))) : null;
  return h(`div.preview-part${reply ? '.reply' : ''}`, { dataset: { part: index } },
    reply && look !== 'chat' ? header(look, channel, names.name, names.handle) : null, inner, footer);
}

/** The preview of `channel`'s post (`parts`: [{text, media:[{path, alt}], title?}]) as its platform shows it. */
export function preview(channel, parts, providerName = '') {
  const look = lookOf(channel.identifier);
  const handle = channel.profile ? (look === 'reddit' ? `u/${channel.profile}` : look === 'blog' || look === 'chat' ? '' : `@${channel.profile}`) : '';
  const names = { name: channel.name || '', handle };
  const where = look === 'reddit' ? h('span.pv-community', channel.profile ? `r/${channel.profile}` : channel.name) : null;
  return h(`article.preview.pv-${look}`, { dataset: { channel: channel.id, look }, 'aria-label': t('How the post looks on {channel}', { channel: channel.name || providerName }) },
    h('p.pv-platform', providerName || channel.identifier), where,
    header(look, channel, names.name, names.handle),
    parts.map((part, index) => partView(look, channel, part, index, names)));
}
