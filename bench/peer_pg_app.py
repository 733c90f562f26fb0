"""uvicorn+starlette peer on PostgreSQL: the same key check and the same two queries as rustiz, on psycopg 3's
async pool (8 connections, what a Python developer would pick); what both peers share is in
bench/peer_common.py. RUSTIZ_DATABASE is the database's URL."""
import contextlib
import os

from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette
from starlette.routing import Route

import peer_common

POOL_SIZE = 8
ORG_SQL, INT_SQL = peer_common.ORG_SQL.format("%s"), peer_common.INT_SQL.format("%s")
pool = AsyncConnectionPool(os.environ["RUSTIZ_DATABASE"], min_size=POOL_SIZE, max_size=POOL_SIZE, open=False)


@contextlib.asynccontextmanager
async def lifespan(app):
    await pool.open(wait=True)
    yield
    await pool.close()


async def integrations(request):
    async with pool.connection() as connection:
        org = await (await connection.execute(ORG_SQL, (peer_common.key_digest(request),))).fetchone()
        if org is None:
            return peer_common.invalid_key()
        rows = await (await connection.execute(INT_SQL, (org[0],))).fetchall()
    return peer_common.listing(rows)


app = Starlette(routes=[
    Route("/health", peer_common.health),
    Route("/public/v1/integrations", integrations),
], lifespan=lifespan)
