"""A stand-in Nostr relay: a small RFC 6455 WebSocket server on a thread that speaks NIP-01.

It checks each event's id and BIP-340 signature (with rustiz's own verifier, itself proven against
the BIP's test vectors), stores what it accepts, answers ["OK", id, true|false, message] and serves
REQ subscriptions. Scripted trouble: `script` holds what to do with the next EVENTs ("refuse:<words>",
"drop" after storing, "silent", "ping-and-fragment"), `refuse_upgrade` answers HTTP 404 instead of 101.

Like the HTTP fakes it offers .url, .env, .credentials() and .published (the events it stored, in order).
"""
from __future__ import annotations

import base64
import hashlib
import json
import socket
import struct
import threading
import time

from fakes import Reconnect
from rustiz_features.publishers.nostr import nostr_event, nostr_event_is_valid

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
# A known key (NIP-19's example nsec), so tests can also sign events of their own with it.
SECRET_KEY_HEX = "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa"
NSEC = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5"  # the same key, as NIP-19 writes it
NPUB = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"  # its public key


class FakeNostrRelay:
    env: dict = {}

    post_settings = None  # a note needs no settings

    def __init__(self):
        self.events: dict = {}  # id -> event, everything stored
        self.published: list = []  # stored kind-1 events, in order
        self.deleted: list = []  # (issue 28) ids of the events a NIP-09 deletion request (kind 5) dropped, in order
        self.received: list = []  # every client message, decoded
        self.script: list = []  # what to do with the next EVENT messages
        self.refuse_upgrade = False
        self.pongs: list = []  # payloads of the pongs clients sent us
        self.connections = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"ws://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept_forever, daemon=True).start()

    def account(self) -> tuple:
        """(name, profile) of the channel credentials() connect: what this fake's account says."""
        return NPUB, NPUB

    def credentials(self, *other_relays: str) -> dict:
        return {"password": SECRET_KEY_HEX, "relays": [self.url, *other_relays]}

    def store(self, event: dict) -> None:
        with self.lock:
            self.events[event["id"]] = event

    def event_messages(self) -> list:
        return [message[1] for message in self.received if message[:1] == ["EVENT"]]

    def wait_for(self, condition, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; the relay got: {self.received}")
            time.sleep(0.02)

    def close(self) -> None:
        self.listener.close()

    # --- the WebSocket server side --------------------------------------------------------------

    def _accept_forever(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(30)
            try:
                if not self._handshake(connection):
                    return
                with self.lock:
                    self.connections += 1
                while True:
                    opcode, payload = self._read_frame(connection)
                    if opcode == 0x8:
                        self._send_frame(connection, 0x8, payload[:2])
                        return
                    if opcode == 0xA:
                        self.pongs.append(payload)
                    elif opcode == 0x1 and not self._on_message(connection, json.loads(payload)):
                        return
            except (OSError, ValueError, ConnectionError):
                return

    def _handshake(self, connection: socket.socket) -> bool:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = connection.recv(4096)
            if not chunk:
                return False
            head += chunk
        headers = {}
        for line in head.decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if self.refuse_upgrade:
            connection.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot here\n")
            return False
        assert headers["upgrade"].lower() == "websocket" and headers["sec-websocket-version"] == "13"
        accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + GUID).encode()).digest()).decode()
        connection.sendall(f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Accept: {accept}\r\n\r\n".encode())
        return True

    @staticmethod
    def _read_exactly(connection: socket.socket, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = connection.recv(count - len(data))
            if not chunk:
                raise ConnectionError("the client went away")
            data += chunk
        return data

    def _read_frame(self, connection: socket.socket) -> tuple:
        first, second = self._read_exactly(connection, 2)
        assert second & 0x80, "a client frame must be masked (RFC 6455 §5.1)"
        length = second & 0x7F
        if length == 126:
            length = struct.unpack(">H", self._read_exactly(connection, 2))[0]
        elif length == 127:
            length = struct.unpack(">Q", self._read_exactly(connection, 8))[0]
        mask = self._read_exactly(connection, 4)
        payload = bytes(byte ^ mask[index % 4] for index, byte in enumerate(self._read_exactly(connection, length)))
        return first & 0x0F, payload

    @staticmethod
    def _send_frame(connection: socket.socket, opcode: int, payload: bytes, final: bool = True) -> None:
        length = len(payload)
        header = bytes(((0x80 if final else 0) | opcode,))
        if length < 126:
            header += bytes((length,))
        elif length < 65536:
            header += bytes((126,)) + struct.pack(">H", length)
        else:
            header += bytes((127,)) + struct.pack(">Q", length)
        connection.sendall(header + payload)

    def _send(self, connection: socket.socket, message: list, fragmented: bool = False) -> None:
        data = json.dumps(message).encode()
        if not fragmented:
            self._send_frame(connection, 0x1, data)
            return
        # a ping between the fragments: control frames may come in the middle of a message
        self._send_frame(connection, 0x1, data[:5], final=False)
        self._send_frame(connection, 0x9, b"are you there")
        self._send_frame(connection, 0x0, data[5:12], final=False)
        self._send_frame(connection, 0x0, data[12:])

    # --- NIP-01 ---------------------------------------------------------------------------------------

    def _on_message(self, connection: socket.socket, message: list) -> bool:
        """Answer one client message; False ends the connection."""
        with self.lock:
            self.received.append(message)
        if message[0] == "REQ":
            subscription, filters = message[1], message[2:]
            for event in self._matching(filters):
                self._send(connection, ["EVENT", subscription, event])
            self._send(connection, ["EOSE", subscription])
        elif message[0] == "EVENT":
            return self._on_event(connection, message[1])
        return True

    def _on_event(self, connection: socket.socket, event: dict) -> bool:
        with self.lock:
            action = self.script.pop(0) if self.script else "accept"
        if action == "silent":
            time.sleep(30)
            return False
        if not nostr_event_is_valid(event):
            self._send(connection, ["OK", "", False, "invalid: Bad signature"])  # nostr-relay's empty id
            return True
        if action.startswith("refuse:"):
            self._send(connection, ["OK", event["id"], False, action[len("refuse:"):]])
            return True
        with self.lock:
            known = event["id"] in self.events
            if not known:
                self.events[event["id"]] = event
                if event["kind"] != 5:
                    self.published.append(event)
            if event["kind"] == 5:  # (issue 28) NIP-09: the author's own events named by "e" tags are dropped
                for tag in event["tags"]:
                    if tag[:1] == ["e"] and self.events.get(tag[1], {}).get("pubkey") == event["pubkey"]:
                        del self.events[tag[1]]
                        self.deleted.append(tag[1])
        if action == "drop":  # stored, but the answer never leaves
            connection.shutdown(socket.SHUT_RDWR)
            return False
        words = "duplicate: already have this event" if known else ""
        self._send(connection, ["OK", event["id"], True, words], fragmented=action == "ping-and-fragment")
        return True

    def _matching(self, filters: list) -> list:
        with self.lock:
            events = list(self.events.values())
        found = []
        for query in filters:
            chosen = [event for event in events
                      if all(event[field] in query[key] for key, field in
                             (("ids", "id"), ("authors", "pubkey"), ("kinds", "kind")) if key in query)]
            chosen.sort(key=lambda event: event["created_at"], reverse=True)
            found += chosen[:query.get("limit", len(chosen))]
        return found


def closed_port_url() -> str:
    """A ws:// address where nothing listens (connections are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"ws://127.0.0.1:{port}"


def profile_event(name: str, picture: str, created_at: int | None = None) -> dict:
    """A kind-0 profile of the fake's key, signed with rustiz's own signer."""
    content = json.dumps({"name": name.lower(), "display_name": name, "picture": picture, "nip05": "me@example.org"})
    return nostr_event(bytes.fromhex(SECRET_KEY_HEX), created_at or int(time.time()) - 60, 0, [], content)


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeNostrRelay


def credentials_at(url: str) -> dict:
    """Credentials that aim a channel at `url`."""
    return {"password": NSEC, "relays": [url.replace("http", "ws", 1)]}


OTHER_KEY = "11" * 32

RECONNECT = Reconnect(lambda fake, extras: fake.credentials(),
                      lambda fake: {**fake.credentials(), "relays": ["ws://127.0.0.1:9"]},
                      "none of the relays accepted a WebSocket connection",
                      lambda fake, extras: {**fake.credentials(), "password": OTHER_KEY})
