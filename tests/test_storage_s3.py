"""Uploads on S3-compatible storage (RUSTIZ_STORAGE=s3://bucket/prefix) against a real S3 server (moto's
server mode), with boto3 as an independent client to see what landed in the bucket."""
from __future__ import annotations

import hashlib
import itertools
import os
import urllib.request
from urllib.parse import urlsplit

import pytest

from conftest import client_for_fakes, run_cli
from fakes.telegram import FakeTelegram
from s3_server import ACCESS_KEY, S3Server
from support import (FAST_RETRIES, Database, FakeOrigin, connected, iso_box, jpeg_file, mp4_file, png_file, scheduled,
                     settled, upload, upload_from_url, uploaded)

BUCKETS = (f"rustiz-media-{number}" for number in itertools.count())


@pytest.fixture(scope="module")
def s3():
    server = S3Server()
    yield server
    server.stop()


@pytest.fixture
def bucket(s3) -> str:
    return s3.create_bucket(next(BUCKETS))


def key_of(path: str, prefix: str = "media") -> str:
    """The object key of a Media row's path ({FRONTEND_URL}/uploads/YYYY/MM/DD/<name>)."""
    return prefix + "/" + urlsplit(path).path.removeprefix("/uploads/")


def random_mp4(size: int) -> bytes:
    """An MP4 of `size` bytes whose content is random, so that parts out of order would show."""
    head = mp4_file()
    return head + iso_box(b"mdat", os.urandom(size - len(head) - 8))


def fetch(url: str) -> tuple:
    """(status, headers, body) of a GET that follows redirects (as a platform fetching media does)."""
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, {name.lower(): value for name, value in response.headers.items()}, response.read()


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *arguments):
        return None


def first_answer(url: str, headers: dict | None = None) -> tuple:
    """(status, headers) of a GET, redirects not followed."""
    opener = urllib.request.build_opener(NoRedirects)
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=30) as response:
            return response.status, {name.lower(): value for name, value in response.headers.items()}
    except urllib.error.HTTPError as error:
        return error.code, {name.lower(): value for name, value in error.headers.items()}


def test_an_upload_lands_in_the_bucket_and_its_path_is_unchanged(start_server, s3, bucket):
    server = start_server(env=s3.rustiz_env(bucket))
    picture = png_file(8, 8, pixel=b"\x10\x20\x30")
    status, media = upload(server, picture)
    assert status == 201, media
    assert media["path"].startswith(f"{server.url}/uploads/") and media["path"].endswith(".png")
    assert s3.keys(bucket) == [key_of(media["path"])]
    assert s3.read(bucket, key_of(media["path"])) == picture
    # Nothing stays on this machine: not the file, not its staging copy.
    uploads = server.data_dir / "uploads"
    assert [path for path in uploads.rglob("*") if path.is_file()] == []


def test_get_uploads_redirects_to_a_presigned_url_that_downloads_the_same_bytes(start_server, s3, bucket):
    server = start_server(env=s3.rustiz_env(bucket))
    picture = jpeg_file()
    media = uploaded(server, picture, "a.jpg")
    status, headers = first_answer(media["path"])
    assert status == 302, headers
    location = headers["location"]
    assert location.startswith(f"{s3.endpoint}/{bucket}/{key_of(media['path'])}?X-Amz-Algorithm=AWS4-HMAC-SHA256")
    assert f"X-Amz-Credential={ACCESS_KEY}%2F" in location and "X-Amz-Expires=3600" in location
    assert fetch(media["path"])[2] == picture  # followed, as a platform fetching the media does


def test_the_web_app_may_show_pictures_from_the_bucket_only_when_uploads_redirect_there(start_server, s3, bucket):
    def image_sources(server) -> list:
        policy = first_answer(server.url + "/")[1]["content-security-policy"]
        return next(part.split()[1:] for part in policy.split(";") if part.split()[:1] == ["img-src"])
    redirecting = start_server(env=s3.rustiz_env(bucket))
    assert image_sources(redirecting) == ["'self'", redirecting.url, s3.endpoint, "data:", "blob:"]
    streaming = start_server(env={**s3.rustiz_env(bucket), "RUSTIZ_UPLOADS_SERVE": "stream"})
    assert image_sources(streaming) == ["'self'", streaming.url, "data:", "blob:"]


def test_stream_mode_serves_the_bytes_with_ranges_and_revalidation(start_server, s3, bucket):
    server = start_server(env={**s3.rustiz_env(bucket), "RUSTIZ_UPLOADS_SERVE": "stream"})
    video = random_mp4(300_000)
    media = uploaded(server, video, "v.mp4")
    status, headers, body = fetch(media["path"])
    assert (status, body, headers["content-type"]) == (200, video, "video/mp4")
    assert headers["content-length"] == str(len(video)) and headers["etag"]
    status, headers, body = server.request("GET", urlsplit(media["path"]).path, {"Range": "bytes=100-199"})
    assert (status, body, headers["content-range"]) == (206, video[100:200], f"bytes 100-199/{len(video)}")
    status, _, body = server.request("GET", urlsplit(media["path"]).path, {"If-None-Match": headers["etag"]})
    assert (status, body) == (304, b"")
    status, headers, body = server.request("HEAD", urlsplit(media["path"]).path)
    assert (status, body, headers["content-length"]) == (200, b"", str(len(video)))
    status, _, _ = server.request("GET", urlsplit(media["path"]).path.replace(".mp4", ".png"))
    assert status == 404
    # The temporary files the streams went through are removed.
    incoming = server.data_dir / "uploads" / ".incoming"
    assert settled_empty(incoming), list(incoming.iterdir())


def settled_empty(folder, timeout: float = 15.0) -> bool:
    import time
    deadline = time.monotonic() + timeout
    while any(folder.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not any(folder.iterdir())


def test_a_large_video_goes_up_as_a_multipart_upload(start_server, s3, bucket):
    server = start_server(env={**s3.rustiz_env(bucket), "RUSTIZ_S3_PART_BYTES": str(5 * 1024 * 1024)})
    video = random_mp4(11 * 1024 * 1024 + 12345)
    media = uploaded(server, video, "v.mp4")
    head = s3.client().head_object(Bucket=bucket, Key=key_of(media["path"]))
    assert head["ETag"].strip('"').endswith("-3"), head["ETag"]  # three parts: 5 + 5 + 1 MiB and a bit
    assert hashlib.sha256(s3.read(bucket, key_of(media["path"]))).digest() == hashlib.sha256(video).digest()
    uploads = s3.client().list_multipart_uploads(Bucket=bucket)
    assert uploads.get("Uploads", []) == []


def test_upload_from_url_lands_in_the_bucket(start_server, s3, bucket):
    origin = FakeOrigin()
    try:
        picture = png_file(4, 4)
        origin.serve("/pictures/a.png", picture, "image/png")
        server = start_server(env=s3.rustiz_env(bucket, prefix="tenant/a"))
        status, media = upload_from_url(server, origin.url + "/pictures/a.png")
        assert status == 201, media
        assert s3.read(bucket, key_of(media["path"], "tenant/a")) == picture
    finally:
        origin.close()


def test_a_scheduled_post_publishes_the_uploaded_bytes_read_from_the_bucket(start_server, s3, bucket):
    telegram = FakeTelegram()
    try:
        server = start_server(env={**s3.rustiz_env(bucket), **FAST_RETRIES, **telegram.env})
        channel = connected(server, "telegram", telegram.credentials())
        picture, video = png_file(3, 3, pixel=b"\x01\x02\x03"), random_mp4(70_000)
        media = [uploaded(server, picture), uploaded(server, video, "v.mp4")]
        post = settled(server, scheduled(server, channel["id"], ("<p>From the bucket</p>", media)),
                       stop_at_error=True)
        assert post["state"] == "PUBLISHED", post
        assert [message["media"] for message in telegram.published] == [[("photo", picture)], [("video", video)]]
        incoming = server.data_dir / "uploads" / ".incoming"
        assert settled_empty(incoming), list(incoming.iterdir())  # the staged copies are removed after the publish
    finally:
        telegram.close()


def test_an_unreachable_bucket_answers_503_naming_it_and_stores_nothing(start_server, s3, bucket):
    stopped = S3Server()
    stopped.stop()
    server = start_server(env={**s3.rustiz_env(bucket), "AWS_ENDPOINT_URL_S3": stopped.endpoint})
    status, body = upload(server, png_file())
    assert status == 503, body
    assert f"s3://{bucket}/media at {stopped.endpoint}" in body["message"] and "cannot reach" in body["message"], body
    assert Database(server).row("SELECT COUNT(*) FROM media") == (0,)


def test_a_bucket_that_refuses_answers_503_with_s3s_code_and_message(start_server, s3):
    server = start_server(env=s3.rustiz_env("no-such-bucket-here"))
    status, body = upload(server, png_file())
    assert status == 503, body
    assert "s3://no-such-bucket-here/media" in body["message"] and "NoSuchBucket" in body["message"], body
    assert "<Error>" not in body["message"]


@pytest.mark.parametrize("env, words", [
    ({"RUSTIZ_STORAGE": "s3://Bad_Bucket!/x"}, "RUSTIZ_STORAGE='s3://Bad_Bucket!/x': 'Bad_Bucket!' is not a bucket name"),
    ({"RUSTIZ_STORAGE": "s3://good-bucket/a//b"}, "the prefix after the bucket must be folder names"),
    ({"RUSTIZ_STORAGE": "gs://good-bucket"}, "use s3://bucket/prefix for an S3-compatible bucket"),
    ({"AWS_ACCESS_KEY_ID": ""}, "needs the bucket's keys in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; "
                                "AWS_ACCESS_KEY_ID is not set"),
    ({"AWS_ENDPOINT_URL_S3": "ftp://minio:9000"}, "AWS_ENDPOINT_URL_S3='ftp://minio:9000' must be a URL address"),
    ({"AWS_ENDPOINT_URL_S3": "http://minio:9000/bucket"}, "give the server's address only"),
    ({"AWS_REGION": "us east"}, "AWS_REGION='us east' is not a region name"),
    ({"RUSTIZ_S3_PART_BYTES": "1000"}, "RUSTIZ_S3_PART_BYTES='1000': use a number of bytes from 5242880"),
    ({"RUSTIZ_UPLOADS_SERVE": "proxy"}, "RUSTIZ_UPLOADS_SERVE='proxy': use redirect"),
])
def test_a_wrong_storage_setting_stops_serve_with_one_line_naming_it(pyz, tmp_path, env, words):
    assert run_cli(pyz, "init", "--dir", str(tmp_path)).returncode == 0
    settings = {"RUSTIZ_STORAGE": "s3://good-bucket/media", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
                "AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_S3": ""}
    result = run_cli(pyz, "serve", env={"RUSTIZ_CONFIG": str(tmp_path / "config.env"), "PORT": "0",
                                        **settings, **env})
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr


def test_copy_uploads_to_bucket_copies_every_file_and_verifies_each(s3, bucket, tmp_path):
    from rustiz_features.object_storage import (StorageError, bucket_is_empty, copy_uploads_to_bucket,
                                                storage_from_settings)
    uploads = tmp_path / "uploads"
    files = {"2024/05/01/a.png": png_file(), "2024/05/02/b.mp4": random_mp4(6 * 1024 * 1024)}
    for relative, data in files.items():
        (uploads / relative).parent.mkdir(parents=True, exist_ok=True)
        (uploads / relative).write_bytes(data)
    (uploads / ".incoming").mkdir()
    (uploads / ".incoming" / "half.part").write_bytes(b"unfinished")
    storage = storage_from_settings(s3.rustiz_env(bucket, prefix="moved"))
    http = client_for_fakes()
    try:
        assert bucket_is_empty(storage, http)
        copied = copy_uploads_to_bucket(str(uploads), storage, http)
        assert copied == sorted((f"moved/{relative}", hashlib.sha256(data).hexdigest(), len(data))
                                for relative, data in files.items())
        assert sorted(s3.keys(bucket)) == [key for key, _, _ in copied]
        assert not bucket_is_empty(storage, http) and bucket_is_empty(storage, http, "other/")
        # A file that differs from its object is caught by the read-back.
        from rustiz_features import object_storage
        original = object_storage._file_sha256
        object_storage._file_sha256 = lambda path: "0" * 64
        try:
            with pytest.raises(StorageError, match="differs from the file it was copied from"):
                copy_uploads_to_bucket(str(uploads), storage, http)
        finally:
            object_storage._file_sha256 = original
    finally:
        http.close()


def test_a_multipart_upload_that_fails_midway_is_aborted_and_leaves_nothing(s3, bucket, tmp_path):
    from rustiz_features.object_storage import Bucket, StorageError, storage_from_settings
    video = tmp_path / "v.mp4"
    video.write_bytes(random_mp4(11 * 1024 * 1024))
    http = client_for_fakes()
    try:
        client = Bucket(storage_from_settings(s3.rustiz_env(bucket)), http)
        sent = client.call

        def second_part_lost(method, key, query=(), *arguments, **options):
            if ("partNumber", "2") in query:
                raise StorageError("the connection broke")
            return sent(method, key, query, *arguments, **options)
        client.call = second_part_lost
        with pytest.raises(StorageError, match="the connection broke"):
            client.put_file("media/v.mp4", str(video), video.stat().st_size, "video/mp4")
    finally:
        http.close()
    assert s3.client().list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    assert s3.keys(bucket) == []
