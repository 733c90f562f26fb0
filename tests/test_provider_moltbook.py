"""The Moltbook publisher against a fake Moltbook, through the built server: the agent behind the API key, a
post to a submolt with comments as its thread, Moltbook's error words, the post cooldown (429 with Retry-After),
a post held behind a verification challenge, and delete."""
from __future__ import annotations

from conftest import fake_fixture, provider_fixtures
from fakes.moltbook import POST_COOLDOWN, FakeMoltbook
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import Channel, OutgoingPost, Rejected, Release
from support import connect, refresh_needed, run, scheduled, settled, waiting_for_reconnect

import pytest

moltbook, server, channel = provider_fixtures("moltbook", FakeMoltbook, names=("moltbook", "server", "channel"))
provider = provider_for("moltbook")


def test_connect_reads_the_agent(server, moltbook, channel):
    assert (channel["name"], channel["profile"]) == ("Rustiz Bot", "rustiz_bot")
    status, answer = connect(server, "moltbook", {"apiKey": "moltbook_sk_wrong"})
    assert status == 400 and "Invalid API key" in answer["message"], answer


def test_a_post_goes_to_its_submolt_with_a_thread_of_comments(server, moltbook, channel):
    text = "A long first line that goes on " * 5
    post = settled(server, scheduled(server, channel["id"], f"<p>{text}</p>", "<p>first</p>", "<p>second</p>",
                                     settings={"submolt": "builders"}, provider="moltbook"))
    assert [part["state"] for part in [post, *post["thread"]]] == ["PUBLISHED"] * 3, post
    [published] = moltbook.published
    assert (published["submolt"], published["title"], published["content"]) == ("builders", text.strip()[:100],
                                                                                 text.strip())
    first, second = published["comments"]
    assert first == {"content": "first", "id": first["id"]}
    assert second == {"content": "second", "parent_id": first["id"], "id": second["id"]}
    assert post["releaseURL"] == f"{moltbook.url}/post/{published['id']}"


def test_an_unknown_submolt_fails_in_moltbooks_words(server, moltbook, channel):
    post = settled(server, scheduled(server, channel["id"], "<p>x</p>", settings={"submolt": "nowhere"},
                                     provider="moltbook"))
    assert post["state"] == "ERROR" and "Submolt not found: Check the submolt's name" in post["error"], post


def test_the_post_cooldown_is_retried_after_retry_after(server, moltbook, channel):
    moltbook.fail_next("POST", "/api/v1/posts", 429, POST_COOLDOWN, {"Retry-After": "1"})
    post = settled(server, scheduled(server, channel["id"], "<p>soon</p>", settings={"submolt": "general"},
                                     provider="moltbook"), timeout=30)
    assert post["state"] == "PUBLISHED" and len(moltbook.requests_to("POST", "/api/v1/posts")) == 2


def test_a_post_held_for_verification_fails_plainly(server, moltbook, channel):
    moltbook.hold_for_verification = True
    post = settled(server, scheduled(server, channel["id"], "<p>x</p>", settings={"submolt": "general"},
                                     provider="moltbook"))
    assert post["state"] == "ERROR" and "verification challenge" in post["error"], post


def test_a_revoked_key_waits_for_a_reconnect(server, moltbook, channel):
    moltbook.api_key = "moltbook_sk_revoked"
    post = waiting_for_reconnect(server, scheduled(server, channel["id"], "<p>x</p>", settings={"submolt": "general"},
                                                   provider="moltbook"))
    assert "Invalid API key" in post["error"] and refresh_needed(server, channel["id"])


fake = fake_fixture(FakeMoltbook)


def test_delete_removes_a_post_a_gone_one_is_fine_and_a_comment_is_refused(fake, http):
    channel = Channel("c", "bot", fake.credentials(), None, http)
    release = run(provider.publish(channel, OutgoingPost("p", "<p>x</p>", (), {"submolt": "general"}, 0, "k",
                                                         "2026-12-06T10:00:00Z"), None))
    run(provider.delete(channel, Release(release.id, release.url)))
    assert fake.posts == {}
    run(provider.delete(channel, Release(release.id, release.url)))  # already gone: a 404 is success
    with pytest.raises(Rejected):
        run(provider.delete(channel, Release("c9", f"{fake.url}/post/{release.id}#comment-c9")))
