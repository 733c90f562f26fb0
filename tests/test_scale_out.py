"""Scaling out (issue 14): several `rustiz serve` processes, each with its own data folder as if on its own
machine, sharing one PostgreSQL database (and, for uploads, one S3 bucket). Every due post is published exactly once, by whichever process
claims it; a process killed mid-way leaves leases that expire, and the others finish its posts under the
exactly-once rules (the webhook provider sends the same delivery id on every attempt, so a receiver can tell
a repeat). The receiver is tests/fakes/webhook.py's (zero latency); it also notes which process sent each
delivery, from the socket the request came on."""
from __future__ import annotations

import os
import signal
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import LOCAL_FAKES, RustizServer
from fakes.telegram import FakeTelegram
from fakes.webhook import FakeWebhookReceiver
from s3_server import S3Server
from support import (API, FAST_RETRIES, api, channel_post, connected, iso, png_file, post_body, scheduled, settled,
                     uploaded, visit, wait_for, webhook_channel)

LEASE_SECONDS = 3  # RUSTIZ_SCHEDULER_LEASE_SECONDS: short, so a killed process's posts come back soon
CHANNELS, POSTS_PER_CHANNEL = 60, 10


def socket_owner(port: int, pids: list) -> int | None:
    """The process (among `pids`) whose TCP socket has local port `port`: who opened the connection."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    for pid in pids:
        try:
            descriptors = os.listdir(f"/proc/{pid}/fd")
        except OSError:  # (killed meanwhile)
            continue
        for descriptor in descriptors:
            try:
                if os.readlink(f"/proc/{pid}/fd/{descriptor}") in inodes:
                    return pid
            except OSError:
                continue
    return None


class AttributingReceiver(FakeWebhookReceiver):
    """A FakeWebhookReceiver that marks each request with the pid of the rustiz process that sent it."""

    def __init__(self):
        super().__init__()
        self.pids: list = []
        self.route("POST", r"/hook/\d+", self.receive)  # one URL per channel: a URL is one webhook account

    def dispatch(self, request, handler):
        request.sender = socket_owner(handler.client_address[1], self.pids)
        return super().dispatch(request, handler)

    def publish_requests(self) -> list:
        """(post id, delivery id, sender pid) of every post.publish request received, repeats included."""
        with self.lock:
            requests = list(self.requests)
        found = []
        for request in requests:
            event = request.json() if request.method == "POST" else None
            if isinstance(event, dict) and event.get("event") == "post.publish":
                found.append((event["post"]["id"], request.headers["x-rustiz-delivery"],
                              getattr(request, "sender", None)))  # (None while its dispatch is just starting)
        return found


def query(database: str, sql: str, *parameters) -> list:
    import psycopg
    with psycopg.connect(database, autocommit=True) as connection:
        return connection.execute(sql, parameters).fetchall()


def states(database: str) -> dict:
    return dict(query(database, "SELECT state, COUNT(*) FROM post WHERE deleted_at IS NULL GROUP BY state"))


@pytest.fixture
def machines(pyz, tmp_path, postgres_cluster):
    """Factory: machines(n) -> n running servers on one fresh database (the first one's `rustiz init` made the
    organization and key; the others got the same config.env, as a deployment would copy it); stopped after."""
    started: list[RustizServer] = []
    databases: list[str] = []

    def start(count: int, env: dict | None = None) -> list:
        database = postgres_cluster.create_database()
        databases.append(database)
        settings = {**LOCAL_FAKES, "RUSTIZ_DATABASE": database, "API_LIMIT": "0",
                    "RUSTIZ_SCHEDULER_LEASE_SECONDS": str(LEASE_SECONDS), **(env or {})}
        group: list[RustizServer] = []
        for number in range(1, count + 1):
            folder = tmp_path / f"machine{number}"
            if group:
                folder.mkdir()
                config = group[0].config_path.read_text().replace(str(group[0].data_dir), str(folder))
                (folder / "config.env").write_text(config)
            server = RustizServer(pyz, folder, settings)
            started.append(server)
            group.append(server.start())
        return group

    yield start
    for server in started:
        server.stop(signal.SIGKILL)
    for database in databases:
        postgres_cluster.drop_database(database)


@pytest.fixture
def three(machines) -> tuple:
    """Three processes on one database, and a receiver that tells which of them sent each request."""
    group = machines(3)
    receiver = AttributingReceiver()
    receiver.pids = [server.process.pid for server in group]
    yield group, receiver
    receiver.close()


def due_on_every_channel(group: list, receiver: AttributingReceiver) -> tuple:
    """POSTS_PER_CHANNEL posts on each of CHANNELS webhook channels, all due in the same second a little ahead:
    (their ids, the database URL)."""
    post_ids = schedule_everywhere(group, hook_channels(group, receiver), POSTS_PER_CHANNEL, due_in(10))
    assert len(post_ids) == CHANNELS * POSTS_PER_CHANNEL
    return post_ids, group[0].extra_env["RUSTIZ_DATABASE"]


def hook_channels(group: list, receiver: AttributingReceiver) -> list:
    """CHANNELS webhook channels, each to its own URL on the receiver, connected through the processes in turn."""
    return [webhook_channel(group[number % len(group)], receiver, f"hook {number}", f"/hook/{number}")
            for number in range(CHANNELS)]


def schedule_everywhere(group: list, channels: list, per_channel: int, date: str) -> list:
    """`per_channel` posts on each channel, all due at `date`, created through the processes in turn; their ids."""
    post_ids = []
    for round_number in range(per_channel):
        entries = [channel_post(channel, f"<p>post {round_number} on channel {number}</p>")
                   for number, channel in enumerate(channels)]
        server = group[round_number % len(group)]
        body = post_body(*entries, type="schedule", date=date)
        status, answer = api(server, "POST", f"{API}/posts", body, timeout=60)
        assert status == 201, answer
        post_ids += [item["postId"] for item in answer]
    return post_ids


def due_in(seconds: float) -> str:
    """A whole second at least `seconds` from now, as the API writes dates: every post due in that same second."""
    return iso(int(time.time() + seconds) + 1 - time.time())


def senders(deliveries: list, group: list) -> dict:
    """How many deliveries each process sent, by its place in `group` (1, 2, 3)."""
    places = {server.process.pid: number for number, server in enumerate(group, 1)}
    counts: dict = {}
    for _, _, pid in deliveries:
        counts[places.get(pid)] = counts.get(places.get(pid), 0) + 1
    return counts


def assert_each_post_delivered_once(deliveries: list, post_ids: list, may_repeat: set = frozenset()) -> None:
    """Every post reached the receiver under one delivery id of its own; sent more than once only if in `may_repeat`."""
    ids_per_post: dict = {}
    sends_per_post: dict = {}
    for post_id, delivery_id, _ in deliveries:
        ids_per_post.setdefault(post_id, set()).add(delivery_id)
        sends_per_post[post_id] = sends_per_post.get(post_id, 0) + 1
    assert set(ids_per_post) == set(post_ids), f"{len(set(post_ids) - set(ids_per_post))} posts never arrived"
    assert all(len(ids) == 1 for ids in ids_per_post.values()), "a post arrived under two delivery ids"
    assert len({next(iter(ids)) for ids in ids_per_post.values()}) == len(post_ids), "two posts shared a delivery id"
    repeated = {post_id for post_id, sends in sends_per_post.items() if sends > 1}
    assert repeated <= set(may_repeat), f"posts sent twice that no dead process held: {sorted(repeated - may_repeat)}"


@pytest.mark.timeout(400)
def test_600_posts_due_in_the_same_second_go_out_once_each_spread_over_three_processes(three):
    group, receiver = three
    post_ids, database = due_on_every_channel(group, receiver)

    wait_for(lambda: states(database), lambda found: found.get("PUBLISHED", 0) == len(post_ids), timeout=300)

    deliveries = receiver.publish_requests()
    assert_each_post_delivered_once(deliveries, post_ids)
    spread = senders(deliveries, group)
    print(f"deliveries per process: {spread}")
    assert None not in spread and all(spread.get(number, 0) > 0 for number in (1, 2, 3)), spread


@pytest.mark.timeout(400)
def test_a_process_killed_mid_way_leaves_its_posts_to_the_others_none_lost_repeats_under_the_same_id(three):
    group, receiver = three
    post_ids, database = due_on_every_channel(group, receiver)

    wait_for(lambda: len({post for post, _, _ in receiver.publish_requests()}),
             lambda count: count >= len(post_ids) // 4, timeout=120)
    victim = group[2]
    victim.stop(signal.SIGKILL)
    owner_suffix = f":{victim.process.pid}"
    held = {row[0] for row in query(database, "SELECT id FROM post WHERE state = 'PUBLISHING' "
                                              "AND lease_owner LIKE %s", "%" + owner_suffix)}
    delivered_at_kill = len({post for post, _, _ in receiver.publish_requests()})
    assert delivered_at_kill < len(post_ids), "every post was out before the kill: nothing was tested"

    wait_for(lambda: states(database), lambda found: found.get("PUBLISHED", 0) == len(post_ids), timeout=300)

    assert_each_post_delivered_once(receiver.publish_requests(), post_ids, may_repeat=held)
    spread = senders(receiver.publish_requests(), group)
    print(f"killed with {delivered_at_kill} posts out and {len(held)} being published; deliveries per process: "
          f"{spread}")
    assert spread.get(1, 0) > 0 and spread.get(2, 0) > 0, spread
    assert not query(database, "SELECT id FROM post WHERE state <> 'PUBLISHED'")


def test_a_post_made_on_one_process_is_published_by_another_at_its_time(three):
    """The process that took the post dies before it is due: another one, woken by NOTIFY (or its own timer,
    which the NOTIFY set), publishes it within about a second of its time."""
    group, receiver = three
    channel = webhook_channel(group[0], receiver)
    due = time.monotonic() + 3
    status, answer = api(group[0], "POST", f"{API}/posts",
                         post_body(channel_post(channel, "<p>from machine one</p>"), type="schedule", date=iso(3)))
    assert status == 201, answer
    group[0].stop(signal.SIGKILL)

    delivery = wait_for(receiver.publish_requests, lambda found: len(found) == 1 and found[0][2], timeout=20)[0]
    late = receiver.requests[-1].received - due
    assert delivery[2] in (group[1].process.pid, group[2].process.pid)
    assert late < 2.0, f"published {late:.2f} s after its time"

    now_post = post_body(channel_post(channel, "<p>now</p>"), type="now")
    status, answer = api(group[1], "POST", f"{API}/posts", now_post)
    assert status == 201, answer
    asked = time.monotonic()
    wait_for(receiver.publish_requests, lambda found: len(found) == 2, timeout=20)
    assert receiver.requests[-1].received - asked < 2.0


def test_an_image_uploaded_through_one_process_is_published_and_served_by_the_others_from_the_shared_bucket(machines):
    """The upload goes into the bucket through process A; whichever process claims the post reads the same bytes
    from the bucket to publish them, and GET /uploads/... on process B redirects to the bucket's copy."""
    s3, telegram = S3Server(), FakeTelegram()
    try:
        bucket = s3.create_bucket("rustiz-shared")
        group = machines(3, env={**s3.rustiz_env(bucket), **FAST_RETRIES, **telegram.env})
        channel = connected(group[0], "telegram", telegram.credentials())
        picture = png_file(5, 5, pixel=b"\x0a\x0b\x0c")
        media = uploaded(group[0], picture)
        post = settled(group[0], scheduled(group[0], channel["id"], ("<p>from the shared bucket</p>", [media]),
                                           type="schedule"), stop_at_error=True)
        assert post["state"] == "PUBLISHED", post
        assert [message["media"] for message in telegram.published] == [[("photo", picture)]]

        status, headers = visit(group[1], urlsplit(media["path"]).path)
        assert status == 302 and headers["location"].startswith(f"{s3.endpoint}/{bucket}/"), (status, headers)
        with urllib.request.urlopen(headers["location"], timeout=30) as download:
            assert download.read() == picture
    finally:
        telegram.close()
        s3.stop()


def test_three_processes_adding_to_one_queue_at_once_give_each_post_its_own_slot_without_a_gap(machines):
    """Issue 26: 3 processes on one database, 4 clients on each adding posts to the same channel's queue at once:
    every post gets a slot of its own, and together they fill the first slots in time order, none left out."""
    group = machines(3, env={"RUSTIZ_SCHEDULER": "0", "REQUEST_LIMIT": "0"})
    receiver = FakeWebhookReceiver()
    try:
        channel = webhook_channel(group[0], receiver, "Company news")
    finally:
        receiver.close()
    times = ["08:00", "10:00", "12:00", "14:00", "16:00", "18:00"]
    week = {day: times for day in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")}
    assert api(group[1], "PUT", f"{API}/integrations/{channel}/schedule", week)[0] == 200
    statuses: list = []

    def add(server, client: int) -> None:
        for number in range(10):
            statuses.append(api(server, "POST", f"{API}/posts", {
                "type": "queue", "shortLink": False, "tags": [], "posts": [{"integration": {"id": channel},
                "value": [{"content": f"<p>post {number} of client {client} on {server.port}</p>", "image": []}],
                "settings": {"__type": "webhook"}}]}, timeout=60)[0])

    clients = [threading.Thread(target=add, args=(server, client)) for client in range(4) for server in group]
    started = time.monotonic()
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    took = time.monotonic() - started
    assert statuses == [201] * 120
    slots = api(group[2], "GET", f"{API}/queue?integration={channel}&days=30")[1]["slots"]
    taken = [slot["date"] for slot in slots if slot["post"]]
    assert len(taken) == len(set(taken)) == 120
    assert taken == [slot["date"] for slot in slots][:120]  # the first 120 slots, in time order, no gap
    print(f"120 posts added to one queue by 12 clients on 3 processes in {took:.1f} s: 120 slots, each once, no gap")
