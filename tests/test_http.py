"""HTTP/1.1 over real sockets against the real server (dist/rustiz.pyz started as a subprocess).

Most tests share one server started with RUSTIZ_MAX_BODY=2048 (no test here needs a bigger body);
the timeout tests start their own with RUSTIZ_HEADER_TIMEOUT=1 and RUSTIZ_KEEPALIVE_TIMEOUT=1.
"""
from __future__ import annotations

import email.utils
import json
import re
import select
import socket
import time
from dataclasses import dataclass
from typing import Optional

import pytest

from conftest import RustizServer, raw_exchange

MAX_BODY = 2048
HEAD_LIMIT = 16 * 1024
TIMEOUT_ENV = {"RUSTIZ_HEADER_TIMEOUT": "1", "RUSTIZ_KEEPALIVE_TIMEOUT": "1"}
SWEEP_SLACK = 3.0  # the server checks timeouts once a second; allow for that and a loaded machine


@pytest.fixture(scope="module")
def shared(pyz, tmp_path_factory) -> RustizServer:
    """One server for the whole module (a server start costs ~0.4 s), with a 2 KiB body limit."""
    server = RustizServer(pyz, tmp_path_factory.mktemp("http"), {"RUSTIZ_MAX_BODY": str(MAX_BODY)})
    server.start()
    yield server
    server.stop()


# --- a raw HTTP/1.1 client that shows exactly what went over the wire -------------------------


@dataclass
class HttpResponse:
    status: int
    headers: list  # (name, value) pairs, as sent
    body: bytes
    head: bytes  # status line and headers, as sent

    def header(self, name: str) -> Optional[str]:
        values = self.all(name)
        assert len(values) <= 1, f"{name} sent {len(values)} times: {self.head!r}"
        return values[0] if values else None

    def all(self, name: str) -> list:
        return [value for key, value in self.headers if key.lower() == name.lower()]

    def json(self) -> dict:
        return json.loads(self.body)


class Client:
    """One TCP connection; `read_response` frames each response by its Content-Length."""

    def __init__(self, port: int, timeout: float = 5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.eof = False

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> None:
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.eof = True
        self.buffer += chunk

    def read_response(self, head_request: bool = False) -> HttpResponse:
        while b"\r\n\r\n" not in self.buffer:
            assert not self.eof, f"connection closed before a complete response; got {self.buffer!r}"
            self._fill()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        match = re.fullmatch(r"HTTP/1\.1 (\d{3}) [^\r\n]+", lines[0])
        assert match, f"bad status line in {head!r}"
        headers = [tuple(part.strip() for part in line.split(":", 1)) for line in lines[1:]]
        assert all(len(pair) == 2 for pair in headers), head
        response = HttpResponse(int(match.group(1)), headers, b"", head + b"\r\n\r\n")
        if response.status < 200:
            return response
        length = response.header("Content-Length")
        assert length is not None and length.isdigit(), f"no Content-Length in {head!r}"
        if not head_request:
            while len(self.buffer) < int(length):
                assert not self.eof, f"connection closed in the body; got {self.buffer!r}"
                self._fill()
            response.body, self.buffer = self.buffer[:int(length)], self.buffer[int(length):]
        return response

    def request(self, data: bytes, head_request: bool = False) -> HttpResponse:
        self.send(data)
        return self.read_response(head_request)

    def closed_by_server(self, within: float = 5.0) -> bool:
        """True when the server closes the connection within `within` s having sent nothing more."""
        deadline = time.monotonic() + within
        while not self.eof:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.sock.settimeout(remaining)
            try:
                self._fill()
            except socket.timeout:
                return False
        assert self.buffer == b"", f"unexpected bytes after the response: {self.buffer!r}"
        return True


def get(path: str = "/health", extra: str = "") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: test\r\n{extra}\r\n".encode()


def assert_date_and_content_length(response: HttpResponse, head_request: bool = False) -> None:
    date = response.header("Date")
    assert date is not None, response.head
    assert re.fullmatch(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT", date), date
    assert abs(email.utils.parsedate_to_datetime(date).timestamp() - time.time()) < 5
    length = response.header("Content-Length")
    assert length is not None, response.head
    if not head_request:
        assert int(length) == len(response.body)


def assert_health_ok(port: int) -> None:
    with Client(port) as client:
        response = client.request(get())
        assert (response.status, response.body) == (200, b"ok")


def assert_rejected(server: RustizServer, data: bytes, status: int) -> HttpResponse:
    """`data` is answered `status` with Connection: close, the server closes the connection, and
    the server goes on serving: a connection opened before still works, and so does a new one."""
    with Client(server.port) as bystander:
        assert bystander.request(get()).status == 200
        with Client(server.port) as client:
            client.send(data)
            response = client.read_response()
            assert response.status == status, (response.head, response.body)
            assert response.header("Connection") == "close", response.head
            assert_date_and_content_length(response)
            assert response.json()["statusCode"] == status
            assert client.closed_by_server(), "the server kept the connection open after a bad request"
        assert bystander.request(get()).status == 200
    assert_health_ok(server.port)
    return response


# --- /health, keep-alive, pipelining ---------------------------------------------------------


def test_health_returns_200_ok_as_text_plain(server):
    status, headers, body = server.request("GET", "/health")
    assert (status, body) == (200, b"ok")
    assert headers["content-type"].split(";")[0] == "text/plain"


def test_http11_keeps_the_connection_alive_for_several_requests(shared):
    with Client(shared.port) as client:
        for _ in range(5):
            response = client.request(get())
            assert (response.status, response.body) == (200, b"ok")
            assert response.header("Connection") is None
        assert not client.closed_by_server(within=0.2)


def test_connection_close_is_answered_with_connection_close_and_the_server_closes(shared):
    with Client(shared.port) as client:
        response = client.request(get(extra="Connection: close\r\n"))
        assert (response.status, response.body) == (200, b"ok")
        assert response.header("Connection") == "close"
        assert client.closed_by_server()


def test_http10_request_is_answered_and_the_connection_closed(shared):
    with Client(shared.port) as client:
        response = client.request(b"GET /health HTTP/1.0\r\n\r\n")
        assert (response.status, response.body) == (200, b"ok")
        assert response.header("Connection") == "close"
        assert client.closed_by_server()


def test_http10_keep_alive_request_gets_connection_keep_alive_and_the_connection_stays_open(shared):
    with Client(shared.port) as client:
        for _ in range(3):
            response = client.request(b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            assert (response.status, response.body) == (200, b"ok")
            assert response.header("Connection").lower() == "keep-alive"
        response = client.request(b"GET /health HTTP/1.0\r\n\r\n")  # no keep-alive asked: closed after
        assert response.header("Connection") == "close"
        assert client.closed_by_server()


def test_pipelined_requests_in_one_send_are_answered_in_order(shared):
    requests = [get(), get("/public/v1/first"), b"HEAD /health HTTP/1.1\r\n\r\n",
                b"DELETE /health HTTP/1.1\r\n\r\n", b"POST /public/v1/second HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
                get("/public/v1/third"), get(extra="Connection: close\r\n")]
    with Client(shared.port) as client:
        client.send(b"".join(requests))
        answers = [client.read_response(head_request=index == 2) for index in range(len(requests))]
        assert [answer.status for answer in answers] == [200, 404, 200, 405, 404, 404, 200]
        assert answers[1].json()["message"] == "Cannot GET /public/v1/first"
        assert answers[4].json()["message"] == "Cannot POST /public/v1/second"
        assert answers[5].json()["message"] == "Cannot GET /public/v1/third"
        assert client.closed_by_server()


def test_small_answers_held_for_the_end_of_the_loop_turn_and_large_ones_sent_at_once_keep_their_order(shared):
    """Keep-alive answers up to 16 KiB wait for the end of the event loop's turn; a larger one (composer.js is
    18 KB) and the last answer before a close are written at once, after the held ones."""
    requests = [get(), get("/web/composer.js"), get("/public/v1/nothing"), get("/web/composer.js"), get(),
                get(extra="Connection: close\r\n")]
    with Client(shared.port) as client:
        client.send(b"".join(requests))
        answers = [client.read_response() for _ in requests]
        assert [answer.status for answer in answers] == [200, 200, 404, 200, 200, 200]
        assert [len(answer.body) > 16 * 1024 for answer in answers] == [False, True, False, True, False, False]
        assert answers[1].body == answers[3].body
        assert client.closed_by_server()


def test_request_arriving_in_small_pieces_is_answered(shared):
    data = b"POST /public/v1/pieces HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789" + get()
    with Client(shared.port) as client:
        for start in range(0, len(data), 7):
            client.send(data[start:start + 7])
            time.sleep(0.005)
        assert client.read_response().json()["message"] == "Cannot POST /public/v1/pieces"
        assert client.read_response().body == b"ok"


# --- request bodies --------------------------------------------------------------------------

# A body that looks like a request: if the server did not consume it as a body, it would answer it.
SMUGGLED = b"GET /public/v1/smuggled HTTP/1.1\r\n\r\n"
NOT_FOUND_XYZ = b'{"message":"Cannot POST /public/v1/xyz","error":"Not Found","statusCode":404}'


def test_content_length_body_is_consumed_and_the_connection_goes_on(shared):
    with Client(shared.port) as client:
        client.send(b"POST /public/v1/xyz HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(SMUGGLED) + SMUGGLED)
        response = client.read_response()
        assert (response.status, response.body) == (404, NOT_FOUND_XYZ)
        assert response.header("Connection") is None
        after = client.request(get())
        assert (after.status, after.body) == (200, b"ok")


def test_chunked_body_is_consumed_and_the_connection_goes_on(shared):
    chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(part), part) for part in (SMUGGLED[:10], SMUGGLED[10:]))
    with Client(shared.port) as client:
        client.send(b"POST /public/v1/xyz HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
                    + b"0\r\nX-Trailer: yes\r\n\r\n")
        response = client.read_response()
        assert (response.status, response.body) == (404, NOT_FOUND_XYZ)
        after = client.request(get())
        assert (after.status, after.body) == (200, b"ok")


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_small_body_sent_with_a_get_is_dropped_and_the_connection_goes_on(shared, framing):
    body = b"{}" * 1000
    head = (b"Content-Length: %d\r\n\r\n" % len(body) + body if framing == "content-length"
            else b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    with Client(shared.port) as client:
        response = client.request(b"GET /health HTTP/1.1\r\n" + head)
        assert (response.status, response.body) == (200, b"ok")
        assert client.request(get()).status == 200


def test_a_large_body_sent_with_a_get_is_refused_from_the_head_and_the_connection_closed(start_server):
    server = start_server()  # (RUSTIZ_MAX_BODY's default, 25 MiB: the body is refused for its route, not its size)
    response = assert_rejected(server, b"GET /health HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % 2**20, 400)
    assert response.json()["message"] == ("GET /health takes no request body: send the request without one "
                                          "(no Content-Length or Transfer-Encoding)")
    piece = b"%x\r\n%s\r\n" % (16384, b"x" * 16384)
    assert_rejected(server, b"GET /web/app.js HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + piece * 6, 400)


def test_body_at_the_limit_is_accepted(shared):
    with Client(shared.port) as client:
        response = client.request(b"POST /public/v1/xyz HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % MAX_BODY
                                  + b"x" * MAX_BODY)
        assert (response.status, response.body) == (404, NOT_FOUND_XYZ)
        assert client.request(get()).status == 200


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_expect_100_continue_gets_100_continue_before_the_body_is_sent(shared, framing):
    if framing == "content-length":
        head, body = b"Content-Length: 5\r\n", b"hello"
    else:
        head, body = b"Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\n0\r\n\r\n"
    with Client(shared.port, timeout=3) as client:
        client.send(b"POST /public/v1/posts HTTP/1.1\r\nAuthorization: " + shared.key.encode()
                    + b"\r\nExpect: 100-continue\r\n" + head + b"\r\n")
        interim = client.read_response()
        assert interim.status == 100
        assert interim.head == b"HTTP/1.1 100 Continue\r\n\r\n"
        client.send(body)
        final = client.read_response()
        assert final.status == 400 and "not valid JSON" in final.json()["message"], final.body
        assert client.request(get()).status == 200


@pytest.mark.parametrize("path, key, status", [("/public/v1/xyz", None, 404), ("/public/v1/posts", None, 401),
                                                ("/public/v1/posts", "0" * 64, 401)])
def test_expect_100_continue_on_a_request_refused_at_its_head_gets_the_refusal_without_100_continue(
        shared, path, key, status):
    authorization = f"Authorization: {key}\r\n" if key else ""
    with Client(shared.port, timeout=3) as client:
        client.send(f"POST {path} HTTP/1.1\r\n{authorization}Expect: 100-continue\r\nContent-Length: 5\r\n\r\n"
                    .encode())
        response = client.read_response()
        assert response.status == status, response.head
        assert response.header("Connection") == "close"  # the client might send its body anyway
        assert client.closed_by_server()


def test_expect_100_continue_from_an_http10_client_is_ignored(shared):
    with Client(shared.port) as client:
        response = client.request(b"POST /public/v1/xyz HTTP/1.0\r\nExpect: 100-continue\r\n"
                                  b"Content-Length: 5\r\n\r\nhello")
        assert response.status == 404  # never a 1xx, which an HTTP/1.0 client cannot read
        assert client.closed_by_server()


@pytest.mark.parametrize("path", ["/health", "/public/v1/is-connected"], ids=["200", "401"])
def test_head_gets_the_headers_and_content_length_of_get_but_no_body(shared, path):
    # (Not a 404: its message names the method, "Cannot HEAD ...", as Postiz's does, so its length differs.)
    with Client(shared.port) as client:
        head = client.request(f"HEAD {path} HTTP/1.1\r\n\r\n".encode(), head_request=True)
        # If HEAD had sent a body, its bytes would come before the next status line and break the framing.
        full = client.request(f"GET {path} HTTP/1.1\r\n\r\n".encode())
        assert head.status == full.status
        assert head.header("Content-Length") == full.header("Content-Length") == str(len(full.body))
        assert head.header("Content-Type") == full.header("Content-Type")
        assert int(head.header("Content-Length")) > 0
        assert_date_and_content_length(head, head_request=True)
        assert not client.closed_by_server(within=0.2)


@pytest.mark.parametrize("data, status", [
    (get(), 200),
    (b"HEAD /health HTTP/1.1\r\n\r\n", 200),
    (b"GET /health HTTP/1.0\r\n\r\n", 200),
    (get("/public/v1/xyz"), 404),
    (get("/public/v1/is-connected"), 401),
    (b"BREW /health HTTP/1.1\r\n\r\n", 405),
    (b"DELETE /health HTTP/1.1\r\n\r\n", 405),
    (b"POST /public/v1/xyz HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi", 404),
    (b"GET /health\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nX: " + b"a" * HEAD_LIMIT + b"\r\n\r\n", 431),
    (b"POST / HTTP/1.1\r\nContent-Length: 999999\r\n\r\n", 413),
    (b"GET / HTTP/2.0\r\n\r\n", 505),
], ids=["get", "head", "http10", "404", "401", "405-unknown-method", "405", "post", "400", "431", "413", "505"])
def test_every_response_carries_date_and_content_length(shared, data, status):
    with Client(shared.port) as client:
        response = client.request(data, head_request=data.startswith(b"HEAD"))
        assert response.status == status
        assert_date_and_content_length(response, head_request=data.startswith(b"HEAD"))


# --- bad input: the status, Connection: close, a closed connection, and a server still serving ---


@pytest.mark.parametrize("data", [
    b"GET /" + b"a" * HEAD_LIMIT + b" HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + b"".join(b"X-Header-%03d: %s\r\n" % (i, b"v" * 100) for i in range(160)) + b"\r\n",
    b"GET / HTTP/1.1\r\nX-Endless: " + b"a" * (HEAD_LIMIT + 10),  # the end of the head never comes
], ids=["long-request-line", "many-headers", "no-end-of-head"])
def test_head_over_16_kib_is_431_and_the_connection_closed(shared, data):
    assert_rejected(shared, data, 431)


def test_head_at_the_16_kib_limit_is_accepted_when_its_last_byte_arrives_late(shared):
    start = b"GET /health HTTP/1.1\r\nX-Fill: "
    data = start + b"a" * (HEAD_LIMIT - len(start)) + b"\r\n\r\n"  # request line + headers: exactly 16 KiB
    with Client(shared.port) as client:
        client.send(data[:-1])
        time.sleep(0.2)
        client.send(data[-1:])
        response = client.read_response()
        assert (response.status, response.body) == (200, b"ok")


def test_head_at_the_16_kib_limit_is_accepted_when_sent_at_once(shared):
    start = b"GET /health HTTP/1.1\r\nX-Fill: "
    data = start + b"a" * (HEAD_LIMIT - len(start)) + b"\r\n\r\n"
    with Client(shared.port) as client:
        assert client.request(data).status == 200


def test_body_over_the_limit_by_content_length_is_413_and_the_connection_closed(shared):
    response = assert_rejected(shared, b"POST /public/v1/xyz HTTP/1.1\r\nContent-Length: %d\r\n\r\n"
                               % (MAX_BODY + 1), 413)
    assert str(MAX_BODY) in response.json()["message"]


def test_body_over_the_limit_by_chunked_is_413_and_the_connection_closed(shared):
    chunks = b"400\r\n" + b"x" * 1024 + b"\r\n" + b"400\r\n" + b"x" * 1024 + b"\r\n" + b"1\r\n"
    assert_rejected(shared, b"POST /public/v1/xyz HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks, 413)


@pytest.mark.parametrize("line", [
    b"GET /health", b"GET  /health HTTP/1.1", b"GET /health HTTP/1.1 extra", b"GET /he\x7flth HTTP/1.1",
    b"GE(T /health HTTP/1.1", b"GET /health HTTX/1.1", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
], ids=["no-version", "double-space", "extra-part", "control-in-target", "bad-method", "bad-protocol", "tls"])
def test_malformed_request_line_is_400_and_the_connection_closed(shared, line):
    assert_rejected(shared, line + b"\r\nHost: test\r\n\r\n", 400)


@pytest.mark.parametrize("header", [b"NoColon", b"Bad Name: x", b": no-name", b"X: a\x00b", b" folded: x"],
                         ids=["no-colon", "space-in-name", "empty-name", "nul-in-value", "obs-fold"])
def test_malformed_header_is_400_and_the_connection_closed(shared, header):
    assert_rejected(shared, b"GET /health HTTP/1.1\r\nHost: test\r\n" + header + b"\r\n\r\n", 400)


@pytest.mark.parametrize("size_line", [b"zz", b"-5", b"", b"5 5", b"1" * 17], ids=["not-hex", "negative", "empty",
                                                                                 "two-numbers", "too-long"])
def test_malformed_chunk_size_is_400_and_the_connection_closed(shared, size_line):
    assert_rejected(shared, b"POST /public/v1/xyz HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + size_line + b"\r\nhello\r\n0\r\n\r\n", 400)


def test_chunk_data_not_followed_by_crlf_is_400_and_the_connection_closed(shared):
    assert_rejected(shared, b"POST /public/v1/xyz HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                    b"5\r\nhelloXX", 400)


@pytest.mark.parametrize("headers", [b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                                     b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"],
                         ids=["cl-then-te", "te-then-cl"])
def test_content_length_with_transfer_encoding_is_400_and_the_connection_closed(shared, headers):
    assert_rejected(shared, b"POST /public/v1/xyz HTTP/1.1\r\n" + headers + b"\r\n5\r\nhello\r\n0\r\n\r\n", 400)


@pytest.mark.parametrize("headers", [b"Content-Length: 5\r\nContent-Length: 6\r\n", b"Content-Length: 5, 6\r\n"],
                         ids=["two-headers", "one-list"])
def test_two_different_content_lengths_are_400_and_the_connection_closed(shared, headers):
    assert_rejected(shared, b"POST /public/v1/xyz HTTP/1.1\r\n" + headers + b"\r\nhello!", 400)


def test_content_length_with_thousands_of_digits_is_rejected_and_the_connection_closed(shared):
    # 5000 digits fit well in a 16 KiB head, but Python's int() refuses more than 4300 digits.
    data = b"POST /public/v1/xyz HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n"
    reply = raw_exchange(shared.port, data, timeout=5)
    assert re.match(rb"HTTP/1\.1 (400|413) ", reply), f"expected a 400 or 413 answer, got {reply[:200]!r}"
    assert b"\r\nConnection: close\r\n" in reply
    assert_health_ok(shared.port)


def test_unknown_method_is_405_with_an_allow_header(shared):
    with Client(shared.port) as client:
        response = client.request(b"BREW /health HTTP/1.1\r\nHost: test\r\n\r\n")
        assert response.status == 405
        allowed = [method.strip() for method in response.header("Allow").split(",")]
        assert "GET" in allowed and "BREW" not in allowed
        assert response.json()["statusCode"] == 405
    assert_health_ok(shared.port)


def test_known_method_not_allowed_on_a_path_is_405_with_allow_get_head(shared):
    with Client(shared.port) as client:
        response = client.request(b"DELETE /health HTTP/1.1\r\nHost: test\r\n\r\n")
        assert response.status == 405
        assert response.header("Allow") == "GET, HEAD"
        assert response.json()["statusCode"] == 405
    assert_health_ok(shared.port)


def test_unknown_path_is_404_with_the_postiz_body(shared):
    with Client(shared.port) as client:
        response = client.request(get("/public/v1/xyz"))
        assert response.status == 404
        assert response.body == b'{"message":"Cannot GET /public/v1/xyz","error":"Not Found","statusCode":404}'
        assert response.header("Content-Type").split(";")[0] == "application/json"
    assert_health_ok(shared.port)


def test_a_refused_request_with_a_small_body_is_answered_and_the_connection_goes_on(shared):
    with Client(shared.port) as client:
        response = client.request(b"POST /public/v1/posts HTTP/1.1\r\nContent-Length: 1000\r\n\r\n" + b"x" * 1000)
        assert response.status == 401 and response.header("Connection") is None
        assert client.request(get()).status == 200


def test_a_client_that_half_closes_still_gets_the_answers_of_its_requests_made_asynchronously(shared):
    # (the import runs on a thread: its answer comes after the client's end of stream has arrived)
    request = (b"POST /public/v1/posts/import HTTP/1.1\r\nAuthorization: " + shared.key.encode()
               + b"\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
    answer = raw_exchange(shared.port, request + request, half_close=True)
    assert answer.count(b"HTTP/1.1 400 Bad Request") == 2, answer[:300]
    assert b"must be a JSON array of CreatePost bodies" in answer


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_refused_request_with_a_large_body_is_answered_before_the_body_and_the_connection_closed(
        start_server, framing):
    server = start_server()  # with the default body limit, 25 MiB
    head = b"Content-Length: 20000000\r\n" if framing == "content-length" else b"Transfer-Encoding: chunked\r\n"
    body = b"x" * 100_000 if framing == "content-length" else b"186a0\r\n" + b"x" * 100_000 + b"\r\n"
    with Client(server.port) as client:
        client.send(b"POST /public/v1/posts HTTP/1.1\r\nAuthorization: wrong\r\n" + head + b"\r\n" + body)
        response = client.read_response()
        assert response.status == 401 and response.header("Connection") == "close", response.head
        assert response.json() == {"msg": "Invalid API key"}
        assert client.closed_by_server()
    assert_health_ok(server.port)


@pytest.mark.parametrize("target, refusal", [
    ("/mcp/not-a-key", (400, b"Invalid API Key")),
    ("/message/not-a-key?sessionId=x", (400, b"Invalid API Key")),
    ("/mcp", (401, b"Missing Authorization header")),
])
def test_mcp_credentials_are_checked_from_the_head_before_a_body_is_read(start_server, target, refusal):
    """MCP routes take the key in their URL, not as the API does: it is still checked before the body."""
    server = start_server()
    with Client(server.port) as client:
        client.send(f"POST {target} HTTP/1.1\r\nContent-Type: application/json\r\n"
                    "Content-Length: 20000000\r\n\r\n".encode() + b"x" * 100_000)
        response = client.read_response()
        assert (response.status, response.body) == refusal and response.header("Connection") == "close"
        assert client.closed_by_server()
    assert_health_ok(server.port)


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_sign_in_takes_no_body_larger_than_a_sign_in_needs(start_server, framing):
    """/auth/login is open to anyone: it may not make the server hold megabytes."""
    server = start_server()  # with the default body limit, 25 MiB
    head = b"Content-Length: 1000000\r\n" if framing == "content-length" else b"Transfer-Encoding: chunked\r\n"
    body = b"x" * 20_000 if framing == "content-length" else b"4e20\r\n" + b"x" * 20_000 + b"\r\n"
    with Client(server.port) as client:
        client.send(b"POST /auth/login HTTP/1.1\r\nContent-Type: application/json\r\n" + head + b"\r\n" + body)
        response = client.read_response()
        assert response.status == 413 and response.header("Connection") == "close", response.head
        assert "over the limit of 16384 bytes for POST /auth/login" in response.json()["message"]
    assert_health_ok(server.port)


# --- request targets: origin, absolute, asterisk and authority forms (RFC 9112 3.2) --------------


@pytest.mark.parametrize("target", ["http://rustiz.example/health", "HTTP://rustiz.example:5077/health",
                                    "https://user@[::1]:8443/health"])
def test_absolute_form_target_is_routed_by_its_path(shared, target):
    with Client(shared.port) as client:
        response = client.request(f"GET {target} HTTP/1.1\r\nHost: other.example\r\n\r\n".encode())
        assert (response.status, response.body) == (200, b"ok")


def test_absolute_form_target_keeps_its_query_and_an_empty_path_is_slash(shared):
    with Client(shared.port) as client:
        response = client.request(get("http://rustiz.example/public/v1/xyz?a=1&b=2"))
        assert response.status == 404
        assert response.json()["message"] == "Cannot GET /public/v1/xyz?a=1&b=2"
        index = client.request(get("/"))
        assert client.request(get("http://rustiz.example?x=1")).body == index.body  # the web app's page
        authorized = client.request(get("http://rustiz.example/public/v1/integrations",
                                         f"Authorization: {shared.key}\r\n"))
        assert (authorized.status, authorized.body) == (200, b"[]")


def test_options_asterisk_lists_the_methods_the_server_knows(shared):
    reply = raw_exchange(shared.port, b"OPTIONS * HTTP/1.1\r\nHost: rustiz\r\nConnection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 204 "), reply
    allow = re.search(rb"\r\nAllow: ([^\r]*)\r\n", reply).group(1).decode()
    assert {"GET", "POST", "OPTIONS"} <= {method.strip() for method in allow.split(",")}


def test_connect_is_refused_with_405_naming_the_server_as_no_proxy(shared):
    with Client(shared.port) as client:
        response = client.request(b"CONNECT rustiz.example:443 HTTP/1.1\r\nHost: rustiz.example:443\r\n\r\n")
        assert response.status == 405
        assert "CONNECT" not in response.header("Allow")
        assert "not a proxy" in response.json()["message"]


@pytest.mark.parametrize("target", ["*", "health", "rustiz.example:443", "ftp://rustiz.example/health",
                                    "http:///health", "http:health"])
def test_a_target_in_no_form_the_method_allows_is_400_and_the_connection_closed(shared, target):
    response = assert_rejected(shared, f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode(), 400)
    assert "target" in response.json()["message"]


# --- timeouts ----------------------------------------------------------------------------------


def test_request_head_left_unfinished_is_answered_408_and_disconnected(start_server):
    server = start_server(env=TIMEOUT_ENV)
    with Client(server.port, timeout=10) as client:
        started = time.monotonic()
        client.send(b"GET /hea")
        response = client.read_response()
        elapsed = time.monotonic() - started
        assert response.status == 408
        assert response.header("Connection") == "close"
        assert_date_and_content_length(response)
        assert client.closed_by_server()
        assert 0.9 <= elapsed <= 1 + SWEEP_SLACK, elapsed
    assert_health_ok(server.port)


def test_request_head_dripped_a_byte_at_a_time_is_cut_off_after_the_header_timeout(start_server):
    server = start_server(env=TIMEOUT_ENV)
    drip = b"GET /health HTTP/1.1\r\nX-Slow: " + b"z" * 100  # would take 26 s at this pace
    with Client(server.port, timeout=10) as client:
        started = time.monotonic()
        for byte in drip:
            readable, _, _ = select.select([client.sock], [], [], 0.25)
            if readable or time.monotonic() - started > 1 + SWEEP_SLACK + 1:
                break
            client.send(bytes([byte]))
        response = client.read_response()
        elapsed = time.monotonic() - started
        assert response.status == 408
        assert client.closed_by_server()
        assert elapsed <= 1 + SWEEP_SLACK, f"still connected after {elapsed:.1f} s of dripping"
    assert_health_ok(server.port)


def test_idle_keep_alive_connection_is_closed_after_the_keepalive_timeout(start_server):
    server = start_server(env=TIMEOUT_ENV)
    with Client(server.port, timeout=10) as client:
        assert client.request(get()).status == 200
        time.sleep(0.3)
        assert client.request(get()).status == 200  # well within the timeout: still open
        idle_since = time.monotonic()
        assert client.closed_by_server(within=1 + SWEEP_SLACK + 1)
        elapsed = time.monotonic() - idle_since
        assert 0.9 <= elapsed <= 1 + SWEEP_SLACK, elapsed
    assert_health_ok(server.port)


def test_a_body_sent_above_the_minimum_rate_is_accepted_however_far_apart_its_pieces(start_server):
    # Pieces 1.5 s apart, beyond the 1 s header timeout, but 2 KiB/s on average where 1 KiB/s is asked.
    server = start_server(env={**TIMEOUT_ENV, "RUSTIZ_BODY_MIN_RATE": "1024", "RUSTIZ_BODY_RATE_WINDOW": "2"})
    body = b'{"type": "draft"' + b" " * 9000 + b"}"
    with Client(server.port, timeout=10) as client:
        client.send(b"POST /public/v1/posts HTTP/1.1\r\nAuthorization: " + server.key.encode()
                    + b"\r\nContent-Length: %d\r\n\r\n" % len(body))
        for start in range(0, len(body), 3000):
            time.sleep(1.5)
            client.send(body[start:start + 3000])
        response = client.read_response()
        assert response.json()["message"] == "All posts must have an integration id", response.body  # read whole


def test_a_body_slower_than_the_minimum_rate_is_answered_408_and_disconnected(start_server):
    server = start_server(env={**TIMEOUT_ENV, "RUSTIZ_BODY_MIN_RATE": "1024", "RUSTIZ_BODY_RATE_WINDOW": "2"})
    with Client(server.port, timeout=10) as client:
        client.send(b"POST /public/v1/posts HTTP/1.1\r\nAuthorization: " + server.key.encode()
                    + b"\r\nContent-Length: 100000\r\n\r\n")
        started = time.monotonic()
        while not select.select([client.sock], [], [], 0.5)[0]:  # 200 bytes/s, a piece well within 1 s
            assert time.monotonic() - started < 2 + SWEEP_SLACK + 1, "still reading a body sent at 200 bytes/s"
            client.send(b"x" * 100)
        response = client.read_response()
        assert response.status == 408
        assert "1024 bytes/s" in response.json()["message"]
        assert response.header("Connection") == "close"
        assert client.closed_by_server()
    assert_health_ok(server.port)
