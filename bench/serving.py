"""The main table's measurements: cold starts (the C poller, launch to the first `ok` on /health) and the
load rows (GET /public/v1/integrations: RSS 2 s after launch, ab -k, wrk c32 and c64, RSS after the load)
for nginx's static ceiling, Python's floor (bench/floor_server.py), the uvicorn+starlette peer, both rustiz builds, the baseline builds when given,
and (unless BENCH_MAIN_ONLY=1) rustiz with --workers 2.

Rules: standard library only; every row is measured the same way, with the same request and the same load
generators, one server at a time. Run by bench.sh as `python3 -m bench.serving` (see bench/common.py):
records SU_VALUES, RSS0, RSS1, ABRPS, ABP99, RPS32, P99_32, RPS64, P99_64, ERRS and LABEL per row.
"""
import collections
import os
import re
import subprocess
import sys
import time

from bench.common import (Context, Ports, Server, check_quiet, get, last_error, log, measured_wrk, note, record,
                          squeezed, stop_on_sigterm, wait_health, wrk)
from bench.loadgen import LoadSummary, ab_summary

PATH = "/public/v1/integrations"
STARTUP_TIMEOUT = 30  # seconds a cold start may take
AB_CONNECTIONS, AB_TIMEOUT = 32, 120


def memory_of_session(session: int) -> str:
    """"RSS NPROC PSS" (KiB) over a session's processes, leaving out the timeout(1) wrapper."""
    return memory_of(["-s", str(session)])


def memory_of(selection: list) -> str:
    """"RSS NPROC PSS" (KiB) over the processes `ps SELECTION` lists, leaving out any timeout(1) wrapper."""
    listed = subprocess.run(["ps", "-o", "pid=,rss=,comm=", *selection], capture_output=True, text=True).stdout
    resident = count = proportional = 0
    for line in listed.splitlines():
        fields = line.split(None, 2)
        if len(fields) < 3 or fields[2].strip() == "timeout":
            continue
        count += 1
        resident += int(fields[1])
        try:
            with open(f"/proc/{fields[0]}/smaps_rollup") as rollup:
                proportional += next((int(row.split()[1]) for row in rollup if row.startswith("Pss:")), 0)
        except OSError:
            pass
    return f"{resident} {count} {proportional}"


def startup_series(context: Context, row: str, port: int, env: dict, command: list,
                   seconds: int = STARTUP_TIMEOUT) -> None:
    """STARTS cold starts of COMMAND, each timed by the poller (SECONDS at most); records SU_VALUES[ROW]."""
    log(f"start-up: {context.labels.get(row, row)} x{context.starts} on :{port}")
    check_quiet(f"{row} start-up")
    times = []
    with open(context.raw(f"{row}.startup.err"), "ab") as errors:
        for number in range(1, context.starts + 1):
            log_path = context.raw(f"{row}.startup-{number}.log")
            timed = subprocess.run(["timeout", str(seconds + 30), context.poller, str(port),
                                    str(seconds * 1000), log_path, *command], env={**env, "PORT": str(port)},
                                   stdout=subprocess.PIPE, stderr=errors)
            elapsed = timed.stdout.decode().strip()
            if elapsed:
                times.append(elapsed)
            else:
                errors.flush()
                note(f"{row}: cold start {number} failed ({last_error(context.raw(f'{row}.startup.err'))}; log {log_path})")
            time.sleep(0.3)
    if times:
        with open(context.raw(f"{row}.startup.txt"), "w") as written:
            written.write("".join(f"{elapsed}\n" for elapsed in times))
        record("SU_VALUES", row, " ".join(times))


def sanity(context: Context, row: str, port: int, check_401: bool, authorization: str) -> None:
    """The answer to AUTHORIZATION is `[]`; with CHECK_401, a wrong key gets 401 and "Invalid API key"."""
    body = get(port, PATH, {"Authorization": authorization})
    if "".join(body.split()) != "[]":
        note(f"{row}: GET {PATH} answered '{body}', expected []")
    if not check_401:
        return
    answer = subprocess.run(["curl", "-s", "-m", "5", "-o", context.raw(f"{row}.401.txt"), "-w", "%{http_code}",
                             "-H", "Authorization: Bearer nope", f"http://127.0.0.1:{port}{PATH}"],
                            capture_output=True, text=True)
    if answer.stdout != "401":
        note(f"{row}: a wrong key got HTTP {answer.stdout}, expected 401")
    with open(context.raw(f"{row}.401.txt"), encoding="utf-8", errors="replace") as written:
        refusal = written.read()
    if "Invalid API key" not in refusal:
        note(f"{row}: 401 body was '{refusal[:200]}'")


def measured_ab(context: Context, row: str, port: int, authorization: str, requests: int,
                seconds: int = AB_TIMEOUT) -> LoadSummary:
    """ab -k -c 32 -n REQUESTS (SECONDS at most), with its notes."""
    output_path = context.raw(f"{row}.ab.txt")
    with open(output_path, "wb") as output:
        status = subprocess.run(["timeout", str(seconds), "ab", "-q", "-k", "-c", str(AB_CONNECTIONS), "-n",
                                 str(requests), "-H", f"Authorization: {authorization}",
                                 f"http://127.0.0.1:{port}{PATH}"], stdout=output, stderr=subprocess.STDOUT).returncode
    with open(output_path, encoding="utf-8", errors="replace") as written:
        text = written.read()
    summary = ab_summary(text)
    if status != 0:
        note(f"{row}: ab exited {status}{' (timed out)' if status == 124 else ''} (see {output_path})")
    if summary.keep_alive_requests and int(summary.keep_alive_requests) < requests * 9 // 10:
        note(f"{row}: ab -k reused a connection for only {summary.keep_alive_requests} of {requests} requests "
             "(the server closes HTTP/1.0 keep-alive connections), so its ab row measures a new connection per request")
    if summary.errors:
        failed = [squeezed(line) for line in text.splitlines() if re.match(r"(Failed requests|Non-2xx responses)", line)]
        note(f"{row}: ab: {';'.join(failed)}")
    return summary


def note_log_errors(row: str, log_path: str) -> None:
    """The server's log lines that mention errors, the three most frequent, in a note."""
    with open(log_path, encoding="utf-8", errors="replace") as written:
        found = [line for line in written.read().splitlines() if re.search("traceback|exception|error", line, re.I)]
    if found:
        counted = sorted(((count, line) for line, count in collections.Counter(found).items()), reverse=True)[:3]
        note(f"{row}: server log mentions errors: " + "|".join(squeezed(f"{count:7d} {line}") for count, line in counted))


def load_row(context: Context, row: str, label: str, check_401: bool, port: int, command: list, env: dict) -> None:
    """One row of the main table: the server launched, its memory, the three loads, its memory again."""
    record("LABEL", row, label)
    check_quiet(row)
    log(f"load: {label} on :{port}")
    launched = time.monotonic()
    server = Server(command, context.raw(f"{row}.server.log"), context.server_ttl, env)
    try:
        if not wait_health(port, server, 30):
            note(f"{row}: not ready within 30 s: {server.log_tail(3)} ")
            return
        time.sleep(max(0.0, 2 - (time.monotonic() - launched)))  # RSS 2 s after launch
        record("RSS0", row, memory_of_session(server.process.pid))
        sanity(context, row, port, check_401, f"Bearer {context.key}")
        three_loads(context, row, port, f"Bearer {context.key}", context.ab_requests, 30, AB_TIMEOUT)
        record("RSS1", row, memory_of_session(server.process.pid))
        if get(port, "/health", timeout=3) != "ok":
            note(f"{row}: /health no longer answers after the load")
    finally:
        server.stop()
    note_log_errors(row, context.raw(f"{row}.server.log"))


def three_loads(context: Context, row: str, port: int, authorization: str, ab_requests: int, warm_up_seconds: int,
                ab_seconds: int) -> None:
    """A 1 s wrk warm-up, then ab -k, wrk c32 and wrk c64 on GET /public/v1/integrations; records their figures and
    ERRS[ROW], their errors summed."""
    wrk(["-c32", "-d1s", "-H", f"Authorization: {authorization}"], f"http://127.0.0.1:{port}{PATH}",
        context.raw(f"{row}.warmup.txt"), warm_up_seconds)
    loads = [("ABRPS", "ABP99", measured_ab(context, row, port, authorization, ab_requests, ab_seconds))]
    for connections, rate, p99 in ((32, "RPS32", "P99_32"), (64, "RPS64", "P99_64")):
        loads.append((rate, p99, measured_wrk(context, row, port, connections, [f"Authorization: {authorization}"])))
    for rate, p99, summary in loads:
        record(rate, row, summary.requests_per_second)
        record(p99, row, summary.p99_ms)
    record("ERRS", row, str(sum(summary.errors for _, _, summary in loads)))


class Rows:
    """What each row runs: the rustiz builds (this one's and the baseline's), the peer and nginx."""

    def __init__(self, context: Context, environ: dict):
        self.context = context
        self.config = environ["BENCH_CONFIG"]
        self.peer_python = environ["BENCH_PEER_PYTHON"]
        self.nginx = environ["BENCH_NGINX"]
        base_pairs = [line.split("=", 1) for line in environ.get("BENCH_BASE_ENV", "").splitlines() if "=" in line]
        self.base_env = dict(base_pairs) or context.rustiz_env
        self.builds = [("rz_std", context.pyz, True, context.rustiz_env)]
        if context.pyz_fast:
            self.builds.append(("rz_fast", context.pyz_fast, False, context.rustiz_env))
        if environ.get("BENCH_BASELINE_PYZ"):
            self.builds.append(("base_std", environ["BENCH_BASELINE_PYZ"], True, self.base_env))
        if environ.get("BENCH_BASELINE_FAST_PYZ"):
            self.builds.append(("base_fast", environ["BENCH_BASELINE_FAST_PYZ"], False, self.base_env))

    def rustiz(self, row: str, port: int, *arguments: str) -> tuple:
        """(command, env) of one rustiz build's row (ROW without its _w2), on PORT."""
        _, pyz, stdlib, settings = next(build for build in self.builds if build[0] == row)
        env = {**os.environ, **settings, "PORT": str(port), **({"RUSTIZ_NO_SPEEDUPS": "1"} if stdlib else {})}
        return [self.context.rustiz_python, pyz, "serve", *arguments], env

    def uvicorn(self, port: int) -> tuple:
        return ([self.peer_python, "-m", "uvicorn", "peer_app:app", "--app-dir", self.context.files, "--host",
                 "127.0.0.1", "--port", str(port), "--loop", "uvloop", "--http", "httptools", "--no-access-log",
                 "--log-level", "warning"], {**os.environ, "RUSTIZ_CONFIG": self.config})

    def floor(self, port: int) -> tuple:
        """bench/floor_server.py on rustiz's interpreter: what Python's asyncio alone answers."""
        return [self.context.rustiz_python, os.path.join(self.context.files, "floor_server.py"), str(port)], dict(os.environ)

    def nginx_ceiling(self, port: int) -> tuple:
        """nginx with bench/nginx.conf filled in for this run and PORT."""
        folder = os.path.join(self.context.bench_dir, "nginx")
        os.makedirs(os.path.join(folder, "tmp"), exist_ok=True)
        with open(os.path.join(self.context.files, "nginx.conf"), encoding="utf-8") as template:
            config = template.read().replace("@BENCH@", self.context.bench_dir).replace("@PORT@", str(port))
        with open(os.path.join(folder, "nginx.conf"), "w", encoding="utf-8") as written:
            written.write(config)
        return [self.nginx, "-p", folder, "-c", os.path.join(folder, "nginx.conf"), "-e",
                os.path.join(folder, "error.log")], dict(os.environ)


def main() -> int:
    stop_on_sigterm()
    context = Context.from_environment()
    rows, ports = Rows(context, os.environ), Ports(context.first_port)
    rustiz_rows = [build[0] for build in rows.builds]
    for row in rustiz_rows:  # start-up first (quiet machine), the same initialised folder for every server
        port = ports.free()
        command, env = rows.rustiz(row, port)
        startup_series(context, row, port, env, command)
    port = ports.free()
    command, env = rows.uvicorn(port)
    startup_series(context, "uvicorn", port, env, command)
    port = ports.free()
    load_row(context, "nginx", "nginx, static [] (1 worker: ceiling)", False, port, *rows.nginx_ceiling(port))
    port = ports.free()
    load_row(context, "floor", "asyncio Protocol, fixed answer (Python's floor)", False, port, *rows.floor(port))
    port = ports.free()
    load_row(context, "uvicorn", context.labels["uvicorn"], True, port, *rows.uvicorn(port))
    for row in rustiz_rows:
        port = ports.free()
        load_row(context, row, context.labels[row], True, port, *rows.rustiz(row, port))
    if os.environ.get("BENCH_MAIN_ONLY") != "1":
        for row, label in (("rz_std", "rustiz, stdlib, --workers 2"), ("rz_fast", "rustiz, uvloop+orjson, --workers 2")):
            if row in rustiz_rows:
                port = ports.free()
                load_row(context, f"{row}_w2", label, True, port, *rows.rustiz(row, port, "--workers", "2"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
