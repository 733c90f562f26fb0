"""E-mail: the outbox (one row per message, sent once) and each person's e-mail preferences per organization.

Rules:
- A message is queued once: its dedupe key is unique (ON CONFLICT DO NOTHING), so the same event found again, by
  another process or after a restart, queues nothing more.
- Whichever process is free claims a due message under a lease (a conditional UPDATE: when several race for one,
  exactly one changes the row), sends it, and records it sent, to be retried at a later time, or given up.
- Preferences are stored per (person, organization); a NULL column is the default of the person's role there
  (mail.DEFAULT_ROLES: admins and editors get failed/reconnect/review, nobody the digest).
- Failed, reconnect and review mails go to admins and editors only (ALERTED_ROLES), whose preference is on.
- An invite's or a reset's body holds its token: blanked once the mail is sent or given up (SECRET_KINDS).
"""
from __future__ import annotations

import time
from typing import Optional

from rustiz import Store, new_uuid, utc_now_iso
from . import rows_in_chunks

PREFERENCES = ("failed", "reconnect", "review", "digest")
# Mails that carry a secret link (an invite's or a reset's token, stored hashed elsewhere): their bodies are
# blanked once sent or given up, so the outbox does not keep a usable token.
SECRET_KINDS = ("invite", "password-reset")
_SECRET_IN = ", ".join(f"'{kind}'" for kind in SECRET_KINDS)
_FORGET_SECRET = "".join(f"{body} = CASE WHEN kind IN ({_SECRET_IN}) THEN '' ELSE {body} END, "
                         for body in ("text_body", "html_body"))
ALERTED_ROLES = ("admin", "editor")  # who gets failed/reconnect/review mails, and has them on by default

# A message not yet sent nor given up; one no live lease holds (the parameter: now).
_PENDING = "sent_at IS NULL AND gave_up_at IS NULL"
_FREE = "(lease_until IS NULL OR lease_until < ?)"
_MESSAGE_COLUMNS = ("id", "organization_id", "kind", "recipient", "subject", "text_body", "html_body",
                    "message_id", "attempts", "created_at")


def queue_message(store: Store, *, organization_id: Optional[str], kind: str, recipient: str, subject: str,
                  text: str, html: str, dedupe_key: str, message_domain: str) -> bool:
    """One outbox row, due now; False when a message with this dedupe key was queued before (nothing changes)."""
    row_id = new_uuid()
    with store.writing(no_channels=True) as db:
        return db.execute(
            "INSERT INTO mail_outbox (id, organization_id, kind, recipient, subject, text_body, html_body, "
            "dedupe_key, message_id, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (dedupe_key) DO NOTHING",
            (row_id, organization_id, kind, recipient, subject, text, html, dedupe_key,
             f"<{row_id}@{message_domain}>", time.time(), utc_now_iso())).rowcount == 1


def queued_keys(store: Store, dedupe_keys: list) -> set:
    """Those of `dedupe_keys` already in the outbox (queued, sent or given up)."""
    return {row[0] for row in rows_in_chunks(store, "SELECT dedupe_key FROM mail_outbox WHERE dedupe_key IN "
                                                    "({in_list})", (), dedupe_keys)}


def due_messages(store: Store, now: float, limit: int) -> list:
    """Ids of the messages due by `now` that no live lease holds, the longest waiting first."""
    return [row[0] for row in store.read(
        f"SELECT id FROM mail_outbox WHERE {_PENDING} AND next_attempt_at <= ? AND {_FREE} "
        "ORDER BY next_attempt_at LIMIT ?", (now, now, limit))]


def next_message_time(store: Store) -> Optional[float]:
    """When the next waiting message may be tried (its next attempt, or the end of the lease holding it)."""
    return store.read("SELECT MIN(CASE WHEN lease_until > next_attempt_at THEN lease_until ELSE next_attempt_at "
                      f"END) FROM mail_outbox WHERE {_PENDING}").fetchone()[0]


def claim_message(store: Store, message_id: str, owner: str, lease_until: float, now: float) -> Optional[dict]:
    """Lease one due message to `owner` and count the attempt; the row (_MESSAGE_COLUMNS) or None when it is no
    longer due, or another process claimed it first."""
    with store.writing(no_channels=True) as db:
        claimed = db.execute(
            "UPDATE mail_outbox SET lease_owner = ?, lease_until = ?, attempts = attempts + 1 "
            f"WHERE id = ? AND {_PENDING} AND next_attempt_at <= ? AND {_FREE}",
            (owner, lease_until, message_id, now, now)).rowcount
        row = db.execute(f"SELECT {', '.join(_MESSAGE_COLUMNS)} FROM mail_outbox WHERE id = ?",
                         (message_id,)).fetchone() if claimed == 1 else None
    return dict(zip(_MESSAGE_COLUMNS, row)) if row else None


def lease_owners(store: Store, now: float) -> list:
    """The owners ("host:pid") of live leases on waiting messages."""
    return [row[0] for row in store.read(
        f"SELECT DISTINCT lease_owner FROM mail_outbox WHERE {_PENDING} AND lease_until >= ?", (now,))]


def release_leases(store: Store, owner: str) -> int:
    """End the leases `owner` holds (a process known dead): its messages are due again at once."""
    with store.writing(no_channels=True) as db:
        return db.execute(f"UPDATE mail_outbox SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ? "
                          f"AND {_PENDING}", (owner,)).rowcount


def record_sent(store: Store, message_id: str) -> None:
    with store.writing(no_channels=True) as db:
        db.execute(f"UPDATE mail_outbox SET {_FORGET_SECRET}sent_at = ?, lease_owner = NULL, lease_until = NULL, "
                   f"last_error = NULL WHERE id = ? AND {_PENDING}", (utc_now_iso(), message_id))


def retry_message(store: Store, message_id: str, owner: str, next_attempt_at: float, problem: str) -> None:
    """The attempt failed: try again at `next_attempt_at` (unless the lease meanwhile passed to another)."""
    with store.writing(no_channels=True) as db:
        db.execute("UPDATE mail_outbox SET next_attempt_at = ?, last_error = ?, lease_owner = NULL, "
                   f"lease_until = NULL WHERE id = ? AND lease_owner = ? AND {_PENDING}",
                   (next_attempt_at, problem, message_id, owner))


def give_up_message(store: Store, message_id: str, owner: str, problem: str) -> bool:
    """No further attempt; True when this call gave it up."""
    with store.writing(no_channels=True) as db:
        return db.execute(f"UPDATE mail_outbox SET {_FORGET_SECRET}gave_up_at = ?, last_error = ?, "
                          f"lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ? AND {_PENDING}",
                          (utc_now_iso(), problem, message_id, owner)).rowcount == 1


def forget_finished_messages(store: Store, finished_before: str) -> int:
    """Delete the messages sent or given up before `finished_before` (ISO), so the table stays small."""
    with store.writing(no_channels=True) as db:
        return db.execute("DELETE FROM mail_outbox WHERE sent_at < ? OR gave_up_at < ?",
                          (finished_before, finished_before)).rowcount


# --- preferences -----------------------------------------------------------------------------------------------

def stored_preferences(store: Store, user_id: str, organization_id: str) -> tuple:
    """(the person's role in the organization or None, {preference: True/False/None (the role's default)})."""
    role = store.read("SELECT role FROM membership WHERE user_id = ? AND organization_id = ?",
                      (user_id, organization_id)).fetchone()
    row = store.read(f"SELECT {', '.join(PREFERENCES)} FROM mail_preference WHERE user_id = ? AND "
                     "organization_id = ?", (user_id, organization_id)).fetchone()
    values = {name: None if row is None or row[index] is None else bool(row[index])
              for index, name in enumerate(PREFERENCES)}
    return (role[0] if role else None), values


def save_preferences(store: Store, user_id: str, organization_id: str, changes: dict) -> None:
    """Set the preferences named in `changes` (names from PREFERENCES, checked by the caller), the others kept."""
    with store.writing(no_channels=True) as db:
        db.execute("INSERT INTO mail_preference (user_id, organization_id, updated_at) VALUES (?, ?, ?) "
                   "ON CONFLICT (user_id, organization_id) DO NOTHING", (user_id, organization_id, utc_now_iso()))
        assignments = "".join(f"{name} = ?, " for name in changes if name in PREFERENCES)
        db.execute(f"UPDATE mail_preference SET {assignments}updated_at = ? WHERE user_id = ? AND organization_id = ?",
                   (*(int(bool(changes[name])) for name in changes if name in PREFERENCES), utc_now_iso(),
                    user_id, organization_id))


def alerted_members(store: Store, organization_id: str, kind: str) -> list:
    """[(user id, email, name)] of the organization's admins and editors whose preference for `kind` (failed,
    reconnect or review) is on, stored or by default."""
    if kind not in PREFERENCES[:3]:
        raise ValueError(f"not an alerted kind of mail: {kind!r}")
    roles = ", ".join(f"'{role}'" for role in ALERTED_ROLES)
    return [tuple(row) for row in store.read(
        "SELECT u.id, u.email, u.name FROM membership m JOIN web_user u ON u.id = m.user_id "
        "LEFT JOIN mail_preference p ON p.user_id = m.user_id AND p.organization_id = m.organization_id "
        f"WHERE m.organization_id = ? AND m.role IN ({roles}) AND COALESCE(p.{kind}, 1) = 1 ORDER BY u.email",
        (organization_id,))]


def digest_subscribers(store: Store) -> list:
    """[(organization id, organization name, timezone, user id, email)] of every member who turned the daily
    digest on, in live organizations."""
    return [tuple(row) for row in store.read(
        "SELECT o.id, o.name, o.timezone, u.id, u.email FROM mail_preference p "
        "JOIN membership m ON m.user_id = p.user_id AND m.organization_id = p.organization_id "
        "JOIN web_user u ON u.id = p.user_id JOIN organization o ON o.id = p.organization_id "
        "WHERE p.digest = 1 AND o.deleted_at IS NULL ORDER BY o.id, u.email")]


def digest_posts(store: Store, organization_id: str, state: str, date_field: str, start: str, end: str) -> list:
    """[{id, content, url, channel, provider, date, error}] of the organization's live first parts of threads in
    `state` whose `date_field` (publish_date or updated_at) is within [start, end) (ISO instants), by date."""
    if date_field not in ("publish_date", "updated_at"):
        raise ValueError(date_field)
    rows = store.read(
        "SELECT p.id, p.content, p.release_url, i.name, i.provider_identifier, p.publish_date, p.error "
        "FROM post p JOIN integration i ON i.id = p.integration_id WHERE p.organization_id = ? AND p.state = ? "
        f"AND p.deleted_at IS NULL AND p.parent_post_id IS NULL AND p.{date_field} >= ? AND p.{date_field} < ? "
        f"ORDER BY p.{date_field}, p.id LIMIT 200", (organization_id, state, start, end))
    names = ("id", "content", "url", "channel", "provider", "date", "error")
    return [dict(zip(names, row)) for row in rows]
