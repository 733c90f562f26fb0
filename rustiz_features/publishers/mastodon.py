"""Mastodon, on any instance: connected with one click (rustiz registers its own app on the instance and
runs OAuth there) or with a pasted access token; statuses, media, replies as threads; each instance's own
limits, and Idempotency-Key so a repeat is recognised.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Optional
from urllib.parse import urlencode

from ..catalogue import ChannelAccount, url_host
from ..http_client import HttpClient, HttpReply, Timeouts, encode_multipart
from .base import (
    Channel, Connected, MediaFile, OutcomeUnknown, OutgoingPost, PublishError, Rejected, Release,
    Retryable, analytics_figures, error_fields,
)
from .oauth import AppCredentials, OAuthProvider, Tokens



MASTODON_MEDIA_WAIT_SECONDS = 60.0  # how long a status waits for the instance to process its media


def _positive_int(value: Any, fallback: int) -> int:
    return value if type(value) is int and value > 0 else fallback


MASTODON_SCOPES = ("read:accounts", "write:statuses", "write:media")  # not `profile`: some instances refuse it


class MastodonProvider(OAuthProvider):
    """Any Mastodon instance (or one speaking its API), with an access token made in the account's settings.

    Media go up first (large files are processed in the background: polled, up to a minute), then the
    status, with Idempotency-Key: the instance returns the same status for a repeated key for about an
    hour, so an attempt whose answer was lost can be sent again safely."""
    identifier = "mastodon"
    resend_is_safe = True
    concurrency = 5
    spacing = 1.0  # 300 requests per 5 minutes per account: a publish (media, polls, status) a second stays under
    needs_operator_app = False  # rustiz registers its own app on each instance (POST /api/v1/apps)
    scopes = MASTODON_SCOPES
    pkce = True  # Mastodon 4.3+ checks it; older instances ignore the parameters

    # --- OAuth on the instance the user names -------------------------------------------------------

    def app_origin(self, details: dict) -> str:
        return details["instance"].rstrip("/")

    async def register_app(self, http: HttpClient, origin: str, redirect_uri: str) -> AppCredentials:
        channel = Channel("", "", {"instance": origin}, None, http)
        reply = await self.send(channel, "POST", origin + "/api/v1/apps", what="the app registration (/api/v1/apps)",
                                form={"client_name": "rustiz", "redirect_uris": redirect_uri,
                                      "scopes": " ".join(self.scopes), "website": redirect_uri.split("/integrations/")[0]})
        answer = reply.json()
        if not isinstance(answer, dict) or not isinstance(answer.get("client_id"), str) \
                or not isinstance(answer.get("client_secret"), str):
            raise Rejected(f"{origin} does not answer like a Mastodon server: /api/v1/apps returned "
                           f"{reply.described('an app')}", reply.status)
        return AppCredentials(answer["client_id"], answer["client_secret"])

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        query = {"response_type": "code", "client_id": app.client_id, "redirect_uri": redirect_uri,
                 "scope": " ".join(self.scopes), "state": state}
        if code_challenge:
            query.update(code_challenge=code_challenge, code_challenge_method="S256")
        return f"{self.app_origin(details)}/oauth/authorize?{urlencode(query)}"

    async def exchange_code(self, http: HttpClient, app: AppCredentials, code: str, redirect_uri: str,
                            code_verifier: Optional[str], details: dict) -> Tokens:
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                "client_id": app.client_id, "client_secret": app.client_secret, "scope": " ".join(self.scopes)}
        if code_verifier:
            form["code_verifier"] = code_verifier
        channel = Channel("", "", details, None, http)
        reply = await self.send(channel, "POST", self.app_origin(details) + "/oauth/token", what="the code exchange",
                                form=form)
        return self.tokens_from(reply)

    def credentials_for(self, tokens: Tokens, details: dict) -> dict:
        return {"instance": self.app_origin(details), "accessToken": tokens.access_token}

    @staticmethod
    def _instance(channel: Channel) -> str:
        return channel.credentials["instance"].rstrip("/")

    @staticmethod
    def _authorization(channel: Channel) -> dict:
        return {"Authorization": f"Bearer {channel.credentials['accessToken'].strip()}"}

    async def connect(self, channel: Channel) -> Connected:
        instance = self._instance(channel)
        reply = await self.send(channel, "GET", instance + "/api/v1/accounts/verify_credentials",
                                what="the access token check (verify_credentials)", headers=self._authorization(channel))
        account = reply.json()
        if not isinstance(account, dict) or account.get("id") is None:
            raise Rejected(f"{instance} does not answer like a Mastodon server: verify_credentials returned "
                           f"{reply.described('a Mastodon account')}", reply.status)
        host = url_host(instance)
        username = account.get("acct") or account.get("username") or str(account["id"])
        return Connected(ChannelAccount(f"{host}/{account['id']}", account.get("display_name") or username,
                                        username, account.get("avatar") or None),
                         limits=await self._instance_limits(channel))

    async def _instance_limits(self, channel: Channel) -> dict:
        """The instance's own limits (many raise the 500 characters); stock Mastodon's where it does not say.

        Servers before Mastodon 4.0 (and some that speak its API, like Pleroma) have only /api/v1/instance,
        with the same `configuration` or a `max_toot_chars`."""
        try:
            reply = await self.send(channel, "GET", self._instance(channel) + "/api/v2/instance",
                                    what="the instance's limits (/api/v2/instance)")
        except Rejected as refused:
            if refused.status != 404:
                raise
            reply = await self.send(channel, "GET", self._instance(channel) + "/api/v1/instance",
                                    what="the instance's limits (/api/v1/instance)")
        answer = reply.json()
        answer = answer if isinstance(answer, dict) else {}
        configuration = answer.get("configuration") if isinstance(answer.get("configuration"), dict) else {}
        statuses = configuration.get("statuses") if isinstance(configuration.get("statuses"), dict) else {}
        max_characters = statuses.get("max_characters") or answer.get("max_toot_chars")
        defaults = self._limits({})
        return {"maxLength": _positive_int(max_characters, defaults["maxLength"]),
                "maxMedia": _positive_int(statuses.get("max_media_attachments"), defaults["maxMedia"]),
                "charactersReservedPerUrl": _positive_int(statuses.get("characters_reserved_per_url"),
                                                          defaults["charactersReservedPerUrl"])}

    def _limits(self, channel: dict) -> dict:
        """The channel's instance's limits, stock Mastodon's (the descriptor's) where it told none."""
        return {"maxLength": self.descriptor.max_length, **self.descriptor.limits, **(channel.get("limits") or {})}

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        limits = self._limits(channel)
        for number, value in enumerate(values, 1):
            where = f"thread part {number}" if len(values) > 1 else "the post"
            length, limit = self.measured(channel, value["content"])
            if length > limit:
                return (f"{where} is {length} characters long as Mastodon counts them (each link counts as "
                        f"{limits['charactersReservedPerUrl']}), and this instance allows {limit}")
            if len(value["image"]) > limits["maxMedia"]:
                return (f"{where} has {len(value['image'])} images or videos, and this instance allows "
                        f"{limits['maxMedia']} per status")
        return None

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        media_ids = [await self._upload(channel, media, f"media item {number}")
                     for number, media in enumerate(post.media, 1)]
        status: dict = {"status": post.text, "visibility": "public", "media_ids": media_ids}
        if parent is not None:
            status["in_reply_to_id"] = parent.id
        reply = await self.send(channel, "POST", self._instance(channel) + "/api/v1/statuses", visible=True,
                                what="the status", json_body=status,
                                headers={**self._authorization(channel), "Idempotency-Key": post.idempotency_key})
        answer = reply.json()
        if not isinstance(answer, dict) or answer.get("id") is None:
            raise OutcomeUnknown(f"Mastodon accepted the status but answered {reply.described('the status')}",
                                 reply.status)
        return Release(str(answer["id"]), self._status_url(channel, answer))

    def _status_url(self, channel: Channel, status: dict) -> str:
        if isinstance(status.get("url"), str) and status["url"]:
            return status["url"]
        account = status.get("account") if isinstance(status.get("account"), dict) else {}
        if account.get("acct"):
            return f"{self._instance(channel)}/@{account['acct']}/{status['id']}"
        return f"{self._instance(channel)}/statuses/{status['id']}"

    async def _upload(self, channel: Channel, media: MediaFile, item: str) -> str:
        """The media attachment's id, once the instance has processed the file (it may take a while for video)."""
        body, content_type = encode_multipart([("file", (media.name, media.read(), media.content_type)),
                                               ("description", media.alt)])
        try:
            reply = await self.send(channel, "POST", self._instance(channel) + "/api/v2/media", what=f"the upload of {item}",
                                    body=body, headers={**self._authorization(channel), "Content-Type": content_type},
                                    timeouts=Timeouts(read=120, total=600))
            attachment = reply.json()
            if not isinstance(attachment, dict) or attachment.get("id") is None:
                raise Rejected(f"Mastodon answered the upload with {reply.described('a media attachment')}",
                               reply.status)
            if reply.status == 202:  # accepted, still being processed: the status must wait for it
                await self._wait_until_processed(channel, str(attachment["id"]), item)
        except PublishError as error:
            error.item = error.item or item
            raise
        return str(attachment["id"])

    async def _wait_until_processed(self, channel: Channel, media_id: str, item: str) -> None:
        """Poll the attachment (206 = still processing, 200 = ready), at growing intervals, for a bounded time."""
        deadline, pause = time.monotonic() + MASTODON_MEDIA_WAIT_SECONDS, 0.25
        while time.monotonic() < deadline:
            await asyncio.sleep(pause)
            reply = await self.send(channel, "GET", f"{self._instance(channel)}/api/v1/media/{media_id}",
                                    what=f"the processing of {item}", headers=self._authorization(channel))
            if reply.status == 200:
                return
            pause = min(pause * 2, 4.0)
        raise Retryable(f"Mastodon was still processing {item} after {MASTODON_MEDIA_WAIT_SECONDS:.0f} s; "
                        "the post waits and tries again", item=item)

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        reply = await self.send(channel, "GET", self._instance(channel) + "/api/v1/accounts/verify_credentials",
                                what="the account's counts", headers=self._authorization(channel))
        account = reply.json() if isinstance(reply.json(), dict) else {}
        return analytics_figures({"Followers": account.get("followers_count"),
                                  "Following": account.get("following_count"), "Posts": account.get("statuses_count")})

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        reply = await self.send(channel, "GET", f"{self._instance(channel)}/api/v1/statuses/{release.id}",
                                what="the post's counts", headers=self._authorization(channel))
        status = reply.json() if isinstance(reply.json(), dict) else {}
        return analytics_figures({"Favourites": status.get("favourites_count"),
                                  "Boosts": status.get("reblogs_count"), "Replies": status.get("replies_count")})

    def where_to_check(self, channel: Channel) -> str:
        return f"the profile of the channel \"{channel.name}\" on {url_host(self._instance(channel))}"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "error", "error_description")  # {"error": "Validation failed: ..."}


PROVIDER = MastodonProvider()
