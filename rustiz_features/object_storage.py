"""Uploads in an S3-compatible bucket (RUSTIZ_STORAGE=s3://bucket/prefix): the settings, AWS Signature
Version 4, and a small S3 client over the one outbound client.

Rules:
- hashlib and hmac (OpenSSL) are imported by the functions that sign or hash, so a server on local storage,
  and every server's start-up, loads neither.
- Every request goes through HttpClient (its address guard, its bounds, its threads). S3's error answers
  are reduced to their <Code> and <Message>, read with a bound; a raw answer is never quoted.
- Bucket's methods block: they run in the client's threads (`await http.run_blocking(bucket.put_file, ...)`)
  or in a CLI command (`rustiz db copy`). Nothing is held whole in memory: a file goes up in parts of
  RUSTIZ_S3_PART_BYTES at most, and comes down into a file, counted against a limit as it arrives.
"""
from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional

from rustiz import UserError

if TYPE_CHECKING:
    from .http_client import HttpClient, HttpReply

EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"  # what a presigned URL signs instead of a body it cannot know
MIN_PART_BYTES = 5 * 1024 * 1024  # S3 refuses smaller parts (all but the last) when the upload completes
DEFAULT_PART_BYTES = 8 * 1024 * 1024
MAX_PART_BYTES = 512 * 1024 * 1024  # each part is read into memory to be hashed and sent
MAX_PARTS = 10000  # S3's limit for one multipart upload
PRESIGNED_URL_SECONDS = 3600
SERVE_MODES = ("redirect", "stream")
ERROR_ANSWER_BYTES = 64 * 1024  # of an error answer, read to find its Code and Message; the rest is dropped
_BUCKET_NAME = r"[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]\Z"
_REGION = r"[a-z0-9][a-z0-9-]{0,40}\Z"


class S3Storage(NamedTuple):
    """Where uploads live when RUSTIZ_STORAGE names a bucket; None in Config.storage means the local folder."""
    bucket: str
    prefix: str  # "" or "a/b": no slash at either end
    endpoint: str  # scheme://host[:port]
    path_style: bool  # https://endpoint/bucket/key rather than https://bucket.endpoint/key
    region: str
    access_key: str
    secret_key: str
    session_token: str
    part_bytes: int  # files larger than this go up in parts of this size
    serve: str  # GET /uploads/...: "redirect" to a presigned URL, or "stream" through rustiz

    def key(self, relative: str) -> str:
        """The object key of an upload's path under the uploads folder ("2024/05/01/<name>")."""
        return f"{self.prefix}/{relative}" if self.prefix else relative

    def origin(self) -> str:
        """scheme://host[:port] of the bucket's objects (where a presigned URL sends a browser)."""
        from urllib.parse import urlsplit
        scheme, netloc = urlsplit(self.endpoint)[:2]
        return f"{scheme}://{netloc}" if self.path_style else f"{scheme}://{self.bucket}.{netloc}"

    def describe(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/") + f" at {self.endpoint}"


def storage_from_settings(values: dict) -> Optional[S3Storage]:
    """The bucket RUSTIZ_STORAGE names (with AWS's usual variables), or None when it names no bucket.
    Raises UserError naming the setting that is wrong."""
    from urllib.parse import urlsplit
    raw = values.get("RUSTIZ_STORAGE", "")
    if not raw.lower().startswith("s3://"):
        return None
    parts = urlsplit(raw)
    bucket, prefix = parts.netloc, parts.path.strip("/")
    if not re.match(_BUCKET_NAME, bucket) or ".." in bucket:
        raise UserError(f"RUSTIZ_STORAGE={raw!r}: {bucket!r} is not a bucket name (3 to 63 lower-case letters, "
                        "digits, dots or hyphens); write s3://bucket or s3://bucket/prefix")
    if parts.query or parts.fragment or any(segment in ("", ".", "..") for segment in prefix.split("/") if prefix) \
            or re.search(r"[\x00-\x20\x7f\\]", prefix):
        raise UserError(f"RUSTIZ_STORAGE={raw!r}: the prefix after the bucket must be folder names separated by "
                        "single slashes, without spaces, '.' or '..'")
    access_key, secret_key = values.get("AWS_ACCESS_KEY_ID", ""), values.get("AWS_SECRET_ACCESS_KEY", "")
    for name, value in (("AWS_ACCESS_KEY_ID", access_key), ("AWS_SECRET_ACCESS_KEY", secret_key)):
        if not value:
            raise UserError(f"RUSTIZ_STORAGE={raw} needs the bucket's keys in AWS_ACCESS_KEY_ID and "
                            f"AWS_SECRET_ACCESS_KEY; {name} is not set")
    region = values.get("AWS_REGION") or values.get("AWS_DEFAULT_REGION") or "us-east-1"
    if not re.match(_REGION, region):
        variable = "AWS_REGION" if values.get("AWS_REGION") else "AWS_DEFAULT_REGION"
        raise UserError(f"{variable}={region!r} is not a region name (like us-east-1, or auto for Cloudflare R2)")
    endpoint, path_style = _endpoint(values, region, bucket)
    part_bytes = _part_bytes(values.get("RUSTIZ_S3_PART_BYTES") or str(DEFAULT_PART_BYTES))
    serve = values.get("RUSTIZ_UPLOADS_SERVE", "redirect").lower()
    if serve not in SERVE_MODES:
        raise UserError(f"RUSTIZ_UPLOADS_SERVE={serve!r}: use redirect (to a presigned URL of the bucket, the "
                        "default) or stream (through rustiz)")
    return S3Storage(bucket, prefix, endpoint, path_style, region, access_key, secret_key,
                     values.get("AWS_SESSION_TOKEN", ""), part_bytes, serve)


def _part_bytes(raw: str) -> int:
    if not raw.isdigit() or not MIN_PART_BYTES <= int(raw) <= MAX_PART_BYTES:
        raise UserError(f"RUSTIZ_S3_PART_BYTES={raw!r}: use a number of bytes from {MIN_PART_BYTES} (5 MiB, S3's "
                        f"smallest part) to {MAX_PART_BYTES}; files larger than one part go up in parts")
    return int(raw)


def _endpoint(values: dict, region: str, bucket: str) -> tuple:
    """(endpoint, path style): AWS's own endpoint for the region (virtual-hosted, unless the bucket's name
    has dots, which no wildcard certificate covers), or the one named, which is addressed path-style."""
    from .http_client import parsed_url
    variable = "AWS_ENDPOINT_URL_S3" if values.get("AWS_ENDPOINT_URL_S3") else "AWS_ENDPOINT_URL"
    endpoint = values.get(variable, "")
    if not endpoint:
        return f"https://s3.{region}.amazonaws.com", "." in bucket
    try:
        parts = parsed_url(endpoint)
    except ValueError as problem:
        raise UserError(f"{variable}={endpoint!r} {problem}") from None
    if parts.path.strip("/") or parts.query or parts.fragment or "@" in parts.netloc:
        raise UserError(f"{variable}={endpoint!r}: give the server's address only, like https://minio.example.com:9000 "
                        "(the bucket comes from RUSTIZ_STORAGE)")
    return f"{parts.scheme.lower()}://{parts.netloc}", True


# --- AWS Signature Version 4 ---------------------------------------------------------------------------

def uri_encode(text: str, keep_slashes: bool = False) -> str:
    """AWS's UriEncode: every byte but A-Z a-z 0-9 - . _ ~ as %XY (and '/' kept in paths)."""
    from urllib.parse import quote
    return quote(text, safe="/" if keep_slashes else "")


def sha256_hex(data: bytes) -> str:
    import hashlib
    return hashlib.sha256(data).hexdigest()


def _canonical_query(query: list) -> str:
    return "&".join(f"{name}={value}" for name, value in
                    sorted((uri_encode(name), uri_encode(value)) for name, value in query))


def _signature(secret_key: str, amz_date: str, region: str, service: str, canonical_request: str) -> tuple:
    """(credential scope, hex signature) of a canonical request."""
    import hashlib
    import hmac

    def keyed(key: bytes, message: str) -> bytes:
        return hmac.new(key, message.encode(), hashlib.sha256).digest()
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join(("AWS4-HMAC-SHA256", amz_date, scope, sha256_hex(canonical_request.encode())))
    key = keyed(keyed(keyed(keyed(("AWS4" + secret_key).encode(), amz_date[:8]), region), service), "aws4_request")
    return scope, hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()


def authorization(method: str, path: str, query: list, headers: dict, payload_hash: str, access_key: str,
                  secret_key: str, region: str, service: str, amz_date: str) -> str:
    """The Authorization header of a request whose `headers` (lower-case names; host and x-amz-date among
    them) are all signed. `path` is as sent: already URI-encoded; `query` is (name, value) pairs, unencoded."""
    names = sorted(headers)
    canonical_headers = "".join(f"{name}:{' '.join(str(headers[name]).split())}\n" for name in names)
    signed = ";".join(names)
    canonical_request = "\n".join((method, path, _canonical_query(query), canonical_headers, signed, payload_hash))
    scope, signature = _signature(secret_key, amz_date, region, service, canonical_request)
    return f"AWS4-HMAC-SHA256 Credential={access_key}/{scope},SignedHeaders={signed},Signature={signature}"


def presigned_query(method: str, host: str, path: str, access_key: str, secret_key: str, region: str,
                    amz_date: str, expires_seconds: int, session_token: str = "") -> str:
    """The query string that lets anyone holding the URL make this one request until it expires (S3's
    query-string authentication: only the host header signed, the payload unsigned)."""
    query = [("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
             ("X-Amz-Credential", f"{access_key}/{amz_date[:8]}/{region}/s3/aws4_request"),
             ("X-Amz-Date", amz_date), ("X-Amz-Expires", str(expires_seconds)), ("X-Amz-SignedHeaders", "host")]
    if session_token:
        query.append(("X-Amz-Security-Token", session_token))
    canonical_request = "\n".join((method, path, _canonical_query(query), f"host:{host}\n", "host", UNSIGNED_PAYLOAD))
    _, signature = _signature(secret_key, amz_date, region, "s3", canonical_request)
    return _canonical_query(query) + f"&X-Amz-Signature={signature}"


def amz_date(epoch: Optional[float] = None) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if epoch is None else epoch))


# --- the S3 client -------------------------------------------------------------------------------------

class StorageError(Exception):
    """The bucket could not be reached or refused a request; the message names the bucket and the cause.
    `code` is S3's error code ("NoSuchKey", "AccessDenied"...) when it answered one."""

    def __init__(self, message: str, code: str = "", status: int = 0):
        super().__init__(message)
        self.code, self.status = code, status


def _xml_text(answer: bytes, element: str) -> str:
    """The text of the first <element> of a small XML answer (a regular expression: no XML parser meets a
    server's entity tricks), unescaped, without control characters, at most 300 characters."""
    import html
    match = re.search(rb"<%s>([^<]{0,2000})</%s>" % (element.encode(), element.encode()), answer)
    text = html.unescape(match[1].decode("utf-8", "replace")) if match else ""
    return re.sub(r"[\x00-\x1f\x7f]+", " ", text)[:300]


class Bucket:
    """Blocking S3 calls over HttpClient: put a file (one PUT, or a multipart upload), get an object into
    a file, head, delete, list one key, and presigned GET URLs (no network)."""

    TIMEOUTS_SECONDS = (10.0, 60.0, 900.0)  # connect, longest silence, whole request (one part of a file)

    def __init__(self, storage: S3Storage, http: HttpClient):
        self.storage = storage
        self.http = http

    # --- addresses and signing

    def _address(self, key: str) -> tuple:
        """(base URL, host header, encoded path) of an object, or of the bucket itself when `key` is ""."""
        storage = self.storage
        base = storage.origin()
        path = f"/{storage.bucket}/" if storage.path_style else "/"
        return base, base.partition("://")[2], path + uri_encode(key, keep_slashes=True)

    def presigned_get_url(self, key: str, seconds: int = PRESIGNED_URL_SECONDS) -> str:
        base, host, path = self._address(key)
        storage = self.storage
        return f"{base}{path}?" + presigned_query("GET", host, path, storage.access_key, storage.secret_key,
                                                  storage.region, amz_date(), seconds, storage.session_token)

    def call(self, method: str, key: str, query: tuple = (), headers: Optional[dict] = None, body: bytes = b"",
             read: Optional[Callable[[HttpReply, Any], Any]] = None, accept: tuple = (200,)) -> Any:
        """One signed request; the answer (HttpReply, or what `read` returns for a status in `accept`).
        Raises StorageError for an unreachable bucket and for any status not in `accept`."""
        from .http_client import ConnectFailed, NoAnswer, Timeouts
        storage = self.storage
        base, host, path = self._address(key)
        signed = {"host": host, "x-amz-date": amz_date(),
                  "x-amz-content-sha256": sha256_hex(body) if body else EMPTY_SHA256,
                  **{name.lower(): value for name, value in (headers or {}).items()}}
        if storage.session_token:
            signed["x-amz-security-token"] = storage.session_token
        signed["authorization"] = authorization(method, path, list(query), signed, signed["x-amz-content-sha256"],
                                                storage.access_key, storage.secret_key, storage.region, "s3",
                                                signed["x-amz-date"])
        url = base + path + ("?" + _canonical_query(list(query)) if query else "")
        timeouts = Timeouts(*self.TIMEOUTS_SECONDS)
        what = f"{method} {key or '/'}"
        try:
            if read is None:
                reply = self.http.exchange(method, url, signed, body, timeouts)
                if reply.status not in accept:
                    raise self._refusal(what, reply.status, reply.body)
                return reply
            return self.http.exchange(method, url, signed, body, timeouts,
                                      lambda head, pieces: self._read_or_refuse(what, head, pieces, read, accept))
        except (ConnectFailed, NoAnswer) as error:
            raise StorageError(f"cannot reach the bucket {storage.describe()}: {error}") from None

    def _read_or_refuse(self, what: str, head: HttpReply, pieces: Any, read: Callable, accept: tuple) -> Any:
        if head.status in accept:
            return read(head, pieces)
        answer = b""
        for piece in pieces:
            answer += piece[:ERROR_ANSWER_BYTES - len(answer)]
            if len(answer) >= ERROR_ANSWER_BYTES:
                break
        raise self._refusal(what, head.status, answer)

    def _refusal(self, what: str, status: int, answer: bytes) -> StorageError:
        code, message = _xml_text(answer, "Code"), _xml_text(answer, "Message")
        words = f"{code}: {message}" if code and message else code or message or f"HTTP {status}"
        return StorageError(f"the bucket {self.storage.describe()} refused {what[:200]}: {words}", code, status)

    # --- objects

    def put_file(self, key: str, file_path: str, size: int, content_type: str) -> None:
        """Store the file at `key`: in one PUT up to part_bytes, else as a multipart upload (aborted on failure,
        so no parts are left behind to be billed)."""
        with open(file_path, "rb") as file:
            if size <= self.storage.part_bytes:
                self.call("PUT", key, (), {"content-type": content_type}, file.read(size))
                return
            self._put_in_parts(key, file, size, content_type)

    def _put_in_parts(self, key: str, file: Any, size: int, content_type: str) -> None:
        part_bytes = max(self.storage.part_bytes, -(-size // MAX_PARTS))
        reply = self.call("POST", key, (("uploads", ""),), {"content-type": content_type})
        upload_id = _xml_text(reply.body, "UploadId")
        if not upload_id:
            raise StorageError(f"the bucket {self.storage.describe()} started a multipart upload of {key} "
                               f"without an UploadId ({reply.described('S3 XML')})")
        try:
            etags = []
            for number in range(1, -(-size // part_bytes) + 1):
                part = file.read(part_bytes)
                reply = self.call("PUT", key, (("partNumber", str(number)), ("uploadId", upload_id)), None, part)
                etags.append(reply.headers.get("etag", ""))
            body = "".join(f"<Part><PartNumber>{number}</PartNumber><ETag>{_xml_escape(etag)}</ETag></Part>"
                           for number, etag in enumerate(etags, 1))
            reply = self.call("POST", key, (("uploadId", upload_id),), {"content-type": "application/xml"},
                              f"<CompleteMultipartUpload>{body}</CompleteMultipartUpload>".encode())
            if b"<Error>" in reply.body[:ERROR_ANSWER_BYTES]:  # S3 may answer 200 and fail in the body
                raise self._refusal(f"POST {key} (completing the upload)", reply.status, reply.body)
        except BaseException:
            self._abort(key, upload_id)
            raise

    def _abort(self, key: str, upload_id: str) -> None:
        try:
            self.call("DELETE", key, (("uploadId", upload_id),), accept=(200, 204, 404))
        except StorageError as error:
            from rustiz import log
            log(f"could not abort the multipart upload of {key} (a lifecycle rule for incomplete uploads "
                f"removes its parts): {error}")

    def get_to_file(self, key: str, file_path: str, limit: int, headers: Optional[dict] = None,
                    accept: tuple = (200,)) -> HttpReply:
        """The object (or the range `headers` ask for) into a new file at `file_path`; the answer's head.
        More than `limit` bytes: StorageError, and the file is removed."""
        def save(head: HttpReply, pieces: Any) -> HttpReply:
            size = 0
            with open(file_path, "wb") as file:
                for piece in pieces:
                    size += len(piece)
                    if size > limit:
                        raise StorageError(f"the object {key} in the bucket {self.storage.describe()} is larger "
                                           f"than {limit} bytes, the limit for media (RUSTIZ_MAX_VIDEO_BYTES)")
                    file.write(piece)
            return head
        try:
            return self.call("GET", key, (), headers, b"", save, accept)
        except BaseException:
            try:
                os.unlink(file_path)
            except FileNotFoundError:
                pass
            raise

    def head(self, key: str) -> Optional[HttpReply]:
        """The object's head (size, ETag...), or None when there is no such object."""
        reply = self.call("HEAD", key, accept=(200, 404))
        return reply if reply.status == 200 else None

    def delete(self, key: str) -> None:
        self.call("DELETE", key, accept=(200, 204, 404))

    def has_objects(self, prefix: str) -> bool:
        """Whether any object's key starts with `prefix` (ListObjectsV2, one key)."""
        reply = self.call("GET", "", (("list-type", "2"), ("max-keys", "1"), ("prefix", prefix)))
        return b"<Contents>" in reply.body or _xml_text(reply.body, "KeyCount") not in ("", "0")


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# --- moving a local uploads folder into a bucket (`rustiz db copy`) ---------------------------------------

def bucket_is_empty(storage: S3Storage, http: HttpClient, prefix: Optional[str] = None) -> bool:
    """Whether no object's key starts with `prefix` (by default the storage's own prefix, as a folder).
    `http`: HttpClient(config.fetch_allow), whose guard lets a bucket on a private address through."""
    if prefix is None:
        prefix = f"{storage.prefix}/" if storage.prefix else ""
    return not Bucket(storage, http).has_objects(prefix)


def copy_uploads_to_bucket(uploads_dir: str, storage: S3Storage, http: HttpClient,
                           on_progress: Optional[Callable[[str], None]] = None) -> list:
    """Upload every file of a local uploads folder (but the unfinished ones in .incoming) to the bucket at
    the same relative path under the storage's prefix, then read each object back and compare its SHA-256
    with the file's. Returns [(key, sha256 hex, size)] sorted by key; raises StorageError on any failure or
    mismatch (the objects already stored stay: the copy refuses a non-empty target, so start it again on
    an emptied prefix). Blocking: for a CLI command, or a client thread."""
    bucket = Bucket(storage, http)
    copied = []
    for relative, path in _upload_files(uploads_dir):
        import mimetypes
        size = os.path.getsize(path)
        digest = _file_sha256(path)
        key = storage.key(relative)
        bucket.put_file(key, path, size, mimetypes.guess_type(path)[0] or "application/octet-stream")
        copied.append((key, digest, size))
        if on_progress:
            on_progress(key)
    for key, digest, size in copied:
        stored = bucket.call("GET", key, read=lambda head, pieces: _stream_sha256(pieces))
        if stored != (digest, size):
            raise StorageError(f"the object {key} in the bucket {storage.describe()} differs from the file it was "
                               f"copied from ({stored[1]} bytes, SHA-256 {stored[0]}; the file: {size} bytes, "
                               f"SHA-256 {digest})")
    return sorted(copied)


def _upload_files(uploads_dir: str) -> list:
    """(path relative to the folder with '/' separators, full path) of every regular file, .incoming left out."""
    found = []
    for directory, folders, files in os.walk(uploads_dir):
        folders[:] = sorted(folder for folder in folders if not (directory == uploads_dir and folder == ".incoming"))
        for name in sorted(files):
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.append((os.path.relpath(path, uploads_dir).replace(os.sep, "/"), path))
    return found


def _file_sha256(path: str) -> str:
    with open(path, "rb") as file:
        return _stream_sha256(iter(lambda: file.read(1024 * 1024), b""))[0]


def _stream_sha256(pieces: Any) -> tuple:
    import hashlib
    digest, size = hashlib.sha256(), 0
    for piece in pieces:
        digest.update(piece)
        size += len(piece)
    return digest.hexdigest(), size
