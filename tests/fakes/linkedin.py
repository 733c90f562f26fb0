"""LinkedIn as rustiz uses it, for both `linkedin` and `linkedin-page`: the consent page and token endpoint of
www.linkedin.com (authorization_code and refresh_token grants, the app in the form), OpenID userinfo, the
versioned REST API (LinkedIn-Version checked: missing -> 400, retired -> 426 NONEXISTENT_VERSION),
organizationAcls and organizations (a logoV2 asset for one page), the pages' logos through the Images API's
batch GET, image, document and video uploads (initializeUpload, PUT,
finalizeUpload, processing), posts (201 with x-restli-id) and comments, and LinkedIn's error shape
{"status", "serviceErrorCode", "code", "message"}. One fake serves both origins (auth and API)."""
from __future__ import annotations

import itertools
import secrets
from urllib.parse import unquote

from fakes import FakePlatform, FakeRequest, answer, consent_page

CLIENT_ID, CLIENT_SECRET = "78linkedinclient", "linkedin-secret-" + "s" * 16
MEMBER = {"sub": "aB3dE5fG7h", "name": "Ada Lovelace", "given_name": "Ada", "family_name": "Lovelace",
          "picture": "https://media.licdn.com/dms/image/ada.jpg", "locale": {"country": "GB", "language": "en"}}
ORGANIZATIONS = {"2414183": {"id": 2414183, "localizedName": "Analytical Engines Ltd", "vanityName": "analytical-engines",
                             "logoV2": {"cropped": "urn:li:digitalmediaAsset:C4D0BAQEnginesCrop",
                                        "original": "urn:li:digitalmediaAsset:C4E0BAQEnginesOrig",
                                        "cropInfo": {"x": 0, "y": 0, "width": 400, "height": 400}}},
                 "5590001": {"id": 5590001, "localizedName": "Difference Society", "vanityName": "difference-society"},
                 "7777777": {"id": 7777777, "localizedName": "Someone Else's Page", "vanityName": "elsewhere"}}
LOGOS = {"urn:li:image:C4D0BAQEnginesCrop": "https://media.licdn.com/dms/image/C4D0BAQEnginesCrop/company-logo_400_400/0"}
# The member's roles: two pages they may post as, one where they only see analytics.
ACLS = [("2414183", "ADMINISTRATOR"), ("5590001", "CONTENT_ADMINISTRATOR"), ("7777777", "ANALYST")]
ACTIVE_VERSIONS = ("202601", "202603", "202607", "202610", "202611")
PERSONAL_SCOPES = "openid,profile,w_member_social"
PAGE_SCOPES = "openid,profile,w_member_social,r_organization_social,w_organization_social,rw_organization_admin"


def linkedin_error(status: int, message: str, code: str = "", service_code: int | None = None, **more) -> tuple:
    body = {"status": status, "message": message, **more}
    if code:
        body["code"] = code
    if service_code is not None:
        body["serviceErrorCode"] = service_code
    return answer(status, body)


def invalid_token():
    return linkedin_error(401, "Invalid access token", "INVALID_ACCESS_TOKEN", 65600)


class FakeLinkedIn(FakePlatform):
    def __init__(self, refresh_tokens: bool = True, processing_polls: int = 0, part_size: int = 4 * 1024 * 1024):
        super().__init__()
        self.refresh_tokens = refresh_tokens  # only apps approved for them get refresh tokens
        self.rotate_refresh_tokens = False  # LinkedIn normally answers a refresh with the same refresh token
        self.granted_scopes = PAGE_SCOPES  # what the token answer's `scope` says was granted
        self.processing_polls = processing_polls  # GETs of a finalized video that answer PROCESSING first
        self.part_size = part_size
        self.ids = itertools.count(7260000000000000001)
        self.token = "AQV" + secrets.token_urlsafe(24)
        self.tokens: dict = {self.token: MEMBER["sub"]}  # access token -> member
        self.refresh: dict = {}  # refresh token -> member
        self.codes: dict = {}  # code -> (redirect_uri, scope)
        self.images: dict = {}  # urn -> {"owner", "bytes", "content_type", "authorization"}
        self.documents: dict = {}  # urn -> {"owner", "bytes", "key"}
        self.videos: dict = {}  # urn -> {"owner", "size", "parts": {n: bytes}, "etags", "finalized", "polls_left"}
        self.posts: dict = {}  # urn -> post body
        self.comments: list = []
        self.route("GET", "/oauth/v2/authorization", self.authorize)
        self.route("POST", "/oauth/v2/accessToken", self.access_token)
        self.route("GET", "/v2/userinfo", self.userinfo)
        self.route("GET", "/rest/organizationAcls", self.versioned(self.organization_acls))
        self.route("GET", "/rest/organizations", self.versioned(self.organizations))
        self.route("GET", r"/rest/networkSizes/([^/]+)", self.versioned(self.network_size))
        self.route("GET", "/rest/organizationalEntityShareStatistics", self.versioned(self.share_statistics))
        self.route("POST", "/rest/images", self.versioned(self.initialize_image))
        self.route("GET", "/rest/images", self.versioned(self.batch_images))
        self.route("PUT", r"/dms-uploads/image/(\w+)", self.put_image)
        self.route("POST", "/rest/videos", self.versioned(self.video_action))
        self.route("PUT", r"/dms-uploads/video/(\w+)/(\d+)", self.put_video_part)
        self.route("GET", r"/rest/videos/([^/]+)", self.versioned(self.video_state))
        self.route("POST", "/rest/documents", self.versioned(self.initialize_document))
        self.route("PUT", r"/dms-uploads/document/(\w+)", self.put_document)
        self.route("GET", r"/rest/documents/([^/]+)", self.versioned(self.document_state))
        self.route("POST", "/rest/posts", self.versioned(self.create_post))
        self.route("POST", r"/rest/socialActions/([^/]+)/comments", self.versioned(self.create_comment))
        self.deleted: list = []  # (issue 28: the post and comment URNs deleted, in order)
        self.route("DELETE", r"/rest/posts/([^/]+)", self.versioned(self.delete_post))
        self.route("DELETE", r"/rest/socialActions/([^/]+)/comments/(\d+)", self.versioned(self.delete_comment))

    def credentials(self) -> dict:
        return {"accessToken": self.token}

    # --- the OAuth app ---------------------------------------------------------------------------------

    def authorize(self, request: FakeRequest):
        query = request.query
        if query.get("client_id") != CLIENT_ID:
            return answer(400, "<html><body><h1>Bummer, something went wrong.</h1>"
                               "<p>The passed in client_id is invalid</p></body></html>", {"Content-Type": "text/html"})
        if query.get("response_type") != "code" or not query.get("redirect_uri") or not query.get("scope"):
            return answer(400, "<html><body><p>invalid_request</p></body></html>", {"Content-Type": "text/html"})
        code = "AQT" + secrets.token_urlsafe(16)
        self.codes[code] = (query["redirect_uri"], query["scope"])
        redirect = query["redirect_uri"]
        return consent_page(f"Allow access to your LinkedIn account? {query['scope']}", redirect,
                            {"code": code, "state": query.get("state", "")},
                            {"error": "user_cancelled_authorize", "error_description": "The user cancelled the "
                             "authorization", "state": query.get("state", "")})

    def access_token(self, request: FakeRequest):
        form = request.form()
        if "authorization" in request.headers and "client_id" not in form:
            return answer(401, {"error": "invalid_client", "error_description": "Client authentication failed"})
        if (form.get("client_id"), form.get("client_secret")) != (CLIENT_ID, CLIENT_SECRET):
            return answer(401, {"error": "invalid_client", "error_description": "Client authentication failed"})
        grant = form.get("grant_type")
        if grant == "authorization_code":
            known = self.codes.pop(form.get("code", ""), None)
            if known is None or known[0] != form.get("redirect_uri"):
                return answer(400, {"error": "invalid_request", "error_description": (
                    "Unable to retrieve access token: appid/redirect uri/code verifier does not match authorization "
                    "code. Or authorization code expired. Or external member binding exists")})
            return answer(200, self._issue(MEMBER["sub"], None))
        if grant == "refresh_token":
            member = self.refresh.get(form.get("refresh_token", ""))
            if member is None:
                return answer(400, {"error": "invalid_grant",
                                    "error_description": "The provided authorization grant or refresh token is invalid, "
                                                         "expired or revoked"})
            return answer(200, self._issue(member, form["refresh_token"]))
        return answer(400, {"error": "unsupported_grant_type", "error_description": "grant_type is not supported"})

    def _issue(self, member: str, refresh_token: str | None) -> dict:
        token = "AQV" + secrets.token_urlsafe(24)
        self.tokens[token] = member
        body = {"access_token": token, "expires_in": 5183999, "scope": self.granted_scopes}
        if self.refresh_tokens:
            if refresh_token is None or self.rotate_refresh_tokens:
                self.refresh.pop(refresh_token or "", None)
                refresh_token = "AQX" + secrets.token_urlsafe(24)
                self.refresh[refresh_token] = member
            body.update(refresh_token=refresh_token, refresh_token_expires_in=31535999)
        return body

    # --- the API -----------------------------------------------------------------------------------------

    def _member(self, request: FakeRequest):
        authorization = request.headers.get("authorization", "")
        return self.tokens.get(authorization[len("Bearer "):]) if authorization.startswith("Bearer ") else None

    def versioned(self, handler):
        """The checks LinkedIn makes on every /rest call: the token, LinkedIn-Version, Rest.li 2.0."""
        def checked(request: FakeRequest):
            if self._member(request) is None:
                return invalid_token()
            version = request.headers.get("linkedin-version")
            if not version:
                return linkedin_error(400, "A version must be present. Please specify a version by adding the "
                                           "LinkedIn-Version header.", "VERSION_MISSING")
            if version not in ACTIVE_VERSIONS:
                return linkedin_error(426, f"Requested version {version} is not active", "NONEXISTENT_VERSION")
            if request.headers.get("x-restli-protocol-version") != "2.0.0":
                return linkedin_error(400, "Rest.li protocol version 2.0.0 is required for this request")
            return handler(request)
        return checked

    def userinfo(self, request: FakeRequest):
        member = self._member(request)
        if member is None:
            return invalid_token()
        return answer(200, {**MEMBER, "sub": member, "email_verified": True})

    def organization_acls(self, request: FakeRequest):
        if request.query.get("q") != "roleAssignee":
            return linkedin_error(400, "Invalid query parameters passed to request", "ILLEGAL_ARGUMENT", 100)
        member = self._member(request)
        elements = [{"roleAssignee": f"urn:li:person:{member}", "state": "APPROVED", "role": role,
                     "organization": f"urn:li:organization:{page}"} for page, role in ACLS]
        return answer(200, {"paging": {"start": 0, "count": 10, "total": len(elements)}, "elements": elements})

    def network_size(self, request: FakeRequest):
        if request.query.get("edgeType") != "COMPANY_FOLLOWED_BY_MEMBER":
            return linkedin_error(400, "Invalid edgeType", "ILLEGAL_ARGUMENT", 100)
        return answer(200, {"firstDegreeSize": 1500})

    def share_statistics(self, request: FakeRequest):
        """Lifetime totals of the organization's posts, or of the posts named by shares=/ugcPosts=List(...)."""
        if request.query.get("q") != "organizationalEntity" or "organizationalEntity" not in request.query:
            return linkedin_error(400, "Invalid query", "ILLEGAL_ARGUMENT", 100)
        named = request.query.get("shares") or request.query.get("ugcPosts")
        count = 1 if named else max(1, len(self.posts))
        stats = {"impressionCount": 250 * count, "clickCount": 12 * count, "likeCount": 9 * count,
                 "commentCount": 2 * count, "shareCount": count, "engagement": 0.09}
        return answer(200, {"paging": {"count": 10, "start": 0}, "elements": [
            {"organizationalEntity": request.query["organizationalEntity"], "totalShareStatistics": stats}]})

    def organizations(self, request: FakeRequest):
        ids = request.query.get("ids", "")
        if not (ids.startswith("List(") and ids.endswith(")")):
            return linkedin_error(400, "Invalid ids parameter", "ILLEGAL_ARGUMENT", 100)
        wanted = ids[len("List("):-1].split(",")
        return answer(200, {"results": {page: ORGANIZATIONS[page] for page in wanted if page in ORGANIZATIONS},
                            "statuses": {page: 200 if page in ORGANIZATIONS else 404 for page in wanted},
                            "errors": {}})

    def batch_images(self, request: FakeRequest):
        """The Images API's BATCH_GET (ids=List(<encoded image URNs>)): a download URL for each known logo."""
        ids = request.query.get("ids", "")
        if not (ids.startswith("List(") and ids.endswith(")")):
            return linkedin_error(400, "Invalid ids parameter", "ILLEGAL_ARGUMENT", 100)
        wanted = [unquote(urn) for urn in ids[len("List("):-1].split(",")]
        return answer(200, {"results": {urn: {"id": urn, "status": "AVAILABLE", "downloadUrl": LOGOS[urn],
                                              "downloadUrlExpiresAt": 1767225600000} for urn in wanted if urn in LOGOS},
                            "statuses": {urn: 200 if urn in LOGOS else 404 for urn in wanted}, "errors": {}})

    def _may_act_as(self, request: FakeRequest, urn: str) -> bool:
        member = self._member(request)
        if urn == f"urn:li:person:{member}":
            return True
        return any(urn == f"urn:li:organization:{page}" and role in ("ADMINISTRATOR", "CONTENT_ADMINISTRATOR")
                   for page, role in ACLS)

    def initialize_image(self, request: FakeRequest):
        if request.query.get("action") != "initializeUpload":
            return linkedin_error(400, "Unknown action", "ILLEGAL_ARGUMENT", 100)
        owner = (request.json() or {}).get("initializeUploadRequest", {}).get("owner", "")
        if not self._may_act_as(request, owner):
            return linkedin_error(403, "Not enough permissions to access: images.initializeUpload", "ACCESS_DENIED", 100)
        key = f"D4E10AQ{next(self.ids)}"
        urn = f"urn:li:image:{key}"
        self.images[urn] = {"owner": owner, "bytes": None, "key": key}
        return answer(200, {"value": {"uploadUrlExpiresAt": 1767225600000, "image": urn,
                                      "uploadUrl": f"{self.url}/dms-uploads/image/{key}"}})

    def put_image(self, request: FakeRequest):
        image = next((image for image in self.images.values() if image["key"] == request.match[1]), None)
        if image is None:
            return answer(404, b"")
        image.update(bytes=request.body, content_type=request.headers.get("content-type"),
                     authorization=request.headers.get("authorization"))
        return answer(201, b"")

    def initialize_document(self, request: FakeRequest):
        if request.query.get("action") != "initializeUpload":
            return linkedin_error(400, "Unknown action", "ILLEGAL_ARGUMENT", 100)
        owner = (request.json() or {}).get("initializeUploadRequest", {}).get("owner", "")
        if not self._may_act_as(request, owner):
            return linkedin_error(403, "Not enough permissions to access: documents.initializeUpload",
                                  "ACCESS_DENIED", 100)
        key = f"D4D10AQ{next(self.ids)}"
        urn = f"urn:li:document:{key}"
        self.documents[urn] = {"owner": owner, "bytes": None, "key": key}
        return answer(200, {"value": {"uploadUrlExpiresAt": 1767225600000, "document": urn,
                                      "uploadUrl": f"{self.url}/dms-uploads/document/{key}"}})

    def put_document(self, request: FakeRequest):
        document = next((item for item in self.documents.values() if item["key"] == request.match[1]), None)
        if document is None:
            return answer(404, b"")
        if not request.body.startswith(b"%PDF-"):
            return answer(400, b"")
        document.update(bytes=request.body, content_type=request.headers.get("content-type"))
        return answer(201, b"")

    def document_state(self, request: FakeRequest):
        document = self.documents.get(unquote(request.match[1]))
        if document is None:
            return linkedin_error(404, "Document not found", "NOT_FOUND")
        return answer(200, {"id": unquote(request.match[1]), "owner": document["owner"],
                            "status": "AVAILABLE" if document["bytes"] else "WAITING_UPLOAD"})

    def video_action(self, request: FakeRequest):
        body = request.json() or {}
        if request.query.get("action") == "initializeUpload":
            upload = body.get("initializeUploadRequest", {})
            if not self._may_act_as(request, upload.get("owner", "")):
                return linkedin_error(403, "Not enough permissions to access: videos.initializeUpload",
                                      "ACCESS_DENIED", 100)
            size, key = int(upload.get("fileSizeBytes") or 0), f"D5610AQ{next(self.ids)}"
            urn = f"urn:li:video:{key}"
            ranges = [(first, min(first + self.part_size, size) - 1) for first in range(0, size, self.part_size)]
            self.videos[urn] = {"owner": upload["owner"], "size": size, "key": key, "parts": {}, "etags": {},
                                "finalized": False, "polls_left": self.processing_polls}
            return answer(200, {"value": {"uploadUrlsExpireAt": 1767225600000, "video": urn, "uploadToken": "",
                                          "uploadInstructions": [
                                              {"uploadUrl": f"{self.url}/dms-uploads/video/{key}/{number}",
                                               "firstByte": first, "lastByte": last}
                                              for number, (first, last) in enumerate(ranges)]}})
        if request.query.get("action") == "finalizeUpload":
            finalize = body.get("finalizeUploadRequest", {})
            video = self.videos.get(finalize.get("video"))
            if video is None:
                return linkedin_error(404, "Video not found", "NOT_FOUND")
            expected = [video["etags"][number] for number in sorted(video["etags"])]
            if finalize.get("uploadedPartIds") != expected or sum(map(len, video["parts"].values())) != video["size"]:
                return linkedin_error(400, "Uploaded part ids do not match the uploaded parts", "BAD_REQUEST")
            video["finalized"] = True
            return answer(200, b"")
        return linkedin_error(400, "Unknown action", "ILLEGAL_ARGUMENT", 100)

    def put_video_part(self, request: FakeRequest):
        video = next((video for video in self.videos.values() if video["key"] == request.match[1]), None)
        if video is None:
            return answer(404, b"")
        number = int(request.match[2])
        video["parts"][number] = request.body
        video["etags"][number] = f"/ambry-video/signedId/part-{number}-{len(request.body)}"
        return answer(200, b"", {"ETag": video["etags"][number]})

    def video_state(self, request: FakeRequest):
        video = self.videos.get(unquote(request.match[1]))
        if video is None:
            return linkedin_error(404, "Video not found", "NOT_FOUND")
        if not video["finalized"]:
            status = "WAITING_UPLOAD"
        elif video["polls_left"] > 0:
            video["polls_left"] -= 1
            status = "PROCESSING"
        else:
            status = video.get("status", "AVAILABLE")
        return answer(200, {"id": unquote(request.match[1]), "owner": video["owner"], "status": status,
                            **({"processingFailureReason": "Video codec not supported"}
                               if status == "PROCESSING_FAILED" else {})})

    def _content_problem(self, content: dict):
        media = [content["media"]] if "media" in content else (content.get("multiImage") or {}).get("images", [])
        if "multiImage" in content and not 2 <= len(media) <= 20:
            return "multiImage needs 2 to 20 images"
        for item in media:
            urn = item.get("id", "")
            if urn.startswith("urn:li:image:"):
                if self.images.get(urn, {}).get("bytes") is None:
                    return f"Image {urn} has not been uploaded"
            elif urn.startswith("urn:li:document:"):
                if self.documents.get(urn, {}).get("bytes") is None or not item.get("title"):
                    return f"Document {urn} has not been uploaded, or has no title"
            elif urn.startswith("urn:li:video:"):
                video = self.videos.get(urn)
                if video is None or not video["finalized"] or video["polls_left"] > 0:
                    return f"Video {urn} is not AVAILABLE"
            else:
                return f"Unknown media {urn}"
        return None

    def create_post(self, request: FakeRequest):
        post = request.json() or {}
        if not self._may_act_as(request, post.get("author", "")):
            return linkedin_error(403, "Unpermitted fields present in REQUEST_BODY: Data Processing Exception while "
                                       "processing fields [/author]", "ACCESS_DENIED", 100)
        if post.get("lifecycleState") != "PUBLISHED" or post.get("visibility") not in ("PUBLIC", "CONNECTIONS"):
            return linkedin_error(422, "Invalid post", "UNPROCESSABLE_ENTITY")
        problem = self._content_problem(post.get("content") or {})
        if problem:
            return linkedin_error(422, problem, errorDetailType="com.linkedin.common.error.BadRequest")
        if len(post.get("commentary") or "") > 3000:
            return linkedin_error(422, "ERROR :: /commentary :: is too long", errorDetails={"inputErrors": [{
                "description": "Text is too long", "input": {"inputPath": {"fieldPath": "/commentary"}},
                "code": "FIELD_LENGTH_TOO_LONG"}]})
        for urn, earlier in self.posts.items():
            if earlier["author"] == post["author"] and earlier.get("commentary") == post.get("commentary") \
                    and post.get("commentary"):
                return linkedin_error(422, f"Content is a duplicate of {urn}",
                                      errorDetailType="com.linkedin.common.error.BadRequest")
        urn = f"urn:li:share:{next(self.ids)}"
        self.posts[urn] = post
        self.published.append({"urn": urn, **post})
        return answer(201, b"", {"x-restli-id": urn, "x-linkedin-id": urn.rsplit(":", 1)[1]})

    def create_comment(self, request: FakeRequest):
        target = unquote(request.match[1])
        comment = request.json() or {}
        if target not in self.posts:
            return linkedin_error(404, f"Post {target} not found", "NOT_FOUND")
        if comment.get("object") != target or not self._may_act_as(request, comment.get("actor", "")):
            return linkedin_error(403, "Not enough permissions to comment as this actor", "ACCESS_DENIED", 100)
        number = next(self.ids)
        activity = f"urn:li:activity:{target.rsplit(':', 1)[1]}"
        urn = f"urn:li:comment:({activity},{number})"
        stored = {**comment, "id": str(number), "commentUrn": urn, "object": target}
        self.comments.append(stored)
        self.published.append(stored)
        return answer(201, stored, {"x-restli-id": urn})

    def delete_post(self, request: FakeRequest):
        """DELETE /rest/posts/{encoded URN} (X-RestLi-Method: DELETE): 204; its author only; 404 when unknown."""
        urn = unquote(request.match[1])
        post = self.posts.get(urn)
        if post is None:
            return linkedin_error(404, f"Post {urn} not found", "NOT_FOUND")
        if not self._may_act_as(request, post["author"]):
            return linkedin_error(403, "Not enough permissions to delete this post", "ACCESS_DENIED", 100)
        del self.posts[urn]
        self.deleted.append(urn)
        return answer(204)

    def delete_comment(self, request: FakeRequest):
        """DELETE /rest/socialActions/{post}/comments/{id}?actor=...: 204; 404 when the comment is not there."""
        target, number = unquote(request.match[1]), request.match[2]
        found = next((comment for comment in self.comments if comment["object"] == target and comment["id"] == number),
                     None)
        if found is None:
            return linkedin_error(404, f"Comment {number} not found", "NOT_FOUND")
        if found.get("actor") != unquote(request.query.get("actor", "")) or not self._may_act_as(request, found["actor"]):
            return linkedin_error(403, "Not enough permissions to delete this comment", "ACCESS_DENIED", 100)
        self.comments.remove(found)
        self.deleted.append(found["commentUrn"])
        return answer(204)
