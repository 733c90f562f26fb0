"""The pure-Python ID token verifier (rustiz_features/jwt.py) against tokens signed by a real library: RS256 and
ES256 keys made here with `cryptography` (installed with the test requirements; rustiz itself never uses it),
forged and tampered tokens, and fuzzed ones that must end in a refusal, never in another exception."""
from __future__ import annotations

import base64
import json
import time

import pytest
from hypothesis import given, settings, strategies as st

cryptography = pytest.importorskip("cryptography", reason="the verifier's tests sign with the cryptography package")
from cryptography.hazmat.primitives import hashes  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature  # noqa: E402

from rustiz_features import jwt  # noqa: E402

ISSUER, CLIENT, NONCE = "https://id.example.org", "rustiz-client", "n-0S6_WzA2Mj"
BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def number(value: int, size: int | None = None) -> str:
    return b64(value.to_bytes(size or (value.bit_length() + 7) // 8, "big"))


def rsa_key(kid: str = "rsa-1", bits: int = 2048):
    private = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    public = private.public_key().public_numbers()
    return private, {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": number(public.n),
                     "e": number(public.e)}


def ec_key(kid: str = "ec-1"):
    private = ec.generate_private_key(ec.SECP256R1())
    public = private.public_key().public_numbers()
    return private, {"kty": "EC", "kid": kid, "crv": "P-256", "x": number(public.x, 32), "y": number(public.y, 32)}


RSA_PRIVATE, RSA_JWK = rsa_key()
EC_PRIVATE, EC_JWK = ec_key()
KEYS = [RSA_JWK, EC_JWK]


def claims(**changes) -> dict:
    now = int(time.time())
    values = {"iss": ISSUER, "aud": CLIENT, "sub": "248289761001", "nonce": NONCE, "iat": now, "exp": now + 300,
              "email": "ana@example.org", "email_verified": True}
    values.update(changes)
    return {name: value for name, value in values.items() if value is not None}


def signed(payload: dict, alg: str = "RS256", kid: str | None = None, header: dict | None = None) -> str:
    head = header or {"alg": alg, "typ": "JWT", "kid": kid or ("rsa-1" if alg == "RS256" else "ec-1")}
    signing_input = f"{b64(json.dumps(head).encode())}.{b64(json.dumps(payload).encode())}".encode()
    if alg == "RS256":
        signature = RSA_PRIVATE.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    else:
        r, s = decode_dss_signature(EC_PRIVATE.sign(signing_input, ec.ECDSA(hashes.SHA256())))
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return f"{signing_input.decode()}.{b64(signature)}"


def expected(now: float | None = None) -> jwt.Expected:
    return jwt.Expected(ISSUER, CLIENT, NONCE, time.time() if now is None else now)


def refusal(token, keys=KEYS, expect=None) -> str:
    with pytest.raises(jwt.TokenRefused) as refused:
        jwt.verified_claims(token, keys, expect or expected())
    return refused.value.check


@pytest.mark.parametrize("alg", ["RS256", "ES256"])
def test_a_token_signed_by_the_issuer_is_accepted(alg):
    assert jwt.verified_claims(signed(claims(), alg), KEYS, expected())["email"] == "ana@example.org"


@pytest.mark.parametrize("alg", ["RS256", "ES256"])
def test_a_changed_claim_or_signature_is_refused(alg):
    token = signed(claims(), alg)
    header, payload, signature = token.split(".")
    forged_payload = b64(json.dumps(claims(email="eve@example.org")).encode())
    assert refusal(f"{header}.{forged_payload}.{signature}") == "signature"
    flipped = bytearray(jwt.b64url_decode(signature))
    flipped[-1] ^= 1
    assert refusal(f"{header}.{payload}.{b64(bytes(flipped))}") == "signature"
    assert refusal(f"{header}.{payload}.") == "signature"


def test_a_token_signed_by_another_key_of_the_same_kid_is_refused():
    other_private, _ = rsa_key()
    head = b64(json.dumps({"alg": "RS256", "kid": "rsa-1"}).encode())
    body = b64(json.dumps(claims()).encode())
    signature = other_private.sign(f"{head}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
    assert refusal(f"{head}.{body}.{b64(signature)}") == "signature"


@pytest.mark.parametrize("header", [{"alg": "none"}, {"alg": "HS256", "kid": "rsa-1"}, {"alg": "RS512", "kid": "rsa-1"},
                                    {"alg": "PS256"}, {"alg": ["RS256"]}, {}])
def test_other_algorithms_are_refused_before_any_key(header):
    body = b64(json.dumps(claims()).encode())
    for signature in ("", b64(b"x" * 32)):
        assert refusal(f"{b64(json.dumps(header).encode())}.{body}.{signature}") == "algorithm"


def test_an_hmac_signed_with_the_public_key_is_refused():
    import hashlib
    import hmac
    head = b64(json.dumps({"alg": "HS256", "kid": "rsa-1"}).encode())
    body = b64(json.dumps(claims()).encode())
    mac = hmac.new(json.dumps(RSA_JWK).encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    assert refusal(f"{head}.{body}.{b64(mac)}") == "algorithm"


def test_an_unknown_kid_asks_for_the_keys_again():
    with pytest.raises(jwt.UnknownKey):
        jwt.verified_claims(signed(claims(), kid="rotated"), KEYS, expected())
    with pytest.raises(jwt.UnknownKey):  # an ES256 token and only RSA keys
        jwt.verified_claims(signed(claims(), "ES256"), [RSA_JWK], expected())


def test_a_key_for_encryption_or_another_algorithm_is_not_used():
    assert refusal(signed(claims()), [{**RSA_JWK, "use": "enc"}]) == "key"
    assert refusal(signed(claims()), [{**RSA_JWK, "alg": "RS384"}]) == "key"


def test_keys_too_small_or_off_the_curve_are_refused():
    _, small = rsa_key("rsa-1", bits=1024)
    assert refusal(signed(claims()), [small]) == "key"
    off_curve = {**EC_JWK, "y": number((int.from_bytes(jwt.b64url_decode(EC_JWK["y"]), "big") + 1) % jwt.P256.p, 32)}
    assert refusal(signed(claims(), "ES256"), [off_curve]) == "key"
    assert refusal(signed(claims(), "ES256"), [{**EC_JWK, "crv": "P-384"}]) == "key"


def test_ecdsa_signatures_out_of_range_are_refused():
    token = signed(claims(), "ES256")
    head_body = token.rpartition(".")[0]
    for r, s in ((0, 1), (1, 0), (jwt.P256.n, 1), (1, jwt.P256.n)):
        assert refusal(f"{head_body}.{b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}") == "signature"


@pytest.mark.parametrize("changes, check", [
    ({"iss": "https://evil.example"}, "issuer"),
    ({"iss": None}, "issuer"),
    ({"aud": "another-client"}, "audience"),
    ({"aud": ["another-client"]}, "audience"),
    ({"aud": [CLIENT, "another-client"]}, "audience"),  # several audiences and no azp
    ({"aud": [CLIENT, "another-client"], "azp": "another-client"}, "audience"),
    ({"azp": "another-client"}, "audience"),
    ({"exp": int(time.time()) - 600}, "expired"),
    ({"exp": None}, "malformed"),
    ({"exp": "tomorrow"}, "malformed"),
    ({"exp": True}, "malformed"),
    ({"iat": int(time.time()) + 3600}, "issued"),
    ({"iat": int(time.time()) - 86400}, "issued"),
    ({"nonce": "another"}, "nonce"),
    ({"nonce": None}, "nonce"),
    ({"sub": None}, "subject"),
    ({"sub": ""}, "subject"),
])
def test_claims_not_for_this_sign_in_are_refused(changes, check):
    assert refusal(signed(claims(**changes))) == check


def test_several_audiences_with_this_client_as_azp_are_accepted():
    token = signed(claims(aud=[CLIENT, "another-client"], azp=CLIENT), "ES256")
    assert jwt.verified_claims(token, KEYS, expected())["sub"] == "248289761001"


def test_a_little_clock_skew_is_allowed():
    now = time.time()
    token = signed(claims(iat=int(now) + 60, exp=int(now) - 60))
    assert jwt.verified_claims(token, KEYS, expected(now))


def test_nan_and_infinite_times_are_refused():
    for bad in ("NaN", "Infinity", "-Infinity", "1e999"):
        text = json.dumps(claims()).replace(f'"exp": {claims()["exp"]}', f'"exp": {bad}')
        with pytest.raises(jwt.TokenRefused):
            jwt.check_claims(json.loads(text), expected())


@pytest.mark.parametrize("token", ["", "a", "a.b", "a.b.c.d", "....", "e30.e30.", "W10.e30.", "e30.W10.",
                                   "!!.e30.e30", "e30.e30.!!", "x" * 20000, None, 42, ["a.b.c"],
                                   b64(b"[" * 5000) + ".e30.e30", "e30.e30.\u00e9", "\u00e9.e30.e30"])
def test_malformed_tokens_are_refused(token):
    refusal(token)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), st.lists(st.text(alphabet=BASE64URL + "=", max_size=80), min_size=1,
                                                max_size=5).map(".".join)))
def test_fuzzed_tokens_end_in_a_refusal(token):
    refusal(token)


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda inner: (st.lists(inner, max_size=4)
                                          | st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(header=st.dictionaries(st.sampled_from(["alg", "kid", "crit", "typ", "x"]), JSON_VALUES, max_size=4),
       payload=st.dictionaries(st.sampled_from(["iss", "aud", "azp", "exp", "iat", "nonce", "sub"]), JSON_VALUES,
                               max_size=7),
       signature=st.binary(max_size=300))
def test_fuzzed_headers_claims_and_signatures_end_in_a_refusal(header, payload, signature):
    token = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(payload).encode())}.{b64(signature)}"
    refusal(token)


@settings(max_examples=200, deadline=None)
@given(jwk=st.dictionaries(st.sampled_from(["kty", "kid", "n", "e", "crv", "x", "y", "use", "alg"]),
                           st.one_of(JSON_VALUES, st.binary(max_size=300).map(b64)), max_size=9),
       alg=st.sampled_from(["RS256", "ES256"]))
def test_fuzzed_keys_end_in_a_refusal(jwk, alg):
    refusal(signed(claims(), alg, kid="k"), [{**jwk, "kid": "k"}])
