// Character counting by the rules the providers' descriptors name (GET /public/v1/providers: `counting`),
// exactly as the server counts before it accepts a post (rustiz_features/text.py, counted_length), so a
// counter never says "fits" about a post the server refuses. The composer sends each line as a <p>:
// - characters, x-weighted: Postiz's own check counts that HTML without its tags, so line breaks vanish
//   and &, <, > and no-break spaces count as the entities they are stored as (&amp; is 5);
// - graphemes, mastodon, telegram-html: the text the platform receives, its lines joined by line breaks.

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

// User-perceived characters as the server finds them (text.py grapheme_count): combining marks,
// variation selectors, skin tones and ZWJ sequences join what they follow; a flag is two regional
// indicators; Hangul jamo join into syllables.
const MARK = /\p{M}/u;
const isExtender = (c) => MARK.test(String.fromCodePoint(c)) || c === 0x200c || c === 0x200d || (c >= 0xfe00 && c <= 0xfe0f)
  || (c >= 0xe0100 && c <= 0xe01ef) || (c >= 0x1f3fb && c <= 0x1f3ff) || (c >= 0xe0020 && c <= 0xe007f);
const PICTOGRAPHS = [[0x1f000, 0x1f1e5], [0x1f200, 0x1faff], [0x2600, 0x27bf], [0x2300, 0x23ff], [0x2b00, 0x2bff],
  [0x1fc00, 0x1fffd], [0x2194, 0x21aa]];
const PICTOGRAPH_POINTS = new Set([0xa9, 0xae, 0x203c, 0x2049, 0x2122, 0x2139, 0x3030, 0x303d, 0x3297, 0x3299]);
const isPictograph = (c) => PICTOGRAPH_POINTS.has(c) || PICTOGRAPHS.some(([lo, hi]) => c >= lo && c <= hi);
const isFlagHalf = (c) => c >= 0x1f1e6 && c <= 0x1f1ff;
function hangul(c) {
  if ((c >= 0x1100 && c <= 0x115f) || (c >= 0xa960 && c <= 0xa97c)) return 'L';
  if ((c >= 0x1160 && c <= 0x11a7) || (c >= 0xd7b0 && c <= 0xd7c6)) return 'V';
  if ((c >= 0x11a8 && c <= 0x11ff) || (c >= 0xd7cb && c <= 0xd7fb)) return 'T';
  if (c >= 0xac00 && c <= 0xd7a3) return (c - 0xac00) % 28 === 0 ? 'LV' : 'LVT';
  return '';
}
const HANGUL_JOINS = { L: ['L', 'V', 'LV', 'LVT'], LV: ['V', 'T'], V: ['V', 'T'], LVT: ['T'], T: ['T'] };

export function graphemes(text) {
  let count = 0;
  let previous = null;
  let pictographicRun = false; // the cluster so far is a pictograph followed only by extenders
  let flagHalves = 0; // regional indicators in a row
  for (const ch of text) {
    const c = ch.codePointAt(0);
    let joins = false;
    if (previous !== null) {
      if (previous === 0x0d && c === 0x0a) joins = true;
      else if (previous === 0x0a || previous === 0x0d) joins = false;
      else if (isExtender(c)) joins = true;
      else if (previous === 0x200d && pictographicRun && isPictograph(c)) joins = true;
      else if (isFlagHalf(c) && isFlagHalf(previous)) joins = flagHalves % 2 === 1;
      else joins = (HANGUL_JOINS[hangul(previous)] || []).includes(hangul(c));
    }
    if (!joins) {
      count++;
      pictographicRun = isPictograph(c);
    } else if (!(isExtender(c) || isPictograph(c))) pictographicRun = false;
    flagHalves = isFlagHalf(c) ? flagHalves + 1 : 0;
    previous = c;
  }
  return count;
}

// Mastodon: every http(s) link counts as the instance's characters per URL, a remote mention as its @user.
const WORD = '\\p{L}\\p{N}_';
const MASTODON_URL = new RegExp(`(?<![${WORD}])https?://[^\\s<>"]*[^\\s<>".,:;!?'()\\]]`, 'giu');
const REMOTE_MENTION = new RegExp(`(?<![${WORD}@/])@([${WORD}]+)@[${WORD}.-]*[${WORD}]`, 'gu');
export function mastodonLength(text, charactersPerUrl) {
  text = text.replace(REMOTE_MENTION, '@$1');
  const links = (text.match(MASTODON_URL) || []).length;
  return graphemes(text.replace(MASTODON_URL, '')) + links * charactersPerUrl;
}

const storedText = (text) => text.replace(/\n/g, '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
  .replace(/\u00a0/g, '&nbsp;');
const sentText = (text) => text.replace(/\n{3,}/g, '\n\n').trim();

/** {length, unit} of the composer's text by a descriptor's counting rule; `limits` are its descriptor's. */
export function measure(rule, text, limits = {}) {
  if (rule === 'x-weighted') return { length: xWeightedLength(storedText(text)), unit: 'weighted' };
  if (rule === 'graphemes') return { length: graphemes(sentText(text)), unit: 'characters' };
  if (rule === 'mastodon') return { length: mastodonLength(sentText(text), limits.charactersReservedPerUrl), unit: 'characters' };
  if (rule === 'telegram-html') return { length: sentText(text).length, unit: 'characters' }; // UTF-16 code units
  return { length: [...storedText(text)].length, unit: 'characters' };
}
