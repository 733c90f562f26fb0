"""What TikTok's two APIs share: the Content Posting API (`tiktok`) and the API for Business (`tiktok-business`).

Both take one video, or one to 35 JPEG/WebP pictures that TikTok pulls from their URLs, and both name what went
wrong with the same error codes (spam_risk_*, *_check_failed, *_pull_failed...). The rules of what a post may
carry and the clear words for those codes live here; each API's calls live in its own module.

Rules of this module: no requests, no state; pure checks on a post's values ({"content", "image": [...]}) and
its MediaFiles.
"""
from __future__ import annotations

from typing import Any, Optional

VIDEO_EXTENSIONS = ("mp4", "mov", "webm", "m4v")
PHOTO_EXTENSIONS = ("jpg", "jpeg", "webp")  # TikTok's photo posts take JPEG and WebP only
PHOTO_TYPES = ("image/jpeg", "image/webp")
MAX_PHOTOS = 35

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
