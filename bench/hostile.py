"""The hostile-clients line: bench/hostile_bench.py against the stdlib rustiz.pyz (and, with
BENCH_HOSTILE_BASELINE=/path/to/other.pyz, against that build too), each in a fresh data folder.

Rules: standard library only. Run by bench.sh as `python3 -m bench.hostile` (see bench/common.py): records
HOSTILE_RAW[this] (and [baseline]), hostile_bench.py's last line, which bench/report.py words.
"""
import os
import sys

from bench.common import (Context, check_quiet, fresh_folder, last_error, last_line, log, note, record,
                          stop_on_sigterm)


def hostile_row(context: Context, row: str, pyz: str) -> None:
    check_quiet(f"hostile clients ({row})")
    log(f"hostile clients: {pyz}")
    work = fresh_folder(os.path.join(context.bench_dir, f"hostile-{row}"))
    error_path = context.raw(f"hostile-{row}.err")
    figures = last_line([context.rustiz_python, os.path.join(context.files, "hostile_bench.py"), context.rustiz_python,
                         pyz, work], 120, error_path)
    if not figures:
        note(f"hostile clients ({row}) failed: {last_error(error_path)}")
        return
    record("HOSTILE_RAW", row, figures)


def main() -> int:
    stop_on_sigterm()
    context = Context.from_environment()
    hostile_row(context, "this", context.pyz)
    baseline = os.environ.get("BENCH_HOSTILE_BASELINE", "")
    if baseline:
        hostile_row(context, "baseline", baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
