"""TikTok as rustiz uses it: the Login Kit consent page (/v2/auth/authorize/), the token endpoint
(/v2/oauth/token/, client_key and client_secret in the form, authorization_code and refresh_token grants,
refresh tokens rotated), /v2/user/info/ with its fields, creator_info, the Content Posting API (video init
Direct Post and inbox with FILE_UPLOAD and TikTok's chunk rules, chunks PUT to the upload URL, photo posts
pulled from their URLs by a real GET), the status fetch through PROCESSING_* to PUBLISH_COMPLETE,
SEND_TO_USER_INBOX or FAILED, /v2/video/query/, and TikTok's error shapes: the API's
{"data", "error": {"code", "message", "log_id"}} and the token endpoint's {"error", "error_description",
"log_id"}."""
from __future__ import annotations

import itertools
import re
import secrets
import time
import urllib.request

from fakes import FakePlatform, FakeRequest, answer, consent_page

MB = 1024 * 1024
SCOPES = "video.list,user.info.basic,video.publish,video.upload,user.info.profile,user.info.stats"
USER_FIELDS = ("open_id", "union_id", "avatar_url", "display_name", "username", "follower_count",
               "following_count", "likes_count", "video_count")


def log_id() -> str:
    return time.strftime("%Y%m%d%H%M%S") + secrets.token_hex(8).upper()


def ok(data: dict) -> dict:
    return {"data": data, "error": {"code": "ok", "message": "", "log_id": log_id()}}


def api_error(status: int, code: str, message: str):
    return answer(status, {"data": {}, "error": {"code": code, "message": message, "log_id": log_id()}})


def oauth_error(status: int, error: str, description: str):
    return answer(status, {"error": error, "error_description": description, "log_id": log_id()})


TOKEN_INVALID = (401, "access_token_invalid", "The access token is invalid or not found in the request.")


class FakeTikTok(FakePlatform):
    def __init__(self):
        super().__init__()
        self.client_key, self.client_secret = "awq7x2client", "tiktok-client-secret"
        self.codes: dict = {}  # code -> redirect_uri
        self.access_tokens: set = set()
        self.refresh_tokens: set = set()
        self.rotate_refresh_tokens = True  # TikTok's refresh answers a new refresh token (the old one dies)
        self.granted_scopes = SCOPES
        self.token_error_status = 400  # the HTTP status of the token endpoint's error answers
        self.open_id = "-000a1b2c-3d4e-5f60-7182-93a4b5c6d7e8"
        self.user = {"open_id": self.open_id, "union_id": "c9d0e1f2-union", "avatar_url": "", "display_name": "Ada",
                     "username": "ada.bakes", "follower_count": 1200, "following_count": 35, "likes_count": 9800,
                     "video_count": 42}
        self.creator = {"creator_avatar_url": "", "creator_username": "ada.bakes", "creator_nickname": "Ada",
                        "privacy_level_options": ["FOLLOWER_OF_CREATOR", "MUTUAL_FOLLOW_FRIENDS", "SELF_ONLY"],
                        "comment_disabled": False, "duet_disabled": False, "stitch_disabled": True,
                        "max_video_post_duration_sec": 300}
        self.min_chunk, self.max_chunk = 5 * MB, 64 * MB  # TikTok's; tests lower them to send small videos
        self.processing_polls = 1  # status fetches that answer PROCESSING_* before the outcome
        self.fail_reason = ""  # when set, a post ends FAILED with it
        self.public_ids = True  # PUBLISH_COMPLETE carries publicaly_available_post_id
        self.files: dict = {}  # name -> bytes, served at /files/<name> (pictures for provider tests to pull)
        self.publishes: dict = {}  # publish_id -> its state
        self.videos: dict = {}  # public video id -> counts
        self.ids = itertools.count(7311000000000000001)
        self.route("GET", "/v2/auth/authorize/", self.consent_page)
        self.route("POST", "/v2/oauth/token/", self.token)
        self.route("GET", "/v2/user/info/", self.user_info)
        self.route("POST", "/v2/post/publish/creator_info/query/", self.creator_info)
        self.route("POST", "/v2/post/publish/video/init/", lambda request: self.video_init(request, inbox=False))
        self.route("POST", "/v2/post/publish/inbox/video/init/", lambda request: self.video_init(request, inbox=True))
        self.route("PUT", r"/upload/([\w.~-]+)", self.upload_chunk)
        self.route("POST", "/v2/post/publish/content/init/", self.content_init)
        self.route("POST", "/v2/post/publish/status/fetch/", self.status_fetch)
        self.route("POST", "/v2/video/query/", self.video_query)
        self.route("GET", r"/files/([\w.-]+)", lambda request: answer(200, self.files[request.match[1]], {
            "Content-Type": "image/jpeg"}) if request.match[1] in self.files else answer(404, b""))

    @property
    def env(self) -> dict:
        return {"RUSTIZ_TIKTOK_AUTH_URL": self.url, "RUSTIZ_TIKTOK_API_URL": self.url}

    def app_env(self) -> dict:
        return {**self.env, "TIKTOK_CLIENT_ID": self.client_key, "TIKTOK_CLIENT_SECRET": self.client_secret}

    def credentials(self) -> dict:
        return {"accessToken": self.issue_access_token()}

    def issue_access_token(self) -> str:
        token = "act." + secrets.token_urlsafe(24)
        self.access_tokens.add(token)
        return token

    # --- OAuth ---------------------------------------------------------------------------------------

    def consent_page(self, request: FakeRequest):
        query = request.query
        if query.get("client_key") != self.client_key or query.get("response_type") != "code" \
                or not query.get("redirect_uri") or "," not in query.get("scope", ""):
            return answer(400, "<html><body>client_key, response_type, scope or redirect_uri is wrong</body></html>",
                          {"Content-Type": "text/html"})
        code = "code-" + secrets.token_urlsafe(12)
        self.codes[code] = query["redirect_uri"]
        state = query.get("state", "")
        return consent_page(f"Allow access to {query['scope']}?", query["redirect_uri"],
                            {"code": code, "scopes": self.granted_scopes, "state": state},
                            {"error": "access_denied", "error_description": "The user denied the request",
                             "state": state}, allow_label="Authorize")

    def token(self, request: FakeRequest):
        form = request.form()
        if form.get("client_key") != self.client_key or form.get("client_secret") != self.client_secret:
            return oauth_error(self.token_error_status, "invalid_client", "Client key or secret is incorrect.")
        if form.get("grant_type") == "authorization_code":
            if self.codes.pop(form.get("code"), None) != form.get("redirect_uri") or not form.get("redirect_uri"):
                return oauth_error(self.token_error_status, "invalid_grant", "Authorization code is expired.")
            return answer(200, self._tokens(new_refresh=True))
        if form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return oauth_error(self.token_error_status, "invalid_grant", "Refresh token is invalid or expired.")
            if self.rotate_refresh_tokens:
                self.refresh_tokens.discard(form["refresh_token"])
                return answer(200, self._tokens(new_refresh=True))
            return answer(200, {**self._tokens(new_refresh=False), "refresh_token": form["refresh_token"]})
        return oauth_error(self.token_error_status, "unsupported_grant_type", "The grant type is not supported.")

    def _tokens(self, new_refresh: bool) -> dict:
        tokens = {"access_token": self.issue_access_token(), "expires_in": 86400, "open_id": self.open_id,
                  "refresh_expires_in": 31536000, "scope": self.granted_scopes, "token_type": "Bearer"}
        if new_refresh:
            tokens["refresh_token"] = "rft." + secrets.token_urlsafe(24)
            self.refresh_tokens.add(tokens["refresh_token"])
        return tokens

    def _unauthorized(self, request: FakeRequest):
        authorization = request.headers.get("authorization", "")
        if not authorization.startswith("Bearer ") or authorization[7:] not in self.access_tokens:
            return api_error(*TOKEN_INVALID)
        return None

    # --- the account ---------------------------------------------------------------------------------

    def user_info(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        fields = [name for name in request.query.get("fields", "").split(",") if name]
        unknown = [name for name in fields if name not in USER_FIELDS]
        if not fields or unknown:
            return api_error(400, "invalid_params", f"Invalid fields: {','.join(unknown) or 'none'}")
        return answer(200, ok({"user": {name: self.user[name] for name in fields}}))

    def creator_info(self, request: FakeRequest):
        return self._unauthorized(request) or answer(200, ok(dict(self.creator)))

    # --- video ---------------------------------------------------------------------------------------

    def video_init(self, request: FakeRequest, inbox: bool):
        refused = self._unauthorized(request)
        if refused:
            return refused
        body = request.json() or {}
        source = body.get("source_info") or {}
        if source.get("source") != "FILE_UPLOAD":
            return api_error(400, "invalid_params", "source must be FILE_UPLOAD in this fake")
        problem = self._chunk_problem(source.get("video_size"), source.get("chunk_size"),
                                      source.get("total_chunk_count"))
        if problem:
            return api_error(400, "invalid_params", problem)
        info = body.get("post_info") or {}
        if not inbox:
            refused = self._post_info_problem(info)
            if refused:
                return refused
        publish_id = f"v_pub_file~v2-1.{next(self.ids)}"
        self.publishes[publish_id] = {"kind": "VIDEO", "inbox": inbox, "post_info": info, "source": source,
                                      "chunks": [], "received": 0, "status": "PROCESSING_UPLOAD",
                                      "polls": self.processing_polls}
        return answer(200, ok({"publish_id": publish_id, "upload_url": f"{self.url}/upload/{publish_id}"
                                                                     f"?upload_token={secrets.token_hex(8)}"}))

    def _chunk_problem(self, size, chunk, count) -> str | None:
        if not all(isinstance(value, int) and value > 0 for value in (size, chunk, count)):
            return "video_size, chunk_size and total_chunk_count must be positive integers"
        if size < self.min_chunk:
            return None if (chunk, count) == (size, 1) else "a video under 5 MB must be one chunk of its size"
        if not self.min_chunk <= chunk <= self.max_chunk and (chunk, count) != (size, 1):
            return "chunk_size must be between 5 MB and 64 MB"
        if count != size // chunk or not 1 <= count <= 1000:
            return "total_chunk_count must be video_size / chunk_size rounded down (1 to 1000)"
        if size - (count - 1) * chunk > 2 * self.max_chunk:
            return "the last chunk may be at most 128 MB"
        return None

    def _post_info_problem(self, info: dict):
        if info.get("privacy_level") not in self.creator["privacy_level_options"]:
            return api_error(403, "privacy_level_option_mismatch",
                             "privacy_level is not in the creator's privacy_level_options")
        for setting, disabled in (("disable_comment", "comment_disabled"), ("disable_duet", "duet_disabled"),
                                  ("disable_stitch", "stitch_disabled")):
            if info.get(setting) is False and self.creator[disabled]:
                return api_error(400, "invalid_params", f"{setting} must be true: the creator turned it off")
        return None

    def upload_chunk(self, request: FakeRequest):
        """Chunks in order, each with Content-Range and a video Content-Type: 206 until the last, then 201."""
        entry = self.publishes.get(request.match[1])
        if entry is None or "upload_token" not in request.query:
            return answer(404, b"")
        source = entry["source"]
        match = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", request.headers.get("content-range", ""))
        number = len(entry["chunks"])
        expected_length = (source["video_size"] - number * source["chunk_size"]
                           if number == source["total_chunk_count"] - 1 else source["chunk_size"])
        if not request.headers.get("content-type", "").startswith("video/") or match is None \
                or int(match[1]) != entry["received"] or int(match[3]) != source["video_size"] \
                or int(match[2]) - int(match[1]) + 1 != len(request.body) or len(request.body) != expected_length:
            return answer(400, b"")
        entry["chunks"].append(request.body)
        entry["received"] += len(request.body)
        if number < source["total_chunk_count"] - 1:
            return answer(206, b"")
        entry["video"] = b"".join(entry["chunks"])
        entry["status"] = "PROCESSING_UPLOAD"
        return answer(201, b"")

    # --- photos --------------------------------------------------------------------------------------

    def content_init(self, request: FakeRequest):
        """A photo post: TikTok pulls every picture from its URL (a real GET here) before it processes it."""
        refused = self._unauthorized(request)
        if refused:
            return refused
        body = request.json() or {}
        source = body.get("source_info") or {}
        images = source.get("photo_images")
        if body.get("media_type") != "PHOTO" or source.get("source") != "PULL_FROM_URL" \
                or not isinstance(images, list) or not 1 <= len(images) <= 35 \
                or body.get("post_mode") not in ("DIRECT_POST", "MEDIA_UPLOAD"):
            return api_error(400, "invalid_params", "media_type, post_mode or source_info is invalid")
        info = body.get("post_info") or {}
        if body["post_mode"] == "DIRECT_POST":
            refused = self._post_info_problem({**info, "disable_duet": True, "disable_stitch": True})
            if refused:
                return refused
        publish_id = f"p_pub_url~v2.{next(self.ids)}"
        entry = {"kind": "PHOTO", "inbox": body["post_mode"] == "MEDIA_UPLOAD", "post_info": info,
                 "source": source, "status": "PROCESSING_DOWNLOAD", "polls": self.processing_polls, "photos": []}
        self.publishes[publish_id] = entry
        for url in images:
            try:
                with urllib.request.urlopen(url, timeout=10) as pulled:
                    entry["photos"].append(pulled.read())
            except OSError:
                entry["pull_failed"] = True
        return answer(200, ok({"publish_id": publish_id}))

    # --- status and counts ---------------------------------------------------------------------------

    def status_fetch(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        entry = self.publishes.get((request.json() or {}).get("publish_id"))
        if entry is None:
            return api_error(400, "invalid_publish_id", "publish_id does not exist")
        if entry["status"].startswith("PROCESSING") and (entry["kind"] == "PHOTO" or "video" in entry):
            if entry["polls"] > 0:
                entry["polls"] -= 1
            else:
                self._finish(entry)
        data = {"status": entry["status"], "uploaded_bytes": entry.get("received", 0)}
        if entry["status"] == "FAILED":
            data["fail_reason"] = entry["fail_reason"]
        if entry.get("public_id"):
            data["publicaly_available_post_id"] = [int(entry["public_id"])]
        return answer(200, ok(data))

    def _finish(self, entry: dict) -> None:
        if self.fail_reason or entry.get("pull_failed"):
            entry.update(status="FAILED", fail_reason=self.fail_reason or "photo_pull_failed")
            return
        if entry["inbox"]:
            entry["status"] = "SEND_TO_USER_INBOX"
        else:
            entry["status"] = "PUBLISH_COMPLETE"
            if self.public_ids and entry["post_info"].get("privacy_level") != "SELF_ONLY":
                entry["public_id"] = str(next(self.ids))
                self.videos[entry["public_id"]] = {"like_count": 17, "comment_count": 3, "share_count": 2,
                                                   "view_count": 450}
        self.published.append(entry)

    def video_query(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        fields = request.query.get("fields", "").split(",")
        ids = ((request.json() or {}).get("filters") or {}).get("video_ids") or []
        videos = [{name: (video_id if name == "id" else self.videos[video_id].get(name)) for name in fields}
                  for video_id in ids if video_id in self.videos]
        return answer(200, ok({"videos": videos, "cursor": 0, "has_more": False}))
