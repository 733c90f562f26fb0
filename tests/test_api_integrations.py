"""The public API routes: /health, is-connected and the channel list in Postiz's exact JSON shape."""
from __future__ import annotations

import pytest

from support import Database, api, auth


def by_id(channels: list) -> list:
    return sorted(channels, key=lambda channel: channel["id"])


def test_health_is_200_ok_text_plain_without_auth(server):
    status, headers, body = server.request("GET", "/health")
    assert (status, body) == (200, b"ok")
    assert headers["content-type"].startswith("text/plain")


def test_is_connected_answers_connected_true(server):
    for prefix in ("/public/v1", "/api/public/v1"):
        assert api(server, "GET", prefix + "/is-connected") == (200, {"connected": True})


def test_integrations_on_an_empty_database_is_an_empty_list(server):
    status, _, body = server.request("GET", "/public/v1/integrations", auth(server.key))
    assert (status, body) == (200, b"[]")


@pytest.fixture
def channels(server):
    """Two customers and channels for this server's organization, plus a deleted one and another org's."""
    db = Database(server)
    acme = db.customer("Acme")
    globex = db.customer("Globex")
    other_org, other_key = db.organization()
    other_customer = db.customer("Not yours", other_org)
    ids = {
        "x": db.channel("Acme on X", "x", picture="https://cdn.example/x.png", profile="acme",
                        customer_id=acme),
        "linkedin": db.channel("Globex page", "linkedin-page", picture=None, profile="globex-inc",
                               disabled=True, customer_id=globex),
        "mastodon": db.channel("Loose channel", "mastodon", picture="/uploads/m.png", profile=None),
        "deleted": db.channel("Deleted one", "x", profile="gone", customer_id=acme, deleted=True),
        "other": db.channel("Other org channel", "bluesky", profile="other", organization_id=other_org,
                            customer_id=other_customer),
    }
    return {"ids": ids, "acme": acme, "globex": globex, "other_key": other_key, "other_customer": other_customer}


def expected_channels(channels) -> dict:
    ids = channels["ids"]
    return {
        "x": {"id": ids["x"], "name": "Acme on X", "identifier": "x", "picture": "https://cdn.example/x.png",
              "disabled": False, "profile": "acme", "customer": {"id": channels["acme"], "name": "Acme"}},
        "linkedin": {"id": ids["linkedin"], "name": "Globex page", "identifier": "linkedin-page", "picture": None,
                     "disabled": True, "profile": "globex-inc",
                     "customer": {"id": channels["globex"], "name": "Globex"}},
        "mastodon": {"id": ids["mastodon"], "name": "Loose channel", "identifier": "mastodon",
                     "picture": "/uploads/m.png", "disabled": False, "profile": None},
    }


def test_integrations_list_channels_in_postiz_shape_without_deleted_ones(server, channels):
    expected = expected_channels(channels)
    for prefix in ("/public/v1", "/api/public/v1"):
        status, listed = api(server, "GET", prefix + "/integrations")
        assert status == 200
        assert by_id(listed) == by_id(expected.values())
    # `customer` is left out, not null, when a channel has none.
    loose = next(channel for channel in listed if channel["id"] == channels["ids"]["mastodon"])
    assert "customer" not in loose


def test_integrations_group_filters_by_customer(server, channels):
    expected = expected_channels(channels)
    assert api(server, "GET", f"/public/v1/integrations?group={channels['acme']}") == (200, [expected["x"]])
    assert api(server, "GET", f"/public/v1/integrations?group={channels['globex']}") == (
        200, [expected["linkedin"]])
    assert api(server, "GET", "/public/v1/integrations?group=no-such-customer") == (200, [])
    # Another organization's customer id does not reveal its channels.
    assert api(server, "GET", f"/public/v1/integrations?group={channels['other_customer']}") == (200, [])


def test_integrations_never_show_another_organizations_channels(server, channels):
    status, listed = api(server, "GET", "/public/v1/integrations")
    assert channels["ids"]["other"] not in {channel["id"] for channel in listed}

    status, listed = api(server, "GET", "/public/v1/integrations", key=channels["other_key"])
    assert status == 200
    assert listed == [{"id": channels["ids"]["other"], "name": "Other org channel", "identifier": "bluesky",
                       "picture": None, "disabled": False, "profile": "other",
                       "customer": {"id": channels["other_customer"], "name": "Not yours"}}]
    status, listed = api(server, "GET", f"/public/v1/integrations?group={channels['acme']}", key=channels["other_key"])
    assert (status, listed) == (200, [])


def test_integrations_need_a_valid_key(server, channels):
    assert server.request("GET", "/public/v1/integrations")[::2] == (401, b'{"msg":"No API Key found"}')
    assert server.request("GET", "/public/v1/integrations", auth("1" * 64))[::2] == (
        401, b'{"msg":"Invalid API key"}')
