// Small controls the pages share: a modal dialog, a confirmation, a "⋯" menu, copy to the clipboard.
// Rules: every control is reachable by keyboard (Escape closes a dialog or a menu and gives the focus back to what
// opened it); texts come translated from the caller or through t().
import { h, t, api, errorBox, lang, nextId } from './util.js';

/** Opens a modal <dialog> titled `title` holding `content`; it is removed from the page once closed. */
export function openDialog(title, ...content) {
  const opener = document.activeElement;
  const heading = h('h2', { id: nextId('dialog') }, title);
  const dialog = h('dialog.panel', { 'aria-labelledby': heading.id }, heading, ...content);
  dialog.addEventListener('close', () => { dialog.remove(); if (opener?.isConnected) opener.focus(); });
  document.body.append(dialog);
  dialog.showModal();
  return dialog;
}

/** Asks `question` in a dialog; resolves true when the person chose `yes` (a danger button). */
export function confirmDialog(title, question, yes) {
  return new Promise((resolve) => {
    let chosen = false;
    const dialog = openDialog(title, h('p', question), h('div.actions',
      h('button.danger', { type: 'button', onclick: () => { chosen = true; dialog.close(); } }, yes),
      h('button', { type: 'button', onclick: () => dialog.close() }, t('Cancel'))));
    dialog.addEventListener('close', () => resolve(chosen));
  });
}

/** A "⋯" button named `label` opening a menu of [text, action, {danger}] items (arrow keys move, Escape closes). */
export function menuButton(label, items) {
  const list = h('ul.menu-list', { role: 'menu', 'aria-label': label, hidden: true });
  const button = h('button.menu-button', { type: 'button', 'aria-haspopup': 'menu', 'aria-expanded': 'false', 'aria-label': label,
    title: label, onclick: () => (list.hidden ? open() : close()) }, '⋯');
  const entries = () => [...list.querySelectorAll('[role=menuitem]')];
  const outside = (event) => { if (!wrapper.contains(event.target)) close(false); };
  function open() {
    list.hidden = false;
    button.setAttribute('aria-expanded', 'true');
    entries()[0]?.focus();
    document.addEventListener('pointerdown', outside);
  }
  function close(refocus = true) {
    list.hidden = true;
    button.setAttribute('aria-expanded', 'false');
    document.removeEventListener('pointerdown', outside);
    if (refocus) button.focus();
  }
  for (const [text, action, options = {}] of items) {
    list.append(h('li', { role: 'none' }, h(`button${options.danger ? '.danger' : ''}`, { type: 'button', role: 'menuitem', tabindex: '-1',
      onclick: () => { close(); action(); } }, text)));
  }
  list.addEventListener('keydown', (event) => {
    const all = entries();
    const at = all.indexOf(document.activeElement);
    const moves = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: all.length - 1 };
    if (event.key in moves) { event.preventDefault(); all[(moves[event.key] + all.length) % all.length].focus(); }
    else if (event.key === 'Escape') { event.preventDefault(); event.stopPropagation(); close(); }
    else if (event.key === 'Tab') close(false);
  });
  const wrapper = h('div.menu-wrap', button, list);
  return wrapper;
}

/** Copies `text`; `report(message)` says whether it worked (a browser may refuse the clipboard). */
export async function copyText(text, report) {
  try {
    await navigator.clipboard.writeText(text);
    report(t('Copied'));
  } catch {
    report(t('Select it and copy it'));
  }
}

/** The platform's own counts (GET /analytics/...), drawn as small bars; nothing when it gives none. */
export function figuresBox(path, title) {
  const box = h('section.figures', { 'aria-label': title });
  api('GET', path).then((items) => {
    if (!Array.isArray(items) || !items.length) return;
    const totals = items.map((item) => Number(item.data?.[item.data.length - 1]?.total || 0));
    const top = Math.max(1, ...totals);
    const bar = (total) => { const el = h('span.bar'); el.style.width = `${Math.round((total / top) * 100)}%`; return el; };
    box.append(h('h2', title), h('ul.bars', items.map((item, i) => h('li',
      h('span.bar-label', item.label), bar(totals[i]), h('span.bar-total', totals[i].toLocaleString(lang()))))));
  }).catch((error) => { const errors = errorBox(); errors.show(error); box.append(errors); });
  return box;
}
