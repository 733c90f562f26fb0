"""`rustiz posts export` and `rustiz posts import`: on a real instance's data directory, no request to the
server, through the same checks as POST /public/v1/posts/import; the running server sees the result."""
from __future__ import annotations

import csv
import io
import json

import pytest

from conftest import run_cli
from support import API, Database, api, channel_post, post_body


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server()


def posts_cli(server, *arguments: str):
    return run_cli(server.pyz, "posts", *arguments,
                   env={"RUSTIZ_CONFIG": str(server.config_path), "RUSTIZ_DATABASE": server.database})


def listed(server, channel_id: str, start: str = "2032-01-01", end: str = "2032-12-31") -> list:
    status, answer = api(server, "GET", f"{API}/posts?startDate={start}&endDate={end}")
    assert status == 200
    return [(post["content"], post["publishDate"]) for post in answer["posts"] if post["integration"]["id"] == channel_id]


def test_import_stores_every_row_and_the_running_server_lists_them(server, tmp_path):
    db = Database(server)
    channel = db.channel("CLI import", "bluesky")
    rows = [post_body(channel_post(channel, f"<p>From the CLI {number}</p>"), type="schedule",
                      date=f"2032-01-0{number}T10:00:00Z") for number in (1, 2)]
    path = tmp_path / "posts.json"
    path.write_text(json.dumps(rows))
    result = posts_cli(server, "import", str(path))
    assert result.returncode == 0, result.stderr
    assert [line.split()[:3] for line in result.stdout.splitlines()] == [["row", "1:", "ok"], ["row", "2:", "ok"]]
    assert "imported 2 rows into organization" in result.stderr
    assert listed(server, channel) == [("<p>From the CLI 1</p>", "2032-01-01T10:00:00.000Z"),
                                       ("<p>From the CLI 2</p>", "2032-01-02T10:00:00.000Z")]
    assert db.row("SELECT creation_method FROM post WHERE integration_id = ? LIMIT 1", channel)[0] == "CLI"


def test_a_failed_row_prints_its_errors_exits_1_and_stores_nothing(server, tmp_path):
    db = Database(server)
    channel = db.channel("CLI refused", "bluesky")
    path = tmp_path / "posts.csv"
    path.write_text(f"date,channel,content\r\n2032-02-01T10:00:00Z,{channel},Fine\r\n"
                    f"2032-02-02T10:00:00Z,unknown-channel,Lost\r\n")
    for dry_run in ((), ("--dry-run",)):
        result = posts_cli(server, "import", str(path), *dry_run)
        assert result.returncode == 1, result.stderr
        assert result.stdout == "row 1: ok\n"
        assert "row 2: failed: Integration with id unknown-channel not found" in result.stderr
        assert "Traceback" not in result.stderr
    assert listed(server, channel, "2032-02-01", "2032-02-28") == []


def test_dry_run_checks_and_stores_nothing(server, tmp_path):
    db = Database(server)
    channel = db.channel("CLI dry", "bluesky")
    path = tmp_path / "posts.csv"
    path.write_text(f"date,channel,content\r\n2032-03-01T10:00:00Z,{channel},Checked only\r\n")
    result = posts_cli(server, "import", str(path), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "dry run: nothing stored" in result.stderr
    assert listed(server, channel, "2032-03-01", "2032-03-31") == []


def test_export_prints_json_that_imports_back_and_csv_with_a_header(server, tmp_path):
    db = Database(server)
    channel = db.channel("CLI export", "bluesky")
    db.thread(channel, "2032-04-02T10:00:00.000Z", ["<p>Exported</p>", "<p>Its reply</p>"], settings="{}")
    result = posts_cli(server, "export", "--from", "2032-04-01", "--to", "2032-04-30")
    assert result.returncode == 0, result.stderr
    exported = [body for body in json.loads(result.stdout) if body["posts"][0]["integration"]["id"] == channel]
    assert [value["content"] for value in exported[0]["posts"][0]["value"]] == ["<p>Exported</p>", "<p>Its reply</p>"]
    result = posts_cli(server, "export", "--format", "csv", "--from", "2032-04-01", "--to", "2032-04-30")
    rows = [row for row in csv.DictReader(io.StringIO(result.stdout)) if row["channel"] == channel]
    assert [(row["content"], row["part2"]) for row in rows] == [("<p>Exported</p>", "<p>Its reply</p>")]

    db.execute("UPDATE post SET deleted_at = ? WHERE integration_id = ?", "2032-01-01T00:00:00.000Z", channel)
    path = tmp_path / "exported.json"
    path.write_text(json.dumps(exported))
    assert posts_cli(server, "import", str(path)).returncode == 0
    assert listed(server, channel, "2032-04-01", "2032-04-30") == [("<p>Exported</p>", "2032-04-02T10:00:00.000Z")]


def test_bad_arguments_are_one_clear_line(server, tmp_path):
    result = posts_cli(server, "export", "--from", "someday")
    assert result.returncode == 2 and result.stderr.strip() == (
        "rustiz: cannot export: --from must be a valid ISO 8601 date string")
    result = posts_cli(server, "import", str(tmp_path / "missing.json"))
    assert result.returncode == 2 and "cannot read" in result.stderr and "No such file" in result.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    result = posts_cli(server, "import", str(broken))
    assert result.returncode == 2 and result.stderr.startswith(f"rustiz: {broken} is not a JSON file")
    result = posts_cli(server, "import", str(broken), "--org", "nope")
    assert "no organization has the id nope" in result.stderr
