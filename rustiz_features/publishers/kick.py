"""Kick (`kick`): a post is a message in the user's own Kick chat, as Postiz does (api.kick.com/public/v1/chat).

OAuth 2.1 with PKCE (S256) through the operator's app at id.kick.com (Postiz's variables KICK_CLIENT_ID and
KICK_SECRET; the id and secret go in the token form with the code verifier), Postiz's scopes. The account is
/public/v1/users (the token's user); its user_id is the broadcaster the message goes to, sent as the user
(type "user"). Thread parts are chat replies (reply_to_message_id) to the part before. Kick answers
{"data": {"is_sent", "message_id"}, "message"}; a message not sent is a refusal. Chat takes text only (500
characters): a post with media is refused when it is scheduled. Delete: DELETE /public/v1/chat/<message id>,
which needs moderation:chat_message:manage, asked beside Postiz's scopes.
Figures: the channel's active subscribers (GET /public/v1/channels without a slug is the token's own channel,
under Postiz's channel:read). Kick's public API gives no follower count and nothing per chat message.
"""
from __future__ import annotations

from typing import Optional
from urllib.parse import quote

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply
from .base import Channel, Connected, OutcomeUnknown, OutgoingPost, Rejected, Release, analytics_figures, error_fields
from .oauth import AppCredentials, OAuthProvider, TokenRefused, Tokens, bearer

CHAT_LENGTH = 500


class KickProvider(OAuthProvider):
    identifier = "kick"
    app_variables = ("KICK_CLIENT_ID", "KICK_SECRET")  # (Postiz's names: KICK_SECRET, not KICK_CLIENT_SECRET)
    auth_origin = "https://id.kick.com"
    api_origin = "https://api.kick.com"
    authorize_path = "/oauth/authorize"
    token_path = "/oauth/token"
    scopes = ("chat:write", "user:read", "channel:read",  # Postiz's
              "moderation:chat_message:manage")  # rustiz's: to delete what it sent
    can_delete = True
    pkce = True  # Kick requires it
    concurrency = 3  # Postiz's
    operator_guide = (
        "Create the app at kick.com → Settings → Developer (Create App), with the redirect URL "
        "{FRONTEND_URL}/integrations/social/kick and the scopes chat:write, user:read, channel:read and "
        "moderation:chat_message:manage (to delete), and put its "
        "Client ID and Client Secret in KICK_CLIENT_ID and KICK_SECRET (Postiz's names). No review is needed.")

    def token_request_headers(self, app: AppCredentials) -> dict:
        return {"Accept": "application/json"}

    def token_form_extra(self, app: AppCredentials) -> dict:
        return {"client_id": app.client_id, "client_secret": app.client_secret}

    async def token_request(self, http: HttpClient, app: AppCredentials, form: dict, what: str) -> Tokens:
        """A 400/401 of the token endpoint for a code or refresh token is a dead grant (OAuth's invalid_grant,
        or Kick's own {"message"} naming the token); a wrong client is shown, not a new consent."""
        try:
            return await super().token_request(http, app, form, what)
        except Rejected as refused:
            if not isinstance(refused, TokenRefused) and "client" not in refused.message.lower() \
                    and refused.status in (400, 401) and form.get("grant_type") in ("refresh_token", "authorization_code"):
                raise TokenRefused(refused.message, refused.status, refused.body) from None
            raise

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """Kick's {"message", "data"} answers, and OAuth's {"error", "error_description"}."""
        answer = reply.json()
        if isinstance(answer, dict) and answer.get("message") not in (None, "", "OK"):
            return error_fields(answer, "message")
        return super().error_words(reply)

    def where_to_check(self, channel: Channel) -> str:
        return f"the Kick chat of the channel \"{channel.name}\""

    async def connect(self, channel: Channel) -> Connected:
        reply = await self.send(channel, "GET", self.api_base() + "/public/v1/users", what="the account",
                                headers=bearer(channel))
        data = reply.json().get("data") if isinstance(reply.json(), dict) else None
        user = data[0] if isinstance(data, list) and data else data
        user = user if isinstance(user, dict) else {}
        user_id = user.get("user_id") or user.get("id")
        if not isinstance(user_id, int) or isinstance(user_id, bool):
            raise Rejected(f"Kick answered /public/v1/users with {reply.described('a user with its user_id')}",
                           reply.status)
        name = user.get("name") if isinstance(user.get("name"), str) and user["name"] else str(user_id)
        picture = user.get("profile_picture") if isinstance(user.get("profile_picture"), str) else None
        return Connected(ChannelAccount(str(user_id), name, name, picture or None),
                         session={"name": name, "userId": user_id})

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        """The channel's active subscribers as of now."""
        reply = await self.send(channel, "GET", self.api_base() + "/public/v1/channels", what="the channel",
                                headers=bearer(channel))
        data = reply.json().get("data") if isinstance(reply.json(), dict) else None
        own = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
        return analytics_figures({"Subscribers": own.get("active_subscribers_count")})

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        if any(value.get("image") for value in values if isinstance(value, dict)):
            return "Kick chat takes text only: remove the pictures and videos of the Kick post"
        return None

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        text = post.text.strip()
        if not text:
            raise Rejected("A Kick chat message needs text")
        user_id = channel.session.get("userId")
        if not isinstance(user_id, int):  # (a session lost: read the account again, and keep it)
            connected = await self.connect(channel)
            channel.save_session({**channel.session, **(connected.session or {})})
            user_id = channel.session["userId"]
        body: dict = {"type": "user", "content": text[:CHAT_LENGTH], "broadcaster_user_id": user_id}
        if parent is not None and isinstance(parent.reply_ref, str) and parent.reply_ref:
            body["reply_to_message_id"] = parent.reply_ref
        reply = await self.send(channel, "POST", self.api_base() + "/public/v1/chat", visible=True,
                                what="the chat message", headers=bearer(channel), json_body=body)
        data = reply.json().get("data") if isinstance(reply.json(), dict) else None
        data = data if isinstance(data, dict) else {}
        if not isinstance(data.get("is_sent"), bool):  # an answer that says nothing: the message may be out
            raise OutcomeUnknown(f"Kick accepted the message but answered {reply.described('is_sent')}", reply.status)
        if not data["is_sent"]:
            raise Rejected(f"Kick did not send the message ({self.platform_words(reply)})", reply.status)
        message_id = str(data.get("message_id") or "")
        page = f"https://kick.com/{quote(channel.session.get('name') or '')}"
        return Release(message_id or f"message-{post.idempotency_key}", page, message_id or None)

    async def delete(self, channel: Channel, release: Release) -> None:
        """Delete the chat message (gone already: done)."""
        if not isinstance(release.reply_ref, str) or not release.reply_ref:
            raise Rejected("Kick gave this message no id, so it cannot be deleted through the API")
        try:
            await self.send(channel, "DELETE", f"{self.api_base()}/public/v1/chat/{quote(release.reply_ref, safe='')}",
                            what="the message's deletion", headers=bearer(channel))
        except Rejected as refused:
            if refused.status != 404:
                raise


PROVIDER = KickProvider()
