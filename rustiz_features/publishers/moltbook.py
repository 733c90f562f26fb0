"""Moltbook (the social network of AI agents), with an agent's API key pasted by the user.

As in Postiz: a post goes to a submolt (the `submolt` setting, "general" when empty) with the text's first
100 characters as its title and the whole text as its content; thread parts are comments, each answering the
one before. Moltbook has no media upload: a post's pictures go as their addresses at the end of the content.
Errors are {"success": false, "error", "hint"}; 429 answers carry Retry-After (one post per 30 minutes, one
comment per 20 seconds). A post Moltbook holds behind a verification challenge (its "reverse captcha") is
not published, and rustiz says so rather than answering it.
"""
from __future__ import annotations

from typing import Any, Optional
from urllib.parse import quote

from ..catalogue import ChannelAccount, url_host
from ..http_client import HttpReply, platform_url
from .base import Channel, Connected, OutcomeUnknown, OutgoingPost, Provider, Rejected, Release, error_fields

MOLTBOOK_TITLE_LIMIT = 100  # Postiz's cut of the text for the title


class MoltbookProvider(Provider):
    identifier = "moltbook"
    concurrency = 2
    spacing = 1.0
    can_delete = True

    @staticmethod
    def _base() -> str:
        return platform_url("RUSTIZ_MOLTBOOK_API_URL", "https://www.moltbook.com")

    @staticmethod
    def _headers(channel: Channel) -> dict:
        return {"Authorization": f"Bearer {channel.credentials['apiKey'].strip()}", "Accept": "application/json"}

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "error", "hint")

    def _answer(self, reply: HttpReply, key: str, what: str) -> dict:
        """The answer's `key` object ({"success": true, "<key>": {...}}); a held post is refused in Moltbook's words."""
        answer: Any = reply.json()
        answer = answer if isinstance(answer, dict) else {}
        item = answer.get(key) if isinstance(answer.get(key), dict) else answer.get("data")
        if isinstance(item, dict) and item.get("verification_code") and not item.get("id"):
            raise Rejected(f"Moltbook holds {what} behind a verification challenge, which rustiz does not answer: "
                           "publish it from the agent itself")
        if not isinstance(item, dict) or item.get("id") in (None, ""):
            raise OutcomeUnknown(f"Moltbook answered {what} without its id: {reply.described('a Moltbook ' + key)}",
                                 reply.status)
        return item

    async def connect(self, channel: Channel) -> Connected:
        reply = await self.send(channel, "GET", self._base() + "/api/v1/agents/me", what="the agent (agents/me)",
                                headers=self._headers(channel))
        answer = reply.json() if isinstance(reply.json(), dict) else {}
        agent = answer.get("agent") if isinstance(answer.get("agent"), dict) else {}
        name = agent.get("name") if isinstance(agent.get("name"), str) else ""
        if not name:
            raise Rejected(f"Moltbook answered agents/me with {reply.described('an agent with a name')}", reply.status)
        return Connected(ChannelAccount(f"{url_host(self._base())}/{name}", agent.get("display_name") or name, name,
                                        agent.get("avatar_url") or None))

    def _content(self, post: OutgoingPost) -> str:
        return "\n\n".join([post.text] + [media.url for media in post.media])

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        if parent is None:
            submolt = post.settings.get("submolt") if isinstance(post.settings.get("submolt"), str) else ""
            body = {"submolt": submolt.strip() or "general", "title": post.text[:MOLTBOOK_TITLE_LIMIT],
                    "content": self._content(post)}
            reply = await self.send(channel, "POST", self._base() + "/api/v1/posts", visible=True, what="the post",
                                    json_body=body, headers=self._headers(channel))
            post_id = str(self._answer(reply, "post", "the post")["id"])
            return Release(post_id, f"{self._base()}/post/{post_id}", {"post": post_id})
        root = parent.reply_ref.get("post") if isinstance(parent.reply_ref, dict) else None
        if not root:
            raise Rejected("the post this comment answers has no Moltbook post id")
        body = {"content": self._content(post)}
        if parent.id != root:
            body["parent_id"] = parent.id
        reply = await self.send(channel, "POST", f"{self._base()}/api/v1/posts/{quote(root, safe='')}/comments",
                                visible=True, what="the comment", json_body=body, headers=self._headers(channel))
        comment_id = str(self._answer(reply, "comment", "the comment")["id"])
        return Release(comment_id, f"{self._base()}/post/{root}#comment-{comment_id}", {"post": root})

    async def delete(self, channel: Channel, release: Release) -> None:
        """DELETE /api/v1/posts/:id; a comment cannot be deleted through the API (none is documented)."""
        if "#comment-" in (release.url or ""):
            raise Rejected("Moltbook's API documents no way to delete a comment")
        try:
            await self.send(channel, "DELETE", f"{self._base()}/api/v1/posts/{quote(release.id, safe='')}",
                            what="the deletion", headers=self._headers(channel))
        except Rejected as refused:
            if refused.status != 404:  # already gone
                raise

    def where_to_check(self, channel: Channel) -> str:
        return f"the Moltbook profile of the agent of the channel \"{channel.name}\""


PROVIDER = MoltbookProvider()
