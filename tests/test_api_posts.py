"""The posts routes, notifications, posting slots, analytics and channel deletion, over real sockets.

Channels, posts, tags and notifications are written straight into the server's database (as the
scheduler or a later feature would), then read and changed through the API."""
from __future__ import annotations

import datetime
import json
import re
import secrets

import pytest

from support import PREFIXES, Database, api, dict_rows, insertion_order


ISO_MS = "%Y-%m-%dT%H:%M:%S.000Z"


def nest(status: int, message) -> dict:
    error = {400: "Bad Request", 404: "Not Found", 409: "Conflict", 422: "Unprocessable Entity"}[status]
    return {"statusCode": status, "message": message, "error": error}


@pytest.fixture
def server(standby_server):
    """These tests write posts of every state and date straight into the database: the scheduler
    stands by, so none of them is published or failed under the test's feet."""
    return standby_server


@pytest.fixture
def world(server):
    return make_world(server)


def make_world(server) -> dict:
    """This server's organization with channels on two customers, and a second organization with its own key."""
    db = Database(server)
    acme = db.customer("Acme")
    other_org, other_key = db.organization()
    channels = {
        "x": db.channel("Acme on X", "x", picture="https://cdn.example/x.png", profile="acme", customer_id=acme),
        "bluesky": db.channel("Sky", "bluesky", profile="sky"),
        "other": db.channel("Theirs", "x", organization_id=other_org),
    }
    return {"db": db, "key": server.key, "acme": acme, "other_org": other_org, "other_key": other_key, **channels}


# --- GET /posts ------------------------------------------------------------------------------------

def test_list_posts_requires_both_dates_with_postiz_messages(server, world):
    both = ["startDate must be a valid ISO 8601 date string", "endDate must be a valid ISO 8601 date string"]
    for prefix in PREFIXES:
        assert api(server, "GET", prefix + "/posts") == (400, nest(400, both))
    assert api(server, "GET", "/public/v1/posts?startDate=2024-01-01T00:00:00Z") == (
        400, nest(400, both[1:]))
    assert api(server, "GET", "/public/v1/posts?startDate=yesterday&endDate=2024-02-30") == (
        400, nest(400, both))


def test_list_posts_answers_root_posts_in_postiz_shape(server, world):
    db = world["db"]
    root, reply = db.thread(world["x"], "2024-06-10T09:30:00.000Z", ["<p>Root</p>", "<p>Reply</p>"],
                            state="PUBLISHED", release_id="1865", release_url="https://x.com/acme/status/1865")
    launch = db.tag("launch")
    db.link_tag(root, launch)
    group = db.row("SELECT post_group FROM post WHERE id = ?", root)[0]
    expected = {
        "id": root, "content": "<p>Root</p>", "publishDate": "2024-06-10T09:30:00.000Z",
        "releaseURL": "https://x.com/acme/status/1865", "releaseId": "1865", "state": "PUBLISHED",
        "intervalInDays": None, "group": group, "creationMethod": "API",
        "settings": '{"__type":"x","who_can_reply_post":"everyone"}',
        "tags": [{"tag": {"id": launch, "name": "launch", "color": "#ff0000", "orgId": db.organization_id,
                          "deletedAt": None, "createdAt": db.row("SELECT created_at FROM tag")[0],
                          "updatedAt": db.row("SELECT updated_at FROM tag")[0]}}],
        "integration": {"id": world["x"], "providerIdentifier": "x", "name": "Acme on X",
                        "picture": "https://cdn.example/x.png"},
        "multiChannelGroup": None,  # (rustiz's: a row written before rustiz kept it)
        "inQueue": False, "evergreen": False,  # (rustiz's, issue 26: docs/queue.md)
    }
    for prefix in PREFIXES:
        # includeAttachments is what the postiz CLI adds; Postiz ignores it, so does rustiz.
        status, body = api(server, "GET", prefix + "/posts?startDate=2024-06-01T00:00:00.000Z"
                           "&endDate=2024-06-30T23:59:59.999Z&includeAttachments=true")
        assert (status, body) == (200, {"posts": [expected]})


def test_list_posts_window_is_inclusive_and_naive_dates_are_utc(server, world):
    db = world["db"]
    inside = db.post(world["x"], "2024-06-10T00:00:00.000Z")
    edge = db.post(world["x"], "2024-06-11T00:00:00.000Z")
    db.post(world["x"], "2024-06-11T00:00:00.001Z")  # one millisecond late
    db.post(world["x"], "2024-06-09T23:59:59.999Z")  # one millisecond early
    status, body = api(server, "GET", "/public/v1/posts?startDate=2024-06-10&endDate=2024-06-11T00:00:00")
    assert status == 200
    assert sorted(post["id"] for post in body["posts"]) == sorted([inside, edge])
    status, body = api(server, "GET", "/public/v1/posts?startDate=2024-06-10T02:00:00%2B02:00"
                       "&endDate=2024-06-10T02:00:00%2B02:00")
    assert [post["id"] for post in body["posts"]] == [inside]


def test_list_posts_leaves_out_deleted_posts_deleted_channels_and_other_organizations(server, world):
    db = world["db"]
    gone_channel = db.channel("Gone", "x", deleted=True)
    db.post(world["x"], "2024-06-10T10:00:00.000Z", deleted=True)
    db.post(gone_channel, "2024-06-10T10:00:00.000Z")
    db.post(world["other"], "2024-06-10T10:00:00.000Z", organization_id=world["other_org"])
    mine = db.post(world["bluesky"], "2024-06-10T10:00:00.000Z", state="PUBLISHING")
    window = "/public/v1/posts?startDate=2024-06-01T00:00:00Z&endDate=2024-07-01T00:00:00Z"
    status, body = api(server, "GET", window)
    assert [(post["id"], post["state"]) for post in body["posts"]] == [(mine, "QUEUE")]  # PUBLISHING shows as QUEUE
    status, body = api(server, "GET", window, key=world["other_key"])
    assert [post["integration"]["id"] for post in body["posts"]] == [world["other"]]


def test_list_posts_customer_filter(server, world):
    db = world["db"]
    acme_post = db.post(world["x"], "2024-06-10T10:00:00.000Z")
    db.post(world["bluesky"], "2024-06-10T10:00:00.000Z")
    window = "/public/v1/posts?startDate=2024-06-01T00:00:00Z&endDate=2024-07-01T00:00:00Z"
    assert [post["id"] for post in api(server, "GET", window + f"&customer={world['acme']}")[1][
        "posts"]] == [acme_post]
    assert api(server, "GET", window + "&customer=nobody") == (200, {"posts": []})
    assert len(api(server, "GET", window + "&customer=")[1]["posts"]) == 2


def test_list_posts_expands_recurring_posts_into_the_window(server, world):
    db = world["db"]
    weekly = db.post(world["x"], "2024-05-01T08:00:00.000Z", interval=7)
    db.post(world["x"], "2024-07-01T08:00:00.000Z", interval=1)  # starts after the window
    status, body = api(server, "GET", "/public/v1/posts?startDate=2024-06-01T00:00:00Z"
                       "&endDate=2024-06-20T08:00:00Z")
    assert status == 200
    assert [(post["id"], post["publishDate"], post["actualDate"]) for post in body["posts"]] == [
        (weekly, "2024-06-05T08:00:00.000Z", "2024-05-01T08:00:00.000Z"),
        (weekly, "2024-06-12T08:00:00.000Z", "2024-05-01T08:00:00.000Z"),
        (weekly, "2024-06-19T08:00:00.000Z", "2024-05-01T08:00:00.000Z"),
    ]
    assert body["posts"][0]["intervalInDays"] == 7


# --- GET /posts/:id --------------------------------------------------------------------------------

def test_get_post_shows_thread_state_error_and_release(server, world):
    db = world["db"]
    root, reply = db.thread(world["x"], "2024-06-10T09:30:00.000Z", ["<p>One</p>", "<p>Two</p>"],
                            state="ERROR", error="X answered 403: duplicate content",
                            image='[{"id":"m1","path":"https://h/a.png"}]')
    for prefix in PREFIXES:
        status, body = api(server, "GET", f"{prefix}/posts/{root}")
        assert status == 200
        assert body["id"] == root and body["state"] == "ERROR" and body["parentPostId"] is None
        assert body["error"] == "X answered 403: duplicate content"
        assert body["image"] == [{"id": "m1", "path": "https://h/a.png"}]
        assert body["settings"] == {"__type": "x", "who_can_reply_post": "everyone"}
        assert body["integration"] == {"id": world["x"], "providerIdentifier": "x", "name": "Acme on X",
                                       "picture": "https://cdn.example/x.png"}
        assert [(part["id"], part["content"], part["parentPostId"]) for part in body["thread"]] == [
            (reply, "<p>Two</p>", root)]
    db.execute("UPDATE post SET state = 'PUBLISHING', error = NULL")
    assert api(server, "GET", f"/public/v1/posts/{root}")[1]["state"] == "PUBLISHING"
    db.execute("UPDATE post SET state = 'PUBLISHED', release_url = 'https://x.com/s/1', release_id = '1'")
    body = api(server, "GET", f"/public/v1/posts/{root}")[1]
    assert (body["releaseId"], body["releaseURL"]) == ("1", "https://x.com/s/1")


def test_unknown_and_foreign_post_ids_are_404_on_every_post_route(server, world):
    db = world["db"]
    theirs = db.post(world["other"], "2024-06-10T10:00:00.000Z", organization_id=world["other_org"],
                     state="ERROR", release_id="missing")
    deleted = db.post(world["x"], "2024-06-10T10:00:00.000Z", deleted=True)
    for post_id in ("nope", theirs, deleted):
        for prefix in PREFIXES:
            for method, path, body in (("GET", "", None), ("DELETE", "", None), ("GET", "/missing", None),
                                       ("PUT", "/release-id", {"releaseId": "1"}), ("POST", "/retry", None),
                                       ("PUT", "", {"content": "x"}), ("PUT", "/settings", {"settings": {}})):
                assert api(server, method, f"{prefix}/posts/{post_id}{path}", body) == (
                    404, nest(404, "Post not found")), (method, path)
            assert api(server, "GET", f"{prefix}/analytics/post/{post_id}") == (
                404, nest(404, "Post not found"))
            # Postiz answers 400 for an unknown post on the status route; so does rustiz.
            assert api(server, "PUT", f"{prefix}/posts/{post_id}/status", {"status": "draft"}) == (
                400, nest(400, "Post not found"))
    assert db.row("SELECT state, deleted_at FROM post WHERE id = ?", theirs) == ("ERROR", None)


# --- DELETE /posts/:id and /posts/group/:group --------------------------------------------------------

def test_delete_post_deletes_its_group_only(server, world):
    db = world["db"]
    root, reply = db.thread(world["x"], "2024-06-10T10:00:00.000Z", ["a", "b"])
    sibling = db.post(world["bluesky"], "2024-06-10T10:00:00.000Z")  # same request in Postiz, own group
    assert api(server, "DELETE", f"/public/v1/posts/{reply}") == (200, {"error": True})
    assert db.row("SELECT count(*) FROM post WHERE deleted_at IS NOT NULL")[0] == 2
    assert db.row("SELECT deleted_at FROM post WHERE id = ?", sibling)[0] is None
    assert api(server, "DELETE", f"/api/public/v1/posts/{root}") == (404, nest(404, "Post not found"))
    assert api(server, "GET", f"/public/v1/posts/{root}") == (404, nest(404, "Post not found"))


def test_delete_group_always_answers_error_true_and_stays_in_its_organization(server, world):
    db = world["db"]
    group = "shared-" + secrets.token_hex(4)
    mine = db.post(world["x"], "2024-06-10T10:00:00.000Z", group=group)
    theirs = db.post(world["other"], "2024-06-10T10:00:00.000Z", group=group, organization_id=world["other_org"])
    for prefix in PREFIXES:
        assert api(server, "DELETE", f"{prefix}/posts/group/no-such-group") == (200, {"error": True})
    assert api(server, "DELETE", f"/public/v1/posts/group/{group}") == (200, {"error": True})
    assert db.row("SELECT deleted_at IS NOT NULL FROM post WHERE id = ?", mine)[0] == 1
    assert db.row("SELECT deleted_at FROM post WHERE id = ?", theirs)[0] is None


# --- PUT /posts/:id/status ------------------------------------------------------------------------------

def test_status_switches_the_whole_thread_between_draft_and_queue(server, world):
    db = world["db"]
    root, reply = db.thread(world["x"], "2030-01-01T10:00:00.000Z", ["a", "b"])
    for prefix, status, state in ((PREFIXES[0], "draft", "DRAFT"), (PREFIXES[1], "schedule", "QUEUE")):
        assert api(server, "PUT", f"{prefix}/posts/{root}/status", {"status": status}) == (
            200, {"id": root, "state": state})
        assert {row["state"] for row in post_rows(db)} == {state}


def test_status_refuses_bad_values_and_published_posts(server, world):
    db = world["db"]
    post = db.post(world["x"], "2024-06-10T10:00:00.000Z", state="PUBLISHED")
    message = ["status must be one of the following values: draft, schedule"]
    for body in ({}, {"status": "now"}, {"status": None}, [1]):
        assert api(server, "PUT", f"/public/v1/posts/{post}/status", body) == (400, nest(400, message))
    status, body = api(server, "PUT", f"/public/v1/posts/{post}/status", {"status": "schedule"})
    assert status == 400 and "is PUBLISHED" in body["message"]
    assert db.row("SELECT state FROM post")[0] == "PUBLISHED"


# --- release ids: PUT /posts/:id/release-id, GET /posts/:id/missing ------------------------------------------

def test_release_id_links_a_missing_release_and_returns_the_post_row(server, world):
    db = world["db"]
    post = db.post(world["x"], "2024-06-10T10:00:00.000Z", state="PUBLISHED", release_id="missing")
    assert api(server, "GET", f"/public/v1/analytics/post/{post}") == (200, {"missing": True})
    assert api(server, "GET", f"/api/public/v1/posts/{post}/missing") == (200, [])
    status, row = api(server, "PUT", f"/api/public/v1/posts/{post}/release-id", {"releaseId": "777"})
    assert status == 200
    assert row["id"] == post and row["releaseId"] == "777" and row["state"] == "PUBLISHED"
    assert set(row) == {"id", "state", "publishDate", "organizationId", "integrationId", "content", "delay", "group",
                        "title", "description", "parentPostId", "releaseId", "releaseURL", "settings", "image",
                        "creationMethod", "intervalInDays", "error", "createdAt", "updatedAt", "deletedAt",
                        "submittedForOrderId", "submittedForOrganizationId", "approvedSubmitForOrder",
                        "lastMessageId", "multiChannelGroup"}  # (the last one rustiz's: see docs/api.md)
    assert isinstance(row["settings"], str)
    status, body = api(server, "PUT", f"/public/v1/posts/{post}/release-id", {"releaseId": "8"})
    assert status == 400 and 'releaseId is "777"' in body["message"]
    assert api(server, "PUT", f"/public/v1/posts/{post}/release-id", {"releaseId": 8}) == (
        400, nest(400, ["releaseId must be a string", "releaseId should not be empty"]))
    status, body = api(server, "GET", f"/public/v1/analytics/post/{post}")  # published now, on X without its app
    assert status == 409 and "X_API_KEY and X_API_SECRET" in body["message"]


# --- POST /posts/:id/retry ------------------------------------------------------------------------------------

def test_retry_puts_failed_parts_back_in_the_queue(server, world):
    db = world["db"]
    root, reply = db.thread(world["x"], "2024-06-10T10:00:00.000Z", ["a", "b"], state="ERROR", error="timeout")
    status, body = api(server, "POST", f"/public/v1/posts/{reply}/retry")
    assert status == 201
    assert (body["id"], body["state"], body["error"]) == (reply, "QUEUE", None)
    assert [(row["state"], row["error"]) for row in post_rows(db)] == [("QUEUE", None)] * 2
    status, body = api(server, "POST", f"/api/public/v1/posts/{root}/retry")
    assert status == 409 and body["error"] == "Conflict"
    assert body["message"] == (f"Post {root} is QUEUE, and nothing in its thread failed; "
                               "only a post in ERROR can be retried")


# --- GET /notifications ---------------------------------------------------------------------------------------

def test_notifications_are_paged_newest_first(server, world):
    db = world["db"]
    base = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    ids = [db.notification(f"<p>n{index}</p>", (base + datetime.timedelta(minutes=index)).strftime(ISO_MS))
           for index in range(205)]
    db.notification("not yours", base.strftime(ISO_MS), organization_id=world["other_org"])
    newest_first = list(reversed(ids))
    status, body = api(server, "GET", "/public/v1/notifications")
    assert status == 200
    assert (body["total"], body["page"], body["limit"], body["hasMore"]) == (205, 0, 100, True)
    assert [item["id"] for item in body["notifications"]] == newest_first[:100]
    assert body["notifications"][0] == {"id": ids[-1], "content": "<p>n204</p>", "link": None,
                                        "createdAt": "2026-01-01T03:24:00.000Z", "postId": None}
    status, body = api(server, "GET", "/api/public/v1/notifications?page=2")
    assert ([item["id"] for item in body["notifications"]], body["page"], body["hasMore"]) == (
        newest_first[200:], 2, False)
    assert api(server, "GET", "/public/v1/notifications?page=3")[1]["notifications"] == []
    assert api(server, "GET", "/public/v1/notifications?page=1000000")[1]["notifications"] == []
    for too_far in ("1000001", "9" * 30, "9" * 5000):  # thirty 9s were a 500 with orjson; 5,000 digits, int()'s limit
        assert api(server, "GET", f"/public/v1/notifications?page={too_far}") == (400, nest(
            400, "page must be a whole number from 0 to 1000000 (pages of 100 notifications, the newest first)"))
    for bad in ("abc", "-1", "1.5", ""):
        assert api(server, "GET", f"/public/v1/notifications?page={bad}") == (
            400, nest(400, "Validation failed (numeric string is expected)"))
    assert api(server, "GET", "/public/v1/notifications", key=world["other_key"])[1]["total"] == 1


# --- GET /find-slot/:id -----------------------------------------------------------------------------------------

def expected_slot(minute: int, zone: datetime.tzinfo, skip_days: int = 0) -> tuple:
    now = datetime.datetime.now(datetime.timezone.utc)
    local_midnight = datetime.datetime.combine(now.astimezone(zone).date(), datetime.time())
    for day in range(3):
        local = local_midnight + datetime.timedelta(days=day, minutes=minute)
        slot = local.replace(tzinfo=zone).astimezone(datetime.timezone.utc)
        if slot > now:
            local += datetime.timedelta(days=skip_days)
            slot = local.replace(tzinfo=zone).astimezone(datetime.timezone.utc)
            return slot, local


def test_find_slot_skips_queued_posts_of_the_channel(server, world):
    db = world["db"]
    now = datetime.datetime.now(datetime.timezone.utc)
    minute = (now.hour * 60 + now.minute + 180) % 1440  # hours away from any minute boundary race
    db.execute("UPDATE integration SET posting_times = ? WHERE id = ?", json.dumps([{"time": minute}]), world["x"])
    slot, local = expected_slot(minute, datetime.timezone.utc)
    for prefix in PREFIXES:
        assert api(server, "GET", f"{prefix}/find-slot/{world['x']}") == (200, {
            "date": slot.strftime("%Y-%m-%dT%H:%M:00"), "timezone": "UTC",
            "localDate": local.strftime("%Y-%m-%dT%H:%M:00")})
    # A draft, a deleted post and another channel's post do not take the slot; a queued one does.
    db.post(world["x"], slot.strftime(ISO_MS), state="DRAFT")
    db.post(world["x"], slot.strftime(ISO_MS), deleted=True)
    db.post(world["bluesky"], slot.strftime(ISO_MS))
    assert api(server, "GET", f"/public/v1/find-slot/{world['x']}")[1]["date"] == slot.strftime(
        "%Y-%m-%dT%H:%M:00")
    db.post(world["x"], slot.strftime("%Y-%m-%dT%H:%M:30.000Z"))
    next_day, _ = expected_slot(minute, datetime.timezone.utc, skip_days=1)
    assert api(server, "GET", f"/public/v1/find-slot/{world['x']}")[1]["date"] == next_day.strftime(
        "%Y-%m-%dT%H:%M:00")


def test_find_slot_reads_posting_times_in_the_organizations_timezone(server, world):
    from zoneinfo import ZoneInfo
    db = world["db"]
    db.execute("UPDATE organization SET timezone = 'Asia/Tokyo' WHERE id = ?", db.organization_id)
    now = datetime.datetime.now(ZoneInfo("Asia/Tokyo"))
    minute = (now.hour * 60 + now.minute + 180) % 1440
    db.execute("UPDATE integration SET posting_times = ? WHERE id = ?", json.dumps([{"time": minute}]), world["x"])
    slot, local = expected_slot(minute, ZoneInfo("Asia/Tokyo"))
    assert api(server, "GET", f"/public/v1/find-slot/{world['x']}") == (200, {
        "date": slot.strftime("%Y-%m-%dT%H:%M:00"), "timezone": "Asia/Tokyo",
        "localDate": local.strftime("%Y-%m-%dT%H:%M:00")})
    assert slot.hour * 60 + slot.minute == (minute - 9 * 60) % 1440


def test_find_slot_refuses_unknown_foreign_disabled_and_timeless_channels(server, world):
    db = world["db"]
    gone = db.channel("Gone", "x", deleted=True)
    for channel_id in ("nope", world["other"], gone):
        for prefix in PREFIXES:
            assert api(server, "GET", f"{prefix}/find-slot/{channel_id}") == (
                404, nest(404, "Integration not found"))
    off = db.channel("Off", "x", disabled=True)
    assert api(server, "GET", f"/public/v1/find-slot/{off}") == (400, nest(
        400, "Channel Off is disabled; enable it before looking for a slot on it"))
    db.execute("UPDATE integration SET posting_times = '[]' WHERE id = ?", world["x"])
    assert api(server, "GET", f"/public/v1/find-slot/{world['x']}") == (400, nest(
        400, "Channel Acme on X has no posting times, so it has no free slot"))


# --- analytics ------------------------------------------------------------------------------------------------

def test_analytics_are_empty_lists_where_the_platform_has_none_and_404_for_unknown_ids(server, world):
    hook = world["db"].channel("Hook", "webhook")
    post = world["db"].post(hook, "2024-06-10T10:00:00.000Z", state="PUBLISHED", release_id="1")
    for prefix in PREFIXES:
        assert api(server, "GET", f"{prefix}/analytics/{hook}?date=30") == (200, [])
        assert api(server, "GET", f"{prefix}/analytics/post/{post}") == (200, [])
        for channel_id in ("nope", world["other"]):
            assert api(server, "GET", f"{prefix}/analytics/{channel_id}?date=7") == (
                404, nest(404, "Integration not found"))


# --- DELETE /integrations/:id --------------------------------------------------------------------------------

def test_delete_channel_soft_deletes_it_and_its_posts_and_returns_its_row(server, world):
    db = world["db"]
    post = db.post(world["x"], "2030-01-01T10:00:00.000Z")
    other_channel_post = db.post(world["bluesky"], "2030-01-01T10:00:00.000Z")
    status, row = api(server, "DELETE", f"/api/public/v1/integrations/{world['x']}")
    assert status == 200
    assert set(row) == {"id", "internalId", "organizationId", "name", "picture", "providerIdentifier", "type",
                        "disabled", "tokenExpiration", "profile", "deletedAt", "createdAt", "updatedAt",
                        "inBetweenSteps", "refreshNeeded", "postingTimes", "customInstanceDetails", "customerId",
                        "rootInternalId", "additionalSettings"}  # never the token
    assert (row["id"], row["providerIdentifier"], row["customerId"]) == (world["x"], "x", world["acme"])
    assert row["deletedAt"] is not None and row["disabled"] is False
    assert db.row("SELECT deleted_at IS NOT NULL FROM post WHERE id = ?", post)[0] == 1
    assert db.row("SELECT deleted_at FROM post WHERE id = ?", other_channel_post)[0] is None
    assert world["x"] not in {channel["id"] for channel in api(server, "GET", "/public/v1/integrations")[1]}
    assert api(server, "GET", f"/public/v1/posts/{post}") == (404, nest(404, "Post not found"))
    for channel_id in (world["x"], "nope", world["other"]):
        assert api(server, "DELETE", f"/public/v1/integrations/{channel_id}") == (
            404, nest(404, "Integration not found"))
    assert db.row("SELECT deleted_at FROM integration WHERE id = ?", world["other"])[0] is None


# --- POST /posts -----------------------------------------------------------------------------------------------

FUTURE = "2030-09-01T10:00:00.000Z"


def create_body(*posts, type: str = "schedule", date: str = FUTURE, **extra) -> dict:
    return {"type": type, "date": date, "shortLink": False, "tags": [], "posts": list(posts), **extra}


def channel_post(channel_id: str, *contents: str, settings: dict | None = None, **extra) -> dict:
    return {"integration": {"id": channel_id}, "value": [{"content": content, "image": []} for content in contents],
            "settings": settings if settings is not None else {"__type": "bluesky"}, **extra}


def x_settings() -> dict:
    return {"__type": "x", "who_can_reply_post": "everyone"}


def post_rows(db, where: str = "1 = 1", *parameters) -> list:
    return dict_rows(db.path, f"SELECT * FROM post WHERE {where} ORDER BY created_at, {insertion_order(db.path)}",
                     *parameters)


def test_create_post_answers_201_with_one_entry_per_channel(server, world):
    db = world["db"]
    for prefix in PREFIXES:
        body = create_body(channel_post(world["bluesky"], "<p>Hello world</p>", settings={"__type": "wrong"}),
                           channel_post(world["x"], "Tweet", settings=x_settings()),
                           allowDuplicate=True)  # the same post under each prefix
        status, headers, raw = server.request("POST", prefix + "/posts", {"Authorization": world["key"]},
                                              json.dumps(body).encode())
        assert status == 201, raw
        answer = json.loads(raw)
        assert [entry["integration"] for entry in answer] == [world["bluesky"], world["x"]]
        assert headers["x-ratelimit-limit"] == "90"
        sky, x = (post_rows(db, "id = ?", entry["postId"])[0] for entry in answer)
        assert len(sky["id"]) == 25 and sky["id"].startswith("c")
        assert (sky["state"], sky["publish_date"], sky["content"], sky["image"], sky["creation_method"]) == (
            "QUEUE", FUTURE, "<p>Hello world</p>", "[]", "API")
        assert json.loads(sky["settings"]) == {"__type": "bluesky"}  # the client's __type is overwritten
        assert sky["post_group"] != x["post_group"]  # one group per channel, as Postiz
        assert json.loads(x["settings"])["__type"] == "x"


def test_create_post_chains_thread_replies_and_lists_only_the_root(server, world):
    db = world["db"]
    body = create_body(channel_post(world["x"], "One", "Two", "Three", settings=x_settings()),
                       date="2030-09-01T12:00:00+02:00")
    body["posts"][0]["value"][1]["delay"] = 5
    status, answer = api(server, "POST", "/public/v1/posts", body)
    assert status == 201
    rows = post_rows(db)
    assert [(row["content"], row["delay"], row["publish_date"]) for row in rows] == [
        ("One", 0, FUTURE), ("Two", 5, FUTURE), ("Three", 0, FUTURE)]
    assert [row["parent_post_id"] for row in rows] == [None, rows[0]["id"], rows[1]["id"]]
    assert len({row["post_group"] for row in rows}) == 1 and answer[0]["postId"] == rows[0]["id"]
    listed = api(server, "GET", "/public/v1/posts?startDate=2030-09-01&endDate=2030-09-02")[1]
    assert [post["id"] for post in listed["posts"]] == [rows[0]["id"]]
    view = api(server, "GET", f"/public/v1/posts/{rows[0]['id']}")[1]
    assert [part["content"] for part in view["thread"]] == ["Two", "Three"]


def test_create_post_types_now_and_draft(server, world):
    db = world["db"]
    before = datetime.datetime.now(datetime.timezone.utc).replace(second=0, microsecond=0)
    status, answer = api(server, "POST", "/public/v1/posts",
                         create_body(channel_post(world["bluesky"], "now!"), type="now", date="2020-01-01"))
    after = datetime.datetime.now(datetime.timezone.utc).replace(second=0, microsecond=0)
    row = post_rows(db, "id = ?", answer[0]["postId"])[0]
    assert row["state"] == "QUEUE"
    assert row["publish_date"] in {before.strftime(ISO_MS), after.strftime(ISO_MS)}
    status, answer = api(server, "POST", "/public/v1/posts",
                         create_body(channel_post(world["bluesky"], "later"), type="draft"))
    assert status == 201 and post_rows(db, "id = ?", answer[0]["postId"])[0]["state"] == "DRAFT"


def test_create_post_replays_the_official_cli_body(server, world):
    """postiz-agent: creationMethod CLI, settings left out, shortLink true (no shortener configured)."""
    db = world["db"]
    body = {"type": "schedule", "date": "2030-09-01T10:00:00.000Z", "shortLink": True, "tags": [],
            "creationMethod": "CLI",
            "posts": [{"integration": {"id": world["bluesky"]},
                       "value": [{"content": "See https://example.com/a-long-link", "image": []}]}]}
    status, answer = api(server, "POST", "/api/public/v1/posts", body)
    assert status == 201
    row = post_rows(db, "id = ?", answer[0]["postId"])[0]
    assert (row["creation_method"], json.loads(row["settings"])) == ("CLI", {"__type": "bluesky"})
    assert "https://example.com/a-long-link" in row["content"]  # no shortener: links stay as written


def test_create_post_replays_the_node_sdk_body_with_media_and_tags(server, world):
    db = world["db"]
    launch = db.tag("Launch")
    db.tag("Launch", organization_id=world["other_org"])  # same name, another organization: not linked
    body = create_body(channel_post(world["x"], "Tweet 1", settings=x_settings()), type="now",
                       tags=[{"value": "launch", "label": "Launch"}, {"value": "nope", "label": "Unknown"}])
    body["posts"][0]["value"][0]["image"] = [{"id": "u1", "path": "https://h/uploads/a.png"}]
    status, answer = api(server, "POST", "/public/v1/posts", body)
    assert status == 201
    row = post_rows(db, "id = ?", answer[0]["postId"])[0]
    assert json.loads(row["image"]) == [{"id": "u1", "path": "https://h/uploads/a.png"}]
    assert db.row("SELECT COUNT(*), MIN(tag_id) FROM tag_post") == (1, launch)
    view = api(server, "GET", f"/public/v1/posts/{row['id']}")[1]
    assert [tag["tag"]["name"] for tag in view["tags"]] == ["Launch"]


def test_create_post_keeps_postiz_validation_errors(server, world):
    db = world["db"]
    missing_image = create_body(channel_post(world["bluesky"], "hi"))
    del missing_image["posts"][0]["value"][0]["image"]
    status, body = api(server, "POST", "/public/v1/posts", missing_image)
    assert status == 400 and body["error"] == "Bad Request" and isinstance(body["message"], list)
    assert any(message.startswith("posts.0.value.0.image") for message in body["message"])
    for unknown in ("nope", world["other"]):
        assert api(server, "POST", "/public/v1/posts", create_body(channel_post(unknown, "hi"))) == (
            400, nest(400, f"Integration with id {unknown} not found"))
    # X's who_can_reply_post is checked even for drafts.
    status, body = api(server, "POST", "/public/v1/posts",
                       create_body(channel_post(world["x"], "hi", settings={}), type="draft"))
    assert status == 400
    assert "posts.0.settings.who_can_reply_post must be one of the following values: everyone, following, " \
           "mentionedUsers, subscribers, verified" in body["message"]
    status, body = api(server, "POST", "/public/v1/posts",
                       create_body(channel_post(world["x"], "y" * 300, settings=x_settings())))
    assert (status, body) == (400, {"statusCode": 400, "provider": "x", "name": "Acme on X",
                                    "message": "post is too long, please fix it"})
    assert post_rows(db) == []


def test_create_post_with_a_group_replaces_that_group(server, world):
    db = world["db"]
    first = api(server, "POST", "/public/v1/posts", create_body(channel_post(world["bluesky"], "v1")))[1]
    old_group = post_rows(db, "id = ?", first[0]["postId"])[0]["post_group"]
    second = api(server, "POST", "/public/v1/posts",
                 create_body(channel_post(world["bluesky"], "v2", group=old_group)))[1]
    rows = {row["id"]: row for row in post_rows(db)}
    assert rows[first[0]["postId"]]["deleted_at"] is not None
    assert rows[second[0]["postId"]]["deleted_at"] is None
    assert rows[second[0]["postId"]]["post_group"] != old_group  # the new posts still get a fresh group


def test_create_post_with_value_ids_updates_in_place(server, world):
    db = world["db"]
    draft = api(server, "POST", "/public/v1/posts",
                create_body(channel_post(world["bluesky"], "v1", "reply"), type="draft"))[1][0]["postId"]
    reply_id = post_rows(db, "parent_post_id = ?", draft)[0]["id"]
    body = create_body(channel_post(world["bluesky"], "v2"), type="update")
    body["posts"][0]["value"][0]["id"] = draft
    status, answer = api(server, "POST", "/public/v1/posts", body)
    assert (status, answer) == (201, [{"postId": draft, "integration": world["bluesky"]}])
    row = post_rows(db, "id = ?", draft)[0]
    assert (row["content"], row["state"]) == ("v2", "DRAFT")  # update keeps the state
    # The thread was re-described without its reply: the reply is gone.
    assert post_rows(db, "id = ?", reply_id)[0]["deleted_at"] is not None
    # An id the organization does not have is ignored: a new post is made.
    foreign = db.post(world["other"], FUTURE, organization_id=world["other_org"])
    body["posts"][0]["value"][0]["id"] = foreign
    created = api(server, "POST", "/public/v1/posts", body)[1][0]["postId"]
    assert created != foreign and post_rows(db, "id = ?", foreign)[0]["content"] == "<p>Hello</p>"


def test_create_post_guards_against_publishing_twice(server, world):
    db = world["db"]
    published = db.post(world["bluesky"], "2024-06-10T09:30:00.000Z", state="PUBLISHED", release_id="r1",
                        settings='{"__type":"bluesky"}')
    body = create_body(channel_post(world["bluesky"], "again"))
    body["posts"][0]["value"][0]["id"] = published
    message = ("This post was already published on 2024-06-10 09:30 UTC. Saving it this way would publish it again "
               "to bluesky. To edit without republishing, use type 'update'. To intentionally publish again, "
               "pass republish: true.")
    for kind in ("schedule", "now"):
        body["type"] = kind
        assert api(server, "POST", "/public/v1/posts", body) == (400, nest(400, message))
    assert post_rows(db, "id = ?", published)[0]["content"] == "<p>Hello</p>"
    body["type"] = "update"
    assert api(server, "POST", "/public/v1/posts", body)[0] == 201
    assert post_rows(db, "id = ?", published)[0]["state"] == "PUBLISHED"
    body.update(type="schedule", republish=True)
    assert api(server, "POST", "/public/v1/posts", body)[0] == 201
    assert post_rows(db, "id = ?", published)[0]["state"] == "QUEUE"


def test_create_post_refuses_to_rewrite_a_post_being_published(server, world):
    db = world["db"]
    busy = db.post(world["bluesky"], FUTURE, state="PUBLISHING", settings='{"__type":"bluesky"}')
    body = create_body(channel_post(world["bluesky"], "edit"), type="update")
    body["posts"][0]["value"][0]["id"] = busy
    status, answer = api(server, "POST", "/public/v1/posts", body)
    assert status == 409 and f"Post {busy} is being published right now" in answer["message"]


def test_create_post_recurring_interval(server, world):
    body = create_body(channel_post(world["bluesky"], "weekly"), date="2030-09-01T10:00:00Z", inter=7)
    post_id = api(server, "POST", "/public/v1/posts", body)[1][0]["postId"]
    listed = api(server, "GET", "/public/v1/posts?startDate=2030-09-01&endDate=2030-09-20")[1]
    assert [(post["id"], post["publishDate"], post["intervalInDays"]) for post in listed["posts"]] == [
        (post_id, "2030-09-01T10:00:00.000Z", 7), (post_id, "2030-09-08T10:00:00.000Z", 7),
        (post_id, "2030-09-15T10:00:00.000Z", 7)]


# --- Idempotency-Key ---------------------------------------------------------------------------------------------

def test_idempotency_key_replays_the_first_answer_and_creates_nothing(server, world):
    db = world["db"]
    body = json.dumps(create_body(channel_post(world["bluesky"], "once"))).encode()
    headers = {"Authorization": world["key"], "Idempotency-Key": "run-42"}
    first = server.request("POST", "/public/v1/posts", headers, body)
    again = server.request("POST", "/api/public/v1/posts", headers, body)
    assert first[0] == again[0] == 201 and first[2] == again[2]
    assert again[1]["idempotent-replayed"] == "true"
    assert len(post_rows(db)) == 1
    other = json.dumps(create_body(channel_post(world["bluesky"], "twice"))).encode()
    status, _, raw = server.request("POST", "/public/v1/posts", headers, other)
    assert status == 422
    assert json.loads(raw)["message"].startswith("Idempotency-Key 'run-42' was already used in the last 24 hours "
                                                 "for a different request body")
    # Another organization's identical key is its own.
    other_channel_body = json.dumps(create_body(channel_post(world["other"], "x", settings=x_settings()))).encode()
    assert server.request("POST", "/public/v1/posts", {**headers, "Authorization": world["other_key"]},
                          other_channel_body)[0] == 201
    assert len(post_rows(db)) == 2


def test_idempotency_key_replays_refusals_and_expires_after_a_day(server, world):
    db = world["db"]
    headers = {"Authorization": world["key"], "Idempotency-Key": "bad-1"}
    body = json.dumps(create_body(channel_post("nope", "x"))).encode()
    first = server.request("POST", "/public/v1/posts", headers, body)
    assert first[0] == 400 and server.request("POST", "/public/v1/posts", headers, body)[::2] == first[::2]
    assert json.loads(first[2]) == nest(400, "Integration with id nope not found")
    good = json.dumps(create_body(channel_post(world["bluesky"], "ok"), allowDuplicate=True)).encode()
    assert server.request("POST", "/public/v1/posts", {**headers, "Idempotency-Key": "day-old"}, good)[0] == 201
    db.execute("UPDATE idempotency_key SET created_at = created_at - 86401")
    assert server.request("POST", "/public/v1/posts", {**headers, "Idempotency-Key": "day-old"}, good)[0] == 201
    assert len(post_rows(db)) == 2
    status, _, answer = server.request("POST", "/public/v1/posts", {**headers, "Idempotency-Key": "k" * 256}, good)
    assert (status, json.loads(answer)) == (400, nest(400, "Idempotency-Key must be between 1 and 255 characters long"))


# --- PUT /posts/:id/settings --------------------------------------------------------------------------------------

def test_settings_route_merges_into_the_main_post(server, world):
    db = world["db"]
    root = api(server, "POST", "/public/v1/posts",
               create_body(channel_post(world["x"], "a", "b", settings=x_settings())))[1][0]["postId"]
    for prefix in PREFIXES:
        assert api(server, "PUT", f"{prefix}/posts/{root}/settings",
                   {"settings": {"who_can_reply_post": "following", "__type": "linkedin"}}) == (
            200, {"postId": root, "publishDate": "2030-09-01T10:00:00"})
    assert {row["settings"] for row in post_rows(db)} == {'{"__type":"x","who_can_reply_post":"following"}'}
    status, body = api(server, "PUT", f"/public/v1/posts/{root}/settings",
                       {"settings": {"who_can_reply_post": "anyone"}})
    assert (status, body["message"]) == (400, "Acme on X: who_can_reply_post must be one of the following values: "
                                              "everyone, following, mentionedUsers, subscribers, verified")
    reply = post_rows(db, "parent_post_id = ?", root)[0]["id"]
    assert api(server, "PUT", f"/public/v1/posts/{reply}/settings", {"settings": {}}) == (
        400, nest(400, "This id belongs to a comment, pass the id of the main post"))
    assert api(server, "PUT", f"/public/v1/posts/{root}/settings", {}) == (400, nest(
        400, ["settings should not be null or undefined", "settings must be an object"]))
    assert api(server, "PUT", f"/public/v1/posts/{root}/settings", {"settings": "x"}) == (
        400, nest(400, ["settings must be an object"]))
    assert api(server, "PUT", "/public/v1/posts/nope/settings", {"settings": {}}) == (
        404, nest(404, "Post not found"))


def test_settings_route_refuses_published_and_overdue_posts(server, world):
    db = world["db"]
    published = db.post(world["x"], FUTURE, state="PUBLISHED")
    overdue = db.post(world["x"], "2020-01-01T00:00:00.000Z")
    assert api(server, "PUT", f"/public/v1/posts/{published}/settings", {"settings": {}}) == (
        400, nest(400, "Only scheduled posts that were not published yet (or drafts) can be updated"))
    assert api(server, "PUT", f"/public/v1/posts/{overdue}/settings", {"settings": {}}) == (
        400, nest(400, "The publish time of this post already passed, it cannot be updated"))


# --- PUT /posts/:id ---------------------------------------------------------------------------------------------

def test_edit_post_changes_content_media_date_and_settings(server, world):
    db = world["db"]
    launch = db.tag("Launch")
    body = create_body(channel_post(world["x"], "old", "reply", settings=x_settings()), tags=[
        {"value": "l", "label": "Launch"}], creationMethod="CLI")
    root = api(server, "POST", "/public/v1/posts", body)[1][0]["postId"]
    group = post_rows(db, "id = ?", root)[0]["post_group"]
    for prefix in PREFIXES:
        status, view = api(server, "PUT", f"{prefix}/posts/{root}", {
           "content": "<p>new</p>", "image": [{"id": "m", "path": "https://h/a.jpg"}],
           "date": "2030-10-01T08:00:00Z", "settings": {"who_can_reply_post": "verified"}})
        assert status == 200, view
        assert (view["id"], view["group"], view["content"], view["publishDate"], view["state"]) == (
            root, group, "<p>new</p>", "2030-10-01T08:00:00.000Z", "QUEUE")
        assert view["image"] == [{"id": "m", "path": "https://h/a.jpg"}]
        assert view["settings"] == {"__type": "x", "who_can_reply_post": "verified"}
        assert [part["content"] for part in view["thread"]] == ["reply"]
        assert [tag["tag"]["id"] for tag in view["tags"]] == [launch] and view["creationMethod"] == "CLI"
    assert {row["publish_date"] for row in post_rows(db)} == {"2030-10-01T08:00:00.000Z"}
    assert len(post_rows(db)) == 2


def test_edit_post_validates_and_refuses_published_posts(server, world):
    db = world["db"]
    root = api(server, "POST", "/public/v1/posts",
               create_body(channel_post(world["x"], "ok", settings=x_settings())))[1][0]["postId"]
    assert api(server, "PUT", f"/public/v1/posts/{root}", {
       "content": 5, "date": "soon", "title": "t"}) == (400, nest(400, [
            "property title should not exist", "content must be a string",
            "date must be a valid ISO 8601 date string"]))
    assert api(server, "PUT", f"/public/v1/posts/{root}", {"content": "y" * 300}) == (400, {
        "statusCode": 400, "provider": "x", "name": "Acme on X", "message": "post is too long, please fix it"})
    assert post_rows(db, "id = ?", root)[0]["content"] == "ok"
    db.execute("UPDATE post SET state = 'PUBLISHED'")
    status, body = api(server, "PUT", f"/public/v1/posts/{root}", {"content": "late"})
    assert status == 409 and body["message"].startswith(f"Post {root} is PUBLISHED, so it can no longer be edited")
    assert api(server, "PUT", "/public/v1/posts/nope", {"content": "x"}) == (
        404, nest(404, "Post not found"))
    assert api(server, "PUT", f"/public/v1/posts/{root}", {"content": "x"}, key=world["other_key"]) == (
        404, nest(404, "Post not found"))


def test_idempotency_key_holds_for_simultaneous_retries_across_workers(start_server):
    from concurrent.futures import ThreadPoolExecutor
    server = start_server(args=("--workers", "2"))
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    body = json.dumps(create_body(channel_post(channel, "exactly once"))).encode()
    headers = {"Authorization": server.key, "Idempotency-Key": "burst"}
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: server.request("POST", "/public/v1/posts", headers, body), range(16)))
    assert {(status, raw) for status, _, raw in answers} == {(201, answers[0][2])}
    assert len(post_rows(db)) == 1


def test_a_draft_entering_the_queue_must_pass_the_publishing_rules(server, world):
    draft = api(server, "POST", "/public/v1/posts",
                create_body(channel_post(world["x"], "y" * 300, settings=x_settings()), type="draft"))[1][0]["postId"]
    assert api(server, "PUT", f"/public/v1/posts/{draft}/status", {"status": "schedule"}) == (400, {
        "statusCode": 400, "provider": "x", "name": "Acme on X", "message": "post is too long, please fix it"})
    assert post_rows(world["db"], "id = ?", draft)[0]["state"] == "DRAFT"


def test_bodies_the_server_could_not_store_or_answer_are_400s(server, world):
    """Both were 500s, found while fuzzing the API by hand. Settings nested deeper than orjson
    writes were stored, and every later GET of the post failed; a lone surrogate broke SQLite."""
    deep = {"__type": "bluesky", "nested": json.loads("[" * 300 + "]" * 300)}
    status, answer = api(server, "POST", "/public/v1/posts",
                         create_body(channel_post(world["bluesky"], "Hello", settings=deep)))
    assert status == 400 and "levels deep" in answer["message"], answer
    status, answer = api(server, "POST", "/public/v1/posts",
                         b'{"posts": [{"integration": {"id": "\\ud800"}}]}')
    assert status == 400 and "lone UTF-16 surrogate" in answer["message"], answer
    assert post_rows(world["db"]) == []


# --- every number and date has a range (issue 10) ---------------------------------------------------------------

def refused_fields(server, key: str, body) -> list:
    """The validation messages of a POST /posts that must be refused with Nest's 400 array."""
    status, answer = api(server, "POST", "/public/v1/posts", body, key=key)
    assert status == 400 and answer["error"] == "Bad Request" and isinstance(answer["message"], list), answer
    return answer["message"]


def test_create_post_refuses_intervals_and_delays_out_of_range(server, world):
    """inter 3,000,000 was stored (then every listing with it was a 500, and its post re-armed in the year
    10240); inter 1e308 or 10**30 and delay 1e308 were 500s."""
    inter_rule = ("inter must be the days between repetitions (0: the post does not repeat): a whole number from 0 "
                  "to 3650")
    for inter in (3000000, 1e308, 10**30, -1, 1.5, 3651, "10000"):
        assert refused_fields(server, world["key"], create_body(channel_post(world["bluesky"], "hi"), inter=inter)) \
            == [inter_rule], inter
    assert refused_fields(server, world["key"], create_body(channel_post(world["bluesky"], "hi"), inter="soon")) == [
        "inter must be a number conforming to the specified constraints"]
    delay_rule = ("posts.0.value.1.delay must be the minutes this part waits after the one before it: a whole number "
                  "from 0 to 10080")
    for delay in (1e308, 10**30, -5, 10081, 2.5):
        body = create_body(channel_post(world["x"], "one", "two", settings=x_settings()))
        body["posts"][0]["value"][1]["delay"] = delay
        assert refused_fields(server, world["key"], body) == [delay_rule], delay
    assert post_rows(world["db"]) == []
    # The bounds themselves are fine; 0 (what Postiz's editor sends to cancel a repetition) means none.
    body = create_body(channel_post(world["x"], "one", "two", settings=x_settings()), inter=3650)
    body["posts"][0]["value"][1]["delay"] = 10080
    assert api(server, "POST", "/public/v1/posts", body)[0] == 201
    assert api(server, "POST", "/public/v1/posts",
               create_body(channel_post(world["bluesky"], "once"), inter=0))[0] == 201
    assert [(row["interval_in_days"], row["delay"]) for row in post_rows(world["db"])] == [
        (3650, 0), (3650, 10080), (None, 0)]


def test_ids_sent_as_numbers_in_provider_settings_have_ranges(server, world):
    db = world["db"]
    wordpress, devto = db.channel("Blog", "wordpress"), db.channel("Dev", "devto")
    article = {"__type": "wordpress", "title": "Hello", "type": "post"}
    for categories in ([10**30], [1e308], [0], [1.5]):
        assert refused_fields(server, world["key"], create_body(channel_post(
            wordpress, "<p>Hi</p>", settings={**article, "categories": categories}))) == [
            "posts.0.settings.each value in categories must be a WordPress term id: a whole number from 1 to "
            "9007199254740991"], categories
    tags = {"__type": "devto", "title": "Hello", "tags": [{"value": 10**30, "label": "python"}]}
    assert refused_fields(server, world["key"], create_body(channel_post(devto, "<p>Hi</p>", settings=tags))) == [
        "posts.0.settings.tags.0.value must be a Dev.to tag id: a whole number from 0 to 9007199254740991"]
    assert api(server, "POST", "/public/v1/posts", create_body(channel_post(
       wordpress, "<p>Hi</p>", settings={**article, "categories": [1, 9007199254740991], "tags": [7]})))[0] == 201


def test_listings_survive_a_stored_interval_beyond_the_calendar(server, world):
    """A post stored with inter 3,000,000 before the range existed: listed once, at its date."""
    db = world["db"]
    post_id = db.post(world["bluesky"], FUTURE, interval=3000000, settings='{"__type":"bluesky"}')
    status, body = api(server, "GET", "/public/v1/posts?startDate=2030-01-01&endDate=9999-12-31T23:59:59Z")
    assert status == 200 and [(post["id"], post["publishDate"]) for post in body["posts"]] == [(post_id, FUTURE)]


@pytest.mark.parametrize("date", [
    "2030-09-01T10:00:00+99:99", "2030-09-01T10:00:00+24:00", "2030-09-01T10:00:00-23:60", "2030-09-01T10:00+1",
    "٢٠٣٠-09-01T10:00:00Z", "２０３０-09-01T10:00:00Z", "2030-09-01T1٠:00:00Z", "2030-02-30T10:00:00Z",
    "0000-01-01T00:00:00Z", "0001-01-01T00:30:00+01:00", "9999-12-31T23:59:59-00:01"])
def test_dates_with_impossible_offsets_foreign_digits_or_beyond_the_calendar_are_400s(server, world, date):
    message = "date must be a valid ISO 8601 date string"
    assert message in refused_fields(server, world["key"], create_body(channel_post(world["bluesky"], "hi"),
                                                                       date=date))
    from urllib.parse import quote
    assert api(server, "GET", f"/public/v1/posts?startDate={quote(date)}&endDate=2031-01-01") == (
        400, nest(400, ["startDate must be a valid ISO 8601 date string"]))
    root = api(server, "POST", "/public/v1/posts",
               create_body(channel_post(world["bluesky"], "hi"), type="draft"))[1][0]["postId"]
    assert api(server, "PUT", f"/public/v1/posts/{root}", {"date": date}) == (400, nest(400, [message]))


def test_real_offsets_and_the_calendar_s_first_and_last_days_are_dates(server, world):
    for date, stored in (("2030-09-01T23:30:00+14:00", "2030-09-01T09:30:00.000Z"),
                         ("2030-09-01T10:00:00-12:00", "2030-09-01T22:00:00.000Z"),
                         ("2030-09-01T15:45:00+0545", "2030-09-01T10:00:00.000Z")):
        answer = api(server, "POST", "/public/v1/posts", create_body(channel_post(
           world["bluesky"], "hi"), date=date, allowDuplicate=True))[1]
        assert post_rows(world["db"], "id = ?", answer[0]["postId"])[0]["publish_date"] == stored
    window = "startDate=0001-01-01T00:00:00Z&endDate=9999-12-31T23:59:59.999Z"
    assert len(api(server, "GET", f"/public/v1/posts?{window}")[1]["posts"]) == 3
    # Years before 1000 are written with four digits, so the window's text still sorts as time.
    assert len(api(server, "GET", "/public/v1/posts?startDate=0999-01-01&endDate=2031-01-01")[1]["posts"]) == 3


# --- recurring posts: the organization's local time, and bounded listings (issue 10) -------------------------------

def listed_dates(server, key: str, start: str, end: str) -> list:
    status, body = api(server, "GET", f"/public/v1/posts?startDate={start}&endDate={end}", key=key)
    assert status == 200, body
    return [post["publishDate"] for post in body["posts"]]


def daily_post(server, world, date: str) -> str:
    return api(server, "POST", "/public/v1/posts",
               create_body(channel_post(world["bluesky"], "daily"), date=date, inter=1))[1][0]["postId"]


def test_a_daily_post_keeps_its_local_time_across_both_daylight_saving_changes(server, world):
    """09:00 in Paris stays 09:00 (08:00 UTC in winter, 07:00 in summer); before, occurrences stepped by
    86,400 s and moved to 10:00 after the March change (Postiz's issue #1145)."""
    assert api(server, "PUT", "/public/v1/organization", {"timezone": "Europe/Paris"})[0] == 200
    daily_post(server, world, "2030-03-29T09:00:00+01:00")
    assert listed_dates(server, world["key"], "2030-03-29", "2030-04-01T23:00:00Z") == [
        "2030-03-29T08:00:00.000Z", "2030-03-30T08:00:00.000Z", "2030-03-31T07:00:00.000Z",
        "2030-04-01T07:00:00.000Z"]
    assert listed_dates(server, world["key"], "2030-10-26", "2030-10-28T23:00:00Z") == [
        "2030-10-26T07:00:00.000Z", "2030-10-27T08:00:00.000Z", "2030-10-28T08:00:00.000Z"]


def test_a_local_time_the_clocks_skip_goes_out_at_the_first_minute_after_and_a_doubled_one_once(server, world):
    assert api(server, "PUT", "/public/v1/organization", {"timezone": "America/New_York"})[0] == 200
    daily_post(server, world, "2030-03-08T02:30:00-05:00")
    # 2030-03-10 02:30 does not exist in New York (02:00 -> 03:00): 03:00 EDT; then 02:30 EDT again.
    assert listed_dates(server, world["key"], "2030-03-08", "2030-03-11T12:00:00Z") == [
        "2030-03-08T07:30:00.000Z", "2030-03-09T07:30:00.000Z", "2030-03-10T07:00:00.000Z",
        "2030-03-11T06:30:00.000Z"]
    # 2030-11-03 01:30 happens twice (EDT, then EST): once, the first.
    world["db"].execute("DELETE FROM post")
    daily_post(server, world, "2030-11-02T01:30:00-04:00")
    assert listed_dates(server, world["key"], "2030-11-02", "2030-11-04T12:00:00Z") == [
        "2030-11-02T05:30:00.000Z", "2030-11-03T05:30:00.000Z", "2030-11-04T06:30:00.000Z"]


def test_a_listing_refuses_more_occurrences_than_one_answer_holds_and_says_how_to_narrow_it(server, world):
    """A daily draft over 0001-9999 made a 1.26 GB answer and held the server for 27 s."""
    api(server, "POST", "/public/v1/posts",
        create_body(channel_post(world["bluesky"], "draft"), type="draft", inter=1))
    for end in ("2085-09-01", "9999-12-31"):  # about 20,000 occurrences, and 2.9 million
        status, body = api(server, "GET", f"/public/v1/posts?startDate=0001-01-01&endDate={end}")
        assert status == 400, len(body.get("posts", []))
        assert "more than one answer lists: at most 10000 occurrences and 8 MiB of them. To see them all, ask " \
               "for a shorter window: at most 9999 days at a time" in body["message"], body
    message = api(server, "GET", "/public/v1/posts?startDate=2030-01-01&endDate=2085-09-01")[1][
        "message"]
    assert message.startswith("Between startDate 2030-01-01T00:00:00.000Z and endDate 2085-09-01T00:00:00.000Z "
                              "recurring posts repeat 20089 times (about 11 MiB)"), message
    start = datetime.datetime(2030, 9, 1, tzinfo=datetime.timezone.utc)
    end = (start + datetime.timedelta(days=9999)).strftime(ISO_MS)
    assert len(listed_dates(server, world["key"], "2030-09-01", end)) == 9999
    # Posts that do not repeat are listed over any window, as Postiz clients list whole years.
    world["db"].execute("UPDATE post SET interval_in_days = NULL")
    assert len(listed_dates(server, world["key"], "0001-01-01", "9999-12-31")) == 1


def test_a_listing_refuses_occurrences_that_would_weigh_more_than_its_budget(server, world):
    long_draft = "<p>" + "words " * 10000 + "</p>"  # 60 kB: a draft skips the length rules
    api(server, "POST", "/public/v1/posts",
        create_body(channel_post(world["bluesky"], long_draft), type="draft", inter=1))
    status, body = api(server, "GET", "/public/v1/posts?startDate=2030-09-01&endDate=2032-09-01")
    weight = re.search(r"recurring posts repeat 731 times \(about (\d+) MiB\)", body["message"])
    assert status == 400 and weight and int(weight[1]) > 8, body
    days = int(re.search(r"at most (\d+) days at a time", body["message"])[1])
    assert 100 < days < 731
    start = datetime.datetime(2030, 9, 1, tzinfo=datetime.timezone.utc)
    assert len(listed_dates(server, world["key"], "2030-09-01",
                            (start + datetime.timedelta(days=days)).strftime(ISO_MS))) == days


# --- dates in the past (issue 10) ----------------------------------------------------------------------------------

def iso_from_now(seconds: float) -> str:
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def test_a_post_dated_before_the_grace_period_is_refused_and_a_recent_one_goes_out_at_once(server, world):
    """Such a post used to be accepted, then failed as "Missed: rustiz was not running then"."""
    db = world["db"]
    stale = "2020-01-01T00:00:00.000Z"
    message = (f"date {stale} is in the past, more than the 6.0 h grace period (PUBLISH_GRACE) ago, so the post "
               'would never be sent: give a later date, type "now" to publish at once, or type "draft" to keep it '
               "unscheduled")
    for kind in ("schedule", "update"):
        assert api(server, "POST", "/public/v1/posts", create_body(
           channel_post(world["bluesky"], "late"), type=kind, date=stale)) == (400, nest(400, message))
    assert post_rows(db) == []
    # Within PUBLISH_GRACE (a client sending the current time, a clock a little behind): queued, due at once.
    recent = iso_from_now(-3600)
    created = api(server, "POST", "/public/v1/posts", create_body(
       channel_post(world["bluesky"], "now-ish"), date=recent))[1][0]["postId"]
    assert (post_rows(db, "id = ?", created)[0]["state"], post_rows(db, "id = ?", created)[0]["publish_date"]) == (
        "QUEUE", recent)
    # Drafts may keep a past date, until they are scheduled.
    draft = api(server, "POST", "/public/v1/posts", create_body(
       channel_post(world["bluesky"], "someday"), type="draft", date=stale))[1][0]["postId"]
    assert api(server, "PUT", f"/public/v1/posts/{draft}/status", {"status": "schedule"}) == (
        400, nest(400, f"the date of post {draft}, {stale} is in the past, more than the 6.0 h grace period "
                       f"(PUBLISH_GRACE) ago, so the post would never be sent: give it a later date first "
                       f'(PUT /posts/{draft} {{"date": "..."}}), then schedule it'))
    assert post_rows(db, "id = ?", draft)[0]["state"] == "DRAFT"
    assert api(server, "PUT", f"/public/v1/posts/{draft}", {"date": FUTURE})[0] == 200
    assert api(server, "PUT", f"/public/v1/posts/{draft}/status", {"status": "schedule"})[0] == 200
    # Moving a queued post into the past is refused the same way.
    assert api(server, "PUT", f"/public/v1/posts/{draft}", {"date": stale}) == (400, nest(400, message))
    assert post_rows(db, "id = ?", draft)[0]["publish_date"] == FUTURE


@pytest.mark.parametrize("method, path", [("GET", "/posts/%00"), ("DELETE", "/posts/a%00b"), ("DELETE", "/webhooks/%00"),
                                          ("GET", "/integrations/%00/picture"), ("PUT", "/tags/%00")])
def test_an_id_holding_a_nul_is_a_path_nothing_is_served_at(server, method, path):
    status, body = api(server, method, "/public/v1" + path, {} if method == "PUT" else None)
    assert status == 404 and body["message"] == f"Cannot {method} /public/v1{path}", body
