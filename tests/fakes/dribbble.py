"""Dribbble (API v2) as rustiz uses it: the consent page (dribbble.com/oauth/authorize), the token endpoint
(POST /oauth/token with the app's id and secret in the form; tokens that never expire, no refresh token;
Doorkeeper's {"error", "error_description"} refusals), /v2/user with its teams, POST /v2/shots (multipart: image
exactly 400x300 or 800x600, title, description, team_id; 202 with a Location), DELETE /v2/shots/{id}, the
X-RateLimit-* headers and Dribbble's error shape {"message", "errors": [{"attribute", "message"}]}."""
from __future__ import annotations

import itertools
import secrets
import struct

from fakes import FakePlatform, FakeRequest, answer, consent_page

BAD_CREDENTIALS = {"message": "Bad credentials."}
SIZES = ((400, 300), (800, 600))


def png_size(data: bytes):
    return struct.unpack(">II", data[16:24]) if data.startswith(b"\x89PNG") and len(data) >= 24 else None


class FakeDribbble(FakePlatform):
    rate_limit = 60

    def __init__(self):
        super().__init__()
        self.client_id, self.client_secret = "dribbble-client-id", "dribbble-client-secret"
        self.codes: dict = {}  # code -> redirect_uri
        self.access_tokens: set = set()
        self.can_upload = True
        self.teams = [{"id": 4242, "name": "Rustiz Studio", "login": "rustiz-studio",
                       "html_url": "https://dribbble.com/rustiz-studio"}]
        self.shots: dict = {}
        self.ids = itertools.count(23000001)
        self.route("GET", "/oauth/authorize", self.consent)
        self.route("POST", "/oauth/token", self.token)
        self.route("GET", "/v2/user", self.user)
        self.route("POST", "/v2/shots", self.create_shot)
        self.route("DELETE", r"/v2/shots/(\d+)", self.delete_shot)

    @property
    def env(self) -> dict:
        return {"RUSTIZ_DRIBBBLE_AUTH_URL": self.url, "RUSTIZ_DRIBBBLE_API_URL": self.url}

    def credentials(self) -> dict:
        token = secrets.token_hex(32)
        self.access_tokens.add(token)
        return {"accessToken": token}

    def consent(self, request: FakeRequest):
        query = request.query
        if query.get("client_id") != self.client_id or not query.get("redirect_uri"):
            return answer(400, "<html><body>The client identifier provided is invalid.</body></html>",
                          {"Content-Type": "text/html"})
        code = secrets.token_hex(16)
        self.codes[code] = query["redirect_uri"]
        return consent_page(f"Authorize for {query.get('scope', '')}?", query["redirect_uri"],
                            {"code": code, "state": query.get("state", "")},
                            {"error": "access_denied", "error_description": "The resource owner denied the request.",
                             "state": query.get("state", "")}, allow_label="Authorize")

    def token(self, request: FakeRequest):
        form = request.form()
        if (form.get("client_id"), form.get("client_secret")) != (self.client_id, self.client_secret):
            return answer(401, {"error": "invalid_client", "error_description": "Client authentication failed."})
        if self.codes.pop(form.get("code"), None) != form.get("redirect_uri") or not form.get("redirect_uri"):
            return answer(400, {"error": "invalid_grant", "error_description": "The provided authorization grant is "
                                "invalid, expired, revoked, does not match the redirection URI used in the "
                                "authorization request, or was issued to another client."})
        token = self.credentials()["accessToken"]
        return answer(200, {"access_token": token, "token_type": "Bearer", "scope": "public upload",
                            "created_at": 1765000000})

    def _unauthorized(self, request: FakeRequest):
        authorization = request.headers.get("authorization", "")
        return None if authorization[7:] in self.access_tokens and authorization.startswith("Bearer ") \
            else answer(401, BAD_CREDENTIALS)

    def user(self, request: FakeRequest):
        return self._unauthorized(request) or answer(200, {
            "id": 1234, "name": "Ada Lovelace", "login": "ada", "html_url": "https://dribbble.com/ada",
            "avatar_url": f"{self.url}/avatars/ada.png", "pro": True, "teams": self.teams,
            "followers_count": 88, "shots_count": len(self.shots)})

    def create_shot(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        if not self.can_upload:
            return answer(403, {"message": "You are not allowed to upload shots."})
        parts = request.multipart()
        errors = []
        image = parts.get("image")
        if image is None:
            errors.append({"attribute": "image", "message": "is required"})
        elif png_size(image[1]) not in SIZES:
            errors.append({"attribute": "image", "message": "must be exactly 400x300 or 800x600"})
        title = parts.get("title", (None, b""))[1].decode()
        if not title:
            errors.append({"attribute": "title", "message": "can't be blank"})
        team = parts.get("team_id", (None, b""))[1].decode()
        if team and team not in {str(item["id"]) for item in self.teams}:
            errors.append({"attribute": "team_id", "message": "is not a team you belong to"})
        if errors:
            return answer(422, {"message": "Validation failed.", "errors": errors})
        shot_id = next(self.ids)
        self.shots[shot_id] = {"title": title, "description": parts.get("description", (None, b""))[1].decode(),
                               "team_id": team or None, "image": image[1]}
        self.published.append(self.shots[shot_id])
        return answer(202, b"", {"Location": f"{self.url}/v2/shots/{shot_id}"})

    def delete_shot(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        if self.shots.pop(int(request.match[1]), None) is None:
            return answer(404, {"message": "Not found."})
        return answer(204, b"")
