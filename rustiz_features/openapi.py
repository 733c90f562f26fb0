"""The OpenAPI 3.1 document of the public API, GET /public/v1/openapi.json.

Built on the first request, not at import: start-up time matters more than the first caller's few
milliseconds. tests/test_openapi.py checks that it names exactly the routes App serves.
"""
from __future__ import annotations

from typing import Any, Optional

from rustiz import SCOPES, App, Request, Response, VERSION, json_dumps, route_options
from .api_posts import MAX_NOTIFICATIONS_PAGE
from .catalogue import CREDENTIAL_SPECS
from .text import COUNTING_RULES
from .media import MEDIA_TYPES
from .validation import MAX_DELAY_MINUTES, MAX_INTERVAL_DAYS


# Built on the first request, not at import: start-up time matters more than the first caller's
# few milliseconds. tests/test_openapi.py checks that it names exactly the routes App serves.


def _schema_ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable(kind: str) -> dict:
    return {"type": [kind, "null"]}


def _object(required: dict, optional: Optional[dict] = None, **extra: Any) -> dict:
    """An object schema: `required` properties always present, `optional` ones sometimes."""
    return {"type": "object", "properties": {**required, **(optional or {})}, "required": list(required), **extra}


def _array_of(items: dict) -> dict:
    return {"type": "array", "items": items}


_STRING, _INTEGER, _BOOLEAN, _ANY = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}, {}
_DATE = {"type": "string", "format": "date-time", "description": "ISO 8601; without an offset it is UTC"}
_REVIEW_FIELDS = {"review": {"type": ["string", "null"], "enum": ["review", "rejected", None], "description": (
                      "rustiz: review: made with a drafts key, waiting for a person; rejected: see reviewReason")},
                  "reviewReason": _nullable("string")}
_ID = {"type": "string", "minLength": 1}


def _openapi_schemas() -> dict:
    """The shapes the handlers answer with (Postiz's, field by field) and the bodies they take."""
    post_states = {"type": "string", "enum": ["QUEUE", "PUBLISHED", "ERROR", "DRAFT"]}
    stored = {"createdAt": _STRING, "updatedAt": _STRING}
    post_row = _object({"id": _STRING, "state": post_states, "publishDate": _STRING, "organizationId": _STRING,
                        "integrationId": _STRING, "content": _STRING, "delay": _INTEGER, "group": _STRING,
                        "parentPostId": _nullable("string"), "releaseId": _nullable("string"),
                        "releaseURL": _nullable("string"), "settings": _nullable("string"),
                        "image": _nullable("string"), "creationMethod": _STRING,
                        "intervalInDays": _nullable("integer"), "error": _nullable("string"), **stored,
                        "deletedAt": _nullable("string")})
    post_part = _object({key: value for key, value in post_row["properties"].items()
                         if key not in ("organizationId", "integrationId", "deletedAt", "image", "settings")}
                        | {"state": {"type": "string", "enum": post_states["enum"] + ["PUBLISHING"]},
                           "image": _array_of(_ANY), "settings": _ANY})
    going_out = {"goesOutAt": _nullable("string") | {"description": (
        "When this queued part goes out: the post's date, a reply's delay after the part before it, or a "
        "retry's wait; null once PUBLISHED or ERROR, and for a draft")}}
    post_integration = _object({"id": _STRING, "providerIdentifier": _STRING, "name": _STRING,
                                "picture": _nullable("string")})
    tag = _object({"tag": _object({"id": _STRING, "name": _STRING, "color": _STRING, "orgId": _STRING,
                                   "deletedAt": _nullable("string"), **stored})})
    media = _object({"id": _STRING, "path": _STRING},
                    {"alt": _STRING, "thumbnail": _STRING, "thumbnailTimestamp": _ANY})
    value = _object({"content": _STRING, "image": _array_of(media)}, {"id": _STRING, "delay": {
        "type": "integer", "minimum": 0, "maximum": MAX_DELAY_MINUTES,
        "description": "Minutes this thread part waits after the one before it is published"}})
    return {
        "Msg": _object({"msg": _STRING}, description="Postiz's controller errors: {msg}"),
        "NestError": _object({"statusCode": _INTEGER, "message": {"anyOf": [_STRING, _array_of(_STRING)]}},
                             {"error": _STRING},
                             description="Nest's error body; a validation failure's message is an array of "
                                         "\"<field path> <rule>\" strings"),
        "PostValidationError": _object({"statusCode": _INTEGER, "provider": _STRING, "name": _STRING,
                                        "message": _STRING},
                                       description="Postiz's PostValidationException: which channel refused "
                                                   "the post, and why"),
        "Throttled": _object({"statusCode": {"const": 429}, "message": _STRING}),
        "Channel": _object({"id": _STRING, "name": _STRING, "identifier": _STRING, "picture": _nullable("string"),
                            "disabled": _BOOLEAN, "profile": _nullable("string")},
                           {"customer": _schema_ref("Customer")}),
        "Customer": _object({"id": _STRING, "name": _STRING}),
        "Webhook": _object({"id": _STRING, "name": _STRING, "url": _STRING, "integrations": _array_of(_STRING),
                            "signed": _BOOLEAN, "createdAt": _STRING}, {"urlMasked": {
                                "type": "boolean", "description": "rustiz: below the scope full the url is shown as "
                                                                  "scheme://host/… and its last 4 characters"}}),
        "NewChannel": _object(
            {"provider": {"type": "string", "enum": sorted(CREDENTIAL_SPECS)},
             "credentials": {"type": "object", "description": "The provider's keys (README: Channels)"}},
            {"name": _STRING, "customer": {**_STRING, "description": "A customer's id or name; a new name makes one"}}),
        "Organization": _object({"id": _STRING, "name": _STRING, "timezone": _STRING}),
        "Alerts": _object({"channel": {"type": ["string", "null"]}, "lateMinutes": {"type": ["integer", "null"]},
                           "defaultLateMinutes": _INTEGER, "alerts": _array_of(_object(
                               {"id": _STRING, "kind": {"type": "string", "enum": ["failed", "reconnect", "late"]},
                                "text": _STRING, "link": {"type": ["string", "null"]},
                                "status": {"type": "string", "enum": ["pending", "sent", "failed", "held", "folded"]},
                                "error": {"type": ["string", "null"]}, "createdAt": _STRING}))}),
        "Provider": _object(
            {"identifier": _STRING, "name": {**_STRING, "description": "The platform's name as rustiz shows it"},
             "connectable": {**_BOOLEAN, "description": "Whether POST /integrations connects it with credentials"},
             "guide": {**_STRING, "description": "Where to get the credentials (\"\" when not connectable)"},
             "credentials": _array_of(_object({
                 "key": _STRING, "label": _STRING,
                 "kind": {"type": "string", "enum": ["url", "text", "secret", "list"],
                          "description": "The input that asks for it; a list is an array of strings"},
                 "placeholder": _STRING, "help": _STRING, "required": _BOOLEAN})),
             "counting": {"type": "string", "enum": list(COUNTING_RULES), "description": (
                 "How the server counts a post's length: characters (code points) and x-weighted (twitter-text) "
                 "of the HTML without its tags, entities as written; graphemes of the text sent; mastodon: "
                 "graphemes, each link as limits.charactersReservedPerUrl, a remote mention as its @user; "
                 "telegram-html: UTF-16 code units of Telegram's HTML without its tags")},
             "maxLength": {"type": "integer", "minimum": 0, "description": (
                 "The default limit (a channel's own is its integration-settings maxLength); 0: none")},
             "limits": {"type": "object", "additionalProperties": _INTEGER, "description": (
                 "More limits: verifiedMaxLength (X premium), maxMedia and charactersReservedPerUrl (Mastodon's "
                 "defaults, which an instance's own replace)")}},
            description="One provider's descriptor (rustiz)"),
        "ChannelRow": _object({"id": _STRING, "internalId": _STRING, "organizationId": _STRING, "name": _STRING,
                               "picture": _nullable("string"), "providerIdentifier": _STRING, "type": _STRING,
                               "disabled": _BOOLEAN, "tokenExpiration": _nullable("string"),
                               "profile": _nullable("string"), "deletedAt": _nullable("string"), **stored,
                               "inBetweenSteps": _BOOLEAN, "refreshNeeded": _BOOLEAN, "postingTimes": _STRING,
                               "customInstanceDetails": _nullable("string"), "customerId": _nullable("string"),
                               "rootInternalId": _nullable("string"), "additionalSettings": _STRING}),
        "Tag": tag,
        "ListedPost": _object({key: post_row["properties"][key] for key in (
            "id", "content", "publishDate", "releaseURL", "releaseId", "state", "intervalInDays", "group",
            "creationMethod", "settings")} | {"tags": _array_of(_schema_ref("Tag")), "integration": post_integration},
            {"actualDate": _STRING}),
        "PostRow": post_row | {"properties": post_row["properties"] | {
            "title": _nullable("string"), "description": _nullable("string"),
            "submittedForOrderId": _nullable("string"), "submittedForOrganizationId": _nullable("string"),
            "approvedSubmitForOrder": _STRING, "lastMessageId": _nullable("string")}},
        "Post": post_part | {"properties": post_part["properties"] | going_out | {
            "integration": post_integration, "tags": _array_of(_schema_ref("Tag")),
            "thread": _array_of(post_part | {"properties": post_part["properties"] | going_out}), **_REVIEW_FIELDS,
            "version": {"type": "string", "description": (
                "rustiz: the version of the post's whole group (every part: text, media, settings, date), also "
                "the answer's ETag; POST /posts/{id}/approve takes it (If-Match or version) and refuses with 409 "
                "when the post changed since")}},
            "required": post_part["required"] + ["integration", "tags", "thread", "review", "reviewReason",
                                                 "version"]},
        "ApiKey": _object({"id": _STRING, "name": _STRING, "scope": {"type": "string", "enum": list(SCOPES)},
                           "createdAt": _STRING, "lastUsedAt": _nullable("string")}),
        "Media": _object({"id": _STRING, "name": _STRING, "originalName": _nullable("string"), "path": _STRING,
                          "thumbnail": _nullable("string"), "alt": _nullable("string")}),
        "Notification": _object({"id": _STRING, "content": _STRING, "link": _nullable("string"),
                                 "createdAt": _STRING}),
        "CreatePost": _object(
            {"type": {"type": "string", "enum": ["draft", "schedule", "now", "update"]}, "date": _DATE,
             "shortLink": _BOOLEAN, "tags": _array_of(_object({"value": _STRING, "label": _STRING})),
             "posts": {**_array_of(_object({"integration": _object({"id": _ID}), "value": {
                 **_array_of(value), "minItems": 1}}, {"group": _STRING, "settings": {"type": "object"}})),
                       "minItems": 1}},
            {"order": _STRING, "inter": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_INTERVAL_DAYS,
                                         "description": "Repeat every this many days, at the same local time "
                                                        "in the organization's timezone (0 or null: never)"},
             "republish": _BOOLEAN,
             "creationMethod": {"type": "string", "enum": ["API", "CLI"]},
             "allowDuplicate": {"type": "boolean", "description": "rustiz: post even when the same text is queued "
                                                                 "or was published on the channel within 24 hours"}}),
        "ImportReport": _object(
            {"dryRun": _BOOLEAN, "ok": _BOOLEAN, "rows": _array_of(_object(
                {"row": _INTEGER, "ok": _BOOLEAN},
                {"errors": _array_of(_STRING),
                 "posts": _array_of(_object({"postId": _STRING, "integration": _STRING}))}))},
            {"imported": _INTEGER}),
        "PostEdit": {"type": "object", "additionalProperties": False, "properties": {
            "content": _STRING, "image": _array_of(media), "date": _DATE, "settings": {"type": "object"}}},
        "AnalyticsData": _object({"label": _STRING, "data": _array_of(_object({"total": _ANY, "date": _STRING})),
                                  "percentageChange": {"type": "number"}}),
    }


def _json_body(schema: dict, description: str = "") -> dict:
    answer = {"content": {"application/json": {"schema": schema}}}
    return {"description": description, **answer} if description else answer


def _parameter(where: str, name: str, description: str, required: bool = False, schema: Optional[dict] = None) -> dict:
    return {"name": name, "in": where, "required": required or where == "path", "description": description,
            "schema": schema or _STRING}


def _operation(summary: str, success: tuple, errors: str = "", parameters: tuple = (), body: Optional[dict] = None,
               public: bool = False) -> dict:
    """One operation: `success` is (status, schema or a full response), `errors` names shared responses
    ("NotFound Conflict"). Every route can answer 429 (REQUEST_LIMIT); a non-public one also 401."""
    status, answer = success
    responses = {status: answer if "content" in answer else _json_body(answer, "Success")}
    for name in errors.split() + ([] if public else ["Unauthorized", "Forbidden"]) + ["TooManyRequests", "Unavailable"]:
        responses[_ERROR_STATUS[name]] = {"$ref": f"#/components/responses/{name}"}
    operation = {"summary": summary, "parameters": list(parameters), "responses": responses}
    if body is not None:
        operation["requestBody"] = {"required": True, **_json_body(body)} if "content" not in body else body
    if public:
        operation["security"] = []
    return operation


def _with_response(operation: dict, status: str, response: dict) -> dict:
    """`operation` with a second success answer (`status`: `response`)."""
    operation["responses"] = {status: response, **operation["responses"]}
    return operation


_ERROR_STATUS = {"BadRequest": "400", "PostRejected": "400", "Unauthorized": "401", "Forbidden": "403",
                 "NotFound": "404", "IntegrationNotFound": "404", "Conflict": "409", "TooLarge": "413", "RangeNotSatisfiable": "416",
                 "IdempotencyKeyReused": "422", "TooManyRequests": "429", "PlatformUnreachable": "502",
                 "Unavailable": "503"}


def _openapi_responses() -> dict:
    nest, msg = _schema_ref("NestError"), _schema_ref("Msg")
    return {
        "BadRequest": _json_body(nest, "The request is invalid; `message` says why (an array for field rules)"),
        "PostRejected": _json_body({"anyOf": [nest, _schema_ref("PostValidationError")]},
                                   "The request is invalid, or a channel's rules refuse the post"),
        "Unauthorized": _json_body(msg, "No API key, or an unknown one (`Authorization: <key>`)"),
        "Forbidden": _json_body(nest, "The API key's scope does not allow this (`message` names the scope needed), "
                                      "or a session's change came without its X-CSRF-Token"),
        "NotFound": _json_body(nest, "No such id in the caller's organization"),
        "IntegrationNotFound": _json_body(msg, "No such channel in the caller's organization"),
        "Conflict": _json_body(nest, "The post is being published or its state does not allow this, or the "
                                      "credentials are another account's than the channel's (or already another "
                                      "channel's), or (POST /posts) the same text "
                                      "is queued or was published on the channel within 24 hours: `duplicates` "
                                      "lists those posts, and \"allowDuplicate\": true posts anyway"),
        "TooLarge": _json_body(nest, "The file is over the size limit for its type"),
        "RangeNotSatisfiable": _json_body(nest, "The byte range is outside the file"),
        "IdempotencyKeyReused": _json_body(nest, "This Idempotency-Key was used with another body in the last 24 h"),
        "PlatformUnreachable": _json_body(nest, "The platform could not be reached or did not answer; nothing "
                                                "was changed, try again"),
        "TooManyRequests": {**_json_body(_schema_ref("Throttled"), "Over REQUEST_LIMIT (per client per minute) or, "
                                                                   "on POST /posts, API_LIMIT (per organization per "
                                                                   "hour)"),
                            "headers": {"Retry-After": {"description": "Seconds until a retry can succeed",
                                                        "schema": _INTEGER}}},
        "Unavailable": {**_json_body(nest, "rustiz is at RUSTIZ_MAX_CONNECTIONS or RUSTIZ_BODY_MEMORY_BUDGET, or "
                                           "cannot write its database (a full disk, say); `message` says which"),
                        "headers": {"Retry-After": {"description": "Seconds until a retry may succeed",
                                                    "schema": _INTEGER}}},
    }


def _rate_limit_headers() -> dict:
    """What POST /posts answers carry: Postiz's throttler headers while API_LIMIT is on, and the replay mark."""
    headers = {name: {"description": description, "schema": _INTEGER} for name, description in (
        ("X-RateLimit-Limit", "API_LIMIT"), ("X-RateLimit-Remaining", "Calls left in this hour's window"),
        ("X-RateLimit-Reset", "Seconds until the window ends"))}
    headers["Idempotent-Replayed"] = {"description": "The answer first given for this Idempotency-Key",
                                      "schema": {"const": "true"}}
    return headers


def _openapi_paths(root: dict) -> dict:
    """Every route App serves, under /public/v1 (the /api server entry covers /api/public/v1 and /api/uploads).

    `root` is the server without /api: the only one /health is served on."""
    post_id, channel_id = _parameter("path", "id", "A post id"), _parameter("path", "id", "A channel id")
    post, deleted = _schema_ref("Post"), _object({"error": {"const": True}}, description="sic: Postiz's answer")
    analytics = _array_of(_schema_ref("AnalyticsData"))
    days_back = _parameter("query", "date", "Days back, 1 to 365 (default 30); platforms that give a daily history "
                                            "(Pinterest) answer that many days, the others today's totals",
                           schema=_INTEGER)
    media_upload = {"required": True, "content": {"multipart/form-data": {"schema": _object(
        {"file": {"type": "string", "contentMediaType": "application/octet-stream"}})}}}
    file_answer = {"description": "The file (Range, If-Range and If-None-Match are honoured)", "content": {
        media.content_type: {"schema": {"type": "string", "contentMediaType": media.content_type}}
        for media in MEDIA_TYPES.values()}}
    v1 = "/public/v1"
    return {
        "/health": {"servers": [root], "get": _operation(
            "Liveness", ("200", {"description": "ok", "content": {"text/plain": {"schema": {"const": "ok"}}}}),
            public=True)},
        "/metrics": {"servers": [root], "get": _operation(
            "Prometheus metrics (text format 0.0.4) for loopback clients, or with Authorization: Bearer "
            "RUSTIZ_METRICS_TOKEN; 403 otherwise (rustiz)",
            ("200", {"description": "The metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}),
            public=True)},
        f"{v1}/openapi.json": {"get": _operation("This document", ("200", {"type": "object"}), public=True)},
        f"{v1}/is-connected": {"get": _operation("Check the API key",
                                                 ("200", _object({"connected": {"const": True}})))},
        f"{v1}/integrations": {"get": _operation(
            "The organization's channels", ("200", _array_of(_schema_ref("Channel"))),
            parameters=(_parameter("query", "group", "Only the channels of this customer id"),)),
            "post": _with_response(_operation(
                "Connect a channel that needs no developer app with its credentials, checked with the platform "
                "first (rustiz). An account that is already a channel of the organization reconnects that "
                "channel instead: it keeps its id, posts, settings and group, takes the credentials (and the "
                "name and picture the platform reports), loses its reconnect flag, and its waiting posts go out",
                ("201", _schema_ref("Channel")), "BadRequest PlatformUnreachable",
                body=_schema_ref("NewChannel")), "200", _json_body(
                    _schema_ref("Channel") | {"properties": {"reconnected": {"const": True}}},
                    "The account was already this channel: reconnected with these credentials"))},
        f"{v1}/webhooks": {
            "get": _operation("The organization's outgoing webhooks (rustiz)", ("200", _array_of(_schema_ref("Webhook")))),
            "post": _operation(
                "Register a URL told of each post published or failed, with a signed JSON event (rustiz)",
                ("201", _schema_ref("Webhook")), "BadRequest",
                body=_object({"url": _STRING}, {"name": _STRING, "secret": _STRING,
                                                "integrations": _array_of({"anyOf": [_STRING, _object({"id": _STRING})]})}))},
        f"{v1}/webhooks/{{id}}": {"delete": _operation(
            "Stop sending events to a webhook (rustiz)", ("200", _object({"deleted": {"const": True}})), "NotFound",
            (_parameter("path", "id", "A webhook id"),))},
        f"{v1}/organization": {
            "get": _operation("The caller's organization and its timezone (rustiz)", ("200", _schema_ref("Organization"))),
            "put": _operation("Rename the organization or set its IANA timezone (rustiz)",
                              ("200", _schema_ref("Organization")), "BadRequest",
                              body={"type": "object", "properties": {"name": _STRING, "timezone": _STRING}})},
        f"{v1}/api-keys": {
            "get": _operation("The organization's API keys, its own first (named default), never the keys "
                              "(rustiz; scope full)", ("200", _object({"keys": _array_of(_schema_ref("ApiKey"))}))),
            "post": _operation("A named key with a scope, shown once (rustiz; scope full)",
                               ("201", _schema_ref("ApiKey") | {"properties": {"apiKey": _STRING}}),
                               "BadRequest Conflict", body=_object({"name": _STRING, "scope": {
                                   "type": "string", "enum": list(SCOPES)}}))},
        f"{v1}/api-keys/{{id}}": {"delete": _operation(
            "Revoke a named key (by id or name); it and its web sessions stop working at once (rustiz; scope full)",
            ("200", _object({"id": _STRING, "name": _STRING, "scope": _STRING})), "BadRequest NotFound",
            (_parameter("path", "id", "The key's id or name"),))},
        f"{v1}/posts/{{id}}/approve": {"post": _operation(
            "Approve a draft awaiting review: queued at `date`, else its own date, else (passed) the channel's next "
            "free slot (rustiz; scope full). With If-Match (the ETag of GET /posts/{id}) or `version`, a 409 "
            "when the post changed since that version (nothing is approved)", ("200", post),
            "PostRejected NotFound Conflict", (post_id, _parameter("header", "If-Match", (
                "rustiz: the ETag of GET /posts/{id} the reviewer saw"), required=False)),
            _object({}, {"date": _DATE, "version": _STRING}))},
        f"{v1}/posts/{{id}}/reject": {"post": _operation(
            "Reject a draft awaiting review, with a reason the agent reads back (rustiz; scope full)",
            ("200", post), "BadRequest NotFound Conflict", (post_id,), _object({"reason": _STRING}))},
        f"{v1}/alerts": {
            "get": _operation("The organization's alert channel, late threshold and latest alerts (rustiz)",
                              ("200", _schema_ref("Alerts"))),
            "put": _operation("Name the channel trouble is announced on (null: none), and after how many minutes a "
                              "queued post counts as late (null: RUSTIZ_ALERT_LATE_MINUTES) (rustiz)",
                              ("200", _schema_ref("Alerts")), "BadRequest",
                              body=_object({}, {"channel": {"type": ["string", "null"]},
                                                "lateMinutes": {"type": ["integer", "null"], "minimum": 1,
                                                                "maximum": 10080}}))},
        f"{v1}/organization/api-key": {"post": _operation(
            "A new API key, shown once; the old one, and the web sessions signed in with it, stop working at once "
            "(rustiz). Called from such a session: a new session cookie, and its csrfToken",
            ("201", _object({"apiKey": _STRING}, {"csrfToken": _STRING})))},
        f"{v1}/integrations/{{id}}": {
            "delete": _operation("Soft-delete a channel and its posts", ("200", _schema_ref("ChannelRow")), "NotFound",
                                 (channel_id,)),
            "get": _operation("A channel's row, with refreshNeeded and postingTimes (rustiz)",
                              ("200", _schema_ref("ChannelRow")), "NotFound", (channel_id,)),
            "put": _operation("Rename, disable or enable a channel, set its posting times or group, or give it "
                              "new credentials (rustiz). Credentials are checked with the platform first (400 in "
                              "its words, nothing changed); they must be the channel's own account's (409 "
                              "otherwise; a webhook channel may take a new URL), and an OAuth channel takes none "
                              "(400: reconnect it through GET /social/:integration?refresh=). Its waiting posts "
                              "go out at once", ("200", _schema_ref("ChannelRow")),
                              "BadRequest NotFound Conflict PlatformUnreachable", (channel_id,),
                              _object({}, {"name": _STRING, "disabled": _BOOLEAN, "customer": {"type": ["string", "null"]},
                                           "postingTimes": _array_of(_object({"time": _INTEGER})),
                                           "credentials": {"type": "object", "description": (
                                               "The provider's credential keys, as POST /integrations takes "
                                               "them (GET /providers lists them)")}}))},
        f"{v1}/groups": {"get": _operation("The organization's customers",
                                           ("200", _array_of(_schema_ref("Customer"))))},
        f"{v1}/providers": {"get": _operation(
            "Every provider rustiz knows: its credential fields, how its text is counted, its limits (rustiz)",
            ("200", _array_of(_schema_ref("Provider"))))},
        f"{v1}/social/{{integration}}": {"get": _operation(
            "Start connecting an OAuth channel: the platform's consent page, which comes back to "
            "{FRONTEND_URL}/integrations/social/<identifier>. Without the operator's app configured: 400 with "
            "needsOperatorApp, callbackUrl, variables and guide (rustiz)",
            ("200", _object({"url": _STRING})), "BadRequest NotFound PlatformUnreachable",
            (_parameter("path", "integration", "The provider identifier (x, linkedin, mastodon...)"),
             _parameter("query", "refresh", "Reconnect this channel (its id): it keeps its id, posts and settings"),
             _parameter("query", "instance", "Mastodon: the server to connect to (rustiz registers its app there)")))},
        f"{v1}/integrations/{{id}}/steps": {
            "get": _operation("What a channel in inBetweenSteps is chosen from: pages, boards (rustiz)",
                              ("200", _array_of(_object({"id": _STRING, "name": _STRING},
                                                        {"picture": {"type": ["string", "null"]}}))),
                              "IntegrationNotFound Conflict PlatformUnreachable", (channel_id,)),
            "post": _operation("Pick one: the channel becomes that page or board, ready to post to (rustiz)",
                               ("200", _schema_ref("ChannelRow")), "BadRequest IntegrationNotFound Conflict "
                               "PlatformUnreachable", (channel_id,), _object({"id": _STRING}))},
        f"{v1}/integrations/{{id}}/picture": {"get": _operation(
            "The channel's picture, fetched from the platform by rustiz and kept an hour (the web app shows "
            "pictures only from rustiz); 404 when it has none or it could not be fetched (rustiz)",
            ("200", {"description": "A JPEG, PNG, GIF or WebP image", "content": {
                kind: {"schema": {"type": "string", "contentMediaType": kind}}
                for kind in ("image/jpeg", "image/png", "image/gif", "image/webp")}}),
            "NotFound", (channel_id,))},
        f"{v1}/integration-settings/{{id}}": {"get": _operation(
            "A channel's provider rules, length limit, settings JSON Schema and helper tools",
            ("200", _object({"output": _object({"rules": _STRING, "maxLength": _INTEGER,
                                                "settings": {"type": ["object", "string"]},
                                                "tools": _array_of({"type": "object"})})})),
            "IntegrationNotFound", (channel_id,))},
        f"{v1}/integration-trigger/{{id}}": {"post": _operation(
            "Call a provider helper tool", ("201", _object({"output": _ANY})),
            "BadRequest IntegrationNotFound PlatformUnreachable",
            (channel_id,), _object({"methodName": _STRING}, {"data": {"type": "object"}}))},
        f"{v1}/posts": {
            "get": _operation(
                "Main posts in a date window, recurring ones once per occurrence",
                ("200", _object({"posts": _array_of(_schema_ref("ListedPost"))})), "BadRequest",
                (_parameter("query", "startDate", "From this instant (required without state)", False, _DATE),
                 _parameter("query", "endDate", "Up to this instant, inclusive (required without state)", False,
                            _DATE),
                 _parameter("query", "customer", "Only posts on this customer's channels"),
                 _parameter("query", "state", "rustiz: review (drafts of drafts keys awaiting review) or rejected, "
                                              "whatever their date; each item adds review and reviewReason",
                            schema={"type": "string", "enum": ["review", "rejected"]}))),
            "post": _operation(
                "Create, schedule or update posts: one thread per channel",
                ("201", {**_json_body(_array_of(_object({"postId": _STRING, "integration": _STRING})), "Created"),
                         "headers": _rate_limit_headers()}),
                "PostRejected Conflict IdempotencyKeyReused",
                (_parameter("header", "Idempotency-Key", "A retry with the same key and body within 24 h gets "
                                                         "the first answer and creates nothing",
                            schema={"type": "string", "minLength": 1, "maxLength": 255}),),
                _schema_ref("CreatePost"))},
        f"{v1}/posts/export": {"get": _operation(
            "The posts of a date window as a file: JSON (CreatePost bodies, importable) or CSV (rustiz)",
            ("200", {"description": "The file", "content": {
                "application/json": {"schema": _array_of(_schema_ref("CreatePost"))},
                "text/csv": {"schema": {"type": "string"}}}}), "BadRequest",
            (_parameter("query", "format", "json (default) or csv", schema={"type": "string", "enum": ["json", "csv"]}),
             _parameter("query", "startDate", "Main posts dated from this instant", True, _DATE),
             _parameter("query", "endDate", "Up to this instant, inclusive", True, _DATE)))},
        f"{v1}/posts/import": {"post": _operation(
            "Validate (dryRun=1) or store, all or nothing, posts from a JSON or CSV file (rustiz)",
            ("201", _schema_ref("ImportReport")), "BadRequest",
            (_parameter("query", "dryRun", "1: validate every row, store nothing, answer 200",
                        schema={"type": "string", "enum": ["0", "1", "true", "false"]}),
             _parameter("query", "allowDuplicate", "1: no row is refused as a duplicate",
                        schema={"type": "string", "enum": ["0", "1", "true", "false"]})),
            {"required": True, "content": {
                "application/json": {"schema": {"anyOf": [_array_of(_schema_ref("CreatePost")),
                                                          _schema_ref("CreatePost")]}},
                "text/csv": {"schema": {"type": "string"}}}})},
        f"{v1}/posts/group/{{group}}": {"delete": _operation(
            "Soft-delete a group of posts", ("200", deleted), parameters=(_parameter("path", "group", "A group"),))},
        f"{v1}/posts/{{id}}": {
            "get": _operation("A post with its thread (rustiz)", ("200", post), "NotFound", (post_id,)),
            "put": _operation("Edit a post not yet published (rustiz)", ("200", post),
                              "PostRejected NotFound Conflict", (post_id,), _schema_ref("PostEdit")),
            "delete": _operation("Soft-delete the post's whole group", ("200", deleted), "NotFound", (post_id,))},
        f"{v1}/posts/{{id}}/settings": {"put": _operation(
            "Merge provider settings into a main post", ("200", _object({"postId": _STRING, "publishDate": _STRING})),
            "BadRequest NotFound Conflict", (post_id,), _object({"settings": {"type": "object"}}))},
        f"{v1}/posts/{{id}}/status": {"put": _operation(
            "Make a post a draft or queue it",
            ("200", _object({"id": _STRING, "state": {"type": "string", "enum": ["DRAFT", "QUEUE"]}})),
            "PostRejected Conflict", (post_id,),
            _object({"status": {"type": "string", "enum": ["draft", "schedule"]}}))},
        f"{v1}/posts/{{id}}/release-id": {"put": _operation(
            "Link a post whose releaseId is \"missing\" to its platform post", ("200", _schema_ref("PostRow")),
            "BadRequest NotFound", (post_id,), _object({"releaseId": _ID}))},
        f"{v1}/posts/{{id}}/missing": {"get": _operation(
            "Recent platform posts to link a missing release to", ("200", _array_of(_object({"id": _STRING,
                                                                                             "url": _STRING}))),
            "NotFound", (post_id,))},
        f"{v1}/posts/{{id}}/retry": {"post": _operation(
            "Queue the failed parts of a post's thread again (rustiz)", ("201", post), "NotFound Conflict",
            (post_id,))},
        f"{v1}/notifications": {"get": _operation(
            "Notifications, newest first, 100 a page",
            ("200", _object({"notifications": _array_of(_schema_ref("Notification")), "total": _INTEGER,
                             "page": _INTEGER, "limit": _INTEGER, "hasMore": _BOOLEAN})), "BadRequest",
            (_parameter("query", "page", "From 0", schema={"type": "integer", "minimum": 0,
                                                           "maximum": MAX_NOTIFICATIONS_PAGE}),))},
        f"{v1}/find-slot/{{id}}": {"get": _operation(
            "The channel's next free posting time",
            ("200", _object({"date": _STRING, "timezone": _STRING, "localDate": _STRING})),
            "BadRequest NotFound Conflict", (channel_id,))},
        f"{v1}/analytics/{{integration}}": {"get": _operation(
            "A channel's figures, read from its platform (cached 10 minutes); [] where the platform gives none. "
            "409: the channel lacks its credentials or the operator's app; 502: the platform did not answer",
            ("200", analytics), "BadRequest NotFound Conflict PlatformUnreachable",
            (_parameter("path", "integration", "A channel id"), days_back))},
        f"{v1}/analytics/post/{{postId}}": {"get": _operation(
            "A published post's figures, read from its platform (cached 10 minutes); [] before it is published",
            ("200", {"anyOf": [analytics, _object({"missing": {"const": True}})]}),
            "BadRequest NotFound Conflict PlatformUnreachable",
            (_parameter("path", "postId", "A post id"), days_back))},
        f"{v1}/upload": {"post": _operation(
            "Upload an image or video (type read from its bytes)", ("201", _schema_ref("Media")),
            "BadRequest TooLarge", body=media_upload)},
        f"{v1}/upload-from-url": {"post": _operation(
            "Store an image or video fetched from a public URL", ("201", _schema_ref("Media")),
            "BadRequest TooLarge", body=_object({"url": _STRING}))},
        "/uploads/{year}/{month}/{day}/{name}": {"get": _uploaded_file(file_answer)},
        **_mcp_openapi_paths(),
        **_web_openapi_paths(root),
    }


def _uploaded_file(file_answer: dict) -> dict:
    """GET /uploads/...: the file, a byte range of it, or 304 for a cached copy that is still current."""
    operation = _operation(
        "An uploaded file", ("200", file_answer), "NotFound RangeNotSatisfiable",
        tuple(_parameter("path", name, "From the Media path") for name in ("year", "month", "day", "name"))
        + (_parameter("header", "Range", "One range, bytes=first-last; others are ignored"),
           _parameter("header", "If-Range", "An ETag: the range only if the file is still that one"),
           _parameter("header", "If-None-Match", "ETags of a cached copy")), public=True)
    operation["responses"]["206"] = {**file_answer, "description": "The requested range"}
    operation["responses"]["304"] = {"description": "The cached copy is current"}
    return operation


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
        "paths": _openapi_paths(root),
        "components": {"schemas": _openapi_schemas(), "responses": _openapi_responses(), "securitySchemes": {
            "apiKey": {"type": "apiKey", "in": "header", "name": "Authorization",
                       "description": "The organization's API key, as is or after \"Bearer \""}}},
    }


class OpenApiRoute:
    """GET /public/v1/openapi.json (no key needed): encoded once per worker, on first request."""

    def __init__(self, app: App):
        self.frontend_url = app.config.frontend_url
        self._encoded: Optional[bytes] = None

    @route_options(authenticated=False)
    def serve(self, request: Request) -> Response:
        if self._encoded is None:
            self._encoded = json_dumps(openapi_document(self.frontend_url))
        return Response(200, self._encoded, "application/json; charset=utf-8")




def _mcp_openapi_paths() -> dict:
    """The MCP routes in the OpenAPI document: JSON-RPC is described by the MCP specification, not here."""
    key = _parameter("path", "apiKey", "The organization's API key (or send it as `Authorization: Bearer <key>` "
                                       "to the path without it)", required=True)
    message = {"description": "One JSON-RPC 2.0 message or a batch (MCP Streamable HTTP)",
               "content": {"application/json": {"schema": {"anyOf": [{"type": "object"}, {"type": "array"}]}}}}

    def endpoint(parameters: tuple) -> dict:
        post = _operation("MCP (Model Context Protocol) for AI agents: JSON-RPC requests, notifications, batches",
                          ("200", {"description": "The JSON-RPC answer(s); 202 when there is none to give",
                                   "content": {"application/json": {"schema": _ANY},
                                               "text/event-stream": {"schema": _STRING}}}),
                          "BadRequest", parameters, message, public=True)
        refuse = _operation("Refused with 405: rustiz sends no server-initiated messages",
                            ("405", {"type": "object"}), "", parameters, public=True)
        return {"post": post, "delete": _operation("End an MCP session (nothing is kept between requests)",
                                                   ("200", {"description": "Done"}), "", parameters, public=True),
                "get": refuse, "put": refuse, "patch": refuse,
                "options": _operation("CORS preflight", ("200", {"description": "OK"}), "", parameters, public=True)}

    preflight = _operation("CORS preflight", ("200", {"description": "OK"}), "", (key,), public=True)
    session = _parameter("query", "sessionId", "From the stream's endpoint event", required=True)
    return {
        "/mcp": endpoint(()), "/mcp/{apiKey}": endpoint((key,)),
        "/sse/{apiKey}": {"options": preflight, "get": _operation(
            "MCP legacy HTTP+SSE transport: a stream that announces its message endpoint, then carries the answers",
            ("200", {"description": "text/event-stream", "content": {"text/event-stream": {"schema": _STRING}}}),
            "", (key,), public=True)},
        "/message/{apiKey}": {"options": preflight, "post": _operation(
            "MCP legacy HTTP+SSE transport: a message for the stream's session; the answer goes to the stream",
            ("202", {"description": "Accepted"}), "BadRequest NotFound", (key, session), message, public=True)},
    }


def _web_openapi_paths(root: dict) -> dict:
    """The web app's sign-in routes (its HTML, JavaScript and CSS files are not API, so not listed)."""
    signed_in = _object({"organization": _schema_ref("Organization"), "csrfToken": _STRING})
    unauthorized = ("401", {"description": "Wrong key or password, or not signed in",
                            "content": {"application/json": {"schema": _object({"message": _STRING})}}})
    login = _operation("Sign in to the web app: sets the HttpOnly session cookie", ("200", signed_in), "BadRequest",
                       body={"anyOf": [_object({"apiKey": _STRING}), _object({"email": _STRING, "password": _STRING})]},
                       public=True)
    login["responses"]["401"] = unauthorized[1]
    session_answer = {"oneOf": [_object({"signedIn": {"const": True}, "organization": _schema_ref("Organization"),
                                         "csrfToken": _STRING}),
                                _object({"signedIn": {"const": False}})]}
    session = _operation("The signed-in organization and the CSRF token changes must send (X-CSRF-Token); "
                         "{signedIn: false} when the request carries no session cookie",
                         ("200", session_answer), public=True)
    session["responses"]["401"] = unauthorized[1]
    logout = _operation("Sign out: the session ends and its cookie is cleared",
                        ("204", {"description": "Done, with no body", "content": {}}), public=True)
    callback = _operation("Where an OAuth platform sends the user back after consent: stores the channel, then "
                          "redirects to the web app's channels page with notice= or problem=",
                          ("303", {"description": "To {FRONTEND_URL}/#/channels?notice=...&channel=<id> or "
                                                  "?problem=<what happened and what to do>", "content": {}}),
                          "", (_parameter("path", "identifier", "The provider identifier"),
                               _parameter("query", "code", "The authorization code (OAuth 2.0)"),
                               _parameter("query", "state", "The flow's state, from GET /social/:integration"),
                               _parameter("query", "error", "The platform's refusal, e.g. access_denied")), public=True)
    return {"/auth/login": {"servers": [root], "post": login}, "/auth/session": {"servers": [root], "get": session},
            "/auth/logout": {"servers": [root], "post": logout},
            "/integrations/social/{identifier}": {"servers": [root], "get": callback}}
