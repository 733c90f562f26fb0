"""Twitch as rustiz uses it: the consent page (id.twitch.tv/oauth2/authorize, scopes space-separated), the token
endpoint (/oauth2/token, client_id and client_secret in the form; authorization_code and refresh_token grants,
its refusals as {"status", "message"}), and Helix (api.twitch.tv/helix): /users, /chat/messages (is_sent and
drop_reason, replies by reply_parent_message_id), /chat/announcements (204) and the deletion of a chat message
(DELETE /moderation/chat: 204, 404 for one not there) and /channels/followers (the `total`; the list itself
only with moderator:read:followers, which rustiz does not ask), each checking the Bearer token
and the Client-Id, answering {"error", "status", "message"} when refused, with Twitch's Ratelimit-* headers."""
from __future__ import annotations

import secrets
import time
import uuid

from fakes import FakePlatform, FakeRequest, answer, consent_page

SCOPES = "user:write:chat user:read:chat moderator:manage:announcements moderator:manage:chat_messages"
COLORS = ("primary", "blue", "green", "orange", "purple")


def helix_error(status: int, error: str, message: str):
    return answer(status, {"error": error, "status": status, "message": message})


class FakeTwitch(FakePlatform):
    def __init__(self):
        super().__init__()
        self.client_id, self.client_secret = "twitchclientid0001", "twitch-client-secret"
        self.codes: dict = {}
        self.access_tokens: set = set()
        self.refresh_tokens: set = set()
        self.user = {"id": "141981764", "login": "adabakes", "display_name": "AdaBakes", "type": "",
                     "broadcaster_type": "affiliate", "profile_image_url": "https://static.example/ada.png"}
        self.drop_next = None  # a drop_reason for the next chat message (AutoMod held it)
        self.remaining = 800  # Ratelimit-Remaining of the next answers
        self.route("GET", "/oauth2/authorize", self.consent_page)
        self.route("POST", "/oauth2/token", self.token)
        self.route("GET", "/helix/users", self.users)
        self.route("POST", "/helix/chat/messages", self.chat_message)
        self.route("POST", "/helix/chat/announcements", self.announcement)
        self.route("DELETE", "/helix/moderation/chat", self.delete_message)
        self.route("GET", "/helix/channels/followers", self.followers)
        self.follower_count = 1523

    @property
    def env(self) -> dict:
        return {"RUSTIZ_TWITCH_AUTH_URL": self.url, "RUSTIZ_TWITCH_API_URL": self.url}

    def app_env(self) -> dict:
        return {**self.env, "TWITCH_CLIENT_ID": self.client_id, "TWITCH_CLIENT_SECRET": self.client_secret}

    def issue_access_token(self) -> str:
        token = secrets.token_hex(15)
        self.access_tokens.add(token)
        return token

    def consent_page(self, request: FakeRequest):
        query = request.query
        if query.get("client_id") != self.client_id or query.get("response_type") != "code" \
                or not query.get("redirect_uri"):
            return answer(400, {"status": 400, "message": "invalid client"})
        code = secrets.token_hex(15)
        self.codes[code] = query["redirect_uri"]
        state = query.get("state", "")
        return consent_page(f"Allow {query.get('scope')}?", query["redirect_uri"],
                            {"code": code, "scope": query.get("scope", ""), "state": state},
                            {"error": "access_denied", "error_description": "The user denied you access",
                             "state": state}, allow_label="Authorize")

    def token(self, request: FakeRequest):
        form = request.form()
        if form.get("client_id") != self.client_id:
            return answer(400, {"status": 400, "message": "invalid client"})
        if form.get("client_secret") != self.client_secret:
            return answer(403, {"status": 403, "message": "invalid client secret"})
        if form.get("grant_type") == "authorization_code":
            if self.codes.pop(form.get("code"), None) != form.get("redirect_uri"):
                return answer(400, {"status": 400, "message": "Invalid authorization code"})
        elif form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return answer(400, {"status": 400, "message": "Invalid refresh token"})
            self.refresh_tokens.discard(form["refresh_token"])
        else:
            return answer(400, {"status": 400, "message": "missing grant_type"})
        refresh_token = secrets.token_hex(25)
        self.refresh_tokens.add(refresh_token)
        return answer(200, {"access_token": self.issue_access_token(), "expires_in": 14124,
                            "refresh_token": refresh_token, "scope": SCOPES.split(), "token_type": "bearer"})

    def _refused(self, request: FakeRequest):
        authorization = request.headers.get("authorization", "")
        if request.headers.get("client-id") != self.client_id:
            return helix_error(401, "Unauthorized", "Client ID and OAuth token do not match")
        if not authorization.startswith("Bearer ") or authorization[7:] not in self.access_tokens:
            return helix_error(401, "Unauthorized", "Invalid OAuth token")
        return None

    def _limited(self, reply):
        status, body, headers = reply
        self.remaining = max(0, self.remaining - 1)
        return status, body, {"Ratelimit-Limit": "800", "Ratelimit-Remaining": str(self.remaining),
                              "Ratelimit-Reset": str(int(time.time()) + 60), **headers}

    def users(self, request: FakeRequest):
        return self._limited(self._refused(request) or answer(200, {"data": [dict(self.user)]}))

    def chat_message(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return self._limited(refused)
        body = request.json() or {}
        if body.get("broadcaster_id") != self.user["id"] or body.get("sender_id") != self.user["id"]:
            return self._limited(helix_error(403, "Forbidden", "The sender must be the token's user"))
        if not isinstance(body.get("message"), str) or not body["message"] or len(body["message"]) > 500:
            return self._limited(helix_error(400, "Bad Request", "The message field is required (up to 500)"))
        if self.drop_next:
            dropped, self.drop_next = self.drop_next, None
            return self._limited(answer(200, {"data": [{"message_id": "", "is_sent": False, "drop_reason": dropped}]}))
        message_id = str(uuid.uuid4())
        self.published.append({"kind": "message", "id": message_id, **body})
        return self._limited(answer(200, {"data": [{"message_id": message_id, "is_sent": True}]}))

    def announcement(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return self._limited(refused)
        body = request.json() or {}
        if request.query.get("broadcaster_id") != self.user["id"] or request.query.get("moderator_id") != self.user["id"]:
            return self._limited(helix_error(403, "Forbidden", "The user is not a moderator of the broadcaster"))
        if not isinstance(body.get("message"), str) or not body["message"] or body.get("color", "primary") not in COLORS:
            return self._limited(helix_error(400, "Bad Request", "The message field is required"))
        self.published.append({"kind": "announcement", **body})
        return self._limited(answer(204, b""))

    def delete_message(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return self._limited(refused)
        query = request.query
        if query.get("broadcaster_id") != self.user["id"] or query.get("moderator_id") != self.user["id"]:
            return self._limited(helix_error(403, "Forbidden", "The user is not a moderator of the broadcaster"))
        message = next((item for item in self.published if item.get("id") == query.get("message_id")), None)
        if message is None:
            return self._limited(helix_error(404, "Not Found", "The message was not found"))
        self.published.remove(message)
        return self._limited(answer(204, b""))

    def followers(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return self._limited(refused)
        if request.query.get("broadcaster_id") != self.user["id"]:
            return self._limited(helix_error(400, "Bad Request", "Missing required parameter \"broadcaster_id\""))
        return self._limited(answer(200, {"total": self.follower_count, "data": [], "pagination": {}}))
