"""Discord, two ways: a channel webhook (pasted), or Postiz's set-up, the operator's OAuth app and bot.

- Webhook kind (credentials {"webhookUrl"}): each part is one message sent to the webhook with ?wait=true, so
  Discord answers the message; forum channels open a topic; thread parts follow the post (a webhook cannot
  reply). The channel is fixed by the webhook: it lists no `channels` tool and ignores the post's `channel`.
- OAuth kind (DISCORD_CLIENT_ID, DISCORD_CLIENT_SECRET, DISCORD_BOT_TOKEN_ID, Postiz's names): consent with the
  `bot` scope adds the operator's bot to the server the user picks on Discord's page; that server is the
  channel (its id comes back with the token). A post's `channel` setting (listed by the `channels` tool) picks
  the Discord channel, and the bot posts there; thread parts go into a thread opened on the post, as Postiz.
- Delete: webhook messages through the webhook (DELETE .../messages/:id), the bot's through the channel's
  messages endpoint; a message already gone (Unknown Message, 10008) counts as deleted.
"""
from __future__ import annotations

import json
import os
from typing import NamedTuple, Optional
from urllib.parse import urlencode

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply, encode_multipart
from .base import (
    Channel, Connected, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, error_fields,
)
from .markup import markdown_from_html, with_query
from .oauth import AppCredentials, OAuthProvider, Tokens


DISCORD_MESSAGE_LIMIT = 2000
DISCORD_ATTACHMENT_LIMIT = 10
DISCORD_REQUEST_BYTES = 25 * 2**20  # a message's files together, on a server without boosts
DISCORD_THREAD_NAME_LIMIT = 100
DISCORD_BOT_PERMISSIONS = "377957124096"  # Postiz's: send messages, create threads, send messages in threads
DISCORD_POSTABLE_CHANNELS = (0, 5)  # text and announcement channels (a forum takes threads, not messages)
_DISCORD_UNKNOWN_WEBHOOK = 10015
_DISCORD_UNKNOWN_MESSAGE = 10008
_DISCORD_NO_ACCESS = (50001, 50013)  # Missing Access / Missing Permissions: this channel, not the login
_DISCORD_FORUM_NEEDS_THREAD = 220001  # "Webhooks posted to forum channels must have a thread_name or thread_id"


class DiscordApp(NamedTuple):
    """The operator's Discord app (an AppCredentials, plus its bot's token, which posts)."""
    client_id: str
    client_secret: str
    bot_token: str


def is_webhook_channel(credentials: dict) -> bool:
    return "webhookUrl" in credentials


class DiscordProvider(OAuthProvider):
    """A channel's webhook, or a server the operator's bot was added to by OAuth consent (see the module)."""
    identifier = "discord"
    resend_is_safe = False  # neither a webhook nor the bot takes an idempotency key: a second send is a second message
    concurrency = 4
    spacing = 2.0  # Discord allows about 30 messages a minute in one channel
    app_variables = ("DISCORD_CLIENT_ID", "DISCORD_CLIENT_SECRET", "DISCORD_BOT_TOKEN_ID")
    auth_origin = api_origin = "https://discord.com"
    authorize_path = "/oauth2/authorize"
    token_path = "/api/oauth2/token"
    scopes = ("bot", "identify", "guilds")
    pkce = False  # Postiz sends none, and Discord's documented code grant has none
    operator_guide = (
        "Create an application at discord.com/developers/applications. Under OAuth2, copy the client id and "
        "secret into DISCORD_CLIENT_ID and DISCORD_CLIENT_SECRET and add the redirect "
        "{FRONTEND_URL}/integrations/social/discord; under Bot, reset and copy the token into DISCORD_BOT_TOKEN_ID "
        "(the bot posts every message). Consent asks for the bot, identify and guilds scopes and adds the bot "
        "to the server the user picks. No review is needed below 100 servers; past that Discord asks for "
        "verification. Webhook channels keep working without any of this.")

    # --- the operator's app and consent -----------------------------------------------------------------

    def app(self, settings: dict) -> Optional[DiscordApp]:
        client_id, client_secret, bot_token = (settings.get(name, "").strip() for name in self.app_variables)
        return DiscordApp(client_id, client_secret, bot_token) if client_id and client_secret and bot_token else None

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        # integration_type=0: installed to a server (the user picks it on Discord's page), with Postiz's permissions
        query = {"client_id": app.client_id, "permissions": DISCORD_BOT_PERMISSIONS, "response_type": "code",
                 "redirect_uri": redirect_uri, "integration_type": "0", "scope": " ".join(self.scopes),
                 "state": state}
        return f"{self.auth_base()}{self.authorize_path}?{urlencode(query)}"

    def tokens_from(self, reply: HttpReply) -> Tokens:
        """The tokens, and with a code exchange the server the bot joined (`guild`, sent for the bot scope)."""
        tokens = super().tokens_from(reply)
        guild = reply.json().get("guild")
        if isinstance(guild, dict) and guild.get("id"):
            tokens = tokens._replace(extra={"guildId": str(guild["id"]), "guildName": str(guild.get("name") or "")})
        return tokens

    @staticmethod
    def _bot(channel: Channel) -> dict:
        app = channel.app
        if not isinstance(app, DiscordApp):
            raise Rejected("Discord's bot is not configured on this server (DISCORD_BOT_TOKEN_ID): ask the operator")
        return {"Authorization": f"Bot {app.bot_token}"}

    def uses_operator_app(self, credentials: dict) -> bool:
        return not is_webhook_channel(credentials)  # (a webhook channel works without the operator's app)

    def channel_tools(self, tools: list, credentials: dict) -> list:
        """A webhook posts where it was made: it has no channel to pick, so no `channels` tool."""
        return [] if is_webhook_channel(credentials) else tools

    # --- connecting -------------------------------------------------------------------------------------

    async def connect(self, channel: Channel) -> Connected:
        if not is_webhook_channel(channel.credentials):
            return await self._connect_server(channel)
        webhook = await self._webhook(channel)
        avatar = webhook.get("avatar")
        picture = f"https://cdn.discordapp.com/avatars/{webhook['id']}/{avatar}.png" if avatar else None
        account = ChannelAccount(str(webhook["id"]), str(webhook.get("name") or channel.name), None, picture)
        return Connected(account, session=self._where(webhook))

    async def _connect_server(self, channel: Channel) -> Connected:
        """The server the bot was added to, read with the bot's token (which also proves the bot is in it)."""
        guild_id = channel.credentials.get("guildId")
        if not guild_id:
            raise Rejected("Discord's answer named no server: consent again and pick a server to add the bot to")
        reply = await self.send(channel, "GET", f"{self.api_base()}/api/guilds/{guild_id}",
                                what="the server (/guilds/:id)", headers=self._bot(channel))
        guild = reply.json()
        if not isinstance(guild, dict) or not guild.get("id"):
            raise Rejected(f"Discord answered /guilds/{guild_id} with {reply.described('a server')}", reply.status)
        icon = guild.get("icon")
        picture = f"https://cdn.discordapp.com/icons/{guild['id']}/{icon}.png" if icon else None
        name = str(guild.get("name") or channel.credentials.get("guildName") or f"Discord server {guild_id}")
        return Connected(ChannelAccount(str(guild["id"]), name, None, picture))

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

    async def tool_channels(self, channel: Channel, data: dict) -> list:
        """The server's text and announcement channels, as Postiz lists them: [{"id", "name"}]."""
        if is_webhook_channel(channel.credentials):
            raise LookupError("channels")  # (not listed for a webhook channel: see channel_tools)
        reply = await self.send(channel, "GET", f"{self.api_base()}/api/guilds/{channel.credentials['guildId']}/channels",
                                what="the server's channels", headers=self._bot(channel))
        listed = reply.json() if isinstance(reply.json(), list) else []
        return [{"id": str(item["id"]), "name": item.get("name")} for item in listed
                if isinstance(item, dict) and item.get("id") and item.get("type") in DISCORD_POSTABLE_CHANNELS]

    # --- publishing -------------------------------------------------------------------------------------

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        self._check_media(post.media)
        if not is_webhook_channel(channel.credentials):
            return await self._publish_as_bot(channel, post, parent)
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

    async def _publish_as_bot(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        """The bot posts in the post's `channel`; the first thread part opens a thread on the post (once: the
        thread is remembered, so a retry posts into it), later parts go into that thread."""
        target = post.settings.get("channel")
        if not isinstance(target, str) or not target.strip().isdigit():
            raise Rejected("A Discord post needs the channel to post in (the post's \"channel\" setting: an id "
                           "from the channels tool)")
        where = target.strip()
        if parent is not None:
            where = (parent.reply_ref or {}).get("thread_id") or await self._open_thread(channel, post, parent)
        url = f"{self.api_base()}/api/channels/{where}/messages"
        message = await self._execute(channel, url, post, None, self._bot(channel))
        guild = channel.credentials.get("guildId", "@me")
        return Release(str(message["id"]), f"https://discord.com/channels/{guild}/{where}/{message['id']}",
                       {"thread_id": where} if parent is not None else None)

    async def _open_thread(self, channel: Channel, post: OutgoingPost, parent: Release) -> str:
        opened = channel.session.get("discordThreads") or {}
        if parent.id in opened:
            return opened[parent.id]
        parent_channel = parent.url.rstrip("/").split("/")[-2]
        reply = await self.send(channel, "POST", f"{self.api_base()}/api/channels/{parent_channel}/messages/"
                                f"{parent.id}/threads", what="the thread on the post", headers=self._bot(channel),
                                json_body={"name": self._thread_name(post), "auto_archive_duration": 1440})
        thread = reply.json()
        if not isinstance(thread, dict) or not thread.get("id"):
            raise OutcomeUnknown(f"Discord answered the thread with {reply.described('a thread')}", reply.status)
        channel.save_session({**channel.session, "discordThreads": {**opened, parent.id: str(thread["id"])}})
        return str(thread["id"])

    # --- deleting ---------------------------------------------------------------------------------------

    can_delete = True

    async def delete(self, channel: Channel, release: Release) -> None:
        """The message of `release`: through the webhook that sent it, or as the bot; gone already is deleted."""
        message_channel = release.url.rstrip("/").split("/")[-2] if release.url.count("/") >= 6 else ""
        if is_webhook_channel(channel.credentials):
            in_thread = message_channel and message_channel != channel.session.get("channel_id")
            url = with_query(channel.credentials["webhookUrl"].split("?")[0].rstrip("/") + f"/messages/{release.id}",
                             **({"thread_id": message_channel} if in_thread else {}))
            headers: dict = {}
        else:
            url, headers = f"{self.api_base()}/api/channels/{message_channel}/messages/{release.id}", self._bot(channel)
        try:
            await self.send(channel, "DELETE", url, what="the message's deletion", headers=headers)
        except Rejected as refused:
            if self._error_code(refused.body) != _DISCORD_UNKNOWN_MESSAGE:
                raise

    async def _execute(self, channel: Channel, url: str, post: OutgoingPost, thread_name: Optional[str],
                       headers: Optional[dict] = None) -> dict:
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
            request: dict = {"body": body, "headers": {**(headers or {}), "Content-Type": content_type}}
        else:
            request = {"json_body": payload, "headers": headers or {}}
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
            raise Rejected(f"the files of this message add up to {total / 2**20:.1f} MiB; Discord takes "
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
        if reply.status == 403 and isinstance(answer, dict) and answer.get("code") in _DISCORD_NO_ACCESS:
            # The bot may not see or post in that channel: another channel, or the server's roles, fix it
            raise Rejected(f"Discord refused {what}: {self.platform_words(reply)} (the bot needs the View Channel "
                           "and Send Messages permissions in that channel)", reply.status, self.error_excerpt(reply))
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
        return error_fields(answer, "error", "error_description")  # the token endpoint's, OAuth's shape

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
        if is_webhook_channel(channel.credentials):
            return f"the Discord channel of the webhook \"{channel.name}\""
        return f"the post's channel in the Discord server \"{channel.name}\""


PROVIDER = DiscordProvider()
