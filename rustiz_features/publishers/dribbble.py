"""Dribbble (API v2), through the operator's app: OAuth 2.0 consent, shots with one image.

As in Postiz: the scopes are public and upload, a post is one shot (the image, the `title` setting, the text
as its description; Dribbble takes exactly one picture and no video), and there are no threads. The `team`
setting (a team's address, login or id; the `teams` tool lists them) sends the shot to that team. Dribbble's tokens
do not expire and it issues no refresh token. A shot is accepted with 202 and a Location naming it; Dribbble
processes the image afterwards. Errors are {"message", "errors": [{"attribute", "message"}]}; a 403 means the
account may not upload shots (not a dead token), so it is not a reconnect.
"""
from __future__ import annotations

import re
from typing import Optional
from urllib.parse import quote

from ..catalogue import ChannelAccount
from ..http_client import HttpReply, Timeouts, encode_multipart
from .base import Channel, Connected, OutcomeUnknown, OutgoingPost, Rejected, Release, analytics_figures
from .oauth import AppCredentials, OAuthProvider, bearer


class DribbbleProvider(OAuthProvider):
    identifier = "dribbble"
    app_variables = ("DRIBBBLE_CLIENT_ID", "DRIBBBLE_CLIENT_SECRET")
    auth_origin = "https://dribbble.com"  # the consent page, the token endpoint, and where shots are seen
    api_origin = "https://api.dribbble.com"
    authorize_path = "/oauth/authorize"
    token_path = "/oauth/token"
    scopes = ("public", "upload")
    pkce = False  # Dribbble documents no PKCE
    threads = False
    concurrency = 3  # Postiz's maxConcurrentJob
    spacing = 2.0  # Dribbble allows 60 requests a minute
    can_delete = True
    operator_guide = (
        "Register the application at dribbble.com/account/applications/new, with the callback URL "
        "{FRONTEND_URL}/integrations/social/dribbble, and put its Client ID and Client Secret in DRIBBBLE_CLIENT_ID "
        "and DRIBBBLE_CLIENT_SECRET. The scopes asked are public and upload. Creating shots through the API is "
        "limited by Dribbble to accounts allowed to upload (a Pro or team account).")

    # --- OAuth ------------------------------------------------------------------------------------------

    def token_request_headers(self, app: AppCredentials) -> dict:
        return {"Accept": "application/json"}

    def token_form_extra(self, app: AppCredentials) -> dict:
        return {"client_id": app.client_id, "client_secret": app.client_secret}

    # --- errors ------------------------------------------------------------------------------------------

    def error_words(self, reply: HttpReply) -> Optional[str]:
        answer = reply.json()
        if isinstance(answer, dict) and isinstance(answer.get("message"), str) and answer["message"].strip():
            details = [f"{item.get('attribute')} {item['message']}" if item.get("attribute") else item["message"]
                       for item in answer.get("errors") or [] if isinstance(item, dict)
                       and isinstance(item.get("message"), str)] if isinstance(answer.get("errors"), list) else []
            return "; ".join([answer["message"].strip(), *details])
        return super().error_words(reply)  # OAuth's {"error", "error_description"}

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        if reply.status == 403:  # the account may not upload shots: a new consent would not change that
            raise Rejected(self.platform_words(reply), reply.status, self.error_excerpt(reply))
        return super().check_reply(reply, visible, what)

    def where_to_check(self, channel: Channel) -> str:
        return f"the shots of the Dribbble account of the channel \"{channel.name}\""

    # --- the account and its teams ------------------------------------------------------------------------

    async def _user(self, channel: Channel) -> dict:
        reply = await self.send(channel, "GET", self.api_base() + "/v2/user", what="the account (/v2/user)",
                                headers=bearer(channel))
        user = reply.json()
        if not isinstance(user, dict) or user.get("id") is None:
            raise Rejected(f"Dribbble answered /v2/user with {reply.described('an account with an id')}", reply.status)
        return user

    async def connect(self, channel: Channel) -> Connected:
        user = await self._user(channel)
        login = user.get("login") if isinstance(user.get("login"), str) else None
        return Connected(ChannelAccount(str(user["id"]), user.get("name") or login or str(user["id"]), login,
                                        user.get("avatar_url") or None))

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        """The account's followers and shots as of now (Dribbble gives no figures per shot)."""
        user = await self._user(channel)
        return analytics_figures({"Followers": user.get("followers_count"), "Shots": user.get("shots_count")})

    async def tool_teams(self, channel: Channel, data: dict) -> list:
        teams = (await self._user(channel)).get("teams")
        return [{"id": team.get("id"), "name": team.get("name"), "url": team.get("html_url")} for team in teams or []
                if isinstance(team, dict)] if isinstance(teams, list) else []

    async def _team_id(self, channel: Channel, team: str) -> str:
        """The id of the user's team that `team` names: its address (Postiz's setting is a URL), login or id."""
        wanted = team.rstrip("/").rsplit("/", 1)[-1].lower()
        for item in (await self._user(channel)).get("teams") or []:
            if isinstance(item, dict) and wanted in (str(item.get("id")), str(item.get("login") or "").lower()):
                return str(item["id"])
        raise Rejected(f"{team} is not one of the Dribbble teams of this account (the \"teams\" tool lists them)")

    # --- shots ---------------------------------------------------------------------------------------------

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        images = [media for media in post.media if media.kind == "image"]
        if len(post.media) != 1 or len(images) != 1:
            raise Rejected("A Dribbble shot takes exactly one picture")
        image = images[0]
        fields = [("title", str(post.settings.get("title") or "")), ("description", post.text)]
        team = str(post.settings.get("team") or "").strip()
        if team:
            fields.append(("team_id", await self._team_id(channel, team)))
        body, content_type = encode_multipart(fields + [("image", (image.name, image.read(), image.content_type))])
        reply = await self.send(channel, "POST", self.api_base() + "/v2/shots", visible=True, what="the shot",
                                body=body, headers={**bearer(channel), "Content-Type": content_type},
                                timeouts=Timeouts(read=120, total=300))
        shot = re.search(r"/shots/(\d+)", reply.headers.get("location") or "")
        if shot is None:
            raise OutcomeUnknown("Dribbble accepted the shot but named no Location for it", reply.status)
        return Release(shot[1], f"{self.auth_base()}/shots/{shot[1]}")

    async def delete(self, channel: Channel, release: Release) -> None:
        try:
            await self.send(channel, "DELETE", f"{self.api_base()}/v2/shots/{quote(release.id, safe='')}",
                            what="the shot's deletion", headers=bearer(channel))
        except Rejected as refused:
            if refused.status != 404:  # already gone
                raise


PROVIDER = DribbbleProvider()
