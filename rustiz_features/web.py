"""The web app's sign-in and its files: sessions for the browser UI in web/.

The UI talks only to the public API, as any script could. A person signs in with the organization's API
key or a password (`rustiz user add`); the session is an HttpOnly, SameSite=Strict cookie that stands for
the key (rustiz.Guard), and every change it makes must also carry the session's CSRF token. A session
lives in the database (every worker sees it end at once) and ends with what signed it in: the key
rotated, the password changed, the user removed.

Rules:
- Passwords are hashed off the event loop, a bounded number at a time, and failed password sign-ins are
  counted per email and per client address; an unknown email costs as much as a known one.
- The UI's files are read from the .pyz on the first request for one.
"""
from __future__ import annotations

import asyncio
import os
import time
from typing import Any, Awaitable, Optional, Union
from _operator import _compare_digest as compare_digest

from rustiz import (
    ROLES, ApiError, App, Guard, Request, Response, SESSION_COOKIE, Store, bad_request, duration, hash_api_key,
    json_object, json_response, nest_error, not_found, route_options, session_cookie, sha256,
)
from .api_docs import STRING, array_of, documented, json_body, object_schema
from .storage import web_users as web_user_store


SESSION_SECONDS = 30 * 86400
PASSWORD_ITERATIONS = 200_000
# What an unknown email's password is checked against, so that it takes as long to refuse as a known one's
# (zeros: no password hashes to them).
UNKNOWN_USER_PASSWORD_HASH = f"pbkdf2_sha256${PASSWORD_ITERATIONS}${'0' * 32}${'0' * 64}"
PASSWORD_THREADS = 2  # per worker: PBKDF2 runs there, never on the event loop
MAX_PASSWORD_CHECKS = 16  # per worker, hashing or waiting for a thread; more sign-ins at once get a 503
SIGN_IN_WINDOW_SECONDS = 15 * 60
SIGN_IN_ATTEMPTS_PER_EMAIL = 10  # failed password sign-ins per email (an account) per window, from any address
SIGN_IN_ATTEMPTS_PER_ADDRESS = 30  # failed password sign-ins per client address per window, for any email
SIGN_IN_COUNTER = "sign-in "  # the rate_limit key of those counts: "sign-in email:<email>", "sign-in address:<ip>"
# Pictures and media only from rustiz itself (channel pictures through GET .../integrations/:id/picture,
# uploads under /uploads), and the bucket its uploads redirect to: a post or a setting that names another
# address cannot make a reader's browser fetch it.
WEB_CONTENT_SECURITY_POLICY = ("default-src 'self'; img-src {media} data: blob:; media-src {media} blob:; "
                               "style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; "
                               "base-uri 'none'; form-action 'self'")
_WEB_CONTENT_TYPES = {"html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
                      "css": "text/css; charset=utf-8", "svg": "image/svg+xml", "png": "image/png",
                      "ico": "image/x-icon", "json": "application/json", "webmanifest": "application/manifest+json",
                      "txt": "text/plain; charset=utf-8", "woff2": "font/woff2"}


def content_security_policy(config: Any) -> str:
    """The web app's policy for this server: media from 'self' and FRONTEND_URL (where uploads are said to
    be), and from the bucket when /uploads redirects there (RUSTIZ_STORAGE=s3://..., RUSTIZ_UPLOADS_SERVE=redirect)."""
    from urllib.parse import urlsplit
    storage = config.storage
    frontend = urlsplit(config.frontend_url)
    sources = ["'self'", f"{frontend.scheme}://{frontend.netloc}"]
    if storage is not None and storage.serve == "redirect":
        sources.append(storage.origin())
    return WEB_CONTENT_SECURITY_POLICY.format(media=" ".join(dict.fromkeys(sources)))


def refusal_of_cross_site_form(request: Request, frontend_url: str) -> Optional[str]:
    """The other site a browser says a form post comes from (its Origin, or "cross-site"), or None when it
    comes from this server's own pages (or from no browser). A browser names the page's site in Origin and
    Sec-Fetch-Site; this server's own hosts are the Host asked for and FRONTEND_URL's (a proxy may pass on
    another Host). The scheme is not compared: a TLS proxy may not say it is one."""
    origin = request.headers.get("origin", "").strip()
    own_hosts = {request.headers.get("host", "").strip().lower(),
                 frontend_url.lower().partition("://")[2].partition("/")[0]} - {""}
    if request.headers.get("sec-fetch-site", "").strip().lower() == "cross-site" or (
            origin and origin.lower().partition("://")[2] not in own_hosts):
        return origin or "cross-site"
    return None


def hash_password(password: str) -> str:
    """PBKDF2-SHA256 with a random salt, as `pbkdf2_sha256$iterations$salt$hash` (hex)."""
    import hashlib
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, PASSWORD_ITERATIONS)
    return f"pbkdf2_sha256${PASSWORD_ITERATIONS}${salt.hex()}${digest.hex()}"


def password_matches(password: str, stored: str) -> bool:
    import hashlib
    scheme, iterations, salt, expected = stored.split("$")
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), bytes.fromhex(salt), int(iterations))
    return scheme == "pbkdf2_sha256" and compare_digest(digest.hex().encode(), expected.encode())


class PasswordChecker:
    """Checks passwords in a few threads of their own, made on first use (hashlib lets go of the GIL while
    it hashes, so the event loop keeps serving); at most MAX_PASSWORD_CHECKS wait or run at once."""

    def __init__(self) -> None:
        self._executor: Any = None
        self.in_flight = 0

    async def matches(self, password: str, stored: str) -> bool:
        return await self._in_thread(password_matches, password, stored)

    async def hashed(self, password: str) -> str:
        """hash_password(password), in the same threads and under the same bound as matches."""
        return await self._in_thread(hash_password, password)

    async def _in_thread(self, function: Any, *arguments: str) -> Any:
        if self.in_flight >= MAX_PASSWORD_CHECKS:
            raise ApiError(503, {"statusCode": 503, "error": "Service Unavailable", "message": (
                f"Too many sign-ins at once ({MAX_PASSWORD_CHECKS} are being checked): try again in a few "
                "seconds")}, [("Retry-After", "5")])
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor
            self._executor = ThreadPoolExecutor(PASSWORD_THREADS, thread_name_prefix="rustiz-password")
        self.in_flight += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, function, *arguments)
        finally:
            self.in_flight -= 1


def start_web_session(store: Store, guard: "Guard", request: Request, organization_id: str,
                      api_key_hash: Optional[str] = None, web_user_id: Optional[str] = None) -> tuple:
    """A new session signed in with the key of that hash or by that web user: (Set-Cookie value, CSRF token)."""
    token, csrf_token = os.urandom(32).hex(), os.urandom(16).hex()
    web_user_store.create_web_session(store, hash_api_key(token), organization_id, csrf_token,
                                      time.time() + SESSION_SECONDS, api_key_hash, web_user_id)
    cookie = (f"{SESSION_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={SESSION_SECONDS}"
              + ("; Secure" if guard.over_https(request) else ""))  # never on plain http: no login loop
    return cookie, csrf_token


def session_organization(store: Store, user_id: str, first_organization: str) -> Optional[str]:
    """The organization a person signs in to: the one they first joined while they are a member there, else the
    first of theirs by name; None when they are a member of none (a password or a single sign-on alike)."""
    organizations = [row[0] for row in web_user_store.organizations_of(store, user_id)]
    if not organizations:
        return None
    return first_organization if first_organization in organizations else organizations[0]


def web_files() -> dict:
    """name -> bytes of every file of the UI: web/ beside rustiz.py, or inside the .pyz it runs from."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # above rustiz_features/
    folder = os.path.join(here, "web")
    files = {}
    if os.path.isdir(folder):
        for directory, _, names in os.walk(folder):
            for name in names:
                path = os.path.join(directory, name)
                with open(path, "rb") as file:
                    files[os.path.relpath(path, folder).replace(os.sep, "/")] = file.read()
    elif os.path.isfile(here):  # `here` is the .pyz itself
        import zipfile
        with zipfile.ZipFile(here) as archive:
            for name in archive.namelist():
                if name.startswith("web/") and not name.endswith("/"):
                    files[name[4:]] = archive.read(name)
    return files


# What sign-in and sign-out bodies may weigh: these routes are open to anyone, so nobody may make them
# hold megabytes (a key, an email and a password are well under 1 KiB).
SIGN_IN_BODY_BYTES = 16 * 1024
# For the OpenAPI document (the web app's files are not API, so not in it).
# Who is signed in: the person (null for a session signed in with an API key), their role in the organization
# shown, and every organization they may switch to.
_PERSON = {"oneOf": [object_schema({"id": STRING, "email": STRING, "name": {"type": ["string", "null"]}}),
                     {"type": "null"}]}
_ROLE = {"type": "string", "enum": list(ROLES)}
_MEMBERSHIPS = array_of(object_schema({"id": STRING, "name": STRING, "role": _ROLE}))
# (the session names its organization; its settings, such as shortLink, are GET /public/v1/organization's)
_SESSION_ORGANIZATION = object_schema({"id": STRING, "name": STRING, "timezone": STRING})
_SIGNED_IN = object_schema({"organization": _SESSION_ORGANIZATION, "csrfToken": STRING, "user": _PERSON, "role": _ROLE,
                            "organizations": _MEMBERSHIPS})
_NOT_SIGNED_IN = {"401": json_body(object_schema({"message": STRING}), "Wrong key or password, or not signed in")}


class WebApp:
    """GET / and /web/<file>; POST /auth/login, GET /auth/session, POST /auth/logout."""

    def __init__(self, app: App):
        self.config, self.store, self.guard = app.config, app.store, app.guard
        self.passwords = PasswordChecker()
        self.policy = content_security_policy(app.config)
        self._answers: Optional[dict] = None  # file name -> (bytes, content type, ETag), read on first request

    @route_options(authenticated=False)
    def index(self, request: Request) -> Response:
        return self._serve_file(request, "index.html")

    @route_options(authenticated=False)
    def file(self, request: Request) -> Response:
        return self._serve_file(request, request.params["name"])

    def _serve_file(self, request: Request, name: str) -> Response:
        if self._answers is None:
            self._answers = {name: self._file_answer(name, data) for name, data in web_files().items()}
        answer = self._answers.get(name)
        if answer is None:  # the router's own answer for a path it does not serve
            return json_response({"message": f"Cannot {request.method} {request.target}", "error": "Not Found",
                                  "statusCode": 404}, 404)
        return self._serve(request, answer, self.policy)

    @staticmethod
    def _file_answer(name: str, data: bytes) -> tuple:
        """(bytes, content type, ETag, gzip-compressed bytes or None): text files are compressed once, when
        first asked for, and sent so to browsers that accept gzip (all of them: about a quarter of the bytes)."""
        content_type = _WEB_CONTENT_TYPES.get(name.rpartition(".")[2], "application/octet-stream")
        etag = sha256(data).hexdigest()[:20]
        packed = None
        if content_type.startswith(("text/", "image/svg", "application/json")) and len(data) > 512:
            import gzip
            packed = gzip.compress(data, compresslevel=9, mtime=0)
        return data, content_type, etag, packed

    @staticmethod
    def _serve(request: Request, answer: tuple, policy: str) -> Response:
        data, content_type, etag, packed = answer
        if packed is not None and "gzip" in request.headers.get("accept-encoding", ""):
            data, etag = packed, etag + "-gzip"  # (each encoding its own ETag, as RFC 9110 wants)
        etag = f'"{etag}"'
        headers = [("ETag", etag), ("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff"),
                   ("Content-Security-Policy", policy), ("Referrer-Policy", "no-referrer")]
        if packed is not None:
            headers.append(("Vary", "Accept-Encoding"))
            if data is packed:
                headers.append(("Content-Encoding", "gzip"))
        if etag in request.headers.get("if-none-match", ""):
            return Response(304, b"", "", headers)
        return Response(200, data, content_type, headers)

    @route_options(authenticated=False, body_limit=SIGN_IN_BODY_BYTES)
    @documented("Sign in to the web app: sets the HttpOnly session cookie", ("200", _SIGNED_IN), "BadRequest",
                request={"anyOf": [object_schema({"apiKey": STRING}),
                                   object_schema({"email": STRING, "password": STRING})]},
                more_answers=_NOT_SIGNED_IN)
    def login(self, request: Request) -> Union[Response, Awaitable[Response]]:
        self.refuse_cross_site_sign_in(request)
        body = json_object(request)
        if isinstance(body.get("apiKey"), str) and body["apiKey"].strip():
            key = body["apiKey"].strip()
            identity = self.guard.key_identity(key)
            if identity is None:
                raise ApiError(401, {"statusCode": 401, "message": "This API key is not one of this rustiz's "
                                                                   "organizations (`rustiz key rotate` prints a new one)"})
            if identity.scope != "full":  # (the web app's sessions can do everything)
                raise ApiError(403, {"statusCode": 403, "message": (
                    f"This API key has the scope {identity.scope!r}; the web app signs in with a full key or a password")})
            return self._signed_in(request, identity.organization, api_key_hash=hash_api_key(key))
        if self.config.oidc is not None and self.config.oidc.only:  # (single sign-on: rustiz_features/oidc.py)
            raise ApiError(403, {"statusCode": 403, "error": "Forbidden", "message": (
                "Passwords are turned off on this server: sign in through single sign-on (RUSTIZ_OIDC_ONLY=1)")})
        email, password = body.get("email"), body.get("password")
        if not (isinstance(email, str) and isinstance(password, str) and email and password):
            raise bad_request("Sign in with {\"apiKey\"} or with {\"email\", \"password\"}")
        email = email.strip().lower()
        # Counted before the hashing, so that attempts at once cannot pass the limit; a success is taken back.
        counted = ("address:" + self.guard.client_address(request), "email:" + email)
        self._count_sign_in(counted[0], SIGN_IN_ATTEMPTS_PER_ADDRESS, "from your address")
        self._count_sign_in(counted[1], SIGN_IN_ATTEMPTS_PER_EMAIL, f"for {email}")
        return self._password_sign_in(request, email, password, counted)

    def refuse_cross_site_sign_in(self, request: Request) -> None:
        """Login CSRF: a page of another site must not sign this browser in to an organization of its
        choosing. A cross-site HTML form can send only text/plain, form or multipart bodies (JSON needs
        fetch, which CORS stops), and a browser names the page's site in Origin and Sec-Fetch-Site."""
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise ApiError(415, {"statusCode": 415, "error": "Unsupported Media Type", "message": (
                f"Sign in with a JSON body (Content-Type: application/json), not {content_type or 'no Content-Type'}")})
        other_site = refusal_of_cross_site_form(request, self.config.frontend_url)
        if other_site:
            raise ApiError(403, {"statusCode": 403, "error": "Forbidden", "message": (
                f"A sign-in from another site ({other_site}) is refused: open rustiz's own page to sign in")})

    def _count_sign_in(self, key: str, limit: int, whose: str) -> None:
        """One password sign-in counted against `limit` per window (in the database, shared by every worker):
        the lockout of an email (an account) and of an address after repeated failures."""
        decision = self.store.count_request(SIGN_IN_COUNTER + key, limit, SIGN_IN_WINDOW_SECONDS)
        if not decision.allowed:
            raise ApiError(429, {"statusCode": 429, "error": "Too Many Requests", "message": (
                f"Too many sign-in attempts {whose} (at most {limit} in {SIGN_IN_WINDOW_SECONDS // 60} minutes): "
                f"try again in {duration(decision.retry_after)}")}, [("Retry-After", str(decision.retry_after))])

    async def _password_sign_in(self, request: Request, email: str, password: str, counted: tuple) -> Response:
        user = await self.store.off_loop(web_user_store.web_user, self.store, email)
        # An unknown email costs the same hashing as a known one: how long a refusal takes tells nothing.
        matches = await self.passwords.matches(password, user[2] if user else UNKNOWN_USER_PASSWORD_HASH)
        if user is None or not matches:
            raise ApiError(401, {"statusCode": 401, "message": "Wrong email or password"})
        for key in counted:  # (only failures count towards the lockout)
            await self.store.off_loop(self.store.take_back_hit, SIGN_IN_COUNTER + key)
        return await self.store.off_loop(lambda: self.person_signed_in(request, user[0], user[1]))

    def person_signed_in(self, request: Request, user_id: str, first_organization: str) -> Response:
        """A session for the person, in the organization they first joined while they are a member there, else
        in the first of theirs by name; 403 when they are a member of none any more."""
        chosen = session_organization(self.store, user_id, first_organization)
        if chosen is None:
            raise nest_error(403, "This account is no longer a member of any organization: ask an admin of yours "
                                  "to invite you again")
        return self._signed_in(request, chosen, web_user_id=user_id)

    def _signed_in(self, request: Request, organization_id: str, **made_from: Optional[str]) -> Response:
        cookie, csrf_token = start_web_session(self.store, self.guard, request, organization_id, **made_from)
        user_id = made_from.get("web_user_id")
        role = "admin" if user_id is None else web_user_store.member_role(self.store, user_id, organization_id)
        return json_response({**self.who(organization_id, user_id, role), "csrfToken": csrf_token},
                             200, [("Set-Cookie", cookie), ("Cache-Control", "no-store")])

    def who(self, organization_id: str, user_id: Optional[str], role: str) -> dict:
        """The session answer's organization, person, role and the organizations the person may switch to."""
        organization = self.store.organization(organization_id)
        if user_id is None:
            return {"organization": organization, "user": None, "role": role,
                    "organizations": [{"id": organization_id, "name": organization["name"], "role": role}]}
        return {"organization": organization, "user": web_user_store.person(self.store, user_id), "role": role,
                "organizations": [{"id": org_id, "name": name, "role": their_role} for org_id, name, their_role
                                  in web_user_store.organizations_of(self.store, user_id)]}

    @route_options(authenticated=False)
    @documented("The signed-in organization and the CSRF token changes must send (X-CSRF-Token); {signedIn: false} "
                "when the request carries no session cookie",
                ("200", {"oneOf": [object_schema({"signedIn": {"const": True}, "organization": _SESSION_ORGANIZATION,
                                                  "csrfToken": STRING}),
                                   object_schema({"signedIn": {"const": False}})]}), more_answers=_NOT_SIGNED_IN)
    def session(self, request: Request) -> Response:
        token = session_cookie(request)
        if not token:  # a browser's first visit: a plain answer, not an error in its console
            return json_response({"signedIn": False}, 200, [("Cache-Control", "no-store")])
        found = self.store.web_session(hash_api_key(token))
        if found is None:  # a session that has ended: 401, as every route answers that cookie
            raise ApiError(401, {"statusCode": 401, "message": "Not signed in"})
        organization_id, csrf_token, role, user_id = found
        return json_response({"signedIn": True, **self.who(organization_id, user_id, role), "csrfToken": csrf_token},
                             200, [("Cache-Control", "no-store")])

    @route_options(scope="read", body_limit=SIGN_IN_BODY_BYTES)
    @documented("Go on in another organization the signed-in person is a member of (the web app's switcher)",
                ("200", _SIGNED_IN), "BadRequest NotFound", request=object_schema({"organization": STRING}))
    def switch(self, request: Request, organization_id: str) -> Response:
        token = session_cookie(request)
        if request.user is None or not token or Guard.presented_key(request):
            raise bad_request("Switching organization is for a person signed in to the web app with a password")
        wanted = json_object(request).get("organization")
        if not isinstance(wanted, str) or not wanted:
            raise bad_request("organization must be the id of one of your organizations (GET /auth/session lists them)")
        role = web_user_store.member_role(self.store, request.user, wanted)
        if role is None:  # (another's organization answers as one that does not exist)
            raise not_found("You are not a member of that organization")
        web_user_store.switch_web_session(self.store, hash_api_key(token), wanted)
        found = self.store.web_session(hash_api_key(token))
        return json_response({"signedIn": True, **self.who(wanted, request.user, role), "csrfToken": found[1]},
                             200, [("Cache-Control", "no-store")])

    @route_options(authenticated=False, body_limit=SIGN_IN_BODY_BYTES)
    @documented("Sign out: the session ends and its cookie is cleared",
                ("204", {"description": "Done, with no body", "content": {}}))
    def logout(self, request: Request) -> Response:
        token = session_cookie(request)
        if token:
            web_user_store.end_web_session(self.store, hash_api_key(token))
        return Response(204, b"", "", [("Set-Cookie", f"{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; "
                                                      "Max-Age=0")])
