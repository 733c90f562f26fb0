"""GET /public/v1/providers (rustiz): each provider's descriptor, the one source the web app reads; and the
server counting and checking with the very rules and fields that route describes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.mastodon import FakeMastodon
from support import API, PREFIXES, Database, api, channel_post, connect, post_body
from test_mcp_transport import post as mcp_post, rpc
from rustiz_features.catalogue import DESCRIPTORS, POSTIZ_COUNTING_RULES, PROVIDERS
from rustiz_features.publishers import PROVIDER_MODULES, provider_for
from rustiz_features.text import COUNTING_RULES

CONNECTABLE = {identifier for identifier, descriptor in DESCRIPTORS.items() if descriptor.credentials}
OAUTH = {identifier for identifier, descriptor in DESCRIPTORS.items() if descriptor.oauth}
RUSTIZ_OWN = [identifier for identifier, descriptor in DESCRIPTORS.items() if not descriptor.postiz]  # (webhook)
PUBLISHERS_DIR = Path(__file__).resolve().parent.parent / "rustiz_features" / "publishers"
SHARED_HELPERS = {"__init__", "base", "markup", "articles", "secp256k1", "websocket", "oauth", "linkedin_shared", "meta",
                  "instagram_shared", "google"}
SHARED_HELPERS |= {"mastodon_shared"}  # (issue 28, fedi: what mastodon, pixelfed and friendica share)


def providers(server) -> list:
    status, answer = api(server, "GET", f"{API}/providers")
    assert status == 200, answer
    return answer


def scheduled(channel_id: str, *parts: str) -> dict:
    """A POST /posts body queued for 2030 (so nothing is published), with the provider's default settings."""
    return post_body(channel_post(channel_id, *parts), type="schedule", date="2030-01-01T10:00:00.000Z")


# --- the route ------------------------------------------------------------------------------------

def test_every_provider_is_described_with_what_the_connect_form_and_the_counters_need(server):
    answer = providers(server)
    assert [provider["identifier"] for provider in answer] == [*PROVIDERS, *RUSTIZ_OWN]
    assert {provider["identifier"] for provider in answer if provider["connectable"]} == CONNECTABLE
    assert {provider["identifier"] for provider in answer if provider["oauth"]} == OAUTH
    for provider in answer:
        assert set(provider) == {"identifier", "name", "connectable", "oauth", "guide", "credentials", "counting",
                                 "maxLength", "limits"}, provider
        assert provider["name"] and "\n" not in provider["name"]
        assert provider["counting"] in COUNTING_RULES
        if not provider["connectable"]:
            assert (provider["guide"], provider["credentials"]) == ("", []), provider
            continue
        assert provider["guide"] and provider["credentials"], provider
        for field in provider["credentials"]:
            assert set(field) == {"key", "label", "kind", "placeholder", "help", "required"}
            assert field["key"] and field["label"] and field["kind"] in ("url", "text", "secret", "list")
    by_id = {provider["identifier"]: provider for provider in answer}
    assert (by_id["mastodon"]["counting"], by_id["mastodon"]["maxLength"], by_id["mastodon"]["limits"]) == (
        "mastodon", 500, {"maxMedia": 4, "charactersReservedPerUrl": 23})
    assert [(by_id[name]["counting"], by_id[name]["maxLength"]) for name in ("x", "bluesky", "telegram", "discord")] \
        == [("x-weighted", 280), ("graphemes", 300), ("telegram-html", 4096), ("characters", 1980)]
    assert by_id["listmonk"]["name"] == "Listmonk" and by_id["instagram"]["name"] == "Instagram (Facebook Business)"
    assert [field["key"] for field in by_id["nostr"]["credentials"]] == ["password", "relays"]
    assert by_id["nostr"]["credentials"][1]["kind"] == "list"
    assert [(field["key"], field["required"]) for field in by_id["webhook"]["credentials"]] == [
        ("url", True), ("secret", False)]


def test_the_route_needs_a_key_and_answers_the_same_bytes_under_both_prefixes(server):
    assert server.request("GET", "/public/v1/providers")[::2] == (401, b'{"msg":"No API Key found"}')
    bodies = {server.request("GET", prefix + "/providers", {"Authorization": server.key})[2] for prefix in PREFIXES}
    assert len(bodies) == 1 and json.loads(bodies.pop()) == providers(server)


# --- the server checks what the route describes --------------------------------------------------

def test_post_integrations_takes_exactly_the_credential_fields_the_route_describes(server):
    for provider in providers(server):
        if not provider["connectable"]:
            continue
        keys = [field["key"] for field in provider["credentials"]]
        required = [field["key"] for field in provider["credentials"] if field["required"]]
        status, answer = api(server, "POST", f"{API}/integrations",
                             {"provider": provider["identifier"], "credentials": {"unknownKey": "x"}})
        assert status == 400, answer
        assert answer["message"] == [f"credentials.{key} should not be empty" for key in required] + [
            f"credentials.unknownKey should not exist ({provider['identifier']} takes {', '.join(keys)})"]


@pytest.fixture
def mastodon():
    platform = FakeMastodon()
    yield platform
    platform.close()


def test_a_mastodon_post_counts_each_link_as_23_at_exactly_the_limit_and_one_over(start_server_with_fakes, mastodon):
    server = start_server_with_fakes(env=mastodon.env)
    status, channel = connect(server, "mastodon", mastodon.credentials())
    assert status == 201, channel
    unlimited = Database(server).channel("Old Mastodon channel", "mastodon")  # no instance limits stored
    descriptor = {provider["identifier"]: provider for provider in providers(server)}["mastodon"]
    per_link, limit = descriptor["limits"]["charactersReservedPerUrl"], descriptor["maxLength"]
    link = "https://example.com/" + "a-long-path/" * 40  # 500 characters long, 23 as Mastodon counts it
    words = "w" * (limit - 3 * (per_link + 1))
    exactly = f"<p>{words} {link} {link} {link}</p>"
    for channel_id in (channel["id"], unlimited):
        status, answer = api(server, "POST", f"{API}/posts", scheduled(channel_id, exactly))
        assert status == 201, answer
        status, answer = api(server, "POST", f"{API}/posts",
                             scheduled(channel_id, exactly.replace("</p>", "!</p>")))
        assert (status, answer["message"]) == (400, f"the post is {limit + 1} characters long as Mastodon counts "
                                                    f"them (each link counts as {per_link}), and this instance allows "
                                                    f"{limit}"), answer


def test_a_mastodon_channel_s_settings_give_its_instance_s_own_limit(start_server_with_fakes, mastodon):
    mastodon.max_characters = 5000
    server = start_server_with_fakes(env=mastodon.env)
    status, channel = connect(server, "mastodon", mastodon.credentials())
    assert status == 201, channel
    status, answer = api(server, "GET", f"{API}/integration-settings/{channel['id']}")
    assert (status, answer["output"]["maxLength"]) == (200, 5000)


def test_bluesky_counts_an_emoji_with_a_skin_tone_once(server):
    channel = Database(server).channel("Sky", "bluesky")
    status, answer = api(server, "POST", f"{API}/posts", scheduled(channel, "<p>" + "👍🏽" * 300 + "</p>"))
    assert status == 201, answer  # 600 code points, 300 characters as Bluesky (and the composer) count them
    status, answer = api(server, "POST", f"{API}/posts", scheduled(channel, "<p>" + "👍🏽" * 301 + "</p>"))
    assert (status, answer["message"]) == (400, "Bluesky allows 300 characters (graphemes) per post; the post has "
                                                "301: shorten it or split it into thread parts"), answer


def test_telegram_counts_the_text_it_receives_not_the_stored_html(server):
    channel = Database(server).channel("News", "telegram")
    status, answer = api(server, "POST", f"{API}/posts", scheduled(channel, "<p>" + "&amp;" * 4096 + "</p>"))
    assert status == 201, answer  # 4,096 "&", stored as 20,480 characters of "&amp;"
    status, answer = api(server, "POST", f"{API}/posts", scheduled(channel, "<p>" + "&amp;" * 4097 + "</p>"))
    assert (status, answer["message"]) == (400, "the post is 4097 characters long as Telegram counts them (an emoji "
                                                "is 2), and Telegram allows 4,096 in a message"), answer


def test_the_mcp_list_of_platforms_is_postiz_s_providers(server):
    status, _, answer = mcp_post(server, rpc("tools/list"))
    assert status == 200, answer
    schema = next(tool for tool in answer["result"]["tools"] if tool["name"] == "integrationSchema")["inputSchema"]
    assert schema["properties"]["platform"]["description"] == f"platform identifier ({', '.join(PROVIDERS)})"


# --- the registry and the descriptors agree (no server needed) -----------------------------------

def test_each_publisher_module_is_named_by_the_descriptor_of_the_provider_it_publishes():
    modules = {path.stem for path in PUBLISHERS_DIR.glob("*.py")} - SHARED_HELPERS
    assert sorted(PROVIDER_MODULES.values()) == sorted(modules)
    assert PROVIDER_MODULES == {identifier: descriptor.publisher for identifier, descriptor in DESCRIPTORS.items()
                                if descriptor.publisher}
    for identifier, module in PROVIDER_MODULES.items():
        publisher = provider_for(identifier)
        assert publisher.identifier == identifier and publisher.label == DESCRIPTORS[identifier].label
        assert type(publisher).__module__ == f"rustiz_features.publishers.{module}"


def test_a_provider_has_a_publisher_exactly_when_it_connects_with_credentials_or_oauth():
    for identifier, descriptor in DESCRIPTORS.items():
        assert (descriptor.publisher is not None) == (descriptor.credentials is not None or descriptor.oauth), identifier
        assert descriptor.counting in COUNTING_RULES, identifier
        # A platform's own counting rule is measured by its publisher: a provider without one would go unchecked.
        assert descriptor.counting in POSTIZ_COUNTING_RULES or descriptor.publisher, identifier
    assert list(DESCRIPTORS) == [*PROVIDERS, *RUSTIZ_OWN]  # rustiz's own after Postiz's, in the catalogue too
