"""Media: POST /upload (multipart, streamed to disk), POST /upload-from-url, GET /uploads/... (Range, ETag).

Everything over real sockets against the built .pyz, on each storage backend. One module-wide server
(per backend) takes the ordinary cases; tests that need small limits, an allow-list or an empty database
start their own.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import socket
import time
from pathlib import Path

import pytest

from conftest import RustizServer, read_config
from support import (Database, FakeOrigin, api, avif_file, bmp_file, connect_database, gif_file, iso_box, jpeg_file,
                     mp4_file, multipart, png_file, tiff_file, upload, upload_from_url, webp_file)

UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z")
IMAGE_LIMIT = 10 * 1024 * 1024


ACCEPTED = [  # (make, extension as stored, Content-Type served, Media type)
    (png_file, "png", "image/png", "image"), (jpeg_file, "jpg", "image/jpeg", "image"),
    (gif_file, "gif", "image/gif", "image"), (webp_file, "webp", "image/webp", "image"),
    (avif_file, "avif", "image/avif", "image"), (bmp_file, "bmp", "image/bmp", "image"),
    (tiff_file, "tif", "image/tiff", "image"), (mp4_file, "mp4", "video/mp4", "video"),
]


# --- what only these tests look at -------------------------------------------------------------

def uploads_dir(server: RustizServer) -> Path:
    return Path(read_config(server.config_path)["RUSTIZ_UPLOADS"])


def leftovers(server: RustizServer) -> list:
    incoming = uploads_dir(server) / ".incoming"
    return sorted(incoming.iterdir()) if incoming.exists() else []


def media_rows(server: RustizServer) -> list:
    with connect_database(server.database) as db:
        return db.execute("SELECT id, organization_id, name, path, file_size, type, deleted_at FROM media "
                          "ORDER BY created_at").fetchall()


def organization_id(server: RustizServer) -> str:
    with connect_database(server.database) as db:
        return db.execute("SELECT id FROM organization WHERE api_key_hash = ?",
                          (hashlib.sha256(server.key.encode()).hexdigest(),)).fetchone()[0]


def served_path(server: RustizServer, media: dict) -> str:
    assert media["path"].startswith(server.url + "/uploads/"), media
    return media["path"][len(server.url):]


@pytest.fixture(scope="module")
def shared(start_module_server) -> RustizServer:
    return start_module_server()


# --- POST /upload --------------------------------------------------------------------------------

@pytest.mark.parametrize("make, extension, content_type, kind", ACCEPTED, ids=[row[1] for row in ACCEPTED])
def test_each_accepted_type_is_stored_by_date_and_served_back(shared, make, extension, content_type, kind):
    data = make()
    status, media = upload(shared, data, filename=extension)  # the official SDK sends just the extension
    assert status == 201, media
    assert set(media) == {"id", "name", "originalName", "path", "thumbnail", "alt"}
    assert UUID4.match(media["id"])
    assert re.fullmatch(r"[0-9a-f]{32}\." + extension, media["name"])
    assert (media["originalName"], media["thumbnail"], media["alt"]) == (None, None, None)
    day = time.strftime("%Y/%m/%d", time.gmtime())
    assert media["path"] == f"{shared.url}/uploads/{day}/{media['name']}"
    assert (uploads_dir(shared) / day / media["name"]).read_bytes() == data
    row = [row for row in media_rows(shared) if row[0] == media["id"]][0]
    assert row[1:] == (organization_id(shared), media["name"], media["path"], len(data), kind, None)
    status, headers, body = shared.request("GET", served_path(shared, media))
    assert (status, body, headers["content-type"]) == (200, data, content_type)


def test_sdk_filename_png_and_a_misleading_filename_are_both_sniffed_from_the_bytes(shared):
    for filename in ("png", "holiday.jpg", None):
        status, media = upload(shared, png_file(), filename=filename)
        assert status == 201, media
        assert media["name"].endswith(".png")


@pytest.mark.parametrize("filename, original_name", [
    ("holiday photo.jpg", "holiday photo.jpg"), ("été à Nice.png", "été à Nice.png"),
    ("/home/me/cat.gif", "cat.gif"), ("x" * 300 + ".png", "x" * 255), ("png", None), ("JPEG", None), (None, None),
], ids=["plain", "accented", "unix-path", "too-long", "sdk-extension", "bare-type", "no-filename"])
def test_original_name_is_the_file_name_the_client_gave(shared, filename, original_name):
    status, media = upload(shared, png_file(), filename=filename)
    assert status == 201, media
    assert media["originalName"] == original_name
    with connect_database(shared.database) as db:
        stored = db.execute("SELECT original_name FROM media WHERE id = ?", (media["id"],)).fetchone()[0]
    assert stored == original_name


def test_upload_under_the_self_hosted_api_prefix(shared):
    status, media = upload(shared, gif_file(), prefix="/api/public/v1")
    assert status == 201, media


@pytest.mark.parametrize("data, detected", [
    (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n", "a PDF document"),
    (b"<svg xmlns='http://www.w3.org/2000/svg'/>", "an SVG image"),
    (iso_box(b"ftyp", b"qt  \x00\x00\x00\x00qt  ") + b"\x00" * 16, "a QuickTime (.mov) video"),
    (b"just some text that is not an image at all", "of a type rustiz does not recognise"),
    (b"", "empty"),
])
def test_unsupported_type_is_400_naming_what_was_detected_and_leaves_nothing(shared, data, detected):
    rows = len(media_rows(shared))
    status, error = upload(shared, data, filename="png")
    assert status == 400
    assert error["error"] == "Bad Request"
    assert error["message"].startswith("Unsupported file type")
    assert detected in error["message"] and "PNG" in error["message"]
    assert len(media_rows(shared)) == rows
    assert leftovers(shared) == []


def test_missing_file_field_is_400_naming_the_field(shared):
    status, error = upload(shared, png_file(), field="image")
    assert status == 400
    assert '"file"' in error["message"] and error["msg"] == error["message"]
    assert leftovers(shared) == []


def test_a_body_that_is_not_multipart_is_400_naming_the_expected_type(shared):
    status, error = api(shared, "POST", "/public/v1/upload", png_file(), headers={"Content-Type": "image/png"})
    assert status == 400
    assert "multipart/form-data" in error["message"]


def test_a_multipart_body_without_its_closing_boundary_is_400_and_leaves_nothing(shared):
    content_type, body = multipart([("file", "png", png_file())])
    status, error = api(shared, "POST", "/public/v1/upload", body[:-40], headers={"Content-Type": content_type})
    assert status == 400 and "closing boundary" in error["message"]
    assert leftovers(shared) == []


def test_other_fields_are_ignored_and_the_first_file_field_is_stored(shared):
    content_type, body = multipart([("note", None, b"hello"), ("file", "a.gif", gif_file()),
                                    ("file", "b.png", png_file())])
    status, media = api(shared, "POST", "/public/v1/upload", body, headers={"Content-Type": content_type})
    assert status == 201 and media["name"].endswith(".gif")


def test_an_empty_upload_body_is_400_saying_what_is_missing(shared):
    for content_type in ("multipart/form-data; boundary=b", "application/octet-stream"):
        status, answer = api(shared, "POST", "/public/v1/upload", b"", headers={"Content-Type": content_type})
        assert status == 400 and "multipart" in answer["message"], answer
    assert leftovers(shared) == []


def test_upload_without_a_key_is_401_and_writes_nothing(shared):
    rows = len(media_rows(shared))
    status, error = upload(shared, png_file(), key="")
    assert (status, error) == (401, {"msg": "No API Key found"})
    status, error = upload(shared, png_file(), key="0" * 64)
    assert (status, error) == (401, {"msg": "Invalid API key"})
    assert len(media_rows(shared)) == rows and leftovers(shared) == []


def test_chunked_upload_is_accepted(shared):
    content_type, body = multipart([("file", "png", png_file(padding=5000))])
    connection = http.client.HTTPConnection("127.0.0.1", shared.port, timeout=10)
    pieces = (body[i:i + 777] for i in range(0, len(body), 777))
    connection.request("POST", "/public/v1/upload", body=pieces, encode_chunked=True,
                       headers={"Content-Type": content_type, "Authorization": shared.key,
                                "Transfer-Encoding": "chunked"})
    response = connection.getresponse()
    assert response.status == 201, response.read()
    connection.close()


def test_uploads_and_ordinary_requests_share_a_keep_alive_connection(shared):
    connection = http.client.HTTPConnection("127.0.0.1", shared.port, timeout=10)
    content_type, body = multipart([("file", "png", png_file())])
    for _ in range(2):
        connection.request("POST", "/public/v1/upload", body, {"Content-Type": content_type,
                                                                "Authorization": shared.key})
        response = connection.getresponse()
        assert response.status == 201, response.read()
        response.read()
        connection.request("GET", "/public/v1/is-connected", headers={"Authorization": shared.key})
        response = connection.getresponse()
        assert (response.status, json.loads(response.read())) == (200, {"connected": True})
    connection.close()


def test_media_rows_belong_to_the_organization_of_the_key(shared):
    other_id, other_key = Database(shared).organization()
    status, mine = upload(shared, png_file())
    status_other, theirs = upload(shared, png_file(), key=other_key)
    assert (status, status_other) == (201, 201)
    owners = {row[0]: row[1] for row in media_rows(shared)}
    assert owners[mine["id"]] == organization_id(shared)
    assert owners[theirs["id"]] == other_id


def test_client_gone_mid_upload_leaves_no_temporary_file_and_no_row(shared):
    rows = len(media_rows(shared))
    content_type, _ = multipart([])
    boundary = content_type.partition("boundary=")[2]
    head = (f"POST /public/v1/upload HTTP/1.1\r\nHost: x\r\nAuthorization: {shared.key}\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {8 * 1024 * 1024}\r\n\r\n").encode()
    part = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="png"\r\n\r\n').encode()
    with socket.create_connection(("127.0.0.1", shared.port)) as client:
        client.sendall(head + part + png_file(padding=300_000))
        deadline = time.monotonic() + 10
        while not any(path.stat().st_size > 100_000 for path in leftovers(shared)):  # it streams to disk
            assert time.monotonic() < deadline, "the upload never reached the disk"
            time.sleep(0.05)
    deadline = time.monotonic() + 10
    while leftovers(shared):
        assert time.monotonic() < deadline, f"temporary files left behind: {leftovers(shared)}"
        time.sleep(0.05)
    assert len(media_rows(shared)) == rows


# --- limits (a server of its own with small limits) -----------------------------------------------

@pytest.fixture(scope="module")
def small(start_module_server) -> RustizServer:
    """Video up to 100 000 bytes; ordinary bodies up to 2 KiB (uploads have their own limit), and no
    more than 2 KiB of bodies in memory at once (uploads go to disk and do not count)."""
    return start_module_server(env={"RUSTIZ_MAX_VIDEO_BYTES": "100000", "RUSTIZ_MAX_BODY": "2048",
                                    "RUSTIZ_BODY_MEMORY_BUDGET": "2048"})


def test_upload_route_has_its_own_body_limit_above_rustiz_max_body(small):
    status, media = upload(small, png_file(padding=50_000))
    assert status == 201, media


def test_uploads_stream_to_disk_outside_the_body_memory_budget(small):
    statuses = [upload(small, mp4_file(100_000), filename="mp4")[0] for _ in range(3)]  # 50 times the budget each
    assert statuses == [201, 201, 201]


def test_video_over_the_configured_limit_is_413_naming_the_setting(small):
    status, error = upload(small, mp4_file(100_001))
    assert status == 413
    assert "100000 bytes" in error["message"] and "RUSTIZ_MAX_VIDEO_BYTES" in error["message"]
    assert leftovers(small) == [] and all(row[4] != 100_001 for row in media_rows(small))


def test_video_at_the_configured_limit_is_accepted(small):
    status, media = upload(small, mp4_file(100_000))
    assert status == 201, media


def test_image_over_10_mib_is_413_while_streaming(shared):
    status, error = upload(shared, png_file(padding=IMAGE_LIMIT))
    assert status == 413
    assert error["message"] == f"File size exceeds the maximum allowed size of {IMAGE_LIMIT} bytes for an image"
    assert leftovers(shared) == []


def test_content_length_over_the_upload_limit_is_413_before_the_body(small):
    head = (f"POST /public/v1/upload HTTP/1.1\r\nHost: x\r\nAuthorization: {small.key}\r\n"
            f"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: {20 * 1024 * 1024}\r\n"
            "Expect: 100-continue\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", small.port), timeout=5) as client:
        client.sendall(head)
        answer = client.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b"over the limit of" in answer


# --- GET /uploads/... ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stored(shared) -> tuple:
    """A 3 MB video uploaded once: (server path, bytes)."""
    data = mp4_file(3_000_000)
    status, media = upload(shared, data, filename="mp4")
    assert status == 201
    return served_path(shared, media), data


def test_served_file_has_etag_last_modified_and_cache_headers(shared, stored):
    path, data = stored
    status, headers, body = shared.request("GET", path)
    assert status == 200 and body == data
    assert headers["content-length"] == str(len(data)) and headers["accept-ranges"] == "bytes"
    assert headers["etag"].startswith('"') and headers["last-modified"].endswith(" GMT")
    assert headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("extra", [{}, {"Range": "bytes=0-9"}], ids=["whole", "range"])
def test_served_file_may_run_nothing_if_a_browser_renders_it(shared, stored, extra):
    path, _ = stored
    status, headers, _ = shared.request("GET", path, extra)
    assert status in (200, 206)
    assert headers["content-security-policy"] == "default-src 'none'; sandbox"


def test_served_under_api_uploads_too(shared, stored):
    path, data = stored
    status, _, body = shared.request("GET", "/api" + path)
    assert (status, body == data) == (200, True)


def test_head_gives_the_length_without_the_body(shared, stored):
    path, data = stored
    status, headers, body = shared.request("HEAD", path)
    assert (status, body, headers["content-length"]) == (200, b"", str(len(data)))


@pytest.mark.parametrize("header, start, end", [
    ("bytes=0-3", 0, 3), ("bytes=100-199", 100, 199), ("bytes=2999990-", 2999990, 2999999),
    ("bytes=-10", 2999990, 2999999), ("bytes=2999990-9999999", 2999990, 2999999),
    # Positions of thousands of digits (int() refuses more than 4,300) and leading zeros: a 500 before.
    ("bytes=0-" + "9" * 5000, 0, 2999999), ("bytes=-" + "9" * 5000, 0, 2999999),
    ("bytes=" + "0" * 30 + "1-" + "0" * 30 + "2", 1, 2),
])
def test_range_is_206_with_content_range(shared, stored, header, start, end):
    path, data = stored
    status, headers, body = shared.request("GET", path, {"Range": header})
    assert status == 206
    assert headers["content-range"] == f"bytes {start}-{end}/{len(data)}"
    assert body == data[start:end + 1] and headers["content-length"] == str(end - start + 1)


@pytest.mark.parametrize("header", ["bytes=3000000-", "bytes=-0", "bytes=" + "9" * 5000 + "-"])
def test_unsatisfiable_range_is_416_with_the_size(shared, stored, header):
    path, data = stored
    status, headers, _ = shared.request("GET", path, {"Range": header})
    assert (status, headers["content-range"]) == (416, f"bytes */{len(data)}")


@pytest.mark.parametrize("header", ["bytes=0-1,5-6", "items=0-3", "bytes=9-2"])
def test_range_rustiz_does_not_serve_gives_the_whole_file(shared, stored, header):
    path, data = stored
    status, _, body = shared.request("GET", path, {"Range": header})
    assert (status, len(body)) == (200, len(data))


def test_if_none_match_is_304_and_a_stale_if_range_gives_the_whole_file(shared, stored):
    path, data = stored
    etag = shared.request("HEAD", path)[1]["etag"]
    status, headers, body = shared.request("GET", path, {"If-None-Match": etag})
    assert (status, body, headers["etag"]) == (304, b"", etag)
    status, _, body = shared.request("GET", path, {"Range": "bytes=0-3", "If-Range": '"stale"'})
    assert (status, len(body)) == (200, len(data))


@pytest.mark.parametrize("path", [
    "/uploads/2024/01/01/0123456789abcdef0123456789abcdef.png",  # well-formed, absent
    "/uploads/..%2F..%2F..%2Fconfig.env/x/y/z.png", "/uploads/2024/01/01/..%2F..%2F..%2F..%2Fconfig.env",
    "/uploads/2024/01/01/.incoming", "/uploads/../config.env", "/uploads/2024/01/01/abc.txt",
])
def test_absent_or_unsafe_upload_paths_are_404(shared, path):
    status, _, body = shared.request("GET", path)
    assert status == 404 and b"config" not in body.replace(path.encode(), b"")


def test_a_slow_reader_still_gets_the_whole_file(shared):
    data = mp4_file(16_000_000)  # more than the kernel's socket buffers: the server must pause and resume
    status, media = upload(shared, data, filename="mp4")
    assert status == 201
    path = served_path(shared, media)
    with socket.socket() as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        client.settimeout(10)
        client.connect(("127.0.0.1", shared.port))
        client.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        received = b""
        time.sleep(0.5)  # let the server fill the socket buffers and pause
        while not received.endswith(b"\r\n\r\nok"):
            piece = client.recv(65536)
            assert piece, "connection closed early"
            received += piece
    head, _, rest = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and rest[:len(data)] == data
    assert rest[len(data):].startswith(b"HTTP/1.1 200")


# --- POST /upload-from-url -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def origin():
    origin = FakeOrigin()
    for path, data, sized in [("/file/png", png_file(), True), ("/file/pdf", b"%PDF-1.4\n" + b"0" * 100, True),
                              ("/file/video", mp4_file(150_000), True),
                              ("/file/video-unannounced", mp4_file(150_000), False),
                              ("/file/small-video", mp4_file(50_000), False)]:
        origin.serve(path, data, sized=sized)
    yield origin
    origin.close()


@pytest.fixture(scope="module")
def fetcher(start_module_server) -> RustizServer:
    """A server allowed to fetch from 127.0.0.1, with video up to 100 000 bytes."""
    return start_module_server(env={"RUSTIZ_FETCH_ALLOW": "127.0.0.1", "RUSTIZ_MAX_VIDEO_BYTES": "100000"})


def test_upload_from_url_stores_the_file_and_serves_it_back(fetcher, origin):
    status, media = upload_from_url(fetcher, origin.url + "/file/png")
    assert status == 201, media
    assert set(media) == {"id", "name", "originalName", "path", "thumbnail", "alt"} and UUID4.match(media["id"])
    assert media["name"].endswith(".png")
    assert fetcher.request("GET", served_path(fetcher, media))[2] == png_file()
    assert [row[1] for row in media_rows(fetcher) if row[0] == media["id"]] == [organization_id(fetcher)]


def test_upload_from_url_without_content_length_is_accepted(fetcher, origin):
    status, media = upload_from_url(fetcher, origin.url + "/file/small-video")
    assert status == 201 and media["name"].endswith(".mp4")


def test_upload_from_url_refuses_loopback_without_the_allow_list(shared, origin):
    status, error = upload_from_url(shared, origin.url + "/file/png")
    assert status == 400
    assert error["message"] == ("upload-from-url: 127.0.0.1 is a loopback address; "
                                "rustiz does not reach private networks unless RUSTIZ_FETCH_ALLOW lists them")


@pytest.mark.parametrize("url, problem", [
    ("http://10.0.0.5/x.png", "10.0.0.5 is a private address"),
    ("http://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address"),
    ("http://0.0.0.0/x.png", "0.0.0.0 is an unspecified address"),
    ("http://[::1]/x.png", "::1 is a loopback address"),
    ("http://[::ffff:10.1.2.3]/x.png", "is a private address"),
    ("http://224.0.0.1/x.png", "224.0.0.1 is a multicast address"),
    ("http://localhost/x.png", "localhost resolves to"),
])
def test_upload_from_url_refuses_non_public_addresses(shared, url, problem):
    status, error = upload_from_url(shared, url)
    assert status == 400 and problem in error["message"] and "RUSTIZ_FETCH_ALLOW" in error["message"]


def test_redirects_are_followed_up_to_three(fetcher, origin):
    status, media = upload_from_url(fetcher, origin.url + "/redirect/3")
    assert status == 201, media
    status, error = upload_from_url(fetcher, origin.url + "/redirect/4")
    assert status == 400 and "more than 3 redirects" in error["message"]


def test_a_redirect_is_checked_again(fetcher, origin):
    from urllib.parse import quote
    status, error = upload_from_url(fetcher, origin.url + "/to/" + quote("http://10.9.8.7/x.png", safe=""))
    assert status == 400 and "10.9.8.7 is a private address" in error["message"]


def test_upload_from_url_size_limit_with_and_without_content_length(fetcher, origin):
    for name in ("video", "video-unannounced"):
        status, error = upload_from_url(fetcher, origin.url + f"/file/{name}")
        assert status == 413, (name, error)
        assert "100000 bytes" in error["message"]
    assert leftovers(fetcher) == []


def test_upload_from_url_unsupported_type_and_upstream_error(fetcher, origin):
    status, error = upload_from_url(fetcher, origin.url + "/file/pdf")
    assert status == 400 and "a PDF document" in error["message"]
    status, error = upload_from_url(fetcher, origin.url + "/nothing-here")
    assert status == 400 and "answered 404" in error["message"]
    assert leftovers(fetcher) == []


@pytest.mark.parametrize("url, problem", [
    ("ftp://example.com/x.png", "url must be a URL address starting with http:// or https://"),
    ("file:///etc/passwd", "url must be a URL address starting with http:// or https://"),
    ("http:///x.png", "url has no host name"), ("", "missing or empty"), (None, "missing or empty"),
    (42, "missing or empty"), ("http://no-such-host.invalid/x.png", "cannot resolve no-such-host.invalid"),
    ("http://[::1/x", "url has a malformed IPv6 address"), ("http://[zz]/x.png", "url has a malformed IPv6 address"),
    ("http://[::1]x/y.png", "url has a malformed IPv6 address"),
    ("http://example.com:99999/x.png", "url has a port that is not a number from 1 to 65535"),
    ("http://example.com:0/x.png", "url has a port that is not a number from 1 to 65535"),
    ("http://example.com:port/x.png", "url has a port that is not a number from 1 to 65535"),
    ("http://:80/x.png", "url has no host name"), ("http://a..b/x.png", "url has a host name that cannot exist"),
    ("http://exa mple.com/x.png", "url must not contain spaces or control characters"),
])
def test_upload_from_url_bad_urls_are_400_naming_the_problem(fetcher, url, problem):
    status, error = upload_from_url(fetcher, url)
    assert status == 400 and problem in error["message"], error


def test_upload_from_url_gives_up_after_its_time_limit_on_a_silent_server(fetcher):
    # A bare listening socket, not a fake: connections wait in its backlog and nothing ever answers,
    # which a fake (it answers every request, at worst late) cannot be.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    try:
        started = time.monotonic()
        status, error = upload_from_url(fetcher, f"http://127.0.0.1:{silent.getsockname()[1]}/x.png")
        assert status == 400 and "timed out" in error["message"]
        assert 25 < time.monotonic() - started < 40
    finally:
        silent.close()


def test_temporary_files_abandoned_by_a_crash_are_removed_at_start(start_server):
    server = start_server()
    server.stop()
    incoming = uploads_dir(server) / ".incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    abandoned, recent = incoming / ("a" * 32 + ".part"), incoming / ("b" * 32 + ".part")
    abandoned.write_bytes(b"half an upload")
    recent.write_bytes(b"an upload another worker may still be writing")
    two_days_ago = time.time() - 2 * 86400
    os.utime(abandoned, (two_days_ago, two_days_ago))
    server.start()
    try:
        deadline = time.monotonic() + 10
        while abandoned.exists():
            assert time.monotonic() < deadline, "the abandoned temporary file is still there"
            time.sleep(0.05)
        assert recent.exists()
    finally:
        server.stop()
