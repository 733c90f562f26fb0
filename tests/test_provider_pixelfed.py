"""Servers that speak Mastodon's client API (issue 28): Pixelfed and Friendica through the picker's own entries
(one-click sign-in with the coarse scopes they know), any of them through the Mastodon entry, the software
detected at connect (the version's "compatible; <Software>", else nodeinfo) and its rules applied; and deleting
a status (Mastodon's, Pixelfed's and Friendica's DELETE /api/v1/statuses/:id), driven in-process."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import client_for_fakes
from fakes.mastodon import FakeMastodon
from support import (
    API, api, channel_session, connect, consent_link, notifications, png_file, redirect_query, refused_post, run,
    scheduled, settled, uploaded, visit,
)
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import Channel, NeedsReconnect, Release


@pytest.fixture
def server(start_server_with_fakes):
    return start_server_with_fakes(env={"RUSTIZ_RETRY_BASE": "0.2"})


@pytest.fixture
def fakes():
    made = []

    def make(**options) -> FakeMastodon:
        made.append(FakeMastodon(**options))
        return made[-1]
    yield make
    for fake in made:
        fake.close()


def one_click(server, identifier: str, fake: FakeMastodon) -> tuple:
    """(the consent URL's query, the channels page's query) of connecting through GET /social/<identifier>."""
    status, body = api(server, "GET", f"{API}/social/{identifier}?instance={fake.url}")
    assert status == 200, body
    authorize = {name: values[0] for name, values in parse_qs(urlsplit(body["url"]).query).items()}
    callback = urlsplit(consent_link(body["url"]))
    status, headers = visit(server, callback.path + "?" + callback.query)
    assert status == 303, status
    return authorize, redirect_query(headers["location"])


def channel_row(server, channel_id: str) -> dict:
    status, channels = api(server, "GET", f"{API}/integrations")
    return next(channel for channel in channels if channel["id"] == channel_id)


def test_pixelfed_connects_in_one_click_and_a_post_needs_a_photo_its_comments_do_not(server, fakes):
    pixelfed = fakes(software="pixelfed", max_characters=2000, max_media=10)
    authorize, back = one_click(server, "pixelfed", pixelfed)
    assert authorize["scope"] == "read write", "Pixelfed (Laravel Passport) refuses Mastodon's granular scopes"
    assert back["notice"] == "connected", back
    channel = channel_row(server, back["channel"])
    assert (channel["identifier"], channel["name"]) == ("pixelfed", "Ada Lovelace")
    assert "needs at least one image or video" in refused_post(server, channel["id"], "<p>Words alone</p>")
    # The server's own limits: 2,000 characters and 10 photos, not stock Mastodon's 500 and 4.
    post = settled(server, scheduled(server, channel["id"], ("<p>" + "a" * 1500 + "</p>",
                                                             [uploaded(server, png_file())] * 5),
                                     "<p>A comment, no photo</p>"), stop_at_error=True)
    assert [part["state"] for part in [post, *post["thread"]]] == ["PUBLISHED"] * 2, post
    photo_post, comment = pixelfed.published
    assert len(photo_post["media_attachments"]) == 5 and comment["in_reply_to_id"] == photo_post["id"]


def test_the_pixelfed_entry_refuses_a_server_running_other_software(server, fakes):
    mastodon = fakes()
    authorize, back = one_click(server, "pixelfed", mastodon)
    assert back["problem"] == "refused", back
    assert any("runs Mastodon, not Pixelfed: add it as a Mastodon channel" in text for text in notifications(server))
    status, channels = api(server, "GET", f"{API}/integrations")
    assert channels == []


def test_the_mastodon_entry_signs_in_to_a_pixelfed_server_with_the_scopes_it_knows(server, fakes):
    pixelfed = fakes(software="pixelfed")
    authorize, back = one_click(server, "mastodon", pixelfed)
    assert authorize["scope"] == "read write" and back["notice"] == "connected", (authorize, back)
    assert pixelfed.requests_to("POST", "/oauth/token")[0].form()["scope"] == "read write"
    channel = channel_row(server, back["channel"])
    assert channel["identifier"] == "mastodon"
    assert "needs at least one image or video" in refused_post(server, channel["id"], "<p>Words alone</p>")


def test_a_pixelfed_server_added_as_mastodon_is_known_by_its_nodeinfo_and_keeps_pixelfed_rules(server, fakes):
    pixelfed = fakes(software="pixelfed", version_names_software=False)
    status, channel = connect(server, "mastodon", pixelfed.credentials())
    assert status == 201, channel
    assert pixelfed.requests_to("GET", "/nodeinfo/2.0"), "the version named no software: nodeinfo was asked"
    assert "needs at least one image or video" in refused_post(server, channel["id"], "<p>Words alone</p>")
    post = settled(server, scheduled(server, channel["id"], ("<p>A photo</p>", [uploaded(server, png_file())])),
                   stop_at_error=True)
    assert post["state"] == "PUBLISHED", post


def test_friendica_connects_in_one_click_with_its_long_posts_and_media_through_api_v1(server, fakes):
    friendica = fakes(software="friendica", max_characters=200000, v2_media=False)
    authorize, back = one_click(server, "friendica", friendica)
    assert authorize["scope"] == "read write" and back["notice"] == "connected", (authorize, back)
    channel = channel_row(server, back["channel"])
    assert channel["identifier"] == "friendica"
    post = settled(server, scheduled(server, channel["id"], ("<p>" + "long " * 2000 + "</p>",
                                                             [uploaded(server, png_file())]),
                                     "<p>and a reply</p>"), stop_at_error=True)
    assert [part["state"] for part in [post, *post["thread"]]] == ["PUBLISHED"] * 2, post
    assert len(friendica.requests_to("POST", "/api/v1/media")) == 1, "no /api/v2/media: the v1 upload is used"
    assert len(friendica.published[0]["media_attachments"]) == 1


def test_a_file_larger_than_the_server_takes_is_refused_before_it_is_sent(server, fakes):
    pixelfed = fakes(software="pixelfed", image_size_limit=500)
    status, channel = connect(server, "mastodon", pixelfed.credentials())
    assert status == 201 and channel_session(server, channel["id"])["mediaLimits"]["image"] == 500, channel
    post = settled(server, scheduled(server, channel["id"], ("<p>Too big</p>",
                                                             [uploaded(server, png_file(padding=2000))])),
                   stop_at_error=True)
    assert post["state"] == "ERROR" and "takes images up to" in post["error"], post
    assert not pixelfed.requests_to("POST", "/api/v2/media") and not pixelfed.published


@pytest.mark.parametrize("identifier, software", [("mastodon", "mastodon"), ("pixelfed", "pixelfed"),
                                                  ("friendica", "friendica")])
def test_deleting_a_status_removes_it_and_a_status_already_gone_counts_as_deleted(fakes, http, identifier, software):
    fake = fakes(software=software)
    provider = provider_for(identifier)
    channel = Channel("c1", "Ada", fake.credentials(), None, http)
    status_id = str(next(fake.ids))
    fake.statuses[status_id] = {"id": status_id, "content": "Bye"}
    assert provider.can_delete
    run(provider.delete(channel, Release(status_id, f"{fake.url}/@ada/{status_id}")))
    assert fake.deleted == [status_id] and status_id not in fake.statuses
    run(provider.delete(channel, Release(status_id, "")))  # a 404 now: already gone
    refused = Channel("c1", "Ada", {**fake.credentials(), "accessToken": "revoked"}, None, client_for_fakes())
    with pytest.raises(NeedsReconnect):
        run(provider.delete(refused, Release("1", "")))
