"""What one keep-alive `GET /public/v1/integrations` with a valid key costs rustiz's own Python, without sockets:
the request bytes are fed to HttpConnection.data_received (parser, admission, key, route, handler, SQLite,
JSON, response bytes, tally) on 32 connections, 8 requests per turn of a pretend event loop, and the answers
go to a transport that drops them. What the kernel and the event loop cost is left out on purpose: this is the
part a change to rustiz's code can move, and `--instructions` makes it a figure that does not depend on what
else the machine is doing.

Usage (standard library only; run from the project root):
    python3 bench/request_cost.py [SOURCE]                 microseconds per request (best of 7 runs of 20,000)
    python3 bench/request_cost.py --instructions [SOURCE]  instructions per request, counted by valgrind's
                                                           callgrind: (run of 6,000 - run of 2,000) / 4,000
SOURCE is a built .pyz or a folder holding rustiz.py (default: dist/rustiz.pyz). Not part of bench.sh's run:
docs/benchmarks.md ("Where a request's time goes") says what it found.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

REQUESTS_PER_TURN = 8
CONNECTIONS = 32


class DroppingTransport:
    """What HttpConnection asks of a transport, answering nothing."""
    def write(self, data: bytes) -> None:
        pass

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 50000) if name == "peername" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def measure(source: str, requests: int, runs: int) -> float:
    """Seconds per request, the best of `runs` runs of `requests` (after a warm-up)."""
    sys.path.insert(0, source)
    import rustiz
    folder = tempfile.mkdtemp(prefix="rustiz-request-cost-")
    config_path = os.path.join(folder, "config.env")
    rustiz.initialize(config_path, False)
    config = rustiz.load_config({"RUSTIZ_CONFIG": config_path, "REQUEST_LIMIT": "0", "API_LIMIT": "0"})
    with open(config_path, encoding="utf-8") as config_file:
        key = re.search(r"^RUSTIZ_API_KEY=(\S+)", config_file.read(), re.M).group(1)
    store = rustiz.Store(config.database)
    turn_ends: list = []  # what the server does at the end of a turn of its event loop
    store.share_reads_per_loop_turn(turn_ends.append)
    app = rustiz.App(config, store)
    try:
        state = rustiz.ServerState(config, app, None,
                                   lambda callback, *arguments: turn_ends.append(lambda: callback(*arguments)))
    except TypeError:  # a build from before answers were held for the end of the turn (2026-12-06)
        state = rustiz.ServerState(config, app)
    connections = []
    for _ in range(CONNECTIONS):
        connection = rustiz.HttpConnection(state)
        connection.connection_made(DroppingTransport())
        connections.append(connection)
    request = b"GET /public/v1/integrations HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n" % key.encode()

    def run(count: int) -> None:
        for turn in range(count // REQUESTS_PER_TURN):
            for connection in connections[turn % 4 * REQUESTS_PER_TURN:][:REQUESTS_PER_TURN]:
                connection.data_received(request)
            while turn_ends:
                turn_ends.pop(0)()

    run(2000)
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        run(requests)
        best = min(best, (time.perf_counter() - started) / requests)
    return best


def instructions(source: str) -> int:
    """Instructions per request: two runs under callgrind, so that start-up cancels out."""
    counts = []
    for requests in (2000, 6000):
        with tempfile.NamedTemporaryFile(suffix=".callgrind") as output:
            finished = subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={output.name}", sys.executable,
                 os.path.abspath(__file__), "--one-run", str(requests), source],
                capture_output=True, text=True, timeout=600)
        found = re.search(r"Collected : (\d+)", finished.stderr)
        if found is None:
            raise SystemExit(f"callgrind gave no count: {finished.stderr[-500:]}")
        counts.append(int(found.group(1)))
    return (counts[1] - counts[0]) // 4000


def main(arguments: list) -> int:
    if arguments[:1] == ["--one-run"]:  # (one run under callgrind: see instructions)
        measure(arguments[2], int(arguments[1]), 1)
        return 0
    parser = argparse.ArgumentParser(description="What one keyed GET costs rustiz's own Python, without sockets.")
    parser.add_argument("--instructions", action="store_true", help="count instructions with valgrind's callgrind")
    parser.add_argument("source", nargs="?", default="dist/rustiz.pyz", help="a built .pyz or a folder with rustiz.py")
    options = parser.parse_args(arguments)
    source = os.path.abspath(options.source)
    if options.instructions:
        print(f"{instructions(source)} instructions per request ({source})")
    else:
        print(f"{measure(source, 20000, 7) * 1e6:.2f} µs per request ({source})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
