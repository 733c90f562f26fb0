"""What Facebook Page and Instagram (through Facebook) share: Facebook Login, the Graph API's errors, and the
pages a Facebook user manages.

Rules of this module:
- Consent is Facebook Login (/dialog/oauth). The code becomes a user token, then a long-lived one
  (fb_exchange_token, about 60 days). Posting uses the chosen page's token, which Meta derives from the
  long-lived user token and which does not expire: so the channel stores no expiry and no refresh token.
  The page token is read again whenever the user token changes (a reconnect), so a channel never posts with
  the page token of a consent that was replaced.
- Every Graph call carries the token in the Authorization header (never in a URL) and an appsecret_proof,
  which apps with "Require App Secret" demand and which proves the call comes from the app's server.
- Graph errors come as {"error": {"message", "type", "code", "error_subcode", "fbtrace_id"}}, often with an
  HTTP status that says little: the code decides. 190 (and 102, 463, 467) is a dead token, 4/17/32/613 and
  80001-80014 are throttling, 1/2 (or is_transient) a passing failure, 10 and 200-299 a missing permission.
"""
from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any, Optional
from urllib.parse import parse_qsl, urlencode, urlsplit

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply
from .base import Channel, Connected, NeedsReconnect, OutcomeUnknown, PublishError, Rejected, Retryable
from .oauth import AppCredentials, OAuthProvider, Tokens

GRAPH_VERSION = "v25.0"  # Postiz's META_GRAPH_API_VERSION
LONG_LIVED_SECONDS = 60 * 86400  # a long-lived token's life, when an answer does not say
GRAPH_PAGE_SIZE = 100
GRAPH_MOST_PAGES = 5  # pages of /me/accounts read when listing (500 Facebook pages)
DEAD_TOKEN_CODES = (102, 190, 463, 467)
THROTTLED_CODES = (4, 17, 32, 613) + tuple(range(80001, 80015))
PASSING_CODES = (1, 2)
PERMISSION_CODES = (10,) + tuple(range(200, 300))


def self_refreshing(tokens: Tokens) -> Tokens:
    """A long-lived token of Instagram standalone or Threads refreshes itself: it is kept as its own refresh
    token, so that TokenKeeper refreshes it; 60 days when the answer gives no expiry."""
    return tokens._replace(refresh_token=tokens.access_token, expires_in=tokens.expires_in or LONG_LIVED_SECONDS)


def graph_object_gone(error: PublishError) -> bool:
    """A deletion's error that says the object is not there: 404, or Graph's code 100 with subcode 33 ("Object
    with ID ... does not exist, cannot be loaded due to missing permissions, or does not support this operation")."""
    if error.status == 404:
        return True
    try:
        found = graph_error(json.loads(error.body or "null"))
    except ValueError:
        return False
    return found is not None and found.get("code") == 100 and found.get("error_subcode") == 33


def graph_error(answer: Any) -> Optional[dict]:
    """The "error" object of a Graph error answer; None for any other answer."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str) or not error["message"].strip():
        return None
    return error if type(error.get("code")) is int else None


def graph_words(error: dict) -> str:
    """Graph's own words for an error object: its message, code and subcode, and the text meant for users."""
    codes = ", ".join(f"{name} {error[key]}" for name, key in (("code", "code"), ("subcode", "error_subcode"))
                      if type(error.get(key)) is int)
    friendly = error.get("error_user_msg") if isinstance(error.get("error_user_msg"), str) else ""
    return error["message"].strip() + (f" ({codes})" if codes else "") + (f": {friendly.strip()}" if friendly.strip() else "")


def regain_seconds(reply: HttpReply) -> Optional[float]:
    """How long Meta says a throttled app or page waits: estimated_time_to_regain_access (minutes) of the
    X-Business-Use-Case-Usage header, the longest of its entries."""
    try:
        usage = json.loads(reply.headers.get("x-business-use-case-usage") or "{}")
        waits = [entry.get("estimated_time_to_regain_access") for entries in usage.values()
                 for entry in entries if isinstance(entry, dict)]
    except (ValueError, AttributeError, TypeError):
        return None
    minutes = [wait for wait in waits if isinstance(wait, (int, float)) and not isinstance(wait, bool) and wait > 0]
    return 60.0 * max(minutes) if minutes else None


class MetaGraphProvider(OAuthProvider):
    """A platform reached through Facebook Login and the Graph API, posting as a page the user picks."""
    app_variables = ("FACEBOOK_APP_ID", "FACEBOOK_APP_SECRET")
    auth_origin = "https://www.facebook.com"
    api_origin = "https://graph.facebook.com"
    pkce = False  # as Postiz: Facebook Login's code flow for a server app, with the secret
    between_steps = True
    required_permissions: tuple = ()  # what publishing cannot do without; checked at connect
    permission_advice = ("The page's permissions are missing: make sure the Facebook user has full control of the "
                         "page, then reconnect the channel allowing every permission")

    def graph(self, path: str, **query: Any) -> str:
        return f"{self.api_base()}/{GRAPH_VERSION}/{path.lstrip('/')}" + (f"?{urlencode(query)}" if query else "")

    # --- Facebook Login --------------------------------------------------------------------------------

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        query = {"client_id": app.client_id, "redirect_uri": redirect_uri, "state": state,
                 "response_type": "code", "scope": ",".join(self.scopes)}
        return f"{self.auth_base()}/{GRAPH_VERSION}/dialog/oauth?{urlencode(query)}"

    async def exchange_code(self, http: HttpClient, app: AppCredentials, code: str, redirect_uri: str,
                            code_verifier: Optional[str], details: dict) -> Tokens:
        app_query = {"client_id": app.client_id, "client_secret": app.client_secret}
        short = await self._access_token(http, {**app_query, "redirect_uri": redirect_uri, "code": code},
                                         "the code exchange")
        long_lived = await self._access_token(
            http, {**app_query, "grant_type": "fb_exchange_token", "fb_exchange_token": short},
            "the long-lived token exchange")
        return Tokens(long_lived)  # no expiry kept: posting uses the page's token, which has none

    async def _access_token(self, http: HttpClient, query: dict, what: str) -> str:
        reply = await self.send(Channel("", "", {}, None, http), "GET", self.graph("oauth/access_token", **query),
                                what=what)
        token = reply.json().get("access_token") if isinstance(reply.json(), dict) else None
        if not isinstance(token, str) or not token:
            raise Retryable(f"Facebook answered {what} without an access token "
                            f"({reply.described('a token answer')})", reply.status)
        return token

    # --- calls as the user or as the page ----------------------------------------------------------------

    def signed(self, channel: Channel, token: str) -> tuple:
        """(headers, query) of a Graph call made with `token`: the bearer header and the appsecret_proof."""
        query = {}
        if channel.app is not None:
            proof = hmac.new(channel.app.client_secret.encode(), token.encode(), hashlib.sha256).hexdigest()
            query["appsecret_proof"] = proof
        return {"Authorization": f"Bearer {token}"}, query

    async def graph_call(self, channel: Channel, method: str, path: str, token: str, what: str,
                         visible: bool = False, query: Optional[dict] = None, **request: Any) -> Any:
        """One Graph call; its JSON answer (a dict, {} when it is not one)."""
        headers, proof = self.signed(channel, token)
        reply = await self.send(channel, method, self.graph(path, **{**(query or {}), **proof}), visible=visible,
                                what=what, headers={**headers, **request.pop("headers", {})}, **request)
        answer = reply.json()
        return answer if isinstance(answer, dict) else {}

    def user_token(self, channel: Channel) -> str:
        return channel.credentials["accessToken"]

    async def connect(self, channel: Channel) -> Connected:
        """The Facebook user who consented (the channel becomes a page once one is chosen), with the
        permissions publishing needs checked."""
        token = self.user_token(channel)
        granted = await self.graph_call(channel, "GET", "me/permissions", token, "the granted permissions")
        have = {item.get("permission") for item in granted.get("data") or [] if isinstance(item, dict)
                and item.get("status") == "granted"}
        missing = [permission for permission in self.required_permissions if permission not in have]
        if missing:
            raise Rejected(f"Facebook did not grant {', '.join(missing)}: connect again and leave every permission "
                           "(and the pages to post to) ticked in Facebook's dialog")
        me = await self.graph_call(channel, "GET", "me", token, "the Facebook user", query={"fields": "id,name,picture"})
        if not isinstance(me.get("id"), str):
            raise Rejected("Facebook answered /me without the user's id")
        return Connected(ChannelAccount(me["id"], str(me.get("name") or me["id"]), None, picture_url(me)))

    async def managed_pages(self, channel: Channel, fields: str) -> list:
        """The Facebook pages the user manages and shared with the app (/me/accounts), with `fields`."""
        pages: list = []
        url: Optional[str] = None
        token = self.user_token(channel)
        for _ in range(GRAPH_MOST_PAGES):
            if url is None:
                answer = await self.graph_call(channel, "GET", "me/accounts", token, "the user's pages",
                                               query={"fields": fields, "limit": GRAPH_PAGE_SIZE})
            else:  # Graph's own next-page URL, on Graph's origin only, with our proof whether it kept it or not
                headers, proof = self.signed(channel, token)
                query = {name: value for name, value in parse_qsl(urlsplit(url).query) if name not in proof}
                url = urlsplit(url)._replace(query=urlencode({**query, **proof})).geturl()
                reply = await self.send(channel, "GET", url, what="the user's pages", headers=headers)
                answer = reply.json() if isinstance(reply.json(), dict) else {}
            pages += [page for page in answer.get("data") or [] if isinstance(page, dict) and page.get("id")]
            following = (answer.get("paging") or {}).get("next") if isinstance(answer.get("paging"), dict) else None
            if not isinstance(following, str) or urlsplit(following)[:2] != urlsplit(self.api_base())[:2]:
                break
            url = following
        return pages

    async def page_token(self, channel: Channel, page_id: str) -> str:
        """The chosen page's token, read again from Graph when the user token changed since it was read."""
        user_token = self.user_token(channel)
        of = hashlib.sha256(user_token.encode()).hexdigest()[:16]
        if channel.session.get("pageTokenOf") == of and channel.session.get("pageToken"):
            return channel.session["pageToken"]
        page = await self.graph_call(channel, "GET", page_id, user_token, "the page's access token",
                                     query={"fields": "access_token"})
        token = page.get("access_token")
        if not isinstance(token, str) or not token:
            raise NeedsReconnect(f"the Facebook user who connected this channel does not manage page {page_id} "
                                 "any more (or did not share it with rustiz): reconnect with a user who does")
        channel.save_session({**channel.session, "pageToken": token, "pageTokenOf": of})
        return token

    # --- errors --------------------------------------------------------------------------------------------

    def error_words(self, reply: HttpReply) -> Optional[str]:
        error = graph_error(reply.json())
        return super().error_words(reply) if error is None else graph_words(error)

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        error = graph_error(reply.json()) if reply.status >= 400 else None
        if error is None:
            return super().check_reply(reply, visible, what)
        code, message, body = error["code"], self.platform_words(reply), self.error_excerpt(reply)
        if not visible:
            message += f" (on {what})"
        if code in DEAD_TOKEN_CODES:
            raise NeedsReconnect(message, reply.status, body)
        if code in THROTTLED_CODES or error.get("error_subcode") == 1390008:  # 368/1390008: "posting too fast"
            raise Retryable(message, reply.status, body, after=regain_seconds(reply))
        if code in PASSING_CODES or error.get("is_transient") is True:
            if visible and reply.status not in (502, 503):  # a post may have been made before the failure
                raise OutcomeUnknown(f"a passing failure, after the post was sent: {message}", reply.status, body)
            raise Retryable(message, reply.status, body)
        if code in PERMISSION_CODES:
            raise Rejected(f"{message}. {self.permission_advice}", reply.status, body)
        return super().check_reply(reply, visible, what)


def picture_url(thing: dict) -> Optional[str]:
    """A Graph object's picture URL ({"picture": {"data": {"url"}}})."""
    picture = thing.get("picture")
    data = picture.get("data") if isinstance(picture, dict) else None
    url = data.get("url") if isinstance(data, dict) else None
    return url if isinstance(url, str) and url else None
