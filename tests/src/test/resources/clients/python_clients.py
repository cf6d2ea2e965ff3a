"""Calls a binding through one Python PostgreSQL driver the ways applications do, and prints one JSON line with
what came back, for ClientMatrixIT to check. The connection target comes from the libpq environment (PGHOST, PGPORT,
PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE, PGSSLROOTCERT, ...), which psycopg, psycopg2 and asyncpg all read.

Usage: python3 python_clients.py psycopg|psycopg2|asyncpg <binding> <failing binding>
"""
import asyncio
import json
import sys

client, binding, failing = sys.argv[1:4]
CALL = "CALL BINDING %s('{}')" % binding
FAILING = "CALL BINDING %s('{}')" % failing


def run_psycopg():
    import psycopg
    from psycopg.types.json import Jsonb

    out = {}
    param = "CALL BINDING %s(%%s)" % binding
    with psycopg.connect("", autocommit=True) as conn:
        out["simple"] = conn.execute(CALL).fetchone()[0]  # no parameters: the simple query protocol
        out["parameterized"] = conn.execute(param, ["{}"]).fetchone()[0]
        out["jsonb"] = conn.execute(param, [Jsonb({})]).fetchone()[0]
        out["binary"] = conn.cursor(binary=True).execute(param, ["{}"]).fetchone()[0]
        out["prepared"] = [conn.execute(param, ["{}"], prepare=True).fetchone()[0] for _ in range(3)]
        with conn.pipeline():
            first = conn.execute(param, ["{}"])
            second = conn.execute(param, [Jsonb({})])
        out["pipeline"] = [first.fetchone()[0], second.fetchone()[0]]
        try:
            conn.execute(FAILING)
            out["error"] = None
        except psycopg.Error as e:
            out["error"] = e.sqlstate
        out["afterError"] = conn.execute(CALL).fetchone()[0]
    with psycopg.connect("") as conn:  # not autocommit: BEGIN before the call, COMMIT at the end of the block
        out["transaction"] = conn.execute(param, ["{}"]).fetchone()[0]
    return out


def run_psycopg2():
    import psycopg2

    out = {}
    conn = psycopg2.connect("")
    try:
        cur = conn.cursor()
        cur.execute(CALL)
        out["simple"] = cur.fetchone()[0]
        cur.execute("CALL BINDING %s(%%s)" % binding, ["{}"])  # interpolated by the client, sent in a simple query
        out["parameterized"] = cur.fetchone()[0]
        conn.commit()
        try:
            cur.execute(FAILING)
            out["error"] = None
        except psycopg2.Error as e:
            out["error"] = e.pgcode
            conn.rollback()
        cur.execute(CALL)
        out["afterError"] = cur.fetchone()[0]
        conn.commit()
    finally:
        conn.close()
    return out


async def run_asyncpg():
    import asyncpg

    out = {}
    conn = await asyncpg.connect()
    try:
        out["fetch"] = json.loads((await conn.fetch(CALL))[0]["result"])
        out["parameterized"] = json.loads(await conn.fetchval("CALL BINDING %s($1)" % binding, "{}"))
        statement = await conn.prepare("CALL BINDING %s($1::jsonb)" % binding)
        out["prepared"] = [json.loads(await statement.fetchval("{}")) for _ in range(3)]
        try:
            await conn.fetch(FAILING)
            out["error"] = None
        except asyncpg.PostgresError as e:
            out["error"] = e.sqlstate
        out["afterError"] = json.loads(await conn.fetchval(CALL))
    finally:
        await conn.close()
    pool = await asyncpg.create_pool(min_size=1, max_size=2)
    try:
        out["pool"] = []
        for _ in range(3):  # each release resets the connection (SELECT pg_advisory_unlock_all(); CLOSE ALL; ...)
            async with pool.acquire() as c:
                out["pool"].append(json.loads(await c.fetchval(CALL)))
    finally:
        await asyncio.wait_for(pool.close(), 20)
    return out


if client == "psycopg":
    result = run_psycopg()
elif client == "psycopg2":
    result = run_psycopg2()
elif client == "asyncpg":
    result = asyncio.run(asyncio.wait_for(run_asyncpg(), 90))
else:
    sys.exit("unknown client " + client)
print(json.dumps(result))
