"""`python3 -m bench` (what ./bench.sh runs): the whole run. Sets the machine up (the tools, the peer's venv,
rustiz's bare venv, the C poller, the builds, one initialised data folder), runs the measuring modules one
after the other, and prints bench/report.py's report.

Rules: standard library only, on the python3 bench.sh found (never a shim); the options are bench.sh's
BENCH_* variables (its header lists them). Each measuring module runs as a process of its own
(`python3 -m bench.NAME`, see bench/common.py), so that an interrupted run stops it, and it its servers, at
once. Raw outputs go to .bench/results/, the measurements handed to the report too (measurements.tsv).
"""
import hashlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from typing import Optional

from bench import report
from bench.common import api_key, last_error, read_text
from bench.values import Measurements

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_DIR = os.path.join(ROOT, ".bench")
RESULTS = os.path.join(BENCH_DIR, "results")
FILES = os.path.join(ROOT, "bench")
SERVER_TTL = 300  # hard cap on any one server's lifetime (s)
PEER_PACKAGES = ["uvicorn[standard]", "starlette", "uvloop", "orjson"]
LABELS = {"rz_std": "rustiz, stdlib (RUSTIZ_NO_SPEEDUPS=1)", "rz_fast": "rustiz, uvloop+orjson",
          "uvicorn": "uvicorn+starlette (uvloop+httptools)"}


class Failed(Exception):
    """The run cannot go on (bench.sh's exit status 2)."""


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def flag(name: str) -> bool:
    return os.environ.get(name, "0") == "1"


def quiet_run(command: list, seconds: int, log_name: str, append: bool = False, env: Optional[dict] = None) -> bool:
    """COMMAND under timeout(1), its output in .bench/results/LOG_NAME; True when it succeeded."""
    with open(os.path.join(RESULTS, log_name), "ab" if append else "wb") as output:
        return subprocess.run(["timeout", str(seconds), *command], stdout=output, stderr=subprocess.STDOUT,
                              env=env).returncode == 0


class Run:
    """One run: its settings, what it set up, its notes and what its modules measured."""

    def __init__(self, partial: bool):
        quick = flag("BENCH_QUICK")
        self.duration, self.starts, self.ab_requests = (2, 3, 10000) if quick else (5, 7, 40000)
        self.partial = partial
        self.notes: list = []
        self.measured: list = []  # ARRAY<TAB>KEY<TAB>VALUE lines
        self.module: Optional[subprocess.Popen] = None
        self.began = int(time.time())
        with open("/proc/loadavg") as load:
            self.load_start = " ".join(load.read().split()[:3])

    def note(self, message: str) -> None:
        self.notes.append(message)
        log(f"note: {message}")

    def tools(self) -> None:
        """wrk, ab, nginx, cc and curl, from Debian when they are missing and this may install."""
        missing = [] if shutil.which("wrk") else ["wrk"]
        self.nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        if not self.partial:  # the MCP, PostgreSQL and hostile-clients rows need neither ab, nginx nor the peer
            missing += ([] if shutil.which("ab") else ["apache2-utils"]) + ([] if os.access(self.nginx, os.X_OK) else ["nginx"])
        missing += ([] if shutil.which("cc") else ["gcc", "libc6-dev"]) + ([] if shutil.which("curl") else ["curl"])
        if not missing:
            return
        if flag("BENCH_NO_INSTALL") or os.getuid() != 0 or not shutil.which("apt-get"):
            raise Failed(f"missing tools; install them with: sudo apt-get install {' '.join(missing)}")
        log(f"installing from Debian: {' '.join(missing)}")
        if not quiet_run(["apt-get", "update", "-qq"], 300, "apt.log"):
            raise Failed(f"apt-get update failed (see {RESULTS}/apt.log)")
        if not quiet_run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], 600, "apt.log", True,
                         {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}):
            raise Failed(f"apt-get install failed (see {RESULTS}/apt.log)")
        self.nginx = shutil.which("nginx") or "/usr/sbin/nginx"

    def interpreters(self) -> None:
        """The peer's venv (uvicorn[standard], starlette, uvloop, orjson) and rustiz's bare one: its python is a
        symlink to the real binary, and like the peer's venv it does not run the base install's site-packages/*.pth
        files (on this kind of machine one of them imports certifi at every start-up, ~30 ms that no user's python3
        would pay). BENCH_PYTHON_RAW=1 runs rustiz with this python itself."""
        venv = os.path.join(BENCH_DIR, "venv")
        self.peer_python = os.path.join(venv, "bin", "python")
        ready = subprocess.run(["timeout", "60", self.peer_python, "-c", "import uvicorn, starlette, uvloop, httptools, orjson"],
                               capture_output=True).returncode == 0 if os.path.exists(self.peer_python) else False
        if not self.partial and not ready:
            if flag("BENCH_NO_INSTALL"):
                raise Failed(f"missing peer venv; create it with: {sys.executable} -m venv {venv} && {self.peer_python} "
                             "-m pip install 'uvicorn[standard]' starlette uvloop orjson")
            log(f"creating {venv} (uvicorn[standard], starlette, uvloop, orjson)")
            if not quiet_run([sys.executable, "-m", "venv", venv], 120, "venv.log"):
                raise Failed("venv creation failed")
            if not quiet_run([self.peer_python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *PEER_PACKAGES],
                             600, "pip.log"):
                raise Failed(f"pip install failed (see {RESULTS}/pip.log)")
        self.rustiz_python = sys.executable
        if not flag("BENCH_PYTHON_RAW"):
            bare = os.path.join(BENCH_DIR, "rzpy")
            if not os.access(os.path.join(bare, "bin", "python"), os.X_OK) and not quiet_run(
                    [sys.executable, "-m", "venv", "--without-pip", bare], 120, "rzpy.log"):
                raise Failed(f"could not create {bare}")
            self.rustiz_python = os.path.join(bare, "bin", "python")

    def poller(self) -> None:
        """.bench/poller, compiled again when bench/poller.c changed; the peer app's bytecode, as pip gave the packages'."""
        source, copy, self.poller_path = (os.path.join(FILES, "poller.c"), os.path.join(BENCH_DIR, "poller.c"),
                                          os.path.join(BENCH_DIR, "poller"))
        if read_text(source) != read_text(copy) or not os.access(self.poller_path, os.X_OK):
            shutil.copyfile(source, copy)
            if subprocess.run(["timeout", "60", "cc", "-O2", "-Wall", "-o", self.poller_path, copy]).returncode != 0:
                raise Failed(f"could not compile {copy}")
        if os.path.exists(self.peer_python):
            subprocess.run([self.peer_python, "-m", "py_compile", os.path.join(FILES, "peer_app.py")], capture_output=True)

    def builds(self) -> None:
        """dist/rustiz.pyz (stdlib only) and dist/rustiz-speedups.pyz (--with-speedups), unless BENCH_NO_BUILD=1."""
        self.pyz, self.pyz_fast = os.path.join(ROOT, "dist", "rustiz.pyz"), os.path.join(ROOT, "dist", "rustiz-speedups.pyz")
        if not flag("BENCH_NO_BUILD"):
            if not os.path.isfile(os.path.join(ROOT, "build_zipapp.py")):
                raise Failed(f"no build_zipapp.py in {ROOT}")
            log(f"building {self.pyz}")
            if not quiet_run([sys.executable, "build_zipapp.py"], 300, "build.log"):
                raise Failed(f"build failed (see {RESULTS}/build.log)")
            log(f"building {self.pyz_fast} (--with-speedups)")
            if os.path.exists(self.pyz_fast):
                os.remove(self.pyz_fast)
            if not quiet_run([sys.executable, "build_zipapp.py", "--with-speedups", "--output", self.pyz_fast], 600,
                             "build-speedups.log"):
                last = last_error(os.path.join(RESULTS, "build-speedups.log"))
                self.note(f"the --with-speedups build failed: {last} (full log: .bench/results/build-speedups.log); "
                          "its rows are not measured")
        if not os.path.isfile(self.pyz):
            raise Failed(f"missing {self.pyz}")
        self.fast_built = os.path.isfile(self.pyz_fast)

    def data(self) -> None:
        """`rustiz init` into .bench/data: every server reads that same config.env / SQLite DB and uses its key."""
        folder = os.path.join(BENCH_DIR, "data")
        shutil.rmtree(folder, ignore_errors=True)
        if not quiet_run([self.rustiz_python, self.pyz, "init", "--dir", folder], 60, "init.log"):
            raise Failed(f"rustiz init failed (see {RESULTS}/init.log)")
        self.config = os.path.join(folder, "config.env")
        if not os.path.isfile(self.config):
            raise Failed(f"rustiz init made no {self.config}")
        self.key = api_key(self.config)
        if not self.key:
            raise Failed(f"no RUSTIZ_API_KEY in {self.config}")
        # XDG_CACHE_HOME: where rustiz-speedups.pyz unpacks its wheels; emptied per run, so the first cold start of
        # that .pyz includes the unpacking (shows in its range). The limits are off: the rows measure serving, and one
        # key's 32 clients would hit them at once (RUSTIZ_MCP_TOOL_LIMIT allows one key 60 tool calls a minute).
        shutil.rmtree(os.path.join(BENCH_DIR, "cache"), ignore_errors=True)
        self.rustiz_env = {"RUSTIZ_CONFIG": self.config, "HOST": "127.0.0.1", "REQUEST_LIMIT": "0", "API_LIMIT": "0",
                           "RUSTIZ_MCP_TOOL_LIMIT": "0", "RUSTIZ_MCP_POST_LIMIT": "0",
                           "XDG_CACHE_HOME": os.path.join(BENCH_DIR, "cache")}
        self.base_env = dict(self.rustiz_env)

    def baseline(self) -> None:
        """BENCH_BASELINE_PYZ / BENCH_BASELINE_FAST_PYZ: a database of the baseline's own, made by itself (an older
        build refuses a database that this build migrated further), holding the same API key."""
        builds = [path for path in (os.environ.get("BENCH_BASELINE_PYZ", ""), os.environ.get("BENCH_BASELINE_FAST_PYZ", ""))
                  if path]
        for path in builds:
            if not os.path.isfile(path):
                raise Failed(f"no baseline build at {path}")
        if not builds:
            return
        folder = os.path.join(BENCH_DIR, "base-data")
        shutil.rmtree(folder, ignore_errors=True)
        if not quiet_run([self.rustiz_python, builds[0], "init", "--dir", folder], 60, "base-init.log"):
            raise Failed(f"the baseline's rustiz init failed (see {RESULTS}/base-init.log)")
        database = sqlite3.connect(os.path.join(folder, "rustiz.db"))
        database.execute("UPDATE organization SET api_key_hash = ?", (hashlib.sha256(self.key.encode()).hexdigest(),))
        database.commit()
        database.close()
        self.base_env["RUSTIZ_DATABASE"] = os.path.join(folder, "rustiz.db")

    def labels(self) -> dict:
        return {**LABELS, "base_std": f"baseline {os.path.basename(os.environ.get('BENCH_BASELINE_PYZ') or 'none')}, stdlib",
                "base_fast": f"baseline {os.path.basename(os.environ.get('BENCH_BASELINE_FAST_PYZ') or 'none')}, uvloop+orjson"}

    def module_env(self) -> dict:
        """The run's context, as bench/common.py's Context reads it."""
        def lines(pairs: dict, separator: str) -> str:
            return "".join(f"{name}{separator}{value}\n" for name, value in pairs.items())
        return {**os.environ, "BENCH_DIR": BENCH_DIR, "BENCH_RESULTS": RESULTS, "BENCH_RZPY": self.rustiz_python,
                "BENCH_PYZ": self.pyz, "BENCH_PYZ_FAST": self.pyz_fast, "BENCH_FAST_OK": "1" if self.fast_built else "0",
                "BENCH_KEY": self.key, "BENCH_DUR": str(self.duration), "BENCH_NEXT_PORT": os.environ.get("BENCH_PORT", "18080"),
                "BENCH_SERVER_TTL": str(SERVER_TTL), "BENCH_RZ_ENV": lines(self.rustiz_env, "="),
                "BENCH_BASE_ENV": lines(self.base_env, "="), "BENCH_POLLER": self.poller_path,
                "BENCH_STARTS": str(self.starts), "BENCH_AB_N": str(self.ab_requests), "BENCH_CONFIG": self.config,
                "BENCH_PEER_PYTHON": self.peer_python, "BENCH_NGINX": self.nginx, "BENCH_LABELS": lines(self.labels(), "\t")}

    def run_module(self, name: str) -> None:
        """`python3 -m bench.NAME`: its notes join the run's, its figures the measurements."""
        output_path = os.path.join(RESULTS, f"module-{name}.out")
        with open(output_path, "wb") as output:
            self.module = subprocess.Popen([sys.executable, "-m", f"bench.{name}"], stdout=output, cwd=ROOT,
                                           env=self.module_env())
            status = self.module.wait()
            self.module = None
        if status != 0:
            self.note(f"bench/{name}.py exited {status} (see {output_path})")
        for line in read_text(output_path).splitlines():
            if line.startswith("note\t"):
                self.notes.append(line[len("note\t"):])  # (the module logged it already)
            elif line:
                self.measured.append(line)

    def stop_module(self) -> None:
        if self.module is not None:
            self.module.terminate()
            self.module.wait()


def peers(run: Run) -> str:
    """The peers' and load generators' versions, for the report's last line."""
    def output(command: list) -> str:
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return (done.stdout + done.stderr).strip()
    versions = output([run.peer_python, "-c", "import importlib.metadata as m; print(', '.join(f'{p} {m.version(p)}' for p in "
                                              "('uvicorn', 'starlette', 'uvloop', 'httptools')))"])
    nginx = output([run.nginx, "-v"]).replace("nginx version: ", "")
    wrk = " ".join((output(["wrk", "--version"]).splitlines() or [""])[0].split()[:2])
    return f"{versions}; {nginx}; {wrk}"


def measurements(run: Run, partial: bool) -> Measurements:
    """What the report reads: the run's settings, labels, sizes and notes, then every module's figures."""
    size_plain = str(os.path.getsize(run.pyz))
    size_fast = str(os.path.getsize(run.pyz_fast)) if run.fast_built else ""
    sizes = {"rz_std": size_plain, "rz_std_w2": size_plain, "rz_fast": size_fast, "rz_fast_w2": size_fast}
    for row, name in (("base_std", "BENCH_BASELINE_PYZ"), ("base_fast", "BENCH_BASELINE_FAST_PYZ")):
        if os.environ.get(name):
            sizes[row] = str(os.path.getsize(os.environ[name]))
    scalars = {"DUR": run.duration, "AB_C": 32, "AB_N": run.ab_requests, "STARTS": run.starts,
               "PATH_EP": "/public/v1/integrations", "RZPY": run.rustiz_python, "NPROC": len(os.sched_getaffinity(0)),
               "LOAD_START": run.load_start, "T_BEGIN": run.began, "SIZE_PLAIN": size_plain, "SIZE_FAST": size_fast,
               "PARTIAL": "1" if partial else "0", "BASE_FAST_PYZ": os.environ.get("BENCH_BASELINE_FAST_PYZ", ""),
               "PEERS": "" if partial else peers(run),
               **{name: os.environ.get(f"BENCH_{name}", "0") for name in ("MCP_ONLY", "SCALE_ONLY", "HOSTILE_ONLY", "MAIN_ONLY")},
               **{name: os.environ.get(name, "") for name in ("BENCH_QUICK", "BENCH_STRICT", "BENCH_POSTIZ",
                                                               "BENCH_HOSTILE_BASELINE")}}
    lines = [f"LABEL\t{row}\t{label}" for row, label in run.labels().items()]
    lines += [f"SIZE\t{row}\t{size}" for row, size in sizes.items()]
    lines += [f"NOTES\t{index}\t{text}" for index, text in enumerate(run.notes)]
    lines += [f"scalar\t{name}\t{value}" for name, value in scalars.items()] + run.measured
    text = "".join(line + "\n" for line in lines)
    with open(os.path.join(RESULTS, "measurements.tsv"), "w", encoding="utf-8") as written:
        written.write(text)
    return Measurements.parse(text)


def measure(run: Run, partial: bool) -> None:
    """The modules, in bench.sh's order: start-up before anything loads the machine, Postiz's build before any
    measurement and its rows after every other."""
    if partial:
        for name in ("mcp", "scale", "hostile"):
            if flag(f"BENCH_{name.upper()}_ONLY"):
                run.run_module(name)
        return
    if flag("BENCH_POSTIZ"):
        run.run_module("postiz_prepare")
    run.run_module("serving")
    if not flag("BENCH_MAIN_ONLY"):
        for name in ("mcp", "scheduler", "scale", "hostile"):
            run.run_module(name)
    if flag("BENCH_POSTIZ"):
        run.run_module("postiz")


def interrupted(number: int, frame: object) -> None:
    """SIGTERM ends the run as Ctrl-C does: the running module is stopped, and with it its servers."""
    raise KeyboardInterrupt


def main() -> int:
    os.makedirs(RESULTS, exist_ok=True)
    signal.signal(signal.SIGTERM, interrupted)
    partial = flag("BENCH_MCP_ONLY") or flag("BENCH_HOSTILE_ONLY") or flag("BENCH_SCALE_ONLY")
    run = Run(partial)
    try:
        run.tools()
        run.interpreters()
        run.poller()
        run.builds()
        run.data()
        log(f"python: {sys.executable} ({sys.version.split()[0]})")
        log(f"loads: {run.duration}s wrk, ab -n {run.ab_requests}, {run.starts} cold starts")
        run.baseline()
        measure(run, partial)
    except Failed as failure:
        log(f"ERROR: {failure}")
        return 2
    except KeyboardInterrupt:
        log("interrupted")
        run.stop_module()
        return 130
    return report.print_report(measurements(run, partial))


if __name__ == "__main__":
    sys.exit(main())
