"""A Mastodon instance's REST API as rustiz uses it: verify_credentials, /api/v2/instance, media upload
with background processing (202, then 206 until ready), statuses with Idempotency-Key, and the
X-RateLimit-* headers and error bodies ({"error": "..."}) a real instance sends; and its OAuth server:
app registration (POST /api/v1/apps), the consent page, and the token endpoint with PKCE.

`software` makes it a server that speaks Mastodon's API as Pixelfed or Friendica do (issue 28): the version
string naming it ("3.5.3 (compatible; Pixelfed 0.12.4)"), nodeinfo 2.x, their media size limits, only the
coarse scopes "read write" at consent (invalid_scope otherwise), no /api/v2/media on an older server
(`v2_media`), and Pixelfed's refusal of a status without media that is no reply (403, Laravel's
{"message": ...}). `version_names_software` False leaves the software to nodeinfo alone."""
from __future__ import annotations

import base64
import datetime
import hashlib
import html
import itertools
import re
import secrets
from urllib.parse import urlencode

from fakes import FakePlatform, FakeRequest, Reconnect, answer

URL = re.compile(r"https?://\S+")
# Enough of Unicode's grapheme rules for the tests' texts: skin tones join the emoji before them, and
# two regional indicators make one flag.
SKIN_TONE, FLAG = re.compile("[\U0001F3FB-\U0001F3FF]"), re.compile("[\U0001F1E6-\U0001F1FF]{2}")


def mastodon_length(text: str) -> int:
    return len(FLAG.sub("f", SKIN_TONE.sub("", URL.sub("x" * 23, text))))


class FakeMastodon(FakePlatform):
    rate_limit = 300  # every answer carries the rate-limit headers, as a real instance's do

    def __init__(self, max_characters: int = 500, max_media: int = 4, processing_polls: int = 0,
                 software: str = "mastodon", version_names_software: bool = True, v2_media: bool = True,
                 image_size_limit: int = 16 * 1024 * 1024):
        super().__init__()
        self.software, self.version_names_software = software, version_names_software
        self.image_size_limit = image_size_limit
        self.token = "masto-token-" + "x" * 20
        self.max_characters, self.max_media = max_characters, max_media
        self.processing_polls = processing_polls  # GETs of a new attachment that answer 206 before it is ready
        self.media: dict = {}  # id -> {"description", "bytes", "content_type", "polls_left"}
        self.statuses: dict = {}  # id -> status
        self.by_idempotency_key: dict = {}
        self.ids = itertools.count(110000000000000001)
        self.followers = 1200  # (tests of analytics over time change it from day to day)
        self.route("GET", "/api/v1/accounts/verify_credentials", self.verify_credentials)
        self.route("GET", "/api/v2/instance", self.instance)
        self.route("GET", "/api/v1/instance", self.instance_before_4_0)
        if v2_media:
            self.route("POST", "/api/v2/media", self.upload)
        self.route("POST", "/api/v1/media", self.upload_at_once)
        self.route("DELETE", r"/api/v1/statuses/(\d+)", self.delete_status)
        self.route("GET", "/.well-known/nodeinfo", self.nodeinfo_index)
        self.route("GET", "/nodeinfo/2.0", self.nodeinfo)
        self.route("GET", r"/api/v1/media/(\d+)", self.media_state)
        self.route("POST", "/api/v1/statuses", self.post_status)
        self.route("GET", r"/api/v1/statuses/(\d+)", self.get_status)
        self.deleted: list = []  # ids of the statuses deleted
        self.apps: dict = {}  # client id -> {"secret", "redirect_uris", "scopes"}
        self.codes: dict = {}  # code -> {"client_id", "redirect_uri", "challenge"}
        self.route("POST", "/api/v1/apps", self.register_app)
        self.route("GET", "/oauth/authorize", self.authorize_page)
        self.route("POST", "/oauth/token", self.token_endpoint)

    def account(self) -> tuple:
        """(name, profile) of the channel credentials() connect: what this fake's account says."""
        return "Ada Lovelace", "ada"

    def credentials(self) -> dict:
        return {"instance": self.url, "accessToken": self.token}

    def rate_limit_reset(self) -> str:
        """Mastodon sends the time the window ends."""
        return (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=5)).isoformat()

    def _unauthorized(self, request: FakeRequest):
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return answer(401, {"error": "The access token is invalid"})
        return None

    def verify_credentials(self, request: FakeRequest):
        return self._unauthorized(request) or answer(200, {
            "id": "109876", "username": "ada", "acct": "ada", "display_name": "Ada Lovelace",
            "avatar": f"{self.url}/avatars/ada.png", "url": f"{self.url}/@ada",
            "followers_count": self.followers, "following_count": 80, "statuses_count": len(self.statuses)})

    def _version(self) -> str:
        if self.software == "mastodon" or not self.version_names_software:
            return "4.3.0"
        return "3.5.3 (compatible; Pixelfed 0.12.4)" if self.software == "pixelfed" else \
            f"2.8.0 (compatible; {self.software.capitalize()} 2024.12)"

    def instance(self, request: FakeRequest):
        return answer(200, {"domain": "127.0.0.1", "title": f"Fake {self.software}", "version": self._version(),
                            "configuration": {"statuses": {
                                "max_characters": self.max_characters, "max_media_attachments": self.max_media,
                                "characters_reserved_per_url": 23},
                                "media_attachments": {"image_size_limit": self.image_size_limit,
                                                      "video_size_limit": 99 * 1024 * 1024}}})

    def nodeinfo_index(self, request: FakeRequest):
        if self.software == "mastodon" and self.version_names_software:
            return answer(404, {"error": "Not found"})  # (most tests: stock Mastodon is the default anyway)
        return answer(200, {"links": [{"rel": "http://nodeinfo.diaspora.software/ns/schema/2.0",
                                       "href": f"{self.url}/nodeinfo/2.0"}]})

    def nodeinfo(self, request: FakeRequest):
        return answer(200, {"version": "2.0", "software": {"name": self.software, "version": "1.0"},
                            "protocols": ["activitypub"], "usage": {"users": {"total": 1}}, "openRegistrations": False})

    def instance_before_4_0(self, request: FakeRequest):
        """/api/v1/instance as Pleroma and Akkoma answer it: the length limit is max_toot_chars."""
        return answer(200, {"uri": "127.0.0.1", "title": "Fake Pleroma", "max_toot_chars": self.max_characters})

    def upload(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        parts = request.multipart()
        if len(parts["file"][1]) > self.image_size_limit:
            return answer(422, {"error": f"Validation failed: File file size must be less than {self.image_size_limit} Bytes"})
        media_id = str(next(self.ids))
        self.media[media_id] = {"description": parts["description"][1].decode() if "description" in parts else None,
                                "bytes": parts["file"][1], "content_type": parts["file"][2],
                                "polls_left": self.processing_polls}
        processing = self.processing_polls > 0
        return answer(202 if processing else 200, {
            "id": media_id, "type": "image", "description": self.media[media_id]["description"],
            "url": None if processing else f"{self.url}/media/{media_id}.png"})

    def upload_at_once(self, request: FakeRequest):
        """/api/v1/media: the attachment, processed, in its answer (200)."""
        status, body, headers = self.upload(request)
        if status == 202:
            self.media[body["id"]]["polls_left"] = 0
            body = {**body, "url": f"{self.url}/media/{body['id']}.png"}
        return status, body, headers

    def delete_status(self, request: FakeRequest):
        refused = self._unauthorized(request)
        status = None if refused else self.statuses.pop(request.match[1], None)
        if refused or status is None:
            return refused or answer(404, {"error": "Record not found"})
        self.deleted.append(request.match[1])
        return answer(200, {**status, "text": status["content"]})

    def media_state(self, request: FakeRequest):
        media = self.media.get(request.match[1])
        if media is None:
            return answer(404, {"error": "Record not found"})
        if media["polls_left"] > 0:
            media["polls_left"] -= 1
            return answer(206, {"id": request.match[1], "url": None})
        return answer(200, {"id": request.match[1], "url": f"{self.url}/media/{request.match[1]}.png"})

    def post_status(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        form = request.json() if request.headers.get("content-type", "").startswith("application/json") \
            else request.form()
        key = request.headers.get("idempotency-key")
        if key and key in self.by_idempotency_key:  # Mastodon answers a repeated key with the first status
            return answer(200, self.statuses[self.by_idempotency_key[key]])
        if self.software == "pixelfed" and not form.get("media_ids") and not form.get("in_reply_to_id"):
            return answer(403, {"message": "Empty statuses are not allowed"})
        problem = self._status_problem(form)
        if problem:
            return answer(422, {"error": f"Validation failed: {problem}"})
        if form.get("in_reply_to_id") and form["in_reply_to_id"] not in self.statuses:
            return answer(404, {"error": "Record not found"})
        status_id = str(next(self.ids))
        status = {"id": status_id, "content": form["status"], "visibility": form.get("visibility"),
                  "in_reply_to_id": form.get("in_reply_to_id"),
                  "media_attachments": [{"id": media_id, "description": self.media[media_id]["description"]}
                                        for media_id in form.get("media_ids") or form.get("media_ids[]") or []],
                  "url": f"{self.url}/@ada/{status_id}", "account": {"acct": "ada"}}
        self.statuses[status_id] = status
        if key:
            self.by_idempotency_key[key] = status_id
        self.published.append(status)
        return answer(200, status)

    def _status_problem(self, form: dict):
        text = form.get("status") or ""
        media_ids = form.get("media_ids") or form.get("media_ids[]") or []
        if mastodon_length(text) > self.max_characters:
            return f"Text character limit of {self.max_characters} exceeded"
        if len(media_ids) > self.max_media:
            return f"Media attachments limit of {self.max_media} exceeded"
        for media_id in media_ids:
            if media_id not in self.media:
                return f"Media {media_id} could not be found"
            if self.media[media_id]["polls_left"] > 0:
                return "Try again in a moment! Media attachments have not finished processing"
        if not text and not media_ids:
            return "Text can't be blank"
        return None

    def get_status(self, request: FakeRequest):
        refused = self._unauthorized(request)
        status = self.statuses.get(request.match[1])
        if refused or status is None:
            return refused or answer(404, {"error": "Record not found"})
        return answer(200, {**status, "favourites_count": 7, "reblogs_count": 3, "replies_count": 2})

    # --- OAuth ---------------------------------------------------------------------------------------

    def register_app(self, request: FakeRequest):
        form = request.form()
        if not form.get("client_name") or not form.get("redirect_uris"):
            return answer(422, {"error": "Validation failed: Application name can't be blank"})
        client_id = "client-" + secrets.token_hex(8)
        self.apps[client_id] = {"secret": "secret-" + secrets.token_hex(8), "redirect_uris": form["redirect_uris"],
                                "scopes": form.get("scopes", "read")}
        return answer(200, {"id": str(len(self.apps)), "name": form["client_name"], "client_id": client_id,
                            "client_secret": self.apps[client_id]["secret"], "redirect_uri": form["redirect_uris"]})

    def authorize_page(self, request: FakeRequest):
        """The consent page: an Authorize link back to the app with a code, a Deny link with an error."""
        query = request.query
        app = self.apps.get(query.get("client_id"))
        if app is None or query.get("redirect_uri") != app["redirect_uris"] or query.get("response_type") != "code":
            return answer(400, "<p>The redirect URI included is not valid.</p>", {"Content-Type": "text/html"})
        if self.software != "mastodon" and ":" in query.get("scope", ""):  # Passport, Friendica: no granular scopes
            refusal = {"error": "invalid_scope", "state": query.get("state", ""),
                       "error_description": "The requested scope is invalid, unknown, or malformed."}
            return answer(302, b"", {"Location": query["redirect_uri"] + "?" + urlencode(refusal)})
        code = "code-" + secrets.token_hex(8)
        self.codes[code] = {"client_id": query["client_id"], "redirect_uri": query["redirect_uri"],
                            "challenge": query.get("code_challenge")}
        allow = query["redirect_uri"] + "?" + urlencode({"code": code, "state": query.get("state", "")})
        deny = query["redirect_uri"] + "?" + urlencode({"error": "access_denied", "state": query.get("state", ""),
                                                         "error_description": "The resource owner denied the request."})
        page = (f'<h1>Authorization required</h1><a id="allow" href="{html.escape(allow)}">Authorize</a> '
                f'<a id="deny" href="{html.escape(deny)}">Deny</a>')
        return answer(200, page, {"Content-Type": "text/html; charset=utf-8"})

    def token_endpoint(self, request: FakeRequest):
        form = request.form()
        app = self.apps.get(form.get("client_id"))
        if app is None or form.get("client_secret") != app["secret"]:
            return answer(401, {"error": "invalid_client", "error_description": "Client authentication failed"})
        grant = self.codes.pop(form.get("code", ""), None)
        if grant is None or grant["client_id"] != form["client_id"] or grant["redirect_uri"] != form.get("redirect_uri"):
            return answer(400, {"error": "invalid_grant", "error_description": "The provided authorization grant is "
                                                                                "invalid, expired, revoked"})
        if grant["challenge"]:
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if digest != grant["challenge"]:
                return answer(400, {"error": "invalid_grant", "error_description": "PKCE verification failed"})
        return answer(200, {"access_token": self.token, "token_type": "Bearer", "scope": app["scopes"],
                            "created_at": 1700000000})


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeMastodon


def credentials_at(url: str) -> dict:
    """Credentials that aim a channel at `url`."""
    return {"instance": url, "accessToken": "token"}


def _renew(fake, extras):
    fake.token = "masto-token-renewed-" + "y" * 12
    return fake.credentials()


RECONNECT = Reconnect(_renew, lambda fake: {**fake.credentials(), "accessToken": "revoked"},
                      "The access token is invalid", lambda fake, extras: extras(FakeMastodon()).credentials())
