"""The media library: GET /media (pages, search, sizes in pixels, the posts that use each item), PUT /media/:id,
DELETE /media/:id and POST /media/delete (refused while a queued post uses the item), and its MCP tools; the
width and height read from a picture's header at upload (picture_size.py, also tested directly here).

The API tests run against the built .pyz on each storage backend; each test works in an organization of its own,
so that the module's one server serves them all."""
from __future__ import annotations

import io
import json
import struct
import time

import jsonschema
import pytest

from rustiz_features.picture_size import picture_size
from support import (API, Database, FakeOrigin, api, gif_file, iso, jpeg_file, mcp_tool_call as tool, mp4_file,
                     png_file, upload, upload_from_url, webp_file)

LIBRARY = f"{API}/media"


# --- pictures crafted byte by byte -------------------------------------------------------------------------------

def jpeg_with_frame(width: int, height: int, *, exif_bytes: int = 0, fill: int = 0) -> bytes:
    """A JPEG's head as cameras write it: APP0, an APP1 (Exif) of `exif_bytes`, fill bytes, then the SOF0 header."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    app1 = b"\xff\xe1" + struct.pack(">H", exif_bytes + 2) + b"E" * exif_bytes if exif_bytes else b""
    frame = b"\xff" * fill + b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + app1 + frame + b"\xff\xda\x00\x02" + b"\x00" * 16 + b"\xff\xd9"


def webp_lossy(width: int, height: int) -> bytes:
    frame = b"\x00\x00\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00" * 10
    payload = b"WEBP" + b"VP8 " + struct.pack("<I", len(frame)) + frame
    return b"RIFF" + struct.pack("<I", len(payload)) + payload


def webp_extended(width: int, height: int) -> bytes:
    chunk = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    payload = b"WEBP" + b"VP8X" + struct.pack("<I", len(chunk)) + chunk
    return b"RIFF" + struct.pack("<I", len(payload)) + payload


def size_of(data: bytes):
    return picture_size(io.BytesIO(data))


@pytest.mark.parametrize("data, expected", [
    (png_file(3, 2), (3, 2)), (gif_file(), (1, 1)), (webp_file(), (1, 1)), (webp_lossy(640, 480), (640, 480)),
    (webp_extended(4000, 3000), (4000, 3000)), (jpeg_with_frame(1920, 1080), (1920, 1080)),
    (jpeg_with_frame(800, 600, exif_bytes=60_000, fill=5), (800, 600)),
], ids=["png", "gif", "webp-lossless", "webp-lossy", "webp-extended", "jpeg", "jpeg-exif-and-fill"])
def test_the_size_is_read_from_the_header(data, expected):
    assert size_of(data) == expected


@pytest.mark.parametrize("data", [
    png_file(3, 2)[:20], b"\x89PNG\r\n\x1a\n" + b"\x00" * 8, png_file(0, 0), jpeg_file(),
    jpeg_with_frame(10, 10)[:27], b"\xff\xd8" + b"\xff" * 10_000, b"\xff\xd8\xff\xe0\x00\x01",
    b"\xff\xd8" + b"\xff\xe1\xff\xff" * 3, b"GIF89a\x01", b"RIFF\x00\x00\x00\x00WEBPVP8L\x00",
    webp_lossy(10, 10)[:27], mp4_file(), b"", b"\x00" * 100,
], ids=["png-truncated-ihdr", "png-no-ihdr", "png-zero-size", "jpeg-without-frame", "jpeg-truncated-frame",
        "jpeg-all-fill", "jpeg-short-length", "jpeg-segment-past-the-end", "gif-truncated", "webp-truncated",
        "webp-lossy-truncated", "mp4", "empty", "zeros"])
def test_a_malformed_or_unknown_header_has_no_size_and_raises_nothing(data):
    assert size_of(data) is None


def test_a_jpeg_is_walked_segment_by_segment_within_a_bound():
    many_segments = b"\xff\xd8" + (b"\xff\xe2\x00\x02" * 300) + jpeg_with_frame(5, 5)[2:]
    assert size_of(many_segments) is None  # past MAX_JPEG_SEGMENTS: given up, not read to the end


# --- the API -----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shared(start_module_server):
    return start_module_server(env={"RUSTIZ_FETCH_ALLOW": "127.0.0.1"})


@pytest.fixture
def org(shared):
    """A fresh organization of the shared server: {"key", "id", "db", "channel"} (a Bluesky channel of it)."""
    db = Database(shared)
    organization_id, key = db.organization()
    return {"key": key, "id": organization_id, "db": db,
            "channel": db.channel("Sky", "bluesky", organization_id=organization_id)}


def call(shared, org, method: str, path: str, body=None, **options) -> tuple:
    return api(shared, method, path, body, key=org["key"], **options)


def uploaded(shared, org, data: bytes, filename: str = "photo.png") -> dict:
    """An upload of the organization's, in a millisecond of its own (created_at orders the library)."""
    status, media = upload(shared, data, filename, key=org["key"])
    assert status == 201, media
    time.sleep(0.002)
    return media


def listing(shared, org, query: str = "") -> dict:
    status, answer = call(shared, org, "GET", f"{LIBRARY}{query}")
    assert status == 200, answer
    return answer


def library_row(org, number: int, **fields) -> str:
    """A media row written straight into the database, created `number` seconds into 2025."""
    media_id = f"media-{org['id']}-{number}"
    row = {"id": media_id, "organization_id": org["id"], "name": f"{number:032x}.png",
           "path": f"https://old.example/uploads/2025/01/01/{number:032x}.png",
           "created_at": f"2025-01-01T00:{number // 60:02d}:{number % 60:02d}.000Z",
           "updated_at": "2025-01-01T00:00:00.000Z", **fields}
    org["db"].execute(f"INSERT INTO media ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", *row.values())
    return media_id


def post_using(org, media: dict, state: str = "QUEUE", **options) -> str:
    """A post of the organization's channel whose image list holds `media` as the composer saves it."""
    image = json.dumps([{"id": media["id"], "path": media["path"]}])
    return org["db"].post(org["channel"], "2031-01-01T10:00:00.000Z", state=state, image=image,
                          organization_id=org["id"], **options)


def test_uploads_are_listed_newest_first_with_their_size_in_pixels(shared, org):
    png = uploaded(shared, org, png_file(3, 2), "first.png")
    video = uploaded(shared, org, mp4_file(), "clip.mp4")
    truncated = uploaded(shared, org, b"\x89PNG\r\n\x1a\n" + b"\x00" * 12, "broken.png")  # accepted, size unknown
    jpeg = uploaded(shared, org, jpeg_with_frame(1200, 628), "card.jpg")
    answer = listing(shared, org)
    assert answer["pages"] == 1
    by_id = {item["id"]: item for item in answer["media"]}
    assert [item["id"] for item in answer["media"]] == [jpeg["id"], truncated["id"], video["id"], png["id"]]
    assert set(by_id[png["id"]]) == {"id", "name", "originalName", "path", "type", "size", "width", "height",
                                     "alt", "createdAt", "usedBy"}
    assert by_id[png["id"]] | {"createdAt": None} == {
        "id": png["id"], "name": png["name"], "originalName": "first.png", "path": png["path"], "type": "image",
        "size": len(png_file(3, 2)), "width": 3, "height": 2, "alt": None, "createdAt": None, "usedBy": []}
    assert (by_id[jpeg["id"]]["width"], by_id[jpeg["id"]]["height"]) == (1200, 628)
    assert (by_id[video["id"]]["type"], by_id[video["id"]]["width"], by_id[video["id"]]["height"]) == \
        ("video", None, None)
    assert (by_id[truncated["id"]]["width"], by_id[truncated["id"]]["height"]) == (None, None)


def test_upload_from_url_records_the_size_too(shared, org):
    origin = FakeOrigin()
    try:
        origin.serve("/banner.webp", webp_lossy(1500, 500))
        status, media = upload_from_url(shared, origin.url + "/banner.webp", key=org["key"])
        assert status == 201, media
    finally:
        origin.close()
    item = listing(shared, org)["media"][0]
    assert (item["id"], item["width"], item["height"]) == (media["id"], 1500, 500)


def test_pages_hold_28_items_and_count_the_pages(shared, org):
    assert listing(shared, org) == {"media": [], "pages": 0}
    ids = [library_row(org, number) for number in range(30)]
    first, second = listing(shared, org, "?page=1"), listing(shared, org, "?page=2")
    assert (first["pages"], second["pages"]) == (2, 2)
    assert [item["id"] for item in first["media"] + second["media"]] == ids[::-1]
    assert len(first["media"]) == 28
    assert listing(shared, org, "?page=3") == {"media": [], "pages": 2}
    assert listing(shared, org, "?page=100000")["media"] == []
    assert listing(shared, org, "?page=%201%20")["media"][0]["id"] == ids[-1]


@pytest.mark.parametrize("page", ["0", "-1", "abc", "1.5", "1e3", "100001", "9" * 5000, "", "0x10"])
def test_a_page_that_is_not_a_whole_number_from_1_is_refused_naming_page(shared, org, page):
    status, error = call(shared, org, "GET", f"{LIBRARY}?page={page}")
    assert status == 400, error
    assert error["message"][0].startswith("page must be a whole number from 1 to 100000")


def test_search_matches_names_original_names_and_alt_text_in_any_case_with_wildcards_taken_literally(shared, org):
    percent = library_row(org, 1, original_name="100%_done.png")
    sunset = library_row(org, 2, alt="Sunset over the BEACH")
    underscore = library_row(org, 3, name="my_file.png")
    plain = library_row(org, 4, original_name="plain.png", alt="nothing here")
    backslash = library_row(org, 5, alt="C:\\pictures")

    def found(search: str) -> list:
        from urllib.parse import quote
        return sorted(item["id"] for item in listing(shared, org, f"?search={quote(search)}")["media"])
    assert found("%") == [percent]
    assert found("_") == sorted([percent, underscore])
    assert found("%_") == [percent]
    assert found("beach") == [sunset] and found("SUNSET") == [sunset]
    assert found("PLAIN") == [plain]
    assert found("\\") == [backslash]
    assert found("") == sorted([percent, sunset, underscore, plain, backslash])
    assert found("no such thing") == []
    assert listing(shared, org, "?search=beach")["pages"] == 1


def test_a_search_over_200_characters_or_with_control_characters_is_refused_naming_search(shared, org):
    assert listing(shared, org, "?search=" + "a" * 200)["media"] == []
    for search in ("a" * 201, "a" * 100_00, "%00", "a%01b"):
        status, error = call(shared, org, "GET", f"{LIBRARY}?search={search}")
        assert status == 400 and error["message"][0].startswith("search must"), (search[:20], error)


def test_used_by_lists_the_live_posts_that_use_each_item_found_by_path_or_id(shared, org):
    media = uploaded(shared, org, png_file(), "used.png")
    unused = uploaded(shared, org, png_file(), "unused.png")
    queued = post_using(org, media)
    published = post_using(org, media, state="PUBLISHED")
    by_id_only = org["db"].post(org["channel"], "2030-01-01T10:00:00.000Z", state="DRAFT", organization_id=org["id"],
                                image=json.dumps([{"id": media["id"], "path": "https://elsewhere.example/x.png"}]))
    in_settings = org["db"].post(org["channel"], "2029-01-01T10:00:00.000Z", organization_id=org["id"],
                                 settings=json.dumps({"__type": "wordpress", "main_image": {"id": "m",
                                                                                            "path": media["path"]}}))
    post_using(org, media, deleted=True)
    items = {item["id"]: item for item in listing(shared, org)["media"]}
    uses = items[media["id"]]["usedBy"]
    assert sorted(use["id"] for use in uses[:2]) == sorted([queued, published])  # the latest date first
    assert [use["id"] for use in uses[2:]] == [by_id_only, in_settings]
    assert {use["id"]: use["state"] for use in uses} == {queued: "QUEUE", published: "PUBLISHED",
                                                          by_id_only: "DRAFT", in_settings: "QUEUE"}
    assert uses[0]["integration"] == {"id": org["channel"], "name": "Sky", "providerIdentifier": "bluesky",
                                      "picture": None}
    assert items[unused["id"]]["usedBy"] == []


def test_a_post_scheduled_through_the_api_counts_as_a_use(shared, org):
    media = uploaded(shared, org, png_file(), "api.png")
    body = {"type": "draft", "date": iso(86400), "shortLink": False, "tags": [],
            "posts": [{"integration": {"id": org["channel"]}, "settings": {},
                       "value": [{"content": "<p>with a picture</p>", "image": [{"id": media["id"],
                                                                                 "path": media["path"]}]}]}]}
    status, created = call(shared, org, "POST", f"{API}/posts", body)
    assert status == 201, created
    item = listing(shared, org)["media"][0]
    assert [use["id"] for use in item["usedBy"]] == [created[0]["postId"]]


def test_put_changes_alt_text_and_name_once_for_the_library(shared, org):
    media = uploaded(shared, org, png_file(), "rename-me.png")
    status, changed = call(shared, org, "PUT", f"{LIBRARY}/{media['id']}", {"alt": "  A red square  "})
    assert status == 200, changed
    assert (changed["alt"], changed["name"], changed["usedBy"]) == ("A red square", media["name"], [])
    status, changed = call(shared, org, "PUT", f"{LIBRARY}/{media['id']}", {"name": "Logo, final"})
    assert (status, changed["name"], changed["alt"]) == (200, "Logo, final", "A red square")
    assert listing(shared, org, "?search=logo")["media"][0]["id"] == media["id"]
    assert listing(shared, org, "?search=red%20square")["media"][0]["id"] == media["id"]
    status, changed = call(shared, org, "PUT", f"{LIBRARY}/{media['id']}", {"alt": "Two lines:\n\tred, square"})
    assert (status, changed["alt"]) == (200, "Two lines:\n\tred, square")
    status, changed = call(shared, org, "PUT", f"{LIBRARY}/{media['id']}", {"alt": None})
    assert (status, changed["alt"]) == (200, None)
    status, changed = call(shared, org, "PUT", f"{LIBRARY}/{media['id']}", {"alt": "a" * 1000, "name": "n" * 255})
    assert status == 200 and len(changed["alt"]) == 1000
    assert changed["path"] == media["path"]  # renaming never moves the file


@pytest.mark.parametrize("body, field", [
    ({"alt": "a" * 1001}, "alt"), ({"alt": 5}, "alt"), ({"alt": "bad\u0000alt"}, "alt"), ({"name": ""}, "name"),
    ({"name": "   "}, "name"), ({"name": "n" * 256}, "name"), ({"name": None}, "name"), ({"name": ["x"]}, "name"),
    ({"name": "line\nbreak"}, "name"), ({"name": "bell\u0007"}, "name"), ({}, "alt or name"), ({"path": "/etc/passwd"}, "property path"),
])
def test_put_refuses_a_bad_field_naming_it(shared, org, body, field):
    media = uploaded(shared, org, png_file())
    status, error = call(shared, org, "PUT", f"{LIBRARY}/{media['id']}", body)
    assert status == 400, error
    assert any(message.startswith(field) for message in error["message"]), error


def test_put_refuses_a_lone_surrogate(shared, org):
    media = uploaded(shared, org, png_file())
    status, error = call(shared, org, "PUT", f"{LIBRARY}/{media['id']}", b'{"alt": "\\ud800"}')
    assert status == 400, error


@pytest.mark.parametrize("media_id", ["nope", "..%2F..%2Fetc%2Fpasswd", "%27%20OR%201%3D1%20--", "x" * 2000,
                                      "%25", "%00"])
def test_forged_ids_are_404_on_put_and_delete(shared, org, media_id):
    for method, body in (("PUT", {"alt": "x"}), ("DELETE", None)):
        status, error = call(shared, org, method, f"{LIBRARY}/{media_id}", body)
        assert status == 404, (method, media_id, error)


def test_another_organizations_media_is_unknown_here(shared, org):
    media = uploaded(shared, org, png_file(), "mine.png")
    db = org["db"]
    _, other_key = db.organization()
    other = {"key": other_key}
    assert listing(shared, other)["media"] == []
    assert call(shared, other, "PUT", f"{LIBRARY}/{media['id']}", {"alt": "stolen"}) == \
        (404, {"statusCode": 404, "message": "Media not found", "error": "Not Found"})
    assert call(shared, other, "DELETE", f"{LIBRARY}/{media['id']}")[0] == 404
    status, answer = call(shared, other, "POST", f"{LIBRARY}/delete", {"ids": [media["id"]]})
    assert (status, answer["results"][0]["status"]) == (200, 404)
    assert listing(shared, org)["media"][0]["alt"] is None


def test_a_deleted_item_is_gone_from_the_library_and_its_unused_file_removed(shared, org):
    media = uploaded(shared, org, png_file(), "gone.png")
    served = media["path"][media["path"].index("/uploads/"):]
    assert shared.request("GET", served)[0] == 200
    assert call(shared, org, "DELETE", f"{LIBRARY}/{media['id']}") == (200, {"id": media["id"], "deleted": True})
    assert listing(shared, org)["media"] == []
    assert shared.request("GET", served)[0] == 404
    assert call(shared, org, "DELETE", f"{LIBRARY}/{media['id']}")[0] == 404
    assert call(shared, org, "PUT", f"{LIBRARY}/{media['id']}", {"alt": "x"})[0] == 404
    deleted_at = org["db"].row("SELECT deleted_at FROM media WHERE id = ?", media["id"])[0]
    assert deleted_at is not None  # a soft delete


def test_a_queued_post_holds_the_item_back_with_a_409_listing_it(shared, org):
    media = uploaded(shared, org, png_file(), "busy.png")
    queued = post_using(org, media)
    post_using(org, media, state="PUBLISHED")
    status, refused = call(shared, org, "DELETE", f"{LIBRARY}/{media['id']}")
    assert status == 409, refused
    assert (refused["statusCode"], refused["error"]) == (409, "Conflict") and "usedBy" in refused["message"]
    assert [(use["id"], use["state"]) for use in refused["usedBy"]] == [(queued, "QUEUE")]
    assert listing(shared, org)["media"][0]["id"] == media["id"]  # nothing was deleted
    org["db"].execute("UPDATE post SET deleted_at = '2025-01-01T00:00:00.000Z' WHERE id = ?", queued)
    assert call(shared, org, "DELETE", f"{LIBRARY}/{media['id']}")[0] == 200


def test_published_drafts_and_failed_posts_do_not_hold_an_item_back_and_keep_its_file(shared, org):
    media = uploaded(shared, org, png_file(), "kept.png")
    post_using(org, media, state="PUBLISHED")
    post_using(org, media, state="DRAFT")
    post_using(org, media, state="ERROR")
    assert call(shared, org, "DELETE", f"{LIBRARY}/{media['id']}")[0] == 200
    assert listing(shared, org)["media"] == []
    assert shared.request("GET", media["path"][media["path"].index("/uploads/"):])[0] == 200


def test_bulk_delete_answers_each_id(shared, org):
    free, busy = uploaded(shared, org, png_file()), uploaded(shared, org, png_file())
    queued = post_using(org, busy)
    status, answer = call(shared, org, "POST", f"{LIBRARY}/delete", {"ids": [free["id"], busy["id"], "nope",
                                                                             free["id"]]})
    assert status == 200, answer
    assert [(result["id"], result["status"]) for result in answer["results"]] == [
        (free["id"], 200), (busy["id"], 409), ("nope", 404)]
    assert [use["id"] for use in answer["results"][1]["usedBy"]] == [queued]
    assert [item["id"] for item in listing(shared, org)["media"]] == [busy["id"]]


@pytest.mark.parametrize("body", [{}, {"ids": []}, {"ids": "x"}, {"ids": [5]}, {"ids": ["x"] * 101}, {"ids": [""]},
                                  [1, 2]])
def test_bulk_delete_refuses_a_bad_list_naming_ids(shared, org, body):
    status, error = call(shared, org, "POST", f"{LIBRARY}/delete", body)
    assert status == 400 and error["message"][0].startswith("ids must be"), error


def test_read_and_drafts_keys_may_list_but_not_change_or_delete(shared, org):
    media = uploaded(shared, org, png_file())
    for scope in ("read", "drafts"):
        status, made = call(shared, org, "POST", f"{API}/api-keys", {"name": f"media-{scope}", "scope": scope})
        assert status == 201, made
        narrow = {"key": made["apiKey"]}
        assert listing(shared, narrow)["media"][0]["id"] == media["id"]
        for method, path, body in (("PUT", f"{LIBRARY}/{media['id']}", {"alt": "x"}),
                                   ("DELETE", f"{LIBRARY}/{media['id']}", None),
                                   ("POST", f"{LIBRARY}/delete", {"ids": [media["id"]]})):
            status, error = call(shared, narrow, method, path, body)
            assert status == 403 and f"has the scope '{scope}'" in error["message"] \
                and "needs the scope 'full'" in error["message"], (method, error)
    assert listing(shared, org)["media"][0]["alt"] is None


def test_the_answers_match_the_openapi_document(shared, org):
    media = uploaded(shared, org, png_file(4, 4))
    post_using(org, media)
    document = json.loads(shared.request("GET", f"{API}/openapi.json")[2])

    def check(path: str, method: str, status: int, body) -> None:
        response = document["paths"][path][method]["responses"][str(status)]
        schema = response["content"]["application/json"]["schema"]
        jsonschema.Draft202012Validator({**schema, "components": document["components"]}).validate(body)
    check(f"{LIBRARY}", "get", 200, listing(shared, org))
    check(f"{LIBRARY}/{{id}}", "put", 200, call(shared, org, "PUT", f"{LIBRARY}/{media['id']}", {"alt": "x"})[1])
    check(f"{LIBRARY}/{{id}}", "delete", 409, call(shared, org, "DELETE", f"{LIBRARY}/{media['id']}")[1])
    check(f"{LIBRARY}/delete", "post", 200, call(shared, org, "POST", f"{LIBRARY}/delete", {"ids": ["nope"]})[1])


def test_with_a_bucket_the_size_is_recorded_and_a_deleted_items_object_removed_unless_a_post_uses_it(
        start_server, backend):
    from s3_server import S3Server
    s3 = S3Server()
    try:
        bucket = s3.create_bucket("rustiz-media-library")
        server = start_server(env=s3.rustiz_env(bucket))
        org = {"key": server.key, "db": Database(server)}
        org["id"] = org["db"].organization_id
        org["channel"] = org["db"].channel("Sky", "bluesky")
        gone, kept = uploaded(server, org, png_file(6, 4)), uploaded(server, org, png_file(2, 9))
        assert [(item["width"], item["height"]) for item in listing(server, org)["media"]] == [(2, 9), (6, 4)]
        post_using(org, kept, state="PUBLISHED")
        for media in (gone, kept):
            assert call(server, org, "DELETE", f"{LIBRARY}/{media['id']}")[0] == 200
        assert s3.keys(bucket) == ["media/" + kept["path"].split("/uploads/", 1)[1]]
    finally:
        s3.stop()


# --- the MCP tools -----------------------------------------------------------------------------------------------

def test_the_mcp_tools_list_change_and_delete_media(shared, org):
    media = uploaded(shared, org, png_file(5, 7), "agent.png")
    listed = tool(shared, org["key"], "listMedia", {})
    assert not listed["isError"], listed
    output = listed["structuredContent"]["output"]
    assert output["pages"] == 1 and (output["media"][0]["width"], output["media"][0]["height"]) == (5, 7)
    assert tool(shared, org["key"], "listMedia", {"search": "nothing like it"})["structuredContent"]["output"] == \
        {"media": [], "pages": 0}
    changed = tool(shared, org["key"], "updateMedia", {"id": media["id"], "alt": "A tall rectangle"})
    assert changed["structuredContent"]["output"]["alt"] == "A tall rectangle"
    queued = post_using(org, media)
    refused = tool(shared, org["key"], "deleteMedia", {"id": media["id"]})
    assert not refused["isError"] and [use["id"] for use in refused["structuredContent"]["output"]["usedBy"]] == \
        [queued]
    org["db"].execute("UPDATE post SET state = 'PUBLISHED' WHERE id = ?", queued)
    deleted = tool(shared, org["key"], "deleteMedia", {"id": media["id"]})
    assert deleted["structuredContent"]["output"] == {"id": media["id"], "deleted": True}


@pytest.mark.parametrize("name, arguments, words", [
    ("listMedia", {"page": 0}, "greater than or equal to 1"), ("listMedia", {"search": "s" * 201}, "search must"),
    ("updateMedia", {"id": "nope", "alt": "x"}, "Media nope not found"),
    ("updateMedia", {"id": "nope", "alt": "a" * 1001}, "alt must be shorter"),
    ("deleteMedia", {"id": "nope"}, "Media nope not found"),
])
def test_the_mcp_tools_refuse_with_tool_errors(shared, org, name, arguments, words):
    result = tool(shared, org["key"], name, arguments)
    assert result["isError"] and words in result["content"][0]["text"], result


def test_a_read_key_lists_media_over_mcp_but_may_not_change_it(shared, org):
    status, made = call(shared, org, "POST", f"{API}/api-keys", {"name": "mcp-media-read", "scope": "read"})
    assert status == 201
    assert not tool(shared, made["apiKey"], "listMedia", {})["isError"]
    for name in ("updateMedia", "deleteMedia"):
        refused = tool(shared, made["apiKey"], name, {"id": "x"})
        assert refused["isError"] and "needs the scope 'full'" in refused["content"][0]["text"]
