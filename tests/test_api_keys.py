"""Named API keys with a scope (full, drafts, read): the routes that manage them, and the scope every route of
the route table needs, checked by calling each one with a read key and a drafts key."""
from __future__ import annotations

import importlib
import json
import re

import pytest

import rustiz
from support import api

ROUTE_SCOPES_BEYOND_DEFAULTS = {  # GET needs "read" and anything else "full", except these (a decision each)
    ("POST", "/posts"): "drafts", ("PUT", "/posts/:id"): "drafts", ("POST", "/upload"): "drafts",
    ("POST", "/upload-from-url"): "drafts", ("POST", "/integration-trigger/:id"): "drafts",
    ("GET", "/social/:integration"): "full", ("GET", "/api-keys"): "full", ("POST", "/posts/:id/duplicate"): "drafts",
    # An editor's work (the level "posts", which a full key has): every post, the library, the media.
    **{route: "posts" for route in (
        ("DELETE", "/posts/group/:group"), ("DELETE", "/posts/:id"), ("PUT", "/posts/:id/settings"),
        ("PUT", "/posts/:id/status"), ("PUT", "/posts/:id/release-id"), ("POST", "/posts/:id/retry"),
        ("POST", "/posts/import"), ("POST", "/posts/:id/approve"), ("POST", "/posts/:id/reject"),
        ("POST", "/tags"), ("PUT", "/tags/:id"), ("DELETE", "/tags/:id"), ("POST", "/signatures"),
        ("PUT", "/signatures/:id"), ("DELETE", "/signatures/:id"), ("POST", "/sets"), ("PUT", "/sets/:id"),
        ("DELETE", "/sets/:id"), ("POST", "/media/delete"), ("PUT", "/media/:id"), ("DELETE", "/media/:id"))},
    ("POST", "/auth/switch"): "read",
    ("PUT", "/me/notifications"): "read",  # (e-mail: each person sets their own, a viewer too)
    ("GET", "/audit"): "full", ("GET", "/audit/actors"): "full",
    ("GET", "/members"): "full",  # (who is in the team is the admins' business)
    # Client review links (an editor's) and comments (an author's; a comment deleted by its author or an admin).
    ("POST", "/posts/:id/preview-link"): "posts", ("DELETE", "/posts/:id/preview-link"): "posts",
    ("POST", "/posts/:id/comments"): "drafts", ("DELETE", "/posts/:id/comments/:commentId"): "drafts",
    # The queue (issue 26): an editor's (schedules, order, switches); reading it is a read.
    ("PUT", "/integrations/:id/schedule"): "posts", ("PUT", "/integrations/:id/queue"): "posts",
    ("POST", "/queue/reorder"): "posts",
    # RSS/Atom autopost (issue 26): an editor's, as a feed makes posts without review (modes now and queue).
    **{route: "posts" for route in (("POST", "/autopost"), ("POST", "/autopost/preview"), ("PUT", "/autopost/:id"),
                                    ("DELETE", "/autopost/:id"), ("POST", "/autopost/:id/fetch"))},
}
PUBLIC_ROUTES = {  # no key at all (the MCP routes check theirs themselves: tests/test_mcp_scopes.py)
    ("GET", "/openapi.json"), ("GET", "/uploads/:year/:month/:day/:name"), ("POST", "/auth/login"),
    ("GET", "/auth/session"), ("POST", "/auth/logout"), ("GET", "/integrations/social/:identifier"),
    ("GET", "/metrics"),
    ("GET", "/auth/invite"), ("POST", "/auth/invite"), ("POST", "/auth/forgot"), ("POST", "/auth/reset"),
    ("GET", "/auth/methods"), ("GET", "/auth/oidc/start"), ("GET", "/auth/oidc/callback"),
    # a client review link's page and its form (the token is the credential)
    ("GET", "/p/:token"), ("POST", "/p/:token/comment"), ("POST", "/p/:token/approve"),
    ("POST", "/p/:token/request-changes"), ("GET", "/p/:token/picture/:n"),
    ("GET", "/s/:code"),  # a short link (issue 26): anyone who has it is redirected
    ("POST", "/integrations/telegram/updates"),  # Telegram's webhook (issue 28): its secret header is checked
    # the OAuth authorization server for MCP clients (issue 27): metadata, registration, token, revocation
    ("GET", "/.well-known/oauth-authorization-server"), ("GET", "/.well-known/openid-configuration"),
    ("GET", "/.well-known/oauth-protected-resource"), ("GET", "/.well-known/oauth-protected-resource/mcp"),
    ("POST", "/oauth/register"), ("POST", "/oauth/token"), ("POST", "/oauth/revoke"),
    ("GET", "/oauth/authorize"), ("POST", "/oauth/authorize"),
}
KEY_SHAPE = re.compile(r"[0-9a-f]{64}\Z")


@pytest.fixture(scope="module")
def shared(start_module_server):
    return start_module_server()


def new_key(server, name: str, scope: str) -> str:
    status, made = api(server, "POST", "/public/v1/api-keys", {"name": name, "scope": scope})
    assert status == 201 and made["scope"] == scope, made
    return made["apiKey"]


def route_options(module: str, handler: str) -> dict:
    owner, _, method = handler.partition(".")
    return getattr(getattr(importlib.import_module("rustiz_features." + module), owner), method).__dict__.get(
        "route_options", {})


def every_route() -> list:
    """(method, path template, its options) of every route of the three tables."""
    routes = [(method, path, route_options(module, handler)) for method, path, module, handler in rustiz.API_ROUTES]
    routes += [(method, path, route_options(module, handler)) for methods, path, module, handler in rustiz.OTHER_ROUTES
               for method in methods.split()]
    return routes + [(method, path, route_options(module, handler))
                     for method, path, module, handler in rustiz.ROOT_ROUTES]


def needed_scope(method: str, options: dict) -> str:
    """The key scope a route needs (no key has the level "posts": a full one is needed there)."""
    needed = options.get("scope") or ("read" if method in ("GET", "HEAD") else "full")
    return "full" if needed == "posts" else needed


def test_every_route_has_a_scope_decision_and_the_declared_ones_are_these():
    declared, public = {}, set()
    for method, path, options in every_route():
        if options.get("authenticate"):
            assert path.split("/")[1] in ("mcp", "sse", "message"), path
        elif options.get("authenticated") is False:
            public.add((method, path))
        elif "scope" in options:
            declared[(method, path)] = options["scope"]
    assert public - {("OPTIONS", path) for _, path, _ in every_route()} == PUBLIC_ROUTES
    assert declared == ROUTE_SCOPES_BEYOND_DEFAULTS


@pytest.mark.parametrize("scope", ["read", "drafts"])
def test_every_key_route_refuses_or_serves_a_narrow_key_as_its_scope_says(shared, scope):
    key = new_key(shared, f"walk-{scope}", scope)
    wrong = []
    for method, path, options in every_route():
        if options.get("authenticate") or options.get("authenticated") is False:
            continue
        concrete = "/".join("no-such-id" if part.startswith(":") else part for part in path.split("/"))
        prefix = "/public/v1" if any(path == route[1] for route in rustiz.API_ROUTES) else ""
        status, _, body = shared.request(method, prefix + concrete, {"Authorization": key,
                                                                       "Content-Type": "application/json"},
                                         None if method in ("GET", "HEAD", "DELETE") else b"{}")
        needed = needed_scope(method, options)
        refused = status == 403 and f"needs the scope '{needed}'" in body.decode()
        if refused != (rustiz.SCOPES.index(scope) < rustiz.SCOPES.index(needed)):
            wrong.append((method, path, needed, status, body[:200]))
    assert wrong == []


def test_a_refusal_names_the_key_s_scope_the_scope_needed_and_how_to_get_one(shared):
    key = new_key(shared, "reader", "read")
    status, answer = api(shared, "DELETE", "/public/v1/posts/abc", key=key)
    assert status == 403 and answer["message"] == (
        "This API key has the scope 'read'; DELETE /public/v1/posts/abc needs the scope 'full'. Use a key with "
        "that scope (`rustiz key add --scope full`) or the organization's own key")
    assert api(shared, "GET", "/public/v1/integrations", key=key) == (200, [])


def test_keys_are_listed_with_scope_and_last_use_but_never_the_key(shared):
    key = new_key(shared, "agent-list", "drafts")
    assert KEY_SHAPE.match(key)
    assert api(shared, "GET", "/public/v1/is-connected", key=key)[0] == 200
    status, listing = api(shared, "GET", "/public/v1/api-keys")
    assert status == 200
    by_name = {item["name"]: item for item in listing["keys"]}
    assert listing["keys"][0]["name"] == "default" and by_name["default"]["scope"] == "full"
    assert by_name["default"]["lastUsedAt"] is not None  # this very call used it
    assert by_name["agent-list"]["scope"] == "drafts" and by_name["agent-list"]["lastUsedAt"] is not None
    assert set(by_name["agent-list"]) == {"id", "name", "scope", "createdAt", "lastUsedAt"}
    assert key not in json.dumps(listing)


def test_bad_names_scopes_and_duplicates_are_refused_naming_the_field(shared):
    status, answer = api(shared, "POST", "/public/v1/api-keys", {"name": "", "scope": "admin"})
    assert status == 400 and answer["message"] == [
        "name must be 1 to 64 letters, digits, spaces, dots, dashes or underscores, starting with a letter or digit",
        "scope must be one of the following values: read, drafts, full"]
    assert api(shared, "POST", "/public/v1/api-keys", {"name": "default", "scope": "read"})[0] == 400
    new_key(shared, "twice", "read")
    status, answer = api(shared, "POST", "/public/v1/api-keys", {"name": "twice", "scope": "read"})
    assert status == 409 and "already has a key named 'twice'" in answer["message"]


def test_narrow_keys_cannot_manage_keys(shared):
    for scope in ("read", "drafts"):
        key = new_key(shared, f"no-manage-{scope}", scope)
        for method, path in (("GET", "/api-keys"), ("POST", "/api-keys"), ("DELETE", "/api-keys/default"),
                             ("POST", "/organization/api-key")):
            status, answer = api(shared, method, "/public/v1" + path, {} if method == "POST" else None, key=key)
            assert status == 403 and "needs the scope 'full'" in answer["message"], (scope, path, answer)


def test_revoking_a_key_stops_it_at_once_and_signs_out_its_web_sessions(shared):
    key = new_key(shared, "ops", "full")
    status, headers, _ = shared.request("POST", "/auth/login", {"Content-Type": "application/json"},
                                        json.dumps({"apiKey": key}).encode())
    assert status == 200
    cookie = headers["set-cookie"].partition(";")[0]
    assert shared.request("GET", "/auth/session", {"Cookie": cookie})[0] == 200
    assert api(shared, "GET", "/public/v1/integrations", key=key)[0] == 200  # (now in the key cache)
    status, revoked = api(shared, "DELETE", "/public/v1/api-keys/ops")
    assert status == 200 and revoked["name"] == "ops" and revoked["scope"] == "full"
    assert api(shared, "GET", "/public/v1/integrations", key=key)[0] == 401
    assert shared.request("GET", "/auth/session", {"Cookie": cookie})[0] == 401
    assert api(shared, "DELETE", "/public/v1/api-keys/ops")[0] == 404


def test_the_organization_s_own_key_is_rotated_not_revoked_and_keeps_working(shared):
    status, answer = api(shared, "DELETE", "/public/v1/api-keys/default")
    assert status == 400 and "rotate it" in answer["message"]
    assert api(shared, "GET", "/public/v1/integrations")[0] == 200


def test_only_full_keys_sign_in_to_the_web_app(shared):
    key = new_key(shared, "agent-web", "drafts")
    status, _, body = shared.request("POST", "/auth/login", {"Content-Type": "application/json"},
                                     json.dumps({"apiKey": key}).encode())
    assert status == 403 and "signs in with a full key or a password" in json.loads(body)["message"]


def test_a_narrow_key_sees_outgoing_webhook_urls_masked_and_a_full_key_sees_them_whole(shared):
    url = "https://user:pw@hooks.example.com/services/T000/B000/secretToken1234?sig=abcd9876"
    status, made = api(shared, "POST", "/public/v1/webhooks", {"url": url, "name": "Masked"})
    assert status == 201, made
    for scope in ("read", "drafts"):
        status, hooks = api(shared, "GET", "/public/v1/webhooks", key=new_key(shared, f"hooks-{scope}", scope))
        hook = next(item for item in hooks if item["id"] == made["id"])
        assert status == 200 and hook["url"] == "https://hooks.example.com/…9876" and hook["urlMasked"] is True
        assert "secretToken" not in json.dumps(hooks) and "pw@" not in json.dumps(hooks)
    status, hooks = api(shared, "GET", "/public/v1/webhooks")
    hook = next(item for item in hooks if item["id"] == made["id"])
    assert hook["url"] == url and "urlMasked" not in hook


def test_a_body_sent_without_any_credentials_is_refused_from_its_head(shared):
    """On either backend (PostgreSQL checks a key on a Store thread, once the body is in): a request with no key
    and no session is answered 401 before a byte of its announced 25 MiB is sent."""
    from conftest import raw_exchange
    answer = raw_exchange(shared.port, b"POST /public/v1/posts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                       b"Content-Length: 26214400\r\n\r\n", timeout=5)
    assert answer.startswith(b"HTTP/1.1 401 ") and answer.endswith(b'{"msg":"No API Key found"}'), answer[:300]
