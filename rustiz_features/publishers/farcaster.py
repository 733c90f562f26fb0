"""Farcaster (Postiz's `wrapcast`) through Neynar, as Postiz does it: the operator's Neynar app
(NEYNAR_CLIENT_ID, NEYNAR_SECRET_KEY), Sign In With Neynar for the user's signer, casts with embeds, in
Farcaster channels, thread parts as replies, the `subreddits` tool as a channel search, deleting casts.

Rules of this module:
- Connecting: Sign In With Neynar answers the web page that opened it (a postMessage to an origin the operator
  authorized, never a redirect), so the consent URL is rustiz's own page web/farcaster-connect.html, which
  opens Neynar's login and then comes back to the usual callback with Postiz's `code` (the user's signer and
  fid, base64 JSON) and the flow's state. That code is a claim, not a proof: the signer is looked up with the
  operator's key and must be approved, and the account is read for the fid Neynar gives, not the browser's.
- The signer (its uuid) is the channel's access token; it does not expire, and has no refresh. A signer Neynar
  no longer knows or that is revoked needs a new sign-in.
- Every call carries the operator's key (x-api-key); casts carry `idem` (derived from the part's idempotency
  key), which Neynar uses to recognise a repeat, so a cast whose answer was lost may be sent again.
- As Postiz: one cast per chosen channel (none chosen: the user's feed), their hashes joined by "," in
  releaseId; a thread part replies to each of them. Embeds are URLs Farcaster fetches (rustiz's FRONTEND_URL).
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Optional
from urllib.parse import quote, urlencode

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply
from .base import (
    Channel, Connected, OutcomeUnknown, OutgoingPost, Rejected, Release, analytics_figures, error_fields,
)
from .oauth import AppCredentials, OAuthProvider, TokenRefused, Tokens

FARCASTER_MAX_EMBEDS = 2  # the protocol's limit per cast
CAST_WEB = "https://farcaster.xyz"  # where a cast is seen (warpcast.com, Postiz's, redirects there)
CONNECT_PAGE = "/web/farcaster-connect.html"


class FarcasterProvider(OAuthProvider):
    identifier = "wrapcast"
    app_variables = ("NEYNAR_CLIENT_ID", "NEYNAR_SECRET_KEY")
    auth_origin = "https://app.neynar.com"  # Sign In With Neynar's login page (RUSTIZ_WRAPCAST_AUTH_URL)
    api_origin = "https://api.neynar.com"
    pkce = False
    resend_is_safe = True  # (idem)
    can_delete = True
    concurrency = 3  # Postiz's maxConcurrentJob
    operator_guide = ("dev.neynar.com → your app: copy its Client ID (NEYNAR_CLIENT_ID) and an API key "
                      "(NEYNAR_SECRET_KEY); under Sign In With Neynar, add rustiz's FRONTEND_URL origin to "
                      "Authorized origins and allow Read and write.")

    def pulls_media(self, values: list, settings: dict) -> bool:
        return any(value["image"] for value in values)

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        for number, value in enumerate(values, 1):
            if len(value["image"]) > FARCASTER_MAX_EMBEDS:
                where = f"thread part {number}" if len(values) > 1 else "the post"
                return (f"{where} has {len(value['image'])} pictures, and a Farcaster cast carries at most "
                        f"{FARCASTER_MAX_EMBEDS} embeds")
        return None

    # --- connecting: Sign In With Neynar --------------------------------------------------------------

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        frontend = redirect_uri.split("/integrations/")[0]
        return frontend + CONNECT_PAGE + "?" + urlencode({
            "login": f"{self.auth_base()}/login?client_id={quote(app.client_id)}", "state": state,
            "callback": redirect_uri})

    async def exchange_code(self, http: HttpClient, app: AppCredentials, code: str, redirect_uri: str,
                            code_verifier: Optional[str], details: dict) -> Tokens:
        """Postiz's code (base64 JSON with the signer_uuid) checked with Neynar: the signer must be this app's
        and approved; its fid is the account."""
        signer_uuid = _claimed_signer(code)
        if signer_uuid is None:
            raise TokenRefused("the sign-in did not give a Farcaster signer: sign in with Neynar again")
        channel = Channel("", "", {"accessToken": signer_uuid}, None, http)
        channel.app = app
        signer = await self._signer(channel)
        return Tokens(signer_uuid, extra={"fid": signer["fid"]})

    async def refresh_tokens(self, http: HttpClient, app: AppCredentials, refresh_token: str) -> Tokens:
        raise TokenRefused("a Farcaster signer has no refresh: sign in with Neynar again")

    async def _signer(self, channel: Channel) -> dict:
        """GET /v2/farcaster/signer: the channel's signer, approved, with its fid; TokenRefused otherwise."""
        try:
            reply = await self.send(channel, "GET", self._api("signer", signer_uuid=channel.credentials["accessToken"]),
                                    what="the signer check", headers=self._key(channel))
        except Rejected as refused:
            if refused.status in (400, 404):  # unknown to this app's key, or no signer at all
                raise TokenRefused(f"Neynar does not know this signer: {refused.message}", refused.status,
                                   refused.body) from None
            raise
        signer = reply.json() if isinstance(reply.json(), dict) else {}
        if signer.get("status") != "approved" or type(signer.get("fid")) is not int:
            raise TokenRefused(f"the Farcaster signer is {signer.get('status') or 'in no known state'}, not approved: "
                               "sign in with Neynar again")
        return signer

    async def connect(self, channel: Channel) -> Connected:
        fid = (await self._signer(channel))["fid"]
        user = await self._user(channel, fid)
        username = user.get("username") if isinstance(user.get("username"), str) else str(fid)
        return Connected(ChannelAccount(str(fid), user.get("display_name") or username, username,
                                        user.get("pfp_url") or None), session={"username": username})

    async def _user(self, channel: Channel, fid: int) -> dict:
        reply = await self.send(channel, "GET", self._api("user/bulk", fids=str(fid)), what="the account",
                                headers=self._key(channel))
        users = reply.json().get("users") if isinstance(reply.json(), dict) else None
        if not isinstance(users, list) or not users or not isinstance(users[0], dict):
            raise Rejected(f"Neynar answered the account's lookup with {reply.described('a user')}", reply.status)
        return users[0]

    # --- casting ----------------------------------------------------------------------------------------

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        embeds = [{"url": media.url} for media in post.media]
        if parent is not None:
            targets = [{"parent": cast_hash} for cast_hash in parent.id.split(",")]
        else:
            chosen = [entry.get("value", {}).get("id") for entry in post.settings.get("subreddit") or []
                      if isinstance(entry, dict) and isinstance(entry.get("value"), dict)]
            targets = [{"channel_id": channel_id} for channel_id in chosen if isinstance(channel_id, str)] or [{}]
        casts = []
        for number, target in enumerate(targets):
            idem = hashlib.sha256(f"{post.idempotency_key}:{number}".encode()).hexdigest()[:16]
            casts.append(await self._cast(channel, {"signer_uuid": channel.credentials["accessToken"],
                                                    "text": post.text, "embeds": embeds, "idem": idem, **target}))
        return Release(",".join(cast_hash for cast_hash, _ in casts), ",".join(url for _, url in casts))

    async def _cast(self, channel: Channel, body: dict) -> tuple:
        reply = await self.send(channel, "POST", self._api("cast"), visible=True,
                                what="the cast", json_body=body, headers=self._key(channel))
        cast = reply.json().get("cast") if isinstance(reply.json(), dict) else None
        if not isinstance(cast, dict) or not isinstance(cast.get("hash"), str):
            raise OutcomeUnknown(f"Neynar accepted the cast but answered {reply.described('a cast')}", reply.status)
        author = cast.get("author") if isinstance(cast.get("author"), dict) else {}
        username = author.get("username") or channel.session.get("username") or channel.credentials.get("fid")
        return cast["hash"], f"{CAST_WEB}/{username}/{cast['hash']}"

    async def delete(self, channel: Channel, release: Release) -> None:
        """DELETE /v2/farcaster/cast for each cast of the part (one per channel); a cast already gone is deleted."""
        for cast_hash in release.id.split(","):
            try:
                await self.send(channel, "DELETE", self._api("cast"), what="the deletion of the cast",
                                headers=self._key(channel),
                                json_body={"signer_uuid": channel.credentials["accessToken"], "target_hash": cast_hash})
            except Rejected as refused:
                if refused.status != 404:
                    raise

    async def tool_subreddits(self, channel: Channel, data: dict) -> list:
        """Postiz's channel search: [{title, name, id}] of the first ten channels matching `word`."""
        reply = await self.send(channel, "GET", self._api("channel/search", q=str(data.get("word") or "")[:100], limit="10"),
                                what="the channel search", headers=self._key(channel))
        found = reply.json().get("channels") if isinstance(reply.json(), dict) else None
        return [{"title": item.get("name"), "name": item.get("name"), "id": item.get("id")}
                for item in found or [] if isinstance(item, dict) and isinstance(item.get("id"), str)]

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        user = await self._user(channel, int(channel.credentials["fid"]))
        return analytics_figures({"Followers": user.get("follower_count"), "Following": user.get("following_count")})

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        reply = await self.send(channel, "GET", self._api("cast", identifier=release.id.split(",")[0], type="hash"),
                                what="the cast's counts", headers=self._key(channel))
        cast = reply.json().get("cast") if isinstance(reply.json(), dict) else None
        cast = cast if isinstance(cast, dict) else {}
        reactions = cast.get("reactions") if isinstance(cast.get("reactions"), dict) else {}
        replies = cast.get("replies") if isinstance(cast.get("replies"), dict) else {}
        return analytics_figures({"Likes": reactions.get("likes_count"), "Recasts": reactions.get("recasts_count"),
                                  "Replies": replies.get("count")})

    # --- Neynar's requests and answers ------------------------------------------------------------------

    def _api(self, path: str, **query: str) -> str:
        return f"{self.api_base()}/v2/farcaster/{path}" + ("?" + urlencode(query) if query else "")

    @staticmethod
    def _key(channel: Channel) -> dict:
        return {"x-api-key": channel.app.client_secret if channel.app else "", "Accept": "application/json"}

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "message")  # {"code": "NotFound", "message": "...", "property": "..."}

    def where_to_check(self, channel: Channel) -> str:
        return f"the Farcaster profile of the channel \"{channel.name}\""


def _claimed_signer(code: str) -> Optional[str]:
    """The signer_uuid of Postiz's code (base64 of {"signer_uuid", "fid", ...}), or None when it has none."""
    try:
        claim = json.loads(base64.b64decode(code + "=" * (-len(code) % 4), altchars=b"-_"
                                            if "-" in code or "_" in code else None))
    except (ValueError, TypeError):
        return None
    signer = claim.get("signer_uuid") if isinstance(claim, dict) else None
    return signer if isinstance(signer, str) and re.fullmatch(r"[A-Za-z0-9-]{8,64}", signer) else None


PROVIDER = FarcasterProvider()
