"""uvicorn+starlette peer: same key check and same SQLite queries as rustiz (bench/peer_common.py)."""
import os
import sqlite3

from starlette.applications import Starlette
from starlette.routing import Route

import peer_common


def _config(path):
    cfg = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                cfg[k.strip()] = v.strip().strip("'\"")
    return cfg


def _database_path(config_path, cfg):
    """The SQLite file as rustiz finds it: RUSTIZ_DATABASE (the environment's first), relative to the config
    file's folder, never to the working directory (where a relative path would open an empty database)."""
    chosen = os.environ.get("RUSTIZ_DATABASE") or cfg.get("RUSTIZ_DATABASE") or "rustiz.db"
    return os.path.join(os.path.dirname(os.path.abspath(config_path)), chosen)


_config_path = os.environ["RUSTIZ_CONFIG"]
db = sqlite3.connect(_database_path(_config_path, _config(_config_path)), check_same_thread=False)

ORG_SQL, INT_SQL = peer_common.ORG_SQL.format("?"), peer_common.INT_SQL.format("?")


async def integrations(request):
    org = db.execute(ORG_SQL, (peer_common.key_digest(request),)).fetchone()
    if org is None:
        return peer_common.invalid_key()
    return peer_common.listing(db.execute(INT_SQL, (org[0],)).fetchall())


app = Starlette(routes=[
    Route("/health", peer_common.health),
    Route("/public/v1/integrations", integrations),
])
