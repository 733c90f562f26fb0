"""Nostr: signed events (NIP-01) sent to each of the channel's relays, one exchange per relay in a thread;
replies as threads (NIP-10); the account's profile read from the relays.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from typing import Any, Callable, NamedTuple, Optional, Union

from rustiz import parse_iso_instant, sha256
from ..bech32 import bech32_encode
from ..catalogue import CHANNEL_NAME_MAX_LENGTH, ChannelAccount, nostr_private_key_hex
from ..http_client import AddressRefused, ConnectFailed, HttpClient, Timeouts
from .base import (
    AddressNotAllowed, Channel, Connected, OutcomeUnknown, OutgoingPost, Provider, PublishError, Rejected, Release,
    Retryable,
)
from .secp256k1 import SECP256K1_N, schnorr_public_key, schnorr_sign, schnorr_verify
from .websocket import WebSocketClient, WebSocketClosed


def nostr_event(secret_key: bytes, created_at: int, kind: int, tags: list, content: str) -> dict:
    """A signed NIP-01 event: id = sha256 of [0, pubkey, created_at, kind, tags, content] as compact JSON."""
    public_key = schnorr_public_key(secret_key).hex()
    serialized = json.dumps([0, public_key, created_at, kind, tags, content], separators=(",", ":"),
                            ensure_ascii=False)
    event_id = sha256(serialized.encode()).digest()
    return {"id": event_id.hex(), "pubkey": public_key, "created_at": created_at, "kind": kind, "tags": tags,
            "content": content, "sig": schnorr_sign(event_id, secret_key, os.urandom(32)).hex()}


def nostr_event_is_valid(event: Any) -> bool:
    """Whether an event received from a relay is well formed, its id right and its signature valid."""
    try:
        serialized = json.dumps([0, event["pubkey"], event["created_at"], event["kind"], event["tags"],
                                 event["content"]], separators=(",", ":"), ensure_ascii=False)
        event_id = sha256(serialized.encode()).digest()
        return (event_id.hex() == event["id"]
                and schnorr_verify(event_id, bytes.fromhex(event["pubkey"]), bytes.fromhex(event["sig"])))
    except (KeyError, TypeError, ValueError):
        return False




class RelayAnswer(NamedTuple):
    relay: str
    state: str  # "accepted", "refused", "unanswered" (sent, no verdict), "unreachable" (nothing sent), "connected",
    # or "blocked" (the address guard refused the relay's address: nothing sent, and a retry would not help)
    message: str  # the relay's own words, or what went wrong
    events: tuple = ()  # what a query returned


def _relay_message(text: str) -> list:
    """A relay's message as a JSON array with a string label first (["OK", ...]), or [] when it is not one."""
    try:
        message = json.loads(text)
    except ValueError:
        return []
    return message if isinstance(message, list) and message and isinstance(message[0], str) else []


def _relay_connection(http: "HttpClient", relay: str, timeouts: Timeouts) -> Union[WebSocketClient, RelayAnswer]:
    """A connection to the relay, or the RelayAnswer that says why there is none."""
    try:
        return WebSocketClient(relay, time.monotonic() + timeouts.connect, http)
    except AddressRefused as error:
        return RelayAnswer(relay, "blocked", str(error))
    except ConnectFailed as error:
        return RelayAnswer(relay, "unreachable", str(error))


def publish_to_relay(http: "HttpClient", relay: str, event: dict, timeouts: Timeouts) -> RelayAnswer:
    """Send ["EVENT", event] and wait for the relay's ["OK", id, accepted, message] (NIP-01, NIP-20)."""
    connection = _relay_connection(http, relay, timeouts)
    if isinstance(connection, RelayAnswer):
        return connection
    deadline = time.monotonic() + timeouts.read
    notices: list = []
    try:
        connection.send_text(json.dumps(["EVENT", event], ensure_ascii=False, separators=(",", ":")), deadline)
        while True:
            message = _relay_message(connection.receive_text(deadline))
            # nostr-relay answers a refused event with an empty id; one event per connection keeps it unambiguous
            if message[:1] == ["OK"] and len(message) >= 3 and message[1] in (event["id"], ""):
                words = str(message[3]) if len(message) > 3 else ""
                accepted = message[2] is True or words.startswith("duplicate:")  # already stored counts
                return RelayAnswer(relay, "accepted" if accepted else "refused", words)
            if message[:1] == ["NOTICE"] and len(message) > 1:
                notices.append(str(message[1])[:300])
    except WebSocketClosed as error:
        said = f" (it said: {'; '.join(notices)})" if notices else ""
        return RelayAnswer(relay, "unanswered", f"{error}{said}")
    finally:
        connection.close()


def query_relay(http: "HttpClient", relay: str, query: dict, timeouts: Timeouts) -> RelayAnswer:
    """The events a relay holds for one NIP-01 filter, read until EOSE or the time allowed runs out."""
    connection = _relay_connection(http, relay, timeouts)
    if isinstance(connection, RelayAnswer):
        return connection
    deadline = time.monotonic() + timeouts.read
    subscription = "rustiz-" + os.urandom(4).hex()
    events: list = []
    try:
        connection.send_text(json.dumps(["REQ", subscription, query]), deadline)
        while True:
            message = _relay_message(connection.receive_text(deadline))
            if message[:2] == ["EVENT", subscription] and len(message) > 2:
                events.append(message[2])
            elif message[:2] in (["EOSE", subscription], ["CLOSED", subscription]):
                connection.send_text(json.dumps(["CLOSE", subscription]), deadline)
                return RelayAnswer(relay, "connected", "", tuple(events))
    except WebSocketClosed as error:
        return RelayAnswer(relay, "connected", str(error), tuple(events))
    finally:
        connection.close()


def _temporary_refusal(message: str) -> bool:
    """A relay's refusal that may pass later (NIP-01 prefixes "rate-limited:" and "error:")."""
    return message.startswith(("rate-limited:", "error:"))


def _newest_profile(public_key: str, events: list) -> dict:
    """The newest valid kind-0 metadata (name, display_name, picture, nip05) of `public_key`, or {}."""
    profiles = [event for event in events if isinstance(event, dict) and event.get("pubkey") == public_key
                and event.get("kind") == 0 and isinstance(event.get("created_at"), int)
                and nostr_event_is_valid(event)]
    for event in sorted(profiles, key=lambda event: event["created_at"], reverse=True):
        with contextlib.suppress(ValueError):
            profile = json.loads(event["content"])
            if isinstance(profile, dict):
                return {key: value.strip() for key, value in profile.items()
                        if isinstance(value, str) and value.strip()}
    return {}


def nostr_reply_tags(parent: Optional[Release], public_key: str) -> list:
    """NIP-10 marked tags: the thread's root, the note replied to (when it is not the root), its author."""
    if parent is None:
        return []
    reference = parent.reply_ref if isinstance(parent.reply_ref, dict) else {}
    root = reference.get("root") if isinstance(reference.get("root"), str) else parent.id
    relays = reference.get("relays") if isinstance(reference.get("relays"), list) else []
    hint = relays[0] if relays and isinstance(relays[0], str) else ""
    tags = [["e", root, hint, "root"]]
    if parent.id != root:  # a reply straight to the root carries the root marker only
        tags.append(["e", parent.id, hint, "reply"])
    return tags + [["p", public_key]]


def nevent(event_id: str, public_key: str, relays: list) -> str:
    """NIP-19 `nevent1...`: the event id, where to find it and its author, as TLV entries in bech32."""
    entries = bytes((0, 32)) + bytes.fromhex(event_id)
    for relay in relays:
        entries += bytes((1, len(relay.encode()))) + relay.encode()
    return bech32_encode("nevent", entries + bytes((2, 32)) + bytes.fromhex(public_key))


NOSTR_PROFILE_TIMEOUTS = Timeouts(connect=5.0, read=5.0)  # connecting a channel: a short look for the profile
NOSTR_REMEMBER_SECONDS = 7 * 86400  # how long a part's event time is kept for re-sends


class NostrProvider(Provider):
    """Nostr: each part a kind-1 note signed with the channel's key and sent to each of its relays.

    A relay counts only when it answers ["OK", id, true, ...]. The event id is a hash of the note's
    author, time, tags and text, so a re-send of a part is the same event, which relays store once."""
    identifier = "nostr"
    resend_is_safe = True  # the same event id on every attempt (see _created_at): relays keep it once
    spacing = 1.0
    can_delete = True  # a NIP-09 deletion request (kind 5), which relays honour for the note's own author

    async def connect(self, channel: Channel) -> Connected:
        public_key = schnorr_public_key(self._secret_key(channel)).hex()
        answers = await self._each_relay(channel, query_relay, {"authors": [public_key], "kinds": [0], "limit": 1},
                                         NOSTR_PROFILE_TIMEOUTS)
        reachable = [answer for answer in answers if answer.state == "connected"]
        if not reachable:
            report = "; ".join(f"{answer.relay}: {answer.message}" for answer in answers)
            if all(answer.state == "blocked" for answer in answers):
                raise AddressNotAllowed(report)
            raise Rejected(f"none of the relays accepted a WebSocket connection: {report}")
        profile = _newest_profile(public_key, [event for answer in reachable for event in answer.events])
        npub = bech32_encode("npub", bytes.fromhex(public_key))
        name = (profile.get("display_name") or profile.get("name") or npub)[:CHANNEL_NAME_MAX_LENGTH]
        picture = profile.get("picture", "")
        return Connected(ChannelAccount(public_key, name, profile.get("nip05") or npub,
                                        picture if re.match(r"https?://", picture) and len(picture) < 2000 else None))

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        secret_key = self._secret_key(channel)
        content = "\n".join(filter(None, [post.text, *(media.url for media in post.media)]))
        if not content:
            raise Rejected("a Nostr note cannot be empty: this part has no text and no media")
        public_key = schnorr_public_key(secret_key).hex()
        event = nostr_event(secret_key, self._created_at(channel, post), 1, nostr_reply_tags(parent, public_key),
                            content)
        answers = await self._each_relay(channel, publish_to_relay, event, self._publish_timeouts())
        accepted = [answer.relay for answer in answers if answer.state == "accepted"]
        if not accepted:
            raise self._failure(answers)
        root = event["tags"][0][1] if event["tags"] else event["id"]
        return Release(event["id"], "https://njump.me/" + nevent(event["id"], public_key, accepted[:2]),
                       {"root": root, "relays": accepted})

    async def delete(self, channel: Channel, release: Release) -> None:
        """A NIP-09 deletion request (kind 5, ["e", id], ["k", "1"]) signed with the note's key, to every relay of
        the channel; deleted once one relay accepts it (relays that honour NIP-09 drop the note; others may keep
        it, which NIP-09 cannot prevent)."""
        if not re.fullmatch(r"[0-9a-f]{64}", release.id):
            raise Rejected(f"{release.id[:70]!r} is not a Nostr event id")
        secret_key = self._secret_key(channel)
        event = nostr_event(secret_key, int(time.time()), 5, [["e", release.id], ["k", "1"]], "")
        answers = await self._each_relay(channel, publish_to_relay, event, self._publish_timeouts())
        if not any(answer.state == "accepted" for answer in answers):
            raise self._failure(answers)

    def where_to_check(self, channel: Channel) -> str:
        relays = ", ".join(channel.credentials.get("relays") or [])
        try:
            npub = bech32_encode("npub", schnorr_public_key(self._secret_key(channel)))
        except Rejected:
            return f"the relays {relays}"
        return f"the Nostr profile https://njump.me/{npub} (relays {relays})"

    @staticmethod
    def _secret_key(channel: Channel) -> bytes:
        key = nostr_private_key_hex(str(channel.credentials.get("password") or ""))
        if key is None or not 0 < int(key, 16) < SECP256K1_N:
            raise Rejected("the private key is not a valid secp256k1 key: give 64 hex digits or an nsec1... key "
                           "(the one your Nostr app shows under its key or security settings)")
        return bytes.fromhex(key)

    @staticmethod
    def _publish_timeouts() -> Timeouts:
        """How long each relay has to accept the connection, then to answer the event (tunable for slow relays)."""
        def seconds(variable: str, default: float) -> float:
            with contextlib.suppress(ValueError):
                return max(0.1, float(os.environ.get(variable, default)))
            return default
        return Timeouts(connect=seconds("RUSTIZ_NOSTR_CONNECT_TIMEOUT", 10.0),
                        read=seconds("RUSTIZ_NOSTR_ANSWER_TIMEOUT", 15.0))

    @staticmethod
    async def _each_relay(channel: Channel, exchange: Callable, argument: Any, timeouts: Timeouts) -> list:
        """`exchange(http, relay, argument, timeouts)` with every relay of the channel at once, each in a thread."""
        relays = dict.fromkeys(channel.credentials.get("relays") or [])
        http = channel.http
        return list(await asyncio.gather(*(http.run_blocking(exchange, http, relay, argument, timeouts)
                                           for relay in relays)))

    @staticmethod
    def _created_at(channel: Channel, post: OutgoingPost) -> int:
        """The note's time, the same on every attempt of a part, so that the event and its id are the same.

        It is the part's due time at its first attempt, kept in the channel's session by idempotency
        key, and saved before anything is sent, as a re-send may follow a crash."""
        remembered = channel.session.get("createdAt")
        remembered = remembered if isinstance(remembered, dict) else {}
        created_at = remembered.get(post.idempotency_key)
        if isinstance(created_at, int):
            return created_at
        due = parse_iso_instant(post.publish_date)
        now = time.time()
        created_at = int(min(due.timestamp() if due else now, now))  # relays refuse notes from the future
        kept = {key: value for key, value in remembered.items()
                if isinstance(value, int) and value > now - NOSTR_REMEMBER_SECONDS}
        channel.save_session({**channel.session, "createdAt": {**kept, post.idempotency_key: created_at}})
        return created_at

    def _failure(self, answers: list) -> PublishError:
        """Why no relay accepted the note, as the error the scheduler acts on, naming each relay's answer."""
        described = {"refused": "refused it", "unanswered": "gave no verdict", "unreachable": "could not be reached",
                     "blocked": "was not contacted"}
        report = "; ".join(f"{answer.relay} {described[answer.state]}: {answer.message or 'no reason given'}"
                           for answer in answers)
        if any(answer.state == "unanswered" for answer in answers):
            return OutcomeUnknown(f"no relay confirmed the note, and some may have stored it ({report})")
        if all(answer.state == "blocked" for answer in answers):
            return AddressNotAllowed(report)
        if all(answer.state == "unreachable" for answer in answers):
            return Retryable(f"no relay could be reached ({report})")
        if all(answer.state == "blocked" or answer.state == "refused" and not _temporary_refusal(answer.message)
               for answer in answers):
            return Rejected(f"every relay refused the note ({report})")
        return Retryable(f"no relay accepted the note ({report})")


PROVIDER = NostrProvider()
