"""Alerts: trouble announced on a channel the organization names, once per event, besides its notification.

Rules:
- Three events: a post that failed for good ("failed"), a channel that needs reconnecting ("reconnect"), a
  post still queued more than the organization's late threshold after its date ("late"). Each is one alert
  row, unique by (organization, kind, subject), written by storage.alerts.queue_alert: found again by another process,
  the next sweep or after a restart, it is not announced again.
- An alert goes out through its channel's publisher (so through the one outbound client and its address
  guard) as a short text with the link that fixes the trouble. It is never a post: no calendar, no retry, no
  webhook event, no notification of its own.
- Never a loop: an alert is tried once; a failure is logged and recorded on its row, raises no alert and no
  notification, and flags no channel for reconnecting, even when the alert channel is the one in trouble.
- Rate-limited: at most RUSTIZ_ALERT_LIMIT alerts per organization per hour; more are held (logged and
  recorded), and the next alert that goes out says how many were held.
- It imports background.py, never the scheduler: the scheduler makes the AlertSender, and reaches it as its
  SenderHost (its owner name, tasks, outbound client and publish).
"""
from __future__ import annotations

import json
import sqlite3
import time
import traceback
from typing import Any, Optional

from rustiz import (
    App, Config, Request, Response, Store, bad_request, duration, iso_at, json_object, json_response, log,
    route_options,
)
from .api_docs import documented, object_schema, ref
from .background import RowSender, SenderHost, epoch_seconds, failure_text
from .publishers import provider_for
from .storage import alerts as alert_store
from .storage import channels as channel_store

DEFAULT_LATE_MINUTES = 15
LATE_MINUTES_MAX = 7 * 24 * 60  # a week
DEFAULT_HOURLY_LIMIT = 10
DEFAULT_CHECK_SECONDS = 60.0  # how often queued posts are looked at for lateness
ALERT_LEASE_SECONDS = 120  # beyond one send's timeouts: a live sender keeps its claim
ALERT_CONCURRENCY = 4  # alerts in flight at once, per process
ALERT_POLL_SECONDS = 30.0  # how often a process looks for alerts other processes queued
ALERT_KEEP_SECONDS = 30 * 86400  # finished alerts are forgotten after this (beyond PUBLISH_GRACE's maximum)
REASON_LIMIT = 600  # characters of the error an alert quotes: the link after it must survive


def numeric_setting(settings: Optional[dict], name: str, default: float, least: float, most: float) -> float:
    """A number from the settings within [least, most]; an unreadable value is logged and `default` kept."""
    raw = (settings or {}).get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if least <= value <= most:  # (refuses nan too)
        return value
    log(f"{name} must be a number from {least:g} to {most:g}; got {raw[:100]!r}: using {default:g} instead")
    return default


def default_late_minutes(settings: Optional[dict]) -> int:
    """RUSTIZ_ALERT_LATE_MINUTES: the late threshold of organizations that set none of their own."""
    return int(numeric_setting(settings, "RUSTIZ_ALERT_LATE_MINUTES", DEFAULT_LATE_MINUTES, 1, LATE_MINUTES_MAX))


def clipped(reason: str) -> str:
    return reason if len(reason) <= REASON_LIMIT else reason[:REASON_LIMIT - 1] + "…"


def post_link(config: Config, post_id: str) -> str:
    """The web app's page of a post (its error, Retry, Edit)."""
    return f"{config.frontend_url}/#/post/{post_id}"


class AlertSender(RowSender):
    """This process's sender of alerts (beside the scheduler's webhook deliveries): it queues the events the
    scheduler reports, looks for late posts where the scheduler runs, claims waiting alerts under a lease,
    and sends each once."""

    def __init__(self, scheduler: SenderHost):
        self.scheduler, self.store, self.loop = scheduler, scheduler.store, scheduler.loop
        self.config = scheduler.config
        settings = scheduler.config.settings
        self.late_minutes = default_late_minutes(settings)
        self.hourly_limit = int(numeric_setting(settings, "RUSTIZ_ALERT_LIMIT", DEFAULT_HOURLY_LIMIT, 1, 10000))
        self.check_seconds = numeric_setting(settings, "RUSTIZ_ALERT_CHECK_SECONDS", DEFAULT_CHECK_SECONDS, 0.1, 3600)
        self.late_check_at = 0.0
        self.housekeeping_at = 0.0

    # --- the events, reported by the scheduler ------------------------------------------------------

    def post_failed(self, claim: dict, text: str) -> None:
        """A post ended in ERROR with `text` (each failure is an event of its own: a retried post may fail again)."""
        link = post_link(self.config, claim["id"])
        self._queue(claim["organization_id"], "failed", f"{claim['id']}@{iso_at(time.time())}",
                    f"rustiz alert: a post on {claim['channel_name']} failed. {clipped(text)}. Fix it: {link}", link)

    def channel_needs_reconnect(self, claim: dict, label: str, reason: str, link: str) -> None:
        """A channel was flagged for reconnecting (the caller flagged it, so this is called once per flagging)."""
        self._queue(claim["organization_id"], "reconnect", f"{claim['channel_id']}@{iso_at(time.time())}",
                    f"rustiz alert: the {label} channel {claim['channel_name']} needs reconnecting: "
                    f"{clipped(reason)}. Its posts wait until it is reconnected. Reconnect it: {link}", link)

    def _queue(self, organization_id: str, kind: str, subject_id: str, text: str, link: str) -> None:
        try:
            queued = alert_store.queue_alert(self.store, organization_id, kind, subject_id, text, link)
        except sqlite3.Error as error:  # the event is still in the notifications: publishing goes on
            log(f"alert ({kind} {subject_id}) could not be queued ({error}); it is in the notifications only")
            return
        if queued:
            self.wake()

    def _queue_late_posts(self, now: float) -> None:
        for post in alert_store.late_posts_to_alert(self.store, self.late_minutes, now):
            platform = provider_for(post["provider"])
            label = platform.label if platform else post["provider"]
            late = now - epoch_seconds(post["publish_date"])
            why = f" ({clipped(post['error'])})" if post["error"] else ""
            link = post_link(self.config, post["id"])
            self._queue(post["organization_id"], "late", f"{post['id']}@{post['publish_date']}",
                        f"rustiz alert: a post on {label} ({post['channel_name']}) due at {post['publish_date']} is "
                        f"still not published {duration(late)} later{why}. See it: {link}", link)

    # --- the loop: claim, send, record ---------------------------------------------------------------

    def _run_due(self) -> None:
        if self.stopped:
            return
        now = time.time()
        try:
            if self.scheduler.running and now >= self.late_check_at:  # (where posts are published: it knows)
                self.late_check_at = now + self.check_seconds
                self._queue_late_posts(now)
            if now >= self.housekeeping_at:
                self.housekeeping_at = now + 3600
                alert_store.forget_old_alerts(self.store, iso_at(now - ALERT_KEEP_SECONDS))
            self._start_due(now)
        except sqlite3.Error as error:
            log(f"alerts: the database failed ({error}); trying again in 5 s")
            self.sleep(5)
            return
        self.sleep(min(ALERT_POLL_SECONDS, self.check_seconds))

    def _start_due(self, now: float) -> None:
        room = ALERT_CONCURRENCY - self.in_flight
        if room <= 0:
            return
        claimed = (alert_store.claim_alert(self.store, alert_id, self.scheduler.owner, now + ALERT_LEASE_SECONDS, now)
                   for alert_id in alert_store.due_alerts(self.store, now, room))
        self.send_claimed((alert for alert in claimed if alert is not None and not self._over_limit(alert)),
                          self._send, self.scheduler.tasks)

    def _over_limit(self, alert: dict) -> bool:
        """Hold the alert (recorded, logged) when the organization had RUSTIZ_ALERT_LIMIT in the last hour.
        (Counted when claimed, the claimed one included, so that alerts sent at once count each other.)"""
        attempted = alert_store.alerts_attempted_since(self.store, alert["organization_id"], time.time() - 3600)
        if attempted <= self.hourly_limit:
            return False
        problem = f"held back: {self.hourly_limit} alerts went out in the last hour already (RUSTIZ_ALERT_LIMIT)"
        log(f"alert {alert['id']} of organization {alert['organization_id']} {problem}: {alert['text']}")
        alert_store.record_alert_outcome(self.store, alert["id"], self.scheduler.owner, "held", problem)
        return True

    async def _send(self, alert: dict) -> None:
        try:
            try:
                problem = await self._attempt(alert)
            except Exception:  # a bug in rustiz: logged and recorded, never alerted
                log(f"alert {alert['id']} failed unexpectedly:\n{traceback.format_exc()}")
                problem = "rustiz failed while sending it (its log has the details)"
            if problem:
                log(f"alert {alert['id']} of organization {alert['organization_id']} was not sent: {problem} "
                    f"(the alert was: {alert['text']})")
            alert_store.record_alert_outcome(self.store, alert["id"], self.scheduler.owner,
                                             "failed" if problem else "sent", problem or None)
        except sqlite3.Error as error:
            log(f"alert {alert['id']}: its outcome could not be recorded ({error})")

    async def _attempt(self, alert: dict) -> str:
        """"" when the alert channel took it, else what went wrong."""
        from .publishers.base import Channel, OutgoingPost, PublishError
        from .text import escape_html
        row = alert["channel"]
        if alert["attempts"] > 1:  # a process stopped while sending it: it may be out, so not sent again
            return "rustiz stopped while sending it; it is not sent again, so that it is never announced twice"
        if row is None:
            return "its alert channel was deleted"
        if row["disabled"]:
            return f"its alert channel {row['name']} is disabled"
        platform = provider_for(row["provider"])
        if platform is None:
            return f"rustiz cannot publish to {row['provider']} channels"
        held = alert_store.fold_held_alerts(self.store, alert["organization_id"])
        text = alert["text"] + (f" (Also {held} more alert{'s' if held > 1 else ''} held back by the limit of "
                                f"{self.hourly_limit} an hour: see the notifications, "
                                f"{self.config.frontend_url}/#/notifications)" if held else "")
        limit = platform.descriptor.max_length
        if limit and len(text) > limit:  # the link matters most: the middle gives way
            link = alert["link"] or ""
            text = text[:max(0, limit - len(link) - 3)] + "… " + link if len(link) + 3 < limit else text[:limit]
        channel = Channel(row["id"], row["name"], json.loads(row["credentials"] or "{}"),
                          json.loads(row["session"] or "null"), self.scheduler.http,
                          lambda session: channel_store.save_channel_session(self.store, row["id"], session))
        post = OutgoingPost(alert["id"], f"<p>{escape_html(text)}</p>", (), {}, 0, alert["id"], iso_at(time.time()))
        try:  # (the scheduler's publish: an OAuth channel's token is refreshed first; never retried here)
            await self.scheduler.publish_part(platform, channel, post, None)
        except PublishError as error:
            return failure_text(platform.label, error, 0)
        return ""


# --- the routes: GET and PUT /public/v1/alerts ------------------------------------------------------------

class AlertsApi:
    """rustiz: the organization's alert channel and late threshold, and its latest alerts."""

    def __init__(self, app: App):
        self.config = app.config
        self.store = app.store

    @documented("The organization's alert channel, late threshold and latest alerts (rustiz)", ("200", ref("Alerts")))
    def show(self, request: Request, organization_id: str) -> Response:
        return json_response(alert_settings_view(self.config, self.store, organization_id))

    @route_options(audit="alerts.updated")
    @documented("Name the channel trouble is announced on (null: none), and after how many minutes a queued post "
                "counts as late (null: RUSTIZ_ALERT_LATE_MINUTES) (rustiz)", ("200", ref("Alerts")), "BadRequest",
                request=object_schema({}, {"channel": {"type": ["string", "null"]}, "lateMinutes": {
                    "type": ["integer", "null"], "minimum": 1, "maximum": 10080}}))
    def update(self, request: Request, organization_id: str) -> Response:
        channel_id, late_minutes = validate_alert_settings(self.store, organization_id, json_object(request))
        alert_store.set_alert_settings(self.store, organization_id, channel_id, late_minutes)
        return json_response(alert_settings_view(self.config, self.store, organization_id))


def alert_settings_view(config: Config, store: Store, organization_id: str) -> dict:
    """{channel, lateMinutes (null: the default), defaultLateMinutes, alerts: the latest 20}."""
    channel_id, late_minutes = alert_store.alert_settings(store, organization_id)
    return {"channel": channel_id, "lateMinutes": late_minutes,
            "defaultLateMinutes": default_late_minutes(config.settings),
            "alerts": alert_store.recent_alerts(store, organization_id)}


def validate_alert_settings(store: Store, organization_id: str, body: dict) -> tuple:
    """(channel id or None, late minutes or None) of PUT /alerts (and `rustiz org alerts`), a property left out
    keeping its value; raises ApiError (400) naming each problem."""
    current_channel, current_minutes = alert_store.alert_settings(store, organization_id)
    problems = [f"property {name} should not exist (send channel and/or lateMinutes)" for name in body
                if name not in ("channel", "lateMinutes")]
    channel_id: Any = body.get("channel", current_channel)
    if "channel" in body and channel_id is not None and (
            not isinstance(channel_id, str) or channel_store.channel(store, organization_id, channel_id) is None):
        problems.append(f"channel is not a channel of this organization: {json.dumps(channel_id)[:100]} "
                        "(GET /public/v1/integrations lists them; null turns alerts off)")
    minutes: Any = body.get("lateMinutes", current_minutes)
    if "lateMinutes" in body and minutes is not None and (
            type(minutes) is not int or not 1 <= minutes <= LATE_MINUTES_MAX):
        problems.append(f"lateMinutes must be a whole number of minutes from 1 to {LATE_MINUTES_MAX} (a week), "
                        f"or null for the server's default (RUSTIZ_ALERT_LATE_MINUTES); got "
                        f"{json.dumps(minutes)[:100]}")
    if problems:
        raise bad_request(problems)
    return channel_id, minutes
