"""Helpers for the article platforms (WordPress, Dev.to, Hashnode, Listmonk): Postiz HTML to Markdown,
cover images, canonical URLs, Basic auth, and remembering an attempt so a retry does not duplicate.
"""
from __future__ import annotations

import re
from typing import Any, Optional

from ..text import escape_html
from .base import Channel, OutgoingPost




class _HtmlNode:
    """One element of a parsed HTML fragment; `children` holds _HtmlNodes and text (str)."""
    __slots__ = ("tag", "attributes", "children")

    def __init__(self, tag: str, attributes: dict):
        self.tag, self.attributes, self.children = tag, attributes, []


_VOID_TAGS = frozenset(("br", "img", "hr", "input", "meta", "link", "source", "wbr", "col", "area", "embed"))
_BLOCK_TAGS = frozenset(("p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre",
                         "hr", "table", "section", "article", "header", "footer", "figure"))


def parse_html_fragment(html: str) -> _HtmlNode:
    """A forgiving parse of Postiz's HTML into a tree (an end tag closes everything opened after its start)."""
    from html.parser import HTMLParser

    root = _HtmlNode("", {})
    stack = [root]

    class TreeBuilder(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list) -> None:
            node = _HtmlNode(tag, {name: value or "" for name, value in attrs})
            stack[-1].children.append(node)
            if tag not in _VOID_TAGS:
                stack.append(node)

        def handle_startendtag(self, tag: str, attrs: list) -> None:
            stack[-1].children.append(_HtmlNode(tag, {name: value or "" for name, value in attrs}))

        def handle_endtag(self, tag: str) -> None:
            for depth in range(len(stack) - 1, 0, -1):
                if stack[depth].tag == tag:
                    del stack[depth:]
                    return

        def handle_data(self, data: str) -> None:
            stack[-1].children.append(data)

    builder = TreeBuilder(convert_charrefs=True)
    builder.feed(html)
    builder.close()
    return root


def html_to_markdown(html: str) -> str:
    """Postiz's HTML as Markdown, for platforms that take Markdown (Dev.to, Hashnode): headings, bold,
    italic, strike-through, links, nested lists, quotes, code, images and paragraphs."""
    return _markdown_blocks(parse_html_fragment(html).children).strip()


def _markdown_blocks(children: list, separator: str = "\n\n") -> str:
    """Block-level Markdown of a node's children: runs of inline content become paragraphs."""
    blocks, inline = [], []
    for child in children:
        if isinstance(child, _HtmlNode) and child.tag in _BLOCK_TAGS:
            blocks.append(_markdown_inline_run(inline))
            inline = []
            blocks.append(_markdown_block(child))
        else:
            inline.append(child)
    blocks.append(_markdown_inline_run(inline))
    return separator.join(block for block in blocks if block.strip())


def _markdown_inline_run(nodes: list) -> str:
    return "".join(_markdown_inline(node) for node in nodes).strip(" \t\n")


def _markdown_block(node: _HtmlNode) -> str:
    tag = node.tag
    if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
        return "#" * int(tag[1]) + " " + _markdown_inline_run(node.children).replace("\n", " ")
    if tag in ("ul", "ol"):
        return _markdown_list(node)
    if tag == "blockquote":
        return "\n".join("> " + line if line else ">" for line in _markdown_blocks(node.children).split("\n"))
    if tag == "pre":
        code = _node_text(node).strip("\n")
        fence = "````" if "```" in code else "```"
        return f"{fence}\n{code}\n{fence}"
    if tag == "hr":  # not "---", which Dev.to would read as front matter at the start of an article
        return "***"
    if tag == "li":  # a stray list item outside a list
        return "- " + _markdown_blocks(node.children, "\n")
    return _markdown_blocks(node.children)


def _markdown_list(node: _HtmlNode) -> str:
    start = node.attributes.get("start", "")
    items, number = [], int(start) if start.isdigit() else 1
    for child in node.children:
        if not (isinstance(child, _HtmlNode) and child.tag == "li"):
            continue
        marker = f"{number}. " if node.tag == "ol" else "- "
        number += 1
        lines = _markdown_blocks(child.children, "\n").split("\n")
        items.append(marker + lines[0] + "".join("\n" + (" " * len(marker) + line if line else "")
                                                 for line in lines[1:]))
    return "\n".join(items)


_MARKDOWN_SPECIAL = r"([\\`*_\[\]])"
_EMPHASIS = {"strong": "**", "b": "**", "em": "*", "i": "*", "s": "~~", "del": "~~", "strike": "~~"}


def _markdown_inline(node: Any) -> str:
    if isinstance(node, str):
        return re.sub(_MARKDOWN_SPECIAL, r"\\\1", re.sub(r"\s+", " ", node))
    tag = node.tag
    if tag == "br":
        return "  \n"
    if tag == "img":
        return f"![{node.attributes.get('alt', '')}]({node.attributes.get('src', '')})" \
            if node.attributes.get("src") else ""
    if tag == "code":
        code = _node_text(node)
        fence = "``" if "`" in code else "`"
        return f"{fence}{code}{fence}"
    if tag in _BLOCK_TAGS:  # a block inside inline content (a <p> in a <span>): its own paragraph
        return "\n\n" + _markdown_block(node) + "\n\n"
    inner = "".join(_markdown_inline(child) for child in node.children)
    if tag in _EMPHASIS and inner.strip():
        # Markdown emphasis cannot start or end with a space: keep the spaces outside the markers.
        core = inner.strip()
        lead, trail = inner[:len(inner) - len(inner.lstrip())], inner[len(inner.rstrip()):]
        return f"{lead}{_EMPHASIS[tag]}{core}{_EMPHASIS[tag]}{trail}"
    if tag == "a" and node.attributes.get("href"):
        href = node.attributes["href"]
        target = f"<{href}>" if re.search(r"[\s()<>]", href) else href
        label = inner.strip() or _markdown_inline(href)
        return f"[{label}]({target})"
    return inner


def _node_text(node: Any) -> str:
    if isinstance(node, str):
        return node
    return "\n" if node.tag == "br" else "".join(_node_text(child) for child in node.children)


def article_cover(post: OutgoingPost) -> tuple:
    """(cover image URL or None, the post's media that go into the body): settings.main_image (read by the
    scheduler into post.settings_media, so an upload's URL is under today's FRONTEND_URL), else the post's
    first image; the cover is not repeated in the body."""
    cover = (post.settings_media or {}).get("main_image")
    if cover is not None:
        return cover.url, [media for media in post.media if media.url != cover.url]
    for index, media in enumerate(post.media):
        if media.kind == "image":
            return media.url, [other for position, other in enumerate(post.media) if position != index]
    return None, list(post.media)


def markdown_media(media: list) -> str:
    """Images as Markdown images, videos as links (neither Dev.to nor Hashnode embeds an uploaded video)."""
    lines = [f"![{item.alt}]({item.url})" if item.kind == "image" else f"[{item.alt or item.name}]({item.url})"
             for item in media]
    return "\n\n" + "\n\n".join(lines) if lines else ""


def canonical_url(settings: dict) -> Optional[str]:
    """The settings' canonical URL; a "(post:...)" reference to another channel's post is left out, as
    rustiz does not resolve those."""
    canonical = settings.get("canonical")
    if isinstance(canonical, str) and canonical.strip() and "(post:" not in canonical:
        return canonical.strip()
    return None


def remember_attempt(channel: Channel, bucket: str, key: str, value: Any) -> None:
    """Keep in the channel's session what an unfinished publish already made on the platform (uploaded
    media, a draft), under the part's idempotency key, so that the next attempt reuses it instead of
    making it twice; `value` None forgets it once the part is published or has failed for good."""
    entries = dict(channel.session.get(bucket) or {})
    if value is None:
        if key not in entries:
            return
        entries.pop(key)
    else:
        entries[key] = value
    channel.save_session({**channel.session, bucket: entries})


def basic_auth_header(user: str, password: str) -> dict:
    import base64
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def whole_number(value: Any) -> Optional[int]:
    """An id given as a number or a string of digits, as an int; None otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def image_paragraph(source: str, alt: str, attributes: str = "") -> str:
    """An image of an article or an e-mail (WordPress, Listmonk) as HTML, its address and alt text escaped."""
    return f'<p><img src="{escape_html(source, quote=True)}" alt="{escape_html(alt, quote=True)}"{attributes} /></p>'
