"""YouTube as rustiz uses it, on one local server standing for accounts.google.com (the consent page),
oauth2.googleapis.com (/token: authorization_code with PKCE and refresh_token grants, Google's invalid_grant
and invalid_client refusals, no refresh token on a refresh) and www.googleapis.com (channels.list mine=true,
videos.list statistics, the resumable upload: session start, chunks answered 308 with Range, the status query
"bytes */total", 404 for a lost session; thumbnails.set; commentThreads.insert and comments.insert), with
Google's error shape {"error": {"code", "message", "errors": [{"reason"}]}} for 401, quota and upload limits.
Trouble to inject: fail_next/drop_next (fakes/__init__.py), `partial_next` (a chunk of which only the first n bytes are
kept before a 503), `quota_exceeded`, `upload_limit`, `lose_sessions()`, `has_channel`."""
from __future__ import annotations

import base64
import hashlib
import itertools
import re
import secrets

from fakes import FakePlatform, FakeRequest, answer, consent_page

SCOPE = "https://www.googleapis.com/auth/"
GRANTED = " ".join(SCOPE + name for name in ("userinfo.profile", "youtube", "youtube.force-ssl", "youtube.readonly",
                                              "youtube.upload"))
THUMBNAIL_PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==")


def google_error(status: int, message: str, reason: str, domain: str = "youtube.api"):
    return answer(status, {"error": {"code": status, "message": message,
                                     "errors": [{"message": message, "domain": domain, "reason": reason}]}})


class FakeYouTube(FakePlatform):
    def __init__(self):
        super().__init__()
        self.client_id, self.client_secret = "yt-client.apps.googleusercontent.com", "yt-secret"
        self.env = {"RUSTIZ_YOUTUBE_AUTH_URL": self.url, "RUSTIZ_YOUTUBE_API_URL": self.url}
        self.codes: dict = {}  # code -> (redirect_uri, code_challenge, offline)
        self.access_tokens: set = set()
        self.refresh_tokens: set = set()
        self.send_refresh_token = True  # on a consent; Google sends none on a refresh, and sometimes none on a consent
        self.granted = GRANTED
        self.has_channel = True
        self.quota_exceeded = False
        self.upload_limit = False
        self.granularity = 256 * 1024  # chunks but the last must be multiples of it; tests set it small
        self.partial_next = 0  # >0: the next chunk keeps only this many bytes, then fails with 503
        self.sessions: dict = {}  # upload id -> {"metadata", "size", "type", "data", "video"}
        self.videos: dict = {}  # video id -> {"metadata", "data", "thumbnail"}
        self.comments: dict = {}  # comment id -> {"video", "parent", "text"}
        self.ids = itertools.count(1)
        self.route("GET", "/o/oauth2/v2/auth", self.consent)
        self.route("POST", "/token", self.token)
        self.route("GET", "/youtube/v3/channels", self.channels)
        self.route("GET", "/youtube/v3/videos", self.video_list)
        self.route("POST", "/upload/youtube/v3/videos", self.start_upload)
        self.route("PUT", "/upload/youtube/v3/videos", self.upload_chunk)
        self.route("POST", "/upload/youtube/v3/thumbnails/set", self.set_thumbnail)
        self.route("POST", "/youtube/v3/commentThreads", self.comment_thread)
        self.route("POST", "/youtube/v3/comments", self.comment_reply)
        self.deleted: list = []  # (issue 28: videos.delete and comments.delete, the ids in order)
        self.route("DELETE", "/youtube/v3/(videos|comments)", self.delete_item)

    def new_access_token(self) -> str:
        token = "ya29.fake-" + secrets.token_hex(8)
        self.access_tokens.add(token)
        return token

    def credentials(self) -> dict:
        return {"accessToken": self.new_access_token()}

    def lose_sessions(self) -> None:
        """Every upload session is gone (expired): their URIs answer 404."""
        self.sessions.clear()

    # --- accounts.google.com and oauth2.googleapis.com ---------------------------------------------------

    def consent(self, request: FakeRequest):
        query = request.query
        if query.get("client_id") != self.client_id or query.get("response_type") != "code" \
                or not query.get("redirect_uri") or not query.get("state"):
            return answer(400, "<html><body>Error 400: invalid_request</body></html>", {"Content-Type": "text/html"})
        if query.get("code_challenge") and query.get("code_challenge_method") != "S256":
            return answer(400, "<html><body>Error 400: invalid_request (code_challenge_method)</body></html>",
                          {"Content-Type": "text/html"})
        code = "4/0fake-" + secrets.token_hex(6)
        self.codes[code] = (query["redirect_uri"], query.get("code_challenge"), query.get("access_type") == "offline")
        return consent_page(f"Sign in with Google: rustiz wants access to your YouTube account: "
                            f"{query.get('scope', '')}", query["redirect_uri"],
                            {"state": query["state"], "code": code, "scope": self.granted},
                            {"state": query["state"], "error": "access_denied"})

    def token(self, request: FakeRequest):
        form = request.form()
        if (form.get("client_id"), form.get("client_secret")) != (self.client_id, self.client_secret):
            return answer(401, {"error": "invalid_client", "error_description": "Unauthorized"})
        grant = form.get("grant_type")
        tokens = {"access_token": self.new_access_token(), "expires_in": 3599, "scope": self.granted,
                  "token_type": "Bearer"}
        if grant == "authorization_code":
            redirect_uri, challenge, offline = self.codes.pop(form.get("code"), (None, None, False))
            verifier = form.get("code_verifier", "")
            expected = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if redirect_uri is None or redirect_uri != form.get("redirect_uri") or (challenge and challenge != expected):
                return answer(400, {"error": "invalid_grant", "error_description": "Bad Request"})
            if offline and self.send_refresh_token:
                tokens["refresh_token"] = "1//fake-" + secrets.token_hex(8)
                self.refresh_tokens.add(tokens["refresh_token"])
            return answer(200, tokens)
        if grant == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return answer(400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."})
            return answer(200, tokens)  # Google keeps the refresh token and sends none back
        return answer(400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type: " + str(grant)})

    # --- www.googleapis.com --------------------------------------------------------------------------------

    def _unauthorized(self, request: FakeRequest):
        if request.headers.get("authorization", "").removeprefix("Bearer ") in self.access_tokens:
            return None
        return google_error(401, "Request had invalid authentication credentials. Expected OAuth 2 access token, "
                                 "login cookie or other valid authentication credential.", "authError", "global")

    def channels(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        if request.query.get("mine") != "true":
            return google_error(400, "No filter selected. Expected one of: mine, id, forHandle", "missingRequiredParameter")
        page = {"kind": "youtube#channelListResponse", "pageInfo": {"totalResults": 0, "resultsPerPage": 5}}
        if not self.has_channel:
            return answer(200, {**page, "items": []})
        item = {"kind": "youtube#channel", "id": "UCfake0000000000000000001"}
        if "snippet" in request.query.get("part", ""):
            item["snippet"] = {"title": "Ada's Engines", "customUrl": "@adaengines", "thumbnails": {
                "default": {"url": "https://yt3.ggpht.example/ada=s88"},
                "high": {"url": "https://yt3.ggpht.example/ada=s800"}}}
        if "statistics" in request.query.get("part", ""):
            item["statistics"] = {"viewCount": "12345", "subscriberCount": "678", "hiddenSubscriberCount": False,
                                  "videoCount": str(len(self.videos) + 9)}
        return answer(200, {**page, "pageInfo": {"totalResults": 1, "resultsPerPage": 5}, "items": [item]})

    def video_list(self, request: FakeRequest):
        refused = self._unauthorized(request)
        ids = request.query.get("id", "").split(",")
        return refused or answer(200, {"kind": "youtube#videoListResponse", "items": [
            {"kind": "youtube#video", "id": video, "statistics": {"viewCount": "321", "likeCount": "45",
                                                                  "favoriteCount": "0", "commentCount": "6"}}
            for video in ids if video in self.videos]})

    def start_upload(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        if request.query.get("uploadType") != "resumable":
            return google_error(400, "Media type not supported", "badRequest", "global")
        if self.quota_exceeded:
            return google_error(403, 'The request cannot be completed because you have exceeded your <a '
                                     'href="/youtube/v3/getting-started#quota">quota</a>.', "quotaExceeded", "youtube.quota")
        if self.upload_limit:
            return google_error(400, "The user has exceeded the number of videos they may upload.",
                                "uploadLimitExceeded", "youtube.video")
        metadata = request.json()
        size = request.headers.get("x-upload-content-length", "")
        if not isinstance(metadata, dict) or not (metadata.get("snippet") or {}).get("title") or not size.isdigit():
            return google_error(400, "The request metadata specifies an invalid or empty video title.", "invalidTitle")
        upload_id = "fake-upload-" + secrets.token_hex(6)
        self.sessions[upload_id] = {"metadata": metadata, "size": int(size), "data": b"", "video": None,
                                    "type": request.headers.get("x-upload-content-type")}
        return answer(200, b"", {"Location": f"{self.url}/upload/youtube/v3/videos?uploadType=resumable&"
                                             f"part=snippet,status&upload_id={upload_id}"})

    def upload_chunk(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        session = self.sessions.get(request.query.get("upload_id"))
        if session is None:
            return answer(404, "Not Found", {"Content-Type": "text/plain"})
        received = len(session["data"])
        if session["video"]:
            return answer(200, self.videos[session["video"]]["resource"])
        content_range = request.headers.get("content-range", "")
        if content_range == f"bytes */{session['size']}":
            return self._incomplete(session)
        match = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", content_range)
        if not match or int(match[3]) != session["size"] or int(match[1]) != received \
                or int(match[2]) - int(match[1]) + 1 != len(request.body):
            return google_error(400, f"Invalid Content-Range {content_range!r}: the session holds {received} bytes",
                                "badContent", "global")
        last = int(match[2]) + 1 == session["size"]
        if not last and len(request.body) % self.granularity:
            return google_error(400, "Chunk sizes must be multiples of 256 KiB", "badContent", "global")
        if self.partial_next:
            session["data"] += request.body[:self.partial_next]
            self.partial_next = 0
            return google_error(503, "Backend Error", "backendError", "global")
        session["data"] += request.body
        if not last:
            return self._incomplete(session)
        video_id = "vid" + str(next(self.ids)).rjust(8, "0")
        resource = {"kind": "youtube#video", "id": video_id, **session["metadata"]}
        self.videos[video_id] = {"metadata": session["metadata"], "data": session["data"], "resource": resource,
                                 "thumbnail": None, "type": session["type"]}
        session["video"] = video_id
        self.published.append(video_id)
        return answer(200, resource)

    @staticmethod
    def _incomplete(session: dict):
        held = len(session["data"])
        return answer(308, b"", {"Range": f"bytes=0-{held - 1}"} if held else {})

    def set_thumbnail(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        video = self.videos.get(request.query.get("videoId"))
        if video is None:
            return google_error(404, "The video that you are trying to update cannot be found.", "videoNotFound")
        if len(request.body) > 2 * 2**20:
            return google_error(413, "The thumbnail image file you have provided is too large.", "mediaBodyTooLarge")
        if request.headers.get("content-type") not in ("image/png", "image/jpeg"):
            return google_error(400, "The thumbnail image type is not supported.", "invalidImage")
        video["thumbnail"] = request.body
        return answer(200, {"kind": "youtube#thumbnailSetResponse", "items": [{"default": {"url": "https://i.ytimg"
                                                                                                ".example/t.jpg"}}]})

    def comment_thread(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        snippet = (request.json() or {}).get("snippet") or {}
        text = ((snippet.get("topLevelComment") or {}).get("snippet") or {}).get("textOriginal")
        if snippet.get("videoId") not in self.videos:
            return google_error(404, "The video identified by the videoId parameter could not be found.", "videoNotFound")
        if not text:
            return google_error(400, "The comment's text is empty.", "commentTextRequired")
        comment_id = "Ugz" + secrets.token_hex(6)
        self.comments[comment_id] = {"video": snippet["videoId"], "parent": None, "text": text}
        return answer(200, {"kind": "youtube#commentThread", "id": comment_id,
                            "snippet": {"videoId": snippet["videoId"], "topLevelComment": {"id": comment_id}}})

    def delete_item(self, request: FakeRequest):
        """videos.delete / comments.delete: 204; an id it does not have: 404 videoNotFound / commentNotFound."""
        refused = self._unauthorized(request)
        if refused:
            return refused
        kind, item = request.match[1], request.query.get("id", "")
        store = self.videos if kind == "videos" else self.comments
        if store.pop(item, None) is None:
            reason = "videoNotFound" if kind == "videos" else "commentNotFound"
            return google_error(404, f"The {kind[:-1]} identified by the id parameter could not be found.", reason)
        self.deleted.append(item)
        return answer(204)

    def comment_reply(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        snippet = (request.json() or {}).get("snippet") or {}
        parent = self.comments.get(snippet.get("parentId"))
        if parent is None or parent["parent"] is not None:
            return google_error(404, "The comment identified by the parentId parameter could not be found.",
                                "parentCommentNotFound")
        comment_id = snippet["parentId"] + "." + secrets.token_hex(4)
        self.comments[comment_id] = {"video": parent["video"], "parent": snippet["parentId"],
                                     "text": snippet.get("textOriginal")}
        return answer(200, {"kind": "youtube#comment", "id": comment_id, "snippet": {"parentId": snippet["parentId"]}})
