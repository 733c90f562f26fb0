"""Instagram as rustiz uses it, both ways in: one fake serving the Facebook-Login side (graph.facebook.com's
/dialog/oauth consent, /oauth/access_token with the code and fb_exchange_token, /me, /me/permissions,
/me/accounts with each page's instagram_business_account, page tokens, /ig_audio, appsecret_proof checked) and
the Instagram-Login side (www.instagram.com's /oauth/authorize, api.instagram.com's form POST /oauth/access_token,
graph.instagram.com's /access_token (ig_exchange_token), /refresh_access_token (ig_refresh_token) and /me).

Both sides share the content publishing API: POST /{ig-user}/media (the fake really GETs image_url/video_url,
as Instagram does; with upload_type=resumable it answers {id, uri} and waits for the video at rupload's
POST /ig-api-upload/v25.0/{container}: "Authorization: OAuth <token>", offset 0, file_size, the bytes; errors
in rupload's {"debug_info": {retriable, type, message}} shape), container statuses IN_PROGRESS -> FINISHED (or ERROR, EXPIRED), carousels of up to 10
finished children, /media_publish, permalinks, /comments and insights. Graph's error shape {"error": {message,
type, code, error_subcode, fbtrace_id}}; a dead or unknown token answers code 190."""
from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import secrets
import time
import urllib.request

from fakes import FakePlatform, FakeRequest, answer, consent_page

V = "/v25.0"
FB_APP = ("1234567890", "facebook-app-secret")
IG_APP = ("9876543210", "instagram-app-secret")
FB_USER = {"id": "10150000000000001", "name": "Ada Lovelace",
           "picture": {"data": {"url": "https://scontent.example/ada.jpg"}}}
PAGES = [{"id": "1110001", "name": "Analytical Engines", "ig": {
              "id": "17841400000000001", "username": "analytical_engines", "name": "Analytical Engines",
              "profile_picture_url": "https://scontent.example/engines.jpg"}},
         {"id": "1110002", "name": "Difference Society", "ig": None}]
IG_STANDALONE = {"user_id": "17841400000000009", "id": "7000000000000009", "username": "ada_on_ig",
                 "name": "Ada on Instagram", "profile_picture_url": "https://scontent.example/ada_ig.jpg"}
FB_SCOPES = ("instagram_basic", "pages_show_list", "pages_read_engagement", "business_management",
             "instagram_content_publish", "instagram_manage_comments", "instagram_manage_insights")
IG_SCOPES = ("instagram_business_basic", "instagram_business_content_publish", "instagram_business_manage_comments",
             "instagram_business_manage_insights")


def graph_error(message: str, code: int, subcode: int | None = None, kind: str = "OAuthException", **more) -> dict:
    error = {"message": message, "type": kind, "code": code, "fbtrace_id": "A" + secrets.token_hex(8)}
    if subcode is not None:
        error["error_subcode"] = subcode
    return {"error": {**error, **more}}


DEAD_TOKEN = graph_error("Error validating access token: Session has expired on Thursday, 03-Dec-26 10:00:00 "
                         "PST.", 190, 463)
UNKNOWN_TOKEN = graph_error("Invalid OAuth access token - Cannot parse access token", 190)
THROTTLED = graph_error("(#4) Application request limit reached", 4, kind="OAuthException", is_transient=True)
USER_THROTTLED = graph_error("(#17) User request limit reached", 17)


class FakeInstagram(FakePlatform):
    def __init__(self):
        super().__init__()
        self.fb_app, self.ig_app = FB_APP, IG_APP
        self.codes: dict = {}  # code -> (side, redirect_uri)
        self.tokens: dict = {}  # token -> {"kind": fb-short|fb-user|page|ig-short|ig, "page"/"ig": ...}
        self.granted_fb = list(FB_SCOPES)
        self.granted_ig = list(IG_SCOPES)
        self.processing_polls = 2  # status reads of a video container that answer IN_PROGRESS first
        self.next_processing_error = ""  # the `status` of the next video container, which ends in ERROR
        self.containers: dict = {}
        self.media: dict = {}  # published media id -> what was published
        self.comments: list = []
        self.fetched: dict = {}  # URL -> bytes the fake downloaded, as Instagram pulls media
        self.uploaded: dict = {}  # container id -> the video bytes sent to rupload
        self.ids = itertools.count(17900000000000001)
        self.route("GET", V + "/dialog/oauth", lambda request: self.consent(request, "facebook"))
        self.route("GET", "/oauth/authorize", lambda request: self.consent(request, "instagram"))
        self.route("GET", V + "/oauth/access_token", self.facebook_token)
        self.route("POST", "/oauth/access_token", self.instagram_code_exchange)
        self.route("GET", "/access_token", self.instagram_long_lived)
        self.route("GET", "/refresh_access_token", self.instagram_refresh)
        self.route("GET", V + "/me/permissions", self.permissions)
        self.route("GET", V + "/me/accounts", self.accounts)
        self.route("GET", V + "/me", self.me)
        self.route("GET", V + "/ig_audio", self.audio)
        self.route("POST", V + r"/([^/]+)/media", self.create_container)
        self.route("POST", V + r"/([^/]+)/media_publish", self.media_publish)
        self.route("POST", V + r"/([^/]+)/comments", self.comment)
        self.route("GET", V + r"/([^/]+)/insights", self.insights)
        self.route("GET", V + r"/([^/]+)", self.node)
        self.route("POST", r"/ig-api-upload" + V + r"/(\d+)", self.rupload)

    @property
    def env(self) -> dict:
        return {"RUSTIZ_INSTAGRAM_AUTH_URL": self.url, "RUSTIZ_INSTAGRAM_API_URL": self.url,
                "RUSTIZ_INSTAGRAM_STANDALONE_AUTH_URL": self.url, "RUSTIZ_INSTAGRAM_STANDALONE_API_URL": self.url,
                "FACEBOOK_APP_ID": FB_APP[0], "FACEBOOK_APP_SECRET": FB_APP[1],
                "INSTAGRAM_APP_ID": IG_APP[0], "INSTAGRAM_APP_SECRET": IG_APP[1],
                "RUSTIZ_INSTAGRAM_UPLOAD_URL": self.url, "RUSTIZ_INSTAGRAM_POLL_SECONDS": "0.05"}

    def issue(self, kind: str, **about) -> str:
        token = {"fb-short": "EAAS", "fb-user": "EAAL", "page": "EAAP", "ig-short": "IGQS", "ig": "IGAA"}[kind] \
            + secrets.token_urlsafe(24)
        self.tokens[token] = {"kind": kind, "issued": time.time(), **about}
        return token

    def expire(self, token: str) -> None:
        self.tokens.pop(token, None)

    # --- consent ---------------------------------------------------------------------------------------------

    def consent(self, request: FakeRequest, side: str):
        query = request.query
        app_id = FB_APP[0] if side == "facebook" else IG_APP[0]
        if query.get("client_id") != app_id or query.get("response_type") != "code" or not query.get("redirect_uri"):
            return answer(400, "<html><body>Invalid app ID, response_type or redirect_uri</body></html>",
                          {"Content-Type": "text/html"})
        code = "AQ" + secrets.token_urlsafe(16)
        self.codes[code] = (side, query["redirect_uri"])
        # Instagram appends "#_" to its redirect (a browser never sends the fragment back)
        return consent_page(f"Allow access to {query.get('scope', '')}?", query["redirect_uri"],
                            {"code": code, "state": query.get("state", "")},
                            {"error": "access_denied", "error_reason": "user_denied", "state": query.get("state", "")})

    # --- Facebook Login's tokens ----------------------------------------------------------------------------

    def facebook_token(self, request: FakeRequest):
        query = request.query
        if (query.get("client_id"), query.get("client_secret")) != FB_APP:
            return answer(400, graph_error("Error validating client secret.", 1, kind="OAuthException"))
        if query.get("grant_type") == "fb_exchange_token":
            short = self.tokens.get(query.get("fb_exchange_token", ""))
            if short is None or short["kind"] != "fb-short":
                return answer(400, UNKNOWN_TOKEN)
            return answer(200, {"access_token": self.issue("fb-user"), "token_type": "bearer", "expires_in": 5183944})
        side, redirect = self.codes.pop(query.get("code", ""), (None, None))
        if side != "facebook" or redirect != query.get("redirect_uri"):
            return answer(400, graph_error("Invalid verification code format.", 100, 36007))
        return answer(200, {"access_token": self.issue("fb-short"), "token_type": "bearer", "expires_in": 5400})

    # --- Instagram Login's tokens ---------------------------------------------------------------------------

    def instagram_code_exchange(self, request: FakeRequest):
        form = request.form()
        if (form.get("client_id"), form.get("client_secret")) != IG_APP:
            return answer(400, {"error_type": "OAuthException", "code": 400,
                                "error_message": "Invalid platform app"})
        side, redirect = self.codes.pop(form.get("code", ""), (None, None))
        if side != "instagram" or redirect != form.get("redirect_uri") or form.get("grant_type") != "authorization_code":
            return answer(400, {"error_type": "OAuthException", "code": 400,
                                "error_message": "Error validating verification code"})
        return answer(200, {"data": [{"access_token": self.issue("ig-short"), "user_id": IG_STANDALONE["user_id"],
                                      "permissions": ",".join(self.granted_ig)}]})

    def instagram_long_lived(self, request: FakeRequest):
        query = request.query
        if query.get("grant_type") != "ig_exchange_token" or query.get("client_secret") != IG_APP[1]:
            return answer(400, graph_error("Invalid client_secret or grant_type", 101))
        short = self.tokens.get(query.get("access_token", ""))
        if short is None or short["kind"] != "ig-short":
            return answer(400, UNKNOWN_TOKEN)
        return answer(200, {"access_token": self.issue("ig"), "token_type": "bearer", "expires_in": 5183944})

    def instagram_refresh(self, request: FakeRequest):
        query = request.query
        current = self.tokens.get(query.get("access_token", ""))
        if query.get("grant_type") != "ig_refresh_token":
            return answer(400, graph_error("Unsupported grant_type", 100))
        if current is None or current["kind"] != "ig":
            return answer(400, DEAD_TOKEN)
        return answer(200, {"access_token": self.issue("ig"), "token_type": "bearer", "expires_in": 5183944})

    # --- who calls ------------------------------------------------------------------------------------------

    def caller(self, request: FakeRequest):
        """(token, what it is) of a Graph call, or an error answer: Bearer only, and on the Facebook side
        the appsecret_proof of that token when one is sent."""
        authorization = request.headers.get("authorization", "")
        token = authorization[7:] if authorization.startswith("Bearer ") else request.query.get("access_token", "")
        about = self.tokens.get(token)
        if about is None:
            return None, answer(400, DEAD_TOKEN if token.startswith(("EAA", "IGA")) else UNKNOWN_TOKEN)
        proof = request.query.get("appsecret_proof")
        if about["kind"] in ("fb-user", "page") and proof is not None:
            expected = hmac.new(FB_APP[1].encode(), token.encode(), hashlib.sha256).hexdigest()
            if proof != expected:
                return None, answer(400, graph_error("Invalid appsecret_proof provided in the API argument", 100))
        return about, None

    def owner_of(self, about: dict) -> str | None:
        """The Instagram account a token publishes as."""
        if about["kind"] == "page":
            page = next(page for page in PAGES if page["id"] == about["page"])
            return page["ig"]["id"] if page["ig"] else None
        return IG_STANDALONE["user_id"] if about["kind"] == "ig" else None

    def account_id(self, about: dict, name: str) -> str | None:
        """`name` ("me" or an id) as the Instagram account the caller may act as, else None."""
        owner = self.owner_of(about)
        return owner if owner and name in ("me", owner) else None

    # --- Facebook user and pages --------------------------------------------------------------------------

    def permissions(self, request: FakeRequest):
        about, refused = self.caller(request)
        if refused:
            return refused
        return answer(200, {"data": [{"permission": name, "status": "granted"} for name in self.granted_fb]})

    def me(self, request: FakeRequest):
        about, refused = self.caller(request)
        if refused:
            return refused
        fields = request.query.get("fields", "id").split(",")
        source = FB_USER if about["kind"] == "fb-user" else IG_STANDALONE if about["kind"] == "ig" else None
        if source is None:
            return answer(400, graph_error("(#100) Tried accessing nonexisting field", 100))
        return answer(200, {name: source[name] for name in fields if name in source})

    def accounts(self, request: FakeRequest):
        about, refused = self.caller(request)
        if refused:
            return refused
        if about["kind"] != "fb-user":
            return answer(400, graph_error("(#100) Tried accessing nonexisting field (accounts)", 100))
        nested = "instagram_business_account{" in request.query.get("fields", "")
        data = []
        for page in PAGES:
            item = {"id": page["id"], "name": page["name"]}
            if page["ig"]:
                item["instagram_business_account"] = dict(page["ig"]) if nested else {"id": page["ig"]["id"]}
            data.append(item)
        return answer(200, {"data": data, "paging": {"cursors": {"before": "QVFI", "after": "QVFJ"}}})

    def audio(self, request: FakeRequest):
        about, refused = self.caller(request)
        if refused:
            return refused
        if about["kind"] != "fb-user" or request.query.get("audio_type") not in ("music", "original_sound"):
            return answer(400, graph_error("(#100) Invalid parameter", 100))
        query = request.query.get("search_query", "")
        return answer(200, {"audio": [
            {"audio_id": "18000000000000001", "audio_type": request.query["audio_type"],
             "title": f"Late Night {query or 'Trending'}", "display_artist": "The Engines",
             "duration_in_ms": 30000, "cover_artwork_thumbnail_url": "https://scontent.example/cover.jpg",
             "download_url": "https://scontent.example/preview.mp4"}]})

    # --- any node: a page (its token), a container (its status), a media (permalink), an account ------------

    def node(self, request: FakeRequest):
        about, refused = self.caller(request)
        if refused:
            return refused
        node, fields = request.match[1], request.query.get("fields", "id").split(",")
        page = next((page for page in PAGES if page["id"] == node), None)
        if page is not None and about["kind"] == "fb-user":
            values = {"id": page["id"], "name": page["name"], "access_token": self.issue("page", page=page["id"])}
            return answer(200, {name: values[name] for name in fields if name in values})
        owner = self.owner_of(about)
        if node in self.containers and self.containers[node]["owner"] == owner:
            return answer(200, {"id": node, **self.container_state(self.containers[node])})
        if node in self.media and self.media[node]["owner"] == owner:
            values = {"id": node, "permalink": f"https://www.instagram.com/p/{self.media[node]['code']}/",
                      "media_type": self.media[node]["type"]}
            return answer(200, {name: values[name] for name in fields if name in values})
        if owner and node in ("me", owner):
            values = {"id": owner, "followers_count": 1024, "media_count": len(self.media), "username": "x"}
            return answer(200, {name: values[name] for name in fields if name in values})
        return answer(400, graph_error(f"Unsupported get request. Object with ID '{node}' does not exist, cannot be "
                                       "loaded due to missing permissions, or does not support this operation.",
                                       100, 33, kind="GraphMethodException"))

    # --- containers -----------------------------------------------------------------------------------------

    def fetch(self, url: str) -> bytes | None:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                data = response.read()
        except OSError:
            return None
        self.fetched[url] = data
        return data

    def create_container(self, request: FakeRequest):
        about, refused = self.caller(request)
        if refused:
            return refused
        account = self.account_id(about, request.match[1])
        if account is None:
            return answer(400, graph_error("(#10) The user is not an Instagram Business", 10))
        fields = {**request.query, **request.form()}
        fields.pop("appsecret_proof", None)
        kind = fields.get("media_type", "IMAGE")
        container = {"owner": account, "fields": fields, "kind": kind, "polls_left": 0, "status": "",
                     "published": False}
        if kind == "CAROUSEL":
            children = fields.get("children", "").split(",")
            if not 2 <= len(children) <= 10:
                return answer(400, graph_error("The carousel has too little or too many attachments", 100, 2207028))
            for child in children:
                state = self.containers.get(child)
                if state is None or state["owner"] != account or self.container_state(state)["status_code"] != "FINISHED":
                    return answer(400, graph_error(f"Carousel item {child} is not finished", 100, 2207028))
        elif fields.get("upload_type") == "resumable":
            if kind not in ("REELS", "STORIES", "VIDEO"):
                return answer(400, graph_error("(#100) upload_type=resumable needs media_type REELS, STORIES or VIDEO",
                                               100))
            container["awaiting_upload"] = True
        elif "video_url" in fields:
            if kind not in ("REELS", "STORIES", "VIDEO"):
                return answer(400, graph_error("The media type must be REELS, STORIES or VIDEO for a video", 100))
            if self.fetch(fields["video_url"]) is None:
                container["status"] = "Error: Media download has failed. (2207052)"
            else:
                container["polls_left"] = self.processing_polls
                container["status"] = self.next_processing_error
                self.next_processing_error = ""
        elif "image_url" in fields:
            data = self.fetch(fields["image_url"])
            if data is None:
                return answer(400, graph_error("Only photo or video can be accepted as media type.", 9004, 2207052,
                                               error_user_title="Media download has failed.",
                                               error_user_msg="The media could not be fetched from this URI"))
            if not data.startswith(b"\xff\xd8"):
                return answer(400, graph_error("The image format is not supported.", 36003, 2207005,
                                               error_user_msg="Only JPEG images are supported"))
        else:
            return answer(400, graph_error("(#100) The parameter image_url or video_url is required", 100))
        if kind != "CAROUSEL" and fields.get("is_carousel_item") != "true" and kind != "STORIES" \
                and len(fields.get("caption", "")) > 2200:
            return answer(400, graph_error("The caption is too long", 100, 2207010))
        container_id = str(next(self.ids))
        self.containers[container_id] = container
        if container.get("awaiting_upload"):
            return answer(200, {"id": container_id, "uri": f"{self.url}/ig-api-upload{V}/{container_id}"})
        return answer(200, {"id": container_id})

    def rupload(self, request: FakeRequest):
        """rupload.facebook.com: the whole video of a resumable container, from offset 0."""
        def refused(status: int, message: str, kind: str = "ProcessingFailedError", retriable: bool = False):
            return answer(status, {"debug_info": {"retriable": retriable, "type": kind, "message": message}})
        authorization = request.headers.get("authorization", "")
        about = self.tokens.get(authorization[6:]) if authorization.startswith("OAuth ") else None
        container = self.containers.get(request.match[1])
        if about is None:
            return refused(401, "Invalid OAuth access token.", "OAuthException")
        if container is None or container["owner"] != self.owner_of(about) or not container.get("awaiting_upload"):
            return refused(400, "Invalid upload session: the container does not exist or has its media already")
        if request.headers.get("offset") != "0" or request.headers.get("file_size") != str(len(request.body)):
            return refused(400, "The offset and file_size headers do not match the data sent")
        if request.body[4:8] != b"ftyp":
            return refused(400, "Request processing failed: the file is not a video")
        container.update(awaiting_upload=False, polls_left=self.processing_polls, status=self.next_processing_error)
        self.next_processing_error = ""
        self.uploaded[request.match[1]] = request.body
        return answer(200, {"success": True, "message": "Upload successful."})

    def container_state(self, container: dict) -> dict:
        if container["published"]:
            return {"status_code": "PUBLISHED", "status": "Published"}
        if container.get("awaiting_upload"):
            return {"status_code": "IN_PROGRESS", "status": "In Progress: Waiting for the upload."}
        if container["polls_left"] > 0:
            container["polls_left"] -= 1
            return {"status_code": "IN_PROGRESS", "status": "In Progress: Media is still being processed."}
        if container["status"].startswith("Error"):
            return {"status_code": "ERROR", "status": container["status"]}
        return {"status_code": "FINISHED", "status": "Finished: Media has been uploaded and it is ready to be published."}

    def media_publish(self, request: FakeRequest):
        about, refused = self.caller(request)
        if refused:
            return refused
        account = self.account_id(about, request.match[1])
        fields = {**request.query, **request.form()}
        container = self.containers.get(fields.get("creation_id", ""))
        if account is None or container is None or container["owner"] != account:
            return answer(400, graph_error("Media ID is not available", 9007, 2207027))
        state = self.container_state(container) if not container["published"] else {"status_code": "PUBLISHED"}
        if state["status_code"] != "FINISHED":
            return answer(400, graph_error("The media is not ready for publishing, please wait for a moment", 9007,
                                           2207027))
        container["published"] = True
        media_id = str(next(self.ids))
        children = [self.containers[child]["fields"] for child in container["fields"].get("children", "").split(",")
                    if child]
        published = {"id": media_id, "owner": account, "type": container["kind"], "code": secrets.token_urlsafe(8),
                     "fields": container["fields"], "children": children}
        self.media[media_id] = published
        self.published.append(published)
        return answer(200, {"id": media_id})

    def comment(self, request: FakeRequest):
        about, refused = self.caller(request)
        if refused:
            return refused
        media = self.media.get(request.match[1])
        message = {**request.query, **request.form()}.get("message", "")
        if media is None or media["owner"] != self.owner_of(about):
            return answer(400, graph_error("Unsupported post request.", 100, 33, kind="GraphMethodException"))
        if not message:
            return answer(400, graph_error("(#100) The parameter message is required", 100))
        comment_id = str(next(self.ids))
        self.comments.append({"id": comment_id, "media": request.match[1], "message": message})
        return answer(200, {"id": comment_id})

    def insights(self, request: FakeRequest):
        about, refused = self.caller(request)
        if refused:
            return refused
        node, metrics = request.match[1], request.query.get("metric", "").split(",")
        owner = self.owner_of(about)
        if node in self.media and self.media[node]["owner"] == owner:
            return answer(200, {"data": [{"name": name, "period": "lifetime", "values": [{"value": 10 + n}],
                                          "title": name.title(), "id": f"{node}/insights/{name}/lifetime"}
                                         for n, name in enumerate(metrics)]})
        if owner and node in ("me", owner):
            if request.query.get("metric_type") != "total_value" or request.query.get("period") != "day":
                return answer(400, graph_error("(#100) metric_type=total_value and period=day are required", 100))
            if int(request.query["until"]) - int(request.query["since"]) > 30 * 86400:
                return answer(400, graph_error("(#100) The since and until range may not exceed 30 days", 100))
            return answer(200, {"data": [{"name": name, "period": "day", "title": name.title(),
                                          "total_value": {"value": 100 * (n + 1)}, "id": f"{owner}/insights/{name}/day"}
                                         for n, name in enumerate(metrics)]})
        return answer(400, graph_error("Unsupported get request.", 100, 33, kind="GraphMethodException"))

    # --- for tests --------------------------------------------------------------------------------------------

    def fb_user_token(self) -> str:
        return self.issue("fb-user")

    def ig_token(self) -> str:
        return self.issue("ig")

    def published_fields(self) -> list:
        return [json.loads(json.dumps(item["fields"])) for item in self.published]
