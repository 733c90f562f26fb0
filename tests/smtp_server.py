"""A real SMTP server for the mail tests: PyPI's aiosmtpd on 127.0.0.1 at a free port, in this process.

It keeps every message it accepted (`messages`, parsed), can refuse for a while (`refuse_with("451 ...")`: every
RCPT answered so until `accept()`), and can be stopped and started again on the same port (a server that is down).
With `tls` ("starttls" or "implicit") it speaks TLS with a certificate for 127.0.0.1 made by openssl
(`certificate`: the file a client trusts, as SSL_CERT_FILE), and with `login` (user, password) it asks for one.
"""
from __future__ import annotations

import email
import email.policy
import socket
import ssl
import subprocess
import threading
import time
from email.message import EmailMessage
from typing import Callable, Optional
from urllib.parse import quote

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Collector:
    """aiosmtpd's handler: accepts (or refuses) and keeps what was accepted."""

    def __init__(self) -> None:
        self.messages: list = []
        self.refusal: Optional[str] = None
        self.refused = 0
        self.lock = threading.Lock()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options) -> str:
        if self.refusal:
            self.refused += 1
            return self.refusal
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope) -> str:
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.lock:
            self.messages.append({"from": envelope.mail_from, "to": list(envelope.rcpt_tos), "message": parsed})
        return "250 Message accepted for delivery"


def self_signed_certificate(folder) -> tuple:
    """(certificate file, key file) for 127.0.0.1, valid a day."""
    certificate, key = str(folder / "smtp-cert.pem"), str(folder / "smtp-key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return certificate, key


class SmtpServer:
    """`url` is what RUSTIZ_SMTP_URL names (smtp://127.0.0.1:<port>, or with its login and smtps:// as set up)."""

    def __init__(self, port: int = 0, *, tls: str = "", login: tuple = (), folder=None) -> None:
        self.port = port or free_port()
        self.collector = Collector()
        self.controller: Optional[Controller] = None
        self.tls, self.login = tls, login
        self.logins: list = []  # (user, whether it was accepted)
        self.certificate = ""
        self.context: Optional[ssl.SSLContext] = None
        if tls:
            self.certificate, key = self_signed_certificate(folder)
            self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self.context.load_cert_chain(self.certificate, key)
        self.start()

    @property
    def url(self) -> str:
        who = f"{quote(self.login[0], safe='')}:{quote(self.login[1], safe='')}@" if self.login else ""
        return f"{'smtps' if self.tls == 'implicit' else 'smtp'}://{who}127.0.0.1:{self.port}"

    def authenticate(self, server, session, envelope, mechanism, auth_data) -> AuthResult:
        user, password = auth_data.login.decode(), auth_data.password.decode()
        accepted = (user, password) == tuple(self.login)
        self.logins.append((user, accepted))
        return AuthResult(success=accepted, handled=False)  # (aiosmtpd answers 235 or 535 itself)

    def start(self) -> None:
        options: dict = {}
        if self.tls == "starttls":
            options.update(tls_context=self.context, require_starttls=True)
        elif self.tls == "implicit":
            options.update(ssl_context=self.context, server_hostname="127.0.0.1")
        if self.login:
            # (implicit TLS is TLS from the first byte, which aiosmtpd's auth_require_tls does not count)
            options.update(authenticator=self.authenticate, auth_require_tls=self.tls != "implicit")
        self.controller = Controller(self.collector, hostname="127.0.0.1", port=self.port, **options)
        self.controller.start()

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    def refuse_with(self, reply: str = "451 4.3.0 Try again later") -> None:
        self.collector.refusal = reply

    def accept(self) -> None:
        self.collector.refusal = None

    @property
    def messages(self) -> list:
        """[{from, to, message (an email.message.EmailMessage)}], in the order accepted."""
        with self.collector.lock:
            return list(self.collector.messages)

    def messages_to(self, address: str, kind: Callable[[EmailMessage], bool] = lambda message: True) -> list:
        return [item["message"] for item in self.messages if address in item["to"] and kind(item["message"])]

    def wait_for(self, count: int, timeout: float = 20.0, matching: Callable[[dict], bool] = lambda item: True) -> list:
        """The accepted messages that match, once there are at least `count` (AssertionError after `timeout`)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [item for item in self.messages if matching(item)]
            if len(found) >= count or time.monotonic() > deadline:
                assert len(found) >= count, f"{len(found)} of {count} mails arrived: {[i['to'] for i in found]}"
                return found
            time.sleep(0.05)


def bodies(message: EmailMessage) -> tuple:
    """(plain text, HTML) of a message rustiz sent."""
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    return text, html
