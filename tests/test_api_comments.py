"""Comments on a post for the team (issue 25): GET/POST /posts/:id/comments, DELETE /posts/:id/comments/:commentId,
and MCP's listPostComments/addPostComment. One conversation per post group (every channel's thread of one post);
each comment names its author (a person, a key, MCP, a client); a comment is deleted by its author or an admin.
Hostile: oversized and mistyped contents, another organization's post and comments, fuzzed ids."""
from __future__ import annotations

import itertools
import random
import string
from urllib.parse import quote

import pytest

from support import API, api, channel_post, connect_database, iso, mcp_tool_call, post_body, two_organizations

NUMBERS = itertools.count(1)


@pytest.fixture(scope="module")
def shared(start_module_server):
    return start_module_server()


@pytest.fixture(scope="module")
def world(shared) -> dict:
    return two_organizations(shared)


@pytest.fixture(scope="module")
def keys(shared) -> dict:
    made = {}
    for name, scope in (("reader", "read"), ("writer", "drafts"), ("boss", "full")):
        status, answer = api(shared, "POST", f"{API}/api-keys", {"name": name, "scope": scope})
        assert status == 201, answer
        made[name] = answer["apiKey"]
    return made


def two_channel_post(server, world) -> list:
    """A post on two channels (one multi-channel group); the roots' ids."""
    other = world["db"].channel(f"Sky {next(NUMBERS)}", "bluesky")
    text = f"<p>Team post {next(NUMBERS)}</p>"
    status, answer = api(server, "POST", f"{API}/posts", post_body(channel_post(world["sky"], text),
                                                                   channel_post(other, text), type="draft",
                                                                   date=iso(86400)))
    assert status == 201, answer
    return [item["postId"] for item in answer]


def comment(server, post_id: str, content, key: str | None = None) -> tuple:
    return api(server, "POST", f"{API}/posts/{post_id}/comments", {"content": content}, key=key)


def listed(server, post_id: str, key: str | None = None) -> list:
    status, answer = api(server, "GET", f"{API}/posts/{post_id}/comments", key=key)
    assert status == 200, answer
    return answer["comments"]


def test_comments_are_one_conversation_per_post_on_every_channel_with_their_authors(shared, world, keys):
    first, second = two_channel_post(shared, world)
    status, made = comment(shared, first, "  Check the link  ")
    assert status == 201 and made["content"] == "Check the link" and made["own"] is True
    assert made["author"] == {"type": "key", "id": "default", "name": "default"} and made["kind"] == "comment"
    assert comment(shared, second, "From the writer", keys["writer"])[0] == 201
    comments = listed(shared, second, keys["reader"])
    assert [(c["author"]["name"], c["content"], c["own"]) for c in comments] == [
        ("default", "Check the link", False), ("writer", "From the writer", False)]
    assert [c["own"] for c in listed(shared, first)] == [True, False]
    assert all(c["createdAt"].endswith("Z") for c in comments)


def test_scopes_read_lists_drafts_comments(shared, world, keys):
    post_id = two_channel_post(shared, world)[0]
    status, answer = comment(shared, post_id, "no", keys["reader"])
    assert status == 403 and "'drafts'" in answer["message"]
    assert listed(shared, post_id, keys["reader"]) == []
    assert api(shared, "POST", f"{API}/posts/{post_id}/preview-link", {}, key=keys["writer"])[0] == 403


def test_a_comment_is_deleted_by_its_author_or_an_admin_only(shared, world, keys):
    post_id = two_channel_post(shared, world)[0]
    writers = comment(shared, post_id, "mine", keys["writer"])[1]
    bosses = comment(shared, post_id, "the boss's", keys["boss"])[1]
    status, answer = api(shared, "DELETE", f"{API}/posts/{post_id}/comments/{bosses['id']}", key=keys["writer"])
    assert status == 403 and "admin" in answer["message"]
    status, answer = api(shared, "DELETE", f"{API}/posts/{post_id}/comments/{writers['id']}", key=keys["writer"])
    assert status == 200 and answer == {"id": writers["id"], "deleted": True}
    assert api(shared, "DELETE", f"{API}/posts/{post_id}/comments/{writers['id']}", key=keys["writer"])[0] == 404
    assert api(shared, "DELETE", f"{API}/posts/{post_id}/comments/{bosses['id']}")[0] == 200  # an admin's key
    assert listed(shared, post_id) == []


@pytest.mark.parametrize("content", ["", "   ", None, 12, ["x"], {"a": 1}, "x" * 5001])
def test_empty_mistyped_or_oversized_comments_are_a_400(shared, world, content):
    post_id = two_channel_post(shared, world)[0]
    status, answer = comment(shared, post_id, content)
    assert status == 400 and "content must be a non-empty text of at most 5000 characters" in answer["message"][0]
    assert comment(shared, post_id, "x" * 5000)[0] == 201


def test_another_organizations_post_and_comments_are_404(shared, world):
    mine = two_channel_post(shared, world)[0]
    made = comment(shared, mine, "ours")[1]
    theirs = world["db"].post(world["theirs"], iso(86400), organization_id=world["other_org"])
    other_key = world["other_key"]
    assert api(shared, "GET", f"{API}/posts/{theirs}/comments")[0] == 404
    assert comment(shared, theirs, "sneaky")[0] == 404
    assert api(shared, "GET", f"{API}/posts/{mine}/comments", key=other_key)[0] == 404
    assert api(shared, "DELETE", f"{API}/posts/{mine}/comments/{made['id']}", key=other_key)[0] == 404
    # a comment id of one post through another post's route: not found
    other_post = two_channel_post(shared, world)[0]
    assert api(shared, "DELETE", f"{API}/posts/{other_post}/comments/{made['id']}")[0] == 404
    assert [c["content"] for c in listed(shared, mine)] == ["ours"]


def test_fuzzed_ids_and_bodies_never_answer_5xx(shared, world):
    post_id = two_channel_post(shared, world)[0]
    rng = random.Random(2525)
    alphabet = string.printable + "é\u2028"
    for _ in range(40):
        junk = quote("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))), safe="")
        for method, path in (("GET", f"{API}/posts/{junk}/comments"), ("POST", f"{API}/posts/{junk}/comments"),
                             ("DELETE", f"{API}/posts/{post_id}/comments/{junk}"),
                             ("DELETE", f"{API}/posts/{junk}/comments/{junk}")):
            assert api(shared, method, path, {"content": "x"} if method == "POST" else None)[0] < 500
    for body in (b"{", b"[]", b'"x"', b'{"content": "\\ud800"}', b"\xff"):
        status = shared.request("POST", f"{API}/posts/{post_id}/comments",
                                {"Authorization": shared.key, "Content-Type": "application/json"}, body)[0]
        assert 400 <= status < 500


def test_mcp_lists_and_adds_comments_under_the_key_s_name(shared, world, keys):
    post_id = two_channel_post(shared, world)[0]
    result = mcp_tool_call(shared, keys["writer"], "addPostComment", {"id": post_id, "content": "From the agent"})
    assert result["isError"] is False
    made = result["structuredContent"]["output"]
    assert made["author"]["type"] == "mcp" and made["author"]["name"] == "MCP (writer)"
    result = mcp_tool_call(shared, keys["reader"], "listPostComments", {"id": post_id})
    assert [c["content"] for c in result["structuredContent"]["output"]] == ["From the agent"]
    refused = mcp_tool_call(shared, keys["reader"], "addPostComment", {"id": post_id, "content": "no"})
    assert refused["isError"] is True and "'drafts'" in refused["content"][0]["text"]
    missing = mcp_tool_call(shared, keys["writer"], "listPostComments", {"id": "nope"})
    assert missing["isError"] is True and "Post not found" in missing["content"][0]["text"]
    too_long = mcp_tool_call(shared, keys["writer"], "addPostComment", {"id": post_id, "content": "x" * 5001})
    assert too_long["isError"] is True


def test_people_sign_their_comments_by_name_and_only_an_admin_deletes_another_s(shared, world):
    from test_api_mail import quick_password_hash, sign_in
    organization_id = api(shared, "GET", f"{API}/organization")[1]["id"]
    people = {role: f"user-{role}-comments" for role in ("author", "editor", "admin")}
    with connect_database(shared.database) as db:  # (as the members API will add them: in this organization)
        for role, user_id in people.items():
            db.execute("INSERT INTO web_user (id, organization_id, email, password_hash, name, created_at) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (user_id, organization_id, f"{role}-comments@example.com",
                                                     quick_password_hash("correct horse battery staple"),
                                                     "Ada Author" if role == "author" else None, iso()))
            db.execute("INSERT INTO membership (user_id, organization_id, role, created_at) VALUES (?, ?, ?, ?)",
                       (user_id, organization_id, role, iso()))
    sessions = {role: sign_in(shared, f"{role}-comments@example.com") for role in people}
    post_id = two_channel_post(shared, world)[0]

    def as_person(role: str, method: str, path: str, body=None) -> tuple:
        return api(shared, method, f"{API}/posts/{post_id}/{path}", body, key="", headers=sessions[role])

    status, made = as_person("author", "POST", "comments", {"content": "Draft is ready"})
    assert status == 201 and made["author"] == {"type": "user", "id": people["author"], "name": "Ada Author"}
    editors = as_person("editor", "POST", "comments", {"content": "Looks good"})[1]
    assert editors["author"]["name"] == "editor-comments@example.com"  # (no name: their e-mail address)
    assert as_person("author", "DELETE", f"comments/{editors['id']}")[0] == 403
    assert as_person("editor", "DELETE", f"comments/{made['id']}")[0] == 403
    assert as_person("author", "POST", "preview-link", {})[0] == 403  # (an editor's)
    assert as_person("editor", "POST", "preview-link", {})[0] == 201
    assert as_person("admin", "DELETE", f"comments/{made['id']}")[0] == 200
    assert as_person("editor", "DELETE", f"comments/{editors['id']}")[0] == 200
    assert listed(shared, post_id) == []
