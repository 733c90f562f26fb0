// fr: the web app's texts (see web/i18n.js); keys are the English texts.
export default {
};
