"""Short links' SQL: the organization's preference, the posts that want their links shortened, each (post,
original link) with its code, and the clicks per link and day.

Rules:
- A (post, original link) pair has one code for ever (UNIQUE (post_id, url)): a retry of a publish, another
  process publishing the same post, a repeat of a recurring post all find the code made the first time.
- Clicks are counted per code and UTC day, people and bots apart; nothing about the visitor is stored.
- Values are checked by the caller (short_links.py); these functions only read and write.
"""
from __future__ import annotations

from typing import Optional

from rustiz import Store, utc_now_iso


def preference(store: Store, organization_id: str) -> str:
    """The organization's "ask", "yes" or "no" ("ask" for an unknown id)."""
    row = store.read("SELECT short_link FROM organization WHERE id = ?", (organization_id,)).fetchone()
    return row[0] if row else "ask"


def set_preference(store: Store, organization_id: str, value: str) -> None:
    with store.writing(no_channels=True) as db:
        db.execute("UPDATE organization SET short_link = ?, updated_at = ? WHERE id = ?",
                   (value, utc_now_iso(), organization_id))


def mark_wanted(store: Store, organization_id: str, post_ids: list, wanted: bool) -> None:
    """Remember (or forget) that these posts' links are to be shortened when they are published."""
    with store.writing(no_channels=True) as db:
        for post_id in post_ids:
            db.execute("DELETE FROM short_link_wanted WHERE post_id = ?", (post_id,))
            if wanted:
                db.execute("INSERT INTO short_link_wanted (post_id, organization_id) VALUES (?, ?)",
                           (post_id, organization_id))


def is_wanted(store: Store, post_id: str) -> bool:
    return store.read("SELECT 1 FROM short_link_wanted WHERE post_id = ?", (post_id,)).fetchone() is not None


def code_for(store: Store, organization_id: str, post_id: str, url: str, place: int, new_code: str,
             external: Optional[str] = None) -> tuple:
    """(code, external link or None) of the post's link: the one stored first, else `new_code` (and
    `external`) stored now, `place` its order in the post. Two processes racing end with the same row (the
    second insert does nothing)."""
    found = stored_code(store, post_id, url)
    if found is not None:
        return found
    with store.writing(no_channels=True) as db:
        db.execute("INSERT INTO short_link (code, organization_id, post_id, url, external, place, created_at) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                   (new_code, organization_id, post_id, url, external, place, utc_now_iso()))
    return stored_code(store, post_id, url)


def stored_code(store: Store, post_id: str, url: str) -> Optional[tuple]:
    """(code, external link or None) of the post's link, or None when it has none yet."""
    row = store.read("SELECT code, external FROM short_link WHERE post_id = ? AND url = ?", (post_id, url)).fetchone()
    return None if row is None else (row[0], row[1])


def target(store: Store, code: str) -> Optional[str]:
    """The original link of a code, or None (an unknown code, or one of a deleted organization)."""
    row = store.read("SELECT l.url FROM short_link l JOIN organization o ON o.id = l.organization_id "
                     "WHERE l.code = ? AND o.deleted_at IS NULL", (code,)).fetchone()
    return row[0] if row else None


def count_click(store: Store, code: str, day: str, bot: bool) -> None:
    """One click on a code's link on a UTC day (YYYY-MM-DD): a person's, or a bot's or preview fetcher's."""
    people, bots = (0, 1) if bot else (1, 0)
    with store.writing(shared=True, no_channels=True) as db:
        db.execute("INSERT INTO short_link_click (code, day, clicks, bot_clicks) VALUES (?, ?, ?, ?) "
                   "ON CONFLICT (code, day) DO UPDATE SET clicks = short_link_click.clicks + excluded.clicks, "
                   "bot_clicks = short_link_click.bot_clicks + excluded.bot_clicks", (code, day, people, bots))


def links_of_posts(store: Store, organization_id: str, post_ids: list) -> list:
    """The links of these posts, in the order they were made (in a post, as they come in its text): [{code, url, external, days: [(day, clicks,
    bot clicks)]}] (days oldest first)."""
    if not post_ids:
        return []
    marks = ", ".join("?" for _ in post_ids)
    links = store.read(f"SELECT code, url, external FROM short_link WHERE organization_id = ? AND post_id IN ({marks}) "
                       "ORDER BY created_at, place", (organization_id, *post_ids)).fetchall()
    if not links:
        return []
    codes = [row[0] for row in links]
    days: dict = {code: [] for code in codes}
    rows = store.read(f"SELECT code, day, clicks, bot_clicks FROM short_link_click WHERE code IN "
                      f"({', '.join('?' for _ in codes)}) ORDER BY day", tuple(codes))
    for code, day, clicks, bot_clicks in rows:
        days[code].append((day, clicks, bot_clicks))
    return [{"code": code, "url": url, "external": external, "days": days[code]} for code, url, external in links]
