"""Client review in Chromium (issue 25): the team shares a post for review from its page; the client opens the
link with JavaScript OFF, comments and approves with plain HTML forms; the post leaves review and goes out; the
client's words show on the post's page beside the team's. The client's page at 1440 and 390 px, light and dark:
axe, no overflow, no placeholder text.

Set RUSTIZ_PAGE_SHOTS=<folder> to keep screenshots."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import open_page, placeholder_text, receivers, show, sideways_overflow  # noqa: F401
from test_web_channels import PICTURE, serious_axe_violations, shoot
from test_web_pages import set_picture
from fakes import answer  # noqa: E402
from support import API, api, channel_post, iso, post_body, settled, webhook_channel  # noqa: E402


def client_page(browser, url: str, width: int, scheme: str, javascript: bool = False):
    """A fresh browser with no session (the client's), JavaScript off unless asked for; the page at `url`."""
    context = browser.new_context(java_script_enabled=javascript, viewport={"width": width, "height": 860},
                                  color_scheme=scheme, timezone_id="UTC")
    context.set_default_timeout(15000)
    page = context.new_page()
    page.problems = []
    page.on("console", lambda message: page.problems.append(message.text) if message.type == "error" else None)
    page.goto(url)
    return context, page


def agents_draft(server, channel: str, text: str, seconds_ahead: float) -> str:
    status, made = api(server, "POST", f"{API}/api-keys", {"name": f"agent {text[:8]}", "scope": "drafts"})
    assert status == 201, made
    status, answer = api(server, "POST", f"{API}/posts", post_body(channel_post(channel, f"<p>{text}</p>"),
                                                                    type="draft", date=iso(seconds_ahead)),
                         key=made["apiKey"])
    assert status == 201, answer
    return answer[0]["postId"]


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (390, "dark")))
def test_an_editor_shares_a_post_and_the_client_approves_it_without_javascript(
        start_server_with_fakes, open_page, receivers, browser, width, scheme):
    server = start_server_with_fakes()
    receiver, = receivers(1)
    channel = webhook_channel(server, receiver, "Company news")
    post_id = agents_draft(server, channel, "Spring menu is out #food", 45)

    team = open_page(server, width, scheme)
    show(team, f"#/post/{post_id}")
    panel = team.locator("section.comments-panel")
    expect(panel.get_by_role("heading", name="Comments")).to_be_visible()
    panel.get_by_label("Add a comment").fill("Client asked for the spring menu")
    panel.get_by_role("button", name="Comment", exact=True).click()
    expect(panel.locator("li.comment.from-team")).to_contain_text("Client asked for the spring menu")
    expect(panel.get_by_label("The client may approve or ask for changes")).to_be_checked()
    panel.get_by_label("Link lasts (days, 1 to 90)").fill("3")
    panel.get_by_role("button", name="Make a review link").click()
    url = panel.get_by_label("Review link").input_value()
    assert url.startswith(f"{server.url}/p/")
    shoot(team, f"post-share-{width}-{scheme}")

    context, client = client_page(browser, url, width, scheme)
    try:
        expect(client.get_by_role("heading", name="Review this post")).to_be_visible()
        expect(client.get_by_text("Waiting for your review")).to_be_visible()
        expect(client.locator("article.cr-channel")).to_contain_text("Spring menu is out #food")
        expect(client.locator("article.cr-channel")).to_contain_text("Company news")
        client.get_by_label("Your name").fill("Cleo from Bistro")
        client.get_by_label("Your comment").fill("Lovely, but say 'spring menu' first")
        client.get_by_role("button", name="Send comment").click()
        expect(client.get_by_role("status")).to_contain_text("your comment was sent")
        expect(client.locator("li.cr-comment.cr-client")).to_contain_text("Lovely, but say 'spring menu' first")
        assert sideways_overflow(client) <= 0 and placeholder_text(client) == []
        shoot(client, f"client-review-{width}-{scheme}")
        client.get_by_label("Your name").fill("Cleo from Bistro")
        client.get_by_role("button", name="Approve").click()
        expect(client.get_by_role("status")).to_contain_text("the post is approved")
        expect(client.get_by_text("Approved and scheduled")).to_be_visible()
        expect(client.get_by_role("button", name="Approve")).to_have_count(0)
        shoot(client, f"client-review-approved-{width}-{scheme}")
        assert client.problems == []
    finally:
        context.close()

    status, post = api(server, "GET", f"{API}/posts/{post_id}")
    assert (post["state"], post["review"]) == ("QUEUE", None)
    assert settled(server, post_id, timeout=90)["state"] == "PUBLISHED"
    assert any(b"Spring menu is out" in request.body for request in receiver.requests_to("POST", "/hook"))

    show(team, f"#/post/{post_id}")
    client_comments = team.locator("li.comment.from-client")
    expect(client_comments.first).to_contain_text("Lovely, but say 'spring menu' first")
    expect(client_comments.last).to_contain_text("approved the post")
    expect(client_comments.first.locator(".who-badge")).to_have_text("Client")
    assert sideways_overflow(team) <= 0 and placeholder_text(team) == []
    shoot(team, f"post-comments-{width}-{scheme}")
    assert serious_axe_violations(team) == []
    assert team.problems == []


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (1440, "dark"), (390, "light"), (390, "dark")))
def test_the_client_page_reads_well_on_a_desktop_and_a_phone(start_server_with_fakes, receivers, browser, width,
                                                               scheme):
    server = start_server_with_fakes()
    made = receivers(2)
    channels = [webhook_channel(server, receiver, name) for receiver, name in zip(made, ("Bistro blog", "Bistro news"))]
    made[0].route("GET", "/avatar.png", lambda request: answer(200, PICTURE, {"Content-Type": "image/png"}))
    set_picture(server, channels[0], made[0].url + "/avatar.png")
    text = "<p>A long line without breaks: https://example.com/" + "x" * 120 + "</p><p>Second paragraph</p>"
    status, agent = api(server, "POST", f"{API}/api-keys", {"name": "agent", "scope": "drafts"})
    status, made_posts = api(server, "POST", f"{API}/posts", post_body(*(channel_post(c, text) for c in channels),
                                                                        type="draft", date=iso(86400)),
                             key=agent["apiKey"])
    assert status == 201, made_posts
    post_id = made_posts[0]["postId"]
    status, link = api(server, "POST", f"{API}/posts/{post_id}/preview-link", {"allowApproval": True})
    assert status == 201, link
    assert api(server, "POST", f"{API}/posts/{post_id}/comments", {"content": "Ready for Cleo"})[0] == 201
    context, page = client_page(browser, link["url"], width, scheme, javascript=True)  # (axe runs as a script)
    try:
        expect(page.locator("article.cr-channel")).to_have_count(2)
        picture = page.locator("article.cr-channel .cr-avatar img")
        expect(picture).to_have_count(1)
        assert picture.evaluate("(img) => img.decode().then(() => img.naturalWidth)") > 0
        assert sideways_overflow(page) <= 0 and placeholder_text(page) == []
        shoot(page, f"client-page-{width}-{scheme}")
        assert serious_axe_violations(page) == []
        page.goto(link["url"][:-4] + "AAAA")
        expect(page.get_by_role("heading", name="This review link does not work")).to_be_visible()
        assert serious_axe_violations(page) == []
        shoot(page, f"client-page-404-{width}-{scheme}")
    finally:
        context.close()


def test_a_viewer_reads_comments_an_author_writes_them_and_only_an_editor_shares(open_page, start_server_with_fakes,
                                                                                 receivers):
    from test_api_roles import add_person
    from test_web_roles import signed_in_as
    server = start_server_with_fakes()
    receiver, = receivers(1)
    post_id = agents_draft(server, webhook_channel(server, receiver, "Company news"), "Menu for Monday", 86400)
    assert api(server, "POST", f"{API}/posts/{post_id}/comments", {"content": "From the key"})[0] == 201
    for role, writes, shares in (("viewer", False, False), ("author", True, False), ("editor", True, True)):
        add_person(server, f"{role}@example.com", role)
        page = signed_in_as(open_page, server, f"{role}@example.com", 1440, "light")
        page.goto(f"/#/post/{post_id}")
        panel = page.locator("section.comments-panel")
        expect(panel.locator("li.comment")).to_contain_text("From the key")
        expect(panel.locator("li.comment .who-badge")).to_have_text("API key")
        expect(panel.get_by_role("button", name="Delete")).to_have_count(0)  # (not theirs, and not an admin)
        expect(panel.get_by_label("Add a comment")).to_have_count(1 if writes else 0)
        expect(panel.get_by_role("button", name="Make a review link")).to_have_count(1 if shares else 0)
        assert page.problems == []
        page.context.close()
