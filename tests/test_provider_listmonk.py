"""The Listmonk publisher against a fake Listmonk: access checked with the API user's token, a campaign
created as a draft and then started, what happens when the start fails, and the tools."""
from __future__ import annotations

from conftest import provider_fixtures
from fakes.listmonk import FakeListmonk
from support import (waiting_for_reconnect, channel_session, connect, png_file, refresh_needed, refused_post, scheduled, settled, trigger,
                     uploaded)

SETTINGS = {"subject": "March news", "preview": "What changed this month", "list": "3"}


listmonk, server, channel = provider_fixtures("listmonk", FakeListmonk, names=("listmonk", "server", "channel"))


def test_connect_checks_access_with_basic_auth_of_the_api_user(server, listmonk, channel):
    host = listmonk.url.removeprefix("http://")
    assert (channel["name"], channel["profile"]) == (f"Listmonk at {host}", "rustiz-api")
    assert listmonk.requests_to("GET", "/api/lists")[0].headers["authorization"].startswith("Basic ")


def test_a_wrong_token_is_refused_with_listmonk_s_words_and_a_hint(server, listmonk):
    status, answer = connect(server, "listmonk", {**listmonk.credentials(), "password": "wrong"})
    assert status == 400
    assert "invalid API credentials" in answer["message"] and "API user" in answer["message"]


def test_a_server_that_is_not_listmonk_is_refused(server, listmonk):
    status, answer = connect(server, "listmonk", {**listmonk.credentials(), "url": listmonk.url + "/elsewhere"})
    assert status == 400 and "HTTP 404" in answer["message"], answer


def test_a_campaign_is_created_for_the_list_and_started(server, listmonk, channel):
    image = uploaded(server, png_file())
    post_id = scheduled(server, channel["id"], "<p>Hello <strong>readers</strong></p>",
                        settings={**SETTINGS, "template": "1"}, images=[image], provider="listmonk")
    post = settled(server, post_id)
    assert post["state"] == "PUBLISHED", post["error"]
    assert (post["releaseId"], post["releaseURL"]) == ("100", f"{listmonk.url}/admin/campaigns/100")
    [campaign] = listmonk.published
    assert campaign["status"] == "running"
    assert (campaign["name"], campaign["subject"], campaign["lists"], campaign["type"], campaign["content_type"],
            campaign["template_id"], campaign["altbody"]) == (
        "March news", "March news", [3], "regular", "html", 1, "Hello readers")
    assert campaign["body"] == (
        '<div style="display:none;max-height:0;overflow:hidden;mso-hide:all">What changed this month</div>\n'
        f'<p>Hello <strong>readers</strong></p>\n<p><img src="{image["path"]}" alt="" style="max-width:100%" /></p>')
    assert channel_session(server, channel["id"]).get("drafts") == {}


def test_a_start_that_fails_for_a_while_reuses_the_same_draft(server, listmonk, channel):
    listmonk.fail_next("PUT", r"/api/campaigns/\d+/status", 503, {"message": "busy"})
    post_id = scheduled(server, channel["id"], "<p>Once</p>", settings=SETTINGS, provider="listmonk")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    assert len(listmonk.requests_to("POST", "/api/campaigns")) == 1 and len(listmonk.campaigns) == 1
    assert len(listmonk.requests_to("PUT", r"/api/campaigns/\d+/status")) == 2 and len(listmonk.published) == 1


def test_a_refused_start_says_that_a_draft_campaign_exists(server, listmonk, channel):
    listmonk.fail_next("PUT", r"/api/campaigns/\d+/status", 400, {"message": "The list has no subscribers."})
    post_id = scheduled(server, channel["id"], "<p>Nobody</p>", settings=SETTINGS, provider="listmonk")
    post = settled(server, post_id)
    assert post["state"] == "ERROR"
    assert post["error"].startswith("Failed on Listmonk (HTTP 400)") and "The list has no subscribers." in post["error"]
    assert "created as draft 100" in post["error"] and "/admin/campaigns/100" in post["error"]
    assert listmonk.campaigns[100]["status"] == "draft"


def test_a_lost_answer_to_the_start_may_have_sent_it_so_it_is_not_sent_again(server, listmonk, channel):
    listmonk.drop_next("PUT", r"/api/campaigns/\d+/status", after_handling=True)
    post_id = scheduled(server, channel["id"], "<p>Lost</p>", settings=SETTINGS, provider="listmonk")
    post = settled(server, post_id)
    assert post["state"] == "ERROR" and "may have been published" in post["error"]
    assert f"{listmonk.url}/admin/campaigns" in post["error"] and len(listmonk.published) == 1


def test_a_429_on_the_draft_is_retried(server, listmonk, channel):
    listmonk.fail_next("POST", "/api/campaigns", 429, {"message": "too many requests"}, {"Retry-After": "1"})
    post_id = scheduled(server, channel["id"], "<p>Soon</p>", settings=SETTINGS, provider="listmonk")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    assert len(listmonk.campaigns) == 1


def test_revoked_credentials_flag_the_channel_and_the_post_waits_for_a_reconnect(server, listmonk, channel):
    listmonk.token = "revoked"
    post_id = scheduled(server, channel["id"], "<p>Nope</p>", settings=SETTINGS, provider="listmonk")
    post = waiting_for_reconnect(server, post_id)
    assert "HTTP 403" in post["error"] and listmonk.campaigns == {}
    assert refresh_needed(server, channel["id"])


def test_a_list_or_template_that_is_not_an_id_and_threads_are_refused_at_post_time(server, listmonk, channel):
    assert "settings.list" in refused_post(server, channel["id"], "<p>x</p>",
                                           settings={**SETTINGS, "list": "Newsletter"}, provider="listmonk")
    assert "settings.template" in refused_post(server, channel["id"], "<p>x</p>",
                                               settings={**SETTINGS, "template": "fancy"}, provider="listmonk")
    assert "not 2" in refused_post(server, channel["id"], "<p>a</p>", "<p>b</p>", settings=SETTINGS,
                                   provider="listmonk")
    assert listmonk.campaigns == {}


def test_the_list_and_templates_tools(server, listmonk, channel):
    assert trigger(server, channel["id"], "list") == (200, {"output": [
        {"id": "3", "name": "Newsletter"}, {"id": "5", "name": "Beta"}]})
    assert trigger(server, channel["id"], "templates") == (200, {"output": [
        {"id": "1", "name": "Default campaign template"}]})
