"""Posts as files and the duplicate warning in a real browser (Chromium driven by Playwright, as test_web.py):
the import page checks a file row by row, then imports it; the composer warns about a duplicate and posts it
anyway when asked."""
from __future__ import annotations

import json

import pytest

from test_web import browser, expect, open_page, sign_in  # noqa: F401  (the fixtures, and the skip without Chromium)
from support import API, Database, api, channel_post, post_body


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server()


def roots_on(server, channel_id: str) -> list:
    answer = api(server, "GET", f"{API}/posts?startDate=2031-01-01&endDate=2031-12-31")[1]
    return sorted(post["content"] for post in answer["posts"] if post["integration"]["id"] == channel_id)


def test_the_import_page_shows_each_row_s_result_then_imports_them_all(server, open_page, tmp_path):
    channel = Database(server).channel("Imported", "bluesky")
    page = open_page(server)
    sign_in(page, server)
    page.get_by_role("link", name="Import").click()
    expect(page.get_by_role("heading", name="Import posts")).to_be_visible()

    page.get_by_label("…or paste its text").fill(f"date,channel,content\n2031-08-01T10:00:00Z,{channel},From CSV\n"
                                                 f"2031-08-02T10:00:00Z,nowhere,Lost\n")
    page.get_by_role("button", name="Check first, store nothing").click()
    expect(page.locator(".import-rows li.failed")).to_have_text("Row 2: Integration with id nowhere not found")
    expect(page.locator(".import-rows li.ok")).to_have_text("Row 1: ok")
    expect(page.get_by_role("alert")).to_contain_text("1 of 2 rows failed")

    rows = [post_body(channel_post(channel, f"<p>From JSON {number}</p>"), type="schedule",
                      date=f"2031-08-0{number}T10:00:00Z") for number in (3, 4)]
    file = tmp_path / "posts.json"
    file.write_text(json.dumps(rows))
    page.get_by_label("File (JSON or CSV)").set_input_files(str(file))
    expect(page.get_by_label("…or paste its text")).to_have_value(json.dumps(rows))
    page.get_by_role("button", name="Check first, store nothing").click()
    expect(page.locator(".import-results")).to_contain_text("Every row is fine (2): nothing was stored yet.")
    assert roots_on(server, channel) == []
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.locator(".import-results")).to_contain_text("Imported 2 rows.")
    assert roots_on(server, channel) == ["<p>From JSON 3</p>", "<p>From JSON 4</p>"]


def test_the_composer_warns_of_a_duplicate_and_posts_it_anyway_when_asked(server, open_page):
    channel = Database(server).channel("Twice", "bluesky")
    body = post_body(channel_post(channel, "Same again"), type="schedule", date="2031-09-01T10:00:00Z")
    assert api(server, "POST", f"{API}/posts", body)[0] == 201
    page = open_page(server)
    sign_in(page, server)
    page.goto("/#/compose")
    page.get_by_role("checkbox", name="Twice").check()
    page.get_by_label("Post", exact=True).fill("Same again")
    page.get_by_label("Date and time (UTC)").fill("2031-09-01T12:00")
    page.get_by_role("button", name="Schedule").click()
    expect(page.get_by_role("alert")).to_contain_text("Duplicate post: the same text is already queued on channel Twice")
    assert roots_on(server, channel) == ["Same again"]
    page.get_by_role("button", name="Post anyway").click()
    expect(page.locator("p.made")).to_contain_text("Scheduled: the post")
    assert roots_on(server, channel) == ["<p>Same again</p>", "Same again"]
