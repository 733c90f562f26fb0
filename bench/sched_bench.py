"""Scheduler figures: posts published per second to a zero-latency local receiver, and how late
each post reaches it after its due time. Usage: sched_bench.py PYTHON PYZ WORKDIR"""
import statistics, subprocess, sys, time

import bench_receiver
from bench_receiver import init_key, iso, rustiz_env, start_receiver

python, pyz, work = sys.argv[1:4]
CHANNELS, LATENCY_POSTS = 1000, 200
arrivals = {}  # post id -> monotonic arrival
clock_offset = time.time() - time.monotonic()

hook = start_receiver(arrivals, time.monotonic)
env = rustiz_env(work)
key = init_key(python, pyz, work, env)
server = subprocess.Popen([python, pyz, "serve"], env=env, stderr=subprocess.PIPE, text=True)
line = server.stderr.readline()
base = line.split("ready on ")[1].split()[0]


def call(method, path, body):
    return bench_receiver.call(base, key, method, path, body)


try:
    channels = [call("POST", "/public/v1/integrations", {"provider": "webhook", "credentials": {"url": f"{hook}?c={n}"}})["id"]
                for n in range(CHANNELS)]
    # 1. throughput: one post on each channel, all due at the same instant
    due = time.time() + 3
    ids = []
    for start in range(0, CHANNELS, 100):
        ids += [item["postId"] for item in call("POST", "/public/v1/posts", {
            "type": "schedule", "date": iso(due), "shortLink": False, "tags": [],
            "posts": [{"integration": {"id": channel}, "settings": {}, "value": [{"content": "<p>rate</p>", "image": []}]}
                      for channel in channels[start:start + 100]]})]
    deadline = time.monotonic() + 120
    while len([i for i in ids if i in arrivals]) < len(ids) and time.monotonic() < deadline:
        time.sleep(0.05)
    got = sorted(arrivals[i] for i in ids if i in arrivals)
    rate = len(got) / max(1e-9, got[-1] + clock_offset - due)
    # 2. lateness: posts due one by one, 50 ms apart, on distinct channels
    first_due = time.time() + 3
    dues = {}
    for n in range(LATENCY_POSTS):
        when = first_due + n * 0.05
        post = call("POST", "/public/v1/posts", {
            "type": "schedule", "date": iso(when), "shortLink": False, "tags": [],
            "posts": [{"integration": {"id": channels[n]}, "settings": {}, "value": [{"content": "<p>late?</p>", "image": []}]}]})
        dues[post[0]["postId"]] = round(when, 3)
    deadline = time.monotonic() + 60
    while len([i for i in dues if i in arrivals]) < len(dues) and time.monotonic() < deadline:
        time.sleep(0.05)
    late = sorted((arrivals[i] + clock_offset - dues[i]) * 1000 for i in dues if i in arrivals)
    print(f"SCHED_POSTS={len(got)} SCHED_RATE={rate:.0f} SCHED_LATE_P50={statistics.median(late):.0f} "
          f"SCHED_LATE_P99={late[int(len(late) * 0.99) - 1]:.0f} SCHED_LATE_N={len(late)}")
finally:
    server.terminate()
    server.wait(20)
