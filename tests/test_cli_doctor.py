"""`rustiz doctor` against a running instance with channels on fake platforms: one line per check, a FAIL (and
exit status 1) for a channel whose platform refuses its credentials, for loose permissions, for no scheduler."""
from __future__ import annotations

import os

import pytest

from conftest import LOCAL_FAKES, run_cli
from fake_mastodon import FakeMastodon
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
    result = run_cli(server.pyz, "doctor", env={"RUSTIZ_CONFIG": str(server.config_path), "FRONTEND_URL": server.url,
                                                **LOCAL_FAKES}, timeout=60)
    lines = {}
    for line in result.stdout.splitlines():
        status, _, rest = line.partition(" ")
        check, _, detail = rest.strip().partition(": ")
        lines[check] = (status, detail)
    return result.returncode, lines, result.stdout


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


def test_doctor_passes_when_all_is_well_and_sends_a_webhook_nothing(instance, receiver):
    server, _, _ = instance
    pings = len(receiver.events)
    status, lines, output = doctor(server)
    assert status == 0, output
    assert all(verdict[0] in ("ok", "warn") for verdict in lines.values()), output
    assert len(receiver.events) == pings


def test_doctor_fails_on_a_config_others_may_read_and_on_a_stopped_server(instance):
    server, _, _ = instance
    os.chmod(server.config_path, 0o644)
    server.stop()
    status, lines, output = doctor(server)
    assert status == 1
    assert lines["config file"][0] == "FAIL" and f"chmod 600 {server.config_path}" in lines["config file"][1]
    assert lines["scheduler"][0] == "FAIL" and "Start rustiz serve" in lines["scheduler"][1], output
    assert lines["FRONTEND_URL"][0] == "FAIL" and "did not answer" in lines["FRONTEND_URL"][1], output
