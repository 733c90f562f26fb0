"""Posts, notifications and posting slots: Postiz's post routes and rustiz's additions.

Rules:
- A post is validated (validation.py) before anything is stored, then saved in one transaction.
- Only the scheduler moves a post out of QUEUE; edits and deletes here take effect before it claims one.
- Listings expand recurring posts (recurrence.py) within a bound on what one answer may hold.
- Every lookup is scoped by the caller's organization; another organization's ids answer like unknown ones.
"""
from __future__ import annotations

import json
import math
import re
import time
from typing import TYPE_CHECKING, Any, Awaitable, Optional, Union

from rustiz import (
    ApiError, App, Guard, Request, Response, bad_request, duration, encode_json, iso_at, iso_ms, json_dumps,
    json_object, json_response, nest_error, new_cuid, new_uuid, not_found, parse_iso_instant, route_options,
    scope_allows, scope_refusal, sha256, utc_now_iso,
)
from .api_docs import (
    BOOLEAN, CHANNEL_ID, DATE, ID, INTEGER, POST_ID, STRING, array_of, documented, json_body, object_schema,
    parameter, ref,
)
from .api_channels import INTEGRATION_NOT_FOUND
from .catalogue import provider_max_length
from .duplicates import duplicates_allowed, refuse_duplicates
from .post_events import queue_post_event
from . import short_links
from .recurrence import occurrences, recurrence_of, zone_named
from .storage import idempotency as idempotency_store
from .storage import notifications as notification_store
from .storage import posts as post_store
from .storage import review as review_store
from .storage import queue as queue_store
from . import queue
from .storage.idempotency import IdempotentResponse
from .storage.posts import PostBeingPublished
from .validation import validate_create_post
from .storage import channels as channel_store
from .storage import organizations as organization_store
from .storage import media_library as media_store

if TYPE_CHECKING:  # (imported where a date is parsed)
    import datetime



POST_NOT_FOUND = "Post not found"
REPEAT_END_FIELDS = ("repeatUntil", "repeatCount")  # a repeating post's end (issue 26): either one
NOTIFICATIONS_PER_PAGE = 100
MAX_NOTIFICATIONS_PAGE = 1_000_000  # 100 million notifications: far beyond what an organization keeps
SLOT_SEARCH_DAYS = 400
REVIEW_STATES = ("review", "rejected")  # GET /posts?state=...: drafts of drafts keys awaiting review, or rejected


def _rate_limit_headers() -> dict:
    """What POST /posts answers carry: Postiz's throttler headers while API_LIMIT is on, and the replay mark."""
    headers = {name: {"description": description, "schema": INTEGER} for name, description in (
        ("X-RateLimit-Limit", "API_LIMIT"), ("X-RateLimit-Remaining", "Calls left in this hour's window"),
        ("X-RateLimit-Reset", "Seconds until the window ends"))}
    headers["Idempotent-Replayed"] = {"description": "The answer first given for this Idempotency-Key",
                                      "schema": {"const": "true"}}
    return headers


_DELETED = object_schema({"error": {"const": True}}, description="sic: Postiz's answer")
# Issue 28: DELETE /posts/:id?onPlatform=true deletes the post on its platforms too (platform_delete.py).
_DELETED_ON_PLATFORM = object_schema({"deleted": array_of(object_schema(
    {"integration": STRING, "deleted": BOOLEAN, "reason": STRING}))},
    description="rustiz, with onPlatform=true: one entry per channel of the post's group; deleted says nothing of the "
                "post is left on that platform (nothing was ever published there, or all of it was deleted)")
_ON_PLATFORM = parameter("query", "onPlatform", "rustiz: true also deletes what was published on each platform whose API "
                                                "allows it (last thread part first), and says per channel what was and "
                                                "was not deleted; false or absent: in rustiz only, as Postiz",
                         schema={"type": "string", "enum": ["true", "false"]})


def on_platform_flag(request: Request) -> bool:
    """?onPlatform= of DELETE /posts/:id: true or false (absent: false); anything else is refused, naming it."""
    value = request.query.get("onPlatform") if request.query_string else None
    if value is None or value == "false":
        return False
    if value == "true":
        return True
    raise bad_request([f"onPlatform must be true or false, got {encode_json(value[:40])}"])


def platform_can_delete(provider_identifier: str) -> bool:
    """Whether rustiz can delete a post it published on this provider's platform (issue 28)."""
    from .publishers import provider_for
    provider = provider_for(provider_identifier)
    return bool(provider is not None and provider.can_delete)


def postiz_state(state: str) -> str:
    """Postiz knows four states; a post rustiz's scheduler is publishing right now is still QUEUE there."""
    return "QUEUE" if state == "PUBLISHING" else state


def _load_json(text: Optional[str], default: Any) -> Any:
    return default if text is None else json.loads(text)


def _being_published(post_id: str) -> ApiError:
    return nest_error(409, f"Post {post_id} is being published right now; wait until it is PUBLISHED or ERROR "
                           f"(GET /posts/{post_id}), then change it")


def _post_view(post: dict) -> dict:
    """One post in rustiz's own shape: JSON columns decoded, the real state (PUBLISHING by name)."""
    return {"id": post["id"], "group": post["group"], "parentPostId": post["parentPostId"], "state": post["state"],
            "publishDate": post["publishDate"], "content": post["content"], "image": _load_json(post["image"], []),
            "settings": _load_json(post["settings"], {}), "delay": post["delay"],
            "intervalInDays": post["intervalInDays"], "creationMethod": post["creationMethod"],
            "releaseId": post["releaseId"], "releaseURL": post["releaseURL"], "error": post["error"],
            "createdAt": post["createdAt"], "updatedAt": post["updatedAt"], "multiChannelGroup": post["multiChannelGroup"]}


def going_out_times(thread: list, waits: dict) -> dict:
    """post id -> when each part of a thread queued goes out, as far as rustiz knows now
    (else None). The root: its date, or a retry's later wait. A reply: the time the scheduler set when the
    part before it went out (`waits`, the not_before column), else that part's time plus the reply's
    `delay` in minutes, so a reply waiting for its delay never shows its parent's date."""
    times: dict = {}
    previous: Optional[str] = None
    for part in thread:
        wait = waits.get(part["id"])
        if wait is None and previous is not None and part["parentPostId"] is not None:
            wait = iso_at(parse_iso_instant(previous).timestamp() + (part["delay"] or 0) * 60)
        previous = max(part["publishDate"], wait or "")
        times[part["id"]] = None if part["state"] in ("PUBLISHED", "ERROR", "DRAFT") else previous
    return times


_NO_MARKS = {"inQueue": False, "evergreen": False}


def listing_item(post: dict, tags: list, marks: dict) -> dict:
    """A root post as GET /posts lists it in Postiz: `settings` stays the raw JSON string; rustiz adds inQueue and
    evergreen (issue 26: `marks`, post id -> both, from storage.queue.post_marks)."""
    return {"id": post["id"], "content": post["content"], "publishDate": post["publishDate"],
            "releaseURL": post["releaseURL"], "releaseId": post["releaseId"], "state": postiz_state(post["state"]),
            "intervalInDays": post["intervalInDays"], "group": post["group"],
            "creationMethod": post["creationMethod"], "settings": post["settings"], "tags": tags,
            "integration": post["integration"], "multiChannelGroup": post["multiChannelGroup"],
            "repeatUntil": post.get("repeatUntil"), "repeatCount": post.get("repeatCount"),
            **marks.get(post["id"], _NO_MARKS)}


def posts_tagged(items: list, tag: str) -> list:
    """The listed posts (GET /posts items) that carry the tag whose id is `tag`, or whose name is `tag` in any
    case (tags deleted since included: their posts still show them)."""
    folded = tag.casefold()
    return [item for item in items if any(link["tag"]["id"] == tag or link["tag"]["name"].casefold() == folded
                                          for link in item["tags"])]


# --- listings: how many occurrences of recurring posts one answer may hold -------------------------

# What the occurrences of recurring posts may add to one listing: building and encoding the largest such
# answer holds the event loop (every other request) for about a tenth of a second on a small machine.
MAX_LISTED_OCCURRENCES = 10_000
MAX_LISTED_OCCURRENCE_BYTES = 8 * 1024 * 1024


def _too_many_occurrences(count: int, size: int, start: "datetime.datetime", end: "datetime.datetime",
                          per_day: list) -> ApiError:
    """The answer for a window whose recurring posts repeat more than one answer may list, with a window short
    enough: `per_day` is [occurrences a day, their bytes a day, posts, their bytes] (a window of d days holds
    at most d occurrences a day plus one more of each post)."""
    rate, weight, posts, posts_size = per_day
    days = min((MAX_LISTED_OCCURRENCES - posts) / rate, (MAX_LISTED_OCCURRENCE_BYTES - posts_size) / weight)
    shorter = (f"ask for a shorter window: at most {math.floor(days)} days at a time" if days >= 2 else
               f"ask for a shorter window: at most {math.floor(days * 24)} hours at a time" if days * 24 >= 1 else
               "list fewer channels at a time (customer=...)")
    return bad_request(
        f"Between startDate {iso_ms(start)} and endDate {iso_ms(end)} recurring posts repeat {count} times (about "
        f"{math.ceil(size / 2**20)} MiB), more than one answer lists: at most {MAX_LISTED_OCCURRENCES} occurrences "
        f"and {MAX_LISTED_OCCURRENCE_BYTES // 2**20} MiB of them. To see them all, {shorter}")


_PAST_DATE_REMEDY = 'give a later date, type "now" to publish at once, or type "draft" to keep it unscheduled'


class PostsApi:
    """The posts routes (Postiz's and rustiz's additions), notifications, posting slots and analytics.

    Every lookup is scoped by the caller's organization: another organization's id answers exactly
    like an id that never existed."""

    def __init__(self, app: App):
        self.app, self.store, self.config = app, app.store, app.config
        self.publish_grace_seconds = app.config.publish_grace_seconds

    def refuse_missed_date(self, date: str, what: str = "date", remedy: str = _PAST_DATE_REMEDY) -> None:
        """A post about to be queued goes out at once when its date passed less than PUBLISH_GRACE ago (as in
        Postiz, and for clients that send the current time); dated earlier, the scheduler would only skip
        it, so it is refused now (400)."""
        if date < iso_at(time.time() - self.publish_grace_seconds):
            raise bad_request(f"{what} {date} is in the past, more than the {duration(self.publish_grace_seconds)} "
                              f"grace period (PUBLISH_GRACE) ago, so the post would never be sent: {remedy}")

    def _post_or_404(self, organization_id: str, post_id: str) -> dict:
        post = post_store.post(self.store, organization_id, post_id)
        if post is None:
            raise not_found(POST_NOT_FOUND)
        return post

    @documented("Main posts in a date window, recurring ones once per occurrence",
                ("200", object_schema({"posts": array_of(ref("ListedPost"))})), "BadRequest",
                (parameter("query", "startDate", "From this instant (required without state)", False, DATE),
                 parameter("query", "endDate", "Up to this instant, inclusive (required without state)", False, DATE),
                 parameter("query", "customer", "Only posts on this customer's channels"),
                 parameter("query", "state", "rustiz: review (drafts of drafts keys awaiting review) or rejected, "
                                             "whatever their date; each item adds review and reviewReason",
                           schema={"type": "string", "enum": ["review", "rejected"]}),
                 parameter("query", "tag", "rustiz: only posts with this tag, by its id or its name (in any case)")))
    def list_posts(self, request: Request, organization_id: str) -> Response:
        """GET /posts: root posts in [startDate, endDate], recurring ones once per occurrence in the window.

        Postiz also lists a recurring post's occurrences before startDate; rustiz keeps to the window, and
        to MAX_LISTED_OCCURRENCES of them (a 400 says how to narrow a window that holds more)."""
        query = request.query
        if "state" in query:
            posts = self.review_listing(organization_id, query["state"])
        else:
            posts = self.listing(organization_id, query.get("startDate"), query.get("endDate"),
                                 query.get("customer") or None)
        if query.get("tag"):
            posts = posts_tagged(posts, query["tag"])
        return json_response({"posts": posts})

    def listing(self, organization_id: str, start_text: Any, end_text: Any, customer: Optional[str]) -> list:
        """The items of GET /posts (MCP's postsListTool too); raises ApiError (400) for a date that is not ISO 8601,
        or a window in which recurring posts repeat more than one answer lists."""
        start, end = parse_iso_instant(start_text), parse_iso_instant(end_text)
        if start is None or end is None:
            raise bad_request([f"{name} must be a valid ISO 8601 date string"
                               for name, value in (("startDate", start), ("endDate", end)) if value is None])
        first, last = iso_ms(start), iso_ms(end)
        posts = post_store.root_posts_for_listing(self.store, organization_id, first, last, customer)
        tags = post_store.post_tags(self.store, [post["id"] for post in posts])
        marks = queue_store.post_marks(self.store, [post["id"] for post in posts])
        zone = None
        # Each entry: (item, None) for a post listed once, or (item, its occurrences in the window), which
        # are counted (and weighed) before any is computed, so that no answer grows beyond the limits.
        entries, count, size = [], 0, 0
        per_day = [0.0, 0.0, 0, 0]  # occurrences a day, their bytes a day, and each post's one extra: the shorter window
        for post in posts:
            item = listing_item(post, tags.get(post["id"], []), marks)
            every_days, published = post["intervalInDays"], parse_iso_instant(post["publishDate"])
            if not every_days or every_days < 1 or published is None:  # not recurring: listed when in the window
                if first <= post["publishDate"] <= last:
                    entries.append((item, None))
                continue
            zone = zone or zone_named(organization_store.organization_timezone(self.store, organization_id))
            series = recurrence_of(post["publishDate"], post["recurrenceAnchor"], every_days, zone,
                                   post["repeatUntil"], post["repeatCount"])
            # The pending occurrence is the post's own date; the later ones follow the series.
            occurrences = ([published] if start <= published <= end else [], series,
                           series.indexes(published, start, end))
            entries.append((item, occurrences))
            repeats, weight = len(occurrences[0]) + len(occurrences[2]), len(json_dumps(item)) + 60
            count, size = count + repeats, size + repeats * weight
            per_day = [per_day[0] + 1 / every_days, per_day[1] + weight / every_days, per_day[2] + 1,
                       per_day[3] + weight]
        if count > MAX_LISTED_OCCURRENCES or size > MAX_LISTED_OCCURRENCE_BYTES:
            raise _too_many_occurrences(count, size, start, end, per_day)
        listed = []
        for item, occurrences in entries:
            if occurrences is None:
                listed.append(item)
                continue
            pending, series, indexes = occurrences
            listed.extend({**item, "publishDate": iso_ms(moment), "actualDate": item["publishDate"]}
                          for moment in pending + [series.at(index) for index in indexes])
        return listed

    def review_listing(self, organization_id: str, state: str) -> list:
        """GET /posts?state=review|rejected (rustiz): root posts of drafts keys awaiting a person's review, or
        rejected (with the reviewer's reason), oldest first, whatever their date."""
        if state not in REVIEW_STATES:
            raise bad_request(f"state must be one of the following values: {', '.join(REVIEW_STATES)} "
                              f"(without state, GET /posts lists by startDate and endDate)")
        posts = review_store.posts_for_review(self.store, organization_id, state)
        tags = post_store.post_tags(self.store, [post["id"] for post in posts])
        marks = queue_store.post_marks(self.store, [post["id"] for post in posts])
        return [{**listing_item(post, tags.get(post["id"], []), marks), "review": post["review"],
                 "reviewReason": post["reviewReason"]} for post in posts]

    @documented("A post with its thread (rustiz)", ("200", ref("Post")), "NotFound", (POST_ID,))
    def get_post(self, request: Request, organization_id: str) -> Response:
        """GET /posts/:id (rustiz): the post, its channel and tags, and the thread replies that follow it; its
        `version` (of the whole group) also as the ETag, which POST /posts/:id/approve takes in If-Match."""
        view = self._full_view(organization_id, self._post_or_404(organization_id, request.params["id"]))
        return json_response(view, 200, [("ETag", f'"{view["version"]}"'), ("Cache-Control", "no-cache")])

    def _full_view(self, organization_id: str, post: dict) -> dict:
        thread = post_store.thread(self.store, organization_id, post["group"])
        position = next(index for index, part in enumerate(thread) if part["id"] == post["id"])
        channel = channel_store.channel_row(self.store, organization_id, post["integrationId"])
        view = _post_view(post)
        view["integration"] = {"id": channel["id"], "providerIdentifier": channel["providerIdentifier"],
                               "name": channel["name"], "picture": channel["picture"]}
        view["tags"] = post_store.post_tags(self.store, [post["id"]]).get(post["id"], [])
        going_out = going_out_times(thread, post_store.thread_waits(self.store, organization_id, post["group"]))
        view["goesOutAt"] = going_out[post["id"]]
        view["thread"] = [{**_post_view(reply), "goesOutAt": going_out[reply["id"]]} for reply in thread[position + 1:]]
        reviews = review_store.post_reviews(self.store, [post["id"]])
        view["review"], view["reviewReason"] = reviews.get(post["id"], (None, None))
        view["version"] = review_store.group_version(self.store, organization_id, post["group"])
        view["canDeleteOnPlatform"] = platform_can_delete(channel["providerIdentifier"])  # (issue 28)
        view.update(self._repeats_view(organization_id, post))
        view.update(queue_store.post_marks(self.store, [post["id"]]).get(post["id"], _NO_MARKS))
        return view

    def _repeats_view(self, organization_id: str, post: dict) -> dict:
        """A post's repeatUntil, repeatCount and occurrences (next ones from now, and the last) (issue 26)."""
        import datetime
        anchor, until, count = post_store.repeat_end(self.store, post["id"])
        every_days = post["intervalInDays"] if post["parentPostId"] is None else None
        zone_name = organization_store.organization_timezone(self.store, organization_id) if every_days else "UTC"
        upcoming = occurrences(post["publishDate"], anchor, every_days, zone_name, until, count,
                               datetime.datetime.now(datetime.timezone.utc))
        if post["state"] == "ERROR":
            upcoming["next"] = []  # (a failed post goes out again only once it is retried)
        return {"repeatUntil": until, "repeatCount": count, "occurrences": upcoming}

    @route_options(scope="posts", audit="post.deleted")  # (an editor may: the role editor, or a full key)
    @documented("Soft-delete the post's whole group; with onPlatform=true, on its platforms too",
                ("200", {"anyOf": [_DELETED, _DELETED_ON_PLATFORM]}), "BadRequest NotFound Conflict",
                (POST_ID, _ON_PLATFORM))
    def delete_post(self, request: Request, organization_id: str) -> Union[Response, Awaitable[Response]]:
        """DELETE /posts/:id: the post's whole group (its thread on that channel); Postiz's body, sic. With
        ?onPlatform=true (issue 28) the same, then what was published is deleted on each platform that allows it."""
        on_platform = on_platform_flag(request)
        return self._delete_thread(organization_id, self._post_or_404(organization_id, request.params["id"]),
                                   on_platform)

    def _delete_thread(self, organization_id: str, post: dict, on_platform: bool) -> Union[Response, Awaitable[Response]]:
        """The post's group deleted (its webhooks told, the queue moved up); with `on_platform`, on its platforms too."""
        thread = post_store.thread(self.store, organization_id, post["group"]) if on_platform else []
        busy = next((part for part in thread if part["state"] == "PUBLISHING"), None)
        if busy is not None:  # (it could go out after the platform's delete: nothing is deleted)
            raise _being_published(busy["id"])
        in_queue = self._in_queue(post)
        references = post_store.reply_references(self.store, organization_id, [part["id"] for part in thread])
        self._delete_group_telling_webhooks(organization_id, post["group"])
        self._left_queue(organization_id, post, in_queue)
        if not on_platform:
            return json_response({"error": True})
        return self._delete_on_platforms(organization_id, post["id"], thread, references)

    async def _delete_on_platforms(self, organization_id: str, post_id: str, thread: list, references: dict) -> Response:
        """Issue 28: the group's published parts deleted on their platforms (already deleted here), and the answer."""
        from . import platform_delete
        entries = await platform_delete.delete_on_platforms(self.config, self.store, self.app.http, organization_id,
                                                            post_id, thread, references)
        if not all(entry["deleted"] for entry in entries):
            names = await self.store.off_loop(platform_delete.channel_names, self.store, organization_id,
                                              [entry["integration"] for entry in entries])
            await self.store.off_loop(platform_delete.tell_what_is_left, self.store, organization_id, post_id,
                                      entries, names)
        return json_response({"deleted": entries})

    def _in_queue(self, post: dict) -> bool:
        return queue.in_queue(self.store, post["id"])

    def _left_queue(self, organization_id: str, post: dict, was_in_queue: bool) -> None:
        """Issue 26: a queued post deleted or given a date of its own (published now): the later ones move up."""
        if was_in_queue:
            queue.after_leaving(self.store, organization_id, post)

    @route_options(scope="posts", audit="post.deleted")  # (an editor may: the role editor, or a full key)
    @documented("Soft-delete a group of posts; with onPlatform=true, on its platforms too",
                ("200", {"anyOf": [_DELETED, _DELETED_ON_PLATFORM]}), "BadRequest Conflict",
                parameters=(parameter("path", "group", "A group"), _ON_PLATFORM))
    def delete_group(self, request: Request, organization_id: str) -> Union[Response, Awaitable[Response]]:
        """DELETE /posts/group/:group: as Postiz, an unknown group is not an error. With ?onPlatform=true (issue 28) as
        DELETE /posts/:id?onPlatform=true ({"deleted": []} for an unknown group)."""
        on_platform = on_platform_flag(request)
        root = next(iter(post_store.thread(self.store, organization_id, request.params["group"])), None)
        if on_platform:
            return self._delete_thread(organization_id, root, True) if root else json_response({"deleted": []})
        in_queue = root is not None and self._in_queue(root)
        self._delete_group_telling_webhooks(organization_id, request.params["group"])
        if root is not None:
            self._left_queue(organization_id, root, in_queue)
        return json_response({"error": True})

    def _delete_group_telling_webhooks(self, organization_id: str, group: str) -> None:
        """Soft-delete a group; its root post's post.deleted event goes to the webhooks subscribed (issue 26)."""
        roots = [part["id"] for part in post_store.thread(self.store, organization_id, group)[:1]]
        if post_store.delete_group(self.store, organization_id, group):
            self.tell_webhooks(organization_id, "post.deleted", roots)

    def tell_webhooks(self, organization_id: str, event: str, post_ids: list) -> None:
        """A post event (post_events) about these root posts, once their change is stored (issue 26)."""
        if post_ids:
            queue_post_event(self.store, organization_id, event, post_ids)

    @route_options(scope="posts", audit="post.status_changed")  # (an editor may: the role editor, or a full key)
    @documented("Make a post a draft or queue it",
                ("200", object_schema({"id": STRING, "state": {"type": "string", "enum": ["DRAFT", "QUEUE"]}})),
                "PostRejected Conflict", (POST_ID,),
                object_schema({"status": {"type": "string", "enum": ["draft", "schedule"]}}))
    def change_status(self, request: Request, organization_id: str) -> Response:
        """PUT /posts/:id/status {"status": "draft"|"schedule"}: the whole thread becomes DRAFT or QUEUE."""
        status = json_object(request).get("status")
        if status not in ("draft", "schedule"):
            raise bad_request(["status must be one of the following values: draft, schedule"])
        post = post_store.post(self.store, organization_id, request.params["id"])
        if post is None:  # Postiz answers 400 here, not 404
            raise bad_request(POST_NOT_FOUND)
        if post["state"] not in ("QUEUE", "DRAFT"):
            raise bad_request(f"Only scheduled posts that were not published yet (or drafts) can change status; "
                              f"post {post['id']} is {post['state']}"
                              + (" (use POST /posts/:id/retry to try a failed post again)"
                                 if post["state"] == "ERROR" else ""))
        state = "DRAFT" if status == "draft" else "QUEUE"
        thread = post_store.thread(self.store, organization_id, post["group"])
        if state == "QUEUE" and post["state"] == "DRAFT":
            # Drafts skip the media and length rules, and may keep a past date; a draft entering the queue
            # must pass them now.
            self._revalidate(organization_id, thread, settings=_load_json(thread[0]["settings"], {}),
                             request_type="update")
            self.refuse_missed_date(thread[0]["publishDate"], f"the date of post {post['id']},",
                                    f'give it a later date first (PUT /posts/{post["id"]} {{"date": "..."}}), '
                                    "then schedule it")
        approval = {"review": None, "review_reason": None} if state == "QUEUE" else {}  # (a person scheduling it)
        if not post_store.update_post_fields(self.store, organization_id, [part["id"] for part in thread],
                                             only_in_states=("QUEUE", "DRAFT"), state=state, **approval):
            raise _being_published(post["id"])
        self.tell_webhooks(organization_id, "post.updated", [thread[0]["id"]])
        return json_response({"id": post["id"], "state": state})

    @route_options(scope="posts", audit="post.release_linked")  # (an editor may: the role editor, or a full key)
    @documented("Link a post whose releaseId is \"missing\" to its platform post", ("200", ref("PostRow")),
                "BadRequest NotFound", (POST_ID,), object_schema({"releaseId": ID}))
    def link_release(self, request: Request, organization_id: str) -> Response:
        """PUT /posts/:id/release-id: tell rustiz which platform post a "missing" release is; the Post row."""
        release_id = json_object(request).get("releaseId")
        if not isinstance(release_id, str) or not release_id:
            raise bad_request(["releaseId must be a string", "releaseId should not be empty"])
        post = self._post_or_404(organization_id, request.params["id"])
        if post["releaseId"] != "missing":
            raise bad_request(f"Post {post['id']} is not waiting for its release id (releaseId is "
                              f"{encode_json(post['releaseId'])}); only a post whose releaseId is \"missing\" "
                              f"can be linked to a platform post")
        post_store.update_post_fields(self.store, organization_id, [post["id"]], release_id=release_id)
        row = post_store.post(self.store, organization_id, post["id"])
        # Postiz's row also has columns rustiz does not keep (titles, the marketplace's); they are empty there too.
        return json_response({**row, "state": postiz_state(row["state"]), "title": None, "description": None,
                              "submittedForOrderId": None, "submittedForOrganizationId": None,
                              "approvedSubmitForOrder": "NO", "lastMessageId": None})

    @documented("Recent platform posts to link a missing release to",
                ("200", array_of(object_schema({"id": STRING, "url": STRING}))), "NotFound", (POST_ID,))
    def missing_releases(self, request: Request, organization_id: str) -> Response:
        """GET /posts/:id/missing: recent platform posts to link a "missing" release to.

        Always [] for now: none of rustiz's providers can list a platform's posts yet, and an empty
        list is what Postiz answers for providers without that ability."""
        self._post_or_404(organization_id, request.params["id"])
        return json_response([])

    @route_options(scope="posts", audit="post.retried")  # (an editor may: the role editor, or a full key)
    @documented("Queue the failed parts of a post's thread again (rustiz)", ("201", ref("Post")), "NotFound Conflict",
                (POST_ID,))
    def retry(self, request: Request, organization_id: str) -> Response:
        """POST /posts/:id/retry (rustiz): the failed parts of the post's thread go back to the queue."""
        return json_response(self.retry_post(organization_id, request.params["id"]), 201)

    def retry_post(self, organization_id: str, post_id: str) -> dict:
        """The failed parts of the post's thread back in the queue; the post as GET /posts/:id shows it."""
        post = self._post_or_404(organization_id, post_id)
        if not post_store.retry_failed_group(self.store, organization_id, post["group"]):
            raise nest_error(409, f"Post {post['id']} is {post['state']}, and nothing in its thread failed; "
                                  f"only a post in ERROR can be retried")
        self.tell_webhooks(organization_id, "post.updated", [post_store.thread(self.store, organization_id,
                                                                                post["group"])[0]["id"]])
        return self.post_view(organization_id, post["id"])

    def post_view(self, organization_id: str, post_id: str) -> dict:
        """GET /posts/:id's answer (MCP's postGetTool too); raises ApiError 404 for another organization's post."""
        return self._full_view(organization_id, self._post_or_404(organization_id, post_id))

    @documented("Notifications, newest first, 100 a page",
                ("200", object_schema({"notifications": array_of(ref("Notification")), "total": INTEGER,
                                       "page": INTEGER, "limit": INTEGER, "hasMore": BOOLEAN})), "BadRequest",
                (parameter("query", "page", "From 0", schema={"type": "integer", "minimum": 0,
                                                              "maximum": MAX_NOTIFICATIONS_PAGE}),))
    def notifications(self, request: Request, organization_id: str) -> Response:
        """GET /notifications?page=N: newest first, 100 per page, pages counted from 0."""
        page_text = request.query.get("page", "0").strip()
        if not re.fullmatch(r"[0-9]+", page_text):
            raise bad_request("Validation failed (numeric string is expected)")
        # Measured as text first: int() refuses numbers of more than 4,300 digits.
        if len(page_text.lstrip("0")) > 7 or int(page_text) > MAX_NOTIFICATIONS_PAGE:
            raise bad_request(f"page must be a whole number from 0 to {MAX_NOTIFICATIONS_PAGE} (pages of "
                              f"{NOTIFICATIONS_PER_PAGE} notifications, the newest first)")
        return json_response({**self.notifications_page(organization_id, int(page_text)),
                              "limit": NOTIFICATIONS_PER_PAGE})

    def notifications_page(self, organization_id: str, page: int) -> dict:
        """One page of notifications (a checked page number), for GET /notifications and MCP alike."""
        offset = page * NOTIFICATIONS_PER_PAGE
        items, total = notification_store.notifications(self.store, organization_id, offset, NOTIFICATIONS_PER_PAGE)
        return {"notifications": items, "total": total, "page": page, "hasMore": offset + len(items) < total}

    @documented("The channel's next free posting time",
                ("200", object_schema({"date": STRING, "timezone": STRING, "localDate": STRING})),
                "BadRequest NotFound Conflict", (CHANNEL_ID,))
    def find_slot(self, request: Request, organization_id: str) -> Response:
        """GET /find-slot/:id: the next posting time of the channel, in the future, without a queued post.

        Posting times are minutes after midnight in the organization's timezone. `date` is UTC without
        an offset, as Postiz answers (and as POST /posts reads it back); `localDate` is the same slot in
        `timezone`."""
        channel = channel_store.channel_row(self.store, organization_id, request.params["id"])
        if channel is None:
            raise not_found(INTEGRATION_NOT_FOUND)
        slot, zone_name, zone = self.free_slot(organization_id, channel)
        return json_response({"date": slot.strftime("%Y-%m-%dT%H:%M:00"), "timezone": zone_name,
                              "localDate": slot.astimezone(zone).strftime("%Y-%m-%dT%H:%M:00")})

    def free_slot(self, organization_id: str, channel: dict) -> tuple:
        """(the channel's next posting time without a queued post, as a UTC datetime, the organization's
        timezone name, that zone); raises ApiError 400 (disabled, no posting times) or 409 (all taken)."""
        import datetime
        if channel["disabled"]:
            raise bad_request(f"Channel {channel['name']} is disabled; enable it before looking for a slot on it")
        week, _ = queue.channel_week(self.store, organization_id, channel)  # (issue 26: by weekday)
        if not any(week.values()):
            raise bad_request(f"Channel {channel['name']} has no posting times, so it has no free slot")
        zone_name, zone = queue.organization_zone(self.store, organization_id)
        now = datetime.datetime.now(datetime.timezone.utc)
        taken = {date[:16] for date in post_store.queued_publish_dates(self.store, channel["id"], iso_ms(now)[:16])}
        for slot in queue.slot_times(week, zone, now, SLOT_SEARCH_DAYS):
            if iso_ms(slot)[:16] not in taken:
                return slot, zone_name, zone
        raise nest_error(409, f"Every posting time of channel {channel['name']} in the next {SLOT_SEARCH_DAYS} "
                              f"days already has a queued post")

    # --- creating and editing posts (validation is validate_create_post's; this is what gets stored) ---------

    @route_options(scope="drafts", audit="post.created")  # (a drafts key's post: a draft, see _create_posts)
    @documented("Create, schedule or update posts: one thread per channel",
                ("201", {**json_body(array_of(object_schema({"postId": STRING, "integration": STRING})), "Created"),
                         "headers": _rate_limit_headers()}),
                "PostRejected Conflict IdempotencyKeyReused",
                (parameter("header", "Idempotency-Key", "A retry with the same key and body within 24 h gets the first "
                                                        "answer and creates nothing",
                           schema={"type": "string", "minLength": 1, "maxLength": 255}),),
                ref("CreatePost"))
    def create_posts(self, request: Request, organization_id: str) -> Response:
        """POST /posts: Postiz's CreatePost body -> one thread per channel -> 201 [{postId, integration}].

        With an Idempotency-Key header, a retry within 24 h (same key, same body) gets the first answer
        again and changes nothing; the same key with another body is refused (422)."""
        key = request.headers.get("idempotency-key")
        if key is None:
            return self._create_posts(request, organization_id, None)
        if not key or len(key) > 255:
            raise bad_request("Idempotency-Key must be between 1 and 255 characters long")
        request_hash = sha256(request.body).hexdigest()
        claim = IdempotentResponse(key, request_hash, 0, b"")
        earlier = idempotency_store.stored_response(self.store, organization_id, key)
        if earlier is not None:
            return self._replay(earlier, claim)
        try:
            return self._create_posts(request, organization_id, claim)
        except ApiError as refused:
            # A refused request is answered the same way when retried, so its answer is kept too.
            idempotency_store.remember_response(self.store, organization_id, claim._replace(
                status=refused.status, body=json_dumps(refused.body)))
            raise

    @staticmethod
    def _replay(earlier: IdempotentResponse, claim: IdempotentResponse) -> Response:
        if earlier.request_hash != claim.request_hash:
            raise nest_error(422, f"Idempotency-Key {claim.key!r} was already used in the last 24 hours for a "
                                  f"different request body; send a new key for a new request, or the same "
                                  f"body to get the first answer again")
        return Response(earlier.status, earlier.body, "application/json; charset=utf-8",
                        [("Idempotent-Replayed", "true")])

    def _create_posts(self, request: Request, organization_id: str,
                      claim: Optional[IdempotentResponse]) -> Response:
        body = request.json()
        plan = validate_create_post(body, lambda channel_id: channel_store.channel(
            self.store, organization_id, channel_id, include_deleted=True), self.config.frontend_url,
            lambda urls: media_store.media_ids_by_path(self.store, organization_id, urls))
        if not scope_allows(request.scope, "posts"):
            for post in self.mark_for_review(organization_id, plan, request.scope, request.role):
                self.refuse_others_draft(request, organization_id, post["id"])
        plan["createdBy"] = request.user
        self.plan_queue_date(organization_id, plan)
        if not duplicates_allowed(body):
            try:
                refuse_duplicates(self.store, plan)
            except ApiError:
                # A twin request with the same Idempotency-Key, saved while this one was validated, is what
                # this one repeats: its answer is replayed, not refused as a duplicate.
                earlier = claim and idempotency_store.stored_response(self.store, organization_id, claim.key)
                if earlier is None:
                    raise
                return self._replay(earlier, claim)
        created, body, earlier = self.save_plan(organization_id, plan, claim)
        if earlier is not None:  # a twin request with the same key was saved while this one was validated
            return self._replay(earlier, claim)
        return Response(201, body, "application/json; charset=utf-8")

    def plan_queue_date(self, organization_id: str, plan: dict) -> None:
        """A plan of type "queue" has no date: the first channel's next free slot stands for it (what duplicates
        are looked for around); each channel's thread takes its own when it is stored."""
        if plan["type"] != "queue" or plan["date"] is not None:
            return
        channel = channel_store.channel_row(self.store, organization_id, plan["posts"][0]["integration"]["id"])
        plan["date"] = (channel and queue.first_free_slot(self.store, organization_id, channel)[1]) or utc_now_iso()

    def mark_for_review(self, organization_id: str, plan: dict, scope: str, role: Optional[str] = None) -> list:
        """A drafts key's or an author's plan (POST /posts, MCP): drafts only, which wait for a person's review,
        and it may rewrite only drafts (a value id or a group naming a scheduled post would unschedule it).
        Returns the stored posts the plan rewrites; raises 403."""
        if plan["type"] != "draft":
            raise scope_refusal(scope, "posts", f'a post of type "{plan["type"]}" (only "draft" waits for review)',
                                role)
        ids = [value["id"] for post in plan["posts"] for value in post["values"] if value.get("id")]
        rewritten = list(post_store.posts_by_id(self.store, organization_id, ids).values()) if ids else []
        for group in {post["group"] for post in plan["posts"] if post.get("group")}:
            rewritten += post_store.thread(self.store, organization_id, group)
        for post in rewritten:
            if post["state"] != "DRAFT":
                raise scope_refusal(scope, "posts", f"rewriting post {post['id']} (it is {post['state']})", role)
        plan["review"] = "review"
        return rewritten

    def save_plan(self, organization_id: str, plan: dict, claim: Optional[IdempotentResponse] = None) -> tuple:
        """Store what validate_create_post planned (for POST /posts and MCP's schedule tool alike).

        Returns ([{postId, integration}], that list as JSON, the stored answer of an earlier twin request
        with the same Idempotency-Key or None)."""
        short_link = short_links.decide_plan(self.store, self.config, organization_id, plan)  # shortlinks (issue 26)
        threads, replaced_groups = self._thread_rows(organization_id, plan)
        created = [{"postId": thread[0]["id"], "integration": thread[0]["integration_id"],
                    **({"shortLink": short_link.not_applied} if short_link.not_applied else {})} for thread in threads]
        body = json_dumps(created)
        rewritten = [thread[0]["id"] for thread in threads if thread[0]["existing"]]
        queued_before = [post for post in post_store.posts_by_id(self.store, organization_id, rewritten).values()
                         if self._in_queue(post)] if rewritten else []
        # (before the posts: a post of type "now" may be claimed by a scheduler the moment it is saved)
        short_links.remember(self.store, organization_id, threads, short_link)
        try:
            earlier = post_store.save_posts(self.store, organization_id, threads, replaced_groups, plan["tags"],
                                            claim and claim._replace(status=201, body=body))
        except PostBeingPublished as busy:
            raise _being_published(busy.post_id) from None
        except queue_store.QueueFull as full:
            raise queue.full_refusal(self.store, organization_id, full.channel_id) from None
        if earlier is None:
            self._announce_review(organization_id, plan, [item["postId"] for item in created])
            for event, existing in (("post.created", False), ("post.updated", True)):
                self.tell_webhooks(organization_id, event, [thread[0]["id"] for thread in threads
                                                            if thread[0]["existing"] is existing])
        for post in queued_before:  # (a queued post rewritten with a date of its own, "now": the rest move up)
            self._left_queue(organization_id, post, True)
        return created, body, earlier

    def _announce_review(self, organization_id: str, plan: dict, post_ids: list) -> None:
        """A plan saved for review: mailed to the reviewers whose preference is on (when mail is configured)."""
        if plan.get("review") == "review":
            from . import mail
            mail.drafts_await_review(self.store, self.config, organization_id, post_ids,
                                     [post["integration"]["name"] for post in plan["posts"]])

    def planned_rows(self, organization_id: str, plan: dict) -> tuple:
        """What save_plan would write for a plan, written later by the caller (an import stores many at once)."""
        return self._thread_rows(organization_id, plan)

    def _thread_rows(self, organization_id: str, plan: dict, keep_group: Optional[str] = None) -> tuple:
        """The rows to write for a validated plan, and the groups whose leftover posts are to be deleted.

        A value id naming a live post of the organization updates that post in place, and the rest of
        its old group is replaced (a thread edit that drops a reply deletes it); an unknown id is ignored.
        A `group` given in the body soft-deletes that group's posts (Postiz's edit semantics)."""
        wanted = [value["id"] for post in plan["posts"] for value in post["values"] if value.get("id")]
        existing = post_store.posts_by_id(self.store, organization_id, wanted) if wanted else {}
        replaced_groups = {post["group"] for post in plan["posts"] if post.get("group")}
        threads, claimed = [], set()
        made_together = new_uuid()  # (the channels' threads of one request: one post in the web app)
        for post in plan["posts"]:
            current = [existing.get(value.get("id")) if value.get("id") not in claimed else None
                       for value in post["values"]]
            claimed.update(row["id"] for row in current if row)
            self._refuse_unsafe_rewrite(plan, post, current)
            replaced_groups.update(row["group"] for row in current if row)
            state = self._state_after_write(plan["type"], current[0])
            if state == "QUEUE" and plan["type"] != "queue":
                self.refuse_missed_date(plan["date"])
            group, parent, rows = keep_group or new_uuid(), None, []
            multi_channel_group = next((row["multiChannelGroup"] for row in current if row), None) or made_together
            for value, row in zip(post["values"], current):
                post_id = row["id"] if row else new_cuid()
                rows.append({"id": post_id, "existing": row is not None, "state": state, "publish_date": plan["date"],
                             "integration_id": post["integration"]["id"], "content": value["content"],
                             "delay": value.get("delay") or 0, "post_group": group, "parent_post_id": parent,
                             "settings": encode_json(post["settings"]), "image": encode_json(value["image"]),
                             "creation_method": plan["creationMethod"], "interval_in_days": plan.get("inter"),
                             "repeat_until": plan.get("repeatUntil"), "repeat_count": plan.get("repeatCount"),
                             "multi_channel_group": multi_channel_group, "created_by": plan.get("createdBy")})
                if "review" in plan:
                    rows[-1]["review"] = plan["review"]
                parent = post_id
            self._queue_marks(organization_id, plan, rows)
            threads.append(rows)
        return threads, replaced_groups

    def _queue_marks(self, organization_id: str, plan: dict, rows: list) -> None:
        """Issue 26: a thread of type "queue" carries the times its channel offers (storage picks the first free
        one when it writes), and the root its evergreen mark when the plan sets one."""
        root = rows[0]
        root["evergreen"] = plan.get("evergreen")
        if plan["type"] == "queue":
            channel = channel_store.channel_row(self.store, organization_id, root["integration_id"])
            root["queue_slots"] = queue.offered_slots(self.store, organization_id, channel) if channel else []
            for row in rows:  # (the first offered time until storage picks the free one)
                row["publish_date"] = root["queue_slots"][0] if root["queue_slots"] else utc_now_iso()

    @route_options(scope="posts", audit="post.edited")  # (an editor may: the role editor, or a full key)
    @documented("Merge provider settings into a main post",
                ("200", object_schema({"postId": STRING, "publishDate": STRING})), "BadRequest NotFound Conflict",
                (POST_ID,), object_schema({"settings": {"type": "object"}}))
    def update_settings(self, request: Request, organization_id: str) -> Response:
        """PUT /posts/:id/settings {"settings": {...}}: merge keys into a main post's settings, re-validated.

        Content, date and group stay; the post is not re-queued. Errors are Postiz's, in its order."""
        body = json_object(request)
        settings = body.get("settings")
        if not isinstance(settings, dict):
            raise bad_request((["settings should not be null or undefined"] if settings is None else [])
                              + ["settings must be an object"])
        return json_response(self.change_settings(organization_id, request.params["id"], settings))

    def change_settings(self, organization_id: str, post_id: str, settings: dict) -> dict:
        """Merge `settings` into a main post's settings, re-validated; {postId, publishDate}. Raises ApiError."""
        post = self._post_or_404(organization_id, post_id)
        if post["parentPostId"] is not None:
            raise bad_request("This id belongs to a comment, pass the id of the main post")
        if post["state"] not in ("QUEUE", "DRAFT"):
            raise bad_request("Only scheduled posts that were not published yet (or drafts) can be updated")
        if post["state"] == "QUEUE" and post["publishDate"] < utc_now_iso():
            raise bad_request("The publish time of this post already passed, it cannot be updated")
        thread = post_store.thread(self.store, organization_id, post["group"])
        merged = {**_load_json(post["settings"], {}), **settings}
        try:
            plan = self._revalidate(organization_id, thread, settings=merged)
        except ApiError as refused:
            raise bad_request(self._settings_problem(refused, thread)) from None
        if not post_store.update_post_fields(self.store, organization_id, [part["id"] for part in thread],
                                             only_in_states=("QUEUE", "DRAFT"),
                                             settings=encode_json(plan["posts"][0]["settings"])):
            raise _being_published(post["id"])
        self.tell_webhooks(organization_id, "post.updated", [post["id"]])
        return {"postId": post["id"], "publishDate": post["publishDate"][:19]}

    def _settings_problem(self, refused: ApiError, thread: list) -> str:
        """Postiz's wording on the settings route: "<channel name>: <what is wrong>"."""
        channel = channel_store.channel(self.store, thread[0]["organizationId"], thread[0]["integrationId"])
        message = refused.body.get("message") if isinstance(refused.body, dict) else None
        if isinstance(message, list):  # the DTO's "posts.0.settings.<field> <rule>" messages
            message = message[0].split(".settings.", 1)[-1] if message else None
        elif message == "post is too long, please fix it":
            limit = provider_max_length(channel["provider_identifier"], channel["additional_settings"],
                                        channel["limits"])
            message = f"The maximum characters is {limit}"
        return f"{channel['name']}: {message or 'Please fix your settings'}"

    _EDITABLE_FIELDS = ("content", "image", "date", "settings", "shortLink", "evergreen") + REPEAT_END_FIELDS

    @route_options(scope="drafts", audit="post.edited")  # (a drafts key edits drafts only: checked below)
    @documented("Edit a post not yet published (rustiz)", ("200", ref("Post")), "PostRejected NotFound Conflict",
                (POST_ID,), ref("PostEdit"))
    def edit_post(self, request: Request, organization_id: str) -> Response:
        """PUT /posts/:id (rustiz): change content, media, date or settings of a post not published yet.

        Validated like POST /posts; the post keeps its id, group, state, tags and thread. Settings are
        merged into the current ones. A queued post with a date in the past is published at once."""
        body = json_object(request)
        problems = [f"property {name} should not exist" for name in body if name not in self._EDITABLE_FIELDS]
        for name, wanted, check in (("content", "a string", lambda v: isinstance(v, str)),
                                    ("image", "an array", lambda v: isinstance(v, list)),
                                    ("settings", "an object", lambda v: isinstance(v, dict)),
                                    ("shortLink", "a boolean value", lambda v: isinstance(v, bool)),
                                    ("evergreen", "a boolean value", lambda v: isinstance(v, bool))):
            if name in body and not check(body[name]):
                problems.append(f"{name} must be {wanted}")
        if "date" in body and parse_iso_instant(body["date"]) is None:
            problems.append("date must be a valid ISO 8601 date string")
        if problems:
            raise bad_request(problems)
        post = self._post_or_404(organization_id, request.params["id"])
        if post["state"] in ("PUBLISHED", "PUBLISHING"):
            raise nest_error(409, f"Post {post['id']} is {post['state']}, so it can no longer be edited. To publish "
                                  f"it again, POST /posts with its id as value[0].id and \"republish\": true")
        if post["state"] != "DRAFT":
            Guard.check_scope(request, "posts", f"editing post {post['id']} (it is {post['state']})")
        self.refuse_others_draft(request, organization_id, post["id"])
        thread = post_store.thread(self.store, organization_id, post["group"])
        edits = {name: body[name] for name in ("content", "image") if name in body}
        settings = {**_load_json(thread[0]["settings"], {}), **body.get("settings", {})}
        plan = self._revalidate(organization_id, thread, settings=settings, edited_id=post["id"], edits=edits,
                                date=body.get("date"),
                                repeat={name: body[name] for name in REPEAT_END_FIELDS if name in body})
        plan["evergreen"] = body.get("evergreen")
        in_queue = self._in_queue(thread[0])
        if not scope_allows(request.scope, "posts"):  # changed by an agent or an author: reviewed (again)
            plan["review"] = "review"
        threads, replaced_groups = self._thread_rows(organization_id, plan, keep_group=post["group"])
        short_link = None  # shortlinks (issue 26): a shortLink sent with the edit replaces the one stored
        if "shortLink" in body:
            short_link = short_links.decide_plan(self.store, self.config, organization_id, {**plan, "shortLink": body["shortLink"]})
            short_links.remember(self.store, organization_id, threads, short_link)
        tags = post_store.post_tags(self.store, [thread[0]["id"]]).get(thread[0]["id"], [])
        try:
            post_store.save_posts(self.store, organization_id, threads, replaced_groups,
                                  [tag["tag"]["name"] for tag in tags])
        except PostBeingPublished as busy:
            raise _being_published(busy.post_id) from None
        self._announce_review(organization_id, plan, [thread[0]["id"]])
        self.tell_webhooks(organization_id, "post.updated", [thread[0]["id"]])
        self._left_queue(organization_id, thread[0], in_queue)
        answer = self._full_view(organization_id, post_store.post(self.store, organization_id, post["id"]))
        return json_response({**answer, **({"shortLink": short_link.not_applied} if short_link and short_link.not_applied
                                           else {})})

    def refuse_others_draft(self, request: Request, organization_id: str, post_id: str) -> None:
        """An author changes only the drafts they made (403 otherwise); editors and admins change any post."""
        if request.role == "author" and post_store.post_author(self.store, organization_id, post_id) != request.user:
            raise nest_error(403, f"Post {post_id} is not one of your drafts: your role in this organization is "
                                  "'author', which changes only the drafts you wrote. Ask an editor or an admin")

    def _revalidate(self, organization_id: str, thread: list, settings: dict, edited_id: Optional[str] = None,
                    edits: Optional[dict] = None, date: Optional[str] = None,
                    request_type: Optional[str] = None, repeat: Optional[dict] = None) -> dict:
        """The stored thread, with edits, through validate_create_post as the CreatePost body that would make it.

        By default a draft is checked as a draft, anything else as an update (so its state does not change).
        `repeat`: a new end (repeatUntil or repeatCount, null: none), which replaces the stored one."""
        root = thread[0]
        values = [{"id": part["id"], "content": part["content"], "image": _load_json(part["image"], []),
                   "delay": part["delay"], **(edits if part["id"] == edited_id else {})} for part in thread]
        body = {"type": request_type or ("draft" if root["state"] == "DRAFT" else "update"),
                "date": date or root["publishDate"],
                "shortLink": False, "tags": [],
                "posts": [{"integration": {"id": root["integrationId"]}, "value": values, "settings": settings}]}
        if root["intervalInDays"]:
            body["inter"] = root["intervalInDays"]
        body.update(repeat or dict(zip(REPEAT_END_FIELDS, post_store.repeat_end(self.store, root["id"])[1:])))
        plan = validate_create_post(body, lambda channel_id: channel_store.channel(self.store, organization_id, channel_id),
                                    self.config.frontend_url,
                                    lambda urls: media_store.media_ids_by_path(self.store, organization_id, urls))
        plan["creationMethod"] = root["creationMethod"]  # an edit does not change who created the post
        return plan

    @staticmethod
    def _state_after_write(request_type: str, current_root: Optional[dict]) -> str:
        """draft -> DRAFT; update keeps the state (a new post starts queued); anything else -> QUEUE."""
        if request_type == "draft":
            return "DRAFT"
        if request_type == "update" and current_root is not None:
            return current_root["state"]
        return "QUEUE"

    @staticmethod
    def _refuse_unsafe_rewrite(plan: dict, post: dict, current: list) -> None:
        """Postiz's republish guard, and rustiz's refusal to rewrite a post while it is being published."""
        for row in current:
            if row and row["state"] == "PUBLISHING":
                raise _being_published(row["id"])
        root = current[0]
        if (root and root["state"] == "PUBLISHED" and plan["type"] not in ("draft", "update")
                and plan.get("republish") is not True):
            published = root["publishDate"][:10] + " " + root["publishDate"][11:16]
            raise bad_request(
                f"This post was already published on {published} UTC. Saving it this way would publish it again "
                f"to {post['integration']['provider_identifier']}. To edit without republishing, use type 'update'. "
                f"To intentionally publish again, pass republish: true.")
