"""TikTok's API for Business (open_api/v1.3) as rustiz uses it: the consent page (/v2/auth/authorize/ on
www.tiktok.com, client_key and comma-separated scopes), the token endpoints (/tt_user/oauth2/token/ with an
auth_code, /tt_user/oauth2/refresh_token/, JSON bodies with client_id and client_secret, refresh tokens
rotated), /business/get/ with its JSON `fields`, video and photo publishing that pull the media from their URLs
(a real GET, as TikTok does), /business/publish/status/ through PROCESSING_DOWNLOAD to PUBLISH_COMPLETE,
SEND_TO_USER_INBOX or FAILED, /business/video/list/, the music trending list and the location search.

Every answer is TikTok's envelope {"code", "message", "request_id", "data"}, and a refusal is a non-zero code in
an HTTP 200 (40105 a dead access token, 40100 throttling, 40002 a bad parameter, 40001 no permission)."""
from __future__ import annotations

import itertools
import json
import secrets
import time
import urllib.request

from fakes import FakePlatform, FakeRequest, answer
from fakes.tiktok import FakeTikTok

SCOPES = "user.info.basic,user.info.username,user.info.stats,video.list,video.upload,video.publish"
API = "/open_api/v1.3"
ACCOUNT = {"username": "ada.business", "display_name": "Ada's Bakery", "profile_image": "", "followers_count": 5100,
           "following_count": 12, "total_likes": 40200, "videos_count": 88}
TOKEN_INVALID = (40105, "Access token is incorrect or has been revoked.")


def request_id() -> str:
    return time.strftime("%Y%m%d%H%M%S") + secrets.token_hex(8).upper()


def envelope(code: int = 0, message: str = "OK", data: dict | None = None, status: int = 200):
    return answer(status, {"code": code, "message": message, "request_id": request_id(), "data": data or {}})


class FakeTikTokBusiness(FakePlatform):
    def __init__(self):
        super().__init__()
        self.client_id, self.client_secret = "7300000000000000001", "tiktok-business-secret"
        self.client_key = self.client_id  # (the consent page's name for it)
        self.codes: dict = {}  # auth_code -> redirect_uri
        self.access_tokens: set = set()
        self.refresh_tokens: set = set()
        self.granted_scopes = SCOPES
        self.open_id = "-000b2c3d-business-open-id"
        self.processing_polls = 1  # status reads that answer PROCESSING_DOWNLOAD before the outcome
        self.fail_reason = ""  # when set, a post ends FAILED with it
        self.public_ids = True  # PUBLISH_COMPLETE carries post_ids
        self.files: dict = {}  # name -> bytes, served at /files/<name> (media for provider tests to pull)
        self.shares: dict = {}  # share_id -> its state
        self.videos: dict = {}  # public item id -> counts
        self.tracks = [
            {"commercial_music_id": "cm-1", "commercial_music_name": "Rise", "artist": "Dawn", "duration": 31,
             "thumbnail_url": "", "preview_url": "", "full_duration_song_clip": {"song_clip_id": "clip-1"}},
            {"commercial_music_id": "cm-2", "commercial_music_name": "Crust", "artist": "Oven", "duration": 0,
             "trending_song_clip": {"song_clip_id": "clip-2", "duration": 30, "preview_url": "p2"}},
            {"commercial_music_id": "cm-3", "commercial_music_name": "No clip", "artist": "None"}]
        self.ids = itertools.count(7400000000000000001)
        self.route("GET", "/v2/auth/authorize/", self.consent_page)
        self.route("POST", API + "/tt_user/oauth2/token/", self.token)
        self.route("POST", API + "/tt_user/oauth2/refresh_token/", self.refresh)
        self.route("GET", API + "/business/get/", self.business)
        self.route("POST", API + "/business/video/publish/", lambda request: self.publish(request, "VIDEO"))
        self.route("POST", API + "/business/photo/publish/", lambda request: self.publish(request, "PHOTO"))
        self.route("GET", API + "/business/publish/status/", self.status)
        self.route("GET", API + "/business/video/list/", self.video_list)
        self.route("GET", API + "/discovery/cml/trending_list/", self.trending)
        self.route("GET", API + "/business/publish/location/", self.locations)
        self.route("GET", r"/files/([\w.-]+)", lambda request: answer(200, self.files[request.match[1]], {
            "Content-Type": "image/jpeg"}) if request.match[1] in self.files else answer(404, b""))

    @property
    def env(self) -> dict:
        return {"RUSTIZ_TIKTOK_BUSINESS_AUTH_URL": self.url, "RUSTIZ_TIKTOK_BUSINESS_API_URL": self.url}

    def app_env(self) -> dict:
        return {**self.env, "TIKTOK_BUSINESS_CLIENT_ID": self.client_id,
                "TIKTOK_BUSINESS_CLIENT_SECRET": self.client_secret}

    def credentials(self) -> dict:
        return {"accessToken": self.issue_access_token(), "businessId": self.open_id}

    issue_access_token = FakeTikTok.issue_access_token

    # --- OAuth ---------------------------------------------------------------------------------------

    # www.tiktok.com's consent page is the one Login Kit shows for both APIs (the app's id as client_key).
    consent_page = FakeTikTok.consent_page

    def _app_refused(self, body: dict):
        if body.get("client_id") != self.client_id or body.get("client_secret") != self.client_secret:
            return envelope(40001, "Invalid app id or secret.")
        return None

    def token(self, request: FakeRequest):
        body = request.json() or {}
        refused = self._app_refused(body)
        if refused:
            return refused
        if body.get("grant_type") != "authorization_code" or not body.get("redirect_uri") \
                or self.codes.pop(body.get("auth_code"), None) != body.get("redirect_uri"):
            return envelope(40002, "auth_code is invalid or expired.")
        return envelope(data=self._tokens())

    def refresh(self, request: FakeRequest):
        body = request.json() or {}
        refused = self._app_refused(body)
        if refused:
            return refused
        if body.get("grant_type") != "refresh_token" or body.get("refresh_token") not in self.refresh_tokens:
            return envelope(40002, "refresh_token is invalid or expired.")
        self.refresh_tokens.discard(body["refresh_token"])  # rotated: the old one dies
        return envelope(data=self._tokens())

    def _tokens(self) -> dict:
        refresh_token = "rft." + secrets.token_urlsafe(24)
        self.refresh_tokens.add(refresh_token)
        return {"access_token": self.issue_access_token(), "expires_in": 86400, "open_id": self.open_id,
                "refresh_token": refresh_token, "refresh_token_expires_in": 31536000, "scope": self.granted_scopes,
                "token_type": "Bearer"}

    def _refused(self, request: FakeRequest, business_id: str | None):
        if request.headers.get("access-token") not in self.access_tokens:
            return envelope(*TOKEN_INVALID)
        if business_id != self.open_id:
            return envelope(40002, "business_id is invalid.")
        return None

    # --- the account ---------------------------------------------------------------------------------

    def business(self, request: FakeRequest):
        refused = self._refused(request, request.query.get("business_id"))
        if refused:
            return refused
        try:
            fields = json.loads(request.query.get("fields", "[]"))
        except ValueError:
            fields = None
        if not isinstance(fields, list) or any(name not in ACCOUNT for name in fields):
            return envelope(40002, "fields is invalid.")
        return envelope(data={name: ACCOUNT[name] for name in fields})

    def video_list(self, request: FakeRequest):
        refused = self._refused(request, request.query.get("business_id"))
        if refused:
            return refused
        fields = json.loads(request.query.get("fields", "[]"))
        wanted = json.loads(request.query.get("filters", "{}")).get("video_ids") or list(self.videos)
        videos = [{name: (item_id if name == "item_id" else self.videos[item_id].get(name)) for name in fields}
                  for item_id in wanted if item_id in self.videos]
        return envelope(data={"videos": videos, "cursor": 0, "has_more": False})

    def trending(self, request: FakeRequest):
        return self._refused(request, request.query.get("business_id")) or envelope(data={"list": self.tracks})

    def locations(self, request: FakeRequest):
        refused = self._refused(request, request.query.get("business_id"))
        if refused:
            return refused
        words = request.query.get("search_query", "")
        return envelope(data={"locations": [{"location_id": "loc-1", "location_name": f"{words} Bakery",
                                             "location_address": "1 Flour St"}]})

    # --- publishing ----------------------------------------------------------------------------------

    def publish(self, request: FakeRequest, kind: str):
        """TikTok pulls the video or every picture from its URL (a real GET here), then processes the post."""
        body = request.json() or {}
        refused = self._refused(request, body.get("business_id"))
        if refused:
            return refused
        urls = [body.get("video_url")] if kind == "VIDEO" else body.get("photo_images")
        if not isinstance(urls, list) or not urls or not all(isinstance(url, str) and url for url in urls) \
                or (kind == "PHOTO" and len(urls) > 35) or not isinstance(body.get("post_info"), dict):
            return envelope(40002, "video_url, photo_images or post_info is invalid.")
        share_id = f"{'v' if kind == 'VIDEO' else 'p'}_pub_url~v2-1.{next(self.ids)}"
        info = body["post_info"]
        entry = {"kind": kind, "body": body, "post_info": info, "status": "PROCESSING_DOWNLOAD",
                 "polls": self.processing_polls, "media": [],
                 "inbox": info.get("upload_to_draft") is True or info.get("is_draft") is True}
        self.shares[share_id] = entry
        for url in urls:
            try:
                with urllib.request.urlopen(url, timeout=10) as pulled:
                    entry["media"].append(pulled.read())
            except OSError:
                entry["pull_failed"] = True
        return envelope(data={"share_id": share_id})

    def status(self, request: FakeRequest):
        refused = self._refused(request, request.query.get("business_id"))
        if refused:
            return refused
        entry = self.shares.get(request.query.get("publish_id"))
        if entry is None:
            return envelope(40002, "publish_id is invalid.")
        if entry["status"] == "PROCESSING_DOWNLOAD":
            if entry["polls"] > 0:
                entry["polls"] -= 1
            else:
                self._finish(entry)
        data = {"status": entry["status"]}
        if entry["status"] == "FAILED":
            data["reason"] = entry["reason"]
        if entry.get("public_id"):
            data["post_ids"] = [entry["public_id"]]
        return envelope(data=data)

    def _finish(self, entry: dict) -> None:
        if self.fail_reason or entry.get("pull_failed"):
            entry.update(status="FAILED",
                         reason=self.fail_reason or f"{'video' if entry['kind'] == 'VIDEO' else 'photo'}_pull_failed")
            return
        if entry["inbox"]:
            entry["status"] = "SEND_TO_USER_INBOX"
        else:
            entry["status"] = "PUBLISH_COMPLETE"
            if self.public_ids:
                entry["public_id"] = str(next(self.ids))
                self.videos[entry["public_id"]] = {"likes": 21, "comments": 4, "shares": 3, "video_views": 610}
        self.published.append(entry)
