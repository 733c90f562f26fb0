"""Single sign-on with OpenID Connect: GET /auth/methods, GET /auth/oidc/start (to the identity provider) and
GET /auth/oidc/callback (back, signed in with the same session cookie as a password sign-in).

Rules:
- The authorization code flow with PKCE (S256), a state and a nonce: the state is random, good once, ten minutes
  long, kept in the database (any worker finishes the flow) and bound to the browser that started it by a
  short HttpOnly cookie, so a link made in another browser cannot sign this one in (login CSRF).
- The issuer's discovery document and keys (JWKS) are fetched through the one outbound client (App.http) and
  its address guard, each answer read within a bound, and kept an hour; the keys are fetched again once when a
  token names a key they do not have (the issuer rotated them).
- The ID token is trusted only once jwt.py has checked its signature (RS256 or ES256) and its claims.
- A person signs in when their e-mail is verified by the issuer and is a member of an organization or has
  a live invite, which is then accepted (member_to_sign_in). Every refusal sends the browser back to the sign-in page with a code the page words
  itself (a crafted link cannot make it show any text but an e-mail address); the details go to the log.
"""
from __future__ import annotations

import base64
import re
import secrets
import time
from typing import Any, NamedTuple, Optional
from urllib.parse import quote, urlencode, urlsplit

from rustiz import (
    ApiError, App, OidcSettings, Request, Response, Store, duration, json_response, log, route_options, sha256,
    utc_now_iso,
)
from _operator import _compare_digest as compare_digest
from .api_docs import STRING, documented, object_schema, parameter
from .http_client import ConnectFailed, HttpReply, NoAnswer, Timeouts, read_at_most
from .jwt import Expected, TokenRefused, UnknownKey, verified_claims
from .storage import members as member_store
from .storage import oidc as oidc_store
from .storage import web_users as web_user_store
from .web import PASSWORD_ITERATIONS, session_organization, start_web_session

FLOW_SECONDS = 600  # from GET /auth/oidc/start to the callback: signing in at the provider takes a minute or two
CACHE_SECONDS = 3600  # how long the discovery document and the keys are kept
DOCUMENT_BYTES = 256 * 1024  # the most read of a discovery document, a key set, a token or userinfo answer
TIMEOUTS = Timeouts(connect=5.0, read=10.0, total=20.0)
BROWSER_COOKIE = "rustiz_oidc"
STARTS_PER_ADDRESS = 60  # sign-ins started per client address per window: each one is a row until it expires
STARTS_WINDOW_SECONDS = 600
SCOPES = "openid email profile"
STATE_SHAPE = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)
# The password hash of a person made by single sign-on: well-formed, so a password sign-in costs the usual
# hashing, and its digest is not hexadecimal, so no password ever matches it.
NO_PASSWORD_HASH = f"pbkdf2_sha256${PASSWORD_ITERATIONS}${'0' * 32}$single-sign-on"


class SignInRefused(Exception):
    """The sign-in ends on the sign-in page with `code` (which the page words); `detail` goes to the log."""

    def __init__(self, code: str, detail: str, email: str = ""):
        super().__init__(detail)
        self.code, self.email = code, email


class Discovery(NamedTuple):
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: Optional[str]
    client_secret_basic: bool  # else client_secret_post (what the issuer says its token endpoint takes)


def cookie_value(request: Request, name: str) -> Optional[str]:
    for part in request.headers.get("cookie", "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name and value:
            return value
    return None


def json_answer(reply: HttpReply) -> Any:
    """The answer's JSON, or None (not JSON, or nested too deep for the parser: a hostile server's)."""
    try:
        return reply.json()
    except RecursionError:
        return None


def endpoint(document: dict, name: str, issuer: str, required: bool = True) -> Optional[str]:
    """An endpoint of the discovery document: an absolute URL, https unless the issuer itself is on http."""
    url = document.get(name)
    if url is None and not required:
        return None
    schemes = ("https", "http") if issuer.startswith("http://") else ("https",)
    try:
        usable = isinstance(url, str) and urlsplit(url).scheme in schemes and bool(urlsplit(url).hostname)
    except ValueError:  # (an unbalanced [ in the host, a port that is no number)
        usable = False
    if not usable:
        raise SignInRefused("setup", f"the issuer's discovery document has no usable {name} ({str(url)[:100]!r})")
    return url


class IdentityProvider:
    """The issuer as rustiz talks to it: its discovery document and keys, each kept for an hour per worker."""

    def __init__(self, app: App, settings: OidcSettings):
        self.app, self.settings = app, settings
        self._discovery: Optional[tuple] = None  # (Discovery, fetched at)
        self._keys: Optional[tuple] = None  # (list of JWKs, fetched at)

    async def call(self, method: str, url: str, headers: Optional[dict] = None, body: bytes = b"") -> HttpReply:
        """One exchange through the outbound client and its guard, the answer read up to DOCUMENT_BYTES."""
        http = self.app.http
        try:
            return await http.run_blocking(http.exchange, method, url, dict(headers or {}), body, TIMEOUTS,
                                           read_at_most(DOCUMENT_BYTES, "the answer"))
        except (ConnectFailed, NoAnswer) as failed:
            raise SignInRefused("unreachable", f"{method} {url[:200]}: {failed}") from None

    async def json_document(self, url: str, what: str, headers: Optional[dict] = None) -> dict:
        reply = await self.call("GET", url, {"Accept": "application/json", **(headers or {})})
        document = json_answer(reply) if reply.status == 200 else None
        if not isinstance(document, dict):
            raise SignInRefused("unreachable", f"{what} at {url[:200]}: {reply.described('a JSON object')}")
        return document

    async def discovery(self) -> Discovery:
        if self._discovery is not None and time.monotonic() - self._discovery[1] < CACHE_SECONDS:
            return self._discovery[0]
        issuer = self.settings.issuer
        document = await self.json_document(issuer.rstrip("/") + "/.well-known/openid-configuration",
                                            "the discovery document")
        if document.get("issuer") != issuer:  # OpenID Connect Discovery 4.3: exactly the configured issuer
            named = str(document.get("issuer"))[:100]
            raise SignInRefused("setup", f"the discovery document names the issuer {named!r}, not "
                                         f"RUSTIZ_OIDC_ISSUER={issuer!r}")
        methods = document.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        if not isinstance(methods, list) or not {"client_secret_basic", "client_secret_post"} & set(map(str, methods)):
            raise SignInRefused("setup", "the issuer's token endpoint takes neither client_secret_basic nor "
                                         "client_secret_post")
        found = Discovery(endpoint(document, "authorization_endpoint", issuer),
                          endpoint(document, "token_endpoint", issuer), endpoint(document, "jwks_uri", issuer),
                          endpoint(document, "userinfo_endpoint", issuer, required=False),
                          "client_secret_basic" in methods)
        self._discovery = (found, time.monotonic())
        return found

    async def keys(self, again: bool = False) -> list:
        if not again and self._keys is not None and time.monotonic() - self._keys[1] < CACHE_SECONDS:
            return self._keys[0]
        keys = (await self.json_document((await self.discovery()).jwks_uri, "the issuer's keys")).get("keys")
        if not isinstance(keys, list):
            raise SignInRefused("unreachable", "the issuer's key set (jwks_uri) has no list of keys")
        self._keys = (keys, time.monotonic())
        return keys

    async def verified(self, id_token: Any, nonce: str) -> dict:
        """The ID token's claims, checked (jwt.py); the keys fetched again once for a key rustiz does not know."""
        expected = Expected(self.settings.issuer, self.settings.client_id, nonce, time.time())
        try:
            try:
                return verified_claims(id_token, await self.keys(), expected)
            except UnknownKey:
                return verified_claims(id_token, await self.keys(again=True), expected)
        except TokenRefused as refused:
            raise SignInRefused("token-" + refused.check, f"the ID token was refused: {refused}") from None

    async def tokens(self, code: str, code_verifier: str, redirect_uri: str) -> dict:
        """The token endpoint's answer for the code (RFC 6749 4.1.3, with PKCE), the client authenticated as the
        issuer's discovery document says it takes."""
        found = await self.discovery()
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                "code_verifier": code_verifier}
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        if found.client_secret_basic:  # (RFC 6749 2.3.1: each part form-encoded first)
            pair = f"{quote(self.settings.client_id, safe='')}:{quote(self.settings.client_secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form.update(client_id=self.settings.client_id, client_secret=self.settings.client_secret)
        reply = await self.call("POST", found.token_endpoint, headers, urlencode(form).encode())
        answer = json_answer(reply)
        if reply.status != 200 or not isinstance(answer, dict):
            error = answer.get("error") if isinstance(answer, dict) else None
            raise SignInRefused("refused", f"the token endpoint refused the code: "
                                           f"{str(error)[:80] if isinstance(error, str) else reply.described('JSON')}")
        return answer

    async def userinfo(self, access_token: Any, subject: str) -> dict:
        """The userinfo claims, for an issuer that keeps the e-mail out of the ID token; {} when it has no
        userinfo endpoint. They must be about the ID token's subject (OpenID Connect Core 5.3.2)."""
        url = (await self.discovery()).userinfo_endpoint
        if url is None or not isinstance(access_token, str):
            return {}
        claims = await self.json_document(url, "userinfo", {"Authorization": f"Bearer {access_token}"})
        if claims.get("sub") != subject:
            raise SignInRefused("token-subject", "the userinfo answer is about another subject than the ID token")
        return claims


def verified_email(claims: dict) -> str:
    """The e-mail the issuer vouches for (email_verified true), lower-cased."""
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email or len(email) > 320:
        raise SignInRefused("no-email", "the identity provider sent no e-mail address (is the `email` scope allowed "
                                        "for rustiz's client?)")
    email = email.strip().lower()
    if claims.get("email_verified") not in (True, "true"):  # (a few issuers send the string)
        raise SignInRefused("unverified", f"{email} is not verified by the identity provider", email)
    return email


def member_to_sign_in(store: Store, email: str, address: str) -> tuple:
    """(web user id, organization id) that the person with this verified e-mail signs in as (the organization
    as for a password sign-in); SignInRefused ("not-member") when they are nobody's member."""
    # Pending invites of this e-mail are accepted here (the issuer vouches for the address they were sent to):
    # the person joins (a web user made with NO_PASSWORD_HASH when there is none) and lands in the newest's.
    joined = member_store.accept_invites_of(store, email, utc_now_iso(), NO_PASSWORD_HASH)
    if joined is not None:
        organization_id, user_id, accepted = joined
        record_invites_accepted(store, user_id, accepted, address)
        return user_id, organization_id
    user = web_user_store.web_user(store, email)
    organization = session_organization(store, user[0], user[1]) if user else None
    if organization is None:
        raise SignInRefused("not-member", f"{email} is not a member of any organization", email)
    return user[0], organization


def record_invites_accepted(store: Store, user_id: str, accepted: list, address: str) -> None:
    """The audit log's entries of invites accepted by signing in: the person who joined is each one's actor, as
    when an invite is accepted with a password (team.py)."""
    from rustiz_features import audit
    from .storage import audit as audit_store
    actor = audit_store.user_actor(store, user_id)
    for invite_id, organization_id in accepted:
        audit.record(store, organization_id, actor, "invite.accepted", "invite", [invite_id], address)


_METHODS = object_schema({"password": {"type": "boolean"},
                          "sso": {"oneOf": [object_schema({"name": STRING}), {"type": "null"}]}})
_REDIRECT = {"description": "To the identity provider, or back to the web app", "content": {}}


class SingleSignOn:
    """GET /auth/methods, GET /auth/oidc/start and GET /auth/oidc/callback."""

    def __init__(self, app: App):
        self.app, self.store, self.config, self.guard = app, app.store, app.config, app.guard
        self.settings: Optional[OidcSettings] = app.config.oidc
        self.provider = IdentityProvider(app, self.settings) if self.settings else None

    @property
    def redirect_uri(self) -> str:
        return f"{self.config.frontend_url}/auth/oidc/callback"

    @route_options(authenticated=False)
    @documented("How people sign in to the web app here: with a password (false when RUSTIZ_OIDC_ONLY=1), and "
                "through single sign-on (its button's name) when it is configured", ("200", _METHODS))
    def methods(self, request: Request) -> Response:
        sso = None if self.settings is None else {"name": self.settings.name or None}
        return json_response({"password": not (self.settings and self.settings.only), "sso": sso}, 200,
                             [("Cache-Control", "no-store")])

    def _off(self) -> ApiError:
        return ApiError(404, {"statusCode": 404, "error": "Not Found", "message": (
            "Single sign-on is not configured on this server (RUSTIZ_OIDC_ISSUER, RUSTIZ_OIDC_CLIENT_ID, "
            "RUSTIZ_OIDC_CLIENT_SECRET)")})

    @route_options(authenticated=False)
    @documented("Start signing in through the identity provider (RUSTIZ_OIDC_ISSUER): a redirect to its sign-in "
                "page, which comes back to {FRONTEND_URL}/auth/oidc/callback", ("302", _REDIRECT))
    async def start(self, request: Request) -> Response:
        if self.provider is None:
            raise self._off()
        decision = await self.store.off_loop(self.store.count_request, "oidc-start " + self.guard.client_address(
            request), STARTS_PER_ADDRESS, STARTS_WINDOW_SECONDS)
        if not decision.allowed:
            raise ApiError(429, {"statusCode": 429, "error": "Too Many Requests", "message": (
                f"Too many sign-ins started from your address: try again in {duration(decision.retry_after)}")},
                [("Retry-After", str(decision.retry_after))])
        try:
            found = await self.provider.discovery()
        except SignInRefused as refused:
            return self._back_to_sign_in(refused)
        state, nonce, browser = secrets.token_urlsafe(32), secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        verifier = secrets.token_urlsafe(48)  # PKCE (RFC 7636), S256
        challenge = base64.urlsafe_b64encode(sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        now = time.time()
        await self.store.off_loop(oidc_store.start_oidc_flow, self.store, state, sha256(browser.encode()).hexdigest(),
                                  nonce, verifier, now + FLOW_SECONDS, now)
        query = urlencode({"response_type": "code", "client_id": self.settings.client_id, "scope": SCOPES,
                           "redirect_uri": self.redirect_uri, "state": state, "nonce": nonce,
                           "code_challenge": challenge, "code_challenge_method": "S256"}, quote_via=quote)
        location = found.authorization_endpoint + ("&" if "?" in found.authorization_endpoint else "?") + query
        # SameSite=Lax: the cookie must come back with the provider's cross-site redirect to the callback.
        cookie = (f"{BROWSER_COOKIE}={browser}; HttpOnly; SameSite=Lax; Path=/auth/oidc; Max-Age={FLOW_SECONDS}"
                  + ("; Secure" if self.guard.over_https(request) else ""))
        return Response(302, b"", "text/plain; charset=utf-8", [("Location", location), ("Set-Cookie", cookie),
                                                                ("Cache-Control", "no-store")])

    @route_options(authenticated=False)
    @documented("Where the identity provider sends the browser back: signs it in (the rustiz_session cookie) and "
                "redirects to the web app, or to its sign-in page with ?sso=<what went wrong>", ("302", _REDIRECT),
                parameters=(parameter("query", "code", "The authorization code"),
                            parameter("query", "state", "The sign-in's state, from GET /auth/oidc/start"),
                            parameter("query", "error", "The provider's refusal, e.g. access_denied")))
    async def callback(self, request: Request) -> Response:
        if self.provider is None:
            raise self._off()
        try:
            cookie = await self._signed_in(request)
        except SignInRefused as refused:
            return self._back_to_sign_in(refused)
        return Response(302, b"", "text/plain; charset=utf-8", [
            ("Location", f"{self.config.frontend_url}/"), ("Set-Cookie", cookie), ("Set-Cookie", self._cookie_gone()),
            ("Cache-Control", "no-store")])

    async def _signed_in(self, request: Request) -> str:
        """The flow finished: the session cookie of the person it signed in."""
        query = request.query
        state = query.get("state") or ""
        flow = None
        if STATE_SHAPE.fullmatch(state):  # (what start made: never a NUL, which PostgreSQL refuses)
            flow = await self.store.off_loop(oidc_store.take_oidc_flow, self.store, state, time.time())
        if flow is None:
            raise SignInRefused("expired", "the sign-in's state is unknown, used or expired")
        browser = cookie_value(request, BROWSER_COOKIE) or ""
        if not compare_digest(sha256(browser.encode()).hexdigest().encode(), flow["browser_hash"].encode()):
            raise SignInRefused("other-browser", "the sign-in was started in another browser (its cookie is missing)")
        if query.get("error"):
            raise SignInRefused("denied", f"the identity provider answered {query['error'][:80]!r}")
        if not query.get("code"):
            raise SignInRefused("refused", "the identity provider sent no code")
        tokens = await self.provider.tokens(query["code"], flow["code_verifier"], self.redirect_uri)
        claims = await self.provider.verified(tokens.get("id_token"), flow["nonce"])
        if "email" not in claims:
            claims = {**claims, **await self.provider.userinfo(tokens.get("access_token"), claims["sub"])}
        email = verified_email(claims)
        user_id, organization_id = await self.store.off_loop(member_to_sign_in, self.store, email,
                                                             self.guard.client_address(request))
        cookie, _ = await self.store.off_loop(start_web_session, self.store, self.guard, request, organization_id,
                                              None, user_id)
        log(f"single sign-on: {email} signed in")
        return cookie

    def _back_to_sign_in(self, refused: SignInRefused) -> Response:
        """To the web app's sign-in page, which says what happened from the code (and the e-mail it names)."""
        log(f"single sign-on refused ({refused.code}): {refused}", "warn")
        words = {"sso": refused.code, **({"email": refused.email} if refused.email else {})}
        return Response(302, b"", "text/plain; charset=utf-8", [
            ("Location", f"{self.config.frontend_url}/#/login?" + urlencode(words, quote_via=quote)),
            ("Set-Cookie", self._cookie_gone()), ("Cache-Control", "no-store")])

    @staticmethod
    def _cookie_gone() -> str:
        return f"{BROWSER_COOKIE}=; HttpOnly; SameSite=Lax; Path=/auth/oidc; Max-Age=0"
