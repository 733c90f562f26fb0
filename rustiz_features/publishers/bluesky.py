"""Bluesky (AT Protocol): app-password sessions, text facets in UTF-8 byte offsets, link cards, images and
video, replies as threads; a fixed record key per part, so a repeat after an unknown outcome is recognised.
"""
from __future__ import annotations

import json
import re
import time
from typing import Any, Optional

from rustiz import sha256, utc_now_iso
from ..catalogue import ChannelAccount
from ..http_client import ConnectFailed, HttpReply, NoAnswer, Timeouts
from ..text import html_to_text
from .base import (
    Channel, Connected, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, Provider, PublishError, Rejected,
    Release, Retryable, analytics_figures, error_fields,
)



BLUESKY_MAX_TEXT_BYTES = 3000
BLUESKY_MAX_IMAGE_BYTES = 1_000_000  # app.bsky.embed.images: maxSize of each image blob
BLUESKY_MAX_VIDEO_BYTES = 100_000_000  # app.bsky.embed.video: maxSize of the video blob


# Common generic TLDs a bare domain may end in (any two-letter country code counts too), so that
# "see example.com" becomes a link as in Bluesky's app, while "file.txt" or "e.g" do not.
_BARE_DOMAIN_TLDS = frozenset(
    "com org net edu gov mil int info biz name pro dev app io ai social blog page site online tech xyz club "
    "news art shop store live life world today space cloud design media network systems digital email link "
    "one top wiki zone fun lol moe gay eu asia mobi travel museum coop aero jobs tel".split())
_TRAILING_PUNCTUATION = ".,;:!?"
_LINK = r"(?i)(?:^|(?<=[\s(]))(?:(https?://\S+)|([a-z][a-z0-9]*(?:\.[a-z0-9]+)+\S*))"
_MENTION = r"(?:^|(?<=[\s(]))@([a-zA-Z0-9.-]+)"
_HASHTAG = r"(?:^|(?<=\s))[#\uff03]((?!\ufe0f)[^\s\u00ad\u2060\u200a\u200b\u200c\u200d\u20e2]+)"


def _trim_link(uri: str) -> str:
    """Bluesky's rule: a link does not end in sentence punctuation, nor in a ")" it did not open (the
    app checks for any "(", which keeps the ")" closing a sentence after a Wikipedia link; this counts)."""
    while uri and (uri[-1] in _TRAILING_PUNCTUATION or (uri[-1] == ")" and uri.count(")") > uri.count("("))):
        uri = uri[:-1]
    return uri


def _is_domain_name(name: str) -> bool:
    labels = name.lower().split(".")
    tld = labels[-1]
    return len(labels) >= 2 and all(labels) and tld.isalpha() and (len(tld) == 2 or tld in _BARE_DOMAIN_TLDS)


def bluesky_text_spans(text: str) -> list:
    """[(kind, start, end, value)] of the links, @mentions and #hashtags in `text` as Bluesky's app detects
    them: character offsets, and the link's full URI, the handle, or the tag without its '#'."""
    spans = []
    for match in re.finditer(_LINK, text):
        uri = _trim_link(match.group(0))
        if match.group(2):  # a bare domain: only with a real-looking TLD, and made https://
            domain = re.match(r"[a-z0-9.]+", uri, re.IGNORECASE).group(0).rstrip(".")
            if not _is_domain_name(domain):
                continue
            spans.append(("link", match.start(), match.start() + len(uri), "https://" + uri))
        elif len(uri) > len("https://"):
            spans.append(("link", match.start(), match.start() + len(uri), uri))
    for match in re.finditer(_MENTION, text):
        handle = match.group(1).rstrip(".-")
        if "." in handle and handle.rsplit(".", 1)[-1].isalpha():  # resolveHandle tells the real ones
            spans.append(("mention", match.start(), match.start(1) + len(handle), handle.lower()))
    for match in re.finditer(_HASHTAG, text):
        tag = match.group(1).rstrip(_TRAILING_PUNCTUATION + "'\")]}")
        if tag and not tag.isdigit() and len(tag) <= 64:
            spans.append(("tag", match.start(), match.start(1) + len(tag), tag))
    spans.sort(key=lambda span: span[1])
    return [span for index, span in enumerate(spans) if index == 0 or span[1] >= spans[index - 1][2]]


def utf8_offset(text: str, index: int) -> int:
    """The byte offset of character `index` in the UTF-8 form of `text` (facets count bytes)."""
    return len(text[:index].encode())


_TID_ALPHABET = "234567abcdefghijklmnopqrstuvwxyz"


_TID_FALLBACK_EPOCH = 1_700_000_000  # Nov 2023: a plausible time for a post id that is not a cuid


def deterministic_tid(post_id: str, idempotency_key: str) -> str:
    """A record key in TID form (13 base32-sortable chars: 53 bits of microseconds, 10 bits of clock id)
    that is the same on every attempt of a part: the time in the post's cuid id (when it was created),
    plus microseconds and a clock id from a hash of the part's idempotency key (new for each edit or
    recurrence). A repeated createRecord then meets the first attempt's record instead of making a second."""
    digest = sha256(idempotency_key.encode()).digest()
    created = re.fullmatch(r"c([0-9a-z]{8})[0-9a-z]{16}", post_id)
    seconds = int(created.group(1), 36) // 1000 if created else _TID_FALLBACK_EPOCH
    micros = seconds * 1_000_000 + int.from_bytes(digest[:4], "big") % 1_000_000
    number = (micros << 10) | (int.from_bytes(digest[4:6], "big") & 0x3FF)
    return "".join(_TID_ALPHABET[(number >> shift) & 31] for shift in range(60, -1, -5))


def image_dimensions(data: bytes) -> Optional[tuple]:
    """(width, height) read from a PNG, GIF, JPEG or WebP header, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if data.startswith((b"GIF87a", b"GIF89a")):
        return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        chunk = data[12:16]
        if chunk == b"VP8X":
            return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
        if chunk == b"VP8 ":
            return int.from_bytes(data[26:28], "little") & 0x3FFF, int.from_bytes(data[28:30], "little") & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        return None
    if data.startswith(b"\xff\xd8"):
        return _jpeg_dimensions(data)
    return None


def _jpeg_dimensions(data: bytes) -> Optional[tuple]:
    position = 2
    while position + 9 < len(data):
        if data[position] != 0xFF:
            return None
        marker = data[position + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
            position += 1 if marker == 0xFF else 2
            continue
        length = int.from_bytes(data[position + 2:position + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a start-of-frame segment
            return int.from_bytes(data[position + 7:position + 9], "big"), int.from_bytes(data[position + 5:position + 7], "big")
        position += 2 + length
    return None


def _page_card(page: str, uri: str) -> dict:
    """An app.bsky.embed.external card from a page's og:title/<title> and og:description."""
    import html as html_module

    def meta(name: str) -> str:
        for tag in re.findall(r"<meta\b[^>]*>", page, re.IGNORECASE):
            if re.search(rf"""(?:property|name)\s*=\s*["']{re.escape(name)}["']""", tag, re.IGNORECASE):
                content = re.search(r"""content\s*=\s*(?:"([^"]*)"|'([^']*)')""", tag, re.IGNORECASE)
                if content:
                    return html_module.unescape(content.group(1) or content.group(2) or "").strip()
        return ""

    title_tag = re.search(r"<title[^>]*>(.*?)</title>", page, re.IGNORECASE | re.DOTALL)
    title = meta("og:title") or (html_module.unescape(title_tag.group(1)).strip() if title_tag else "")
    description = meta("og:description") or meta("description")
    return {"uri": uri, "title": " ".join(title.split())[:300] or uri, "description": description[:1000]}


def _bluesky_session(answer: dict) -> dict:
    return {name: answer[name] for name in ("accessJwt", "refreshJwt", "did", "handle") if name in answer}


def _jwt_expiry(token: str) -> Optional[float]:
    """The `exp` claim of a JWT (not verified: only to refresh before the PDS would refuse it)."""
    import base64
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    expiry = claims.get("exp") if isinstance(claims, dict) else None
    return float(expiry) if isinstance(expiry, (int, float)) else None


class _BlueskyTokenRefused(NeedsReconnect):
    """The PDS refused the session's token (ExpiredToken, InvalidToken): refresh it, or log in again."""


_BLUESKY_ACCOUNT_ERRORS = ("AuthenticationRequired", "AccountTakedown", "AccountDeactivated", "AuthFactorTokenRequired")


class BlueskyProvider(Provider):
    """Bluesky, or any AT Protocol PDS: an app password, a cached session (refreshed, not re-logged-in:
    createSession allows 30 logins per 5 min and 100-300 a day), posts with facets, cards, images, replies."""
    identifier = "bluesky"
    # Each part has a deterministic record key: a resend finds the first attempt's record instead of
    # making a second post (see _create_post).
    resend_is_safe = True
    concurrency = 2
    spacing = 1.0
    can_delete = True  # com.atproto.repo.deleteRecord

    @staticmethod
    def _xrpc(channel: Channel, method: str) -> str:
        return channel.credentials["service"].rstrip("/") + "/xrpc/" + method

    # --- the session ------------------------------------------------------------------------------

    async def connect(self, channel: Channel) -> Connected:
        await self._log_in(channel)
        session = channel.session
        name, picture = session.get("handle") or session["did"], None
        try:
            reply = await self._call(channel, "GET", "app.bsky.actor.getProfile", what="the profile",
                                     params={"actor": session["did"]})
            profile = reply.json() or {}
            name = profile.get("displayName") or name
            picture = profile.get("avatar") if isinstance(profile.get("avatar"), str) else None
        except (Retryable, Rejected):  # a PDS without an AppView (self-hosted, tests): the handle will do
            pass
        account = ChannelAccount(session["did"], name, session.get("handle"), picture)
        return Connected(account, session=channel.session)

    async def _log_in(self, channel: Channel) -> dict:
        """com.atproto.server.createSession: only when there is no session, or its refresh token is dead."""
        credentials = channel.credentials
        reply = await self.send(channel, "POST", self._xrpc(channel, "com.atproto.server.createSession"),
                                what="the login (createSession)",
                                json_body={"identifier": credentials["identifier"].strip().lstrip("@"),
                                           "password": credentials["password"]})
        session = _bluesky_session(reply.json() or {})
        if "accessJwt" not in session or "did" not in session:
            raise Retryable(f"{self.label} answered the login with {reply.described('a session')}")
        channel.save_session(session)
        return channel.session

    async def _refreshed(self, channel: Channel) -> dict:
        """com.atproto.server.refreshSession with the refresh token; a new login when that is refused too."""
        refresh_token = channel.session.get("refreshJwt")
        if refresh_token:
            try:
                reply = await self.send(channel, "POST", self._xrpc(channel, "com.atproto.server.refreshSession"),
                                        what="the session refresh",
                                        headers={"Authorization": f"Bearer {refresh_token}"})
                fresh = _bluesky_session(reply.json() or {})
                if "accessJwt" in fresh:
                    channel.save_session({**channel.session, **fresh})
                    return channel.session
            except NeedsReconnect:
                pass
        return await self._log_in(channel)

    async def _call(self, channel: Channel, method: str, nsid: str, visible: bool = False, what: str = "",
                    params: Optional[dict] = None, headers: Optional[dict] = None, **request: Any) -> HttpReply:
        """An authenticated XRPC call with the cached session, refreshed once if the PDS refuses its token."""
        from urllib.parse import urlencode
        url = self._xrpc(channel, nsid) + ("?" + urlencode(params) if params else "")
        session = channel.session if channel.session.get("accessJwt") else await self._log_in(channel)
        expiry = _jwt_expiry(session["accessJwt"])
        if expiry is not None and expiry < time.time() + 60:
            session = await self._refreshed(channel)

        async def attempt(session: dict) -> HttpReply:
            return await self.send(channel, method, url, visible=visible, what=what, **request,
                                   headers={**(headers or {}), "Authorization": f"Bearer {session['accessJwt']}"})
        try:
            return await attempt(session)
        except _BlueskyTokenRefused:  # refused before acting on it: safe to send again with a new token
            session = await self._refreshed(channel)
        try:
            return await attempt(session)
        except _BlueskyTokenRefused as refused:
            raise NeedsReconnect(f"{self.label} refused a fresh session too: {refused.message}",
                                 refused.status, refused.body) from None

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """XRPC errors are {"error": name, "message": text}: token trouble is told apart from the rest."""
        if 200 <= reply.status < 300:
            return reply
        body = reply.json()
        name = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), str) else ""
        words, excerpt = self.platform_words(reply), self.error_excerpt(reply)
        if name in ("ExpiredToken", "InvalidToken") and reply.status in (400, 401):
            raise _BlueskyTokenRefused(f"{self.label} refused the session token on {what} "
                                       f"(HTTP {reply.status}): {words}", reply.status, excerpt)
        if name in _BLUESKY_ACCOUNT_ERRORS or reply.status == 401:
            raise NeedsReconnect(f"{self.label} refused the account's credentials on {what} (HTTP {reply.status}): "
                                 f"{words}. Check the handle and the app password (Settings > Privacy and "
                                 "security > App passwords)", reply.status, excerpt)
        if 400 <= reply.status < 500 and reply.status != 429:
            raise Rejected(f"{self.label} refused {what} (HTTP {reply.status}): {words}", reply.status, excerpt)
        return super().check_reply(reply, visible, what)

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "error", "message")  # XRPC's {"error": name, "message": text}

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        session = channel.session if channel.session.get("did") else await self._log_in(channel)
        reply = await self._call(channel, "GET", "app.bsky.actor.getProfile", what="the account's counts",
                                 params={"actor": session["did"]})
        profile = reply.json() if isinstance(reply.json(), dict) else {}
        return analytics_figures({"Followers": profile.get("followersCount"), "Following": profile.get("followsCount"),
                                  "Posts": profile.get("postsCount")})

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        reply = await self._call(channel, "GET", "app.bsky.feed.getPosts", what="the post's counts",
                                 params={"uris": release.id})
        answer = reply.json() if isinstance(reply.json(), dict) else {}
        posts = answer.get("posts") if isinstance(answer.get("posts"), list) else []
        post = posts[0] if posts and isinstance(posts[0], dict) else {}
        return analytics_figures({"Likes": post.get("likeCount"), "Reposts": post.get("repostCount"),
                                  "Replies": post.get("replyCount"), "Quotes": post.get("quoteCount")})

    def where_to_check(self, channel: Channel) -> str:
        handle = channel.session.get("handle") or channel.credentials.get("identifier", "")
        return f"the Bluesky profile https://bsky.app/profile/{handle}"

    # --- checks before a post is accepted -----------------------------------------------------

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        """Each part's length as the descriptor counts it (graphemes, 300) and its bytes. Media is checked when
        publishing: sizes need the files, and a video with pictures passes Postiz's own rule (which its
        API accepts), so that mix fails then."""
        for number, value in enumerate(values, 1):
            where = "the post" if number == 1 else f"thread part {number}"
            graphemes, limit = self.measured(channel, value["content"])
            if graphemes > limit:
                return (f"Bluesky allows {limit} characters (graphemes) per post; {where} has "
                        f"{graphemes}: shorten it or split it into thread parts")
            text = html_to_text(value["content"])
            if len(text.encode()) > BLUESKY_MAX_TEXT_BYTES:
                return (f"Bluesky allows {BLUESKY_MAX_TEXT_BYTES} bytes of text per post; {where} has "
                        f"{len(text.encode())}")
        return None

    # --- publishing ---------------------------------------------------------------------------

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        if not channel.session.get("accessJwt"):  # a channel connected before rustiz kept Bluesky sessions
            await self._log_in(channel)
        text = post.text
        record: dict = {"$type": "app.bsky.feed.post", "text": text, "createdAt": utc_now_iso()}
        facets, first_link = await self._facets(channel, text)
        if facets:
            record["facets"] = facets
        if len(post.media) == 1 and post.media[0].kind == "video":
            record["embed"] = await self._video_embed(channel, post.media[0])
        elif post.media:
            record["embed"] = await self._images_embed(channel, post.media)
        elif first_link:
            record["embed"] = {"$type": "app.bsky.embed.external", "external": await self._link_card(channel, first_link)}
        if parent is not None:
            refs = parent.reply_ref if isinstance(parent.reply_ref, dict) else {}
            if not (isinstance(refs.get("root"), dict) and isinstance(refs.get("parent"), dict)):
                raise Rejected(f"the part before this one has no Bluesky reply reference (release {parent.id})")
            record["reply"] = {"root": refs["root"], "parent": refs["parent"]}
        created = await self._create_post(channel, record, deterministic_tid(post.id, post.idempotency_key))
        this = {"uri": created["uri"], "cid": created["cid"]}
        root = record["reply"]["root"] if parent is not None else this
        did, _, rkey = created["uri"][len("at://"):].partition("/app.bsky.feed.post/")
        return Release(created["uri"], f"https://bsky.app/profile/{did}/post/{rkey}", {"root": root, "parent": this})

    async def delete(self, channel: Channel, release: Release) -> None:
        """com.atproto.repo.deleteRecord of the part's at:// record (a record already gone deletes nothing, and
        the PDS answers it as a success)."""
        repo, _, rest = release.id.removeprefix("at://").partition("/")
        collection, _, rkey = rest.partition("/")
        if not release.id.startswith("at://") or not (repo and collection and rkey):
            raise Rejected(f"{release.id[:80]!r} is not the at:// address of a Bluesky record")
        await self._call(channel, "POST", "com.atproto.repo.deleteRecord", what="the deletion of the post",
                         json_body={"repo": repo, "collection": collection, "rkey": rkey})

    async def _create_post(self, channel: Channel, record: dict, rkey: str) -> dict:
        """createRecord under the part's own record key. When the answer is an error or lost, the record
        may exist from this or an earlier attempt (the PDS refuses a second create at the same key): it
        is looked up, and if it is there, that is the post."""
        body = {"repo": channel.session["did"], "collection": "app.bsky.feed.post", "rkey": rkey, "record": record}
        try:
            reply = await self._call(channel, "POST", "com.atproto.repo.createRecord", visible=True,
                                     what="the post", json_body=body)
        except (OutcomeUnknown, Retryable, Rejected) as failed:
            existing = await self._existing_post(channel, rkey)
            if existing is None:
                raise failed
            return existing
        created = reply.json() or {}
        if not (isinstance(created.get("uri"), str) and isinstance(created.get("cid"), str)):
            raise OutcomeUnknown(f"{self.label} accepted the post but did not say where it is: "
                                 f"{reply.described('a record reference')}")
        return created

    async def _existing_post(self, channel: Channel, rkey: str) -> Optional[dict]:
        try:
            reply = await self._call(channel, "GET", "com.atproto.repo.getRecord", what="the post's record",
                                     params={"repo": channel.session["did"], "collection": "app.bsky.feed.post",
                                             "rkey": rkey})
        except PublishError:
            return None
        found = reply.json() or {}
        return found if isinstance(found.get("uri"), str) and isinstance(found.get("cid"), str) else None

    async def _facets(self, channel: Channel, text: str) -> tuple:
        """(app.bsky.richtext.facet list with UTF-8 byte offsets, the first link's URI or None)."""
        facets, first_link = [], None
        for kind, start, end, value in bluesky_text_spans(text):
            if kind == "link":
                feature = {"$type": "app.bsky.richtext.facet#link", "uri": value}
                first_link = first_link or value
            elif kind == "tag":
                feature = {"$type": "app.bsky.richtext.facet#tag", "tag": value}
            else:
                did = await self._resolve_handle(channel, value)
                if did is None:  # not a Bluesky account: it stays plain text, as in the app
                    continue
                feature = {"$type": "app.bsky.richtext.facet#mention", "did": did}
            facets.append({"index": {"byteStart": utf8_offset(text, start), "byteEnd": utf8_offset(text, end)},
                           "features": [feature]})
        return facets, first_link

    async def _resolve_handle(self, channel: Channel, handle: str) -> Optional[str]:
        try:
            reply = await self._call(channel, "GET", "com.atproto.identity.resolveHandle", what=f"the handle @{handle}",
                                     params={"handle": handle})
        except Rejected:  # "Unable to resolve handle"
            return None
        did = (reply.json() or {}).get("did")
        return did if isinstance(did, str) else None

    async def _link_card(self, channel: Channel, uri: str) -> dict:
        """The card of a link: the page's title and description, fetched quickly; the bare URL if that fails."""
        try:
            reply = await channel.http.request("GET", uri, headers={"Accept": "text/html"}, timeouts=Timeouts(3, 5, 8))
        except (ConnectFailed, NoAnswer):
            return {"uri": uri, "title": uri, "description": ""}
        if reply.status != 200 or "html" not in reply.headers.get("content-type", "html"):
            return {"uri": uri, "title": uri, "description": ""}
        return _page_card(reply.body[:512 * 1024].decode("utf-8", "replace"), uri)

    async def _video_embed(self, channel: Channel, video: MediaFile) -> dict:
        """Bluesky's documented simple method: the video uploaded to the PDS as a blob, like an image; the
        video service processes it once the post is out (it plays a few seconds later)."""
        data = video.read()
        if len(data) > BLUESKY_MAX_VIDEO_BYTES:
            raise Rejected(f"Bluesky takes videos up to {BLUESKY_MAX_VIDEO_BYTES:,} bytes and this one has "
                           f"{len(data):,}", item="media item 1")
        try:
            reply = await self._call(channel, "POST", "com.atproto.repo.uploadBlob", what="the video",
                                     body=data, headers={"Content-Type": video.content_type})
        except PublishError as failed:
            failed.item = "media item 1"
            raise
        embed = {"$type": "app.bsky.embed.video", "video": (reply.json() or {}).get("blob")}
        if video.alt:
            embed["alt"] = video.alt
        return embed

    async def _images_embed(self, channel: Channel, media: tuple) -> dict:
        """Each image uploaded as a blob (raw bytes), then one app.bsky.embed.images with alt texts."""
        images = []
        for index, item in enumerate(media, 1):
            if item.kind != "image":
                raise Rejected("a Bluesky post carries either one video or up to 4 pictures, not both: put the "
                               "video in a thread part of its own, then retry the post", item=f"media item {index}")
            data = item.read()
            if len(data) > BLUESKY_MAX_IMAGE_BYTES:
                raise Rejected(f"Bluesky takes images up to {BLUESKY_MAX_IMAGE_BYTES:,} bytes and this one has "
                               f"{len(data):,}: make it smaller, then retry the post", item=f"media item {index}")
        for index, item in enumerate(media, 1):
            data = item.read()
            try:
                reply = await self._call(channel, "POST", "com.atproto.repo.uploadBlob", what=f"image {index}",
                                         body=data, headers={"Content-Type": item.content_type})
            except PublishError as failed:
                failed.item = f"media item {index}"
                raise
            image = {"alt": item.alt or "", "image": (reply.json() or {}).get("blob")}
            size = image_dimensions(data)
            if size and size[0] > 0 and size[1] > 0:
                image["aspectRatio"] = {"width": size[0], "height": size[1]}
            images.append(image)
        return {"$type": "app.bsky.embed.images", "images": images}


PROVIDER = BlueskyProvider()
