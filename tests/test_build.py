"""build_zipapp.py: one executable, reproducible, small .pyz; and the optional bundled speedups."""
from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest


import rustiz

from conftest import ROOT, RustizServer
from support import Database


def build(output: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "build_zipapp.py"), "--output", str(output), *options],
                          capture_output=True, text=True, timeout=300)


def test_built_pyz_starts_with_a_python3_shebang_and_is_executable(pyz):
    assert pyz.read_bytes().startswith(b"#!/usr/bin/env python3\n")
    mode = pyz.stat().st_mode
    assert mode & stat.S_IXUSR and mode & stat.S_IXGRP and mode & stat.S_IXOTH


def test_built_pyz_runs_directly_as_an_executable(pyz):
    result = subprocess.run(["./dist/rustiz.pyz", "version"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"rustiz {rustiz.VERSION}"), result.stdout


def test_two_builds_are_byte_for_byte_identical(tmp_path):
    first, second = tmp_path / "one" / "rustiz.pyz", tmp_path / "two" / "rustiz.pyz"
    for output in (first, second):
        result = build(output)
        assert result.returncode == 0, result.stderr
    assert first.read_bytes() == second.read_bytes()


def test_compiled_modules_leave_out_function_annotations_which_their_sources_keep(pyz):
    """Annotations are for readers and type checkers: the .pyc files run without them (a smaller archive),
    while the sources packed beside them, which tracebacks quote, keep them."""
    import zipfile
    with zipfile.ZipFile(pyz) as archive:
        assert "def main(argv: Optional[list] = None) -> int:" in archive.read("rustiz.py").decode()
    result = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import rustiz; "
                             "print(rustiz.main.__annotations__, rustiz.__spec__.origin.endswith('.pyc'), "
                             "rustiz.Config._fields[:2])", str(pyz)], capture_output=True, text=True, timeout=30)
    assert result.stdout.strip() == "{} True ('config_path', 'database')", result.stderr


def test_source_file_runs_on_its_own(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "rustiz.py"), "version"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"rustiz {rustiz.VERSION}"), result.stdout


@pytest.fixture(scope="module")
def speedups_pyz(tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("speedups") / "rustiz.pyz"
    result = build(output, "--with-speedups")
    if result.returncode != 0:
        if "pip" in result.stderr and "download" in result.stderr:
            pytest.skip("--with-speedups needs `pip download orjson uvloop` from PyPI, which failed here: "
                        + result.stderr.strip().splitlines()[-1])
        pytest.fail("build_zipapp.py --with-speedups failed:\n" + result.stderr)
    return output


def ready_line(server: RustizServer) -> str:
    return next(line for line in server.stderr_lines if " ready on " in line)


def test_pyz_with_speedups_serves_with_uvloop_and_orjson_unpacked_into_the_cache(speedups_pyz, tmp_path):
    cache = tmp_path / "xdg-cache"
    server = RustizServer(speedups_pyz, tmp_path / "data", {"XDG_CACHE_HOME": str(cache)})
    try:
        server.start()
        line = ready_line(server)
        assert re.search(r"\buvloop\b", line) and re.search(r"\borjson\b", line), line
        assert "asyncio" not in line and "json (" not in line, line
        status, _, body = server.request("GET", "/public/v1/is-connected", {"Authorization": server.key})
        assert (status, body) == (200, b'{"connected":true}')

        unpacked = list((cache / "rustiz" / "speedups").iterdir())
        assert len(unpacked) == 1 and unpacked[0].is_dir(), unpacked
        assert (unpacked[0] / "orjson").is_dir() and (unpacked[0] / "uvloop").is_dir()
        # The running server loaded the compiled modules from there, not from some site-packages.
        with open(f"/proc/{server.process.pid}/maps") as handle:
            mapped = handle.read()
        assert f"{unpacked[0]}/uvloop/" in mapped and f"{unpacked[0]}/orjson/" in mapped
    finally:
        assert server.stop() == 0
    assert "Traceback" not in "\n".join(server.stderr_lines)


def test_pyz_with_speedups_answers_what_orjson_cannot_write(speedups_pyz, tmp_path):
    """Integers beyond 64 bits in a post's settings, or an MCP id above 2**64: 500s with orjson before."""
    server = RustizServer(speedups_pyz, tmp_path / "data", {"XDG_CACHE_HOME": str(tmp_path / "xdg-cache")})
    try:
        server.start()
        channel = Database(server).channel("Sky", "bluesky")
        headers = {"Authorization": server.key, "Content-Type": "application/json"}
        status, _, created = server.request("POST", "/public/v1/posts", headers, json.dumps({
            "type": "draft", "date": "2030-01-01T10:00:00Z", "shortLink": False, "tags": [], "posts": [{
                "integration": {"id": channel}, "value": [{"content": "hi", "image": []}],
                "settings": {"__type": "bluesky", "big": 10**30}}]}).encode())
        assert status == 201, created
        status, _, post = server.request("GET", f"/public/v1/posts/{json.loads(created)[0]['postId']}", headers)
        assert status == 200 and json.loads(post)["settings"]["big"] == 10**30
        status, _, answer = server.request("POST", f"/mcp/{server.key}", headers,
                                           b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping"}')
        assert (status, json.loads(answer)["error"]["code"]) == (400, -32600)
    finally:
        assert server.stop() == 0


def test_pyz_with_speedups_uses_asyncio_and_json_when_rustiz_no_speedups_is_set(speedups_pyz, tmp_path):
    server = RustizServer(speedups_pyz, tmp_path / "data",
                          {"XDG_CACHE_HOME": str(tmp_path / "xdg-cache"), "RUSTIZ_NO_SPEEDUPS": "1"})
    try:
        server.start()
        line = ready_line(server)
        assert re.search(r"\basyncio, json\b", line), line
        assert "uvloop" not in line and "orjson" not in line, line
        assert server.request("GET", "/health")[::2] == (200, b"ok")
        status, _, body = server.request("GET", "/public/v1/is-connected", {"Authorization": "wrong"})
        assert (status, body) == (401, b'{"msg":"Invalid API key"}')
    finally:
        assert server.stop() == 0
