"""A Lemmy instance's API v3 as Lemmy 0.19 serves it: login to a JWT, the site with my_user, posts,
comments and community search, errors as {"error": "<code>"}, and 429 when rate-limited."""
from __future__ import annotations

import itertools

from fakes import FakePlatform, FakeRequest, Reconnect, answer

USERNAME, PASSWORD = "alice", "correct horse battery"
COMMUNITIES = {2: ("rust", "Rust programming"), 5: ("python", "Python"), 9: ("rustaceans", "Rustaceans meetup")}


def lemmy_error(status: int, code: str) -> tuple:
    return answer(status, {"error": code})


class FakeLemmy(FakePlatform):
    post_settings = {"subreddit": [{"value": {"subreddit": "rust", "id": "2", "title": "Shipping rustiz"}}]}

    def __init__(self, two_factor: bool = False):
        super().__init__()
        self.two_factor = two_factor
        self.password = PASSWORD
        self.tokens: set = set()
        self.logins = 0
        self.ids = itertools.count(101)
        self.route("POST", r"/api/v3/user/login", self.login)
        self.route("GET", r"/api/v3/site", self.site)
        self.route("POST", r"/api/v3/post", self.create_post)
        self.route("POST", r"/api/v3/comment", self.create_comment)
        self.route("GET", r"/api/v3/search", self.search)
        self.deleted: list = []  # (issue 28: ("post" | "comment", id) deleted, in order)
        self.route("POST", r"/api/v3/(post|comment)/delete", self.delete_item)

    def account(self) -> tuple:
        """(name, profile) of the channel credentials() connect: what this fake's account says."""
        return "Alice A.", f"alice@{self.url.removeprefix('http://')}"

    def credentials(self, password: str = PASSWORD) -> dict:
        return {"service": self.url, "identifier": USERNAME, "password": password}

    def revoke_logins(self) -> None:
        """As when the user logs out everywhere or the instance rotates its JWT secret."""
        self.tokens.clear()

    def login(self, request: FakeRequest):
        self.logins += 1
        body = request.json()
        if body.get("username_or_email") not in (USERNAME, "alice@example.com") or body.get("password") != self.password:
            return lemmy_error(401, "incorrect_login")
        if self.two_factor and not body.get("totp_2fa_token"):
            return lemmy_error(400, "missing_totp_token")
        token = f"jwt-{self.logins}"
        self.tokens.add(token)
        return answer(200, {"jwt": token, "registration_created": False, "verify_email_sent": False})

    def _person(self, request: FakeRequest):
        """None when the request carries a live login, else Lemmy's answer to it."""
        auth = request.headers.get("authorization", "")
        return None if auth.removeprefix("Bearer ") in self.tokens else lemmy_error(400, "not_logged_in")

    def site(self, request: FakeRequest):
        refused = self._person(request)
        if refused:
            return refused
        person = {"id": 7, "name": USERNAME, "display_name": "Alice A.", "actor_id": f"{self.url}/u/{USERNAME}",
                  "avatar": f"{self.url}/pictrs/image/alice.png", "local": True}
        return answer(200, {"site_view": {"site": {"name": "Fake Lemmy"}}, "version": "0.19.5",
                            "my_user": {"local_user_view": {"person": person, "local_user": {"id": 3}}}})

    def create_post(self, request: FakeRequest):
        refused = self._person(request)
        if refused:
            return refused
        body = request.json()
        if body.get("community_id") not in COMMUNITIES:
            return lemmy_error(404, "couldnt_find_community")
        if not 0 < len(body.get("name", "").strip()) <= 200:
            return lemmy_error(400, "invalid_post_title")
        post = {"id": next(self.ids), "name": body["name"], "body": body.get("body"), "url": body.get("url"),
                "thumbnail_url": body.get("custom_thumbnail"), "community_id": body["community_id"],
                "nsfw": body.get("nsfw"), "ap_id": ""}
        self.published.append({"kind": "post", **post})
        return answer(200, {"post_view": {"post": post, "community": {"id": body["community_id"]}}})

    def create_comment(self, request: FakeRequest):
        refused = self._person(request)
        if refused:
            return refused
        body = request.json()
        posts = {item["id"] for item in self.published if item["kind"] == "post"}
        if body.get("post_id") not in posts:
            return lemmy_error(404, "couldnt_find_post")
        comment = {"id": next(self.ids), "content": body["content"], "post_id": body["post_id"],
                   "parent_id": body.get("parent_id")}
        self.published.append({"kind": "comment", **comment})
        return answer(200, {"comment_view": {"comment": comment, "post": {"id": body["post_id"]}}})

    def delete_item(self, request: FakeRequest):
        """POST /post/delete {"post_id", "deleted": true} (or /comment/delete): the view, marked deleted; an id it
        does not have: 404 couldnt_find_post / couldnt_find_comment."""
        refused = self._person(request)
        if refused:
            return refused
        kind, body = request.match[1], request.json()
        item = next((item for item in self.published if item["kind"] == kind and item["id"] == body.get(f"{kind}_id")
                     and not item.get("deleted")), None)
        if item is None or body.get("deleted") is not True:
            return lemmy_error(404, f"couldnt_find_{kind}")
        item["deleted"] = True
        self.deleted.append((kind, item["id"]))
        return answer(200, {f"{kind}_view": {kind: {"id": item["id"], "deleted": True}}})

    def search(self, request: FakeRequest):
        if request.query.get("type_") != "Communities":
            return answer(200, {"type_": request.query.get("type_"), "communities": []})
        word = request.query.get("q", "").lower()
        found = [{"community": {"id": id_, "name": name, "title": title, "actor_id": f"{self.url}/c/{name}"},
                  "subscribed": "NotSubscribed", "counts": {"subscribers": 10}}
                 for id_, (name, title) in COMMUNITIES.items() if word in name]
        return answer(200, {"type_": "Communities", "comments": [], "posts": [], "communities": found, "users": []})


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeLemmy


def credentials_at(url: str) -> dict:
    """Credentials that aim a channel at `url`."""
    return {"service": url, "identifier": "alice", "password": "password"}


def _renew(fake, extras):
    fake.password = "a new horse"
    fake.revoke_logins()
    return fake.credentials(password="a new horse")


RECONNECT = Reconnect(_renew, lambda fake: fake.credentials(password="wrong password"), "incorrect_login",
                      lambda fake, extras: extras(FakeLemmy()).credentials())
