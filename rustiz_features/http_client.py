"""The one outbound HTTP client: every call rustiz makes to another server goes through HttpClient.

Rules:
- Every connection is made to an address the guard checked (resolve once, check each address, connect to
  the checked one; again on each redirect). Private networks only when RUSTIZ_FETCH_ALLOW lists them.
- Answers are read and unpacked with a bound; credentials never follow a redirect to another origin.
- ConnectFailed means nothing was sent (safe to retry); NoAnswer means it was sent and no complete
  answer came back (the server may have acted on it).
- The event loop never blocks: http.client runs in this client's threads, TLS is imported on first use.
"""
from __future__ import annotations

import asyncio
import functools
import io
import json
import os
import re
import socket
import time
from typing import Any, Callable, NamedTuple, Optional

from rustiz import VERSION
from .metrics import count


# http.client in a small thread pool, behind an async call: the event loop never blocks, and TLS
# comes from the ssl module, imported on first use (asyncio itself is imported without ssl: see the
# note at the top of rustiz.py).
#
# The address guard. Every connection rustiz opens to another server (platform APIs, media and
# link-card downloads, outgoing webhooks, Nostr relays) starts in HttpClient.checked_addresses: the
# host name is resolved once, every address it resolves to is checked, and the socket is connected to
# a checked address (the Host header and the TLS name check still use the host name), so a DNS answer
# that changes between the check and the connection cannot reach a private service. Redirects go
# through the same check. Private, loopback, link-local, unspecified, multicast and reserved addresses,
# in any spelling (2130706433, 0x7f000001, 127.1, ::ffff:127.0.0.1, 64:ff9b::7f00:1...), are refused
# unless RUSTIZ_FETCH_ALLOW lists the host or the address: the URLs are a tenant's, and must not make
# rustiz a way into its own host or network.

OUTBOUND_THREADS = 8
MAX_OUTBOUND_REPLY_BYTES = 32 * 1024 * 1024  # an answer's size as sent, and again once unpacked (gzip, deflate)
MAX_REDIRECTS = 5
USER_AGENT = f"rustiz/{VERSION} (+https://github.com/rustiz/rustiz)"
ACCEPT_ENCODING = "gzip, deflate"  # the encodings rustiz asks for, and so the only ones it unpacks
ERROR_WORDS_LIMIT = 300  # characters of a platform's own error message that an error quotes
FETCH_ALLOW_HINT = "rustiz does not reach private networks unless RUSTIZ_FETCH_ALLOW lists them"
_REDIRECT_STATUSES = (301, 302, 303, 307, 308)
_READ_PIECE_BYTES = 64 * 1024


class HttpReply(NamedTuple):
    status: int
    headers: dict  # lower-case names; a repeated header keeps its last value
    body: bytes
    url: str  # after redirects

    def json(self) -> Any:
        """The body as JSON, or None when it is not JSON (an HTML error page from a proxy, say)."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def described(self, expected: str) -> str:
        """What came back, without quoting it (it may be any server's page): "HTTP 200, 1,234 bytes that
        are not <expected>". There is deliberately no way to quote a raw body in an error."""
        size = len(self.body)
        return f"HTTP {self.status}, " + (f"{size:,} bytes that are not {expected}" if size
                                          else f"an empty answer instead of {expected}")


def read_at_most(limit: int, what: str) -> Callable[[HttpReply, Any], HttpReply]:
    """A `read` for download()/exchange() that keeps the whole body of a small document (`what`, for the
    error), refusing one larger than `limit` bytes with NoAnswer."""
    def read(head: HttpReply, pieces: Any) -> HttpReply:
        data = bytearray()
        for piece in pieces:
            data += piece
            if len(data) > limit:
                raise NoAnswer(f"{what} is larger than {limit // 1024} KiB")
        return head._replace(body=bytes(data))
    return read


class ConnectFailed(Exception):
    """Nothing reached the server (name lookup, refused connection, TLS handshake): safe to retry."""


class AddressRefused(ConnectFailed):
    """The address guard refused the host before connecting: nothing was sent, and every retry would be
    refused too, until the operator lists the host in RUSTIZ_FETCH_ALLOW."""


class NoAnswer(Exception):
    """The request was sent, but no complete answer came: the server may have acted on it."""


class Timeouts(NamedTuple):
    connect: float = 10.0
    read: float = 30.0  # the longest silence while waiting for or reading the answer
    total: float = 120.0  # the whole exchange: connecting, sending, the answer's head, 1xx answers, body, trailers


def _total_cap() -> float:
    """RUSTIZ_OUTBOUND_TOTAL_TIMEOUT: when set, no exchange with another server lasts longer, whatever its caller
    allows (0 or unset: each caller's own Timeouts.total)."""
    try:
        return max(0.0, float(os.environ.get("RUSTIZ_OUTBOUND_TOTAL_TIMEOUT") or 0))
    except ValueError:
        return 0.0


TOTAL_CAP_SECONDS = _total_cap()


class _DeadlineReader(io.RawIOBase):
    """The socket under an answer, read with each wait bounded by the read timeout and by what is left of the
    exchange's total time: a server sending its head a line at a time, endless `100 Continue` answers or slow
    chunked trailers keeps every single wait short, so only a deadline over the whole answer stops it."""

    def __init__(self, raw: Any, sock: socket.socket, deadline: float, read_timeout: float):
        super().__init__()
        self.raw, self.sock, self.deadline, self.read_timeout = raw, sock, deadline, read_timeout

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> Optional[int]:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the answer took longer than the total time allowed")
        self.sock.settimeout(min(self.read_timeout, remaining))
        return self.raw.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self.raw.close()  # (the socket's own makefile reader: the socket closes once both let go of it)
        super().close()


@functools.lru_cache(maxsize=None)
def _deadline_response() -> type:
    """http.client's answer, read through a _DeadlineReader (HttpClient._one_exchange makes its connections
    build these). Made on first use: http.client imports ssl, whose OpenSSL most processes never need."""
    import http.client

    class DeadlineResponse(http.client.HTTPResponse):
        def __init__(self, sock: socket.socket, debuglevel: int = 0, method: Optional[str] = None,
                     url: Optional[str] = None, *, deadline: float, read_timeout: float):
            super().__init__(sock, debuglevel, method, url)
            self.fp = io.BufferedReader(_DeadlineReader(self.fp.detach(), sock, deadline, read_timeout))
    return DeadlineResponse


class _Redirect(NamedTuple):
    url: str


def parsed_url(url: str, schemes: tuple = ("http", "https")) -> Any:
    """`url` split (urllib's SplitResult) once it is known to name a host and port rustiz can connect to;
    otherwise a ValueError says what is wrong, in words that follow the field's name ("has no host name")."""
    from urllib.parse import urlsplit
    if re.search(r"[\x00-\x20\x7f]", url):
        raise ValueError("must not contain spaces or control characters")
    malformed_ipv6 = f"has a malformed IPv6 address: write it in brackets, like {schemes[-1]}://[2001:db8::1]:8080/"
    try:
        parts = urlsplit(url)
    except ValueError:  # "Invalid IPv6 URL", or brackets around something that is no IP address
        raise ValueError(malformed_ipv6) from None
    if parts.scheme.lower() not in schemes:
        raise ValueError(f"must be a URL address starting with {' or '.join(scheme + '://' for scheme in schemes)}")
    host_and_port = parts.netloc.rpartition("@")[2]
    if not parts.hostname:
        raise ValueError("has no host name")
    if host_and_port.startswith("["):
        import ipaddress
        try:
            ipaddress.IPv6Address(parts.hostname.partition("%")[0])
        except ValueError:
            raise ValueError(malformed_ipv6) from None
        if not re.fullmatch(r"\[[^\]]*\](:[0-9]*)?", host_and_port):
            raise ValueError(malformed_ipv6)
    elif not _valid_host_name(parts.hostname):
        raise ValueError(f"has a host name that cannot exist: {parts.hostname[:100]!r}")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise ValueError("has a port that is not a number from 1 to 65535")
    return parts


def _valid_host_name(host: str) -> bool:
    """Labels of letters, digits, '-' and '_' (international names as IDNA), none empty or over 63 characters."""
    try:
        encoded = host.encode("idna")
    except UnicodeError:
        return False
    return re.fullmatch(rb"[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?", encoded.lower()) is not None


def ascii_host(host: str) -> str:
    """An international host name as the ASCII (IDNA) name that Host headers and certificates carry."""
    return host if host.isascii() else host.encode("idna").decode("ascii")


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _carried_ipv4(ip: Any) -> Any:
    """The IPv4 address an IPv6 one leads to (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, IPv4-compatible
    ::a.b.c.d, 6to4 2002::/16), or None."""
    import ipaddress
    if ip.version != 6:
        return None
    if ip.ipv4_mapped is not None or ip.sixtofour is not None:
        return ip.ipv4_mapped or ip.sixtofour
    number = int(ip)
    if number >> 32 == 0x64FF9B << 64 or 1 < number < 2**32:  # NAT64's well-known prefix, or IPv4-compatible
        return ipaddress.IPv4Address(number & 0xFFFFFFFF)
    return None


def address_refusal(address: str) -> Optional[str]:
    """Why rustiz may not connect to the IP `address` ("a loopback address"...), or None for a public one.
    An IPv6 address that leads to an IPv4 one is judged by that IPv4 address."""
    import ipaddress
    ip = ipaddress.ip_address(address.partition("%")[0])
    ip = _carried_ipv4(ip) or ip
    for check, description in (("is_unspecified", "an unspecified address"), ("is_loopback", "a loopback address"),
                               ("is_link_local", "a link-local address"), ("is_multicast", "a multicast address"),
                               ("is_reserved", "a reserved address"), ("is_private", "a private address")):
        if getattr(ip, check):
            return description
    if getattr(ip, "is_site_local", False):
        return "a site-local address"
    return None if ip.is_global else "not a public address"


def private_host_reason(url: str) -> Optional[str]:
    """Why the host of `url` cannot be reached from the internet ("a loopback address", "localhost"...), or
    None when it may be: judged from the URL alone (an IP address, localhost, a name of a local network)."""
    from urllib.parse import urlsplit
    try:
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        host = ""
    if not host:
        return "not an absolute URL"
    if host == "localhost" or host.endswith(".localhost"):
        return "localhost"
    try:
        return address_refusal(host)
    except ValueError:  # a name, not an address
        pass
    if "." not in host or host.endswith((".local", ".internal", ".lan", ".home.arpa", ".intranet")):
        return "a name only the local network knows"
    return None


def _is_address(host: str, address: str) -> bool:
    """Whether `host` is `address` written as an IP address (::7f00:1 is ::127.0.0.1), not a name for it."""
    import ipaddress
    try:
        return ipaddress.ip_address(host) == ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return False


def _listed(allow: tuple, host: str, address: str) -> bool:
    """Whether RUSTIZ_FETCH_ALLOW names the host, or a network holding the address (or the IPv4 it leads to)."""
    import ipaddress
    ip = ipaddress.ip_address(address.partition("%")[0])
    candidates = (ip, _carried_ipv4(ip))
    return any(item == host if type(item) is str else any(candidate in item for candidate in candidates if candidate)
               for item in allow)


def encode_multipart(fields: list) -> tuple:
    """(body, content type) for multipart/form-data; `fields` are (name, value) with value a str, or
    (name, (filename, bytes, content_type)) for a file; a filename of None sends typed data that is no file
    (Tumblr's JSON part, application/json)."""
    boundary = "rustiz" + os.urandom(12).hex()
    pieces = []
    for name, value in fields:
        if isinstance(value, tuple):
            filename, data, content_type = value
            named = "" if filename is None else f'; filename="{filename}"'
            pieces.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"{named}'
                          f'\r\nContent-Type: {content_type}\r\n\r\n'.encode() + data + b"\r\n")
        else:
            pieces.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
                          + str(value).encode() + b"\r\n")
    pieces.append(f"--{boundary}--\r\n".encode())
    return b"".join(pieces), f"multipart/form-data; boundary={boundary}"


class _Inflater:
    """A gzip or deflate body unpacked piece by piece, never more than a piece at a time: a few megabytes
    of gzip can hold gigabytes (a decompression bomb), so the caller counts what comes out as it comes."""

    def __init__(self, encoding: str, where: str):
        import zlib
        self.zlib, self.encoding, self.where = zlib, encoding, where
        self.inflate: Any = zlib.decompressobj(16 + zlib.MAX_WBITS) if encoding != "deflate" else None
        self.fed = False

    def pieces(self, data: bytes) -> Any:
        """The unpacked pieces of the next `data` (a generator)."""
        zlib = self.zlib
        if self.inflate is None:  # deflate is zlib-wrapped (RFC 9110), but some servers send it raw
            wrapped = len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            self.inflate = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        self.fed = self.fed or bool(data)
        while not self.inflate.eof:
            try:
                piece = self.inflate.decompress(data, _READ_PIECE_BYTES)
            except zlib.error as error:
                raise NoAnswer(f"{self.where} sent a broken {self.encoding} body: {error}") from None
            data = self.inflate.unconsumed_tail
            if piece:
                yield piece
            if not data and len(piece) < _READ_PIECE_BYTES:  # a full piece may leave more inside zlib
                return

    def finish(self) -> None:
        if self.fed and not self.inflate.eof:
            raise NoAnswer(f"{self.where} sent a {self.encoding} body that ends too early")


HEADERS_KEPT_ACROSS_ORIGINS = frozenset(("accept", "accept-language", "user-agent"))


def _origin(url: str) -> tuple:
    """(scheme, host, port) of an absolute URL, as a browser compares origins."""
    from urllib.parse import urlsplit
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port or (443 if parts.scheme.lower() == "https" else 80)


class HttpClient:
    """`await client.request(method, url, ...)` -> HttpReply, for any status; raises ConnectFailed (and its
    AddressRefused) or NoAnswer.

    Certificates are verified (the system store, or SSL_CERT_FILE), HTTPS_PROXY/HTTP_PROXY/NO_PROXY
    are honoured, gzip and deflate answers are unpacked (32 MiB at most), GET and HEAD follow up to 5
    redirects, and every connection passes the address guard (see the top of this module)."""

    def __init__(self, allow: tuple, threads: int = OUTBOUND_THREADS):
        self.allow = allow  # Config.fetch_allow: host names and networks the guard lets through although private
        self._threads = threads
        self._executor: Any = None
        self._tls: Any = None

    async def request(self, method: str, url: str, headers: Optional[dict] = None, body: bytes = b"",
                      json_body: Any = None, form: Optional[dict] = None, timeouts: Timeouts = Timeouts()) -> HttpReply:
        headers = dict(headers or {})
        if json_body is not None:
            body = json.dumps(json_body, ensure_ascii=False).encode()
            headers.setdefault("Content-Type", "application/json")
        elif form is not None:
            from urllib.parse import urlencode
            body = urlencode(form, doseq=True).encode()
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        return await self.run_blocking(self._exchange, method, url, headers, body, timeouts)

    async def download(self, url: str, read: Callable[[HttpReply, Any], Any], headers: Optional[dict] = None,
                       timeouts: Timeouts = Timeouts(), max_redirects: int = MAX_REDIRECTS) -> Any:
        """GET `url` and hand the answer to `read(head, pieces)` in a client thread, as it arrives: `head` is
        the answer without its body, `pieces` an iterator over the body's (unpacked) bytes. For bodies that
        go to disk rather than memory; `read` bounds their size. Returns what `read` returns."""
        return await self.run_blocking(self._exchange, "GET", url, dict(headers or {}), b"", timeouts, read,
                                       max_redirects)

    def exchange(self, method: str, url: str, headers: dict, body: bytes = b"", timeouts: Timeouts = Timeouts(),
                 read: Optional[Callable[[HttpReply, Any], Any]] = None) -> Any:
        """request(), or with `read` download() for any method, for code that already runs in this client's
        threads (through run_blocking) or in a CLI command: it blocks. A series of calls that belong together
        (an S3 multipart upload) runs as one blocking function this way."""
        return self._exchange(method, url, dict(headers), body, timeouts, read)

    async def check_url(self, url: str) -> None:
        """Raise AddressRefused when the guard would refuse `url`'s host, without connecting to it (for a URL
        that is only used later); a host that cannot be resolved now passes (connecting checks it again)."""
        try:
            parts = parsed_url(url, ("http", "https", "ws", "wss"))
        except ValueError:
            return  # a malformed URL is its validator's to refuse, and the client's to fail on
        secure = parts.scheme.lower() in ("https", "wss")
        try:
            await self.run_blocking(self.checked_addresses, parts.hostname, parts.port or (443 if secure else 80))
        except AddressRefused:
            raise
        except ConnectFailed:
            pass

    async def run_blocking(self, function: Callable, *arguments: Any) -> Any:
        """`function(*arguments)` in this client's threads (a download, a blocking library call)."""
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor
            self._executor = ThreadPoolExecutor(self._threads, thread_name_prefix="rustiz-http")
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *arguments)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    # --- the address guard -------------------------------------------------------------------------

    def checked_addresses(self, host: str, port: int) -> list:
        """Every address `host` resolves to, each checked: AddressRefused when any is not public and
        RUSTIZ_FETCH_ALLOW lists neither the host nor the address (a name that resolves to a public and a
        private address is refused, whichever would have been tried first); ConnectFailed when it does not
        resolve. Blocking: the client's threads call it."""
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError, ValueError) as error:
            raise ConnectFailed(f"cannot resolve {host}: {getattr(error, 'strerror', None) or error}") from None
        addresses = list(dict.fromkeys(info[4][0] for info in infos))
        name = host.lower().rstrip(".")
        for address in addresses:
            refusal = address_refusal(address)
            if refusal is not None and not _listed(self.allow, name, address):
                problem = (f"{host} is {refusal}" if _is_address(host, address)
                           else f"{host} resolves to {address}, {refusal}")
                raise AddressRefused(f"{problem}; {FETCH_ALLOW_HINT}")
        return addresses

    def open_socket(self, host: str, port: int, timeout: float, tls: bool) -> socket.socket:
        """A socket to `host`, connected to an address the guard checked (TLS, with `host`'s certificate
        checked, when `tls`); raises AddressRefused, or ConnectFailed when no address could be connected."""
        return self._open_checked(self.checked_addresses(host, port), host, port, timeout, tls)

    def _open_checked(self, addresses: list, host: str, port: int, timeout: float, tls: bool) -> socket.socket:
        failure: BaseException = OSError("no address")
        for address in addresses:  # each was checked: try them in the resolver's order, as browsers do
            try:
                sock = socket.create_connection((address, port), timeout)
            except OSError as error:
                failure = error
                continue
            if not tls:
                return sock
            try:
                return self._tls_context().wrap_socket(sock, server_hostname=host)
            except (OSError, ValueError) as error:  # a refused certificate: another address would not do better
                sock.close()
                failure = error
                break
        raise ConnectFailed(f"cannot connect to {_host_port(host, port)}: {network_reason(failure)}")

    def _tls_context(self) -> Any:
        if self._tls is None:
            import ssl
            self._tls = ssl.create_default_context()
        return self._tls

    def _connection(self, scheme: str, host: str, port: int, timeout: float) -> tuple:
        """(connection, whether requests carry the full URL): pinned to a checked address, or through the
        environment's proxy."""
        import http.client
        import urllib.request
        proxy = urllib.request.getproxies().get(scheme)
        if not proxy or urllib.request.proxy_bypass(host):
            addresses = self.checked_addresses(host, port)
            https = scheme == "https"
            connection = (http.client.HTTPSConnection(host, port, timeout=timeout, context=self._tls_context())
                          if https else http.client.HTTPConnection(host, port, timeout=timeout))
            connection.connect = lambda: setattr(connection, "sock",
                                                 self._open_checked(addresses, host, port, timeout, https))
            return connection, False
        # The proxy is the operator's, and it resolves the name and connects by itself: what can still be
        # checked here is, and is refused (a literal private address, or a name that resolves here to
        # one). A name that only the proxy can resolve is the proxy's to police, like any egress policy.
        try:
            self.checked_addresses(host, port)
        except AddressRefused:
            raise
        except ConnectFailed:
            pass
        from urllib.parse import urlsplit
        proxy_parts = urlsplit(proxy if "://" in proxy else "http://" + proxy)
        if scheme == "https":  # a CONNECT tunnel, then TLS to the real host inside it
            connection = http.client.HTTPSConnection(proxy_parts.hostname, proxy_parts.port or 80,
                                                     timeout=timeout, context=self._tls_context())
            connection.set_tunnel(host, port)
            return connection, False
        return http.client.HTTPConnection(proxy_parts.hostname, proxy_parts.port or 80, timeout=timeout), True

    # --- one exchange ------------------------------------------------------------------------------

    def _exchange(self, method: str, url: str, headers: dict, body: bytes, timeouts: Timeouts,
                  read: Optional[Callable] = None, max_redirects: int = MAX_REDIRECTS) -> Any:
        # One deadline over every redirect and every step of each exchange (see _DeadlineReader).
        deadline = time.monotonic() + (min(timeouts.total, TOTAL_CAP_SECONDS) if TOTAL_CAP_SECONDS else timeouts.total)
        for _ in range(max_redirects + 1):
            count("rustiz_outbound_requests_total")
            try:
                outcome = self._one_exchange(method, url, headers, body, timeouts, deadline, read)
            except (ConnectFailed, NoAnswer):
                count("rustiz_outbound_errors_total")
                raise
            if type(outcome) is not _Redirect:
                return outcome
            if _origin(outcome.url) != _origin(url):
                # Credentials (Authorization, Dev.to's api-key, cookies...) were meant for the first server
                # only: a redirect elsewhere gets none of them.
                headers = {name: value for name, value in headers.items()
                           if name.lower() in HEADERS_KEPT_ACROSS_ORIGINS}
            url = outcome.url
        raise NoAnswer(f"more than {max_redirects} redirects, the last to {url[:200]}")

    def _one_exchange(self, method: str, url: str, headers: dict, body: bytes, timeouts: Timeouts,
                      deadline: float, read: Optional[Callable]) -> Any:
        """One request and its answer: a redirect to follow, `read`'s result, or the whole HttpReply."""
        import http.client
        try:
            parts = parsed_url(url)
        except ValueError as problem:
            raise ConnectFailed(f"{url[:200]} {problem}") from None
        scheme, host = parts.scheme.lower(), ascii_host(parts.hostname)
        port = parts.port or (443 if scheme == "https" else 80)
        where = _host_port(host, port)
        left = deadline - time.monotonic()
        if left <= 0:
            raise NoAnswer(f"{where}: the redirects took longer than the total time allowed")
        connection, absolute = self._connection(scheme, host, port, min(timeouts.connect, left))
        connection.response_class = functools.partial(_deadline_response(), deadline=deadline,
                                                      read_timeout=timeouts.read)
        target = url if absolute else (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            try:
                connection.connect()
            except OSError as error:  # through a proxy (a direct connection raises ConnectFailed itself)
                raise ConnectFailed(f"cannot connect to {where}: {network_reason(error)}") from None
            sock = connection.sock  # the response takes it over (and the connection forgets it) on Connection: close
            sock.settimeout(max(0.01, min(timeouts.read, deadline - time.monotonic())))
            try:
                connection.request(method, target, body=body or None,
                                   headers={"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING, **headers})
                response = connection.getresponse()
                head = HttpReply(response.status, {name.lower(): value for name, value in response.getheaders()},
                                 b"", url)
                location = head.headers.get("location")
                if method in ("GET", "HEAD") and response.status in _REDIRECT_STATUSES and location:
                    from urllib.parse import urljoin
                    return _Redirect(urljoin(url, location))
                pieces = self._body_pieces(response, where, None if read else MAX_OUTBOUND_REPLY_BYTES)
                return read(head, pieces) if read else head._replace(body=b"".join(pieces))
            except (OSError, http.client.HTTPException) as error:
                raise NoAnswer(f"{where} did not answer {method} {parts.path or '/'}: "
                               f"{network_reason(error)}") from None
        finally:
            connection.close()

    @staticmethod
    def _body_pieces(response: Any, where: str, limit: Optional[int]) -> Any:
        """The body as it arrives (a generator), unpacked when gzip or deflate: at most `limit` bytes as sent,
        and again at most `limit` once unpacked. Any other encoding is refused: rustiz did not ask for it."""
        encoding = (response.getheader("content-encoding") or "").strip().lower()
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            raise NoAnswer(f"{where} answered in the {encoding[:40]!r} encoding, which rustiz did not ask for "
                           f"(it asks for {ACCEPT_ENCODING})")
        inflater = _Inflater(encoding, where) if encoding not in ("", "identity") else None
        sent = unpacked = 0
        while True:
            chunk = response.read1(_READ_PIECE_BYTES)  # (within the exchange's deadline: see _DeadlineReader)
            if not chunk:
                break
            sent += len(chunk)
            if limit is not None and sent > limit:
                raise NoAnswer(f"{where}: the answer is larger than {limit // 2**20} MiB, rustiz's limit for one answer")
            for piece in (inflater.pieces(chunk) if inflater else (chunk,)):
                unpacked += len(piece)
                if limit is not None and unpacked > limit:
                    raise NoAnswer(f"{where} sent a {encoding} answer that unpacks to more than "
                                   f"{limit // 2**20} MiB, rustiz's limit for one answer")
                yield piece
        if inflater is not None:
            inflater.finish()


def network_reason(error: BaseException) -> str:
    """Why a connection or exchange failed, in words that never quote what the other side sent."""
    if isinstance(error, socket.timeout) or type(error).__name__ == "TimeoutError":
        return "timed out"
    if type(error).__name__ in ("BadStatusLine", "UnknownProtocol"):  # their text is the line that came back
        return "its answer is not HTTP"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


def platform_url(variable: str, default: str) -> str:
    """A platform's API base URL: `default`, or the environment's override (tests point these at fakes)."""
    return os.environ.get(variable, default).rstrip("/")


def hmac_sha256_hex(secret: str, message: bytes) -> str:
    import hmac
    return hmac.new(secret.encode(), message, "sha256").hexdigest()


def signed_json_request(payload: dict, secret: Optional[str], event: str, delivery: str) -> tuple:
    """(body, headers) for a JSON POST that a receiver can verify: X-Rustiz-Signature is
    `sha256=` + HMAC-SHA256(secret, timestamp + "." + body) in hex, as Stripe and Slack sign theirs."""
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    timestamp = str(int(time.time()))
    headers = {"Content-Type": "application/json", "X-Rustiz-Event": event, "X-Rustiz-Delivery": delivery,
               "X-Rustiz-Timestamp": timestamp, "Idempotency-Key": delivery}
    if secret:
        headers["X-Rustiz-Signature"] = "sha256=" + hmac_sha256_hex(secret, timestamp.encode() + b"." + body)
    return body, headers
