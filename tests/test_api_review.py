"""Posts made with a drafts key wait for a person's review: the review list (GET /posts?state=review), approve
(scheduled at its date or the channel's next free slot), reject (with a reason the agent reads back); the
scheduler never publishes a post awaiting review; the review survives a restart."""
from __future__ import annotations

import itertools
import json

import pytest

from conftest import LOCAL_FAKES
from support import API, api, channel_post, connect_database, iso, post_body, wait_for, webhook_channel


@pytest.fixture(scope="module")
def shared(start_module_server):
    return start_module_server(env=LOCAL_FAKES)


@pytest.fixture(scope="module")
def channel(shared, module_receiver) -> str:
    return webhook_channel(shared, module_receiver)


@pytest.fixture(scope="module")
def agent(shared) -> str:
    """A drafts key, as an AI agent would get."""
    status, made = api(shared, "POST", f"{API}/api-keys", {"name": "agent", "scope": "drafts"})
    assert status == 201, made
    return made["apiKey"]


# Each post's own text: the tests share one server, where the same text queued twice on a channel within a
# day is refused as a duplicate.
POST_NUMBERS = itertools.count(1)


def create(server, channel: str, key: str | None = None, *, type: str = "draft", date: str | None = None,
           content: str | None = None) -> tuple:
    content = content or f"<p>From the agent, post {next(POST_NUMBERS)}</p>"
    return api(server, "POST", f"{API}/posts", post_body(channel_post(channel, content), type=type,
                                                         date=date or iso(86400)), key=key)


def draft(server, channel: str, agent: str, **options) -> str:
    status, answer = create(server, channel, agent, **options)
    assert status == 201, answer
    return answer[0]["postId"]


def view(server, post_id: str, key: str | None = None) -> dict:
    status, post = api(server, "GET", f"{API}/posts/{post_id}", key=key)
    assert status == 200, post
    return post


def test_a_drafts_key_asking_to_schedule_or_publish_now_is_refused_naming_the_scope_full(shared, channel, agent):
    for kind in ("schedule", "now"):
        status, answer = create(shared, channel, agent, type=kind)
        assert status == 403 and answer["message"] == (
            f"This API key has the scope 'drafts'; a post of type \"{kind}\" (only \"draft\" waits for review) needs "
            "the scope 'full'. Use a key with that scope (`rustiz key add --scope full`) or the organization's own key")


def test_a_drafts_key_s_draft_waits_in_the_review_list(shared, channel, agent):
    post_id = draft(shared, channel, agent)
    post = view(shared, post_id, agent)
    assert (post["state"], post["review"], post["reviewReason"]) == ("DRAFT", "review", None)
    status, listing = api(shared, "GET", f"{API}/posts?state=review", key=agent)
    assert status == 200
    listed = {item["id"]: item for item in listing["posts"]}
    assert listed[post_id]["review"] == "review" and listed[post_id]["integration"]["id"] == channel
    status, answer = api(shared, "GET", f"{API}/posts?state=pending")
    assert status == 400 and "state must be one of the following values: review, rejected" in answer["message"]
    full_draft = api(shared, "POST", f"{API}/posts", post_body(channel_post(channel, "<p>mine</p>"), type="draft",
                                                                date=iso(86400)))[1][0]["postId"]
    assert view(shared, full_draft)["review"] is None  # a person's drafts need no review


def test_approving_queues_the_post_at_its_date_when_that_is_ahead(shared, channel, agent):
    date = iso(2 * 86400)
    post_id = draft(shared, channel, agent, date=date)
    assert api(shared, "POST", f"{API}/posts/{post_id}/approve", key=agent)[0] == 403
    status, post = api(shared, "POST", f"{API}/posts/{post_id}/approve")
    assert status == 200, post
    assert (post["state"], post["publishDate"], post["review"]) == ("QUEUE", date, None)
    listing = api(shared, "GET", f"{API}/posts?state=review")[1]["posts"]
    assert post_id not in [item["id"] for item in listing]
    status, answer = api(shared, "POST", f"{API}/posts/{post_id}/approve")
    assert status == 409 and "is not awaiting review" in answer["message"]
    for decision in ("approve", "reject"):
        assert api(shared, "POST", f"{API}/posts/no-such-post/{decision}", {"reason": "x"})[0] == 404


def test_approving_a_draft_whose_date_passed_queues_it_at_the_channel_s_next_free_slot(shared, channel, agent):
    post_id = draft(shared, channel, agent, date=iso(-3600))
    status, slot = api(shared, "GET", f"{API}/find-slot/{channel}")
    assert status == 200, slot
    status, post = api(shared, "POST", f"{API}/posts/{post_id}/approve")
    assert status == 200, post
    assert post["state"] == "QUEUE" and post["publishDate"][:16] == slot["date"][:16]


def test_approving_at_a_given_date_and_refusing_a_past_one(shared, channel, agent):
    post_id = draft(shared, channel, agent)
    status, answer = api(shared, "POST", f"{API}/posts/{post_id}/approve", {"date": "2001-01-01T00:00:00Z"})
    assert status == 400 and "is in the past" in answer["message"]
    status, answer = api(shared, "POST", f"{API}/posts/{post_id}/approve", {"date": "soon"})
    assert status == 400 and answer["message"] == ["date must be a valid ISO 8601 date string"]
    date = iso(3 * 86400)
    status, post = api(shared, "POST", f"{API}/posts/{post_id}/approve", {"date": date})
    assert (status, post["publishDate"], post["state"]) == (200, date, "QUEUE")


def test_rejecting_keeps_the_draft_with_a_reason_the_agent_reads_back_until_it_changes_it(shared, channel, agent):
    post_id = draft(shared, channel, agent)
    status, answer = api(shared, "POST", f"{API}/posts/{post_id}/reject", {"reason": " "})
    assert status == 400 and "reason must be a non-empty string" in answer["message"][0]
    status, post = api(shared, "POST", f"{API}/posts/{post_id}/reject", {"reason": "Too salesy; cite the source"})
    assert (status, post["state"], post["review"]) == (200, "DRAFT", "rejected")
    assert view(shared, post_id, agent)["reviewReason"] == "Too salesy; cite the source"
    rejected = api(shared, "GET", f"{API}/posts?state=rejected", key=agent)[1]["posts"]
    assert [item["reviewReason"] for item in rejected if item["id"] == post_id] == ["Too salesy; cite the source"]
    status, post = api(shared, "PUT", f"{API}/posts/{post_id}", {"content": "<p>Better, with a source</p>"}, key=agent)
    assert (status, post["review"], post["reviewReason"]) == (200, "review", None), post


def test_a_drafts_key_cannot_change_or_unschedule_a_scheduled_post(shared, channel, agent):
    status, answer = create(shared, channel, type="schedule", date=iso(86400))
    assert status == 201, answer
    queued = answer[0]["postId"]
    status, answer = api(shared, "PUT", f"{API}/posts/{queued}", {"content": "<p>hijacked</p>"}, key=agent)
    assert status == 403 and f"editing post {queued} (it is QUEUE) needs the scope 'full'" in answer["message"]
    entry = channel_post(channel, "<p>hijacked</p>")
    entry["value"][0]["id"] = queued
    status, answer = api(shared, "POST", f"{API}/posts", post_body(entry, type="draft", date=iso(86400)), key=agent)
    assert status == 403 and f"rewriting post {queued} (it is QUEUE) needs the scope 'full'" in answer["message"]
    assert view(shared, queued)["state"] == "QUEUE"


def test_scheduling_a_draft_awaiting_review_through_its_status_approves_it(shared, channel, agent):
    post_id = draft(shared, channel, agent)
    status, answer = api(shared, "PUT", f"{API}/posts/{post_id}/status", {"status": "schedule"})
    assert status == 200, answer
    post = view(shared, post_id)
    assert (post["state"], post["review"]) == ("QUEUE", None)


def test_the_scheduler_never_publishes_a_post_awaiting_review(shared, channel, agent, module_receiver):
    receiver = module_receiver
    held = draft(shared, channel, agent)
    with connect_database(shared.database) as db:  # as if something queued it without a person's approval
        db.execute("UPDATE post SET state = 'QUEUE', publish_date = ? WHERE id = ?", (iso(-5), held))
    before = len(receiver.published)
    status, answer = create(shared, channel, type="now", date=iso(), content="<p>due now</p>")
    assert status == 201, answer
    wait_for(lambda: view(shared, answer[0]["postId"])["state"], lambda state: state == "PUBLISHED")
    assert len(receiver.published) == before + 1  # the earlier-dated held post would have gone first
    assert view(shared, held)["state"] == "QUEUE"


def test_the_review_survives_a_restart(shared, channel, agent):
    waiting = draft(shared, channel, agent)
    rejected = draft(shared, channel, agent)
    assert api(shared, "POST", f"{API}/posts/{rejected}/reject", {"reason": "no"})[0] == 200
    shared.stop()
    shared.start()
    assert view(shared, waiting)["review"] == "review"
    assert (view(shared, rejected)["review"], view(shared, rejected)["reviewReason"]) == ("rejected", "no")


# --- approval bound to what the reviewer saw (If-Match / version) ----------------------------------------

def seen(server, post_id: str) -> str:
    """The post's ETag, as the reviewer's GET /posts/:id gave it (and its version in the body)."""
    status, headers, raw = server.request("GET", f"{API}/posts/{post_id}", {"Authorization": server.key})
    assert status == 200
    assert headers["etag"] == f'"{json.loads(raw)["version"]}"'
    return headers["etag"]


def approve(server, post_id: str, etag: str | None = None, body: dict | None = None) -> tuple:
    return api(server, "POST", f"{API}/posts/{post_id}/approve", body or {},
               headers={"If-Match": etag} if etag else None)


def test_approving_the_version_the_reviewer_saw_queues_it(shared, channel, agent):
    post_id = draft(shared, channel, agent)
    etag = seen(shared, post_id)
    assert seen(shared, post_id) == etag  # reading changes nothing
    status, post = approve(shared, post_id, etag)
    assert (status, post["state"], post["review"]) == (200, "QUEUE", None), post
    other = draft(shared, channel, agent)
    status, post = approve(shared, other, body={"version": view(shared, other)["version"]})
    assert (status, post["state"]) == (200, "QUEUE"), post


def test_an_edit_after_the_reviewer_looked_is_not_approved_and_the_409_says_so(shared, channel, agent):
    edits = [{"content": "<p>An edit the reviewer never saw</p>"}, {"date": iso(5 * 86400)},
             {"settings": {"title": "changed"}}]
    for edit in edits:
        post_id = draft(shared, channel, agent)
        etag = seen(shared, post_id)
        status, answer = api(shared, "PUT", f"{API}/posts/{post_id}", edit, key=agent)
        assert status == 200, answer
        for attempt in ({"etag": etag}, {"body": {"version": etag.strip('"')}}):
            status, answer = approve(shared, post_id, **attempt)
            assert status == 409, (edit, answer)
            assert "changed after you looked at it" in answer["message"] and "nothing was approved" in answer["message"]
            assert answer["version"] != etag.strip('"')
        post = view(shared, post_id)
        assert (post["state"], post["review"]) == ("DRAFT", "review")
        status, post = approve(shared, post_id, seen(shared, post_id))
        assert (status, post["state"]) == (200, "QUEUE"), post


def test_a_reply_added_or_removed_after_the_reviewer_looked_is_not_approved(shared, channel, agent):
    post_id = draft(shared, channel, agent)
    etag = seen(shared, post_id)
    entry = channel_post(channel, "<p>The post the reviewer saw, again</p>", "<p>A reply nobody saw</p>")
    entry["value"][0]["id"] = post_id
    status, answer = api(shared, "POST", f"{API}/posts", post_body(entry, type="draft", date=iso(86400)), key=agent)
    assert status == 201, answer
    status, answer = approve(shared, post_id, etag)
    assert status == 409 and "changed after you looked at it" in answer["message"], answer
    assert [part["content"] for part in view(shared, post_id)["thread"]] == ["<p>A reply nobody saw</p>"]
    etag = seen(shared, post_id)
    entry = channel_post(channel, "<p>The post the reviewer saw, again</p>")
    entry["value"][0]["id"] = post_id
    assert api(shared, "POST", f"{API}/posts", post_body(entry, type="draft", date=iso(86400)), key=agent)[0] == 201
    assert approve(shared, post_id, etag)[0] == 409
    assert view(shared, post_id)["state"] == "DRAFT"


def test_without_a_version_approve_works_as_postiz_s_and_a_malformed_one_is_a_400(shared, channel, agent):
    post_id = draft(shared, channel, agent)
    for etag, field in (("abc", "If-Match"), ('"a", "b"', "If-Match")):
        status, answer = approve(shared, post_id, etag)
        assert status == 400 and field in str(answer["message"]), answer
    for version in (7, "", "x" * 65):
        status, answer = approve(shared, post_id, body={"version": version})
        assert status == 400 and "version must be" in str(answer["message"]), answer
    status, answer = approve(shared, post_id, '"one"', {"version": "two"})
    assert status == 400 and "different versions" in answer["message"]
    status, post = approve(shared, post_id, "*")
    assert (status, post["state"]) == (200, "QUEUE")
