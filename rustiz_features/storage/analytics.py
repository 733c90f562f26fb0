"""Analytics snapshots (rustiz_features/analytics_snapshots.py): a channel's figures per day, a published post's
figures at 1 h, 24 h and 7 days, and the claims that make each snapshot taken once.

Rules:
- One row per channel+metric+day (analytics_day) and per post+age+metric (analytics_post), written with an
  UPSERT: taking a snapshot again replaces its figures, never adds rows.
- A snapshot is taken by whoever claims its subject ("day:<channel>:<YYYY-MM-DD>", "post:<post>:<age>"): the
  claim row's insert (or taking over a lease that ran out) is won by one process only; `done` then says it
  is taken, or failed for good (a channel's day: it is tried again the next day).
- Days are UTC dates 'YYYY-MM-DD'; instants are posts' stored form; totals are numbers (REAL).
"""
from __future__ import annotations

from typing import Optional

from rustiz import Store, iso_at, utc_now_iso

SNAPSHOT_AGES = (("1h", 3600), ("24h", 86400), ("7d", 7 * 86400))


def claim_snapshot(store: Store, subject: str, owner: str, now: float, lease_seconds: float) -> bool:
    """Whether `owner` now holds the snapshot `subject`: a new claim, or one whose holder's lease ran out
    without taking it."""
    with store.writing(no_channels=True) as db:
        if db.execute("INSERT INTO analytics_claim (subject, owner, lease_until, created_at) VALUES (?, ?, ?, ?) "
                      "ON CONFLICT (subject) DO NOTHING", (subject, owner, now + lease_seconds,
                                                           utc_now_iso())).rowcount == 1:
            return True
        return db.execute("UPDATE analytics_claim SET owner = ?, lease_until = ? WHERE subject = ? AND done = 0 "
                          "AND lease_until < ?", (owner, now + lease_seconds, subject, now)).rowcount == 1


def finish_claim(store: Store, subject: str, owner: str, retry_at: Optional[float] = None) -> None:
    """The snapshot is taken (or given up for its day); with `retry_at`, it may be claimed again from then."""
    with store.writing(no_channels=True) as db:
        if retry_at is None:
            db.execute("UPDATE analytics_claim SET done = 1 WHERE subject = ? AND owner = ?", (subject, owner))
        else:
            db.execute("UPDATE analytics_claim SET lease_until = ? WHERE subject = ? AND owner = ?",
                       (retry_at, subject, owner))


def save_channel_day(store: Store, channel_id: str, day: str, figures: dict) -> None:
    """A channel's figures ({metric: number}) for one day, replacing what that day had for those metrics."""
    _save_figures(store, "analytics_day", {"integration_id": channel_id, "day": day}, figures)


def save_post_age(store: Store, post_id: str, age: str, figures: dict) -> None:
    """A post's figures ({metric: number}) at one age ("1h", "24h", "7d")."""
    _save_figures(store, "analytics_post", {"post_id": post_id, "age": age}, figures)


def _save_figures(store: Store, table: str, keys: dict, figures: dict) -> None:
    """One row of `table` per figure, under `keys` (column -> value; names from code), replaced if there."""
    names = ", ".join(keys)
    sql = (f"INSERT INTO {table} ({names}, metric, total, taken_at) VALUES ({'?, ' * len(keys)}?, ?, ?) "
           f"ON CONFLICT ({names}, metric) DO UPDATE SET total = excluded.total, taken_at = excluded.taken_at")
    now = utc_now_iso()
    with store.writing(no_channels=True) as db:
        for metric, total in figures.items():
            db.execute(sql, (*keys.values(), metric, total, now))


def channel_days(store: Store, channel_id: str, first_day: str) -> list:
    """[(metric, day, total)] of a channel from `first_day` on, by metric then day."""
    return store.read("SELECT metric, day, total FROM analytics_day WHERE integration_id = ? AND day >= ? "
                      "ORDER BY metric, day", (channel_id, first_day)).fetchall()


def has_channel_days(store: Store, channel_id: str) -> bool:
    return store.read("SELECT 1 FROM analytics_day WHERE integration_id = ? LIMIT 1", (channel_id,)).fetchone() is not None


def post_ages(store: Store, post_id: str) -> list:
    """[(age, metric, total, taken_at)] of one post's snapshots."""
    return store.read("SELECT age, metric, total, taken_at FROM analytics_post WHERE post_id = ? ORDER BY metric",
                      (post_id,)).fetchall()


def channels_to_snapshot(store: Store, day: str, limit: int) -> list:
    """[{id, name, provider, organization_id}] of the live, enabled, connected channels whose snapshot of `day`
    nobody has taken or claimed yet (a claim whose lease ran out counts as not taken)."""
    rows = store.read(
        "SELECT i.id, i.name, i.provider_identifier, i.organization_id FROM integration i WHERE i.deleted_at IS NULL "
        "AND i.disabled = 0 AND i.refresh_needed = 0 AND NOT EXISTS (SELECT 1 FROM analytics_claim c WHERE "
        "c.subject = 'day:' || i.id || ':' || ? AND c.done = 1) ORDER BY i.id LIMIT ?", (day, limit)).fetchall()
    return [dict(zip(("id", "name", "provider", "organization_id"), row)) for row in rows]


def posts_to_snapshot(store: Store, now: float, limit: int) -> list:
    """[{id, channel_id, name, provider, release_id, release_url, age}] of published posts (a thread's first) that have reached an
    age whose snapshot is not taken, while the next age is not reached (a 1 h snapshot missed for a day is
    skipped: the 24 h one stands for it), oldest first."""
    found: list = []
    for index, (age, seconds) in enumerate(SNAPSHOT_AGES):
        until = SNAPSHOT_AGES[index + 1][1] if index + 1 < len(SNAPSHOT_AGES) else 2 * seconds
        rows = store.read(
            "SELECT p.id, i.id, i.name, i.provider_identifier, p.release_id, p.release_url FROM post p JOIN "
            "integration i ON i.id = p.integration_id WHERE p.state = 'PUBLISHED' AND p.deleted_at IS NULL "
            "AND p.parent_post_id IS NULL AND p.release_id IS NOT NULL AND p.release_id <> 'missing' "
            "AND p.published_at IS NOT NULL "
            "AND p.published_at <= ? AND p.published_at > ? AND i.deleted_at IS NULL AND i.disabled = 0 "
            "AND i.refresh_needed = 0 AND NOT EXISTS (SELECT 1 FROM analytics_claim c WHERE c.subject = "
            "'post:' || p.id || ':' || ? AND (c.done = 1 OR c.lease_until >= ?)) ORDER BY p.published_at LIMIT ?",
            (iso_at(now - seconds), iso_at(now - until), age, now, limit - len(found))).fetchall()
        found += [dict(zip(("id", "channel_id", "name", "provider", "release_id", "release_url"), row), age=age)
                  for row in rows]
        if len(found) >= limit:
            break
    return found


def engagement_by_post(store: Store, channel_id: str) -> list:
    """[(post id, publish instant, age, summed figures)] of the channel's published posts that have a 24 h or
    7 d snapshot (one row per post and age)."""
    return store.read(
        "SELECT p.id, p.published_at, a.age, SUM(a.total) FROM analytics_post a JOIN post p ON p.id = a.post_id "
        "WHERE p.integration_id = ? AND p.deleted_at IS NULL AND p.state = 'PUBLISHED' AND a.age IN ('24h', '7d') "
        "GROUP BY p.id, p.published_at, a.age", (channel_id,)).fetchall()


def forget_old_snapshots(store: Store, keep_days: int, now: float) -> int:
    """Snapshots and claims older than `keep_days` removed; how many rows."""
    before = iso_at(now - keep_days * 86400)
    with store.writing(no_channels=True) as db:
        return sum(db.execute(sql, (value,)).rowcount for sql, value in (
            ("DELETE FROM analytics_day WHERE day < ?", before[:10]),
            ("DELETE FROM analytics_post WHERE taken_at < ?", before),
            ("DELETE FROM analytics_claim WHERE created_at < ?", before)))
