"""Discord, through a channel webhook: Postiz HTML as Discord's markdown, attachments, forum threads.
"""
from __future__ import annotations

import json
import os
from typing import Optional

from ..catalogue import ChannelAccount
from ..http_client import HttpReply, encode_multipart
from .base import (
    Channel, Connected, NeedsReconnect, OutcomeUnknown, OutgoingPost, Provider, Rejected, Release, error_fields,
)
from .markup import markdown_from_html, with_query


DISCORD_MESSAGE_LIMIT = 2000
DISCORD_ATTACHMENT_LIMIT = 10
DISCORD_REQUEST_BYTES = 25 * 2**20  # a message's files together, on a server without boosts
DISCORD_THREAD_NAME_LIMIT = 100
_DISCORD_UNKNOWN_WEBHOOK = 10015
_DISCORD_FORUM_NEEDS_THREAD = 220001  # "Webhooks posted to forum channels must have a thread_name or thread_id"


class DiscordProvider(Provider):
    """A channel's webhook (Server Settings > Integrations > Webhooks): no bot, no developer app.

    Each part is one message, sent with ?wait=true so Discord answers the message (its id) instead of 204."""
    identifier = "discord"
    resend_is_safe = False  # webhooks take no idempotency key: a second send is a second message
    concurrency = 4
    spacing = 2.0  # Discord allows about 30 messages a minute in one channel

    async def connect(self, channel: Channel) -> Connected:
        webhook = await self._webhook(channel)
        avatar = webhook.get("avatar")
        picture = f"https://cdn.discordapp.com/avatars/{webhook['id']}/{avatar}.png" if avatar else None
        account = ChannelAccount(str(webhook["id"]), str(webhook.get("name") or channel.name), None, picture)
        return Connected(account, session=self._where(webhook))

    async def _webhook(self, channel: Channel) -> dict:
        """The webhook object Discord answers a GET of its URL with: id, name, avatar, channel_id, guild_id."""
        reply = await self.send(channel, "GET", channel.credentials["webhookUrl"], what="the webhook")
        webhook = reply.json()
        if not isinstance(webhook, dict) or not webhook.get("id"):
            raise Rejected(f"this URL did not answer like a Discord webhook (expected its id, name and channel; "
                           f"got {reply.described('a Discord webhook')}); copy the URL again from the channel's "
                           "Integrations > Webhooks")
        return webhook

    @staticmethod
    def _where(webhook: dict) -> dict:
        """What a release URL needs and the webhook object alone tells: its server and channel."""
        return {"guild_id": str(webhook.get("guild_id") or ""), "channel_id": str(webhook.get("channel_id") or "")}

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        self._check_media(post.media)
        # A webhook cannot reply to a message (execute takes no message_reference), so thread parts are
        # follow-up messages: in the channel, right after the post, or in the post's thread when the post
        # opened one (a forum channel) or the webhook URL names one (?thread_id=); a follow-up there stays
        # with the post instead of landing in the forum as a new topic.
        thread = parent.reply_ref.get("thread_id") if parent and isinstance(parent.reply_ref, dict) else None
        url = with_query(channel.credentials["webhookUrl"], wait="true", **({"thread_id": thread} if thread else {}))
        thread_name = None
        if channel.session.get("forum") and not thread:
            thread_name = self._thread_name(post)
        try:
            message = await self._execute(channel, url, post, thread_name)
        except Rejected as refused:
            if thread_name or thread or self._error_code(refused.body) != _DISCORD_FORUM_NEEDS_THREAD:
                raise
            # A forum channel's webhook must open a topic: nothing was posted, so send it again as one,
            # and remember the channel is a forum.
            channel.save_session({**channel.session, "forum": True})
            message = await self._execute(channel, url, post, self._thread_name(post))
        return self._release(channel, message)

    async def _execute(self, channel: Channel, url: str, post: OutgoingPost, thread_name: Optional[str]) -> dict:
        payload: dict = {"content": markdown_from_html(post.html, "discord")}
        if thread_name:
            payload["thread_name"] = thread_name
        if post.media:
            payload["attachments"] = [{"id": index, "filename": media.name, "description": media.alt[:1024]}
                                      for index, media in enumerate(post.media)]
            fields = [("payload_json", json.dumps(payload, ensure_ascii=False))]
            fields += [(f"files[{index}]", (media.name, media.read(), media.content_type))
                       for index, media in enumerate(post.media)]
            body, content_type = encode_multipart(fields)
            request: dict = {"body": body, "headers": {"Content-Type": content_type}}
        else:
            request = {"json_body": payload}
        reply = await self.send(channel, "POST", url, visible=True, what="the message", **request)
        message = reply.json()
        if not isinstance(message, dict) or not message.get("id"):
            raise OutcomeUnknown(f"Discord answered without the message it made ({reply.described('a message')})",
                                 reply.status)
        return message

    @staticmethod
    def _thread_name(post: OutgoingPost) -> str:
        first_line = next((line.strip() for line in post.text.splitlines() if line.strip()), "")
        return first_line[:DISCORD_THREAD_NAME_LIMIT] or (post.media[0].name if post.media else "Post")

    @staticmethod
    def _release(channel: Channel, message: dict) -> Release:
        channel_id = str(message.get("channel_id") or channel.session.get("channel_id", ""))
        guild = channel.session.get("guild_id") or "@me"
        in_thread = channel_id != channel.session.get("channel_id")
        return Release(str(message["id"]), f"https://discord.com/channels/{guild}/{channel_id}/{message['id']}",
                       {"thread_id": channel_id} if in_thread else None)

    @staticmethod
    def _check_media(media: tuple) -> None:
        total = sum(os.path.getsize(item.path) for item in media)
        if total > DISCORD_REQUEST_BYTES:
            raise Rejected(f"the files of this message add up to {total / 2**20:.1f} MiB; a Discord webhook takes "
                           f"at most {DISCORD_REQUEST_BYTES // 2**20} MiB per message on a server without boosts: "
                           "send smaller or fewer files")

    @staticmethod
    def _error_code(body: str) -> Optional[int]:
        try:
            answer = json.loads(body)
        except ValueError:
            return None
        return answer.get("code") if isinstance(answer, dict) else None

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        answer = reply.json()
        if reply.status == 404 and isinstance(answer, dict) and answer.get("code") == _DISCORD_UNKNOWN_WEBHOOK:
            raise NeedsReconnect("Discord says this webhook no longer exists (Unknown Webhook, code 10015): it was "
                                 "deleted or its channel was; make a new webhook in the channel's Integrations "
                                 "settings", reply.status, self.error_excerpt(reply))
        if reply.status in (400, 413) and isinstance(answer, dict) and answer.get("errors"):
            # "Invalid Form Body" alone says nothing: the errors object names the field and the rule
            detail = json.dumps(answer["errors"], ensure_ascii=False)[:400]
            raise Rejected(f"Discord refused {what} (HTTP {reply.status}): {answer.get('message')} "
                           f"(code {answer.get('code')}): {detail}", reply.status, self.error_excerpt(reply))
        return super().check_reply(reply, visible, what)

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """Discord's errors are {"message", "code"} (a rate limit: {"message", "retry_after"})."""
        answer = reply.json()
        if isinstance(answer, dict) and ("code" in answer or "retry_after" in answer):
            return error_fields(answer, "message")
        return None

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        for number, value in enumerate(values, 1):
            where = "the post" if number == 1 else f"thread part {number}"
            length = len(markdown_from_html(value["content"], "discord"))
            if length > DISCORD_MESSAGE_LIMIT:
                return (f"Discord allows {DISCORD_MESSAGE_LIMIT:,} characters in a message; {where} has {length:,} "
                        "(counted as Discord markdown, with links written out)")
            if len(value["image"]) > DISCORD_ATTACHMENT_LIMIT:
                return (f"Discord allows {DISCORD_ATTACHMENT_LIMIT} files in a message; {where} has "
                        f"{len(value['image'])}")
        return None

    def where_to_check(self, channel: Channel) -> str:
        return f"the Discord channel of the webhook \"{channel.name}\""


PROVIDER = DiscordProvider()
