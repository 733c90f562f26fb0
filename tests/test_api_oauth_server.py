"""rustiz as an OAuth 2.1 authorization server for MCP clients (issue 27): the metadata documents (RFC 8414,
RFC 9728) with issuer and resource exactly FRONTEND_URL and FRONTEND_URL/mcp, dynamic registration (RFC 7591)
accepted and refused, the token endpoint (PKCE S256, a code good once and bound to client, redirect URI and
resource; refresh rotation, a reused refresh token revoking its chain), revocation (RFC 7009), and /mcp: its 401
pointing at the resource metadata for GET and POST, a token listing tools, a read token refused a write tool;
GET /oauth/authorize and the consent page (signed out, refused requests, the page, allow, deny, a forged form).
Most tests write their authorization code straight into the database, as the consent page does."""
from __future__ import annotations

import base64
import hashlib
import html
import http.client
import json
import re
import secrets
import time
from datetime import datetime
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import pytest

from conftest import LOCAL_FAKES
from support import Database, api, browser_session, connect_database, iso, webhook_channel
from test_api_roles import Session, add_person

REDIRECT = "http://127.0.0.1:33418/callback"


@pytest.fixture(scope="module")
def server(start_module_server):
    # (registrations are counted per client address: each test's come from an address of its own, as
    # a trusted proxy says, except the flood's)
    return start_module_server(env={**LOCAL_FAKES, "RUSTIZ_TRUSTED_PROXIES": "127.0.0.1"})


def call(server, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> tuple:
    """(status, headers, parsed JSON or None) of a call without the API key."""
    status, answer_headers, raw = server.request(method, path, headers or {}, body)
    return status, answer_headers, (json.loads(raw) if raw else None)


def register(server, address: str | None = None, **metadata) -> tuple:
    body = {"client_name": "Test agent", "redirect_uris": [REDIRECT], **metadata}
    address = address or f"10.{secrets.randbelow(250)}.{secrets.randbelow(250)}.{secrets.randbelow(250)}"
    status, _, answer = call(server, "POST", "/oauth/register", json.dumps(body).encode(),
                             {"Content-Type": "application/json", "X-Forwarded-For": address})
    return status, answer


def token_call(server, **form) -> tuple:
    status, headers, answer = call(server, "POST", "/oauth/token", urlencode(form).encode(),
                                   {"Content-Type": "application/x-www-form-urlencoded"})
    return status, answer


def challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def write_code(server, client_id: str, verifier: str, *, scope: str = "mcp:full", resource: str | None = None,
               redirect_uri: str = REDIRECT, seconds: float = 60) -> str:
    """An authorization code as the consent page would give it, written straight into the database."""
    code = secrets.token_urlsafe(32)
    with connect_database(server.database) as db:
        organization_id = db.execute("SELECT id FROM organization").fetchone()[0]
        db.execute("INSERT INTO oauth_code (code_hash, client_id, redirect_uri, code_challenge, resource, "
                   "organization_id, user_id, scope, expires_at, used) VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, 0)",
                   (hashlib.sha256(code.encode()).hexdigest(), client_id, redirect_uri, challenge(verifier),
                    resource or server.url + "/mcp", organization_id, scope, time.time() + seconds))
    return code


def new_client(server) -> str:
    status, answer = register(server)
    assert status == 201, answer
    return answer["client_id"]


def tokens(server, scope: str = "mcp:full") -> tuple:
    """(client_id, the token answer) of a code exchanged as a client does."""
    client_id, verifier = new_client(server), secrets.token_urlsafe(48)
    code = write_code(server, client_id, verifier, scope=scope)
    status, answer = token_call(server, grant_type="authorization_code", code=code, client_id=client_id,
                                redirect_uri=REDIRECT, code_verifier=verifier, resource=server.url + "/mcp")
    assert status == 200, answer
    return client_id, answer


def mcp(server, token: str | None, message: dict, method: str = "POST") -> tuple:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    status, answer_headers, raw = server.request(method, "/mcp", headers, json.dumps(message).encode())
    return status, answer_headers, raw


def test_metadata_documents_name_frontend_url_exactly(server):
    issuer = server.url
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        status, _, document = call(server, "GET", path)
        assert status == 200, document
        assert document["issuer"] == issuer
        assert document["authorization_endpoint"] == issuer + "/oauth/authorize"
        assert document["token_endpoint"] == issuer + "/oauth/token"
        assert document["registration_endpoint"] == issuer + "/oauth/register"
        assert document["revocation_endpoint"] == issuer + "/oauth/revoke"
        assert document["code_challenge_methods_supported"] == ["S256"]
        assert document["grant_types_supported"] == ["authorization_code", "refresh_token"]
        assert document["token_endpoint_auth_methods_supported"] == ["none"]
        assert document["response_types_supported"] == ["code"]
        assert document["scopes_supported"] == ["mcp:read", "mcp:drafts", "mcp:full"]
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        status, _, document = call(server, "GET", path)
        assert status == 200, document
        assert document["resource"] == issuer + "/mcp"
        assert document["authorization_servers"] == [issuer]
        assert document["scopes_supported"] == ["mcp:read", "mcp:drafts", "mcp:full"]


def test_registration_gives_a_public_client(server):
    status, answer = register(server, redirect_uris=[REDIRECT, "https://claude.ai/api/mcp/auth_callback",
                                                     "http://localhost:6274/cb", "http://[::1]:8080/cb"])
    assert status == 201, answer
    assert answer["client_id"] and "client_secret" not in answer
    assert answer["token_endpoint_auth_method"] == "none"
    assert answer["client_name"] == "Test agent"
    assert answer["redirect_uris"][1] == "https://claude.ai/api/mcp/auth_callback"


# The redirect URIs the hosted clients' own documentation names (checked in December 2026): Claude (claude.ai and
# Claude Desktop connectors, both hosts), ChatGPT connectors, Cursor's own scheme, VS Code's loopback and web ones.
DOCUMENTED_CLIENT_REDIRECTS = ("https://claude.ai/api/mcp/auth_callback", "https://claude.com/api/mcp/auth_callback",
                               "https://chatgpt.com/connector_platform_oauth_redirect",
                               "cursor://anysphere.cursor-mcp/oauth/callback", "http://127.0.0.1:33418/",
                               "https://vscode.dev/redirect")


def test_the_hosted_clients_documented_redirect_uris_register(server):
    for redirect_uri in DOCUMENTED_CLIENT_REDIRECTS:
        status, answer = register(server, redirect_uris=[redirect_uri])
        assert status == 201 and answer["redirect_uris"] == [redirect_uri], answer


def test_a_native_apps_own_scheme_is_named_on_the_consent_page_and_allowed_by_its_csp(server):
    status, answer = register(server, client_name="Cursor", redirect_uris=["cursor://anysphere.cursor-mcp/oauth/callback"])
    assert status == 201, answer
    path = authorize_query(answer["client_id"], secrets.token_urlsafe(48),
                           redirect_uri="cursor://anysphere.cursor-mcp/oauth/callback")
    status, headers, page = browser(server, "GET", path, browser_session(server))
    assert status == 200, page
    assert "cursor://anysphere.cursor-mcp" in page and "unverified" in page
    assert "form-action 'self' cursor:;" in headers["content-security-policy"]


@pytest.mark.parametrize("metadata, error", [
    ({"redirect_uris": ["http://example.com/cb"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["data:text/html,hi"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["file:///etc/passwd"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["https://claude.ai@evil.example/cb"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["https://x.example;sandbox/cb"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["1app://cb"]}, "invalid_redirect_uri"),
    ({"redirect_uris": []}, "invalid_redirect_uri"),
    ({"redirect_uris": "https://example.com/cb"}, "invalid_redirect_uri"),
    ({"redirect_uris": ["https://example.com/cb#part"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri"),
    ({"redirect_uris": [f"https://example.com/{n}" for n in range(11)]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["https://example.com/" + "a" * 2000]}, "invalid_redirect_uri"),
    ({"client_name": "x" * 201}, "invalid_client_metadata"),
    ({"token_endpoint_auth_method": "client_secret_basic"}, "invalid_client_metadata"),
    ({"grant_types": ["client_credentials"]}, "invalid_client_metadata"),
    ({"response_types": ["token"]}, "invalid_client_metadata"),
])
def test_registration_refusals_have_rfc7591_shape(server, metadata, error):
    status, answer = register(server, **metadata)
    assert status == 400, answer
    assert answer["error"] == error and answer["error_description"]


def test_a_registration_flood_is_refused(server):
    statuses = [register(server, "192.0.2.7")[0] for _ in range(21)]
    assert statuses == [201] * 20 + [429]
    assert register(server, "192.0.2.8")[0] == 201  # another address is not held back


def test_a_registration_never_used_expires_after_a_day(server):
    client_id, verifier = new_client(server), secrets.token_urlsafe(48)
    with connect_database(server.database) as db:
        db.execute("UPDATE oauth_client SET created_at = ? WHERE client_id = ?", (time.time() - 25 * 3600, client_id))
    code = write_code(server, client_id, verifier)
    status, answer = token_call(server, grant_type="authorization_code", code=code, client_id=client_id,
                                redirect_uri=REDIRECT, code_verifier=verifier)
    assert (status, answer["error"]) == (401, "invalid_client")


def test_code_exchange_with_pkce_gives_tokens(server):
    _, answer = tokens(server, "mcp:drafts")
    assert answer["token_type"] == "Bearer" and answer["expires_in"] == 3600
    assert answer["scope"] == "mcp:drafts" and answer["refresh_token"] != answer["access_token"]


def test_code_exchange_refusals(server):
    client_id, verifier = new_client(server), secrets.token_urlsafe(48)
    good = {"grant_type": "authorization_code", "client_id": client_id, "redirect_uri": REDIRECT,
            "code_verifier": verifier, "resource": server.url + "/mcp"}

    def exchange(code: str, **changes) -> tuple:
        return token_call(server, **{**good, "code": code, **changes})

    status, answer = exchange(write_code(server, client_id, verifier), code_verifier=secrets.token_urlsafe(48))
    assert (status, answer["error"]) == (400, "invalid_grant")  # wrong verifier
    status, answer = exchange(write_code(server, client_id, verifier), code_verifier="")
    assert (status, answer["error"]) == (400, "invalid_request")  # no PKCE
    plain = secrets.token_urlsafe(48)  # "plain" PKCE: the challenge is the verifier itself
    code = write_code(server, client_id, plain)
    with connect_database(server.database) as db:
        db.execute("UPDATE oauth_code SET code_challenge = ? WHERE code_hash = ?",
                   (plain, hashlib.sha256(code.encode()).hexdigest()))
    assert exchange(code, code_verifier=plain)[1]["error"] == "invalid_grant"
    status, answer = exchange(write_code(server, client_id, verifier), redirect_uri="http://127.0.0.1:1/other")
    assert (status, answer["error"]) == (400, "invalid_grant")
    status, answer = exchange(write_code(server, client_id, verifier), resource="https://elsewhere.example/mcp")
    assert (status, answer["error"]) == (400, "invalid_target")
    status, answer = exchange(write_code(server, client_id, verifier, seconds=-1))
    assert (status, answer["error"]) == (400, "invalid_grant")  # expired
    status, answer = exchange(write_code(server, client_id, verifier), client_id="nobody")
    assert (status, answer["error"]) == (401, "invalid_client")
    status, answer = exchange("never-issued")
    assert (status, answer["error"]) == (400, "invalid_grant")
    status, answer = token_call(server, grant_type="password", client_id=client_id)
    assert (status, answer["error"]) == (400, "unsupported_grant_type")


def test_a_reused_code_is_refused_and_revokes_its_tokens(server):
    client_id, verifier = new_client(server), secrets.token_urlsafe(48)
    code = write_code(server, client_id, verifier)
    form = {"grant_type": "authorization_code", "code": code, "client_id": client_id, "redirect_uri": REDIRECT,
            "code_verifier": verifier}
    status, first = token_call(server, **form)
    assert status == 200, first
    status, answer = token_call(server, **form)
    assert (status, answer["error"]) == (400, "invalid_grant")
    assert mcp(server, first["access_token"], {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})[0] == 401


def test_refresh_rotates_and_reuse_revokes_the_chain(server):
    client_id, first = tokens(server)
    status, second = token_call(server, grant_type="refresh_token", refresh_token=first["refresh_token"],
                                client_id=client_id, resource=server.url + "/mcp")
    assert status == 200, second
    assert second["refresh_token"] != first["refresh_token"] and second["scope"] == "mcp:full"
    assert mcp(server, second["access_token"], {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})[0] == 200
    status, answer = token_call(server, grant_type="refresh_token", refresh_token=first["refresh_token"],
                                client_id=client_id)
    assert (status, answer["error"]) == (400, "invalid_grant")
    # the whole chain is revoked: the newer tokens too
    assert mcp(server, second["access_token"], {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})[0] == 401
    status, answer = token_call(server, grant_type="refresh_token", refresh_token=second["refresh_token"],
                                client_id=client_id)
    assert (status, answer["error"]) == (400, "invalid_grant")


def test_revocation(server):
    client_id, answer = tokens(server)
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert mcp(server, answer["access_token"], listing)[0] == 200
    form = urlencode({"token": answer["refresh_token"], "client_id": client_id}).encode()
    status, _, body = call(server, "POST", "/oauth/revoke", form, {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200, body
    assert mcp(server, answer["access_token"], listing)[0] == 401
    form = urlencode({"token": "unknown"}).encode()
    assert call(server, "POST", "/oauth/revoke", form, {"Content-Type": "application/x-www-form-urlencoded"})[0] == 200


def test_mcp_without_credentials_points_at_the_resource_metadata(server):
    expected = f'Bearer resource_metadata="{server.url}/.well-known/oauth-protected-resource/mcp"'
    for method in ("POST", "GET"):
        status, headers, body = mcp(server, None, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, method)
        assert status == 401, body
        assert headers["www-authenticate"] == expected
    status, headers, _ = mcp(server, "not-a-token", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert status == 401 and headers["www-authenticate"].startswith(expected)


def test_mcp_takes_tokens_with_their_scope(server):
    _, read = tokens(server, "mcp:read")
    status, _, body = mcp(server, read["access_token"], {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert status == 200, body
    names = {tool["name"] for tool in json.loads(body)["result"]["tools"]}
    assert "integrationList" in names
    status, _, body = mcp(server, read["access_token"], {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "integrationList", "arguments": {}}})
    assert status == 200 and not json.loads(body)["result"].get("isError"), body
    status, _, body = mcp(server, read["access_token"], {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "tagCreate", "arguments": {"name": "nope", "color": "#ff0000"}}})
    result = json.loads(body)["result"]
    assert status == 200 and result["isError"] and "read" in result["content"][0]["text"], body


def test_an_agents_changes_are_audited_under_its_clients_name(server):
    _, full = tokens(server, "mcp:full")
    status, _, body = mcp(server, full["access_token"], {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "tagCreate", "arguments": {"name": "from-agent", "color": "#00ff00"}}})
    assert status == 200 and not json.loads(body)["result"].get("isError"), body
    _, entries = api(server, "GET", "/public/v1/audit")
    made = [entry for entry in entries["entries"] if entry["action"] == "tag.created"]
    assert made and made[0]["actor"]["type"] == "mcp" and made[0]["actor"]["name"] == "Test agent", made[:1]


def test_api_keys_still_work_on_mcp(server):
    status, _, body = mcp(server, server.key, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert status == 200, body
    status, _ = api(server, "GET", "/public/v1/is-connected")
    assert status == 200


# --- GET /oauth/authorize, the consent page, and its form ----------------------------------------------------

def browser(server, method: str, path: str, cookie: str | None = None, form: dict | None = None) -> tuple:
    """(status, headers with lower-case names, body text) of a browser's request; a redirect is not followed."""
    headers = {"Cookie": cookie} if cookie else {}
    body = None
    if form is not None:
        body, headers["Content-Type"] = urlencode(form), "application/x-www-form-urlencoded"
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request(method, path, body, headers)
        response = connection.getresponse()
        return (response.status, {name.lower(): value for name, value in response.getheaders()},
                response.read().decode())
    finally:
        connection.close()


def authorize_query(client_id: str, verifier: str, **changes) -> str:
    return "/oauth/authorize?" + urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "st-1",
        "code_challenge": challenge(verifier), "code_challenge_method": "S256", "scope": "mcp:drafts", **changes})


def consent_form(page: str) -> dict:
    """The fields of the consent page's form, as the browser would send them (the choices as checked)."""
    fields = dict(re.findall(r"<input type=hidden name=(\w+) value='([^']*)'>", page))
    fields = {name: html.unescape(value) for name, value in fields.items()}
    fields["organization"] = re.search(r"<option value='([^']*)' selected>", page).group(1)
    fields["scope"] = re.search(r"name=scope value='([^']*)' checked", page).group(1)
    return fields


def test_authorize_sends_a_browser_without_its_session_to_the_web_app_first(server):
    client_id = new_client(server)
    path = authorize_query(client_id, secrets.token_urlsafe(48))
    status, headers, _ = browser(server, "GET", path)
    assert status == 302
    assert headers["location"] == f"{server.url}/#/connect?" + urlencode({"resume": path}, quote_via=quote)


def test_authorize_refuses_unknown_clients_and_redirect_uris_on_a_page(server):
    client_id, verifier = new_client(server), secrets.token_urlsafe(48)
    for path in (authorize_query("nobody", verifier), authorize_query(client_id, verifier,
                                                                      redirect_uri="https://evil.example/cb")):
        status, headers, page = browser(server, "GET", path)
        assert status == 400 and "location" not in headers and "Cannot connect" in page
    for changes, error in (({"code_challenge_method": "plain"}, "invalid_request"),
                           ({"code_challenge": ""}, "invalid_request"),
                           ({"resource": "https://elsewhere.example/mcp"}, "invalid_target"),
                           ({"response_type": "token"}, "unsupported_response_type")):
        status, headers, _ = browser(server, "GET", authorize_query(client_id, verifier, **changes))
        assert status == 302, changes
        back = parse_qs(urlsplit(headers["location"]).query)
        assert headers["location"].startswith(REDIRECT + "?") and back["error"] == [error], back
        assert back["state"] == ["st-1"] and back["iss"] == [server.url]


def test_consent_page_names_the_client_and_allows_its_redirect_in_the_csp(server):
    client_id, verifier = new_client(server), secrets.token_urlsafe(48)
    status, headers, page = browser(server, "GET", authorize_query(client_id, verifier), browser_session(server))
    assert status == 200, page
    assert "Test agent" in page and "127.0.0.1:33418" in page and "unverified" in page
    for label in ("Read only", "Drafts that wait for review", "Full"):
        assert label in page
    assert "form-action 'self' http://127.0.0.1:33418;" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"
    assert consent_form(page)["scope"] == "mcp:drafts"  # what the client asked for, chosen first


def test_consent_allow_gives_a_code_that_becomes_a_token_and_deny_says_no(server):
    client_id, verifier = new_client(server), secrets.token_urlsafe(48)
    cookie = browser_session(server)
    _, _, page = browser(server, "GET", authorize_query(client_id, verifier), cookie)
    form = consent_form(page)
    status, headers, _ = browser(server, "POST", "/oauth/authorize", cookie, {**form, "decision": "deny"})
    back = parse_qs(urlsplit(headers["location"]).query)
    assert status == 302 and back["error"] == ["access_denied"] and back["state"] == ["st-1"]
    status, _, page = browser(server, "POST", "/oauth/authorize", cookie, {**form, "csrf": "forged",
                                                                            "decision": "allow"})
    assert status == 403
    status, _, page = browser(server, "POST", "/oauth/authorize", None, {**form, "decision": "allow"})
    assert status == 401
    status, headers, _ = browser(server, "POST", "/oauth/authorize", cookie, {**form, "decision": "allow"})
    assert status == 302 and headers["location"].startswith(REDIRECT + "?")
    back = parse_qs(urlsplit(headers["location"]).query)
    assert back["state"] == ["st-1"] and back["iss"] == [server.url]
    status, answer = token_call(server, grant_type="authorization_code", code=back["code"][0], client_id=client_id,
                                redirect_uri=REDIRECT, code_verifier=verifier, resource=server.url + "/mcp")
    assert status == 200 and answer["scope"] == "mcp:drafts", answer
    status, _, body = mcp(server, answer["access_token"], {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert status == 200, body
    _, entries = api(server, "GET", "/public/v1/audit")
    granted = [entry for entry in entries["entries"] if entry["action"] == "oauth_client.granted"
               and entry["subject"]["id"] == client_id]
    assert len(granted) == 1, entries


def test_a_person_grants_an_agent_at_most_their_role(server):
    add_person(server, "viewer@example.com", "viewer")
    cookie = Session(server, "viewer@example.com").headers["Cookie"]
    client_id, verifier = new_client(server), secrets.token_urlsafe(48)
    _, _, page = browser(server, "GET", authorize_query(client_id, verifier), cookie)
    form = consent_form(page)
    for scope in ("mcp:full", "mcp:drafts"):
        status, _, refusal = browser(server, "POST", "/oauth/authorize", cookie,
                                     {**form, "scope": scope, "decision": "allow"})
        assert status == 403 and "Your role" in refusal
    status, headers, _ = browser(server, "POST", "/oauth/authorize", cookie,
                                 {**form, "scope": "mcp:read", "decision": "allow"})
    assert status == 302 and "code=" in headers["location"]
    status, _, page = browser(server, "POST", "/oauth/authorize", cookie,
                              {**form, "organization": "someone-else", "decision": "allow"})
    assert status == 400

def test_a_person_in_two_organizations_chooses_which_one_the_agent_gets(server):
    add_person(server, "two@example.com", "admin")
    other_org, _ = Database(server).organization()
    with connect_database(server.database) as db:  # also a viewer of "Other org"
        db.execute("INSERT INTO membership (user_id, organization_id, role, created_at) SELECT id, ?, 'viewer', "
                   "'2026-01-01T00:00:00Z' FROM web_user WHERE email = 'two@example.com'", (other_org,))
    cookie = Session(server, "two@example.com").headers["Cookie"]
    client_id, verifier = new_client(server), secrets.token_urlsafe(48)
    _, _, page = browser(server, "GET", authorize_query(client_id, verifier), cookie)
    assert re.findall(r"<option value='([^']*)'", page) and f"value='{other_org}'" in page and "Other org" in page
    form = {**consent_form(page), "organization": other_org, "decision": "allow"}
    status, _, refusal = browser(server, "POST", "/oauth/authorize", cookie, {**form, "scope": "mcp:drafts"})
    assert status == 403 and "Your role" in refusal  # a viewer there
    status, headers, _ = browser(server, "POST", "/oauth/authorize", cookie, {**form, "scope": "mcp:read"})
    code = parse_qs(urlsplit(headers["location"]).query)["code"][0]
    status, answer = token_call(server, grant_type="authorization_code", code=code, client_id=client_id,
                                redirect_uri=REDIRECT, code_verifier=verifier)
    assert status == 200, answer
    with connect_database(server.database) as db:
        granted = db.execute("SELECT DISTINCT organization_id FROM oauth_token WHERE client_id = ?",
                             (client_id,)).fetchall()
    assert granted == [(other_org,)]


# --- the official MCP Python SDK's OAuth client, end to end -----------------------------------------------------

class MemoryTokens:
    """The SDK's TokenStorage, in memory."""

    def __init__(self):
        self.tokens = self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info) -> None:
        self.client_info = client_info


def test_the_mcp_sdk_connects_with_only_the_url_and_a_consent_click(server, module_receiver):
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientMetadata

    cookie, back = browser_session(server), {}

    async def approve(authorization_url: str) -> None:
        """The person's browser: the consent page, signed in, and Allow with drafts chosen (once: after the
        grant is revoked, the person does not approve again)."""
        approvals.append(authorization_url)
        if len(approvals) > 1:
            raise RuntimeError("asked to approve again")
        path = authorization_url[len(server.url):]
        status, _, page = browser(server, "GET", path, cookie)
        assert status == 200, page
        status, headers, _ = browser(server, "POST", "/oauth/authorize", cookie,
                                     {**consent_form(page), "scope": "mcp:drafts", "decision": "allow"})
        assert status == 302, headers
        back.update({name: values[0] for name, values in parse_qs(urlsplit(headers["location"]).query).items()})

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=back["code"], state=back.get("state"), iss=back.get("iss"))

    storage, approvals = MemoryTokens(), []
    provider = OAuthClientProvider(
        server.url + "/mcp", OAuthClientMetadata(client_name="SDK agent", redirect_uris=[REDIRECT],
                                                 grant_types=["authorization_code", "refresh_token"],
                                                 response_types=["code"], scope="mcp:drafts"),
        storage, redirect_handler=approve, callback_handler=callback)

    async def session() -> tuple:
        async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
            async with Client(streamable_http_client(server.url + "/mcp", http_client=http)) as client:
                listed = await client.list_tools()
                refused = await client.call_tool("tagCreate", {"name": "nope", "color": "#ff0000"})
                created = await client.call_tool("integrationSchedulePostTool", {"socialPost": [{
                    "integrationId": channel, "isPremium": False, "date": iso(86400), "shortLink": False,
                    "type": "draft", "postsAndComments": [{"content": "<p>agent post</p>", "attachments": []}],
                    "settings": []}]})
                first_refresh = storage.tokens.refresh_token
                provider.context.token_expiry_time = time.time() - 1  # the hour is over: the SDK refreshes
                post_id = created.structured_content["output"][0]["postId"]
                post = (await client.call_tool("postGetTool", {"id": post_id})).structured_content["output"]
                assert storage.tokens.refresh_token != first_refresh
                return [tool.name for tool in listed.tools], refused, created, post

    async def after_revocation() -> None:
        async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
            async with Client(streamable_http_client(server.url + "/mcp", http_client=http)) as client:
                await client.list_tools()

    channel = webhook_channel(server, module_receiver, "OAuth agent hook")
    names, refused, created, post = anyio.run(session)
    status, _ = api(server, "DELETE", f"/public/v1/oauth/clients/{storage.client_info.client_id}")
    assert status == 200
    with pytest.raises(BaseException):  # the token is refused: the SDK asks the person again, who says no
        anyio.run(after_revocation)
    assert "integrationSchedulePostTool" in names and refused.is_error and not created.is_error
    assert (post["state"], post["review"]) == ("DRAFT", "review")  # a drafts agent's post waits in "To review"
    assert storage.tokens.scope == "mcp:drafts" and len(approvals) == 2


def test_the_organization_lists_its_connected_clients_and_revokes_one_at_once(server):
    client_id, answer = tokens(server, "mcp:drafts")
    status, listed = api(server, "GET", "/public/v1/oauth/clients")
    assert status == 200, listed
    mine = [found for found in listed if found["id"] == client_id]
    assert len(mine) == 1 and set(mine[0]) == {"id", "name", "scope", "createdAt", "lastUsedAt"}
    assert mine[0]["name"] == "Test agent" and mine[0]["scope"] == "mcp:drafts"
    status, revoked = api(server, "DELETE", f"/public/v1/oauth/clients/{client_id}")
    assert status == 200 and revoked == {"id": client_id}
    assert mcp(server, answer["access_token"], {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})[0] == 401
    status, _ = token_call(server, grant_type="refresh_token", refresh_token=answer["refresh_token"],
                           client_id=client_id)
    assert status == 400
    status, listed = api(server, "GET", "/public/v1/oauth/clients")
    assert client_id not in [found["id"] for found in listed]
    assert api(server, "DELETE", f"/public/v1/oauth/clients/{client_id}")[0] == 404
    status, entries = api(server, "GET", "/public/v1/audit")
    assert status == 200, entries
    actions = {(entry["action"], (entry.get("subject") or {}).get("id")) for entry in entries["entries"]}
    assert ("oauth_client.revoked", client_id) in actions


def test_connected_apps_last_use_is_the_agents_last_mcp_call(server):
    client_id, answer = tokens(server, "mcp:read")
    with connect_database(server.database) as db:  # issued a day ago: its last use is older than that
        db.execute("UPDATE oauth_token SET created_at = created_at - 86400 WHERE client_id = ?", (client_id,))

    def last_use() -> str:
        listed = api(server, "GET", "/public/v1/oauth/clients")[1]
        return next(found["lastUsedAt"] for found in listed if found["id"] == client_id)
    before = last_use()
    assert mcp(server, answer["access_token"], {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})[0] == 200
    after = last_use()
    called_at = datetime.fromisoformat(after.replace("Z", "+00:00")).timestamp()
    assert after > before and called_at > time.time() - 60, (before, after)


def test_browser_clients_may_read_register_and_take_tokens_cross_origin(server):
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server",
                 "/oauth/register", "/oauth/token"):
        status, headers, _ = browser(server, "OPTIONS", path)
        assert status == 204 and headers["access-control-allow-origin"] == "*", path
    status, headers, _ = call(server, "GET", "/.well-known/oauth-protected-resource/mcp")
    assert headers["access-control-allow-origin"] == "*"
    status, headers, _ = call(server, "POST", "/oauth/token", b"grant_type=password",
                              {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 400 and headers["access-control-allow-origin"] == "*"


def test_an_expired_access_token_is_refused(server):
    _, answer = tokens(server)
    with connect_database(server.database) as db:
        db.execute("UPDATE oauth_token SET expires_at = ? WHERE token_hash = ?",
                   (time.time() - 1, hashlib.sha256(answer["access_token"].encode()).hexdigest()))
    status, headers, _ = mcp(server, answer["access_token"], {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"]


# --- Client ID Metadata Documents: a client_id that is an https URL naming its redirect URIs -----------------------

def test_a_client_metadata_document_on_a_private_address_is_refused_by_the_guard(server):
    client_id, verifier = "https://10.1.2.3/oauth/client.json", secrets.token_urlsafe(48)
    status, headers, page = browser(server, "GET", authorize_query(client_id, verifier), browser_session(server))
    assert status == 400 and "location" not in headers and "not registered" in page
    assert token_call(server, grant_type="authorization_code", code="x", client_id=client_id)[0] == 401


def test_a_client_known_by_its_metadata_document_connects(start_server, tmp_path):
    import http.server
    import ssl
    import subprocess
    import threading

    key, certificate = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(certificate), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    documents = {}

    class Documents(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(documents.get(self.path, {})).encode()
            self.send_response(200 if self.path in documents else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *arguments):
            pass

    host = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Documents)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    host.socket = context.wrap_socket(host.socket, server_side=True)
    threading.Thread(target=host.serve_forever, daemon=True).start()
    base = f"https://127.0.0.1:{host.server_address[1]}"
    good, liar = base + "/agent/client.json", base + "/liar/client.json"
    documents["/agent/client.json"] = {"client_id": good, "client_name": "Doc agent", "redirect_uris": [REDIRECT]}
    documents["/liar/client.json"] = {"client_id": good, "client_name": "Liar", "redirect_uris": [REDIRECT]}
    try:
        server = start_server(env={"SSL_CERT_FILE": str(certificate), "RUSTIZ_FETCH_ALLOW": "127.0.0.1"})
        assert call(server, "GET", "/.well-known/oauth-authorization-server")[2][
            "client_id_metadata_document_supported"] is True
        cookie, verifier = browser_session(server), secrets.token_urlsafe(48)
        status, _, page = browser(server, "GET", authorize_query(good, verifier), cookie)
        assert status == 200 and "Doc agent" in page and "unverified" in page, page
        status, headers, _ = browser(server, "POST", "/oauth/authorize", cookie,
                                     {**consent_form(page), "decision": "allow"})
        assert status == 302, headers
        code = parse_qs(urlsplit(headers["location"]).query)["code"][0]
        status, answer = token_call(server, grant_type="authorization_code", code=code, client_id=good,
                                    redirect_uri=REDIRECT, code_verifier=verifier)
        assert status == 200 and answer["scope"] == "mcp:drafts", answer
        status, _, page = browser(server, "GET", authorize_query(liar, verifier), cookie)
        assert status == 400, page  # its document names another client_id
        status, _, page = browser(server, "GET", authorize_query(base + "/missing/client.json", verifier), cookie)
        assert status == 400, page
    finally:
        host.shutdown()


def test_a_frontend_url_no_client_could_trust_turns_the_oauth_server_off(start_server):
    server = start_server(env={"FRONTEND_URL": "http://social.example.com"})
    for method, path in (("GET", "/.well-known/oauth-authorization-server"),
                         ("GET", "/.well-known/oauth-protected-resource/mcp")):
        status, _, answer = call(server, method, path)
        assert status == 404 and answer["error"] == "not_available" and "https" in answer["error_description"]
    assert register(server)[0] == 404
    status, _, page = browser(server, "GET", authorize_query("any", secrets.token_urlsafe(48)))
    assert status == 404 and "FRONTEND_URL" in page
    status, headers, _ = mcp(server, server.key, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert status == 200  # API keys on /mcp are not concerned
