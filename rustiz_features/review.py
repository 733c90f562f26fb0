"""A person's review of the drafts that drafts-scoped keys (agents) make: approve or reject (rustiz's addition).

Rules:
- Posts made or changed with a drafts key are drafts marked for review (api_posts.mark_for_review); the
  scheduler never publishes a post marked for review or rejected (storage.scheduling.DUE_SQL).
- Approving queues the thread at its date, or at the date given, or, when its date has passed, at the
  channel's next free posting slot (as GET /find-slot finds it); the post is checked as for scheduling first.
- Rejecting keeps the draft, with the reviewer's reason for the agent to read (GET /posts/:id, MCP postGetTool).
- Both need the scope "full" (a person: the organization's own key, a full key or a web session).
- An approval can be bound to what the reviewer saw: the post group's `version` (GET /posts/:id, also its
  ETag), sent as If-Match or {"version"}; when any part of the group changed since (content, media,
  settings, date, a part added or removed) the approval is refused with 409 and nothing changes. The check
  is made in the same transaction as the approval. Without a version, approve works as before (Postiz's).
"""
from __future__ import annotations

import json
from typing import Any, Optional

from rustiz import ApiError, App, Request, Response, bad_request, iso_ms, json_object, json_response, \
    nest_error, not_found, parse_iso_instant, route_options, utc_now_iso
from .api_docs import DATE, POST_ID, STRING, documented, object_schema, parameter, ref
from .api_posts import POST_NOT_FOUND, PostsApi
from .storage import posts as post_store
from .storage import review as review_store
from .storage.review import PostGroupChanged
from .storage import channels as channel_store

MAX_REASON_CHARACTERS = 2000
MAX_VERSION_CHARACTERS = 64


class ReviewApi:
    """POST /public/v1/posts/:id/approve {"date"?} and POST /public/v1/posts/:id/reject {"reason"}."""

    def __init__(self, app: App):
        self.store = app.store
        self.posts: PostsApi = app.feature(PostsApi)

    def _awaiting(self, organization_id: str, post_id: str) -> list:
        """The thread of a post awaiting review or rejected (root first); raises ApiError 404 or 409."""
        post = post_store.post(self.store, organization_id, post_id)
        if post is None:  # (another organization's post answers as one that never existed)
            raise not_found(POST_NOT_FOUND)
        thread = post_store.thread(self.store, organization_id, post["group"])
        if thread[0]["id"] not in review_store.post_reviews(self.store, [thread[0]["id"]]):
            raise nest_error(409, f"Post {post_id} is not awaiting review (only drafts made with a drafts key are: "
                                  "GET /public/v1/posts?state=review lists them)")
        return thread

    @route_options(scope="posts", audit="post.approved")  # (an editor may: the role editor, or a full key)
    @documented("Approve a draft awaiting review: queued at `date`, else its own date, else (passed) the channel's "
                "next free slot (rustiz; scope full). With If-Match (the ETag of GET /posts/{id}) or `version`, a "
                "409 when the post changed since that version (nothing is approved)", ("200", ref("Post")),
                "PostRejected NotFound Conflict",
                (POST_ID, parameter("header", "If-Match", "rustiz: the ETag of GET /posts/{id} the reviewer saw")),
                object_schema({}, {"date": DATE, "version": STRING}))
    def approve(self, request: Request, organization_id: str) -> Response:
        body = json_object(request) if request.body else {}
        root_id = self.approve_post(organization_id, request.params["id"], body.get("date"),
                                    seen_version(request, body))
        return json_response(self.posts.post_view(organization_id, root_id))

    def approve_post(self, organization_id: str, post_id: str, wanted_date: Any = None,
                     seen: Optional[str] = None) -> str:
        """Approve the thread of a post awaiting review (also a client's approval through a review link):
        queued at `wanted_date`, its own date or the channel's next free slot; its root's id. Raises ApiError."""
        thread = self._awaiting(organization_id, post_id)
        root = thread[0]
        date = self._approved_date(organization_id, root, wanted_date)
        self.posts._revalidate(organization_id, thread, settings=json.loads(root["settings"] or "{}"),
                               request_type="update")  # drafts skip the media and length rules; queued posts not
        try:
            decided = review_store.decide_review(self.store, organization_id, root["group"], publish_date=date,
                                                 seen_version=seen)
        except PostGroupChanged as changed:
            raise ApiError(409, {"statusCode": 409, "error": "Conflict", "version": changed.version, "message": (
                f"Post {root['id']} changed after you looked at it (you saw version {seen}, it is now version "
                f"{changed.version}: its text, media, settings, date or thread parts were edited): nothing was "
                f"approved. Look at it again (GET /public/v1/posts/{root['id']}), then approve what you see")},
                [("ETag", f'"{changed.version}"')]) from None
        if not decided:
            raise nest_error(409, f"Post {root['id']} changed while it was approved; look at it again")
        self.posts.tell_webhooks(organization_id, "post.updated", [root["id"]])
        return root["id"]

    def _approved_date(self, organization_id: str, root: dict, wanted: Any) -> str:
        if wanted is not None:
            instant = parse_iso_instant(wanted)
            if instant is None:
                raise bad_request(["date must be a valid ISO 8601 date string"])
            date = iso_ms(instant)
            self.posts.refuse_missed_date(date, remedy="give a later date, or none for the channel's next free slot")
            return date
        if root["publishDate"] > utc_now_iso():
            return root["publishDate"]
        channel = channel_store.channel_row(self.store, organization_id, root["integrationId"])
        slot, _, _ = self.posts.free_slot(organization_id, channel)
        return iso_ms(slot)

    @route_options(scope="posts", audit="post.rejected")  # (an editor may: the role editor, or a full key)
    @documented("Reject a draft awaiting review, with a reason the agent reads back (rustiz; scope full)",
                ("200", ref("Post")), "BadRequest NotFound Conflict", (POST_ID,), object_schema({"reason": STRING}))
    def reject(self, request: Request, organization_id: str) -> Response:
        reason = json_object(request).get("reason")
        if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON_CHARACTERS:
            raise bad_request([f"reason must be a non-empty string of at most {MAX_REASON_CHARACTERS} characters "
                               "(the agent reads it back)"])
        root_id = self.reject_post(organization_id, request.params["id"], reason.strip())
        return json_response(self.posts.post_view(organization_id, root_id))

    def reject_post(self, organization_id: str, post_id: str, reason: str) -> str:
        """Keep the thread of a post awaiting review a draft, with the reason (also a client's request for
        changes through a review link); its root's id. Raises ApiError."""
        root = self._awaiting(organization_id, post_id)[0]
        if not review_store.decide_review(self.store, organization_id, root["group"], reason=reason):
            raise nest_error(409, f"Post {root['id']} changed while it was rejected; look at it again")
        self.posts.tell_webhooks(organization_id, "post.updated", [root["id"]])
        return root["id"]


def seen_version(request: Request, body: dict) -> Optional[str]:
    """The version the reviewer saw: If-Match (an ETag of GET /posts/:id) or the body's "version"; None when
    neither is given ("*" in If-Match is any version). A 400 names a malformed one."""
    version: Any = body.get("version")
    if_match = request.headers.get("if-match", "").strip()
    if if_match and if_match != "*":
        tag = if_match.removeprefix("W/").strip()
        if "," in tag or len(tag) < 2 or tag[0] != '"' or tag[-1] != '"':
            raise bad_request('If-Match must be one ETag of GET /public/v1/posts/:id, as "<version>"')
        if version is not None and version != tag[1:-1]:
            raise bad_request("If-Match and version name different versions: send one of them")
        version = tag[1:-1]
    if version is None:
        return None
    if not isinstance(version, str) or not version or len(version) > MAX_VERSION_CHARACTERS:
        raise bad_request([f"version must be the post's version as GET /public/v1/posts/:id answers it (a string "
                           f"of at most {MAX_VERSION_CHARACTERS} characters)"])
    return version
