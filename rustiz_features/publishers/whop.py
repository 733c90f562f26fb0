"""Whop (`whop`): forum posts in a Whop experience, as Postiz does (api.whop.com/api/v1/forum_posts).

OAuth 2.0 with PKCE for a public client: the operator's app is only its id (Postiz's WHOP_CLIENT_ID; Whop asks no
secret), the token calls are JSON. The account is OpenID Connect's /oauth/userinfo (`sub`). A post names its
company and experience (Postiz's settings, chosen with the `companies` and `experiences` tools); its text goes
as Markdown (Postiz's editor for Whop), its optional `title`; thread parts are comments (parent_id) on the part
before. Media are uploaded first: POST /api/v1/files names the file and answers a signed upload URL, the bytes
are PUT there with the headers Whop gave, and the file is polled until "ready"; the post then lists the file ids
as attachments. Whop's API has no delete for forum posts (list, create, update, retrieve), so can_delete
stays False.
"""
from __future__ import annotations

from typing import Any, Optional
from urllib.parse import quote, urlencode

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply, Timeouts
from .base import (
    Channel, Connected, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, PublishError, Rejected, Release,
    Retryable, error_fields, tuned, wait_for_processing,
)
from .markup import markdown_from_html
from .oauth import DEFINITE_REFUSALS, AppCredentials, OAuthProvider, TokenRefused, Tokens, bearer

UPLOAD_WAIT_SECONDS = 300.0  # Postiz waits up to ~9 minutes; rustiz's publish waits 5 and then tries again
UPLOAD_POLL_SECONDS = 2.0  # RUSTIZ_WHOP_POLL_SECONDS (tests)
DEFAULT_EXPIRY = 3600.0  # Postiz's, when Whop's answer gives none
PAGE = 50


class WhopProvider(OAuthProvider):
    identifier = "whop"
    app_variables = ("WHOP_CLIENT_ID",)  # a public client: no secret
    auth_origin = "https://api.whop.com"  # the consent page and the token endpoint live on the API's host
    api_origin = "https://api.whop.com"
    authorize_path = "/oauth/authorize"
    token_path = "/oauth/token"
    scopes = ("openid", "profile", "email", "forum:post:create", "forum:read", "company:basic:read")  # Postiz's
    pkce = True
    operator_guide = (
        "Create the app at whop.com/dashboard/developer, add the OAuth redirect URL "
        "{FRONTEND_URL}/integrations/social/whop and the permissions forum:post:create, forum:read and "
        "company:basic:read (with openid, profile and email), and put its client id (app id) in WHOP_CLIENT_ID. "
        "Whop uses PKCE for this flow: no secret is needed.")

    # --- OAuth ------------------------------------------------------------------------------------------

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        import secrets
        url = await super().begin(http, app, redirect_uri, state, code_challenge, details)
        return url + "&" + urlencode({"nonce": secrets.token_urlsafe(12)})  # OpenID Connect's, as Postiz sends

    async def token_request(self, http: HttpClient, app: AppCredentials, form: dict, what: str) -> Tokens:
        """POST /oauth/token as JSON with the client id; OAuth's error shape, a dead grant TokenRefused."""
        channel = Channel("", "", {}, None, http)
        try:
            reply = await self.send(channel, "POST", self.auth_base() + self.token_path, what=what,
                                    json_body={**form, "client_id": app.client_id})
        except (Rejected, NeedsReconnect) as refused:
            if not isinstance(refused, TokenRefused) and any(f'"{code}"' in refused.body for code in DEFINITE_REFUSALS):
                raise TokenRefused(refused.message, refused.status, refused.body) from None
            raise
        tokens = self.tokens_from(reply)
        return tokens if tokens.expires_in else tokens._replace(expires_in=DEFAULT_EXPIRY)

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """Whop's {"error": {"type", "message"}}, and OAuth's {"error", "error_description"}."""
        answer = reply.json()
        error = answer.get("error") if isinstance(answer, dict) else None
        if isinstance(error, dict):
            return error_fields(error, "message", "type")
        return super().error_words(reply)

    def where_to_check(self, channel: Channel) -> str:
        return f"the Whop forums of the channel \"{channel.name}\""

    # --- the account and the tools -------------------------------------------------------------------------

    async def connect(self, channel: Channel) -> Connected:
        reply = await self.send(channel, "GET", self.api_base() + "/oauth/userinfo", what="the account (userinfo)",
                                headers=bearer(channel))
        user = reply.json() if isinstance(reply.json(), dict) else {}
        if not isinstance(user.get("sub"), str) or not user["sub"]:
            raise Rejected(f"Whop answered /oauth/userinfo with {reply.described('an account with its sub')}",
                           reply.status)
        username = user.get("preferred_username") if isinstance(user.get("preferred_username"), str) else ""
        name = user.get("name") if isinstance(user.get("name"), str) else ""
        picture = user.get("picture") if isinstance(user.get("picture"), str) else None
        return Connected(ChannelAccount(user["sub"], name or username or user["sub"], username or None,
                                        picture or None))

    async def _list(self, channel: Channel, path: str, query: dict, what: str) -> list:
        reply = await self.send(channel, "GET", f"{self.api_base()}/api/v1{path}?{urlencode(query)}", what=what,
                                headers=bearer(channel))
        data = reply.json().get("data") if isinstance(reply.json(), dict) else None
        return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []

    async def tool_companies(self, channel: Channel, data: dict) -> list:
        """The companies the user can post for: [{id, name}]."""
        companies = await self._list(channel, "/companies", {"first": PAGE}, "the list of companies")
        return [{"id": item.get("id"), "name": item.get("title")} for item in companies if item.get("id")]

    async def tool_experiences(self, channel: Channel, data: dict) -> list:
        """The forum experiences of the company `id`: [{id, name}] (the experience's id is what a post names)."""
        company = data.get("id") if isinstance(data, dict) and isinstance(data.get("id"), str) else ""
        if not company:
            return []
        forums = await self._list(channel, "/forums", {"company_id": company, "first": PAGE}, "the list of forums")
        found = []
        for forum in forums:
            experience = forum.get("experience") if isinstance(forum.get("experience"), dict) else {}
            found.append({"id": experience.get("id") or forum.get("id"),
                          "name": experience.get("name") or forum.get("id")})
        return found

    # --- publishing -------------------------------------------------------------------------------------------

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        experience = post.settings.get("experience")
        if not isinstance(experience, str) or not experience.strip():
            raise Rejected("A Whop post needs an experience (the post's \"experience\" setting)")
        attachments = [{"id": await self._upload(channel, media)} for media in post.media]
        body: dict = {"experience_id": experience, "content": markdown_from_html(post.html, "markdown")}
        if parent is not None:
            body["parent_id"] = parent.id
        elif isinstance(post.settings.get("title"), str) and post.settings["title"]:
            body["title"] = post.settings["title"]
        if attachments:
            body["attachments"] = attachments
        reply = await self.send(channel, "POST", self.api_base() + "/api/v1/forum_posts", visible=True,
                                what="the forum post", headers=bearer(channel), json_body=body)
        answer = reply.json()
        if not isinstance(answer, dict) or not isinstance(answer.get("id"), str) or not answer["id"]:
            raise OutcomeUnknown(f"Whop accepted the post but answered {reply.described('a forum post')}",
                                 reply.status)
        top = parent.reply_ref if parent is not None and isinstance(parent.reply_ref, str) else answer["id"]
        return Release(answer["id"], f"https://whop.com/experiences/{quote(experience)}/{quote(top)}", top)

    async def _upload(self, channel: Channel, media: MediaFile) -> str:
        """Register the file, PUT its bytes to the signed URL with Whop's headers, wait until it is ready."""
        try:
            reply = await self.send(channel, "POST", self.api_base() + "/api/v1/files", what="the file's record",
                                    headers=bearer(channel), json_body={"filename": media.name})
            record = reply.json() if isinstance(reply.json(), dict) else {}
            if not isinstance(record.get("id"), str) or not record["id"]:
                raise Retryable(f"Whop answered the file's record with {reply.described('a file id')}", reply.status)
            if isinstance(record.get("upload_url"), str) and record["upload_url"]:
                headers = {str(name): str(value) for name, value in (record.get("upload_headers") or {}).items()} \
                    if isinstance(record.get("upload_headers"), dict) else {}
                try:
                    await self.send(channel, "PUT", record["upload_url"], what="the file's upload", body=media.read(),
                                    headers={"Content-Type": media.content_type, **headers},
                                    timeouts=Timeouts(read=120, total=900))
                except NeedsReconnect as refused:  # the signed URL's refusal (expired): not the channel's token
                    raise Retryable(f"the storage Whop uploads to refused the file (HTTP {refused.status}); the next "
                                    "attempt uploads it again", refused.status) from None
                await self._wait_until_ready(channel, record["id"])
        except PublishError as error:
            error.item = error.item or media.name
            raise
        return record["id"]

    async def _wait_until_ready(self, channel: Channel, file_id: str) -> None:
        async def ready() -> Optional[bool]:
            reply = await self.send(channel, "GET", f"{self.api_base()}/api/v1/files/{quote(file_id)}",
                                    what="the file's status", headers=bearer(channel))
            status: Any = reply.json().get("upload_status") if isinstance(reply.json(), dict) else None
            if status == "failed":
                raise Rejected("Whop could not process the file (its upload_status is \"failed\")")
            return True if status == "ready" else None

        await wait_for_processing(
            ready, UPLOAD_WAIT_SECONDS, tuned("RUSTIZ_WHOP_POLL_SECONDS", UPLOAD_POLL_SECONDS, 0.01),
            lambda: Retryable(f"Whop was still processing the file after {UPLOAD_WAIT_SECONDS:.0f} s; the post waits "
                              "and tries again"), longest_pause=10.0)


PROVIDER = WhopProvider()
