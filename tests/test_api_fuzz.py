"""schemathesis against the running server, driven by its own /public/v1/openapi.json: no 5xx, and no
answer that breaks the schema the document gives for it.

Real channel and post ids are offered to the generator (a dictionary it draws from most of the time),
so the handlers get past "not found" into their real work. The seed is fixed so that CI is
repeatable; RUSTIZ_FUZZ_SEED=<n> explores other cases, RUSTIZ_FUZZ_EXAMPLES=<n> more of them."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from support import Database, png_file, uploaded

# upload-from-url would fetch whatever URL the generator makes up, from the internet: tests never do.
# MCP's routes take JSON-RPC, which the document does not describe: tests/test_mcp_transport.py covers them.
NOT_FUZZED = ("/public/v1/upload-from-url", "/mcp", "/mcp/{apiKey}", "/sse/{apiKey}", "/message/{apiKey}")
NOT_FUZZED += ("/public/v1/autopost/preview", "/public/v1/autopost/{id}/fetch")  # (they fetch feeds: as upload-from-url)
FUZZ_SECONDS = 240  # a hard limit for the whole run, which takes 40 to 120 s on 2 cores beside the other test workers


def fuzz_config(ids: dict) -> str:
    """schemathesis.toml: which real ids go where. Deletions get their own ids, so that deleting does not
    leave every other operation with nothing but "not found"."""
    def bind(dictionary: str) -> str:
        return f'{{ dictionary = "{dictionary}", probability = 0.8 }}'

    def operation(path_regex: str, deleting: bool, parameter: str, dictionary: str) -> str:
        method_filter = 'include-method = "DELETE"' if deleting else 'exclude-method = "DELETE"'
        return (f'[[operations]]\ninclude-path-regex = {json.dumps(path_regex)}\n{method_filter}\n'
                f'parameters = {{ "{parameter}" = {bind(dictionary)} }}\n')

    dictionaries = "".join(f"{name} = {{ values = {json.dumps(values)} }}\n" for name, values in ids.items())
    return "\n".join([
        f"[dictionaries]\n{dictionaries}",
        f'[parameters]\n"path.integration" = {bind("channels")}\n"path.postId" = {bind("posts")}\n'
        f'"body.posts[*].integration.id" = {bind("channels")}\n'
        + "".join(f'"path.{part}" = {bind(part)}\n' for part in ("year", "month", "day", "name")),
        operation("/(integration-settings|integration-trigger|find-slot)/", False, "path.id", "channels"),
        operation(r"/posts/\{id\}", False, "path.id", "posts"),
        operation(r"/integrations/\{id\}", True, "path.id", "doomed_channels"),
        operation(r"/posts/\{id\}$", True, "path.id", "doomed_posts"),
        operation(r"/posts/group/", True, "path.group", "doomed_groups")])


@pytest.fixture
def fuzzed_server(start_server):
    server = start_server(env={"API_LIMIT": "0", "REQUEST_LIMIT": "0"})
    db = Database(server)
    channels = [db.channel("Acme on X", "x", profile="acme", customer_id=db.customer("Acme")),
                db.channel("Sky", "bluesky"), db.channel("Pins", "pinterest")]
    posts = db.thread(channels[1], "2031-01-02T10:00:00.000Z", ["<p>Hello</p>", "<p>a reply</p>"]) + [
        db.post(channels[0], "2031-02-01T09:00:00.000Z", state="DRAFT"),
        db.post(channels[1], "2024-01-01T09:00:00.000Z", state="ERROR", error="the platform said no"),
        db.post(channels[1], "2024-01-02T09:00:00.000Z", state="PUBLISHED", release_id="missing",
                settings='{"__type":"bluesky"}'),
        db.post(channels[2], "2031-03-01T09:00:00.000Z", interval=7, settings='{"__type":"pinterest"}')]
    doomed_channel = db.channel("To delete", "bluesky")
    doomed_posts = [db.post(channels[1], "2031-04-01T09:00:00.000Z", settings='{"__type":"bluesky"}')
                    for _ in range(4)] + [db.post(doomed_channel, "2031-04-02T09:00:00.000Z")]
    doomed_groups = [db.row("SELECT post_group FROM post WHERE id = ?", post)[0] for post in doomed_posts[:2]]
    db.notification("<p>Published</p>", "2024-05-02T10:00:00.000Z")
    upload = dict(zip(("year", "month", "day", "name"), uploaded(server, png_file())["path"].rsplit("/", 4)[1:]))
    return server, fuzz_config({"channels": channels, "posts": posts, "doomed_channels": [doomed_channel],
                                "doomed_posts": doomed_posts[2:], "doomed_groups": doomed_groups,
                                **{part: [value] for part, value in upload.items()}})


@pytest.mark.timeout(FUZZ_SECONDS + 30)
def test_schemathesis_finds_no_server_error_and_no_answer_off_its_schema(fuzzed_server, tmp_path):
    server, config = fuzzed_server
    config_file = tmp_path / "schemathesis.toml"
    config_file.write_text(config)
    # One worker: with two, Hypothesis's threads can hit CPython 3.11's ast.parse thread-safety bug
    # ("AST constructor recursion depth mismatch"), an error in the fuzzer rather than in rustiz.
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config_file), "--no-color", "run",
               f"{server.url}/public/v1/openapi.json", "--url", server.url,
               "--header", f"Authorization: {server.key}",
               "--checks", "not_a_server_error,response_schema_conformance",
               "--phases", "examples,coverage,fuzzing", "--workers", "1", "--request-timeout", "20",
               "--max-examples", os.environ.get("RUSTIZ_FUZZ_EXAMPLES", "25"),
               "--seed", os.environ.get("RUSTIZ_FUZZ_SEED", "2026")]
    for path in NOT_FUZZED:
        command += ["--exclude-path", path]
    result = subprocess.run(command, capture_output=True, text=True, timeout=FUZZ_SECONDS,
                            cwd=tmp_path)  # where schemathesis keeps its cache, out of the work tree
    server_log = "\n".join(server.stderr_lines[-80:])  # a 500's traceback is here
    assert result.returncode == 0, f"{result.stdout[-12000:]}\n{result.stderr[-3000:]}\nserver log:\n{server_log}"
