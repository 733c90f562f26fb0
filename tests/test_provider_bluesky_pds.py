"""The Bluesky publisher against a real PDS: @atproto/pds from npm's @atproto/dev-env, with a mock PLC, on
loopback (no AppView, so app.bsky.actor.getProfile answers 502 and the channel is named by its handle).

Skipped unless RUSTIZ_TEST_BSKY_DEVENV names a directory holding (or to receive) that npm package:
    mkdir -p /tmp/bsky-peer && cd /tmp/bsky-peer && npm install @atproto/dev-env@0.3.215   # about 2 min
    RUSTIZ_TEST_BSKY_DEVENV=/tmp/bsky-peer pytest tests/test_provider_bluesky_pds.py
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import rustiz
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import Channel, OutgoingPost
from conftest import client_for_fakes
from support import connect, mp4_file, png_file, published, uploaded

START_SCRIPT = r"""
const net = require('node:net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {  // loopback only: dev-env listens on all interfaces
  if (typeof args[0] === 'number' && (args.length === 1 || typeof args[1] === 'function')) args.splice(1, 0, '127.0.0.1');
  else if (args[0] && typeof args[0] === 'object' && !args[0].path && !args[0].host) args[0] = { ...args[0], host: '127.0.0.1' };
  return listen.apply(this, args);
};
const { TestNetworkNoAppView } = require('@atproto/dev-env');
(async () => {
  const network = await TestNetworkNoAppView.create({
    plc: { port: Number(process.env.PLC_PORT) },
    pds: { port: Number(process.env.PDS_PORT), hostname: 'localhost' },
  });
  console.log(JSON.stringify({ ready: true }));
  const stop = async () => { await network.close(); process.exit(0); };
  process.on('SIGTERM', stop); process.on('SIGINT', stop);
})().catch((error) => { console.error('START FAILED', error); process.exit(1); });
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def dev_env_modules() -> Path:
    """node_modules holding @atproto/dev-env, installed on first use; skips the module when that cannot be."""
    directory = os.environ.get("RUSTIZ_TEST_BSKY_DEVENV")
    if not directory:
        pytest.skip("RUSTIZ_TEST_BSKY_DEVENV is not set: it names a directory outside the repository where "
                    "`npm install @atproto/dev-env` runs (about 2 min, 360 MB)")
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are not installed, so the real Bluesky PDS (@atproto/dev-env) cannot run")
    modules = Path(directory) / "node_modules"
    if not (modules / "@atproto" / "dev-env").is_dir():
        Path(directory).mkdir(parents=True, exist_ok=True)
        result = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "@atproto/dev-env@0.3.215"],
                                cwd=directory, capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            pytest.skip(f"npm install @atproto/dev-env failed: {result.stderr[-500:]}")
    return modules


class Pds:
    def __init__(self, url: str):
        self.url = url

    def xrpc(self, method: str, nsid: str, body: dict | None = None, token: str | None = None, **query) -> dict:
        from urllib.parse import urlencode
        request = urllib.request.Request(
            f"{self.url}/xrpc/{nsid}" + ("?" + urlencode(query) if query else ""), method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={**({"Content-Type": "application/json"} if body is not None else {}),
                     **({"Authorization": f"Bearer {token}"} if token else {})})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"{}")

    def create_account(self, handle: str, password: str) -> str:
        return self.xrpc("POST", "com.atproto.server.createAccount",
                         {"email": f"{handle}@example.com", "handle": handle, "password": password})["did"]

    def record(self, uri: str) -> dict:
        did, _, rkey = uri[len("at://"):].partition("/app.bsky.feed.post/")
        return self.xrpc("GET", "com.atproto.repo.getRecord", repo=did, collection="app.bsky.feed.post", rkey=rkey)

    def posts(self, did: str) -> list:
        return self.xrpc("GET", "com.atproto.repo.listRecords", repo=did, collection="app.bsky.feed.post")["records"]


@pytest.fixture(scope="module")
def real_pds(tmp_path_factory):
    modules = dev_env_modules()
    work = tmp_path_factory.mktemp("bsky-pds")
    (work / "start-pds.js").write_text(START_SCRIPT)
    (work / "tmp").mkdir()
    port = free_port()
    log = open(work / "pds.log", "w+")
    process = subprocess.Popen(["node", str(work / "start-pds.js")], cwd=work, stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, "NODE_PATH": str(modules), "TMPDIR": str(work / "tmp"),
                                    "PLC_PORT": str(free_port()), "PDS_PORT": str(port)})
    try:
        deadline = time.monotonic() + 60
        while '"ready":true' not in (work / "pds.log").read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the PDS did not start: " + (work / "pds.log").read_text()[-2000:])
            time.sleep(0.1)
        yield Pds(f"http://127.0.0.1:{port}")
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def test_a_thread_with_facets_and_an_image_lands_on_a_real_pds(start_server_with_fakes, real_pds, backend):
    # (one PDS serves the module: each backend's run signs up accounts of its own)
    alice_handle, bob_handle = f"alice-{backend}.test", f"bob-{backend}.test"
    alice = real_pds.create_account(alice_handle, "alice-app-password")
    bob = real_pds.create_account(bob_handle, "bob-app-password")
    server = start_server_with_fakes(env={"RUSTIZ_RETRY_BASE": "0.2"})
    status, channel = connect(server, "bluesky", {
        "service": real_pds.url, "identifier": alice_handle, "password": "alice-app-password"})
    assert status == 201, channel
    assert (channel["name"], channel["profile"]) == (alice_handle, alice_handle)  # no AppView: no profile
    picture = uploaded(server, png_file(4, 3))
    text = f"Grüße to @{bob_handle} and @nobody.test #rustiz 🎉"
    post = published(server, channel["id"], (f"<p>{text}</p>", [{**picture, "alt": "a tiny picture"}]),
                     f"<p>the reply, with a link: {real_pds.url}/xrpc/_health</p>")
    first = real_pds.record(post["releaseId"])
    assert first["value"]["text"] == text
    facets = {facet["features"][0]["$type"]: text.encode()[facet["index"]["byteStart"]:facet["index"]["byteEnd"]].decode()
              for facet in first["value"]["facets"]}
    assert facets == {"app.bsky.richtext.facet#mention": f"@{bob_handle}", "app.bsky.richtext.facet#tag": "#rustiz"}
    assert first["value"]["facets"][0]["features"][0]["did"] == bob
    [image] = first["value"]["embed"]["images"]
    assert (image["alt"], image["aspectRatio"]) == ("a tiny picture", {"width": 4, "height": 3})
    with urllib.request.urlopen(f"{real_pds.url}/xrpc/com.atproto.sync.getBlob?did={alice}"
                                f"&cid={image['image']['ref']['$link']}") as blob:
        assert blob.read() == png_file(4, 3)
    reply = real_pds.record(post["thread"][0]["releaseId"])
    root = {"uri": first["uri"], "cid": first["cid"]}
    assert reply["value"]["reply"] == {"root": root, "parent": root}
    assert reply["value"]["embed"]["external"]["uri"] == f"{real_pds.url}/xrpc/_health"
    assert post["releaseURL"] == f"https://bsky.app/profile/{alice}/post/{first['uri'].rpartition('/')[2]}"
    clip = uploaded(server, mp4_file(4096), "mp4")
    video_post = real_pds.record(published(server, channel["id"], ("<p>a video</p>", [clip]))["releaseId"])
    assert video_post["value"]["embed"]["$type"] == "app.bsky.embed.video"
    assert video_post["value"]["embed"]["video"]["mimeType"] == "video/mp4"


def test_sending_a_part_again_finds_the_first_record_on_a_real_pds(real_pds):
    """The resend after an unknown outcome: the PDS refuses a second create at the part's record key
    (500), and the publisher finds its record there instead of making a second post."""
    did = real_pds.create_account("carol.test", "carol-app-password")

    async def publish_twice() -> tuple:
        http = client_for_fakes()  # the real PDS listens on 127.0.0.1
        channel = Channel("c1", "carol", {"service": real_pds.url, "identifier": "carol.test",
                                                 "password": "carol-app-password"}, None, http)
        part = OutgoingPost(rustiz.new_cuid(), "<p>only once</p>", (), {}, 0, rustiz.new_uuid(),
                                   rustiz.utc_now_iso())
        try:
            provider = provider_for("bluesky")
            return await provider.publish(channel, part, None), await provider.publish(channel, part, None)
        finally:
            http.close()

    first, second = asyncio.run(publish_twice())
    assert first == second
    assert [record["uri"] for record in real_pds.posts(did)] == [first.id]
