"""Slack, two ways: an incoming webhook (pasted), or Postiz's set-up, the operator's OAuth v2 app.

- Webhook kind (credentials {"webhookUrl"}): Postiz HTML as mrkdwn blocks posted to the webhook, which answers
  plain text ("ok" or an error code) and no message id: no thread parts, nothing to delete later (Slack gives
  a webhook no way to delete what it posted), no channel to pick, so no `channels` tool.
- OAuth kind (SLACK_ID, SLACK_SECRET, Postiz's names): consent installs the app's bot in the workspace (the
  workspace is the channel); a post's `channel` setting (listed by the `channels` tool) picks the Slack channel;
  the bot joins it (public channels), posts with chat.postMessage, thread parts as replies in the post's thread
  (thread_ts), links from chat.getPermalink, and deletes with chat.delete. The Web API answers HTTP 200 with
  {"ok": false, "error": code} for most errors: the code decides the error's kind.
"""
from __future__ import annotations

import json
import re
from typing import Optional
from urllib.parse import urlencode

from ..catalogue import ChannelAccount, secret_account
from ..http_client import AddressRefused, HttpClient, HttpReply, parsed_url
from .base import (
    AddressNotAllowed, Channel, Connected, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable,
)
from .markup import markdown_from_html
from .oauth import AppCredentials, OAuthProvider, TokenRefused, Tokens, bearer


SLACK_SECTION_LIMIT = 3000
SLACK_BLOCK_LIMIT = 50
SLACK_FALLBACK_TEXT_LIMIT = 3000  # `text` is only the notification's preview once there are blocks
_SLACK_WEBHOOK_PATH = r"/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+/?"
# Incoming webhooks answer errors as a short code in plain text: what each means, and what to do.
_SLACK_GONE = {
    "no_service": "the webhook was removed or its app uninstalled",
    "no_service_id": "the webhook URL is incomplete",
    "no_team": "the webhook URL names no workspace",
    "team_disabled": "the workspace was disabled",
    "invalid_token": "the webhook URL's token is not valid anymore",
    "channel_not_found": "the webhook's channel was deleted",
}
_SLACK_REFUSALS = {
    "invalid_payload": "Slack could not read the message rustiz built; this is a rustiz bug worth reporting",
    "no_text": "the message had no text and no blocks",
    "channel_is_archived": "the webhook's channel is archived: unarchive it, or connect a webhook of another channel",
    "action_prohibited": "a workspace admin restricted posting to this channel",
    "posting_to_general_channel_denied": "only some members may post in the workspace's general channel",
    "too_many_attachments": "the message has more blocks or attachments than Slack takes",
    "invalid_blocks": "Slack refused a block; an image must be at a public http(s) URL that Slack can download",
    "invalid_blocks_format": "Slack could not read the blocks",
}


def _slack_sections(mrkdwn: str) -> list:
    """The text cut into pieces Slack's section blocks take (3,000 characters), at line breaks when possible."""
    sections, rest = [], mrkdwn
    while len(rest) > SLACK_SECTION_LIMIT:
        cut = rest.rfind("\n", 0, SLACK_SECTION_LIMIT + 1)
        cut = cut if cut > 0 else rest.rfind(" ", 0, SLACK_SECTION_LIMIT + 1)
        cut = cut if cut > 0 else SLACK_SECTION_LIMIT
        sections.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    return sections + ([rest] if rest else [])


# Web API error codes (api.slack.com/web, each method's Errors): the token is dead, or the call may be retried.
_SLACK_AUTH_GONE = ("invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
                    "no_permission", "missing_scope", "team_access_not_granted", "app_uninstalled")
_SLACK_PASSING = ("internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited")
_SLACK_DEAD_GRANTS = ("invalid_code", "code_already_used", "invalid_refresh_token", "invalid_grant")
SLACK_CHANNEL_PAGES = 5  # the channels tool reads at most 5 pages of 200 conversations
_SLACK_CHANNEL_ID = r"[CDG][A-Z0-9]{2,30}"


def _looks_like_video(path: str) -> bool:
    return bool(re.search(r"\.(mp4|m4v|mov|webm|mkv|avi)(\?|#|\Z)", path.lower()))


class SlackProvider(OAuthProvider):
    """An incoming webhook, or a workspace the operator's app was installed in (see the module)."""
    identifier = "slack"
    resend_is_safe = False  # a second send is a second message
    concurrency = 3  # Postiz's maxConcurrentJob
    spacing = 1.0  # Slack allows about one message a second per channel
    app_variables = ("SLACK_ID", "SLACK_SECRET")
    auth_origin = api_origin = "https://slack.com"
    authorize_path = "/oauth/v2/authorize"
    token_path = "/api/oauth.v2.access"
    scopes = ("channels:read", "chat:write", "users:read", "groups:read", "channels:join", "chat:write.customize")
    pkce = False  # Postiz sends none; Slack's PKCE is for apps without a secret
    operator_guide = (
        "Create an app at api.slack.com/apps (From scratch). Under OAuth & Permissions add the redirect URL "
        "{FRONTEND_URL}/integrations/social/slack (Slack requires https) and the bot token scopes channels:read, "
        "chat:write, users:read, groups:read, channels:join and chat:write.customize; copy the Client ID and "
        "Client Secret (Basic Information) into SLACK_ID and SLACK_SECRET. Installing in other workspaces needs "
        "Manage Distribution on; the Slack Marketplace review is not needed. Webhook channels keep working "
        "without any of this.")

    @staticmethod
    def _webhook_kind(channel: Channel) -> bool:
        return "webhookUrl" in channel.credentials

    def uses_operator_app(self, credentials: dict) -> bool:
        return not "webhookUrl" in credentials  # (a webhook channel works without the operator's app)

    def channel_tools(self, tools: list, credentials: dict) -> list:
        """A webhook posts where it was made: it has no channel to pick, so no `channels` tool."""
        return [] if "webhookUrl" in credentials else tools

    # --- the operator's app and consent -----------------------------------------------------------------

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        query = {"client_id": app.client_id, "redirect_uri": redirect_uri, "scope": ",".join(self.scopes),
                 "state": state}
        return f"{self.auth_base()}{self.authorize_path}?{urlencode(query)}"

    async def token_request(self, http: HttpClient, app: AppCredentials, form: dict, what: str) -> Tokens:
        """oauth.v2.access with the app's id and secret in the form (as Postiz); a dead code is TokenRefused."""
        channel = Channel("", "", {}, None, http)
        try:
            reply = await self.send(channel, "POST", self.auth_base() + self.token_path, what=what,
                                    form={**form, "client_id": app.client_id, "client_secret": app.client_secret})
        except Rejected as refused:
            if _slack_code(refused.body) in _SLACK_DEAD_GRANTS:
                raise TokenRefused(refused.message, refused.status, refused.body) from None
            raise
        tokens = self.tokens_from(reply)
        answer = reply.json()
        team = answer.get("team") if isinstance(answer.get("team"), dict) else {}
        return tokens._replace(extra={"teamId": str(team.get("id") or ""), "teamName": str(team.get("name") or ""),
                                      "botUserId": str(answer.get("bot_user_id") or "")})

    # --- connecting -------------------------------------------------------------------------------------

    async def connect(self, channel: Channel) -> Connected:
        if not self._webhook_kind(channel):
            return await self._connect_workspace(channel)
        # An incoming webhook has no read endpoint: the only way to test one is to post to the
        # channel, and a test message in somebody's workspace is not ours to send. So the URL's shape
        # is checked (for Slack's own host), and its address (the guard of every outbound call), and a
        # revoked webhook shows up on the first publish, which then flags the channel for reconnecting.
        url = channel.credentials["webhookUrl"]
        parts = parsed_url(url)
        if parts.hostname == "hooks.slack.com" and (parts.scheme != "https" or
                                                    not re.fullmatch(_SLACK_WEBHOOK_PATH, parts.path)):
            raise Rejected("this is not a Slack incoming webhook URL: it looks like "
                           "https://hooks.slack.com/services/T.../B.../... (copy it from your Slack app's "
                           "Incoming Webhooks page)")
        try:
            await channel.http.check_url(url)
        except AddressRefused as refused:
            raise AddressNotAllowed(str(refused)) from None
        account = secret_account("webhookUrl", lambda credentials: channel.name)(channel.credentials)
        return Connected(account)

    async def _connect_workspace(self, channel: Channel) -> Connected:
        """The workspace (the channel's account) and the app's bot user (its picture), as Postiz reads them."""
        bot_user = channel.credentials.get("botUserId", "")
        reply = await self.send(channel, "GET", f"{self.api_base()}/api/users.info?{urlencode({'user': bot_user})}",
                                what="the app's bot user (users.info)", headers=bearer(channel))
        user = reply.json().get("user") if isinstance(reply.json().get("user"), dict) else {}
        profile = user.get("profile") if isinstance(user.get("profile"), dict) else {}
        team_id = channel.credentials.get("teamId") or user.get("team_id")
        if not team_id:
            raise Rejected("Slack's answer named no workspace: install the app again")
        name = channel.credentials.get("teamName") or user.get("real_name") or f"Slack {team_id}"
        picture = profile.get("image_original") or profile.get("image_192") or None
        # (limits: this kind of channel can thread replies, which post_problem reads)
        return Connected(ChannelAccount(str(team_id), str(name), user.get("name") or None, picture),
                         limits={"threadReplies": True})

    async def tool_channels(self, channel: Channel, data: dict) -> list:
        """The workspace's public and private channels the app may see, as Postiz lists them: [{"id", "name"}]."""
        if self._webhook_kind(channel):
            raise LookupError("channels")
        listed: list = []
        cursor = ""
        for _ in range(SLACK_CHANNEL_PAGES):
            query = {"types": "public_channel,private_channel", "exclude_archived": "true", "limit": 200,
                     **({"cursor": cursor} if cursor else {})}
            reply = await self.send(channel, "GET", f"{self.api_base()}/api/conversations.list?{urlencode(query)}",
                                    what="the list of channels", headers=bearer(channel))
            answer = reply.json()
            listed += [{"id": item["id"], "name": item.get("name")} for item in answer.get("channels") or []
                       if isinstance(item, dict) and isinstance(item.get("id"), str)]
            metadata = answer.get("response_metadata") if isinstance(answer.get("response_metadata"), dict) else {}
            cursor = metadata.get("next_cursor") or ""
            if not cursor:
                break
        return listed

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        if not self._webhook_kind(channel):
            return await self._post_message(channel, post, parent)
        videos = [index for index, media in enumerate(post.media, 1) if media.kind == "video"]
        if videos:
            raise Rejected("Slack incoming webhooks cannot upload files, so a video cannot be posted",
                           item=f"media item {videos[0]}")
        await self.send(channel, "POST", channel.credentials["webhookUrl"], visible=True, what="the message",
                        json_body=_slack_message(post))
        # The webhook answers no id or link for the message: the part's own key stands in for the id.
        return Release(post.idempotency_key, "")

    async def _post_message(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        """chat.postMessage in the post's channel (joined first, as Postiz: a bot must be in a public channel to
        post there), a thread part under the post's message; its link from chat.getPermalink."""
        where = (parent.reply_ref or {}).get("channel") if parent is not None else post.settings.get("channel")
        if not isinstance(where, str) or not re.fullmatch(_SLACK_CHANNEL_ID, where.strip()):
            raise Rejected("A Slack post needs the channel to post in (the post's \"channel\" setting: an id from "
                           "the channels tool, like C0123456789)")
        where = where.strip()
        if parent is None:
            try:
                await self.send(channel, "POST", f"{self.api_base()}/api/conversations.join", what="joining the channel",
                                headers=bearer(channel), json_body={"channel": where})
            except Rejected:
                pass  # a private channel cannot be joined: the bot must have been invited, which the post shows
        message: dict = {"channel": where, **_slack_message(post)}
        thread = (parent.reply_ref or {}).get("thread_ts") if parent is not None else None
        if thread:
            message["thread_ts"] = thread
        reply = await self.send(channel, "POST", f"{self.api_base()}/api/chat.postMessage", visible=True,
                                what="the message", headers=bearer(channel), json_body=message)
        answer = reply.json()
        if not isinstance(answer.get("ts"), str):
            raise OutcomeUnknown(f"Slack answered the message without its ts ({reply.described('a message')})",
                                 reply.status)
        link = ""
        try:
            query = urlencode({"channel": answer.get("channel") or where, "message_ts": answer["ts"]})
            permalink = await self.send(channel, "GET", f"{self.api_base()}/api/chat.getPermalink?{query}",
                                        what="the message's link", headers=bearer(channel))
            link = permalink.json().get("permalink") if isinstance(permalink.json().get("permalink"), str) else ""
        except (Rejected, Retryable, NeedsReconnect):
            pass  # the message is out: a missing link is no reason to send it again
        return Release(answer["ts"], link, {"channel": str(answer.get("channel") or where),
                                            "thread_ts": thread or answer["ts"]})

    # --- deleting -------------------------------------------------------------------------------------

    can_delete = True  # (the OAuth kind; a webhook's message cannot be deleted: delete() says so)

    async def delete(self, channel: Channel, release: Release) -> None:
        """chat.delete of the bot's message; a message already gone (message_not_found) counts as deleted."""
        if self._webhook_kind(channel):
            raise Rejected("Slack gives an incoming webhook no way to delete what it posted (it answers no message "
                           "id): delete it in Slack, or connect the workspace with Slack's sign-in")
        where = (release.reply_ref or {}).get("channel") if isinstance(release.reply_ref, dict) else None
        if not where:
            raise Rejected("this message's Slack channel was not recorded when it was published")
        try:
            await self.send(channel, "POST", f"{self.api_base()}/api/chat.delete", what="the message's deletion",
                            headers=bearer(channel), json_body={"channel": where, "ts": release.id})
        except Rejected as refused:
            if _slack_code(refused.body) != "message_not_found":
                raise

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        answer = reply.json()
        if isinstance(answer, dict) and "ok" in answer:
            return self._check_web_api(reply, answer, visible, what)
        code = self.error_words(reply)
        if 200 <= reply.status < 300:
            if code == "ok":
                return reply
            if code is None:  # not Slack's words: a proxy or portal answered
                raise OutcomeUnknown(f"Slack answered {reply.described('its ok or an error code')}", reply.status)
        if code in _SLACK_GONE:
            raise NeedsReconnect(f"Slack refused the webhook ({code}): {_SLACK_GONE[code]}; add a new incoming "
                                 "webhook in your Slack app and connect the channel with its URL",
                                 reply.status, code)
        if code in _SLACK_REFUSALS:
            raise Rejected(f"Slack refused {what} ({code}): {_SLACK_REFUSALS[code]}", reply.status, code)
        if 200 <= reply.status < 300:
            raise Rejected(f"Slack refused {what} ({code})", reply.status, code)
        return super().check_reply(reply, visible, what)

    def _check_web_api(self, reply: HttpReply, answer: dict, visible: bool, what: str) -> HttpReply:
        """The Web API's {"ok": ..., "error": code}: ok with a 2xx is the reply; else the code's kind."""
        if answer["ok"] is True and 200 <= reply.status < 300:
            return reply
        code = str(answer.get("error") or "ok:false without an error code")[:100]
        body = json.dumps({"ok": False, "error": code})
        if reply.status == 429 or code == "ratelimited":
            raise Retryable(f"Slack asked rustiz to slow down ({code})", 429, body,
                            after=float(reply.headers.get("retry-after") or 0) or None)
        if code in _SLACK_AUTH_GONE:
            raise NeedsReconnect(f"Slack refused the app's token ({code}): the app was removed from the workspace "
                                 "or lost a permission; connect the workspace again", reply.status, body)
        if code in _SLACK_PASSING:
            problem = f"Slack failed on {what} ({code})"
            raise OutcomeUnknown(problem, reply.status, body) if visible else Retryable(problem, reply.status, body)
        if reply.status >= 500:
            return super().check_reply(reply, visible, what)
        raise Rejected(f"Slack refused {what} ({code})" + {
            "channel_not_found": ": the post's channel does not exist or the app cannot see it",
            "not_in_channel": ": invite the app to that channel (/invite @app) and publish again",
            "is_archived": ": the channel is archived", "msg_too_long": ": the message is too long",
            "cant_delete_message": ": the app may delete only its own messages"}.get(code, ""), reply.status, body)

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """Slack's incoming webhooks answer an error as a bare code in plain text, like no_service; the Web
        API {"ok": false, "error": code}."""
        answer = reply.json()
        if isinstance(answer, dict) and isinstance(answer.get("error"), str):
            return answer["error"][:100]
        code = reply.body.decode("utf-8", "replace").strip() if len(reply.body) <= 64 else ""
        return code if re.fullmatch(r"[a-z_]+", code) else None

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        if len(values) > 1 and not (channel.get("limits") or {}).get("threadReplies"):
            return (f"Slack publishes each post on its own through an incoming webhook, which has no replies: send "
                    f"one value, not {len(values)} (connect the workspace with Slack's sign-in for thread replies)")
        media = values[0]["image"]
        if any(_looks_like_video(str(item.get("path", ""))) for item in media if isinstance(item, dict)):
            return ("Slack incoming webhooks cannot upload files, and a video cannot be shown from a link: "
                    "post images only (Slack shows them from their public URL)")
        sections = _slack_sections(markdown_from_html(values[0]["content"], "mrkdwn"))
        blocks = len(sections) + len(media)
        if blocks > SLACK_BLOCK_LIMIT:
            return (f"Slack takes at most {SLACK_BLOCK_LIMIT} blocks in a message; this post needs {blocks} "
                    f"({len(sections)} sections of up to {SLACK_SECTION_LIMIT:,} characters of text and "
                    f"{len(media)} images)")
        return None

    def where_to_check(self, channel: Channel) -> str:
        if self._webhook_kind(channel):
            return f"the Slack channel of the webhook \"{channel.name}\""
        return f"the post's channel in the Slack workspace \"{channel.name}\""


def _slack_message(post: OutgoingPost) -> dict:
    """{text, blocks}: mrkdwn sections of up to 3,000 characters, then the images Slack shows from their URL
    (it downloads each: it must be public, FRONTEND_URL or media from the web)."""
    mrkdwn = markdown_from_html(post.html, "mrkdwn")
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": section}} for section in _slack_sections(mrkdwn)]
    blocks += [{"type": "image", "image_url": media.url, "alt_text": media.alt or media.name} for media in post.media]
    fallback = mrkdwn or ", ".join(media.alt or media.name for media in post.media)
    return {"text": fallback[:SLACK_FALLBACK_TEXT_LIMIT], "blocks": blocks}


def _slack_code(body: str) -> Optional[str]:
    """The Web API's error code in an error's body (as _check_web_api stored it)."""
    try:
        answer = json.loads(body) if body else None
    except ValueError:
        return None
    return answer.get("error") if isinstance(answer, dict) else None


PROVIDER = SlackProvider()
