"""TikTok (Login Kit for Web + Content Posting API v2), through the operator's app.

A video goes up as FILE_UPLOAD: init (Direct Post, or to the user's inbox as a draft), then each chunk PUT
to the upload URL TikTok answered, read from the file one chunk at a time. Photo posts can only be pulled
(PULL_FROM_URL): TikTok downloads each picture from its MediaFile.url, rustiz's public URL. Either way the
post is then processed by TikTok; its status is polled until it is published, in the inbox, or failed.
TikTok has no comments API, so a post is one part (threads = False: extra parts are refused at scheduling).
What the creator may post (privacy levels, duet/stitch/comment switches) is TikTok's creator_info: read at
connect (the channel's limits, checked at scheduling) and again before each publish (it can change).
Once the content is handed to TikTok a failure to learn its outcome is OutcomeUnknown, never a retry,
which would post it twice.
"""
from __future__ import annotations

import os
import struct
from typing import Any, Optional
from urllib.parse import urlencode

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply, Timeouts
from .base import (
    Channel, Connected, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable, analytics_figures,
    error_fields, retry_after_seconds, tuned,
)
from .oauth import DEFINITE_REFUSALS, AppCredentials, OAuthProvider, TokenRefused, Tokens, bearer
from .tiktok_shared import (
    POLL_SECONDS, check_granted, clear_words, is_photo_post, photo_problem, processing_outcome, unaccepted_picture,
)

MIB = 1024 * 1024
CHUNK_BYTES = 10 * MIB  # TikTok takes 5-64 MB chunks; 10 MB keeps memory small (the last is up to 20 MB)
MAX_CHUNKS = 1000
JSON_UTF8 = {"Content-Type": "application/json; charset=UTF-8"}

RETRY_LATER = {"reached_active_user_cap": 3600.0}  # codes that pass; the others stay refused


def tiktok_error(answer: Any) -> Optional[tuple]:
    """(code, message) of the API's shape {"data":..., "error": {"code", "message", "log_id"}}, code "ok" too."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("code"), str) or not error["code"]:
        return None
    return error["code"], error.get("message") if isinstance(error.get("message"), str) else ""


def movie_seconds(path: str) -> Optional[float]:
    """The duration an MP4/MOV file states in moov/mvhd; None when it states none where looked."""
    try:
        with open(path, "rb") as file:
            at, end, inside = 0, os.fstat(file.fileno()).st_size, False
            for _ in range(64):  # top-level boxes, then moov's
                if at + 8 > end:
                    return None
                file.seek(at)
                head = file.read(16)
                length, kind = struct.unpack(">I4s", head[:8])
                header = 16 if length == 1 else 8
                length = struct.unpack(">Q", head[8:16])[0] if length == 1 else length or end - at
                if length < header:
                    return None
                if kind == b"moov" and not inside:
                    at, end, inside = at + header, at + length, True
                    continue
                if kind == b"mvhd" and inside:
                    file.seek(at + header)
                    data = file.read(32)
                    scale, duration = struct.unpack(">IQ", data[20:32]) if data[0] == 1 else \
                        struct.unpack(">II", data[12:20])
                    return duration / scale if scale else None
                at += length
    except (OSError, struct.error, IndexError):
        return None
    return None


def chunk_plan(size: int, chunk: int) -> tuple:
    """(chunk_size, total_chunk_count) by TikTok's rules: count = size // chunk_size, the last chunk takes the
    trailing bytes; a file no larger than one chunk goes whole; never more than 1,000 chunks."""
    chunk = max(chunk, -(-size // MAX_CHUNKS))
    return (size, 1) if size <= chunk else (chunk, size // chunk)


def creator_limits(data: dict) -> dict:
    """The channel's limits from creator_info (what post_problem checks before a post is accepted)."""
    options = data.get("privacy_level_options")
    limits = {"privacyLevelOptions": [item for item in options if isinstance(item, str)]
              if isinstance(options, list) else [],
              "commentDisabled": data.get("comment_disabled") is True,
              "duetDisabled": data.get("duet_disabled") is True,
              "stitchDisabled": data.get("stitch_disabled") is True}
    if isinstance(data.get("max_video_post_duration_sec"), int):
        limits["maxVideoPostDurationSec"] = data["max_video_post_duration_sec"]
    return limits


def offered_settings(schema: Any, limits: dict) -> Any:
    """The settings' schema with only the privacy levels the creator offers, and the switches the creator
    turned off said so (the web app's settings form shows both)."""
    offered = limits.get("privacyLevelOptions")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not isinstance(offered, list) or not offered:
        return schema
    properties = {name: dict(spec) if isinstance(spec, dict) else spec for name, spec in properties.items()}
    privacy = properties.get("privacy_level")
    if isinstance(privacy, dict) and isinstance(privacy.get("enum"), list):
        privacy["enum"] = [level for level in privacy["enum"] if level in offered] or privacy["enum"]
    for setting, disabled in (("comment", "commentDisabled"), ("duet", "duetDisabled"), ("stitch", "stitchDisabled")):
        if limits.get(disabled) and isinstance(properties.get(setting), dict):
            properties[setting]["description"] = f"Turned off by the creator on TikTok: leave {setting} off"
    return {**schema, "properties": properties}


def settings_problem(limits: dict, settings: dict, photo: bool, username: str = "") -> Optional[str]:
    """What the creator may not post with these settings (Direct Post only: a draft's are set in the app)."""
    if settings.get("content_posting_method", "DIRECT_POST") != "DIRECT_POST" or not limits:
        return None
    who = f"the TikTok account @{username}" if username else "this TikTok account"
    offered = limits.get("privacyLevelOptions") or []
    privacy = settings.get("privacy_level")
    if privacy not in offered:
        return (f"privacy_level {privacy} is not offered by {who}; it offers: "
                f"{', '.join(offered) or 'none (it may not post now)'}")
    switches = (("comment", "commentDisabled", "comments"),) + (
        () if photo else (("duet", "duetDisabled", "duets"), ("stitch", "stitchDisabled", "stitches")))
    for setting, disabled, what in switches:
        if settings.get(setting) is True and limits.get(disabled):
            return f"{setting} is on, but {who} has turned {what} off in TikTok: set {setting} to false"
    return None


class TikTokProvider(OAuthProvider):
    identifier = "tiktok"
    app_variables = ("TIKTOK_CLIENT_ID", "TIKTOK_CLIENT_SECRET")  # TikTok calls the id the client key
    auth_origin = "https://www.tiktok.com"  # the consent page, and where posts are seen
    api_origin = "https://open.tiktokapis.com"  # the API and its token endpoint
    authorize_path = "/v2/auth/authorize/"
    token_path = "/v2/oauth/token/"  # on the API origin
    scopes = ("video.list", "user.info.basic", "video.publish", "video.upload", "user.info.profile",
              "user.info.stats")  # Postiz's
    pkce = False  # TikTok's code_verifier is for its mobile and desktop flows, not Login Kit for Web
    threads = False  # no comments API
    concurrency = 4
    chunk_bytes = CHUNK_BYTES  # RUSTIZ_TIKTOK_CHUNK_BYTES overrides (tests)
    operator_guide = (
        "Create the app at developers.tiktok.com (Manage apps), add the products Login Kit (Web) and Content "
        "Posting API (switch on Direct Post), and the scopes user.info.basic, user.info.profile, user.info.stats, "
        "video.list, video.upload and video.publish. Register the redirect URI "
        "{FRONTEND_URL}/integrations/social/tiktok (https only), verify the domain of FRONTEND_URL under URL "
        "properties (TikTok pulls photo posts from it), and put the client key and client secret in "
        "TIKTOK_CLIENT_ID and TIKTOK_CLIENT_SECRET. Until TikTok audits the app, posts can only be private "
        "(privacy_level SELF_ONLY, on a private account); submit the app for review and then the Direct Post "
        "audit to post publicly.")

    # --- OAuth ------------------------------------------------------------------------------------------

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        query = {"client_key": app.client_id, "response_type": "code", "scope": ",".join(self.scopes),
                 "redirect_uri": redirect_uri, "state": state}
        return f"{self.auth_base()}{self.authorize_path}?{urlencode(query)}"

    async def exchange_code(self, http: HttpClient, app: AppCredentials, code: str, redirect_uri: str,
                            code_verifier: Optional[str], details: dict) -> Tokens:
        form = {"code": code, "grant_type": "authorization_code", "redirect_uri": redirect_uri}
        reply = await self._token_reply(http, app, form, "the code exchange")
        granted = reply.json().get("scope") if isinstance(reply.json(), dict) else None
        check_granted(self.scopes, granted)
        return self.tokens_from(reply)

    async def token_request(self, http: HttpClient, app: AppCredentials, form: dict, what: str) -> Tokens:
        return self.tokens_from(await self._token_reply(http, app, form, what))

    async def _token_reply(self, http: HttpClient, app: AppCredentials, form: dict, what: str) -> HttpReply:
        """POST /v2/oauth/token/ with the app's key and secret in the form. TikTok's refusal is
        {"error", "error_description", "log_id"}, whatever the status: a dead grant is TokenRefused."""
        channel = Channel("", "", {}, None, http)
        form = {"client_key": app.client_id, "client_secret": app.client_secret, **form}
        try:
            reply = await self.send(channel, "POST", self.api_base() + self.token_path, what=what, form=form,
                                    headers={"Cache-Control": "no-cache"})
        except (Rejected, NeedsReconnect) as refused:
            if not isinstance(refused, TokenRefused) and any(f'"{code}"' in refused.body for code in DEFINITE_REFUSALS):
                raise TokenRefused(refused.message, refused.status, refused.body) from None
            raise
        answer = reply.json()
        if isinstance(answer, dict) and isinstance(answer.get("error"), str) and answer["error"] \
                and not answer.get("access_token"):
            refusal = TokenRefused if answer["error"] in DEFINITE_REFUSALS else Rejected
            raise refusal(self.platform_words(reply), reply.status, self.error_excerpt(reply))
        return reply

    # --- errors -------------------------------------------------------------------------------------------

    def error_words(self, reply: HttpReply) -> Optional[str]:
        error = tiktok_error(reply.json())
        if error is not None and error[0] != "ok":
            code, message = error
            clear = clear_words(code)
            return "; ".join(part for part in (clear, f"{message} ({code})" if message else code) if part)
        return error_fields(reply.json(), "error", "error_description")  # the token endpoint's shape

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """TikTok's error.code decides, in any status: a dead token is NeedsReconnect (TokenKeeper refreshes),
        missing scopes need a new consent, throttling passes; TikTok's other refusals (403 included:
        spam limits, an unaudited app) are refusals of the post, not of the channel."""
        error = tiktok_error(reply.json())
        code = error[0] if error else None
        if code in (None, "ok") or reply.status >= 500:
            return super().check_reply(reply, visible, what)
        message, body = self.platform_words(reply), self.error_excerpt(reply)
        if not visible:
            message += f" (on {what})"
        if code == "access_token_invalid":
            raise NeedsReconnect(message, reply.status, body)
        if code.startswith("scope_"):  # scope_not_authorized, scope_permission_missed: only a consent helps
            raise TokenRefused(message, reply.status, body)
        if code == "rate_limit_exceeded" or code in RETRY_LATER:
            raise Retryable(message, reply.status, body, after=retry_after_seconds(reply) or RETRY_LATER.get(code, 60.0))
        raise Rejected(message, reply.status, body)

    def where_to_check(self, channel: Channel) -> str:
        return f"the TikTok profile (and its inbox) of the channel \"{channel.name}\""

    # --- the account ----------------------------------------------------------------------------------------

    async def _user(self, channel: Channel, fields: str, what: str) -> dict:
        reply = await self.send(channel, "GET", f"{self.api_base()}/v2/user/info/?fields={fields}", what=what,
                                headers=bearer(channel))
        answer = reply.json()
        user = (answer.get("data") or {}).get("user") if isinstance(answer, dict) and isinstance(
            answer.get("data"), dict) else None
        return user if isinstance(user, dict) else {}

    async def _creator_info(self, channel: Channel) -> dict:
        reply = await self.send(channel, "POST", self.api_base() + "/v2/post/publish/creator_info/query/",
                                what="the creator's posting options (creator_info)",
                                headers={**bearer(channel), **JSON_UTF8})
        data = reply.json().get("data") if isinstance(reply.json(), dict) else None
        if not isinstance(data, dict):
            raise Retryable(f"TikTok answered creator_info with {reply.described('the creator options')}",
                            reply.status)
        return data

    async def connect(self, channel: Channel) -> Connected:
        user = await self._user(channel, "open_id,union_id,avatar_url,display_name,username", "the account")
        if not isinstance(user.get("open_id"), str) or not user["open_id"]:
            raise Rejected("TikTok answered /v2/user/info/ without the account's open_id")
        username = user.get("username") if isinstance(user.get("username"), str) and user["username"] else None
        name = user.get("display_name") if isinstance(user.get("display_name"), str) else ""
        picture = user.get("avatar_url") if isinstance(user.get("avatar_url"), str) else None
        limits = creator_limits(await self._creator_info(channel))
        return Connected(ChannelAccount(user["open_id"], name or username or user["open_id"], username,
                                        picture or None), limits=limits)

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        user = await self._user(channel, "follower_count,following_count,likes_count,video_count",
                                "the account's counts")
        return analytics_figures({"Followers": user.get("follower_count"), "Following": user.get("following_count"),
                                  "Total Likes": user.get("likes_count"), "Videos": user.get("video_count")})

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        """The video's counts as of now; a post released without its public id (moderation was still running)
        is looked up by its publish_id first."""
        video_id = release.id
        if not video_id.isdigit():  # a publish_id ("v_pub_file~v2-1.7...", "p_pub_url~..."), not a video id
            video_id = (await self._status(channel, video_id)).get("public_id") or ""
            if not video_id:
                return []
        reply = await self.send(channel, "POST", f"{self.api_base()}/v2/video/query/?fields="
                                "id,like_count,comment_count,share_count,view_count", what="the video's counts",
                                headers={**bearer(channel), **JSON_UTF8}, json_body={"filters": {"video_ids": [video_id]}})
        data = reply.json().get("data") if isinstance(reply.json(), dict) else None
        videos = data.get("videos") if isinstance(data, dict) and isinstance(data.get("videos"), list) else []
        video = next((item for item in videos if isinstance(item, dict) and str(item.get("id")) == video_id), None)
        if video is None:
            return []
        return analytics_figures({"Views": video.get("view_count"), "Likes": video.get("like_count"),
                                  "Comments": video.get("comment_count"), "Shares": video.get("share_count")})

    # --- scheduling -----------------------------------------------------------------------------------------

    def pulls_media(self, values: list, settings: dict) -> bool:
        """Photo posts only: TikTok takes video bytes, but pulls every picture from its URL."""
        return is_photo_post(values)

    def channel_settings(self, schema: Any, limits: dict) -> Any:
        return offered_settings(schema, limits)

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        photo = self.pulls_media(values, settings)
        problem = photo_problem(values) if photo else None
        if problem:
            return problem
        profile = channel.get("profile") if isinstance(channel.get("profile"), str) else ""
        return settings_problem(channel.get("limits") or {}, settings, photo, profile)

    # --- publishing -------------------------------------------------------------------------------------------

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        videos = [media for media in post.media if media.kind == "video"]
        if not post.media or (videos and len(post.media) > 1):
            raise Rejected("A TikTok post is one video, or one or more pictures")
        creator = await self._creator_info(channel)  # it can change after scheduling: TikTok checks it too
        username = creator.get("creator_username") if isinstance(creator.get("creator_username"), str) else ""
        problem = settings_problem(creator_limits(creator), post.settings, not videos, username)
        if problem:
            raise Rejected(problem)
        wrong = None if videos else unaccepted_picture(post.media)
        if wrong:
            raise Rejected(wrong)
        seconds, longest = movie_seconds(videos[0].path) if videos else None, creator.get("max_video_post_duration_sec")
        if seconds is not None and isinstance(longest, int) and seconds > longest:
            raise Rejected(f"the video lasts {seconds:.0f} s, and {'@' + username if username else 'this account'} "
                           f"may post videos up to {longest} s on TikTok")
        publish_id = await (self._send_video(channel, post) if videos else self._send_photos(channel, post))
        return await self._outcome(channel, publish_id, username)

    def _post_info(self, post: OutgoingPost, photo: bool) -> dict:
        settings = post.settings
        direct = settings.get("content_posting_method", "DIRECT_POST") == "DIRECT_POST"
        info: dict = {"description": post.text} if photo else {"title": post.text} if post.text else {}
        if photo and isinstance(settings.get("title"), str) and settings["title"]:
            info["title"] = settings["title"][:90]
        if not direct:  # a draft: the user sets the rest in the TikTok app
            return info
        info.update(privacy_level=settings.get("privacy_level"), disable_comment=settings.get("comment") is not True,
                    brand_content_toggle=settings.get("brand_content_toggle") is True,
                    brand_organic_toggle=settings.get("brand_organic_toggle") is True)
        if photo:
            info["auto_add_music"] = settings.get("autoAddMusic") == "yes"
        else:
            info.update(disable_duet=settings.get("duet") is not True, disable_stitch=settings.get("stitch") is not True,
                        is_aigc=settings.get("video_made_with_ai") is True)
        return info

    async def _send_photos(self, channel: Channel, post: OutgoingPost) -> str:
        """Photo posts: TikTok pulls the pictures from their public URLs; the init is the post itself."""
        direct = post.settings.get("content_posting_method", "DIRECT_POST") == "DIRECT_POST"
        body = {"post_info": self._post_info(post, photo=True), "media_type": "PHOTO",
                "post_mode": "DIRECT_POST" if direct else "MEDIA_UPLOAD",
                "source_info": {"source": "PULL_FROM_URL", "photo_cover_index": 0,
                                "photo_images": [media.url for media in post.media]}}
        reply = await self.send(channel, "POST", self.api_base() + "/v2/post/publish/content/init/", visible=True,
                                what="the photo post", headers={**bearer(channel), **JSON_UTF8}, json_body=body)
        return self._publish_id(reply, "the photo post")

    async def _send_video(self, channel: Channel, post: OutgoingPost) -> str:
        video = post.media[0]
        size = os.path.getsize(video.path)
        chunk_size, count = chunk_plan(size, int(tuned("RUSTIZ_TIKTOK_CHUNK_BYTES", self.chunk_bytes, 1)))
        direct = post.settings.get("content_posting_method", "DIRECT_POST") == "DIRECT_POST"
        body: dict = {"source_info": {"source": "FILE_UPLOAD", "video_size": size, "chunk_size": chunk_size,
                                      "total_chunk_count": count}}
        info = self._post_info(post, photo=False)
        if direct or info:
            body["post_info"] = info
        path = "/v2/post/publish/video/init/" if direct else "/v2/post/publish/inbox/video/init/"
        reply = await self.send(channel, "POST", self.api_base() + path, what="the video's init",
                                headers={**bearer(channel), **JSON_UTF8}, json_body=body)
        publish_id = self._publish_id(reply, "the video's init")
        upload_url = reply.json()["data"].get("upload_url")
        if not isinstance(upload_url, str) or not upload_url:
            raise Retryable(f"TikTok answered the video's init without an upload_url ({reply.described('one')})")
        with open(video.path, "rb") as file:
            for number in range(count):
                first = number * chunk_size
                length = size - first if number == count - 1 else chunk_size
                await self._put_chunk(channel, upload_url, file.read(length), first, size, video.content_type,
                                      last=number == count - 1, item=f"chunk {number + 1} of {count} of the video")
        return publish_id

    async def _put_chunk(self, channel: Channel, url: str, data: bytes, first: int, size: int, content_type: str,
                         last: bool, item: str) -> None:
        headers = {"Content-Type": content_type, "Content-Range": f"bytes {first}-{first + len(data) - 1}/{size}"}
        try:  # the last chunk completes the upload: TikTok then publishes, so a lost answer may mean posted
            await self.send(channel, "PUT", url, visible=last, what=item, body=data, headers=headers,
                            timeouts=Timeouts(read=120, total=900))
        except NeedsReconnect as refused:  # the signed upload URL expired: not our token
            raise Retryable(f"TikTok's upload URL refused {item} (HTTP {refused.status}); the next attempt starts "
                            "the upload again", refused.status) from None

    @staticmethod
    def _publish_id(reply: HttpReply, what: str) -> str:
        data = reply.json().get("data") if isinstance(reply.json(), dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("publish_id"), str) or not data["publish_id"]:
            raise OutcomeUnknown(f"TikTok answered {what} without a publish_id ({reply.described('one')})",
                                 reply.status)
        return data["publish_id"]

    async def _status(self, channel: Channel, publish_id: str) -> dict:
        reply = await self.send(channel, "POST", self.api_base() + "/v2/post/publish/status/fetch/",
                                what="the post's status", headers={**bearer(channel), **JSON_UTF8},
                                json_body={"publish_id": publish_id})
        data = reply.json().get("data") if isinstance(reply.json(), dict) else None
        data = dict(data) if isinstance(data, dict) else {}
        ids = data.get("publicaly_available_post_id")  # (sic: TikTok's spelling)
        data["public_id"] = str(ids[0]) if isinstance(ids, list) and ids and ids[0] not in (None, "") else None
        return data

    async def _outcome(self, channel: Channel, publish_id: str, username: str) -> Release:
        """Poll the status through PROCESSING_UPLOAD / PROCESSING_DOWNLOAD (tiktok_shared.processing_outcome)."""
        async def read_status() -> dict:
            data = await self._status(channel, publish_id)
            return {**data, "reason": data.get("fail_reason")}

        return await processing_outcome(read_status, publish_id, "publish_id", self.auth_base(), username,
                                        tuned("RUSTIZ_TIKTOK_POLL_SECONDS", POLL_SECONDS, 0.01))


PROVIDER = TikTokProvider()
