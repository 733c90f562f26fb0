"""The web app's server side: its files (with ETag and a strict Content-Security-Policy) and the
sign-in session: an HttpOnly SameSite=Strict cookie that stands for the API key, with a CSRF token
every change must carry; `rustiz user add` for password sign-in."""
from __future__ import annotations

import gzip
import json
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from conftest import run_cli

NOT_SIGNED_IN = {"statusCode": 401, "message": "Not signed in"}


def post(server, path: str, body, headers: dict | None = None) -> tuple:
    return server.request("POST", path, {"Content-Type": "application/json", **(headers or {})},
                          json.dumps(body).encode())


def sign_in(server, body: dict | None = None) -> tuple:
    """(cookie header value, csrf token) of a new session."""
    status, headers, answer = post(server, "/auth/login", body or {"apiKey": server.key})
    assert status == 200, answer
    cookie = headers["set-cookie"].partition(";")[0]
    return cookie, json.loads(answer)["csrfToken"]


def test_the_api_key_signs_in_with_an_httponly_strict_cookie(server):
    status, headers, answer = post(server, "/auth/login", {"apiKey": server.key})
    assert status == 200
    body = json.loads(answer)
    assert body["organization"]["name"] == "My organization" and body["organization"]["timezone"] == "UTC"
    assert len(body["csrfToken"]) == 32
    attributes = [part.strip() for part in headers["set-cookie"].split(";")]
    assert attributes[0].startswith("rustiz_session=") and len(attributes[0]) > 60
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(attributes)
    assert "Secure" not in attributes  # plain http to localhost: a Secure cookie would never come back
    assert headers["cache-control"] == "no-store"


def test_a_wrong_key_or_an_empty_body_is_refused(server):
    status, _, answer = post(server, "/auth/login", {"apiKey": "0" * 64})
    assert status == 401 and "not one of this rustiz's organizations" in json.loads(answer)["message"]
    status, _, answer = post(server, "/auth/login", {})
    assert status == 400 and json.loads(answer)["message"] == 'Sign in with {"apiKey"} or with {"email", "password"}'


def test_a_sign_in_body_that_is_not_json_is_refused_so_a_cross_site_form_cannot_sign_in(server):
    # An HTML form of another site can send text/plain, form and multipart bodies, never application/json.
    key = server.key
    forms = [("text/plain", json.dumps({"apiKey": key}).encode()),
             ("application/x-www-form-urlencoded", f"apiKey={key}".encode()),
             ("multipart/form-data; boundary=x",
              f'--x\r\nContent-Disposition: form-data; name="apiKey"\r\n\r\n{key}\r\n--x--\r\n'.encode()),
             (None, json.dumps({"apiKey": key}).encode())]
    for content_type, body in forms:
        headers = {"Content-Type": content_type} if content_type else {}
        status, answer_headers, answer = server.request("POST", "/auth/login", headers, body)
        assert status == 415, (content_type, answer)
        assert "Content-Type: application/json" in json.loads(answer)["message"]
        assert "set-cookie" not in answer_headers


def test_a_sign_in_from_another_site_is_refused_and_one_from_rustiz_s_own_page_works(server):
    body = {"apiKey": server.key}
    for headers in ({"Origin": "https://evil.example"}, {"Origin": "null"},
                    {"Origin": f"http://127.0.0.1:{server.port}.evil.example"},
                    {"Sec-Fetch-Site": "cross-site"},
                    {"Origin": f"http://127.0.0.1:{server.port}", "Sec-Fetch-Site": "cross-site"}):
        status, answer_headers, answer = post(server, "/auth/login", body, headers)
        assert status == 403 and "another site" in json.loads(answer)["message"], headers
        assert "set-cookie" not in answer_headers
    for headers in ({"Origin": f"http://127.0.0.1:{server.port}", "Sec-Fetch-Site": "same-origin"},
                    {"Sec-Fetch-Site": "none"}, {}):  # (typed address; a script without a browser)
        status, _, answer = post(server, "/auth/login", body, headers)
        assert status == 200, (headers, answer)


def test_the_cookie_stands_for_the_key_and_changes_need_the_csrf_token(server):
    cookie, csrf = sign_in(server)
    status, _, answer = server.request("GET", "/public/v1/integrations", {"Cookie": cookie})
    assert (status, json.loads(answer)) == (200, [])
    webhook = {"url": "https://n8n.example.com/hook"}
    status, _, answer = post(server, "/public/v1/webhooks", webhook, {"Cookie": cookie})
    assert status == 403 and "X-CSRF-Token" in json.loads(answer)["message"]
    status, _, answer = post(server, "/public/v1/webhooks", webhook, {"Cookie": cookie, "X-CSRF-Token": "0" * 32})
    assert status == 403 and "X-CSRF-Token" in json.loads(answer)["message"]
    status, _, _ = post(server, "/public/v1/webhooks", webhook, {"Cookie": cookie, "X-CSRF-Token": csrf})
    assert status == 201
    status, _, answer = server.request("GET", "/auth/session", {"Cookie": cookie})
    assert status == 200 and json.loads(answer)["csrfToken"] == csrf


def test_a_browser_without_a_session_cookie_is_told_so_without_an_error(server):
    # The page asks on its first load; a 401 there would be an error in every new visitor's console.
    status, headers, answer = server.request("GET", "/auth/session")
    assert (status, json.loads(answer)) == (200, {"signedIn": False})
    assert headers["cache-control"] == "no-store"
    cookie, csrf = sign_in(server)
    status, _, answer = server.request("GET", "/auth/session", {"Cookie": cookie})
    assert status == 200 and json.loads(answer)["signedIn"] is True and json.loads(answer)["csrfToken"] == csrf


def test_logout_ends_the_session(server):
    cookie, csrf = sign_in(server)
    status, headers, _ = server.request("POST", "/auth/logout", {"Cookie": cookie, "X-CSRF-Token": csrf})
    assert status == 204 and "Max-Age=0" in headers["set-cookie"]
    status, _, answer = server.request("GET", "/auth/session", {"Cookie": cookie})
    assert (status, json.loads(answer)) == (401, NOT_SIGNED_IN)
    status, _, answer = server.request("GET", "/public/v1/integrations", {"Cookie": cookie})
    assert status == 401 and json.loads(answer) == {"msg": "Your session has ended: sign in again"}


def test_behind_a_trusted_https_proxy_the_cookie_is_secure(start_server):
    server = start_server(env={"RUSTIZ_TRUSTED_PROXIES": "127.0.0.1"})
    status, headers, _ = post(server, "/auth/login", {"apiKey": server.key}, {"X-Forwarded-Proto": "https"})
    assert status == 200 and "Secure" in [part.strip() for part in headers["set-cookie"].split(";")]


def test_user_add_lets_an_email_sign_in_with_a_password(server):
    def add_user(email: str, password: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(server.pyz), "user", "add", email], input=password + "\n",
                              capture_output=True, text=True, env={**server.env()}, timeout=30)

    result = add_user("Alice@example.com", "correct horse battery")
    assert result.returncode == 0, result.stderr
    assert "alice@example.com can now sign in to the web app of organization My organization" in result.stderr
    assert "correct horse" not in result.stdout + result.stderr
    cookie, _ = sign_in(server, {"email": "alice@EXAMPLE.com", "password": "correct horse battery"})
    assert server.request("GET", "/public/v1/integrations", {"Cookie": cookie})[0] == 200
    status, _, answer = post(server, "/auth/login", {"email": "alice@example.com", "password": "wrong horse battery"})
    assert status == 401 and json.loads(answer)["message"] == "Wrong email or password"
    again = add_user("alice@example.com", "another long password")
    assert (again.returncode, again.stderr.strip()) == (2, "rustiz: alice@example.com already has a web app password")
    short = add_user("bob@example.com", "short")
    assert short.returncode == 2 and "at least 10 characters" in short.stderr
    assert run_cli(server.pyz, "user", "add", "not-an-email", env=server.env()).returncode == 2


def test_the_ui_is_served_with_etag_and_a_strict_content_security_policy(server):
    status, headers, page = server.request("GET", "/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8" and b"<html" in page.lower()
    policy = headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert headers["x-content-type-options"] == "nosniff"
    status, _, _ = server.request("GET", "/", {"If-None-Match": headers["etag"]})
    assert status == 304
    status, _, answer = server.request("GET", "/web/no-such-file.js")
    assert (status, json.loads(answer)["message"]) == (404, "Cannot GET /web/no-such-file.js")


def test_the_ui_s_text_files_go_compressed_to_browsers_that_accept_gzip(server):
    status, plain_headers, plain = server.request("GET", "/web/app.js")
    assert status == 200 and "content-encoding" not in plain_headers and plain_headers["vary"] == "Accept-Encoding"
    status, headers, packed = server.request("GET", "/web/app.js", {"Accept-Encoding": "gzip, deflate, br"})
    assert (status, headers["content-encoding"], headers["vary"]) == (200, "gzip", "Accept-Encoding")
    assert gzip.decompress(packed) == plain and len(packed) < len(plain) / 2
    assert headers["etag"] != plain_headers["etag"]  # each encoding its own validator
    status, again, _ = server.request("GET", "/web/app.js", {"Accept-Encoding": "gzip", "If-None-Match": headers["etag"]})
    assert (status, again["content-encoding"]) == (304, "gzip")
    status, headers, icon = server.request("GET", "/web/icon.svg", {"Accept-Encoding": "gzip"})
    assert status == 200 and b"<svg" in icon  # (too small to be worth compressing)


def add_user(server, *arguments: str, password: str = "") -> subprocess.CompletedProcess:
    """`rustiz user ARGUMENTS` against the server's database, the password on standard input."""
    return subprocess.run([sys.executable, str(server.pyz), "user", *arguments], input=password + "\n",
                          capture_output=True, text=True, env={**server.env()}, timeout=30)


def reads_and_writes(server, cookie: str, csrf: str) -> tuple:
    """(status of a read, status of a write) made with a session."""
    read = server.request("GET", "/public/v1/integrations", {"Cookie": cookie})[0]
    write = post(server, "/public/v1/webhooks", {"url": "https://n8n.example.com/hook"},
                 {"Cookie": cookie, "X-CSRF-Token": csrf})[0]
    return read, write


def test_rotating_the_key_ends_its_sessions_and_the_rotating_browser_gets_one_for_the_new_key(server):
    assert add_user(server, "add", "alice@example.com", password="correct horse battery").returncode == 0
    rotating, rotating_csrf = sign_in(server)
    other, other_csrf = sign_in(server)
    by_password, password_csrf = sign_in(server, {"email": "alice@example.com", "password": "correct horse battery"})
    status, headers, answer = post(server, "/public/v1/organization/api-key", {},
                                   {"Cookie": rotating, "X-CSRF-Token": rotating_csrf})
    assert status == 201
    body = json.loads(answer)
    assert set(body) == {"apiKey", "csrfToken"} and body["csrfToken"] != rotating_csrf
    renewed = headers["set-cookie"].partition(";")[0]
    assert renewed.startswith("rustiz_session=") and renewed != rotating
    assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
    # Every session made with the old key has ended: no reads, no writes, no new keys.
    for cookie, csrf in ((rotating, rotating_csrf), (other, other_csrf)):
        assert reads_and_writes(server, cookie, csrf) == (401, 401)
        status, _, answer = post(server, "/public/v1/organization/api-key", {},
                                 {"Cookie": cookie, "X-CSRF-Token": csrf})
        assert (status, json.loads(answer)) == (401, {"msg": "Your session has ended: sign in again"})
        status, _, answer = server.request("GET", "/auth/session", {"Cookie": cookie})
        assert (status, json.loads(answer)) == (401, NOT_SIGNED_IN)
    assert reads_and_writes(server, renewed, body["csrfToken"]) == (200, 201)
    status, _, answer = server.request("GET", "/auth/session", {"Cookie": renewed})
    assert status == 200 and json.loads(answer)["csrfToken"] == body["csrfToken"]
    assert reads_and_writes(server, by_password, password_csrf) == (200, 201)  # not made with the key


def test_rotating_with_the_key_itself_answers_only_the_new_key(server):
    status, headers, answer = post(server, "/public/v1/organization/api-key", {}, {"Authorization": server.key})
    assert status == 201 and set(json.loads(answer)) == {"apiKey"} and "set-cookie" not in headers


def test_key_rotate_on_the_command_line_ends_the_sessions_of_a_running_server(server):
    cookie, csrf = sign_in(server)
    assert reads_and_writes(server, cookie, csrf) == (200, 201)
    assert run_cli(server.pyz, "key", "rotate", env=server.env()).returncode == 0
    assert reads_and_writes(server, cookie, csrf) == (401, 401)
    sign_in(server)  # with the new key (server.key reads it from the config file)


def test_a_new_password_or_a_removed_user_ends_that_user_s_sessions(server):
    for email in ("alice@example.com", "bob@example.com"):
        assert add_user(server, "add", email, password="correct horse battery").returncode == 0
    alice = [sign_in(server, {"email": "alice@example.com", "password": "correct horse battery"}) for _ in range(2)]
    bob = sign_in(server, {"email": "bob@example.com", "password": "correct horse battery"})
    by_key = sign_in(server)

    result = add_user(server, "password", "Alice@example.com", password="a new long password")
    assert result.returncode == 0, result.stderr
    assert "alice@example.com has a new web app password" in result.stderr and "a new long" not in result.stderr
    assert [reads_and_writes(server, *session) for session in alice] == [(401, 401), (401, 401)]
    assert reads_and_writes(server, *bob) == (200, 201) and reads_and_writes(server, *by_key) == (200, 201)
    refused = post(server, "/auth/login", {"email": "alice@example.com", "password": "correct horse battery"})
    assert refused[0] == 401
    sign_in(server, {"email": "alice@example.com", "password": "a new long password"})

    result = add_user(server, "remove", "bob@example.com")
    assert result.returncode == 0, result.stderr
    assert "bob@example.com can no longer sign in to the web app of organization My organization" in result.stderr
    assert reads_and_writes(server, *bob) == (401, 401)
    status, _, answer = post(server, "/auth/login", {"email": "bob@example.com", "password": "correct horse battery"})
    assert (status, json.loads(answer)["message"]) == (401, "Wrong email or password")
    assert reads_and_writes(server, *by_key) == (200, 201)


def test_user_password_and_remove_name_a_user_that_does_not_exist(server):
    for arguments in (("password", "carol@example.com"), ("remove", "carol@example.com")):
        result = add_user(server, *arguments, password="a long enough password")
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert result.stderr.strip() == (
            "rustiz: carol@example.com is not a web app user of organization My organization ("
            + json.loads(server.request("GET", "/public/v1/organization", {"Authorization": server.key})[2])["id"]
            + "); `rustiz user add carol@example.com` makes one, --org ORG_ID chooses another organization")
    result = add_user(server, "remove", "carol@example.com", "--org", "no-such-org")
    assert result.returncode == 2 and "no organization has the id no-such-org" in result.stderr
    short = add_user(server, "password", "carol@example.com", password="short")
    assert short.returncode == 2 and "at least 10 characters" in short.stderr


def health_latencies_during(server, flood) -> tuple:
    """(what flood() returned, the slowest GET /health answered while it ran, in seconds)."""
    slowest, done = [0.0], threading.Event()

    def watch() -> None:
        while not done.is_set():
            started = time.monotonic()
            assert server.request("GET", "/health", timeout=30)[0] == 200
            slowest[0] = max(slowest[0], time.monotonic() - started)
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = flood()
    finally:
        done.set()
        watcher.join()
    return result, slowest[0]


def attempts_in_parallel(server, bodies: list, headers: list) -> list:
    """(status, headers, body) of a POST /auth/login for each body, all sent at once."""
    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(lambda pair: post(server, "/auth/login", *pair), zip(bodies, headers)))


def test_a_flood_of_wrong_passwords_is_limited_and_health_keeps_answering(server):
    assert add_user(server, "add", "alice@example.com", password="correct horse battery").returncode == 0
    wrong = [{"email": "alice@example.com", "password": f"guess number {n}"} for n in range(100)]
    answers, slowest = health_latencies_during(server, lambda: attempts_in_parallel(server, wrong, [{}] * 100))
    assert slowest < 1.0  # the hashing runs off the event loop (it held /health for 5.6 s)
    statuses = [status for status, _, _ in answers]
    assert statuses.count(401) == 10 and statuses.count(429) == 90  # 10 per email in 15 minutes
    refused = [(headers, json.loads(body)) for status, headers, body in answers if status == 429]
    assert all(1 <= int(headers["retry-after"]) <= 900 for headers, _ in refused)
    messages = {body["message"] for _, body in refused}
    assert "Too many sign-in attempts for alice@example.com (at most 10 in 15 minutes): try again in 15 min" \
        in messages
    assert "Too many sign-in attempts from your address (at most 30 in 15 minutes): try again in 15 min" in messages
    # The right password is refused too while the limit lasts; the API key still signs in.
    status, _, answer = post(server, "/auth/login", {"email": "alice@example.com", "password": "correct horse battery"})
    assert status == 429 and json.loads(answer)["message"].startswith("Too many sign-in attempts")
    sign_in(server)


def test_sign_ins_from_many_addresses_are_hashed_off_the_event_loop_a_bounded_number_at_once(start_server):
    server = start_server(env={"RUSTIZ_TRUSTED_PROXIES": "127.0.0.1"})
    users = [f"user{n}@example.com" for n in range(5)]
    for email in users:
        assert add_user(server, "add", email, password="correct horse battery").returncode == 0
    bodies = [{"email": users[n % 5] if n < 50 else f"nobody{n}@example.com", "password": "a wrong password"}
              for n in range(60)]  # at most 10 per known email
    addresses = [{"X-Forwarded-For": f"198.51.100.{n}"} for n in range(60)]  # under every per-address limit
    answers, slowest = health_latencies_during(server, lambda: attempts_in_parallel(server, bodies, addresses))
    assert slowest < 1.0
    statuses = [status for status, _, _ in answers]
    assert set(statuses) <= {401, 503} and statuses.count(401) >= 16, statuses
    for status, headers, body in answers:
        if status == 503:  # more than MAX_PASSWORD_CHECKS at once
            assert headers["retry-after"] == "5" and "Too many sign-ins at once" in json.loads(body)["message"]


def test_an_unknown_email_takes_as_long_to_refuse_as_a_known_one(start_server):
    server = start_server(env={"RUSTIZ_TRUSTED_PROXIES": "127.0.0.1"})
    assert add_user(server, "add", "alice@example.com", password="correct horse battery").returncode == 0
    timings: dict = {"known": [], "unknown": []}
    for n in range(9):  # interleaved, so a busy moment of the machine slows both alike
        for kind, email in (("known", "alice@example.com"), ("unknown", f"nobody{n}@example.com")):
            started = time.monotonic()
            status = post(server, "/auth/login", {"email": email, "password": "a wrong password"},
                          {"X-Forwarded-For": f"203.0.113.{n}"})[0]
            timings[kind].append(time.monotonic() - started)
            assert status == 401
    known, unknown = statistics.median(timings["known"]), statistics.median(timings["unknown"])
    assert unknown > known / 2 and known > unknown / 2, (known, unknown)  # before: 8 ms against 65 ms
