"""The README's quickstart, run as written: its commands are read from README.md's "## Quickstart"
section and run by bash in an empty folder against the built .pyz, up to the post turning PUBLISHED.

Two things differ from what a person pastes, so that the test is quick: the .pyz is the one built for the
tests (its build line is skipped), and the post is scheduled two seconds ahead instead of a minute. The ports
are the Quickstart's own variables, PORT and RECEIVER_PORT, given free ports in the environment as a person
whose 5077 is taken would give them."""
from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

from conftest import ROOT
from pg_cluster import free_port

BUILD_LINE = "python3 build_zipapp.py"


def quickstart_commands() -> list:
    """The indented code blocks of README.md's Quickstart section, in order, each as its lines."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## Quickstart.*?$(.*?)^## ", readme, re.S | re.M).group(1)
    blocks, current = [], []
    for line in section.split("\n"):
        if line.startswith("    "):
            current.append(line[4:])
        elif current and line.strip():
            blocks.append(current)
            current = []
    return blocks + ([current] if current else [])


def test_the_quickstart_has_the_steps_a_new_user_needs():
    script = "\n".join(line for block in quickstart_commands() for line in block)
    for step in ("dist/rustiz.pyz init --set", "RUSTIZ_FETCH_ALLOW=127.0.0.1", "dist/rustiz.pyz serve",
                 "export RUSTIZ_API_KEY=", "/public/v1/integrations", "/public/v1/posts -H", "PUBLISHED",
                 "dist/rustiz.pyz doctor"):
        assert step in script, step


def test_the_quickstart_names_its_ports_once_and_bounds_every_wait():
    script = "\n".join(line for block in quickstart_commands() for line in block)
    defaults = "PORT=${PORT:-5077} RECEIVER_PORT=${RECEIVER_PORT:-8899}"
    assert script.count("5077") == script.count("8899") == 1 and defaults in script, script
    assert "until " not in script and "while " not in script, script  # loops without an end
    assert "--retry 30" in script and "$(seq 36)" in script, script


def test_the_quickstart_s_commands_publish_a_post(pyz: Path, tmp_path: Path):
    rustiz_port, receiver_port = free_port(), free_port()
    script = "\n".join(line for block in quickstart_commands() for line in block if line != BUILD_LINE)
    script = script.replace("dist/rustiz.pyz", str(pyz)).replace("timedelta(minutes=1)", "timedelta(seconds=2)")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("RUSTIZ_")}
    environment.update(PORT=str(rustiz_port), RECEIVER_PORT=str(receiver_port))
    output = tmp_path / "output.txt"
    with output.open("wb") as sink:
        shell = subprocess.Popen(["bash", "-e", "-c", script], cwd=tmp_path, env=environment, stdout=sink,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    try:
        shell.wait(timeout=90)
    finally:  # rustiz and the receiver, started in the background, are in the shell's process group
        os.killpg(shell.pid, signal.SIGTERM)
    printed = output.read_text()
    assert shell.returncode == 0, printed
    assert '"state":"PUBLISHED"' in printed, printed
    assert '"event":"ping"' in printed and "Hello from rustiz" in printed, printed  # what the receiver got
    config = (tmp_path / "rustiz-data" / "config.env").read_text()
    assert f"PORT={rustiz_port}\n" in config and "RUSTIZ_FETCH_ALLOW=127.0.0.1\n" in config, config
    # doctor had RUSTIZ_FETCH_ALLOW from config.env alone (no RUSTIZ_ variable is in the environment): it reached
    # rustiz on loopback rather than warning that it may not.
    assert f"ok   FRONTEND_URL: http://127.0.0.1:{rustiz_port}/health answered 200" in printed, printed
    assert f"Web app: http://127.0.0.1:{rustiz_port}/ - sign in with" in printed, printed
