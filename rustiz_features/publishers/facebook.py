"""Facebook Page, through Facebook Login (meta.py): after consent the user picks one of the pages they manage,
and every post goes out as that page, with the page's token.

rustiz sends Facebook the bytes (multipart `source`), never a URL to fetch, so FRONTEND_URL need not be public:
photos are uploaded unpublished and attached to one /feed post; a video goes to /{page}/videos on the video
host (one request for a small file, the resumable upload_phase start/transfer/finish in chunks Facebook sizes
for a large one); a story post publishes each media as its own story. Thread parts are comments on the post.
A story post of several media remembers, in the channel's session, which stories went out, so a retry never
publishes one twice.
"""
from __future__ import annotations

import os
import time
from typing import Any, Optional
from urllib.parse import urlencode

from ..catalogue import ChannelAccount
from ..http_client import HttpReply, Timeouts, encode_multipart, platform_url
from .base import (
    Channel, Connected, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, PublishError, Rejected, Release,
    Retryable, tuned, wait_for_processing,
)
from .meta import GRAPH_VERSION, MetaGraphProvider, graph_error, graph_object_gone, picture_url, regain_seconds

PAGE_FIELDS = "id,name,username,picture.type(large),tasks"
BUSINESS_LIMIT = 25  # businesses whose pages are listed beside the dialog's
PRESET_MAX_CHARS = 130  # Facebook shows a background preset only on short text-only posts (Postiz's limit)
CHUNK_CAP = 32 * 1024 * 1024  # the most of a video held in memory, whatever chunk Facebook asks for
STORY_VIDEO_BYTES = 100 * 1024 * 1024  # a story video goes up in one request: the most held in memory for it
UPLOAD_TIMEOUTS = Timeouts(read=120, total=900)
STORY_PROGRESS = "facebookStories"  # in the session: the stories of a part already published

# Graph error subcodes whose meaning deserves clearer words than Graph's message (Postiz's handleErrors).
SUBCODE_ADVICE = {
    1366046: (Rejected, "Facebook takes photos smaller than 4 MB, saved as JPG or PNG"),
    1390008: (Retryable, "Facebook says the page is posting too fast: the post waits and tries again"),
    1346003: (Rejected, "Facebook flagged the content as abusive"),
    1404102: (Rejected, "Facebook says the content goes against its Community Standards"),
    1404006: (Rejected, "Facebook asks for a security check before the comment can be posted: log in at "
                        "facebook.com and complete it"),
    2069019: (Rejected, "Facebook refused the file as invalid"),
    1366051: (Rejected, "These photos were already posted on the page"),
    1609008: (Rejected, "Facebook does not let a page post facebook.com links"),
    2061006: (Rejected, "Facebook found an invalid URL in the post"),
    1404112: (Rejected, "Facebook has limited the account's access for a few days, for security reasons"),
    4854002: (Rejected, "Facebook asks the page's admin to confirm their identity before publishing as the "
                        "page: open the Facebook app on a phone and follow its instructions"),
    459: (NeedsReconnect, "Facebook asks the user to pass a security check: log in at facebook.com, complete it, "
                          "then reconnect the channel"),
    492: (NeedsReconnect, "The Facebook user who connected the channel no longer has a role on this page: ask a "
                          "page admin to grant one, then reconnect the channel"),
    1404078: (NeedsReconnect, "Facebook wants publishing as the page authorized again: reconnect the channel"),
}
# Messages without a subcode of their own that mean the token is the user's, not the page's.
NOT_AS_PAGE = ("must be posted to a page as the page itself", "must be granted before impersonating")


def number(value: Any) -> Optional[int]:
    """A metric's value as an int: a number, or the sum of a breakdown ({"like": 3, "love": 1})."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        parts = [number(part) for part in value.values()]
        return sum(part for part in parts if part is not None)
    return None




class FacebookProvider(MetaGraphProvider):
    identifier = "facebook"
    scopes = ("pages_show_list", "business_management", "pages_manage_posts", "pages_manage_engagement",
              "pages_read_engagement", "read_insights")
    # Listing the pages and posting as one cannot work without these; insights and comments degrade alone.
    required_permissions = ("pages_show_list", "pages_manage_posts", "pages_read_engagement")
    concurrency = 8
    can_delete = True  # DELETE /{post-id}, posts and comments alike (stories excepted)
    simple_video_bytes = 16 * 1024 * 1024  # above this, the resumable upload, in Facebook's chunks
    video_wait_seconds = tuned("RUSTIZ_FACEBOOK_VIDEO_WAIT", 300.0)  # a story video's processing, at most
    poll_interval = tuned("RUSTIZ_FACEBOOK_POLL_SECONDS", 2.0)
    operator_guide = (
        "Create an app of type Business at developers.facebook.com/apps and add the \"Facebook Login for "
        "Business\" product; register the valid OAuth redirect URI {FRONTEND_URL}/integrations/social/facebook "
        "and put the app's id and secret in FACEBOOK_APP_ID and FACEBOOK_APP_SECRET (Instagram through Facebook "
        "uses the same app). rustiz asks for pages_show_list, business_management, pages_manage_posts, "
        "pages_manage_engagement, pages_read_engagement and read_insights. While the app is in development mode "
        "only people with a role on the app (admins, developers, testers) can connect; for anyone else each "
        "permission needs Advanced Access through App Review (a screencast of the flow), which also requires "
        "Business Verification of the app's business. After consent rustiz lists the pages the user manages "
        "and shared with the app, and the user picks the one the channel posts to.")

    def video_base(self) -> str:
        """Where videos are uploaded: Graph's video host (RUSTIZ_FACEBOOK_VIDEO_URL in tests)."""
        return platform_url("RUSTIZ_FACEBOOK_VIDEO_URL", "https://graph-video.facebook.com")

    # --- the page choice ----------------------------------------------------------------------------------

    async def _pages(self, channel: Channel) -> list:
        """The pages the user may post to (a page whose tasks lack CREATE_CONTENT cannot take posts): those
        shared in the login dialog, then, as Postiz, those of the user's businesses the dialog left out."""
        pages = await self.managed_pages(channel, PAGE_FIELDS)
        pages += await self._business_pages(channel, {str(page["id"]) for page in pages})
        return [page for page in pages if not isinstance(page.get("tasks"), list) or "CREATE_CONTENT" in page["tasks"]]

    async def _business_pages(self, channel: Channel, known: set) -> list:
        """Pages owned by or shared with the user's businesses (business_management), one Graph page of each;
        a business Graph will not list (a missing permission, a role too small) is skipped."""
        token, found = self.user_token(channel), []
        try:
            businesses = await self.graph_call(channel, "GET", "me/businesses", token, "the user's businesses",
                                               query={"fields": "id", "limit": BUSINESS_LIMIT})
            for business in (businesses.get("data") or [])[:BUSINESS_LIMIT]:
                edges = ("owned_pages", "client_pages") if isinstance(business, dict) and business.get("id") else ()
                for edge in edges:
                    answer = await self.graph_call(channel, "GET", f"{business['id']}/{edge}", token,
                                                   "the business's pages", query={"fields": PAGE_FIELDS, "limit": 100})
                    for page in answer.get("data") or []:
                        if isinstance(page, dict) and page.get("id") and str(page["id"]) not in known:
                            known.add(str(page["id"]))
                            found.append(page)
        except (Rejected, Retryable):
            pass  # the pages of the dialog are enough to choose from
        return found

    async def step_choices(self, channel: Channel) -> list:
        return [{"id": str(page["id"]), "name": str(page.get("name") or page["id"]), "picture": picture_url(page)}
                for page in await self._pages(channel)]

    async def choose(self, channel: Channel, choice: str) -> Connected:
        page = next((page for page in await self._pages(channel) if str(page["id"]) == choice), None)
        if page is None:
            raise Rejected(f"the Facebook user does not manage the page {choice[:40]!r} (or may not post to it)")
        await self.page_token(channel, str(page["id"]))  # proves the page token is there; cached in the session
        username = page.get("username") if isinstance(page.get("username"), str) else None
        account = ChannelAccount(str(page["id"]), str(page.get("name") or page["id"]), username, picture_url(page))
        return Connected(account, session={**channel.session, "page": str(page["id"])})

    async def as_page(self, channel: Channel) -> tuple:
        """(page id, page token) of the channel's page."""
        page = channel.session.get("page") or channel.credentials.get("page")
        if not isinstance(page, str) or not page:
            raise NeedsReconnect("no Facebook page was chosen for this channel: connect it again and pick one")
        return page, await self.page_token(channel, page)

    # --- errors -------------------------------------------------------------------------------------------

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        error = graph_error(reply.json()) if reply.status >= 400 else None
        if error is not None:
            kind, advice = SUBCODE_ADVICE.get(error.get("error_subcode"), (None, ""))
            if kind is None and any(words in error["message"] for words in NOT_AS_PAGE):
                kind, advice = NeedsReconnect, "rustiz may not publish as this page: reconnect the channel"
            if kind is not None:
                message = f"{advice} ({self.platform_words(reply)})" + ("" if visible else f" (on {what})")
                if kind is Retryable:
                    raise Retryable(message, reply.status, self.error_excerpt(reply), after=regain_seconds(reply))
                raise kind(message, reply.status, self.error_excerpt(reply))
        return super().check_reply(reply, visible, what)

    def where_to_check(self, channel: Channel) -> str:
        return f"the Facebook page of the channel \"{channel.name}\""

    # --- publishing ---------------------------------------------------------------------------------------

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        first = values[0]["image"] if values else []
        videos = [item for item in first if "mp4" in str(item.get("path", "") if isinstance(item, dict) else "")]
        if settings.get("post_type") != "story" and videos and len(first) > 1:
            return "A Facebook post takes photos or one video, not both nor several videos"
        if settings.get("post_type") == "story" and len(values) > 1:
            return "A Facebook story takes no comments: leave the thread parts out"
        for value in values[1:]:
            if len(value["image"]) > 1 or any("mp4" in str(item.get("path", "")) for item in value["image"]
                                               if isinstance(item, dict)):
                return "A Facebook comment takes at most one photo"
        return None

    async def delete(self, channel: Channel, release: Release) -> None:
        """DELETE /{post-id} (or a comment's, a video's id) with the page token; Graph's "does not exist" (code 100,
        subcode 33) means it is gone already. A story cannot be deleted through the Graph API."""
        if "/stories/" in release.url:
            raise Rejected("Facebook stories cannot be deleted through the Graph API; they disappear after 24 hours")
        if not release.id.replace("_", "").isdigit():
            raise Rejected(f"{release.id[:40]!r} is not a Facebook post id")
        _, token = await self.as_page(channel)
        try:
            await self.graph_call(channel, "DELETE", release.id, token, "the deletion")
        except PublishError as refused:
            if not graph_object_gone(refused):
                raise

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        page, token = await self.as_page(channel)
        if parent is not None:
            return await self._comment(channel, token, post, parent)
        if post.settings.get("post_type") == "story":
            return await self._stories(channel, page, token, post)
        videos = [media for media in post.media if media.kind == "video"]
        if videos:
            if len(post.media) > 1:
                raise Rejected("A Facebook post takes photos or one video, not both nor several videos")
            video_id = await self._video(channel, page, token, videos[0], post.text)
            return Release(video_id, await self.permalink(channel, token, video_id), {"object": video_id})
        body: dict = {"message": post.text, "published": True}
        if post.media:
            body["attached_media"] = [{"media_fbid": await self._photo(channel, page, token, media, number)}
                                      for number, media in enumerate(post.media, 1)]
        if isinstance(post.settings.get("url"), str) and post.settings["url"]:
            body["link"] = post.settings["url"]
        preset = post.settings.get("text_format_preset_id")
        if isinstance(preset, str) and preset and not post.media and len(post.text) <= PRESET_MAX_CHARS:
            body["text_format_preset_id"] = preset
        answer = await self.graph_call(channel, "POST", f"{page}/feed", token, "the post", visible=True, json_body=body)
        post_id = self._new_id(answer, "the post")
        return Release(post_id, await self.permalink(channel, token, post_id), {"object": post_id})

    @staticmethod
    def _new_id(answer: dict, what: str) -> str:
        found = answer.get("post_id") or answer.get("id")
        if not isinstance(found, str) or not found:
            raise OutcomeUnknown(f"Facebook accepted {what} but answered without its id")
        return found

    async def permalink(self, channel: Channel, token: str, object_id: str) -> str:
        """Where a published object is seen; its id on facebook.com when Graph does not say (the post is out
        already: a failure here must not fail it)."""
        try:
            answer = await self.graph_call(channel, "GET", object_id, token, "the post's address",
                                           query={"fields": "permalink_url"})
        except PublishError:
            answer = {}
        url = answer.get("permalink_url")
        if isinstance(url, str) and url.startswith("https://"):
            return url
        if isinstance(url, str) and url.startswith("/"):  # videos answer a path
            return self.auth_base() + url
        return f"{self.auth_base()}/{object_id}"

    async def _photo(self, channel: Channel, page: str, token: str, media: MediaFile, number: int) -> str:
        """An unpublished photo of the page (its bytes), to attach to a post or a story: its id."""
        item = f"photo {number}"
        if media.kind != "image":
            raise Rejected(f"{item} is not a picture", item=item)
        fields: list = [("published", "false")]
        if media.alt:
            fields.append(("alt_text_custom", media.alt))
        body, content_type = encode_multipart(fields + [("source", (media.name, media.read(), media.content_type))])
        try:
            answer = await self.graph_call(channel, "POST", f"{page}/photos", token, f"the upload of {item}",
                                           body=body, headers={"Content-Type": content_type},
                                           timeouts=UPLOAD_TIMEOUTS)
        except PublishError as error:
            error.item = error.item or item
            raise
        photo = answer.get("id")
        if not isinstance(photo, str) or not photo:
            raise Retryable(f"Facebook answered the upload of {item} without the photo's id", item=item)
        return photo

    async def _video(self, channel: Channel, page: str, token: str, video: MediaFile, text: str) -> str:
        """The page's new video, published with `text` as its description: its id."""
        size = os.path.getsize(video.path)
        if size <= self.simple_video_bytes:
            fields = [("description", text), ("published", "true"),
                      ("source", (video.name, video.read(), video.content_type))]
            body, content_type = encode_multipart(fields)
            answer = await self.video_call(channel, page, token, "the video", body, content_type, visible=True)
            return self._new_id(answer, "the video")
        try:
            start = await self.video_call(channel, page, token, "the video's upload start",
                                          *encode_multipart([("upload_phase", "start"), ("file_size", str(size))]))
            session, video_id = start.get("upload_session_id"), start.get("video_id")
            if not isinstance(session, str) or not isinstance(video_id, str):
                raise Retryable("Facebook started the video's upload without its session id")
            await self._transfer(channel, page, token, video, session, start)
        except PublishError as error:
            error.item = error.item or "the video"
            raise
        finish = await self.video_call(channel, page, token, "the video", *encode_multipart(
            [("upload_phase", "finish"), ("upload_session_id", session), ("description", text)]), visible=True)
        if finish.get("success") is not True:
            raise OutcomeUnknown("Facebook answered the end of the video's upload without success")
        return video_id

    async def _transfer(self, channel: Channel, page: str, token: str, video: MediaFile, session: str,
                        offsets: dict) -> None:
        """The file in the chunks Facebook asks for (start_offset to end_offset), read one at a time."""
        size, sent = os.path.getsize(video.path), -1
        with open(video.path, "rb") as file:
            while True:
                try:
                    start, end = int(offsets.get("start_offset")), int(offsets.get("end_offset"))
                except (TypeError, ValueError):
                    raise Retryable("Facebook answered a video chunk without the next offsets") from None
                if start >= end or start >= size:
                    return
                if start <= sent:  # the upload does not move on: the next attempt starts again
                    raise Retryable(f"Facebook asked for the video from byte {start} again")
                sent = start
                file.seek(start)
                chunk = file.read(min(end, size, start + CHUNK_CAP) - start)  # its next offsets follow what came
                offsets = await self.video_call(channel, page, token, "a video chunk", *encode_multipart(
                    [("upload_phase", "transfer"), ("upload_session_id", session), ("start_offset", str(start)),
                     ("video_file_chunk", (video.name, chunk, "application/octet-stream"))]))

    async def video_call(self, channel: Channel, page: str, token: str, what: str, body: bytes,
                         content_type: str, visible: bool = False) -> dict:
        """A POST to /{page}/videos on the video host, signed as any Graph call."""
        headers, proof = self.signed(channel, token)
        url = f"{self.video_base()}/{GRAPH_VERSION}/{page}/videos" + (f"?{urlencode(proof)}" if proof else "")
        reply = await self.send(channel, "POST", url, visible=visible, what=what, body=body,
                                headers={**headers, "Content-Type": content_type}, timeouts=UPLOAD_TIMEOUTS)
        answer = reply.json()
        return answer if isinstance(answer, dict) else {}

    async def _comment(self, channel: Channel, token: str, post: OutgoingPost, parent: Release) -> Release:
        """A comment of the page on the post (every thread part comments on the post itself)."""
        target = parent.reply_ref.get("object") if isinstance(parent.reply_ref, dict) else None
        target = target if isinstance(target, str) and target else parent.id
        fields: list = [("message", post.text)]
        if post.media:
            image = post.media[0]
            if image.kind != "image" or len(post.media) > 1:
                raise Rejected("A Facebook comment takes at most one photo")
            fields.append(("source", (image.name, image.read(), image.content_type)))
        body, content_type = encode_multipart(fields)
        answer = await self.graph_call(channel, "POST", f"{target}/comments", token, "the comment", visible=True,
                                       body=body, headers={"Content-Type": content_type}, timeouts=UPLOAD_TIMEOUTS)
        comment = self._new_id(answer, "the comment")
        return Release(comment, await self.permalink(channel, token, comment), {"object": target})

    # --- stories ------------------------------------------------------------------------------------------

    async def _stories(self, channel: Channel, page: str, token: str, post: OutgoingPost) -> Release:
        """Each media as its own story, in order; those already out (an earlier attempt) are not sent again."""
        if not post.media:
            raise Rejected("A Facebook story needs at least one photo or video")
        progress = channel.session.get(STORY_PROGRESS)
        done = list(progress["done"]) if isinstance(progress, dict) and progress.get("key") == post.idempotency_key \
            and isinstance(progress.get("done"), list) else []
        for number, media in enumerate(post.media, 1):
            if number <= len(done):
                continue
            story = await (self._video_story(channel, page, token, media) if media.kind == "video"
                           else self._photo_story(channel, page, token, media, number))
            done.append(story)
            channel.save_session({**channel.session, STORY_PROGRESS: {"key": post.idempotency_key, "done": done}})
        channel.save_session({name: value for name, value in channel.session.items() if name != STORY_PROGRESS})
        return Release(done[-1], f"{self.auth_base()}/stories/{done[-1]}")

    async def _photo_story(self, channel: Channel, page: str, token: str, media: MediaFile, number: int) -> str:
        photo = await self._photo(channel, page, token, media, number)
        answer = await self.graph_call(channel, "POST", f"{page}/photo_stories", token, "the story", visible=True,
                                       form={"photo_id": photo})
        return self._new_id(answer, "the story")

    async def _video_story(self, channel: Channel, page: str, token: str, media: MediaFile) -> str:
        """video_stories: start (a video id and an upload URL on Facebook's upload host), the bytes to that URL,
        Facebook's processing, then finish, which publishes the story."""
        if os.path.getsize(media.path) > STORY_VIDEO_BYTES:  # sent in one request, so held in memory whole
            raise Rejected(f"a story video may be at most {STORY_VIDEO_BYTES // 2**20} MiB here (Facebook takes "
                           "stories of up to 60 seconds): post it as a video instead", item="the story video")
        start = await self.graph_call(channel, "POST", f"{page}/video_stories", token, "the story video's upload",
                                      form={"upload_phase": "start"})
        video_id, upload_url = start.get("video_id"), start.get("upload_url")
        if not isinstance(video_id, str) or not isinstance(upload_url, str):
            raise Retryable("Facebook started the story video's upload without its id and upload URL")
        if not upload_url.startswith(self.upload_base() + "/"):  # the page token goes there: Facebook's host only
            raise Retryable("Facebook gave an upload URL off its upload host; the next attempt starts again")
        await self.send(channel, "POST", upload_url, what="the story video's upload", body=media.read(),
                        headers={"Authorization": f"OAuth {token}", "offset": "0",
                                 "file_size": str(os.path.getsize(media.path))}, timeouts=UPLOAD_TIMEOUTS)
        await self._wait_for_video(channel, token, video_id)
        answer = await self.graph_call(channel, "POST", f"{page}/video_stories", token, "the story", visible=True,
                                       form={"upload_phase": "finish", "video_id": video_id})
        return self._new_id(answer, "the story")

    def upload_base(self) -> str:
        return platform_url("RUSTIZ_FACEBOOK_UPLOAD_URL", "https://rupload.facebook.com")

    async def _wait_for_video(self, channel: Channel, token: str, video_id: str) -> None:
        """Poll the video's status.video_status until it is uploaded (bounded)."""
        async def uploaded() -> Optional[bool]:
            answer = await self.graph_call(channel, "GET", video_id, token, "the story video's processing",
                                           query={"fields": "status"})
            status = answer.get("status") if isinstance(answer.get("status"), dict) else {}
            if status.get("video_status") == "error":
                raise Rejected("Facebook could not process the story's video")
            return True if status.get("video_status") in ("upload_complete", "ready") else None

        await wait_for_processing(
            uploaded, self.video_wait_seconds, self.poll_interval,
            lambda: Retryable("Facebook was still processing the story's video; the post waits and tries again"))

    # --- analytics ----------------------------------------------------------------------------------------

    PAGE_METRICS = {"page_total_media_view_unique": "Page reach", "page_media_view": "Media views",
                    "page_post_engagements": "Posts engagement", "page_daily_follows": "New followers"}
    POST_METRICS = {"post_total_media_view_unique": "Reach", "post_reactions_by_type_total": "Reactions",
                    "post_clicks": "Clicks"}
    VIDEO_METRICS = {"total_video_impressions": "Impressions", "total_video_views": "Views",
                     "total_video_reactions_by_type_total": "Reactions", "fb_reels_total_plays": "Plays"}

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        """The page's daily figures over the last `days` (Graph gives 90 at most)."""
        page, token = await self.as_page(channel)
        until = int(time.time())
        answer = await self.graph_call(channel, "GET", f"{page}/insights", token, "the page's insights", query={
            "metric": ",".join(self.PAGE_METRICS), "period": "day", "since": until - 86400 * min(max(days, 1), 90),
            "until": until})
        series = []
        for metric in answer.get("data") or []:
            label = self.PAGE_METRICS.get(metric.get("name")) if isinstance(metric, dict) else None
            points = [{"total": str(number(value.get("value"))), "date": str(value.get("end_time", ""))[:10]}
                      for value in metric.get("values") or [] if isinstance(value, dict)
                      and number(value.get("value")) is not None] if label else []
            if points:
                series.append({"label": label, "data": points, "percentageChange": 0})
        return series

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        """A feed post's insights ({page}_{post} ids); a video's video_insights (bare ids); stories have none."""
        _, token = await self.as_page(channel)
        video = "_" not in release.id
        metrics = self.VIDEO_METRICS if video else self.POST_METRICS
        try:
            answer = await self.graph_call(channel, "GET", f"{release.id}/{'video_insights' if video else 'insights'}",
                                           token, "the post's insights", query={"metric": ",".join(metrics)})
        except Rejected:  # a story's bare id has no insights edge at all
            if not video:
                raise
            return []
        today = time.strftime("%Y-%m-%d", time.gmtime())
        figures = []
        for metric in answer.get("data") or []:
            label = metrics.get(metric.get("name")) if isinstance(metric, dict) else None
            values = metric.get("values") if label and isinstance(metric.get("values"), list) else []
            total = number(values[0].get("value")) if values and isinstance(values[0], dict) else None
            if total is not None:
                figures.append({"label": label, "data": [{"total": str(total), "date": today}], "percentageChange": 0})
        return figures


PROVIDER = FacebookProvider()
