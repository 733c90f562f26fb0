"""The validation of POST /posts: class-validator's checks and messages, and each platform's own limits.

Rules:
- Nothing is stored until the whole request passes; every refusal names the field (Postiz's shapes).
- Settings, media and length are checked with the provider's descriptor (catalogue.py); what the
  platform itself would refuse is asked of its publisher (publishers.provider_for), imported then.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Optional, Union

from rustiz import ApiError, bad_request, parse_iso_date, utc_now_iso
from .catalogue import (
    DEFAULT_ORDER, DESCRIPTORS, Field, MEDIA_FIELDS, POSTIZ_COUNTING_RULES, PROVIDERS, flag_field, is_number,
    post_length, text_field, upload_relative_path, url_problem, whole_number_check,
)
from .publishers import provider_for
from .text import sanitize_html, strip_html




def _js_string(value: Any) -> str:
    """String(value) as JavaScript writes it (Nest converts DTO values to the declared type first)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def _js_number(value: Any) -> Union[int, float]:
    """Number(value) as JavaScript computes it; NaN for what is not a number."""
    if isinstance(value, (bool, int, float)):
        return int(value) if isinstance(value, bool) else value
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text) if text else 0
        except ValueError:
            return math.nan
        return int(number) if math.isfinite(number) and number == int(number) else number
    return math.nan


def _implicit_conversion(kind: str, value: Any) -> Any:
    """Nest's ValidationPipe (enableImplicitConversion) converts scalars; arrays and null are left alone."""
    if value is None or isinstance(value, list):
        return value
    if kind in ("string", "date"):
        return _js_string(value)
    if kind == "boolean":
        return value if isinstance(value, bool) else not (value in ("", 0) or value != value)
    if kind == "number":
        return _js_number(value)
    return value


# class-validator's IsUrl, simplified; letter cases spelt out because (?i) on these ranges costs 20 ms to compile.
_URL_ADDRESS = (r"(?:(?:[hH][tT][tT][pP][sS]?|[fF][tT][pP])://)?(?:[^\s:@/]+(?::[^\s:@/]*)?@)?"
                r"(?:[A-Za-z0-9\u00a1-\uffff-]+\.)+[A-Za-z\u00a1-\uffff]{2,}\.?(?::\d{1,5})?(?:[/?#]\S*)?")


_TYPE_MESSAGES = {"string": "must be a string", "date": "must be a valid ISO 8601 date string",
                  "boolean": "must be a boolean value", "array": "must be an array",
                  "number": "must be a number conforming to the specified constraints"}


def _is_kind(kind: str, value: Any) -> bool:
    if kind == "date":
        return isinstance(value, str) and parse_iso_date(value) is not None
    if kind == "number":
        return is_number(value)
    if kind == "object":
        return value is None or isinstance(value, dict)
    return isinstance(value, {"string": str, "boolean": bool, "array": list}[kind])


def _failed_checks(field: Field, value: Any, parent: dict) -> dict:
    """check name -> class-validator's message, for each check of `field` that `value` fails.

    As in class-validator, a missing value fails every check but @IsDefined's own."""
    name = field.name
    is_text = isinstance(value, str)
    size = len(value) if isinstance(value, list) else None
    tests = (
        ("enum", field.enum is not None, lambda: value in field.enum,
         lambda: f"must be one of the following values: {', '.join(field.enum)}"),
        ("min_length", field.min_length is not None, lambda: is_text and len(value) >= field.min_length,
         lambda: f"must be longer than or equal to {field.min_length} characters"),
        ("max_length", field.max_length is not None, lambda: is_text and len(value) <= field.max_length,
         lambda: f"must be shorter than or equal to {field.max_length} characters"),
        ("pattern", field.pattern is not None, lambda: is_text and re.search(field.pattern, value) is not None,
         lambda: f"must match /{field.pattern}/ regular expression"),
        ("url", field.url, lambda: is_text and re.fullmatch(_URL_ADDRESS, value) is not None,
         lambda: "must be a URL address"),
        ("minimum", field.minimum is not None, lambda: is_number(value) and value >= field.minimum,
         lambda: f"must not be less than {_js_string(field.minimum)}"),
        ("maximum", field.maximum is not None, lambda: is_number(value) and value <= field.maximum,
         lambda: f"must not be greater than {_js_string(field.maximum)}"),
        ("min_items", field.min_items is not None, lambda: size is not None and size >= field.min_items,
         lambda: f"must contain at least {field.min_items} elements"),
        ("max_items", field.max_items is not None, lambda: size is not None and size <= field.max_items,
         lambda: f"must contain no more than {field.max_items} elements"),
        ("items", field.items == "number", lambda: size is None or all(map(is_number, value)),
         lambda: f"each value in {name} must be a number conforming to the specified constraints"),
        # Postiz mostly writes a bare @IsIn, so an enum property is type-checked only when its order says so.
        ("type", not (field.enum and "type" not in field.order), lambda: _is_kind(field.kind, value),
         lambda: (f"nested property {name} must be either object or array" if field.kind == "object"
                  else f"{name} {_TYPE_MESSAGES[field.kind]}")),
    )
    failed = {check: message() for check, applies, passes, message in tests if applies and not passes()}
    for check in ("enum", "min_length", "max_length", "pattern", "url", "minimum", "maximum", "min_items",
                  "max_items"):
        if check in failed:
            failed[check] = f"{name} {failed[check]}"
    problem = field.extra_check(value, parent) if field.extra_check else None
    if problem:
        failed["extra"] = problem
    return failed


def _field_messages(field: Field, value: Any, parent: dict) -> list:
    """class-validator's messages for one property, in the order Postiz's decorators produce them."""
    custom = field.custom or {}
    messages = []
    if field.defined and value is None:
        messages.append(custom.get("defined", f"{field.name} should not be null or undefined"))
    failed = _failed_checks(field, value, parent)
    messages.extend(custom.get(check, failed[check]) for check in field.order or DEFAULT_ORDER if check in failed)
    return messages


def _checked(fields: tuple, source: dict, path: str, errors: list) -> dict:
    """Validate `source` against `fields`; append Nest's 'path.message' strings to errors; return the converted copy.

    Nest prefixes each message with the path of the object holding the property, so a custom message
    (one that does not start with the property's name) reads like 'posts.0.settings.Board is required'."""
    result = dict(source)
    prefix = path + "." if path else ""
    for field in fields:
        if field.when is not None and not field.when(source):
            continue
        value = _implicit_conversion(field.kind, result.get(field.name))
        if value is None and field.optional:
            continue
        if field.name in result:
            result[field.name] = value
        errors.extend(prefix + message for message in _field_messages(field, value, source))
        if field.kind == "object" and isinstance(value, dict):
            result[field.name] = _checked(field.fields, value, prefix + field.name, errors)
        elif field.kind == "array" and field.items == "object" and isinstance(value, list):
            result[field.name] = [_checked_item(field, index, item, prefix, errors) for index, item in enumerate(value)]
    return result


def _checked_item(field: Field, index: int, item: Any, prefix: str, errors: list) -> Any:
    if isinstance(item, dict):
        return _checked(field.fields, item, f"{prefix}{field.name}.{index}", errors)
    errors.append(f"{prefix}{field.name}.nested property {index} must be either object or array")
    return item


# --- POST /posts: the whole pipeline before anything is stored -----------------


def _valid_content(content: Any, value: dict) -> Optional[str]:
    """Postiz's ValidContent: a post without media needs text (its message starts with a space, as Postiz's)."""
    image = value.get("image")
    if isinstance(image, list) and image:
        return None
    if isinstance(content, str) and strip_html(content):
        return None
    return " If images do not exist, content must be a non-empty string."


# A post repeats every `inter` days: Postiz's editor offers 1 to 30 (its "cancel" sends 0, no repetition);
# up to ten years lets a yearly or multi-year post through, and nothing larger is anything but a mistake.
MAX_INTERVAL_DAYS = 3650
MAX_DELAY_MINUTES = 7 * 24 * 60  # a thread part waits at most a week after the part before it

_POST_CONTENT_FIELDS = (
    Field("content", "string", defined=True, extra_check=_valid_content), text_field("id", optional=True),
    Field("image", "array", items="object", fields=MEDIA_FIELDS),
    Field("delay", "number", optional=True, extra_check=whole_number_check(
        "delay", 0, MAX_DELAY_MINUTES, "the minutes this part waits after the one before it")))
_POSTS_ITEM_FIELDS = (
    Field("integration", "object", defined=True, fields=(Field("id", "string", defined=True),)),
    Field("value", "array", defined=True, items="object", min_items=1, fields=_POST_CONTENT_FIELDS,
           order=("type", "min_items")),
    text_field("group", optional=True))
_CREATE_POST_FIELDS = (
    text_field("order", optional=True), flag_field("shortLink", defined=True),
    Field("inter", "number", optional=True, extra_check=whole_number_check(
        "inter", 0, MAX_INTERVAL_DAYS, "the days between repetitions (0: the post does not repeat)")),
    Field("date", "date", defined=True, when=lambda body: body.get("type") != "queue"),  # (queue: the slot's)
    Field("tags", "array", defined=True, items="object",
           fields=(Field("value", "string", defined=True), Field("label", "string", defined=True))))


def _queue_problems(body: dict) -> list:
    """Issue 26 (queue): `evergreen` is a boolean; a queued post takes one slot, so it does not repeat."""
    problems = []
    if body.get("evergreen") is not None and not isinstance(body["evergreen"], bool):
        problems.append("evergreen must be a boolean value")
    if body.get("type") == "queue" and body.get("inter"):
        problems.append('inter cannot be used with type "queue": a queued post takes one slot; give it a date '
                        '(type "schedule") to repeat it')
    return problems


def _post_validation_error(channel: dict, message: str) -> ApiError:
    """Postiz's PostValidationException: which channel refused the post, and why."""
    return ApiError(400, {"statusCode": 400, "provider": channel["provider_identifier"], "name": channel["name"],
                          "message": message})


def _channels_of(posts: Any, find_channel: Callable[[str], Optional[dict]]) -> list:
    """Step 2 of Postiz's pipeline: every post names a channel of the organization (deleted ones count)."""
    if not isinstance(posts, list) or not all(
            isinstance(post, dict) and isinstance(post.get("integration"), dict) and post["integration"].get("id")
            for post in posts):
        raise bad_request("All posts must have an integration id")
    channels = []
    for post in posts:
        channel_id = post["integration"]["id"]
        channel = find_channel(channel_id) if isinstance(channel_id, str) else None
        if channel is None:
            raise bad_request(f"Integration with id {_js_string(channel_id)} not found")
        channels.append(channel)
    return channels


def _checked_posts(posts: list, channels: list, errors: list) -> list:
    """Each post's DTO, then its settings against the DTO of its channel's provider (`__type` is the channel's)."""
    checked = []
    for index, (post, channel) in enumerate(zip(posts, channels)):
        path = f"posts.{index}"
        result = _checked(_POSTS_ITEM_FIELDS, post, path, errors)
        raw_settings = post.get("settings")
        settings = {**(raw_settings if isinstance(raw_settings, dict) else {}),
                    "__type": channel["provider_identifier"]}
        spec = PROVIDERS.get(channel["provider_identifier"])
        result["settings"] = _checked(spec.dto, settings, path + ".settings", errors) if spec else settings
        checked.append(result)
    return checked


_PICTURE_EXTENSION = r"(?i)\.(?:png|jpe?g|gif|webp)$"


def _settings_media_problems(posts: list, channels: list, own_uploads: Callable[[list], dict],
                             frontend_url: str) -> list:
    """What is wrong with the pictures the settings carry themselves (WordPress's main_image, YouTube's
    thumbnail...): each must be a picture, and either one of the organization's uploads or a web address,
    which the outbound client fetches (with its address guard and size bounds) when the post goes out.
    An address of the uploads' shape (/uploads/YYYY/MM/DD/name) is read from this server's uploads folder
    whatever its host, so it must be one of the organization's own."""
    found, uploads = [], []
    for index, (post, channel) in enumerate(zip(posts, channels)):
        platform = provider_for(channel["provider_identifier"])
        for name in platform.media_settings if platform else ():  # (a setting no publisher reads is left alone)
            media = post["settings"].get(name)
            if isinstance(media, dict) and isinstance(media.get("path"), str):
                found.append((f"posts.{index}.settings.{name}", media["path"]))
                relative = upload_relative_path(media["path"])
                if relative:
                    uploads.append(f"{frontend_url}/uploads/{relative}")
    own = own_uploads(uploads) if uploads else {}
    problems = []
    for where, path in found:
        relative = upload_relative_path(path)
        if not re.search(_PICTURE_EXTENSION, path.split("?", 1)[0]):
            problems.append(f"{where} must be a picture (.png, .jpg, .jpeg, .gif or .webp): {path[:200]} is not")
        elif relative is not None and f"{frontend_url}/uploads/{relative}" not in own:
            problems.append(f"{where}: {path[:200]} is not an upload of this organization (deleted, or another "
                            "organization's): upload the picture first (POST /public/v1/upload, or "
                            "/public/v1/upload-from-url for a web address) and give the path it answers")
        elif relative is None and url_problem(path, ("http", "https")):
            problems.append(f"{where}: {path[:200]} is neither an upload of this organization nor a web address "
                            f"rustiz can fetch (it {url_problem(path, ('http', 'https'))}); upload the picture "
                            "first (POST /public/v1/upload) and give the path it answers")
    return problems


def _planned_values(values: list) -> list:
    """The checked values as stored: `delay` is a whole number of minutes by now (or absent: 0)."""
    return [{"id": value.get("id") if isinstance(value.get("id"), str) else None,
             "content": sanitize_html(value["content"]),
             "delay": int(value.get("delay") or 0), "image": value["image"]} for value in values]


def _check_before_publishing(post_type: str, posts: list, channels: list, media_origin: str) -> None:
    """Step 3 (Postiz's validatePosts): content or media always; media rules and length unless a draft."""
    for post, channel in zip(posts, channels):
        identifier = channel["provider_identifier"]
        for value in post["values"]:
            if not strip_html(value["content"]).strip() and not value["image"]:
                raise _post_validation_error(channel, "Your post should have at least one character or one image.")
        if post_type == "draft":
            continue
        descriptor = DESCRIPTORS.get(identifier)
        problem = descriptor.media_rule(post["settings"], post["values"]) if descriptor and descriptor.media_rule \
            else None
        if problem:
            raise _post_validation_error(channel, problem)
        # Postiz's own length check, for the providers it counts as their platform does; one counted by a
        # platform's own rule (a Bluesky post in graphemes) is measured by its publisher's post_problem.
        if descriptor is None or descriptor.counting in POSTIZ_COUNTING_RULES:
            article = identifier == "x" and post["settings"].get("post_type") == "article"
            for value in post["values"]:
                length, limit = post_length(identifier, value["content"], channel.get("additional_settings"),
                                            channel.get("limits"))
                if limit and length > (100000 if article else limit):
                    raise _post_validation_error(channel, "post is too long, please fix it")
        problem = _platform_problem(channel, post, media_origin)
        if problem:
            raise _post_validation_error(channel, problem)


def _platform_problem(channel: dict, post: dict, media_origin: str) -> Optional[str]:
    """What the platform itself would refuse (its real limits, which Postiz does not all check), and media
    it would download from `media_origin` (FRONTEND_URL) when it cannot reach it."""
    platform = provider_for(channel["provider_identifier"])
    if platform is None:
        return None
    if not platform.threads and len(post["values"]) > 1:
        return (f"{platform.label} publishes each post on its own and has no replies or comments: send one "
                f"value, not {len(post['values'])} (the thread parts would never be published)")
    return (platform.media_refusal(post["values"], post["settings"], media_origin)
            or platform.post_problem(channel, post["values"], post["settings"]))


def validate_create_post(body: Any, find_channel: Callable[[str], Optional[dict]], media_origin: str,
                         own_uploads: Callable[[list], dict]) -> dict:
    """Validate a POST /public/v1/posts body exactly as Postiz does and return the plan to store; raises ApiError.

    `find_channel(id)` returns the caller's organization's channel (deleted ones too) as
    {"id", "name", "provider_identifier", "additional_settings": list, "disabled", ...}, or None;
    `media_origin` is FRONTEND_URL, where platforms that download media themselves fetch it;
    `own_uploads(urls)` answers {url: media id} for those of `urls` that are the organization's live uploads.
    Errors, in Postiz's order: 400 "All posts must have an integration id" / "Integration with id X not
    found"; the ValidationPipe's 400 array of "path message"; a channel's PostValidationException."""
    body = body if isinstance(body, dict) else {}
    posts = body.get("posts")
    channels = _channels_of(posts, find_channel)
    errors: list = []
    # Postiz validates every body as type "schedule", so provider settings are checked even for drafts.
    top = _checked(_CREATE_POST_FIELDS, body, "", errors)
    if not posts:
        errors.append("posts must contain at least 1 elements")
    checked_posts = _checked_posts(posts, channels, errors)
    errors.extend(_queue_problems(body))
    if errors:
        raise bad_request(errors)
    problems = _settings_media_problems(checked_posts, channels, own_uploads, media_origin)
    if problems:
        raise bad_request(problems)
    post_type = body.get("type") if body.get("type") in ("draft", "now", "update", "queue") else "schedule"
    date = (utc_now_iso()[:17] + "00.000Z" if post_type == "now" else None if post_type == "queue"
            else parse_iso_date(top["date"]))
    plan_posts = [{"integration": channel, "group": post.get("group"), "settings": post["settings"],
                   "values": _planned_values(post["value"])} for post, channel in zip(checked_posts, channels)]
    _check_before_publishing(post_type, plan_posts, channels, media_origin)
    inter = top.get("inter")
    return {"type": post_type, "date": date, "shortLink": top["shortLink"],
            "tags": [tag["label"] for tag in top["tags"]], "inter": int(inter) if inter else None,
            "republish": body.get("republish") is True, "evergreen": body.get("evergreen"),
            "creationMethod": "CLI" if body.get("creationMethod") == "CLI" else "API", "posts": plan_posts}
