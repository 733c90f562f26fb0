"""rustiz's features, beside the core (rustiz.py), each imported the first time it is needed.

The core serves HTTP, stores, authenticates and routes; its route table names the module and handler of
every route, and a module is imported on the first request to one of its routes. Imports go one way:
the core imports none of these at load time, and these import the core and one another as a DAG:

  cli (every command but init, serve, version; main() in the core calls it) -> api_keys, api_channels, alerts,
    posts_files, web, catalogue, http_client, db_copy, ops, team
  oauth_consent (issue 27: GET /oauth/authorize, the consent page, and its form) -> oauth_server, web, audit
  mcp -> oauth_server (issue 27: rustiz as an OAuth 2.1 authorization server for MCP clients: metadata,
    registration, tokens; token_identity for /mcp; the connected clients' API) -> api_docs, storage
  mcp -> mcp_tools -> api_posts, api_channels, media, media_library, validation, catalogue, duplicates,
    preview_links, autopost
  posts_files (export, import, `rustiz posts`) -> api_posts, duplicates, validation
  api_posts -> api_channels, validation, recurrence, catalogue, duplicates, mail, short_links, platform_delete,
    publishers
  platform_delete (issue 28: DELETE /posts/:id?onPlatform=true on each platform) -> connect, publishers, http_client
  review (approving and rejecting drafts keys' posts) -> api_posts
  preview_links (client review links and comments, the team's API) -> api_posts
  client_review (a review link's page /p/<token> and its form) -> preview_links, review, pictures, web, mail,
    alerts, audit, catalogue, text
  api_keys (named API keys with a scope) -> the core only
  audit (the audit log: entries of changes, GET /audit; App.resolve wraps handlers that declare audit=) -> api_docs;
    mcp_tools and connect -> audit
  duplicates (the same text twice on a channel within 24 hours) -> text
  api_channels -> catalogue, publishers, http_client, web, short_links
  analytics -> analytics_snapshots, publishers, http_client
  analytics_snapshots (snapshots over time, their background sweep, best times) -> alerts, connect, publishers,
    recurrence; scheduler -> analytics_snapshots
  connect (OAuth flows, token refresh) -> catalogue, publishers, http_client
  validation -> catalogue, text, publishers
  scheduler -> alerts, mail, digest, background, connect, publishers, media, object_storage, recurrence,
    http_client, catalogue, short_links
  alerts (trouble announced on an alert channel) -> background, publishers, text
  digest (the daily digest mail) -> mail, alerts, recurrence, text
  mail (the outbox, its SMTP sender, the mails, e-mail preferences) -> alerts, background, api_docs
  background (RowSender, SenderHost: what the scheduler and its senders share) -> the core only
  openapi -> api_posts, media, validation, catalogue, text
  media -> catalogue, http_client, object_storage, picture_size
  media_library (the library's API: listing, names and alt text, deletes) -> media
  db_copy (`rustiz db copy`) -> object_storage, http_client
  object_storage (uploads in an S3-compatible bucket: SigV4, multipart) -> http_client
  postgres (the Store's PostgreSQL connections, SQL translation, LISTEN) -> the core only
  publishers (its registry, from the descriptors) -> catalogue
  publishers/<platform> -> publishers/base, publishers/oauth and the other helpers (secp256k1 -> elliptic), catalogue,
    text, http_client
  publishers/tumblr -> also picture_size (the width and height of an NPF image block)
  publishers/mastodon, publishers/pixelfed, publishers/friendica (issue 28) -> publishers/mastodon_shared
  catalogue (one descriptor per provider) -> text, bech32 (and http_client, when a URL is checked)
  http_client -> metrics (it counts outbound calls)
  ops (`rustiz backup`, `restore`, `doctor`, `example`) -> metrics, publishers, connect, http_client, mail
  metrics (GET /metrics, GET /health?verbose=1, the counters) -> storage only
  storage/<area> (each feature's SQL, one module per area; see storage/__init__.py) -> the core, and among
    themselves: posts -> idempotency, review -> posts, autopost -> posts, notifications, scheduling -> deliveries, audit -> keys, oauth_server. The features import the
    areas whose SQL they run (those arrows are not drawn: no storage module imports a feature module).
  oidc (single sign-on: GET /auth/oidc/start, the callback, GET /auth/methods) -> jwt, web, http_client, audit
  jwt (ID tokens: RS256 and ES256 signatures in pure Python, the claims) -> elliptic
  elliptic (points of secp256k1 and P-256: Nostr's signatures, ES256) -> the standard library only
  web, recurrence, text, bech32 -> the core only
  team (members, invites, accepting them, a forgotten password; `rustiz member`) -> web, mail, audit
  picture_size (a picture's width and height from its header) -> the standard library only
  short_links (issue 26: the preference, links shortened at publish time, /s/<code>, GET /posts/:id/links; called by
    api_posts, api_channels and the scheduler) -> http_client, api_docs
  post_events (issue 26: post.created/updated/deleted/queued for the webhooks subscribed; queue_post_event) -> storage
    only; api_posts, api_channels, api_library and scheduler -> post_events
  api_queue (issue 26: weekly schedules, GET /queue, reorder, queue switches) -> api_posts, api_channels, queue,
    evergreen; queue (weekly slots, re-flow; api_posts and api_channels use it) -> recurrence;
    evergreen (evergreen posts queued again; the scheduler runs its refill) -> queue, duplicates, alerts, background,
    post_events
  autopost (RSS/Atom feeds whose new items become posts: the routes, FeedPoller beside the scheduler) -> feeds,
    api_posts, validation, duplicates, mail, alerts, background, catalogue, text, http_client, api_docs,
    post_events;
    scheduler -> autopost
  feeds (RSS 2.0, RSS 1.0 and Atom read safely: no DTD, no entity) -> the standard library only
  telegram_bot (issue 28: Telegram's operator bot, /connect codes and the one watcher of its updates) -> background,
    catalogue, publishers, storage; scheduler and connect -> telegram_bot

tests/test_layout.py checks this graph has no cycle, counting the imports inside functions too, that the core
imports none of these at load time, and that it imports them later only from the sites it names
(CORE_TO_FEATURE_SITES: the route table's loader, the scheduler's start, the CLI dispatch, the PostgreSQL
engine, and a few named exceptions).
"""
from __future__ import annotations
