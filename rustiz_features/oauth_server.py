"""rustiz as an OAuth 2.1 authorization server for MCP clients (issue 27), after the MCP specification's
authorization section (2025-06-18, 2025-11-25): the metadata documents (RFC 8414, RFC 9728), dynamic client
registration (RFC 7591), the token endpoint (authorization code with PKCE, refresh) and revocation (RFC 7009).

Rules:
- `issuer` is FRONTEND_URL exactly and the protected resource is FRONTEND_URL + "/mcp": clients compare both
  as strings. FRONTEND_URL must be https, or http on a loopback host; otherwise the OAuth routes answer 404
  saying so (issuer_problem).
- Public clients only: no client secret is ever issued; PKCE S256 is required ("plain" is refused).
- Codes and tokens are opaque random strings, stored only as their SHA-256 digests (storage/oauth_server.py).
  A code is good once and for CODE_SECONDS; a refresh token is rotated on use and a reused one revokes its chain.
- A client_id that is an https URL with a path is a Client ID Metadata Document: fetched through the one
  outbound client and its address guard (a private address is refused), bounded, its client_id the URL
  exactly, kept an hour.
- Errors have the RFC's shape, {"error", "error_description"}, never the API's (but the organization's
  list of connected clients, ConnectedClients, is the public API's).
"""
from __future__ import annotations

import base64
import secrets
import time
from typing import Any, Optional
from urllib.parse import parse_qsl, urlsplit

from rustiz import (
    ApiError, App, KeyIdentity, Request, Response, iso_at, json_response, log, not_found, route_options, sha256,
)
from _operator import _compare_digest as compare_digest
from .api_docs import ANY, INTEGER, STRING, array_of, documented, json_body, object_schema, parameter, ref
from .http_client import ConnectFailed, NoAnswer, Timeouts, read_at_most
from .storage import oauth_server as oauth_store

CODE_SECONDS = 60
ACCESS_SECONDS = 3600
REFRESH_SECONDS = 30 * 24 * 3600
# MCP scopes and the API key scope each one is (TOOL_SCOPES in mcp_tools.py names a key scope per tool).
MCP_SCOPES = {"mcp:read": "read", "mcp:drafts": "drafts", "mcp:full": "full"}
REGISTRATIONS_PER_ADDRESS = 20  # per window: each is a row until it is used or 24 h pass
REGISTRATIONS_WINDOW_SECONDS = 3600
REGISTRATION_BODY_BYTES = 16 * 1024
MAX_REDIRECT_URIS = 10
MAX_REDIRECT_URI_LENGTH = 2000
MAX_CLIENT_NAME_LENGTH = 200
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
TOKEN_BODY_BYTES = 16 * 1024
# Clients that run in a browser (the MCP Inspector) read the metadata, register and take tokens cross-origin;
# no cookie is involved, so any origin may.
CORS = [("Access-Control-Allow-Origin", "*"), ("Access-Control-Allow-Methods", "GET, POST, OPTIONS"),
        ("Access-Control-Allow-Headers", "*"), ("Access-Control-Max-Age", "600")]
NO_STORE = [("Cache-Control", "no-store"), ("Pragma", "no-cache"), *CORS]


def issuer_problem(frontend_url: str) -> Optional[str]:
    """Why FRONTEND_URL cannot be an OAuth issuer (it must be https, or http on a loopback host: OAuth 2.1
    1.5), or None."""
    try:
        parts = urlsplit(frontend_url)
        host = parts.hostname or ""
    except ValueError:
        return f"FRONTEND_URL {frontend_url[:200]!r} is not a URL"
    if parts.scheme == "https" and host or parts.scheme == "http" and host in LOOPBACK_HOSTS:
        return None
    return (f"rustiz's OAuth server needs FRONTEND_URL to be https (or http on 127.0.0.1, [::1] or localhost), "
            f"the address clients reach it at; it is {frontend_url[:200]!r}")


def refuse_unless_issuer(frontend_url: str) -> None:
    """Raises OAuthError (404) when FRONTEND_URL cannot be an issuer: no client is led into a flow that fails."""
    problem = issuer_problem(frontend_url)
    if problem is not None:
        raise OAuthError("not_available", problem, 404)


def token_digest(value: str) -> str:
    """How a code or token is stored and looked up."""
    return sha256(value.encode()).hexdigest()


def pkce_challenge(verifier: str) -> str:
    """RFC 7636's S256: BASE64URL(SHA256(verifier)) without padding."""
    return base64.urlsafe_b64encode(sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def mcp_resource(frontend_url: str) -> str:
    """The protected resource's identifier (RFC 8707, RFC 9728): the MCP endpoint's URL."""
    return frontend_url + "/mcp"


def resource_metadata_url(frontend_url: str) -> str:
    """Where the 401 of /mcp points (WWW-Authenticate's resource_metadata)."""
    return frontend_url + "/.well-known/oauth-protected-resource/mcp"


DOCUMENT_BYTES = 16 * 1024  # the most read of a client's metadata document
DOCUMENT_SECONDS = 3600  # how long a fetched metadata document is kept
DOCUMENT_TIMEOUTS = Timeouts(connect=5.0, read=5.0, total=10.0)


def is_metadata_document_url(client_id: str) -> bool:
    """Whether a client_id names a Client ID Metadata Document: an https URL with a path, no fragment."""
    try:
        parts = urlsplit(client_id)
    except ValueError:
        return False
    return (parts.scheme == "https" and bool(parts.hostname) and parts.path not in ("", "/") and not parts.fragment
            and len(client_id) <= MAX_REDIRECT_URI_LENGTH)


async def known_client(app: App, client_id: str) -> Optional[dict]:
    """The client: registered, or named by its metadata document (fetched, or kept from the last hour); None
    when unknown or its document cannot be used."""
    now = time.time()
    found = await app.store.off_loop(oauth_store.client, app.store, client_id, now) if client_id else None
    if not is_metadata_document_url(client_id) or (found is not None and found["created_at"] > now - DOCUMENT_SECONDS):
        return found
    document = await _client_document(app, client_id)
    if document is None:
        return None
    name, redirect_uris = document
    await app.store.off_loop(oauth_store.save_document_client, app.store, client_id, name, redirect_uris, now)
    return {"client_id": client_id, "name": name, "redirect_uris": redirect_uris, "source": "metadata-document",
            "created_at": now, "last_used_at": None, "used": False}


async def _client_document(app: App, url: str) -> Optional[tuple]:
    """(client_name, redirect_uris) of a usable metadata document at `url`, or None (why: in the log)."""
    http = app.http
    try:
        reply = await http.run_blocking(http.exchange, "GET", url, {"Accept": "application/json"}, b"",
                                        DOCUMENT_TIMEOUTS, read_at_most(DOCUMENT_BYTES, "the document"))
    except (ConnectFailed, NoAnswer) as failed:
        log(f"OAuth: the client metadata document {url[:200]} could not be fetched: {failed}", "warning")
        return None
    document = reply.json() if reply.status == 200 else None
    if not isinstance(document, dict) or document.get("client_id") != url:
        log(f"OAuth: {url[:200]} is not a client metadata document naming itself: {reply.described('one')}",
            "warning")
        return None
    name = document.get("client_name", urlsplit(url).hostname)
    try:
        redirect_uris = OAuthServer.checked_redirect_uris(document.get("redirect_uris"))
    except OAuthError:
        log(f"OAuth: the client metadata document {url[:200]} names no usable redirect URIs", "warning")
        return None
    if (not isinstance(name, str) or not name.strip() or len(name) > MAX_CLIENT_NAME_LENGTH
            or document.get("token_endpoint_auth_method", "none") != "none"):
        log(f"OAuth: the client metadata document {url[:200]} has an unusable name or auth method", "warning")
        return None
    return name.strip(), redirect_uris


def token_identity(app: App, access_token: str) -> Optional[KeyIdentity]:
    """The organization and key scope of a live access token issued for /mcp, or None. Its key_id,
    "oauth:<client id>:<chain>", makes MCP's per-key rate limits count per grant, and names the client in the
    audit log (storage/audit.py's key_actor)."""
    found = oauth_store.token(app.store, token_digest(access_token))
    if (found is None or found["kind"] != "access" or found["revoked_at"] is not None
            or found["expires_at"] < time.time() or found["resource"] != mcp_resource(app.config.frontend_url)
            or found["scope"] not in MCP_SCOPES):
        return None
    if _use_due(found["chain_id"]):
        oauth_store.record_token_use(app.store, token_digest(access_token), time.time())
    return KeyIdentity(found["organization_id"], MCP_SCOPES[found["scope"]],
                       f"oauth:{found['client_id']}:{found['chain_id'][:16]}")


TOKEN_USE_SECONDS = 60.0  # a grant's last use is written at most this often per process (Connected apps' "last use")
_use_written: dict = {}  # chain id -> time.monotonic() of the last use written by this process


def _use_due(chain_id: str) -> bool:
    now = time.monotonic()
    if now < _use_written.get(chain_id, -TOKEN_USE_SECONDS) + TOKEN_USE_SECONDS:
        return False
    if len(_use_written) >= 1024:
        _use_written.clear()
    _use_written[chain_id] = now
    return True


class OAuthError(ApiError):
    """An RFC 6749 / RFC 7591 error answer."""

    def __init__(self, error: str, description: str, status: int = 400):
        headers = list(NO_STORE)
        if status == 401:
            headers.append(("WWW-Authenticate", 'Bearer error="invalid_client"'))
        super().__init__(status, {"error": error, "error_description": description}, headers)


# Schemes a browser or the system handles itself, which a native app's private-use scheme (RFC 8252 section
# 7.1) must not be: a redirect there would run script, read files or reach another program on the client's word.
NOT_APP_SCHEMES = frozenset(("http", "javascript", "data", "vbscript", "file", "about", "blob", "filesystem", "ftp",
                             "ws", "wss", "mailto", "tel", "sms", "view-source", "chrome", "chrome-extension",
                             "intent", "jar"))


def allowed_redirect_uri(uri: str) -> bool:
    """A redirect URI allowed for a public client (RFC 8252): https with a host, http on a loopback host, or a
    native app's private-use scheme (Cursor's cursor://anysphere.cursor-mcp/oauth/callback); never a fragment."""
    try:
        parts = urlsplit(uri)
        host = parts.hostname or ""
        parts.port  # raises on a port that is not a number
    except ValueError:
        return False
    if parts.fragment or "@" in parts.netloc or any(character in uri for character in " \t\r\n\\<>\"'"):
        return False  # (user info would let "https://claude.ai@evil.example" pass for claude.ai on the consent page)
    if not all(character.isascii() and (character.isalnum() or character in ".-:") for character in host):
        return False  # the host goes into the consent page's CSP header: nothing but a host name's characters
    if parts.scheme == "https" or parts.scheme == "http":
        return bool(host) and (parts.scheme == "https" or host in LOOPBACK_HOSTS)
    return redirect_scheme(uri) is not None and parts.scheme not in NOT_APP_SCHEMES and bool(parts.path or host)


def redirect_destination(uri: str) -> tuple:
    """(what the consent page names as where it sends the person back, the CSP form-action source allowing it):
    an origin for a web redirect, the scheme for a native app's own (cursor://anysphere.cursor-mcp, cursor:)."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https"):
        origin = f"{parts.scheme}://{parts.netloc}"
        return parts.netloc, origin
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:", f"{parts.scheme}:"


def redirect_scheme(uri: str) -> Optional[str]:
    """The URI's scheme as written when it is a well-formed one (RFC 3986: a letter, then letters, digits, + - .)."""
    scheme, colon, _ = uri.partition(":")
    return scheme.lower() if colon and len(scheme) <= 64 and scheme[:1].isascii() and scheme[:1].isalpha() and all(
        character.isascii() and (character.isalnum() or character in "+-.") for character in scheme) else None


def _form(request: Request) -> dict:
    """A form-encoded body (the last value wins when a name repeats)."""
    if "application/x-www-form-urlencoded" not in request.headers.get("content-type", "").lower():
        raise OAuthError("invalid_request", "The body must be application/x-www-form-urlencoded")
    try:
        return dict(parse_qsl(request.body.decode("utf-8"), keep_blank_values=True))
    except (UnicodeDecodeError, ValueError):
        raise OAuthError("invalid_request", "The body is not a valid form")


_METADATA = ("200", {"type": "object"})
_NOT_AVAILABLE = {"404": json_body(ref("OAuthError"), "FRONTEND_URL is neither https nor loopback http: no OAuth")}
# Refusals in RFC 6749 / RFC 7591's shape; a 429 is the registration limit's (OAuthError) or REQUEST_LIMIT's.
_OAUTH_REFUSALS = {
    **_NOT_AVAILABLE,
    "400": json_body(ref("OAuthError"), "`error` names the problem (RFC 6749 section 5.2, RFC 7591 section 3.2.2)"),
    "401": json_body(ref("OAuthError"), "An unknown client_id (invalid_client)"),
    "429": {**json_body({"anyOf": [ref("OAuthError"), ref("Throttled")]}, "Too many registrations or requests"),
            "headers": {"Retry-After": {"description": "Seconds until a retry can succeed", "schema": INTEGER}}},
}


class OAuthServer:
    """The authorization server's routes: metadata, registration, token and revocation."""

    def __init__(self, app: App):
        self.app = app
        self.store = app.store
        self.guard = app.guard

    @property
    def issuer(self) -> str:
        return self.app.config.frontend_url

    @staticmethod
    @route_options(authenticated=False)  # CORS preflights carry no credentials
    @documented("CORS preflight", ("204", {"description": "No content"}))
    def preflight(request: Request) -> Response:
        return Response(204, b"", "", list(CORS))

    @route_options(authenticated=False)
    @documented("OAuth 2.0 Authorization Server Metadata (RFC 8414), for MCP clients", _METADATA,
                more_answers=_NOT_AVAILABLE)
    def server_metadata(self, request: Request) -> Response:
        refuse_unless_issuer(self.issuer)
        issuer = self.issuer
        return json_response({
            "issuer": issuer,
            "authorization_endpoint": issuer + "/oauth/authorize",
            "token_endpoint": issuer + "/oauth/token",
            "registration_endpoint": issuer + "/oauth/register",
            "revocation_endpoint": issuer + "/oauth/revoke",
            "scopes_supported": list(MCP_SCOPES),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,  # RFC 9207: every answer names the issuer
            "client_id_metadata_document_supported": True,
        }, 200, [("Cache-Control", "max-age=300"), *CORS])

    @route_options(authenticated=False)
    @documented("OAuth 2.0 Protected Resource Metadata (RFC 9728) of the MCP endpoint", _METADATA,
                more_answers=_NOT_AVAILABLE)
    def resource_metadata(self, request: Request) -> Response:
        refuse_unless_issuer(self.issuer)
        return json_response({
            "resource": mcp_resource(self.issuer),
            "authorization_servers": [self.issuer],
            "scopes_supported": list(MCP_SCOPES),
            "bearer_methods_supported": ["header"],
            "resource_name": "rustiz MCP",
        }, 200, [("Cache-Control", "max-age=300"), *CORS])

    @route_options(authenticated=False, body_limit=REGISTRATION_BODY_BYTES)
    @documented("Dynamic Client Registration (RFC 7591): public clients only, no secret", ("201", {"type": "object"}),
                request={"content": {"application/json": {"schema": {"type": "object"}}}},
                more_answers=_OAUTH_REFUSALS)
    async def register(self, request: Request) -> Response:
        refuse_unless_issuer(self.issuer)
        decision = await self.store.off_loop(self.store.count_request, "oauth-register " + self.guard.client_address(
            request), REGISTRATIONS_PER_ADDRESS, REGISTRATIONS_WINDOW_SECONDS)
        if not decision.allowed:
            raise ApiError(429, {"error": "too_many_requests", "error_description": (
                "Too many clients registered from your address")}, [("Retry-After", str(decision.retry_after)), *CORS])
        try:
            metadata = request.json()
        except ApiError:
            raise OAuthError("invalid_client_metadata", "The body must be a JSON object")
        if not isinstance(metadata, dict):
            raise OAuthError("invalid_client_metadata", "The body must be a JSON object")
        redirect_uris = self.checked_redirect_uris(metadata.get("redirect_uris"))
        name = metadata.get("client_name", "Unnamed client")
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_CLIENT_NAME_LENGTH:
            raise OAuthError("invalid_client_metadata",
                             f"client_name must be a text of 1 to {MAX_CLIENT_NAME_LENGTH} characters")
        if metadata.get("token_endpoint_auth_method", "none") != "none":
            raise OAuthError("invalid_client_metadata", "Only public clients: token_endpoint_auth_method must be none")
        grant_types = self._subset(metadata, "grant_types", ["authorization_code", "refresh_token"])
        response_types = self._subset(metadata, "response_types", ["code"])
        client_id = secrets.token_urlsafe(24)
        now = time.time()
        await self.store.off_loop(oauth_store.register_client, self.store, client_id, name.strip(), redirect_uris,
                                  "dcr", now)
        return json_response({
            "client_id": client_id, "client_id_issued_at": int(now), "client_name": name.strip(),
            "redirect_uris": redirect_uris, "grant_types": grant_types, "response_types": response_types,
            "token_endpoint_auth_method": "none",
        }, 201, list(NO_STORE))

    @staticmethod
    def checked_redirect_uris(value: Any) -> list:
        if not isinstance(value, list) or not value or len(value) > MAX_REDIRECT_URIS:
            raise OAuthError("invalid_redirect_uri", f"redirect_uris must list 1 to {MAX_REDIRECT_URIS} URIs")
        for uri in value:
            if not isinstance(uri, str) or len(uri) > MAX_REDIRECT_URI_LENGTH or not allowed_redirect_uri(uri):
                raise OAuthError("invalid_redirect_uri", "Each redirect URI must be https, http on a loopback "
                                                         "address (127.0.0.1, [::1], localhost), or an app's own "
                                                         "scheme (cursor://…), without a fragment")
        return list(dict.fromkeys(value))

    @staticmethod
    def _subset(metadata: dict, field: str, allowed: list) -> list:
        value = metadata.get(field, allowed)
        if not isinstance(value, list) or not all(isinstance(item, str) and item in allowed for item in value):
            raise OAuthError("invalid_client_metadata", f"{field} may only name {', '.join(allowed)}")
        return value or allowed

    # --- the token endpoint -----------------------------------------------------------------------

    @route_options(authenticated=False, body_limit=TOKEN_BODY_BYTES)
    @documented("OAuth token endpoint: authorization_code (PKCE S256) and refresh_token grants, form-encoded",
                ("200", {"type": "object"}),
                request={"content": {"application/x-www-form-urlencoded": {"schema": {"type": "object"}}}},
                more_answers=_OAUTH_REFUSALS)
    async def token(self, request: Request) -> Response:
        refuse_unless_issuer(self.issuer)
        form = _form(request)
        grant_type = form.get("grant_type", "")
        if grant_type not in ("authorization_code", "refresh_token"):
            raise OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
        client_id = form.get("client_id", "")
        now = time.time()
        client = await known_client(self.app, client_id)
        if client is None:
            raise OAuthError("invalid_client", "Unknown client_id", 401)
        resource = form.get("resource")
        if resource is not None and resource != mcp_resource(self.issuer):
            raise OAuthError("invalid_target", f"resource must be {mcp_resource(self.issuer)}")
        if grant_type == "authorization_code":
            grant = await self._code_grant(form, client_id, now)
        else:
            grant = await self._refresh_grant(form, client_id, now)
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        await self.store.off_loop(oauth_store.issue_tokens, self.store, token_digest(access), token_digest(refresh),
                                  grant["chain_id"], grant, now, ACCESS_SECONDS, REFRESH_SECONDS)
        return json_response({"access_token": access, "token_type": "Bearer", "expires_in": ACCESS_SECONDS,
                              "refresh_token": refresh, "scope": grant["scope"]}, 200, list(NO_STORE))

    async def _code_grant(self, form: dict, client_id: str, now: float) -> dict:
        """The grant of a good code (used up as it is read); raises OAuthError."""
        code, verifier = form.get("code", ""), form.get("code_verifier", "")
        if not code:
            raise OAuthError("invalid_request", "code is required")
        if not 43 <= len(verifier) <= 128:
            raise OAuthError("invalid_request", "code_verifier (PKCE, 43 to 128 characters) is required")
        code_hash = token_digest(code)
        grant = await self.store.off_loop(oauth_store.take_authorization_code, self.store, code_hash)
        if grant is None:
            raise OAuthError("invalid_grant", "Unknown authorization code")
        if grant["reused"]:  # OAuth 2.1 4.1.3: the tokens the code gave are revoked
            await self.store.off_loop(oauth_store.revoke_chain_id, self.store, code_hash, now)
            raise OAuthError("invalid_grant", "The authorization code was already used")
        if grant["expires_at"] < now:
            raise OAuthError("invalid_grant", "The authorization code expired")
        if grant["client_id"] != client_id:
            raise OAuthError("invalid_grant", "The authorization code was issued to another client")
        if form.get("redirect_uri") != grant["redirect_uri"]:
            raise OAuthError("invalid_grant", "redirect_uri differs from the authorization request's")
        if not compare_digest(pkce_challenge(verifier).encode(), grant["code_challenge"].encode()):
            raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge")
        if grant["resource"] != mcp_resource(self.issuer):
            raise OAuthError("invalid_target", "The code was issued for another resource")
        return {**grant, "chain_id": code_hash}

    async def _refresh_grant(self, form: dict, client_id: str, now: float) -> dict:
        """The grant of a good refresh token, which is revoked (rotated); raises OAuthError. A reused one revokes
        its chain."""
        refresh = form.get("refresh_token", "")
        if not refresh:
            raise OAuthError("invalid_request", "refresh_token is required")
        refresh_hash = token_digest(refresh)
        found = await self.store.off_loop(oauth_store.token, self.store, refresh_hash)
        if found is None or found["kind"] != "refresh" or found["client_id"] != client_id:
            raise OAuthError("invalid_grant", "Unknown refresh token")
        if found["expires_at"] < now:
            raise OAuthError("invalid_grant", "The refresh token expired")
        found = await self.store.off_loop(oauth_store.revoke_refresh_token, self.store, refresh_hash, now)
        if found is None or found["revoked_at"] is not None:
            raise OAuthError("invalid_grant", "The refresh token was already used or revoked: its grant is revoked")
        scope = form.get("scope")
        if scope is not None and scope != found["scope"]:
            raise OAuthError("invalid_scope", "A refresh keeps the scope the person granted")
        return found

    @route_options(authenticated=False, body_limit=TOKEN_BODY_BYTES)
    @documented("Token revocation (RFC 7009): 200 whether or not the token was known", ("200", ANY),
                request={"content": {"application/x-www-form-urlencoded": {"schema": {"type": "object"}}}},
                more_answers=_OAUTH_REFUSALS)
    async def revoke(self, request: Request) -> Response:
        form = _form(request)
        value = form.get("token", "")
        if not value:
            raise OAuthError("invalid_request", "token is required")
        await self.store.off_loop(oauth_store.revoke_chain, self.store, token_digest(value),
                                  form.get("client_id") or None, time.time())
        return json_response({}, 200, list(NO_STORE))


_CONNECTED_CLIENT = object_schema({"id": STRING, "name": STRING, "scope": STRING, "createdAt": STRING,
                                   "lastUsedAt": STRING})


class ConnectedClients:
    """The organization's connected MCP clients (GET /public/v1/oauth/clients) and their revocation."""

    def __init__(self, app: App):
        self.store = app.store

    @documented("The MCP clients holding a live grant in the organization (rustiz: OAuth connections)",
                ("200", array_of(_CONNECTED_CLIENT)))
    def list_clients(self, request: Request, organization_id: str) -> Response:
        clients = oauth_store.organization_clients(self.store, organization_id, time.time())
        return json_response([{"id": found["client_id"], "name": found["name"], "scope": found["scope"],
                               "createdAt": iso_at(found["created_at"]), "lastUsedAt": iso_at(found["last_used_at"])}
                              for found in clients], 200, [("Cache-Control", "no-store")])

    @route_options(audit="oauth_client.revoked")
    @documented("Revoke an MCP client's access to the organization: its tokens stop working at once (rustiz)",
                ("200", object_schema({"id": STRING})), "NotFound", (parameter("path", "id", "The client's id"),))
    def revoke(self, request: Request, organization_id: str) -> Response:
        client_id = request.params["id"]
        if not oauth_store.revoke_client_grants(self.store, organization_id, client_id, time.time()):
            raise not_found("No connected application with this id in the organization")
        return json_response({"id": client_id}, 200, [("Cache-Control", "no-store")])
