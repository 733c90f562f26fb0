"""The request pipeline in-process: routing, path parameters and failures inside handlers."""
from __future__ import annotations

import asyncio
import json
import time

import pytest

import rustiz


def request(method: str, target: str) -> rustiz.Request:
    events = rustiz.RequestParser().feed(f"{method} {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return rustiz.Request(events[0], b"", "127.0.0.1")


def test_an_exception_in_a_handler_is_a_500_json_with_the_traceback_in_the_log(app, capsys):
    def broken(_request):
        raise RuntimeError("the disk caught fire")

    app.add("GET", "/broken", broken, authenticated=False)

    response = app.handle(request("GET", "/broken"))

    assert response.status == 500
    assert json.loads(response.body) == {"statusCode": 500, "message": "Internal server error"}
    log = capsys.readouterr().err
    assert "Traceback" in log and "the disk caught fire" in log
    assert app.handle(request("GET", "/health")).status == 200  # and the app goes on


def test_path_parameters_are_decoded_and_given_to_the_handler(app):
    seen = {}

    def handler(req):
        seen.update(req.params)
        return rustiz.Response(200, b"ok")

    app.add("GET", "/things/:thing/parts/:part", handler, authenticated=False)

    assert app.handle(request("GET", "/things/a%20b/parts/7?x=1")).status == 200
    assert seen == {"thing": "a b", "part": "7"}
    assert app.handle(request("GET", "/things/a/parts")).status == 404
    assert app.handle(request("GET", "/things/a/parts/7/more")).status == 404


def test_an_api_error_raised_by_a_handler_becomes_its_json_response(app):
    def handler(_request):
        raise rustiz.not_found("Post not found")

    app.add("GET", "/missing", handler, authenticated=False)

    response = app.handle(request("GET", "/missing"))

    assert response.status == 404
    assert json.loads(response.body) == {"statusCode": 404, "message": "Post not found", "error": "Not Found"}


def test_a_body_that_is_not_json_is_a_400_naming_the_problem():
    events = rustiz.RequestParser().feed(b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n{oops")
    with pytest.raises(rustiz.ApiError) as raised:
        rustiz.Request(events[0], b"{oops", "127.0.0.1").json()
    assert raised.value.status == 400
    assert "not valid JSON" in raised.value.body["message"]


def json_of(body: bytes):
    events = rustiz.RequestParser().feed(b"POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    return rustiz.Request(events[0], body, "127.0.0.1").json()


@pytest.mark.parametrize("depth", [rustiz.MAX_JSON_DEPTH + 1, 5000, 100000])
def test_json_nested_deeper_than_the_limit_is_a_400_not_a_500(depth):
    """A deep body was a RecursionError (500), or was stored and then could not
    be written back by orjson (a 500 on every later GET of that post)."""
    with pytest.raises(rustiz.ApiError) as raised:
        json_of(b'{"settings":' + b"[" * depth + b"]" * depth + b"}")
    assert raised.value.status == 400
    assert f"more than {rustiz.MAX_JSON_DEPTH} levels" in raised.value.body["message"]


def test_json_nested_up_to_the_limit_and_wide_json_are_accepted():
    depth = rustiz.MAX_JSON_DEPTH - 1
    assert json_of(b'{"a":' + b"[" * depth + b"]" * depth + b"}")["a"] is not None
    assert len(json_of(b"[" + b",".join([b"[]"] * 5000) + b"]")) == 5000


@pytest.mark.parametrize("body", [b'{"id":"\\ud800"}', b'{"id":"x\\uDC00y"}',
                                  '{"id":"\ud800"}'.encode("utf-16", "surrogatepass")])
def test_a_lone_surrogate_in_json_is_a_400_not_a_500(body):
    """It parses, but is no character: SQLite and the response encoder failed on it (500)."""
    with pytest.raises(rustiz.ApiError) as raised:
        json_of(body)
    assert raised.value.status == 400
    assert "lone UTF-16 surrogate" in raised.value.body["message"]


def test_escaped_characters_and_surrogate_pairs_are_accepted():
    assert json_of(b'{"text":"caf\\u00e9 \\ud83d\\ude00 \\\\ud800"}') == {"text": "café 😀 \\ud800"}


def test_what_orjson_cannot_write_the_standard_encoder_writes():
    """orjson refuses integers beyond 64 bits, which a post's settings may hold: GET /posts/:id was a 500.
    (tests/test_build.py sends them to a .pyz that carries the real orjson.)"""
    def orjson_like(value):
        raise TypeError("Integer exceeds 64-bit range")  # orjson.JSONEncodeError is a TypeError

    dumps = rustiz._with_stdlib_fallback(orjson_like)
    assert dumps({"big": 10**30, "id": 2**64}) == b'{"big":1000000000000000000000000000000,"id":18446744073709551616}'


@pytest.fixture
def postgres_app(tmp_path, postgres_cluster):
    """An App on a fresh PostgreSQL database, in-process, listening for changes as a server's worker does;
    (the App, the key, another process's connection to the database)."""
    import psycopg
    database = postgres_cluster.create_database()
    config_path, key, _, _ = rustiz.initialize(str(tmp_path / "config.env"), force=False,
                                               settings={"RUSTIZ_DATABASE": database})
    config = rustiz.load_config({"RUSTIZ_CONFIG": config_path, "REQUEST_LIMIT": "0"})
    store = rustiz.Store(config.database)
    store.listen_for_changes()
    other = psycopg.connect(database, autocommit=True)
    yield rustiz.App(config, store), key, other
    other.close()
    store.close()
    postgres_cluster.drop_database(database)


def answer(app: rustiz.App, key: str, path: str = "/public/v1/integrations"):
    """What App.respond gives for a GET with `key`: a Response when answered on the spot, else the awaitable."""
    events = rustiz.RequestParser().feed(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {key}\r\n\r\n".encode())
    admitted = rustiz.Request(events[0], b"", "127.0.0.1")
    assert app.admit(admitted) is None
    return app.respond(admitted)


def on_a_thread(app: rustiz.App, key: str, path: str = "/public/v1/integrations") -> rustiz.Response:
    pending = answer(app, key, path)
    assert not isinstance(pending, rustiz.Response), "answered from memory, but memory could not know this"
    return asyncio.run(pending)


def test_postgresql_answers_a_known_key_from_memory_on_the_loop_without_a_query_until_a_change(postgres_app,
                                                                                                monkeypatch):
    app, key, other = postgres_app
    assert json.loads(on_a_thread(app, key).body) == []  # the key and the listing are read, then remembered
    with monkeypatch.context() as no_database:
        no_database.setattr(app.store.db, "execute", lambda *_: pytest.fail("a query on the event loop"))
        remembered = answer(app, key)
        assert isinstance(remembered, rustiz.Response) and json.loads(remembered.body) == []
        assert isinstance(answer(app, key, "/api/public/v1/integrations"), rustiz.Response)  # (one listing)
    on_a_thread(app, key, "/public/v1/integrations?group=g1")  # another listing: not remembered yet
    assert on_a_thread(app, "not-a-key").status == 401  # (an unknown key: the database says)

    organization = other.execute("SELECT id FROM organization").fetchone()[0]
    other.execute("INSERT INTO integration (id, internal_id, organization_id, name, provider_identifier, "
                  "created_at, updated_at) VALUES ('c1', 'i1', %s, 'Chan', 'bluesky', 'now', 'now')", (organization,))
    deadline = time.monotonic() + 5
    pending = answer(app, key)
    while isinstance(pending, rustiz.Response):  # until the trigger's notice arrives (a millisecond or so)
        assert time.monotonic() < deadline, "the change was never heard"
        time.sleep(0.001)
        pending = answer(app, key)
    assert [channel["id"] for channel in json.loads(asyncio.run(pending).body)] == ["c1"]
    assert isinstance(answer(app, key), rustiz.Response)

    app.store.listener.listening = False  # (as while its connection is down)
    assert json.loads(on_a_thread(app, key).body)[0]["id"] == "c1"
