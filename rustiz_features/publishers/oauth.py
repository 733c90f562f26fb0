"""What the OAuth platforms share: the operator's app, the tokens a flow yields, and OAuthProvider.

Rules of this module:
- A provider says how to build its authorize URL, exchange a code, refresh a token and read the account;
  the flow around it (state, PKCE verifier, the callback, storing, the refresh lease) is connect.py's.
- Origins: `auth_origin` (authorize page and token endpoint) and `api_origin`, each replaced by
  RUSTIZ_<ID>_AUTH_URL / RUSTIZ_<ID>_API_URL (the identifier upper-cased, "-" as "_") so tests use fakes.
- Token answers: only a definite refusal (invalid_grant, a revoked or unknown token, the account gone)
  raises TokenRefused; a network error, 5xx or 429 raises Retryable, so a channel is never disconnected
  by a platform's bad minute.
"""
from __future__ import annotations

import base64
import secrets
from typing import NamedTuple, Optional
from urllib.parse import urlencode

from ..http_client import HttpClient, HttpReply, platform_url
from .base import Channel, Connected, NeedsReconnect, Provider, Rejected, Retryable, error_fields


class AppCredentials(NamedTuple):
    """The operator's app on the platform (Postiz's variable names, e.g. LINKEDIN_CLIENT_ID / _SECRET)."""
    client_id: str
    client_secret: str


class Tokens(NamedTuple):
    """What a code exchange or a refresh yields."""
    access_token: str
    refresh_token: Optional[str] = None  # None: the platform sent none, and the stored one stays
    expires_in: Optional[float] = None  # seconds from now; None: the token does not expire
    extra: Optional[dict] = None  # more the provider keeps with the access token (an OAuth 1.0a secret, an id)


class TokenRefused(NeedsReconnect):
    """The platform definitely refused the grant (invalid_grant, revoked, the account gone): only a new
    consent helps."""


# Token-endpoint error codes (RFC 6749 section 5.2) that mean the grant itself is dead.
DEFINITE_REFUSALS = ("invalid_grant", "invalid_token", "unauthorized_client", "access_denied")


def pkce_pair() -> tuple:
    """(code_verifier, code_challenge) for PKCE with S256 (RFC 7636)."""
    from hashlib import sha256
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def variable_prefix(identifier: str) -> str:
    """RUSTIZ_<ID>_ for a provider identifier: "linkedin-page" -> RUSTIZ_LINKEDIN_PAGE_."""
    return "RUSTIZ_" + identifier.upper().replace("-", "_") + "_"


class OAuthProvider(Provider):
    """A platform connected by the user's consent on the platform, through the operator's app."""
    app_variables: tuple = ()  # Postiz's names of the app's id and secret, e.g. ("X_API_KEY", "X_API_SECRET")
    auth_origin = ""  # where the authorize page and the token endpoint live
    api_origin = ""  # where the API lives
    scopes: tuple = ()
    pkce = True  # S256 code challenge in the authorize URL, verifier in the exchange
    between_steps = False  # a choice follows consent (a page, a board): the channel waits in inBetweenSteps
    callback_suffix = ""  # "/" where Postiz registers the callback with a trailing slash (TikTok Business)
    # More of the callback's query that the code exchange needs (VK ID's device_id): kept in its `details`.
    callback_parameters: tuple = ()
    operator_guide = ""  # one paragraph: where to make the app, what to ask for, what to register
    needs_operator_app = True  # False for platforms where rustiz registers its own app (Mastodon)
    # How long before its expiry a token is refreshed: on use, and by the scheduler's sweep even when nothing
    # is published (a long-lived token that lapses unused would strand the channel).
    refresh_ahead_seconds = 300.0

    def auth_base(self) -> str:
        return platform_url(variable_prefix(self.identifier) + "AUTH_URL", self.auth_origin)

    def api_base(self, channel: Optional[Channel] = None) -> str:
        return platform_url(variable_prefix(self.identifier) + "API_URL", self.api_origin)

    def uses_operator_app(self, credentials: dict) -> bool:
        """Whether a channel with these credentials needs the operator's app (a pasted kind, a Discord webhook
        say, does not)."""
        return self.needs_operator_app

    def app(self, settings: dict) -> Optional[AppCredentials]:
        """The operator's app from `settings` (config.env and the environment), or None when not configured."""
        values = [settings.get(name, "").strip() for name in self.app_variables]
        if len(values) == 1:  # a public client (VK ID, Whop): its id, and no secret to send
            return AppCredentials(values[0], "") if values[0] else None
        client_id, client_secret = values
        return AppCredentials(client_id, client_secret) if client_id and client_secret else None

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        """The URL of the platform's consent page for this flow (a standard OAuth 2.0 authorization code request
        by default). `details` is kept with the flow's state and handed back to exchange_code; a platform
        whose callback carries no `state` (OAuth 1.0a: oauth_token) sets details["state"] to what it carries."""
        query = {"response_type": "code", "client_id": app.client_id, "redirect_uri": redirect_uri,
                 "state": state, "scope": " ".join(self.scopes)}
        if code_challenge:
            query.update(code_challenge=code_challenge, code_challenge_method="S256")
        return f"{self.auth_base()}{self.authorize_path}?{urlencode(query)}"

    authorize_path = "/oauth/authorize"
    token_path = "/oauth/token"

    async def exchange_code(self, http: HttpClient, app: AppCredentials, code: str, redirect_uri: str,
                            code_verifier: Optional[str], details: dict) -> Tokens:
        """Tokens for the callback's `code` (OAuth 1.0a: its oauth_verifier)."""
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
        if code_verifier:
            form["code_verifier"] = code_verifier
        return await self.token_request(http, app, form, "the code exchange")

    async def refresh_tokens(self, http: HttpClient, app: AppCredentials, refresh_token: str) -> Tokens:
        return await self.token_request(http, app, {"grant_type": "refresh_token", "refresh_token": refresh_token},
                                        "the token refresh")

    def token_request_headers(self, app: AppCredentials) -> dict:
        """HTTP Basic with the app's id and secret (RFC 6749 section 2.3.1); platforms that want them in the
        form override this and `token_form_extra`."""
        basic = base64.b64encode(f"{app.client_id}:{app.client_secret}".encode()).decode()
        return {"Authorization": f"Basic {basic}", "Accept": "application/json"}

    def token_form_extra(self, app: AppCredentials) -> dict:
        return {}

    async def token_request(self, http: HttpClient, app: AppCredentials, form: dict, what: str) -> Tokens:
        """POST the token endpoint; Tokens, or TokenRefused for a dead grant, Retryable for a passing failure."""
        channel = Channel("", "", {}, None, http)
        try:
            reply = await self.send(channel, "POST", self.auth_base() + self.token_path, what=what,
                                    headers=self.token_request_headers(app),
                                    form={**form, **self.token_form_extra(app)})
        except Rejected as refused:  # a 4xx: definite when OAuth's error code says the grant is dead
            if any(f'"{code}"' in refused.body for code in DEFINITE_REFUSALS):
                raise TokenRefused(refused.message, refused.status, refused.body) from None
            raise
        return self.tokens_from(reply)

    def tokens_from(self, reply: HttpReply) -> Tokens:
        answer = reply.json()
        if not isinstance(answer, dict) or not isinstance(answer.get("access_token"), str):
            raise Retryable(f"{self.label}'s token endpoint answered without an access token "
                            f"({reply.described('a token answer')})", reply.status)
        expires_in = answer.get("expires_in")
        refresh_token = answer.get("refresh_token")
        return Tokens(answer["access_token"], refresh_token if isinstance(refresh_token, str) and refresh_token else None,
                      float(expires_in) if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool)
                      and expires_in > 0 else None)

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """OAuth's own error shape ({"error", "error_description"}), which token endpoints answer with."""
        return error_fields(reply.json(), "error", "error_description") or error_fields(reply.json(), "message")

    def credentials_for(self, tokens: Tokens, details: dict) -> dict:
        """What the channel keeps as its credentials after an exchange or a refresh (what publish reads)."""
        return {"accessToken": tokens.access_token, **(tokens.extra or {})}

    def app_origin(self, details: dict) -> str:
        """For a platform where rustiz registers its own app: the server it registers on (from the flow)."""
        raise LookupError(f"{self.label} uses the operator's app")

    async def register_app(self, http: HttpClient, origin: str, redirect_uri: str) -> AppCredentials:
        """For a platform where rustiz registers its own app (needs_operator_app False): register it."""
        raise LookupError(f"{self.label} uses the operator's app")

    async def step_choices(self, channel: Channel) -> list:
        """For a provider with `between_steps`: what the user picks from ([{id, name, picture}])."""
        raise LookupError(f"{self.label} asks for no choice after connecting")

    async def choose(self, channel: Channel, choice: str) -> Connected:
        """For a provider with `between_steps`: the channel's account once `choice` is picked, its credentials
        (as `session`, merged into the channel's) saying what was picked."""
        raise LookupError(f"{self.label} asks for no choice after connecting")


def bearer(channel: Channel) -> dict:
    """The Authorization header of an OAuth channel's access token."""
    return {"Authorization": f"Bearer {channel.credentials['accessToken']}"}
