"""A stand-in for Moltbook's agent API (/api/v1): Bearer API keys, agents/me, posts to a submolt, comments
(parent_id for a reply to a comment), DELETE of a post, 429 with Retry-After and the X-RateLimit-* headers,
a post held behind a verification challenge, and its error bodies ({"success": false, "error", "hint"})."""
from __future__ import annotations

import itertools

from fakes import FakePlatform, FakeRequest, Reconnect, answer

UNAUTHORIZED = {"success": False, "error": "Invalid API key", "hint": "Check your Authorization header"}
POST_COOLDOWN = {"success": False, "error": "You can only post once every 30 minutes", "retry_after_minutes": 1,
                 "hint": "Wait before posting again"}


class FakeMoltbook(FakePlatform):
    rate_limit = 100

    post_settings = {"submolt": "general"}

    def __init__(self, api_key: str = "moltbook_sk_one"):
        super().__init__()
        self.api_key = api_key
        self.agent = {"id": "a1b2", "name": "rustiz_bot", "display_name": "Rustiz Bot", "karma": 12}
        self.submolts = {"general", "builders"}
        self.hold_for_verification = False
        self.posts: dict = {}
        self.ids = itertools.count(1)
        self.env = {"RUSTIZ_MOLTBOOK_API_URL": self.url}
        self.route("GET", "/api/v1/agents/me", lambda request: self.authorized(request) or answer(
            200, {"success": True, "agent": self.agent}))
        self.route("POST", "/api/v1/posts", self.create_post)
        self.route("POST", r"/api/v1/posts/([^/]+)/comments", self.create_comment)
        self.route("DELETE", r"/api/v1/posts/([^/]+)", self.delete_post)

    def account(self) -> tuple:
        return "Rustiz Bot", "rustiz_bot"

    def credentials(self) -> dict:
        return {"apiKey": self.api_key}

    def authorized(self, request: FakeRequest):
        if request.headers.get("authorization") == f"Bearer {self.api_key}":
            return None
        return answer(401, UNAUTHORIZED)

    def create_post(self, request: FakeRequest):
        refused = self.authorized(request)
        if refused:
            return refused
        body = request.json()
        if body.get("submolt") not in self.submolts:
            return answer(404, {"success": False, "error": "Submolt not found", "hint": "Check the submolt's name"})
        if not body.get("title"):
            return answer(400, {"success": False, "error": "title is required"})
        if self.hold_for_verification:
            return answer(200, {"success": True, "data": {"verification_code": "vc_abc123",
                                                          "challenge_text": "A] LoOoObSsStEr^ SwIiImS...",
                                                          "expires_at": "2026-12-06T18:05:00Z"}})
        post_id = f"p{next(self.ids)}"
        self.posts[post_id] = {**body, "id": post_id, "comments": []}
        self.published.append(self.posts[post_id])
        return answer(201, {"success": True, "post": {"id": post_id, "title": body["title"],
                                                      "submolt": {"name": body["submolt"]}}})

    def create_comment(self, request: FakeRequest):
        refused = self.authorized(request)
        if refused:
            return refused
        post = self.posts.get(request.match[1])
        if post is None:
            return answer(404, {"success": False, "error": "Post not found"})
        body = request.json()
        comment_id = f"c{next(self.ids)}"
        post["comments"].append({**body, "id": comment_id})
        return answer(201, {"success": True, "comment": {"id": comment_id, "content": body.get("content")}})

    def delete_post(self, request: FakeRequest):
        refused = self.authorized(request)
        if refused:
            return refused
        if self.posts.pop(request.match[1], None) is None:
            return answer(404, {"success": False, "error": "Post not found"})
        return answer(200, {"success": True, "message": "Post deleted"})


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeMoltbook


def credentials_at(url: str) -> dict:
    """The API's address is the operator's (RUSTIZ_MOLTBOOK_API_URL): credentials cannot aim elsewhere."""
    return {"apiKey": "moltbook_sk_x"}


def _renew(fake, extras):
    fake.api_key = "moltbook_sk_two"
    return fake.credentials()


def _other_account(fake, extras):
    fake.api_key, fake.agent = "moltbook_sk_other", {**fake.agent, "name": "other_bot", "display_name": "Other"}
    return fake.credentials()


RECONNECT = Reconnect(_renew, lambda fake: {"apiKey": "moltbook_sk_revoked"}, "Invalid API key", _other_account)
