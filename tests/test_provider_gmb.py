"""The gmb provider object against a fake Google Business Profile (tests/fakes/gmb.py), over real sockets:
Google's consent URL (offline, consent, PKCE), the code exchange and refresh and their refusals, the user, the
location choice across accounts and pages, STANDARD / EVENT / OFFER local posts with their buttons and photo,
what is refused before sending, how Google's errors are classified, delete, and the analytics."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import fake_fixture
from fakes.gmb import FakeGmb, google_error, quota_exceeded
from rustiz_features.publishers import provider_for
from rustiz_features.publishers.base import (
    Channel, MediaFile, NeedsReconnect, OutcomeUnknown, OutgoingPost, Rejected, Release, Retryable,
)
from rustiz_features.publishers.oauth import AppCredentials, TokenRefused, pkce_pair
from support import follow_consent, gif_file, png_file, run

REDIRECT = "https://rustiz.example/integrations/social/gmb"
LOCATION = "accounts/111/locations/9001"
provider = provider_for("gmb")

fake = fake_fixture(FakeGmb)


@pytest.fixture
def app(fake) -> AppCredentials:
    return AppCredentials(fake.client_id, fake.client_secret)


@pytest.fixture
def channel(fake, http) -> Channel:
    """A channel whose location is chosen (the session choose() leaves)."""
    return Channel("channel-1", "Ada Bakes", fake.credentials(),
                   {"location": LOCATION, "mapsUri": "https://maps.google.com/maps?cid=9001", "languageCode": "fr"},
                   http)


PICTURE = png_file(2, 2, padding=12 * 1024)  # Google takes 10 KB to 5 MB


def photo(fake, tmp_path, data: bytes = PICTURE, content_type: str = "image/png") -> MediaFile:
    """A photo on this machine, which the fake serves at its URL (as rustiz serves its uploads)."""
    path = tmp_path / "bread.png"
    path.write_bytes(data)
    fake.photo = data
    return MediaFile(f"{fake.url}/photos/bread.png", str(path), content_type, "image", "", "bread.png")


def post(html: str = "<p>Fresh bread at 7</p>", media: tuple = (), **settings) -> OutgoingPost:
    return OutgoingPost("post-1", html, media, settings, 0, "key-1", "2026-12-06T17:00:00Z")


def tokens(fake, http, app):
    verifier, challenge = pkce_pair()
    url = run(provider.begin(http, app, REDIRECT, "state-1", challenge, {}))
    return run(provider.exchange_code(http, app, follow_consent(url)["code"], REDIRECT, verifier, {}))


# --- OAuth ---------------------------------------------------------------------------------------------

def test_the_consent_url_asks_offline_access_with_consent_business_manage_and_pkce(fake, http, app):
    assert (provider.between_steps, provider.threads, provider.pkce) == (True, False, True)
    assert provider.app_variables == ("GOOGLE_GMB_CLIENT_ID", "GOOGLE_GMB_CLIENT_SECRET")
    url = run(provider.begin(http, app, REDIRECT, "state-1", "challenge", {}))
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == fake.url + "/o/oauth2/v2/auth"
    query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
    assert query["scope"].split() == ["https://www.googleapis.com/auth/userinfo.profile",
                                      "https://www.googleapis.com/auth/business.manage"]
    assert (query["access_type"], query["prompt"], query["code_challenge_method"]) == ("offline", "consent", "S256")
    assert (query["client_id"], query["redirect_uri"], query["state"]) == (fake.client_id, REDIRECT, "state-1")


def test_googles_own_hosts_are_the_defaults_and_youtubes_app_serves_when_gmbs_is_unset(monkeypatch):
    for name in ("RUSTIZ_GMB_AUTH_URL", "RUSTIZ_GMB_API_URL"):
        monkeypatch.delenv(name, raising=False)
    assert (provider.auth_base(), provider.token_base()) == ("https://accounts.google.com",
                                                             "https://oauth2.googleapis.com")
    assert provider.service("mybusiness") == provider.api_base() == "https://mybusiness.googleapis.com"
    assert provider.service("businessprofileperformance") == "https://businessprofileperformance.googleapis.com"
    youtube = {"YOUTUBE_CLIENT_ID": "yt", "YOUTUBE_CLIENT_SECRET": "yt-secret"}
    assert provider.app(youtube) == ("yt", "yt-secret")
    assert provider.app({**youtube, "GOOGLE_GMB_CLIENT_ID": "g", "GOOGLE_GMB_CLIENT_SECRET": "g-secret"}) == (
        "g", "g-secret")
    assert provider.app({"GOOGLE_GMB_CLIENT_ID": "g"}) is None
    assert "{FRONTEND_URL}/integrations/social/gmb" in provider.operator_guide


def test_the_code_exchange_gives_a_refresh_token_and_a_refresh_keeps_it(fake, http, app):
    first = tokens(fake, http, app)
    assert first.access_token in fake.access_tokens and first.refresh_token in fake.refresh_tokens
    assert first.expires_in == 3599
    form = fake.requests_to("POST", "/token")[0].form()
    assert (form["client_id"], form["client_secret"], form["grant_type"]) == (
        fake.client_id, fake.client_secret, "authorization_code") and form["code_verifier"]
    refreshed = run(provider.refresh_tokens(http, app, first.refresh_token))
    assert refreshed.access_token in fake.access_tokens and refreshed.refresh_token is None


def test_a_consent_without_business_manage_is_refused(fake, http, app):
    fake.granted = "https://www.googleapis.com/auth/userinfo.profile"
    with pytest.raises(Rejected) as refused:
        tokens(fake, http, app)
    assert "business.manage" in refused.value.message


def test_a_cancelled_consent_comes_back_with_access_denied(fake, http, app):
    url = run(provider.begin(http, app, REDIRECT, "state-1", None, {}))
    assert follow_consent(url, "deny") == {"error": "access_denied", "state": "state-1"}


def test_dead_grants_are_token_refused_a_wrong_secret_and_a_503_are_not(fake, http, app):
    with pytest.raises(TokenRefused) as dead:
        run(provider.refresh_tokens(http, app, "1//revoked"))
    assert "Token has been expired or revoked." in dead.value.message
    first = tokens(fake, http, app)
    with pytest.raises(NeedsReconnect) as wrong:
        run(provider.refresh_tokens(http, AppCredentials(fake.client_id, "wrong"), first.refresh_token))
    assert not isinstance(wrong.value, TokenRefused) and "invalid_client" in wrong.value.message
    fake.fail_next("POST", "/token", 503, google_error(503, "The service is currently unavailable."),
                   {"Retry-After": "20"})
    with pytest.raises(Retryable) as passing:
        run(provider.refresh_tokens(http, app, first.refresh_token))
    assert passing.value.after == 20.0


# --- the user and the location -----------------------------------------------------------------------

def test_connect_reads_the_google_user(fake, http):
    connected = run(provider.connect(Channel("", "", fake.credentials(), None, http)))
    assert connected.account == ("108000000000000000001", "Ada Lovelace", None, f"{fake.url}/photos/ada.jpg")


def test_an_expired_token_needs_reconnect_in_googles_words(fake, http):
    with pytest.raises(NeedsReconnect) as refused:
        run(provider.connect(Channel("", "", {"accessToken": "ya29.expired"}, None, http)))
    assert refused.value.status == 401 and "Request had invalid authentication credentials" in refused.value.message
    assert "(UNAUTHENTICATED)" in refused.value.message and '"status":"UNAUTHENTICATED"' in refused.value.body


def test_the_choices_are_every_location_of_every_account_across_pages(fake, http):
    fake.locations["accounts/222"] += [{"name": f"locations/{9200 + number}", "title": f"Kiosk {number}"}
                                       for number in range(150)]
    choices = run(provider.step_choices(Channel("", "", fake.credentials(), None, http)))
    assert choices[0] == {"id": LOCATION, "name": "Ada Bakes (Lyon)", "picture": None}
    assert len(choices) == 1 + 3 + 150 and choices[-1]["id"] == "accounts/222/locations/9349"
    pages = fake.requests_to("GET", "/v1/accounts/222/locations")
    assert [request.query.get("pageToken") for request in pages] == [None, "100"]
    assert all(request.query["readMask"] == "name,title,storefrontAddress,metadata,languageCode" for request in pages)


def test_choosing_a_location_keeps_it_with_its_language_and_profile_photo(fake, http):
    probe = Channel("", "", fake.credentials(), None, http)
    connected = run(provider.choose(probe, LOCATION))
    assert connected.account == (LOCATION, "Ada Bakes", None, f"{fake.url}/photos/profile.jpg")
    assert connected.session == {"location": LOCATION, "mapsUri": "https://maps.google.com/maps?cid=9001",
                                 "languageCode": "fr"}
    with pytest.raises(Rejected):
        run(provider.choose(probe, "accounts/111/locations/4040"))


def test_a_project_without_api_access_is_told_so_not_retried(fake, http):
    fake.no_quota = True
    with pytest.raises(Rejected) as refused:
        run(provider.step_choices(Channel("", "", fake.credentials(), None, http)))
    assert not isinstance(refused.value, Retryable) and "quota is 0" in refused.value.message


# --- local posts ---------------------------------------------------------------------------------------

def test_a_standard_post_with_a_button_and_a_photo_google_downloads(fake, channel, tmp_path):
    release = run(provider.publish(channel, post("<p>Fresh <b>bread</b> at 7</p>", (photo(fake, tmp_path),),
                                                 topicType="STANDARD", callToActionType="ORDER",
                                                 callToActionUrl="https://ada.example/order"), None))
    [made] = fake.published
    assert (made["summary"], made["topicType"], made["languageCode"]) == ("Fresh bread at 7", "STANDARD", "fr")
    assert made["callToAction"] == {"actionType": "ORDER", "url": "https://ada.example/order"}
    assert made["media"] == [{"mediaFormat": "PHOTO", "sourceUrl": f"{fake.url}/photos/bread.png"}]
    assert fake.photos[made["name"]] == PICTURE and "event" not in made and "offer" not in made
    assert (release.id, release.url) == (made["name"], made["searchUrl"])
    assert release.id.startswith(LOCATION + "/localPosts/")


def test_an_event_post_carries_its_title_dates_and_times(fake, channel):
    run(provider.publish(channel, post(topicType="EVENT", eventTitle="Open day", eventStartDate="2026-12-24",
                                       eventEndDate="2026-12-25T00:00:00.000Z", eventStartTime="09:30",
                                       eventEndTime="17:00"), None))
    [made] = fake.published
    assert made["event"] == {"title": "Open day", "schedule": {
        "startDate": {"year": 2026, "month": 12, "day": 24}, "endDate": {"year": 2026, "month": 12, "day": 25},
        "startTime": {"hours": 9, "minutes": 30, "seconds": 0, "nanos": 0},
        "endTime": {"hours": 17, "minutes": 0, "seconds": 0, "nanos": 0}}}


def test_an_offer_post_carries_its_coupon_terms_and_event(fake, channel):
    run(provider.publish(channel, post(topicType="OFFER", eventTitle="Winter sale", eventStartDate="2026-12-01",
                                       eventEndDate="2026-12-31", offerCouponCode="BREAD10",
                                       offerRedeemUrl="https://ada.example/redeem", offerTerms="One per customer"),
                         None))
    [made] = fake.published
    assert made["offer"] == {"couponCode": "BREAD10", "redeemOnlineUrl": "https://ada.example/redeem",
                             "termsConditions": "One per customer"}
    assert made["event"]["title"] == "Winter sale" and "startTime" not in made["event"]["schedule"]


def test_a_call_button_goes_without_a_link_and_none_adds_no_button(fake, channel):
    run(provider.publish(channel, post(callToActionType="CALL", callToActionUrl="https://ignored.example"), None))
    run(provider.publish(channel, post(callToActionType="NONE"), None))
    assert fake.published[0]["callToAction"] == {"actionType": "CALL"}
    assert "callToAction" not in fake.published[1]


def test_what_google_would_refuse_is_refused_before_sending(fake, channel):
    one = [{"content": "<p>x</p>", "image": []}]
    assert provider.post_problem({}, one, {"topicType": "OFFER"}).startswith("Offer posts require a title")
    assert "callToActionUrl" in provider.post_problem({}, one, {"callToActionType": "BOOK"})
    assert "YYYY-MM-DD" in provider.post_problem({}, one, {"topicType": "EVENT", "eventTitle": "x",
                                                          "eventStartDate": "next friday"})
    assert provider.post_problem({}, one, {"callToActionType": "CALL", "topicType": "EVENT", "eventTitle": "x"}) is None
    assert provider.pulls_media([{"content": "", "image": [{"path": "a.png"}]}], {}) is True
    assert provider.pulls_media(one, {}) is False
    with pytest.raises(Rejected):
        run(provider.publish(channel, post(), Release("accounts/1/locations/2/localPosts/3", "")))
    assert fake.requests == []


def test_photos_google_would_refuse_are_rejected_before_anything_is_sent(fake, channel, tmp_path):
    for data, content_type, words in ((png_file(), "image/png", "10 KB to 5 MB"),
                                      (png_file(padding=5 * 1024 * 1024), "image/png", "10 KB to 5 MB"),
                                      (gif_file(), "image/gif", "JPEG or PNG")):
        with pytest.raises(Rejected) as refused:
            run(provider.publish(channel, post(media=(photo(fake, tmp_path, data, content_type),)), None))
        assert words in refused.value.message and refused.value.item == "the photo"
    assert fake.requests == []


def test_an_answer_without_the_posts_name_is_outcome_unknown(fake, channel):
    fake.fail_next("POST", rf"/v4/{LOCATION}/localPosts", 200, {"state": "LIVE"})
    with pytest.raises(OutcomeUnknown):
        run(provider.publish(channel, post(), None))


def test_googles_field_errors_are_quoted_and_rejected(fake, channel):
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post("<p>" + "x" * 1600 + "</p>"), None))
    assert refused.value.status == 400 and refused.value.message == (
        "Request contains an invalid argument. (INVALID_ARGUMENT): summary: Summary is too long (1500 characters at "
        "most)")


def test_a_post_google_rejects_for_its_content_is_rejected(fake, channel):
    fake.rejects_content = True
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post(), None))
    assert "content policy" in refused.value.message


def test_throttling_and_server_errors_are_retryable_a_lost_answer_is_unknown(fake, channel):
    path = rf"/v4/{LOCATION}/localPosts"
    fake.fail_next("POST", path, 429, quota_exceeded("300"), {"Retry-After": "30"})
    with pytest.raises(Retryable) as throttled:
        run(provider.publish(channel, post(), None))
    assert throttled.value.after == 30.0 and "Quota exceeded" in throttled.value.message
    fake.fail_next("POST", path, 503, google_error(503, "The service is currently unavailable."))
    with pytest.raises(Retryable):
        run(provider.publish(channel, post(), None))
    fake.drop_next("POST", path, after_handling=True)
    with pytest.raises(OutcomeUnknown):
        run(provider.publish(channel, post(), None))
    assert len(fake.published) == 1 and provider.resend_is_safe is False


def test_a_disabled_api_is_the_operators_to_fix_a_lost_permission_needs_reconnect(fake, channel):
    path = rf"/v4/{LOCATION}/localPosts"
    fake.fail_next("POST", path, 403, google_error(403, "Google My Business API has not been used in project 1 "
                                                        "before or it is disabled.", [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SERVICE_DISABLED"}]))
    with pytest.raises(Rejected) as disabled:
        run(provider.publish(channel, post(), None))
    assert "enable this API" in disabled.value.message
    fake.fail_next("POST", path, 403, google_error(403, "The caller does not have permission"))
    with pytest.raises(NeedsReconnect) as lost:
        run(provider.publish(channel, post(), None))
    assert lost.value.message == "The caller does not have permission (PERMISSION_DENIED)"


def test_an_unknown_error_body_is_described_not_quoted(fake, channel):
    fake.fail_next("POST", rf"/v4/{LOCATION}/localPosts", 400, "<html>a proxy's secret page</html>",
                   {"Content-Type": "text/html"})
    with pytest.raises(Rejected) as refused:
        run(provider.publish(channel, post(), None))
    assert "secret" not in refused.value.message and refused.value.body == ""


def test_a_channel_without_a_chosen_location_needs_reconnect(fake, http):
    with pytest.raises(NeedsReconnect):
        run(provider.publish(Channel("c", "n", fake.credentials(), None, http), post(), None))


# --- delete and analytics -------------------------------------------------------------------------------

def test_delete_removes_the_local_post_and_a_post_already_gone_counts_as_deleted(fake, channel):
    assert provider.can_delete is True
    release = run(provider.publish(channel, post(), None))
    run(provider.delete(channel, release))
    assert fake.posts == {}
    run(provider.delete(channel, release))  # 404: already gone
    assert len(fake.requests_to("DELETE", r"/v4/.*")) == 2
    with pytest.raises(Rejected):
        run(provider.delete(channel, Release("https://example.com/x", "")))
    fake.access_tokens.clear()
    with pytest.raises(NeedsReconnect):
        run(provider.delete(channel, release))


def test_analytics_are_the_locations_daily_figures_and_the_posts_totals(fake, channel):
    figures = run(provider.channel_analytics(channel, 7))
    assert [item["label"] for item in figures] == ["Website Clicks", "Phone Calls", "Direction Requests",
                                                   "Desktop Map Views", "Mobile Map Views"]
    assert figures[1]["data"] == [{"total": "3", "date": "2026-12-04"}, {"total": "0", "date": "2026-12-05"},
                                  {"total": "11", "date": "2026-12-06"}]
    [request] = fake.requests_to("GET", r"/v1/locations/9001:fetchMultiDailyMetricsTimeSeries")
    assert [value for name, value in request.repeated if name == "dailyMetrics"][0] == "WEBSITE_CLICKS"
    release = run(provider.publish(channel, post(), None))
    counts = {item["label"]: item["data"][0]["total"] for item in run(provider.post_analytics(channel, release, 30))}
    assert counts == {"Views on Search": "40", "Button clicks": "41"}
