"""The MCP server AI agents use: JSON-RPC over Streamable HTTP, and the legacy HTTP+SSE transport.

Streamable HTTP at /mcp and /mcp/<key> (also under /api), stateless with JSON answers as Postiz's: every
POST stands alone, so any worker can answer it. Both eras of the protocol: the initialize handshake
(2024-11-05 .. 2025-11-25) and 2026-07-28's server/discover with a per-request _meta envelope. The legacy
HTTP+SSE transport (/sse/<key> + /message/<key>) keeps its session in the worker holding the stream.

Rules:
- The key is checked from the request's head (Route.authenticate), before its body is read. /mcp also takes
  the access tokens of rustiz's OAuth authorization server (oauth_server.py), and answers 401 without
  credentials with WWW-Authenticate naming its protected resource metadata (MCP authorization).
- A stream whose client stops reading is ended, never buffered without bound.
- The tools themselves are mcp_tools.py's.
"""
from __future__ import annotations

import asyncio
import json
import traceback
from typing import Any, Awaitable, NamedTuple, Optional, Union

from rustiz import (
    App, EventStreamResponse, KeyIdentity, PlainRefusal, Request, Response, VERSION, hash_api_key, json_dumps, log,
    lone_surrogate, new_uuid, route_options,
)
from .api_docs import ANY, STRING, documented, parameter
from .oauth_server import resource_metadata_url, token_identity
from .mcp_tools import (
    HEADER_MISMATCH, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, MCP_CORS_HEADERS, MCP_HANDSHAKE_VERSIONS,
    MCP_LATEST_HANDSHAKE, MCP_MAX_BATCH, MCP_MAX_BODY_BYTES, MCP_MAX_SSE_SESSIONS, MCP_MODERN_VERSIONS,
    MCP_SSE_ENDED_REMEMBERED, MCP_SSE_QUEUE_BYTES, META_CAPABILITIES, META_SERVER_INFO, META_VERSION,
    METHOD_NOT_FOUND, McpError, McpTools, PARSE_ERROR, UNSUPPORTED_PROTOCOL_VERSION, rpc_error,
)

KEY_WATCH_SECONDS = 1.0  # how soon an open legacy SSE stream ends once its key is revoked or rotated


class McpCall(NamedTuple):
    """What one POST carries besides its messages: who, and which protocol era its headers claim."""
    organization_id: str
    version_header: Optional[str]
    method_header: Optional[str]
    key: Optional[KeyIdentity] = None  # whose scope and MCP rate limits apply to tool calls
    address: Optional[str] = None  # the client's (Guard.client_address), for the audit log


def _text_response(status: int, text: str, headers: Optional[list] = None) -> Response:
    return Response(status, text.encode(), "text/plain; charset=utf-8", MCP_CORS_HEADERS + (headers or []))


def _rpc_response(value: Any, status: int = 200, headers: Optional[list] = None) -> Response:
    return Response(status, json_dumps(value), "application/json", MCP_CORS_HEADERS + (headers or []))


def _refusal(status: int, code: int, message: str) -> PlainRefusal:
    """A POST refused before any message is answered: a JSON-RPC error with the id null, and its HTTP status."""
    return PlainRefusal(_rpc_response(rpc_error(code, message), status))


def mcp_body_too_large(request: Request, size: int, limit: int) -> Response:
    return _rpc_response(rpc_error(INVALID_REQUEST, f"Request body too large: {size} bytes, at most {limit}"), 413)


def _sse_event(message: dict) -> bytes:
    return b"event: message\ndata: " + json_dumps(message) + b"\n\n"


def _is_modern(params: Any) -> bool:
    """A 2026-07-28 request: its params carry the per-request envelope instead of a prior initialize."""
    return isinstance(params, dict) and isinstance(params.get("_meta"), dict) and META_VERSION in params["_meta"]


def _wants_only_event_stream(request: Request) -> bool:
    accept = request.headers.get("accept", "").lower()
    return "text/event-stream" in accept and "application/json" not in accept and "*/*" not in accept


# Postiz's MCP auth texts, checked from the head (so a refused body is never read), and MCP's body limit.
MCP_ROUTE = {"authenticated": False, "authenticate": "authenticate", "body_limit": MCP_MAX_BODY_BYTES,
             "too_large": mcp_body_too_large}
# For the OpenAPI document: JSON-RPC itself is described by the MCP specification, not there.
_API_KEY = parameter("path", "apiKey", "The organization's API key (or send it as `Authorization: Bearer <key>` to "
                                       "the path without it)")
_MESSAGE = {"description": "One JSON-RPC 2.0 message or a batch (MCP Streamable HTTP)",
            "content": {"application/json": {"schema": {"anyOf": [{"type": "object"}, {"type": "array"}]}}}}


class McpServer:
    """The MCP routes: Postiz's URLs, authentication texts and CORS; JSON-RPC dispatch to McpTools."""

    def __init__(self, app: "App"):
        self.app = app
        self.guard = app.guard
        self.tools = McpTools(app)
        self.server_info = {"name": "rustiz", "version": VERSION}
        self.capabilities = {"tools": {}, "logging": {"enabled": True}}
        self.sse_sessions: dict = {}  # session id -> (organization id, its EventStreamResponse, the key of its URL)
        self.watching_keys = False  # _watch_keys runs (while streams are open)
        self.seen_generation = b""
        self.sse_unread: dict = {}  # session id -> organization id, of streams ended because nobody read them

    # --- HTTP ---------------------------------------------------------------------------------

    @staticmethod
    @route_options(authenticated=False)  # CORS preflights carry no credentials
    @documented("CORS preflight", ("200", {"description": "OK"}), parameters=(_API_KEY,))
    def preflight(request: Request) -> Response:
        return _text_response(200, "OK")

    def authenticate(self, request: Request) -> str:
        """Postiz's MCP auth: the key in the path (400 when unknown), else `Authorization: [Bearer ]<key>` (401);
        raises PlainRefusal with Postiz's plain-text refusal."""
        if "apiKey" in request.params:
            identity = self.guard.key_identity(request.params["apiKey"])
            if identity is None:
                raise PlainRefusal(_text_response(400, "Invalid API Key"))
            request.scope, request.key = identity.scope, identity
            return identity.organization
        header = request.headers.get("authorization")
        # (MCP authorization: the 401 points at the protected resource metadata, where OAuth clients start)
        challenge = f'Bearer resource_metadata="{resource_metadata_url(self.app.config.frontend_url)}"'
        if not header:
            raise PlainRefusal(_text_response(401, "Missing Authorization header", [("WWW-Authenticate", challenge)]))
        key = header[7:].strip() if header[:7].lower() == "bearer " else header.strip()
        identity = (self.guard.key_identity(key) or token_identity(self.app, key)) if key else None
        if identity is None:
            raise PlainRefusal(_text_response(401, "Invalid API Key or OAuth token", [
                ("WWW-Authenticate", challenge + ', error="invalid_token"')]))
        request.scope, request.key = identity.scope, identity
        return identity.organization

    @staticmethod
    @route_options(**MCP_ROUTE)
    @documented("Refused with 405: rustiz sends no server-initiated messages", ("405", {"type": "object"}),
                parameters=(_API_KEY,))
    def not_allowed(request: Request) -> Response:
        # GET would open a stream for server-initiated messages; rustiz sends none (the spec allows 405).
        return _rpc_response(rpc_error(-32000, "Method not allowed."), 405, [("Allow", "POST, DELETE, OPTIONS")])

    @route_options(**MCP_ROUTE)
    @documented("End an MCP session (nothing is kept between requests)", ("200", {"description": "Done"}),
                parameters=(_API_KEY,))
    def delete(self, request: Request) -> Response:
        """Ending a session: nothing is kept between requests, so there is nothing to forget."""
        return _text_response(200, "")

    @route_options(**MCP_ROUTE)
    @documented("MCP (Model Context Protocol) for AI agents: JSON-RPC requests, notifications, batches",
                ("200", {"description": "The JSON-RPC answer(s); 202 when there is none to give",
                         "content": {"application/json": {"schema": ANY}, "text/event-stream": {"schema": STRING}}}),
                "BadRequest", (_API_KEY,), _MESSAGE)
    def post(self, request: Request) -> Union[Response, Awaitable[Response]]:
        organization_id = request.organization
        messages, batch = self._messages(request)
        call = McpCall(organization_id, request.headers.get("mcp-protocol-version"), request.headers.get("mcp-method"),
                       request.key, self.app.guard.client_address(request))
        answers = self._answer_all(messages, call)
        if not isinstance(answers, list):
            return self._reply_later(answers, request, batch)
        return self._reply(answers, request, batch)

    async def _reply_later(self, pending: Awaitable[list], request: Request, batch: bool) -> Response:
        return self._reply(await pending, request, batch)

    def _reply(self, answers: list, request: Request, batch: bool) -> Response:
        answers = [answer for answer in answers if answer is not None]
        if not answers:
            return _text_response(202, "")  # notifications and responses only
        headers = []
        modern_error = not batch and "error" in answers[0] and answers[0].get("_modern", False)
        if any([answer.pop("_session", False) for answer in answers]):
            headers.append(("Mcp-Session-Id", new_uuid()))
        for answer in answers:
            answer.pop("_modern", None)
        if _wants_only_event_stream(request):
            return Response(200, b"".join(_sse_event(answer) for answer in answers), "text/event-stream",
                            MCP_CORS_HEADERS + headers + [("Cache-Control", "no-cache")])
        status = 200  # the handshake era answers errors with 200, as Postiz's SDK; 2026-07-28 maps them
        if modern_error:
            status = 404 if answers[0]["error"]["code"] == METHOD_NOT_FOUND else 400
        return _rpc_response(answers if batch else answers[0], status, headers)

    def _messages(self, request: Request) -> tuple:
        """(the JSON-RPC messages of a POST, whether they came as a batch); raises PlainRefusal with the HTTP refusal."""
        if "application/json" not in request.headers.get("content-type", "").lower():
            raise _refusal(415, -32000, "Unsupported Media Type: Content-Type must be application/json")
        try:
            body = json.loads(request.body)
        except (ValueError, RecursionError):
            raise _refusal(400, PARSE_ERROR, "Parse error: Invalid JSON")
        messages = body if isinstance(body, list) else [body]
        may_hold_surrogates = b"\\u" in request.body or b"\x00" in request.body[:4]  # as in Request.json
        for message in messages:
            problem = _unanswerable_request(message, may_hold_surrogates)
            if problem is not None:  # JSON-RPC 2.0: an Invalid Request is answered with the id null
                raise _refusal(400, INVALID_REQUEST, f"Invalid Request: {problem}")
        if not messages or not all(_is_jsonrpc_message(message) for message in messages):
            raise _refusal(400, PARSE_ERROR, "Parse error: Invalid JSON-RPC message")
        if len(messages) > MCP_MAX_BATCH:
            raise _refusal(400, INVALID_REQUEST, f"Invalid Request: a batch holds at most {MCP_MAX_BATCH} "
                                                 f"messages, got {len(messages)}")
        initializing = sum(1 for message in messages if message.get("method") == "initialize")
        if initializing and len(messages) > 1:
            raise _refusal(400, INVALID_REQUEST, "Invalid Request: Only one initialization request is allowed")
        if isinstance(body, list) and any(_is_modern(message.get("params")) for message in messages):
            raise _refusal(400, INVALID_REQUEST, "Body must be a single JSON-RPC request or notification object")
        version = request.headers.get("mcp-protocol-version")
        if version is not None and not initializing and version not in MCP_HANDSHAKE_VERSIONS + MCP_MODERN_VERSIONS:
            supported = ", ".join(MCP_MODERN_VERSIONS + MCP_HANDSHAKE_VERSIONS)
            raise _refusal(400, -32000, f"Bad Request: Unsupported protocol version: {version} "
                                        f"(supported versions: {supported})")
        return messages, isinstance(body, list)

    # --- JSON-RPC -----------------------------------------------------------------------------

    def _answer_all(self, messages: list, call: McpCall) -> Union[list, Awaitable[list]]:
        """The answers (None for notifications), or an awaitable of them when a tool waits on the network."""
        answers = [self._answer(message, call) for message in messages]
        if all(answer is None or type(answer) is dict for answer in answers):
            return answers
        return self._gather(answers)

    @staticmethod
    async def _gather(answers: list) -> list:
        return [answer if answer is None or type(answer) is dict else await answer for answer in answers]

    def _answer(self, message: dict, call: McpCall) -> Union[None, dict, Awaitable[dict]]:
        if "method" not in message or "id" not in message:
            return None  # a notification (nothing to do for any of them) or a response to a request never sent
        request_id, params = message["id"], message.get("params")
        modern = _is_modern(params) or call.version_header in MCP_MODERN_VERSIONS
        try:
            if modern and message["method"] != "initialize":
                self._check_envelope(message, call)
            result = self._result(message["method"], params, call, modern)
        except McpError as error:
            return {"jsonrpc": "2.0", "id": request_id, "error": error.payload(), "_modern": modern}
        except Exception:
            log("unhandled error in an MCP request:\n" + traceback.format_exc().rstrip())
            return {"jsonrpc": "2.0", "id": request_id, "error": {"code": INTERNAL_ERROR, "message": "Internal error"}}
        if type(result) is not dict:  # a coroutine: the tool waits on the network
            return self._finish_answer(request_id, result, modern)
        return self._wrapped(request_id, result, modern, message["method"])

    async def _finish_answer(self, request_id: Any, pending: Awaitable[dict], modern: bool) -> dict:
        try:
            result = await pending
        except Exception:
            log("unhandled error in an MCP tool:\n" + traceback.format_exc().rstrip())
            return {"jsonrpc": "2.0", "id": request_id, "error": {"code": INTERNAL_ERROR, "message": "Internal error"}}
        return self._wrapped(request_id, result, modern, "tools/call")

    def _wrapped(self, request_id: Any, result: dict, modern: bool, method: str) -> dict:
        if modern:
            result = {**result, "resultType": "complete", "_meta": {META_SERVER_INFO: self.server_info}}
        answer = {"jsonrpc": "2.0", "id": request_id, "result": result}
        if method == "initialize":
            answer["_session"] = True  # _reply adds an Mcp-Session-Id header, then drops this mark
        return answer

    @staticmethod
    def _check_envelope(message: dict, call: McpCall) -> None:
        """2026-07-28's per-request fields: the envelope, then the headers agreeing with it, then the version."""
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        missing = [key for key in (META_VERSION, META_CAPABILITIES) if not isinstance(meta, dict) or key not in meta]
        if missing:
            raise McpError(INVALID_PARAMS, f"params._meta is missing the required envelope key(s): {', '.join(missing)}")
        version = meta[META_VERSION]
        if call.version_header is not None and call.version_header != version:
            raise McpError(HEADER_MISMATCH, "MCP-Protocol-Version header does not match the request envelope's "
                                            "protocol version")
        if call.method_header is not None and call.method_header != message["method"]:
            raise McpError(HEADER_MISMATCH, "Mcp-Method header does not match the request body's method")
        if version not in MCP_MODERN_VERSIONS:
            raise McpError(UNSUPPORTED_PROTOCOL_VERSION, f"Unsupported protocol version: {version}",
                           {"supported": list(MCP_MODERN_VERSIONS + MCP_HANDSHAKE_VERSIONS[:4]), "requested": version})

    def _result(self, method: str, params: Any, call: McpCall, modern: bool) -> Union[dict, Awaitable[dict]]:
        if params is not None and not isinstance(params, dict):
            raise McpError(INVALID_PARAMS, f"Invalid params: {method} takes an object as params")
        params = params or {}
        if method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments")
            if not isinstance(name, str):
                raise McpError(INVALID_PARAMS, "Invalid params: tools/call needs params.name, the tool's name "
                                               "(see tools/list)")
            if arguments is not None and not isinstance(arguments, dict):
                raise McpError(INVALID_PARAMS, f"Invalid params: params.arguments of {name} must be an object")
            return self.tools.call(call.organization_id, name, arguments, call.key, call.address)
        if method == "tools/list":
            return {**self.tools.list_result, "cacheScope": "public", "ttlMs": 0} if modern else self.tools.list_result
        if method == "initialize":
            requested = params.get("protocolVersion")
            version = requested if requested in MCP_HANDSHAKE_VERSIONS else MCP_LATEST_HANDSHAKE
            return {"protocolVersion": version, "capabilities": self.capabilities, "serverInfo": self.server_info}
        if method == "server/discover":
            return {"supportedVersions": list(MCP_MODERN_VERSIONS + MCP_HANDSHAKE_VERSIONS[:4]),
                    "capabilities": {"tools": {}}, "cacheScope": "public", "ttlMs": 0}
        if method in ("ping", "logging/setLevel"):
            return {}
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")

    # --- the legacy HTTP+SSE transport (2024-11-05) -------------------------------------------

    @route_options(**MCP_ROUTE, on_loop=True)  # (the stream's queue belongs to the event loop's thread)
    @documented("MCP legacy HTTP+SSE transport: a stream that announces its message endpoint, then carries the answers",
                ("200", {"description": "text/event-stream", "content": {"text/event-stream": {"schema": STRING}}}),
                parameters=(_API_KEY,))
    def open_sse(self, request: Request) -> Response:
        organization_id = request.organization
        if request.method == "HEAD":  # the head of a stream, without opening a session nobody will read
            return Response(200, b"", "text/event-stream", list(MCP_CORS_HEADERS))
        if len(self.sse_sessions) >= MCP_MAX_SSE_SESSIONS:
            return _text_response(503, f"Too many open MCP SSE streams (at most {MCP_MAX_SSE_SESSIONS} per worker); "
                                       f"use the Streamable HTTP endpoint /mcp/<key> instead")
        from urllib.parse import quote
        session_id = new_uuid()
        events = CountingQueue()
        prefix = "/api" if request.path.startswith("/api/") else ""
        endpoint = f"{prefix}/message/{quote(request.params['apiKey'], safe='')}?sessionId={session_id}"
        events.put_nowait(f"event: endpoint\ndata: {endpoint}\n\n".encode())
        stream = EventStreamResponse(events, lambda: self.sse_sessions.pop(session_id, None), MCP_CORS_HEADERS)
        self.sse_sessions[session_id] = (organization_id, stream, request.params["apiKey"])
        if not self.watching_keys:
            self.watching_keys = True
            self.seen_generation = self.app.store.credentials_generation()
            asyncio.get_running_loop().call_later(KEY_WATCH_SECONDS, self._watch_keys)
        return stream

    def _watch_keys(self) -> None:
        """Every KEY_WATCH_SECONDS while streams are open: when keys changed (one revoked or rotated, in any worker
        or by the CLI: the shared credentials generation moves), the streams of keys that no longer work end, as
        a revoked key's web sessions do."""
        if not self.sse_sessions:
            self.watching_keys = False
            return
        generation = self.app.store.credentials_generation()
        if generation != self.seen_generation:
            self.seen_generation = generation
            asyncio.ensure_future(self._end_streams_of_revoked_keys())
        asyncio.get_running_loop().call_later(KEY_WATCH_SECONDS, self._watch_keys)

    async def _end_streams_of_revoked_keys(self) -> None:
        store = self.app.store
        for session_id, (organization_id, stream, key) in list(self.sse_sessions.items()):
            identity = await store.off_loop(store.key_for_hash, hash_api_key(key))
            if identity is None or identity.organization != organization_id:
                log(f"legacy MCP SSE stream {session_id} ended: its key was revoked or rotated")
                self.sse_sessions.pop(session_id, None)
                stream.abandon()

    @route_options(**MCP_ROUTE, on_loop=True)
    @documented("MCP legacy HTTP+SSE transport: a message for the stream's session; the answer goes to the stream",
                ("202", {"description": "Accepted"}), "BadRequest NotFound",
                (_API_KEY, parameter("query", "sessionId", "From the stream's endpoint event", required=True)),
                _MESSAGE)
    def post_sse_message(self, request: Request) -> Union[Response, Awaitable[Response]]:
        organization_id = request.organization
        session_id = request.query.get("sessionId", "")
        if self.sse_unread.get(session_id) == organization_id:
            return _stream_ended_unread()
        session = self.sse_sessions.get(session_id)
        if session is None or session[0] != organization_id:
            # Sessions live in the worker holding the stream; another worker cannot reach it.
            workers = (f"; with {self.app.config.workers} workers this message may have reached another worker "
                       f"than the stream's: use the Streamable HTTP endpoint /mcp/<key> instead"
                       if self.app.config.workers > 1 else "")
            return _text_response(404, "Session not found: open a new SSE stream at /sse/<key> and post to the "
                                       "endpoint it announces" + workers)
        messages, _ = self._messages(request)
        call = McpCall(organization_id, request.headers.get("mcp-protocol-version"), None, request.key,
                       self.app.guard.client_address(request))
        answers = self._answer_all(messages, call)
        if isinstance(answers, list):
            return self._post_to_stream(answers, session_id)
        return self._post_to_stream_later(answers, session_id)

    async def _post_to_stream_later(self, pending: Awaitable[list], session_id: str) -> Response:
        return self._post_to_stream(await pending, session_id)

    def _post_to_stream(self, answers: list, session_id: str) -> Response:
        """The answers onto the session's stream; a client that leaves too many unread loses the stream."""
        session = self.sse_sessions.get(session_id)
        if session is None:  # the stream closed while a tool ran
            return _stream_ended_unread() if session_id in self.sse_unread else \
                _text_response(404, "Session not found: the SSE stream closed; open a new one at /sse/<key>")
        stream = session[1]
        for answer in answers:
            if answer is not None:
                answer.pop("_session", None)
                answer.pop("_modern", None)
                event = _sse_event(answer)
                waiting = stream.events.waiting_bytes
                if waiting and waiting + len(event) > MCP_SSE_QUEUE_BYTES:
                    self._end_unread_stream(session_id, session[0], stream)
                    return _stream_ended_unread()
                stream.events.put_nowait(event)
        return _text_response(202, "Accepted")

    def _end_unread_stream(self, session_id: str, organization_id: str, stream: EventStreamResponse) -> None:
        log(f"legacy MCP SSE stream {session_id} ended: its client left more than {MCP_SSE_QUEUE_BYTES} bytes "
            "of answers unread")
        self.sse_sessions.pop(session_id, None)
        self.sse_unread[session_id] = organization_id
        if len(self.sse_unread) > MCP_SSE_ENDED_REMEMBERED:
            del self.sse_unread[next(iter(self.sse_unread))]  # the oldest
        stream.abandon()


class CountingQueue(asyncio.Queue):
    """An asyncio.Queue of bytes (or None) that keeps count of the bytes waiting in it."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting_bytes = 0

    def _put(self, item: Optional[bytes]) -> None:  # asyncio.Queue's hooks for subclasses (as PriorityQueue's)
        self.waiting_bytes += len(item) if item else 0
        super()._put(item)

    def _get(self) -> Optional[bytes]:
        item = super()._get()
        self.waiting_bytes -= len(item) if item else 0
        return item


def _stream_ended_unread() -> Response:
    return _rpc_response(rpc_error(-32000, (
        f"This SSE stream was closed because its client did not read it: more than {MCP_SSE_QUEUE_BYTES // 1048576} "
        "MiB of answers were waiting. Open a new stream at /sse/<key> and read it while posting to the endpoint it "
        "announces (or use the Streamable HTTP endpoint /mcp/<key>)")), 410)


# The ids a request may carry: strings, and the integers every JSON-RPC peer holds (64-bit, signed).
MCP_ID_MIN, MCP_ID_MAX = -2**63, 2**63 - 1


def _unanswerable_request(message: Any, may_hold_surrogates: bool) -> Optional[str]:
    """Why a request parsed but cannot be answered: an id its answer could not carry back exactly (1e400,
    2**64, 1.5), or text that is no Unicode (a lone surrogate from a \\u escape). None when it can be."""
    if not isinstance(message, dict) or "method" not in message:
        return None
    request_id = message.get("id")
    if isinstance(request_id, float) or (type(request_id) is int and not MCP_ID_MIN <= request_id <= MCP_ID_MAX):
        return f"the id must be a string or an integer from {MCP_ID_MIN} to {MCP_ID_MAX}"
    if not may_hold_surrogates:
        return None
    for where, value in (("the id", request_id if isinstance(request_id, str) else ""), ("the message", message)):
        surrogate = lone_surrogate(value)
        if surrogate is not None:
            return (f"{where} holds a lone UTF-16 surrogate ({surrogate} without its pair), which is no "
                    "character; send the character itself or a whole \\uXXXX\\uXXXX pair")
    return None


def _is_jsonrpc_message(message: Any) -> bool:
    """A request, notification or response of JSON-RPC 2.0, as the SDKs' schema accepts them."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return False
    if "method" in message:
        request_id = message.get("id")
        return isinstance(message["method"], str) and ("id" not in message or (
            isinstance(request_id, (str, int)) and not isinstance(request_id, bool)))
    return "id" in message and ("result" in message or "error" in message)
