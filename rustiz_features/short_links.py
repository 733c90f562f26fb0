"""Short links: a post's links replaced at publish time by {FRONTEND_URL}/s/<code>, which redirects (302) to the
original and counts the click; or by Dub's, Short.io's or Kutt's links when one of them is configured.

Rules:
- The organization's preference (PUT /organization {"shortLink": "ask"|"yes"|"no"}, default ask) decides at
  scheduling: a post sent with shortLink true is stored as wanting short links under yes and ask (ask: the
  composer asked, and true is the person's answer); under no, or when it cannot be acted on, the answer of
  POST /posts says `"shortLink": "not applied: <why>"`. Under yes, a FRONTEND_URL the internet cannot reach
  (judged from the URL alone, as for platforms that pull media) is refused with a 400 naming FRONTEND_URL.
- Publishing replaces links in the text handed to the publisher only; the stored post keeps its text. A link has
  one code per post for ever (a retry or a repeat reuses it).
- A shortener that fails never loses the post: it goes out with its original links, and a notification says
  which shortener failed and what it said (its own error words, bounded; never a raw body).
- /s/<code> is public: no cookie, nothing about the visitor stored; bots, link-preview fetchers and HEAD
  requests are counted apart. An unknown or malformed code is a 404 page that does not repeat it.
- Clicks are counted with one small UPSERT per click (a shared write on PostgreSQL), not batched as REQUEST_LIMIT
  is: measured in the same range as a 404 that writes nothing (docs/short-links.md).
"""
from __future__ import annotations

import html
import re
import time
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

from rustiz import App, Config, Request, Response, Store, bad_request, json_response, log, nest_error, route_options
from .api_docs import INTEGER, POST_ID, STRING, array_of, documented, object_schema, parameter
from .http_client import ERROR_WORDS_LIMIT, network_reason, platform_url, private_host_reason
from .storage import notifications as notification_store
from .storage import posts as post_store
from .storage import short_links as link_store

if TYPE_CHECKING:
    from .http_client import HttpClient

PREFERENCES = ("ask", "yes", "no")
CODE_PATTERN = re.compile(r"[A-Za-z0-9_-]{6,32}")
# An http(s) link in a post's text (HTML or plain): up to whitespace, a quote or a tag; trailing punctuation
# belongs to the sentence, not the link.
LINK_PATTERN = re.compile(r"""https?://[^\s<>"'`]+""", re.IGNORECASE)
TRAILING_PUNCTUATION = ".,;:!?)]}*"
# Link-preview fetchers and bots, from the User-Agent (an empty one too): their clicks are counted apart.
BOT_AGENTS = re.compile(r"bot|crawl|spider|slurp|preview|facebookexternalhit|whatsapp|telegram|discord|slack|"
                        r"linkedin|mastodon|pleroma|misskey|cardyb|embedly|pinterest|skype|vkshare|curl|wget|"
                        r"python|httpx|go-http|java/|okhttp|libwww|headless|lighthouse|monitor", re.IGNORECASE)
NOT_FOUND_PAGE = (b"<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>Link not found</title>"
                  b"<body><h1>Link not found</h1><p>This short link does not exist, or was mistyped.</p></body></html>")


# --- the organization's preference (GET/PUT /public/v1/organization) ------------------------------------------

def preference_field(store: Store, organization_id: str) -> dict:
    """{"shortLink": "ask"|"yes"|"no"}: the field GET and PUT /organization add to their answer."""
    return {"shortLink": link_store.preference(store, organization_id)}


def take_preference(body: dict) -> Optional[str]:
    """The body's "shortLink" (removed from it, so that the rest is checked as before), or None when absent;
    raises a 400 naming the field when it is not one of the three."""
    if "shortLink" not in body:
        return None
    value = body.pop("shortLink")
    if value not in PREFERENCES:
        raise bad_request([f'shortLink must be one of the following values: {", ".join(PREFERENCES)}'])
    return value


def save_preference(store: Store, organization_id: str, value: Optional[str]) -> None:
    if value is not None:
        link_store.set_preference(store, organization_id, value)


# --- at scheduling (POST /posts, PUT /posts/:id, MCP) ----------------------------------------------------------

class Decision(NamedTuple):
    wanted: bool  # the posts are stored as wanting short links
    not_applied: Optional[str]  # why a shortLink true is not acted on, for the answer; None when it is (or unasked)


def decide(store: Store, config: Config, organization_id: str, asked: bool, texts: list) -> Decision:
    """What to do with a plan's shortLink; raises a 400 naming FRONTEND_URL when the preference is yes and the
    built-in shortener's links could not be reached from the internet."""
    if not asked:
        return Decision(False, None)
    preference = link_store.preference(store, organization_id)
    if preference == "no":
        return Decision(False, 'not applied: the organization\'s short-link preference is "no"')
    if not any(LINK_PATTERN.search(text or "") for text in texts):
        return Decision(False, "not applied: the post has no http(s) link to shorten")
    unreachable = None if shortener_name(config) else frontend_problem(config)
    if unreachable and preference == "yes":
        raise bad_request([f"shortLink: {unreachable}"])
    if unreachable:
        return Decision(False, f"not applied: {unreachable}")
    return Decision(True, None)


def decide_plan(store: Store, config: Config, organization_id: str, plan: dict) -> Decision:
    """decide() for a validated CreatePost plan (its every value's text)."""
    texts = [value["content"] for post in plan["posts"] for value in post["values"]]
    return decide(store, config, organization_id, bool(plan.get("shortLink")), texts)


def remember(store: Store, organization_id: str, threads: list, decision: Decision) -> None:
    """Store the decision on every post of the threads just saved (a post saved again without it forgets it)."""
    link_store.mark_wanted(store, organization_id, [row["id"] for thread in threads for row in thread],
                           decision.wanted)


def frontend_problem(config: Config) -> Optional[str]:
    """Why {FRONTEND_URL}/s/<code> links could not be opened from the internet, or None."""
    why = private_host_reason(config.frontend_url)
    if why is None:
        return None
    return (f"short links are {config.frontend_url or 'FRONTEND_URL'}/s/..., and FRONTEND_URL is {why}, which "
            "nobody on the internet can open: set FRONTEND_URL (in config.env) to this server's public https "
            "address and restart, or configure Dub, Short.io or Kutt")


# --- at publish time ----------------------------------------------------------------------------------------

async def text_to_publish(store: Store, config: Config, http: "HttpClient", claim: dict) -> str:
    """The text a publisher sends for this claimed post: its links shortened when the post wants it, else as
    stored. A shortener's failure leaves the links as they are and says so in a notification."""
    text = claim["content"] or ""
    if not LINK_PATTERN.search(text) or not link_store.is_wanted(store, claim["id"]):
        return text
    if link_store.preference(store, claim["organization_id"]) == "no":
        return text
    name = shortener_name(config)
    if name is None and frontend_problem(config):
        _notify(store, claim, f"its links were not shortened: {frontend_problem(config)}")
        return text
    try:
        return await _shortened(store, config, http, claim, name, text)
    except ShortenerFailed as failed:
        log(f"post {claim['id']}: {failed}; published with its original links")
        _notify(store, claim, f"{failed}; it was published with its original links")
        return text


async def _shortened(store: Store, config: Config, http: Any, claim: dict, name: Optional[str], text: str) -> str:
    import secrets  # (here: it loads OpenSSL, which a server that only checks keys never needs)
    base = f"{config.frontend_url}/s/"
    replacements: dict = {}
    for match in LINK_PATTERN.finditer(text):
        written = match.group(0).rstrip(TRAILING_PUNCTUATION)
        url = html.unescape(written)
        if written in replacements or written.startswith(base) or not _safe_target(url):
            continue
        found = link_store.stored_code(store, claim["id"], url)  # (a retry, a repeat: the link made the first time)
        if found is None:
            external = await shorten_with(config, http, name, url, claim["organization_id"]) if name else None
            found = link_store.code_for(store, claim["organization_id"], claim["id"], url, len(replacements),
                                        secrets.token_urlsafe(6), external)
        code, external = found
        replacements[written] = external or base + code
    if not replacements:
        return text
    pattern = re.compile("|".join(re.escape(link) for link in sorted(replacements, key=len, reverse=True)))
    return pattern.sub(lambda found: replacements[found.group(0)], text)


def _safe_target(url: str) -> bool:
    """A link worth redirecting to: http(s), at most 2,000 characters, no control characters or spaces."""
    return len(url) <= 2000 and re.fullmatch(r"https?://[^\s\x00-\x1f\x7f]+", url, re.IGNORECASE) is not None


def _notify(store: Store, claim: dict, what: str) -> None:
    notification_store.add_notification(store, claim["organization_id"],
                                        f"{claim['channel_name']}: {what}", post_id=claim["id"])


# --- Dub, Short.io, Kutt (Postiz's settings) -----------------------------------------------------------------

class ShortenerFailed(Exception):
    """A shortener refused or could not be reached; the message names it and says what it said (bounded)."""


def shortener_name(config: Config) -> Optional[str]:
    """The external shortener configured, as Postiz picks it (Dub, then Short.io, then Kutt), or None."""
    settings = config.settings or {}
    for name, variable in (("Dub", "DUB_TOKEN"), ("Short.io", "SHORT_IO_SECRET_KEY"), ("Kutt", "KUTT_API_KEY")):
        if settings.get(variable):
            return name
    return None


def _shortener_request(config: Config, name: str, url: str, organization_id: str) -> tuple:
    """(endpoint, headers, JSON body, the answer's field holding the short link) of a shortener's create call."""
    settings = config.settings or {}
    if name == "Dub":
        return (settings.get("DUB_API_ENDPOINT", "https://api.dub.co").rstrip("/") + "/links",
                {"Authorization": f"Bearer {settings['DUB_TOKEN']}"},
                {"url": url, "tenantId": organization_id, "domain": settings.get("DUB_SHORT_LINK_DOMAIN", "dub.sh")},
                "shortLink")
    if name == "Short.io":
        return (platform_url("SHORT_IO_API_URL", "https://api.short.io") + "/links",
                {"Authorization": settings["SHORT_IO_SECRET_KEY"]},
                {"originalURL": url, "domain": settings.get("SHORT_IO_DOMAIN", "short.io")}, "shortURL")
    return (settings.get("KUTT_API_ENDPOINT", "https://kutt.it/api/v2").rstrip("/") + "/links",
            {"X-API-Key": settings["KUTT_API_KEY"]},
            {"target": url, "domain": settings.get("KUTT_SHORT_LINK_DOMAIN", "kutt.it"), "reuse": False}, "link")


async def shorten_with(config: Config, http: Any, name: str, url: str, organization_id: str) -> str:
    """The shortener's link for `url`; raises ShortenerFailed naming the shortener and what it said."""
    from .http_client import ConnectFailed, NoAnswer, Timeouts
    endpoint, headers, body, field = _shortener_request(config, name, url, organization_id)
    try:
        reply = await http.request("POST", endpoint, {**headers, "Accept": "application/json"}, json_body=body,
                                   timeouts=Timeouts(connect=10.0, read=20.0, total=30.0))
    except (ConnectFailed, NoAnswer, OSError) as error:
        raise ShortenerFailed(f"{name} could not be reached to shorten its links ({network_reason(error)})") from None
    answer = reply.json()
    short = answer.get(field) if isinstance(answer, dict) else None
    if 200 <= reply.status < 300 and isinstance(short, str) and _safe_target(short):
        return short
    raise ShortenerFailed(f"{name} did not shorten its links: {_shortener_words(reply, answer, field)}")


def _shortener_words(reply: Any, answer: Any, field: str) -> str:
    """What a shortener's error answer says: its own message (Dub {"error": {"message"}}, Short.io
    {"error"|"message"}, Kutt {"error"}), bounded; else only the status and size of what came back."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if isinstance(error, dict):
        error = error.get("message")
    if not isinstance(error, str) and isinstance(answer, dict):
        error = answer.get("message")
    if isinstance(error, str) and error.strip():
        return f"HTTP {reply.status}: {' '.join(error.split())[:ERROR_WORDS_LIMIT]}"
    return reply.described(f'a JSON object with its "{field}"')


# --- /s/<code>: the redirect, and GET /posts/:id/links ----------------------------------------------------------

def is_bot(request: Request) -> bool:
    """A link-preview fetcher, a crawler or a script (by its User-Agent, or none), or a HEAD request."""
    agent = request.headers.get("user-agent", "")
    return request.method == "HEAD" or not agent.strip() or BOT_AGENTS.search(agent) is not None


class ShortLinkRedirect:
    """GET /s/:code: 302 to the original link, the click counted (no key, no cookie)."""

    def __init__(self, app: App):
        self.store = app.store

    @route_options(authenticated=False)
    @documented("A short link: 302 to the original link, the click counted per day; bots and link-preview "
                "fetchers apart (rustiz)", ("302", {"description": "Location: the original link"}),
                parameters=(parameter("path", "code", "The short link's code"),),
                more_answers={"404": {"description": "An unknown code (an HTML page)"}})
    def follow(self, request: Request) -> Response:
        code = request.params.get("code", "")
        url = link_store.target(self.store, code) if CODE_PATTERN.fullmatch(code) else None
        if url is None or not _safe_target(url):
            return Response(404, NOT_FOUND_PAGE, "text/html; charset=utf-8",
                            [("Cache-Control", "no-store"), ("Content-Security-Policy", "default-src 'none'")])
        link_store.count_click(self.store, code, time.strftime("%Y-%m-%d", time.gmtime()), is_bot(request))
        return Response(302, b"", "text/plain; charset=utf-8",
                        [("Location", url), ("Cache-Control", "no-store"), ("Referrer-Policy", "no-referrer")])


_LINK = object_schema({"url": STRING, "short": STRING, "clicks": INTEGER, "botClicks": INTEGER,
                       "days": array_of(object_schema({"date": STRING, "clicks": INTEGER}))})


class ShortLinksApi:
    """GET /public/v1/posts/:id/links."""

    def __init__(self, app: App):
        self.store, self.config = app.store, app.config

    @documented("The post's short links (its whole thread) with their clicks, by day; bots and link-preview "
                "fetchers apart (rustiz)", ("200", object_schema({"links": array_of(_LINK)})), "NotFound",
                (POST_ID,))
    def links(self, request: Request, organization_id: str) -> Response:
        return json_response({"links": post_links(self.store, self.config, organization_id, request.params["id"])})


def post_links(store: Store, config: Config, organization_id: str, post_id: str) -> list:
    """The links of the post's thread: [{url, short, clicks, botClicks, days: [{date, clicks}]}]; raises 404 for
    a post that is not the organization's."""
    post = post_store.post(store, organization_id, post_id)
    if post is None:
        raise nest_error(404, f"Post {post_id[:100]} not found")
    thread = post_store.thread(store, organization_id, post["group"]) or [post]
    links = link_store.links_of_posts(store, organization_id, [part["id"] for part in thread])
    return [{"url": link["url"], "short": link["external"] or f"{config.frontend_url}/s/{link['code']}",
             "clicks": sum(day[1] for day in link["days"]), "botClicks": sum(day[2] for day in link["days"]),
             "days": [{"date": day[0], "clicks": day[1]} for day in link["days"]]} for link in links]
