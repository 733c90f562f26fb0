"""TikTok end to end, with the built server and a fake TikTok: the connect flow (creator options kept as the
channel's limits), scheduled videos sent in ordered chunks at their time and polled to PUBLISH_COMPLETE,
inbox drafts, photo posts the fake pulls from rustiz's own upload URLs, refusals at scheduling (a privacy
level the creator does not offer, thread parts), a FAILED post, throttling, and token refresh (after
access_token_invalid and ahead of expiry, the rotated refresh token stored)."""
from __future__ import annotations

import json
import time

import pytest

from fakes.tiktok import FakeTikTok, api_error
from support import (
    API, api, connect_database, connect_oauth, dict_rows, get_post, jpeg_file, mp4_file, oauth_channel, png_file,
    refused_post, scheduled, settled, uploaded,
)

SETTINGS = {"__type": "tiktok", "privacy_level": "FOLLOWER_OF_CREATOR", "duet": False, "stitch": False,
            "comment": True, "autoAddMusic": "no", "brand_content_toggle": False, "brand_organic_toggle": False,
            "content_posting_method": "DIRECT_POST"}


@pytest.fixture
def tiktok():
    fake = FakeTikTok()
    fake.min_chunk = 1000  # TikTok's chunk rules at the small sizes RUSTIZ_TIKTOK_CHUNK_BYTES gives
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes, tiktok):
    return start_server_with_fakes(env={**tiktok.app_env(), "RUSTIZ_RETRY_BASE": "0.3",
                                        "RUSTIZ_TIKTOK_CHUNK_BYTES": "1000", "RUSTIZ_TIKTOK_POLL_SECONDS": "0.05"})


def row(server, channel_id: str) -> dict:
    [found] = dict_rows(server.database, "SELECT internal_id, refresh_token, token_expiration, limits FROM integration "
                        "WHERE id = ?", channel_id)
    return found


def video(server, size: int = 3500) -> dict:
    return uploaded(server, mp4_file(size), "mp4")


def refresh_grants(tiktok: FakeTikTok) -> int:
    return sum(1 for request in tiktok.requests_to("POST", "/v2/oauth/token/")
               if request.form().get("grant_type") == "refresh_token")


def test_connect_keeps_the_account_and_the_creator_options_as_limits(server, tiktok):
    channel_id = oauth_channel(server, "tiktok")
    stored = row(server, channel_id)
    assert stored["internal_id"] == tiktok.open_id and stored["refresh_token"] in tiktok.refresh_tokens
    assert json.loads(stored["limits"])["privacyLevelOptions"] == tiktok.creator["privacy_level_options"]
    status, channel = api(server, "GET", f"{API}/integrations/{channel_id}")
    assert status == 200 and channel["name"] == "Ada"


def test_the_settings_form_offers_only_the_creator_s_privacy_levels_and_says_which_switches_are_off(server, tiktok):
    channel_id = oauth_channel(server, "tiktok")
    status, answer = api(server, "GET", f"{API}/integration-settings/{channel_id}")
    assert status == 200, answer
    properties = answer["output"]["settings"]["properties"]
    assert properties["privacy_level"]["enum"] == ["MUTUAL_FOLLOW_FRIENDS", "FOLLOWER_OF_CREATOR", "SELF_ONLY"]
    assert properties["stitch"]["description"].startswith("Turned off by the creator on TikTok")
    assert "description" not in properties["duet"]


def test_a_scheduled_video_reaches_tiktok_at_its_time_in_ordered_chunks(server, tiktok):
    channel_id = oauth_channel(server, "tiktok")
    media = video(server)
    when = time.time() + 3
    due = time.monotonic() + (int(when) - time.time())  # the date has whole seconds
    post_id = scheduled(server, channel_id, "<p>Sourdough, step by step</p>", settings=SETTINGS, images=[media],
                        type="schedule", date=time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(when)))
    post = settled(server, post_id, timeout=30)
    assert post["state"] == "PUBLISHED", post
    [entry] = tiktok.published
    assert entry["video"] == mp4_file(3500) and [len(chunk) for chunk in entry["chunks"]] == [1000, 1000, 1500]
    puts = tiktok.requests_to("PUT", r"/upload/.+")
    assert tiktok.requests_to("POST", "/v2/post/publish/video/init/")[0].received >= due - 0.05  # not before
    assert [request.headers["content-range"] for request in puts] == [
        "bytes 0-999/3500", "bytes 1000-1999/3500", "bytes 2000-3499/3500"]
    assert entry["post_info"]["title"] == "Sourdough, step by step"
    assert entry["post_info"]["privacy_level"] == "FOLLOWER_OF_CREATOR" and entry["status"] == "PUBLISH_COMPLETE"
    assert post["releaseId"] == entry["public_id"]
    assert post["releaseURL"] == f"{tiktok.url}/@ada.bakes/video/{entry['public_id']}"


def test_upload_mode_leaves_a_draft_in_the_inbox(server, tiktok):
    channel_id = oauth_channel(server, "tiktok")
    post = settled(server, scheduled(server, channel_id, "<p>Draft</p>", images=[video(server)],
                                     settings={**SETTINGS, "content_posting_method": "UPLOAD"}))
    assert post["state"] == "PUBLISHED", post
    [entry] = tiktok.published
    assert entry["inbox"] and entry["status"] == "SEND_TO_USER_INBOX"
    assert post["releaseId"].startswith("v_pub_file~")


def test_a_photo_post_is_pulled_by_tiktok_from_rustizs_upload_urls(server, tiktok):
    channel_id = oauth_channel(server, "tiktok")
    pictures = [uploaded(server, jpeg_file(), "jpg"), uploaded(server, jpeg_file() + b"2", "jpg")]
    post = settled(server, scheduled(server, channel_id, "<p>Two loaves</p>", images=pictures, settings=SETTINGS))
    assert post["state"] == "PUBLISHED", post
    [entry] = tiktok.published
    assert entry["source"]["photo_images"] == [picture["path"] for picture in pictures]
    assert entry["photos"] == [jpeg_file(), jpeg_file() + b"2"]  # fetched from the server by TikTok
    assert entry["post_info"]["description"] == "Two loaves"


def test_a_failed_post_is_an_error_with_tiktoks_reason_in_clear_words(server, tiktok):
    channel_id = oauth_channel(server, "tiktok")
    tiktok.fail_reason = "frame_rate_check_failed"
    post = settled(server, scheduled(server, channel_id, "<p>x</p>", images=[video(server)], settings=SETTINGS))
    assert post["state"] == "ERROR", post
    assert "frame rate" in post["error"] and "frame_rate_check_failed" in post["error"]


def test_a_privacy_level_the_creator_does_not_offer_is_refused_at_scheduling(server, tiktok):
    channel_id = oauth_channel(server, "tiktok")
    answer = refused_post(server, channel_id, "<p>x</p>", images=[video(server)],
                          settings={**SETTINGS, "privacy_level": "PUBLIC_TO_EVERYONE"})
    assert "privacy_level PUBLIC_TO_EVERYONE is not offered by the TikTok account @ada.bakes" in answer
    assert "FOLLOWER_OF_CREATOR, MUTUAL_FOLLOW_FRIENDS, SELF_ONLY" in answer
    assert "stitch is on" in refused_post(server, channel_id, "<p>x</p>", images=[video(server)],
                                          settings={**SETTINGS, "stitch": True})
    assert tiktok.requests_to("POST", r"/v2/post/publish/.+/init/") == []


def test_a_png_photo_is_refused_at_scheduling(server, tiktok):
    channel_id = oauth_channel(server, "tiktok")
    answer = refused_post(server, channel_id, "<p>x</p>", images=[uploaded(server, png_file(), "png")],
                          settings=SETTINGS)
    assert "TikTok photo posts take JPEG and WebP pictures only, not .png" in answer


def test_thread_parts_are_refused_at_scheduling_since_tiktok_has_no_comments_api(server, tiktok):
    channel_id = oauth_channel(server, "tiktok")
    answer = refused_post(server, channel_id, ("<p>x</p>", [video(server)]), ("<p>a comment</p>", []),
                          settings=SETTINGS)
    assert "no replies or comments" in answer


def test_rate_limit_exceeded_is_tried_again_later(server, tiktok):
    channel_id = oauth_channel(server, "tiktok")
    status, body, _ = api_error(429, "rate_limit_exceeded", "API rate limit was exceeded.")
    tiktok.fail_next("POST", "/v2/post/publish/video/init/", status, body, {"Retry-After": "1"})
    post = settled(server, scheduled(server, channel_id, "<p>x</p>", images=[video(server)], settings=SETTINGS),
                   timeout=30)
    assert post["state"] == "PUBLISHED", post
    assert len(tiktok.requests_to("POST", "/v2/post/publish/video/init/")) == 2 and len(tiktok.published) == 1


def test_access_token_invalid_is_cured_by_a_refresh_and_the_new_refresh_token_is_kept(server, tiktok):
    channel_id = oauth_channel(server, "tiktok")
    first_refresh = row(server, channel_id)["refresh_token"]
    tiktok.access_tokens.clear()  # TikTok answers access_token_invalid to the stored token
    post = settled(server, scheduled(server, channel_id, "<p>x</p>", images=[video(server)], settings=SETTINGS))
    assert post["state"] == "PUBLISHED", post
    assert refresh_grants(tiktok) == 1 and len(tiktok.published) == 1
    stored = row(server, channel_id)["refresh_token"]
    assert stored != first_refresh and stored in tiktok.refresh_tokens and first_refresh not in tiktok.refresh_tokens


def test_a_token_about_to_expire_is_refreshed_before_publishing(server, tiktok):
    channel_id = oauth_channel(server, "tiktok")
    moment = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() + 60))
    with connect_database(server.database) as db:
        db.execute("UPDATE integration SET token_expiration = ? WHERE id = ?", (moment, channel_id))
    post = settled(server, scheduled(server, channel_id, "<p>x</p>", images=[video(server)], settings=SETTINGS))
    assert post["state"] == "PUBLISHED" and refresh_grants(tiktok) == 1


def test_a_reconnect_keeps_the_channel(server, tiktok):
    channel_id = oauth_channel(server, "tiktok")
    back = connect_oauth(server, "tiktok", refresh=channel_id)
    assert (back["notice"], back["channel"]) == ("reconnected", channel_id)
    post = settled(server, scheduled(server, channel_id, "<p>x</p>", images=[video(server)], settings=SETTINGS))
    assert get_post(server, post["id"])["state"] == "PUBLISHED"
