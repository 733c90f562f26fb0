"""Recurring posts: every n days at the same local time in the organization's timezone.

Rules:
- The local wall-clock time stays the same across daylight-saving changes; a local time that does not
  exist on a day goes out at the first valid minute after it, and an ambiguous one once (the first).
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
    The occurrences end with the calendar, at 9999-12-31."""
    __slots__ = ("first_day", "time_of_day", "every_days", "zone")

    def __init__(self, anchor: "datetime.datetime", every_days: int, zone: "datetime.tzinfo"):
        import datetime
        try:
            local = anchor.astimezone(zone)
        except OverflowError:  # an anchor in the first or last hours of the calendar: counted in UTC
            zone, local = datetime.timezone.utc, anchor
        self.first_day, self.time_of_day = local.date(), local.time().replace(tzinfo=None)
        self.every_days, self.zone = every_days, zone

    def at(self, index: int) -> Optional["datetime.datetime"]:
        """Occurrence `index` as a UTC datetime, or None past the end of the calendar."""
        import datetime
        try:
            day = self.first_day + datetime.timedelta(days=index * self.every_days)
            return zoned_instant(datetime.datetime.combine(day, self.time_of_day), self.zone)
        except OverflowError:
            return None

    def first_index_from(self, moment: "datetime.datetime") -> int:
        """The first occurrence at or after `moment` (its at() may be None: none is left)."""
        # A local day is within a day of the UTC one, so the estimate is off by a step or two at most.
        index = max(0, (moment.date() - self.first_day).days // self.every_days - 1)
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

    def _earlier(self, index: int, moment: "datetime.datetime") -> bool:
        occurrence = self.at(index)
        return occurrence is not None and occurrence < moment


def recurrence_of(publish_date: str, anchor: Optional[str], every_days: int,
                  zone: "datetime.tzinfo") -> Recurrence:
    """The recurrence of a stored post: counted from its anchor (posts saved before anchors were kept:
    from their publish date)."""
    return Recurrence(parse_iso_instant(anchor) or parse_iso_instant(publish_date), every_days, zone)


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
                    after: float) -> Optional[str]:
    """A recurring post's first occurrence later than `after` (a Unix time), at its local time in the
    organization's timezone; None when the calendar ends first."""
    import datetime
    series = recurrence_of(publish_date, anchor, every_days, zone_named(zone_name))
    moment = series.next_after(datetime.datetime.fromtimestamp(after, datetime.timezone.utc))
    return None if moment is None else iso_ms(moment)
