"""Alert rows and alert settings: trouble announced on an organization's alert channel (rustiz_features/alerts.py).

Rules:
- One row per event, unique by (organization, kind, subject): whoever finds an event again (another process,
  the next sweep, a restart) inserts nothing.
- A row is claimed under a lease like a webhook delivery, tried once, and ends 'sent', 'failed' or 'held'
  (over the hourly limit; 'folded' once a later alert has said how many were held).
- The settings (the alert channel, the late threshold) are two columns of the organization.
"""
from __future__ import annotations

from typing import Optional

from rustiz import Store, iso_at, new_uuid, utc_now_iso


def alert_settings(store: Store, organization_id: str) -> tuple:
    """(alert channel id or None, late threshold in minutes or None) of an organization."""
    row = store.read("SELECT alert_channel_id, alert_late_minutes FROM organization WHERE id = ?",
                     (organization_id,)).fetchone()
    return (row[0], row[1]) if row else (None, None)


def set_alert_settings(store: Store, organization_id: str, channel_id: Optional[str],
                       late_minutes: Optional[int]) -> None:
    with store.writing() as db:
        db.execute("UPDATE organization SET alert_channel_id = ?, alert_late_minutes = ?, updated_at = ? "
                   "WHERE id = ?", (channel_id, late_minutes, utc_now_iso(), organization_id))


def queue_alert(store: Store, organization_id: str, kind: str, subject_id: str, text: str,
                link: Optional[str]) -> bool:
    """An alert to the organization's alert channel, unless it has none or this event was queued before;
    True when this call queued it."""
    channel_id = alert_settings(store, organization_id)[0]
    if channel_id is None:  # (most organizations: no write at all)
        return False
    with store.writing() as db:
        return db.execute("INSERT OR IGNORE INTO alert (id, organization_id, kind, subject_id, channel_id, text, "
                          "link, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                          (new_uuid(), organization_id, kind, subject_id, channel_id, text, link,
                           utc_now_iso())).rowcount == 1


def late_posts_to_alert(store: Store, default_minutes: int, now: float, limit: int = 100) -> list:
    """Posts still QUEUE more than their organization's late threshold after their date, in organizations
    with an alert channel, not yet announced as late: [{id, organization_id, publish_date, error,
    channel_name, provider}], oldest first."""
    found: list = []
    for organization_id, minutes in store.read(
            "SELECT id, alert_late_minutes FROM organization WHERE alert_channel_id IS NOT NULL "
            "AND deleted_at IS NULL").fetchall():
        threshold = default_minutes if minutes is None else minutes
        rows = store.read(
            "SELECT p.id, p.organization_id, p.publish_date, p.error, i.name, i.provider_identifier FROM post p "
            "JOIN integration i ON i.id = p.integration_id WHERE p.organization_id = ? AND p.state = 'QUEUE' "
            "AND p.deleted_at IS NULL AND p.publish_date < ? AND (p.parent_post_id IS NULL OR EXISTS (SELECT 1 "
            "FROM post parent WHERE parent.id = p.parent_post_id AND parent.state = 'PUBLISHED')) AND NOT EXISTS "
            "(SELECT 1 FROM alert a WHERE a.organization_id = p.organization_id AND a.kind = 'late' AND "
            "a.subject_id = p.id || '@' || p.publish_date) ORDER BY p.publish_date LIMIT ?",
            (organization_id, iso_at(now - threshold * 60), limit - len(found))).fetchall()
        found += [dict(zip(("id", "organization_id", "publish_date", "error", "channel_name", "provider"), row))
                  for row in rows]
        if len(found) >= limit:
            break
    return found


# An alert waiting to be sent that no live lease holds (the parameter: now).
_ALERT_FREE = "status = 'pending' AND (lease_until IS NULL OR lease_until < ?)"


def due_alerts(store: Store, now: float, limit: int) -> list:
    """Ids of the alerts waiting to be sent that no live lease holds, the oldest first."""
    return [row[0] for row in store.read(
        f"SELECT id FROM alert WHERE {_ALERT_FREE} ORDER BY created_at LIMIT ?", (now, limit))]


def claim_alert(store: Store, alert_id: str, owner: str, lease_until: float, now: float) -> Optional[dict]:
    """Lease one waiting alert to `owner`, with its alert channel ({..., "channel": row or None when the
    channel is gone}); None when another process claimed it first."""
    with store.writing() as db:
        if db.execute("UPDATE alert SET lease_owner = ?, lease_until = ?, attempted_at = ?, "
                      f"attempts = attempts + 1 WHERE id = ? AND {_ALERT_FREE}",
                      (owner, lease_until, now, alert_id, now)).rowcount != 1:
            return None
        alert = dict(zip(("id", "organization_id", "kind", "text", "link", "attempts", "channel_id"), db.execute(
            "SELECT id, organization_id, kind, text, link, attempts, channel_id FROM alert WHERE id = ?",
            (alert_id,)).fetchone()))
        channel = db.execute("SELECT id, name, provider_identifier, token, session, disabled FROM integration "
                             "WHERE id = ? AND deleted_at IS NULL", (alert["channel_id"],)).fetchone()
    alert["channel"] = dict(zip(("id", "name", "provider", "credentials", "session", "disabled"), channel)) \
        if channel else None
    return alert


def alerts_attempted_since(store: Store, organization_id: str, since: float) -> int:
    """How many of the organization's alerts were claimed to be sent since `since` (a Unix time): sent,
    failed or being sent (not those held back)."""
    return store.read("SELECT COUNT(*) FROM alert WHERE organization_id = ? AND attempted_at >= ? "
                      "AND status IN ('pending', 'sent', 'failed')", (organization_id, since)).fetchone()[0]


def fold_held_alerts(store: Store, organization_id: str) -> int:
    """The organization's alerts held back by the limit, marked told of; how many."""
    with store.writing() as db:
        return db.execute("UPDATE alert SET status = 'folded' WHERE organization_id = ? AND status = 'held'",
                          (organization_id,)).rowcount


def record_alert_outcome(store: Store, alert_id: str, owner: str, status: str, error: Optional[str]) -> None:
    """'sent', 'failed' (with why) or 'held', unless the lease meanwhile passed to another process."""
    with store.writing() as db:
        db.execute("UPDATE alert SET status = ?, error = ?, lease_owner = NULL, lease_until = NULL "
                   "WHERE id = ? AND lease_owner = ? AND status = 'pending'", (status, error, alert_id, owner))


def recent_alerts(store: Store, organization_id: str, limit: int = 20) -> list:
    """The organization's latest alerts, newest first, as GET /public/v1/alerts shows them."""
    rows = store.read("SELECT id, kind, text, link, status, error, created_at FROM alert WHERE organization_id = ? "
                      "ORDER BY created_at DESC LIMIT ?", (organization_id, limit)).fetchall()
    return [dict(zip(("id", "kind", "text", "link", "status", "error", "createdAt"), row)) for row in rows]


def forget_old_alerts(store: Store, before: str) -> int:
    """Delete the alerts queued before `before` (ISO) that are no longer waiting."""
    with store.writing() as db:
        return db.execute("DELETE FROM alert WHERE created_at < ? AND status != 'pending'", (before,)).rowcount
