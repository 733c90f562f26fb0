"""A stand-in for Medium's API (v1): Bearer integration tokens, /v1/me, /v1/users/{id}/publications, stories
created under a user (public) or a publication (draft), and its error bodies
({"errors": [{"message", "code"}]})."""
from __future__ import annotations

from fakes import FakePlatform, FakeRequest, Reconnect, answer

TOKEN_INVALID = {"errors": [{"message": "Token was invalid.", "code": 6003}]}


class FakeMedium(FakePlatform):
    post_settings = {"title": "Shipping rustiz", "subtitle": "One file"}

    def __init__(self, token: str = "medium-token-1"):
        super().__init__()
        self.token = token
        self.user = {"id": "5303d74c64f66366f00cb9b2a94f3251bf5", "username": "ada", "name": "Ada Lovelace",
                     "url": "https://medium.com/@ada", "imageUrl": "https://cdn-images.medium.com/ada.png"}
        self.publications = [{"id": "b969ac62a46b", "name": "About Medium", "description": "What is this?",
                              "url": "https://medium.com/about", "imageUrl": "https://cdn-images.medium.com/pub.png"}]
        self.env = {"RUSTIZ_MEDIUM_API_URL": self.url}
        self.route("GET", "/v1/me", lambda request: self.authorized(request) or answer(200, {"data": self.user}))
        self.route("GET", r"/v1/users/([^/]+)/publications", self.list_publications)
        self.route("POST", r"/v1/users/([^/]+)/posts", lambda request: self.create(request, None))
        self.route("POST", r"/v1/publications/([^/]+)/posts", lambda request: self.create(request, request.match[1]))

    def account(self) -> tuple:
        return "Ada Lovelace", "ada"

    def credentials(self) -> dict:
        return {"apiKey": self.token}

    def authorized(self, request: FakeRequest):
        if request.headers.get("authorization") == f"Bearer {self.token}":
            return None
        return answer(401, TOKEN_INVALID)

    def list_publications(self, request: FakeRequest):
        refused = self.authorized(request)
        if refused or request.match[1] != self.user["id"]:
            return refused or answer(403, {"errors": [{"message": "You cannot list another user's publications.",
                                                       "code": 6026}]})
        return answer(200, {"data": self.publications})

    def create(self, request: FakeRequest, publication):
        refused = self.authorized(request)
        if refused:
            return refused
        story = request.json()
        if publication is None and request.match[1] != self.user["id"]:
            return answer(403, {"errors": [{"message": "You cannot post on behalf of another user.", "code": 6027}]})
        if publication is not None and publication not in {item["id"] for item in self.publications}:
            return answer(404, {"errors": [{"message": "Publication not found.", "code": 6029}]})
        if not story.get("title") or story.get("contentFormat") not in ("html", "markdown") or not story.get("content"):
            return answer(400, {"errors": [{"message": "title, contentFormat and content are required.", "code": 2004}]})
        self.published.append({**story, "publication": publication})
        number = len(self.published)
        return answer(201, {"data": {"id": f"e6f36a{number}", "title": story["title"], "authorId": self.user["id"],
                                     "url": f"https://medium.com/@ada/story-{number}",
                                     "publishStatus": story.get("publishStatus", "public"),
                                     "tags": story.get("tags", [])[:3], "publishedAt": 1442286338435}})


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeMedium


def credentials_at(url: str) -> dict:
    """The API's address is the operator's (RUSTIZ_MEDIUM_API_URL): credentials cannot aim elsewhere."""
    return {"apiKey": "token"}


def _renew(fake, extras):
    fake.token = "medium-token-2"
    return fake.credentials()


def _other_account(fake, extras):
    fake.token, fake.user = "medium-token-other", {**fake.user, "id": "1f86bb8d0a6a", "username": "grace",
                                                   "name": "Grace"}
    return fake.credentials()


RECONNECT = Reconnect(_renew, lambda fake: {"apiKey": "revoked-token"}, "Token was invalid", _other_account)
