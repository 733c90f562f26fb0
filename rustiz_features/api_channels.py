"""Channels, outgoing webhooks and the organization: the public API routes that are not about posts.

Rules:
- Handlers shape Postiz's JSON; what is stored is the Store's business, what a platform says is a
  publisher's (connect_channel asks the provider of the channel's platform to verify the credentials).
- Every lookup is scoped by the caller's organization; another organization's ids answer like unknown ones.
- Every outbound call goes through the App's one HttpClient (its address guard), made on first use.
- The listing of channels is remembered per organization and group, encoded, under the Store's
  channels_version, and answered from memory while that version holds (on PostgreSQL on the event loop
  itself: Route.from_memory); any change of a channel or a group, by any process, moves the version.
"""
from __future__ import annotations

import json
import re
from typing import Any, Optional

from rustiz import (
    NAME_MAX_LENGTH, ApiError, App, Request, Response, Store, bad_request, hash_api_key,
    json_object, json_dumps, json_response, log, nest_error, new_api_key, not_found, read_config_file,
    route_options, session_cookie, update_config_value,
)
from .api_docs import (
    ANY, BOOLEAN, CHANNEL_ID, INTEGER, STRING, array_of, documented, json_body, object_schema, parameter, ref,
)
from .publishers.base import AddressNotAllowed, Channel, NeedsReconnect, PublishError, Rejected
from .catalogue import (
    DESCRIPTORS, NewChannel, PROVIDERS, masked_url, optional_text_problem, provider_descriptions, provider_max_length,
    text_problem, url_host, url_problem, validate_new_channel,
)
from .http_client import AddressRefused, HttpClient
from .publishers import provider_for
from .storage import deliveries as delivery_store
from .post_events import POST_EVENTS, events_problem
from .web import start_web_session
from .storage import channels as channel_store
from .storage import keys as key_store
from .storage import organizations as organization_store
from .storage import scheduling as schedule_store
from . import short_links
from .storage import queue as queue_store
from . import queue

INTEGRATION_NOT_FOUND = "Integration not found"
JSON = "application/json; charset=utf-8"
REMEMBERED_LISTINGS = 4096  # (organization, group) pairs remembered at most; past that, all are forgotten


class ChannelsApi:
    """What clients ask about a channel before posting (settings schema, helper tools) and the groups."""

    def __init__(self, app: App):
        self.app = app
        self.store = app.store
        self._providers: Optional[bytes] = None
        self._listings: dict = {}  # (organization id, group or None) -> (channels version, the JSON answer)

    @property
    def http(self) -> HttpClient:
        return self.app.http  # made on first use: listing channels needs no outbound client

    @documented("Every provider rustiz knows: its credential fields, how its text is counted, its limits (rustiz)",
                ("200", array_of(ref("Provider"))))
    def providers(self, request: Request, organization_id: str) -> Response:
        """rustiz: every provider's descriptor as the web app reads it (encoded once per worker: it never changes)."""
        if self._providers is None:
            self._providers = json_dumps(provider_descriptions())
        return Response(200, self._providers, "application/json; charset=utf-8")

    @staticmethod
    @documented("Check the API key", ("200", object_schema({"connected": {"const": True}})))
    def is_connected(request: Request, organization_id: str) -> Response:
        return json_response({"connected": True})

    @route_options(from_memory="remembered_integrations")
    @documented("The organization's channels", ("200", array_of(ref("Channel"))),
                parameters=(parameter("query", "group", "Only the channels of this customer id"),))
    def integrations(self, request: Request, organization_id: str) -> Response:
        answer = self.remembered_integrations(request, organization_id)
        if answer is not None:
            return answer
        version = self.store.channels_version()  # (asked before the read: the answer is at least this new)
        listing = self._listing(request, organization_id)
        body = json_dumps(self.store.integrations(*listing))
        if version is not None:
            if len(self._listings) >= REMEMBERED_LISTINGS:
                self._listings.clear()
            self._listings[listing] = (version, body)
        return Response(200, body, JSON)

    def remembered_integrations(self, request: Request, organization_id: str) -> Optional[Response]:
        """The listing remembered under the current channels version, or None."""
        remembered = self._listings.get(self._listing(request, organization_id))
        if remembered is None or remembered[0] != self.store.channels_version():
            return None
        return Response(200, remembered[1], JSON)

    @staticmethod
    def _listing(request: Request, organization_id: str) -> tuple:
        """(organization id, group or None): which listing a request asks for, and is remembered under."""
        return organization_id, (request.query.get("group") or None) if request.query_string else None

    def _channel(self, request: Request, organization_id: str) -> dict:
        channel = channel_store.channel(self.store, organization_id, request.params["id"])
        if channel is None:  # another organization's channel too: its existence is not revealed
            raise ApiError(404, {"msg": "Integration not found"})
        return channel

    @documented("A channel's provider rules, length limit, settings JSON Schema and helper tools",
                ("200", object_schema({"output": object_schema({"rules": STRING, "maxLength": INTEGER,
                                                               "settings": {"type": ["object", "string"]},
                                                               "tools": array_of({"type": "object"})})})),
                "IntegrationNotFound", (CHANNEL_ID,))
    def integration_settings(self, request: Request, organization_id: str) -> Response:
        channel = self._channel(request, organization_id)
        spec = PROVIDERS.get(channel["provider_identifier"])
        if spec is None:  # a provider this rustiz does not know (a newer Postiz's, say): Postiz's empty answer
            return json_response({"output": {"rules": "", "maxLength": 0, "settings": {}, "tools": []}})
        platform = provider_for(spec.identifier)
        settings = platform.channel_settings(spec.settings, channel["limits"]) if platform else spec.settings
        tools = platform.channel_tools(spec.tools, channel_store.channel_secrets(self.store, channel["id"])[0]) \
            if platform else spec.tools  # (issue 28, chat: what this channel's kind of connection can run)
        return json_response({"output": {
            "rules": spec.rules,
            "maxLength": provider_max_length(spec.identifier, channel["additional_settings"], channel["limits"]),
            "settings": settings, "tools": tools}})

    @route_options(scope="drafts")  # (a platform's helper lookups, which a post's settings may need)
    @documented("Call a provider helper tool", ("201", object_schema({"output": ANY})),
                "BadRequest IntegrationNotFound PlatformUnreachable", (CHANNEL_ID,),
                object_schema({"methodName": STRING}, {"data": {"type": "object"}}))
    async def integration_trigger(self, request: Request, organization_id: str) -> Response:
        channel = await self.store.off_loop(self._channel, request, organization_id)
        if channel["provider_identifier"] not in PROVIDERS:
            raise ApiError(404, {"msg": "Integration provider not found"})
        body = request.json()  # a body that is not JSON is still the caller's mistake (400), before the tool lookup
        body = body if isinstance(body, dict) else {}
        output = await self.run_tool(channel, body.get("methodName"), body.get("data"))
        return json_response({"output": output})

    async def run_tool(self, channel: dict, method_name: Any, data: Any) -> Any:
        """A provider helper tool of the channel (one of the caller's, from Store.channel); raises ApiError.

        For POST /integration-trigger/:id and MCP's triggerTool alike."""
        platform = provider_for(channel["provider_identifier"])
        if platform is None or not isinstance(method_name, str):
            raise ApiError(404, {"msg": "Tool not found"})
        credentials, session = await self.store.off_loop(channel_store.channel_secrets, self.store, channel["id"])
        target = Channel(channel["id"], channel["name"], credentials, session, self.http,
                         lambda new_session: channel_store.save_channel_session(self.store, channel["id"], new_session))
        if getattr(platform, "needs_operator_app", False):  # (issue 28: Neynar's calls carry the operator's key, Discord's tools its bot)
            target.app = platform.app(self.app.config.settings or {})
        try:
            output = await platform.run_tool(target, method_name, data if isinstance(data, dict) else {})
        except LookupError:
            raise ApiError(404, {"msg": "Tool not found"}) from None
        except NeedsReconnect:
            await self.store.off_loop(channel_store.mark_refresh_needed, self.store, channel["id"])
            raise ApiError(401, {"msg": "Channel disconnected due to expired token"}) from None
        except AddressNotAllowed as refused:  # not the platform's failure: the operator's allow-list decides
            raise nest_error(400, f"{platform.label} may not be reached for {method_name}: {refused.message}") from None
        except PublishError as failed:
            raise nest_error(502, f"{platform.label} could not answer {method_name}: {failed.message}") from None
        return output

    @documented("The organization's customers", ("200", array_of(ref("Customer"))))
    def groups(self, request: Request, organization_id: str) -> Response:
        return json_response(channel_store.customers(self.store, organization_id))

    @route_options(audit="channel.connected")
    @documented("Connect a channel that needs no developer app with its credentials, checked with the platform first "
                "(rustiz). An account that is already a channel of the organization reconnects that channel instead: "
                "it keeps its id, posts, settings and group, takes the credentials (and the name and picture the "
                "platform reports), loses its reconnect flag, and its waiting posts go out",
                ("201", ref("Channel")), "BadRequest PlatformUnreachable", request=ref("NewChannel"),
                more_answers={"200": json_body(ref("Channel") | {"properties": {"reconnected": {"const": True}}},
                                               "The account was already this channel: reconnected with these "
                                               "credentials")})
    async def add_channel(self, request: Request, organization_id: str) -> Response:
        """rustiz: connect a channel with credentials (Postiz has only the OAuth dance of GET /social); an
        account that is already a channel reconnects that channel (200, "reconnected": true)."""
        channel = await connect_channel(self.store, organization_id, json_object(request), self.http)
        return json_response(channel, 200 if channel.get("reconnected") else 201)

    @documented("A channel's row, with refreshNeeded and postingTimes (rustiz)", ("200", ref("ChannelRow")),
                "NotFound", (CHANNEL_ID,))
    def show_channel(self, request: Request, organization_id: str) -> Response:
        """GET /integrations/:id (rustiz): the channel's row, with refreshNeeded and postingTimes."""
        channel = channel_store.channel_row(self.store, organization_id, request.params["id"])
        if channel is None:
            raise not_found(INTEGRATION_NOT_FOUND)
        return json_response(channel)

    @route_options(audit="channel.deleted")
    @documented("Soft-delete a channel and its posts", ("200", ref("ChannelRow")), "NotFound", (CHANNEL_ID,))
    def delete_channel(self, request: Request, organization_id: str) -> Response:
        """DELETE /integrations/:id: the channel and its posts, soft-deleted; the channel's DB row."""
        channel = channel_store.delete_channel(self.store, organization_id, request.params["id"])
        if channel is None:
            raise not_found(INTEGRATION_NOT_FOUND)
        return json_response(channel)

    @route_options(audit="channel.updated")
    @documented("Rename, disable or enable a channel, set its posting times or group, or give it new credentials "
                "(rustiz). Credentials are checked with the platform first (400 in its words, nothing changed); they "
                "must be the channel's own account's (409 otherwise; a webhook channel may take a new URL), and an "
                "OAuth channel takes none (400: reconnect it through GET /social/:integration?refresh=). Its waiting "
                "posts go out at once", ("200", ref("ChannelRow")), "BadRequest NotFound Conflict PlatformUnreachable",
                (CHANNEL_ID,), object_schema({}, {
                    "name": STRING, "disabled": BOOLEAN, "customer": {"type": ["string", "null"]},
                    "postingTimes": array_of(object_schema({"time": INTEGER})),
                    "credentials": {"type": "object", "description": (
                        "The provider's credential keys, as POST /integrations takes them (GET /providers lists "
                        "them)")}}))
    async def update_channel(self, request: Request, organization_id: str) -> Response:
        """PUT /integrations/:id (rustiz): {"name"?, "disabled"?, "postingTimes"?, "customer"?, "credentials"?}
        -> the row. New credentials are checked with the platform before anything is changed."""
        body = json_object(request)
        changes = validate_channel_changes({name: value for name, value in body.items() if name != "credentials"})
        if "credentials" in body:
            channel = await reconnect_channel(self.store, organization_id, request.params["id"], body, changes,
                                              self.http)
        else:
            channel = await self.store.off_loop(channel_store.update_channel, self.store, organization_id, request.params["id"],
                                                changes)
        if channel is None:
            raise not_found(INTEGRATION_NOT_FOUND)
        return json_response(channel)


async def verified_channel(channel: "NewChannel", name_given: bool, http: HttpClient) -> "NewChannel":
    """The channel as its platform knows it: credentials checked, the real account read; raises ApiError."""
    platform = provider_for(channel.provider)  # every provider with credentials names its publisher
    probe = Channel("", channel.account.name, channel.credentials, None, http)
    try:
        connected = await platform.connect(probe)
    except AddressNotAllowed as refused:
        raise nest_error(400, f"Cannot connect a {platform.label} channel: {refused.message}") from None
    except (Rejected, NeedsReconnect) as refused:
        status = f" (HTTP {refused.status})" if refused.status else ""
        raise nest_error(400, f"{platform.label} refused these credentials{status}: {refused.message}") from None
    except PublishError as failed:
        raise nest_error(502, f"could not check these credentials with {platform.label}, so nothing was "
                              f"saved: {failed.message}; try again") from None
    account = connected.account._replace(name=channel.account.name) if name_given else connected.account
    return channel._replace(account=account, session=connected.session, limits=connected.limits)


async def connect_channel(store: Store, organization_id: str, body: Any, http: HttpClient) -> dict:
    """Validate, verify with the platform and store a channel added with credentials, for the API and the
    CLI alike; raises ApiError. An account that is already a channel of the organization reconnects that
    channel: it gets the credentials, and the answer "reconnected": true."""
    unverified = validate_new_channel(body)
    name_given = isinstance(body, dict) and body.get("name") is not None
    channel = await verified_channel(unverified, name_given, http)
    rename = name_given or channel.account.name != unverified.account.name  # (the platform reported its own)
    saved, reconnected = await store.off_loop(channel_store.add_channel, store, organization_id, channel, rename)
    if not reconnected:
        return saved
    await released_after_reconnect(store, saved["id"], channel.provider)
    return {**saved, "reconnected": True}


async def reconnect_channel(store: Store, organization_id: str, channel_id: str, body: dict, changes: dict,
                            http: HttpClient) -> Optional[dict]:
    """PUT /integrations/:id with credentials: checked with the platform, then stored with `changes` (from
    validate_channel_changes); the channel's row, None when it is not the organization's. Raises ApiError:
    400 for credentials the platform refuses or an OAuth channel, 409 for another account's."""
    current = await store.off_loop(channel_store.channel, store, organization_id, channel_id)
    if current is None:
        return None
    provider = current["provider_identifier"]
    descriptor = DESCRIPTORS.get(provider)
    if descriptor is None or descriptor.credentials is None:
        label = descriptor.label if descriptor else provider
        if descriptor is None or not descriptor.oauth:
            raise bad_request(f"credentials: rustiz cannot connect a {label} channel with credentials")
        raise bad_request(f"credentials: a {label} channel connects through {label}'s own sign-in, so no "
                          f"credentials can be pasted into it; reconnect it with its sign-in instead: GET "
                          f"/public/v1/social/{provider}?refresh={channel_id} (the Reconnect button on the web "
                          "app's Channels page)")
    unverified = validate_new_channel({"provider": provider, "credentials": body["credentials"]})
    probe_name = changes.get("name") or current["name"]  # (a platform that reports no name keeps the channel's)
    unverified = unverified._replace(account=unverified.account._replace(name=probe_name))
    channel = await verified_channel(unverified, "name" in changes, http)
    rename = "name" in changes or channel.account.name != probe_name
    try:
        row = await store.off_loop(channel_store.update_channel_credentials, store, organization_id, channel_id, channel, rename,
                                   descriptor.credentials.account_is_credentials, changes)
    except ValueError:
        raise nest_error(409, f"credentials: these are the credentials of another {descriptor.label} account "
                              f"({channel.account.profile or channel.account.name}) than this channel's: nothing "
                              "was changed. Give the channel's own account's credentials, or connect this account "
                              "as a new channel (POST /public/v1/integrations)") from None
    except channel_store.ChannelAlreadyAdded as duplicate:
        raise nest_error(409, f"credentials: this {descriptor.label} account is already the channel "
                              f"\"{duplicate.name}\" ({duplicate.channel_id}) of this organization: nothing was "
                              "changed") from None
    if row is not None:
        await released_after_reconnect(store, channel_id, provider)
    return row


async def released_after_reconnect(store: Store, channel_id: str, provider: str) -> None:
    """The posts that waited for the channel to be reconnected go out now (as after an OAuth reconnect)."""
    released = await store.off_loop(schedule_store.release_waiting_posts, store, channel_id)
    log(f"{provider} channel {channel_id} reconnected with new credentials; {released} waiting post(s) released")


# What POST and PUT /webhooks take beside url (issue 26 added events; a new webhook without it gets them all).
_WEBHOOK_FIELDS = {"name": STRING, "secret": STRING,
                   "integrations": array_of({"anyOf": [STRING, object_schema({"id": STRING})]}),
                   "events": array_of({"type": "string", "enum": list(POST_EVENTS)})}


class WebhooksApi:
    """rustiz: an organization's outgoing webhooks. Each URL gets a signed JSON event (post.published,
    post.failed, and since issue 26 the post_events ones: each webhook's `events`) for the posts of the channels
    it covers: the hook for n8n, Zapier and the like."""

    def __init__(self, app: App):
        self.app = app
        self.store = app.store

    @property
    def http(self) -> HttpClient:
        return self.app.http  # its address guard checks a URL when it is registered (and at each delivery)

    @documented("The organization's outgoing webhooks (rustiz)", ("200", array_of(ref("Webhook"))))
    def list_webhooks(self, request: Request, organization_id: str) -> Response:
        """The webhooks; below the scope full each URL is masked (its path often is the receiver's token)."""
        hooks = delivery_store.webhooks(self.store, organization_id)
        if request.scope != "full":
            hooks = [{**hook, "url": masked_url(hook["url"]), "urlMasked": True} for hook in hooks]
        return json_response(hooks)

    @route_options(audit="webhook.created")
    @documented("Register a URL told of post events (by default all of them), with a signed JSON event (rustiz)",
                ("201", ref("Webhook")), "BadRequest", request=object_schema({"url": STRING}, _WEBHOOK_FIELDS))
    async def create(self, request: Request, organization_id: str) -> Response:
        body = json_object(request)
        checked = await self._checked(organization_id, {"events": list(POST_EVENTS), **body}, ("url",))
        name = checked["name"] if checked.get("name") is not None else f"Webhook to {url_host(checked['url'])}"
        created = await self.store.off_loop(delivery_store.create_webhook, self.store, organization_id, name,
                                            checked["url"], checked.get("integrations", []), checked.get("secret"),
                                            checked["events"])
        return json_response(created, 201)

    @route_options(audit="webhook.updated")
    @documented("Change a webhook: its events, channels, url, name or secret (rustiz)", ("200", ref("Webhook")),
                "BadRequest NotFound", (parameter("path", "id", "A webhook id"),), object_schema({}, _WEBHOOK_FIELDS))
    async def update(self, request: Request, organization_id: str) -> Response:
        checked = await self._checked(organization_id, json_object(request), ())
        updated = await self.store.off_loop(delivery_store.update_webhook, self.store, organization_id,
                                            request.params["id"], checked)
        if updated is None:
            raise not_found(f"No webhook {request.params['id']} in this organization")
        return json_response(updated)

    async def _checked(self, organization_id: str, body: dict, required: tuple) -> dict:
        """A webhook body's fields, checked (each problem named in one 400): the url (its address guard too), the
        name trimmed, the secret, the channel ids of integrations, the events."""
        problems = []
        if "url" in body or "url" in required:
            problems += [f"url {problem}" for problem in [url_problem(body.get("url"), ("http", "https"))] if problem]
        problems += [problem for problem in (optional_text_problem(body, "name"),) if problem]
        secret = body.get("secret")
        if secret is not None and text_problem(secret):
            problems.append(f"secret {text_problem(secret)}")
        if "events" in body and events_problem(body["events"]):
            problems.append(events_problem(body["events"]))
        checked = {name: value for name, value in body.items() if name in ("url", "secret")}
        if "integrations" in body:
            checked["integrations"], channel_problems = await self.store.off_loop(
                self._channel_ids, organization_id, body["integrations"])
            problems += channel_problems
        if problems:
            raise bad_request(problems)
        if "url" in checked:
            try:
                await self.http.check_url(checked["url"])
            except AddressRefused as refused:
                raise bad_request(f"url cannot receive webhooks: {refused}") from None
        if body.get("name") is not None:
            checked["name"] = body["name"].strip()
        if "events" in body:
            checked["events"] = list(dict.fromkeys(body["events"]))
        return checked

    def _channel_ids(self, organization_id: str, integrations: Any) -> tuple:
        """The channel ids a webhook covers (Postiz's [{"id"}] or plain ids; none = every channel), and problems."""
        if not isinstance(integrations, list):
            return [], ["integrations must be an array of channel ids (empty: every channel)"]
        ids, problems = [], []
        for index, item in enumerate(integrations):
            channel_id = item.get("id") if isinstance(item, dict) else item
            if not isinstance(channel_id, str) or channel_store.channel(self.store, organization_id, channel_id) is None:
                problems.append(f"integrations.{index} is not a channel of this organization: "
                                f"{json.dumps(channel_id)[:100]}")
            else:
                ids.append(channel_id)
        return ids, problems

    @route_options(audit="webhook.deleted")
    @documented("Stop sending events to a webhook (rustiz)", ("200", object_schema({"deleted": {"const": True}})),
                "NotFound", (parameter("path", "id", "A webhook id"),))
    def delete(self, request: Request, organization_id: str) -> Response:
        if not delivery_store.delete_webhook(self.store, organization_id, request.params["id"]):
            raise not_found(f"No webhook {request.params['id']} in this organization")
        return json_response({"deleted": True})


class OrganizationApi:
    """rustiz: the caller's organization, its IANA timezone (posting slots are local times in it), its key."""

    def __init__(self, app: App):
        self.config = app.config
        self.store = app.store
        self.guard = app.guard

    @route_options(audit="key.rotated")
    @documented("A new API key, shown once; the old one, and the web sessions signed in with it, stop working at once "
                "(rustiz). Called from such a session: a new session cookie, and its csrfToken",
                ("201", object_schema({"apiKey": STRING}, {"csrfToken": STRING})))
    def rotate_key(self, request: Request, organization_id: str) -> Response:
        """A new API key, answered once (only its hash is kept); the old one stops working at once, in every
        worker, and so do the web sessions signed in with it. A browser that rotated with such a session gets
        a new one for the new key (a cookie, and the csrfToken in the answer). When the config file holds the
        old key, it gets the new one."""
        key = new_api_key()
        old_hash = key_store.api_key_hash(self.store, organization_id)
        self.store.set_api_key_hash(organization_id, hash_api_key(key))
        saved_key = read_config_file(self.config.config_path).get("RUSTIZ_API_KEY", "")
        if saved_key and hash_api_key(saved_key) == old_hash:
            update_config_value(self.config.config_path, "RUSTIZ_API_KEY", key)
        log(f"new API key for organization {self.store.organization(organization_id)['name']} "
            "(rotated through the API); the old key and the web sessions signed in with it no longer work")
        answer, headers = {"apiKey": key}, [("Cache-Control", "no-store")]
        token = None if self.guard.presented_key(request) else session_cookie(request)
        if token and self.store.web_session(hash_api_key(token)) is None:  # it was signed in with the old key
            cookie, answer["csrfToken"] = start_web_session(self.store, self.guard, request, organization_id,
                                                            api_key_hash=hash_api_key(key))
            headers.append(("Set-Cookie", cookie))
        return json_response(answer, 201, headers)

    @documented("The caller's organization and its timezone (rustiz)", ("200", ref("Organization")))
    def show(self, request: Request, organization_id: str) -> Response:
        return json_response(self._organization(organization_id))

    def _organization(self, organization_id: str) -> dict:
        answer = self.store.organization(organization_id)
        answer.update(short_links.preference_field(self.store, organization_id))  # shortlinks (issue 26)
        week = queue.organization_week(self.store, organization_id)  # queue (issue 26): the default schedule
        answer["postingSchedule"] = None if week is None else queue.schedule_view(week)
        return answer

    @route_options(audit="organization.updated")
    @documented("Rename the organization or set its IANA timezone (rustiz)", ("200", ref("Organization")), "BadRequest",
                request={"type": "object", "properties": {"name": STRING, "timezone": STRING,
                                                         "shortLink": {"enum": ["ask", "yes", "no"]},
                                                         "postingSchedule": {"type": ["object", "null"]}}})
    def update(self, request: Request, organization_id: str) -> Response:
        body = json_object(request)
        short_link = short_links.take_preference(body)  # shortlinks (issue 26): "ask", "yes", "no" or None
        default = body.pop("postingSchedule", ...)  # (issue 26, queue: the default weekly schedule)
        week = None if default in (None, ...) else queue.checked_schedule(default, "postingSchedule")
        changes = validate_organization_changes(body)
        organization_store.update_organization(self.store, organization_id, **changes)
        short_links.save_preference(self.store, organization_id, short_link)
        if default is not ...:
            queue_store.set_organization_default(self.store, organization_id, queue.week_text(week))
        return json_response(self._organization(organization_id))


def validate_channel_changes(body: dict) -> dict:
    """The changes of PUT /integrations/:id as Store.update_channel takes them; raises a 400 listing problems."""
    allowed = ("name", "disabled", "postingTimes", "customer")
    problems = [f"property {name[:100]} should not exist (a channel takes {', '.join(allowed)}, credentials)"
                for name in body if name not in allowed][:5]
    problems += [problem for problem in (optional_text_problem(body, "name"),) if problem]
    if "disabled" in body and not isinstance(body["disabled"], bool):
        problems.append("disabled must be a boolean value")
    times = body.get("postingTimes")
    if "postingTimes" in body and not (isinstance(times, list) and all(
            isinstance(item, dict) and set(item) == {"time"} and type(item["time"]) is int and 0 <= item["time"] < 1440
            for item in times)):
        problems.append("postingTimes must be a list of {\"time\": minutes after midnight, 0 to 1439}")
    customer = body.get("customer")
    if customer not in (None, "") and text_problem(customer):  # "" or null: no group
        problems.append(f"customer {text_problem(customer)}")
    elif isinstance(customer, str) and len(customer.strip()) > NAME_MAX_LENGTH:
        problems.append(f"customer (the group's name) must be shorter than or equal to {NAME_MAX_LENGTH} characters")
    if problems:
        raise bad_request(problems)
    changes = {}
    if body.get("name") is not None:
        changes["name"] = body["name"].strip()
    if "disabled" in body:
        changes["disabled"] = int(body["disabled"])
    if "postingTimes" in body:
        changes["posting_times"] = json.dumps(sorted(times, key=lambda item: item["time"]), separators=(",", ":"))
    if "customer" in body:
        changes["customer"] = (body["customer"] or "").strip()
    return changes


def timezone_problem(name: str) -> Optional[str]:
    """Why `name` is not an IANA timezone this machine knows (None when it is one)."""
    if name == "UTC":
        return None
    # Files in the zoneinfo directory that are no zone names: "localtime" would be whatever zone the
    # server's machine is in, and the posix/ and right/ trees are copies under other names.
    if re.match(r"(?:localtime|posixrules|posix/|right/)", name):
        return f"timezone {name!r} is not an IANA timezone name; use one like Europe/Paris, America/New_York or UTC"
    try:
        from zoneinfo import ZoneInfo
        ZoneInfo(name)
    except ImportError:
        return "timezones other than UTC need Python's zoneinfo module (Python 3.9 or newer)"
    except (ValueError, OSError, KeyError):  # ZoneInfoNotFoundError is a KeyError; "../x" is a ValueError
        return (f"timezone {name!r} is not an IANA timezone name this machine knows; use one like "
                "Europe/Paris, America/New_York or UTC (install the tzdata package if none work)")
    return None


def validate_organization_changes(body: dict) -> dict:
    """The {name?, timezone?} of PUT /organization (`rustiz org timezone` too), checked; raises ApiError (400)."""
    problems = [f"property {name} should not exist (send name and/or timezone)" for name in body
                if name not in ("name", "timezone")]
    changes = {}
    for field in ("name", "timezone"):
        value = body.get(field)
        if value is None:
            continue
        problem = text_problem(value)
        if problem is None and field == "name" and len(value.strip()) > NAME_MAX_LENGTH:
            problem = f"must be shorter than or equal to {NAME_MAX_LENGTH} characters"
        if problem is not None:
            problems.append(f"{field} {problem}")
        elif field == "timezone" and timezone_problem(value.strip()):
            problems.append(timezone_problem(value.strip()))
        else:
            changes[field] = value.strip()
    if problems:
        raise bad_request(problems)
    return changes
