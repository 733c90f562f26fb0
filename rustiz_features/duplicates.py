"""The duplicate rule: the same text twice on one channel within a day is refused unless asked for.

Rules:
- A post about to be queued (type "schedule", "now" or "queue") is a duplicate when a root post of the same channel,
  queued, being published or published, has the same text and a date within DUPLICATE_WINDOW_SECONDS of its
  own (before or after). Text is compared without HTML tags, leading and trailing whitespace, and with each
  run of whitespace as one space, so "<p>Hi</p>" and "Hi " are the same text.
- Drafts, updates and posts without text (media alone) are never duplicates; `"allowDuplicate": true` in the
  body lets a duplicate through.
- One indexed query per channel of the post (post_integration: integration_id, publish_date).
- POST /posts and MCP answer 409 (MCP: the tool's errors), imports mark the row; all build on find_duplicates.
"""
from __future__ import annotations

from typing import Any, Optional

from rustiz import ApiError, iso_ms, parse_iso_instant
from .storage import posts as post_store
from .text import strip_html

DUPLICATE_WINDOW_SECONDS = 24 * 3600
ALLOW_DUPLICATE_HINT = 'send "allowDuplicate": true to post anyway'


def normalized_text(content: str) -> str:
    """The text the rule compares: tags removed, whitespace runs as one space, trimmed."""
    return " ".join(strip_html(content).split())


def duplicates_allowed(body: Any) -> bool:
    """Whether a CreatePost body (or an MCP socialPost item) asks to post a duplicate anyway."""
    return isinstance(body, dict) and body.get("allowDuplicate") is True


def _window(date: str) -> tuple:
    import datetime
    moment = parse_iso_instant(date)
    around = datetime.timedelta(seconds=DUPLICATE_WINDOW_SECONDS)
    return iso_ms(moment - around), iso_ms(moment + around)


def find_duplicates(store: Any, plan: dict, pending: Optional[list] = None) -> list:
    """The stored posts (and `pending` entries, from earlier rows of the same import) that make `plan` (a
    validate_create_post plan) a duplicate: [{postId, integration, channel, publishDate, state}].

    `pending` is a list of {"integration", "text", "date", ...} of posts not stored yet; an entry counts when
    its date is within the window (its own "row" is passed through in the answer)."""
    if plan["type"] not in ("schedule", "now", "queue"):
        return []
    start, end = _window(plan["date"])
    found = []
    for post in plan["posts"]:
        channel = post["integration"]
        text = normalized_text(post["values"][0]["content"])
        if not text:  # media alone: no text to repeat
            continue
        rewritten = {value["id"] for value in post["values"] if value.get("id")}
        nearby = post_store.channel_roots_near(store, channel["id"], start, end)
        for post_id, group, content, publish_date, state in nearby:
            if post_id in rewritten or group == post.get("group") or normalized_text(content) != text:
                continue
            found.append({"postId": post_id, "integration": channel["id"], "channel": channel["name"],
                          "publishDate": publish_date, "state": "QUEUE" if state == "PUBLISHING" else state})
        found.extend({**entry, "channel": channel["name"]} for entry in pending or ()
                     if entry["integration"] == channel["id"] and entry["text"] == text
                     and start <= entry["publishDate"] <= end)
    return found


def pending_entries(plan: dict, **extra: Any) -> list:
    """What a plan about to be stored adds, for find_duplicates' `pending` (an import's later rows)."""
    if plan["type"] not in ("schedule", "now", "queue"):
        return []
    texts = [(post["integration"]["id"], normalized_text(post["values"][0]["content"])) for post in plan["posts"]]
    return [{"integration": channel_id, "text": text, "publishDate": plan["date"], "state": "QUEUE", **extra}
            for channel_id, text in texts if text]


def duplicate_message(duplicates: list) -> str:
    """One sentence per duplicate, then how to go on."""
    seen = []
    for entry in duplicates:
        where = f"row {entry['row']} of this import" if "row" in entry else f"post {entry['postId']}"
        verb = "was published" if entry["state"] == "PUBLISHED" else "is already queued"
        seen.append(f"the same text {verb} on channel {entry['channel']} ({entry['integration']}) at "
                    f"{entry['publishDate']} ({where})")
    return f"Duplicate post: {'; '.join(seen)}; {ALLOW_DUPLICATE_HINT}"


def refuse_duplicates(store: Any, plan: dict) -> None:
    """Raise 409 {"message", "duplicates": [...]} when `plan` repeats a post of the last or next 24 hours."""
    duplicates = find_duplicates(store, plan)
    if duplicates:
        raise ApiError(409, {"statusCode": 409, "error": "Conflict", "message": duplicate_message(duplicates),
                             "duplicates": duplicates})
