"""What LinkedIn (a member's profile) and LinkedIn Page (an organization) share: the OAuth app, the versioned
REST API (LinkedIn-Version, Rest.li 2.0), the Posts API with images and video, thread parts as comments,
and LinkedIn's error shape. Not a platform module (it has no PROVIDER): linkedin.py and linkedin_page.py
each subclass LinkedInProviderBase and say who posts (`author`).

Rules of this module:
- Every call to api.linkedin.com/rest sends LinkedIn-Version (linkedin_version(): LINKEDIN_VERSION, or the
  default below) and X-Restli-Protocol-Version: 2.0.0. LinkedIn retires each monthly version about a year
  after its release and then answers 426 NONEXISTENT_VERSION: that error names LINKEDIN_VERSION.
- The post text is LinkedIn's "little text": reserved characters are escaped, hashtags become hashtag
  templates and mentions already in that format (@[Name](urn:li:organization:1)) are kept.
- post_as_images_carousel (Postiz's setting) makes the images the pages of one PDF, posted as a document:
  carousel_pdf() writes it with the standard library alone, embedding JPEG and PNG data undecoded.
"""
from __future__ import annotations

import os
import re
import struct
from typing import Any, NamedTuple, Optional
from urllib.parse import quote, urlsplit

from ..catalogue import ChannelAccount
from ..http_client import HttpReply, Timeouts
from .base import (
    Channel, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, PublishError, Rejected, Release, Retryable,
    error_fields, wait_for_processing,
)
from .oauth import AppCredentials, OAuthProvider, TokenRefused, Tokens, bearer

# A Marketing API version LinkedIn serves (released July 2026; each is served at least a year). The operator
# moves it with LINKEDIN_VERSION when LinkedIn retires it, without waiting for a rustiz release.
LINKEDIN_VERSION_DEFAULT = "202607"
LINKEDIN_MEDIA_WAIT_SECONDS = 180.0  # how long a post waits for LinkedIn to process its video or document
LINKEDIN_ALT_TEXT_LIMIT = 4086  # characters of an image's altText the Posts API accepts
LINKEDIN_DOCUMENT_TITLE_LIMIT = 400  # characters of a document's title kept
PDF_LARGEST_PAGE = 14400  # points: the largest page PDF readers accept
LINKEDIN_UPLOAD_TIMEOUTS = Timeouts(read=120, total=600)
LINKEDIN_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif")  # what the Images API accepts
LINKEDIN_PAGE_LIMIT = 100  # organizations listed in one page of organizationAcls

# Little text (the commentary format of the Posts API): these characters are markup unless escaped.
LITTLE_TEXT_RESERVED = re.compile(r"[|{}@\[\]()<>#\\*_~]")
# Mentions in little text's own format (Postiz's editor writes organization mentions so): kept as they are.
LITTLE_TEXT_MENTION = re.compile(r"@\[[^\]\n]{1,200}\]\(urn:li:(?:organization|person):[A-Za-z0-9_-]{1,100}\)")
# A hashtag: '#' starting a word, with a letter in it ("#1" and a URL's "/#/path" or "page#part" are text).
HASHTAG = re.compile(r"(?<![\w#&/])#(\w{0,99}[^\W\d_]\w{0,99})")
VERSION_FORMAT = re.compile(r"\d{6}(?:\.\d{2})?")  # YYYYMM, or YYYYMM.RR for a patch release


def linkedin_version() -> str:
    """The LinkedIn-Version header: LINKEDIN_VERSION (YYYYMM, or YYYYMM.RR) from the environment, else the default."""
    value = os.environ.get("LINKEDIN_VERSION", "").strip()
    return value or LINKEDIN_VERSION_DEFAULT


def escape_little_text(text: str) -> str:
    return LITTLE_TEXT_RESERVED.sub(lambda match: "\\" + match[0], text)


def little_text(text: str) -> str:
    """`text` as Posts API commentary: reserved characters escaped, #tags as hashtag templates (so LinkedIn
    links them), little-text mentions kept."""
    pieces, start = [], 0
    for mention in LITTLE_TEXT_MENTION.finditer(text):
        pieces.append(_with_hashtags(text[start:mention.start()]))
        pieces.append(mention[0])
        start = mention.end()
    pieces.append(_with_hashtags(text[start:]))
    return "".join(pieces)


def _with_hashtags(text: str) -> str:
    pieces, start = [], 0
    for tag in HASHTAG.finditer(text):
        pieces.append(escape_little_text(text[start:tag.start()]))
        pieces.append("{hashtag|\\#|" + escape_little_text(tag[1]) + "}")
        start = tag.end()
    pieces.append(escape_little_text(text[start:]))
    return "".join(pieces)


def organization_id(value: Any) -> Optional[str]:
    """The numeric id of an organization given as "123" or "urn:li:organization:123"; None for anything else."""
    text = str(value or "").strip()
    if text.startswith("urn:li:organization:"):
        text = text[len("urn:li:organization:"):]
    return text if text.isdigit() and len(text) <= 20 else None


def linkedin_error_words(answer: Any) -> Optional[str]:
    """LinkedIn's own words in its error shape ({"status", "serviceErrorCode", "code", "message"}, with the
    Posts API's errorDetails.inputErrors for a refused field); None for any other answer."""
    if not isinstance(answer, dict) or not isinstance(answer.get("message"), str) or not answer["message"].strip():
        return None
    if not isinstance(answer.get("status"), int) and not isinstance(answer.get("serviceErrorCode"), int):
        return None
    words = answer["message"].strip()
    tags = [answer["code"].strip()] if isinstance(answer.get("code"), str) and answer["code"].strip() else []
    if isinstance(answer.get("serviceErrorCode"), int):
        tags.append(f"serviceErrorCode {answer['serviceErrorCode']}")
    if tags:
        words += f" ({', '.join(tags)})"
    details = answer.get("errorDetails")
    inputs = details.get("inputErrors") if isinstance(details, dict) else None
    for entry in (inputs if isinstance(inputs, list) else [])[:3]:
        if isinstance(entry, dict) and isinstance(entry.get("description"), str):
            where = _field_path(entry)
            words += f"; {where + ': ' if where else ''}{entry['description'].strip()}"
    return words


def _field_path(input_error: dict) -> Optional[str]:
    """The field an inputError names (input.inputPath.fieldPath), if any."""
    source = input_error.get("input")
    path = source.get("inputPath") if isinstance(source, dict) else None
    field = path.get("fieldPath") if isinstance(path, dict) else None
    return field if isinstance(field, str) and field else None


# --- carousels: images as the pages of a PDF document (what LinkedIn shows as a swipeable carousel) --------

class PageImage(NamedTuple):
    """One image as a PDF image XObject: its size, its PDF dictionary entries and its (still encoded) data."""
    width: int
    height: int
    entries: str
    data: bytes


JPEG_FRAME_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # SOFn (not DHT, JPG, DAC)


def jpeg_page(data: bytes) -> Optional[PageImage]:
    """A JPEG embedded as it is (DCTDecode): its size and colours from the frame header; None when unreadable."""
    position = 2
    while data[:2] == b"\xff\xd8" and position + 4 <= len(data):
        if data[position] != 0xFF:
            return None
        marker = data[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        length = struct.unpack(">H", data[position + 2:position + 4])[0]
        if marker in JPEG_FRAME_MARKERS and position + 10 <= len(data):
            height, width, components = struct.unpack(">HHB", data[position + 5:position + 10])
            space = {1: "/DeviceGray", 3: "/DeviceRGB"}.get(components)
            if space is None or not width or not height:
                return None
            return PageImage(width, height, f"/ColorSpace {space} /BitsPerComponent 8 /Filter /DCTDecode", data)
        position += 2 + length
    return None


def png_page(data: bytes) -> Optional[PageImage]:
    """A PNG's compressed rows embedded as they are (FlateDecode with PNG predictors): 8-bit grey, RGB or
    palette, not interlaced; None for others (transparency would need decoding every pixel)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    position, header, palette, rows = 8, None, b"", []
    while position + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        chunk = data[position + 8:position + 8 + length]
        if kind == b"IHDR" and len(chunk) == 13:
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"PLTE":
            palette = chunk
        elif kind == b"IDAT":
            rows.append(chunk)
        elif kind == b"IEND":
            break
        position += 12 + length
    if header is None or not rows:
        return None
    width, height, depth, colour, _, _, interlace = header
    colours = {0: 1, 2: 3, 3: 1}.get(colour)
    if depth != 8 or interlace or colours is None or (colour == 3 and not palette):
        return None
    space = {0: "/DeviceGray", 2: "/DeviceRGB"}.get(colour) or (
        f"[/Indexed /DeviceRGB {len(palette) // 3 - 1} <{palette.hex()}>]")
    return PageImage(width, height, f"/ColorSpace {space} /BitsPerComponent 8 /Filter /FlateDecode "
                     f"/DecodeParms << /Predictor 15 /Colors {colours} /BitsPerComponent 8 /Columns {width} >>",
                     b"".join(rows))


def carousel_pdf(pages: list) -> bytes:
    """A PDF with one page per image, each page the image's size (a pixel is a point, up to PDF_LARGEST_PAGE)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    for page in pages:
        number = len(objects) + 1
        kids.append(f"{number} 0 R")
        # PDF readers refuse pages larger than 14,400 points: a bigger image is drawn smaller.
        scale = min(1.0, PDF_LARGEST_PAGE / max(page.width, page.height))
        width, height = f"{page.width * scale:.6g}", f"{page.height * scale:.6g}"
        drawing = f"q {width} 0 0 {height} 0 0 cm /Im0 Do Q".encode()
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width} {height}] "
                       f"/Resources << /XObject << /Im0 {number + 2} 0 R >> >> /Contents {number + 1} 0 R >>".encode())
        objects.append(b"<< /Length %d >>\nstream\n" % len(drawing) + drawing + b"\nendstream")
        objects.append(f"<< /Type /XObject /Subtype /Image /Width {page.width} /Height {page.height} "
                       f"{page.entries} /Length {len(page.data)} >>\nstream\n".encode() + page.data + b"\nendstream")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode()
    out, offsets = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    table = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, table)
    return bytes(out)


class LinkedInProviderBase(OAuthProvider):
    """LinkedIn's OAuth 2.0 (3-legged, no PKCE, the app's id and secret in the token form) and its Posts API.

    A subclass says whose posts these are (`author`) and what the channel is (`connect`)."""
    app_variables = ("LINKEDIN_CLIENT_ID", "LINKEDIN_CLIENT_SECRET")
    auth_origin = "https://www.linkedin.com"  # the consent page, the token endpoint, and the posts' pages
    api_origin = "https://api.linkedin.com"
    authorize_path = "/oauth/v2/authorization"
    token_path = "/oauth/v2/accessToken"
    pkce = False  # LinkedIn's standard 3-legged flow has no PKCE (it is for its native-app flow only)
    concurrency = 2  # Postiz runs two LinkedIn jobs at once; LinkedIn's daily member limits are small
    can_delete = True  # DELETE /rest/posts/{urn}; a comment: DELETE /rest/socialActions/{post}/comments/{id}
    required_scopes: tuple = ()  # without these the channel cannot post: a token lacking one is refused
    missing_scope_advice = "add the product that grants them to the LinkedIn app, then connect again"

    # --- OAuth ---------------------------------------------------------------------------------------

    def token_request_headers(self, app: AppCredentials) -> dict:
        return {"Accept": "application/json"}  # no HTTP Basic: LinkedIn reads the app from the form

    def token_form_extra(self, app: AppCredentials) -> dict:
        return {"client_id": app.client_id, "client_secret": app.client_secret}

    def tokens_from(self, reply: HttpReply) -> Tokens:
        """Tokens (the refresh token only for apps LinkedIn approved for them), refused when LinkedIn granted
        fewer scopes than posting needs (the app lacks a product), which otherwise shows only as a 403 later."""
        tokens = super().tokens_from(reply)
        answer = reply.json()
        granted = answer.get("scope") if isinstance(answer, dict) else None
        if isinstance(granted, str) and granted.strip():
            names = set(re.split(r"[\s,]+", granted.strip()))
            missing = [scope for scope in self.required_scopes if scope not in names]
            if missing:
                raise TokenRefused(f"LinkedIn granted the scopes {', '.join(sorted(names))} but not "
                                   f"{', '.join(missing)}: {self.missing_scope_advice}", reply.status)
        return tokens

    # --- requests --------------------------------------------------------------------------------------

    def rest_headers(self, channel: Channel) -> dict:
        version = linkedin_version()
        if not VERSION_FORMAT.fullmatch(version):
            raise Rejected(f"LINKEDIN_VERSION is {version[:20]!r}, which is not a LinkedIn API version (YYYYMM, "
                           "e.g. 202607): correct it and restart")
        return {**bearer(channel), "LinkedIn-Version": version, "X-Restli-Protocol-Version": "2.0.0"}

    def rest_url(self, path: str) -> str:
        return f"{self.api_base()}/rest/{path}"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        answer = reply.json()
        return linkedin_error_words(answer) or error_fields(answer, "error", "error_description")

    def platform_words(self, reply: HttpReply) -> str:
        words = super().platform_words(reply)
        if reply.status == 426:  # the LinkedIn-Version sent is retired (NONEXISTENT_VERSION)
            words += (f" — LinkedIn no longer serves API version {linkedin_version()}: set LINKEDIN_VERSION to a "
                      "current version (YYYYMM, LinkedIn lists them under Marketing API versioning) and restart")
        return words

    def where_to_check(self, channel: Channel) -> str:
        return f"the LinkedIn feed of the channel \"{channel.name}\""

    async def read_member(self, channel: Channel) -> dict:
        """The signed-in member (OpenID Connect userinfo: sub, name, picture)."""
        reply = await self.send(channel, "GET", f"{self.api_base()}/v2/userinfo", what="the member's profile (userinfo)",
                                headers=bearer(channel))
        member = reply.json()
        if not isinstance(member, dict) or not isinstance(member.get("sub"), str) or not member["sub"]:
            raise Rejected(f"LinkedIn answered the profile request with {reply.described('a member profile')}",
                           reply.status)
        return member

    @staticmethod
    def member_account(member: dict) -> ChannelAccount:
        name = member.get("name") or " ".join(
            str(member[key]) for key in ("given_name", "family_name") if member.get(key)) or member["sub"]
        picture = member.get("picture") if isinstance(member.get("picture"), str) and member["picture"] else None
        return ChannelAccount(member["sub"], name, None, picture)

    async def author(self, channel: Channel) -> str:
        """The URN the channel posts as: urn:li:person:<id> or urn:li:organization:<id>."""
        raise NotImplementedError

    # --- publishing -------------------------------------------------------------------------------------

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        author = await self.author(channel)
        if parent is not None:
            return await self._comment(channel, author, post, parent)
        body: dict = {"author": author, "commentary": little_text(post.text), "visibility": "PUBLIC",
                      "distribution": {"feedDistribution": "MAIN_FEED", "targetEntities": [],
                                       "thirdPartyDistributionChannels": []},
                      "lifecycleState": "PUBLISHED", "isReshareDisabledByAuthor": False}
        if post.settings.get("post_as_images_carousel") and post.media:
            content = await self._carousel(channel, author, post)
        else:
            content = await self._content(channel, author, post.media)
        if content:
            body["content"] = content
        reply = await self.send(channel, "POST", self.rest_url("posts"), visible=True, what="the post",
                                json_body=body, headers=self.rest_headers(channel))
        urn = reply.headers.get("x-restli-id", "").strip()
        if not urn.startswith("urn:li:"):
            raise OutcomeUnknown(f"LinkedIn accepted the post (HTTP {reply.status}) but sent no post id "
                                 "(x-restli-id)", reply.status)
        return Release(urn, self.post_url(urn), {"root": urn})

    async def delete(self, channel: Channel, release: Release) -> None:
        """The post (DELETE /rest/posts/{urn}), or a thread part's comment as its author (actor)."""
        headers = {**self.rest_headers(channel), "X-RestLi-Method": "DELETE"}
        comment = re.fullmatch(r"urn:li:comment:\((.+),(\d+)\)", release.id)
        if comment is None:
            await self.send_delete(channel, "DELETE", self.rest_url(f"posts/{quote(release.id, safe='')}"),
                                   "the deletion of the post", headers=headers)
            return
        root = release.reply_ref.get("root") if isinstance(release.reply_ref, dict) else None
        if not isinstance(root, str) or not root:
            raise Rejected(f"the comment {release.id[:80]} has no post recorded with it")
        actor = quote(await self.author(channel), safe="")
        await self.send_delete(channel, "DELETE", self.rest_url(
            f"socialActions/{quote(root, safe='')}/comments/{comment[2]}?actor={actor}"), "the deletion of the comment",
            headers=headers)

    def post_url(self, urn: str) -> str:
        # The posts' pages live on the same origin as the consent page (www.linkedin.com).
        return f"{self.auth_base()}/feed/update/{urn}"

    async def _comment(self, channel: Channel, author: str, post: OutgoingPost, parent: Release) -> Release:
        """A thread part: a comment on the post (every part comments on the post itself, as in Postiz)."""
        if post.media:
            raise Rejected("LinkedIn comments can only contain text")
        root = parent.reply_ref.get("root") if isinstance(parent.reply_ref, dict) else None
        root = root or parent.id
        reply = await self.send(channel, "POST", self.rest_url(f"socialActions/{quote(root, safe='')}/comments"),
                                visible=True, what="the comment",
                                # Comments take no little-text templates; reserved characters are still
                                # escaped, as LinkedIn otherwise may cut the text at the first one.
                                json_body={"actor": author, "object": root,
                                           "message": {"text": escape_little_text(post.text)}},
                                headers=self.rest_headers(channel))
        answer = reply.json()
        urn = (answer.get("commentUrn") if isinstance(answer, dict) else None) or reply.headers.get("x-restli-id", "")
        if not isinstance(urn, str) or not urn.startswith("urn:li:"):
            raise OutcomeUnknown(f"LinkedIn accepted the comment but answered {reply.described('a comment')}",
                                 reply.status)
        return Release(urn, f"{self.post_url(root)}?commentUrn={quote(urn, safe='')}", {"root": root})

    async def _content(self, channel: Channel, author: str, media: tuple) -> Optional[dict]:
        """The post's `content`: one image or video (media), several images (multiImage), or None."""
        if not media:
            return None
        uploaded = []
        for number, item in enumerate(media, 1):
            what = f"media item {number}"
            if item.kind != "video" and item.content_type not in LINKEDIN_IMAGE_TYPES:
                raise Rejected(f"LinkedIn takes JPEG, PNG and GIF images, and {what} is {item.content_type}",
                               item=what)
            try:
                if item.kind == "video":
                    urn = await self._upload_video(channel, author, item, what)
                else:
                    urn = await self._upload_image(channel, author, item, what)
            except PublishError as error:
                error.item = error.item or what
                raise
            entry = {"id": urn}
            if item.kind != "video" and item.alt:
                entry["altText"] = item.alt[:LINKEDIN_ALT_TEXT_LIMIT]
            uploaded.append(entry)
        if len(uploaded) == 1:
            return {"media": uploaded[0]}
        return {"multiImage": {"images": uploaded}}

    async def _carousel(self, channel: Channel, author: str, post: OutgoingPost) -> dict:
        """post_as_images_carousel: the images as the pages of one PDF, posted as a document (as Postiz does)."""
        pages = []
        for number, item in enumerate(post.media, 1):
            data = item.read()
            page = jpeg_page(data) or png_page(data)
            if page is None:
                raise Rejected(f"media item {number} cannot be a carousel page: rustiz makes LinkedIn carousels from "
                               "JPEG images and PNG images without transparency (8-bit, not interlaced)",
                               item=f"media item {number}")
            pages.append(page)
        what = "the carousel (a PDF of the images)"
        try:
            value = await self._initialize_upload(channel, "documents", {"owner": author}, what)
            url, urn = value.get("uploadUrl"), value.get("document")
            if not isinstance(url, str) or not isinstance(urn, str) or not urn.startswith("urn:li:document:"):
                raise Retryable(f"LinkedIn's initializeUpload of {what} named no upload URL or document")
            await self.send(channel, "PUT", url, what=f"the upload of {what}", body=carousel_pdf(pages),
                            headers=self.upload_headers(channel, url, "application/pdf"),
                            timeouts=LINKEDIN_UPLOAD_TIMEOUTS)
            await self._wait_until_available(channel, "documents", urn, what)
        except PublishError as error:
            error.item = error.item or what
            raise
        title = str(post.settings.get("carousel_name") or "").strip() or "slides.pdf"
        return {"media": {"title": title[:LINKEDIN_DOCUMENT_TITLE_LIMIT], "id": urn}}

    async def _initialize_upload(self, channel: Channel, kind: str, request: dict, what: str) -> dict:
        reply = await self.send(channel, "POST", self.rest_url(f"{kind}?action=initializeUpload"),
                                what=f"the upload of {what} (initializeUpload)",
                                json_body={"initializeUploadRequest": request}, headers=self.rest_headers(channel))
        answer = reply.json()
        value = answer.get("value") if isinstance(answer, dict) else None
        if not isinstance(value, dict):
            raise Retryable(f"LinkedIn answered initializeUpload of {what} with "
                            f"{reply.described('an upload to make')}", reply.status)
        return value

    def upload_headers(self, channel: Channel, url: str, content_type: str) -> dict:
        """The headers of a PUT to an upload URL LinkedIn gave: its token only when the URL is LinkedIn's own
        (https on linkedin.com, or the API's origin), never to another host an answer may name."""
        parts, api = urlsplit(url), urlsplit(self.api_base())
        host = (parts.hostname or "").lower()
        own = (parts.scheme == "https" and (host == "linkedin.com" or host.endswith(".linkedin.com"))) or (
            (parts.scheme, parts.netloc) == (api.scheme, api.netloc))
        return {**(self.rest_headers(channel) if own else {}), "Content-Type": content_type}

    async def _upload_image(self, channel: Channel, author: str, media: MediaFile, what: str) -> str:
        value = await self._initialize_upload(channel, "images", {"owner": author}, what)
        url, urn = value.get("uploadUrl"), value.get("image")
        if not isinstance(url, str) or not isinstance(urn, str) or not urn.startswith("urn:li:image:"):
            raise Retryable(f"LinkedIn's initializeUpload of {what} named no upload URL or image")
        await self.send(channel, "PUT", url, what=f"the upload of {what}", body=media.read(),
                        headers=self.upload_headers(channel, url, media.content_type), timeouts=LINKEDIN_UPLOAD_TIMEOUTS)
        return urn

    async def _upload_video(self, channel: Channel, author: str, media: MediaFile, what: str) -> str:
        """Initialize, PUT each part LinkedIn asks for (byte ranges), finalize with the parts' ETags, then
        wait (bounded) until LinkedIn has processed it: a post cannot use a video still processing."""
        data = media.read()
        value = await self._initialize_upload(channel, "videos", {
            "owner": author, "fileSizeBytes": len(data), "uploadCaptions": False, "uploadThumbnail": False}, what)
        urn, instructions = value.get("video"), value.get("uploadInstructions")
        if not isinstance(urn, str) or not urn.startswith("urn:li:video:") or not isinstance(instructions, list) \
                or not instructions:
            raise Retryable(f"LinkedIn's initializeUpload of {what} named no video or upload instructions")
        etags = []
        for part, instruction in enumerate(instructions, 1):
            first, last = (instruction.get("firstByte"), instruction.get("lastByte")) \
                if isinstance(instruction, dict) else (None, None)
            url = instruction.get("uploadUrl") if isinstance(instruction, dict) else None
            if not (isinstance(first, int) and isinstance(last, int) and 0 <= first <= last < len(data)
                    and isinstance(url, str)):
                raise Retryable(f"LinkedIn's upload instructions for {what} do not fit the file (part {part})")
            reply = await self.send(channel, "PUT", url, what=f"part {part} of {what}", body=data[first:last + 1],
                                    headers=self.upload_headers(channel, url, "application/octet-stream"),
                                    timeouts=LINKEDIN_UPLOAD_TIMEOUTS)
            etag = reply.headers.get("etag", "").strip()
            if not etag:
                raise Retryable(f"LinkedIn answered part {part} of {what} without an ETag")
            etags.append(etag)
        await self.send(channel, "POST", self.rest_url("videos?action=finalizeUpload"),
                        what=f"the upload of {what} (finalizeUpload)", headers=self.rest_headers(channel),
                        json_body={"finalizeUploadRequest": {"video": urn, "uploadToken": value.get("uploadToken") or "",
                                                             "uploadedPartIds": etags}})
        await self._wait_until_available(channel, "videos", urn, what)
        return urn

    async def _wait_until_available(self, channel: Channel, kind: str, urn: str, what: str) -> None:
        """Poll the video or document (PROCESSING, then AVAILABLE or PROCESSING_FAILED) at growing intervals,
        bounded: a post cannot use one still processing."""
        async def available() -> Optional[bool]:
            reply = await self.send(channel, "GET", self.rest_url(f"{kind}/{quote(urn, safe='')}"),
                                    what=f"the processing of {what}", headers=self.rest_headers(channel))
            answer = reply.json()
            status = answer.get("status") if isinstance(answer, dict) else None
            if status == "PROCESSING_FAILED":
                reason = answer.get("processingFailureReason")
                raise Rejected(f"LinkedIn could not process {what}"
                               + (f": {reason}" if isinstance(reason, str) and reason else ""), item=what)
            return True if status == "AVAILABLE" else None

        await wait_for_processing(
            available, LINKEDIN_MEDIA_WAIT_SECONDS, 0.25,
            lambda: Retryable(f"LinkedIn was still processing {what} after {LINKEDIN_MEDIA_WAIT_SECONDS:.0f} s; the "
                              "post waits and tries again", item=what), longest_pause=5.0)


def needs_choice(label: str) -> NeedsReconnect:
    return NeedsReconnect(f"no {label} was chosen for this channel: connect it again and pick one")

