"""uvicorn+starlette peer: same key check and same SQLite queries as rustiz."""
import hashlib
import os
import sqlite3

from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route


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

ORG_SQL = "SELECT id FROM organization WHERE api_key_hash = ? AND deleted_at IS NULL"
INT_SQL = (
    "SELECT id, name, provider_identifier, picture, disabled, profile, customer_id "
    "FROM integration WHERE organization_id = ? AND deleted_at IS NULL"
)


async def health(request):
    return PlainTextResponse("ok")


async def integrations(request):
    key = request.headers.get("authorization", "")
    if key.startswith("Bearer "):
        key = key[7:]
    digest = hashlib.sha256(key.encode()).hexdigest()
    org = db.execute(ORG_SQL, (digest,)).fetchone()
    if org is None:
        return JSONResponse({"msg": "Invalid API key"}, status_code=401)
    rows = db.execute(INT_SQL, (org[0],)).fetchall()
    return JSONResponse([
        {"id": r[0], "name": r[1], "identifier": r[2], "picture": r[3],
         "disabled": bool(r[4]), "profile": r[5], "customer": r[6]}
        for r in rows
    ])


app = Starlette(routes=[
    Route("/health", health),
    Route("/public/v1/integrations", integrations),
])
