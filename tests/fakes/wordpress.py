"""A stand-in for a WordPress site's REST API (/wp-json/wp/v2): Basic auth with an application password,
users/me with capabilities, the media library (raw body + Content-Disposition), posts and pages,
types, categories and tags, and WordPress's error bodies ({"code", "message", "data": {"status"}})."""
from __future__ import annotations

import base64
import re

from fakes import FakePlatform, FakeRequest, Reconnect, answer


def wordpress_error(status: int, code: str, message: str) -> tuple:
    return answer(status, {"code": code, "message": message, "data": {"status": status}})


class FakeWordPress(FakePlatform):
    post_settings = {"title": "Shipping rustiz", "type": "post"}

    def __init__(self, username: str = "editor", password: str = "abcd EFGH 1234 ijkl MNOP 6789",
                 can_publish: bool = True, pretty_permalinks: bool = True):
        super().__init__()
        self.username, self.password, self.can_publish = username, password, can_publish
        self.media: dict = {}  # id -> {"filename", "content_type", "bytes", "alt_text"}
        prefix = "/wp-json/wp/v2" if pretty_permalinks else "/rest/wp/v2"
        self.route("GET", prefix + "/users/me", self.me)
        self.route("POST", prefix + "/media", self.upload)
        self.route("POST", prefix + "/(?P<collection>posts|pages)", self.create)
        self.route("GET", prefix + "/types", lambda request: self.authorized(request) or answer(200, {
            "post": {"name": "Posts", "slug": "post", "rest_base": "posts"},
            "page": {"name": "Pages", "slug": "page", "rest_base": "pages"},
            "attachment": {"name": "Media", "slug": "attachment", "rest_base": "media"}}))
        self.route("GET", prefix + "/categories", lambda request: self.authorized(request) or answer(200, [
            {"id": 1, "name": "Uncategorized", "slug": "uncategorized"}, {"id": 7, "name": "News", "slug": "news"}]))
        self.route("GET", prefix + "/tags", lambda request: self.authorized(request) or answer(200, [
            {"id": 12, "name": "release", "slug": "release"}]))
        if not pretty_permalinks:  # no /wp-json/: ?rest_route=/wp/v2/... on the front page instead
            self.route("GET", "/", self.front_page)
            self.route("POST", "/", self.front_page)
        self.deleted: list = []  # (issue 28: posts moved to the trash, as (collection, id), in order)
        self.route("DELETE", prefix + r"/(?P<collection>posts|pages)/(?P<id>\d+)", self.trash)
        if not pretty_permalinks:
            self.route("DELETE", "/", self.front_page)

    def account(self) -> tuple:
        """(name, profile) of the channel credentials() connect: what this fake's account says."""
        return self.url.removeprefix("http://"), "editor"

    def credentials(self) -> dict:
        return {"domain": self.url, "username": self.username, "password": self.password}

    def front_page(self, request: FakeRequest):
        """Serve /?rest_route=/wp/v2/x as the /rest/wp/v2/x route, as a site without pretty permalinks does."""
        route = request.query.get("rest_route")
        if not route:
            return answer(200, "<html><body>A WordPress front page</body></html>", {"Content-Type": "text/html"})
        request.path = "/rest" + route
        for method, pattern, handler in self.routes:
            request.match = pattern.fullmatch(request.path)
            if method == request.method and request.match:
                return handler(request)
        return wordpress_error(404, "rest_no_route", "No route was found matching the URL and request method.")

    def authorized(self, request: FakeRequest):
        header = request.headers.get("authorization", "")
        if not header:
            return wordpress_error(401, "rest_not_logged_in", "You are not currently logged in.")
        user, _, password = base64.b64decode(header.removeprefix("Basic ")).decode().partition(":")
        if user != self.username:
            return wordpress_error(401, "invalid_username", "<strong>Error:</strong> The username <strong>"
                                   f"{user}</strong> is not registered on this site.")
        if password.replace(" ", "") != self.password.replace(" ", ""):
            return wordpress_error(401, "incorrect_password",
                                   "<strong>Error:</strong> The provided password is an invalid application password.")
        return None

    def me(self, request: FakeRequest):
        return self.authorized(request) or answer(200, {
            "id": 3, "name": "Edith Editor", "slug": self.username, "roles": ["editor" if self.can_publish else
                                                                            "contributor"],
            "capabilities": {"edit_posts": True, "publish_posts": self.can_publish},
            "avatar_urls": {"24": "https://gravatar.example/24.png", "96": "https://gravatar.example/96.png"}})

    def upload(self, request: FakeRequest):
        refused = self.authorized(request)
        if refused:
            return refused
        match = re.search(r'filename="([^"]+)"', request.headers.get("content-disposition", ""))
        if not match or not request.body:
            return wordpress_error(400, "rest_upload_no_data", "No data supplied.")
        media_id = 50 + len(self.media)
        self.media[media_id] = {"filename": match[1], "content_type": request.headers.get("content-type"),
                                "bytes": request.body, "alt_text": request.query.get("alt_text", "")}
        return answer(201, {"id": media_id, "source_url": f"{self.url}/wp-content/uploads/{match[1]}",
                            "media_type": "image"})

    def create(self, request: FakeRequest):
        refused = self.authorized(request)
        if refused:
            return refused
        if not self.can_publish:
            return wordpress_error(403, "rest_cannot_publish", "Sorry, you are not allowed to publish posts as this user.")
        post = {**request.json(), "collection": request.match["collection"]}
        if post.get("featured_media") and post["featured_media"] not in self.media:
            return wordpress_error(400, "rest_invalid_featured_media", "Invalid featured media ID.")
        self.published.append(post)
        post_id = 200 + len(self.published)
        return answer(201, {"id": post_id, "link": f"{self.url}/?p={post_id}", "status": post.get("status")})

    def trash(self, request: FakeRequest):
        """DELETE without force=true: to the trash (200, the post with status "trash"); in the trash already: 410
        rest_already_trashed; an id of another type, or none: 404 rest_post_invalid_id."""
        refused = self.authorized(request)
        if refused:
            return refused
        number, collection = int(request.match["id"]) - 201, request.match["collection"]
        post = self.published[number] if 0 <= number < len(self.published) else None
        if post is None or post["collection"] != collection:
            return wordpress_error(404, "rest_post_invalid_id", "Invalid post ID.")
        if post.get("status") == "trash":
            return wordpress_error(410, "rest_already_trashed", "The post has already been deleted.")
        post["status"] = "trash"
        self.deleted.append((collection, number + 201))
        return answer(200, {"id": number + 201, "status": "trash"})


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeWordPress


def credentials_at(url: str) -> dict:
    """Credentials that aim a channel at `url`."""
    return {"domain": url, "username": "editor", "password": "app password"}


def _renew(fake, extras):
    fake.password = "wxyz WXYZ 9876 abcd EFGH 5432"  # a new Application Password
    return fake.credentials()


RECONNECT = Reconnect(_renew, lambda fake: {**fake.credentials(), "password": "nope nope nope"},
                      "The provided password is an invalid application password",
                      lambda fake, extras: extras(FakeWordPress()).credentials())
