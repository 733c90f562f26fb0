"""Organizations beyond the request path: the summary `rustiz org list` prints, the timezone posting slots are
reckoned in, and changes of name and timezone.

Rules:
- Creating an organization, listing them, finding one (and its key) stay in the core: init, serve and every
  request need them.
- Values are checked by the caller (api_channels.validate_organization_changes); these functions only write.
"""
from __future__ import annotations

from typing import Optional

from rustiz import Store, utc_now_iso


def organization_summaries(store: Store) -> list:
    """Every organization with the number of its channels (deleted channels not counted)."""
    rows = store.read(
        "SELECT o.id, o.name, COUNT(i.id) FROM organization o "
        "LEFT JOIN integration i ON i.organization_id = o.id AND i.deleted_at IS NULL "
        "WHERE o.deleted_at IS NULL GROUP BY o.id ORDER BY o.created_at, o.id")
    return [{"id": row[0], "name": row[1], "channels": row[2]} for row in rows]


def organization_timezone(store: Store, organization_id: str) -> str:
    """The organization's IANA timezone (UTC for an unknown id): posting slots are local times in it."""
    row = store.read("SELECT timezone FROM organization WHERE id = ?", (organization_id,)).fetchone()
    return row[0] if row else "UTC"


def update_organization(store: Store, organization_id: str, name: Optional[str] = None,
                        timezone: Optional[str] = None) -> None:
    """Change the name and/or the IANA timezone (checked by the caller); None leaves a field as it is."""
    with store.writing() as db:
        db.execute("UPDATE organization SET name = COALESCE(?, name), timezone = COALESCE(?, timezone), "
                   "updated_at = ? WHERE id = ?", (name, timezone, utc_now_iso(), organization_id))
