"""The MCP transport in raw JSON-RPC over HTTP: authentication texts, CORS, every error code, batches,
notifications, protocol-version negotiation in both eras, sessions, the legacy SSE stream, body and
batch limits, and API_LIMIT on the schedule tool."""
from __future__ import annotations

import json
import socket
import time

import pytest

from fakes.webhook import FakeWebhookReceiver
from support import Database

JSON = {"Content-Type": "application/json"}
UNKNOWN_SESSION = "Session not found: open a new SSE stream at /sse/<key> and post to the endpoint it announces"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}


def post(server, body, path: str | None = None, headers: dict | None = None, raw: bytes | None = None) -> tuple:
    """POST to /mcp/<key> (or `path`); (status, headers, parsed JSON body or the text)."""
    data = raw if raw is not None else json.dumps(body).encode()
    status, answer_headers, answer = server.request("POST", path or f"/mcp/{server.key}", {**JSON, **(headers or {})},
                                                    data)
    try:
        return status, answer_headers, json.loads(answer)
    except ValueError:
        return status, answer_headers, answer.decode()


def rpc(method: str, params=None, request_id=1) -> dict:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def modern(method: str, params: dict | None = None, request_id=1) -> tuple:
    """A 2026-07-28 request and the headers that go with it."""
    return (rpc(method, {**(params or {}), "_meta": MODERN_META}, request_id),
            {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method})


# --- authentication and CORS ------------------------------------------------------------------------

def test_authentication_failures_have_postiz_s_statuses_and_texts(server):
    assert post(server, rpc("ping"), "/mcp")[::2] == (401, "Missing Authorization header")
    assert post(server, rpc("ping"), "/mcp", {"Authorization": "Bearer nope"})[::2] == (
        401, "Invalid API Key or OAuth token")
    assert post(server, rpc("ping"), "/mcp/nope")[::2] == (400, "Invalid API Key")
    assert post(server, rpc("ping"), "/api/mcp/nope")[::2] == (400, "Invalid API Key")
    assert post(server, rpc("ping"), "/message/nope?sessionId=x")[::2] == (400, "Invalid API Key")
    assert server.request("GET", "/sse/nope")[::2] == (400, b"Invalid API Key")
    for path, headers in (("/mcp", {"Authorization": f"Bearer {server.key}"}), ("/mcp", {"Authorization": server.key}),
                          ("/api/mcp", {"Authorization": f"Bearer {server.key}"}), (f"/api/mcp/{server.key}", {})):
        status, _, answer = post(server, rpc("ping"), path, headers)
        assert (status, answer) == (200, {"jsonrpc": "2.0", "id": 1, "result": {}}), path


def test_cors_as_postiz_preflight_needs_no_key(server):
    for path in ("/mcp", f"/mcp/{server.key}", "/sse/anything", "/api/mcp"):
        status, headers, body = server.request("OPTIONS", path, {"Origin": "https://app.example",
                                                                 "Access-Control-Request-Method": "POST"})
        assert (status, body) == (200, b"OK"), path
        assert headers["access-control-allow-origin"] == "*" and headers["access-control-allow-headers"] == "*"
    status, headers, _ = post(server, rpc("ping"))
    assert headers["access-control-allow-origin"] == "*" and headers["access-control-expose-headers"] == "*"
    assert post(server, rpc("ping"), "/mcp")[1]["access-control-allow-origin"] == "*"


# --- HTTP-level refusals ----------------------------------------------------------------------------

def test_a_body_that_is_not_json_rpc_is_refused_with_its_code(server):
    assert post(server, None, headers={"Content-Type": "text/plain"}, raw=b"{}")[::2] == (415, {
        "jsonrpc": "2.0", "id": None,
        "error": {"code": -32000, "message": "Unsupported Media Type: Content-Type must be application/json"}})
    assert post(server, None, raw=b'{"jsonrpc": "2.0", "id": 1,')[::2] == (400, {
        "jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error: Invalid JSON"}})
    for body in ({"hello": 1}, [], [1], {"jsonrpc": "1.0", "id": 1, "method": "ping"},
                 {"jsonrpc": "2.0", "id": True, "method": "ping"}, {"jsonrpc": "2.0", "id": 1, "method": 5}):
        assert post(server, body)[::2] == (400, {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32700, "message": "Parse error: Invalid JSON-RPC message"}}), body


def test_methods_other_than_post_and_delete(server):
    for method in ("GET", "PUT", "PATCH"):
        status, headers, body = server.request(method, f"/mcp/{server.key}")
        assert status == 405 and headers["allow"] == "POST, DELETE, OPTIONS"
        assert json.loads(body) == {"jsonrpc": "2.0", "id": None,
                                    "error": {"code": -32000, "message": "Method not allowed."}}
    assert server.request("DELETE", f"/mcp/{server.key}", {"Mcp-Session-Id": "whatever"})[::2] == (200, b"")
    assert server.request("DELETE", "/mcp")[::2] == (401, b"Missing Authorization header")


def test_bodies_and_batches_are_bounded(server):
    status, _, answer = post(server, None, raw=b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"'
                                              + b"x" * (4 * 1024 * 1024) + b'"}}')
    assert status == 413 and answer["error"]["code"] == -32600 and "at most 4194304" in answer["error"]["message"]
    status, _, answer = post(server, [rpc("ping", request_id=n) for n in range(101)])
    assert status == 400 and answer["error"] == {
        "code": -32600, "message": "Invalid Request: a batch holds at most 100 messages, got 101"}


def test_request_ids_an_answer_could_not_carry_back_are_invalid_requests(server):
    """An id above 2**64 was a 500 (orjson writes 64-bit integers only), and so was a lone surrogate."""
    def invalid(problem: str) -> dict:
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": f"Invalid Request: {problem}"}}

    id_rule = "the id must be a string or an integer from -9223372036854775808 to 9223372036854775807"
    for request_id in (b"18446744073709551617", b"9" * 30, b"-9223372036854775809", b"1e400", b"1.5", b"-0.0"):
        raw = b'{"jsonrpc": "2.0", "id": ' + request_id + b', "method": "ping"}'
        assert post(server, None, raw=raw)[::2] == (400, invalid(id_rule)), request_id
        assert post(server, None, raw=b"[" + raw + b"]")[::2] == (400, invalid(id_rule)), request_id
    surrogate = ("holds a lone UTF-16 surrogate (\\ud800 without its pair), which is no character; send the "
                 "character itself or a whole \\uXXXX\\uXXXX pair")
    assert post(server, None, raw=b'{"jsonrpc": "2.0", "id": "a\\ud800", "method": "ping"}')[::2] == (
        400, invalid("the id " + surrogate))
    for raw in (b'{"jsonrpc": "2.0", "id": 1, "method": "\\ud800"}',
                b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "postGetTool", '
                b'"arguments": {"id": "\\udfff"}}}'):
        status, _, answer = post(server, None, raw=raw)
        assert (status, answer["id"], answer["error"]["code"]) == (400, None, -32600), raw
        assert answer["error"]["message"].startswith("Invalid Request: the message holds a lone UTF-16 surrogate")
    for request_id in (9223372036854775807, -9223372036854775808, "\U0001f600"):  # the ends of the range, a pair
        assert post(server, rpc("ping", request_id=request_id))[::2] == (
            200, {"jsonrpc": "2.0", "id": request_id, "result": {}})


# --- JSON-RPC ---------------------------------------------------------------------------------------

def test_unknown_methods_and_invalid_params(server):
    assert post(server, rpc("resources/list"))[::2] == (200, {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32601, "message": "Method not found: resources/list"}})
    for params, message in (({}, "Invalid params: tools/call needs params.name, the tool's name (see tools/list)"),
                            ({"name": "groupList", "arguments": [1]},
                             "Invalid params: params.arguments of groupList must be an object"),
                            ([1], "Invalid params: tools/call takes an object as params")):
        assert post(server, rpc("tools/call", params, "a"))[::2] == (200, {"jsonrpc": "2.0", "id": "a", "error": {
            "code": -32602, "message": message}})


def test_tool_errors_are_results_not_protocol_errors(server):
    status, _, answer = post(server, rpc("tools/call", {"name": "nope", "arguments": {}}))
    assert status == 200 and answer["result"] == {"content": [{"type": "text", "text": "Unknown tool: nope"}],
                                                  "isError": True}
    answer = post(server, rpc("tools/call", {"name": "integrationSchema", "arguments": {"platform": 3, "x": 1}}))[2]
    assert answer["result"]["isError"] is True
    assert answer["result"]["content"][0]["text"] == (
        "Tool validation failed. Please fix the following errors and try again:\n- isPremium: Required\n"
        "- platform: Expected string, received number\n\nProvided arguments: {\n  \"platform\": 3,\n  \"x\": 1\n}")
    answer = post(server, rpc("tools/call", {"name": "groupList", "arguments": {"unknown": "stripped"}}))[2]
    assert answer["result"] == {"content": [{"type": "text", "text": '{"output":[]}'}],
                                "structuredContent": {"output": []}, "isError": False}


def test_notifications_and_responses_are_accepted_with_202(server):
    status, _, body = post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (status, body) == (202, "")
    assert post(server, [{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
                         {"jsonrpc": "2.0", "id": 7, "result": {}}])[::2] == (202, "")


def test_a_batch_is_answered_in_order_without_its_notifications(server):
    status, _, answer = post(server, [rpc("ping", request_id=1), {"jsonrpc": "2.0", "method": "notifications/x"},
                                      rpc("nope", request_id="two"), rpc("tools/list", request_id=3)])
    assert status == 200 and [item["id"] for item in answer] == [1, "two", 3]
    assert answer[0]["result"] == {} and answer[1]["error"]["code"] == -32601
    assert [tool["name"] for tool in answer[2]["result"]["tools"]][:2] == ["integrationList", "groupList"]
    assert post(server, [rpc("ping")])[2] == [{"jsonrpc": "2.0", "id": 1, "result": {}}]  # a batch of one is a batch


def test_initialize_must_be_alone(server):
    initialize = rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "t", "version": "1"}})
    assert post(server, [initialize, rpc("ping", request_id=2)])[::2] == (400, {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "Invalid Request: Only one initialization request is allowed"}})


# --- protocol versions --------------------------------------------------------------------------------

@pytest.mark.parametrize("requested, answered", [
    ("2025-11-25", "2025-11-25"), ("2025-06-18", "2025-06-18"), ("2025-03-26", "2025-03-26"),
    ("2024-11-05", "2024-11-05"), ("2026-07-28", "2025-11-25"), ("1999-01-01", "2025-11-25"), (None, "2025-11-25")])
def test_initialize_negotiates_the_version(server, requested, answered):
    params = {"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    if requested:
        params["protocolVersion"] = requested
    status, headers, answer = post(server, rpc("initialize", params))
    assert status == 200 and answer["result"] == {
        "protocolVersion": answered, "capabilities": {"tools": {}, "logging": {"enabled": True}},
        "serverInfo": {"name": "rustiz", "version": "0.1.0"}}
    session = headers["mcp-session-id"]
    assert len(session) == 36
    # Stateless: the session id is accepted afterwards, and so is a request without one.
    assert post(server, rpc("ping"), headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": answered})[0] == 200
    assert "mcp-session-id" not in post(server, rpc("ping"))[1]


def test_an_unsupported_protocol_version_header_is_refused(server):
    assert post(server, rpc("ping"), headers={"MCP-Protocol-Version": "2023-01-01"})[::2] == (400, {
        "jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message":
            "Bad Request: Unsupported protocol version: 2023-01-01 (supported versions: 2026-07-28, 2025-11-25, "
            "2025-06-18, 2025-03-26, 2024-11-05, 2024-10-07)"}})
    assert post(server, rpc("ping"), headers={"MCP-Protocol-Version": "2024-10-07"})[0] == 200


def test_the_2026_revision_discover_and_per_request_envelope(server):
    body, headers = modern("server/discover")
    status, _, answer = post(server, body, headers=headers)
    assert status == 200 and answer["result"] == {
        "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
        "capabilities": {"tools": {}}, "cacheScope": "public", "ttlMs": 0, "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "rustiz", "version": "0.1.0"}}}
    body, headers = modern("tools/call", {"name": "groupList", "arguments": {}})
    result = post(server, body, headers={**headers, "Mcp-Name": "groupList"})[2]["result"]
    assert result["structuredContent"] == {"output": []} and result["resultType"] == "complete"


def test_the_2026_envelope_errors_map_to_http_statuses(server):
    request = rpc("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
    assert post(server, request, headers={"MCP-Protocol-Version": "2026-07-28"})[::2] == (400, {
        "jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message":
            "params._meta is missing the required envelope key(s): io.modelcontextprotocol/clientCapabilities"}})
    body, headers = modern("tools/list")
    status, _, answer = post(server, body, headers={**headers, "MCP-Protocol-Version": "2025-11-25"})
    assert status == 400 and answer["error"]["code"] == -32020
    status, _, answer = post(server, body, headers={**headers, "Mcp-Method": "tools/call"})
    assert status == 400 and answer["error"]["code"] == -32020
    future = rpc("tools/list", {"_meta": {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2027-01-01"}})
    status, _, answer = post(server, future)
    assert status == 400 and answer["error"]["code"] == -32022
    assert answer["error"]["data"] == {"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26",
                                                     "2024-11-05"], "requested": "2027-01-01"}
    body, headers = modern("resources/list")
    assert post(server, body, headers=headers)[::2] == (404, {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32601, "message": "Method not found: resources/list"}})
    assert post(server, [body], headers=headers)[::2] == (400, {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "Body must be a single JSON-RPC request or notification object"}})


def test_a_client_accepting_only_an_event_stream_gets_one(server):
    status, headers, body = server.request("POST", f"/mcp/{server.key}", {**JSON, "Accept": "text/event-stream"},
                                           json.dumps(rpc("ping")).encode())
    assert status == 200 and headers["content-type"] == "text/event-stream"
    assert body == b'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'


# --- the legacy SSE transport ---------------------------------------------------------------------------

def read_event(stream) -> tuple:
    event, data = None, None
    while True:
        line = stream.readline().decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
        elif line == "" and event is not None:
            return event, data


@pytest.mark.parametrize("prefix", ["", "/api"])
def test_the_sse_stream_carries_the_answers_of_its_session(server, prefix):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        connection.sendall(f"GET {prefix}/sse/{server.key} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"
                           .encode())
        stream = connection.makefile("rb")
        assert stream.readline() == b"HTTP/1.1 200 OK\r\n"
        head = {}
        while (line := stream.readline()) != b"\r\n":
            name, _, value = line.decode().partition(":")
            head[name.lower()] = value.strip()
        assert head["content-type"] == "text/event-stream" and head["access-control-allow-origin"] == "*"
        event, endpoint = read_event(stream)
        assert event == "endpoint" and endpoint.startswith(f"{prefix}/message/{server.key}?sessionId=")
        status, _, body = post(server, [rpc("ping", request_id=1), rpc("tools/list", request_id=2)], endpoint)
        assert (status, body) == (202, "Accepted")
        assert json.loads(read_event(stream)[1]) == {"jsonrpc": "2.0", "id": 1, "result": {}}
        assert json.loads(read_event(stream)[1])["result"]["tools"][0]["name"] == "integrationList"
        assert post(server, rpc("ping"), endpoint.split("?")[0] + "?sessionId=unknown")[::2] == (404, UNKNOWN_SESSION)
        assert post(server, None, endpoint, raw=b"{")[::2] == (400, {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32700, "message": "Parse error: Invalid JSON"}})
        stream.close()  # (the socket stays open while a file made from it is)
    # Once the stream is gone, so is its session.
    deadline = time.monotonic() + 5
    while post(server, rpc("ping"), endpoint)[0] != 404:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def memory_kib(pid: int) -> dict:
    """VmRSS and VmHWM (the peak) of a process, in KiB."""
    with open(f"/proc/{pid}/status") as status:
        return {line.split(":")[0]: int(line.split()[1]) for line in status if line.startswith(("VmRSS", "VmHWM"))}


def test_a_legacy_sse_stream_its_client_does_not_read_is_ended_and_memory_stays_bounded(server):
    connection = socket.socket()
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a client that reads nothing more
    connection.settimeout(10)
    connection.connect(("127.0.0.1", server.port))
    connection.sendall(f"GET /sse/{server.key} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    received = b""
    while b"sessionId=" not in received or not received.endswith(b"\n\n"):
        received += connection.recv(1)
    endpoint = received.split(b"data: ")[1].strip().decode()
    before = memory_kib(server.process.pid)["VmRSS"]
    batch = [rpc("tools/list", request_id=n) for n in range(100)]  # about 1.7 MB of answers per POST
    statuses = []
    for _ in range(60):  # 100 MB of answers if nothing stopped them
        statuses.append(post(server, batch, endpoint)[0])
        if statuses[-1] != 202:
            break
    assert statuses[-1] == 410 and set(statuses[:-1]) == {202} and len(statuses) < 20, statuses
    growth_mib = (memory_kib(server.process.pid)["VmHWM"] - before) / 1024
    assert growth_mib < 40, growth_mib  # the bound is 4 MiB of unread answers, plus what the socket holds
    # The stream has ended: after what the kernel buffered, the connection closes.
    deadline = time.monotonic() + 10
    with pytest.raises((ConnectionResetError, EOFError)):
        while time.monotonic() < deadline:
            if not connection.recv(1 << 20):
                raise EOFError
    connection.close()
    for path in (endpoint, "/api" + endpoint):
        status, headers, body = post(server, rpc("ping"), path)
        assert status == 410 and headers["access-control-allow-origin"] == "*"
        assert body["error"]["code"] == -32000 and body["error"]["message"].startswith(
            "This SSE stream was closed because its client did not read it: more than 4 MiB of answers were "
            "waiting. Open a new stream at /sse/<key>")
    assert post(server, rpc("ping"), endpoint.split("?")[0] + "?sessionId=unknown")[::2] == (404, UNKNOWN_SESSION)
    assert server.request("GET", "/health", timeout=5)[0] == 200


# --- API_LIMIT ----------------------------------------------------------------------------------------------

def schedule_call(channel_id: str) -> dict:
    return rpc("tools/call", {"name": "integrationSchedulePostTool", "arguments": {"socialPost": [{
        "integrationId": channel_id, "isPremium": False, "date": "2030-01-01T10:00:00Z", "shortLink": False,
        "type": "draft", "settings": [], "postsAndComments": [{"content": "<p>x</p>", "attachments": []}]}]}})


@pytest.mark.parametrize("switch, counted", [(None, True), ("0", False)])
def test_scheduling_counts_against_api_limit_unless_switched_off(start_server_with_fakes, switch, counted):
    server = start_server_with_fakes(env={"API_LIMIT": "2", **({"MCP_API_LIMIT": switch} if switch else {})})
    receiver = FakeWebhookReceiver()
    try:
        status, _, channel = server.request("POST", "/public/v1/integrations", {**JSON, "Authorization": server.key},
                                            json.dumps({"provider": "webhook",
                                                        "credentials": receiver.credentials()}).encode())
        channel_id = json.loads(channel)["id"]
        results = [post(server, schedule_call(channel_id))[2]["result"] for _ in range(3)]
    finally:
        receiver.close()
    assert all(result["isError"] is False for result in results[:2])
    if counted:
        assert results[2]["isError"] is True
        assert results[2]["content"][0]["text"].startswith(
            "ThrottlerException: Too Many Requests. This organization scheduled posts 2 times in the last hour "
            "(API_LIMIT); try again in ")
        # The REST route shares the same count.
        status, _, answer = server.request("POST", "/public/v1/posts", {**JSON, "Authorization": server.key}, b"{}")
        assert status == 429 and json.loads(answer)["message"].startswith("ThrottlerException: Too Many Requests")
    else:
        assert results[2]["isError"] is False


# --- tool arguments with ranges (issue 10) -------------------------------------------------------------------

def tool_call(server, name: str, arguments: dict) -> dict:
    status, _, answer = post(server, rpc("tools/call", {"name": name, "arguments": arguments}))
    assert status == 200, answer
    return answer["result"]


def test_a_notifications_page_beyond_its_range_is_a_tool_error(server):
    for page in (1000001, 10**30):
        result = tool_call(server, "notificationsListTool", {"page": page})
        assert result["isError"] is True, page
        assert "- page: Number must be less than or equal to 1000000" in result["content"][0]["text"]
    result = tool_call(server, "notificationsListTool", {"page": 1000000})
    assert result["structuredContent"]["output"] == {"notifications": [], "total": 0, "page": 1000000,
                                                     "hasMore": False}


def test_posts_list_tool_refuses_a_window_with_more_occurrences_than_an_answer_holds(server):
    channel = Database(server).channel("Sky", "bluesky")
    assert server.request("POST", "/public/v1/posts", {**JSON, "Authorization": server.key}, json.dumps({
        "type": "draft", "date": "2030-09-01T10:00:00Z", "shortLink": False, "tags": [], "inter": 1,
        "posts": [{"integration": {"id": channel}, "value": [{"content": "daily", "image": []}]}]}).encode())[0] == 201
    for end in ("2085-09-01T00:00:00", "9999-12-31T00:00:00"):
        result = tool_call(server, "postsListTool", {"startDate": "0001-01-01T00:00:00", "endDate": end})
        assert result["isError"] is True, str(result)[:300]
        text = result["content"][0]["text"]
        assert text.startswith("Between startDate 0001-01-01T00:00:00.000Z and endDate ") and text.endswith(
            "To see them all, ask for a shorter window: at most 9999 days at a time"), text
    listed = tool_call(server, "postsListTool", {"startDate": "2030-09-01T00:00:00", "endDate": "2030-09-03T23:00:00"})
    assert [item["publishDate"] for item in listed["structuredContent"]["output"]["posts"]] == [
        "2030-09-01T10:00:00", "2030-09-02T10:00:00", "2030-09-03T10:00:00"]


def test_the_schedule_tool_refuses_a_date_before_the_grace_period_and_stores_nothing(server):
    channel = Database(server).channel("Sky", "bluesky")
    post_call = schedule_call(channel)
    items = [dict(post_call["params"]["arguments"]["socialPost"][0], type="schedule", date=date)
             for date in ("2030-01-01T10:00:00Z", "2020-01-01T10:00:00Z")]
    result = tool_call(server, "integrationSchedulePostTool", {"socialPost": items})
    assert result["structuredContent"] == {"output": {"errors": (
        "Sky: date 2020-01-01T10:00:00.000Z is in the past, more than the 6.0 h grace period (PUBLISH_GRACE) ago, "
        'so the post would never be sent: give a later date, type "now" to publish at once, or type "draft" to keep '
        "it unscheduled, please fix it, and try integrationSchedulePostTool again.")}}
    status, _, answer = server.request("GET", "/public/v1/posts?startDate=2019-01-01&endDate=2031-01-01",
                                       {"Authorization": server.key})
    assert json.loads(answer) == {"posts": []}  # the first item was not stored either
    items[1]["type"] = "draft"  # a draft may keep a past date
    assert tool_call(server, "integrationSchedulePostTool", {"socialPost": items[1:]})["isError"] is False


# --- workers and shutdown --------------------------------------------------------------------------------

def test_with_two_workers_every_request_stands_alone(start_server):
    """Stateless Streamable HTTP: an initialize on one connection, the calls on others, whichever worker."""
    server = start_server(args=("--workers", "2"))
    initialize = rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "t", "version": "1"}})
    session = post(server, initialize)[1]["mcp-session-id"]
    for number in range(20):
        status, _, answer = post(server, rpc("tools/call", {"name": "integrationList", "arguments": {}}, number),
                                 headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
        assert status == 200 and answer["result"]["structuredContent"] == {"output": []}


def test_an_open_sse_stream_does_not_hold_up_a_shutdown(start_server):
    server = start_server(env={"RUSTIZ_SHUTDOWN_TIMEOUT": "30"})
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        connection.sendall(f"GET /sse/{server.key} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        stream = connection.makefile("rb")
        assert stream.readline() == b"HTTP/1.1 200 OK\r\n"
        started = time.monotonic()
        assert server.stop() == 0
        assert time.monotonic() - started < 5
        stream.read()  # the stream ended: the server closed it
        stream.close()


def test_head_on_the_sse_route_opens_no_stream(server):
    status, headers, body = server.request("HEAD", f"/sse/{server.key}")
    assert (status, headers["content-type"], body) == (200, "text/event-stream", b"")
