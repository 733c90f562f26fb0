"""rustiz's outbound HTTP client (what every provider uses), against local servers: gzip, redirects,
timeouts, certificate checks, proxies, and the line between "nothing was sent" and "no answer"."""
from __future__ import annotations

import asyncio
import gzip
import socket
import ssl
import subprocess
import threading

import pytest

import rustiz
from conftest import client_for_fakes
from fakes import FakePlatform, answer


def fetch(method: str, url: str, **options) -> rustiz.HttpReply:
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


def test_get_follows_a_bounded_number_of_redirects_and_post_never_does(platform):
    platform.route("GET", "/hop/(\\d+)", lambda request: answer(
        302, b"", {"Location": f"/hop/{int(request.match[1]) - 1}"}) if request.match[1] != "0" else answer(200, "here"))
    platform.route("POST", "/moved", lambda request: answer(307, b"", {"Location": "/elsewhere"}))
    assert fetch("GET", platform.url + "/hop/5").body == b"here"
    with pytest.raises(rustiz.NoAnswer, match="more than 5 redirects"):
        fetch("GET", platform.url + "/hop/6")
    assert fetch("POST", platform.url + "/moved").status == 307


def test_error_statuses_are_answers_not_exceptions(platform):
    platform.route("GET", "/missing", lambda request: answer(404, {"error": "not here"}))
    reply = fetch("GET", platform.url + "/missing")
    assert (reply.status, reply.json()) == (404, {"error": "not here"})


def test_a_refused_connection_means_nothing_was_sent():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(rustiz.ConnectFailed, match="cannot connect to 127.0.0.1:.*Connection refused"):
        fetch("POST", f"http://127.0.0.1:{port}/statuses")


def test_silence_after_sending_is_no_answer(platform):
    platform.delay_next("POST", "/slow", 3)
    platform.route("POST", "/slow", lambda request: answer(200, "late"))
    with pytest.raises(rustiz.NoAnswer, match="did not answer POST /slow: timed out"):
        fetch("POST", platform.url + "/slow", timeouts=rustiz.Timeouts(connect=2, read=0.5, total=5))
    assert len(platform.requests) == 1  # it was sent: the server has it


def test_a_dropped_connection_is_no_answer(platform):
    platform.drop_next("POST", "/drop")
    with pytest.raises(rustiz.NoAnswer):
        fetch("POST", platform.url + "/drop")


def test_an_http_proxy_from_the_environment_is_used(platform, monkeypatch):
    platform.route("GET", "/proxied", lambda request: answer(200, "via proxy"))
    seen = []

    class Proxy(FakePlatform):
        def dispatch(self, request, handler):
            seen.append(handler.path)
            return answer(200, "from the proxy")

    proxy = Proxy()
    try:
        monkeypatch.setenv("http_proxy", proxy.url)
        monkeypatch.setenv("no_proxy", "")
        assert fetch("GET", "http://platform.invalid/proxied?x=1").body == b"from the proxy"
        assert seen == ["http://platform.invalid/proxied?x=1"]  # the absolute form a proxy needs
        monkeypatch.setenv("no_proxy", "platform.invalid")
        with pytest.raises(rustiz.ConnectFailed):
            fetch("GET", "http://platform.invalid/proxied")
    finally:
        proxy.close()


def test_an_untrusted_certificate_is_refused_before_anything_is_sent(tmp_path):
    key, certificate = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(certificate), "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
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
        with pytest.raises(rustiz.ConnectFailed, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            fetch("POST", f"https://127.0.0.1:{listener.getsockname()[1]}/statuses")
        thread.join(5)
        assert received == []
    finally:
        listener.close()


def test_multipart_bodies_carry_fields_and_files(platform):
    platform.route("POST", "/upload", lambda request: answer(200, {
        name: [filename, data.decode(), kind] for name, (filename, data, kind) in request.multipart().items()}))
    body, content_type = rustiz.encode_multipart([("description", "a cat"), ("file", ("cat.png", b"PNG", "image/png"))])
    reply = fetch("POST", platform.url + "/upload", body=body, headers={"Content-Type": content_type})
    assert reply.json() == {"description": [None, "a cat", "text/plain"], "file": ["cat.png", "PNG", "image/png"]}
