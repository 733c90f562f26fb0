"""Postiz HTML as the markdown dialects of chat platforms and Lemmy (plain text and Telegram's HTML are
text.py's, which counting needs too).
"""
from __future__ import annotations

import re
from typing import Any

from ..text import escape_markup_characters


# Stored content keeps only p, br, strong, u, a, ul, li, h1-h3 and span (see sanitize_html). The bold
# and underline markers of each dialect: CommonMark for Lemmy (no underline), Discord's markdown, and
# Slack's mrkdwn (*bold*, no underline).
_INLINE_MARKERS = {"markdown": {"strong": "**"}, "discord": {"strong": "**", "u": "__"}, "mrkdwn": {"strong": "*"}}
_HTML_PIECE = r"""<(/?)([A-Za-z][A-Za-z0-9]*)((?:"[^"]*"|'[^']*'|[^'">])*)>|([^<]+)|<"""


def markdown_from_html(html: str, dialect: str) -> str:
    """Postiz's HTML as `dialect` ("markdown", "discord" or "mrkdwn"): bold, underline, links, headings,
    bullets and line breaks kept, other tags dropped, entities decoded. Text is not escaped, so markdown
    a person typed into the editor still works (as in Postiz)."""
    import html as html_module
    paragraph_end = "\n\n" if dialect == "markdown" else "\n"  # CommonMark joins the lines of a paragraph
    out: list = []
    inline: list = []  # open bold, underline, links and headings: (tag, where their text starts in `out`, href)
    for match in re.finditer(_HTML_PIECE, html):
        closing, tag, attributes, text = match.groups()
        if tag is None:
            if text is not None and not text.strip() and "\n" in text:
                continue  # the source's line breaks between tags, not text
            piece = re.sub(r"\s*\n\s*", " ", html_module.unescape(text if text is not None else "<"))
            out.append(escape_markup_characters(piece) if dialect == "mrkdwn" else piece)
            continue
        tag = tag.lower()
        if tag == "br":  # CommonMark reads a lone line break as a space: a backslash makes it a real one
            out.append("\\\n" if dialect == "markdown" else "\n")
        elif tag == "p":
            out.append(paragraph_end if closing else "")
        elif tag == "li" and not closing:
            out.append(_line_start(out) + ("• " if dialect == "mrkdwn" else "- "))
        elif tag == "ul" and closing:
            out.append(paragraph_end)
        elif tag in ("strong", "u", "a", "h1", "h2", "h3"):
            if not closing:
                href = re.search(r"""href\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)""", attributes or "", re.I)
                inline.append((tag, len(out), html_module.unescape(href[1].strip("\"'")) if href else ""))
            elif any(opened[0] == tag for opened in inline):
                while inline[-1][0] != tag:
                    inline.pop()
                _, start, href = inline.pop()
                inner = "".join(out[start:])
                del out[start:]
                out.append(_formatted(tag, inner, href, dialect, out))
    text = re.sub(r"[ \t]+\n", "\n", "".join(out))
    text = re.sub(r"\\\n(?=\n|\Z)", "\n", text)  # a <br> ending a paragraph needs no backslash
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _formatted(tag: str, inner: str, href: str, dialect: str, out: list) -> str:
    """The text of a closed tag in `dialect`: a link, a heading on its own line (bold in mrkdwn), or bold."""
    if tag == "a":
        return _link(inner, href, dialect)
    if tag.startswith("h"):
        paragraph_end = "\n\n" if dialect == "markdown" else "\n"
        heading = _wrap(inner, "*") if dialect == "mrkdwn" else "#" * int(tag[1]) + " " + inner.strip()
        return _line_start(out) + heading + paragraph_end
    return _wrap(inner, _INLINE_MARKERS[dialect].get(tag, ""))


def _line_start(out: list) -> str:
    """A line break, unless the text so far is empty or already ends with one."""
    tail = next((piece for piece in reversed(out) if piece), "")
    return "" if not tail or tail.endswith("\n") else "\n"


def _wrap(inner: str, marker: str) -> str:
    """**bold** around the words only: markdown ignores markers next to a space ("** bold**")."""
    if not marker or not inner.strip():
        return inner
    stripped = inner.strip()
    return inner[:len(inner) - len(inner.lstrip())] + marker + stripped + marker + inner[len(inner.rstrip()):]


def _link(inner: str, href: str, dialect: str) -> str:
    if not href:
        return inner
    if not inner.strip() or inner.strip() == href:
        return href
    return f"<{href}|{inner.strip()}>" if dialect == "mrkdwn" else f"[{inner.strip()}]({href})"


def with_query(url: str, **parameters: Any) -> str:
    """`url` with these query parameters added (or replaced), keeping the ones it already has."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    query.update({name: str(value) for name, value in parameters.items()})
    return urlunsplit(parts._replace(query=urlencode(query)))
