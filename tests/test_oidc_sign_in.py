"""Single sign-on against a real OpenID Connect provider (npm's oidc-provider, tests/oidc_provider/): a member
signs in end to end; tampered ID tokens, replayed or foreign states, unverified e-mails and people who are no
member are refused with a code the sign-in page words; RUSTIZ_OIDC_ONLY=1 turns passwords off. On both backends."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import run_cli
from oidc_provider import Browser, OidcProvider, missing_reason
from support import connect_database, wait_for

MEMBER, STRANGER = "ana@example.org", "bob@example.org"
PASSWORD = "a long enough password"

needs_provider = pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))


@pytest.fixture(scope="module")
def provider():
    if missing_reason():
        pytest.skip(missing_reason())
    started = OidcProvider().start()
    yield started
    started.stop()


def add_member(server, email: str) -> None:
    """A web user with a password, a member (admin) of the server's organization."""
    result = subprocess.run([sys.executable, str(server.pyz), "user", "add", email], input=PASSWORD + "\n",
                            capture_output=True, text=True, env=server.env(), timeout=30)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def server(provider, start_module_server):
    started = start_module_server(env=provider.env)
    add_member(started, MEMBER)
    return started


def refusal(answer) -> dict:
    """The sign-in page's query that a refused sign-in redirects to: {"sso": code, "email"?: ...}."""
    assert answer.status == 302, (answer.status, answer.body)
    path, _, query = answer.location.partition("#")[2].partition("?")
    assert path == "/login", answer.location
    return {name: values[0] for name, values in parse_qs(query).items()}


def session_of(server, browser: Browser) -> dict:
    return browser.get(server.url + "/auth/session").json()


def login(server, body: dict):
    return Browser().request("POST", server.url + "/auth/login", json.dumps(body).encode(),
                             {"Content-Type": "application/json"})


def test_a_member_signs_in_through_the_provider(server):
    browser = Browser()
    answer = browser.sign_in(server.url, MEMBER)
    assert answer.status == 302 and answer.location == server.url + "/"
    assert browser.cookie("rustiz_session") and browser.cookie("rustiz_oidc") is None
    session = session_of(server, browser)
    assert session["signedIn"] is True and session["organization"]["name"] == "My organization"
    assert session["user"]["email"] == MEMBER and session["role"] == "admin"
    assert browser.get(server.url + "/public/v1/integrations").status == 200
    wait_for(lambda: "".join(server.stderr_lines), lambda log: "single sign-on: ana@example.org signed in" in log,
             timeout=5)


def test_the_start_carries_pkce_state_and_nonce(server):
    browser = Browser()
    answer = browser.get(server.url + "/auth/oidc/start")
    query = {name: values[0] for name, values in parse_qs(urlsplit(answer.location).query).items()}
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert len(query["state"]) >= 43 and len(query["nonce"]) >= 43 and query["state"] != query["nonce"]
    assert query["redirect_uri"] == server.url + "/auth/oidc/callback" and "email" in query["scope"].split()
    cookie = answer.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/auth/oidc" in cookie


@pytest.mark.parametrize("tamper, code", [("audience", "token-audience"), ("expired", "token-expired"),
                                          ("signature", "token-signature"), ("nonce", "token-nonce"),
                                          ("issuer", "token-issuer"), ("none", "token-algorithm")])
def test_a_tampered_id_token_is_refused(server, tamper, code):
    browser = Browser()
    assert refusal(browser.sign_in(server.url, f"{MEMBER}#{tamper}")) == {"sso": code}
    assert browser.cookie("rustiz_session") is None
    assert session_of(server, browser) == {"signedIn": False}


def test_an_unverified_email_is_refused(server):
    answer = Browser().sign_in(server.url, f"unverified:{MEMBER}")
    assert refusal(answer) == {"sso": "unverified", "email": MEMBER}


def test_a_person_who_is_no_member_is_refused_and_told_whom_to_ask(server):
    assert refusal(Browser().sign_in(server.url, STRANGER)) == {"sso": "not-member", "email": STRANGER}


def test_a_state_is_good_once(server):
    browser = Browser()
    callback = browser.to_callback(server.url, MEMBER)
    assert browser.get(callback).location == server.url + "/"
    assert refusal(browser.get(callback)) == {"sso": "expired"}
    assert refusal(browser.get(server.url + "/auth/oidc/callback?code=x&state=made-up")) == {"sso": "expired"}
    assert refusal(browser.get(server.url + "/auth/oidc/callback")) == {"sso": "expired"}
    assert refusal(browser.get(server.url + "/auth/oidc/callback?code=x&state=%00" + "a" * 42)) == {"sso": "expired"}


def test_a_sign_in_left_past_its_ten_minutes_is_refused(server):
    browser = Browser()
    callback = browser.to_callback(server.url, MEMBER)
    state = parse_qs(urlsplit(callback).query)["state"][0]
    with connect_database(server.database) as db:
        db.execute("UPDATE oidc_flow SET expires_at = ? WHERE state = ?", (time.time() - 1, state))
    assert refusal(browser.get(callback)) == {"sso": "expired"}
    assert browser.cookie("rustiz_session") is None


def test_a_sign_in_finishes_only_in_the_browser_that_started_it(server):
    callback = Browser().to_callback(server.url, MEMBER)
    other = Browser()  # (a link sent to someone else: login CSRF)
    assert refusal(other.get(callback)) == {"sso": "other-browser"}
    assert other.cookie("rustiz_session") is None


def test_a_refusal_at_the_provider_is_said(server):
    browser = Browser()
    callback = browser.to_callback(server.url, MEMBER)
    state = parse_qs(urlsplit(callback).query)["state"][0]
    answer = browser.get(f"{server.url}/auth/oidc/callback?error=access_denied&state={state}")
    assert refusal(answer) == {"sso": "denied"}


def test_the_sign_in_page_learns_the_ways_to_sign_in(server):
    assert Browser().get(server.url + "/auth/methods").json() == {"password": True, "sso": {"name": None}}


def test_passwords_still_work_beside_single_sign_on(server):
    assert login(server, {"email": MEMBER, "password": PASSWORD}).status == 200


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(query=st.dictionaries(st.sampled_from(["code", "state", "error", "iss", "session_state"]),
                             st.text(max_size=200), max_size=4))
def test_fuzzed_callbacks_are_refused_without_a_server_error(server, query):
    from urllib.parse import urlencode
    answer = Browser().get(f"{server.url}/auth/oidc/callback?{urlencode(query)}")
    assert answer.status == 302 and "#/login?sso=" in answer.location


# --- servers of their own ----------------------------------------------------------------------------------------

@needs_provider
def test_a_member_of_two_organizations_lands_where_a_password_would(provider, start_server):
    server = start_server(env=provider.env)
    add_member(server, MEMBER)
    assert run_cli(server.pyz, "org", "add", "Another agency", env=server.env()).returncode == 0
    with connect_database(server.database) as db:  # ana becomes a viewer there (as an accepted invite would make her)
        db.execute("INSERT INTO membership (user_id, organization_id, role, created_at) SELECT u.id, o.id, 'viewer', "
                   "'2000-01-01T00:00:00.000Z' FROM web_user u, organization o WHERE u.email = ? AND o.name = ?",
                   (MEMBER, "Another agency"))
    browser = Browser()
    browser.sign_in(server.url, MEMBER)
    session = session_of(server, browser)
    assert session["organization"]["name"] == "My organization" and session["role"] == "admin"
    assert sorted(org["name"] for org in session["organizations"]) == ["Another agency", "My organization"]
    with connect_database(server.database) as db:  # no longer a member of the organization she first joined
        db.execute("DELETE FROM membership WHERE role = 'admin' AND user_id = "
                   "(SELECT id FROM web_user WHERE email = ?)", (MEMBER,))
    browser = Browser()
    browser.sign_in(server.url, MEMBER)
    session = session_of(server, browser)
    assert session["organization"]["name"] == "Another agency" and session["role"] == "viewer"
    with connect_database(server.database) as db:
        db.execute("DELETE FROM membership WHERE user_id = (SELECT id FROM web_user WHERE email = ?)", (MEMBER,))
    assert refusal(Browser().sign_in(server.url, MEMBER)) == {"sso": "not-member", "email": MEMBER}


@needs_provider
def test_only_single_sign_on_when_passwords_are_off(provider, start_server):
    server = start_server(env={**provider.env, "RUSTIZ_OIDC_ONLY": "1", "RUSTIZ_OIDC_NAME": "Acme ID"})
    add_member(server, MEMBER)
    refused = login(server, {"email": MEMBER, "password": PASSWORD})
    assert refused.status == 403 and "single sign-on" in refused.json()["message"]
    assert login(server, {"apiKey": server.key}).status == 200  # (the operator's key still opens the web app)
    assert Browser().get(server.url + "/auth/methods").json() == {"password": False, "sso": {"name": "Acme ID"}}
    assert Browser().sign_in(server.url, MEMBER).location == server.url + "/"


def test_without_settings_there_is_no_single_sign_on(start_server):
    server = start_server()
    browser = Browser()
    assert browser.get(server.url + "/auth/methods").json() == {"password": True, "sso": None}
    answer = browser.get(server.url + "/auth/oidc/start")
    assert answer.status == 404 and "RUSTIZ_OIDC_ISSUER" in answer.json()["message"]
    assert browser.get(server.url + "/auth/oidc/callback?code=a&state=b").status == 404


@needs_provider
def test_es256_client_secret_post_and_the_email_from_userinfo(start_server):
    provider = OidcProvider(alg="ES256", auth_method="client_secret_post", email_in_id_token=False).start()
    try:
        server = start_server(env=provider.env)
        add_member(server, MEMBER)
        browser = Browser()
        assert browser.sign_in(server.url, MEMBER).location == server.url + "/"
        assert session_of(server, browser)["signedIn"] is True
        assert refusal(Browser().sign_in(server.url, f"unverified:{MEMBER}"))["sso"] == "unverified"
        assert refusal(Browser().sign_in(server.url, f"{MEMBER}#signature")) == {"sso": "token-signature"}
    finally:
        provider.stop()


@needs_provider
def test_new_keys_of_the_issuer_are_fetched_again(start_server):
    provider = OidcProvider().start()
    try:
        server = start_server(env=provider.env)
        add_member(server, MEMBER)
        assert Browser().sign_in(server.url, MEMBER).location == server.url + "/"  # (keys now kept)
        provider.stop()
        provider = OidcProvider(port=provider.port).start()  # the same issuer, a new key and kid
        assert Browser().sign_in(server.url, MEMBER).location == server.url + "/"
    finally:
        provider.stop()


def test_an_unreachable_issuer_is_said_on_the_sign_in_page(start_server):
    import socket
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    server = start_server(env={"RUSTIZ_OIDC_ISSUER": f"http://127.0.0.1:{port}", "RUSTIZ_OIDC_CLIENT_ID": "c",
                               "RUSTIZ_OIDC_CLIENT_SECRET": "s", "RUSTIZ_FETCH_ALLOW": "127.0.0.1"})
    assert refusal(Browser().get(server.url + "/auth/oidc/start")) == {"sso": "unreachable"}


def test_a_private_issuer_is_refused_by_the_address_guard(start_server):
    server = start_server(env={"RUSTIZ_OIDC_ISSUER": "http://127.0.0.1:9", "RUSTIZ_OIDC_CLIENT_ID": "c",
                               "RUSTIZ_OIDC_CLIENT_SECRET": "s"})
    assert refusal(Browser().get(server.url + "/auth/oidc/start")) == {"sso": "unreachable"}
    wait_for(lambda: "".join(server.stderr_lines), lambda log: "RUSTIZ_FETCH_ALLOW" in log, timeout=5)


@pytest.mark.parametrize("settings_, words", [
    ({"RUSTIZ_OIDC_ONLY": "1"}, "RUSTIZ_OIDC_ONLY=1 needs RUSTIZ_OIDC_ISSUER"),
    ({"RUSTIZ_OIDC_ISSUER": "id.example.org", "RUSTIZ_OIDC_CLIENT_ID": "c", "RUSTIZ_OIDC_CLIENT_SECRET": "s"},
     "RUSTIZ_OIDC_ISSUER='id.example.org'"),
    ({"RUSTIZ_OIDC_ISSUER": "https://id.example.org"}, "needs RUSTIZ_OIDC_CLIENT_ID and RUSTIZ_OIDC_CLIENT_SECRET"),
])
def test_settings_that_cannot_work_stop_the_server_at_start(tmp_path, pyz, settings_, words):
    assert run_cli(pyz, "init", "--dir", str(tmp_path)).returncode == 0
    result = run_cli(pyz, "serve", env={"RUSTIZ_CONFIG": str(tmp_path / "config.env"), "PORT": "0", **settings_})
    assert result.returncode != 0 and words in result.stderr


def test_a_person_made_by_single_sign_on_has_no_password_that_matches():
    from rustiz_features.oidc import NO_PASSWORD_HASH
    from rustiz_features.web import password_matches
    for password in ("", "single-sign-on", "0" * 64, PASSWORD):
        assert password_matches(password, NO_PASSWORD_HASH) is False


class HostileIssuer:
    """An issuer whose discovery document is whatever the test sets (`document`: bytes), on loopback."""

    def __init__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = issuer.document
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *arguments):
                pass

        self.document = b"{}"
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_hostile_discovery_document_is_refused_and_starts_are_counted(start_server):
    issuer = HostileIssuer()
    try:
        server = start_server(env={"RUSTIZ_OIDC_ISSUER": issuer.url, "RUSTIZ_OIDC_CLIENT_ID": "c",
                                   "RUSTIZ_OIDC_CLIENT_SECRET": "s", "RUSTIZ_FETCH_ALLOW": "127.0.0.1"})
        well_formed = {"issuer": issuer.url, "authorization_endpoint": issuer.url + "/auth",
                       "token_endpoint": issuer.url + "/token", "jwks_uri": issuer.url + "/jwks"}
        for document, code in [
                (b"[" * 100_000, "unreachable"),  # nested past the JSON parser's depth
                (b'{"issuer": "' + b"x" * 300_000 + b'"}', "unreachable"),  # larger than a document may be
                (b"<html>not JSON</html>", "unreachable"),
                (json.dumps({**well_formed, "issuer": "https://another.example"}).encode(), "setup"),
                (json.dumps({**well_formed, "token_endpoint": "javascript:alert(1)"}).encode(), "setup"),
                (json.dumps({**well_formed, "jwks_uri": "http://[::1/jwks"}).encode(), "setup"),
                (json.dumps({**well_formed, "authorization_endpoint": ["a"]}).encode(), "setup"),
                (json.dumps({**well_formed, "token_endpoint_auth_methods_supported": ["private_key_jwt"]}).encode(),
                 "setup")]:
            issuer.document = document
            assert refusal(Browser().get(server.url + "/auth/oidc/start")) == {"sso": code}, document[:60]
        issuer.document = json.dumps(well_formed).encode()
        answers = [Browser().get(server.url + "/auth/oidc/start") for _ in range(60)]
        assert answers[-1].status == 429 and "Too many sign-ins" in answers[-1].json()["message"]
        assert all(answer.status == 302 and answer.location.startswith(issuer.url + "/auth?")
                   for answer in answers[:51])
    finally:
        issuer.close()


def test_an_issuer_that_ends_with_a_slash_is_found_as_it_spells_itself(start_server):
    issuer = HostileIssuer()
    try:
        issuer.document = json.dumps({"issuer": issuer.url + "/", "authorization_endpoint": issuer.url + "/auth",
                                      "token_endpoint": issuer.url + "/token",
                                      "jwks_uri": issuer.url + "/jwks"}).encode()
        server = start_server(env={"RUSTIZ_OIDC_ISSUER": issuer.url + "/", "RUSTIZ_OIDC_CLIENT_ID": "c",
                                   "RUSTIZ_OIDC_CLIENT_SECRET": "s", "RUSTIZ_FETCH_ALLOW": "127.0.0.1"})
        assert Browser().get(server.url + "/auth/oidc/start").location.startswith(issuer.url + "/auth?")
    finally:
        issuer.close()
