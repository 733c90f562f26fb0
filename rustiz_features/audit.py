"""The audit log: every change made by a person, an API key, an agent (MCP) or a client, as an entry of who,
what, on what, when and from which address; GET /public/v1/audit lists them for admins.

Rules:
- A route that changes something declares its action beside its handler: `@route_options(audit="post.deleted")`.
  App.resolve wraps such a handler with `audited`, the one place the API's changes are recorded: after an
  answer of 2xx (a refused or failed request records nothing; a replayed Idempotency-Key answer and a dry run
  neither). MCP's tool calls are recorded by mcp_tools' dispatch (TOOL_ACTIONS there), the OAuth callback by
  connect.py, both through `record_request`.
- The subject: the path's `:id` (its type the action's noun: "post"), else the path's one parameter (its
  type that parameter's name: "group"), else the ids in the answer (one entry per post group a POST /posts
  made). The organization's own settings (`organization.*`, `alerts.*`) have the organization as subject.
- Who: the API key (its name, "default" for the organization's own key; an agent's calls as "mcp"), else the
  person of the web session (request.user, or the session's own record). Read before the handler runs, so
  that a change that ends the caller's session (a key rotated) still says who made it; the name and e-mail
  are stored with the entry, so a person removed since still shows.
- Recording never makes a request fail: a write that fails is logged. It runs right after the change's own
  transaction, on the thread the handler ran on (or, after a handler that awaits, off the event loop).
"""
from __future__ import annotations

import functools
import json
import re
from typing import Any, Awaitable, Callable, Optional, Union

from rustiz import (App, Request, Response, bad_request, hash_api_key, json_response, log, route_options,
                    session_cookie, utc_now_iso)
from .api_docs import INTEGER, STRING, array_of, documented, nullable, object_schema, parameter
from .storage import audit as audit_store
from .storage.audit import ENTRIES_PER_PAGE, Actor

MAX_AUDIT_PAGE = 100_000
MAX_SUBJECT_ID_CHARACTERS = 200
ACTION_FILTER = re.compile(r"[a-z_]{1,40}(\.[a-z_]{1,40})?")
ORGANIZATION_NOUNS = ("organization", "alerts")  # settings of the organization itself: it is their subject
FIXED_SUBJECTS = {"key.rotated": ("key", "default")}  # (the organization's own key, which has no id of its own)
# An answer that says the change was another one than the route's usual (a channel that was there already)
# (issue 28: a delete with onPlatform=true answers {"deleted": [...]}: post.deleted_on_platform)
REFINED_BY_ANSWER = {"channel.connected": ("reconnected", "channel.reconnected"),
                     "post.deleted": ("deleted", "post.deleted_on_platform")}


def actor_of(store: Any, request: Request, organization_id: str, kind: str = "key") -> Actor:
    """Who makes this request: its API key (as `kind`: "mcp" for an agent's tool call), else the person (or
    key) that signed its web session in."""
    if request.key is not None:
        return audit_store.key_actor(store, organization_id, request.key.key_id, kind)
    if request.user:  # a person's session (a session signed in with a key has none: its key is read below)
        return audit_store.user_actor(store, request.user)
    token = session_cookie(request)
    found = audit_store.session_actor(store, hash_api_key(token)) if token else None
    return found or Actor("user", None)


def record(store: Any, organization_id: str, actor: Actor, action: str, subject_type: Optional[str],
           subject_ids: list, address: Optional[str]) -> None:
    """Write the entries of one change; a failure is logged, never raised (the change itself is done)."""
    try:
        audit_store.add_entries(store, organization_id, utc_now_iso(), actor, action, subject_type,
                                [str(subject_id)[:MAX_SUBJECT_ID_CHARACTERS] for subject_id in subject_ids], address)
    except Exception as error:  # (whatever the database said: the request's answer stands)
        log(f"audit: the entry {action} of organization {organization_id} was not written: {error}", "error")


def record_request(app: App, request: Request, organization_id: str, action: str, subject_type: Optional[str],
                   subject_ids: list, kind: str = "key") -> None:
    """Record a change made by this request (its caller, its client address): for changes no route option
    describes (an MCP tool call, the OAuth callback). Never raises."""
    try:
        actor = actor_of(app.store, request, organization_id, kind)
    except Exception as error:
        log(f"audit: who made {action} could not be read: {error}", "error")
        actor = Actor(kind, None)
    record(app.store, organization_id, actor, action, subject_type, subject_ids, app.guard.client_address(request))


def record_tool_call(store: Any, organization_id: str, action: str, arguments: dict, output: dict,
                     key_id: Optional[str], address: Optional[str]) -> None:
    """The entry of an MCP tool call (mcp_tools' dispatch) unless its output says it failed; its subject the
    `id` argument, else the ids of its output. Never raises."""
    result = output.get("output", output)
    if isinstance(result, dict) and ("errors" in result or "error" in result):
        return
    subject = arguments.get("id")
    ids = [subject] if isinstance(subject, str) else answer_ids(result) or []
    try:
        actor = audit_store.key_actor(store, organization_id, key_id, "mcp")
    except Exception as error:
        log(f"audit: which key called the MCP tool could not be read: {error}", "error")
        actor = Actor("mcp", None)
    record(store, organization_id, actor, action, action.partition(".")[0], ids, address)


def answer_ids(answer: Any) -> Optional[list]:
    """The ids of what an answer made or changed, or None when it changed nothing (a dry run):
    [{postId}...] (POST /posts), {"id"}, an import's rows' posts, a bulk delete's deleted items."""
    if isinstance(answer, list):
        return [item.get("postId") or item.get("id") for item in answer
                if isinstance(item, dict) and (item.get("postId") or item.get("id"))]
    if not isinstance(answer, dict):
        return []
    if answer.get("dryRun"):
        return None
    if isinstance(answer.get("rows"), list):
        return [post["postId"] for row in answer["rows"] for post in row.get("posts", ())]
    if isinstance(answer.get("results"), list):
        return [result["id"] for result in answer["results"] if result.get("status") == 200]
    return [answer["id"]] if isinstance(answer.get("id"), (str, int)) else []


def entry_of(action: str, request: Request, organization_id: str, response: Response) -> Optional[tuple]:
    """(action, subject type, subject ids) of a successful answer, or None when it records nothing."""
    if not 200 <= response.status < 300 or ("Idempotent-Replayed", "true") in response.headers:
        return None
    noun = action.partition(".")[0]
    if action in FIXED_SUBJECTS:
        subject_type, subject_id = FIXED_SUBJECTS[action]
        return action, subject_type, [subject_id]
    if noun in ORGANIZATION_NOUNS:
        return action, "organization", [organization_id]
    try:
        answer = json.loads(response.body) if response.body else None
    except ValueError:
        answer = None
    refined = REFINED_BY_ANSWER.get(action)
    if refined and isinstance(answer, dict) and answer.get(refined[0]) not in (None, False):
        action = refined[1]
    params = request.params
    if "id" in params:
        return action, noun, [params["id"]]
    if len(params) == 1:
        (name, value), = params.items()
        return action, name, [value]
    ids = answer_ids(answer)
    return None if ids is None else (action, noun, ids)


def audited(app: App, handler: Callable, action: str) -> Callable:
    """`handler` (an authenticated route's), recording `action` after each of its successful answers."""
    store, guard = app.store, app.guard

    @functools.wraps(handler)  # (its module and name: GET /metrics counts the route under its feature)
    def recorded(request: Request, organization_id: str) -> Union[Response, Awaitable[Response]]:
        try:
            actor = actor_of(store, request, organization_id)
        except Exception as error:
            log(f"audit: who made {action} could not be read: {error}", "error")
            actor = Actor("user", None)
        answer = handler(request, organization_id)
        if isinstance(answer, Response):
            write(request, organization_id, answer, actor)
            return answer
        return written_after(answer, request, organization_id, actor)

    def write(request: Request, organization_id: str, response: Response, actor: Actor) -> None:
        try:
            entry = entry_of(action, request, organization_id, response)
        except Exception as error:
            log(f"audit: the subject of {action} could not be read: {error}", "error")
            entry = (action, None, [])
        if entry is not None:
            record(store, organization_id, actor, entry[0], entry[1], entry[2], guard.client_address(request))

    async def written_after(pending: Awaitable[Response], request: Request, organization_id: str,
                            actor: Actor) -> Response:
        response = await pending
        await store.off_loop(write, request, organization_id, response, actor)
        return response

    return recorded


def page_number(text: Optional[str]) -> int:
    """`page` (1 when absent); raises a 400 naming it unless a whole number from 1 to MAX_AUDIT_PAGE."""
    text = "1" if text is None else text.strip()
    if not re.fullmatch(r"[0-9]{1,6}", text) or not 1 <= int(text) <= MAX_AUDIT_PAGE:
        raise bad_request([f"page must be a whole number from 1 to {MAX_AUDIT_PAGE} (pages of {ENTRIES_PER_PAGE} "
                           "entries, the newest first)"])
    return int(text)


def actor_filter(text: Optional[str]) -> Optional[str]:
    """`actor`: the id of a person or key (GET /audit/actors lists them); raises a 400 naming it."""
    if not text:
        return None
    if len(text) > MAX_SUBJECT_ID_CHARACTERS or not text.isprintable():
        raise bad_request([f"actor must be the id of a person or key (at most {MAX_SUBJECT_ID_CHARACTERS} "
                           "printable characters), as GET /public/v1/audit/actors lists them"])
    return text


def action_filter(text: Optional[str]) -> Optional[str]:
    """`action`: one action ("post.deleted") or every action of one kind ("post"); raises a 400 naming it."""
    if not text:
        return None
    if not ACTION_FILTER.fullmatch(text):
        raise bad_request(["action must be an action such as post.deleted, or a kind such as post"])
    return text


ACTOR = object_schema({"type": {"type": "string", "enum": ["user", "key", "mcp", "client"]},
                       "id": nullable("string"), "name": nullable("string"), "email": nullable("string")})
ENTRY = object_schema({"id": STRING, "at": STRING, "actor": ACTOR, "action": STRING,
                       "subject": {"type": ["object", "null"], "properties": {"type": STRING, "id": STRING}},
                       "address": nullable("string")})


class AuditApi:
    """GET /public/v1/audit (the entries, a page at a time) and GET /public/v1/audit/actors (who has any)."""

    def __init__(self, app: App):
        self.store = app.store

    @route_options(scope="full")  # (admins only: it names people, keys and addresses)
    @documented(f"The organization's audit log, newest first, {ENTRIES_PER_PAGE} a page: who changed what, when and "
                "from which address (rustiz; scope full)",
                ("200", object_schema({"entries": array_of(ENTRY), "pages": INTEGER})), "BadRequest",
                (parameter("query", "page", "From 1", schema={"type": "integer", "minimum": 1,
                                                              "maximum": MAX_AUDIT_PAGE}),
                 parameter("query", "actor", "Only this person's or key's entries (an id of GET /audit/actors)"),
                 parameter("query", "action", "Only this action (post.deleted) or kind of action (post)")))
    def list_entries(self, request: Request, organization_id: str) -> Response:
        query = request.query
        entries, pages = audit_store.entries_page(self.store, organization_id, page_number(query.get("page")),
                                                  actor_filter(query.get("actor")), action_filter(query.get("action")))
        return json_response({"entries": entries, "pages": pages})

    @route_options(scope="full")
    @documented("Everyone with an entry in the audit log: the people and keys its filter offers (rustiz; scope full)",
                ("200", object_schema({"actors": array_of(ACTOR)})))
    def list_actors(self, request: Request, organization_id: str) -> Response:
        return json_response({"actors": audit_store.actors(self.store, organization_id)})
