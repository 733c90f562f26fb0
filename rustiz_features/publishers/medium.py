"""Medium, with an integration token pasted by the user: stories from Postiz HTML as Markdown.

Medium stopped issuing integration tokens (its API is no longer offered to new users): only an account that
made one before keeps working, which is who this provider is for. As in Postiz, a story goes to the user's
profile as public, or to a publication (the `publication` setting, listed by the `publications` tool) as a
draft that the publication's editors publish. Medium's API has no delete, no comments and no figures.
"""
from __future__ import annotations

from typing import Optional
from urllib.parse import quote

from ..catalogue import ChannelAccount, url_host
from ..http_client import HttpReply, platform_url
from .articles import canonical_url, html_to_markdown, markdown_media
from .base import Channel, Connected, OutcomeUnknown, OutgoingPost, Provider, Rejected, Release


class MediumProvider(Provider):
    identifier = "medium"
    threads = False
    concurrency = 3  # Postiz's maxConcurrentJob
    spacing = 2.0

    @staticmethod
    def _base() -> str:
        return platform_url("RUSTIZ_MEDIUM_API_URL", "https://api.medium.com")

    @staticmethod
    def _headers(channel: Channel) -> dict:
        return {"Authorization": f"Bearer {channel.credentials['apiKey'].strip()}", "Accept": "application/json"}

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """Medium's {"errors": [{"message", "code"}]}."""
        answer = reply.json()
        errors = answer.get("errors") if isinstance(answer, dict) else None
        if not isinstance(errors, list):
            return None
        return "; ".join(f"{error['message']} (code {error.get('code')})" for error in errors
                         if isinstance(error, dict) and isinstance(error.get("message"), str)) or None

    async def _me(self, channel: Channel) -> dict:
        reply = await self.send(channel, "GET", self._base() + "/v1/me", what="the account check (/v1/me)",
                                headers=self._headers(channel))
        me = reply.json().get("data") if isinstance(reply.json(), dict) else None
        if not isinstance(me, dict) or not isinstance(me.get("id"), str) or not me["id"]:
            raise Rejected(f"Medium answered the account check with {reply.described('a Medium user')}", reply.status)
        return me

    async def connect(self, channel: Channel) -> Connected:
        me = await self._me(channel)
        name = me.get("name") or me.get("username") or channel.name
        return Connected(ChannelAccount(f"{url_host(self._base())}/{me['id']}", name, me.get("username"),
                                        me.get("imageUrl") or None))

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        settings = post.settings
        # Medium has no cover field: every picture goes into the story, where Medium fetches it from its address.
        story = {"title": settings.get("title") or "", "contentFormat": "markdown",
                 "content": html_to_markdown(post.html) + markdown_media(list(post.media))}
        if canonical_url(settings):
            story["canonicalUrl"] = canonical_url(settings)
        tags = settings.get("tags") if isinstance(settings.get("tags"), list) else []
        labels = [str(tag.get("value") or tag.get("label") or "") if isinstance(tag, dict) else str(tag)
                  for tag in tags]
        if any(labels):
            story["tags"] = [label for label in labels if label]  # Medium keeps the first three
        publication = settings.get("publication") if isinstance(settings.get("publication"), str) else ""
        story["publishStatus"] = "draft" if publication else "public"
        if publication:
            url = f"{self._base()}/v1/publications/{quote(publication, safe='')}/posts"
        else:
            url = f"{self._base()}/v1/users/{quote(await self._author(channel), safe='')}/posts"
        reply = await self.send(channel, "POST", url, visible=True, what="the story", json_body=story,
                                headers=self._headers(channel))
        data = reply.json().get("data") if isinstance(reply.json(), dict) else None
        if not isinstance(data, dict) or not data.get("id"):
            raise OutcomeUnknown(f"Medium answered the story without its id: {reply.described('a Medium post')}",
                                 reply.status)
        return Release(str(data["id"]), data.get("url") or "")

    async def _author(self, channel: Channel) -> str:
        """The user's id, read once and kept in the channel's session."""
        if not channel.session.get("authorId"):
            channel.save_session({**channel.session, "authorId": (await self._me(channel))["id"]})
        return channel.session["authorId"]

    def where_to_check(self, channel: Channel) -> str:
        return f"the stories (and drafts) of the Medium account of the channel \"{channel.name}\""

    async def tool_publications(self, channel: Channel, data: dict) -> list:
        """The publications the user belongs to, as Medium lists them ([{id, name, description, url, imageUrl}])."""
        reply = await self.send(channel, "GET", f"{self._base()}/v1/users/{quote(await self._author(channel), safe='')}"
                                "/publications", what="the publications", headers=self._headers(channel))
        items = reply.json().get("data") if isinstance(reply.json(), dict) else None
        return [item for item in items or [] if isinstance(item, dict)] if isinstance(items, list) else []


PROVIDER = MediumProvider()
