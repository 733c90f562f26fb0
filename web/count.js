// Character counting as each platform counts: X's weighted length (twitter-text), graphemes for
// Bluesky and Mastodon, code points elsewhere (what rustiz checks before publishing).

const LIGHT = [[0, 4351], [8192, 8205], [8208, 8223], [8242, 8247]];
const URL_RE = /(?:https?:\/\/|www\.)[^\s<>]+/gi;
const EMOJI_RE = /[\u{1F000}-\u{1FAFF}\u2600-\u27BF][\uFE0F\u{1F3FB}-\u{1F3FF}]*(?:\u200D[\u{1F000}-\u{1FAFF}\u2600-\u27BF\u2640\u2642][\uFE0F\u{1F3FB}-\u{1F3FF}]*)*/gu;

/** twitter-text v3 weighted length: URLs weigh 23, emoji 2, code points in the light ranges 1, others (CJK...) 2. */
export function xWeightedLength(text) {
  text = text.normalize('NFC');
  let length = 0;
  const urls = text.match(URL_RE) || [];
  for (const piece of text.split(URL_RE)) {
    const emoji = piece.match(EMOJI_RE) || [];
    length += 2 * emoji.length;
    for (const chunk of piece.split(EMOJI_RE)) {
      for (const ch of chunk) {
        const cp = ch.codePointAt(0);
        length += LIGHT.some(([lo, hi]) => cp >= lo && cp <= hi) ? 1 : 2;
      }
    }
  }
  return length + 23 * urls.length;
}

const segmenter = typeof Intl.Segmenter === 'function' ? new Intl.Segmenter(undefined, { granularity: 'grapheme' }) : null;
export function graphemes(text) {
  if (!segmenter) return [...text].length;
  let n = 0;
  for (const _ of segmenter.segment(text)) n++;
  return n;
}

const GRAPHEME_PROVIDERS = new Set(['bluesky', 'mastodon']);

/** {length, unit} of a post's plain text for a provider. Line breaks become paragraphs, which do not count. */
export function measure(provider, text) {
  const flat = text.replace(/\n/g, '');
  if (provider === 'x') return { length: xWeightedLength(flat), unit: 'weighted' };
  if (GRAPHEME_PROVIDERS.has(provider)) return { length: graphemes(flat), unit: 'characters' };
  return { length: [...flat].length, unit: 'characters' };
}
