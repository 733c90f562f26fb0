"""Neynar's Farcaster API as rustiz uses it (issue 28): GET /v2/farcaster/signer (a signer is this app's, and
approved or not), GET /v2/farcaster/user/bulk, POST /v2/farcaster/cast (embeds, channel_id, parent, idem: a
repeated idem answers the first cast), DELETE /v2/farcaster/cast, GET /v2/farcaster/cast (a cast's counts),
GET /v2/farcaster/channel/search; every call needs the app's x-api-key; errors in Neynar's shape
{"code", "message", "property"}. Sign In With Neynar itself happens in a browser window (postMessage), so
`sign_in()` stands for it: it makes an approved signer and returns the code rustiz's connect page builds."""
from __future__ import annotations

import base64
import itertools
import json
import secrets
import uuid

from fakes import FakePlatform, FakeRequest, answer

UNAUTHORIZED = {"code": "Unauthorized", "message": "Invalid or missing API key"}


class FakeNeynar(FakePlatform):
    def __init__(self):
        super().__init__()
        self.client_id, self.api_key = str(uuid.uuid4()), "NEYNAR-" + secrets.token_hex(8).upper()
        self.signers: dict = {}  # signer_uuid -> {"status", "fid"}
        self.users = {6841: {"fid": 6841, "username": "ada", "display_name": "Ada Lovelace",
                             "pfp_url": "https://i.imgur.com/ada.png", "follower_count": 420, "following_count": 42}}
        self.channels = [{"id": "rustiz", "name": "rustiz", "follower_count": 12},
                         {"id": "rust", "name": "Rust", "follower_count": 9000}]
        self.casts: dict = {}  # hash -> cast
        self.by_idem: dict = {}
        self.deleted: list = []
        self.hashes = itertools.count(0xA11CE)
        self.route("GET", "/login", self.login_window)
        self.route("GET", "/v2/farcaster/signer", self.signer)
        self.route("GET", "/v2/farcaster/user/bulk", self.user_bulk)
        self.route("POST", "/v2/farcaster/cast", self.post_cast)
        self.route("DELETE", "/v2/farcaster/cast", self.delete_cast)
        self.route("GET", "/v2/farcaster/cast", self.lookup_cast)
        self.route("GET", "/v2/farcaster/channel/search", self.channel_search)

    @property
    def env(self) -> dict:
        return {"RUSTIZ_WRAPCAST_AUTH_URL": self.url, "RUSTIZ_WRAPCAST_API_URL": self.url,
                "NEYNAR_CLIENT_ID": self.client_id, "NEYNAR_SECRET_KEY": self.api_key}

    def sign_in(self, fid: int = 6841, status: str = "approved") -> str:
        """What Sign In With Neynar gives the connect page, as the code it sends to rustiz's callback."""
        signer_uuid = str(uuid.uuid4())
        self.signers[signer_uuid] = {"status": status, "fid": fid}
        return base64.b64encode(json.dumps({"signer_uuid": signer_uuid, "fid": fid}).encode()).decode()

    def login_window(self, request: FakeRequest):
        """Sign In With Neynar's window, the user signed in and allowing at once: it tells the page that opened
        it, by postMessage, as Neynar's does (the browser tests)."""
        if request.query.get("client_id") != self.client_id:
            return answer(400, "<p>Unknown client_id</p>", {"Content-Type": "text/html; charset=utf-8"})
        signer_uuid = json.loads(base64.b64decode(self.sign_in()))["signer_uuid"]
        message = json.dumps({"is_authenticated": True, "signer_uuid": signer_uuid,
                              "user": {"fid": 6841, "username": "ada", "display_name": "Ada Lovelace"}})
        return answer(200, f"<p>Signed in</p><script>window.opener.postMessage({message}, '*');</script>",
                      {"Content-Type": "text/html; charset=utf-8"})

    def _refused(self, request: FakeRequest):
        return None if request.headers.get("x-api-key") == self.api_key else answer(401, UNAUTHORIZED)

    def _signer_of(self, signer_uuid):
        signer = self.signers.get(signer_uuid)
        if signer is None:
            return None, answer(404, {"code": "NotFound", "message": "Signer not found", "property": "signer_uuid"})
        if signer["status"] != "approved":
            return None, answer(403, {"code": "Forbidden", "message": f"Signer is {signer['status']}, not approved"})
        return signer, None

    def signer(self, request: FakeRequest):
        refused = self._refused(request)
        signer = self.signers.get(request.query.get("signer_uuid"))
        if refused or signer is None:
            return refused or answer(404, {"code": "NotFound", "message": "Signer not found", "property": "signer_uuid"})
        return answer(200, {"signer_uuid": request.query["signer_uuid"], "public_key": "0x" + "ab" * 32,
                            "status": signer["status"], **({"fid": signer["fid"]} if signer["status"] == "approved" else {})})

    def user_bulk(self, request: FakeRequest):
        refused = self._refused(request)
        users = [self.users[int(fid)] for fid in request.query.get("fids", "").split(",") if fid.isdigit()
                 and int(fid) in self.users]
        return refused or answer(200, {"users": users})

    def post_cast(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return refused
        body = request.json()
        signer, refusal = self._signer_of(body.get("signer_uuid"))
        if refusal:
            return refusal
        if body.get("idem") in self.by_idem:
            return answer(200, {"success": True, "cast": self.casts[self.by_idem[body["idem"]]]})
        problem = self._cast_problem(body)
        if problem:
            return answer(400, {"code": "InvalidField", "message": problem[1], "property": problem[0]})
        cast_hash = f"0x{next(self.hashes):040x}"
        cast = {"hash": cast_hash, "author": {"fid": signer["fid"], "username": self.users[signer["fid"]]["username"]},
                "text": body.get("text", ""), "embeds": body.get("embeds") or [], "channel_id": body.get("channel_id"),
                "parent_hash": body.get("parent")}
        self.casts[cast_hash] = cast
        if body.get("idem"):
            self.by_idem[body["idem"]] = cast_hash
        self.published.append(cast)
        return answer(200, {"success": True, "cast": cast})

    def _cast_problem(self, body: dict):
        if len((body.get("text") or "").encode()) > 1024:
            return "text", "Text is too long: a cast takes 1024 bytes at most"
        if len(body.get("embeds") or []) > 2:
            return "embeds", "A cast takes at most 2 embeds"
        if body.get("channel_id") and body["channel_id"] not in {channel["id"] for channel in self.channels}:
            return "channel_id", f"Channel {body['channel_id']} not found"
        if body.get("parent") and body["parent"] not in self.casts:
            return "parent", "Parent cast not found"
        return None

    def delete_cast(self, request: FakeRequest):
        refused = self._refused(request)
        if refused:
            return refused
        body = request.json()
        _, refusal = self._signer_of(body.get("signer_uuid"))
        if refusal:
            return refusal
        if self.casts.pop(body.get("target_hash"), None) is None:
            return answer(404, {"code": "NotFound", "message": "Cast not found", "property": "target_hash"})
        self.deleted.append(body["target_hash"])
        return answer(200, {"success": True, "message": "Cast deleted"})

    def lookup_cast(self, request: FakeRequest):
        refused = self._refused(request)
        cast = self.casts.get(request.query.get("identifier"))
        if refused or cast is None:
            return refused or answer(404, {"code": "NotFound", "message": "Cast not found"})
        return answer(200, {"cast": {**cast, "reactions": {"likes_count": 5, "recasts_count": 2},
                                     "replies": {"count": 1}}})

    def channel_search(self, request: FakeRequest):
        refused = self._refused(request)
        word = request.query.get("q", "").lower()
        found = [channel for channel in self.channels if word in channel["id"] or word in channel["name"].lower()]
        return refused or answer(200, {"channels": found[:int(request.query.get("limit", "20"))]})
