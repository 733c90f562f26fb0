"""JSON Web Tokens as single sign-on receives them: an OpenID Connect ID token's signature checked against the
issuer's keys (JWKS), RS256 and ES256, in pure Python, and its claims checked.

Rules:
- The .pyz is standard library only: RSA (PKCS#1 v1.5 with SHA-256) is one pow(); ECDSA on P-256 is point
  arithmetic in Jacobian coordinates (elliptic.py, shared with Nostr's secp256k1). Only signatures are verified
  here, never made: no secret is at stake in timing, so plain integer arithmetic is enough.
- Only RS256 and ES256 are accepted: `none`, HS* (a public key used as an HMAC secret) and anything else
  are refused before any key is looked at.
- Any input ends in claims or in TokenRefused (with a `check` word naming what failed): never another
  exception. Tokens, keys and numbers are bounded before any arithmetic.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
from typing import Any, Iterable, NamedTuple
from _operator import _compare_digest as compare_digest

from .elliptic import P256, add, affine, multiply, on_curve

ALGORITHMS = ("RS256", "ES256")
MAX_TOKEN_BYTES = 16 * 1024  # an ID token is a few hundred bytes to a few KiB
MIN_RSA_BITS, MAX_RSA_BITS = 2048, 8192
MAX_RSA_EXPONENT = 2 ** 32
LEEWAY_SECONDS = 120  # clocks of the issuer and of rustiz may differ this much
MAX_TOKEN_AGE_SECONDS = 3600  # an ID token is read right after it was issued; an older one is refused
# SHA-256's DigestInfo prefix in an RSA PKCS#1 v1.5 signature (RFC 8017, section 9.2, note 1).
SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")


class TokenRefused(Exception):
    """The token cannot be trusted. `check` names what failed (malformed, algorithm, key, signature, issuer,
    audience, expired, issued, nonce, subject); the message says it in words, for the log."""

    def __init__(self, check: str, message: str):
        super().__init__(message)
        self.check = check


class UnknownKey(TokenRefused):
    """No key of the set matches the token's `kid`: the issuer may have rotated its keys (fetch them again)."""

    def __init__(self, message: str):
        super().__init__("key", message)


class Expected(NamedTuple):
    """What an ID token must say: who issued it, to whom, for which sign-in (RFC: OpenID Connect Core 3.1.3.7)."""
    issuer: str
    audience: str  # the client id
    nonce: str
    now: float


# --- the token's parts ------------------------------------------------------------------------------------

def b64url_decode(text: str) -> bytes:
    """base64url without padding, strictly: any other character is a refusal."""
    if not isinstance(text, str) or len(text) % 4 == 1 or not text.isascii():
        raise TokenRefused("malformed", "a part of the token is not base64url")
    try:
        return base64.b64decode(text.translate(str.maketrans("-_", "+/")) + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise TokenRefused("malformed", "a part of the token is not base64url") from None


def _json_object(data: bytes, what: str) -> dict:
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
        raise TokenRefused("malformed", f"the token's {what} is not JSON") from None
    if not isinstance(value, dict):
        raise TokenRefused("malformed", f"the token's {what} is not a JSON object")
    return value


class Parts(NamedTuple):
    header: dict
    claims: dict
    signing_input: bytes
    signature: bytes


def token_parts(token: Any) -> Parts:
    """The header, claims, signed bytes and signature of a compact JWS, before anything is trusted."""
    if not isinstance(token, str) or len(token) > MAX_TOKEN_BYTES:
        raise TokenRefused("malformed", "the ID token is missing or too long")
    pieces = token.split(".")
    if len(pieces) != 3:
        raise TokenRefused("malformed", "the ID token is not three dot-separated parts (a signed JWT)")
    header = _json_object(b64url_decode(pieces[0]), "header")
    claims = _json_object(b64url_decode(pieces[1]), "claims")
    return Parts(header, claims, f"{pieces[0]}.{pieces[1]}".encode("ascii"), b64url_decode(pieces[2]))


# --- RS256 ---------------------------------------------------------------------------------------------------

def _key_integer(jwk: dict, name: str) -> int:
    return int.from_bytes(b64url_decode(jwk.get(name)), "big")


def rs256_valid(jwk: dict, signing_input: bytes, signature: bytes) -> bool:
    """RSASSA-PKCS1-v1_5 with SHA-256 (RFC 8017, 8.2.2): the whole encoded message rebuilt and compared, so
    no parsing of a forged padding can be fooled (Bleichenbacher's e=3 forgeries)."""
    modulus, exponent = _key_integer(jwk, "n"), _key_integer(jwk, "e")
    if not MIN_RSA_BITS <= modulus.bit_length() <= MAX_RSA_BITS or not 3 <= exponent < MAX_RSA_EXPONENT \
            or exponent % 2 == 0:
        raise TokenRefused("key", f"the issuer's RSA key is unusable ({modulus.bit_length()} bits; "
                                  f"{MIN_RSA_BITS} to {MAX_RSA_BITS} with an odd exponent are accepted)")
    size = (modulus.bit_length() + 7) // 8
    signed = int.from_bytes(signature, "big")
    if len(signature) != size or signed >= modulus:
        return False
    message = pow(signed, exponent, modulus).to_bytes(size, "big")
    digest_info = SHA256_DIGEST_INFO + hashlib.sha256(signing_input).digest()
    expected = b"\x00\x01" + b"\xff" * (size - len(digest_info) - 3) + b"\x00" + digest_info
    return compare_digest(message, expected)


# --- ES256: ECDSA on P-256 (FIPS 186-4; SEC 1, 4.1.4) ----------------------------------------------------------

def es256_valid(jwk: dict, signing_input: bytes, signature: bytes) -> bool:
    """ECDSA P-256 with SHA-256, the signature as JWS sends it: r and s, 32 bytes each (RFC 7518, 3.4)."""
    if jwk.get("crv") != "P-256":
        raise TokenRefused("key", f"the issuer's EC key is on the curve {str(jwk.get('crv'))[:20]!r}, not P-256")
    x_bytes, y_bytes = b64url_decode(jwk.get("x")), b64url_decode(jwk.get("y"))
    x, y = int.from_bytes(x_bytes, "big"), int.from_bytes(y_bytes, "big")
    if len(x_bytes) != 32 or len(y_bytes) != 32 or not on_curve(P256, x, y):
        raise TokenRefused("key", "the issuer's EC key is not a point of P-256")
    if len(signature) != 64:
        return False
    r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    n = P256.n
    if not (0 < r < n and 0 < s < n):
        return False
    e = int.from_bytes(hashlib.sha256(signing_input).digest(), "big")  # (256 bits: no truncation for P-256)
    w = pow(s, -1, n)
    point = affine(P256, add(P256, multiply(P256, P256.g, e * w % n), multiply(P256, (x, y, 1), r * w % n)))
    return point is not None and point[0] % n == r


# --- the key, the signature, the claims ------------------------------------------------------------------------

KEY_TYPES = {"RS256": "RSA", "ES256": "EC"}


def signing_key(header: dict, keys: Iterable[Any]) -> dict:
    """The key of the set that may have signed a token with this header: its `kid` (when the token names one),
    of the algorithm's key type, meant for signatures, and for this algorithm when the key names one."""
    algorithm = header.get("alg")
    if algorithm not in ALGORITHMS:
        raise TokenRefused("algorithm", f"the ID token is signed with {str(algorithm)[:20]!r}; rustiz accepts "
                                        f"{' and '.join(ALGORITHMS)} only")
    if "crit" in header:
        raise TokenRefused("malformed", "the ID token's header has critical extensions rustiz does not know")
    kid = header.get("kid")
    candidates = [key for key in keys if isinstance(key, dict) and key.get("kty") == KEY_TYPES[algorithm]
                  and key.get("use", "sig") == "sig" and key.get("alg", algorithm) == algorithm
                  and (kid is None or key.get("kid") == kid)]
    if not candidates:
        raise UnknownKey(f"none of the issuer's keys is the {algorithm} key {str(kid)[:60]!r} that signed the token")
    if len(candidates) > 1:
        raise TokenRefused("key", "the token names no key (kid) and the issuer has several that could have signed it")
    return candidates[0]


def signature_valid(header: dict, jwk: dict, signing_input: bytes, signature: bytes) -> bool:
    check = rs256_valid if header["alg"] == "RS256" else es256_valid
    return check(jwk, signing_input, signature)


def _number(claims: dict, name: str) -> float:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TokenRefused("malformed", f"the ID token's {name!r} is missing or not a number")
    return value


def check_claims(claims: dict, expected: Expected, leeway: float = LEEWAY_SECONDS) -> None:
    """OpenID Connect Core 3.1.3.7: the issuer, the audience (and azp), the times, the nonce, a subject."""
    if claims.get("iss") != expected.issuer:
        raise TokenRefused("issuer", f"the ID token was issued by {str(claims.get('iss'))[:100]!r}, not by "
                                     f"{expected.issuer!r}")
    audience = claims.get("aud")
    audiences = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
    if expected.audience not in audiences:
        raise TokenRefused("audience", "the ID token was issued for another application (its aud is not "
                                       "RUSTIZ_OIDC_CLIENT_ID)")
    if ("azp" in claims or len(audiences) > 1) and claims.get("azp") != expected.audience:
        raise TokenRefused("audience", "the ID token was issued to another application (its azp is not "
                                       "RUSTIZ_OIDC_CLIENT_ID)")
    if expected.now > _number(claims, "exp") + leeway:
        raise TokenRefused("expired", "the ID token has expired")
    issued = _number(claims, "iat")
    if issued > expected.now + leeway or issued < expected.now - MAX_TOKEN_AGE_SECONDS:
        raise TokenRefused("issued", "the ID token's issue time (iat) is not now: check the clocks")
    nonce = claims.get("nonce")
    if not isinstance(nonce, str) or not compare_digest(nonce.encode(), expected.nonce.encode()):
        raise TokenRefused("nonce", "the ID token is not the answer to this sign-in (its nonce differs)")
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise TokenRefused("subject", "the ID token names no subject (sub)")


def verified_claims(token: Any, keys: Iterable[Any], expected: Expected) -> dict:
    """The ID token's claims once its signature (by one of `keys`, a JWKS's "keys") and its claims are checked;
    raises TokenRefused (UnknownKey when no key matches: fetch the set again and retry once)."""
    parts = token_parts(token)
    jwk = signing_key(parts.header, keys)
    if not signature_valid(parts.header, jwk, parts.signing_input, parts.signature):
        raise TokenRefused("signature", "the ID token's signature is not the issuer's")
    check_claims(parts.claims, expected)
    return parts.claims

