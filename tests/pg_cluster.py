"""A throwaway PostgreSQL cluster for a test session (or a bench run): Debian's PostgreSQL binaries,
initdb in a temporary folder, one server on a free 127.0.0.1 port, a fresh database per rustiz server,
stopped (`pg_ctl stop -m immediate`) and removed at the end.

Rules: nothing here runs as root — initdb refuses it, so when this process is root the cluster's folder
belongs to the `postgres` user and initdb/pg_ctl run through `runuser -u postgres`. Clients connect over
TCP as the `rustiz` superuser with trust authentication (a throwaway cluster on loopback: no password).
When RUSTIZ_TEST_PG_ROOT names a folder, clusters are made inside it, so .ci/run can stop any a crashed
pytest left running (`python tests/pg_cluster.py stop-all DIR`).

Also a command line for bench.sh and .ci/run:
    python tests/pg_cluster.py start           starts one; prints its folder and URL (postgresql://rustiz@127.0.0.1:PORT/)
    python tests/pg_cluster.py createdb DIR NAME   a new database in the cluster in DIR; prints its URL (needs psycopg)
    python tests/pg_cluster.py stop DIR        stops the cluster in DIR and removes DIR
    python tests/pg_cluster.py stop-all ROOT   stops every cluster under ROOT (a crashed run's leftovers)
"""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

USER = "rustiz"
INSTALL_HINT = ("PostgreSQL is not installed: `apt-get install postgresql` (Debian; .ci/run does it) "
                "to run the PostgreSQL tests")


def postgres_bin() -> Path | None:
    """The newest /usr/lib/postgresql/<version>/bin that has initdb, or None when PostgreSQL is absent."""
    found = [Path(path).parent for path in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    found.sort(key=lambda path: int(path.parent.name) if path.parent.name.isdigit() else 0)
    return found[-1] if found else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PostgresCluster:
    """One running PostgreSQL server in its own temporary folder; `url` is postgresql://rustiz@127.0.0.1:PORT/."""

    def __init__(self, folder: Path | None = None, port: int | None = None):
        self.bin = postgres_bin()
        if self.bin is None:
            raise RuntimeError(INSTALL_HINT)
        root = os.environ.get("RUSTIZ_TEST_PG_ROOT") or None
        self.folder = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="rustiz-pg-", dir=root))
        self.folder.mkdir(parents=True, exist_ok=True)
        self.data = self.folder / "data"
        self.port = port or free_port()
        self.url = f"postgresql://{USER}@127.0.0.1:{self.port}/"
        self.databases_made = 0

    def _as_owner(self, *command: str) -> subprocess.CompletedProcess:
        """Run a PostgreSQL program as the cluster's owner: `postgres` when we are root, else ourselves."""
        if os.geteuid() == 0:
            command = ("runuser", "-u", "postgres", "--", *command)
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    def start(self) -> "PostgresCluster":
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        steps = [
            (str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", USER, "-E", "UTF8", "--no-sync"),
            (str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.folder / "log"), "-w", "-t", "30",
             "-o", f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300", "start"),
        ]
        for step in steps:
            result = self._as_owner(*step)
            if result.returncode != 0:
                log = (self.folder / "log").read_text()[-2000:] if (self.folder / "log").exists() else ""
                self.stop()
                raise RuntimeError(f"{Path(step[0]).name} failed ({result.returncode}): {result.stderr.strip()} {log}")
        return self

    def connect(self, database: str = "postgres"):
        import psycopg
        return psycopg.connect(self.url + database, autocommit=True)

    def create_database(self, prefix: str = "t") -> str:
        """A new empty database; returns its URL (what RUSTIZ_DATABASE takes)."""
        self.databases_made += 1
        name = f"{prefix}_{os.getpid()}_{self.databases_made}"
        with self.connect() as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url + name

    def drop_database(self, url: str) -> None:
        """Drop the database at `url`, closing whatever connections a killed server left."""
        name = url.rsplit("/", 1)[1]
        with self.connect() as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        """Stop the server at once (it holds nothing worth keeping) and remove its folder."""
        stop_cluster(self.folder, self.bin)


def stop_cluster(folder: Path, bin_dir: Path | None = None) -> None:
    """Stop the cluster in `folder` if its postmaster still runs, then remove the folder."""
    bin_dir = bin_dir or postgres_bin()
    data = Path(folder) / "data"
    if bin_dir and (data / "postmaster.pid").exists():
        command = (str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        if os.geteuid() == 0:
            command = ("runuser", "-u", "postgres", "--", *command)
        subprocess.run(command, capture_output=True, timeout=60)
    shutil.rmtree(folder, ignore_errors=True)


def main(arguments: list) -> int:
    if arguments == ["start"]:
        cluster = PostgresCluster().start()
        print(cluster.folder, cluster.url)
        return 0
    if len(arguments) == 3 and arguments[0] == "createdb":
        port = int((Path(arguments[1]) / "data" / "postmaster.pid").read_text().splitlines()[3])
        cluster = PostgresCluster.__new__(PostgresCluster)
        cluster.url, cluster.databases_made = f"postgresql://{USER}@127.0.0.1:{port}/", 0
        with cluster.connect() as connection:
            connection.execute(f'CREATE DATABASE "{arguments[2]}"')
        print(cluster.url + arguments[2])
        return 0
    if len(arguments) == 2 and arguments[0] == "stop":
        stop_cluster(Path(arguments[1]))
        return 0
    if len(arguments) == 2 and arguments[0] == "stop-all":
        for folder in glob.glob(os.path.join(arguments[1], "rustiz-pg-*")):
            stop_cluster(Path(folder))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
