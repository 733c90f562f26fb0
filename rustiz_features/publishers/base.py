"""What every publisher shares: the Provider interface, the post and media it is given, its errors.

A provider connects a channel (checks the pasted credentials with the platform and reads the account)
and publishes one post or thread part at a time. It never sleeps or retries: it raises one of the
PublishErrors (Retryable, NeedsReconnect, Rejected, OutcomeUnknown) and the scheduler decides. The one wait
it does is for the platform's processing of what it sent (wait_for_processing), bounded.
Platform base URLs come from the channel's credentials for self-hosted platforms, else from
platform_url() (tests point those at fakes).
"""
from __future__ import annotations

import json
import re
import time
from typing import Any, Awaitable, Callable, NamedTuple, Optional

from rustiz import parse_iso_instant
from ..catalogue import DESCRIPTORS, ChannelAccount, ProviderDescriptor, post_length
from ..http_client import (
    AddressRefused, ConnectFailed, ERROR_WORDS_LIMIT, HttpClient, HttpReply, NoAnswer, private_host_reason,
)
from ..text import html_to_text



class MediaFile:
    """One image or video of a post, as a file on this machine (uploads, or downloaded for the publish)."""
    __slots__ = ("url", "path", "content_type", "kind", "alt", "name")

    def __init__(self, url: str, path: str, content_type: str, kind: str, alt: str, name: str):
        self.url, self.path, self.content_type, self.kind, self.alt, self.name = url, path, content_type, kind, alt, name

    def read(self) -> bytes:
        with open(self.path, "rb") as file:
            return file.read()


class OutgoingPost(NamedTuple):
    """What a publisher sends: one post (part 0) or thread part (1, 2...) of a rustiz post."""
    id: str
    html: str  # the content as stored: Postiz's HTML
    media: tuple  # of MediaFile
    settings: dict  # the provider's settings of the post (title, tags, community ...)
    part: int
    idempotency_key: str  # the same on every attempt of this part
    publish_date: str  # the post's date (ISO, UTC): the same on every attempt (an edit makes a new key too)
    settings_media: Optional[dict] = None  # the settings' media objects (YouTube's thumbnail) as MediaFiles, by name

    @property
    def text(self) -> str:
        return html_to_text(self.html)


class Release(NamedTuple):
    """Where a published part lives: Postiz's releaseId and releaseURL, and what a reply to it needs."""
    id: str
    url: str
    reply_ref: Any = None  # JSON-able, the provider's own (Bluesky's {root, parent} refs, a chat's message id...)


class Connected(NamedTuple):
    account: "ChannelAccount"
    session: Optional[dict] = None  # a cached login (tokens) to store with the channel
    limits: Optional[dict] = None  # the account's own limits, e.g. {"maxLength": 500, "maxMedia": 4}


class PublishError(Exception):
    """Why a part was not published: `message` in the platform's words, its HTTP status, and `body`: the
    platform's error answer when it has the platform's own error shape (Provider.error_excerpt), else ""."""

    def __init__(self, message: str, status: Optional[int] = None, body: str = "", item: str = ""):
        super().__init__(message)
        self.message, self.status, self.body, self.item = message, status, body, item


class Retryable(PublishError):
    """Not accepted, and safe to send again (refused connection, 429, 502/503...), after `after` seconds if known."""

    def __init__(self, message: str, status: Optional[int] = None, body: str = "", item: str = "",
                 after: Optional[float] = None):
        super().__init__(message, status, body, item)
        self.after = after


class NeedsReconnect(PublishError):
    """The platform refused the channel's credentials: the user must connect the channel again."""


class Rejected(PublishError):
    """The platform refused this post (too long, bad media...): sending it again would fail again."""


class OutcomeUnknown(PublishError):
    """The request was sent and no verdict came back: it may be published."""


class AddressNotAllowed(Rejected):
    """The address guard refused the platform's address (a private one, see http_client): nothing was sent,
    and nothing will be until the operator lists it in RUSTIZ_FETCH_ALLOW."""


class Channel:
    """What a publisher is given about the channel: its credentials, its cached session, the HTTP client."""

    def __init__(self, channel_id: str, name: str, credentials: dict, session: Optional[dict], http: HttpClient,
                 save_session: Callable[[dict], None] = lambda session: None):
        self.id, self.name, self.credentials, self.http = channel_id, name, credentials, http
        self.session = dict(session or {})
        self._save_session = save_session
        self.throttled_for = 0.0  # seconds the platform asked us to wait before the next call
        self.app: Any = None  # an OAuth platform's app (publishers/oauth.AppCredentials), when it signs with it

    def save_session(self, session: dict) -> None:
        self.session = dict(session)
        self._save_session(self.session)

    def throttle(self, seconds: float) -> None:
        self.throttled_for = max(self.throttled_for, seconds)


async def wait_for_processing(check: Callable[[], Awaitable[Any]], seconds: float, pause: float,
                              still_processing: Callable[[], PublishError], most: Optional[int] = None,
                              longest_pause: Optional[float] = None) -> Any:
    """`check()` again and again until it returns something other than None (which is returned), `pause`
    seconds apart (doubling up to `longest_pause` when given), for at most `seconds` and `most` checks; then
    raises still_processing(). `check` raises for what the platform says failed."""
    import asyncio
    deadline = time.monotonic() + seconds
    checks = 0
    while most is None or checks < most:
        checks += 1
        outcome = await check()
        if outcome is not None:
            return outcome
        if time.monotonic() + pause > deadline:
            break
        await asyncio.sleep(pause)
        if longest_pause is not None:
            pause = min(pause * 2, longest_pause)
    raise still_processing()


def tuned(variable: str, default: float, least: float = 0.0) -> float:
    """A wait or a size the environment may change (tests shorten polls and chunks: RUSTIZ_THREADS_POLL_SECONDS,
    RUSTIZ_YOUTUBE_CHUNK_BYTES...): `default` when unset or not a number, never below `least`."""
    import os
    try:
        return max(least, float(os.environ.get(variable) or default))
    except ValueError:
        return default


def error_fields(answer: Any, first: str, *more: str) -> Optional[str]:
    """"<first>: <more>..." from a JSON error object whose `first` field is a non-empty string (one
    platform's error shape); None for any other answer (a proxy's page, some other server's JSON)."""
    if not isinstance(answer, dict) or not isinstance(answer.get(first), str) or not answer[first].strip():
        return None
    return ": ".join(answer[key].strip() for key in (first, *more) if isinstance(answer.get(key), str)
                     and answer[key].strip())


def retry_after_seconds(reply: HttpReply) -> Optional[float]:
    """How long a throttled answer asks us to wait: Retry-After, a JSON retry_after, or a rate-limit reset."""
    value = reply.headers.get("retry-after")
    if value:
        if value.strip().replace(".", "", 1).isdigit():
            return float(value)
        from email.utils import parsedate_to_datetime
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            pass
    body = reply.json()
    if isinstance(body, dict):
        after = body.get("retry_after", (body.get("parameters") or {}).get("retry_after")
                         if isinstance(body.get("parameters"), dict) else None)
        if isinstance(after, (int, float)) and not isinstance(after, bool):
            return float(after)
    return rate_limit_reset_seconds(reply)


def rate_limit_reset_seconds(reply: HttpReply) -> Optional[float]:
    """Seconds until a rate-limit window resets: X-RateLimit-Reset / RateLimit-Reset as an epoch, ISO time or delta."""
    value = reply.headers.get("x-ratelimit-reset") or reply.headers.get("ratelimit-reset")
    if not value:
        return None
    value = value.strip()
    if value.replace(".", "", 1).isdigit():
        number = float(value)
        return max(0.0, number - time.time()) if number > 10**9 else number
    moment = parse_iso_instant(value)
    return max(0.0, moment.timestamp() - time.time()) if moment is not None else None


def analytics_figures(counts: dict) -> list:
    """Postiz's AnalyticsData for counts a platform gives as of now ({"Likes": 3, ...}; None values left out):
    one point each, dated today (UTC)."""
    today = time.strftime("%Y-%m-%d", time.gmtime())
    return [{"label": label, "data": [{"total": str(total), "date": today}], "percentageChange": 0}
            for label, total in counts.items()
            if isinstance(total, int) and not isinstance(total, bool) and total >= 0]


class Provider:
    """The interface every publisher implements; the defaults suit a platform with no special needs.

    What rustiz knows of the platform (its name, limits, how it counts text) is its descriptor in the
    catalogue, found by `identifier`; a publisher reads it rather than repeating it."""
    identifier = ""  # Postiz's, the key of its descriptor
    resend_is_safe = False  # a send with an unknown outcome may be repeated (idempotency key, same signed event)
    threads = True  # thread parts (value[1..]) go out as replies or comments
    concurrency = 4  # publishes at once on this platform, across channels
    spacing = 1.0  # seconds between the starts of two publishes on one channel
    # connect() only reads (the account, a login session): `rustiz doctor` calls it to check a channel's
    # credentials. False where it sends something the platform or its owner sees (the webhook's ping).
    connect_is_read_only = True
    can_delete = False  # the platform's API lets rustiz delete what it published (DELETE /posts/:id?onPlatform=true)

    @property
    def descriptor(self) -> ProviderDescriptor:
        return DESCRIPTORS[self.identifier]

    @property
    def label(self) -> str:
        """The platform's name in messages: "Failed on Mastodon (HTTP 422): ..."."""
        return self.descriptor.label

    def measured(self, channel: dict, html: str) -> tuple:
        """(length, limit) of one part's HTML as the descriptor counts it, within the channel's own limits."""
        return post_length(self.identifier, html, channel.get("additional_settings"), channel.get("limits"))

    async def connect(self, channel: Channel) -> Connected:
        """Check `channel.credentials` with the platform and read the account; raise a PublishError when refused."""
        raise NotImplementedError

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        """Publish one part; `parent` is the part before it (None for the post itself)."""
        raise NotImplementedError

    media_settings: tuple = ()  # settings holding a media object the publisher reads (OutgoingPost.settings_media)
    # Every post of the platform carries media that it downloads itself (Instagram): connecting is refused
    # while FRONTEND_URL cannot be reached from the platform, since no post could go out.
    needs_public_media = False

    def pulls_media(self, values: list, settings: dict) -> bool:
        """Whether the platform downloads this post's media itself, from each MediaFile.url (rustiz's
        FRONTEND_URL/uploads/...), rather than being sent the bytes: then FRONTEND_URL must be reachable
        from the platform, which is checked when the post is scheduled and again before it is sent.
        `values` are the thread's parts ({"content": html, "image": [...]})."""
        return False

    def media_origin_problem(self, frontend_url: str) -> Optional[str]:
        """Why the platform could not download media from rustiz's FRONTEND_URL, or None when it may. A
        platform that is itself on a private network (a self-hosted one, a test's fake) may reach it."""
        why = private_host_reason(frontend_url)
        api_base = getattr(self, "api_base", None)
        if why is None or (api_base is not None and private_host_reason(api_base())):
            return None
        return (f"{self.label} downloads a post's media itself from rustiz's FRONTEND_URL, and "
                f"{frontend_url or 'FRONTEND_URL'} is {why}, which {self.label} cannot reach: set FRONTEND_URL (in "
                "config.env) to this server's public https address, the one its reverse proxy serves, and restart")

    def media_refusal(self, values: list, settings: dict, frontend_url: str) -> Optional[str]:
        """Why this post cannot go out as it is: the platform would download its media from a FRONTEND_URL it
        cannot reach (checked when it is scheduled, and again before it is sent); None when it can."""
        return self.media_origin_problem(frontend_url) if self.pulls_media(values, settings) else None

    def channel_settings(self, schema: Any, limits: dict) -> Any:
        """The settings' JSON Schema as this channel's account allows it (GET /integration-settings/:id): the
        descriptor's, narrowed by what connect() learned into the channel's `limits`."""
        return schema

    def channel_tools(self, tools: list, credentials: dict) -> list:
        """The helper tools this channel can run (GET /integration-settings/:id): the descriptor's, less those
        its kind of connection cannot (a Discord webhook has no channels to list)."""
        return tools

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        """Why the platform would refuse this post, checked before it is accepted (None when it fits).

        `channel` holds "limits" (what connect() returned); `values` are the thread's parts
        ({"content": html, "image": [...]})."""
        return None

    def where_to_check(self, channel: Channel) -> str:
        """Where a person can see whether a post went out, for 'it may have been published' errors."""
        return f"the {self.label} account of the channel \"{channel.name}\""

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """The platform's own words in an error answer when the answer has the platform's error shape, e.g.
        Mastodon's {"error": ...}; None otherwise. Only these words are ever quoted."""
        return None

    def platform_words(self, reply: HttpReply) -> str:
        """What an error answer says, for messages: the platform's own words (bounded) when it has the
        platform's error shape; else its status and size only, never the body of whatever server answered."""
        words = self.error_words(reply)
        if not words:
            return reply.described(f"{self.label}'s error format")
        return words if len(words) <= ERROR_WORDS_LIMIT else words[:ERROR_WORDS_LIMIT] + "…"

    def error_excerpt(self, reply: HttpReply) -> str:
        """The error answer as compact JSON (bounded), for a failure's details, when it has the platform's
        error shape; "" otherwise."""
        answer = reply.json()
        if not isinstance(answer, dict) or not self.error_words(reply):
            return ""
        return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))[:2 * ERROR_WORDS_LIMIT]

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        """The account's figures in Postiz's AnalyticsData shape (see analytics_figures); None when the
        platform gives none."""
        return None

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        """One published post's figures (likes, reposts, replies...), as channel_analytics; None: none."""
        return None

    async def delete(self, channel: Channel, release: Release) -> None:
        """Delete one published part (release.id / release.url as stored at publish). Return normally when it is
        deleted or already gone (a 404 for that id is success); raise Rejected(message naming why) when the platform
        refuses, NeedsReconnect when the credentials are refused, Retryable on 429/5xx/network."""
        raise Rejected(f"{self.label} has no way to delete a published post through its API")

    async def send_delete(self, channel: Channel, method: str, url: str, what: str = "the deletion",
                          **request: Any) -> Optional[HttpReply]:
        """One deleting request (for delete()): its 2xx reply, or None when the platform answers that the item is
        not there (already_gone), which is what a deletion wants. A 5xx is Retryable: a deletion sent again
        deletes nothing twice."""
        try:
            return await self.send(channel, method, url, what=what, **request)
        except PublishError as error:
            if self.already_gone(error):
                return None
            raise

    def already_gone(self, error: PublishError) -> bool:
        """Whether a deleting request's error says the item is not there (404, 410; Graph says it its own way)."""
        return error.status in (404, 410)

    async def run_tool(self, channel: Channel, method_name: str, data: dict) -> Any:
        """A helper tool of POST /integration-trigger (the methodNames of the provider catalogue's `tools`):
        the `tool_<methodName>(channel, data)` coroutine of the subclass; LookupError when there is none."""
        tool = getattr(self, "tool_" + method_name, None) if re.fullmatch(r"[A-Za-z]\w*", method_name) else None
        if tool is None:
            raise LookupError(method_name)
        return await tool(channel, data)

    async def send(self, channel: Channel, method: str, url: str, visible: bool = False, what: str = "",
                   **request: Any) -> HttpReply:
        """One request to the platform; returns a 2xx reply, else raises the PublishError its answer means.

        `visible`: the request publishes something (a status, a message), so an answer that never
        came means the post may be out; anything else (login, media upload) is safe to repeat."""
        what = what or f"{method} {url.split('?')[0]}"
        try:
            reply = await channel.http.request(method, url, **request)
        except AddressRefused as error:
            raise AddressNotAllowed(str(error)) from None
        except ConnectFailed as error:
            raise Retryable(f"{self.label} could not be reached ({error})") from None
        except NoAnswer as error:
            if visible:
                raise OutcomeUnknown(f"{self.label} did not answer ({error})") from None
            raise Retryable(f"{self.label} did not answer {what} ({error})") from None
        self.note_rate_limit(channel, reply)
        return self.check_reply(reply, visible, what)

    @staticmethod
    def note_rate_limit(channel: Channel, reply: HttpReply) -> None:
        """No call before the window resets once X-RateLimit-Remaining (or RateLimit-Remaining) is below one;
        some platforms write it as a decimal ("0.0", Reddit)."""
        remaining = reply.headers.get("x-ratelimit-remaining") or reply.headers.get("ratelimit-remaining")
        try:
            exhausted = remaining is not None and float(remaining) < 1
        except ValueError:
            exhausted = False
        if exhausted:
            wait = rate_limit_reset_seconds(reply)
            if wait:
                channel.throttle(wait)

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """The reply when its status is 2xx; else the PublishError it means (shared by every publisher).

        The error's message is the platform's own words, plus which request it answered when that
        was not the post itself; the scheduler adds "Failed on <platform> (HTTP <status>)"."""
        status = reply.status
        if 200 <= status < 300:
            return reply
        message, body = self.platform_words(reply), self.error_excerpt(reply)
        if not visible:
            message += f" (on {what})"
        if status == 429:
            raise Retryable(message, status, body, after=retry_after_seconds(reply))
        if status in (401, 403):
            raise NeedsReconnect(message, status, body)
        if status in (502, 503) or (status >= 500 and not visible):
            # Only a Retry-After says when to come back: a rate-limit window's reset (which some platforms
            # send on every answer) says nothing about when the server will be well again.
            raise Retryable(message, status, body,
                            after=retry_after_seconds(reply) if "retry-after" in reply.headers else None)
        if status >= 500:
            raise OutcomeUnknown(f"a server error, after the post was sent: {message}", status, body)
        raise Rejected(message, status, body)
