"""Google Business Profile (Postiz's `gmb`), through the operator's Google app: OAuth 2.0 with offline access,
the business location picked after consent, local posts (STANDARD, EVENT, OFFER, with a call-to-action button
and one photo), the location's daily figures, and deleting a post.

Google's OAuth is publishers/google.py's, as YouTube's (Postiz even falls back to YouTube's app). Google's Business Profile APIs live on several hosts
(mybusinessaccountmanagement, mybusinessbusinessinformation, mybusiness v4, businessprofileperformance,
www.googleapis.com for the user's profile); RUSTIZ_GMB_API_URL stands for all of them, RUSTIZ_GMB_AUTH_URL for
the consent page and the token endpoint. A local post's photo can only be given as a URL Google downloads
(Google: "To include media in a local post, you must upload it from a URL"), so a post with a photo needs a
FRONTEND_URL Google can reach. A local post has no replies: thread parts are refused.
"""
from __future__ import annotations

import os
import time
from typing import Any, Optional
from urllib.parse import quote, urlencode

from ..catalogue import ChannelAccount
from ..http_client import HttpReply, platform_url
from .base import (
    Channel, Connected, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable,
    analytics_figures,
)
from .google import SCOPE, GoogleOAuthProvider, google_error
from .oauth import AppCredentials, bearer, variable_prefix

MANAGE_SCOPE = SCOPE + "business.manage"
MOST_PAGES = 10  # pages of accounts, and of each account's locations, read for the choice (100 locations a page)
LOCATION_FIELDS = "name,title,storefrontAddress,metadata,languageCode"
# Postiz's daily metrics of a location, with its labels.
DAILY_METRICS = {"WEBSITE_CLICKS": "Website Clicks", "CALL_CLICKS": "Phone Calls",
                 "BUSINESS_DIRECTION_REQUESTS": "Direction Requests",
                 "BUSINESS_IMPRESSIONS_DESKTOP_MAPS": "Desktop Map Views",
                 "BUSINESS_IMPRESSIONS_MOBILE_MAPS": "Mobile Map Views"}
POST_METRICS = {"LOCAL_POST_VIEWS_SEARCH": "Views on Search", "LOCAL_POST_ACTIONS_CALL_TO_ACTION": "Button clicks"}
PHOTO_TYPES = ("image/jpeg", "image/png")
PHOTO_BYTES = (10 * 1024, 5 * 1024 * 1024)  # Google's bounds for a post's photo
NO_URL_ACTIONS = ("NONE", "CALL")  # a CALL button dials the location's phone: Google wants no url with it
NO_QUOTA = ("Google allows this Cloud project no Business Profile API calls (its quota is 0): request access "
            "to the Business Profile APIs for the project (Google's \"GBP API contact form\"), then try again")


def error_details(answer: Any) -> list:
    """The `details` of Google's error shape, each a dict."""
    error = answer.get("error") if isinstance(answer, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    return [item for item in details if isinstance(item, dict)] if isinstance(details, list) else []


def field_problems(answer: Any) -> list:
    """"field: what is wrong" for each field Google names in its error details (google.rpc.BadRequest's
    fieldViolations, or Business Profile v4's ValidationError errorDetails)."""
    found = []
    for detail in error_details(answer):
        for item in (detail.get("fieldViolations") or detail.get("errorDetails") or []):
            if isinstance(item, dict):
                words = item.get("description") or item.get("message")
                if isinstance(words, str) and words.strip():
                    found.append(f"{item.get('field')}: {words.strip()}" if item.get("field") else words.strip())
    return found[:5]


def no_quota(answer: Any) -> bool:
    """A 429 saying the project's quota is 0: an unapproved project, not a busy minute."""
    return any(str((detail.get("metadata") or {}).get("quota_limit_value")) == "0" for detail in error_details(answer)
               if isinstance(detail.get("metadata"), dict))


def google_date(text: Any) -> Optional[dict]:
    """{"year", "month", "day"} of a "YYYY-MM-DD..." setting; None when it is not one."""
    import datetime
    try:
        day = datetime.date.fromisoformat(str(text)[:10])
    except ValueError:
        return None
    return {"year": day.year, "month": day.month, "day": day.day}


def google_time(text: Any) -> Optional[dict]:
    """{"hours", "minutes", "seconds", "nanos"} of an "HH:MM" setting; None when it is not one."""
    hours, _, minutes = str(text or "").partition(":")
    if not (hours.isdigit() and minutes[:2].isdigit() and int(hours) < 24 and int(minutes[:2]) < 60):
        return None
    return {"hours": int(hours), "minutes": int(minutes[:2]), "seconds": 0, "nanos": 0}


def setting(settings: dict, name: str) -> str:
    value = settings.get(name)
    return value.strip() if isinstance(value, str) else ""


class GmbProvider(GoogleOAuthProvider):
    identifier = "gmb"
    # Postiz's names; like Postiz, YouTube's app serves when these are unset (one Google project may do both).
    app_variables = ("GOOGLE_GMB_CLIENT_ID", "GOOGLE_GMB_CLIENT_SECRET")
    fallback_variables = ("YOUTUBE_CLIENT_ID", "YOUTUBE_CLIENT_SECRET")
    api_origin = "https://mybusiness.googleapis.com"  # (the v4 API; see service() for the others)
    scopes = (SCOPE + "userinfo.profile", MANAGE_SCOPE)  # Postiz's, less userinfo.email, which rustiz never reads
    between_steps = True  # the business location is picked after consent (Postiz's isBetweenSteps)
    threads = False  # a local post takes no replies
    concurrency = 3  # Postiz's maxConcurrentJob
    operator_guide = (
        "In a Google Cloud project (console.cloud.google.com), request access to the Business Profile APIs (Google "
        "approves projects one by one; until then every call is refused with a quota of 0), then enable the "
        "\"My Business Account Management API\", \"My Business Business Information API\", \"Google My Business "
        "API\" and \"Business Profile Performance API\". Configure the OAuth consent screen with the scopes "
        "business.manage and userinfo.profile, create an OAuth client ID of type \"Web application\" with the "
        "authorized redirect URI {FRONTEND_URL}/integrations/social/gmb, and put its client ID and secret in "
        "GOOGLE_GMB_CLIENT_ID and GOOGLE_GMB_CLIENT_SECRET (when unset, YOUTUBE_CLIENT_ID and "
        "YOUTUBE_CLIENT_SECRET serve, as in Postiz; that client then needs this redirect URI too). While the consent "
        "screen is in \"Testing\" only its test users can connect and their refresh tokens last 7 days. A post's "
        "photo is downloaded by Google from FRONTEND_URL, which must then be public https.")

    # --- OAuth ------------------------------------------------------------------------------------------

    def app(self, settings: dict) -> Optional[AppCredentials]:
        for names in (self.app_variables, self.fallback_variables):
            client_id, client_secret = (settings.get(name, "").strip() for name in names)
            if client_id and client_secret:
                return AppCredentials(client_id, client_secret)
        return None

    def check_scopes(self, reply: HttpReply) -> None:
        """Google lets the user untick scopes on its consent page: refuse a grant that cannot manage the business."""
        granted = reply.json().get("scope") if isinstance(reply.json(), dict) else None
        if isinstance(granted, str) and MANAGE_SCOPE not in granted.split():
            raise Rejected("Google was not given the permission to manage the Business Profile (business.manage): "
                           "connect again and leave every box ticked")

    # --- errors: Google's {"error": {"code", "message", "status", "details"}} -------------------------------

    def error_words(self, reply: HttpReply) -> Optional[str]:
        answer = reply.json()
        error = google_error(answer)
        if error is None:
            return super().error_words(reply) if isinstance(answer, dict) and isinstance(answer.get("error"), str) \
                else None
        status = answer["error"].get("status")
        words = error[0] + (f" ({status})" if isinstance(status, str) and status else "")
        problems = field_problems(answer)
        return words + (": " + "; ".join(problems) if problems else "")

    def check_reply(self, reply: HttpReply, visible: bool, what: str) -> HttpReply:
        if reply.status == 429 and no_quota(reply.json()):
            raise Rejected(f"{NO_QUOTA} ({self.platform_words(reply)})", reply.status, self.error_excerpt(reply))
        reasons = [detail.get("reason") for detail in error_details(reply.json())]
        if reply.status == 403 and "SERVICE_DISABLED" in reasons:  # the operator's project, not the user's consent
            raise Rejected(f"{self.platform_words(reply)} (on {what}): the operator must enable this API in the "
                           "app's Google Cloud project", reply.status, self.error_excerpt(reply))
        return super().check_reply(reply, visible, what)

    def where_to_check(self, channel: Channel) -> str:
        return f"the updates of the Business Profile \"{channel.name}\" (business.google.com)"

    # --- hosts ------------------------------------------------------------------------------------------

    def service(self, name: str) -> str:
        """The origin of one of Google's APIs (mybusiness, businessprofileperformance...); RUSTIZ_GMB_API_URL
        stands for all of them."""
        return platform_url(variable_prefix(self.identifier) + "API_URL", f"https://{name}.googleapis.com")

    async def call(self, channel: Channel, method: str, url: str, what: str, visible: bool = False,
                   **request: Any) -> dict:
        reply = await self.send(channel, method, url, visible=visible, what=what, headers=bearer(channel), **request)
        answer = reply.json()
        return answer if isinstance(answer, dict) else {}

    # --- the user, then the location ----------------------------------------------------------------------

    async def connect(self, channel: Channel) -> Connected:
        """The Google user who consented (the channel becomes a location once one is chosen)."""
        me = await self.call(channel, "GET", self.service("www") + "/oauth2/v2/userinfo", "the Google profile")
        if not isinstance(me.get("id"), str) or not me["id"]:
            raise Rejected("Google answered the profile request without the user's id")
        picture = me.get("picture") if isinstance(me.get("picture"), str) else None
        return Connected(ChannelAccount(me["id"], str(me.get("name") or me["id"]), None, picture or None))

    async def _pages(self, channel: Channel, url: str, key: str, what: str) -> list:
        """Every item under `key` of a listing that pages with nextPageToken (at most MOST_PAGES pages)."""
        items: list = []
        token = ""
        for _ in range(MOST_PAGES):
            answer = await self.call(channel, "GET", url + (f"&pageToken={quote(token, safe='')}" if token else ""),
                                     what)
            items += [item for item in answer.get(key) or [] if isinstance(item, dict)]
            token = answer.get("nextPageToken") if isinstance(answer.get("nextPageToken"), str) else ""
            if not token:
                break
        return items

    async def _locations(self, channel: Channel) -> list:
        """[(full name "accounts/A/locations/L", the location)] of every account the user can see."""
        accounts = await self._pages(channel, self.service("mybusinessaccountmanagement") + "/v1/accounts?pageSize=20",
                                     "accounts", "the Business Profile accounts")
        found = []
        for account in accounts:
            name = account.get("name")
            if not isinstance(name, str) or not name.startswith("accounts/"):
                continue
            url = (f"{self.service('mybusinessbusinessinformation')}/v1/{name}/locations?"
                   + urlencode({"readMask": LOCATION_FIELDS, "pageSize": 100}))
            for location in await self._pages(channel, url, "locations", "the account's locations"):
                if isinstance(location.get("name"), str) and location["name"].startswith("locations/"):
                    found.append((f"{name}/{location['name']}", location))
        return found

    async def step_choices(self, channel: Channel) -> list:
        return [{"id": full_name, "name": self._title(location), "picture": None}
                for full_name, location in await self._locations(channel)]

    @staticmethod
    def _title(location: dict) -> str:
        address = location.get("storefrontAddress") if isinstance(location.get("storefrontAddress"), dict) else {}
        locality = address.get("locality") if isinstance(address.get("locality"), str) else ""
        title = str(location.get("title") or "Unnamed location")
        return f"{title} ({locality})" if locality else title

    async def choose(self, channel: Channel, choice: str) -> Connected:
        location = next((found for full_name, found in await self._locations(channel) if full_name == choice), None)
        if location is None:
            raise Rejected(f"the Google user cannot manage the location {choice[:80]!r}")
        metadata = location.get("metadata") if isinstance(location.get("metadata"), dict) else {}
        session = {**channel.session, "location": choice,
                   "mapsUri": metadata.get("mapsUri") if isinstance(metadata.get("mapsUri"), str) else "",
                   "languageCode": location.get("languageCode") if isinstance(location.get("languageCode"), str)
                   else "en"}
        account = ChannelAccount(choice, str(location.get("title") or choice), None,
                                 await self._profile_photo(channel, choice))
        return Connected(account, session=session)

    async def _profile_photo(self, channel: Channel, location: str) -> Optional[str]:
        """The location's profile photo (else its first photo), or None; a refusal only costs the picture."""
        try:
            answer = await self.call(channel, "GET", f"{self.service('mybusiness')}/v4/{location}/media?pageSize=50",
                                     "the location's photos")
        except (Rejected, Retryable):
            return None
        photos = [item for item in answer.get("mediaItems") or [] if isinstance(item, dict)
                  and item.get("mediaFormat") == "PHOTO" and isinstance(item.get("googleUrl"), str)]
        profile = [item for item in photos if (item.get("locationAssociation") or {}).get("category") == "PROFILE"]
        return (profile or photos or [{}])[0].get("googleUrl")

    def location(self, channel: Channel) -> str:
        location = channel.session.get("location")
        if not isinstance(location, str) or not location.startswith("accounts/"):
            raise NeedsReconnect("no Business Profile location was chosen for this channel: connect it again and "
                                 "pick one")
        return location

    # --- publishing ---------------------------------------------------------------------------------------

    def pulls_media(self, values: list, settings: dict) -> bool:
        return bool(values and values[0].get("image"))

    def post_problem(self, channel: dict, values: list, settings: dict) -> Optional[str]:
        """What Google would refuse that Postiz's rule lets through (the rule checks one photo, no video, an
        event's title; thread parts are refused for every provider without `threads`)."""
        topic = setting(settings, "topicType") or "STANDARD"
        if topic == "OFFER" and not setting(settings, "eventTitle"):
            return "Offer posts require a title (eventTitle) and dates: Google shows them on the offer"
        if topic in ("EVENT", "OFFER") and setting(settings, "eventStartDate") and not google_date(
                settings["eventStartDate"]):
            return "eventStartDate must be a date written YYYY-MM-DD"
        if topic in ("EVENT", "OFFER") and setting(settings, "eventEndDate") and not google_date(settings["eventEndDate"]):
            return "eventEndDate must be a date written YYYY-MM-DD"
        action = setting(settings, "callToActionType")
        if action and action not in NO_URL_ACTIONS and not setting(settings, "callToActionUrl"):
            return f"The {action} button needs a link: set callToActionUrl"
        return None

    def local_post(self, channel: Channel, post: OutgoingPost) -> dict:
        """The LocalPost Google is sent, from the post and Postiz's settings."""
        settings = post.settings
        topic = setting(settings, "topicType") or "STANDARD"
        body: dict = {"languageCode": channel.session.get("languageCode") or "en", "summary": post.text,
                      "topicType": topic}
        action = setting(settings, "callToActionType")
        if action and action != "NONE":
            body["callToAction"] = {"actionType": action}
            if action != "CALL":
                body["callToAction"]["url"] = setting(settings, "callToActionUrl")
        if post.media:
            body["media"] = [{"mediaFormat": "PHOTO", "sourceUrl": post.media[0].url}]
        if topic in ("EVENT", "OFFER") and setting(settings, "eventTitle"):
            today = time.strftime("%Y-%m-%d", time.gmtime())
            schedule = {"startDate": google_date(setting(settings, "eventStartDate") or today),
                        "endDate": google_date(setting(settings, "eventEndDate") or today)}
            for name, key in (("startTime", "eventStartTime"), ("endTime", "eventEndTime")):
                if google_time(settings.get(key)):
                    schedule[name] = google_time(settings[key])
            body["event"] = {"title": setting(settings, "eventTitle"), "schedule": schedule}
        if topic == "OFFER":
            offer = {"couponCode": setting(settings, "offerCouponCode"),
                     "redeemOnlineUrl": setting(settings, "offerRedeemUrl"),
                     "termsConditions": setting(settings, "offerTerms")}
            body["offer"] = {name: value for name, value in offer.items() if value}
        return body

    async def publish(self, channel: Channel, post: OutgoingPost, parent: Optional[Release]) -> Release:
        if parent is not None:
            raise Rejected("A Google Business Profile post takes no comments")
        if len(post.media) > 1 or any(media.kind == "video" for media in post.media):
            raise Rejected("A Google Business Profile post takes one photo at most, and no video")
        for media in post.media:
            self._check_photo(media)
        location = self.location(channel)
        made = await self.call(channel, "POST", f"{self.service('mybusiness')}/v4/{location}/localPosts",
                               "the local post", visible=True, json_body=self.local_post(channel, post))
        if made.get("state") == "REJECTED":
            raise Rejected("Google rejected this post for a content policy violation (its state is REJECTED)")
        if not isinstance(made.get("name"), str) or "/localPosts/" not in made["name"]:
            raise OutcomeUnknown("Google accepted the local post but did not answer with its name")
        link = made.get("searchUrl") if isinstance(made.get("searchUrl"), str) else ""
        return Release(made["name"], link or channel.session.get("mapsUri")
                       or f"https://business.google.com/locations/{location.rpartition('/')[2]}")

    @staticmethod
    def _check_photo(media: MediaFile) -> None:
        """Google's rules for a post's photo (JPEG or PNG, 10 KB to 5 MB), checked before Google fetches it."""
        size = os.path.getsize(media.path)
        if media.content_type.split(";")[0].strip().lower() not in PHOTO_TYPES:
            raise Rejected(f"Google takes a post's photo as JPEG or PNG, not {media.content_type}", item="the photo")
        if not PHOTO_BYTES[0] <= size <= PHOTO_BYTES[1]:
            raise Rejected(f"Google takes a post's photo of 10 KB to 5 MB; this one has {size:,} bytes",
                           item="the photo")

    can_delete = True

    async def delete(self, channel: Channel, release: Release) -> None:
        """localPosts.delete; a post already gone (404) counts as deleted."""
        if not release.id.startswith("accounts/") or "/localPosts/" not in release.id:
            raise Rejected(f"{release.id[:80]!r} is not the name of a Business Profile local post")
        try:
            await self.call(channel, "DELETE", f"{self.service('mybusiness')}/v4/{release.id}", "the deletion")
        except Rejected as refused:
            if refused.status != 404:
                raise

    # --- analytics ----------------------------------------------------------------------------------------

    async def channel_analytics(self, channel: Channel, days: int) -> Optional[list]:
        """The location's daily figures (Business Profile Performance API), Postiz's five metrics."""
        location = self.location(channel).partition("/locations/")[2]
        end, start = time.gmtime(), time.gmtime(time.time() - 86400 * max(1, days))
        query = [("dailyMetrics", metric) for metric in DAILY_METRICS]
        for edge, moment in (("startDate", start), ("endDate", end)):
            query += [(f"dailyRange.{edge}.year", moment.tm_year), (f"dailyRange.{edge}.month", moment.tm_mon),
                      (f"dailyRange.{edge}.day", moment.tm_mday)]
        answer = await self.call(channel, "GET", f"{self.service('businessprofileperformance')}/v1/locations/"
                                 f"{location}:fetchMultiDailyMetricsTimeSeries?{urlencode(query)}", "the location's figures")
        figures = []
        for group in answer.get("multiDailyMetricTimeSeries") or []:
            for series in (group.get("dailyMetricTimeSeries") or []) if isinstance(group, dict) else []:
                points = [{"total": str(int(value.get("value") or 0)), "date": "%04d-%02d-%02d" % (
                    value["date"]["year"], value["date"]["month"], value["date"]["day"])}
                          for value in ((series.get("timeSeries") or {}).get("datedValues") or [])
                          if isinstance(value, dict) and isinstance(value.get("date"), dict)
                          and str(value.get("value") or 0).isdigit()]
                if points and series.get("dailyMetric") in DAILY_METRICS:
                    figures.append({"label": DAILY_METRICS[series["dailyMetric"]], "data": points,
                                    "percentageChange": 0})
        return figures

    async def post_analytics(self, channel: Channel, release: Release, days: int) -> Optional[list]:
        """The post's views on Search and button clicks (localPosts.reportInsights), as totals over `days`."""
        location = self.location(channel)
        end = time.time()
        body = {"localPostNames": [release.id], "basicRequest": {
            "metricRequests": [{"metric": metric, "options": ["AGGREGATED_TOTAL"]} for metric in POST_METRICS],
            "timeRange": {"startTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end - 86400 * max(1, days))),
                          "endTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end))}}}
        answer = await self.call(channel, "POST", f"{self.service('mybusiness')}/v4/{location}/localPosts:reportInsights",
                                 "the post's figures", json_body=body)
        counts: dict = {}
        for metrics in answer.get("localPostMetrics") or []:
            for value in (metrics.get("metricValues") or []) if isinstance(metrics, dict) else []:
                total = (value.get("totalValue") or {}).get("value") if isinstance(value, dict) else None
                if value.get("metric") in POST_METRICS and str(total or 0).isdigit():
                    counts[POST_METRICS[value["metric"]]] = int(total or 0)
        return analytics_figures(counts)


PROVIDER = GmbProvider()
