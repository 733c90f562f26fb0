"""The PostgreSQL rows (scaling out, issue 14): GET /public/v1/integrations with 32 connections on SQLite
(1 process) and PostgreSQL (1, and 2 processes on two ports with the load split: wrk -c16 on each at once),
the same-work peer on PostgreSQL (uvicorn+starlette+psycopg_pool, bench/peer_pg_app.py, in .bench/pgpeer made
from PyPI), then the scheduler's posts/s (bench/sched_scale.py: 1,000 webhook posts due at once) with 1 and 3 processes
on PostgreSQL beside SQLite's 1.

Rules: standard library only; every rustiz row runs on a python with psycopg (BENCH_PG_PYTHON, or .bench/pgpy made
with requirements-dev.txt's psycopg), RUSTIZ_NO_SPEEDUPS=1, against a throwaway cluster (tests/pg_cluster.py:
initdb in a temporary folder, fsync off) that is stopped at the end whatever happens. Run by bench.sh as
`python3 -m bench.scale` (see bench/common.py): records SC_RPS, SC_P99, SC_RATE and the scalars PGPY and PGPEER.
"""
import glob
import os
import re
import subprocess
import sys
from typing import Optional

from bench.common import (Context, Ports, Server, api_key, check_quiet, fresh_folder, last_error, last_line, log, note,
                          record, stop_on_sigterm, wait_health, wrk, wrk_errors_text)
from bench.loadgen import wrk_summary
from bench.values import parse_pairs

SCHEDULER_ROWS = (("sched_sqlite1", 1), ("sched_pg1", 1), ("sched_pg3", 3))


PEER_POOL_PACKAGES = ["uvicorn[standard]", "starlette", "psycopg-pool"]  # (and requirements-dev.txt's psycopg)


def psycopg_spec(context: Context) -> str:
    """requirements-dev.txt's psycopg line (its pinned version), or psycopg[binary]."""
    with open(os.path.join(context.root, "requirements-dev.txt"), encoding="utf-8") as requirements:
        specs = re.findall(r"^psycopg[^ #\n]*", requirements.read(), re.M)
    return specs[0] if specs else "psycopg[binary]"


def venv_python(context: Context, name: str, modules: str, packages: list, row: str) -> Optional[str]:
    """The python of .bench/NAME, a venv that imports MODULES, made with PyPI's PACKAGES when it does not yet
    (and this run may install); None, said in a note about ROW, when it cannot be had."""
    python = os.path.join(context.bench_dir, name, "bin", "python")
    if subprocess.run(["timeout", "30", python, "-c", f"import {modules}"], capture_output=True).returncode == 0:
        return python
    if os.environ.get("BENCH_NO_INSTALL") == "1":
        note(f"{row}: no {os.path.dirname(os.path.dirname(python))} (let bench.sh install {' '.join(packages)}); skipped")
        return None
    log(f"creating {os.path.dirname(os.path.dirname(python))} ({' '.join(packages)})")
    with open(context.raw(f"{name}.log"), "wb") as pip_log:
        made = subprocess.run(["timeout", "120", sys.executable, "-m", "venv", os.path.dirname(os.path.dirname(python))],
                              stdout=pip_log, stderr=subprocess.STDOUT).returncode == 0 and subprocess.run(
            ["timeout", "600", python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *packages],
            stdout=pip_log, stderr=subprocess.STDOUT).returncode == 0
    if not made:
        note(f"{row}: installing {' '.join(packages)} failed (see {context.raw(name + '.log')}); skipped")
        return None
    return python


def postgres_python(context: Context) -> Optional[str]:
    """A python that imports psycopg (BENCH_PG_PYTHON, or .bench/pgpy made when allowed), or None, said in a note."""
    return os.environ.get("BENCH_PG_PYTHON", "") or venv_python(
        context, "pgpy", "psycopg", [psycopg_spec(context)], "PostgreSQL rows")


def start_servers(context: Context, ports: Ports, row: str, config_path: str, count: int, python: str) -> Optional[list]:
    """COUNT `rustiz serve` processes on CONFIG, each on a port of its own: [(port, Server)], or None (noted)."""
    started: list = []
    for number in range(1, count + 1):
        port = ports.free()
        env = {**os.environ, "RUSTIZ_CONFIG": config_path, "HOST": "127.0.0.1", "PORT": str(port),
               "REQUEST_LIMIT": "0", "RUSTIZ_NO_SPEEDUPS": "1"}
        server = Server([python, context.pyz, "serve"], context.raw(f"{row}.server{number}.log"), context.server_ttl, env)
        started.append((port, server))
        if not wait_health(port, server, 30):
            note(f"{row}: process {number} not ready in 30 s: {server.log_tail(2)} ")
            stop_servers(started)
            return None
    return started


def stop_servers(started: list) -> None:
    for _, server in started:
        server.stop()


def split_load(context: Context, row: str, key: str, ports: list) -> None:
    """32 connections split over PORTS, wrk on each at once: requests/s summed, p99 the worst."""
    connections = 32 // len(ports)
    check_quiet(row)
    header = ["-H", f"Authorization: Bearer {key}"]
    for port in ports:  # warm-up, then the measured load on every port at once
        wrk([f"-c{connections}", "-d1s", *header], f"http://127.0.0.1:{port}/public/v1/integrations",
            context.raw(f"{row}.warmup.{port}.txt"), 30)
    loads = []
    for port in ports:
        with open(context.raw(f"{row}.wrk.{port}.txt"), "wb") as output:
            loads.append(subprocess.Popen(["timeout", str(context.duration + 20), "wrk", "-t1", f"-c{connections}",
                                           f"-d{context.duration}s", "--latency", *header,
                                           f"http://127.0.0.1:{port}/public/v1/integrations"],
                                          stdout=output, stderr=subprocess.STDOUT))
    for load in loads:
        load.wait()
    total, worst = 0, ""
    for port in ports:
        with open(context.raw(f"{row}.wrk.{port}.txt"), encoding="utf-8", errors="replace") as written:
            summary = wrk_summary(written.read())
        total += int(summary.requests_per_second or 0)
        if summary.p99_ms not in ("", "?") and (not worst or float(summary.p99_ms) > float(worst)):
            worst = summary.p99_ms
        errors = wrk_errors_text(context.raw(f"{row}.wrk.{port}.txt"))
        if errors:
            note(f"{row}: {errors}")
    record("SC_RPS", row, str(total) if total else "")
    record("SC_P99", row, worst)


def api_rows(context: Context, ports: Ports, cluster: str, python: str) -> bool:
    """GET /integrations on SQLite, then on PostgreSQL with 1 and 2 processes; False when a step failed."""
    scale = fresh_folder(os.path.join(context.bench_dir, "scale"))
    with open(context.raw("scale-init.log"), "wb") as init_log:
        if subprocess.run(["timeout", "60", python, context.pyz, "init", "--dir", f"{scale}/sqlite"], stdout=init_log,
                          stderr=subprocess.STDOUT).returncode != 0:
            note("scale: init failed")
            return False
    measure(context, ports, "sc_sqlite1", f"{scale}/sqlite/config.env", 1, python)
    database = create_database(context, cluster, "bench_api", python)
    if not database:
        note("scale: createdb failed")
        return False
    with open(context.raw("scale-init.log"), "ab") as init_log:
        if subprocess.run(["timeout", "60", python, context.pyz, "init", "--dir", f"{scale}/pg"], stdout=init_log,
                          stderr=subprocess.STDOUT, env={**os.environ, "RUSTIZ_DATABASE": database}).returncode != 0:
            note(f"scale: init on PostgreSQL failed (see {context.raw('scale-init.log')})")
            return False
    for count in (1, 2):
        measure(context, ports, f"sc_pg{count}", f"{scale}/pg/config.env", count, python)
    measure_pool_peer(context, ports, database, api_key(f"{scale}/pg/config.env"))
    return True


def measure_pool_peer(context: Context, ports: Ports, database: str, key: str) -> None:
    """The same GET on uvicorn+starlette+psycopg_pool (bench/peer_pg_app.py, 8 connections) over the same
    database and key, with the same 32 connections: row sc_peer_pg."""
    peer_python = venv_python(context, "pgpeer", "uvicorn, starlette, psycopg_pool, psycopg",
                              [*PEER_POOL_PACKAGES, psycopg_spec(context)], "sc_peer_pg")
    if not peer_python:
        return
    versions = subprocess.run([peer_python, "-c", "import importlib.metadata as m; print(', '.join(f'{p} {m.version(p)}' "
                               "for p in ('uvicorn', 'starlette', 'psycopg', 'psycopg-pool')))"], capture_output=True, text=True)
    record("scalar", "PGPEER", versions.stdout.strip())
    port = ports.free()
    server = Server([peer_python, "-m", "uvicorn", "peer_pg_app:app", "--app-dir", context.files, "--host", "127.0.0.1",
                     "--port", str(port), "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level",
                     "warning"], context.raw("sc_peer_pg.server.log"), context.server_ttl,
                    {**os.environ, "RUSTIZ_DATABASE": database})
    try:
        if wait_health(port, server, 30):
            split_load(context, "sc_peer_pg", key, [port])
        else:
            note(f"sc_peer_pg: the peer was not ready in 30 s: {server.log_tail(2)}")
    finally:
        server.stop()


def measure(context: Context, ports: Ports, row: str, config_path: str, count: int, python: str) -> None:
    started = start_servers(context, ports, row, config_path, count, python)
    if started is None:
        return
    try:
        split_load(context, row, api_key(config_path), [port for port, _ in started])
    finally:
        stop_servers(started)


def create_database(context: Context, cluster: str, name: str, python: str) -> str:
    """A new database in the cluster: its URL, or "" when it could not be made."""
    made = subprocess.run(["timeout", "60", python, os.path.join(context.root, "tests", "pg_cluster.py"), "createdb",
                           cluster, name], capture_output=True, text=True)
    return made.stdout.strip() if made.returncode == 0 else ""


def scheduler_rows(context: Context, cluster: str, python: str) -> None:
    """The scheduler's posts/s: SQLite with 1 process, PostgreSQL with 1 and 3."""
    for row, count in SCHEDULER_ROWS:
        check_quiet(row)
        database = "sqlite"
        if row != "sched_sqlite1":
            database = create_database(context, cluster, f"bench_{row}", python)
            if not database:
                note(f"{row}: createdb failed")
                continue
        work = fresh_folder(os.path.join(context.bench_dir, "scale", row))
        log(f"scheduler: 1,000 posts due at once, {count} process(es), {database.split(':')[0]}")
        figures = parse_pairs(last_line([python, os.path.join(context.files, "sched_scale.py"), python, context.pyz, work,
                                         str(count), database], 400, context.raw(f"{row}.err")))
        if "RATE" not in figures:
            note(f"{row}: the scheduler bench failed: {last_error(context.raw(f'{row}.err'))}")
            continue
        record("SC_RATE", row, figures["RATE"])
        if figures.get("POSTS") != "1000":
            note(f"{row}: only {figures.get('POSTS')} of 1000 posts arrived within 3 min")
        if figures.get("LATE_START", "0.0") != "0.0":
            note(f"{row}: creating the posts ended {figures['LATE_START']} s after they were due")


def main() -> int:
    stop_on_sigterm()
    context = Context.from_environment()
    if not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        note("PostgreSQL rows: PostgreSQL is not installed (apt-get install postgresql); skipped")
        return 0
    python = postgres_python(context)
    if not python:
        return 0
    record("scalar", "PGPY", python)
    cluster_script = os.path.join(context.root, "tests", "pg_cluster.py")
    started = subprocess.run(["timeout", "60", sys.executable, cluster_script, "start"], capture_output=True, text=True)
    if started.returncode != 0:
        note(f"PostgreSQL rows: the cluster did not start: {(started.stderr.splitlines() or [''])[-1]}")
        return 0
    cluster, url = started.stdout.strip().split(" ", 1)
    log(f"PostgreSQL cluster at {url} ({cluster})")
    try:
        if api_rows(context, Ports(context.first_port), cluster, python):
            scheduler_rows(context, cluster, python)
    finally:
        subprocess.run(["timeout", "60", sys.executable, cluster_script, "stop", cluster], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
