"""A week of realistic posts on several channels, for the screenshots and the every-page browser walk.

Rows are written straight into the server's database (support.Database), as a team that has used rustiz
for a while would have them: five channels of five platforms in two groups, tags with colours, posts that
went out (with their links), one that failed with the platform's words, queued posts and drafts ahead, a
post on three channels at once, a thread, a draft an agent left for review, and notifications. Nothing here
is due before the test ends (queued posts are hours ahead), so the scheduler leaves them alone.
"""
from __future__ import annotations

import datetime
import secrets

import json

from support import API, Database, api, png_file, upload

CHANNELS = (  # (name, provider, group)
    ("Acme Coffee", "bluesky", "Acme Coffee"),
    ("@acme@mastodon.social", "mastodon", "Acme Coffee"),
    ("Acme Coffee Co.", "linkedin", "Acme Coffee"),
    ("Northwind Bikes", "x", "Northwind"),
    ("northwind.bikes", "instagram", "Northwind"),
)
TAGS = (("Launch", "#e11d48"), ("Tips", "#059669"), ("Events", "#7c3aed"))
TEXTS = (
    "Our autumn blend is back: notes of fig, cocoa and a little orange peel. In every shop from Monday.",
    "Three tips for a better pour-over at home: weigh your beans, heat the water to 94 °C, and bloom for 30 s.",
    "Join us Saturday at the Riverside market: free tastings from 9 to 12. #coffee #market",
    "New in the shop: the Trail 2 gravel bike, 9.8 kg, built for long days. https://example.com/trail-2",
    "Ride of the week: 64 km along the coast with the Northwind crew. Who's in next Sunday?",
    "Behind the scenes: how we roast in small batches, every morning at 6.",
    "We're hiring a barista for the Old Town shop. Mornings, great team, free coffee.",
    "Service tip: check your tyre pressure every week — it's the cheapest speed you can buy.",
)


def html(text: str) -> str:
    return "<p>" + text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") + "</p>"


def utc(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def make_demo_week(server) -> dict:
    """Fills the server's organization with the demo week; returns ids the tests and screenshots use:
    {"channels": [ids], "published": id, "failed": id, "queued": id, "group": [ids], "review": id}."""
    db = Database(server)
    groups = {name: db.customer(name) for name in {group for _, _, group in CHANNELS}}
    channels = [db.channel(name, provider, customer_id=groups[group], profile=name.lstrip("@").split("@")[0].lower())
                for name, provider, group in CHANNELS]
    tags = [db.tag(name, color) for name, color in TAGS]
    now = datetime.datetime.now(datetime.timezone.utc).replace(second=0, microsecond=0)
    today = now.replace(hour=0, minute=0)
    made: dict = {"channels": channels}
    pictures = {}  # a few uploads for the media library, with alt text, one of them used by a queued post
    for name, colour, alt in (("autumn-blend.png", (146, 84, 40), "A cup of the autumn blend beside a fig"),
                              ("trail-2-gravel-bike.png", (37, 99, 235), "The Trail 2 gravel bike on a coast road"),
                              ("riverside-market.png", (5, 150, 105), "")):
        status, media = upload(server, png_file(480, 320, pixel=bytes(colour)), name)
        assert status == 201, media
        if alt:
            api(server, "PUT", f"{API}/media/{media['id']}", {"alt": alt})
        pictures[name] = {"id": media["id"], "path": media["path"], "alt": alt}

    def post(channel: int, day: int, hour: int, minute: int, text: int, *, state: str = "QUEUE", tag: int | None = None,
             **options) -> str:
        at = today + datetime.timedelta(days=day, hours=hour, minutes=minute)
        if state in ("QUEUE", "DRAFT") and at <= now + datetime.timedelta(hours=2):
            at = now + datetime.timedelta(days=1, hours=hour % 6 + 1)  # never due while a test runs
        if state == "PUBLISHED":
            options.setdefault("release_url", f"https://example.com/{CHANNELS[channel][1]}/{secrets.token_hex(4)}")
            options.setdefault("release_id", secrets.token_hex(6))
        post_id = db.post(channels[channel], utc(at), state=state, content=html(TEXTS[text]), **options)
        if tag is not None:
            db.link_tag(post_id, tags[tag])
        return post_id

    # What went out in the last days, and one that failed with the platform's own words.
    made["published"] = post(0, -3, 8, 30, 0, state="PUBLISHED", tag=0)
    post(1, -3, 8, 30, 0, state="PUBLISHED", tag=0)
    post(3, -2, 12, 0, 3, state="PUBLISHED", tag=0)
    post(4, -2, 17, 45, 4, state="PUBLISHED")
    post(2, -1, 9, 0, 6, state="PUBLISHED")
    made["failed"] = post(3, -1, 15, 30, 7, state="ERROR", tag=1,
                          error="X / x: The media could not be processed (HTTP 400: media type unrecognized)")
    # What is ahead: one post on three channels at once, a thread, queued posts and drafts.
    autumn, together = json.dumps([pictures["autumn-blend.png"]]), secrets.token_hex(16)
    made["group"] = [post(index, 1, 9, 0, 1, tag=1, image=autumn) for index in (0, 1, 2)]
    for post_id in made["group"]:  # (each channel its own thread, made together as one post)
        db.execute("UPDATE post SET multi_channel_group = ? WHERE id = ?", together, post_id)
    made["queued"] = made["group"][0]
    thread = db.thread(channels[0], utc(today + datetime.timedelta(days=2, hours=11)),
                       [html(TEXTS[5]), html("1/ We start at 6 with the day's green coffee."),
                        html("2/ Every batch is cupped before it leaves the roastery.")])
    db.link_tag(thread[0], tags[1])
    post(3, 2, 16, 0, 4, tag=2)
    post(4, 2, 16, 0, 4)
    post(2, 3, 10, 30, 6)
    post(1, 4, 9, 15, 2, tag=2)
    post(0, 4, 9, 15, 2, tag=2)
    for hour in (8, 9, 10, 11, 12, 13):  # a busy day: more posts than a month cell shows
        post(hour % 5, 5, hour, 0, hour % len(TEXTS))
    post(4, 3, 18, 0, 7, state="DRAFT")
    made["review"] = post(0, 6, 10, 0, 2, state="DRAFT", creation_method="MCP")
    db.execute("UPDATE post SET review = 'review' WHERE id = ?", made["review"])
    # Notifications, as the scheduler writes them.
    for content, post_id, hours_ago in (
            ("Your post was published on Acme Coffee", made["published"], 70),
            ("Error on Northwind Bikes: The media could not be processed", made["failed"], 20)):
        notification = db.notification(content, utc(now - datetime.timedelta(hours=hours_ago)))
        db.execute("UPDATE notification SET post_id = ? WHERE id = ?", post_id, notification)
    # A signature added to every new post, and a set of the Acme channels.
    api(server, "POST", f"{API}/signatures", {"content": "— The Acme Coffee team ☕", "autoAdd": True})
    api(server, "POST", f"{API}/signatures", {"content": "Ride safe, the Northwind crew 🚲", "autoAdd": False})
    api(server, "POST", f"{API}/sets", {"name": "Acme Coffee everywhere", "channels": channels[:3], "settings": {}})
    return made
