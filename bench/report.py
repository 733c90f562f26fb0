"""bench.sh's report: the tables, the lines beside them, the targets (PASS/FAIL) and the notes, from what the
run measured.

Rules: standard library only; nothing here measures. bench/__main__.py hands the measurements over as
.bench/results/measurements.tsv, tab-separated lines: `ARRAY<TAB>KEY<TAB>VALUE` per measurement (LABEL, RPS32, SU_VALUES...) and
`scalar<TAB>NAME<TAB>VALUE` for single values; print_report prints the report and says the exit status (1 only
when BENCH_STRICT=1 and a target FAILs). Every figure is printed as bench.sh's awk printed it ("—" for one not measured), so the rows and lines stay the same from run to run.
"""
import os
import sys
import time
from typing import NamedTuple, Optional

from bench.sections import hostile_lines, mcp_table, postiz_table, scale_table
from bench.values import Measurements, kib, mib, ms, parse_pairs, ratio, startup_cell, value

PYZ_SIZE_LIMIT = 1024 * 1024  # bytes: "rustiz.pyz ≤ 1024 KiB" (issue 24: the web app may take it to 1 MiB)
MAIN_ROWS = ("nginx", "floor", "uvicorn", "rz_std", "rz_fast", "base_std", "base_fast", "rz_std_w2", "rz_fast_w2")


class Target(NamedTuple):
    """One target line: what it asks, the measured value ("" when not measured), the comparison and the
    limit, and the text printed after the description when it was measured."""
    description: str
    measured: str
    comparison: str  # ">=" or "<="
    limit: float
    detail: str

    def passes(self) -> bool:
        if not self.measured:
            return False
        measured = float(self.measured)
        return measured >= self.limit if self.comparison == ">=" else measured <= self.limit

    def line(self) -> str:
        verdict = "PASS" if self.passes() else "FAIL"
        return f"- {verdict}  {self.description}: {self.detail if self.measured else 'not measured'}"


def _ratio_target(description: str, numerator: str, denominator: str, comparison: str, limit: float,
                  unit: str) -> Target:
    measured = ratio(numerator, denominator)
    return Target(description, measured, comparison, limit,
                  f"{measured}× ({numerator or '?'} vs {denominator or '?'} {unit})")


def targets(data: Measurements) -> list:
    """The targets of this run, in bench.sh's order (the baseline's start-up only when a baseline ran)."""
    rps, startup = data.get("RPS32"), data.startup_medians()
    found = [
        _ratio_target("rustiz (uvloop+orjson) ≥ 3.5× uvicorn+starlette, wrk c32",
                      rps.get("rz_fast", ""), rps.get("uvicorn", ""), ">=", 3.5, "req/s"),
        _ratio_target("rustiz (uvloop+orjson) ≥ 0.5× nginx ceiling, wrk c32",
                      rps.get("rz_fast", ""), rps.get("nginx", ""), ">=", 0.5, "req/s"),
        _ratio_target("rustiz (stdlib only) ≥ 3.5× uvicorn+starlette, wrk c32",
                      rps.get("rz_std", ""), rps.get("uvicorn", ""), ">=", 3.5, "req/s"),
        _ratio_target("rustiz (stdlib only) ≥ 0.5× a do-nothing asyncio Protocol (Python's floor), wrk c32",
                      rps.get("rz_std", ""), rps.get("floor", ""), ">=", 0.5, "req/s"),
        _ratio_target("start-up median (stdlib rustiz) ≤ 0.5× uvicorn+starlette's",
                      startup.get("rz_std", ""), startup.get("uvicorn", ""), "<=", 0.5, "ms"),
    ]
    if data.scalar("BASE_FAST_PYZ"):  # "no worse than today": needs the build it is compared with
        found.append(_ratio_target("start-up median (uvloop+orjson) no worse than the baseline's",
                                   startup.get("rz_fast", ""), startup.get("base_fast", ""), "<=", 1, "ms"))
    idle = kib(data.get("RSS0").get("rz_std", ""))
    idle_mib = f"{idle / 1024:.1f}" if idle is not None else ""
    found.append(Target("idle RSS (stdlib rustiz, 2 s after start) ≤ 20 MiB", idle_mib, "<=", 20, f"{idle_mib} MiB"))
    loaded = kib(data.get("RSS1").get("rz_std", ""))
    loaded_mib = f"{loaded / 1024:.1f}" if loaded is not None else ""
    found.append(Target("RSS after ab -k -c32 and the wrk loads (stdlib rustiz) ≤ 25 MiB", loaded_mib, "<=", 25,
                        f"{loaded_mib} MiB"))
    errors = data.get("ERRS").get("rz_std", "")
    found.append(Target("failed requests under ab and wrk (stdlib rustiz) = 0", errors, "<=", 0, f"{errors}"))
    size = data.scalar("SIZE_PLAIN")
    size_kib = f"{int(size) / 1024:.1f}" if size else ""
    found.append(Target("rustiz.pyz ≤ 1024 KiB", size, "<=", PYZ_SIZE_LIMIT, f"{size} bytes ({size_kib} KiB)"))
    return found + scale_targets(data)


def scale_targets(data: Measurements) -> list:
    """The PostgreSQL targets (issue 23), when the PostgreSQL rows ran: rustiz on PostgreSQL against the same-work
    psycopg_pool peer and against rustiz on SQLite, and the scheduler's 3 processes against its 1."""
    requests, rates = data.get("SC_RPS"), data.get("SC_RATE")
    if not (requests or rates):
        return []
    return [
        _ratio_target("rustiz on PostgreSQL (1 process) ≥ 2× uvicorn+starlette+psycopg_pool, wrk c32",
                      requests.get("sc_pg1", ""), requests.get("sc_peer_pg", ""), ">=", 2, "req/s"),
        _ratio_target("rustiz on PostgreSQL (1 process) ≥ 0.5× rustiz on SQLite, wrk c32",
                      requests.get("sc_pg1", ""), requests.get("sc_sqlite1", ""), ">=", 0.5, "req/s"),
        _ratio_target("scheduler on PostgreSQL: 3 processes ≥ 2.5× 1 process",
                      rates.get("sched_pg3", ""), rates.get("sched_pg1", ""), ">=", 2.5, "posts/s"),
    ]


def main_table(data: Measurements) -> list:
    """The single-process (and --workers 2) load rows, with sizes, start-up and memory."""
    dur, ab_c, ab_n, rzpy = (data.scalar(name) for name in ("DUR", "AB_C", "AB_N", "RZPY"))
    lines = [f"GET {data.scalar('PATH_EP')} (Bearer key, empty DB, keep-alive). wrk -t1 -d{dur}s --latency; "
             f"ab -k -c {ab_c} -n {ab_n}. RSS summed over the server's processes (PSS too when there are several). "
             f"rustiz runs on {rzpy} -> {os.path.realpath(rzpy)}.", "",
             "| Server | .pyz bytes | Start-up median (range) | RSS 2 s | RSS after load | wrk c32 req/s | c32 p99 "
             "| wrk c64 req/s | c64 p99 | ab -k c32 req/s | ab p99 | errors |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in MAIN_ROWS:
        measured = data.startup_medians().get(row, "") or data.get("RPS32").get(row, "")
        if (row.startswith("base_") or row.endswith("_w2") or row == "floor") and not measured:
            continue  # not measured in this run
        cells = [data.get("LABEL").get(row, row), value(data.get("SIZE").get(row, "")), startup_cell(data, row),
                 mib(data.get("RSS0").get(row, "")), mib(data.get("RSS1").get(row, ""))]
        for rate, p99 in (("RPS32", "P99_32"), ("RPS64", "P99_64"), ("ABRPS", "ABP99")):
            cells += [value(data.get(rate).get(row, "")), ms(data.get(p99).get(row, ""))]
        cells.append(value(data.get("ERRS").get(row, "")))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def scheduler_line(data: Measurements) -> str:
    figures = parse_pairs(data.scalar("SCHED_RAW"))
    return (f"Scheduler (stdlib rustiz, webhook provider, zero-latency receiver): {figures.get('SCHED_RATE', '—')} "
            f"posts/s published ({figures.get('SCHED_POSTS', '0')} posts due at once); due-to-received delay median "
            f"{figures.get('SCHED_LATE_P50', '—')} ms, p99 {figures.get('SCHED_LATE_P99', '—')} ms over "
            f"{figures.get('SCHED_LATE_N', '0')} posts.")


def notes(data: Measurements) -> list:
    written = data.get("NOTES")
    return [f"- {written[index]}" for index in sorted(written, key=int)]


def partial_report(data: Measurements) -> list:
    """BENCH_MCP_ONLY / BENCH_SCALE_ONLY / BENCH_HOSTILE_ONLY: their sections and the notes."""
    lines = [""]
    if data.scalar("MCP_ONLY") == "1":
        lines += mcp_table(data)
    if data.scalar("SCALE_ONLY") == "1":
        lines += scale_table(data) + [""] + [target.line() for target in scale_targets(data)]
    if data.scalar("HOSTILE_ONLY") == "1":
        lines += hostile_lines(data)
    if data.get("NOTES"):
        lines += ["Notes:"] + notes(data)
    return lines


def full_report(data: Measurements, now: Optional[float] = None) -> list:
    """The whole report of a run: heading, tables, lines, targets, notes and the peers' versions."""
    now = time.time() if now is None else now
    quick = ", QUICK" if data.scalar("BENCH_QUICK") == "1" else ""
    lines = ["", f"### rustiz benchmark — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(now))}, "
                 f"{data.scalar('NPROC')} cores, Python {sys.version.split()[0]}{quick}", ""]
    lines += main_table(data) + [""]
    startup = data.startup_medians()
    if startup.get("rz_fast"):
        lines.append(f"Start-up of rustiz with uvloop+orjson (rustiz-speedups.pyz): {startup_cell(data, 'rz_fast')}.")
    if data.scalar("MAIN_ONLY") != "1":
        lines += [scheduler_line(data)] + mcp_table(data) + scale_table(data) + hostile_lines(data)
    lines += [""] + postiz_table(data) + [""]
    fast = data.scalar("SIZE_FAST")
    lines += [f"rustiz.pyz: {data.scalar('SIZE_PLAIN')} bytes; rustiz-speedups.pyz: "
              f"{fast + ' bytes' if fast else 'not built'}. Load average at start: {data.scalar('LOAD_START')} "
              "(other work on the machine skews every row).", ""]
    lines += [target.line() for target in targets(data)]
    if data.get("NOTES"):
        lines += ["", "Notes:"] + notes(data)
    elapsed = int(now) - int(data.scalar("T_BEGIN") or now)
    lines += ["", f"Peers: {data.scalar('PEERS')}. Raw output: .bench/results/. Took {elapsed} s."]
    return lines


def print_report(data: Measurements) -> int:
    """Print the run's report; its exit status: 1 only with BENCH_STRICT=1 and a target that FAILs."""
    if data.scalar("PARTIAL") == "1":
        print("\n".join(partial_report(data)))
        return 0
    print("\n".join(full_report(data)))
    failed = [target for target in targets(data) if not target.passes()]
    return 1 if failed and data.scalar("BENCH_STRICT") == "1" else 0


def main(argv: list) -> int:
    """`python3 -m bench.report .bench/results/measurements.tsv`: a run's report printed again."""
    if len(argv) != 1:
        print("usage: python3 -m bench.report MEASUREMENTS_FILE", file=sys.stderr)
        return 2
    return print_report(Measurements.read(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
