"""Hashnode (GraphQL): articles from Postiz HTML as Markdown, in the user's publication.
"""
from __future__ import annotations

import json
import re
from typing import Optional

from ..catalogue import ChannelAccount, url_host
from ..http_client import HttpReply, platform_url
from .articles import article_cover, canonical_url, html_to_markdown, markdown_media
from .base import (
    Channel, Connected, NeedsReconnect, OutcomeUnknown, OutgoingPost, Provider, Rejected, Release, Retryable,
    retry_after_seconds,
)


_HASHNODE_ME = "query Me { me { id username name profilePicture publications(first: 20) { edges { node { id title url } } } } }"
_HASHNODE_PUBLISH = "mutation PublishPost($input: PublishPostInput!) { publishPost(input: $input) { post { id url } } }"
_HASHNODE_REMOVE = "mutation RemovePost($input: RemovePostInput!) { removePost(input: $input) { post { id } } }"
_HASHNODE_TAGS = ("query PublicationTags($id: ObjectId!) { publication(id: $id) { id posts(first: 50) { edges { node "
                  "{ id tags { id name slug } } } } } }")


def _hashnode_tag(tag: dict) -> dict:
    """A Hashnode tag input: its id when the value is one (24 hex digits), else the slug and name of a new tag."""
    value, label = str(tag.get("value") or "").strip(), str(tag.get("label") or tag.get("value") or "").strip()
    if re.fullmatch(r"[0-9a-f]{24}", value):
        return {"id": value}
    return {"slug": re.sub(r"[^a-z0-9]+", "-", (value or label).lower()).strip("-"), "name": label}


class HashnodeProvider(Provider):
    """Hashnode's GraphQL API with a personal access token: publishPost to one of the account's publications."""
    identifier = "hashnode"
    threads = False
    concurrency = 2
    spacing = 2.0
    media_settings = ("main_image",)  # the cover, which the platform downloads from its URL
    can_delete = True  # the removePost mutation

    @staticmethod
    def _base() -> str:
        return platform_url("RUSTIZ_HASHNODE_API_URL", "https://gql.hashnode.com")

    async def _graphql(self, channel: Channel, query: str, variables: dict, visible: bool = False,
                       what: str = "") -> dict:
        reply = await self.send(channel, "POST", self._base(), visible=visible, what=what,
                                json_body={"query": query, "variables": variables},
                                headers={"Authorization": channel.credentials["apiKey"].strip()})
        return reply.json().get("data") or {}

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """GraphQL errors come with HTTP 200: {"errors": [{"message", "extensions": {"code"}}], "data": ...}."""
        body = reply.json()
        errors = body.get("errors") if isinstance(body, dict) else None
        if not (200 <= reply.status < 300) or not isinstance(errors, list) or not errors:
            reply = super().check_reply(reply, visible, what)
            if not isinstance(body, dict):  # a proxy's page, say: whether a mutation ran behind it is unknown
                raise (OutcomeUnknown if visible else Retryable)(
                    f"Hashnode answered {what} with {reply.described('GraphQL JSON')}", reply.status)
            return reply
        data = body.get("data")
        if isinstance(data, dict) and data and all(value is not None for value in data.values()):
            return reply  # errors on optional fields only: what was asked for is there
        first = errors[0] if isinstance(errors[0], dict) else {}
        code = str((first.get("extensions") or {}).get("code") or "")[:100]
        text = f"Hashnode refused {what} ({code or 'GraphQL error'}): {self.platform_words(reply)}"
        excerpt = self.error_excerpt(reply)
        if code == "UNAUTHENTICATED":
            raise NeedsReconnect(text, reply.status, excerpt)
        if code in ("TOO_MANY_REQUESTS", "RATE_LIMITED"):
            raise Retryable(text, reply.status, excerpt, after=retry_after_seconds(reply))
        if code == "INTERNAL_SERVER_ERROR":
            raise (OutcomeUnknown if visible else Retryable)(text, reply.status, excerpt)
        raise Rejected(text, reply.status, excerpt)

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """GraphQL's {"errors": [{"message": ...}]}."""
        answer = reply.json()
        errors = answer.get("errors") if isinstance(answer, dict) else None
        if not isinstance(errors, list):
            return None
        return "; ".join(error["message"] for error in errors
                         if isinstance(error, dict) and isinstance(error.get("message"), str)) or None

    async def connect(self, channel: Channel) -> Connected:
        me = (await self._graphql(channel, _HASHNODE_ME, {}, what="the account check (me)")).get("me")
        if not isinstance(me, dict) or not me.get("id"):
            raise Rejected("Hashnode answered the account check without an account: the token may be wrong")
        account = ChannelAccount(f"{url_host(self._base())}/{me['id']}", me.get("name") or me.get("username") or
                                 channel.name, me.get("username"), me.get("profilePicture"))
        return Connected(account)

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        settings = post.settings
        cover, body_media = article_cover(post)
        tags = settings.get("tags") if isinstance(settings.get("tags"), list) else []
        article = {"title": settings.get("title") or "", "publicationId": settings.get("publication") or "",
                   "contentMarkdown": html_to_markdown(post.html) + markdown_media(body_media),
                   "tags": [_hashnode_tag(tag) for tag in tags if isinstance(tag, dict)]}
        if settings.get("subtitle"):
            article["subtitle"] = settings["subtitle"]
        if cover:
            article["coverImageOptions"] = {"coverImageURL": cover}
        if canonical_url(settings):
            article["originalArticleURL"] = canonical_url(settings)
        data = await self._graphql(channel, _HASHNODE_PUBLISH, {"input": article}, visible=True, what="the post")
        published = ((data.get("publishPost") or {}).get("post") or {})
        if not published.get("id"):
            raise OutcomeUnknown(f"Hashnode answered publishPost without the post: {json.dumps(data)[:300]}")
        return Release(str(published["id"]), published.get("url") or "")

    def where_to_check(self, channel: Channel) -> str:
        return f"the Hashnode blog of the channel \"{channel.name}\" (its publication's posts)"

    async def delete(self, channel: Channel, release: Release) -> None:
        """removePost; a post Hashnode no longer has answers NOT_FOUND, which is what a deletion wants."""
        try:
            await self._graphql(channel, _HASHNODE_REMOVE, {"input": {"id": release.id}}, what="the deletion")
        except Rejected as refused:
            if "(NOT_FOUND)" not in refused.message:
                raise

    async def _publications(self, channel: Channel) -> list:
        me = (await self._graphql(channel, _HASHNODE_ME, {}, what="the publications")).get("me") or {}
        return [edge["node"] for edge in (me.get("publications") or {}).get("edges") or []
                if isinstance(edge, dict) and isinstance(edge.get("node"), dict)]

    async def tool_publications(self, channel: Channel, data: dict) -> list:
        return [{"id": node.get("id"), "name": node.get("title"), "url": node.get("url")}
                for node in await self._publications(channel)]

    async def tool_tagsList(self, channel: Channel, data: dict) -> list:
        """Hashnode's API has no list of all tags: the tags of the latest posts of the account's publications."""
        tags: dict = {}
        for publication in await self._publications(channel):
            found = await self._graphql(channel, _HASHNODE_TAGS, {"id": publication["id"]}, what="the tags")
            for edge in ((found.get("publication") or {}).get("posts") or {}).get("edges") or []:
                for tag in (edge.get("node") or {}).get("tags") or []:
                    tags.setdefault(tag.get("id"), {"value": tag.get("id"), "label": tag.get("name")})
        return sorted(tags.values(), key=lambda tag: str(tag["label"]).lower())


PROVIDER = HashnodeProvider()
