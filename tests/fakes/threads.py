"""Threads as rustiz uses it: the authorization window (/oauth/authorize), the code exchange
(POST /oauth/access_token: a short-lived token and the user id), the long-lived token exchange
(GET /access_token, th_exchange_token) and its refresh (GET /refresh_access_token, th_refresh_token), and
graph.threads.net/v1.0: /me, media containers (POST /{user}/threads: TEXT, IMAGE, VIDEO, carousel items and
CAROUSEL; replies by reply_to_id), their status (IN_PROGRESS, then FINISHED or ERROR with error_message),
threads_publish, permalinks, and insights. Graph's error shape throughout; tokens go in the access_token
parameter (query or form), as Meta documents. Media are really downloaded from their URLs, as Threads does."""
from __future__ import annotations

import itertools
import secrets
import time
import urllib.error
import urllib.request

from fakes import FakePlatform, FakeRequest, answer, consent_page

APP_ID, APP_SECRET = "990602627938098", "threads-app-secret"
USER_ID = "17841400000000001"


def graph_error(message: str, code: int, subcode: int | None = None, kind: str = "OAuthException", **more) -> dict:
    error = {"message": message, "type": kind, "code": code, "fbtrace_id": "A" + secrets.token_hex(8), **more}
    if subcode is not None:
        error["error_subcode"] = subcode
    return {"error": error}


INVALID_TOKEN = graph_error("Invalid OAuth access token - Cannot parse access token", 190)
EXPIRED_TOKEN = graph_error("Error validating access token: Session has expired on Thursday, 03-Dec-26 12:00:00 PST.",
                            190, 463)
THROTTLED = graph_error("Application request limit reached", 4, kind="OAuthException", is_transient=True)
CODE_USED = graph_error("This authorization code has been used", 100)
NOT_READY = graph_error("Media Not Ready For Publishing", 9007, 2207027, kind="THApiException")


class FakeThreads(FakePlatform):
    def __init__(self):
        super().__init__()
        self.client_id, self.client_secret, self.user_id = APP_ID, APP_SECRET, USER_ID
        self.codes: dict = {}  # code -> redirect_uri
        self.tokens: dict = {}  # token -> {"kind": "short" | "long", "issued": epoch}
        self.exchanges: list = []  # (short token, long token) of each th_exchange_token
        self.refreshes: list = []  # (old token, new token) of each th_refresh_token
        self.processing_polls = 1  # status checks of a media container that answer IN_PROGRESS first
        self.processing_error: str | None = None  # e.g. "FAILED_PROCESSING_VIDEO": containers end in ERROR
        self.fetched: dict = {}  # media URL -> the bytes Threads downloaded
        self.objects: dict = {}  # id -> container or media
        self.ids = itertools.count(18000000000000001)
        self.route("GET", "/oauth/authorize", self.consent_page)
        self.route("POST", "/oauth/access_token", self.code_exchange)
        self.route("GET", "/access_token", self.long_lived_exchange)
        self.route("GET", "/refresh_access_token", self.refresh)
        self.route("GET", "/v1.0/me", self.me)
        self.route("POST", r"/v1.0/(\w+)/threads", self.create_container)
        self.route("POST", r"/v1.0/(\w+)/threads_publish", self.publish)
        self.route("GET", r"/v1.0/(\w+)/threads_insights", self.user_insights)
        self.route("GET", r"/v1.0/(\d+)/insights", self.media_insights)
        self.route("GET", r"/v1.0/(\d+)", self.read_object)
        self.deleted: list = []  # (issue 28: DELETE /{threads-media-id}, the ids deleted in order)
        self.delete_granted = True  # False: the token lacks threads_delete (a channel connected before rustiz asked it)
        self.route("DELETE", r"/v1.0/(\d+)", self.delete_media)

    @property
    def env(self) -> dict:
        return {"RUSTIZ_THREADS_AUTH_URL": self.url, "RUSTIZ_THREADS_API_URL": self.url,
                "RUSTIZ_THREADS_POLL_SECONDS": "0.05"}

    def credentials(self) -> dict:
        return {"accessToken": self.issue("long"), "userId": self.user_id}

    def issue(self, kind: str) -> str:
        token = ("THAA" if kind == "long" else "THQW") + secrets.token_urlsafe(24)
        self.tokens[token] = {"kind": kind, "issued": time.time()}
        return token

    def media(self) -> list:
        """The published posts and replies, in order."""
        return [item for item in self.objects.values() if item["kind"] == "media"]

    # --- OAuth ---------------------------------------------------------------------------------------

    def consent_page(self, request: FakeRequest):
        query = request.query
        if query.get("client_id") != self.client_id or query.get("response_type") != "code" \
                or not query.get("redirect_uri") or "threads_basic" not in query.get("scope", "").split(","):
            return answer(400, "<html><body>Invalid Request: client_id, redirect_uri, scope or response_type</body>"
                               "</html>", {"Content-Type": "text/html"})
        code = "AQ" + secrets.token_urlsafe(16)
        self.codes[code] = query["redirect_uri"]
        return consent_page(f"Allow access to {query['scope']}?", query["redirect_uri"],
                            {"code": code, "state": query.get("state", "")},
                            {"error": "access_denied", "error_reason": "user_denied",
                             "error_description": "Permissions error", "state": query.get("state", "")})

    def code_exchange(self, request: FakeRequest):
        form = {**request.query, **request.form()}
        if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
            return answer(400, graph_error("Error validating application. Invalid application ID.", 101))
        if form.get("grant_type") != "authorization_code":
            return answer(400, graph_error("Unsupported grant_type", 100))
        if self.codes.pop(form.get("code"), None) != form.get("redirect_uri") or not form.get("redirect_uri"):
            return answer(400, CODE_USED)
        return answer(200, {"access_token": self.issue("short"), "user_id": int(self.user_id)})

    def long_lived_exchange(self, request: FakeRequest):
        query = request.query
        if query.get("grant_type") != "th_exchange_token":
            return answer(400, graph_error("Unsupported grant_type", 100))
        if query.get("client_secret") != self.client_secret:
            return answer(400, graph_error("Error validating client secret.", 101))
        if self.tokens.get(query.get("access_token"), {}).get("kind") != "short":
            return answer(400, INVALID_TOKEN)
        token = self.issue("long")
        self.exchanges.append((query["access_token"], token))
        return answer(200, {"access_token": token, "token_type": "bearer", "expires_in": 5183944})

    def refresh(self, request: FakeRequest):
        query = request.query
        if query.get("grant_type") != "th_refresh_token":
            return answer(400, graph_error("Unsupported grant_type", 100))
        if self.tokens.get(query.get("access_token"), {}).get("kind") != "long":
            return answer(400, EXPIRED_TOKEN)
        token = self.issue("long")
        self.refreshes.append((query["access_token"], token))
        return answer(200, {"access_token": token, "token_type": "bearer", "expires_in": 5183944})

    def _refused(self, params: dict):
        return None if params.get("access_token") in self.tokens else answer(400, INVALID_TOKEN)

    def _user_ok(self, name: str) -> bool:
        return name in (self.user_id, "me")

    # --- the profile -----------------------------------------------------------------------------------

    def me(self, request: FakeRequest):
        profile = {"id": self.user_id, "username": "ada.lovelace", "name": "Ada Lovelace",
                   "threads_profile_picture_url": f"{self.url}/pictures/ada.jpg"}
        fields = request.query.get("fields", "id").split(",")
        return self._refused(request.query) or answer(200, {name: profile[name] for name in fields if name in profile})

    # --- containers and posts ----------------------------------------------------------------------------

    def create_container(self, request: FakeRequest):
        params = {**request.query, **request.form()}
        refused = self._refused(params)
        if refused or not self._user_ok(request.match[1]):
            return refused or answer(400, graph_error("Unsupported post request", 100, 33, "GraphMethodException"))
        problem = self._container_problem(params)
        if problem:
            return answer(400, graph_error(problem, 100, kind="THApiException"))
        container = {"kind": "container", "id": str(next(self.ids)), "params": params, "status": "IN_PROGRESS",
                     "polls_left": self.processing_polls, "error_message": None}
        url = params.get("image_url") or params.get("video_url")
        if url:
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    self.fetched[url] = response.read()
            except (urllib.error.URLError, OSError):
                if params["media_type"] == "IMAGE":
                    return answer(400, graph_error("The media could not be fetched from this URI: " + url, 100,
                                                   2207052, "THApiException"))
                container.update(error_message="FAILED_DOWNLOADING_VIDEO", polls_left=0)
        self.objects[container["id"]] = container
        return answer(200, {"id": container["id"]})

    def _container_problem(self, params: dict) -> str | None:
        kind, text = params.get("media_type"), params.get("text", "")
        if len(text) > 500:
            return "Param text must be at most 500 characters long."
        if kind == "TEXT" and not text:
            return "Param text is required for TEXT posts"
        if kind in ("IMAGE", "VIDEO"):
            field = "image_url" if kind == "IMAGE" else "video_url"
            if not params.get(field, "").startswith(("http://", "https://")):
                return f"Param {field} must be a valid URL"
        elif kind == "CAROUSEL":
            children = [self.objects.get(child) for child in params.get("children", "").split(",")]
            if not 2 <= len(children) <= 20:
                return "Param children must contain between 2 and 20 items"
            if any(child is None or child["params"].get("is_carousel_item") != "true"
                   or child["status"] != "FINISHED" for child in children):
                return "Param children must name finished carousel items"
        elif kind != "TEXT":
            return "Param media_type must be one of {TEXT, IMAGE, VIDEO, CAROUSEL}"
        reply_to = params.get("reply_to_id")
        if reply_to and self.objects.get(reply_to, {}).get("kind") != "media":
            return "Param reply_to_id must be the id of a published post"
        return None

    def read_object(self, request: FakeRequest):
        refused = self._refused(request.query)
        item = self.objects.get(request.match[1])
        if refused or item is None:
            return refused or answer(400, graph_error("Unsupported get request. Object does not exist", 100, 33,
                                                      "GraphMethodException"))
        if item["kind"] == "container":
            if item["status"] == "IN_PROGRESS":
                if item["polls_left"] > 0:
                    item["polls_left"] -= 1
                elif item["error_message"] or self.processing_error:
                    item.update(status="ERROR", error_message=item["error_message"] or self.processing_error)
                else:
                    item["status"] = "FINISHED"
            shown = {"id": item["id"], "status": item["status"]}
            if item["status"] == "ERROR":
                shown["error_message"] = item["error_message"]
            return answer(200, shown)
        return answer(200, {"id": item["id"], "permalink": item["permalink"]})

    def publish(self, request: FakeRequest):
        params = {**request.query, **request.form()}
        refused = self._refused(params)
        if refused or not self._user_ok(request.match[1]):
            return refused or answer(400, graph_error("Unsupported post request", 100, 33, "GraphMethodException"))
        container = self.objects.get(params.get("creation_id", ""))
        if container is None or container["kind"] != "container" or container["params"].get("is_carousel_item"):
            return answer(400, graph_error("Param creation_id must be a valid media container id", 100))
        if container["status"] != "FINISHED":
            return answer(400, NOT_READY)
        container["status"] = "PUBLISHED"
        media_id = str(next(self.ids))
        code = secrets.token_urlsafe(8)
        media = {"kind": "media", "id": media_id, "permalink": f"https://www.threads.net/@ada.lovelace/post/{code}",
                 **{name: container["params"].get(name) for name in ("media_type", "text", "reply_to_id",
                                                                      "image_url", "video_url", "alt_text")},
                 "children": [self.objects[child]["params"] for child in
                              container["params"].get("children", "").split(",") if child]}
        self.objects[media_id] = media
        self.published.append(media)
        return answer(200, {"id": media_id})

    def delete_media(self, request: FakeRequest):
        """{"success": true, "deleted_id"}; without threads_delete: code 10; an unknown id: code 100, subcode 33."""
        refused = self._refused(request.query)
        if refused:
            return refused
        if not self.delete_granted:
            return answer(403, graph_error("(#10) Application does not have permission for this action", 10))
        if self.objects.get(request.match[1], {}).get("kind") != "media":
            return answer(400, graph_error("Unsupported delete request", 100, 33, "GraphMethodException"))
        del self.objects[request.match[1]]
        self.deleted.append(request.match[1])
        return answer(200, {"success": True, "deleted_id": request.match[1]})

    # --- insights ----------------------------------------------------------------------------------------

    def user_insights(self, request: FakeRequest):
        query = request.query
        refused = self._refused(query)
        if refused or not self._user_ok(request.match[1]):
            return refused or answer(400, graph_error("Unsupported get request", 100, 33, "GraphMethodException"))
        if int(query.get("since", "1712991600")) < 1712991600:
            return answer(400, graph_error("Param since must be on or after 1712991600", 100))
        data = []
        for metric in query.get("metric", "").split(","):
            if metric == "views":
                days = [time.strftime("%Y-%m-%dT08:00:00+0000", time.gmtime(time.time() - 86400 * n)) for n in (1, 0)]
                data.append({"name": "views", "period": "day", "title": "views", "id": f"{self.user_id}/insights/views/day",
                             "values": [{"value": 40 + n, "end_time": day} for n, day in enumerate(days)]})
            elif metric in ("likes", "replies", "reposts", "quotes", "followers_count"):
                value = {"likes": 25, "replies": 7, "reposts": 3, "quotes": 1, "followers_count": 1200}[metric]
                data.append({"name": metric, "period": "day", "title": metric, "total_value": {"value": value},
                             "id": f"{self.user_id}/insights/{metric}/day"})
            else:
                return answer(400, graph_error(f"Param metric contains unsupported value {metric}", 100))
        return answer(200, {"data": data})

    def media_insights(self, request: FakeRequest):
        refused = self._refused(request.query)
        if refused or self.objects.get(request.match[1], {}).get("kind") != "media":
            return refused or answer(400, graph_error("Unsupported get request", 100, 33, "GraphMethodException"))
        counts = {"views": 321, "likes": 12, "replies": 2, "reposts": 1, "quotes": 0, "shares": 4}
        return answer(200, {"data": [
            {"name": metric, "period": "lifetime", "values": [{"value": counts[metric]}], "title": metric,
             "id": f"{request.match[1]}/insights/{metric}/lifetime"}
            for metric in request.query.get("metric", "").split(",") if metric in counts]})
