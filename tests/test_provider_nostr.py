"""The Nostr publisher: BIP-340 signatures (the BIP's own test vectors), NIP-19 encodings, the RFC 6455
client, then connect and publish through the built .pyz against a fake relay (tests/fakes/nostr.py)
for every error path, and against a real `nostr-relay` on loopback when RUSTIZ_TEST_NOSTR_RELAY
names its executable.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from rustiz_features.bech32 import bech32_encode, bech32_payload
from rustiz_features.catalogue import nostr_private_key_hex
from rustiz_features.http_client import ConnectFailed, Timeouts
from rustiz_features.publishers.nostr import (
    nevent, nostr_event, nostr_event_is_valid, publish_to_relay, query_relay,
)
from rustiz_features.publishers.secp256k1 import SECP256K1_N, schnorr_public_key, schnorr_sign, schnorr_verify
from rustiz_features.publishers.websocket import WebSocketClient, _websocket_accept, _websocket_mask
from conftest import client_for_fakes, provider_fixtures
from fakes.nostr import SECRET_KEY_HEX, FakeNostrRelay, closed_port_url, profile_event
from support import api, connected, get_post, parts_of, png_file, schedule, scheduled, settled, uploaded
from support import connect as connect_channel

PUBLIC_KEY_HEX = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e"

# bip-0340/test-vectors.csv from github.com/bitcoin/bips:
# index, secret key, public key, aux_rand, message, signature, verification result, comment
BIP340_VECTORS = """\
0,0000000000000000000000000000000000000000000000000000000000000003,F9308A019258C31049344F85F89D5229B531C845836F99B08601F113BCE036F9,0000000000000000000000000000000000000000000000000000000000000000,0000000000000000000000000000000000000000000000000000000000000000,E907831F80848D1069A5371B402410364BDF1C5F8307B0084C55F1CE2DCA821525F66A4A85EA8B71E482A74F382D2CE5EBEEE8FDB2172F477DF4900D310536C0,TRUE,
1,B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF,DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659,0000000000000000000000000000000000000000000000000000000000000001,243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89,6896BD60EEAE296DB48A229FF71DFE071BDE413E6D43F917DC8DCF8C78DE33418906D11AC976ABCCB20B091292BFF4EA897EFCB639EA871CFA95F6DE339E4B0A,TRUE,
2,C90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B14E5C9,DD308AFEC5777E13121FA72B9CC1B7CC0139715309B086C960E18FD969774EB8,C87AA53824B4D7AE2EB035A2B5BBBCCC080E76CDC6D1692C4B0B62D798E6D906,7E2D58D8B3BCDF1ABADEC7829054F90DDA9805AAB56C77333024B9D0A508B75C,5831AAEED7B44BB74E5EAB94BA9D4294C49BCF2A60728D8B4C200F50DD313C1BAB745879A5AD954A72C45A91C3A51D3C7ADEA98D82F8481E0E1E03674A6F3FB7,TRUE,
3,0B432B2677937381AEF05BB02A66ECD012773062CF3FA2549E44F58ED2401710,25D1DFF95105F5253C4022F628A996AD3A0D95FBF21D468A1B33F8C160D8F517,FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF,FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF,7EB0509757E246F19449885651611CB965ECC1A187DD51B64FDA1EDC9637D5EC97582B9CB13DB3933705B32BA982AF5AF25FD78881EBB32771FC5922EFC66EA3,TRUE,test fails if msg is reduced modulo p or n
4,,D69C3509BB99E412E68B0FE8544E72837DFA30746D8BE2AA65975F29D22DC7B9,,4DF3C3F68FCC83B27E9D42C90431A72499F17875C81A599B566C9889B9696703,00000000000000000000003B78CE563F89A0ED9414F5AA28AD0D96D6795F9C6376AFB1548AF603B3EB45C9F8207DEE1060CB71C04E80F593060B07D28308D7F4,TRUE,
5,,EEFDEA4CDB677750A420FEE807EACF21EB9898AE79B9768766E4FAA04A2D4A34,,243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89,6CFF5C3BA86C69EA4B7376F31A9BCB4F74C1976089B2D9963DA2E5543E17776969E89B4C5564D00349106B8497785DD7D1D713A8AE82B32FA79D5F7FC407D39B,FALSE,public key not on the curve
6,,DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659,,243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89,FFF97BD5755EEEA420453A14355235D382F6472F8568A18B2F057A14602975563CC27944640AC607CD107AE10923D9EF7A73C643E166BE5EBEAFA34B1AC553E2,FALSE,has_even_y(R) is false
7,,DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659,,243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89,1FA62E331EDBC21C394792D2AB1100A7B432B013DF3F6FF4F99FCB33E0E1515F28890B3EDB6E7189B630448B515CE4F8622A954CFE545735AAEA5134FCCDB2BD,FALSE,negated message
8,,DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659,,243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89,6CFF5C3BA86C69EA4B7376F31A9BCB4F74C1976089B2D9963DA2E5543E177769961764B3AA9B2FFCB6EF947B6887A226E8D7C93E00C5ED0C1834FF0D0C2E6DA6,FALSE,negated s value
9,,DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659,,243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89,0000000000000000000000000000000000000000000000000000000000000000123DDA8328AF9C23A94C1FEECFD123BA4FB73476F0D594DCB65C6425BD186051,FALSE,sG - eP is infinite. Test fails in single verification if has_even_y(inf) is defined as true and x(inf) as 0
10,,DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659,,243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89,00000000000000000000000000000000000000000000000000000000000000017615FBAF5AE28864013C099742DEADB4DBA87F11AC6754F93780D5A1837CF197,FALSE,sG - eP is infinite. Test fails in single verification if has_even_y(inf) is defined as true and x(inf) as 1
11,,DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659,,243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89,4A298DACAE57395A15D0795DDBFD1DCB564DA82B0F269BC70A74F8220429BA1D69E89B4C5564D00349106B8497785DD7D1D713A8AE82B32FA79D5F7FC407D39B,FALSE,sig[0:32] is not an X coordinate on the curve
12,,DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659,,243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89,FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F69E89B4C5564D00349106B8497785DD7D1D713A8AE82B32FA79D5F7FC407D39B,FALSE,sig[0:32] is equal to field size
13,,DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659,,243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89,6CFF5C3BA86C69EA4B7376F31A9BCB4F74C1976089B2D9963DA2E5543E177769FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141,FALSE,sig[32:64] is equal to curve order
14,,FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC30,,243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89,6CFF5C3BA86C69EA4B7376F31A9BCB4F74C1976089B2D9963DA2E5543E17776969E89B4C5564D00349106B8497785DD7D1D713A8AE82B32FA79D5F7FC407D39B,FALSE,public key is not a valid X coordinate because it exceeds the field size
"""


# --- signatures and encodings, in-process -----------------------------------------------------------

@pytest.mark.parametrize("row", BIP340_VECTORS.splitlines(), ids=lambda row: "vector " + row.split(",")[0])
def test_bip340_official_test_vectors(row):
    _, secret, public, aux, message, signature, valid, _ = row.split(",", 7)
    public, message, signature = bytes.fromhex(public), bytes.fromhex(message), bytes.fromhex(signature)
    if secret:
        assert schnorr_public_key(bytes.fromhex(secret)) == public
        assert schnorr_sign(message, bytes.fromhex(secret), bytes.fromhex(aux)) == signature
    assert schnorr_verify(message, public, signature) is (valid == "TRUE")


def test_signing_refuses_keys_outside_the_curve_order():
    for key in (bytes(32), SECP256K1_N.to_bytes(32, "big")):
        with pytest.raises(ValueError, match="outside the range"):
            schnorr_public_key(key)


def test_nip19_example_keys_encode_and_decode():
    # the examples of NIP-19
    npub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"
    nsec = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5"
    assert bech32_encode("npub", bytes.fromhex(PUBLIC_KEY_HEX)) == npub
    assert bech32_encode("nsec", bytes.fromhex(SECRET_KEY_HEX)) == nsec
    assert nostr_private_key_hex(nsec) == SECRET_KEY_HEX
    assert schnorr_public_key(bytes.fromhex(SECRET_KEY_HEX)).hex() == PUBLIC_KEY_HEX


def test_nevent_carries_the_id_the_relays_and_the_author():
    event_id = "ab" * 32
    payload = bech32_payload(nevent(event_id, PUBLIC_KEY_HEX, ["wss://relay.example"]), "nevent")
    assert payload == (bytes((0, 32)) + bytes.fromhex(event_id) + bytes((1, 19)) + b"wss://relay.example"
                       + bytes((2, 32)) + bytes.fromhex(PUBLIC_KEY_HEX))


def test_an_event_id_is_the_hash_of_its_nip01_serialisation_and_tampering_shows():
    event = nostr_event(bytes.fromhex(SECRET_KEY_HEX), 1700000000, 1, [["p", PUBLIC_KEY_HEX]],
                               'line "one"\nthé\\two')
    serialized = json.dumps([0, PUBLIC_KEY_HEX, 1700000000, 1, [["p", PUBLIC_KEY_HEX]], 'line "one"\nthé\\two'],
                            separators=(",", ":"), ensure_ascii=False).encode()
    assert event["id"] == hashlib.sha256(serialized).hexdigest()
    assert nostr_event_is_valid(event)
    assert not nostr_event_is_valid({**event, "content": "other"})
    assert not nostr_event_is_valid({**event, "sig": "00" * 64})


def test_websocket_accept_key_and_masking_follow_rfc_6455():
    # the example of RFC 6455 §1.3
    assert _websocket_accept("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    # the example of RFC 6455 §5.7: "Hello" masked with 37 fa 21 3d
    assert _websocket_mask(b"Hello", bytes.fromhex("37fa213d")) == bytes.fromhex("7f9f4d5158")


def test_the_websocket_client_refuses_a_server_that_does_not_upgrade():
    relay = FakeNostrRelay()
    relay.refuse_upgrade = True
    with pytest.raises(ConnectFailed, match="answered HTTP 404 instead of 101"):
        WebSocketClient(relay.url, time.monotonic() + 5, client_for_fakes())


def test_the_websocket_client_sends_large_masked_messages_and_reads_them_back():
    relay = FakeNostrRelay()
    content = "x" * 70000  # a 64-bit length frame out, and back in the REQ's answer
    event = nostr_event(bytes.fromhex(SECRET_KEY_HEX), int(time.time()), 1, [], content)
    answer = publish_to_relay(client_for_fakes(), relay.url, event, Timeouts(5, 5))
    assert answer.state == "accepted"
    found = query_relay(client_for_fakes(), relay.url, {"ids": [event["id"]]}, Timeouts(5, 5))
    assert [found_event["content"] for found_event in found.events] == [content]


# --- through the server: connect -----------------------------------------------------------------

relay, rustiz_server, channel = provider_fixtures("nostr", FakeNostrRelay, names=("relay", "rustiz_server", "channel"),
                                                  env={"RUSTIZ_RETRY_LIMIT": "2", "RUSTIZ_NOSTR_ANSWER_TIMEOUT": "1.5"})


def connect(server, credentials: dict) -> tuple:
    """(status, answer) of connecting a Nostr channel (support.connect for this module's one provider)."""
    return connect_channel(server, "nostr", credentials)


def test_connect_reads_the_profile_and_identifies_the_account_by_its_public_key(rustiz_server, relay):
    relay.store(profile_event("Old Name", "https://example.org/old.png", created_at=int(time.time()) - 3600))
    relay.store(profile_event("Alice", "https://example.org/alice.png"))
    status, channel = connect(rustiz_server, relay.credentials())
    assert status == 201, channel
    assert channel["name"] == "Alice"
    assert channel["picture"] == "https://example.org/alice.png"
    assert channel["profile"] == "me@example.org"  # the NIP-05 address of the profile
    assert ["REQ"] == relay.received[0][:1] and relay.received[0][2] == {
        "authors": [PUBLIC_KEY_HEX], "kinds": [0], "limit": 1}
    status, again = connect(rustiz_server, {**relay.credentials(), "password": bech32_encode(
        "nsec", bytes.fromhex(SECRET_KEY_HEX))})
    assert (status, again["reconnected"]) == (200, True), again  # the same key as nsec is the same account


def test_connect_without_a_profile_names_the_channel_by_its_npub(rustiz_server, relay):
    status, channel = connect(rustiz_server, relay.credentials())
    assert status == 201, channel
    assert channel["name"] == "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"


def test_connect_ignores_a_forged_profile(rustiz_server, relay):
    forged = profile_event("Mallory", "https://example.org/m.png")
    relay.store({**forged, "content": forged["content"].replace("Mallory", "Mallet")})
    status, channel = connect(rustiz_server, relay.credentials())
    assert status == 201 and channel["name"].startswith("npub1"), channel


def test_connect_succeeds_when_one_relay_of_several_answers(rustiz_server, relay):
    status, channel = connect(rustiz_server, relay.credentials(closed_port_url()))
    assert status == 201, channel


def test_connect_is_refused_with_each_relay_s_reason_when_none_accepts(rustiz_server, relay):
    relay.refuse_upgrade = True
    dead = closed_port_url()
    status, answer = connect(rustiz_server, relay.credentials(dead))
    assert status == 400, answer
    message = answer["message"] if isinstance(answer, dict) else str(answer)
    assert "Nostr refused these credentials: none of the relays accepted a WebSocket connection" in message
    assert f"{relay.url}: " in message and "HTTP 404 instead of 101" in message
    assert f"{dead}: " in message and "Connection refused" in message


def test_connect_refuses_a_key_outside_the_curve_order(rustiz_server, relay):
    status, answer = connect(rustiz_server, {**relay.credentials(), "password": "f" * 64})
    assert status == 400, answer
    assert "not a valid secp256k1 key" in json.dumps(answer)


# --- through the server: publish ---------------------------------------------------------------

def test_a_post_with_media_is_a_signed_note_with_the_media_urls_on_their_own_lines(rustiz_server, relay, channel):
    media = uploaded(rustiz_server, png_file())
    post_id = scheduled(rustiz_server, channel["id"], "<p>Hello &amp; welcome</p>", images=[media])
    [post] = parts_of(settled(rustiz_server, post_id))
    assert post["state"] == "PUBLISHED", post
    [event] = relay.published
    assert event["content"] == f"Hello & welcome\n{media['path']}"
    assert event["kind"] == 1 and event["tags"] == [] and event["pubkey"] == PUBLIC_KEY_HEX
    assert nostr_event_is_valid(event)
    assert abs(event["created_at"] - time.time()) < 60
    assert post["releaseId"] == event["id"]
    nevent = post["releaseURL"].removeprefix("https://njump.me/")
    assert bech32_payload(nevent, "nevent")[2:34].hex() == event["id"]


def test_thread_parts_are_nip10_replies_to_the_root_and_their_parent(rustiz_server, relay, channel):
    post_id = scheduled(rustiz_server, channel["id"], "<p>root</p>", "<p>first reply</p>", "<p>second reply</p>")
    posts = parts_of(settled(rustiz_server, post_id))
    assert [post["state"] for post in posts] == ["PUBLISHED"] * 3, posts
    root, first, second = relay.published
    assert [event["content"] for event in relay.published] == ["root", "first reply", "second reply"]
    assert first["tags"] == [["e", root["id"], relay.url, "root"], ["p", PUBLIC_KEY_HEX]]
    assert second["tags"] == [["e", root["id"], relay.url, "root"], ["e", first["id"], relay.url, "reply"],
                              ["p", PUBLIC_KEY_HEX]]
    assert [post["releaseId"] for post in posts] == [root["id"], first["id"], second["id"]]


def test_one_accepting_relay_is_enough_when_another_refuses(rustiz_server, relay):
    other = FakeNostrRelay()
    channel_id = connected(rustiz_server, "nostr", relay.credentials(other.url))["id"]
    other.script = ["refuse:blocked: you are not on the allow-list"]
    [post] = parts_of(settled(rustiz_server, scheduled(rustiz_server, channel_id, "<p>hello</p>")))
    assert post["state"] == "PUBLISHED", post
    assert len(relay.published) == 1 and other.published == []


def test_every_relay_refusing_fails_the_post_with_each_relay_s_words(rustiz_server, relay):
    other = FakeNostrRelay()
    channel_id = connected(rustiz_server, "nostr", relay.credentials(other.url))["id"]
    relay.script = ["refuse:blocked: pubkey not admitted"]
    other.script = ["refuse:invalid: event creation date is too far off from the current time"]
    [post] = parts_of(settled(rustiz_server, scheduled(rustiz_server, channel_id, "<p>hello</p>")))
    assert post["state"] == "ERROR", post
    assert post["error"].startswith("Failed on Nostr: every relay refused the note")
    assert f"{relay.url} refused it: blocked: pubkey not admitted" in post["error"]
    assert f"{other.url} refused it: invalid: event creation date" in post["error"]
    assert len(relay.event_messages()) == 1  # refused for good: not sent again
    status, notifications = api(rustiz_server, "GET", "/public/v1/notifications")
    assert "every relay refused the note" in json.dumps(notifications)


def test_a_duplicate_answer_counts_as_accepted(rustiz_server, relay, channel):
    relay.script = ["refuse:duplicate: already have this event"]
    [post] = parts_of(settled(rustiz_server, scheduled(rustiz_server, channel["id"], "<p>hello</p>")))
    assert post["state"] == "PUBLISHED", post


def test_a_lost_answer_is_sent_again_as_the_same_event_and_stored_once(rustiz_server, relay, channel):
    relay.script = ["drop"]  # stored, then the connection drops before the OK
    [post] = parts_of(settled(rustiz_server, scheduled(rustiz_server, channel["id"], "<p>hello</p>")))
    assert post["state"] == "PUBLISHED", post
    first, second = relay.event_messages()
    assert first["id"] == second["id"] and first["created_at"] == second["created_at"]
    assert len(relay.published) == 1 and post["releaseId"] == first["id"]


def test_a_relay_that_never_answers_is_retried_then_reported(start_server_with_fakes, relay):
    server = start_server_with_fakes(env={"RUSTIZ_RETRY_BASE": "0.1", "RUSTIZ_RETRY_LIMIT": "1",
                               "RUSTIZ_NOSTR_ANSWER_TIMEOUT": "0.5"})
    channel_id = connected(server, "nostr", relay.credentials())["id"]
    relay.script = ["silent", "silent"]
    [post] = parts_of(settled(server, scheduled(server, channel_id, "<p>hello</p>")))
    assert post["state"] == "ERROR", post
    assert "gave up after 2 attempts" in post["error"]
    assert f"{relay.url} gave no verdict: no answer in the time allowed" in post["error"]
    first, second = relay.event_messages()
    assert first["id"] == second["id"]


def test_unreachable_relays_are_retried_and_then_published(rustiz_server, relay, channel):
    relay.refuse_upgrade = True
    post_id = scheduled(rustiz_server, channel["id"], "<p>hello</p>")
    deadline = time.monotonic() + 10
    while "could not be reached" not in (parts_of(get_post(rustiz_server, post_id))[0]["error"] or ""):
        assert time.monotonic() < deadline, parts_of(get_post(rustiz_server, post_id))
        time.sleep(0.02)
    relay.refuse_upgrade = False
    [post] = parts_of(settled(rustiz_server, post_id))
    assert post["state"] == "PUBLISHED", post


def test_a_rate_limited_refusal_is_retried(rustiz_server, relay, channel):
    relay.script = ["refuse:rate-limited: slow down"]
    [post] = parts_of(settled(rustiz_server, scheduled(rustiz_server, channel["id"], "<p>hello</p>")))
    assert post["state"] == "PUBLISHED", post
    assert len(relay.event_messages()) == 2


def test_pings_and_fragmented_answers_are_handled(rustiz_server, relay, channel):
    relay.script = ["ping-and-fragment"]
    [post] = parts_of(settled(rustiz_server, scheduled(rustiz_server, channel["id"], "<p>hello</p>")))
    assert post["state"] == "PUBLISHED", post
    deadline = time.monotonic() + 5  # the relay reads the pong on its own thread, maybe after the OK went out
    while relay.pongs != [b"are you there"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert relay.pongs == [b"are you there"]


def test_an_empty_part_is_refused_when_scheduled(rustiz_server, relay, channel):
    status, answer = schedule(rustiz_server, channel["id"], "<p>hi</p>", "<p> </p>")
    assert status == 400, answer
    assert answer["message"] == "Your post should have at least one character or one image."


# --- a real relay: nostr-relay on loopback --------------------------------------------------------

RELAY_EXECUTABLE = os.environ.get("RUSTIZ_TEST_NOSTR_RELAY", "")

RELAY_CONFIG = """\
DEBUG: false
relay_name: rustiz test relay
relay_description: loopback test relay
storage:
  sqlalchemy.url: sqlite+aiosqlite:///{database}
  num_concurrent_reqs: 10
  num_concurrent_adds: 2
  validators:
    - nostr_relay.validators.is_not_too_large
    - nostr_relay.validators.is_signed
    - nostr_relay.validators.is_recent
verification:
  nip05_verification: disabled
  expiration: 2592000
  update_frequency: 3600
gunicorn:
  bind: 127.0.0.1:{port}
  workers: 1
  loglevel: info
authentication:
  enabled: false
message_timeout: 1800
subscription_limit: 32
max_limit: 6000
"""

# Run with the relay's own interpreter: an independent client (websockets) and verifier (coincurve).
READ_BACK = textwrap.dedent("""\
    import hashlib, json, sys
    from coincurve import PublicKeyXOnly
    from websockets.sync.client import connect
    url, ids = sys.argv[1], sys.argv[2:]
    found = {}
    with connect(url) as relay:
        relay.send(json.dumps(["REQ", "readback", {"ids": ids}]))
        while True:
            message = json.loads(relay.recv(timeout=10))
            if message[0] == "EOSE":
                break
            event = message[2]
            serialized = json.dumps([0, event["pubkey"], event["created_at"], event["kind"], event["tags"],
                                     event["content"]], separators=(",", ":"), ensure_ascii=False)
            id_ok = hashlib.sha256(serialized.encode()).hexdigest() == event["id"]
            signature_ok = PublicKeyXOnly(bytes.fromhex(event["pubkey"])).verify(
                bytes.fromhex(event["sig"]), bytes.fromhex(event["id"]))
            found[event["id"]] = {"event": event, "verified": id_ok and signature_ok}
    print(json.dumps(found))
""")


@pytest.fixture
def real_relay(tmp_path):
    if not RELAY_EXECUTABLE or not os.access(RELAY_EXECUTABLE, os.X_OK):
        pytest.skip("set RUSTIZ_TEST_NOSTR_RELAY to the nostr-relay executable of a venv with "
                    "`pip install nostr-relay websockets coincurve` to publish to a real relay")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "relay.yaml"
    config.write_text(RELAY_CONFIG.format(database=tmp_path / "relay.sqlite3", port=port))
    log = open(tmp_path / "relay.log", "wb")
    process = subprocess.Popen([RELAY_EXECUTABLE, "-c", str(config), "serve", "--use-uvicorn"], cwd=tmp_path,
                               stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while True:
        try:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Accept": "application/nostr+json"})
            with urllib.request.urlopen(request, timeout=1) as answer:
                if json.loads(answer.read()).get("supported_nips"):
                    break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError("nostr-relay did not start: " + (tmp_path / "relay.log").read_text())
        time.sleep(0.1)
    yield f"ws://127.0.0.1:{port}"
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()


def test_a_post_and_its_reply_reach_a_real_relay_and_read_back_verified(start_server_with_fakes, real_relay):
    server = start_server_with_fakes(env={"RUSTIZ_RETRY_BASE": "0.2"})
    status, channel = connect(server, {"password": SECRET_KEY_HEX, "relays": [real_relay]})
    assert status == 201, channel
    post_id = scheduled(server, channel["id"], "<p>Hello from rustiz</p>", "<p>and a reply</p>")
    posts = parts_of(settled(server, post_id))
    assert [post["state"] for post in posts] == ["PUBLISHED", "PUBLISHED"], posts
    root_id, reply_id = posts[0]["releaseId"], posts[1]["releaseId"]

    python = Path(RELAY_EXECUTABLE).parent / "python"
    result = subprocess.run([str(python if python.exists() else shutil.which("python3")), "-c", READ_BACK,
                             real_relay, root_id, reply_id], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert set(found) == {root_id, reply_id}
    assert all(item["verified"] for item in found.values())
    root, reply = found[root_id]["event"], found[reply_id]["event"]
    assert root["content"] == "Hello from rustiz" and root["pubkey"] == PUBLIC_KEY_HEX
    assert reply["content"] == "and a reply"
    assert reply["tags"] == [["e", root_id, real_relay, "root"], ["p", PUBLIC_KEY_HEX]]

    # rustiz's own client reads it back too
    again = query_relay(client_for_fakes(), real_relay, {"ids": [reply_id]}, Timeouts(5, 5))
    assert [event["id"] for event in again.events] == [reply_id]
