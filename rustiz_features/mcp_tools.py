"""MCP's tools: Postiz's eight, with their schemas and texts, and rustiz's additions.

Rules:
- Every tool calls the same functions as the public API (the App's PostsApi, ChannelsApi, MediaApi), so
  a post scheduled by an agent is checked and stored exactly as one sent to POST /posts.
- Arguments are checked against the tool's input schema first, with zod's messages.
- A tool that fails answers an isError result, never a JSON-RPC error.
- Each tool needs a key scope (TOOL_SCOPES, which must name every tool); a drafts key's posts are drafts
  that wait for a person's review. Tool calls are counted per key (RUSTIZ_MCP_TOOL_LIMIT a minute, and
  RUSTIZ_MCP_POST_LIMIT for the tools that create posts), so that an agent's loop cannot flood a channel.
"""
from __future__ import annotations

import json
import re
import traceback
from typing import Any, Awaitable, Callable, Optional, Union

from rustiz import (ApiError, App, DatabaseUnwritable, KeyIdentity, json_dumps, log, new_cuid, scope_allows,
                    scope_refusal_text)
from .api_channels import ChannelsApi
from .api_library import LibraryRoutes, PostCopies, SetsApi, SignaturesApi, TagsApi
from .api_posts import MAX_NOTIFICATIONS_PAGE, PostsApi
from .audit import record_tool_call
from .catalogue import PROVIDERS, provider_max_length
from .duplicates import duplicate_message, duplicates_allowed, find_duplicates
from .media import MediaApi
from .media_library import MAX_MEDIA_PAGE, MAX_SEARCH_CHARACTERS, MEDIA_PER_PAGE, MediaLibraryApi
from .preview_links import MAX_COMMENT_CHARACTERS, CommentsApi, key_author
from .validation import validate_create_post
from .storage import channels as channel_store
from .storage import media_library as media_store


#
MCP_HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07")
MCP_MODERN_VERSIONS = ("2026-07-28",)
MCP_LATEST_HANDSHAKE = "2025-11-25"
MCP_MAX_BODY_BYTES = 4 * 1024 * 1024  # a thread of 100 long posts is well under 1 MiB
MCP_MAX_BATCH = 100  # JSON-RPC messages in one POST
MCP_MAX_POSTS_PER_CALL = 50  # socialPost items of one schedule call
MCP_MAX_THREAD_PARTS = 100  # postsAndComments of one socialPost
MCP_MAX_SSE_SESSIONS = 256  # open legacy SSE streams per worker
MCP_SSE_QUEUE_BYTES = 4 * 1024 * 1024  # answers a legacy SSE stream's client may leave unread; more ends the stream
MCP_SSE_ENDED_REMEMBERED = 1024  # streams ended that way, remembered per worker to tell their POSTs why
MCP_CORS_HEADERS = [("Access-Control-Allow-Origin", "*"), ("Access-Control-Allow-Methods", "*"),
                    ("Access-Control-Allow-Headers", "*"), ("Access-Control-Expose-Headers", "*")]
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION = -32020, -32022
# The key scope each tool needs (see docs/api.md, "API keys and scopes"); tests/test_mcp_scopes.py checks every
# tool has one. The tools that create posts get the caller's scope and the tighter RUSTIZ_MCP_POST_LIMIT.
TOOL_SCOPES = {"integrationList": "read", "groupList": "read", "integrationSchema": "read", "triggerTool": "drafts",
               "integrationSchedulePostTool": "drafts", "postsListTool": "read", "postSettingsTool": "full",
               "uploadFromUrlTool": "drafts", "postGetTool": "read", "postRetryTool": "full",
               "notificationsListTool": "read",
               # the library (api_library.py): read to list, full to change; duplicatePost makes drafts only
               "tagList": "read", "tagCreate": "full", "tagUpdate": "full", "tagDelete": "full",
               "signatureList": "read", "signatureCreate": "full", "signatureUpdate": "full",
               "signatureDelete": "full", "setList": "read", "setCreate": "full", "setUpdate": "full",
               "setDelete": "full", "duplicatePost": "drafts",
               # the media library (media_library.py), under the names postiz-agent's commands use
               "listMedia": "read", "updateMedia": "full", "deleteMedia": "full",
               # comments on a post (preview_links.py): read to list them, drafts (an author) to add one
               "listPostComments": "read", "addPostComment": "drafts"}
# The audit log's action of each tool that changes something, recorded after its success with the key as an
# agent ("mcp"); tests/test_api_audit.py checks that every tool but a reading one has one, or a reason not to.
TOOL_ACTIONS = {"integrationSchedulePostTool": "post.created", "postSettingsTool": "post.edited",
                "postRetryTool": "post.retried", "duplicatePost": "post.duplicated",
                "updateMedia": "media.updated", "deleteMedia": "media.deleted", "addPostComment": "comment.created",
                **{f"{noun}{verb}": f"{noun}.{past}" for noun in ("tag", "signature", "set")
                   for verb, past in (("Create", "created"), ("Update", "updated"), ("Delete", "deleted"))}}
POST_CREATING_TOOLS = ("integrationSchedulePostTool", "duplicatePost")
CALLER_AWARE_TOOLS = ("addPostComment",)  # tools that record who called (a comment's author): they get the key
MCP_LIMIT_WINDOW_SECONDS = 60


class McpError(Exception):
    """A JSON-RPC error answer to one request."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def payload(self) -> dict:
        error = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ToolFailed(Exception):
    """A tool cannot do what was asked: an isError result whose text is the message (Postiz's thrown errors)."""


def rpc_error(code: int, message: str, request_id: Any = None, data: Any = None) -> dict:
    return {"jsonrpc": "2.0", "error": McpError(code, message, data).payload(), "id": request_id}


# --- tool schemas, as zod-to-json-schema writes Postiz's definitions ----------------------------


def _described(schema: dict, description: Optional[str]) -> dict:
    return {**schema, "description": description} if description is not None else schema


def _z_string(description: Optional[str] = None, **extra: Any) -> dict:
    return _described({"type": "string", **extra}, description)


def _z_boolean(description: Optional[str] = None) -> dict:
    return _described({"type": "boolean"}, description)


def _z_any(description: str) -> dict:
    return {"description": description}


def _z_array(items: dict, description: Optional[str] = None) -> dict:
    return _described({"type": "array", "items": items}, description)


def _z_object(properties: dict, optional: tuple = (), description: Optional[str] = None,
              extra_keys: Any = False) -> dict:
    """An object: every key required unless optional or an any (zod's .optional() and z.any())."""
    required = [name for name, schema in properties.items()
                if name not in optional and ("type" in schema or "anyOf" in schema)]
    schema: dict = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = extra_keys
    return _described(schema, description)


def _root(schema: dict) -> dict:
    return {**schema, "$schema": "http://json-schema.org/draft-07/schema#"}


def _annotations(title: str, read_only: bool, destructive: bool, idempotent: bool, open_world: bool) -> dict:
    return {"title": title, "readOnlyHint": read_only, "destructiveHint": destructive,
            "idempotentHint": idempotent, "openWorldHint": open_world}


_READ_ONLY = (True, False, True, False)
_KEY_VALUE_DESCRIPTION = "Value of the key, always prefer the id then label if possible"
_PLATFORMS_DESCRIPTION = f"platform identifier ({', '.join(PROVIDERS)})"
_ERRORS_OUTPUT = _z_object({"errors": {"type": "string"}})
_POST_ITEM_OUTPUT = _z_object({"id": {"type": "string"}, "publishDate": {"type": "string"},
                               "state": {"type": "string"}, "content": {"type": "string"},
                               "settings": {}, "group": {"type": "string"}, "integrationId": {"type": "string"},
                               "platform": {"type": "string"}, "integrationName": {"type": "string"}})


def _schedule_input() -> dict:
    content = ("The content of the post, HTML, Each line must be wrapped in <p> here is the possible tags: h1, h2, "
               "h3, u, strong, li, ul, p (you can't have u and strong together)")
    part = _z_object({"content": _z_string(content),
                      "attachments": _z_array({"type": "string"}, "The image of the post (URLS)")})
    setting = _z_object({"key": _z_string("Name of the settings key to pass"), "value": _z_any(_KEY_VALUE_DESCRIPTION)})
    post = _z_object({
        "integrationId": _z_string("The id of the integration (not internal id)"),
        "isPremium": _z_boolean("If the integration is X, return if it's premium or not"),
        "date": _z_string("The date of the post in UTC time"),
        "shortLink": _z_boolean("If the post has a link inside, we can ask the user if they want to add a short link"),
        "type": _z_string("The type of the post, if we pass now, we should pass the current date also (rustiz: "
                          "queue puts it on the channel's next free slot of its posting schedule; the date is then "
                          "ignored)", enum=["draft", "schedule", "now", "queue"]),
        "postsAndComments": _z_array(part, "first item is the post, every other item is the comments"),
        "settings": _z_array(setting, "This relies on the integrationSchema tool to get the settings [input:settings]"),
        "allowDuplicate": _z_boolean("rustiz: post even when the same text is queued or was published on this "
                                     "channel within 24 hours of this date (otherwise that is refused)"),
        # (issue 26, queue: an evergreen post goes back in its channel's queue after the channel's cooldown)
        "evergreen": _z_boolean("rustiz: queue this post again after it went out, when its channel's evergreen "
                                "switch is on"),
    }, optional=("allowDuplicate", "evergreen"))
    return _root(_z_object({"socialPost": _z_array(post, "Individual post")}))


_SCHEDULE_DESCRIPTION = """
Use this when the user wants to create a draft, scheduled, or immediate social media post on their connected channels, based on the integrationSchema tool.
Examples of the input shape:

A single LinkedIn post with one comment
- socialPost array length will be one
- postsAndComments array length will be two (one for the post, one for the comment)

20 Facebook posts each on individual days without comments
- socialPost array length will be 20
- postsAndComments array length will be one

Do not use this to update or delete existing posts.
If validation fails, the result contains output.errors describing what to fix; the call can be retried with corrected parameters.
"""

_POSTS_LIST_DESCRIPTION = """
List the organization's posts scheduled to be published between two dates (the same data as the "List Posts" API endpoint).
Returns every post in the window whatever its state (scheduled, draft, published, errored).
"startDate" and "endDate" are required (UTC) - to list all upcoming posts, pass a wide window (for example from now to a year ahead).
Each item has an "id", its publish date, state, content, channel and current provider settings.
Posts cannot be deleted through the Postiz tools - if the user wants to delete a post, tell them to do it themselves in the Postiz app; never offer to delete a post.
"""

_POST_SETTINGS_DESCRIPTION = """
Update the provider settings of an existing post (scheduled or draft) that was NOT published yet.
Only the settings change - the content and the publish date stay exactly as they are.
Find the post first (list your posts) and pass its "id" here.
The settings are merged into the existing ones, so only pass the keys you want to change; anything you don't pass stays as it is.
This relies on the integrationSchema tool [input:settings] to know which keys exist for the platform.
If validation fails, the result contains output.errors describing what to fix; the call can be retried with corrected parameters.
"""


def _mcp_tool_definitions() -> list:
    """tools/list in Postiz's order (without its AI-generation tools), then rustiz's additions."""
    return (_postiz_tool_definitions() + _rustiz_tool_definitions() + _library_tool_definitions()
            + _media_tool_definitions() + _comment_tool_definitions())


def _postiz_tool_definitions() -> list:
    """Postiz's tools, field by field (descriptions the reference does not give are rustiz's)."""
    trigger_description = (
        "Use this to call a provider helper function (a methodName from the integrationSchema callable tools) "
        "that fetches provider-specific data needed for settings, like ids or search results.\n      Some helper "
        "functions require values provided by the user, like a word to search for. methodName is required "
        "[input:callable-tools].\n      If provider auth is expired, this tool may refresh the stored integration "
        "token; if refresh fails, it marks the channel as needing reconnect and notifies the organization.")
    schema_description = (
        "Everytime we want to schedule a social media post, we need to understand the schema of the integration.\n"
        "         This tool helps us get the schema of the integration.\n         Sometimes we might get a schema "
        "back the requires some id, for that, you can get information from 'tools'\n         And use the "
        "triggerTool function.\n        ")
    schema_output = _z_object({"output": _z_object({
        "rules": {"type": "string"}, "maxLength": {"type": "number"}, "settings": {},
        "tools": {"type": "array", "items": _z_object({
            "description": {"type": "string"}, "methodName": {"type": "string"},
            "dataSchema": {"type": "array", "items": _z_object({
                "key": {"type": "string"}, "description": {"type": "string"}, "type": {"type": "string"}})}})}})})
    return [
        {"name": "integrationList",
         "description": "This tool list available integrations to schedule posts to. Optionally pass a group id "
                        "(from the groupList tool) to only list integrations belonging to that group",
         "inputSchema": _root(_z_object({"group": _z_string(
             "Optional group (customer) id from the groupList tool to filter the integrations")}, optional=("group",))),
         "outputSchema": _root(_z_object({"output": {"type": "array", "items": _z_object({
             "id": {"type": "string"}, "name": {"type": "string"}, "picture": {"type": "string"},
             "platform": {"type": "string"}})}})),
         "annotations": _annotations("List Integrations", *_READ_ONLY)},
        {"name": "groupList",
         "description": "This tool lists the available groups (customers). Use a group id with the integrationList "
                        "tool to filter the integrations belonging to that group",
         "inputSchema": _root(_z_object({})),
         "outputSchema": _root(_z_object({"output": {"type": "array", "items": _z_object({
             "id": {"type": "string"}, "name": {"type": "string"}})}})),
         "annotations": _annotations("List Groups", *_READ_ONLY)},
        {"name": "integrationSchema", "description": schema_description,
         "inputSchema": _root(_z_object({"isPremium": _z_boolean("is this the user premium? if not, set to false"),
                                         "platform": _z_string(_PLATFORMS_DESCRIPTION)})),
         "outputSchema": _root(schema_output),
         "annotations": _annotations("Get Integration Schema", *_READ_ONLY)},
        {"name": "triggerTool", "description": trigger_description,
         "inputSchema": _root(_z_object({
             "integrationId": _z_string("The id of the integration"),
             "methodName": _z_string("The methodName from the `integrationSchema` functions in the tools array, "
                                     "required"),
             "dataSchema": _z_array(_z_object({"key": _z_string("Name of the settings key to pass"),
                                               "value": _z_string("Value of the key")}))})),
         "outputSchema": _root(_z_object({"output": {"anyOf": [
             {"type": "array", "items": {"type": "object", "additionalProperties": {}}},
             {"type": "object", "additionalProperties": {}}, {"type": "string"}]}})),
         "annotations": _annotations("Trigger Integration Tool", False, True, False, True)},
        {"name": "integrationSchedulePostTool", "description": _SCHEDULE_DESCRIPTION,
         "inputSchema": _schedule_input(),
         "outputSchema": _root(_z_object({"output": {"anyOf": [
             {"type": "array", "items": _z_object({"postId": {"type": "string"}, "integration": {"type": "string"}})},
             _ERRORS_OUTPUT]}})),
         "annotations": _annotations("Schedule Social Media Post", False, True, False, True)},
        {"name": "postsListTool", "description": _POSTS_LIST_DESCRIPTION,
         "inputSchema": _root(_z_object({
             "startDate": _z_string("Start of the window (UTC), for example 2026-07-20T00:00:00"),
             "endDate": _z_string("End of the window (UTC), for example 2026-08-20T00:00:00"),
             "customer": _z_string("Optional customer (group) id to filter the channels by")},
             optional=("customer",))),
         "outputSchema": _root(_z_object({"output": _z_object({"posts": {"type": "array",
                                                                         "items": _POST_ITEM_OUTPUT}})})),
         "annotations": _annotations("List Posts", *_READ_ONLY)},
        {"name": "postSettingsTool", "description": _POST_SETTINGS_DESCRIPTION,
         "inputSchema": _root(_z_object({
             "id": _z_string('The "id" of the post to update its settings'),
             "settings": _z_array(_z_object({"key": _z_string("Name of the settings key to change"),
                                             "value": _z_any(_KEY_VALUE_DESCRIPTION)}),
                                  "Settings keys to change, merged into the existing settings. This relies on the "
                                  "integrationSchema tool to get the settings [input:settings]")})),
         "outputSchema": _root(_z_object({"output": {"anyOf": [
             _z_object({"postId": {"type": "string"}, "publishDate": {"type": "string"}}), _ERRORS_OUTPUT]}})),
         "annotations": _annotations("Update Post Settings", False, False, False, False)},
        {"name": "uploadFromUrlTool",
         "description": "Upload a remote image or video into the media library from a public URL.\nUse this before "
                        "scheduling a post when the user provides an external media URL (not already hosted on our "
                        "domain),\nso the attachment passes the upload-domain validation. Returns the hosted media "
                        "{ id, path } to use as an attachment, or { error } on failure.",
         "inputSchema": _root(_z_object({"url": _z_string("The public URL of the image or video to upload",
                                                          format="uri")})),
         # {id, path} or {error}: one object with all three optional, as MCP wants an object at the root.
         "outputSchema": _root(_z_object({"id": {"type": "string"}, "path": {"type": "string"},
                                          "error": {"type": "string"}}, optional=("id", "path", "error"))),
         "annotations": _annotations("Upload Media From URL", False, False, False, True)},
    ]


def _rustiz_tool_definitions() -> list:
    """rustiz's additions, so that an agent can check what became of its posts (and retry a failed one)."""
    return [
        {"name": "postGetTool",
         "description": "Read one post by its \"id\" (from integrationSchedulePostTool or postsListTool): its state "
                        "(QUEUE, DRAFT, PUBLISHING, PUBLISHED, ERROR), the error that stopped it, the URL where it "
                        "was published (releaseURL), its settings, media and the thread replies that follow it.",
         "inputSchema": _root(_z_object({"id": _z_string('The "id" of the post')})),
         "outputSchema": _root(_z_object({"output": {"type": "object", "additionalProperties": {}}})),
         "annotations": _annotations("Get Post", *_READ_ONLY)},
        {"name": "postRetryTool",
         "description": "Put a post in ERROR (and the failed parts of its thread) back in the queue, to be "
                        "published again now. Only for posts whose state is ERROR; read the error with postGetTool "
                        "first and fix its cause (a reconnected channel, new settings) before retrying.",
         "inputSchema": _root(_z_object({"id": _z_string('The "id" of the post in ERROR')})),
         "outputSchema": _root(_z_object({"output": {"anyOf": [{"type": "object", "additionalProperties": {}},
                                                               _ERRORS_OUTPUT]}})),
         "annotations": _annotations("Retry Failed Post", False, False, True, True)},
        {"name": "notificationsListTool",
         "description": "List the organization's notifications, newest first, 100 per page (page 0 first): "
                        "published posts, failures, channels needing to be reconnected.",
         "inputSchema": _root(_z_object({"page": _described(
             {"type": "integer", "minimum": 0, "maximum": MAX_NOTIFICATIONS_PAGE}, "Page number, from 0")},
             optional=("page",))),
         "outputSchema": _root(_z_object({"output": _z_object({
             "notifications": {"type": "array", "items": _z_object({
                 "id": {"type": "string"}, "content": {"type": "string"}, "link": {"type": ["string", "null"]},
                 "createdAt": {"type": "string"}, "postId": {"type": ["string", "null"]}})},
             "total": {"type": "integer"}, "page": {"type": "integer"}, "hasMore": {"type": "boolean"}})})),
         "annotations": _annotations("List Notifications", *_READ_ONLY)},
    ]


# The library's areas as MCP names them: (noun, its fields as arguments, those a create may leave out).
_LIBRARY_AREAS = (
    ("tag", {"name": _z_string("1 to 50 characters, unique in the organization whatever its case"),
             "color": _z_string("A colour written #RRGGBB (black when left out)")}, ("color",)),
    ("signature", {"content": _z_string("The text added at the end of new posts (1 to 5000 characters)"),
                   "autoAdd": _z_boolean("Added to every new post by itself (at most one signature is: setting it "
                                         "takes it from the others; false when left out)")}, ("autoAdd",)),
    ("set", {"name": _z_string("1 to 100 characters"),
             "channels": _z_array({"type": "string"}, "Ids of this organization's channels (integrationList)"),
             "settings": {"type": "object", "additionalProperties": {}, "description": (
                 "Each channel's settings object by channel id, as integrationSchedulePostTool's settings "
                 "(at most 64 KiB as JSON; {} when left out)")}}, ("settings",)),
)
# tool name -> (the library area's noun, what the tool does with it)
LIBRARY_TOOLS = {f"{noun}{action}": (noun, action) for noun, _, _ in _LIBRARY_AREAS
                 for action in ("List", "Create", "Update", "Delete")}


def _library_tool_definitions() -> list:
    """rustiz's library (api_library.py): tags, signatures and sets, listed and changed as their API routes do
    them, and a post copied as drafts."""
    any_object = {"type": "object", "additionalProperties": {}}
    tools = []
    for noun, fields, optional in _LIBRARY_AREAS:
        plural, the_id = f"{noun}s", {"id": _z_string(f"The id of the {noun} ({noun}List)")}
        tools += [
            {"name": f"{noun}List", "description": f"List the organization's {plural}.",
             "inputSchema": _root(_z_object({})),
             "outputSchema": _root(_z_object({"output": {"type": "array", "items": any_object}})),
             "annotations": _annotations(f"List {plural.capitalize()}", *_READ_ONLY)},
            {"name": f"{noun}Create", "description": f"Create a {noun} (scope full).",
             "inputSchema": _root(_z_object(fields, optional=optional)),
             "outputSchema": _root(_z_object({"output": any_object})),
             "annotations": _annotations(f"Create {noun.capitalize()}", False, False, False, False)},
            {"name": f"{noun}Update", "description": f"Change a {noun}: only the fields given (scope full).",
             "inputSchema": _root(_z_object({**the_id, **fields}, optional=tuple(fields))),
             "outputSchema": _root(_z_object({"output": any_object})),
             "annotations": _annotations(f"Update {noun.capitalize()}", False, False, True, False)},
            {"name": f"{noun}Delete", "description": f"Delete a {noun} (scope full).",
             "inputSchema": _root(_z_object(the_id)), "outputSchema": _root(_z_object({"output": any_object})),
             "annotations": _annotations(f"Delete {noun.capitalize()}", False, True, True, False)}]
    tools.append(
        {"name": "duplicatePost",
         "description": "Copy a post as new drafts at the same date: its whole thread on its channel (every part, "
                        "settings, media, tags) and the threads made with it on other channels; the original is "
                        "untouched. Answers the new posts' ids (the post's own thread first), the group of the "
                        "post's copy and their multi-channel group; a drafts key's copies await review.",
         "inputSchema": _root(_z_object({"id": _z_string('The "id" of the post (any part of its thread)')})),
         "outputSchema": _root(_z_object({"output": _z_object({"group": {"type": "string"},
                                                               "multiChannelGroup": {"type": "string"}, "posts": {
             "type": "array", "items": _z_object({"id": {"type": "string"}, "integration": {"type": "string"},
                                                  "parentPostId": {"type": ["string", "null"]}})}})})),
         "annotations": _annotations("Duplicate Post", False, False, False, False)})
    return tools


def _media_tool_definitions() -> list:
    """The media library (GET, PUT and DELETE /public/v1/media), under the names postiz-agent's commands use."""
    media_item = {"type": "object", "additionalProperties": {}}
    return [
        {"name": "listMedia",
         "description": f"List the organization's uploaded images and videos, newest first, {MEDIA_PER_PAGE} per page "
                        "(page 1 first; \"pages\" says how many there are): each with its id, path (the URL to use "
                        "as a post's attachment), type, size in bytes, width and height in pixels, alt text, and "
                        "usedBy, the posts that use it. \"search\" keeps those whose name or alt text holds it.",
         "inputSchema": _root(_z_object({
             "page": _described({"type": "integer", "minimum": 1, "maximum": MAX_MEDIA_PAGE}, "Page number, from 1"),
             "search": _z_string(f"Text the name, original file name or alt text holds (any case, at most "
                                 f"{MAX_SEARCH_CHARACTERS} characters)")}, optional=("page", "search"))),
         "outputSchema": _root(_z_object({"output": _z_object({"media": _z_array(media_item),
                                                               "pages": {"type": "integer"}})})),
         "annotations": _annotations("List Media", *_READ_ONLY)},
        {"name": "updateMedia",
         "description": "Change a media item's alt text (what posts that use it from now on describe it with; "
                        "null or empty removes it) or its name. Find the id with listMedia.",
         "inputSchema": _root(_z_object({"id": _z_string("The id of the media item"),
                                         "alt": _described({"type": ["string", "null"]},
                                                           "The alt text, at most 1000 characters"),
                                         "name": _z_string("The name, 1 to 255 characters")},
                                        optional=("alt", "name"))),
         "outputSchema": _root(_z_object({"output": media_item})),
         "annotations": _annotations("Update Media", False, False, True, False)},
        {"name": "deleteMedia",
         "description": "Delete a media item. Refused while posts not yet published (queued) use it: the result's "
                        "output.errors says so and output.usedBy lists them, to change or delete first.",
         "inputSchema": _root(_z_object({"id": _z_string("The id of the media item")})),
         "outputSchema": _root(_z_object({"output": {"anyOf": [
             _z_object({"id": {"type": "string"}, "deleted": {"type": "boolean"}}),
             _z_object({"errors": {"type": "string"}, "usedBy": _z_array(media_item)})]}})),
         "annotations": _annotations("Delete Media", False, True, True, False)},
    ]


def _comment_tool_definitions() -> list:
    """Comments on a post (GET and POST /public/v1/posts/:id/comments): the team's and clients' from review links."""
    comment = {"type": "object", "additionalProperties": {}}
    post_id = _z_string('The "id" of the post (any part of its thread, on any of its channels)')
    return [
        {"name": "listPostComments",
         "description": "List the comments on a post, oldest first: the team's, and those of clients who reviewed "
                        "it through a review link (author.type \"client\"), with their decisions (kind \"approved\" "
                        "or \"changes\": what the client asked to change).",
         "inputSchema": _root(_z_object({"id": post_id})),
         "outputSchema": _root(_z_object({"output": _z_array(comment)})),
         "annotations": _annotations("List Post Comments", *_READ_ONLY)},
        {"name": "addPostComment",
         "description": f"Comment on a post, for the team and the clients who review it (at most "
                        f"{MAX_COMMENT_CHARACTERS} characters).",
         "inputSchema": _root(_z_object({"id": post_id, "content": _z_string("The comment")})),
         "outputSchema": _root(_z_object({"output": comment})),
         "annotations": _annotations("Add Post Comment", False, False, False, False)},
    ]


# --- arguments checked against the input schema, with zod's messages ---------------------------


def _js_type(value: Any) -> str:
    """zod's name for what it received."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "unknown")


def _schema_type_ok(kind: Any, value: Any) -> bool:
    kinds = kind if isinstance(kind, list) else [kind]
    for each in kinds:
        if each == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if each == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if each != "integer" and each != "number" and _js_type(value) == each:
            return True
    return False


def checked_arguments(schema: dict, value: Any, path: str, problems: list) -> Any:
    """`value` with the keys the schema does not know dropped (zod strips them); what is wrong goes to
    `problems` as (path, message)."""
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            attempt: list = []
            result = checked_arguments(option, value, path, attempt)
            if not attempt:
                return result
        problems.append((path, "Invalid input"))
        return value
    kind = schema.get("type")
    if kind is None:
        return value  # z.any()
    if not _schema_type_ok(kind, value):
        expected = kind if isinstance(kind, str) else " | ".join(kind)
        problems.append((path, f"Expected {expected}, received {_js_type(value)}"))
        return value
    if "enum" in schema and value not in schema["enum"]:
        options = " | ".join(f"'{option}'" for option in schema["enum"])
        problems.append((path, f"Invalid enum value. Expected {options}, received '{value}'"))
    if schema.get("format") == "uri" and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]+\Z", value):
        problems.append((path, "Invalid url"))
    if "minimum" in schema and value < schema["minimum"]:
        problems.append((path, f"Number must be greater than or equal to {schema['minimum']}"))
    if "maximum" in schema and value > schema["maximum"]:
        problems.append((path, f"Number must be less than or equal to {schema['maximum']}"))
    if kind == "array":
        return [checked_arguments(schema["items"], item, f"{path}.{index}", problems)
                for index, item in enumerate(value)]
    if kind == "object" and "properties" in schema:
        kept = {}
        for name, property_schema in schema["properties"].items():
            where = f"{path}.{name}" if path != "root" else name
            if name in value:
                kept[name] = checked_arguments(property_schema, value[name], where, problems)
            elif name in schema.get("required", ()):
                problems.append((where, "Required"))
        return kept
    return value


def _argument_problems_text(problems: list, arguments: Any) -> str:
    """Mastra's wording, which agents already know how to act on."""
    lines = "\n".join(f"- {path}: {message}" for path, message in problems)
    return (f"Tool validation failed. Please fix the following errors and try again:\n{lines}\n\n"
            f"Provided arguments: {json.dumps(arguments, indent=2, ensure_ascii=False)}")


# --- the tools ------------------------------------------------------------------------------------


def _settings_object(pairs: list) -> dict:
    """MCP's settings [{key, value}] as the object the API keeps (a later key wins)."""
    return {pair["key"]: pair.get("value") for pair in pairs}


def _api_error_text(error: ApiError) -> str:
    """What a person reads in an API error body: Postiz's message, msg or error, joined when a list."""
    body = error.body if isinstance(error.body, dict) else {}
    message = body.get("message", body.get("msg", body.get("error", error.body)))
    return "; ".join(map(str, message)) if isinstance(message, list) else str(message)


_EMPTY_CONTENT = "If images do not exist, content must be a non-empty string."


def _mcp_argument_path(message: str) -> str:
    """A POST /posts validation message in the schedule tool's names: "settings.title ...",
    "postsAndComments.1.attachments.0: ..." instead of "posts.0.settings.title ...", "posts.0.value.1.image.0.path ..."."""
    if ".settings." in message:
        return "settings." + message.split(".settings.", 1)[1]
    message = re.sub(r"^posts\.\d+\.value\.", "postsAndComments.", message)
    return re.sub(r"\.image\.(\d+)\.(?:path )?", r".attachments.\1: ", message).replace(".image ", ".attachments ")


def _mcp_publish_date(stored: str) -> str:
    """Postiz's postsListTool date: UTC, seconds, no Z."""
    return stored[:19]


class McpTools:
    """The tools, each one a call into the API's own functions, scoped by the key's organization."""

    def __init__(self, app: "App"):
        self.app = app
        self.store = app.store
        self.channels: ChannelsApi = app.feature(ChannelsApi)
        self.posts: PostsApi = app.feature(PostsApi)
        self.media: MediaApi = app.feature(MediaApi)
        self.library: dict = {"tag": app.feature(TagsApi), "signature": app.feature(SignaturesApi),
                              "set": app.feature(SetsApi)}
        self.post_copies: PostCopies = app.feature(PostCopies)
        self.media_library: MediaLibraryApi = app.feature(MediaLibraryApi)
        self.comments: CommentsApi = app.feature(CommentsApi)
        self.definitions = _mcp_tool_definitions()
        self.by_name = {tool["name"]: tool for tool in self.definitions}
        self.by_name["schedulePostTool"] = self.by_name["integrationSchedulePostTool"]  # the name Postiz's docs use
        self.list_result = {"tools": self.definitions}

    def call(self, organization_id: str, name: Any, arguments: Any, key: Optional[KeyIdentity] = None,
             address: Optional[str] = None) -> Union[dict, Awaitable[dict]]:
        """tools/call: the CallToolResult, or an awaitable of it for the tools that wait on the network.
        `key`: the caller's API key, whose scope and rate limits apply (None: the organization's own key);
        `address`: the client's, for the audit log."""
        tool = self.by_name.get(name) if isinstance(name, str) else None
        if tool is None:
            return _tool_error(f"Unknown tool: {name}")
        scope = "full" if key is None else key.scope
        needed = TOOL_SCOPES.get(tool["name"], "full")
        if not scope_allows(scope, needed):
            return _tool_error(scope_refusal_text(scope, needed, f"the MCP tool {tool['name']}"))
        problems: list = []
        arguments = {} if arguments is None else arguments
        checked = checked_arguments(tool["inputSchema"], arguments, "root", problems)
        if problems:
            return _tool_error(_argument_problems_text(problems, arguments))
        run = getattr(self, "tool_" + tool["name"], None) or self._library_tool(tool["name"])
        refused = self._refused(tool["name"], checked, scope) or (key and self._over_limit(tool["name"], key))
        if refused:
            return _tool_error(refused)
        try:
            if tool["name"] in POST_CREATING_TOOLS:
                output = run(organization_id, checked, scope)
            elif tool["name"] in CALLER_AWARE_TOOLS:
                output = run(organization_id, checked, key)
            else:
                output = run(organization_id, checked)
        except Exception as error:
            return _tool_failure(tool["name"], error)
        audit = TOOL_ACTIONS.get(tool["name"]), organization_id, checked, key and key.key_id, address
        if type(output) is not dict:  # a coroutine: the tool waits on the network
            return self._finish(tool["name"], output, audit)
        self._record(audit, output)
        return _tool_success(output)

    def _record(self, audit: tuple, output: dict) -> None:
        """The audit entry of a tool call that changed something (`audit`: its action or None, and its call)."""
        action, organization_id, arguments, key_id, address = audit
        if action is not None:
            record_tool_call(self.store, organization_id, action, arguments, output, key_id, address)

    @staticmethod
    def _refused(name: str, arguments: dict, scope: str) -> Optional[str]:
        """Why a key of `scope` may not make this call with these arguments (a post not a draft), or None."""
        if scope != "full" and name in POST_CREATING_TOOLS:
            for item in arguments.get("socialPost", ()):  # (duplicatePost makes drafts only)
                if item["type"] != "draft":
                    return scope_refusal_text(scope, "full", f'{name} with type "{item["type"]}" (only "draft" '
                                                             f'posts, which wait for a person\'s review)')
        return None

    def _over_limit(self, name: str, key: KeyIdentity) -> Optional[str]:
        """The refusal of a call over the key's MCP rate limits, or None (the call is counted)."""
        config, who = self.app.config, f"key:{key.key_id}" if key.key_id else f"org-key:{key.organization}"
        limits = [("RUSTIZ_MCP_TOOL_LIMIT", config.mcp_tool_limit, "tool calls", "mcp-tools " + who)]
        if name in POST_CREATING_TOOLS:
            limits.append(("RUSTIZ_MCP_POST_LIMIT", config.mcp_post_limit, f"{name} calls", "mcp-posts " + who))
        for setting, limit, what, counter in limits:
            if not limit:
                continue
            decision = self.store.count_request(counter, limit, MCP_LIMIT_WINDOW_SECONDS)
            if not decision.allowed:
                return (f"Too Many Requests: this API key made more than {limit} MCP {what} in a minute ({setting}); "
                        f"try again in {decision.retry_after} seconds. Nothing was done.")
        return None

    async def _finish(self, name: str, pending: Awaitable[dict], audit: tuple) -> dict:
        try:
            output = await pending
        except Exception as error:
            return _tool_failure(name, error)
        await self.store.off_loop(self._record, audit, output)
        return _tool_success(output)

    def tool_integrationList(self, organization_id: str, arguments: dict) -> dict:
        channels = self.store.integrations(organization_id, arguments.get("group") or None)
        return {"output": [{"id": channel["id"], "name": channel["name"],
                            "picture": channel["picture"] or "/no-picture.jpg", "platform": channel["identifier"]}
                           for channel in channels]}

    def tool_groupList(self, organization_id: str, arguments: dict) -> dict:
        return {"output": channel_store.customers(self.store, organization_id)}

    def tool_integrationSchema(self, organization_id: str, arguments: dict) -> dict:
        spec = PROVIDERS.get(arguments["platform"])
        if spec is None:
            return {"output": {"rules": "", "maxLength": 0, "settings": {}, "tools": []}}
        premium = [{"title": "Verified", "value": True}] if arguments["isPremium"] else []
        return {"output": {"rules": spec.rules, "maxLength": provider_max_length(spec.identifier, premium),
                           "settings": spec.settings, "tools": spec.tools}}

    async def tool_triggerTool(self, organization_id: str, arguments: dict) -> dict:
        channel = await self.store.off_loop(channel_store.channel, self.store, organization_id, arguments["integrationId"])
        if channel is None:
            raise ToolFailed("Integration not found, use integrationList to get a valid integration id")
        if channel["provider_identifier"] not in PROVIDERS:
            raise ToolFailed("Integration provider not found, use integrationList to get a valid integration id")
        data = _settings_object(arguments["dataSchema"])
        try:
            output = await self.channels.run_tool(channel, arguments["methodName"], data)
        except ApiError as refused:
            if refused.status == 404:
                raise ToolFailed(f'Method "{arguments["methodName"]}" not found for this integration, use '
                                 f"integrationSchema to get the callable tools") from None
            if refused.status == 401:
                raise ToolFailed("The channel was disconnected because its token expired, the user needs to "
                                 "reconnect it in rustiz") from None
            raise ToolFailed(f"Provider call failed: {_api_error_text(refused)}") from None
        return {"output": output}

    def tool_integrationSchedulePostTool(self, organization_id: str, arguments: dict, scope: str = "full") -> dict:
        social_posts = arguments["socialPost"]
        too_many = self._too_many(social_posts)
        if too_many:
            return {"output": {"errors": too_many}}
        plans = []
        for item in social_posts:  # the first refused item stops the call before anything is stored
            plan = self._plan(organization_id, item)
            if isinstance(plan, str):
                return {"output": {"errors": plan}}
            if scope != "full":
                plan["review"] = "review"  # (only drafts get here: see _refused)
            plans.append(plan)
        if self.app.config.api_limit and self.app.config.mcp_api_limit:
            try:
                self.app.guard.count_post(organization_id)
            except ApiError as limited:
                retry_after = dict(limited.headers).get("Retry-After", "?")
                raise ToolFailed(f"ThrottlerException: Too Many Requests. This organization scheduled posts "
                                 f"{self.app.config.api_limit} times in the last hour (API_LIMIT); try again in "
                                 f"{retry_after} seconds. Nothing was scheduled.")
        created = []
        for plan in plans:
            try:
                created.extend(self.posts.save_plan(organization_id, plan)[0])
            except ApiError as refused:
                return {"output": {"errors": _api_error_text(refused)}}
        return {"output": created}

    @staticmethod
    def _too_many(social_posts: list) -> Optional[str]:
        if len(social_posts) > MCP_MAX_POSTS_PER_CALL:
            return (f"At most {MCP_MAX_POSTS_PER_CALL} posts per call, got {len(social_posts)}: split them over "
                    f"several integrationSchedulePostTool calls")
        if not social_posts:
            return "socialPost is empty: pass at least one post"
        for item in social_posts:
            if len(item["postsAndComments"]) > MCP_MAX_THREAD_PARTS:
                return (f"At most {MCP_MAX_THREAD_PARTS} items in postsAndComments (the post and its comments), got "
                        f"{len(item['postsAndComments'])}")
        return None

    def _plan(self, organization_id: str, item: dict) -> Union[dict, str]:
        """One socialPost as the CreatePost body the API validates: its plan, or Postiz's error text."""
        body = {"type": item["type"], "date": item["date"], "shortLink": item["shortLink"], "tags": [],
                **({"evergreen": item["evergreen"]} if "evergreen" in item else {}),
                "posts": [{"integration": {"id": item["integrationId"]},
                           "value": [{"content": part["content"],
                                      "image": [{"id": new_cuid(), "path": url} for url in part["attachments"]]}
                                     for part in item["postsAndComments"]],
                           "settings": _settings_object(item["settings"])}]}
        channel = channel_store.channel(self.store, organization_id, item["integrationId"])
        try:
            plan = validate_create_post(body, lambda channel_id: channel if channel_id == item["integrationId"] else None,
                                        self.posts.config.frontend_url,
                                        lambda urls: media_store.media_ids_by_path(self.store, organization_id, urls))
            if plan["type"] not in ("draft", "queue"):  # checked before anything of the call is stored
                self.posts.refuse_missed_date(plan["date"])
            self.posts.plan_queue_date(organization_id, plan)
        except ApiError as refused:
            return self._refusal_text(refused, channel, item["integrationId"])
        duplicates = [] if duplicates_allowed(item) else find_duplicates(self.store, plan)
        if duplicates:
            return f"{channel['name']}: {duplicate_message(duplicates)} in this socialPost item"
        plan["creationMethod"] = "MCP"
        return plan

    @staticmethod
    def _refusal_text(refused: ApiError, channel: Optional[dict], channel_id: str) -> str:
        """Postiz's MCP wording: "<channel name>: <what is wrong>, please fix it, and try ... again."."""
        if channel is None:
            return f"Integration with id {channel_id} not found, use integrationList to get a valid integration id"
        message = refused.body.get("message") if isinstance(refused.body, dict) else None
        empty = "Your post should have at least one character or one image."
        if message == empty or isinstance(message, list) and any(text.endswith(_EMPTY_CONTENT) for text in message):
            return f"{channel['name']}: {empty}"
        if isinstance(message, list):  # the DTO's "posts.0.settings.<field> <rule>" messages, in MCP's terms
            message = "; ".join(_mcp_argument_path(text) for text in message) or "Please fix your settings"
        elif message == "post is too long, please fix it":
            limit = provider_max_length(channel["provider_identifier"], channel["additional_settings"], channel["limits"])
            message = f"The maximum characters is {limit}"
        return f"{channel['name']}: {message}, please fix it, and try integrationSchedulePostTool again."

    def tool_postsListTool(self, organization_id: str, arguments: dict) -> dict:
        try:
            listed = self.posts.listing(organization_id, arguments["startDate"], arguments["endDate"],
                                        arguments.get("customer") or None)
        except ApiError as refused:
            text = _api_error_text(refused)
            raise ToolFailed(text + (", for example 2026-07-20T00:00:00" if "ISO 8601" in text else "")) from None
        return {"output": {"posts": [{
            "id": item["id"], "publishDate": _mcp_publish_date(item["publishDate"]), "state": item["state"],
            "content": item["content"], "settings": _parsed_settings(item["settings"]), "group": item["group"],
            "integrationId": item["integration"]["id"], "platform": item["integration"]["providerIdentifier"],
            "integrationName": item["integration"]["name"]} for item in listed]}}

    def tool_postSettingsTool(self, organization_id: str, arguments: dict) -> dict:
        try:
            return {"output": self.posts.change_settings(organization_id, arguments["id"],
                                                         _settings_object(arguments["settings"]))}
        except ApiError as refused:
            return {"output": {"errors": _api_error_text(refused)}}

    async def tool_uploadFromUrlTool(self, organization_id: str, arguments: dict) -> dict:
        try:
            media = await self.media.fetch_and_store(arguments["url"], organization_id)
        except ApiError as refused:
            return {"error": _api_error_text(refused)}
        return {"id": media["id"], "path": media["path"]}

    def tool_postGetTool(self, organization_id: str, arguments: dict) -> dict:
        try:
            return {"output": self.posts.post_view(organization_id, arguments["id"])}
        except ApiError:
            raise ToolFailed(f"Post {arguments['id']} not found; use postsListTool to find the ids of this "
                             f"organization's posts") from None

    def tool_postRetryTool(self, organization_id: str, arguments: dict) -> dict:
        try:
            return {"output": self.posts.retry_post(organization_id, arguments["id"])}
        except ApiError as refused:
            return {"output": {"errors": _api_error_text(refused)}}

    def tool_notificationsListTool(self, organization_id: str, arguments: dict) -> dict:
        return {"output": self.posts.notifications_page(organization_id, arguments.get("page", 0))}

    def _library_tool(self, name: str) -> Callable[[str, dict], dict]:
        """tagList, setCreate, signatureUpdate...: the call of the library area's own method (LIBRARY_TOOLS)."""
        noun, action = LIBRARY_TOOLS[name]
        area: LibraryRoutes = self.library[noun]

        def run(organization_id: str, arguments: dict) -> dict:
            fields = {name: value for name, value in arguments.items() if name != "id"}
            if action == "List":
                return {"output": area.listing(organization_id)}
            if action == "Create":
                return {"output": area.add(organization_id, fields)}
            if action == "Update":
                return {"output": area.change(organization_id, arguments["id"], fields)}
            return {"output": area.remove(organization_id, arguments["id"])}
        return run

    def tool_duplicatePost(self, organization_id: str, arguments: dict, scope: str = "full") -> dict:
        return {"output": self.post_copies.duplicate_post(organization_id, arguments["id"], scope)}

    # The media library's tools: the API's own functions (media_library.py), whose 400s are tool errors.

    def tool_listMedia(self, organization_id: str, arguments: dict) -> dict:
        return {"output": self.media_library.listing(organization_id, arguments.get("page", 1), arguments.get("search"))}

    def tool_updateMedia(self, organization_id: str, arguments: dict) -> dict:
        changes = {name: arguments[name] for name in ("alt", "name") if name in arguments}
        try:
            return {"output": self.media_library.update(organization_id, arguments["id"], changes)}
        except ApiError as refused:
            if refused.status == 404:
                raise ToolFailed(f"Media {arguments['id']} not found; use listMedia to find the ids of this "
                                 "organization's media") from None
            raise

    def tool_deleteMedia(self, organization_id: str, arguments: dict) -> Union[dict, Awaitable[dict]]:
        result, removal = self.media_library.delete(organization_id, arguments["id"])
        if result["status"] == 404:
            raise ToolFailed(f"Media {arguments['id']} not found; use listMedia to find the ids of this "
                             "organization's media")
        if result["status"] == 409:
            return {"output": {"errors": result["message"], "usedBy": result["usedBy"]}}
        output = {"output": {"id": result["id"], "deleted": True}}
        return self._file_removed(removal, output) if removal else output

    async def _file_removed(self, path: str, output: dict) -> dict:
        await self.media_library.remove_files([path])
        return output

    # Comments on a post: the API's own functions (preview_links.py).

    def tool_listPostComments(self, organization_id: str, arguments: dict) -> dict:
        return {"output": self.comments.listing(organization_id, arguments["id"], ("mcp", None, ""))}

    def tool_addPostComment(self, organization_id: str, arguments: dict, key: Optional[KeyIdentity]) -> dict:
        caller = key_author(self.store, organization_id, key, "mcp")
        return {"output": self.comments.add_comment(organization_id, arguments["id"], arguments["content"], caller)}


def _parsed_settings(text: Optional[str]) -> Any:
    """Postiz's postsListTool parses the stored settings; {} when they are not JSON."""
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {}


def _tool_success(output: dict) -> dict:
    return {"content": [{"type": "text", "text": json_dumps(output).decode()}], "structuredContent": output,
            "isError": False}


def _tool_error(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _tool_failure(name: str, error: Exception) -> dict:
    """A tool that raised: an isError result (Postiz's thrown errors), never a JSON-RPC error."""
    if isinstance(error, (ToolFailed, DatabaseUnwritable)):  # (the Store has logged a DatabaseUnwritable)
        return _tool_error(str(error))
    if isinstance(error, ApiError):
        return _tool_error(_api_error_text(error))
    log(f"unhandled error in the MCP tool {name}:\n" + traceback.format_exc().rstrip())
    return _tool_error(json.dumps({"id": "TOOL_EXECUTION_FAILED", "tool": name,
                                   "message": f"{name} failed on an internal error; the rustiz log has the details"}))
