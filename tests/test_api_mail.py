"""E-mail, against a real SMTP server (aiosmtpd, tests/smtp_server.py): a failed post, a channel to reconnect and a
draft to review are mailed once to each admin and editor whose preference is on, with the link that acts; the
daily digest goes out once a day; the outbox survives kill -9 and a mail server that is down or refuses for a while,
and never sends a row twice; GET/PUT /public/v1/me/notifications belong to a person signed in, and refuse what is
not four booleans."""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import signal
import time

import pytest

from conftest import run_cli
from fakes import answer
from fakes.webhook import FakeWebhookReceiver
from smtp_server import SmtpServer, bodies
from support import (API, FAST_RETRIES, api, connect_database, dict_rows, iso, new_key, post_body, channel_post,
                     scheduled, settled, waiting_for_reconnect, wait_for, webhook_channel)

FRONTEND = "https://social.example.com"
PASSWORD = "correct horse battery staple"
QUICK_MAIL = {**FAST_RETRIES, "FRONTEND_URL": FRONTEND, "RUSTIZ_MAIL_FROM": "Rustiz <rustiz@social.example.com>",
              "RUSTIZ_MAIL_RETRY_BASE": "0.3", "RUSTIZ_MAIL_POLL_SECONDS": "0.2",
              "RUSTIZ_MAIL_DIGEST_CHECK_SECONDS": "0.2"}


class RefusingReceiver(FakeWebhookReceiver):
    """A webhook channel's receiver that answers every post with `status` (422: it fails; 401: reconnect)."""

    def __init__(self, status: int):
        super().__init__()
        self.route("POST", "/refuse", lambda request: answer(200, {}) if request.json()["event"] != "post.publish"
                   else answer(status, {"message": "this receiver takes no posts"}))


@pytest.fixture
def smtp():
    server = SmtpServer()
    yield server
    server.stop()


@pytest.fixture
def refusing():
    fake = RefusingReceiver(422)
    yield fake
    fake.close()


@pytest.fixture
def server(start_server_with_fakes, smtp):
    return start_server_with_fakes(env={**QUICK_MAIL, "RUSTIZ_SMTP_URL": smtp.url})


# --- people -------------------------------------------------------------------------------------------------

def quick_password_hash(password: str) -> str:
    """The web app's PBKDF2 format with few iterations (the stored hash names them), so tests stay fast."""
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 1000)
    return f"pbkdf2_sha256$1000${salt.hex()}${digest.hex()}"


def add_member(server, email: str, role: str) -> str:
    """A person of the server's organization with `role`; their user id."""
    user_id = f"user-{email.partition('@')[0]}"
    with connect_database(server.database) as db:
        organization_id = db.execute("SELECT id FROM organization").fetchone()[0]
        db.execute("INSERT INTO web_user (id, organization_id, email, password_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                   (user_id, organization_id, email, quick_password_hash(PASSWORD), iso()))
        db.execute("INSERT INTO membership (user_id, organization_id, role, created_at) VALUES (?, ?, ?, ?)",
                   (user_id, organization_id, role, iso()))
    return user_id


def team(server) -> dict:
    """One person of each role, and an editor who turned failure mails off: email -> user id."""
    people = {f"{role}@example.com": add_member(server, f"{role}@example.com", role)
              for role in ("admin", "editor", "author", "viewer")}
    people["quiet@example.com"] = add_member(server, "quiet@example.com", "editor")
    store_preferences(server, people["quiet@example.com"], failed=False, reconnect=False, review=False)
    return people


def store_preferences(server, user_id: str, **values) -> None:
    with connect_database(server.database) as db:
        organization_id = db.execute("SELECT id FROM organization").fetchone()[0]
        db.execute("DELETE FROM mail_preference WHERE user_id = ?", (user_id,))
        columns = ", ".join(values)
        db.execute(f"INSERT INTO mail_preference (user_id, organization_id, {columns}, updated_at) VALUES "
                   f"(?, ?, {', '.join('?' * len(values))}, ?)",
                   (user_id, organization_id, *(int(value) for value in values.values()), iso()))


def sign_in(server, email: str) -> dict:
    """The headers of a browser signed in as `email` (session cookie and CSRF token)."""
    status, headers, body = server.request("POST", "/auth/login", {"Content-Type": "application/json"},
                                           json.dumps({"email": email, "password": PASSWORD}).encode())
    assert status == 200, body
    return {"Cookie": headers["set-cookie"].partition(";")[0], "X-CSRF-Token": json.loads(body)["csrfToken"]}


def as_person(server, headers: dict, method: str, body=None) -> tuple:
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    status, _, raw = server.request(method, f"{API}/me/notifications",
                                    {**headers, **({"Content-Type": "application/json"} if data else {})}, data)
    return status, json.loads(raw) if raw else None


def outbox(server) -> list:
    return dict_rows(server.database, "SELECT * FROM mail_outbox ORDER BY created_at")


def recipients(smtp, kind: str = "") -> list:
    return sorted(address for item in smtp.messages for address in item["to"]
                  if kind in str(item["message"]["Subject"]))


def stays(read, expected, seconds: float = 1.5):
    time.sleep(seconds)
    assert read() == expected


# --- the mails of events ---------------------------------------------------------------------------------------

def test_a_failed_post_is_mailed_once_to_each_admin_and_editor_whose_preference_is_on(server, smtp, refusing):
    team(server)
    channel = webhook_channel(server, refusing, "shop", path="/refuse")
    post_id = scheduled(server, channel, "<p>doomed</p>")
    assert settled(server, post_id)["state"] == "ERROR"
    smtp.wait_for(2)
    stays(lambda: recipients(smtp), ["admin@example.com", "editor@example.com"])
    message = smtp.messages_to("editor@example.com")[0]
    assert message["Subject"] == "A post on shop failed"
    assert message["From"] == "Rustiz <rustiz@social.example.com>"
    assert message["Message-ID"].endswith("@social.example.com>")
    text, html = bodies(message)
    link = f"{FRONTEND}/#/post/{post_id}"
    assert link in text and f'href="{link}"' in html
    assert "this receiver takes no posts" in text
    rows = outbox(server)
    assert len(rows) == 2 and all(row["sent_at"] and row["attempts"] == 1 for row in rows)


def test_a_channel_to_reconnect_is_mailed_once_however_many_posts_find_out(server, smtp):
    team(server)
    locked_out = RefusingReceiver(401)
    try:
        channel = webhook_channel(server, locked_out, "locked", path="/refuse")
        waiting_for_reconnect(server, scheduled(server, channel, "<p>one</p>"))
        waiting_for_reconnect(server, scheduled(server, channel, "<p>two</p>"))
    finally:
        locked_out.close()
    smtp.wait_for(2)
    stays(lambda: recipients(smtp), ["admin@example.com", "editor@example.com"])
    message = smtp.messages_to("admin@example.com")[0]
    assert message["Subject"] == "Reconnect the Webhook channel locked"
    text, html = bodies(message)
    assert f"{FRONTEND}/#/channels?channel={channel}" in text and f"{FRONTEND}/#/channels?channel={channel}" in html


def test_a_draft_waiting_for_review_is_mailed_to_reviewers_with_the_review_link(server, smtp, receiver):
    team(server)
    channel = webhook_channel(server, receiver, "blog")
    agent = new_key(server, "agent", "drafts")
    status, created = api(server, "POST", f"{API}/posts",
                          post_body(channel_post(channel, "<p>please check</p>"), type="draft", date=iso(3600)),
                          key=agent)
    assert status == 201, created
    smtp.wait_for(2)
    stays(lambda: recipients(smtp), ["admin@example.com", "editor@example.com"])
    text, html = bodies(smtp.messages_to("editor@example.com")[0])
    assert f"{FRONTEND}/#/review" in text and f'href="{FRONTEND}/#/review"' in html
    assert f"{FRONTEND}/#/post/{created[0]['postId']}" in text
    status, _ = api(server, "POST", f"{API}/posts", post_body(channel_post(channel, "<p>a person's draft</p>"),
                                                               type="draft", date=iso(3600)))
    assert status == 201
    stays(lambda: len(smtp.messages), 2, 1.0)  # (an admin's own draft waits for nobody)
    author = sign_in(server, "author@example.com")
    status, _, raw = server.request("POST", f"{API}/posts", {**author, "Content-Type": "application/json"}, json.dumps(
        post_body(channel_post(channel, "<p>an author's draft</p>"), type="draft", date=iso(3600))).encode())
    assert status == 201, raw
    (drafted,) = json.loads(raw)
    smtp.wait_for(4)
    status, _, raw = server.request("PUT", f"{API}/posts/{drafted['postId']}", {**author, "Content-Type":
                                    "application/json"}, json.dumps({"content": "<p>edited</p>"}).encode())
    assert status == 200, raw
    stays(lambda: len(smtp.messages), 4, 1.0)  # (edited again within the hour: not mailed again)
    assert recipients(smtp) == ["admin@example.com"] * 2 + ["editor@example.com"] * 2


def test_the_daily_digest_goes_out_once_with_yesterday_today_and_what_failed(start_server_with_fakes, smtp, receiver,
                                                                             refusing):
    env = {**QUICK_MAIL, "RUSTIZ_SMTP_URL": smtp.url, "RUSTIZ_MAIL_DIGEST_AT": "00:00"}
    server = start_server_with_fakes(env=env)
    reader = add_member(server, "reader@example.com", "viewer")
    good = webhook_channel(server, receiver, "blog")
    went_out = settled(server, scheduled(server, good, "<p>went out &amp; fine</p>"))
    failed = settled(server, scheduled(server, webhook_channel(server, refusing, "shop", path="/refuse"),
                                       "<p>doomed</p>"))
    yesterday = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1)).strftime(
        "%Y-%m-%dT12:00:00.000Z")
    with connect_database(server.database) as db:
        db.execute("UPDATE post SET publish_date = ? WHERE id = ?", (yesterday, went_out["id"]))
        db.execute("UPDATE post SET updated_at = ? WHERE id = ?", (yesterday, failed["id"]))
    stays(lambda: smtp.messages, [], 0.5)  # nobody asked for it yet
    store_preferences(server, reader, digest=True)
    (item,) = smtp.wait_for(1)
    assert item["to"] == ["reader@example.com"]
    text, html = bodies(item["message"])
    assert "Published yesterday (1)" in text and "went out & fine" in text
    assert went_out["releaseURL"] in text and f'href="{went_out["releaseURL"]}"' in html
    assert "Failed yesterday (1)" in text and f"{FRONTEND}/#/post/{failed['id']}" in text
    assert f"{FRONTEND}/#/calendar" in text and "Due today (" in text
    server.stop(signal.SIGTERM)
    start_server_with_fakes(env=env, data_dir=server.data_dir)
    stays(lambda: len(smtp.messages), 1)  # once a day, restart or not


# --- the outbox: durable, retried, never twice -------------------------------------------------------------------

def test_a_queued_mail_survives_kill_9_while_the_mail_server_is_down(start_server_with_fakes, smtp, refusing):
    env = {**QUICK_MAIL, "RUSTIZ_SMTP_URL": smtp.url}
    smtp.stop()  # down: the mail waits in the outbox
    server = start_server_with_fakes(env=env)
    add_member(server, "admin@example.com", "admin")
    post_id = scheduled(server, webhook_channel(server, refusing, "shop", path="/refuse"), "<p>doomed</p>")
    assert settled(server, post_id)["state"] == "ERROR"
    wait_for(lambda: outbox(server), lambda rows: rows and rows[0]["attempts"] >= 2)
    (row,) = outbox(server)
    assert row["sent_at"] is None and "cannot reach the SMTP server" in row["last_error"]
    server.stop(signal.SIGKILL)
    smtp.start()
    restarted = start_server_with_fakes(env=env, data_dir=server.data_dir)
    (item,) = smtp.wait_for(1)
    assert f"{FRONTEND}/#/post/{post_id}" in bodies(item["message"])[0]
    assert item["message"]["Message-ID"] == row["message_id"]
    stays(lambda: len(smtp.messages), 1)
    assert outbox(restarted)[0]["sent_at"]


def test_a_mail_server_that_refuses_for_a_while_gets_the_mail_once_afterwards(server, smtp, refusing):
    add_member(server, "admin@example.com", "admin")
    smtp.refuse_with("451 4.3.0 Mailbox busy, try again later")
    scheduled(server, webhook_channel(server, refusing, "shop", path="/refuse"), "<p>doomed</p>")
    wait_for(lambda: smtp.collector.refused, lambda refused: refused >= 3)
    assert smtp.messages == []
    assert "451" in outbox(server)[0]["last_error"]
    smtp.accept()
    smtp.wait_for(1)
    stays(lambda: len(smtp.messages), 1)
    (row,) = outbox(server)
    assert row["sent_at"] and row["attempts"] >= 4 and row["last_error"] is None


def test_a_permanent_refusal_gives_the_mail_up_without_retrying(server, smtp, refusing):
    add_member(server, "admin@example.com", "admin")
    smtp.refuse_with("550 5.1.1 No such mailbox")
    scheduled(server, webhook_channel(server, refusing, "shop", path="/refuse"), "<p>doomed</p>")
    wait_for(lambda: outbox(server), lambda rows: rows and rows[0]["gave_up_at"])
    stays(lambda: smtp.collector.refused, 1, 1.0)
    assert "550" in outbox(server)[0]["last_error"]


def test_several_processes_send_each_row_once(start_server_with_fakes, smtp):
    server = start_server_with_fakes(env={**QUICK_MAIL, "RUSTIZ_SMTP_URL": smtp.url}, args=("--workers", "3"))
    with connect_database(server.database) as db:  # (queued by another process: found by polling)
        for number in range(30):
            db.execute("INSERT INTO mail_outbox (id, kind, recipient, subject, text_body, html_body, dedupe_key, "
                       "message_id, next_attempt_at, created_at) VALUES (?, 'test', ?, 'hello', 'hi', '<p>hi</p>', ?, "
                       "?, ?, ?)", (f"row-{number}", f"person{number % 6}@example.com", f"test:{number}",
                                    f"<row-{number}@example.com>", time.time(), iso()))
    smtp.wait_for(30)
    stays(lambda: len(smtp.messages), 30)
    assert sorted(item["message"]["Message-ID"] for item in smtp.messages) == sorted(
        f"<row-{number}@example.com>" for number in range(30))
    assert len({row["lease_owner"] for row in outbox(server)}) == 1  # (all released: None)


# --- preferences --------------------------------------------------------------------------------------------------

def test_preferences_default_by_role_and_are_each_persons_own(server):
    team(server)
    expected = {"admin": True, "editor": True, "author": False, "viewer": False}
    for role, on in expected.items():
        status, preferences = as_person(server, sign_in(server, f"{role}@example.com"), "GET")
        assert status == 200, preferences
        assert preferences == {"failed": on, "reconnect": on, "review": on, "digest": False}
    editor = sign_in(server, "editor@example.com")
    status, preferences = as_person(server, editor, "PUT", {"failed": False, "digest": True})
    assert status == 200, preferences
    assert preferences == {"failed": False, "reconnect": True, "review": True, "digest": True}
    assert as_person(server, editor, "GET")[1] == preferences
    assert as_person(server, sign_in(server, "admin@example.com"), "GET")[1]["failed"] is True
    viewer = sign_in(server, "viewer@example.com")
    status, preferences = as_person(server, viewer, "PUT", {"digest": True})
    assert status == 200 and preferences["digest"] is True


def test_preferences_turned_off_are_respected(server, smtp, refusing):
    team(server)
    editor = sign_in(server, "editor@example.com")
    assert as_person(server, editor, "PUT", {"failed": False})[0] == 200
    channel = webhook_channel(server, refusing, "shop", path="/refuse")
    assert settled(server, scheduled(server, channel, "<p>doomed</p>"))["state"] == "ERROR"
    smtp.wait_for(1)
    stays(lambda: recipients(smtp), ["admin@example.com"])
    assert as_person(server, editor, "PUT", {"failed": True})[0] == 200
    assert settled(server, scheduled(server, channel, "<p>doomed again</p>"))["state"] == "ERROR"
    smtp.wait_for(3)
    stays(lambda: recipients(smtp), ["admin@example.com", "admin@example.com", "editor@example.com"])


@pytest.mark.parametrize("body, named", [
    ({"failed": "yes"}, "failed must be true or false"),
    ({"digest": 1}, "digest must be true or false"),
    ({"review": None}, "review must be true or false"),
    ({"sms": True}, "property sms should not exist"),
    ([True], "the body must be a JSON object"),
    ("on", "the body must be a JSON object"),
])
def test_preferences_refuse_what_is_not_one_of_four_booleans(server, body, named):
    add_member(server, "editor@example.com", "editor")
    editor = sign_in(server, "editor@example.com")
    status, refused = as_person(server, editor, "PUT", body)
    assert status == 400, refused
    assert any(named in message for message in refused["message"]), refused
    assert as_person(server, editor, "GET")[1]["failed"] is True  # nothing changed


def test_hostile_preference_bodies_get_a_4xx_never_a_5xx(server):
    add_member(server, "author@example.com", "author")
    author = sign_in(server, "author@example.com")
    status, refused = as_person(server, author, "PUT", {"failed": True})
    assert status == 400 and "only editors and admins" in refused["message"][0]
    assert as_person(server, author, "PUT", b'{"digest": tru')[0] == 400
    assert as_person(server, author, "PUT", json.dumps({"digest": True, "x" * 10000: 1}).encode())[0] == 413
    assert as_person(server, author, "PUT", b"\xff\xfe")[0] == 400
    assert as_person(server, author, "GET")[1] == {"failed": False, "reconnect": False, "review": False,
                                                   "digest": False}


def test_preferences_are_per_organization_for_a_person_in_two(server):
    add_member(server, "agency@example.com", "admin")
    made = run_cli(server.pyz, "org", "add", "Client B", env=server.env())
    assert made.returncode == 0, made.stderr
    client = api(server, "GET", f"{API}/organization", key=made.stdout.strip())[1]["id"]
    with connect_database(server.database) as db:
        db.execute("INSERT INTO membership (user_id, organization_id, role, created_at) VALUES (?, ?, 'author', ?)",
                   ("user-agency", client, iso()))
    person = sign_in(server, "agency@example.com")
    assert as_person(server, person, "PUT", {"digest": True, "failed": False})[0] == 200
    status, _, raw = server.request("POST", "/auth/switch", {**person, "Content-Type": "application/json"},
                                    json.dumps({"organization": client}).encode())
    assert status == 200, raw
    person["X-CSRF-Token"] = json.loads(raw)["csrfToken"]
    assert as_person(server, person, "GET")[1] == {"failed": False, "reconnect": False, "review": False,
                                                   "digest": False}  # (an author there)
    assert as_person(server, person, "PUT", {"review": True})[0] == 400
    assert as_person(server, person, "PUT", {"digest": True})[1]["digest"] is True
    with connect_database(server.database) as db:
        rows = db.execute("SELECT organization_id, failed, digest FROM mail_preference WHERE user_id = ?",
                          ("user-agency",)).fetchall()
    assert sorted(map(tuple, rows)) == sorted([(client, None, 1), (
        api(server, "GET", f"{API}/organization")[1]["id"], 0, 1)])


def test_an_api_key_has_no_preferences(server):
    for method, body in (("GET", None), ("PUT", {"digest": True})):
        status, refused = api(server, method, f"{API}/me/notifications", body)
        assert status in (400, 403), refused
        assert "person signed in to the web app" in json.dumps(refused)
    status, _ = api(server, "GET", f"{API}/me/notifications", key="not-a-key")
    assert status == 401


def test_a_bad_smtp_url_stops_serve_at_start_naming_the_setting(pyz, tmp_path):
    assert run_cli(pyz, "init", "--dir", str(tmp_path)).returncode == 0
    for url in ("http://mail.example.com", "smtp://user:secret@", "smtps://a@b@c:465", "smtp://host:99999"):
        result = run_cli(pyz, "serve", env={"RUSTIZ_CONFIG": str(tmp_path / "config.env"), "PORT": "0",
                                            "RUSTIZ_SMTP_URL": url})
        assert result.returncode == 2, result.stderr
        assert "RUSTIZ_SMTP_URL" in result.stderr and "secret" not in result.stderr
