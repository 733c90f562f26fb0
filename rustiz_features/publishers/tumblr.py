"""Tumblr (API v2), through the operator's app: OAuth 2.0 consent, the blog picked after it, posts in the
Neue Post Format (NPF).

As in Postiz: the scopes are `write` and `offline_access` (the access token lives 42 minutes; without a
refresh token the channel would die with it), the channel is one blog of the account (the choice after
consent; a blog is kept by its uuid, which survives a rename), and a post is one part: Tumblr has no
replies through its API (a reblog is a new post of its own, not an answer), so there are no threads.
The post's HTML goes as text blocks (one per paragraph, heading or list item, at most 4,096 characters
each, its bold and links as NPF formatting, where Postiz sends plain text), its `title` as a heading, its
`link` as a link block; each picture is an image block and a video a video block whose bytes go in the same
multipart request, each part named by its block's identifier. The `state` setting (rustiz's,
Tumblr's words: published, queue, draft, private) says where the post lands; `tags` and `sourceUrl` are
Postiz's. Tumblr has no idempotency key: a post whose answer was lost is not sent again.
"""
from __future__ import annotations

import json
from typing import Any, Optional
from urllib.parse import quote, urlencode

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply, Timeouts, encode_multipart
from ..picture_size import picture_size
from .base import (
    Channel, Connected, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable,
    analytics_figures, retry_after_seconds,
)
from .oauth import DEFINITE_REFUSALS, AppCredentials, OAuthProvider, TokenRefused, Tokens, bearer

TUMBLR_TEXT_BLOCK_LIMIT = 4096  # characters (code points) of one NPF text block
# A video block's width and height: rustiz does not read a video's size, and Postiz sends these when it has
# no thumbnail to measure (Tumblr sizes the player from the transcoded file).
TUMBLR_VIDEO_SIZE = (540, 405)
# Tumblr's error subcodes (the `code` of its `errors` items) that say what to do rather than the status:
# a per-day or per-blog limit, which neither a reconnect nor an immediate retry cures, and upload trouble.
LIMIT_CODES = {
    8004: "Tumblr's daily limit of uploaded pictures for this user is reached (250 a day)",
    8011: "Tumblr's daily limit of uploaded videos for this user is reached (20 videos or 60 minutes a day)",
    8022: "the blog's queue is full (Tumblr keeps at most 1,000 queued posts)",
    8023: "Tumblr's daily posting limit for this user is reached (250 posts a day)",
}
UPLOAD_FAILURES = (8006, 8009)  # 500: "an unknown upload error": the post was not made
STILL_TRANSCODING = 8010  # 403: a video of this blog is still transcoding; another may follow later
TRANSCODING_WAIT_SECONDS = 300.0


def tumblr_error(answer: Any) -> Optional[tuple]:
    """(words, code or None) of Tumblr's error shape {"meta": {"status", "msg"}, "errors": [{"title",
    "detail", "code"}]}; None for any other answer."""
    meta = answer.get("meta") if isinstance(answer, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("status"), int):
        return None
    errors = answer.get("errors") if isinstance(answer.get("errors"), list) else []
    for error in errors:
        words = next((error[key].strip() for key in ("detail", "title") if isinstance(error, dict)
                      and isinstance(error.get(key), str) and error[key].strip()), None)
        if words:
            code = error.get("code")
            return words, code if type(code) is int else None
    msg = meta.get("msg")
    return (msg.strip(), None) if isinstance(msg, str) and msg.strip() else None


def exhausted_window_seconds(reply: HttpReply) -> Optional[float]:
    """Seconds until the spent one of Tumblr's per-hour and per-day windows resets (its
    X-Ratelimit-Perhour-/Perday- Remaining and Reset headers, the reset in seconds); None when neither is."""
    waits = []
    for window in ("perhour", "perday"):
        remaining = reply.headers.get(f"x-ratelimit-{window}-remaining", "").strip()
        reset = reply.headers.get(f"x-ratelimit-{window}-reset", "").strip()
        if remaining.isdigit() and int(remaining) < 1 and reset.isdigit():
            waits.append(float(reset))
    return max(waits) if waits else None


def with_scheme(url: str) -> str:
    """Postiz's settings take "www.example.com" as a URL: Tumblr is sent it with https://."""
    url = url.strip()
    return url if url.lower().startswith(("http://", "https://")) else "https://" + url


def tag_list(tags: Any) -> str:
    """Postiz's `tags` ("art, #cats ,") as Tumblr's comma-separated list ("art,cats")."""
    if not isinstance(tags, str):
        return ""
    return ",".join(tag.strip().lstrip("#").strip() for tag in tags.split(",") if tag.strip().lstrip("#").strip())


# Postiz's HTML (p, br, strong, u, a, ul, li, h1-h3 and span once sanitized) as NPF: a block per paragraph,
# heading and list item, bold and links as inline formatting (NPF has no underline).
NPF_SUBTYPES = {"p": None, "h1": "heading1", "h2": "heading2", "h3": "heading2", "li": "unordered-list-item"}
NPF_FORMATS = {"strong": "bold", "b": "bold", "em": "italic", "i": "italic", "a": "link"}


def text_blocks(html: str) -> list:
    """The post's HTML as NPF text blocks with their formatting; a block longer than Tumblr's limit is cut in
    several, its formatting with it."""
    from html.parser import HTMLParser
    blocks: list = []
    pending: dict = {"text": [], "length": 0, "subtype": None, "formatting": [], "open": []}

    def flush(subtype: Optional[str] = None) -> None:
        text = "".join(pending["text"])
        lead = len(text) - len(text.lstrip())
        text = text.strip()
        for start in range(0, len(text), TUMBLR_TEXT_BLOCK_LIMIT):
            end = min(len(text), start + TUMBLR_TEXT_BLOCK_LIMIT)
            block: dict = {"type": "text", "text": text[start:end]}
            if pending["subtype"]:
                block["subtype"] = pending["subtype"]
            ranges = [{**item, "start": max(item["start"] - lead, start) - start,
                       "end": min(item["end"] - lead, end) - start} for item in pending["formatting"]
                      if item["start"] - lead < end and item["end"] - lead > start]
            if ranges:
                block["formatting"] = ranges
            blocks.append(block)
        pending.update(text=[], length=0, subtype=subtype, formatting=[], open=[])

    def add(text: str) -> None:
        pending["text"].append(text)
        pending["length"] += len(text)

    class Reader(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list) -> None:
            if tag in NPF_SUBTYPES:
                flush(NPF_SUBTYPES[tag])
            elif tag == "br":
                add("\n")
            elif tag in NPF_FORMATS:
                pending["open"].append((tag, pending["length"], dict(attrs).get("href") or ""))

        def handle_endtag(self, tag: str) -> None:
            if tag in NPF_SUBTYPES:
                flush()
            opened = [item for item in pending["open"] if item[0] == tag]
            if opened and pending["length"] > opened[-1][1]:
                pending["open"].remove(opened[-1])
                kind, url = NPF_FORMATS[tag], opened[-1][2]
                if kind != "link" or url.startswith(("https://", "http://")):
                    pending["formatting"].append({"start": opened[-1][1], "end": pending["length"], "type": kind,
                                                  **({"url": url} if kind == "link" else {})})

        def handle_data(self, data: str) -> None:
            if data.strip() or "\n" not in data:  # (white space with a line break: the source's, between tags)
                add(data)

    reader = Reader(convert_charrefs=True)
    reader.feed(html)
    reader.close()
    flush()
    return blocks


class TumblrProvider(OAuthProvider):
    identifier = "tumblr"
    app_variables = ("TUMBLR_CLIENT_ID", "TUMBLR_CLIENT_SECRET")
    auth_origin = "https://www.tumblr.com"  # the consent page, and where posts are seen
    api_origin = "https://api.tumblr.com"  # the API and its token endpoint
    authorize_path = "/oauth2/authorize"
    token_path = "/v2/oauth2/token"  # on the API origin
    scopes = ("write", "offline_access")  # Postiz's; `write` reads too
    pkce = False  # Tumblr documents none
    between_steps = True  # the blog
    threads = False
    can_delete = True
    concurrency = 3  # Postiz's maxConcurrentJob
    operator_guide = (
        "Register an application at https://www.tumblr.com/oauth/apps (application name, description, website "
        "and a default callback URL are required) and set its OAuth2 redirect URL to "
        "{FRONTEND_URL}/integrations/social/tumblr. Put the OAuth Consumer Key in TUMBLR_CLIENT_ID and the "
        "OAuth Consumer Secret in TUMBLR_CLIENT_SECRET. rustiz asks for the scopes write and offline_access "
        "(the refresh token). No review is needed; a new app may make 1,000 API calls an hour and 5,000 a day. "
        "After consent the user picks the blog the channel posts to.")

    # --- OAuth ------------------------------------------------------------------------------------------

    def token_request_headers(self, app: AppCredentials) -> dict:
        return {"Accept": "application/json"}  # Tumblr takes the app's id and secret in the form

    def token_form_extra(self, app: AppCredentials) -> dict:
        return {"client_id": app.client_id, "client_secret": app.client_secret}

    async def token_request(self, http: HttpClient, app: AppCredentials, form: dict, what: str) -> Tokens:
        """POST /v2/oauth2/token on the API origin. A dead grant (OAuth's invalid_grant, or the 401 Tumblr
        documents for an expired refresh token) is TokenRefused; a refused app (invalid_client) stays a plain
        NeedsReconnect, and a 429 or 5xx Retryable."""
        channel = Channel("", "", {}, None, http)
        try:
            reply = await self.send(channel, "POST", self.api_base() + self.token_path, what=what,
                                    headers=self.token_request_headers(app), form={**form, **self.token_form_extra(app)})
        except (Rejected, NeedsReconnect) as refused:
            dead = any(f'"{code}"' in refused.body for code in DEFINITE_REFUSALS) or (
                refused.status == 401 and form.get("grant_type") == "refresh_token"
                and '"invalid_client"' not in refused.body)
            if dead and not isinstance(refused, TokenRefused):
                raise TokenRefused(refused.message, refused.status, refused.body) from None
            raise
        return self.tokens_from(reply)

    async def exchange_code(self, http: HttpClient, app: AppCredentials, code: str, redirect_uri: str,
                            code_verifier: Optional[str], details: dict) -> Tokens:
        """As OAuth 2.0, and refused when the consent gave no refresh token: the channel would stop with its
        first access token, 42 minutes later."""
        tokens = await super().exchange_code(http, app, code, redirect_uri, code_verifier, details)
        if tokens.refresh_token is None:
            raise Rejected("Tumblr gave no refresh token (the offline_access scope was not granted): connect "
                           "again and allow it")
        return tokens

    # --- errors -------------------------------------------------------------------------------------------

    def error_words(self, reply: HttpReply) -> Optional[str]:
        error = tumblr_error(reply.json())
        if error is not None:
            return error[0] + (f" (code {error[1]})" if error[1] is not None else "")
        return super().error_words(reply)  # the token endpoint's {"error", "error_description"}

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """Tumblr's subcodes first: its limits are refusals (a reconnect cures none of them), an upload it lost
        is worth another attempt; a 403 without them is Tumblr refusing the action, not the token (its staff:
        "it means you cannot do the action ... and you should not try again"); 429 waits for the spent window."""
        status = reply.status
        if status < 400:
            return reply
        error = tumblr_error(reply.json())
        code = error[1] if error is not None else None
        words, body = self.platform_words(reply), self.error_excerpt(reply)
        words += "" if visible else f" (on {what})"
        if code in LIMIT_CODES:
            raise Rejected(f"{LIMIT_CODES[code]} ({words})", status, body)
        if code == STILL_TRANSCODING or (status >= 500 and code in UPLOAD_FAILURES):
            raise Retryable(words, status, body, after=TRANSCODING_WAIT_SECONDS if code == STILL_TRANSCODING else None)
        if status == 429:
            raise Retryable(words, status, body, after=exhausted_window_seconds(reply) or retry_after_seconds(reply))
        if status == 403:
            raise Rejected(words, status, body)
        return super().check_reply(reply, visible, what)

    def note_rate_limit(self, channel: Channel, reply: HttpReply) -> None:
        wait = exhausted_window_seconds(reply)
        if wait:
            channel.throttle(wait)

    def where_to_check(self, channel: Channel) -> str:
        return f"the Tumblr blog of the channel \"{channel.name}\" (its posts, queue and drafts)"

    # --- the account and its blogs -------------------------------------------------------------------------

    async def _user(self, channel: Channel) -> dict:
        reply = await self.send(channel, "GET", self.api_base() + "/v2/user/info", what="the account (/v2/user/info)",
                                headers=bearer(channel))
        answer = reply.json()
        response = answer.get("response") if isinstance(answer, dict) else None
        user = response.get("user") if isinstance(response, dict) else None
        if not isinstance(user, dict) or not isinstance(user.get("name"), str) or not user["name"]:
            raise Retryable(f"Tumblr answered /v2/user/info with {reply.described('an account with a name')}",
                            reply.status)
        user["blogs"] = [blog for blog in user.get("blogs") or [] if isinstance(blog, dict)
                         and isinstance(blog.get("name"), str) and blog["name"]]
        return user

    def _avatar(self, blog_name: str) -> str:
        return f"{self.api_base()}/v2/blog/{quote(blog_name, safe='')}.tumblr.com/avatar/128"

    async def connect(self, channel: Channel) -> Connected:
        """The account that consented (named as Postiz names it, by the user's name, with the primary blog's
        avatar); the channel becomes one of its blogs once chosen (choose)."""
        user = await self._user(channel)
        primary = next((blog for blog in user["blogs"] if blog.get("primary")), None) or \
            (user["blogs"][0] if user["blogs"] else None)
        # "user:" keeps the account apart from its blogs' ids, so a new consent never lands on a blog's channel.
        return Connected(ChannelAccount("user:" + user["name"], user["name"], user["name"],
                                        self._avatar(primary["name"]) if primary else None))

    async def step_choices(self, channel: Channel) -> list:
        return [{"id": blog["name"], "name": self._blog_title(blog), "picture": self._avatar(blog["name"])}
                for blog in (await self._user(channel))["blogs"]]

    async def choose(self, channel: Channel, choice: str) -> Connected:
        blog = next((blog for blog in (await self._user(channel))["blogs"] if blog["name"] == choice), None)
        if blog is None:
            raise Rejected(f"the Tumblr account may not post to the blog {choice[:40]!r}")
        uuid = blog.get("uuid") if isinstance(blog.get("uuid"), str) and blog["uuid"] else blog["name"]
        url = blog.get("url") if isinstance(blog.get("url"), str) and blog["url"] else \
            f"{self.auth_base()}/{quote(blog['name'], safe='')}"
        account = ChannelAccount(uuid, self._blog_title(blog), blog["name"], self._avatar(blog["name"]))
        return Connected(account, session={"blog": uuid, "blogName": blog["name"], "blogUrl": url.rstrip("/")})

    @staticmethod
    def _blog_title(blog: dict) -> str:
        title = blog.get("title")
        return title.strip() if isinstance(title, str) and title.strip() else blog["name"]

    def _blog(self, channel: Channel) -> str:
        blog = channel.session.get("blog") or channel.credentials.get("blog")
        if not isinstance(blog, str) or not blog:
            raise NeedsReconnect("no Tumblr blog was chosen for this channel: connect it again and pick one")
        return quote(blog, safe=":")  # a uuid ("t:...") goes as Tumblr writes it

    # --- publishing ---------------------------------------------------------------------------------------

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        content, files = self._content(post)
        body: dict = {"content": content, "state": post.settings.get("state") or "published"}
        if tag_list(post.settings.get("tags")):
            body["tags"] = tag_list(post.settings["tags"])
        if isinstance(post.settings.get("sourceUrl"), str) and post.settings["sourceUrl"].strip():
            body["source_url"] = with_scheme(post.settings["sourceUrl"])
        headers, request = bearer(channel), {"json_body": body}
        if files:  # Tumblr's upload: the JSON first, then each file as the part its block names
            data, headers["Content-Type"] = encode_multipart(
                [("json", (None, json.dumps(body, ensure_ascii=False).encode(), "application/json"))] + files)
            request = {"body": data}
        reply = await self.send(channel, "POST", f"{self.api_base()}/v2/blog/{self._blog(channel)}/posts", visible=True,
                                what="the post", headers=headers, timeouts=Timeouts(read=120, total=900), **request)
        response = self._response(reply)
        post_id = response.get("id_string") or response.get("id")
        if not isinstance(post_id, (str, int)) or isinstance(post_id, bool) or not str(post_id):
            raise OutcomeUnknown(f"Tumblr accepted the post but answered {reply.described('a post id')}", reply.status)
        blog_url = channel.session.get("blogUrl") or f"{self.auth_base()}/{channel.session.get('blogName', '')}"
        return Release(str(post_id), f"{blog_url}/post/{post_id}")

    def _content(self, post: OutgoingPost) -> tuple:
        """(the NPF content blocks, the multipart file parts their media name)."""
        content: list = []
        title = post.settings.get("title")
        if isinstance(title, str) and title.strip():
            content.append({"type": "text", "subtype": "heading1", "text": title.strip()})
        content += text_blocks(post.html)
        link = post.settings.get("link")
        if isinstance(link, str) and link.strip():
            content.append({"type": "link", "url": with_scheme(link)})
        files = []
        for number, media in enumerate(post.media):
            identifier = f"media-{number}"
            content.append(self._media_block(media, identifier))
            files.append((identifier, (media.name, media.read(), media.content_type)))
        return content or [{"type": "text", "text": ""}], files

    @staticmethod
    def _media_block(media: MediaFile, identifier: str) -> dict:
        described = {"type": media.content_type.split(";")[0].strip(), "identifier": identifier}
        if media.kind == "video":
            width, height = TUMBLR_VIDEO_SIZE
            return {"type": "video", "provider": "tumblr", "media": {**described, "width": width, "height": height}}
        with open(media.path, "rb") as file:
            size = picture_size(file)
        if size is not None:
            described.update(width=size[0], height=size[1])
        block: dict = {"type": "image", "media": [described]}
        if media.alt:
            block["alt_text"] = media.alt
        return block

    # --- deleting -----------------------------------------------------------------------------------------

    async def delete(self, channel: Channel, release: Release) -> None:
        """POST /v2/blog/{blog}/post/delete; a post Tumblr no longer knows (404) is already deleted."""
        try:
            await self.send(channel, "POST", f"{self.api_base()}/v2/blog/{self._blog(channel)}/post/delete",
                            what="the post's deletion", form={"id": release.id}, headers=bearer(channel))
        except Rejected as refused:
            if refused.status != 404:
                raise

    # --- analytics ----------------------------------------------------------------------------------------

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        """The blog's followers (from the account's blogs) and its number of posts (/info); none while no blog is
        chosen (the daily snapshot reaches channels still waiting for their choice)."""
        blog = channel.session.get("blogName")
        if not blog:
            return None
        followers = next((item.get("followers") for item in (await self._user(channel))["blogs"]
                          if item["name"] == blog), None)
        reply = await self.send(channel, "GET", f"{self.api_base()}/v2/blog/{self._blog(channel)}/info",
                                what="the blog's counts", headers=bearer(channel))
        info = self._response(reply).get("blog")
        posts = info.get("posts") if isinstance(info, dict) else None
        return analytics_figures({"Followers": followers, "Posts": posts})

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        """The post's notes, and how many of them are likes and reblogs (/notes in conversation mode)."""
        blog = self._blog(channel)
        reply = await self.send(channel, "GET", f"{self.api_base()}/v2/blog/{blog}/posts?"
                                + urlencode({"id": release.id}), what="the post", headers=bearer(channel))
        posts = self._response(reply).get("posts")
        notes = posts[0].get("note_count") if isinstance(posts, list) and posts and isinstance(posts[0], dict) else None
        reply = await self.send(channel, "GET", f"{self.api_base()}/v2/blog/{blog}/notes?"
                                + urlencode({"id": release.id, "mode": "conversation"}), what="the post's notes",
                                headers=bearer(channel))
        counts = self._response(reply)
        return analytics_figures({"Notes": notes, "Likes": counts.get("total_likes"),
                                  "Reblogs": counts.get("total_reblogs")})

    @staticmethod
    def _response(reply: HttpReply) -> dict:
        answer = reply.json()
        response = answer.get("response") if isinstance(answer, dict) else None
        return response if isinstance(response, dict) else {}


PROVIDER = TumblrProvider()
