"""rustiz's own provider: each post (and thread part) POSTed as signed JSON to the user's URL (n8n, Zapier,
their code), with the same delivery id on every attempt so the receiver can drop repeats.
"""
from __future__ import annotations

from typing import Optional

from rustiz import new_uuid
from ..catalogue import secret_account, url_host
from ..http_client import HttpReply, signed_json_request
from .base import Channel, Connected, OutgoingPost, Provider, Rejected, Release, error_fields


class WebhookProvider(Provider):
    """rustiz's own: each part POSTed as signed JSON to the channel's URL, for self-built integrations.

    The receiver answers 2xx, optionally with {"id": ..., "url": ...} naming what it made; a refusal's
    reason is quoted when it answers {"message": ...} or {"error": ...}."""
    identifier = "webhook"
    resend_is_safe = True  # X-Rustiz-Delivery is the same on every attempt: a receiver can drop repeats
    connect_is_read_only = False  # connect() delivers a ping event to the receiver

    async def connect(self, channel: Channel) -> Connected:
        url = channel.credentials["url"]
        body, headers = signed_json_request({"event": "ping", "channel": {"name": channel.name}},
                                            channel.credentials.get("secret"), "ping", new_uuid())
        await self.send(channel, "POST", url, what="the test event (ping)", body=body, headers=headers)
        return Connected(secret_account("url", lambda credentials: f"Webhook to {url_host(url)}")(channel.credentials))

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        payload = {"event": "post.publish", "channel": {"id": channel.id, "name": channel.name}, "post": {
            "id": post.id, "part": post.part, "content": post.html, "text": post.text, "settings": post.settings,
            "media": [{"url": media.url, "type": media.kind, "contentType": media.content_type, "alt": media.alt}
                      for media in post.media],
            "replyTo": parent.id if parent else None}}
        body, headers = signed_json_request(payload, channel.credentials.get("secret"), "post.publish",
                                            post.idempotency_key)
        reply = await self.send(channel, "POST", channel.credentials["url"], visible=True, what="the post",
                                body=body, headers=headers)
        answer = reply.json() if reply.body else None
        answer = answer if isinstance(answer, dict) else {}
        release_id = answer.get("id")
        release_url = answer.get("url")
        return Release(str(release_id) if release_id is not None else post.idempotency_key,
                       release_url if isinstance(release_url, str) else "")

    async def delete(self, channel: Channel, release: Release) -> None:
        """(can_delete is False: only the reason.)"""
        raise Rejected("a webhook channel hands each post to its receiver, which keeps what it made: rustiz has no "
                       "way to ask it to delete it")

    def where_to_check(self, channel: Channel) -> str:
        return f"the service behind the webhook {url_host(channel.credentials['url'])}"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "message") or error_fields(reply.json(), "error")


PROVIDER = WebhookProvider()
