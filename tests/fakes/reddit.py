"""Reddit as rustiz uses it, on one local server standing for www.reddit.com (authorize page, token
endpoint), oauth.reddit.com (the API), its S3 upload bucket and its media websocket: the consent page, both
grants with Reddit's refusals (HTTP 200 {"error": "invalid_grant"} for a used code, 400 for a dead refresh
token, 401 for a wrong app secret), /api/v1/me, /api/submit and /api/comment answering their refusals
inside json.errors with HTTP 200, image and video posts (upload lease, S3 form upload with S3's XML answers;
a video's submission names both files, url and video_poster_url; the websocket that announces the processed
post), the subreddit search, about, post_requirements and
link_flair_v2, and X-Ratelimit-* on every API answer."""
from __future__ import annotations

import base64
import hashlib
import html
import json
import itertools
import secrets
from urllib.parse import urlencode

from fakes import FakePlatform, FakeRequest, answer

UNAUTHORIZED = {"message": "Unauthorized", "error": 401}


def base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while number:
        number, digit = divmod(number, 36)
        text = digits[digit] + text
    return text or "0"


def submit_error(code: str, message: str, field: str, **more):
    """Reddit's api_type=json refusal: HTTP 200, the errors inside."""
    return answer(200, {"json": {"errors": [[code, message, field]], **more}})


class FakeReddit(FakePlatform):
    def __init__(self):
        super().__init__()
        self.client_id, self.client_secret = "reddit-app-id", "reddit-app-secret"
        self.env = {"RUSTIZ_REDDIT_AUTH_URL": self.url, "RUSTIZ_REDDIT_API_URL": self.url}
        self.codes: dict = {}  # code -> (redirect_uri, duration)
        self.access_tokens: set = set()
        self.refresh_tokens: set = set()
        self.refresh_answer_has_refresh_token = True  # Reddit repeats the refresh token; a client must not need it
        self.dead_refresh_status = 400  # what a revoked refresh token gets (Reddit has been seen answering 200 too)
        self.ids = itertools.count(36 ** 5)
        self.posts: dict = {}  # fullname -> post
        self.comments: dict = {}
        self.ratelimit: dict = {}  # subreddit ("*": any) -> seconds its submissions are refused with RATELIMIT
        self.remaining = 600.0
        self.leases: dict = {}  # S3 key -> mimetype
        self.uploads: dict = {}  # S3 key -> (fields, file bytes, file content type)
        self.max_upload_bytes = 20 * 2**20
        self.announcements: dict = {}  # websocket token -> the image post it announces
        self.media_verdict = "success"  # what the websocket says: "success", "failed", or None (it closes)
        self.subreddits = {
            "python": {"id": "2qh0y", "title": "Python", "submission_type": "any", "type": "public",
                       "flair_required": False, "flairs": None},
            "selfonly": {"id": "2abcd", "title": "Only words", "submission_type": "self", "type": "public",
                         "flair_required": True, "flairs": [{"id": "f-1", "text": "Question &amp; answer"},
                                                            {"id": "f-2", "text": "News"}]},
            "pythonpics": {"id": "2pics", "title": "Python pictures", "submission_type": "image", "type": "public",
                           "flair_required": False, "flairs": []},
            "pythonsecret": {"id": "2priv", "title": "Secret", "submission_type": "any", "type": "private",
                             "flair_required": False, "flairs": None},
        }
        self.route("GET", "/api/v1/authorize", self.authorize_page)
        self.route("POST", "/api/v1/access_token", self.token)
        self.route("GET", "/api/v1/me", self.me)
        self.route("GET", "/api/info", self.info)
        self.route("POST", "/api/submit", self.submit)
        self.route("POST", "/api/comment", self.comment)
        self.route("GET", "/subreddits/search", self.search)
        self.route("GET", r"/r/([A-Za-z0-9_]+)/about", self.about)
        self.route("GET", r"/api/v1/([A-Za-z0-9_]+)/post_requirements", self.post_requirements)
        self.route("GET", r"/r/([A-Za-z0-9_]+)/api/link_flair_v2", self.link_flairs)
        self.route("POST", "/api/media/asset.json", self.media_lease)
        self.route("POST", "/s3-upload", self.s3_upload)
        self.deleted: list = []  # (issue 28: POST /api/del, the fullnames deleted in order)
        self.route("POST", "/api/del", self.delete_thing)

    def new_access_token(self) -> str:
        token = "reddit-access-" + secrets.token_hex(8)
        self.access_tokens.add(token)
        return token

    def credentials(self) -> dict:
        """A connected channel's credentials."""
        return {"accessToken": self.new_access_token()}

    # API answers carry Reddit's rate-limit headers: decimals for what is used and left, seconds to the reset.
    def dispatch(self, request: FakeRequest, handler):
        if request.path.startswith("/ws/"):
            return self.websocket(request, handler)
        status, body, headers = super().dispatch(request, handler)
        if status is None or request.path.startswith(("/api/v1/authorize", "/api/v1/access_token", "/s3-upload")):
            return status, body, headers
        with self.lock:
            self.remaining = max(0.0, self.remaining - 1)
        return status, body, {"X-Ratelimit-Used": f"{600 - self.remaining:.1f}",
                              "X-Ratelimit-Remaining": f"{self.remaining:.1f}", "X-Ratelimit-Reset": "420", **headers}

    # --- www.reddit.com ------------------------------------------------------------------------------

    def authorize_page(self, request: FakeRequest):
        query = request.query
        if query.get("client_id") != self.client_id:
            return answer(400, "<html><body>bad request (reddit.com): invalid client id</body></html>",
                          {"Content-Type": "text/html"})
        if query.get("response_type") != "code" or not query.get("redirect_uri") or not query.get("state"):
            return answer(400, "<html><body>bad request (reddit.com): invalid request</body></html>",
                          {"Content-Type": "text/html"})
        code = "reddit-code-" + secrets.token_hex(6)
        self.codes[code] = (query["redirect_uri"], query.get("duration", "temporary"))
        allow = query["redirect_uri"] + "?" + urlencode({"state": query["state"], "code": code})
        deny = query["redirect_uri"] + "?" + urlencode({"state": query["state"], "error": "access_denied"})
        return answer(200, f"""<html><body><h1>rustiz wants to connect with your Reddit account</h1>
<p>scopes: {html.escape(query.get('scope', ''))}; duration: {html.escape(query.get('duration', 'temporary'))}</p>
<a id="allow" href="{html.escape(allow)}">Allow</a> <a id="decline" href="{html.escape(deny)}">Decline</a>
</body></html>""", {"Content-Type": "text/html"})

    def token(self, request: FakeRequest):
        expected = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return answer(401, UNAUTHORIZED, {"WWW-Authenticate": 'Basic realm="reddit"'})
        form = request.form()
        grant = form.get("grant_type")
        if grant == "authorization_code":
            if not form.get("code"):
                return answer(200, {"error": "NO_TEXT"})
            redirect_uri, duration = self.codes.pop(form["code"], (None, None))
            if redirect_uri is None or redirect_uri != form.get("redirect_uri"):
                return answer(200, {"error": "invalid_grant"})  # used, expired, or another redirect URI
            tokens = {"access_token": self.new_access_token(), "token_type": "bearer", "expires_in": 3600,
                      "scope": "identity submit read flair mysubreddits"}
            if duration == "permanent":  # a temporary grant has no refresh token: an hour, then a new consent
                tokens["refresh_token"] = "reddit-refresh-" + secrets.token_hex(8)
                self.refresh_tokens.add(tokens["refresh_token"])
            return answer(200, tokens)
        if grant == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return answer(self.dead_refresh_status, {"error": "invalid_grant"})
            tokens = {"access_token": self.new_access_token(), "token_type": "bearer", "expires_in": 3600,
                      "scope": "identity submit read flair mysubreddits"}
            if self.refresh_answer_has_refresh_token:
                tokens["refresh_token"] = form["refresh_token"]
            return answer(200, tokens)
        return answer(200, {"error": "unsupported_grant_type"})

    # --- oauth.reddit.com ----------------------------------------------------------------------------

    def _unauthorized(self, request: FakeRequest):
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if token not in self.access_tokens:
            return answer(401, UNAUTHORIZED, {"WWW-Authenticate": 'Bearer realm="reddit", error="invalid_token"'})
        return None

    def me(self, request: FakeRequest):
        return self._unauthorized(request) or answer(200, {
            "id": "1w72", "name": "ada_lovelace", "is_suspended": False, "total_karma": 5120, "link_karma": 4000,
            "comment_karma": 1120,
            "icon_img": "https://styles.redditmedia.com/t5_1/styles/profileIcon_ada.png?width=256&amp;s=abc"})

    def info(self, request: FakeRequest):
        """Listing of the things named in ?id= (t3_ fullnames), with their score and comment count."""
        refused = self._unauthorized(request)
        names = request.query.get("id", "").split(",")
        return refused or answer(200, {"kind": "Listing", "data": {"children": [
            {"kind": "t3", "data": {"name": name, "score": 42, "num_comments": 5, "upvote_ratio": 0.97}}
            for name in names if name in self.posts]}})

    def submit(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        form = request.form()
        if form.get("api_type") != "json":
            return answer(200, {"jquery": [[0, 1, "call", ["body"]]], "success": False})
        sr = self.subreddits.get((form.get("sr") or "").lower())
        if sr is None:
            return submit_error("SUBREDDIT_NOEXIST", "Hmm, that community doesn't exist. Try checking the spelling.",
                                "sr")
        if sr["type"] == "private":
            return submit_error("SUBREDDIT_NOTALLOWED", "This community only allows trusted members to post here",
                                "sr")
        wait = self.ratelimit.get(form["sr"].lower(), self.ratelimit.get("*"))
        if wait:
            return submit_error("RATELIMIT", f"you are doing that too much. try again in {max(1, wait // 60)} minutes.",
                                "ratelimit", ratelimit=float(wait))
        problem = self._submission_problem(form, sr)
        if problem:
            return submit_error(*problem)
        post_id = base36(next(self.ids))
        slug = "_".join(form["title"].lower().split())[:40]
        post = {"id": post_id, "name": f"t3_{post_id}", "sr": form["sr"].lower(), "kind": form["kind"],
                "title": form["title"], "text": form.get("text"), "url": form.get("url"),
                "flair_id": form.get("flair_id"), "video_poster_url": form.get("video_poster_url"),
                "permalink": f"/r/{form['sr'].lower()}/comments/{post_id}/{slug}/"}
        self.posts[post["name"]] = post
        self.published.append(post)
        if form["kind"] in ("image", "video", "videogif"):  # no id: the websocket tells where the post is
            token = secrets.token_hex(8)
            self.announcements[token] = post
            return answer(200, {"json": {"errors": [], "data": {
                "user_submitted_page": f"{self.url}/user/ada_lovelace/submitted/",
                "websocket_url": f"ws://127.0.0.1:{self.port}/ws/{token}?m=AQAA"}}})
        return answer(200, {"json": {"errors": [], "data": {
            "url": self.url + post["permalink"], "drafts_count": 0, "id": post_id, "name": post["name"]}}})

    def _uploaded(self, url: str | None, kind: str) -> bool:
        """Whether `url` is a file of that kind ("image/", "video/") uploaded to the fake's S3."""
        key = (url or "").partition("/s3-upload/")[2].replace("%2F", "/")
        return key in self.uploads and self.uploads[key][2].startswith(kind)

    def _submission_problem(self, form: dict, sr: dict):
        title, kind = form.get("title") or "", form.get("kind")
        if not title:
            return "NO_TEXT", "we need something here", "title"
        if len(title) > 300:
            return "TOO_LONG", "this is too long (max: 300)", "title"
        if kind == "self" and sr["submission_type"] not in ("any", "self"):
            return "NO_SELFS", "This community doesn't allow text posts.", "sr"
        if kind == "link" and sr["submission_type"] not in ("any", "link"):
            return "NO_LINKS", "This community only allows text posts.", "sr"
        if kind == "link" and not form.get("url"):
            return "NO_URL", "a url is required", "url"
        if kind == "image" and not form.get("url"):
            return "NO_URL", "a url is required", "url"
        if kind in ("video", "videogif"):
            if sr["submission_type"] == "self":
                return "NO_VIDEOS", "This community doesn't allow videos.", "sr"
            if not self._uploaded(form.get("url"), "video/"):
                return "NO_URL", "a url is required", "url"
            if not self._uploaded(form.get("video_poster_url"), "image/"):
                return "MISSING_VIDEO_POSTER", "A video post needs a poster image.", "video_poster_url"
        if kind not in ("self", "link", "image", "video", "videogif"):
            return "INVALID_OPTION", "that option is not valid", "kind"
        if sr["flair_required"] and not any(flair["id"] == form.get("flair_id") for flair in sr["flairs"] or ()):
            return "SUBMIT_VALIDATION_FLAIR_REQUIRED", "Your post must contain post flair.", "flair"
        return None

    def comment(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        form = request.form()
        parent = self.posts.get(form.get("thing_id"))
        if parent is None:
            return submit_error("DELETED_LINK", "the link you are commenting on has been deleted", "thing_id")
        if not form.get("text"):
            return submit_error("NO_TEXT", "we need something here", "text")
        comment_id = base36(next(self.ids))
        comment = {"id": comment_id, "name": f"t1_{comment_id}", "parent_id": parent["name"],
                   "link_id": parent["name"], "body": form["text"],
                   "permalink": f"{parent['permalink']}{comment_id}/"}
        self.comments[comment["name"]] = comment
        self.published.append(comment)
        return answer(200, {"json": {"errors": [], "data": {"things": [{"kind": "t1", "data": comment}]}}})

    def delete_thing(self, request: FakeRequest):
        """POST /api/del id=<fullname>: {} whether or not there was such a thing (Reddit's answer)."""
        refused = self._unauthorized(request)
        if refused:
            return refused
        name = request.form().get("id", "")
        if self.posts.pop(name, None) is not None or self.comments.pop(name, None) is not None:
            self.deleted.append(name)
        return answer(200, {})

    def search(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        word = request.query.get("q", "").lower()
        limit = int(request.query.get("limit", "25"))
        children = [{"kind": "t5", "data": {
            "id": sr["id"], "name": f"t5_{sr['id']}", "display_name": name, "title": sr["title"],
            "url": f"/r/{name}/", "subreddit_type": sr["type"], "submission_type": sr["submission_type"]}}
            for name, sr in self.subreddits.items() if word in name][:limit]
        return answer(200, {"kind": "Listing", "data": {"after": None, "dist": len(children), "children": children}})

    def _subreddit(self, request: FakeRequest):
        """(None, subreddit) or (the refusal, None), as Reddit answers a missing or private one."""
        refused = self._unauthorized(request)
        if refused:
            return refused, None
        sr = self.subreddits.get(request.match[1].lower())
        if sr is None:
            return answer(404, {"message": "Not Found", "error": 404}), None
        if sr["type"] == "private":
            return answer(403, {"reason": "private", "message": "Forbidden", "error": 403}), None
        return None, sr

    def about(self, request: FakeRequest):
        refused, sr = self._subreddit(request)
        return refused or answer(200, {"kind": "t5", "data": {
            "id": sr["id"], "display_name": request.match[1], "title": sr["title"], "subreddit_type": sr["type"],
            "submission_type": sr["submission_type"], "allow_images": sr["submission_type"] in ("any", "image")}})

    def post_requirements(self, request: FakeRequest):
        refused, sr = self._subreddit(request)
        return refused or answer(200, {"is_flair_required": sr["flair_required"], "title_text_max_length": None,
                                       "body_restriction_policy": "none", "domain_blacklist": []})

    def link_flairs(self, request: FakeRequest):
        refused, sr = self._subreddit(request)
        if refused:
            return refused
        if sr["flairs"] is None:  # the subreddit has post flair switched off
            return answer(403, {"message": "Forbidden", "error": 403})
        return answer(200, [{"id": flair["id"], "text": flair["text"], "type": "text", "text_editable": False,
                             "mod_only": False, "allowable_content": "all"} for flair in sr["flairs"]])

    # --- image posts ------------------------------------------------------------------------------------

    def media_lease(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        form = request.form()
        key = f"rte_images/{secrets.token_hex(6)}"
        self.leases[key] = form.get("mimetype")
        return answer(200, {"args": {"action": f"//127.0.0.1:{self.port}/s3-upload", "fields": [
            {"name": "acl", "value": "private"}, {"name": "key", "value": key},
            {"name": "X-Amz-Credential", "value": "AKIAFAKE/20261203/us-east-1/s3/aws4_request"},
            {"name": "X-Amz-Algorithm", "value": "AWS4-HMAC-SHA256"}, {"name": "X-Amz-Date", "value": "20261203T120000Z"},
            {"name": "success_action_status", "value": "201"}, {"name": "content-type", "value": form.get("mimetype")},
            {"name": "policy", "value": "eyJmYWtlIjp0cnVlfQ=="}, {"name": "X-Amz-Signature", "value": "f" * 64}]},
            "asset": {"asset_id": key.split("/")[1], "processing_state": "incomplete",
                      "payload": {"filepath": form.get("filepath")},
                      "websocket_url": f"ws://127.0.0.1:{self.port}/ws/asset?m=AQAA"}})

    def s3_upload(self, request: FakeRequest):
        """S3's POST Object: the lease's fields, the file last; 201 with XML, or an XML <Error>."""
        parts = request.multipart()
        key = parts.get("key", (None, b"", None))[1].decode()
        if key not in self.leases or "file" not in parts or list(parts)[-1] != "file":
            return answer(403, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>"
                               "<Message>Invalid according to Policy: Policy Condition failed</Message></Error>",
                          {"Content-Type": "application/xml"})
        if len(parts["file"][1]) > self.max_upload_bytes:
            return answer(400, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>EntityTooLarge</Code>"
                               "<Message>Your proposed upload exceeds the maximum allowed size</Message></Error>",
                          {"Content-Type": "application/xml"})
        self.uploads[key] = ({name: value[1].decode() for name, value in parts.items() if name != "file"},
                             parts["file"][1], parts["file"][2])
        location = f"http://127.0.0.1:{self.port}/s3-upload/{key.replace('/', '%2F')}"
        return answer(201, f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<PostResponse><Location>{location}"
                           f"</Location><Bucket>reddit-uploaded-media</Bucket><Key>{key}</Key><ETag>\"e\"</ETag>"
                           "</PostResponse>", {"Content-Type": "application/xml"})

    def websocket(self, request: FakeRequest, handler):
        """The media websocket: upgrade, send the verdict on the post (or nothing), close."""
        post = self.announcements.get(request.path.removeprefix("/ws/"))
        accept = base64.b64encode(hashlib.sha1(
            (request.headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        handler.connection.sendall(f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade"
                                   f"\r\nSec-WebSocket-Accept: {accept}\r\n\r\n".encode())
        if post is not None and self.media_verdict is not None:
            verdict = {"type": "success", "payload": {"redirect": self.url + post["permalink"]}} \
                if self.media_verdict == "success" else {"type": "failed"}
            data = json.dumps(verdict).encode()
            header = bytes([0x81, len(data)]) if len(data) < 126 else bytes([0x81, 126]) + len(data).to_bytes(2, "big")
            handler.connection.sendall(header + data)
        return None, b"", {}  # the connection closes
