"""Posts as files: GET /posts/export (JSON, CSV) and POST /posts/import (JSON, CSV, dry run, all or
nothing, limits), over real sockets. One server per module and backend; each test uses channels of its own."""
from __future__ import annotations

import csv
import io
import json
import threading
import time

import pytest

from support import API, Database, api, channel_post, post_body, uploaded, png_file


FUTURE = "2031-03-04T10:00:00.000Z"


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server()


def export(server, query: str) -> tuple:
    status, headers, raw = server.request("GET", f"{API}/posts/export?{query}", {"Authorization": server.key})
    return status, headers, raw


def import_file(server, data, query: str = "", content_type: str = "application/json") -> tuple:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return api(server, "POST", f"{API}/posts/import{query}", raw, headers={"Content-Type": content_type})


def live_posts(db: Database, channel_id: str) -> list:
    with db.connect() as connection:
        return connection.execute("SELECT content, publish_date, state, parent_post_id FROM post WHERE integration_id = ? "
                                  "AND deleted_at IS NULL ORDER BY publish_date, created_at", (channel_id,)).fetchall()


def scheduled_body(channel_id: str, *parts, date: str = FUTURE, **fields) -> dict:
    return post_body(channel_post(channel_id, *parts), type="schedule", date=date, **fields)


# --- export -------------------------------------------------------------------------------------------

def test_export_json_lists_threads_in_the_window_as_create_post_bodies(server):
    db = Database(server)
    channel = db.channel("Export", "bluesky")
    root, _ = db.thread(channel, "2031-01-02T10:00:00.000Z", ["<p>First</p>", "<p>Reply</p>"], settings="{}")
    db.link_tag(root, db.tag("launch"))
    db.post(channel, "2031-01-05T10:00:00.000Z", state="DRAFT", content="<p>Draft</p>", settings="{}")
    db.post(channel, "2032-01-01T10:00:00.000Z", content="<p>Outside</p>", settings="{}")
    status, headers, raw = export(server, "startDate=2031-01-01&endDate=2031-01-31")
    assert status == 200 and headers["content-type"].startswith("application/json")
    assert 'filename="rustiz-posts.json"' in headers["content-disposition"]
    bodies = [body for body in json.loads(raw) if body["posts"][0]["integration"]["id"] == channel]
    assert bodies == [
        {"type": "schedule", "date": "2031-01-02T10:00:00.000Z", "shortLink": False,
         "tags": [{"value": "launch", "label": "launch"}],
         "posts": [{"integration": {"id": channel}, "settings": {},
                    "value": [{"content": "<p>First</p>", "image": [], "delay": 0},
                              {"content": "<p>Reply</p>", "image": [], "delay": 0}]}]},
        {"type": "draft", "date": "2031-01-05T10:00:00.000Z", "shortLink": False, "tags": [],
         "posts": [{"integration": {"id": channel}, "settings": {},
                    "value": [{"content": "<p>Draft</p>", "image": [], "delay": 0}]}]}]


def test_export_csv_has_a_column_per_field_and_per_thread_part(server):
    db = Database(server)
    channel = db.channel("Export CSV", "bluesky")
    db.thread(channel, "2031-02-02T10:00:00.000Z", ["<p>One, with a comma</p>", "<p>Two</p>"], settings="{}")
    status, headers, raw = export(server, "format=csv&startDate=2031-02-01&endDate=2031-02-28")
    assert status == 200 and headers["content-type"] == "text/csv; charset=utf-8"
    rows = [row for row in csv.DictReader(io.StringIO(raw.decode())) if row["channel"] == channel]
    assert rows == [{"date": "2031-02-02T10:00:00.000Z", "type": "schedule", "channel": channel,
                     "content": "<p>One, with a comma</p>", "media": "", "settings": "{}", "tags": "",
                     "part2": "<p>Two</p>", "part2Media": ""}]


def test_export_refuses_a_bad_window_or_format_naming_the_field(server):
    assert api(server, "GET", f"{API}/posts/export")[1]["message"] == [
        "startDate must be a valid ISO 8601 date string", "endDate must be a valid ISO 8601 date string"]
    assert api(server, "GET", f"{API}/posts/export?startDate=2031-01-01&endDate=2031-02-30")[1]["message"] == [
        "endDate must be a valid ISO 8601 date string"]
    status, answer = api(server, "GET", f"{API}/posts/export?startDate=2031-02-01&endDate=2031-01-01")
    assert status == 400 and "endDate" in answer["message"] and "before startDate" in answer["message"]
    status, answer = api(server, "GET", f"{API}/posts/export?format=xml&startDate=2031-01-01&endDate=2031-02-01")
    assert status == 400 and answer["message"].startswith("format must be json or csv")


# --- import -------------------------------------------------------------------------------------------

def test_import_json_stores_every_row_and_answers_their_post_ids(server):
    db = Database(server)
    channel = db.channel("Import", "bluesky")
    rows = [scheduled_body(channel, "<p>A</p>", "<p>A reply</p>"),
            scheduled_body(channel, "<p>B</p>", date="2031-03-06T10:00:00Z")]
    status, answer = import_file(server, rows)
    assert status == 201, "\n".join(server.stderr_lines[-40:])
    assert answer["dryRun"] is False and answer["ok"] is True and answer["imported"] == 2
    assert [(row["row"], row["ok"], len(row["posts"])) for row in answer["rows"]] == [(1, True, 1), (2, True, 1)]
    assert live_posts(db, channel) == [
        ("<p>A</p>", FUTURE, "QUEUE", None), ("<p>A reply</p>", FUTURE, "QUEUE", answer["rows"][0]["posts"][0]["postId"]),
        ("<p>B</p>", "2031-03-06T10:00:00.000Z", "QUEUE", None)]


def test_import_takes_one_create_post_body_as_one_row(server):
    db = Database(server)
    channel = db.channel("Import one", "bluesky")
    status, answer = import_file(server, scheduled_body(channel, "<p>Alone</p>"))
    assert status == 201 and answer["imported"] == 1
    assert [row[0] for row in live_posts(db, channel)] == ["<p>Alone</p>"]


def test_dry_run_checks_every_row_and_stores_nothing(server):
    db = Database(server)
    channel = db.channel("Dry", "bluesky")
    rows = [scheduled_body(channel, "<p>Fine</p>"), scheduled_body(channel, ""),
            scheduled_body("no-such-channel", "<p>Lost</p>")]
    status, answer = import_file(server, rows, "?dryRun=1")
    assert status == 400 and answer["dryRun"] is True and answer["ok"] is False
    assert answer["rows"][0] == {"row": 1, "ok": True}
    assert answer["rows"][1]["ok"] is False and answer["rows"][1]["errors"]
    assert answer["rows"][2] == {"row": 3, "ok": False, "errors": ["Integration with id no-such-channel not found"]}
    assert "2 of 3 rows failed" in answer["message"]
    status, answer = import_file(server, rows[:1], "?dryRun=1")
    assert (status, answer) == (200, {"dryRun": True, "ok": True, "rows": [{"row": 1, "ok": True}]})
    assert live_posts(db, channel) == []


def test_an_import_with_one_bad_row_stores_nothing_and_names_the_row(server):
    db = Database(server)
    channel = db.channel("All or nothing", "bluesky")
    rows = [scheduled_body(channel, "<p>Good</p>"), scheduled_body(channel, "<p>Past</p>", date="2020-01-01T00:00:00Z"),
            scheduled_body(channel, "<p>Also good</p>", date="2031-03-09T10:00:00Z")]
    status, answer = import_file(server, rows)
    assert status == 400 and answer["ok"] is False and "imported" not in answer
    assert [row["ok"] for row in answer["rows"]] == [True, False, True]
    assert "is in the past" in answer["rows"][1]["errors"][0]
    assert answer["message"].startswith("1 of 3 rows failed, so nothing was imported: row 2: date 2020-01-01")
    assert live_posts(db, channel) == []


def test_exported_json_imports_back_as_the_same_posts(server):
    db = Database(server)
    channel = db.channel("Round trip", "bluesky")
    image = uploaded(server, png_file())
    first = post_body(channel_post(channel, ("<p>Pic</p>", [{"id": image["id"], "path": image["path"]}]), "<p>More</p>"),
                      type="schedule", date="2031-04-02T08:30:00Z")
    assert api(server, "POST", f"{API}/posts", first)[0] == 201
    assert api(server, "POST", f"{API}/posts", scheduled_body(channel, "<p>Second</p>", date="2031-04-03T08:30:00Z",
                                                              inter=7))[0] == 201
    before = live_posts(db, channel)
    status, _, raw = export(server, "startDate=2031-04-01&endDate=2031-04-30")
    exported = [body for body in json.loads(raw) if body["posts"][0]["integration"]["id"] == channel]
    db.execute("UPDATE post SET deleted_at = ? WHERE integration_id = ?", "2031-01-01T00:00:00.000Z", channel)
    status, answer = import_file(server, exported)
    assert status == 201, answer
    assert [row[:3] for row in live_posts(db, channel)] == [row[:3] for row in before]
    status, _, again = export(server, "startDate=2031-04-01&endDate=2031-04-30")
    assert [body for body in json.loads(again) if body["posts"][0]["integration"]["id"] == channel] == exported


def test_import_csv_turns_each_line_into_a_post_with_its_parts_media_and_settings(server):
    db = Database(server)
    channel = db.channel("CSV", "bluesky")
    image = uploaded(server, png_file())
    relative = image["path"][image["path"].index("/uploads/"):]
    text = ("date,channel,content,media,part2,part2Media,part3,settings,tags\r\n"
            f'2031-05-01T09:00:00Z,{channel},"<p>Hello, CSV</p>",{relative},<p>Second</p>,,<p>Third</p>,{{}},\r\n'
            f"2031-05-02T09:00:00Z,{channel},Plain text,,,,,,\r\n")
    status, answer = import_file(server, text.encode(), content_type="text/csv")
    assert status == 201, answer
    assert [row[:3] for row in live_posts(db, channel)] == [
        ("<p>Hello, CSV</p>", "2031-05-01T09:00:00.000Z", "QUEUE"), ("<p>Second</p>", "2031-05-01T09:00:00.000Z", "QUEUE"),
        ("<p>Third</p>", "2031-05-01T09:00:00.000Z", "QUEUE"), ("Plain text", "2031-05-02T09:00:00.000Z", "QUEUE")]
    stored_image = db.row("SELECT image FROM post WHERE integration_id = ? AND content = ?", channel, "<p>Hello, CSV</p>")
    assert json.loads(stored_image[0]) == [{"id": image["id"], "path": image["path"]}]


FORMULA_CELLS = ["=HYPERLINK(\"https://evil.example\",\"x\")", "+1+2", "-2+3", "@SUM(A1:A9)", "\tTAB=1", "\rCR=1"]


def test_csv_export_neutralises_formulas_and_imports_them_back_unchanged(server):
    # OWASP's CSV injection advice: a cell a spreadsheet would run as a formula gets a single quote first.
    db = Database(server)
    channel = db.channel("Formulas", "bluesky")
    contents = FORMULA_CELLS + ["'=already quoted", "''two quotes", "'just a quote", "plain = text"]
    for day, content in enumerate(contents, 1):
        body = scheduled_body(channel, content, "=part two", date=f"2031-06-{day:02d}T09:00:00Z")
        assert api(server, "POST", f"{API}/posts", body)[0] == 201
    window = "format=csv&startDate=2031-06-01&endDate=2031-06-30"
    status, _, raw = export(server, window)
    assert status == 200
    rows = [row for row in csv.DictReader(io.StringIO(raw.decode(), newline="")) if row["channel"] == channel]
    assert [row[0] for row in live_posts(db, channel) if row[3] is None] == contents
    assert [row["content"] for row in rows] == ["'" + text for text in FORMULA_CELLS] + [
        "''=already quoted", "'" + "''two quotes", "'just a quote", "plain = text"]
    assert {row["part2"] for row in rows} == {"'=part two"}
    for row in rows:
        assert not row["content"].startswith(("=", "+", "-", "@", "\t", "\r")), row["content"]
    before = live_posts(db, channel)
    db.execute("UPDATE post SET deleted_at = ? WHERE integration_id = ?", "2031-01-01T00:00:00.000Z", channel)
    status, answer = import_file(server, raw, content_type="text/csv")
    assert status == 201, answer
    assert [row[:3] for row in live_posts(db, channel)] == [row[:3] for row in before]
    assert export(server, window)[2] == raw


def test_a_hand_written_csv_cell_that_begins_with_a_quote_keeps_it_unless_it_guards_a_formula(server):
    db = Database(server)
    channel = db.channel("Quotes", "bluesky")
    text = (f"date,channel,content\r\n2031-07-01T09:00:00Z,{channel},'Tis the season\r\n"
            f"2031-07-02T09:00:00Z,{channel},'=not a formula\r\n")
    status, answer = import_file(server, text.encode(), content_type="text/csv")
    assert status == 201, answer
    assert [row[0] for row in live_posts(db, channel)] == ["'Tis the season", "=not a formula"]


def test_csv_media_must_be_uploads_of_the_organization(server):
    db = Database(server)
    channel = db.channel("CSV media", "bluesky")
    text = f"date,channel,content,media\r\n2031-05-03T09:00:00Z,{channel},Look,https://example.com/cat.png\r\n"
    status, answer = import_file(server, text.encode(), content_type="text/csv")
    assert status == 400
    assert answer["rows"][0]["errors"][0].startswith("media: https://example.com/cat.png is not an upload of this "
                                                     "organization; upload it first (POST /public/v1/upload-from-url")
    assert live_posts(db, channel) == []


def test_csv_refuses_unknown_or_missing_columns_and_bad_cells_naming_them(server):
    db = Database(server)
    channel = db.channel("CSV checks", "bluesky")
    status, answer = import_file(server, b"date,channel,content,colour\r\n", content_type="text/csv")
    assert status == 400 and answer["message"].startswith("Unknown CSV column 'colour'")
    status, answer = import_file(server, b"date,content\r\nx,y\r\n", content_type="text/csv")
    assert status == 400 and answer["message"].startswith("The CSV file has no channel column")
    text = (f"date,channel,content,settings,type\r\n2031-05-04T09:00:00Z,{channel},A,[1],schedule\r\n"
            f"2031-05-04T10:00:00Z,{channel},B,,later\r\n\r\n2031-05-04T11:00:00Z,{channel},C,{{}},draft,extra\r\n"
            f"2031-05-04T12:00:00Z,{channel}\r\n")
    status, answer = import_file(server, text.encode(), "?dryRun=1", content_type="text/csv")
    assert status == 400
    assert answer["rows"][0]["errors"] == ["settings must be a JSON object"]
    assert answer["rows"][1]["errors"] == ["type must be schedule, draft, now or queue, not 'later'"]
    assert answer["rows"][2]["errors"][0].startswith("the line has 6 cells, but the header names 5 columns")
    assert answer["rows"][3]["ok"] is False  # no content: the API's own message
    assert "content must be a non-empty string" in answer["rows"][3]["errors"][0]


def test_import_limits_and_bad_bodies_are_400s_that_say_why(server):
    db = Database(server)
    channel = db.channel("Limits", "bluesky")
    status, answer = import_file(server, [scheduled_body(channel, "<p>x</p>")] * 1001, "?dryRun=1")
    assert status == 400 and answer["message"].startswith("The file holds 1001 rows, more than the 1000")
    assert import_file(server, [])[1]["message"] == "The file holds no rows: nothing to import"
    assert import_file(server, {"hello": 1})[1]["message"].startswith("The body must be a JSON array of CreatePost")
    assert import_file(server, [scheduled_body(channel, "<p>x</p>")], "?dryRun=maybe")[1]["message"] == \
        "dryRun must be 1 or 0 (true or false), not 'maybe'"
    status, answer = import_file(server, [7])
    assert status == 400 and answer["rows"] == [{"row": 1, "ok": False,
                                                 "errors": ["row must be a JSON object (a CreatePost body)"]}]
    status, answer = import_file(server, b"\xff\xfe", content_type="text/csv")
    assert status == 400 and answer["message"] == "The CSV file is not UTF-8 text; save it as UTF-8"


def large_csv(channel: str, rows: int = 1000, parts: int = 100) -> bytes:
    """About 2 MB: `rows` posts of `parts` thread parts each, every text its own."""
    header = ["date", "channel", "content"] + [f"part{number}" for number in range(2, parts + 1)]
    lines = [",".join(header)]
    for row in range(rows):
        texts = [f"Row {row} part {part} of a long thread" for part in range(1, parts + 1)]
        lines.append(",".join([f"2031-09-{1 + row % 28:02d}T{row % 24:02d}:{row % 60:02d}:00Z", channel] + texts))
    return ("\r\n".join(lines) + "\r\n").encode()


def small_csv(channel: str) -> bytes:
    return f"date,channel,content\r\n2031-09-01T00:00:00Z,{channel},Small\r\n".encode()


def test_a_large_import_runs_off_the_event_loop_and_a_second_one_meanwhile_is_told_to_retry(server):
    db = Database(server)
    channel = db.channel("Large import", "bluesky")
    other_organization, other_key = db.organization()
    other_channel = db.channel("Other org's", "bluesky", organization_id=other_organization)
    data = large_csv(channel)
    finished: dict = {}

    def run_import() -> None:
        finished["answer"] = import_file(server, data, "?dryRun=1", content_type="text/csv")
        finished["at"] = time.monotonic()

    importer = threading.Thread(target=run_import)
    importer.start()
    time.sleep(0.5)  # the file is sent and being checked
    asked = time.monotonic()
    status, answer = api(server, "GET", f"{API}/integrations", key=other_key)
    answered = time.monotonic()
    busy = api(server, "POST", f"{API}/posts/import", small_csv(other_channel), key=other_key,
               headers={"Content-Type": "text/csv"})
    importer.join(300)
    status_import, report = finished["answer"]
    assert status_import == 200 and report["ok"] and len(report["rows"]) == 1000, str(report)[:500]
    assert status == 200 and [channel["id"] for channel in answer] == [other_channel], answer
    # Another organization's request is answered while the import still runs, not after it (generous bounds:
    # the import itself takes seconds).
    assert answered < finished["at"], (answered - asked, finished["at"] - asked)
    assert answered - asked < 3, answered - asked
    assert busy[0] == 503 and "Another import is being checked" in busy[1]["message"], busy
    status, report = api(server, "POST", f"{API}/posts/import", small_csv(other_channel), key=other_key,
                         headers={"Content-Type": "text/csv"})
    assert status == 201 and report["imported"] == 1, report
