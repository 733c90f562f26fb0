"""bench/: reading wrk's and ab's output, the report's figures and the targets' verdicts, without running a load;
and bench/ stays out of the .pyz."""
from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from bench import __main__ as bench_main
from bench import common, loadgen, mcp, postiz_prepare, report, sections, serving, values
from bench.values import Measurements

from conftest import ROOT

WRK_OUTPUT = """Running 2s test @ http://127.0.0.1:18080/public/v1/integrations
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.30ms    3.15ms  21.59ms   85.16%
    Req/Sec    11.56k     3.46k   17.50k    65.00%
  Latency Distribution
     50%    2.26ms
     75%    4.89ms
     90%    7.78ms
     99%  850.00us
  23098 requests in 2.01s, 2.73MB read
  Socket errors: connect 0, read 3, write 1, timeout 2
  Non-2xx or 3xx responses: 5
Requests/sec:  11479.50
Transfer/sec:      1.36MB
"""

AB_OUTPUT = """Concurrency Level:      32
Time taken for tests:   0.520 seconds
Complete requests:      10000
Failed requests:        2
Non-2xx responses:      3
Keep-Alive requests:    9990
Requests per second:    19230.77 [#/sec] (mean)
Percentage of the requests served within a certain time (ms)
  50%      1
  99%      7
 100%     12 (longest request)
"""


def test_wrk_summary_reads_rate_p99_and_every_error():
    assert loadgen.wrk_summary(WRK_OUTPUT) == ("11480", "0.85", 11, "")


def test_wrk_summary_of_a_run_that_printed_nothing_is_empty():
    assert loadgen.wrk_summary("unable to connect to 127.0.0.1:1 Connection refused\n") == ("", "", 0, "")


def test_wrk_latencies_convert_to_milliseconds_as_bench_sh_did():
    assert [loadgen.latency_ms(text) for text in ("850.00us", "1.23ms", "1.02s", "1.50m", "12")] == \
        ["0.85", "1.23", "1020.00", "90000.00", "?"]


def test_ab_summary_reads_rate_p99_errors_and_keep_alive():
    assert loadgen.ab_summary(AB_OUTPUT) == ("19231", "7", 5, "9990")


def test_loadgen_command_line_prints_one_line_for_the_shell(tmp_path):
    (tmp_path / "wrk.txt").write_text("nothing useful\n")
    answer = subprocess.run([sys.executable, "-m", "bench.loadgen", "wrk", str(tmp_path / "wrk.txt")], cwd=ROOT,
                            capture_output=True, text=True, timeout=30)
    assert answer.stdout == "- - 0 -\n"


def test_figures_print_as_bench_sh_printed_them():
    assert (values.value(""), values.value("12"), values.ms("?"), values.ms("1.5")) == ("—", "12", "—", "1.5 ms")
    assert (values.ratio("7", "2"), values.ratio("7", ""), values.ratio("7", "0")) == ("3.50", "", "")
    assert values.ratio_times("", "3") == "—" and values.ratio_times("3", "2") == "1.50×"
    assert values.mib("25190 1 0") == "24.6 MiB"
    assert values.mib("62771 3 41165") == "61.3 MiB (3 proc., PSS 40.2)"
    assert values.mib("") == "—" and values.mib("0 0 0") == "—"


def test_start_up_median_and_range_of_odd_and_even_series():
    assert (values.startup_median("30.2 12.4 20.6"), values.startup_range("30.2 12.4 20.6")) == ("21", "12–30")
    assert values.startup_median("10 20 31 40") == "26"


def measurements(**arrays) -> Measurements:
    """A run in which nginx, uvicorn and both rustiz builds were measured as ARRAYS say (the rest: defaults)."""
    defaults = {"RPS32": {"nginx": "40000", "floor": "30000", "uvicorn": "4000", "rz_std": "16000", "rz_fast": "20000"},
                "SU_VALUES": {"rz_std": "100 110 120", "uvicorn": "300 320 340"},
                "RSS0": {"rz_std": "18432 1 0"}, "RSS1": {"rz_std": "20480 1 0"}, "ERRS": {"rz_std": "0"}}
    scalars = arrays.pop("scalars", {})
    return Measurements({**defaults, **arrays}, {"SIZE_PLAIN": "600000", **scalars})


def verdicts(data: Measurements) -> list:
    return [line.split()[1] for line in (target.line() for target in report.targets(data))]


def test_targets_pass_when_every_figure_meets_them():
    lines = [target.line() for target in report.targets(measurements())]
    assert lines == [
        "- PASS  rustiz (uvloop+orjson) ≥ 3.5× uvicorn+starlette, wrk c32: 5.00× (20000 vs 4000 req/s)",
        "- PASS  rustiz (uvloop+orjson) ≥ 0.5× nginx ceiling, wrk c32: 0.50× (20000 vs 40000 req/s)",
        "- PASS  rustiz (stdlib only) ≥ 3.5× uvicorn+starlette, wrk c32: 4.00× (16000 vs 4000 req/s)",
        "- PASS  rustiz (stdlib only) ≥ 0.5× a do-nothing asyncio Protocol (Python's floor), wrk c32: 0.53× "
        "(16000 vs 30000 req/s)",
        "- PASS  start-up median (stdlib rustiz) ≤ 0.5× uvicorn+starlette's: 0.34× (110 vs 320 ms)",
        "- PASS  idle RSS (stdlib rustiz, 2 s after start) ≤ 20 MiB: 18.0 MiB",
        "- PASS  RSS after ab -k -c32 and the wrk loads (stdlib rustiz) ≤ 25 MiB: 20.0 MiB",
        "- PASS  failed requests under ab and wrk (stdlib rustiz) = 0: 0",
        "- PASS  rustiz.pyz ≤ 1024 KiB: 600000 bytes (585.9 KiB)"]


def test_a_target_not_measured_fails_and_says_so():
    data = measurements(RPS32={"nginx": "40000", "uvicorn": "4000", "rz_std": "16000"}, ERRS={"rz_std": "3"})
    lines = [target.line() for target in report.targets(data)]
    assert lines[0] == "- FAIL  rustiz (uvloop+orjson) ≥ 3.5× uvicorn+starlette, wrk c32: not measured"
    assert verdicts(data) == ["FAIL", "FAIL", "PASS", "FAIL", "PASS", "PASS", "PASS", "FAIL", "PASS"]


def test_targets_compare_the_rounded_ratio_and_the_size_limit_in_bytes():
    data = measurements(RPS32={"nginx": "40000", "floor": "59995", "uvicorn": "10000", "rz_std": "34996",
                               "rz_fast": "34996"}, RSS1={"rz_std": "25700 1 0"},
                        scalars={"SIZE_PLAIN": str(1024 * 1024 + 1)})
    assert verdicts(data) == ["PASS", "PASS", "PASS", "PASS", "PASS", "PASS", "FAIL", "PASS", "FAIL"]  # 3.4996: 3.50


def test_the_baseline_start_up_target_appears_only_with_a_baseline_build():
    data = measurements(SU_VALUES={"rz_std": "100", "uvicorn": "300", "rz_fast": "90", "base_fast": "80"},
                        scalars={"BASE_FAST_PYZ": "/tmp/main-speedups.pyz"})
    lines = [target.line() for target in report.targets(data)]
    assert len(lines) == 10
    assert lines[5] == "- FAIL  start-up median (uvloop+orjson) no worse than the baseline's: 1.12× (90 vs 80 ms)"


def test_strict_mode_exits_1_only_when_a_target_fails(tmp_path):
    written = tmp_path / "measurements.tsv"
    written.write_text("RPS32\tuvicorn\t5000\nscalar\tBENCH_STRICT\t1\n")
    answer = subprocess.run([sys.executable, "-m", "bench.report", str(written)], cwd=ROOT, capture_output=True,
                            text=True, timeout=30)
    assert answer.returncode == 1 and "- FAIL  rustiz.pyz ≤ 1024 KiB: not measured" in answer.stdout


def test_main_table_keeps_unmeasured_peers_and_drops_unmeasured_extra_rows():
    data = measurements(LABEL={"rz_std": "rustiz, stdlib (RUSTIZ_NO_SPEEDUPS=1)"}, SIZE={"rz_std": "600000"},
                        P99_32={"rz_std": "1.25"}, ERRS={"rz_std": "0"}, RPS32={"rz_std": "16000"},
                        scalars={"PATH_EP": "/public/v1/integrations", "DUR": "5", "RZPY": sys.executable})
    rows = [line for line in report.main_table(data) if line.startswith("| ") and "Server" not in line]
    assert [row.split(" | ")[0] for row in rows] == ["| nginx", "| uvicorn", "| rustiz, stdlib (RUSTIZ_NO_SPEEDUPS=1)",
                                                     "| rz_fast"]
    assert rows[2] == ("| rustiz, stdlib (RUSTIZ_NO_SPEEDUPS=1) | 600000 | 110 ms (100–120) | 18.0 MiB | 20.0 MiB | 16000 "
                       "| 1.25 ms | — | — | — | — | 0 |")


def test_measurements_file_round_trip_and_the_partial_report():
    text = ("LABEL\trz_std\trustiz, stdlib\nMCP_RPS\trz_std\t9000\nMCP_REST_RPS\trz_std\t12000\nMCP_P99\trz_std\t3.10\n"
            "HOSTILE_RAW\tthis\tHOSTILE_PEAK_RSS=31 HOSTILE_HEALTH_P99=12 HOSTILE_HEALTH_N=380 HOSTILE_HEALTH_FAILS=0 "
            "HOSTILE_CONNECTIONS=5100 HOSTILE_SECONDS=20\nNOTES\t1\tsecond\nNOTES\t0\tfirst\n"
            "scalar\tPARTIAL\t1\nscalar\tMCP_ONLY\t1\nscalar\tHOSTILE_ONLY\t1\nscalar\tDUR\t2\n")
    lines = report.partial_report(Measurements.parse(text))
    assert "| rustiz, stdlib | 9000 | 3.10 ms | 12000 | — | 0.75 |" in lines
    assert lines[-3:] == ["Notes:", "- first", "- second"]
    assert lines[-4].endswith("peak RSS 31 MiB; /health p99 12 ms over 380 probes (0 failed); "
                              "5100 connections opened in 20 s.")


def test_scale_table_only_when_measured_and_ratios_to_sqlite():
    assert sections.scale_table(Measurements({}, {})) == []
    data = Measurements({"SC_RPS": {"sc_sqlite1": "10000", "sc_pg1": "4000"}, "SC_RATE": {"sched_sqlite1": "200"}},
                        {"PATH_EP": "/public/v1/integrations", "PGPY": "/x/python"})
    lines = sections.scale_table(data)
    assert "| PostgreSQL, 1 process | 4000 | — | 0.40× |" in lines
    assert "| PostgreSQL, 3 processes | — | —× |" in lines


def test_postgresql_targets_only_when_the_postgresql_rows_ran():
    assert len(report.targets(measurements())) == 9
    data = measurements(SC_RPS={"sc_sqlite1": "10000", "sc_pg1": "6000", "sc_peer_pg": "2500"},
                        SC_RATE={"sched_pg1": "116", "sched_pg3": "290"})
    assert [target.line() for target in report.targets(data)][9:] == [
        "- PASS  rustiz on PostgreSQL (1 process) ≥ 2× uvicorn+starlette+psycopg_pool, wrk c32: 2.40× (6000 vs 2500 req/s)",
        "- PASS  rustiz on PostgreSQL (1 process) ≥ 0.5× rustiz on SQLite, wrk c32: 0.60× (6000 vs 10000 req/s)",
        "- PASS  scheduler on PostgreSQL: 3 processes ≥ 2.5× 1 process: 2.50× (290 vs 116 posts/s)"]


def test_postgresql_targets_fail_below_their_ratios_or_when_a_row_is_missing():
    data = measurements(SC_RPS={"sc_sqlite1": "10000", "sc_pg1": "4900", "sc_peer_pg": "2450"},
                        SC_RATE={"sched_pg1": "116", "sched_pg3": "289"})
    assert verdicts(data)[9:] == ["PASS", "FAIL", "FAIL"]  # 2.00×; 0.49×; 2.49×
    data = measurements(SC_RPS={"sc_sqlite1": "10000", "sc_pg1": "6000"})
    lines = [target.line() for target in report.targets(data)][9:]
    assert lines[0] == ("- FAIL  rustiz on PostgreSQL (1 process) ≥ 2× uvicorn+starlette+psycopg_pool, wrk c32: "
                        "not measured")
    assert lines[2] == "- FAIL  scheduler on PostgreSQL: 3 processes ≥ 2.5× 1 process: not measured"


def test_the_postgresql_only_report_prints_the_peer_row_and_the_targets():
    text = ("SC_RPS\tsc_sqlite1\t10000\nSC_RPS\tsc_pg1\t3000\nSC_RPS\tsc_peer_pg\t2000\nSC_RATE\tsched_pg1\t116\n"
            "SC_RATE\tsched_pg3\t188\nscalar\tPARTIAL\t1\nscalar\tSCALE_ONLY\t1\n"
            "scalar\tPGPEER\tuvicorn 0.55.0, psycopg-pool 3.3.3\n")
    lines = report.partial_report(Measurements.parse(text))
    assert "| uvicorn+starlette+psycopg_pool (8 connections), PostgreSQL, 1 process | 2000 | — | 0.20× |" in lines
    assert any("the same-work peer (uvicorn 0.55.0, psycopg-pool 3.3.3) reads the same database" in line for line in lines)
    assert lines[-3:] == [
        "- FAIL  rustiz on PostgreSQL (1 process) ≥ 2× uvicorn+starlette+psycopg_pool, wrk c32: 1.50× (3000 vs 2000 req/s)",
        "- FAIL  rustiz on PostgreSQL (1 process) ≥ 0.5× rustiz on SQLite, wrk c32: 0.30× (3000 vs 10000 req/s)",
        "- FAIL  scheduler on PostgreSQL: 3 processes ≥ 2.5× 1 process: 1.62× (188 vs 116 posts/s)"]


def test_postiz_table_says_when_postiz_was_not_measured():
    assert sections.postiz_table(Measurements({}, {})) == []
    assert sections.postiz_table(Measurements({}, {"BENCH_POSTIZ": "1"}))[-1].startswith("Postiz (BENCH_POSTIZ=1): not measured")


def test_the_wrk_script_posts_the_body_the_mcp_rows_check():
    assert f"wrk.body = '{mcp.MCP_BODY}'" in (ROOT / "bench" / "mcp_call.lua").read_text()


def test_bench_package_is_not_packed_into_the_pyz(pyz):
    with zipfile.ZipFile(pyz) as archive:
        assert not [name for name in archive.namelist() if name.startswith("bench/")]


def test_a_measuring_module_reads_the_run_bench_sh_hands_over():
    context = common.Context.from_environment({
        "BENCH_DIR": "/b", "BENCH_RESULTS": "/b/results", "BENCH_RZPY": "/b/rzpy/bin/python", "BENCH_PYZ": "/d/rustiz.pyz",
        "BENCH_PYZ_FAST": "/d/rustiz-speedups.pyz", "BENCH_FAST_OK": "0", "BENCH_KEY": "k", "BENCH_DUR": "2",
        "BENCH_NEXT_PORT": "18085", "BENCH_RZ_ENV": "RUSTIZ_CONFIG=/b/data/config.env\nAPI_LIMIT=0\n",
        "BENCH_LABELS": "rz_std\trustiz, stdlib (RUSTIZ_NO_SPEEDUPS=1)\n"})
    assert context.pyz_fast is None and context.duration == 2 and context.first_port == 18085
    assert context.rustiz_env == {"RUSTIZ_CONFIG": "/b/data/config.env", "API_LIMIT": "0"}
    assert context.labels == {"rz_std": "rustiz, stdlib (RUSTIZ_NO_SPEEDUPS=1)"}
    assert context.raw("rz_std.ab.txt") == "/b/results/rz_std.ab.txt"


def test_wrk_error_lines_are_quoted_squeezed_and_joined(tmp_path):
    (tmp_path / "wrk.txt").write_text(WRK_OUTPUT)
    assert common.wrk_errors_text(str(tmp_path / "wrk.txt")) == \
        " Socket errors: connect 0, read 3, write 1, timeout 2; Non-2xx or 3xx responses: 5"


def test_postiz_schema_gets_the_engine_free_generator():
    schema = 'generator client {\n  provider = "prisma-client-js"\n}\n'
    assert postiz_prepare.engine_free_schema(schema) == \
        'generator client {\n  provider = "prisma-client-js"\n  engineType = "client"\n}\n'
    with pytest.raises(postiz_prepare.Skipped):
        postiz_prepare.engine_free_schema('generator client {\n  provider = "prisma-client"\n}\n')


def test_postiz_service_gets_the_pg_adapter():
    service = ("import { PrismaClient } from '@prisma/client';\nexport class PrismaService extends PrismaClient {\n"
               "  constructor() {\n    super({\n      log: [],\n    });\n  }\n}\n")
    changed = postiz_prepare.service_with_adapter(service)
    assert "import { PrismaPg } from '@prisma/adapter-pg';\n" in changed
    assert "    super({\n      adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL }),\n      log: []," in changed
    with pytest.raises(postiz_prepare.Skipped):
        postiz_prepare.service_with_adapter("export class Other {}\n")


def test_the_nginx_template_is_filled_with_the_run_folder_and_port(tmp_path):
    context = common.Context.from_environment({"BENCH_DIR": str(tmp_path), "BENCH_RESULTS": str(tmp_path), "BENCH_RZPY": "py",
                                               "BENCH_PYZ": "x.pyz", "BENCH_KEY": "k", "BENCH_DUR": "2"})
    rows = serving.Rows(context, {"BENCH_CONFIG": "c", "BENCH_PEER_PYTHON": "p", "BENCH_NGINX": "/usr/sbin/nginx"})
    command, _ = rows.nginx_ceiling(18099)
    written = (tmp_path / "nginx" / "nginx.conf").read_text()
    assert "listen 127.0.0.1:18099;" in written and f"pid {tmp_path}/nginx/nginx.pid;" in written and "@" not in written
    assert command[:3] == ["/usr/sbin/nginx", "-p", str(tmp_path / "nginx")]


def test_the_run_hands_its_settings_labels_notes_and_module_lines_to_the_report(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_main, "RESULTS", str(tmp_path))
    run = bench_main.Run(True)
    (tmp_path / "rustiz.pyz").write_bytes(b"x" * 10)
    run.pyz, run.pyz_fast, run.fast_built, run.rustiz_python = str(tmp_path / "rustiz.pyz"), "", False, "/py"
    run.notes.append("first")
    run.measured.append("MCP_RPS\trz_std\t9000")
    data = bench_main.measurements(run, True)
    assert data.get("SIZE")["rz_std"] == "10" and data.get("MCP_RPS") == {"rz_std": "9000"}
    assert data.scalar("PARTIAL") == "1" and data.scalar("SIZE_PLAIN") == "10" and data.get("NOTES") == {"0": "first"}
    assert data.get("LABEL")["rz_std"] == "rustiz, stdlib (RUSTIZ_NO_SPEEDUPS=1)"
    assert Measurements.read(str(tmp_path / "measurements.tsv")).get("MCP_RPS") == {"rz_std": "9000"}


def test_request_cost_feeds_keyed_gets_through_the_connection_and_every_one_is_answered_200():
    """bench/request_cost.py drives HttpConnection without sockets: it must keep doing so as the server changes
    (a request it sends that is refused would measure the refusal, not the answer)."""
    finished = subprocess.run([sys.executable, "-c", (
        "import sys; sys.argv = ['x']; from bench import request_cost as cost; "
        "cost.DroppingTransport.write = lambda self, data: sys.stdout.write(data[:12].decode() + '\\n'); "
        f"cost.measure({str(ROOT)!r}, 16, 1)")], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.splitlines() == ["HTTP/1.1 200"] * (2000 + 16)
