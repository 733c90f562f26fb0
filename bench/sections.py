"""The report's sections beside the main table: MCP, PostgreSQL scaling out, hostile clients, and Postiz.

Rules: standard library only; each function takes the run's Measurements and returns its lines (none when
the section was not measured), worded and ordered as bench.sh printed them.
"""
from bench.values import (NOT_MEASURED, Measurements, mib, ms, parse_pairs, ratio, ratio_times,
                          startup_cell, value)

SCALE_API_ROWS = (("sc_sqlite1", "SQLite, 1 process"), ("sc_pg1", "PostgreSQL, 1 process"),
                  ("sc_pg2", "PostgreSQL, 2 processes (2 ports)"),
                  ("sc_peer_pg", "uvicorn+starlette+psycopg_pool (8 connections), PostgreSQL, 1 process"))
SCALE_SCHEDULER_ROWS = (("sched_sqlite1", "SQLite, 1 process"), ("sched_pg1", "PostgreSQL, 1 process"),
                        ("sched_pg3", "PostgreSQL, 3 processes"))
POSTIZ_ROWS = ("pz_rz_std", "pz_rz_fast", "pz_postiz")


def mcp_table(data: Measurements) -> list:
    """tools/call through /mcp/<key> beside the REST GET on the same server."""
    lines = [f"MCP: `tools/call integrationList` POSTed to /mcp/<key> (JSON answer; wrk -t1 -c32 -d{data.scalar('DUR')}s "
             f"with a Lua script) beside REST `GET {data.scalar('PATH_EP')}` on the same server, one after the other:", "",
             "| Server | MCP tools/call req/s | MCP p99 | REST GET req/s | REST p99 | MCP / REST |",
             "|---|---:|---:|---:|---:|---:|"]
    mcp, rest = data.get("MCP_RPS"), data.get("MCP_REST_RPS")
    for row in ("rz_std", "rz_fast"):
        if not (mcp.get(row) or rest.get(row)):
            continue
        cells = [data.get("LABEL").get(row, ""), value(mcp.get(row, "")), ms(data.get("MCP_P99").get(row, "")),
                 value(rest.get(row, "")), ms(data.get("MCP_REST_P99").get(row, "")),
                 value(ratio(mcp.get(row, ""), rest.get(row, "")))]
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def scale_table(data: Measurements) -> list:
    """GET /integrations and the scheduler on PostgreSQL with 1 and more processes, as ratios to SQLite."""
    requests, rates = data.get("SC_RPS"), data.get("SC_RATE")
    if not (requests.get("sc_sqlite1") or rates.get("sched_sqlite1")):
        return []
    peer = data.scalar("PGPEER")
    lines = ["", f"PostgreSQL, scaling out (issue 14): stdlib rustiz on {data.scalar('PGPY')}; a throwaway local "
                 "cluster (fsync off) on the same 2 cores; the same-work peer "
                 f"{'(' + peer + ') ' if peer else ''}reads the same database.", "",
             f"| GET {data.scalar('PATH_EP')}, 32 connections split over the processes | req/s (sum) | p99 (worst) "
             "| ratio to SQLite |", "|---|---:|---:|---:|"]
    for row, label in SCALE_API_ROWS:
        lines.append(f"| {label} | {value(requests.get(row, ''))} | {ms(data.get('SC_P99').get(row, ''))} | "
                     f"{value(ratio(requests.get(row, ''), requests.get('sc_sqlite1', '')))}× |")
    lines += ["", "| Scheduler, 1,000 posts due at once, zero-latency receiver | posts/s | ratio to SQLite |",
              "|---|---:|---:|"]
    for row, label in SCALE_SCHEDULER_ROWS:
        lines.append(f"| {label} | {value(rates.get(row, ''))} | "
                     f"{value(ratio(rates.get(row, ''), rates.get('sched_sqlite1', '')))}× |")
    return lines


def hostile_summary(raw: str) -> str:
    """hostile_bench.py's last line (NAME=VALUE pairs) as the report says it."""
    figures = parse_pairs(raw)
    return (f"peak RSS {figures.get('HOSTILE_PEAK_RSS', '')} MiB; /health p99 {figures.get('HOSTILE_HEALTH_P99', '')} ms "
            f"over {figures.get('HOSTILE_HEALTH_N', '')} probes ({figures.get('HOSTILE_HEALTH_FAILS', '')} failed); "
            f"{figures.get('HOSTILE_CONNECTIONS', '')} connections opened in {figures.get('HOSTILE_SECONDS', '')} s")


def hostile_lines(data: Measurements) -> list:
    raw = data.get("HOSTILE_RAW")
    this = hostile_summary(raw["this"]) if raw.get("this") else "not measured"
    lines = ["Hostile clients (stdlib rustiz; 200 connections trickle 25 MiB bodies at 160 KiB/s, half without a key, "
             "while 2,000 sit idle, each reconnecting when closed; /health asked every 50 ms): " + this + "."]
    if raw.get("baseline"):
        lines.append(f"Hostile clients on {data.scalar('BENCH_HOSTILE_BASELINE')}: {hostile_summary(raw['baseline'])}.")
    return lines


def _rss_cell(memory: str) -> str:
    """mib, and ", still starting" when it was read before the first 200."""
    if memory.endswith(" starting"):
        return f"{mib(memory[:-len(' starting')])}, still starting"
    return mib(memory)


def _postiz_row(data: Measurements, row: str) -> str:
    cells = [data.get("LABEL").get(row, ""), startup_cell(data, row), _rss_cell(data.get("C_RSS2").get(row, "")),
             _rss_cell(data.get("C_RSS10").get(row, "")), mib(data.get("C_RSS1").get(row, "")),
             mib(data.get("C_STACK1").get(row, ""))]
    for rate, p99 in (("RPS32", "P99_32"), ("RPS64", "P99_64"), ("ABRPS", "ABP99")):
        cells += [value(data.get(rate).get(row, "")), ms(data.get(p99).get(row, ""))]
    cells.append(value(data.get("ERRS").get(row, "")))
    return "| " + " | ".join(cells) + " |"


def _against_postiz(data: Measurements, row: str) -> str:
    """One rustiz row against Postiz's, as ratios."""
    def of(array: str, name: str) -> str:
        return data.get(array).get(name, "")
    startup = data.startup_medians()
    rss_postiz, rss_row = _first_field(of("C_RSS1", "pz_postiz")), _first_field(of("C_RSS1", row))
    return (f"{of('LABEL', row)} against Postiz: start-up {ratio_times(startup.get('pz_postiz', ''), startup.get(row, ''))} "
            f"shorter, backend RSS after load {ratio_times(rss_postiz, rss_row)} smaller, whole stack "
            f"{ratio_times(of('C_STACK1', 'pz_postiz'), of('C_STACK1', row))} smaller, wrk c32 "
            f"{ratio_times(of('RPS32', row), of('RPS32', 'pz_postiz'))} the requests/s (p99 "
            f"{ratio_times(of('P99_32', 'pz_postiz'), of('P99_32', row))} shorter), ab "
            f"{ratio_times(of('ABRPS', row), of('ABRPS', 'pz_postiz'))}.")


def _first_field(memory: str) -> str:
    """The RSS (KiB) of "RSS NPROC PSS"."""
    return (memory.split() or [""])[0]


def postiz_table(data: Measurements) -> list:
    """BENCH_POSTIZ=1: Postiz's backend beside both rustiz builds on the same request."""
    if data.scalar("BENCH_POSTIZ") != "1":
        return []
    measured = [row for row in POSTIZ_ROWS if data.get("RPS32").get(row) or data.get("SU_VALUES").get(row, "").split()]
    if "pz_postiz" not in measured:
        return ["", "Postiz (BENCH_POSTIZ=1): not measured; the notes below say which step failed."]
    lines = ["", "### Beside Postiz (BENCH_POSTIZ=1), same run", "",
             f"GET {data.scalar('PATH_EP')} with `Authorization: <key>` (Postiz's form), an organization with no channels, "
             f"keep-alive; ab -k -c {data.scalar('AB_C')} -n {data.scalar('CMP_AB_N')}, wrk -t1 -d{data.scalar('DUR')}s. "
             f"Launch to the first 200 on that request, the poller asking every 1 ms ({data.scalar('STARTS')} cold starts). "
             "Whole stack: PSS summed over the server and, for Postiz, its PostgreSQL, Redis and Temporal (shared memory "
             f"counted once). Postiz {data.scalar('PZ_COMMIT_USED')}.", "",
             "| Server | Launch → first 200, median (range) | RSS 2 s | RSS 10 s | RSS after load | Whole stack after load "
             "| wrk c32 req/s | c32 p99 | wrk c64 req/s | c64 p99 | ab -k c32 req/s | ab p99 | errors |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [_postiz_row(data, row) for row in measured] + [""]
    services = data.get("C_SVC10").get("pz_postiz")
    if services:
        lines.append(f"Postiz's services, 10 s after the backend's launch: {services}; after the load: "
                     f"{data.get('C_SVC1').get('pz_postiz') or NOT_MEASURED}. Whole stack 10 s after launch: "
                     f"{mib(data.get('C_STACK10').get('pz_postiz', ''))}.")
    lines += [_against_postiz(data, row) for row in measured if row != "pz_postiz"]
    return lines + ["", *POSTIZ_CAVEATS, f"Services: {data.scalar('PZ_SERVICES')}.",
                    "Postiz's preparation (install and build): " + ("reused from an earlier run" if data.scalar("PZ_PREP_S") == "0"
                                                                     else f"{data.scalar('PZ_PREP_S') or '?'} s") + "."]


POSTIZ_CAVEATS = (
    "Changed in Postiz for this run, and why: it pins Prisma 6.5.0, whose Rust query engine is downloaded at install "
    "time from a host machines without general internet access cannot reach, so it ran on Prisma 6.19.3's engine-free "
    "mode (engineType \"client\", @prisma/adapter-pg on pg), a different database layer that may be faster or slower "
    "than stock; bcrypt was built from source for the same reason; nothing else.",
    "Not run: Postiz's frontend and orchestrator, and Temporal's production stack (its own PostgreSQL, Elasticsearch, "
    "UI and admin tools); Temporal is its dev server, in memory.",
    "PostgreSQL is a throwaway local cluster with fsync off, on the same 2 cores as the servers and the load "
    "generators; rustiz here reads SQLite in its own process.",
)
