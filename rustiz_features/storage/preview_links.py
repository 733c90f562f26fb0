"""Client review links: a token (stored hashed) that shows one post group to someone without an account.

Rules:
- A link is bound to one review group: a post's multi-channel group (its threads on every channel), or the
  post's own group when it has none. The page shows those threads only, never another post of the
  organization.
- A link is usable while it is neither revoked nor expired (`expires_at`, an ISO instant, compared as text:
  every instant rustiz writes has the same shape). Revoked and expired links are never answered apart from
  unknown tokens.
"""
from __future__ import annotations

from typing import Optional

from rustiz import Store, new_uuid, utc_now_iso

_LINK_COLUMNS = "id, organization_id, review_group, allow_approval, form_token, expires_at, created_at, created_by"


def _link_row(row: tuple) -> dict:
    return {"id": row[0], "organizationId": row[1], "reviewGroup": row[2], "allowApproval": bool(row[3]),
            "formToken": row[4], "expiresAt": row[5], "createdAt": row[6], "createdBy": row[7]}


def create_link(store: Store, organization_id: str, review_group: str, token_hash: str, form_token: str,
                allow_approval: bool, expires_at: str, created_by: Optional[str]) -> dict:
    """A new link to the review group; its row (without the token, which is not kept)."""
    now, link_id = utc_now_iso(), new_uuid()
    with store.writing(no_channels=True) as db:
        db.execute("INSERT INTO preview_link (id, organization_id, token_hash, form_token, review_group, "
                   "allow_approval, created_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (link_id, organization_id, token_hash, form_token, review_group, int(allow_approval),
                    created_by, now, expires_at))
    return {"id": link_id, "organizationId": organization_id, "reviewGroup": review_group,
            "allowApproval": allow_approval, "formToken": form_token, "expiresAt": expires_at, "createdAt": now,
            "createdBy": created_by}


def live_link(store: Store, token_hash: str) -> Optional[dict]:
    """The link of that token hash while it is usable (not revoked, not expired, its organization live)."""
    row = store.read(f"SELECT {', '.join('l.' + column for column in _LINK_COLUMNS.split(', '))} "
                     "FROM preview_link l JOIN organization o ON o.id = l.organization_id "
                     "WHERE l.token_hash = ? AND l.revoked_at IS NULL AND l.expires_at > ? AND o.deleted_at IS NULL",
                     (token_hash, utc_now_iso())).fetchone()
    return None if row is None else _link_row(row)


def live_links(store: Store, organization_id: str, review_group: str) -> list:
    """The usable links of a review group, newest first (without their tokens, which are not kept)."""
    rows = store.read(f"SELECT {_LINK_COLUMNS} FROM preview_link WHERE organization_id = ? AND review_group = ? "
                      "AND revoked_at IS NULL AND expires_at > ? ORDER BY created_at DESC, id",
                      (organization_id, review_group, utc_now_iso()))
    return [_link_row(row) for row in rows]


def revoke_links(store: Store, organization_id: str, review_group: str, token_hash: Optional[str] = None) -> int:
    """Every usable link of the review group revoked, or only the one of `token_hash`; how many were."""
    now = utc_now_iso()
    only_one = " AND token_hash = ?" if token_hash is not None else ""
    with store.writing(no_channels=True) as db:
        return db.execute(f"UPDATE preview_link SET revoked_at = ? WHERE organization_id = ? AND review_group = ? "
                          f"AND revoked_at IS NULL{only_one}",
                          (now, organization_id, review_group, *((token_hash,) if token_hash else ()))).rowcount


def review_group_threads(store: Store, organization_id: str, review_group: str) -> list:
    """The live groups (threads on their channels) of a review group, oldest first: those of its multi-channel
    group, or the one group of that id (a post made on one channel before multi-channel groups were kept)."""
    rows = store.read("SELECT p.post_group, MIN(p.created_at) FROM post p JOIN integration i "
                      "ON i.id = p.integration_id WHERE p.organization_id = ? AND p.deleted_at IS NULL "
                      "AND i.deleted_at IS NULL AND (p.multi_channel_group = ? OR p.post_group = ?) "
                      "GROUP BY p.post_group ORDER BY MIN(p.created_at), p.post_group",
                      (organization_id, review_group, review_group))
    return [row[0] for row in rows]
