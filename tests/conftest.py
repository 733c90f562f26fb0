"""Shared fixtures: the real server, started from the built dist/rustiz.pyz, on a free port."""
from __future__ import annotations

import fcntl
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Callable

import pytest

from fakes.webhook import FakeWebhookReceiver
from pg_cluster import INSTALL_HINT, PostgresCluster, postgres_bin
from support import FAST_RETRIES, connected

ROOT = Path(__file__).resolve().parent.parent
PYZ = ROOT / "dist" / "rustiz.pyz"
sys.path.insert(0, str(ROOT))  # the sans-IO parser tests import rustiz directly


@pytest.fixture(scope="session")
def pyz() -> Path:
    """The .pyz under test. run_tests.sh builds it; build it here too when pytest runs alone."""
    if os.environ.get("RUSTIZ_TEST_SKIP_BUILD") != "1" or not PYZ.exists():
        subprocess.run([sys.executable, str(ROOT / "build_zipapp.py")], check=True, capture_output=True)
    return PYZ


# --- the storage backends: every API, MCP, scheduler and provider test that starts a server runs on both --------

BACKENDS = ("sqlite", "postgresql")
# The suites parametrized by backend (module names); the others keep the default, SQLite.
BOTH_BACKENDS = re.compile(r"^test_(api_.*|mcp.*|scheduler|provider_.*|oauth_.*|oidc_sign_in|web_sessions|publish_everywhere|webhook_deliveries"
                           r"|storage_s3)$")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "sqlite_only(reason): the test reads or writes the SQLite file "
                                       "directly, so it runs on the SQLite backend only")


def pytest_generate_tests(metafunc) -> None:
    """test_x[sqlite] and test_x[postgresql] for each test of the suites above that starts a server (it
    uses start_server, directly or through a fixture); RUSTIZ_TEST_BACKENDS=sqlite narrows the list."""
    if "backend" not in metafunc.fixturenames or not BOTH_BACKENDS.match(metafunc.module.__name__):
        return
    if metafunc.definition.get_closest_marker("sqlite_only"):
        return  # the backend fixture's default: SQLite
    metafunc.parametrize("backend", wanted_backends(), indirect=True)


def wanted_backends() -> list:
    """BACKENDS, narrowed by RUSTIZ_TEST_BACKENDS (a comma-separated list) when set."""
    wanted = os.environ.get("RUSTIZ_TEST_BACKENDS", ",".join(BACKENDS)).split(",")
    return [name for name in BACKENDS if name in wanted]


@pytest.fixture
def backend(request) -> str:
    """The storage backend of the servers this test starts: "sqlite" unless parametrized."""
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="session")
def postgres_cluster():
    """A throwaway PostgreSQL cluster (tests/pg_cluster.py) for the session, started on first use."""
    if postgres_bin() is None:
        pytest.skip(INSTALL_HINT)
    cluster = PostgresCluster().start()
    yield cluster
    cluster.stop()


def run_cli(pyz: Path, *arguments: str, env: dict | None = None, cwd: str | Path | None = None,
            timeout: float = 30) -> subprocess.CompletedProcess:
    """Run `python rustiz.pyz ARGS` to completion and return its output."""
    return subprocess.run([sys.executable, str(pyz), *arguments], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=timeout)


def read_config(path: Path) -> dict:
    """A config file's values, its file paths (relative to the config's folder, as init writes them) made absolute."""
    values = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    for name in ("RUSTIZ_DATABASE", "RUSTIZ_UPLOADS"):
        if name in values and "://" not in values[name]:
            values[name] = os.path.join(path.parent, values[name])
    return values


class RustizServer:
    """A `rustiz serve` subprocess; `url`, `port` and `key` are set once it printed its ready line."""

    def __init__(self, pyz: Path, data_dir: Path, env: dict | None = None, args: tuple = ()):
        self.pyz = pyz
        self.data_dir = data_dir
        self.config_path = data_dir / "config.env"
        self.extra_env = dict(env or {})
        self.args = tuple(args)
        self.process: subprocess.Popen | None = None
        self.port = 0
        self.url = ""
        self.stderr_lines: list[str] = []

    @property
    def key(self) -> str:
        return read_config(self.config_path)["RUSTIZ_API_KEY"]

    @property
    def database(self) -> str:
        """The SQLite file, or the PostgreSQL URL (support.connect_database opens either)."""
        return self.extra_env.get("RUSTIZ_DATABASE") or read_config(self.config_path)["RUSTIZ_DATABASE"]

    def env(self) -> dict:
        env = {**os.environ, "RUSTIZ_CONFIG": str(self.config_path), "PORT": "0", "HOST": "127.0.0.1",
               "REQUEST_LIMIT": "0", "XDG_CACHE_HOME": str(self.data_dir / "cache")}
        env.update(self.extra_env)
        return env

    def start(self, timeout: float = 20) -> "RustizServer":
        if not self.config_path.exists() and not self.extra_env.get("RUSTIZ_TEST_NO_INIT"):
            result = run_cli(self.pyz, "init", "--dir", str(self.data_dir), env=self.extra_env)
            assert result.returncode == 0, result.stderr
        self.stderr_lines = []
        self.ready = threading.Event()
        self.process = subprocess.Popen([sys.executable, str(self.pyz), "serve", *self.args], env=self.env(),
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=self._read_stderr, daemon=True)
        self.reader.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready.wait(0.02):
                return self
            if self.process.poll() is not None:
                self.reader.join(2)
                raise AssertionError(f"rustiz exited with {self.process.returncode}: " + "\n".join(self.stderr_lines))
        self.process.kill()
        raise AssertionError(f"rustiz did not print its ready line in {timeout}s: " + "\n".join(self.stderr_lines))

    def _read_stderr(self) -> None:
        """Keep draining stderr (so logging never blocks the server) and notice the ready line."""
        for line in self.process.stderr:
            self.stderr_lines.append(line.rstrip("\n"))
            match = re.search(r"ready on (http://[^\s]+:(\d+))", line)
            if match and not self.ready.is_set():
                self.url, self.port = match.group(1), int(match.group(2))
                self.ready.set()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        """Send `sig`, wait, and return the exit code; everything it logged is in stderr_lines."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.reader.join(5)
        return self.process.returncode

    def request(self, method: str, path: str, headers: dict | None = None, body: bytes | None = None,
                timeout: float = 10) -> tuple[int, dict, bytes]:
        """One request on a new connection; returns (status, headers with lower-case names, body)."""
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
        except urllib.error.HTTPError as error:
            return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def raw_exchange(port: int, data: bytes, timeout: float = 5.0, half_close: bool = False) -> bytes:
    """Send raw bytes, then read until the server closes the connection (or `timeout`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(data)
        if half_close:
            connection.shutdown(socket.SHUT_WR)
        received = b""
        try:
            while True:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                received += chunk
        except socket.timeout:
            pass
        return received


class Servers:
    """The servers a test (or a module) starts, all stopped by close(). On the postgresql backend each data folder
    gets a fresh database of the session's cluster (a server started again on the same folder finds its database
    again), unless `env` names RUSTIZ_DATABASE; close() drops them."""

    def __init__(self, pyz: Path, folder: Path, cluster: PostgresCluster | None):
        self.pyz, self.folder, self.cluster = pyz, folder, cluster
        self.servers: list[RustizServer] = []
        self.databases: dict[Path, str] = {}

    def start(self, env: dict | None = None, args: tuple = (), data_dir: Path | None = None) -> RustizServer:
        data_dir = data_dir or self.folder / f"data{len(self.servers)}"
        env = dict(env or {})
        if self.cluster is not None and "RUSTIZ_DATABASE" not in env:
            if data_dir not in self.databases:
                self.databases[data_dir] = self.cluster.create_database()
            env["RUSTIZ_DATABASE"] = self.databases[data_dir]
        server = RustizServer(self.pyz, data_dir, env, args)
        self.servers.append(server)
        return server.start()

    def close(self) -> None:
        for server in self.servers:
            server.stop(signal.SIGKILL if server.process and server.process.poll() is None else signal.SIGTERM)
        for database in self.databases.values():
            self.cluster.drop_database(database)


@pytest.fixture
def start_server(pyz, tmp_path, backend, request):
    """Factory: start_server(env={...}, args=(...), data_dir=...) -> a running RustizServer on the test's backend
    (see Servers); all stopped after the test."""
    servers = Servers(pyz, tmp_path, request.getfixturevalue("postgres_cluster") if backend == "postgresql" else None)
    yield servers.start
    servers.close()


@pytest.fixture(scope="module", params=wanted_backends())
def start_module_server(pyz, tmp_path_factory, request):
    """start_server for servers a module's tests share, stopped after the module: its tests run once per
    backend (the parameter: [sqlite] and [postgresql], as `backend` gives the others)."""
    cluster = request.getfixturevalue("postgres_cluster") if request.param == "postgresql" else None
    servers = Servers(pyz, tmp_path_factory.mktemp(f"module-{request.param}"), cluster)
    yield servers.start
    servers.close()


# The fake platforms (tests/fake_*.py) listen on 127.0.0.1, a loopback address, which rustiz's address
# guard refuses unless RUSTIZ_FETCH_ALLOW lists it: servers that talk to them say so explicitly.
LOCAL_FAKES = {"RUSTIZ_FETCH_ALLOW": "127.0.0.1"}


def client_for_fakes():
    """An in-process HttpClient allowed to reach the local fakes, as LOCAL_FAKES allows a server."""
    import rustiz
    from rustiz_features.http_client import HttpClient
    return HttpClient(rustiz._fetch_allow(LOCAL_FAKES["RUSTIZ_FETCH_ALLOW"]))


@pytest.fixture
def http():
    """An in-process HttpClient allowed to reach the local fakes (client_for_fakes), closed after the test."""
    client = client_for_fakes()
    yield client
    client.close()


@pytest.fixture
def start_server_with_fakes(start_server):
    """start_server, with local fakes allowed: start_server_with_fakes(env={...}) adds LOCAL_FAKES to `env`."""
    def start(env: dict | None = None, args: tuple = (), data_dir: Path | None = None) -> RustizServer:
        return start_server(env={**LOCAL_FAKES, **(env or {})}, args=args, data_dir=data_dir)
    return start


@pytest.fixture(scope="module")
def platforms():
    """A fake of every provider (tests/platforms.py), shared by a module's tests."""
    from platforms import Platforms  # its Nostr fake imports rustiz, which the path above makes importable
    fakes = Platforms()
    yield fakes
    fakes.close()


@pytest.fixture
def receiver():
    """A FakeWebhookReceiver for rustiz's `webhook` provider (support.webhook_channel connects one)."""
    fake = FakeWebhookReceiver()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def module_receiver():
    """A FakeWebhookReceiver that a module's tests share, beside their module-scoped server."""
    fake = FakeWebhookReceiver()
    yield fake
    fake.close()


def fake_fixture(make_fake: Callable, **env: str) -> Callable:
    """A `fake` fixture for a provider's direct tests: a fresh fake from make_fake(), its `env` (the
    RUSTIZ_<ID>_*_URL overrides that point the provider at it) and `env` set for the test, closed after it.
    Assign it at module level: `fake = fake_fixture(FakeThreads)`."""
    @pytest.fixture(name="fake")
    def fixture(monkeypatch):
        platform = make_fake()
        for name, value in {**platform.env, **env}.items():
            monkeypatch.setenv(name, value)
        yield platform
        platform.close()
    return fixture


def provider_fixtures(provider: str, make_fake: Callable, *, names: tuple = ("fake", "server", "channel"),
                      env: dict | None = None) -> tuple:
    """The three fixtures of a provider's tests, under the `names` its test module uses: a fresh fake from
    make_fake() (closed after the test); a server that may reach it (LOCAL_FAKES) with fast retries, the
    fake's `env` and `env`; and a channel connected to the fake with its credentials (the channel's JSON).
    Assign all three at module level: `fake, server, channel = provider_fixtures(...)`."""
    fake_name, server_name, channel_name = names

    @pytest.fixture(name=fake_name)
    def fake_fixture():
        fake = make_fake()
        yield fake
        fake.close()

    @pytest.fixture(name=server_name)
    def server_fixture(request, start_server_with_fakes) -> RustizServer:
        fake = request.getfixturevalue(fake_name)
        return start_server_with_fakes(env={**FAST_RETRIES, **fake.env, **(env or {})})

    @pytest.fixture(name=channel_name)
    def channel_fixture(request) -> dict:
        fake, server = request.getfixturevalue(fake_name), request.getfixturevalue(server_name)
        return connected(server, provider, fake.credentials())

    return fake_fixture, server_fixture, channel_fixture


@pytest.fixture
def app(tmp_path):
    """An App on a fresh data directory, in-process (no server), for pipeline tests."""
    import rustiz
    config_path, _, _, _ = rustiz.initialize(str(tmp_path / "config.env"), force=False)
    config = rustiz.load_config({"RUSTIZ_CONFIG": config_path, "REQUEST_LIMIT": "0"})
    store = rustiz.Store(config.database)
    yield rustiz.App(config, store)
    store.close()


@pytest.fixture
def server(start_server) -> RustizServer:
    """A running server with its own fresh data directory, REQUEST_LIMIT=0."""
    return start_server()


@pytest.fixture
def standby_server(pyz, start_server, tmp_path, backend):
    """A server whose scheduler stands by, so posts a test writes straight into the database stay as written
    however overdue they are. On PostgreSQL it runs none (RUSTIZ_SCHEDULER=0); on SQLite this test holds the
    scheduler's file lock, as a second process on the same file would find it held."""
    if backend == "postgresql":
        yield start_server(env={"RUSTIZ_SCHEDULER": "0"})
        return
    data_dir = tmp_path / "standby"
    result = run_cli(pyz, "init", "--dir", str(data_dir))
    assert result.returncode == 0, result.stderr
    database = read_config(data_dir / "config.env")["RUSTIZ_DATABASE"]
    with open(database + "-scheduler", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield start_server(data_dir=data_dir)
