"""LinkedIn Page, an organization the member administers: the same app and Posts API as LinkedIn, posts as
urn:li:organization:<id>. After consent the user picks the page (between steps) from the organizations
LinkedIn lists as theirs to administer, each with its logo (organizations' logoV2, an asset whose download URL
the Images API gives; a page whose logo LinkedIn does not give is listed without one). What it shares with
LinkedIn is in linkedin_shared.py.
"""
from __future__ import annotations

import re
from typing import Optional
from urllib.parse import quote

from ..catalogue import ChannelAccount
from .base import Channel, Connected, PublishError, Rejected, Release, analytics_figures
from .linkedin_shared import LINKEDIN_PAGE_LIMIT, LinkedInProviderBase, needs_choice, organization_id

# The roles that may post as the page (organizationAcls roles); the others (analysts, ads) may not.
POSTING_ROLES = ("ADMINISTRATOR", "CONTENT_ADMINISTRATOR")
_LOGO_ASSET = re.compile(r"urn:li:(?:digitalmediaAsset|image):([A-Za-z0-9_-]{1,100})")


def logo_image(organization: Optional[dict]) -> Optional[str]:
    """The image URN of an organization's logo (logoV2's cropped one, else the original; a digital media
    asset's id is its image's id), or None without one."""
    logo = organization.get("logoV2") if isinstance(organization, dict) else None
    assets = [logo.get(name) for name in ("cropped", "original")] if isinstance(logo, dict) else []
    match = next(filter(None, (_LOGO_ASSET.fullmatch(asset) for asset in assets if isinstance(asset, str))), None)
    return f"urn:li:image:{match[1]}" if match else None


class LinkedInPageProvider(LinkedInProviderBase):
    identifier = "linkedin-page"
    between_steps = True
    scopes = ("openid", "profile", "w_member_social", "r_organization_social", "w_organization_social",
              "rw_organization_admin")
    required_scopes = ("w_organization_social", "rw_organization_admin")
    missing_scope_advice = ("LinkedIn Page needs the Community Management API product on the LinkedIn app "
                            "(LinkedIn reviews it), then connect again")
    operator_guide = (
        "Use the same app as LinkedIn (https://www.linkedin.com/developers/apps, LINKEDIN_CLIENT_ID and "
        "LINKEDIN_CLIENT_SECRET). Posting as a page needs the \"Community Management API\" product, which LinkedIn "
        "grants only after a review (a registered legal entity, a use-case description and a screencast; its "
        "Development tier allows a few admins for testing): it brings the scopes r_organization_social, "
        "w_organization_social and rw_organization_admin, and refresh tokens (365 days). LinkedIn asks that it "
        "be the only product on its app, so a separate app is usually needed for pages. Add the redirect URL "
        "{FRONTEND_URL}/integrations/social/linkedin-page. After consent rustiz lists the pages the member "
        "administers (or is content administrator of) and the user picks one.")

    async def connect(self, channel: Channel) -> Connected:
        """The member who consented; the channel becomes the page once one is chosen (choose)."""
        return Connected(self.member_account(await self.read_member(channel)))

    async def step_choices(self, channel: Channel) -> list:
        return [{"id": page.internal_id, "name": page.name, "picture": page.picture}
                for page in await self._pages(channel)]

    async def choose(self, channel: Channel, choice: str) -> Connected:
        wanted = organization_id(choice)
        page = next((page for page in await self._pages(channel) if page.internal_id == wanted), None)
        if page is None:
            raise Rejected(f"the LinkedIn member does not administer the page {str(choice)[:40]!r}, or LinkedIn does not "
                           "let them post as it")
        return Connected(page, session={"organization": f"urn:li:organization:{page.internal_id}"})

    async def author(self, channel: Channel) -> str:
        chosen = organization_id(channel.session.get("organization") or channel.credentials.get("organization"))
        if chosen is None:
            raise needs_choice("LinkedIn page")
        return f"urn:li:organization:{chosen}"

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        """The page's followers (networkSizes) and its posts' lifetime totals (organizationalEntityShareStatistics)."""
        page = await self.author(channel)
        reply = await self.send(channel, "GET", self.rest_url(
            f"networkSizes/{quote(page, safe='')}?edgeType=COMPANY_FOLLOWED_BY_MEMBER"),
            what="the page's followers (networkSizes)", headers=self.rest_headers(channel))
        size = reply.json() if isinstance(reply.json(), dict) else {}
        totals = await self._share_statistics(channel, page, "")
        return analytics_figures({"Followers": size.get("firstDegreeSize"), **totals})

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        page = await self.author(channel)
        kind = "ugcPosts" if release.id.startswith("urn:li:ugcPost:") else "shares"
        return analytics_figures(await self._share_statistics(channel, page, f"&{kind}=List({quote(release.id, safe='')})"))

    async def _share_statistics(self, channel: Channel, page: str, which: str) -> dict:
        reply = await self.send(channel, "GET", self.rest_url(
            f"organizationalEntityShareStatistics?q=organizationalEntity&organizationalEntity={quote(page, safe='')}"
            + which), what="the share statistics", headers=self.rest_headers(channel))
        answer = reply.json() if isinstance(reply.json(), dict) else {}
        elements = answer.get("elements") if isinstance(answer.get("elements"), list) else []
        stats = elements[0].get("totalShareStatistics") if elements and isinstance(elements[0], dict) else None
        stats = stats if isinstance(stats, dict) else {}
        return {"Impressions": stats.get("impressionCount"), "Clicks": stats.get("clickCount"),
                "Likes": stats.get("likeCount"), "Comments": stats.get("commentCount"),
                "Reposts": stats.get("shareCount")}

    async def _pages(self, channel: Channel) -> list:
        """The organizations the member may post as (ADMINISTRATOR or CONTENT_ADMINISTRATOR, APPROVED), with
        their names, as ChannelAccounts."""
        reply = await self.send(channel, "GET", self.rest_url(
            f"organizationAcls?q=roleAssignee&state=APPROVED&start=0&count={LINKEDIN_PAGE_LIMIT}"),
            what="the member's pages (organizationAcls)", headers=self.rest_headers(channel))
        answer = reply.json()
        elements = answer.get("elements") if isinstance(answer, dict) else None
        ids: list = []
        for element in elements if isinstance(elements, list) else []:
            page = organization_id(element.get("organization")) if isinstance(element, dict) else None
            if page and element.get("role") in POSTING_ROLES and page not in ids:
                ids.append(page)
        if not ids:
            return []
        reply = await self.send(channel, "GET", self.rest_url(f"organizations?ids=List({','.join(ids)})"),
                                what="the pages' names (organizations)", headers=self.rest_headers(channel))
        answer = reply.json()
        results = answer.get("results") if isinstance(answer, dict) else None
        results = results if isinstance(results, dict) else {}
        logos = await self._logos(channel, {page: logo_image(results.get(page)) for page in ids})
        return [self._page_account(page, results.get(page))._replace(picture=logos.get(page)) for page in ids]

    async def _logos(self, channel: Channel, images: dict) -> dict:
        """page id -> the download URL of its logo (page id -> image URN or None in `images`), from one batch
        read of the Images API; {} when LinkedIn does not give them (a logo never stops the choice)."""
        wanted = list(dict.fromkeys(urn for urn in images.values() if urn))
        if not wanted:
            return {}
        try:
            reply = await self.send(channel, "GET", self.rest_url(
                f"images?ids=List({','.join(quote(urn, safe='') for urn in wanted)})"),
                what="the pages' logos (images)", headers=self.rest_headers(channel))
        except PublishError:
            return {}
        answer = reply.json()
        results = answer.get("results") if isinstance(answer, dict) else None
        urls = {urn: found.get("downloadUrl") for urn, found in (results or {}).items()
                if isinstance(found, dict)} if isinstance(results, dict) else {}
        return {page: urls[urn] for page, urn in images.items()
                if isinstance(urls.get(urn), str) and urls[urn].startswith("https://")}

    @staticmethod
    def _page_account(page: str, organization: Optional[dict]) -> ChannelAccount:
        organization = organization if isinstance(organization, dict) else {}
        name = organization.get("localizedName")
        vanity = organization.get("vanityName")
        return ChannelAccount(page, name if isinstance(name, str) and name else f"LinkedIn page {page}",
                              vanity if isinstance(vanity, str) and vanity else None)


PROVIDER = LinkedInPageProvider()
