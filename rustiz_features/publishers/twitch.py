"""Twitch (`twitch`): a post is a message in the channel's own chat, or an announcement there, as Postiz does.

OAuth 2.0 authorization code with the operator's app (TWITCH_CLIENT_ID/SECRET, id.twitch.tv; the id and secret
go in the token form), Postiz's scopes. Every Helix call (api.twitch.tv/helix) carries the user's token and the
app's Client-Id. The user is both the broadcaster and the sender (or moderator) of what is published.
- `messageType` "message" (the default): POST /helix/chat/messages; Twitch answers is_sent, and a dropped
  message (AutoMod, a chat setting) comes back with drop_reason: that is a refusal in Twitch's words.
  Thread parts are chat replies to the part before (reply_parent_message_id).
- `messageType` "announcement": POST /helix/chat/announcements with `announcementColor` (204, no id: the
  release is the channel's page and a rustiz-made id).
Chat takes text only (500 characters): a post with media is refused when it is scheduled.
Delete: a chat message through DELETE /helix/moderation/chat, which needs moderator:manage:chat_messages, asked
beside Postiz's scopes (a channel connected without it is told to reconnect); an announcement has no id, and
Twitch deletes no message older than 6 hours.
Figures: the channel's follower count (GET /helix/channels/followers answers `total` to any user token; the list
of followers would need a scope Postiz does not ask). Chat messages have no figures of their own.
"""
from __future__ import annotations

from typing import Optional
from urllib.parse import quote, urlencode

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply
from .base import (Channel, Connected, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release,
                   analytics_figures, error_fields)
from .oauth import AppCredentials, OAuthProvider, TokenRefused, Tokens, bearer

CHAT_LENGTH = 500
# The token endpoint's words for a grant that is dead ({"status": 400, "message": ...}): a new consent is needed.
DEAD_GRANT_WORDS = ("invalid refresh token", "invalid authorization code", "invalid_grant")


class TwitchProvider(OAuthProvider):
    identifier = "twitch"
    app_variables = ("TWITCH_CLIENT_ID", "TWITCH_CLIENT_SECRET")
    auth_origin = "https://id.twitch.tv"
    api_origin = "https://api.twitch.tv"
    authorize_path = "/oauth2/authorize"
    token_path = "/oauth2/token"
    scopes = ("user:write:chat", "user:read:chat", "moderator:manage:announcements",  # Postiz's
              "moderator:manage:chat_messages")  # rustiz's: to delete what it sent
    can_delete = True
    pkce = False  # Postiz sends none; Twitch's confidential clients do not need it
    concurrency = 1  # as Postiz: one at a time
    spacing = 2.0  # Postiz waits 2 s before each chat message
    operator_guide = (
        "Register the application at dev.twitch.tv/console/apps (category Chat Bot or Other, client type "
        "Confidential), with the OAuth redirect URL {FRONTEND_URL}/integrations/social/twitch, and put its "
        "Client ID and a new secret in TWITCH_CLIENT_ID and TWITCH_CLIENT_SECRET. The scopes asked are "
        "user:write:chat, user:read:chat, moderator:manage:announcements and moderator:manage:chat_messages (to "
        "delete); no review is needed.")

    def token_request_headers(self, app: AppCredentials) -> dict:
        return {"Accept": "application/json"}

    def token_form_extra(self, app: AppCredentials) -> dict:
        return {"client_id": app.client_id, "client_secret": app.client_secret}

    async def token_request(self, http: HttpClient, app: AppCredentials, form: dict, what: str) -> Tokens:
        """Twitch refuses a dead code or refresh token with 400 {"status", "message"}: TokenRefused."""
        try:
            return await super().token_request(http, app, form, what)
        except Rejected as refused:
            if not isinstance(refused, TokenRefused) and any(words in refused.message.lower()
                                                             for words in DEAD_GRANT_WORDS):
                raise TokenRefused(refused.message, refused.status, refused.body) from None
            raise

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """Helix's {"error", "status", "message"} and the token endpoint's {"status", "message"}."""
        return error_fields(reply.json(), "message") or super().error_words(reply)

    def _headers(self, channel: Channel) -> dict:
        if channel.app is None:  # (the scheduler and the connect flow give the channel its app)
            raise NeedsReconnect("Twitch's app (TWITCH_CLIENT_ID) is not configured on this server")
        return {**bearer(channel), "Client-Id": channel.app.client_id}

    def where_to_check(self, channel: Channel) -> str:
        return f"the Twitch chat of the channel \"{channel.name}\""

    async def connect(self, channel: Channel) -> Connected:
        reply = await self.send(channel, "GET", self.api_base() + "/helix/users", what="the account (/helix/users)",
                                headers=self._headers(channel))
        users = reply.json().get("data") if isinstance(reply.json(), dict) else None
        user = users[0] if isinstance(users, list) and users and isinstance(users[0], dict) else {}
        if not user.get("id"):
            raise Rejected(f"Twitch answered /helix/users with {reply.described('a user')}", reply.status)
        login = user.get("login") if isinstance(user.get("login"), str) and user["login"] else None
        name = user.get("display_name") if isinstance(user.get("display_name"), str) else ""
        picture = user.get("profile_image_url") if isinstance(user.get("profile_image_url"), str) else None
        return Connected(ChannelAccount(str(user["id"]), name or login or str(user["id"]), login, picture or None),
                         session={"login": login or "", "broadcasterId": str(user["id"])})

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        """The channel's followers as of now."""
        query = urlencode({"broadcaster_id": await self._broadcaster(channel), "first": 1})
        reply = await self.send(channel, "GET", f"{self.api_base()}/helix/channels/followers?{query}",
                                what="the follower count", headers=self._headers(channel))
        return analytics_figures({"Followers": reply.json().get("total") if isinstance(reply.json(), dict) else None})

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        if any(value.get("image") for value in values if isinstance(value, dict)):
            return "Twitch chat takes text only: remove the pictures and videos of the Twitch post"
        return None

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        text = post.text.strip()
        if not text:
            raise Rejected("A Twitch chat message needs text")
        broadcaster = await self._broadcaster(channel)
        login = channel.session.get("login") or ""
        page = f"https://www.twitch.tv/{quote(login)}" if login else "https://www.twitch.tv"
        if post.settings.get("messageType") == "announcement":
            color = post.settings.get("announcementColor") or "primary"
            query = urlencode({"broadcaster_id": broadcaster, "moderator_id": broadcaster})
            await self.send(channel, "POST", f"{self.api_base()}/helix/chat/announcements?{query}", visible=True,
                            what="the announcement", headers=self._headers(channel),
                            json_body={"message": text[:CHAT_LENGTH], "color": color})
            return Release(f"announcement-{post.idempotency_key}", page)  # Twitch gives an announcement no id
        body = {"broadcaster_id": broadcaster, "sender_id": broadcaster, "message": text[:CHAT_LENGTH]}
        if parent is not None and isinstance(parent.reply_ref, str) and parent.reply_ref:
            body["reply_parent_message_id"] = parent.reply_ref
        reply = await self.send(channel, "POST", self.api_base() + "/helix/chat/messages", visible=True,
                                what="the chat message", headers=self._headers(channel), json_body=body)
        sent = reply.json().get("data") if isinstance(reply.json(), dict) else None
        sent = sent[0] if isinstance(sent, list) and sent and isinstance(sent[0], dict) else {}
        if not isinstance(sent.get("is_sent"), bool):  # an answer that says nothing: the message may be out
            raise OutcomeUnknown(f"Twitch accepted the message but answered {reply.described('is_sent')}",
                                 reply.status)
        if not sent["is_sent"]:
            dropped = sent.get("drop_reason") if isinstance(sent.get("drop_reason"), dict) else {}
            words = error_fields(dropped, "message", "code") or "no reason given"
            raise Rejected(f"Twitch did not send the message: {words}", reply.status)
        message_id = str(sent.get("message_id") or "")
        return Release(message_id or f"message-{post.idempotency_key}", page, message_id or None)

    async def delete(self, channel: Channel, release: Release) -> None:
        """Delete a chat message (gone already: done). An announcement has no id Twitch could delete by."""
        if not isinstance(release.reply_ref, str) or not release.reply_ref:
            raise Rejected("Twitch gives an announcement no id, so it cannot be deleted through the API")
        broadcaster = await self._broadcaster(channel)
        query = urlencode({"broadcaster_id": broadcaster, "moderator_id": broadcaster, "message_id": release.reply_ref})
        try:
            await self.send(channel, "DELETE", f"{self.api_base()}/helix/moderation/chat?{query}",
                            what="the message's deletion", headers=self._headers(channel))
        except Rejected as refused:
            if refused.status != 404:
                raise

    async def _broadcaster(self, channel: Channel) -> str:
        """The user's id, which the channel was connected with (the token's own user)."""
        broadcaster = channel.session.get("broadcasterId")
        if not broadcaster:  # (a session lost: read it again, and keep it)
            connected = await self.connect(channel)
            channel.save_session({**channel.session, **(connected.session or {})})
            broadcaster = connected.account.internal_id
        return broadcaster


PROVIDER = TwitchProvider()
