"""The web app's message catalogue (web/i18n.js): every text the app shows through t()/tn() is translated in
every language it offers, with the same {placeholders}, and no catalogue keeps texts the app no longer shows."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

WEB = Path(__file__).resolve().parent.parent / "web"
LANGUAGES = ("es", "fr", "de", "pt")
# t('text'...) / tn('one', 'other', n) / toTranslate('text') (a list's labels): literal strings (' or ").
LITERAL = r"""'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)\""""
CALL = re.compile(r"\b(?:t|toTranslate)\(\s*(?:" + LITERAL + r")")
PLURAL = re.compile(r"\btn\(\s*(?:" + LITERAL + r")\s*,\s*(?:" + LITERAL + r")")
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def texts_of_the_app() -> set:
    found = set()
    for path in WEB.glob("*.js"):
        if path.name.startswith("locale-"):
            continue
        source = path.read_text()
        for match in CALL.finditer(source):
            found.add(unescape(match.group(1) if match.group(1) is not None else match.group(2)))
        for match in PLURAL.finditer(source):
            groups = match.groups()
            found.update(unescape(text) for text in groups if text is not None)
    return found


def catalogue(language: str) -> dict:
    """web/locale-<language>.js is `export default {...};` holding a JSON object (keys and values in double quotes)."""
    source = (WEB / f"locale-{language}.js").read_text()
    body = source[source.index("export default") + len("export default"):].strip().rstrip(";")
    return json.loads(body)


def test_the_app_shows_its_texts_through_the_catalogue():
    texts = texts_of_the_app()
    assert {"Calendar", "Sign out", "Schedule"} <= texts, "the extractor no longer finds the app's t() calls"


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_text_is_translated_with_the_same_placeholders(language):
    texts, translated = texts_of_the_app(), catalogue(language)
    assert sorted(texts - translated.keys()) == []
    assert sorted(translated.keys() - texts) == [], "texts the app no longer shows"
    wrong = {key: value for key, value in translated.items()
             if sorted(PLACEHOLDER.findall(key)) != sorted(PLACEHOLDER.findall(value)) or not value.strip()}
    assert wrong == {}
