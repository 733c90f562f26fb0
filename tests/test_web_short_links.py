"""Short links in the web app (issue 26), in Chromium (Playwright, as tests/test_web.py): the organization's
preference in Settings → General, the composer's question when it is "ask" (and none when it is not, or when the
post has no link), and the post page's links with their clicks, bots apart, and a bar per day; at 1440 and
390 px, light and dark; axe-core finds nothing serious; no console error, no sideways scrolling.
Screenshots go to /tmp/shots-shortlinks/ (RUSTIZ_SHORTLINKS_SHOTS names another folder)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from conftest import LOCAL_FAKES
from support import API, FAST_RETRIES, Database, api, channel_post, dict_rows, post_body, settled, webhook_channel
from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import open_page, placeholder_text, screenshots, show, sideways_overflow  # noqa: F401
from test_web_channels import serious_axe_violations

SHOTS = Path(os.environ.get("RUSTIZ_SHORTLINKS_SHOTS", "/tmp/shots-shortlinks"))
PUBLIC = {**LOCAL_FAKES, **FAST_RETRIES, "FRONTEND_URL": "https://social.example.com"}
LOOKS = ((1440, "light"), (1440, "dark"), (390, "light"), (390, "dark"))


@pytest.fixture
def server(start_server_with_fakes):
    return start_server_with_fakes(env=PUBLIC)


def clicked_post(server, receiver) -> str:
    """A published post with two links: the first clicked by people on two days and by a preview fetcher."""
    channel = webhook_channel(server, receiver, "Company news")
    assert api(server, "PUT", f"{API}/organization", {"shortLink": "yes"})[0] == 200
    status, created = api(server, "POST", f"{API}/posts", post_body(channel_post(
        channel, "<p>Our launch https://example.org/launch and the docs https://example.org/docs/getting-started</p>"),
        shortLink=True))
    assert status == 201, created
    post_id = created[0]["postId"]
    assert settled(server, post_id)["state"] == "PUBLISHED"
    links = api(server, "GET", f"{API}/posts/{post_id}/links")[1]["links"]
    code = links[0]["short"].rsplit("/", 1)[1]
    db = Database(server)
    yesterday = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 86400))
    db.execute("INSERT INTO short_link_click (code, day, clicks, bot_clicks) VALUES (?, ?, ?, ?)", code, yesterday, 7, 2)
    db.execute("INSERT INTO short_link_click (code, day, clicks, bot_clicks) VALUES (?, ?, ?, ?)",
               code, time.strftime("%Y-%m-%d", time.gmtime()), 3, 1)
    return post_id


def shoot(page, name: str) -> None:
    screenshots(page, SHOTS / name)


def checked(page) -> None:
    assert sideways_overflow(page) <= 0
    assert placeholder_text(page) == []
    assert serious_axe_violations(page) == []


@pytest.mark.parametrize("width,scheme", LOOKS)
def test_the_post_page_lists_its_links_with_clicks_by_day(server, receiver, open_page, width, scheme):
    post_id = clicked_post(server, receiver)
    page = open_page(server, width, scheme)
    show(page, f"#/post/{post_id}")
    section = page.get_by_role("region", name="Links")
    expect(section).to_be_visible()
    first = section.locator("li.short-link").first
    expect(first).to_contain_text("https://example.org/launch")
    expect(first).to_contain_text("10 clicks")
    expect(first).to_contain_text("3 from bots and link previews")
    expect(first.locator("ul.link-days li")).to_have_count(2)
    expect(section.locator("li.short-link").nth(1)).to_contain_text("0 clicks")
    if width < 600:
        page.set_viewport_size({"width": 360, "height": 860})
        assert sideways_overflow(page) <= 0
        page.set_viewport_size({"width": width, "height": 860})
    section.scroll_into_view_if_needed()
    shoot(page, f"post-links-{width}-{scheme}")
    checked(page)
    assert page.problems == []


@pytest.mark.parametrize("width,scheme", LOOKS)
def test_the_preference_is_chosen_in_settings_in_words(server, open_page, width, scheme):
    page = open_page(server, width, scheme)
    show(page, "#/settings?tab=general")
    card = page.locator("form.short-link-setting")
    expect(card.get_by_role("heading", name="Short links")).to_be_visible()
    choice = card.get_by_label("Shorten links in posts")
    expect(choice).to_have_value("ask")
    assert [option.strip() for option in choice.locator("option").all_inner_texts()] == ["Ask each time", "Always", "Never"]
    choice.select_option(label="Never")
    card.get_by_role("button", name="Save").click()
    expect(card.get_by_role("status")).to_have_text("Saved.")
    assert api(server, "GET", f"{API}/organization")[1]["shortLink"] == "no"
    card.scroll_into_view_if_needed()
    shoot(page, f"settings-short-links-{width}-{scheme}")
    checked(page)
    assert page.problems == []


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (390, "dark")))
def test_the_composer_asks_when_the_preference_is_ask_and_the_post_has_a_link(server, receiver, open_page, width, scheme):
    webhook_channel(server, receiver, "Company news")
    page = open_page(server, width, scheme)

    def schedule(text: str):
        show(page, "#/compose")
        page.get_by_role("checkbox", name="Company news").check()
        page.get_by_label("Post", exact=True).fill(text)
        page.get_by_role("button", name="Save draft").click()

    def wanted() -> list:
        return [row["post_id"] for row in dict_rows(server.database, "SELECT post_id FROM short_link_wanted")]

    schedule("A launch https://example.org/launch")
    dialog = page.get_by_role("dialog", name="Shorten links and count clicks?")
    expect(dialog).to_be_visible()
    shoot(page, f"composer-ask-{width}-{scheme}")
    assert serious_axe_violations(page) == []
    dialog.get_by_role("button", name="Shorten links").click()
    page.wait_for_url("**/#/calendar*")
    assert len(wanted()) == 1

    schedule("Another https://example.org/other")
    page.get_by_role("dialog", name="Shorten links and count clicks?").get_by_role(
        "button", name="Keep links as written").click()
    page.wait_for_url("**/#/calendar*")
    assert len(wanted()) == 1

    schedule("No link in this one")
    page.wait_for_url("**/#/calendar*")
    assert page.get_by_role("dialog").count() == 0

    assert api(server, "PUT", f"{API}/organization", {"shortLink": "yes"})[0] == 200
    schedule("Always https://example.org/always")  # (no question: the preference answers)
    page.wait_for_url("**/#/calendar*")
    assert len(wanted()) == 2
    assert page.problems == []
