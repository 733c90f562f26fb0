"""What Google's platforms share (YouTube, Business Profile): Google's OAuth 2.0 through the operator's app, and
Google's error shape.

Rules of this module:
- Google's consent page (accounts.google.com) and token endpoint (oauth2.googleapis.com) both follow
  RUSTIZ_<ID>_AUTH_URL; each platform's own hosts are its business.
- Offline access with prompt=consent, so that Google sends a refresh token on every consent, not only on the
  first one; the app's id and secret go in the token request's form.
- Google refuses a dead code or refresh token with 400 {"error": "invalid_grant"}: TokenRefused.
"""
from __future__ import annotations

import re
from typing import Any, Optional
from urllib.parse import urlencode

from ..http_client import HttpClient, HttpReply, platform_url
from .base import Channel, Rejected
from .oauth import DEFINITE_REFUSALS, AppCredentials, OAuthProvider, TokenRefused, Tokens, variable_prefix

SCOPE = "https://www.googleapis.com/auth/"


def google_error(answer: Any) -> Optional[tuple]:
    """(message, reasons) of Google's error shape {"error": {"code", "message", "errors": [{"reason"}]}}."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str) or type(error.get("code")) is not int:
        return None
    reasons = [item["reason"] for item in error.get("errors") or [] if isinstance(item, dict)
               and isinstance(item.get("reason"), str)] if isinstance(error.get("errors"), list) else []
    return re.sub(r"<[^>]{0,200}>", "", error["message"]).strip(), reasons


class GoogleOAuthProvider(OAuthProvider):
    """A platform reached through the operator's Google app."""
    auth_origin = "https://accounts.google.com"  # the consent page
    token_origin = "https://oauth2.googleapis.com"  # the token endpoint; RUSTIZ_<ID>_AUTH_URL stands for both
    authorize_path = "/o/oauth2/v2/auth"
    token_path = "/token"
    pkce = True

    def token_base(self) -> str:
        return platform_url(variable_prefix(self.identifier) + "AUTH_URL", self.token_origin)

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        url = await super().begin(http, app, redirect_uri, state, code_challenge, details)
        return url + "&" + urlencode({"access_type": "offline", "prompt": "consent", "include_granted_scopes": "true"})

    def token_request_headers(self, app: AppCredentials) -> dict:
        return {"Accept": "application/json"}

    def token_form_extra(self, app: AppCredentials) -> dict:
        return {"client_id": app.client_id, "client_secret": app.client_secret}

    async def token_request(self, http: HttpClient, app: AppCredentials, form: dict, what: str) -> Tokens:
        """POST oauth2.googleapis.com/token, the app's id and secret in the form; a code exchange's granted
        scopes are checked (check_scopes)."""
        channel = Channel("", "", {}, None, http)
        try:
            reply = await self.send(channel, "POST", self.token_base() + self.token_path, what=what,
                                    headers=self.token_request_headers(app), form={**form, **self.token_form_extra(app)})
        except Rejected as refused:
            if any(f'"{code}"' in refused.body for code in DEFINITE_REFUSALS):
                raise TokenRefused(refused.message, refused.status, refused.body) from None
            raise
        if form.get("grant_type") == "authorization_code":
            self.check_scopes(reply)
        return self.tokens_from(reply)

    def check_scopes(self, reply: HttpReply) -> None:
        """Google lets the user untick scopes on its consent page: raise Rejected when the grant (the token
        answer's `scope`) lacks one the platform cannot work without."""
