"""Facebook Login and the Graph API as rustiz uses them for Facebook pages, on one local origin (the consent
dialog, graph.facebook.com, graph-video.facebook.com and rupload.facebook.com alike):

- /v25.0/dialog/oauth: the consent page (Allow / Cancel links back to the redirect URI); the permissions the
  user grants are the scopes asked minus `declined`.
- /v25.0/oauth/access_token: the code (with the app's id, secret and the same redirect URI) -> a short-lived
  user token; fb_exchange_token -> a long-lived one. Graph's error shape for a bad secret or a used code.
- Users (`users`), each managing SEVERAL pages (`pages`, with tasks): /me, /me/permissions, /me/accounts
  (paged by `accounts_page_size` with Graph's paging.next), GET /{page}?fields=access_token -> the page's token
  FOR THAT USER TOKEN (a new user token gives new page tokens; expiring a user token kills its page tokens).
- Every Graph call needs a known token as a Bearer header and the appsecret_proof of it, as an app with
  "Require App Secret" does; a dead token gets code 190, a user token where a page token is needed code 200.
- Publishing as the page: /{page}/photos (published=false, multipart `source`), /{page}/feed (JSON, with
  attached_media), /{page}/videos (multipart `source`, or upload_phase start/transfer/finish), /{object}/comments,
  photo_stories and video_stories (start, the bytes to the upload host, status polling, finish), permalinks.
- Insights for the page, posts and videos. `fail_next` with graph_error() bodies injects any Graph error.
"""
from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import secrets
from urllib.parse import urlencode

from fakes import FakePlatform, FakeRequest, answer, consent_page

V = "/v25.0"
APP_ID, APP_SECRET = "1234567890123456", "fb-app-secret-0123456789abcdef"


def graph_error(code: int, message: str, subcode: int | None = None, kind: str = "OAuthException", **more) -> dict:
    error = {"message": message, "type": kind, "code": code, "fbtrace_id": "A" + secrets.token_hex(8), **more}
    if subcode is not None:
        error["error_subcode"] = subcode
    return {"error": error}


DEAD_TOKEN = graph_error(190, "Error validating access token: Session has expired on Thursday, 03-Dec-26 12:00:00 "
                              "PST. The current time is Thursday, 03-Dec-26 13:00:00 PST.", 463)
BAD_PROOF = graph_error(100, "Invalid appsecret_proof provided in the API argument", kind="GraphMethodException")
NOT_AS_PAGE = graph_error(200, "(#200) If posting to a page, requires both pages_read_engagement and "
                               "pages_manage_posts as an admin with sufficient administrative permission",
                          kind="OAuthException")


class FakeFacebook(FakePlatform):
    def __init__(self):
        super().__init__()
        self.client_id, self.client_secret = APP_ID, APP_SECRET
        # "pages": shared with the app in the login dialog; "businesses": the user's Business Manager accounts
        self.users = {"10158000000000001": {"name": "Ada Lovelace", "pages": ["101000000000001", "102000000000002"],
                                            "businesses": []},
                      "10158000000000002": {"name": "Charles Babbage", "pages": ["102000000000002"], "businesses": []}}
        self.businesses = {"300000000000001": {"owned_pages": ["103000000000003"], "client_pages": ["101000000000001"]}}
        self.pages = {
            "101000000000001": {"name": "Analytical Engines", "username": "analyticalengines",
                                "tasks": ["ANALYZE", "ADVERTISE", "MODERATE", "CREATE_CONTENT", "MANAGE"]},
            "102000000000002": {"name": "Difference Society", "username": None,
                                "tasks": ["ANALYZE", "ADVERTISE", "MODERATE", "CREATE_CONTENT", "MANAGE"]},
            "103000000000003": {"name": "Engine Works", "username": "engineworks",
                                "tasks": ["ANALYZE", "ADVERTISE", "MODERATE", "CREATE_CONTENT", "MANAGE"]}}
        self.user = "10158000000000001"  # who signs in on the consent page
        self.declined: set = set()  # permissions the user unticks in the dialog
        self.accounts_page_size = 1  # /me/accounts answers this many pages at a time (paging.next for the rest)
        self.codes: dict = {}  # code -> (redirect_uri, user, granted)
        self.user_tokens: dict = {}  # token -> {"user", "granted", "long"}
        self.page_tokens: dict = {}  # token -> (page, the user token it came from)
        self.objects: dict = {}  # id -> what was made (photos, posts, videos, comments, stories)
        self.uploads: dict = {}  # resumable upload session -> {"video", "size", "data", "page"}
        self.processing_polls = 1  # status polls of a story video that answer "processing" first
        self.ids = itertools.count(1000000001)
        for method, pattern, handler in (
                ("GET", V + "/dialog/oauth", self.consent_page),
                ("GET", V + "/oauth/access_token", self.access_token),
                ("GET", V + "/me", self.me), ("GET", V + "/me/permissions", self.permissions),
                ("GET", V + "/me/accounts", self.accounts), ("GET", V + "/me/businesses", self.my_businesses),
                ("GET", V + r"/(\d+)/(owned_pages|client_pages)", self.business_pages),
                ("POST", V + r"/(\d+)/photos", self.photos), ("POST", V + r"/(\d+)/feed", self.feed),
                ("POST", V + r"/(\d+)/videos", self.videos), ("POST", V + r"/([\d_]+)/comments", self.comments),
                ("POST", V + r"/(\d+)/photo_stories", self.photo_story),
                ("POST", V + r"/(\d+)/video_stories", self.video_story),
                ("POST", r"/video-upload/v25\.0/(\d+)", self.rupload),
                ("GET", V + r"/(\d+)/insights", self.page_insights),
                ("GET", V + r"/(\d+_\d+)/insights", self.post_insights),
                ("GET", V + r"/(\d+)/video_insights", self.video_insights),
                ("GET", V + r"/([\d_]+)", self.node), ("GET", r"/pictures/\d+\.jpg", self.picture)):
            self.route(method, pattern, handler)
        self.deleted: list = []  # (issue 28: DELETE /{post-id} with the page token, the ids deleted in order)
        self.route("DELETE", V + r"/([\d_]+)", self.delete_object)
        self.chunk_size = 1024 * 1024  # what a resumable upload asks for at a time
        self.chunks_received: list = []

    @property
    def env(self) -> dict:
        return {"RUSTIZ_FACEBOOK_AUTH_URL": self.url, "RUSTIZ_FACEBOOK_API_URL": self.url,
                "RUSTIZ_FACEBOOK_VIDEO_URL": self.url, "RUSTIZ_FACEBOOK_UPLOAD_URL": self.url,
                "FACEBOOK_APP_ID": self.client_id, "FACEBOOK_APP_SECRET": self.client_secret}

    # --- tokens --------------------------------------------------------------------------------------------

    def issue_user_token(self, user: str, granted: set, long: bool) -> str:
        token = ("EAAL" if long else "EAAS") + secrets.token_urlsafe(24)
        self.user_tokens[token] = {"user": user, "granted": set(granted), "long": long}
        return token

    def credentials(self, user: str | None = None) -> dict:
        """A connected channel's credentials (a long-lived user token with every permission)."""
        return {"accessToken": self.issue_user_token(user or self.user, set(SCOPES), True)}

    def expire_user_tokens(self) -> None:
        """Every user token (and the page tokens derived from them) dies: Graph answers code 190."""
        self.user_tokens.clear()
        self.page_tokens.clear()

    def proof(self, token: str) -> str:
        return hmac.new(self.client_secret.encode(), token.encode(), hashlib.sha256).hexdigest()

    def _caller(self, request: FakeRequest):
        """(kind "user"/"page", token, details) of the call, or the error answer Graph gives."""
        authorization = request.headers.get("authorization", "")
        token = authorization[7:] if authorization.startswith("Bearer ") else request.query.get("access_token", "")
        if token in self.user_tokens:
            kind, details = "user", self.user_tokens[token]
        elif token in self.page_tokens:
            kind, details = "page", self.page_tokens[token]
        else:
            return None, answer(400, DEAD_TOKEN if token else graph_error(
                2500, "An active access token must be used to query information about the current user."))
        if request.query.get("appsecret_proof") != self.proof(token):
            return None, answer(400, BAD_PROOF)
        return (kind, token, details), None

    def _as_page(self, request: FakeRequest, page: str):
        """The page token of `page`, or Graph's error."""
        caller, refused = self._caller(request)
        if refused:
            return None, refused
        if caller[0] != "page" or caller[2][0] != page:
            return None, answer(403, NOT_AS_PAGE)
        return caller, None

    def picture(self, request: FakeRequest):
        """A profile picture (a 1x1 PNG), so a browser shows the choices' pictures."""
        import struct
        import zlib

        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
               + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b""))
        return answer(200, png, {"Content-Type": "image/png"})

    # --- Facebook Login ------------------------------------------------------------------------------------

    def consent_page(self, request: FakeRequest):
        query = request.query
        if query.get("client_id") != self.client_id or not query.get("redirect_uri"):
            return answer(400, "<html><body>Invalid App ID or redirect_uri</body></html>", {"Content-Type": "text/html"})
        granted = {scope for scope in query.get("scope", "").split(",") if scope} - self.declined
        code = "AQ" + secrets.token_urlsafe(24)
        self.codes[code] = (query["redirect_uri"], self.user, granted)
        return consent_page(f"{self.users[self.user]['name']}: give access to {query.get('scope', '')}?",
                            query["redirect_uri"], {"code": code, "state": query.get("state", "")},
                            {"error": "access_denied", "error_code": "200", "error_reason": "user_denied",
                             "state": query.get("state", "")}, allow_label="Continue")

    def access_token(self, request: FakeRequest):
        query = request.query
        if query.get("client_id") != self.client_id or query.get("client_secret") != self.client_secret:
            return answer(400, graph_error(1, "Error validating client secret."))
        if query.get("grant_type") == "fb_exchange_token":
            short = self.user_tokens.get(query.get("fb_exchange_token", ""))
            if short is None:
                return answer(400, DEAD_TOKEN)
            token = self.issue_user_token(short["user"], short["granted"], True)
            return answer(200, {"access_token": token, "token_type": "bearer", "expires_in": 5183944})
        flow = self.codes.pop(query.get("code", ""), None)
        if flow is None:
            return answer(400, graph_error(100, "This authorization code has been used.", 36009))
        if flow[0] != query.get("redirect_uri"):
            return answer(400, graph_error(100, "Error validating verification code. Please make sure your "
                                                "redirect_uri is identical to the one you used in the OAuth dialog "
                                                "request", 36008))
        token = self.issue_user_token(flow[1], flow[2], False)
        return answer(200, {"access_token": token, "token_type": "bearer", "expires_in": 5400})

    def me(self, request: FakeRequest):
        caller, refused = self._caller(request)
        if refused:
            return refused
        if caller[0] == "page":
            page = caller[2][0]
            return answer(200, {"id": page, "name": self.pages[page]["name"]})
        user = caller[2]["user"]
        return answer(200, {"id": user, "name": self.users[user]["name"], "picture": {"data": {
            "height": 50, "width": 50, "is_silhouette": False, "url": f"{self.url}/pictures/{user}.jpg"}}})

    def permissions(self, request: FakeRequest):
        caller, refused = self._caller(request)
        if refused:
            return refused
        granted = caller[2]["granted"] if caller[0] == "user" else set()
        return answer(200, {"data": [{"permission": scope, "status": "granted" if scope in granted else "declined"}
                                     for scope in SCOPES + ("public_profile",)]})

    def accounts(self, request: FakeRequest):
        caller, refused = self._caller(request)
        if refused or caller[0] != "user":
            return refused or answer(400, graph_error(100, "(#100) Tried accessing nonexisting field (accounts) on "
                                                           "node type (Page)", kind="GraphMethodException"))
        mine = self.users[caller[2]["user"]]["pages"]
        start = int(request.query.get("after") or 0)
        size = min(int(request.query.get("limit", "25")), self.accounts_page_size)
        data = [self._page_fields(page, request.query.get("fields", "id,name")) for page in mine[start:start + size]]
        paging: dict = {"cursors": {"before": str(start), "after": str(start + size)}}
        if start + size < len(mine):
            paging["next"] = f"{self.url}{V}/me/accounts?" + urlencode({**request.query, "after": start + size})
        return answer(200, {"data": data, "paging": paging})

    def user_pages(self, user: str) -> list:
        """Every page the user can act for: those shared in the dialog and those of their businesses."""
        mine = list(self.users[user]["pages"])
        for business in self.users[user]["businesses"]:
            mine += [page for edge in ("owned_pages", "client_pages") for page in self.businesses[business][edge]]
        return mine

    def my_businesses(self, request: FakeRequest):
        caller, refused = self._caller(request)
        if refused or caller[0] != "user":
            return refused or answer(400, graph_error(100, "(#100) Tried accessing nonexisting field (businesses)"))
        if "business_management" not in caller[2]["granted"]:
            return answer(403, graph_error(200, "(#200) Requires business_management permission to manage the object"))
        return answer(200, {"data": [{"id": business, "name": f"Business {business}"}
                                     for business in self.users[caller[2]["user"]]["businesses"]]})

    def business_pages(self, request: FakeRequest):
        caller, refused = self._caller(request)
        if refused:
            return refused
        business, edge = request.match[1], request.match[2]
        if caller[0] != "user" or business not in self.users[caller[2]["user"]]["businesses"]:
            return answer(403, graph_error(200, "(#200) Permissions error"))
        fields = request.query.get("fields", "id,name")
        return answer(200, {"data": [self._page_fields(page, fields) for page in self.businesses[business][edge]]})

    def _page_fields(self, page: str, fields: str) -> dict:
        info = self.pages[page]
        shown = {"id": page, "name": info["name"], "category": "Science Website", "tasks": info["tasks"]}
        if info.get("username"):
            shown["username"] = info["username"]
        shown["picture"] = {"data": {"url": f"{self.url}/pictures/{page}.jpg", "is_silhouette": False}}
        return {name: value for name, value in shown.items() if name in fields or name == "id"}

    def node(self, request: FakeRequest):
        """GET /{id}?fields=...: a page's token (asked with a user token), a video's status, a permalink."""
        caller, refused = self._caller(request)
        if refused:
            return refused
        node, fields = request.match[1], request.query.get("fields", "")
        if node in self.pages:
            if fields == "access_token":
                if caller[0] != "user" or node not in self.user_pages(caller[2]["user"]):
                    return answer(200, {"id": node})  # Graph leaves the field out for a page the user cannot manage
                token = "EAAP" + secrets.token_urlsafe(24)
                self.page_tokens[token] = (node, caller[1])
                return answer(200, {"access_token": token, "id": node})
            return answer(200, self._page_fields(node, fields))
        made = self.objects.get(node)
        if made is None:
            return answer(400, graph_error(100, f"Unsupported get request. Object with ID '{node}' does not exist, "
                                                "cannot be loaded due to missing permissions, or does not support "
                                                "this operation", 33, kind="GraphMethodException"))
        if fields == "status":
            if made.get("polls_left", 0) > 0:
                made["polls_left"] -= 1
                return answer(200, {"id": node, "status": {"video_status": "processing"}})
            return answer(200, {"id": node, "status": {"video_status": "ready"}})
        if made["kind"] == "video":
            return answer(200, {"id": node, "permalink_url": f"/{made['page']}/videos/{node}/"})
        return answer(200, {"id": node, "permalink_url": f"https://www.facebook.com/{node.replace('_', '/posts/')}"})

    # --- publishing as the page -----------------------------------------------------------------------------

    def _new(self, kind: str, page: str, caller, **what) -> str:
        object_id = f"{page}_{next(self.ids)}" if kind in ("post", "comment") else str(next(self.ids))
        made = {"id": object_id, "kind": kind, "page": page, "page_token": caller[1], "user_token": caller[2][1],
                **what}
        self.objects[object_id] = made
        return object_id

    def photos(self, request: FakeRequest):
        page = request.match[1]
        caller, refused = self._as_page(request, page)
        if refused:
            return refused
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            return answer(400, graph_error(324, "(#324) Requires upload file", kind="OAuthException"))
        parts = request.multipart()
        source = parts.get("source")
        if source is None or not source[1]:
            return answer(400, graph_error(324, "(#324) Requires upload file"))
        if len(source[1]) > 4 * 1024 * 1024 or source[2] not in ("image/jpeg", "image/png", "image/gif"):
            return answer(400, graph_error(1, "Your photos couldn't be uploaded. Photos should be less than 4 MB and "
                                              "saved as JPG, PNG, GIF, TIFF, HEIF or WebP files.", 1366046))
        published = parts.get("published", (None, b"true", ""))[1].decode() != "false"
        alt = parts.get("alt_text_custom", (None, b"", ""))[1].decode()
        photo = self._new("photo", page, caller, data=source[1], content_type=source[2], published=published, alt=alt)
        return answer(200, {"id": photo})

    def feed(self, request: FakeRequest):
        page = request.match[1]
        caller, refused = self._as_page(request, page)
        if refused:
            return refused
        body = request.json() if "json" in request.headers.get("content-type", "") else request.form()
        attached = body.get("attached_media") or []
        for item in attached:
            photo = self.objects.get(item.get("media_fbid")) if isinstance(item, dict) else None
            if photo is None or photo["kind"] != "photo" or photo["published"] or photo["page"] != page:
                return answer(400, graph_error(100, "(#100) param attached_media[0] must be an unpublished photo "
                                                    "of the page", kind="OAuthException"))
        if not body.get("message") and not attached and not body.get("link"):
            return answer(400, graph_error(100, "(#100) Missing message or attachment"))
        post_id = self._new("post", page, caller, message=body.get("message"), link=body.get("link"),
                            photos=[self.objects[item["media_fbid"]]["data"] for item in attached],
                            preset=body.get("text_format_preset_id"))
        self.published.append(self.objects[post_id])
        return answer(200, {"id": post_id})

    def videos(self, request: FakeRequest):
        page = request.match[1]
        caller, refused = self._as_page(request, page)
        if refused:
            return refused
        parts = {name: value for name, value in request.multipart().items()}
        field = {name: value[1].decode(errors="replace") for name, value in parts.items() if value[0] is None}
        phase = field.get("upload_phase")
        if phase == "start":
            size = int(field.get("file_size") or 0)
            video = self._new("video", page, caller, data=b"", published=False)
            session = str(next(self.ids))
            self.uploads[session] = {"video": video, "size": size, "data": bytearray(), "page": page}
            return answer(200, {"video_id": video, "upload_session_id": session, "start_offset": "0",
                                "end_offset": str(min(size, self.chunk_size))})
        if phase == "transfer":
            upload = self.uploads.get(field.get("upload_session_id", ""))
            chunk = parts.get("video_file_chunk")
            if upload is None or chunk is None or int(field.get("start_offset", -1)) != len(upload["data"]):
                return answer(400, graph_error(6000, "There was a problem uploading your video file. Please try "
                                                     "again.", 1363019))
            upload["data"] += chunk[1]
            self.chunks_received.append(len(chunk[1]))
            start = len(upload["data"])
            return answer(200, {"start_offset": str(start), "end_offset": str(min(upload["size"], start + self.chunk_size))})
        if phase == "finish":
            upload = self.uploads.pop(field.get("upload_session_id", ""), None)
            if upload is None or len(upload["data"]) != upload["size"]:
                return answer(400, graph_error(6001, "There was a problem uploading your video. Please try again.",
                                               1363030))
            made = self.objects[upload["video"]]
            made.update(data=bytes(upload["data"]), description=field.get("description"), published=True)
            self.published.append(made)
            return answer(200, {"success": True})
        source = parts.get("source")
        if source is None or not source[1]:
            return answer(400, graph_error(390, "There was a problem uploading your video file. Please try again "
                                                "with another file.", 1363030))
        video = self._new("video", page, caller, data=source[1], description=field.get("description"),
                          published=field.get("published", "true") != "false")
        self.published.append(self.objects[video])
        return answer(200, {"id": video})

    def delete_object(self, request: FakeRequest):
        """DELETE /{id}: {"success": true}, as the page that made it; an unknown id: Graph's code 100, subcode 33."""
        target = request.match[1]
        made = self.objects.get(target)
        if made is None:
            return answer(400, graph_error(100, f"Unsupported delete request. Object with ID '{target}' does not "
                                                "exist, cannot be loaded due to missing permissions, or does not "
                                                "support this operation", 33, kind="GraphMethodException"))
        _, refused = self._as_page(request, made["page"])
        if refused:
            return refused
        del self.objects[target]
        self.deleted.append(target)
        return answer(200, {"success": True})

    def comments(self, request: FakeRequest):
        target = request.match[1]
        made = self.objects.get(target)
        if made is None:
            return answer(400, graph_error(100, f"Unsupported post request. Object with ID '{target}' does not "
                                                "exist", 33, kind="GraphMethodException"))
        caller, refused = self._as_page(request, made["page"])
        if refused:
            return refused
        parts = request.multipart() if "multipart" in request.headers.get("content-type", "") else {
            name: (None, value.encode(), "") for name, value in request.form().items()}
        message = parts.get("message", (None, b"", ""))[1].decode()
        source = parts.get("source")
        if not message and source is None:
            return answer(400, graph_error(100, "(#100) Missing message or attachment"))
        comment = self._new("comment", made["page"], caller, on=target, message=message,
                            photo=source[1] if source else None)
        self.published.append(self.objects[comment])
        return answer(200, {"id": comment})

    def photo_story(self, request: FakeRequest):
        page = request.match[1]
        caller, refused = self._as_page(request, page)
        if refused:
            return refused
        photo = self.objects.get(request.form().get("photo_id", ""))
        if photo is None or photo["kind"] != "photo" or photo["published"]:
            return answer(400, graph_error(100, "(#100) photo_id must be an unpublished photo"))
        story = self._new("story", page, caller, media=photo["data"])
        self.published.append(self.objects[story])
        return answer(200, {"success": True, "post_id": story})

    def video_story(self, request: FakeRequest):
        page = request.match[1]
        caller, refused = self._as_page(request, page)
        if refused:
            return refused
        form = request.form()
        if form.get("upload_phase") == "start":
            video = self._new("video", page, caller, data=None, published=False, polls_left=self.processing_polls)
            return answer(200, {"video_id": video, "upload_url": f"{self.url}/video-upload/v25.0/{video}"})
        made = self.objects.get(form.get("video_id", ""))
        if form.get("upload_phase") != "finish" or made is None or not made.get("data") or made["polls_left"]:
            return answer(400, graph_error(100, "(#100) The video is not uploaded or not processed yet"))
        story = self._new("story", page, caller, media=made["data"])
        self.published.append(self.objects[story])
        return answer(200, {"success": True, "post_id": story})

    def rupload(self, request: FakeRequest):
        made = self.objects.get(request.match[1])
        authorization = request.headers.get("authorization", "")
        if made is None or authorization != f"OAuth {made['page_token']}":
            return answer(401, {"debug_info": {"type": "OAuthException", "message": "Invalid OAuth access token"}})
        if request.headers.get("offset") != "0" or request.headers.get("file_size") != str(len(request.body)):
            return answer(400, {"debug_info": {"type": "ProcessingFailedError", "message": "offset/file_size"}})
        made["data"] = request.body
        return answer(200, {"success": True})

    # --- insights ---------------------------------------------------------------------------------------------

    def page_insights(self, request: FakeRequest):
        page = request.match[1]
        caller, refused = self._as_page(request, page)
        if refused:
            return refused
        known = {"page_total_media_view_unique", "page_media_view", "page_post_engagements", "page_daily_follows",
                 "page_follows"}
        metrics = request.query.get("metric", "").split(",")
        unknown = [metric for metric in metrics if metric not in known]
        if unknown:
            return answer(400, graph_error(100, f"(#100) The value must be a valid insights metric: {unknown[0]}",
                                           kind="OAuthException"))
        days = [f"2026-12-0{day}T08:00:00+0000" for day in (1, 2, 3)]
        return answer(200, {"data": [{"name": metric, "period": "day", "values": [
            {"value": {"is_from_ads": 1, "is_not_from_ads": 10 * n} if metric == "page_media_view" else 10 * n,
             "end_time": day} for n, day in enumerate(days, 1)], "id": f"{page}/insights/{metric}/day"}
            for metric in metrics]})

    def post_insights(self, request: FakeRequest):
        made = self.objects.get(request.match[1])
        if made is None:
            return answer(400, graph_error(100, "Object does not exist", 33, kind="GraphMethodException"))
        caller, refused = self._as_page(request, made["page"])
        if refused:
            return refused
        values = {"post_total_media_view_unique": 120, "post_reactions_by_type_total": {"like": 7, "love": 2},
                  "post_clicks": 15}
        metrics = request.query.get("metric", "").split(",")
        if any(metric not in values for metric in metrics):
            return answer(400, graph_error(100, "(#100) The value must be a valid insights metric"))
        return answer(200, {"data": [{"name": metric, "period": "lifetime", "values": [{"value": values[metric]}]}
                                     for metric in metrics]})

    def video_insights(self, request: FakeRequest):
        made = self.objects.get(request.match[1])
        if made is None or made["kind"] != "video":
            return answer(400, graph_error(100, "(#100) Tried accessing nonexisting field (video_insights)",
                                           kind="OAuthException"))
        caller, refused = self._as_page(request, made["page"])
        if refused:
            return refused
        values = {"total_video_impressions": 300, "total_video_views": 90,
                  "total_video_reactions_by_type_total": {"like": 4}}
        return answer(200, {"data": [{"name": metric, "period": "lifetime", "values": [{"value": values[metric]}]}
                                     for metric in request.query.get("metric", "").split(",") if metric in values]})

    # --- for tests ---------------------------------------------------------------------------------------------

    def throttle_next(self, pattern: str, code: int = 32, minutes: int = 0, times: int = 1) -> None:
        """The next POSTs to `pattern` are throttled as Graph does, with X-Business-Use-Case-Usage."""
        usage = {"101000000000001": [{"type": "pages", "call_count": 100, "total_cputime": 30, "total_time": 25,
                                      "estimated_time_to_regain_access": minutes}]}
        self.fail_next("POST", pattern, 400, graph_error(code, "(#32) Page request limit reached" if code == 32 else
                                                         "(#4) Application request limit reached"),
                       {"X-Business-Use-Case-Usage": json.dumps(usage)}, times=times)


SCOPES = ("pages_show_list", "business_management", "pages_manage_posts", "pages_manage_engagement",
          "pages_read_engagement", "read_insights")
