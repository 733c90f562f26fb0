"""A real OpenID Connect provider (npm's oidc-provider, run by provider.mjs beside this file) and a cookie-keeping
HTTP "browser" that walks the sign-in between it and rustiz, one redirect at a time.

run_tests.sh installs oidc-provider into .peers/oidc and exports RUSTIZ_TEST_OIDC_PROVIDER (that folder); without
node, or without the install, the tests that need the provider are skipped and say why.
"""
from __future__ import annotations

import http.cookiejar
import json
import os
import shutil
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode, urljoin, urlsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CLIENT_ID, CLIENT_SECRET = "rustiz-tests", "a-client-secret-for-the-tests"


def peers_folder() -> Path:
    return Path(os.environ.get("RUSTIZ_TEST_OIDC_PROVIDER") or ROOT / ".peers" / "oidc")


def missing_reason() -> str | None:
    """Why the real provider cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed (the real OIDC provider, npm's oidc-provider, runs on it)"
    if not (peers_folder() / "node_modules" / "oidc-provider").is_dir():
        return f"npm's oidc-provider is not installed in {peers_folder()} (run_tests.sh installs it)"
    return None


class OidcProvider:
    """provider.mjs on a free loopback port: `issuer` once started; `env` is what a rustiz server needs to use it."""

    def __init__(self, alg: str = "RS256", auth_method: str = "client_secret_basic", email_in_id_token: bool = True,
                 port: int = 0, default_account: str = ""):
        self.settings = {"OIDC_PEERS": str(peers_folder()), "PORT": str(port), "CLIENT_ID": CLIENT_ID,
                         "CLIENT_SECRET": CLIENT_SECRET, "ID_TOKEN_ALG": alg, "AUTH_METHOD": auth_method,
                         "EMAIL_IN_ID_TOKEN": "1" if email_in_id_token else "0", "DEFAULT_ACCOUNT": default_account}
        self.process: subprocess.Popen | None = None
        self.issuer = ""
        self.stderr: list[str] = []

    def start(self) -> "OidcProvider":
        self.process = subprocess.Popen(["node", str(HERE / "provider.mjs")], env={**os.environ, **self.settings},
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True).start()
        line = self.process.stdout.readline()
        if not line.startswith("{"):
            self.stop()
            raise RuntimeError(f"the OIDC provider did not start: {line}{''.join(self.stderr)}")
        self.issuer = json.loads(line)["issuer"]
        return self

    @property
    def port(self) -> int:
        return urlsplit(self.issuer).port

    @property
    def env(self) -> dict:
        return {"RUSTIZ_OIDC_ISSUER": self.issuer, "RUSTIZ_OIDC_CLIENT_ID": CLIENT_ID,
                "RUSTIZ_OIDC_CLIENT_SECRET": CLIENT_SECRET, "RUSTIZ_FETCH_ALLOW": "127.0.0.1"}

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


class Answer:
    def __init__(self, status: int, headers, body: bytes):
        self.status, self.headers, self.body = status, headers, body

    @property
    def location(self) -> str:
        return self.headers.get("Location", "")

    def json(self):
        return json.loads(self.body)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *arguments, **keywords):
        return None


class Browser:
    """Keeps cookies as a browser would (per host, path and expiry) and follows no redirect by itself."""

    def __init__(self):
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirects(),
                                                  urllib.request.HTTPCookieProcessor(self.cookies))

    def get(self, url: str, headers: dict | None = None) -> Answer:
        return self.request("GET", url, headers=headers)

    def request(self, method: str, url: str, body: bytes | None = None, headers: dict | None = None) -> Answer:
        request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
        try:
            with self.opener.open(request, timeout=30) as reply:
                return Answer(reply.status, reply.headers, reply.read())
        except urllib.error.HTTPError as reply:
            return Answer(reply.code, reply.headers, reply.read())

    def cookie(self, name: str) -> str | None:
        return next((cookie.value for cookie in self.cookies if cookie.name == name), None)

    def to_callback(self, rustiz_url: str, account: str) -> str:
        """Start rustiz's sign-in and walk the provider's pages as `account`: the URL of rustiz's callback
        that the provider sends this browser to (not yet opened)."""
        answer = self.get(rustiz_url + "/auth/oidc/start")
        assert answer.status == 302, (answer.status, answer.body)
        url = answer.location
        for _ in range(10):
            if url.startswith(rustiz_url + "/auth/oidc/callback"):
                return url
            if "/interaction/" in urlsplit(url).path and "account=" not in url:
                url += ("&" if "?" in url else "?") + urlencode({"account": account})
            answer = self.get(url)
            assert answer.status in (302, 303), (url, answer.status, answer.body[:500])
            url = urljoin(url, answer.location)
        raise AssertionError(f"the provider never sent the browser back to rustiz (last at {url})")

    def sign_in(self, rustiz_url: str, account: str) -> Answer:
        """The whole sign-in: rustiz's answer at its callback (a redirect to the web app, or to its sign-in page)."""
        return self.get(self.to_callback(rustiz_url, account))
