"""Kick as rustiz uses it: the consent page (id.kick.com/oauth/authorize, PKCE S256 required), the token
endpoint (/oauth/token: client_id, client_secret and the code_verifier in the form; authorization_code and
refresh_token grants, refresh tokens rotated; refusals in OAuth's {"error", "error_description"}), and the
public API (api.kick.com/public/v1): /users (the token's user) and /chat (type "user", content up to 500,
broadcaster_user_id, reply_to_message_id) with DELETE /chat/<message id> (204, 404), and /channels (without a
slug: the token's own channel, with active_subscribers_count), answering {"data", "message"}, 401 {"message": "Unauthorized"}."""
from __future__ import annotations

import base64
import hashlib
import secrets
import uuid

from fakes import FakePlatform, FakeRequest, answer, consent_page

SCOPES = "chat:write user:read channel:read moderation:chat_message:manage"


def oauth_error(status: int, error: str, description: str):
    return answer(status, {"error": error, "error_description": description})


class FakeKick(FakePlatform):
    def __init__(self):
        super().__init__()
        self.client_id, self.client_secret = "01KICKCLIENT0000", "kick-client-secret"
        self.codes: dict = {}  # code -> (redirect_uri, code_challenge)
        self.access_tokens: set = set()
        self.refresh_tokens: set = set()
        self.user = {"user_id": 4377088, "name": "adabakes", "email": "ada@example.com",
                     "profile_picture": "https://files.example/ada.webp"}
        self.not_sent_next = False  # the next chat message is accepted but not sent (is_sent false)
        self.route("GET", "/oauth/authorize", self.consent_page)
        self.route("POST", "/oauth/token", self.token)
        self.route("GET", "/public/v1/users", self.users)
        self.route("POST", "/public/v1/chat", self.chat)
        self.route("DELETE", r"/public/v1/chat/([\w-]+)", self.delete_message)
        self.route("GET", "/public/v1/channels", self.channels)
        self.active_subscribers = 37

    @property
    def env(self) -> dict:
        return {"RUSTIZ_KICK_AUTH_URL": self.url, "RUSTIZ_KICK_API_URL": self.url}

    def app_env(self) -> dict:
        return {**self.env, "KICK_CLIENT_ID": self.client_id, "KICK_SECRET": self.client_secret}

    def consent_page(self, request: FakeRequest):
        query = request.query
        if query.get("client_id") != self.client_id or query.get("response_type") != "code" \
                or query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return oauth_error(400, "invalid_request", "PKCE with S256 is required")
        code = secrets.token_urlsafe(24)
        self.codes[code] = (query.get("redirect_uri"), query["code_challenge"])
        state = query.get("state", "")
        return consent_page(f"Allow {query.get('scope')}?", query["redirect_uri"], {"code": code, "state": state},
                            {"error": "access_denied", "error_description": "The user denied the request",
                             "state": state})

    def token(self, request: FakeRequest):
        form = request.form()
        if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
            return oauth_error(401, "invalid_client", "Client authentication failed")
        if form.get("grant_type") == "authorization_code":
            redirect_uri, challenge = self.codes.pop(form.get("code"), (None, None))
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if redirect_uri is None or redirect_uri != form.get("redirect_uri") or digest != challenge:
                return oauth_error(400, "invalid_grant", "The authorization code is invalid or the verifier does not match")
        elif form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return oauth_error(400, "invalid_grant", "The refresh token is invalid or expired")
            self.refresh_tokens.discard(form["refresh_token"])
        else:
            return oauth_error(400, "unsupported_grant_type", "unsupported grant type")
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self.access_tokens.add(access)
        self.refresh_tokens.add(refresh)
        return answer(200, {"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
                            "expires_in": 7200, "scope": SCOPES})

    def _refused(self, request: FakeRequest):
        authorization = request.headers.get("authorization", "")
        if not authorization.startswith("Bearer ") or authorization[7:] not in self.access_tokens:
            return answer(401, {"data": {}, "message": "Unauthorized"})
        return None

    def users(self, request: FakeRequest):
        return self._refused(request) or answer(200, {"data": [dict(self.user)], "message": "OK"})

    def chat(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return refused
        body = request.json() or {}
        content = body.get("content")
        if body.get("type") != "user" or body.get("broadcaster_user_id") != self.user["user_id"] \
                or not isinstance(content, str) or not content or len(content) > 500:
            return answer(400, {"data": {}, "message": "Invalid request: type, broadcaster_user_id or content"})
        if self.not_sent_next:
            self.not_sent_next = False
            return answer(200, {"data": {"is_sent": False, "message_id": ""}, "message": "OK"})
        message_id = str(uuid.uuid4())
        self.published.append({"id": message_id, **body})
        return answer(200, {"data": {"is_sent": True, "message_id": message_id}, "message": "OK"})

    def delete_message(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return refused
        message = next((item for item in self.published if item["id"] == request.match[1]), None)
        if message is None:
            return answer(404, {"data": {}, "message": "Message not found"})
        self.published.remove(message)
        return answer(204, b"")

    def channels(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return refused
        own = {"broadcaster_user_id": self.user["user_id"], "slug": self.user["name"], "stream_title": "",
               "channel_description": "", "active_subscribers_count": self.active_subscribers,
               "stream": {"is_live": False, "viewer_count": 0}}
        return answer(200, {"data": [own], "message": "OK"})
