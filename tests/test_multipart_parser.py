"""The sans-IO pieces behind uploads: MultipartParser, the type sniffer, byte ranges, and the request
parser's larger body limit for streaming routes. No sockets."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rustiz import ParseError, RequestHead, RequestParser
from rustiz_features.media import MultipartError, MultipartParser, PartData, PartEnd, PartHead, multipart_boundary, parse_byte_range, sniff_media_type

BOUNDARY = b"----rustizBoundary42"
PROPERTY_SETTINGS = settings(max_examples=200, deadline=None, database=None,
                             suppress_health_check=[HealthCheck.too_slow])


def body(parts: list, preamble: bytes = b"", epilogue: bytes = b"") -> bytes:
    """parts: (name, filename, data)."""
    out = [preamble]
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out.append(b"--" + BOUNDARY + f"\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n")
    return b"".join(out) + b"--" + BOUNDARY + b"--\r\n" + epilogue


def parse(pieces) -> tuple:
    """Fields as (name, filename, data) after feeding `pieces`, and whether the closing boundary came."""
    parser = MultipartParser(BOUNDARY)
    fields: list = []
    for piece in pieces:
        for event in parser.feed(piece):
            if type(event) is PartHead:
                fields.append([event.name, event.filename, b""])
            elif type(event) is PartData:
                fields[-1][2] += event.data
            else:
                assert type(event) is PartEnd
    return [tuple(field) for field in fields], parser.complete


def split(data: bytes, cuts: list) -> list:
    points = sorted({min(cut, len(data)) for cut in cuts})
    return [data[start:end] for start, end in zip([0] + points, points + [len(data)])]


TRICKY_DATA = b"\r\n--" + BOUNDARY[:-1] + b"x\r\n-- almost a boundary \r\n--"


def test_fields_and_file_come_out_whole():
    data = body([("note", None, b"hello"), ("file", "png", TRICKY_DATA)], preamble=b"ignored preamble\r\n",
                epilogue=b"ignored epilogue")
    assert parse([data]) == ([("note", None, b"hello"), ("file", "png", TRICKY_DATA)], True)


@PROPERTY_SETTINGS
@given(st.binary(max_size=300), st.lists(st.integers(min_value=0, max_value=600), max_size=12))
def test_the_way_the_body_is_split_never_changes_the_result(payload, cuts):
    data = body([("file", "a.bin", payload + TRICKY_DATA), ("other", None, payload)])
    assert parse(split(data, cuts)) == parse([data])
    assert parse([data])[0][0][2] == payload + TRICKY_DATA


def test_one_byte_at_a_time():
    data = body([("file", "png", TRICKY_DATA * 3)])
    assert parse([data[i:i + 1] for i in range(len(data))]) == ([("file", "png", TRICKY_DATA * 3)], True)


def test_a_body_cut_short_is_not_complete():
    data = body([("file", "png", b"abc")])
    assert parse([data[:-10]])[1] is False


def test_part_without_headers_and_quoted_escaped_names():
    data = (b"--" + BOUNDARY + b"\r\n\r\nanonymous\r\n--" + BOUNDARY
            + b'\r\nContent-Disposition: form-data; name="fi\\"le"; filename="a;b.png"\r\n\r\nx\r\n--'
            + BOUNDARY + b"--")
    assert parse([data]) == ([(None, None, b"anonymous"), ('fi"le', "a;b.png", b"x")], True)


@pytest.mark.parametrize("data, message", [
    (b"--" + BOUNDARY + b"garbage\r\n\r\n", "something other than CRLF"),
    (b"--" + BOUNDARY + b"\r\n" + b"X-Long: " + b"a" * 17000, "larger than 16 KiB"),
])
def test_malformed_bodies_raise_a_message(data, message):
    with pytest.raises(MultipartError, match=message):
        MultipartParser(BOUNDARY).feed(data)


@pytest.mark.parametrize("content_type, boundary", [
    ("multipart/form-data; boundary=abc", b"abc"), ('Multipart/Form-Data; charset=x; boundary="a b"', b"a b"),
    ("multipart/mixed; boundary=abc", None), ("application/json", None), ("multipart/form-data", None),
])
def test_boundary_from_content_type(content_type, boundary):
    assert multipart_boundary(content_type) == boundary


@pytest.mark.parametrize("head, expected", [
    (b"\xff\xd8\xff\xdb", "jpg"), (b"\x89PNG\r\n\x1a\n", "png"), (b"GIF87a", "gif"),
    (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "webp"), (b"BM\x00\x00", "bmp"), (b"MM\x00*", "tif"),
    (b"\x00\x00\x00\x1cftypavis", "avif"), (b"\x00\x00\x00\x20ftypmp42", "mp4"),
    (b"\x00\x00\x00\x18ftypheic", "a HEIC/HEIF image"), (b"RIFF\x00\x00\x00\x00WAVEfmt ", "a WAV audio file"),
    (b"\x1a\x45\xdf\xa3", "a WebM/Matroska video"), (b"  <svg", "an SVG image"),
])
def test_sniffing(head, expected):
    sniffed = sniff_media_type(head)
    assert (sniffed if type(sniffed) is str else sniffed.extension) == expected


@pytest.mark.parametrize("header, size, expected", [
    ("bytes=0-0", 10, (0, 0)), ("bytes=5-", 10, (5, 9)), ("bytes=-3", 10, (7, 9)), ("bytes=-30", 10, (0, 9)),
    ("bytes=8-100", 10, (8, 9)), ("bytes=10-", 10, "unsatisfiable"), ("bytes=-0", 10, "unsatisfiable"),
    ("bytes=0-", 0, "unsatisfiable"), ("bytes=4-2", 10, None), ("bytes=1-2,4-5", 10, None), ("pages=1-2", 10, None),
    ("bytes=-", 10, None),
])
def test_byte_ranges(header, size, expected):
    assert parse_byte_range(header, size) == expected


def upload_head(target: bytes, length: int) -> bytes:
    return b"POST " + target + b" HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % length


def streaming_limit(head: RequestHead):
    return 5000 if head.target == "/upload" else None


def test_a_streaming_route_gets_its_larger_body_limit_and_others_keep_the_default():
    parser = RequestParser(16384, 100, streaming_limit)
    events = parser.feed(upload_head(b"/upload", 5000) + b"x" * 5000)
    assert type(events[0]) is RequestHead and sum(len(e.data) for e in events[1:-1]) == 5000
    assert type(RequestParser(16384, 100, streaming_limit).feed(upload_head(b"/upload", 5001))[-1]) is ParseError
    refused = RequestParser(16384, 100, streaming_limit).feed(upload_head(b"/other", 101))
    assert refused == [ParseError(413, "request body of 101 bytes is over the limit of 100 bytes")]


def test_the_larger_limit_applies_to_chunked_bodies_too():
    head = b"POST %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"%x\r\n%s\r\n0\r\n\r\n" % (4000, b"y" * 4000)
    assert type(RequestParser(16384, 100, streaming_limit).feed(head % b"/upload" + chunk)[-1]) is not ParseError
    assert type(RequestParser(16384, 100, streaming_limit).feed(head % b"/other" + chunk)[-1]) is ParseError
