"""The WordPress publisher against a fake WordPress REST API: the user read with an application password,
media uploaded to the library (featured image and images in the content), posts and pages with their
status, categories and tags, WordPress's error bodies, sites without pretty permalinks, and the tools."""
from __future__ import annotations

import pytest

from conftest import provider_fixtures
from fakes.wordpress import FakeWordPress, wordpress_error
from support import (Database, FakeOrigin, waiting_for_reconnect, channel_session, connect, connected,
                     jpeg_file, png_file, refresh_needed, refused_post, scheduled, settled, trigger, upload, uploaded)

SETTINGS = {"title": "Release notes", "type": "post"}


wordpress, server, channel = provider_fixtures("wordpress", FakeWordPress, names=("wordpress", "server", "channel"))


@pytest.fixture
def origin():
    """A web server with pictures, for a main_image given as a web address."""
    site = FakeOrigin()
    yield site
    site.close()


def test_connect_reads_the_user_and_its_avatar(server, wordpress, channel):
    host = wordpress.url.removeprefix("http://")
    assert (channel["name"], channel["profile"], channel["picture"]) == (
        host, "editor", "https://gravatar.example/96.png")
    assert wordpress.requests_to("GET", "/wp-json/wp/v2/users/me")[0].query == {"context": "edit"}


def test_a_wrong_application_password_is_refused_with_wordpress_s_words(server, wordpress):
    status, answer = connect(server, "wordpress", {**wordpress.credentials(), "password": "wrong"})
    assert status == 400
    message = answer["message"]
    assert "incorrect_password: Error: The provided password is an invalid application password." in message
    assert "<strong>" not in message and "Application Passwords" in message


def test_a_server_that_drops_the_authorization_header_is_explained(server, wordpress):
    wordpress.fail_next("GET", "/wp-json/wp/v2/users/me", *wordpress_error(
        401, "rest_not_logged_in", "You are not currently logged in."))
    status, answer = connect(server, "wordpress", wordpress.credentials())
    assert status == 400
    assert "rest_not_logged_in: You are not currently logged in." in answer["message"]
    assert "drops the Authorization header" in answer["message"]


def test_a_user_who_cannot_publish_is_refused(server):
    contributor = FakeWordPress(can_publish=False)
    try:
        status, answer = connect(server, "wordpress", contributor.credentials())
        assert status == 400 and "cannot publish posts (roles: contributor)" in answer["message"]
    finally:
        contributor.close()


def test_a_site_without_the_rest_api_is_refused_with_a_clear_message(server, wordpress):
    status, answer = connect(server, "wordpress", {**wordpress.credentials(), "domain": wordpress.url + "/blog"})
    assert status == 400
    assert "has no WordPress REST API" in answer["message"] and "/wp-json/wp/v2/users/me" in answer["message"]


def test_a_site_without_pretty_permalinks_is_reached_through_rest_route(server):
    plain = FakeWordPress(pretty_permalinks=False)
    try:
        channel = connected(server, "wordpress", plain.credentials())
        assert channel_session(server, channel["id"]) == {"api": plain.url + "/?rest_route=/wp/v2"}
        post_id = scheduled(server, channel["id"], "<p>Plain</p>", settings=SETTINGS,
                            images=[uploaded(server, png_file())], provider="wordpress")
        assert settled(server, post_id)["state"] == "PUBLISHED"
        assert plain.published[0]["featured_media"] == 50 and plain.media[50]["bytes"] == png_file()
    finally:
        plain.close()


def test_a_post_is_published_with_its_status_categories_and_tags(server, wordpress, channel):
    post_id = scheduled(server, channel["id"], "<p>Version <strong>2</strong> is out.</p>",
                        settings={**SETTINGS, "status": "pending", "categories": [7], "tags": [12]},
                        provider="wordpress")
    post = settled(server, post_id)
    assert post["state"] == "PUBLISHED", post["error"]
    assert (post["releaseId"], post["releaseURL"]) == ("201", f"{wordpress.url}/?p=201")
    assert wordpress.published == [{"title": "Release notes", "content": "<p>Version <strong>2</strong> is out.</p>",
                                    "status": "pending", "categories": [7], "tags": [12], "collection": "posts"}]


def test_images_are_uploaded_the_first_featured_and_the_others_in_the_content(server, wordpress, channel):
    first, second = uploaded(server, png_file()), uploaded(server, png_file())
    post_id = scheduled(server, channel["id"], "<p>Pictures</p>", settings={**SETTINGS, "type": "page"},
                        images=[first, second], provider="wordpress")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    uploads = wordpress.requests_to("POST", "/wp-json/wp/v2/media")
    assert [upload.headers["content-type"] for upload in uploads] == ["image/png", "image/png"]
    assert all(upload.headers["content-disposition"].startswith('attachment; filename="') for upload in uploads)
    [page] = wordpress.published
    source = f"{wordpress.url}/wp-content/uploads/{wordpress.media[51]['filename']}"
    assert page["collection"] == "pages" and page["status"] == "publish" and page["featured_media"] == 50
    assert page["content"] == f'<p>Pictures</p><p><img src="{source}" alt="" /></p>'


def test_the_settings_main_image_is_the_featured_one(server, wordpress, channel):
    first, second = uploaded(server, png_file()), uploaded(server, png_file())
    post_id = scheduled(server, channel["id"], "<p>Cover</p>", settings={**SETTINGS, "main_image": second},
                        images=[first, second], provider="wordpress")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    assert wordpress.published[0]["featured_media"] == 51 and "uploads/" in wordpress.published[0]["content"]


def test_a_main_image_not_among_the_post_images_is_uploaded_once_as_the_featured_image(server, wordpress, channel):
    cover, image = uploaded(server, jpeg_file()), uploaded(server, png_file())
    post_id = scheduled(server, channel["id"], "<p>Cover</p>", settings={**SETTINGS, "main_image": cover},
                        images=[image], provider="wordpress")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    assert [item["content_type"] for item in wordpress.media.values()] == ["image/jpeg", "image/png"]
    assert wordpress.media[50]["bytes"] == jpeg_file()
    [article] = wordpress.published
    assert article["featured_media"] == 50  # the cover, not the post's own image, which goes into the content
    assert article["content"] == (f'<p>Cover</p><p><img src="{wordpress.url}/wp-content/uploads/'
                                  f'{wordpress.media[51]["filename"]}" alt="" /></p>')


def test_a_main_image_alone_is_the_featured_image_and_not_in_the_content(server, wordpress, channel):
    cover = {**uploaded(server, png_file()), "alt": "The release's cover"}
    post_id = scheduled(server, channel["id"], "<p>Text only</p>", settings={**SETTINGS, "main_image": cover},
                        provider="wordpress")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    assert list(wordpress.media) == [50] and wordpress.media[50]["alt_text"] == "The release's cover"
    assert wordpress.published[0]["featured_media"] == 50 and wordpress.published[0]["content"] == "<p>Text only</p>"


def test_a_main_image_also_among_the_post_images_is_uploaded_once(server, wordpress, channel):
    first, cover = uploaded(server, png_file()), uploaded(server, jpeg_file())
    post_id = scheduled(server, channel["id"], "<p>x</p>", settings={**SETTINGS, "main_image": cover},
                        images=[first, cover], provider="wordpress")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    assert len(wordpress.media) == 2 and wordpress.media[51]["bytes"] == jpeg_file()
    [article] = wordpress.published
    assert article["featured_media"] == 51 and wordpress.media[51]["filename"] not in article["content"]
    assert wordpress.media[50]["filename"] in article["content"]


def test_a_main_image_from_the_web_is_fetched_and_uploaded_as_the_featured_image(server, wordpress, channel, origin):
    origin.serve("/covers/launch.png", png_file(2, 2))
    cover = {"id": "web-cover", "path": f"{origin.url}/covers/launch.png"}
    post_id = scheduled(server, channel["id"], "<p>x</p>", settings={**SETTINGS, "main_image": cover},
                        provider="wordpress")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    assert wordpress.media[50]["bytes"] == png_file(2, 2) and wordpress.published[0]["featured_media"] == 50


@pytest.mark.parametrize("where, reason", [
    ("origin", "answered 404 Not Found"),
    ("http://10.255.255.1/covers/missing.png", "a private address"),  # the outbound client's address guard
])
def test_a_main_image_that_cannot_be_fetched_fails_the_post_naming_the_setting(server, wordpress, channel, origin,
                                                                             where, reason):
    cover = {"id": "gone", "path": f"{origin.url}/covers/missing.png" if where == "origin" else where}
    post_id = scheduled(server, channel["id"], "<p>x</p>", settings={**SETTINGS, "main_image": cover},
                        provider="wordpress")
    post = settled(server, post_id)
    assert post["state"] == "ERROR" and wordpress.published == [] and wordpress.media == {}
    assert "at the main_image setting" in post["error"] and "covers/missing.png" in post["error"]
    assert reason in post["error"], post["error"]


def test_a_main_image_that_is_not_the_organization_s_upload_is_refused_naming_the_setting(server, wordpress, channel):
    _, other_key = Database(server).organization()
    status, theirs = upload(server, png_file(), key=other_key)
    assert status == 201
    deleted = uploaded(server, png_file())
    with Database(server).connect() as db:
        db.execute("UPDATE media SET deleted_at = ? WHERE id = ?", ("2024-05-01T10:00:00.000Z", deleted["id"]))
    never = {"id": "x", "path": f"{server.url}/uploads/2024/01/01/never-uploaded.png"}
    # (an address of the uploads' shape is read from this server's folder, whatever its host)
    theirs_elsewhere = {"id": "y", "path": theirs["path"].replace(server.url, "https://cdn.example.com")}
    for cover in ({"id": theirs["id"], "path": theirs["path"]}, deleted, never, theirs_elsewhere):
        message = refused_post(server, channel["id"], "<p>x</p>", settings={**SETTINGS, "main_image": cover},
                               provider="wordpress")
        assert "posts.0.settings.main_image" in message and "is not an upload of this organization" in message
    assert wordpress.media == {} and wordpress.published == []


@pytest.mark.parametrize("path, problem", [
    ("https://cdn.example.com/clip.mp4", "must be a picture"),
    ("ftp://cdn.example.com/cover.png", "is neither an upload of this organization nor a web address"),
    ("/elsewhere/cover.png", "is neither an upload of this organization nor a web address"),
])
def test_a_main_image_that_is_no_picture_or_no_web_address_is_refused(server, wordpress, channel, path, problem):
    message = refused_post(server, channel["id"], "<p>x</p>", settings={**SETTINGS, "main_image": {"id": "c", "path": path}},
                           provider="wordpress")
    assert "posts.0.settings.main_image" in message and problem in message


def test_a_503_after_the_main_image_went_up_does_not_upload_it_again(server, wordpress, channel):
    wordpress.fail_next("POST", "/wp-json/wp/v2/posts", 503, "<html>Service Unavailable</html>")
    post_id = scheduled(server, channel["id"], "<p>x</p>", settings={**SETTINGS, "main_image": uploaded(server, png_file())},
                        images=[uploaded(server, jpeg_file())], provider="wordpress")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    assert len(wordpress.requests_to("POST", "/wp-json/wp/v2/posts")) == 2 and len(wordpress.media) == 2
    assert wordpress.published[0]["featured_media"] == 50


def test_a_thread_is_still_refused_at_post_time(server, wordpress, channel):
    assert "not 2" in refused_post(server, channel["id"], "<p>a</p>", "<p>b</p>", settings=SETTINGS,
                                   provider="wordpress")


def test_a_refused_media_upload_names_the_item(server, wordpress, channel):
    wordpress.fail_next("POST", "/wp-json/wp/v2/media", *wordpress_error(
        400, "rest_upload_sideload_error", "Sorry, you are not allowed to upload this file type."))
    post_id = scheduled(server, channel["id"], "<p>x</p>", settings=SETTINGS, images=[uploaded(server, png_file())],
                        provider="wordpress")
    post = settled(server, post_id)
    assert post["state"] == "ERROR" and wordpress.published == []
    assert post["error"].startswith("Failed on WordPress (HTTP 400) at media item 1:")
    assert "rest_upload_sideload_error: Sorry, you are not allowed to upload this file type." in post["error"]


def test_a_permission_the_user_lacks_fails_the_post_without_flagging_the_channel(server, wordpress, channel):
    wordpress.fail_next("POST", "/wp-json/wp/v2/posts", *wordpress_error(
        403, "rest_cannot_create", "Sorry, you are not allowed to create posts as this user."))
    post_id = scheduled(server, channel["id"], "<p>x</p>", settings=SETTINGS, provider="wordpress")
    post = settled(server, post_id)
    assert post["state"] == "ERROR" and "HTTP 403" in post["error"]
    assert "rest_cannot_create: Sorry, you are not allowed to create posts as this user." in post["error"]
    assert not refresh_needed(server, channel["id"])


def test_a_revoked_application_password_flags_the_channel(server, wordpress, channel):
    wordpress.password = "revoked"
    post_id = scheduled(server, channel["id"], "<p>x</p>", settings=SETTINGS, provider="wordpress")
    post = waiting_for_reconnect(server, post_id)
    assert "HTTP 401" in post["error"] and "incorrect_password" in post["error"]
    assert refresh_needed(server, channel["id"])


def test_a_429_is_retried_and_published_once(server, wordpress, channel):
    wordpress.fail_next("POST", "/wp-json/wp/v2/posts", 429, "Too Many Requests", {"Retry-After": "1"})
    post_id = scheduled(server, channel["id"], "<p>x</p>", settings=SETTINGS, provider="wordpress")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    assert len(wordpress.published) == 1


def test_a_503_on_the_post_is_retried_with_the_media_already_uploaded(server, wordpress, channel):
    wordpress.fail_next("POST", "/wp-json/wp/v2/posts", 503, "<html>Service Unavailable</html>")
    post_id = scheduled(server, channel["id"], "<p>x</p>", settings=SETTINGS,
                        images=[uploaded(server, png_file()), uploaded(server, png_file())], provider="wordpress")
    assert settled(server, post_id)["state"] == "PUBLISHED"
    assert len(wordpress.requests_to("POST", "/wp-json/wp/v2/posts")) == 2 and len(wordpress.media) == 2
    assert wordpress.published[0]["featured_media"] == 50
    assert channel_session(server, channel["id"])["uploads"] == {}


def test_a_500_on_the_post_may_have_published_it_so_it_is_not_sent_again(server, wordpress, channel):
    wordpress.fail_next("POST", "/wp-json/wp/v2/posts", *wordpress_error(500, "db_insert_error", "Could not insert post."))
    post_id = scheduled(server, channel["id"], "<p>x</p>", settings=SETTINGS, provider="wordpress")
    post = settled(server, post_id)
    assert post["state"] == "ERROR" and "may have been published" in post["error"] and "wp-admin" in post["error"]
    assert len(wordpress.requests_to("POST", "/wp-json/wp/v2/posts")) == 1


def test_the_post_types_categories_and_tags_tools(server, wordpress, channel):
    assert trigger(server, channel["id"], "postTypes") == (200, {"output": [
        {"id": "posts", "name": "Posts"}, {"id": "pages", "name": "Pages"}]})
    assert trigger(server, channel["id"], "categoriesList") == (200, {"output": [
        {"id": 1, "name": "Uncategorized"}, {"id": 7, "name": "News"}]})
    assert trigger(server, channel["id"], "tagsList") == (200, {"output": [{"id": 12, "name": "release"}]})
