"""GET /metrics as Prometheus reads it, who may read it, and GET /health?verbose=1."""
from __future__ import annotations

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import LOCAL_FAKES, wanted_backends
from support import API, DONE, api, connect_database, iso, scheduled, wait_for, webhook_channel

TOKEN = "metrics-token-0123456789"


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server(env={**LOCAL_FAKES, "RUSTIZ_METRICS_TOKEN": TOKEN})


def samples(server, headers: dict | None = None) -> dict:
    """{(sample name, frozenset of labels): value} of GET /metrics, parsed by prometheus_client."""
    status, answer_headers, body = server.request("GET", "/metrics", headers)
    assert status == 200, body
    assert answer_headers["content-type"].startswith("text/plain; version=0.0.4")
    found = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(found: dict, name: str, **labels) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def state_of(server, post_id: str) -> str:
    with connect_database(server.database) as db:
        return db.execute("SELECT state FROM post WHERE id = ?", (post_id,)).fetchone()[0]


def test_metrics_count_requests_posts_publishes_and_outbound_calls(server, receiver):
    before = samples(server)
    channel_id = webhook_channel(server, receiver, "Metrics hook")
    post_id = scheduled(server, channel_id, "<p>counted</p>")  # (type "now": dated at the start of the minute)
    wait_for(lambda: state_of(server, post_id), lambda state: state in DONE)
    scheduled(server, channel_id, "<p>later</p>", type="schedule", date=iso(3600))
    assert api(server, "GET", f"{API}/posts/no-such-post")[0] == 404
    found = samples(server)

    assert value(found, "rustiz_build_info", version="0.1.0") == 1
    assert value(found, "rustiz_http_requests_total", family="api_posts", status="201") - \
        value(before, "rustiz_http_requests_total", family="api_posts", status="201") == 2
    assert value(found, "rustiz_http_requests_total", family="api_channels", status="201") >= 1
    assert value(found, "rustiz_http_requests_total", family="api_posts", status="404") >= 1
    count = value(found, "rustiz_http_request_duration_seconds_count", family="api_posts")
    assert count >= 3 and value(found, "rustiz_http_request_duration_seconds_bucket", family="api_posts",
                                le="+Inf") == count
    assert value(found, "rustiz_http_request_duration_seconds_sum", family="api_posts") > 0
    assert value(found, "rustiz_publish_attempts_total", provider="webhook") >= 1
    assert value(found, "rustiz_publish_failures_total", provider="webhook") == 0
    assert value(found, "rustiz_posts", state="PUBLISHED") >= 1
    assert value(found, "rustiz_queue_depth", scope="all") >= 1
    assert value(found, "rustiz_queue_depth", scope="due") == 0
    assert value(found, "rustiz_scheduler_lag_seconds_count") >= 1
    assert value(found, "rustiz_scheduler_lag_seconds", quantile="0.99") < 5  # (counted from its creation)
    # the ping when the channel was connected (a request handler's client), then the publish (the scheduler's)
    assert value(found, "rustiz_outbound_requests_total") - value(before, "rustiz_outbound_requests_total") >= 2
    assert ("rustiz_channels_needing_attention", frozenset({("reason", "refresh_needed")})) in found


def test_metrics_answer_a_proxied_client_only_with_the_token(server):
    proxied = {"X-Forwarded-For": "203.0.113.9"}
    status, _, body = server.request("GET", "/metrics", proxied)
    assert status == 403 and b"RUSTIZ_METRICS_TOKEN" in body
    status, _, _ = server.request("GET", "/metrics", {**proxied, "Authorization": "Bearer wrong-token"})
    assert status == 403
    assert samples(server, {**proxied, "Authorization": f"Bearer {TOKEN}"})
    assert server.request("GET", "/health?verbose=1", proxied)[0] == 403


@pytest.mark.parametrize("header", ["X-Real-IP", "Via", "Forwarded", "X-Forwarded-For"])
def test_metrics_count_a_request_through_any_common_proxy_header_as_proxied(server, header):
    value = {"Via": "1.1 nginx", "Forwarded": "for=203.0.113.9"}.get(header, "203.0.113.9")
    status, _, body = server.request("GET", "/metrics", {header: value})
    assert status == 403 and b"RUSTIZ_METRICS_TOKEN" in body, header
    assert server.request("GET", "/health?verbose=1", {header: value})[0] == 403
    assert samples(server, {header: value, "Authorization": f"Bearer {TOKEN}"})


def test_health_stays_plain_and_verbose_health_reports_the_database_scheduler_queue_and_channels(server):
    status, headers, body = server.request("GET", "/health")
    assert (status, body) == (200, b"ok") and headers["content-type"].startswith("text/plain")
    status, headers, body = server.request("GET", "/health?verbose=1")
    assert status == 200 and headers["content-type"].startswith("application/json")
    report = json.loads(body)
    assert report["database"]["writable"] is True and report["version"] == "0.1.0"
    assert report["scheduler"]["alive"] is True and report["scheduler"]["lagSeconds"] >= 0
    assert set(report["queue"]) == {"due", "total"}
    assert report["channels"] == {"refreshNeeded": 0, "disabled": 0}


@pytest.mark.parametrize("backend", wanted_backends()[:1], indirect=True)
def test_metrics_sum_the_requests_of_every_worker(start_server, backend):
    server = start_server(args=("--workers", "2"))
    for _ in range(30):  # each on a new connection: the kernel spreads them over both workers
        assert server.request("GET", "/health")[0] == 200

    def health_requests() -> float:
        return value(samples(server), "rustiz_http_requests_total", family="health", status="200")
    wait_for(health_requests, lambda total: total == 30, timeout=15)
