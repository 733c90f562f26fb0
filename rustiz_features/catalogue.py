"""The provider catalogue: one descriptor per provider, the single source the server and the web app read.

Postiz's 35 providers, each with its display name, its settings (a tuple of Field, from which both the
JSON Schema of integration-settings and the checks of POST /posts derive), its rules and tools, and how
its text is counted; for the providers rustiz connects with credentials, the credential fields and how
they name the account.

Rules:
- Data and pure checks only: nothing here reaches a platform (publishers/ do) or the database.
- Patterns stay text until first used, so that importing this module compiles none.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, NamedTuple, Optional, Union

from rustiz import bad_request, sha256
from .bech32 import bech32_payload
from .http_client import parsed_url
from .text import strip_html, x_weighted_length


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


# Patterns of this section are kept as text: re compiles (and caches) each one the first time a post
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
                  _optional_url("sourceUrl"), text_field("tags", optional=True, max_length=4096))

# Rules strings of §8.2 ("" for every provider not listed).
_LINKEDIN_RULES = ("LinkedIn can have maximum one attachment when selecting video, when choosing a carousel on LinkedIn "
                   "minimum amount of attachment must be two, and only pictures, if uploading a video, LinkedIn can "
                   "have only one attachment")
_INSTAGRAM_RULES = "Instagram should have at least one attachment, if it's a story, it can have only one picture"
_RULES = {
    "x": ("X can have maximum 4 pictures, or maximum one video, it can also be without attachments, it can also be "
          "published as a long-form article (draft or published) when post_type is set to article "),
    "linkedin": _LINKEDIN_RULES, "linkedin-page": _LINKEDIN_RULES,
    "instagram": _INSTAGRAM_RULES, "instagram-standalone": _INSTAGRAM_RULES,
    "facebook": ("Facebook posts can be text only, or include photos or a video. If it's a story, it must have at "
                 "least one attachment (photo or video), and each media is published as a separate story."),
    "youtube": "YouTube must have on video attachment, it cannot be empty",
    "gmb": ("Google My Business posts can have text content and optionally one image. Posts can be updates, events, "
            "or offers."),
    "pinterest": ("Pinterest requires at least one media, if posting a video, you must have two attachment, one for "
                  "video, one for the cover picture, When posting a video, there can be only one, if posting images, "
                  "there can be maximum 5"),
    "bluesky": "Bluesky can have maximum 1 video or 4 pictures in one post, it can also be without attachments",
    "wrapcast": "Farcaster/Warpcast can only accept pictures",
    "tiktok": "TikTok can have one video or one picture or multiple pictures, it cannot be without an attachment.",
    "tiktok-business": ("TikTok Business can have one video or one picture or multiple pictures (up to 35), it cannot "
                        "be without an attachment."),
}

# Helper tools of §8.4: methodName, description, keys of dataSchema (all strings).
_TOOLS = {
    "devto": (("tags", "Tag list", ()), ("organizations", "Organization list", ())),
    "discord": (("channels", "Channels", ()),),
    "dribbble": (("teams", "Teams list", ()),),
    "wrapcast": (("subreddits", "Search channels", ("word",)),),
    "hashnode": (("tagsList", "Tags", ()), ("publications", "Publications", ())),
    "instagram": (("audioSearch", 'Search audio (music or original sounds) to attach to a Reel via the "audio" '
                                  "setting, an empty query returns trending audio", ("q", "type")),),
    "lemmy": (("subreddits", "Search for Lemmy communities by keyword", ("word",)),),
    "listmonk": (("list", "List of available lists", ()), ("templates", "List of available templates", ())),
    "medium": (("publications", "List of publications", ()),),
    "mewe": (("groups", "Groups", ()),),
    "pinterest": (("boards", "List of boards", ()),),
    "reddit": (("subreddits", "Get list of subreddits with information", ("word",)),
               ("restrictions", "Get list of flairs and restrictions for a subreddit", ("subreddit",))),
    "skool": (("groups", "Groups", ()), ("label", "Label", ())),
    "slack": (("channels", "Get list of channels", ()),),
    "tiktok-business": (("musicSearch", "Search music", ("genre",)), ("locationSearch", "Search locations", ("q",))),
    "whop": (("companies", "Companies", ()), ("experiences", "Experiences", ("id",))),
    "wordpress": (("postTypes", "Get list of post types", ()), ("categoriesList", "Get list of categories", ()),
                  ("tagsList", "Get list of tags", ())),
}

# identifier, UI name, editor, maxLength, settings DTO, whether integration-settings shows the DTO's schema
_PROVIDER_TABLE = (
    ("x", "X", "html", 280, _X_FIELDS, True),
    ("linkedin", "LinkedIn", "normal", 3000, _LINKEDIN_FIELDS, False),
    ("linkedin-page", "LinkedIn Page", "normal", 3000, _LINKEDIN_FIELDS, False),
    ("reddit", "Reddit", "normal", 10000, (_value_list(_REDDIT_VALUE_FIELDS, 1),), True),
    ("instagram", "Instagram\n(Facebook Business)", "normal", 2200, _INSTAGRAM_FIELDS, True),
    ("instagram-standalone", "Instagram\n(Standalone)", "normal", 2200, _INSTAGRAM_FIELDS, True),
    ("facebook", "Facebook Page", "normal", 63206, _FACEBOOK_FIELDS, True),
    ("threads", "Threads", "normal", 500, (), False),
    ("youtube", "YouTube", "normal", 5000, _YOUTUBE_FIELDS, True),
    ("gmb", "Google My Business", "normal", 1500, _GMB_FIELDS, True),
    ("tiktok", "Tiktok", "normal", 2000, _TIKTOK_FIELDS, True),
    ("tiktok-business", "TikTok", "normal", 2200, _TIKTOK_FIELDS, True),
    ("pinterest", "Pinterest", "normal", 500, _PINTEREST_FIELDS, True),
    ("dribbble", "Dribbble", "normal", 40000, _DRIBBBLE_FIELDS, True),
    ("discord", "Discord", "markdown", 1980, _CHANNEL_FIELDS, True),
    ("slack", "Slack", "normal", 400000, _CHANNEL_FIELDS, True),
    ("kick", "Kick", "normal", 500, (), False),
    ("twitch", "Twitch", "normal", 500, _TWITCH_FIELDS, True),
    ("mastodon", "Mastodon", "normal", 500, (), False),
    ("bluesky", "Bluesky", "normal", 300, (), False),
    ("lemmy", "Lemmy", "normal", 10000, (_value_list(_LEMMY_VALUE_FIELDS, 1),), True),
    ("wrapcast", "Farcaster", "normal", 800, (_value_list((_required_text("id"),), None),), True),
    ("telegram", "Telegram", "html", 4096, (), False),
    ("nostr", "Nostr", "normal", 100000, (), False),
    ("vk", "VK", "normal", 2048, (), False),
    ("medium", "Medium", "markdown", 100000, _MEDIUM_FIELDS, True),
    ("devto", "Dev.to", "markdown", 100000, _DEVTO_FIELDS, True),
    ("hashnode", "Hashnode", "markdown", 10000, _HASHNODE_FIELDS, True),
    ("wordpress", "WordPress", "html", 100000, _WORDPRESS_FIELDS, True),
    ("listmonk", "ListMonk", "html", 100000000, _LISTMONK_FIELDS, True),
    ("moltbook", "Moltbook", "normal", 300, (_required_text("submolt", 1),), False),
    ("whop", "Whop", "markdown", 50000, _WHOP_FIELDS, True),
    ("skool", "Skool", "normal", 5000, _SKOOL_FIELDS, True),
    ("mewe", "MeWe", "normal", 63206, _MEWE_FIELDS, True),
    ("tumblr", "Tumblr", "normal", 32768, _TUMBLR_FIELDS, True),
)


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


class ProviderSpec(NamedTuple):
    """One Postiz provider as integration-settings describes it, and the settings DTO its posts must satisfy."""
    identifier: str
    name: str
    editor: str  # normal, html or markdown: how the Postiz editor writes content for it
    max_length: int
    rules: str
    settings: Union[dict, str]  # JSON Schema, or Postiz's "No additional settings required"
    tools: list  # [{methodName, description, dataSchema}]
    dto: tuple  # of Field; () when Postiz validates nothing but __type


def _build_providers() -> dict:
    providers = {}
    for identifier, name, editor, max_length, dto, exposed in _PROVIDER_TABLE:
        settings: Union[dict, str] = _object_schema(dto) if exposed else _NO_SETTINGS
        if identifier == "youtube":  # a quirk of the generator, kept because clients may look for it
            settings["properties"]["tags"]["$ref"] = "#/definitions/Array"
        tools = [{"methodName": method, "description": description,
                  "dataSchema": [{"key": key, "type": "string", "description": key} for key in keys]}
                 for method, description, keys in _TOOLS.get(identifier, ())]
        providers[identifier] = ProviderSpec(identifier, name, editor, max_length, _RULES.get(identifier, ""),
                                             settings, tools, dto)
    return providers


PROVIDERS: dict = _build_providers()

# --- channels that connect with credentials (POST /integrations, `rustiz channel add`) -----------
# Providers that need no developer app: the user pastes credentials, rustiz stores them as the
# channel's token. Here they are checked for shape, and `CredentialSpec.account` derives what the
# credentials alone tell (the default channel name); then the publisher's `connect()` (section 11)
# verifies them with the platform and reads the real account (its id, name, handle, avatar).
# Credentials never leave the store and are never logged.


class CredentialKey(NamedTuple):
    """One key of a provider's `credentials` object; `kind` names its check in _CREDENTIAL_CHECKS."""
    name: str
    kind: str
    required: bool = True


class ChannelAccount(NamedTuple):
    """Who a channel posts as. `internal_id` identifies the account on its platform (one channel each)."""
    internal_id: str
    name: str
    profile: Optional[str]
    picture: Optional[str] = None


class CredentialSpec(NamedTuple):
    keys: tuple  # of CredentialKey, in the order errors are reported
    account: Callable[[dict], ChannelAccount]


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
    check the outbound client makes (section 11), so that what is accepted here can be connected to."""
    problem = _string_problem(value)
    if problem:
        return problem
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


def _credential_keys(*keys: tuple) -> tuple:
    return tuple(CredentialKey(*key) for key in keys)


_LOGIN_KEYS = _credential_keys(("service", "http_url"), ("identifier", "text"), ("password", "text"))
_API_KEY = _credential_keys(("apiKey", "text"))
_WEBHOOK_URL = _credential_keys(("webhookUrl", "http_url"))

CREDENTIAL_SPECS: dict = {
    "bluesky": CredentialSpec(_LOGIN_KEYS, _login_account("service", "identifier", lambda host, user: user)),
    "lemmy": CredentialSpec(_LOGIN_KEYS, _login_account("service", "identifier",
                                                        lambda host, user: f"{user}@{host}")),
    "wordpress": CredentialSpec(
        _credential_keys(("domain", "http_url"), ("username", "text"), ("password", "text")),
        _login_account("domain", "username", lambda host, user: host)),
    "listmonk": CredentialSpec(
        _credential_keys(("url", "http_url"), ("username", "text"), ("password", "text")),
        _login_account("url", "username", lambda host, user: f"Listmonk at {host}")),
    "nostr": CredentialSpec(_credential_keys(("password", "nostr_key"), ("relays", "relays")), _nostr_account),
    "devto": CredentialSpec(_API_KEY, secret_account("apiKey", lambda credentials: "Dev.to account")),
    "hashnode": CredentialSpec(_API_KEY, secret_account("apiKey", lambda credentials: "Hashnode account")),
    "mastodon": CredentialSpec(
        _credential_keys(("instance", "http_url"), ("accessToken", "text")),
        lambda credentials: ChannelAccount(
            f"{url_host(credentials['instance'])}/{_secret_digest(credentials['accessToken'])}",
            url_host(credentials["instance"]), None)),
    "telegram": CredentialSpec(_credential_keys(("botToken", "telegram_bot_token"), ("chatId", "telegram_chat")),
                               _telegram_account),
    "discord": CredentialSpec(_WEBHOOK_URL, secret_account("webhookUrl", lambda credentials: "Discord webhook")),
    "slack": CredentialSpec(_WEBHOOK_URL, secret_account("webhookUrl", lambda credentials: "Slack webhook")),
    "webhook": CredentialSpec(  # rustiz's own provider: POSTs each post as signed JSON to any URL
        _credential_keys(("url", "http_url"), ("secret", "text", False)),
        secret_account("url", lambda credentials: f"Webhook to {url_host(credentials['url'])}")),
}

CHANNEL_NAME_MAX_LENGTH = 200


def _credential_problem(key: CredentialKey, value: Any) -> Optional[str]:
    """What is wrong with one credential, as `credentials.<key> ...` (`credentials.relays.1 ...` for a list item)."""
    path = f"credentials.{key.name}"
    problem = _CREDENTIAL_CHECKS[key.kind](value)
    if problem:
        return f"{path} {problem}"
    if key.kind == "relays":
        for index, relay in enumerate(value):
            problem = url_problem(relay, ("ws", "wss"))
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
    problems.extend(f"credentials.{name} should not exist ({provider} takes {', '.join(key.name for key in keys)})"
                    for name in credentials if name not in known)
    return problems


def optional_text_problem(body: dict, name: str) -> Optional[str]:
    value = body.get(name)
    if value is None:
        return None
    problem = text_problem(value)
    if problem is None and len(value) > CHANNEL_NAME_MAX_LENGTH:
        problem = f"must be shorter than or equal to {CHANNEL_NAME_MAX_LENGTH} characters"
    return f"{name} {problem}" if problem else None


def validate_new_channel(body: Any) -> NewChannel:
    """Check a POST /integrations body (`rustiz channel add` builds the same); raises ApiError (400)."""
    body = body if isinstance(body, dict) else {}
    provider = body.get("provider")
    connectable = ", ".join(sorted(CREDENTIAL_SPECS))
    if not isinstance(provider, str) or provider not in CREDENTIAL_SPECS:
        if isinstance(provider, str) and provider in PROVIDERS:
            raise bad_request(f"{provider} connects through OAuth with a developer app, which rustiz does not "
                              f"support yet; providers that connect with credentials: {connectable}")
        shown = json.dumps(provider)[:100] if provider is not None else "missing"
        raise bad_request(f"provider {shown} is not one rustiz can connect; use one of: {connectable}")
    problems = _credentials_problems(provider, body.get("credentials"))
    problems += [problem for problem in (optional_text_problem(body, "name"), optional_text_problem(body, "customer"))
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


def provider_max_length(identifier: str, channel_additional_settings: Any) -> int:
    """The provider's maxLength; X allows 4000 to a channel marked Verified (X premium). 0: unknown provider."""
    if identifier == "x" and _is_verified(channel_additional_settings):
        return 4000
    spec = PROVIDERS.get(identifier)
    return spec.max_length if spec else 0


def post_length(identifier: str, html: str, channel_additional_settings: Any) -> tuple:
    """(length, limit) of one post's content as Postiz checks it before publishing."""
    text = strip_html(html)
    length = x_weighted_length(text) if identifier == "x" else len(text)
    return length, provider_max_length(identifier, channel_additional_settings)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
