"""Short links (issue 26): the organization's preference (GET/PUT /organization "shortLink"), a post's links replaced
at publish time by {FRONTEND_URL}/s/<code> (the stored post keeps its text), /s/<code> redirecting and counting
clicks per day with bots, link-preview fetchers and HEAD apart, GET /posts/:id/links, the "not applied" report,
a FRONTEND_URL nobody can reach refused under "yes", a retry reusing its codes, and Dub, Short.io and Kutt
(local fakes following their documented APIs) used when configured, their failures publishing the long links.
Hostile: forged, oversized and fuzzed codes, another organization's post."""
from __future__ import annotations

import http.client
import json
import random
import re
import string
import time

import pytest

from conftest import LOCAL_FAKES
from fakes import FakePlatform, answer
from support import (API, FAST_RETRIES, Database, api, channel_post, dict_rows, get_post, iso, mcp_tool_call,
                     notifications, post_body, settled, two_organizations, wait_for, webhook_channel)

FRONTEND = "https://social.example.com"
PUBLIC = {**LOCAL_FAKES, **FAST_RETRIES, "FRONTEND_URL": FRONTEND}
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"
SHORT = re.compile(re.escape(FRONTEND) + r"/s/([A-Za-z0-9_-]+)")


@pytest.fixture(scope="module")
def shared(start_module_server):
    return start_module_server(env=PUBLIC)


@pytest.fixture(scope="module")
def channel(shared, module_receiver) -> str:
    return webhook_channel(shared, module_receiver, "Links hook")


def set_preference(server, value: str) -> dict:
    status, organization = api(server, "PUT", f"{API}/organization", {"shortLink": value})
    assert status == 200 and organization["shortLink"] == value, organization
    return organization


def post_with_links(server, channel: str, content: str, short_link: bool = True, type: str = "now") -> list:
    status, created = api(server, "POST", f"{API}/posts", post_body(channel_post(channel, content), type=type,
                                                                    shortLink=short_link))
    assert status == 201, created
    return created


def published_content(receiver, post_id: str) -> str:
    sent = wait_for(lambda: [post for post in receiver.published if post["id"] == post_id], bool)
    return sent[-1]["content"]


def follow(server, code: str, agent: str = BROWSER, method: str = "GET") -> tuple:
    """(status, headers with lower-case names, body) of /s/<code>, the redirect not followed."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.putrequest(method, f"/s/{code}", skip_accept_encoding=True)
        if agent:
            connection.putheader("User-Agent", agent)
        connection.endheaders()
        reply = connection.getresponse()
        return reply.status, {name.lower(): value for name, value in reply.getheaders()}, reply.read()
    finally:
        connection.close()


def links_of(server, post_id: str, key: str | None = None) -> tuple:
    return api(server, "GET", f"{API}/posts/{post_id}/links", key=key)


def test_the_preference_is_ask_by_default_and_put_changes_it(shared):
    status, organization = api(shared, "GET", f"{API}/organization")
    assert status == 200 and organization["shortLink"] == "ask"
    for wrong in ("maybe", "", 1, None, True, ["yes"]):
        status, refused = api(shared, "PUT", f"{API}/organization", {"shortLink": wrong})
        assert status == 400 and "shortLink must be one of the following values: ask, yes, no" in json.dumps(refused)
    status, organization = api(shared, "PUT", f"{API}/organization", {"shortLink": "no", "timezone": "Europe/Paris"})
    assert status == 200 and (organization["shortLink"], organization["timezone"]) == ("no", "Europe/Paris")
    status, organization = api(shared, "PUT", f"{API}/organization", {"name": "Links Inc"})  # left as it is
    assert status == 200 and organization["shortLink"] == "no"
    assert api(shared, "GET", f"{API}/organization")[1]["shortLink"] == "no"
    set_preference(shared, "ask")


def test_a_published_post_s_links_redirect_and_count_people_and_bots_apart(shared, channel, module_receiver):
    set_preference(shared, "yes")
    text = ('<p>Read <a href="https://example.org/a?x=1&amp;y=2">this</a> https://example.org/a?x=1&amp;y=2, '
            'and https://example.net/b.</p>')
    [created] = post_with_links(shared, channel, text)
    assert "shortLink" not in created
    sent = published_content(module_receiver, created["postId"])
    codes = SHORT.findall(sent)
    assert len(codes) == 3 and len(set(codes)) == 2 and "example.org" not in sent and "example.net" not in sent
    assert sent.endswith(f"{FRONTEND}/s/{codes[2]}.</p>")  # (the full stop stays the sentence's)
    assert get_post(shared, created["postId"])["content"] == text  # the stored post keeps its text

    first, second = codes[0], codes[2]
    status, headers, _ = follow(shared, first)
    assert status == 302 and headers["location"] == "https://example.org/a?x=1&y=2"
    assert "set-cookie" not in headers and headers["cache-control"] == "no-store"
    for agent in ("Twitterbot/1.0", "facebookexternalhit/1.1", "Slackbot-LinkExpanding 1.0", "curl/8.5.0",
                  "Mozilla/5.0 (compatible; Discordbot/2.0)", "TelegramBot (like TwitterBot)", "WhatsApp/2.23", ""):
        assert follow(shared, first, agent)[0] == 302
    assert follow(shared, first, method="HEAD")[0] == 302
    assert follow(shared, second)[0] == 302 and follow(shared, second)[0] == 302

    status, answer_ = links_of(shared, created["postId"])
    assert status == 200
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert answer_ == {"links": [
        {"url": "https://example.org/a?x=1&y=2", "short": f"{FRONTEND}/s/{first}", "clicks": 1, "botClicks": 9,
         "days": [{"date": today, "clicks": 1}]},
        {"url": "https://example.net/b", "short": f"{FRONTEND}/s/{second}", "clicks": 2, "botClicks": 0,
         "days": [{"date": today, "clicks": 2}]}]}


def test_clicks_are_listed_per_day(shared, channel, module_receiver):
    set_preference(shared, "yes")
    [created] = post_with_links(shared, channel, "<p>Day by day https://example.org/daily</p>")
    [code] = SHORT.findall(published_content(module_receiver, created["postId"]))
    db = Database(shared)
    db.execute("INSERT INTO short_link_click (code, day, clicks, bot_clicks) VALUES (?, ?, ?, ?)", code, "2026-01-02", 5, 1)
    db.execute("INSERT INTO short_link_click (code, day, clicks, bot_clicks) VALUES (?, ?, ?, ?)", code, "2026-01-01", 3, 0)
    follow(shared, code)
    [link] = links_of(shared, created["postId"])[1]["links"]
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert (link["clicks"], link["botClicks"]) == (9, 1)
    assert link["days"] == [{"date": "2026-01-01", "clicks": 3}, {"date": "2026-01-02", "clicks": 5},
                            {"date": today, "clicks": 1}]


def test_short_link_not_applied_is_said_in_the_answer(shared, channel, module_receiver):
    set_preference(shared, "no")
    [created] = post_with_links(shared, channel, "<p>Long https://example.org/kept</p>", type="draft")
    assert created["shortLink"] == 'not applied: the organization\'s short-link preference is "no"'
    [unasked] = post_with_links(shared, channel, "<p>Long https://example.org/kept</p>", short_link=False, type="draft")
    assert "shortLink" not in unasked
    set_preference(shared, "yes")
    [no_link] = post_with_links(shared, channel, "<p>No link here</p>", type="draft")
    assert no_link["shortLink"] == "not applied: the post has no http(s) link to shorten"
    # under "no", a post goes out with its links as written
    set_preference(shared, "no")
    [sent] = post_with_links(shared, channel, "<p>As written https://example.org/as-written</p>")
    assert "https://example.org/as-written" in published_content(module_receiver, sent["postId"])
    assert links_of(shared, sent["postId"])[1] == {"links": []}
    set_preference(shared, "ask")


def test_the_mcp_schedule_tool_reports_a_short_link_not_applied(shared, channel):
    set_preference(shared, "no")
    result = mcp_tool_call(shared, shared.key, "integrationSchedulePostTool", {"socialPost": [{
        "integrationId": channel, "isPremium": False, "date": iso(3600), "shortLink": True, "type": "draft",
        "settings": [], "postsAndComments": [{"content": "<p>Via MCP https://example.org/mcp</p>", "attachments": []}]}]})
    [created] = result["structuredContent"]["output"]
    assert created["shortLink"] == 'not applied: the organization\'s short-link preference is "no"'
    set_preference(shared, "ask")


def test_an_edit_asks_again(shared, channel):
    set_preference(shared, "no")
    [created] = post_with_links(shared, channel, "<p>Edit me https://example.org/edit</p>", type="draft")
    status, edited = api(shared, "PUT", f"{API}/posts/{created['postId']}", {"shortLink": True})
    assert status == 200 and edited["shortLink"].startswith("not applied")
    status, refused = api(shared, "PUT", f"{API}/posts/{created['postId']}", {"shortLink": "yes"})
    assert status == 400 and "shortLink must be a boolean value" in json.dumps(refused)
    set_preference(shared, "ask")
    status, edited = api(shared, "PUT", f"{API}/posts/{created['postId']}", {"shortLink": True})
    assert status == 200 and "shortLink" not in edited
    assert dict_rows(shared.database, "SELECT post_id FROM short_link_wanted WHERE post_id = ?", created["postId"])


def test_a_retry_reuses_its_codes(shared, channel, module_receiver):
    set_preference(shared, "yes")
    module_receiver.fail_next("POST", "/hook", 503, {"message": "busy"})
    [created] = post_with_links(shared, channel, "<p>Twice https://example.org/retry and https://example.org/two</p>")
    post = settled(shared, created["postId"])
    assert post["state"] == "PUBLISHED"
    attempts = [json.loads(request.body)["post"]["content"] for request in module_receiver.requests
                if request.body and json.loads(request.body).get("post", {}).get("id") == created["postId"]]
    assert len(attempts) == 2 and SHORT.findall(attempts[0]) == SHORT.findall(attempts[1])
    rows = dict_rows(shared.database, "SELECT code, url FROM short_link WHERE post_id = ?", created["postId"])
    assert sorted(row["url"] for row in rows) == ["https://example.org/retry", "https://example.org/two"]


def test_forged_oversized_and_fuzzed_codes_are_404_pages_that_do_not_repeat_them(shared):
    rng = random.Random(26)
    codes = ["AAAAAAAA", "a" * 33, "a" * 5000, "%3Cscript%3Ealert(1)%3C%2Fscript%3E", "..%2F..%2Fetc%2Fpasswd",
             "%00%00", "%E2%98%83", "abc", "x" * 8 + "%0d%0aLocation:%20https://evil.example"]
    codes += ["".join(rng.choice(string.ascii_letters + string.digits + "-_~.") for _ in range(rng.randint(1, 60)))
              for _ in range(40)]
    for code in codes:
        status, headers, body = follow(shared, code)
        assert status == 404, (code, status)
        assert "location" not in headers and b"<script>" not in body
        if headers["content-type"].startswith("text/html"):  # (a path the router cannot read: its own JSON 404)
            assert code.encode() not in body and headers["content-security-policy"] == "default-src 'none'"
    assert follow(shared, "AAAAAAAA", method="HEAD")[0] == 404


def test_another_organization_s_post_links_are_404(shared, channel, module_receiver):
    set_preference(shared, "yes")
    [created] = post_with_links(shared, channel, "<p>Ours https://example.org/ours</p>")
    published_content(module_receiver, created["postId"])
    other = two_organizations(shared)
    status, refused = links_of(shared, created["postId"], key=other["other_key"])
    assert status == 404, refused
    assert links_of(shared, "no-such-post")[0] == 404
    assert links_of(shared, "x" * 5000)[0] in (404, 414, 431)
    set_preference(shared, "ask")


def test_yes_with_a_frontend_url_nobody_can_reach_is_refused_naming_it(start_server, module_receiver):
    server = start_server(env={**LOCAL_FAKES, "FRONTEND_URL": "http://127.0.0.1:9"})
    channel = webhook_channel(server, module_receiver, "Loopback hook")
    set_preference(server, "yes")
    status, refused = api(server, "POST", f"{API}/posts", post_body(
        channel_post(channel, "<p>See https://example.org/x</p>"), type="draft", shortLink=True))
    assert status == 400 and "FRONTEND_URL" in json.dumps(refused) and "a loopback address" in json.dumps(refused)
    set_preference(server, "ask")  # asked: the post is kept, and the answer says why its links stay long
    [created] = post_with_links(server, channel, "<p>See https://example.org/x</p>", type="draft")
    assert created["shortLink"].startswith("not applied: short links are http://127.0.0.1:9/s/") \
        and "FRONTEND_URL" in created["shortLink"]
    # a post that wanted short links when FRONTEND_URL was public, published once it no longer is: long links, said
    status, later = api(server, "POST", f"{API}/posts", post_body(
        channel_post(channel, "<p>Later https://example.org/later</p>"), type="schedule", date=iso(2)))
    assert status == 201, later
    organization = api(server, "GET", f"{API}/organization")[1]["id"]
    Database(server).execute("INSERT INTO short_link_wanted (post_id, organization_id) VALUES (?, ?)",
                             later[0]["postId"], organization)
    assert published_content(module_receiver, later[0]["postId"]) == "<p>Later https://example.org/later</p>"
    notice = wait_for(lambda: [text for text in notifications(server) if "not shortened" in text], bool)[0]
    assert "FRONTEND_URL" in notice


# --- Dub, Short.io, Kutt --------------------------------------------------------------------------------------

class FakeShortener(FakePlatform):
    """Dub (POST /links {url, domain} -> {shortLink}), Short.io (POST /links {originalURL, domain} ->
    {shortURL}) and Kutt (POST /api/v2/links {target, domain} -> {link}), with their error shapes."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind, self.made = kind, 0
        self.route("POST", "/links|/api/v2/links", self.create)

    def create(self, request):
        body = request.json()
        self.made += 1
        target = {"Dub": "url", "Short.io": "originalURL", "Kutt": "target"}[self.kind]
        assert isinstance(body[target], str)
        if self.kind == "Dub":
            return answer(200, {"id": f"link_{self.made}", "shortLink": f"https://dub.sh/d{self.made}", "url": body["url"]})
        if self.kind == "Short.io":
            return answer(200, {"idString": f"s{self.made}", "shortURL": f"https://short.io/s{self.made}",
                                "originalURL": body["originalURL"]})
        return answer(201, {"id": f"k{self.made}", "link": f"https://kutt.it/k{self.made}", "target": body["target"]})

    def settings(self) -> dict:
        return {"Dub": {"DUB_TOKEN": "dub-token", "DUB_API_ENDPOINT": self.url},
                "Short.io": {"SHORT_IO_SECRET_KEY": "short-secret", "SHORT_IO_API_URL": self.url},
                "Kutt": {"KUTT_API_KEY": "kutt-key", "KUTT_API_ENDPOINT": self.url + "/api/v2"}}[self.kind]

    def error(self) -> tuple:
        """The service's documented error answer (status, body)."""
        return {"Dub": (401, {"error": {"code": "unauthorized", "message": "Unauthorized: Invalid API key."}}),
                "Short.io": (400, {"error": "Domain not found", "message": "Domain not found"}),
                "Kutt": (400, {"error": "Target is invalid."})}[self.kind]


@pytest.mark.parametrize("kind", ["Dub", "Short.io", "Kutt"])
def test_a_configured_shortener_is_used_and_its_failure_publishes_the_long_links(start_server, receiver, kind):
    fake = FakeShortener(kind)
    try:
        server = start_server(env={**LOCAL_FAKES, **FAST_RETRIES, **fake.settings()})  # (FRONTEND_URL: loopback is fine)
        channel = webhook_channel(server, receiver, "Hook")
        set_preference(server, "yes")
        [created] = post_with_links(server, channel, "<p>Go https://example.org/ext and https://example.org/ext</p>")
        sent = published_content(receiver, created["postId"])
        short = {"Dub": "https://dub.sh/d1", "Short.io": "https://short.io/s1", "Kutt": "https://kutt.it/k1"}[kind]
        assert sent == f"<p>Go {short} and {short}</p>" and fake.made == 1
        request = fake.requests[0]
        header = {"Dub": ("authorization", "Bearer dub-token"), "Short.io": ("authorization", "short-secret"),
                  "Kutt": ("x-api-key", "kutt-key")}[kind]
        assert request.headers[header[0]] == header[1]
        assert links_of(server, created["postId"])[1]["links"][0] == {
            "url": "https://example.org/ext", "short": short, "clicks": 0, "botClicks": 0, "days": []}

        status, body = fake.error()
        fake.fail_next("POST", ".*", status, body)
        [failing] = post_with_links(server, channel, "<p>Kept https://example.org/long</p>")
        assert published_content(receiver, failing["postId"]) == "<p>Kept https://example.org/long</p>"
        assert settled(server, failing["postId"])["state"] == "PUBLISHED"
        words = {"Dub": "Unauthorized: Invalid API key.", "Short.io": "Domain not found", "Kutt": "Target is invalid."}
        notice = wait_for(lambda: [text for text in notifications(server) if "original links" in text], bool)[0]
        assert f"{kind} did not shorten its links: HTTP {status}: {words[kind]}" in notice

        fake.fail_next("POST", ".*", 502, b"<html>" + b"proxy trouble " * 100 + b"</html>")
        [proxied] = post_with_links(server, channel, "<p>Kept https://example.org/proxy</p>")
        assert published_content(receiver, proxied["postId"]) == "<p>Kept https://example.org/proxy</p>"
        notice = wait_for(lambda: [text for text in notifications(server) if "HTTP 502" in text], bool)[0]
        assert "proxy trouble" not in notice and kind in notice
    finally:
        fake.close()
