// "Update credentials" of a channel connected with pasted credentials: the provider's credential fields (from
// its descriptor), checked by the platform before anything changes; the channel keeps its id and posts.
import { h, api, errorBox, errorLines, field, ApiError, t } from './util.js';

const INPUT_TYPES = { url: 'url', text: 'text', secret: 'password' };

/** The inputs of a provider's credential fields: [[descriptor field, input]] (a list is one item a line). */
export function credentialInputs(provider) {
  return provider.credentials.map((f) => [f, f.kind === 'list'
    ? h('textarea', { name: f.key, rows: 3, placeholder: f.placeholder || undefined })
    : h('input', { type: INPUT_TYPES[f.kind] || 'text', name: f.key, placeholder: f.placeholder || undefined, autocomplete: 'off', spellcheck: 'false' })]);
}

/** The credentials object the inputs hold (empty optional fields left out). */
export function credentialsOf(inputs) {
  const credentials = {};
  for (const [f, input] of inputs) {
    const value = input.value.trim();
    if (value) credentials[f.key] = f.kind === 'list' ? value.split(/\s+/).filter(Boolean) : value;
  }
  return credentials;
}

/** A form that gives channel `c` (of `provider`) new credentials; `done()` after the platform accepted them. */
export function credentialsForm(c, provider, done) {
  const inputs = credentialInputs(provider);
  const fieldErrors = new Map(inputs.map(([f]) => [f.key, h('small.field-error', { role: 'alert', hidden: true })]));
  const errors = errorBox();
  const submit = h('button.primary', { type: 'submit' }, t('Save and check'));
  const showErrors = (error) => {
    const lines = error instanceof ApiError ? errorLines(error.body, error.status) : [String(error.message || error)];
    const general = [];
    for (const line of lines) {
      // "credentials.<key> ..." (or "credentials: ..." about them all): shown under that field
      const key = /^credentials\.([^.\s]+)/.exec(line)?.[1];
      const box = fieldErrors.get(key);
      if (box) { box.textContent = line.replace(/^credentials\.\S+\s/, ''); box.hidden = false; } else general.push(line);
    }
    if (general.length) errors.show(new Error(general.join('\n')));
  };
  const form = h('form.card.credentials-form', { 'aria-label': t('New credentials for {channel}', { channel: c.name }), onsubmit: async (event) => {
    event.preventDefault();
    errors.show(null);
    for (const box of fieldErrors.values()) box.hidden = true;
    submit.disabled = true;
    submit.textContent = t('Checking with {platform}…', { platform: provider.name });
    try {
      await api('PUT', `/integrations/${c.id}`, { credentials: credentialsOf(inputs) });
      done();
    } catch (error) {
      showErrors(error);
      const firstBad = [...fieldErrors.values()].find((box) => !box.hidden);
      (firstBad ? firstBad.parentElement.querySelector('input, textarea') : errors).focus();
    } finally {
      submit.disabled = false;
      submit.textContent = t('Save and check');
    }
  } },
  h('h3', t('New credentials for {channel}', { channel: c.name })),
  h('p.hint.guide', provider.guide),
  ...inputs.map(([f, input]) => {
    const wrapper = field(f.required ? f.label : t('{label} (optional)', { label: f.label }), input, f.help);
    wrapper.append(fieldErrors.get(f.key));
    return wrapper;
  }),
  h('p.hint', t('{platform} checks them first; the channel keeps its posts and settings, and the posts waiting for it go out at once.', { platform: provider.name })),
  errors,
  h('div.actions', submit, h('button', { type: 'button', onclick: () => form.remove() }, t('Cancel'))));
  return form;
}
