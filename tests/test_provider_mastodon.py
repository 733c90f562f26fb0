"""The mastodon provider against a fake instance, through the real server: connecting with an access
token, the instance's own limits, statuses with media and threads, and every error rule."""
from __future__ import annotations

import datetime


from conftest import provider_fixtures
from fakes.mastodon import FakeMastodon
from support import waiting_for_reconnect, connect, jpeg_file, notifications, png_file, refresh_needed, schedule, scheduled, settled, uploaded

fake, server, channel = provider_fixtures("mastodon", FakeMastodon)


def test_connecting_reads_the_account_and_the_instances_limits(server, fake):
    fake.max_characters = 5000
    status, channel = connect(server, "mastodon", fake.credentials())
    assert status == 201, channel
    assert (channel["name"], channel["profile"], channel["picture"]) == (
        "Ada Lovelace", "ada", f"{fake.url}/avatars/ada.png")
    assert fake.requests_to("GET", "/api/v1/accounts/verify_credentials")[0].headers["authorization"] == \
        f"Bearer {fake.token}"
    # The instance allows 5,000 characters: a 600-character status is fine, 5,001 is not.
    assert scheduled(server, channel["id"], "<p>" + "a" * 600 + "</p>")
    status, body = schedule(server, channel["id"], "<p>" + "a" * 5001 + "</p>")
    assert status == 400 and "5001 characters" in body["message"] and "allows 5000" in body["message"], body
    # The same account again is the same channel.
    status, body = connect(server, "mastodon", fake.credentials())
    assert (status, body["reconnected"]) == (200, True), body


def test_a_server_without_api_v2_instance_gives_its_limits_from_api_v1(server, fake):
    fake.max_characters = 5000
    fake.fail_next("GET", "/api/v2/instance", 404, {"error": "Record not found"})
    status, channel = connect(server, "mastodon", fake.credentials())
    assert status == 201, channel
    status, body = schedule(server, channel["id"], "<p>" + "a" * 5001 + "</p>")
    assert status == 400 and "allows 5000" in body["message"], body


def test_a_wrong_token_is_refused_at_connect_with_the_instances_reason(server, fake):
    status, body = connect(server, "mastodon", {**fake.credentials(), "accessToken": "revoked"})
    assert status == 400
    assert body["message"].startswith("Mastodon refused these credentials (HTTP 401):")
    assert "The access token is invalid" in body["message"]


def test_a_text_post_is_a_public_status_sent_with_its_idempotency_key(server, fake, channel):
    post = settled(server, scheduled(server, channel["id"], "<p>Hello <strong>fediverse</strong> &amp; friends</p>"),
                   stop_at_error=True)
    assert post["state"] == "PUBLISHED", post
    [status] = fake.published
    assert status["content"] == "Hello fediverse & friends" and status["visibility"] == "public"
    assert (post["releaseId"], post["releaseURL"]) == (status["id"], f"{fake.url}/@ada/{status['id']}")
    [request] = fake.requests_to("POST", "/api/v1/statuses")
    assert request.headers["idempotency-key"]
    assert any(post["releaseURL"] in text for text in notifications(server))


def test_media_is_uploaded_with_its_alt_text_and_processing_is_awaited(server, fake, channel):
    fake.processing_polls = 2  # the instance answers 202, then 206 twice, then 200
    image = uploaded(server, png_file())
    photo = uploaded(server, jpeg_file(), "photo.jpg")
    post = settled(server, scheduled(server, channel["id"], ("<p>Two pictures</p>", [
        {**image, "alt": "A one-pixel PNG"}, photo])), stop_at_error=True)
    assert post["state"] == "PUBLISHED", post
    [status] = fake.published
    assert [attachment["description"] for attachment in status["media_attachments"]] == ["A one-pixel PNG", ""]
    uploads = fake.requests_to("POST", "/api/v2/media")
    assert [request.multipart()["file"][1] for request in uploads] == [png_file(), jpeg_file()]
    assert len(fake.requests_to("GET", r"/api/v1/media/\d+")) == 6  # 2 × (206, 206, 200)


def test_thread_parts_are_replies_to_the_part_before(server, fake, channel):
    post = settled(server, scheduled(server, channel["id"], "<p>1/3</p>", "<p>2/3</p>", "<p>3/3</p>"),
                   stop_at_error=True)
    assert [part["state"] for part in [post, *post["thread"]]] == ["PUBLISHED"] * 3, post
    first, second, third = fake.published
    assert [first["in_reply_to_id"], second["in_reply_to_id"], third["in_reply_to_id"]] == [
        None, first["id"], second["id"]]
    assert [part["releaseId"] for part in post["thread"]] == [second["id"], third["id"]]


def test_a_429_is_retried_when_the_rate_limit_resets_and_published_once(server, fake, channel):
    reset = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)).isoformat()
    fake.fail_next("POST", "/api/v1/statuses", 429, {"error": "Too many requests"},
                   {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset})
    post = settled(server, scheduled(server, channel["id"], "<p>Patience</p>"), stop_at_error=True)
    assert post["state"] == "PUBLISHED", post
    assert len(fake.published) == 1 and len(fake.requests_to("POST", "/api/v1/statuses")) == 2


def test_a_lost_answer_is_sent_again_and_the_idempotency_key_keeps_it_one_status(server, fake, channel):
    fake.drop_next("POST", "/api/v1/statuses", after_handling=True)  # published, but the answer never came
    post = settled(server, scheduled(server, channel["id"], "<p>Exactly once</p>"), stop_at_error=True)
    assert post["state"] == "PUBLISHED", post
    first, second = fake.requests_to("POST", "/api/v1/statuses")
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"]
    assert len(fake.published) == 1 and post["releaseId"] == fake.published[0]["id"]


def test_server_errors_are_retried(server, fake, channel):
    fake.fail_next("POST", "/api/v2/media", 503, "<html>Service Unavailable</html>")
    fake.fail_next("POST", "/api/v1/statuses", 500, {"error": "Internal server error"})
    post = settled(server,
                   scheduled(server, channel["id"], ("<p>After the outage</p>", [uploaded(server, png_file())])),
                   stop_at_error=True)
    assert post["state"] == "PUBLISHED", post
    assert len(fake.published) == 1 and len(fake.published[0]["media_attachments"]) == 1


def test_a_revoked_token_flags_the_channel_for_reconnecting_and_the_post_waits(server, fake, channel):
    fake.token = "rotated"
    post = waiting_for_reconnect(server, scheduled(server, channel["id"], "<p>Hello</p>"))
    assert "(Failed on Mastodon (HTTP 401)" in post["error"] and "The access token is invalid" in post["error"]
    assert refresh_needed(server, channel["id"])
    assert fake.published == []


def test_a_validation_failure_fails_the_post_with_the_instances_words(server, fake, channel):
    fake.fail_next("POST", "/api/v1/statuses", 422, {"error": "Validation failed: Text contains a forbidden word"})
    post = settled(server, scheduled(server, channel["id"], "<p>Forbidden</p>"), stop_at_error=True)
    assert post["state"] == "ERROR"
    assert post["error"].startswith("Failed on Mastodon (HTTP 422): "
                                    "Validation failed: Text contains a forbidden word")
    assert len(fake.requests_to("POST", "/api/v1/statuses")) == 1  # not retried
    assert not refresh_needed(server, channel["id"])


def test_the_instances_limits_are_checked_before_a_post_is_accepted(server, fake, channel):
    link = "https://example.com/" + "x" * 300
    assert scheduled(server, channel["id"], f"<p>{'a' * 470} {link}</p>")  # 470 + 1 + 23 = 494: fits
    # Mastodon counts user-perceived characters: a thumbs-up with a skin tone, or a flag, is one.
    status, body = schedule(server, channel["id"], "<p>" + "👍🏽🇫🇷" * 250 + "</p>")
    assert status == 201, body
    status, body = schedule(server, channel["id"], "<p>" + "👍🏽🇫🇷" * 250 + "!</p>")
    assert status == 400 and body["message"].startswith("the post is 501 characters long"), body
    status, body = schedule(server, channel["id"], "<p>ok</p>", f"<p>{'a' * 480} {link}</p>")
    assert (status, body["message"]) == (400, "thread part 2 is 504 characters long as Mastodon counts them "
                                              "(each link counts as 23), and this instance allows 500"), body
    image = uploaded(server, png_file())
    status, body = schedule(server, channel["id"], ("<p>Five</p>", [image] * 5))
    assert (status, body["message"]) == (400, "the post has 5 images or videos, and this instance allows 4 "
                                              "per status"), body
