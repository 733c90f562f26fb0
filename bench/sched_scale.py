"""Posts published per second to a zero-latency local receiver by COUNT rustiz processes sharing DATABASE
(a postgresql:// URL, or "sqlite": one process on a SQLite file): 1,000 webhook channels, one post each,
all due at the same instant. Usage: sched_scale.py PYTHON PYZ WORKDIR COUNT DATABASE"""
import subprocess, sys, threading, time

import bench_receiver
from bench_receiver import init_key, iso, rustiz_env, start_receiver

python, pyz, work, count, database = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
CHANNELS = 1000
arrivals = {}  # post id -> time.time() of its first arrival

hook = start_receiver(arrivals, time.time)
env = rustiz_env(work, database)
key = init_key(python, pyz, work, env)
servers = [subprocess.Popen([python, pyz, "serve"], env=env, stderr=subprocess.PIPE, text=True) for _ in range(count)]


def ready_url(server):
    for line in server.stderr:
        if "ready on " in line:
            return line.split("ready on ")[1].split()[0]
    raise SystemExit(f"a rustiz process exited ({server.wait()}) before it was ready")


bases = [ready_url(server) for server in servers]
for server in servers:  # keep draining their logs, so that logging never blocks them
    threading.Thread(target=server.stderr.read, daemon=True).start()


def call(base, method, path, body):
    return bench_receiver.call(base, key, method, path, body)


try:
    channels = [call(bases[n % count], "POST", "/public/v1/integrations",
                     {"provider": "webhook", "credentials": {"url": f"{hook}?c={n}"}})["id"] for n in range(CHANNELS)]
    due = time.time() + 8
    ids = []
    for start in range(0, CHANNELS, 100):
        ids += [item["postId"] for item in call(bases[start // 100 % count], "POST", "/public/v1/posts", {
            "type": "schedule", "date": iso(due), "shortLink": False, "tags": [],
            "posts": [{"integration": {"id": channel}, "settings": {}, "value": [{"content": "<p>rate</p>", "image": []}]}
                      for channel in channels[start:start + 100]]})]
    created = time.time()
    deadline = time.monotonic() + 180
    while len([i for i in ids if i in arrivals]) < len(ids) and time.monotonic() < deadline:
        time.sleep(0.05)
    got = sorted(arrivals[i] for i in ids if i in arrivals)
    start = max(due, created)  # (if creating them took longer than planned, counted from when the last was made)
    print(f"RATE={len(got) / max(1e-9, got[-1] - start):.0f} POSTS={len(got)} LATE_START={max(0.0, created - due):.1f}")
finally:
    for server in servers:
        server.terminate()
    for server in servers:
        server.wait(20)
