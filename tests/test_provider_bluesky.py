"""The Bluesky publisher against a fake PDS (tests/fakes/bluesky.py), through the real server from the .pyz:
connect, facets with UTF-8 byte offsets, link cards, images, replies, the cached session, every error rule,
and the limits refused at POST /posts. The pure helpers (graphemes, spans, record keys) are tested directly."""
from __future__ import annotations

import json
import struct
import time

import pytest

import rustiz
from rustiz_features.publishers.bluesky import (
    _TID_ALPHABET, bluesky_text_spans, deterministic_tid, image_dimensions,
)
from rustiz_features.text import grapheme_count
from conftest import provider_fixtures
from fakes.bluesky import FakeBluesky, TID
from support import waiting_for_reconnect, connect, connected, mp4_file, png_file as png, published, schedule, scheduled, uploaded

pds, rustiz_server, channel = provider_fixtures("bluesky", FakeBluesky, names=("pds", "rustiz_server", "channel"))


# --- connecting ----------------------------------------------------------------------------------------

def test_connect_logs_in_once_and_reads_the_profile(rustiz_server, pds, channel):
    assert (channel["name"], channel["picture"], channel["profile"]) == ("Alice Example", pds.avatar, "alice.test")
    assert pds.logins == 1
    assert pds.requests_to("GET", "/xrpc/app.bsky.actor.getProfile")[0].query["actor"] == pds.did


def test_connect_refuses_a_wrong_app_password_with_blueskys_reason(rustiz_server, pds):
    status, answer = connect(rustiz_server, "bluesky", pds.credentials(password="wrong-pass-word"))
    assert status == 400
    assert "Bluesky refused these credentials" in answer["message"]
    assert "Invalid identifier or password" in answer["message"]


def test_the_same_account_twice_is_one_channel_by_its_did(rustiz_server, pds):
    connected(rustiz_server, "bluesky", pds.credentials())
    status, answer = connect(rustiz_server, "bluesky", pds.credentials(identifier=pds.did))
    assert (status, answer["reconnected"]) == (200, True), answer


# --- publishing ----------------------------------------------------------------------------------------

def test_text_post_has_facets_with_utf8_byte_offsets_and_a_link_card(rustiz_server, pds, channel):
    text = f"Café 🎉 read {pds.url}/article, ask @bob.test or @ghost.test #rustiz!"
    post = published(rustiz_server, channel["id"], f"<p>{text}</p>")
    [record] = pds.published
    value = record["value"]
    assert value["text"] == text
    encoded = text.encode()
    spans = {facet["features"][0]["$type"].rpartition("#")[2]:
             (encoded[facet["index"]["byteStart"]:facet["index"]["byteEnd"]].decode(), facet["features"][0])
             for facet in value["facets"]}
    assert spans["link"] == (f"{pds.url}/article", {"$type": "app.bsky.richtext.facet#link",
                                                    "uri": f"{pds.url}/article"})
    assert spans["mention"] == ("@bob.test", {"$type": "app.bsky.richtext.facet#mention", "did": "did:plc:bobbobbobbob5678"})
    assert spans["tag"] == ("#rustiz", {"$type": "app.bsky.richtext.facet#tag", "tag": "rustiz"})
    assert len(value["facets"]) == 3  # @ghost.test does not resolve: plain text
    assert value["embed"] == {"$type": "app.bsky.embed.external", "external": {
        "uri": f"{pds.url}/article", "title": "Rust & SQLite", "description": "How rustiz stores posts"}}
    assert TID.fullmatch(record["rkey"])
    assert post["releaseId"] == record["uri"]
    assert post["releaseURL"] == f"https://bsky.app/profile/{pds.did}/post/{record['rkey']}"


def test_a_link_whose_page_cannot_be_read_gets_a_card_titled_with_its_url(rustiz_server, pds, channel):
    published(rustiz_server, channel["id"], "<p>see http://127.0.0.1:9/nothing-here</p>")
    assert pds.published[0]["value"]["embed"]["external"] == {
        "uri": "http://127.0.0.1:9/nothing-here", "title": "http://127.0.0.1:9/nothing-here", "description": ""}


def test_images_are_uploaded_as_blobs_with_alt_text_and_aspect_ratio(rustiz_server, pds, channel):
    first, second = uploaded(rustiz_server, png(3, 2)), uploaded(rustiz_server, png(1, 4))
    published(rustiz_server, channel["id"], (f"<p>two pictures {pds.url}/article</p>", [
        {"id": first["id"], "path": first["path"], "alt": "a wide one"},
        {"id": second["id"], "path": second["path"]}]))
    uploads = pds.requests_to("POST", "/xrpc/com.atproto.repo.uploadBlob")
    assert [request.headers["content-type"] for request in uploads] == ["image/png", "image/png"]
    assert uploads[0].body == png(3, 2)
    embed = pds.published[0]["value"]["embed"]
    assert embed["$type"] == "app.bsky.embed.images"  # images win over the link card
    assert [(image["alt"], image["aspectRatio"]) for image in embed["images"]] == [
        ("a wide one", {"width": 3, "height": 2}), ("", {"width": 1, "height": 4})]
    assert embed["images"][0]["image"]["ref"]["$link"] in pds.blobs


def test_a_video_is_uploaded_as_a_blob_and_embedded(rustiz_server, pds, channel):
    clip = uploaded(rustiz_server, mp4_file(), "mp4")
    published(rustiz_server, channel["id"],
              ("<p>watch this</p>", [{"id": clip["id"], "path": clip["path"], "alt": "a cat"}]))
    [blob_upload] = pds.requests_to("POST", "/xrpc/com.atproto.repo.uploadBlob")
    assert blob_upload.headers["content-type"] == "video/mp4" and blob_upload.body == mp4_file()
    embed = pds.published[0]["value"]["embed"]
    assert (embed["$type"], embed["alt"], embed["video"]["mimeType"]) == ("app.bsky.embed.video", "a cat", "video/mp4")


def test_an_image_over_a_megabyte_fails_naming_the_media_item(rustiz_server, pds, channel):
    small, big = uploaded(rustiz_server, png()), uploaded(rustiz_server, png(padding=1_000_100))
    post = published(rustiz_server, channel["id"], ("<p>too big</p>", [small, big]), state="ERROR")
    assert "media item 2" in post["error"] and "1,000,000 bytes" in post["error"]
    assert pds.published == [] and not pds.requests_to("POST", "/xrpc/com.atproto.repo.uploadBlob")


def test_thread_parts_are_replies_with_root_and_parent_refs(rustiz_server, pds, channel):
    post = published(rustiz_server, channel["id"], "<p>one</p>", "<p>two</p>", "<p>three</p>")
    first, second, third = pds.published
    root = {"uri": first["uri"], "cid": first["cid"]}
    assert "reply" not in first["value"]
    assert second["value"]["reply"] == {"root": root, "parent": root}
    assert third["value"]["reply"] == {"root": root, "parent": {"uri": second["uri"], "cid": second["cid"]}}
    assert [part["releaseId"] for part in post["thread"]] == [second["uri"], third["uri"]]


# --- the session ---------------------------------------------------------------------------------------

def test_posts_reuse_the_session_from_connecting(rustiz_server, pds, channel):
    published(rustiz_server, channel["id"], "<p>first</p>")
    published(rustiz_server, channel["id"], "<p>second</p>")
    assert len(pds.published) == 2
    assert pds.logins == 1 and not pds.requests_to("POST", "/xrpc/com.atproto.server.refreshSession")


def test_an_expired_access_token_is_refreshed_not_logged_in_again(rustiz_server, pds, channel):
    pds.expire_access_tokens()
    published(rustiz_server, channel["id"], "<p>after two hours</p>")
    assert len(pds.requests_to("POST", "/xrpc/com.atproto.server.refreshSession")) == 1
    assert pds.logins == 1
    published(rustiz_server, channel["id"], "<p>and the refreshed session is kept</p>")
    assert len(pds.requests_to("POST", "/xrpc/com.atproto.server.refreshSession")) == 1


def test_an_access_token_about_to_expire_is_refreshed_before_it_is_refused(rustiz_server, pds):
    pds.access_lifetime = 30  # under the minute rustiz keeps in hand
    channel = connected(rustiz_server, "bluesky", pds.credentials())
    published(rustiz_server, channel["id"], "<p>just in time</p>")
    assert len(pds.requests_to("POST", "/xrpc/com.atproto.repo.createRecord")) == 1
    # each token lives 30 s: refreshed before the profile read at connect, and before the post
    assert len(pds.requests_to("POST", "/xrpc/com.atproto.server.refreshSession")) == 2 and pds.logins == 1


def test_a_dead_refresh_token_leads_to_one_new_login(rustiz_server, pds, channel):
    pds.expire_access_tokens()
    pds.refresh_tokens.clear()
    published(rustiz_server, channel["id"], "<p>months later</p>")
    assert pds.logins == 2 and len(pds.published) == 1


def test_a_revoked_app_password_flags_the_channel_and_its_posts_wait_for_a_reconnect(rustiz_server, pds, channel):
    pds.revoke_everything()
    post = waiting_for_reconnect(rustiz_server, scheduled(rustiz_server, channel["id"], "<p>nobody home</p>"))
    assert "Failed on Bluesky (HTTP 401)" in post["error"] and "Invalid identifier or password" in post["error"]
    assert pds.published == []
    post = waiting_for_reconnect(rustiz_server, scheduled(rustiz_server, channel["id"], "<p>still refused</p>"))
    assert pds.published == []


# --- error rules ----------------------------------------------------------------------------------------

def test_a_429_with_ratelimit_reset_is_retried_then_published_once(rustiz_server, pds, channel):
    pds.fail_next("POST", "/xrpc/com.atproto.repo.createRecord", 429,
                  {"error": "RateLimitExceeded", "message": "Rate Limit Exceeded"},
                  {"ratelimit-limit": "5000", "ratelimit-remaining": "0", "ratelimit-reset": str(int(time.time()) + 1)})
    published(rustiz_server, channel["id"], "<p>patience</p>")
    assert len(pds.requests_to("POST", "/xrpc/com.atproto.repo.createRecord")) == 2
    assert len(pds.published) == 1


def test_a_502_is_retried_and_published(rustiz_server, pds, channel):
    pds.fail_next("POST", "/xrpc/com.atproto.repo.createRecord", 502,
                  {"error": "UpstreamFailure", "message": "Upstream service unreachable"})
    published(rustiz_server, channel["id"], "<p>again</p>")
    assert len(pds.published) == 1


def test_a_lost_answer_is_resent_under_the_same_record_key_and_never_duplicates(rustiz_server, pds, channel):
    pds.fail_next("GET", "/xrpc/com.atproto.repo.getRecord", 502, {"error": "UpstreamFailure", "message": "x"})
    pds.drop_next("POST", "/xrpc/com.atproto.repo.createRecord", after_handling=True)
    post = published(rustiz_server, channel["id"], "<p>exactly once</p>")
    creates = pds.requests_to("POST", "/xrpc/com.atproto.repo.createRecord")
    assert len(creates) == 2 and creates[0].json()["rkey"] == creates[1].json()["rkey"]
    assert len(pds.published) == 1 and post["releaseId"] == pds.published[0]["uri"]


def test_a_lost_answer_is_found_as_the_written_record_without_sending_again(rustiz_server, pds, channel):
    pds.drop_next("POST", "/xrpc/com.atproto.repo.createRecord", after_handling=True)
    post = published(rustiz_server, channel["id"], "<p>written, answer lost</p>")
    assert len(pds.requests_to("POST", "/xrpc/com.atproto.repo.createRecord")) == 1
    assert post["releaseId"] == pds.published[0]["uri"]


def test_a_400_invalid_request_fails_with_blueskys_words(rustiz_server, pds, channel):
    pds.fail_next("POST", "/xrpc/com.atproto.repo.createRecord", 400,
                  {"error": "InvalidRequest", "message": "Invalid app.bsky.feed.post record: bad facet"})
    post = published(rustiz_server, channel["id"], "<p>refused</p>", state="ERROR")
    assert "Failed on Bluesky (HTTP 400)" in post["error"]
    assert "InvalidRequest: Invalid app.bsky.feed.post record: bad facet" in post["error"]
    assert len(pds.requests_to("POST", "/xrpc/com.atproto.repo.createRecord")) == 1


# --- limits at POST /posts ------------------------------------------------------------------------------

def test_a_part_over_300_graphemes_is_refused_at_post_time(rustiz_server, pds, channel):
    status, answer = schedule(rustiz_server, channel["id"], "<p>fits</p>",
                              "<p>" + "a" * 150 + "</p><p>" + "b" * 150 + "</p>")
    assert status == 400
    assert "300 characters (graphemes)" in json.dumps(answer) and "thread part 2 has 301" in json.dumps(answer)


def test_a_video_with_pictures_fails_naming_the_video(rustiz_server, pds, channel):
    picture, clip = uploaded(rustiz_server, png()), uploaded(rustiz_server, mp4_file(), "mp4")
    post = published(rustiz_server, channel["id"], ("<p>both</p>", [picture, clip]), state="ERROR")
    assert "media item 2" in post["error"] and "either one video or up to 4 pictures" in post["error"]
    assert pds.published == [] and not pds.requests_to("POST", "/xrpc/com.atproto.repo.uploadBlob")


# --- helpers ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, count", [
    ("abc", 3), ("e\u0301", 1), ("👨\u200d👩\u200d👧\u200d👦", 1), ("🇫🇷🇩🇪", 2), ("🇫🇷🇩", 2), ("👍🏽", 1),
    ("❤️", 1), ("한국어", 3), ("\u1100\u1161\u11a8", 1), ("\r\n", 1), ("🏳️\u200d🌈", 1), ("a\u200db", 2)])
def test_grapheme_count_follows_unicode_clusters(text, count):
    assert grapheme_count(text) == count


def test_spans_trim_punctuation_and_accept_bare_domains_with_real_tlds():
    text = "(https://en.wikipedia.org/wiki/Rust_(language)) example.com. file.txt #tag, #2024 @bob.test."
    spans = [(kind, text[start:end], value) for kind, start, end, value in bluesky_text_spans(text)]
    assert spans == [("link", "https://en.wikipedia.org/wiki/Rust_(language)", "https://en.wikipedia.org/wiki/Rust_(language)"),
                     ("link", "example.com", "https://example.com"), ("tag", "#tag", "tag"),
                     ("mention", "@bob.test", "bob.test")]


def test_record_keys_are_valid_tids_stable_per_part_and_distinct_across_parts_and_edits():
    post_id = rustiz.new_cuid()
    first = deterministic_tid(post_id, "key-1")
    assert TID.fullmatch(first) and first == deterministic_tid(post_id, "key-1")
    assert first != deterministic_tid(post_id, "key-2")
    assert TID.fullmatch(deterministic_tid("not-a-cuid", "key-1"))
    created = int(post_id[1:9], 36) / 1000  # the TID's time is the post's creation, within a second
    micros = sum(_TID_ALPHABET.index(char) << shift for char, shift in zip(first, range(60, -1, -5))) >> 10
    assert created - 1 <= micros / 1e6 <= created + 1


def test_image_dimensions_are_read_from_png_and_jpeg_headers():
    jpeg = (b"\xff\xd8\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
            + b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, 480, 640, 1) + b"\x01\x11\x00" + b"\xff\xd9")
    assert image_dimensions(png(7, 5)) == (7, 5)
    assert image_dimensions(jpeg) == (640, 480)
