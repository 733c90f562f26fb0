// Media library (#/library?page=N&search=…): every upload of the organization, newest first, searchable by name and
// alt text; each with its thumbnail (a video: an icon), type, size, dimensions, the posts using it, an editable alt
// text; upload; select and delete (a file queued posts still use is refused: those posts are listed by it).
// Rules: sizes and numbers in the person's locale (Intl.NumberFormat); one DELETE per item (the API's shape).
import { h, t, tn, put, lang, api, errorBox, field, mediaImage, fmtDateTime, stateLabel, go, mayDo } from './util.js';
import { confirmDialog } from './widgets.js';

const UNITS = ['byte', 'kilobyte', 'megabyte', 'gigabyte'];
/** "1.2 MB" in the locale's words and digits. */
export function fileSize(bytes) {
  let value = Number(bytes) || 0;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) { value /= 1000; unit += 1; }
  return new Intl.NumberFormat(lang(), { style: 'unit', unit: UNITS[unit], unitDisplay: 'short', maximumFractionDigits: unit ? 1 : 0 }).format(value);
}

const address = (page, search) => `#/library?${new URLSearchParams({ page: String(page), ...(search ? { search } : {}) })}`;

export async function libraryPage(main, { query }) {
  const page = Math.max(1, Number.parseInt(query.get('page'), 10) || 1);
  const search = (query.get('search') || '').slice(0, 200);
  const answer = await api('GET', `/media?${new URLSearchParams({ page: String(page), ...(search ? { search } : {}) })}`);
  const media = answer.media || [];
  const pages = Math.max(1, Number(answer.pages) || 1);
  const errors = errorBox();
  const said = h('p.muted', { role: 'status' });

  const file = h('input', { type: 'file', hidden: true, accept: 'image/*,video/mp4', multiple: true, 'aria-label': t('Files to upload'), onchange: async () => {
    errors.show(null);
    for (const [index, f] of [...file.files].entries()) {
      said.textContent = t('Uploading {name} ({n} of {total})…', { name: f.name, n: index + 1, total: file.files.length });
      const form = new FormData();
      form.append('file', f);
      try { await api('POST', '/upload', form); } catch (error) { errors.show(error); return; }
    }
    go(address(1, ''));
  } });
  const upload = h('button.primary', { type: 'button', onclick: () => file.click() }, t('Upload'));
  const searchBox = h('input', { type: 'search', name: 'search', value: search, maxlength: 200 });
  const deleteSelected = h('button.danger', { type: 'button', disabled: true, onclick: () => removeSelected() }, t('Delete selected'));
  const cards = media.map((m) => mediaCard(m, () => {
    const count = main.querySelectorAll('input.pick:checked').length;
    deleteSelected.disabled = !count;
    deleteSelected.textContent = count ? t('Delete selected ({n})', { n: count }) : t('Delete selected');
  }));

  async function removeSelected() {
    const picked = cards.filter((card) => card.querySelector('input.pick').checked);
    if (!picked.length || !await confirmDialog(t('Delete media'), tn('Delete {n} file from the library?', 'Delete {n} files from the library?', picked.length), t('Delete'))) return;
    errors.show(null);
    let refused = 0;
    for (const card of picked) {
      card.querySelector('.media-problem').replaceChildren();
      try {
        await api('DELETE', `/media/${encodeURIComponent(card.dataset.id)}`);
        card.remove();
      } catch (error) {
        refused += 1;
        put(card.querySelector('.media-problem'), ...refusal(error));
      }
    }
    said.textContent = refused ? tn('{n} file was not deleted: see why next to it.', '{n} files were not deleted: see why next to them.', refused) : t('Deleted.');
    if (!refused) go(address(page, search));
  }

  put(main, 
    h('div.page-head', h('h1', t('Media')), mayDo('author') ? [upload, file] : null),
    h('form.library-search', { role: 'search', onsubmit: (event) => { event.preventDefault(); go(address(1, searchBox.value.trim())); } },
      field(t('Search by name or alt text'), searchBox), h('button', { type: 'submit' }, t('Search')),
      search ? h('a.button', { href: address(1, '') }, t('Show all')) : null),
    mayDo('editor') ? h('div.bulk-actions', deleteSelected) : null, said, errors,
    media.length ? h('ul.media-grid', cards)
      : h('p.muted', search ? t('Nothing matches “{search}”.', { search }) : t('No media yet: upload pictures and videos here or in the composer.')),
    pages > 1 ? h('nav.pager', { 'aria-label': t('Pages') },
      page > 1 ? h('a.button', { href: address(page - 1, search) }, t('Newer')) : null,
      h('span.muted', t('Page {page} of {pages}', { page, pages })),
      page < pages ? h('a.button', { href: address(page + 1, search) }, t('Older')) : null) : null);
}

/** The lines of a refused DELETE: its message, and the queued posts still using the file as links. */
function refusal(error) {
  const usedBy = error.body?.usedBy || [];
  return [h('p', error.status === 409 ? t('Still used by these queued posts: change them first.') : error.message),
    usedBy.length ? h('ul.used-by', usedBy.map((p) => h('li', h('a', { href: `#/post/${p.id}` }, postLabel(p))))) : null];
}

const postLabel = (p) => `${p.integration?.name || t('Post')} · ${p.publishDate ? fmtDateTime(Date.parse(p.publishDate)) : ''} · ${stateLabel(p.state)}`;

function mediaCard(m, picked) {
  const title = m.originalName || m.name || t('Untitled');  // (the name it was uploaded with, not the stored one)
  const video = m.type === 'video' || /\.(mp4|mov|webm)$/i.test(m.path || '');
  const alt = h('textarea', { rows: 2, maxlength: 1000 }, m.alt || '');
  const errors = errorBox();
  const saved = h('small.muted', { role: 'status' });
  const uses = m.usedBy || [];
  const facts = [video ? t('Video') : t('Picture'), fileSize(m.size), m.width && m.height ? `${m.width.toLocaleString(lang())} × ${m.height.toLocaleString(lang())} px` : null].filter(Boolean);
  return h('li.media-card', { dataset: { id: m.id } },
    // Deleting and alt texts are an editor's (the server checks again); others read.
    mayDo('editor') ? h('label.pick-label', h('input.pick', { type: 'checkbox', onchange: picked }), h('span.sr-state', t('Select {name}', { name: title }))) : null,
    video ? h('span.video-thumb', { role: 'img', 'aria-label': t('Video') }, '▶') : mediaImage(m.path, m.alt || ''),
    h('strong.media-name', { title }, title),
    h('small.muted', facts.join(' · ')),
    h('small.used', uses.length ? [tn('Used in {n} post:', 'Used in {n} posts:', uses.length), ' ',
      uses.map((p, i) => [i ? ', ' : '', h('a', { href: `#/post/${p.id}`, title: postLabel(p) }, p.integration?.name || String(i + 1))])]
      : t('Not used in any post')),
    !mayDo('editor') ? (m.alt ? h('small', t('Alt: {text}', { text: m.alt })) : null) : h('form.alt-form', { onsubmit: async (event) => {
      event.preventDefault();
      errors.show(null);
      try {
        await api('PUT', `/media/${encodeURIComponent(m.id)}`, { alt: alt.value.trim() });
        saved.textContent = t('Saved');
      } catch (error) { errors.show(error); }
    } }, field(t('Alt text of {name}', { name: title }), alt), h('button', { type: 'submit' }, t('Save alt text')), ' ', saved),
    h('div.media-problem', { role: 'alert' }), errors);
}
