"""The sans-IO request parser: rustiz.RequestParser.feed(bytes) -> events, with no sockets involved.

Property tests (hypothesis) prove that the way a byte stream is split never changes the events, and
that no input makes the parser raise; unit tests pin down each field of RequestHead and each error.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rustiz
from rustiz import Body, EndOfMessage, ParseError, RequestHead, RequestParser

HEAD_LIMIT = 16384
BIG_BODY_LIMIT = 10**6

PROPERTY_SETTINGS = settings(max_examples=250, deadline=None, database=None,
                             suppress_health_check=[HealthCheck.too_slow])


# --- helpers -------------------------------------------------------------------


def new_parser(max_body_bytes: int = BIG_BODY_LIMIT) -> RequestParser:
    return RequestParser(max_head_bytes=HEAD_LIMIT, max_body_bytes=max_body_bytes)


def feed_pieces(pieces, max_body_bytes: int = BIG_BODY_LIMIT) -> list:
    parser = new_parser(max_body_bytes)
    events = []
    for piece in pieces:
        events.extend(parser.feed(piece))
    return events


def feed_whole(data: bytes, max_body_bytes: int = BIG_BODY_LIMIT) -> list:
    return feed_pieces([data], max_body_bytes)


def feed_bytewise(data: bytes, max_body_bytes: int = BIG_BODY_LIMIT) -> list:
    return feed_pieces([data[i:i + 1] for i in range(len(data))], max_body_bytes)


def split_at(data: bytes, cuts) -> list:
    points = sorted(set(cuts))
    return [data[start:end] for start, end in zip([0, *points], [*points, len(data)])]


def normalise(events: list) -> list:
    """Merge consecutive Body events into one, so the result no longer depends on how data was split."""
    merged: list = []
    for event in events:
        if isinstance(event, Body) and merged and isinstance(merged[-1], Body):
            merged[-1] = Body(merged[-1].data + event.data)
        else:
            merged.append(event if not isinstance(event, Body) else Body(bytes(event.data)))
    return merged


def assert_well_formed(events: list) -> None:
    """Known event types only; at most one ParseError and nothing after it."""
    for event in events:
        assert isinstance(event, (RequestHead, Body, EndOfMessage, ParseError)), event
    errors = [index for index, event in enumerate(events) if isinstance(event, ParseError)]
    assert len(errors) <= 1, events
    if errors:
        assert errors[0] == len(events) - 1, events


def only_error(events: list) -> ParseError:
    assert events, "expected a ParseError, got no events"
    assert_well_formed(events)
    assert isinstance(events[-1], ParseError), events
    return events[-1]


def single_head(data: bytes) -> RequestHead:
    events = feed_whole(data)
    assert_well_formed(events)
    assert isinstance(events[0], RequestHead), events
    return events[0]


# --- strategies: streams of valid requests, and the events they must give -----------

TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
RESERVED_HEADERS = {"content-length", "transfer-encoding", "connection", "expect"}
header_names = st.text(TOKEN_CHARS, min_size=1, max_size=12).filter(lambda name: name.lower() not in RESERVED_HEADERS)
# Visible ASCII and obs-text, with inner spaces and tabs, never starting or ending with whitespace.
header_values = st.text(st.characters(min_codepoint=0x21, max_codepoint=0xFF, exclude_characters="\x7f"),
                        max_size=20).flatmap(
    lambda core: st.just(core) if len(core) < 2 else
    st.sampled_from([" ", "\t", "  "]).map(lambda gap: core[0] + gap + core[1:]))
ows = st.sampled_from(["", " ", "\t", "  \t"])
targets = st.text("abcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@%/?", max_size=30).map(lambda t: "/" + t)


@st.composite
def header_block(draw) -> tuple:
    """Raw header lines and the headers dict the parser must report (lower-cased names, repeats joined)."""
    lines, expected = [], {}
    for _ in range(draw(st.integers(0, 4))):
        name, value = draw(header_names), draw(header_values)
        lines.append(f"{name}:{draw(ows)}{value}{draw(ows)}\r\n".encode("latin-1"))
        key = name.lower()
        expected[key] = f"{expected[key]}, {value}" if key in expected else value
    return b"".join(lines), expected


@st.composite
def valid_request(draw) -> tuple:
    """(raw bytes, expected events) for a GET-like request, a Content-Length POST or a chunked POST."""
    kind = draw(st.sampled_from(["no-body", "content-length", "chunked"]))
    target = draw(targets)
    extra, headers = draw(header_block())
    stray = draw(st.sampled_from([b"", b"", b"\r\n", b"\r\n\r\n"]))  # empty lines before a request (RFC 9112 2.2)
    if kind == "no-body":
        method = draw(st.sampled_from(["GET", "HEAD", "DELETE", "OPTIONS", "BREW"]))
        version = draw(st.sampled_from(["1.1", "1.0"]))
        raw = stray + f"{method} {target} HTTP/{version}\r\n".encode() + extra + b"\r\n"
        head = RequestHead(method, target, version, headers, version == "1.1", False, 0, False)
        return raw, [head, EndOfMessage()]
    method = draw(st.sampled_from(["POST", "PUT", "PATCH"]))
    if kind == "content-length":
        body = draw(st.binary(max_size=300))
        raw = (stray + f"{method} {target} HTTP/1.1\r\n".encode() + extra
               + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        all_headers = {**headers, "content-length": str(len(body))}
        head = RequestHead(method, target, "1.1", all_headers, True, False, len(body), False)
        return raw, [head] + ([Body(body)] if body else []) + [EndOfMessage()]
    chunks = draw(st.lists(st.binary(min_size=1, max_size=120), max_size=6))
    encoded = b""
    for chunk in chunks:
        size = draw(st.sampled_from(["{:x}", "{:X}", "{:04x}"])).format(len(chunk)).encode()
        extension = draw(st.sampled_from([b"", b";name=value", b' ; q="x y"']))
        encoded += size + extension + b"\r\n" + chunk + b"\r\n"
    trailers = draw(st.sampled_from([b"", b"X-Checksum: abc\r\n", b"A: 1\r\nB: 2\r\n"]))
    encoded += b"0\r\n" + trailers + b"\r\n"
    raw = (stray + f"{method} {target} HTTP/1.1\r\n".encode() + extra
           + b"Transfer-Encoding: chunked\r\n\r\n" + encoded)
    head = RequestHead(method, target, "1.1", {**headers, "transfer-encoding": "chunked"}, True, False, None, True)
    body = b"".join(chunks)
    return raw, [head] + ([Body(body)] if body else []) + [EndOfMessage()]


@st.composite
def valid_stream(draw) -> tuple:
    requests = draw(st.lists(valid_request(), min_size=1, max_size=4))
    return b"".join(raw for raw, _ in requests), [event for _, events in requests for event in events]


@st.composite
def stream_and_cuts(draw, streams):
    stream = draw(streams)
    data = stream[0] if isinstance(stream, tuple) else stream
    cuts = draw(st.lists(st.integers(0, len(data)), max_size=30))
    return stream, cuts


@st.composite
def mutated_stream(draw) -> bytes:
    """A valid stream with a few bytes inserted, deleted or replaced: reaches every parser state with garbage."""
    data = bytearray(draw(valid_stream())[0])
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        noise = draw(st.binary(min_size=1, max_size=4))
        if action == "insert":
            data[position:position] = noise
        elif action == "delete":
            del data[position:position + len(noise)]
        else:
            data[position:position + len(noise)] = noise
    return bytes(data)


arbitrary_bytes = st.one_of(
    st.binary(max_size=600),
    mutated_stream(),
    st.tuples(st.sampled_from([b"GET / HTTP/1.1\r\n", b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                               b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n"]),
              st.binary(max_size=300)).map(lambda pair: pair[0] + pair[1]),
)


# --- property tests ------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(stream_and_cuts(valid_stream()))
def test_valid_requests_give_the_same_events_however_the_stream_is_split(case):
    (data, expected), cuts = case
    whole = normalise(feed_whole(data))
    assert whole == expected
    assert normalise(feed_pieces(split_at(data, cuts))) == expected


@settings(max_examples=60, deadline=None, database=None)
@given(valid_stream())
def test_valid_requests_give_the_same_events_when_fed_one_byte_at_a_time(stream):
    data, expected = stream
    assert normalise(feed_bytewise(data)) == expected


@PROPERTY_SETTINGS
@given(valid_stream(), st.integers(min_value=1, max_value=3))
def test_a_batch_limit_gives_the_same_events_a_batch_at_a_time(stream, batch):
    data, expected = stream
    parser = new_parser()
    events = parser.feed(data, batch)
    while parser.backlog:
        events.extend(parser.feed(b"", batch))
    assert normalise(events) == expected


def test_a_batch_limit_stops_after_that_many_requests_and_keeps_the_rest():
    parser = new_parser()
    events = parser.feed(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n" * 5, 2)
    assert [type(event) for event in events] == [RequestHead, EndOfMessage] * 2 and parser.backlog
    assert len(parser.feed(b"", 2)) == 4 and parser.backlog
    assert len(parser.feed(b"", 2)) == 2 and not parser.backlog and parser.idle


@PROPERTY_SETTINGS
@given(stream_and_cuts(arbitrary_bytes))
def test_arbitrary_bytes_never_raise_and_end_at_most_in_one_parse_error(case):
    data, cuts = case
    parser = new_parser(max_body_bytes=1024)
    events = []
    for piece in split_at(data, cuts):
        events.extend(parser.feed(piece))
    assert_well_formed(events)
    if events and isinstance(events[-1], ParseError):
        assert parser.feed(b"GET / HTTP/1.1\r\n\r\n") == []  # a ParseError is final


@PROPERTY_SETTINGS
@given(stream_and_cuts(arbitrary_bytes))
def test_arbitrary_bytes_give_the_same_events_however_they_are_split(case):
    data, cuts = case
    assert normalise(feed_pieces(split_at(data, cuts), 1024)) == normalise(feed_whole(data, 1024))


# --- RequestHead fields -------------------------------------------------------------------


def test_get_request_gives_head_and_end_of_message_with_lowercased_headers():
    events = feed_whole(b"GET /health?x=1 HTTP/1.1\r\nHost: example\r\nX-Thing:  a b \r\n\r\n")
    assert events == [RequestHead("GET", "/health?x=1", "1.1", {"host": "example", "x-thing": "a b"},
                                  True, False, 0, False), EndOfMessage()]


@pytest.mark.parametrize("target, path", [
    ("http://example.com/public/v1/posts?x=1", "/public/v1/posts?x=1"), ("HTTPS://example.com:8443/a/b", "/a/b"),
    ("http://example.com", "/"), ("http://example.com?q=1", "/?q=1"), ("http://u:p@[::1]:80/health", "/health"),
])
def test_absolute_form_target_is_reported_as_its_path_and_query(target, path):
    assert single_head(f"GET {target} HTTP/1.1\r\nHost: other\r\n\r\n".encode()).target == path


def test_asterisk_form_is_accepted_for_options_and_authority_form_for_connect():
    assert single_head(b"OPTIONS * HTTP/1.1\r\n\r\n").target == "*"
    assert single_head(b"CONNECT example.com:443 HTTP/1.1\r\n\r\n").target == "example.com:443"


@pytest.mark.parametrize("line", [b"GET * HTTP/1.1", b"POST * HTTP/1.1", b"GET example.com:443 HTTP/1.1",
                                  b"GET health HTTP/1.1", b"GET ftp://example.com/ HTTP/1.1",
                                  b"GET http:///health HTTP/1.1", b"GET http://?x HTTP/1.1"])
def test_a_target_in_a_form_its_method_may_not_use_is_400(line):
    error = only_error(feed_whole(line + b"\r\n\r\n"))
    assert error.status == 400 and "target" in error.reason


def test_repeated_headers_are_joined_with_comma():
    head = single_head(b"GET / HTTP/1.1\r\nAccept: a\r\naccept: b\r\n\r\n")
    assert head.headers["accept"] == "a, b"


def test_http11_is_keep_alive_by_default():
    assert single_head(b"GET / HTTP/1.1\r\n\r\n").keep_alive is True


@pytest.mark.parametrize("value", ["close", "Close", "keep-alive, close"])
def test_http11_connection_close_turns_keep_alive_off(value):
    assert single_head(f"GET / HTTP/1.1\r\nConnection: {value}\r\n\r\n".encode()).keep_alive is False


def test_http10_is_not_keep_alive_by_default():
    head = single_head(b"GET / HTTP/1.0\r\n\r\n")
    assert head.version == "1.0"
    assert head.keep_alive is False


@pytest.mark.parametrize("value", ["keep-alive", "Keep-Alive"])
def test_http10_connection_keep_alive_turns_keep_alive_on(value):
    assert single_head(f"GET / HTTP/1.0\r\nConnection: {value}\r\n\r\n".encode()).keep_alive is True


@pytest.mark.parametrize("value", ["100-continue", "100-Continue"])
def test_expect_100_continue_is_reported_on_http11(value):
    head = single_head(f"POST / HTTP/1.1\r\nExpect: {value}\r\nContent-Length: 3\r\n\r\n".encode())
    assert head.expect_continue is True


def test_expect_100_continue_is_ignored_on_http10():
    head = single_head(b"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
    assert head.expect_continue is False


def test_no_expect_header_means_no_expect_continue():
    assert single_head(b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n").expect_continue is False


def test_content_length_is_reported_and_the_body_delivered():
    events = feed_whole(b"POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
    assert events[0].content_length == 5 and events[0].chunked is False
    assert normalise(events[1:]) == [Body(b"hello"), EndOfMessage()]


def test_request_without_body_headers_has_content_length_zero():
    assert single_head(b"POST /x HTTP/1.1\r\n\r\n").content_length == 0


@pytest.mark.parametrize("headers", [b"Content-Length: 5\r\nContent-Length: 5\r\n", b"Content-Length: 5, 5\r\n"])
def test_repeated_identical_content_lengths_are_accepted(headers):
    events = feed_whole(b"POST / HTTP/1.1\r\n" + headers + b"\r\nhello")
    assert events[0].content_length == 5
    assert normalise(events[1:]) == [Body(b"hello"), EndOfMessage()]


def test_chunked_request_has_content_length_none_and_its_chunks_as_body():
    events = feed_whole(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                        b"5;ext=1\r\nhello\r\nA\r\n, world!!!\r\n0\r\nTrailer: x\r\n\r\n")
    assert events[0].content_length is None and events[0].chunked is True
    assert normalise(events[1:]) == [Body(b"hello, world!!!"), EndOfMessage()]


def test_pipelined_requests_give_their_events_in_order():
    events = normalise(feed_whole(b"GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
                                  b"GET /c HTTP/1.1\r\n\r\n"))
    assert [type(event) for event in events] == [RequestHead, EndOfMessage, RequestHead, Body, EndOfMessage,
                                                 RequestHead, EndOfMessage]
    assert [event.target for event in events if isinstance(event, RequestHead)] == ["/a", "/b", "/c"]


def test_empty_lines_between_requests_are_ignored():
    events = feed_whole(b"\r\n\r\nGET /a HTTP/1.1\r\n\r\n\r\nGET /b HTTP/1.1\r\n\r\n")
    assert [event.target for event in events if isinstance(event, RequestHead)] == ["/a", "/b"]
    assert_well_formed(events)


def test_body_at_the_limit_is_accepted():
    events = feed_whole(b"POST / HTTP/1.1\r\nContent-Length: 2048\r\n\r\n" + b"x" * 2048, max_body_bytes=2048)
    assert normalise(events)[1:] == [Body(b"x" * 2048), EndOfMessage()]


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [
    b"GET /health\r\n\r\n",
    b"GET  /health HTTP/1.1\r\n\r\n",
    b"GET /health HTTP/1.1 extra\r\n\r\n",
    b"GET /he\x01alth HTTP/1.1\r\n\r\n",
    b"G(T /health HTTP/1.1\r\n\r\n",
    b"GET /health HTTX/1.1\r\n\r\n",
    b"GET /health HTTP/1\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
], ids=["two-parts", "double-space", "four-parts", "control-in-target", "bad-method", "bad-protocol",
        "bad-version", "tls-hello"])
def test_malformed_request_line_is_400(data):
    assert only_error(feed_whole(data)).status == 400


def test_unsupported_major_http_version_is_505():
    assert only_error(feed_whole(b"GET / HTTP/2.0\r\n\r\n")).status == 505


@pytest.mark.parametrize("header", [
    b"NoColonHere", b"Bad Name: x", b": empty-name", b"X: a\x00b", b"X: a\rb", b"X: a\nb", b" folded: x",
], ids=["no-colon", "space-in-name", "empty-name", "nul-in-value", "cr-in-value", "lf-in-value", "obs-fold"])
def test_malformed_header_is_400(header):
    assert only_error(feed_whole(b"GET / HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n\r\n")).status == 400


@pytest.mark.parametrize("size_line", [b"zz", b"-1", b"", b"5 5", b"+5", b"0x5", b"1" * 17],
                         ids=["not-hex", "negative", "empty", "two-numbers", "plus", "0x", "17-digits"])
def test_malformed_chunk_size_is_400(size_line):
    data = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + size_line + b"\r\nhello\r\n0\r\n\r\n"
    events = feed_whole(data)
    assert only_error(events).status == 400
    assert not any(isinstance(event, EndOfMessage) for event in events)


def test_chunk_data_not_followed_by_crlf_is_400():
    data = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"
    assert only_error(feed_whole(data)).status == 400


def test_malformed_trailer_is_400():
    data = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nno colon\r\n\r\n"
    assert only_error(feed_whole(data)).status == 400


@pytest.mark.parametrize("headers", [
    b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
    b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
], ids=["cl-first", "te-first"])
def test_content_length_and_transfer_encoding_together_is_400(headers):
    events = feed_whole(b"POST / HTTP/1.1\r\n" + headers + b"\r\n5\r\nhello\r\n0\r\n\r\n")
    assert only_error(events).status == 400
    assert not any(isinstance(event, RequestHead) for event in events)


@pytest.mark.parametrize("headers", [b"Content-Length: 5\r\nContent-Length: 6\r\n", b"Content-Length: 5, 6\r\n"],
                         ids=["two-headers", "one-list"])
def test_two_different_content_lengths_is_400(headers):
    assert only_error(feed_whole(b"POST / HTTP/1.1\r\n" + headers + b"\r\nhello!")).status == 400


@pytest.mark.parametrize("value", [b"abc", b"-1", b"+5", b"5.0", b"", b"0x10", b"\xb2"])
def test_malformed_content_length_is_400(value):
    assert only_error(feed_whole(b"POST / HTTP/1.1\r\nContent-Length: " + value + b"\r\n\r\n")).status == 400


@pytest.mark.parametrize("value", [b"gzip", b"gzip, chunked", b"identity"])
def test_transfer_encoding_other_than_chunked_is_400(value):
    assert only_error(feed_whole(b"POST / HTTP/1.1\r\nTransfer-Encoding: " + value + b"\r\n\r\n")).status == 400


def test_chunked_on_http10_is_400():
    data = b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    assert only_error(feed_whole(data)).status == 400


@pytest.mark.parametrize("data", [
    b"GET /" + b"a" * HEAD_LIMIT + b" HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 100) for i in range(170)) + b"\r\n",
], ids=["long-target", "many-headers"])
def test_head_over_16_kib_is_431(data):
    assert only_error(feed_whole(data)).status == 431
    assert only_error(feed_bytewise(data)).status == 431


def test_head_over_16_kib_is_431_before_its_end_arrives():
    parser = new_parser()
    events = parser.feed(b"GET / HTTP/1.1\r\nX: " + b"a" * HEAD_LIMIT)  # no end of head in sight
    assert only_error(events).status == 431


def test_body_over_the_limit_by_content_length_is_413_before_the_head_is_reported():
    # No RequestHead first: the server must not invite the body with 100 Continue before refusing it.
    events = feed_whole(b"POST / HTTP/1.1\r\nContent-Length: 2049\r\n\r\n", max_body_bytes=2048)
    assert [type(event) for event in events] == [ParseError]
    assert events[-1].status == 413


def test_body_over_the_limit_by_chunks_is_413():
    data = (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"400\r\n" + b"x" * 1024 + b"\r\n400\r\n" + b"x" * 1024 + b"\r\n1\r\nx\r\n0\r\n\r\n")
    events = feed_whole(data, max_body_bytes=2048)
    assert only_error(events).status == 413
    assert sum(len(event.data) for event in events if isinstance(event, Body)) <= 2048


def test_enormous_chunk_size_is_413_not_an_overflow():
    data = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n"
    assert only_error(feed_whole(data, max_body_bytes=2048)).status == 413


def test_content_length_with_thousands_of_digits_is_rejected_without_raising():
    # Python refuses int() on strings of more than 4300 digits (sys.int_max_str_digits); the head is
    # still under 16 KiB, so the parser must answer it, not raise.
    data = b"POST / HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n"
    assert only_error(feed_whole(data)).status in (400, 413)


def test_parse_error_is_final():
    parser = new_parser()
    events = parser.feed(b"GET / HTTP/1.1\r\nBad Header\r\n\r\n")
    assert only_error(events).status == 400
    assert parser.feed(b"GET / HTTP/1.1\r\n\r\n") == []
    assert parser.feed(b"") == []


def test_events_before_an_error_in_the_same_feed_are_kept():
    events = feed_whole(b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nBad Header\r\n\r\nGET /c HTTP/1.1\r\n\r\n")
    assert [type(event) for event in events] == [RequestHead, EndOfMessage, ParseError]
    assert events[0].target == "/a"


# --- limits must not depend on how the bytes arrive ----------------------------------------


def head_of_length(length: int) -> bytes:
    """A request line plus headers of exactly `length` bytes (not counting the final CRLF CRLF)."""
    start = b"GET / HTTP/1.1\r\nX-Fill: "
    return start + b"a" * (length - len(start))


@pytest.mark.parametrize("length", [HEAD_LIMIT - 2, HEAD_LIMIT - 1, HEAD_LIMIT])
def test_head_at_the_16_kib_limit_is_accepted_however_it_is_split(length):
    data = head_of_length(length) + b"\r\n\r\n"
    assert [type(event) for event in feed_whole(data)] == [RequestHead, EndOfMessage]
    for cut in (len(data) - 3, len(data) - 2, len(data) - 1):
        assert [type(event) for event in feed_pieces([data[:cut], data[cut:]])] == [RequestHead, EndOfMessage], cut


def test_head_one_byte_over_the_limit_is_431_however_it_is_split():
    data = head_of_length(HEAD_LIMIT + 1) + b"\r\n\r\n"
    for pieces in ([data], [data[:-1], data[-1:]], [data[:100], data[100:]]):
        assert only_error(feed_pieces(pieces)).status == 431


def test_long_chunk_extension_gets_the_same_verdict_however_it_is_split():
    data = (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=" + b"e" * 1100
            + b"\r\nhello\r\n0\r\n\r\n")
    cut = data.index(b"e\r\n") + 1  # everything of the size line but its CRLF
    assert normalise(feed_pieces([data[:cut], data[cut:]])) == normalise(feed_whole(data))


def test_long_trailer_line_gets_the_same_verdict_however_it_is_split():
    data = (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Long: " + b"t" * (HEAD_LIMIT + 100)
            + b"\r\n\r\n")
    cut = data.index(b"t\r\n") + 1
    assert normalise(feed_pieces([data[:cut], data[cut:]])) == normalise(feed_whole(data))


def test_idle_is_true_only_between_messages():
    parser = new_parser()
    assert parser.idle
    parser.feed(b"GET / HTT")
    assert not parser.idle
    parser.feed(b"P/1.1\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nh")
    assert not parser.idle
    parser.feed(b"i")
    assert parser.idle


def test_module_limit_constant_is_16_kib():
    assert rustiz.MAX_HEAD_BYTES == 16 * 1024


# --- heads parsed once (rustiz._parsed_heads) -------------------------------------------------------


def test_a_head_seen_before_gives_the_same_events_as_parsing_it_anew():
    rustiz._parsed_heads.clear()
    data = b"GET /public/v1/integrations?x=1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer k\r\n\r\n"
    first, again = new_parser().feed(data), new_parser().feed(data)
    headers = {"host": "a", "authorization": "Bearer k"}
    assert first == again == [RequestHead("GET", "/public/v1/integrations?x=1", "1.1", headers, True, False, 0, False),
                              EndOfMessage()]
    assert again[0] is first[0]  # parsed once, then found


def test_a_remembered_head_with_a_body_still_reads_its_body():
    rustiz._parsed_heads.clear()
    data = b"POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\n"
    for _ in range(2):
        parser = new_parser()
        assert parser.feed(data)[0].content_length == 3
        assert parser.feed(b"abc") == [Body(b"abc"), EndOfMessage()]


def test_a_remembered_head_is_still_refused_by_a_parser_with_a_smaller_head_limit():
    rustiz._parsed_heads.clear()
    data = b"GET /" + b"a" * 300 + b" HTTP/1.1\r\nHost: a\r\n\r\n"
    assert isinstance(new_parser().feed(data)[0], RequestHead)
    assert RequestParser(max_head_bytes=100).feed(data) == [ParseError(431, "request line and headers are larger "
                                                                            "than 16 KiB")]


def test_a_remembered_head_is_still_refused_when_its_body_is_over_the_limit():
    rustiz._parsed_heads.clear()
    data = b"POST /x HTTP/1.1\r\nContent-Length: 500\r\n\r\n"
    assert isinstance(new_parser().feed(data)[0], RequestHead)
    assert new_parser(max_body_bytes=100).feed(data)[0].status == 413


def test_refused_and_large_heads_are_not_remembered_and_the_memo_stays_bounded():
    rustiz._parsed_heads.clear()
    new_parser().feed(b"GET / HTTP/1.1\r\nBad Header\r\n\r\n")
    new_parser().feed(b"GET / HTTP/1.1\r\nX: " + b"a" * rustiz.PARSED_HEAD_BYTES + b"\r\n\r\n")
    assert not rustiz._parsed_heads
    for number in range(rustiz.PARSED_HEADS * 2 + 5):
        assert isinstance(new_parser().feed(b"GET /%d HTTP/1.1\r\n\r\n" % number)[0], RequestHead)
    assert 0 < len(rustiz._parsed_heads) <= rustiz.PARSED_HEADS
