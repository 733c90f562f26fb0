"""A stand-in for Dev.to's (Forem's) API: the api-key header, users/me, articles, tags, organizations,
and its error bodies ({"error": ..., "status": ...})."""
from __future__ import annotations

import re

from fakes import FakePlatform, FakeRequest, Reconnect, answer


class FakeDevto(FakePlatform):
    post_settings = {"title": "Shipping rustiz", "tags": [{"value": 1, "label": "python"}]}

    def __init__(self, api_key: str = "devto-key-1"):
        super().__init__()
        self.api_key = api_key
        self.user = {"type_of": "user", "id": 1234, "username": "ada", "name": "Ada Lovelace",
                     "profile_image": "https://media.dev.to/ada.png"}  # whose the key is
        self.env = {"RUSTIZ_DEVTO_API_URL": self.url}
        self.route("GET", "/api/users/me", self.me)
        self.route("POST", "/api/articles", self.create_article)
        self.route("GET", "/api/tags", lambda request: self.authorized(request) or answer(200, [
            {"id": 6, "name": "javascript", "bg_color_hex": "#f7df1e", "text_color_hex": "#000000"},
            {"id": 8, "name": "python", "bg_color_hex": "#1e38bb", "text_color_hex": "#ffdf5b"}]))
        self.route("GET", "/api/articles/me/all", lambda request: self.authorized(request) or answer(200, [
            {"id": 1, "title": "Old", "organization": {"name": "The Org", "username": "theorg", "slug": "theorg"}},
            {"id": 2, "title": "Mine"},
            {"id": 3, "title": "Again", "organization": {"name": "The Org", "username": "theorg", "slug": "theorg"}}]))
        self.route("GET", "/api/organizations/(?P<username>[^/]+)", lambda request: self.authorized(request) or answer(
            200, {"type_of": "organization", "id": 4242, "username": request.match["username"], "name": "The Org"}))

    def account(self) -> tuple:
        """(name, profile) of the channel credentials() connect: what this fake's account says."""
        return "Ada Lovelace", "ada"

    def credentials(self) -> dict:
        return {"apiKey": self.api_key}

    def authorized(self, request: FakeRequest):
        """None when the api-key header is right, else Dev.to's 401."""
        if request.headers.get("api-key") == self.api_key:
            return None
        return answer(401, {"error": "unauthorized", "status": 401})

    def me(self, request: FakeRequest):
        return self.authorized(request) or answer(200, self.user)

    def create_article(self, request: FakeRequest):
        refused = self.authorized(request)
        if refused:
            return refused
        article = request.json()["article"]
        if not article.get("title"):
            return answer(422, {"error": "Title can't be blank", "status": 422})
        for tag in article.get("tags") or []:
            if not re.fullmatch(r"[a-z0-9]+", tag):
                return answer(422, {"error": f'Tag "{tag}" contains non-alphanumeric or prohibited unicode '
                                             "characters", "status": 422})
        self.published.append(article)
        number = len(self.published)
        return answer(201, {"type_of": "article", "id": 9000 + number, "title": article["title"],
                            "url": f"https://dev.to/ada/article-{number}", "published": True})


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeDevto


def credentials_at(url: str) -> dict:
    """Credentials of some account: they cannot aim elsewhere, the API's address is the operator's
    (RUSTIZ_DEVTO_API_URL)."""
    return {"apiKey": "key"}


def _renew(fake, extras):
    fake.api_key = "devto-key-2"
    return fake.credentials()


def _other_account(fake, extras):
    fake.api_key, fake.user = "devto-key-other", {**fake.user, "id": 5678, "username": "grace", "name": "Grace"}
    return fake.credentials()


RECONNECT = Reconnect(_renew, lambda fake: {"apiKey": "revoked-key"}, "unauthorized", _other_account)
