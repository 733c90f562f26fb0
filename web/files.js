// Posts as files: import a JSON or CSV file (checked row by row first), and export a date window.
import { h, api, errorBox, field, zone, toLocalInput, fromLocalInput, t, tn } from './util.js';

/** JSON when the text starts as JSON does, else CSV: the Blob's type is the request's Content-Type. */
const asFile = (text) => new Blob([text], { type: /^\s*[[{]/.test(text) ? 'application/json' : 'text/csv' });

function rowList(rows) {
  return h('ol.import-rows', rows.map((row) => h(`li.${row.ok ? 'ok' : 'failed'}`, { dataset: { row: row.row } },
    h('strong', t('Row {n}: ', { n: row.row })), row.ok ? t('ok') : h('span', (row.errors || []).join(' / ')))));
}

export async function importPage(main) {
  const errors = errorBox();
  const results = h('div.import-results', { role: 'status' });
  const text = h('textarea', { rows: 12, spellcheck: 'false', name: 'file' });
  const picker = h('input', { type: 'file', accept: '.json,.csv,application/json,text/csv', onchange: async () => {
    const file = picker.files[0];
    if (file) text.value = await file.text();
  } });
  const allow = h('input', { type: 'checkbox', name: 'allowDuplicate' });
  const allowId = `allow-${Date.now()}`;
  allow.id = allowId;

  async function send(dryRun) {
    errors.show(null);
    results.replaceChildren();
    if (!text.value.trim()) { errors.show(new Error(t('Choose a file or paste its text first.'))); return; }
    const query = `?dryRun=${dryRun ? 1 : 0}&allowDuplicate=${allow.checked ? 1 : 0}`;
    for (const b of main.querySelectorAll('button')) b.disabled = true;
    try {
      const report = await api('POST', `/posts/import${query}`, asFile(text.value));
      results.append(h('p', dryRun ? tn('The row is fine: nothing was stored yet.', 'Every row is fine ({n}): nothing was stored yet.', report.rows.length)
        : tn('Imported {n} row.', 'Imported {n} rows.', report.rows.length)), rowList(report.rows));
      if (!dryRun) results.append(h('p', h('a', { href: '#/calendar' }, t('See them in the calendar'))));
    } catch (error) {
      errors.show(error);
      if (error.body?.rows) results.append(rowList(error.body.rows));
    } finally {
      for (const b of main.querySelectorAll('button')) b.disabled = false;
    }
  }

  main.append(h('h1', t('Import posts')),
    h('section.card',
      h('p.hint', t('A file made by Export (JSON), or a spreadsheet saved as CSV with the columns date, channel (the channel\'s id, shown on the Channels page), content, and optionally type, media, settings, tags, allowDuplicate, part2, part2Media… See "Posts as files" in the manual. Rows are stored all together, or none when one fails.')),
      field(t('File (JSON or CSV)'), picker),
      field(t('…or paste its text'), text),
      h('div.field.check', allow, h('label', { for: allowId }, t('Allow duplicates (the same text on a channel within 24 hours)'))),
      errors,
      h('div.actions',
        h('button', { type: 'button', onclick: () => send(true) }, t('Check first, store nothing')),
        h('button.primary', { type: 'button', onclick: () => send(false) }, t('Import'))),
      results),
    exportCard());
}

function exportCard() {
  const now = Date.now();
  const from = h('input', { type: 'date', value: toLocalInput(now).slice(0, 10) });
  const to = h('input', { type: 'date', value: toLocalInput(now + 90 * 86400000).slice(0, 10) });
  const link = (format) => h('a.button', { href: '#', onclick: (event) => {
    const start = new Date(fromLocalInput(`${from.value}T00:00`)).toISOString();
    const end = new Date(fromLocalInput(`${to.value}T23:59`) + 59999).toISOString();
    event.currentTarget.href = `/public/v1/posts/export?format=${format}&startDate=${start}&endDate=${end}`;
  }, download: `rustiz-posts.${format}` }, format === 'json' ? t('Export JSON') : t('Export CSV'));
  return h('section.card', h('h2', t('Export posts')),
    h('p.hint', t('Posts dated between the two days ({zone}), as a file to keep or import again.', { zone: zone() })),
    field(t('From'), from), field(t('To'), to), h('div.actions', link('json'), link('csv')));
}
