"""The queue's routes (issue 26): a channel's weekly schedule, its queue (slots with their posts), the order of
its queued posts, and its switches (paused, re-flow, evergreen and its cooldown).

Rules:
- Every lookup is scoped by the caller's organization: another organization's channel or post answers 404 /
  is refused like an unknown one.
- Handlers only check and shape; the times are queue.py's, the rows storage.queue's.
"""
from __future__ import annotations

import datetime
from typing import Any

from rustiz import (
    App, Request, Response, bad_request, iso_ms, json_object, json_response, nest_error, not_found, route_options,
)
from .api_channels import INTEGRATION_NOT_FOUND
from .api_docs import BOOLEAN, CHANNEL_ID, INTEGER, STRING, array_of, documented, object_schema, parameter, ref
from .api_posts import listing_item
from . import queue
from .storage import channels as channel_store
from .storage import posts as post_store
from .storage import queue as queue_store

MAX_QUEUE_DAYS, DEFAULT_QUEUE_DAYS = 90, 14
MAX_COOLDOWN_DAYS = 3650
PAUSED_NOTE = ("Paused: none of these queued posts is published. When the queue is resumed, they move in their order "
               "to the next slots from then on; a post whose slot passed meanwhile is not published late.")
_TIMES = array_of(STRING)
_WEEK = object_schema({day: _TIMES for day in queue.DAYS})
_SETTINGS = object_schema({"paused": BOOLEAN, "reflow": BOOLEAN, "evergreen": BOOLEAN,
                           "evergreenCooldownDays": INTEGER})
_QUEUE = object_schema({"integration": STRING, "paused": BOOLEAN, "reflow": BOOLEAN, "evergreen": BOOLEAN,
                        "evergreenCooldownDays": INTEGER, "note": {"type": ["string", "null"]},
                        "slots": array_of(object_schema({"date": STRING, "post": ref("ListedPost"),
                                                         "evergreen": BOOLEAN}))})


def _settings_view(settings: dict) -> dict:
    return {name: settings[name] for name in ("paused", "reflow", "evergreen", "evergreenCooldownDays")}


class QueueApi:
    """GET/PUT /integrations/:id/schedule, PUT /integrations/:id/queue, GET /queue, POST /queue/reorder."""

    def __init__(self, app: App):
        self.store = app.store

    def _channel(self, organization_id: str, channel_id: Any) -> dict:
        channel = channel_store.channel_row(self.store, organization_id, channel_id) \
            if isinstance(channel_id, str) and channel_id else None
        if channel is None:
            raise not_found(INTEGRATION_NOT_FOUND)
        return channel

    @documented("The channel's weekly posting schedule (rustiz, issue 26)",
                ("200", object_schema({**{day: _TIMES for day in queue.DAYS}, "weekly": BOOLEAN})), "NotFound",
                (CHANNEL_ID,))
    def show_schedule(self, request: Request, organization_id: str) -> Response:
        """weekly false: no weekly schedule; the seven lists show the daily postingTimes it uses every day."""
        channel = self._channel(organization_id, request.params["id"])
        week, weekly = queue.channel_week(self.store, organization_id, channel)
        return json_response({**queue.schedule_view(week), "weekly": weekly})

    @route_options(scope="posts", audit="channel.updated")
    @documented("Replace the channel's weekly posting schedule (rustiz, issue 26)",
                ("200", object_schema({**{day: _TIMES for day in queue.DAYS}, "weekly": BOOLEAN})),
                "BadRequest NotFound", (CHANNEL_ID,), _WEEK)
    def update_schedule(self, request: Request, organization_id: str) -> Response:
        """All seven days, each a list of local "HH:MM" times (the organization's timezone). Posts already in
        the queue keep their times; new ones take the new slots."""
        channel = self._channel(organization_id, request.params["id"])
        week = queue.checked_schedule(json_object(request))
        queue_store.update_channel_settings(self.store, channel["id"], {"schedule": queue.week_text(week)})
        return json_response({**queue.schedule_view(week), "weekly": True})

    @route_options(scope="posts", audit="channel.updated")
    @documented("The channel's queue switches (rustiz, issue 26)", ("200", _SETTINGS), "BadRequest NotFound",
                (CHANNEL_ID,), _SETTINGS)
    def update_settings(self, request: Request, organization_id: str) -> Response:
        """Any of paused, reflow, evergreen (booleans) and evergreenCooldownDays (1 to 3650). Resuming a paused
        queue moves its posts, in order, to the next slots from now."""
        channel = self._channel(organization_id, request.params["id"])
        body = json_object(request)
        problems = [f"property {str(name)[:40]} should not exist (send paused, reflow, evergreen, "
                    "evergreenCooldownDays)" for name in body if name not in queue_store.SETTINGS_DEFAULTS
                    or name == "schedule"][:5]
        problems += [f"{name} must be a boolean value" for name in ("paused", "reflow", "evergreen")
                     if name in body and not isinstance(body[name], bool)]
        cooldown = body.get("evergreenCooldownDays")
        if "evergreenCooldownDays" in body and not (type(cooldown) is int and 1 <= cooldown <= MAX_COOLDOWN_DAYS):
            problems.append(f"evergreenCooldownDays must be a whole number of days from 1 to {MAX_COOLDOWN_DAYS}")
        if problems:
            raise bad_request(problems)
        before = queue_store.channel_settings(self.store, channel["id"])
        changes = {name: body[name] for name in ("paused", "reflow", "evergreen", "evergreenCooldownDays")
                   if name in body}
        if changes:
            queue_store.update_channel_settings(self.store, channel["id"], changes)
        if before["paused"] and body.get("paused") is False:
            queue.resume(self.store, organization_id, channel)
        return json_response(_settings_view(queue_store.channel_settings(self.store, channel["id"])))

    @documented("A channel's queue: its next slots, with their posts and the empty ones (rustiz, issue 26)",
                ("200", _QUEUE), "BadRequest NotFound",
                (parameter("query", "integration", "The channel", True),
                 parameter("query", "days", f"How many days ahead, 1 to {MAX_QUEUE_DAYS} (default {DEFAULT_QUEUE_DAYS})",
                           schema={"type": "integer", "minimum": 1, "maximum": MAX_QUEUE_DAYS})))
    def show_queue(self, request: Request, organization_id: str) -> Response:
        days_text = request.query.get("days", str(DEFAULT_QUEUE_DAYS)).strip()
        if not (days_text.isdigit() and len(days_text) <= 3 and 1 <= int(days_text) <= MAX_QUEUE_DAYS):
            raise bad_request(f"days must be a whole number from 1 to {MAX_QUEUE_DAYS}")
        channel = self._channel(organization_id, request.query.get("integration"))
        return json_response(self.queue_view(organization_id, channel, int(days_text)))

    def queue_view(self, organization_id: str, channel: dict, days: int = DEFAULT_QUEUE_DAYS) -> dict:
        """GET /queue's answer: the slots of the next `days` days in time order, each with the root post on it
        (queued, or with a date of its own), and the queued posts whose slot is elsewhere (a past slot of a
        paused queue, a time the schedule no longer has)."""
        settings = queue_store.channel_settings(self.store, channel["id"])
        now = datetime.datetime.now(datetime.timezone.utc)
        slots = queue.offered_slots(self.store, organization_id, channel, now, days)
        queued = queue_store.queued_posts(self.store, channel["id"])
        end = slots[-1] if slots else iso_ms(now + datetime.timedelta(days=days))
        start = min([iso_ms(now)] + [row[2] for row in queued])
        posts = [post for post in post_store.root_posts_for_listing(self.store, organization_id, start, end, None)
                 if post["integrationId"] == channel["id"] and post["state"] in ("QUEUE", "PUBLISHING")
                 and start <= post["publishDate"] <= end]
        tags = post_store.post_tags(self.store, [post["id"] for post in posts])
        marks = queue_store.post_marks(self.store, [post["id"] for post in posts])
        by_minute = {post["publishDate"][:16]: listing_item(post, tags.get(post["id"], []), marks) for post in posts}
        times = sorted(set(slots) | {post["publishDate"] for post in posts if marks.get(post["id"], {}).get("inQueue")})
        evergreen_left = self._evergreen_waiting(channel, settings)
        answer = []
        for time in times:
            post = by_minute.get(time[:16])
            answer.append({"date": time, "post": post, "evergreen": post is None and evergreen_left > 0})
            evergreen_left -= post is None and evergreen_left > 0
        return {"integration": channel["id"], **_settings_view(settings),
                "note": PAUSED_NOTE if settings["paused"] else None, "slots": answer}

    def _evergreen_waiting(self, channel: dict, settings: dict) -> int:
        """How many evergreen posts would be queued again now (the queue marks as many empty slots)."""
        if not settings["evergreen"] or settings["paused"]:
            return 0
        from .evergreen import cooled_down_before
        return len(queue_store.evergreen_candidates(self.store, channel["id"], cooled_down_before(settings)))

    @route_options(scope="posts", audit="post.edited")
    @documented("Put a channel's queued posts in a new order (rustiz, issue 26)", ("200", _QUEUE),
                "BadRequest NotFound Conflict", request=object_schema({"integration": STRING,
                                                                        "postIds": array_of(STRING)}))
    def reorder(self, request: Request, organization_id: str) -> Response:
        """postIds: exactly the channel's queued posts (their root post ids, each once) in their new order; the
        slots they hold stay, the posts change places."""
        body = json_object(request)
        channel = self._channel(organization_id, body.get("integration"))
        post_ids = body.get("postIds")
        if not (isinstance(post_ids, list) and all(isinstance(item, str) for item in post_ids)
                and len(post_ids) <= 10_000):
            raise bad_request("postIds must be a list of post ids (the channel's queued posts, in their new order)")
        queued = [row[0] for row in queue_store.queued_posts(self.store, channel["id"])]
        if len(set(post_ids)) != len(post_ids) or sorted(post_ids) != sorted(queued):
            unknown = [item for item in post_ids if item not in queued][:5]
            missing = [item for item in queued if item not in post_ids][:5]
            raise bad_request(
                "postIds must list exactly the channel's queued posts, each once (GET /public/v1/queue?integration="
                f"{channel['id']} lists them)" + (f"; not queued on this channel: {', '.join(unknown)}" if unknown else "")
                + (f"; missing: {', '.join(missing)}" if missing else ""))
        if not queue_store.reorder(self.store, channel["id"], post_ids):
            raise nest_error(409, "The queue changed meanwhile (a post was added, published or deleted): read it again "
                                  "(GET /public/v1/queue) and send the new order")
        return json_response(self.queue_view(organization_id, channel))
