"""Elliptic-curve points in pure Python, for the two curves rustiz signs or verifies on: secp256k1 (Nostr's
BIP-340 signatures, publishers/secp256k1.py) and P-256 (single sign-on's ES256 ID tokens, jwt.py).

Rules:
- Curves are short Weierstrass, y² = x³ + ax + b over the prime field p. Points are Jacobian (X, Y, Z), meaning
  (X/Z², Y/Z³), so adding and doubling need no modular inverse; Z = 0 is the point at infinity.
- Plain integer arithmetic: fast enough for a signature or two per request (a few milliseconds), and no compiled
  dependency. Not constant-time: a caller that signs does so with a key of its own where timing is not observed
  by a peer in real time (Nostr); verification handles public values only.
- Standard library only.
"""
from __future__ import annotations

from typing import NamedTuple, Optional


class Curve(NamedTuple):
    p: int  # the field
    a: int
    b: int
    n: int  # the group order
    g: tuple  # the generator, Jacobian


INFINITY = (0, 1, 0)


def double(curve: Curve, point: tuple) -> tuple:
    x, y, z = point
    if not z or not y:
        return INFINITY
    p = curve.p
    y_squared = y * y % p
    s = 4 * x * y_squared % p
    z_squared = z * z % p
    m = (3 * x * x + curve.a * z_squared * z_squared) % p
    new_x = (m * m - 2 * s) % p
    return new_x, (m * (s - new_x) - 8 * y_squared * y_squared) % p, 2 * y * z % p


def add(curve: Curve, first: tuple, second: tuple) -> tuple:
    if not first[2]:
        return second
    if not second[2]:
        return first
    p = curve.p
    (x1, y1, z1), (x2, y2, z2) = first, second
    z1_squared, z2_squared = z1 * z1 % p, z2 * z2 % p
    u1, u2 = x1 * z2_squared % p, x2 * z1_squared % p
    s1, s2 = y1 * z2_squared * z2 % p, y2 * z1_squared * z1 % p
    if u1 == u2:
        return double(curve, first) if s1 == s2 else INFINITY
    h, r = (u2 - u1) % p, (s2 - s1) % p
    h_squared = h * h % p
    h_cubed, u1_h_squared = h * h_squared % p, u1 * h_squared % p
    new_x = (r * r - h_cubed - 2 * u1_h_squared) % p
    return new_x, (r * (u1_h_squared - new_x) - s1 * h_cubed) % p, h * z1 * z2 % p


def multiply(curve: Curve, point: tuple, scalar: int) -> tuple:
    result = INFINITY
    for bit in bin(scalar)[2:]:
        result = double(curve, result)
        if bit == "1":
            result = add(curve, result, point)
    return result


def affine(curve: Curve, point: tuple) -> Optional[tuple]:
    """(x, y) of a Jacobian point; None for the point at infinity."""
    x, y, z = point
    if not z:
        return None
    p = curve.p
    z_inverse = pow(z, -1, p)
    z_inverse_squared = z_inverse * z_inverse % p
    return x * z_inverse_squared % p, y * z_inverse_squared * z_inverse % p


def on_curve(curve: Curve, x: int, y: int) -> bool:
    """Whether (x, y), both in the field, is a point of the curve (for a curve of cofactor 1, as both here are,
    any such point is in the group)."""
    p = curve.p
    return 0 <= x < p and 0 <= y < p and (y * y - (x * x * x + curve.a * x + curve.b)) % p == 0


SECP256K1 = Curve(p=2**256 - 2**32 - 977, a=0, b=7,
                  n=0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141,
                  g=(0x79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798,
                     0x483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8, 1))
P256 = Curve(p=2**256 - 2**224 + 2**192 + 2**96 - 1, a=-3,
             b=0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B,
             n=0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551,
             g=(0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
                0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5, 1))
