"""Tumblr as rustiz uses it (api.md and npf-spec.md of github.com/tumblr/docs): the consent page
(www.tumblr.com/oauth2/authorize), the token endpoint (api.tumblr.com/v2/oauth2/token, the app's id and secret
in the form, authorization_code and refresh_token grants, a new refresh token on each refresh), /v2/user/info
with the account's blogs, blog avatars, NPF posts (JSON, or multipart with each media part named by its
block's identifier) in the four states, /info, /posts?id=, /notes, /post/delete, the X-Ratelimit-Perhour-* and
-Perday-* headers, and Tumblr's error shape {"meta": {"status", "msg"}, "response": [], "errors": [...]}."""
from __future__ import annotations

import itertools
import json
import secrets
from urllib.parse import unquote

from fakes import FakePlatform, FakeRequest, answer, consent_page

REASONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 429: "Limit Exceeded",
           500: "Internal Server Error", 503: "Service Unavailable"}
STATES = {"published": "published", "queue": "queued", "draft": "draft", "private": "private"}
BLOCK_TYPES = ("text", "image", "link", "audio", "video", "paywall", "poll")
PNG_1X1 = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                        "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082")


def tumblr_error(status: int, title: str = "", code: int | None = None, detail: str = "") -> dict:
    """An error answer in Tumblr's shape (meta mirrors the HTTP status; errors says why)."""
    error: dict = {"title": title or REASONS[status]}
    if code is not None:
        error["code"] = code
    if detail:
        error["detail"] = detail
    return {"meta": {"status": status, "msg": REASONS[status]}, "response": [], "errors": [error]}


def ok(response, status: int = 200) -> tuple:
    return answer(status, {"meta": {"status": status, "msg": "Created" if status == 201 else "OK"},
                           "response": response})


class FakeTumblr(FakePlatform):
    def __init__(self):
        super().__init__()
        self.client_id, self.client_secret = "tumblr-consumer-key", "tumblr-consumer-secret"
        self.codes: dict = {}  # code -> (redirect_uri, scope)
        self.access_tokens: dict = {}  # token -> scope
        self.refresh_tokens: set = set()
        self.user = "ada-codes"
        self.blogs = [
            {"name": "ada-codes", "title": "Ada writes code", "url": "https://ada-codes.tumblr.com/",
             "uuid": "t:AdaPrimaryUuid0001", "primary": True, "followers": 1200, "type": "public", "posts": 2},
            {"name": "engines-club", "title": "The Engines Club", "url": "https://engines.example/",
             "uuid": "t:EnginesClubUuid02", "primary": False, "followers": 85, "type": "public", "posts": 0}]
        self.posts: dict = {}  # id -> the stored post
        self.ids = itertools.count(7630000000000000001)
        self.posts_left_today = 250  # the user's daily posting limit (code 8023)
        self.largest_media = 10 * 1024 * 1024  # bytes of one uploaded file Tumblr takes (code 8005 above it)
        self.perhour_remaining, self.perday_remaining = 1000, 5000
        self.route("GET", "/oauth2/authorize", self.consent_page)
        self.route("POST", "/v2/oauth2/token", self.token)
        self.route("GET", "/v2/user/info", self.user_info)
        self.route("GET", r"/v2/blog/([^/]+)/avatar/(\d+)", self.avatar)
        self.route("POST", r"/v2/blog/([^/]+)/posts", self.create_post)
        self.route("GET", r"/v2/blog/([^/]+)/info", self.blog_info)
        self.route("GET", r"/v2/blog/([^/]+)/posts", self.read_posts)
        self.route("GET", r"/v2/blog/([^/]+)/notes", self.notes)
        self.route("POST", r"/v2/blog/([^/]+)/post/delete", self.delete_post)

    @property
    def env(self) -> dict:
        return {"RUSTIZ_TUMBLR_AUTH_URL": self.url, "RUSTIZ_TUMBLR_API_URL": self.url,
                "TUMBLR_CLIENT_ID": self.client_id, "TUMBLR_CLIENT_SECRET": self.client_secret}

    def credentials(self) -> dict:
        """A connected channel's credentials, as the connect flow stores them."""
        return {"accessToken": self.issue_access_token()}

    def issue_access_token(self, scope: str = "write offline_access") -> str:
        token = "tat_" + secrets.token_urlsafe(24)
        self.access_tokens[token] = scope
        return token

    # Every API answer carries the per-hour and per-day windows of the app, the reset in seconds.
    def dispatch(self, request: FakeRequest, handler):
        status, body, headers = super().dispatch(request, handler)
        if status is None or not request.path.startswith("/v2/"):
            return status, body, headers
        with self.lock:
            self.perhour_remaining = max(0, self.perhour_remaining - 1)
            self.perday_remaining = max(0, self.perday_remaining - 1)
            windows = {"X-Ratelimit-Perhour-Limit": "1000", "X-Ratelimit-Perhour-Remaining": str(self.perhour_remaining),
                       "X-Ratelimit-Perhour-Reset": "1800", "X-Ratelimit-Perday-Limit": "5000",
                       "X-Ratelimit-Perday-Remaining": str(self.perday_remaining), "X-Ratelimit-Perday-Reset": "50000"}
        return status, body, {**windows, **headers}

    # --- OAuth ---------------------------------------------------------------------------------------

    def consent_page(self, request: FakeRequest):
        query = request.query
        if query.get("client_id") != self.client_id or query.get("response_type") != "code" \
                or not query.get("redirect_uri") or not query.get("scope"):
            return answer(400, "<html><body>Invalid client_id, response_type, scope or redirect_uri</body></html>",
                          {"Content-Type": "text/html"})
        code = "code-" + secrets.token_urlsafe(12)
        self.codes[code] = (query["redirect_uri"], query["scope"])
        return consent_page(f"Allow this app to {query['scope']}?", query["redirect_uri"],
                            {"code": code, "state": query.get("state", "")},
                            {"error": "access_denied", "state": query.get("state", "")})

    def token(self, request: FakeRequest):
        form = request.form()
        if (form.get("client_id"), form.get("client_secret")) != (self.client_id, self.client_secret):
            return answer(401, {"error": "invalid_client", "error_description": "Client authentication failed"})
        if form.get("grant_type") == "authorization_code":
            redirect_uri, scope = self.codes.pop(form.get("code"), (None, ""))
            if redirect_uri is None or form.get("redirect_uri") != redirect_uri:
                return answer(400, {"error": "invalid_grant", "error_description": "Invalid authorization code"})
            return answer(200, self._tokens(scope))
        if form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return answer(401, {"error": "invalid_grant", "error_description": "Refresh token has expired"})
            self.refresh_tokens.discard(form["refresh_token"])
            return answer(200, self._tokens("write offline_access"))
        return answer(400, {"error": "unsupported_grant_type", "error_description": "Unsupported grant type"})

    def _tokens(self, scope: str) -> dict:
        tokens = {"access_token": self.issue_access_token(scope), "expires_in": 2520, "id_token": False,
                  "scope": scope, "token_type": "bearer"}
        if "offline_access" in scope.split():
            tokens["refresh_token"] = "trt_" + secrets.token_urlsafe(24)
            self.refresh_tokens.add(tokens["refresh_token"])
        return tokens

    def _unauthorized(self, request: FakeRequest, writes: bool = False):
        authorization = request.headers.get("authorization", "")
        scope = self.access_tokens.get(authorization[7:]) if authorization.startswith("Bearer ") else None
        if scope is None:
            return answer(401, tumblr_error(401, "Unauthorized", 1016, "Unable to authorize"))
        if writes and "write" not in scope.split():
            return answer(403, tumblr_error(403, "Forbidden", detail="The token lacks the write scope"))
        return None

    def _blog(self, identifier: str):
        """The user's blog that a path's blog identifier names (its name, hostname or uuid)."""
        identifier = unquote(identifier)
        return next((blog for blog in self.blogs if identifier in (
            blog["name"], blog["uuid"], f"{blog['name']}.tumblr.com")), None)

    # --- the account ---------------------------------------------------------------------------------

    def user_info(self, request: FakeRequest):
        return self._unauthorized(request) or ok({"user": {
            "following": 12, "default_post_format": "html", "name": self.user, "likes": 40,
            "blogs": [{key: value for key, value in blog.items() if key != "posts"} | {"tweet": "N"}
                      for blog in self.blogs]}})

    def avatar(self, request: FakeRequest):
        return answer(200, PNG_1X1, {"Content-Type": "image/png"})

    def blog_info(self, request: FakeRequest):
        refused = self._unauthorized(request)
        blog = self._blog(request.match[1])
        if refused or blog is None:
            return refused or answer(404, tumblr_error(404, "Not Found", 0, "Blog not found"))
        return ok({"blog": {"title": blog["title"], "name": blog["name"], "url": blog["url"], "uuid": blog["uuid"],
                            "posts": blog["posts"], "updated": 1764900000, "description": "", "ask": False}})

    # --- posts ---------------------------------------------------------------------------------------

    def create_post(self, request: FakeRequest):
        refused = self._unauthorized(request, writes=True)
        blog = self._blog(request.match[1])
        if refused or blog is None:
            return refused or answer(404, tumblr_error(404, "Not Found", 0, "Blog not found"))
        files: dict = {}
        if request.headers.get("content-type", "").startswith("multipart/form-data"):
            parts = request.multipart()
            if "json" not in parts or parts["json"][2] != "application/json" or list(parts)[0] != "json":
                return answer(400, tumblr_error(400, "The first part must be the JSON body", 8001))
            body = json.loads(parts.pop("json")[1])
            files = parts
        else:
            body = request.json()
        problem = self._post_problem(body, files)
        if problem:
            return answer(400, tumblr_error(400, problem[0], problem[1]))
        if self.posts_left_today <= 0 and body.get("state", "published") in ("published", "private"):
            return answer(403, tumblr_error(403, "You have reached your daily posting limit.", 8023))
        post_id = str(next(self.ids))
        stored = {"id": post_id, "blog": blog["name"], "content": body["content"], "tags": body.get("tags", ""),
                  "source_url": body.get("source_url"), "state": STATES[body.get("state", "published")],
                  "files": {name: part[1] for name, part in files.items()}, "notes": 0}
        with self.lock:
            self.posts[post_id] = stored
            self.published.append(stored)
            self.posts_left_today -= 1
            blog["posts"] += 1
        return ok({"id": post_id}, 201)

    def _post_problem(self, body, files: dict):
        """(title, code) of what Tumblr would refuse in an NPF body, else None."""
        if not isinstance(body, dict) or not isinstance(body.get("content"), list):
            return "'content' must be an array", 8001
        if body.get("state", "published") not in STATES:
            return f"'{body['state']}' is not a valid state", 8001
        if not isinstance(body.get("tags", ""), str) or not isinstance(body.get("source_url", ""), str):
            return "'tags' and 'source_url' must be strings", 8001
        named = set()
        for block in body["content"]:
            if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
                return "Each content block needs a known 'type'", 8001
            if block["type"] == "text" and (not isinstance(block.get("text"), str) or len(block["text"]) > 4096):
                return "A text block needs 'text' of at most 4096 characters", 8001
            if block["type"] == "text" and self._formatting_problem(block):
                return "A text block's formatting must be ranges of known types inside its text", 8001
            if block["type"] == "link" and not str(block.get("url", "")).startswith(("http://", "https://")):
                return "A link block needs a 'url'", 8001
            media = block.get("media")
            for item in ([media] if isinstance(media, dict) else media or []) if block["type"] in ("image", "video") \
                    else []:
                problem = self._media_problem(block["type"], item, files)
                if problem:
                    return problem
                named.add(item["identifier"])
        if set(files) - named:
            return "Every uploaded file must be named by a block's media identifier", 8001
        return None

    @staticmethod
    def _formatting_problem(block: dict) -> bool:
        ranges = block.get("formatting", [])
        return not isinstance(ranges, list) or any(
            not isinstance(item, dict) or item.get("type") not in ("bold", "italic", "strikethrough", "small", "link")
            or not 0 <= item.get("start", -1) < item.get("end", -1) <= len(block["text"])
            or (item["type"] == "link") != isinstance(item.get("url"), str) for item in ranges)

    def _media_problem(self, kind: str, item, files: dict):
        if not isinstance(item, dict) or item.get("identifier") not in files:
            return f"The {kind} block's media identifier names no uploaded part", 8001
        if not str(item.get("type", "")).startswith(kind + "/") or files[item["identifier"]][2] != item["type"]:
            return f"The uploaded media is not the {kind} its block says", 8005
        if len(files[item["identifier"]][1]) > self.largest_media:
            return "The uploaded media is too large", 8005
        return None

    def read_posts(self, request: FakeRequest):
        refused = self._unauthorized(request)
        post = self.posts.get(request.query.get("id", ""))
        if refused or post is None or self._blog(request.match[1]) is None:
            return refused or answer(404, tumblr_error(404, "Not Found", 0, "Post not found"))
        return ok({"posts": [{"id": int(post["id"]), "id_string": post["id"], "blog_name": post["blog"],
                              "state": post["state"], "note_count": post["notes"],
                              "tags": [tag for tag in post["tags"].split(",") if tag]}], "total_posts": 1})

    def notes(self, request: FakeRequest):
        refused = self._unauthorized(request)
        post = self.posts.get(request.query.get("id", ""))
        if refused or post is None:
            return refused or answer(404, tumblr_error(404, "Not Found", 0, "Post not found"))
        likes, reblogs = post["notes"] * 2 // 3, post["notes"] - post["notes"] * 2 // 3
        response = {"notes": [], "total_notes": post["notes"], "_links": {}}
        if request.query.get("mode") == "conversation":
            response.update(rollup_notes=[], total_likes=likes, total_reblogs=reblogs)
        return ok(response)

    def delete_post(self, request: FakeRequest):
        refused = self._unauthorized(request, writes=True)
        blog = self._blog(request.match[1])
        post = self.posts.get(request.form().get("id", ""))
        if refused or blog is None or post is None or post["blog"] != blog["name"]:
            return refused or answer(404, tumblr_error(404, "Not Found", 0, "Post not found"))
        with self.lock:
            del self.posts[post["id"]]
        return ok({"id": post["id"]})
