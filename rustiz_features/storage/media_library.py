"""The media library's rows: an upload recorded as a Media row, its listing, its changes and its soft delete, and
the posts that use an upload.

Rules:
- A row is written once the file is in its final place (the caller removes the file when the write fails).
- Posts name media by URL; media_ids_by_path finds the organization's live uploads among them, a chunk of
  URLs per query (storage.rows_in_chunks).
- A post uses an upload when its `image` JSON holds the upload's file name (the last segment of its path,
  random, so on any host) or its id in quotes, or its `settings` hold the file name (a WordPress main_image, a
  YouTube thumbnail...). One query finds the uses of a whole page of media.
- Searches are LIKE patterns with the wildcards of the searched text escaped; LOWER folds ASCII letters on
  SQLite and every letter on PostgreSQL.
"""
from __future__ import annotations

from typing import Callable, Optional

from rustiz import Store, new_uuid, utc_now_iso
from . import rows_in_chunks

# Postiz's states of a post not yet out: a media item they use may not be deleted (PUBLISHING: going out now).
UNPUBLISHED_STATES = ("QUEUE", "PUBLISHING")
MAX_USES = 1000  # posts listed as using the media of one page (or one media item): the newest first
_MEDIA_COLUMNS = "id, name, original_name, path, type, file_size, width, height, alt, created_at"


def media_ids_by_path(store: Store, organization_id: str, paths: list) -> dict:
    """path -> id of the organization's live uploads among `paths`."""
    return dict(rows_in_chunks(store, "SELECT path, id FROM media WHERE organization_id = ? AND deleted_at IS NULL "
                                      "AND path IN ({in_list})", (organization_id,), paths))


def create_media(store: Store, organization_id: str, name: str, path: str, file_size: int, kind: str,
                 original_name: Optional[str] = None, size: Optional[tuple] = None) -> dict:
    """A new Media row; returns what Postiz's upload routes answer: {id, name, originalName, path, thumbnail, alt}.

    `original_name` is the file name the client gave (the multipart filename), or None; `size` the picture's
    (width, height) in pixels, or None when unknown."""
    media_id = new_uuid()
    now = utc_now_iso()
    width, height = size or (None, None)
    with store.writing() as db:
        db.execute("INSERT INTO media (id, organization_id, name, original_name, path, file_size, type, width, "
                   "height, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (media_id, organization_id, name, original_name, path, file_size, kind, width, height, now, now))
    return {"id": media_id, "name": name, "originalName": original_name, "path": path, "thumbnail": None,
            "alt": None}


def like_pattern(text: str) -> str:
    """A LIKE pattern (with ESCAPE '\\') matching any text that contains `text` as it is."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _media_item(row: tuple) -> dict:
    return {"id": row[0], "name": row[1], "originalName": row[2], "path": row[3], "type": row[4], "size": row[5],
            "width": row[6], "height": row[7], "alt": row[8], "createdAt": row[9]}


def media_page(store: Store, organization_id: str, search: Optional[str], offset: int, limit: int) -> tuple:
    """(the live media items from `offset`, at most `limit`, newest first; how many there are in all), those
    whose name, original name or alt text holds `search` (any case) when it is given."""
    where, parameters = "organization_id = ? AND deleted_at IS NULL", [organization_id]
    if search:
        where += " AND (" + " OR ".join(f"LOWER(COALESCE({column}, '')) LIKE ? ESCAPE '\\'"
                                        for column in ("name", "original_name", "alt")) + ")"
        parameters += [like_pattern(search.lower())] * 3
    total = store.read(f"SELECT COUNT(*) FROM media WHERE {where}", tuple(parameters)).fetchone()[0]
    rows = store.read(f"SELECT {_MEDIA_COLUMNS} FROM media WHERE {where} ORDER BY created_at DESC, id DESC "
                      "LIMIT ? OFFSET ?", (*parameters, limit, offset)).fetchall()
    return [_media_item(row) for row in rows], total


def media_item(store: Store, organization_id: str, media_id: str) -> Optional[dict]:
    """One live media item of the organization, or None (another organization's, deleted, or unknown)."""
    row = store.read(f"SELECT {_MEDIA_COLUMNS} FROM media WHERE id = ? AND organization_id = ? "
                     "AND deleted_at IS NULL", (media_id, organization_id)).fetchone()
    return None if row is None else _media_item(row)


def update_media(store: Store, organization_id: str, media_id: str, changes: dict) -> Optional[dict]:
    """Apply `changes` ({"name"?, "alt"?}, checked) to a live media item; the item after, or None when there is
    no such item."""
    columns = [column for column in ("name", "alt") if column in changes]
    with store.writing() as db:
        updated = db.execute(f"UPDATE media SET {''.join(f'{column} = ?, ' for column in columns)}updated_at = ? "
                             "WHERE id = ? AND organization_id = ? AND deleted_at IS NULL",
                             (*[changes[column] for column in columns], utc_now_iso(), media_id, organization_id))
        if updated.rowcount == 0:
            return None
    return media_item(store, organization_id, media_id)


def file_name(path: str) -> str:
    """The last segment of a media item's path (rustiz's uploads: 32 random hex digits and the extension)."""
    return path.split("?", 1)[0].rstrip("/").rpartition("/")[2]


def _uses(run: Callable, organization_id: str, media: list) -> dict:
    """media id -> [{"id", "state", "publishDate", "integration"}] of the live posts (on live channels) that use
    it, the newest first, at most MAX_USES in all; `run(sql, parameters)` is store.read or a transaction's
    execute."""
    if not media:
        return {}
    tests, parameters = [], [organization_id]
    for item in media:
        name = like_pattern(file_name(item["path"]))
        tests += ["p.image LIKE ? ESCAPE '\\'", "p.image LIKE ? ESCAPE '\\'", "p.settings LIKE ? ESCAPE '\\'"]
        parameters += [name, like_pattern(f'"{item["id"]}"'), name]
    rows = run("SELECT p.id, p.state, p.publish_date, p.image, p.settings, i.id, i.name, i.provider_identifier, "
               "i.picture FROM post p JOIN integration i ON i.id = p.integration_id WHERE p.organization_id = ? "
               f"AND p.deleted_at IS NULL AND i.deleted_at IS NULL AND ({' OR '.join(tests)}) "
               "ORDER BY p.publish_date DESC, p.id LIMIT ?", (*parameters, MAX_USES)).fetchall()
    uses: dict = {item["id"]: [] for item in media}
    for row in rows:
        image, settings = row[3] or "", row[4] or ""
        use = {"id": row[0], "state": row[1], "publishDate": row[2],
               "integration": {"id": row[5], "name": row[6], "providerIdentifier": row[7], "picture": row[8]}}
        for item in media:  # (the same tests as the query's, to tell which item each post uses)
            name = file_name(item["path"])
            if name in image or f'"{item["id"]}"' in image or name in settings:
                uses[item["id"]].append(use)
    return uses


def media_uses(store: Store, organization_id: str, media: list) -> dict:
    """media id -> the posts that use it (see _uses), for a page of media items, in one query."""
    return _uses(store.read, organization_id, media)


def delete_media(store: Store, organization_id: str, media_id: str) -> Optional[tuple]:
    """Soft-delete a live media item unless a post not yet published (UNPUBLISHED_STATES) uses it. None when
    there is no such item; else (deleted, the item, the posts that use it): `deleted` False when some of them
    are not published yet. Checked and written in one write transaction, so that no post is saved with the
    item between the check and the delete."""
    with store.writing() as db:
        row = db.execute(f"SELECT {_MEDIA_COLUMNS} FROM media WHERE id = ? AND organization_id = ? "
                         "AND deleted_at IS NULL", (media_id, organization_id)).fetchone()
        if row is None:
            return None
        item = _media_item(row)
        uses = _uses(db.execute, organization_id, [item])[media_id]
        if any(use["state"] in UNPUBLISHED_STATES for use in uses):
            return False, item, uses
        now = utc_now_iso()
        db.execute("UPDATE media SET deleted_at = ?, updated_at = ? WHERE id = ? AND organization_id = ?",
                   (now, now, media_id, organization_id))
    return True, item, uses
