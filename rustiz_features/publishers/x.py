"""X (Twitter), connected through the operator's app with OAuth 1.0a (Postiz's X_API_KEY / X_API_SECRET):
posts through POST /2/tweets, media through the v2 chunked upload, threads as replies.

Why OAuth 1.0a and not OAuth 2.0: a Postiz operator's app and .env carry over unchanged, and 1.0a user
tokens never expire, so there is no refresh to fail and strand a channel. Every request is signed with
HMAC-SHA1 (RFC 5849) by the app's key and secret and the user's token and token secret.

Media go up through the v2 endpoints on the API origin (/2/media/upload/initialize, /{id}/append,
/{id}/finalize, STATUS): X retired the v1.1 upload.twitter.com endpoints in 2025.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
import re
import secrets
import time
from typing import Any, Optional
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply, Timeouts, encode_multipart
from .base import (
    Channel, Connected, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, PublishError, Rejected, Release, Retryable,
    analytics_figures, error_fields, retry_after_seconds,
)
from .oauth import AppCredentials, OAuthProvider, TokenRefused, Tokens


X_MEDIA_WAIT_SECONDS = 180.0  # how long a post waits for X to process its video before trying later
X_CHUNK_BYTES = 1024 * 1024  # per APPEND: the size Postiz uses in production (X allows larger)
X_ALT_TEXT_LIMIT = 1000  # X's limit on an image description
X_MAX_IMAGES = 4
X_ERROR_XML = re.compile(r'<error\s+code="(\d+)"\s*>([^<]{1,500})</error>')
REPLY_SETTINGS = ("following", "mentionedUsers", "subscribers", "verified")  # "everyone" is X's default


# --- OAuth 1.0a signing (RFC 5849 section 3.4, HMAC-SHA1) -----------------------------------------------

def percent(value: str) -> str:
    """RFC 5849 section 3.6: every byte but the unreserved characters percent-encoded, in upper-case hex."""
    return quote(value, safe="-._~")


def base_string_uri(url: str) -> str:
    """Scheme and host in lower case, the port only when not the scheme's default, the path; no query."""
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    port = parts.port
    if ":" in host:
        host = f"[{host}]"
    if port and (scheme, port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{port}"
    return f"{scheme}://{host}{parts.path or '/'}"


def oauth_signature(method: str, url: str, parameters: list, consumer_secret: str, token_secret: str) -> str:
    """The HMAC-SHA1 signature of a request whose signed parameters (oauth_*, query, urlencoded form) are
    `parameters` as (name, value) pairs."""
    pairs = sorted((percent(name), percent(value)) for name, value in parameters)
    normalized = "&".join(f"{name}={value}" for name, value in pairs)
    base = "&".join((method.upper(), percent(base_string_uri(url)), percent(normalized)))
    key = f"{percent(consumer_secret)}&{percent(token_secret)}"
    return base64.b64encode(hmac.new(key.encode(), base.encode(), hashlib.sha1).digest()).decode()


def oauth_header(method: str, url: str, app: AppCredentials, token: str = "", token_secret: str = "",
                 form: Optional[dict] = None, extra: Optional[dict] = None, nonce: str = "",
                 timestamp: str = "") -> str:
    """The Authorization header of a request signed with the app and (when given) the user's token.

    `form`: a urlencoded body's fields, which are signed too (a JSON or multipart body is not);
    `extra`: more oauth_* protocol parameters (oauth_callback, oauth_verifier)."""
    protocol = {"oauth_consumer_key": app.client_id, "oauth_nonce": nonce or secrets.token_hex(16),
                "oauth_signature_method": "HMAC-SHA1", "oauth_timestamp": timestamp or str(int(time.time())),
                "oauth_version": "1.0", **(extra or {})}
    if token:
        protocol["oauth_token"] = token
    signed = list(protocol.items()) + parse_qsl(urlsplit(url).query, keep_blank_values=True) \
        + list((form or {}).items())
    protocol["oauth_signature"] = oauth_signature(method, url, signed, app.client_secret, token_secret)
    return "OAuth " + ", ".join(f'{percent(name)}="{percent(value)}"' for name, value in sorted(protocol.items()))


def _form_answer(reply: HttpReply) -> dict:
    """An OAuth endpoint's urlencoded answer (oauth_token=...&oauth_token_secret=...) as a dict."""
    try:
        return dict(parse_qsl(reply.body.decode("utf-8"), keep_blank_values=True))
    except (UnicodeDecodeError, ValueError):
        return {}


def _header_number(reply: HttpReply, name: str) -> Optional[float]:
    value = (reply.headers.get(name) or "").strip()
    return float(value) if value.isdigit() else None


def _until_epoch(reply: HttpReply, name: str) -> Optional[float]:
    """Seconds until the epoch time in header `name` (X's x-rate-limit-reset and the 24-hour limits' resets)."""
    moment = _header_number(reply, name)
    return max(0.0, moment - time.time()) if moment is not None else None


def media_category(media: MediaFile) -> str:
    if media.kind == "video":
        return "tweet_video"
    return "tweet_gif" if media.content_type == "image/gif" else "tweet_image"


class XProvider(OAuthProvider):
    """X through the operator's app: OAuth 1.0a user tokens, signed v2 calls.

    X has no idempotency key: a post whose answer was lost is not sent again (resend_is_safe False)."""
    identifier = "x"
    app_variables = ("X_API_KEY", "X_API_SECRET")
    auth_origin = "https://api.x.com"
    api_origin = "https://api.x.com"
    web_origin = "https://x.com"  # where a post is seen, for its releaseURL
    pkce = False
    scopes = ()  # OAuth 1.0a has none: the app's permission (Read and write) decides
    concurrency = 4
    spacing = 2.0  # X allows 100 posts per 15 minutes per user: one publish every 2 s stays well under
    can_delete = True  # DELETE /2/tweets/:id
    operator_guide = (
        "Create a project and an app at developer.x.com (the X API is pay-per-use since February 2026: each "
        "post costs credits, which the developer console sells; there is no free tier for new developers). "
        "In the app's \"User authentication settings\" turn on OAuth 1.0a with \"Read and write\" permission, "
        "choose the app type \"Native App\" (a \"Web App\" fails the sign-in with error 32), and register the "
        "callback URL {FRONTEND_URL}/integrations/social/x. Put the app's \"API Key and Secret\" (the consumer "
        "keys, not the bearer token nor the OAuth 2.0 client id) in X_API_KEY and X_API_SECRET, the names "
        "Postiz uses. Tokens made this way do not expire; a user who revokes the app must connect again.")

    # --- the consent flow ---------------------------------------------------------------------------

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        """Ask X for a request token bound to our callback; the user authorizes it on X's authenticate page.

        X's callback carries oauth_token and oauth_verifier and no state, so the request token is the
        flow's state; its secret stays in `details` for the exchange."""
        url = self.auth_base() + "/oauth/request_token"
        form = {"x_auth_access_type": "write"}
        headers = {"Authorization": oauth_header("POST", url, app, form=form,
                                                 extra={"oauth_callback": redirect_uri})}
        try:
            reply = await self.send(Channel("", "", {}, None, http), "POST", url, what="the request token",
                                    headers=headers, form=form)
        except NeedsReconnect as refused:  # a 401 here refuses the app itself, not a user
            raise Rejected(f"X refused the app's keys (X_API_KEY, X_API_SECRET): {refused.message}",
                           refused.status, refused.body) from None
        answer = _form_answer(reply)
        if not answer.get("oauth_token") or not answer.get("oauth_token_secret"):
            raise Retryable(f"X answered the request token with {reply.described('a request token')}", reply.status)
        if answer.get("oauth_callback_confirmed") != "true":
            raise Rejected("X did not confirm the callback URL; register "
                           f"{redirect_uri} in the app's User authentication settings", reply.status)
        details.update(oauth_token=answer["oauth_token"], oauth_token_secret=answer["oauth_token_secret"],
                       state=answer["oauth_token"])
        return f"{self.auth_base()}/oauth/authenticate?{urlencode({'oauth_token': answer['oauth_token']})}"

    async def exchange_code(self, http: HttpClient, app: AppCredentials, code: str, redirect_uri: str,
                            code_verifier: Optional[str], details: dict) -> Tokens:
        """The user's access token and secret for the callback's oauth_verifier (`code`)."""
        url = self.auth_base() + "/oauth/access_token"
        headers = {"Authorization": oauth_header("POST", url, app, details["oauth_token"],
                                                 details["oauth_token_secret"], extra={"oauth_verifier": code})}
        try:
            reply = await self.send(Channel("", "", {}, None, http), "POST", url, what="the access token",
                                    headers=headers)
        except (Rejected, NeedsReconnect) as refused:  # any 4xx: the request token or verifier is dead
            raise TokenRefused(refused.message, refused.status, refused.body) from None
        answer = _form_answer(reply)
        if not answer.get("oauth_token") or not answer.get("oauth_token_secret"):
            raise Retryable(f"X answered the access token with {reply.described('an access token')}", reply.status)
        extra = {"accessSecret": answer["oauth_token_secret"], "userId": answer.get("user_id", "")}
        if answer.get("screen_name"):
            extra["screenName"] = answer["screen_name"]
        return Tokens(answer["oauth_token"], None, None, extra)

    async def refresh_tokens(self, http: HttpClient, app: AppCredentials, refresh_token: str) -> Tokens:
        """OAuth 1.0a tokens do not expire and cannot be refreshed: a refused token was revoked by the user."""
        raise TokenRefused("X's OAuth 1.0a tokens cannot be refreshed; the app's access was revoked, "
                           "connect the channel again")

    # --- signed calls -------------------------------------------------------------------------------

    def _signed(self, channel: Channel, method: str, url: str) -> dict:
        """The Authorization header of a call as the channel's user (a JSON or multipart body is not signed)."""
        app = getattr(channel, "app", None)
        if app is None:
            raise Rejected("X_API_KEY and X_API_SECRET are not set: X channels publish through the operator's "
                           "X app, whose keys must be in the configuration")
        return {"Authorization": oauth_header(method, url, app, channel.credentials["accessToken"],
                                              channel.credentials.get("accessSecret", ""))}

    async def _call(self, channel: Channel, method: str, path: str, what: str, visible: bool = False,
                    **request: Any) -> HttpReply:
        url = self.api_base(channel) + path
        headers = {**self._signed(channel, method, url), **request.pop("headers", {})}
        return await self.send(channel, method, url, visible=visible, what=what, headers=headers, **request)

    # --- connecting and publishing ------------------------------------------------------------------

    async def connect(self, channel: Channel) -> Connected:
        reply = await self._call(channel, "GET", "/2/users/me?user.fields=profile_image_url,verified,verified_type",
                                 what="the account (users/me)")
        answer = reply.json()
        user = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(user, dict) or not user.get("id"):
            raise Rejected(f"X answered users/me with {self.platform_words(reply)}", reply.status,
                           self.error_excerpt(reply))
        picture = user.get("profile_image_url") or None
        if picture:  # X's default is a 48-pixel "_normal" image; the same URL serves a 400-pixel one
            picture = re.sub(r"_normal(\.\w+)$", r"_400x400\1", picture)
        username = user.get("username") or str(user["id"])
        # Verified (X Premium) accounts may post 4,000 characters. An unverified one gets no limit of its own,
        # so the descriptor's 280 applies unless the channel is marked Verified (Postiz's setting) by hand.
        limits = {"maxLength": self.descriptor.limits["verifiedMaxLength"]} if user.get("verified") is True else None
        return Connected(ChannelAccount(str(user["id"]), user.get("name") or username, username, picture),
                         limits=limits)

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        reply = await self._call(channel, "GET", "/2/users/me?user.fields=public_metrics", what="the account's counts")
        metrics = (self._data(reply).get("public_metrics") or {})
        return analytics_figures({"Followers": metrics.get("followers_count"),
                                  "Following": metrics.get("following_count"), "Posts": metrics.get("tweet_count")})

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        if not release.id.isdigit():
            return None
        reply = await self._call(channel, "GET", f"/2/tweets/{release.id}?tweet.fields=public_metrics",
                                 what="the post's counts")
        metrics = (self._data(reply).get("public_metrics") or {})
        return analytics_figures({"Impressions": metrics.get("impression_count"), "Likes": metrics.get("like_count"),
                                  "Reposts": metrics.get("retweet_count"), "Replies": metrics.get("reply_count"),
                                  "Quotes": metrics.get("quote_count")})

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        if settings.get("post_type") == "article":
            return "rustiz does not publish X articles yet: set post_type to post"
        for number, value in enumerate(values, 1):
            where = f"thread part {number}" if len(values) > 1 else "the post"
            media = value["image"]
            videos = sum("mp4" in str(item.get("path", "")) for item in media if isinstance(item, dict))
            if videos and len(media) > 1:
                return f"{where} has a video and other media; X takes one video alone, or up to 4 pictures"
            if len(media) > X_MAX_IMAGES:
                return f"{where} has {len(media)} pictures; X takes up to 4 per post"
        return None

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        media_ids = [await self._upload(channel, media, f"media item {number}")
                     for number, media in enumerate(post.media, 1)]
        body: dict = {"text": post.text} if post.text else {}  # a post of media alone has no text field
        if media_ids:
            body["media"] = {"media_ids": media_ids}
        if parent is not None:
            body["reply"] = {"in_reply_to_tweet_id": parent.id}
        body.update(self._post_options(post.settings, first=parent is None))
        reply = await self._call(channel, "POST", "/2/tweets", "the post", visible=True, json_body=body)
        answer = reply.json()
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, dict) or not data.get("id"):
            raise OutcomeUnknown(f"X accepted the post but answered {reply.described('a post')}", reply.status)
        handle = channel.credentials.get("screenName") or "i/web"  # x.com redirects a renamed handle
        return Release(str(data["id"]), f"{self.web_origin}/{handle}/status/{data['id']}")

    async def delete(self, channel: Channel, release: Release) -> None:
        """DELETE /2/tweets/:id: {"data": {"deleted": true}}; a post already gone answers 404 (or deleted false)."""
        if not release.id.isdigit():
            raise Rejected(f"{release.id[:40]!r} is not an X post id")
        url = self.api_base(channel) + f"/2/tweets/{release.id}"
        reply = await self.send_delete(channel, "DELETE", url, "the deletion of the post",
                                       headers=self._signed(channel, "DELETE", url))
        if reply is None or self._data(reply).get("deleted") is True:
            return
        answer = reply.json()
        errors = answer.get("errors") if isinstance(answer, dict) and isinstance(answer.get("errors"), list) else []
        if any(isinstance(error, dict) and str(error.get("type", "")).endswith("/resource-not-found")
               for error in errors):
            return  # (X's answer for an id it does not have: gone already)
        if self._data(reply).get("deleted") is False:
            raise Rejected(f"X answered that it did not delete the post: {self.platform_words(reply)}", reply.status)
        raise Retryable(f"X answered the deletion with {reply.described('a deletion')}", reply.status)

    @staticmethod
    def _post_options(settings: dict, first: bool) -> dict:
        """The post's X settings: who can reply and the community apply to the post itself, as Postiz does;
        the AI and paid-partnership labels to every part."""
        options: dict = {}
        if first and settings.get("who_can_reply_post") in REPLY_SETTINGS:
            options["reply_settings"] = settings["who_can_reply_post"]
        community = settings.get("community")
        if first and isinstance(community, str) and community:
            options.update(community_id=community.rstrip("/").rsplit("/", 1)[-1], share_with_followers=True)
        for flag in ("made_with_ai", "paid_partnership"):
            if settings.get(flag) is True:
                options[flag] = True
        return options

    # --- media --------------------------------------------------------------------------------------

    async def _upload(self, channel: Channel, media: MediaFile, item: str) -> str:
        """The media id, once X has the whole file (and, for video, has processed it) and its alt text."""
        try:
            media_id = await self._upload_chunks(channel, media, item)
            if media.alt and media.kind != "video":  # X's alt text is for images and GIFs
                await self._call(channel, "POST", "/2/media/metadata", f"the alt text of {item}", json_body={
                    "id": media_id, "metadata": {"alt_text": {"text": media.alt[:X_ALT_TEXT_LIMIT]}}})
        except PublishError as error:
            error.item = error.item or item
            raise
        return media_id

    async def _upload_chunks(self, channel: Channel, media: MediaFile, item: str) -> str:
        total = os.path.getsize(media.path)
        reply = await self._call(channel, "POST", "/2/media/upload/initialize", f"the upload of {item}",
                                 json_body={"media_type": media.content_type, "total_bytes": total,
                                            "media_category": media_category(media)})
        media_id = self._data(reply).get("id")
        if not media_id:
            raise Retryable(f"X answered the upload of {item} with {reply.described('a media id')}", reply.status)
        media_id = str(media_id)
        with open(media.path, "rb") as file:
            for segment in range((total + X_CHUNK_BYTES - 1) // X_CHUNK_BYTES or 1):
                body, content_type = encode_multipart([
                    ("segment_index", str(segment)),
                    ("media", (media.name or "media", file.read(X_CHUNK_BYTES), "application/octet-stream"))])
                await self._call(channel, "POST", f"/2/media/upload/{media_id}/append", f"the upload of {item}",
                                 body=body, headers={"Content-Type": content_type},
                                 timeouts=Timeouts(read=120, total=600))
        reply = await self._call(channel, "POST", f"/2/media/upload/{media_id}/finalize", f"the upload of {item}")
        processing = self._data(reply).get("processing_info")
        if isinstance(processing, dict) and processing.get("state") != "succeeded":
            await self._wait_until_processed(channel, media_id, processing, item)
        return media_id

    @staticmethod
    def _data(reply: HttpReply) -> dict:
        answer = reply.json()
        data = answer.get("data") if isinstance(answer, dict) else None
        return data if isinstance(data, dict) else {}

    async def _wait_until_processed(self, channel: Channel, media_id: str, processing: dict, item: str) -> None:
        """Poll STATUS at X's check_after_secs (bounded) until the video is processed, for a bounded time."""
        deadline = time.monotonic() + X_MEDIA_WAIT_SECONDS
        while True:
            if processing.get("state") == "failed":
                error = processing.get("error") if isinstance(processing.get("error"), dict) else {}
                reason = error.get("message") if isinstance(error.get("message"), str) else "no reason given"
                raise Rejected(f"X could not process {item}: {reason[:300]}", item=item)
            if processing.get("state") == "succeeded":
                return
            after = processing.get("check_after_secs")
            pause = float(after) if isinstance(after, (int, float)) and not isinstance(after, bool) else 1.0
            pause = min(max(pause, 0.25), 10.0)
            if time.monotonic() + pause > deadline:
                raise Retryable(f"X was still processing {item} after {X_MEDIA_WAIT_SECONDS:.0f} s; the post "
                                "waits and tries again", item=item)
            await asyncio.sleep(pause)
            reply = await self._call(channel, "GET", f"/2/media/upload?command=STATUS&media_id={media_id}",
                                     f"the processing of {item}")
            processing = self._data(reply).get("processing_info")
            if not isinstance(processing, dict):  # no processing_info: the media is ready
                return

    # --- X's answers --------------------------------------------------------------------------------

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """X's 403 means this request is not allowed (a duplicate post, the app's access level, a locked
        account), never that the token is dead (that is 401): reconnecting would not help, so it is Rejected.
        A 429 waits for the limit that ran out (the 15-minute window or the 24-hour post caps)."""
        if reply.status not in (403, 429):
            return super().check_reply(reply, visible, what)
        message, body = self.platform_words(reply), self.error_excerpt(reply)
        if not visible:
            message += f" (on {what})"
        if reply.status == 403:
            raise Rejected(message, 403, body)
        raise Retryable(message, 429, body, after=self._throttled_for(reply))

    @staticmethod
    def _throttled_for(reply: HttpReply) -> Optional[float]:
        if "retry-after" in reply.headers:
            return retry_after_seconds(reply)
        for limit in ("x-user-limit-24hour", "x-app-limit-24hour"):
            if (reply.headers.get(limit + "-remaining") or "").strip() == "0":
                return _until_epoch(reply, limit + "-reset")
        return _until_epoch(reply, "x-rate-limit-reset")

    @staticmethod
    def note_rate_limit(channel: Channel, reply: HttpReply) -> None:
        """X's x-rate-limit-* headers (and the 24-hour post caps): no call before the window resets."""
        for limit in ("x-rate-limit", "x-user-limit-24hour", "x-app-limit-24hour"):
            if (reply.headers.get(limit + "-remaining") or "").strip() == "0":
                wait = _until_epoch(reply, limit + "-reset")
                if wait:
                    channel.throttle(wait)

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """X's error shapes: v2's problem ({"title", "detail", "type"}), an "errors" list ({"message",
        "code"} in v1.1 and OAuth, {"message"} or {"detail"} in v2), or the OAuth endpoints' XML
        (<errors><error code="415">...</error></errors>)."""
        answer = reply.json()
        if answer is None:
            return self._xml_words(reply)
        if not isinstance(answer, dict):
            return None
        parts = []
        if isinstance(answer.get("type"), str) or isinstance(answer.get("status"), int):
            problem = error_fields(answer, "title", "detail")
            if problem:
                parts.append(problem)
        errors = answer.get("errors")
        if isinstance(errors, list):
            parts.extend(words for words in map(self._error_item, errors[:5]) if words)
        return " - ".join(parts) or None

    @staticmethod
    def _error_item(error: Any) -> str:
        if not isinstance(error, dict):
            return ""
        words = error.get("message") if isinstance(error.get("message"), str) else error.get("detail")
        if not isinstance(words, str) or not words.strip():
            return ""
        code = error.get("code")
        return words.strip() + (f" (code {code})" if isinstance(code, int) and not isinstance(code, bool) else "")

    @staticmethod
    def _xml_words(reply: HttpReply) -> Optional[str]:
        text = reply.body[:4000].decode("utf-8", "replace")
        if "<errors>" not in text:
            return None
        found = X_ERROR_XML.findall(text)
        return " - ".join(f"{words.strip()} (code {code})" for code, words in found[:5]) or None

    def where_to_check(self, channel: Channel) -> str:
        handle = channel.credentials.get("screenName")
        return f"the X account @{handle}" if handle else super().where_to_check(channel)


PROVIDER = XProvider()
