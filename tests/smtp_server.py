"""A real SMTP server for the mail tests: PyPI's aiosmtpd on 127.0.0.1 at a free port, in this process.

It keeps every message it accepted (`messages`, parsed), can refuse for a while (`refuse_with("451 ...")`: every
RCPT answered so until `accept()`), and can be stopped and started again on the same port (a server that is down).
"""
from __future__ import annotations

import email
import email.policy
import socket
import threading
import time
from email.message import EmailMessage
from typing import Callable, Optional

from aiosmtpd.controller import Controller


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


class SmtpServer:
    """`url` is what RUSTIZ_SMTP_URL names (smtp://127.0.0.1:<port>, no login)."""

    def __init__(self, port: int = 0) -> None:
        self.port = port or free_port()
        self.collector = Collector()
        self.controller: Optional[Controller] = None
        self.start()

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.controller = Controller(self.collector, hostname="127.0.0.1", port=self.port)
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
