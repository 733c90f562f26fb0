"""Media: uploads (multipart, streamed to disk), upload-from-url, and serving the files.

Rules:
- A file's type is read from its bytes, never from its name or the client's Content-Type.
- Nothing is held whole in memory: uploads stream to a temporary file, downloads too, each with its size
  limit; a file is moved into the library only once complete and checked.
- upload-from-url downloads through the App's HttpClient (its address guard).
- With RUSTIZ_STORAGE=s3://... (Config.storage) uploads still stage in the local .incoming folder, then go to
  the bucket at the same relative path under its prefix; a Media row exists only once its object does.
  GET /uploads/... then redirects to a presigned URL, or streams the object (RUSTIZ_UPLOADS_SERVE=stream).
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from typing import TYPE_CHECKING, Any, Awaitable, Optional, Union

from rustiz import (
    ApiError, App, BodySink, FileResponse, MAX_IMAGE_BYTES, Request, Response, bad_request, json_response, log,
    make_private_folders, nest_error, not_found, route_options,
)
from .api_docs import STRING, documented, object_schema, parameter, ref
from .picture_size import picture_size
from .storage import media_library as media_store

# The outbound client and the catalogue's URL check serve upload-from-url alone: fetch_media imports them, so
# that the primary worker's housekeeping (which removes abandoned uploads at start) loads neither.
if TYPE_CHECKING:
    from .http_client import HttpClient, HttpReply
    from .object_storage import Bucket


# The multipart events and the media value types are plain slotted classes: each NamedTuple
# costs about 0.1 ms of start-up, and nothing here needs tuple behaviour.


class PartHead:
    """The start of one multipart/form-data part."""
    __slots__ = ("name", "filename", "content_type")

    def __init__(self, name: Optional[str], filename: Optional[str], content_type: Optional[str]):
        self.name = name  # the form field
        self.filename = filename
        self.content_type = content_type


class PartData:
    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data


class PartEnd:
    __slots__ = ()


class MultipartError(ValueError):
    """The multipart body is malformed; the message says how, for the client's developer."""


_PREAMBLE, _AFTER_DELIMITER, _PART_HEAD, _PART_BODY, _EPILOGUE = range(5)
_PART_END = PartEnd()
# Regular expressions used only by uploads stay source text here: re compiles (and caches) them on
# first use, which keeps their compilation out of every start-up.
_HEADER_PARAMETER = r';\s*([A-Za-z*]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]*))'
_MAX_PART_HEAD_BYTES = 16 * 1024


def multipart_boundary(content_type: str) -> Optional[bytes]:
    """The boundary of a `multipart/form-data; boundary=...` Content-Type, or None for any other type."""
    media_type, _, parameters = content_type.partition(";")
    if media_type.strip().lower() != "multipart/form-data":
        return None
    for name, quoted, plain in re.findall(_HEADER_PARAMETER, ";" + parameters):
        if name.lower() == "boundary":
            boundary = (quoted or plain).encode("latin-1", "replace")
            return boundary if 0 < len(boundary) <= 200 else None
    return None


class MultipartParser:
    """multipart/form-data (RFC 7578) as events, fed the body in pieces split anywhere.

    `feed(data)` returns PartHead, PartData..., PartEnd for each part; `complete` turns True at the
    closing boundary. Part bodies are never held whole: all but the last few bytes of each piece are
    returned at once (those few might be the start of a boundary)."""

    def __init__(self, boundary: bytes):
        self._delimiter = b"\r\n--" + boundary
        self._buffer = b"\r\n"  # so that a boundary on the body's first line is found like any other
        self._state = _PREAMBLE
        self.complete = False

    def feed(self, data: bytes) -> list:
        buffer = self._buffer + data
        events: list = []
        position = 0
        while self._state != _EPILOGUE:
            state = self._state
            if state == _PREAMBLE or state == _PART_BODY:
                found = buffer.find(self._delimiter, position)
                if found < 0:
                    keep_from = max(position, len(buffer) - len(self._delimiter) + 1)
                    if state == _PART_BODY and keep_from > position:
                        events.append(PartData(buffer[position:keep_from]))
                    position = keep_from
                    break
                if state == _PART_BODY:
                    if found > position:
                        events.append(PartData(buffer[position:found]))
                    events.append(_PART_END)
                position = found + len(self._delimiter)
                self._state = _AFTER_DELIMITER
            elif state == _AFTER_DELIMITER:
                if buffer.startswith(b"--", position):
                    self._state, self.complete = _EPILOGUE, True
                    break
                end = buffer.find(b"\r\n", position)
                if end < 0:
                    if len(buffer) - position > 1024:
                        raise MultipartError("a multipart boundary line does not end with CRLF")
                    break
                if buffer[position:end].strip(b" \t"):  # only transport padding may follow a boundary
                    raise MultipartError("a multipart boundary is followed by something other than CRLF")
                position = end + 2
                self._state = _PART_HEAD
            else:  # _PART_HEAD
                if buffer.startswith(b"\r\n", position):  # a part without headers
                    end, raw = position - 2, b""
                else:
                    end = buffer.find(b"\r\n\r\n", position)
                    if end < 0:
                        if len(buffer) - position > _MAX_PART_HEAD_BYTES:
                            raise MultipartError("the headers of a multipart part are larger than 16 KiB")
                        break
                    raw = buffer[position:end]
                events.append(self._part_head(raw))
                position = end + 4
                self._state = _PART_BODY
        self._buffer = b"" if self._state == _EPILOGUE else buffer[position:]
        return events

    @staticmethod
    def _part_head(raw: bytes) -> PartHead:
        name = filename = content_type = None
        for line in raw.decode("utf-8", "replace").split("\r\n"):
            header, _, value = line.partition(":")
            header = header.strip().lower()
            if header == "content-disposition":
                for parameter, quoted, plain in re.findall(_HEADER_PARAMETER, value):
                    text = re.sub(r"\\(.)", r"\1", quoted) if quoted else plain
                    if parameter.lower() == "name":
                        name = text
                    elif parameter.lower() == "filename":
                        filename = text
            elif header == "content-type":
                content_type = value.strip()
        return PartHead(name, filename, content_type)


class MediaType:
    __slots__ = ("extension", "content_type", "kind")

    def __init__(self, extension: str, content_type: str, kind: str):
        self.extension = extension  # as Postiz names stored files (the `file-type` package's extensions)
        self.content_type = content_type
        self.kind = kind  # the Media row's type: "image" or "video"


MEDIA_TYPES = {media.extension: media for media in (
    MediaType("jpg", "image/jpeg", "image"), MediaType("png", "image/png", "image"),
    MediaType("gif", "image/gif", "image"), MediaType("webp", "image/webp", "image"),
    MediaType("avif", "image/avif", "image"), MediaType("bmp", "image/bmp", "image"),
    MediaType("tif", "image/tiff", "image"), MediaType("mp4", "video/mp4", "video"))}
ACCEPTED_MEDIA = "JPEG, PNG, GIF, WebP, AVIF, BMP or TIFF images, or MP4 video"
SNIFF_BYTES = 16  # enough for every signature below (ISO media brands end at byte 12)
_HEIF_BRANDS = (b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1")
# Types rustiz refuses, by signature, so the error can say what the file looked like.
_REFUSED_SIGNATURES = (
    (b"%PDF-", "a PDF document"), (b"PK\x03\x04", "a ZIP archive (or an Office document)"),
    (b"\x1f\x8b", "a gzip archive"), (b"\x1a\x45\xdf\xa3", "a WebM/Matroska video"),
    (b"OggS", "an Ogg file"), (b"ID3", "an MP3 audio file"), (b"\x00\x00\x01\x00", "an ICO icon"),
    (b"<svg", "an SVG image"), (b"<?xml", "an XML (maybe SVG) file"), (b"<!DOCTYPE", "an HTML page"),
    (b"<html", "an HTML page"), (b"{", "JSON text"))


def sniff_media_type(head: bytes) -> Union[MediaType, str]:
    """The file's type from its first bytes (never from its name), or a description of what it is instead."""
    if head.startswith(b"\xff\xd8\xff"):
        return MEDIA_TYPES["jpg"]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return MEDIA_TYPES["png"]
    if head.startswith((b"GIF87a", b"GIF89a")):
        return MEDIA_TYPES["gif"]
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return MEDIA_TYPES["webp"]
    if head.startswith(b"BM"):
        return MEDIA_TYPES["bmp"]
    if head.startswith((b"II*\x00", b"MM\x00*")):
        return MEDIA_TYPES["tif"]
    if head[4:8] == b"ftyp":  # an ISO base media file: the major brand says which kind
        brand = head[8:12]
        if brand in (b"avif", b"avis"):
            return MEDIA_TYPES["avif"]
        if brand in _HEIF_BRANDS:
            return "a HEIC/HEIF image"
        if brand == b"qt  ":
            return "a QuickTime (.mov) video"
        if brand.startswith((b"M4A", b"M4B", b"M4P")):
            return "an M4A audio file"
        if brand.startswith(b"3g"):
            return "a 3GP video"
        return MEDIA_TYPES["mp4"]
    if head.startswith(b"RIFF"):
        return {b"WAVE": "a WAV audio file", b"AVI ": "an AVI video"}.get(head[8:12], "a RIFF file")
    stripped = head.lstrip()
    for signature, description in _REFUSED_SIGNATURES:
        if stripped.startswith(signature):
            return description
    return "of a type rustiz does not recognise" if head else "empty"


class StagedFile:
    """An accepted file, complete in the uploads directory's .incoming folder, not yet a Media row."""
    __slots__ = ("temporary_path", "media_type", "size", "original_name")

    def __init__(self, temporary_path: str, media_type: MediaType, size: int):
        self.temporary_path = temporary_path
        self.media_type = media_type
        self.size = size
        self.original_name: Optional[str] = None  # the client's file name, when it sent one


def staged_picture_size(staged: StagedFile) -> Optional[tuple]:
    """(width, height) of a staged picture from its header (picture_size.py), or None (a video, a picture
    rustiz cannot read the size of, or a malformed header: the upload goes on without a size)."""
    if staged.media_type.kind != "image":
        return None
    with open(staged.temporary_path, "rb") as file:
        return picture_size(file)


ORIGINAL_NAME_CHARACTERS = 255  # a file name longer than file systems allow is cut, not refused


def original_file_name(filename: Optional[str]) -> Optional[str]:
    """The multipart filename as a person named the file: its last path segment (a client may send
    the whole path), without control characters, at most ORIGINAL_NAME_CHARACTERS. None when
    there is no name: an empty one, or a bare extension ("png", what Postiz's SDK sends in place of a name)."""
    if not filename:
        return None
    base = re.split(r"[/\\]", filename)[-1]
    base = "".join(ch for ch in base if ch.isprintable()).strip()[:ORIGINAL_NAME_CHARACTERS]
    if base.lower() in MEDIA_TYPES or base.lower() in ("jpeg", "tiff"):
        return None
    return base or None


class MediaWriter:
    """Writes one file into RUSTIZ_UPLOADS/.incoming as it arrives, sniffing its type from the first
    bytes and refusing it (ApiError) as soon as its type or size is known to be unacceptable.

    Thread-safe in the sense upload-from-url needs: one writer is only ever used by one thread."""

    def __init__(self, uploads: str, max_video_bytes: int):
        directory = os.path.join(uploads, ".incoming")
        make_private_folders(directory)
        self.temporary_path = os.path.join(directory, os.urandom(16).hex() + ".part")
        self._file = os.fdopen(os.open(self.temporary_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")
        self.max_video_bytes = max_video_bytes
        self.limit = max(MAX_IMAGE_BYTES, max_video_bytes)  # until the type is known
        self.size = 0
        self.media_type: Optional[MediaType] = None
        self._head = b""

    def write(self, data: bytes) -> None:
        if self.media_type is None:
            self._head += data[:SNIFF_BYTES - len(self._head)]
            if len(self._head) >= SNIFF_BYTES:
                self._identify()
        self.size += len(data)
        if self.size > self.limit:
            raise self._too_large()
        self._file.write(data)

    def _identify(self) -> None:
        sniffed = sniff_media_type(self._head)
        if type(sniffed) is str:
            raise bad_request(f"Unsupported file type: the file is {sniffed}; rustiz accepts {ACCEPTED_MEDIA} "
                              "(the type is read from the file's bytes, not from its name)")
        self.media_type = sniffed
        self.limit = MAX_IMAGE_BYTES if sniffed.kind == "image" else self.max_video_bytes

    def _too_large(self) -> ApiError:
        what = "an image" if self.media_type is None or self.media_type.kind == "image" else "a video"
        setting = "" if what == "an image" else " (RUSTIZ_MAX_VIDEO_BYTES)"
        if self.media_type is None:
            what = "a file"
        return nest_error(413, f"File size exceeds the maximum allowed size of {self.limit} bytes for "
                               f"{what}{setting}")

    def finish(self) -> StagedFile:
        """The whole file is in: close it and return it (or raise why it is refused)."""
        self._file.close()
        if self.media_type is None:
            self._identify()
        if self.size > self.limit:
            raise self._too_large()
        return StagedFile(self.temporary_path, self.media_type, self.size)

    def discard(self) -> None:
        """Remove the temporary file unless it was moved into place; safe to call more than once."""
        self._file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.temporary_path)


class UploadSink(BodySink):
    """POST /upload's body: multipart/form-data whose `file` part goes straight to a MediaWriter.

    Errors are kept, not raised, until the handler asks for the `result()`: the rest of the body is
    read and dropped so the connection stays usable for the answer."""

    def __init__(self, request: Request, uploads: str, max_video_bytes: int):
        self.uploads = uploads
        self.max_video_bytes = max_video_bytes
        self.writer: Optional[MediaWriter] = None
        self.in_file_part = False
        self.staged: Optional[StagedFile] = None
        self.original_name: Optional[str] = None
        self.error: Optional[ApiError] = None
        content_type = request.headers.get("content-type", "")
        boundary = multipart_boundary(content_type)
        self.parser = MultipartParser(boundary) if boundary else None
        if boundary is None:
            self.error = bad_request(f'POST /upload takes multipart/form-data with the file in a field named "file"; '
                                     f"the request's Content-Type is {content_type or 'missing'!r}")

    def feed(self, data: bytes) -> None:
        if self.error is not None:
            return
        try:
            for event in self.parser.feed(data):
                self._on_event(event)
        except MultipartError as error:
            self._fail(bad_request(f"The multipart/form-data body is malformed: {error}"))
        except ApiError as error:
            self._fail(error)
        except OSError as error:
            self._fail(_cannot_store(self.uploads, error))

    def _on_event(self, event: Any) -> None:
        kind = type(event)
        if kind is PartData:
            if self.in_file_part:
                self.writer.write(event.data)
        elif kind is PartHead:
            if event.name == "file" and self.writer is None:
                self.writer = MediaWriter(self.uploads, self.max_video_bytes)
                self.in_file_part = True
                self.original_name = original_file_name(event.filename)
        elif self.in_file_part:  # PartEnd of the file part
            self.in_file_part = False
            self.staged = self.writer.finish()
            self.staged.original_name = self.original_name

    def _fail(self, error: ApiError) -> None:
        self.error = error
        if self.writer is not None:
            self.writer.discard()

    def result(self) -> StagedFile:
        if self.error is not None:
            raise self.error
        if not self.parser.complete:
            raise bad_request("The multipart/form-data body ended before its closing boundary")
        if self.staged is None:
            message = 'No file provided: send it as the multipart/form-data field named "file"'
            raise ApiError(400, {"msg": message, "statusCode": 400, "message": message, "error": "Bad Request"})
        return self.staged

    def close(self) -> None:
        if self.writer is not None:
            self.writer.discard()


FETCH_TIMEOUT_SECONDS = 30.0
FETCH_MAX_REDIRECTS = 3


async def fetch_media(http: "HttpClient", url: str, uploads: str, max_video_bytes: int) -> StagedFile:
    """Download `url` (upload-from-url, or a post's media from the web) into a staged file, through the
    client's address guard, with its size and type checked as it arrives; raises ApiError (400, 413)."""
    from .catalogue import url_problem
    from .http_client import ConnectFailed, NoAnswer, Timeouts
    problem = url_problem(url, ("http", "https"))
    if problem:
        raise bad_request(f"upload-from-url: url {problem}")
    timeouts = Timeouts(connect=10, read=FETCH_TIMEOUT_SECONDS, total=FETCH_TIMEOUT_SECONDS)
    try:
        return await http.download(url, lambda head, pieces: _download(head, pieces, uploads, max_video_bytes),
                                   {"Accept": "image/*, video/mp4"}, timeouts, FETCH_MAX_REDIRECTS)
    except (ConnectFailed, NoAnswer) as error:  # AddressRefused too: it names the address and RUSTIZ_FETCH_ALLOW
        raise bad_request(f"upload-from-url: {error}") from None


def _download(head: "HttpReply", pieces: Any, uploads: str, max_video_bytes: int) -> StagedFile:
    """The answer's body into a MediaWriter, which refuses it as soon as its type or size is unacceptable."""
    if head.status != 200:
        import http.client
        raise bad_request(f"upload-from-url: {head.url} answered {head.status} "
                          f"{http.client.responses.get(head.status, '')}".rstrip())
    announced = head.headers.get("content-length", "")
    if announced.isdigit() and int(announced) > max(MAX_IMAGE_BYTES, max_video_bytes):
        raise nest_error(413, f"upload-from-url: the file is {announced} bytes, over the maximum allowed size "
                              f"of {max(MAX_IMAGE_BYTES, max_video_bytes)} bytes (RUSTIZ_MAX_VIDEO_BYTES)")
    try:
        writer = MediaWriter(uploads, max_video_bytes)
    except OSError as error:  # not the remote server's fault: say so, rather than "fetching failed"
        raise _cannot_store(uploads, error) from None
    try:
        for piece in pieces:
            try:
                writer.write(piece)
            except OSError as error:
                raise _cannot_store(uploads, error) from None
        return writer.finish()
    except BaseException:
        writer.discard()
        raise


def _cannot_store(uploads: str, error: OSError) -> ApiError:
    log(f"cannot store an upload in {uploads}: {error}")
    return nest_error(500, f"The server cannot store the upload: {error.strerror}")


ABANDONED_UPLOAD_SECONDS = 24 * 3600  # far longer than any upload in progress can take


def remove_abandoned_uploads(uploads: str, older_than: float) -> None:
    """Temporary files a running server always removes itself; these are left by a crash or a kill -9."""
    directory = os.path.join(uploads, ".incoming")
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return
    except OSError as error:
        log(f"cannot look for abandoned uploads in {directory}: {error.strerror}")
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.name.endswith(".part") and entry.stat().st_mtime < older_than:
                os.unlink(entry.path)


_UPLOAD_FILE_NAME = r"[0-9a-f]{32}\.(?:" + "|".join(MEDIA_TYPES) + r")\Z"  # compiled on first use


# GET /uploads/... in the OpenAPI document.
_UPLOADED_FILE = {"description": "The file (Range, If-Range and If-None-Match are honoured)", "content": {
    media.content_type: {"schema": {"type": "string", "contentMediaType": media.content_type}}
    for media in MEDIA_TYPES.values()}}


class MediaApi:
    """POST /upload, POST /upload-from-url, and GET /uploads/YYYY/MM/DD/<name> (public, as Postiz's nginx); the
    removal of a deleted media item's file (media_library.py)."""

    def __init__(self, app: App):
        self.app = app
        self.config = app.config
        self.store = app.store
        # Room for the multipart framing around the largest file.
        self.upload_body_limit = max(MAX_IMAGE_BYTES, self.config.max_video_bytes) + 64 * 1024

    @property
    def http(self) -> HttpClient:
        return self.app.http  # upload-from-url's downloads, through the client's address guard

    def open_upload(self, request: Request, organization_id: str) -> UploadSink:
        return UploadSink(request, self.config.uploads, self.config.max_video_bytes)

    @route_options(body_limit="upload_body_limit", open_sink="open_upload", scope="drafts")  # (drafts need images)
    @documented("Upload an image or video (type read from its bytes)", ("201", ref("Media")), "BadRequest TooLarge",
                request={"required": True, "content": {"multipart/form-data": {"schema": object_schema(
                    {"file": {"type": "string", "contentMediaType": "application/octet-stream"}})}}})
    def upload(self, request: Request, organization_id: str) -> Union[Response, Awaitable[Response]]:
        """The body streamed to disk as it came (UploadSink); only an admitted request's body is kept."""
        staged = request.sink.result()
        if self.config.storage is not None:
            return self._save_in_bucket(organization_id, staged)  # (the sink removes the staged file after)
        return self._save(organization_id, staged)

    async def _save_in_bucket(self, organization_id: str, staged: StagedFile) -> Response:
        return json_response(await self._store_in_bucket(organization_id, staged), 201)

    @route_options(scope="drafts")
    @documented("Store an image or video fetched from a public URL", ("201", ref("Media")), "BadRequest TooLarge",
                request=object_schema({"url": STRING}))
    def upload_from_url(self, request: Request, organization_id: str) -> Awaitable[Response]:
        body = request.json()
        url = body.get("url") if isinstance(body, dict) else None
        if not isinstance(url, str) or not url.strip():
            raise bad_request('upload-from-url takes a JSON body {"url": "https://..."}; "url" is missing or empty')
        return self._fetch_and_save(url.strip(), organization_id)

    async def _fetch_and_save(self, url: str, organization_id: str) -> Response:
        return json_response(await self.fetch_and_store(url, organization_id), 201)

    async def fetch_and_store(self, url: str, organization_id: str) -> dict:
        """Download `url` (SSRF-safe, size and type checked) into the media library; the Media row. Raises ApiError."""
        staged = await fetch_media(self.http, url, self.config.uploads, self.config.max_video_bytes)
        try:
            if self.config.storage is not None:
                return await self._store_in_bucket(organization_id, staged)
            return await self.store.off_loop(self._store_file, organization_id, staged)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staged.temporary_path)

    def _save(self, organization_id: str, staged: StagedFile) -> Response:
        return json_response(self._store_file(organization_id, staged), 201)

    def _store_file(self, organization_id: str, staged: StagedFile) -> dict:
        """Move the staged file to YYYY/MM/DD/<random>.<ext>, as Postiz's local storage, and record it."""
        day, name = _new_upload_name(staged)
        directory = os.path.join(self.config.uploads, *day.split("/"))
        make_private_folders(directory)
        final_path = os.path.join(directory, name)
        size = staged_picture_size(staged)
        os.replace(staged.temporary_path, final_path)
        try:
            media = media_store.create_media(self.store, organization_id, name,
                                             f"{self.config.frontend_url}/uploads/{day}/{name}",
                                             staged.size, staged.media_type.kind, staged.original_name, size)
        except BaseException:
            os.unlink(final_path)
            raise
        return media

    async def remove_upload(self, path: str) -> None:
        """Remove the file of a deleted media item, from the uploads folder or the bucket. A path that is not one
        of rustiz's uploads (a URL of Postiz's time) is left alone; a failure is logged, not raised: the item is
        deleted already, and a file left behind harms nothing."""
        from .catalogue import upload_relative_path
        relative = upload_relative_path(path)
        if relative is None or not re.match(_UPLOAD_FILE_NAME, relative.rpartition("/")[2]):
            return
        if self.config.storage is None:
            try:
                os.unlink(os.path.join(self.config.uploads, *relative.split("/")))
            except FileNotFoundError:
                pass
            except OSError as error:
                log(f"uploads: cannot remove the file of a deleted media item, {relative}: {error.strerror}")
            return
        from .object_storage import StorageError
        try:
            await self.http.run_blocking(self.bucket().delete, self.config.storage.key(relative))
        except StorageError as error:
            log(f"uploads: cannot remove the object of a deleted media item, {relative}: {error}")

    # --- uploads in a bucket (RUSTIZ_STORAGE=s3://...)

    def bucket(self) -> Bucket:
        from .object_storage import Bucket
        return Bucket(self.config.storage, self.http)

    async def _store_in_bucket(self, organization_id: str, staged: StagedFile) -> dict:
        """Put the staged file in the bucket at <prefix>/YYYY/MM/DD/<random>.<ext>, then record it: the Media
        row only once its object is stored (a 503 naming the bucket and the cause otherwise). The staged
        file is its caller's to remove."""
        from .object_storage import StorageError
        day, name = _new_upload_name(staged)
        key = self.config.storage.key(f"{day}/{name}")
        bucket = self.bucket()
        try:
            await self.http.run_blocking(bucket.put_file, key, staged.temporary_path, staged.size,
                                         staged.media_type.content_type)
        except StorageError as error:
            raise _bucket_unavailable(error) from None
        except OSError as error:  # the staged file could not be read back
            raise _cannot_store(self.config.uploads, error) from None
        try:
            return await self.store.off_loop(media_store.create_media, self.store, organization_id, name,
                                             f"{self.config.frontend_url}/uploads/{day}/{name}", staged.size,
                                             staged.media_type.kind, staged.original_name,
                                             staged_picture_size(staged))
        except Exception:
            await _delete_quietly(self.http, bucket, key)  # no object left behind without its Media row
            raise

    def _serve_from_bucket(self, request: Request, relative: str) -> Union[Response, Awaitable[Response]]:
        """A redirect to a presigned URL of the object (valid PRESIGNED_URL_SECONDS), or the object streamed."""
        from .object_storage import PRESIGNED_URL_SECONDS
        storage = self.config.storage
        if storage.serve == "stream":
            return self._stream_from_bucket(request, storage.key(relative), relative.rpartition("/")[2])
        # Caching the redirect a while spares signing it again; never for as long as the URL lasts.
        return Response(302, b"", "", [("Location", self.bucket().presigned_get_url(storage.key(relative))),
                                       ("Cache-Control", f"private, max-age={PRESIGNED_URL_SECONDS // 4}")])

    async def _stream_from_bucket(self, request: Request, key: str, name: str) -> Response:
        """The object through rustiz: fetched into a private temporary file (bounded by the media limits, with
        the client's Range and If-None-Match passed on to the bucket), then sent from it with the server's
        back-pressure; the file is removed as soon as the connection has it open."""
        from .object_storage import StorageError
        content_type = MEDIA_TYPES[name.rpartition(".")[2]].content_type
        method = "HEAD" if request.method == "HEAD" else "GET"
        passed_on = {header: request.headers[header] for header in
                     (("if-none-match",) if method == "HEAD" else ("range", "if-range", "if-none-match"))
                     if re.fullmatch(r"[\x20-\x7e]{1,500}", request.headers.get(header, ""))}
        temporary = new_staging_path(self.config.uploads)
        limit = max(MAX_IMAGE_BYTES, self.config.max_video_bytes)
        try:
            if method == "HEAD":
                head = await self.http.run_blocking(self.bucket().call, "HEAD", key, (), passed_on, b"", None,
                                                    (200, 304, 404))
            else:
                head = await self.http.run_blocking(self.bucket().get_to_file, key, temporary, limit, passed_on,
                                                    (200, 206, 304, 404, 416))
        except StorageError as error:
            raise _bucket_unavailable(error) from None
        asyncio.get_running_loop().call_later(STREAMED_FILE_GRACE_SECONDS, _remove_quietly, temporary)
        headers = [(header, head.headers[header.lower()]) for header in ("ETag", "Last-Modified", "Content-Range")
                   if header.lower() in head.headers] + _SERVED_UPLOAD_HEADERS
        if head.status == 404:
            raise not_found(f"No upload at {request.path}")
        if head.status in (304, 416):
            return Response(head.status, b"", "", headers)
        size = int(head.headers.get("content-length", "0")) if method == "HEAD" else os.path.getsize(temporary)
        return FileResponse(head.status, temporary, 0, size, content_type, headers)

    @route_options(authenticated=False)  # public, as Postiz serves its uploads
    @documented("An uploaded file", ("200", _UPLOADED_FILE), "NotFound RangeNotSatisfiable",
                tuple(parameter("path", name, "From the Media path") for name in ("year", "month", "day", "name"))
                + (parameter("header", "Range", "One range, bytes=first-last; others are ignored"),
                   parameter("header", "If-Range", "An ETag: the range only if the file is still that one"),
                   parameter("header", "If-None-Match", "ETags of a cached copy")),
                more_answers={"206": {**_UPLOADED_FILE, "description": "The requested range"},
                              "304": {"description": "The cached copy is current"}})
    def serve_upload(self, request: Request) -> Union[Response, Awaitable[Response]]:
        """The stored file, with ETag/Last-Modified revalidation and single byte ranges."""
        params = request.params
        day = f"{params['year']}/{params['month']}/{params['day']}"
        if not re.match(r"\d{4}/\d{2}/\d{2}\Z", day) or not re.match(_UPLOAD_FILE_NAME, params["name"]):
            raise not_found(f"No upload at {request.path}")  # also what keeps ../ and the like out
        if self.config.storage is not None:
            return self._serve_from_bucket(request, f"{day}/{params['name']}")
        file_path = os.path.join(self.config.uploads, params["year"], params["month"], params["day"], params["name"])
        try:
            status = os.stat(file_path)
        except OSError:
            raise not_found(f"No upload at {request.path}") from None
        size = status.st_size
        etag = f'"{size:x}-{status.st_mtime_ns:x}"'
        headers = [("ETag", etag), ("Last-Modified", http_date(status.st_mtime))] + _SERVED_UPLOAD_HEADERS
        content_type = MEDIA_TYPES[params["name"].rpartition(".")[2]].content_type
        if_none_match = request.headers.get("if-none-match")
        if if_none_match is not None and (if_none_match.strip() == "*" or etag in
                                          [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]):
            return Response(304, b"", "", headers)
        byte_range = request.headers.get("range")
        if byte_range is not None and request.headers.get("if-range", etag) == etag:
            wanted = parse_byte_range(byte_range, size)
            if wanted == "unsatisfiable":
                return json_response({"statusCode": 416, "error": "Range Not Satisfiable",
                                      "message": f"{byte_range} is outside the file's {size} bytes"},
                                     416, headers + [("Content-Range", f"bytes */{size}")])
            if wanted is not None:
                start, end = wanted
                return FileResponse(206, file_path, start, end - start + 1, content_type,
                                    headers + [("Content-Range", f"bytes {start}-{end}/{size}")])
        return FileResponse(200, file_path, 0, size, content_type, headers)


_SERVED_UPLOAD_HEADERS = [
    ("Accept-Ranges", "bytes"), ("Cache-Control", "public, max-age=31536000, immutable"),
    ("X-Content-Type-Options", "nosniff"),
    # Media are served from rustiz's own origin: were a file ever rendered as a document (an SVG, a browser
    # ignoring the type), it may run nothing and reach nothing.
    ("Content-Security-Policy", "default-src 'none'; sandbox")]
# A streamed object's temporary file is opened by the connection as soon as the handler returns; it is
# removed this long after (the open file stays readable), or at the next start if rustiz is killed meanwhile.
STREAMED_FILE_GRACE_SECONDS = 10.0


def new_staging_path(uploads: str) -> str:
    """A new file name in the uploads' private .incoming folder (removed at start when a crash left it)."""
    directory = os.path.join(uploads, ".incoming")
    make_private_folders(directory)
    return os.path.join(directory, os.urandom(16).hex() + ".part")


async def read_from_bucket(http: HttpClient, config: Any, relative: str) -> Optional[str]:
    """Our upload at `relative` ("YYYY/MM/DD/<name>") read from the bucket into a staged file (bounded by
    the media limits), for the caller to remove; None when the bucket has no such object. Raises
    object_storage.StorageError when the bucket cannot be read."""
    from .object_storage import Bucket
    staged = new_staging_path(config.uploads)
    head = await http.run_blocking(Bucket(config.storage, http).get_to_file, config.storage.key(relative), staged,
                                   max(MAX_IMAGE_BYTES, config.max_video_bytes), None, (200, 404))
    if head.status == 200:
        return staged
    _remove_quietly(staged)
    return None


def _new_upload_name(staged: StagedFile) -> tuple:
    """(YYYY/MM/DD of today, UTC; a random file name with the type's extension), as Postiz names uploads."""
    return time.strftime("%Y/%m/%d", time.gmtime()), f"{os.urandom(16).hex()}.{staged.media_type.extension}"


def _bucket_unavailable(error: Exception) -> ApiError:
    log(f"uploads: {error}")
    return nest_error(503, f"The uploads bucket is unavailable, try again later: {error}")


async def _delete_quietly(http: HttpClient, bucket: Bucket, key: str) -> None:
    from .object_storage import StorageError
    try:
        await http.run_blocking(bucket.delete, key)
    except StorageError as error:
        log(f"uploads: {key} is stored but has no Media row, and could not be removed: {error}")


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def http_date(timestamp: float) -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(timestamp))


def _byte_position(digits: str) -> int:
    """A Range position; any beyond 10**18 bytes is past every file, so int() never meets 5,000 digits."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 10**18


def parse_byte_range(header: str, size: int) -> Union[tuple, str, None]:
    """(first, last) byte of a single `bytes=` range, "unsatisfiable", or None to send the whole file
    (malformed ranges and multiple ranges are ignored, as RFC 9110 allows)."""
    match = re.fullmatch(r"\s*bytes\s*=\s*([0-9]*)\s*-\s*([0-9]*)\s*", header)
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = (_byte_position(text) if text else None for text in match.groups())
    if first is None:  # the last N bytes
        if last == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - last), size - 1
    if first >= size:
        return "unsatisfiable"
    end = size - 1 if last is None else min(last, size - 1)
    return (first, end) if end >= first else None
