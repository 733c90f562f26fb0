"""Telegram, through the user's own bot: messages, photos and media groups in a channel or group, with
Telegram's HTML parse mode; replies as threads.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Optional

from ..catalogue import ChannelAccount
from ..http_client import ERROR_WORDS_LIMIT, HttpReply, Timeouts, encode_multipart, platform_url
from ..text import telegram_html
from .base import (
    Channel, Connected, NeedsReconnect, OutcomeUnknown, OutgoingPost, Provider, PublishError, Rejected, Release,
    Retryable, error_fields,
)



TELEGRAM_CAPTION_LIMIT = 1024  # characters of a photo's or video's caption
TELEGRAM_MEDIA_GROUP_SIZE = 10  # items of one album (sendMediaGroup)
TELEGRAM_PHOTO_BYTES = 10 * 1024 * 1024
TELEGRAM_FILE_BYTES = 50 * 1024 * 1024  # what a bot may upload
# 400 answers that no post can get past: the chat or the bot's place in it is gone, so the channel
# must be connected again (connecting checks the bot can post there) rather than each post failing alike.
_TELEGRAM_CHAT_GONE = (r"(?i)chat not found|not enough rights|have no rights|need administrator rights|"
                       r"bot is not a member|upgraded to a supergroup|CHAT_WRITE_FORBIDDEN|"
                       r"CHAT_ADMIN_REQUIRED|CHAT_RESTRICTED")


def telegram_message_url(message: dict) -> str:
    """The t.me link of a message: public chats by username, private supergroups and channels by id."""
    chat = message.get("chat") if isinstance(message.get("chat"), dict) else {}
    if chat.get("username"):
        return f"https://t.me/{chat['username']}/{message['message_id']}"
    chat_id = str(chat.get("id", ""))
    if chat_id.startswith("-100"):
        return f"https://t.me/c/{chat_id[4:]}/{message['message_id']}"
    return ""  # a basic group or a private chat: Telegram has no link to its messages


class TelegramProvider(Provider):
    """The user's own bot (from @BotFather), posting to a channel, group or chat it may write in.

    Text goes out with sendMessage; one photo, video or GIF with its caption; 2 to 10 media as an album
    (sendMediaGroup), larger sets as several albums. Telegram has no idempotency key: an attempt whose
    answer was lost is not sent again. Every answer is {"ok": ...}; ok:false is an error whatever the status."""
    identifier = "telegram"
    resend_is_safe = False
    concurrency = 10
    spacing = 1.1  # Telegram allows about one message a second in a chat

    async def call(self, channel: Channel, method: str, what: str, visible: bool = False, **request: Any) -> Any:
        """A Bot API method's `result`; the token (part of the URL) never appears in an error."""
        token = channel.credentials["botToken"].strip()
        url = f"{platform_url('RUSTIZ_TELEGRAM_API_URL', 'https://api.telegram.org')}/bot{token}/{method}"
        try:
            reply = await self.send(channel, "POST", url, visible=visible, what=what, **request)
        except PublishError as error:
            error.message, error.body = error.message.replace(token, "<bot token>"), error.body.replace(token, "")
            raise
        return reply.json()["result"]

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        answer = reply.json()
        if not isinstance(answer, dict) or "ok" not in answer:  # a proxy's page, not the Bot API
            super().check_reply(reply, visible, what)
            problem = f"Telegram answered {what} with {reply.described('a Bot API answer')}"
            raise OutcomeUnknown(problem, reply.status) if visible else Retryable(problem, reply.status)
        if answer["ok"] is True and 200 <= reply.status < 300 and "result" in answer:
            return reply
        description = str(answer.get("description") or "ok:false without a description")[:ERROR_WORDS_LIMIT]
        code = answer.get("error_code") if isinstance(answer.get("error_code"), int) else reply.status
        body = self.error_excerpt(reply)
        if code == 401:
            raise NeedsReconnect(f"Telegram refused the bot token (HTTP 401, {description}): it is mistyped, or was "
                                 "revoked or replaced in @BotFather; paste the bot's current token", 401, body)
        if code == 403 or (code == 400 and re.search(_TELEGRAM_CHAT_GONE, description)):
            new_chat = (answer.get("parameters") or {}).get("migrate_to_chat_id")
            hint = (f"; the group is now the supergroup {new_chat}: use that as the chatId" if new_chat else
                    "; check the bot is still in the chat with the right to post")
            raise NeedsReconnect(f"Telegram refused {what} (HTTP {code}): {description}{hint}", code, body)
        if 200 <= reply.status < 300:  # ok:false in a 200 answer: still a refusal
            raise Rejected(f"Telegram refused {what}: {description}", code, body)
        return super().check_reply(reply, visible, what)

    async def connect(self, channel: Channel) -> Connected:
        chat_id = channel.credentials["chatId"]
        bot = await self.call(channel, "getMe", "the bot token check (getMe)")
        chat = await self.call(channel, "getChat", f"the chat {chat_id} (getChat)", json_body={"chat_id": chat_id})
        if chat.get("type") != "private":  # in a private chat the user talks to the bot: it may always answer
            member = await self.call(channel, "getChatMember", "the bot's rights in the chat (getChatMember)",
                                      json_body={"chat_id": chat_id, "user_id": bot["id"]})
            problem = self._posting_problem(chat, member, bot)
            if problem:
                raise Rejected(problem)
        name = chat.get("title") or " ".join(filter(None, (chat.get("first_name"), chat.get("last_name")))) \
            or f"Telegram {chat_id}"
        # No picture: a chat photo's URL would contain the bot token.
        return Connected(ChannelAccount(f"{bot['id']}/{chat['id']}", name, chat.get("username")))

    @staticmethod
    def _posting_problem(chat: dict, member: dict, bot: dict) -> Optional[str]:
        """Why the bot cannot post in the chat (None when it can): channels need an admin with Post Messages."""
        status, bot_name, title = member.get("status"), f"@{bot.get('username')}", chat.get("title") or chat.get("id")
        if chat.get("type") == "channel":
            if status == "creator" or (status == "administrator" and member.get("can_post_messages")):
                return None
            return (f"the bot {bot_name} is {status} in the channel \"{title}\", and only an administrator with "
                    f"the \"Post Messages\" right can post there: in the channel, open Administrators → Add "
                    f"Admin → {bot_name}, turn on \"Post Messages\", then connect again")
        if status in ("creator", "administrator", "member") or (
                status == "restricted" and member.get("is_member") and member.get("can_send_messages")):
            return None
        return (f"the bot {bot_name} is {status} in the group \"{title}\" and cannot send messages there: "
                f"add it to the group (or lift its restrictions), then connect again")

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        for number, value in enumerate(values, 1):
            where = f"thread part {number}" if len(values) > 1 else "the post"
            length, limit = self.measured(channel, value["content"])  # UTF-16 code units, 4,096 a message
            if value["image"] and length > TELEGRAM_CAPTION_LIMIT:
                return (f"{where} has images or videos, so its text is their caption, and it is {length} characters "
                        f"long; Telegram allows {TELEGRAM_CAPTION_LIMIT:,} in a caption ({limit:,} "
                        "without media): shorten it, or put the media in a thread part of their own")
            if length > limit:
                return (f"{where} is {length} characters long as Telegram counts them (an emoji is 2), and "
                        f"Telegram allows {limit:,} in a message")
        return None

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        text = telegram_html(post.html)
        target: dict = {"chat_id": channel.credentials["chatId"]}
        if parent is not None:
            target["reply_parameters"] = {"message_id": int(parent.id)}
        if not post.media:
            message = await self.call(channel, "sendMessage", "the message", visible=True,
                                       json_body={**target, "text": text, "parse_mode": "HTML"})
            return Release(str(message["message_id"]), telegram_message_url(message))
        _check_telegram_sizes(post.media)
        return await self._send_albums(channel, post, text, target)

    async def _send_albums(self, channel: Channel, post: OutgoingPost, caption: str, target: dict) -> Release:
        """The media in albums of up to 10, the caption on the first item. Which albums went out is kept in
        the session until the part is done, so a retry after a refused album does not repeat the earlier ones."""
        size = TELEGRAM_MEDIA_GROUP_SIZE
        albums = [post.media[start:start + size] for start in range(0, len(post.media), size)]
        progress = dict(channel.session.get("telegramAlbumsSent", {}).get(post.idempotency_key) or {"albums": 0})
        for index, album in enumerate(albums):
            if index < progress["albums"]:
                continue
            sent = await self._send_album(channel, album, caption if index == 0 else "", target, index * size + 1)
            progress = {"albums": index + 1, "release": progress.get("release") or
                        [str(sent[0]["message_id"]), telegram_message_url(sent[0])],
                        "ids": progress.get("ids", []) + [message["message_id"] for message in sent
                                                          if isinstance(message, dict)]}
            if index + 1 < len(albums):
                self._remember_albums(channel, post.idempotency_key, progress)
        if len(albums) > 1:
            self._remember_albums(channel, post.idempotency_key, None)
        # every message of the albums, for a delete (a reply refers to the first)
        return Release(*progress["release"], {"messages": progress["ids"]} if len(progress["ids"]) > 1 else None)

    @staticmethod
    def _remember_albums(channel: Channel, key: str, progress: Optional[dict]) -> None:
        sent = {name: value for name, value in channel.session.get("telegramAlbumsSent", {}).items() if name != key}
        if progress is not None:
            sent[key] = progress
        channel.save_session({**channel.session, "telegramAlbumsSent": sent})

    async def _send_album(self, channel: Channel, album: tuple, caption: str, target: dict, first_number: int) -> list:
        """One photo, video or GIF (sendPhoto/sendVideo/sendAnimation), or an album of 2 to 10; its messages."""
        fields = [(name, json.dumps(value) if isinstance(value, dict) else value) for name, value in target.items()]
        described = {"caption": caption, "parse_mode": "HTML"} if caption else {}
        if len(album) == 1:
            media = album[0]
            kind = "video" if media.kind == "video" else "animation" if media.content_type == "image/gif" else "photo"
            method, what, item = "send" + kind.capitalize(), f"the {kind}", f"media item {first_number}"
            fields += [*described.items(), (kind, (media.name, media.read(), media.content_type))]
        else:
            method, what = "sendMediaGroup", "the album"
            item = f"media items {first_number}–{first_number + len(album) - 1}"
            # A GIF in an album goes as a photo (its first frame): albums take no animations.
            fields.append(("media", json.dumps([
                {"type": "video" if media.kind == "video" else "photo", "media": f"attach://file{number}",
                 **(described if number == 0 else {})} for number, media in enumerate(album)])))
            fields += [(f"file{number}", (media.name, media.read(), media.content_type))
                       for number, media in enumerate(album)]
        body, content_type = encode_multipart(fields)
        try:
            result = await self.call(channel, method, what, visible=True,
                                      body=body, headers={"Content-Type": content_type},
                                      timeouts=Timeouts(read=120, total=600))
        except PublishError as error:
            error.item = error.item or item
            raise
        return result if isinstance(result, list) and result else [result]

    # --- deleting (the operator's bot and the user's own alike) --------------------------------------------

    can_delete = True

    async def delete(self, channel: Channel, release: Release) -> None:
        """deleteMessage, or deleteMessages for every message of an album; a message already gone is deleted.
        Telegram refuses (in its words) what a bot may no longer delete, e.g. a group message over 48 hours old."""
        album = release.reply_ref.get("messages") if isinstance(release.reply_ref, dict) else None
        ids = [int(item) for item in album if isinstance(item, int)] if isinstance(album, list) else [int(release.id)]
        target: dict = {"chat_id": channel.credentials["chatId"]}
        method, target = ("deleteMessages", {**target, "message_ids": ids[:100]}) if len(ids) > 1 else \
            ("deleteMessage", {**target, "message_id": ids[0]})
        try:
            await self.call(channel, method, "the message's deletion", json_body=target)
        except Rejected as refused:
            if "message to delete not found" not in refused.message.lower():
                raise

    def where_to_check(self, channel: Channel) -> str:
        return f"the Telegram chat {channel.credentials.get('chatId')} (the channel \"{channel.name}\")"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        answer = reply.json()  # {"ok": false, "error_code": 400, "description": "Bad Request: chat not found"}
        return error_fields(answer, "description") if isinstance(answer, dict) and answer.get("ok") is False else None


def _check_telegram_sizes(media: tuple) -> None:
    """Refuse, before anything is sent, a file larger than a bot may upload (10 MB a photo, 50 MB any file)."""
    for number, item in enumerate(media, 1):
        size = os.path.getsize(item.path)
        photo = item.kind == "image" and item.content_type != "image/gif"
        limit = TELEGRAM_PHOTO_BYTES if photo else TELEGRAM_FILE_BYTES
        if size > limit:
            raise Rejected(f"this {'photo' if photo else 'file'} is {size / 2**20:.1f} MB, and a Telegram bot may "
                           f"send {'photos' if photo else 'files'} of up to {limit // 2**20} MB",
                           item=f"media item {number}")


PROVIDER = TelegramProvider()
