"""Webhook events (issue 26): post.created, post.updated, post.deleted and post.queued beside post.published and
post.failed, each subscribable per webhook (`events`): each change reaches a subscribed receiver once, signed as
today's events; an event not subscribed is not sent; webhooks made before keep published and failed only; another
organization's posts never reach this one's webhooks; a malformed `events` is refused naming it."""
from __future__ import annotations

import time

import pytest

from fakes.webhook import FakeWebhookReceiver, signature_ok
from support import API, Database, api, connect_database, iso

SECRET = "events-secret"
ALL_EVENTS = ["post.published", "post.failed", "post.created", "post.updated", "post.deleted", "post.queued"]


@pytest.fixture
def listener():
    fake = FakeWebhookReceiver(secret=SECRET)
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes):
    return start_server_with_fakes(env={"RUSTIZ_WEBHOOK_RETRY_WAITS": "0.3,0.3"})


@pytest.fixture
def world(server) -> dict:
    db = Database(server)
    other_org, other_key = db.organization()
    return {"db": db, "sky": db.channel("Sky", "bluesky"), "other_key": other_key,
            "theirs": db.channel("Theirs", "bluesky", organization_id=other_org)}


def register(server, listener, key: str | None = None, **fields) -> dict:
    status, webhook = api(server, "POST", f"{API}/webhooks",
                          {"name": "n8n", "url": listener.url + "/hook", "secret": SECRET, **fields}, key=key)
    assert status == 201, webhook
    return webhook


def create_body(channel_id: str, text: str = "<p>hello</p>", value_id: str | None = None) -> dict:
    value = {"content": text, "image": [], **({"id": value_id} if value_id else {})}
    return {"type": "schedule", "date": iso(3600), "shortLink": False, "tags": [], "allowDuplicate": True,
            "posts": [{"integration": {"id": channel_id}, "value": [value], "settings": {"__type": "bluesky"}}]}


def create(server, channel_id: str, key: str | None = None, **options) -> str:
    status, answer = api(server, "POST", f"{API}/posts", create_body(channel_id, **options), key=key)
    assert status == 201, answer
    return answer[0]["postId"]


def received(listener, count: int) -> list:
    listener.wait_for(lambda: len(listener.events) >= count)
    time.sleep(0.3)  # (nothing more comes)
    assert len(listener.events) == count, [event["event"] for event in listener.events]
    assert all(signature_ok(request, SECRET) for request in listener.requests)
    return listener.events


def test_each_change_is_delivered_once_signed_with_its_post(server, world, listener):
    webhook = register(server, listener)
    assert webhook["events"] == ALL_EVENTS  # (a new webhook without events gets them all)
    post_id = create(server, world["sky"])
    (created,) = received(listener, 1)
    assert created["event"] == "post.created" and created["organizationId"] == world["db"].organization_id
    assert created["channel"] == {"id": world["sky"], "name": "Sky", "provider": "bluesky"}
    assert created["post"]["id"] == post_id and created["post"]["state"] == "QUEUE"
    assert created["post"]["integration"] == created["channel"] and created["posts"] == [created["post"]]
    assert created["post"]["publishDate"] == api(server, "GET", f"{API}/posts/{post_id}")[1]["publishDate"]
    assert api(server, "PUT", f"{API}/posts/{post_id}", {"content": "<p>changed</p>"})[0] == 200
    assert api(server, "PUT", f"{API}/posts/{post_id}/settings", {"settings": {}})[0] == 200
    status, answer = api(server, "POST", f"{API}/posts", create_body(world["sky"], "<p>again</p>", value_id=post_id))
    assert status == 201 and answer[0]["postId"] == post_id  # (a value id rewrites the post: an update)
    assert api(server, "DELETE", f"{API}/posts/{post_id}")[0] == 200
    events = received(listener, 5)
    # (deliveries go out side by side: not necessarily in the order of the changes)
    assert sorted((event["event"], event["post"]["id"]) for event in events[1:]) == [
        ("post.deleted", post_id), ("post.updated", post_id), ("post.updated", post_id), ("post.updated", post_id)]
    assert next(event for event in events if event["event"] == "post.deleted")["post"]["deletedAt"] is not None
    deliveries = [request.headers["x-rustiz-delivery"] for request in listener.requests]
    assert len(set(deliveries)) == 5


def test_a_group_delete_is_one_deleted_event(server, world, listener):
    register(server, listener, events=["post.deleted"])
    post_id = create(server, world["sky"])
    group = api(server, "GET", f"{API}/posts/{post_id}")[1]["group"]
    assert api(server, "DELETE", f"{API}/posts/group/{group}")[0] == 200
    assert api(server, "DELETE", f"{API}/posts/group/{group}")[0] == 200  # (nothing left: no event)
    (deleted,) = received(listener, 1)
    assert deleted["event"] == "post.deleted" and deleted["post"]["id"] == post_id


def test_an_event_not_subscribed_is_not_sent_and_put_changes_the_subscription(server, world, listener):
    webhook = register(server, listener, events=["post.deleted", "post.deleted"])
    assert webhook["events"] == ["post.deleted"]
    post_id = create(server, world["sky"])
    assert api(server, "PUT", f"{API}/posts/{post_id}", {"content": "<p>changed</p>"})[0] == 200
    time.sleep(1)
    assert listener.events == []
    status, changed = api(server, "PUT", f"{API}/webhooks/{webhook['id']}", {"events": ["post.updated"]})
    assert status == 200 and changed["events"] == ["post.updated"] and changed["id"] == webhook["id"]
    assert api(server, "GET", f"{API}/webhooks")[1] == [changed]
    assert api(server, "PUT", f"{API}/posts/{post_id}", {"content": "<p>again</p>"})[0] == 200
    assert api(server, "DELETE", f"{API}/posts/{post_id}")[0] == 200
    assert [event["event"] for event in received(listener, 1)] == ["post.updated"]


def test_a_webhook_made_before_events_keeps_published_and_failed_only(server, world, listener):
    db = world["db"]
    with connect_database(server.database) as connection:  # (as the migration leaves a webhook made before)
        connection.execute("INSERT INTO webhook (id, organization_id, name, url, integrations, secret, created_at, "
                           "updated_at) VALUES ('old-hook', ?, 'old', ?, '[]', ?, ?, ?)",
                           (db.organization_id, listener.url + "/hook", SECRET, iso(0), iso(0)))
    assert [hook["events"] for hook in api(server, "GET", f"{API}/webhooks")[1]] == [["post.published",
                                                                                        "post.failed"]]
    post_id = create(server, world["sky"])
    assert api(server, "DELETE", f"{API}/posts/{post_id}")[0] == 200
    time.sleep(1)
    assert listener.events == []


def test_another_organization_s_posts_never_reach_this_one_s_webhooks(server, world, listener):
    register(server, listener)
    theirs = FakeWebhookReceiver(secret=SECRET)
    try:
        register(server, theirs, key=world["other_key"])
        post_id = create(server, world["theirs"], key=world["other_key"])
        assert api(server, "DELETE", f"{API}/posts/{post_id}", key=world["other_key"])[0] == 200
        # This organization cannot reach their post, and their webhook is not covered by its channels.
        assert api(server, "DELETE", f"{API}/posts/{post_id}")[0] == 404
        assert sorted(event["event"] for event in received(theirs, 2)) == ["post.created", "post.deleted"]
        own = create(server, world["sky"])
        assert [event["post"]["id"] for event in received(listener, 1)] == [own]
        assert len(theirs.events) == 2
    finally:
        theirs.close()


def test_malformed_events_and_webhooks_are_refused_naming_them(server, world, listener):
    for events, expected in ((["post.nope"], "'post.nope' is not an event"), ("post.created", "must be an array"),
                             ([1], "must be an array"), ([None], "must be an array"), ({}, "must be an array")):
        status, answer = api(server, "POST", f"{API}/webhooks", {"url": listener.url + "/hook", "events": events})
        assert status == 400 and any(message.startswith("events") and expected in message
                                     for message in answer["message"]), answer
    assert api(server, "GET", f"{API}/webhooks")[1] == []
    webhook = register(server, listener, events=[])
    assert webhook["events"] == []  # (subscribed to nothing: kept, silent)
    assert api(server, "PUT", f"{API}/webhooks/{webhook['id']}", {"events": ["post.gone"]})[0] == 400
    assert api(server, "PUT", f"{API}/webhooks/{webhook['id']}", {"url": "ftp://x"})[0] == 400
    assert api(server, "PUT", f"{API}/webhooks/{webhook['id']}", {"integrations": [world["theirs"]]})[0] == 400
    assert api(server, "PUT", f"{API}/webhooks/no-such-hook", {"events": []})[0] == 404
    assert api(server, "PUT", f"{API}/webhooks/{webhook['id']}", {"events": ["post.created"]},
               key=world["other_key"])[0] == 404
    assert api(server, "GET", f"{API}/webhooks")[1][0]["events"] == []
    create(server, world["sky"])
    time.sleep(1)
    assert listener.events == []


def test_a_duplicate_an_import_and_a_retry_are_told_too(server, world, listener):
    register(server, listener, events=["post.created", "post.updated"])
    post_id = create(server, world["sky"])
    status, copy = api(server, "POST", f"{API}/posts/{post_id}/duplicate")
    assert status in (200, 201), copy
    status, report = api(server, "POST", f"{API}/posts/import", [create_body(world["sky"], "<p>imported</p>")])
    assert status in (200, 201) and report["ok"], report
    imported = report["rows"][0]["posts"][0]["postId"]
    with connect_database(server.database) as db:
        db.execute("UPDATE post SET state = 'ERROR', error = 'refused' WHERE id = ?", (post_id,))
    assert api(server, "POST", f"{API}/posts/{post_id}/retry")[0] == 201
    assert sorted((event["event"], event["post"]["id"]) for event in received(listener, 4)) == sorted([
        ("post.created", post_id), ("post.created", copy["posts"][0]["id"]), ("post.created", imported),
        ("post.updated", post_id)])


def test_an_evergreen_copy_put_back_in_the_queue_is_one_queued_event(start_server_with_fakes, listener):
    import datetime
    server = start_server_with_fakes(env={"RUSTIZ_WEBHOOK_RETRY_WAITS": "0.3,0.3",
                                          "RUSTIZ_EVERGREEN_POLL_SECONDS": "0.2"})
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    register(server, listener, events=["post.queued"])
    every_day = {day: ["10:00"] for day in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                            "sunday")}
    assert api(server, "PUT", f"{API}/integrations/{channel}/schedule", every_day)[0] == 200
    body = {**create_body(channel, "<p>Evergreen tip</p>"), "type": "queue", "evergreen": True}
    del body["date"]
    status, made = api(server, "POST", f"{API}/posts", body)
    assert status == 201, made
    long_ago = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=40)).strftime(
        "%Y-%m-%dT%H:%M:%S.000Z")  # (it went out 40 days ago: past the 30-day cooldown)
    db.execute("UPDATE post SET state = 'PUBLISHED', publish_date = ? WHERE id = ?", long_ago, made[0]["postId"])
    db.execute("DELETE FROM queue_slot WHERE post_id = ?", made[0]["postId"])
    assert api(server, "PUT", f"{API}/integrations/{channel}/queue", {"evergreen": True})[0] == 200
    [event] = received(listener, 1)
    assert event["event"] == "post.queued" and event["post"]["id"] != made[0]["postId"]
    assert event["post"]["state"] == "QUEUE" and event["channel"]["id"] == channel
