"""rustiz's features, beside the core (rustiz.py), each imported the first time it is needed.

The core serves HTTP, stores, authenticates and routes; its route table names the module and handler of
every route, and a module is imported on the first request to one of its routes. Imports go one way:
the core imports none of these at load time, and these import the core and one another as a DAG:

  cli (every command but init, serve, version; main() in the core calls it) -> api_keys, api_channels, alerts,
    posts_files, web, catalogue, http_client, db_copy, ops
  mcp -> mcp_tools -> api_posts, api_channels, media, validation, catalogue, duplicates
  posts_files (export, import, `rustiz posts`) -> api_posts, duplicates, validation
  api_posts -> api_channels, validation, recurrence, catalogue, duplicates
  review (approving and rejecting drafts keys' posts) -> api_posts
  api_keys (named API keys with a scope) -> the core only
  duplicates (the same text twice on a channel within 24 hours) -> text
  api_channels -> catalogue, publishers, http_client, web
  analytics -> connect, publishers, http_client
  connect (OAuth flows, token refresh) -> catalogue, publishers, http_client
  validation -> catalogue, text, publishers
  scheduler -> connect, publishers, media, object_storage, recurrence, http_client, catalogue
  alerts (trouble announced on an alert channel) -> scheduler (its RowSender; the scheduler makes its
    AlertSender when it starts, so imports alerts only then), publishers, text
  openapi -> api_posts, media, validation, catalogue, text
  media -> catalogue, http_client, object_storage
  db_copy (`rustiz db copy`) -> object_storage, http_client
  object_storage (uploads in an S3-compatible bucket: SigV4, multipart) -> http_client
  postgres (the Store's PostgreSQL connections, SQL translation, LISTEN) -> the core only
  storage/<area> (each feature's SQL: channels, oauth, keys, organizations, web_users, media_library,
    operations, ...) -> the core only; the features import the areas whose SQL they run (arrows not drawn)
  publishers (its registry, from the descriptors) -> catalogue
  publishers/<platform> -> publishers/base, publishers/oauth and the other helpers, catalogue, text, http_client
  catalogue (one descriptor per provider) -> text, bech32 (and http_client, when a URL is checked)
  http_client -> metrics (it counts outbound calls)
  ops (`rustiz backup`, `restore`, `doctor`, `example`) -> metrics, publishers, connect, http_client
  metrics (GET /metrics, GET /health?verbose=1, the counters) -> the core only
  web, recurrence, text, bech32 -> the core only

tests/test_layout.py checks this graph has no cycle and that the core imports none of these at load time.
"""
from __future__ import annotations
