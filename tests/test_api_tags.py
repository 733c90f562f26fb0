"""Tags (GET/POST /tags, PUT/DELETE /tags/:id): a name unique in the organization whatever its case and a #RRGGBB
colour, refused field by field; another organization's tags stay out of reach; posts keep a deleted tag, keep
taking tags by label in CreatePost, and are listed by tag (GET /posts?tag=); a database from before with tags
differing only in case is merged by the migration."""
from __future__ import annotations

import pytest

import rustiz
from conftest import wanted_backends
from support import (API, api, channel_post, connect_database, iso, library_create, library_item, library_items,
                     new_key, post_body, two_organizations)


@pytest.fixture(scope="module")
def shared(start_module_server):
    return start_module_server()


@pytest.fixture(scope="module")
def world(shared) -> dict:
    world = two_organizations(shared)
    return {**world, "channel": world["sky"],
            "other_tag": world["db"].tag("Theirs", organization_id=world["other_org"])}


def create(server, body, key: str | None = None) -> tuple:
    return library_create(server, "tags", body, key)


def made(server, name: str, color: str = "#3b82f6") -> dict:
    return library_item(server, "tags", {"name": name, "color": color})


def listed(server, key: str | None = None) -> list:
    return library_items(server, "tags", key)


def test_a_tag_is_created_listed_renamed_recoloured_and_deleted(shared, world):
    tag = made(shared, "Launch", "#FF0000")
    assert set(tag) == {"id", "name", "color"} and (tag["name"], tag["color"]) == ("Launch", "#FF0000")
    assert tag in listed(shared) and api(shared, "GET", f"/api{API}/tags")[1]["tags"] == listed(shared)
    assert api(shared, "PUT", f"{API}/tags/{tag['id']}", {"name": "  Launch day "}) == (
        200, {**tag, "name": "Launch day"})
    assert api(shared, "PUT", f"{API}/tags/{tag['id']}", {"color": "#00ff00"})[1]["color"] == "#00ff00"
    status, deleted = api(shared, "DELETE", f"{API}/tags/{tag['id']}")
    assert status == 200 and deleted == {"id": tag["id"], "name": "Launch day", "color": "#00ff00"}
    assert tag["id"] not in [item["id"] for item in listed(shared)]
    assert api(shared, "DELETE", f"{API}/tags/{tag['id']}")[0] == 404
    assert api(shared, "PUT", f"{API}/tags/{tag['id']}", {"color": "#000000"})[0] == 404


def test_the_colour_is_black_when_left_out_and_tags_are_listed_by_name_whatever_their_case(shared, world):
    for name in ("zeta", "Alpha", "beta"):
        status, tag = create(shared, {"name": name})
        assert status == 201 and tag["color"] == "#000000"
    names = [tag["name"] for tag in listed(shared)]
    assert [name for name in names if name in ("zeta", "Alpha", "beta")] == ["Alpha", "beta", "zeta"]


def test_a_name_is_unique_whatever_its_case_until_the_tag_is_deleted(shared, world):
    tag = made(shared, "News")
    for name in ("news", "NEWS", " News "):
        status, answer = create(shared, {"name": name, "color": "#111111"})
        assert status == 409 and answer["error"] == "Conflict" and answer["message"].startswith(
            "name: this organization already has a tag named 'News'"), answer
    other = made(shared, "Other news")
    assert api(shared, "PUT", f"{API}/tags/{other['id']}", {"name": "nEwS"})[0] == 409
    assert api(shared, "PUT", f"{API}/tags/{tag['id']}", {"name": "NEWS"}) == (200, {**tag, "name": "NEWS"})
    assert made(shared, "Ünïcode")["name"] == "Ünïcode"
    assert create(shared, {"name": "üNÏCODE"})[0] == 409  # (Unicode case folding, not ASCII only)
    api(shared, "DELETE", f"{API}/tags/{tag['id']}")
    assert made(shared, "news")["name"] == "news"  # a deleted tag's name is free again


def test_each_bad_field_is_a_400_naming_it_and_nothing_is_made(shared, world):
    before = listed(shared)
    name_rule = "name must be a string of 1 to 50 characters (without line breaks or control characters)"
    color_rule = "color must be a colour written #RRGGBB, for example #3b82f6"
    cases = [({"name": "x" * 51, "color": "#fff"}, [name_rule, color_rule]),
             ({"name": "   ", "color": "red"}, [name_rule, color_rule]),
             ({"name": "two\nlines"}, [name_rule]),
             ({"name": 12, "color": "#12345G"}, [name_rule, color_rule]),
             ({"name": "Fine", "color": "#1234567"}, [color_rule]),
             ({"color": "#123456"}, ["name should not be null or undefined"]),
             ({"name": None}, ["name should not be null or undefined"]),
             ({"name": "Fine", "id": "mine", "orgId": "x"}, ["property id should not exist",
                                                            "property orgId should not exist"])]
    for body, problems in cases:
        assert create(shared, body) == (400, {"statusCode": 400, "message": problems, "error": "Bad Request"}), body
    for body in ([{"name": "a list"}], "a string", 7, b"null"):
        status, answer = create(shared, body)
        assert status == 400 and answer["message"] == "The request body must be a JSON object", body
    assert api(shared, "POST", f"{API}/tags", b'{"name": "broken"')[0] == 400
    assert create(shared, {"name": "x" * 50})[0] == 201
    assert [tag for tag in listed(shared) if tag["name"] != "x" * 50] == before
    tag = made(shared, "Edited")
    assert api(shared, "PUT", f"{API}/tags/{tag['id']}", {})[1]["message"] == ["give at least one of name, color "
                                                                              "to change"]
    assert api(shared, "PUT", f"{API}/tags/{tag['id']}", {"name": "", "colour": "#000000"})[1]["message"] == [
        "property colour should not exist", name_rule]
    assert api(shared, "PUT", f"{API}/tags/{tag['id']}", ["name"])[0] == 400


def test_a_megabyte_long_name_or_colour_is_a_400_naming_it(shared, world):
    status, answer = create(shared, {"name": "x" * 2**20, "color": "#" + "0" * 2**20})
    assert status == 400 and [problem.split()[0] for problem in answer["message"]] == ["name", "color"]


def test_another_organization_s_tags_are_neither_listed_nor_reachable(shared, world):
    theirs = world["other_tag"]
    assert theirs not in [tag["id"] for tag in listed(shared)]
    assert api(shared, "PUT", f"{API}/tags/{theirs}", {"name": "Mine now"}) == (
        404, {"statusCode": 404, "message": "Tag not found (GET /public/v1/tags lists this organization's)",
              "error": "Not Found"})
    assert api(shared, "DELETE", f"{API}/tags/{theirs}")[0] == 404
    mine = made(shared, "Theirs")  # (the same name in another organization is no clash)
    assert api(shared, "DELETE", f"{API}/tags/{mine['id']}", key=world["other_key"])[0] == 404
    assert mine["id"] not in [tag["id"] for tag in listed(shared, world["other_key"])]
    assert [tag["name"] for tag in listed(shared, world["other_key"])] == ["Theirs"]


@pytest.mark.parametrize("scope", ["read", "drafts"])
def test_read_and_drafts_keys_list_tags_but_every_change_needs_the_scope_full(shared, world, scope):
    key = new_key(shared, f"tags-{scope}", scope)
    tag = made(shared, f"Scoped {scope}")
    assert tag in listed(shared, key)
    for method, path, body in (("POST", "/tags", {"name": "Agent's"}), ("PUT", f"/tags/{tag['id']}", {"name": "x"}),
                               ("DELETE", f"/tags/{tag['id']}", None)):
        status, answer = api(shared, method, API + path, body, key=key)
        assert status == 403 and f"has the scope '{scope}'" in answer["message"] \
            and "needs the scope 'full'" in answer["message"], answer
    assert tag in listed(shared)


def test_posts_take_tags_by_label_keep_deleted_ones_and_are_listed_by_tag_name_or_id(shared, world):
    launch, promo = made(shared, "Campaign"), made(shared, "Promo")
    body = post_body(channel_post(world["channel"], "<p>tagged</p>"), type="draft", date=iso(86400),
                     tags=[{"value": "campaign", "label": "Campaign"}, {"value": "new", "label": "Unheard of"}])
    status, answer = api(shared, "POST", f"{API}/posts", body)
    assert status == 201, answer
    post_id = answer[0]["postId"]
    other = api(shared, "POST", f"{API}/posts", post_body(channel_post(world["channel"], "<p>plain</p>"),
                                                           type="draft", date=iso(86400)))[1][0]["postId"]
    assert "Unheard of" not in [tag["name"] for tag in listed(shared)]  # (unknown labels are ignored, as Postiz)
    window = f"startDate={iso(0)}&endDate={iso(2 * 86400)}"

    def tagged(tag: str) -> list:
        status, answer = api(shared, "GET", f"{API}/posts?{window}&tag={tag}")
        assert status == 200, answer
        return [post["id"] for post in answer["posts"]]

    assert tagged("Campaign") == tagged("cAMPAIGN") == tagged(launch["id"]) == [post_id]
    assert tagged(promo["id"]) == [] and tagged("nothing") == [] and tagged(world["other_tag"]) == []
    everything = [post["id"] for post in api(shared, "GET", f"{API}/posts?{window}&tag=")[1]["posts"]]
    assert {post_id, other} <= set(everything)
    api(shared, "DELETE", f"{API}/tags/{launch['id']}")
    shown = api(shared, "GET", f"{API}/posts/{post_id}")[1]["tags"]
    assert [(tag["tag"]["id"], tag["tag"]["deletedAt"] is not None) for tag in shown] == [(launch["id"], True)]
    assert tagged(launch["id"]) == [post_id]


@pytest.mark.parametrize("storage", wanted_backends())
def test_the_migration_merges_live_tags_whose_names_differ_only_in_case(tmp_path, monkeypatch, request, storage):
    database = (request.getfixturevalue("postgres_cluster").create_database() if storage == "postgresql"
                else str(tmp_path / "old.db"))
    latest = rustiz.MIGRATIONS
    library = next(number for number, step in enumerate(latest) if "CREATE TABLE post_set" in str(step))
    monkeypatch.setattr(rustiz, "MIGRATIONS", latest[:library])  # a database of the schema before
    rustiz.Store(database).close()
    stamp = "2024-05-01T10:00:00.000Z"
    with connect_database(database) as db:
        db.execute("INSERT INTO organization (id, name, created_at, updated_at) VALUES ('o', 'Org', ?, ?)",
                   (stamp, stamp))
        db.execute("INSERT INTO integration (id, internal_id, organization_id, name, provider_identifier, "
                   "created_at, updated_at) VALUES ('c', 'i', 'o', 'Sky', 'bluesky', ?, ?)", (stamp, stamp))
        for post_id in ("p1", "p2", "p3"):
            db.execute("INSERT INTO post (id, publish_date, organization_id, integration_id, post_group, created_at, "
                       "updated_at) VALUES (?, ?, 'o', 'c', ?, ?, ?)", (post_id, stamp, post_id, stamp, stamp))
        for tag_id, name, deleted in (("t1", "Launch", None), ("t2", "LAUNCH", None), ("t3", "launch", None),
                                      ("t4", "launch", stamp), ("t5", "Other", None)):
            db.execute("INSERT INTO tag (id, organization_id, name, created_at, updated_at, deleted_at) "
                       "VALUES (?, 'o', ?, ?, ?, ?)", (tag_id, name, stamp, stamp, deleted))
        db.executemany("INSERT INTO tag_post (post_id, tag_id) VALUES (?, ?)",
                       [("p1", "t2"), ("p1", "t3"), ("p2", "t1"), ("p2", "t2"), ("p3", "t4"), ("p3", "t5")])
    monkeypatch.setattr(rustiz, "MIGRATIONS", latest)
    rustiz.Store(database).close()
    with connect_database(database) as db:
        assert db.execute("SELECT id FROM tag WHERE deleted_at IS NULL ORDER BY id").fetchall() == [("t1",), ("t5",)]
        assert sorted(db.execute("SELECT post_id, tag_id FROM tag_post").fetchall()) == [
            ("p1", "t1"), ("p2", "t1"), ("p3", "t4"), ("p3", "t5")]
    with pytest.raises(Exception, match="(?i)unique"), connect_database(database) as db:
        db.execute("INSERT INTO tag (id, organization_id, name, created_at, updated_at) VALUES ('t6', 'o', 'LaUnCh', "
                   "?, ?)", (stamp, stamp))
