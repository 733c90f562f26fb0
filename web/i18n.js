// The words of the web app, in the person's language. Rules:
// - Every text a person reads goes through t('English text', {name: value}) or tn(one, other, n). The English
//   text is the key; web/locale-<code>.js maps it to that language (a test checks every t() text is in every
//   catalogue), and a text missing from a catalogue shows in English rather than as a key.
// - A list of labels translated when drawn (t(label)) writes each as toTranslate(<its English text>), for the catalogue.
// - Placeholders are {name}; values are inserted as text, never as HTML.
// - The language comes from the person's choice (the switch in the header, kept in this browser), else from
//   the browser's languages, else English. Dates and numbers follow it (lang() for Intl).

export const LANGUAGES = [['en', 'English'], ['es', 'Español'], ['fr', 'Français'], ['de', 'Deutsch'], ['pt', 'Português']];
const CATALOGUES = {
  es: () => import('./locale-es.js'), fr: () => import('./locale-fr.js'),
  de: () => import('./locale-de.js'), pt: () => import('./locale-pt.js'),
};
const STORED = 'rustiz.language';
let language = 'en';
let messages = {};

/** The language to show: the stored choice, else the first of the browser's languages we have, else English. */
export function chosenLanguage() {
  const wanted = [localStorage.getItem(STORED), ...(navigator.languages || [navigator.language])];
  for (const tag of wanted) {
    const code = String(tag || '').toLowerCase().split('-')[0];
    if (code === 'en' || CATALOGUES[code]) return code;
  }
  return 'en';
}

/** Loads a language's catalogue (English needs none); the page is drawn again by the caller. */
export async function loadLanguage(code = chosenLanguage()) {
  messages = CATALOGUES[code] ? (await CATALOGUES[code]()).default : {};
  language = CATALOGUES[code] ? code : 'en';
  document.documentElement.lang = language;
}

/** Remembers a choice of language in this browser and loads it. */
export async function chooseLanguage(code) {
  localStorage.setItem(STORED, code);
  await loadLanguage(code);
}

export const lang = () => language;

/** The text in the person's language, with {placeholders} filled. */
export function t(text, values) {
  const translated = messages[text] || text;
  return values ? translated.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole)) : translated;
}

/** Marks a text of a list for the catalogue (the list's items are translated when drawn: t(label)). */
export const toTranslate = (text) => text;

const plurals = new Map();
/** t() of the singular or the plural form, as the language counts n; {n} is the number in the locale's digits. */
export function tn(one, other, n) {
  if (!plurals.has(language)) plurals.set(language, new Intl.PluralRules(language));
  return t(plurals.get(language).select(n) === 'one' ? one : other, { n: n.toLocaleString(language) });
}
