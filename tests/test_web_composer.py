"""The composer in a real browser (Debian's Chromium driven by Playwright, against the built .pyz): channel
tabs ("Global" and one per channel, "Customize for <Channel>"), the sticky action bar that says why it cannot
schedule and offers the fixes, errors next to what they are about, media by paste and drop with progress,
reorder and alt text, the media library, signatures, tags and sets (the real APIs), emoji, the date from the
calendar and the repeat interval, editing a multi-channel group, the leave guard, and the page's height and
width at 1440 and 390 px, light and dark."""
from __future__ import annotations

import base64
import datetime
import os
import re
from pathlib import Path

import pytest

from support import API, Database, api, png_file
from test_web import CHROMIUM, browser, open_page, sign_in  # noqa: F401  (fixtures shared with the web tests)
from playwright.sync_api import expect

assert CHROMIUM
SHOTS = Path(os.environ.get("RUSTIZ_COMPOSER_SHOTS", "/tmp/shots-composer"))


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server()


@pytest.fixture(scope="module")
def channels(server):
    db = Database(server)
    return {"sky": db.channel("Sky", "bluesky", profile="sky.bsky.social"),
            "toot": db.channel("Toots", "mastodon", profile="toots"),
            "gram": db.channel("Gram", "instagram-standalone", profile="gram")}


def posts_of(server, channel_id: str) -> list:
    """The contents of the channel's posts, each thread as a list of its parts' HTML."""
    now = datetime.datetime.now(datetime.timezone.utc)
    window = f"startDate={(now - datetime.timedelta(days=40)).isoformat()}&endDate={(now + datetime.timedelta(days=40)).isoformat()}"
    status, answer = api(server, "GET", f"{API}/posts?{window}".replace("+00:00", "Z"))
    assert status == 200, answer
    threads = []
    for listed in answer["posts"]:
        if listed["integration"]["id"] == channel_id:
            status, post = api(server, "GET", f"{API}/posts/{listed['id']}")
            threads.append([post["content"]] + [reply["content"] for reply in post["thread"]])
    return threads


def clean_page(page) -> None:
    """No horizontal overflow, no null/undefined/NaN written on the page."""
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "horizontal overflow"
    found = re.findall(r".{0,40}\b(?:null|undefined|NaN)\b.{0,40}", page.locator("body").inner_text())
    assert found == []


def compose(server, open_page, width=1440, height=900, scheme="light"):
    page = open_page(server, width=width, height=height)
    page.emulate_media(color_scheme=scheme)
    sign_in(page, server)
    page.goto("/#/compose")
    expect(page.get_by_role("heading", name="New post")).to_be_visible()
    return page


def test_a_channel_tab_gets_its_own_text_counter_and_preview(server, channels, open_page):
    sky, toot = channels["sky"], channels["toot"]
    page = compose(server, open_page)
    page.get_by_role("checkbox", name="Sky").check()
    page.get_by_role("checkbox", name="Toots").check()
    expect(page.get_by_role("tab")).to_have_count(3)
    for name in ("Global", "Sky", "Toots"):
        expect(page.get_by_role("tab", name=name, exact=True)).to_be_visible()
    page.get_by_label("Post", exact=True).fill("Shared words #rustiz https://example.com")
    page.get_by_role("button", name="+ Add thread part").click()
    page.get_by_label("Thread part 2", exact=True).fill("Shared reply")
    preview = page.locator("article.preview")
    expect(preview).to_have_attribute("data-channel", sky)
    expect(preview.locator(".pv-tag")).to_have_text("#rustiz")
    expect(preview.locator(".pv-link")).to_have_text("https://example.com")
    expect(preview.locator(".preview-part.reply .pv-text")).to_have_text("Shared reply")

    page.get_by_role("tab", name="Sky").click()
    expect(page.get_by_text("Sky posts the global text.")).to_be_visible()
    page.get_by_role("button", name="Customize for Sky").click()
    own = page.get_by_label("Post on Sky")
    expect(own).to_have_value("Shared words #rustiz https://example.com")  # pre-filled with the global text
    expect(page.get_by_label("Thread part 2 on Sky")).to_have_value("Shared reply")
    own.fill("Only on Bluesky 🦋🦋")
    expect(page.locator(".part .count").first).to_have_text("Sky: 18 / 300 characters")
    expect(preview.locator(".preview-part .pv-text").first).to_have_text("Only on Bluesky 🦋🦋")
    expect(page.get_by_role("tab", name="Sky")).to_contain_text("own text")

    page.get_by_role("tab", name="Global").click()
    counters = page.locator(".part .counters").first
    expect(counters.locator(f'[data-channel="{sky}"]')).to_have_text("Sky: its own text")
    expect(counters.locator(f'[data-channel="{toot}"]')).to_contain_text("Toots: 44 / 500")
    page.get_by_label("Preview on").select_option(toot)
    expect(page.locator("article.preview.pv-mastodon .pv-text").first).to_contain_text("Shared words")
    counters.locator(f'[data-channel="{sky}"]').click()  # the pill opens the channel's tab
    expect(page.get_by_role("tab", name="Sky")).to_have_attribute("aria-selected", "true")

    page.get_by_role("button", name="Use the global text on Sky").click()
    expect(page.get_by_label("Post on Sky")).to_have_count(0)
    page.get_by_role("button", name="Customize for Sky").click()
    page.get_by_label("Post on Sky").fill("Only on Bluesky")
    page.get_by_role("button", name="Save draft").click()
    # (the text has a link and the organization's short-link preference is "ask": issue 26's question)
    page.get_by_role("dialog", name="Shorten links and count clicks?").get_by_role(
        "button", name="Keep links as written").click()
    expect(page.get_by_role("heading", name="New post")).to_have_count(0)
    assert posts_of(server, sky) == [["<p>Only on Bluesky</p>", "<p>Shared reply</p>"]]
    assert posts_of(server, toot) == [["<p>Shared words #rustiz https://example.com</p>", "<p>Shared reply</p>"]]


LONG = ("Rustiz schedules posts for every network you use. " * 5 + "It runs as one file. " * 4).strip()  # 333 characters


@pytest.mark.parametrize("width", [1440, 390])
def test_over_the_limit_schedule_is_disabled_with_the_reason_and_the_fixes_work(server, channels, open_page, width):
    page = compose(server, open_page, width=width, height=900 if width > 400 else 844)
    page.get_by_role("checkbox", name="Sky").check()
    page.get_by_role("checkbox", name="Toots").check()
    page.get_by_label("Post", exact=True).fill(LONG)
    schedule = page.get_by_role("button", name="Schedule", exact=True)
    expect(schedule).to_be_disabled()
    expect(page.get_by_role("button", name="Post now")).to_be_disabled()
    expect(page.get_by_role("button", name="Save draft")).to_be_enabled()  # a draft may be long: it is not checked
    bar = page.locator(".action-bar")
    expect(bar).to_contain_text("Too long for Sky: 333 / 300 characters (part 1). Shorten it to schedule.")
    assert bar.evaluate("e => getComputedStyle(e).position") == "sticky"
    expect(bar).to_be_in_viewport()
    expect(page.get_by_role("tab", name="Sky")).to_contain_text("too long")
    expect(page.get_by_role("tab", name="Toots")).not_to_contain_text("too long")
    clean_page(page)

    bar.get_by_role("button", name="Customize for Sky").click()
    expect(page.get_by_role("tab", name="Sky")).to_have_attribute("aria-selected", "true")
    own = page.get_by_label("Post on Sky")
    expect(own).to_be_focused()
    own.fill("Short for Bluesky.")
    expect(schedule).to_be_enabled()
    expect(bar.locator(".bar-reason")).to_be_hidden()

    page.get_by_role("button", name="Use the global text on Sky").click()
    expect(schedule).to_be_disabled()
    bar.get_by_role("button", name="Split into a thread").click()
    expect(schedule).to_be_enabled()
    texts = page.locator(".part textarea").evaluate_all("areas => areas.map((a) => a.value)")
    assert len(texts) == 2 and all(len(text) <= 300 for text in texts), texts
    assert " ".join(texts) == LONG and texts[0].endswith(".")  # cut between sentences
    expect(page.locator("article.preview .preview-part.reply")).to_have_count(1)


def test_leaving_with_unsaved_text_asks_first(server, channels, open_page):
    page = compose(server, open_page)
    page.get_by_label("Post", exact=True).fill("Half a thought")
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.get_by_role("link", name="Calendar").first.click()
    expect(page.get_by_label("Post", exact=True)).to_have_value("Half a thought")  # stayed, text kept
    assert asked and "not saved" in asked[0]
    assert page.url.endswith("#/compose")
    page.get_by_role("heading", name="New post").click()
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.keyboard.press("n")  # "New post" from the new post itself asks too
    expect(page.get_by_label("Post", exact=True)).to_have_value("Half a thought")
    assert len(asked) == 2
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("link", name="Calendar").first.click()
    expect(page.locator(".cal-title")).to_be_visible()
    page.goto("/#/compose")
    expect(page.get_by_label("Post", exact=True)).to_have_value("")  # left on purpose: nothing kept
    page.get_by_role("checkbox", name="Toots").check()
    page.get_by_label("Post", exact=True).fill("Kept across a reload")
    page.once("dialog", lambda dialog: dialog.accept())
    page.reload()
    expect(page.get_by_label("Post", exact=True)).to_have_value("Kept across a reload")  # (this tab's sessionStorage)
    expect(page.get_by_role("checkbox", name="Toots")).to_be_checked()
    page.get_by_role("button", name="Start over").click()
    expect(page.get_by_label("Post", exact=True)).to_have_value("")
    page.get_by_label("Post", exact=True).fill("Again")
    page.once("dialog", lambda dialog: (asked.append(dialog.type), dialog.dismiss()))
    page.close(run_before_unload=True)
    page.wait_for_timeout(300)
    assert asked[-1] == "beforeunload"


PNG = base64.b64encode(png_file(120, 60, pixel=bytes((29, 78, 216)))).decode()


def test_paste_and_drop_upload_with_progress_reorder_and_alt_text(server, channels, open_page):
    page = compose(server, open_page)
    page.get_by_role("checkbox", name="Gram").check()
    area = page.get_by_label("Post", exact=True)
    area.fill("Two pictures")
    for event, name in (("paste", "pasted.png"), ("drop", "dropped.png")):
        page.evaluate("""([event, name, data]) => {
            const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], name, { type: 'image/png' }));
            const target = event === 'paste' ? document.querySelector('.part textarea') : document.querySelector('.part');
            const init = { bubbles: true, cancelable: true };
            target.dispatchEvent(event === 'paste' ? new ClipboardEvent('paste', { ...init, clipboardData: transfer })
                                                   : new DragEvent('drop', { ...init, dataTransfer: transfer }));
        }""", [event, name, PNG])
        expect(page.locator("ul.media img")).to_have_count(1 if event == "paste" else 2)
    images = page.locator("ul.media img")
    assert images.first.evaluate("e => getComputedStyle(e).objectFit") == "contain"
    first_src = images.first.get_attribute("src")
    page.get_by_label("Alt text").first.fill("the pasted one")
    page.get_by_role("button", name="Move right").first.click()
    expect(page.locator("ul.media img").nth(1)).to_have_attribute("src", first_src)
    expect(page.get_by_label("Alt text").nth(1)).to_have_value("the pasted one")
    carousel = page.locator("article.preview.pv-instagram .pv-carousel")
    expect(carousel.locator("img")).to_have_count(1)  # a carousel shows one at a time, with its dots
    expect(carousel.locator(".pv-dots i")).to_have_count(2)
    # The upload goes through XMLHttpRequest for its progress events; the file button is a real, focusable input.
    file_input = page.get_by_label("Add media", exact=True)
    file_input.focus()
    assert page.evaluate("document.activeElement.type") == "file"
    clean_page(page)


def test_signatures_sets_tags_library_and_emoji(server, channels, open_page):
    for path, body in (("signatures", {"content": "— The rustiz team", "autoAdd": True}),
                       ("signatures", {"content": "<p>Sent with love</p>", "autoAdd": False}),
                       ("sets", {"name": "Launch", "channels": [channels["sky"], channels["toot"]], "settings": {}}),
                       ("tags", {"name": "Launch", "color": "#16a34a"})):
        status, made = api(server, "POST", f"{API}/{path}", body)
        assert status in (200, 201), made
        if path == "signatures" and not body["autoAdd"]:
            other_signature = made["id"]
    page = open_page(server, width=1440, height=900)
    sign_in(page, server)
    uploaded = page.evaluate("""async (data) => {
        const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
        const form = new FormData(); form.append('file', new File([bytes], 'lib.png', { type: 'image/png' }));
        const { session } = await import('/web/util.js');
        const answer = await fetch('/public/v1/upload', { method: 'POST', body: form, headers: { 'X-CSRF-Token': session.csrfToken } });
        return answer.json();
    }""", PNG)
    status, answer = api(server, "PUT", f"{API}/media/{uploaded['id']}", {"alt": "a blue banner", "name": "lib.png"})
    assert status == 200, answer  # (the alt text saved once in the library)
    page.goto("/#/compose")
    area = page.get_by_label("Post", exact=True)
    expect(area).to_have_value("\n\n— The rustiz team")  # the autoAdd signature ends a new post
    page.get_by_label("Use a set").select_option(label="Launch")
    expect(page.get_by_role("checkbox", name="Sky")).to_be_checked()
    expect(page.get_by_role("checkbox", name="Toots")).to_be_checked()
    expect(page.get_by_role("checkbox", name="Gram")).not_to_be_checked()
    area.fill("Launch day ")
    area.press("End")
    page.get_by_role("button", name="Emoji").click()
    page.get_by_label("Search emoji").fill("rocket")
    page.get_by_role("button", name="rocket").click()
    expect(area).to_have_value("Launch day 🚀")
    page.get_by_label("Insert signature").select_option(other_signature)
    expect(area).to_have_value("Launch day 🚀\nSent with love")
    page.get_by_role("button", name="From the library").click()
    dialog = page.get_by_role("dialog", name="Media library")
    dialog.get_by_role("button", name="lib.png").click()
    expect(page.get_by_label("Alt text", exact=True)).to_have_value("a blue banner")  # the library's alt text comes along
    page.get_by_label("Tags").fill("Launch")
    page.get_by_label("Tags").press("Enter")
    page.get_by_label("Tags").fill("brand new")
    page.get_by_label("Tags").press("Enter")
    expect(page.locator(".tag-chip")).to_have_count(2)
    page.get_by_label("Repeat", exact=True).select_option(label="Every week")
    page.get_by_label("Date and time (UTC)").fill("2031-04-01T10:00")
    sent = []
    page.on("request", lambda request: sent.append(request.post_data_json)
            if request.method == "POST" and request.url.endswith("/public/v1/posts") else None)
    page.get_by_role("button", name="Schedule", exact=True).click()
    expect(page.locator("p.made")).to_contain_text("Scheduled: the post for")  # (one post, on two channels)
    expect(page.locator("p.made")).to_contain_text("on Sky, Toots")
    # (tags travel as today's CreatePost `tags`; the server links the ones it knows)
    assert sent[0]["tags"] == [{"value": "Launch", "label": "Launch"}, {"value": "brand new", "label": "brand new"}]
    assert sent[0]["inter"] == 7
    post = next(p for p in api(server, "GET", f"{API}/posts?startDate=2031-03-31T00:00:00Z&endDate=2031-04-02T00:00:00Z")[1]["posts"]
                if p["integration"]["id"] == channels["sky"])
    full = api(server, "GET", f"{API}/posts/{post['id']}")[1]
    assert full["content"] == "<p>Launch day 🚀</p><p>Sent with love</p>"
    assert [m["alt"] for m in full["image"]] == ["a blue banner"]
    assert full["intervalInDays"] == 7


def test_the_calendar_s_slot_presets_the_time_and_an_edit_address_opens_a_draft_group(server, channels, open_page):
    page = open_page(server, width=390, height=844)
    sign_in(page, server)
    page.goto("/#/compose?date=2031-05-02T14:30:00Z")
    when = page.get_by_label("Date and time (UTC)")
    expect(when).to_have_value("2031-05-02T14:30")
    assert when.get_attribute("step") == "60"
    # A draft on two channels (as POST /posts/:id/duplicate makes them): ?edit= opens the whole group.
    body = {"type": "draft", "date": "2031-06-01T08:00:00Z", "shortLink": False, "tags": [],
            "posts": [{"integration": {"id": channels[name]}, "settings": {"__type": provider},
                       "value": [{"content": "<p>A copy to finish</p>", "image": []}, {"content": "<p>Its reply</p>", "image": []}]}
                      for name, provider in (("sky", "bluesky"), ("toot", "mastodon"))]}
    status, made = api(server, "POST", f"{API}/posts", body)
    assert status in (200, 201), made
    sky_post, toot_post = (item["postId"] for item in made)
    page.goto(f"/#/compose?edit={sky_post}")
    expect(page.get_by_role("heading", name="Edit post")).to_be_visible()
    expect(page.get_by_role("checkbox", name="Sky")).to_be_checked()
    expect(page.get_by_role("checkbox", name="Toots")).to_be_checked()
    expect(page.get_by_label("Thread part 2", exact=True)).to_have_value("Its reply")
    expect(page.get_by_label("Date and time (UTC)")).to_have_value("2031-06-01T08:00")
    page.get_by_label("Post", exact=True).fill("Finished copy")
    page.get_by_role("tab", name="Toots").click()
    page.get_by_role("button", name="Customize for Toots").click()
    page.get_by_label("Post on Toots").fill("Finished copy, for Mastodon")
    page.get_by_role("button", name="Save draft").click()
    expect(page.get_by_role("heading", name="Edit post")).to_have_count(0)
    sky, toot = (api(server, "GET", f"{API}/posts/{post_id}")[1] for post_id in (sky_post, toot_post))  # updated in place
    assert (sky["content"], sky["thread"][0]["content"], sky["state"]) == ("<p>Finished copy</p>", "<p>Its reply</p>", "DRAFT")
    assert toot["content"] == "<p>Finished copy, for Mastodon</p>"
    page.goto(f"/#/compose?edit={sky_post}")
    page.get_by_role("checkbox", name="Toots").uncheck()  # taken out of the group: its post goes
    page.get_by_role("button", name="Save draft").click()
    expect(page.get_by_role("heading", name="Edit post")).to_have_count(0)
    assert api(server, "GET", f"{API}/posts/{toot_post}")[0] == 404
    assert api(server, "GET", f"{API}/posts/{sky_post}")[0] == 200


@pytest.mark.parametrize("width,height,scheme", [(1440, 900, "light"), (1440, 900, "dark"), (390, 844, "light"), (390, 844, "dark")])
def test_three_channels_and_three_parts_fit_and_nothing_overflows(server, channels, open_page, width, height, scheme):
    page = compose(server, open_page, width=width, height=height, scheme=scheme)
    for name in ("Sky", "Toots", "Gram"):
        page.get_by_role("checkbox", name=name).check()
    page.get_by_label("Post", exact=True).fill("Spring release: faster uploads, #darkmode and a new calendar. https://example.com/notes")
    for n in (2, 3):
        page.get_by_role("button", name="+ Add thread part").click()
        page.get_by_label(f"Thread part {n}", exact=True).fill(f"Part {n} of the thread, with @friend.")
    height_px = page.evaluate("document.documentElement.scrollHeight")
    print(f"composer page height at {width}px ({scheme}), three channels and three parts: {height_px}px")
    assert height_px < 2341  # was 2,341 px at 1440 before the tabs
    clean_page(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"composer-{width}-{scheme}.png"), full_page=True)
    page.set_viewport_size({"width": 360, "height": 800})
    clean_page(page)


def test_in_another_language_and_by_keyboard(server, channels, open_page):
    page = open_page(server, width=390, height=844)
    page.add_init_script("localStorage.setItem('rustiz.language', 'es')")
    page.goto("/")
    page.get_by_label("Clave API").fill(server.key)
    page.get_by_role("button", name="Iniciar sesión", exact=True).click()
    expect(page.get_by_role("navigation", name="Principal")).to_be_visible()
    page.goto("/#/compose")
    assert page.evaluate("document.documentElement.lang") == "es"
    page.get_by_role("checkbox", name="Sky").check()
    page.get_by_role("checkbox", name="Toots").check()
    page.get_by_role("tab", name="Global").focus()
    page.keyboard.press("ArrowRight")  # arrows move between the tabs, as a tab list's do
    expect(page.get_by_role("tab", name="Sky")).to_be_focused()
    expect(page.get_by_role("tab", name="Sky")).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowLeft")
    expect(page.get_by_role("tab", name="Global")).to_have_attribute("aria-selected", "true")
    page.keyboard.press("Tab")
    expect(page.get_by_label("Publicación", exact=True)).to_be_focused()
    clean_page(page)


def test_an_error_after_schedule_stands_next_to_the_part_it_is_about(start_server_with_fakes, open_page):
    server = start_server_with_fakes()
    Database(server).channel("Lone sky", "bluesky")
    page = compose(server, open_page, width=390, height=844)
    page.get_by_role("checkbox", name="Lone sky").check()
    page.get_by_role("button", name="+ Add thread part").click()
    page.get_by_label("Thread part 2", exact=True).fill("A reply without its post")
    page.get_by_role("button", name="Schedule", exact=True).click()  # the first part is empty: the API says so
    error = page.locator('.part[data-where="part global 0"] .inline-error')
    expect(error).to_have_text("Lone sky: If images do not exist, content must be a non-empty string.")
    expect(error).to_be_focused()
    expect(error).to_be_in_viewport()
    expect(page.locator('.part[data-where="part global 1"] .inline-error')).to_have_count(0)


def test_a_title_from_the_channel_s_settings_heads_its_preview(server, channels, open_page):
    Database(server).channel("Dev blog", "devto", profile="devblog")
    page = compose(server, open_page)
    page.get_by_role("checkbox", name="Dev blog").check()
    page.get_by_label("Post", exact=True).fill("First line of the article\nThe body")
    preview = page.locator("article.preview.pv-blog")
    expect(preview.locator(".pv-title")).to_have_text("First line of the article")  # no title yet: the first line
    page.get_by_role("tab", name="Dev blog").click()
    settings = page.locator("details.provider-settings")
    expect(settings).to_have_attribute("open", "")  # (a required setting: unfolded)
    expect(settings.locator("summary")).to_have_text("Dev blog settings")
    settings.get_by_label("title", exact=False).first.fill("Shipping one file")
    expect(preview.locator(".pv-title")).to_have_text("Shipping one file")
    expect(preview.locator(".pv-text").first).to_contain_text("First line of the article")
