"""OAuth channels: the connect flow (GET /social/:integration, the platform's consent, the callback), the
choice some platforms ask for after consent, and keeping tokens fresh.

Rules:
- A flow's state is random, bound to the organization, good once, an hour long, and kept in the database,
  so any worker can finish the flow. PKCE (S256) wherever the provider supports it.
- The callback completes a flow only in a browser signed in to the organization that started it: else a
  link made by one organization would make whoever consents on it that organization's channel. A browser
  without its session cookie (signed out, or coming back through a cross-site redirect, which never carries
  a SameSite=Strict cookie) is sent to the web app, which comes back to the callback once signed in; a
  browser of another organization gets a refusal and the flow ends.
- The callback answers with a redirect to the web app's channels page, saying what happened as codes the
  page words itself (a crafted link cannot make it show any text); a platform's words go to the
  organization's notifications, only as its provider's error_words found them (never a raw body).
- Tokens are refreshed ahead of expiry and after a 401, by one worker at a time (a lease in the database).
  Only a definite refusal (TokenRefused) flags the channel, and notifies once; a passing failure leaves it
  connected, for the next attempt.
"""
from __future__ import annotations

import os
import secrets
import socket
import time
from typing import Any, Awaitable, Callable, Optional
from urllib.parse import quote, urlencode

from rustiz import ApiError, App, Config, Request, Response, Store, hash_api_key, iso_at, json_object, \
    json_response, log, nest_error, not_found, route_options, session_cookie
from .api_docs import CHANNEL_ID, STRING, array_of, documented, object_schema, parameter, ref
from .audit import record_request
from .catalogue import DESCRIPTORS, NewChannel, url_problem
from .http_client import HttpClient
from .metrics import count
from .publishers import provider_for
from .publishers.base import AddressNotAllowed, Channel, PublishError
from .publishers.oauth import AppCredentials, OAuthProvider, TokenRefused, Tokens, pkce_pair
from .storage import notifications as notification_store
from .storage import channels as channel_store
from .storage import oauth as oauth_store
from .storage import scheduling as schedule_store

FLOW_SECONDS = 3600  # how long a consent may take, from GET /social to the callback
REFRESH_LEASE_SECONDS = 60  # one worker refreshes a channel at a time; a dead one's lease ends after this


def callback_url(config: Config, identifier: str) -> str:
    """Where the platform sends the user back: Postiz's {FRONTEND_URL}/integrations/social/<identifier>."""
    return f"{config.frontend_url}/integrations/social/{identifier}"


def oauth_provider(identifier: str) -> Optional[OAuthProvider]:
    descriptor = DESCRIPTORS.get(identifier)
    if descriptor is None or not descriptor.oauth:
        return None
    provider = provider_for(identifier)
    return provider if isinstance(provider, OAuthProvider) else None


def expiration(tokens: Tokens) -> Optional[str]:
    return None if tokens.expires_in is None else iso_at(time.time() + tokens.expires_in)


async def operator_app(store: Store, config: Config, provider: OAuthProvider, http: HttpClient,
                       details: dict) -> Optional[AppCredentials]:
    """The app a flow or a refresh uses: the operator's (Postiz's variables), or one rustiz registered itself
    on the platform (a Mastodon instance: made on first use and kept per instance)."""
    if provider.needs_operator_app:
        return provider.app(config.settings or {})
    origin = provider.app_origin(details)
    stored = await store.off_loop(oauth_store.oauth_app, store, provider.identifier, origin)
    if stored is None:
        registered = await provider.register_app(http, origin, callback_url(config, provider.identifier))
        stored = await store.off_loop(oauth_store.save_oauth_app, store, provider.identifier, origin, registered.client_id,
                                      registered.client_secret)
    return AppCredentials(*stored)


def needs_operator_app(config: Config, provider: OAuthProvider) -> ApiError:
    """The answer for a platform whose app the operator has not configured: what to register, and where."""
    names = " and ".join(provider.app_variables)
    url = callback_url(config, provider.identifier)
    return ApiError(400, {
        "statusCode": 400, "error": "Bad Request", "needsOperatorApp": True, "callbackUrl": url,
        "variables": list(provider.app_variables), "guide": provider.operator_guide,
        "message": (f"{provider.label} needs the operator's app: set {names} in config.env (or the environment) "
                    f"and restart rustiz. Register this callback URL with the app: {url}. {provider.operator_guide}")})


class ConnectFlow:
    """The routes of the OAuth connect flow and of the choice after consent."""

    def __init__(self, app: App):
        self.app, self.store, self.config = app, app.store, app.config

    @property
    def http(self) -> HttpClient:
        return self.app.http

    # --- GET /public/v1/social/:integration ---------------------------------------------------------

    @route_options(scope="full")  # (a GET that starts connecting a channel)
    @documented("Start connecting an OAuth channel: the platform's consent page, which comes back to "
                "{FRONTEND_URL}/integrations/social/<identifier>. Without the operator's app configured: 400 with "
                "needsOperatorApp, callbackUrl, variables and guide (rustiz). Telegram (the operator's bot, "
                "TELEGRAM_TOKEN): {url, code, bot}, the code to send as /connect <code> in the chat",
                ("200", object_schema({"url": STRING}, {"code": STRING, "bot": STRING})),
                "BadRequest NotFound PlatformUnreachable",
                (parameter("path", "integration", "The provider identifier (x, linkedin, mastodon...)"),
                 parameter("query", "refresh", "Reconnect this channel (its id): it keeps its id, posts and settings"),
                 parameter("query", "instance", "Mastodon: the server to connect to (rustiz registers its app there)")))
    async def start(self, request: Request, organization_id: str) -> Response:
        """{"url": the platform's consent page}, as Postiz; ?refresh=<channel id> reconnects that channel."""
        identifier = request.params["integration"]
        if identifier == "telegram":  # (issue 28, chat: the operator's bot; its answer is Postiz's for Telegram)
            return await self._telegram_code(organization_id)
        provider = oauth_provider(identifier)
        if provider is None:
            known = DESCRIPTORS.get(identifier)
            if known is None:
                raise not_found(f"integration: no provider is called {identifier!r}")
            raise nest_error(400, f"integration: {known.label} does not connect through OAuth in rustiz"
                                  + (": add it with POST /public/v1/integrations and its credentials"
                                     if known.credentials else ""))
        unreachable = provider.media_origin_problem(self.config.frontend_url) if provider.needs_public_media else None
        if unreachable:  # every post of it carries media it downloads: none could ever go out
            raise nest_error(400, f"FRONTEND_URL: {unreachable}; then connect {provider.label}")
        refresh = request.query.get("refresh") or None
        if refresh is not None:
            channel = await self.store.off_loop(channel_store.channel, self.store, organization_id, refresh)
            if channel is None or channel["provider_identifier"] != identifier:
                raise not_found(f"refresh: no {provider.label} channel {refresh!r} in this organization")
        details = self._details(provider, request)
        app = await self._app(provider, details)
        verifier, challenge = pkce_pair() if provider.pkce else (None, None)
        state = secrets.token_urlsafe(32)
        try:
            url = await provider.begin(self.http, app, callback_url(self.config, identifier), state, challenge,
                                       details)
        except PublishError as failed:
            raise nest_error(502, f"{provider.label} did not start the connection: {failed.message}; try again "
                                  "in a minute") from None
        state = details.pop("state", state)
        await self.store.off_loop(oauth_store.start_oauth_flow, self.store, state, organization_id, identifier, verifier, refresh,
                                  details, time.time() + FLOW_SECONDS)
        return json_response({"url": url})

    async def _telegram_code(self, organization_id: str) -> Response:
        """{"url", "code", "bot"}: a /connect code for the operator's bot (telegram_bot.py); 400 saying what the
        operator sets when there is no bot, and that the user's own bot token still works."""
        from .telegram_bot import new_connect_code
        try:
            answer = await self.store.off_loop(new_connect_code, self.store, self.config.settings or {},
                                               organization_id)
        except LookupError:
            raise ApiError(400, {"statusCode": 400, "error": "Bad Request", "needsOperatorApp": True,
                                 "variables": ["TELEGRAM_TOKEN", "TELEGRAM_BOT_NAME"],
                                 "message": "Telegram's operator bot is not set up on this server: the operator sets "
                                            "TELEGRAM_TOKEN and TELEGRAM_BOT_NAME in config.env (the bot from "
                                            "@BotFather) and restarts rustiz. Meanwhile, connect your own bot with "
                                            "its token and the chat id (POST /public/v1/integrations)"}) from None
        return json_response(answer)

    def _details(self, provider: OAuthProvider, request: Request) -> dict:
        """What the flow keeps beside its state; for a provider on any instance, the instance the user named."""
        if provider.needs_operator_app:
            return {}
        instance = request.query.get("instance") or (self.config.settings or {}).get("MASTODON_URL", "")
        if not instance:
            raise nest_error(400, f"instance: name the {provider.label} server to connect to, as "
                                  "?instance=https://mastodon.social")
        problem = url_problem(instance, ("https", "http"))
        if problem:
            raise nest_error(400, f"instance {problem}")
        return {"instance": instance.rstrip("/")}

    async def _app(self, provider: OAuthProvider, details: dict) -> AppCredentials:
        try:
            app = await operator_app(self.store, self.config, provider, self.http, details)
        except AddressNotAllowed as refused:
            raise nest_error(400, f"instance: {refused.message}") from None
        except PublishError as failed:
            raise nest_error(502, f"{provider.label} at {details.get('instance', '')} did not register rustiz's "
                                  f"app: {failed.message}; check the address, then try again") from None
        if app is None:
            raise needs_operator_app(self.config, provider)
        return app

    # --- GET /integrations/social/:identifier: the platform sends the user back here ---------------------

    @route_options(authenticated=False)  # the browser comes back from the platform; the state names the org
    @documented("Where an OAuth platform sends the user back after consent: stores the channel, then redirects to the "
                "web app's channels page with notice= or problem=",
                ("303", {"description": "To {FRONTEND_URL}/#/channels?notice=...&channel=<id> or "
                                        "?problem=<what happened and what to do>", "content": {}}),
                parameters=(parameter("path", "identifier", "The provider identifier"),
                            parameter("query", "code", "The authorization code (OAuth 2.0)"),
                            parameter("query", "state", "The flow's state, from GET /social/:integration"),
                            parameter("query", "error", "The platform's refusal, e.g. access_denied")))
    async def callback(self, request: Request) -> Response:
        identifier = request.params["identifier"]
        query = request.query
        state = query.get("state") or query.get("oauth_token") or query.get("denied") or ""  # (OAuth 1.0a: no state)
        provider = oauth_provider(identifier)
        owner = await self.store.off_loop(oauth_store.oauth_flow_owner, self.store, state, time.time()) if state else None
        if owner is None or provider is None or owner[1] != identifier:
            return self._back(problem="expired", provider=identifier)
        browser_organization = await self.store.off_loop(self._browser_organization, request)
        if browser_organization is None:
            return self._resume_after_sign_in(request)
        flow = await self.store.off_loop(oauth_store.take_oauth_flow, self.store, state, time.time())
        if flow is None:
            return self._back(problem="expired", provider=identifier)
        if flow["organization_id"] != browser_organization:  # the link stops working: it was taken above
            return self._back(problem="other-organization", provider=identifier)
        if query.get("error") or query.get("denied"):
            return self._back(problem="denied", provider=identifier)
        code = query.get("code") or query.get("oauth_verifier")
        if not code:
            return self._back(problem="no-code", provider=identifier)
        flow["details"].update({name: query[name] for name in provider.callback_parameters if query.get(name)})
        try:
            channel_id, existed = await self._finish(provider, flow, code)
        except PublishError as failed:
            return await self._failed(flow, ConnectProblem("refused", (
                f"{provider.label} refused the connection: {failed.message}. Connect again; if it keeps failing, check the "
                "app's settings (callback URL, permissions)")))
        except ConnectProblem as problem:
            return await self._failed(flow, problem)
        await self.store.off_loop(record_request, self.app, request, flow["organization_id"],
                                  "channel.reconnected" if existed else "channel.connected", "channel", [channel_id])
        notice = "reconnected" if existed else "pick" if provider.between_steps else "connected"
        return self._back(notice=notice, provider=identifier, channel=channel_id)

    async def _failed(self, flow: dict, problem: "ConnectProblem") -> Response:
        """Back to the channels page with the problem's code; its words, which may quote the platform, go to
        the organization's notifications (a link's text is never shown as rustiz's)."""
        await self.store.off_loop(notification_store.add_notification, self.store, flow["organization_id"],
                                  str(problem))
        return self._back(problem=problem.code, provider=flow["provider"])

    async def _finish(self, provider: OAuthProvider, flow: dict, code: str) -> tuple:
        """Exchange the code, read the account, store the channel: (its id, whether it was there already)."""
        details = flow["details"]
        app = await operator_app(self.store, self.config, provider, self.http, details)
        if app is None:
            raise ConnectProblem("no-app", f"{provider.label}'s app is no longer configured on this server ("
                                           f"{' and '.join(provider.app_variables)}): ask the operator")
        tokens = await provider.exchange_code(self.http, app, code, callback_url(self.config, provider.identifier),
                                              flow["code_verifier"], details)
        credentials = provider.credentials_for(tokens, details)
        probe = Channel("", "", credentials, None, self.http)
        probe.app = app
        connected = await provider.connect(probe)
        new = NewChannel(provider.identifier, connected.account, credentials, None, connected.session,
                         connected.limits)
        try:
            channel_id, existed = await self.store.off_loop(
                channel_store.connect_oauth_channel, self.store, flow["organization_id"], new, tokens.refresh_token, expiration(tokens), provider.between_steps,
                flow["refresh_channel_id"])
        except LookupError:
            raise ConnectProblem("channel-gone", "The channel to reconnect was deleted meanwhile: nothing was "
                                                 "changed; connect it as a new channel") from None
        except ValueError:
            raise ConnectProblem("other-account", (
                f"You signed in to {provider.label} as {connected.account.name}, another account than this "
                "channel's: nothing was changed. Sign in with the channel's account, or connect this one as a new "
                "channel")) from None
        if existed:
            released = await self.store.off_loop(schedule_store.release_waiting_posts, self.store, channel_id)
            log(f"{provider.label} channel {channel_id} reconnected; {released} waiting post(s) released")
        return channel_id, existed

    def _browser_organization(self, request: Request) -> Optional[str]:
        """The organization this browser's web session is signed in to, or None (no cookie, or ended)."""
        token = session_cookie(request)
        session = self.store.web_session(hash_api_key(token)) if token else None
        return session[0] if session else None

    def _resume_after_sign_in(self, request: Request) -> Response:
        """To the web app, which signs the browser in (or finds it signed in) and then opens this callback
        again, now with its session cookie; the flow waits meanwhile (its hour still runs)."""
        location = f"{self.config.frontend_url}/#/connect?" + urlencode({"resume": request.target}, quote_via=quote)
        return Response(303, b"", "text/plain; charset=utf-8", [("Location", location), ("Cache-Control", "no-store"),
                                                                ("Referrer-Policy", "no-referrer")])

    def _back(self, notice: str = "", problem: str = "", provider: str = "", channel: str = "") -> Response:
        """A redirect to the web app's channels page, with what happened as codes the page words itself."""
        location = channels_page(self.config, notice=notice, problem=problem, provider=provider, channel=channel)
        return Response(303, b"", "text/plain; charset=utf-8", [("Location", location), ("Cache-Control", "no-store")])

    # --- the choice after consent (a LinkedIn page, a Pinterest board) -------------------------------

    def _waiting_channel(self, request: Request, organization_id: str) -> tuple:
        channel = channel_store.channel_row(self.store, organization_id, request.params["id"])
        if channel is None:
            raise ApiError(404, {"msg": "Integration not found"})
        provider = oauth_provider(channel["providerIdentifier"])
        if provider is None or not provider.between_steps or not channel["inBetweenSteps"]:
            raise nest_error(409, f"channel {channel['id']} is not waiting for a choice: it is ready to post to")
        probe = Channel(channel["id"], channel["name"], *channel_store.channel_secrets(self.store, channel["id"]), self.http)
        return provider, probe

    @documented("What a channel in inBetweenSteps is chosen from: pages, boards (rustiz)",
                ("200", array_of(object_schema({"id": STRING, "name": STRING},
                                               {"picture": {"type": ["string", "null"]}}))),
                "IntegrationNotFound Conflict PlatformUnreachable", (CHANNEL_ID,))
    async def step_choices(self, request: Request, organization_id: str) -> Response:
        """rustiz: what a channel in inBetweenSteps is chosen from ([{id, name, picture}])."""
        provider, probe = await self.store.off_loop(self._waiting_channel, request, organization_id)
        probe.app = await operator_app(self.store, self.config, provider, self.http, {})
        try:
            return json_response(await provider.step_choices(probe))
        except PublishError as failed:
            raise nest_error(502, f"{provider.label} did not list the choices: {failed.message}") from None

    @route_options(audit="channel.updated")
    @documented("Pick one: the channel becomes that page or board, ready to post to (rustiz)",
                ("200", ref("ChannelRow")), "BadRequest IntegrationNotFound Conflict PlatformUnreachable",
                (CHANNEL_ID,), object_schema({"id": STRING}))
    async def choose(self, request: Request, organization_id: str) -> Response:
        """rustiz: {"id": one of the choices}; the channel becomes that page or board, ready to post to."""
        body = json_object(request)
        choice = body.get("id")
        if not isinstance(choice, str) or not choice.strip() or len(choice) > 200:
            raise nest_error(400, "id must be the id of one of GET /integrations/:id/steps's choices")
        provider, probe = await self.store.off_loop(self._waiting_channel, request, organization_id)
        probe.app = await operator_app(self.store, self.config, provider, self.http, {})
        choices = await provider.step_choices(probe)
        if not any(str(item.get("id")) == choice for item in choices):
            raise nest_error(400, f"id {choice!r} is none of the choices this account has: "
                                  f"{', '.join(str(item.get('id')) for item in choices[:20]) or 'none'}")
        try:
            connected = await provider.choose(probe, choice)
        except PublishError as failed:
            raise nest_error(502, f"{provider.label} did not confirm the choice: {failed.message}") from None
        session = {**probe.session, **(connected.session or {})}
        return json_response(await self.store.off_loop(self._complete_step, organization_id, probe.id, connected,
                                                       session))

    def _complete_step(self, organization_id: str, channel_id: str, connected: Any, session: dict) -> dict:
        if not channel_store.complete_channel_step(self.store, organization_id, channel_id, connected.account, session,
                                                connected.limits):
            raise nest_error(409, f"channel {channel_id} is not waiting for a choice any more")
        schedule_store.release_waiting_posts(self.store, channel_id)
        return channel_store.channel_row(self.store, organization_id, channel_id)


class TokenKeeper:
    """Fresh tokens for publishes and analytics: refreshed ahead of expiry or after a 401, one refresh at a
    time per channel across workers and processes."""

    def __init__(self, config: Config, store: Store, http: HttpClient):
        self.config, self.store, self.http = config, store, http
        self.owner = f"{socket.gethostname()}:{os.getpid()}"  # (with a random suffix per refresh: its lease)

    async def prepare(self, provider: OAuthProvider, channel: Channel) -> None:
        """Give `channel` the operator's app (X signs every call with it), and a fresh access token when the
        stored one is about to expire."""
        channel.app = provider.app(self.config.settings or {}) if provider.needs_operator_app else None
        _, refresh_token, expires_at, _ = await self.store.off_loop(oauth_store.channel_tokens, self.store, channel.id)
        if refresh_token and expires_at and expires_at <= iso_at(time.time() + provider.refresh_ahead_seconds):
            await self.refresh(provider, channel)

    async def call(self, provider: OAuthProvider, channel: Channel, operation: Callable[[], Awaitable]) -> Any:
        """`operation()` with fresh tokens in `channel`; after a 401 that a refresh cures, once more (a refused
        request did nothing, so repeating it is safe)."""
        from .publishers.base import NeedsReconnect
        await self.prepare(provider, channel)
        try:
            return await operation()
        except NeedsReconnect as refused:
            if isinstance(refused, TokenRefused) or not (await self.store.off_loop(oauth_store.channel_tokens, self.store,
                                                                                    channel.id))[1]:
                raise
        await self.refresh(provider, channel)
        return await operation()

    async def refresh(self, provider: OAuthProvider, channel: Channel) -> None:
        """New tokens into `channel` and the database. Raises TokenRefused (the channel is flagged, once),
        or a passing failure (Retryable...) that leaves the channel as it was."""
        from .publishers.base import Retryable
        if channel.app is None:
            channel.app = await operator_app(self.store, self.config, provider, self.http, channel.credentials)
        if channel.app is None:
            raise TokenRefused(f"{provider.label}'s app is not configured on this server any more "
                               f"({' and '.join(provider.app_variables)})")
        lease = f"{self.owner}:{secrets.token_hex(4)}"  # this refresh's own: two in one worker exclude each other too
        if not await self.store.off_loop(oauth_store.take_refresh_lease, self.store, channel.id, lease, time.time(),
                                         REFRESH_LEASE_SECONDS):
            raise Retryable(f"another rustiz worker is refreshing this channel's {provider.label} token", after=5)
        try:
            credentials, refresh_token, expires_at, _ = await self.store.off_loop(oauth_store.channel_tokens, self.store, channel.id)
            if credentials.get("accessToken") != channel.credentials.get("accessToken") and (
                    expires_at is None or expires_at > iso_at(time.time() + provider.refresh_ahead_seconds)):
                channel.credentials = credentials  # another worker refreshed it meanwhile: one refresh is enough
                await self.store.off_loop(oauth_store.release_refresh_lease, self.store, channel.id, lease)
                return
            if not refresh_token:
                raise TokenRefused(f"{provider.label} gave this channel no refresh token, and its access token "
                                   "has expired")
            try:
                tokens = await provider.refresh_tokens(self.http, channel.app, refresh_token)
            except Exception:
                count("rustiz_token_refreshes_total", provider.identifier, "failed")
                raise
            count("rustiz_token_refreshes_total", provider.identifier, "ok")
        except BaseException:
            oauth_store.release_refresh_lease(self.store, channel.id, lease)  # (here, as the task may be ending: a quick write)
            raise
        credentials = {**credentials, **provider.credentials_for(tokens, credentials)}
        await self.store.off_loop(oauth_store.save_refreshed_tokens, self.store, channel.id, lease, credentials,
                                  tokens.refresh_token, expiration(tokens))
        channel.credentials = credentials


class ConnectProblem(Exception):
    """A connection that did not complete: `code` for the channels page's own words, the message for the
    organization's notifications."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def channels_page(config: Config, **query: str) -> str:
    """The web app's channels page, with the non-empty `query` (notice, problem, provider, channel): codes
    the page turns into its own words, never text it would show as is."""
    return f"{config.frontend_url}/#/channels?" + urlencode({name: value for name, value in query.items() if value},
                                                            quote_via=quote)


def reconnect_link(config: Config, channel_id: str) -> str:
    return channels_page(config, channel=channel_id)

