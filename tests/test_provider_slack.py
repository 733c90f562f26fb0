"""Slack through an incoming webhook, against a fake of the webhook and the real server."""
from __future__ import annotations

from conftest import provider_fixtures
from fakes.slack import FakeSlack, slack_error
from support import (waiting_for_reconnect, connect, connected, mp4_file, notifications, png_file, refresh_needed, schedule, scheduled,
                     settled_rows, uploaded)

SETTINGS = {"__type": "slack", "channel": "general"}


slack, rustiz, channel = provider_fixtures("slack", FakeSlack, names=("slack", "rustiz", "channel"))


def test_connect_posts_nothing_and_tells_two_webhooks_apart_by_their_url(rustiz, slack, channel):
    assert channel["name"] == "Slack webhook" and slack.requests == []  # no test message in the workspace
    named = connected(rustiz, "slack", {"webhookUrl": slack.url + "/services/T0AB12CD3/B0OTHER/abc"})
    assert named["id"] != channel["id"]
    status, answer = connect(rustiz, "slack", slack.credentials())
    assert (status, answer["reconnected"]) == (200, True), answer


def test_a_slack_url_that_is_not_an_incoming_webhook_is_refused_at_connect(rustiz):
    for url in ("https://hooks.slack.com/workflows/T0AB12CD3/A0123/456/xyz", "http://hooks.slack.com/services/T1/B2/c3"):
        status, answer = connect(rustiz, "slack", {"webhookUrl": url})
        assert status == 400 and "not a Slack incoming webhook URL" in answer["message"], answer
    assert connect(rustiz, "slack", {"webhookUrl": "https://hooks.slack.com/services/T0AB12CD3/B0EF45GH6/"
                                                   "sEcReT123"})[0] == 201


def test_text_post_goes_out_as_mrkdwn_sections_and_is_released_without_a_link(rustiz, slack, channel):
    [row] = settled_rows(rustiz, scheduled(
        rustiz, channel["id"], '<p>Deploy <strong>done</strong> &amp; <a href="https://example.com/log">the log</a> '
        '&lt;here&gt;</p>', settings=SETTINGS))
    assert row["state"] == "PUBLISHED", row
    [message] = slack.published
    mrkdwn = "Deploy *done* &amp; <https://example.com/log|the log> &lt;here&gt;"
    assert message == {"text": mrkdwn, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn}}]}
    assert row["release_id"] and not row["release_url"]  # the webhook answers no id or link


def test_long_text_is_cut_into_sections_of_3000_characters_at_line_breaks(rustiz, slack, channel):
    paragraphs = ["a" * 2000, "b" * 2000, "c" * 500]
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "".join(f"<p>{p}</p>" for p in paragraphs),
                                           settings=SETTINGS))
    assert row["state"] == "PUBLISHED", row
    [message] = slack.published
    assert [block["text"]["text"] for block in message["blocks"]] == ["a" * 2000, "b" * 2000 + "\n" + "c" * 500]


def test_images_go_as_image_blocks_pointing_at_their_public_url(rustiz, slack, channel):
    picture = uploaded(rustiz, png_file())
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>Look</p>", settings=SETTINGS, images=[picture]))
    assert row["state"] == "PUBLISHED", row
    [message] = slack.published
    assert message["blocks"][1] == {"type": "image", "image_url": picture["path"],
                                    "alt_text": picture["path"].rsplit("/", 1)[1]}


def test_threads_videos_and_too_many_blocks_are_refused_when_the_post_is_created(rustiz, slack, channel):
    status, answer = schedule(rustiz, channel["id"], "<p>one</p>", "<p>two</p>", settings=SETTINGS)
    assert status == 400 and "Slack publishes each post on its own" in str(answer), answer
    video = uploaded(rustiz, mp4_file(), "clip.mp4")
    status, answer = schedule(rustiz, channel["id"], "<p>clip</p>", settings=SETTINGS, images=[video])
    assert status == 400 and "cannot upload files" in str(answer), answer
    status, answer = schedule(rustiz, channel["id"], "".join(f"<p>{'x' * 2999}</p>" for _ in range(51)),
                              settings=SETTINGS)
    assert status == 400 and "Slack takes at most 50 blocks in a message; this post needs 51" in str(answer), answer
    assert slack.requests == []


def test_429_is_retried_after_retry_after_and_published_once(rustiz, slack, channel):
    slack.fail_next("POST", r"/services/.*", *slack_error(429, "rate_limited", {"Retry-After": "1"}))
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>Busy</p>", settings=SETTINGS))
    assert row["state"] == "PUBLISHED" and len(slack.published) == 1
    assert len(slack.requests) == 2


def test_a_removed_webhook_flags_the_channel_for_reconnecting_and_the_post_waits(rustiz, slack, channel):
    slack.removed = True
    row = waiting_for_reconnect(rustiz, scheduled(rustiz, channel["id"], "<p>Anyone?</p>", settings=SETTINGS))
    assert "no_service" in row["error"] and "removed" in row["error"], row
    assert refresh_needed(rustiz, channel["id"])
    assert any("reconnect this Slack channel" in text for text in notifications(rustiz))


def test_an_archived_channel_fails_with_slacks_code_and_what_to_do(rustiz, slack, channel):
    slack.fail_next("POST", r"/services/.*", *slack_error(410, "channel_is_archived"))
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>Hello</p>", settings=SETTINGS))
    assert row["state"] == "ERROR" and "Failed on Slack (HTTP 410)" in row["error"], row
    assert "channel_is_archived" in row["error"] and "unarchive" in row["error"]
    assert not refresh_needed(rustiz, channel["id"])


def test_an_answer_that_is_not_ok_is_never_taken_for_success(rustiz, slack, channel):
    slack.fail_next("POST", r"/services/.*", *slack_error(200, "invalid_blocks"))
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>First</p>", settings=SETTINGS))
    assert row["state"] == "ERROR" and "invalid_blocks" in row["error"], row
    slack.fail_next("POST", r"/services/.*", 200, "<html>Welcome to the hotel Wi-Fi</html>")
    [row] = settled_rows(rustiz, scheduled(rustiz, channel["id"], "<p>Second</p>", settings=SETTINGS))
    assert row["state"] == "ERROR" and "It may have been published" in row["error"], row
    assert slack.published == []
