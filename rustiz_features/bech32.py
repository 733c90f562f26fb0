"""Bech32 (BIP-173), as NIP-19 writes Nostr keys and ids (nsec1..., npub1..., nevent1...).

Pure functions on strings and bytes; no imports beyond the standard library.
"""
from __future__ import annotations

from typing import Optional


_BECH32_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _bech32_polymod(values: list) -> int:
    check = 1
    for value in values:
        top = check >> 25
        check = (check & 0x1FFFFFF) << 5 ^ value
        for bit, generator in enumerate((0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)):
            if (top >> bit) & 1:
                check ^= generator
    return check


def bech32_payload(text: str, expected_prefix: str) -> Optional[bytes]:
    """The bytes inside a BIP-173 string such as a NIP-19 `nsec1...`; None when malformed or mistyped."""
    prefix, _, data = text.lower().rpartition("1")
    if prefix != expected_prefix or len(data) < 7 or any(char not in _BECH32_CHARSET for char in data):
        return None
    values = [_BECH32_CHARSET.index(char) for char in data]
    expanded_prefix = [ord(char) >> 5 for char in prefix] + [0] + [ord(char) & 31 for char in prefix]
    if _bech32_polymod(expanded_prefix + values) != 1:  # the 6-character checksum catches typos
        return None
    accumulator, bits, payload = 0, 0, bytearray()
    for value in values[:-6]:
        accumulator, bits = (accumulator << 5) | value, bits + 5
        if bits >= 8:
            bits -= 8
            payload.append((accumulator >> bits) & 0xFF)
    if bits >= 5 or accumulator & ((1 << bits) - 1):  # padding must be short and zero
        return None
    return bytes(payload)


def bech32_encode(prefix: str, payload: bytes) -> str:
    """A BIP-173 string such as NIP-19's `npub1...` (the inverse of bech32_payload)."""
    values, accumulator, bits = [], 0, 0
    for byte in payload:
        accumulator, bits = (accumulator << 8) | byte, bits + 8
        while bits >= 5:
            bits -= 5
            values.append((accumulator >> bits) & 31)
    if bits:
        values.append((accumulator << (5 - bits)) & 31)
    expanded_prefix = [ord(char) >> 5 for char in prefix] + [0] + [ord(char) & 31 for char in prefix]
    check = _bech32_polymod(expanded_prefix + values + [0] * 6) ^ 1
    values += [(check >> 5 * (5 - index)) & 31 for index in range(6)]
    return prefix + "1" + "".join(_BECH32_CHARSET[value] for value in values)
