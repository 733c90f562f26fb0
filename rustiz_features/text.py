"""Text as Postiz keeps it and as the platforms count it: stripping and sanitising HTML, HTML as plain
text and as Telegram's HTML, X's weighted length, graphemes, Mastodon's and Telegram's lengths, and the
counting rules the provider descriptors name.

Pure functions on strings; patterns stay text until first used.
"""
from __future__ import annotations

import re
from typing import Optional



# striptags: a tag runs from "<" to the next ">" outside quotes (or to the end of the text).
_TAG = r"""<(?:"[^"]*"|'[^']*'|[^'">])*(?:>|$)"""


def strip_html(html: str) -> str:
    """The text Postiz measures: tags removed as by the striptags package (entities are left as written)."""
    return re.sub(_TAG, "", html)


# twitter-text 3: code points in these ranges weigh 1, every other one 2 (of 280); a URL weighs 23;
# an emoji, even one joined from several code points, weighs 2.
_LIGHT_RANGES = ((0, 4351), (8192, 8205), (8208, 8223), (8242, 8247))
_URL = r"(?i)(?:https?://|www\.)[^\s<>]+"
_EMOJI = ("[\U0001F000-\U0001FAFF\u2600-\u27BF][\uFE0F\U0001F3FB-\U0001F3FF]*"
          "(?:\u200D[\U0001F000-\U0001FAFF\u2600-\u27BF\u2640\u2642][\uFE0F\U0001F3FB-\U0001F3FF]*)*")


def x_weighted_length(text: str) -> int:
    """X's count for `text` (twitter-text weighted length): what decides whether a post fits in 280."""
    import unicodedata
    text = unicodedata.normalize("NFC", text)
    length = 0
    for piece in re.split(_URL, text):
        for index, chunk in enumerate(re.split(_EMOJI, piece)):
            if index:
                length += 2
            for character in chunk:
                point = ord(character)
                length += 1 if any(low <= point <= high for low, high in _LIGHT_RANGES) else 2
    return length + 23 * len(re.findall(_URL, text))


def _is_grapheme_extender(code: int) -> bool:
    """Grapheme_Cluster_Break Extend/SpacingMark/ZWJ: combining marks, variation selectors, skin tones, tags."""
    import unicodedata
    return (unicodedata.category(chr(code)) in ("Mn", "Me", "Mc") or code in (0x200C, 0x200D)
            or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF or 0x1F3FB <= code <= 0x1F3FF
            or 0xE0020 <= code <= 0xE007F)


def _is_pictographic(code: int) -> bool:
    """Extended_Pictographic, near enough: the emoji blocks and the older symbols that emoji reuse."""
    return (0x1F000 <= code <= 0x1FAFF and not 0x1F1E6 <= code <= 0x1F1FF) or 0x2600 <= code <= 0x27BF \
        or 0x2300 <= code <= 0x23FF or 0x2B00 <= code <= 0x2BFF or 0x1FC00 <= code <= 0x1FFFD \
        or code in (0xA9, 0xAE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D, 0x3297, 0x3299) \
        or 0x2194 <= code <= 0x21AA


def _hangul_kind(code: int) -> str:
    if 0x1100 <= code <= 0x115F or 0xA960 <= code <= 0xA97C:
        return "L"
    if 0x1160 <= code <= 0x11A7 or 0xD7B0 <= code <= 0xD7C6:
        return "V"
    if 0x11A8 <= code <= 0x11FF or 0xD7CB <= code <= 0xD7FB:
        return "T"
    if 0xAC00 <= code <= 0xD7A3:
        return "LV" if (code - 0xAC00) % 28 == 0 else "LVT"
    return ""


_HANGUL_JOINS = {"L": ("L", "V", "LV", "LVT"), "LV": ("V", "T"), "V": ("V", "T"), "LVT": ("T",), "T": ("T",)}


def grapheme_count(text: str) -> int:
    """User-perceived characters, as Bluesky counts its 300 and Mastodon its 500 (Unicode extended
    grapheme clusters, the rules that matter for posts: CR LF, combining marks, ZWJ emoji sequences,
    flags, Hangul syllables), so "👍🏽" and "🇫🇷" are one character each."""
    count = 0
    previous = None  # the code point before, within the current cluster
    pictographic_run = False  # the cluster so far is a pictograph followed only by extenders
    regional_indicators = 0  # regional indicators in a row (a flag is a pair)
    for char in text:
        code = ord(char)
        joins = False
        if previous is not None:
            if previous == 0x0D and code == 0x0A:
                joins = True
            elif previous in (0x0A, 0x0D):
                joins = False
            elif _is_grapheme_extender(code):
                joins = True
            elif previous == 0x200D and pictographic_run and _is_pictographic(code):
                joins = True
            elif 0x1F1E6 <= code <= 0x1F1FF and 0x1F1E6 <= previous <= 0x1F1FF:
                joins = regional_indicators % 2 == 1
            elif _hangul_kind(previous) and _hangul_kind(code) in _HANGUL_JOINS.get(_hangul_kind(previous), ()):
                joins = True
        if not joins:
            count += 1
            pictographic_run = _is_pictographic(code)
        elif not (_is_grapheme_extender(code) or _is_pictographic(code)):
            pictographic_run = False
        regional_indicators = regional_indicators + 1 if 0x1F1E6 <= code <= 0x1F1FF else 0
        previous = code
    return count


# --- Postiz's HTML as the text a platform receives, and how each platform counts it -------------

def html_to_text(html: str) -> str:
    """Postiz's HTML as plain text: paragraphs and <br> become line breaks, tags go, entities are decoded."""
    import html as html_module
    text = re.sub(r"(?i)<br\s*/?>", "\n", html)
    text = re.sub(r"(?i)</(p|div|h[1-6]|li|blockquote)>\s*", "\n", text)
    text = re.sub(r"(?i)<li[^>]*>", "- ", text)
    text = html_module.unescape(strip_html(text))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def escape_markup_characters(text: str) -> str:
    """&, < and > as entities, and nothing else: Slack reads <...> as links and mentions, and Telegram's
    HTML knows only a few named entities (so no &nbsp; and the like, unlike escape_html)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# Postiz's tags -> Telegram's (its HTML parse mode knows only a few); headings become bold lines.
_TELEGRAM_TAGS = {"strong": "b", "b": "b", "em": "i", "i": "i", "u": "u", "ins": "u", "s": "s", "strike": "s",
                  "del": "s", "code": "code", "pre": "pre", "blockquote": "blockquote",
                  "h1": "b", "h2": "b", "h3": "b", "h4": "b", "h5": "b", "h6": "b"}
_TELEGRAM_LINE_ENDS = frozenset("p div li h1 h2 h3 h4 h5 h6 blockquote pre".split())
_TELEGRAM_LINK = r"(?i)(?:https?|tg|mailto):"


def telegram_html(html: str) -> str:
    """Postiz's HTML in the subset Telegram's parse_mode HTML takes: <b> <i> <u> <s> <a href> <code>
    <pre> <blockquote>; paragraphs and <br> become line breaks, list items "• " lines, other tags go
    (their text stays), and <, >, & in the text are escaped."""
    from html.parser import HTMLParser

    class Converter(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.output: list = []
            self.open: list = []  # (Postiz tag, Telegram tag written for it)

        def handle_starttag(self, tag: str, attributes: list) -> None:
            if tag == "br":
                self.output.append("\n")
                return
            if tag == "li":
                self.output.append("• ")
            if any(written in ("code", "pre") for _, written in self.open):
                return  # Telegram takes no formatting inside code
            href = dict(attributes).get("href") or ""
            written = "a" if tag == "a" and re.match(_TELEGRAM_LINK, href.strip()) else _TELEGRAM_TAGS.get(tag)
            if written:
                self.output.append(f'<a href="{escape_html(href.strip(), quote=True)}">' if written == "a"
                                   else f"<{written}>")
                self.open.append((tag, written))

        def handle_endtag(self, tag: str) -> None:
            if any(source == tag for source, _ in self.open):
                while self.open:
                    source, written = self.open.pop()
                    self.output.append(f"</{written}>")
                    if source == tag:
                        break
            if tag in _TELEGRAM_LINE_ENDS:
                self.output.append("\n")

        def handle_data(self, data: str) -> None:
            self.output.append(escape_markup_characters(data))

        def text(self) -> str:
            self.close()
            self.output.extend(f"</{written}>" for _, written in reversed(self.open))
            return re.sub(r"\n{3,}", "\n\n", "".join(self.output)).strip()

    converter = Converter()
    converter.feed(html)
    return converter.text()


def telegram_length(telegram_message: str) -> int:
    """How long Telegram finds a parse_mode HTML message: its text without tags, in UTF-16 code units."""
    import html as html_module
    text = html_module.unescape(re.sub(r"<[^>]*>", "", telegram_message))
    return len(text.encode("utf-16-le")) // 2


_MASTODON_URL = r"(?i)\bhttps?://[^\s<>\"]*[^\s<>\".,:;!?'()\]]"
_MASTODON_REMOTE_MENTION = r"(?<![\w@/])@(\w+)@[\w.-]*\w"


def mastodon_length(text: str, characters_per_url: int) -> int:
    """A status's length as Mastodon counts it: every http(s) link is `characters_per_url` long whatever
    its length, a mention of a remote account counts only its @username, the rest in graphemes."""
    text = re.sub(_MASTODON_REMOTE_MENTION, r"@\1", text)
    links = len(re.findall(_MASTODON_URL, text))
    return grapheme_count(re.sub(_MASTODON_URL, "", text)) + links * characters_per_url


# The counting rules a provider's descriptor names (catalogue.py); web/count.js implements the same ones
# for the composer's counters, which must agree with what the server refuses.
COUNTING_RULES = ("characters", "x-weighted", "graphemes", "mastodon", "telegram-html")


def counted_length(rule: str, html: str, characters_per_url: int) -> int:
    """The length of a post's stored HTML by one of COUNTING_RULES:
    - characters, x-weighted: Postiz's own check: the HTML with its tags stripped (entities as written,
      line breaks gone), in code points or as X's weighted length;
    - graphemes: the text the platform receives (html_to_text), in user-perceived characters (Bluesky);
    - mastodon: that text as Mastodon counts it, each link `characters_per_url` long;
    - telegram-html: the post in Telegram's HTML, without its tags, in UTF-16 code units."""
    if rule == "x-weighted":
        return x_weighted_length(strip_html(html))
    if rule == "graphemes":
        return grapheme_count(html_to_text(html))
    if rule == "mastodon":
        return mastodon_length(html_to_text(html), characters_per_url)
    if rule == "telegram-html":
        return telegram_length(telegram_html(html))
    return len(strip_html(html))


# DOMPurify's configuration in Postiz: these tags and attributes survive, links only to these URIs;
# other tags are unwrapped (their text kept) except these, which go with everything inside them.
_ALLOWED_TAGS = frozenset("p br strong u a ul li h1 h2 h3 span".split())
_ALLOWED_ATTRIBUTES = frozenset("href target rel class data-mention-id data-mention-label".split())
_ALLOWED_URI = r"(?i)(?:https?:|mailto:|/|#)"
_ATTRIBUTE_WHITESPACE = "[\u0000-\u0020\u00a0\u1680\u180e\u2000-\u2029\u205f\u3000]"
_DROPPED_WITH_CONTENT = frozenset(
    "annotation-xml audio colgroup desc foreignobject head iframe math mi mn mo ms mtext noembed noframes "
    "noscript plaintext script style svg template thead title video xmp".split())
_sanitizer_class: Optional[type] = None


def escape_html(text: str, quote: bool = False) -> str:
    text = text.replace("&", "&amp;").replace("\u00a0", "&nbsp;")
    return text.replace('"', "&quot;") if quote else text.replace("<", "&lt;").replace(">", "&gt;")


def _make_sanitizer_class() -> type:
    from html.parser import HTMLParser  # only posting needs it; start-up does not

    class Sanitizer(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.output: list = []
            self.open_tags: list = []
            self.dropping = 0  # depth inside elements removed with their content

        def handle_starttag(self, tag: str, attributes: list) -> None:
            if self.dropping or tag in _DROPPED_WITH_CONTENT:
                self.dropping += tag in _DROPPED_WITH_CONTENT
                return
            if tag not in _ALLOWED_TAGS:
                return
            kept = "".join(f' {name}="{escape_html(value or "", quote=True)}"' for name, value in attributes
                           if name in _ALLOWED_ATTRIBUTES and (
                               name != "href" or not value
                               or re.match(_ALLOWED_URI, re.sub(_ATTRIBUTE_WHITESPACE, "", value))))
            self._close_implied_by(tag)
            self.output.append(f"<{tag}{kept}>")
            if tag != "br":
                self.open_tags.append(tag)

        handle_startendtag = handle_starttag  # HTML has no self-closing tags: <p/> opens a p, <br/> is <br>

        def _close_implied_by(self, tag: str) -> None:
            """What a browser (and so DOMPurify) closes by itself: a new item ends the previous one, a block ends a p."""
            innermost_list_tag = next((open_tag for open_tag in reversed(self.open_tags) if open_tag in ("li", "ul")),
                                      None)
            if tag == "li" and innermost_list_tag == "li":
                self._close("li")
            elif tag in ("p", "ul", "h1", "h2", "h3") and "p" in self.open_tags:
                self._close("p")

        def _close(self, tag: str) -> None:
            while self.open_tags:
                closed = self.open_tags.pop()
                self.output.append(f"</{closed}>")
                if closed == tag:
                    break

        def handle_endtag(self, tag: str) -> None:
            if self.dropping:
                self.dropping -= tag in _DROPPED_WITH_CONTENT
            elif tag in self.open_tags:
                self._close(tag)
            elif tag == "br":  # browsers read </br> as <br>
                self.output.append("<br>")

        def handle_data(self, data: str) -> None:
            if not self.dropping:
                self.output.append(escape_html(data))

        def result(self) -> str:
            self.close()
            return "".join(self.output) + "".join(f"</{tag}>" for tag in reversed(self.open_tags))

    return Sanitizer


def sanitize_html(html: str) -> str:
    """Post content as Postiz stores it after DOMPurify: allowed tags and attributes only, safe links only."""
    global _sanitizer_class
    if _sanitizer_class is None:
        _sanitizer_class = _make_sanitizer_class()
    sanitizer = _sanitizer_class()
    sanitizer.feed(html)
    return sanitizer.result()
