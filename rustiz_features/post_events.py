"""Post events for the organization's webhooks (issue 26): post.created, post.updated, post.deleted and
post.queued, beside the scheduler's post.published and post.failed.

Rules:
- A webhook is sent only the events it subscribed to (its `events`; one made without a list gets all of
  POST_EVENTS, one made before the list existed keeps published and failed), for the posts of the channels it
  covers: one delivery per webhook and call, naming every covered post.
- Deliveries are the scheduler's webhook_delivery rows (storage.deliveries), sent by its WebhookDeliveries: the
  same signing, retries, leases and durability. They are queued once the change they tell of is stored.
- Every event has the envelope of published/failed (event_envelope), so a receiver reads them all alike.
"""
from __future__ import annotations

from typing import Iterable, Optional

from rustiz import Store
from .background import wake_all
from .storage import deliveries as delivery_store

POST_EVENTS = ("post.published", "post.failed", "post.created", "post.updated", "post.deleted", "post.queued")
EVENTS_BEFORE_ISSUE_26 = ("post.published", "post.failed")  # what webhooks made before `events` keep

# This process's webhook senders (the scheduler's WebhookDeliveries register themselves), woken when an event
# is queued here; other processes find it on their next poll.
ACTIVE_SENDERS: set = set()


def event_envelope(event: str, organization_id: str, channel: dict, post: dict) -> dict:
    """What a webhook is told: the event, the organization, the post's channel {id, name, provider}, the post."""
    return {"event": event, "organizationId": organization_id, "channel": channel, "post": post}


def events_problem(events: object) -> Optional[str]:
    """Why a webhook's `events` is not a list of POST_EVENTS (naming the unknown one), or None."""
    if not isinstance(events, list) or not all(isinstance(event, str) for event in events):
        return f"events must be an array of event names: {', '.join(POST_EVENTS)}"
    unknown = [event for event in events if event not in POST_EVENTS]
    if unknown:
        return f"events: {unknown[0][:100]!r} is not an event; the events are {', '.join(POST_EVENTS)}"
    return None


def queue_post_event(store: Store, organization_id: str, event: str, post_ids: Iterable[str],
                     details: Optional[dict] = None) -> int:
    """Queue `event` about the organization's posts `post_ids` (root posts; deleted ones too) for each webhook
    subscribed to it that covers one of their channels: one signed, durable delivery per webhook, whose `post`
    is the first covered post and `posts` all of them, each {id, group, state, publishDate, deletedAt,
    integration, **details}. Returns how many deliveries were queued."""
    if event not in POST_EVENTS:
        raise ValueError(f"unknown post event {event!r}")
    posts = delivery_store.posts_for_event(store, organization_id, list(post_ids))
    if not posts:
        return 0
    payloads = []
    for webhook_id, covered in delivery_store.subscribed_webhooks(store, organization_id, event):
        told = [post for post in posts if not covered or post["channel"]["id"] in covered]
        if told:
            items = [{**{key: value for key, value in post.items() if key != "channel"},
                      "integration": post["channel"], **(details or {})} for post in told]
            payloads.append((webhook_id, {**event_envelope(event, organization_id, told[0]["channel"], items[0]),
                                          "posts": items}))
    queued = delivery_store.queue_deliveries(store, organization_id, event, payloads)
    if queued:
        wake_all(ACTIVE_SENDERS)
    return queued
