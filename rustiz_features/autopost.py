"""RSS/Atom autopost: an organization's feeds, fetched every few minutes, each new item posted on its channels.

Rules:
- Routes under /public/v1/autopost (rustiz's): GET lists the feeds (scope read) with each one's state, last fetch
  and, for a refused feed, why; POST / PUT / DELETE change them, POST /:id/fetch fetches one at once, and POST
  /preview shows the post the newest item of a feed would make, saving nothing (scope posts: an editor's, as a
  feed makes posts without review in modes now and queue).
- A body's fields are checked all at once, each problem a 400 naming the field; ids are looked up in the caller's
  organization (another's answer as unknown: 404 for a feed, 400 naming the channels).
- Fetching goes through the one outbound client (its address guard), with the feed's ETag / Last-Modified
  (304: nothing new), reading at most feeds.MAX_FEED_BYTES; the document is read by feeds.py (no DTD, no entity).
- A feed's first successful fetch only marks its items seen. Later, each new item (key: GUID, else link) becomes
  ONE post group on the feed's channels, through validate_create_post and the duplicate rule as POST /posts does,
  recorded with its posts in one transaction (storage.autopost.record_item): exactly once whatever the
  processes or restarts. A duplicate or refused item is recorded with why, and not tried again.
- One process fetches a feed at a time (a lease). A feed failing FAILURE_LIMIT times in a row is paused with one
  notification saying why and how to resume.
- FeedPoller runs beside the scheduler in every process (background.RowSender), as alerts and mail do.
"""
from __future__ import annotations

import re
import sqlite3
import time
import traceback
from typing import Any, Optional

from rustiz import App, Config, Request, Response, Store, bad_request, iso_at, json_response, log, nest_error, \
    new_cuid, not_found, route_options
from .api_docs import BOOLEAN, STRING, array_of, documented, object_schema, parameter
from .background import RowSender, SenderHost
from .storage import autopost as feed_store
from .storage import channels as channel_store

MODES = ("queue", "now", "review")
PLACEHOLDERS = ("title", "url", "description", "author")
DEFAULT_TEMPLATE = "{{title}} {{url}}"
DEFAULT_INTERVAL_MINUTES = 60
MAX_INTERVAL_MINUTES = 7 * 24 * 60  # a week
MAX_URL_CHARACTERS = 2000
MAX_TEMPLATE_CHARACTERS = 2000
MAX_CHANNELS = 50
MAX_DESCRIPTION_CHARACTERS = 300  # what {{description}} quotes of an item's summary
MAX_NEW_ITEMS_PER_FETCH = 10  # more new items at once (a feed rewritten) post the newest; the rest are skipped
FAILURE_LIMIT = 5  # fetches in a row that fail before a feed is paused
FETCH_LEASE_SECONDS = 300  # beyond one fetch's timeouts (and an item's page for its picture)
POLL_SECONDS = 30.0  # how often a process looks for due feeds (RUSTIZ_AUTOPOST_POLL_SECONDS)
CONCURRENCY = 4  # feeds fetched at once, per process
PAGE_BYTES = 256 * 1024  # what is read of an item's page for its og:image
FEED_NOT_FOUND = "Feed not found"
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_FIELDS = ("url", "integrations", "template", "mode", "includeImage", "intervalMinutes", "paused")

FEED = object_schema({
    "id": STRING, "url": STRING, "integrations": array_of(STRING), "template": STRING,
    "mode": {"type": "string", "enum": list(MODES)}, "includeImage": BOOLEAN, "intervalMinutes": {"type": "integer"},
    "paused": BOOLEAN, "pausedReason": {"type": ["string", "null"]},
    "state": {"type": "string", "enum": ["new", "active", "failing", "paused"]},
    "lastFetchAt": {"type": ["string", "null"]}, "lastResult": {"type": ["string", "null"]},
    "lastError": {"type": ["string", "null"], "description": "Why the last fetch failed or the feed was refused"},
    "failures": {"type": "integer"}, "nextFetchAt": {"type": ["string", "null"]}, "createdAt": STRING,
    "recent": array_of(object_schema({"title": STRING, "link": STRING, "outcome": {
        "type": "string", "enum": ["posted", "duplicate", "refused", "skipped"]}, "reason": {"type": ["string", "null"]},
        "postId": {"type": ["string", "null"]}, "at": STRING}))})
FEED_BODY = object_schema({}, {
    "url": {"type": "string", "maxLength": MAX_URL_CHARACTERS},
    "integrations": {**array_of(STRING), "minItems": 1, "maxItems": MAX_CHANNELS},
    "template": {"type": "string", "minLength": 1, "maxLength": MAX_TEMPLATE_CHARACTERS,
                 "description": "Placeholders: {{title}} {{url}} {{description}} {{author}}"},
    "mode": {"type": "string", "enum": list(MODES), "description": "queue (the default), now, or review (drafts)"},
    "includeImage": BOOLEAN, "intervalMinutes": {"type": "integer", "minimum": 1, "maximum": MAX_INTERVAL_MINUTES},
    "paused": BOOLEAN}, additionalProperties=False)
FEED_ID = parameter("path", "id", "A feed id")
PREVIEW = object_schema({"text": STRING, "image": {"type": ["string", "null"]}, "items": {"type": "integer"},
                         "item": {"type": ["object", "null"]}})


# --- a feed's fields checked ----------------------------------------------------------------------------------

def checked_feed(store: Store, organization_id: str, body: Any, current: Optional[dict] = None) -> dict:
    """The fields of a POST (`current` None: every field, defaults filled) or PUT body (only those sent), checked;
    raises ApiError 400 naming every field that is wrong."""
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object")
    problems = [f"property {name} should not exist" for name in body if name not in _FIELDS]
    if current is None:
        body = {"template": DEFAULT_TEMPLATE, "mode": "queue", "includeImage": False,
                "intervalMinutes": DEFAULT_INTERVAL_MINUTES, "paused": False, **body}
        problems += [f"{name} is required" for name in ("url", "integrations") if name not in body]
    fields = {}
    for name in _FIELDS:
        if name in body:
            fields[name] = _checked_field(store, organization_id, name, body[name], problems)
    if problems:
        raise bad_request(problems)
    return fields


def _checked_field(store: Store, organization_id: str, name: str, value: Any, problems: list) -> Any:
    if name == "url":
        return _checked_url(value, problems)
    if name == "integrations":
        return _checked_channels(store, organization_id, value, problems)
    if name == "template":
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEMPLATE_CHARACTERS:
            problems.append(f"template must be a text of 1 to {MAX_TEMPLATE_CHARACTERS} characters, such as "
                            f"{DEFAULT_TEMPLATE!r}")
            return value
        unknown = [found for found in _PLACEHOLDER.findall(value) if found not in PLACEHOLDERS]
        if unknown:
            problems.append(f"template: unknown placeholder {{{{{unknown[0][:40]}}}}}; the placeholders are "
                            + " ".join(f"{{{{{known}}}}}" for known in PLACEHOLDERS))
        return value
    if name == "mode":
        if value not in MODES:
            problems.append(f"mode must be one of {', '.join(MODES)}")
        return value
    if name == "intervalMinutes":
        if type(value) is not int or not 1 <= value <= MAX_INTERVAL_MINUTES:
            problems.append(f"intervalMinutes must be a whole number of minutes from 1 to {MAX_INTERVAL_MINUTES} "
                            f"(a week)")
        return value
    if type(value) is not bool:  # includeImage, paused
        problems.append(f"{name} must be true or false")
    return value


def _checked_url(value: Any, problems: list) -> Any:
    from .catalogue import url_problem
    if not isinstance(value, str) or len(value) > MAX_URL_CHARACTERS:
        problems.append(f"url must be the feed's address (http:// or https://), at most {MAX_URL_CHARACTERS} characters")
        return value
    problem = url_problem(value.strip(), ("http", "https"))
    if problem:
        problems.append(f"url {problem}")
    return value.strip()


def _checked_channels(store: Store, organization_id: str, value: Any, problems: list) -> Any:
    if (not isinstance(value, list) or not value or len(value) > MAX_CHANNELS
            or not all(isinstance(item, str) for item in value)):
        problems.append(f"integrations must be a list of 1 to {MAX_CHANNELS} channel ids "
                        f"(GET /public/v1/integrations lists them)")
        return value
    live = {channel["id"]: channel for channel in store.integrations(organization_id)}
    unknown = [channel_id for channel_id in dict.fromkeys(value) if channel_id not in live]
    disabled = [channel_id for channel_id in dict.fromkeys(value) if live.get(channel_id, {}).get("disabled")]
    if unknown:
        problems.append(f"integrations: {', '.join(repr(item[:100]) for item in unknown[:10])} "
                        f"{'is not a channel' if len(unknown) == 1 else 'are not channels'} of this organization")
    if disabled:
        problems.append(f"integrations: {', '.join(map(repr, disabled[:10]))} "
                        f"{'is' if len(disabled) == 1 else 'are'} disabled")
    return list(dict.fromkeys(value))


# --- an item as a post ------------------------------------------------------------------------------------------

def rendered_text(template: str, item: Any) -> str:
    """The template with the item's values: plain text."""
    description = item.summary
    if len(description) > MAX_DESCRIPTION_CHARACTERS:
        description = description[:MAX_DESCRIPTION_CHARACTERS - 1].rstrip() + "…"
    values = {"title": item.title, "url": item.link, "description": description, "author": item.author}
    return _PLACEHOLDER.sub(lambda found: values.get(found.group(1), found.group(0)), template).strip()


def post_content(text: str) -> str:
    """Plain text as a post's HTML: a paragraph per line."""
    from .text import escape_html
    return "".join(f"<p>{escape_html(line.strip())}</p>" for line in text.splitlines() if line.strip())


def feed_view(feed: dict) -> dict:
    """A feed as the routes answer it."""
    if feed["paused"]:
        state = "paused"
    elif feed["lastError"]:
        state = "failing"
    else:
        state = "active" if feed["primed"] else "new"
    return {"id": feed["id"], "url": feed["url"], "integrations": feed["integrations"], "template": feed["template"],
            "mode": feed["mode"], "includeImage": feed["includeImage"], "intervalMinutes": feed["intervalMinutes"],
            "paused": feed["paused"], "pausedReason": feed["pausedReason"], "state": state,
            "lastFetchAt": feed["lastFetchAt"], "lastResult": feed["lastResult"], "lastError": feed["lastError"],
            "failures": feed["failures"], "nextFetchAt": None if feed["paused"] else iso_at(feed["nextFetchAt"]),
            "createdAt": feed["createdAt"], "recent": feed.get("recent", [])}


def _validator(value: Optional[str]) -> Optional[str]:
    """An ETag or Last-Modified kept to be sent back, unless it is too long to be one (then none is kept)."""
    return value if value and len(value) <= 500 else None


class FeedFailed(Exception):
    """A fetch that brought no feed: why, in words for the feed's entry."""


class Fetcher:
    """Fetching feeds and turning their new items into posts, for the poller and the routes alike: through the
    outbound client `http`, writing as `owner` (the name on the leases this process takes)."""

    def __init__(self, store: Store, config: Config, http: Any, owner: str):
        self.store, self.config, self.http, self.owner = store, config, http, owner

    async def document(self, url: str, etag: Optional[str] = None, last_modified: Optional[str] = None) -> Any:
        """(items, ETag, Last-Modified) of the feed at `url`, or None when it answered 304; raises FeedFailed."""
        from .feeds import MAX_FEED_BYTES, FeedRefused, parse_feed
        from .http_client import ConnectFailed, NoAnswer, Timeouts
        headers = {"Accept": "application/rss+xml, application/atom+xml, application/rdf+xml, application/xml, "
                             "text/xml;q=0.9, */*;q=0.1"}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified

        def read(head: Any, pieces: Any) -> Any:
            if head.status == 304:
                return None
            if head.status != 200:
                raise FeedFailed(f"the feed answered HTTP {head.status}")
            body, size = [], 0
            for piece in pieces:
                size += len(piece)
                if size > MAX_FEED_BYTES:
                    raise FeedFailed(f"refused: the feed is larger than {MAX_FEED_BYTES // 2**20} MB, rustiz's limit")
                body.append(piece)
            try:
                items = parse_feed(b"".join(body))
            except FeedRefused as refused:
                raise FeedFailed(f"refused: {refused}") from None
            return items, _validator(head.headers.get("etag")), _validator(head.headers.get("last-modified"))
        try:
            return await self.http.download(url, read, headers, Timeouts(10, 30, 60))
        except (ConnectFailed, NoAnswer) as error:
            raise FeedFailed(str(error)[:500]) from None

    async def page_image(self, link: str) -> Optional[str]:
        """The og:image of an item's page (its first PAGE_BYTES), None when it has none or cannot be read."""
        from .feeds import page_image
        from .http_client import ConnectFailed, NoAnswer, Timeouts

        def read(head: Any, pieces: Any) -> Optional[str]:
            if head.status != 200 or "html" not in head.headers.get("content-type", ""):
                return None
            body, size = [], 0
            for piece in pieces:
                body.append(piece)
                size += len(piece)
                if size >= PAGE_BYTES:
                    break
            return page_image(b"".join(body))
        if not link.startswith(("http://", "https://")):
            return None
        try:
            return await self.http.download(link, read, {"Accept": "text/html"}, Timeouts(10, 20, 30))
        except (ConnectFailed, NoAnswer, ValueError):
            return None

    async def item_image(self, feed: dict, item: Any) -> Optional[str]:
        if not feed["includeImage"]:
            return None
        return item.image or await self.page_image(item.link)

    # --- one fetch of a claimed feed ---------------------------------------------------------------------------

    async def run(self, feed: dict) -> dict:
        """Fetch a feed this process claimed, post its new items, record the outcome and release the lease:
        {"result", "error"}."""
        outcome: dict = {"error": None, "nextFetchAt": time.time() + feed["intervalMinutes"] * 60}
        try:
            fetched = await self.document(feed["url"], feed["etag"], feed["lastModified"])
            if fetched is None:
                outcome["result"] = "not modified since the last fetch (HTTP 304): nothing new"
            else:
                items, outcome["etag"], outcome["lastModified"] = fetched
                outcome["result"] = await self._take(feed, items)
                outcome["primed"] = True
        except FeedFailed as failure:
            outcome.update(result="failed", error=str(failure))
        except Exception:  # a bug in rustiz: logged, the feed counts a failure
            log(f"autopost: feed {feed['id']} failed unexpectedly:\n{traceback.format_exc()}")
            outcome.update(result="failed", error="rustiz failed while reading it (its log has the details)")
        notification = (f"Autopost paused the feed {feed['url'][:300]}: {FAILURE_LIMIT} fetches in a row failed, the "
                        f"last because {outcome['error']}. Fix the feed, then resume it in RSS feeds "
                        f"({self.config.frontend_url}/#/autopost) or with PUT /public/v1/autopost/{feed['id']} "
                        '{"paused": false}.') if outcome["error"] else None
        finished = await self.store.off_loop(feed_store.finish_fetch, self.store, feed["id"], self.owner, outcome,
                                             FAILURE_LIMIT, notification)
        if finished and finished["paused"]:
            log(f"autopost: feed {feed['id']} ({feed['url'][:200]}) paused after {finished['failures']} failures")
        return {"result": outcome["result"], "error": outcome["error"]}

    async def _take(self, feed: dict, items: list) -> str:
        """The fetched items recorded: all as seen on the first fetch, else each new one as a post."""
        entries = [{"key": item.key, "title": item.title, "link": item.link} for item in items]
        if not feed["primed"]:
            await self.store.off_loop(feed_store.mark_seen, self.store, feed["id"], self.owner, entries)
            return (f"first fetch: {len(items)} item{'s' * (len(items) != 1)} marked as seen; new items become posts "
                    "from now on")
        seen = await self.store.off_loop(feed_store.seen_keys, self.store, feed["id"], [item.key for item in items])
        new = [item for item in items if item.key not in seen]
        if not new:
            return f"{len(items)} item{'s' * (len(items) != 1)}, none new"
        new.sort(key=lambda item: item.published or "", reverse=True)  # newest first, then posted oldest first
        taken, skipped = new[:MAX_NEW_ITEMS_PER_FETCH], new[MAX_NEW_ITEMS_PER_FETCH:]
        counts: dict = {}
        for item in skipped:
            await self.store.off_loop(feed_store.record_item, self.store, feed["organizationId"], feed["id"], self.owner,
                                      item._asdict(), "skipped", f"more than {MAX_NEW_ITEMS_PER_FETCH} new items at once")
        for item in reversed(taken):
            image = await self.item_image(feed, item)
            outcome = await self.store.off_loop(self.post_item, feed, item, image)
            counts[outcome] = counts.get(outcome, 0) + 1
        said = ", ".join(f"{number} {outcome}" for outcome, number in counts.items() if outcome != "lost")
        return f"{len(new)} new item{'s' * (len(new) != 1)}: " + (said or "recorded by another process") + (
            f", {len(skipped)} skipped" if skipped else "")

    def post_item(self, feed: dict, item: Any, image: Optional[str]) -> str:
        """One new item as one post group on the feed's channels, recorded with it: "posted", "duplicate",
        "refused", or "lost" (another process recorded it first, or took the feed over)."""
        from rustiz import ApiError
        from .api_posts import PostsApi
        from .duplicates import find_duplicates, duplicate_message
        from .storage import media_library as media_store
        from .storage.queue import QueueFull
        from .validation import validate_create_post
        organization_id = feed["organizationId"]
        text = rendered_text(feed["template"], item)
        body = {"type": {"now": "now", "queue": "queue", "review": "draft"}[feed["mode"]], "date": iso_at(time.time()),
                "shortLink": False, "tags": [],
                "posts": [{"integration": {"id": channel_id}, "settings": {},
                           "value": [{"content": post_content(text),
                                      "image": [{"id": new_cuid(), "path": image}] if image else []}]}
                          for channel_id in feed["integrations"]]}
        entry = {"key": item.key, "title": item.title, "link": item.link}
        posts = PostsApi(self)  # (it needs the Store and the Config only)
        try:
            plan = validate_create_post(body, lambda channel_id: channel_store.channel(
                self.store, organization_id, channel_id, include_deleted=True), self.config.frontend_url,
                lambda urls: media_store.media_ids_by_path(self.store, organization_id, urls))
            if feed["mode"] == "review":
                plan["review"] = "review"
            plan["creationMethod"] = "API"
            posts.plan_queue_date(organization_id, plan)  # (mode queue: the first channel's next free slot)
            threads, _ = posts.planned_rows(organization_id, plan)
        except ApiError as refused:
            message = refused.body.get("message") if isinstance(refused.body, dict) else None
            reason = "; ".join(message) if isinstance(message, list) else str(message or refused.body)
            return self._record(feed, entry, "refused", reason[:1000])
        duplicates = find_duplicates(self.store, plan)
        if duplicates:
            return self._record(feed, entry, "duplicate", duplicate_message(duplicates)[:1000])
        try:
            outcome = self._record(feed, entry, "posted", None, threads)
        except QueueFull as full:
            return self._record(feed, entry, "refused", f"the queue of channel {full.channel_id} has no free slot in "
                                                        "the next 90 days (or no posting schedule)")
        if outcome == "posted":
            self._announce(feed, plan, [thread[0]["id"] for thread in threads], posts)
        return outcome

    def _announce(self, feed: dict, plan: dict, root_ids: list, posts: Any) -> None:
        """Posts a feed made, told as POST /posts tells them (post.created to webhooks; drafts mailed to the
        reviewers), and, queued to go out, post.queued with the feed."""
        from . import mail
        from .post_events import queue_post_event
        organization_id = feed["organizationId"]
        posts.tell_webhooks(organization_id, "post.created", root_ids)
        if feed["mode"] == "review":
            mail.drafts_await_review(self.store, self.config, organization_id, root_ids,
                                     [post["integration"]["name"] for post in plan["posts"]])
        else:
            queue_post_event(self.store, organization_id, "post.queued", root_ids,
                             {"feed": {"id": feed["id"], "url": feed["url"]}})

    def _record(self, feed: dict, entry: dict, outcome: str, reason: Optional[str], threads: Optional[list] = None) -> str:
        recorded = feed_store.record_item(self.store, feed["organizationId"], feed["id"], self.owner, entry, outcome,
                                          reason, threads)
        return outcome if recorded else "lost"


# --- the loop: every process looks for due feeds -----------------------------------------------------------------

class FeedPoller(RowSender):
    """This process's fetcher of due feeds (beside the scheduler's webhook deliveries, alerts and mail): it
    claims a due feed under a lease, fetches it, posts its new items and records what came of it."""

    def __init__(self, host: SenderHost):
        from .alerts import numeric_setting
        self.host, self.store, self.loop, self.config = host, host.store, host.loop, host.config
        self.poll_seconds = numeric_setting(host.config.settings, "RUSTIZ_AUTOPOST_POLL_SECONDS", POLL_SECONDS,
                                            0.05, 3600)

    def _run_due(self) -> None:
        if self.stopped:
            return
        now = time.time()
        next_due = None
        try:
            room = CONCURRENCY - self.in_flight
            lease_until = now + FETCH_LEASE_SECONDS
            self.send_claimed((feed_store.claim_feed(self.store, feed_id, self.host.owner, lease_until, now)
                               for feed_id in (feed_store.due_feeds(self.store, now, room) if room > 0 else ())),
                              self._fetch, self.host.tasks)
            next_due = feed_store.next_due_time(self.store)
        except sqlite3.Error as error:
            log(f"autopost: the database failed ({error}); trying again in 5 s")
            next_due = now + 5
        wait = self.poll_seconds if next_due is None else min(self.poll_seconds, max(0.05, next_due - time.time()))
        self.sleep(wait)

    async def _fetch(self, feed: dict) -> None:
        try:
            await Fetcher(self.store, self.config, self.host.http, self.host.owner).run(feed)
        except sqlite3.Error as error:
            log(f"autopost: feed {feed['id']}: its fetch could not be recorded ({error}); its lease ends in "
                f"{FETCH_LEASE_SECONDS} s")


# --- the routes --------------------------------------------------------------------------------------------------

class AutopostApi:
    """rustiz: GET/POST /public/v1/autopost, PUT/DELETE /public/v1/autopost/:id, POST /:id/fetch, POST /preview."""

    def __init__(self, app: App):
        self.app, self.store, self.config = app, app.store, app.config

    def _fetcher(self) -> Fetcher:
        import os
        import socket
        return Fetcher(self.store, self.config, self.app.http, f"{socket.gethostname()}:{os.getpid()}:api")

    def _view(self, organization_id: str, feed_id: str) -> dict:
        feed = feed_store.feed(self.store, organization_id, feed_id)
        if feed is None:
            raise not_found(FEED_NOT_FOUND)
        return feed_view(feed)

    def listing(self, organization_id: str) -> list:
        return [feed_view(feed) for feed in feed_store.feeds(self.store, organization_id)]

    def add(self, organization_id: str, body: Any) -> dict:
        fields = checked_feed(self.store, organization_id, body)
        return self._view(organization_id, feed_store.create_feed(self.store, organization_id, fields, time.time()))

    def change(self, organization_id: str, feed_id: str, body: Any) -> dict:
        self._view(organization_id, feed_id)  # (404 before the body's problems)
        fields = checked_feed(self.store, organization_id, body, current={})
        feed_store.update_feed(self.store, organization_id, feed_id, fields, time.time())
        return self._view(organization_id, feed_id)

    def remove(self, organization_id: str, feed_id: str) -> dict:
        view = self._view(organization_id, feed_id)
        feed_store.delete_feed(self.store, organization_id, feed_id)
        return view

    async def fetch_now(self, organization_id: str, feed_id: str) -> dict:
        """{"result", "error", "feed"}: the feed fetched now, paused or not; 409 while another fetch runs."""
        fetcher = self._fetcher()
        now = time.time()
        feed = await self.store.off_loop(feed_store.claim_feed, self.store, feed_id, fetcher.owner,
                                         now + FETCH_LEASE_SECONDS, now, organization_id)
        if feed is None:
            await self.store.off_loop(self._view, organization_id, feed_id)  # (404 when there is none)
            raise nest_error(409, "The feed is being fetched right now; try again in a moment")
        outcome = await fetcher.run(feed)
        return {**outcome, "feed": await self.store.off_loop(self._view, organization_id, feed_id)}

    async def preview(self, organization_id: str, body: Any) -> dict:
        """The post the newest item of a feed would make with a template (nothing saved)."""
        from .feeds import newest_item
        if not isinstance(body, dict):
            raise bad_request("The request body must be a JSON object")
        problems: list = [f"property {name} should not exist" for name in body
                          if name not in ("url", "template", "includeImage")]
        url = _checked_url(body.get("url"), problems)
        template = _checked_field(self.store, organization_id, "template", body.get("template", DEFAULT_TEMPLATE),
                                  problems)
        include_image = _checked_field(self.store, organization_id, "includeImage", body.get("includeImage", False),
                                       problems)
        if problems:
            raise bad_request(problems)
        fetcher = self._fetcher()
        try:
            items = (await fetcher.document(url))[0]
        except FeedFailed as failure:
            raise bad_request(f"url: the feed could not be read: {failure}") from None
        item = newest_item(items)
        if item is None:
            return {"text": "", "image": None, "items": 0, "item": None}
        image = await fetcher.item_image({"includeImage": include_image}, item)
        return {"text": rendered_text(template, item), "image": image, "items": len(items),
                "item": {"title": item.title, "link": item.link, "published": item.published}}

    @documented("The organization's feeds, each with its state, last fetch (why a refused feed was refused) and "
                "latest items (rustiz)", ("200", object_schema({"feeds": array_of(FEED)})))
    def list_feeds(self, request: Request, organization_id: str) -> Response:
        return json_response({"feeds": self.listing(organization_id)})

    @route_options(scope="posts", audit="autopost.created")  # (an editor may: feeds make posts without review)
    @documented("A new feed: its new items become posts on the channels (rustiz; scope posts). The first fetch only "
                "marks the items there are as seen", ("201", FEED), "BadRequest", request=FEED_BODY)
    def create(self, request: Request, organization_id: str) -> Response:
        return json_response(self.add(organization_id, request.json()), 201)

    @route_options(scope="posts", audit="autopost.updated")
    @documented("Change a feed: only the fields sent; paused false resumes it (rustiz; scope posts)", ("200", FEED),
                "BadRequest NotFound", (FEED_ID,), FEED_BODY)
    def update(self, request: Request, organization_id: str) -> Response:
        return json_response(self.change(organization_id, request.params["id"], request.json()))

    @route_options(scope="posts", audit="autopost.deleted")
    @documented("Delete a feed (its posts stay) (rustiz; scope posts)", ("200", FEED), "NotFound", (FEED_ID,))
    def delete(self, request: Request, organization_id: str) -> Response:
        return json_response(self.remove(organization_id, request.params["id"]))

    @route_options(scope="posts", audit="autopost.fetched")
    @documented("Fetch a feed now, paused or not, and answer what came of it (rustiz; scope posts)",
                ("200", object_schema({"result": STRING, "error": {"type": ["string", "null"]}, "feed": FEED})),
                "NotFound Conflict", (FEED_ID,))
    def fetch(self, request: Request, organization_id: str) -> Any:
        return self._answer(self.fetch_now(organization_id, request.params["id"]))

    @route_options(scope="posts")
    @documented("What the newest item of a feed would post with a template, saving nothing (rustiz; scope posts)",
                ("200", PREVIEW), "BadRequest", request=object_schema({"url": STRING}, {
                    "template": STRING, "includeImage": BOOLEAN}))
    def preview_post(self, request: Request, organization_id: str) -> Any:
        return self._answer(self.preview(organization_id, request.json()))

    @staticmethod
    async def _answer(pending: Any) -> Response:
        return json_response(await pending)
