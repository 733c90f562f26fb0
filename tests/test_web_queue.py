"""The queue in the web app, in Chromium (Playwright, as tests/test_web.py): a channel's next slots by day in the
organization's timezone (posts, empty slots, evergreen marks, fixed-date posts that never move); reordering by the
keyboard, by dragging, Move up/down, Move to top and Shuffle (each sends the whole new order); the pause, re-flow
and evergreen switches with their errors beside them; the weekly posting schedule editor (from the queue and the
channel's menu, best times as chips); the composer's Add to queue, Evergreen and the end of a repeat, shown again
on the post page. Light and dark, 1440 and 390 px, never wider than 360 px, axe-core finds nothing serious.

Screenshots go to /tmp/shots-queue/; RUSTIZ_SCREENSHOTS=1 also writes docs/screenshots/queue-week.png."""
from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import open_page, placeholder_text, receivers, show, sideways_overflow  # noqa: F401
from test_web_channels import serious_axe_violations
from support import API, Database, api, get_post, iso, scheduled, webhook_channel

ROOT = Path(__file__).resolve().parent.parent
SHOTS = Path("/tmp/shots-queue")
PARIS = ZoneInfo("Europe/Paris")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
SCHEDULE = {**{day: ["09:00", "13:00"] for day in WEEKDAYS[:5]}, "saturday": ["10:00"], "sunday": []}
QUIET_EVERGREEN = {"RUSTIZ_EVERGREEN_POLL_SECONDS": "86400"}
TEXTS = ("Spring sale starts today", "Meet the team behind the app", "Five tips for better photos")


def queue_of(server, channel: str) -> dict:
    status, answer = api(server, "GET", f"{API}/queue?integration={channel}&days=90")
    assert status == 200, answer
    return answer


def queued_texts(server, channel: str) -> list:
    """The texts of the channel's queued posts, in their queue order."""
    return [slot["post"]["content"].removeprefix("<p>").removesuffix("</p>") for slot in queue_of(server, channel)["slots"]
            if slot["post"] and slot["post"]["inQueue"]]


def paris_time(iso_text: str) -> str:
    return datetime.datetime.fromisoformat(iso_text.replace("Z", "+00:00")).astimezone(PARIS).strftime("%H:%M")


def add_to_queue(server, channel: str, text: str, **fields) -> str:
    status, made = api(server, "POST", f"{API}/posts", {"type": "queue", "shortLink": False, "tags": [], **fields,
                                                        "posts": [{"integration": {"id": channel}, "settings": {},
                                                                   "value": [{"content": f"<p>{text}</p>", "image": []}]}]})
    assert status == 201, made
    return made[0]["postId"]


def a_queue(server, receivers) -> dict:
    """An organization in Paris time; "Company news" with a weekly schedule, three queued posts, a fixed-date
    post two slots after them (an empty slot between), evergreen on with an evergreen post waiting to go again;
    "Product blog" with rustiz's default posting times."""
    assert api(server, "PUT", f"{API}/organization", {"timezone": "Europe/Paris"})[0] == 200
    news_receiver, blog_receiver = receivers(2)
    news = webhook_channel(server, news_receiver, "Company news")
    blog = webhook_channel(server, blog_receiver, "Product blog")
    assert api(server, "PUT", f"{API}/integrations/{news}/schedule", SCHEDULE)[0] == 200
    queued = [add_to_queue(server, news, text) for text in TEXTS]
    slots = queue_of(server, news)["slots"]
    fixed = scheduled(server, news, "<p>Launch event live stream</p>", type="schedule", date=slots[4]["date"])
    # an evergreen post that went out 10 days ago (written into the database), past its 7 days of cooldown: the
    # queue marks the slot it would take (the server starts with a refill a day away: the mark stays)
    evergreen = scheduled(server, news, "<p>Our best guide, still true</p>", type="schedule", date=iso(86400 * 80),
                          evergreen=True)
    Database(server).execute("UPDATE post SET state = 'PUBLISHED', publish_date = ? WHERE id = ?", iso(-86400 * 10),
                             evergreen)
    assert api(server, "PUT", f"{API}/integrations/{news}/queue", {"evergreen": True, "evergreenCooldownDays": 7})[0] == 200
    return {"news": news, "blog": blog, "queued": queued, "fixed": fixed, "evergreen": evergreen}


def shot(page, name: str, full_page: bool = True) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full_page)


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (1440, "dark"), (390, "light"), (390, "dark")))
def test_the_queue_shows_the_next_slots_by_day_with_posts_empty_slots_and_marks(start_server_with_fakes, open_page,
                                                                                receivers, width, scheme):
    server = start_server_with_fakes(env=QUIET_EVERGREEN)
    world = a_queue(server, receivers)
    page = open_page(server, width, scheme)
    show(page, f"#/queue?channel={world['news']}")
    expect(page.get_by_role("heading", name="Queue of Company news")).to_be_visible()
    filled = page.locator("li.slot.filled")
    expect(filled.first).to_contain_text(TEXTS[0])
    assert [filled.nth(i).locator(".slot-text").inner_text() for i in range(3)] == list(TEXTS)
    first_slot = queue_of(server, world["news"])["slots"][0]["date"]
    expect(filled.first.locator("time")).to_have_text(paris_time(first_slot))  # the organization's zone, not the browser's
    expect(filled.first.locator(".slot-text")).to_have_attribute("href", f"#/post/{world['queued'][0]}")
    fixed = page.locator(f"li.slot[data-post='{world['fixed']}']")
    expect(fixed.locator(".badge.fixed")).to_have_text("Fixed date")
    expect(fixed.locator("button")).to_have_count(0)  # a fixed date is not moved from the queue
    expect(page.locator("li.slot.filled button.handle")).to_have_count(3)
    expect(page.locator("li.slot.empty").first).to_be_visible()
    expect(page.locator("li.slot.evergreen-slot").first).to_contain_text("An evergreen post would go here")
    expect(page.locator("li.slot.empty:not(.evergreen-slot)").first).to_contain_text("Empty slot")
    expect(page.locator("section.queue-day h2").first).to_contain_text("Today")
    assert placeholder_text(page) == []
    assert sideways_overflow(page) <= 0
    shot(page, f"queue-{width}-{scheme}")
    if (width, scheme) == (1440, "light"):
        page.set_viewport_size({"width": 1440, "height": 900})
        week = page.locator("section.queue-day").nth(6).bounding_box()  # (today and the next six days)
        clip = {"x": 0, "y": 0, "width": 1440, "height": week["y"] + week["height"] + 12}
        for path in [SHOTS / "queue-week.png"] + ([ROOT / "docs" / "screenshots" / "queue-week.png"]
                                                 if os.environ.get("RUSTIZ_SCREENSHOTS") == "1" else []):
            page.screenshot(path=str(path), clip=clip, full_page=True)
    assert serious_axe_violations(page) == []
    page.set_viewport_size({"width": 360, "height": 860})
    assert sideways_overflow(page) <= 0
    assert page.problems == []


def test_reorder_by_keyboard_by_drag_move_to_top_and_shuffle(start_server_with_fakes, open_page, receivers):
    server = start_server_with_fakes(env=QUIET_EVERGREEN)
    world = a_queue(server, receivers)
    news = world["news"]
    a, b, c = TEXTS
    page = open_page(server, 1440, "light")
    show(page, f"#/queue?channel={news}")
    said = page.locator(".queue-said")
    handles = page.locator("li.slot.filled button.handle")

    handles.first.focus()
    page.keyboard.press("ArrowDown")
    expect(said).to_contain_text("Moved: it now goes out")
    assert queued_texts(server, news) == [b, a, c]
    assert page.evaluate("() => document.activeElement.closest('li.slot').dataset.post") == world["queued"][0]  # focus stays on it
    page.keyboard.press("ArrowUp")
    expect(page.locator("li.slot.filled .slot-text").first).to_have_text(a)
    assert queued_texts(server, news) == [a, b, c]

    page.locator(f"li.slot[data-post='{world['queued'][2]}']").get_by_role("button", name="Move up").click()
    expect(page.locator("li.slot.filled .slot-text").nth(1)).to_have_text(c)
    assert queued_texts(server, news) == [a, c, b]

    # dragging with the pointer: the last post onto the first one's slot takes its place
    source = page.locator(f"li.slot[data-post='{world['queued'][1]}'] button.handle")
    target = page.locator(f"li.slot[data-post='{world['queued'][0]}']").bounding_box()
    source.hover()
    page.mouse.down()
    page.mouse.move(target["x"] + target["width"] / 2, target["y"] + target["height"] / 2, steps=10)
    expect(page.locator("li.slot.drop-here")).to_have_count(1)
    shot(page, "queue-dragging", full_page=False)
    page.mouse.up()
    expect(page.locator("li.slot.filled .slot-text").first).to_have_text(b)
    assert queued_texts(server, news) == [b, a, c]

    page.locator(f"li.slot[data-post='{world['queued'][2]}']").get_by_role("button", name="Move to top").click()
    expect(page.locator("li.slot.filled .slot-text").first).to_have_text(c)
    assert queued_texts(server, news) == [c, b, a]
    expect(page.locator("li.slot.filled").first.get_by_role("button", name="Move to top")).to_be_disabled()

    page.get_by_role("button", name="Shuffle").click()
    expect(said).to_contain_text("Shuffled")
    shuffled = queued_texts(server, news)
    assert shuffled != [c, b, a] and sorted(shuffled) == sorted(TEXTS)  # a new order, the same posts
    assert [page.locator("li.slot.filled:not(.fixed) .slot-text").nth(i).inner_text() for i in range(3)] == shuffled
    said.get_by_role("button", name="Undo").click()
    expect(said).to_contain_text("Back as it was")
    assert queued_texts(server, news) == [c, b, a]
    assert get_post(server, world["fixed"])["publishDate"] == queue_of(server, news)["slots"][4]["date"]  # never moved

    # the queue changed meanwhile (the API refuses the order): it is shown again as it is, and said so
    page.route("**/public/v1/queue/reorder", lambda route: route.fulfill(
        status=409, content_type="application/json", body=json.dumps({"message": "The queue changed meanwhile"})))
    page.locator("li.slot.filled").nth(1).get_by_role("button", name="Move to top").click()
    expect(page.locator(".queue-list > .errors")).to_contain_text("here it is as it is now. Make your change again.")
    assert queued_texts(server, news) == [c, b, a]
    assert serious_axe_violations(page) == []
    assert page.problems == []


def test_pause_reflow_and_evergreen_switches_save_and_say_what_went_wrong_beside_them(start_server_with_fakes,
                                                                                   open_page, receivers):
    server = start_server_with_fakes(env=QUIET_EVERGREEN)
    world = a_queue(server, receivers)
    news = world["news"]
    page = open_page(server, 1440, "dark")
    show(page, f"#/queue?channel={news}")
    expect(page.locator(".queue-paused")).to_be_empty()
    page.get_by_role("switch", name="Pause the queue").check()
    expect(page.locator(".queue-paused")).to_contain_text("This queue is paused.")
    assert queue_of(server, news)["paused"] is True
    shot(page, "queue-paused-1440-dark", full_page=False)
    assert serious_axe_violations(page) == []
    page.get_by_role("button", name="Resume the queue").click()
    expect(page.locator(".queue-paused")).to_be_empty()
    expect(page.get_by_role("switch", name="Pause the queue")).not_to_be_checked()
    assert queue_of(server, news)["paused"] is False

    page.get_by_role("switch", name="Move later posts up when one is deleted").uncheck()
    expect(page.locator(".queue-said")).to_have_text("Saved.")
    assert queue_of(server, news)["reflow"] is False

    cooldown = page.get_by_label("Days before an evergreen post goes out again")
    expect(cooldown).to_have_value("7")
    cooldown.fill("0")
    cooldown.press("Enter")
    expect(page.locator(".queue-cooldown .errors")).to_contain_text("from 1 to 3650")
    cooldown.fill("45")
    cooldown.press("Enter")
    expect(page.locator(".queue-cooldown .errors")).to_be_hidden()
    assert queue_of(server, news)["evergreenCooldownDays"] == 45

    # a refusal is said beside the switch it is about, and the switch shows what is stored
    page.route(f"**/public/v1/integrations/{news}/queue", lambda route: route.fulfill(
        status=403, content_type="application/json", body=json.dumps({"message": "Only an editor changes the queue"})))
    evergreen = page.get_by_role("switch", name="Evergreen")
    evergreen.click()  # (refused: it shows what is stored again)
    box = page.locator(".queue-switch", has=evergreen).locator(".errors")
    expect(box).to_contain_text("Only an editor changes the queue")
    expect(evergreen).to_be_checked()
    assert queue_of(server, news)["evergreen"] is True
    assert page.problems == []


def test_the_weekly_schedule_editor_saves_times_by_weekday_and_offers_best_times(start_server_with_fakes, open_page,
                                                                                receivers):
    server = start_server_with_fakes(env=QUIET_EVERGREEN)
    world = a_queue(server, receivers)
    news = world["news"]
    page = open_page(server, 390, "light")
    page.route(f"**/public/v1/integrations/{news}/best-times", lambda route: route.fulfill(
        status=200, content_type="application/json",
        body=json.dumps({"times": [{"day": "tuesday", "time": "16:30", "score": 4.5}], "basedOn": 24, "reason": None})))
    show(page, f"#/queue?channel={news}")
    page.get_by_role("button", name="Weekly posting schedule").click()
    dialog = page.get_by_role("dialog", name="Posting schedule of Company news")
    expect(dialog.get_by_label("Posting time on Monday")).to_have_count(2)
    expect(dialog.get_by_label("Posting time on Sunday")).to_have_count(0)
    dialog.get_by_role("button", name="Add a time on Monday").click()
    expect(dialog.get_by_label("Posting time on Monday").nth(2)).to_be_focused()
    dialog.get_by_label("Posting time on Monday").nth(2).fill("18:30")
    dialog.get_by_role("button", name="Remove 13:00 on Monday").click()
    dialog.get_by_role("button", name="Copy Monday to every day").click()
    expect(dialog.get_by_label("Posting time on Sunday")).to_have_count(2)
    dialog.get_by_role("button", name="Remove 18:30 on Sunday").click()
    dialog.get_by_role("button", name="Remove 09:00 on Sunday").click()
    dialog.get_by_role("button", name="+ Tue 16:30").click()  # a best time: added to Tuesday
    expect(dialog.get_by_label("Posting time on Tuesday")).to_have_count(3)
    assert sideways_overflow(page) <= 0
    shot(page, "schedule-390-light", full_page=False)
    assert serious_axe_violations(page) == []
    dialog.get_by_role("button", name="Save schedule").click()
    expect(dialog).to_be_hidden()
    status, stored = api(server, "GET", f"{API}/integrations/{news}/schedule")
    assert status == 200 and stored["weekly"] is True
    assert {day: stored[day] for day in WEEKDAYS} == {**{day: ["09:00", "18:30"] for day in WEEKDAYS[:6]},
                                                      "tuesday": ["09:00", "16:30", "18:30"], "sunday": []}
    expect(page.locator("li.slot time").first).to_have_text(paris_time(queue_of(server, news)["slots"][0]["date"]))

    # from the Channels page too; no best times (the API has none): no chips and no error
    page.unroute(f"**/public/v1/integrations/{news}/best-times")
    page.route(f"**/public/v1/integrations/{world['blog']}/best-times", lambda route: route.fulfill(status=404, body="{}"))
    show(page, "#/channels")
    page.get_by_role("button", name="Actions for Product blog").click()
    page.get_by_role("menuitem", name="Weekly posting schedule").click()
    dialog = page.get_by_role("dialog", name="Posting schedule of Product blog")
    expect(dialog.get_by_label("Posting time on Wednesday").first).to_be_visible()
    expect(dialog.locator(".best-times")).to_have_count(0)
    expect(dialog.locator(".errors:not([hidden])")).to_have_count(0)
    dialog.get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name="Actions for Company news").click()
    page.get_by_role("menuitem", name="Queue").click()
    expect(page.get_by_role("heading", name="Queue of Company news")).to_be_visible()
    assert page.problems == []


def test_add_to_queue_from_the_composer_takes_the_next_free_slot_on_each_channel(start_server_with_fakes, open_page,
                                                                                 receivers):
    server = start_server_with_fakes(env=QUIET_EVERGREEN)
    world = a_queue(server, receivers)
    free = next(slot["date"] for slot in queue_of(server, world["news"])["slots"] if not slot["post"])
    page = open_page(server, 1440, "light")
    show(page, "#/compose")
    page.get_by_role("checkbox", name="Company news").check()
    page.get_by_role("checkbox", name="Product blog").check()
    page.get_by_label("Post", exact=True).fill("Behind the scenes of our studio")
    page.get_by_label("Evergreen").check()
    page.get_by_label("Repeat", exact=True).select_option(label="Every week")
    page.get_by_role("button", name="Add to queue").click()  # a queued post goes out once: said in words
    expect(page.locator(".action-bar .errors")).to_contain_text("A post added to the queue goes out once")
    page.get_by_label("Repeat", exact=True).select_option(label="Does not repeat")
    page.get_by_role("button", name="Add to queue").click()
    notice = page.locator(".queued-notice")
    expect(notice).to_contain_text("Added to the queue of 2 channels")
    expect(notice).to_contain_text("Company news")
    expect(notice).to_contain_text("Product blog")
    added = page.locator("li.slot.just-added")
    expect(added).to_have_count(1)
    expect(added).to_contain_text("Behind the scenes of our studio")
    expect(added.locator(".badge.evergreen")).to_be_visible()
    post_id = added.get_attribute("data-post")
    post = get_post(server, post_id)
    assert post["publishDate"] == free and post["inQueue"] is True and post["evergreen"] is True
    expect(added.locator("time")).to_have_text(paris_time(free))
    assert placeholder_text(page) == []
    shot(page, "queue-after-add-1440-light", full_page=False)
    assert serious_axe_violations(page) == []

    notice.get_by_role("link", name="Open its queue").click()
    expect(page.get_by_role("heading", name="Queue of Product blog")).to_be_visible()
    expect(page.locator("li.slot.filled")).to_contain_text(["Behind the scenes of our studio"])

    show(page, f"#/post/{post_id}")
    expect(page.locator("h1 .badge.evergreen")).to_have_text("Evergreen")
    expect(page.locator("dd.in-queue")).to_contain_text("In the queue")
    page.locator("dd.in-queue").get_by_role("link", name="Open the queue").click()
    expect(page.get_by_role("heading", name="Queue of Company news")).to_be_visible()
    assert page.problems == []


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (390, "dark")))
def test_a_repeat_s_end_is_stored_shown_on_the_post_page_and_loaded_back(start_server_with_fakes, open_page, receivers,
                                                                         width, scheme):
    server = start_server_with_fakes(env=QUIET_EVERGREEN)
    world = a_queue(server, receivers)
    start = datetime.datetime.now(PARIS).replace(hour=10, minute=0, second=0, microsecond=0) + datetime.timedelta(days=2)
    page = open_page(server, width, scheme)

    def compose(text: str, end: str) -> None:
        show(page, "#/compose")
        page.get_by_role("checkbox", name="Company news").check()
        page.get_by_label("Post", exact=True).fill(text)
        page.get_by_label("Date and time (Europe/Paris)").fill(start.strftime("%Y-%m-%dT%H:%M"))
        page.get_by_label("Repeat", exact=True).select_option(label="Every week")
        expect(page.get_by_label("Ends", exact=True)).to_be_visible()
        page.get_by_label("Ends", exact=True).select_option(label=end)

    compose("Weekly office hours", "Ends after a number of times")
    page.get_by_label("How many times in all, the first included").fill("3")
    assert sideways_overflow(page) <= 0
    page.locator(".repeat-row").evaluate("e => e.scrollIntoView({block: 'center'})")
    shot(page, f"composer-repeat-{width}-{scheme}", full_page=False)
    assert serious_axe_violations(page) == []
    page.get_by_role("button", name="Schedule").click()
    expect(page.locator("p.made")).to_contain_text("Scheduled")
    counted = posted(server, "Weekly office hours")
    assert counted["repeatCount"] == 3 and counted["intervalInDays"] == 7 and counted["repeatUntil"] is None

    show(page, f"#/post/{counted['id']}")
    expect(page.locator("dd.repeats")).to_have_text("every 7 days · 3 times in all")
    expect(page.locator("ol.occurrences li")).to_have_count(len(counted["occurrences"]["next"]))
    last = datetime.datetime.fromisoformat(counted["occurrences"]["last"].replace("Z", "+00:00")).astimezone(PARIS)
    assert last.date() == (start + datetime.timedelta(days=14)).date()
    expect(page.locator("dd.last-occurrence time")).to_have_attribute("datetime", counted["occurrences"]["last"])
    assert placeholder_text(page) == [] and sideways_overflow(page) <= 0
    shot(page, f"post-repeats-{width}-{scheme}", full_page=False)
    assert serious_axe_violations(page) == []

    show(page, f"#/compose?edit={counted['id']}")  # editing loads the end back
    expect(page.get_by_label("Ends", exact=True)).to_have_value("count")
    expect(page.get_by_label("How many times in all, the first included")).to_have_value("3")

    until = start + datetime.timedelta(days=30)
    compose("Monthly newsletter reminder", "Ends on a date")
    page.get_by_label("Last day of the repeat").fill(until.strftime("%Y-%m-%d"))
    page.get_by_role("button", name="Schedule").click()
    expect(page.locator("p.made")).to_contain_text("Scheduled")
    dated = posted(server, "Monthly newsletter reminder")
    assert dated["repeatCount"] is None
    assert datetime.datetime.fromisoformat(dated["repeatUntil"].replace("Z", "+00:00")).astimezone(PARIS).date() == until.date()
    show(page, f"#/post/{dated['id']}")
    expect(page.locator("dd.repeats")).to_contain_text(f"until {until.strftime('%b')} {until.day}, {until.year}")
    assert page.problems == []


def posted(server, text: str) -> dict:
    """The post (GET /posts/:id) whose text is `text`, among the next 60 days' posts."""
    window = f"startDate={iso(-86400)}&endDate={iso(86400 * 60)}"
    status, listed = api(server, "GET", f"{API}/posts?{window}")
    assert status == 200, listed
    ids = {post["id"] for post in listed["posts"] if text in post["content"]}
    assert len(ids) == 1, listed
    return get_post(server, ids.pop())
