"""Outgoing webhook deliveries are durable rows: each event reaches each receiver with one delivery id, the
same on every retry; a receiver that fails or is down gets it later; a server killed before or while delivering
delivers after its restart; a delivery that keeps failing is given up with a notification; deleting a webhook
stops its deliveries; several servers sharing the database send each delivery once."""
from __future__ import annotations

import signal
import threading
import time
import uuid
from http.server import ThreadingHTTPServer

import pytest

from fakes.webhook import FakeWebhookReceiver, signature_ok
from support import (API, FAST_RETRIES, api, connect_database, dict_rows, iso, notifications, scheduled, settled,
                     wait_for, webhook_channel)

QUICK_WEBHOOK_RETRIES = {**FAST_RETRIES, "RUSTIZ_WEBHOOK_RETRY_WAITS": "0.3,0.3,0.3"}


@pytest.fixture
def listener():
    """A receiver of organization webhooks (signed with "events-secret")."""
    fake = FakeWebhookReceiver(secret="events-secret")
    yield fake
    fake.close()


@pytest.fixture
def hooked_server(start_server_with_fakes):
    return start_server_with_fakes(env=QUICK_WEBHOOK_RETRIES)


def register(server, listener, name: str = "n8n") -> str:
    # (the outcome events these tests count; a webhook without events would also get post.created: issue 26)
    status, webhook = api(server, "POST", f"{API}/webhooks",
                          {"name": name, "url": listener.url + "/hook", "secret": "events-secret",
                           "events": ["post.published", "post.failed"]})
    assert status == 201, webhook
    return webhook["id"]


def delivery_rows(server) -> list:
    return dict_rows(server.database, "SELECT * FROM webhook_delivery ORDER BY created_at")


def delivery_ids(listener) -> list:
    return [request.headers["x-rustiz-delivery"] for request in listener.requests]


def publish(server, channel: str, text: str = "announced") -> str:
    post_id = scheduled(server, channel, f"<p>{text}</p>", type="schedule")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    return post_id


def stop_receiving(listener) -> None:
    """The receiver goes down: its port refuses connections."""
    listener.server.shutdown()
    listener.server.server_close()


def resume_receiving(listener) -> None:
    """The receiver comes back up on the same port, answering as before."""
    listener.server = ThreadingHTTPServer(("127.0.0.1", listener.port), listener.server.RequestHandlerClass)
    listener.server.daemon_threads = True
    threading.Thread(target=listener.server.serve_forever, daemon=True).start()


def test_an_event_is_delivered_once_with_the_id_of_its_delivery_row(hooked_server, receiver, listener):
    channel = webhook_channel(hooked_server, receiver)
    register(hooked_server, listener)
    post_id = publish(hooked_server, channel)
    listener.wait_for(lambda: len(listener.events) == 1)
    (row,) = wait_for(lambda: delivery_rows(hooked_server), lambda rows: rows and rows[0]["delivered_at"])
    assert delivery_ids(listener) == [row["id"]]
    assert listener.requests[0].headers["idempotency-key"] == row["id"]
    assert signature_ok(listener.requests[0], "events-secret")
    assert listener.events[0]["event"] == "post.published" and listener.events[0]["post"]["id"] == post_id
    assert row["attempts"] == 1 and row["lease_owner"] is None and row["last_error"] is None
    time.sleep(1)
    assert len(listener.requests) == 1


def test_a_receiver_that_answers_500_then_200_gets_the_same_delivery_id_twice(hooked_server, receiver, listener):
    channel = webhook_channel(hooked_server, receiver)
    register(hooked_server, listener)
    listener.fail_next("POST", "/hook", 500, {"message": "busy"})
    publish(hooked_server, channel)
    listener.wait_for(lambda: len(listener.requests) == 2)
    (row,) = wait_for(lambda: delivery_rows(hooked_server), lambda rows: rows and rows[0]["delivered_at"])
    assert delivery_ids(listener) == [row["id"], row["id"]]
    assert row["attempts"] == 2 and row["last_error"] is None
    time.sleep(1.2)  # beyond every retry wait: the 200 was the last request
    assert len(listener.requests) == 2


def test_a_receiver_down_while_the_post_publishes_gets_the_event_once_it_is_up(start_server_with_fakes, receiver,
                                                                               listener):
    server = start_server_with_fakes(env={**FAST_RETRIES, "RUSTIZ_WEBHOOK_RETRY_WAITS": "1,1,1,1,1,1,1,1,1,1"})
    channel = webhook_channel(server, receiver)
    register(server, listener)
    stop_receiving(listener)
    post_id = publish(server, channel)
    (row,) = wait_for(lambda: delivery_rows(server), lambda rows: rows and rows[0]["attempts"] >= 2
                      and rows[0]["last_error"] and rows[0]["lease_owner"] is None)
    assert row["delivered_at"] is None and "refused" in row["last_error"].lower(), row
    resume_receiving(listener)
    listener.wait_for(lambda: len(listener.events) == 1)
    assert listener.events[0]["post"]["id"] == post_id and delivery_ids(listener) == [row["id"]]
    wait_for(lambda: delivery_rows(server), lambda rows: rows[0]["delivered_at"])


def test_a_server_killed_while_delivering_delivers_the_same_id_after_its_restart(hooked_server, receiver, listener):
    channel = webhook_channel(hooked_server, receiver)
    register(hooked_server, listener)
    listener.delay_next("POST", "/hook", 5)
    publish(hooked_server, channel)
    listener.wait_for(lambda: len(listener.requests) == 1)
    hooked_server.stop(signal.SIGKILL)
    (row,) = delivery_rows(hooked_server)
    assert row["delivered_at"] is None and row["lease_until"] > time.time()
    with connect_database(hooked_server.database) as db:  # as if its lease had run out
        db.execute("UPDATE webhook_delivery SET lease_until = ?", (time.time() - 1,))
    hooked_server.start()
    listener.wait_for(lambda: len(listener.requests) == 2)
    assert delivery_ids(listener) == [row["id"], row["id"]]
    wait_for(lambda: delivery_rows(hooked_server), lambda rows: rows[0]["delivered_at"])


def test_a_delivery_queued_before_a_kill_is_sent_after_the_restart(hooked_server, receiver, listener):
    webhook_id = register(hooked_server, listener)
    hooked_server.stop(signal.SIGKILL)
    delivery_id = str(uuid.uuid4())
    event = ('{"event":"post.published","organizationId":"org","channel":{"id":"c","name":"n","provider":"webhook"},'
             '"post":{"id":"p-1","group":"g","part":0,"publishDate":"2026-12-01T10:00:00.000Z"}}')
    with connect_database(hooked_server.database) as db:
        organization_id = db.execute("SELECT organization_id FROM webhook WHERE id = ?", (webhook_id,)).fetchone()[0]
        db.execute("INSERT INTO webhook_delivery (id, organization_id, webhook_id, event, payload, next_attempt_at, "
                   "created_at) VALUES (?, ?, ?, 'post.published', ?, ?, ?)",
                   (delivery_id, organization_id, webhook_id, event, time.time(), iso()))
    hooked_server.start()
    listener.wait_for(lambda: len(listener.events) == 1)
    assert delivery_ids(listener) == [delivery_id] and listener.events[0]["post"]["id"] == "p-1"


def test_a_delivery_that_keeps_failing_is_given_up_with_one_notification(hooked_server, receiver, listener):
    channel = webhook_channel(hooked_server, receiver)
    register(hooked_server, listener, name="Zapier")
    listener.fail_next("POST", "/hook", 500, {"message": "stack trace with internals"}, times=10)
    post_id = publish(hooked_server, channel)
    (row,) = wait_for(lambda: delivery_rows(hooked_server), lambda rows: rows and rows[0]["gave_up_at"])
    assert row["attempts"] == 4 and len(listener.requests) == 4 and row["last_error"] == "HTTP 500"
    given_up = [text for text in notifications(hooked_server) if text.startswith("Webhook")]
    assert given_up == [f'Webhook "Zapier" (127.0.0.1:{listener.port}) did not take the post.published event of '
                        f"post {post_id} after 4 tries over {given_up[0].split(' over ')[1].split(';')[0]}; the last "
                        f"problem: HTTP 500. rustiz stopped trying (delivery {row['id']})"], given_up
    assert "internals" not in given_up[0]
    assert sum("did not take the post.published event" in line for line in hooked_server.stderr_lines) == 1


def test_an_address_the_guard_refuses_is_given_up_at_once(hooked_server, receiver, listener):
    channel = webhook_channel(hooked_server, receiver)
    webhook_id = register(hooked_server, listener)
    with connect_database(hooked_server.database) as db:  # allowed when registered, refused since
        db.execute("UPDATE webhook SET url = 'http://10.9.8.7/hook' WHERE id = ?", (webhook_id,))
    publish(hooked_server, channel)
    (row,) = wait_for(lambda: delivery_rows(hooked_server), lambda rows: rows and rows[0]["gave_up_at"])
    assert row["attempts"] == 1 and "10.9.8.7" in row["last_error"]
    assert any("(10.9.8.7) did not take" in text and "after 1 try" in text for text in notifications(hooked_server))


def test_deleting_a_webhook_stops_its_pending_deliveries(start_server_with_fakes, receiver, listener):
    server = start_server_with_fakes(env={**FAST_RETRIES, "RUSTIZ_WEBHOOK_RETRY_WAITS": "1.5,1.5,1.5,1.5"})
    channel = webhook_channel(server, receiver)
    webhook_id = register(server, listener)
    listener.fail_next("POST", "/hook", 503, times=10)
    publish(server, channel)
    listener.wait_for(lambda: len(listener.requests) == 1)
    assert api(server, "DELETE", f"{API}/webhooks/{webhook_id}")[0] == 200
    time.sleep(3)
    assert len(listener.requests) == 1 and delivery_rows(server) == []


def test_servers_sharing_a_database_send_each_delivery_once(start_server_with_fakes, listener, tmp_path):
    first = start_server_with_fakes(env=QUICK_WEBHOOK_RETRIES, data_dir=tmp_path / "shared")
    webhook_id = register(first, listener)
    first.stop()
    with connect_database(first.database) as db:
        organization_id = db.execute("SELECT organization_id FROM webhook").fetchone()[0]
        queued = [str(uuid.uuid4()) for _ in range(24)]
        db.executemany("INSERT INTO webhook_delivery (id, organization_id, webhook_id, event, payload, "
                       "next_attempt_at, created_at) VALUES (?, ?, ?, 'post.published', ?, ?, ?)",
                       [(delivery_id, organization_id, webhook_id,
                         '{"event":"post.published","post":{"id":"%s"}}' % number, time.time(), iso())
                        for number, delivery_id in enumerate(queued)])
    listener.delay_next("POST", "/hook", 0.3, times=24)  # so that both servers find deliveries left to claim
    first.start()
    start_server_with_fakes(env=QUICK_WEBHOOK_RETRIES, data_dir=tmp_path / "shared")
    listener.wait_for(lambda: len(listener.requests) >= 24)
    wait_for(lambda: delivery_rows(first), lambda rows: all(row["delivered_at"] for row in rows))
    time.sleep(0.5)
    assert sorted(delivery_ids(listener)) == sorted(queued)
    assert all(row["attempts"] == 1 for row in delivery_rows(first))


def test_unreadable_retry_waits_are_logged_and_the_default_schedule_is_kept(start_server_with_fakes, receiver,
                                                                             listener):
    server = start_server_with_fakes(env={**FAST_RETRIES, "RUSTIZ_WEBHOOK_RETRY_WAITS": "5,soon"})
    channel = webhook_channel(server, receiver)
    register(server, listener)
    listener.fail_next("POST", "/hook", 500)
    publish(server, channel)
    (row,) = wait_for(lambda: delivery_rows(server), lambda rows: rows and rows[0]["last_error"])
    assert 2 < row["next_attempt_at"] - time.time() <= 5  # the default's first wait, 5 s
    assert any("RUSTIZ_WEBHOOK_RETRY_WAITS must be seconds between 0 and 86400 separated by commas, like "
               "5,30,120; got '5,soon'" in line for line in server.stderr_lines), server.stderr_lines
