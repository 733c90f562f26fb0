"""The publisher framework's shared pieces, in-process: the registry, how a platform's answer becomes
a retry, a reconnect or a refusal, how long to wait, and the words of a failure."""
from __future__ import annotations

import email.utils
import json
import time

import pytest

import rustiz
from rustiz_features.catalogue import CREDENTIAL_SPECS
from rustiz_features.http_client import HttpReply
from rustiz_features.publishers import PROVIDER_MODULES, provider_for
from rustiz_features.publishers.base import (
    NeedsReconnect, OutcomeUnknown, PublishError, Rejected, Retryable, retry_after_seconds,
)
from rustiz_features.text import html_to_text
from rustiz_features.recurrence import next_occurrence
from rustiz_features.background import epoch_seconds, failure_text


def reply(status: int, body: bytes = b"", **headers: str) -> HttpReply:
    return HttpReply(status, {name.replace("_", "-").lower(): value for name, value in headers.items()}, body, "")


def test_every_provider_that_connects_with_credentials_or_oauth_has_a_publisher():
    from rustiz_features.catalogue import DESCRIPTORS
    assert sorted(PROVIDER_MODULES) == sorted(set(CREDENTIAL_SPECS) | {i for i, d in DESCRIPTORS.items() if d.oauth})
    for identifier in PROVIDER_MODULES:
        publisher = provider_for(identifier)
        assert publisher.identifier == identifier and publisher.label
        assert publisher.concurrency >= 1 and publisher.spacing >= 0


@pytest.mark.parametrize("answer, seconds", [
    (reply(429, Retry_After="7"), 7.0),
    (reply(429, Retry_After="1.5"), 1.5),
    (reply(429, b'{"retry_after": 0.25, "message": "You are being rate limited."}'), 0.25),  # Discord
    (reply(429, b'{"ok": false, "error_code": 429, "parameters": {"retry_after": 12}}'), 12.0),  # Telegram
    (reply(429, x_ratelimit_reset="30"), 30.0),  # a delta
    (reply(429), None),
])
def test_how_long_a_throttled_answer_asks_to_wait(answer, seconds):
    assert retry_after_seconds(answer) == seconds


def test_waits_given_as_dates_orepoch_secondss_are_counted_from_now():
    in_a_minute = time.time() + 60
    for answer in (reply(429, Retry_After=email.utils.formatdate(in_a_minute, usegmt=True)),
                   reply(429, ratelimit_reset=str(int(in_a_minute))),  # Bluesky: an epoch
                   reply(429, x_ratelimit_reset=rustiz.iso_at(in_a_minute))):  # Mastodon: an ISO time
        assert 55 <= retry_after_seconds(answer) <= 61


@pytest.mark.parametrize("status, visible, kind", [
    (429, True, Retryable), (503, True, Retryable), (502, True, Retryable),
    (500, False, Retryable), (500, True, OutcomeUnknown), (504, True, OutcomeUnknown),
    (401, True, NeedsReconnect), (403, False, NeedsReconnect),
    (400, True, Rejected), (422, True, Rejected), (404, False, Rejected),
])
def test_each_status_means_one_decision(status, visible, kind):
    provider = provider_for("webhook")
    with pytest.raises(kind) as raised:
        provider.check_reply(reply(status, b'{"message": "the words"}'), visible, "the media upload")
    assert raised.value.status == status
    words = "the words" if visible else "the words (on the media upload)"
    if kind is OutcomeUnknown:  # said so: the post may be out
        words = "a server error, after the post was sent: " + words
    assert raised.value.message == words


def test_a_2xx_answer_is_returned():
    answer = reply(201, b"{}")
    assert provider_for("webhook").check_reply(answer, True, "the post") is answer


def test_a_failure_names_the_platform_status_part_and_item():
    error = Rejected("Validation failed: Text character limit of 500 exceeded", 422,
                            '{"error":"Validation failed: Text character limit of 500 exceeded"}', item="media item 1")
    assert failure_text("Mastodon", error, 1) == (
        "Failed on Mastodon (HTTP 422) at thread part 2, media item 1: Validation failed: Text character limit of "
        "500 exceeded")
    detail = '{"message":"Invalid Form Body","code":50035,"errors":{"content":{"_errors":[{"code":"BASE_TYPE_MAX_LENGTH"}]}}}'
    assert failure_text("Discord", Rejected("Invalid Form Body", 400, detail), 0) == (
        f"Failed on Discord (HTTP 400): Invalid Form Body — Discord answered: {detail}")


PAGE = b"<html><body><pre>RUSTIZ_API_KEY=the-secret-of-another-server</pre></body></html>"


@pytest.mark.parametrize("status", [200, 400, 401, 403, 404, 422, 429, 500, 502])
@pytest.mark.parametrize("provider", sorted(PROVIDER_MODULES))
def test_an_answer_in_no_error_shape_of_the_platform_is_described_never_quoted(provider, status):
    """A proxy's page, or whatever server a tenant's URL names: its status and size, not its words."""
    try:
        provider_for(provider).check_reply(reply(status, PAGE, content_type="text/html"), True, "the post")
    except PublishError as error:
        assert "the-secret" not in error.message + error.body, error.message
        assert f"HTTP {status}" in error.message or error.status == status, error.message
    else:
        assert status == 200, provider


LONG = "x" * 2000


@pytest.mark.parametrize("provider, answer, words", [
    ("mastodon", {"error": "Validation failed: Text character limit of 500 exceeded"},
     "Validation failed: Text character limit of 500 exceeded"),
    ("bluesky", {"error": "InvalidRequest", "message": "Record/text must not be longer than 3000 graphemes"},
     "InvalidRequest: Record/text must not be longer than 3000 graphemes"),
    ("telegram", {"ok": False, "error_code": 400, "description": "Bad Request: message is too long"},
     "Bad Request: message is too long"),
    ("discord", {"message": "Cannot send an empty message", "code": 50006}, "Cannot send an empty message"),
    ("wordpress", {"code": "rest_invalid_param", "message": "Invalid parameter(s): <b>status</b>",
                   "data": {"status": 400}}, "rest_invalid_param: Invalid parameter(s): status"),
    ("lemmy", {"error": "couldnt_find_community"}, "couldnt_find_community"),
    ("devto", {"error": "Title can't be blank", "status": 422}, "Title can't be blank"),
    ("hashnode", {"errors": [{"message": "Publication not found", "extensions": {"code": "NOT_FOUND"}}]},
     "Publication not found"),
    ("listmonk", {"message": "Invalid list"}, "Invalid list"),
    ("webhook", {"message": "text is too long for this receiver"}, "text is too long for this receiver"),
    ("mastodon", {"error": LONG}, "x" * 300 + "…"),
])
def test_a_platform_s_own_error_is_quoted_bounded(provider, answer, words):
    with pytest.raises(PublishError) as raised:
        provider_for(provider).check_reply(reply(422, json.dumps(answer).encode()), True, "the post")
    assert words in raised.value.message and LONG not in raised.value.message, raised.value.message
    assert len(raised.value.body) <= 600


@pytest.mark.parametrize("provider", ["mastodon", "telegram", "discord", "wordpress", "listmonk", "bluesky"])
def test_another_platform_s_error_shape_is_not_quoted(provider):
    """JSON in some other shape (here a bare {"detail"}, which none of these platforms answers)."""
    with pytest.raises(PublishError) as raised:
        provider_for(provider).check_reply(reply(400, b'{"detail": "the-secret"}'), False, "the account")
    assert "the-secret" not in raised.value.message + raised.value.body
    assert "HTTP 400, 24 bytes that are not" in raised.value.message, raised.value.message


def test_a_recurring_post_re_anchors_on_its_next_future_occurrence():
    anchor = "2026-01-01T09:00:00.000Z"
    after = epoch_seconds("2026-01-15T10:00:00.000Z")
    assert next_occurrence(anchor, None, 7, "UTC", after) == "2026-01-22T09:00:00.000Z"
    assert next_occurrence(anchor, None, 1, "UTC", epoch_seconds(anchor) - 10) == anchor


def test_html_becomes_plain_text_with_line_breaks():
    assert html_to_text("<p>Hello &amp; <strong>welcome</strong></p><p>line<br>two</p><ul><li>a</li></ul>") == (
        "Hello & welcome\nline\ntwo\n- a")
