"""Recurring posts: every n days at the same local time in the organization's timezone.

Rules:
- The local wall-clock time stays the same across daylight-saving changes; a local time that does not
  exist on a day goes out at the first valid minute after it, and an ambiguous one once (the first).
- A series may end (repeatUntil, repeatCount): never before its first occurrence, which always counts.
- Pure functions of dates and zones; zoneinfo is imported on first use.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from rustiz import iso_ms, log, parse_iso_instant

if TYPE_CHECKING:  # (imported by each function on first use)
    import datetime


def zoned_instant(local: "datetime.datetime", zone: "datetime.tzinfo") -> "datetime.datetime":
    """The UTC instant of a local wall-clock time (naive) in `zone`. A time the clocks pass twice (fall back)
    is the first of the two; a time they skip (spring forward) becomes the first minute after the skip.
    Raises OverflowError at the calendar's ends."""
    import datetime
    utc = datetime.timezone.utc
    instant = local.replace(tzinfo=zone).astimezone(utc)  # fold=0: the earlier of two
    if instant.astimezone(zone).replace(tzinfo=None) == local:
        return instant
    # A skipped time: until the jump the clock reads less than `local`, from the jump on more. fold=1
    # reads it with the offset after the jump, an instant before the jump: search the minutes in between.
    before = local.replace(tzinfo=zone, fold=1).astimezone(utc).replace(second=0, microsecond=0)
    minute = datetime.timedelta(minutes=1)
    low, high = 0, -(-(instant - before) // minute)  # `before` reads less; `before + high` minutes reads more
    while high - low > 1:
        middle = (low + high) // 2
        if (before + middle * minute).astimezone(zone).replace(tzinfo=None) > local:
            high = middle
        else:
            low = middle
    return before + high * minute


class Recurrence:
    """A post repeating every `every_days` days at the local time its anchor has in the organization's
    timezone: occurrence k (from 0) is on the local day anchor + k * every_days, at that time of day, so
    daylight-saving changes do not move it (zoned_instant says what a skipped or doubled time becomes).
    The occurrences end at `last_index` when the post has an end (see ending), else with the calendar."""
    __slots__ = ("first_day", "time_of_day", "every_days", "zone", "last_index")

    def __init__(self, anchor: "datetime.datetime", every_days: int, zone: "datetime.tzinfo"):
        import datetime
        try:
            local = anchor.astimezone(zone)
        except OverflowError:  # an anchor in the first or last hours of the calendar: counted in UTC
            zone, local = datetime.timezone.utc, anchor
        self.first_day, self.time_of_day = local.date(), local.time().replace(tzinfo=None)
        self.every_days, self.zone = every_days, zone
        self.last_index: Optional[int] = None  # None: no end but the calendar's

    def ending(self, until: Optional[str], count: Optional[int]) -> "Recurrence":
        """This series ended by a repeatUntil (a local day "YYYY-MM-DD", included, or a UTC instant) or a
        repeatCount (occurrences, the first counted); the first occurrence always stays."""
        import datetime
        if count:
            self.last_index = max(0, count - 1)
        elif until and len(until) == 10:  # a day: every occurrence on that local day or before
            day = datetime.date.fromisoformat(until)
            self.last_index = max(0, (day - self.first_day).days // self.every_days)
        elif until:
            moment = parse_iso_instant(until)
            self.last_index = max(0, self.last_index_until(moment)) if moment else None
        return self

    def at(self, index: int) -> Optional["datetime.datetime"]:
        """Occurrence `index` as a UTC datetime, or None past the series' end or the calendar's."""
        import datetime
        if self.last_index is not None and index > self.last_index:
            return None
        try:
            day = self.first_day + datetime.timedelta(days=index * self.every_days)
            return zoned_instant(datetime.datetime.combine(day, self.time_of_day), self.zone)
        except OverflowError:
            return None

    def first_index_from(self, moment: "datetime.datetime") -> int:
        """The first occurrence at or after `moment` (its at() may be None: none is left)."""
        # A local day is within a day of the UTC one, so the estimate is off by a step or two at most.
        index = max(0, (moment.date() - self.first_day).days // self.every_days - 1)
        if self.last_index is not None:  # (past the end: start the walk back just after it)
            index = min(index, self.last_index + 1)
        while index > 0 and not self._earlier(index - 1, moment):
            index -= 1
        while self._earlier(index, moment):
            index += 1
        return index

    def last_index_until(self, moment: "datetime.datetime") -> int:
        """The last occurrence at or before `moment` (-1: none)."""
        index = self.first_index_from(moment)
        return index if self.at(index) == moment else index - 1

    def next_after(self, moment: "datetime.datetime") -> Optional["datetime.datetime"]:
        """The first occurrence later than `moment`, or None when the calendar ends first."""
        return self.at(self.last_index_until(moment) + 1)

    def indexes(self, after: "datetime.datetime", start: "datetime.datetime", end: "datetime.datetime") -> range:
        """The occurrences later than `after` within [start, end], counted without computing each one."""
        return range(max(self.last_index_until(after) + 1, self.first_index_from(start)),
                     self.last_index_until(end) + 1)

    def last(self) -> Optional["datetime.datetime"]:
        """The series' last occurrence, or None when it has no end (or it ends with the calendar)."""
        return None if self.last_index is None else self.at(self.last_index)

    def _earlier(self, index: int, moment: "datetime.datetime") -> bool:
        occurrence = self.at(index)
        return occurrence is not None and occurrence < moment


def recurrence_of(publish_date: str, anchor: Optional[str], every_days: int,
                  zone: "datetime.tzinfo", until: Optional[str] = None, count: Optional[int] = None) -> Recurrence:
    """The recurrence of a stored post: counted from its anchor (posts saved before anchors were kept:
    from their publish date), ended by its repeatUntil or repeatCount when it has one."""
    series = Recurrence(parse_iso_instant(anchor) or parse_iso_instant(publish_date), every_days, zone)
    return series.ending(until, count) if until or count else series


def zone_named(name: str) -> "datetime.tzinfo":
    """The organization's IANA zone (posting slots, recurring posts); UTC needs no tz database, and an unknown
    name falls back to UTC."""
    import datetime
    if name == "UTC":
        return datetime.timezone.utc
    try:
        from zoneinfo import ZoneInfo
        return ZoneInfo(name)
    except (ImportError, ValueError, OSError, KeyError):  # ZoneInfoNotFoundError is a KeyError
        log(f"unknown organization timezone {name!r}; using UTC for posting slots and recurring posts")
        return datetime.timezone.utc


def next_occurrence(publish_date: str, anchor: Optional[str], every_days: int, zone_name: str,
                    after: float, until: Optional[str] = None, count: Optional[int] = None) -> Optional[str]:
    """A recurring post's first occurrence later than `after` (a Unix time), at its local time in the
    organization's timezone; None when its end (repeatUntil, repeatCount) or the calendar's comes first."""
    import datetime
    series = recurrence_of(publish_date, anchor, every_days, zone_named(zone_name), until, count)
    moment = series.next_after(datetime.datetime.fromtimestamp(after, datetime.timezone.utc))
    return None if moment is None else iso_ms(moment)


def occurrences(publish_date: str, anchor: Optional[str], every_days: Optional[int], zone_name: str,
                until: Optional[str], count: Optional[int], now: "datetime.datetime", limit: int = 5) -> dict:
    """GET /posts/:id's "occurrences": {"next": up to `limit` dates (ISO UTC) from `now` on, the post's own
    pending date first, "last": its last date, or None when it repeats without end}."""
    published = parse_iso_instant(publish_date)
    if not every_days or every_days < 1 or published is None:  # a post that goes out once
        return {"next": [publish_date] if published is not None and published >= now else [], "last": publish_date}
    series = recurrence_of(publish_date, anchor, every_days, zone_named(zone_name), until, count)
    upcoming = [published] if published >= now else []
    index = series.first_index_from(max(now, published))
    while len(upcoming) < limit:
        moment = series.at(index)
        if moment is None:
            break
        if moment > published:
            upcoming.append(moment)
        index += 1
    last = series.last()
    if last is not None and last < published:  # (a post moved past its end by an edit: its own date is the last)
        last = published
    return {"next": [iso_ms(moment) for moment in upcoming], "last": None if last is None else iso_ms(last)}
