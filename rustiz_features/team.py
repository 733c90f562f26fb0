"""An organization's team: members and their roles, invites, accepting an invite, and a forgotten password.

Admins manage members (`/public/v1/members...`: the routes need the level "full"); anyone may open an invite
link (`/auth/invite`) or ask for a password reset link (`/auth/forgot`, `/auth/reset`); the CLI's `member`
commands call the same functions.

Rules:
- An invite link and a reset link carry a random token; only its hash is stored. Each works once: an invite
  for 7 days (sending it again makes a new token, the old one dead), a reset link for an hour (a newer one
  replaces it). Links are absolute, under FRONTEND_URL.
- The last admin of an organization cannot be removed or made something else (409).
- Removing a member ends their sessions in that organization at once; a reset password ends every session
  of the account (storage/web_users.set_web_user_password).
- `POST /auth/forgot` answers the same, in about the same time, whether or not the email has an account.
- The routes open to anyone take small bodies, refuse cross-site sign-ins (as POST /auth/login does), are
  counted per client address, and a wrong password on an invite counts towards the account's lockout. With
  passwords off (RUSTIZ_OIDC_ONLY=1) the ones that take or set a password refuse: single sign-on accepts
  invites instead (oidc.member_to_sign_in).
- Passwords are hashed and checked off the event loop (web.PasswordChecker).
- The members routes declare their audit actions; accepting an invite records itself (its actor the person).
"""
from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import time
from typing import Awaitable, Optional, Union

from rustiz import (
    ApiError, App, Config, Request, Response, Store, bad_request, duration, hash_api_key, iso_at, json_object,
    json_response, log, nest_error, not_found, route_options, utc_now_iso,
)
from .api_docs import DATE, STRING, BOOLEAN, array_of, documented, nullable, object_schema, parameter
from .storage import audit as audit_store
from .storage import members as member_store
from .storage import web_users as web_user_store
from .web import (
    SIGN_IN_ATTEMPTS_PER_EMAIL, SIGN_IN_BODY_BYTES, SIGN_IN_COUNTER, SIGN_IN_WINDOW_SECONDS, UNKNOWN_USER_PASSWORD_HASH,
    PasswordChecker, WebApp, start_web_session,
)

ROLES = member_store.ROLES
INVITE_SECONDS = 7 * 86400
RESET_SECONDS = 3600
PASSWORD_MIN_LENGTH, PASSWORD_MAX_LENGTH = 10, 1024
NAME_MAX_LENGTH = 100
EMAIL_MAX_LENGTH = 254
EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]+\.[^@\s]+")
TOKEN = re.compile(r"[0-9a-f]{64}")
# Per client address, per window: opening and accepting invites, asking for reset links, using them.
ATTEMPTS_WINDOW_SECONDS = 15 * 60
INVITE_ATTEMPTS_PER_ADDRESS = 30
FORGOT_PER_ADDRESS = 10
FORGOT_PER_EMAIL = 3
RESET_ATTEMPTS_PER_ADDRESS = 30

INVITE_GONE = ("This invitation link does not work: it was used already, it was revoked or sent again (only the "
               "newest link works), or it is more than 7 days old. Ask the organization's admin for a new one.")
RESET_GONE = ("This link to set a new password does not work: it was used already, a newer one was sent, or it "
              "is more than an hour old. Ask for a new one from the sign-in page (Forgot password?).")
FORGOT_ANSWER = ("If this email has an account, a link to set a new password is on its way. It works once, for "
                 "an hour.")


# --- checks of what a body says -------------------------------------------------------------------------------

def email_problem(value: object) -> Optional[str]:
    if not isinstance(value, str) or len(value.strip()) > EMAIL_MAX_LENGTH or not EMAIL.fullmatch(value.strip()):
        return "email must be an email address, such as alice@example.com"
    return None


def role_problem(value: object) -> Optional[str]:
    return None if value in ROLES else f"role must be one of the following values: {', '.join(ROLES)}"


def password_problem(value: object) -> Optional[str]:
    if not isinstance(value, str) or not PASSWORD_MIN_LENGTH <= len(value) <= PASSWORD_MAX_LENGTH:
        return f"password must be {PASSWORD_MIN_LENGTH} to {PASSWORD_MAX_LENGTH} characters"
    return None


def name_problem(value: object) -> Optional[str]:
    if (not isinstance(value, str) or not value.strip() or len(value.strip()) > NAME_MAX_LENGTH
            or any(ord(character) < 32 for character in value)):
        return f"name must be 1 to {NAME_MAX_LENGTH} characters, on one line"
    return None


def refuse_problems(*problems: Optional[str]) -> None:
    """A 400 naming every field that is wrong (none: nothing happens)."""
    wrong = [problem for problem in problems if problem]
    if wrong:
        raise bad_request(wrong)


def token_of(body: dict, gone: str) -> str:
    """The body's or query's link token; 400 when missing, 404 (`gone`) when it cannot be one of ours."""
    token = body.get("token")
    if not isinstance(token, str) or not token.strip():
        raise bad_request(["token must be the token of the link (the part after token=)"])
    if not TOKEN.fullmatch(token.strip().lower()):
        raise not_found(gone)
    return token.strip().lower()


def count_attempt(store: Store, key: str, limit: int, what: str, window: int = ATTEMPTS_WINDOW_SECONDS) -> None:
    """One attempt counted against `limit` per window (shared by every worker); 429 saying when to retry."""
    decision = store.count_request(key, limit, window)
    if not decision.allowed:
        raise ApiError(429, {"statusCode": 429, "error": "Too Many Requests", "message": (
            f"Too many {what} (at most {limit} in {duration(window)}): try again in "
            f"{duration(decision.retry_after)}")}, [("Retry-After", str(decision.retry_after))])


# --- invites, for the API and the CLI ---------------------------------------------------------------------------

def public_base(config: Config) -> str:
    """Where people open rustiz: FRONTEND_URL; unset (the CLI), the address `serve` would use in its place."""
    host = f"[{config.host}]" if ":" in config.host else config.host
    return config.frontend_url or f"http://{host}:{config.port}"


def invite_url(config: Config, token: str) -> str:
    return f"{public_base(config)}/#/invite?token={token}"


def new_token() -> tuple:
    """(a link's token, its hash as stored)."""
    token = os.urandom(32).hex()
    return token, hash_api_key(token)


def invite_answer(config: Config, invite: dict, token: str) -> dict:
    return {"id": invite["id"], "inviteUrl": invite_url(config, token), "expiresAt": invite["expiresAt"]}


def mail_invite(store: Store, config: Config, organization_id: str, invite: dict, url: str,
                inviter: Optional[str]) -> bool:
    """The invite's e-mail, carrying `url` exactly, when mail is configured (whether it was queued)."""
    from rustiz_features import mail
    organization = store.organization(organization_id)["name"]
    person = web_user_store.person(store, inviter) if inviter else None
    who = (person["name"] or person["email"]) if person else f"An admin of {organization}"
    return mail.queue_invite(store, config, to=invite["email"], invite_url=url, organization_name=organization,
                             role=invite["role"], inviter=who)


def invite_member(store: Store, config: Config, organization_id: str, body: dict,
                  inviter: Optional[str]) -> dict:
    """A new invite for body's email and role: {id, inviteUrl, expiresAt}. Raises ApiError 400 or 409."""
    refuse_problems(email_problem(body.get("email")), role_problem(body.get("role")))
    email, role = body["email"].strip().lower(), body["role"]
    already = member_store.member_by_email(store, organization_id, email)
    if already is not None:
        raise nest_error(409, f"{email} is already a member of this organization (role {already['role']}): change "
                              "their role instead")
    token, token_hash = new_token()
    try:
        invite = member_store.add_invite(store, organization_id, email, role, token_hash,
                                         iso_at(time.time() + INVITE_SECONDS), inviter)
    except sqlite3.IntegrityError:
        raise nest_error(409, f"{email} is already invited to this organization: send the invite again (a new "
                              "link) or revoke it") from None
    answer = invite_answer(config, invite, token)
    mail_invite(store, config, organization_id, invite, answer["inviteUrl"], inviter)
    return answer


def resend_invite(store: Store, config: Config, organization_id: str, invite_id: str,
                  inviter: Optional[str]) -> dict:
    """The invite with a new link valid 7 days from now (the old link dead): {id, inviteUrl, expiresAt}."""
    token, token_hash = new_token()
    invite = member_store.renew_invite(store, organization_id, invite_id, token_hash,
                                       iso_at(time.time() + INVITE_SECONDS))
    if invite is None:
        raise no_such_invite(invite_id)
    answer = invite_answer(config, invite, token)
    mail_invite(store, config, organization_id, invite, answer["inviteUrl"], inviter)
    return answer


def no_such_invite(invite_id: str) -> ApiError:
    return not_found(f"No pending invite with the id {invite_id!r} in this organization (GET /public/v1/members "
                     "lists them)")


def no_such_member(user_id: str) -> ApiError:
    return not_found(f"No member with the id {user_id!r} in this organization (GET /public/v1/members lists them)")


def last_admin(member: dict) -> ApiError:
    return nest_error(409, f"{member['email']} is the last admin of this organization: make another member an "
                           "admin first")


def change_role(store: Store, organization_id: str, user_id: str, role: object) -> dict:
    """The member with their new role. Raises ApiError 400, 404 or 409 (the last admin)."""
    refuse_problems(role_problem(role))
    try:
        changed = member_store.set_role(store, organization_id, user_id, role)
    except member_store.LastAdmin:
        raise last_admin(member_store.member(store, organization_id, user_id)) from None
    if changed is None:
        raise no_such_member(user_id)
    return changed


def remove_member(store: Store, organization_id: str, user_id: str) -> dict:
    """The member gone, their sessions in the organization ended. Raises ApiError 404 or 409 (the last admin)."""
    try:
        removed = member_store.remove_member(store, organization_id, user_id)
    except member_store.LastAdmin:
        raise last_admin(member_store.member(store, organization_id, user_id)) from None
    if removed is None:
        raise no_such_member(user_id)
    return removed


# --- the API ------------------------------------------------------------------------------------------------------

_MEMBER = object_schema({"id": STRING, "email": STRING, "name": nullable("string"), "role": {"enum": list(ROLES)},
                         "createdAt": DATE})
_INVITE = object_schema({"id": STRING, "email": STRING, "role": {"enum": list(ROLES)}, "expiresAt": DATE,
                         "createdAt": DATE})
_INVITE_LINK = object_schema({"id": STRING, "inviteUrl": STRING, "expiresAt": DATE})
_MEMBER_ID = parameter("path", "id", "A member's id (their user id)")
_INVITE_ID = parameter("path", "id", "A pending invite's id")


class MembersApi:
    """/public/v1/members: the organization's members and pending invites, for its admins (level full)."""

    def __init__(self, app: App):
        self.config, self.store = app.config, app.store

    @route_options(scope="full")  # (a GET, but who is in the team is the admins' business)
    @documented("The organization's members with their roles, and its pending invites (rustiz; admins)",
                ("200", object_schema({"members": array_of(_MEMBER), "invites": array_of(_INVITE)})))
    def list_members(self, request: Request, organization_id: str) -> Response:
        return json_response({"members": member_store.members(self.store, organization_id),
                              "invites": member_store.invites(self.store, organization_id)}, 200,
                             [("Cache-Control", "no-store")])

    @route_options(audit="member.invited")
    @documented("Invite a person by email with a role: a single-use link valid 7 days, also e-mailed when mail is "
                "configured (rustiz; admins)", ("201", _INVITE_LINK), "BadRequest Conflict",
                request=object_schema({"email": STRING, "role": {"enum": list(ROLES)}}))
    def invite(self, request: Request, organization_id: str) -> Response:
        answer = invite_member(self.store, self.config, organization_id, json_object(request), request.user)
        log(f"invite {answer['id']} made in organization {organization_id} through the API")
        return json_response(answer, 201, [("Cache-Control", "no-store")])

    @route_options(audit="member.updated")
    @documented("Change a member's role; the last admin stays one (rustiz; admins)", ("200", _MEMBER),
                "BadRequest NotFound Conflict", (_MEMBER_ID,), request=object_schema({"role": {"enum": list(ROLES)}}))
    def change_role(self, request: Request, organization_id: str) -> Response:
        return json_response(change_role(self.store, organization_id, request.params["id"],
                                         json_object(request).get("role")))

    @route_options(audit="member.removed")
    @documented("Remove a member from the organization: their sessions in it end at once; the last admin stays "
                "(rustiz; admins)", ("200", _MEMBER), "NotFound Conflict", (_MEMBER_ID,))
    def remove(self, request: Request, organization_id: str) -> Response:
        removed = remove_member(self.store, organization_id, request.params["id"])
        log(f"member {removed['id']} removed from organization {organization_id} through the API")
        return json_response(removed)

    @route_options(audit="member.invited")  # (invited again: a new link)
    @documented("Send a pending invite again: a new link valid 7 days; the old link no longer works (rustiz; admins)",
                ("200", _INVITE_LINK), "NotFound", (_INVITE_ID,))
    def resend_invite(self, request: Request, organization_id: str) -> Response:
        return json_response(resend_invite(self.store, self.config, organization_id, request.params["id"],
                                           request.user), 200, [("Cache-Control", "no-store")])

    @route_options(audit="invite.revoked")
    @documented("Revoke a pending invite: its link no longer works (rustiz; admins)", ("200", _INVITE), "NotFound",
                (_INVITE_ID,))
    def revoke_invite(self, request: Request, organization_id: str) -> Response:
        revoked = member_store.revoke_invite(self.store, organization_id, request.params["id"])
        if revoked is None:
            raise no_such_invite(request.params["id"])
        return json_response(revoked)



# --- accepting an invite, and a forgotten password (open to anyone) ---------------------------------------------

_SIGNED_IN = object_schema({"organization": {"type": "object"}, "user": {"type": "object"}, "role": STRING,
                             "organizations": array_of({"type": "object"}), "csrfToken": STRING})
_MESSAGE = object_schema({"message": STRING})


class TeamSignIn:
    """GET and POST /auth/invite, POST /auth/forgot, POST /auth/reset: no key, small bodies, counted per address."""

    def __init__(self, app: App):
        self.app, self.config, self.store, self.guard = app, app.config, app.store, app.guard
        self.passwords = PasswordChecker()
        self.links_being_sent: set = set()  # (the tasks of POST /auth/forgot still at work: kept till done)

    def _count_address(self, request: Request, kind: str, limit: int, what: str) -> None:
        count_attempt(self.store, f"{kind} address:{self.guard.client_address(request)}", limit,
                      f"{what} from your address")

    def _refuse_cross_site(self, request: Request) -> None:
        """Refused: another site's page signing this browser in, and any password when passwords are off."""
        self.app.feature(WebApp).refuse_cross_site_sign_in(request)
        if self.config.oidc is not None and self.config.oidc.only:  # (passwords are off: single sign-on only)
            raise ApiError(403, {"statusCode": 403, "error": "Forbidden", "message": (
                "Passwords are turned off on this server (RUSTIZ_OIDC_ONLY=1): sign in through single sign-on; an "
                "invite is accepted by signing in with its e-mail address")})

    def _link_and_password(self, request: Request, kind: str, limit: int, what: str, gone: str) -> tuple:
        """What a body that uses a link with a password must pass first: (the link's token, the body)."""
        self._refuse_cross_site(request)
        self._count_address(request, kind, limit, what)
        body = json_object(request)
        token = token_of(body, gone)
        refuse_problems(password_problem(body.get("password")))
        return token, body

    @route_options(authenticated=False)
    @documented("What an invite link offers: the organization, the role, the email and whether it has an account",
                ("200", object_schema({"organization": object_schema({"name": STRING}), "role": STRING,
                                       "email": STRING, "hasAccount": BOOLEAN, "expiresAt": DATE})),
                "BadRequest NotFound", (parameter("query", "token", "The token of the invite link", True),))
    def invite(self, request: Request) -> Response:
        self._count_address(request, "invite", INVITE_ATTEMPTS_PER_ADDRESS, "invite links")
        invite = self._live_invite(token_of(request.query, INVITE_GONE))
        return json_response({"organization": {"name": invite["organizationName"]}, "role": invite["role"],
                              "email": invite["email"], "hasAccount": invite["userId"] is not None,
                              "expiresAt": invite["expiresAt"]}, 200, [("Cache-Control", "no-store")])

    def _live_invite(self, token: str) -> dict:
        invite = member_store.invite_for_token(self.store, hash_api_key(token), utc_now_iso())
        if invite is None:
            raise not_found(INVITE_GONE)
        return invite

    @route_options(authenticated=False, body_limit=SIGN_IN_BODY_BYTES)
    @documented("Accept an invite: a new person gives a name and a password, an existing account its password; "
                "signs in (the session cookie) as a member with the invite's role", ("200", _SIGNED_IN),
                "BadRequest NotFound",
                request=object_schema({"token": STRING, "password": STRING}, {"name": STRING}),
                more_answers={"401": {"description": "Wrong password for the existing account"}})
    def accept(self, request: Request) -> Union[Response, Awaitable[Response]]:
        token, body = self._link_and_password(request, "invite", INVITE_ATTEMPTS_PER_ADDRESS, "invite links",
                                              INVITE_GONE)
        invite = self._live_invite(token)
        if invite["userId"] is None:
            refuse_problems(name_problem(body.get("name")))
        return self._accept(request, token, invite, body)

    async def _accept(self, request: Request, token: str, invite: dict, body: dict) -> Response:
        password, now = body["password"], utc_now_iso()
        new_person = None
        if invite["userId"] is None:
            new_person = (body["name"].strip(), await self.passwords.hashed(password))
        else:  # the account's own password, counted as a sign-in of it is
            email_key = SIGN_IN_COUNTER + "email:" + invite["email"]
            await self.store.off_loop(count_attempt, self.store, email_key, SIGN_IN_ATTEMPTS_PER_EMAIL,
                                      f"sign-in attempts for {invite['email']}", SIGN_IN_WINDOW_SECONDS)
            user = await self.store.off_loop(web_user_store.web_user, self.store, invite["email"])
            if not await self.passwords.matches(password, user[2] if user else UNKNOWN_USER_PASSWORD_HASH):
                raise ApiError(401, {"statusCode": 401, "message": f"Wrong password for {invite['email']}"})
            await self.store.off_loop(self.store.take_back_hit, email_key)
        accepted = await self.store.off_loop(member_store.accept_invite, self.store, hash_api_key(token), now,
                                             new_person)
        if accepted is None:  # used meanwhile, or the account appeared meanwhile: the link again tells which
            raise not_found(INVITE_GONE)
        organization_id, user_id = accepted
        await self.store.off_loop(self._record_accepted, request, organization_id, user_id, invite["id"])
        log(f"invite {invite['id']} accepted: {invite['email']} is a member of organization {organization_id} "
            f"({invite['role']})")
        return await self.store.off_loop(self._signed_in, request, organization_id, user_id)

    def _record_accepted(self, request: Request, organization_id: str, user_id: str, invite_id: str) -> None:
        """The audit log's entry: the person who joined is its actor (a route open to anyone records itself)."""
        from rustiz_features import audit
        audit.record(self.store, organization_id, audit_store.user_actor(self.store, user_id), "invite.accepted",
                     "invite", [invite_id], self.guard.client_address(request))

    def _signed_in(self, request: Request, organization_id: str, user_id: str) -> Response:
        """Signed in as POST /auth/login signs in, in the organization just joined."""
        cookie, csrf_token = start_web_session(self.store, self.guard, request, organization_id, web_user_id=user_id)
        role = web_user_store.member_role(self.store, user_id, organization_id)
        return json_response({**self.app.feature(WebApp).who(organization_id, user_id, role), "csrfToken": csrf_token},
                             200, [("Set-Cookie", cookie), ("Cache-Control", "no-store")])

    @route_options(authenticated=False, body_limit=SIGN_IN_BODY_BYTES)
    @documented("Ask for a link to set a new password, e-mailed to the account's address; the same answer "
                "whether or not the email has an account", ("202", _MESSAGE), "BadRequest",
                request=object_schema({"email": STRING}))
    def forgot(self, request: Request) -> Awaitable[Response]:
        self._refuse_cross_site(request)
        body = json_object(request)
        refuse_problems(email_problem(body.get("email")))
        email = body["email"].strip().lower()
        self._count_address(request, "forgot", FORGOT_PER_ADDRESS, "password reset requests")
        count_attempt(self.store, f"forgot email:{email}", FORGOT_PER_EMAIL, f"password reset requests for {email}",
                      RESET_SECONDS)
        return self._answer_then_send_link(email)

    async def _answer_then_send_link(self, email: str) -> Response:
        """The answer leaves before the email is looked up: how long it takes cannot tell whether the email has
        an account (the link is stored and mailed meanwhile, for an account only)."""
        task = asyncio.get_running_loop().create_task(self.store.off_loop(self.send_reset_link, email))
        self.links_being_sent.add(task)
        task.add_done_callback(self.links_being_sent.discard)
        return json_response({"message": FORGOT_ANSWER}, 202, [("Cache-Control", "no-store")])

    def send_reset_link(self, email: str) -> None:
        """A reset link stored and e-mailed to the account with this email (nothing for an unknown one); a failure
        is logged (its answer is gone already)."""
        try:
            user = web_user_store.web_user(self.store, email)
            if user is None:
                return
            token, token_hash = new_token()
            member_store.add_password_reset(self.store, user[0], token_hash, iso_at(time.time() + RESET_SECONDS))
            if not mail_reset(self.store, self.config, email, reset_url(self.config, token)):
                log(f"a password reset link was asked for {email}, but no e-mail can be sent (mail is not "
                    "configured): `rustiz user password` sets a new password")
        except Exception as error:  # (the database unwritable, ...): said in the log, as the person was answered
            log(f"the password reset link asked for {email} could not be made: {error}", "error")

    @route_options(authenticated=False, body_limit=SIGN_IN_BODY_BYTES)
    @documented("Set a new password with a reset link's token (once, within the hour); every session of the "
                "account ends", ("200", _MESSAGE), "BadRequest NotFound",
                request=object_schema({"token": STRING, "password": STRING}))
    def reset(self, request: Request) -> Union[Response, Awaitable[Response]]:
        token, body = self._link_and_password(request, "reset", RESET_ATTEMPTS_PER_ADDRESS, "password resets",
                                              RESET_GONE)
        if not member_store.password_reset_is_live(self.store, hash_api_key(token), utc_now_iso()):
            raise not_found(RESET_GONE)  # (checked before the hashing: a forged token costs none)
        return self._reset(token, body["password"])

    async def _reset(self, token: str, password: str) -> Response:
        password_hash = await self.passwords.hashed(password)
        used = await self.store.off_loop(member_store.use_password_reset, self.store, hash_api_key(token),
                                         utc_now_iso())
        if used is None:
            raise not_found(RESET_GONE)
        user_id, organization_id, email = used
        await self.store.off_loop(web_user_store.set_web_user_password, self.store, organization_id, email,
                                  password_hash)
        log(f"{email} set a new password with a reset link; their sessions ended")
        return json_response({"message": "Your new password is set: sign in with it. Every browser signed in "
                                         "with the old one is signed out."}, 200, [("Cache-Control", "no-store")])


def reset_url(config: Config, token: str) -> str:
    return f"{public_base(config)}/#/reset?token={token}"


def mail_reset(store: Store, config: Config, email: str, url: str) -> bool:
    """The reset link's e-mail, when mail is configured (whether it was queued)."""
    from rustiz_features import mail
    return mail.queue_password_reset(store, config, to=email, reset_url=url)
