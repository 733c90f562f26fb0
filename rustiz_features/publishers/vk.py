"""VK (VKontakte), through the operator's VK ID app: OAuth 2.1 consent with PKCE, posts on the user's wall.

As in Postiz: the app is VK_ID alone (VK ID's web flow is a public client: PKCE, no secret), the scopes are
asked at consent, and a post is a wall.post with its pictures and videos uploaded through VK's upload servers
(photos.getWallUploadServer -> the upload URL -> photos.saveWallPhoto; video.save -> the upload URL); thread
parts are comments (wall.createComment) under the post.
VK ID sends a `device_id` with the code, which both the code exchange and every refresh need: the callback
hands it over (callback_parameters), and it is kept after the refresh token as Postiz keeps it
("<refresh token>&&&&<device id>"), so channels moved from Postiz keep refreshing.
VK's API answers HTTP 200 with {"error": {"error_code", "error_msg"}} when it refuses: codes 6 (too many
requests per second), 9 (flood control) and 29 (rate limit reached) are passing, 5 is a dead token.
"""
from __future__ import annotations

import re
import secrets
from typing import Any, Optional

from ..catalogue import ChannelAccount
from ..http_client import HttpClient, HttpReply, Timeouts, encode_multipart
from .base import (
    Channel, Connected, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, PublishError, Rejected, Release,
    Retryable, analytics_figures, error_fields,
)
from .oauth import AppCredentials, OAuthProvider, Tokens

VK_API_VERSION = "5.199"
VK_WEB = "https://vk.com"  # where posts are seen
DEVICE_SEPARATOR = "&&&&"  # Postiz's, between the refresh token and the device id
VK_ATTACHMENTS_LIMIT = 10  # a wall post's attachments
# VK API error codes -> seconds to wait: too many requests per second, flood control, captcha, rate limit reached.
VK_THROTTLED = {6: 1.0, 9: 60.0, 14: 300.0, 29: 3600.0}
VK_ACCOUNT_REFUSED = (5, 17, 18)  # authorization failed, validation required, account deleted or banned
VK_SERVER_TROUBLE = (1, 10)  # unknown error, internal server error
VK_WALL_LINK = r"/wall(-?\d+)_(\d+)(?:\?reply=(\d+))?$"


def vk_error(answer: Any) -> Optional[tuple]:
    """(error_code, error_msg) of VK API's {"error": {"error_code": int, "error_msg": str}}; None otherwise."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict) or type(error.get("error_code")) is not int:
        return None
    message = error.get("error_msg") if isinstance(error.get("error_msg"), str) else ""
    return error["error_code"], message.strip() or "no message"


class VkProvider(OAuthProvider):
    identifier = "vk"
    app_variables = ("VK_ID",)  # Postiz's: the VK ID app's id; a web app of VK ID has no secret to send
    auth_origin = "https://id.vk.com"
    api_origin = "https://api.vk.com"
    authorize_path = "/authorize"
    token_path = "/oauth2/auth"
    scopes = ("vkid.personal_info", "wall", "photos", "video")
    callback_parameters = ("device_id",)
    concurrency = 2  # Postiz's maxConcurrentJob
    spacing = 1.0
    can_delete = True
    operator_guide = (
        "Create a web app at id.vk.com/about/business (VK ID for business: the cabinet at id.vk.com/business/go), "
        "add the trusted redirect URL {FRONTEND_URL}/integrations/social/vk and the base domain, and put its app id "
        "(client_id) in VK_ID; VK ID's web flow uses PKCE and no secret. The scopes asked are vkid.personal_info, "
        "wall, photos and video; posting on walls needs the app's access to those (granted in the cabinet). "
        "Access tokens last an hour and are refreshed with the refresh token and the device id VK ID sends.")

    # --- OAuth (VK ID) -----------------------------------------------------------------------------------

    def token_request_headers(self, app: AppCredentials) -> dict:
        return {"Accept": "application/json"}

    def token_form_extra(self, app: AppCredentials) -> dict:
        return {"client_id": app.client_id, "state": secrets.token_urlsafe(24)}

    async def exchange_code(self, http: HttpClient, app: AppCredentials, code: str, redirect_uri: str,
                            code_verifier: Optional[str], details: dict) -> Tokens:
        device_id = details.get("device_id")
        if not device_id:
            raise Rejected("VK ID came back without the device_id it sends with the code; connect again")
        tokens = await self.token_request(http, app, {
            "grant_type": "authorization_code", "code": code, "code_verifier": code_verifier or "",
            "device_id": device_id, "redirect_uri": redirect_uri}, "the code exchange")
        return self._with_device(tokens, device_id)

    async def refresh_tokens(self, http: HttpClient, app: AppCredentials, refresh_token: str) -> Tokens:
        refresh, _, device_id = refresh_token.partition(DEVICE_SEPARATOR)
        tokens = await self.token_request(http, app, {
            "grant_type": "refresh_token", "refresh_token": refresh, "device_id": device_id}, "the token refresh")
        return self._with_device(tokens, device_id)

    @staticmethod
    def _with_device(tokens: Tokens, device_id: str) -> Tokens:
        refresh = tokens.refresh_token and tokens.refresh_token + DEVICE_SEPARATOR + device_id
        return tokens._replace(refresh_token=refresh)

    def tokens_from(self, reply: HttpReply) -> Tokens:
        tokens = super().tokens_from(reply)
        user_id = reply.json().get("user_id")
        return tokens._replace(extra={"userId": str(user_id)}) if type(user_id) is int else tokens

    # --- errors --------------------------------------------------------------------------------------------

    def error_words(self, reply: HttpReply) -> Optional[str]:
        error = vk_error(reply.json())
        if error is not None:
            return f"{error[1]} (error {error[0]})"
        return error_fields(reply.json(), "error", "error_description")  # VK ID's OAuth errors

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """VK answers its refusals with HTTP 200: the API's {"error": {...}} and VK ID's {"error": "..."}."""
        answer = reply.json()
        if not (200 <= reply.status < 300) or not isinstance(answer, dict) or "error" not in answer:
            return super().check_reply(reply, visible, what)
        message, body = self.platform_words(reply), self.error_excerpt(reply)
        if not visible:
            message += f" (on {what})"
        error = vk_error(answer)
        if error is None:  # VK ID's OAuth error, e.g. invalid_grant: token_request tells a dead grant apart
            raise Rejected(message, 400, body)
        code = error[0]
        if code in VK_THROTTLED:
            raise Retryable(message, reply.status, body, after=VK_THROTTLED[code])
        if code in VK_ACCOUNT_REFUSED:
            raise NeedsReconnect(message, reply.status, body)
        if code in VK_SERVER_TROUBLE:
            if visible:
                raise OutcomeUnknown(f"a server error, after the post was sent: {message}", reply.status, body)
            raise Retryable(message, reply.status, body)
        raise Rejected(message, reply.status, body)

    def where_to_check(self, channel: Channel) -> str:
        return f"the VK wall of the channel \"{channel.name}\""

    # --- the API -----------------------------------------------------------------------------------------

    async def call(self, channel: Channel, method: str, params: dict, visible: bool = False) -> Any:
        """One VK API method (POST /method/<name>, the token in the form, not the URL): its `response`."""
        form = {**{name: str(value) for name, value in params.items()},
                "access_token": channel.credentials["accessToken"], "v": VK_API_VERSION}
        reply = await self.send(channel, "POST", f"{self.api_base()}/method/{method}", visible=visible,
                                what=method, form=form)
        answer = reply.json()
        if not isinstance(answer, dict) or "response" not in answer:
            failure = OutcomeUnknown if visible else Retryable
            raise failure(f"VK answered {method} with {reply.described('a VK API response')}", reply.status)
        return answer["response"]

    async def connect(self, channel: Channel) -> Connected:
        users = await self.call(channel, "users.get", {"fields": "photo_200,screen_name"})
        user = users[0] if isinstance(users, list) and users and isinstance(users[0], dict) else {}
        if type(user.get("id")) is not int:
            raise Rejected("VK answered users.get without the account's id")
        name = " ".join(str(user.get(part) or "") for part in ("first_name", "last_name")).strip()
        screen_name = user.get("screen_name") if isinstance(user.get("screen_name"), str) else None
        picture = user.get("photo_200") if isinstance(user.get("photo_200"), str) else None
        return Connected(ChannelAccount(str(user["id"]), name or screen_name or str(user["id"]), screen_name, picture))

    def _owner(self, channel: Channel) -> str:
        owner = str(channel.credentials.get("userId") or "")
        if not owner:
            raise NeedsReconnect("this VK channel was connected without its user id: connect it again")
        return owner

    # --- publishing -----------------------------------------------------------------------------------------

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        for number, value in enumerate(values):
            if len(value["image"]) > VK_ATTACHMENTS_LIMIT:
                where = "the post" if number == 0 else f"comment {number}"
                return f"VK takes at most {VK_ATTACHMENTS_LIMIT} pictures and videos in one post or comment ({where})"
        return None

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        owner = self._owner(channel)
        attachments = [await self._attachment(channel, owner, media) for media in post.media]
        params = {"owner_id": owner, "message": post.text}
        if attachments:
            params["attachments"] = ",".join(attachments)
        if parent is None:
            answer = await self.call(channel, "wall.post", params, visible=True)
            post_id = answer.get("post_id") if isinstance(answer, dict) else None
            if type(post_id) is not int:
                raise OutcomeUnknown("VK accepted the post but answered without its post_id")
            return Release(str(post_id), f"{VK_WEB}/wall{owner}_{post_id}", {"post": post_id})
        root = parent.reply_ref.get("post") if isinstance(parent.reply_ref, dict) else None
        if root is None:
            raise Rejected("the post this comment answers has no VK post id")
        answer = await self.call(channel, "wall.createComment", {**params, "post_id": root}, visible=True)
        comment_id = answer.get("comment_id") if isinstance(answer, dict) else None
        if type(comment_id) is not int:
            raise OutcomeUnknown("VK accepted the comment but answered without its comment_id")
        return Release(str(comment_id), f"{VK_WEB}/wall{owner}_{root}?reply={comment_id}", {"post": root})

    async def _attachment(self, channel: Channel, owner: str, media: MediaFile) -> str:
        """"photo<owner>_<id>" or "video<owner>_<id>", once the file is on VK's upload server and saved."""
        try:
            if media.kind == "video":
                return await self._upload_video(channel, media)
            return await self._upload_photo(channel, owner, media)
        except PublishError as error:
            error.item = error.item or media.name
            raise

    async def _upload(self, channel: Channel, url: Any, field: str, media: MediaFile, what: str) -> dict:
        """POST the file to the upload URL VK gave; its JSON answer (VK's upload servers' own shape)."""
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise Retryable(f"VK gave no upload URL for {what}")
        body, content_type = encode_multipart([(field, (media.name, media.read(), media.content_type))])
        reply = await self.send(channel, "POST", url, what=f"the upload of {what}", body=body,
                                headers={"Content-Type": content_type}, timeouts=Timeouts(read=120, total=900))
        answer = reply.json()
        if not isinstance(answer, dict):
            raise Retryable(f"VK's upload server answered {reply.described('JSON')}", reply.status)
        if isinstance(answer.get("error"), str):  # the upload servers' own refusal: the file itself
            raise Rejected(f"VK's upload server refused {what}: {answer['error'][:200]}")
        return answer

    async def _upload_photo(self, channel: Channel, owner: str, media: MediaFile) -> str:
        server = await self.call(channel, "photos.getWallUploadServer", {})
        uploaded = await self._upload(channel, (server or {}).get("upload_url") if isinstance(server, dict) else None,
                                      "photo", media, "the picture")
        if not uploaded.get("photo") or uploaded.get("photo") == "[]" or "hash" not in uploaded:
            raise Rejected("VK's upload server did not take the picture (is it a JPEG, PNG or GIF under 50 MB?)")
        saved = await self.call(channel, "photos.saveWallPhoto", {
            "user_id": owner, "photo": uploaded["photo"], "server": uploaded.get("server", ""),
            "hash": uploaded["hash"]})
        photo = saved[0] if isinstance(saved, list) and saved and isinstance(saved[0], dict) else {}
        if type(photo.get("id")) is not int:
            raise Retryable("VK answered photos.saveWallPhoto without the picture's id")
        return f"photo{photo.get('owner_id', owner)}_{photo['id']}"

    async def _upload_video(self, channel: Channel, media: MediaFile) -> str:
        saved = await self.call(channel, "video.save", {"name": media.name, "wallpost": 0})
        saved = saved if isinstance(saved, dict) else {}
        uploaded = await self._upload(channel, saved.get("upload_url"), "video_file", media, "the video")
        video_id = uploaded.get("video_id", saved.get("video_id"))
        owner = uploaded.get("owner_id", saved.get("owner_id"))
        if type(video_id) is not int or type(owner) is not int:
            raise Retryable("VK answered the video's upload without its id")
        return f"video{owner}_{video_id}"

    # --- after publishing ----------------------------------------------------------------------------------

    async def delete(self, channel: Channel, release: Release) -> None:
        """wall.delete for a post, wall.deleteComment for a comment (its link carries ?reply=)."""
        found = re.search(VK_WALL_LINK, release.url or "")
        if found is None:
            raise Rejected(f"{release.url!r} is not a VK wall post's address")
        owner, post_id, comment_id = found.groups()
        if comment_id:
            await self.call(channel, "wall.deleteComment", {"owner_id": owner, "comment_id": comment_id})
        else:
            await self.call(channel, "wall.delete", {"owner_id": owner, "post_id": post_id})

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        """The account's followers as of now (users.get's followers_count)."""
        users = await self.call(channel, "users.get", {"fields": "followers_count"})
        user = users[0] if isinstance(users, list) and users and isinstance(users[0], dict) else {}
        return analytics_figures({"Followers": user.get("followers_count")})

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        """The post's likes, reposts, comments and views as of now (wall.getById)."""
        found = re.search(VK_WALL_LINK, release.url or "")
        if found is None or found[3]:
            return None
        answer = await self.call(channel, "wall.getById", {"posts": f"{found[1]}_{found[2]}"})
        items = answer.get("items") if isinstance(answer, dict) else answer
        post = items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else {}

        def counted(name: str) -> Optional[int]:
            return post[name].get("count") if isinstance(post.get(name), dict) else None
        return analytics_figures({"Likes": counted("likes"), "Reposts": counted("reposts"),
                                  "Comments": counted("comments"), "Views": counted("views")})


PROVIDER = VkProvider()
