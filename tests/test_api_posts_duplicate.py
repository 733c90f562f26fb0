"""POST /posts/:id/duplicate: a post's group (its thread on its channel), and the groups the same request made on
other channels, copied as drafts in new groups at the same date, every part with its settings, media, delay, repeat interval and live tags; the original untouched; another
organization's post is a 404; a drafts key's copies wait for review, a read key is refused."""
from __future__ import annotations

import json

import pytest

from support import API, Database, api, channel_post, dict_rows, new_key, post_body, two_organizations

FUTURE = "2031-03-01T09:30:00.000Z"
COPIED_COLUMNS = ("integration_id", "content", "delay", "settings", "image", "interval_in_days", "publish_date",
                  "creation_method")


@pytest.fixture(scope="module")
def shared(start_module_server):
    """No scheduler: the posts written straight into the database stay as written."""
    return start_module_server(env={"RUSTIZ_SCHEDULER": "0"})


@pytest.fixture(scope="module")
def world(shared) -> dict:
    return two_organizations(shared)


def rows(db: Database, where: str, *parameters) -> list:
    return dict_rows(db.path, f"SELECT * FROM post WHERE {where} ORDER BY created_at, id", *parameters)


def thread_rows(db: Database, group: str) -> list:
    """The live posts of a group in thread order (each part's parent before it)."""
    by_parent = {row["parent_post_id"]: row for row in rows(db, "post_group = ? AND deleted_at IS NULL", group)}
    ordered, parent = [], None
    while parent in by_parent:
        ordered.append(by_parent[parent])
        parent = ordered[-1]["id"]
    return ordered


def duplicate(server, post_id: str, key: str | None = None) -> tuple:
    return api(server, "POST", f"{API}/posts/{post_id}/duplicate", key=key)


def test_a_thread_is_copied_whole_as_drafts_in_a_new_group_and_the_original_is_untouched(shared, world):
    db = world["db"]
    image = json.dumps([{"id": "m1", "path": "https://h/uploads/2030/01/01/a.png", "alt": "A"}])
    ids = db.thread(world["sky"], FUTURE, ["<p>one</p>", "<p>two</p>", "<p>three</p>"],
                    settings='{"__type":"bluesky"}', image=image, interval=7)
    with db.connect() as connection:
        connection.execute("UPDATE post SET delay = 5 WHERE id = ?", (ids[2],))
    launch, gone = db.tag("Launch"), db.tag("Gone")
    db.link_tag(ids[0], launch)
    db.link_tag(ids[0], gone)
    api(shared, "DELETE", f"{API}/tags/{gone}")
    group = rows(db, "id = ?", ids[0])[0]["post_group"]
    before = rows(db, "post_group = ?", group)

    status, answer = duplicate(shared, ids[1])  # (any part of the thread names its group)
    assert status == 201 and set(answer) == {"group", "multiChannelGroup", "posts"}, answer
    assert answer["group"] != group and len(answer["posts"]) == 3
    copies = thread_rows(db, answer["group"])
    assert [copy["id"] for copy in copies] == [post["id"] for post in answer["posts"]]
    assert answer["posts"][0] == {"id": copies[0]["id"], "integration": world["sky"], "parentPostId": None}
    assert [post["parentPostId"] for post in answer["posts"][1:]] == [copy["id"] for copy in copies[:2]]
    originals = thread_rows(db, group)
    for copy, original in zip(copies, originals):
        assert {name: copy[name] for name in COPIED_COLUMNS} == {name: original[name] for name in COPIED_COLUMNS}
        assert (copy["state"], copy["review"], copy["release_id"], copy["error"]) == ("DRAFT", None, None, None)
    assert copies[2]["delay"] == 5 and copies[0]["interval_in_days"] == 7
    assert rows(db, "post_group = ?", group) == before
    view = api(shared, "GET", f"{API}/posts/{copies[0]['id']}")[1]
    assert [tag["tag"]["name"] for tag in view["tags"]] == ["Launch"]  # (a deleted tag is not carried over)
    assert [part["content"] for part in view["thread"]] == ["<p>two</p>", "<p>three</p>"]


def test_a_post_made_on_several_channels_is_copied_on_every_one_of_them(shared, world):
    db = world["db"]
    sea = db.channel("Sea", "bluesky")
    body = post_body(channel_post(world["sky"], "<p>both</p>", "<p>reply</p>", settings={"__type": "bluesky"}),
                     channel_post(sea, "<p>both, at sea</p>", settings={"__type": "bluesky"}), type="draft", date=FUTURE)
    status, made = api(shared, "POST", f"{API}/posts", body)
    assert status == 201, made
    originals = [api(shared, "GET", f"{API}/posts/{item['postId']}")[1] for item in made]
    assert len({post["multiChannelGroup"] for post in originals}) == 1 and len({post["group"] for post in originals}) == 2
    status, answer = duplicate(shared, made[1]["postId"])  # (the second channel's post: its thread comes first)
    assert status == 201, answer
    assert [post["integration"] for post in answer["posts"]] == [sea, world["sky"], world["sky"]]
    assert answer["multiChannelGroup"] != originals[0]["multiChannelGroup"]
    copies = [api(shared, "GET", f"{API}/posts/{post['id']}")[1] for post in answer["posts"] if not post["parentPostId"]]
    assert [copy["content"] for copy in copies] == ["<p>both, at sea</p>", "<p>both</p>"]
    assert {copy["multiChannelGroup"] for copy in copies} == {answer["multiChannelGroup"]}
    assert {copy["state"] for copy in copies} == {"DRAFT"}


def test_a_published_or_failed_post_is_copied_as_a_draft_without_its_outcome(shared, world):
    db = world["db"]
    for state, fields in (("PUBLISHED", {"release_id": "r1", "release_url": "https://bsky.app/x"}),
                          ("ERROR", {"error": "Bluesky said no"})):
        post_id = db.post(world["sky"], "2024-01-01T10:00:00.000Z", state=state, **fields)
        status, answer = duplicate(shared, post_id)
        assert status == 201, answer
        copy = rows(db, "id = ?", answer["posts"][0]["id"])[0]
        assert (copy["state"], copy["release_id"], copy["release_url"], copy["error"]) == ("DRAFT", None, None, None)
        assert copy["publish_date"] == "2024-01-01T10:00:00.000Z"  # (a draft may keep a date gone by)
        assert rows(db, "id = ?", post_id)[0]["state"] == state


def test_unknown_deleted_and_other_organizations_posts_are_404(shared, world):
    db = world["db"]
    theirs = db.post(world["theirs"], FUTURE, organization_id=world["other_org"])
    deleted = db.post(world["sky"], FUTURE, deleted=True)
    on_a_gone_channel = db.post(db.channel("Gone", "x", deleted=True), FUTURE)
    mine = db.post(world["sky"], FUTURE)
    count = len(rows(db, "1 = 1"))
    not_found = {"statusCode": 404, "message": "Post not found", "error": "Not Found"}
    for post_id in (theirs, deleted, on_a_gone_channel, "no-such-post"):
        assert duplicate(shared, post_id) == (404, not_found)
    assert duplicate(shared, mine, world["other_key"]) == (404, not_found)
    assert len(rows(db, "1 = 1")) == count
    assert api(shared, "POST", f"/api{API}/posts/{mine}/duplicate")[0] == 201


def test_a_drafts_key_s_copies_wait_for_review_and_a_read_key_is_refused(shared, world):
    db = world["db"]
    post_id = db.post(world["sky"], FUTURE)
    keys = {scope: new_key(shared, f"copier-{scope}", scope) for scope in ("read", "drafts")}
    status, answer = duplicate(shared, post_id, keys["read"])
    assert status == 403 and answer["message"].startswith("This API key has the scope 'read'") \
        and "needs the scope 'drafts'" in answer["message"]
    status, answer = duplicate(shared, post_id, keys["drafts"])
    assert status == 201
    view = api(shared, "GET", f"{API}/posts/{answer['posts'][0]['id']}", key=keys["drafts"])[1]
    assert (view["state"], view["review"]) == ("DRAFT", "review")
    awaiting = api(shared, "GET", f"{API}/posts?state=review")[1]["posts"]
    assert answer["posts"][0]["id"] in [post["id"] for post in awaiting]
    status, answer = duplicate(shared, post_id)
    assert api(shared, "GET", f"{API}/posts/{answer['posts'][0]['id']}")[1]["review"] is None
