"""Instagram through Facebook (Postiz's `instagram`): a professional (business or creator) Instagram account
linked to a Facebook page, reached with Facebook Login and the Facebook app (FACEBOOK_APP_ID / _SECRET).

After consent the user picks the Instagram account among those of the pages they manage (between steps); the
channel keeps the page and the account in its session, and publishes on graph.facebook.com with the page's
token, read again after each reconnect (meta.py). The container flow is instagram_shared.py's; videos go up
through the resumable upload (sends_video), which Meta offers with Facebook Login for Business only.
"""
from __future__ import annotations

from typing import Optional

from ..catalogue import ChannelAccount
from .base import Channel, Connected, NeedsReconnect, Rejected
from .instagram_shared import InstagramPublishing

PAGE_FIELDS = "id,name,instagram_business_account{id,username,name,profile_picture_url}"
AUDIO_TYPES = ("music", "original_sound")


class InstagramProvider(InstagramPublishing):
    identifier = "instagram"
    scopes = ("instagram_basic", "pages_show_list", "pages_read_engagement", "business_management",
              "instagram_content_publish", "instagram_manage_comments", "instagram_manage_insights")
    required_permissions = scopes  # as Postiz: every one, or the first comment or the insights fail later
    audio_allowed = True
    # Facebook Login for Business may send videos itself (the resumable upload): a video post needs no public
    # FRONTEND_URL, so connecting does not either; a post with a picture is checked when it is scheduled.
    sends_video = True
    needs_public_media = False
    operator_guide = (
        "Use the Facebook app (FACEBOOK_APP_ID and FACEBOOK_APP_SECRET, the same as Facebook Page's) made at "
        "developers.facebook.com/apps as a Business app, with the products Facebook Login for Business and "
        "Instagram (API setup with Facebook login). Add {FRONTEND_URL}/integrations/social/instagram to the Valid "
        "OAuth Redirect URIs of Facebook Login's settings. The permissions asked are instagram_basic, "
        "pages_show_list, pages_read_engagement, business_management, instagram_content_publish, "
        "instagram_manage_comments and instagram_manage_insights: in development mode only people with a role on "
        "the app can connect; others need Advanced Access, granted by Meta's App Review (with Business "
        "Verification). The Instagram account must be a business or creator account linked to a Facebook page "
        "the user manages. Instagram downloads every picture from FRONTEND_URL, which must then be a public HTTPS "
        "address; pictures must be JPEG. Videos (Reels, stories, carousel videos) rustiz sends itself through "
        "Instagram's resumable upload (rupload.facebook.com), so a video post works without a public FRONTEND_URL.")

    # --- the choice of the Instagram account ---------------------------------------------------------------

    async def step_choices(self, channel: Channel) -> list:
        return [{"id": account.internal_id, "name": account.name, "picture": account.picture}
                for _, account in await self._accounts(channel)]

    async def choose(self, channel: Channel, choice: str) -> Connected:
        found = next(((page, account) for page, account in await self._accounts(channel)
                      if account.internal_id == choice), None)
        if found is None:
            raise Rejected(f"none of the Facebook pages this user manages is linked to the Instagram account "
                           f"{str(choice)[:40]!r}")
        page, account = found
        # A page token cached for another page (or user token) must not be used: page_token() reads it again.
        return Connected(account, session={"page": page, "instagram": account.internal_id, "pageToken": "",
                                           "pageTokenOf": ""})

    async def _accounts(self, channel: Channel) -> list:
        """(page id, the Instagram account as a ChannelAccount) of each managed page linked to one."""
        accounts, seen = [], set()
        for page in await self.managed_pages(channel, PAGE_FIELDS):
            linked = page.get("instagram_business_account")
            if not isinstance(linked, dict) or not isinstance(linked.get("id"), str) or linked["id"] in seen:
                continue
            seen.add(linked["id"])
            username = linked.get("username") if isinstance(linked.get("username"), str) else None
            name = linked.get("name") if isinstance(linked.get("name"), str) and linked["name"] else username
            picture = linked.get("profile_picture_url")
            accounts.append((str(page["id"]), ChannelAccount(linked["id"], name or linked["id"], username,
                                                             picture if isinstance(picture, str) and picture else None)))
        return accounts

    async def ig_account(self, channel: Channel) -> tuple:
        page = channel.session.get("page") or channel.credentials.get("page")
        account = channel.session.get("instagram") or channel.credentials.get("instagram")
        if not page or not account:
            raise NeedsReconnect("this Instagram channel has no Instagram account chosen yet: pick one (or connect "
                                 "it again)")
        return str(account), await self.page_token(channel, str(page))

    # --- the audioSearch tool (Instagram's Audio API: Facebook Login only) ------------------------------------

    async def tool_audioSearch(self, channel: Channel, data: dict) -> list:
        """Audio to attach to a Reel (settings "audio"): music or original sounds; trending without `q`."""
        account, _ = await self.ig_account(channel)
        audio_type = data.get("type") if data.get("type") in AUDIO_TYPES else "music"
        query = {"audio_type": audio_type, "user_id": account}
        if isinstance(data.get("q"), str) and data["q"].strip():
            query["search_query"] = data["q"].strip()[:100]
        answer = await self.graph_call(channel, "GET", "ig_audio", self.user_token(channel), "the audio search",
                                       query=query)
        return [self._audio(item) for item in answer.get("audio") or answer.get("data") or []
                if isinstance(item, dict) and item.get("audio_id")]

    @staticmethod
    def _audio(item: dict) -> dict:
        def text(*names: str) -> str:
            return next((item[name] for name in names if isinstance(item.get(name), str) and item[name]), "")
        duration: Optional[int] = item.get("duration_in_ms") if isinstance(item.get("duration_in_ms"), int) else 0
        return {"id": str(item["audio_id"]), "title": text("title"), "artist": text("display_artist", "ig_username"),
                "image": text("cover_artwork_thumbnail_uri", "cover_artwork_thumbnail_url", "profile_picture_url"),
                "duration": duration, "previewUrl": text("download_url")}


PROVIDER = InstagramProvider()
