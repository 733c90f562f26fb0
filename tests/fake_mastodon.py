"""A Mastodon instance's REST API as rustiz uses it: verify_credentials, /api/v2/instance, media upload
with background processing (202, then 206 until ready), statuses with Idempotency-Key, and the
X-RateLimit-* headers and error bodies ({"error": "..."}) a real instance sends."""
from __future__ import annotations

import datetime
import itertools
import re

from fakes import FakePlatform, FakeRequest, answer

URL = re.compile(r"https?://\S+")
# Enough of Unicode's grapheme rules for the tests' texts: skin tones join the emoji before them, and
# two regional indicators make one flag.
SKIN_TONE, FLAG = re.compile("[\U0001F3FB-\U0001F3FF]"), re.compile("[\U0001F1E6-\U0001F1FF]{2}")


def mastodon_length(text: str) -> int:
    return len(FLAG.sub("f", SKIN_TONE.sub("", URL.sub("x" * 23, text))))


class FakeMastodon(FakePlatform):
    def __init__(self, max_characters: int = 500, max_media: int = 4, processing_polls: int = 0):
        super().__init__()
        self.token = "masto-token-" + "x" * 20
        self.max_characters, self.max_media = max_characters, max_media
        self.processing_polls = processing_polls  # GETs of a new attachment that answer 206 before it is ready
        self.media: dict = {}  # id -> {"description", "bytes", "content_type", "polls_left"}
        self.statuses: dict = {}  # id -> status
        self.by_idempotency_key: dict = {}
        self.ids = itertools.count(110000000000000001)
        self.remaining = 300
        self.route("GET", "/api/v1/accounts/verify_credentials", self.verify_credentials)
        self.route("GET", "/api/v2/instance", self.instance)
        self.route("GET", "/api/v1/instance", self.instance_before_4_0)
        self.route("POST", "/api/v2/media", self.upload)
        self.route("GET", r"/api/v1/media/(\d+)", self.media_state)
        self.route("POST", "/api/v1/statuses", self.post_status)

    def credentials(self) -> dict:
        return {"instance": self.url, "accessToken": self.token}

    # Every answer carries the rate-limit headers, as a real instance's do.
    def dispatch(self, request: FakeRequest, handler):
        status, body, headers = super().dispatch(request, handler)
        if status is None:
            return status, body, headers
        with self.lock:
            self.remaining = max(0, self.remaining - 1)
        reset = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=5)).isoformat()
        return status, body, {"X-RateLimit-Limit": "300", "X-RateLimit-Remaining": str(self.remaining),
                              "X-RateLimit-Reset": reset, **headers}

    def _unauthorized(self, request: FakeRequest):
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return answer(401, {"error": "The access token is invalid"})
        return None

    def verify_credentials(self, request: FakeRequest):
        return self._unauthorized(request) or answer(200, {
            "id": "109876", "username": "ada", "acct": "ada", "display_name": "Ada Lovelace",
            "avatar": f"{self.url}/avatars/ada.png", "url": f"{self.url}/@ada"})

    def instance(self, request: FakeRequest):
        return answer(200, {"domain": "127.0.0.1", "title": "Fake Mastodon", "configuration": {"statuses": {
            "max_characters": self.max_characters, "max_media_attachments": self.max_media,
            "characters_reserved_per_url": 23}}})

    def instance_before_4_0(self, request: FakeRequest):
        """/api/v1/instance as Pleroma and Akkoma answer it: the length limit is max_toot_chars."""
        return answer(200, {"uri": "127.0.0.1", "title": "Fake Pleroma", "max_toot_chars": self.max_characters})

    def upload(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        parts = request.multipart()
        media_id = str(next(self.ids))
        self.media[media_id] = {"description": parts["description"][1].decode() if "description" in parts else None,
                                "bytes": parts["file"][1], "content_type": parts["file"][2],
                                "polls_left": self.processing_polls}
        processing = self.processing_polls > 0
        return answer(202 if processing else 200, {
            "id": media_id, "type": "image", "description": self.media[media_id]["description"],
            "url": None if processing else f"{self.url}/media/{media_id}.png"})

    def media_state(self, request: FakeRequest):
        media = self.media.get(request.match[1])
        if media is None:
            return answer(404, {"error": "Record not found"})
        if media["polls_left"] > 0:
            media["polls_left"] -= 1
            return answer(206, {"id": request.match[1], "url": None})
        return answer(200, {"id": request.match[1], "url": f"{self.url}/media/{request.match[1]}.png"})

    def post_status(self, request: FakeRequest):
        refused = self._unauthorized(request)
        if refused:
            return refused
        form = request.json() if request.headers.get("content-type", "").startswith("application/json") \
            else request.form()
        key = request.headers.get("idempotency-key")
        if key and key in self.by_idempotency_key:  # Mastodon answers a repeated key with the first status
            return answer(200, self.statuses[self.by_idempotency_key[key]])
        problem = self._status_problem(form)
        if problem:
            return answer(422, {"error": f"Validation failed: {problem}"})
        if form.get("in_reply_to_id") and form["in_reply_to_id"] not in self.statuses:
            return answer(404, {"error": "Record not found"})
        status_id = str(next(self.ids))
        status = {"id": status_id, "content": form["status"], "visibility": form.get("visibility"),
                  "in_reply_to_id": form.get("in_reply_to_id"),
                  "media_attachments": [{"id": media_id, "description": self.media[media_id]["description"]}
                                        for media_id in form.get("media_ids") or form.get("media_ids[]") or []],
                  "url": f"{self.url}/@ada/{status_id}", "account": {"acct": "ada"}}
        self.statuses[status_id] = status
        if key:
            self.by_idempotency_key[key] = status_id
        self.published.append(status)
        return answer(200, status)

    def _status_problem(self, form: dict):
        text = form.get("status") or ""
        media_ids = form.get("media_ids") or form.get("media_ids[]") or []
        if mastodon_length(text) > self.max_characters:
            return f"Text character limit of {self.max_characters} exceeded"
        if len(media_ids) > self.max_media:
            return f"Media attachments limit of {self.max_media} exceeded"
        for media_id in media_ids:
            if media_id not in self.media:
                return f"Media {media_id} could not be found"
            if self.media[media_id]["polls_left"] > 0:
                return "Try again in a moment! Media attachments have not finished processing"
        if not text and not media_ids:
            return "Text can't be blank"
        return None
