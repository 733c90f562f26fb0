"""The daily digest: at 08:00 in each organization's timezone, to each member who turned it on, what went out
yesterday (with links), what is due today, and what failed yesterday.

Rules:
- Looked for once a minute (RUSTIZ_MAIL_DIGEST_CHECK_SECONDS) by the process that runs the scheduler (on
  PostgreSQL, by every process: the outbox's dedupe key `digest:<organization>:<person>:<local date>` makes
  sure one mail a day goes out, whoever queues it first).
- It goes out at RUSTIZ_MAIL_DIGEST_AT (08:00 by default) local time, or later that day when rustiz was not
  running then; never for a day already past.
- "Yesterday" and "today" are the organization's local days; a day with nothing to say sends no digest.
- It imports mail (never the other way), and writes only outbox rows (mail.queue_mail); the MailSender sends them.
"""
from __future__ import annotations

import datetime
import sqlite3
import time
from typing import Optional

from rustiz import Config, Store, iso_ms, log
from .alerts import numeric_setting, post_link
from .mail import escape, html_mail, mail_configured, queue_mail
from .recurrence import zone_named
from .storage import mail as mail_store
from .text import html_to_text

DIGEST_CHECK_SECONDS = 60.0
LISTED = 25  # posts listed per section; more are counted
EXCERPT = 80  # characters of a post's text in the digest


def digest_time(settings: Optional[dict]) -> datetime.time:
    """RUSTIZ_MAIL_DIGEST_AT ("08:00" by default): the local time the digest goes out."""
    raw = (settings or {}).get("RUSTIZ_MAIL_DIGEST_AT", "").strip()
    if raw:
        try:
            return datetime.time.fromisoformat(raw)
        except ValueError:
            log(f"RUSTIZ_MAIL_DIGEST_AT must be a time such as 08:00; got {raw[:40]!r}: using 08:00")
    return datetime.time(8, 0)


class DailyDigests:
    """Ticked every second by the scheduler; once a minute it queues the digests that are due."""

    def __init__(self, config: Config, store: Store):
        self.config, self.store = config, store
        self.at = digest_time(config.settings)
        self.check_seconds = numeric_setting(config.settings, "RUSTIZ_MAIL_DIGEST_CHECK_SECONDS",
                                             DIGEST_CHECK_SECONDS, 0.1, 3600)
        self.checked_at = 0.0

    def tick(self) -> None:
        now = time.time()
        if not mail_configured(self.config) or now - self.checked_at < self.check_seconds:
            return
        self.checked_at = now
        try:
            queue_due_digests(self.config, self.store, self.at, now)
        except sqlite3.Error as error:
            log(f"digest: the database failed ({error}); trying again in a minute")


def queue_due_digests(config: Config, store: Store, at: datetime.time, now: float) -> int:
    """Queue today's digest of each subscriber whose organization's local time is past `at`; how many."""
    due = []  # (organization id, name, local time, user id, email, dedupe key) of the digests due today
    for organization_id, name, timezone, user_id, email in mail_store.digest_subscribers(store):
        local = datetime.datetime.fromtimestamp(now, zone_named(timezone or "UTC"))
        if local.time() >= at:
            due.append((organization_id, name, local, user_id, email,
                        f"digest:{organization_id}:{user_id}:{local.date().isoformat()}"))
    done = mail_store.queued_keys(store, [item[-1] for item in due]) if due else set()
    queued = 0
    contents: dict = {}  # organization id -> (subject, text, html) or None (nothing to say)
    for organization_id, name, local, user_id, email, dedupe_key in due:
        if dedupe_key in done:
            continue  # (queued today already: no write)
        if organization_id not in contents:
            contents[organization_id] = digest_of(config, store, organization_id, name, local)
        if contents[organization_id] is None:
            continue
        subject, text, body = contents[organization_id]
        queued += queue_mail(store, config, to=email, subject=subject, text=text, html=body, kind="digest",
                             dedupe_key=dedupe_key, organization_id=organization_id)
    return queued


def digest_of(config: Config, store: Store, organization_id: str, name: str,
              local: datetime.datetime) -> Optional[tuple]:
    """(subject, text, html) of the organization's digest for the local day of `local`; None: nothing to say."""
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    yesterday, today, tomorrow = (_instant(midnight, days) for days in (-1, 0, 1))
    sections = (
        ("Published yesterday", mail_store.digest_posts(store, organization_id, "PUBLISHED", "publish_date",
                                                        yesterday, today)),
        ("Due today", mail_store.digest_posts(store, organization_id, "QUEUE", "publish_date", today, tomorrow)),
        ("Failed yesterday", mail_store.digest_posts(store, organization_id, "ERROR", "updated_at", yesterday,
                                                     today)),
    )
    if not any(posts for _title, posts in sections):
        return None
    day = local.date().isoformat()
    counts = ", ".join(f"{len(posts)} {title.lower()}" for title, posts in sections)
    text = [f"{name}, {day}: {counts}.", ""]
    extra = ""
    for title, posts in sections:
        text.append(f"{title} ({len(posts)}):")
        items = "".join(f"<li>{_post_html(config, post)}</li>" for post in posts[:LISTED])
        text += [f"- {_post_text(config, post)}" for post in posts[:LISTED]] or ["- none"]
        if len(posts) > LISTED:
            text.append(f"- and {len(posts) - LISTED} more")
        text.append("")
        extra += f"<h3>{escape(title)} ({len(posts)})</h3><ul>{items or '<li>none</li>'}</ul>"
    calendar = f"{config.frontend_url}/#/calendar"
    text.append(f"The calendar: {calendar}")
    return (f"rustiz digest for {name}, {day}", "\n".join(text) + "\n",
            html_mail(f"{name}, {day}: {counts}.", calendar, "Open the calendar", extra=extra))


def _instant(midnight: datetime.datetime, days: int) -> str:
    """The stored instant (UTC, ms) of local midnight `days` days from `midnight` (a DST day counts as one)."""
    day = (midnight.date() + datetime.timedelta(days=days))
    local = datetime.datetime.combine(day, datetime.time(0, 0), midnight.tzinfo)
    return iso_ms(local.astimezone(datetime.timezone.utc))


def _excerpt(post: dict) -> str:
    text = " ".join(html_to_text(post["content"] or "").split())
    return text if len(text) <= EXCERPT else text[:EXCERPT - 1] + "…"


def _post_text(config: Config, post: dict) -> str:
    line = f"{post['channel']} ({post['provider']}) at {post['date'][11:16]} UTC: {_excerpt(post)}"
    if post["error"]:
        line += f" — {post['error'][:200]}"
    return f"{line} {post['url'] or post_link(config, post['id'])}"


def _post_html(config: Config, post: dict) -> str:
    link = post["url"] or post_link(config, post["id"])
    error = f" — {escape(post['error'][:200])}" if post["error"] else ""
    return (f"{escape(post['channel'])} ({escape(post['provider'])}) at {post['date'][11:16]} UTC: "
            f"<a href=\"{escape(link)}\">{escape(_excerpt(post)) or 'the post'}</a>{error}")
