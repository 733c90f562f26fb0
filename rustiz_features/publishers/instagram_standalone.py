"""Instagram standalone (Postiz's `instagram-standalone`): the Instagram API with Instagram Login, no Facebook
page needed, through the Instagram app of a Meta app (INSTAGRAM_APP_ID / INSTAGRAM_APP_SECRET).

Three origins: the consent page (www.instagram.com/oauth/authorize), the code exchange
(api.instagram.com/oauth/access_token, a form POST) and the API (graph.instagram.com). RUSTIZ_INSTAGRAM_
STANDALONE_AUTH_URL replaces the first two (a fake serves both paths), _API_URL the third.
The code gives a short-lived token (an hour), exchanged at once for a long-lived one (60 days, ig_exchange_token);
that token refreshes itself (ig_refresh_token, once it is a day old), so it is also the channel's refresh token,
refreshed 30 days before it lapses (by the scheduler's sweep too: an unused channel must not lapse).
"""
from __future__ import annotations

from typing import Optional
from urllib.parse import urlencode

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply, platform_url
from .base import Channel, Connected, NeedsReconnect, Rejected, Retryable, error_fields
from .instagram_shared import InstagramPublishing
from .meta import self_refreshing
from .oauth import AppCredentials, TokenRefused, Tokens, variable_prefix

TOKEN_ORIGIN = "https://api.instagram.com"  # where the code is exchanged
PUBLISHING_PERMISSIONS = ("instagram_business_basic", "instagram_business_content_publish")


class InstagramStandaloneProvider(InstagramPublishing):
    identifier = "instagram-standalone"
    app_variables = ("INSTAGRAM_APP_ID", "INSTAGRAM_APP_SECRET")
    auth_origin = "https://www.instagram.com"
    api_origin = "https://graph.instagram.com"
    scopes = ("instagram_business_basic", "instagram_business_content_publish", "instagram_business_manage_comments",
              "instagram_business_manage_insights")
    between_steps = False
    refresh_ahead_seconds = 30 * 86400.0
    permission_advice = ("Instagram did not give rustiz the permission this needs: reconnect the channel allowing "
                         "every permission")
    operator_guide = (
        "Create a Business app at developers.facebook.com/apps and add the Instagram product, \"API setup with "
        "Instagram login\": its Instagram app ID and secret (not the Meta app's) go in INSTAGRAM_APP_ID and "
        "INSTAGRAM_APP_SECRET. Under \"Set up Instagram business login\" add the redirect URL "
        "{FRONTEND_URL}/integrations/social/instagram-standalone (Instagram accepts HTTPS redirect URLs only). The "
        "scopes asked are instagram_business_basic, instagram_business_content_publish, "
        "instagram_business_manage_comments and instagram_business_manage_insights; until App Review grants "
        "Advanced Access, only Instagram accounts added as testers of the app can connect. The account must be a "
        "professional (business or creator) account; no Facebook page is needed. Tokens last 60 days and rustiz "
        "refreshes them 30 days ahead. Instagram downloads every picture and video from FRONTEND_URL, which must "
        "be a public HTTPS address; pictures must be JPEG.")

    def token_base(self) -> str:
        return platform_url(variable_prefix(self.identifier) + "AUTH_URL", TOKEN_ORIGIN)

    def signed(self, channel: Channel, token: str) -> tuple:
        # graph.instagram.com: the bearer token only (Instagram Login documents no appsecret_proof).
        return {"Authorization": f"Bearer {token}"}, {}

    # --- Instagram Login -------------------------------------------------------------------------------------

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        query = {"enable_fb_login": "0", "client_id": app.client_id, "redirect_uri": redirect_uri,
                 "response_type": "code", "scope": ",".join(self.scopes), "state": state}
        return f"{self.auth_base()}/oauth/authorize?{urlencode(query)}"

    async def exchange_code(self, http: HttpClient, app: AppCredentials, code: str, redirect_uri: str,
                            code_verifier: Optional[str], details: dict) -> Tokens:
        channel = Channel("", "", {}, None, http)
        # Instagram appends "#_" to the redirect; a browser drops it, a pasted URL may not.
        form = {"client_id": app.client_id, "client_secret": app.client_secret, "grant_type": "authorization_code",
                "redirect_uri": redirect_uri, "code": code.removesuffix("#_")}
        reply = await self.send(channel, "POST", self.token_base() + "/oauth/access_token", what="the code exchange",
                                form=form)
        answer = reply.json() if isinstance(reply.json(), dict) else {}
        if isinstance(answer.get("data"), list) and answer["data"] and isinstance(answer["data"][0], dict):
            answer = answer["data"][0]  # Business Login's shape: {"data": [{access_token, user_id, permissions}]}
        short = answer.get("access_token")
        if not isinstance(short, str) or not short:
            raise Retryable(f"Instagram answered the code exchange without a token ({reply.described('a token')})")
        granted = answer.get("permissions")
        granted = granted.split(",") if isinstance(granted, str) else granted if isinstance(granted, list) else None
        missing = [name for name in PUBLISHING_PERMISSIONS if granted is not None and name not in granted]
        if missing:
            raise Rejected(f"Instagram did not grant {', '.join(missing)}: connect again and allow every permission")
        query = {"grant_type": "ig_exchange_token", "client_secret": app.client_secret, "access_token": short}
        return await self._long_lived(channel, "access_token", query, "the long-lived token exchange")

    async def refresh_tokens(self, http: HttpClient, app: AppCredentials, refresh_token: str) -> Tokens:
        try:
            return await self._long_lived(Channel("", "", {}, None, http), "refresh_access_token",
                                          {"grant_type": "ig_refresh_token", "access_token": refresh_token},
                                          "the token refresh")
        except (NeedsReconnect, Rejected) as refused:  # a dead, revoked or expired token: only consent helps
            if isinstance(refused, TokenRefused):
                raise
            raise TokenRefused(refused.message, refused.status, refused.body) from None

    async def _long_lived(self, channel: Channel, path: str, query: dict, what: str) -> Tokens:
        # These two endpoints take the token in the query string (documented so), without a version.
        reply = await self.send(channel, "GET", f"{self.api_base()}/{path}?{urlencode(query)}", what=what)
        return self_refreshing(self.tokens_from(reply))

    def error_words(self, reply: HttpReply) -> Optional[str]:
        # api.instagram.com's own shape: {"error_type": "OAuthException", "code": 400, "error_message": ...}
        return super().error_words(reply) or error_fields(reply.json(), "error_message", "error_type")

    # --- the account ---------------------------------------------------------------------------------------

    async def connect(self, channel: Channel) -> Connected:
        me = await self.graph_call(channel, "GET", "me", self.user_token(channel), "the Instagram account",
                                   query={"fields": "user_id,username,name,profile_picture_url"})
        account = me.get("user_id") if me.get("user_id") is not None else me.get("id")
        if account is None or not str(account):
            raise Rejected("Instagram answered /me without the account's id")
        username = me.get("username") if isinstance(me.get("username"), str) else None
        name = me.get("name") if isinstance(me.get("name"), str) and me["name"] else username
        picture = me.get("profile_picture_url")
        return Connected(ChannelAccount(str(account), name or str(account), username,
                                        picture if isinstance(picture, str) and picture else None),
                         session={"instagram": str(account)})

    async def ig_account(self, channel: Channel) -> tuple:
        # The account's id as connect() kept it; "me" (the token's account) for a channel stored without it.
        return str(channel.session.get("instagram") or "me"), self.user_token(channel)


PROVIDER = InstagramStandaloneProvider()
