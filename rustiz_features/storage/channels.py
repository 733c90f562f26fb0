"""Channels (Postiz's integrations) and their groups (customers): adding, reconnecting, changing and deleting
them, their credentials and cached sessions, and the writes of an OAuth consent that make or renew one.

Rules:
- Secrets (token, refresh token) never leave this module in a channel row: the Prisma row Postiz returns
  carries them, rustiz's channel rows (channel_from_row) do not; channel_secrets hands them to the code that
  calls the platform.
- An account is one live channel per organization: the same account connected again reconnects its channel
  (it keeps its id, posts, settings and group) rather than adding a second one.
- The listing the request path reads (GET /integrations) stays in the core: Store.integrations.
"""
from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any, Optional

from rustiz import Store, new_cuid, new_uuid, utc_now_iso

if TYPE_CHECKING:
    from rustiz_features.catalogue import NewChannel


class ChannelAlreadyAdded(Exception):
    """The organization already has a live channel for that account (new credentials for another channel
    named it); nothing was written."""

    def __init__(self, channel_id: str, name: str):
        super().__init__(channel_id)
        self.channel_id = channel_id
        self.name = name


def add_channel(store: Store, organization_id: str, channel: "NewChannel", rename: bool = True) -> tuple:
    """Store a connected channel, its credentials as the token: (it as GET /integrations lists it, whether
    it was there already).

    The organization's live channel of the same account is reconnected (see _reconnect_channel) instead
    of added twice; `rename`: whether it takes `channel`'s name too (given, or reported by the platform).
    `channel.customer` names a group by id or by name; an unknown name makes a new group."""
    account = channel.account
    now = utc_now_iso()
    with store.writing() as db:
        existing = db.execute("SELECT id FROM integration WHERE organization_id = ? AND provider_identifier = ? "
                              "AND internal_id = ? AND deleted_at IS NULL",
                              (organization_id, channel.provider, account.internal_id)).fetchone()
        customer_id = _customer_id(db, organization_id, channel.customer, now) if channel.customer else None
        if existing is not None:
            channel_id = existing[0]
            _reconnect_channel(db, channel_id, channel, rename, now)
            if customer_id is not None:
                db.execute("UPDATE integration SET customer_id = ? WHERE id = ?", (customer_id, channel_id))
        else:
            channel_id = new_cuid()
            db.execute("INSERT INTO integration (id, internal_id, organization_id, name, picture, provider_identifier, "
                       "token, profile, customer_id, created_at, updated_at, session, limits) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (channel_id, account.internal_id, organization_id, account.name, account.picture,
                        channel.provider, json.dumps(channel.credentials), account.profile, customer_id, now, now,
                        None if channel.session is None else json.dumps(channel.session),
                        None if channel.limits is None else json.dumps(channel.limits)))
        row = db.execute(store.INTEGRATIONS_SQL + " AND i.id = ?", (organization_id, channel_id)).fetchone()
    return store.integration_item(row), existing is not None


def update_channel_credentials(store: Store, organization_id: str, channel_id: str, channel: "NewChannel", rename: bool,
                               another_account_allowed: bool, changes: dict) -> Optional[dict]:
    """New credentials (checked with the platform) for a live channel of the organization, and the
    `changes` of update_channel with them, in one write: the row, None when there is no such channel.

    Raises ValueError (holding the channel's account) when the credentials are another account's, unless
    `another_account_allowed` (a webhook: the URL is the account); ChannelAlreadyAdded when that other
    account is already another channel of the organization. Nothing is written then."""
    now = utc_now_iso()
    with store.writing() as db:
        row = db.execute("SELECT provider_identifier, internal_id FROM integration WHERE id = ? AND "
                         "organization_id = ? AND deleted_at IS NULL", (channel_id, organization_id)).fetchone()
        if row is None or row[0] != channel.provider:
            return None
        if row[1] != channel.account.internal_id:
            if not another_account_allowed:
                raise ValueError(row[1])
            other = db.execute("SELECT id, name FROM integration WHERE organization_id = ? AND "
                               "provider_identifier = ? AND internal_id = ? AND deleted_at IS NULL",
                               (organization_id, channel.provider, channel.account.internal_id)).fetchone()
            if other is not None:
                raise ChannelAlreadyAdded(other[0], other[1])
        _reconnect_channel(db, channel_id, channel, rename, now)
        _change_channel(db, organization_id, channel_id, changes, now)
        row = db.execute(f"SELECT {CHANNEL_COLUMNS} FROM integration WHERE id = ?", (channel_id,)).fetchone()
    return channel_from_row(row)


def _reconnect_channel(db: sqlite3.Connection, channel_id: str, channel: "NewChannel", rename: bool,
                       now: str) -> None:
    """A channel keeps its id, posts, settings and group, and takes the credentials and the account as the
    platform just reported it: its reconnect flag is cleared (scheduling.release_waiting_posts sends what waited).
    Pasted credentials have no refresh token: an OAuth one left would later overwrite them."""
    account = channel.account
    db.execute("UPDATE integration SET token = ?, refresh_token = NULL, token_expiration = NULL, "
               "refresh_needed = 0, internal_id = ?, picture = COALESCE(?, picture), profile = COALESCE(?, profile), "
               "session = ?, limits = COALESCE(?, limits), updated_at = ? WHERE id = ?",
               (json.dumps(channel.credentials), account.internal_id, account.picture, account.profile,
                None if channel.session is None else json.dumps(channel.session),
                None if channel.limits is None else json.dumps(channel.limits), now, channel_id))
    if rename:
        db.execute("UPDATE integration SET name = ? WHERE id = ?", (account.name, channel_id))


def _customer_id(db: sqlite3.Connection, organization_id: str, id_or_name: str, now: str) -> str:
    """The organization's group with that id, else with that name, else a new group of that name."""
    row = db.execute("SELECT id FROM customer WHERE organization_id = ? AND deleted_at IS NULL AND (id = ? OR name = ?) "
                     "ORDER BY id = ? DESC, created_at LIMIT 1",
                     (organization_id, id_or_name, id_or_name, id_or_name)).fetchone()
    if row is not None:
        return row[0]
    customer_id = new_uuid()
    db.execute("INSERT INTO customer (id, organization_id, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
               (customer_id, organization_id, id_or_name, now, now))
    return customer_id


def channel(store: Store, organization_id: str, channel_id: str, include_deleted: bool = False) -> Optional[dict]:
    """One channel of the organization (None for another organization's id), as validate_create_post takes it."""
    row = store.read(
        "SELECT id, name, provider_identifier, picture, disabled, profile, additional_settings, customer_id, "
        "deleted_at, limits FROM integration WHERE id = ? AND organization_id = ?"
        + ("" if include_deleted else " AND deleted_at IS NULL"), (channel_id, organization_id)).fetchone()
    if row is None:
        return None
    try:
        additional_settings = json.loads(row[6])
    except ValueError:  # written by hand or by an older tool: treat as no extra settings
        additional_settings = []
    return {"id": row[0], "name": row[1], "provider_identifier": row[2], "picture": row[3],
            "disabled": bool(row[4]), "profile": row[5],
            "additional_settings": additional_settings if isinstance(additional_settings, list) else [],
            "customer_id": row[7], "deleted": row[8] is not None, "limits": json.loads(row[9] or "{}")}


def customers(store: Store, organization_id: str) -> list:
    rows = store.read("SELECT id, name FROM customer WHERE organization_id = ? AND deleted_at IS NULL "
                      "ORDER BY created_at, id", (organization_id,))
    return [{"id": row[0], "name": row[1]} for row in rows]


# Secrets (token, refreshToken) never leave the store: the Prisma row Postiz returns carries them,
# rustiz's channel rows do not.
CHANNEL_COLUMNS = (
    "id, internal_id, organization_id, name, picture, provider_identifier, type, disabled, token_expiration, "
    "profile, deleted_at, created_at, updated_at, in_between_steps, refresh_needed, posting_times, "
    "custom_instance_details, customer_id, root_internal_id, additional_settings, refresh_token IS NULL")


def channel_from_row(row: tuple) -> dict:
    """A channel in the shape of Postiz's Integration DB row (§7.1), JSON columns kept as strings."""
    return {"id": row[0], "internalId": row[1], "organizationId": row[2], "name": row[3], "picture": row[4],
            "providerIdentifier": row[5], "type": row[6], "disabled": bool(row[7]), "tokenExpiration": row[8],
            "profile": row[9], "deletedAt": row[10], "createdAt": row[11], "updatedAt": row[12],
            "inBetweenSteps": bool(row[13]), "postingTimes": row[15],
            # flagged, or holding an expired token that no refresh token can renew
            "refreshNeeded": bool(row[14]) or bool(row[8] and row[20] and row[8] < utc_now_iso()),
            "customInstanceDetails": row[16], "customerId": row[17], "rootInternalId": row[18],
            "additionalSettings": row[19]}


def channel_row(store: Store, organization_id: str, channel_id: str) -> Optional[dict]:
    """A live channel of the organization as Postiz's Integration row (other organizations' ids: None)."""
    row = store.read(f"SELECT {CHANNEL_COLUMNS} FROM integration WHERE id = ? AND organization_id = ? "
                     "AND deleted_at IS NULL", (channel_id, organization_id)).fetchone()
    return None if row is None else channel_from_row(row)


def update_channel(store: Store, organization_id: str, channel_id: str, changes: dict) -> Optional[dict]:
    """Rename, disable or enable a channel, set its posting times or its group (`changes` holds any of
    name, disabled, posting_times, customer: a group's id or name, "" for none); the row, None when unknown."""
    now = utc_now_iso()
    with store.writing() as db:
        if db.execute("SELECT 1 FROM integration WHERE id = ? AND organization_id = ? AND deleted_at IS NULL",
                      (channel_id, organization_id)).fetchone() is None:
            return None
        _change_channel(db, organization_id, channel_id, changes, now)
        row = db.execute(f"SELECT {CHANNEL_COLUMNS} FROM integration WHERE id = ?", (channel_id,)).fetchone()
    return channel_from_row(row)


def _change_channel(db: sqlite3.Connection, organization_id: str, channel_id: str, changes: dict,
                    now: str) -> None:
    columns = {name: changes[name] for name in ("name", "disabled", "posting_times") if name in changes}
    if "customer" in changes:
        columns["customer_id"] = (_customer_id(db, organization_id, changes["customer"], now)
                                  if changes["customer"] else None)
    for column, value in columns.items():  # column names come from the fixed list above, never input
        db.execute(f"UPDATE integration SET {column} = ?, updated_at = ? WHERE id = ?", (value, now, channel_id))


def delete_channel(store: Store, organization_id: str, channel_id: str) -> Optional[dict]:
    """Soft-delete a channel and every post on it; returns the deleted row, None when unknown."""
    now = utc_now_iso()
    with store.writing() as db:
        deleted = db.execute("UPDATE integration SET deleted_at = ?, updated_at = ? "
                             "WHERE id = ? AND organization_id = ? AND deleted_at IS NULL",
                             (now, now, channel_id, organization_id)).rowcount
        if not deleted:
            return None
        db.execute("UPDATE post SET deleted_at = ?, updated_at = ? "
                   "WHERE integration_id = ? AND organization_id = ? AND deleted_at IS NULL",
                   (now, now, channel_id, organization_id))
        row = db.execute(f"SELECT {CHANNEL_COLUMNS} FROM integration WHERE id = ?", (channel_id,)).fetchone()
    store.posts_changed()
    return channel_from_row(row)


def channel_secrets(store: Store, channel_id: str) -> tuple:
    """(credentials, cached session) of a channel, for calls to its platform outside a publish."""
    row = store.read("SELECT token, session FROM integration WHERE id = ?", (channel_id,)).fetchone()
    return json.loads(row[0] or "{}"), json.loads(row[1] or "null")


def save_channel_session(store: Store, channel_id: str, session: dict) -> None:
    with store.writing() as db:
        db.execute("UPDATE integration SET session = ? WHERE id = ?", (json.dumps(session), channel_id))


def mark_refresh_needed(store: Store, channel_id: str) -> bool:
    """Flag a channel for reconnecting; True when this call flagged it (so its notification goes out once)."""
    with store.writing() as db:
        return db.execute("UPDATE integration SET refresh_needed = 1, updated_at = ? WHERE id = ? AND "
                          "refresh_needed = 0", (utc_now_iso(), channel_id)).rowcount == 1


def connect_oauth_channel(store: Store, organization_id: str, channel: "NewChannel", refresh_token: Optional[str],
                          token_expiration: Optional[str], between_steps: bool,
                          refresh_channel_id: Optional[str]) -> tuple:
    """Store the channel a consent connected: (its id, whether it was already there).

    The channel named by `refresh_channel_id`, or else the organization's live channel of the same account,
    keeps its id, posts, settings and group and gets the new tokens (a refresh token the platform did not
    send again stays); otherwise a new channel is made (waiting in inBetweenSteps when a choice follows).
    Raises LookupError when the channel to refresh is gone, ValueError when the consent was for another
    account than that channel's."""
    account, now = channel.account, utc_now_iso()
    token = json.dumps(channel.credentials)
    with store.writing() as db:
        if refresh_channel_id:
            row = db.execute("SELECT id, provider_identifier, internal_id, in_between_steps FROM integration "
                             "WHERE id = ? AND organization_id = ? AND deleted_at IS NULL",
                             (refresh_channel_id, organization_id)).fetchone()
            if row is None or row[1] != channel.provider:
                raise LookupError(refresh_channel_id)
            if not between_steps and row[2] != account.internal_id:
                raise ValueError(row[2])
        else:
            row = db.execute("SELECT id, provider_identifier, internal_id, in_between_steps FROM integration "
                             "WHERE organization_id = ? AND provider_identifier = ? AND internal_id = ? "
                             "AND deleted_at IS NULL", (organization_id, channel.provider,
                                                        account.internal_id)).fetchone()
        if row is not None:
            db.execute("UPDATE integration SET token = ?, refresh_token = COALESCE(?, refresh_token), "
                       "token_expiration = ?, refresh_needed = 0, limits = COALESCE(?, limits), updated_at = ? "
                       "WHERE id = ?", (token, refresh_token, token_expiration,
                                        None if channel.limits is None else json.dumps(channel.limits), now, row[0]))
            if not between_steps:  # (a page or board channel keeps the page or board it stands for)
                db.execute("UPDATE integration SET name = ?, picture = ?, profile = ?, session = COALESCE(?, session) "
                           "WHERE id = ?", (account.name, account.picture, account.profile,
                                            None if channel.session is None else json.dumps(channel.session),
                                            row[0]))
            return row[0], True
        channel_id = new_cuid()
        customer_id = _customer_id(db, organization_id, channel.customer, now) if channel.customer else None
        db.execute("INSERT INTO integration (id, internal_id, organization_id, name, picture, provider_identifier, "
                   "token, refresh_token, token_expiration, in_between_steps, profile, customer_id, created_at, "
                   "updated_at, session, limits) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (channel_id, account.internal_id, organization_id, account.name, account.picture,
                    channel.provider, token, refresh_token, token_expiration, int(between_steps), account.profile,
                    customer_id, now, now, None if channel.session is None else json.dumps(channel.session),
                    None if channel.limits is None else json.dumps(channel.limits)))
    return channel_id, False


def complete_channel_step(store: Store, organization_id: str, channel_id: str, account: Any, session: Optional[dict],
                          limits: Optional[dict]) -> bool:
    """The choice after consent made: the channel becomes the chosen page or board; False when the channel
    is not waiting for one."""
    with store.writing() as db:
        return db.execute("UPDATE integration SET internal_id = ?, name = ?, picture = ?, profile = ?, "
                          "session = ?, limits = COALESCE(?, limits), in_between_steps = 0, updated_at = ? "
                          "WHERE id = ? AND organization_id = ? AND in_between_steps = 1 AND deleted_at IS NULL",
                          (account.internal_id, account.name, account.picture, account.profile,
                           None if session is None else json.dumps(session),
                           None if limits is None else json.dumps(limits), utc_now_iso(), channel_id,
                           organization_id)).rowcount == 1
