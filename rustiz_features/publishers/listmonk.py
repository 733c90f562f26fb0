"""Listmonk: a campaign to a list, from Postiz HTML, with an image and a test send.
"""
from __future__ import annotations

from typing import Optional

from ..catalogue import ChannelAccount, url_host
from ..http_client import HttpReply
from ..text import escape_html
from .articles import basic_auth_header, image_paragraph, remember_attempt, whole_number
from .base import (
    Channel, Connected, NeedsReconnect, OutgoingPost, Provider, PublishError, Rejected, Release, Retryable,
    error_fields,
)


class ListmonkProvider(Provider):
    """A Listmonk newsletter: a campaign created for the chosen list, then started (sent to the subscribers)."""
    identifier = "listmonk"
    threads = False
    concurrency = 2
    spacing = 1.0

    @staticmethod
    def _base(channel: Channel) -> str:
        return channel.credentials["url"].rstrip("/")

    @staticmethod
    def _headers(channel: Channel) -> dict:
        # Basic auth of the API user and its token: what Listmonk documents, and what Listmonk 3 takes too.
        return basic_auth_header(channel.credentials["username"].strip(), channel.credentials["password"])

    async def connect(self, channel: Channel) -> Connected:
        try:
            reply = await self.send(channel, "GET", self._base(channel) + "/api/lists?per_page=1",
                                    what="the access check (lists)", headers=self._headers(channel))
        except NeedsReconnect as refused:
            refused.message += (". Use an API user and its token (Listmonk admin → Users → New, type API; "
                                "Listmonk 3: an admin login), with the permission to manage campaigns")
            raise
        if not isinstance(reply.json(), dict) or "data" not in reply.json():
            raise Rejected(f"{self._base(channel)} does not answer like Listmonk: /api/lists gave "
                           f"{reply.described('a Listmonk list page')}", reply.status)
        host, user = url_host(self._base(channel)), channel.credentials["username"].strip()
        return Connected(ChannelAccount(f"{host}/{user.lower()}", channel.name, user))

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        campaign_id = (channel.session.get("drafts") or {}).get(post.idempotency_key)
        if campaign_id is None:  # else an earlier attempt made the draft but could not start it: reuse it
            campaign_id = await self._create_campaign(channel, post)
            remember_attempt(channel, "drafts", post.idempotency_key, campaign_id)
        try:
            await self.send(channel, "PUT", f"{self._base(channel)}/api/campaigns/{campaign_id}/status", visible=True,
                            what=f"the start of campaign {campaign_id}", json_body={"status": "running"},
                            headers=self._headers(channel))
        except Retryable as error:
            error.message += f" (draft campaign {campaign_id} was created; the next attempt starts it)"
            raise
        except PublishError as error:
            remember_attempt(channel, "drafts", post.idempotency_key, None)
            error.message += (f" — the campaign was created as draft {campaign_id} but not started: start it in "
                              f"Listmonk ({self._base(channel)}/admin/campaigns/{campaign_id}) or delete it")
            raise
        remember_attempt(channel, "drafts", post.idempotency_key, None)
        return Release(str(campaign_id), f"{self._base(channel)}/admin/campaigns/{campaign_id}")

    async def _create_campaign(self, channel: Channel, post: OutgoingPost) -> int:
        settings = post.settings
        subject = str(settings.get("subject") or "")[:200]  # required by the settings' checks, drafts too
        campaign = {"name": subject, "subject": subject, "lists": [whole_number(settings.get("list"))],
                    "type": "regular", "content_type": "html", "body": self._body(post), "altbody": post.text}
        if whole_number(settings.get("template")) is not None:
            campaign["template_id"] = whole_number(settings.get("template"))
        reply = await self.send(channel, "POST", self._base(channel) + "/api/campaigns", what="the campaign draft",
                                json_body=campaign, headers=self._headers(channel))
        created = (reply.json() or {}).get("data") if isinstance(reply.json(), dict) else None
        if not isinstance(created, dict) or whole_number(created.get("id")) is None:
            raise Retryable(f"Listmonk answered the campaign draft without its id: "
                            f"{reply.described('a Listmonk campaign')}", reply.status)
        return whole_number(created["id"])

    @staticmethod
    def _body(post: OutgoingPost) -> str:
        """The e-mail's HTML: the preview text as a hidden preheader (what inboxes show after the subject),
        the post, then its images."""
        preview = str(post.settings.get("preview") or "").strip()
        preheader = (f'<div style="display:none;max-height:0;overflow:hidden;mso-hide:all">{escape_html(preview)}'
                     "</div>\n" if preview else "")
        images = "".join("\n" + image_paragraph(media.url, media.alt, ' style="max-width:100%"')
                         for media in post.media if media.kind == "image")
        return preheader + post.html + images

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        if whole_number(settings.get("list")) is None:
            return (f"settings.list must be the numeric id of a Listmonk list (from the \"list\" tool), not "
                    f"{settings.get('list')!r}")
        template = settings.get("template")
        if template not in (None, "") and whole_number(template) is None:
            return (f"settings.template must be the numeric id of a Listmonk campaign template (from the "
                    f"\"templates\" tool), not {template!r}")
        return None

    def where_to_check(self, channel: Channel) -> str:
        return f"the campaigns of Listmonk at {self._base(channel)}/admin/campaigns"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "message")  # {"message": "Invalid list"}

    async def tool_list(self, channel: Channel, data: dict) -> list:
        reply = await self.send(channel, "GET", self._base(channel) + "/api/lists?per_page=all",
                                headers=self._headers(channel))
        results = ((reply.json() or {}).get("data") or {}).get("results") or []
        return [{"id": str(item["id"]), "name": item.get("name", "")} for item in results
                if isinstance(item, dict) and "id" in item]

    async def tool_templates(self, channel: Channel, data: dict) -> list:
        reply = await self.send(channel, "GET", self._base(channel) + "/api/templates",
                                headers=self._headers(channel))
        templates = (reply.json() or {}).get("data") or []
        return [{"id": str(item["id"]), "name": item.get("name", "")} for item in templates
                if isinstance(item, dict) and "id" in item and item.get("type", "campaign") in ("campaign",
                                                                                               "campaign_visual")]

    async def delete(self, channel: Channel, release: Release) -> None:
        """(can_delete is False: only the reason.)"""
        raise Rejected("a Listmonk campaign, once sent, is in its subscribers' inboxes: it cannot be unsent "
                       "(Listmonk's own campaign record stays in its archive)")


PROVIDER = ListmonkProvider()
