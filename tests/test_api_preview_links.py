"""Client review links (issue 25): POST/DELETE /posts/:id/preview-link, and the page /p/<token> a client opens
without an account, as plain HTML forms: comment, approve (as POST /posts/:id/approve), request changes (as
reject). Hostile: forged, revoked and expired tokens, another organization's post, a token of one post used
on another's routes, fuzzed tokens and paths, cross-site forms, forms without the page's token, repeats."""
from __future__ import annotations

import hashlib
import http.client
import itertools
import json
import random
import re
import string
from urllib.parse import urlencode, urlsplit

import pytest

from conftest import LOCAL_FAKES
from smtp_server import bodies
from support import API, Database, api, channel_post, connect_database, iso, png_file, post_body, settled, \
    two_organizations, wait_for, webhook_channel

NUMBERS = itertools.count(1)


@pytest.fixture(scope="module")
def shared(start_module_server):
    return start_module_server(env=LOCAL_FAKES)


@pytest.fixture(scope="module")
def channels(shared, module_receiver) -> tuple:
    return webhook_channel(shared, module_receiver, "Hook one"), \
        webhook_channel(shared, module_receiver, "Hook two", "/hook?second=1")


@pytest.fixture(scope="module")
def agent(shared) -> str:
    status, made = api(shared, "POST", f"{API}/api-keys", {"name": "agent", "scope": "drafts"})
    assert status == 201, made
    return made["apiKey"]


def draft_for_review(server, channels: tuple, agent: str, date: str | None = None) -> list:
    """A post on every channel of `channels` made with a drafts key (it waits for review); its root ids."""
    text = f"<p>Client post {next(NUMBERS)}</p>"
    status, answer = api(server, "POST", f"{API}/posts",
                         post_body(*(channel_post(channel, text) for channel in channels), type="draft",
                                   date=date or iso(3 * 86400)), key=agent)
    assert status == 201, answer
    return [item["postId"] for item in answer]


def make_link(server, post_id: str, **body) -> dict:
    status, link = api(server, "POST", f"{API}/posts/{post_id}/preview-link", body)
    assert status == 201, link
    return link


def exchange(server, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> tuple:
    """(status, headers, text) of one request, redirects not followed."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode(errors="replace")
    finally:
        connection.close()


def page(server, token: str, query: str = "") -> tuple:
    return exchange(server, "GET", f"/p/{token}{query}")


def form_token(html: str) -> str:
    return re.search(r'name="form" value="([^"]+)"', html).group(1)


def send(server, token: str, action: str, fields: dict, form: str | None = None, headers: dict | None = None):
    """A form post from the page, as a browser sends it (its own origin), with the page's form token."""
    if form is None:
        form = form_token(page(server, token)[2])
    sent = {"Content-Type": "application/x-www-form-urlencoded", "Origin": server.url,
            "Sec-Fetch-Site": "same-origin", **(headers or {})}
    return exchange(server, "POST", f"/p/{token}/{action}", urlencode({"form": form, **fields}).encode(), sent)


def states(server, post_id: str) -> tuple:
    status, post = api(server, "GET", f"{API}/posts/{post_id}")
    assert status == 200, post
    return post["state"], post["review"]


def test_a_link_is_absolute_under_frontend_url_random_and_stored_hashed(shared, channels, agent):
    post_id = draft_for_review(shared, channels, agent)[0]
    link = make_link(shared, post_id, expiresInDays=7, allowApproval=True)
    assert link["url"] == f"{shared.url}/p/{link['token']}" and len(link["token"]) >= 43
    assert link["expiresAt"] > iso(6.9 * 86400) and link["expiresAt"] < iso(7.1 * 86400)
    with connect_database(shared.database) as db:
        rows = db.execute("SELECT token_hash FROM preview_link").fetchall()
    assert all(link["token"] not in row[0] for row in rows) and len({row[0] for row in rows}) == len(rows)
    assert make_link(shared, post_id)["token"] != link["token"]


@pytest.mark.parametrize("body, field", [({"expiresInDays": 0}, "expiresInDays"), ({"expiresInDays": 91}, "expiresInDays"),
                                         ({"expiresInDays": "7"}, "expiresInDays"), ({"expiresInDays": 2.5}, "expiresInDays"),
                                         ({"expiresInDays": True}, "expiresInDays"), ({"allowApproval": "yes"}, "allowApproval")])
def test_out_of_range_or_mistyped_fields_are_a_400_naming_the_field(shared, channels, agent, body, field):
    post_id = draft_for_review(shared, channels[:1], agent)[0]
    status, answer = api(shared, "POST", f"{API}/posts/{post_id}/preview-link", body)
    assert status == 400 and field in answer["message"][0], answer


def test_another_organizations_post_and_unknown_ids_are_404(shared, channels, agent):
    world = two_organizations(shared)
    theirs = world["db"].post(world["theirs"], iso(86400), organization_id=world["other_org"])
    for post_id in (theirs, "no-such-post"):
        assert api(shared, "POST", f"{API}/posts/{post_id}/preview-link", {})[0] == 404
        assert api(shared, "DELETE", f"{API}/posts/{post_id}/preview-link")[0] == 404
    mine = draft_for_review(shared, channels[:1], agent)[0]
    assert api(shared, "POST", f"{API}/posts/{mine}/preview-link", {}, key=world["other_key"])[0] == 404


def test_the_page_shows_every_channel_of_the_post_its_date_and_leaks_nothing_else(shared, channels, agent):
    roots = draft_for_review(shared, channels, agent, date="2031-03-04T09:30:00.000Z")
    other = draft_for_review(shared, channels[:1], agent)[0]
    link = make_link(shared, roots[0], allowApproval=True)
    status, headers, html = page(shared, link["token"])
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in headers["content-security-policy"] and headers["referrer-policy"] == "same-origin"
    assert headers["cache-control"] == "no-store" and "<script" not in html
    assert "Hook one" in html and "Hook two" in html and html.count("Client post") == 2
    assert "Tuesday 4 March 2031, 09:30" in html and "(UTC)" in html
    assert "Waiting for your review" in html and "Approve" in html and "Request changes" in html
    for secret in (*roots, other, shared.key, channels[0], channels[1], "/public/v1"):
        assert secret not in html
    status, post = api(shared, "GET", f"{API}/posts/{other}")
    assert post["content"] not in html


def test_a_client_comments_and_the_team_reads_it_with_a_notification(shared, channels, agent):
    roots = draft_for_review(shared, channels, agent)
    root = roots[0]
    link = make_link(shared, root)
    status, headers, _ = send(shared, link["token"], "comment", {"name": "Cleo Client", "text": "Love <it> & more"})
    assert status == 303 and headers["location"] == f"/p/{link['token']}?done=comment#top"
    html = page(shared, link["token"], "?done=comment")[2]
    assert "Love &lt;it&gt; &amp; more" in html and "Cleo Client" in html and "your comment was sent" in html
    status, listing = api(shared, "GET", f"{API}/posts/{root}/comments")
    assert status == 200
    assert [(c["author"]["type"], c["author"]["name"], c["content"]) for c in listing["comments"]] == [
        ("client", "Cleo Client", "Love <it> & more")]
    status, notes = api(shared, "GET", f"{API}/notifications")
    assert any("Cleo Client commented" in n["content"] and n["postId"] in roots for n in notes["notifications"])
    # without allowApproval: no decision buttons, and the decision routes refuse
    assert "Request changes" not in page(shared, link["token"])[2]
    assert send(shared, link["token"], "approve", {"name": "Cleo"})[0] == 403
    assert states(shared, root) == ("DRAFT", "review")


def test_approve_queues_every_channel_as_the_api_approve_does_and_again_changes_nothing(shared, channels, agent):
    roots = draft_for_review(shared, channels, agent)
    link = make_link(shared, roots[1], allowApproval=True)
    status, headers, _ = send(shared, link["token"], "approve", {"name": "Cleo", "text": "Perfect"})
    assert status == 303 and "done=approved" in headers["location"]
    assert [states(shared, root) for root in roots] == [("QUEUE", None)] * 2
    html = page(shared, link["token"])[2]
    assert "Approved and scheduled" in html and ">Approve<" not in html
    status, headers, _ = send(shared, link["token"], "approve", {"name": "Cleo"})
    assert status == 303 and "done=approved" in headers["location"]
    kinds = [c["kind"] for c in api(shared, "GET", f"{API}/posts/{roots[0]}/comments")[1]["comments"]]
    assert kinds == ["approved"]  # (the repeat recorded nothing)
    approvals = [n for n in api(shared, "GET", f"{API}/notifications")[1]["notifications"]
                 if "Cleo approved" in n["content"] and n["postId"] in roots]
    assert len(approvals) == 1


def test_request_changes_keeps_a_draft_with_the_reason_then_approval_is_still_possible(shared, channels, agent):
    root = draft_for_review(shared, channels[:1], agent)[0]
    link = make_link(shared, root, allowApproval=True)
    status, _, html = send(shared, link["token"], "request-changes", {"name": "Cleo", "text": " "})
    assert status == 400 and "Please write what should change" in html and 'value="Cleo"' in html
    assert send(shared, link["token"], "request-changes", {"name": "Cleo", "text": "Warmer words"})[0] == 303
    status, post = api(shared, "GET", f"{API}/posts/{root}")
    assert (post["state"], post["review"], post["reviewReason"]) == ("DRAFT", "rejected", "Warmer words")
    assert "Changes requested" in page(shared, link["token"])[2]
    assert send(shared, link["token"], "approve", {"name": "Cleo"})[0] == 303
    assert states(shared, root) == ("QUEUE", None)


def test_approving_a_post_no_longer_in_review_changes_nothing(shared, channels, agent):
    root = draft_for_review(shared, channels[:1], agent)[0]
    link = make_link(shared, root, allowApproval=True)
    # the team takes it back as a plain draft (a person's edit with type draft keeps the review; clear it here)
    with connect_database(shared.database) as db:
        db.execute("UPDATE post SET review = NULL WHERE id = ?", (root,))
    status, _, html = send(shared, link["token"], "approve", {"name": "Cleo"})
    assert status == 409 and "not waiting for review" in html
    assert send(shared, link["token"], "request-changes", {"name": "Cleo", "text": "x"})[0] == 409
    assert states(shared, root) == ("DRAFT", None)


def test_a_published_post_shows_as_published_without_approval(shared, channels, agent, module_receiver):
    status, answer = api(shared, "POST", f"{API}/posts", post_body(channel_post(channels[0], "<p>Out now</p>"),
                                                                    type="now", date=iso()))
    assert status == 201, answer
    root = answer[0]["postId"]
    assert settled(shared, root)["state"] == "PUBLISHED"
    link = make_link(shared, root, allowApproval=True)
    html = page(shared, link["token"])[2]
    assert "Published" in html and ">Approve<" not in html and "Send comment" in html
    assert send(shared, link["token"], "approve", {"name": "Cleo"})[0] == 303  # (nothing to do: it is out)


def test_revoked_expired_and_forged_tokens_are_one_plain_404(shared, channels, agent):
    root = draft_for_review(shared, channels[:1], agent)[0]
    revoked, kept, expired = (make_link(shared, root, allowApproval=True) for _ in range(3))
    status, answer = api(shared, "DELETE", f"{API}/posts/{root}/preview-link?token={revoked['token']}")
    assert status == 200 and answer == {"revoked": 1}
    assert api(shared, "DELETE", f"{API}/posts/{root}/preview-link?token={revoked['token']}")[0] == 404
    with connect_database(shared.database) as db:
        db.execute("UPDATE preview_link SET expires_at = ? WHERE token_hash = ?",
                   (iso(-1), hashlib.sha256(expired["token"].encode()).hexdigest()))
    forged = kept["token"][:-2] + ("AA" if not kept["token"].endswith("AA") else "BB")
    for token in (revoked["token"], expired["token"], forged):
        status, headers, html = page(shared, token)
        assert status == 404 and "This review link does not work" in html and headers["content-type"].startswith("text/html")
        assert send(shared, token, "approve", {"name": "x"}, form="anything")[0] == 404
    assert page(shared, kept["token"])[0] == 200
    status, answer = api(shared, "DELETE", f"{API}/posts/{root}/preview-link")
    assert status == 200 and answer == {"revoked": 2}  # kept and expired (not yet revoked)
    assert page(shared, kept["token"])[0] == 404


def test_a_token_is_bound_to_its_own_post_group(shared, channels, agent):
    mine, other = (draft_for_review(shared, channels[:1], agent)[0] for _ in range(2))
    link = make_link(shared, mine, allowApproval=True)
    # revoking through another post's route does not reach it
    assert api(shared, "DELETE", f"{API}/posts/{other}/preview-link?token={link['token']}")[0] == 404
    assert page(shared, link["token"])[0] == 200
    # the form token of one link does not act through another's
    other_link = make_link(shared, other, allowApproval=True)
    mine_form = form_token(page(shared, link["token"])[2])
    assert send(shared, other_link["token"], "approve", {"name": "x"}, form=mine_form)[0] == 403
    assert states(shared, other) == ("DRAFT", "review")


def test_cross_site_forms_and_forms_without_the_page_token_do_not_act(shared, channels, agent):
    root = draft_for_review(shared, channels[:1], agent)[0]
    token = make_link(shared, root, allowApproval=True)["token"]
    for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}, {"Origin": "null"}):
        status, _, html = send(shared, token, "approve", {"name": "x"}, headers=headers)
        assert status == 403 and "Not sent" in html
    assert send(shared, token, "approve", {"name": "x"}, form="")[0] == 403
    assert send(shared, token, "approve", {"name": "x"}, form="x" * 32)[0] == 403
    status, _, _ = exchange(shared, "POST", f"/p/{token}/approve", b'{"name": "x"}',
                            {"Content-Type": "application/json", "Origin": shared.url})
    assert status == 415
    assert states(shared, root) == ("DRAFT", "review")


def test_oversized_names_comments_and_bodies_are_refused(shared, channels, agent):
    root = draft_for_review(shared, channels[:1], agent)[0]
    token = make_link(shared, root)["token"]
    assert send(shared, token, "comment", {"name": "x" * 101, "text": "hi"})[0] == 400
    assert send(shared, token, "comment", {"name": "Cleo", "text": "x" * 5001})[0] == 400
    assert send(shared, token, "comment", {"name": "Cleo", "text": "x" * 5000})[0] == 303
    status, _, _ = exchange(shared, "POST", f"/p/{token}/comment", b"text=" + b"x" * 40000,
                            {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 413


def test_fuzzed_tokens_and_paths_never_answer_5xx(shared, channels, agent):
    root = draft_for_review(shared, channels[:1], agent)[0]
    token = make_link(shared, root, allowApproval=True)["token"]
    rng = random.Random(25)
    alphabet = string.ascii_letters + string.digits + "-_.~%!$&'()*+,;=:@"
    candidates = ["", "a", "%00", "%2e%2e", "..", token + "x", token.upper(), token[:20], "x" * 5000, "%ff%fe",
                  token + "%00", "é" * 30]
    candidates += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))) for _ in range(25)]
    for candidate in candidates:
        for method, suffix in (("GET", ""), ("POST", "/comment"), ("POST", "/approve"), ("GET", "/approve"),
                               ("POST", "/request-changes/x")):
            try:
                status = exchange(shared, method, f"/p/{candidate}{suffix}", b"name=x&form=y",
                                  {"Content-Type": "application/x-www-form-urlencoded"})[0]
            except (http.client.InvalidURL, UnicodeEncodeError):
                continue  # (a path the client library will not send)
            assert status < 500, (candidate, suffix, status)
    for body in (b"\xff\xfe", b"form=%ff&name=%ff", b"&&&===", b"a=" * 50):
        status = exchange(shared, "POST", f"/p/{token}/comment", body,
                          {"Content-Type": "application/x-www-form-urlencoded", "Origin": shared.url})[0]
        assert status < 500 and status != 303
    assert states(shared, root) == ("DRAFT", "review")


def test_requests_per_address_are_limited(start_server, backend):
    server = start_server()
    db = two_organizations(server)["db"]
    post_id = db.post(db.channel("Sky two", "bluesky"), iso(86400), state="DRAFT")
    token = make_link(server, post_id)["token"]
    form = form_token(page(server, token)[2])
    answers = [send(server, token, "comment", {"name": "Cleo", "text": f"note {n}"}, form=form)[0]
               for n in range(31)]
    assert answers[:30] == [303] * 30 and answers[30] == 429
    status, headers, html = send(server, token, "comment", {"name": "Cleo", "text": "again"}, form=form)
    assert status == 429 and int(headers["retry-after"]) > 0 and "try again" in html
    assert urlsplit(server.url).hostname == "127.0.0.1"


def test_channel_pictures_come_through_the_link_by_place_only(shared, agent, module_receiver):
    from fakes import answer
    module_receiver.route("GET", "/face.png", lambda request: answer(200, png_file(), {"Content-Type": "image/png"}))
    channel = webhook_channel(shared, module_receiver, "Pictured", "/hook?pictured=1")
    with connect_database(shared.database) as db:
        db.execute("UPDATE integration SET picture = ? WHERE id = ?", (module_receiver.url + "/face.png", channel))
    root = draft_for_review(shared, (channel,), agent)[0]
    token = make_link(shared, root)["token"]
    assert f'src="/p/{token}/picture/0"' in page(shared, token)[2]
    status, headers, _ = exchange(shared, "GET", f"/p/{token}/picture/0")
    assert status == 200 and headers["content-type"] == "image/png" and "sandbox" in headers["content-security-policy"]
    for place in ("1", "-1", "x", "00000000000000000000001"):
        assert exchange(shared, "GET", f"/p/{token}/picture/{place}")[0] == 404
    assert exchange(shared, "GET", f"/p/{token[:-3]}xyz/picture/0")[0] == 404


def test_media_show_as_thumbnails_only_when_rustiz_serves_them(shared):
    db = Database(shared)
    db.organization_id = api(shared, "GET", f"{API}/organization")[1]["id"]  # (the module made others too)
    channel = db.channel("Pictures", "bluesky")
    own = f"{shared.url}/uploads/2026/01/01/cat.png"
    image = json.dumps([{"id": "1", "path": own, "alt": "A cat on a mat"},
                        {"id": "2", "path": "https://elsewhere.example/tracker.png"},
                        {"id": "3", "path": f"{shared.url}/uploads/2026/01/01/clip.mp4"}, "junk", {"path": 5}])
    post_id = db.post(channel, iso(86400), state="DRAFT", image=image)
    html = page(shared, make_link(shared, post_id)["token"])[2]
    assert f'<img src="{own}" alt="A cat on a mat"' in html
    assert "elsewhere.example" not in html and ">Picture<" in html and ">Video<" in html
    broken = db.post(channel, iso(86400), state="DRAFT", image="not json")
    assert page(shared, make_link(shared, broken)["token"])[0] == 200


def test_a_client_s_decision_is_mailed_to_the_admins_and_editors(start_server_with_fakes, receiver):
    from smtp_server import SmtpServer
    from test_api_mail import QUICK_MAIL, add_member
    smtp = SmtpServer()
    try:
        server = start_server_with_fakes(env={**QUICK_MAIL, "RUSTIZ_SMTP_URL": smtp.url})
        for role in ("admin", "editor", "author"):
            add_member(server, f"{role}@example.com", role)
        status, agent_key = api(server, "POST", f"{API}/api-keys", {"name": "agent", "scope": "drafts"})
        root = draft_for_review(server, (webhook_channel(server, receiver),), agent_key["apiKey"])[0]
        token = make_link(server, root, allowApproval=True)["token"]
        assert send(server, token, "request-changes", {"name": "Cleo", "text": "Warmer please"})[0] == 303
        wait_for(lambda: [item for item in smtp.messages if "asked for changes" in str(item["message"]["Subject"])],
                 lambda found: len(found) == 2)
        asked = [item for item in smtp.messages if "asked for changes" in str(item["message"]["Subject"])]
        assert sorted(address for item in asked for address in item["to"]) == ["admin@example.com", "editor@example.com"]
        text, _ = bodies(asked[0]["message"])
        assert "Warmer please" in text and f"{QUICK_MAIL['FRONTEND_URL']}/#/post/" in text
    finally:
        smtp.stop()


def test_an_approval_with_an_oversized_comment_changes_nothing(shared, channels, agent):
    root = draft_for_review(shared, channels[:1], agent)[0]
    token = make_link(shared, root, allowApproval=True)["token"]
    status, _, html = send(shared, token, "approve", {"name": "Cleo", "text": "x" * 5001})
    assert status == 400 and "too long" in html
    assert states(shared, root) == ("DRAFT", "review")


def test_a_client_s_words_and_decisions_are_audit_entries_of_a_client(shared, channels, agent):
    root = draft_for_review(shared, channels[:1], agent)[0]
    token = make_link(shared, root, allowApproval=True)["token"]
    assert send(shared, token, "comment", {"name": "Audra Client", "text": "Nice"})[0] == 303
    assert send(shared, token, "approve", {"name": "Audra Client"})[0] == 303
    status, log = api(shared, "GET", f"{API}/audit?action=post.approved")
    assert status == 200, log
    mine = [entry for entry in log["entries"] if entry["subject"]["id"] == root]
    assert [(e["actor"]["type"], e["actor"]["name"], e["subject"]["type"]) for e in mine] == [
        ("client", "Audra Client", "post")]
    comments = [e for e in api(shared, "GET", f"{API}/audit?action=comment.created")[1]["entries"]
                if e["actor"]["name"] == "Audra Client"]
    assert len(comments) == 1 and comments[0]["address"] == "127.0.0.1"
    links = api(shared, "GET", f"{API}/audit?action=preview_link.created")[1]["entries"]
    assert any(e["subject"]["id"] == root for e in links)
