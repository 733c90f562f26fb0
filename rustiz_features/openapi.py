"""The OpenAPI 3.1 document of every route, GET /public/v1/openapi.json, made from the core's route table.

Rules:
- The paths come from the route table (rustiz.API_ROUTES, OTHER_ROUTES, ROOT_ROUTES): each route's handler
  says what it takes and answers with @documented (api_docs.py), and its route options whether it needs a
  key. Only what no handler can carry is written here: the core's own /health, the components (the shapes
  several routes share, and the shared error answers), and the servers.
- Built on the first request, not at import: the handlers' modules are imported to read their @documented,
  and start-up time matters more than the first caller's few milliseconds.
- tests/test_openapi.py checks that it names exactly the routes App serves.
"""
from __future__ import annotations

import importlib
import re
from typing import Callable, Optional

from rustiz import (
    API_PREFIXES, API_ROUTES, OTHER_ROUTES, ROOT_ROUTES, SCOPES, App, Request, Response, VERSION, json_dumps,
    route_options,
)
from .api_docs import (
    ANY, BOOLEAN, DATE, ID, INTEGER, STRING, array_of, documented, json_body, nullable, object_schema,
    operation_documentation, ref,
)
from .catalogue import CREDENTIAL_SPECS
from .text import COUNTING_RULES
from .validation import MAX_DELAY_MINUTES, MAX_INTERVAL_DAYS

_REVIEW_FIELDS = {"review": {"type": ["string", "null"], "enum": ["review", "rejected", None], "description": (
                      "rustiz: review: made with a drafts key, waiting for a person; rejected: see reviewReason")},
                  "reviewReason": nullable("string")}


# A repeating post's end (issue 26): in CreatePost and PostEdit, and on post objects.
_REPEAT_END = {
    "repeatUntil": {"type": ["string", "null"], "description": (
        "rustiz: with inter, the last day (YYYY-MM-DD, in the organization's timezone, included) or instant the "
        "post goes out; after date; not with repeatCount")},
    "repeatCount": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000, "description": (
        "rustiz: with inter, how many times the post goes out, the first included; not with repeatUntil")}}
_OCCURRENCES = {"occurrences": object_schema(
    {"next": array_of(STRING), "last": nullable("string")},
    description="rustiz: up to 5 next dates (UTC) from now, and the last one (null: it repeats without end)")}


def component_schemas() -> dict:
    """The shapes the handlers answer with (Postiz's, field by field) and the bodies they take."""
    post_states = {"type": "string", "enum": ["QUEUE", "PUBLISHED", "ERROR", "DRAFT"]}
    stored = {"createdAt": STRING, "updatedAt": STRING}
    post_row = object_schema({"id": STRING, "state": post_states, "publishDate": STRING, "organizationId": STRING,
                              "integrationId": STRING, "content": STRING, "delay": INTEGER, "group": STRING,
                              "parentPostId": nullable("string"), "releaseId": nullable("string"),
                              "releaseURL": nullable("string"), "settings": nullable("string"),
                              "image": nullable("string"), "creationMethod": STRING,
                              "intervalInDays": nullable("integer"), "error": nullable("string"), **stored,
                              "deletedAt": nullable("string"), "multiChannelGroup": nullable("string") | {
                                  "description": "rustiz: shared by the threads one request made on several "
                                                 "channels (each its own group); null for older posts"}})
    post_part = object_schema({key: value for key, value in post_row["properties"].items()
                               if key not in ("organizationId", "integrationId", "deletedAt", "image", "settings")}
                              | {"state": {"type": "string", "enum": post_states["enum"] + ["PUBLISHING"]},
                                 "image": array_of(ANY), "settings": ANY})
    going_out = {"goesOutAt": nullable("string") | {"description": (
        "When this queued part goes out: the post's date, a reply's delay after the part before it, or a "
        "retry's wait; null once PUBLISHED or ERROR, and for a draft")}}
    post_integration = object_schema({"id": STRING, "providerIdentifier": STRING, "name": STRING,
                                      "picture": nullable("string")})
    tag = object_schema({"tag": object_schema({"id": STRING, "name": STRING, "color": STRING, "orgId": STRING,
                                               "deletedAt": nullable("string"), **stored})})
    media = object_schema({"id": STRING, "path": STRING},
                          {"alt": STRING, "thumbnail": STRING, "thumbnailTimestamp": ANY})
    value = object_schema({"content": STRING, "image": array_of(media)}, {"id": STRING, "delay": {
        "type": "integer", "minimum": 0, "maximum": MAX_DELAY_MINUTES,
        "description": "Minutes this thread part waits after the one before it is published"}})
    return {
        "Msg": object_schema({"msg": STRING}, description="Postiz's controller errors: {msg}"),
        "NestError": object_schema({"statusCode": INTEGER, "message": {"anyOf": [STRING, array_of(STRING)]}},
                                   {"error": STRING},
                                   description="Nest's error body; a validation failure's message is an array of "
                                               "\"<field path> <rule>\" strings"),
        "PostValidationError": object_schema({"statusCode": INTEGER, "provider": STRING, "name": STRING,
                                              "message": STRING},
                                             description="Postiz's PostValidationException: which channel "
                                                         "refused the post, and why"),
        "Throttled": object_schema({"statusCode": {"const": 429}, "message": STRING}),
        "OAuthError": object_schema({"error": STRING, "error_description": STRING},
                                    description="RFC 6749 / RFC 7591: the OAuth routes' own error shape"),
        "Channel": object_schema({"id": STRING, "name": STRING, "identifier": STRING, "picture": nullable("string"),
                                  "disabled": BOOLEAN, "profile": nullable("string")},
                                 {"customer": ref("Customer")}),
        "Customer": object_schema({"id": STRING, "name": STRING}),
        "Webhook": object_schema({"id": STRING, "name": STRING, "url": STRING, "integrations": array_of(STRING),
                                  "signed": BOOLEAN, "createdAt": STRING, "events": array_of(STRING) | {
                                      "description": "rustiz: the events it is sent (see POST /webhooks)"}},
                                 {"urlMasked": {
                                      "type": "boolean", "description": "rustiz: below the scope full the url is "
                                                                        "shown as scheme://host/… and its last 4 "
                                                                        "characters"}}),
        "NewChannel": object_schema(
            {"provider": {"type": "string", "enum": sorted(CREDENTIAL_SPECS)},
             "credentials": {"type": "object", "description": "The provider's keys (README: Channels)"}},
            {"name": STRING, "customer": {**STRING, "description": "A customer's id or name; a new name makes one"}}),
        "Organization": object_schema({"id": STRING, "name": STRING, "timezone": STRING,
                                        "shortLink": {"enum": ["ask", "yes", "no"]}},
                                      {"postingSchedule": {"type": ["object", "null"]}}),
        "Alerts": object_schema({"channel": {"type": ["string", "null"]}, "lateMinutes": {"type": ["integer", "null"]},
                                 "defaultLateMinutes": INTEGER, "alerts": array_of(object_schema(
                                     {"id": STRING, "kind": {"type": "string", "enum": ["failed", "reconnect", "late"]},
                                      "text": STRING, "link": {"type": ["string", "null"]},
                                      "status": {"type": "string",
                                                 "enum": ["pending", "sent", "failed", "held", "folded"]},
                                      "error": {"type": ["string", "null"]}, "createdAt": STRING}))}),
        "Provider": object_schema(
            {"identifier": STRING, "name": {**STRING, "description": "The platform's name as rustiz shows it"},
             "connectable": {**BOOLEAN, "description": "Whether POST /integrations connects it with credentials"},
             "guide": {**STRING, "description": "Where to get the credentials (\"\" when not connectable)"},
             "credentials": array_of(object_schema({
                 "key": STRING, "label": STRING,
                 "kind": {"type": "string", "enum": ["url", "text", "secret", "list"],
                          "description": "The input that asks for it; a list is an array of strings"},
                 "placeholder": STRING, "help": STRING, "required": BOOLEAN})),
             "counting": {"type": "string", "enum": list(COUNTING_RULES), "description": (
                 "How the server counts a post's length: characters (code points) and x-weighted (twitter-text) "
                 "of the HTML without its tags, entities as written; graphemes of the text sent; mastodon: "
                 "graphemes, each link as limits.charactersReservedPerUrl, a remote mention as its @user; "
                 "telegram-html: UTF-16 code units of Telegram's HTML without its tags")},
             "maxLength": {"type": "integer", "minimum": 0, "description": (
                 "The default limit (a channel's own is its integration-settings maxLength); 0: none")},
             "limits": {"type": "object", "additionalProperties": INTEGER, "description": (
                 "More limits: verifiedMaxLength (X premium), maxMedia and charactersReservedPerUrl (Mastodon's "
                 "defaults, which an instance's own replace)")}},
            description="One provider's descriptor (rustiz)"),
        "ChannelRow": object_schema({"id": STRING, "internalId": STRING, "organizationId": STRING, "name": STRING,
                                     "picture": nullable("string"), "providerIdentifier": STRING, "type": STRING,
                                     "disabled": BOOLEAN, "tokenExpiration": nullable("string"),
                                     "profile": nullable("string"), "deletedAt": nullable("string"), **stored,
                                     "inBetweenSteps": BOOLEAN, "refreshNeeded": BOOLEAN, "postingTimes": STRING,
                                     "customInstanceDetails": nullable("string"), "customerId": nullable("string"),
                                     "rootInternalId": nullable("string"), "additionalSettings": STRING}),
        "Tag": tag,
        "ListedPost": object_schema({key: post_row["properties"][key] for key in (
            "id", "content", "publishDate", "releaseURL", "releaseId", "state", "intervalInDays", "group",
            "creationMethod", "settings", "multiChannelGroup")} | {"tags": array_of(ref("Tag")), "integration": post_integration},
            {"actualDate": STRING, "inQueue": BOOLEAN, "evergreen": BOOLEAN, **_REPEAT_END}),
        "PostRow": post_row | {"properties": post_row["properties"] | {
            "title": nullable("string"), "description": nullable("string"),
            "submittedForOrderId": nullable("string"), "submittedForOrganizationId": nullable("string"),
            "approvedSubmitForOrder": STRING, "lastMessageId": nullable("string")}},
        "Post": post_part | {"properties": post_part["properties"] | going_out | {
            "integration": post_integration, "tags": array_of(ref("Tag")), **_REPEAT_END, **_OCCURRENCES,
            "thread": array_of(post_part | {"properties": post_part["properties"] | going_out}), **_REVIEW_FIELDS,
            "canDeleteOnPlatform": {"type": "boolean", "description": (
                "rustiz (issue 28): whether its channel's platform lets rustiz delete what it published "
                "(DELETE /posts/{id}?onPlatform=true)")},
            "version": {"type": "string", "description": (
                "rustiz: the version of the post's whole group (every part: text, media, settings, date), also "
                "the answer's ETag; POST /posts/{id}/approve takes it (If-Match or version) and refuses with 409 "
                "when the post changed since")}},
            "required": post_part["required"] + ["integration", "tags", "thread", "review", "reviewReason",
                                                 "version"]},
        "ApiKey": object_schema({"id": STRING, "name": STRING, "scope": {"type": "string", "enum": list(SCOPES)},
                                 "createdAt": STRING, "lastUsedAt": nullable("string")}),
        "Media": object_schema({"id": STRING, "name": STRING, "originalName": nullable("string"), "path": STRING,
                                "thumbnail": nullable("string"), "alt": nullable("string")}),
        "Notification": object_schema({"id": STRING, "content": STRING, "link": nullable("string"),
                                       "createdAt": STRING, "postId": nullable("string")}),
        "CreatePost": object_schema(
            {"type": {"type": "string", "enum": ["draft", "schedule", "now", "update", "queue"]}, "date": DATE,
             "shortLink": BOOLEAN, "tags": array_of(object_schema({"value": STRING, "label": STRING})),
             "posts": {**array_of(object_schema({"integration": object_schema({"id": ID}), "value": {
                 **array_of(value), "minItems": 1}}, {"group": STRING, "settings": {"type": "object"}})),
                       "minItems": 1}},
            {"order": STRING, "inter": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_INTERVAL_DAYS,
                                        "description": "Repeat every this many days, at the same local time "
                                                        "in the organization's timezone (0 or null: never)"},
             "republish": BOOLEAN, **_REPEAT_END,
             "creationMethod": {"type": "string", "enum": ["API", "CLI"]},
             "allowDuplicate": {"type": "boolean", "description": "rustiz: post even when the same text is queued "
                                                                 "or was published on the channel within 24 hours"},
             "evergreen": {"type": "boolean", "description": "rustiz: queued again once published (docs/queue.md)"}}),
        "ImportReport": object_schema(
            {"dryRun": BOOLEAN, "ok": BOOLEAN, "rows": array_of(object_schema(
                {"row": INTEGER, "ok": BOOLEAN},
                {"errors": array_of(STRING),
                 "posts": array_of(object_schema({"postId": STRING, "integration": STRING}))}))},
            {"imported": INTEGER}),
        "PostEdit": {"type": "object", "additionalProperties": False, "properties": {
            "content": STRING, "image": array_of(media), "date": DATE, "settings": {"type": "object"},
            "evergreen": BOOLEAN, **_REPEAT_END}},
        "AnalyticsData": object_schema({"label": STRING,
                                        "data": array_of(object_schema({"total": ANY, "date": STRING})),
                                        "percentageChange": {"type": "number"}}),
    }


_ERROR_STATUS = {"BadRequest": "400", "PostRejected": "400", "Unauthorized": "401", "Forbidden": "403",
                 "NotFound": "404", "IntegrationNotFound": "404", "Conflict": "409", "TooLarge": "413", "RangeNotSatisfiable": "416",
                 "IdempotencyKeyReused": "422", "TooManyRequests": "429", "PlatformUnreachable": "502",
                 "Unavailable": "503"}


def _shared_responses() -> dict:
    nest, msg = ref("NestError"), ref("Msg")
    return {
        "BadRequest": json_body(nest, "The request is invalid; `message` says why (an array for field rules)"),
        "PostRejected": json_body({"anyOf": [nest, ref("PostValidationError")]},
                                  "The request is invalid, or a channel's rules refuse the post"),
        "Unauthorized": json_body(msg, "No API key, or an unknown one (`Authorization: <key>`)"),
        "Forbidden": json_body(nest, "The API key's scope does not allow this (`message` names the scope needed), "
                                     "or a session's change came without its X-CSRF-Token"),
        "NotFound": json_body(nest, "No such id in the caller's organization"),
        "IntegrationNotFound": json_body(msg, "No such channel in the caller's organization"),
        "Conflict": json_body(nest, "The post is being published or its state does not allow this, or the "
                                    "credentials are another account's than the channel's (or already another "
                                    "channel's), or (POST /posts) the same text "
                                    "is queued or was published on the channel within 24 hours: `duplicates` "
                                    "lists those posts, and \"allowDuplicate\": true posts anyway"),
        "TooLarge": json_body(nest, "The file is over the size limit for its type"),
        "RangeNotSatisfiable": json_body(nest, "The byte range is outside the file"),
        "IdempotencyKeyReused": json_body(nest, "This Idempotency-Key was used with another body in the last 24 h"),
        "PlatformUnreachable": json_body(nest, "The platform could not be reached or did not answer; nothing "
                                               "was changed, try again"),
        "TooManyRequests": {**json_body(ref("Throttled"), "Over REQUEST_LIMIT (per client per minute) or, on "
                                                          "POST /posts, API_LIMIT (per organization per hour)"),
                            "headers": {"Retry-After": {"description": "Seconds until a retry can succeed",
                                                        "schema": INTEGER}}},
        "Unavailable": {**json_body(nest, "rustiz is at RUSTIZ_MAX_CONNECTIONS or RUSTIZ_BODY_MEMORY_BUDGET, or "
                                          "cannot write its database (a full disk, say); `message` says which"),
                        "headers": {"Retry-After": {"description": "Seconds until a retry may succeed",
                                                    "schema": INTEGER}}},
    }


def _operation(documentation: dict, public: bool, path_parameters: list) -> dict:
    """One operation from a handler's @documented: every route can answer 429 (REQUEST_LIMIT) and 503; one
    that needs a key also 401 and 403. `path_parameters` are those of this path's template."""
    status, answer = documentation["answer"]
    # A whole response (it has content, or is only a description: an answer without a body) is kept as written.
    whole = "content" in answer or set(answer) == {"description"}
    responses = {status: answer if whole else json_body(answer, "Success")}
    shared = documentation["errors"].split() + ([] if public else ["Unauthorized", "Forbidden"])
    for name in shared + ["TooManyRequests", "Unavailable"]:
        responses[_ERROR_STATUS[name]] = {"$ref": f"#/components/responses/{name}"}
    responses.update(documentation["more_answers"])  # a route's own answer for a status wins over the shared one
    parameters = [given for given in documentation["parameters"]
                  if given["in"] != "path" or given["name"] in path_parameters]
    missing = set(path_parameters) - {given["name"] for given in parameters if given["in"] == "path"}
    if missing:
        raise LookupError(f"@documented names no path parameter {', '.join(sorted(missing))}")
    operation = {"summary": documentation["summary"], "parameters": parameters, "responses": responses}
    body = documentation["request"]
    if body is not None:
        operation["requestBody"] = {"required": True, **json_body(body)} if "content" not in body else body
    if public:
        operation["security"] = []
    return operation


def _handler(module: str, handler: str) -> Callable:
    """The function a route table entry names (`Class.method` of a feature module), not bound to an object."""
    class_name, _, method_name = handler.partition(".")
    return getattr(getattr(importlib.import_module("rustiz_features." + module), class_name), method_name)


def table_routes() -> list:
    """(methods, path as the document writes it, module, handler, served at the root only) of every route of
    the core's route table (but /health, the core's own, and the web app's files, which are not API)."""
    routes = [(method, API_PREFIXES[0] + path, module, handler, False) for method, path, module, handler in API_ROUTES]
    routes += [(methods, path, module, handler, False) for methods, path, module, handler in OTHER_ROUTES]
    return routes + [(method, path, module, handler, True) for method, path, module, handler in ROOT_ROUTES]


def _table_paths(root: dict) -> dict:
    """The document's paths of the route table, each operation from its handler's @documented."""
    paths: dict = {}
    for methods, template, module, handler_name, root_only in table_routes():
        handler = _handler(module, handler_name)
        documentation = getattr(handler, "openapi", None)
        if documentation is None:
            raise LookupError(f"{module}.{handler_name} ({template}) has no @documented")
        public = getattr(handler, "route_options", {}).get("authenticated", True) is False
        path_parameters = re.findall(r":(\w+)", template)
        item = paths.setdefault(re.sub(r":(\w+)", r"{\1}", template), {"servers": [root]} if root_only else {})
        for method in methods.split():
            item[method.lower()] = _operation(documentation, public, path_parameters)
    return paths


def _health() -> dict:
    """/health is the core's own route (App.health), which cannot carry @documented: the core imports no feature."""
    liveness = operation_documentation(
        "Liveness", ("200", {"description": "ok", "content": {"text/plain": {"schema": {"const": "ok"}}}}))
    return _operation(liveness, True, [])


def openapi_document(frontend_url: str) -> dict:
    """The OpenAPI 3.1 description of every route, with FRONTEND_URL as the server."""
    root = {"url": frontend_url or "/"}
    return {
        "openapi": "3.1.0",
        "info": {"title": "rustiz public API", "version": VERSION,
                 "description": "The Postiz public API as rustiz serves it, plus rustiz's additions. Every "
                                "/public/v1 route is also served under /api/public/v1 (the second server)."},
        "servers": [root, {"url": f"{frontend_url}/api", "description": "self-hosted Postiz's /api prefix"}],
        "security": [{"apiKey": []}],
        # `root` is the server without /api: the only one /health and the ROOT_ROUTES are served on.
        "paths": {"/health": {"servers": [root], "get": _health()}, **_table_paths(root)},
        "components": {"schemas": component_schemas(), "responses": _shared_responses(), "securitySchemes": {
            "apiKey": {"type": "apiKey", "in": "header", "name": "Authorization",
                       "description": "The organization's API key, as is or after \"Bearer \""}}},
    }


class OpenApiRoute:
    """GET /public/v1/openapi.json (no key needed): encoded once per worker, on first request."""

    def __init__(self, app: App):
        self.frontend_url = app.config.frontend_url
        self._encoded: Optional[bytes] = None

    @route_options(authenticated=False)
    @documented("This document", ("200", {"type": "object"}))
    def serve(self, request: Request) -> Response:
        if self._encoded is None:
            self._encoded = json_dumps(openapi_document(self.frontend_url))
        return Response(200, self._encoded, "application/json; charset=utf-8")
