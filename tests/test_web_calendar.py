"""The calendar in a real browser (Debian's Chromium driven by Playwright) against the built .pyz: day, week,
month and list views at 1440 and 390 px in light and dark; one card per post group with each channel's
avatar and state and the tags' colours; "+N more" in week and month; a linear time axis; today in view, past
days muted; arrows, `t`, Previous/Next/Today; an empty future slot opens the composer at its time; drag with
undo, also into the next week by resting on Next; card actions (Preview, Duplicate, Statistics, Delete); list
filters and paging; the time to first render of a month of 500 posts (printed, not asserted).

Set RUSTIZ_CALENDAR_SHOTS=<folder> to keep a screenshot of each view at each width and scheme."""
from __future__ import annotations

import datetime
import os
import re
from pathlib import Path

import pytest

from test_web import CHROMIUM, browser, expect, sign_in  # noqa: F401 (fixtures shared with the web tests; skips too)
from test_web_pages import open_page  # noqa: F401 (a signed-in page at a width and scheme, its errors in page.problems)
from support import Database

assert CHROMIUM
PLACEHOLDERS = re.compile(r"\b(null|undefined|NaN)\b|\[object Object\]")
TODAY = datetime.datetime.now(datetime.timezone.utc).date()
TOMORROW = TODAY + datetime.timedelta(days=1)
BUSY = TODAY + datetime.timedelta(days=2)  # five posts at 14:00, six that day in all
YESTERDAY = TODAY - datetime.timedelta(days=1)
SHOTS = Path(os.environ["RUSTIZ_CALENDAR_SHOTS"]) if os.environ.get("RUSTIZ_CALENDAR_SHOTS") else None


def at(day: datetime.date, hour: int, minute: int = 0) -> str:
    return f"{day.isoformat()}T{hour:02d}:{minute:02d}:00.000Z"


@pytest.fixture(scope="module")
def world(start_module_server):
    """A server whose organization (in UTC) has three channels, one post on all three tomorrow at 10:30 (tagged),
    a busy day after with five posts at 14:00 and one at 09:00, and a published post yesterday."""
    server = start_module_server()
    db = Database(server)
    channels = [db.channel(name, provider) for name, provider in
                (("Acme news", "mastodon"), ("Globex blog", "bluesky"), ("Team chat", "webhook"))]
    launch = db.tag("Launch", "#7c3aed")
    together = [db.post(channel, at(TOMORROW, 10, 30), content="<p>Launch day: three channels, one card</p>")
                for channel in channels]
    db.link_tag(together[0], launch)
    busy = [db.post(channels[i % 3], at(BUSY, 14, 5 * i), content=f"<p>Busy post {i}</p>", state="DRAFT" if i == 4 else "QUEUE")
            for i in range(5)]
    busy.append(db.post(channels[0], at(BUSY, 9), content="<p>Morning coffee</p>"))
    published = db.post(channels[1], at(YESTERDAY, 16), content="<p>Yesterday's news</p>", state="PUBLISHED",
                        release_url="https://example.com/1")
    # one request for three channels, each with its own text: one multi-channel group, one card
    customized = [db.post(channel, at(TOMORROW, 16), content=f"<p>Customized for {channel}</p>") for channel in channels]
    for post_id in customized:
        db.execute("UPDATE post SET multi_channel_group = 'made-together' WHERE id = ?", post_id)
    return {"server": server, "db": db, "channels": channels, "together": together, "busy": busy,
            "published": published, "tag": launch, "customized": customized}


def show(page, hash_: str) -> None:
    """Opens the calendar afresh at `hash_` (a page load: the same address twice is no navigation) and waits
    for its period to be drawn."""
    page.goto("about:blank")
    page.goto("/" + hash_)
    view = re.search(r"view=(\w+)", hash_)
    expect(page.locator(f".cal-body[data-drawn{'=' + view[1] if view else ''}]")).to_be_attached()


def placeholder_text(page) -> list:
    return PLACEHOLDERS.findall(page.locator("main").inner_text())


def overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


@pytest.mark.parametrize("width, scheme", [(1440, "light"), (1440, "dark"), (390, "light"), (390, "dark")])
def test_every_view_at_desktop_and_phone_in_light_and_dark(world, open_page, width, scheme):
    page = open_page(world["server"], width, scheme)
    for view in ("day", "week", "month", "list"):
        show(page, f"#/calendar?view={view}&date={TOMORROW.isoformat()}")
        expect(page.get_by_role("button", name=view.title(), exact=True)).to_have_attribute("aria-pressed", "true")
        expect(page.locator("a.post").first).to_be_visible()
        assert placeholder_text(page) == [], (view, placeholder_text(page))
        assert overflow(page) <= 0, (view, overflow(page))
        if SHOTS:
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"{width}-{scheme}-{view}.png"))
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert (background == "rgb(15, 18, 23)") == (scheme == "dark"), background
    page.set_viewport_size({"width": 360, "height": 800})
    for view in ("day", "week", "month", "list"):
        show(page, f"#/calendar?view={view}&date={BUSY.isoformat()}")
        assert overflow(page) <= 0, (360, view, overflow(page))
    assert page.problems == []


def test_one_card_per_post_on_three_channels_with_avatars_states_and_tag_colour(world, open_page):
    page = open_page(world["server"], 1440)
    show(page, f"#/calendar?view=week&date={TOMORROW.isoformat()}")
    card = page.locator(".cal-card", has=page.locator(f"a.post[data-id='{world['together'][0]}']"))
    expect(card).to_have_count(1)
    for post_id in world["together"][1:]:  # the same post on the other channels has no card of its own
        expect(page.locator(f"a.post[data-id='{post_id}']")).to_have_count(0)
    expect(card.locator(".av")).to_have_count(3)
    expect(card.locator(".av .dot.st-QUEUE")).to_have_count(3)
    expect(card.locator("b.names")).to_have_text("Acme news, Globex blog, Team chat")
    expect(card.locator("a.post > .sr-state")).to_have_text(re.compile(r"^Queued:"))
    assert card.locator(".tag-dot").evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(124, 58, 237)"
    expect(card.locator(".tag-dots .sr-state")).to_have_text("Tags: Launch")
    expect(card.locator("time")).to_have_text("10:30")
    customized = page.locator(".cal-card", has=page.locator(f"a.post[data-id='{world['customized'][0]}']"))
    expect(customized.locator(".av")).to_have_count(3)  # each channel with its own text, still one post
    expect(page.locator(f"a.post[data-id='{world['customized'][1]}']")).to_have_count(0)
    # a linear axis: the card's top is its minute within its hour
    assert card.evaluate("e => e.offsetTop") == 24 + 1
    assert card.evaluate("e => e.closest('.slot').dataset.hour") == "10"
    assert page.problems == []


@pytest.mark.parametrize("width", [1440, 390])
def test_plus_more_in_week_and_month_opens_the_slot_s_list(world, open_page, width):
    page = open_page(world["server"], width)
    show(page, f"#/calendar?view=week&date={BUSY.isoformat()}")
    slot = page.locator(f".slot[data-day='{BUSY.isoformat()}'][data-hour='14']")
    expect(slot.locator(".cal-card")).to_have_count(2)  # side by side; the third column says how many more
    lefts = slot.locator(".cal-card").evaluate_all("cards => cards.map((c) => Math.round(c.getBoundingClientRect().left))")
    assert len(set(lefts)) == 2, lefts
    slot.get_by_role("button", name="+3 more").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.locator("a.post")).to_have_count(5)
    dialog.get_by_role("button", name="Close").click()
    expect(page.get_by_role("dialog")).to_have_count(0)

    show(page, f"#/calendar?view=month&date={BUSY.isoformat()}")
    day = page.locator(f".day[data-day='{BUSY.isoformat()}']")
    expect(day.locator(".cal-card")).to_have_count(3)
    expect(day.locator("button.more")).to_have_text("+3 more")
    heights = page.locator(".day").evaluate_all("days => [...new Set(days.map((d) => d.getBoundingClientRect().height))]")
    assert len(heights) == 1, heights  # a busy day does not stretch its week
    assert page.evaluate("document.querySelector('.month-grid').getBoundingClientRect().bottom <= innerHeight")
    day.locator("button.more").click()
    expect(page.get_by_role("dialog").locator("a.post")).to_have_count(6)
    page.get_by_role("dialog").locator("a.post").last.click()  # a post's page, without the dialog over it
    expect(page).to_have_url(re.compile(r"#/post/"))
    expect(page.get_by_role("dialog")).to_have_count(0)
    assert page.problems == []


def test_today_is_in_view_and_the_past_is_muted(world, open_page):
    page = open_page(world["server"], 1440)
    show(page, "#/calendar?view=week")
    expect(page.locator(".tg-col.today")).to_have_count(1)
    expect(page.locator(".tg-day.today")).to_have_count(1)
    # (this hour's slot at least is still to come; yesterday may be in last week's view: on a Monday)
    open_slot = page.evaluate("getComputedStyle(document.querySelector('.slot:not(.past)')).backgroundColor")
    now = datetime.datetime.now(datetime.timezone.utc)
    scrolled, most = page.locator(".tg-scroll").evaluate("e => [e.scrollTop, e.scrollHeight - e.clientHeight]")
    wanted = min(max(0, (now.hour * 60 + now.minute - 60) * 48 / 60), most)  # an hour before now
    assert abs(scrolled - wanted) <= 2, (scrolled, wanted)
    box = page.get_by_role("region", name=re.compile("Posts by hour"))
    expect(box).to_have_attribute("tabindex", "0")
    show(page, "#/calendar?view=month")
    expect(page.locator(".day.today")).to_have_count(1)
    show(page, f"#/calendar?view=week&date={YESTERDAY.isoformat()}")
    past = page.locator(f".slot.past[data-day='{YESTERDAY.isoformat()}']").first
    assert past.evaluate("e => getComputedStyle(e).backgroundColor") != open_slot
    show(page, f"#/calendar?view=month&date={YESTERDAY.isoformat()}")
    expect(page.locator(f".day.past[data-day='{YESTERDAY.isoformat()}']")).to_be_visible()
    assert page.problems == []


def test_a_phone_opens_the_list_from_today_with_a_compact_toolbar(world, open_page):
    page = open_page(world["server"], 390)
    show(page, "#/calendar")
    expect(page.get_by_role("button", name="List", exact=True)).to_have_attribute("aria-pressed", "true")
    assert f"date={TODAY.isoformat()}" in page.url
    first = page.locator(".agenda a.post").first
    expect(first).to_contain_text("Launch day")  # yesterday's post is not in a list from today on
    top = page.locator(".cal-bar").evaluate("e => e.getBoundingClientRect().top")
    assert first.evaluate("e => e.getBoundingClientRect().top") - top <= 125
    expect(page.get_by_label("Channel")).to_be_hidden()
    page.get_by_role("button", name="Filters").click()
    expect(page.get_by_label("Channel")).to_be_visible()
    page.get_by_role("button", name="Week", exact=True).click()
    expect(page.locator(".tg-col")).to_have_count(7)
    assert overflow(page) <= 0
    assert page.problems == []


def test_arrows_today_and_the_t_event_move_between_periods(world, open_page):
    page = open_page(world["server"], 1440)
    show(page, f"#/calendar?view=day&date={TOMORROW.isoformat()}")
    page.locator("body").press("ArrowRight")
    expect(page).to_have_url(re.compile(f"date={BUSY.isoformat()}"))
    page.get_by_role("button", name="Previous").click()
    expect(page).to_have_url(re.compile(f"date={TOMORROW.isoformat()}"))
    page.keyboard.press("ArrowLeft")
    expect(page).to_have_url(re.compile(f"date={TODAY.isoformat()}"))
    page.get_by_role("button", name="Next").click()
    page.get_by_label("Channel").focus()  # arrows in a field are the field's
    page.keyboard.press("ArrowLeft")
    expect(page).to_have_url(re.compile(f"date={TOMORROW.isoformat()}"))
    page.locator("main").click(position={"x": 5, "y": 5})
    page.keyboard.press("t")  # the shell's shortcut sends rustiz:today
    expect(page).to_have_url(re.compile(f"date={TODAY.isoformat()}"))
    page.get_by_role("button", name="Month", exact=True).click()
    page.get_by_role("button", name="Next").click()
    expect(page).to_have_url(re.compile("view=month"))
    page.get_by_role("button", name="Today").click()
    expect(page).to_have_url(re.compile(f"date={TODAY.isoformat()}"))
    assert page.problems == []


@pytest.mark.parametrize("width", [1440, 390])
def test_an_empty_future_slot_opens_the_composer_at_its_time(world, open_page, width):
    page = open_page(world["server"], width)
    show(page, f"#/calendar?view=week&date={BUSY.isoformat()}")
    expect(page.locator(f".slot[data-day='{YESTERDAY.isoformat()}'] button.add")).to_have_count(0)
    page.locator(f".slot[data-day='{BUSY.isoformat()}'][data-hour='16'] button.add").click()
    expect(page).to_have_url(re.compile(re.escape(f"#/compose?date={BUSY.isoformat()}T16:00:00Z")))
    expect(page.locator("input[type=datetime-local]")).to_have_value(re.compile(f"^{BUSY.isoformat()}T16:00"))
    show(page, f"#/calendar?view=month&date={BUSY.isoformat()}")
    later = BUSY + datetime.timedelta(days=3)
    page.locator(f".day[data-day='{later.isoformat()}'] button.add").press("Enter")
    expect(page).to_have_url(re.compile(re.escape(f"#/compose?date={later.isoformat()}T09:00:00Z")))
    assert page.problems == []


def test_drag_moves_a_post_with_undo_and_into_the_next_week_by_resting_on_next(world, open_page):
    db, channel = world["db"], world["channels"][2]
    post_id = db.post(channel, at(TOMORROW, 20), content="<p>Move me</p>")
    page = open_page(world["server"], 1440)
    show(page, f"#/calendar?view=week&date={TOMORROW.isoformat()}")
    card = page.locator(f"a.post[data-id='{post_id}']")
    target = page.locator(f".slot[data-day='{TOMORROW.isoformat()}'][data-hour='22']")
    target.scroll_into_view_if_needed()  # (a drag that has to scroll the box never starts in Playwright)
    card.drag_to(target)
    expect(page.locator(f".slot[data-hour='22'] a.post[data-id='{post_id}']")).to_have_count(1)
    assert db.row("SELECT publish_date FROM post WHERE id = ?", post_id)[0].startswith(at(TOMORROW, 22)[:16])
    page.locator(".cal-toast").get_by_role("button", name="Undo").click()
    expect(page.locator(f".slot[data-hour='20'] a.post[data-id='{post_id}']")).to_have_count(1)
    assert db.row("SELECT publish_date FROM post WHERE id = ?", post_id)[0].startswith(at(TOMORROW, 20)[:16])

    # Across weeks without scrolling inside a box: rest on Next while dragging, then drop.
    week_later = TOMORROW + datetime.timedelta(days=7)
    transfer = page.evaluate_handle("new DataTransfer()")
    page.locator(f"a.post[data-id='{post_id}']").dispatch_event("dragstart", {"dataTransfer": transfer})
    page.get_by_role("button", name="Next").dispatch_event("dragover", {"dataTransfer": transfer})
    expect(page.locator(f".slot[data-day='{week_later.isoformat()}']").first).to_be_attached(timeout=3000)
    target = page.locator(f".slot[data-day='{week_later.isoformat()}'][data-hour='11']")
    target.dispatch_event("dragover", {"dataTransfer": transfer})
    target.dispatch_event("drop", {"dataTransfer": transfer})
    expect(target.locator(f"a.post[data-id='{post_id}']")).to_have_count(1)
    assert db.row("SELECT publish_date FROM post WHERE id = ?", post_id)[0].startswith(at(week_later, 11)[:16])
    db.execute("UPDATE post SET deleted_at = publish_date WHERE id = ?", post_id)
    assert page.problems == []


def test_card_actions_preview_duplicate_statistics_and_delete(world, open_page):
    db, channels = world["db"], world["channels"]
    doomed = [db.post(channel, at(TOMORROW, 18), content="<p>Delete me everywhere</p>") for channel in channels[:2]]
    page = open_page(world["server"], 1440)
    show(page, f"#/calendar?view=week&date={TOMORROW.isoformat()}")
    card = page.locator(".cal-card", has=page.locator(f"a.post[data-id='{world['together'][0]}']"))
    card.hover()
    card.get_by_role("button", name="Preview").click()
    dialog = page.get_by_role("dialog", name="Preview")
    expect(dialog).to_contain_text("Launch day: three channels, one card")
    expect(dialog.locator(".preview-channels li")).to_have_count(3)
    dialog.get_by_role("button", name="Close").click()

    # Duplicate copies every channel's post as a draft (POST /posts/:id/duplicate) and opens the first copy.
    card.locator("a.post").focus()
    with page.expect_response("**/public/v1/posts/*/duplicate") as answer:
        card.get_by_role("button", name="Duplicate").click()
    copy = answer.value.json()["posts"][0]["id"]
    expect(page).to_have_url(re.compile(f"#/compose\\?edit={copy}$"))  # (the composer opens every channel's copy)
    copies = db.row("SELECT COUNT(*) FROM post WHERE content = ? AND state = 'DRAFT' AND deleted_at IS NULL",
                    "<p>Launch day: three channels, one card</p>")[0]
    assert copies == 3
    db.execute("UPDATE post SET deleted_at = publish_date WHERE content = ? AND state = 'DRAFT'",
               "<p>Launch day: three channels, one card</p>")
    # a post made for several channels at once (one multi-channel group) is copied by one request
    show(page, f"#/calendar?view=week&date={TOMORROW.isoformat()}")
    asked = []
    page.on("request", lambda request: asked.append(request.url) if request.url.endswith("/duplicate") else None)
    made_together = page.locator(".cal-card", has=page.locator(f"a.post[data-id='{world['customized'][0]}']"))
    made_together.locator("a.post").focus()
    made_together.get_by_role("button", name="Duplicate").click()
    expect(page).to_have_url(re.compile("#/compose\\?edit="))
    assert len(asked) == 1
    copied = db.row("SELECT COUNT(*) FROM post WHERE content LIKE '<p>Customized for %' AND state = 'DRAFT' "
                    "AND deleted_at IS NULL")[0]
    assert copied == 3
    db.execute("UPDATE post SET deleted_at = publish_date WHERE content LIKE '<p>Customized for %' AND state = 'DRAFT'")

    show(page, f"#/calendar?view=day&date={YESTERDAY.isoformat()}")
    page.locator(f"a.post[data-id='{world['published']}']").hover()
    page.get_by_role("link", name="Statistics").click()
    expect(page).to_have_url(re.compile(f"#/post/{world['published']}$"))

    show(page, f"#/calendar?view=week&date={TOMORROW.isoformat()}")
    page.once("dialog", lambda confirm: confirm.accept())
    doomed_card = page.locator(".cal-card", has=page.locator(f"a.post[data-id='{doomed[0]}']"))
    doomed_card.hover()
    doomed_card.get_by_role("button", name="Delete").click()
    expect(page.locator(f"a.post[data-id='{doomed[0]}']")).to_have_count(0)
    assert all(db.row("SELECT deleted_at FROM post WHERE id = ?", post_id)[0] for post_id in doomed)
    assert page.problems == []


def test_list_filters_by_state_channel_and_tag_and_pages_by_fifty(world, open_page):
    db, channel = world["db"], world["channels"][0]
    far = TODAY + datetime.timedelta(days=40)
    made = [db.post(channel, at(far + datetime.timedelta(days=i // 10), 8 + i % 10), content=f"<p>Bulk {i}</p>")
            for i in range(60)]
    page = open_page(world["server"], 1440)
    show(page, f"#/calendar?view=list&date={far.isoformat()}")
    expect(page.locator(".agenda a.post")).to_have_count(50)
    expect(page.locator(".pager")).to_contain_text("Page 1 of 2")
    page.get_by_role("button", name="Next page").click()
    expect(page.locator(".agenda a.post")).to_have_count(10)
    expect(page.locator(".pager")).to_contain_text("Page 2 of 2")
    expect(page.locator(".agenda h2").first).to_be_visible()
    show(page, f"#/calendar?view=list&date={TODAY.isoformat()}")
    page.get_by_label("State").select_option(label="Draft")
    expect(page.locator(".agenda a.post")).to_have_count(1)
    expect(page.locator(".agenda")).to_contain_text("Busy post 4")
    page.get_by_label("State").select_option(label="All states")
    page.get_by_label("Channel").select_option(label="Team chat")
    expect(page.locator(".agenda")).not_to_contain_text("Morning coffee")
    page.get_by_label("Channel").select_option(label="All channels")
    show(page, f"#/calendar?view=list&date={TODAY.isoformat()}")
    with page.expect_request(re.compile(r".*/posts\?.*tag=Launch.*")):
        page.get_by_label("Tag").select_option(label="Launch")
    expect(page.locator(".agenda a.post")).to_have_count(1)
    expect(page.locator(".agenda")).to_contain_text("Launch day")
    for post_id in made:
        db.execute("UPDATE post SET deleted_at = publish_date WHERE id = ?", post_id)
    assert page.problems == []


def test_a_month_of_500_posts_renders_fast(world, open_page):
    db, channels = world["db"], world["channels"]
    month = (TODAY.replace(day=1) + datetime.timedelta(days=70)).replace(day=1)
    made = [db.post(channels[i % 3], at(month + datetime.timedelta(days=i % 28), 6 + i % 14, (i * 7) % 60),
                    content=f"<p>Post number {i} of a busy month</p>") for i in range(500)]
    page = open_page(world["server"], 1440)
    show(page, "#/calendar?view=list")
    timings = {}
    for view, drawn in (("month", ".month-grid"), ("week", ".tg"), ("list", ".agenda")):
        # from the address's change to the first frame with the period's posts: the fetch, the cards, the layout
        timings[view] = page.evaluate("""([hash, drawn]) => new Promise((resolve) => {
            const started = performance.now();
            location.hash = hash;
            const check = () => document.querySelector(drawn + ' a.post') ? resolve(performance.now() - started) : requestAnimationFrame(check);
            requestAnimationFrame(check);
        })""", [f"#/calendar?view={view}&date={month.isoformat()}", drawn])
        expect(page.locator(f"{drawn} a.post").first).to_be_visible()
        timings[view + " (its /posts answer)"] = page.evaluate(
            "performance.getEntriesByType('resource').filter((e) => e.name.includes('/public/v1/posts?')).pop().duration")
    expect(page.locator(".month-grid, .tg, .agenda")).to_have_count(1)
    print(f"\nfirst render with 500 posts in the month: " + ", ".join(f"{v} {ms:.0f} ms" for v, ms in timings.items()))
    for post_id in made:
        db.execute("UPDATE post SET deleted_at = publish_date WHERE id = ?", post_id)
    assert page.problems == []


@pytest.mark.parametrize("width, scheme", [(1440, "light"), (390, "dark")])
def test_axe_finds_nothing_serious_in_any_view(world, open_page, width, scheme):
    axe = pytest.importorskip("axe_playwright_python.sync_playwright").Axe()
    page = open_page(world["server"], width, scheme)
    for view in ("day", "week", "month", "list"):
        show(page, f"#/calendar?view={view}&date={BUSY.isoformat()}")
        found = axe.run(page).response["violations"]
        serious = [(v["id"], [n["target"] for n in v["nodes"]][:3]) for v in found if v["impact"] in ("serious", "critical")]
        assert serious == [], (view, serious)
    show(page, f"#/calendar?view=month&date={BUSY.isoformat()}")
    page.locator("button.more").first.click()
    expect(page.get_by_role("dialog")).to_be_visible()
    found = axe.run(page).response["violations"]
    assert [v["id"] for v in found if v["impact"] in ("serious", "critical")] == []
    assert page.problems == []


def test_after_the_composer_the_calendar_shows_the_new_post_highlighted_with_when_and_where(world, open_page):
    db, channels = world["db"], world["channels"]
    late = TOMORROW + datetime.timedelta(days=1)
    made = [db.post(channel, at(late, 21, 15), content="<p>Evening recap</p>") for channel in channels]
    page = open_page(world["server"], 1440)
    show(page, "#/calendar?view=week")
    # what the composer leaves for the calendar (session.justMade) before it opens the post's day
    page.evaluate("""([ids, day]) => import('/web/util.js').then((util) => {
        util.session.justMade = { action: 'schedule', ids };
        location.hash = `#/calendar?date=${day}`;
    })""", [made, late.isoformat()])
    confirmation = page.get_by_role("status").filter(has_text="Scheduled")
    expect(confirmation).to_have_text(re.compile(r"^Scheduled: the post for .*21:15 on Acme news, Globex blog, Team chat\. Open the post$"))
    card = page.locator("a.post.just-made")
    expect(card).to_have_count(1)
    expect(card).to_be_in_viewport()
    assert card.evaluate("e => e.closest('.slot').dataset.day") == late.isoformat()
    for post_id in made:
        db.execute("UPDATE post SET deleted_at = publish_date WHERE id = ?", post_id)
    assert page.problems == []


def test_another_calendar_address_followed_while_the_first_still_loads_is_the_one_drawn(browser, world):
    """The first calendar (after signing in) waits for its channels while the person follows a link to the list
    of another month: the late first calendar must not write its own week back into the address."""
    context = browser.new_context(timezone_id="UTC", viewport={"width": 1280, "height": 860}, base_url=world["server"].url)
    page = context.new_page()
    held = []
    page.route("**/public/v1/integrations", lambda route: route.continue_() if held else held.append(route))
    sign_in(page, world["server"])
    while not held:
        page.wait_for_timeout(20)
    # the address changes before its hashchange is handled (pushState now, the event after the late answer)
    page.evaluate("history.pushState(null, '', '#/calendar?view=list&date=2030-02-01')")
    with page.expect_response("**/public/v1/integrations"):
        held[0].continue_()
    page.evaluate("() => new Promise((done) => setTimeout(done, 100))")
    page.evaluate("dispatchEvent(new HashChangeEvent('hashchange'))")
    expect(page.get_by_role("button", name="List")).to_have_attribute("aria-pressed", "true")
    assert "view=list" in page.url and "date=2030-02-01" in page.url
    context.close()
