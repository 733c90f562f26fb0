"""Whop as rustiz uses it: the consent page (api.whop.com/oauth/authorize, PKCE S256 and a nonce), the token
endpoint (/oauth/token, JSON with the client id and no secret; authorization_code with the verifier, and
refresh_token, rotated; refusals in OAuth's {"error", "error_description"}), OpenID Connect's /oauth/userinfo,
and the REST API v1: /companies, /forums?company_id=, /files (a record with a signed upload URL and its
headers, the PUT of the bytes, the file's upload_status from "pending" to "ready"), and /forum_posts (posts and
comments by parent_id), refusing with Whop's {"error": {"type", "message"}}."""
from __future__ import annotations

import base64
import hashlib
import itertools
import secrets

from fakes import FakePlatform, FakeRequest, answer, consent_page


def oauth_error(status: int, error: str, description: str):
    return answer(status, {"error": error, "error_description": description})


def whop_error(status: int, kind: str, message: str):
    return answer(status, {"error": {"type": kind, "message": message}})


class FakeWhop(FakePlatform):
    def __init__(self):
        super().__init__()
        self.client_id = "app_fakeWhopClient01"
        self.codes: dict = {}  # code -> (redirect_uri, challenge)
        self.access_tokens: set = set()
        self.refresh_tokens: set = set()
        self.user = {"sub": "user_AdaBakes001", "name": "Ada", "preferred_username": "adabakes",
                     "picture": "https://assets.example/ada.png", "email": "ada@example.com"}
        self.companies = [{"id": "biz_Bakery01", "title": "Ada's Bakery"}]
        self.forums = {"biz_Bakery01": [{"id": "forum_01", "experience": {"id": "exp_Recipes01", "name": "Recipes"}}]}
        self.files: dict = {}  # file id -> {"name", "status", "bytes", "headers"}
        self.ready_after = 1  # status reads that answer "pending" once the bytes are in
        self.processing_fails = False  # files end "failed" (Whop could not process them)
        self.posts: dict = {}
        self.ids = itertools.count(1)
        self.route("GET", "/oauth/authorize", self.consent_page)
        self.route("POST", "/oauth/token", self.token)
        self.route("GET", "/oauth/userinfo", self.userinfo)
        self.route("GET", "/api/v1/companies", self.list_companies)
        self.route("GET", "/api/v1/forums", self.list_forums)
        self.route("POST", "/api/v1/files", self.create_file)
        self.route("PUT", r"/storage/(file_\w+)", self.upload)
        self.route("GET", r"/api/v1/files/(file_\w+)", self.file_status)
        self.route("POST", "/api/v1/forum_posts", self.forum_post)

    @property
    def env(self) -> dict:
        return {"RUSTIZ_WHOP_AUTH_URL": self.url, "RUSTIZ_WHOP_API_URL": self.url}

    def app_env(self) -> dict:
        return {**self.env, "WHOP_CLIENT_ID": self.client_id}

    # --- OAuth ---------------------------------------------------------------------------------------

    def consent_page(self, request: FakeRequest):
        query = request.query
        if query.get("client_id") != self.client_id or query.get("code_challenge_method") != "S256" \
                or not query.get("code_challenge") or not query.get("nonce") or "openid" not in query.get("scope", ""):
            return oauth_error(400, "invalid_request", "client_id, PKCE, nonce or scope is missing")
        code = "code_" + secrets.token_urlsafe(12)
        self.codes[code] = (query.get("redirect_uri"), query["code_challenge"])
        state = query.get("state", "")
        return consent_page(f"Allow {query['scope']}?", query["redirect_uri"], {"code": code, "state": state},
                            {"error": "access_denied", "error_description": "The user denied access", "state": state})

    def token(self, request: FakeRequest):
        body = request.json() or {}
        if body.get("client_id") != self.client_id:
            return oauth_error(401, "invalid_client", "Unknown client")
        if body.get("grant_type") == "authorization_code":
            redirect_uri, challenge = self.codes.pop(body.get("code"), (None, None))
            digest = base64.urlsafe_b64encode(hashlib.sha256(str(body.get("code_verifier", "")).encode()).digest()
                                              ).rstrip(b"=").decode()
            if redirect_uri is None or redirect_uri != body.get("redirect_uri") or digest != challenge:
                return oauth_error(400, "invalid_grant", "The authorization code is invalid or expired")
        elif body.get("grant_type") == "refresh_token":
            if body.get("refresh_token") not in self.refresh_tokens:
                return oauth_error(400, "invalid_grant", "The refresh token is invalid")
            self.refresh_tokens.discard(body["refresh_token"])
        else:
            return oauth_error(400, "unsupported_grant_type", "unsupported")
        access, refresh = "at_" + secrets.token_urlsafe(20), "rt_" + secrets.token_urlsafe(20)
        self.access_tokens.add(access)
        self.refresh_tokens.add(refresh)
        return answer(200, {"access_token": access, "refresh_token": refresh, "token_type": "Bearer",
                            "expires_in": 3600, "id_token": "header.payload.signature"})

    def _refused(self, request: FakeRequest):
        authorization = request.headers.get("authorization", "")
        if not authorization.startswith("Bearer ") or authorization[7:] not in self.access_tokens:
            return whop_error(401, "unauthorized", "The access token is invalid or expired")
        return None

    def userinfo(self, request: FakeRequest):
        return self._refused(request) or answer(200, dict(self.user))

    def list_companies(self, request: FakeRequest):
        return self._refused(request) or answer(200, {"data": self.companies, "page_info": {"has_next_page": False}})

    def list_forums(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return refused
        return answer(200, {"data": self.forums.get(request.query.get("company_id"), []),
                            "page_info": {"has_next_page": False}})

    # --- files ---------------------------------------------------------------------------------------

    def create_file(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return refused
        name = (request.json() or {}).get("filename")
        if not isinstance(name, str) or not name:
            return whop_error(400, "invalid_request", "filename is required")
        file_id = f"file_{next(self.ids)}"
        self.files[file_id] = {"name": name, "status": "pending", "bytes": None, "polls": self.ready_after}
        return answer(200, {"id": file_id, "filename": name, "upload_status": "pending",
                            "upload_url": f"{self.url}/storage/{file_id}?X-Amz-Signature={secrets.token_hex(8)}",
                            "upload_headers": {"x-amz-acl": "private"}})

    def upload(self, request: FakeRequest):
        entry = self.files.get(request.match[1])
        if entry is None or "X-Amz-Signature" not in request.query or request.headers.get("x-amz-acl") != "private":
            return answer(403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>", {"Content-Type": "application/xml"})
        entry.update(bytes=request.body, content_type=request.headers.get("content-type"))
        return answer(200, b"")

    def file_status(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return refused
        entry = self.files.get(request.match[1])
        if entry is None:
            return whop_error(404, "not_found", "File not found")
        if entry["bytes"] is not None and entry["status"] == "pending":
            if entry["polls"] > 0:
                entry["polls"] -= 1
            else:
                entry["status"] = "failed" if self.processing_fails else "ready"
        return answer(200, {"id": request.match[1], "upload_status": entry["status"]})

    # --- forum posts ---------------------------------------------------------------------------------

    def forum_post(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return refused
        body = request.json() or {}
        experiences = {forum["experience"]["id"] for forums in self.forums.values() for forum in forums}
        if body.get("experience_id") not in experiences:
            return whop_error(404, "not_found", "Experience not found")
        if body.get("parent_id") is not None and body["parent_id"] not in self.posts:
            return whop_error(404, "not_found", "Parent post not found")
        for attachment in body.get("attachments") or []:
            entry = self.files.get(attachment.get("id"))
            if entry is None or entry["status"] != "ready":
                return whop_error(400, "invalid_request", "Attachment is not ready")
        post_id = f"post_{next(self.ids)}"
        self.posts[post_id] = body
        self.published.append({"id": post_id, **body})
        return answer(200, {"id": post_id, "title": body.get("title"), "content": body.get("content"),
                            "parent_id": body.get("parent_id"), "is_pinned": False, "view_count": 0})
