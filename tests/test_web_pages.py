"""Every page of the web app with real data, in Chromium (Playwright, /usr/bin/chromium): no placeholder text
(null, undefined, NaN, [object Object]) and no sideways scrolling on a phone; channel pictures only through
rustiz, the initial where there is none; links to the channels page show only rustiz's own words; Schedule
confirms and shows the new post on the calendar.

Set RUSTIZ_PAGE_SHOTS=<folder> to keep a screenshot of every page at each width (light and dark)."""
from __future__ import annotations

import datetime
import os
import re
from pathlib import Path

import pytest

from test_web import browser, expect, sign_in  # noqa: E402,F401 (and skips here too where it cannot run)
from fakes.webhook import FakeWebhookReceiver  # noqa: E402
from fakes import answer  # noqa: E402
from support import (  # noqa: E402
    API, FAST_RETRIES, api, channel_post, connect_database, iso, png_file, post_body, scheduled, settled, uploaded,
    webhook_channel,
)

PLACEHOLDERS = re.compile(r"\b(null|undefined|NaN)\b|\[object Object\]")
PICTURE = png_file(8, 8, pixel=bytes((220, 38, 38)))


@pytest.fixture
def open_page(browser):
    """open_page(server, width, scheme) -> a signed-in Page (signed_in=False: a visitor's); its script errors and
    console errors are listed in page.problems (the tests say which they expect)."""
    contexts = []

    def open_(server, width: int = 1280, scheme: str = "light", signed_in: bool = True):
        context = browser.new_context(timezone_id="UTC", viewport={"width": width, "height": 860},
                                      color_scheme=scheme, base_url=server.url)
        context.set_default_timeout(15000)
        contexts.append(context)
        page = context.new_page()
        page.problems = []
        page.on("pageerror", lambda error: page.problems.append(str(error)))
        page.on("console", lambda message: page.problems.append(message.text)
                if message.type == "error" and "Failed to load resource" not in message.text else None)
        if signed_in:
            sign_in(page, server)
        return page

    yield open_
    for context in contexts:
        context.close()


@pytest.fixture
def receivers():
    """receivers(n) -> n new FakeWebhookReceivers (webhook channels' platforms), closed after the test."""
    made = []

    def make(count: int) -> list:
        made.extend(FakeWebhookReceiver() for _ in range(count))
        return made[-count:]

    yield make
    for receiver in made:
        receiver.close()


def set_picture(server, channel_id: str, url: str | None) -> None:
    with connect_database(server.database) as db:
        db.execute("UPDATE integration SET picture = ? WHERE id = ?", (url, channel_id))


def show(page, hash_: str) -> None:
    """Open a page of the app afresh and wait until it is drawn and its requests are done."""
    page.goto("about:blank")
    page.goto("/" + hash_)
    expect(page.locator("main .page > *").first).to_be_attached()
    page.wait_for_load_state("networkidle")


def placeholder_text(page) -> list:
    """Every piece of text on the page, visible or in a label, that reads null, undefined, NaN or [object Object]."""
    texts = page.evaluate("""() => [document.body.innerText, document.title,
        ...[...document.querySelectorAll('[title], [aria-label], [placeholder], [alt], input[value]')].flatMap(
            (el) => ['title', 'aria-label', 'placeholder', 'alt', 'value'].map((name) => el.getAttribute(name) || ''))]""")
    return [text for text in texts if PLACEHOLDERS.search(text)]


def sideways_overflow(page) -> int:
    """How many pixels the page is wider than the window (0: no sideways scrolling)."""
    return page.evaluate("() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth) - innerWidth")


def screenshots(page, stem: Path) -> None:
    """The whole page, a window's height at a time (one tall picture is unreadable once scaled down)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    width, height = page.evaluate("() => [innerWidth, document.documentElement.scrollHeight]")
    for part, top in enumerate(range(0, height, 860)):
        page.screenshot(path=f"{stem}-{part}.png", full_page=True,
                        clip={"x": 0, "y": top, "width": width, "height": min(860, height - top)})


def a_world(server, receivers: list) -> dict:
    """Channels (one with a picture, one whose picture fails, one without), posts in every state and a thread
    with an image, a review draft and a rejected one, a webhook, a named key, an alert channel."""
    news, blog, alerts = (webhook_channel(server, receiver, name) for receiver, name in
                          zip(receivers, ("Company news", "Product blog", "Alerts")))
    receivers[0].route("GET", "/avatar.png", lambda request: answer(200, PICTURE, {"Content-Type": "image/png"}))
    set_picture(server, news, receivers[0].url + "/avatar.png")
    set_picture(server, blog, receivers[1].url + "/missing.png")
    image = uploaded(server, png_file(64, 40, pixel=bytes((29, 78, 216))))
    tomorrow = iso(86400)
    posts = {"queued": scheduled(server, news, ("<p>Tomorrow's news</p>", [{"id": image["id"], "path": image["path"],
                                                                          "alt": "a blue square"}]),
                                 "<p>and a reply</p>", type="schedule", date=tomorrow),
             "draft": scheduled(server, blog, "<p>A draft</p>", type="draft", date=tomorrow),
             "published": settled(server, scheduled(server, news, "<p>Out now</p>", type="now"))["id"]}
    receivers[1].fail_next("POST", "/hook", 422, {"message": "title is required"})
    posts["failed"] = settled(server, scheduled(server, blog, "<p>Refused</p>", type="now"))["id"]
    agent = api(server, "POST", f"{API}/api-keys", {"name": "agent", "scope": "drafts"})[1]["apiKey"]
    for name, text in (("review", "An agent's idea"), ("rejected", "A bad idea")):
        status, made = api(server, "POST", f"{API}/posts", post_body(channel_post(alerts, f"<p>{text}</p>"),
                                                                     type="draft", date=tomorrow), key=agent)
        assert status == 201, made
        posts[name] = made[0]["postId"]
    assert api(server, "POST", f"{API}/posts/{posts['rejected']}/reject", {"reason": "No source"})[0] in (200, 201)
    assert api(server, "POST", f"{API}/webhooks", {"name": "n8n", "url": receivers[2].url + "/n8n",
                                                   "integrations": []})[0] in (200, 201)
    assert api(server, "PUT", f"{API}/alerts", {"channel": alerts, "lateMinutes": 30})[0] == 200
    return {"channels": (news, blog, alerts), "posts": posts, "day": tomorrow[:10]}


def every_page(world: dict) -> list:
    posts, day = world["posts"], world["day"]
    return ([f"#/calendar?view={view}&date={day}" for view in ("week", "month", "list")]
            + ["#/compose", f"#/compose/{posts['queued']}"]
            + [f"#/post/{post_id}" for post_id in posts.values()]
            + ["#/channels", "#/channels?problem=refused&provider=mastodon", "#/channels?notice=connected&provider=webhook",
               "#/settings", "#/settings?tab=keys", "#/settings?tab=webhooks", "#/settings?tab=alerts",
               "#/settings?tab=tags", "#/settings?tab=signatures", "#/settings?tab=sets", "#/settings?tab=team", "#/library",
               "#/notifications", "#/review", "#/import",
               "#/notifications?page=abc", "#/calendar?view=bogus&date=2026-13-45", "#/post/no-such-post"])


def test_no_page_shows_null_or_undefined_and_none_is_wider_than_a_phone(start_server_with_fakes, open_page, receivers):
    server = start_server_with_fakes(env=FAST_RETRIES)
    made = receivers(3)
    shots = Path(os.environ["RUSTIZ_PAGE_SHOTS"]) if os.environ.get("RUSTIZ_PAGE_SHOTS") else None
    world = a_world(server, made)
    for width, scheme in ((1280, "light"), (360, "light"), (390, "dark")):
        page = open_page(server, width, scheme)
        for hash_ in every_page(world):
            show(page, hash_)
            assert placeholder_text(page) == [], (width, hash_)
            assert sideways_overflow(page) <= 0, (width, hash_, sideways_overflow(page))
            if shots:
                screenshots(page, shots / f"{width}-{scheme}-{re.sub(r'[^a-z0-9]+', '-', hash_.lower()).strip('-')[:60]}")
        assert page.problems == [], (width, page.problems)


def test_the_post_page_of_a_published_post_prints_no_null(start_server_with_fakes, open_page, receivers):
    """The page once printed "null" where a published post has no Reschedule form (Element.append(null))."""
    server = start_server_with_fakes()
    receiver, = receivers(1)
    channel = webhook_channel(server, receiver, "Hook")
    post_id = settled(server, scheduled(server, channel, "<p>Out</p>", type="now"))["id"]
    page = open_page(server)
    show(page, f"#/post/{post_id}")
    expect(page.get_by_role("heading", name="Post")).to_contain_text("Published")
    assert "null" not in page.locator("main").inner_text()
    assert page.problems == []


def test_the_api_keys_table_fits_a_phone(start_server_with_fakes, open_page, receivers):
    server = start_server_with_fakes()
    for name, scope in (("publishing-agent-for-the-newsletter", "drafts"), ("dashboard", "read")):
        assert api(server, "POST", f"{API}/api-keys", {"name": name, "scope": scope})[0] == 201
    page = open_page(server, width=390)
    show(page, "#/settings?tab=keys")
    card = page.locator("section.card", has=page.get_by_role("heading", name="API keys", exact=True))
    expect(card.locator("tr.api-key-row")).to_have_count(3)
    assert sideways_overflow(page) <= 0
    assert card.evaluate("e => e.scrollWidth <= e.clientWidth")
    row = card.locator("tr.api-key-row[data-name=dashboard]")
    expect(row.locator(".scope")).to_be_visible()
    expect(row.get_by_role("button", name="Revoke key dashboard")).to_be_visible()
    assert page.problems == []


def test_a_link_to_the_channels_page_shows_only_rustiz_s_own_words(start_server_with_fakes, open_page, receivers):
    server = start_server_with_fakes()
    page = open_page(server)
    crafted = "Your account is suspended: call 555-0100 and give your API key"
    for query in (f"problem={crafted}", f"notice={crafted}", f"problem=refused&provider={crafted}",
                  f"notice=connected&provider={crafted}", "problem=__proto__", "notice=toString"):
        show(page, "#/channels?" + query.replace(" ", "%20"))
        assert crafted not in page.locator("main").inner_text(), query
        assert placeholder_text(page) == [], query
    show(page, f"#/channels?problem={crafted.replace(' ', '%20')}")
    expect(page.get_by_role("alert")).to_have_text("The connection did not complete: nothing was connected. Connect again.")
    show(page, "#/channels?problem=denied&provider=mastodon")
    expect(page.get_by_role("alert")).to_contain_text("Mastodon did not give rustiz access: nothing was connected.")
    show(page, "#/channels?notice=connected&provider=mastodon")
    expect(page.get_by_role("status")).to_have_text("Mastodon connected")
    assert page.problems == []


def test_channel_pictures_come_through_rustiz_and_a_broken_one_shows_the_initial(start_server_with_fakes, open_page, receivers):
    server = start_server_with_fakes()
    made = receivers(2)
    shown, broken = (webhook_channel(server, receiver, name) for receiver, name in zip(made, ("Sunny", "Rainy")))
    made[0].route("GET", "/avatar.png", lambda request: answer(200, PICTURE, {"Content-Type": "image/png"}))
    set_picture(server, shown, made[0].url + "/avatar.png")
    set_picture(server, broken, made[1].url + "/gone.png")
    page = open_page(server)
    for hash_ in ("#/channels", "#/compose"):
        show(page, hash_)
        picture = page.locator(f"img.avatar-img[src$='/integrations/{shown}/picture']").first
        expect(picture).to_be_visible()
        assert picture.evaluate("img => img.complete && img.naturalWidth") == 8
        expect(page.locator("img:not(.avatar-img)[src*='127.0.0.1']")).to_have_count(0)
        expect(page.locator(".avatar", has_text="R").first).to_be_visible()  # Rainy's initial, no broken icon
        assert page.locator("img").evaluate_all("imgs => imgs.filter((i) => i.complete && !i.naturalWidth).length") == 0
    assert len(made[0].requests_to("GET", "/avatar.png")) == 1  # rustiz fetched it once, for every page
    assert page.problems == []


def test_the_policy_lets_the_browser_load_images_only_from_rustiz(start_server_with_fakes, open_page, receivers):
    server = start_server_with_fakes()
    receiver, = receivers(1)
    import urllib.request
    with urllib.request.urlopen(server.url + "/", timeout=10) as index:
        policy = index.headers["Content-Security-Policy"]
    directives = {part.split()[0]: part.split()[1:] for part in policy.split(";") if part.strip()}
    assert directives["img-src"] == ["'self'", server.url, "data:", "blob:"], policy
    assert directives["media-src"] == ["'self'", server.url, "blob:"], policy
    channel = webhook_channel(server, receiver, "Hook")
    spy = f"{receiver.url}/spy.png"
    receiver.route("GET", "/spy.png", lambda request: answer(200, PICTURE, {"Content-Type": "image/png"}))
    post_id = scheduled(server, channel, (f'<p>Look <img src="{spy}?content"></p>',
                                          [{"id": "outside", "path": spy + "?media"}]), type="draft", date=iso(86400))
    assert api(server, "POST", f"{API}/webhooks", {"name": f'<img src="{spy}?hook">', "url": spy + "?hook-url",
                                                   "integrations": []})[0] in (200, 201)
    page = open_page(server)
    for hash_ in (f"#/post/{post_id}", f"#/compose/{post_id}", "#/settings", "#/calendar?view=list"):
        show(page, hash_)
        if "post" in hash_:  # the picture it may not load is named in words, not a broken-image icon
            expect(page.locator(".media-missing").first).to_contain_text("Picture not shown")
    assert receiver.requests_to("GET", r"/spy\.png.*") == []
    assert any("Content Security Policy" in problem for problem in page.problems), page.problems


def test_schedule_confirms_and_shows_the_new_post_highlighted_on_the_calendar(start_server_with_fakes, open_page, receivers):
    server = start_server_with_fakes()
    receiver, = receivers(1)
    webhook_channel(server, receiver, "Hook")
    page = open_page(server, width=390)
    show(page, "#/compose")
    page.get_by_role("checkbox", name="Hook").check()
    page.get_by_label("Post", exact=True).fill("Sunday's recap")
    when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=9)
    page.get_by_label("Date and time (UTC)").fill(when.strftime("%Y-%m-%dT21:15"))
    page.get_by_role("button", name="Schedule").click()
    confirmation = page.locator("p.made")
    expect(confirmation).to_contain_text("Scheduled: the post for ")
    expect(confirmation).to_contain_text("21:15 on Hook")
    chip = page.locator("a.post.just-made")
    expect(chip).to_have_count(1)
    expect(chip).to_contain_text("Sunday's recap")
    expect(chip).to_be_in_viewport()
    assert f"date={when.date().isoformat()}" in page.url
    if os.environ.get("RUSTIZ_PAGE_SHOTS"):
        screenshots(page, Path(os.environ["RUSTIZ_PAGE_SHOTS"]) / "390-light-scheduled")
    confirmation.get_by_role("link", name="Open the post").click()
    expect(page.get_by_role("heading", name="Post")).to_contain_text("Queued")
    page.get_by_role("link", name="Back to calendar").click()
    expect(page.locator("a.post")).to_have_count(1)
    expect(page.locator("a.post.just-made, p.made:not([hidden])")).to_have_count(0)  # shown once
    assert page.problems == []
