"""RSS/Atom autopost (rustiz_features/autopost.py), on both backends: a feed's first fetch only marks its items seen;
each later new item becomes one post per channel, exactly once across a restart and several processes; 304 answers
bring nothing; hostile documents (a DTD, entities, 50 MB, a web page) are refused and GET says why; a failing feed
is paused with one notification; previews; and every refusal of the routes names its field, never a 5xx."""
from __future__ import annotations

import json
import random
import time

import pytest

from conftest import LOCAL_FAKES
from feed_server import FeedServer
from support import (API, Database, api, dict_rows, mcp_tool_call, new_key, notifications, two_organizations, wait_for,
                     webhook_channel)

QUICK = {**LOCAL_FAKES, "RUSTIZ_RETRY_BASE": "0.2", "RUSTIZ_AUTOPOST_POLL_SECONDS": "3600"}  # (the tests fetch now)
LOOPING = {**QUICK, "RUSTIZ_AUTOPOST_POLL_SECONDS": "0.2"}


@pytest.fixture
def feeds():
    server = FeedServer()
    yield server
    server.close()


@pytest.fixture
def server(start_server):
    return start_server(env=QUICK)


@pytest.fixture
def channels(server):
    db = Database(server)
    return [db.channel("Sky one", "bluesky"), db.channel("Sky two", "bluesky")]


def add_feed(server, **body) -> dict:
    """A new feed, by default paused (the loop leaves it alone: the test fetches it now itself, which works on
    a paused feed too) and in review mode (its posts are drafts)."""
    status, answer = api(server, "POST", f"{API}/autopost", {"mode": "review", "paused": True, **body})
    assert status == 201, answer
    return answer


def fetch(server, feed_id: str) -> dict:
    status, answer = api(server, "POST", f"{API}/autopost/{feed_id}/fetch")
    assert status == 200, answer
    return answer


def listed(server) -> dict:
    status, answer = api(server, "GET", f"{API}/autopost")
    assert status == 200, answer
    return {feed["id"]: feed for feed in answer["feeds"]}


def feed_posts(server) -> list:
    return dict_rows(server.database, "SELECT id, integration_id, content, image, state, review, multi_channel_group "
                                      "FROM post WHERE deleted_at IS NULL ORDER BY content, integration_id")


def make_due(server, feed_id: str) -> None:
    """The loop fetches the feed at once (its next fetch was due long ago)."""
    Database(server).execute("UPDATE autopost_feed SET next_fetch_at = 0 WHERE id = ?", feed_id)


def forget_validators(server, feed_id: str) -> None:
    """The next fetch reads the whole document again (no ETag, no Last-Modified sent: no 304)."""
    Database(server).execute("UPDATE autopost_feed SET etag = NULL, last_modified = NULL WHERE id = ?", feed_id)


NEW_ITEM = {"guid": "new-3", "title": "New three", "description": "Fresh <b>news</b>", "image": "https://example.com/3.png"}


def test_first_fetch_marks_items_seen_and_each_new_item_becomes_one_post_per_channel(server, channels, feeds):
    feed = add_feed(server, url=feeds.url("/changing"), integrations=channels, includeImage=True,
                    template="{{title}}\n{{description}} {{url}}")
    assert feed["state"] == "paused" and feed["intervalMinutes"] == 60 and feed["mode"] == "review"
    first = fetch(server, feed["id"])
    assert first["error"] is None and first["result"].startswith("first fetch: 2 items marked as seen")
    assert feed_posts(server) == [] and first["feed"]["lastResult"] == first["result"]
    again = fetch(server, feed["id"])  # unchanged: the server answers 304 to the ETag rustiz sends
    assert "304" in again["result"] and feeds.fetches("/changing")[-1][1] == '"v1"'
    feeds.change([NEW_ITEM, *feeds.items])
    posted = fetch(server, feed["id"])
    assert posted["result"] == "1 new item: 1 posted", posted
    rows = feed_posts(server)
    assert [row["integration_id"] for row in rows] == sorted(channels)
    assert {row["content"] for row in rows} == {"<p>New three</p><p>Fresh news https://example.com/new-3</p>"}
    assert {row["state"] for row in rows} == {"DRAFT"} and {row["review"] for row in rows} == {"review"}
    assert len({row["multi_channel_group"] for row in rows}) == 1  # one post group over both channels
    assert json.loads(rows[0]["image"])[0]["path"] == "https://example.com/3.png"
    assert "304" in fetch(server, feed["id"])["result"] and len(feed_posts(server)) == 2
    forget_validators(server, feed["id"])  # the whole document read again: nothing is new
    assert fetch(server, feed["id"])["result"] == "3 items, none new" and len(feed_posts(server)) == 2
    recent = listed(server)[feed["id"]]["recent"]
    assert [(item["title"], item["outcome"]) for item in recent] == [("New three", "posted")]
    status, resumed = api(server, "PUT", f"{API}/autopost/{feed['id']}", {"paused": False})
    assert status == 200 and resumed["state"] == "active" and resumed["nextFetchAt"]


def test_mode_now_publishes_at_once_and_an_og_image_is_taken_when_the_item_has_none(start_server, feeds, receiver):
    server = start_server(env=QUICK)
    channel = webhook_channel(server, receiver, "Shop")
    feed = add_feed(server, url=feeds.url("/changing"), integrations=[channel], mode="now", includeImage=True)
    fetch(server, feed["id"])
    feeds.change([{"guid": "a", "title": "With a page", "link": feeds.url("/article/a")}, *feeds.items])
    assert fetch(server, feed["id"])["result"] == "1 new item: 1 posted"
    (post,) = feed_posts(server)
    assert json.loads(post["image"])[0]["path"] == feeds.url("/og.png")
    delivered = wait_for(lambda: receiver.published, bool)
    assert "With a page" in json.dumps(delivered[0]), delivered


def test_the_loop_fetches_due_feeds_exactly_once_across_a_restart_and_two_processes(start_server, feeds, tmp_path):
    first = start_server(env=LOOPING, data_dir=tmp_path / "shared")
    db = Database(first)
    channel = db.channel("Sky", "bluesky")
    feed = add_feed(first, url=feeds.url("/changing"), integrations=[channel], intervalMinutes=1, paused=False)
    assert feed["state"] == "new"
    wait_for(lambda: listed(first)[feed["id"]]["state"], lambda state: state == "active")  # the loop's first fetch
    assert feed_posts(first) == []
    first.stop()
    feeds.change([NEW_ITEM, *feeds.items])
    again = start_server(env=LOOPING, data_dir=tmp_path / "shared", args=("--workers", "2"))
    make_due(again, feed["id"])
    wait_for(lambda: feed_posts(again), lambda rows: len(rows) == 1)
    for _ in range(3):  # due again and again, the document read whole each time: nothing posted twice
        forget_validators(again, feed["id"])
        make_due(again, feed["id"])
        wait_for(lambda: listed(again)[feed["id"]]["lastResult"], lambda result: result == "3 items, none new")
    time.sleep(0.5)
    assert len(feed_posts(again)) == 1
    seen = dict_rows(again.database, "SELECT outcome, count(*) AS n FROM autopost_item GROUP BY outcome ORDER BY outcome")
    assert [(row["outcome"], row["n"]) for row in seen] == [("posted", 1), ("seen", 2)]


@pytest.mark.parametrize("path, why", [
    ("/laughs", "refused: it has a DTD"), ("/xxe", "refused: it has a DTD"),
    ("/undeclared", "refused: it is not well-formed XML (undefined entity"),
    ("/huge", "refused: the feed is larger than 5 MB"), ("/html", "refused: it is a web page, not a feed"),
    ("/failing", "the feed answered HTTP 500")])
def test_hostile_or_broken_feeds_are_refused_and_the_listing_says_why(server, channels, feeds, path, why):
    feed = add_feed(server, url=feeds.url(path), integrations=channels[:1])
    started = time.monotonic()
    answer = fetch(server, feed["id"])
    assert time.monotonic() - started < 15
    assert answer["error"].startswith(why), answer
    shown = listed(server)[feed["id"]]
    assert shown["lastError"].startswith(why) and shown["failures"] == 1 and shown["lastResult"] == "failed"
    assert feed_posts(server) == []


def test_a_feed_failing_five_times_in_a_row_is_paused_with_one_notification(start_server, feeds):
    server = start_server(env=LOOPING)
    channel = Database(server).channel("Sky", "bluesky")
    feed = add_feed(server, url=feeds.url("/failing"), integrations=[channel], paused=False)

    def due_again() -> dict:
        make_due(server, feed["id"])
        time.sleep(0.1)
        return listed(server)[feed["id"]]
    wait_for(due_again, lambda shown: shown["paused"])
    assert len(feeds.fetches("/failing")) == 5
    for _ in range(2):  # fetch now works on a paused feed too: still one notification
        fetch(server, feed["id"])
    shown = listed(server)[feed["id"]]
    assert shown["state"] == "paused" and shown["paused"] and shown["nextFetchAt"] is None
    assert shown["pausedReason"] == "5 fetches in a row failed"
    told = [text for text in notifications(server) if text.startswith("Autopost paused the feed")]
    assert len(told) == 1 and "HTTP 500" in told[0] and '"paused": false' in told[0]
    status, resumed = api(server, "PUT", f"{API}/autopost/{feed['id']}", {"paused": False})
    assert status == 200 and resumed["state"] == "failing" and resumed["failures"] == 0 and not resumed["paused"]
    assert resumed["pausedReason"] is None


def test_a_duplicate_item_is_recorded_with_its_reason_and_not_tried_again(start_server, feeds, receiver):
    server = start_server(env=QUICK)
    channel = webhook_channel(server, receiver, "Shop")
    feed = add_feed(server, url=feeds.url("/changing"), integrations=[channel], mode="now")
    fetch(server, feed["id"])
    status, answer = api(server, "POST", f"{API}/posts", {"type": "now", "date": "2026-01-01T00:00:00Z", "shortLink": False,
                                                     "tags": [], "posts": [{"integration": {"id": channel}, "value": [
                                                         {"content": "<p>Twice https://example.com/t</p>", "image": []}],
                                                         "settings": {}}]})
    assert status == 201, answer
    feeds.change([{"guid": "t", "title": "Twice"}, *feeds.items])
    assert fetch(server, feed["id"])["result"] == "1 new item: 1 duplicate"
    forget_validators(server, feed["id"])
    assert fetch(server, feed["id"])["result"] == "3 items, none new"
    (item,) = listed(server)[feed["id"]]["recent"]
    assert item["outcome"] == "duplicate" and item["reason"].startswith("Duplicate post: the same text")


@pytest.mark.parametrize("path, title, image", [("/rss2", "Spring sale & more", "https://shop.example.com/spring.jpg"),
                                                ("/rss1", "First post", None),
                                                ("/atom", "Release 2.0", "https://atom.example.net/r2.webp")])
def test_a_preview_shows_the_newest_items_post_without_saving_anything(server, feeds, path, title, image):
    status, answer = api(server, "POST", f"{API}/autopost/preview", {
        "url": feeds.url(path), "template": "{{title}} by {{author}}: {{description}} {{url}}", "includeImage": True})
    assert status == 200, answer
    assert answer["text"].startswith(f"{title} by ") and answer["image"] == image and answer["item"]["title"] == title
    assert listed(server) == {}
    status, refused = api(server, "POST", f"{API}/autopost/preview", {"url": feeds.url("/laughs")})
    assert status == 400 and "DTD" in refused["message"]


def test_refusals_name_their_field_and_other_organizations_ids_are_unknown(server, feeds):
    other = two_organizations(server)
    db = other["db"]
    mine, disabled = other["sky"], db.channel("Off", "bluesky", disabled=True)
    good = {"url": feeds.url("/rss2"), "integrations": [mine]}
    cases = [({**good, "url": "ftp://example.com/feed"}, "url must be"), ({**good, "url": "x" * 3000}, "url must be"),
             ({**good, "url": 5}, "url must be"), ({"integrations": [mine]}, "url is required"),
             ({**good, "integrations": []}, "integrations must be"),
             ({**good, "integrations": [other["theirs"]]}, "is not a channel of this organization"),
             ({**good, "integrations": ["nope"]}, "is not a channel"), ({**good, "integrations": [disabled]}, "disabled"),
             ({**good, "template": ""}, "template must be"), ({**good, "template": "x" * 2001}, "template must be"),
             ({**good, "template": "{{title}} {{link}}"}, "unknown placeholder {{link}}"),
             ({**good, "mode": "later"}, "mode must be"), ({**good, "intervalMinutes": 0}, "intervalMinutes"),
             ({**good, "intervalMinutes": 10081}, "intervalMinutes"), ({**good, "intervalMinutes": "5"}, "intervalMinutes"),
             ({**good, "intervalMinutes": 1.5}, "intervalMinutes"), ({**good, "includeImage": "yes"}, "includeImage"),
             ({**good, "extra": 1}, "property extra should not exist")]
    for body, words in cases:
        status, answer = api(server, "POST", f"{API}/autopost", body)
        assert status == 400 and any(words in message for message in answer["message"]), (body, answer)
    status, answer = api(server, "POST", f"{API}/autopost", [1])
    assert status == 400
    feed = add_feed(server, **good)
    status, answer = api(server, "PUT", f"{API}/autopost/{feed['id']}", {"intervalMinutes": 10080, "mode": "now"})
    assert status == 200 and answer["intervalMinutes"] == 10080 and answer["mode"] == "now"
    for forged in ("x" * 3000, "../autopost", "%00", feed["id"].upper()):  # forged ids: unknown, never a 5xx
        status, answer = api(server, "POST", f"{API}/autopost/{forged}/fetch")
        assert status in (404, 400), (forged, status, answer)
    for method, path in (("PUT", f"/autopost/{feed['id']}"), ("DELETE", f"/autopost/{feed['id']}"),
                         ("POST", f"/autopost/{feed['id']}/fetch")):  # another organization's feed: unknown
        status, answer = api(server, method, API + path, {"paused": True} if method == "PUT" else None,
                             key=other["other_key"])
        assert status == 404 and answer["message"] == "Feed not found", (method, path)
    status, answer = api(server, "GET", f"{API}/autopost", key=other["other_key"])
    assert status == 200 and answer == {"feeds": []}
    fuzz = random.Random(26)
    values = [None, True, -1, 0, 2**63, 1e308, "", "a" * 5000, "{{", [], {}, ["x"] * 60, {"a": 1}, "http://[::1"]
    for _ in range(150):
        body = {name: fuzz.choice(values) for name in fuzz.sample(
            ["url", "integrations", "template", "mode", "includeImage", "intervalMinutes", "paused"], fuzz.randint(1, 4))}
        for method, path in (("POST", "/autopost"), ("PUT", f"/autopost/{feed['id']}"), ("POST", "/autopost/preview")):
            status, answer = api(server, method, API + path, body)
            assert status < 500, (method, body, answer)
    status, deleted = api(server, "DELETE", f"{API}/autopost/{feed['id']}")
    assert status == 200 and deleted["id"] == feed["id"] and listed(server) == {}


def test_mcp_tools_list_add_fetch_and_delete_feeds_with_their_scopes(server, channels, feeds):
    writer, reader = new_key(server, "agent", "full"), new_key(server, "reader", "read")
    added = mcp_tool_call(server, writer, "autopostAdd", {"url": feeds.url("/atom"), "integrations": channels[:1],
                                                          "mode": "review", "template": "{{title}}"})
    assert not added["isError"], added
    feed = added["structuredContent"]["output"]
    assert feed["state"] == "new" and feed["template"] == "{{title}}"
    fetched = mcp_tool_call(server, writer, "autopostFetch", {"id": feed["id"]})
    assert not fetched["isError"] and fetched["structuredContent"]["output"]["result"].startswith("first fetch: 2")
    listed_ = mcp_tool_call(server, reader, "autopostList", {})
    assert [item["id"] for item in listed_["structuredContent"]["output"]] == [feed["id"]]
    refused = mcp_tool_call(server, reader, "autopostAdd", {"url": feeds.url("/atom"), "integrations": channels})
    assert refused["isError"] and "full" in refused["content"][0]["text"]
    bad = mcp_tool_call(server, writer, "autopostAdd", {"url": "ftp://x", "integrations": ["nope"]})
    assert bad["isError"] and "url must be" in bad["content"][0]["text"]
    gone = mcp_tool_call(server, writer, "autopostDelete", {"id": feed["id"]})
    assert not gone["isError"] and listed(server) == {}
    missing = mcp_tool_call(server, writer, "autopostFetch", {"id": feed["id"]})
    assert missing["isError"] and "Feed not found" in missing["content"][0]["text"]


def test_a_new_address_starts_afresh_its_first_fetch_marking_seen_again(server, channels, feeds):
    feed = add_feed(server, url=feeds.url("/rss2"), integrations=channels[:1])
    assert fetch(server, feed["id"])["result"].startswith("first fetch: 2 items")
    status, changed = api(server, "PUT", f"{API}/autopost/{feed['id']}", {"url": feeds.url("/atom")})
    assert status == 200 and changed["url"] == feeds.url("/atom") and changed["lastResult"] is None
    assert fetch(server, feed["id"])["result"].startswith("first fetch: 2 items") and feed_posts(server) == []


def test_webhooks_are_told_of_feed_posts_created_and_queued(server, channels, feeds):
    from fakes.webhook import FakeWebhookReceiver
    listener = FakeWebhookReceiver(secret="feed-secret")
    try:
        status, _ = api(server, "POST", f"{API}/webhooks", {"name": "n8n", "url": listener.url + "/hook",
                                                            "secret": "feed-secret",
                                                            "events": ["post.created", "post.queued"]})
        assert status == 201
        feed = add_feed(server, url=feeds.url("/changing"), integrations=channels[:1], mode="now")
        fetch(server, feed["id"])
        feeds.change([NEW_ITEM, *feeds.items])
        assert fetch(server, feed["id"])["result"] == "1 new item: 1 posted"
        listener.wait_for(lambda: len(listener.events) >= 2)
        time.sleep(0.3)  # (nothing more comes)
        events = {event["event"]: event for event in listener.events}
        assert sorted(events) == ["post.created", "post.queued"] and len(listener.events) == 2
        (root,) = [row["id"] for row in feed_posts(server)]
        assert events["post.queued"]["post"]["id"] == root
        assert events["post.queued"]["post"]["feed"] == {"id": feed["id"], "url": feeds.url("/changing")}
    finally:
        listener.close()


def test_mode_queue_puts_each_new_item_on_its_channels_next_free_slot(server, channels, feeds):
    week = {day: ["09:00", "17:00"] for day in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                                 "sunday")}
    assert api(server, "PUT", f"{API}/integrations/{channels[0]}/schedule", week)[0] == 200
    feed = add_feed(server, url=feeds.url("/changing"), integrations=channels[:1], mode="queue")
    fetch(server, feed["id"])
    feeds.change([NEW_ITEM, {"guid": "new-4", "title": "New four"}, *feeds.items])
    assert fetch(server, feed["id"])["result"] == "2 new items: 2 posted"
    rows = dict_rows(server.database, "SELECT id, state, publish_date FROM post WHERE deleted_at IS NULL "
                                      "ORDER BY publish_date")
    assert [row["state"] for row in rows] == ["QUEUE", "QUEUE"]
    assert rows[0]["publish_date"] != rows[1]["publish_date"]  # two slots, one post each
    assert all(row["publish_date"][11:16] in ("09:00", "17:00") for row in rows)
    status, post = api(server, "GET", f"{API}/posts/{rows[0]['id']}")
    assert status == 200 and post["inQueue"] is True
