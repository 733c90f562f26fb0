"""GET /metrics (Prometheus text format 0.0.4) and GET /health?verbose=1: what a monitoring system reads.

Rules:
- Counting costs the request path one dictionary look-up and three list updates (the core's RequestTally);
  everything else is counted where it happens, off that path: publish attempts and failures (scheduler),
  token refreshes (connect.TokenKeeper), outbound calls and their errors (http_client), scheduler lag (the
  scheduler, when it claims a post). Counts that the database already knows (posts by state, the queue,
  channels to reconnect) are read from it when /metrics is asked, so they hold for every process at once.
- Several workers (`--workers N`): each worker writes its counters every SHARE_SECONDS into a small JSON file of
  the data folder (metrics/<pid>.json, replaced atomically), and the worker that answers /metrics adds them to
  its own live counters; files of processes that are gone are removed. Counters restart from zero when a
  process does, as Prometheus counters may.
- Only loopback clients (not through a reverse proxy: a request carrying X-Forwarded-For or Forwarded is not
  one) or a client presenting `Authorization: Bearer <RUSTIZ_METRICS_TOKEN>` are answered; others get 403.
"""
from __future__ import annotations

import collections
import contextlib
import json
import os
import threading
import time
from typing import Any, Optional

from rustiz import (
    REQUEST_TALLY, VERSION, App, Config, Request, RequestTally, Response, compare_digest, iso_at, json_response, log,
    parse_iso_instant, route_options,
)
from .api_docs import documented
from .storage import scheduling as schedule_store
from .storage import operations as operation_store

SHARE_SECONDS = 5.0  # how often each worker of several writes its counters for the others' /metrics
LAG_SAMPLES = 1000  # the latest scheduler lags kept per process, for the p50 and p99

_lock = threading.Lock()  # counted from the scheduler's and the outbound client's threads too
_counters: dict = {}  # (metric name, label values) -> count
_lags: collections.deque = collections.deque(maxlen=LAG_SAMPLES)

# name -> (help, label names): the counters this module keeps, beside the request tally
COUNTERS = {
    "rustiz_publish_attempts_total": ("Publish attempts (each thread part, each retry), by provider", ("provider",)),
    "rustiz_publish_failures_total": ("Publish attempts that failed, by provider", ("provider",)),
    "rustiz_token_refreshes_total": ("OAuth token refreshes, by provider and outcome (ok, failed)",
                                     ("provider", "outcome")),
    "rustiz_outbound_requests_total": ("Calls to other servers (platforms, media, webhooks)", ()),
    "rustiz_outbound_errors_total": ("Calls to other servers that got no answer (refused, timed out, "
                                     "address not allowed)", ()),
}


def count(name: str, *labels: str) -> None:
    """One more of `name` (a COUNTERS key) with these label values."""
    key = (name, labels)
    with _lock:
        _counters[key] = _counters.get(key, 0) + 1


def record_lag(seconds: float) -> None:
    """How late the scheduler started a post's publish, past its due time."""
    _lags.append(max(0.0, seconds))


def route_family(handler: Any) -> str:
    """The label of a route: its feature module (api_posts, media, mcp...), or the core handler's name (health)."""
    if handler is None:
        return "unrouted"
    module = handler.__module__.rpartition(".")[2]
    return handler.__name__ if module in ("rustiz", "__main__") else module


# --- this process's counts, and the sum over the workers ------------------------------------------------------

def snapshot() -> dict:
    """This process's counts, as JSON-able lists."""
    with _lock:
        counters = [[name, list(labels), value] for (name, labels), value in _counters.items()]
    requests = [[route_family(handler), status, *row] for (handler, status), row in list(REQUEST_TALLY.rows.items())]
    return {"requests": requests, "counters": counters, "lags": list(_lags)}


def shared_folder(config: Config) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(config.config_path)), "metrics")


def share_counters(loop: Any, config: Config) -> None:
    """In each of several workers: write this process's counts every SHARE_SECONDS (see the module's rules)."""
    folder = shared_folder(config)

    def write() -> None:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            path = os.path.join(folder, f"{os.getpid()}.json")
            temporary = path + ".tmp"
            with open(temporary, "w", encoding="utf-8") as handle:
                json.dump(snapshot(), handle)
            os.replace(temporary, path)
        except OSError as error:  # (a full disk: the other workers' /metrics miss this one's recent counts)
            log(f"cannot share this worker's metrics in {folder}: {error.strerror}", "warn")
        loop.call_later(SHARE_SECONDS, write)

    loop.call_soon(write)


def _other_workers(config: Config) -> list:
    """The snapshots the other live workers wrote; files of processes that are gone are removed."""
    folder = shared_folder(config)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in names:
        pid_text = name[:-5] if name.endswith(".json") else ""
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        path = os.path.join(folder, name)
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                os.unlink(path)
            continue
        except PermissionError:
            pass  # alive, another user's: not ours, but its file is in our folder, so read it
        with contextlib.suppress(OSError, ValueError):
            with open(path, encoding="utf-8") as handle:
                found.append(json.load(handle))
    return found


def merged(config: Config) -> dict:
    """Request rows, counters and lag samples of every worker of this server, summed."""
    requests: dict = {}
    counters: dict = {}
    lags: list = []
    for part in [snapshot(), *_other_workers(config)]:
        for family, status, *row in part.get("requests", []):
            total = requests.setdefault((family, status), [0] * len(row))
            for index, value in enumerate(row):
                total[index] += value
        for name, labels, value in part.get("counters", []):
            counters[(name, tuple(labels))] = counters.get((name, tuple(labels)), 0) + value
        lags.extend(part.get("lags", []))
    return {"requests": requests, "counters": counters, "lags": sorted(lags)}


def quantile(ordered: list, fraction: float) -> float:
    """The value at `fraction` of an ordered list (nearest rank); 0 for none."""
    if not ordered:
        return 0.0
    return float(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))])


# --- the text format --------------------------------------------------------------------------------------------

def _escaped(value: Any) -> str:
    """A label value as the text format writes it: backslash, double quote and newline escaped."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: dict) -> str:
    if not pairs:
        return ""
    return "{" + ",".join(f'{name}="{_escaped(value)}"' for name, value in pairs.items()) + "}"


def _number(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


class Exposition:
    """Lines of the Prometheus text format, each family's HELP and TYPE once, before its samples."""

    def __init__(self) -> None:
        self.lines: list = []

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]

    def sample(self, name: str, value: float, **labels: Any) -> None:
        self.lines.append(f"{name}{_labels(labels)} {_number(value)}")

    def text(self) -> bytes:
        return ("\n".join(self.lines) + "\n").encode()


def _request_families(out: Exposition, requests: dict) -> None:
    out.family("rustiz_http_requests_total", "counter", "HTTP requests answered, by route family and status")
    for (family, status), row in sorted(requests.items()):
        out.sample("rustiz_http_requests_total", row[0], family=family, status=status)
    out.family("rustiz_http_request_duration_seconds", "histogram",
               "Time from a complete request to its answer being written, by route family")
    by_family: dict = {}
    for (family, _), row in requests.items():
        total = by_family.setdefault(family, [0] * len(row))
        for index, value in enumerate(row):
            total[index] += value
    for family, row in sorted(by_family.items()):
        running = 0
        for bound, in_bucket in zip(RequestTally.LATENCY_BUCKETS, row[2:]):
            running += in_bucket
            out.sample("rustiz_http_request_duration_seconds_bucket", running, family=family, le=repr(bound))
        out.sample("rustiz_http_request_duration_seconds_bucket", row[0], family=family, le="+Inf")
        out.sample("rustiz_http_request_duration_seconds_sum", float(row[1]), family=family)
        out.sample("rustiz_http_request_duration_seconds_count", row[0], family=family)


def _counter_families(out: Exposition, counters: dict) -> None:
    for name, (help_text, label_names) in COUNTERS.items():
        out.family(name, "counter", help_text)
        samples = sorted((labels, value) for (found, labels), value in counters.items() if found == name)
        if not label_names and not samples:
            out.sample(name, 0)
        for labels, value in samples:
            out.sample(name, value, **dict(zip(label_names, labels)))


def _lag_family(out: Exposition, lags: list) -> None:
    out.family("rustiz_scheduler_lag_seconds", "summary",
               f"How late publishes started past their due time (the latest {LAG_SAMPLES} per process)")
    for fraction in ("0.5", "0.99"):
        out.sample("rustiz_scheduler_lag_seconds", quantile(lags, float(fraction)), quantile=fraction)
    out.sample("rustiz_scheduler_lag_seconds_sum", float(sum(lags)))
    out.sample("rustiz_scheduler_lag_seconds_count", len(lags))


# A request carrying any of these came through a reverse proxy (nginx's common snippets set X-Real-IP alone), so
# its loopback peer is the proxy's, not the client's.
PROXY_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip", "via")


class Metrics:
    """GET /metrics, and GET /health?verbose=1 (App.health hands it here)."""

    def __init__(self, app: App):
        self.app, self.config, self.store = app, app.config, app.store
        self.token = (self.config.settings or {}).get("RUSTIZ_METRICS_TOKEN", "")

    def allowed(self, request: Request) -> bool:
        """A loopback client not behind a proxy, or one presenting RUSTIZ_METRICS_TOKEN."""
        header = request.headers.get("authorization", "")
        if self.token and header[:7].lower() == "bearer " and compare_digest(header[7:].strip().encode(),
                                                                             self.token.encode()):
            return True
        headers = request.headers
        proxied = any(name in headers for name in PROXY_HEADERS)
        peer = request.peer
        return not proxied and (peer.startswith("127.") or peer in ("::1", "localhost")
                                or peer.startswith("::ffff:127."))

    def _refused(self) -> Response:
        return json_response({"statusCode": 403, "message": "this answers loopback clients (not through a proxy), "
                              "or with Authorization: Bearer <RUSTIZ_METRICS_TOKEN> (set it in config.env)"}, 403)

    @route_options(authenticated=False)  # (its own check: loopback, or RUSTIZ_METRICS_TOKEN)
    @documented("Prometheus metrics (text format 0.0.4) for loopback clients, or with Authorization: Bearer "
                "RUSTIZ_METRICS_TOKEN; 403 otherwise (rustiz)",
                ("200", {"description": "The metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}))
    def serve(self, request: Request) -> Response:
        if not self.allowed(request):
            return self._refused()
        totals = merged(self.config)
        out = Exposition()
        out.family("rustiz_build_info", "gauge", "Always 1; the version in a label")
        out.sample("rustiz_build_info", 1, version=VERSION)
        _request_families(out, totals["requests"])
        _counter_families(out, totals["counters"])
        _lag_family(out, totals["lags"])
        self._database_families(out)
        return Response(200, out.text(), "text/plain; version=0.0.4; charset=utf-8")

    def _database_families(self, out: Exposition) -> None:
        due, total, _ = schedule_store.queue_depth(self.store, iso_at(time.time()))
        states = dict(operation_store.post_counts_by_state(self.store))
        out.family("rustiz_posts", "gauge", "Posts (each thread part) by state, deleted ones left out")
        for state in sorted({"DRAFT", "QUEUE", "PUBLISHING", "PUBLISHED", "ERROR", *states}):
            out.sample("rustiz_posts", states.get(state, 0), state=state)
        out.family("rustiz_queue_depth", "gauge", "Queued posts: due now (scope=due), and in all (scope=all)")
        out.sample("rustiz_queue_depth", due, scope="due")
        out.sample("rustiz_queue_depth", total, scope="all")
        refresh_needed, disabled = operation_store.channels_needing_attention(self.store)
        out.family("rustiz_channels_needing_attention", "gauge",
                   "Channels to reconnect (reason=refresh_needed) or disabled (reason=disabled)")
        out.sample("rustiz_channels_needing_attention", refresh_needed, reason="refresh_needed")
        out.sample("rustiz_channels_needing_attention", disabled, reason="disabled")

    def verbose_health(self, request: Request) -> Response:
        if not self.allowed(request):
            return self._refused()
        report = health_report(self.config, self.store)
        return json_response(report, 200 if report["database"]["writable"] else 503)


def scheduler_heartbeat(config: Config, store: Any) -> Optional[float]:
    """When a scheduler last gave a sign of life (Unix time): on SQLite in its lock file, on PostgreSQL in the
    scheduler_heartbeat table; None when none ever did."""
    if store.remote:
        return schedule_store.last_scheduler_heartbeat(store)
    import re
    try:
        with open(config.database + "-scheduler", "rb") as handle:
            found = re.search(rb"alive at (\d+)", handle.read(200))
    except OSError:
        return None
    return float(found[1]) if found else None


HEARTBEAT_STALE_SECONDS = 30.0  # the scheduler beats every few seconds: this much silence means it is not running


def health_report(config: Config, store: Any) -> dict:
    """What GET /health?verbose=1 answers, and rustiz doctor reads."""
    now = time.time()
    problem = store.current_write_problem()
    due, total, earliest = schedule_store.queue_depth(store, iso_at(now))
    beat = scheduler_heartbeat(config, store)
    refresh_needed, disabled = operation_store.channels_needing_attention(store)
    lag = max(0.0, now - parse_iso_instant(earliest).timestamp()) if earliest else 0.0
    return {
        "status": "ok" if problem is None else "unwritable",
        "version": VERSION,
        "database": {"writable": problem is None, "problem": problem,
                     "backend": "postgresql" if store.remote else "sqlite"},
        "scheduler": {"alive": beat is not None and now - beat < HEARTBEAT_STALE_SECONDS,
                      "lastHeartbeat": iso_at(beat) if beat is not None else None,
                      "lagSeconds": round(lag, 3)},
        "queue": {"due": due, "total": total},
        "channels": {"refreshNeeded": refresh_needed, "disabled": disabled},
    }
