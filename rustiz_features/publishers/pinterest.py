"""Pinterest (API v5), through the operator's app: OAuth 2.0 consent, pins on a board picked per post.

As in Postiz, the board is a setting of each post (`board`, listed by the `boards` tool), not a choice made
once after consent, and a pin is one part: Pinterest has no comments API, so there are no threads.
rustiz's media are files on this machine, so images go up inside the pin request as base64 (one image:
image_base64; 2-5: a multiple_image_base64 carousel), and a video goes through Pinterest's media upload
(register, form POST to the upload URL it gives, poll until processed) with the post's picture as its cover.
Pinterest has no idempotency key: a pin whose answer was lost is not sent again.
"""
from __future__ import annotations

import base64
import json
import time
from typing import Any, Optional
from urllib.parse import quote, urlencode

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply, Timeouts, encode_multipart
from .base import (
    Channel, Connected, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, PublishError, Rejected, Release,
    Retryable, analytics_figures, wait_for_processing,
)
from .oauth import DEFINITE_REFUSALS, AppCredentials, OAuthProvider, TokenRefused, Tokens, bearer

PINTEREST_MEDIA_WAIT_SECONDS = 180.0  # how long a pin waits for Pinterest to process its video
PINTEREST_IMAGE_TYPES = ("image/jpeg", "image/png")  # what image_base64 and a video's cover accept
PINTEREST_ALT_TEXT_LIMIT = 500
PINTEREST_BOARD_PAGES = 4  # the boards tool reads at most 4 pages of 250 boards
GRANT_INVALID = 283  # Pinterest's code for a dead authorization code or refresh token
TRIAL_ACCESS = 29  # "Apps with Trial access may not create Pins in production ... use API Sandbox"


def pinterest_error(answer: Any) -> Optional[tuple]:
    """(code, message) of Pinterest's error shape {"code": int, "message": str}; None for any other answer."""
    if not isinstance(answer, dict):
        return None
    code, message = answer.get("code"), answer.get("message")
    if type(code) is not int or not isinstance(message, str) or not message.strip():
        return None
    return code, message.strip()


PIN_METRICS = {"IMPRESSION": "Impressions", "SAVE": "Saves", "PIN_CLICK": "Pin clicks",
               "OUTBOUND_CLICK": "Outbound clicks"}


def percentage_change(points: list) -> float:
    """From the first day's figure to the last's, in percent, as Postiz computes it (0 from a zero start)."""
    first, last = int(points[0]["total"]), int(points[-1]["total"])
    return round((last - first) / first * 100, 2) if first else 0


class PinterestProvider(OAuthProvider):
    identifier = "pinterest"
    app_variables = ("PINTEREST_CLIENT_ID", "PINTEREST_CLIENT_SECRET")
    auth_origin = "https://www.pinterest.com"  # the consent page, and where pins are seen
    api_origin = "https://api.pinterest.com"  # the API and its token endpoint
    authorize_path = "/oauth/"
    token_path = "/v5/oauth/token"  # on the API origin, not the consent page's
    scopes = ("boards:read", "boards:write", "pins:read", "pins:write", "user_accounts:read")
    pkce = False  # Pinterest documents no PKCE for its authorization code flow
    between_steps = False  # Postiz's isBetweenSteps: the board is chosen per post
    threads = False
    concurrency = 3  # Postiz's maxConcurrentJob
    can_delete = True  # DELETE /v5/pins/{id}
    operator_guide = (
        "Create the app at developers.pinterest.com/apps (Connect app; a Pinterest business account is needed) "
        "and wait for its review, which grants Trial access. Register the redirect URI "
        "{FRONTEND_URL}/integrations/social/pinterest, and put the app id and secret key in PINTEREST_CLIENT_ID "
        "and PINTEREST_CLIENT_SECRET. The scopes asked are boards:read, boards:write, pins:read, pins:write and "
        "user_accounts:read. A Trial app may not create pins in production (Pinterest answers code 29): point "
        "RUSTIZ_PINTEREST_API_URL at https://api-sandbox.pinterest.com, where pins are visible only to their "
        "creator, until Pinterest grants Standard access (requested from the app's page with a video of the "
        "whole flow, consent included). The API costs nothing.")

    # --- OAuth ------------------------------------------------------------------------------------------

    async def begin(self, http: HttpClient, app: AppCredentials, redirect_uri: str, state: str,
                    code_challenge: Optional[str], details: dict) -> str:
        # Pinterest's scope list is comma-separated (its docs, and Postiz's URL).
        query = {"response_type": "code", "client_id": app.client_id, "redirect_uri": redirect_uri,
                 "state": state, "scope": ",".join(self.scopes)}
        return f"{self.auth_base()}{self.authorize_path}?{urlencode(query)}"

    async def token_request(self, http: HttpClient, app: AppCredentials, form: dict, what: str) -> Tokens:
        """POST /v5/oauth/token with HTTP Basic. Pinterest refuses a dead code or refresh token with its own
        shape, HTTP 401 {"code": 283, "message": "The authorization grant is invalid"}: that is TokenRefused;
        any other 401/403 (the app's id or secret wrong) stays a plain NeedsReconnect."""
        channel = Channel("", "", {}, None, http)
        try:
            reply = await self.send(channel, "POST", self.api_base() + self.token_path, what=what,
                                    headers=self.token_request_headers(app), form={**form, **self.token_form_extra(app)})
        except (Rejected, NeedsReconnect) as refused:
            if not isinstance(refused, TokenRefused) and self._grant_is_dead(refused.body):
                raise TokenRefused(refused.message, refused.status, refused.body) from None
            raise
        return self.tokens_from(reply)

    @staticmethod
    def _grant_is_dead(body: str) -> bool:
        try:
            answer = json.loads(body) if body else None
        except ValueError:
            return False
        error = pinterest_error(answer)
        if error is not None:
            return error[0] == GRANT_INVALID
        return isinstance(answer, dict) and answer.get("error") in DEFINITE_REFUSALS

    # --- errors -------------------------------------------------------------------------------------------

    def error_words(self, reply: HttpReply) -> Optional[str]:
        error = pinterest_error(reply.json())
        if error is not None:
            return f"{error[1]} (code {error[0]})"
        return super().error_words(reply)  # OAuth's {"error", "error_description"}

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        # A Trial app's pin is refused with 403: a new consent would not help, the app's access tier would.
        error = pinterest_error(reply.json()) if reply.status == 403 else None
        if error is not None and error[0] == TRIAL_ACCESS:
            raise Rejected(self.platform_words(reply), reply.status, self.error_excerpt(reply))
        return super().check_reply(reply, visible, what)

    def where_to_check(self, channel: Channel) -> str:
        return f"the pins of the Pinterest account of the channel \"{channel.name}\""

    # --- the account and its boards ------------------------------------------------------------------------

    async def connect(self, channel: Channel) -> Connected:
        reply = await self.send(channel, "GET", self.api_base() + "/v5/user_account",
                                what="the account (/v5/user_account)", headers=bearer(channel))
        account = reply.json()
        if not isinstance(account, dict) or not isinstance(account.get("id"), str) or not account["id"]:
            raise Rejected(f"Pinterest answered /v5/user_account with {reply.described('an account with an id')}",
                           reply.status)
        username = account.get("username") if isinstance(account.get("username"), str) else None
        picture = account.get("profile_image") if isinstance(account.get("profile_image"), str) else None
        # Postiz names the channel by the username, and so does rustiz.
        return Connected(ChannelAccount(account["id"], username or account["id"], username, picture or None))

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        reply = await self.send(channel, "GET", self.api_base() + "/v5/user_account", what="the account's counts",
                                headers=bearer(channel))
        account = reply.json() if isinstance(reply.json(), dict) else {}
        return analytics_figures({"Followers": account.get("follower_count"), "Pins": account.get("pin_count"),
                                  "Monthly views": account.get("monthly_views")})

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        """The pin's daily impressions, saves and clicks over the last `days` (Pinterest keeps 90 days)."""
        end = time.gmtime()
        start = time.gmtime(time.time() - 86400 * (min(days, 90) - 1))
        query = (f"start_date={time.strftime('%Y-%m-%d', start)}&end_date={time.strftime('%Y-%m-%d', end)}"
                 "&metric_types=IMPRESSION,SAVE,PIN_CLICK,OUTBOUND_CLICK")
        reply = await self.send(channel, "GET", f"{self.api_base()}/v5/pins/{quote(release.id, safe='')}/analytics?"
                                + query, what="the pin's analytics", headers=bearer(channel))
        answer = reply.json() if isinstance(reply.json(), dict) else {}
        daily = (answer.get("all") or {}).get("daily_metrics") if isinstance(answer.get("all"), dict) else None
        series: dict = {}
        for day in daily if isinstance(daily, list) else []:
            metrics = day.get("metrics") if isinstance(day, dict) and isinstance(day.get("metrics"), dict) else {}
            for metric, label in PIN_METRICS.items():
                value = metrics.get(metric)
                if isinstance(value, int) and not isinstance(value, bool) and isinstance(day.get("date"), str):
                    series.setdefault(label, []).append({"total": str(value), "date": day["date"]})
        return [{"label": label, "data": points, "percentageChange": percentage_change(points)}
                for label, points in series.items()]

    async def tool_boards(self, channel: Channel, data: dict) -> list:
        """The account's boards as Postiz lists them: [{"name", "id"}] (up to 1,000, in Pinterest's order)."""
        boards: list = []
        bookmark: Optional[str] = None
        for _ in range(PINTEREST_BOARD_PAGES):
            query = {"page_size": 250, **({"bookmark": bookmark} if bookmark else {})}
            reply = await self.send(channel, "GET", f"{self.api_base()}/v5/boards?{urlencode(query)}",
                                    what="the list of boards", headers=bearer(channel))
            answer = reply.json() if isinstance(reply.json(), dict) else {}
            items = answer.get("items") if isinstance(answer.get("items"), list) else []
            boards += [{"name": item.get("name"), "id": str(item["id"])} for item in items
                       if isinstance(item, dict) and item.get("id") is not None]
            bookmark = answer.get("bookmark") if isinstance(answer.get("bookmark"), str) else None
            if not bookmark:
                break
        return boards

    # --- publishing ---------------------------------------------------------------------------------------

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        """Pictures Pinterest's base64 sources take are JPEG and PNG only; the descriptor's rule checks counts."""
        for media in values[0]["image"] if values else ():
            name = str(media.get("path", "")).split("?")[0].rsplit("/", 1)[-1] if isinstance(media, dict) else ""
            extension = name.rpartition(".")[2].lower() if "." in name else ""
            if extension in ("gif", "webp", "bmp", "tif", "tiff", "avif", "heic", "heif", "svg"):
                return f"Pinterest takes JPEG and PNG pictures only, not .{extension}"
        return None

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        board = post.settings.get("board")
        if not isinstance(board, str) or not board.strip():
            raise Rejected("A Pinterest pin needs a board (the post's \"board\" setting)")
        media_source = await self._media_source(channel, post.media)
        pin: dict = {"board_id": board.strip(), "description": post.text, "media_source": media_source}
        for name in ("title", "link", "dominant_color"):
            if isinstance(post.settings.get(name), str) and post.settings[name]:
                pin[name] = post.settings[name]
        alt = next((media.alt for media in post.media if media.kind == "image" and media.alt), "")
        if alt:
            pin["alt_text"] = alt[:PINTEREST_ALT_TEXT_LIMIT]  # Pinterest's limit; the rest would be refused
        reply = await self.send(channel, "POST", self.api_base() + "/v5/pins", visible=True, what="the pin",
                                json_body=pin, headers=bearer(channel), timeouts=Timeouts(read=120, total=300))
        answer = reply.json()
        if not isinstance(answer, dict) or answer.get("id") is None:
            raise OutcomeUnknown(f"Pinterest accepted the pin but answered {reply.described('a pin')}", reply.status)
        pin_id = str(answer["id"])
        return Release(pin_id, f"{self.auth_base()}/pin/{pin_id}")

    async def delete(self, channel: Channel, release: Release) -> None:
        await self.send_delete(channel, "DELETE", f"{self.api_base()}/v5/pins/{quote(release.id, safe='')}",
                               "the deletion of the pin", headers=bearer(channel))

    async def _media_source(self, channel: Channel, media: tuple) -> dict:
        """The pin's media_source: an uploaded video with its cover, one base64 image, or a carousel of them."""
        videos = [item for item in media if item.kind == "video"]
        images = [item for item in media if item.kind != "video"]
        if not media:
            raise Rejected("A Pinterest pin needs a picture or a video")
        if videos:
            if len(videos) > 1 or len(images) != 1:
                raise Rejected("A Pinterest video pin takes one video and one picture, its cover")
            cover = self._image(images[0], "the cover picture")
            media_id = await self._upload_video(channel, videos[0])
            return {"source_type": "video_id", "media_id": media_id,
                    "cover_image_content_type": cover["content_type"], "cover_image_data": cover["data"]}
        if len(images) == 1:
            return {"source_type": "image_base64", **self._image(images[0], "the picture")}
        if len(images) > 5:
            raise Rejected("A Pinterest pin takes at most 5 pictures")
        return {"source_type": "multiple_image_base64",
                "items": [self._image(image, f"picture {number}") for number, image in enumerate(images, 1)]}

    @staticmethod
    def _image(media: MediaFile, item: str) -> dict:
        content_type = media.content_type.split(";")[0].strip().lower()
        if content_type not in PINTEREST_IMAGE_TYPES:
            raise Rejected(f"Pinterest takes JPEG and PNG pictures only, and {item} is {content_type}", item=item)
        return {"content_type": content_type, "data": base64.b64encode(media.read()).decode()}

    async def _upload_video(self, channel: Channel, video: MediaFile) -> str:
        """Register the upload, send the file with the form fields Pinterest gave, wait until it is processed."""
        item = "the video"
        try:
            reply = await self.send(channel, "POST", self.api_base() + "/v5/media", what="the video's registration",
                                    json_body={"media_type": "video"}, headers=bearer(channel))
            upload = reply.json()
            if (not isinstance(upload, dict) or not isinstance(upload.get("media_id"), str)
                    or not isinstance(upload.get("upload_url"), str)
                    or not isinstance(upload.get("upload_parameters"), dict)):
                raise Retryable(f"Pinterest answered the video's registration with "
                                f"{reply.described('an upload URL and its parameters')}", reply.status)
            # The upload URL is a storage bucket's (Amazon S3's form POST): its fields first, the file last.
            fields = [(str(name), str(value)) for name, value in upload["upload_parameters"].items() if name]
            body, content_type = encode_multipart(fields + [("file", (video.name, video.read(), video.content_type))])
            try:
                await self.send(channel, "POST", upload["upload_url"], what="the video's upload", body=body,
                                headers={"Content-Type": content_type}, timeouts=Timeouts(read=120, total=900))
            except NeedsReconnect as refused:  # the bucket refused its signed fields (expired): not our token
                raise Retryable(f"the storage Pinterest uploads videos to refused the upload (HTTP {refused.status}); "
                                "the next attempt registers the video again", refused.status) from None
            await self._wait_until_processed(channel, upload["media_id"])
        except PublishError as error:
            error.item = error.item or item
            raise
        return upload["media_id"]

    async def _wait_until_processed(self, channel: Channel, media_id: str) -> None:
        """Poll GET /v5/media/{id} (registered, processing, succeeded or failed), for a bounded time."""
        async def succeeded() -> Optional[bool]:
            reply = await self.send(channel, "GET", f"{self.api_base()}/v5/media/{media_id}",
                                    what="the video's processing", headers=bearer(channel))
            answer = reply.json()
            status = answer.get("status") if isinstance(answer, dict) else None
            if status == "failed":
                raise Rejected("Pinterest could not process the video (its media status is \"failed\")")
            return True if status == "succeeded" else None

        await wait_for_processing(
            succeeded, PINTEREST_MEDIA_WAIT_SECONDS, 0.25,
            lambda: Retryable(f"Pinterest was still processing the video after {PINTEREST_MEDIA_WAIT_SECONDS:.0f} s; "
                              "the post waits and tries again"), longest_pause=5.0)


PROVIDER = PinterestProvider()
