"""Slack, through an incoming webhook: Postiz HTML as mrkdwn blocks.
"""
from __future__ import annotations

import re
from typing import Optional

from ..catalogue import secret_account
from ..http_client import AddressRefused, HttpReply, parsed_url
from .base import (
    AddressNotAllowed, Channel, Connected, NeedsReconnect, OutcomeUnknown, OutgoingPost, Provider, Rejected, Release,
)
from .markup import markdown_from_html


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


def _looks_like_video(path: str) -> bool:
    return bool(re.search(r"\.(mp4|m4v|mov|webm|mkv|avi)(\?|#|\Z)", path.lower()))


class SlackProvider(Provider):
    """A Slack app's incoming webhook (api.slack.com/apps > Incoming Webhooks): one channel, no bot token.

    It answers plain text: "ok" when the message is posted, else an error code such as no_service."""
    identifier = "slack"
    resend_is_safe = False  # a second send is a second message
    threads = False  # the webhook answers no message ts, so nothing can be threaded under a post
    concurrency = 4
    spacing = 1.0  # Slack allows about one message a second per webhook

    async def connect(self, channel: Channel) -> Connected:
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

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        videos = [index for index, media in enumerate(post.media, 1) if media.kind == "video"]
        if videos:
            raise Rejected("Slack incoming webhooks cannot upload files, so a video cannot be posted",
                           item=f"media item {videos[0]}")
        mrkdwn = markdown_from_html(post.html, "mrkdwn")
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": section}}
                  for section in _slack_sections(mrkdwn)]
        # Slack downloads each image from its URL: it must be public (FRONTEND_URL, or media from the web).
        blocks += [{"type": "image", "image_url": media.url, "alt_text": media.alt or media.name}
                   for media in post.media]
        fallback = mrkdwn or ", ".join(media.alt or media.name for media in post.media)
        await self.send(channel, "POST", channel.credentials["webhookUrl"], visible=True, what="the message",
                        json_body={"text": fallback[:SLACK_FALLBACK_TEXT_LIMIT], "blocks": blocks})
        # The webhook answers no id or link for the message: the part's own key stands in for the id.
        return Release(post.idempotency_key, "")

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
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

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """Slack's incoming webhooks answer an error as a bare code in plain text, like no_service."""
        code = reply.body.decode("utf-8", "replace").strip() if len(reply.body) <= 64 else ""
        return code if re.fullmatch(r"[a-z_]+", code) else None

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
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
        return f"the Slack channel of the webhook \"{channel.name}\""


PROVIDER = SlackProvider()
