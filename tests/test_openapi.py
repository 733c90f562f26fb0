"""GET /public/v1/openapi.json: valid OpenAPI 3.1, naming exactly the routes the router serves, and
describing what the server really answers."""
from __future__ import annotations

import importlib
import json
import re

import jsonschema
import pytest
from openapi_spec_validator import validate as validate_openapi

import rustiz
from rustiz_features.openapi import openapi_document, table_routes
from support import Database, api

HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def served_routes(app: rustiz.App) -> dict:
    """Every path the router serves (":id" written "{id}") -> its lower-case methods."""
    routes = {path: set(methods) for path, methods in app.routes.items()}
    routes.update((path, set(methods)) for path, (_, methods) in app.patterns.items())
    return {re.sub(r":(\w+)", r"{\1}", path): {method.lower() for method in methods}
            for path, methods in routes.items()}


def documented_routes(document: dict) -> dict:
    """Every path the document names -> its methods; a path served on the /api server too appears twice."""
    routes = {}
    for path, item in document["paths"].items():
        methods = set(item) & HTTP_METHODS
        routes[path] = methods
        if "servers" not in item:  # on both servers: "/public/v1/x" and "/api/public/v1/x"
            routes["/api" + path] = methods
    return routes


def test_the_document_names_exactly_the_routes_the_router_serves(app):
    """A route served but not documented (or documented but gone) fails here: the paths come from the route
    table, so only a route added outside it (App.add) can be missing."""
    served, documented = served_routes(app), documented_routes(openapi_document("http://rustiz.test"))
    assert {path: methods for path, methods in served.items() if documented.get(path) != methods} == {}, \
        "served but not documented (or with other methods)"
    assert {path: methods for path, methods in documented.items() if served.get(path) != methods} == {}, \
        "documented but not served (or with other methods)"


def test_every_handler_of_the_route_table_carries_its_documentation():
    """A route is two edits, its line in the table and its handler, which says with @documented what it takes
    and answers (rustiz_features/api_docs.py)."""
    undocumented = []
    for _, path, module, handler, _ in table_routes():
        owner, _, method = handler.partition(".")
        function = getattr(getattr(importlib.import_module("rustiz_features." + module), owner), method)
        if not hasattr(function, "openapi"):
            undocumented.append(f"{module}.{handler} ({path})")
    assert undocumented == []


def test_every_route_of_the_table_is_in_the_document_and_every_documented_path_is_routed(app):
    document = openapi_document("http://rustiz.test")
    in_table = {(re.sub(r":(\w+)", r"{\1}", path), method.lower())
                for methods, path, _, _, _ in table_routes() for method in methods.split()}
    documented = {(path, method) for path, item in document["paths"].items() for method in set(item) & HTTP_METHODS}
    assert in_table - documented == set()
    assert documented - in_table == {("/health", "get")}  # the core's own route, documented in openapi.py
    served = served_routes(app)
    assert {(path, method) for path, method in documented if method not in served.get(path, ())} == set()


def test_the_served_document_is_valid_openapi_3_1_with_frontend_url_as_server(start_server):
    server = start_server(env={"FRONTEND_URL": "https://social.example.com/"})
    for prefix in ("/public/v1", "/api/public/v1"):
        status, headers, body = server.request("GET", prefix + "/openapi.json")  # no key needed
        assert status == 200 and headers["content-type"].startswith("application/json")
        document = json.loads(body)
        validate_openapi(document)
        assert document["openapi"].startswith("3.1")
        assert [entry["url"] for entry in document["servers"]] == ["https://social.example.com",
                                                                    "https://social.example.com/api"]
        assert document["paths"]["/health"]["servers"] == [{"url": "https://social.example.com"}]
        assert document["components"]["securitySchemes"]["apiKey"] == {
            "type": "apiKey", "in": "header", "name": "Authorization",
            "description": document["components"]["securitySchemes"]["apiKey"]["description"]}


def test_the_document_is_the_same_bytes_on_every_request(server):
    first, second = (server.request("GET", "/public/v1/openapi.json")[2] for _ in range(2))
    assert first == second


# --- real responses against their documented schemas -------------------------------------------

def response_schema(document: dict, path: str, method: str, status: int) -> dict:
    """The JSON schema documented for that answer, with the components its $refs point into."""
    response = document["paths"][path][method]["responses"][str(status)]
    if "$ref" in response:
        response = document["components"]["responses"][response["$ref"].rpartition("/")[2]]
    # "#/components/..." refs resolve against the root schema, so the components ride along.
    return {**response["content"]["application/json"]["schema"], "components": document["components"]}


def assert_documented(document: dict, path: str, method: str, status: int, body) -> None:
    jsonschema.Draft202012Validator(response_schema(document, path, method, status)).validate(body)


@pytest.fixture
def world(server):
    db = Database(server)
    acme = db.customer("Acme")
    channel = db.channel("Acme on X", "x", picture="https://cdn.example/x.png", profile="acme", customer_id=acme)
    bluesky = db.channel("Sky", "bluesky")
    root, reply = db.thread(channel, "2030-01-02T10:00:00.000Z", ["<p>Hi</p>", "<p>more</p>"])
    db.link_tag(root, db.tag("launch"))
    db.notification("<p>Published</p>", "2024-05-02T10:00:00.000Z")
    document = json.loads(server.request("GET", "/public/v1/openapi.json")[2])
    return {"server": server, "db": db, "key": server.key, "x": channel, "bluesky": bluesky, "root": root,
            "document": document}


def test_success_answers_match_their_documented_schemas(world):
    server, key, document = world["server"], world["key"], world["document"]
    created_body = {"type": "schedule", "date": "2030-09-01T10:00:00Z", "shortLink": False, "tags": [],
                    "posts": [{"integration": {"id": world["bluesky"]}, "value": [{"content": "Hello", "image": []}]}]}
    answers = [
        ("/public/v1/integrations", "get", "GET", "/public/v1/integrations", None, 200),
        ("/public/v1/groups", "get", "GET", "/public/v1/groups", None, 200),
        ("/public/v1/integration-settings/{id}", "get", "GET", f"/public/v1/integration-settings/{world['x']}",
         None, 200),
        ("/public/v1/posts", "get", "GET", "/public/v1/posts?startDate=2030-01-01&endDate=2030-12-31", None, 200),
        ("/public/v1/posts", "post", "POST", "/public/v1/posts", created_body, 201),
        ("/public/v1/posts/{id}", "get", "GET", f"/public/v1/posts/{world['root']}", None, 200),
        ("/public/v1/notifications", "get", "GET", "/public/v1/notifications", None, 200),
        ("/public/v1/find-slot/{id}", "get", "GET", f"/public/v1/find-slot/{world['x']}", None, 200),
        ("/public/v1/posts/{id}/status", "put", "PUT", f"/public/v1/posts/{world['root']}/status",
         {"status": "draft"}, 200),
        ("/public/v1/integrations/{id}", "delete", "DELETE", f"/public/v1/integrations/{world['bluesky']}", None, 200),
    ]
    for documented_path, method, verb, target, body, expected in answers:
        status, answer = api(server, verb, target, body, key=key)
        assert status == expected, (target, answer)
        assert_documented(document, documented_path, method, status, answer)


def test_the_providers_answer_matches_its_documented_schema(world):
    status, answer = api(world["server"], "GET", "/public/v1/providers", key=world["key"])
    assert status == 200 and len(answer) == 38  # Postiz's 35, rustiz's webhook, Pixelfed and Friendica
    assert_documented(world["document"], "/public/v1/providers", "get", status, answer)


def test_error_answers_match_their_documented_schemas(world):
    server, key, document = world["server"], world["key"], world["document"]
    answers = [
        ("/public/v1/posts/{id}", "get", "GET", "/public/v1/posts/nope", key, None, 404),
        ("/public/v1/posts", "get", "GET", "/public/v1/posts", key, None, 400),
        ("/public/v1/posts", "post", "POST", "/public/v1/posts", key, {"posts": []}, 400),
        ("/public/v1/posts", "post", "POST", "/public/v1/posts", key,
         {"type": "now", "date": "2030-01-01", "shortLink": False, "tags": [],
          "posts": [{"integration": {"id": world["bluesky"]}, "value": [{"content": "", "image": []}]}]}, 400),
        ("/public/v1/integration-settings/{id}", "get", "GET", "/public/v1/integration-settings/nope", key, None,
         404),
        ("/public/v1/is-connected", "get", "GET", "/public/v1/is-connected", "wrong key", None, 401),
        ("/public/v1/upload-from-url", "post", "POST", "/public/v1/upload-from-url", key,
         {"url": "http://127.0.0.1:9/a.png"}, 400),
    ]
    for documented_path, method, verb, target, credential, body, expected in answers:
        status, answer = api(server, verb, target, body, key=credential)
        assert status == expected, (target, answer)
        assert_documented(document, documented_path, method, status, answer)


def test_the_post_validation_error_is_the_documented_postiz_shape(world):
    too_long = "a" * 400  # Bluesky takes 300 characters
    body = {"type": "now", "date": "2030-01-01", "shortLink": False, "tags": [],
            "posts": [{"integration": {"id": world["bluesky"]}, "value": [{"content": too_long, "image": []}]}]}
    status, answer = api(world["server"], "POST", "/public/v1/posts", body)
    assert_documented(world["document"], "/public/v1/posts", "post", status, answer)
    assert (status, set(answer)) == (400, {"statusCode", "provider", "name", "message"})
