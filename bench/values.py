"""A run's measurements as bench.sh hands them over, and how each kind of figure is printed in the report.

Rules: standard library only; the printing keeps bench.sh's forms exactly ("—" for a figure not measured,
ratios with two decimals, memory in MiB with one), because the report's rows are compared run with run.
"""
from typing import Optional

NOT_MEASURED = "—"


class Measurements:
    """bench.sh's associative arrays (name -> key -> text) and its single values (name -> text)."""

    def __init__(self, arrays: dict, scalars: dict):
        self.arrays = arrays
        self.scalars = scalars

    @classmethod
    def parse(cls, text: str) -> "Measurements":
        """Lines `ARRAY<TAB>KEY<TAB>VALUE`, or `scalar<TAB>NAME<TAB>VALUE` for a single value."""
        arrays: dict = {}
        scalars: dict = {}
        for line in text.splitlines():
            parts = line.split("\t", 2)
            if len(parts) != 3:
                continue
            name, key, text_value = parts
            if name == "scalar":
                scalars[key] = text_value
            else:
                arrays.setdefault(name, {})[key] = text_value
        return cls(arrays, scalars)

    @classmethod
    def read(cls, path: str) -> "Measurements":
        with open(path, encoding="utf-8", errors="replace") as written:
            return cls.parse(written.read())

    def get(self, array: str) -> dict:
        """One array (empty when the run set none of it); a key it lacks reads as not measured."""
        return self.arrays.get(array, {})

    def scalar(self, name: str) -> str:
        return self.scalars.get(name, "")

    def startup_medians(self) -> dict:
        """Row -> the median of its cold starts, in whole ms."""
        return {row: startup_median(times) for row, times in self.get("SU_VALUES").items() if times.split()}


def _numbers(times: str) -> list:
    return sorted(float(number) for number in times.split())


def startup_median(times: str) -> str:
    """The median of the cold starts (ms, separated by spaces), in whole ms."""
    ordered = _numbers(times)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return f"{median:.0f}"


def startup_range(times: str) -> str:
    ordered = _numbers(times)
    return f"{ordered[0]:.0f}–{ordered[-1]:.0f}"


def startup_cell(data: Measurements, row: str) -> str:
    """"MEDIAN ms (LOW–HIGH)" of a row's cold starts, or "—"."""
    times = data.get("SU_VALUES").get(row, "")
    if not times.split():
        return NOT_MEASURED
    return f"{startup_median(times)} ms ({startup_range(times)})"


def value(text: str) -> str:
    return text if text else NOT_MEASURED


def ms(text: str) -> str:
    return f"{text} ms" if text and text != "?" else NOT_MEASURED


def _number(text: str) -> Optional[float]:
    try:
        return float(text)
    except ValueError:
        return None


def ratio(numerator: str, denominator: str) -> str:
    """NUMERATOR / DENOMINATOR with two decimals, or "" when either is missing or the denominator is 0."""
    top, bottom = _number(numerator), _number(denominator)
    if top is None or bottom is None or bottom == 0:
        return ""
    return f"{top / bottom:.2f}"


def ratio_times(numerator: str, denominator: str) -> str:
    """The ratio followed by "×", or "—"."""
    found = ratio(numerator, denominator)
    return f"{found}×" if found else NOT_MEASURED


def kib(memory: str) -> Optional[float]:
    """The first figure of "RSS NPROC PSS" (KiB), or None when there is none."""
    fields = memory.split()
    return _number(fields[0]) if fields else None


def mib(memory: str) -> str:
    """"RSS NPROC PSS" (KiB) -> "24.6 MiB", or "61.3 MiB (3 proc., PSS 40.2)" for a process tree."""
    fields = memory.split()
    resident = kib(memory)
    if not resident:
        return NOT_MEASURED
    text = f"{resident / 1024:.1f} MiB"
    processes = _number(fields[1]) if len(fields) > 1 else None
    if processes and processes > 1:
        proportional = _number(fields[2]) if len(fields) > 2 else None
        text += f" ({processes:.0f} proc." + (f", PSS {proportional / 1024:.1f}" if proportional and proportional > 0 else "") + ")"
    return text


def parse_pairs(line: str) -> dict:
    """"NAME=VALUE NAME=VALUE" (what the Python benches print last) as a dict."""
    return dict(pair.split("=", 1) for pair in line.split() if "=" in pair)
