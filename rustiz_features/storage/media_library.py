"""The media library's rows: an upload recorded as a Media row, and the uploads posts name by their URL.

Rules:
- A row is written once the file is in its final place (the caller removes the file when the write fails).
- Posts name media by URL; media_ids_by_path finds the organization's live uploads among them, a chunk of
  URLs per query (storage.rows_in_chunks).
"""
from __future__ import annotations

from typing import Optional

from rustiz import Store, new_uuid, utc_now_iso
from . import rows_in_chunks


def media_ids_by_path(store: Store, organization_id: str, paths: list) -> dict:
    """path -> id of the organization's live uploads among `paths`."""
    return dict(rows_in_chunks(store, "SELECT path, id FROM media WHERE organization_id = ? AND deleted_at IS NULL "
                                      "AND path IN ({in_list})", (organization_id,), paths))


def create_media(store: Store, organization_id: str, name: str, path: str, file_size: int, kind: str,
                 original_name: Optional[str] = None) -> dict:
    """A new Media row; returns what Postiz's upload routes answer: {id, name, originalName, path, thumbnail, alt}.

    `original_name` is the file name the client gave (the multipart filename), or None."""
    media_id = new_uuid()
    now = utc_now_iso()
    with store.writing() as db:
        db.execute("INSERT INTO media (id, organization_id, name, original_name, path, file_size, type, created_at, "
                   "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (media_id, organization_id, name, original_name, path, file_size, kind, now, now))
    return {"id": media_id, "name": name, "originalName": original_name, "path": path, "thumbnail": None,
            "alt": None}
