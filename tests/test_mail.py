"""E-mail's settings and checks: RUSTIZ_SMTP_URL read (schemes, ports, percent-decoded user and password, refusals
that name the setting and hide the password), RUSTIZ_MAIL_FROM, nothing queued when mail is off, the message's
shape, the interface (invites and resets queued once and sent with their links, notify_team by role and preference),
STARTTLS and smtps:// with a login and the certificate checked, the daily digest in each organization's own day,
and `rustiz doctor` against a real SMTP server (aiosmtpd): it greets, sends nothing, and fails clearly on a server
that is down."""
from __future__ import annotations

import time

import pytest

import rustiz
from conftest import run_cli
from smtp_server import SmtpServer, bodies, free_port
from rustiz_features import mail
from rustiz_features.recurrence import zone_named


def config(**values) -> rustiz.Config:
    return rustiz.config_from_values("/tmp/rustiz-mail-test/config.env", {"RUSTIZ_API_KEY": "k", **values}, {})


@pytest.mark.parametrize("url, expected", [
    ("smtp://user:pass@mail.example.com:587", (False, "mail.example.com", 587, "user", "pass")),
    ("smtps://user:pass@mail.example.com", (True, "mail.example.com", 465, "user", "pass")),
    ("smtp://relay.internal:25", (False, "relay.internal", 25, "", "")),
    ("smtp://relay.internal", (False, "relay.internal", 25, "", "")),
    ("smtp://me%40example.com:p%40ss%3Aw%2Frd@mail.example.com:2525/",
     (False, "mail.example.com", 2525, "me@example.com", "p@ss:w/rd")),
    ("smtp://[::1]:2525", (False, "::1", 2525, "", "")),
])
def test_smtp_urls_are_read_with_their_user_and_password_percent_decoded(url, expected):
    assert tuple(config(RUSTIZ_SMTP_URL=url).smtp) == expected


@pytest.mark.parametrize("url", ["http://mail.example.com", "smtp://", "smtp://user:secret@", "smtp://host:0",
                                 "smtp://host:70000", "smtp://:secret@host", "smtp://host/inbox", "smtp://a b@host",
                                 "smtp://host?tls=no", "mailto:me@example.com", "smtp://user:secret@host\nX: y"])
def test_a_bad_smtp_url_is_refused_naming_the_setting_never_the_password(url):
    with pytest.raises(rustiz.UserError) as refused:
        config(RUSTIZ_SMTP_URL=url)
    assert "RUSTIZ_SMTP_URL" in str(refused.value) and "secret" not in str(refused.value)


def test_mail_from_defaults_to_the_frontend_host_and_refuses_what_is_no_address():
    assert config(FRONTEND_URL="https://social.example.com:8443").mail_from == "rustiz@social.example.com"
    assert config().mail_from == "rustiz@localhost"
    assert config(RUSTIZ_MAIL_FROM="Team <team@example.com>").mail_from == "Team <team@example.com>"
    for bad in ("nobody", "a@b\nBcc: x@y", "<>", "two@a.com, three@b.com"):
        with pytest.raises(rustiz.UserError, match="RUSTIZ_MAIL_FROM"):
            config(RUSTIZ_MAIL_FROM=bad)


def test_nothing_is_queued_when_mail_is_off():
    off = config()
    assert not mail.mail_configured(off)
    assert mail.queue_mail(None, off, to="a@example.com", subject="s", text="t", html="h", kind="test",
                           dedupe_key="k") is False
    assert mail.queue_invite(None, off, to="a@example.com", invite_url="https://x/#/invite?token=t",
                             organization_name="Org", role="editor", inviter="Ann") is False
    assert mail.queue_password_reset(None, off, to="a@example.com", reset_url="https://x/#/reset?token=t") is False
    assert mail.notify_team(None, off, "org", "failed", "s", "t", "h", "https://x", "k") == 0


def test_a_message_has_both_alternatives_its_own_id_and_one_line_subject():
    on = config(RUSTIZ_SMTP_URL="smtp://localhost", RUSTIZ_MAIL_FROM="Rustiz <r@example.com>")
    row = {"recipient": "a@example.com", "subject": "Hello", "text_body": "Open https://x/#/post/1\n",
           "html_body": "<p>Open <a href=\"https://x/#/post/1\">it</a></p>", "message_id": "<m1@example.com>",
           "created_at": "2026-01-02T03:04:05.000Z"}
    message = mail.build_message(on, row)
    assert message["Message-ID"] == "<m1@example.com>" and message["Date"] == "Fri, 02 Jan 2026 03:04:05 -0000"
    assert message.get_body(("plain",)).get_content() == row["text_body"]
    assert "https://x/#/post/1" in message.get_body(("html",)).get_content()
    assert mail.sender_domain(on) == "example.com" and mail.envelope_sender(on) == "r@example.com"
    accented = mail.build_message(on, {**row, "subject": "Rejoignez Café Crème sur rustiz"}).as_bytes()
    assert b"=?utf-8?q?Caf=C3=A9_Cr=C3=A8me?=" in accented
    assert config(RUSTIZ_SMTP_URL="smtp://u:p@[::1]:2525").smtp.redacted() == "smtp://u:***@[::1]:2525"


def test_an_invite_mail_holds_the_invite_url_exactly():
    text = []
    on = config(RUSTIZ_SMTP_URL="smtp://localhost")
    original = mail.queue_mail
    mail.queue_mail = lambda store, config, **fields: text.append(fields) or True
    try:
        url = "https://social.example.com/#/invite?token=abc_DEF-123"
        assert mail.queue_invite(None, on, to="new@example.com", invite_url=url, organization_name="Acme",
                                 role="editor", inviter="Ann")
    finally:
        mail.queue_mail = original
    (fields,) = text
    assert url in fields["text"] and f'href="{url}"' in fields["html"] and "an editor" in fields["text"]


@pytest.fixture
def smtp():
    server = SmtpServer()
    yield server
    server.stop()


def doctor_lines(pyz, tmp_path, url: str) -> tuple:
    if not (tmp_path / "config.env").exists():
        assert run_cli(pyz, "init", "--dir", str(tmp_path)).returncode == 0
    result = run_cli(pyz, "doctor", env={"RUSTIZ_CONFIG": str(tmp_path / "config.env"), "RUSTIZ_SMTP_URL": url},
                     timeout=90)
    return result, [line for line in result.stdout.splitlines() if " mail: " in line]


def test_doctor_greets_the_smtp_server_and_sends_nothing(pyz, tmp_path, smtp):
    _, (line,) = doctor_lines(pyz, tmp_path, smtp.url)
    assert line.startswith("ok   mail: smtp://127.0.0.1:") and "answered EHLO" in line
    assert smtp.messages == []


def test_doctor_fails_clearly_when_the_smtp_server_is_down(pyz, tmp_path):
    result, (line,) = doctor_lines(pyz, tmp_path, f"smtp://someone:secret@127.0.0.1:{free_port()}")
    assert line.startswith("FAIL mail: smtp://someone:***@127.0.0.1:") and "cannot reach the SMTP server" in line
    assert "secret" not in result.stdout and result.returncode == 1


def test_invites_and_resets_are_queued_once_and_arrive_with_their_links(tmp_path, smtp):
    from rustiz_features.storage import mail as mail_store
    store = rustiz.Store(str(tmp_path / "rustiz.db"))
    on = config(RUSTIZ_SMTP_URL=smtp.url, RUSTIZ_MAIL_FROM="Rustiz <rustiz@example.com>")
    invite_url = "https://social.example.com/#/invite?token=Tok-123_abc"
    reset_url = "https://social.example.com/#/reset?token=Res-456_def"
    for expected in (True, False):  # (the same invite twice: one mail)
        assert mail.queue_invite(store, on, to="new@example.com", invite_url=invite_url, organization_name="Acme",
                                 role="admin", inviter="Ann") is expected
        assert mail.queue_password_reset(store, on, to="old@example.com", reset_url=reset_url) is expected
    assert mail.queue_mail(store, on, to="not an address", subject="s", text="t", html="h", kind="x",
                           dedupe_key="x") is False
    for message_id in mail_store.due_messages(store, 2e9, 10):
        row = mail_store.claim_message(store, message_id, "test:1", 2e9 + 300, 2e9)
        mail.send_now(on, row)
        mail_store.record_sent(store, message_id)
    assert mail_store.due_messages(store, 2e9, 10) == []
    kept = store.read("SELECT dedupe_key, text_body, html_body FROM mail_outbox").fetchall()
    assert not any("Tok-123" in column or "Res-456" in column for row in kept for column in row)  # (no token kept)
    invite, reset = sorted(smtp.wait_for(2), key=lambda item: item["to"])
    assert invite["to"] == ["new@example.com"] and invite["from"] == "rustiz@example.com"
    assert invite["message"]["Subject"] == "Join Acme on rustiz"
    assert invite_url in bodies(invite["message"])[0] and f'href="{invite_url}"' in bodies(invite["message"])[1]
    assert "an admin" in bodies(invite["message"])[0]
    assert reset_url in bodies(reset["message"])[0] and reset["message"]["Subject"] == "Reset your rustiz password"
    store.close()


def test_notify_team_counts_the_admins_and_editors_whose_preference_is_on(tmp_path):
    store = rustiz.Store(str(tmp_path / "rustiz.db"))
    on = config(RUSTIZ_SMTP_URL="smtp://127.0.0.1:1")
    organization = store.create_organization("Acme", "0" * 64)
    with store.writing() as db:
        for role in ("admin", "editor", "author", "viewer"):
            db.execute("INSERT INTO web_user (id, organization_id, email, password_hash, created_at) VALUES "
                       "(?, ?, ?, 'x', '2026-01-01T00:00:00.000Z')", (role, organization, f"{role}@example.com"))
            db.execute("INSERT INTO membership (user_id, organization_id, role, created_at) VALUES "
                       "(?, ?, ?, '2026-01-01T00:00:00.000Z')", (role, organization, role))
    assert mail.notify_team(store, on, organization, "review", "s", "t", "<p>h</p>", "https://x/#/review", "k") == 2
    assert mail.notify_team(store, on, organization, "review", "s", "t", "<p>h</p>", "https://x/#/review", "k") == 0
    assert mail.notify_team(store, on, organization, "failed", "s", "t", "<p>h</p>", "", "k2") == 2
    with pytest.raises(ValueError):
        mail.notify_team(store, on, organization, "digest; DROP TABLE post", "s", "t", "h", "", "k3")
    store.close()


# --- TLS and login, against aiosmtpd with a certificate of its own ------------------------------------------------

LOGIN = ("me@example.com", "p@ss:w/rd")


@pytest.fixture(params=["starttls", "implicit"])
def tls_smtp(request, tmp_path):
    server = SmtpServer(tls=request.param, login=LOGIN, folder=tmp_path)
    yield server
    server.stop()


def one_row(store, on) -> dict:
    from rustiz_features.storage import mail as mail_store
    assert mail.queue_password_reset(store, on, to="old@example.com", reset_url="https://x/#/reset?token=t")
    (message_id,) = mail_store.due_messages(store, 2e9, 10)
    return mail_store.claim_message(store, message_id, "test:1", 2e9 + 300, 2e9)


def test_starttls_and_smtps_log_in_and_send_with_the_certificate_checked(tmp_path, tls_smtp, monkeypatch):
    store = rustiz.Store(str(tmp_path / "rustiz.db"))
    on = config(RUSTIZ_SMTP_URL=tls_smtp.url)
    assert on.smtp.tls is (tls_smtp.tls == "implicit") and on.smtp.password == LOGIN[1]
    row = one_row(store, on)
    with pytest.raises(mail.MailFailure, match="certificate verify failed"):  # (its own certificate, not trusted yet)
        mail.send_now(on, row)
    monkeypatch.setenv("SSL_CERT_FILE", tls_smtp.certificate)
    mail.send_now(on, row)
    assert [item["to"] for item in tls_smtp.wait_for(1)] == [["old@example.com"]]
    assert tls_smtp.logins == [(LOGIN[0], True)]
    wrong = config(RUSTIZ_SMTP_URL=tls_smtp.url.replace("p%40ss", "nope"))
    with pytest.raises(mail.MailFailure, match="refused the login") as refused:
        mail.send_now(wrong, row)
    assert not refused.value.permanent and "nope" not in str(refused.value)
    store.close()


def test_a_password_is_never_sent_to_a_server_without_starttls(tmp_path, smtp):
    on = config(RUSTIZ_SMTP_URL=smtp.url.replace("smtp://", "smtp://me:secret@"))
    with pytest.raises(mail.MailFailure, match="offers no STARTTLS"):
        mail.open_smtp(on)


def test_doctor_logs_in_over_starttls_and_says_so(pyz, tmp_path):
    server = SmtpServer(tls="starttls", login=LOGIN, folder=tmp_path)
    try:
        assert run_cli(pyz, "init", "--dir", str(tmp_path / "data")).returncode == 0
        env = {"RUSTIZ_CONFIG": str(tmp_path / "data" / "config.env"), "RUSTIZ_SMTP_URL": server.url,
               "SSL_CERT_FILE": server.certificate}
        result = run_cli(pyz, "doctor", env=env, timeout=90)
        (line,) = [line for line in result.stdout.splitlines() if " mail: " in line]
        assert line.startswith("ok   mail: smtp://me%40example.com:***@127.0.0.1:") and "took the login" in line
        assert server.messages == [] and LOGIN[1] not in result.stdout
    finally:
        server.stop()


# --- the daily digest, in each organization's own day -------------------------------------------------------------

def zone_at_local_hour(now: float, hour: int) -> str:
    """An Etc/GMT zone where it is `hour` o'clock at `now` (offsets -12..+14 cover every hour)."""
    offset = (hour - time.gmtime(now).tm_hour) % 24
    offset = offset - 24 if offset > 14 else offset
    return "Etc/GMT" if offset == 0 else f"Etc/GMT{'-' if offset > 0 else '+'}{abs(offset)}"


def test_the_digest_follows_each_organizations_clock_and_local_yesterday(tmp_path):
    import datetime
    from rustiz_features import digest
    from rustiz_features.storage import mail as mail_store
    store = rustiz.Store(str(tmp_path / "rustiz.db"))
    on = config(RUSTIZ_SMTP_URL="smtp://127.0.0.1:1", FRONTEND_URL="https://social.example.com")
    now = time.time()
    made = {}
    for name, hour in (("Morning", 6), ("Evening", 18)):  # the digest at 12:00: due in Evening only
        zone = zone_at_local_hour(now, hour)
        organization = store.create_organization(name, name * 8)
        local = datetime.datetime.fromtimestamp(now, zone_named(zone))
        midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
        with store.writing() as db:
            db.execute("UPDATE organization SET timezone = ? WHERE id = ?", (zone, organization))
            db.execute("INSERT INTO web_user (id, organization_id, email, password_hash, created_at) VALUES "
                       "(?, ?, ?, 'x', '2026-01-01T00:00:00.000Z')", (name, organization, f"{name}@example.com"))
            db.execute("INSERT INTO membership (user_id, organization_id, role, created_at) VALUES "
                       "(?, ?, 'viewer', '2026-01-01T00:00:00.000Z')", (name, organization))
            db.execute("INSERT INTO integration (id, internal_id, organization_id, name, provider_identifier, "
                       "created_at, updated_at) VALUES (?, 'i', ?, 'Blog', 'webhook', '2026-01-01T00:00:00.000Z', "
                       "'2026-01-01T00:00:00.000Z')", (f"channel-{name}", organization))
            for post, moment in (("late-yesterday", midnight - datetime.timedelta(minutes=30)),
                                 ("early-today", midnight + datetime.timedelta(minutes=30)),
                                 ("two-days-ago", midnight - datetime.timedelta(hours=25))):
                db.execute("INSERT INTO post (id, state, publish_date, organization_id, integration_id, content, "
                           "post_group, release_url, created_at, updated_at) VALUES (?, 'PUBLISHED', ?, ?, ?, ?, ?, "
                           "?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
                           (f"{post}-{name}", rustiz.iso_ms(moment.astimezone(datetime.timezone.utc)), organization,
                            f"channel-{name}", f"<p>{post}</p>", f"group-{post}-{name}",
                            f"https://blog.example.com/{post}"))
        mail_store.save_preferences(store, name, organization, {"digest": True})
        made[name] = (organization, local.date().isoformat())
    assert digest.queue_due_digests(on, store, datetime.time(12, 0), now) == 1
    assert digest.queue_due_digests(on, store, datetime.time(12, 0), now + 30) == 0  # (once a day)
    (row,) = store.read("SELECT recipient, subject, text_body, dedupe_key FROM mail_outbox").fetchall()
    organization, day = made["Evening"]
    assert row[0] == "Evening@example.com" and row[1] == f"rustiz digest for Evening, {day}"
    assert row[3] == f"digest:{organization}:Evening:{day}"
    assert "Published yesterday (1)" in row[2] and "https://blog.example.com/late-yesterday" in row[2]
    assert "early-today" not in row[2] and "two-days-ago" not in row[2]
    store.close()

