"""Channel pictures through rustiz: GET /public/v1/integrations/:id/picture.

A channel's picture is an address on the platform (Postiz's `picture` field keeps it). The web app shows it
from this route instead, so its Content-Security-Policy can say `img-src 'self'`: no page of rustiz makes a
browser fetch an address a key holder chose.

Rules:
- Fetched through the one outbound client (its address guard, its deadline), only http(s), at most
  MAX_PICTURE_BYTES, and only when its first bytes are a JPEG, PNG, GIF or WebP image (never SVG or HTML).
- Kept in this worker's memory for CACHE_SECONDS (a failure for FAILURE_SECONDS), at most CACHE_ENTRIES
  pictures: a page full of avatars costs the platform one fetch per picture an hour, and rustiz a bounded
  amount of memory. One fetch per address at a time.
- Served with nosniff and a sandboxing CSP, as uploads are; no picture: 404 (the web app shows the initial).
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Optional

from rustiz import App, Request, Response, log, not_found
from .api_docs import CHANNEL_ID, documented
from .storage import channels as channel_store

MAX_PICTURE_BYTES = 512 * 1024
CACHE_SECONDS = 3600
FAILURE_SECONDS = 300  # a picture that failed is not asked for again before this
CACHE_ENTRIES = 128
FETCH_SECONDS = 15
_PICTURE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_SERVED_HEADERS = [("Cache-Control", f"private, max-age={CACHE_SECONDS}"), ("X-Content-Type-Options", "nosniff"),
                   ("Content-Security-Policy", "default-src 'none'; sandbox")]


class PictureTooLarge(Exception):
    pass


def _read_picture(head: Any, pieces: Any) -> Optional[tuple]:
    """(content type, bytes) of a 200 answer that is a picture within MAX_PICTURE_BYTES, else None."""
    from .media import SNIFF_BYTES, sniff_media_type
    if head.status != 200:
        return None
    data = bytearray()
    for piece in pieces:
        data += piece
        if len(data) > MAX_PICTURE_BYTES:
            raise PictureTooLarge()
    kind = sniff_media_type(bytes(data[:SNIFF_BYTES]))
    content_type = getattr(kind, "content_type", None)
    return (content_type, bytes(data)) if content_type in _PICTURE_TYPES else None


class ChannelPictures:
    """The pictures of this worker's channels, fetched on demand and kept a while."""

    def __init__(self, app: App):
        self.store, self.app = app.store, app
        self._cache: dict = {}  # picture URL -> (expires at, (content type, bytes) or None)
        self._fetching: dict = {}  # picture URL -> the Future of its fetch under way

    @documented("The channel's picture, fetched from the platform by rustiz and kept an hour (the web app shows "
                "pictures only from rustiz); 404 when it has none or it could not be fetched (rustiz)",
                ("200", {"description": "A JPEG, PNG, GIF or WebP image", "content": {
                    kind: {"schema": {"type": "string", "contentMediaType": kind}}
                    for kind in ("image/jpeg", "image/png", "image/gif", "image/webp")}}),
                "NotFound", (CHANNEL_ID,))
    async def serve(self, request: Request, organization_id: str) -> Response:
        channel = await self.store.off_loop(channel_store.channel_row, self.store, organization_id, request.params["id"])
        if channel is None:
            raise not_found(f"No channel {request.params['id']!r} in this organization")
        answer = await self.picture_answer(channel.get("picture") or "")
        if answer is None:
            raise not_found(f"Channel {channel['id']} has no picture rustiz could fetch (its initial is shown instead)")
        return answer

    async def picture_answer(self, url: str) -> Optional[Response]:
        """The picture at a channel's `url` as rustiz serves it (kept a while, sandboxed), or None when there is
        none it could fetch; also for pages other than the web app's (a client's review page)."""
        picture = await self._picture(url) if url.lower().startswith(("https://", "http://")) else None
        if picture is None:
            return None
        content_type, data = picture
        return Response(200, data, content_type, list(_SERVED_HEADERS))

    async def _picture(self, url: str) -> Optional[tuple]:
        cached = self._cache.get(url)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        pending = self._fetching.get(url)
        if pending is None:
            pending = self._fetching[url] = asyncio.ensure_future(self._fetch(url))
            pending.add_done_callback(lambda _: self._fetching.pop(url, None))
        return await asyncio.shield(pending)

    async def _fetch(self, url: str) -> Optional[tuple]:
        from .http_client import ConnectFailed, NoAnswer, Timeouts
        timeouts = Timeouts(connect=5, read=FETCH_SECONDS, total=FETCH_SECONDS)
        try:
            picture = await self.app.http.download(url, _read_picture, {"Accept": "image/*"}, timeouts)
        except (ConnectFailed, NoAnswer, PictureTooLarge, ValueError):
            picture = None  # the web app shows the channel's initial
        except Exception as error:  # an answer the client could not read: the same, and a line for the operator
            log(f"channel picture {url[:200]} could not be fetched: {error!r}"[:400])
            picture = None
        self._remember(url, picture)
        return picture

    def _remember(self, url: str, picture: Optional[tuple]) -> None:
        now = time.monotonic()
        for old in [key for key, (expires, _) in self._cache.items() if expires <= now]:
            del self._cache[old]
        while len(self._cache) >= CACHE_ENTRIES:
            del self._cache[next(iter(self._cache))]  # the oldest first
        self._cache[url] = (now + (CACHE_SECONDS if picture else FAILURE_SECONDS), picture)
