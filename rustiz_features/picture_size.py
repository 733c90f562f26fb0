"""A picture's width and height in pixels, read from the header of a PNG, JPEG, GIF or WebP file.

Rules:
- Standard library only, and no decoding: the size is read from the few header bytes that hold it.
- Bounded: at most HEADER_BYTES are read for PNG, GIF and WebP; a JPEG is walked marker by marker (seeking past
  each segment, never reading one whole) for at most MAX_JPEG_SEGMENTS segments and MAX_FILL_BYTES of padding
  before each.
- Never raises on a file's contents: a truncated or malformed header, or a size of zero, is None. (Only an
  error opening the file itself is the caller's.)
"""
from __future__ import annotations

import struct
from typing import BinaryIO, Optional

HEADER_BYTES = 32  # PNG's IHDR ends at byte 24, GIF's screen size at 10, WebP's VP8/VP8L/VP8X sizes by 30
MAX_JPEG_SEGMENTS = 256  # far more than the APPn, DQT and DHT segments before a real JPEG's frame header
MAX_FILL_BYTES = 64  # 0xFF bytes allowed to pad before one JPEG marker
# JPEG's start-of-frame markers, which carry the size: C0-CF but DHT (C4), JPG (C8) and DAC (CC).
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_JPEG_LONE_MARKERS = frozenset(range(0xD0, 0xD8)) | {0x01}  # RSTn and TEM have no length


def picture_size(file: BinaryIO) -> Optional[tuple]:
    """(width, height) of the picture `file` holds (opened for binary reading, at its start), or None when it
    is not a PNG, JPEG, GIF or WebP, or its header is truncated or malformed."""
    try:
        head = file.read(HEADER_BYTES)
        if head.startswith(b"\xff\xd8"):
            size = _jpeg_size(file, 2)
        elif head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
            size = struct.unpack(">II", head[16:24])
        elif head.startswith((b"GIF87a", b"GIF89a")):
            size = struct.unpack("<HH", head[6:10])
        elif head.startswith(b"RIFF") and head[8:12] == b"WEBP":
            size = _webp_size(head)
        else:
            return None
    except (struct.error, OSError):  # a header shorter than its fields, or a file that cannot be read on
        return None
    return size if size is not None and size[0] > 0 and size[1] > 0 else None


def _webp_size(head: bytes) -> Optional[tuple]:
    """A WebP's size from its first chunk: lossy (VP8), lossless (VP8L) or extended (VP8X)."""
    chunk = head[12:16]
    if chunk == b"VP8 " and head[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", head[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and head[20:21] == b"\x2f" and len(head) >= 25:
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(head) >= 30:
        return int.from_bytes(head[24:27], "little") + 1, int.from_bytes(head[27:30], "little") + 1
    return None


def _jpeg_size(file: BinaryIO, position: int) -> Optional[tuple]:
    """The size in a JPEG's start-of-frame segment, reached by seeking past the segments before it."""
    for _ in range(MAX_JPEG_SEGMENTS):
        file.seek(position)
        marker = file.read(2)
        for _ in range(MAX_FILL_BYTES):  # fill bytes (0xFF) may come before a marker
            if marker[1:] != b"\xff":
                break
            marker = b"\xff" + file.read(1)
            position += 1
        # The end, image data before any frame header, or nothing but padding: no size.
        if len(marker) < 2 or marker[0] != 0xFF or marker[1] in (0xD9, 0xDA, 0xFF):
            return None
        if marker[1] in _JPEG_LONE_MARKERS:
            position += 2
            continue
        length_bytes = file.read(2)
        if len(length_bytes) < 2:
            return None
        length = struct.unpack(">H", length_bytes)[0]
        if length < 2:
            return None
        if marker[1] in _JPEG_FRAMES:
            frame = file.read(5)  # precision, height, width
            height, width = struct.unpack(">HH", frame[1:5])
            return width, height
        position += 2 + length
    return None
