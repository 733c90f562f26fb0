"""The provider catalogue and the POST /posts validation pipeline, called directly (no server needed)."""
from __future__ import annotations

import json
import time

import pytest

from rustiz_features.catalogue import PROVIDERS, post_length
from rustiz_features.text import sanitize_html, strip_html, x_weighted_length
from rustiz_features.validation import validate_create_post
from rustiz import ApiError

IDENTIFIERS = [
    "x", "linkedin", "linkedin-page", "reddit", "instagram", "instagram-standalone", "facebook", "threads",
    "youtube", "gmb", "tiktok", "tiktok-business", "pinterest", "dribbble", "discord", "slack", "kick", "twitch",
    "mastodon", "bluesky", "lemmy", "wrapcast", "telegram", "nostr", "vk", "medium", "devto", "hashnode",
    "wordpress", "listmonk", "moltbook", "whop", "skool", "mewe", "tumblr"]
WITHOUT_SCHEMA = {"linkedin", "linkedin-page", "threads", "kick", "mastodon", "bluesky", "telegram", "nostr", "vk",
                  "moltbook"}
DRAFT_07_KEYWORDS = {"type", "properties", "required", "items", "enum", "minLength", "maxLength", "pattern",
                     "format", "not", "description", "minItems", "maxItems", "minimum", "maximum", "$ref"}
JSON_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}

# The X schema exactly as Postiz (class-validator-jsonschema 5.1) generates it (reference §8.3).
X_SCHEMA = json.loads(r'''{"properties":{
  "community":{"pattern":"^(https:\\/\\/x\\.com\\/i\\/communities\\/\\d+)?$","type":"string"},
  "who_can_reply_post":{"type":"string","enum":["everyone","following","mentionedUsers","subscribers","verified"]},
  "post_type":{"type":"string","enum":["post","article"],"description":"post = a regular short post (plain text). article = a long-form X article: write the post content as HTML (p, h1, h2, h3, ul, ol, li, strong, u, a) - the formatting is kept in the article"},
  "article_title":{"minLength":1,"type":"string","description":"The title of the article, required when post_type is article"},
  "article_status":{"type":"string","enum":["draft","published"],"description":"draft = save the article as a draft on X, published = publish it right away, required when post_type is article"},
  "article_cover":{"properties":{"id":{"not":{"type":"null"},"type":"string"},"path":{"type":"string","not":{"type":"null"}},"alt":{"type":"string"},"thumbnail":{"format":"url","type":"string"}},"type":"object","required":["id","path"],"description":"Optional cover image for the article, only used when post_type is article"},
  "made_with_ai":{"type":"boolean"},"paid_partnership":{"type":"boolean"}},
 "type":"object"}''')


def assert_draft_07_shape(schema: dict, where: str) -> None:
    """By hand, what a draft-07 validator would reject: unknown keywords, bad types, dangling `required`."""
    assert isinstance(schema, dict), where
    assert set(schema) <= DRAFT_07_KEYWORDS, (where, set(schema) - DRAFT_07_KEYWORDS)
    if "type" in schema:
        assert schema["type"] in JSON_TYPES, where
    if "enum" in schema:
        assert isinstance(schema["enum"], list) and schema["enum"], where
    for keyword in ("minLength", "maxLength", "minItems", "maxItems"):
        if keyword in schema:
            assert isinstance(schema[keyword], int) and schema[keyword] >= 0, (where, keyword)
    if "pattern" in schema:
        import re
        re.compile(schema["pattern"])
    if "properties" in schema:
        assert schema.get("type") == "object", where
        for name, child in schema["properties"].items():
            assert_draft_07_shape(child, f"{where}.{name}")
    if "required" in schema:
        required = schema["required"]
        assert isinstance(required, list) and len(set(required)) == len(required), where
        assert set(required) <= set(schema.get("properties", {})), where
    if "items" in schema:
        assert schema.get("type") == "array", where
        assert_draft_07_shape(schema["items"], where + "[]")
    if "not" in schema:
        assert_draft_07_shape(schema["not"], where + "!")


def test_the_35_identifiers_in_postiz_order():
    assert list(PROVIDERS) == IDENTIFIERS
    assert all(spec.identifier == identifier for identifier, spec in PROVIDERS.items())
    assert isinstance(PROVIDERS["x"], tuple)  # a NamedTuple, cheap to create at start-up


def test_every_provider_has_a_name_editor_limit_rules_and_tools():
    for spec in PROVIDERS.values():
        assert spec.name and spec.editor in ("normal", "html", "markdown"), spec.identifier
        assert isinstance(spec.max_length, int) and spec.max_length > 0, spec.identifier
        assert isinstance(spec.rules, str)
        for tool in spec.tools:
            assert set(tool) == {"methodName", "description", "dataSchema"}, spec.identifier
            assert all(set(entry) == {"key", "type", "description"} for entry in tool["dataSchema"])
        json.dumps(spec.settings)  # everything integration-settings returns is plain JSON


def test_limits_names_and_editors_of_some_providers():
    expected = {"x": ("X", "html", 280), "instagram": ("Instagram\n(Facebook Business)", "normal", 2200),
                "discord": ("Discord", "markdown", 1980), "bluesky": ("Bluesky", "normal", 300),
                "wrapcast": ("Farcaster", "normal", 800), "listmonk": ("ListMonk", "html", 100000000),
                "tumblr": ("Tumblr", "normal", 32768), "tiktok": ("Tiktok", "normal", 2000)}
    for identifier, (name, editor, max_length) in expected.items():
        spec = PROVIDERS[identifier]
        assert (spec.name, spec.editor, spec.max_length) == (name, editor, max_length)


def test_settings_schemas_are_draft_07_shaped_or_postiz_no_settings_text():
    for identifier, spec in PROVIDERS.items():
        if identifier in WITHOUT_SCHEMA:
            assert spec.settings == "No additional settings required", identifier
        else:
            assert_draft_07_shape(spec.settings, identifier)
            assert spec.settings["type"] == "object"


def test_x_schema_is_exactly_postiz_s():
    assert PROVIDERS["x"].settings == X_SCHEMA
    assert list(PROVIDERS["x"].settings["properties"]) == list(X_SCHEMA["properties"])


def test_schema_required_lists_and_nesting():
    settings = {identifier: spec.settings for identifier, spec in PROVIDERS.items()}
    assert settings["youtube"]["required"] == ["title", "type"]
    assert settings["youtube"]["properties"]["tags"]["$ref"] == "#/definitions/Array"
    assert settings["tiktok"]["required"] == ["privacy_level", "duet", "stitch", "comment", "autoAddMusic",
                                              "brand_content_toggle", "brand_organic_toggle",
                                              "content_posting_method"]
    assert settings["lemmy"]["properties"]["subreddit"]["minItems"] == 1
    reddit_value = settings["reddit"]["properties"]["subreddit"]["items"]["properties"]["value"]
    assert reddit_value["required"] == ["subreddit", "title", "type", "is_flair_required"]
    assert settings["pinterest"]["required"] == ["board"]
    assert settings["discord"]["required"] == settings["slack"]["required"] == ["channel"]
    assert "required" not in settings["x"]


def test_rules_and_tools():
    providers = PROVIDERS
    assert providers["x"].rules.startswith("X can have maximum 4 pictures")
    assert providers["bluesky"].rules == ("Bluesky can have maximum 1 video or 4 pictures in one post, it can also "
                                          "be without attachments")
    assert providers["threads"].rules == providers["mastodon"].rules == ""
    assert providers["discord"].tools == [{"methodName": "channels", "description": "Channels", "dataSchema": []}]
    assert [tool["methodName"] for tool in providers["reddit"].tools] == ["subreddits", "restrictions"]
    assert [entry["key"] for entry in providers["reddit"].tools[1]["dataSchema"]] == ["subreddit"]
    assert providers["linkedin-page"].tools == providers["instagram-standalone"].tools == []


# --- validate_create_post -------------------------------------------------------

MEDIA_ORIGIN = "https://rustiz.example.org"  # FRONTEND_URL: public, so no platform is refused its media


def no_uploads(urls: list) -> dict:
    """The organization's uploads among `urls`: none."""
    return {}


CHANNELS = {
    "X_ID": {"id": "X_ID", "name": "Acme on X", "provider_identifier": "x", "additional_settings": [],
             "disabled": False},
    "XV_ID": {"id": "XV_ID", "name": "Verified X", "provider_identifier": "x",
              "additional_settings": [{"title": "Verified", "value": True}], "disabled": False},
    "BSKY": {"id": "BSKY", "name": "Sky", "provider_identifier": "bluesky", "additional_settings": [],
             "disabled": False},
    "YT": {"id": "YT", "name": "Tube", "provider_identifier": "youtube", "additional_settings": [], "disabled": False},
    "PIN": {"id": "PIN", "name": "Pins", "provider_identifier": "pinterest", "additional_settings": [],
            "disabled": False},
    "TT": {"id": "TT", "name": "Tok", "provider_identifier": "tiktok", "additional_settings": [], "disabled": False},
    "DRI": {"id": "DRI", "name": "Shots", "provider_identifier": "dribbble", "additional_settings": [],
            "disabled": False},
    "DIS": {"id": "DIS", "name": "Chat", "provider_identifier": "discord", "additional_settings": [],
            "disabled": False},
    "RED": {"id": "RED", "name": "Reddit", "provider_identifier": "reddit", "additional_settings": [],
            "disabled": False},
}


def body(*posts: dict, **fields) -> dict:
    return {"type": "schedule", "date": "2026-09-01T10:00:00.000Z", "shortLink": False, "tags": [],
            "posts": list(posts), **fields}


def post(channel_id: str, *contents, settings: dict | None = None, **fields) -> dict:
    values = [content if isinstance(content, dict) else {"content": content, "image": []} for content in contents]
    entry = {"integration": {"id": channel_id}, "value": values or [{"content": "Hello", "image": []}], **fields}
    if settings is not None:
        entry["settings"] = settings
    return entry


X_OK = {"who_can_reply_post": "everyone"}


def error_of(payload: dict) -> tuple:
    with pytest.raises(ApiError) as raised:
        validate_create_post(payload, CHANNELS.get, MEDIA_ORIGIN, no_uploads)
    return raised.value.status, raised.value.body


def messages_of(payload: dict) -> list:
    status, error = error_of(payload)
    assert status == 400 and error["statusCode"] == 400 and error["error"] == "Bad Request", error
    assert isinstance(error["message"], list), error
    return error["message"]


def test_the_reference_minimal_body_gives_a_normalised_plan():
    payload = {"type": "schedule", "date": "2026-09-01T10:00:00.000Z", "shortLink": False, "tags": [],
               "posts": [{"integration": {"id": "BSKY"}, "value": [{"content": "<p>Hello world</p>", "image": []}],
                          "settings": {"__type": "bluesky"}}]}
    plan = validate_create_post(payload, CHANNELS.get, MEDIA_ORIGIN, no_uploads)
    assert plan == {
        "type": "schedule", "date": "2026-09-01T10:00:00.000Z", "shortLink": False, "tags": [], "inter": None,
        "repeatUntil": None, "repeatCount": None, "republish": False, "evergreen": None, "creationMethod": "API",
        "posts": [{"integration": CHANNELS["BSKY"], "group": None, "settings": {"__type": "bluesky"},
                   "values": [{"id": None, "content": "<p>Hello world</p>", "delay": 0, "image": []}]}]}


def test_plan_fields_thread_values_tags_and_creation_method():
    image = {"id": "u1", "path": "https://h/uploads/a.png", "alt": "a cat", "thumbnailTimestamp": 3}
    payload = body(post("X_ID", {"content": "Tweet 1", "image": [image], "id": "p1"},
                        {"content": "Tweet 2", "image": [], "delay": 5}, settings={"__type": "linkedin", **X_OK},
                        group="g-1"),
                   tags=[{"value": "launch", "label": "Launch"}], inter=7, republish=True, creationMethod="CLI",
                   date="2026-09-01T12:30:00+02:00")
    plan = validate_create_post(payload, CHANNELS.get, MEDIA_ORIGIN, no_uploads)
    assert (plan["date"], plan["tags"], plan["inter"], plan["republish"], plan["creationMethod"]) == (
        "2026-09-01T10:30:00.000Z", ["Launch"], 7, True, "CLI")
    entry = plan["posts"][0]
    assert entry["settings"] == {"__type": "x", "who_can_reply_post": "everyone"}  # __type is the channel's
    assert entry["group"] == "g-1"
    assert entry["values"] == [{"id": "p1", "content": "Tweet 1", "delay": 0, "image": [image]},
                               {"id": None, "content": "Tweet 2", "delay": 5, "image": []}]


def test_dates_without_offset_are_utc_and_type_now_takes_the_current_minute():
    assert validate_create_post(body(post("BSKY"), date="2026-09-01T10:00:00"), CHANNELS.get, MEDIA_ORIGIN, no_uploads)["date"] == (
        "2026-09-01T10:00:00.000Z")
    assert validate_create_post(body(post("BSKY"), date="2026-09-01"), CHANNELS.get, MEDIA_ORIGIN, no_uploads)["date"] == (
        "2026-09-01T00:00:00.000Z")
    before = time.strftime("%Y-%m-%dT%H:%M:00.000Z", time.gmtime())
    plan = validate_create_post(body(post("BSKY"), type="now", date="2020-01-01T00:00:00Z"), CHANNELS.get, MEDIA_ORIGIN, no_uploads)
    after = time.strftime("%Y-%m-%dT%H:%M:00.000Z", time.gmtime())
    assert plan["type"] == "now"
    assert plan["date"] in (before, after)


def test_unknown_type_behaves_like_schedule_and_missing_settings_become_type_only():
    plan = validate_create_post(body(post("BSKY"), type="whatever"), CHANNELS.get, MEDIA_ORIGIN, no_uploads)
    assert plan["type"] == "schedule"
    assert plan["posts"][0]["settings"] == {"__type": "bluesky"}
    assert validate_create_post(body(post("BSKY"), type="update"), CHANNELS.get, MEDIA_ORIGIN, no_uploads)["type"] == "update"


def test_posts_without_integration_ids():
    for payload in ({}, {"posts": "x"}, body(), body({}), body({"integration": {}}), body({"integration": {"id": ""}}),
                    body(post("BSKY"), {"integration": "BSKY", "value": []})):
        if payload.get("posts") == []:
            continue
        assert error_of(payload) == (400, {"statusCode": 400, "message": "All posts must have an integration id",
                                           "error": "Bad Request"}), payload


def test_unknown_channel():
    assert error_of(body(post("BSKY"), post("nope"))) == (
        400, {"statusCode": 400, "message": "Integration with id nope not found", "error": "Bad Request"})


def test_deleted_channels_are_still_found_as_postiz_does():
    deleted = {"id": "GONE", "name": "Gone", "provider_identifier": "bluesky", "additional_settings": [],
               "disabled": False, "deleted": True}
    plan = validate_create_post(body(post("GONE")), {"GONE": deleted}.get, MEDIA_ORIGIN, no_uploads)
    assert plan["posts"][0]["integration"] is deleted


def test_required_top_level_fields():
    assert messages_of({"posts": [post("BSKY")]}) == [
        "shortLink should not be null or undefined", "shortLink must be a boolean value",
        "date should not be null or undefined", "date must be a valid ISO 8601 date string",
        "tags should not be null or undefined", "tags must be an array"]


def test_bad_date_tags_and_inter():
    assert messages_of(body(post("BSKY"), date="tomorrow")) == ["date must be a valid ISO 8601 date string"]
    for impossible in ("2026-02-30T10:00:00Z", "2026-09-01T24:00:00Z", "0001-01-01T00:00:00+01:00", "2026-09-01Z"):
        assert messages_of(body(post("BSKY"), date=impossible)) == ["date must be a valid ISO 8601 date string"]
    assert messages_of(body(post("BSKY"), tags=[{"value": "a"}, "b"])) == [
        "tags.0.label should not be null or undefined", "tags.0.label must be a string",
        "tags.nested property 1 must be either object or array"]
    assert messages_of(body(post("BSKY"), inter="weekly")) == [
        "inter must be a number conforming to the specified constraints"]


def test_empty_posts_list():
    assert messages_of(body()) == ["posts must contain at least 1 elements"]


def test_value_content_and_image_rules():
    assert messages_of(body({"integration": {"id": "BSKY"}})) == [
        "posts.0.value should not be null or undefined", "posts.0.value must be an array",
        "posts.0.value must contain at least 1 elements"]
    assert messages_of(body(post("BSKY", {"content": "Hi"}))) == ["posts.0.value.0.image must be an array"]
    assert messages_of(body(post("BSKY", {"content": "", "image": []}))) == [
        "posts.0.value.0. If images do not exist, content must be a non-empty string."]
    assert messages_of(body(post("BSKY", {"image": []}))) == [
        "posts.0.value.0.content should not be null or undefined",
        "posts.0.value.0. If images do not exist, content must be a non-empty string.",
        "posts.0.value.0.content must be a string"]


def test_media_paths_need_an_id_and_a_known_extension():
    bad = {"content": "x", "image": [{"id": "1", "path": "https://h/a.txt"}, {"path": "https://h/b.PNG?size=2"}]}
    assert messages_of(body(post("BSKY", bad))) == [
        "posts.0.value.0.image.0.File must have a valid extension: .png, .jpg, .jpeg, .gif, .webp, or .mp4",
        "posts.0.value.0.image.1.id should not be null or undefined", "posts.0.value.0.image.1.id must be a string"]
    ok = {"content": "", "image": [{"id": "1", "path": "https://h/a.jpeg?x=1"}, {"id": "2", "path": "/b.mp4"}]}
    assert validate_create_post(body(post("BSKY", ok)), CHANNELS.get, MEDIA_ORIGIN, no_uploads)["posts"][0]["values"][0]["image"] == ok["image"]


def test_x_needs_who_can_reply_even_for_drafts():
    expected = ["posts.0.settings.who_can_reply_post must be one of the following values: everyone, following, "
                "mentionedUsers, subscribers, verified"]
    assert messages_of(body(post("X_ID"))) == expected
    assert messages_of(body(post("X_ID", settings={"__type": "x"}), type="draft")) == expected
    assert messages_of(body(post("X_ID", settings={"who_can_reply_post": "nobody"}))) == expected


def test_x_article_and_community_settings():
    assert messages_of(body(post("X_ID", settings={"post_type": "article"}))) == [
        "posts.0.settings.article_title must be longer than or equal to 1 characters",
        "posts.0.settings.article_title must be a string",
        "posts.0.settings.article_status must be one of the following values: draft, published"]
    # Postiz's own message for this check does not name the property; Nest still prefixes the path.
    assert messages_of(body(post("X_ID", settings={**X_OK, "community": "https://example.com/c/1"}))) == [
        "posts.0.settings.Invalid X community URL. It should be in the format: "
        "https://x.com/i/communities/1493446837214187523"]
    assert validate_create_post(body(post("X_ID", settings={**X_OK, "community": "https://x.com/i/communities/42"})),
                                CHANNELS.get, MEDIA_ORIGIN, no_uploads)


def test_provider_settings_messages():
    assert messages_of(body(post("YT", {"content": "x", "image": [{"id": "v", "path": "https://h/v.mp4"}]},
                                 settings={"title": "A", "type": "secret"}))) == [
        "posts.0.settings.title must be longer than or equal to 2 characters",
        "posts.0.settings.type must be one of the following values: public, private, unlisted"]
    assert messages_of(body(post("PIN", settings={"board": ""}))) == ["posts.0.settings.Board is required"]
    assert messages_of(body(post("PIN", settings={"title": "t" * 101}))) == [
        "posts.0.settings.title must be shorter than or equal to 100 characters"] + [
        "posts.0.settings.Board is required"] * 3
    assert messages_of(body(post("TT", settings={"duet": True, "stitch": False, "comment": True,
                                                 "autoAddMusic": "no", "brand_content_toggle": False,
                                                 "brand_organic_toggle": False}))) == [
        "posts.0.settings.privacy_level must be a string",
        "posts.0.settings.privacy_level must be one of the following values: PUBLIC_TO_EVERYONE, "
        "MUTUAL_FOLLOW_FRIENDS, FOLLOWER_OF_CREATOR, SELF_ONLY",
        "posts.0.settings.content_posting_method must be a string",
        "posts.0.settings.content_posting_method must be one of the following values: DIRECT_POST, UPLOAD"]
    tiktok = messages_of(body(post("TT", settings={})))
    assert len(tiktok) == 10 and "posts.0.settings.duet must be a boolean value" in tiktok
    assert messages_of(body(post("X_ID", settings=X_OK), {"integration": {"id": "DRI"}, "value": [
        {"content": "x", "image": []}]})) == [
        "posts.1.settings.title should not be null or undefined", "posts.1.settings.Title is required",
        "posts.1.settings.title must be a string"]
    assert messages_of(body(post("DIS", settings={"channel": ""}), post("DIS", settings={"channel": 5}),
                            post("DIS"))) == [
        "posts.0.settings.channel must be longer than or equal to 1 characters",
        "posts.2.settings.channel should not be null or undefined", "posts.2.settings.channel must be a string",
        "posts.2.settings.channel must be longer than or equal to 1 characters"]
    assert messages_of(body(post("RED", settings={"subreddit": [{"value": {"subreddit": "r/a", "title": "H",
                                                                             "type": "link", "url": "nope",
                                                                             "is_flair_required": False}}]}))) == [
        "posts.0.settings.subreddit.0.value.title must be longer than or equal to 2 characters",
        "posts.0.settings.subreddit.0.value.Invalid URL", "posts.0.settings.subreddit.0.value.url must be a URL address"]
    assert messages_of(body(post("RED", settings={}))) == ["posts.0.settings.subreddit must contain at least 1 elements"]
    assert messages_of(body(post("RED", settings={"subreddit": [{}]}))) == [
        "posts.0.settings.subreddit.0.value should not be null or undefined"]


def test_scalars_are_converted_as_nest_does_before_validation():
    plan = validate_create_post(body(post("BSKY", {"content": 42, "image": []}), shortLink="false", inter="3"),
                                CHANNELS.get, MEDIA_ORIGIN, no_uploads)
    # JavaScript's Boolean("false") is true: Postiz's ValidationPipe converts, and so does rustiz.
    assert (plan["shortLink"], plan["inter"], plan["posts"][0]["values"][0]["content"]) == (True, 3, "42")


def post_validation_error(payload: dict) -> dict:
    status, error = error_of(payload)
    assert status == 400
    return error


def test_a_post_needs_text_or_media_even_as_draft():
    for post_type in ("draft", "schedule"):
        assert post_validation_error(body(post("BSKY", "<p> </p>"), type=post_type)) == {
            "statusCode": 400, "provider": "bluesky", "name": "Sky",
            "message": "Your post should have at least one character or one image."}


def test_length_limits_unless_draft():
    assert validate_create_post(body(post("X_ID", "a" * 280, settings=X_OK)), CHANNELS.get, MEDIA_ORIGIN, no_uploads)
    assert post_validation_error(body(post("X_ID", "<p>" + "a" * 281 + "</p>", settings=X_OK))) == {
        "statusCode": 400, "provider": "x", "name": "Acme on X", "message": "post is too long, please fix it"}
    assert validate_create_post(body(post("X_ID", "a" * 281, settings=X_OK), type="draft"), CHANNELS.get, MEDIA_ORIGIN, no_uploads)
    assert validate_create_post(body(post("XV_ID", "a" * 4000, settings=X_OK)), CHANNELS.get, MEDIA_ORIGIN, no_uploads)
    assert post_validation_error(body(post("XV_ID", "a" * 4001, settings=X_OK)))["message"] == (
        "post is too long, please fix it")
    article = {"post_type": "article", "article_title": "Long read", "article_status": "published"}
    # Postiz takes an X article of any length; rustiz cannot publish articles, so it says so before accepting one.
    assert post_validation_error(body(post("X_ID", "<p>" + "a" * 100000 + "</p>", settings=article)))["message"] == (
        "rustiz does not publish X articles yet: set post_type to post")
    # Bluesky's length is counted once, by its descriptor's rule (graphemes of the text it receives): in its words.
    assert post_validation_error(body(post("BSKY", "Hello", "b" * 301)))["message"] == (
        "Bluesky allows 300 characters (graphemes) per post; thread part 2 has 301: shorten it or split it into "
        "thread parts")


def test_media_rules_unless_draft():
    settings = {"title": "My video", "type": "public"}
    assert post_validation_error(body(post("YT", settings=settings)))["message"] == "You need one media"
    picture = {"content": "x", "image": [{"id": "p", "path": "https://h/p.png"}]}
    assert post_validation_error(body(post("YT", picture, settings=settings)))["message"] == "Item must be a video"
    assert validate_create_post(body(post("YT", settings=settings), type="draft"), CHANNELS.get, MEDIA_ORIGIN, no_uploads)
    five = {"content": "x", "image": [{"id": str(n), "path": f"https://h/{n}.png"} for n in range(5)]}
    assert post_validation_error(body(post("BSKY", five)))["message"] == "There can be maximum 4 pictures in a post."


@pytest.mark.parametrize("channel_id, settings, images, message", [
    ("PIN", {"board": "1"}, [], "Requires at least one media"),
    ("PIN", {"board": "1"}, ["v.mp4"], "If posting a video you have to also include a cover image as second media"),
    ("TT", {"privacy_level": "SELF_ONLY", "duet": False, "stitch": False, "comment": False, "autoAddMusic": "no",
            "brand_content_toggle": False, "brand_organic_toggle": False, "content_posting_method": "UPLOAD"},
     ["a.png", "v.mp4"], "Only pictures are supported when selecting multiple items"),
    ("RED", {"subreddit": [{"value": {"subreddit": "r/pics", "title": "Look", "type": "image",
                                      "is_flair_required": False}}]}, [],
     "When posting a media post, you must attached exactly one media file."),
    ("X_ID", {"who_can_reply_post": "everyone", "post_type": "article", "article_title": "T",
              "article_status": "published"}, ["v.mp4"], "X articles only support images"),
])
def test_provider_media_rules(channel_id, settings, images, message):
    value = {"content": "x", "image": [{"id": str(n), "path": f"https://h/{name}"} for n, name in enumerate(images)]}
    assert post_validation_error(body(post(channel_id, value, settings=settings)))["message"] == message


def test_content_is_sanitised_in_the_plan():
    plan = validate_create_post(body(post("BSKY", '<p onclick="x()">Hi <img src=x><script>alert(1)</script></p>')),
                                CHANNELS.get, MEDIA_ORIGIN, no_uploads)
    assert plan["posts"][0]["values"][0]["content"] == "<p>Hi </p>"


# --- text helpers ----------------------------------------------------------------

@pytest.mark.parametrize("html, expected", [
    ("<p>Hello <strong>world</strong></p>", "<p>Hello <strong>world</strong></p>"),
    ("plain & simple < 3", "plain &amp; simple &lt; 3"),
    ("<div><b>bold</b> <em>it</em></div>", "bold it"),
    ("<p>a<style>p{}</style><svg><text>b</text></svg>c</p>", "<p>ac</p>"),
    ('<a href="javascript:alert(1)" target="_blank" rel="noopener" title="t">x</a>',
     '<a target="_blank" rel="noopener">x</a>'),
    ('<a href="https://example.com/?a=1&amp;b=&quot;2&quot;">x</a>', '<a href="https://example.com/?a=1&amp;b=&quot;2&quot;">x</a>'),
    ('<a href="mailto:me@example.com">m</a><a href="/in">i</a><a href="#t">t</a>',
     '<a href="mailto:me@example.com">m</a><a href="/in">i</a><a href="#t">t</a>'),
    ('<span class="mention" data-mention-id="7" data-mention-label="Ann" style="color:red">@Ann</span>',
     '<span class="mention" data-mention-id="7" data-mention-label="Ann">@Ann</span>'),
    ("<ul><li>one<li>two</ul><h1>T", "<ul><li>one</li><li>two</li></ul><h1>T</h1>"),
    ("<p>one<p>two<ul><li>a<ul><li>b</ul></ul>", "<p>one</p><p>two</p><ul><li>a<ul><li>b</li></ul></li></ul>"),
    ("line<br>next<br/>end</br>", "line<br>next<br>end<br>"),
    ("<!-- note -->x&nbsp;y", "x&nbsp;y"),
])
def test_sanitiser_keeps_only_what_postiz_allows(html, expected):
    assert sanitize_html(html) == expected


def test_strip_html_removes_tags_like_striptags():
    assert strip_html("<p>Hello <a href='x>y'>you</a></p><p>&amp;</p>") == "Hello you&amp;"
    assert strip_html("a <b") == "a "
    assert strip_html("") == ""


@pytest.mark.parametrize("text, weighted", [
    ("hello", 5),
    ("日本語", 6),  # CJK weighs 2
    ("é", 1),
    ("😀", 2),
    ("👨‍👩‍👧", 2),  # one emoji joined from several code points
    ("👍🏽 ok", 5),
    ("see https://example.com/a/very/long/path?with=query", 4 + 23),
])
def test_x_weighted_length(text, weighted):
    assert x_weighted_length(text) == weighted


def test_post_length_uses_the_right_limit():
    assert post_length("x", "<p>日本</p>", []) == (4, 280)
    assert post_length("x", "abc", [{"title": "Verified", "value": True}]) == (3, 4000)
    assert post_length("x", "abc", [{"title": "Verified", "value": False}]) == (3, 280)
    assert post_length("bluesky", "<p>日本</p>", []) == (2, 300)
    assert post_length("no-such-provider", "abc", []) == (3, 0)
