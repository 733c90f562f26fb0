"""The hostile-clients line: bench/hostile_bench.py against the stdlib rustiz.pyz (and, with
BENCH_HOSTILE_BASELINE=/path/to/other.pyz, against that build too), each in a fresh data folder.

Rules: standard library only. Run by bench.sh as `python3 -m bench.hostile` (see bench/common.py): records
HOSTILE_RAW[this] (and [baseline]), hostile_bench.py's last line, which bench/report.py words.
"""
import os
import shutil
import subprocess
import sys

from bench.common import Context, check_quiet, log, note, record, stop_on_sigterm


def hostile_row(context: Context, row: str, pyz: str) -> None:
    check_quiet(f"hostile clients ({row})")
    log(f"hostile clients: {pyz}")
    work = os.path.join(context.bench_dir, f"hostile-{row}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    error_path = context.raw(f"hostile-{row}.err")
    with open(error_path, "wb") as errors:
        try:
            finished = subprocess.run(["timeout", "120", context.rustiz_python, os.path.join(context.files, "hostile_bench.py"),
                                       context.rustiz_python, pyz, work], stdout=subprocess.PIPE, stderr=errors)
            lines = finished.stdout.decode("utf-8", "replace").splitlines()
        except OSError as error:
            lines = []
            errors.write(str(error).encode())
    if not lines or not lines[-1]:
        with open(error_path, encoding="utf-8", errors="replace") as written:
            last = (written.read().splitlines() or [""])[-1]
        note(f"hostile clients ({row}) failed: {last}")
        return
    record("HOSTILE_RAW", row, lines[-1])


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
