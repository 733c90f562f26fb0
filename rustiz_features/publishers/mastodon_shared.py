"""What every server speaking Mastodon's client API shares (Mastodon, Pixelfed, Friendica, Pleroma, Akkoma,
GoToSocial...): connected with one click (rustiz registers its own app on the server and runs OAuth there) or
with a pasted access token; statuses, media, replies as threads; each server's own limits, Idempotency-Key so a
repeat is recognised; deleting a status. Not a platform module (it has no PROVIDER): mastodon.py, pixelfed.py
and friendica.py each make a MastodonApiProvider under their picker entry's name.

Connecting tells which software a server runs (the instance document's "compatible; <Software>" version, else
nodeinfo 2.x `software.name`) and keeps it in the channel's limits (`software`) with the server's own limits;
each software's rules follow from it (Pixelfed: a post needs a photo or a video), whichever entry connected it.
"""
from __future__ import annotations

import asyncio
import os
import re
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


def _object(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


MASTODON_SCOPES = ("read:accounts", "write:statuses", "write:media")  # not `profile`: some instances refuse it
COARSE_SCOPES = ("read", "write")  # Pixelfed (Laravel Passport) and Friendica know no granular scopes
COARSE_SCOPE_SOFTWARE = ("pixelfed", "friendica")
NODEINFO_2 = "http://nodeinfo.diaspora.software/ns/schema/2."  # the rel of nodeinfo 2.x documents


def software_in_version(version: Any) -> Optional[str]:
    """The software a Mastodon-compatible server names in its version: "3.5.3 (compatible; Pixelfed 0.12.4)"
    -> "pixelfed"; None for stock Mastodon's bare "4.3.0"."""
    match = re.search(r"\(compatible; ([A-Za-z][\w.-]*)", version) if isinstance(version, str) else None
    return match[1].lower() if match else None


class MastodonApiProvider(OAuthProvider):
    """Any server speaking Mastodon's client API, with an access token from one-click sign-in or pasted.

    Media go up first (large files are processed in the background: polled, up to a minute), then the
    status, with Idempotency-Key: the instance returns the same status for a repeated key for about an
    hour, so an attempt whose answer was lost can be sent again safely."""
    resend_is_safe = True
    concurrency = 5
    spacing = 1.0  # 300 requests per 5 minutes per account: a publish (media, polls, status) a second stays under
    needs_operator_app = False  # rustiz registers its own app on each instance (POST /api/v1/apps)
    scopes = MASTODON_SCOPES
    pkce = True  # Mastodon 4.3+ checks it; older instances ignore the parameters
    can_delete = True
    software: Optional[str] = None  # the one server software this entry connects; None: any speaking the API

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
        details["scope"] = " ".join(await self._scopes_for(http, details))  # (kept for the code exchange)
        query = {"response_type": "code", "client_id": app.client_id, "redirect_uri": redirect_uri,
                 "scope": details["scope"], "state": state}
        if code_challenge:
            query.update(code_challenge=code_challenge, code_challenge_method="S256")
        return f"{self.app_origin(details)}/oauth/authorize?{urlencode(query)}"

    async def exchange_code(self, http: HttpClient, app: AppCredentials, code: str, redirect_uri: str,
                            code_verifier: Optional[str], details: dict) -> Tokens:
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                "client_id": app.client_id, "client_secret": app.client_secret,
                "scope": details.get("scope") or " ".join(self.scopes)}
        if code_verifier:
            form["code_verifier"] = code_verifier
        channel = Channel("", "", details, None, http)
        reply = await self.send(channel, "POST", self.app_origin(details) + "/oauth/token", what="the code exchange",
                                form=form)
        return self.tokens_from(reply)

    async def _scopes_for(self, http: HttpClient, details: dict) -> tuple:
        """This entry's scopes; from the Mastodon entry, the coarse ones for a server whose version names a
        software that refuses granular scopes (a Pixelfed, a Friendica)."""
        if self.software is not None:
            return self.scopes
        try:
            version = (await self._instance_document(Channel("", "", details, None, http))).get("version")
        except PublishError:  # (the consent page will say what is wrong with the server)
            return self.scopes
        return COARSE_SCOPES if software_in_version(version) in COARSE_SCOPE_SOFTWARE else self.scopes

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
        limits, media_limits = await self._server_limits(channel)
        if self.software and limits["software"] != self.software:
            raise Rejected(f"{host} runs {limits['software'].capitalize()}, not {self.label}: add it as a Mastodon "
                           "channel, which publishes to any server speaking Mastodon's API")
        return Connected(ChannelAccount(f"{host}/{account['id']}", account.get("display_name") or username,
                                        username, account.get("avatar") or None),
                         session={"mediaLimits": media_limits} if media_limits else None, limits=limits)

    async def _server_limits(self, channel: Channel) -> tuple:
        """(limits, media size limits) of the server: its own (many raise the 500 characters) and the software
        it runs; stock Mastodon's where it does not say. The media size limits (bytes) are kept in the channel's
        session, which publishing reads.

        Servers before Mastodon 4.0 (and some that speak its API, like Pleroma) have only /api/v1/instance,
        with the same `configuration` or a `max_toot_chars`."""
        answer = await self._instance_document(channel)
        configuration = _object(answer.get("configuration"))
        statuses, attachments = _object(configuration.get("statuses")), _object(configuration.get("media_attachments"))
        max_characters = statuses.get("max_characters") or answer.get("max_toot_chars")
        defaults = self._limits({})
        limits = {"maxLength": _positive_int(max_characters, defaults["maxLength"]),
                  "maxMedia": _positive_int(statuses.get("max_media_attachments"), defaults["maxMedia"]),
                  "charactersReservedPerUrl": _positive_int(statuses.get("characters_reserved_per_url"),
                                                            defaults["charactersReservedPerUrl"]),
                  "software": software_in_version(answer.get("version")) or await self._nodeinfo_software(channel)
                  or "mastodon"}
        media_limits = {kind: attachments[key] for kind, key in (("image", "image_size_limit"),
                                                                 ("video", "video_size_limit"))
                        if _positive_int(attachments.get(key), 0)}
        return limits, media_limits

    async def _instance_document(self, channel: Channel) -> dict:
        """/api/v2/instance, or /api/v1/instance where there is none; {} when it is no JSON object."""
        try:
            reply = await self.send(channel, "GET", self._instance(channel) + "/api/v2/instance",
                                    what="the instance's limits (/api/v2/instance)")
        except Rejected as refused:
            if refused.status != 404:
                raise
            reply = await self.send(channel, "GET", self._instance(channel) + "/api/v1/instance",
                                    what="the instance's limits (/api/v1/instance)")
        return _object(reply.json())

    async def _nodeinfo_software(self, channel: Channel) -> Optional[str]:
        """nodeinfo 2.x's `software.name` (lower-case), for a server whose version names no software; None
        when the server has no nodeinfo on its own host, or it does not say."""
        origin = self._instance(channel)
        try:
            index = _object((await self.send(channel, "GET", origin + "/.well-known/nodeinfo",
                                             what="the server's nodeinfo")).json())
            links = index.get("links") if isinstance(index.get("links"), list) else []
            href = next((link["href"] for link in links if isinstance(link, dict)
                         and str(link.get("rel", "")).startswith(NODEINFO_2) and isinstance(link.get("href"), str)), None)
            if href is None or url_host(href) != url_host(origin):
                return None
            document = _object((await self.send(channel, "GET", href, what="the server's nodeinfo")).json())
        except PublishError:  # (no nodeinfo, or not now: the server is taken for a Mastodon)
            return None
        name = _object(document.get("software")).get("name")
        return name.lower() if isinstance(name, str) and re.fullmatch(r"[A-Za-z][\w.-]{0,40}", name) else None

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
        if limits.get("software") == "pixelfed" and not values[0]["image"]:
            return ("Pixelfed publishes photos and videos: the post needs at least one image or video (its thread "
                    "parts, which are comments, may be text only)")
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
        """The media attachment's id, once the instance has processed the file (it may take a while for video).

        /api/v2/media processes in the background; a server without it (older Pixelfed and Friendica) has
        /api/v1/media, which answers once the file is ready."""
        self._check_size(channel, media, item)
        body, content_type = encode_multipart([("file", (media.name, media.read(), media.content_type)),
                                               ("description", media.alt)])
        request = dict(what=f"the upload of {item}", body=body, timeouts=Timeouts(read=120, total=600),
                       headers={**self._authorization(channel), "Content-Type": content_type})
        try:
            try:
                reply = await self.send(channel, "POST", self._instance(channel) + "/api/v2/media", **request)
            except Rejected as refused:
                if refused.status != 404:
                    raise
                reply = await self.send(channel, "POST", self._instance(channel) + "/api/v1/media", **request)
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

    def _check_size(self, channel: Channel, media: MediaFile, item: str) -> None:
        """Refuse, before sending it, a file larger than the server takes (its instance document's limit)."""
        limit = _object(channel.session.get("mediaLimits")).get("video" if media.kind == "video" else "image")
        size = os.path.getsize(media.path)
        if isinstance(limit, int) and size > limit:
            raise Rejected(f"{item} is {size / 1e6:.1f} MB, and {url_host(self._instance(channel))} takes "
                           f"{'videos' if media.kind == 'video' else 'images'} up to {limit / 1e6:.1f} MB", item=item)

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

    async def delete(self, channel: Channel, release: Release) -> None:
        """DELETE /api/v1/statuses/:id (Mastodon, Pixelfed and Friendica alike); a status already gone is deleted."""
        try:
            await self.send(channel, "DELETE", f"{self._instance(channel)}/api/v1/statuses/{release.id}",
                            what="the deletion of the status", headers=self._authorization(channel))
        except Rejected as refused:
            if refused.status != 404:
                raise

    def where_to_check(self, channel: Channel) -> str:
        return f"the profile of the channel \"{channel.name}\" on {url_host(self._instance(channel))}"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "error", "error_description")  # {"error": "Validation failed: ..."}

