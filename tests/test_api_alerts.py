"""Alerts: a failed post, a channel that needs reconnecting and a late post are each announced once on the
organization's alert channel (a webhook channel to a fake receiver here), with the link that fixes it, even
after a restart; an alert that fails is recorded and never alerts; the hourly limit holds the rest and the
next alert says how many; PUT /public/v1/alerts refuses what is not a channel or a number of minutes."""
from __future__ import annotations

import time

import pytest

from fakes.webhook import FakeWebhookReceiver
from fakes import answer
from conftest import run_cli
from support import (API, FAST_RETRIES, api, connect_database, iso, notifications, scheduled, settled,
                     waiting_for_reconnect, wait_for, webhook_channel)

QUICK_ALERTS = {**FAST_RETRIES, "RUSTIZ_ALERT_CHECK_SECONDS": "0.2", "FRONTEND_URL": "https://social.example.com"}


class RefusingReceiver(FakeWebhookReceiver):
    """A webhook receiver that takes the connect test (ping) and answers every post with `status`."""

    def __init__(self, status: int):
        super().__init__()
        self.refused: list = []
        self.route("POST", "/refuse", lambda request: self.refuse(request, status))

    def refuse(self, request, status: int):
        event = request.json()
        if event["event"] != "post.publish":
            return answer(200, {})
        self.refused.append(event["post"])
        return answer(status, {"message": "this receiver takes no posts"})


@pytest.fixture
def alerted(receiver):
    """The receiver of the alert channel."""
    return receiver


@pytest.fixture
def refusing():
    fake = RefusingReceiver(422)
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes):
    return start_server_with_fakes(env=QUICK_ALERTS)


def set_alerts(server, **body) -> dict:
    status, answer_ = api(server, "PUT", f"{API}/alerts", body)
    assert status == 200, answer_
    return answer_


def alerts(server) -> list:
    status, answer_ = api(server, "GET", f"{API}/alerts")
    assert status == 200, answer_
    return answer_["alerts"]


def alert_texts(receiver) -> list:
    return [post["text"] for post in receiver.published]


def stays(read, expected, seconds: float = 1.5):
    """`read()` still equals `expected` after `seconds` (what must not happen a second time did not)."""
    time.sleep(seconds)
    assert read() == expected


def test_a_failed_post_is_announced_once_on_the_alert_channel_with_its_link(server, alerted, refusing):
    set_alerts(server, channel=webhook_channel(server, alerted, "alerts"))
    failing = webhook_channel(server, refusing, "shop", path="/refuse")
    post_id = scheduled(server, failing, "<p>doomed</p>")
    assert settled(server, post_id)["state"] == "ERROR"
    alerted.wait_for(lambda: alerted.published)
    (text,) = alert_texts(alerted)
    assert "a post on shop failed" in text and "this receiver takes no posts" in text
    assert f"https://social.example.com/#/post/{post_id}" in text
    stays(lambda: len(alerted.published), 1)
    (alert,) = alerts(server)
    assert (alert["kind"], alert["status"], alert["error"]) == ("failed", "sent", None)
    assert alert["link"] == f"https://social.example.com/#/post/{post_id}"
    assert any("this receiver takes no posts" in text for text in notifications(server))  # (the in-app one stays)


def test_a_channel_that_needs_reconnecting_is_announced_once(server, alerted):
    set_alerts(server, channel=webhook_channel(server, alerted, "alerts"))
    locked_out = RefusingReceiver(401)
    try:
        channel = webhook_channel(server, locked_out, "locked", path="/refuse")
        first = scheduled(server, channel, "<p>one</p>")
        waiting_for_reconnect(server, first)
        waiting_for_reconnect(server, scheduled(server, channel, "<p>two</p>"))
    finally:
        locked_out.close()
    alerted.wait_for(lambda: alerted.published)
    stays(lambda: len(alerted.published), 1)
    (text,) = alert_texts(alerted)
    assert "channel locked needs reconnecting" in text
    assert f"https://social.example.com/#/channels?channel={channel}" in text
    assert [alert["kind"] for alert in alerts(server)] == ["reconnect"]


def test_a_late_post_is_announced_once_after_the_threshold_even_after_a_restart(start_server_with_fakes, alerted,
                                                                                refusing):
    server = start_server_with_fakes(env=QUICK_ALERTS)
    set_alerts(server, channel=webhook_channel(server, alerted, "alerts"), lateMinutes=5)
    stuck = webhook_channel(server, refusing, "stuck", path="/refuse")  # (its posts never reach it)
    with connect_database(server.database) as db:  # flagged by hand: its posts wait, and no reconnect alert
        db.execute("UPDATE integration SET refresh_needed = 1 WHERE id = ?", (stuck,))
    post_id = scheduled(server, stuck, "<p>waiting</p>")
    waiting_for_reconnect(server, post_id)
    stays(lambda: alerted.published, [], 1.0)  # not 5 minutes late yet
    with connect_database(server.database) as db:  # 6 minutes pass
        db.execute("UPDATE post SET publish_date = ? WHERE id = ?", (iso(-360), post_id))
    alerted.wait_for(lambda: alerted.published)
    (text,) = alert_texts(alerted)
    assert "Webhook (stuck)" in text and "still not published" in text and "Waiting for the channel" in text
    assert f"/#/post/{post_id}" in text
    server.stop()
    server = start_server_with_fakes(env=QUICK_ALERTS, data_dir=server.data_dir)
    stays(lambda: len(alerted.published), 1)
    assert [alert["kind"] for alert in alerts(server)] == ["late"]


def test_an_alert_that_fails_is_recorded_once_and_never_alerts(server, refusing):
    # The alert channel is the failing channel itself: the post fails, its alert is tried once and fails too.
    failing = webhook_channel(server, refusing, "everything", path="/refuse")
    set_alerts(server, channel=failing)
    post_id = scheduled(server, failing, "<p>doomed</p>")
    assert settled(server, post_id)["state"] == "ERROR"
    (alert,) = wait_for(lambda: alerts(server), lambda found: found and found[0]["status"] != "pending")
    assert alert["status"] == "failed" and "this receiver takes no posts" in alert["error"]
    assert "HTTP 422" in alert["error"]
    stays(lambda: len(refusing.refused), 2)  # the post, then its alert: nothing more
    assert len(alerts(server)) == 1
    assert len(notifications(server)) == 1  # the post's failure only: a failed alert notifies nobody
    assert any("alert" in line and "was not sent" in line for line in server.stderr_lines)


def test_alerts_over_the_hourly_limit_are_held_and_the_next_one_says_how_many(start_server_with_fakes, alerted,
                                                                               refusing):
    server = start_server_with_fakes(env={**QUICK_ALERTS, "RUSTIZ_ALERT_LIMIT": "2"})
    set_alerts(server, channel=webhook_channel(server, alerted, "alerts"))
    failing = webhook_channel(server, refusing, "shop", path="/refuse")
    for number in range(4):
        assert settled(server, scheduled(server, failing, f"<p>doomed {number}</p>"))["state"] == "ERROR"
    statuses = wait_for(lambda: sorted(alert["status"] for alert in alerts(server)),
                        lambda found: len(found) == 4 and "pending" not in found)
    assert statuses == ["held", "held", "sent", "sent"]
    assert len(alerted.published) == 2
    assert any("held back" in line and "RUSTIZ_ALERT_LIMIT" in line for line in server.stderr_lines)
    with connect_database(server.database) as db:  # an hour passes
        db.execute("UPDATE alert SET attempted_at = attempted_at - 3600")
    assert settled(server, scheduled(server, failing, "<p>doomed later</p>"))["state"] == "ERROR"
    alerted.wait_for(lambda: len(alerted.published) == 3)
    assert "Also 2 more alerts held back by the limit of 2 an hour" in alert_texts(alerted)[-1]
    statuses = wait_for(lambda: sorted(alert["status"] for alert in alerts(server)),  # (marked sent after delivery)
                        lambda found: "pending" not in found)
    assert statuses == ["folded", "folded", "sent", "sent", "sent"]


def test_the_alert_settings_are_read_and_changed_and_refused_with_the_field_named(server, alerted):
    status, shown = api(server, "GET", f"{API}/alerts")
    assert status == 200
    assert shown == {"channel": None, "lateMinutes": None, "defaultLateMinutes": 15, "alerts": []}
    channel = webhook_channel(server, alerted, "alerts")
    assert set_alerts(server, channel=channel, lateMinutes=30)["lateMinutes"] == 30
    assert set_alerts(server, lateMinutes=None) == {"channel": channel, "lateMinutes": None,
                                                    "defaultLateMinutes": 15, "alerts": []}
    for body, words in (({"channel": "no-such-channel"}, "channel is not a channel of this organization"),
                        ({"channel": 12}, "channel is not a channel of this organization"),
                        ({"lateMinutes": 0}, "lateMinutes must be a whole number"),
                        ({"lateMinutes": 10081}, "lateMinutes must be a whole number"),
                        ({"lateMinutes": 1.5}, "lateMinutes must be a whole number"),
                        ({"lateMinutes": "5"}, "lateMinutes must be a whole number"),
                        ({"lateMinutes": True}, "lateMinutes must be a whole number"),
                        ({"color": "red"}, "property color should not exist")):
        status, refused = api(server, "PUT", f"{API}/alerts", body)
        assert status == 400 and any(words in message for message in refused["message"]), (body, refused)
    assert api(server, "DELETE", f"{API}/integrations/{channel}")[0] == 200
    status, refused = api(server, "PUT", f"{API}/alerts", {"channel": channel})
    assert status == 400 and "channel is not a channel of this organization" in refused["message"][0]
    assert set_alerts(server, channel=None)["channel"] is None


def alerts_cli(server, *arguments: str):
    return run_cli(server.pyz, "org", "alerts", *arguments,
                   env={"RUSTIZ_CONFIG": str(server.config_path), "RUSTIZ_DATABASE": server.database})


def test_the_cli_names_the_alert_channel_and_threshold_with_the_same_checks(server, alerted):
    channel = webhook_channel(server, alerted, "alerts")
    result = alerts_cli(server, "--channel", channel, "--late-minutes", "45")
    assert result.returncode == 0, result.stderr
    assert f"alerts go to channel {channel}; a post counts as late 45 minutes after its date" in result.stdout
    assert api(server, "GET", f"{API}/alerts")[1]["lateMinutes"] == 45
    for arguments, words in ((("--channel", "nope"), "channel is not a channel of this organization"),
                             (("--late-minutes", "-3"), "lateMinutes must be a whole number"),
                             (("--late-minutes", "²"), "lateMinutes must be a whole number"),
                             (("--org", "nope"), "no organization has the id nope")):
        result = alerts_cli(server, *arguments)
        assert result.returncode == 2 and words in result.stderr and "Traceback" not in result.stderr, result.stderr
    result = alerts_cli(server, "--channel", "off", "--late-minutes", "default")
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("alerts go to no channel (off); a post counts as late 15 minutes after its date "
                                  "(the default, RUSTIZ_ALERT_LATE_MINUTES)\n")
