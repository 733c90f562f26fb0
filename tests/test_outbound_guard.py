"""The address guard on every outbound call: each provider's connect and publish, outgoing webhooks,
upload-from-url, Nostr relays and Bluesky link cards, aimed at loopback and private addresses in every
spelling, and at an allowed server that redirects to loopback. All are refused with a clear error, and
no answer of a server rustiz should not have reached (or that is not the platform's error) is echoed:
a local server answers every request with a secret page, and the secret never appears."""
from __future__ import annotations

import json
import time

import pytest

from conftest import LOCAL_FAKES
from fakes.bluesky import FakeBluesky
from fakes import FakePlatform, answer
from platforms import FAKES, REQUIRED_SETTINGS, Platforms, fake_module
from support import api, connect, schedule, settled, trigger, upload_from_url
from rustiz_features.catalogue import DESCRIPTORS

SECRET = "RUSTIZ_API_KEY=s3cr3t-from-a-private-config-file"
PAGE = f"<html><head><title>{SECRET}</title></head><body><pre>{SECRET}</pre></body></html>".encode()
HINT = "rustiz does not reach private networks unless RUSTIZ_FETCH_ALLOW lists them"
BASE_URL_VARIABLES = {"devto": "RUSTIZ_DEVTO_API_URL", "hashnode": "RUSTIZ_HASHNODE_API_URL",
                      "telegram": "RUSTIZ_TELEGRAM_API_URL",
                      "medium": "RUSTIZ_MEDIUM_API_URL", "moltbook": "RUSTIZ_MOLTBOOK_API_URL",  # (issue 28, vk)
                      }  # the operator's, not the tenant's: guarded too

# (host as written in a URL, whether the secret server can be reached there, what the refusal says)
LOOPBACK = "a loopback address"
FORMS = [("2130706433", True, LOOPBACK), ("0x7f000001", True, LOOPBACK), ("0177.0.0.1", True, LOOPBACK),
         ("127.1", True, LOOPBACK), ("[::1]", False, LOOPBACK), ("[::ffff:127.0.0.1]", True, LOOPBACK),
         ("localhost", True, LOOPBACK), ("10.0.0.1", False, "a private address"),
         ("192.168.1.1", False, "a private address"), ("169.254.169.254", False, "a link-local address")]
FORM_IDS = [form[0] for form in FORMS]


class SecretServer(FakePlatform):
    """Answers every request (any method, any path, WebSocket upgrades too) with 200 and SECRET in an
    HTML page, as a web server with a config file in its document root would."""

    def dispatch(self, request, handler):
        return answer(200, PAGE, {"Content-Type": "text/html; charset=utf-8"})


@pytest.fixture(scope="module")
def secret():
    server = SecretServer()
    yield server
    server.close()


def base_url(host: str, reachable: bool, secret: SecretServer, scheme: str = "http") -> str:
    return f"{scheme}://{host}:{secret.port}" if reachable else f"{scheme}://{host}"


def credentials(provider: str, url: str) -> dict:
    """Credentials that point `provider` at `url` (for the three whose base URL is the operator's, the
    server's environment does): its fake's credentials_at."""
    return fake_module(provider).credentials_at(url)


def assert_never_echoed(*answers) -> None:
    for value in answers:
        assert SECRET not in (value if isinstance(value, str) else json.dumps(value, default=str)), value


def assert_refused(status: int, answer, provider: str, refusal: str) -> None:
    assert status == 400, (provider, answer)
    message = answer["message"]
    assert message.startswith(f"Cannot connect a {DESCRIPTORS[provider].label} channel: ") and refusal in message, message
    assert message.endswith(HINT) or f"{HINT};" in message, message
    assert_never_echoed(answer)


# --- connect ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def guarded(pyz, tmp_path_factory):
    """A server as shipped: no RUSTIZ_FETCH_ALLOW."""
    from conftest import RustizServer
    server = RustizServer(pyz, tmp_path_factory.mktemp("guarded"), {"RUSTIZ_RETRY_BASE": "0.2"}).start()
    yield server
    server.stop()


@pytest.mark.parametrize("host, reachable, refusal", FORMS, ids=FORM_IDS)
@pytest.mark.parametrize("provider", sorted(set(FAKES) - set(BASE_URL_VARIABLES)))
def test_connecting_a_channel_to_a_private_address_is_refused(guarded, secret, provider, host, reachable, refusal):
    before = len(secret.requests)
    status, answer = connect(guarded, provider, credentials(provider, base_url(host, reachable, secret)))
    assert_refused(status, answer, provider, refusal)
    assert len(secret.requests) == before


@pytest.mark.parametrize("host, reachable, refusal", FORMS, ids=FORM_IDS)
def test_a_platform_base_url_at_a_private_address_is_refused_too(start_server, secret, host, reachable, refusal):
    server = start_server(env={variable: base_url(host, reachable, secret) for variable in BASE_URL_VARIABLES.values()})
    before = len(secret.requests)
    for provider in BASE_URL_VARIABLES:
        status, answer = connect(server, provider, credentials(provider, ""))
        assert_refused(status, answer, provider, refusal)
    assert len(secret.requests) == before


# --- upload-from-url and outgoing webhooks ------------------------------------------------------------

@pytest.mark.parametrize("host, reachable, refusal", FORMS, ids=FORM_IDS)
def test_upload_from_url_and_webhook_registration_refuse_private_addresses(guarded, secret, host, reachable, refusal):
    url = base_url(host, reachable, secret) + "/picture.png"
    before = len(secret.requests)
    status, answer = upload_from_url(guarded, url)
    assert status == 400 and refusal in answer["message"] and HINT in answer["message"], answer
    status, hook = api(guarded, "POST", "/public/v1/webhooks", {"name": "n8n", "url": url})
    assert status == 400, hook
    assert hook["message"].startswith("url cannot receive webhooks: ") and refusal in hook["message"], hook
    assert_never_echoed(answer, hook)
    assert len(secret.requests) == before


# --- an allowed server that answers with something else, or redirects to loopback ---------------------

@pytest.fixture(scope="module")
def named(pyz, tmp_path_factory, secret):
    """A server that may reach "localhost" (by that name) but no other private address: the fakes are
    reached as localhost, the secret server as 127.0.0.1 stays refused; the three platforms whose base
    URL is the operator's point at the secret server, by the allowed name."""
    from conftest import RustizServer
    env = {"RUSTIZ_FETCH_ALLOW": "localhost", "RUSTIZ_RETRY_BASE": "0.2",
           **{variable: f"http://localhost:{secret.port}" for variable in BASE_URL_VARIABLES.values()}}
    server = RustizServer(pyz, tmp_path_factory.mktemp("named"), env).start()
    yield server
    server.stop()


def by_name(url: str) -> str:
    return url.replace("://127.0.0.1:", "://localhost:")


@pytest.mark.parametrize("provider", sorted(FAKES))
def test_an_allowed_server_that_is_not_the_platform_is_never_quoted(named, secret, provider):
    """The report's case: a Discord "webhook URL" at a web server that serves a config file. rustiz may
    reach it (the operator allowed it), but says only what kind of answer came, never what it said."""
    status, answer = connect(named, provider, credentials(provider, f"http://localhost:{secret.port}"))
    assert status in (201, 400, 502), (provider, answer)
    assert_never_echoed(answer)
    if provider not in ("webhook", "slack"):  # those take any 2xx: the receiver's (or Slack's) business
        assert status != 201, (provider, answer)


class Redirector(FakePlatform):
    """Answers every request with a redirect to the secret server at 127.0.0.1."""

    def __init__(self, target: str):
        super().__init__()
        self.target = target

    def dispatch(self, request, handler):
        return answer(302, b"", {"Location": self.target + request.path})


@pytest.fixture(scope="module")
def redirector(secret):
    fake = Redirector(f"http://127.0.0.1:{secret.port}")
    yield fake
    fake.close()


REFUSED_REDIRECT = f"127.0.0.1 is a loopback address; {HINT}"


@pytest.mark.parametrize("provider", ["mastodon", "discord", "wordpress", "listmonk"])  # they connect with a GET
def test_a_redirect_from_an_allowed_server_to_loopback_is_refused(named, secret, redirector, provider):
    before = len(secret.requests)
    status, answer = connect(named, provider, credentials(provider, by_name(redirector.url)))
    assert_refused(status, answer, provider, REFUSED_REDIRECT)
    status, answer = upload_from_url(named, by_name(redirector.url) + "/x.png")
    assert status == 400 and answer["message"] == f"upload-from-url: {REFUSED_REDIRECT}", answer
    assert len(secret.requests) == before


def test_link_cards_and_media_at_loopback_are_not_fetched(named, secret, redirector):
    pds = FakeBluesky()
    try:
        status, channel = connect(named, "bluesky", pds.credentials(service=by_name(pds.url)))
        assert status == 201, channel
        before = len(secret.requests)
        status, posted = schedule(named, channel["id"], f"<p>Read http://127.0.0.1:{secret.port}/config</p>",
                                  f"<p>and {by_name(redirector.url)}/page</p>")
        assert status == 201, posted
        post = settled(named, posted[0]["postId"])
        assert post["state"] == "PUBLISHED", post
        cards = [record["value"]["embed"]["external"] for record in pds.records.values()]
        assert [card["title"] for card in cards] == [f"http://127.0.0.1:{secret.port}/config",
                                                     f"{by_name(redirector.url)}/page"]
        status, posted = schedule(named, channel["id"], ("<p>A picture</p>", [
            {"id": "x", "path": f"http://127.0.0.1:{secret.port}/x.png"}]))
        assert status == 201, posted
        post = settled(named, posted[0]["postId"])
        assert post["state"] == "ERROR" and REFUSED_REDIRECT in post["error"], post
        assert_never_echoed(post, pds.records)
        assert len(secret.requests) == before
    finally:
        pds.close()


# --- publish: channels connected while allowed, published after the allow-list is gone --------------------

def contacts(platforms: Platforms) -> dict:
    """How often each fake was contacted: requests, or (the Nostr relay) connections."""
    return {provider: len(getattr(fake, "requests", ())) or getattr(fake, "connections", 0)
            for provider, fake in platforms.fakes.items()}


def test_publishing_to_a_channel_whose_address_is_no_longer_allowed_fails_at_once(start_server, secret, tmp_path):
    platforms = Platforms()
    try:
        data = tmp_path / "data"
        allowed = start_server(env={**platforms.env, **LOCAL_FAKES}, data_dir=data)
        channels = {}
        for provider in sorted(FAKES):
            status, channel = connect(allowed, provider, platforms.credentials(provider))
            assert status == 201, (provider, channel)
            channels[provider] = channel["id"]
        status, hook = api(allowed, "POST", "/public/v1/webhooks",
                           {"name": "events", "url": f"http://127.0.0.1:{secret.port}/events"})
        assert status == 201, hook
        allowed.stop()
        sent_before = contacts(platforms)
        secret_before = len(secret.requests)

        server = start_server(env={**platforms.env, "RUSTIZ_RETRY_BASE": "30", "API_LIMIT": "0"}, data_dir=data)
        posts = {}
        for provider, channel_id in channels.items():
            status, answer = schedule(server, channel_id, "<p>Hello</p>", settings=REQUIRED_SETTINGS.get(provider),
                                      provider=provider)
            assert status == 201, (provider, answer)
            posts[provider] = answer[0]["postId"]
        for provider, post_id in posts.items():  # at once: a refused address is not retried
            post = settled(server, post_id, timeout=10)
            assert post["state"] == "ERROR", (provider, post)
            assert post["error"].startswith(f"Failed on {DESCRIPTORS[provider].label}") and "a loopback address" in post["error"] \
                and HINT in post["error"], (provider, post["error"])
        status, answer = trigger(server, channels["lemmy"], "subreddits", {"word": "rust"})
        assert status == 400 and "a loopback address" in answer["message"] and HINT in answer["message"], answer
        assert contacts(platforms) == sent_before
        deadline = time.monotonic() + 10
        while not any(f'Webhook "events" (127.0.0.1:{secret.port}) did not take' in line and HINT in line
                      for line in server.stderr_lines):  # (given up at once: the guard's refusal is not retried)
            assert time.monotonic() < deadline, server.stderr_lines
            time.sleep(0.05)
        assert len(secret.requests) == secret_before
        assert_never_echoed(api(server, "GET", "/public/v1/notifications")[1], "\n".join(server.stderr_lines))
    finally:
        platforms.close()
