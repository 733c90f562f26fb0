"""E-mail: a durable outbox sent through the operator's SMTP server, the mails rustiz sends, and each person's
e-mail preferences (GET/PUT /public/v1/me/notifications).

Rules:
- RUSTIZ_SMTP_URL turns mail on (Config.smtp, read by the core); without it nothing is queued (queue_mail
  answers False) and nothing is sent.
- Every mail is first a row of the outbox (storage.mail), unique by its dedupe key: the same event never queues
  two mails, whichever process finds it and however often. A request only writes the row: it never waits on SMTP.
- MailSender, beside the scheduler in every process, claims due rows under a lease, sends each with the standard
  library's smtplib on a thread (never on the event loop), with the row's own Message-ID and Date on every try,
  and records it sent, retried with back-off (RUSTIZ_MAIL_RETRY_BASE doubling, at most an hour apart) while the
  server refuses for now (4xx) or cannot be reached, or given up after RUSTIZ_MAIL_RETRY_LIMIT retries or a
  permanent refusal (5xx). A process killed mid-send leaves its lease, which ends: another process (or the next
  start) sends the row again, with the same Message-ID, so a receiving server can drop the repeat.
- smtp:// upgrades with STARTTLS when the server offers it and must when a password is to be sent; smtps:// is
  TLS from the start; certificates are checked. The SMTP server is the operator's own setting: it is not subject
  to the outbound client's address guard (which is for addresses users and platforms give).
- Others call the interface (mail_configured, queue_mail, queue_invite, queue_password_reset, notify_team) with
  `from rustiz_features import mail` inside their function. It imports background, api_docs and alerts' helpers
  (numeric_setting, post_link), never the scheduler: the scheduler makes the MailSender as its SenderHost.
"""
from __future__ import annotations

import asyncio
import contextlib
import html
import re
import sqlite3
import time
import traceback
from typing import Any, Optional

from rustiz import (
    App, Config, Request, Response, Store, bad_request, hash_api_key, iso_at, json_response, log, nest_error,
    route_options,
)
from .alerts import numeric_setting, post_link
from .api_docs import documented, object_schema
from .background import RowSender, SenderHost, epoch_seconds, wake_all
from .storage import mail as mail_store

MAIL_LEASE_SECONDS = 300  # well beyond one send (SMTP_TIMEOUT per step), so a live sender keeps its claim
SMTP_TIMEOUT = 30.0  # seconds for the connection and for each SMTP command
MAIL_CONCURRENCY = 2  # sends in flight at once, per process
MAIL_KEEP_SECONDS = 30 * 86400  # sent and given-up rows are forgotten after this
RETRY_CAP_SECONDS = 3600.0
SUBJECT_LIMIT = 200
ADDRESS = re.compile(r"[^@\s<>,;:\"'()\[\]\\]{1,64}@[A-Za-z0-9.-]{1,190}\.[A-Za-z0-9-]{2,63}|"
                     r"[^@\s<>,;:\"'()\[\]\\]{1,64}@localhost")

# The senders running in this process: queue_mail wakes them, so a mail queued here goes out at once (other
# processes find it on their next poll).
ACTIVE_SENDERS: set = set()


# --- the interface others call ------------------------------------------------------------------------------

def mail_configured(config: Config) -> bool:
    """Whether RUSTIZ_SMTP_URL is set (mail is sent)."""
    return config.smtp is not None


def queue_mail(store: Store, config: Config, *, to: str, subject: str, text: str, html: str, kind: str,
               dedupe_key: str, organization_id: Optional[str] = None) -> bool:
    """One durable outbox row, sent soon by a MailSender; never twice for the same dedupe_key. False (nothing
    queued) when mail is not configured, the address is not one, or the key was queued before. Never waits on
    SMTP."""
    if not mail_configured(config):
        return False
    if not isinstance(to, str) or not ADDRESS.fullmatch(to):
        log(f"mail ({kind}) not queued: {str(to)[:100]!r} is not an e-mail address")
        return False
    subject = " ".join(subject.split())[:SUBJECT_LIMIT]  # (one line: no header can be smuggled in)
    queued = mail_store.queue_message(store, organization_id=organization_id, kind=kind, recipient=to,
                                      subject=subject, text=text, html=html, dedupe_key=dedupe_key[:400],
                                      message_domain=sender_domain(config))
    if queued:
        wake_senders()
    return queued


def queue_invite(store: Store, config: Config, *, to: str, invite_url: str, organization_name: str, role: str,
                 inviter: str) -> bool:
    """The invite mail (always sent, whatever the preferences), with `invite_url` exactly as given (the same URL
    queues once: a resend with a new token is a new mail)."""
    text = (f"{inviter} invites you to join {organization_name} on rustiz as {article(role)} {role}.\n\n"
            f"Accept the invite (the link works once, for 7 days):\n{invite_url}\n")
    body = html_mail(f"{inviter} invites you to join {organization_name} on rustiz as {article(role)} {role}.",
                     invite_url, "Accept the invite", "The link works once, for 7 days.")
    return queue_mail(store, config, to=to, subject=f"Join {organization_name} on rustiz", text=text, html=body,
                      kind="invite", dedupe_key=f"invite:{secret_digest(invite_url)}")


def queue_password_reset(store: Store, config: Config, *, to: str, reset_url: str) -> bool:
    """The password reset mail (always sent), with `reset_url`."""
    text = ("Someone (you, we hope) asked to reset your rustiz password.\n\n"
            f"Set a new password (the link works once, for an hour):\n{reset_url}\n\n"
            "If it was not you, ignore this mail: your password stays as it is.\n")
    body = html_mail("Someone (you, we hope) asked to reset your rustiz password.", reset_url,
                     "Set a new password", "The link works once, for an hour. If it was not you, ignore this mail: "
                                           "your password stays as it is.")
    return queue_mail(store, config, to=to, subject="Reset your rustiz password", text=text, html=body,
                      kind="password-reset", dedupe_key=f"reset:{secret_digest(reset_url)}")


def secret_digest(url: str) -> str:
    """A link with a token, as a dedupe key that does not hold the token."""
    return hash_api_key(url)


def notify_team(store: Store, config: Config, organization_id: str, kind: str, subject: str, text: str, html: str,
                link: str, dedupe_key: str) -> int:
    """`kind` (failed, reconnect or review) to each admin and editor of the organization whose preference for it
    is on; how many were queued. `link` is added to the mail when its text does not hold it already."""
    if not mail_configured(config):
        return 0
    if link and link not in text:
        text = f"{text.rstrip()}\n\n{link}\n"
    if link and link not in html:
        html += f'<p><a href="{escape(link)}">{escape(link)}</a></p>'
    queued = 0
    for user_id, email, _name in mail_store.alerted_members(store, organization_id, kind):
        queued += queue_mail(store, config, to=email, subject=subject, text=text, html=html, kind=kind,
                             dedupe_key=f"{dedupe_key}:{user_id}", organization_id=organization_id)
    return queued


# --- the mails of events (called by the scheduler and the review of drafts) -------------------------------------

def post_failed(store: Store, config: Config, claim: dict, reason: str) -> None:
    """A post ended in ERROR (each failure an event of its own: a retried post may fail again)."""
    link = post_link(config, claim["id"])
    subject = f"A post on {claim['channel_name']} failed"
    lines = f"A post on {claim['channel_name']} failed: {reason}"
    _notify(store, config, claim["organization_id"], "failed", subject,
            f"{lines}\n\nSee it, edit it or retry it:\n{link}\n",
            html_mail(lines, link, "Open the post"), link, f"failed:{claim['id']}@{iso_at(time.time())}")


def channel_needs_reconnect(store: Store, config: Config, organization_id: str, channel_name: str, label: str,
                            reason: str, link: str) -> None:
    """A channel was flagged for reconnecting (once per flagging: the caller flagged it)."""
    lines = (f"The {label} channel {channel_name} needs reconnecting: {reason}. Its posts wait until it is "
             "reconnected.")
    _notify(store, config, organization_id, "reconnect", f"Reconnect the {label} channel {channel_name}",
            f"{lines}\n\nReconnect it:\n{link}\n", html_mail(lines, link, "Reconnect the channel"), link,
            f"reconnect:{link}@{iso_at(time.time())}")


def drafts_await_review(store: Store, config: Config, organization_id: str, post_ids: list, channels: list) -> None:
    """Drafts were made or changed for review (at most one mail per post an hour, however often it is edited)."""
    if not post_ids:
        return
    link = f"{config.frontend_url}/#/review"
    where = ", ".join(sorted(set(channels))) or "a channel"
    lines = f"A draft for {where} waits for your review."
    _notify(store, config, organization_id, "review", f"A draft for {where} waits for review",
            f"{lines}\n\nApprove or reject it:\n{link}\n\nThe post: {post_link(config, post_ids[0])}\n",
            html_mail(lines, link, "Review it"), link, f"review:{post_ids[0]}@{iso_at(time.time())[:13]}")


def _notify(store: Store, config: Config, organization_id: str, kind: str, subject: str, text: str, body: str,
            link: str, dedupe_key: str) -> None:
    """notify_team for an event found while publishing or saving: a database failure is logged, never raised
    (the event is in the notifications all the same)."""
    try:
        notify_team(store, config, organization_id, kind, subject, text, body, link, dedupe_key)
    except sqlite3.Error as error:
        log(f"mail ({kind}) could not be queued ({error}); it is in the notifications only")


# --- texts ----------------------------------------------------------------------------------------------------

def escape(value: str) -> str:
    return html.escape(value, quote=True)


def article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def html_mail(lead: str, link: str, action: str, note: str = "", extra: str = "") -> str:
    """A simple HTML mail: its lead paragraph, an optional block of HTML, a button-like link, a note."""
    button = (f'<p><a href="{escape(link)}" style="display:inline-block;padding:8px 16px;background:#2f5bd3;'
              f'color:#ffffff;text-decoration:none;border-radius:4px">{escape(action)}</a></p>'
              f'<p style="color:#666;font-size:13px">{escape(link)}</p>') if link else ""
    return ('<!DOCTYPE html><html><body style="font-family:sans-serif;line-height:1.5;color:#222">'
            f"<p>{escape(lead)}</p>{extra}{button}" + (f"<p>{escape(note)}</p>" if note else "") +
            '<p style="color:#666;font-size:12px">rustiz: change which mails you get in Settings → Notifications.</p>'
            "</body></html>")


def sender_domain(config: Config) -> str:
    """The domain of RUSTIZ_MAIL_FROM: the right-hand side of every Message-ID rustiz makes."""
    address = config.mail_from.rsplit("<", 1)[-1].rstrip(">")
    return address.rsplit("@", 1)[-1] or "localhost"


def envelope_sender(config: Config) -> str:
    return config.mail_from.rsplit("<", 1)[-1].rstrip(">").strip()


def build_message(config: Config, row: dict) -> Any:
    """The outbox row as a MIME message (plain text and HTML alternatives); the same bytes on every try but for
    the transport's own headers."""
    from email.message import EmailMessage
    from email.utils import formatdate
    message = EmailMessage()
    message["From"] = config.mail_from
    message["To"] = row["recipient"]
    message["Subject"] = row["subject"]
    message["Date"] = formatdate(epoch_seconds(row["created_at"]))
    message["Message-ID"] = row["message_id"]
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(row["text_body"])
    message.add_alternative(row["html_body"], subtype="html")
    return message


# --- SMTP (blocking: run on a thread) ---------------------------------------------------------------------------

class MailFailure(Exception):
    """A send that did not happen: `permanent` when trying again cannot help (the server's 5xx refusal)."""

    def __init__(self, problem: str, permanent: bool = False):
        super().__init__(problem)
        self.permanent = permanent


def open_smtp(config: Config) -> Any:
    """A connection to RUSTIZ_SMTP_URL's server, greeted (EHLO), upgraded to TLS and logged in as the URL says.
    Raises MailFailure."""
    import smtplib
    import ssl
    server = config.smtp
    context = ssl.create_default_context()
    try:
        client = smtplib.SMTP_SSL(server.host, server.port, timeout=SMTP_TIMEOUT, context=context) if server.tls \
            else smtplib.SMTP(server.host, server.port, timeout=SMTP_TIMEOUT)
    except (OSError, smtplib.SMTPException) as error:
        raise MailFailure(f"cannot reach the SMTP server {server.host}:{server.port}: {error}") from None
    try:
        client.ehlo()
        if not server.tls and client.has_extn("starttls"):
            client.starttls(context=context)
            client.ehlo()
        elif not server.tls and server.user:
            raise MailFailure(f"the SMTP server {server.host}:{server.port} offers no STARTTLS, so rustiz does not "
                              "send it the password in clear: use smtps:// or a server that offers STARTTLS")
        if server.user:
            client.login(server.user, server.password)
    except BaseException as error:
        with contextlib.suppress(Exception):
            client.close()
        if isinstance(error, smtplib.SMTPAuthenticationError):
            raise MailFailure(f"the SMTP server refused the login ({error.smtp_code}): check the user and password "
                              "in RUSTIZ_SMTP_URL") from None
        if isinstance(error, (OSError, smtplib.SMTPException)):
            raise MailFailure(f"the SMTP server {server.host}:{server.port} failed the greeting: {error}") from None
        raise
    return client


def send_now(config: Config, row: dict) -> None:
    """Send one outbox row (blocking). Raises MailFailure."""
    import smtplib
    message = build_message(config, row)
    client = open_smtp(config)
    try:
        client.send_message(message, from_addr=envelope_sender(config), to_addrs=[row["recipient"]])
    except smtplib.SMTPRecipientsRefused as refused:
        code, said = next(iter(refused.recipients.values()), (0, b""))
        raise MailFailure(f"the SMTP server refused the recipient ({code} {said_text(said)})",
                          permanent=500 <= code < 600) from None
    except smtplib.SMTPNotSupportedError as refused:  # (an address beyond ASCII, and no SMTPUTF8 there)
        raise MailFailure(f"the SMTP server cannot take this mail: {refused}", permanent=True) from None
    except smtplib.SMTPResponseException as refused:
        raise MailFailure(f"the SMTP server refused the mail ({refused.smtp_code} {said_text(refused.smtp_error)})",
                          permanent=500 <= refused.smtp_code < 600) from None
    except (OSError, smtplib.SMTPException) as error:
        raise MailFailure(f"the SMTP server failed while taking the mail: {error}") from None
    finally:
        with contextlib.suppress(Exception):
            client.quit()


def said_text(said: Any) -> str:
    text = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
    return " ".join(text.split())[:300]


def check_smtp(config: Config) -> str:
    """`rustiz doctor`: connect, EHLO, STARTTLS and login as configured, send nothing. "" when all went well, else
    the problem. (Blocking.)"""
    try:
        client = open_smtp(config)
    except MailFailure as failure:
        return str(failure)
    with contextlib.suppress(Exception):
        client.quit()
    return ""


# --- the sender ------------------------------------------------------------------------------------------------

def wake_senders() -> None:
    wake_all(ACTIVE_SENDERS)


class MailSender(RowSender):
    """This process's sender of the outbox: woken when a mail is queued here, it sleeps until the next is due (at
    most RUSTIZ_MAIL_POLL_SECONDS), claims what is due, sends it on a thread, and records what happened."""
    active = ACTIVE_SENDERS

    def __init__(self, host: SenderHost):
        self.host, self.store, self.loop, self.config = host, host.store, host.loop, host.config
        settings = host.config.settings
        self.retry_base = numeric_setting(settings, "RUSTIZ_MAIL_RETRY_BASE", 30.0, 0.01, 3600)
        self.retry_limit = int(numeric_setting(settings, "RUSTIZ_MAIL_RETRY_LIMIT", 12, 0, 100))
        self.poll_seconds = numeric_setting(settings, "RUSTIZ_MAIL_POLL_SECONDS", 30.0, 0.05, 3600)
        self.housekeeping_at = 0.0

    def start(self) -> None:
        if mail_configured(self.config):
            super().start()

    def _run_due(self) -> None:
        if self.stopped:
            return
        now = time.time()
        try:
            if now >= self.housekeeping_at:
                self.housekeeping_at = now + 60
                self._release_dead_leases(now)
                mail_store.forget_finished_messages(self.store, iso_at(now - MAIL_KEEP_SECONDS))
            self._start_due(now)
            next_due = mail_store.next_message_time(self.store)
        except sqlite3.Error as error:
            log(f"mail: the database failed ({error}); trying again in 5 s")
            next_due = now + 5
        self.sleep_until(now, next_due, self.poll_seconds, MAIL_CONCURRENCY)

    def _release_dead_leases(self, now: float) -> None:
        """Leases held by a process of this machine that is gone (kill -9, a crash) end now rather than after
        MAIL_LEASE_SECONDS: its mails go out at once after a restart. (Sent again if it died between the SMTP
        server's acceptance and the record of it: with the same Message-ID.)"""
        import os
        import socket
        for owner in mail_store.lease_owners(self.store, now):
            host, _, pid = owner.rpartition(":")
            if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                released = mail_store.release_leases(self.store, owner)
                log(f"mail: process {owner} stopped while sending; {released} of its mails are sent again")
            except OSError:
                pass  # (alive, another user's)

    def _start_due(self, now: float) -> None:
        room = MAIL_CONCURRENCY - self.in_flight
        if room <= 0:
            return
        lease_until = now + MAIL_LEASE_SECONDS
        self.send_claimed((mail_store.claim_message(self.store, message_id, self.host.owner, lease_until, now)
                           for message_id in mail_store.due_messages(self.store, now, room)),
                          self._send, self.host.tasks)

    async def _send(self, row: dict) -> None:
        try:
            try:
                await asyncio.get_running_loop().run_in_executor(None, send_now, self.config, row)
                failure = None
            except MailFailure as refused:
                failure = refused
            except Exception:  # a bug in rustiz: logged, and the mail follows the retry schedule
                log(f"mail {row['id']} failed unexpectedly:\n{traceback.format_exc()}")
                failure = MailFailure("rustiz failed while sending it (its log has the details)")
            self._record(row, failure)
        except sqlite3.Error as error:
            log(f"mail {row['id']}: its outcome could not be recorded ({error}); it is tried again when its lease "
                f"ends, in {MAIL_LEASE_SECONDS} s")

    def _record(self, row: dict, failure: Optional[MailFailure]) -> None:
        if failure is None:
            mail_store.record_sent(self.store, row["id"])
            return
        attempts, owner, problem = row["attempts"], self.host.owner, str(failure)
        if not failure.permanent and attempts <= self.retry_limit:
            wait = min(RETRY_CAP_SECONDS, self.retry_base * 2 ** (attempts - 1))
            log(f"mail {row['id']} ({row['kind']} to {row['recipient']}) not sent: {problem}; trying again in "
                f"{wait:g} s")
            mail_store.retry_message(self.store, row["id"], owner, time.time() + wait, problem)
        elif mail_store.give_up_message(self.store, row["id"], owner, problem):
            log(f"mail {row['id']} ({row['kind']} to {row['recipient']}) given up after {attempts} "
                f"attempt{'s' if attempts > 1 else ''}: {problem}")


# --- GET/PUT /public/v1/me/notifications ------------------------------------------------------------------------

PREFERENCE_SCHEMA = object_schema({}, {name: {"type": "boolean"} for name in mail_store.PREFERENCES})


def default_preferences(role: Optional[str]) -> dict:
    """Admins and editors: failed, reconnect and review on, the digest off; authors and viewers: all off."""
    alerted = role in mail_store.ALERTED_ROLES
    return {"failed": alerted, "reconnect": alerted, "review": alerted, "digest": False}


class NotificationPreferencesApi:
    """rustiz: the e-mails the signed-in person gets from this organization."""

    def __init__(self, app: App):
        self.config = app.config
        self.store = app.store

    @documented("The e-mails the signed-in person gets from this organization (rustiz; a web session only)",
                ("200", PREFERENCE_SCHEMA), "BadRequest")
    def show(self, request: Request, organization_id: str) -> Response:
        user_id = self._person(request)
        return json_response(self._effective(user_id, organization_id))

    @route_options(scope="read", body_limit=4096)  # (any member sets their own, a viewer too)
    @documented("Turn the signed-in person's e-mails on or off: failed, reconnect, review, digest (booleans; a "
                "property left out keeps its value) (rustiz)", ("200", PREFERENCE_SCHEMA), "BadRequest",
                request=PREFERENCE_SCHEMA)
    def update(self, request: Request, organization_id: str) -> Response:
        user_id = self._person(request)
        body = request.json()
        if not isinstance(body, dict):
            raise bad_request(["the body must be a JSON object such as {\"digest\": true}"])
        role, _stored = mail_store.stored_preferences(self.store, user_id, organization_id)
        problems = [f"property {str(name)[:60]} should not exist (send failed, reconnect, review and/or digest)"
                    for name in body if name not in mail_store.PREFERENCES]
        problems += [f"{name} must be true or false" for name in mail_store.PREFERENCES
                     if name in body and type(body[name]) is not bool]
        problems += [f"{name}: only editors and admins get these mails (your role is '{role}')"
                     for name in mail_store.PREFERENCES[:3] if body.get(name) is True
                     and role not in mail_store.ALERTED_ROLES]
        if problems:
            raise bad_request(problems)
        mail_store.save_preferences(self.store, user_id, organization_id, body)
        return json_response(self._effective(user_id, organization_id))

    @staticmethod
    def _person(request: Request) -> str:
        user_id = request.user
        if not user_id:
            raise nest_error(403, "E-mail preferences belong to a person signed in to the web app; an API key or "
                                  "MCP client has none")
        return user_id

    def _effective(self, user_id: str, organization_id: str) -> dict:
        role, stored = mail_store.stored_preferences(self.store, user_id, organization_id)
        if role is None:  # (a session's person is a member: the router checked; this guards a race with a removal)
            raise nest_error(403, "You are not a member of this organization")
        defaults = default_preferences(role)
        return {name: defaults[name] if value is None else value for name, value in stored.items()}
