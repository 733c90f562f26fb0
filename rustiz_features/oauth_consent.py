"""The authorization endpoint of rustiz's OAuth server (issue 27): GET /oauth/authorize shows a signed-in person
the consent page, POST /oauth/authorize (its form) gives the client a code, or tells it the person said no.

Rules:
- Nothing is redirected to a client before its client_id is known (registered, or its metadata document
  fetched: oauth_server.known_client) and its redirect_uri is one it registered, exactly: those errors are a page here (RFC 6749 4.1.2.1). Later errors go back to the client's redirect URI.
- PKCE S256 is required; the `resource` (RFC 8707), when sent, must be this server's MCP endpoint.
- The person must be signed in to the web app. The session cookie is SameSite=Strict, so a browser sent here
  from the client's site arrives without it: it is sent to the web app (#/connect?resume=...), which signs in
  if needed and opens this page again from rustiz itself, now with the cookie.
- The form carries the session's CSRF token and must come from this server's own page. The scope granted is
  at most the person's role in the organization chosen (a viewer cannot give an agent "full").
- The page's CSP allows its form to lead to the client's redirect URI (form-action), and nothing else.
- A grant is recorded in the audit log (oauth_client.granted), as a revocation is (oauth_client.revoked).
"""
from __future__ import annotations

import html
import secrets
import time
from typing import Optional
from urllib.parse import parse_qsl, quote, urlencode

from rustiz import (
    App, ROLE_SCOPES, Request, Response, hash_api_key, route_options, scope_allows, session_cookie,
)
from _operator import _compare_digest as compare_digest
from .api_docs import documented
from .audit import record_request
from .oauth_server import (
    CODE_SECONDS, MCP_SCOPES, TOKEN_BODY_BYTES, issuer_problem, known_client, mcp_resource, redirect_destination,
    token_digest,
)
from .storage import oauth_server as oauth_store
from .storage import web_users as web_user_store
from .web import refusal_of_cross_site_form

SCOPE_CHOICES = (("mcp:read", "Read only", "See channels, posts and the library; change nothing"),
                 ("mcp:drafts", "Drafts that wait for review", "Create drafts a person approves before they go out"),
                 ("mcp:full", "Full", "Schedule and publish posts, change the library and settings"))
# The OAuth parameters the consent form carries back to POST /oauth/authorize.
FORM_PARAMETERS = ("client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "resource")


class AuthorizationRefused(Exception):
    """A request that is answered with a page here (`status`, `message`), never redirected."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def _page(status: int, title: str, body: str, form_action: str = "'none'") -> Response:
    policy = (f"default-src 'none'; style-src 'unsafe-inline'; form-action {form_action}; frame-ancestors 'none'; "
              "base-uri 'none'")
    document = (f"<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport "
                f"content='width=device-width, initial-scale=1'><title>{html.escape(title)} · rustiz</title>"
                f"<style>{_STYLE}</style></head><body><main>{body}</main></body></html>")
    return Response(status, document.encode(), "text/html; charset=utf-8", [
        ("Content-Security-Policy", policy), ("X-Frame-Options", "DENY"), ("Cache-Control", "no-store"),
        ("Referrer-Policy", "same-origin")])  # (no-referrer would make the form's Origin "null": refused)


_STYLE = (":root{color-scheme:light dark}"
          "body{font:16px/1.5 system-ui,sans-serif;margin:0;background:light-dark(#f5f5f7,#111214);"
          "color:light-dark(#1d1d1f,#ececf1)}"
          "main{max-width:34rem;margin:2rem auto;padding:1.5rem;background:light-dark(#fff,#1e1f23);border-radius:12px}"
          "fieldset{border:1px solid light-dark(#ddd,#3a3b40);border-radius:8px;margin:1rem 0}"
          "label{display:block;margin:.4rem 0}.unverified{color:light-dark(#a15c00,#ffb454);font-weight:600}"
          "small{color:light-dark(#555,#b4b4bb);display:block;margin-left:1.6rem}"
          "button{font:inherit;padding:.5rem 1.2rem;margin-right:.5rem;border-radius:8px;cursor:pointer;"
          "border:1px solid light-dark(#888,#777)}"
          "button[value=allow]{background:light-dark(#1d4ed8,#3b82f6);color:light-dark(#fff,#0b1020);border-color:transparent}"
          "button:focus-visible,select:focus-visible,input:focus-visible{outline:3px solid light-dark(#1d4ed8,#93c5fd);"
          "outline-offset:2px}@media (max-width:480px){main{margin:0;border-radius:0}}")


def _redirect(redirect_uri: str, issuer: str, **values: str) -> Response:
    """Back to the client with `values` (code or error) and the issuer (RFC 9207)."""
    query = urlencode({**{name: value for name, value in values.items() if value}, "iss": issuer}, quote_via=quote)
    location = redirect_uri + ("&" if "?" in redirect_uri else "?") + query
    return Response(302, b"", "text/plain; charset=utf-8", [("Location", location), ("Cache-Control", "no-store")])


class ConsentPage:
    """GET and POST /oauth/authorize."""

    def __init__(self, app: App):
        self.app = app
        self.store = app.store

    @property
    def issuer(self) -> str:
        return self.app.config.frontend_url

    @staticmethod
    def _client_and_redirect(values: dict, client: Optional[dict]) -> tuple:
        """(the client, its redirect URI) of a request; raises AuthorizationRefused (never redirected)."""
        if client is None:
            raise AuthorizationRefused(400, "This application is not registered here (unknown client_id).")
        redirect_uri = values.get("redirect_uri") or (
            client["redirect_uris"][0] if len(client["redirect_uris"]) == 1 else "")
        if redirect_uri not in client["redirect_uris"]:
            raise AuthorizationRefused(400, "The redirect URI is not one this application registered.")
        return client, redirect_uri

    def _request_problem(self, values: dict) -> Optional[tuple]:
        """(error, description) of a request that goes back to the client refused, or None."""
        if values.get("response_type", "code") != "code":
            return "unsupported_response_type", "response_type must be code"
        if not values.get("code_challenge") or values.get("code_challenge_method") != "S256":
            return "invalid_request", "PKCE is required: code_challenge with code_challenge_method S256"
        if (values.get("resource") or mcp_resource(self.issuer)) != mcp_resource(self.issuer):
            return "invalid_target", f"resource must be {mcp_resource(self.issuer)}"
        return None

    def _session(self, request: Request) -> Optional[tuple]:
        """(organization id, CSRF token, role, web user id or None) of the browser's web session, or None."""
        token = session_cookie(request)
        return self.store.web_session(hash_api_key(token)) if token else None

    def _organizations(self, session: tuple) -> list:
        """[(id, name, role)] the person may grant access to."""
        organization_id, _, role, user_id = session
        if user_id is None:  # signed in with the organization's key: that organization only
            return [(organization_id, self.store.organization(organization_id)["name"], role)]
        return web_user_store.organizations_of(self.store, user_id)

    @route_options(authenticated=False)
    @documented("OAuth authorization endpoint: the consent page for a signed-in person (PKCE S256 required)",
                ("200", {"description": "The consent page (HTML), or a redirect", "content": {"text/html": {}}}))
    async def page(self, request: Request) -> Response:
        if issuer_problem(self.issuer) is not None:
            return _page(404, "Cannot connect", f"<h1>Cannot connect</h1><p>{html.escape(issuer_problem(self.issuer))}")
        client = await known_client(self.app, request.query.get("client_id", ""))
        return await self.store.off_loop(self._page, request, client)

    def _page(self, request: Request, known: Optional[dict]) -> Response:
        values = request.query
        try:
            client, redirect_uri = self._client_and_redirect(values, known)
        except AuthorizationRefused as refused:
            return _page(refused.status, "Cannot connect", f"<h1>Cannot connect</h1><p>{html.escape(refused.message)}")
        problem = self._request_problem(values)
        if problem is not None:
            return _redirect(redirect_uri, self.issuer, error=problem[0], error_description=problem[1],
                             state=values.get("state", ""))
        session = self._session(request)
        if session is None:  # (see the module's rules: the web app signs in, then opens this page again)
            location = f"{self.issuer}/#/connect?" + urlencode({"resume": request.target}, quote_via=quote)
            return Response(302, b"", "text/plain; charset=utf-8", [("Location", location),
                                                                    ("Cache-Control", "no-store")])
        return self._consent(client, redirect_uri, values, session)

    def _consent(self, client: dict, redirect_uri: str, values: dict, session: tuple) -> Response:
        organizations = self._organizations(session)
        wanted = [scope for scope in values.get("scope", "").split() if scope in MCP_SCOPES]
        chosen = wanted[0] if len(wanted) == 1 else "mcp:read"
        redirect_host, form_action = redirect_destination(redirect_uri)
        hidden = "".join(f"<input type=hidden name={name} value='{html.escape(values.get(name, ''), True)}'>"
                         for name in FORM_PARAMETERS if name != "redirect_uri")
        hidden += f"<input type=hidden name=redirect_uri value='{html.escape(redirect_uri, True)}'>"
        hidden += f"<input type=hidden name=csrf value='{html.escape(session[1], True)}'>"
        options = "".join(f"<option value='{html.escape(org_id, True)}'{' selected' if org_id == session[0] else ''}>"
                          f"{html.escape(name)}</option>" for org_id, name, _ in organizations)
        scopes = "".join(f"<label><input type=radio name=scope value='{scope}'{' checked' if scope == chosen else ''}>"
                         f" {label}<small>{note}</small></label>" for scope, label, note in SCOPE_CHOICES)
        body = (f"<h1>Connect {html.escape(client['name'])} to rustiz?</h1>"
                f"<p><strong>{html.escape(client['name'])}</strong> at <strong>{html.escape(redirect_host)}</strong> "
                f"<span class=unverified>(unverified)</span> asks to use rustiz through MCP. rustiz does not know "
                f"who made this application: connect it only if you started this yourself.</p>"
                f"<form method=post action='/oauth/authorize'>{hidden}"
                f"<label>Organization <select name=organization>{options}</select></label>"
                f"<fieldset><legend>What may it do?</legend>{scopes}</fieldset>"
                f"<button type=submit name=decision value=allow>Allow</button>"
                f"<button type=submit name=decision value=deny>Deny</button></form>")
        return _page(200, "Connect an application", body, f"'self' {form_action}")

    @route_options(authenticated=False, body_limit=TOKEN_BODY_BYTES)
    @documented("The consent page's form: allow (a code for the client) or deny",
                ("302", {"description": "Back to the client's redirect URI"}),
                request={"content": {"application/x-www-form-urlencoded": {"schema": {"type": "object"}}}})
    async def decide(self, request: Request) -> Response:
        try:
            values = dict(parse_qsl(request.body.decode("utf-8"), keep_blank_values=True))
        except UnicodeDecodeError:
            return _page(400, "Cannot connect", "<h1>Cannot connect</h1><p>The form could not be read.")
        client = await known_client(self.app, values.get("client_id", ""))
        return await self.store.off_loop(self._decide, request, values, client)

    def _decide(self, request: Request, values: dict, known: Optional[dict]) -> Response:
        try:
            client, redirect_uri = self._client_and_redirect(values, known)
            session = self._session(request)
            if session is None:
                raise AuthorizationRefused(401, "You are not signed in to rustiz any more: start again.")
            if refusal_of_cross_site_form(request, self.issuer) is not None or not compare_digest(
                    values.get("csrf", "").encode(), session[1].encode()):
                raise AuthorizationRefused(403, "This form did not come from rustiz's consent page.")
        except AuthorizationRefused as refused:
            return _page(refused.status, "Cannot connect", f"<h1>Cannot connect</h1><p>{html.escape(refused.message)}")
        state = values.get("state", "")
        problem = self._request_problem(values)
        if problem is not None:
            return _redirect(redirect_uri, self.issuer, error=problem[0], error_description=problem[1], state=state)
        if values.get("decision") != "allow":
            return _redirect(redirect_uri, self.issuer, error="access_denied", state=state)
        roles = {org_id: role for org_id, _, role in self._organizations(session)}
        organization_id, scope = values.get("organization", ""), values.get("scope", "")
        if organization_id not in roles or scope not in MCP_SCOPES:
            return _page(400, "Cannot connect", "<h1>Cannot connect</h1><p>Choose one of your organizations and "
                                                "what the application may do.")
        if not scope_allows(ROLE_SCOPES[roles[organization_id]], MCP_SCOPES[scope]):
            return _page(403, "Cannot connect", "<h1>Cannot connect</h1><p>Your role in this organization does not "
                                                "allow giving an application that much: choose less.")
        code = secrets.token_urlsafe(32)
        oauth_store.save_authorization_code(self.store, token_digest(code), client["client_id"], redirect_uri,
                                            values["code_challenge"], mcp_resource(self.issuer), organization_id,
                                            session[3], scope, time.time() + CODE_SECONDS)
        record_request(self.app, request, organization_id, "oauth_client.granted", "oauth_client", [client["client_id"]])
        return _redirect(redirect_uri, self.issuer, code=code, state=state)
