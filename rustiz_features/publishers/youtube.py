"""YouTube (Data API v3), through the operator's Google app: OAuth 2.0 with offline access, one video per post
by Google's resumable upload protocol, its thumbnail, and thread parts as comments on the video.

The video goes up in chunks read from the file, never whole into memory. The upload session's URI is kept in
the channel's session under the part's idempotency key: a chunk that fails, or an attempt that ends, resumes
from the byte Google acknowledges rather than sending the video again. Google's hosts differ: the consent page
(accounts.google.com) and token endpoint (oauth2.googleapis.com) both follow RUSTIZ_YOUTUBE_AUTH_URL, the API
and its upload paths (www.googleapis.com) RUSTIZ_YOUTUBE_API_URL.
"""
from __future__ import annotations

import os
import re
import time
from typing import Any, Optional
from urllib.parse import quote, urlsplit

from ..catalogue import ChannelAccount
from ..http_client import HttpReply, Timeouts
from ..text import html_to_text
from .base import (
    Channel, Connected, MediaFile, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable, analytics_figures,
    retry_after_seconds, tuned,
)
from .google import SCOPE, GoogleOAuthProvider, google_error
from .oauth import bearer

UPLOADS_KEY = "youtubeUploads"  # in the channel's session: idempotency key -> {"uri", "video"} of an upload
CHUNK_WHAT = "the video's upload"
CHUNK_UNIT = 256 * 1024  # Google takes chunks in multiples of 256 KiB (all but the last)
DEFAULT_CHUNK_BYTES = 32 * CHUNK_UNIT  # 8 MiB; RUSTIZ_YOUTUBE_CHUNK_BYTES overrides it (tests: a few bytes)
CHUNK_FAILURES = 3  # failed chunks resumed within one attempt; then the attempt ends and the next resumes
THUMBNAIL_LIMIT = 2 * 2**20  # YouTube's limit on a custom thumbnail
DEFAULT_CATEGORY = "22"  # "People & Blogs", what YouTube's own upload page defaults to
DESCRIPTION_BYTES = 5000
QUOTA_REASONS = ("quotaExceeded", "dailyLimitExceeded")  # the project's daily quota, reset at midnight Pacific
RATE_REASONS = ("rateLimitExceeded", "userRateLimitExceeded")
# 403 reasons a new consent cures (a scope unticked on Google's consent page, a token Google disowns).
REAUTH_REASONS = ("insufficientPermissions", "authError", "unauthorized")
NO_CHANNEL = ("This Google account has no YouTube channel: create one (youtube.com, \"Create a channel\") with "
              "the account, then connect it again")


def seconds_to_quota_reset() -> float:
    """Until the next midnight in California, when Google resets a project's daily quota."""
    try:
        from datetime import datetime, timedelta
        from zoneinfo import ZoneInfo
        now = datetime.now(ZoneInfo("America/Los_Angeles"))
        midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
        return max(60.0, (midnight - now).total_seconds() + 60)
    except Exception:  # no time zone data on this machine: Pacific Standard Time, UTC-8
        return max(60.0, 86400 - (time.time() - 8 * 3600) % 86400 + 60)


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def thumbnail_path(settings: dict) -> Optional[str]:
    thumbnail = settings.get("thumbnail") if isinstance(settings, dict) else None
    path = thumbnail.get("path") if isinstance(thumbnail, dict) else None
    return path if isinstance(path, str) and path else None


def count(value: Any) -> Optional[int]:
    """YouTube's statistics are decimal strings ("1234")."""
    return int(value) if isinstance(value, str) and value.isdigit() else None


def acknowledged(reply: HttpReply) -> int:
    """The next byte to send after a 308: one past the end of the Range Google holds (none: from 0)."""
    match = re.fullmatch(r"\s*bytes=0-(\d+)\s*", reply.headers.get("range", ""))
    return int(match[1]) + 1 if match else 0


class YouTubeProvider(GoogleOAuthProvider):
    identifier = "youtube"
    media_settings = ("thumbnail",)  # read from this machine's file, as the video
    app_variables = ("YOUTUBE_CLIENT_ID", "YOUTUBE_CLIENT_SECRET")
    api_origin = "https://www.googleapis.com"  # /youtube/v3 and /upload/youtube/v3
    can_delete = True  # videos.delete, and comments.delete for a thread part
    # Postiz's scopes, less userinfo.email, youtubepartner and yt-analytics.readonly, which rustiz never uses
    # (every scope asked lengthens Google's verification). force-ssl is the one comments need.
    scopes = (SCOPE + "userinfo.profile", SCOPE + "youtube", SCOPE + "youtube.force-ssl", SCOPE + "youtube.readonly",
              SCOPE + "youtube.upload")
    pkce = True
    concurrency = 1  # as Postiz (maxConcurrentJob): one upload at a time on the project's quota
    operator_guide = (
        "Create a project at console.cloud.google.com, enable the \"YouTube Data API v3\", configure the OAuth "
        "consent screen (External; add the scopes youtube, youtube.upload, youtube.readonly, youtube.force-ssl "
        "and userinfo.profile), then create an OAuth client ID of type \"Web application\" with the authorized "
        "redirect URI {FRONTEND_URL}/integrations/social/youtube, and put its client ID and secret in "
        "YOUTUBE_CLIENT_ID and YOUTUBE_CLIENT_SECRET. While the consent screen is in \"Testing\", only its test "
        "users can connect and Google expires their refresh tokens after 7 days: publish the app (Google "
        "verifies apps asking YouTube scopes, and videos uploaded by an unaudited project are locked private "
        "until YouTube's API audit passes). A project's default quota is 100 uploads a day, and 10,000 units a day "
        "for the other calls (a thumbnail or a comment costs 50), reset at midnight Pacific time.")

    # --- OAuth ------------------------------------------------------------------------------------------

    def check_scopes(self, reply: HttpReply) -> None:
        """Google lets the user untick scopes on its consent page: refuse a grant that cannot upload or comment."""
        granted = reply.json().get("scope") if isinstance(reply.json(), dict) else None
        if not isinstance(granted, str):
            return
        names = set(granted.split())
        missing = [need for need in ("youtube.upload", "youtube.force-ssl")
                   if SCOPE + need not in names and SCOPE + "youtube" not in names]
        if missing:
            raise Rejected("Google was not given every permission rustiz asks for (missing: "
                           f"{', '.join(missing)}): connect again and leave every box ticked")

    # --- errors -------------------------------------------------------------------------------------------

    def error_words(self, reply: HttpReply) -> Optional[str]:
        answer = reply.json()
        error = google_error(answer)
        if error is not None:
            return error[0] + (f" ({', '.join(error[1])})" if error[1] else "")
        if isinstance(answer, dict) and isinstance(answer.get("error"), str):  # the token endpoint's OAuth shape
            return super().error_words(reply)
        return None

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        if 200 <= reply.status < 300 or (reply.status == 308 and what == CHUNK_WHAT):
            return reply  # 308 "Resume Incomplete": Google holds the bytes its Range says
        error = google_error(reply.json())
        reasons = error[1] if error else []
        message, body = self.platform_words(reply), self.error_excerpt(reply)
        if any(reason in QUOTA_REASONS for reason in reasons):
            raise Retryable(f"the app's daily YouTube API quota is used up ({message}); it is reset at midnight "
                            "Pacific time, and the post is tried again then", reply.status, body,
                            after=seconds_to_quota_reset())
        if "uploadLimitExceeded" in reasons:
            raise Retryable(f"this channel reached YouTube's daily upload limit ({message}); the post is tried "
                            "again in 24 hours", reply.status, body, after=86400.0)
        if any(reason in RATE_REASONS for reason in reasons):
            raise Retryable(message, reply.status, body, after=retry_after_seconds(reply))
        if "youtubeSignupRequired" in reasons:
            raise Rejected(NO_CHANNEL, reply.status, body)
        if reply.status == 403 and not any(reason in REAUTH_REASONS for reason in reasons):
            # Google's 403s are mostly about the request (comments disabled, no custom thumbnails for an
            # unverified channel, the API not enabled): a new consent would not change them. 401 is the token.
            raise Rejected(message if visible else f"{message} (on {what})", reply.status, body)
        return super().check_reply(reply, visible, what)

    def where_to_check(self, channel: Channel) -> str:
        return f"the videos of the YouTube channel \"{channel.name}\" in YouTube Studio"

    # --- the channel --------------------------------------------------------------------------------------

    async def _my_channel(self, channel: Channel, parts: str) -> dict:
        reply = await self.send(channel, "GET", f"{self.api_base()}/youtube/v3/channels?part={parts}&mine=true",
                                what="the account's channel", headers=bearer(channel))
        answer = reply.json()
        items = answer.get("items") if isinstance(answer, dict) else None
        if not isinstance(answer, dict) or not isinstance(items, (list, type(None))):
            raise Retryable(f"YouTube answered the channel list with {reply.described('a channel list')}", reply.status)
        if not items or not isinstance(items[0], dict) or not isinstance(items[0].get("id"), str):
            raise Rejected(NO_CHANNEL)
        return items[0]

    async def connect(self, channel: Channel) -> Connected:
        found = await self._my_channel(channel, "snippet,statistics")
        snippet = found.get("snippet") if isinstance(found.get("snippet"), dict) else {}
        thumbnails = snippet.get("thumbnails") if isinstance(snippet.get("thumbnails"), dict) else {}
        picture = next((thumbnails[size]["url"] for size in ("high", "medium", "default")
                        if isinstance(thumbnails.get(size), dict) and isinstance(thumbnails[size].get("url"), str)), None)
        title = snippet.get("title") if isinstance(snippet.get("title"), str) and snippet["title"] else found["id"]
        handle = snippet.get("customUrl") if isinstance(snippet.get("customUrl"), str) else None
        return Connected(ChannelAccount(found["id"], title, handle or None, picture))

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        statistics = (await self._my_channel(channel, "statistics")).get("statistics") or {}
        return analytics_figures({"Subscribers": None if statistics.get("hiddenSubscriberCount") else
                                  count(statistics.get("subscriberCount")),
                                  "Views": count(statistics.get("viewCount")), "Videos": count(statistics.get("videoCount"))})

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        reply = await self.send(channel, "GET", f"{self.api_base()}/youtube/v3/videos?part=statistics&id="
                                + quote(release.id, safe=""), what="the video's statistics", headers=bearer(channel))
        items = (reply.json() or {}).get("items") if isinstance(reply.json(), dict) else None
        statistics = items[0].get("statistics") if items and isinstance(items[0], dict) else None
        if not isinstance(statistics, dict):
            return []
        return analytics_figures({"Views": count(statistics.get("viewCount")), "Likes": count(statistics.get("likeCount")),
                                  "Comments": count(statistics.get("commentCount"))})

    # --- publishing ---------------------------------------------------------------------------------------

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        """YouTube refuses angle brackets in a title or description, and a description over 5,000 bytes."""
        description = html_to_text(values[0].get("content") or "") if values else ""
        if re.search(r"[<>]", str(settings.get("title") or "")):
            return "A YouTube title cannot contain < or >"
        if re.search(r"[<>]", description):
            return "A YouTube description (the post's text) cannot contain < or >"
        if len(description.encode()) > DESCRIPTION_BYTES:
            return f"A YouTube description takes at most {DESCRIPTION_BYTES:,} bytes (UTF-8)"
        path = thumbnail_path(settings)
        if path and not re.search(r"(?i)\.(png|jpe?g)$", path.split("?")[0]):
            return "YouTube takes JPEG and PNG thumbnails only (the thumbnail setting)"
        if any(value.get("image") for value in values[1:]):
            return "YouTube comments (the thread's later parts) cannot carry media"
        return None

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        if post.part:
            return await self._comment(channel, post, parent)
        videos = [item for item in post.media if item.kind == "video"]
        if len(post.media) != 1 or not videos:
            raise Rejected("A YouTube post takes exactly one video")
        # What an earlier attempt left (a session to resume, or the video's id) stays until the part is
        # published or refused for good: a Retryable or a 401 (refreshed, then tried again) resumes it.
        progress = dict((channel.session.get(UPLOADS_KEY) or {}).get(post.idempotency_key) or {})
        picture = (post.settings_media or {}).get("thumbnail")
        try:
            # The thumbnail is read first: one that cannot be used fails the post before the video is out.
            thumbnail = self._read_thumbnail(picture) if picture else None
            video_id = progress.get("video") or await self._upload(channel, post, videos[0], progress)
        except Rejected as refused:
            self._remember(channel, post.idempotency_key, None)
            if progress.get("video"):  # an earlier attempt uploaded it
                refused.message = (f"the video is published (https://www.youtube.com/watch?v={progress['video']}) "
                                   f"but its thumbnail could not be set: {refused.message}")
            raise
        url = f"https://www.youtube.com/watch?v={video_id}"
        if thumbnail:
            try:
                await self._thumbnail(channel, video_id, *thumbnail)
            except Rejected as refused:
                self._remember(channel, post.idempotency_key, None)
                refused.message = f"the video is published ({url}) but its thumbnail was refused: {refused.message}"
                raise
        self._remember(channel, post.idempotency_key, None)
        return Release(video_id, url, {"video": video_id})

    def _remember(self, channel: Channel, key: str, progress: Optional[dict]) -> None:
        uploads = dict(channel.session.get(UPLOADS_KEY) or {})
        if progress is None and key not in uploads:
            return
        if progress is None:
            uploads.pop(key)
        else:
            uploads[key] = progress
        channel.save_session({**channel.session, UPLOADS_KEY: uploads})

    def _metadata(self, post: OutgoingPost) -> dict:
        settings = post.settings
        tags = [tag["label"] for tag in settings.get("tags") or [] if isinstance(tag, dict)
                and isinstance(tag.get("label"), str) and tag["label"]]
        category = settings.get("categoryId")
        snippet = {"title": settings.get("title") or "", "description": post.text,
                   "categoryId": str(category) if isinstance(category, (str, int)) and str(category).isdigit()
                   else DEFAULT_CATEGORY, **({"tags": tags} if tags else {})}
        return {"snippet": snippet, "status": {"privacyStatus": settings.get("type") or "private",
                                                "selfDeclaredMadeForKids": settings.get("selfDeclaredMadeForKids") == "yes"}}

    async def _start_session(self, channel: Channel, post: OutgoingPost, video: MediaFile, size: int) -> str:
        reply = await self.send(
            channel, "POST", f"{self.api_base()}/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status",
            what="the video's upload session", json_body=self._metadata(post),
            headers={**bearer(channel), "Content-Type": "application/json; charset=UTF-8",
                     "X-Upload-Content-Length": str(size), "X-Upload-Content-Type": video.content_type})
        uri = reply.headers.get("location", "")
        if origin(uri) != origin(self.api_base()):  # the session URI gets the token: it must be Google's own host
            raise Retryable(f"YouTube started the upload session without a session URI on its own host "
                            f"({reply.described('a Location')})", reply.status)
        return uri

    async def _upload(self, channel: Channel, post: OutgoingPost, video: MediaFile, progress: dict) -> str:
        """The video's id once Google holds every byte: resumed from the stored session when there is one."""
        size = os.path.getsize(video.path)
        if size == 0:
            raise Rejected("The video file is empty")
        uri, failures, started = progress.get("uri"), 0, False
        offset = None  # None: ask the session where it stands before sending
        while True:
            if not uri:
                if started:
                    raise Retryable("YouTube lost the upload session it had just started; the next attempt starts "
                                    "another")
                uri, offset, started = await self._start_session(channel, post, video, size), 0, True
                self._remember(channel, post.idempotency_key, {"uri": uri})
            try:
                reply = await (self._status(channel, uri, size) if offset is None else
                               self._chunk(channel, uri, video, offset, size))
            except Rejected as refused:
                if refused.status not in (404, 410):
                    raise
                uri = None  # the session expired (after a week) or was lost: the upload starts again
                continue
            except Retryable:
                failures += 1
                if failures >= CHUNK_FAILURES:
                    raise  # the next attempt asks the session where it stands
                offset = None
                continue
            if reply.status == 308:
                held = acknowledged(reply)
                if held >= size or (offset is not None and held <= offset):  # no progress, or nothing left to send
                    failures += 1
                    if failures >= CHUNK_FAILURES:
                        raise Retryable(f"YouTube's upload session holds {held:,} of {size:,} bytes and takes no "
                                        "more; the next attempt asks it again", reply.status)
                offset = held if held < size else None
                continue
            answer = reply.json()
            if not isinstance(answer, dict) or not isinstance(answer.get("id"), str):
                raise Retryable(f"YouTube finished the upload but answered {reply.described('a video')}", reply.status)
            self._remember(channel, post.idempotency_key, {"video": answer["id"]})
            return answer["id"]

    async def _status(self, channel: Channel, uri: str, size: int) -> HttpReply:
        """Where an upload session stands: 308 with the Range it holds, or 200/201 with the video when done."""
        return await self.send(channel, "PUT", uri, what=CHUNK_WHAT, body=b"",
                               headers={**bearer(channel), "Content-Range": f"bytes */{size}", "Content-Length": "0"})

    async def _chunk(self, channel: Channel, uri: str, video: MediaFile, offset: int, size: int) -> HttpReply:
        with open(video.path, "rb") as file:
            file.seek(offset)
            data = file.read(int(tuned("RUSTIZ_YOUTUBE_CHUNK_BYTES", DEFAULT_CHUNK_BYTES, 1)))
        return await self.send(channel, "PUT", uri, what=CHUNK_WHAT, body=data, timeouts=Timeouts(read=120, total=900),
                               headers={**bearer(channel), "Content-Type": video.content_type,
                                        "Content-Range": f"bytes {offset}-{offset + len(data) - 1}/{size}"})

    async def _thumbnail(self, channel: Channel, video_id: str, data: bytes, content_type: str) -> None:
        await self.send(channel, "POST", f"{self.api_base()}/upload/youtube/v3/thumbnails/set?uploadType=media&videoId="
                        + quote(video_id, safe=""), what="the thumbnail", body=data,
                        headers={**bearer(channel), "Content-Type": content_type})

    @staticmethod
    def _read_thumbnail(picture: MediaFile) -> tuple:
        """The thumbnail's bytes and type (at most 2 MiB, JPEG or PNG)."""
        if os.path.getsize(picture.path) > THUMBNAIL_LIMIT:
            raise Rejected("YouTube takes thumbnails of at most 2 MiB", item="the thumbnail")
        if picture.content_type not in ("image/png", "image/jpeg"):
            raise Rejected("YouTube takes JPEG and PNG thumbnails only", item="the thumbnail")
        return picture.read(), picture.content_type

    async def delete(self, channel: Channel, release: Release) -> None:
        """videos.delete for the video, comments.delete for a thread part's comment (204; 404 when gone)."""
        video = release.reply_ref.get("video") if isinstance(release.reply_ref, dict) else None
        kind = "videos" if video in (None, release.id) else "comments"
        await self.send_delete(channel, "DELETE", f"{self.api_base()}/youtube/v3/{kind}?id={quote(release.id, safe='')}",
                               f"the deletion of the {kind[:-1]}", headers=bearer(channel))

    async def _comment(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        """Part 1 is a comment on the video; later parts reply to it (YouTube's replies are one level deep)."""
        if parent is None:
            raise Rejected("A YouTube comment needs the video it belongs to")
        if post.media:
            raise Rejected("YouTube comments cannot carry media")
        reference = parent.reply_ref if isinstance(parent.reply_ref, dict) else {}
        video_id, thread = reference.get("video") or parent.id, reference.get("thread")
        if thread:
            reply = await self.send(channel, "POST", f"{self.api_base()}/youtube/v3/comments?part=snippet", visible=True,
                                    what="the reply", headers=bearer(channel),
                                    json_body={"snippet": {"parentId": thread, "textOriginal": post.text}})
        else:
            reply = await self.send(channel, "POST", f"{self.api_base()}/youtube/v3/commentThreads?part=snippet",
                                    visible=True, what="the comment", headers=bearer(channel), json_body={
                                        "snippet": {"videoId": video_id,
                                                    "topLevelComment": {"snippet": {"textOriginal": post.text}}}})
        answer = reply.json()
        if not isinstance(answer, dict) or not isinstance(answer.get("id"), str):
            raise OutcomeUnknown(f"YouTube accepted the comment but answered {reply.described('a comment')}", reply.status)
        return Release(answer["id"], f"https://www.youtube.com/watch?v={video_id}&lc={answer['id']}",
                       {"video": video_id, "thread": thread or answer["id"]})


PROVIDER = YouTubeProvider()
