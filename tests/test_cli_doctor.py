"""`rustiz doctor` against a running instance with channels on fake platforms: one line per check, a FAIL (and
exit status 1) for a channel whose platform refuses its credentials, for loose permissions, for no scheduler."""
from __future__ import annotations

import os

import pytest

from conftest import LOCAL_FAKES, run_cli, wanted_backends
from fakes.mastodon import FakeMastodon
from support import connected, webhook_channel


@pytest.fixture
def instance(start_server, receiver):
    good, bad = FakeMastodon(), FakeMastodon()
    server = start_server(env=LOCAL_FAKES)
    connected(server, "mastodon", good.credentials(), "Good masto")
    connected(server, "mastodon", bad.credentials(), "Revoked masto")
    webhook_channel(server, receiver, "Hook")
    yield server, good, bad
    good.close()
    bad.close()


def doctor(server) -> tuple:
    """(exit status, {check: (status, detail)}) of rustiz doctor beside `server`."""
    database = {name: server.extra_env[name] for name in ("RUSTIZ_DATABASE",) if name in server.extra_env}
    result = run_cli(server.pyz, "doctor", env={"RUSTIZ_CONFIG": str(server.config_path), "FRONTEND_URL": server.url,
                                                **LOCAL_FAKES, **database}, timeout=60)
    lines = {}
    checks, _, _ = result.stdout.partition("\n\n")  # (after the checks, a blank line and how to sign in)
    for line in checks.splitlines():
        status, _, rest = line.partition(" ")
        check, _, detail = rest.strip().partition(": ")
        lines[check] = (status, detail)
    return result.returncode, lines, result.stdout


both_backends = pytest.mark.parametrize("backend", wanted_backends(), indirect=True)


@both_backends
def test_doctor_checks_every_channel_and_fails_on_refused_credentials(instance):
    server, good, bad = instance
    bad.token = "revoked-" + "y" * 20  # the platform no longer accepts the channel's token
    status, lines, output = doctor(server)
    assert status == 1, output
    assert lines["config file"][0] == "ok" and lines["data folder"][0] == "ok", output
    assert lines["database integrity"][0] == "ok" and lines["database writable"][0] == "ok", output
    assert lines["scheduler"][0] == "ok" and lines["clock"][0] == "ok", output
    assert lines["FRONTEND_URL"] == ("ok", f"{server.url}/health answered 200"), output
    channel_lines = {check.split(" (")[0]: verdict for check, verdict in lines.items() if check.startswith("channel ")}
    assert channel_lines['channel "Good masto"'][0] == "ok", output
    assert channel_lines['channel "Revoked masto"'][0] == "FAIL", output
    assert "refused the credentials (HTTP 401)" in channel_lines['channel "Revoked masto"'][1]
    assert "Connect the channel again" in channel_lines['channel "Revoked masto"'][1]
    assert channel_lines['channel "Hook"'] == ("ok", "skipped (no read-only check for webhook)"), output


@both_backends
def test_doctor_passes_when_all_is_well_and_sends_a_webhook_nothing(instance, receiver):
    server, _, _ = instance
    pings = len(receiver.events)
    status, lines, output = doctor(server)
    assert status == 0, output
    assert all(verdict[0] in ("ok", "warn") for verdict in lines.values()), output
    assert len(receiver.events) == pings
    assert output.endswith(f"\n\nWeb app: {server.url}/ - sign in with the organization's API key (RUSTIZ_API_KEY in "
                           f"{server.config_path}), or with an email and password that `rustiz user add EMAIL` "
                           "set\n"), output


def test_doctor_fails_on_a_config_others_may_read_and_on_a_stopped_server(instance):
    server, _, _ = instance
    os.chmod(server.config_path, 0o644)
    server.stop()
    status, lines, output = doctor(server)
    assert status == 1
    assert lines["config file"][0] == "FAIL" and f"chmod 600 {server.config_path}" in lines["config file"][1]
    assert lines["scheduler"][0] == "FAIL" and "Start rustiz serve" in lines["scheduler"][1], output
    assert lines["FRONTEND_URL"][0] == "FAIL" and "did not answer" in lines["FRONTEND_URL"][1], output


def test_example_prints_a_unit_and_proxy_sites_with_this_configs_paths_and_port(pyz, tmp_path):
    assert run_cli(pyz, "init", "--dir", str(tmp_path / "data")).returncode == 0
    env = {"RUSTIZ_CONFIG": str(tmp_path / "data" / "config.env"), "PORT": "5099",
           "FRONTEND_URL": "https://social.example.org"}
    unit = run_cli(pyz, "example", "systemd", env=env)
    assert unit.returncode == 0, unit.stderr
    assert f"Environment=RUSTIZ_CONFIG={tmp_path / 'data' / 'config.env'}" in unit.stdout
    assert f"{pyz} serve" in unit.stdout and "KillSignal=SIGTERM" in unit.stdout
    for kind in ("caddy", "nginx"):
        site = run_cli(pyz, "example", kind, env=env)
        assert site.returncode == 0 and "social.example.org" in site.stdout and "127.0.0.1:5099" in site.stdout


def test_example_systemd_and_doctor_name_settings_given_only_in_the_environment(pyz, tmp_path):
    assert run_cli(pyz, "init", "--dir", str(tmp_path / "data"), "--set", "API_LIMIT=5").returncode == 0
    config = tmp_path / "data" / "config.env"
    env = {"RUSTIZ_CONFIG": str(config), "RUSTIZ_FETCH_ALLOW": "127.0.0.1", "API_LIMIT": "5"}
    unit = run_cli(pyz, "example", "systemd", env=env).stdout
    assert "# Not in this service: " in unit and "RUSTIZ_FETCH_ALLOW" in unit.split("[Unit]")[0], unit
    assert "API_LIMIT" not in unit.split("[Unit]")[0], unit  # (in config.env, with the same value)
    checked = run_cli(pyz, "doctor", env=env, timeout=60).stdout
    assert "warn settings: " in checked and "RUSTIZ_FETCH_ALLOW" in checked.split("warn settings: ")[1].split("\n")[0]

    config.write_text(config.read_text() + "RUSTIZ_FETCH_ALLOW=127.0.0.1\n")
    unit = run_cli(pyz, "example", "systemd", env=env).stdout
    assert "RUSTIZ_FETCH_ALLOW" not in unit.split("[Unit]")[0], unit


def test_json_log_format_writes_one_object_per_line(start_server):
    import json
    server = start_server(env={"RUSTIZ_LOG_FORMAT": "json"})
    server.stop()
    records = [json.loads(line) for line in server.stderr_lines if line.strip()]
    assert records and all({"time", "level", "message", "pid"} <= set(record) for record in records)
    assert any("ready on" in record["message"] for record in records)
