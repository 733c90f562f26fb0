"""Whop (`whop`) against a fake Whop: the consent URL (PKCE, nonce, Postiz's scopes) and the JSON token calls
of a public client, the refusals of a dead code or refresh token, the companies and experiences tools, then
through the built server: connecting, a forum post in Markdown with its title and a picture uploaded through
Whop's signed URL, thread parts as comments, an unknown experience refused in Whop's words, a refresh after a
401 and a refused refresh."""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.whop import FakeWhop
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import Channel
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused, pkce_pair
from support import (
    dict_rows, follow_consent, jpeg_file, oauth_channel, refresh_needed, run, scheduled, settled, settled_rows,
    trigger, uploaded, waiting_for_reconnect,
)

REDIRECT = "https://rustiz.example/integrations/social/whop"
provider = provider_for("whop")
fake = fake_fixture(FakeWhop)
SETTINGS = {"__type": "whop", "company": "biz_Bakery01", "experience": "exp_Recipes01"}


@pytest.fixture
def app(fake) -> AppCredentials:
    return provider.app({"WHOP_CLIENT_ID": fake.client_id})


def test_a_public_client_with_pkce_and_json_token_calls(fake, http, app):
    assert provider.app_variables == ("WHOP_CLIENT_ID",) and provider.app({}) is None
    verifier, challenge = pkce_pair()
    url = run(provider.begin(http, app, REDIRECT, "state-1", challenge, {}))
    query = {name: values[-1] for name, values in parse_qs(urlsplit(url).query).items()}
    assert query["scope"] == "openid profile email forum:post:create forum:read company:basic:read"
    assert query["code_challenge"] == challenge and query["nonce"]
    code = follow_consent(url)["code"]
    tokens = run(provider.exchange_code(http, app, code, REDIRECT, verifier, {}))
    assert tokens.access_token in fake.access_tokens and tokens.expires_in == 3600
    body = fake.requests_to("POST", "/oauth/token")[0].json()
    assert (body["client_id"], body["code_verifier"], body["redirect_uri"]) == (fake.client_id, verifier, REDIRECT)
    assert "client_secret" not in body
    with pytest.raises(TokenRefused, match="invalid_grant"):
        run(provider.exchange_code(http, app, code, REDIRECT, verifier, {}))
    renewed = run(provider.refresh_tokens(http, app, tokens.refresh_token))
    with pytest.raises(TokenRefused):  # rotated
        run(provider.refresh_tokens(http, app, tokens.refresh_token))
    assert renewed.refresh_token in fake.refresh_tokens


def test_the_companies_and_experiences_tools(fake, http, app):
    token = next(iter(fake.access_tokens), None) or "at_x"
    fake.access_tokens.add(token)
    channel = Channel("c", "Ada", {"accessToken": token}, None, http)
    assert run(provider.run_tool(channel, "companies", {})) == [{"id": "biz_Bakery01", "name": "Ada's Bakery"}]
    assert run(provider.run_tool(channel, "experiences", {"id": "biz_Bakery01"})) == [
        {"id": "exp_Recipes01", "name": "Recipes"}]
    assert run(provider.run_tool(channel, "experiences", {})) == []


@pytest.fixture
def whop():
    platform = FakeWhop()
    yield platform
    platform.close()


@pytest.fixture
def server(start_server_with_fakes, whop):
    return start_server_with_fakes(env={**whop.app_env(), "RUSTIZ_RETRY_BASE": "0.3", "RUSTIZ_WHOP_POLL_SECONDS": "0.05"})


def test_connect_then_a_forum_post_with_a_picture_and_a_comment(server, whop):
    channel_id = oauth_channel(server, "whop")
    [row] = dict_rows(server.database, "SELECT internal_id, name, profile FROM integration WHERE id = ?", channel_id)
    assert (row["internal_id"], row["name"], row["profile"]) == ("user_AdaBakes001", "Ada", "adabakes")
    post_id = scheduled(server, channel_id, ("<p>Rye, <strong>step by step</strong></p>",
                                             [uploaded(server, jpeg_file(), "jpg")]), "<p>Day two</p>",
                        settings={**SETTINGS, "title": "Rye bread"})
    rows = settled_rows(server, post_id)
    assert [part["state"] for part in rows] == ["PUBLISHED", "PUBLISHED"], rows
    first, second = whop.published
    assert (first["content"], first["title"], first["experience_id"]) == ("Rye, **step by step**", "Rye bread",
                                                                          "exp_Recipes01")
    [attachment] = first["attachments"]
    assert whop.files[attachment["id"]]["bytes"] == jpeg_file()
    assert second["parent_id"] == first["id"] and "title" not in second
    assert rows[0]["release_url"] == rows[1]["release_url"] == f"https://whop.com/experiences/exp_Recipes01/{first['id']}"


def test_an_unknown_experience_is_refused_in_whops_words(server, whop):
    channel_id = oauth_channel(server, "whop")
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", settings={**SETTINGS, "experience": "exp_Gone"}))
    assert done["state"] == "ERROR" and "Experience not found" in done["error"], done


def test_the_tools_through_integration_trigger(server, whop):
    channel_id = oauth_channel(server, "whop")
    status, answer = trigger(server, channel_id, "experiences", {"id": "biz_Bakery01"})
    assert status == 200 and answer["output"] == [{"id": "exp_Recipes01", "name": "Recipes"}], answer


def test_a_401_is_cured_by_a_refresh_and_a_dead_refresh_flags_the_channel(server, whop):
    channel_id = oauth_channel(server, "whop")
    whop.access_tokens.clear()
    done = settled(server, scheduled(server, channel_id, "<p>x</p>", settings=SETTINGS))
    assert done["state"] == "PUBLISHED", done
    whop.access_tokens.clear()
    whop.refresh_tokens.clear()
    waiting = waiting_for_reconnect(server, scheduled(server, channel_id, "<p>y</p>", settings=SETTINGS))
    assert "invalid_grant" in waiting["error"] and refresh_needed(server, channel_id)


def test_a_file_whop_cannot_process_fails_the_post_and_nothing_is_posted(server, whop):
    channel_id = oauth_channel(server, "whop")
    whop.processing_fails = True
    done = settled(server, scheduled(server, channel_id, ("<p>x</p>", [uploaded(server, jpeg_file(), "jpg")]),
                                     settings=SETTINGS))
    assert done["state"] == "ERROR" and 'upload_status is \\"failed\\"' in json.dumps(done["error"]), done
    assert whop.published == []


def test_a_refused_signed_upload_is_tried_again(server, whop):
    channel_id = oauth_channel(server, "whop")
    whop.fail_next("PUT", r"/storage/.+", 403, b"<Error><Code>AccessDenied</Code></Error>",
                   {"Content-Type": "application/xml"})
    done = settled(server, scheduled(server, channel_id, ("<p>x</p>", [uploaded(server, jpeg_file(), "jpg")]),
                                     settings=SETTINGS), timeout=60)
    assert done["state"] == "PUBLISHED" and len(whop.published) == 1, done
    assert len(whop.requests_to("POST", "/api/v1/files")) == 2  # the record made again on the next attempt
