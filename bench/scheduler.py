"""The scheduler line: bench/sched_bench.py on the stdlib rustiz.pyz: posts published per second to a
zero-latency receiver (1,000 webhook posts due at once) and how late 200 posts due 50 ms apart reach it.

Rules: standard library only. Run by bench.sh as `python3 -m bench.scheduler` (see bench/common.py):
records the scalar SCHED_RAW, sched_bench.py's last line, which bench/report.py words.
"""
import os
import sys

from bench.common import (Context, check_quiet, fresh_folder, last_error, last_line, log, note, record,
                          stop_on_sigterm)


def main() -> int:
    stop_on_sigterm()
    context = Context.from_environment()
    log("scheduler: 1,000 posts due at once, then 200 due one by one")
    check_quiet("scheduler")
    work = fresh_folder(os.path.join(context.bench_dir, "sched"))
    error_path = context.raw("sched.err")
    figures = last_line([context.rustiz_python, os.path.join(context.files, "sched_bench.py"), context.rustiz_python,
                         context.pyz, work], 300, error_path)
    if figures:
        record("scalar", "SCHED_RAW", figures)
    else:
        note(f"scheduler bench failed: {last_error(error_path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
