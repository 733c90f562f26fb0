"""The command line: init, serve's configuration handling, key rotate, version and --help, run from the built .pyz."""
from __future__ import annotations

import hashlib
import os
import re
import socket
import sqlite3
import stat

import pytest

from conftest import RustizServer, read_config, run_cli

KEY_SHAPE = re.compile(r"[0-9a-f]{64}\Z")


def init(pyz, directory, *extra: str):
    result = run_cli(pyz, "init", "--dir", str(directory), *extra)
    assert result.returncode == 0, result.stderr
    return result


def assert_one_clear_error_line(result, *fragments: str, exit_code: int = 2) -> str:
    """Exit `exit_code`, exactly one non-empty line on stderr, naming the problem, and never a traceback."""
    assert result.returncode == exit_code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("rustiz: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def serve_env(config_path, **overrides) -> dict:
    return {"RUSTIZ_CONFIG": str(config_path), "PORT": "0", "HOST": "127.0.0.1", "REQUEST_LIMIT": "0",
            **overrides}


def status_of(server: RustizServer, key: str) -> tuple:
    status, _, body = server.request("GET", "/public/v1/is-connected", {"Authorization": key})
    return status, body


# --- init ---------------------------------------------------------------------------------------------


def test_init_creates_private_config_with_a_64_hex_key_database_and_uploads_and_prints_them(pyz, tmp_path):
    directory = tmp_path / "fresh" / "data"
    result = init(pyz, directory)

    config_path = directory / "config.env"
    assert stat.S_IMODE(config_path.stat().st_mode) == 0o600
    config = read_config(config_path)
    assert KEY_SHAPE.match(config["RUSTIZ_API_KEY"]), config
    assert {"RUSTIZ_API_KEY", "RUSTIZ_DATABASE", "RUSTIZ_UPLOADS"} <= set(config)
    assert os.path.isfile(config["RUSTIZ_DATABASE"])
    assert os.path.isdir(config["RUSTIZ_UPLOADS"])
    for printed in (str(config_path), config["RUSTIZ_DATABASE"], config["RUSTIZ_UPLOADS"], config["RUSTIZ_API_KEY"]):
        assert printed in result.stdout, (printed, result.stdout)


def test_init_stores_one_organization_with_only_the_sha256_of_the_key(pyz, tmp_path):
    directory = tmp_path / "data"
    init(pyz, directory)
    config = read_config(directory / "config.env")
    key = config["RUSTIZ_API_KEY"]

    with sqlite3.connect(config["RUSTIZ_DATABASE"]) as db:
        rows = db.execute("SELECT api_key_hash FROM organization").fetchall()
    assert rows == [(hashlib.sha256(key.encode()).hexdigest(),)]
    for path in directory.iterdir():  # the database, and any -wal/-shm file beside it
        if path.is_file() and path.name != "config.env":
            content = path.read_bytes()
            assert key.encode() not in content, path
            assert key.upper().encode() not in content, path
            assert bytes.fromhex(key) not in content, path


def test_init_refuses_to_overwrite_an_existing_config(pyz, tmp_path):
    directory = tmp_path / "data"
    init(pyz, directory)
    config_path = directory / "config.env"
    before = config_path.read_bytes()

    result = run_cli(pyz, "init", "--dir", str(directory))

    assert_one_clear_error_line(result, "already exists", "--force", exit_code=1)
    assert config_path.read_bytes() == before


def test_init_force_makes_a_new_key_and_the_old_key_stops_working_also_in_a_running_server(pyz, tmp_path,
                                                                                          start_server):
    directory = tmp_path / "data"
    init(pyz, directory)
    old_key = read_config(directory / "config.env")["RUSTIZ_API_KEY"]
    server = start_server(data_dir=directory)
    assert status_of(server, old_key) == (200, b'{"connected":true}')

    result = init(pyz, directory, "--force")

    new_key = read_config(directory / "config.env")["RUSTIZ_API_KEY"]
    assert KEY_SHAPE.match(new_key) and new_key != old_key
    assert new_key in result.stdout
    assert stat.S_IMODE((directory / "config.env").stat().st_mode) == 0o600
    with sqlite3.connect(directory / "rustiz.db") as db:
        assert db.execute("SELECT api_key_hash FROM organization").fetchall() == [
            (hashlib.sha256(new_key.encode()).hexdigest(),)]
    assert status_of(server, old_key) == (401, b'{"msg":"Invalid API key"}')
    assert status_of(server, new_key) == (200, b'{"connected":true}')
    assert server.stop() == 0

    restarted = start_server(data_dir=directory)
    assert status_of(restarted, old_key) == (401, b'{"msg":"Invalid API key"}')
    assert status_of(restarted, new_key) == (200, b'{"connected":true}')


# --- serve: configuration -------------------------------------------------------------------------------


class ZeroSetupServer(RustizServer):
    """`rustiz serve` with no RUSTIZ_CONFIG at all, in the current directory, and no init beforehand."""

    def env(self) -> dict:
        env = super().env()
        del env["RUSTIZ_CONFIG"]
        return env


def test_init_writes_paths_relative_to_the_config_s_folder(pyz, tmp_path):
    init(pyz, tmp_path / "data")
    written = (tmp_path / "data" / "config.env").read_text()
    assert "RUSTIZ_DATABASE=rustiz.db\n" in written and "RUSTIZ_UPLOADS=uploads\n" in written, written


def test_a_data_folder_moved_with_mv_keeps_working_on_its_own_database(pyz, tmp_path, start_server):
    init(pyz, tmp_path / "data")
    moved_key = read_config(tmp_path / "data" / "config.env")["RUSTIZ_API_KEY"]
    (tmp_path / "data").rename(tmp_path / "moved")
    init(pyz, tmp_path / "data")  # a new instance where the old one was: the moved one must not open its database
    other_database = tmp_path / "data" / "rustiz.db"
    other_before = other_database.read_bytes()

    server = start_server(data_dir=tmp_path / "moved")
    assert status_of(server, moved_key) == (200, b'{"connected":true}')
    assert server.database == str(tmp_path / "moved" / "rustiz.db")
    assert (tmp_path / "moved" / "rustiz.db-scheduler").exists()  # its own scheduler lock, not the other's
    assert not (tmp_path / "data" / "rustiz.db-scheduler").exists()
    assert other_database.read_bytes() == other_before


def test_a_config_pointing_at_another_instance_s_database_refuses_to_start_saying_what_to_do(pyz, tmp_path,
                                                                                              start_server):
    init(pyz, tmp_path / "first")
    init(pyz, tmp_path / "second")
    config_path = tmp_path / "second" / "config.env"
    original = config_path.read_text()
    config_path.write_text(original.replace("RUSTIZ_DATABASE=rustiz.db",
                                            f"RUSTIZ_DATABASE={tmp_path / 'first' / 'rustiz.db'}"))

    result = run_cli(pyz, "serve", env=serve_env(config_path), timeout=15)

    assert_one_clear_error_line(result, "matches no organization of the database", str(tmp_path / "first"),
                                "Point RUSTIZ_DATABASE at this config's own database", "rustiz key rotate")
    assert not (tmp_path / "first" / "rustiz.db-scheduler").exists()
    # An absolute path (what an older init wrote) to the config's own database still works.
    config_path.write_text(original.replace("RUSTIZ_DATABASE=rustiz.db",
                                            f"RUSTIZ_DATABASE={tmp_path / 'second' / 'rustiz.db'}"))
    server = start_server(data_dir=tmp_path / "second")
    assert status_of(server, server.key) == (200, b'{"connected":true}')


def test_init_set_writes_settings_into_config_env_where_every_command_reads_them(pyz, tmp_path):
    port = str(free_port())
    init(pyz, tmp_path / "data", "--set", "RUSTIZ_FETCH_ALLOW=127.0.0.1", "--set", f"PORT={port}")
    config = read_config(tmp_path / "data" / "config.env")
    assert config["RUSTIZ_FETCH_ALLOW"] == "127.0.0.1" and config["PORT"] == port, config
    site = run_cli(pyz, "example", "nginx", env={"RUSTIZ_CONFIG": str(tmp_path / "data" / "config.env")})
    assert f"proxy_pass http://127.0.0.1:{port};" in site.stdout, site.stdout


@pytest.mark.parametrize("pair, fragment", [("PORT=abc", "PORT='abc' is not a whole number"),
                                            ("RUSTIZ_FETCH_ALLOW=not/a host", "RUSTIZ_FETCH_ALLOW"),
                                            ("NOEQUALS", "use --set NAME=VALUE"),
                                            ("RUSTIZ_API_KEY=abc", "init makes the API key")])
def test_init_set_refuses_a_bad_setting_naming_it_and_writes_nothing(pyz, tmp_path, pair, fragment):
    result = run_cli(pyz, "init", "--dir", str(tmp_path / "data"), "--set", pair)
    assert_one_clear_error_line(result, fragment)
    assert not (tmp_path / "data").exists()


def test_serve_without_any_config_runs_init_first_says_so_and_serves(pyz, tmp_path, monkeypatch):
    workdir = tmp_path / "empty"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    monkeypatch.delenv("RUSTIZ_CONFIG", raising=False)
    server = ZeroSetupServer(pyz, workdir / "rustiz-data", {"RUSTIZ_TEST_NO_INIT": "1"})
    try:
        server.start()
        config_path = workdir / "rustiz-data" / "config.env"
        assert config_path.is_file()
        assert stat.S_IMODE(config_path.stat().st_mode) == 0o600
        key = read_config(config_path)["RUSTIZ_API_KEY"]
        assert KEY_SHAPE.match(key)
        startup = "\n".join(server.stderr_lines)
        assert "init" in startup and str(config_path) in startup, startup
        assert status_of(server, key) == (200, b'{"connected":true}')
    finally:
        assert server.stop() == 0


def test_serve_runs_init_for_a_missing_config_at_the_path_rustiz_config_names(pyz, tmp_path):
    server = RustizServer(pyz, tmp_path / "elsewhere", {"RUSTIZ_TEST_NO_INIT": "1"})
    server.config_path = tmp_path / "elsewhere" / "custom.env"
    try:
        server.start()
        assert server.config_path.is_file()
        assert stat.S_IMODE(server.config_path.stat().st_mode) == 0o600
        assert not (tmp_path / "elsewhere" / "config.env").exists()
        assert status_of(server, server.key) == (200, b'{"connected":true}')
    finally:
        assert server.stop() == 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_environment_port_overrides_the_port_in_the_config_file(pyz, tmp_path, start_server):
    directory = tmp_path / "data"
    init(pyz, directory)
    file_port = free_port()
    with open(directory / "config.env", "a") as handle:
        handle.write(f"PORT={file_port}\n")

    from_env = start_server(data_dir=directory, env={"PORT": "0"})
    assert from_env.port not in (0, file_port)
    assert from_env.request("GET", "/health")[0] == 200
    assert from_env.stop() == 0

    from_file = start_server(data_dir=directory, env={"PORT": ""})  # empty: the file's value stands
    assert from_file.port == file_port
    assert from_file.request("GET", "/health")[0] == 200


def write_bad_line(path):
    path.write_text("PORT=0\nthis line is not a setting\n")


def write_non_utf8(path):
    path.write_bytes(b"RUSTIZ_API_KEY=\xff\xfe\x80garbage\n")


@pytest.mark.parametrize("breaks_it, fragment", [
    (lambda path: (path.unlink(), path.mkdir()), "cannot read config"),
    (write_non_utf8, "UTF-8"),
    (write_bad_line, "line 2"),
], ids=["config-is-a-directory", "config-not-utf8", "config-bad-line"])
def test_serve_with_an_unreadable_config_exits_2_with_one_clear_line(pyz, tmp_path, breaks_it, fragment):
    directory = tmp_path / "data"
    init(pyz, directory)
    config_path = directory / "config.env"
    breaks_it(config_path)

    result = run_cli(pyz, "serve", env=serve_env(config_path), timeout=15)

    assert_one_clear_error_line(result, str(config_path), fragment)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a file of mode 000")
def test_serve_with_a_mode_000_config_exits_2_with_one_clear_line(pyz, tmp_path):
    directory = tmp_path / "data"
    init(pyz, directory)
    config_path = directory / "config.env"
    config_path.chmod(0)

    result = run_cli(pyz, "serve", env=serve_env(config_path), timeout=15)

    assert_one_clear_error_line(result, str(config_path), "ermission")


@pytest.mark.parametrize("name, value, where", [
    ("PORT", "abc", "env"),
    ("PORT", "abc", "file"),
    ("PORT", "70000", "env"),
    ("REQUEST_LIMIT", "-1", "env"),
    ("REQUEST_LIMIT", "-1", "file"),
    ("API_LIMIT", "lots", "env"),
    ("RUSTIZ_WORKERS", "0", "env"),
    ("RUSTIZ_TRUSTED_PROXIES", "not-an-address", "file"),
    ("RUSTIZ_MAX_CONNECTIONS", "0", "env"),
    ("RUSTIZ_BODY_MEMORY_BUDGET", "1048576", "env"),  # below RUSTIZ_MAX_BODY: no largest body could ever fit
    ("RUSTIZ_BODY_MIN_RATE", "0", "file"),
    ("RUSTIZ_BODY_RATE_WINDOW", "-3", "env"),
])
def test_serve_with_a_bad_setting_exits_2_with_one_line_naming_it(pyz, tmp_path, name, value, where):
    directory = tmp_path / "data"
    init(pyz, directory)
    config_path = directory / "config.env"
    env = serve_env(config_path)
    if where == "env":
        env[name] = value
    else:
        env.pop(name, None)
        env[name] = ""  # an empty environment value does not override the file
        with open(config_path, "a") as handle:
            handle.write(f"{name}={value}\n")

    result = run_cli(pyz, "serve", env=env, timeout=15)

    assert_one_clear_error_line(result, name, value)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_serve_on_a_port_in_use_exits_2_with_one_clear_line(pyz, tmp_path, workers):
    directory = tmp_path / "data"
    init(pyz, directory)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]

        result = run_cli(pyz, "serve", "--workers", workers,
                         env=serve_env(directory / "config.env", PORT=str(port)), timeout=15)

    assert_one_clear_error_line(result, str(port), "in use")


# --- key rotate, version, --help --------------------------------------------------------------------


@pytest.mark.parametrize("workers", ["1", "2"])
def test_key_rotate_prints_a_new_key_and_a_running_server_rejects_the_old_one_at_once(pyz, start_server,
                                                                                     workers):
    server = start_server(args=("--workers", workers))
    try:
        old_key = server.key
        for _ in range(12):  # new connections: with two workers, both have looked the key up
            assert status_of(server, old_key) == (200, b'{"connected":true}')

        result = run_cli(pyz, "key", "rotate", env={"RUSTIZ_CONFIG": str(server.config_path)})

        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        new_key = result.stdout.strip()
        assert KEY_SHAPE.match(new_key) and new_key != old_key
        assert server.key == new_key  # saved in the config file
        assert stat.S_IMODE(server.config_path.stat().st_mode) == 0o600
        for _ in range(12):
            status, headers, body = server.request("GET", "/public/v1/is-connected", {"Authorization": old_key})
            assert (status, body) == (401, b'{"msg":"Invalid API key"}')
            assert headers["content-type"].startswith("application/json")
            assert status_of(server, new_key) == (200, b'{"connected":true}')
            assert status_of(server, "Bearer " + new_key) == (200, b'{"connected":true}')
    finally:
        assert server.stop() == 0


def test_version_prints_the_version(pyz):
    import rustiz

    result = run_cli(pyz, "version")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"rustiz {rustiz.VERSION}"), result.stdout


@pytest.mark.parametrize("command", [(), ("init",), ("serve",), ("key",), ("key", "rotate"), ("version",)],
                         ids=lambda command: " ".join(command) or "rustiz")
def test_help_works_on_every_command(pyz, command, tmp_path):
    # In an empty directory and with a config path that does not exist: --help must touch nothing.
    missing = tmp_path / "nothing" / "config.env"
    result = run_cli(pyz, *command, "--help", env={"RUSTIZ_CONFIG": str(missing)}, cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: rustiz"), result.stdout
    assert result.stderr == ""
    assert not missing.parent.exists()
    assert not (tmp_path / "rustiz-data").exists()


@pytest.mark.parametrize("command", [(), ("serve",), ("key", "rotate"), ("restore",)],
                         ids=lambda command: " ".join(command) or "rustiz")
def test_help_command_prints_what_help_prints(pyz, command, tmp_path):
    missing = tmp_path / "nothing" / "config.env"
    asked = run_cli(pyz, "help", *command, env={"RUSTIZ_CONFIG": str(missing)}, cwd=tmp_path)
    flag = run_cli(pyz, *command, "--help", env={"RUSTIZ_CONFIG": str(missing)}, cwd=tmp_path)

    assert asked.returncode == 0, asked.stderr
    assert asked.stdout == flag.stdout and asked.stdout.startswith("usage: rustiz"), asked.stdout
    assert asked.stderr == "" and not missing.parent.exists() and not (tmp_path / "rustiz-data").exists()
