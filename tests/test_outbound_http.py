"""rustiz's outbound HTTP client (what every provider uses), against local servers: gzip, redirects,
timeouts, certificate checks, proxies, and the line between "nothing was sent" and "no answer"."""
from __future__ import annotations

import asyncio
import gzip
import json
import socket
import ssl
import subprocess
import threading
import time
import zlib

import pytest

from rustiz_features.http_client import AddressRefused, ConnectFailed, HttpClient, HttpReply, NoAnswer, Timeouts, encode_multipart
from conftest import client_for_fakes
from support import upload_from_url
from fakes.slow_server import SlowServer
from fakes import FakePlatform, answer


def fetch(method: str, url: str, **options) -> HttpReply:
    client = client_for_fakes()
    try:
        return asyncio.run(client.request(method, url, **options))
    finally:
        client.close()


@pytest.fixture
def platform():
    fake = FakePlatform()
    yield fake
    fake.close()


def test_json_and_form_bodies_are_encoded_with_their_content_type(platform):
    platform.route("POST", "/echo", lambda request: answer(200, {"type": request.headers["content-type"],
                                                                 "body": request.body.decode()}))
    assert fetch("POST", platform.url + "/echo", json_body={"a": "é"}).json() == {
        "type": "application/json", "body": '{"a": "é"}'}
    assert fetch("POST", platform.url + "/echo", form={"status": "hi there", "media_ids[]": ["1", "2"]}).json() == {
        "type": "application/x-www-form-urlencoded", "body": "status=hi+there&media_ids%5B%5D=1&media_ids%5B%5D=2"}


def test_gzip_answers_are_unpacked_and_a_user_agent_is_sent(platform):
    platform.route("GET", "/zipped", lambda request: answer(200, gzip.compress(request.headers["user-agent"].encode()),
                                                           {"Content-Encoding": "gzip"}))
    reply = fetch("GET", platform.url + "/zipped")
    assert reply.status == 200 and reply.body.decode().startswith("rustiz/")


def test_deflate_answers_are_unpacked_zlib_wrapped_or_raw(platform):
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    platform.route("GET", "/wrapped", lambda request: answer(200, zlib.compress(b"wrapped" * 1000),
                                                            {"Content-Encoding": "deflate"}))
    platform.route("GET", "/raw", lambda request: answer(200, raw.compress(b"raw" * 1000) + raw.flush(),
                                                        {"Content-Encoding": "deflate"}))
    assert fetch("GET", platform.url + "/wrapped").body == b"wrapped" * 1000
    assert fetch("GET", platform.url + "/raw").body == b"raw" * 1000
    assert platform.requests[0].headers["accept-encoding"] == "gzip, deflate"


def zeros_bomb(gibibytes: float, wbits: int = 31) -> bytes:
    """A gzip (or zlib) stream of `gibibytes` GiB of zeros in about a thousandth of that: the same
    compressed mebibyte of zeros, repeated (each ends flushed to a byte boundary); no trailer."""
    packer, mebibyte = zlib.compressobj(9, zlib.DEFLATED, wbits), bytes(2**20)
    first = packer.compress(mebibyte) + packer.flush(zlib.Z_SYNC_FLUSH)
    again = packer.compress(mebibyte) + packer.flush(zlib.Z_SYNC_FLUSH)
    return first + again * int(gibibytes * 1024 - 1)


@pytest.mark.parametrize("encoding, wbits", [("gzip", 31), ("deflate", 15)])
def test_an_answer_that_unpacks_past_the_limit_fails_naming_the_host_and_the_limit(platform, encoding, wbits):
    bomb = zeros_bomb(0.25, wbits)
    platform.route("GET", "/bomb", lambda request: answer(200, bomb, {"Content-Encoding": encoding}))
    host = platform.url.removeprefix("http://")
    with pytest.raises(NoAnswer, match=f"{host} sent a {encoding} answer that unpacks to more than 32 MiB"):
        fetch("GET", platform.url + "/bomb")


def test_an_encoding_rustiz_did_not_ask_for_is_refused(platform):
    platform.route("GET", "/brotli", lambda request: answer(200, b"\x1b\x03", {"Content-Encoding": "br"}))
    with pytest.raises(NoAnswer, match="answered in the 'br' encoding, which rustiz did not ask for"):
        fetch("GET", platform.url + "/brotli")


def test_a_gzip_bomb_from_a_platform_leaves_the_server_s_memory_bounded(start_server_with_fakes, platform):
    """Connecting a Mastodon channel to an instance that answers 2 MB of gzip holding 2 GiB of zeros: a
    clear error naming the platform, the host and the limit, and rustiz's peak memory stays under 200 MiB."""
    bomb = zeros_bomb(2)
    platform.route("GET", "/api/v1/accounts/verify_credentials", lambda request: answer(
        200, bomb, {"Content-Encoding": "gzip", "Content-Type": "application/json"}))
    server = start_server_with_fakes()
    body = json.dumps({"provider": "mastodon", "credentials": {"instance": platform.url, "accessToken": "t"}})
    status, _, answer_body = server.request("POST", "/public/v1/integrations", {
        "Authorization": server.key, "Content-Type": "application/json"}, body.encode(), timeout=60)
    peak = peak_memory_mib(server.process.pid)
    assert peak < 200, f"rustiz peaked at {peak:.0f} MiB"
    message = json.loads(answer_body)["message"]
    assert status == 502 and "Mastodon did not answer" in message, message
    assert f"{platform.url.removeprefix('http://')} sent a gzip answer that unpacks to more than 32 MiB" in message
    assert server.request("GET", "/health")[0] == 200


def peak_memory_mib(pid: int) -> float:
    """The process's peak resident memory (VmHWM), in MiB."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def test_get_follows_a_bounded_number_of_redirects_and_post_never_does(platform):
    platform.route("GET", "/hop/(\\d+)", lambda request: answer(
        302, b"", {"Location": f"/hop/{int(request.match[1]) - 1}"}) if request.match[1] != "0" else answer(200, "here"))
    platform.route("POST", "/moved", lambda request: answer(307, b"", {"Location": "/elsewhere"}))
    assert fetch("GET", platform.url + "/hop/5").body == b"here"
    with pytest.raises(NoAnswer, match="more than 5 redirects"):
        fetch("GET", platform.url + "/hop/6")
    assert fetch("POST", platform.url + "/moved").status == 307


def test_credentials_follow_a_redirect_only_to_the_same_origin(platform):
    """A platform that redirects elsewhere (a CDN, a moved instance) must not receive the token meant for it."""
    other = FakePlatform()
    try:
        other.route("GET", "/landing", lambda request: answer(200, "there"))
        platform.route("GET", "/same", lambda request: answer(302, b"", {"Location": "/landing"}))
        platform.route("GET", "/landing", lambda request: answer(200, "here"))
        platform.route("GET", "/away", lambda request: answer(302, b"", {"Location": other.url + "/landing"}))
        secrets = {"Authorization": "Bearer secret", "api-key": "secret", "Cookie": "session=secret",
                   "Accept": "application/json"}
        assert fetch("GET", platform.url + "/same", headers=secrets).body == b"here"
        assert platform.requests[-1].headers["authorization"] == "Bearer secret"
        assert fetch("GET", platform.url + "/away", headers=secrets).body == b"there"
        landed = other.requests[-1].headers
        assert "secret" not in json.dumps(dict(landed)) and landed["accept"] == "application/json"
    finally:
        other.close()


def test_error_statuses_are_answers_not_exceptions(platform):
    platform.route("GET", "/missing", lambda request: answer(404, {"error": "not here"}))
    reply = fetch("GET", platform.url + "/missing")
    assert (reply.status, reply.json()) == (404, {"error": "not here"})


def test_a_refused_connection_means_nothing_was_sent():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(ConnectFailed, match="cannot connect to 127.0.0.1:.*Connection refused"):
        fetch("POST", f"http://127.0.0.1:{port}/statuses")


def test_silence_after_sending_is_no_answer(platform):
    platform.delay_next("POST", "/slow", 3)
    platform.route("POST", "/slow", lambda request: answer(200, "late"))
    with pytest.raises(NoAnswer, match="did not answer POST /slow: timed out"):
        fetch("POST", platform.url + "/slow", timeouts=Timeouts(connect=2, read=0.5, total=5))
    assert len(platform.requests) == 1  # it was sent: the server has it


def test_a_dropped_connection_is_no_answer(platform):
    platform.drop_next("POST", "/drop")
    with pytest.raises(NoAnswer):
        fetch("POST", platform.url + "/drop")


class Proxy(FakePlatform):
    """A forward proxy that answers every request itself and records the targets it was sent."""

    def __init__(self):
        super().__init__()
        self.seen: list = []

    def dispatch(self, request, handler):
        self.seen.append(handler.path)
        return answer(200, "from the proxy")


@pytest.fixture
def proxy(monkeypatch):
    """A Proxy that HTTP_PROXY names for every host."""
    fake = Proxy()
    monkeypatch.setenv("http_proxy", fake.url)
    monkeypatch.setenv("no_proxy", "")
    yield fake
    fake.close()


def test_an_http_proxy_from_the_environment_is_used(platform, proxy, monkeypatch):
    platform.route("GET", "/proxied", lambda request: answer(200, "via proxy"))
    assert fetch("GET", "http://platform.invalid/proxied?x=1").body == b"from the proxy"
    assert proxy.seen == ["http://platform.invalid/proxied?x=1"]  # the absolute form a proxy needs
    monkeypatch.setenv("no_proxy", "platform.invalid")
    with pytest.raises(ConnectFailed):
        fetch("GET", "http://platform.invalid/proxied")


def test_through_a_proxy_targets_known_to_be_private_are_still_refused(proxy):
    """The proxy is the operator's (its own address is not checked), and it resolves names itself: what
    rustiz can tell is private, a literal address or a name that resolves here to one, is refused."""
    client = HttpClient(())
    try:
        for url in ("http://127.0.0.1:8080/x", "http://2130706433/x", "http://[::ffff:10.0.0.1]/x", "http://localhost/x"):
            with pytest.raises(AddressRefused, match="RUSTIZ_FETCH_ALLOW"):
                asyncio.run(client.request("GET", url))
        assert asyncio.run(client.request("GET", "http://platform.invalid/x")).body == b"from the proxy"
        assert proxy.seen == ["http://platform.invalid/x"]
    finally:
        client.close()


def test_an_untrusted_certificate_is_refused_before_anything_is_sent(tmp_path):
    key, certificate = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(certificate), "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    # A bare TLS listener, not a fake: the fakes speak plain HTTP, and this one must only shake hands.
    listener = socket.create_server(("127.0.0.1", 0))
    received = []

    def serve_once():
        connection, _ = listener.accept()
        try:
            with context.wrap_socket(connection, server_side=True) as tls:
                received.append(tls.recv(1024))
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=serve_once, daemon=True)
    thread.start()
    try:
        with pytest.raises(ConnectFailed, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            fetch("POST", f"https://127.0.0.1:{listener.getsockname()[1]}/statuses")
        thread.join(5)
        assert received == []
    finally:
        listener.close()


def test_multipart_bodies_carry_fields_and_files(platform):
    platform.route("POST", "/upload", lambda request: answer(200, {
        name: [filename, data.decode(), kind] for name, (filename, data, kind) in request.multipart().items()}))
    body, content_type = encode_multipart([("description", "a cat"), ("file", ("cat.png", b"PNG", "image/png"))])
    reply = fetch("POST", platform.url + "/upload", body=body, headers={"Content-Type": content_type})
    assert reply.json() == {"description": [None, "a cat", "text/plain"], "file": ["cat.png", "PNG", "image/png"]}


SLOW_ANSWERS = {
    "a header line at a time": (b"HTTP/1.1 200 OK\r\n", b"X-Slow: 1\r\n"),
    "endless 100 Continue": (b"", b"HTTP/1.1 100 Continue\r\n\r\n"),
    "chunked trailers at a time": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n",
                                   b"X-Trailer: 1\r\n"),
    "a body at a time": (b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", b"x"),
}


@pytest.mark.parametrize("opening, line", SLOW_ANSWERS.values(), ids=SLOW_ANSWERS.keys())
def test_the_total_deadline_holds_over_the_whole_answer(opening, line):
    server = SlowServer(opening, line)
    try:
        started = time.monotonic()
        with pytest.raises(NoAnswer, match="timed out"):
            fetch("POST", server.url + "/hook", body=b"{}", timeouts=Timeouts(connect=2, read=1, total=2))
        assert time.monotonic() - started < 2 + 2, f"the answer went on for {time.monotonic() - started:.1f} s"
    finally:
        server.close()


def test_upload_from_url_stops_at_the_total_deadline_while_a_server_sends_its_head_a_line_at_a_time(
        start_server_with_fakes):
    server = start_server_with_fakes(env={"RUSTIZ_OUTBOUND_TOTAL_TIMEOUT": "2"})
    hanging = SlowServer(b"HTTP/1.1 200 OK\r\n", b"X-Slow: 1\r\n")
    try:
        started = time.monotonic()
        status, answer = upload_from_url(server, hanging.url + "/picture.png")
        assert status == 400 and "timed out" in answer["message"], (status, answer)
        assert time.monotonic() - started < 2 + 2, f"upload-from-url ran {time.monotonic() - started:.1f} s"
    finally:
        hanging.close()
