"""Hostile clients: the server's peak RSS and the /health p99 while 200 connections trickle large bodies
(half without a key, half with the organization's key) and 2,000 sit idle; each reconnects when the
server closes it, as a patient attacker would. Usage: hostile_bench.py PYTHON PYZ WORKDIR [SECONDS]"""
import asyncio, os, resource, socket, subprocess, sys, threading, time

python, pyz, work = sys.argv[1:4]
SECONDS = float(sys.argv[4]) if len(sys.argv) > 4 else 20
TRICKLERS, IDLE = 200, 2000
ANNOUNCED = 25 * 1024 * 1024  # RUSTIZ_MAX_BODY's default
PIECE, EVERY = 16 * 1024, 0.1  # 160 KiB/s per trickler

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < hard:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # 2,200 sockets here, as many in the server
if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < TRICKLERS + IDLE + 200:
    sys.exit(f"ulimit -n is {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}: {TRICKLERS + IDLE + 200} needed")

env = {**os.environ, "RUSTIZ_CONFIG": f"{work}/config.env", "HOST": "127.0.0.1", "PORT": "0",
       "REQUEST_LIMIT": "0", "API_LIMIT": "0", "RUSTIZ_NO_SPEEDUPS": "1"}
subprocess.run([python, pyz, "init", "--dir", work], env=env, check=True, capture_output=True)
key = [l.split("=", 1)[1] for l in open(f"{work}/config.env").read().splitlines() if l.startswith("RUSTIZ_API_KEY=")][0]
server = subprocess.Popen([python, pyz, "serve"], env=env, stderr=subprocess.PIPE, text=True,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard)))
port = int(server.stderr.readline().split("ready on ")[1].split()[0].rsplit(":", 1)[1])
threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()  # keep its stderr drained


def status_kib(name):
    with open(f"/proc/{server.pid}/status") as status:
        return int(next(line for line in status if line.startswith(name + ":")).split()[1])


latencies, failures = [], [0]


def probe(stop):
    """GET /health on a new connection every 50 ms; a failure counts as 5 s."""
    while not stop.is_set():
        started = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
                connection.sendall(b"GET /health HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
                reply = b""
                while chunk := connection.recv(4096):
                    reply += chunk
            ok = reply.startswith(b"HTTP/1.1 200 ")
        except OSError:
            ok = False
        latencies.append(time.monotonic() - started if ok else 5.0)
        failures[0] += not ok
        stop.wait(0.05)


async def connection_loop(head, trickle, deadline, counts):
    loop = asyncio.get_running_loop()
    piece = b"x" * PIECE
    while loop.time() < deadline:
        connection = socket.socket()
        connection.setblocking(False)
        try:
            await loop.sock_connect(connection, ("127.0.0.1", port))
            counts["opened"] += 1
            if trickle:
                await loop.sock_sendall(connection, head)
                sent = 0
                while sent < ANNOUNCED and loop.time() < deadline:
                    await asyncio.wait_for(loop.sock_sendall(connection, piece), deadline - loop.time())
                    sent += PIECE
                    await asyncio.sleep(EVERY)
            else:
                while await asyncio.wait_for(loop.sock_recv(connection, 4096), deadline - loop.time()):
                    pass  # idle: only the server's closing (or its answer) ends this
        except (OSError, asyncio.TimeoutError):
            pass
        finally:
            connection.close()
        await asyncio.sleep(0.5)  # then come back


async def main():
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SECONDS
    counts = {"opened": 0}
    heads = [(f"POST /public/v1/posts HTTP/1.1\r\nHost: b\r\n{'Authorization: ' + key + chr(13) + chr(10) if n % 2 else ''}"
              f"Content-Type: application/json\r\nContent-Length: {ANNOUNCED}\r\n\r\n").encode() for n in range(TRICKLERS)]
    tasks = [connection_loop(head, True, deadline, counts) for head in heads]
    tasks += [connection_loop(b"", False, deadline, counts) for _ in range(IDLE)]
    await asyncio.gather(*tasks)
    return counts


stop = threading.Event()
prober = threading.Thread(target=probe, args=(stop,), daemon=True)
try:
    prober.start()
    counts = asyncio.run(main())
    stop.set()
    prober.join(10)
    peak = status_kib("VmHWM") / 1024
    ordered = sorted(latencies)
    p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000 if ordered else float("nan")
    print(f"HOSTILE_PEAK_RSS={peak:.0f} HOSTILE_HEALTH_P99={p99:.0f} HOSTILE_HEALTH_N={len(ordered)} "
          f"HOSTILE_HEALTH_FAILS={failures[0]} HOSTILE_CONNECTIONS={counts['opened']} HOSTILE_SECONDS={SECONDS:.0f}")
finally:
    server.terminate()
    try:
        server.wait(20)
    except subprocess.TimeoutExpired:
        server.kill()
