"""secp256k1 and BIP-340 Schnorr signatures, in pure Python, for Nostr.

A post needs one signature, so a plain implementation is fast enough (a few milliseconds) and spares a
compiled dependency. Checked against BIP-340's test vectors (tests/test_provider_nostr.py).
"""
from __future__ import annotations

from typing import Optional

from rustiz import sha256


# A post needs one signature, so a plain implementation is fast enough (a few milliseconds) and
# spares a compiled dependency. Points are Jacobian (X, Y, Z), meaning (X/Z², Y/Z³), so adding and
# doubling need no modular inverse; Z = 0 is the point at infinity.

SECP256K1_P = 2**256 - 2**32 - 977  # the field
SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141  # the group order
_SECP256K1_G = (0x79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798,
                0x483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8, 1)
_INFINITY = (0, 1, 0)


def _point_double(point: tuple) -> tuple:
    x, y, z = point
    if not z or not y:
        return _INFINITY
    p = SECP256K1_P
    y_squared = y * y % p
    s = 4 * x * y_squared % p
    m = 3 * x * x % p  # the curve y² = x³ + 7 has a = 0
    new_x = (m * m - 2 * s) % p
    return new_x, (m * (s - new_x) - 8 * y_squared * y_squared) % p, 2 * y * z % p


def _point_add(first: tuple, second: tuple) -> tuple:
    if not first[2]:
        return second
    if not second[2]:
        return first
    p = SECP256K1_P
    (x1, y1, z1), (x2, y2, z2) = first, second
    z1_squared, z2_squared = z1 * z1 % p, z2 * z2 % p
    u1, u2 = x1 * z2_squared % p, x2 * z1_squared % p
    s1, s2 = y1 * z2_squared * z2 % p, y2 * z1_squared * z1 % p
    if u1 == u2:
        return _point_double(first) if s1 == s2 else _INFINITY
    h, r = (u2 - u1) % p, (s2 - s1) % p
    h_squared = h * h % p
    h_cubed, u1_h_squared = h * h_squared % p, u1 * h_squared % p
    new_x = (r * r - h_cubed - 2 * u1_h_squared) % p
    return new_x, (r * (u1_h_squared - new_x) - s1 * h_cubed) % p, h * z1 * z2 % p


def _point_multiply(point: tuple, scalar: int) -> tuple:
    result = _INFINITY
    for bit in bin(scalar)[2:]:
        result = _point_double(result)
        if bit == "1":
            result = _point_add(result, point)
    return result


def _affine(point: tuple) -> Optional[tuple]:
    """(x, y) of a Jacobian point; None for the point at infinity."""
    x, y, z = point
    if not z:
        return None
    p = SECP256K1_P
    z_inverse = pow(z, -1, p)
    z_inverse_squared = z_inverse * z_inverse % p
    return x * z_inverse_squared % p, y * z_inverse_squared * z_inverse % p


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
    x, _ = _affine(_point_multiply(_SECP256K1_G, _secret_scalar(secret_key)))
    return x.to_bytes(32, "big")


def schnorr_sign(message: bytes, secret_key: bytes, aux_random: bytes) -> bytes:
    """A 64-byte BIP-340 signature of `message` (32 bytes for Nostr: the event id)."""
    n = SECP256K1_N
    secret = _secret_scalar(secret_key)
    public_x, public_y = _affine(_point_multiply(_SECP256K1_G, secret))
    secret = secret if public_y % 2 == 0 else n - secret
    public_key = public_x.to_bytes(32, "big")
    masked = (secret ^ int.from_bytes(_tagged_hash("BIP0340/aux", aux_random), "big")).to_bytes(32, "big")
    nonce = int.from_bytes(_tagged_hash("BIP0340/nonce", masked + public_key + message), "big") % n
    if nonce == 0:
        raise ValueError("BIP-340 nonce is zero (probability 2^-256); sign again with other aux randomness")
    nonce_x, nonce_y = _affine(_point_multiply(_SECP256K1_G, nonce))
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
    nonce_point = _affine(_point_add(_point_multiply(_SECP256K1_G, s),
                                     _point_multiply(point, SECP256K1_N - challenge)))
    return nonce_point is not None and nonce_point[1] % 2 == 0 and nonce_point[0] == r
