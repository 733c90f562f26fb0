"""A stand-in for Hashnode's GraphQL API (gql.hashnode.com): the Authorization token, the `me` query,
the publishPost mutation, a publication's posts with their tags, and GraphQL errors answered with
HTTP 200 ({"errors": [{"message", "extensions": {"code"}}], "data": null})."""
from __future__ import annotations

from fakes import FakePlatform, FakeRequest, Reconnect, answer

PUBLICATION_ID = "64a1b2c3d4e5f60718293a4b"
TAG_ID = "56744721958ef13879b94cad"


def graphql_error(message: str, code: str) -> tuple:
    return answer(200, {"errors": [{"message": message, "extensions": {"code": code}}], "data": None})


class FakeHashnode(FakePlatform):
    post_settings = {"title": "Shipping rustiz", "publication": PUBLICATION_ID,
                     "tags": [{"value": "python", "label": "Python"}]}

    def __init__(self, token: str = "hashnode-token-1"):
        super().__init__()
        self.token = token
        self.user = {"id": "u-77", "username": "grace", "name": "Grace Hopper"}  # whose the token is
        self.env = {"RUSTIZ_HASHNODE_API_URL": self.url}
        self.route("POST", "/", self.graphql)
        self.deleted: list = []  # (issue 28: removePost, the post ids removed in order)

    def account(self) -> tuple:
        """(name, profile) of the channel credentials() connect: what this fake's account says."""
        return "Grace Hopper", "grace"

    def credentials(self) -> dict:
        return {"apiKey": self.token}

    def graphql(self, request: FakeRequest):
        body = request.json()
        query = body.get("query", "")
        if request.headers.get("authorization") != self.token:
            return graphql_error("You must be authenticated.", "UNAUTHENTICATED")
        if "publishPost" in query:
            return self.publish(body["variables"]["input"])
        if "removePost" in query:  # (issue 28)
            return self.remove(body["variables"]["input"])
        if "publication(" in query:
            return answer(200, {"data": {"publication": {"id": body["variables"]["id"], "posts": {"edges": [
                {"node": {"id": "p1", "tags": [{"id": TAG_ID, "name": "JavaScript", "slug": "javascript"}]}},
                {"node": {"id": "p2", "tags": [{"id": TAG_ID, "name": "JavaScript", "slug": "javascript"},
                                               {"id": "5674470e958ef13879b94ca5", "name": "CSS", "slug": "css"}]}}]}}}})
        if "me" in query:
            return answer(200, {"data": {"me": {
                **self.user, "profilePicture": "https://cdn.hashnode.com/g.png",
                "publications": {"edges": [{"node": {"id": PUBLICATION_ID, "title": "Grace's blog",
                                                     "url": "https://grace.hashnode.dev"}}]}}}})
        return graphql_error("Cannot query this field", "GRAPHQL_VALIDATION_FAILED")

    def publish(self, article: dict):
        if article.get("publicationId") != PUBLICATION_ID:
            return graphql_error("Publication not found", "NOT_FOUND")
        self.published.append(article)
        number = len(self.published)
        return answer(200, {"data": {"publishPost": {"post": {
            "id": f"post-{number}", "url": f"https://grace.hashnode.dev/post-{number}"}}}})

    def remove(self, given: dict):
        """removePost: the post; one it does not have (or removed already): NOT_FOUND."""
        number = str(given.get("id", "")).removeprefix("post-")
        if given["id"] in self.deleted or not number.isdigit() or not 1 <= int(number) <= len(self.published):
            return graphql_error("Post not found", "NOT_FOUND")
        self.deleted.append(given["id"])
        return answer(200, {"data": {"removePost": {"post": {"id": given["id"]}}}})


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeHashnode


def credentials_at(url: str) -> dict:
    """Credentials of some account: they cannot aim elsewhere, the API's address is the operator's
    (RUSTIZ_HASHNODE_API_URL)."""
    return {"apiKey": "key"}


def _renew(fake, extras):
    fake.token = "hashnode-token-2"
    return fake.credentials()


def _other_account(fake, extras):
    fake.token, fake.user = "hashnode-token-other", {"id": "u-99", "username": "ada", "name": "Ada"}
    return fake.credentials()


RECONNECT = Reconnect(_renew, lambda fake: {"apiKey": "revoked-token"}, "You must be authenticated",
                      _other_account)
