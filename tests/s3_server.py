"""A real S3-compatible server for the tests: moto's server mode (the venv's bin/moto_server) on a free
port of 127.0.0.1, with a bucket, and boto3 as an independent client to look at what landed in it."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ACCESS_KEY, SECRET_KEY, REGION = "rustiz-test-key", "rustiz-test-secret", "us-east-1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class S3Server:
    """`moto_server` running until stop(); `endpoint` is its URL. Small multipart parts are allowed (moto's
    S3_UPLOAD_PART_MIN_SIZE) only if asked: by default it refuses parts under 5 MiB as S3 does."""

    def __init__(self, part_min_size: int | None = None):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        moto = Path(sys.executable).parent / "moto_server"
        env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
        if part_min_size is not None:
            env["S3_UPLOAD_PART_MIN_SIZE"] = str(part_min_size)
        self.process = subprocess.Popen([str(moto), "-H", "127.0.0.1", "-p", str(self.port)], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError(f"moto_server did not start on port {self.port}")
                time.sleep(0.1)

    def client(self):
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY)

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def rustiz_env(self, bucket: str, prefix: str = "media") -> dict:
        """What a rustiz server needs to keep its uploads in `bucket` under `prefix`."""
        return {"RUSTIZ_STORAGE": f"s3://{bucket}/{prefix}", "AWS_ENDPOINT_URL_S3": self.endpoint,
                "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION,
                "RUSTIZ_FETCH_ALLOW": "127.0.0.1"}

    def read(self, bucket: str, key: str) -> bytes:
        return self.client().get_object(Bucket=bucket, Key=key)["Body"].read()

    def keys(self, bucket: str) -> list:
        return [item["Key"] for item in self.client().list_objects_v2(Bucket=bucket).get("Contents", [])]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
