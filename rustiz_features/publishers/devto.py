"""Dev.to (Forem API): articles from Postiz HTML as Markdown, with tags, cover image and canonical URL.
"""
from __future__ import annotations

import re
from typing import Optional

from ..catalogue import ChannelAccount, url_host
from ..http_client import HttpReply, platform_url
from .articles import article_cover, canonical_url, html_to_markdown, markdown_media, whole_number
from .base import Channel, Connected, OutcomeUnknown, OutgoingPost, Provider, Rejected, Release, error_fields


_DEVTO_TAG = r"[a-z0-9]+"


def _devto_tags(settings: dict) -> list:
    """The tag names of Dev.to settings ([{value, label}]), lower-cased as Dev.to keeps them."""
    tags = settings.get("tags") if isinstance(settings.get("tags"), list) else []
    return [str(tag.get("label") or "").strip().lower() for tag in tags if isinstance(tag, dict)]


class DevtoProvider(Provider):
    """Dev.to (Forem) articles with an API key: title, Markdown body, tags, canonical URL, cover image."""
    identifier = "devto"
    threads = False
    concurrency = 2
    spacing = 3.0  # Dev.to lets an account create about 10 articles per 30 seconds
    media_settings = ("main_image",)  # the cover, which the platform downloads from its URL

    @staticmethod
    def _base() -> str:
        return platform_url("RUSTIZ_DEVTO_API_URL", "https://dev.to")

    @staticmethod
    def _headers(channel: Channel) -> dict:
        return {"api-key": channel.credentials["apiKey"].strip(), "Accept": "application/vnd.forem.api-v1+json"}

    async def connect(self, channel: Channel) -> Connected:
        reply = await self.send(channel, "GET", self._base() + "/api/users/me", what="the account check (users/me)",
                                headers=self._headers(channel))
        me = reply.json()
        if not (isinstance(me, dict) and "id" in me):
            raise Rejected(f"Dev.to answered the account check with {reply.described('a Dev.to account')}",
                           reply.status)
        account = ChannelAccount(f"{url_host(self._base())}/{me['id']}", me.get("name") or me.get("username") or
                                 channel.name, me.get("username"), me.get("profile_image"))
        return Connected(account)

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        settings = post.settings
        cover, body_media = article_cover(post)
        article = {"title": settings.get("title") or "", "published": True,
                   "body_markdown": html_to_markdown(post.html) + markdown_media(body_media)}
        tags = _devto_tags(settings)
        if tags:
            article["tags"] = tags
        if cover:
            article["main_image"] = cover
        if canonical_url(settings):
            article["canonical_url"] = canonical_url(settings)
        if whole_number(settings.get("organization")) is not None:
            article["organization_id"] = whole_number(settings.get("organization"))
        reply = await self.send(channel, "POST", self._base() + "/api/articles", visible=True, what="the article",
                                json_body={"article": article}, headers=self._headers(channel))
        answer = reply.json()
        answer = answer if isinstance(answer, dict) else {}
        if "id" not in answer:
            raise OutcomeUnknown(f"Dev.to answered the article without its id: "
                                 f"{reply.described('a Dev.to article')}", reply.status)
        return Release(str(answer["id"]), answer.get("url") or "")

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        for number, tag in enumerate(_devto_tags(settings), 1):
            if not re.fullmatch(_DEVTO_TAG, tag):
                return (f"Dev.to tags are letters and digits only (no spaces, dashes or other signs): tag {number}, "
                        f"\"{tag}\", is not; use a tag from the \"tags\" tool, like \"javascript\"")
        organization = settings.get("organization")
        if organization not in (None, "") and whole_number(organization) is None:
            return (f"settings.organization must be the numeric id of a Dev.to organization (from the "
                    f"\"organizations\" tool), not {organization!r}")
        return None

    def where_to_check(self, channel: Channel) -> str:
        return f"the dashboard of the Dev.to account of the channel \"{channel.name}\" ({self._base()}/dashboard)"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "error")  # {"error": "unauthorized", "status": 401}

    async def tool_tags(self, channel: Channel, data: dict) -> list:
        reply = await self.send(channel, "GET", self._base() + "/api/tags?per_page=1000",
                                headers=self._headers(channel))
        return [{"value": tag["id"], "label": tag.get("name", "")} for tag in reply.json() or []
                if isinstance(tag, dict) and "id" in tag]

    async def tool_organizations(self, channel: Channel, data: dict) -> list:
        """Dev.to has no "my organizations" call: the organizations of the account's articles, then each one's id."""
        reply = await self.send(channel, "GET", self._base() + "/api/articles/me/all?per_page=1000",
                                headers=self._headers(channel))
        usernames = []
        for article in reply.json() or []:
            organization = article.get("organization") if isinstance(article, dict) else None
            if isinstance(organization, dict) and organization.get("username") not in usernames:
                usernames.append(organization.get("username"))
        organizations = []
        for username in filter(None, usernames):
            details = (await self.send(channel, "GET", f"{self._base()}/api/organizations/{username}",
                                       headers=self._headers(channel))).json() or {}
            organizations.append({"id": str(details.get("id", "")), "name": details.get("name") or username,
                                  "username": username})
        return organizations


PROVIDER = DevtoProvider()
