"""E-mail's settings and checks: RUSTIZ_SMTP_URL read (schemes, ports, percent-decoded user and password, refusals
that name the setting and hide the password), RUSTIZ_MAIL_FROM, nothing queued when mail is off, the message's
shape, and `rustiz doctor` against a real SMTP server (aiosmtpd): it greets, sends nothing, and fails clearly on a
server that is down."""
from __future__ import annotations

import pytest

import rustiz
from conftest import run_cli
from smtp_server import SmtpServer, free_port
from rustiz_features import mail


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
