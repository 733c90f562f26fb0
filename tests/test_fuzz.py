"""Fuzzing with large example budgets, so that a whole class of defects cannot come back: no input makes
rustiz raise, answer a 5xx, or answer anything but a well-formed HTTP response whose errors say what is
wrong. The targets: the sans-IO request parser and multipart parser, the date parser and the POST /posts
validator called directly (fast, thousands of examples), then a running server fed arbitrary requests over
sockets, CreatePost-shaped bodies, and MCP tool calls.

Hypothesis runs derandomized: every run tries the same examples, so CI is stable. RUSTIZ_FUZZ_SCALE=<n>
multiplies every budget to explore further by hand (the module takes about a minute at 1)."""
from __future__ import annotations

import datetime
import json
import os
import re
import socket

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import rustiz
from rustiz import ApiError, Body, EndOfMessage, ParseError, RequestHead, RequestParser
from rustiz_features.catalogue import PROVIDERS
from rustiz_features.media import MultipartError, MultipartParser, PartData, PartEnd, PartHead
from rustiz_features.validation import MAX_DELAY_MINUTES, MAX_INTERVAL_DAYS, validate_create_post
from support import Database
from test_http_parser import arbitrary_bytes, assert_well_formed, split_at, stream_and_cuts

SCALE = float(os.environ.get("RUSTIZ_FUZZ_SCALE", "1"))


def fuzz(examples: int) -> settings:
    """A large budget, derandomized; shared servers outlive examples by design (hence the health check)."""
    return settings(max_examples=max(1, int(examples * SCALE)), deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])


# --- well-formed answers --------------------------------------------------------------------------------

_STATUS_LINE = re.compile(rb"HTTP/1\.1 ([1-5][0-9][0-9]) [\x20-\x7e]+")
_HEADER_NAME = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def parse_responses(data: bytes, head_only: bool = False) -> list:
    """Every response in `data`, strictly: (status, headers with lower-case names, body). Fails on anything
    a client could not read: a bad status line or header, a body shorter than its Content-Length, leftovers."""
    responses = []
    while data:
        head, separator, data = data.partition(b"\r\n\r\n")
        assert separator, f"a response head without its end: {head[:200]!r}"
        status_line, *lines = head.split(b"\r\n")
        match = _STATUS_LINE.fullmatch(status_line)
        assert match, status_line
        headers = {}
        for line in lines:
            name, colon, value = line.partition(b":")
            assert colon and _HEADER_NAME.fullmatch(name), line
            headers[name.decode().lower()] = value.strip().decode("latin-1")
        status = int(match[1])
        if status < 200:  # 100 Continue: no body, the real answer follows
            continue
        length = 0 if status in (204, 304) else int(headers["content-length"])
        if head_only and len(data) != length:  # a HEAD's answer has no body, unless its head was unreadable
            length = 0
        assert len(data) >= length, (status, headers, len(data))
        responses.append((status, headers, data[:length]))
        data = data[length:]
    return responses


def assert_explained_refusal(status: int, headers: dict, body: bytes) -> None:
    """A 4xx says what is wrong: a JSON body with Postiz's message/msg (or JSON-RPC's error, or the OAuth routes'
    RFC 6749 / RFC 7591 error and error_description), or text."""
    assert 400 <= status < 500, status
    assert body, (status, headers)
    if headers.get("content-type", "").startswith("application/json"):
        answer = json.loads(body)
        assert isinstance(answer, dict), answer
        error = answer.get("error")
        oauth_refusal = isinstance(error, str) and isinstance(answer.get("error_description"), str)
        assert {"message", "msg"} & set(answer) or (isinstance(error, dict) and "message" in error) \
            or oauth_refusal, answer


# --- (a) the request parser --------------------------------------------------------------------------------

def assert_events_frame_requests(events: list) -> None:
    """Heads, then their body bytes (exactly Content-Length of them), then the end, for each request."""
    assert_well_formed(events)
    head, received = None, 0
    for event in events:
        if isinstance(event, RequestHead):
            assert head is None, events
            assert isinstance(event.headers, dict) and event.version in ("1.0", "1.1")
            assert event.chunked == (event.content_length is None)
            assert event.content_length is None or 0 <= event.content_length <= rustiz.DEFAULT_MAX_BODY_BYTES
            head, received = event, 0
        elif isinstance(event, Body):
            assert head is not None and isinstance(event.data, bytes) and event.data, events
            received += len(event.data)
        elif isinstance(event, EndOfMessage):
            assert head is not None, events
            assert head.content_length in (None, received), (head, received)
            head = None
        else:
            assert event.status in (400, 413, 431, 505) and event.reason, event


def parse_error_answer(error: ParseError) -> bytes:
    """What the connection writes for a ParseError (HttpConnection._answer_parse_error), then closes."""
    response = rustiz.json_response({"statusCode": error.status, "message": error.reason,
                                     "error": rustiz._REASONS.get(error.status, "Error")}, error.status)
    return rustiz.serialize_response(response, False, False, False)


@fuzz(3000)
@given(stream_and_cuts(arbitrary_bytes))
def test_the_request_parser_frames_any_bytes_split_anywhere_and_answers_errors_well(case):
    data, cuts = case
    parser = RequestParser()
    events = [event for piece in split_at(data, cuts) for event in parser.feed(piece)]
    assert_events_frame_requests(events)
    if events and isinstance(events[-1], ParseError):
        [(status, headers, body)] = parse_responses(parse_error_answer(events[-1]))
        assert headers["connection"] == "close"
        assert_explained_refusal(status, headers, body)


# --- (b) the multipart parser ------------------------------------------------------------------------------

BOUNDARIES = [b"b", b"----rustizBoundary42", b"--", b"\r\n", b"x" * 70]
multipart_bodies = st.one_of(
    st.binary(max_size=500),
    st.lists(st.one_of(st.sampled_from([b"--b", b"--b--", b"\r\n", b"\r\n\r\n", b"Content-Disposition: form-data; "
                                        b'name="file"; filename="a.png"', b"Content-Type: image/png", b'name="',
                                        b"------rustizBoundary42", b"\\", b";"]),
                       st.binary(max_size=40)), max_size=12).map(b"".join))


@fuzz(3000)
@given(st.sampled_from(BOUNDARIES), multipart_bodies, st.lists(st.integers(0, 600), max_size=20))
def test_the_multipart_parser_raises_nothing_but_multipart_error_and_frames_its_parts(boundary, data, cuts):
    parser = MultipartParser(boundary)
    events = []
    try:
        for piece in split_at(data, [min(cut, len(data)) for cut in cuts]):
            events.extend(parser.feed(piece))
    except MultipartError as error:
        assert str(error)  # says what is malformed
        return
    in_part = False
    for event in events:
        if type(event) is PartHead:
            assert not in_part
            in_part = True
        elif type(event) is PartData:
            assert in_part and isinstance(event.data, bytes)
        else:
            assert type(event) is PartEnd and in_part
            in_part = False
    assert not (parser.complete and in_part)


# --- (c) dates and the POST /posts validator, called directly ---------------------------------------------

EDGE_NUMBERS = [0, 1, -1, 7, 30, 3650, 3651, 10080, 10081, 1439, 1440, 100, 101, 2**31, 2**53 - 1, 2**53, 2**63 - 1,
                2**63, 2**64, 10**30, -(10**30), 0.5, -0.0, 1e308, -1e308, 5e-324, float("inf"), float("nan")]
EDGE_TEXT = ["", " ", "\U0001f600", "٢٠٣٠", "２０３０", "\x00", "<p></p>", "<p>Hello</p>", "<script>x</script>",
             "\u202e", "x" * 5000, "everyone", "draft", "schedule", "now", "update", "API", "CLI", "https://h/a.png",
             "https://h/v.mp4", "(post:abc)"]
numbers = st.one_of(st.sampled_from(EDGE_NUMBERS), st.integers(), st.floats())
# Text as JSON parses it; lone surrogates are sent on their own (see create_post_bodies), as one in almost
# every body would only test the first check they meet.
texts = st.one_of(st.text(max_size=40), st.text(max_size=40), st.sampled_from(EDGE_TEXT))
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
json_values = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(texts, children, max_size=4)), max_leaves=12)


def mostly(plausible, other, one_in: int = 16):
    """`plausible` values, and `other` ones one time in `one_in` (hypothesis leans towards the first of its
    choices, so the plausible values come first)."""
    return st.integers(0, one_in - 1).flatmap(lambda choice: other if choice == one_in - 1 else plausible)


ISO_LIKE = r"\A\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?)?\Z"
offsets = st.sampled_from([datetime.timezone.utc] + [datetime.timezone(datetime.timedelta(minutes=minutes))
                                                     for minutes in (-720, -330, 60, 345, 840, 1439, -1439)])
any_dates = st.one_of(
    st.datetimes(min_value=datetime.datetime(1, 1, 2), max_value=datetime.datetime(9999, 12, 30),
                 timezones=offsets).map(lambda moment: moment.isoformat()),
    st.from_regex(ISO_LIKE), st.from_regex(ISO_LIKE.replace(r"\d", "[0-9]")),
    st.sampled_from(["2030-09-01T10:00:00Z", "2030-09-01", "2020-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00",
                     "9999-12-31T23:59:59-01:00", "2030-09-01T10:00:00+99:99", "٢٠٣٠-09-01T10:00:00Z",
                     "２０３０-01-01", "2030-02-30", "2030-09-01T24:00:00Z", "now"]),
    scalars)
future_dates = st.datetimes(min_value=datetime.datetime(2030, 1, 1), max_value=datetime.datetime(2031, 1, 1),
                            timezones=offsets).map(lambda moment: moment.isoformat())
dates = mostly(future_dates, any_dates, 4)


@fuzz(3000)
@given(dates)
def test_the_date_parser_answers_a_utc_instant_or_none(text):
    parsed = rustiz.parse_iso_date(text) if isinstance(text, str) else None
    if parsed is not None:
        assert re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z", parsed), parsed
        assert text.isascii() and "0000" < parsed[:4]
        assert rustiz.iso_ms(rustiz.parse_iso_instant(text)) == parsed


IDENTIFIERS = sorted(PROVIDERS)
CHANNELS = {f"chan-{identifier}": {"id": f"chan-{identifier}", "name": f"{identifier} channel",
                                   "provider_identifier": identifier, "additional_settings": [], "disabled": False,
                                   "limits": {}} for identifier in IDENTIFIERS}
SETTING_NAMES = sorted({field.name for spec in PROVIDERS.values() for field in spec.dto} | {"__type"})
SETTING_VALUES = sorted({value for spec in PROVIDERS.values() for field in spec.dto for value in field.enum or ()})


def field_values(field) -> st.SearchStrategy:
    """Values for one DTO property: mostly of its kind (its enum's, nested objects of its fields), or anything."""
    if field.enum:
        plausible = st.sampled_from(field.enum)
    elif field.kind == "object" or field.items == "object":
        nested = st.fixed_dictionaries({}, optional={child.name: st.deferred(lambda child=child: field_values(child))
                                                     for child in field.fields})
        plausible = nested if field.kind == "object" else st.lists(nested, max_size=3)
    else:
        plausible = {"string": texts, "date": dates, "boolean": st.booleans(), "number": numbers,
                     "array": st.lists(numbers if field.items == "number" else texts, max_size=3)}[field.kind]
    return mostly(plausible, json_values, 6)


def provider_settings(identifier: str) -> st.SearchStrategy:
    """A provider's settings: its own properties mostly, and any names and values sometimes."""
    own = st.fixed_dictionaries({}, optional={field.name: field_values(field)
                                              for field in PROVIDERS[identifier].dto})
    return mostly(own, st.one_of(json_values, st.dictionaries(st.sampled_from(SETTING_NAMES), st.one_of(
        st.sampled_from(SETTING_VALUES), json_values), max_size=6)), 5)


media = mostly(st.fixed_dictionaries(
    {"id": texts, "path": mostly(st.sampled_from(["https://h/a.png", "https://h/v.mp4?x=1"]), texts, 8)},
    optional={"alt": texts, "thumbnail": mostly(st.just("https://h/t.png"), texts, 4)}), json_values)
post_values = st.fixed_dictionaries(
    {"content": mostly(st.text(min_size=1, max_size=60).flatmap(lambda text: st.sampled_from([text, f"<p>{text}</p>"])),
                       st.one_of(texts, json_values), 8),
     "image": mostly(st.lists(media, max_size=3), json_values)},
    optional={"delay": st.one_of(numbers, json_values), "id": texts})


def channel_posts(channels: dict) -> st.SearchStrategy:
    """One posts[] entry: a channel of `channels` (id -> provider identifier) and settings for its provider."""
    def entry(channel_id: str) -> st.SearchStrategy:
        return st.fixed_dictionaries(
            {"integration": mostly(st.just({"id": channel_id}), st.one_of(
                st.fixed_dictionaries({"id": texts}), json_values)),
             "value": mostly(st.lists(post_values, min_size=1, max_size=3), json_values)},
            optional={"settings": provider_settings(channels[channel_id]), "group": texts})
    return st.sampled_from(sorted(channels)).flatmap(entry)


@st.composite
def create_post_bodies(draw, channels: dict):
    """Bodies shaped like Postiz's CreatePost (each field mostly present, mostly plausible), with the boundary
    numbers, dates and strings above anywhere; one in twenty is any JSON at all, and one in twenty holds a
    lone surrogate."""
    if draw(st.integers(0, 19)) == 19:
        return draw(json_values)
    fields = {"type": mostly(st.sampled_from(["draft", "schedule", "now", "update"]), scalars),
              "date": dates, "shortLink": mostly(st.booleans(), scalars),
              "tags": mostly(st.lists(st.fixed_dictionaries({"value": texts, "label": texts}), max_size=2),
                             json_values),
              "posts": mostly(st.lists(channel_posts(channels), min_size=1, max_size=3), json_values),
              "inter": st.one_of(numbers, scalars), "order": texts, "republish": scalars,
              "creationMethod": scalars}
    body = {name: draw(strategy) for name, strategy in fields.items()
            if (draw(st.integers(0, 15)) < 15) != (name in ("inter", "order", "republish", "creationMethod"))}
    if body and draw(st.integers(0, 19)) == 19:
        body[draw(st.sampled_from(sorted(body)))] = "a\ud800"
    return body


@fuzz(1500)
@given(create_post_bodies({channel_id: channel["provider_identifier"] for channel_id, channel in CHANNELS.items()}))
def test_the_create_post_validator_plans_or_refuses_with_a_400_and_never_raises_anything_else(body):
    assume(rustiz.lone_surrogate(body) is None)  # Request.json and MCP refuse those before any validation
    try:
        plan = validate_create_post(body, CHANNELS.get, "http://127.0.0.1:5077", lambda urls: {})  # (a private FRONTEND_URL: its refusals too)
    except ApiError as refused:
        assert refused.status == 400, refused.body
        rustiz.json_dumps(refused.body)  # the refusal can be written back
        assert {"message", "msg"} & set(refused.body), refused.body
        return
    assert re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z", plan["date"])
    assert plan["inter"] is None or 1 <= plan["inter"] <= MAX_INTERVAL_DAYS
    for post in plan["posts"]:
        for value in post["values"]:
            assert 0 <= value["delay"] <= MAX_DELAY_MINUTES
    rustiz.json_dumps({**plan, "posts": [{**post, "integration": post["integration"]["id"]}
                                         for post in plan["posts"]]})


# --- a running server: arbitrary requests, CreatePost bodies, MCP tool calls ------------------------------

class Fuzzed:
    """The module's server and what requests may name: channels (id -> provider), posts, operations."""

    def __init__(self, server, channels: dict, posts: list, operations: list):
        self.server, self.channels, self.posts, self.operations = server, channels, posts, operations


# Not fuzzed here: what reaches out to the internet (connecting a channel, provider tools, upload-from-url),
# the key's rotation (every later request would be a 401), sign-in (hashing a password on purpose takes
# time), and MCP (fuzzed on its own below: its SSE stream never ends).
NOT_FUZZED = re.compile(r"upload-from-url|integration-trigger|api-key|/auth/|/mcp|/sse/|/message/")


def fuzzed_operations(server) -> list:
    """(method, path template) of every operation the server's OpenAPI document describes, but NOT_FUZZED."""
    status, _, document = server.request("GET", "/public/v1/openapi.json")
    assert status == 200
    return sorted((method.upper(), path) for path, operations in json.loads(document)["paths"].items()
                  for method in operations if not NOT_FUZZED.search(path)
                  and not (path.startswith("/public/v1/integrations") and method in ("post", "delete")))


@pytest.fixture(scope="module")
def fuzzed(pyz, tmp_path_factory):
    """One server for the module, its scheduler standing by (nothing is published to any platform), with a
    channel of every provider and a few posts."""
    import fcntl
    from conftest import RustizServer, read_config, run_cli
    data_dir = tmp_path_factory.mktemp("fuzz") / "data"
    assert run_cli(pyz, "init", "--dir", str(data_dir)).returncode == 0
    database = read_config(data_dir / "config.env")["RUSTIZ_DATABASE"]
    with open(database + "-scheduler", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        server = RustizServer(pyz, data_dir, {"API_LIMIT": "0", "REQUEST_LIMIT": "0"}).start()
        try:
            db = Database(server)
            channels = {db.channel(f"{identifier} channel", identifier): identifier for identifier in IDENTIFIERS}
            some = sorted(channels)
            posts = [db.post(some[0], "2031-01-02T10:00:00.000Z"),
                     db.post(some[1], "2031-01-02T10:00:00.000Z", interval=7, state="DRAFT"),
                     db.post(some[2], "2024-01-01T09:00:00.000Z", state="ERROR", error="no")]
            yield Fuzzed(server, channels, posts, fuzzed_operations(server))
        finally:
            server.stop()


def exchange(server, request: bytes) -> bytes:
    """Send one request and read the answer until the server closes the connection (Connection: close)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        connection.sendall(request)
        connection.shutdown(socket.SHUT_WR)
        received = []
        while chunk := connection.recv(65536):
            received.append(chunk)
    return b"".join(received)


METHODS = ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"]
QUERY_NAMES = ["startDate", "endDate", "customer", "page", "group", "date", "week", "year", "refresh", "x"]
BODY_FIELDS = ["status", "settings", "content", "image", "date", "releaseId", "name", "timezone", "url", "secret",
               "postingTimes", "disabled", "customer", "integrations", "provider", "credentials"]
bodies = st.one_of(
    st.fixed_dictionaries({}, optional={name: st.one_of(json_values, dates, st.lists(st.fixed_dictionaries(
        {"time": numbers}), max_size=3), st.sampled_from(["draft", "schedule", "Europe/Paris", "Nope/Zone"]))
        for name in BODY_FIELDS}).map(lambda value: json.dumps(value).encode()),
    json_values.map(lambda value: json.dumps(value).encode()), st.binary(max_size=200))


@st.composite
def http_requests(draw, fuzzed: Fuzzed) -> tuple:
    """(a raw request with Connection: close and its own Content-Length, whether it is a HEAD): mostly an
    operation of the API with the real key and ids, then anything in its method, target, headers, body."""
    method, path = draw(st.sampled_from(fuzzed.operations))
    if draw(st.integers(0, 5)) == 0:
        method = draw(st.one_of(st.sampled_from(METHODS), st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ-", min_size=1,
                                                                        max_size=8)))
    ids = {"id": fuzzed.channels if "integration" in path or "find-slot" in path else fuzzed.posts,
           "integration": fuzzed.channels, "postId": fuzzed.posts}
    route = re.sub(r"\{(\w+)\}", lambda match: draw(mostly(st.sampled_from(sorted(ids.get(match[1], ["x"]))),
                                                            st.text(max_size=20), 4)), path)
    query = [(draw(st.sampled_from(QUERY_NAMES)), str(draw(st.one_of(dates, texts, numbers))))
             for _ in range(draw(st.integers(0, 3)))]
    from urllib.parse import quote, urlencode
    target = (quote(route.encode("utf-8", "surrogatepass"), safe="/")
              + ("?" + urlencode(query, errors="surrogatepass") if query else ""))
    latin_1 = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=30)
    headers = {"Host": "fuzz", "Connection": "close",
               "Authorization": draw(mostly(st.just(fuzzed.server.key), latin_1))}
    headers["Content-Type"] = draw(mostly(st.just("application/json"), st.sampled_from([
        "application/json; charset=utf-8", "multipart/form-data; boundary=b", "text/plain", "x/\x7f"])))
    for _ in range(draw(st.integers(0, 2))):
        headers[draw(st.sampled_from(["Range", "If-None-Match", "If-Range", "Idempotency-Key", "Accept", "X-A"]))] = \
            draw(st.one_of(st.sampled_from(["bytes=0-1", "bytes=-" + "9" * 30, "*", "\"x\""]), latin_1))
    body = draw(bodies)
    head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return head.encode("latin-1") + f"Content-Length: {len(body)}\r\n\r\n".encode() + body, method == "HEAD"


@fuzz(1000)
@given(st.data())
def test_any_request_to_a_running_server_gets_a_well_formed_answer_below_500(fuzzed, data):
    request, head_only = data.draw(http_requests(fuzzed))
    [(status, headers, body)] = parse_responses(exchange(fuzzed.server, request), head_only)
    assert status < 500, (request[:300], status, body[:300])
    if status >= 400 and not head_only:
        assert_explained_refusal(status, headers, body)


@fuzz(1000)
@given(st.data())
def test_create_post_bodies_sent_to_a_running_server_never_get_a_5xx_and_stored_posts_stay_readable(fuzzed, data):
    server = fuzzed.server
    body = data.draw(create_post_bodies(fuzzed.channels))
    raw = json.dumps(body).encode()  # ensure_ascii: lone surrogates travel as \\ud800 escapes
    status, headers, answer = server.request("POST", "/public/v1/posts", {
        "Authorization": server.key, "Content-Type": "application/json"}, raw)
    assert status < 500, (raw[:500], status, answer[:500])
    if status != 201:
        assert_explained_refusal(status, headers, answer)
        return
    for created in json.loads(answer):
        status, _, post = server.request("GET", f"/public/v1/posts/{created['postId']}", {"Authorization": server.key})
        assert status == 200, post[:300]
    status, headers, listing = server.request("GET", "/public/v1/posts?startDate=0001-01-01&endDate=9999-12-31",
                                              {"Authorization": server.key})
    assert status == 200 or (status == 400 and b"recurring posts repeat" in listing), listing[:300]


# MCP: every tool but the two that reach out to the internet (a provider's helper, a URL to download).
TOOLS = ["integrationList", "groupList", "integrationSchema", "integrationSchedulePostTool", "postsListTool",
         "postSettingsTool", "postGetTool", "postRetryTool", "notificationsListTool", "nope"]


@st.composite
def mcp_messages(draw, fuzzed: Fuzzed) -> bytes:
    name = draw(st.sampled_from(TOOLS))
    channel_id = draw(st.sampled_from(sorted(fuzzed.channels)))
    settings = st.lists(st.fixed_dictionaries({"key": st.sampled_from(SETTING_NAMES), "value": json_values}),
                        max_size=3)
    social_post = st.fixed_dictionaries(
        {"integrationId": mostly(st.just(channel_id), texts), "isPremium": st.booleans(), "date": dates,
         "shortLink": st.booleans(), "type": mostly(st.sampled_from(["draft", "schedule", "now"]), texts),
         "postsAndComments": st.lists(st.fixed_dictionaries({"content": texts, "attachments": st.lists(
             st.sampled_from(["https://h/a.png", "https://h/v.mp4", "nope"]), max_size=2)}), max_size=3),
         "settings": mostly(provider_settings(fuzzed.channels[channel_id]).map(
             lambda value: [{"key": key, "value": item} for key, item in value.items()]
             if isinstance(value, dict) else value), settings)})
    post_id = mostly(st.sampled_from(fuzzed.posts), texts)
    shaped = {"integrationList": st.fixed_dictionaries({}, optional={"group": texts}),
              "integrationSchema": st.fixed_dictionaries({"isPremium": st.booleans(),
                                                          "platform": mostly(st.sampled_from(IDENTIFIERS), texts)}),
              "integrationSchedulePostTool": st.fixed_dictionaries({"socialPost": st.lists(social_post, max_size=2)}),
              "postsListTool": st.fixed_dictionaries({"startDate": dates, "endDate": dates},
                                                     optional={"customer": texts}),
              "postSettingsTool": st.fixed_dictionaries({"id": post_id, "settings": settings}),
              "postGetTool": st.fixed_dictionaries({"id": post_id}),
              "postRetryTool": st.fixed_dictionaries({"id": post_id}),
              "notificationsListTool": st.fixed_dictionaries({}, optional={"page": numbers})}
    arguments = draw(mostly(shaped.get(name, st.just({})), json_values, 6))
    request_id = draw(mostly(st.one_of(st.integers(-2**63, 2**63 - 1), st.text(max_size=10)), st.one_of(
        st.sampled_from(EDGE_NUMBERS + ["\ud800", "a\udfffb"]), st.integers(), st.none()), 6))
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode()


@fuzz(1000)
@given(st.data())
def test_mcp_tool_calls_with_any_arguments_and_ids_get_a_json_rpc_answer_never_a_5xx(fuzzed, data):
    server = fuzzed.server
    raw = data.draw(mcp_messages(fuzzed))
    status, headers, answer = server.request("POST", f"/mcp/{server.key}", {"Content-Type": "application/json"}, raw)
    assert status in (200, 400), (raw[:500], status, answer[:500])
    message = json.loads(answer)
    assert message["jsonrpc"] == "2.0" and ("result" in message) != ("error" in message), message
    if "error" in message:  # an Invalid Request (400, no id), or params that are not an object (200, with its id)
        assert message["error"]["message"] and (status, message["id"] is None) in ((400, True), (200, False)), message
    else:
        assert isinstance(message["result"]["isError"], bool) and message["result"]["content"][0]["text"]
