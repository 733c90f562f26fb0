"""What TikTok's two APIs share: the Content Posting API (`tiktok`) and the API for Business (`tiktok-business`).

Both take one video, or one to 35 JPEG/WebP pictures that TikTok pulls from their URLs, and both name what went
wrong with the same error codes (spam_risk_*, *_check_failed, *_pull_failed...). The rules of what a post may
carry and the clear words for those codes live here; each API's calls live in its own module.

Rules of this module: no requests of its own and no state: checks on a post's values ({"content", "image":
[...]}) and its MediaFiles, and the wait for TikTok's processing through a status reader each API gives.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable, Optional
from urllib.parse import quote

from .base import NeedsReconnect, OutcomeUnknown, Rejected, Release, Retryable, wait_for_processing

VIDEO_EXTENSIONS = ("mp4", "mov", "webm", "m4v")
PHOTO_EXTENSIONS = ("jpg", "jpeg", "webp")  # TikTok's photo posts take JPEG and WebP only
PHOTO_TYPES = ("image/jpeg", "image/webp")
MAX_PHOTOS = 35
POLL_SECONDS = 5.0  # between status polls (TikTok allows 30 a minute per token)
POLL_LIMIT_SECONDS = 300.0  # processing plus moderation usually take a minute; longer is left to the user
MAX_POLLS = 120

# TikTok's error codes (the API's error.code, a FAILED status's fail_reason) in words a user can act on.
CLEAR_WORDS = {
    "spam_risk_too_many_posts": "the account reached TikTok's daily limit of posts through apps; try tomorrow",
    "spam_risk_too_many_pending_share": "the account has 5 posts waiting in its TikTok inbox; finish or delete "
                                        "them in the TikTok app first",
    "spam_risk_user_banned_from_posting": "TikTok has banned this account from posting",
    "spam_risk_text": "TikTok considers the post's text spam",
    "spam_risk": "TikTok considers the post spam",
    "unaudited_client_can_only_post_to_private_accounts": "the operator's TikTok app is not audited yet, so it "
        "may only post to private accounts with privacy_level SELF_ONLY",
    "url_ownership_unverified": "the domain of rustiz's FRONTEND_URL is not verified in the TikTok app "
                                "(URL properties), so TikTok will not pull pictures from it",
    "privacy_level_option_mismatch": "the privacy_level is not one this creator may use",
    "reached_active_user_cap": "the operator's TikTok app reached its daily quota of active users",
    "file_format_check_failed": "TikTok does not accept the file's format",
    "duration_check_failed": "the video is too long or too short for this account",
    "frame_rate_check_failed": "the video's frame rate is not one TikTok accepts (23-60 FPS)",
    "picture_size_check_failed": "TikTok refused the picture's or video's size (pictures up to 1080p, video at "
                                 "least 360p)",
    "video_pull_failed": "TikTok could not download the video",
    "photo_pull_failed": "TikTok could not download a picture from rustiz's public URL (FRONTEND_URL)",
    "publish_cancelled": "the post was cancelled on TikTok",
    "auth_removed": "the user removed rustiz's access on TikTok",
    "internal": "TikTok had an internal error",
}


def check_granted(scopes: tuple, granted: Any) -> None:
    """Refuse a consent that left any of `scopes` unticked (TikTok's consent page allows it; as Postiz, every one
    is needed). `granted`: the token answer's comma-separated scope list; not a string: nothing to check."""
    given = granted.replace(" ", ",").split(",") if isinstance(granted, str) else scopes
    missing = [scope for scope in scopes if scope not in given]
    if missing:
        raise Rejected(f"TikTok's consent did not grant {', '.join(missing)}; connect again and leave every "
                       "permission ticked")


def clear_words(code: str) -> str:
    """What one of TikTok's error codes means, in words a user can act on; "" for a code not listed."""
    return next((words for prefix, words in CLEAR_WORDS.items() if code.startswith(prefix)), "")


def extension(path: Any) -> str:
    name = str(path or "").split("?")[0].rsplit("/", 1)[-1]
    return name.rpartition(".")[2].lower() if "." in name else ""


def is_photo_post(values: list) -> bool:
    """A post of pictures only (values[0]'s media, by their paths' extensions), which TikTok pulls by URL."""
    media = values[0].get("image") if values and isinstance(values[0], dict) else None
    return bool(media) and not any(extension(item.get("path") if isinstance(item, dict) else "")
                                   in VIDEO_EXTENSIONS for item in media)


def photo_problem(values: list) -> Optional[str]:
    """Why TikTok would refuse a photo post's pictures (too many, not JPEG/WebP); None when they fit."""
    pictures = values[0]["image"]
    if len(pictures) > MAX_PHOTOS:
        return f"A TikTok photo post takes at most {MAX_PHOTOS} pictures, not {len(pictures)}"
    for item in pictures:
        kind = extension(item.get("path") if isinstance(item, dict) else "")
        if kind and kind not in PHOTO_EXTENSIONS:
            return f"TikTok photo posts take JPEG and WebP pictures only, not .{kind}"
    return None


def unaccepted_picture(media: tuple) -> Optional[str]:
    """Why a photo post's files (MediaFiles) cannot go to TikTok as they are (a type other than JPEG/WebP)."""
    wrong = next((item for item in media if item.content_type.split(";")[0].strip().lower() not in PHOTO_TYPES), None)
    return None if wrong is None else (f"TikTok photo posts take JPEG and WebP pictures only, and {wrong.name} is "
                                       f"{wrong.content_type}")


async def processing_outcome(read_status: Callable[[], Awaitable[dict]], upload_id: str, id_field: str,
                             auth_base: str, username: str, pause: float) -> Release:
    """Poll TikTok's processing of a post it has (`upload_id`, named `id_field` in messages: publish_id or share_id)
    until it is published, in the user's inbox, or failed, for a bounded count and time. `read_status()` answers
    {"status", "public_id", "reason"}. Once TikTok has the post, a status that cannot be read is OutcomeUnknown:
    trying again would post it twice."""
    profile = f"{auth_base}/@{quote(username)}" if username else auth_base
    key = id_field.split("_")[0] + "Id"  # publishId, shareId: the release's reply_ref names it
    status = None  # the last one read, for the message when the wait runs out

    async def final() -> Optional[Release]:
        nonlocal status
        try:
            data = await read_status()
        except (Retryable, NeedsReconnect) as lost:
            raise OutcomeUnknown(f"TikTok has the post ({id_field} {upload_id}) but its status could not be read: "
                                 f"{lost.message}", lost.status, lost.body) from None
        status = data.get("status")
        if status == "PUBLISH_COMPLETE":  # no public id for a private post, or while moderation runs
            video_id = data.get("public_id")
            return Release(video_id or upload_id, f"{profile}/video/{video_id}" if video_id and username else profile,
                           {key: upload_id})
        if status == "SEND_TO_USER_INBOX":
            return Release(upload_id, f"{auth_base}/messages", {
                key: upload_id, "inbox": True,
                "note": "a draft in the user's TikTok inbox: open it in the TikTok app to post it"})
        if status == "FAILED":
            reason = str(data.get("reason") or "no reason given")
            clear = clear_words(reason)
            message = f"the post failed in TikTok's processing: {clear + ' (' + reason + ')' if clear else reason}"
            if reason == "internal":  # nothing was posted, and TikTok's trouble passes
                raise Retryable(message)
            raise Rejected(message)
        return None

    return await wait_for_processing(
        final, POLL_LIMIT_SECONDS, pause,
        lambda: OutcomeUnknown(f"TikTok was still processing the post ({id_field} {upload_id}, status {status}) "
                               f"after {POLL_LIMIT_SECONDS:.0f} s; it may still appear"), most=MAX_POLLS)
