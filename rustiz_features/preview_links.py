"""Client review links and comments on a post, for the team: links made and revoked, comments listed, added and
deleted (issue 25). The page a link opens is client_review.py's; MCP's listPostComments and addPostComment call
the functions here.

Rules:
- A link and the comments belong to the post's review group: its multi-channel group (every channel's thread
  of one post), or its own group when it has none (storage.preview_links). Another organization's post is a
  404, as if it never existed.
- A link's token is random (secrets.token_urlsafe(32)), returned once and stored only as its SHA-256; the
  link lives `expiresInDays` (1 to 90) unless revoked. DELETE revokes every link of the post's review group,
  or, with ?token=, only that one.
- A comment records who wrote it: the person signed in (request.user), else the API key (its name), or MCP;
  a client's comes through the review page. A comment is deleted by whoever wrote it, or by an admin.
"""
from __future__ import annotations

import datetime
import secrets
from typing import Any, Optional

from rustiz import App, Request, Response, bad_request, hash_api_key, iso_ms, json_object, json_response, \
    nest_error, not_found, route_options
from .api_docs import BOOLEAN, DATE, INTEGER, POST_ID, STRING, array_of, documented, nullable, object_schema, \
    parameter
from .api_posts import POST_NOT_FOUND
from .storage import comments as comment_store
from .storage import keys as key_store
from .storage import posts as post_store
from .storage import preview_links as link_store

MIN_LINK_DAYS, MAX_LINK_DAYS, DEFAULT_LINK_DAYS = 1, 90, 7
MAX_COMMENT_CHARACTERS = 5000
MAX_COMMENTS_LISTED = 500  # the newest of a post's comments: far beyond a review's conversation
MAX_TOKEN_CHARACTERS = 100  # a token is 43 characters; anything much longer is not one

_LINK_ANSWER = object_schema({"url": STRING, "token": STRING, "expiresAt": DATE})
COMMENT_SCHEMA = object_schema({
    "id": STRING, "content": STRING, "kind": {"enum": ["comment", "approved", "changes"]}, "createdAt": DATE,
    "author": object_schema({"type": {"enum": ["user", "key", "mcp", "client"]}, "id": nullable("string"),
                             "name": STRING}),
    "own": BOOLEAN})
_COMMENT_ID = parameter("path", "commentId", "A comment id")


def review_group_of(post: dict) -> str:
    """The review group of a post (a link and the comments are bound to it): its multi-channel group, else
    its own group."""
    return post["multiChannelGroup"] or post["group"]


def review_link_url(frontend_url: str, token: str) -> str:
    """The page a client opens: absolute under FRONTEND_URL."""
    return f"{frontend_url.rstrip('/')}/p/{token}"


def comment_problem(content: Any, what: str = "content") -> Optional[str]:
    """Why a comment's text is refused, or None (a non-empty string of at most MAX_COMMENT_CHARACTERS)."""
    if not isinstance(content, str) or not content.strip() or len(content) > MAX_COMMENT_CHARACTERS:
        return f"{what} must be a non-empty text of at most {MAX_COMMENT_CHARACTERS} characters"
    return None


class ReviewLinksApi:
    """POST and DELETE /public/v1/posts/:id/preview-link."""

    def __init__(self, app: App):
        self.store, self.config = app.store, app.config

    def post_or_404(self, organization_id: str, post_id: str) -> dict:
        post = post_store.post(self.store, organization_id, post_id)
        if post is None:
            raise not_found(POST_NOT_FOUND)
        return post

    @route_options(scope="posts", audit="preview_link.created")  # (an editor's: the role editor, or a full key)
    @documented("Make a review link to a post (its threads on every channel) for a client without an account: "
                "the page /p/<token> shows it with a comment box and, with allowApproval, Approve and Request "
                "changes (rustiz). The token is shown once", ("201", _LINK_ANSWER), "BadRequest NotFound",
                (POST_ID,), object_schema({}, {"expiresInDays": {**INTEGER, "minimum": MIN_LINK_DAYS,
                                                                 "maximum": MAX_LINK_DAYS},
                                               "allowApproval": BOOLEAN}))
    def create(self, request: Request, organization_id: str) -> Response:
        body = json_object(request) if request.body.strip() else {}
        days, allow_approval = body.get("expiresInDays", DEFAULT_LINK_DAYS), body.get("allowApproval", False)
        if type(days) is not int or not MIN_LINK_DAYS <= days <= MAX_LINK_DAYS:
            raise bad_request([f"expiresInDays must be a whole number of days from {MIN_LINK_DAYS} to "
                               f"{MAX_LINK_DAYS}"])
        if type(allow_approval) is not bool:
            raise bad_request(["allowApproval must be a boolean value"])
        post = self.post_or_404(organization_id, request.params["id"])
        token = secrets.token_urlsafe(32)
        expires = iso_ms(datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days))
        link_store.create_link(self.store, organization_id, review_group_of(post), hash_api_key(token),
                               secrets.token_urlsafe(24), allow_approval, expires, request.user)
        return json_response({"url": review_link_url(self.config.frontend_url, token), "token": token,
                              "expiresAt": expires}, 201)

    @route_options(scope="posts", audit="preview_link.revoked")
    @documented("Revoke the post's review links: all of them, or only the one of ?token= (rustiz)",
                ("200", object_schema({"revoked": INTEGER})), "NotFound",
                (POST_ID, parameter("query", "token", "Only this link's token")))
    def revoke(self, request: Request, organization_id: str) -> Response:
        post = self.post_or_404(organization_id, request.params["id"])
        token = request.query.get("token")
        if token is not None and (not token or len(token) > MAX_TOKEN_CHARACTERS):
            raise not_found("No review link of this post has that token")
        revoked = link_store.revoke_links(self.store, organization_id, review_group_of(post),
                                          None if token is None else hash_api_key(token))
        if token is not None and not revoked:
            raise not_found("No review link of this post has that token (or it was revoked already)")
        return json_response({"revoked": revoked})


class CommentsApi:
    """GET and POST /public/v1/posts/:id/comments, DELETE /public/v1/posts/:id/comments/:commentId."""

    def __init__(self, app: App):
        self.store = app.store
        self.links: ReviewLinksApi = app.feature(ReviewLinksApi)

    @documented("The comments on a post, oldest first: the team's and clients' (from a review link), with their "
                "decisions (rustiz)", ("200", object_schema({"comments": array_of(COMMENT_SCHEMA)})), "NotFound",
                (POST_ID,))
    def list_comments(self, request: Request, organization_id: str) -> Response:
        return json_response({"comments": self.listing(organization_id, request.params["id"], author(self.store,
                                                                                                      request))})

    def listing(self, organization_id: str, post_id: str, caller: tuple) -> list:
        """The comments of a post's review group; `own` tells those the caller (author()) wrote."""
        post = self.links.post_or_404(organization_id, post_id)
        listed = comment_store.comments(self.store, organization_id, review_group_of(post), MAX_COMMENTS_LISTED)
        return [{**comment, "own": is_own(comment, caller)} for comment in listed]

    @route_options(scope="drafts", audit="comment.created")
    @documented("Comment on a post, for the team and the clients who review it (rustiz)",
                ("201", COMMENT_SCHEMA), "BadRequest NotFound", (POST_ID,), object_schema({"content": STRING}))
    def add(self, request: Request, organization_id: str) -> Response:
        content = json_object(request).get("content")
        return json_response(self.add_comment(organization_id, request.params["id"], content,
                                              author(self.store, request)), 201)

    def add_comment(self, organization_id: str, post_id: str, content: Any, caller: tuple) -> dict:
        """A team comment on a post by `caller` (author()); raises ApiError 400 or 404."""
        problem = comment_problem(content)
        if problem:
            raise bad_request([problem])
        post = self.links.post_or_404(organization_id, post_id)
        kind, author_id, name = caller
        made = comment_store.add_comment(self.store, organization_id, review_group_of(post), kind, author_id, name,
                                         content.strip())
        return {**made, "own": True}

    @route_options(scope="drafts", audit="comment.deleted")  # (an author deletes their own: checked below)
    @documented("Delete a comment: your own, or any as an admin (rustiz)",
                ("200", object_schema({"id": STRING, "deleted": BOOLEAN})), "Forbidden NotFound",
                (POST_ID, _COMMENT_ID))
    def delete(self, request: Request, organization_id: str) -> Response:
        post = self.links.post_or_404(organization_id, request.params["id"])
        found = comment_store.comment(self.store, organization_id, review_group_of(post), request.params["commentId"])
        if found is None:
            raise not_found("No such comment on this post")
        if not is_own(found, author(self.store, request)) and not is_admin(request):
            raise nest_error(403, "Only whoever wrote a comment, or an admin, may delete it")
        comment_store.delete_comment(self.store, organization_id, found["id"])
        return json_response({"id": found["id"], "deleted": True})


def author(store: Any, request: Request) -> tuple:
    """(type, id, name) of who calls: the person signed in, else the API key (the organization's own is
    "default"; a web session signed in with a key has no person)."""
    user = request.user
    if user:
        return "user", user, comment_store.person_name(store, user) or "Team member"
    return key_author(store, request.organization, request.key)


def key_author(store: Any, organization_id: str, key: Any, kind: str = "key") -> tuple:
    """(type, id, name) of an API key's call (`kind` "mcp" for MCP's tools): the key's id and name, "default"
    for the organization's own (None)."""
    key_id = key.key_id if key is not None and key.key_id else "default"
    names = {item["id"]: item["name"] for item in key_store.api_keys(store, organization_id)} \
        if key_id != "default" else {}
    name = names.get(key_id, "default")
    return kind, key_id, f"MCP ({name})" if kind == "mcp" else name


def is_own(comment: dict, caller: tuple) -> bool:
    written_by = comment["author"]
    return written_by["type"] == caller[0] and written_by["id"] is not None and written_by["id"] == caller[1]


def is_admin(request: Request) -> bool:
    """An admin of the organization: a person whose role is admin (a session signed in with a full key is
    one), or a full key."""
    return request.role == "admin" if request.role is not None else request.scope == "full"
