"""The provider catalogue: one descriptor per provider, the single source the server and the web app read.

Every provider rustiz knows (Postiz's 35, then its own webhook) is one ProviderDescriptor entry of
_DESCRIPTORS: identifier, Postiz's name and rustiz's label, how its text is counted and its length limits,
Postiz's rules, media rule, settings (a tuple of Field, from which both the JSON Schema of
integration-settings and the checks of POST /posts derive) and helper tools; and, for a provider rustiz
connects, its publisher module and its credentials (the keys with their labels and checks, a guide, how
they name the account). Everything else is derived from these entries: PROVIDERS (Postiz's),
CREDENTIAL_SPECS, publishers.PROVIDER_MODULES, GET /public/v1/providers, MCP's list of platforms.

Rules:
- Data and pure checks only: nothing here reaches a platform (publishers/ do) or the database.
- Patterns stay text until first used, so that importing this module compiles none.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, NamedTuple, Optional, Union

from rustiz import NAME_MAX_LENGTH, bad_request, sha256
from .bech32 import bech32_payload
from .text import counted_length


# Postiz describes every provider by a settings DTO (class-validator decorators). rustiz describes
# each DTO once, as a tuple of Field, and derives from it both the JSON Schema that
# integration-settings returns (what class-validator-jsonschema 5.1 generates) and the validation
# of POST /posts with class-validator 0.14's messages, prefixed by Nest's ValidationPipe.


class Field(NamedTuple):
    """One DTO property. `kind`: string, date (an ISO 8601 string), boolean, number, object (nested) or array.

    In the JSON Schema, a property is `required` unless optional or conditional (`when`), as
    class-validator-jsonschema decides; `defined` (@IsDefined) adds "not": {"type": "null"}."""
    name: str
    kind: str
    defined: bool = False  # @IsDefined: "should not be null or undefined"
    optional: bool = False  # @IsOptional: null/undefined skips every other check
    when: Optional[Callable[[dict], bool]] = None  # @ValidateIf(parent): false skips every check
    enum: Optional[tuple] = None
    min_length: Optional[int] = None
    max_length: Optional[int] = None
    pattern: Optional[str] = None
    url: bool = False
    minimum: Optional[float] = None
    maximum: Optional[float] = None
    fields: tuple = ()  # properties of a nested object, or of each array item when items == "object"
    items: Optional[str] = None  # array element kind: "object", "string" or "number"
    min_items: Optional[int] = None
    max_items: Optional[int] = None
    # The order of the checks' messages after "defined" (class-validator reports them in the reverse
    # order of the decorators in Postiz's source); "type" is the check of `kind`. () = DEFAULT_ORDER,
    # where an enum property has no type check (Postiz mostly writes a bare @IsIn).
    order: tuple = ()
    custom: Optional[dict] = None  # check -> Postiz's own message, which does not name the property
    description: Optional[str] = None
    extra_check: Optional[Callable[[Any, dict], Optional[str]]] = None  # custom @Validate: (value, parent) -> message


DEFAULT_ORDER = ("enum", "min_length", "max_length", "pattern", "url", "minimum", "maximum", "min_items", "max_items",
                  "items", "extra", "type")


def text_field(name: str, **options: Any) -> Field:
    return Field(name, "string", **options)


def _required_text(name: str, min_length: Optional[int] = None, **options: Any) -> Field:
    """Postiz's usual required string: @IsString() @MinLength(n) @IsDefined()."""
    return Field(name, "string", defined=True, min_length=min_length, **options)


def flag_field(name: str, **options: Any) -> Field:
    return Field(name, "boolean", **options)


def _choice(name: str, values: str, **options: Any) -> Field:
    return Field(name, "string", enum=tuple(values.split()), **options)


def _optional_url(name: str) -> Field:
    return Field(name, "string", optional=True, url=True, order=("url", "type"))


# Patterns of this module are kept as text: re compiles (and caches) each one the first time a post
# needs it, so a server that never receives a post does not pay for them at start-up.
_MEDIA_EXTENSION = r"(?i)\.(?:png|jpe?g|gif|webp|mp4)$"
MEDIA_EXTENSION_MESSAGE = "File must have a valid extension: .png, .jpg, .jpeg, .gif, .webp, or .mp4"
# Postiz's canonical-URL check for articles (medium, devto, hashnode), a link to one of the post's
# other channels ("(post:...)") aside.
_CANONICAL_URL = (r"^(|https?:\/\/(?:www\.|(?!www))[a-zA-Z0-9][a-zA-Z0-9-]+[a-zA-Z0-9]\.[^\s]{2,}|www\.[a-zA-Z0-9]"
                  r"[a-zA-Z0-9-]+[a-zA-Z0-9]\.[^\s]{2,}|https?:\/\/(?:www\.|(?!www))[a-zA-Z0-9]+\.[^\s]{2,}|www\."
                  r"[a-zA-Z0-9]+\.[^\s]{2,})$")


def _media_path_problem(path: Any, media: dict) -> Optional[str]:
    """Postiz only takes media whose path (before any query string) ends in an extension it can publish."""
    if isinstance(path, str) and re.search(_MEDIA_EXTENSION, path.split("?", 1)[0]):
        return None
    return MEDIA_EXTENSION_MESSAGE


_UPLOAD_PATH = r"/uploads/(\d{4}/\d{2}/\d{2}/[^/]+)\Z"  # rustiz's (and Postiz's) uploads: /uploads/YYYY/MM/DD/name


def upload_relative_path(url: str) -> Optional[str]:
    """"YYYY/MM/DD/name" when `url` names a file of the uploads folder (/uploads/YYYY/MM/DD/name, on any
    host or none), else None."""
    from urllib.parse import urlsplit
    try:
        match = re.search(_UPLOAD_PATH, urlsplit(url).path)
    except ValueError:  # a malformed URL: whoever fetches it says what is wrong with it
        return None
    return match[1] if match else None


MEDIA_FIELDS = (Field("id", "string", defined=True), Field("path", "string", defined=True,
                                                              extra_check=_media_path_problem),
                 text_field("alt", optional=True), _optional_url("thumbnail"))
_TAG_FIELDS = (text_field("value"), text_field("label"))  # provider tags: @IsString only
_NO_SETTINGS = "No additional settings required"


def _media(name: str, **options: Any) -> Field:
    return Field(name, "object", optional=True, fields=MEDIA_FIELDS, **options)


def _canonical(name: str) -> Field:
    return Field(name, "string", optional=True, pattern=_CANONICAL_URL, custom={"pattern": "Invalid URL"},
                  when=lambda settings: bool(settings.get(name)) and "(post:" not in str(settings.get(name)))


def _not_article(settings: dict) -> bool:
    return settings.get("post_type") != "article"


def _is_article(settings: dict) -> bool:
    return settings.get("post_type") == "article"


def _youtube_tags_too_long(tags: Any, settings: dict) -> Optional[str]:
    """Postiz counts every label, plus 2 for a label with whitespace (YouTube quotes it), up to 500."""
    if not isinstance(tags, list):
        return None
    total = 0
    for tag in tags:
        label = str(tag.get("label", "")) if isinstance(tag, dict) else ""
        total += len(label) + (2 if re.search(r"\s", label) else 0)
    return "The maximum allowed is 500 characters in total for all tags." if total > 500 else None


# The largest whole number every JSON reader (JavaScript's too) holds exactly: the bound of ids sent as numbers.
MAX_SAFE_INTEGER = 2**53 - 1


def _whole_in(value: Any, low: int, high: int) -> bool:
    return is_number(value) and value == int(value) and low <= value <= high


def whole_number_check(name: str, low: int, high: int, what: str) -> Callable[[Any, dict], Optional[str]]:
    """An extra_check: `name` is a whole number from `low` to `high` (what is no number at all fails the
    number check itself, with class-validator's message)."""
    def check(value: Any, parent: dict) -> Optional[str]:
        if not is_number(value) or _whole_in(value, low, high):
            return None
        return f"{name} must be {what}: a whole number from {low} to {high}"
    return check


def _whole_numbers_check(name: str, low: int, high: int, what: str) -> Callable[[Any, dict], Optional[str]]:
    """An extra_check for an array of numbers: each a whole number from `low` to `high`."""
    def check(values: Any, parent: dict) -> Optional[str]:
        if not isinstance(values, list) or all(_whole_in(value, low, high) for value in values if is_number(value)):
            return None
        return f"each value in {name} must be {what}: a whole number from {low} to {high}"
    return check


_X_FIELDS = (
    Field("community", "string", optional=True, pattern=r"^(https:\/\/x\.com\/i\/communities\/\d+)?$",
           custom={"pattern": "Invalid X community URL. It should be in the format: "
                              "https://x.com/i/communities/1493446837214187523"}),
    _choice("who_can_reply_post", "everyone following mentionedUsers subscribers verified", when=_not_article),
    _choice("post_type", "post article", optional=True, description=(
        "post = a regular short post (plain text). article = a long-form X article: write the post content as "
        "HTML (p, h1, h2, h3, ul, ol, li, strong, u, a) - the formatting is kept in the article")),
    text_field("article_title", min_length=1, when=_is_article,
          description="The title of the article, required when post_type is article"),
    _choice("article_status", "draft published", when=_is_article, description=(
        "draft = save the article as a draft on X, published = publish it right away, required when post_type "
        "is article")),
    _media("article_cover", description="Optional cover image for the article, only used when post_type is article"),
    flag_field("made_with_ai", optional=True), flag_field("paid_partnership", optional=True))
_LINKEDIN_FIELDS = (flag_field("post_as_images_carousel", optional=True), text_field("carousel_name", optional=True))
_REDDIT_VALUE_FIELDS = (
    _required_text("subreddit", 2), _required_text("title", 2), _required_text("type", 2),
    Field("url", "string", defined=True, url=True, pattern=_CANONICAL_URL, custom={"pattern": "Invalid URL"},
           order=("pattern", "url"),
           when=lambda value: value.get("type") == "link" and "(post:" not in str(value.get("url"))),
    flag_field("is_flair_required", defined=True),
    Field("flair", "object", when=lambda value: bool(value.get("is_flair_required")), defined=True,
           fields=(_required_text("id"), _required_text("name"))))
_LEMMY_VALUE_FIELDS = (_required_text("subreddit", 2), _required_text("id"), _required_text("title", 2),
                       _optional_url("url"))


def _value_list(fields: tuple, min_items: Optional[int]) -> Field:
    """Reddit, Lemmy and Farcaster nest each entry as {"value": {...}} (@ArrayMinSize, no @IsArray)."""
    value = Field("value", "object", defined=True, fields=fields)
    return Field("subreddit", "array", items="object", fields=(value,), min_items=min_items, order=("min_items",))


_PLAYBACK = (_required_text("id"), text_field("title", optional=True), text_field("artist", optional=True),
             text_field("image", optional=True), Field("audio_volume", "number", optional=True, minimum=0, maximum=100),
             Field("video_volume", "number", optional=True, minimum=0, maximum=100))
_INSTAGRAM_FIELDS = (
    _choice("post_type", "post story", defined=True), flag_field("is_trial_reel", optional=True),
    _choice("graduation_strategy", "MANUAL SS_PERFORMANCE", optional=True),
    Field("collaborators", "array", optional=True, items="object", fields=(_required_text("label"),)),
    Field("audio", "object", optional=True, fields=_PLAYBACK))
_FACEBOOK_FIELDS = (_optional_url("url"), _choice("post_type", "post story", optional=True),
                    text_field("text_format_preset_id", optional=True))
_YOUTUBE_FIELDS = (
    _required_text("title", 2, max_length=100), _choice("type", "public private unlisted", defined=True),
    _choice("selfDeclaredMadeForKids", "yes no", optional=True), _media("thumbnail"),
    Field("tags", "array", optional=True, items="object", fields=_TAG_FIELDS, extra_check=_youtube_tags_too_long))
_TIKTOK_FIELDS = (
    text_field("title", max_length=90, when=lambda settings: bool(settings.get("title"))),
    _choice("privacy_level", "PUBLIC_TO_EVERYONE MUTUAL_FOLLOW_FRIENDS FOLLOWER_OF_CREATOR SELF_ONLY",
            order=("type", "enum")),
    flag_field("duet"), flag_field("stitch"), flag_field("comment"), _choice("autoAddMusic", "yes no"),
    flag_field("brand_content_toggle"), flag_field("brand_organic_toggle"), flag_field("video_made_with_ai", optional=True),
    _choice("content_posting_method", "DIRECT_POST UPLOAD", order=("type", "enum")),
    Field("music", "object", optional=True, fields=_PLAYBACK),
    Field("location", "object", optional=True,
           fields=(_required_text("id"), _required_text("name"), text_field("address", optional=True))))


def _if_given(name: str, **options: Any) -> Field:
    """Pinterest's optional fields: @IsString() @ValidateIf((o) => !!o.name)."""
    return Field(name, "string", when=lambda settings: bool(settings.get(name)), **options)


_PINTEREST_FIELDS = (
    _if_given("title", max_length=100), _if_given("link", url=True, order=("url", "type")), _if_given("dominant_color"),
    _required_text("board", 1, custom=dict.fromkeys(("defined", "min_length", "type"), "Board is required")))
_DRIBBBLE_FIELDS = (_required_text("title", 1, custom={"min_length": "Title is required"}), _optional_url("team"))
_CHANNEL_FIELDS = (_required_text("channel", 1, order=("type", "min_length")),)
_TWITCH_FIELDS = (_choice("messageType", "message announcement", optional=True),
                  _choice("announcementColor", "primary blue green orange purple", optional=True))
_MEDIUM_FIELDS = (
    _required_text("title", 2), _required_text("subtitle", 2), _canonical("canonical"),
    text_field("publication", optional=True), Field("tags", "array", optional=True, max_items=4))
_DEVTO_FIELDS = (
    _required_text("title", 2), _media("main_image"), _canonical("canonical"), text_field("organization", optional=True),
    Field("tags", "array", items="object", max_items=4, fields=(
        Field("value", "number", extra_check=whole_number_check("value", 0, MAX_SAFE_INTEGER, "a Dev.to tag id")),
        text_field("label"))))
_HASHNODE_FIELDS = (
    _required_text("title", 6), text_field("subtitle", optional=True, min_length=2), _media("main_image"),
    _canonical("canonical"), _required_text("publication"),
    Field("tags", "array", items="object", fields=_TAG_FIELDS, min_items=1))
_WORDPRESS_FIELDS = (
    _required_text("title", 2), _media("main_image"), _required_text("type"),
    *(Field(name, "array", optional=True, items="number",
             extra_check=_whole_numbers_check(name, 1, MAX_SAFE_INTEGER, "a WordPress term id"))
      for name in ("categories", "tags")),
    _choice("status", "publish draft pending private", optional=True, order=("enum", "type")))
_LISTMONK_FIELDS = (_required_text("subject", 1), _required_text("preview"), _required_text("list"),
                    text_field("template", optional=True))
_GMB_FIELDS = (
    _choice("topicType", "STANDARD EVENT OFFER", optional=True),
    _choice("callToActionType", "NONE BOOK ORDER SHOP LEARN_MORE SIGN_UP GET_OFFER CALL", optional=True),
    _optional_url("callToActionUrl"),
    *(text_field(name, optional=True) for name in ("eventTitle", "eventStartDate", "eventEndDate", "eventStartTime",
                                               "eventEndTime", "offerCouponCode")),
    _optional_url("offerRedeemUrl"), text_field("offerTerms", optional=True))
_SKOOL_FIELDS = tuple(_required_text(name, 1) for name in ("group", "label", "title"))
_WHOP_FIELDS = (_required_text("company", 1), _required_text("experience", 1), text_field("title", optional=True))
_MEWE_FIELDS = (_choice("postType", "timeline group", defined=True),
                _required_text("group", when=lambda settings: settings.get("postType") == "group"))
_TUMBLR_FIELDS = (text_field("title", optional=True, min_length=1, max_length=4096), _optional_url("link"),
                  _optional_url("sourceUrl"), text_field("tags", optional=True, max_length=4096),
                  # rustiz's own (Postiz always publishes): where the post lands, in Tumblr's words
                  _choice("state", "published queue draft private", optional=True, description=(
                      "rustiz: published (the default), queue (the end of the blog's queue), draft or private")))

def _field_schema(field: Field) -> dict:
    """The JSON Schema class-validator-jsonschema 5.1 generates for one property."""
    if field.kind == "object":
        schema = _object_schema(field.fields)
    elif field.kind == "array":
        schema = {"type": "array"}
        if field.items:
            schema = {"items": _object_schema(field.fields) if field.items == "object" else {"type": field.items},
                      "type": "array"}
        if field.min_items is not None:
            schema["minItems"] = field.min_items
        if field.max_items is not None:
            schema["maxItems"] = field.max_items
    else:
        schema = {}
        for key, value in (("minLength", field.min_length), ("maxLength", field.max_length),
                           ("pattern", field.pattern), ("format", "url" if field.url else None)):
            if value is not None:
                schema[key] = value
        schema["type"] = "string" if field.kind == "date" else field.kind
        if field.enum:
            schema["enum"] = list(field.enum)
        for key, value in (("minimum", field.minimum), ("maximum", field.maximum)):
            if value is not None:
                schema[key] = value
    if field.defined:
        schema["not"] = {"type": "null"}
    if field.description:
        schema["description"] = field.description
    return schema


def _object_schema(fields: tuple) -> dict:
    schema = {"properties": {field.name: _field_schema(field) for field in fields}, "type": "object"}
    required = [field.name for field in fields if not field.optional and field.when is None]
    if required:
        schema["required"] = required
    return schema


# --- media rules before publishing (Postiz's checkValidity, §8.5) --------------------------------


def _is_video(media: Any) -> bool:
    return isinstance(media, dict) and "mp4" in str(media.get("path", ""))


def _videos(media: list) -> int:
    return sum(map(_is_video, media))


def _all_media(values: list) -> list:
    return [media for value in values for media in value["image"]]


# Each rule takes (settings, values) and returns Postiz's message for the first thing the post
# breaks, or None. `values[0]["image"]` is the main post's media; later values are comments/replies.


def _bluesky_rule(settings: dict, values: list) -> Optional[str]:
    for value in values:
        if _videos(value["image"]) > 1:
            return "You can only upload one video per post."
        if len(value["image"]) > 4:
            return "There can be maximum 4 pictures in a post."
    return None


def _dribbble_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if len(first) != 1:
        return "Requires one item"
    return "Does not support mp4 files" if _videos(first) else None


def _facebook_rule(settings: dict, values: list) -> Optional[str]:
    if settings.get("post_type") == "story" and not values[0]["image"]:
        return "Story should have at least one media"
    return None


def _farcaster_rule(settings: dict, values: list) -> Optional[str]:
    return "Can only accept images" if _videos(_all_media(values)) else None


def _gmb_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if len(first) > 1:
        return "Google My Business posts can only have one image"
    if _videos(first):
        return "Google My Business posts do not support video attachments"
    if settings.get("topicType") == "EVENT" and not settings.get("eventTitle"):
        return "Event posts require an event title"
    return None


def _instagram_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if not first:
        return "Should have at least one media"
    if len(first) > 10:
        return "Instagram carousel only supports up to 10 media attachments"
    if settings.get("is_trial_reel"):
        if len(first) != 1:
            return "Trial Reels can only have one video"
        if not _videos(first):
            return "Trial Reels must be a video"
    return None


def _lemmy_rule(settings: dict, values: list) -> Optional[str]:
    return "You can set only one picture for a cover" if len(values[0]["image"]) > 1 else None


def _linkedin_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if settings.get("post_as_images_carousel") and (len(first) < 2 or _videos(first)):
        return "Carousel can only be created with 2 or more images and no videos."
    if _videos(first) and len(first) > 1:
        return "Can have maximum 1 media when selecting a video."
    if any(value["image"] for value in values[1:]):
        return "Comments can only contain text."
    return None


def _pinterest_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if not first:
        return "Requires at least one media"
    if len(first) > 5:
        return "You can only have up to 5 media items"
    if _is_video(first[0]) and len(first) == 1:
        return "If posting a video you have to also include a cover image as second media"
    if _is_video(first[0]) and len(first) > 2:
        return "If posting a video you can only have two media items"
    return None


def _reddit_rule(settings: dict, values: list) -> Optional[str]:
    entries = settings.get("subreddit")
    for entry in entries if isinstance(entries, list) else ():
        value = entry.get("value") if isinstance(entry, dict) else None
        post_type = value.get("type") if isinstance(value, dict) else None
        media = values[0]["image"]
        # (a video goes with its poster image, which Reddit requires: two files)
        if post_type in ("image", "video", "videogif", "media") and len(media) != 1 \
                and not (len(media) == 2 and _videos(media) == 1):
            return "When posting a media post, you must attached exactly one media file."
    return None


def _tiktok_rule(settings: dict, values: list, most_pictures: Optional[int] = None) -> Optional[str]:
    first = values[0]["image"]
    if not first:
        return "No video / images selected"
    if len(first) > 1 and _videos(first):
        return "Only pictures are supported when selecting multiple items"
    if most_pictures is not None and len(first) > most_pictures:
        return f"You can select up to {most_pictures} pictures"
    return None


def _tiktok_business_rule(settings: dict, values: list) -> Optional[str]:
    return _tiktok_rule(settings, values, most_pictures=35)


def _tumblr_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if len(first) - _videos(first) > 30:
        return "Tumblr supports up to 30 images in one post."
    return "Tumblr supports one uploaded video in one post." if _videos(first) > 1 else None


def _x_rule(settings: dict, values: list) -> Optional[str]:
    if settings.get("post_type") != "article":
        return None
    if _videos(_all_media(values)):
        return "X articles only support images"
    if settings.get("article_status") == "draft" and len(values) > 1:
        return "A draft article cannot have thread replies, remove them or publish the article"
    return None


def _youtube_rule(settings: dict, values: list) -> Optional[str]:
    first = values[0]["image"]
    if len(first) != 1:
        return "You need one media"
    return None if _videos(first) else "Item must be a video"


# --- channels that connect with credentials (POST /integrations, `rustiz channel add`) -----------
# Providers that need no developer app: the user pastes credentials, rustiz stores them as the
# channel's token. Here they are checked for shape, and `CredentialSpec.account` derives what the
# credentials alone tell (the default channel name); then the publisher's `connect()` verifies them
# with the platform and reads the real account (its id, name, handle, avatar).
# Credentials never leave the store and are never logged.


class ChannelAccount(NamedTuple):
    """Who a channel posts as. `internal_id` identifies the account on its platform (one channel each)."""
    internal_id: str
    name: str
    profile: Optional[str]
    picture: Optional[str] = None


class NewChannel(NamedTuple):
    """A validated POST /integrations body: what Store.add_channel writes."""
    provider: str
    account: ChannelAccount
    credentials: dict
    customer: Optional[str]  # a group's id or name; a new group is made for an unknown name
    session: Optional[dict] = None  # the publisher's cached login, from connecting
    limits: Optional[dict] = None  # the account's own limits (Mastodon's instance), from connecting


def _secret_digest(secret: str) -> str:
    """A stand-in id derived from a secret (a webhook URL, an API key) that reveals nothing of it."""
    return sha256(secret.encode()).hexdigest()[:32]


def url_host(url: str) -> str:
    from urllib.parse import urlsplit
    return urlsplit(url).netloc.rpartition("@")[2].lower()


def masked_url(url: str) -> str:
    """A URL whose path or query may carry a token, as scheme://host/…last 4 characters: enough to tell two
    apart, not enough to call it (a user:password@ part is dropped)."""
    from urllib.parse import urlsplit
    parts = urlsplit(url)
    rest = url.split(parts.netloc, 1)[1] if parts.netloc else url
    rest = rest.removeprefix("/")
    return f"{parts.scheme}://{url_host(url)}/" + (f"…{rest[-4:]}" if rest else "")


def nostr_private_key_hex(key: str) -> Optional[str]:
    """A Nostr private key given as 64 hex digits or as NIP-19 `nsec1...`, as hex; None when it is neither."""
    if re.fullmatch(r"[0-9a-fA-F]{64}", key):
        return key.lower()
    payload = bech32_payload(key, "nsec")
    return payload.hex() if payload is not None and len(payload) == 32 else None


def _string_problem(value: Any) -> Optional[str]:
    """JSON can carry a lone surrogate ("\\ud800"), which is no text SQLite can store."""
    if not isinstance(value, str):
        return "must be a string"
    try:
        value.encode()
    except UnicodeEncodeError:
        return "must be Unicode text (it contains a lone surrogate such as \\ud800)"
    return None


def url_problem(value: Any, schemes: tuple) -> Optional[str]:
    """What is wrong with a URL a tenant gave (a webhook, an instance, a relay...), or None: the same
    check the outbound client makes (http_client), so that what is accepted here can be connected to."""
    problem = _string_problem(value)
    if problem:
        return problem
    from .http_client import parsed_url  # (the catalogue itself loads no outbound client: the scheduler reads it)
    try:
        parsed_url(value, schemes)
    except ValueError as error:
        return str(error)
    return None


def text_problem(value: Any) -> Optional[str]:
    return _string_problem(value) or (None if value.strip() else "should not be empty")


def _relays_problem(value: Any) -> Optional[str]:
    if not isinstance(value, list):
        return "must be an array"
    return None if value else "must contain at least 1 elements"


def _telegram_chat_problem(value: Any) -> Optional[str]:
    if type(value) is int or (isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value)):
        # Telegram's chat ids have at most 52 significant bits; text is measured before int() reads it.
        if len(str(value).lstrip("-0")) <= 16 and abs(int(value)) <= MAX_SAFE_INTEGER:
            return None
        return f"must be a Telegram chat id: a whole number from {-MAX_SAFE_INTEGER} to {MAX_SAFE_INTEGER}"
    if isinstance(value, str) and re.fullmatch(r"@[A-Za-z][A-Za-z0-9_]{3,}", value):
        return None
    return "must be a numeric chat id (like -1001234567890) or a public @channelname"


_CREDENTIAL_CHECKS: dict = {
    "text": text_problem,
    "http_url": lambda value: url_problem(value, ("http", "https")),
    "relays": _relays_problem,
    "telegram_bot_token": lambda value: text_problem(value) or (
        None if re.fullmatch(r"[0-9]+:[A-Za-z0-9_-]{20,}", value) else "must look like 123456789:AAE... "
                                                                    "(the token @BotFather gave you)"),
    "telegram_chat": _telegram_chat_problem,
    "nostr_key": lambda value: text_problem(value) or (
        None if nostr_private_key_hex(value) else "must be a private key: 64 hex digits or an nsec1... string"),
}


def _login_account(url_key: str, user_key: str, name: Callable[[str, str], str]) -> Callable[[dict], ChannelAccount]:
    """A self-hosted platform's account: the user on that host (the same user elsewhere is another account)."""
    def account(credentials: dict) -> ChannelAccount:
        host, user = url_host(credentials[url_key]), credentials[user_key].strip()
        return ChannelAccount(f"{host}/{user.lower()}", name(host, user), user)
    return account


def secret_account(key: str, name: Callable[[dict], str]) -> Callable[[dict], ChannelAccount]:
    """An account known only by a secret (API key, webhook URL): its digest tells two apart."""
    return lambda credentials: ChannelAccount(_secret_digest(credentials[key]), name(credentials), None)


def _telegram_account(credentials: dict) -> ChannelAccount:
    chat = str(credentials["chatId"])
    bot = credentials["botToken"].partition(":")[0]  # the bot's numeric id; the rest is the secret
    return ChannelAccount(f"{bot}/{chat}", f"Telegram {chat}", chat if chat.startswith("@") else None)


def _nostr_account(credentials: dict) -> ChannelAccount:
    # The real account (the public key, the relays' profile) is read by the Nostr publisher's connect().
    digest = _secret_digest(nostr_private_key_hex(credentials["password"]))
    return ChannelAccount(digest, f"Nostr key {digest[:8]}", None)


def _mastodon_account(credentials: dict) -> ChannelAccount:
    host = url_host(credentials["instance"])
    return ChannelAccount(f"{host}/{_secret_digest(credentials['accessToken'])}", host, None)


# Stock Mastodon's (Pixelfed's and Friendica's defaults alike); a server tells its own when connected.
_MASTODON_LIMITS = {"maxMedia": 4, "charactersReservedPerUrl": 23}


# --- the descriptors: one per provider ----------------------------------------------------------------


class CredentialKey(NamedTuple):
    """One key of a provider's `credentials` object: how the server checks it, how the web app asks for it."""
    name: str
    kind: str  # its check in _CREDENTIAL_CHECKS (text, http_url, relays...); "relays" is a list
    label: str
    input: str  # the connect form's input: url, text, secret, or list (one item a line)
    placeholder: str = ""
    help: str = ""  # a hint under the input
    required: bool = True


class CredentialSpec(NamedTuple):
    """How a channel of the provider is connected with pasted credentials."""
    keys: tuple  # of CredentialKey, in the order the form shows them and errors are reported
    account: Callable[[dict], ChannelAccount]  # what the credentials alone tell of the account
    guide: str  # one line: where to get them
    # A webhook's URL is the account: new credentials for a channel may name another one (a new webhook in
    # place of a deleted one); for the others they must be the channel's own account.
    account_is_credentials: bool = False


class ProviderDescriptor(NamedTuple):
    """Everything rustiz knows about one provider, read by validation, the publishers, the API, MCP and the
    web app (through GET /public/v1/providers)."""
    identifier: str  # Postiz's, the `__type` of its settings
    name: str  # Postiz's UI name, as its catalogue has it
    label: str  # the platform's name in rustiz's forms and messages ("Failed on Listmonk ...")
    editor: str  # normal, html or markdown: how the Postiz editor writes content for it
    max_length: int  # Postiz's maxLength, counted by `counting`; 0: no limit of its own
    counting: str  # how its text is counted: one of text.COUNTING_RULES
    limits: dict  # more limits, with the names a channel's own (from connecting) overrides them by
    rules: str  # Postiz's rules text
    media_rule: Optional[Callable[[dict, list], Optional[str]]]  # Postiz's checkValidity: (settings, values)
    settings: Union[dict, str]  # the JSON Schema of its settings, or Postiz's "No additional settings required"
    tools: list  # helper tools: [{methodName, description, dataSchema}]
    dto: tuple  # of Field: the settings POST /posts checks; () when Postiz validates nothing but __type
    publisher: Optional[str]  # its module in publishers/; None: rustiz cannot connect it yet
    credentials: Optional[CredentialSpec]  # None: not connectable with credentials
    postiz: bool  # one of Postiz's providers (integration-settings and MCP describe only those)
    oauth: bool = False  # connected by consent on the platform (GET /social/:integration), see connect.py


def _describe(identifier: str, name: str, max_length: int, dto: tuple = (), *, schema_shown: bool = True,
              editor: str = "normal", counting: str = "characters", limits: Optional[dict] = None, rules: str = "",
              media_rule: Optional[Callable] = None, tools: tuple = (), label: str = "",
              publisher: Optional[str] = None, credentials: Optional[CredentialSpec] = None,
              postiz: bool = True, oauth: bool = False) -> ProviderDescriptor:
    """A descriptor; `tools` as (methodName, description, keys of its dataSchema), `schema_shown`: whether
    integration-settings shows the DTO's schema (else "No additional settings required")."""
    settings: Union[dict, str] = _object_schema(dto) if schema_shown else _NO_SETTINGS
    if identifier == "youtube":  # a quirk of the generator, kept because clients may look for it
        settings["properties"]["tags"]["$ref"] = "#/definitions/Array"
    tool_list = [{"methodName": method, "description": description,
                  "dataSchema": [{"key": key, "type": "string", "description": key} for key in keys]}
                 for method, description, keys in tools]
    return ProviderDescriptor(identifier, name, label or name.replace("\n", " "), editor, max_length, counting,
                              limits or {}, rules, media_rule, settings, tool_list, dto, publisher, credentials,
                              postiz, oauth)


def _url_key(name: str, label: str, placeholder: str = "", **options: Any) -> CredentialKey:
    return CredentialKey(name, "http_url", label, "url", placeholder, **options)


def _text_key(name: str, label: str, placeholder: str = "", kind: str = "text", **options: Any) -> CredentialKey:
    return CredentialKey(name, kind, label, "text", placeholder, **options)


def _secret_key(name: str, label: str, placeholder: str = "", kind: str = "text", **options: Any) -> CredentialKey:
    return CredentialKey(name, kind, label, "secret", placeholder, **options)


# Postiz's rules texts (§8.2) that two providers share.
_LINKEDIN_RULES = ("LinkedIn can have maximum one attachment when selecting video, when choosing a carousel on LinkedIn "
                   "minimum amount of attachment must be two, and only pictures, if uploading a video, LinkedIn can "
                   "have only one attachment")
_INSTAGRAM_RULES = "Instagram should have at least one attachment, if it's a story, it can have only one picture"

# Postiz's 35 providers in its order, then rustiz's own. A provider rustiz connects names its publisher
# module and its credentials; adding a platform is its entry here and its module in publishers/.
_DESCRIPTORS = (
    _describe("x", "X", 280, _X_FIELDS, editor="html", counting="x-weighted", media_rule=_x_rule,
              limits={"verifiedMaxLength": 4000}, oauth=True, publisher="x",  # verified: a channel marked Verified (X premium)
              rules=("X can have maximum 4 pictures, or maximum one video, it can also be without attachments, it can "
                     "also be published as a long-form article (draft or published) when post_type is set to "
                     "article ")),
    _describe("linkedin", "LinkedIn", 3000, _LINKEDIN_FIELDS, schema_shown=False, rules=_LINKEDIN_RULES,
              media_rule=_linkedin_rule, oauth=True, publisher="linkedin"),
    _describe("linkedin-page", "LinkedIn Page", 3000, _LINKEDIN_FIELDS, schema_shown=False, rules=_LINKEDIN_RULES,
              media_rule=_linkedin_rule, oauth=True, publisher="linkedin_page"),
    _describe("reddit", "Reddit", 10000, (_value_list(_REDDIT_VALUE_FIELDS, 1),), media_rule=_reddit_rule,
              oauth=True, publisher="reddit",
              tools=(("subreddits", "Get list of subreddits with information", ("word",)),
                     ("restrictions", "Get list of flairs and restrictions for a subreddit", ("subreddit",)))),
    _describe("instagram", "Instagram\n(Facebook Business)", 2200, _INSTAGRAM_FIELDS, rules=_INSTAGRAM_RULES,
              media_rule=_instagram_rule, oauth=True, publisher="instagram",
              tools=(("audioSearch", 'Search audio (music or original sounds) to attach to a Reel via the "audio" '
                                     "setting, an empty query returns trending audio", ("q", "type")),)),
    _describe("instagram-standalone", "Instagram\n(Standalone)", 2200, _INSTAGRAM_FIELDS, rules=_INSTAGRAM_RULES,
              media_rule=_instagram_rule, oauth=True, publisher="instagram_standalone"),
    _describe("facebook", "Facebook Page", 63206, _FACEBOOK_FIELDS, media_rule=_facebook_rule, oauth=True, publisher="facebook",
              rules=("Facebook posts can be text only, or include photos or a video. If it's a story, it must have "
                     "at least one attachment (photo or video), and each media is published as a separate story.")),
    _describe("threads", "Threads", 500, schema_shown=False, oauth=True, publisher="threads"),
    _describe("youtube", "YouTube", 5000, _YOUTUBE_FIELDS, media_rule=_youtube_rule, oauth=True, publisher="youtube",
              rules="YouTube must have on video attachment, it cannot be empty"),
    _describe("gmb", "Google My Business", 1500, _GMB_FIELDS, media_rule=_gmb_rule, oauth=True, publisher="gmb",
              label="Google Business Profile",  # in rustiz's messages; Postiz's name stays "Google My Business"
              rules=("Google My Business posts can have text content and optionally one image. Posts can be "
                     "updates, events, or offers.")),
    _describe("tiktok", "Tiktok", 2000, _TIKTOK_FIELDS, media_rule=_tiktok_rule, oauth=True, publisher="tiktok",
              label="TikTok",  # in rustiz's messages; Postiz's name stays "Tiktok"
              rules=("TikTok can have one video or one picture or multiple pictures, it cannot be without an "
                     "attachment.")),
    _describe("tiktok-business", "TikTok", 2200, _TIKTOK_FIELDS, media_rule=_tiktok_business_rule, oauth=True,
              publisher="tiktok_business", label="TikTok Business",  # (Postiz's name stays "TikTok")
              tools=(("musicSearch", 'Load commercial music library tracks that can be attached to a post via the '
                                     '"music" setting', ("genre",)),
                     ("locationSearch", 'Search location tags that can be attached to a post via the "location" '
                                        "setting", ("q",))),
              rules=("TikTok Business can have one video or one picture or multiple pictures (up to 35), it cannot "
                     "be without an attachment.")),
    _describe("pinterest", "Pinterest", 500, _PINTEREST_FIELDS, media_rule=_pinterest_rule, oauth=True, publisher="pinterest",
              tools=(("boards", "List of boards", ()),),
              rules=("Pinterest requires at least one media, if posting a video, you must have two attachment, one "
                     "for video, one for the cover picture, When posting a video, there can be only one, if posting "
                     "images, there can be maximum 5")),
    _describe("dribbble", "Dribbble", 40000, _DRIBBBLE_FIELDS, media_rule=_dribbble_rule,
              tools=(("teams", "Teams list", ()),), oauth=True, publisher="dribbble"),
    _describe("discord", "Discord", 1980, _CHANNEL_FIELDS, editor="markdown", tools=(("channels", "Channels", ()),),
              publisher="discord", oauth=True, credentials=CredentialSpec(  # (the operator's app and bot, or a webhook)
                  (_url_key("webhookUrl", "Webhook URL", "https://discord.com/api/webhooks/…"),),
                  secret_account("webhookUrl", lambda credentials: "Discord webhook"),
                  "Edit Channel → Integrations → Webhooks → New Webhook → Copy Webhook URL.",
                  account_is_credentials=True)),
    _describe("slack", "Slack", 400000, _CHANNEL_FIELDS, tools=(("channels", "Get list of channels", ()),),
              publisher="slack", oauth=True, credentials=CredentialSpec(  # (the operator's app, or a webhook)
                  (_url_key("webhookUrl", "Webhook URL", "https://hooks.slack.com/services/…"),),
                  secret_account("webhookUrl", lambda credentials: "Slack webhook"),
                  "api.slack.com/apps → Create New App → Incoming Webhooks on → Add New Webhook to Workspace.",
                  account_is_credentials=True)),
    _describe("kick", "Kick", 500, schema_shown=False, oauth=True, publisher="kick"),
    _describe("twitch", "Twitch", 500, _TWITCH_FIELDS, oauth=True, publisher="twitch"),
    _describe("mastodon", "Mastodon", 500, schema_shown=False, counting="mastodon", limits=_MASTODON_LIMITS,
              publisher="mastodon", oauth=True, credentials=CredentialSpec(
                  (_url_key("instance", "Instance URL", "https://mastodon.social"),
                   _secret_key("accessToken", "Access token")),
                  _mastodon_account,
                  "Preferences → Development → New application, scopes read:accounts, write:statuses, write:media; "
                  "copy \"Your access token\". Any server speaking Mastodon's API (Pixelfed, Friendica, Pleroma, "
                  "GoToSocial...) connects here too; its own rules apply.")),
    _describe("bluesky", "Bluesky", 300, schema_shown=False, counting="graphemes", media_rule=_bluesky_rule,
              rules="Bluesky can have maximum 1 video or 4 pictures in one post, it can also be without attachments",
              publisher="bluesky", credentials=CredentialSpec(
                  (_url_key("service", "Service (PDS) URL", "https://bsky.social"),
                   _text_key("identifier", "Handle or e-mail", "alice.bsky.social"),
                   _secret_key("password", "App password", "xxxx-xxxx-xxxx-xxxx")),
                  _login_account("service", "identifier", lambda host, user: user),
                  "Settings → Privacy and security → App passwords → Add App Password; not your main password.")),
    _describe("lemmy", "Lemmy", 10000, (_value_list(_LEMMY_VALUE_FIELDS, 1),), media_rule=_lemmy_rule,
              tools=(("subreddits", "Search for Lemmy communities by keyword", ("word",)),),
              publisher="lemmy", credentials=CredentialSpec(
                  (_url_key("service", "Instance URL", "https://lemmy.world"),
                   _text_key("identifier", "Username or e-mail"), _secret_key("password", "Password")),
                  _login_account("service", "identifier", lambda host, user: f"{user}@{host}"),
                  "An account on a Lemmy 0.19+ instance with two-factor authentication off.")),
    _describe("wrapcast", "Farcaster", 800, (_value_list((_required_text("id"),), None),), media_rule=_farcaster_rule,
              rules="Farcaster/Warpcast can only accept pictures", tools=(("subreddits", "Search channels", ("word",)),),
              oauth=True, publisher="farcaster"),  # (issue 28, fedi: through Neynar, Sign In With Neynar)
    _describe("telegram", "Telegram", 4096, schema_shown=False, editor="html", counting="telegram-html",
              publisher="telegram", credentials=CredentialSpec(
                  (_secret_key("botToken", "Bot token", "123456789:AAE...", kind="telegram_bot_token"),
                   _text_key("chatId", "Chat id", "@mychannel or -100…", kind="telegram_chat",
                             help="A public channel's @name, or a private chat's number (-100… for a channel)")),
                  _telegram_account,
                  "Message @BotFather, /newbot, copy the token; make the bot an admin of the channel with "
                  "\"Post Messages\".")),
    _describe("nostr", "Nostr", 100000, schema_shown=False, publisher="nostr", credentials=CredentialSpec(
        (_secret_key("password", "Private key", "nsec1…", kind="nostr_key"),
         CredentialKey("relays", "relays", "Relays", "list", "wss://relay.damus.io", "One relay URL a line")),
        _nostr_account, "Your private key (nsec1… or hex) from your Nostr app, and the relays to publish to.")),
    _describe("vk", "VK", 2048, schema_shown=False, oauth=True, publisher="vk"),
    _describe("medium", "Medium", 100000, _MEDIUM_FIELDS, editor="markdown",
              tools=(("publications", "List of publications", ()),),
              publisher="medium", credentials=CredentialSpec(
                  (_secret_key("apiKey", "Integration token"),),
                  secret_account("apiKey", lambda credentials: "Medium account"),
                  "Medium no longer issues integration tokens: only one made before (Settings → Security and "
                  "apps → Integration tokens) works.")),
    _describe("devto", "Dev.to", 100000, _DEVTO_FIELDS, editor="markdown",
              tools=(("tags", "Tag list", ()), ("organizations", "Organization list", ())),
              publisher="devto", credentials=CredentialSpec(
                  (_secret_key("apiKey", "API key"),), secret_account("apiKey", lambda credentials: "Dev.to account"),
                  "dev.to Settings → Extensions → DEV Community API Keys → Generate API Key.")),
    _describe("hashnode", "Hashnode", 10000, _HASHNODE_FIELDS, editor="markdown",
              tools=(("tagsList", "Tags", ()), ("publications", "Publications", ())),
              publisher="hashnode", credentials=CredentialSpec(
                  (_secret_key("apiKey", "Personal access token"),),
                  secret_account("apiKey", lambda credentials: "Hashnode account"),
                  "hashnode.com Account settings → Developer → Generate new token.")),
    _describe("wordpress", "WordPress", 100000, _WORDPRESS_FIELDS, editor="html",
              tools=(("postTypes", "Get list of post types", ()), ("categoriesList", "Get list of categories", ()),
                     ("tagsList", "Get list of tags", ())),
              publisher="wordpress", credentials=CredentialSpec(
                  (_url_key("domain", "Site URL", "https://blog.example.com"), _text_key("username", "Username"),
                   _secret_key("password", "Application password")),
                  _login_account("domain", "username", lambda host, user: host),
                  "Users → Profile → Application Passwords → Add New Application Password (HTTPS sites).")),
    _describe("listmonk", "ListMonk", 100000000, _LISTMONK_FIELDS, editor="html", label="Listmonk",
              tools=(("list", "List of available lists", ()), ("templates", "List of available templates", ())),
              publisher="listmonk", credentials=CredentialSpec(
                  (_url_key("url", "Listmonk URL", "https://lists.example.com"), _text_key("username", "Username"),
                   _secret_key("password", "API token or password")),
                  _login_account("url", "username", lambda host, user: f"Listmonk at {host}"),
                  "Admin → Users → + New, type API; use its username and token (Listmonk 3: admin login).")),
    _describe("moltbook", "Moltbook", 300, (_required_text("submolt", 1),), schema_shown=False,
              publisher="moltbook", credentials=CredentialSpec(
                  (_secret_key("apiKey", "Agent API key", "moltbook_…"),),
                  secret_account("apiKey", lambda credentials: "Moltbook agent"),
                  "The API key your agent got when it registered on www.moltbook.com (and its human claimed it).")),
    _describe("whop", "Whop", 50000, _WHOP_FIELDS, editor="markdown", oauth=True, publisher="whop",
              tools=(("companies", "Companies", ()), ("experiences", "Experiences", ("id",)))),
    _describe("skool", "Skool", 5000, _SKOOL_FIELDS, tools=(("groups", "Groups", ()), ("label", "Label", ()))),
    _describe("mewe", "MeWe", 63206, _MEWE_FIELDS, tools=(("groups", "Groups", ()),)),
    _describe("tumblr", "Tumblr", 32768, _TUMBLR_FIELDS, media_rule=_tumblr_rule, oauth=True, publisher="tumblr"),
    # rustiz's own (issue 28, fedi): servers speaking Mastodon's API, named in the picker, published to by
    # mastodon_shared.py's provider (one-click sign-in only; pasted tokens go through the Mastodon entry)
    _describe("pixelfed", "Pixelfed", 500, schema_shown=False, counting="mastodon", limits=_MASTODON_LIMITS,
              postiz=False, publisher="pixelfed", oauth=True,
              rules="Pixelfed posts need at least one picture or video; comments (thread parts) may be text only"),
    _describe("friendica", "Friendica", 200000, schema_shown=False, counting="mastodon", limits=_MASTODON_LIMITS,
              postiz=False, publisher="friendica", oauth=True),
    # rustiz's own: POSTs each post as signed JSON to any URL
    _describe("webhook", "Webhook", 0, schema_shown=False, postiz=False, publisher="webhook",
              credentials=CredentialSpec(
                  (_url_key("url", "Receiver URL", "https://n8n.example.com/webhook/rustiz"),
                   _secret_key("secret", "Signing secret", required=False,
                               help="Signs each delivery (X-Rustiz-Signature), as outgoing webhooks are signed")),
                  secret_account("url", lambda credentials: f"Webhook to {url_host(credentials['url'])}"),
                  "Each post is POSTed as signed JSON to your URL (n8n, Zapier, your code); it must answer 2xx.",
                  account_is_credentials=True)),
)

DESCRIPTORS: dict = {descriptor.identifier: descriptor for descriptor in _DESCRIPTORS}  # every provider
PROVIDERS: dict = {identifier: descriptor for identifier, descriptor in DESCRIPTORS.items()
                   if descriptor.postiz}  # Postiz's 35: what integration-settings and MCP describe
CREDENTIAL_SPECS: dict = {identifier: descriptor.credentials for identifier, descriptor in DESCRIPTORS.items()
                          if descriptor.credentials is not None}  # what `rustiz channel add` and POST /integrations take
# Postiz's providers rustiz does not publish to, and why (docs/providers.md says more).
LEFT_OUT = {
    "skool": "Skool has no public API; posting there needs a signed-in member's browser cookies, which rustiz will "
             "not hold",
    "mewe": "MeWe's API is a developer preview that does not document how an app signs a member in",
}
# The counting rules Postiz's own length check uses ("post is too long, please fix it"); a platform's own
# rule (graphemes, mastodon, telegram-html) is checked by its publisher, in the platform's words.
POSTIZ_COUNTING_RULES = frozenset({"characters", "x-weighted"})


def provider_descriptions() -> list:
    """Every provider as GET /public/v1/providers answers it: what the web app needs to connect a channel
    and to count a post's characters as the server will."""
    return [{"identifier": descriptor.identifier, "name": descriptor.label,
             "connectable": descriptor.credentials is not None, "oauth": descriptor.oauth,
             "guide": descriptor.credentials.guide if descriptor.credentials else "",
             "credentials": [{"key": key.name, "label": key.label, "kind": key.input, "placeholder": key.placeholder,
                              "help": key.help, "required": key.required}
                             for key in (descriptor.credentials.keys if descriptor.credentials else ())],
             "counting": descriptor.counting, "maxLength": descriptor.max_length, "limits": descriptor.limits}
            for descriptor in DESCRIPTORS.values()]


CHANNEL_NAME_MAX_LENGTH = 200


CREDENTIAL_MAX_LENGTH = 4096  # no token, key or URL a platform gives is longer
MAX_RELAYS = 20


def _credential_problem(key: CredentialKey, value: Any) -> Optional[str]:
    """What is wrong with one credential, as `credentials.<key> ...` (`credentials.relays.1 ...` for a list item)."""
    path = f"credentials.{key.name}"
    problem = _CREDENTIAL_CHECKS[key.kind](value)
    if problem:
        return f"{path} {problem}"
    if isinstance(value, str) and len(value) > CREDENTIAL_MAX_LENGTH:
        return f"{path} must be shorter than or equal to {CREDENTIAL_MAX_LENGTH} characters"
    if isinstance(value, list) and len(value) > MAX_RELAYS:
        return f"{path} must contain no more than {MAX_RELAYS} elements"
    if key.kind == "relays":
        for index, relay in enumerate(value):
            problem = url_problem(relay, ("ws", "wss")) or (
                None if len(relay) <= CREDENTIAL_MAX_LENGTH else
                f"must be shorter than or equal to {CREDENTIAL_MAX_LENGTH} characters")
            if problem:
                return f"{path}.{index} {problem}"
    return None


def _credentials_problems(provider: str, credentials: Any) -> list:
    """ValidationPipe-style messages (`credentials.<key> ...`) for a provider's credentials object."""
    if not isinstance(credentials, dict):
        return ["credentials must be an object"]
    keys = CREDENTIAL_SPECS[provider].keys
    problems = []
    for key in keys:
        if key.name not in credentials or credentials[key.name] is None:
            if key.required:
                problems.append(f"credentials.{key.name} should not be empty")
            continue
        problem = _credential_problem(key, credentials[key.name])
        if problem:
            problems.append(problem)
    known = {key.name for key in keys}
    unknown = [name for name in credentials if name not in known]
    problems.extend(f"credentials.{name[:100]} should not exist ({provider} takes {', '.join(key.name for key in keys)})"
                    for name in unknown[:5])  # (the first few: a body of a thousand names is not echoed whole)
    return problems


def optional_text_problem(body: dict, name: str, max_length: int = CHANNEL_NAME_MAX_LENGTH) -> Optional[str]:
    value = body.get(name)
    if value is None:
        return None
    problem = text_problem(value)
    if problem is None and len(value) > max_length:
        problem = f"must be shorter than or equal to {max_length} characters"
    return f"{name} {problem}" if problem else None


def validate_new_channel(body: Any) -> NewChannel:
    """Check a POST /integrations body (`rustiz channel add` builds the same); raises ApiError (400)."""
    body = body if isinstance(body, dict) else {}
    provider = body.get("provider")
    connectable = ", ".join(sorted(CREDENTIAL_SPECS))
    if not isinstance(provider, str) or provider not in CREDENTIAL_SPECS:
        if isinstance(provider, str) and provider in DESCRIPTORS and DESCRIPTORS[provider].oauth:
            raise bad_request(f"{provider} connects through its own sign-in, not with credentials: GET "
                              f"/public/v1/social/{provider} answers the URL of its consent page (the web app's "
                              f"Channels page has a button for it); providers that connect with credentials: "
                              f"{connectable}")
        if isinstance(provider, str) and provider in LEFT_OUT:
            raise bad_request(f"rustiz does not publish to {provider}: {LEFT_OUT[provider]}; providers that "
                              f"connect with credentials: {connectable}")
        shown = json.dumps(provider)[:100] if provider is not None else "missing"
        raise bad_request(f"provider {shown} is not one rustiz can connect; use one of: {connectable}")
    problems = _credentials_problems(provider, body.get("credentials"))
    problems += [problem for problem in (optional_text_problem(body, "name"), optional_text_problem(body, "customer", NAME_MAX_LENGTH))
                 if problem]
    if problems:
        raise bad_request(problems)
    credentials = body["credentials"]
    account = CREDENTIAL_SPECS[provider].account(credentials)
    if body.get("name") is not None:
        account = account._replace(name=body["name"].strip())
    customer = body["customer"].strip() if body.get("customer") is not None else None
    return NewChannel(provider, account, credentials, customer)


def _is_verified(additional_settings: Any) -> bool:
    return isinstance(additional_settings, list) and any(
        isinstance(item, dict) and item.get("title") == "Verified" and item.get("value") is True
        for item in additional_settings)


def provider_max_length(identifier: str, channel_additional_settings: Any, channel_limits: Optional[dict] = None) -> int:
    """The maxLength of a channel of the provider: its own limit when connecting read one (a Mastodon
    instance's), X's 4000 for a channel marked Verified (X premium), else the descriptor's. 0: unknown provider."""
    descriptor = DESCRIPTORS.get(identifier)
    if descriptor is None:
        return 0
    if channel_limits and channel_limits.get("maxLength"):
        return channel_limits["maxLength"]
    if "verifiedMaxLength" in descriptor.limits and _is_verified(channel_additional_settings):
        return descriptor.limits["verifiedMaxLength"]
    return descriptor.max_length


def post_length(identifier: str, html: str, channel_additional_settings: Any,
                channel_limits: Optional[dict] = None) -> tuple:
    """(length, limit) of one post's content (its stored HTML) as the provider's descriptor counts it, for a
    channel with these additional settings and its own limits (from connecting)."""
    descriptor = DESCRIPTORS.get(identifier)
    limits = {**(descriptor.limits if descriptor else {}), **(channel_limits or {})}
    length = counted_length(descriptor.counting if descriptor else "characters", html,
                            limits.get("charactersReservedPerUrl", 0))
    return length, provider_max_length(identifier, channel_additional_settings, channel_limits)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
