"""Threads (Meta's Threads API, graph.threads.net), through the operator's app: consent, a short-lived token
exchanged at once for a 60-day one that refreshes itself (th_refresh_token), and posts as media containers.

Every post is a container (TEXT, IMAGE, VIDEO, or a CAROUSEL of item containers) that Threads prepares,
polled until FINISHED, then published with threads_publish; thread parts are replies to the part before
(reply_to_id). Threads downloads images and videos itself from their URLs (MediaFile.url, under rustiz's
FRONTEND_URL), so nothing is uploaded. A container is invisible until published: only threads_publish is
the visible request, and it is never sent twice for one attempt.
Errors come in the Graph shape {"error": {"message", "type", "code", "error_subcode", "fbtrace_id"}}, whose
code, not the HTTP status, says what happened (190: the token is dead; 4/17/32/613: throttled).
"""
from __future__ import annotations

import time
from typing import Any, Optional
from urllib.parse import quote, urlencode

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply
from .base import (
    Channel, Connected, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, PublishError, Rejected, Release,
    Retryable, analytics_figures, retry_after_seconds, tuned, wait_for_processing,
)
from .meta import (
    DEAD_TOKEN_CODES, PASSING_CODES, PERMISSION_CODES, THROTTLED_CODES, graph_error, graph_object_gone, graph_words,
    self_refreshing,
)
from .oauth import AppCredentials, OAuthProvider, TokenRefused, Tokens

GRAPH_VERSION = "/v1.0"
CAROUSEL_LIMIT = 20
ALT_TEXT_LIMIT = 1000
IMAGE_TYPES = ("image/jpeg", "image/png")  # what Threads takes (its media specifications)
VIDEO_TYPES = ("video/mp4", "video/quicktime")
# Container processing: Threads fetches and transcodes the media; Meta suggests giving it up to 5 minutes.
THREADS_WAIT_SECONDS = 300.0
THREADS_MAX_POLLS = 60
THREADS_POLL_SECONDS = 5.0  # RUSTIZ_THREADS_POLL_SECONDS overrides it (tests)
FIRST_INSIGHTS_DAY = 1712991600  # user insights' since/until do not go before 2024-04-13
USER_METRICS = {"views": "Views", "likes": "Likes", "replies": "Replies", "reposts": "Reposts",
                "quotes": "Quotes", "followers_count": "Followers"}
POST_METRICS = {"views": "Views", "likes": "Likes", "replies": "Replies", "reposts": "Reposts",
                "quotes": "Quotes"}


def _number(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None




def insight_series(data: Any, labels: dict) -> list:
    """Postiz's AnalyticsData from an insights answer's data: a daily metric ("values" with end_time) as its
    days, a total ("total_value", or a lifetime "values" without end_time) as one point today."""
    today = time.strftime("%Y-%m-%d", time.gmtime())
    figures = []
    for metric in data if isinstance(data, list) else ():
        label = labels.get(metric.get("name")) if isinstance(metric, dict) else None
        if label is None:
            continue
        total = metric.get("total_value") if isinstance(metric.get("total_value"), dict) else None
        values = [value for value in metric.get("values") or () if isinstance(value, dict)
                  and _number(value.get("value")) is not None] if isinstance(metric.get("values"), list) else []
        if total is not None and _number(total.get("value")) is not None:
            points = [{"total": str(total["value"]), "date": today}]
        else:
            points = [{"total": str(value["value"]), "date": str(value.get("end_time") or today)[:10]}
                      for value in values]
        if points:
            figures.append({"label": label, "data": points, "percentageChange": 0})
    return figures


class ThreadsProvider(OAuthProvider):
    identifier = "threads"
    app_variables = ("THREADS_APP_ID", "THREADS_APP_SECRET")
    auth_origin = "https://threads.net"  # the authorization window
    api_origin = "https://graph.threads.net"  # the API and its token endpoints
    authorize_path = "/oauth/authorize"
    token_path = "/oauth/access_token"  # on the API origin
    # Postiz's four: replies are posted (threads_manage_replies), never read, so threads_read_replies (which
    # app review would want justified) is not asked for.
    # rustiz adds threads_delete (Meta's since 2025) so that a published post can be deleted from rustiz too.
    scopes = ("threads_basic", "threads_content_publish", "threads_manage_replies", "threads_manage_insights",
              "threads_delete")
    can_delete = True  # DELETE /{threads-media-id}, 100 deletions a day per account
    pkce = False  # the authorization window takes no code_challenge
    concurrency = 2  # Postiz's maxConcurrentJob
    # A long-lived token lasts 60 days and may be refreshed once a day old: refreshed a month ahead, so a
    # server stopped for weeks still finds it alive.
    refresh_ahead_seconds = 30 * 86400.0
    operator_guide = (
        "Create an app at developers.facebook.com/apps with the \"Access the Threads API\" use case, and use its "
        "Threads app id and Threads app secret (App settings > Basic; not the Meta app's own) as THREADS_APP_ID and "
        "THREADS_APP_SECRET. Add the permissions threads_basic, threads_content_publish, threads_manage_replies, "
        "threads_manage_insights and threads_delete (to delete a post from rustiz too), and register {FRONTEND_URL}/integrations/social/threads "
        "as a redirect callback URL: Meta takes https callbacks only. Until Meta's app review grants them, only "
        "the Threads testers added to the app (who accept the invitation in their Threads settings) can connect. "
        "Threads downloads every image and video from FRONTEND_URL/uploads, so it must be reachable from the "
        "internet. Tokens last 60 days; rustiz refreshes them a month ahead.")

    # --- OAuth -------------------------------------------------------------------------------------

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        # The scopes are comma-separated, as Meta documents them.
        query = {"client_id": app.client_id, "redirect_uri": redirect_uri, "scope": ",".join(self.scopes),
                 "response_type": "code", "state": state}
        return f"{self.auth_base()}{self.authorize_path}?{urlencode(query)}"

    async def exchange_code(self, http: HttpClient, app: AppCredentials, code: str, redirect_uri: str,
                            code_verifier: Optional[str], details: dict) -> Tokens:
        """The code for an hour-long token (and the user id), then that for a 60-day one at once."""
        channel = Channel("", "", {}, None, http)
        reply = await self._token_call(channel, "POST", self.token_path, "the code exchange", form={
            "client_id": app.client_id, "client_secret": app.client_secret, "grant_type": "authorization_code",
            "redirect_uri": redirect_uri, "code": code})
        short = reply.json()
        if not isinstance(short, dict) or not isinstance(short.get("access_token"), str):
            raise Retryable(f"Threads answered the code exchange with {reply.described('a token')}", reply.status)
        query = {"grant_type": "th_exchange_token", "client_secret": app.client_secret,
                 "access_token": short["access_token"]}
        long_lived = self._tokens(await self._token_call(channel, "GET", "/access_token?" + urlencode(query),
                                                         "the long-lived token exchange"))
        user_id = short.get("user_id")
        extra = {"userId": str(user_id)} if isinstance(user_id, (int, str)) and str(user_id) else None
        return long_lived._replace(extra=extra)

    async def refresh_tokens(self, http: HttpClient, app: AppCredentials, refresh_token: str) -> Tokens:
        """A long-lived token refreshes itself (once at least a day old) for 60 more days."""
        query = {"grant_type": "th_refresh_token", "access_token": refresh_token}
        try:
            reply = await self._token_call(Channel("", "", {}, None, http), "GET",
                                           "/refresh_access_token?" + urlencode(query), "the token refresh")
        except Rejected as refused:  # not a dead token (that is TokenRefused): the token may still work
            raise Retryable(refused.message, refused.status, refused.body) from None
        except NeedsReconnect as refused:  # a permission taken back: only a new consent helps
            if isinstance(refused, TokenRefused):
                raise
            raise TokenRefused(refused.message, refused.status, refused.body) from None
        return self._tokens(reply)

    async def _token_call(self, channel: Channel, method: str, path: str, what: str, **request: Any) -> HttpReply:
        return await self.send(channel, method, self.api_base() + path, what=what, **request)

    def _tokens(self, reply: HttpReply) -> Tokens:
        return self_refreshing(self.tokens_from(reply))

    # --- errors ------------------------------------------------------------------------------------

    def error_words(self, reply: HttpReply) -> Optional[str]:
        error = graph_error(reply.json())
        return None if error is None else graph_words(error)

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """Graph's code decides, whatever the HTTP status (a throttled call answers 400 or 403)."""
        error = graph_error(reply.json()) if reply.status >= 400 else None
        if error is None or reply.status >= 500:
            return super().check_reply(reply, visible, what)
        code, message, body = error["code"], self.platform_words(reply), self.error_excerpt(reply)
        if not visible:
            message += f" (on {what})"
        if code in DEAD_TOKEN_CODES:  # the token is its own refresh token: only a new consent helps
            raise TokenRefused(message, reply.status, body)
        if code in THROTTLED_CODES or code in PASSING_CODES or error.get("is_transient") is True:
            raise Retryable(message, reply.status, body, after=retry_after_seconds(reply))
        if code in PERMISSION_CODES:  # a permission the user did not grant: a new consent may grant it
            raise NeedsReconnect(message, reply.status, body)
        raise Rejected(message, reply.status, body)

    def where_to_check(self, channel: Channel) -> str:
        username = channel.session.get("username")
        return f"the Threads profile @{username}" if username else super().where_to_check(channel)

    # --- requests ----------------------------------------------------------------------------------

    def _url(self, path: str, channel: Channel, **query: Any) -> str:
        query["access_token"] = channel.credentials["accessToken"]
        return f"{self.api_base()}{GRAPH_VERSION}/{path}?{urlencode(query)}"

    async def _get(self, channel: Channel, path: str, what: str, **query: Any) -> Any:
        reply = await self.send(channel, "GET", self._url(path, channel, **query), what=what)
        return reply.json()

    async def _post(self, channel: Channel, path: str, what: str, form: dict, visible: bool = False) -> str:
        """POST with the token in the form; the id the answer names."""
        reply = await self.send(channel, "POST", f"{self.api_base()}{GRAPH_VERSION}/{path}", visible=visible,
                                what=what, form={**form, "access_token": channel.credentials["accessToken"]})
        answer = reply.json()
        if not isinstance(answer, dict) or not str(answer.get("id") or ""):
            problem = f"Threads answered {what} with {reply.described('an id')}"
            raise OutcomeUnknown(problem, reply.status) if visible else Retryable(problem, reply.status)
        return str(answer["id"])

    @staticmethod
    def _user(channel: Channel) -> str:
        return quote(str(channel.credentials.get("userId") or "me"), safe="")

    # --- the account -------------------------------------------------------------------------------

    async def connect(self, channel: Channel) -> Connected:
        me = await self._get(channel, "me", "the profile (/me)", fields="id,username,name,threads_profile_picture_url")
        if not isinstance(me, dict) or not str(me.get("id") or "") or not isinstance(me.get("username"), str):
            raise Rejected("Threads answered /me without a profile id and username")
        name = me.get("name") if isinstance(me.get("name"), str) and me["name"].strip() else me["username"]
        picture = me.get("threads_profile_picture_url")
        account = ChannelAccount(str(me["id"]), name, me["username"], picture if isinstance(picture, str) and picture
                                 else None)
        return Connected(account, session={"username": me["username"]})

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        until = int(time.time())
        since = max(FIRST_INSIGHTS_DAY, until - 86400 * max(1, days))
        answer = await self._get(channel, f"{self._user(channel)}/threads_insights", "the profile's insights",
                                 metric=",".join(USER_METRICS), since=since, until=until)
        return insight_series(answer.get("data") if isinstance(answer, dict) else None, USER_METRICS)

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        answer = await self._get(channel, f"{quote(release.id, safe='')}/insights", "the post's insights",
                                 metric=",".join(POST_METRICS))
        data = answer.get("data") if isinstance(answer, dict) else None
        totals = {}
        for metric in data if isinstance(data, list) else ():
            if isinstance(metric, dict) and metric.get("name") in POST_METRICS:
                values = metric.get("values") if isinstance(metric.get("values"), list) else []
                total = metric.get("total_value") if isinstance(metric.get("total_value"), dict) else {}
                first = values[0] if values and isinstance(values[0], dict) else {}
                totals[POST_METRICS[metric["name"]]] = _number(first.get("value", total.get("value")))
        return analytics_figures(totals)

    # --- what Threads would refuse -------------------------------------------------------------------

    def pulls_media(self, values: list, settings: dict) -> bool:
        return any(value.get("image") for value in values if isinstance(value, dict))

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        for number, value in enumerate(values):
            media = value.get("image") or [] if isinstance(value, dict) else []
            where = "the post" if number == 0 else f"reply {number}"
            if len(media) > CAROUSEL_LIMIT:
                return f"{where} has {len(media)} media items, and a Threads carousel takes at most {CAROUSEL_LIMIT}"
            for item in media:
                name = str(item.get("path", "")).split("?")[0].rsplit("/", 1)[-1] if isinstance(item, dict) else ""
                extension = name.rpartition(".")[2].lower() if "." in name else ""
                if extension in ("gif", "webp", "bmp", "tif", "tiff", "avif", "heic", "heif", "svg", "webm", "mkv"):
                    return f"Threads takes JPEG and PNG pictures and MP4 or MOV videos, not .{extension} ({where})"
        return None

    # --- publishing ----------------------------------------------------------------------------------

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        container, item = await self._container(channel, post, {"reply_to_id": parent.id} if parent else {})
        await self._wait_until_finished(channel, container, item)
        media_id = await self._post(channel, f"{self._user(channel)}/threads_publish", "the post",
                                    {"creation_id": container}, visible=True)
        return Release(media_id, await self._permalink(channel, media_id))

    async def delete(self, channel: Channel, release: Release) -> None:
        """DELETE /{threads-media-id} (a reply too): {"success": true, "deleted_id"}. A channel connected before
        rustiz asked for threads_delete is refused for want of it: connecting it again grants it."""
        if not release.id.isdigit():
            raise Rejected(f"{release.id[:40]!r} is not a Threads media id")
        await self.send_delete(channel, "DELETE", self._url(release.id, channel), "the deletion of the post")

    def already_gone(self, error: PublishError) -> bool:
        return graph_object_gone(error)

    async def _container(self, channel: Channel, post: OutgoingPost, reply_to: dict) -> tuple:
        """(the id of the part's container, what it holds): TEXT, one IMAGE or VIDEO, or a CAROUSEL of items."""
        path, media = f"{self._user(channel)}/threads", post.media
        text = {"text": post.text} if post.text.strip() else {}  # optional beside media
        if not media:
            if not text:
                raise Rejected("a Threads post without media needs text")
            return await self._post(channel, path, "the text container", {"media_type": "TEXT", **text,
                                                                           **reply_to}), "the post"
        if len(media) > CAROUSEL_LIMIT:
            raise Rejected(f"a Threads carousel takes at most {CAROUSEL_LIMIT} media items, not {len(media)}")
        if len(media) == 1:
            item = "the " + media[0].kind
            fields = self._media_fields(media[0], item)
            return await self._post(channel, path, f"{item}'s container", {**fields, **text, **reply_to}), item
        # Every item is checked before the first container is made.
        items = [self._media_fields(file, f"media item {number}") for number, file in enumerate(media, 1)]
        children = [await self._post(channel, path, f"carousel item {number}", {**fields, "is_carousel_item": "true"})
                    for number, fields in enumerate(items, 1)]
        for number, child in enumerate(children, 1):
            await self._wait_until_finished(channel, child, f"media item {number}")
        return await self._post(channel, path, "the carousel container", {
            "media_type": "CAROUSEL", "children": ",".join(children), **text, **reply_to}), "the carousel"

    @staticmethod
    def _media_fields(item: MediaFile, name: str) -> dict:
        content_type = item.content_type.split(";")[0].strip().lower()
        if item.kind == "video":
            if content_type not in VIDEO_TYPES:
                raise Rejected(f"Threads takes MP4 and MOV videos, and {name} is {content_type}", item=name)
            fields = {"media_type": "VIDEO", "video_url": item.url}
        else:
            if content_type not in IMAGE_TYPES:
                raise Rejected(f"Threads takes JPEG and PNG pictures, and {name} is {content_type}", item=name)
            fields = {"media_type": "IMAGE", "image_url": item.url}
        if item.alt:
            fields["alt_text"] = item.alt[:ALT_TEXT_LIMIT]
        return fields

    async def _wait_until_finished(self, channel: Channel, container: str, item: str) -> None:
        """Poll the container (IN_PROGRESS, then FINISHED, ERROR or EXPIRED) a bounded number of times."""
        async def finished() -> Optional[bool]:
            answer = await self._get(channel, quote(container, safe=""), f"the processing of {item}",
                                     fields="status,error_message")
            status = answer.get("status") if isinstance(answer, dict) else None
            if status == "ERROR":
                words = answer.get("error_message") if isinstance(answer.get("error_message"), str) else ""
                raise Rejected(f"Threads could not process {item}: {words.strip()[:300] or 'no reason given'}",
                               item=item)
            if status == "EXPIRED":  # unpublished for a day: a new attempt makes a new container
                raise Retryable(f"the Threads container of {item} expired before it was published", item=item)
            return True if status in ("FINISHED", "PUBLISHED") else None

        await wait_for_processing(
            finished, THREADS_WAIT_SECONDS, tuned("RUSTIZ_THREADS_POLL_SECONDS", THREADS_POLL_SECONDS, 0.01),
            lambda: Retryable(f"Threads was still processing {item} after {THREADS_MAX_POLLS} checks; the post "
                              "waits and tries again", item=item), most=THREADS_MAX_POLLS)

    async def _permalink(self, channel: Channel, media_id: str) -> str:
        """The post's address. It is live already: a failure here never fails (and re-sends) it."""
        try:
            answer = await self._get(channel, quote(media_id, safe=""), "the post's permalink", fields="permalink")
        except PublishError:
            answer = None
        if isinstance(answer, dict) and isinstance(answer.get("permalink"), str) and answer["permalink"]:
            return answer["permalink"]
        username = channel.session.get("username")
        return f"{self.auth_base()}/@{username}" if username else ""


PROVIDER = ThreadsProvider()
