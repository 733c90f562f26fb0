"""VK as rustiz uses it: VK ID's consent page (/authorize with PKCE S256; the callback carries code, state and
device_id), its token endpoint (POST /oauth2/auth: authorization_code with code_verifier and device_id,
refresh_token with device_id; refresh tokens rotate; {"error", "error_description"} refusals), and the VK API
(POST /method/<name> with access_token and v in the form): users.get, photos.getWallUploadServer, the upload
server (multipart "photo" / "video_file"), photos.saveWallPhoto, video.save, wall.post, wall.createComment,
wall.getById, wall.delete, wall.deleteComment. VK API refusals come with HTTP 200 in its own shape,
{"error": {"error_code", "error_msg", "request_params"}}."""
from __future__ import annotations

import base64
import hashlib
import itertools
import json
import secrets

from fakes import FakePlatform, FakeRequest, answer, consent_page

CLIENT_ID = "51234567"
USER_ID = 1234567


def vk_error(code: int, message: str, method: str = "") -> dict:
    return {"error": {"error_code": code, "error_msg": message,
                      "request_params": [{"key": "method", "value": method}, {"key": "v", "value": "5.199"}]}}


AUTH_FAILED = vk_error(5, "User authorization failed: invalid access_token (4).")
TOO_MANY = vk_error(6, "Too many requests per second")
FLOOD = vk_error(9, "Flood control")
RATE_LIMIT = vk_error(29, "Rate limit reached")


class FakeVk(FakePlatform):
    def __init__(self):
        super().__init__()
        self.client_id, self.user_id = CLIENT_ID, USER_ID
        self.device_id = "dev-" + secrets.token_hex(8)
        self.codes: dict = {}  # code -> (redirect_uri, code_challenge)
        self.access_tokens: set = set()
        self.refresh_tokens: set = set()
        self.uploads: dict = {}  # upload server key -> the file it took
        self.photos: dict = {}  # photo id -> bytes
        self.videos: dict = {}  # video id -> bytes (once uploaded)
        self.posts: dict = {}  # post id -> {"message", "attachments", "comments": {id: ...}}
        self.ids = itertools.count(101)
        self.route("GET", "/authorize", self.consent)
        self.route("POST", "/oauth2/auth", self.token)
        self.route("POST", r"/method/([\w.]+)", self.method)
        self.route("POST", r"/upload/(photo|video)/(\w+)", self.upload_server)

    @property
    def env(self) -> dict:
        return {"RUSTIZ_VK_AUTH_URL": self.url, "RUSTIZ_VK_API_URL": self.url}

    def credentials(self) -> dict:
        return {"accessToken": self.issue_access_token(), "userId": str(self.user_id)}

    def issue_access_token(self) -> str:
        token = "vk1.a." + secrets.token_urlsafe(24)
        self.access_tokens.add(token)
        return token

    # --- VK ID ----------------------------------------------------------------------------------------

    def consent(self, request: FakeRequest):
        query = request.query
        if query.get("client_id") != self.client_id or query.get("code_challenge_method") != "S256" \
                or not query.get("code_challenge") or not query.get("redirect_uri"):
            return answer(400, "<html><body>invalid request: client_id, PKCE or redirect_uri</body></html>",
                          {"Content-Type": "text/html"})
        code = "vkcode-" + secrets.token_urlsafe(12)
        self.codes[code] = (query["redirect_uri"], query["code_challenge"])
        state = query.get("state", "")
        return consent_page(f"Allow access to {query.get('scope', '')}?", query["redirect_uri"],
                            {"code": code, "state": state, "device_id": self.device_id, "type": "code_v2",
                             "expires_in": "600"},
                            {"error": "access_denied", "error_description": "User denied access", "state": state})

    def token(self, request: FakeRequest):
        """VK ID answers its refusals with HTTP 400 {"error", "error_description", "state"}."""
        form = request.form()
        refuse = lambda error, words: answer(400, {"error": error, "error_description": words,
                                                    "state": form.get("state", "")})
        if form.get("client_id") != self.client_id:
            return refuse("invalid_client", "client_id is invalid")
        if not form.get("state"):
            return refuse("invalid_request", "state is missing")
        if form.get("device_id") != self.device_id:
            return refuse("invalid_request", "device_id is invalid")
        if form.get("grant_type") == "authorization_code":
            redirect_uri, challenge = self.codes.pop(form.get("code"), (None, None))
            verifier = form.get("code_verifier", "").encode()
            computed = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
            if redirect_uri is None or redirect_uri != form.get("redirect_uri") or computed != challenge:
                return refuse("invalid_grant", "code is invalid or expired")
            return answer(200, self._tokens(form["state"]))
        if form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return refuse("invalid_grant", "refresh token is invalid or expired")
            self.refresh_tokens.discard(form["refresh_token"])
            return answer(200, self._tokens(form["state"]))
        return refuse("unsupported_grant_type", "grant_type is not supported")

    def _tokens(self, state: str) -> dict:
        refresh = "vk2.a." + secrets.token_urlsafe(24)
        self.refresh_tokens.add(refresh)
        return {"refresh_token": refresh, "access_token": self.issue_access_token(), "id_token": "eyJ.fake.jwt",
                "token_type": "Bearer", "expires_in": 3600, "user_id": self.user_id, "state": state,
                "scope": "vkid.personal_info wall photos video"}

    # --- the VK API ------------------------------------------------------------------------------------

    def method(self, request: FakeRequest):
        form = request.form()
        name = request.match[1]
        if form.get("v") != "5.199":
            return answer(200, vk_error(8, "Invalid request: v is required", name))
        if form.get("access_token") not in self.access_tokens:
            return answer(200, AUTH_FAILED)
        handler = getattr(self, "api_" + name.replace(".", "_"), None)
        if handler is None:
            return answer(200, vk_error(3, "Unknown method passed", name))
        return answer(200, handler(form))

    def api_users_get(self, form: dict) -> dict:
        return {"response": [{"id": self.user_id, "first_name": "Ada", "last_name": "Lovelace",
                              "screen_name": "ada_l", "photo_200": f"{self.url}/ada_200.jpg", "followers_count": 321,
                              "can_access_closed": True, "is_closed": False}]}

    def api_photos_getWallUploadServer(self, form: dict) -> dict:
        key = secrets.token_hex(6)
        self.uploads[key] = None
        return {"response": {"upload_url": f"{self.url}/upload/photo/{key}", "album_id": -14, "user_id": self.user_id}}

    def api_photos_saveWallPhoto(self, form: dict) -> dict:
        try:
            photo = json.loads(form.get("photo", ""))
        except ValueError:
            photo = None
        key = photo[0].get("key") if isinstance(photo, list) and photo else None
        if key not in self.uploads or form.get("hash") != "h-" + str(key) or form.get("server") != "843213":
            return vk_error(121, "Invalid hash", "photos.saveWallPhoto")
        photo_id = next(self.ids)
        self.photos[photo_id] = self.uploads[key]
        return {"response": [{"id": photo_id, "owner_id": self.user_id, "album_id": -14, "date": 1700000000,
                              "sizes": []}]}

    def api_video_save(self, form: dict) -> dict:
        video_id = next(self.ids)
        self.videos[video_id] = None
        return {"response": {"upload_url": f"{self.url}/upload/video/{video_id}", "video_id": video_id,
                             "owner_id": self.user_id, "title": form.get("name", ""), "access_key": "ak"}}

    def upload_server(self, request: FakeRequest):
        kind, key = request.match[1], request.match[2]
        parts = request.multipart()
        field = "photo" if kind == "photo" else "video_file"
        if field not in parts:
            return answer(200, {"error": "ERR_UPLOAD_FILE_NOT_UPLOADED: file not uploaded"})
        data = parts[field][1]
        if kind == "photo":
            if key not in self.uploads or not data.startswith((b"\x89PNG", b"\xff\xd8", b"GIF8")):
                return answer(200, {"server": 843213, "photo": "[]", "hash": "00"})
            self.uploads[key] = data
            return answer(200, {"server": 843213, "photo": json.dumps([{"key": key}]), "hash": "h-" + key})
        if int(key) not in self.videos:
            return answer(200, {"error": "ERR_UPLOAD_BAD_VIDEO_ID"})
        self.videos[int(key)] = data
        return answer(200, {"size": len(data), "video_id": int(key), "owner_id": self.user_id, "video_hash": "vh"})

    def _check_attachments(self, form: dict):
        for item in filter(None, form.get("attachments", "").split(",")):
            kind, _, ids = item.partition(str(self.user_id) + "_")
            known = self.photos if kind == "photo" else self.videos if kind == "video" else {}
            if not ids.isdigit() or int(ids) not in known:
                return vk_error(100, f"One of the parameters specified was missing or invalid: attachments {item}")
        return None

    def api_wall_post(self, form: dict) -> dict:
        refused = self._check_attachments(form)
        if refused:
            return refused
        if not form.get("message") and not form.get("attachments"):
            return vk_error(100, "One of the parameters specified was missing or invalid: message is empty")
        post_id = next(self.ids)
        self.posts[post_id] = {"message": form.get("message", ""), "attachments": form.get("attachments", ""),
                               "owner_id": form.get("owner_id"), "comments": {}}
        self.published.append(self.posts[post_id])
        return {"response": {"post_id": post_id}}

    def api_wall_createComment(self, form: dict) -> dict:
        refused = self._check_attachments(form)
        post = self.posts.get(int(form.get("post_id", "0") or 0))
        if refused or post is None:
            return refused or vk_error(100, "One of the parameters specified was missing or invalid: post_id")
        comment_id = next(self.ids)
        post["comments"][comment_id] = {"message": form.get("message", ""), "attachments": form.get("attachments", "")}
        return {"response": {"comment_id": comment_id, "parents_stack": []}}

    def api_wall_getById(self, form: dict) -> dict:
        owner, _, post_id = form.get("posts", "").partition("_")
        if post_id.isdigit() and int(post_id) in self.posts:
            return {"response": {"items": [{"id": int(post_id), "owner_id": int(owner), "likes": {"count": 7},
                                            "reposts": {"count": 2}, "comments": {"count": 1},
                                            "views": {"count": 140}}]}}
        return {"response": {"items": []}}

    def api_wall_delete(self, form: dict) -> dict:
        if self.posts.pop(int(form.get("post_id", "0") or 0), None) is None:
            return vk_error(15, "Access denied: post was already deleted")
        return {"response": 1}

    def api_wall_deleteComment(self, form: dict) -> dict:
        comment = int(form.get("comment_id", "0") or 0)
        for post in self.posts.values():
            if post["comments"].pop(comment, None) is not None:
                return {"response": 1}
        return vk_error(15, "Access denied")
