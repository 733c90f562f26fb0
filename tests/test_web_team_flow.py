"""An agency's day in Chromium, end to end with a real SMTP server (aiosmtpd): an admin invites an author and an
editor from Settings → Team; each opens the link from their e-mail and joins; the author writes in the composer,
which only sends for review; the editor approves one draft on To review, and shares the other with the client,
who opens the review link without JavaScript, comments and approves; the post goes out."""
from __future__ import annotations

import datetime
import re

import pytest

from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_pages import open_page, receivers, show  # noqa: F401
from test_web_client_review import client_page
from smtp_server import SmtpServer, bodies
from support import API, FAST_RETRIES, api, iso, settled, webhook_channel

PASSWORD = "correct horse battery"
MAILED = {**FAST_RETRIES, "RUSTIZ_MAIL_POLL_SECONDS": "0.2", "RUSTIZ_MAIL_RETRY_BASE": "0.3",
          "RUSTIZ_MAIL_FROM": "Agency <rustiz@agency.example>"}


def invite_from_team_tab(admin, email: str, role: str) -> None:
    show(admin, "#/settings?tab=team")
    panel = admin.get_by_role("tabpanel", name="Team")
    panel.get_by_label("Email").fill(email)
    panel.get_by_label("Role", exact=True).select_option(label=role)
    panel.get_by_role("button", name="Invite", exact=True).click()
    expect(panel.locator(f"li.team-invite[data-email='{email}']")).to_contain_text(role)


def join_from_the_e_mail(open_page, server, smtp, email: str, name: str):
    """The invite mail's link, opened in the invitee's own browser: name, password, Join → signed in."""
    (mail,) = smtp.wait_for(1, matching=lambda item: email in item["to"])
    link = re.search(r"https?://\S+/#/invite\?token=[\w-]+", bodies(mail["message"])[0]).group(0)
    page = open_page(server, 1440, "light", signed_in=False)
    page.goto(link)
    page.get_by_label("Your name").fill(name)
    page.get_by_label("Choose a password").fill(PASSWORD)
    page.get_by_role("button", name="Join").click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    return page


def write_for_review(author, channel_name: str, text: str, at: datetime.datetime) -> None:
    show(author, "#/compose")
    author.get_by_role("checkbox", name=channel_name).check()
    author.get_by_label("Post", exact=True).fill(text)
    author.get_by_label("Date and time (UTC)").fill(at.strftime("%Y-%m-%dT%H:%M"))
    expect(author.get_by_role("button", name="Schedule")).to_have_count(0)  # (an author's post waits for review)
    author.get_by_role("button", name="Send for review").click()
    expect(author.get_by_role("heading", name="New post")).to_have_count(0)


@pytest.mark.timeout(300)  # (one long story: four people and a client in their browsers, a post that goes out)
def test_an_agency_invites_its_team_writes_reviews_and_its_client_approves_a_post_that_goes_out(
        start_server_with_fakes, open_page, receivers, browser):
    smtp = SmtpServer()
    try:
        server = start_server_with_fakes(env={**MAILED, "RUSTIZ_SMTP_URL": smtp.url})
        receiver, = receivers(1)
        webhook_channel(server, receiver, "Bistro news")
        admin = open_page(server, 1440, "light")
        invite_from_team_tab(admin, "ana@agency.example", "Author")
        invite_from_team_tab(admin, "ed@agency.example", "Editor")

        ana = join_from_the_e_mail(open_page, server, smtp, "ana@agency.example", "Ana Author")
        soon = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=2)).replace(second=0, microsecond=0)
        write_for_review(ana, "Bistro news", "Autumn menu: pumpkin soup is back", soon)
        write_for_review(ana, "Bistro news", "Friday: live jazz from 8 pm", soon)
        waiting = {post["content"]: post["id"] for post in api(server, "GET", f"{API}/posts?state=review")[1]["posts"]}
        assert sorted(waiting) == ["<p>Autumn menu: pumpkin soup is back</p>", "<p>Friday: live jazz from 8 pm</p>"]

        ed = join_from_the_e_mail(open_page, server, smtp, "ed@agency.example", "Ed Editor")
        soup, jazz = waiting["<p>Autumn menu: pumpkin soup is back</p>"], waiting["<p>Friday: live jazz from 8 pm</p>"]
        show(ed, "#/review")
        ed.locator(f"li.review-item[data-id='{soup}'] input.pick").check()
        ed.get_by_role("button", name="Approve selected").click()
        expect(ed.locator("ul.review-list li.review-item")).to_have_count(1)
        assert api(server, "GET", f"{API}/posts/{soup}")[1]["state"] == "QUEUE"

        show(ed, f"#/post/{jazz}")
        panel = ed.locator("section.comments-panel")
        panel.get_by_role("button", name="Make a review link").click()
        url = panel.get_by_label("Review link").input_value()
        context, client = client_page(browser, url, 1440, "light")
        try:
            expect(client.locator("article.cr-channel")).to_contain_text("Friday: live jazz from 8 pm")
            client.get_by_label("Your name").fill("Cleo from Bistro")
            client.get_by_label("Your comment").fill("Perfect, thank you")
            client.get_by_role("button", name="Send comment").click()
            expect(client.get_by_role("status")).to_contain_text("your comment was sent")
            client.get_by_label("Your name").fill("Cleo from Bistro")
            client.get_by_role("button", name="Approve").click()
            expect(client.get_by_text("Approved and scheduled")).to_be_visible()
        finally:
            context.close()
        # (the composer takes whole minutes, up to two ahead: the editor brings it forward rather than the test waiting)
        assert api(server, "PUT", f"{API}/posts/{jazz}", {"date": iso(3)})[0] == 200
        assert settled(server, jazz, timeout=60)["state"] == "PUBLISHED"
        assert any(b"live jazz" in request.body for request in receiver.requests_to("POST", "/hook"))
        show(ana, f"#/post/{jazz}")
        expect(ana.locator("li.comment.from-client").first).to_contain_text("Perfect, thank you")
        for page in (admin, ana, ed):
            assert page.problems == []
    finally:
        smtp.stop()
