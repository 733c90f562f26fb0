"""The media library's API: every upload of the organization, newest first and searchable, with its size in pixels
and the posts that use it; its name and alt text changed; deleted one or many at a time.

Rules:
- A page holds MEDIA_PER_PAGE items (Postiz's own media listing's 28), counted from 1; `pages` is how many pages
  the listing (or the search) has: 0 when there is nothing.
- The posts that use the items of a page are found in one query (storage.media_library.media_uses).
- An item that a post not yet published uses (QUEUE, or PUBLISHING right now) is not deleted: a 409 whose
  `usedBy` lists those posts. Drafts, failed and published posts do not hold it back.
- A deleted item is soft-deleted (its row keeps `deleted_at`); its file is removed too when no live post of the
  organization uses it, and kept when one does, so that a published post (or a draft, or a failed post to
  retry) still shows and sends its picture.
- Alt text and names are the library's: a post keeps the alt text it was saved with; the composer takes the
  library's for new uses.
- Every lookup is scoped by the caller's organization: another organization's id answers like an unknown one.
"""
from __future__ import annotations

import asyncio
import math
import re
from typing import Any, Awaitable, Optional

from rustiz import (ApiError, App, Request, Response, bad_request, json_object, json_response, not_found,
                    route_options)
from .api_docs import (INTEGER, STRING, array_of, documented, json_body, nullable, object_schema, parameter)
from .media import MediaApi
from .storage import media_library as media_store

MEDIA_PER_PAGE = 28
MAX_MEDIA_PAGE = 100_000  # 2.8 million items: far beyond any organization's library
MAX_SEARCH_CHARACTERS = 200
MAX_ALT_CHARACTERS = 1000
MAX_NAME_CHARACTERS = 255
MAX_IDS_PER_DELETE = 100
MEDIA_NOT_FOUND = "Media not found"
# What no text here may hold: NUL (PostgreSQL refuses it) and the other control characters, and lone surrogates
# (no encoding can store one); alt text alone may have TAB, LF and CR.
_NOT_TEXT = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]"
_NOT_ONE_LINE = r"[\x00-\x1f\x7f\ud800-\udfff]"

# --- the OpenAPI schemas of these routes -------------------------------------------------------------------------

MEDIA_USE = object_schema({"id": STRING, "state": STRING, "publishDate": STRING, "integration": object_schema(
    {"id": STRING, "name": STRING, "providerIdentifier": STRING, "picture": nullable("string")})},
    description="A post (or a part of a thread) that uses the media item")
LIBRARY_MEDIA = object_schema(
    {"id": STRING, "name": STRING, "originalName": nullable("string"), "path": STRING,
     "type": {"type": "string", "enum": ["image", "video"]}, "size": INTEGER,
     "width": nullable("integer"), "height": nullable("integer"), "alt": nullable("string"), "createdAt": STRING,
     "usedBy": array_of(MEDIA_USE)},
    description="An upload of the organization; width and height in pixels (null when unknown: a video, an "
                "upload made before rustiz recorded them)")
IN_USE = object_schema({"statusCode": {"const": 409}, "message": STRING, "error": STRING,
                        "usedBy": array_of(MEDIA_USE)},
                       description="Posts not yet published use the item: usedBy lists them")
MEDIA_ID = parameter("path", "id", "A media id")
DELETE_RESULT = object_schema({"id": STRING, "status": {"type": "integer", "enum": [200, 404, 409]},
                               "message": STRING, "usedBy": array_of(MEDIA_USE)})


def page_number(text: Optional[str]) -> int:
    """GET /media's `page` (1 when absent); raises a 400 naming it when it is not a whole number from 1 to
    MAX_MEDIA_PAGE."""
    text = "1" if text is None else text.strip()
    # Measured as text first: int() refuses numbers of more than 4,300 digits.
    if not re.fullmatch(r"[0-9]{1,7}", text) or not 1 <= int(text) <= MAX_MEDIA_PAGE:
        raise bad_request([f"page must be a whole number from 1 to {MAX_MEDIA_PAGE} (pages of {MEDIA_PER_PAGE} "
                           f"media, the newest first)"])
    return int(text)


def _text_problem(name: str, value: Any, longest: int, shortest: int = 0, lines: bool = False) -> Optional[str]:
    """Why `value` cannot be the text `name` (of several `lines`, or one), or None."""
    if not isinstance(value, str):
        return f"{name} must be a string"
    if re.search(_NOT_TEXT if lines else _NOT_ONE_LINE, value):
        return f"{name} must be text without control characters or lone surrogates"
    if len(value.strip()) < shortest:
        return f"{name} should not be empty"
    if len(value.strip()) > longest:
        return f"{name} must be shorter than or equal to {longest} characters"
    return None


def _may_be_an_id(media_id: str) -> bool:
    """Whether a database could hold `media_id` at all (PostgreSQL refuses a NUL in any text): one that cannot
    is simply unknown."""
    return "\x00" not in media_id


def media_changes(body: dict) -> dict:
    """The changes of PUT /media/:id, {"name"?, "alt"?} (an empty or null alt: none); raises a 400 listing what
    is wrong, each problem naming its field."""
    problems = [f"property {name[:100]} should not exist (a media item takes alt and name)"
                for name in body if name not in ("alt", "name")][:5]
    if "name" in body:
        problems.append(_text_problem("name", body["name"], MAX_NAME_CHARACTERS, 1))
    if body.get("alt") is not None:
        problems.append(_text_problem("alt", body["alt"], MAX_ALT_CHARACTERS, lines=True))
    if not {"alt", "name"} & set(body):
        problems.append("alt or name is required: PUT /media/:id takes {\"alt\"?, \"name\"?}")
    problems = [problem for problem in problems if problem]
    if problems:
        raise bad_request(problems)
    changes = {"name": body["name"].strip()} if "name" in body else {}
    if "alt" in body:
        changes["alt"] = (body["alt"] or "").strip() or None
    return changes


class MediaLibraryApi:
    """GET /media, PUT and DELETE /media/:id, POST /media/delete; the same functions serve the MCP tools."""

    def __init__(self, app: App):
        self.store = app.store
        self.uploads: MediaApi = app.feature(MediaApi)

    @documented("The organization's uploads, newest first, 28 a page, with the posts that use each",
                ("200", object_schema({"media": array_of(LIBRARY_MEDIA), "pages": INTEGER})), "BadRequest",
                (parameter("query", "page", "From 1", schema={"type": "integer", "minimum": 1,
                                                              "maximum": MAX_MEDIA_PAGE}),
                 parameter("query", "search", "Only items whose name, original name or alt text holds this, in any "
                                              "case (ASCII letters only on SQLite)",
                           schema={"type": "string", "maxLength": MAX_SEARCH_CHARACTERS})))
    def list_media(self, request: Request, organization_id: str) -> Response:
        """GET /media?page=&search=: {"media": [...], "pages"}."""
        query = request.query
        return json_response(self.listing(organization_id, page_number(query.get("page")), query.get("search")))

    def listing(self, organization_id: str, page: int, search: Optional[str]) -> dict:
        """One page (a checked number) of the library, items whose texts hold `search` when given; raises a 400
        for a search longer than MAX_SEARCH_CHARACTERS or holding control characters."""
        search = (search or "").strip()
        problem = _text_problem("search", search, MAX_SEARCH_CHARACTERS)
        if problem:
            raise bad_request([problem])
        items, total = media_store.media_page(self.store, organization_id, search or None,
                                              (page - 1) * MEDIA_PER_PAGE, MEDIA_PER_PAGE)
        uses = media_store.media_uses(self.store, organization_id, items)
        return {"media": [{**item, "usedBy": uses[item["id"]]} for item in items],
                "pages": math.ceil(total / MEDIA_PER_PAGE)}

    @route_options(scope="posts", audit="media.updated")  # (an editor may: the role editor, or a full key)
    @documented("Change a media item's name or alt text (the alt text new uses of it get)",
                ("200", LIBRARY_MEDIA), "BadRequest NotFound", (MEDIA_ID,),
                object_schema({}, {"alt": {"type": ["string", "null"], "maxLength": MAX_ALT_CHARACTERS},
                                   "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARACTERS}}))
    def update_media(self, request: Request, organization_id: str) -> Response:
        return json_response(self.update(organization_id, request.params["id"], json_object(request)))

    def update(self, organization_id: str, media_id: str, body: dict) -> dict:
        """PUT /media/:id's answer, the item after the change; raises ApiError (400, 404)."""
        changes = media_changes(body)
        changed = media_store.update_media(self.store, organization_id, media_id, changes) \
            if _may_be_an_id(media_id) else None
        if changed is None:
            raise not_found(MEDIA_NOT_FOUND)
        return {**changed, "usedBy": media_store.media_uses(self.store, organization_id, [changed])[media_id]}

    @route_options(scope="posts", audit="media.deleted")  # (an editor may: the role editor, or a full key)
    @documented("Delete a media item, unless a post not yet published uses it",
                ("200", object_schema({"id": STRING, "deleted": {"const": True}})), "NotFound", (MEDIA_ID,),
                more_answers={"409": json_body(IN_USE, "Posts not yet published use it: nothing was deleted")})
    def delete_media(self, request: Request, organization_id: str) -> Awaitable[Response]:
        """DELETE /media/:id: {"id", "deleted": true}; 409 with `usedBy` while a queued post uses it."""
        result, removal = self.delete(organization_id, request.params["id"])
        if result["status"] == 404:
            raise not_found(MEDIA_NOT_FOUND)
        if result["status"] == 409:
            raise ApiError(409, {"statusCode": 409, "message": result["message"], "error": "Conflict",
                                 "usedBy": result["usedBy"]})
        return self._after([removal] if removal else [], {"id": result["id"], "deleted": True})

    @route_options(scope="posts", audit="media.deleted")  # (an editor may: the role editor, or a full key)
    @documented("Delete several media items, each unless a post not yet published uses it",
                ("200", object_schema({"results": array_of(DELETE_RESULT)})), "BadRequest",
                request=object_schema({"ids": {**array_of(STRING), "minItems": 1, "maxItems": MAX_IDS_PER_DELETE}}))
    def delete_many(self, request: Request, organization_id: str) -> Awaitable[Response]:
        """POST /media/delete {"ids": [...]}: {"results": [{"id", "status", "message", "usedBy"}]}, one per id in
        the order given (duplicates once), each as DELETE /media/:id would answer it."""
        ids = json_object(request).get("ids")
        if not (isinstance(ids, list) and 1 <= len(ids) <= MAX_IDS_PER_DELETE
                and all(isinstance(media_id, str) and 0 < len(media_id) <= 200 for media_id in ids)):
            raise bad_request([f"ids must be a list of 1 to {MAX_IDS_PER_DELETE} media ids"])
        results, removals = [], []
        for media_id in dict.fromkeys(ids):
            result, removal = self.delete(organization_id, media_id)
            results.append(result)
            removals += [removal] if removal else []
        return self._after(removals, {"results": results})

    def delete(self, organization_id: str, media_id: str) -> tuple:
        """({"id", "status" (200, 404 or 409), "message", "usedBy"}, the path of a file to remove now or None)."""
        outcome = media_store.delete_media(self.store, organization_id, media_id) if _may_be_an_id(media_id) else None
        if outcome is None:
            return {"id": media_id, "status": 404, "message": MEDIA_NOT_FOUND, "usedBy": []}, None
        deleted, item, uses = outcome
        if not deleted:
            waiting = [use for use in uses if use["state"] in media_store.UNPUBLISHED_STATES]
            return {"id": media_id, "status": 409, "usedBy": waiting, "message": (
                f"Posts not yet published use this media item ({len(waiting)}, listed in usedBy): change them, "
                "or delete them, first")}, None
        if uses:  # published posts, drafts or failed ones still show (or will send) the file
            return {"id": media_id, "status": 200, "message": "Deleted; its file is kept for the posts that use it",
                    "usedBy": []}, None
        return {"id": media_id, "status": 200, "message": "Deleted", "usedBy": []}, item["path"]

    async def _after(self, paths: list, answer: dict) -> Response:
        """`answer` once the files of deleted items (their paths) are removed."""
        await self.remove_files(paths)
        return json_response(answer)

    async def remove_files(self, paths: list) -> None:
        """Remove the files of deleted items (their paths), from the uploads folder or the bucket."""
        await asyncio.gather(*(self.uploads.remove_upload(path) for path in paths))
