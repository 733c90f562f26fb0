"""The organization's library for writing posts (issue 24): tags, signatures and sets, and a post copied as drafts.

Rules:
- Routes under /public/v1 (rustiz's additions). GET needs the scope read and every change full (the router's
  default): an agent's drafts key may not rename or remove what people file their posts under. POST
  /posts/:id/duplicate needs drafts only, as it makes nothing but drafts; a drafts key's copies wait for a
  person's review like its other posts.
- A body is a JSON object of the route's own fields: another field is a 400 naming it ("property x should not
  exist", Nest's words, as PUT /posts/:id), and every field's problem is a 400 naming the field, all at once.
  A create answers 201 and the new row, a change 200 and the row as it is now, a delete 200 and the row as it
  was (deleted ones are kept, marked: posts still show a deleted tag).
- A signature's text is HTML, sanitised as post content is (it becomes post content).
- Every id is looked up in the caller's organization: another organization's answers as one that never
  existed (404). A set's channels that are not the caller's live channels are refused by the ids the caller
  sent, whether or not they exist elsewhere.
- MCP's tools (mcp_tools.py) call the same `add`, `change`, `remove`, `listing` and `duplicate_post`, so an agent's
  tag is checked exactly as one sent to the API.
"""
from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple, Optional

from rustiz import App, Request, Response, bad_request, encode_json, json_response, nest_error, new_cuid, \
    new_uuid, not_found, route_options, scope_allows
from .api_docs import BOOLEAN, STRING, array_of, documented, object_schema, parameter
from .api_posts import POST_NOT_FOUND
from .post_events import queue_post_event
from .storage import posts as post_store
from .storage import sets as set_store
from .storage import signatures as signature_store
from .storage import tags as tag_store
from .storage.tags import TagNameTaken
from .text import sanitize_html, strip_html

MAX_TAG_NAME_CHARACTERS = 50
MAX_SET_NAME_CHARACTERS = 100
MAX_SIGNATURE_CHARACTERS = 5000
MAX_SET_CHANNELS = 500
MAX_SET_SETTINGS_BYTES = 64 * 1024  # a set's settings as JSON: far beyond every provider's settings together
COLOR = re.compile(r"#[0-9A-Fa-f]{6}\Z")
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")
DEFAULT_TAG_COLOR = "#000000"  # (the tag table's default: tags made before colours were chosen here)


# --- what the routes take and answer, for their documentation ------------------------------------------------

TAG = object_schema({"id": STRING, "name": STRING, "color": {"type": "string", "pattern": "^#[0-9A-Fa-f]{6}$"}})
TAG_CHANGE = object_schema({}, {"name": {"type": "string", "minLength": 1, "maxLength": MAX_TAG_NAME_CHARACTERS},
                                "color": TAG["properties"]["color"]}, additionalProperties=False)
TAG_BODY = TAG_CHANGE | {"required": ["name"], "description": f"color: {DEFAULT_TAG_COLOR} when left out"}
TAG_ID = parameter("path", "id", "A tag id")
SIGNATURE = object_schema({"id": STRING, "content": STRING, "autoAdd": BOOLEAN, "createdAt": STRING})
SIGNATURE_CHANGE = object_schema({}, {"content": {"type": "string", "minLength": 1,
                                                  "maxLength": MAX_SIGNATURE_CHARACTERS}, "autoAdd": BOOLEAN},
                                 additionalProperties=False)
SIGNATURE_BODY = SIGNATURE_CHANGE | {"required": ["content"], "description": "autoAdd: false when left out"}
SIGNATURE_ID = parameter("path", "id", "A signature id")
SET = object_schema({"id": STRING, "name": STRING, "channels": array_of(STRING), "settings": {
    "type": "object", "additionalProperties": {"type": "object"},
    "description": "Each channel's settings (as POST /posts takes them), by channel id"}})
SET_CHANGE = object_schema({}, {"name": {"type": "string", "minLength": 1, "maxLength": MAX_SET_NAME_CHARACTERS},
                                "channels": {**array_of(STRING), "minItems": 1, "maxItems": MAX_SET_CHANNELS},
                                "settings": SET["properties"]["settings"]}, additionalProperties=False)
SET_BODY = SET_CHANGE | {"required": ["name", "channels"], "description": "settings: {} when left out"}
SET_ID = parameter("path", "id", "A set id")
DUPLICATE = object_schema({"group": STRING, "multiChannelGroup": STRING, "posts": array_of(object_schema(
    {"id": STRING, "integration": STRING, "parentPostId": {"type": ["string", "null"]}}))})


def body_object(body: Any) -> dict:
    """A request body that must be a JSON object (a list or a number is a 400, not an empty object)."""
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object")
    return body


def _checked_name(value: Any, limit: int, problems: list) -> Optional[str]:
    """A name without its surrounding spaces: 1 to `limit` characters, no control characters."""
    name = value.strip() if isinstance(value, str) else ""
    if not name or len(name) > limit or CONTROL_CHARACTERS.search(name):
        problems.append(f"name must be a string of 1 to {limit} characters (without line breaks or control "
                        f"characters)")
        return None
    return name


class AreaStorage(NamedTuple):
    """An area's storage functions; each takes the Store and the organization id first."""
    rows: Callable[..., list]  # the live rows
    row: Callable[..., Optional[dict]]  # (row id): a live row, or None
    create: Callable[..., dict]  # (**columns): the new row
    update: Callable[..., Optional[dict]]  # (row id, {column: value}): the row now, or None
    delete: Callable[..., bool]  # (row id): whether a live row was marked deleted


class LibraryRoutes:
    """What the tags, signatures and sets routes share: a body's fields checked, then a row added, changed or
    removed in the caller's organization. Each area says its `noun`, its `fields` (the body's, with the column
    each is stored in), those a create needs and their defaults, how each field is checked, and its storage."""

    noun = ""
    fields: dict = {}  # the body's field -> its column
    required: tuple = ()
    defaults: dict = {}  # column -> its value when a create leaves the field out
    storage: AreaStorage

    def __init__(self, app: App):
        self.store = app.store

    # --- each area's own --------------------------------------------------------------------------------

    def checked_value(self, organization_id: str, field: str, value: Any, problems: list) -> Any:
        """The value to store for one field of the body (problems go to `problems`)."""
        raise NotImplementedError

    def check_together(self, organization_id: str, row: dict, problems: list) -> None:
        """Rules across fields, on the row as it would be stored (column -> value)."""

    def shown(self, organization_id: str, rows: list) -> list:
        """Stored rows as the routes answer them."""
        return rows

    # --- shared -----------------------------------------------------------------------------------------

    def listing(self, organization_id: str) -> list:
        return self.shown(organization_id, self.storage.rows(self.store, organization_id))

    def add(self, organization_id: str, body: Any) -> dict:
        """A new row from a create's body; raises ApiError 400 (each problem named) or 409."""
        row = {**self.defaults, **self._checked_changes(organization_id, body, creating=True)}
        self._check_row(organization_id, row)
        return self._write(self.storage.create, organization_id, **row)

    def change(self, organization_id: str, row_id: str, body: Any) -> dict:
        """The row changed as the body says; raises ApiError 404, 400 or 409."""
        current = self._existing(organization_id, row_id)
        changes = self._checked_changes(organization_id, body, creating=False)
        self._check_row(organization_id, {**{self.fields[name]: value for name, value in current.items()
                                             if name in self.fields}, **changes})
        changed = self._write(self.storage.update, organization_id, row_id, changes)
        if changed is None:  # (removed meanwhile)
            raise self._not_found()
        return self.shown(organization_id, [changed])[0]

    def remove(self, organization_id: str, row_id: str) -> dict:
        """The row as it was before it was marked deleted; raises ApiError 404."""
        current = self._existing(organization_id, row_id)
        if not self.storage.delete(self.store, organization_id, row_id):
            raise self._not_found()
        return current

    def _existing(self, organization_id: str, row_id: str) -> dict:
        current = self.storage.row(self.store, organization_id, row_id)
        if current is None:
            raise self._not_found()
        return self.shown(organization_id, [current])[0]

    def _write(self, write: Callable, *arguments: Any, **columns: Any) -> Any:
        try:
            return write(self.store, *arguments, **columns)
        except TagNameTaken as taken:  # (tags alone have names unique in the organization)
            raise nest_error(409, f"name: this organization already has a tag named {taken.name!r} (tag names are "
                                  f"unique whatever their case): choose another name, or change that tag") from None

    def _not_found(self) -> Exception:
        return not_found(f"{self.noun.capitalize()} not found (GET /public/v1/{self.noun}s lists this "
                         f"organization's)")

    def _checked_changes(self, organization_id: str, body: Any, creating: bool) -> dict:
        body = body_object(body)
        problems = [f"property {name} should not exist" for name in body if name not in self.fields]
        if creating:
            problems += [f"{name} should not be null or undefined" for name in self.required if body.get(name) is None]
        elif not any(name in self.fields for name in body):
            problems.append(f"give at least one of {', '.join(self.fields)} to change")
        changes = {}
        for name, column in self.fields.items():
            if name in body and not (creating and name in self.required and body[name] is None):
                changes[column] = self.checked_value(organization_id, name, body[name], problems)
        if problems:
            raise bad_request(problems)
        return changes

    def _check_row(self, organization_id: str, row: dict) -> None:
        problems: list = []
        self.check_together(organization_id, row, problems)
        if problems:
            raise bad_request(problems)


class TagsApi(LibraryRoutes):
    """GET/POST /tags, PUT/DELETE /tags/:id: a name (unique in the organization whatever its case) and a colour."""

    noun = "tag"
    fields = {"name": "name", "color": "color"}
    required = ("name",)
    defaults = {"color": DEFAULT_TAG_COLOR}
    storage = AreaStorage(tag_store.tags, tag_store.tag, tag_store.create_tag, tag_store.update_tag,
                          tag_store.delete_tag)

    def checked_value(self, organization_id: str, field: str, value: Any, problems: list) -> Any:
        if field == "name":
            return _checked_name(value, MAX_TAG_NAME_CHARACTERS, problems)
        if not isinstance(value, str) or not COLOR.match(value):
            problems.append("color must be a colour written #RRGGBB, for example #3b82f6")
        return value

    @documented("The organization's tags, by name (rustiz)", ("200", object_schema({"tags": array_of(TAG)})))
    def list_tags(self, request: Request, organization_id: str) -> Response:
        return json_response({"tags": self.listing(organization_id)})

    @route_options(scope="posts", audit="tag.created")  # (an editor may: the role editor, or a full key)
    @documented("A new tag (rustiz; scope full): its name is unique in the organization whatever its case (409)",
                ("201", TAG), "BadRequest Conflict", request=TAG_BODY)
    def create(self, request: Request, organization_id: str) -> Response:
        return json_response(self.add(organization_id, request.json()), 201)

    @route_options(scope="posts", audit="tag.updated")  # (an editor may: the role editor, or a full key)
    @documented("Rename or recolour a tag (rustiz; scope full); its posts keep it", ("200", TAG),
                "BadRequest NotFound Conflict", (TAG_ID,), TAG_CHANGE)
    def update(self, request: Request, organization_id: str) -> Response:
        return json_response(self.change(organization_id, request.params["id"], request.json()))

    @route_options(scope="posts", audit="tag.deleted")  # (an editor may: the role editor, or a full key)
    @documented("Delete a tag (rustiz; scope full): posts keep showing it, its name is free again",
                ("200", TAG), "NotFound", (TAG_ID,))
    def delete(self, request: Request, organization_id: str) -> Response:
        return json_response(self.remove(organization_id, request.params["id"]))


class SignaturesApi(LibraryRoutes):
    """GET/POST /signatures, PUT/DELETE /signatures/:id: text the composer adds to new posts, at most one of
    them automatically (autoAdd: saving one with it takes it from the others)."""

    noun = "signature"
    fields = {"content": "content", "autoAdd": "auto_add"}
    required = ("content",)
    defaults = {"auto_add": False}
    storage = AreaStorage(signature_store.signatures, signature_store.signature, signature_store.create_signature,
                          signature_store.update_signature, signature_store.delete_signature)

    def checked_value(self, organization_id: str, field: str, value: Any, problems: list) -> Any:
        if field == "autoAdd":
            if not isinstance(value, bool):
                problems.append("autoAdd must be a boolean value")
            return value
        # Kept as post content is (it becomes post content): HTML sanitised, so no page can be made to run it.
        content = sanitize_html(value) if isinstance(value, str) and len(value) <= MAX_SIGNATURE_CHARACTERS else ""
        if not strip_html(content).strip():
            problems.append(f"content must be a string of 1 to {MAX_SIGNATURE_CHARACTERS} characters with some text "
                            f"(HTML as post content, sanitised the same way)")
        return content

    @documented("The organization's signatures, oldest first (rustiz)",
                ("200", object_schema({"signatures": array_of(SIGNATURE)})))
    def list_signatures(self, request: Request, organization_id: str) -> Response:
        return json_response({"signatures": self.listing(organization_id)})

    @route_options(scope="posts", audit="signature.created")  # (an editor may: the role editor, or a full key)
    @documented("A new signature (rustiz; scope full); with autoAdd, the only one added to new posts by itself",
                ("201", SIGNATURE), "BadRequest", request=SIGNATURE_BODY)
    def create(self, request: Request, organization_id: str) -> Response:
        return json_response(self.add(organization_id, request.json()), 201)

    @route_options(scope="posts", audit="signature.updated")  # (an editor may: the role editor, or a full key)
    @documented("Change a signature's text or autoAdd (rustiz; scope full); autoAdd true takes it from the others",
                ("200", SIGNATURE), "BadRequest NotFound", (SIGNATURE_ID,), SIGNATURE_CHANGE)
    def update(self, request: Request, organization_id: str) -> Response:
        return json_response(self.change(organization_id, request.params["id"], request.json()))

    @route_options(scope="posts", audit="signature.deleted")  # (an editor may: the role editor, or a full key)
    @documented("Delete a signature (rustiz; scope full)", ("200", SIGNATURE), "NotFound", (SIGNATURE_ID,))
    def delete(self, request: Request, organization_id: str) -> Response:
        return json_response(self.remove(organization_id, request.params["id"]))


class SetsApi(LibraryRoutes):
    """GET/POST /sets, PUT/DELETE /sets/:id: a name, some of the organization's channels and their settings."""

    noun = "set"
    fields = {"name": "name", "channels": "channels", "settings": "settings"}
    required = ("name", "channels")
    defaults = {"settings": {}}
    storage = AreaStorage(set_store.sets, set_store.post_set, set_store.create_set, set_store.update_set,
                          set_store.delete_set)

    def checked_value(self, organization_id: str, field: str, value: Any, problems: list) -> Any:
        if field == "name":
            return _checked_name(value, MAX_SET_NAME_CHARACTERS, problems)
        if field == "channels":
            return self._checked_channels(organization_id, value, problems)
        if (not isinstance(value, dict) or not all(isinstance(item, dict) for item in value.values())
                or len(encode_json(value).encode()) > MAX_SET_SETTINGS_BYTES):
            problems.append(f"settings must be an object of each channel's settings object, by channel id, of at most "
                            f"{MAX_SET_SETTINGS_BYTES // 1024} KiB as JSON")
        return value

    def _checked_channels(self, organization_id: str, value: Any, problems: list) -> Any:
        if (not isinstance(value, list) or not value or len(value) > MAX_SET_CHANNELS
                or not all(isinstance(item, str) for item in value)):
            problems.append(f"channels must be an array of 1 to {MAX_SET_CHANNELS} channel ids")
            return value
        live = self._live_channel_ids(organization_id)
        unknown = [channel_id for channel_id in dict.fromkeys(value) if channel_id not in live]
        if unknown:
            problems.append(f"channels: {', '.join(map(repr, unknown[:10]))} "
                            f"{'is not a channel' if len(unknown) == 1 else 'are not channels'} of this organization "
                            f"(GET /public/v1/integrations lists them)")
        return list(dict.fromkeys(value))  # (each channel once, in the order given)

    def _live_channel_ids(self, organization_id: str) -> set:
        return {channel["id"] for channel in self.store.integrations(organization_id)}

    def check_together(self, organization_id: str, row: dict, problems: list) -> None:
        stray = [key for key in row.get("settings") or {} if key not in (row.get("channels") or ())]
        if isinstance(row.get("channels"), list) and stray:
            problems.append(f"settings: {', '.join(map(repr, stray[:10]))} "
                            f"{'is not one' if len(stray) == 1 else 'are not'} of the set's channels")

    def shown(self, organization_id: str, rows: list) -> list:
        live = self._live_channel_ids(organization_id)
        return [_without_gone_channels(row, live) for row in rows]

    @documented("The organization's sets, by name (rustiz); channels deleted since are left out",
                ("200", object_schema({"sets": array_of(SET)})))
    def list_sets(self, request: Request, organization_id: str) -> Response:
        return json_response({"sets": self.listing(organization_id)})

    @route_options(scope="posts", audit="set.created")  # (an editor may: the role editor, or a full key)
    @documented("A new set (rustiz; scope full): channels of this organization, settings by channel id",
                ("201", SET), "BadRequest", request=SET_BODY)
    def create(self, request: Request, organization_id: str) -> Response:
        return json_response(self.add(organization_id, request.json()), 201)

    @route_options(scope="posts", audit="set.updated")  # (an editor may: the role editor, or a full key)
    @documented("Change a set's name, channels or settings (rustiz; scope full)", ("200", SET),
                "BadRequest NotFound", (SET_ID,), SET_CHANGE)
    def update(self, request: Request, organization_id: str) -> Response:
        return json_response(self.change(organization_id, request.params["id"], request.json()))

    @route_options(scope="posts", audit="set.deleted")  # (an editor may: the role editor, or a full key)
    @documented("Delete a set (rustiz; scope full)", ("200", SET), "NotFound", (SET_ID,))
    def delete(self, request: Request, organization_id: str) -> Response:
        return json_response(self.remove(organization_id, request.params["id"]))


def _without_gone_channels(row: dict, live: set) -> dict:
    """A set as shown: its channels that are still live channels, and only their settings."""
    channels = [channel_id for channel_id in row["channels"] if channel_id in live]
    return {**row, "channels": channels,
            "settings": {key: value for key, value in row["settings"].items() if key in channels}}


class PostCopies:
    """POST /posts/:id/duplicate: a post copied as drafts — its thread on its channel and the threads the same
    request made on other channels (its multi-channel group)."""

    def __init__(self, app: App):
        self.store = app.store

    @route_options(scope="drafts", audit="post.duplicated")  # (it makes drafts only; a drafts key's wait for review)
    @documented("Copy a post as drafts at the same date: its thread (every part, with its settings, media, delay, "
                "repeat interval and tags) and the threads made with it on other channels, each in a new group, "
                "together in a new multi-channel group; the original is untouched (rustiz; scope drafts)",
                ("201", DUPLICATE), "NotFound",
                (parameter("path", "id", "The id of any post of the group (its first part or a reply)"),))
    def duplicate(self, request: Request, organization_id: str) -> Response:
        return json_response(self.duplicate_post(organization_id, request.params["id"], request.scope), 201)

    def duplicate_post(self, organization_id: str, post_id: str, scope: str) -> dict:
        """{group (the copy of the post's own thread), multiChannelGroup, posts: [{id, integration, parentPostId}]},
        the copies thread after thread, each in thread order, the given post's first; raises ApiError 404."""
        post = post_store.post(self.store, organization_id, post_id)
        if post is None:  # (another organization's post answers as one that never existed)
            raise not_found(POST_NOT_FOUND)
        made_together = new_uuid()
        originals = [post_store.thread(self.store, organization_id, group)
                     for group in post_store.groups_made_together(self.store, organization_id, post)]
        threads = [self._copied_thread(thread, made_together, scope) for thread in originals if thread]
        for rows, thread in zip(threads, [thread for thread in originals if thread]):  # (a repeat's end, issue 26)
            ends = dict(zip(("repeat_until", "repeat_count"), post_store.repeat_end(self.store, thread[0]["id"])[1:]))
            for row in rows:
                row.update(ends)
        root_id = originals[0][0]["id"]
        tags = post_store.post_tags(self.store, [root_id]).get(root_id, [])
        post_store.save_posts(self.store, organization_id, threads, set(),
                              [tag["tag"]["name"] for tag in tags if tag["tag"]["deletedAt"] is None])
        queue_post_event(self.store, organization_id, "post.created", [rows[0]["id"] for rows in threads])
        return {"group": threads[0][0]["post_group"], "multiChannelGroup": made_together,
                "posts": [{"id": row["id"], "integration": row["integration_id"], "parentPostId": row["parent_post_id"]}
                          for rows in threads for row in rows]}

    @staticmethod
    def _copied_thread(thread: list, made_together: str, scope: str) -> list:
        group, copied_ids, rows = new_uuid(), {}, []
        for part in thread:  # (each part after its parent)
            copied_ids[part["id"]] = new_cuid()
            rows.append({"id": copied_ids[part["id"]], "existing": False, "state": "DRAFT",
                         "publish_date": part["publishDate"], "integration_id": part["integrationId"],
                         "content": part["content"], "delay": part["delay"], "post_group": group,
                         "parent_post_id": copied_ids.get(part["parentPostId"]), "settings": part["settings"],
                         "image": part["image"], "creation_method": part["creationMethod"],
                         "interval_in_days": part["intervalInDays"], "multi_channel_group": made_together})
            if not scope_allows(scope, "posts"):  # (made by an agent or an author: a person reviews it)
                rows[-1]["review"] = "review"
        return rows
