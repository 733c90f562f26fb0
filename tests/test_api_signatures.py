"""Signatures (GET/POST /signatures, PUT/DELETE /signatures/:id): text of 1 to 5000 characters and autoAdd, which at
most one signature has (saving one with it takes it from the others); bad fields, other organizations' ids and
narrow keys are refused."""
from __future__ import annotations

import pytest

from support import API, Database, api, library_create, library_item, library_items, new_key


@pytest.fixture(scope="module")
def shared(start_module_server):
    return start_module_server()


@pytest.fixture(scope="module")
def other_key(shared) -> str:
    return Database(shared).organization()[1]


def create(server, body, key: str | None = None) -> tuple:
    return library_create(server, "signatures", body, key)


def made(server, content: str, auto_add: bool = False, key: str | None = None) -> dict:
    return library_item(server, "signatures", {"content": content, "autoAdd": auto_add}, key)


def listed(server, key: str | None = None) -> list:
    return library_items(server, "signatures", key)


def auto_added(server, key: str | None = None) -> list:
    return [signature["id"] for signature in listed(server, key) if signature["autoAdd"]]


def test_a_signature_is_created_listed_changed_and_deleted(shared):
    status, signature = create(shared, {"content": "<p>-- Ada</p>"})
    assert status == 201 and set(signature) == {"id", "content", "autoAdd", "createdAt"}
    assert (signature["content"], signature["autoAdd"]) == ("<p>-- Ada</p>", False)
    assert signature in listed(shared)
    assert api(shared, "PUT", f"{API}/signatures/{signature['id']}", {"content": "<p>-- Ada L.</p>"}) == (
        200, {**signature, "content": "<p>-- Ada L.</p>"})
    assert api(shared, "DELETE", f"{API}/signatures/{signature['id']}") == (
        200, {**signature, "content": "<p>-- Ada L.</p>"})
    assert signature["id"] not in [item["id"] for item in listed(shared)]
    assert api(shared, "PUT", f"{API}/signatures/{signature['id']}", {"autoAdd": True})[0] == 404
    assert api(shared, "DELETE", f"{API}/signatures/{signature['id']}")[0] == 404


def test_at_most_one_signature_is_added_automatically(shared):
    first = made(shared, "first", auto_add=True)
    assert auto_added(shared) == [first["id"]]
    second = made(shared, "second", auto_add=True)
    assert auto_added(shared) == [second["id"]]
    third = made(shared, "third")
    assert api(shared, "PUT", f"{API}/signatures/{third['id']}", {"autoAdd": True})[1]["autoAdd"] is True
    assert auto_added(shared) == [third["id"]]
    assert api(shared, "PUT", f"{API}/signatures/{first['id']}", {"content": "first, again"})[1]["autoAdd"] is False
    assert api(shared, "PUT", f"{API}/signatures/{third['id']}", {"autoAdd": False})[1]["autoAdd"] is False
    assert auto_added(shared) == []
    api(shared, "PUT", f"{API}/signatures/{second['id']}", {"autoAdd": True})
    api(shared, "DELETE", f"{API}/signatures/{second['id']}")
    assert auto_added(shared) == []
    assert made(shared, "fourth", auto_add=True)["autoAdd"] is True  # (the deleted one held it no longer)


def test_another_organization_has_its_own_auto_added_signature_and_cannot_reach_ours(shared, other_key):
    ours = made(shared, "ours", auto_add=True)
    theirs = made(shared, "theirs", auto_add=True, key=other_key)
    assert auto_added(shared) == [ours["id"]] and auto_added(shared, other_key) == [theirs["id"]]
    assert ours["id"] not in [item["id"] for item in listed(shared, other_key)]
    not_found = {"statusCode": 404, "message": "Signature not found (GET /public/v1/signatures lists this "
                                               "organization's)", "error": "Not Found"}
    assert api(shared, "PUT", f"{API}/signatures/{ours['id']}", {"autoAdd": False}, key=other_key) == (404, not_found)
    assert api(shared, "PUT", f"{API}/signatures/{ours['id']}", {"autoAdd": True}, key=other_key) == (404, not_found)
    assert api(shared, "DELETE", f"{API}/signatures/{ours['id']}", key=other_key) == (404, not_found)
    assert auto_added(shared) == [ours["id"]] and auto_added(shared, other_key) == [theirs["id"]]


def test_each_bad_field_is_a_400_naming_it(shared):
    before = listed(shared)
    content_rule = ("content must be a string of 1 to 5000 characters with some text (HTML as post content, "
                    "sanitised the same way)")
    cases = [({"content": ""}, [content_rule]), ({"content": " \n "}, [content_rule]),
             ({"content": "x" * 5001, "autoAdd": "yes"}, [content_rule, "autoAdd must be a boolean value"]),
             ({"content": ["x"]}, [content_rule]), ({"content": "<p> </p><script>x</script>"}, [content_rule]),
             ({"autoAdd": True}, ["content should not be null or undefined"]),
             ({"content": "fine", "text": "x"}, ["property text should not exist"])]
    for body, problems in cases:
        assert create(shared, body) == (400, {"statusCode": 400, "message": problems, "error": "Bad Request"}), body
    for body in ([], "text", b"3"):
        assert create(shared, body)[1]["message"] == "The request body must be a JSON object"
    assert listed(shared) == before
    assert made(shared, "x" * 5000)["content"] == "x" * 5000
    assert made(shared, '<p onclick="steal()">-- Ada<script>steal()</script></p>')["content"] == "<p>-- Ada</p>"
    signature = made(shared, "kept")
    assert api(shared, "PUT", f"{API}/signatures/{signature['id']}", {"autoAdd": 1})[1]["message"] == [
        "autoAdd must be a boolean value"]
    assert api(shared, "PUT", f"{API}/signatures/{signature['id']}", {})[0] == 400
    assert signature in listed(shared)


@pytest.mark.parametrize("scope", ["read", "drafts"])
def test_read_and_drafts_keys_list_signatures_but_every_change_needs_the_scope_full(shared, scope):
    key = new_key(shared, f"signatures-{scope}", scope)
    signature = made(shared, f"for {scope}")
    assert signature in listed(shared, key)
    for method, path, body in (("POST", "/signatures", {"content": "agent"}),
                               ("PUT", f"/signatures/{signature['id']}", {"autoAdd": True}),
                               ("DELETE", f"/signatures/{signature['id']}", None)):
        status, answer = api(shared, method, API + path, body, key=key)
        assert status == 403 and "needs the scope 'full'" in answer["message"], answer
    assert signature in listed(shared)
