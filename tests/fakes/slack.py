"""Slack as it serves rustiz, both ways rustiz connects it.

An incoming webhook: JSON {text, blocks} in, plain text out ("ok", or an error code such as invalid_blocks,
no_service or channel_is_archived), 429 with Retry-After. The operator's OAuth v2 app (issue 28): the
authorize page (comma-separated scopes), oauth.v2.access (id and secret in the form; {"ok": false, "error":
"invalid_code"} for a used code), users.info, conversations.list (paged by cursor), conversations.join (public
channels only), chat.postMessage (not_in_channel until joined or invited; thread_ts), chat.getPermalink and
chat.delete (message_not_found when gone). The Web API answers HTTP 200 with {"ok": false, "error"}."""
from __future__ import annotations

import itertools
import secrets

from fakes import FakePlatform, FakeRequest, Reconnect, answer, consent_page

PATH = "/services/T0AB12CD3/B0EF45GH6/sEcReTtOkEn123"


TEAM_ID, BOT_USER = "T0RUSTIZ1", "U0BOT0001"
GENERAL, RANDOM, SECRET_ROOM = "C0GENERAL1", "C0RANDOM01", "G0PRIVATE1"  # SECRET_ROOM: private, not invited
CONVERSATIONS = [{"id": GENERAL, "name": "general", "is_private": False},
                 {"id": RANDOM, "name": "random", "is_private": False},
                 {"id": SECRET_ROOM, "name": "secret-room", "is_private": True}]


def not_ok(code: str) -> tuple:
    return answer(200, {"ok": False, "error": code})


def slack_error(status: int, code: str, headers: dict | None = None) -> tuple:
    return answer(status, code, {"Content-Type": "text/html", **(headers or {})})


class FakeSlack(FakePlatform):
    post_settings = {"channel": "general"}  # as Discord's

    def __init__(self):
        super().__init__()
        self.removed = False
        self.path = PATH  # the webhook's; a test makes a new webhook by changing it
        self.route("POST", r"/services/(T\w+)/(B\w+)/(\w+)", self.incoming)
        # (issue 28, chat: the operator's OAuth v2 app and the Web API)
        self.client_id, self.client_secret = "1111.2222", "slack-secret"
        self.codes: dict = {}
        self.tokens: set = set()
        self.joined: set = set()
        self.messages: dict = {}  # ts -> {channel, text, blocks, thread_ts}
        self.deleted: list = []
        self.clock = itertools.count(1)
        self.route("GET", r"/oauth/v2/authorize", self.consent)
        self.route("POST", r"/api/oauth\.v2\.access", self.access)
        self.route("GET", r"/api/users\.info", self.users_info)
        self.route("GET", r"/api/conversations\.list", self.conversations)
        self.route("POST", r"/api/conversations\.join", self.join)
        self.route("POST", r"/api/chat\.postMessage", self.post_message)
        self.route("GET", r"/api/chat\.getPermalink", self.permalink)
        self.route("POST", r"/api/chat\.delete", self.delete_message)

    @property
    def env(self) -> dict:
        return {"RUSTIZ_SLACK_AUTH_URL": self.url, "RUSTIZ_SLACK_API_URL": self.url}

    def app_settings(self) -> dict:
        return {"SLACK_ID": self.client_id, "SLACK_SECRET": self.client_secret}

    def account(self) -> tuple:
        """(name, profile) of the channel credentials() connect: what this fake's account says."""
        return "Slack webhook", None

    def credentials(self) -> dict:
        return {"webhookUrl": self.url + self.path}

    def incoming(self, request: FakeRequest):
        if self.removed or request.path != self.path:
            return slack_error(404, "no_service")
        try:
            message = request.json()
        except ValueError:
            return slack_error(400, "invalid_payload")
        blocks = message.get("blocks") or []
        if not message.get("text") and not blocks:
            return slack_error(400, "no_text")
        if len(blocks) > 50:
            return slack_error(400, "invalid_blocks")
        for block in blocks:
            if block.get("type") == "section" and not 0 < len(block["text"]["text"]) <= 3000:
                return slack_error(400, "invalid_blocks")
            if block.get("type") == "image" and not (block.get("image_url") and block.get("alt_text")):
                return slack_error(400, "invalid_blocks")
        self.published.append(message)
        return slack_error(200, "ok")


    # --- the operator's app and the Web API (issue 28) --------------------------------------------------

    def consent(self, request: FakeRequest):
        query = request.query
        if query.get("client_id") != self.client_id or not query.get("redirect_uri") or "," not in query.get("scope", ""):
            return answer(400, "<html><body>Invalid client_id or scope parameter</body></html>",
                          {"Content-Type": "text/html"})
        code = "slack-code-" + secrets.token_urlsafe(8)
        self.codes[code] = query["redirect_uri"]
        return consent_page(f"Rustiz is requesting permission to access the workspace: {query['scope']}",
                            query["redirect_uri"], {"code": code, "state": query.get("state", "")},
                            {"error": "access_denied", "state": query.get("state", "")}, allow_label="Allow")

    def access(self, request: FakeRequest):
        form = request.form()
        if form.get("client_id") != self.client_id:
            return not_ok("invalid_client_id")
        if form.get("client_secret") != self.client_secret:
            return not_ok("bad_client_secret")
        if not form.get("redirect_uri") or self.codes.pop(form.get("code"), None) != form.get("redirect_uri"):
            return not_ok("invalid_code")
        token = "xoxb-" + secrets.token_urlsafe(10)
        self.tokens.add(token)
        return answer(200, {"ok": True, "access_token": token, "token_type": "bot", "bot_user_id": BOT_USER,
                            "scope": "channels:read,chat:write,users:read,groups:read,channels:join,"
                                     "chat:write.customize", "app_id": "A0RUSTIZ1",
                            "team": {"name": "Rustiz Team", "id": TEAM_ID}, "enterprise": None,
                            "authed_user": {"id": "U0HUMAN01"}, "is_enterprise_install": False})

    def _auth(self, request: FakeRequest):
        header = request.headers.get("authorization", "")
        if not header.startswith("Bearer "):
            return not_ok("not_authed")
        return None if header[7:] in self.tokens else not_ok("invalid_auth")

    def users_info(self, request: FakeRequest):
        if request.query.get("user") != BOT_USER:
            return self._auth(request) or not_ok("user_not_found")
        return self._auth(request) or answer(200, {"ok": True, "user": {
            "id": BOT_USER, "team_id": TEAM_ID, "name": "rustiz", "real_name": "Rustiz", "is_bot": True,
            "profile": {"image_original": "https://avatars.slack-edge.com/rustiz.png"}}})

    def conversations(self, request: FakeRequest):
        start = int(request.query.get("cursor") or 0)
        page = CONVERSATIONS[start:start + 2]  # (two a page, whatever the limit: to be paged through)
        more = str(start + 2) if start + 2 < len(CONVERSATIONS) else ""
        return self._auth(request) or answer(200, {"ok": True, "channels": page,
                                                   "response_metadata": {"next_cursor": more}})

    def join(self, request: FakeRequest):
        channel = request.json().get("channel")
        if channel == SECRET_ROOM:
            return self._auth(request) or not_ok("method_not_supported_for_channel_type")
        if channel not in (GENERAL, RANDOM):
            return self._auth(request) or not_ok("channel_not_found")
        self.joined.add(channel)
        return self._auth(request) or answer(200, {"ok": True, "channel": {"id": channel}})

    def post_message(self, request: FakeRequest):
        refused = self._auth(request)
        if refused:
            return refused
        message = request.json()
        channel = message.get("channel")
        if channel not in {item["id"] for item in CONVERSATIONS}:
            return not_ok("channel_not_found")
        if channel not in self.joined:
            return not_ok("not_in_channel")
        if not message.get("text") and not message.get("blocks"):
            return not_ok("no_text")
        if message.get("thread_ts") and message["thread_ts"] not in self.messages:
            return not_ok("thread_not_found")
        ts = f"1765000000.{next(self.clock):06d}"
        self.messages[ts] = {"channel": channel, **message}
        self.published.append({"ts": ts, **message})
        return answer(200, {"ok": True, "channel": channel, "ts": ts, "message": {"text": message.get("text")}})

    def permalink(self, request: FakeRequest):
        ts = request.query.get("message_ts", "")
        if ts not in self.messages:
            return self._auth(request) or not_ok("message_not_found")
        return self._auth(request) or answer(200, {"ok": True, "channel": request.query.get("channel"),
                                                   "permalink": f"https://rustiz.slack.com/archives/"
                                                                f"{request.query.get('channel')}/p{ts.replace('.', '')}"})

    def delete_message(self, request: FakeRequest):
        refused = self._auth(request)
        if refused:
            return refused
        body = request.json()
        if self.messages.get(body.get("ts"), {}).get("channel") != body.get("channel"):
            return not_ok("message_not_found")
        del self.messages[body["ts"]]
        self.deleted.append(body["ts"])
        return answer(200, {"ok": True, "channel": body["channel"], "ts": body["ts"]})


# --- for the tests of every provider that connects with credentials (tests/platforms.py) ---------------

FAKE = FakeSlack


def credentials_at(url: str) -> dict:
    """Credentials that aim a channel at `url`."""
    return {"webhookUrl": f"{url}/services/T1/B1/token"}


def _new_webhook(fake, extras):
    fake.path = "/services/T0AB12CD3/B0NEW0000/nEwSeCrEt456"
    return fake.credentials()


RECONNECT = Reconnect(lambda fake, extras: fake.credentials(),
                      lambda fake: {"webhookUrl": "https://hooks.slack.com/services/not-a-webhook"},
                      "this is not a Slack incoming webhook URL", _new_webhook)
