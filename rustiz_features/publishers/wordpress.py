"""WordPress (REST API, application passwords): posts from Postiz HTML, featured image, categories and tags.
"""
from __future__ import annotations

import re
from typing import Any, Optional

from ..catalogue import ChannelAccount, url_host
from ..http_client import HttpReply, Timeouts
from ..text import escape_html, html_to_text
from .articles import basic_auth_header, image_paragraph, remember_attempt
from .base import (
    Channel, Connected, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, Provider, PublishError, Rejected,
    Release, Retryable, error_fields,
)


class WordPressProvider(Provider):
    """A WordPress site's REST API with an application password: media uploaded, then the post (or page)."""
    identifier = "wordpress"
    threads = False  # comments on one's own post are rarely wanted, and need the post to allow them
    concurrency = 2
    can_delete = True  # DELETE /wp/v2/<posts|pages|type>/{id}: to the site's trash, as WordPress's own Delete
    spacing = 2.0
    media_settings = ("main_image",)  # the featured image, which need not be among the post's images

    @staticmethod
    def _headers(channel: Channel) -> dict:
        return basic_auth_header(channel.credentials["username"].strip(), channel.credentials["password"])

    @staticmethod
    def _api(channel: Channel) -> str:
        """The REST API root: /wp-json/wp/v2, or ?rest_route=/wp/v2 on sites without pretty permalinks."""
        return channel.session.get("api") or channel.credentials["domain"].rstrip("/") + "/wp-json/wp/v2"

    @staticmethod
    def _endpoint(api: str, path: str, query: str = "") -> str:
        return api + path + (("&" if "?" in api else "?") + query if query else "")

    async def connect(self, channel: Channel) -> Connected:
        domain = channel.credentials["domain"].rstrip("/")
        status = 404
        for api in (domain + "/wp-json/wp/v2", domain + "/?rest_route=/wp/v2"):
            try:
                reply = await self.send(channel, "GET", self._endpoint(api, "/users/me", "context=edit"),
                                        what="the account check (users/me)", headers=self._headers(channel))
            except NeedsReconnect as refused:
                refused.message += (". Use an application password (WordPress admin → Users → Profile → "
                                    "Application Passwords), not the login password")
                if "rest_not_logged_in" in refused.message:  # WordPress saw no credentials at all
                    refused.message += (". If it is right, the web server drops the Authorization header before "
                                        "WordPress sees it (Apache with CGI/FastCGI: add SetEnvIf Authorization "
                                        '"(.*)" HTTP_AUTHORIZATION=$1 to .htaccess)')
                raise
            except Rejected as refused:
                if refused.status == 404:
                    continue
                raise
            me, status = reply.json(), reply.status
            if isinstance(me, dict) and "id" in me:
                return self._connected(channel, api, me)
        raise Rejected(f"{domain} has no WordPress REST API: neither {domain}/wp-json/wp/v2/users/me nor "
                       f"{domain}/?rest_route=/wp/v2/users/me answered with a WordPress user (the last: HTTP "
                       f"{status}). Check that the domain is the address of the WordPress site itself (like "
                       "https://blog.example.com) and that no plugin turns the REST API off", status)

    def _connected(self, channel: Channel, api: str, me: dict) -> Connected:
        roles = ", ".join(me.get("roles") or []) or "none"
        capabilities = me.get("capabilities")  # a security plugin may hide them: then the first post tells
        if isinstance(capabilities, dict) and not capabilities.get("publish_posts"):
            raise Rejected(f"the WordPress user {me.get('name') or me.get('slug')} cannot publish posts (roles: "
                           f"{roles}): give it the Author, Editor or Administrator role, or use another user")
        avatars = me.get("avatar_urls") if isinstance(me.get("avatar_urls"), dict) else {}
        picture = avatars[max(avatars, key=lambda size: int(size) if size.isdigit() else 0)] if avatars else None
        host = url_host(channel.credentials["domain"])
        account = ChannelAccount(f"{host}/{me['id']}", channel.name, me.get("slug") or me.get("name"), picture)
        return Connected(account, session={"api": api})

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        """A 403 is a permission the user lacks for this post (a role, a category), not refused credentials,
        which are a 401."""
        if reply.status == 403 and self.error_words(reply):
            raise Rejected(f"WordPress refused {what} (HTTP 403): {self.platform_words(reply)}", 403,
                           self.error_excerpt(reply))
        return super().check_reply(reply, visible, what)

    def error_words(self, reply: HttpReply) -> Optional[str]:
        """WordPress errors are {"code", "message" (with HTML), "data": {"status"}}."""
        answer = reply.json()
        words = error_fields(answer, "code", "message")
        return html_to_text(words) if words and isinstance(answer.get("message"), str) else None

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        try:
            release = await self._publish(channel, post)
        except Retryable:
            raise  # the next attempt reuses the media already in the library
        except PublishError:
            remember_attempt(channel, "uploads", post.idempotency_key, None)
            raise
        remember_attempt(channel, "uploads", post.idempotency_key, None)
        return release

    async def _publish(self, channel: Channel, post: OutgoingPost) -> Release:
        settings, api = post.settings, self._api(channel)
        uploads = dict((channel.session.get("uploads") or {}).get(post.idempotency_key) or {})

        async def uploaded(key: str, media: MediaFile, item: str) -> tuple:
            """(media id, source URL) in the site's library, uploaded once across attempts."""
            if key not in uploads:
                uploads[key] = await self._upload(channel, api, media, item)
                remember_attempt(channel, "uploads", post.idempotency_key, uploads)
            return tuple(uploads[key])

        # The featured image: settings.main_image (Postiz's), else the post's first image. Either way it is
        # uploaded once and not repeated in the content.
        cover = (post.settings_media or {}).get("main_image")
        if cover is not None and cover.kind != "image":
            raise Rejected("WordPress's featured image is a picture, and settings.main_image is a video",
                           item="the main_image setting")
        featured_id, inline_html = None, []
        if cover is not None and all(media.url != cover.url for media in post.media):
            featured_id = (await uploaded("main_image", cover, "the main_image setting"))[0]
        for index, media in enumerate(post.media, 1):
            media_id, source_url = await uploaded(str(index), media, f"media item {index}")
            if featured_id is None and media.kind == "image" and (cover is None or media.url == cover.url):
                featured_id = media_id
            elif media.kind == "video":
                inline_html.append(f'<p>[video src="{escape_html(source_url, quote=True)}"]</p>')
            else:
                inline_html.append(image_paragraph(source_url, media.alt))
        article = {"title": settings.get("title") or "", "content": post.html + "".join(inline_html),
                   "status": settings.get("status") or "publish"}
        if featured_id is not None:
            article["featured_media"] = featured_id
        for key in ("categories", "tags"):
            if settings.get(key):
                article[key] = settings[key]
        post_type = settings.get("type") or "post"
        collection = {"post": "posts", "page": "pages"}.get(post_type, post_type)
        reply = await self.send(channel, "POST", self._endpoint(api, f"/{collection}"), visible=True,
                                what=f"the {post_type}", json_body=article, headers=self._headers(channel))
        answer = reply.json()
        answer = answer if isinstance(answer, dict) else {}
        if "id" not in answer:
            raise OutcomeUnknown(f"WordPress answered the {post_type} without its id: "
                                 f"{reply.described(f'a WordPress {post_type}')}", reply.status)
        return Release(str(answer["id"]), answer.get("link") or "", {"collection": collection})

    async def delete(self, channel: Channel, release: Release) -> None:
        """The post (or page...) to the site's trash, where its owner can still restore it; one in the trash
        already answers 410 (rest_already_trashed), a missing one 404. Posts published before rustiz recorded
        their collection are taken for posts."""
        collection = release.reply_ref.get("collection") if isinstance(release.reply_ref, dict) else None
        if not release.id.isdigit() or not re.fullmatch(r"[\w-]+", collection or "posts"):
            raise Rejected(f"{release.id[:40]!r} is not a WordPress post id")
        await self.send_delete(channel, "DELETE", self._endpoint(self._api(channel), f"/{collection or 'posts'}/{release.id}"),
                               "the deletion of the post", headers=self._headers(channel))

    async def _upload(self, channel: Channel, api: str, media: MediaFile, item: str) -> tuple:
        """(media id, source URL) of one file (`item`: "media item 2", "the main_image setting") added to the
        site's media library."""
        from urllib.parse import quote
        filename = re.sub(r'["\\\r\n]', "_", media.name)
        query = "alt_text=" + quote(media.alt) if media.alt else ""
        headers = {**self._headers(channel), "Content-Type": media.content_type,
                   "Content-Disposition": f'attachment; filename="{filename}"'}
        try:
            reply = await self.send(channel, "POST", self._endpoint(api, "/media", query),
                                    what=f"the upload of {item}", body=media.read(), headers=headers,
                                    timeouts=Timeouts(read=120, total=600))
        except PublishError as error:
            error.item = item
            raise
        answer = reply.json()
        answer = answer if isinstance(answer, dict) else {}
        if "id" not in answer:
            raise Retryable(f"WordPress answered the upload of {item} without a media id: "
                            f"{reply.described('a WordPress media item')}", reply.status, item=item)
        return answer["id"], answer.get("source_url") or ""

    def where_to_check(self, channel: Channel) -> str:
        return f"the posts of {channel.credentials['domain'].rstrip('/')}/wp-admin/edit.php"

    async def tool_postTypes(self, channel: Channel, data: dict) -> list:
        types = await self._listing(channel, "/types")
        return [{"id": kind.get("rest_base") or slug, "name": kind.get("name") or slug}
                for slug, kind in (types.items() if isinstance(types, dict) else ())
                if isinstance(kind, dict) and slug not in ("attachment", "nav_menu_item", "wp_block", "wp_template",
                                                           "wp_template_part", "wp_navigation")]

    async def tool_categoriesList(self, channel: Channel, data: dict) -> list:
        return [{"id": item["id"], "name": item.get("name", "")}
                for item in await self._listing(channel, "/categories", "per_page=100") if isinstance(item, dict)]

    async def tool_tagsList(self, channel: Channel, data: dict) -> list:
        return [{"id": item["id"], "name": item.get("name", "")}
                for item in await self._listing(channel, "/tags", "per_page=100") if isinstance(item, dict)]

    async def _listing(self, channel: Channel, path: str, query: str = "") -> Any:
        reply = await self.send(channel, "GET", self._endpoint(self._api(channel), path, query),
                                headers=self._headers(channel))
        return reply.json() or []


PROVIDER = WordPressProvider()
