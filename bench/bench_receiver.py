"""A zero-latency webhook receiver, and a rustiz instance set up to publish to it."""
import asyncio, json, os, subprocess, threading, time, urllib.request


def start_receiver(arrivals, clock):
    """Answer every POST at once, on a thread of its own, recording clock() at each post's first post.publish
    into arrivals[post id]; returns the hook URL."""
    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
                body = json.loads(await reader.readexactly(length))
                if body["event"] == "post.publish":
                    arrivals.setdefault(body["post"]["id"], clock())
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def serve(ready):
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        ready.append(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    ready = []
    threading.Thread(target=lambda: asyncio.run(serve(ready)), daemon=True).start()
    while not ready:
        time.sleep(0.01)
    return f"http://127.0.0.1:{ready[0]}/hook"


def rustiz_env(work, database="sqlite"):
    """A stdlib rustiz's environment for WORK (DATABASE: a PostgreSQL URL, or "sqlite": the file in WORK)."""
    env = {**os.environ, "RUSTIZ_CONFIG": f"{work}/config.env", "HOST": "127.0.0.1", "PORT": "0", "REQUEST_LIMIT": "0",
           "API_LIMIT": "0", "RUSTIZ_NO_SPEEDUPS": "1", "RUSTIZ_FETCH_ALLOW": "127.0.0.1"}  # the receiver is local
    if database != "sqlite":
        env["RUSTIZ_DATABASE"] = database
    return env


def init_key(python, pyz, work, env):
    """`rustiz init` into WORK; its API key."""
    subprocess.run([python, pyz, "init", "--dir", work], env=env, check=True, capture_output=True)
    return [l.split("=", 1)[1] for l in open(f"{work}/config.env").read().splitlines()
            if l.startswith("RUSTIZ_API_KEY=")][0]


def call(base, key, method, path, body):
    """One JSON request to the rustiz at BASE; its JSON answer."""
    request = urllib.request.Request(base + path, json.dumps(body).encode(), method=method,
                                     headers={"Authorization": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


def iso(epoch):
    """A Unix time as the API takes dates."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + f".{int(epoch % 1 * 1000):03d}Z"
