"""What every measuring module shares: the run's context from bench.sh, logging and notes, free ports,
servers in sessions of their own, the quiet-machine wait, and wrk.

Rules: standard library only. A module runs as `python3 -m bench.NAME` under bench.sh, which hands it the
run's context in BENCH_* variables (Context.from_environment). It prints its results on stdout, one per
line: `ARRAY<TAB>KEY<TAB>VALUE` (what bench/report.py reads) or `note<TAB>TEXT` (a note of the run); it logs
on stderr as bench.sh does. Every server it starts is stopped before it returns, on SIGTERM too.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from typing import NamedTuple, Optional

from bench.loadgen import LoadSummary, wrk_summary


class Context(NamedTuple):
    """The run as bench.sh set it up: its folders, interpreters, builds, API key and load length."""
    bench_dir: str  # .bench
    results: str  # .bench/results: raw outputs
    files: str  # bench/: the programs
    rustiz_python: str
    pyz: str
    pyz_fast: Optional[str]  # None when the --with-speedups build is missing
    key: str
    duration: int  # seconds of each measured wrk run
    first_port: int
    server_ttl: int
    rustiz_env: dict  # the environment every rustiz server gets (config, limits off...)
    labels: dict  # row id -> its label in the report
    poller: str  # .bench/poller, built from bench/poller.c
    starts: int  # cold starts per series
    ab_requests: int  # ab -n

    @classmethod
    def from_environment(cls, environ: Optional[dict] = None) -> "Context":
        environ = os.environ if environ is None else environ
        pairs = [line.split("=", 1) for line in environ.get("BENCH_RZ_ENV", "").splitlines() if "=" in line]
        labels = [line.split("\t", 1) for line in environ.get("BENCH_LABELS", "").splitlines() if "\t" in line]
        return cls(environ["BENCH_DIR"], environ["BENCH_RESULTS"], os.path.dirname(os.path.abspath(__file__)),
                   environ["BENCH_RZPY"], environ["BENCH_PYZ"],
                   environ["BENCH_PYZ_FAST"] if environ.get("BENCH_FAST_OK") == "1" else None,
                   environ["BENCH_KEY"], int(environ["BENCH_DUR"]), int(environ.get("BENCH_NEXT_PORT", "18080")),
                   int(environ.get("BENCH_SERVER_TTL", "300")), dict(pairs), dict(labels),
                   environ.get("BENCH_POLLER", ""), int(environ.get("BENCH_STARTS", "7")),
                   int(environ.get("BENCH_AB_N", "40000")))

    @property
    def root(self) -> str:
        """The checkout bench.sh runs in (bench/'s parent)."""
        return os.path.dirname(self.files)

    def raw(self, name: str) -> str:
        """The path of a raw output in .bench/results."""
        return os.path.join(self.results, name)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def note(message: str) -> None:
    """A note of the run (bench.sh prints them under the report)."""
    print(f"note\t{message}", flush=True)
    log(f"note: {message}")


def record(array: str, key: str, value: str) -> None:
    """One measurement, for bench/report.py."""
    if value != "":
        print(f"{array}\t{key}\t{value}", flush=True)


def port_busy(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class Ports:
    """Free ports from the first one bench.sh had not used yet, each handed out once."""

    def __init__(self, first: int):
        self.next = first

    def free(self) -> int:
        while port_busy(self.next):
            self.next += 1
        self.next += 1
        return self.next - 1


class Server:
    """A command in its own session, capped by timeout(1), its output in a log file; stop() ends the session."""

    def __init__(self, command: list, log_path: str, ttl: int, env: Optional[dict] = None):
        with open(log_path, "wb") as output:
            self.process = subprocess.Popen(["timeout", "-k", "5", str(ttl), *command], stdout=output,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True, env=env)
        self.log_path = log_path

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        self._signal(signal.SIGKILL)
        self.process.wait()

    def _signal(self, number: int) -> None:
        try:
            os.killpg(self.process.pid, number)
        except ProcessLookupError:
            pass

    def log_tail(self, lines: int) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as written:
            return " ".join(written.read().splitlines()[-lines:])


def get(port: int, path: str, headers: Optional[dict] = None, body: Optional[bytes] = None,
        timeout: float = 5) -> str:
    """The body of one request to 127.0.0.1:PORT (POST when BODY is given), or "" when it fails."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", body, headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.read().decode("utf-8", "replace")
    except OSError:
        return ""


def wait_health(port: int, server: Server, seconds: float) -> bool:
    """GET /health every 20 ms until it answers `ok`; False when the server exits or SECONDS pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() <= deadline:
        if get(port, "/health", timeout=1) == "ok":
            return True
        if not server.running():
            return False
        time.sleep(0.02)
    return False


def _cpu_times() -> tuple:
    with open("/proc/stat") as stat:
        fields = [int(number) for number in stat.readline().split()[1:9]]
    return fields[3] + fields[4], sum(fields)  # (idle + iowait, all)


def cpu_idle_percent() -> int:
    """The share of both cores idle over 0.5 s."""
    idle_before, total_before = _cpu_times()
    time.sleep(0.5)
    idle_after, total_after = _cpu_times()
    total = total_after - total_before
    return round(100 * (idle_after - idle_before) / total) if total > 0 else 100


def check_quiet(what: str) -> None:
    """Wait up to BENCH_QUIET_WAIT s (15) for an idle machine; note it when it stays busy."""
    deadline = time.monotonic() + float(os.environ.get("BENCH_QUIET_WAIT", "15"))
    while True:
        idle = cpu_idle_percent()
        if idle >= 85:
            return
        if time.monotonic() >= deadline:
            break
    note(f"{what}: other work kept the CPU busy before it ran ({idle}% idle over 0.5 s): its numbers may be low")


def wrk(arguments: list, url: str, output_path: str, timeout: int) -> int:
    """wrk -t1 ARGUMENTS URL, its output in OUTPUT_PATH; its exit status."""
    with open(output_path, "wb") as output:
        try:
            return subprocess.run(["timeout", str(timeout), "wrk", "-t1", *arguments, url], stdout=output,
                                  stderr=subprocess.STDOUT).returncode
        except OSError:
            return 127


def wrk_errors_text(output_path: str) -> str:
    """wrk's error lines, squeezed and joined with ";" (what the notes quote)."""
    with open(output_path, encoding="utf-8", errors="replace") as written:
        found = [line for line in written.read().splitlines() if "Non-2xx" in line or "Socket errors" in line]
    return ";".join(squeezed(line) for line in found)


def squeezed(line: str) -> str:
    """Runs of spaces as one, as `tr -s ' '` leaves them."""
    while "  " in line:
        line = line.replace("  ", " ")
    return line


def measured_wrk(context: Context, row: str, port: int, connections: int, headers: list) -> LoadSummary:
    """bench.sh's run_wrk: the measured wrk run on GET /public/v1/integrations, with its notes."""
    output_path = context.raw(f"{row}.wrk-c{connections}.txt")
    arguments = [f"-c{connections}", f"-d{context.duration}s", "--latency"] + [part for header in headers
                                                                               for part in ("-H", header)]
    status = wrk(arguments, f"http://127.0.0.1:{port}/public/v1/integrations", output_path, context.duration + 20)
    with open(output_path, encoding="utf-8", errors="replace") as written:
        summary = wrk_summary(written.read())
    if status != 0:
        note(f"{row}: wrk -c{connections} exited {status} (see {output_path})")
    if summary.errors:
        note(f"{row}: wrk -c{connections}: {wrk_errors_text(output_path)}")
    return summary


def last_line(command: list, seconds: int, error_path: str) -> str:
    """The last line COMMAND prints (run under timeout(1), its stderr into ERROR_PATH), or "" when it prints none."""
    with open(error_path, "wb") as errors:
        try:
            finished = subprocess.run(["timeout", str(seconds), *command], stdout=subprocess.PIPE, stderr=errors)
        except OSError as error:
            errors.write(str(error).encode())
            return ""
    lines = finished.stdout.decode("utf-8", "replace").splitlines()
    return lines[-1] if lines else ""


def read_text(path: str) -> str:
    """A file's text ("" when it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as written:
            return written.read()
    except OSError:
        return ""


def last_error(error_path: str) -> str:
    """The last line of a program's stderr or log (what a note quotes when it failed)."""
    return (read_text(error_path).splitlines() or [""])[-1]


def api_key(config_path: str) -> str:
    """RUSTIZ_API_KEY of a config.env ("" when it has none)."""
    found = re.findall(r"^RUSTIZ_API_KEY=(.*)$", read_text(config_path), re.M)
    return found[0].strip("\"' \r") if found else ""


def fresh_folder(path: str) -> str:
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def stop_on_sigterm() -> None:
    """SIGTERM (bench.sh interrupted) unwinds like an exception, so that every `finally` stops its servers."""
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
