"""Pinterest as rustiz uses it: the consent page (www.pinterest.com/oauth/), the token endpoint
(/v5/oauth/token, HTTP Basic, authorization_code and refresh_token grants), /v5/user_account, /v5/boards
with bookmarks, /v5/pins with base64 image, carousel and video sources, the video upload (/v5/media, a
form POST to its upload URL, then polling /v5/media/{id}), the X-RateLimit-* headers, and Pinterest's
error shape {"code": int, "message": str}."""
from __future__ import annotations

import base64
import binascii
import itertools
import secrets

from fakes import FakePlatform, FakeRequest, answer, consent_page

GRANT_INVALID = {"code": 283, "message": "The authorization grant is invalid"}
AUTHENTICATION_FAILED = {"code": 2, "message": "Authentication failed."}
TRIAL = {"code": 29, "message": "Apps with Trial access may not create Pins in production https://api.pinterest.com "
                                "- use API Sandbox https://api-sandbox.pinterest.com instead."}
SCOPES = "boards:read,boards:write,pins:read,pins:write,user_accounts:read"
IMAGE_TYPES = ("image/jpeg", "image/png")


class FakePinterest(FakePlatform):
    rate_limit = 1000  # every answer carries the rate-limit headers; the reset in seconds, as Pinterest's

    def __init__(self):
        super().__init__()
        self.client_id, self.client_secret = "1234567", "pinterest-app-secret"
        self.codes: dict = {}  # code -> redirect_uri
        self.access_tokens: set = set()
        self.refresh_tokens: set = set()
        self.rotate_refresh_tokens = True  # continuous refresh: each refresh answers a new refresh token
        self.trial_access = False  # a Trial app: pins are refused in production (code 29)
        self.processing_polls = 0  # GETs of a new video that answer "processing" before "succeeded"
        self.video_fails = False
        self.boards = [{"id": "549755885175", "name": "Recipes", "privacy": "PUBLIC"},
                       {"id": "549755885176", "name": "Travel", "privacy": "SECRET"}]
        self.media: dict = {}  # media_id -> {"status", "polls_left", "file", "parameters"}
        self.pins: dict = {}
        self.ids = itertools.count(1125899906842624)
        self.route("GET", "/oauth/", self.consent_page)
        self.route("POST", "/v5/oauth/token", self.token)
        self.route("GET", "/v5/user_account", self.user_account)
        self.route("GET", r"/v5/pins/([^/]+)/analytics", self.pin_analytics)
        self.route("GET", "/v5/boards", self.list_boards)
        self.route("POST", "/v5/pins", self.create_pin)
        self.route("POST", "/v5/media", self.register_media)
        self.route("POST", "/upload-bucket/", self.bucket_upload)
        self.route("GET", r"/v5/media/(\d+)", self.media_state)
        self.deleted: list = []  # (issue 28: DELETE /v5/pins/{id}, the ids in order)
        self.route("DELETE", r"/v5/pins/([^/]+)", self.delete_pin)

    @property
    def env(self) -> dict:
        return {"RUSTIZ_PINTEREST_AUTH_URL": self.url, "RUSTIZ_PINTEREST_API_URL": self.url}

    def credentials(self) -> dict:
        """A connected channel's credentials, as the connect flow stores them."""
        token = self.issue_access_token()
        return {"accessToken": token}

    def issue_access_token(self) -> str:
        token = "pina_" + secrets.token_urlsafe(24)
        self.access_tokens.add(token)
        return token

    # --- OAuth ---------------------------------------------------------------------------------------

    def consent_page(self, request: FakeRequest):
        """A small page with an "Allow" and a "Cancel" link back to the redirect URI, as the real page's buttons."""
        query = request.query
        if query.get("client_id") != self.client_id or query.get("response_type") != "code" \
                or not query.get("redirect_uri"):
            return answer(400, "<html><body>Invalid client_id, response_type or redirect_uri</body></html>",
                          {"Content-Type": "text/html"})
        code = "code-" + secrets.token_urlsafe(12)
        self.codes[code] = query["redirect_uri"]
        return consent_page(f"Give access to {query.get('scope', '')}?", query["redirect_uri"],
                            {"code": code, "state": query.get("state", "")},
                            {"error": "access_denied", "state": query.get("state", "")}, allow_label="Give access")

    def token(self, request: FakeRequest):
        expected = "Basic " + base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        if request.headers.get("authorization") != expected:
            return answer(401, AUTHENTICATION_FAILED)
        form = request.form()
        if form.get("grant_type") == "authorization_code":
            if self.codes.pop(form.get("code"), None) != form.get("redirect_uri") or not form.get("redirect_uri"):
                return answer(401, GRANT_INVALID)
            return answer(200, self._tokens("authorization_code", with_refresh=True))
        if form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return answer(401, GRANT_INVALID)
            if self.rotate_refresh_tokens:
                self.refresh_tokens.discard(form["refresh_token"])
            return answer(200, self._tokens("refresh_token", with_refresh=self.rotate_refresh_tokens))
        return answer(400, {"code": 1, "message": "Invalid request: grant_type is not supported"})

    def _tokens(self, response_type: str, with_refresh: bool) -> dict:
        tokens = {"access_token": self.issue_access_token(), "token_type": "bearer", "expires_in": 2592000,
                  "scope": SCOPES, "response_type": response_type}
        if with_refresh:
            refresh = "pinr_" + secrets.token_urlsafe(24)
            self.refresh_tokens.add(refresh)
            tokens.update(refresh_token=refresh, refresh_token_expires_in=5184000)
        return tokens

    def _unauthorized(self, request: FakeRequest):
        authorization = request.headers.get("authorization", "")
        if not authorization.startswith("Bearer ") or authorization[7:] not in self.access_tokens:
            return answer(401, AUTHENTICATION_FAILED)
        return None

    # --- the account ---------------------------------------------------------------------------------

    def user_account(self, request: FakeRequest):
        return self._unauthorized(request) or answer(200, {
            "account_type": "BUSINESS", "id": "870462240001", "username": "ada_bakes",
            "profile_image": f"{self.url}/images/ada_60x60.jpg", "website_url": "https://ada.example",
            "business_name": "Ada Bakes", "board_count": len(self.boards), "pin_count": len(self.pins),
            "follower_count": 310, "monthly_views": 12000})

    def pin_analytics(self, request: FakeRequest):
        """Daily metrics from start_date to end_date (Pinterest's shape), growing by day."""
        import datetime
        refused = self._unauthorized(request)
        if refused or request.match[1] not in self.pins:
            return refused or answer(404, {"code": 50, "message": "Pin not found."})
        start = datetime.date.fromisoformat(request.query["start_date"])
        end = datetime.date.fromisoformat(request.query["end_date"])
        if (end - start).days > 89:
            return answer(400, {"code": 1, "message": "Date range cannot exceed 90 days."})
        kinds = request.query["metric_types"].split(",")
        days = [start + datetime.timedelta(days=n) for n in range((end - start).days + 1)]
        return answer(200, {"all": {"daily_metrics": [
            {"date": day.isoformat(), "data_status": "READY", "metrics": {kind: 10 * (n + 1) for kind in kinds}}
            for n, day in enumerate(days)], "summary_metrics": {}}})

    def list_boards(self, request: FakeRequest):
        """Pages of `page_size` boards, the next one named by the `bookmark` of the answer."""
        refused = self._unauthorized(request)
        if refused:
            return refused
        size = int(request.query.get("page_size", "25"))
        if not 1 <= size <= 250:
            return answer(400, {"code": 1, "message": "Invalid parameters: page_size must be between 1 and 250"})
        start = int(request.query.get("bookmark") or 0)
        page = self.boards[start:start + size]
        bookmark = str(start + size) if start + size < len(self.boards) else None
        return answer(200, {"items": [{**board, "description": "", "owner": {"username": "ada_bakes"},
                                       "media": {"image_cover_url": f"{self.url}/covers/{board['id']}.jpg"}}
                                      for board in page], "bookmark": bookmark})

    # --- pins ----------------------------------------------------------------------------------------

    def delete_pin(self, request: FakeRequest):
        """204; a pin it does not have: 404 {"code": 50, "message": "Pin not found."}."""
        refused = self._unauthorized(request)
        if refused:
            return refused
        if self.pins.pop(request.match[1], None) is None:
            return answer(404, {"code": 50, "message": "Pin not found."})
        self.deleted.append(request.match[1])
        return answer(204)

    def create_pin(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        if self.trial_access:
            return answer(403, TRIAL)
        pin = request.json()
        problem = self._pin_problem(pin)
        if problem:
            return answer(400, {"code": 1, "message": f"Invalid parameters. {problem}"})
        if pin["board_id"] not in {board["id"] for board in self.boards}:
            return answer(404, {"code": 40, "message": "Board not found."})
        pin_id = str(next(self.ids))
        created = {"id": pin_id, "created_at": "2026-12-03T13:00:00", "board_id": pin["board_id"],
                   "title": pin.get("title"), "description": pin.get("description"), "link": pin.get("link"),
                   "alt_text": pin.get("alt_text"), "dominant_color": pin.get("dominant_color"),
                   "media_source": pin["media_source"], "board_owner": {"username": "ada_bakes"}}
        self.pins[pin_id] = created
        self.published.append(created)
        return answer(201, created)

    def _pin_problem(self, pin) -> str | None:
        if not isinstance(pin, dict) or not isinstance(pin.get("board_id"), str):
            return "'board_id' is a required property"
        if len(pin.get("description") or "") > 500:
            return "'description' is too long (maximum 500 characters)"
        if len(pin.get("title") or "") > 100:
            return "'title' is too long (maximum 100 characters)"
        if len(pin.get("alt_text") or "") > 500:
            return "'alt_text' is too long (maximum 500 characters)"
        source = pin.get("media_source")
        kind = source.get("source_type") if isinstance(source, dict) else None
        if kind == "image_base64":
            return self._image_problem(source.get("content_type"), source.get("data"))
        if kind == "multiple_image_base64":
            items = source.get("items")
            if not isinstance(items, list) or not 2 <= len(items) <= 5:
                return "'items' failed constraint: minItems=2, maxItems=5"
            for item in items:
                problem = self._image_problem(item.get("content_type"), item.get("data"))
                if problem:
                    return problem
            return None
        if kind == "video_id":
            media = self.media.get(source.get("media_id"))
            if media is None or media["status"] != "succeeded":
                return "The video is not uploaded or not processed yet"
            if not source.get("cover_image_url") and not source.get("cover_image_content_type"):
                return "Either cover_image_url or cover_image_content_type and cover_image_data is required"
            if source.get("cover_image_content_type"):
                return self._image_problem(source["cover_image_content_type"], source.get("cover_image_data"))
            return None
        return f"'{kind}' is not a supported source_type"

    @staticmethod
    def _image_problem(content_type, data) -> str | None:
        if content_type not in IMAGE_TYPES:
            return f"'{content_type}' is not one of ['image/jpeg', 'image/png']"
        try:
            base64.b64decode(data or "", validate=True)
        except (binascii.Error, ValueError):
            return "'data' is not valid base64"
        return None if data else "'data' is required"

    def pin_images(self, pin: dict) -> list:
        """The decoded pictures of a published pin (its one image, its carousel, or its video's cover)."""
        source = pin["media_source"]
        if source["source_type"] == "image_base64":
            return [base64.b64decode(source["data"])]
        if source["source_type"] == "multiple_image_base64":
            return [base64.b64decode(item["data"]) for item in source["items"]]
        return [base64.b64decode(source["cover_image_data"])]

    # --- video upload --------------------------------------------------------------------------------

    def register_media(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        body = request.json()
        if not isinstance(body, dict) or body.get("media_type") != "video":
            return answer(400, {"code": 1, "message": "Invalid parameters. 'media_type' must be 'video'"})
        media_id = str(next(self.ids))
        parameters = {"x-amz-date": "20261203T130000Z", "x-amz-signature": secrets.token_hex(16),
                      "x-amz-security-token": secrets.token_urlsafe(16), "x-amz-algorithm": "AWS4-HMAC-SHA256",
                      "key": f"uploads/{media_id}/video.mp4", "policy": secrets.token_urlsafe(24),
                      "x-amz-credential": "ASIA/20261203/us-east-1/s3/aws4_request",
                      "Content-Type": "multipart/form-data"}
        self.media[media_id] = {"status": "registered", "polls_left": self.processing_polls, "file": None,
                                "parameters": parameters}
        return answer(201, {"media_id": media_id, "media_type": "video", "upload_url": f"{self.url}/upload-bucket/",
                            "upload_parameters": parameters})

    def bucket_upload(self, request: FakeRequest):
        """The storage bucket: every form field Pinterest handed out must come back, then the file; 204."""
        parts = request.multipart()
        media = next((media for media in self.media.values()
                      if parts.get("key") and media["parameters"]["key"] == parts["key"][1].decode()), None)
        if media is None or any(name not in parts or parts[name][1].decode() != value
                                for name, value in media["parameters"].items()) or "file" not in parts:
            return answer(403, "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code></Error>",
                          {"Content-Type": "application/xml"})
        if list(parts)[-1] != "file":
            return answer(400, "<?xml version=\"1.0\"?><Error><Code>InvalidArgument</Code></Error>",
                          {"Content-Type": "application/xml"})
        media.update(file=parts["file"][1], status="failed" if self.video_fails else "processing")
        return answer(204)

    def media_state(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        media = self.media.get(request.match[1])
        if media is None:
            return answer(404, {"code": 3, "message": "Media not found"})
        if media["status"] == "processing":
            if media["polls_left"] > 0:
                media["polls_left"] -= 1
            else:
                media["status"] = "succeeded"
        return answer(200, {"media_id": request.match[1], "media_type": "video", "status": media["status"]})
