"""RSS 2.0, RSS 1.0 (RDF) and Atom 1.0 documents read safely into the items autopost turns into posts.

Rules:
- Standard library only (xml.parsers.expat). A document with a DTD (<!DOCTYPE ...>) is refused before anything
  of it is read further, and so are entity declarations and external entity references: no entity is ever
  expanded and nothing outside the document is ever read (billion laughs, XXE). An undeclared entity is
  expat's "undefined entity" error: refused as not well-formed.
- Bounded: the caller hands in at most MAX_FEED_BYTES (the outbound client's bounded read stops there); at most
  MAX_ITEMS items are looked at, the rest of the document is skipped; every text kept is cut to a bound.
- An item's key is its GUID (Atom: id; RSS 1.0: rdf:about), else its link, else its title and summary: a
  hash of that, so that keys have one length whatever the feed writes.
- Texts are plain: HTML in titles and descriptions is reduced to its text.
"""
from __future__ import annotations

import hashlib
import re
from typing import NamedTuple, Optional

MAX_FEED_BYTES = 5 * 1024 * 1024
MAX_ITEMS = 200
MAX_TEXT_CHARACTERS = 5000  # a description kept (a template may quote it; the post's own bounds come later)
MAX_DEPTH = 64  # elements inside one another: a feed is a few levels deep

_NAMESPACES = {"http://www.w3.org/2005/Atom": "atom", "http://purl.org/rss/1.0/": "rss1",
               "http://www.w3.org/1999/02/22-rdf-syntax-ns#": "rdf", "http://search.yahoo.com/mrss/": "media",
               "http://purl.org/rss/1.0/modules/content/": "content", "http://purl.org/dc/elements/1.1/": "dc"}
_PICTURE = re.compile(r"(?i)\.(png|jpe?g|gif|webp)(\?|#|$)")


class FeedRefused(Exception):
    """The document is not a feed rustiz reads: why, in words for the feed's entry ("it has a DTD ...")."""


class FeedItem(NamedTuple):
    key: str  # sha256 hex of the GUID, else the link, else the title and summary
    link: str
    title: str
    summary: str  # plain text
    author: str
    published: Optional[str]  # ISO UTC, when the feed dates the item
    image: Optional[str]  # from an enclosure, media:content or media:thumbnail


class _Element:
    __slots__ = ("tag", "attributes", "children", "text")

    def __init__(self, tag: str, attributes: dict):
        self.tag, self.attributes, self.children, self.text = tag, attributes, [], []

    def find(self, *tags: str) -> Optional["_Element"]:
        return next((child for child in self.children if child.tag in tags), None)

    def all(self, *tags: str) -> list:
        return [child for child in self.children if child.tag in tags]

    def joined(self) -> str:
        return "".join(self.text).strip()

    def child_text(self, *tags: str) -> str:
        child = self.find(*tags)
        return child.joined() if child else ""


def _short_tag(name: str) -> str:
    """"http://www.w3.org/2005/Atom entry" -> "atom:entry"; an element without a namespace keeps its name."""
    namespace, _, local = name.rpartition(" ")
    if not namespace:
        return local
    return f"{_NAMESPACES.get(namespace, 'other')}:{local}"


def _refuse_dtd(*_arguments: object) -> None:
    raise FeedRefused("it has a DTD (<!DOCTYPE ...>), which rustiz refuses in feeds: no entity in it is ever expanded "
                      "and nothing outside the document is read")


def _refuse_entity(*_arguments: object) -> None:
    raise FeedRefused("it declares or refers to entities, which rustiz refuses in feeds")


def _tree(data: bytes) -> _Element:
    """The document as elements (texts kept only where a feed has them), items beyond MAX_ITEMS left out."""
    from xml.parsers import expat
    parser = expat.ParserCreate(namespace_separator=" ")
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse_dtd
    parser.EntityDeclHandler = _refuse_entity
    parser.UnparsedEntityDeclHandler = _refuse_entity
    parser.ExternalEntityRefHandler = _refuse_entity
    root = _Element("", {})
    stack = [root]
    items = [0]
    skipping = [0]  # depth inside an item beyond MAX_ITEMS (or too deep): nothing kept

    def start(name: str, attributes: dict) -> None:
        tag = _short_tag(name)
        if skipping[0] or len(stack) > MAX_DEPTH:
            skipping[0] += 1
            return
        if tag in ("item", "rss1:item", "atom:entry"):
            items[0] += 1
            if items[0] > MAX_ITEMS:
                skipping[0] = 1
                return
        element = _Element(tag, {_short_tag(key): value for key, value in attributes.items()})
        stack[-1].children.append(element)
        stack.append(element)

    def end(name: str) -> None:
        if skipping[0]:
            skipping[0] -= 1
            return
        stack.pop()

    def text(data: str) -> None:
        if not skipping[0] and sum(map(len, stack[-1].text)) < MAX_TEXT_CHARACTERS * 4:
            stack[-1].text.append(data)

    parser.StartElementHandler, parser.EndElementHandler, parser.CharacterDataHandler = start, end, text
    parser.buffer_text = True
    try:
        parser.Parse(data, True)
    except expat.ExpatError as error:
        raise FeedRefused(f"it is not well-formed XML ({expat.errors.messages.get(error.code, 'unreadable')}, "
                          f"line {error.lineno})") from None
    if not root.children:
        raise FeedRefused("it is empty")
    return root.children[0]


def parse_feed(data: bytes) -> list:
    """The items of an RSS 2.0, RSS 1.0 or Atom 1.0 document, in the document's order (at most MAX_ITEMS);
    raises FeedRefused."""
    if len(data) > MAX_FEED_BYTES:
        raise FeedRefused(f"it is larger than {MAX_FEED_BYTES // 2**20} MB")
    head = data[:1024].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")):
        raise FeedRefused("it is a web page, not a feed (give the address of the site's RSS or Atom feed)")
    root = _tree(data)
    if root.tag == "rss":
        channel = root.find("channel")
        return [_rss_item(item) for item in (channel.all("item") if channel else [])]
    if root.tag == "rdf:RDF":
        return [_rss_item(item) for item in root.all("rss1:item")]
    if root.tag == "atom:feed":
        return [_atom_item(entry) for entry in root.all("atom:entry")]
    raise FeedRefused(f"it is XML but not an RSS or Atom feed (its root element is <{root.tag.rpartition(':')[2][:40]}>)")


def _plain(text: str, limit: int = MAX_TEXT_CHARACTERS) -> str:
    """HTML (or text) as plain text on one line per paragraph, cut to `limit` characters."""
    import html
    if "<" in text:
        text = re.sub(r"(?is)<(script|style)\b.*?</\1\s*>", " ", text)
        text = re.sub(r"(?i)<br\s*/?>|</p\s*>", "\n", text)
        text = re.sub(r"<[^>]*>", " ", text)
    text = html.unescape(text)
    text = "\n".join(" ".join(line.split()) for line in text.splitlines())
    text = re.sub(r"\n{2,}", "\n", text).strip()
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _date(text: str) -> Optional[str]:
    """An RFC 822 (RSS 2.0) or ISO 8601 (Atom, Dublin Core) date as ISO UTC, or None when unreadable."""
    import datetime
    import email.utils
    text = text.strip()
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    try:
        return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    except (OverflowError, ValueError):
        return None


def _media_image(element: _Element) -> Optional[str]:
    """The first picture of media:content / media:thumbnail (also inside media:group) or an image enclosure."""
    for child in element.children:
        if child.tag == "media:group":
            found = _media_image(child)
            if found:
                return found
        url = child.attributes.get("url") or child.attributes.get("href") or ""
        kind = child.attributes.get("type", "")
        if child.tag == "media:thumbnail" or (child.tag == "media:content" and (
                child.attributes.get("medium") == "image" or kind.startswith("image/") or _PICTURE.search(url))):
            pass
        elif child.tag == "enclosure" or (child.tag == "atom:link" and child.attributes.get("rel") == "enclosure"):
            if not (kind.startswith("image/") or (not kind and _PICTURE.search(url))):
                continue
        else:
            continue
        if url.startswith(("http://", "https://")):
            return url[:2000]
    return None


def _key(*candidates: str) -> str:
    source = next((candidate for candidate in candidates if candidate), "")
    return hashlib.sha256(source.encode("utf-8", "replace")).hexdigest()


def _rss_item(item: _Element) -> FeedItem:
    link = item.child_text("link", "rss1:link")
    guid = item.child_text("guid") or item.attributes.get("rdf:about", "")
    title = _plain(item.child_text("title", "rss1:title"), 500)
    summary = _plain(item.child_text("description", "rss1:description") or item.child_text("content:encoded"))
    author = _plain(item.child_text("dc:creator", "author"), 200)
    published = _date(item.child_text("pubDate", "dc:date"))
    return FeedItem(_key(guid, link, title + "\n" + summary), link[:2000], title, summary, author, published,
                    _media_image(item))


def _atom_item(entry: _Element) -> FeedItem:
    links = entry.all("atom:link")
    alternate = next((link for link in links if link.attributes.get("rel", "alternate") == "alternate"), None)
    link = (alternate.attributes.get("href", "") if alternate else "").strip()
    title = _plain(entry.child_text("atom:title"), 500)
    summary = _plain(entry.child_text("atom:summary") or entry.child_text("atom:content"))
    author_element = entry.find("atom:author")
    author = _plain(author_element.child_text("atom:name"), 200) if author_element else ""
    published = _date(entry.child_text("atom:published") or entry.child_text("atom:updated"))
    return FeedItem(_key(entry.child_text("atom:id"), link, title + "\n" + summary), link[:2000], title, summary,
                    author, published, _media_image(entry))


def newest_item(items: list) -> Optional[FeedItem]:
    """The item dated latest (the first of the document when none is dated)."""
    dated = [item for item in items if item.published]
    return max(dated, key=lambda item: item.published) if dated else (items[0] if items else None)


def page_image(html: bytes) -> Optional[str]:
    """A web page's og:image (or twitter:image), from its first 256 KB; None when it names none."""
    import html as html_module
    text = html[:256 * 1024].decode("utf-8", "replace")
    for tag in re.finditer(r"(?is)<meta\b[^>]*>", text):
        attributes = {name.lower(): html_module.unescape(double or single) for name, double, single
                      in re.findall(r"""([\w:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""", tag.group(0))}
        kind = (attributes.get("property") or attributes.get("name") or "").lower()
        url = attributes.get("content", "").strip()
        if kind in ("og:image", "og:image:url", "twitter:image") and url.startswith(("http://", "https://")):
            return url[:2000]
    return None
