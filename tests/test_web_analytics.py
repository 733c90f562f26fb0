"""Analytics over time in Chromium (Playwright, as tests/test_web.py): a channel's figures as line charts over 7, 30
and 90 days on the channels page, a published post's figures at 1 h, 24 h and 7 days on its page, and the composer's
best times setting the date; at 1440 and 390 px, light and dark, never wider than a 360 px window, nothing serious
for axe-core, no script or console error. Screenshots go to /tmp/shots-analytics/."""
from __future__ import annotations

import datetime
import time
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import open_page, placeholder_text, show, sideways_overflow  # noqa: F401
from test_web_channels import serious_axe_violations
from fakes.mastodon import FakeMastodon
from support import API, api, connect_database, connected, scheduled, settled

SIZES = ((1440, "light"), (1440, "dark"), (390, "dark"), (390, "light"))
SHOTS = Path("/tmp/shots-analytics")
DAY = 86400


@pytest.fixture
def mastodon():
    fake = FakeMastodon()
    yield fake
    fake.close()


def a_channel_with_history(server, mastodon) -> dict:
    """A Mastodon channel with 30 days of figures, a published post with its 1 h / 24 h / 7 d figures, and ten more
    posts with figures (best times: Monday 09:00 UTC did best), in an organization in Paris time."""
    assert api(server, "PUT", f"{API}/organization", {"timezone": "Europe/Paris"})[0] == 200
    channel = connected(server, "mastodon", mastodon.credentials())
    post = settled(server, scheduled(server, channel["id"], "<p>A launch that did well</p>"))
    older = [scheduled(server, channel["id"], f"<p>Older {n}</p>", type="draft") for n in range(10)]
    with connect_database(server.database) as db:
        for days_ago in range(30):
            day = time.strftime("%Y-%m-%d", time.gmtime(time.time() - days_ago * DAY))
            for metric, total in (("Followers", 1290 - days_ago * 10 + (days_ago % 3) * 4), ("Following", 80),
                                  ("Posts", 120 - days_ago // 3)):
                db.execute("INSERT INTO analytics_day (integration_id, metric, day, total, taken_at) "
                           "VALUES (?, ?, ?, ?, ?)", (channel["id"], metric, day, total, f"{day}T06:00:00.000Z"))
        for age, favourites, boosts in (("1h", 4, 1), ("24h", 18, 6), ("7d", 25, 9)):
            for metric, total in (("Favourites", favourites), ("Boosts", boosts), ("Replies", favourites // 4)):
                db.execute("INSERT INTO analytics_post (post_id, age, metric, total, taken_at) VALUES (?, ?, ?, ?, ?)",
                           (post["id"], age, metric, total, "2026-01-01T00:00:00.000Z"))
        for number, post_id in enumerate(older):
            moment = datetime.datetime(2026, 1, 5, 9) if number < 5 else datetime.datetime(2026, 1, 7, 17)
            moment += datetime.timedelta(days=7 * number)
            db.execute("UPDATE post SET state = 'PUBLISHED', release_id = ?, published_at = ? WHERE id = ?",
                       (f"old{number}", moment.strftime("%Y-%m-%dT%H:%M:%S.000Z"), post_id))
            db.execute("INSERT INTO analytics_post (post_id, age, metric, total, taken_at) VALUES (?, '24h', "
                       "'Favourites', ?, '2026-02-01T00:00:00.000Z')", (post_id, 60 if number < 5 else 5))
    return {"channel": channel, "post": post}


def check_page(page, name: str) -> None:
    """No placeholder text, nothing wider than the window (also at 360 px), nothing serious for axe-core; a shot."""
    assert placeholder_text(page) == []
    assert sideways_overflow(page) <= 0
    width = page.viewport_size["width"]
    if width < 600:
        page.set_viewport_size({"width": 360, "height": 860})
        assert sideways_overflow(page) <= 0
        page.set_viewport_size({"width": width, "height": 860})
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    assert serious_axe_violations(page) == []
    assert page.problems == []


@pytest.mark.parametrize("width,scheme", SIZES)
def test_a_channel_s_figures_over_7_30_and_90_days(start_server_with_fakes, open_page, mastodon, width, scheme):
    server = start_server_with_fakes()
    made = a_channel_with_history(server, mastodon)
    page = open_page(server, width, scheme)
    show(page, "#/channels")
    page.get_by_role("button", name="Actions for Ada Lovelace").click()
    page.get_by_role("menuitem", name="Analytics", exact=True).click()
    section = page.get_by_role("region", name="Ada Lovelace: figures over time")
    charts = section.locator("figure.chart")
    expect(charts).to_have_count(3)
    expect(section.get_by_role("button", name="30 days")).to_have_attribute("aria-pressed", "true")
    expect(charts.first).to_have_attribute("data-points", "30")
    followers = section.get_by_role("img", name="Followers")
    expect(followers).to_have_accessible_description("Followers: from 1,008 (" + day_label(29) + ") to 1,290 ("
                                                     + day_label(0) + "), lowest 1,008, highest 1,290.")
    expect(charts.first.locator("table tbody tr")).to_have_count(30)
    expect(charts.first.locator(".chart-last")).to_have_text("1,290")
    check_page(page, f"channel-30-days-{width}-{scheme}")
    section.get_by_role("button", name="7 days").click()
    expect(charts.first).to_have_attribute("data-points", "7")
    expect(section.get_by_role("button", name="7 days")).to_have_attribute("aria-pressed", "true")
    section.get_by_role("button", name="90 days").click()
    expect(charts.first).to_have_attribute("data-points", "30")  # (all there is)
    assert made["channel"]["id"]


def day_label(days_ago: int) -> str:
    moment = datetime.datetime.fromtimestamp(time.time() - days_ago * DAY, datetime.timezone.utc)
    return f"{moment.strftime('%b')} {moment.day}"


@pytest.mark.parametrize("width,scheme", SIZES)
def test_a_post_s_figures_at_1_hour_24_hours_and_7_days(start_server_with_fakes, open_page, mastodon, width, scheme):
    server = start_server_with_fakes()
    made = a_channel_with_history(server, mastodon)
    page = open_page(server, width, scheme)
    show(page, f"#/post/{made['post']['id']}")
    section = page.get_by_role("region", name="Figures over time")
    expect(section.get_by_role("heading", name="Figures over time")).to_be_visible()
    expect(section.locator("figure.chart")).to_have_count(3)
    expect(section.get_by_role("img", name="Favourites")).to_have_accessible_description(
        "Favourites: from 4 (1 hour) to 25 (7 days), lowest 4, highest 25.")
    expect(section.locator("figure.chart").first.locator(".chart-ends")).to_contain_text("1 hour")
    expect(page.locator(".figures li .bar-label")).to_have_text(["Favourites", "Boosts", "Replies"])  # (as of now)
    check_page(page, f"post-{width}-{scheme}")


@pytest.mark.parametrize("width,scheme", SIZES)
def test_the_composer_offers_a_channel_s_best_times_and_sets_the_date(start_server_with_fakes, open_page, mastodon,
                                                                       receivers_for_web, width, scheme):
    server = start_server_with_fakes()
    a_channel_with_history(server, mastodon)
    receivers_for_web(server, "Blog")
    page = open_page(server, width, scheme)
    show(page, "#/compose")
    page.get_by_role("button", name="Best times").click()
    expect(page.locator(".best-times-list")).to_contain_text("Choose a channel first")
    page.get_by_label("Ada Lovelace").check()
    page.get_by_label("Blog").check()
    page.get_by_role("button", name="Best times").click()
    buttons = page.locator(".best-times-channel .best-time")
    expect(buttons).to_have_count(3)  # (Monday mornings, Wednesday evenings, and the launch's hour)
    expect(buttons.first).to_have_text("Mon 10:00")  # (09:00 UTC in January is 10:00 in Paris)
    expect(page.locator(".best-times-list")).to_contain_text("10 more published posts with figures are needed")
    buttons.first.click()
    value = page.get_by_label("Date and time (Europe/Paris)").input_value()
    paris = datetime.datetime.fromisoformat(value).replace(tzinfo=ZoneInfo("Europe/Paris"))
    assert paris.weekday() == 0 and (paris.hour, paris.minute) == (10, 0)
    assert 0 < paris.timestamp() - time.time() <= 7 * DAY
    check_page(page, f"composer-{width}-{scheme}")


@pytest.fixture
def receivers_for_web():
    from fakes.webhook import FakeWebhookReceiver
    from support import webhook_channel
    made = []

    def make(server, name: str) -> str:
        made.append(FakeWebhookReceiver())
        return webhook_channel(server, made[-1], name)

    yield make
    for receiver in made:
        receiver.close()
