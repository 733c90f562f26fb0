"""A WebSocket client (RFC 6455) for Nostr relays, on blocking sockets run in the HTTP client's threads.

wss:// needs the ssl module, which asyncio may not use in rustiz (see the note at the top of rustiz.py),
and one code path then serves ws:// and wss:// alike. A relay exchange is short (one message out, one or a
few in), so a thread per relay for a few seconds costs little. Connections go through the HTTP client's
address guard.
"""
from __future__ import annotations

import contextlib
import os
import socket
import time

from rustiz import MAX_HEAD_BYTES
from ..http_client import ConnectFailed, HttpClient, USER_AGENT, ascii_host, network_reason, parsed_url


_WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_WEBSOCKET_MESSAGE_BYTES = 8 * 1024 * 1024
_OPCODE_CONTINUATION, _OPCODE_TEXT, _OPCODE_BINARY = 0x0, 0x1, 0x2
_OPCODE_CLOSE, _OPCODE_PING, _OPCODE_PONG = 0x8, 0x9, 0xA


class WebSocketClosed(Exception):
    """The connection ended: a close frame, the peer went away, a protocol error or a timeout."""


def _websocket_mask(data: bytes, key: bytes) -> bytes:
    """`data` XOR the 4-byte `key` repeated (RFC 6455 §5.3), as one big-integer XOR rather than a byte loop."""
    repeated = (key * (len(data) // 4 + 1))[:len(data)]
    return (int.from_bytes(data, "little") ^ int.from_bytes(repeated, "little")).to_bytes(len(data), "little")


def _websocket_accept(key: str) -> str:
    """The Sec-WebSocket-Accept a server must answer to `key`: base64(SHA-1(key + GUID))."""
    import binascii
    try:
        from _sha1 import sha1  # CPython's built-in SHA-1: hashlib would load OpenSSL
    except ImportError:
        from hashlib import sha1
    return binascii.b2a_base64(sha1((key + _WEBSOCKET_GUID).encode()).digest(), newline=False).decode()


class WebSocketClient:
    """One client connection that exchanges text messages; pings are answered, fragments joined.

    `WebSocketClient(url, deadline, http)` connects (through `http`'s address guard) and upgrades, raising
    ConnectFailed or AddressRefused (nothing was sent); after that, every failure raises WebSocketClosed.
    Deadlines are time.monotonic() values."""

    def __init__(self, url: str, deadline: float, http: "HttpClient"):
        try:
            parts = parsed_url(url, ("ws", "wss"))
        except ValueError as problem:
            raise ConnectFailed(f"{url[:200]} {problem}") from None
        secure = parts.scheme.lower() == "wss"
        self._buffer = bytearray()
        self._sock = http.open_socket(ascii_host(parts.hostname), parts.port or (443 if secure else 80),
                                      max(0.01, deadline - time.monotonic()), secure)
        try:
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            self._upgrade(parts.netloc.rpartition("@")[2], target, deadline)
        except WebSocketClosed as error:
            self._sock.close()
            raise ConnectFailed(f"{parts.netloc} refused the WebSocket connection: {error}") from None

    def _upgrade(self, host: str, target: str, deadline: float) -> None:
        import binascii
        key = binascii.b2a_base64(os.urandom(16), newline=False).decode()
        self._write(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nUser-Agent: {USER_AGENT}\r\n\r\n"
                    .encode(), deadline)
        while b"\r\n\r\n" not in self._buffer:
            if len(self._buffer) > MAX_HEAD_BYTES:
                raise WebSocketClosed("its answer's header is too large")
            self._fill(deadline)
        head, _, rest = bytes(self._buffer).partition(b"\r\n\r\n")
        self._buffer = bytearray(rest)  # a server may send its first message right behind the header
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
        status = status_line.split(" ")[1:2]
        if status != ["101"]:  # the status code only: the rest of the line is whatever server answered
            shown = f"HTTP {status[0]}" if status and status[0].isdigit() and len(status[0]) == 3 else "something"
            raise WebSocketClosed(f"it answered {shown} instead of 101 Switching Protocols")
        connection_tokens = [token.strip().lower() for token in headers.get("connection", "").split(",")]
        if headers.get("upgrade", "").lower() != "websocket" or "upgrade" not in connection_tokens:
            raise WebSocketClosed("its 101 answer lacks 'Upgrade: websocket' and 'Connection: Upgrade'")
        if headers.get("sec-websocket-accept") != _websocket_accept(key):
            raise WebSocketClosed("its Sec-WebSocket-Accept does not match our key (a proxy in the way?)")

    def send_text(self, text: str, deadline: float) -> None:
        self._send_frame(_OPCODE_TEXT, text.encode(), deadline)

    def receive_text(self, deadline: float) -> str:
        """The next whole message (text, or binary read as UTF-8); control frames are handled on the way."""
        fragments: list = []
        size = 0
        while True:
            opcode, final, payload = self._read_frame(deadline)
            if opcode == _OPCODE_PING:
                self._send_frame(_OPCODE_PONG, payload, deadline)
            elif opcode == _OPCODE_CLOSE:
                code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
                reason = payload[2:].decode("utf-8", "replace")
                with contextlib.suppress(OSError, WebSocketClosed):
                    self._send_frame(_OPCODE_CLOSE, payload[:2], deadline)
                raise WebSocketClosed(f"it closed the connection (code {code}{': ' + reason if reason else ''})")
            elif opcode in (_OPCODE_TEXT, _OPCODE_BINARY, _OPCODE_CONTINUATION):
                if (opcode == _OPCODE_CONTINUATION) != bool(fragments):
                    raise WebSocketClosed("protocol error: a fragment out of sequence")
                size += len(payload)
                if size > MAX_WEBSOCKET_MESSAGE_BYTES:
                    raise WebSocketClosed(f"a message larger than {MAX_WEBSOCKET_MESSAGE_BYTES // 2**20} MiB")
                fragments.append(payload)
                if final:
                    return b"".join(fragments).decode("utf-8", "replace")
            elif opcode != _OPCODE_PONG:
                raise WebSocketClosed(f"protocol error: unknown opcode {opcode}")

    def close(self) -> None:
        """A polite close frame (not waiting for the echo), then the socket goes."""
        with contextlib.suppress(OSError, WebSocketClosed):
            self._send_frame(_OPCODE_CLOSE, (1000).to_bytes(2, "big"), time.monotonic() + 1.0)
        with contextlib.suppress(OSError):
            self._sock.close()

    def _send_frame(self, opcode: int, payload: bytes, deadline: float) -> None:
        length = len(payload)
        if length < 126:
            header = bytes((0x80 | opcode, 0x80 | length))
        elif length < 65536:
            header = bytes((0x80 | opcode, 0x80 | 126)) + length.to_bytes(2, "big")
        else:
            header = bytes((0x80 | opcode, 0x80 | 127)) + length.to_bytes(8, "big")
        mask = os.urandom(4)  # clients must mask every frame (RFC 6455 §5.1)
        self._write(header + mask + _websocket_mask(payload, mask), deadline)

    def _read_frame(self, deadline: float) -> tuple:
        """(opcode, final, payload) of the next frame."""
        first, second = self._read_exactly(2, deadline)
        if first & 0x70:
            raise WebSocketClosed("protocol error: reserved bits set (an extension was never agreed)")
        length = second & 0x7F
        if length == 126:
            length = int.from_bytes(self._read_exactly(2, deadline), "big")
        elif length == 127:
            length = int.from_bytes(self._read_exactly(8, deadline), "big")
        if length > MAX_WEBSOCKET_MESSAGE_BYTES:
            raise WebSocketClosed(f"a frame larger than {MAX_WEBSOCKET_MESSAGE_BYTES // 2**20} MiB")
        mask = self._read_exactly(4, deadline) if second & 0x80 else b""  # servers should not mask; tolerated
        payload = self._read_exactly(length, deadline)
        return first & 0x0F, bool(first & 0x80), _websocket_mask(payload, mask) if mask else payload

    def _read_exactly(self, count: int, deadline: float) -> bytes:
        while len(self._buffer) < count:
            self._fill(deadline)
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WebSocketClosed("no answer in the time allowed")
        try:
            self._sock.settimeout(remaining)
            chunk = self._sock.recv(65536)
        except OSError as error:
            raise WebSocketClosed("no answer in the time allowed" if isinstance(error, socket.timeout)
                                  else network_reason(error)) from None
        if not chunk:
            raise WebSocketClosed("it closed the connection without a word")
        self._buffer += chunk

    def _write(self, data: bytes, deadline: float) -> None:
        try:
            self._sock.settimeout(max(0.01, deadline - time.monotonic()))
            self._sock.sendall(data)
        except OSError as error:
            raise WebSocketClosed(f"sending failed: {network_reason(error)}") from None
