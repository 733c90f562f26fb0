"""POST /public/v1/integrations (rustiz): channels that need no developer app, added with credentials."""
from __future__ import annotations

import json
import os
from urllib.parse import quote

import pytest

from fakes.nostr import NSEC
from fakes.webhook import FakeWebhookReceiver
from platforms import FAKES
from support import PREFIXES, Database, api, auth, connect_database
from rustiz_features.catalogue import CREDENTIAL_SPECS, DESCRIPTORS, LEFT_OUT, PROVIDERS

NSEC_HEX = "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa"
CONNECTABLE = ", ".join(sorted(FAKES))  # the providers that connect with credentials, as refusals list them
# Connected by their own sign-in; and Postiz's providers rustiz has no publisher for (OAuth with a developer app).
SIGN_IN_ONLY = sorted(identifier for identifier, descriptor in DESCRIPTORS.items()
                      if descriptor.oauth and not descriptor.credentials)
NOT_YET = sorted(identifier for identifier, descriptor in PROVIDERS.items() if not descriptor.publisher)
URL_KEYS = [(provider, key.name) for provider in sorted(FAKES) for key in CREDENTIAL_SPECS[provider].keys
            if key.kind == "http_url"]  # (provider, a credential that is a web address)


@pytest.fixture
def server(start_server_with_fakes, platforms):
    return start_server_with_fakes(env=platforms.env)


def host(fake) -> str:
    return fake.url.removeprefix("http://")


# Where a secret is part of a credential (a webhook URL's token, a bot token's secret half), the part that
# must never show; elsewhere the credentials the connect form asks for as secret.
def webhook_token(credentials: dict) -> str:
    return credentials["webhookUrl"].rpartition("/")[2]


SECRET_PARTS = {"discord": webhook_token, "slack": webhook_token,
                "telegram": lambda credentials: credentials["botToken"].partition(":")[2]}


def secrets_of(platforms) -> list:
    """Every secret in the fakes' credentials: what must never be answered or logged."""
    secrets = []
    for provider in sorted(platforms.fakes):
        credentials = platforms.credentials(provider)
        if provider in SECRET_PARTS:
            secrets.append(SECRET_PARTS[provider](credentials))
        else:
            secrets += [credentials[key.name] for key in CREDENTIAL_SPECS[provider].keys
                        if key.input == "secret" and key.name in credentials]
    return secrets


def webhook_credentials(platforms, number: int) -> dict:
    """Credentials of another webhook channel on the same receiver (its own URL, so its own account)."""
    return {**platforms.credentials("webhook"), "url": f"{platforms.fakes['webhook'].url}/hook?n={number}"}


def add(server, payload, key=None, prefix="/public/v1") -> tuple:
    return api(server, "POST", f"{prefix}/integrations", payload, key=key)


def refused(server, payload) -> list | str:
    status, answer = add(server, payload)
    assert status == 400, answer
    assert answer["statusCode"] == 400 and answer["error"] == "Bad Request"
    return answer["message"]


@pytest.fixture
def logged_server(start_server_with_fakes, platforms):
    """A server that logs every request, to prove credentials never reach the log."""
    return start_server_with_fakes(env={**platforms.env, "RUSTIZ_ACCESS_LOG": "1"})


@pytest.mark.parametrize("provider", sorted(FAKES))
def test_each_provider_answers_201_with_the_account_its_platform_reports(server, platforms, provider):
    status, channel = add(server, {"provider": provider, "credentials": platforms.credentials(provider)})
    assert status == 201, channel
    assert list(channel) == ["id", "name", "identifier", "picture", "disabled", "profile"]
    assert channel["identifier"] == provider and channel["disabled"] is False
    assert (channel["name"], channel["profile"]) == platforms.fakes[provider].account()
    assert len(channel["id"]) == 25 and channel["id"].startswith("c")
    assert api(server, "GET", "/public/v1/integrations") == (200, [channel])


def test_both_prefixes_and_a_chosen_name(server, platforms):
    names = []
    for number, prefix in enumerate(PREFIXES):
        status, channel = add(server, {"provider": "webhook", "credentials": webhook_credentials(platforms, number),
                                       "name": f"  Blog {number}  "}, prefix=prefix)
        assert status == 201, channel
        names.append(channel["name"])
    assert names == ["Blog 0", "Blog 1"]


def test_credentials_are_stored_as_the_token_and_never_answered_or_logged(logged_server, platforms, backend):
    server = logged_server
    ids = []
    for provider in sorted(FAKES):
        status, channel = add(server, {"provider": provider, "credentials": platforms.credentials(provider)})
        assert status == 201
        ids.append(channel["id"])
    with connect_database(server.database) as db:
        tokens = dict(db.execute("SELECT provider_identifier, token FROM integration").fetchall())
    assert {provider: json.loads(token) for provider, token in tokens.items()} == {
        provider: platforms.credentials(provider) for provider in FAKES}
    if backend == "sqlite":  # credentials: the file is readable by its owner only
        assert oct(os.stat(server.database).st_mode & 0o777) == "0o600"
    answers = [api(server, "GET", path)[1] for path in (
        "/public/v1/integrations", "/public/v1/groups", *(f"/public/v1/integration-settings/{i}" for i in ids))]
    answers += [api(server, "DELETE", f"/public/v1/integrations/{i}")[1] for i in ids]
    everything = json.dumps(answers)
    assert '"token"' not in everything and "refreshToken" not in everything
    secrets = secrets_of(platforms)
    for secret in secrets:
        assert secret not in everything, secret
    server.stop()
    log = "\n".join(server.stderr_lines)
    assert "POST /public/v1/integrations" in log
    for secret in secrets:
        assert secret not in log, secret


def test_an_unknown_or_missing_provider_names_the_ones_rustiz_connects(server):
    assert refused(server, {"provider": "friendster", "credentials": {}}) == (
        f'provider "friendster" is not one rustiz can connect; use one of: {CONNECTABLE}')
    assert refused(server, {"credentials": {}}) == f"provider missing is not one rustiz can connect; use one of: {CONNECTABLE}"
    assert refused(server, {"provider": 7}) == f"provider 7 is not one rustiz can connect; use one of: {CONNECTABLE}"
    assert refused(server, ["not", "an", "object"]).startswith("provider missing")
    assert refused(server, {"provider": ["x"]}) == f'provider ["x"] is not one rustiz can connect; use one of: {CONNECTABLE}'
    assert refused(server, {"provider": {"a": 1}}).startswith('provider {"a": 1} is not one')


def test_providers_rustiz_does_not_publish_to_say_why(server):
    assert set(NOT_YET) == set(LEFT_OUT)
    for provider in NOT_YET:
        assert refused(server, {"provider": provider, "credentials": {}}) == (
            f"rustiz does not publish to {provider}: {LEFT_OUT[provider]}; "
            f"providers that connect with credentials: {CONNECTABLE}")


def test_oauth_providers_given_credentials_point_to_their_sign_in(server):
    assert SIGN_IN_ONLY
    for provider in SIGN_IN_ONLY:
        assert refused(server, {"provider": provider, "credentials": {}}) == (
            f"{provider} connects through its own sign-in, not with credentials: GET /public/v1/social/{provider} "
            "answers the URL of its consent page (the web app's Channels page has a button for it); providers "
            f"that connect with credentials: {CONNECTABLE}")


def test_missing_extra_and_ill_typed_credentials_are_listed_with_their_paths(server):
    assert refused(server, {"provider": "bluesky"}) == ["credentials must be an object"]
    assert refused(server, {"provider": "bluesky", "credentials": "secret"}) == ["credentials must be an object"]
    assert refused(server, {"provider": "bluesky", "credentials": {
        "service": "https://bsky.social", "identifier": 42, "password": "  ", "handle": "x", "token": "y"}}) == [
        "credentials.identifier must be a string",
        "credentials.password should not be empty",
        "credentials.handle should not exist (bluesky takes service, identifier, password)",
        "credentials.token should not exist (bluesky takes service, identifier, password)"]
    assert refused(server, {"provider": "discord", "credentials": {}}) == ["credentials.webhookUrl should not be empty"]
    assert refused(server, {"provider": "devto", "credentials": {"apiKey": None}}) == [
        "credentials.apiKey should not be empty"]


@pytest.mark.parametrize("url", ["discord.com/api/webhooks/1/x", "ftp://discord.com/x", "javascript:alert(1)", "",
                                 12, ["a"]])
def test_urls_must_be_http_or_https(server, url):
    expected = ("credentials.webhookUrl must be a string" if not isinstance(url, str)
                else "credentials.webhookUrl must be a URL address starting with http:// or https://")
    assert refused(server, {"provider": "slack", "credentials": {"webhookUrl": url}}) == [expected]


@pytest.mark.parametrize("url, problem", [
    ("https://", "has no host name"), ("https://:443/x", "has no host name"),
    ("https://exa mple.com/", "must not contain spaces or control characters"),
    ("https://example.com:99999/", "has a port that is not a number from 1 to 65535"),
    ("https://example.com:0/", "has a port that is not a number from 1 to 65535"),
    ("https://[::1/x", "has a malformed IPv6 address: write it in brackets, like https://[2001:db8::1]:8080/"),
    ("https://[zz]/", "has a malformed IPv6 address: write it in brackets, like https://[2001:db8::1]:8080/"),
    ("https://a..b/", "has a host name that cannot exist: 'a..b'"),
])
def test_malformed_urls_are_400s_that_say_what_is_wrong(server, platforms, url, problem):
    for provider, key in URL_KEYS:
        credentials = {**platforms.credentials(provider), key: url}
        assert refused(server, {"provider": provider, "credentials": credentials}) == [
            f"credentials.{key} {problem}"], provider
    relays = ["wss://relay.example.com", url.replace("https://", "wss://")]
    assert refused(server, {"provider": "nostr", "credentials": {"password": NSEC, "relays": relays}}) == [
        f"credentials.relays.1 {problem.replace('https://', 'wss://')}"]


def test_each_provider_s_url_key_is_checked(server, platforms):
    for provider, key in URL_KEYS:
        credentials = {**platforms.credentials(provider), key: "wss://not-http.example.com"}
        assert refused(server, {"provider": provider, "credentials": credentials}) == [
            f"credentials.{key} must be a URL address starting with http:// or https://"], provider


def test_nostr_keys_and_relays(server, platforms):
    def problems(credentials):
        return refused(server, {"provider": "nostr", "credentials": credentials})

    relays = ["wss://relay.example.com"]
    assert problems({"password": "ab" * 31, "relays": relays}) == [
        "credentials.password must be a private key: 64 hex digits or an nsec1... string"]
    assert problems({"password": NSEC[:-1] + "6", "relays": relays}) == [  # a typo breaks the bech32 checksum
        "credentials.password must be a private key: 64 hex digits or an nsec1... string"]
    assert problems({"password": "npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6",
                     "relays": relays}) == [
        "credentials.password must be a private key: 64 hex digits or an nsec1... string"]
    assert problems({"password": NSEC, "relays": "wss://relay.example.com"}) == ["credentials.relays must be an array"]
    assert problems({"password": NSEC, "relays": []}) == ["credentials.relays must contain at least 1 elements"]
    assert problems({"password": NSEC, "relays": ["wss://ok.example.com", "https://relay.example.com"]}) == [
        "credentials.relays.1 must be a URL address starting with ws:// or wss://"]
    assert problems({"password": NSEC}) == ["credentials.relays should not be empty"]
    # The same key in hex is the same account as its nsec form.
    relays = platforms.credentials("nostr")["relays"]
    assert add(server, {"provider": "nostr", "credentials": {"password": NSEC, "relays": relays}})[0] == 201
    status, answer = add(server, {"provider": "nostr", "credentials": {"password": NSEC_HEX.upper(), "relays": relays}})
    assert (status, answer["reconnected"]) == (200, True), answer


def test_telegram_token_and_chat(server, platforms):
    token = platforms.credentials("telegram")["botToken"]
    assert refused(server, {"provider": "telegram", "credentials": {"botToken": "not-a-token", "chatId": "mychannel"}}) == [
        "credentials.botToken must look like 123456789:AAE... (the token @BotFather gave you)",
        "credentials.chatId must be a numeric chat id (like -1001234567890) or a public @channelname"]
    assert refused(server, {"provider": "telegram", "credentials": {"botToken": token, "chatId": 1.5}}) == [
        "credentials.chatId must be a numeric chat id (like -1001234567890) or a public @channelname"]
    assert refused(server, {"provider": "telegram", "credentials": {"botToken": token, "chatId": "\u0663\u0664"}}) == [
        "credentials.chatId must be a numeric chat id (like -1001234567890) or a public @channelname"]  # not 0-9
    for chat in (10**30, -2**53, "9" * 5000):  # ids are numbers: at most 52 bits, as Telegram's
        assert refused(server, {"provider": "telegram", "credentials": {"botToken": token, "chatId": chat}}) == [
            "credentials.chatId must be a Telegram chat id: a whole number from -9007199254740991 to "
            "9007199254740991"], chat
    status, channel = add(server, {"provider": "telegram", "credentials": {"botToken": token, "chatId": -1001234567890}})
    assert (status, channel["name"], channel["profile"]) == (201, "Rustiz News", "rustiz_news")  # the chat by its id


def test_the_webhook_secret_is_optional_but_must_be_text(server):
    assert refused(server, {"provider": "webhook", "credentials": {"url": "https://a.example.com/", "secret": 5}}) == [
        "credentials.secret must be a string"]
    unsigned = FakeWebhookReceiver(secret=None)
    try:
        status, channel = add(server, {"provider": "webhook", "credentials": {"url": unsigned.url + "/hook"}})
        assert (status, channel["name"]) == (201, f"Webhook to {host(unsigned)}")
        assert "x-rustiz-signature" not in unsigned.requests[0].headers
    finally:
        unsigned.close()


def test_credentials_the_platform_refuses_are_a_400_in_its_words_and_nothing_is_saved(server, platforms):
    status, answer = add(server, {"provider": "devto", "credentials": {"apiKey": "revoked-key"}})
    assert status == 400 and answer["message"].startswith("Dev.to refused these credentials (HTTP 401): "), answer
    assert api(server, "GET", "/public/v1/integrations") == (200, [])


def test_an_unreachable_platform_is_a_502_and_nothing_is_saved(server):
    status, answer = add(server, {"provider": "mastodon", "credentials": {
        "instance": "http://127.0.0.1:9", "accessToken": "token"}})
    assert status == 502 and answer["error"] == "Bad Gateway"
    assert answer["message"].startswith("could not check these credentials with Mastodon, so nothing was saved: ")
    assert "Connection refused" in answer["message"]
    assert api(server, "GET", "/public/v1/integrations") == (200, [])


def test_name_and_customer_are_checked(server, platforms):
    credentials = platforms.credentials("devto")
    assert refused(server, {"provider": "devto", "credentials": credentials, "name": "", "customer": 3}) == [
        "name should not be empty", "customer must be a string"]
    assert refused(server, {"provider": "devto", "credentials": credentials, "name": "n" * 201}) == [
        "name must be shorter than or equal to 200 characters"]


def test_a_body_that_is_not_json_is_400_and_no_key_is_401(server, platforms):
    status, _, body = server.request("POST", "/public/v1/integrations", auth(server.key), b"{nope")
    assert status == 400 and json.loads(body)["message"].startswith("The request body is not valid JSON")
    status, _, body = server.request("POST", "/public/v1/integrations", {}, json.dumps(
        {"provider": "devto", "credentials": platforms.credentials("devto")}).encode())
    assert (status, json.loads(body)) == (401, {"msg": "No API Key found"})
    assert api(server, "GET", "/public/v1/integrations") == (200, [])


def test_the_same_account_again_reconnects_its_channel_until_it_is_deleted(server, platforms):
    credentials = platforms.credentials("bluesky")
    status, first = add(server, {"provider": "bluesky", "credentials": credentials})
    assert status == 201
    # Another name, and the account's DID instead of its handle: still the same account, so the same channel.
    did = platforms.fakes["bluesky"].did
    status, answer = add(server, {"provider": "bluesky", "name": "Again", "credentials": {**credentials,
                                                                                        "identifier": did}})
    assert (status, answer["id"], answer["name"], answer["reconnected"]) == (200, first["id"], "Again", True)
    assert len(api(server, "GET", "/public/v1/integrations")[1]) == 1
    assert api(server, "DELETE", f"/public/v1/integrations/{first['id']}")[0] == 200
    status, again = add(server, {"provider": "bluesky", "credentials": credentials})
    assert status == 201 and again["id"] != first["id"] and "reconnected" not in again


def test_organizations_are_isolated(server, platforms):
    db = Database(server)
    _, other_key = db.organization()
    credentials = platforms.credentials("discord")
    status, mine = add(server, {"provider": "discord", "credentials": credentials})
    assert status == 201
    status, theirs = add(server, {"provider": "discord", "credentials": credentials}, key=other_key)
    assert status == 201, theirs  # the same webhook may be a channel of two organizations
    assert api(server, "GET", "/public/v1/integrations")[1] == [mine]
    assert api(server, "GET", "/public/v1/integrations", key=other_key)[1] == [theirs]
    assert api(server, "GET", f"/public/v1/integration-settings/{theirs['id']}") == (
        404, {"msg": "Integration not found"})


def test_customer_by_new_name_existing_name_or_id(server, platforms):
    db = Database(server)
    other_org, other_key = db.organization()
    acme = db.customer("Acme")
    foreign = db.customer("Foreign", other_org)

    def channel_with(customer, api_key=None) -> dict:
        number = len(api(server, "GET", "/public/v1/integrations", key=api_key or server.key)[1])
        credentials = webhook_credentials(platforms, f"{number}-{quote(customer)}")
        status, channel = add(server, {"provider": "webhook", "credentials": credentials, "customer": customer},
                              key=api_key)
        assert status == 201, channel
        return channel

    assert channel_with(acme)["customer"] == {"id": acme, "name": "Acme"}
    assert channel_with("  Acme ")["customer"] == {"id": acme, "name": "Acme"}
    globex = channel_with("Globex")["customer"]
    assert globex["name"] == "Globex" and globex["id"] != acme
    assert channel_with("Globex")["customer"] == globex
    # Another organization's group id is just a name here: a new group of ours, theirs untouched.
    mine = channel_with(foreign)["customer"]
    assert mine["id"] != foreign and mine["name"] == foreign
    assert api(server, "GET", "/public/v1/groups")[1] == [
        {"id": acme, "name": "Acme"}, globex, mine]
    assert api(server, "GET", "/public/v1/groups", key=other_key)[1] == [{"id": foreign, "name": "Foreign"}]
    listed = api(server, "GET", f"/public/v1/integrations?group={globex['id']}")[1]
    assert [channel["customer"] for channel in listed] == [globex, globex]


def test_lone_surrogates_are_refused_not_a_500(server):
    body = b'{"provider": "bluesky", "name": "a\\ud800", "credentials": {"service": "https://x\\udfff.example", ' \
           b'"identifier": "\\ud800", "password": "p"}}'
    status, _, answer = server.request("POST", "/public/v1/integrations", auth(server.key), body)
    assert status == 400
    # Request.json refuses them for every route, before any field is looked at.
    assert "lone UTF-16 surrogate" in json.loads(answer)["message"]
