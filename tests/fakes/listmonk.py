"""A stand-in for a Listmonk server: Basic auth of an API user, lists, templates, campaigns created as
drafts and started with PUT /status, and Listmonk's error bodies ({"message": ...})."""
from __future__ import annotations

import base64

from fakes import FakePlatform, FakeRequest, Reconnect, answer


class FakeListmonk(FakePlatform):
    post_settings = {"subject": "Shipping rustiz", "preview": "What is new", "list": "3"}

    def __init__(self, username: str = "rustiz-api", token: str = "lm-token-1"):
        super().__init__()
        self.username, self.token = username, token
        self.campaigns: dict = {}  # id -> the campaign as created, with its status
        self.route("GET", "/api/lists", lambda request: self.authorized(request) or answer(200, {"data": {
            "results": [{"id": 3, "name": "Newsletter", "type": "public"}, {"id": 5, "name": "Beta", "type": "private"}],
            "total": 2, "per_page": request.query.get("per_page"), "page": 1}}))
        self.route("GET", "/api/templates", lambda request: self.authorized(request) or answer(200, {"data": [
            {"id": 1, "name": "Default campaign template", "type": "campaign", "is_default": True},
            {"id": 2, "name": "Default transactional template", "type": "tx", "is_default": False}]}))
        self.route("POST", "/api/campaigns", self.create_campaign)
        self.route("PUT", r"/api/campaigns/(?P<id>\d+)/status", self.change_status)

    def account(self) -> tuple:
        """(name, profile) of the channel credentials() connect: what this fake's account says."""
        return f"Listmonk at {self.url.removeprefix('http://')}", "rustiz-api"

    def credentials(self) -> dict:
        return {"url": self.url, "username": self.username, "password": self.token}

    def authorized(self, request: FakeRequest):
        expected = "Basic " + base64.b64encode(f"{self.username}:{self.token}".encode()).decode()
        if request.headers.get("authorization") == expected:
            return None
        return answer(403, {"message": "invalid API credentials"})

    def create_campaign(self, request: FakeRequest):
        refused = self.authorized(request)
        if refused:
            return refused
        campaign = request.json()
        if not campaign.get("lists") or not all(isinstance(item, int) for item in campaign["lists"]):
            return answer(400, {"message": "invalid list IDs"})
        campaign_id = 100 + len(self.campaigns)
        self.campaigns[campaign_id] = {**campaign, "id": campaign_id, "status": "draft"}
        return answer(200, {"data": self.campaigns[campaign_id]})

    def change_status(self, request: FakeRequest):
        refused = self.authorized(request)
        if refused:
            return refused
        campaign = self.campaigns.get(int(request.match["id"]))
        if campaign is None:
            return answer(400, {"message": "Campaign not found."})
        if campaign["status"] == "running":
            return answer(400, {"message": "Campaign is already running."})
        campaign["status"] = request.json()["status"]
        self.published.append(campaign)
        return answer(200, {"data": campaign})


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeListmonk


def credentials_at(url: str) -> dict:
    """Credentials that aim a channel at `url`."""
    return {"url": url, "username": "api", "password": "token"}


def _renew(fake, extras):
    fake.token = "lm-token-2"
    return fake.credentials()


def _other_account(fake, extras):
    fake.username, fake.token = "another-api-user", "lm-token-other"
    return fake.credentials()


RECONNECT = Reconnect(_renew, lambda fake: {**fake.credentials(), "password": "wrong-token"},
                      "invalid API credentials", _other_account)
