"""Dribbble against a fake Dribbble (tests/fakes/dribbble.py): end to end through the built server (consent,
the code exchange with the app's id and secret, a shot with its title, description and team, Dribbble's
validation words, a dead token waiting for a reconnect, 429), and the provider directly for delete, the
teams tool and the error kinds."""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.dribbble import FakeDribbble
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import Channel, NeedsReconnect, OutgoingPost, Rejected, Release, Retryable
from support import (
    API, api, connect_database, connect_oauth, png_file, refresh_needed, refused_post, run, scheduled, settled,
    trigger, uploaded, waiting_for_reconnect,
)

provider = provider_for("dribbble")
SHOT = png_file(400, 300)


@pytest.fixture
def dribbble():
    fake = FakeDribbble()
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes, dribbble):
    return start_server_with_fakes(env={**dribbble.env, "DRIBBBLE_CLIENT_ID": dribbble.client_id,
                                        "DRIBBBLE_CLIENT_SECRET": dribbble.client_secret, "RUSTIZ_RETRY_BASE": "0.3"})


def test_connecting_exchanges_the_code_with_the_apps_id_and_secret(server, dribbble):
    status, body = api(server, "GET", f"{API}/social/dribbble")
    assert status == 200, body
    query = {name: values[-1] for name, values in parse_qs(urlsplit(body["url"]).query).items()}
    assert query["scope"] == "public upload" and "code_challenge" not in query
    back = connect_oauth(server, "dribbble")
    assert back["notice"] == "connected", back
    [exchange] = dribbble.requests_to("POST", "/oauth/token")
    assert exchange.form()["client_secret"] == dribbble.client_secret and "authorization" not in exchange.headers
    with connect_database(server.database) as db:
        token, refresh_token, expiry = db.execute("SELECT token, refresh_token, token_expiration FROM integration "
                                                  "WHERE id = ?", (back["channel"],)).fetchone()
    assert json.loads(token)["accessToken"] in dribbble.access_tokens and refresh_token in (None, "")
    status, row = api(server, "GET", f"{API}/integrations/{back['channel']}")
    assert (row["name"], row["providerIdentifier"]) == ("Ada Lovelace", "dribbble"), row


def test_a_refused_consent_connects_nothing(server, dribbble):
    assert connect_oauth(server, "dribbble", link="deny")["problem"] == "denied"
    assert dribbble.requests_to("POST", "/oauth/token") == []


def test_a_shot_goes_out_with_its_title_description_and_team(server, dribbble):
    channel_id = connect_oauth(server, "dribbble")["channel"]
    assert trigger(server, channel_id, "teams") == (200, {"output": [
        {"id": 4242, "name": "Rustiz Studio", "url": "https://dribbble.com/rustiz-studio"}]})
    picture = uploaded(server, SHOT)
    post = settled(server, scheduled(server, channel_id, "<p>A <strong>new</strong> logo</p>", images=[picture],
                                     settings={"title": "Logo", "team": "https://dribbble.com/rustiz-studio"}))
    assert post["state"] == "PUBLISHED", post["error"]
    [shot] = dribbble.published
    assert (shot["title"], shot["description"], shot["team_id"], shot["image"]) == ("Logo", "A new logo", "4242", SHOT)
    assert post["releaseURL"] == f"{dribbble.url}/shots/{post['releaseId']}"


def test_a_picture_of_the_wrong_size_fails_in_dribbbles_words(server, dribbble):
    channel_id = connect_oauth(server, "dribbble")["channel"]
    post = settled(server, scheduled(server, channel_id, "<p>x</p>", images=[uploaded(server, png_file(10, 10))],
                                     settings={"title": "Small"}))
    assert post["state"] == "ERROR" and "image must be exactly 400x300 or 800x600" in post["error"], post["error"]


def test_a_shot_needs_one_picture_and_a_title(server, dribbble):
    channel_id = connect_oauth(server, "dribbble")["channel"]
    assert "Requires one item" in refused_post(server, channel_id, "<p>x</p>", settings={"title": "T"})
    assert "Title is required" in refused_post(server, channel_id, "<p>x</p>", images=[uploaded(server, SHOT)],
                                               settings={"title": ""})


def test_a_revoked_token_waits_for_a_reconnect(server, dribbble):
    channel_id = connect_oauth(server, "dribbble")["channel"]
    dribbble.access_tokens.clear()
    post = waiting_for_reconnect(server, scheduled(server, channel_id, "<p>x</p>", images=[uploaded(server, SHOT)],
                                                   settings={"title": "T"}))
    assert "Bad credentials." in post["error"] and refresh_needed(server, channel_id)


def test_a_429_is_retried_and_the_shot_made_once(server, dribbble):
    channel_id = connect_oauth(server, "dribbble")["channel"]
    dribbble.fail_next("POST", "/v2/shots", 429, {"message": "API rate limit exceeded."}, {"Retry-After": "1"})
    post = settled(server, scheduled(server, channel_id, "<p>x</p>", images=[uploaded(server, SHOT)],
                                     settings={"title": "T"}), timeout=30)
    assert post["state"] == "PUBLISHED" and len(dribbble.published) == 1


# --- the provider object, against the fake ----------------------------------------------------------------

fake = fake_fixture(FakeDribbble)


@pytest.fixture
def channel(fake, http) -> Channel:
    return Channel("c", "Ada", fake.credentials(), None, http)


def shot(tmp_path, **settings) -> OutgoingPost:
    from rustiz_features.publishers.base import MediaFile
    path = tmp_path / "shot.png"
    path.write_bytes(SHOT)
    media = MediaFile("https://rustiz.example/uploads/shot.png", str(path), "image/png", "image", "", "shot.png")
    return OutgoingPost("p", "<p>x</p>", (media,), {"title": "T", **settings}, 0, "k", "2026-12-06T10:00:00Z")


def test_an_account_that_may_not_upload_is_rejected_not_sent_to_reconnect(fake, channel, tmp_path):
    fake.can_upload = False
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, shot(tmp_path), None))
    assert not isinstance(refused.value, NeedsReconnect) and "not allowed to upload" in refused.value.message


def test_a_team_the_account_is_not_in_is_rejected_before_the_shot(fake, channel, tmp_path):
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, shot(tmp_path, team="https://dribbble.com/elsewhere"), None))
    assert "teams" in refused.value.message and fake.published == []


def test_a_503_is_retryable(fake, channel, tmp_path):
    fake.fail_next("POST", "/v2/shots", 503, "<html>down</html>")
    with pytest.raises(Retryable):
        run(provider.publish(channel, shot(tmp_path), None))


def test_delete_removes_the_shot_and_a_gone_one_is_fine(fake, channel, tmp_path):
    release = run(provider.publish(channel, shot(tmp_path), None))
    counts = {item["label"]: item["data"][0]["total"] for item in run(provider.channel_analytics(channel, 7))}
    assert counts == {"Followers": "88", "Shots": "1"}
    run(provider.delete(channel, Release(release.id, release.url)))
    assert fake.shots == {}
    run(provider.delete(channel, Release(release.id, release.url)))
    assert [request.path for request in fake.requests_to("DELETE", r"/v2/shots/\d+")] == [f"/v2/shots/{release.id}"] * 2
