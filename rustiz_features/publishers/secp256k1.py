"""secp256k1 and BIP-340 Schnorr signatures, in pure Python, for Nostr.

A post needs one signature, so a plain implementation is fast enough (a few milliseconds) and spares a
compiled dependency. Checked against BIP-340's test vectors (tests/test_provider_nostr.py).
"""
from __future__ import annotations

from typing import Optional

from rustiz import sha256
from ..elliptic import SECP256K1, add, affine, multiply


# The curve's arithmetic is elliptic.py's (shared with single sign-on's P-256).
SECP256K1_P, SECP256K1_N = SECP256K1.p, SECP256K1.n  # the field, the group order


def _lift_x(x: int) -> Optional[tuple]:
    """The curve point with this x and an even y (BIP-340's lift_x); None when x is on no point."""
    p = SECP256K1_P
    if x >= p:
        return None
    y_squared = (pow(x, 3, p) + 7) % p
    y = pow(y_squared, (p + 1) // 4, p)
    if y * y % p != y_squared:
        return None
    return x, y if y % 2 == 0 else p - y, 1


def _tagged_hash(tag: str, data: bytes) -> bytes:
    tag_digest = sha256(tag.encode()).digest()
    return sha256(tag_digest + tag_digest + data).digest()


def _secret_scalar(secret_key: bytes) -> int:
    scalar = int.from_bytes(secret_key, "big")
    if not 1 <= scalar < SECP256K1_N:
        raise ValueError("the private key is outside the range of secp256k1 keys (1 to n-1)")
    return scalar


def schnorr_public_key(secret_key: bytes) -> bytes:
    """The 32-byte x-only public key of a 32-byte secret key (BIP-340); ValueError for an invalid key."""
    x, _ = affine(SECP256K1, multiply(SECP256K1, SECP256K1.g, _secret_scalar(secret_key)))
    return x.to_bytes(32, "big")


def schnorr_sign(message: bytes, secret_key: bytes, aux_random: bytes) -> bytes:
    """A 64-byte BIP-340 signature of `message` (32 bytes for Nostr: the event id)."""
    n = SECP256K1_N
    secret = _secret_scalar(secret_key)
    public_x, public_y = affine(SECP256K1, multiply(SECP256K1, SECP256K1.g, secret))
    secret = secret if public_y % 2 == 0 else n - secret
    public_key = public_x.to_bytes(32, "big")
    masked = (secret ^ int.from_bytes(_tagged_hash("BIP0340/aux", aux_random), "big")).to_bytes(32, "big")
    nonce = int.from_bytes(_tagged_hash("BIP0340/nonce", masked + public_key + message), "big") % n
    if nonce == 0:
        raise ValueError("BIP-340 nonce is zero (probability 2^-256); sign again with other aux randomness")
    nonce_x, nonce_y = affine(SECP256K1, multiply(SECP256K1, SECP256K1.g, nonce))
    nonce = nonce if nonce_y % 2 == 0 else n - nonce
    nonce_point = nonce_x.to_bytes(32, "big")
    challenge = int.from_bytes(_tagged_hash("BIP0340/challenge", nonce_point + public_key + message), "big") % n
    signature = nonce_point + ((nonce + challenge * secret) % n).to_bytes(32, "big")
    if not schnorr_verify(message, public_key, signature):  # the BIP's advice: never emit a faulty signature
        raise ValueError("the BIP-340 signature did not verify; this machine's arithmetic is faulty")
    return signature


def schnorr_verify(message: bytes, public_key: bytes, signature: bytes) -> bool:
    """Whether `signature` is a valid BIP-340 signature of `message` by the x-only `public_key`."""
    if len(public_key) != 32 or len(signature) != 64:
        return False
    point = _lift_x(int.from_bytes(public_key, "big"))
    r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    if point is None or r >= SECP256K1_P or s >= SECP256K1_N:
        return False
    challenge = int.from_bytes(_tagged_hash("BIP0340/challenge", signature[:32] + public_key + message),
                               "big") % SECP256K1_N
    nonce_point = affine(SECP256K1, add(SECP256K1, multiply(SECP256K1, SECP256K1.g, s),
                                        multiply(SECP256K1, point, SECP256K1_N - challenge)))
    return nonce_point is not None and nonce_point[1] % 2 == 0 and nonce_point[0] == r
