"""What the load generators printed, read: wrk's and ab's summaries as requests/s, p99 (ms) and errors.

Rules: standard library only; each reader takes the tool's whole output as text and returns what it
found ("" for a figure the output lacks, as bench.sh's awk printed nothing). The command line serves
bench.sh: `python3 -m bench.loadgen wrk|ab FILE` prints the figures on one line, separated by spaces
("-" for a missing one), for the shell to read.
"""
import re
import sys
from typing import NamedTuple


class LoadSummary(NamedTuple):
    """One load run: requests/s (whole number), p99 in ms, failed or non-2xx requests, and (ab only) how
    many requests reused a kept-alive connection."""
    requests_per_second: str
    p99_ms: str
    errors: int
    keep_alive_requests: str = ""


def latency_ms(text: str) -> str:
    """wrk's latency ("850.00us", "1.23ms", "1.02s", "1.50m") in milliseconds with two decimals; "?" when
    the unit is unknown."""
    for unit, factor in (("us", 0.001), ("ms", 1.0), ("m", 60000.0), ("s", 1000.0)):
        if text.endswith(unit):
            try:
                return f"{float(text[:-len(unit)]) * factor:.2f}"
            except ValueError:
                return "?"
    return "?"


def _fields_after(output: str, prefix: str, index: int) -> list:
    """Field INDEX (0-based, split on blanks) of every line that starts with PREFIX."""
    return [line.split()[index] for line in output.splitlines()
            if line.startswith(prefix) and len(line.split()) > index]


def _percentile_99(output: str) -> str:
    found = [line.split()[1] for line in output.splitlines() if line.split()[:1] == ["99%"] and len(line.split()) > 1]
    return found[-1] if found else ""


def _whole(number: str) -> str:
    return f"{float(number):.0f}" if number else ""


def wrk_summary(output: str) -> LoadSummary:
    """`wrk --latency`'s summary: Requests/sec, the 99% latency, and non-2xx responses plus socket errors."""
    rates = _fields_after(output, "Requests/sec:", 1)
    p99 = _percentile_99(output)
    errors = sum(int(line.split()[-1]) for line in output.splitlines() if "Non-2xx or 3xx responses:" in line)
    for line in output.splitlines():
        if "Socket errors:" in line:  # Socket errors: connect 0, read 0, write 0, timeout 0
            errors += sum(int(count) for count in re.findall(r"(?:connect|read|write|timeout) (\d+)", line))
    return LoadSummary(_whole(rates[-1] if rates else ""), latency_ms(p99) if p99 else "", errors)


def ab_summary(output: str) -> LoadSummary:
    """ab's summary: Requests per second, the 99% line (already in ms), failed plus non-2xx requests, and
    the keep-alive requests."""
    rates = _fields_after(output, "Requests per second:", 3)
    errors = sum(int(count) for count in _fields_after(output, "Failed requests:", 2) + _fields_after(output, "Non-2xx responses:", 2))
    kept = _fields_after(output, "Keep-Alive requests:", 2)
    return LoadSummary(_whole(rates[-1] if rates else ""), _percentile_99(output), errors, kept[-1] if kept else "")


def main(argv: list) -> int:
    """`wrk FILE` or `ab FILE`: the summary on one line, "-" for a figure that is missing."""
    if len(argv) != 2 or argv[0] not in ("wrk", "ab"):
        print("usage: python3 -m bench.loadgen wrk|ab FILE", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8", errors="replace") as raw:
            output = raw.read()
    except OSError:
        output = ""
    summary = (wrk_summary if argv[0] == "wrk" else ab_summary)(output)
    print(" ".join(str(field) if field != "" else "-" for field in summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
