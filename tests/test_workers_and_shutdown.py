"""Graceful shutdown on SIGTERM/SIGINT, and --workers N: processes, shared port, stopping them all."""
from __future__ import annotations

import os
import re
import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest


def children_of(pid: int) -> set:
    """Pids whose parent is `pid`, from /proc."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:  # fields: state, ppid, ...
            found.add(int(entry))
    return found


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def refuses_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except ConnectionRefusedError:
        return True


def read_until_closed(connection: socket.socket) -> bytes:
    received = b""
    while True:
        chunk = connection.recv(65536)
        if not chunk:
            return received
        received += chunk


@pytest.fixture
def workers_server(start_server):
    """A server with --workers 2; its workers are killed on teardown whatever happened to the parent."""
    started = []

    def start(env: dict | None = None):
        server = start_server(env=env, args=("--workers", "2"))
        started.append((server, children_of(server.process.pid)))
        return server

    yield start
    for server, workers in started:
        workers |= children_of(server.process.pid) if server.process.poll() is None else set()
        server.stop()
        for pid in workers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_on_an_idle_server_exits_0_quickly(server, sig):
    assert server.request("GET", "/health")[0] == 200
    started = time.monotonic()
    assert server.stop(sig) == 0
    assert time.monotonic() - started < 3
    assert "Traceback" not in "\n".join(server.stderr_lines)
    assert refuses_connections(server.port)


def read_one_response(connection: socket.socket) -> bytes:
    """One response with a Content-Length body, read off a kept-alive connection."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = connection.recv(65536)
        assert chunk, received
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    length = int(re.search(rb"\r\ncontent-length: *(\d+)", head.lower()).group(1))
    while len(body) < length:
        chunk = connection.recv(65536)
        assert chunk, received
        body += chunk
    return head + b"\r\n\r\n" + body


def finish_in_flight_request_across_a_signal(server, sig) -> None:
    """Half a request, the signal, no new connections accepted, the rest of the request, its full answer, exit 0."""
    request_head = (b"GET /public/v1/is-connected HTTP/1.1\r\nHost: rustiz\r\nAuthorization: " + server.key.encode()
                    + b"\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\n")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        connection.sendall(request_head + b"0123456789")  # a first request: the connection is being served
        assert read_one_response(connection).startswith(b"HTTP/1.1 200 ")
        connection.sendall(request_head + b"12345")
        time.sleep(0.3)  # the server has read the second request's headers and half its body
        server.process.send_signal(sig)

        deadline = time.monotonic() + 5
        while not refuses_connections(server.port):
            assert time.monotonic() < deadline, "still accepting new connections after the signal"
            time.sleep(0.05)
        assert server.process.poll() is None, "exited with a request in flight"

        connection.sendall(b"67890")
        response = read_until_closed(connection)

    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), response
    assert body == b'{"connected":true}'
    assert b"\r\nconnection: close" in head.lower()
    assert server.process.wait(timeout=5) == 0
    server.reader.join(5)
    assert "Traceback" not in "\n".join(server.stderr_lines)
    assert refuses_connections(server.port)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_accepting_but_finishes_a_request_in_flight_then_exits_0(server, sig):
    finish_in_flight_request_across_a_signal(server, sig)


def test_sigterm_with_two_workers_stops_accepting_but_finishes_a_request_in_flight_then_exits_0(workers_server):
    finish_in_flight_request_across_a_signal(workers_server(), signal.SIGTERM)


def test_two_workers_are_child_processes_that_share_the_port_and_serve_many_requests(workers_server):
    server = workers_server(env={"RUSTIZ_ACCESS_LOG": "1"})
    workers = children_of(server.process.pid)
    assert len(workers) == 2, workers
    headers = {"Authorization": server.key}

    def call(_: int) -> tuple:
        status, _, body = server.request("GET", "/public/v1/is-connected", headers)
        return status, body

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(call, range(120)))
    assert results == [(200, b'{"connected":true}')] * 120

    # Both workers answered: every access-log line names its process.
    pattern = re.compile(r"rustiz\[(\d+)\]: 127\.0\.0\.1 \"GET /public/v1/is-connected")
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        answered = {int(match.group(1)) for line in server.stderr_lines if (match := pattern.search(line))}
        if answered == workers:
            break
        time.sleep(0.05)
    assert answered == workers


def test_sigterm_stops_every_worker_and_exits_0(workers_server):
    server = workers_server()
    workers = children_of(server.process.pid)
    assert len(workers) == 2
    assert server.request("GET", "/health")[0] == 200

    started = time.monotonic()
    assert server.stop(signal.SIGTERM) == 0
    assert time.monotonic() - started < 5
    assert not any(alive(pid) for pid in workers)
    assert refuses_connections(server.port)
    assert "Traceback" not in "\n".join(server.stderr_lines)


def test_a_killed_worker_is_replaced(workers_server):
    server = workers_server()
    workers = children_of(server.process.pid)
    victim = min(workers)
    os.kill(victim, signal.SIGKILL)

    deadline = time.monotonic() + 5
    while True:
        now = children_of(server.process.pid)
        if len(now) == 2 and victim not in now:
            break
        assert time.monotonic() < deadline, now
        time.sleep(0.05)
    for _ in range(20):
        assert server.request("GET", "/health")[0] == 200
    assert server.stop() == 0
