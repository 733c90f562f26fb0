"""TikTok Business (`tiktok-business`): TikTok's API for Business (Accounts API, open_api/v1.3), as Postiz uses it.

A separate app from `tiktok`'s (TIKTOK_BUSINESS_CLIENT_ID/SECRET, made in TikTok's Business developer portal),
a separate API: every call carries the token in an `Access-Token` header and names the account by
`business_id` (the open_id of the token exchange, kept in the credentials), and every answer is the envelope
{"code", "message", "request_id", "data"}, where a refusal is a non-zero code in an HTTP 200.
Media are only pulled: TikTok downloads the video or each picture from its MediaFile.url (rustiz's FRONTEND_URL),
so every post needs a public FRONTEND_URL (needs_public_media). The post is then processed by TikTok and its
status polled, as for `tiktok`; once the publish call is sent, a failure to learn its outcome is OutcomeUnknown.
What both APIs accept (one video, or up to 35 JPEG/WebP pictures) and their error words are tiktok_shared's.
No comments API (threads = False), and no delete of an organic post in the API, so can_delete stays False.
"""
from __future__ import annotations

import json
import random
from typing import Any, Optional
from urllib.parse import urlencode

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply
from .base import (
    Channel, Connected, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable, analytics_figures,
    retry_after_seconds, tuned,
)
from .oauth import AppCredentials, OAuthProvider, TokenRefused, Tokens
from .tiktok_shared import (
    POLL_SECONDS, check_granted, clear_words, is_photo_post, photo_problem, processing_outcome, unaccepted_picture,
)

API = "/open_api/v1.3"
DAY = 86400.0
# The envelope's codes that mean the access token is dead or expired (a refresh may cure it), TikTok's
# throttling (per app and per account), and its own failures (50000 and up).
TOKEN_CODES = (40102, 40104, 40105)
NO_PERMISSION = 40001  # a scope the consent did not grant: only a new consent helps
THROTTLED_CODES = (40100, 51021)
TOKEN_CALLS = ("the code exchange", "the token refresh")  # the `what` of the token endpoints' calls
TOKEN_WORDS = ("access token is incorrect", "access token has expired", "access_token_invalid", "auth_removed")


def envelope_error(answer: Any) -> Optional[tuple]:
    """(code, message) of the API's envelope when its code is not 0; None for success or another shape."""
    if not isinstance(answer, dict) or not isinstance(answer.get("code"), int) or isinstance(answer["code"], bool):
        return None
    if answer["code"] == 0:
        return None
    return answer["code"], answer.get("message") if isinstance(answer.get("message"), str) else ""


def data_of(reply: HttpReply) -> dict:
    answer = reply.json()
    data = answer.get("data") if isinstance(answer, dict) else None
    return data if isinstance(data, dict) else {}


def fields_query(business_id: str, fields: list, **more: str) -> str:
    return urlencode({"business_id": business_id, "fields": json.dumps(fields), **more})


class TikTokBusinessProvider(OAuthProvider):
    identifier = "tiktok-business"
    app_variables = ("TIKTOK_BUSINESS_CLIENT_ID", "TIKTOK_BUSINESS_CLIENT_SECRET")
    auth_origin = "https://www.tiktok.com"  # the consent page, and where posts are seen
    api_origin = "https://business-api.tiktok.com"  # the API and its token endpoints
    authorize_path = "/v2/auth/authorize/"
    token_path = API + "/tt_user/oauth2/token/"  # on the API origin
    refresh_path = API + "/tt_user/oauth2/refresh_token/"
    scopes = ("user.info.basic", "user.info.username", "user.info.stats", "video.list", "video.upload",
              "video.publish")  # Postiz's
    pkce = False
    threads = False  # no comments API
    needs_public_media = True  # TikTok pulls every video and picture from FRONTEND_URL
    # Postiz registers {FRONTEND_URL}/integrations/social/tiktok-business/ (the Business portal wants the slash) and
    # the exchange's redirect_uri must match it exactly: the same, so a Postiz operator's app keeps working.
    callback_suffix = "/"
    operator_guide = (
        "Create the app in TikTok's API for Business developer portal (business-api.tiktok.com, My Apps), with the "
        "Accounts API (TikTok account permissions: user.info.basic, user.info.username, user.info.stats, "
        "video.list, video.upload, video.publish). Register the redirect URI "
        "{FRONTEND_URL}/integrations/social/tiktok-business/ (https only, with its trailing slash, as Postiz), verify the domain of FRONTEND_URL as a "
        "URL property (TikTok pulls every video and picture from it), and put the app id and secret in "
        "TIKTOK_BUSINESS_CLIENT_ID and TIKTOK_BUSINESS_CLIENT_SECRET. The accounts connected must be TikTok "
        "business accounts.")

    # --- OAuth ------------------------------------------------------------------------------------------

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        query = {"client_key": app.client_id, "redirect_uri": redirect_uri, "state": state, "response_type": "code",
                 "disable_auto_auth": "1", "scope": ",".join(self.scopes)}
        return f"{self.auth_base()}{self.authorize_path}?{urlencode(query)}"

    async def exchange_code(self, http: HttpClient, app: AppCredentials, code: str, redirect_uri: str,
                            code_verifier: Optional[str], details: dict) -> Tokens:
        data = await self._token_call(http, app, self.token_path, {
            "grant_type": "authorization_code", "auth_code": code, "redirect_uri": redirect_uri}, "the code exchange")
        granted = data.get("scope")
        check_granted(self.scopes, granted)
        return self._tokens(data)

    async def refresh_tokens(self, http: HttpClient, app: AppCredentials, refresh_token: str) -> Tokens:
        data = await self._token_call(http, app, self.refresh_path, {
            "grant_type": "refresh_token", "refresh_token": refresh_token}, "the token refresh")
        return self._tokens(data)

    async def _token_call(self, http: HttpClient, app: AppCredentials, path: str, body: dict, what: str) -> dict:
        """POST a token endpoint (JSON, the app's id and secret in the body); its `data`. A refusal comes in the
        envelope: throttling and TikTok's own failures pass, any other refusal of the grant is TokenRefused."""
        channel = Channel("", "", {}, None, http)
        reply = await self.send(channel, "POST", self.api_base() + path, what=what, json_body={
            "client_id": app.client_id, "client_secret": app.client_secret, **body})
        data = data_of(reply)
        if not isinstance(data.get("access_token"), str) or not data["access_token"]:
            raise Retryable(f"TikTok's token endpoint answered without an access token "
                            f"({reply.described('a token answer')})", reply.status)
        return data

    def _tokens(self, data: dict) -> Tokens:
        expires_in = data.get("expires_in")
        refresh_token = data.get("refresh_token")
        business_id = data.get("open_id")
        return Tokens(data["access_token"], refresh_token if isinstance(refresh_token, str) and refresh_token else None,
                      float(expires_in) if isinstance(expires_in, int) and expires_in > 0 else DAY - 3600,
                      {"businessId": business_id} if isinstance(business_id, str) and business_id else None)

    # --- errors -------------------------------------------------------------------------------------------

    def error_words(self, reply: HttpReply) -> Optional[str]:
        error = envelope_error(reply.json())
        if error is None:
            return super().error_words(reply)
        code, message = error
        clear = next((clear_words(word) for word in message.replace(",", " ").split() if clear_words(word)), "")
        return "; ".join(part for part in (clear, f"{message} (code {code})" if message else f"code {code}") if part)

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """The envelope's code decides, whatever the HTTP status: throttling and TikTok's failures pass (after the
        post was sent, a failure is OutcomeUnknown); on the API a dead token is NeedsReconnect (the refresh is
        tried) and a missing permission needs a new consent; on the token endpoints a refused grant needs a new
        consent, but the app's own refusal (40001: its id or secret) is shown without disconnecting anything;
        anything else refuses the post."""
        error = envelope_error(reply.json())
        if error is None or reply.status >= 500:
            return super().check_reply(reply, visible, what)
        code, message = error
        words, body = self.platform_words(reply), self.error_excerpt(reply)
        if not visible:
            words += f" (on {what})"
        if code in THROTTLED_CODES or "too many requests" in message.lower():
            raise Retryable(words, reply.status, body, after=retry_after_seconds(reply) or tuned(
                "RUSTIZ_TIKTOK_BUSINESS_THROTTLE_SECONDS", 60.0, 0.01))  # (TikTok says no wait: a minute)
        if code >= 50000:
            if visible:
                raise OutcomeUnknown(f"TikTok failed after the post was sent: {words}", reply.status, body)
            raise Retryable(words, reply.status, body)
        if what in TOKEN_CALLS:
            raise (Rejected if code == NO_PERMISSION else TokenRefused)(words, reply.status, body)
        if code in TOKEN_CODES or any(token in message.lower() for token in TOKEN_WORDS):
            raise NeedsReconnect(words, reply.status, body)
        if code == NO_PERMISSION:
            raise TokenRefused(words, reply.status, body)
        raise Rejected(words, reply.status, body)

    def where_to_check(self, channel: Channel) -> str:
        return f"the TikTok profile (and its inbox) of the channel \"{channel.name}\""

    # --- the account ----------------------------------------------------------------------------------------

    @staticmethod
    def _headers(channel: Channel) -> dict:
        return {"Access-Token": channel.credentials["accessToken"]}

    def _business_id(self, channel: Channel) -> str:
        business_id = channel.credentials.get("businessId")
        if not isinstance(business_id, str) or not business_id:
            raise TokenRefused("the channel's TikTok business id is missing: connect it again")
        return business_id

    async def _get(self, channel: Channel, path: str, query: str, what: str) -> dict:
        reply = await self.send(channel, "GET", f"{self.api_base()}{API}{path}?{query}", what=what,
                                headers=self._headers(channel))
        return data_of(reply)

    async def connect(self, channel: Channel) -> Connected:
        business_id = self._business_id(channel)
        account = await self._get(channel, "/business/get/", fields_query(
            business_id, ["username", "display_name", "profile_image"]), "the account (/business/get/)")
        username = account.get("username") if isinstance(account.get("username"), str) and account["username"] else None
        name = account.get("display_name") if isinstance(account.get("display_name"), str) else ""
        picture = account.get("profile_image") if isinstance(account.get("profile_image"), str) else None
        return Connected(ChannelAccount(business_id, name or username or business_id, username, picture or None),
                         session={"username": username or ""})

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        business_id = self._business_id(channel)
        counts = await self._get(channel, "/business/get/", fields_query(
            business_id, ["followers_count", "following_count", "total_likes", "videos_count"]), "the account's counts")
        figures = {"Followers": counts.get("followers_count"), "Following": counts.get("following_count"),
                   "Total Likes": counts.get("total_likes"), "Videos": counts.get("videos_count")}
        videos = await self._videos(channel, ["item_id", "likes", "comments", "shares", "video_views"])
        if videos:  # the recent videos' lifetime engagement, added up (as Postiz)
            for label, field in (("Views", "video_views"), ("Recent Likes", "likes"), ("Recent Comments", "comments"),
                                 ("Recent Shares", "shares")):
                figures[label] = sum(video.get(field) for video in videos if isinstance(video.get(field), int))
        return analytics_figures(figures)

    async def _videos(self, channel: Channel, fields: list, video_ids: Optional[list] = None) -> list:
        more = {"filters": json.dumps({"video_ids": video_ids})} if video_ids else {"max_count": "20"}
        data = await self._get(channel, "/business/video/list/", fields_query(self._business_id(channel), fields, **more),
                               "the account's videos")
        videos = data.get("videos")
        return [video for video in videos if isinstance(video, dict)] if isinstance(videos, list) else []

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        """The video's counts as of now; a post released before TikTok gave its public id is looked up by its
        share id first."""
        video_id = release.id
        if not video_id.isdigit():
            ids = (await self._status(channel, video_id)).get("post_ids")
            video_id = str(ids[0]) if isinstance(ids, list) and ids and ids[0] not in (None, "") else ""
            if not video_id:
                return []
        videos = await self._videos(channel, ["item_id", "likes", "comments", "shares", "video_views"], [video_id])
        video = next((item for item in videos if str(item.get("item_id")) == video_id), None)
        if video is None:
            return []
        return analytics_figures({"Views": video.get("video_views"), "Likes": video.get("likes"),
                                  "Comments": video.get("comments"), "Shares": video.get("shares")})

    # --- tools (POST /integration-trigger) ------------------------------------------------------------------

    async def tool_musicSearch(self, channel: Channel, data: dict) -> list:
        """Commercial music library tracks that may go with a post (the trending list; its only filter is the
        genre): [{id, title, artist, image, duration (ms), previewUrl}], the id a song clip id."""
        genre = data.get("genre") if isinstance(data, dict) and isinstance(data.get("genre"), str) else ""
        answer = await self._get(channel, "/discovery/cml/trending_list/", urlencode(
            {"business_id": self._business_id(channel), **({"genre": genre} if genre else {})}), "the music list")
        tracks = []
        for track in answer.get("list") if isinstance(answer.get("list"), list) else ():
            if not isinstance(track, dict):
                continue
            full, trending = (track.get(name) if isinstance(track.get(name), dict) else {}
                              for name in ("full_duration_song_clip", "trending_song_clip"))
            clip = full.get("song_clip_id") or trending.get("song_clip_id")  # the only id a post takes
            if clip:
                seconds = track.get("duration") or trending.get("duration") or 0
                tracks.append({"id": str(clip), "title": track.get("commercial_music_name") or "",
                               "artist": track.get("artist") or "", "image": track.get("thumbnail_url") or "",
                               "duration": seconds * 1000 if isinstance(seconds, (int, float)) else 0,
                               "previewUrl": track.get("preview_url") or trending.get("preview_url") or ""})
        return tracks

    async def tool_locationSearch(self, channel: Channel, data: dict) -> list:
        """Location tags matching `q`: [{id, name, address}]."""
        words = data.get("q") if isinstance(data, dict) and isinstance(data.get("q"), str) else ""
        if not words.strip():
            return []
        answer = await self._get(channel, "/business/publish/location/", urlencode(
            {"business_id": self._business_id(channel), "search_query": words[:100]}), "the location search")
        locations = answer.get("locations") if isinstance(answer.get("locations"), list) else []
        return [{"id": item.get("location_id"), "name": item.get("location_name") or "",
                 "address": item.get("location_address") or ""} for item in locations if isinstance(item, dict)]

    # --- scheduling -----------------------------------------------------------------------------------------

    def pulls_media(self, values: list, settings: dict) -> bool:
        return bool(values and values[0].get("image"))

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        return photo_problem(values) if is_photo_post(values) else None

    # --- publishing -------------------------------------------------------------------------------------------

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        videos = [media for media in post.media if media.kind == "video"]
        if not post.media or (videos and len(post.media) > 1):
            raise Rejected("A TikTok post is one video, or one or more pictures")
        wrong = None if videos else unaccepted_picture(post.media)
        if wrong:
            raise Rejected(wrong)
        business_id = self._business_id(channel)
        if videos:
            path, body = "/business/video/publish/", self._video_body(business_id, post)
        else:
            path, body = "/business/photo/publish/", await self._photo_body(channel, business_id, post)
        reply = await self.send(channel, "POST", f"{self.api_base()}{API}{path}", visible=True, what="the post",
                                headers={**self._headers(channel), "Content-Type": "application/json"}, json_body=body)
        share_id = data_of(reply).get("share_id")
        if not isinstance(share_id, str) or not share_id:
            raise OutcomeUnknown(f"TikTok answered the post without a share_id ({reply.described('one')})",
                                 reply.status)
        return await self._outcome(channel, share_id)

    @staticmethod
    def _draft(post: OutgoingPost) -> bool:
        return post.settings.get("content_posting_method") == "UPLOAD"  # only UPLOAD: a missing value publishes

    @staticmethod
    def _tags(settings: dict) -> dict:
        """The location of a Direct Post, as the settings' `location` object names it."""
        location = settings.get("location") if isinstance(settings.get("location"), dict) else {}
        return {"location_id": location["id"], "location_name": location.get("name")} if location.get("id") else {}

    def _video_body(self, business_id: str, post: OutgoingPost) -> dict:
        settings = post.settings
        info: dict = {"caption": post.text} if post.text else {}
        info.update(is_brand_organic=settings.get("brand_organic_toggle") is True,
                    is_branded_content=settings.get("brand_content_toggle") is True)
        if self._draft(post):
            info["upload_to_draft"] = True
        else:  # the video endpoint has no privacy_level: the account's default applies
            info.update(disable_comment=settings.get("comment") is not True, disable_duet=settings.get("duet") is not True,
                        disable_stitch=settings.get("stitch") is not True,
                        is_ai_generated=settings.get("video_made_with_ai") is True, **self._tags(settings))
            music = settings.get("music") if isinstance(settings.get("music"), dict) else {}
            if music.get("id"):  # TikTok's volumes default to 0 (muted): 50 as the TikTok app does
                info["music_sound_info"] = {"music_sound_id": music["id"],
                                            "music_sound_volume": music.get("audio_volume", 50),
                                            "video_original_sound_volume": music.get("video_volume", 50)}
        return {"business_id": business_id, "video_url": post.media[0].url, "post_info": info}

    async def _photo_body(self, channel: Channel, business_id: str, post: OutgoingPost) -> dict:
        settings = post.settings
        info: dict = {}
        if isinstance(settings.get("title"), str) and settings["title"]:
            info["title"] = settings["title"][:90]
        if post.text:
            info["caption"] = post.text
        info.update(is_brand_organic=settings.get("brand_organic_toggle") is True,
                    is_branded_content=settings.get("brand_content_toggle") is True)
        if self._draft(post):
            info["is_draft"] = True
        else:
            music = settings.get("music") if isinstance(settings.get("music"), dict) else {}
            music_id = music.get("id")
            if settings.get("autoAddMusic") == "yes":  # as Postiz: a random track of the list, TikTok's own if none
                tracks = await self.tool_musicSearch(channel, {})
                music_id = random.choice(tracks)["id"] if tracks else None
            info.update(privacy_level=settings.get("privacy_level") or "PUBLIC_TO_EVERYONE",
                        disable_comment=settings.get("comment") is not True,
                        auto_add_music=not music_id and settings.get("autoAddMusic") == "yes", **self._tags(settings))
            if music_id:
                info["music_sound_info"] = {"music_sound_id": music_id}
        return {"business_id": business_id, "photo_images": [media.url for media in post.media],
                "photo_cover_index": 0, "post_info": info}

    async def _status(self, channel: Channel, share_id: str) -> dict:
        return await self._get(channel, "/business/publish/status/", urlencode(
            {"business_id": self._business_id(channel), "publish_id": share_id}), "the post's status")

    async def _outcome(self, channel: Channel, share_id: str) -> Release:
        """Poll the status until PUBLISH_COMPLETE, SEND_TO_USER_INBOX or FAILED (tiktok_shared.processing_outcome);
        post_ids can lag behind PUBLISH_COMPLETE, and never come for a private post."""
        async def read_status() -> dict:
            data = await self._status(channel, share_id)
            ids = data.get("post_ids")
            public_id = str(ids[0]) if isinstance(ids, list) and ids and ids[0] not in (None, "") else None
            return {"status": data.get("status"), "public_id": public_id, "reason": data.get("reason")}

        return await processing_outcome(read_status, share_id, "share_id", self.auth_base(),
                                        channel.session.get("username") or "",
                                        tuned("RUSTIZ_TIKTOK_BUSINESS_POLL_SECONDS", POLL_SECONDS, 0.01))


PROVIDER = TikTokBusinessProvider()
