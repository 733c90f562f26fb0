"""What Instagram through Facebook (`instagram`) and Instagram standalone (`instagram-standalone`) share: the
container flow that publishes, the first comments, the insights. Only the host (graph.facebook.com or
graph.instagram.com), the Instagram account's id and the token differ: each provider says them in ig_account().

Instagram downloads every picture itself, from MediaFile.url (rustiz's FRONTEND_URL). Videos too on
Instagram standalone; through Facebook Login (sends_video) rustiz sends each video's bytes itself with the
resumable upload: a container made with upload_type=resumable answers an upload address on
rupload.facebook.com (RUSTIZ_INSTAGRAM_UPLOAD_URL in tests), where the file goes in one POST from offset 0
with "Authorization: OAuth <token>"; the token goes to that origin only, as facebook.py's story videos. A post is
one container (a picture, a Reel, a story) or a carousel container over up to 10 child containers. Instagram
processes a container before it can be published (IN_PROGRESS, then FINISHED, ERROR or EXPIRED), so each is
polled for a bounded time; nothing is visible until media_publish, so a post that failed before it can be
sent again safely (an unpublished container expires after 24 hours). Thread parts are comments on the post.
"""
from __future__ import annotations

import json
import os
import time
from typing import Optional

from ..http_client import HttpReply, Timeouts, platform_url
from .base import (
    Channel, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, PublishError, Rejected, Release, Retryable,
    analytics_figures, error_fields, tuned, wait_for_processing,
)
from .meta import MetaGraphProvider, graph_error
from .oauth import variable_prefix

INSTAGRAM_CAROUSEL_LIMIT = 10
INSTAGRAM_WAIT_SECONDS = 300.0  # how long a post waits for Instagram to process its media
INSTAGRAM_MOST_POLLS = 120
INSTAGRAM_IMAGE_TYPES = ("image/jpeg",)  # Instagram's image containers take JPEG only
RUPLOAD_ORIGIN = "https://rupload.facebook.com"  # where a resumable container's video is sent
# Instagram's largest video files: a Reel 300 MB, a story or a carousel's video 100 MB (sent in one request, so
# held in memory whole).
VIDEO_BYTES = {"REELS": 300 * 2**20, "STORIES": 100 * 2**20, "VIDEO": 100 * 2**20}
MEDIA_FETCH_FAILED = "2207052"  # "media fetch failed": Instagram could not download it this time
# Instagram put the account behind a checkpoint: the token is valid, but nothing goes out until its owner
# logs in on instagram.com, follows the instructions there and connects the channel again.
CHECKPOINT_WORDS = ("You cannot access the app till you log in to", "Session key is malformed",
                    "session has been invalidated")
VIDEO_EXTENSIONS = ("mp4", "mov")
UNSUPPORTED_EXTENSIONS = ("png", "gif", "webp", "bmp", "tif", "tiff", "avif", "heic", "heif", "svg")
MEDIA_METRICS = {"views": "Views", "reach": "Reach", "likes": "Likes", "comments": "Comments", "saved": "Saves",
                 "shares": "Shares"}
ACCOUNT_METRICS = {"reach": "Reach", "views": "Views", "likes": "Likes", "comments": "Comments", "shares": "Shares",
                   "saves": "Saves"}


def handle(label: str) -> str:
    """A collaborator as Instagram wants it: the username without the "@" people type (else 2207018)."""
    return label.strip().lstrip("@")


def media_extension(media: object) -> str:
    """The file extension of a post's media object ({"path": ...}), lowercased; "" without one."""
    name = str(media.get("path", "")).split("?")[0].rsplit("/", 1)[-1] if isinstance(media, dict) else ""
    return name.rpartition(".")[2].lower() if "." in name else ""


class InstagramPublishing(MetaGraphProvider):
    """The container flow on the Graph host of api_base(), as the account ig_account() names."""
    needs_public_media = True  # every Instagram post has media, which Instagram downloads from FRONTEND_URL
    sends_video = False  # videos go up through the resumable upload, not pulled from FRONTEND_URL
    audio_allowed = False  # audio_configuration: only the Instagram API with Facebook Login has the Audio API
    spacing = 2.0
    concurrency = 4

    async def ig_account(self, channel: Channel) -> tuple:
        """(the Instagram professional account's id, the token that publishes as it)."""
        raise NotImplementedError

    def pulls_media(self, values: list, settings: dict) -> bool:
        first = values[0].get("image") if values else None
        return bool(first) and (not self.sends_video
                                or any(media_extension(media) not in VIDEO_EXTENSIONS for media in first))

    def where_to_check(self, channel: Channel) -> str:
        return f"the Instagram account of the channel \"{channel.name}\""

    def error_words(self, reply: HttpReply) -> Optional[str]:
        # the upload host's own shape: {"debug_info": {"retriable": false, "type": ..., "message": ...}}
        answer = reply.json()
        info = answer.get("debug_info") if isinstance(answer, dict) else None
        return error_fields(info, "message", "type") if isinstance(info, dict) else super().error_words(reply)

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        answer = reply.json() if reply.status >= 400 else None
        info = answer.get("debug_info") if isinstance(answer, dict) else None
        if isinstance(info, dict) and info.get("retriable") is True:  # the upload host says: send it again
            raise Retryable(f"{self.platform_words(reply)} (on {what})", reply.status, self.error_excerpt(reply))
        error = graph_error(reply.json()) if reply.status >= 400 else None
        if error is not None:
            words, body = self.platform_words(reply), self.error_excerpt(reply)
            if str(error.get("error_subcode")) == MEDIA_FETCH_FAILED:
                raise Retryable(f"{words} (Instagram could not download the media from FRONTEND_URL this time)",
                                reply.status, body)
            if any(phrase.lower() in error["message"].lower() for phrase in CHECKPOINT_WORDS):
                raise NeedsReconnect(f"{words}. Log in at instagram.com with the channel's account and follow "
                                     "Instagram's instructions, then reconnect the channel", reply.status, body)
        return super().check_reply(reply, visible, what)

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        """What the descriptor's media rule does not check: stories, comments, image formats, audio."""
        first = values[0]["image"] if values else []
        if settings.get("post_type") == "story" and len(first) > 1:
            return "An Instagram story takes one picture or video: make one post per story"
        if any(part.get("image") for part in values[1:]):
            return "Instagram comments (the thread's later parts) are text only: remove their media"
        for media in first:
            extension = media_extension(media)
            if extension in UNSUPPORTED_EXTENSIONS:
                return f"Instagram takes JPEG pictures only (and MP4 or MOV videos), not .{extension}"
        audio = settings.get("audio")
        if isinstance(audio, dict) and audio.get("id"):
            if not self.audio_allowed:
                return "Audio can be attached only through Instagram (Facebook Business): remove the audio setting"
            if settings.get("post_type") == "story" or len(first) != 1 \
                    or media_extension(first[0]) not in VIDEO_EXTENSIONS:
                return "Audio can only be added to a single video Reel"
        return None

    # --- publishing ------------------------------------------------------------------------------------

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        account, token = await self.ig_account(channel)
        if parent is not None:
            return await self._comment(channel, token, post, parent)
        containers = await self._containers(channel, account, token, post)
        answer = await self.graph_call(channel, "POST", f"{account}/media_publish", token, "the post", visible=True,
                                       form={"creation_id": containers[-1]})
        media_id = answer.get("id")
        if not isinstance(media_id, str) or not media_id:
            raise OutcomeUnknown("Instagram answered media_publish without the post's id")
        return Release(media_id, await self._permalink(channel, token, media_id), {"media": media_id})

    async def _containers(self, channel: Channel, account: str, token: str, post: OutgoingPost) -> list:
        """The containers of the post, processed: [the one to publish] or [children..., the carousel]."""
        media, settings = post.media, post.settings
        if not media:
            raise Rejected("An Instagram post needs at least one picture or video")
        for number, item in enumerate(media, 1):
            if item.kind != "video" and item.content_type.split(";")[0].strip().lower() not in INSTAGRAM_IMAGE_TYPES:
                raise Rejected(f"Instagram takes JPEG pictures only, and media item {number} is {item.content_type}",
                               item=f"media item {number}")
        story = settings.get("post_type") == "story"
        if story:
            if len(media) != 1:
                raise Rejected("An Instagram story takes one picture or video")
            return [await self._container(channel, account, token, {}, media=media[0], video_type="STORIES")]
        caption = {"caption": post.text} if post.text.strip() else {}
        collaborators = [handle(item["label"]) for item in settings.get("collaborators") or []
                         if isinstance(item, dict) and isinstance(item.get("label"), str) and item["label"].strip()]
        together = {"collaborators": json.dumps(collaborators)} if collaborators else {}
        if len(media) == 1:
            fields = {**caption, **together, **self._reel_extras(media[0], settings)}
            return [await self._container(channel, account, token, fields, media=media[0])]
        if len(media) > INSTAGRAM_CAROUSEL_LIMIT:
            raise Rejected(f"An Instagram carousel takes at most {INSTAGRAM_CAROUSEL_LIMIT} pictures and videos")
        children = [await self._container(channel, account, token, {"is_carousel_item": "true"}, f"media item {n}",
                                          media=item, video_type="VIDEO")
                    for n, item in enumerate(media, 1)]
        carousel = await self._container(channel, account, token, {"media_type": "CAROUSEL",
                                                                   "children": ",".join(children), **caption,
                                                                   **together}, "the carousel")
        return [*children, carousel]

    def _source(self, media: MediaFile, video_type: str) -> dict:
        """Where a container's media comes from: its URL, or (a video, when sends_video) a resumable upload."""
        if media.kind == "video":
            if self.sends_video:
                return {"media_type": video_type, "upload_type": "resumable"}
            return {"video_url": media.url, "media_type": video_type}
        return {"image_url": media.url, **({"media_type": "STORIES"} if video_type == "STORIES" else {})}

    def _reel_extras(self, media: MediaFile, settings: dict) -> dict:
        """A Reel's trial_params (a trial Reel, shown to non-followers first) and audio_configuration."""
        if media.kind != "video":
            return {}
        extras: dict = {}
        if settings.get("is_trial_reel") in (True, "true"):
            extras["trial_params"] = json.dumps({"graduation_strategy": settings.get("graduation_strategy") or "MANUAL"})
        audio = settings.get("audio")
        if self.audio_allowed and isinstance(audio, dict) and audio.get("id"):
            volumes = {name: audio[name] for name in ("audio_volume", "video_volume")
                       if isinstance(audio.get(name), (int, float)) and not isinstance(audio.get(name), bool)}
            extras["audio_configuration"] = json.dumps({"audio_id": str(audio["id"]), **volumes})
        return extras

    async def _container(self, channel: Channel, account: str, token: str, fields: dict, item: str = "the media",
                         media: Optional[MediaFile] = None, video_type: str = "REELS") -> str:
        """Create one container for `media` (none: a carousel), send its video when it is a resumable one,
        and wait until Instagram has processed it."""
        if media is not None:
            fields = {**self._source(media, video_type), **fields}
            if fields.get("upload_type") == "resumable" and os.path.getsize(media.path) > VIDEO_BYTES[video_type]:
                raise Rejected(f"Instagram takes videos of at most {VIDEO_BYTES[video_type] // 2**20} MB here, and "
                               f"{item} is {os.path.getsize(media.path) / 2**20:.0f} MB", item=item)
        try:
            answer = await self.graph_call(channel, "POST", f"{account}/media", token, f"the container of {item}",
                                           form=fields, timeouts=Timeouts(read=120, total=180))
            container = answer.get("id")
            if not isinstance(container, str) or not container:
                raise Retryable(f"Instagram answered the container of {item} without its id")
            if media is not None and fields.get("upload_type") == "resumable":
                await self._send_video(channel, token, container, answer.get("uri"), media, item)
            await self._wait_until_processed(channel, token, container, item)
        except PublishError as error:
            error.item = error.item or item
            raise
        return container

    async def _send_video(self, channel: Channel, token: str, container: str, uri: object, video: MediaFile,
                          item: str) -> None:
        """The whole video to the upload address of the container's answer, from offset 0."""
        upload_base = platform_url(variable_prefix(self.identifier) + "UPLOAD_URL", RUPLOAD_ORIGIN)
        if not isinstance(uri, str) or not uri.startswith(upload_base + "/"):  # the token goes there: Meta's only
            raise Retryable(f"Instagram answered the container of {item} without an upload address on its upload "
                            "host; the next attempt starts again")
        data = await channel.http.run_blocking(video.read)
        reply = await self.send(channel, "POST", uri, what=f"the upload of {item}", body=data,
                                headers={"Authorization": f"OAuth {token}", "offset": "0", "file_size": str(len(data)),
                                         "Content-Type": "application/octet-stream"},
                                timeouts=Timeouts(read=120, total=900))
        answer = reply.json()
        if not isinstance(answer, dict) or answer.get("success") is not True:
            raise Retryable(f"Instagram did not confirm the upload of {item} "
                            f"({reply.described('an upload confirmation')})", reply.status)

    async def _wait_until_processed(self, channel: Channel, token: str, container: str, item: str) -> None:
        async def processed() -> Optional[bool]:
            answer = await self.graph_call(channel, "GET", container, token, f"the processing of {item}",
                                           query={"fields": "status_code,status"})
            code, status = answer.get("status_code"), str(answer.get("status") or "").strip()
            if code == "ERROR":
                words = f"Instagram could not process {item}: {status or 'its status is ERROR'}"
                if MEDIA_FETCH_FAILED in status:
                    raise Retryable(words + " (Instagram could not download it this time)")
                raise Rejected(words, body=json.dumps({"status_code": code, "status": status})[:400])
            if code == "EXPIRED":
                raise Retryable(f"Instagram let the container of {item} expire before it was published")
            return True if code in ("FINISHED", "PUBLISHED") else None

        await wait_for_processing(
            processed, INSTAGRAM_WAIT_SECONDS, tuned("RUSTIZ_INSTAGRAM_POLL_SECONDS", 3.0, 0.01),
            lambda: Retryable(f"Instagram was still processing {item} after {INSTAGRAM_WAIT_SECONDS:.0f} s; the "
                              "post waits and tries again"), most=INSTAGRAM_MOST_POLLS)

    async def _permalink(self, channel: Channel, token: str, media_id: str) -> str:
        """The post's address. It is out already: a failure here must not fail (and repeat) the post."""
        try:
            answer = await self.graph_call(channel, "GET", media_id, token, "the post's permalink",
                                           query={"fields": "permalink"})
        except PublishError:
            return ""
        return answer["permalink"] if isinstance(answer.get("permalink"), str) else ""

    async def _comment(self, channel: Channel, token: str, post: OutgoingPost, parent: Release) -> Release:
        """A later part of the thread: a comment on the post (every part comments on the post itself)."""
        if post.media:
            raise Rejected("Instagram comments are text only")
        media_id = parent.reply_ref.get("media") if isinstance(parent.reply_ref, dict) else None
        media_id = media_id or parent.id
        answer = await self.graph_call(channel, "POST", f"{media_id}/comments", token, "the comment", visible=True,
                                       form={"message": post.text})
        comment_id = answer.get("id")
        if not isinstance(comment_id, str) or not comment_id:
            raise OutcomeUnknown("Instagram answered the comment without its id")
        return Release(comment_id, parent.url, {"media": media_id})

    # --- analytics ---------------------------------------------------------------------------------------

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        """The account's followers and its totals over the last `days` (Instagram allows 30 at most)."""
        account, token = await self.ig_account(channel)
        profile = await self.graph_call(channel, "GET", account, token, "the account's counts",
                                        query={"fields": "followers_count,media_count"})
        until = int(time.time())
        since = until - 86400 * max(1, min(int(days), 30))
        answer = await self.graph_call(channel, "GET", f"{account}/insights", token, "the account's insights",
                                       query={"metric": ",".join(ACCOUNT_METRICS), "metric_type": "total_value",
                                              "period": "day", "since": since, "until": until})
        totals = {}
        for entry in answer.get("data") or []:
            total = entry.get("total_value") if isinstance(entry, dict) else None
            if isinstance(total, dict) and entry.get("name") in ACCOUNT_METRICS:
                totals[ACCOUNT_METRICS[entry["name"]]] = total.get("value")
        return analytics_figures({"Followers": profile.get("followers_count"), "Posts": profile.get("media_count"),
                                  **totals})

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        _, token = await self.ig_account(channel)
        media_id = release.reply_ref.get("media") if isinstance(release.reply_ref, dict) else None
        if media_id and media_id != release.id:
            return []  # a comment has no insights of its own
        answer = await self.graph_call(channel, "GET", f"{release.id}/insights", token, "the post's insights",
                                       query={"metric": ",".join(MEDIA_METRICS)})
        counts = {}
        for entry in answer.get("data") or []:
            if not isinstance(entry, dict) or entry.get("name") not in MEDIA_METRICS:
                continue
            values = entry.get("values")
            value = (values[0].get("value") if isinstance(values, list) and values and isinstance(values[0], dict)
                     else (entry.get("total_value") or {}).get("value") if isinstance(entry.get("total_value"), dict)
                     else None)
            counts[MEDIA_METRICS[entry["name"]]] = value
        return analytics_figures(counts)
