"""A Bluesky PDS as rustiz uses it: XRPC sessions (createSession, refreshSession, expiring access tokens),
profiles, handle resolution, blobs, and app.bsky.feed.post records under TID record keys. Error answers
are the PDS's: {"error": name, "message": text}, 401 AuthenticationRequired, 400 ExpiredToken,
500 on a second create at the same record key (as @atproto/pds answers), 429 with ratelimit-* headers.
It also serves a web page with Open Graph tags, for link cards."""
from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import time

from fakes import FakePlatform, FakeRequest, Reconnect, answer

TID = re.compile(r"[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}")
MAX_BLOB_BYTES = 1_000_000


def xrpc_error(status: int, name: str, message: str, headers: dict | None = None):
    return answer(status, {"error": name, "message": message}, headers)


def jwt(kind: str, did: str, lifetime: float) -> str:
    """A token shaped like the PDS's (HS256 JWT); the fake only compares it, rustiz only reads `exp`."""
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
    claims = {"scope": f"com.atproto.{kind}", "sub": did, "exp": int(time.time() + lifetime),
              "jti": secrets.token_hex(8)}
    return f"{part({'typ': kind, 'alg': 'HS256'})}.{part(claims)}.{secrets.token_hex(16)}"


def cid_of(data: bytes) -> str:
    return "bafyrei" + base64.b32encode(hashlib.sha256(data).digest()).decode().lower().rstrip("=")[:52]


class FakeBluesky(FakePlatform):
    def __init__(self, handle: str = "alice.test", password: str = "abcd-efgh-ijkl-mnop"):
        super().__init__()
        self.did, self.handle, self.password = "did:plc:alicealicealice1234", handle, password
        self.display_name, self.avatar = "Alice Example", "https://cdn.example/avatar/alice.jpg"
        self.handles = {handle: self.did, "bob.test": "did:plc:bobbobbobbob5678"}
        self.access_tokens: dict = {}  # token -> "ok" | "expired"
        self.refresh_tokens: set = set()
        self.access_lifetime = 7200.0
        self.blobs: dict = {}
        self.records: dict = {}  # rkey -> {"uri", "cid", "value"}
        self.logins = 0
        x = "/xrpc/"
        self.route("POST", x + "com.atproto.server.createSession", self.create_session)
        self.route("POST", x + "com.atproto.server.refreshSession", self.refresh_session)
        self.route("GET", x + "app.bsky.actor.getProfile", self.get_profile)
        self.route("GET", x + "app.bsky.feed.getPosts", self.get_posts)
        self.route("GET", x + "com.atproto.identity.resolveHandle", self.resolve_handle)
        self.route("POST", x + "com.atproto.repo.uploadBlob", self.upload_blob)
        self.route("POST", x + "com.atproto.repo.createRecord", self.create_record)
        self.route("GET", x + "com.atproto.repo.getRecord", self.get_record)
        self.deleted: list = []  # (issue 28: com.atproto.repo.deleteRecord, the record keys deleted in order)
        self.route("POST", x + "com.atproto.repo.deleteRecord", self.delete_record)
        self.route("GET", "/article", lambda request: answer(200, (
            "<html><head><title>Fallback title</title><meta property=\"og:title\" content=\"Rust &amp; SQLite\">"
            "<meta name='og:description' content='How rustiz stores posts'></head><body>hi</body></html>"),
            {"Content-Type": "text/html; charset=utf-8"}))

    env: dict = {}  # the PDS URL is in the credentials (`service`)

    def account(self) -> tuple:
        """(name, profile) of the channel credentials() connect: what this fake's account says."""
        return "Alice Example", "alice.test"

    def credentials(self, **changes) -> dict:
        return {"service": self.url, "identifier": self.handle, "password": self.password, **changes}

    # --- sessions --------------------------------------------------------------------------------

    def _new_session(self) -> dict:
        access, refresh = jwt("access", self.did, self.access_lifetime), jwt("refresh", self.did, 90 * 86400)
        self.access_tokens[access] = "ok"
        self.refresh_tokens.add(refresh)
        return {"accessJwt": access, "refreshJwt": refresh, "did": self.did, "handle": self.handle,
                "email": "alice@example.com", "active": True}

    def create_session(self, request: FakeRequest):
        body = request.json()
        if body.get("identifier") not in (self.handle, self.did) or body.get("password") != self.password:
            return xrpc_error(401, "AuthenticationRequired", "Invalid identifier or password")
        self.logins += 1
        return answer(200, self._new_session())

    def refresh_session(self, request: FakeRequest):
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if token not in self.refresh_tokens:
            return xrpc_error(400, "ExpiredToken", "Token has been revoked")
        self.refresh_tokens.discard(token)
        return answer(200, self._new_session())

    def expire_access_tokens(self) -> None:
        """What the PDS does after 2 h: every access token issued so far is refused with ExpiredToken."""
        for token in self.access_tokens:
            self.access_tokens[token] = "expired"

    def revoke_everything(self) -> None:
        """The app password was deleted: sessions die and the password no longer logs in."""
        self.expire_access_tokens()
        self.refresh_tokens.clear()
        self.password = "revoked-" + secrets.token_hex(4)

    def _auth_problem(self, request: FakeRequest):
        header = request.headers.get("authorization", "")
        if not header.startswith("Bearer "):
            return xrpc_error(401, "AuthMissing", "Authentication Required")
        state = self.access_tokens.get(header.removeprefix("Bearer "))
        if state is None:
            return xrpc_error(400, "InvalidToken", "Token could not be verified")
        if state == "expired":
            return xrpc_error(400, "ExpiredToken", "Token has expired")
        return None

    # --- reads ---------------------------------------------------------------------------------

    def get_profile(self, request: FakeRequest):
        problem = self._auth_problem(request)
        if problem:
            return problem
        if request.query.get("actor") not in (self.did, self.handle):
            return xrpc_error(400, "InvalidRequest", "Profile not found")
        return answer(200, {"did": self.did, "handle": self.handle, "displayName": self.display_name,
                            "avatar": self.avatar, "postsCount": len(self.records), "followersCount": 420,
                            "followsCount": 42})

    def get_posts(self, request: FakeRequest):
        """The AppView's post view, with its counts (as a PDS proxies app.bsky.* to the AppView)."""
        problem = self._auth_problem(request)
        if problem:
            return problem
        uri = request.query.get("uris", "")
        known = [record for record in self.records.values() if record["uri"] == uri]
        return answer(200, {"posts": [{"uri": uri, "cid": record["cid"], "likeCount": 11, "repostCount": 4,
                                       "replyCount": 1, "quoteCount": 0} for record in known]})

    def resolve_handle(self, request: FakeRequest):
        did = self.handles.get(request.query.get("handle", ""))
        if did is None:
            return xrpc_error(400, "InvalidRequest", "Unable to resolve handle")
        return answer(200, {"did": did})

    def get_record(self, request: FakeRequest):
        record = self.records.get(request.query.get("rkey"))
        if record is None or request.query.get("repo") != self.did:
            return xrpc_error(400, "RecordNotFound", f"Could not locate record: {request.query.get('rkey')}")
        return answer(200, record)

    # --- writes --------------------------------------------------------------------------------

    def upload_blob(self, request: FakeRequest):
        problem = self._auth_problem(request)
        if problem:
            return problem
        if len(request.body) > MAX_BLOB_BYTES:
            return xrpc_error(400, "BlobTooLarge", "This file is too large. It is 1.1MB but the maximum size is 1MB.")
        cid = cid_of(request.body)
        self.blobs[cid] = (request.headers.get("content-type"), request.body)
        return answer(200, {"blob": {"$type": "blob", "ref": {"$link": cid},
                                     "mimeType": request.headers.get("content-type"), "size": len(request.body)}})

    def create_record(self, request: FakeRequest):
        problem = self._auth_problem(request)
        if problem:
            return problem
        body = request.json()
        record, rkey = body.get("record") or {}, body.get("rkey") or f"3l{len(self.records):011d}"
        if body.get("repo") != self.did:
            return xrpc_error(401, "AuthenticationRequired", "Authentication Required")
        if not TID.fullmatch(rkey):
            return xrpc_error(400, "InvalidRequest", f'Invalid record key for app.bsky.feed.post: Invalid TID '
                                                     f'string (got "{rkey}") at $')
        if len(record.get("text", "").encode()) > 3000:
            return xrpc_error(400, "InvalidRequest", "Invalid app.bsky.feed.post record: string too big "
                                                     "(maximum 3000) at $.text")
        for image in (record.get("embed") or {}).get("images", []):
            if image["image"]["ref"]["$link"] not in self.blobs:
                return xrpc_error(400, "InvalidRequest", "Could not find blob: " + image["image"]["ref"]["$link"])
        if rkey in self.records:  # @atproto/pds: the repository refuses a second value at the key
            return xrpc_error(500, "InternalServerError", "Internal Server Error")
        uri = f"at://{self.did}/app.bsky.feed.post/{rkey}"
        stored = {"uri": uri, "cid": cid_of(json.dumps(record, sort_keys=True).encode()), "value": record}
        self.records[rkey] = stored
        self.published.append({"rkey": rkey, **stored})
        return answer(200, {"uri": uri, "cid": stored["cid"], "commit": {"cid": cid_of(uri.encode()), "rev": rkey},
                            "validationStatus": "valid"})

    def delete_record(self, request: FakeRequest):
        """As @atproto/pds: the repo must be the session's; a record key it does not have deletes nothing, and
        answers 200 all the same."""
        problem = self._auth_problem(request)
        if problem:
            return problem
        body = request.json()
        if body.get("repo") != self.did:
            return xrpc_error(401, "AuthenticationRequired", "Authentication Required")
        if body.get("collection") != "app.bsky.feed.post" or not TID.fullmatch(str(body.get("rkey"))):
            return xrpc_error(400, "InvalidRequest", "Invalid record key")
        if self.records.pop(body["rkey"], None) is not None:
            self.deleted.append(body["rkey"])
        return answer(200, {"commit": {"cid": cid_of(body["rkey"].encode()), "rev": body["rkey"]}})


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeBluesky


def credentials_at(url: str) -> dict:
    """Credentials that aim a channel at `url`."""
    return {"service": url, "identifier": "alice.test", "password": "app-password"}


def _renew(fake, extras):
    fake.revoke_everything()  # the app password deleted, a new one made
    return fake.credentials()


def _other_account(fake, extras):
    other = extras(FakeBluesky(handle="bob.test"))
    other.did = "did:plc:bobbobbobbob5678"
    return other.credentials()


RECONNECT = Reconnect(_renew, lambda fake: fake.credentials(password="not-the-app-password"),
                      "Invalid identifier or password", _other_account)
