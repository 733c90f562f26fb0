"""LinkedIn, a member's own profile: OAuth 2.0 through the operator's LinkedIn app (LINKEDIN_CLIENT_ID /
LINKEDIN_CLIENT_SECRET), posts as urn:li:person:<id> through the versioned Posts API, thread parts as
comments. What it shares with LinkedIn Page is in linkedin_shared.py.
"""
from __future__ import annotations

from .base import Channel, Connected
from .linkedin_shared import LinkedInProviderBase


class LinkedInProvider(LinkedInProviderBase):
    identifier = "linkedin"
    scopes = ("openid", "profile", "w_member_social")
    required_scopes = ("w_member_social",)
    missing_scope_advice = ('add the products "Sign In with LinkedIn using OpenID Connect" and "Share on LinkedIn" '
                            "to the LinkedIn app, then connect again")
    operator_guide = (
        "Create an app at https://www.linkedin.com/developers/apps (it must be linked to a LinkedIn Page you "
        "administer; any page will do). Under Products add \"Sign In with LinkedIn using OpenID Connect\" and "
        "\"Share on LinkedIn\": both are self-serve and free, and grant the scopes openid, profile and "
        "w_member_social. Under Auth add the redirect URL {FRONTEND_URL}/integrations/social/linkedin and copy the "
        "Client ID and Client Secret into LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET. Access tokens last 60 "
        "days; LinkedIn gives refresh tokens only to apps it approved for them (Community Management API), so "
        "without one the channel asks to be connected again every 60 days.")

    async def connect(self, channel: Channel) -> Connected:
        member = await self.read_member(channel)
        return Connected(self.member_account(member), session={"author": f"urn:li:person:{member['sub']}"})

    async def author(self, channel: Channel) -> str:
        """urn:li:person:<sub>, from the channel's session; read again (and kept) when it has none."""
        author = channel.session.get("author") or channel.credentials.get("author")
        if isinstance(author, str) and author.startswith("urn:li:person:"):
            return author
        member = await self.read_member(channel)
        author = f"urn:li:person:{member['sub']}"
        channel.save_session({**channel.session, "author": author})
        return author


PROVIDER = LinkedInProvider()
