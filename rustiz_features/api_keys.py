"""Named API keys with a scope (rustiz's addition): list, add and revoke, for the API, the web app and the CLI.

Rules:
- A key is shown once, when it is made; only its hash is stored, and no listing ever shows it.
- Only a full key or a web session manages keys (the routes need the scope "full", GET included).
- Revoking a key ends the web sessions signed in with it and, through the credentials generation, every
  worker's cached lookups of it: it stops working at once.
- The organization's own key (named "default", full) is rotated (`rustiz key rotate`), never revoked.
"""
from __future__ import annotations

import re
import sqlite3

from rustiz import (
    SCOPES, App, Request, Response, Store, bad_request, hash_api_key, json_object, json_response,
    log, nest_error, new_api_key, not_found, route_options,
)
from .api_docs import STRING, array_of, documented, object_schema, parameter, ref
from .storage import keys as key_store

KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}")


def add_key(store: Store, organization_id: str, name: object, scope: object) -> tuple:
    """A new named key: (the key, shown once; its listing row). Raises ApiError 400 or 409."""
    problems = []
    if not isinstance(name, str) or not KEY_NAME.fullmatch(name.strip()):
        problems.append("name must be 1 to 64 letters, digits, spaces, dots, dashes or underscores, "
                        "starting with a letter or digit")
    elif name.strip() == key_store.DEFAULT_KEY_NAME:
        problems.append(f"name {key_store.DEFAULT_KEY_NAME!r} is the organization's own key; choose another name")
    if scope not in SCOPES:
        problems.append(f"scope must be one of the following values: {', '.join(SCOPES)}")
    if problems:
        raise bad_request(problems)
    key = new_api_key()
    try:
        row = key_store.add_api_key(store, organization_id, name.strip(), scope, hash_api_key(key))
    except sqlite3.IntegrityError:
        raise nest_error(409, f"This organization already has a key named {name.strip()!r}: revoke it first, "
                              f"or choose another name") from None
    return key, row


def revoke_key(store: Store, organization_id: str, name_or_id: str) -> dict:
    """Revoke a named key (by name or id): its row. Raises ApiError 400 (the own key) or 404."""
    if name_or_id == key_store.DEFAULT_KEY_NAME:
        raise bad_request(f"{key_store.DEFAULT_KEY_NAME!r} is the organization's own key: rotate it (`rustiz key "
                          "rotate`, or POST /public/v1/organization/api-key) instead of revoking it")
    revoked = key_store.revoke_api_key(store, organization_id, name_or_id)
    if revoked is None:
        raise not_found(f"No API key named or with the id {name_or_id!r} in this organization "
                        "(GET /public/v1/api-keys lists them)")
    return revoked


class KeysApi:
    """GET/POST /public/v1/api-keys and DELETE /public/v1/api-keys/:id (name or id): full scope only."""

    def __init__(self, app: App):
        self.store = app.store

    @route_options(scope="full")  # (a GET, but the list of keys is the organization's business)
    @documented("The organization's API keys, its own first (named default), never the keys (rustiz; scope full)",
                ("200", object_schema({"keys": array_of(ref("ApiKey"))})))
    def list_keys(self, request: Request, organization_id: str) -> Response:
        return json_response({"keys": key_store.api_keys(self.store, organization_id)}, 200, [("Cache-Control", "no-store")])

    @route_options(audit="key.created")
    @documented("A named key with a scope, shown once (rustiz; scope full)",
                ("201", ref("ApiKey") | {"properties": {"apiKey": STRING}}), "BadRequest Conflict",
                request=object_schema({"name": STRING, "scope": {"type": "string", "enum": list(SCOPES)}}))
    def add(self, request: Request, organization_id: str) -> Response:
        body = json_object(request)
        key, row = add_key(self.store, organization_id, body.get("name"), body.get("scope"))
        log(f"API key {row['name']!r} ({row['scope']}) added to organization {organization_id} through the API")
        return json_response({**row, "apiKey": key}, 201, [("Cache-Control", "no-store")])

    @route_options(audit="key.revoked")
    @documented("Revoke a named key (by id or name); it and its web sessions stop working at once (rustiz; scope full)",
                ("200", object_schema({"id": STRING, "name": STRING, "scope": STRING})), "BadRequest NotFound",
                (parameter("path", "id", "The key's id or name"),))
    def revoke(self, request: Request, organization_id: str) -> Response:
        revoked = revoke_key(self.store, organization_id, request.params["id"])
        log(f"API key {revoked['name']!r} of organization {organization_id} revoked through the API")
        return json_response(revoked)
