"""The scheduler's claims on PostgreSQL (storage.scheduling.claim_post), in process against a real database.

A scheduler claims from a list of due posts it read earlier, offering a claim several at once: the claim takes
the first of them that is still due and that no other process took, however many processes claim at once; it
never takes one post twice, nor two posts of one channel at once; and it reads what publishing needs in the
same transaction, as post_for_publishing would read it after."""
from __future__ import annotations

import signal
import threading

import pytest

from conftest import LOCAL_FAKES, RustizServer
from fakes.webhook import FakeWebhookReceiver
from support import API, api, channel_post, iso, post_body, webhook_channel

CHANNELS, POSTS_PER_CHANNEL = 3, 2
PAST, FUTURE, LEASE_UNTIL = "2000-01-01T00:00:00.000Z", "2999-01-01T00:00:00.000Z", "2999-01-01T00:00:00.000Z"


@pytest.fixture
def due(pyz, tmp_path, postgres_cluster):
    """(a Store on a fresh database, {channel id: its posts' ids in the order made}): POSTS_PER_CHANNEL posts
    on each of CHANNELS webhook channels, made through a server that is then stopped, and all due now."""
    import rustiz
    database = postgres_cluster.create_database()
    receiver = FakeWebhookReceiver()
    server = RustizServer(pyz, tmp_path / "server", {**LOCAL_FAKES, "RUSTIZ_DATABASE": database}).start()
    try:
        channels = [webhook_channel(server, receiver, f"hook {number}", f"/hook?channel={number}") for number in range(CHANNELS)]
        posts: dict = {channel: [] for channel in channels}
        for round_number in range(POSTS_PER_CHANNEL):  # (due in an hour: the server must not publish them)
            body = post_body(*[channel_post(channel, f"<p>post {round_number}</p>") for channel in channels],
                             type="schedule", date=iso(3600))
            status, answer = api(server, "POST", f"{API}/posts", body)
            assert status == 201, answer
            for item in answer:
                posts[item["integration"]].append(item["postId"])
    finally:
        server.stop(signal.SIGKILL)
        receiver.close()
    store = rustiz.Store(database)
    with store.writing() as db:
        db.execute("UPDATE post SET publish_date = ?", (PAST,))
    yield store, posts
    store.close()
    postgres_cluster.drop_database(database)


def claim(store, post_ids: list, owner: str = "test") -> dict | None:
    from rustiz_features.storage import scheduling
    return scheduling.claim_post(store, post_ids, owner, LEASE_UNTIL)


def states(store) -> dict:
    return dict(store.read("SELECT id, state FROM post").fetchall())


def test_processes_claiming_from_one_list_at_once_take_each_post_once_and_one_per_channel(due):
    store, posts = due
    every_post = [post for round_number in range(POSTS_PER_CHANNEL) for post in
                  (posts[channel][round_number] for channel in posts)]
    claims: list = []
    start = threading.Barrier(6)

    def claimer(number: int) -> None:  # (each thread has a connection of its own, as a process would)
        start.wait()
        while (taken := claim(store, every_post, f"process {number}")) is not None:
            claims.append(taken)

    threads = [threading.Thread(target=claimer, args=(number,)) for number in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    # the first post of each channel, once; the second waits until the first is no longer publishing
    assert sorted(taken["id"] for taken in claims) == sorted(posts[channel][0] for channel in posts)
    assert sorted(taken["channel_id"] for taken in claims) == sorted(posts)
    found = states(store)
    assert [found[posts[channel][0]] for channel in posts] == ["PUBLISHING"] * CHANNELS
    assert [found[posts[channel][1]] for channel in posts] == ["QUEUE"] * CHANNELS


def test_a_claim_skips_what_is_no_longer_due_or_already_claimed_and_takes_the_next(due):
    store, posts = due
    first, second, third = (posts[channel][0] for channel in posts)
    with store.writing() as db:  # moved to a later date after the list was read
        db.execute("UPDATE post SET publish_date = ? WHERE id = ?", (FUTURE, first))
    assert claim(store, [first]) is None
    assert claim(store, [second], "another process")["id"] == second

    assert claim(store, [first, second, third])["id"] == third
    found = states(store)
    assert (found[first], found[second], found[third]) == ("QUEUE", "PUBLISHING", "PUBLISHING")
    assert claim(store, [first, second, third]) is None


def test_a_claim_reads_what_publishing_needs_as_it_is_once_claimed(due):
    from rustiz_features.storage import scheduling
    store, posts = due
    channel = next(iter(posts))
    taken = claim(store, [posts[channel][0]], "owner")
    assert taken == scheduling.post_for_publishing(store, posts[channel][0])
    assert (taken["attempts"], taken["channel_id"], taken["provider"], taken["part"]) == (1, channel, "webhook", 0)
    assert taken["idempotency_key"]
    lease = store.read("SELECT lease_owner, lease_until FROM post WHERE id = ?", (taken["id"],)).fetchone()
    assert tuple(lease) == ("owner", LEASE_UNTIL)
