"""API keys, API_LIMIT (Postiz's per-organization posts throttle) and REQUEST_LIMIT (per client address)."""
from __future__ import annotations

import json
import re
import socket
import time

import pytest

from support import Database, auth

THROTTLED = b'{"statusCode":429,"message":"ThrottlerException: Too Many Requests"}'


def post_posts(server, key: str | None, prefix: str = "/public/v1"):
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = key
    return server.request("POST", prefix + "/posts", headers, b"{}")


# --- authentication ---------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["{key}", "Bearer {key}"], ids=["raw-key", "bearer-key"])
def test_authorization_header_accepts_the_raw_key_and_a_bearer_key(server, form):
    status, headers, body = server.request("GET", "/public/v1/is-connected",
                                           auth(form.format(key=server.key)))
    assert (status, body) == (200, b'{"connected":true}')
    assert headers["content-type"].startswith("application/json")


def test_no_authorization_header_is_401_no_api_key_found(server):
    for path in ("/public/v1/is-connected", "/public/v1/integrations", "/api/public/v1/integrations"):
        status, headers, body = server.request("GET", path)
        assert (status, body) == (401, b'{"msg":"No API Key found"}'), path
        assert headers["content-type"].startswith("application/json")
        assert json.loads(body) == {"msg": "No API Key found"}


@pytest.mark.parametrize("wrong", ["0" * 64, "not-a-key", "Bearer " + "f" * 64])
def test_a_wrong_key_is_401_invalid_api_key(server, wrong):
    status, headers, body = server.request("GET", "/public/v1/is-connected", auth(wrong))
    assert (status, body) == (401, b'{"msg":"Invalid API key"}')
    assert headers["content-type"].startswith("application/json")


def test_a_key_differing_only_in_case_is_rejected(server):
    status, _, body = server.request("GET", "/public/v1/is-connected", auth(server.key.upper()))
    assert (status, body) == (401, b'{"msg":"Invalid API key"}')


def test_both_public_prefixes_are_served_with_the_same_answers(server):
    for prefix in ("/public/v1", "/api/public/v1"):
        assert server.request("GET", prefix + "/is-connected", auth(server.key))[::2] == (200, b'{"connected":true}')
        assert server.request("GET", prefix + "/integrations", auth(server.key))[::2] == (200, b"[]")
        assert server.request("GET", prefix + "/is-connected")[::2] == (401, b'{"msg":"No API Key found"}')


# --- API_LIMIT ------------------------------------------------------------------------------------------


def assert_counted(response, limit: int, remaining: int) -> None:
    status, headers, _ = response
    assert status == 400, response  # an empty body is invalid, and counted all the same (as Postiz)
    assert headers["x-ratelimit-limit"] == str(limit)
    assert headers["x-ratelimit-remaining"] == str(remaining)
    assert 0 < int(headers["x-ratelimit-reset"]) <= 3600


def assert_throttled(response) -> None:
    status, headers, body = response
    assert (status, body) == (429, THROTTLED), response
    assert headers["content-type"].startswith("application/json")
    assert 0 < int(headers["retry-after"]) <= 3600


def test_api_limit_counts_posts_per_organization_with_postiz_headers_then_429(start_server):
    server = start_server(env={"API_LIMIT": "3"})
    key = server.key

    assert_counted(post_posts(server, key), 3, 2)
    assert_counted(post_posts(server, "Bearer " + key, "/api/public/v1"), 3, 1)  # both prefixes, one count
    assert_counted(post_posts(server, key), 3, 0)
    assert_throttled(post_posts(server, key))
    assert_throttled(post_posts(server, key, "/api/public/v1"))
    # Only POSTs to posts are counted: the rest of the API still answers, without the headers.
    status, headers, _ = server.request("GET", "/public/v1/is-connected", auth(key))
    assert status == 200 and "x-ratelimit-limit" not in headers

    _, other_key = Database(server).organization()  # another organization has its own budget
    assert_counted(post_posts(server, other_key), 3, 2)


def test_api_limit_reset_header_counts_down_the_fixed_hour_window(start_server):
    server = start_server(env={"API_LIMIT": "5"})
    first = int(post_posts(server, server.key)[1]["x-ratelimit-reset"])
    time.sleep(1.2)
    second = int(post_posts(server, server.key)[1]["x-ratelimit-reset"])
    assert 3598 <= first <= 3600
    assert second < first  # a fixed window: the second call does not restart it


def test_api_limit_count_survives_a_restart(start_server):
    first = start_server(env={"API_LIMIT": "3"})
    assert_counted(post_posts(first, first.key), 3, 2)
    assert_counted(post_posts(first, first.key), 3, 1)
    assert first.stop() == 0

    second = start_server(env={"API_LIMIT": "3"}, data_dir=first.data_dir)
    assert_counted(post_posts(second, second.key), 3, 0)
    assert_throttled(post_posts(second, second.key))


def test_api_limit_does_not_count_unauthenticated_posts(start_server):
    server = start_server(env={"API_LIMIT": "1"})
    for key in (None, "0" * 64, "Bearer nope"):
        status, headers, body = post_posts(server, key)
        assert status == 401, (key, status, body)
        assert json.loads(body) == {"msg": "No API Key found" if key is None else "Invalid API key"}
        assert "x-ratelimit-remaining" not in headers
    assert_counted(post_posts(server, server.key), 1, 0)
    assert_throttled(post_posts(server, server.key))


def test_api_limit_zero_turns_the_posts_throttle_off(start_server):
    server = start_server(env={"API_LIMIT": "0"})
    for _ in range(5):
        status, headers, body = post_posts(server, server.key)
        assert status == 400 and json.loads(body)["message"] == "All posts must have an integration id"
        assert not any(name.startswith("x-ratelimit") for name in headers), headers
        assert "retry-after" not in headers


# --- REQUEST_LIMIT --------------------------------------------------------------------------------------


def test_request_limit_refuses_the_sixth_request_in_a_minute_on_any_route_but_health(start_server):
    server = start_server(env={"REQUEST_LIMIT": "5", "API_LIMIT": "0"})
    key = server.key
    for _ in range(3):
        assert server.request("GET", "/health")[0] == 200  # exempt: not counted
    answers = [
        server.request("GET", "/public/v1/is-connected", auth(key))[0],
        server.request("GET", "/api/public/v1/integrations", auth(key))[0],
        server.request("GET", "/public/v1/is-connected")[0],  # unauthenticated calls count too
        server.request("GET", "/no/such/route")[0],
        post_posts(server, key)[0],
    ]
    assert answers == [200, 200, 401, 404, 400]

    status, headers, body = server.request("GET", "/public/v1/is-connected", auth(key))
    assert (status, body) == (429, THROTTLED)
    assert 0 < int(headers["retry-after"]) <= 60
    assert server.request("GET", "/no/such/route")[::2] == (429, THROTTLED)
    assert server.request("GET", "/health")[::2] == (200, b"ok")  # still exempt when over the limit


def test_request_limit_counts_pipelined_requests_of_one_read_exactly_and_the_count_is_stored(start_server):
    """Counts are kept in memory for a turn of the event loop and written at its end: eight requests in one
    send get five answers and a 429 (which ends the connection), and the next connection finds the count."""
    server = start_server(env={"REQUEST_LIMIT": "5", "API_LIMIT": "0"})
    request = f"GET /public/v1/is-connected HTTP/1.1\r\nHost: x\r\nAuthorization: {server.key}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        connection.sendall(request * 8)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    assert re.findall(rb"HTTP/1.1 (\d+)", received) == [b"200"] * 5 + [b"429"]
    assert server.request("GET", "/public/v1/is-connected", auth(server.key))[0] == 429
    with Database(server).connect() as db:
        assert db.execute("SELECT hits FROM rate_limit WHERE key = 'client:127.0.0.1'").fetchall() == [(6,)]


def test_request_limit_zero_turns_it_off(start_server):
    server = start_server(env={"REQUEST_LIMIT": "0"})
    for _ in range(30):
        assert server.request("GET", "/public/v1/is-connected", auth(server.key))[0] == 200


def test_forged_x_forwarded_for_shares_the_peers_budget_without_trusted_proxies(start_server):
    server = start_server(env={"REQUEST_LIMIT": "3"})
    statuses = [server.request("GET", "/public/v1/is-connected",
                               {**auth(server.key), "X-Forwarded-For": f"203.0.113.{n}"})[0] for n in range(5)]
    assert statuses == [200, 200, 200, 429, 429]


def test_x_forwarded_for_from_a_trusted_proxy_gives_each_client_its_own_budget(start_server):
    server = start_server(env={"REQUEST_LIMIT": "2", "RUSTIZ_TRUSTED_PROXIES": "127.0.0.1"})

    def call(forwarded_for: str | None) -> int:
        headers = auth(server.key)
        if forwarded_for is not None:
            headers["X-Forwarded-For"] = forwarded_for
        return server.request("GET", "/public/v1/is-connected", headers)[0]

    assert [call("198.51.100.7") for _ in range(3)] == [200, 200, 429]
    assert [call("198.51.100.8") for _ in range(3)] == [200, 200, 429]
    # The nearest untrusted hop counts: a client cannot pick a fresh budget by prepending addresses.
    assert call("10.9.9.9, 198.51.100.7") == 429
    # The proxy's own requests (no header) have their own budget too.
    assert [call(None) for _ in range(3)] == [200, 200, 429]


def pids_in_access_log(server, request_line: str) -> set:
    """The worker pids whose access-log lines show `request_line` (waiting briefly for the log to arrive)."""
    pattern = re.compile(r"rustiz\[(\d+)\]: 127\.0\.0\.1 \"" + re.escape(request_line))
    deadline = time.monotonic() + 3
    while True:
        pids = {match.group(1) for line in server.stderr_lines if (match := pattern.search(line))}
        if len(pids) == 2 or time.monotonic() > deadline:
            return pids
        time.sleep(0.05)


def test_api_limit_is_shared_by_all_workers(start_server):
    server = start_server(env={"API_LIMIT": "10", "RUSTIZ_ACCESS_LOG": "1"}, args=("--workers", "2"))
    try:
        for remaining in range(9, -1, -1):  # each call on a new connection, to either worker
            assert_counted(post_posts(server, server.key), 10, remaining)
        for _ in range(4):
            assert_throttled(post_posts(server, server.key))
        assert len(pids_in_access_log(server, "POST /public/v1/posts")) == 2, server.stderr_lines
    finally:
        assert server.stop() == 0


def test_request_limit_is_shared_by_all_workers(start_server):
    server = start_server(env={"REQUEST_LIMIT": "20", "RUSTIZ_ACCESS_LOG": "1"}, args=("--workers", "2"))
    try:
        statuses = [server.request("GET", "/public/v1/is-connected", auth(server.key))[0] for _ in range(26)]
        assert statuses == [200] * 20 + [429] * 6
        # Both workers answered some of them (each connection is new, SO_REUSEPORT spreads them).
        assert len(pids_in_access_log(server, "GET /public/v1/is-connected")) == 2, server.stderr_lines
    finally:
        assert server.stop() == 0


def test_the_access_log_never_writes_a_key_or_a_token_that_stands_in_an_address(start_server):
    server = start_server(env={"RUSTIZ_ACCESS_LOG": "1"})
    for target in (f"/mcp/{server.key}", f"/api/message/{server.key}", "/p/secret-review-token/approve",
                   "/auth/invite?token=secret-invite-token", "/auth/oidc/callback?code=secret-code&state=secret-state"):
        server.request("GET", target)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and sum('"GET /' in line for line in server.stderr_lines) < 5:
        time.sleep(0.05)
    lines = [line for line in server.stderr_lines if '"GET /' in line]
    assert len(lines) == 5, server.stderr_lines
    assert not [line for line in lines if server.key in line or "secret" in line]
    assert any('"GET /mcp/*** HTTP/1.1"' in line for line in lines)
    assert any("/auth/oidc/callback?code=***&state=*** " in line for line in lines)
