"""What the two uvicorn+starlette peers (bench/peer_app.py on SQLite, bench/peer_pg_app.py on PostgreSQL)
share, so that both do the same work as rustiz: the key's hash, the two queries, the answer's shape."""
import hashlib

from starlette.responses import JSONResponse, PlainTextResponse

# The queries, with the driver's placeholder put in by the peer ("?" for sqlite3, "%s" for psycopg).
ORG_SQL = "SELECT id FROM organization WHERE api_key_hash = {} AND deleted_at IS NULL"
INT_SQL = (
    "SELECT id, name, provider_identifier, picture, disabled, profile, customer_id "
    "FROM integration WHERE organization_id = {} AND deleted_at IS NULL"
)


async def health(request):
    return PlainTextResponse("ok")


def key_digest(request) -> str:
    """The sha256 of the request's key, as rustiz stores it."""
    key = request.headers.get("authorization", "")
    if key.startswith("Bearer "):
        key = key[7:]
    return hashlib.sha256(key.encode()).hexdigest()


def invalid_key() -> JSONResponse:
    return JSONResponse({"msg": "Invalid API key"}, status_code=401)


def listing(rows) -> JSONResponse:
    return JSONResponse([
        {"id": r[0], "name": r[1], "identifier": r[2], "picture": r[3],
         "disabled": bool(r[4]), "profile": r[5], "customer": r[6]}
        for r in rows
    ])
