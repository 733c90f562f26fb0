"""uvicorn+starlette peer on PostgreSQL: the same key check and the same two queries as rustiz, on psycopg 3's
async pool (8 connections, what a Python developer would pick). RUSTIZ_DATABASE is the database's URL."""
import contextlib
import hashlib
import os

from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

POOL_SIZE = 8
ORG_SQL = "SELECT id FROM organization WHERE api_key_hash = %s AND deleted_at IS NULL"
INT_SQL = (
    "SELECT id, name, provider_identifier, picture, disabled, profile, customer_id "
    "FROM integration WHERE organization_id = %s AND deleted_at IS NULL"
)
pool = AsyncConnectionPool(os.environ["RUSTIZ_DATABASE"], min_size=POOL_SIZE, max_size=POOL_SIZE, open=False)


@contextlib.asynccontextmanager
async def lifespan(app):
    await pool.open(wait=True)
    yield
    await pool.close()


async def health(request):
    return PlainTextResponse("ok")


async def integrations(request):
    key = request.headers.get("authorization", "")
    if key.startswith("Bearer "):
        key = key[7:]
    digest = hashlib.sha256(key.encode()).hexdigest()
    async with pool.connection() as connection:
        org = await (await connection.execute(ORG_SQL, (digest,))).fetchone()
        if org is None:
            return JSONResponse({"msg": "Invalid API key"}, status_code=401)
        rows = await (await connection.execute(INT_SQL, (org[0],))).fetchall()
    return JSONResponse([
        {"id": r[0], "name": r[1], "identifier": r[2], "picture": r[3],
         "disabled": bool(r[4]), "profile": r[5], "customer": r[6]}
        for r in rows
    ])


app = Starlette(routes=[
    Route("/health", health),
    Route("/public/v1/integrations", integrations),
], lifespan=lifespan)
