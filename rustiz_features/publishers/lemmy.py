"""Lemmy: posts and comments in a community, from Postiz HTML as CommonMark; community search as a tool.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable, Optional

from ..catalogue import ChannelAccount, url_host
from ..http_client import HttpReply
from .base import (
    Channel, Connected, NeedsReconnect, OutcomeUnknown, OutgoingPost, Provider, PublishError, Rejected, Release,
    Retryable, error_fields, retry_after_seconds,
)
from .markup import markdown_from_html


LEMMY_TITLE_LIMIT = 200
LEMMY_BODY_LIMIT = 10000  # Lemmy's default for a comment, and what Postiz allows for a post
# Lemmy's error codes ({"error": "..."}) with what they mean for the person reading the failure.
_LEMMY_LOGIN_ERRORS = {
    "incorrect_login": "the username or password is wrong",
    "password_incorrect": "the password is wrong",
    "not_logged_in": "the login expired or was revoked",
    "missing_totp_token": ("the account has two-factor authentication, and rustiz cannot log in with a code "
                           "that changes every 30 seconds; turn 2FA off for this account or use another account"),
    "incorrect_totp_token": "the account has two-factor authentication, which rustiz cannot log in with",
    "email_not_verified": "the account's email address is not verified yet: open the link Lemmy emailed",
    "registration_application_is_pending": "the instance's admins have not approved the account yet",
    "registration_denied": "the instance's admins refused the account's registration",
    "site_ban": "the account is banned from this instance",
    "deleted": "the account was deleted",
}
_LEMMY_REFUSALS = {
    "couldnt_find_community": "no community has that id on this instance; pick it again with the subreddits tool",
    "banned_from_community": "the account is banned from that community",
    "only_mods_can_post_in_community": "only that community's moderators may post in it",
    "community_is_deleted": "the community was deleted",
    "community_is_removed": "the community was removed by an admin",
    "invalid_post_title": "the title must be 1 to 200 characters and not only spaces",
    "invalid_body_field": "the text is too long for this instance",
    "invalid_url": "the link (url) is not a valid URL",
    "couldnt_find_post": "the post to comment on was deleted",
    "locked": "the post is locked: no new comments",
    "slurs": "the instance's slur filter matched the text",
}


def _lemmy_communities(settings: dict) -> list:
    """The communities a post goes to: Postiz's `subreddit: [{value: {id, subreddit, title, url?}}]`."""
    entries = settings.get("subreddit") if isinstance(settings, dict) else None
    return [entry["value"] for entry in entries or () if isinstance(entry, dict) and isinstance(entry.get("value"), dict)]


class LemmyProvider(Provider):
    """Any Lemmy instance, with the account's username (or email) and password; API v3.

    The post goes to each chosen community; thread parts become comments under each of those posts."""
    identifier = "lemmy"
    resend_is_safe = False  # Lemmy takes no idempotency key
    concurrency = 2
    spacing = 2.0  # instances rate-limit posts and comments per IP
    can_delete = True  # POST /post/delete and /comment/delete {"deleted": true}

    async def connect(self, channel: Channel) -> Connected:
        jwt = await self._log_in(channel)
        reply = await self.send(channel, "GET", self._api(channel, "/site"), what="the account (GET /api/v3/site)",
                                headers={"Authorization": f"Bearer {jwt}"})
        site = reply.json()
        person = (((site or {}).get("my_user") or {}).get("local_user_view") or {}).get("person") \
            if isinstance(site, dict) else None
        if not isinstance(person, dict) or not person.get("name"):
            raise Rejected(f"Lemmy at {self._service(channel)} logged in, but its site answer has no account "
                           f"(my_user); is it a Lemmy instance of version 0.19 or later? "
                           f"({reply.described('a Lemmy site with my_user')})")
        host, name = url_host(self._service(channel)), str(person["name"])
        account = ChannelAccount(f"{host}/{name.lower()}", str(person.get("display_name") or name),
                                 f"{name}@{host}", person.get("avatar") or None)
        return Connected(account, session={"jwt": jwt})

    @staticmethod
    def _service(channel: Channel) -> str:
        return channel.credentials["service"].rstrip("/")

    def _api(self, channel: Channel, path: str) -> str:
        return f"{self._service(channel)}/api/v3{path}"

    async def _log_in(self, channel: Channel) -> str:
        reply = await self.send(channel, "POST", self._api(channel, "/user/login"), what="the login",
                                json_body={"username_or_email": channel.credentials["identifier"],
                                           "password": channel.credentials["password"]})
        answer = reply.json()
        jwt = answer.get("jwt") if isinstance(answer, dict) else None
        if not isinstance(jwt, str) or not jwt:
            raise NeedsReconnect("Lemmy accepted the login but gave no token: the account may wait for its "
                                 "email to be verified or for the admins to approve it", reply.status)
        return jwt

    async def _call(self, channel: Channel, method: str, path: str, visible: bool, what: str,
                    **request: Any) -> HttpReply:
        """A request with the cached login; a refused login is renewed once (the refused request did nothing)."""
        fresh = not channel.session.get("jwt")
        if fresh:
            channel.save_session({**channel.session, "jwt": await self._log_in(channel)})
        try:
            return await self.send(channel, method, self._api(channel, path), visible, what,
                                   headers={"Authorization": f"Bearer {channel.session['jwt']}"}, **request)
        except NeedsReconnect:
            if fresh:
                raise
            channel.save_session({**channel.session, "jwt": await self._log_in(channel)})
            return await self.send(channel, method, self._api(channel, path), visible, what,
                                   headers={"Authorization": f"Bearer {channel.session['jwt']}"}, **request)

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        service = self._service(channel)
        if parent is None:
            targets = [str(community["id"]) for community in _lemmy_communities(post.settings)]
            if not targets:
                raise Rejected("the post names no Lemmy community: settings.subreddit needs at least one "
                               "{value: {id, subreddit, title}}")
            ids = await self._each(channel, post, targets, self._create_post)
            return Release(",".join(ids), ",".join(f"{service}/post/{id_}" for id_ in ids), {"posts": ids})
        posts = parent.reply_ref.get("posts") if isinstance(parent.reply_ref, dict) else None
        if not posts:
            raise Rejected("the post this comment belongs to left no Lemmy post id to comment on")
        ids = await self._each(channel, post, posts, self._comment)
        return Release(",".join(ids), ",".join(f"{service}/comment/{id_}" for id_ in ids), {"posts": posts})

    async def delete(self, channel: Channel, release: Release) -> None:
        """Each post (one per community) or comment of the part, by its author: {"deleted": true}."""
        kind = "comment" if "/comment/" in release.url else "post"
        for made in filter(None, release.id.split(",")):
            if not made.isdigit():
                raise Rejected(f"{made[:40]!r} is not a Lemmy {kind} id")
            try:
                await self._call(channel, "POST", f"/{kind}/delete", False, f"the deletion of {kind} {made}",
                                 json_body={f"{kind}_id": int(made), "deleted": True})
            except PublishError as refused:
                if not (refused.status == 404 or "couldnt_find" in refused.message or "not_found" in refused.message):
                    raise

    async def _each(self, channel: Channel, post: OutgoingPost, targets: list, make: Callable) -> list:
        """`make(channel, post, target)` for each community (or post commented on), in order.

        A post to several communities is several requests: when one fails after others went out, the
        attempt is retried, so the ids already made are kept in the channel's session under this part's
        key and those targets are skipped instead of posted twice."""
        done = dict((channel.session.get("progress") or {}).get(post.idempotency_key) or {})
        for target in targets:
            if target in done:
                continue
            done[target] = await make(channel, post, target)
            progress = {**(channel.session.get("progress") or {}), post.idempotency_key: done}
            channel.save_session({**channel.session, "progress": progress})
        progress = dict(channel.session.get("progress") or {})
        if progress.pop(post.idempotency_key, None) is not None:
            channel.save_session({**channel.session, "progress": progress})
        return [done[target] for target in targets]

    async def _create_post(self, channel: Channel, post: OutgoingPost, community_id: str) -> str:
        community = next(value for value in _lemmy_communities(post.settings) if str(value["id"]) == community_id)
        body = markdown_from_html(post.html, "markdown")
        title = str(community.get("title") or "").strip() or body.split("\n", 1)[0][:LEMMY_TITLE_LIMIT]
        payload: dict = {"community_id": int(community_id), "name": title, "body": body, "nsfw": False}
        image = post.media[0] if post.media else None
        # Lemmy takes media only as URLs it (and readers) fetch: without a link of its own, the post's
        # image is the link (an image post); with one, the image is the link's thumbnail.
        if community.get("url"):
            payload["url"] = community["url"]
            if image is not None:
                payload["custom_thumbnail"] = image.url
        elif image is not None:
            payload["url"] = image.url
        reply = await self._call(channel, "POST", "/post", True, f"the post to community {community_id}",
                                 json_body=payload)
        return self._made_id(reply, "post_view", "post")

    async def _comment(self, channel: Channel, post: OutgoingPost, post_id: str) -> str:
        content = markdown_from_html(post.html, "markdown")
        images = "\n\n".join(f"![{media.alt}]({media.url})" for media in post.media)
        content = "\n\n".join(filter(None, (content, images)))
        reply = await self._call(channel, "POST", "/comment", True, f"the comment on post {post_id}",
                                 json_body={"post_id": int(post_id), "content": content})
        return self._made_id(reply, "comment_view", "comment")

    @staticmethod
    def _made_id(reply: HttpReply, view: str, kind: str) -> str:
        answer = reply.json()
        made = ((answer or {}).get(view) or {}).get(kind) if isinstance(answer, dict) else None
        if not isinstance(made, dict) or made.get("id") is None:
            raise OutcomeUnknown(f"Lemmy answered without the {kind} it made ({reply.described(f'a {view}')})",
                                 reply.status)
        return str(made["id"])

    async def tool_subreddits(self, channel: Channel, data: dict) -> list:
        """Communities matching `data.word`, most active first, as Postiz lists them: [{title, name, id}]."""
        from urllib.parse import urlencode
        query = urlencode({"type_": "Communities", "sort": "Active", "q": str(data.get("word") or "")})
        reply = await self._call(channel, "GET", f"/search?{query}", False, "the community search")
        answer = reply.json()
        found = answer.get("communities") if isinstance(answer, dict) else None
        return [{"title": view["community"].get("title"), "name": view["community"].get("title"),
                 "id": view["community"].get("id")}
                for view in found or () if isinstance(view, dict) and isinstance(view.get("community"), dict)]

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        answer = reply.json()
        code = answer.get("error") if isinstance(answer, dict) and not 200 <= reply.status < 300 else None
        if isinstance(code, str):
            status, body = reply.status, self.error_excerpt(reply)
            if code in _LEMMY_LOGIN_ERRORS:
                raise NeedsReconnect(f"Lemmy refused the login ({code}): {_LEMMY_LOGIN_ERRORS[code]}", status, body)
            if code == "rate_limit_error" or status == 429:
                raise Retryable(f"Lemmy is throttling requests (HTTP {status}, {code})", status, body,
                                after=retry_after_seconds(reply))
            if 400 <= status < 500:
                meaning = _LEMMY_REFUSALS.get(code, "see the instance's Lemmy version for what this code means")
                raise Rejected(f"Lemmy refused {what} ({code}): {meaning}", status, body)
        return super().check_reply(reply, visible, what)

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        for community in _lemmy_communities(settings):
            if not re.fullmatch(r"[0-9]+", str(community.get("id", ""))):
                return (f"Lemmy community ids are numbers (the subreddits tool lists them); "
                        f"{json.dumps(community.get('id'))} is not one")
            title = str(community.get("title") or "")
            if len(title) > LEMMY_TITLE_LIMIT:
                return (f"Lemmy allows titles of up to {LEMMY_TITLE_LIMIT} characters; the title for "
                        f"{community.get('subreddit') or community['id']} has {len(title)}")
        for number, value in enumerate(values, 1):
            length = len(markdown_from_html(value["content"], "markdown"))
            if length > LEMMY_BODY_LIMIT:
                where = "the post" if number == 1 else f"comment {number - 1}"
                return (f"Lemmy allows {LEMMY_BODY_LIMIT:,} characters in a post or comment; {where} has "
                        f"{length:,} (counted as markdown)")
        return None

    def where_to_check(self, channel: Channel) -> str:
        return f"the profile of {channel.credentials['identifier']} on {self._service(channel)}"

    def error_words(self, reply: HttpReply) -> Optional[str]:
        return error_fields(reply.json(), "error", "message")  # {"error": "couldnt_find_community"}


PROVIDER = LemmyProvider()
