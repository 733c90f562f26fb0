"""The media library page (#/library) in Chromium (Playwright, as tests/test_web.py): every upload, newest first,
with its thumbnail (a video: an icon), type, size in the locale, dimensions and the posts using it; search;
alt text saved; select and delete, a refused delete listing the queued posts that use the file; paging.

The listing's answers are the API's documented shapes (GET /public/v1/media, PUT and DELETE /media/:id), served
by the test through Playwright's routing so that the page is checked whatever the data (a 409, many pages);
uploading goes to the real server.

Set RUSTIZ_PAGE_SHOTS=<folder> to keep screenshots."""
from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlparse

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import open_page, placeholder_text, show, sideways_overflow  # noqa: F401
from test_web_channels import serious_axe_violations, shoot
from support import png_file, uploaded  # noqa: E402

USE = {"id": "post-queued", "state": "QUEUE", "publishDate": "2030-01-02T09:00:00.000Z",
       "integration": {"id": "c1", "name": "Company news", "picture": None, "providerIdentifier": "webhook"}}


class FakeLibrary:
    """The media API's answers for one page, with what the page asked for."""

    def __init__(self, items: list, pages: int = 1):
        self.items, self.pages, self.requests = items, pages, []

    def handle(self, route) -> None:
        request = route.request
        url = urlparse(request.url)
        self.requests.append((request.method, url.path, url.query, request.post_data))
        if request.method == "GET":
            search = parse_qs(url.query).get("search", [""])[0].lower()
            media = [m for m in self.items if search in (m["name"] + (m["alt"] or "")).lower()]
            route.fulfill(status=200, json={"media": media, "pages": self.pages})
        elif request.method == "PUT":
            item = next(m for m in self.items if url.path.endswith("/" + m["id"]))
            item.update(json.loads(request.post_data))
            route.fulfill(status=200, json={**item})
        elif url.path.endswith("/used"):
            route.fulfill(status=409, json={"message": "queued posts use it", "usedBy": [USE]})
        else:
            self.items = [m for m in self.items if not url.path.endswith("/" + m["id"])]
            route.fulfill(status=200, json={"id": url.path.rsplit("/", 1)[1], "deleted": True})


def media_item(server, name: str, **fields) -> dict:
    made = uploaded(server, png_file(64, 40, pixel=bytes((29, 78, 216))))
    return {"id": name.split(".")[0], "name": name, "originalName": name, "path": made["path"], "type": "image",
            "size": 1234567, "width": 1920, "height": 1080, "alt": None, "createdAt": "2030-01-01T09:00:00.000Z",
            "usedBy": [], **fields}


def open_library(server, open_page, library: FakeLibrary, width: int, scheme: str):
    page = open_page(server, width, scheme)
    page.route(re.compile(r".*/public/v1/media.*"), library.handle)
    show(page, "#/library")
    return page


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (390, "dark"), (360, "light")))
def test_the_library_shows_every_upload_with_its_facts(start_server_with_fakes, open_page, width, scheme):
    server = start_server_with_fakes()
    library = FakeLibrary([media_item(server, "launch.png", usedBy=[USE], alt="A rocket"),
                           {**media_item(server, "PXL_20261206_071314_a_long_camera_file_name_without_a_space.mp4"), "type": "video", "path": "/uploads/teaser.mp4",
                            "width": None, "height": None, "size": 987}])
    page = open_library(server, open_page, library, width, scheme)
    expect(page.get_by_role("link", name="Media")).to_have_attribute("aria-current", "page") if width > 768 else None
    cards = page.locator("li.media-card")
    expect(cards).to_have_count(2)
    first = cards.first
    expect(first.locator("img")).to_have_attribute("alt", "A rocket")
    expect(first).to_contain_text("Picture · 1.2 MB · 1,920 × 1,080 px")
    expect(first.get_by_role("link", name="Company news")).to_have_attribute("href", "#/post/post-queued")
    expect(first).to_contain_text("Used in 1 post")
    expect(cards.nth(1).get_by_role("img", name="Video")).to_be_visible()
    expect(cards.nth(1)).to_contain_text("Video · 987 byte")
    expect(cards.nth(1)).to_contain_text("Not used in any post")
    assert placeholder_text(page) == []
    assert sideways_overflow(page) <= 0
    shoot(page, f"library-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    assert page.problems == []


def test_search_alt_text_and_paging(start_server_with_fakes, open_page):
    server = start_server_with_fakes()
    library = FakeLibrary([media_item(server, "launch.png"), media_item(server, "team.png")], pages=3)
    page = open_library(server, open_page, library, 1440, "dark")
    expect(page.get_by_text("Page 1 of 3")).to_be_visible()
    page.get_by_role("link", name="Older").click()
    expect(page.get_by_text("Page 2 of 3")).to_be_visible()
    assert ("GET", "/public/v1/media", "page=2") in [r[:3] for r in library.requests]
    page.get_by_label("Search by name or alt text").fill("team")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("li.media-card")).to_have_count(1)
    assert "search=team" in page.url and "page=1" in page.url
    card = page.locator("li.media-card")
    card.get_by_label("Alt text of team.png").fill("The team at the launch")
    card.get_by_role("button", name="Save alt text").click()
    expect(card.get_by_role("status")).to_have_text("Saved")
    assert library.requests[-1][0] == "PUT" and json.loads(library.requests[-1][3]) == {"alt": "The team at the launch"}
    assert page.problems == []


def test_bulk_delete_lists_the_queued_posts_that_still_use_a_file(start_server_with_fakes, open_page):
    server = start_server_with_fakes()
    library = FakeLibrary([media_item(server, "old.png"), media_item(server, "used.png")])
    page = open_library(server, open_page, library, 390, "dark")
    delete = page.get_by_role("button", name=re.compile("^Delete selected"))
    expect(delete).to_be_disabled()
    page.get_by_label("Select old.png").check()
    page.get_by_label("Select used.png").check()
    expect(delete).to_have_text("Delete selected (2)")
    delete.click()
    page.get_by_role("dialog", name="Delete media").get_by_role("button", name="Delete").click()
    used = page.locator("li.media-card[data-id=used]")
    expect(used.locator(".media-problem")).to_contain_text("Still used by these queued posts")
    expect(used.locator(".media-problem").get_by_role("link")).to_have_attribute("href", "#/post/post-queued")
    expect(page.locator("li.media-card[data-id=old]")).to_have_count(0)
    assert [r[:2] for r in library.requests if r[0] == "DELETE"] == [
        ("DELETE", "/public/v1/media/old"), ("DELETE", "/public/v1/media/used")]
    assert sideways_overflow(page) <= 0
    shoot(page, "library-refused-390-dark")
    assert serious_axe_violations(page) == []
    assert page.problems == []


def test_upload_adds_to_the_library(start_server_with_fakes, open_page, tmp_path):
    server = start_server_with_fakes()
    library = FakeLibrary([])
    page = open_library(server, open_page, library, 1440, "light")
    expect(page.get_by_text("No media yet")).to_be_visible()
    picture = tmp_path / "new.png"
    picture.write_bytes(png_file(8, 8))
    with page.expect_response(lambda response: "/public/v1/upload" in response.url) as done:
        page.locator("input[type=file]").set_input_files(str(picture))
    assert done.value.status in (200, 201)
    expect(page.get_by_role("button", name="Upload")).to_be_visible()
    assert page.problems == []


def test_the_library_with_the_server_s_own_answers(start_server_with_fakes, open_page, tmp_path):
    """The same page against the real API (the media library's routes): dimensions, alt text, a refused delete."""
    from support import API, api, iso, scheduled, webhook_channel
    from fakes.webhook import FakeWebhookReceiver
    server = start_server_with_fakes()
    if api(server, "GET", f"{API}/media?page=1")[0] == 404:
        pytest.skip("this build has no media library API (GET /public/v1/media) yet")
    receiver = FakeWebhookReceiver()
    try:
        channel = webhook_channel(server, receiver, "Company news")
        picture = uploaded(server, png_file(64, 40, pixel=bytes((29, 78, 216))))
        scheduled(server, channel, ("<p>Soon</p>", [{"id": picture["id"], "path": picture["path"]}]),
                  type="schedule", date=iso(86400))
        page = open_page(server, 1440, "light")
        show(page, "#/library")
        card = page.locator("li.media-card")
        expect(card).to_have_count(1)
        expect(card).to_contain_text("64 × 40 px")
        expect(card).to_contain_text("Used in 1 post")
        card.get_by_label(re.compile("^Alt text of")).fill("A blue square")
        card.get_by_role("button", name="Save alt text").click()
        expect(card.get_by_role("status")).to_have_text("Saved")
        assert api(server, "GET", f"{API}/media?page=1")[1]["media"][0]["alt"] == "A blue square"
        card.locator("input.pick").check()
        page.get_by_role("button", name=re.compile("^Delete selected")).click()
        page.get_by_role("dialog", name="Delete media").get_by_role("button", name="Delete").click()
        expect(card.locator(".media-problem")).to_contain_text("Still used by these queued posts")
        expect(card.locator(".media-problem").get_by_role("link")).to_contain_text("Company news")
        assert serious_axe_violations(page) == []
        assert page.problems == []
    finally:
        receiver.close()
