"""The whole path for every provider that connects with credentials, all at once: a channel connected,
an image uploaded, a post (with a thread part where the platform has replies) scheduled through
POST /public/v1/posts, and the platform's fake receiving it at its time, ending PUBLISHED."""
from __future__ import annotations

import time

from platforms import FAKES, REQUIRED_SETTINGS
from support import DONE, connect, get_post, iso, parts_of, png_file, schedule, uploaded
from rustiz_features.publishers import provider_for

NO_THREADS = {provider for provider in FAKES if not provider_for(provider).threads}  # (one part only)
NO_THREADS.add("slack")  # (issue 28: a Slack webhook channel has no replies; its OAuth kind has, see test_provider_slack_oauth)


def test_a_scheduled_post_reaches_every_provider_at_its_time_with_its_media_and_thread(start_server_with_fakes, platforms):
    server = start_server_with_fakes(env={**platforms.env, "RUSTIZ_RETRY_BASE": "0.2", "API_LIMIT": "0"})
    image = uploaded(server, png_file())
    due = iso(3)
    posts = {}
    for provider in sorted(FAKES):
        status, channel = connect(server, provider, platforms.credentials(provider))
        assert status == 201, (provider, channel)
        reply = [] if provider in NO_THREADS else ["<p>and a reply</p>"]
        status, answer = schedule(server, channel["id"], f"<p>Hello from rustiz to {provider}</p>", *reply,
                                  images=[image], settings=REQUIRED_SETTINGS.get(provider), provider=provider,
                                  type="schedule", date=due)
        assert status == 201, (provider, answer)
        posts[provider] = answer[0]["postId"]
    time.sleep(max(0.0, 2.5 - 0.5))
    assert all(get_post(server, post_id)["state"] == "QUEUE" for post_id in posts.values())
    deadline = time.monotonic() + 60
    outcomes = {}
    while len(outcomes) < len(posts):
        assert time.monotonic() < deadline, {provider: get_post(server, post_id)
                                             for provider, post_id in posts.items() if provider not in outcomes}
        for provider, post_id in posts.items():
            post = get_post(server, post_id)
            if all(part["state"] in DONE for part in parts_of(post)):
                outcomes[provider] = post
        time.sleep(0.1)
    for provider, post in outcomes.items():
        assert post["state"] == "PUBLISHED" and post["releaseId"], (provider, post)
        assert [part["state"] for part in post["thread"]] == ([] if provider in NO_THREADS else ["PUBLISHED"]), provider
        assert platforms.fakes[provider].published, provider
