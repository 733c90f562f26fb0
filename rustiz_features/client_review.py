"""The client review page: /p/<token>, for someone without an account (issue 25).

A review link (preview_links.py) opens a server-rendered page: the post group as each channel will show it
(channel, picture, text, media), its date in the organization's timezone, the comments, and one plain HTML
form (name and text) whose buttons comment, approve, or request changes. JavaScript is never needed.

Rules:
- The page shows the link's review group only: no other post, no id but the token, no key, nothing of the
  organization but its name. An unknown, forged, revoked or expired token is one 404 page in plain words.
- Every request is counted per client address (REVIEW_REQUESTS_PER_ADDRESS), and every form post again
  (REVIEW_ACTIONS_PER_ADDRESS), as sign-ins are (Store.count_request).
- A form post must come from this server's own page: a browser's Origin and Sec-Fetch-Site must not name
  another site, and the form must carry the link's own form token (kept with the link, written in its page).
  The page's Referrer-Policy is same-origin: the token in its address never leaves for another site, and
  the browser still names the page's origin when it posts the form (no-referrer would make it "null").
  The answer to a post that acted is a 303 back to the page (Post/Redirect/Get).
- Approve does what POST /posts/:id/approve does to each thread awaiting review (review.ReviewApi); Request
  changes what reject does, the client's text as the reason. Approving what is already queued or published
  changes nothing and answers as the first approval did. Both, and every comment, notify the team (a
  notification, and mail.notify_team's "review" e-mail to admins and editors when mail is configured), and
  each is an entry of the audit log (actor "client", with the name the client gave).
"""
from __future__ import annotations

import datetime
import html
import json
from typing import Any, Optional
from urllib.parse import parse_qsl
from _operator import _compare_digest as compare_digest

from rustiz import ApiError, App, Request, Response, hash_api_key, log, route_options
from .api_docs import STRING, documented, parameter
from .catalogue import PROVIDERS
from .pictures import ChannelPictures
from .preview_links import MAX_COMMENT_CHARACTERS, MAX_TOKEN_CHARACTERS, comment_problem
from .review import ReviewApi
from .text import html_to_text
from .web import content_security_policy, refusal_of_cross_site_form
from .storage import channels as channel_store
from .storage import comments as comment_store
from .storage.audit import Actor
from .storage import notifications as notification_store
from .storage import organizations as organization_store
from .storage import posts as post_store
from .storage import preview_links as link_store
from .storage import review as review_store

MAX_NAME_CHARACTERS = 100
FORM_BODY_BYTES = 32 * 1024  # a name, a comment of MAX_COMMENT_CHARACTERS (percent-encoded: up to 9 bytes each)
REVIEW_WINDOW_SECONDS = 15 * 60
REVIEW_REQUESTS_PER_ADDRESS = 300  # pages and form posts per client address per window
REVIEW_ACTIONS_PER_ADDRESS = 30  # comments, approvals and requests for changes per client address per window
COMMENTS_SHOWN = 200
_TOKEN_PARAMETER = parameter("path", "token", "The review link's token")
_HTML_PAGE = {"description": "An HTML page", "content": {"text/html": {"schema": STRING}}}
_BACK_TO_THE_PAGE = ("303", {"description": "Back to the page"})
_THE_PAGE_S_FORM = {"content": {"application/x-www-form-urlencoded": {"schema": STRING}}}  # (form, name, text)
_DONE_NOTICES = {"comment": "Thank you: your comment was sent to the team.",
                 "approved": "Thank you: the post is approved.",
                 "changes": "Thank you: the team will make the changes you asked for."}
_VIDEO_ENDINGS = (".mp4", ".mov", ".webm", ".m4v")
_AUDIT_ACTIONS = {"comment": "comment.created", "approved": "post.approved", "changes": "post.rejected"}


class PageAnswer(Exception):
    """An answer other than the page itself (a refusal, or a redirect), raised from deep in a handler."""

    def __init__(self, response: Response):
        super().__init__(response.status)
        self.response = response


class ClientReviewPage:
    """GET /p/:token, and its form's POST /p/:token/comment, /approve and /request-changes."""

    def __init__(self, app: App):
        self.store, self.config, self.guard = app.store, app.config, app.guard
        self.review: ReviewApi = app.feature(ReviewApi)
        self.pictures: ChannelPictures = app.feature(ChannelPictures)
        self.policy = content_security_policy(app.config)

    # --- routes ------------------------------------------------------------------------------------

    @route_options(authenticated=False)
    @documented("The client review page of a review link: the post on each channel, its comments and a form "
                "(HTML, no JavaScript needed; rustiz)", ("200", _HTML_PAGE), parameters=(_TOKEN_PARAMETER,),
                more_answers={"404": {**_HTML_PAGE, "description": "An unknown, revoked or expired link"}})
    def page(self, request: Request) -> Response:
        try:
            link = self._link(request)
            done = request.query.get("done")
            return self._page(request, link, notice=_DONE_NOTICES.get(done or ""))
        except PageAnswer as answer:
            return answer.response

    @route_options(authenticated=False, body_limit=FORM_BODY_BYTES)
    @documented("Comment from the client review page (an HTML form: name, text, form token; rustiz)",
                _BACK_TO_THE_PAGE, parameters=(_TOKEN_PARAMETER,), request=_THE_PAGE_S_FORM)
    def comment(self, request: Request) -> Response:
        return self._act(request, self._comment)

    @route_options(authenticated=False, body_limit=FORM_BODY_BYTES)
    @documented("Approve from the client review page, as POST /posts/:id/approve does (rustiz)",
                _BACK_TO_THE_PAGE, parameters=(_TOKEN_PARAMETER,), request=_THE_PAGE_S_FORM)
    def approve(self, request: Request) -> Response:
        return self._act(request, self._approve)

    @route_options(authenticated=False, body_limit=FORM_BODY_BYTES)
    @documented("Request changes from the client review page: the post stays a draft, the text is the reason, "
                "as POST /posts/:id/reject does (rustiz)", _BACK_TO_THE_PAGE, parameters=(_TOKEN_PARAMETER,),
                request=_THE_PAGE_S_FORM)
    def request_changes(self, request: Request) -> Response:
        return self._act(request, self._request_changes)

    @route_options(authenticated=False)
    @documented("The picture of the page's n-th channel (from 0), fetched through rustiz as the web app's are "
                "(rustiz); 404 when it has none", ("200", {"description": "A JPEG, PNG, GIF or WebP image"}),
                parameters=(_TOKEN_PARAMETER, parameter("path", "n", "The channel's place on the page, from 0")))
    async def picture(self, request: Request) -> Response:
        try:
            url = await self.store.off_loop(self._picture_url, request)
        except PageAnswer as answer:
            return answer.response
        answer = await self.pictures.picture_answer(url) if url else None
        return answer or Response(404, b"", "text/plain; charset=utf-8", [("Cache-Control", "no-store")])

    def _picture_url(self, request: Request) -> str:
        link = self._link(request)
        place, threads = request.params.get("n", ""), self._threads(link)
        if not place.isdigit() or int(place) >= len(threads):
            return ""
        channel = channel_store.channel_row(self.store, link["organizationId"], threads[int(place)][0]["integrationId"])
        return (channel or {}).get("picture") or ""

    # --- the form's actions ---------------------------------------------------------------------------

    def _act(self, request: Request, action: Any) -> Response:
        try:
            link = self._link(request)
            refusal = refusal_of_cross_site_form(request, self.config.frontend_url)
            if refusal:
                raise PageAnswer(self._message(403, "Not sent", refusal))
            form = self._form(request, link)
            self._count(request, "action", REVIEW_ACTIONS_PER_ADDRESS)
            name = form.get("name", "").strip()
            if not name or len(name) > MAX_NAME_CHARACTERS:
                raise PageAnswer(self._page(request, link, form=form, status=400, problem=(
                    f"Please write your name (at most {MAX_NAME_CHARACTERS} characters).")))
            done = action(request, link, name, form)
            return Response(303, b"", "text/plain; charset=utf-8",
                            [("Location", f"/p/{request.params['token']}?done={done}#top"),
                             ("Cache-Control", "no-store"), ("Referrer-Policy", "same-origin")])
        except PageAnswer as answer:
            return answer.response

    def _comment(self, request: Request, link: dict, name: str, form: dict) -> str:
        text = form.get("text", "")
        if comment_problem(text):
            raise PageAnswer(self._page(request, link, form=form, status=400, problem=(
                f"Please write a comment (at most {MAX_COMMENT_CHARACTERS} characters).")))
        self._record(request, link, name, text.strip(), "comment",
                     f"{name} commented on a post shared for review: “{_excerpt(text)}”")
        return "comment"

    def _approve(self, request: Request, link: dict, name: str, form: dict) -> str:
        if not link["allowApproval"]:
            raise PageAnswer(self._message(403, "Not allowed", "This link lets you read and comment, not approve."))
        text = form.get("text", "").strip()
        if text and comment_problem(text):
            raise PageAnswer(self._page(request, link, form=form, status=400, problem=(
                f"Your comment is too long (at most {MAX_COMMENT_CHARACTERS} characters).")))
        threads = self._threads(link)
        waiting = self._awaiting_review(link, threads)
        if not waiting:
            if threads and all(thread[0]["state"] in ("QUEUE", "PUBLISHING", "PUBLISHED") for thread in threads):
                return "approved"  # (approved already, by this client or the team: nothing changes)
            raise PageAnswer(self._page(request, link, form=form, status=409, problem=(
                "This post is not waiting for review any more, so nothing was changed.")))
        for root in waiting:
            try:
                self.review.approve_post(link["organizationId"], root["id"])
            except ApiError as refused:
                raise PageAnswer(self._page(request, link, form=form, status=409, problem=(
                    f"The post could not be approved as it is ({_api_message(refused)}). Please tell the team, or "
                    "ask for changes."))) from None
        self._record(request, link, name, text, "approved",
                     f"{name} approved a post shared for review: it is scheduled", [root["id"] for root in waiting])
        return "approved"

    def _request_changes(self, request: Request, link: dict, name: str, form: dict) -> str:
        if not link["allowApproval"]:
            raise PageAnswer(self._message(403, "Not allowed", "This link lets you read and comment, not ask for "
                                                               "changes; write a comment instead."))
        text = form.get("text", "")
        if comment_problem(text):
            raise PageAnswer(self._page(request, link, form=form, status=400, problem=(
                f"Please write what should change (at most {MAX_COMMENT_CHARACTERS} characters).")))
        waiting = self._awaiting_review(link, self._threads(link))
        if not waiting:
            raise PageAnswer(self._page(request, link, form=form, status=409, problem=(
                "This post is not waiting for review any more, so nothing was changed. You can still send your "
                "words as a comment.")))
        for root in waiting:
            try:
                self.review.reject_post(link["organizationId"], root["id"], text.strip())
            except ApiError as refused:
                raise PageAnswer(self._page(request, link, form=form, status=409, problem=_api_message(refused))
                                 ) from None
        self._record(request, link, name, text.strip(), "changes",
                     f"{name} asked for changes to a post shared for review: “{_excerpt(text)}”",
                     [root["id"] for root in waiting])
        return "changes"

    def _record(self, request: Request, link: dict, name: str, text: str, kind: str, notice: str,
                post_ids: Optional[list] = None) -> None:
        """The client's words kept as a comment, and the team told: a notification about the post, and an
        e-mail to the admins and editors whose "review" mails are on (when mail is configured); and the audit
        log's entry (actor "client", with the name they gave)."""
        from .audit import record
        organization_id = link["organizationId"]
        made = comment_store.add_comment(self.store, organization_id, link["reviewGroup"], "client", None, name,
                                         text, kind)
        if post_ids is None:
            post_ids = [thread[0]["id"] for thread in self._threads(link)][:1]
        record(self.store, organization_id, Actor("client", None, name), _AUDIT_ACTIONS[kind], "post", post_ids,
               self.guard.client_address(request))
        notification_store.add_notification(self.store, organization_id, notice, None,
                                            post_ids[0] if post_ids else None)
        if post_ids:
            self._mail_team(organization_id, kind, notice, post_ids[0], made["id"])

    def _mail_team(self, organization_id: str, kind: str, notice: str, post_id: str, comment_id: str) -> None:
        from . import mail
        from .alerts import post_link
        link = post_link(self.config, post_id)
        subject = {"comment": "A client commented on a post", "approved": "A client approved a post",
                   "changes": "A client asked for changes to a post"}[kind]
        try:
            mail.notify_team(self.store, self.config, organization_id, "review", subject,
                             f"{notice}\n\nOpen the post:\n{link}\n", mail.html_mail(notice, link, "Open the post"),
                             link, f"client-review:{comment_id}")
        except Exception as error:  # (the comment and the notification are stored: a mail not queued is logged)
            log(f"the mail about a client's review of post {post_id} was not queued: {error!r}"[:400])

    # --- what the page is made of ---------------------------------------------------------------------

    def _link(self, request: Request) -> dict:
        """The live link of the request's token, counted per address; raises PageAnswer 404 (any token that
        is not a live link's: unknown, forged, revoked, expired) or 429."""
        self._count(request, "page", REVIEW_REQUESTS_PER_ADDRESS)
        token = request.params.get("token", "")
        link = None
        if 20 <= len(token) <= MAX_TOKEN_CHARACTERS and token.isascii():
            link = link_store.live_link(self.store, hash_api_key(token))
        if link is None:
            raise PageAnswer(self._message(404, "This review link does not work", (
                "It may have expired or been withdrawn, or it was copied incompletely. Ask the person who sent "
                "it to you for a new one.")))
        return link

    def _count(self, request: Request, what: str, limit: int) -> None:
        decision = self.store.count_request(f"review-{what} address:{self.guard.client_address(request)}", limit,
                                            REVIEW_WINDOW_SECONDS)
        if not decision.allowed:
            minutes = max(1, decision.retry_after // 60)
            response = self._message(429, "Too many requests", (
                f"Too many requests from your address: please try again in {minutes} minutes."))
            response.headers.append(("Retry-After", str(decision.retry_after)))
            raise PageAnswer(response)

    def _form(self, request: Request, link: dict) -> dict:
        """The posted form's fields; raises PageAnswer 400, 403 (not the link's form token) or 415."""
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/x-www-form-urlencoded":
            raise PageAnswer(self._message(415, "Not sent", "Please send the form of the review page."))
        try:
            fields = dict(parse_qsl(request.body.decode("utf-8"), keep_blank_values=True, max_num_fields=10,
                                    strict_parsing=False))
        except (UnicodeDecodeError, ValueError):
            raise PageAnswer(self._message(400, "Not sent", "The form could not be read; please try again.")) from None
        if not compare_digest(fields.get("form", "").encode("utf-8", "surrogateescape"), link["formToken"].encode()):
            raise PageAnswer(self._message(403, "Not sent", (
                "This form is not the review page's own, or the page is out of date: open the link again.")))
        return fields

    def _threads(self, link: dict) -> list:
        """The link's threads (one per channel), each root first."""
        organization_id = link["organizationId"]
        groups = link_store.review_group_threads(self.store, organization_id, link["reviewGroup"])
        return [thread for thread in (post_store.thread(self.store, organization_id, group) for group in groups)
                if thread]

    def _awaiting_review(self, link: dict, threads: list) -> list:
        roots = [thread[0] for thread in threads]
        reviews = review_store.post_reviews(self.store, [root["id"] for root in roots])
        return [root for root in roots if root["id"] in reviews and root["state"] == "DRAFT"]

    def _page(self, request: Request, link: dict, *, form: Optional[dict] = None, status: int = 200,
              problem: Optional[str] = None, notice: Optional[str] = None) -> Response:
        organization_id = link["organizationId"]
        organization = self.store.organization(organization_id) or {"name": ""}
        zone_name = organization_store.organization_timezone(self.store, organization_id)
        threads = self._threads(link)
        reviews = review_store.post_reviews(self.store, [thread[0]["id"] for thread in threads])
        comments = comment_store.comments(self.store, organization_id, link["reviewGroup"], COMMENTS_SHOWN)
        state = _group_state(threads, reviews)
        token = request.params["token"]
        body = [f'<main id="top" class="client-review"><p class="cr-from muted">'
                f'{_e(organization["name"])} · review</p><h1>Review this post</h1>',
                f'<p class="cr-state cr-{state}">{_e(_STATE_WORDS[state])}</p>']
        if threads:
            root = threads[0][0]
            body.append(f'<p class="cr-when">{"Published" if state == "published" else "Planned for"} '
                        f'<time datetime="{_e(root["publishDate"])}">{_e(_local_time(root["publishDate"], zone_name))}'
                        f'</time> <span class="muted">({_e(zone_name)})</span></p>')
        if notice:
            body.append(f'<p class="notice" role="status">{_e(notice)}</p>')
        body.append('<section class="cr-previews" aria-label="The post on each channel">')
        body += [self._channel_preview(link, thread, f"/p/{token}/picture/{place}")
                 for place, thread in enumerate(threads)]
        if not threads:
            body.append('<p class="muted">This post was deleted.</p>')
        body.append("</section>")
        body.append(_comments_section(comments, zone_name))
        if threads:
            body.append(_form_section(token, link, state, form or {}, problem))
        body.append("</main>")
        return self._html(status, "Review this post", "".join(body))

    def _channel_preview(self, link: dict, thread: list, picture_path: str) -> str:
        channel = channel_store.channel_row(self.store, link["organizationId"], thread[0]["integrationId"]) or {}
        identifier = channel.get("providerIdentifier", "")
        platform = getattr(PROVIDERS.get(identifier), "label", identifier)
        name = channel.get("name") or platform
        initial = (name.strip()[:1] or "?").upper()
        # (over the initial, which shows through when the picture cannot be fetched: no script needed)
        picture = f'<img src="{_e(picture_path, True)}" alt="" width="32" height="32">' if channel.get("picture") else ""
        parts = []
        for index, part in enumerate(thread):
            text = html_to_text(part["content"] or "")
            parts.append(f'<div class="preview-part{" reply" if index else ""}"><p class="pv-text">{_e(text)}</p>'
                         f'{self._media(part["image"])}</div>')
        return (f'<article class="preview pv-card cr-channel" aria-label="{_e(f"On {name} ({platform})", True)}">'
                f'<p class="pv-platform">{_e(platform)}</p><header class="pv-head">'
                f'<span class="avatar cr-avatar" aria-hidden="true">{_e(initial)}{picture}</span><span class="pv-who">'
                f'<strong class="pv-name">{_e(name)}</strong></span></header>{"".join(parts)}</article>')

    def _media(self, image: Optional[str]) -> str:
        """Thumbnails of a part's media: only files rustiz serves (FRONTEND_URL's uploads); others are named."""
        try:
            media = json.loads(image or "[]")
        except ValueError:
            return ""
        items = []
        own = (self.config.frontend_url.rstrip("/") + "/uploads/", "/uploads/")
        for item in media if isinstance(media, list) else []:
            path = item.get("path") if isinstance(item, dict) else None
            if not isinstance(path, str):
                continue
            alt = item.get("alt") if isinstance(item.get("alt"), str) else ""
            if path.lower().endswith(_VIDEO_ENDINGS) or not path.startswith(own):
                label = "Video" if path.lower().endswith(_VIDEO_ENDINGS) else "Picture"
                items.append(f'<span class="cr-media-note">{label}{": " + _e(alt) if alt else ""}</span>')
            else:
                items.append(f'<img src="{_e(path, True)}" alt="{_e(alt, True)}" loading="lazy">')
        return f'<div class="cr-media">{"".join(items)}</div>' if items else ""

    def _message(self, status: int, title: str, text: str) -> Response:
        return self._html(status, title, f'<main id="top" class="client-review cr-message"><h1>{_e(title)}</h1>'
                                         f'<p>{_e(text)}</p></main>')

    def _html(self, status: int, title: str, body: str) -> Response:
        page = ('<!doctype html><html lang="en"><head><meta charset="utf-8">'
                '<meta name="viewport" content="width=device-width, initial-scale=1">'
                '<meta name="robots" content="noindex, nofollow">'
                f'<title>{_e(title)} · rustiz</title><link rel="icon" href="/web/icon.svg" type="image/svg+xml">'
                f'<link rel="stylesheet" href="/web/app.css"></head><body>{body}</body></html>')
        return Response(status, page.encode(), "text/html; charset=utf-8", [
            ("Content-Security-Policy", self.policy), ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "same-origin"), ("Cache-Control", "no-store"), ("X-Robots-Tag", "noindex")])


_STATE_WORDS = {"review": "Waiting for your review", "changes": "Changes requested: the team is on it",
                "scheduled": "Approved and scheduled", "published": "Published", "draft": "A draft the team is "
                "still working on", "failed": "Not published yet: the team is on it", "deleted": "Deleted"}


def _group_state(threads: list, reviews: dict) -> str:
    """How the client sees the post group: one word of _STATE_WORDS."""
    if not threads:
        return "deleted"
    roots = [thread[0] for thread in threads]
    marks = {reviews[root["id"]][0] for root in roots if root["id"] in reviews}
    if "review" in marks:
        return "review"
    if "rejected" in marks:
        return "changes"
    states = {part["state"] for thread in threads for part in thread}
    if states == {"PUBLISHED"}:
        return "published"
    if "ERROR" in states:
        return "failed"
    return "draft" if "DRAFT" in states else "scheduled"


def _comments_section(comments: list, zone_name: str) -> str:
    items = []
    for comment in comments:
        client = comment["author"]["type"] == "client"
        who = comment["author"]["name"] if client or comment["author"]["type"] == "user" else "Team"
        if "@" in who and not client:
            who = "Team"  # (a person without a name is known by their e-mail address: not shown to clients)
        decision = {"approved": " approved", "changes": " asked for changes"}.get(comment["kind"], "")
        text = f'<p class="cr-text">{_e(comment["content"])}</p>' if comment["content"] else ""
        side = "client" if client else "team"
        label = "" if who == "Team" else ("Client · " if client else "Team · ")
        items.append(f'<li class="cr-comment cr-{side}"><p class="cr-by">'
                     f'<strong>{_e(who)}</strong>{decision} <span class="muted">· {label}'
                     f'<time datetime="{_e(comment["createdAt"])}">{_e(_local_time(comment["createdAt"], zone_name))}'
                     f'</time></span></p>{text}</li>')
    listing = f'<ol class="cr-comments">{"".join(items)}</ol>' if items else '<p class="muted">No comments yet.</p>'
    return f'<section class="card" aria-labelledby="comments"><h2 id="comments">Comments</h2>{listing}</section>'


def _form_section(token: str, link: dict, state: str, form: dict, problem: Optional[str]) -> str:
    deciding = link["allowApproval"] and state in ("review", "changes")
    buttons = ['<button type="submit" class="button">Send comment</button>']
    if deciding:
        buttons = [f'<button type="submit" class="primary" formaction="/p/{_e(token, True)}/approve">Approve</button>',
                   f'<button type="submit" formaction="/p/{_e(token, True)}/request-changes">Request changes</button>',
                   *buttons]
    hint = ("Approve schedules the post as it is. Request changes sends your words to the team, who will "
            "change the post." if deciding else "Your comment goes to the team.")
    return (f'<section class="card" aria-labelledby="respond"><h2 id="respond">Your answer</h2>'
            f'{_problem_box(problem)}'
            f'<form method="post" action="/p/{_e(token, True)}/comment" class="cr-form">'
            f'<input type="hidden" name="form" value="{_e(link["formToken"], True)}">'
            f'<div class="field"><label for="cr-name">Your name</label><input id="cr-name" name="name" '
            f'maxlength="{MAX_NAME_CHARACTERS}" autocomplete="name" value="{_e(form.get("name", ""), True)}"></div>'
            f'<div class="field"><label for="cr-text">Your comment</label><textarea id="cr-text" name="text" rows="4" '
            f'maxlength="{MAX_COMMENT_CHARACTERS}">{_e(form.get("text", ""))}</textarea></div>'
            f'<p class="hint">{hint}</p><div class="actions">{"".join(buttons)}</div></form></section>')


def _problem_box(problem: Optional[str]) -> str:
    return f'<p class="errors" role="alert">{_e(problem)}</p>' if problem else ""


def _local_time(instant: str, zone_name: str) -> str:
    """An ISO instant as the organization's clock shows it: "Tuesday 8 December 2026, 10:00"."""
    from zoneinfo import ZoneInfo
    try:
        moment = datetime.datetime.fromisoformat(instant.replace("Z", "+00:00")).astimezone(ZoneInfo(zone_name))
    except (ValueError, KeyError, OSError):
        return instant
    return f"{moment:%A} {moment.day} {moment:%B %Y, %H:%M}"


def _excerpt(text: str, length: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= length else text[:length - 1] + "…"


def _api_message(refused: ApiError) -> str:
    message = refused.body.get("message") if isinstance(getattr(refused, "body", None), dict) else None
    return " ".join(message) if isinstance(message, list) else str(message or "")


def _e(text: Any, quote: bool = False) -> str:
    return html.escape(str(text), quote=quote)
