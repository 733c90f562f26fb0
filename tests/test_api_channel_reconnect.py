"""Reconnecting a channel that was connected with pasted credentials, for every provider that takes them:
POST /integrations with an account that is already a channel, and PUT /integrations/:id with "credentials".
The channel keeps its id and posts, the platform checks the credentials first, and the posts that waited
for the channel go out at once."""
from __future__ import annotations

import json
import time
from typing import Optional

import pytest

from fakes import Extras
from fakes.nostr import OTHER_KEY as OTHER_NOSTR_KEY
from platforms import FAKES, REQUIRED_SETTINGS, fake_module
from support import API, Database, api, connected, get_post, scheduled, waiting_for_reconnect
from rustiz_features.catalogue import CREDENTIAL_SPECS

# How each platform behaves when credentials change: its fake's RECONNECT (tests/fakes/__init__.py).
SCENARIOS = {provider: fake_module(provider).RECONNECT for provider in FAKES}
# The URL is the account: a new one replaces the channel's.
WEBHOOKS = {provider for provider in FAKES if CREDENTIAL_SPECS[provider].account_is_credentials}


@pytest.fixture
def extras():
    started = Extras()
    yield started
    for fake in started.fakes:
        fake.close()


@pytest.fixture
def platform(request):
    """A fresh fake of the provider the test is parametrized with (tests change its accounts)."""
    fake = FAKES[request.param]()
    yield request.param, fake
    fake.close()


@pytest.fixture
def server(platform, start_server_with_fakes):
    _, fake = platform
    return start_server_with_fakes(env={**(fake.env or {}), "RUSTIZ_RETRY_BASE": "0.2", "API_LIMIT": "0"})


def each_provider(test):
    return pytest.mark.parametrize("platform", sorted(SCENARIOS), indirect=True)(test)


def stored(server, channel_id: str) -> dict:
    """What is kept of a channel, secrets included, to prove nothing changed."""
    db = Database(server)
    row = db.row("SELECT token, internal_id, name, refresh_needed, session FROM integration WHERE id = ?", channel_id)
    return dict(zip(("token", "internal_id", "name", "refresh_needed", "session"), row))


def flag(server, channel_id: str) -> None:
    Database(server).execute("UPDATE integration SET refresh_needed = 1 WHERE id = ?", channel_id)


def waiting_post(server, provider: str, channel_id: str) -> str:
    """A post on a flagged channel, once it waits for the channel to be reconnected."""
    post_id = scheduled(server, channel_id, f"<p>Waiting for {provider}</p>", provider=provider,
                        settings=REQUIRED_SETTINGS.get(provider))
    waiting_for_reconnect(server, post_id)
    return post_id


def published_soon(server, post_id: str) -> dict:
    """The post published within 15 s: long before its next look (RECONNECT_RECHECK_SECONDS, 300 s)."""
    deadline = time.monotonic() + 15
    while (post := get_post(server, post_id))["state"] != "PUBLISHED":
        assert time.monotonic() < deadline and post["state"] in ("QUEUE", "PUBLISHING"), post
        time.sleep(0.1)
    return post


def put_credentials(server, channel_id: str, credentials, key: Optional[str] = None, **fields) -> tuple:
    return api(server, "PUT", f"{API}/integrations/{channel_id}", {"credentials": credentials, **fields}, key=key)


def test_every_provider_that_takes_pasted_credentials_has_a_scenario(server_any):
    status, providers = api(server_any, "GET", f"{API}/providers")
    assert status == 200
    assert {p["identifier"] for p in providers if p["connectable"]} == set(SCENARIOS)


@pytest.fixture
def server_any(start_server):
    return start_server()


@each_provider
def test_connecting_the_same_account_again_reconnects_its_channel_and_releases_its_waiting_posts(server, platform,
                                                                                                extras):
    provider, fake = platform
    channel = connected(server, provider, fake.credentials())
    flag(server, channel["id"])
    post_id = waiting_post(server, provider, channel["id"])
    status, answer = api(server, "POST", f"{API}/integrations",
                         {"provider": provider, "credentials": SCENARIOS[provider].renew(fake, extras)})
    assert (status, answer["id"], answer["reconnected"]) == (200, channel["id"], True), answer
    assert published_soon(server, post_id)["integration"]["id"] == channel["id"]
    assert [c["id"] for c in api(server, "GET", f"{API}/integrations")[1]] == [channel["id"]]
    assert stored(server, channel["id"])["refresh_needed"] == 0


@each_provider
def test_new_credentials_put_on_a_flagged_channel_keep_it_and_its_waiting_post_goes_out(server, platform, extras):
    provider, fake = platform
    channel = connected(server, provider, fake.credentials(), name="Our channel")
    api(server, "PUT", f"{API}/integrations/{channel['id']}", {"postingTimes": [{"time": 540}]})
    flag(server, channel["id"])
    post_id = waiting_post(server, provider, channel["id"])
    status, row = put_credentials(server, channel["id"], SCENARIOS[provider].renew(fake, extras))
    assert status == 200, row
    assert (row["id"], row["refreshNeeded"], row["postingTimes"]) == (channel["id"], False, '[{"time":540}]')
    assert published_soon(server, post_id)["state"] == "PUBLISHED"
    assert fake.published


@each_provider
def test_credentials_the_platform_refuses_change_nothing_and_quote_it(server, platform):
    provider, fake = platform
    channel = connected(server, provider, fake.credentials())
    flag(server, channel["id"])
    before = stored(server, channel["id"])
    status, answer = put_credentials(server, channel["id"], SCENARIOS[provider].wrong(fake), name="Renamed")
    assert status == 400, answer
    assert " refused these credentials" in answer["message"] and SCENARIOS[provider].says in answer["message"], answer
    assert "<strong>" not in answer["message"]  # (WordPress's HTML is the platform's raw body: not echoed)
    assert stored(server, channel["id"]) == before
    status, answer = api(server, "POST", f"{API}/integrations",
                         {"provider": provider, "credentials": SCENARIOS[provider].wrong(fake)})
    assert status == 400 and SCENARIOS[provider].says in answer["message"], answer
    assert stored(server, channel["id"]) == before


@pytest.mark.parametrize("platform", sorted(set(SCENARIOS) - WEBHOOKS), indirect=True)
def test_another_account_s_credentials_are_refused_for_a_channel(server, platform, extras):
    provider, fake = platform
    channel = connected(server, provider, fake.credentials())
    before = stored(server, channel["id"])
    status, answer = put_credentials(server, channel["id"], SCENARIOS[provider].other(fake, extras))
    assert status == 409, answer
    assert answer["message"].startswith("credentials: these are the credentials of another "), answer
    assert "connect this account as a new channel" in answer["message"]
    assert stored(server, channel["id"]) == before


@pytest.mark.parametrize("platform", sorted(WEBHOOKS), indirect=True)
def test_a_new_webhook_replaces_a_webhook_channel_s_unless_it_is_another_channel(server, platform, extras):
    provider, fake = platform
    channel = connected(server, provider, fake.credentials())
    post_id = scheduled(server, channel["id"], "<p>Kept</p>", provider=provider, type="schedule",
                        date="2099-01-01T10:00:00.000Z", settings=REQUIRED_SETTINGS.get(provider))
    new = SCENARIOS[provider].other(fake, extras)
    status, row = put_credentials(server, channel["id"], new)
    assert (status, row["id"]) == (200, channel["id"]), row
    assert get_post(server, post_id)["integration"]["id"] == channel["id"]
    # That webhook is now this channel's: another channel cannot take it too.
    status, other = api(server, "POST", f"{API}/integrations", {"provider": provider, "credentials": new})
    assert (status, other["id"], other["reconnected"]) == (200, channel["id"], True), other
    second = Database(server).channel("Second", provider)
    status, answer = put_credentials(server, second, new)
    assert status == 409 and "is already the channel" in answer["message"], answer


@each_provider
def test_another_organization_s_channel_is_not_found_and_its_account_makes_a_new_channel(server, platform):
    provider, fake = platform
    channel = connected(server, provider, fake.credentials())
    before = stored(server, channel["id"])
    _, other_key = Database(server).organization()
    status, answer = put_credentials(server, channel["id"], fake.credentials(), key=other_key)
    assert (status, answer["message"]) == (404, "Integration not found"), answer
    assert stored(server, channel["id"]) == before
    status, theirs = api(server, "POST", f"{API}/integrations", {"provider": provider,
                                                                 "credentials": fake.credentials()}, key=other_key)
    assert status == 201 and theirs["id"] != channel["id"] and "reconnected" not in theirs, theirs


def test_an_oauth_channel_s_credentials_cannot_be_pasted(server_any):
    db = Database(server_any)
    channel_id = db.channel("Ada on X", "x")
    before = db.row("SELECT token, updated_at FROM integration WHERE id = ?", channel_id)
    status, answer = put_credentials(server_any, channel_id, {"accessToken": "pasted"})
    assert status == 400, answer
    assert answer["message"] == (
        "credentials: a X channel connects through X's own sign-in, so no credentials can be pasted into it; "
        f"reconnect it with its sign-in instead: GET /public/v1/social/x?refresh={channel_id} (the Reconnect "
        "button on the web app's Channels page)")
    assert db.row("SELECT token, updated_at FROM integration WHERE id = ?", channel_id) == before


def test_oversized_and_garbage_credentials_are_400s_naming_the_field(server_any):
    db = Database(server_any)
    channel_id = db.channel("Blog", "devto")
    cases = [
        ("not an object", ["credentials must be an object"]),
        (None, ["credentials must be an object"]),
        ([{"apiKey": "x"}], ["credentials must be an object"]),
        ({}, ["credentials.apiKey should not be empty"]),
        ({"apiKey": 12}, ["credentials.apiKey must be a string"]),
        ({"apiKey": "k" * 5000}, ["credentials.apiKey must be shorter than or equal to 4096 characters"]),
        ({"apiKey": "k", **{f"extra{n}": n for n in range(1000)}}, [
            f"credentials.extra{n} should not exist (devto takes apiKey)" for n in range(5)]),
    ]
    for credentials, message in cases:
        status, answer = put_credentials(server_any, channel_id, credentials)
        assert (status, answer["message"]) == (400, message), credentials
    status, answer = put_credentials(server_any, channel_id, {"apiKey": "k"}, disabled="yes")
    assert (status, answer["message"]) == (400, ["disabled must be a boolean value"])
    relays = {"password": OTHER_NOSTR_KEY, "relays": [f"wss://relay{n}.example.com" for n in range(21)]}
    status, answer = api(server_any, "POST", f"{API}/integrations", {"provider": "nostr", "credentials": relays})
    assert (status, answer["message"]) == (400, ["credentials.relays must contain no more than 20 elements"])
    status, _, body = server_any.request("PUT", f"{API}/integrations/{channel_id}",
                                         {"Authorization": server_any.key, "Content-Type": "application/json"},
                                         b'{"credentials": {"apiKey": ')
    assert status == 400 and json.loads(body)["message"].startswith("The request body is not valid JSON")
    assert db.row("SELECT name, updated_at FROM integration WHERE id = ?", channel_id) == (
        "Blog", db.row("SELECT created_at FROM integration WHERE id = ?", channel_id)[0])
