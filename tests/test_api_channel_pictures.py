"""Channel pictures through rustiz (GET /public/v1/integrations/:id/picture): fetched from the platform through
the outbound client, bounded, checked to be a picture, kept a while, and only for the caller's organization."""
from __future__ import annotations

import urllib.request

import pytest

from conftest import run_cli
from fakes.webhook import FakeWebhookReceiver
from fakes import answer
from support import API, api, connect_database, png_file, webhook_channel

PICTURE = png_file(4, 4, pixel=b"\x20\x40\x80")


def set_picture(server, channel_id: str, url: str | None) -> None:
    with connect_database(server.database) as db:
        db.execute("UPDATE integration SET picture = ? WHERE id = ?", (url, channel_id))


def fetch_picture(server, channel_id: str, key: str | None = None) -> tuple:
    request = urllib.request.Request(f"{server.url}{API}/integrations/{channel_id}/picture",
                                     headers={"Authorization": key or server.key})
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.fixture
def hook(start_server_with_fakes):
    """(server, origin, channel): a webhook channel whose receiver also serves its picture at /avatar.png."""
    server = start_server_with_fakes()
    origin = FakeWebhookReceiver()
    origin.route("GET", "/avatar.png", lambda request: answer(200, PICTURE, {"Content-Type": "image/png"}))
    try:
        yield server, origin, webhook_channel(server, origin, "Hook")
    finally:
        origin.close()


def test_a_channel_s_picture_is_served_by_rustiz_and_fetched_once(hook):
    server, origin, channel = hook
    set_picture(server, channel, origin.url + "/avatar.png")
    for _ in range(3):
        status, headers, body = fetch_picture(server, channel)
        assert (status, headers["Content-Type"], body) == (200, "image/png", PICTURE)
    assert headers["X-Content-Type-Options"] == "nosniff" and "sandbox" in headers["Content-Security-Policy"]
    assert len(origin.requests_to("GET", "/avatar.png")) == 1  # kept: one fetch for every page that shows it


def test_no_picture_a_broken_one_an_oversized_one_or_one_that_is_not_an_image_answer_404(hook):
    server, origin, channel = hook
    origin.route("GET", "/big.png", lambda request: answer(200, png_file(4, 4, padding=600 * 1024)))
    origin.route("GET", "/page.png", lambda request: answer(200, b"<svg xmlns='http://www.w3.org/2000/svg'/>"))
    origin.route("GET", "/gone.png", lambda request: answer(404))
    for url in (None, origin.url + "/big.png", origin.url + "/page.png", origin.url + "/gone.png",
                "javascript:alert(1)", "/no-picture.jpg"):
        set_picture(server, channel, url)
        status, headers, body = fetch_picture(server, channel)
        assert status == 404 and b"has no picture rustiz could fetch" in body, (url, status, body)


def test_a_picture_on_a_private_address_is_refused_by_the_outbound_guard(hook):
    server, origin, channel = hook  # RUSTIZ_FETCH_ALLOW lets 127.0.0.1 through, nothing else private
    for url in ("http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/avatar.png",
                f"http://[::1]:{origin.port}/avatar.png"):
        set_picture(server, channel, url)
        assert fetch_picture(server, channel)[0] == 404, url
    assert origin.requests_to("GET", "/avatar.png") == []


def test_another_organization_s_channel_picture_is_not_found(hook):
    server, origin, channel = hook
    set_picture(server, channel, origin.url + "/avatar.png")
    made = run_cli(server.pyz, "org", "add", "Second", env={"RUSTIZ_CONFIG": str(server.config_path)})
    assert made.returncode == 0, made.stderr
    other_key = [line.split()[-1] for line in made.stdout.splitlines() if len(line.split()[-1]) == 64][0]
    status, _, body = fetch_picture(server, channel, key=other_key)
    assert status == 404 and b"No channel" in body
    assert api(server, "GET", f"{API}/integrations/{channel}/picture", key="wrong")[0] == 401
    assert origin.requests_to("GET", "/avatar.png") == []
