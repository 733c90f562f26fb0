"""The command line beside the core: every command but `init`, `serve` and `version` (those stay in rustiz.py).

The core's main() is the one CLI dispatch: it builds argparse for its own three commands and, for any other,
calls add_commands() here, which declares every command from one table, COMMANDS: its words, its function,
its help and its arguments. A new command is one entry there and one `command_*` function.

Rules: commands open the Store themselves (one short-lived Store per command) and speak to it through the
feature modules and their storage modules, as the API does; a refusal (ApiError) becomes a UserError, which
main() prints as one line. Feature modules are imported inside the command that needs them, so that each
command loads only what it uses.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import sqlite3
import sys
from typing import Any, Callable, Iterator, NamedTuple, Optional

from rustiz import (NAME_MAX_LENGTH, SCOPES, ApiError, Config, Store, UserError, hash_api_key, load_config, log,
                    new_api_key, update_config_value)
from .storage import alerts as alert_store
from .storage import keys as key_store
from .storage import members as member_store
from .storage import organizations as organization_store
from .storage import web_users as web_user_store


def command_key_rotate(arguments: argparse.Namespace) -> int:
    """A new own key for the organization (--org, else the config key's, else the only one); the config file
    gets it when it held the old one."""
    with _organization_opened(arguments.org) as (config, store, organization):
        current = hash_api_key(config.api_key) if config.api_key else None
        saved = arguments.org is None or organization["api_key_hash"] == current
        key = new_api_key()
        store.set_api_key_hash(organization["id"], hash_api_key(key))
    if saved:
        update_config_value(config.config_path, "RUSTIZ_API_KEY", key)
    print(key)
    where = f"saved in {config.config_path}" if saved else "shown once (not saved)"
    log(f"new API key for organization {organization['name']} {where}; the old key and the web sessions "
        "signed in with it no longer work, in running servers too")
    return 0


def command_key_add(arguments: argparse.Namespace) -> int:
    """A named key with a scope, printed once."""
    from rustiz_features.api_keys import add_key
    with _organization_opened(arguments.org) as (_, store, organization):
        key, row = add_key(store, organization["id"], arguments.name, arguments.scope)
    print(key)
    log(f"API key {row['name']!r} with the scope {arguments.scope} added to organization "
        f"{organization['name']}; the key above is shown once: only its hash is stored")
    return 0


def command_key_list(arguments: argparse.Namespace) -> int:
    with _organization_opened(arguments.org) as (_, store, organization):
        listed = key_store.api_keys(store, organization["id"])
    print("NAME\tSCOPE\tCREATED\tLAST USE\tID")
    for key in listed:
        print(f"{key['name']}\t{key['scope']}\t{key['createdAt']}\t{key['lastUsedAt'] or 'never'}\t{key['id']}")
    return 0


def command_key_revoke(arguments: argparse.Namespace) -> int:
    from rustiz_features.api_keys import revoke_key
    with _organization_opened(arguments.org) as (_, store, organization):
        revoked = revoke_key(store, organization["id"], arguments.key)
    log(f"API key {revoked['name']!r} of organization {organization['name']} revoked: it and the web sessions "
        "signed in with it no longer work, in running servers too")
    return 0


def command_org_add(arguments: argparse.Namespace) -> int:
    name = arguments.name.strip()
    if not name:
        raise UserError("the organization needs a name: rustiz org add \"Acme Inc\"")
    if len(name) > NAME_MAX_LENGTH:
        raise UserError(f"the organization's name has {len(name)} characters; give one of at most {NAME_MAX_LENGTH}")
    config = load_config(dict(os.environ))
    key = new_api_key()
    store = Store(config.database)
    try:
        organization_id = store.create_organization(name, hash_api_key(key))
    finally:
        store.close()
    print(key)
    log(f"organization {name} ({organization_id}) created; the key above is shown once: only its hash is stored")
    return 0


def _email_argument(arguments: argparse.Namespace, group: str = "user") -> str:
    email = arguments.email.strip().lower()
    if not re.fullmatch(r"[^@\s]+@[^@\s]+", email):
        raise UserError(f"{email!r} is not an email address: rustiz {group} {getattr(arguments, group + '_command')} "
                        "alice@example.com")
    return email


def command_user_add(arguments: argparse.Namespace) -> int:
    """A web app user: the password is read from standard input (one line) or asked for twice."""
    email = _email_argument(arguments)
    from rustiz_features.web import hash_password
    password_hash = hash_password(_new_password())
    with _organization_opened(arguments.org) as (_, store, organization):
        try:
            web_user_store.add_web_user(store, organization["id"], email, password_hash)
        except sqlite3.IntegrityError:
            raise UserError(f"{email} already has a web app password") from None
    log(f"{email} can now sign in to the web app of organization {organization['name']}")
    return 0


def command_user_password(arguments: argparse.Namespace) -> int:
    """A new password for a web app user, read as `user add` reads it; the user's sessions end."""
    email = _email_argument(arguments)
    from rustiz_features.web import hash_password
    password_hash = hash_password(_new_password())
    with _organization_opened(arguments.org) as (_, store, organization):
        if not web_user_store.set_web_user_password(store, organization["id"], email, password_hash):
            raise _no_such_web_user(email, organization)
    log(f"{email} has a new web app password; the browsers signed in with the old one are signed out")
    return 0


def command_user_remove(arguments: argparse.Namespace) -> int:
    email = _email_argument(arguments)
    with _organization_opened(arguments.org) as (_, store, organization):
        if not web_user_store.remove_web_user(store, organization["id"], email):
            raise _no_such_web_user(email, organization)
    log(f"{email} can no longer sign in to the web app of organization {organization['name']}; "
        "its browsers are signed out")
    return 0


# --- members of an organization, and invites (issue 25) ---------------------------------------------------------

def _member_of(store: Store, organization: dict, email: str) -> dict:
    found = member_store.member_by_email(store, organization["id"], email)
    if found is None:
        raise UserError(f"{email} is not a member of organization {organization['name']} ({organization['id']}); "
                        "`rustiz member list` shows who is, `rustiz member invite` invites")
    return found


def command_member_invite(arguments: argparse.Namespace) -> int:
    """An invite by email with a role: its link (single use, 7 days) printed."""
    from rustiz_features.team import invite_member
    with _organization_opened(arguments.org, "cannot invite: ") as (config, store, organization):
        invite = invite_member(store, config, organization["id"], {"email": arguments.email, "role": arguments.role},
                               None)
    print(invite["inviteUrl"])
    if not config.frontend_url:
        log("FRONTEND_URL is not set, so the link above names rustiz's own address: set FRONTEND_URL in "
            f"{config.config_path} to the address people open rustiz at")
    log(f"{arguments.email.strip().lower()} is invited to organization {organization['name']} as {arguments.role}; "
        f"the link above works once, until {invite['expiresAt']}")
    return 0


def command_member_list(arguments: argparse.Namespace) -> int:
    with _organization_opened(arguments.org) as (_, store, organization):
        members, invites = member_store.members(store, organization["id"]), member_store.invites(store, organization["id"])
    print("EMAIL\tNAME\tROLE\tSTATE\tID")
    for member in members:
        print(f"{member['email']}\t{member['name'] or '-'}\t{member['role']}\tmember since {member['createdAt']}\t"
              f"{member['id']}")
    for invite in invites:
        print(f"{invite['email']}\t-\t{invite['role']}\tinvited, link until {invite['expiresAt']}\t{invite['id']}")
    return 0


def command_member_role(arguments: argparse.Namespace) -> int:
    from rustiz_features.team import change_role
    email = _email_argument(arguments, "member")
    with _organization_opened(arguments.org, "cannot change the role: ") as (_, store, organization):
        change_role(store, organization["id"], _member_of(store, organization, email)["id"], arguments.role)
    log(f"{email} is now {arguments.role} in organization {organization['name']}")
    return 0


def command_member_remove(arguments: argparse.Namespace) -> int:
    from rustiz_features.team import remove_member
    email = _email_argument(arguments, "member")
    with _organization_opened(arguments.org, "cannot remove: ") as (_, store, organization):
        remove_member(store, organization["id"], _member_of(store, organization, email)["id"])
    log(f"{email} is no longer a member of organization {organization['name']}; their browsers signed in to it "
        "are signed out")
    return 0


@contextlib.contextmanager
def _organization_opened(organization_id: Optional[str], refused: str = "",
                         config: Optional[Config] = None) -> Iterator[tuple]:
    """(config, store, the organization --org names: see _chosen_organization) for the block, the Store closed
    after it; an API refusal in the block becomes a UserError, its text after `refused`."""
    config = config or load_config(dict(os.environ))
    store = Store(config.database)
    try:
        yield config, store, _chosen_organization(config, store, organization_id)
    except ApiError as refusal:
        raise UserError(refused + _refusal_text(refusal)) from None
    finally:
        store.close()


def _no_such_web_user(email: str, organization: dict) -> UserError:
    return UserError(f"{email} is not a web app user of organization {organization['name']} "
                     f"({organization['id']}); `rustiz user add {email}` makes one, --org ORG_ID chooses "
                     "another organization")


def _new_password() -> str:
    if sys.stdin.isatty():
        import getpass
        password = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != password:
            raise UserError("the two passwords differ; nothing was saved")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if len(password) < 10:
        raise UserError("the password needs at least 10 characters; nothing was saved")
    return password


def command_org_list(arguments: argparse.Namespace) -> int:
    config = load_config(dict(os.environ))
    store = Store(config.database)
    try:
        organizations = organization_store.organization_summaries(store)
    finally:
        store.close()
    print("ID\tNAME\tCHANNELS")
    for organization in organizations:
        print(f"{organization['id']}\t{organization['name']}\t{organization['channels']}")
    return 0


def _chosen_organization(config: Config, store: Store, organization_id: Optional[str]) -> dict:
    """The organization --org names, else the one whose key is in the config, else the only one."""
    organizations = store.organizations()
    if organization_id is not None:
        for organization in organizations:
            if organization["id"] == organization_id:
                return organization
        raise UserError(f"no organization has the id {organization_id}; `rustiz org list` shows the ids")
    current = hash_api_key(config.api_key) if config.api_key else None
    for organization in organizations:
        if organization["api_key_hash"] == current:
            return organization
    if len(organizations) == 1:
        return organizations[0]
    raise UserError(f"the database has {len(organizations)} organizations and RUSTIZ_API_KEY in "
                    f"{config.config_path} matches none of them: choose one with --org ORG_ID "
                    "(`rustiz org list` shows the ids)")


def _refusal_text(refused: ApiError) -> str:
    """What an API refusal says, as one line for the terminal."""
    message = refused.body.get("message", refused.body) if isinstance(refused.body, dict) else refused.body
    return "; ".join(message) if isinstance(message, list) else str(message)


def command_org_timezone(arguments: argparse.Namespace) -> int:
    with _organization_opened(arguments.org) as (_, store, organization):
        from rustiz_features.api_channels import validate_organization_changes
        changes = validate_organization_changes({"timezone": arguments.zone})
        organization_store.update_organization(store, organization["id"], **changes)
    print(f"organization {organization['name']} ({organization['id']}) now uses the timezone {changes['timezone']}")
    return 0


def command_org_alerts(arguments: argparse.Namespace) -> int:
    """Name the organization's alert channel and late threshold (the same checks as PUT /public/v1/alerts)."""
    with _organization_opened(arguments.org) as (config, store, organization):
        from rustiz_features.alerts import alert_settings_view, validate_alert_settings
        body: dict = {}
        if arguments.channel is not None:
            body["channel"] = None if arguments.channel == "off" else arguments.channel
        minutes = arguments.late_minutes
        if minutes is not None:  # (a number is checked by validate_alert_settings, which names the field)
            whole = minutes.isascii() and minutes.isdigit()
            body["lateMinutes"] = None if minutes == "default" else int(minutes) if whole else minutes
        channel_id, late_minutes = validate_alert_settings(store, organization["id"], body)
        alert_store.set_alert_settings(store, organization["id"], channel_id, late_minutes)
        view = alert_settings_view(config, store, organization["id"])
    own_minutes = view["lateMinutes"] is not None
    print(f"organization {organization['name']} ({organization['id']}): alerts go to "
          f"{'channel ' + view['channel'] if view['channel'] else 'no channel (off)'}; a post counts as late "
          f"{view['lateMinutes'] if own_minutes else view['defaultLateMinutes']} minutes after its date"
          f"{'' if own_minutes else ' (the default, RUSTIZ_ALERT_LATE_MINUTES)'}")
    return 0


def credentials_from_arguments(provider: str, pairs: list) -> dict:
    """`--credential KEY=VALUE` pairs as a credentials object. A list (nostr's relays) takes its items
    comma-separated or from the key repeated."""
    from rustiz_features.catalogue import CREDENTIAL_SPECS
    spec = CREDENTIAL_SPECS.get(provider)
    list_keys = {key.name for key in spec.keys if key.input == "list"} if spec else set()
    credentials: dict = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or not name:  # the value is not echoed: it may be a secret
            raise UserError("each --credential needs the form KEY=VALUE, e.g. --credential webhookUrl=https://...")
        if name in list_keys:
            credentials.setdefault(name, []).extend(item.strip() for item in value.split(",") if item.strip())
        else:
            credentials[name] = value
    return credentials


def command_channel_add(arguments: argparse.Namespace) -> int:
    body = {"provider": arguments.provider, "name": arguments.name, "customer": arguments.customer,
            "credentials": credentials_from_arguments(arguments.provider, arguments.credential)}
    with _organization_opened(arguments.org, f"cannot add the {arguments.provider} channel: ") as (
            config, store, organization):
        from rustiz_features.api_channels import connect_channel
        from rustiz_features.http_client import HttpClient
        http = HttpClient(config.fetch_allow)
        try:
            channel = asyncio.run(connect_channel(store, organization["id"], body, http))
        finally:
            http.close()
    print(channel["id"])
    done = ("reconnected: it has the new credentials, and the posts that waited for it go out now"
            if channel.get("reconnected") else f"added to organization {organization['name']}")
    log(f"channel {channel['name']} ({channel['identifier']}) {done}")
    return 0


def command_channel_list(arguments: argparse.Namespace) -> int:
    with _organization_opened(arguments.org) as (_, store, organization):
        channels = store.integrations(organization["id"])
    print("ID\tPROVIDER\tNAME\tPROFILE\tGROUP\tDISABLED")
    for channel in channels:
        group = channel["customer"]["name"] if "customer" in channel else "-"
        print(f"{channel['id']}\t{channel['identifier']}\t{channel['name']}\t{channel['profile'] or '-'}\t"
              f"{group}\t{'yes' if channel['disabled'] else 'no'}")
    return 0


def _posts_files(store: Store, config: Config) -> Any:
    """The export/import code the API uses (rustiz_features.posts_files), on this process's Store."""
    from types import SimpleNamespace
    from rustiz_features.posts_files import PostsFiles
    return PostsFiles(SimpleNamespace(store=store, config=config))


def command_posts_export(arguments: argparse.Namespace) -> int:
    with _organization_opened(arguments.org, "cannot export: ") as (config, store, organization):
        from rustiz_features.posts_files import export_window
        files = _posts_files(store, config)
        bodies = files.exported_bodies(organization["id"], *export_window(arguments.start, arguments.end,
                                                                          ("--from", "--to")))
        content, _ = files.encoded(bodies, arguments.format)
    sys.stdout.buffer.write(content + (b"\n" if arguments.format == "json" else b""))
    sys.stdout.flush()
    log(f"exported {len(bodies)} posts of organization {organization['name']}")
    return 0


def _json_file(name: str, data: bytes) -> Any:
    try:
        return json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise UserError(f"{name} is not a JSON file: {error}") from None


def command_posts_import(arguments: argparse.Namespace) -> int:
    config = load_config(dict(os.environ))
    try:
        with open(arguments.file, "rb") as file:
            data = file.read(config.max_body_bytes + 1)
    except OSError as error:
        raise UserError(f"cannot read {arguments.file}: {error.strerror}") from None
    if len(data) > config.max_body_bytes:
        raise UserError(f"{arguments.file} is larger than RUSTIZ_MAX_BODY ({config.max_body_bytes} bytes), the "
                        "limit of an import; split it into several files")
    is_csv = arguments.file.lower().endswith(".csv") or not data.lstrip()[:1] in (b"[", b"{")
    with _organization_opened(arguments.org, f"cannot import {arguments.file}: ", config) as (_, store, organization):
        files = _posts_files(store, config)
        rows = files.csv_rows(organization["id"], data) if is_csv else files.json_rows(_json_file(arguments.file, data))
        report = files.import_rows(organization["id"], rows, arguments.dry_run, arguments.allow_duplicate, "CLI")
    for row in report["rows"]:
        if row["ok"]:
            print(f"row {row['row']}: ok" + "".join(f" {post['postId']}" for post in row.get("posts", ())))
        else:
            print(f"row {row['row']}: failed: {' / '.join(row['errors'])}", file=sys.stderr)
    if not report["ok"]:
        raise UserError("some rows failed (above); nothing was imported" if not arguments.dry_run
                        else "some rows would fail (above)", exit_code=1)
    log(f"{'checked' if arguments.dry_run else 'imported'} {len(report['rows'])} rows into organization "
        f"{organization['name']}" + (" (dry run: nothing stored)" if arguments.dry_run else ""))
    return 0


def command_db_copy(arguments: argparse.Namespace) -> int:
    from rustiz_features.db_copy import copy_database
    return copy_database(load_config(dict(os.environ)), arguments.to, arguments.uploads_to)


def command_backup(arguments: argparse.Namespace) -> int:
    from rustiz_features.ops import backup
    return backup(load_config(dict(os.environ)), arguments.file)


def command_restore(arguments: argparse.Namespace) -> int:
    from rustiz_features.ops import restore
    return restore(arguments.file, arguments.dir, arguments.keep_settings)


def command_doctor(arguments: argparse.Namespace) -> int:
    from rustiz_features.ops import doctor
    return doctor(load_config(dict(os.environ)))


def command_example(arguments: argparse.Namespace) -> int:
    from rustiz_features.ops import print_example
    return print_example(load_config(dict(os.environ)), arguments.kind)


# --- the table -----------------------------------------------------------------------------------------------

class Command(NamedTuple):
    """One command: its words (`("key", "add")`, or one word), its function, its help line, its description
    (`{providers}` stands for the providers `channel add` connects) and its arguments (see argument())."""
    words: tuple
    run: Callable[[argparse.Namespace], int]
    help: str
    description: str
    arguments: tuple = ()


def argument(*flags: str, **options: Any) -> tuple:
    """One argument of a command, as argparse's add_argument takes it."""
    return flags, options


ORG = argument("--org", metavar="ORG_ID", help="which organization (default: the config's key's)")
EMAIL = argument("email", metavar="EMAIL")

GROUPS = {  # words that group commands: (help line, description)
    "key": ("manage API keys", "Manage the organization's API keys: its own key (full) and named keys with a "
                               "scope: full, drafts or read."),
    "org": ("manage organizations", "One rustiz serves several organizations; each API key sees only its own "
                                    "organization's channels, posts, media and groups."),
    "channel": ("add and list channels", "Channels (Postiz's integrations) of an organization."),
    "user": ("web app users", "People who sign in to the web app with an email and a password (the "
                              "organization's API key signs in too)."),
    "member": ("members of an organization and their roles", "People who are members of the organization, each "
                                                              "with a role: admin, editor, author or viewer."),
    "db": ("move the database", "Move this instance's data to another database."),
    "posts": ("export and import posts as files", "Posts as JSON or CSV files, on the database directly (no "
                                                  "server needed), checked as POST /public/v1/posts checks them."),
}

COMMANDS = (
    Command(("key", "rotate"), command_key_rotate, "make a new API key; the old one stops working at once",
            "Make a new own key for the organization and print it; the config file gets it when it held the old "
            "one. The old key and the web sessions signed in with it stop working at once, in running servers "
            "too.", (ORG,)),
    Command(("key", "add"), command_key_add, "make a named key with a scope",
            "Make a named API key and print it (once: only its hash is stored). Scopes: full (everything), drafts "
            "(read, upload, and make or edit drafts, which wait for a person's review), read (GET only).",
            (argument("--name", required=True, help="the key's name, unique in the organization, e.g. agent"),
             argument("--scope", required=True, choices=SCOPES, help="what the key may do"), ORG)),
    Command(("key", "list"), command_key_list, "list the keys (never the keys)",
            "Print one tab-separated line per key: name, scope, created, last use (written at most once a "
            "minute), id. The organization's own key is named default.", (ORG,)),
    Command(("key", "revoke"), command_key_revoke, "revoke a named key",
            "Revoke a named key: it and the web sessions signed in with it stop working at once, in running "
            "servers too.", (argument("key", metavar="NAME_OR_ID"), ORG)),
    Command(("org", "add"), command_org_add, "create an organization and print its API key",
            "Create an organization and print its new API key (once: only a hash of it is stored).",
            (argument("name", metavar="NAME", help="the organization's name"),)),
    Command(("org", "list"), command_org_list, "list organizations: id, name, number of channels",
            "Print one tab-separated line per organization: id, name, number of channels."),
    Command(("org", "timezone"), command_org_timezone, "set the organization's IANA timezone",
            "Set the organization's timezone (an IANA name such as Europe/Paris); posting slots (find-slot) are "
            "local times in it. Dates in the API stay UTC.",
            (argument("zone", metavar="ZONE", help="an IANA timezone name, e.g. America/New_York"), ORG)),
    Command(("org", "alerts"), command_org_alerts, "name the channel trouble is announced on",
            "Name the channel (any connected one: a Telegram bot, a Discord or Slack webhook, a webhook) on which "
            "failed posts, channels that need reconnecting and late posts are announced, once each; and after how "
            "many minutes a queued post counts as late. Without options: show them.",
            (argument("--channel", metavar="ID", help="a channel id (`rustiz channel list`), or off"),
             argument("--late-minutes", metavar="N", help="minutes after its date a queued post counts as late "
                                                          "(1-10080), or default (RUSTIZ_ALERT_LATE_MINUTES)"),
             ORG)),
    Command(("channel", "add"), command_channel_add, "connect a channel with its credentials, print its id",
            "Connect a channel that needs no developer app ({providers}) with its credentials, as POST "
            "/public/v1/integrations does, and print the new channel's id. An account that is already a channel "
            "reconnects that channel: it keeps its id and posts and gets the new credentials. Example: rustiz "
            "channel add bluesky --credential service=https://bsky.social --credential identifier=me.bsky.social "
            "--credential password=APP-PASSWORD",
            (argument("provider", metavar="PROVIDER", help="one of: {providers}"),
             argument("--credential", action="append", default=[], metavar="KEY=VALUE",
                      help="one credential key (repeat for each; nostr relays: comma-separated)"),
             argument("--name", help="the channel's name (default: from the credentials, e.g. the handle)"),
             argument("--customer", metavar="GROUP", help="a group's id or name (a new name makes a new group)"),
             ORG)),
    Command(("channel", "list"), command_channel_list, "list channels",
            "Print one tab-separated line per channel: id, provider, name, profile, group, disabled.", (ORG,)),
    Command(("user", "add"), command_user_add, "let an email sign in to the web app with a password",
            "Let EMAIL sign in to the web app of the organization with a password, read from standard input (one "
            "line) or asked for twice on a terminal. At least 10 characters.", (EMAIL, ORG)),
    Command(("user", "password"), command_user_password, "set a web app user's new password; their sessions end",
            "Give EMAIL a new password, read as `user add` reads it. The browsers signed in with the old password "
            "are signed out, in running servers too.", (EMAIL, ORG)),
    Command(("user", "remove"), command_user_remove, "stop an email from signing in; their sessions end",
            "EMAIL can no longer sign in to the web app; the browsers signed in as EMAIL are signed out, in "
            "running servers too.", (EMAIL, ORG)),
    # Members and invites (issue 25).
    Command(("member", "invite"), command_member_invite, "invite an email with a role; print the invite link",
            "Invite EMAIL to the organization with a role and print the invite link (it works once, for 7 days; "
            "only a hash of it is stored). Whoever opens it chooses a name and a password, or gives the password of "
            "their account, and is signed in as a member. Also e-mailed when mail is configured.",
            (EMAIL, argument("--role", required=True, choices=member_store.ROLES, help="what the person may do"),
             ORG)),
    Command(("member", "list"), command_member_list, "list members and pending invites",
            "Print one tab-separated line per member (email, name, role, since when, id), then per pending invite.",
            (ORG,)),
    Command(("member", "role"), command_member_role, "give a member another role",
            "Give the member EMAIL the role ROLE. The organization's last admin stays an admin.",
            (EMAIL, argument("role", metavar="ROLE", choices=member_store.ROLES, help="admin, editor, author or viewer"),
             ORG)),
    Command(("member", "remove"), command_member_remove, "remove a member; their sessions in it end",
            "EMAIL is no longer a member of the organization; their browsers signed in to it are signed out, in "
            "running servers too. Their account stays (other organizations). The last admin stays.", (EMAIL, ORG)),
    Command(("db", "copy"), command_db_copy, "copy everything into an empty database (and bucket)",
            "Copy every row of this instance's database (RUSTIZ_DATABASE) into TARGET, a PostgreSQL URL (or a "
            "SQLite file), and with --uploads-to its uploads into an S3-compatible bucket; then check row counts "
            "and file hashes. Refuses a target that already holds data. Stop the servers first: what they write "
            "meanwhile would not be copied.",
            (argument("--to", required=True, metavar="TARGET", help="postgresql://user:password@host:port/db"),
             argument("--uploads-to", metavar="s3://BUCKET/PREFIX",
                      help="also copy the uploads folder into this bucket (keys and endpoint from AWS_* "
                           "variables)"))),
    Command(("backup",), command_backup, "write the database, config and uploads into one archive",
            "Write FILE (a .tar.gz, mode 0600): a consistent copy of the database taken while servers keep "
            "serving (on PostgreSQL, a SQLite snapshot read in one transaction), config.env, the uploads folder "
            "(not uploads in a bucket), and manifest.json with each file's size and SHA-256.",
            (argument("file", metavar="FILE", help="the archive to write (refused if it exists)"),)),
    Command(("restore",), command_restore, "unpack a backup into a new data folder",
            "Check every file of FILE against its manifest (nothing is written when one differs), then write "
            "config.env, the database and the uploads into DIR, which must be empty or absent; "
            "RUSTIZ_CONFIG=DIR/config.env rustiz serve then serves them.",
            (argument("file", metavar="FILE", help="an archive written by rustiz backup"),
             argument("--dir", required=True, metavar="DIR", help="the new data folder (empty or absent)"),
             argument("--keep-settings", action="store_true",
                      help="keep the backed-up machine's RUSTIZ_FETCH_ALLOW, HOST, RUSTIZ_TRUSTED_PROXIES, proxy "
                           "and bucket settings (default: commented out, and named)"))),
    Command(("doctor",), command_doctor, "check the config, database, scheduler, clock and channels",
            "Check file permissions, the database's integrity, the scheduler's heartbeat, the clock, that "
            "FRONTEND_URL answers, and each channel's credentials with read-only calls to its platform. One line "
            "per check: ok, warn or FAIL with what to do; exit status 1 on a FAIL."),
    Command(("example",), command_example, "print a systemd unit or a reverse-proxy config",
            "Print a systemd unit, or a Caddy or nginx site in front of rustiz, filled in with this config's paths "
            "and port.", (argument("kind", choices=("systemd", "caddy", "nginx"), help="what to print"),)),
    Command(("posts", "export"), command_posts_export, "print the posts of a date window as JSON or CSV",
            "Print the posts whose date is in the window, as GET /public/v1/posts/export does: JSON (a list of "
            "CreatePost bodies, importable again) or CSV.",
            (argument("--format", choices=("json", "csv"), default="json", help="the file's format (default json)"),
             argument("--from", dest="start", default="0001-01-01", metavar="DATE",
                      help="ISO 8601 date or instant (default: the beginning)"),
             argument("--to", dest="end", default="9999-12-31T23:59:59Z", metavar="DATE",
                      help="ISO 8601 date or instant, inclusive (default: the end of time)"), ORG)),
    Command(("posts", "import"), command_posts_import, "check and store posts from a JSON or CSV file",
            "Check every row of FILE (.csv is CSV, else JSON) as POST /public/v1/posts/import does, and store them "
            "all, or nothing when a row fails (its errors are printed, the exit status is 1).",
            (argument("file", metavar="FILE"),
             argument("--dry-run", action="store_true", help="check every row, store nothing"),
             argument("--allow-duplicate", action="store_true",
                      help="no row is refused for repeating a post of the same channel within 24 hours"), ORG)),
)


def add_commands(commands: Any, formatter: Callable[[str], Any], argv: list) -> None:
    """Add every command of COMMANDS, in its order, to `commands` (the core's argparse subparsers)."""
    providers = ""
    if "channel" in argv:  # only `rustiz channel ...` shows them, and naming them loads the catalogue
        from rustiz_features.catalogue import CREDENTIAL_SPECS
        providers = ", ".join(sorted(CREDENTIAL_SPECS))
    groups: dict = {}
    for command in COMMANDS:
        parent = commands
        if len(command.words) == 2:
            group = command.words[0]
            if group not in groups:
                help_text, description = GROUPS[group]
                names = ",".join(other.words[1] for other in COMMANDS if other.words[0] == group)
                parser = commands.add_parser(group, formatter_class=formatter, help=help_text,
                                             description=description)
                groups[group] = parser.add_subparsers(dest=f"{group}_command", metavar=f"{{{names}}}", required=True)
            parent = groups[group]
        parser = parent.add_parser(command.words[-1], formatter_class=formatter, help=command.help,
                                   description=command.description.replace("{providers}", providers))
        for flags, options in command.arguments:
            if "help" in options:
                options = {**options, "help": options["help"].replace("{providers}", providers)}
            parser.add_argument(*flags, **options)
        parser.set_defaults(run=command.run)
