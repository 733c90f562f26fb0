"""Local stand-ins for platform APIs: a small HTTP server with routes, a record of every request,
and scripted trouble (error answers, 429 with Retry-After, slow answers, dropped connections).

Each platform's fake (tests/fakes/<its publisher module>.py) builds on FakePlatform and offers:
  .url           its base URL
  .env           environment variables that point rustiz at it (for platforms not in the credentials)
  .credentials() credentials that connect a channel to it
  .published     what it accepted as published, in order

A platform that connects with pasted credentials (its catalogue entry has `credentials`) is tested for
every such provider at once (tests/platforms.py reads the catalogue), so its module also has:
  FAKE                 the fake's class, started with no arguments
  .account()           (name, profile) of the channel its credentials() connect
  .post_settings       the settings a post to it needs (its Postiz DTO's required ones), or None
  credentials_at(url)  credentials that aim a channel at `url` (the address guard's tests)
  RECONNECT            a Reconnect: how the platform behaves when a channel's credentials change
"""
from __future__ import annotations

import email.parser
import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, NamedTuple
from urllib.parse import parse_qs, urlsplit


class FakeRequest:
    def __init__(self, method: str, target: str, headers: dict, body: bytes):
        parts = urlsplit(target)
        self.method, self.path, self.headers, self.body = method, parts.path, headers, body
        self.query = {name: values[-1] for name, values in parse_qs(parts.query, keep_blank_values=True).items()}
        self.match: re.Match | None = None
        self.received = time.monotonic()

    def json(self):
        return json.loads(self.body or b"null")

    def form(self) -> dict:
        """A urlencoded body as {name: last value}; repeated names (media_ids[]) as lists under that name."""
        values = parse_qs(self.body.decode(), keep_blank_values=True)
        return {name: (items if name.endswith("[]") else items[-1]) for name, items in values.items()}

    def multipart(self) -> dict:
        """A multipart body as {name: (filename or None, bytes, content type)}."""
        message = email.parser.BytesParser().parsebytes(
            b"Content-Type: " + self.headers["content-type"].encode() + b"\r\n\r\n" + self.body)
        parts = {}
        for part in message.get_payload():
            parts[part.get_param("name", header="content-disposition")] = (
                part.get_filename(), part.get_payload(decode=True), part.get_content_type())
        return parts


Answer = tuple  # (status, body: dict | list | bytes | str, headers: dict)

# Headers of an answer without a Content-Length, whose body ends when the connection closes (a header whose
# value is None is not sent).
UNSIZED = {"Content-Length": None, "Connection": "close"}


def answer(status: int, body=b"", headers: dict | None = None) -> Answer:
    return status, body, headers or {}


def consent_page(question: str, redirect_uri: str, allowed: dict, denied: dict, allow_label: str = "Allow") -> Answer:
    """An OAuth platform's consent page: `question`, then two links back to `redirect_uri`, id="allow" (with
    `allowed` as its query: the code and the state) and id="deny" labelled Cancel (with `denied`)."""
    import html
    from urllib.parse import urlencode
    allow, deny = (html.escape(redirect_uri + "?" + urlencode(query)) for query in (allowed, denied))
    page = (f'<html><body><p>{html.escape(question)}</p><a id="allow" href="{allow}">{allow_label}</a> '
            f'<a id="deny" href="{deny}">Cancel</a></body></html>')
    return answer(200, page, {"Content-Type": "text/html; charset=utf-8"})


class FakePlatform:
    post_settings: dict | None = None  # the settings a post to it needs (see the top of this module)

    def __init__(self):
        self.routes: list = []
        self.requests: list[FakeRequest] = []
        self.published: list = []
        self.trouble: list = []  # [method, path regex, kind, value, times left]
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_one(self):
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                request = FakeRequest(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with fake.lock:
                    fake.requests.append(request)
                status, payload, headers = fake.dispatch(request, self)
                if status is None:  # dropped: close without answering
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                data = payload if isinstance(payload, bytes) else (
                    payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
                self.send_response(status)
                if not isinstance(payload, (bytes, str)):
                    self.send_header("Content-Type", "application/json")
                for name, value in headers.items():
                    if value is not None:
                        self.send_header(name, str(value))
                if "Content-Length" not in headers:
                    self.send_header("Content-Length", str(len(data)))
                if headers.get("Connection") == "close":
                    self.close_connection = True
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = handle_one

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    # --- set-up -------------------------------------------------------------------------------

    env: dict = {}

    def route(self, method: str, pattern: str, handler: Callable[[FakeRequest], Answer]) -> None:
        """`handler(request)` answers `method` on paths matching `pattern` (a regex, fully matched)."""
        self.routes.append((method, re.compile(pattern), handler))

    def fail_next(self, method: str, pattern: str, status: int, body=b"", headers: dict | None = None,
                  times: int = 1) -> None:
        """The next `times` matching requests get this answer instead of the route's."""
        self.trouble.append([method, re.compile(pattern), "answer", (status, body, headers or {}), times])

    def drop_next(self, method: str, pattern: str, times: int = 1, after_handling: bool = False) -> None:
        """The next matching requests get no answer: the connection closes. With `after_handling`, the
        route runs first (the platform acted on it), as when an answer is lost on its way back."""
        kind = "drop_after" if after_handling else "drop"
        self.trouble.append([method, re.compile(pattern), kind, None, times])

    def delay_next(self, method: str, pattern: str, seconds: float, times: int = 1) -> None:
        self.trouble.append([method, re.compile(pattern), "delay", seconds, times])

    # --- serving --------------------------------------------------------------------------------

    # Rate-limit headers on every answer, as most platforms send them: a fake that sets `rate_limit` (the
    # window's allowance) gets `remaining` counting down from it, under the platform's `rate_limit_names`.
    rate_limit: int | None = None
    rate_limit_names = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")

    def rate_limit_reset(self) -> str:
        """The reset header's value: seconds to wait here; a platform that sends a time overrides it."""
        return "60"

    def rate_limited(self, request: FakeRequest) -> bool:
        """Whether this request's answer carries the headers (a platform may send them on its API only)."""
        return True

    def dispatch(self, request: FakeRequest, handler) -> Answer:
        status, body, headers = self._answer(request)
        if status is None or self.rate_limit is None or not self.rate_limited(request):
            return status, body, headers
        with self.lock:
            self.remaining = max(0, getattr(self, "remaining", self.rate_limit) - 1)
        limit, remaining, reset = self.rate_limit_names
        return status, body, {limit: str(self.rate_limit), remaining: str(self.remaining),
                              reset: self.rate_limit_reset(), **headers}

    def _answer(self, request: FakeRequest) -> Answer:
        trouble = self._take_trouble(request)
        if trouble is not None:
            kind, value = trouble
            if kind == "answer":
                return value
            if kind == "drop":
                return None, b"", {}
            if kind == "delay":
                time.sleep(value)
        for method, pattern, route in self.routes:
            match = pattern.fullmatch(request.path)
            if method == request.method and match:
                request.match = match
                result = route(request)
                if trouble is not None and trouble[0] == "drop_after":
                    return None, b"", {}
                return result
        return 404, {"error": f"the fake has no route for {request.method} {request.path}"}, {}

    def _take_trouble(self, request: FakeRequest):
        with self.lock:
            for entry in self.trouble:
                method, pattern, kind, value, times = entry
                if times > 0 and method == request.method and pattern.fullmatch(request.path):
                    entry[4] -= 1
                    return kind, value
        return None

    def requests_to(self, method: str, pattern: str) -> list[FakeRequest]:
        return [request for request in self.requests
                if request.method == method and re.fullmatch(pattern, request.path)]

    def wait_for(self, condition: Callable[[], bool], timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError("timed out; the fake got: "
                                     + ", ".join(f"{r.method} {r.path}" for r in self.requests))
            time.sleep(0.02)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Reconnect(NamedTuple):
    """How a provider's platform behaves when credentials change, on its fake (test_api_channel_reconnect).

    renew(fake, extras): the platform gives the same account new credentials (the old ones stop working
        where it can); `extras` starts and later closes any second fake;
    wrong(fake): credentials it refuses, and `says`, the words of its refusal;
    other(fake, extras): credentials of another account it accepts; for a webhook (the URL is the account)
        a new webhook."""
    renew: Callable
    wrong: Callable
    says: str
    other: Callable


class Extras:
    """Second fakes a Reconnect starts (another account on another server), closed after the test."""

    def __init__(self):
        self.fakes: list = []

    def __call__(self, fake):
        self.fakes.append(fake)
        return fake
