"""Reddit, through the operator's app (OAuth 2.0, permanent refresh token): text, link and image posts to
one or more subreddits, thread parts as comments on each of them, and the subreddit search and restrictions
tools.

Reddit answers most refusals with HTTP 200: a token endpoint's {"error": "invalid_grant"}, a submission's
{"json": {"errors": [[CODE, message, field]]}}. Both are read here as the refusals they are, never as
success. An image post takes three steps: a lease (/api/media/asset.json), the file to the lease's S3
form, then the submission, whose answer holds no post id but a websocket that announces the post once
Reddit has processed the image. A video post (a "media" post whose file is a video, or the "video" and
"videogif" kinds) goes the same way with two files: the video, and the poster image Reddit requires
(video_poster_url), which is the post's one picture beside the video.
"""
from __future__ import annotations

import html
import json
import re
import time
from typing import Any, Optional
from urllib.parse import quote, urlencode, urljoin

from rustiz import VERSION
from ..catalogue import ChannelAccount
from ..http_client import ConnectFailed, HttpClient, HttpReply, Timeouts, encode_multipart
from .base import (
    Channel, Connected, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, PublishError, Rejected, Release,
    Retryable, analytics_figures, error_fields,
)
from .oauth import DEFINITE_REFUSALS, AppCredentials, OAuthProvider, TokenRefused, Tokens, bearer
from .websocket import WebSocketClient, WebSocketClosed


# Reddit asks every client for a unique, descriptive User-Agent, "<platform>:<app ID>:<version> (by ...)";
# generic ones (a library's default) are throttled hard or refused.
REDDIT_USER_AGENT = f"server:rustiz:{VERSION} (self-hosted scheduler)"

# The settings' post types (Postiz's "self", "link" and "media"; "text" and "image" as some clients write
# them) -> Reddit's kind.
POST_KINDS = {"self": "self", "text": "self", "link": "link", "media": "image", "image": "image", "video": "video",
              "videogif": "videogif"}
VIDEO_TYPES = ("video", "videogif")
MEDIA_KINDS = ("image", *VIDEO_TYPES)  # the kinds whose files go to Reddit's S3 and whose post a websocket announces
# How long an image or a video post waits for Reddit to say where the post is (a video takes longer to process).
REDDIT_MEDIA_WAIT_SECONDS = {"image": 60.0, "video": 300.0}
MAX_WEBSOCKET_MESSAGES = 20  # messages read while waiting for the post's (others are skipped)
TITLE_LIMIT = 300  # characters, Reddit's limit on a post's title
SUBREDDIT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_]{1,20}")
PROGRESS_KEY = "redditProgress"  # in the channel's session: what a partly published post already sent
_WAIT_WORDS = re.compile(r"(\d+)\s*(millisecond|second|minute|hour)s?", re.IGNORECASE)
_SECONDS_PER = {"millisecond": 0.001, "second": 1, "minute": 60, "hour": 3600}
# S3's error answer to an upload: <Error><Code>EntityTooLarge</Code><Message>...</Message>...</Error>
_S3_ERROR = re.compile(rb"<Error>\s*<Code>([A-Za-z]{1,64})</Code>\s*<Message>([^<]{1,300})</Message>")


def subreddit_name(value: Any) -> Optional[str]:
    """The bare name of a subreddit as settings and tools write it ("python", "r/python", "/r/python/"),
    or None when it is not a subreddit name."""
    if not isinstance(value, str):
        return None
    name = value.strip().strip("/")
    if name.lower().startswith("r/"):
        name = name[2:]
    return name if SUBREDDIT_NAME.fullmatch(name) else None


def subreddit_entries(settings: dict) -> list:
    """The {"value": {...}} entries of the post's settings, as their value dicts (Postiz's shape)."""
    entries = settings.get("subreddit") if isinstance(settings, dict) else None
    return [entry["value"] for entry in entries if isinstance(entry, dict) and isinstance(entry.get("value"), dict)] \
        if isinstance(entries, list) else []


def wait_from_words(message: str) -> Optional[float]:
    """Seconds from Reddit's RATELIMIT words ("... try again in 9 minutes.", "Take a break for 30 seconds")."""
    match = _WAIT_WORDS.search(message or "")
    return float(match[1]) * _SECONDS_PER[match[2].lower()] if match else None


def _has_video(media: list) -> bool:
    """Whether one of a post's media items is a video (by its name, as the catalogue's rules tell)."""
    return any(isinstance(item, dict) and re.search(r"\.(mp4|mov|webm|m4v)(\?|$)", str(item.get("path", "")), re.I)
               for item in media)


def video_post_problem(videos: int, pictures: int, name: str) -> Optional[str]:
    """Why a video post's media (so many videos and pictures) would not do: Reddit needs one video and a poster
    image; None when they do."""
    if videos != 1:
        return f"a video post to r/{name} takes exactly one video"
    if pictures != 1:
        return (f"a video post to r/{name} needs a poster image too (Reddit shows it before the video plays): add "
                "one picture beside the video")
    return None


def _reddit_errors(answer: Any) -> list:
    """The [[CODE, message, field], ...] of an api_type=json answer, or [] when it has none."""
    body = answer.get("json") if isinstance(answer, dict) else None
    errors = body.get("errors") if isinstance(body, dict) else None
    return [error for error in errors if isinstance(error, list) and error and isinstance(error[0], str)] \
        if isinstance(errors, list) else []


def _read_announcement(http: HttpClient, url: str, seconds: float) -> dict:
    """The first {"type": "success" | "failed", ...} message of a media post's websocket (a blocking call,
    run in the HTTP client's threads), within `seconds`."""
    deadline = time.monotonic() + seconds
    connection = WebSocketClient(url, time.monotonic() + 15.0, http)
    try:
        for _ in range(MAX_WEBSOCKET_MESSAGES):
            try:
                message = json.loads(connection.receive_text(deadline))
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("type") in ("success", "failed"):
                return message
        raise TimeoutError(f"no verdict in {MAX_WEBSOCKET_MESSAGES} messages")
    finally:
        connection.close()


def _error_text(errors: list) -> str:
    return "; ".join(": ".join(str(part) for part in error[:2] if isinstance(part, str) and part) for error in errors)


class RedditProvider(OAuthProvider):
    """Reddit's OAuth API (oauth.reddit.com) with a web app's tokens."""
    identifier = "reddit"
    app_variables = ("REDDIT_CLIENT_ID", "REDDIT_CLIENT_SECRET")
    auth_origin = "https://www.reddit.com"
    api_origin = "https://oauth.reddit.com"
    scopes = ("identity", "submit", "read", "flair", "mysubreddits")
    pkce = False  # Reddit's authorize endpoint knows no code_challenge
    authorize_path = "/api/v1/authorize"
    token_path = "/api/v1/access_token"
    # One app's quota (about 100 requests a minute) is shared by every channel, and Reddit throttles new
    # submissions per account: one publish at a time, as Postiz does (maxConcurrentJob = 1).
    concurrency = 1
    spacing = 5.0
    can_delete = True  # POST /api/del, each submission or comment of the part
    operator_guide = (
        "Create a \"web app\" at https://www.reddit.com/prefs/apps (\"are you a developer? create an app...\") with "
        "the redirect URI {FRONTEND_URL}/integrations/social/reddit, and put its client id (under the app's name) "
        "and secret in REDDIT_CLIENT_ID and REDDIT_CLIENT_SECRET. Since November 2025 Reddit reviews new API "
        "applications by hand under its Responsible Builder Policy: ask for access first (reddit.com/wiki/api), "
        "and expect it to take time or be refused. Free use is limited to about 100 requests a minute per app; "
        "commercial use needs an agreement with Reddit. rustiz asks for the scopes identity, submit, read, "
        "flair and mysubreddits, with a permanent refresh token.")

    # --- OAuth -------------------------------------------------------------------------------------

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        url = await super().begin(http, app, redirect_uri, state, None, details)
        return url + "&" + urlencode({"duration": "permanent"})  # else no refresh token, and an hour's access

    def token_request_headers(self, app: AppCredentials) -> dict:
        return {**super().token_request_headers(app), "User-Agent": REDDIT_USER_AGENT}

    def tokens_from(self, reply: HttpReply) -> Tokens:
        """Reddit answers a refused grant with HTTP 200 and {"error": "invalid_grant"}: never a success."""
        answer = reply.json()
        if isinstance(answer, dict) and isinstance(answer.get("error"), str) and answer["error"].strip():
            words, body = self.platform_words(reply), self.error_excerpt(reply)
            if answer["error"].strip() in DEFINITE_REFUSALS:
                raise TokenRefused(words, reply.status, body)
            raise Rejected(words, reply.status, body)  # unsupported_grant_type, NO_TEXT: our request is wrong
        return super().tokens_from(reply)

    # --- requests ------------------------------------------------------------------------------------

    async def _call(self, channel: Channel, method: str, path: str, **request: Any) -> HttpReply:
        headers = {**bearer(channel), "User-Agent": REDDIT_USER_AGENT, **request.pop("headers", {})}
        return await self.send(channel, method, self.api_base(channel) + path, headers=headers, **request)

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """A 403 is the token's fault only when Reddit says so (WWW-Authenticate: insufficient_scope or
        invalid_token); otherwise it is the subreddit refusing (private, banned, flair disabled)."""
        try:
            return super().check_reply(reply, visible, what)
        except NeedsReconnect as refused:
            challenge = reply.headers.get("www-authenticate", "")
            if reply.status == 403 and "insufficient_scope" not in challenge and "invalid_token" not in challenge:
                raise Rejected(refused.message, refused.status, refused.body) from None
            raise

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """Reddit's shapes: api_type=json errors, OAuth's {"error": "..."}, and the API's
        {"message": "Forbidden", "error": 403, "reason": "private"}."""
        answer = reply.json()
        errors = _reddit_errors(answer)
        if errors:
            return _error_text(errors)
        if not isinstance(answer, dict):
            s3_error = _S3_ERROR.search(reply.body[:4096])
            return html.unescape(f"{s3_error[1].decode()}: {s3_error[2].decode('utf-8', 'replace')}") if s3_error else None
        if isinstance(answer.get("error"), int) and not isinstance(answer["error"], bool):
            return error_fields(answer, "message", "reason", "explanation")
        return error_fields(answer, "error", "error_description")

    # --- the account ----------------------------------------------------------------------------------

    async def connect(self, channel: Channel) -> Connected:
        reply = await self._call(channel, "GET", "/api/v1/me", what="the account (/api/v1/me)")
        me = reply.json()
        if not isinstance(me, dict) or not me.get("id") or not isinstance(me.get("name"), str):
            raise Rejected(f"Reddit answered /api/v1/me with {reply.described('a Reddit account')}", reply.status)
        picture = me.get("icon_img")
        # Reddit's JSON escapes "&" in image URLs as "&amp;"; the signed query must stay, unescaped.
        picture = html.unescape(picture) if isinstance(picture, str) and picture.startswith("https://") else None
        return Connected(ChannelAccount(str(me["id"]), me["name"], me["name"], picture))

    # --- what Reddit would refuse ------------------------------------------------------------------

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        for value in subreddit_entries(settings):
            shown = value.get("subreddit")
            name = subreddit_name(shown)
            if name is None:
                return f"\"{shown}\" is not a subreddit name (write it as r/name)"
            post_type = value.get("type") if isinstance(value.get("type"), str) else None
            if post_type not in POST_KINDS:
                return f"the post type for r/{name} must be self, link, media or video, not \"{post_type}\""
            media = values[0]["image"]
            if post_type in VIDEO_TYPES or (POST_KINDS[post_type] == "image" and _has_video(media)):
                videos = sum(1 for item in media if _has_video([item]))
                problem = video_post_problem(videos, len(media) - videos, name)
                if problem:
                    return problem
            elif POST_KINDS[post_type] != "image" and media:
                return (f"the post to r/{name} is a {post_type} post, which carries no images: remove them, or "
                        "choose a media post (one image)")
            if isinstance(value.get("title"), str) and len(value["title"]) > TITLE_LIMIT:
                return f"the title for r/{name} is {len(value['title'])} characters long, and Reddit allows {TITLE_LIMIT}"
        for number, value in enumerate(values[1:], 1):
            if value.get("image"):
                return f"comment {number} has images, and Reddit comments are published without them: remove them"
        return None

    # --- publishing -------------------------------------------------------------------------------------

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        """The post goes to every subreddit of its settings (one submission each); a thread part is a
        comment on each of those submissions, as Postiz does. The Release joins the ids and URLs with ","
        (Postiz's releaseId / releaseURL for several subreddits).

        Reddit has no idempotency key: what went out is remembered in the channel's session until the part
        is done, so an attempt after a failure (a RATELIMIT on the second subreddit) sends only the rest."""
        done = self._progress(channel, post.idempotency_key)
        if parent is None:
            targets = [(f"{index}:{subreddit_name(value.get('subreddit'))}", value)
                       for index, value in enumerate(subreddit_entries(post.settings))]
            if not targets:
                raise Rejected("the post's settings name no subreddit")
        else:
            things = parent.reply_ref.get("things") if isinstance(parent.reply_ref, dict) else None
            if not isinstance(things, list) or not things:
                raise Rejected("the post this comment belongs to has no Reddit submission to comment on")
            targets = [(thing, None) for thing in things]
        pieces = []
        for key, value in targets:
            if key not in done:
                try:
                    done[key] = await (self._submit(channel, post, value) if value is not None
                                       else self._comment(channel, post, key))
                except PublishError as error:
                    raise self._partly_published(error, pieces) from None
                self._remember(channel, post.idempotency_key, done)
            pieces.append(done[key])
        self._forget(channel)
        things = [piece[1] for piece in pieces] if parent is None else parent.reply_ref["things"]
        return Release(",".join(piece[0] for piece in pieces), ",".join(piece[2] for piece in pieces),
                       {"things": things})

    async def delete(self, channel: Channel, release: Release) -> None:
        """POST /api/del for each submission (t3_) or comment (t1_) of the part: a submission's fullname is among
        its release's `things`. Reddit answers {} for what is deleted already."""
        things = release.reply_ref.get("things") if isinstance(release.reply_ref, dict) else None
        things = things if isinstance(things, list) else []
        for thing_id in filter(None, release.id.split(",")):
            if not re.fullmatch(r"[a-z0-9]+", thing_id):
                raise Rejected(f"{thing_id[:40]!r} is not a Reddit id")
            name = f"t3_{thing_id}" if f"t3_{thing_id}" in things else f"t1_{thing_id}"
            await self._call(channel, "POST", "/api/del", what=f"the deletion of {name}", form={"id": name})

    async def _submit(self, channel: Channel, post: OutgoingPost, value: dict) -> list:
        """[id, fullname, url] of a new submission to the entry's subreddit."""
        name = subreddit_name(value.get("subreddit"))
        if name is None or value.get("type") not in POST_KINDS:
            raise Rejected(f"rustiz cannot post a \"{value.get('type')}\" post to \"{value.get('subreddit')}\"")
        kind = POST_KINDS[value["type"]]
        if kind == "image" and any(item.kind == "video" for item in post.media):
            kind = "video"  # Postiz's "media" post whose file is a video
        form = {"api_type": "json", "sr": name, "kind": kind, "title": str(value.get("title") or ""),
                "text": post.text, "resubmit": "true", "sendreplies": "true"}
        if kind == "link":
            form["url"] = str(value.get("url") or "")
        if kind in MEDIA_KINDS:
            form.update(await self._media_fields(channel, post.media, kind, name))
        flair = value.get("flair")
        if isinstance(flair, dict) and isinstance(flair.get("id"), str) and flair["id"]:
            form["flair_id"] = flair["id"]
        reply = await self._call(channel, "POST", "/api/submit", visible=True, what=f"the post to r/{name}", form=form)
        data = self._json_data(reply, f"the post to r/{name}")
        if kind in MEDIA_KINDS and not data.get("id"):
            return await self._announced_post(channel, data, name, "image" if kind == "image" else "video")
        if not isinstance(data.get("id"), str) or not data["id"]:
            raise OutcomeUnknown(f"Reddit accepted the post to r/{name} but answered "
                                 f"{reply.described('a submitted post')}", reply.status)
        url = data.get("url") if isinstance(data.get("url"), str) and data["url"] else \
            f"{self.auth_base()}/r/{name}/comments/{data['id']}/"
        return [data["id"], data.get("name") or "t3_" + data["id"], url]

    async def _media_fields(self, channel: Channel, media: tuple, kind: str, name: str) -> dict:
        """The submission's url (the file on Reddit's S3) and, for a video, its video_poster_url."""
        pictures = [item for item in media if item.kind == "image"]
        if kind == "image":
            if len(pictures) != 1 or len(media) != 1:
                raise Rejected("a Reddit media post takes exactly one image")
            return {"url": await self._upload(channel, pictures[0], "the image")}
        videos = [item for item in media if item.kind == "video"]
        problem = video_post_problem(len(videos), len(pictures), name)
        if problem:
            raise Rejected(problem)
        return {"url": await self._upload(channel, videos[0], "the video"),
                "video_poster_url": await self._upload(channel, pictures[0], "the poster image")}

    async def _upload(self, channel: Channel, file: MediaFile, item: str) -> str:
        """The URL of one file on Reddit's S3: a lease from Reddit, then the file to the lease's form (no Reddit
        token goes to S3)."""
        reply = await self._call(channel, "POST", "/api/media/asset.json", what=f"{item}'s upload lease",
                                 form={"filepath": file.name, "mimetype": file.content_type})
        lease = reply.json()
        lease = lease.get("args") if isinstance(lease, dict) else None
        fields = lease.get("fields") if isinstance(lease, dict) else None
        if not isinstance(fields, list) or not isinstance(lease.get("action"), str) or not lease["action"]:
            raise Retryable(f"Reddit answered {item}'s upload lease with {reply.described('an upload lease')}",
                            reply.status, item=item)
        form = [(field["name"], str(field.get("value", ""))) for field in fields
                if isinstance(field, dict) and isinstance(field.get("name"), str)]
        key = dict(form).get("key")
        if not key:
            raise Retryable(f"Reddit's upload lease for {item} names no key", reply.status, item=item)
        # The action is protocol-relative ("//reddit-uploaded-media.s3-accelerate.amazonaws.com"): https in
        # production, the fake's scheme in tests.
        action = urljoin(self.api_base(channel) + "/", lease["action"]).rstrip("/")
        body, content_type = encode_multipart([*form, ("file", (file.name, file.read(), file.content_type))])
        try:
            await self.send(channel, "POST", action, what=f"the upload of {item}", body=body,
                            headers={"Content-Type": content_type, "User-Agent": REDDIT_USER_AGENT},
                            timeouts=Timeouts(read=120, total=600))
        except PublishError as error:
            error.item = error.item or item
            raise
        return f"{action}/{key}"

    async def _announced_post(self, channel: Channel, data: dict, name: str, what: str) -> list:
        """[id, fullname, url] of an image or video post, from the websocket its submission's answer names:
        Reddit says there where the post is once the file is processed ({"type": "success", "payload":
        {"redirect": url}}) or that it failed ({"type": "failed"})."""
        websocket_url = data.get("websocket_url")
        if not isinstance(websocket_url, str) or not websocket_url.startswith(("wss://", "ws://")):
            raise OutcomeUnknown(f"Reddit accepted the {what} post to r/{name} but did not say where it is (no websocket)")
        try:
            update = await channel.http.run_blocking(_read_announcement, channel.http, websocket_url,
                                                     REDDIT_MEDIA_WAIT_SECONDS[what])
        except (ConnectFailed, WebSocketClosed, TimeoutError, OSError) as error:
            raise OutcomeUnknown(f"Reddit accepted the {what} post to r/{name}, but its processing could not be "
                                 f"followed ({error})") from None
        if update.get("type") == "failed":
            raise Rejected(f"Reddit could not process the {what} of the post to r/{name}", item=f"the {what}")
        payload = update.get("payload") if isinstance(update.get("payload"), dict) else {}
        url = payload.get("redirect")
        match = re.search(r"/comments/([a-z0-9]+)", url) if isinstance(url, str) else None
        if match is None:
            raise OutcomeUnknown(f"Reddit processed the {what} post to r/{name} without saying where it is")
        return [match[1], "t3_" + match[1], url]

    async def _comment(self, channel: Channel, post: OutgoingPost, thing: str) -> list:
        """[id, fullname, url] of a new comment on the submission `thing` (t3_...)."""
        reply = await self._call(channel, "POST", "/api/comment", visible=True, what=f"the comment on {thing}",
                                 form={"api_type": "json", "thing_id": thing, "text": post.text})
        data = self._json_data(reply, f"the comment on {thing}")
        things = data.get("things")
        comment = things[0].get("data") if isinstance(things, list) and things and isinstance(things[0], dict) else None
        if not isinstance(comment, dict) or not isinstance(comment.get("id"), str):
            raise OutcomeUnknown(f"Reddit accepted the comment on {thing} but answered "
                                 f"{reply.described('a new comment')}", reply.status)
        permalink = comment.get("permalink")
        url = self.auth_base() + permalink if isinstance(permalink, str) and permalink.startswith("/") else ""
        return [comment["id"], comment.get("name") or "t1_" + comment["id"], url]

    def _json_data(self, reply: HttpReply, what: str) -> dict:
        """json.data of a 200 answer; Reddit's json.errors (sent with HTTP 200) raised as the refusals they are."""
        answer = reply.json()
        errors = _reddit_errors(answer)
        if errors:
            words, body = _error_text(errors), self.error_excerpt(reply)
            if any(error[0] == "RATELIMIT" for error in errors):
                after = answer["json"].get("ratelimit")
                after = float(after) if isinstance(after, (int, float)) and not isinstance(after, bool) and after > 0 \
                    else wait_from_words(words)
                raise Retryable(words, reply.status, body, after=after)
            raise Rejected(words, reply.status, body)
        body = answer.get("json") if isinstance(answer, dict) else None
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, dict):
            raise OutcomeUnknown(f"Reddit answered {what} with {reply.described('a Reddit answer')}", reply.status)
        return data

    @staticmethod
    def _partly_published(error: PublishError, pieces: list) -> PublishError:
        """The error, saying what of this part is already out (it stays out, and is not sent again)."""
        urls = [piece[2] for piece in pieces]
        if urls:
            error.message = f"{error.message} (already published: {', '.join(urls)})"
            error.args = (error.message,)
        return error

    @staticmethod
    def _progress(channel: Channel, key: str) -> dict:
        progress = channel.session.get(PROGRESS_KEY)
        if isinstance(progress, dict) and progress.get("key") == key and isinstance(progress.get("done"), dict):
            return dict(progress["done"])
        return {}

    @staticmethod
    def _remember(channel: Channel, key: str, done: dict) -> None:
        # Only the part being published is kept: the session never grows with old posts.
        channel.save_session({**channel.session, PROGRESS_KEY: {"key": key, "done": done}})

    @staticmethod
    def _forget(channel: Channel) -> None:
        if PROGRESS_KEY in channel.session:
            channel.save_session({name: value for name, value in channel.session.items() if name != PROGRESS_KEY})

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        reply = await self._call(channel, "GET", "/api/v1/me", what="the account's karma")
        me = reply.json() if isinstance(reply.json(), dict) else {}
        return analytics_figures({"Karma": me.get("total_karma"), "Post karma": me.get("link_karma"),
                                  "Comment karma": me.get("comment_karma")})

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        """Score and comments, summed over the submissions of the post (one per subreddit)."""
        names = ",".join(f"t3_{piece}" for piece in release.id.split(",") if re.fullmatch(r"[a-z0-9]{1,13}", piece))
        if not names:
            return None
        reply = await self._call(channel, "GET", f"/api/info?id={names}", what="the post's score")
        listing = reply.json() if isinstance(reply.json(), dict) else {}
        children = (listing.get("data") or {}).get("children") if isinstance(listing.get("data"), dict) else None
        things = [child.get("data") for child in children or [] if isinstance(child, dict)
                  and isinstance(child.get("data"), dict)]
        if not things:
            return None
        return analytics_figures({"Score": sum(t.get("score", 0) for t in things if isinstance(t.get("score"), int)),
                                  "Comments": sum(t.get("num_comments", 0) for t in things
                                                  if isinstance(t.get("num_comments"), int))})

    def where_to_check(self, channel: Channel) -> str:
        return f"the submitted posts of the Reddit account of the channel \"{channel.name}\""

    # --- tools (POST /integration-trigger) -----------------------------------------------------------

    async def tool_subreddits(self, channel: Channel, data: dict) -> list:
        """Public subreddits matching `word` that take more than images: [{title, name: "/r/x/", id}] (Postiz's)."""
        word = str((data or {}).get("word") or "").strip()[:100]
        if not word:
            return []
        query = urlencode({"q": word, "show": "public", "sort": "activity", "show_users": "false", "limit": 10})
        reply = await self._call(channel, "GET", f"/subreddits/search?{query}", what="the subreddit search")
        listing = reply.json()
        children = (listing.get("data") or {}).get("children") if isinstance(listing, dict) else None
        found = []
        for child in children if isinstance(children, list) else ():
            sub = child.get("data") if isinstance(child, dict) else None
            if isinstance(sub, dict) and sub.get("subreddit_type") == "public" and sub.get("submission_type") != "image":
                found.append({"title": sub.get("title") or "", "name": sub.get("url") or "", "id": sub.get("id") or ""})
        return found

    async def tool_restrictions(self, channel: Channel, data: dict) -> dict:
        """What a subreddit allows: {subreddit, allow: ["self", "link"], is_flair_required, flairs: [{id, name}]}."""
        shown = (data or {}).get("subreddit")
        name = subreddit_name(shown)
        if name is None:
            raise Rejected(f"\"{shown}\" is not a subreddit name")
        path = quote(name)
        about = (await self._call(channel, "GET", f"/r/{path}/about", what=f"r/{name}'s settings")).json()
        about = about.get("data") if isinstance(about, dict) and isinstance(about.get("data"), dict) else {}
        submission_type = about.get("submission_type")
        allow = [kind for kind, types in (("self", ("any", "self")), ("link", ("any", "link")))
                 if submission_type in types]
        requirements = (await self._call(channel, "GET", f"/api/v1/{path}/post_requirements",
                                         what=f"r/{name}'s post requirements")).json()
        return {"subreddit": shown, "allow": allow,
                "is_flair_required": isinstance(requirements, dict) and requirements.get("is_flair_required") is True,
                "flairs": await self._flairs(channel, name)}

    async def _flairs(self, channel: Channel, name: str) -> list:
        """The subreddit's post flairs, [] where it has them switched off (Reddit answers 403) or none."""
        try:
            reply = await self._call(channel, "GET", f"/r/{quote(name)}/api/link_flair_v2", what=f"r/{name}'s flairs")
        except Rejected:
            return []
        flairs = reply.json()
        return [{"id": flair["id"], "name": html.unescape(flair.get("text") or "")}
                for flair in flairs if isinstance(flair, dict) and isinstance(flair.get("id"), str)] \
            if isinstance(flairs, list) else []


PROVIDER = RedditProvider()
