"""The queue's time rules (issue 26): weekly posting schedules, the slots they make, and what moves queued posts.

Rules:
- A schedule is seven lists of local times (minutes after midnight) in the organization's timezone; a time the
  clocks skip becomes the first minute after the skip, one they pass twice the first of the two (zoned_instant).
- A channel's week: its own schedule, else the organization's default when the channel was connected after it
  was set, else its daily postingTimes for every day (what find-slot always used).
- Slots are chosen and posts moved in storage.queue, inside one write transaction; this module computes the
  times offered (the next QUEUE_DAYS days) and decides when a re-flow happens.
"""
from __future__ import annotations

import datetime
import json
import re
from typing import Any, Optional

from rustiz import ApiError, Store, bad_request, iso_ms, nest_error, parse_iso_instant
from .recurrence import zone_named, zoned_instant
from .storage import channels as channel_store
from .storage import organizations as organization_store
from .storage import posts as post_store
from .storage import queue as queue_store

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
QUEUE_DAYS = 90  # how far ahead a post added to the queue looks for a free slot (409 beyond)
MAX_TIMES_A_DAY = 24
_TIME = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])")


def posting_minutes(posting_times: str) -> list:
    """Minutes after local midnight from a channel's postingTimes JSON ([{"time": 120}, ...]), sorted."""
    try:
        entries = json.loads(posting_times)
    except ValueError:
        return []
    if not isinstance(entries, list):
        return []
    minutes = {entry.get("time") for entry in entries if isinstance(entry, dict)}
    return sorted(minute for minute in minutes if type(minute) is int and 0 <= minute < 24 * 60)


def checked_schedule(body: Any, field: str = "") -> dict:
    """A weekly schedule body ({"monday": ["09:00", ...], ... all seven days}) as day -> sorted minutes
    (duplicates folded); raises ApiError (400) naming each problem."""
    prefix = f"{field}." if field else ""
    if not isinstance(body, dict):
        raise bad_request(f"{field or 'the body'} must be an object with the seven days {', '.join(DAYS)}")
    problems = [f"property {prefix}{str(name)[:40]} should not exist (the days are {', '.join(DAYS)})"
                for name in body if name not in DAYS][:8]
    problems += [f"{prefix}{day} is missing: give all seven days, [] for a day without posts"
                 for day in DAYS if day not in body]
    week = {}
    for day in DAYS:
        times = body.get(day)
        if day not in body:
            continue
        if not isinstance(times, list) or len(times) > 24 * 60:
            problems.append(f'{prefix}{day} must be a list of local times "HH:MM" (at most {MAX_TIMES_A_DAY})')
            continue
        bad = next((time for time in times if not (isinstance(time, str) and _TIME.fullmatch(time))), None)
        if bad is not None:
            problems.append(f'{prefix}{day}: {json.dumps(bad)[:40]} is not a time "HH:MM" from 00:00 to 23:59')
            continue
        minutes = sorted({int(time[:2]) * 60 + int(time[3:]) for time in times})
        if len(minutes) > MAX_TIMES_A_DAY:
            problems.append(f"{prefix}{day} has {len(minutes)} times; at most {MAX_TIMES_A_DAY} a day")
        week[day] = minutes
    if problems:
        raise bad_request(problems)
    return week


def schedule_view(week: dict) -> dict:
    """day -> ["HH:MM", ...], as the API shows a week."""
    return {day: [f"{minute // 60:02d}:{minute % 60:02d}" for minute in week.get(day, [])] for day in DAYS}


def week_text(week: Optional[dict]) -> Optional[str]:
    return None if week is None else json.dumps({day: week[day] for day in DAYS}, separators=(",", ":"))


def _week_of(text: str) -> dict:
    stored = json.loads(text)
    return {day: list(stored.get(day, [])) for day in DAYS}


def organization_week(store: Store, organization_id: str) -> Optional[dict]:
    """The organization's default week, or None."""
    default = queue_store.organization_default(store, organization_id)
    return None if default is None else _week_of(default[0])


def channel_week(store: Store, organization_id: str, channel: dict) -> tuple:
    """(day -> minutes, whether it is a weekly schedule) for a channel (a ChannelRow: id, postingTimes)."""
    own = queue_store.channel_settings(store, channel["id"])["schedule"]
    if own is not None:
        return _week_of(own), True
    default = queue_store.organization_default(store, organization_id)
    if default is not None and (queue_store.channel_created_at(store, channel["id"]) or "") >= default[1]:
        return _week_of(default[0]), True
    daily = posting_minutes(channel["postingTimes"])
    return {day: daily for day in DAYS}, False


def slot_times(week: dict, zone: datetime.tzinfo, after: datetime.datetime, days: int) -> list:
    """The UTC instants of the week's times strictly after `after`, over `days` local days from its day on."""
    first_day = after.astimezone(zone).date()
    slots = []
    for offset in range(days + 1):
        day = first_day + datetime.timedelta(days=offset)
        midnight = datetime.datetime.combine(day, datetime.time())
        for minute in week[DAYS[day.weekday()]]:
            instant = zoned_instant(midnight + datetime.timedelta(minutes=minute), zone)
            if instant > after and (not slots or instant > slots[-1]):  # (two times a skip folds into one: once)
                slots.append(instant)
    return slots


def organization_zone(store: Store, organization_id: str) -> tuple:
    """(the organization's timezone name, that zone)."""
    name = organization_store.organization_timezone(store, organization_id)
    return name, zone_named(name)


def offered_slots(store: Store, organization_id: str, channel: dict, after: Optional[datetime.datetime] = None,
                  days: int = QUEUE_DAYS) -> list:
    """The channel's slot times (ISO UTC, as stored) after `after` (default now) for `days` days."""
    now = datetime.datetime.now(datetime.timezone.utc)
    after = max(after or now, now)
    week, _ = channel_week(store, organization_id, channel)
    _, zone = organization_zone(store, organization_id)
    return [iso_ms(slot) for slot in slot_times(week, zone, after, days)]


def first_free_slot(store: Store, organization_id: str, channel: dict) -> tuple:
    """(the channel's offered slot times, the first that no root post of the channel holds, or None)."""
    offered = offered_slots(store, organization_id, channel)
    taken = {date[:16] for date in post_store.queued_publish_dates(store, channel["id"], offered[0][:16])} \
        if offered else set()
    return offered, next((time for time in offered if time[:16] not in taken), None)


def full_refusal(store: Store, organization_id: str, channel_id: str) -> ApiError:
    """What POST /posts answers when a channel's queue has no free slot: why, and what to do."""
    channel = channel_store.channel_row(store, organization_id, channel_id)
    name = channel["name"] if channel else channel_id
    schedule, dated = f"PUT /public/v1/integrations/{channel_id}/schedule", 'give this post a date (type "schedule")'
    if channel is None or not offered_slots(store, organization_id, channel):
        return bad_request(f"Channel {name} has no posting times, so it has no queue: give it a schedule "
                           f"({schedule}), or {dated}")
    return nest_error(409, f"The queue of channel {name} is full: every slot of its posting schedule in the next "
                           f"{QUEUE_DAYS} days already has a post. Add times to its schedule ({schedule}), or {dated}")


def in_queue(store: Store, post_id: str) -> bool:
    """Whether a post holds a slot of its channel's queue now."""
    return queue_store.post_marks(store, [post_id]).get(post_id, {}).get("inQueue", False)


def after_leaving(store: Store, organization_id: str, post: dict) -> None:
    """A queued post (as it was) may have left its slot (deleted, published now, given a date of its own): if so
    and the channel's re-flow is on, the later queued posts move up one slot each."""
    channel = channel_store.channel_row(store, organization_id, post["integrationId"])
    if channel is None or in_queue(store, post["id"]) or not queue_store.channel_settings(store, channel["id"])["reflow"]:
        return
    slot = post["publishDate"]
    queue_store.reflow(store, channel["id"], slot, offered_slots(
        store, organization_id, channel, parse_iso_instant(slot) - datetime.timedelta(seconds=1)))


def resume(store: Store, organization_id: str, channel: dict) -> None:
    """A paused queue resumed: every queued post, from the first, moves in order to the next slots from now
    (posts whose slot passed while paused are not published late in a burst)."""
    queue_store.reflow(store, channel["id"], "", offered_slots(store, organization_id, channel))
