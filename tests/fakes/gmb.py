"""Google Business Profile as rustiz uses it, on one local server standing for every Google host it calls:
accounts.google.com and oauth2.googleapis.com (Google's sign-in, FakeYouTube's own: the consent page, /token
with PKCE, invalid_grant and invalid_client, no refresh token on a refresh), www.googleapis.com
(/oauth2/v2/userinfo), mybusinessaccountmanagement (/v1/accounts, paged), mybusinessbusinessinformation
(/v1/accounts/{a}/locations with its required readMask, paged), mybusiness v4 (a location's media; localPosts
create, which really downloads the photo's sourceUrl, and delete; localPosts:reportInsights) and
businessprofileperformance (fetchMultiDailyMetricsTimeSeries).
Errors are Google's {"error": {"code", "message", "status", "details"}}; a local post's invalid fields come as
Business Profile's ValidationError details. Trouble to inject: fail_next/drop_next (fakes/__init__.py),
`no_quota` (an unapproved project: 429 with a quota of 0), `rejects_content` (state REJECTED)."""
from __future__ import annotations

import base64
import itertools
import secrets
import urllib.request
from urllib.parse import parse_qsl, urlsplit

from fakes import FakePlatform, FakeRequest, answer
from fakes.youtube import FakeYouTube

SCOPE = "https://www.googleapis.com/auth/"
GRANTED = f"{SCOPE}userinfo.profile {SCOPE}business.manage"
ACTIONS = ("BOOK", "ORDER", "SHOP", "LEARN_MORE", "SIGN_UP", "GET_OFFER", "CALL")
PHOTO = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==")
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
          429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def google_error(code: int, message: str, details: list | None = None) -> dict:
    return {"error": {"code": code, "message": message, "status": STATUS[code], **({"details": details} if details
                                                                                   else {})}}


def invalid(field: str, message: str) -> tuple:
    """A 400 as Business Profile's v4 API words an invalid local post."""
    return answer(400, google_error(400, "Request contains an invalid argument.", [
        {"@type": "type.googleapis.com/google.mybusiness.v4.ValidationError",
         "errorDetails": [{"code": 3, "field": field, "message": message}]}]))


def quota_exceeded(limit: str) -> dict:
    return google_error(429, "Quota exceeded for quota metric 'Requests' and limit 'Requests per minute' of service "
                             "'mybusiness.googleapis.com' for consumer 'project_number:100000000001'.", [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED", "domain": "googleapis.com",
         "metadata": {"quota_limit_value": limit, "quota_metric": "mybusiness.googleapis.com/default_requests",
                      "service": "mybusiness.googleapis.com", "consumer": "projects/100000000001"}}])


UNAUTHENTICATED = google_error(401, "Request had invalid authentication credentials. Expected OAuth 2 access token, "
                                    "login cookie or other valid authentication credential.")


class FakeGmb(FakePlatform):
    def __init__(self):
        super().__init__()
        self.client_id, self.client_secret = "gmb-client.apps.googleusercontent.com", "gmb-secret"
        self.env = {"RUSTIZ_GMB_AUTH_URL": self.url, "RUSTIZ_GMB_API_URL": self.url}
        self.codes: dict = {}  # code -> (redirect_uri, code_challenge, offline)
        self.access_tokens: set = set()
        self.refresh_tokens: set = set()
        self.granted = GRANTED
        self.send_refresh_token = True  # on a consent with offline access (FakeYouTube.token)
        self.no_quota = False
        self.rejects_content = False
        self.accounts = [{"name": "accounts/111", "accountName": "Ada Bakes", "type": "PERSONAL"},
                         {"name": "accounts/222", "accountName": "Ada's shops", "type": "LOCATION_GROUP"}]
        self.locations = {  # account -> its locations (the business information API's shape)
            "accounts/111": [{"name": "locations/9001", "title": "Ada Bakes", "languageCode": "fr",
                              "storefrontAddress": {"locality": "Lyon", "regionCode": "FR"},
                              "metadata": {"mapsUri": "https://maps.google.com/maps?cid=9001"}}],
            "accounts/222": [{"name": f"locations/{9100 + number}", "title": f"Shop {number}",
                              "metadata": {"mapsUri": f"https://maps.google.com/maps?cid={9100 + number}"}}
                             for number in range(3)]}
        self.posts: dict = {}  # full name -> the local post
        self.photo = PHOTO  # what its /photos/... serve
        self.photos: dict = {}  # local post name -> the bytes downloaded from its sourceUrl
        self.ids = itertools.count(1)
        self.route("GET", "/o/oauth2/v2/auth", self.consent)
        self.route("POST", "/token", self.token)
        self.route("GET", "/oauth2/v2/userinfo", self.userinfo)
        self.route("GET", "/v1/accounts", self.list_accounts)
        self.route("GET", r"/v1/(accounts/\d+)/locations", self.list_locations)
        self.route("GET", r"/v4/(accounts/\d+/locations/\d+)/media", self.location_media)
        self.route("POST", r"/v4/(accounts/\d+/locations/\d+)/localPosts", self.create_post)
        self.route("DELETE", r"/v4/(accounts/\d+/locations/\d+/localPosts/\d+)", self.delete_post)
        self.route("POST", r"/v4/(accounts/\d+/locations/\d+)/localPosts:reportInsights", self.post_insights)
        self.route("GET", r"/v1/locations/(\d+):fetchMultiDailyMetricsTimeSeries", self.daily_metrics)
        self.route("GET", r"/photos/[\w.]+", lambda request: answer(200, self.photo, {"Content-Type": "image/png"}))

    def new_access_token(self) -> str:
        token = "ya29.gmb-" + secrets.token_hex(8)
        self.access_tokens.add(token)
        return token

    def credentials(self) -> dict:
        return {"accessToken": self.new_access_token()}

    def dispatch(self, request: FakeRequest, handler):
        request.repeated = parse_qsl(urlsplit(handler.path).query)  # (dailyMetrics comes once per metric)
        if self.no_quota and request.path.startswith(("/v1/", "/v4/")):
            return answer(429, quota_exceeded("0"))
        return super().dispatch(request, handler)

    # --- accounts.google.com and oauth2.googleapis.com: Google's sign-in, the same for every Google API -----

    consent, token = FakeYouTube.consent, FakeYouTube.token

    # --- the APIs ------------------------------------------------------------------------------------------

    def _unauthorized(self, request: FakeRequest):
        if request.headers.get("authorization", "").removeprefix("Bearer ") in self.access_tokens:
            return None
        return answer(401, UNAUTHENTICATED)

    def userinfo(self, request: FakeRequest):
        return self._unauthorized(request) or answer(200, {
            "id": "108000000000000000001", "name": "Ada Lovelace", "given_name": "Ada",
            "picture": f"{self.url}/photos/ada.jpg"})

    def _page(self, request: FakeRequest, items: list, key: str, size: int):
        """One page of `items` (pageSize capped at `size`), with nextPageToken while more remain."""
        wanted = min(int(request.query.get("pageSize") or size), size)
        start = int(request.query.get("pageToken") or 0)
        page = {key: items[start:start + wanted]}
        if start + wanted < len(items):
            page["nextPageToken"] = str(start + wanted)
        return answer(200, page)

    def list_accounts(self, request: FakeRequest):
        return self._unauthorized(request) or self._page(request, self.accounts, "accounts", 20)

    def list_locations(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        if not request.query.get("readMask"):
            return answer(400, google_error(400, "Request contains an invalid argument.", [
                {"@type": "type.googleapis.com/google.rpc.BadRequest",
                 "fieldViolations": [{"field": "read_mask", "description": "Field is required"}]}]))
        return self._page(request, self.locations.get(request.match[1], []), "locations", 100)

    def location_media(self, request: FakeRequest):
        return self._unauthorized(request) or answer(200, {"mediaItems": [
            {"name": f"{request.match[1]}/media/cover", "mediaFormat": "PHOTO",
             "locationAssociation": {"category": "COVER"}, "googleUrl": f"{self.url}/photos/cover.jpg"},
            {"name": f"{request.match[1]}/media/profile", "mediaFormat": "PHOTO",
             "locationAssociation": {"category": "PROFILE"}, "googleUrl": f"{self.url}/photos/profile.jpg"}],
            "totalMediaItemCount": 2})

    def _location_known(self, full_name: str) -> bool:
        """Whether "accounts/A/locations/L" is a location of account A."""
        parts = full_name.split("/")
        return any(item["name"] == "/".join(parts[2:]) for item in self.locations.get("/".join(parts[:2]), []))

    def create_post(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        if not self._location_known(request.match[1]):
            return answer(404, google_error(404, "Requested entity was not found."))
        post = request.json()
        problem = self._post_problem(post)
        if problem:
            return problem
        name = f"{request.match[1]}/localPosts/{next(self.ids)}"
        if post.get("media"):
            try:
                with urllib.request.urlopen(post["media"][0]["sourceUrl"], timeout=10) as response:
                    self.photos[name] = response.read()
            except OSError:
                return invalid("media[0].source_url", "Could not fetch the media from the given URL.")
        made = {**post, "name": name, "createTime": "2026-12-06T17:00:00Z", "updateTime": "2026-12-06T17:00:00Z",
                "state": "REJECTED" if self.rejects_content else "LIVE",
                "searchUrl": f"https://local.google.com/place?id=1&use=posts&lpsid={name.rpartition('/')[2]}"}
        self.posts[name] = made
        self.published.append(made)
        return answer(200, made)

    @staticmethod
    def _post_problem(post):
        if not isinstance(post, dict) or not isinstance(post.get("summary"), str):
            return invalid("summary", "Summary is required")
        if len(post["summary"]) > 1500:
            return invalid("summary", "Summary is too long (1500 characters at most)")
        if post.get("topicType") not in ("STANDARD", "EVENT", "OFFER", "ALERT"):
            return invalid("topic_type", "Invalid topic type")
        action = post.get("callToAction")
        if action is not None:
            if action.get("actionType") not in ACTIONS:
                return invalid("call_to_action.action_type", "Invalid action type")
            if action["actionType"] == "CALL" and action.get("url"):
                return invalid("call_to_action.url", "A CALL action takes no url")
            if action["actionType"] != "CALL" and not str(action.get("url", "")).startswith(("http://", "https://")):
                return invalid("call_to_action.url", "Invalid url")
        if post["topicType"] in ("EVENT", "OFFER"):
            event = post.get("event") or {}
            schedule = event.get("schedule") or {}
            if not event.get("title") or not schedule.get("startDate") or not schedule.get("endDate"):
                return invalid("event", "Event title and schedule are required for this topic type")
        if len(post.get("media") or []) > 1:
            return invalid("media", "At most one media item")
        return None

    def delete_post(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        if self.posts.pop(request.match[1], None) is None:
            return answer(404, google_error(404, "Requested entity was not found."))
        return answer(200, {})

    def post_insights(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        body = request.json()
        metrics = [item["metric"] for item in body["basicRequest"]["metricRequests"]]
        return answer(200, {"name": request.match[1], "timeZone": "Europe/Paris", "localPostMetrics": [
            {"localPostName": name, "metricValues": [
                {"metric": metric, "totalValue": {"metricOption": "AGGREGATED_TOTAL",
                                                  "timeDimension": {"timeRange": body["basicRequest"]["timeRange"]},
                                                  "value": str(40 + number)}}
                for number, metric in enumerate(metrics)]}
            for name in body["localPostNames"] if name in self.posts]})

    def daily_metrics(self, request: FakeRequest):
        """Three days of each metric asked; a zero day has no value, as Google leaves zeros out."""
        refused = self._unauthorized(request)
        if refused:
            return refused
        metrics = [value for name, value in request.repeated if name == "dailyMetrics"]
        return answer(200, {"multiDailyMetricTimeSeries": [{"dailyMetricTimeSeries": [
            {"dailyMetric": metric, "timeSeries": {"datedValues": [
                {"date": {"year": 2026, "month": 12, "day": 4}, "value": "3"},
                {"date": {"year": 2026, "month": 12, "day": 5}},
                {"date": {"year": 2026, "month": 12, "day": 6}, "value": str(10 + number)}]}}
            for number, metric in enumerate(metrics)]}]})
