"""X's API as rustiz uses it, OAuth 1.0a included: request token, the authenticate page, access token,
users/me, POST /2/tweets, the v2 chunked media upload (initialize, append, finalize, STATUS polling for
video) and media metadata. Every call's HMAC-SHA1 signature is checked (RFC 5849, computed here on its
own), answers carry X's x-rate-limit-* headers, and errors have X's shapes: v2 problems, "errors" lists,
and the OAuth endpoints' XML."""
from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import re
import secrets
import time
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from fakes import FakePlatform, FakeRequest, answer

UNAUTHORIZED = {"title": "Unauthorized", "type": "about:blank", "status": 401, "detail": "Unauthorized"}


def _enc(value: str) -> str:
    return quote(value, safe="-._~")


class FakeX(FakePlatform):
    rate_limit = 100
    rate_limit_names = ("x-rate-limit-limit", "x-rate-limit-remaining", "x-rate-limit-reset")

    def __init__(self, consumer_key: str = "x-app-key", consumer_secret: str = "x-app-secret",
                 verified: bool = False, max_length: int = 280, processing_polls: int = 0):
        super().__init__()
        self.consumer_key, self.consumer_secret = consumer_key, consumer_secret
        self.verified, self.max_length, self.processing_polls = verified, max_length, processing_polls
        self.approved_callbacks: list | None = None  # None: any callback is approved
        self.fail_processing = ""  # a reason: video processing fails with it
        self.request_tokens: dict = {}  # token -> {"secret", "callback", "verifier"}
        self.access_tokens: dict = {"x-user-token": "x-user-secret"}  # token -> secret
        self.user = {"id": "1400000000000000001", "name": "Ada Lovelace", "username": "ada"}
        self.media: dict = {}  # id -> {"type", "category", "total", "bytes", "alt", "polls_left", "state"}
        self.posts: dict = {}
        self.ids = itertools.count(1800000000000000001)
        self.route("POST", "/oauth/request_token", self.request_token)
        self.route("GET", "/oauth/authenticate", self.authenticate_page)
        self.route("GET", "/oauth/consent", self.consent)
        self.route("POST", "/oauth/access_token", self.access_token)
        self.route("GET", "/2/users/me", self.users_me)
        self.route("POST", "/2/tweets", self.create_post)
        self.route("GET", r"/2/tweets/(\d+)", self.get_post)
        self.route("POST", "/2/media/upload/initialize", self.media_initialize)
        self.route("POST", r"/2/media/upload/(\d+)/append", self.media_append)
        self.route("POST", r"/2/media/upload/(\d+)/finalize", self.media_finalize)
        self.route("GET", "/2/media/upload", self.media_status)
        self.route("POST", "/2/media/metadata", self.media_metadata)
        self.deleted: list = []  # (issue 28: DELETE /2/tweets/:id, the ids deleted in order)
        self.route("DELETE", r"/2/tweets/(\d+)", self.delete_post)

    def credentials(self) -> dict:
        return {"accessToken": "x-user-token", "accessSecret": "x-user-secret", "userId": self.user["id"],
                "screenName": self.user["username"]}

    def rate_limited(self, request: FakeRequest) -> bool:
        return request.path.startswith("/2/")  # (the API's answers; not OAuth 1.0a's)

    def rate_limit_reset(self) -> str:
        return str(int(time.time()) + 900)  # X sends the epoch second the window ends

    # --- OAuth 1.0a -----------------------------------------------------------------------------

    @staticmethod
    def _oauth_params(request: FakeRequest) -> dict:
        header = request.headers.get("authorization", "")
        if not header.startswith("OAuth "):
            return {}
        return {unquote(name): unquote(value) for name, value in re.findall(r'([\w-]+)="([^"]*)"', header)}

    def _signature_ok(self, request: FakeRequest, token_secret: str) -> bool:
        oauth = self._oauth_params(request)
        if oauth.get("oauth_consumer_key") != self.consumer_key or oauth.get("oauth_signature_method") != "HMAC-SHA1":
            return False
        if not oauth.get("oauth_nonce") or abs(int(oauth.get("oauth_timestamp") or 0) - time.time()) > 300:
            return False
        params = [(name, value) for name, value in oauth.items() if name != "oauth_signature"]
        params += list(request.query.items())
        if request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            params += parse_qsl(request.body.decode(), keep_blank_values=True)
        normalized = "&".join(f"{k}={v}" for k, v in sorted((_enc(k), _enc(v)) for k, v in params))
        url = f"http://127.0.0.1:{self.port}{request.path}"
        base = f"{request.method}&{_enc(url)}&{_enc(normalized)}"
        key = f"{_enc(self.consumer_secret)}&{_enc(token_secret)}".encode()
        expected = base64.b64encode(hmac.new(key, base.encode(), hashlib.sha1).digest()).decode()
        return hmac.compare_digest(expected, oauth.get("oauth_signature", ""))

    def _user_refused(self, request: FakeRequest):
        token = self._oauth_params(request).get("oauth_token", "")
        if token not in self.access_tokens or not self._signature_ok(request, self.access_tokens[token]):
            return answer(401, UNAUTHORIZED)
        return None

    def request_token(self, request: FakeRequest):
        if not self._signature_ok(request, ""):
            return answer(401, {"errors": [{"code": 32, "message": "Could not authenticate you."}]})
        callback = self._oauth_params(request).get("oauth_callback", "")
        if self.approved_callbacks is not None and callback not in self.approved_callbacks:
            return answer(403, '<?xml version="1.0" encoding="UTF-8"?><errors><error code="415">Callback URL not '
                          'approved for this client application. Approved callback URLs can be adjusted in your '
                          'application settings</error></errors>', {"Content-Type": "application/xml"})
        token, secret = "req-" + secrets.token_hex(8), secrets.token_hex(16)
        self.request_tokens[token] = {"secret": secret, "callback": callback, "verifier": secrets.token_hex(8)}
        return answer(200, urlencode({"oauth_token": token, "oauth_token_secret": secret,
                                      "oauth_callback_confirmed": "true"}), {"Content-Type": "text/html"})

    def authenticate_page(self, request: FakeRequest):
        token = request.query.get("oauth_token", "")
        if token not in self.request_tokens:
            return answer(401, "<p>This page is no longer valid.</p>", {"Content-Type": "text/html"})
        return answer(200, f'<html><body><p>Authorize app?</p><a id="allow" href="/oauth/consent?oauth_token={token}'
                           f'&decision=allow">Authorize app</a> <a id="deny" href="/oauth/consent?oauth_token='
                           f'{token}&decision=deny">Cancel</a></body></html>', {"Content-Type": "text/html"})

    def consent(self, request: FakeRequest):
        """X's answer to the user's choice: the callback with oauth_token and oauth_verifier, or denied=."""
        token = request.query.get("oauth_token", "")
        flow = self.request_tokens.get(token)
        if flow is None:
            return answer(401, "<p>This page is no longer valid.</p>", {"Content-Type": "text/html"})
        query = ({"oauth_token": token, "oauth_verifier": flow["verifier"]}
                 if request.query.get("decision") == "allow" else {"denied": token})
        separator = "&" if urlsplit(flow["callback"]).query else "?"
        return answer(302, b"", {"Location": flow["callback"] + separator + urlencode(query)})

    def access_token(self, request: FakeRequest):
        oauth = self._oauth_params(request)
        flow = self.request_tokens.get(oauth.get("oauth_token", ""))
        if flow is None or not self._signature_ok(request, flow["secret"]):
            return answer(401, "Invalid request token.", {"Content-Type": "text/plain"})
        if oauth.get("oauth_verifier") != flow["verifier"]:
            return answer(401, "Error processing your OAuth request: Invalid oauth_verifier parameter",
                          {"Content-Type": "text/plain"})
        del self.request_tokens[oauth["oauth_token"]]  # a request token is exchanged once
        token, secret = f"{self.user['id']}-{secrets.token_hex(8)}", secrets.token_hex(16)
        self.access_tokens[token] = secret
        return answer(200, urlencode({"oauth_token": token, "oauth_token_secret": secret,
                                      "user_id": self.user["id"], "screen_name": self.user["username"]}),
                      {"Content-Type": "text/html"})

    # --- the v2 API -------------------------------------------------------------------------------

    def users_me(self, request: FakeRequest):
        refused = self._user_refused(request)
        if refused:
            return refused
        fields = request.query.get("user.fields", "").split(",")
        user = dict(self.user)
        if "profile_image_url" in fields:
            user["profile_image_url"] = "https://pbs.twimg.com/profile_images/1/ada_normal.jpg"
        if "verified" in fields:
            user["verified"] = self.verified
        if "verified_type" in fields:
            user["verified_type"] = "blue" if self.verified else "none"
        if "public_metrics" in fields:
            user["public_metrics"] = {"followers_count": 2048, "following_count": 64, "tweet_count": len(self.posts),
                                      "listed_count": 3, "like_count": 99}
        return answer(200, {"data": user})

    def get_post(self, request: FakeRequest):
        refused = self._user_refused(request)
        post = self.posts.get(request.match[1])
        if refused or post is None:
            return refused or answer(200, {"errors": [{"value": request.match[1], "detail": "Could not find tweet",
                                                       "title": "Not Found Error", "type": "https://api.twitter.com/"
                                                       "2/problems/resource-not-found"}]})
        data = {"id": request.match[1], "text": post.get("text", "")}
        if "public_metrics" in request.query.get("tweet.fields", ""):
            data["public_metrics"] = {"retweet_count": 5, "reply_count": 1, "like_count": 30, "quote_count": 2,
                                      "bookmark_count": 4, "impression_count": 1234}
        return answer(200, {"data": data})

    def delete_post(self, request: FakeRequest):
        """X's answer: {"data": {"deleted": true}}; an id it does not have: 200 with a resource-not-found error."""
        refused = self._user_refused(request)
        if refused:
            return refused
        if self.posts.pop(request.match[1], None) is None:
            return answer(200, {"errors": [{"value": request.match[1], "detail": "Could not find tweet",
                                            "title": "Not Found Error", "type": "https://api.twitter.com/2/problems/"
                                            "resource-not-found"}]})
        self.deleted.append(request.match[1])
        return answer(200, {"data": {"deleted": True}})

    def create_post(self, request: FakeRequest):
        refused = self._user_refused(request)
        if refused:
            return refused
        body = request.json()
        text = body.get("text", "")
        media_ids = (body.get("media") or {}).get("media_ids") or []
        if "text" in body and not text:
            return self._invalid("text", "text must not be empty")
        if not text and not media_ids:
            return self._invalid("text", "One of text or media is required")
        if len(text) > self.max_length:
            return self._invalid("text", "Your Tweet text is too long.")
        if any(post["text"] == text and text for post in self.posts.values()):
            return answer(403, {"detail": "You are not allowed to create a Tweet with duplicate content.",
                                "type": "about:blank", "title": "Forbidden", "status": 403})
        for media_id in media_ids:
            media = self.media.get(media_id)
            if media is None or media["state"] != "succeeded":
                return self._invalid("media.media_ids", "Your media IDs are invalid.")
        if len(media_ids) > 4:
            return self._invalid("media.media_ids", "Your media IDs are invalid.")
        reply_to = (body.get("reply") or {}).get("in_reply_to_tweet_id")
        if reply_to is not None and reply_to not in self.posts:
            return self._invalid("reply.in_reply_to_tweet_id", "The post you are replying to does not exist.")
        post_id = str(next(self.ids))
        post = {"id": post_id, **body, "media_ids": media_ids, "in_reply_to": reply_to}
        self.posts[post_id] = post
        self.published.append(post)
        return answer(201, {"data": {"id": post_id, "text": text, "edit_history_tweet_ids": [post_id]}})

    @staticmethod
    def _invalid(parameter: str, message: str):
        return answer(400, {"errors": [{"parameters": {parameter: []}, "message": message}],
                            "title": "Invalid Request", "detail": "One or more parameters to your request was invalid.",
                            "type": "https://api.twitter.com/2/problems/invalid-request"})

    def media_initialize(self, request: FakeRequest):
        refused = self._user_refused(request)
        if refused:
            return refused
        body = request.json()
        if not isinstance(body.get("total_bytes"), int) or not body.get("media_type"):
            return self._invalid("total_bytes", "total_bytes and media_type are required")
        media_id = str(next(self.ids))
        self.media[media_id] = {"type": body["media_type"], "category": body.get("media_category"),
                                "total": body["total_bytes"], "segments": {}, "alt": None, "state": "initialized",
                                "polls_left": 0}
        return answer(200, {"data": {"id": media_id, "media_key": f"3_{media_id}", "expires_after_secs": 86399}})

    def media_append(self, request: FakeRequest):
        refused = self._user_refused(request)
        if refused:
            return refused
        media = self.media.get(request.match[1])
        if media is None:
            return self._invalid("id", "Media not found")
        parts = request.multipart()
        media["segments"][int(parts["segment_index"][1])] = parts["media"][1]
        return answer(200, {"data": {"expires_at": int(time.time()) + 86399}})

    def media_finalize(self, request: FakeRequest):
        refused = self._user_refused(request)
        if refused:
            return refused
        media_id = request.match[1]
        media = self.media.get(media_id)
        if media is None:
            return self._invalid("id", "Media not found")
        media["bytes"] = b"".join(media["segments"][index] for index in sorted(media["segments"]))
        if len(media["bytes"]) != media["total"]:
            return self._invalid("total_bytes", "File size mismatch")
        if media["category"] == "tweet_video":
            media.update(state="pending", polls_left=self.processing_polls)
            return answer(200, {"data": {"id": media_id, "size": media["total"], "expires_after_secs": 86399,
                                         "processing_info": {"state": "pending", "check_after_secs": 0}}})
        media["state"] = "succeeded"
        return answer(200, {"data": {"id": media_id, "size": media["total"], "expires_after_secs": 86399}})

    def media_status(self, request: FakeRequest):
        refused = self._user_refused(request)
        if refused:
            return refused
        media_id = request.query.get("media_id", "")
        media = self.media.get(media_id)
        if request.query.get("command") != "STATUS" or media is None:
            return self._invalid("media_id", "Media not found")
        if media["state"] == "pending" and media["polls_left"] > 0:
            media["polls_left"] -= 1
            info = {"state": "in_progress", "check_after_secs": 0, "progress_percent": 50}
        elif media["state"] == "pending" and self.fail_processing:
            media["state"] = "failed"
            info = {"state": "failed", "error": {"code": 1, "name": "InvalidMedia", "message": self.fail_processing}}
        else:
            media["state"] = "succeeded" if media["state"] == "pending" else media["state"]
            info = {"state": media["state"], "progress_percent": 100}
        return answer(200, {"data": {"id": media_id, "processing_info": info}})

    def media_metadata(self, request: FakeRequest):
        refused = self._user_refused(request)
        if refused:
            return refused
        body = request.json()
        media = self.media.get(body.get("id"))
        if media is None:
            return self._invalid("id", "Media not found")
        media["alt"] = body["metadata"]["alt_text"]["text"]
        return answer(200, {"data": {"id": body["id"], "associated_metadata": body["metadata"]}})
