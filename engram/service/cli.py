"""``engram serve``, ``engram keys`` and ``engram mcp``; ``engram.cli`` loads them when they are invoked."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from typing import Any

import click

from engram.cli.common import DB_HELP, db_target, existing_db
from engram.config import MAX_WARM_USERS
from engram.service.auth import KeyStore

__all__ = ["keys_group", "mcp_command", "serve_command"]

log = logging.getLogger("engram.service")


def _db(db: str | None, *, create: bool) -> str:
    """The store to open; ``create=False`` refuses a SQLite file that does not exist (see
    ``engram.cli.common.existing_db``): opening one would create an empty database."""
    return db_target(db) if create else existing_db(db)


EMBEDDER_HELP = ("minilm (the default), minilm-int8 (MiniLM on integer kernels: half the CPU a query, other "
                 "vectors; needs the int8 extra), multilingual, or hash-N: words hashed into N dimensions, no "
                 "model to load and no meaning, for load tests only (default: $ENGRAM_EMBEDDER, else minilm).")


def _embedder(name: str | None) -> Any:
    from engram.embedders import named_embedder
    from engram.errors import ValidationError

    try:
        return named_embedder(name)
    except ValidationError as exc:
        raise click.BadParameter(str(exc).split(": ", 1)[-1], param_hint="--embedder") from None


@click.command(name="serve", help="Serve the HTTP API (/v1, /openapi.json, /metrics) and the /ui explorer.")
@click.option("--db", default=None, help=DB_HELP)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="TCP port.")
@click.option("--rate", default=100.0, show_default=True, help="Requests a second per key (0: no limit).")
@click.option("--burst", default=200.0, show_default=True, help="Requests a key may make at once.")
@click.option("--max-body-bytes", default=1_048_576, show_default=True, help="Largest request body.")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["debug", "info", "warning", "error"]),
              help="Least severe log line written (JSON lines on stderr).")
@click.option("--embedder", "embedder_name", default=None, envvar="ENGRAM_EMBEDDER", help=EMBEDDER_HELP)
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Server processes sharing the port; each opens the store and loads the embedder itself, "
                   "and they share one rate limit (a SQLite file in a temporary directory).")
@click.option("--retrievals-at-once", type=click.IntRange(0, 1024), default=0, show_default=True,
              envvar="ENGRAM_RETRIEVALS_AT_ONCE",
              help="Retrievals each server process ranks at once, the others waiting their turn with their queries' "
                   "embeddings started (0: no bound). "
                   "On the embedded store with a cheap embedder, 1 or 2 served more a second (docs/scaling.md).")
@click.option("--warm-users", type=click.IntRange(0, MAX_WARM_USERS), default=0, show_default=True,
              envvar="ENGRAM_WARM_USERS",
              help="Before listening, each server process loads the vectors and keyword postings of this many users, "
                   "those with the most memories first, while its caches hold them (embedded store only): their "
                   "first questions then need no load, which at a million memories takes 1-3 s.")
@click.option("--require-session", is_flag=True,
              help="Search only for a /v1/retrieve request that names its sessionId, as the retrieval policy gates "
                   "it; without one the answer is an empty payload (default: search without it too).")
def serve_command(db: str | None, host: str, port: int, rate: float, burst: float, max_body_bytes: int,
                  log_level: str, embedder_name: str | None, workers: int, retrievals_at_once: int,
                  warm_users: int, require_session: bool) -> None:
    import uvicorn

    from engram.service.logs import configure_logging
    from engram.service.workers import WORKER_ENV, build_app, tune_collector

    # A new database has no keys, so a server on one could answer nothing but 401: refuse it.
    target = _db(db, create=False)
    _embedder(embedder_name)  # a bad name fails here, once, not in every worker
    configure_logging(log_level)
    if workers == 1:
        app, close = build_app(target, embedder_name, rate, burst, max_body_bytes, limiter_path=None,
                               retrievals_at_once=retrievals_at_once, warm_users=warm_users,
                               require_session=require_session)
        tune_collector()
        try:
            uvicorn.run(app, host=host, port=port, log_config=None, access_log=False, log_level=log_level)
        finally:
            close()
        return
    # numpy's OpenBLAS would give every worker a thread per core, busy-waiting on a shared machine.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory(prefix="engram-serve-") as shared:
        os.environ[WORKER_ENV] = json.dumps({
            "target": target, "embedder": embedder_name, "rate": rate, "burst": burst,
            "max_body_bytes": max_body_bytes, "limiter_path": os.path.join(shared, "ratelimit.db"),
            "log_level": log_level, "retrievals_at_once": retrievals_at_once, "warm_users": warm_users,
            "require_session": require_session,
        })
        # Uvicorn's workers accept on a socket that asyncio does not set TCP_NODELAY on: every response
        # then waited ~40 ms for the client's delayed ACK (Nagle). The protocol sets it itself.
        config = uvicorn.Config("engram.service.workers:worker_app", factory=True, workers=workers, host=host,
                                port=port, http="engram.service.workers:NoDelayHttp", log_config=None,
                                access_log=False, log_level=log_level)
        _supervise(config)


def _supervise(config: Any) -> None:
    """Run uvicorn's worker processes, each on a socket of its own where the kernel spreads
    connections over them (``engram.service.listen``), else on the one socket uvicorn binds; exit
    as uvicorn does (3) when a worker failed to start."""
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    from engram.service.listen import SPREADS, WorkerSockets, address, reserve_port

    if not SPREADS:
        supervisor = Multiprocess(config, sockets=[config.bind_socket()])
        supervisor.run()
    else:
        try:
            held = reserve_port(config.host, config.port)
        except OSError as exc:
            where = address(config.host, config.port)
            raise click.ClickException(f"cannot listen on {where}: {exc.strerror}") from None
        with held:
            sockets = WorkerSockets(config.host, held.getsockname()[1])
            log.info("starting %d workers on http://%s", config.workers, address(config.host, sockets.port))
            supervisor = Multiprocess(config, sockets=sockets)
            supervisor.run()
    if any(process.exitcode == STARTUP_FAILURE for process in supervisor.processes):
        raise SystemExit(STARTUP_FAILURE)


@click.group(name="keys", help="Create, list and revoke API keys of `engram serve`.")
def keys_group() -> None:
    pass


@keys_group.command(name="create", help="Create a key; its token is the last word printed, shown only once.")
@click.option("--user", "users", multiple=True, help="A user id the key may touch (repeatable).")
@click.option("--tenant", "tenants", multiple=True, help="Every user id starting with TENANT: (repeatable).")
@click.option("--admin", is_flag=True, help="May change AdminMemorySettings; resets the store and reads its "
              "store-wide counts unless --user or --tenant given.")
@click.option("--name", default=None, help="A note to recognise the key by.")
@click.option("--rate", type=float, default=None, help="Requests a second for this key (default: the server's).")
@click.option("--burst", type=float, default=None, help="Burst size for this key (default: the server's).")
@click.option("--db", default=None, help=DB_HELP)
def create_key(users: tuple[str, ...], tenants: tuple[str, ...], admin: bool, name: str | None,
               rate: float | None, burst: float | None, db: str | None) -> None:

    store = KeyStore(_db(db, create=True))
    try:
        key, token = store.create(users, tenants=tenants, admin=admin, name=name, rate=rate, burst=burst)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    finally:
        store.close()
    role = "admin key" if key.admin else "key"
    click.echo(f"created {role} {key.id} for {', '.join(key.scopes)}; store this token now, it is not kept:")
    click.echo(token)


#: The columns of ``engram keys list``, in the order its piped lines give them.
KEY_COLUMNS = ("id", "role", "users", "created_at", "revoked_at", "name")


@keys_group.command(name="list", help=(
    "List keys (never their tokens). At a terminal: a table; piped: one tab-separated line per key "
    f"({', '.join(KEY_COLUMNS)}); role is key or admin, users the key's scopes joined by commas."
))
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked keys.")
@click.option("--db", default=None, help=DB_HELP)
def list_keys(include_revoked: bool, db: str | None) -> None:
    from engram.cli.output import print_table

    store = KeyStore(_db(db, create=False))
    try:
        keys = store.list(include_revoked=include_revoked)
    finally:
        store.close()
    print_table(KEY_COLUMNS, [(key.id, "admin" if key.admin else "key", ",".join(key.scopes), key.created_at,
                               key.revoked_at or "", key.name or "") for key in keys])
    if not keys:  # on stderr: a pipe reading keys gets no line that is not one
        click.echo("no keys" + ("" if include_revoked else " (--all includes revoked ones)"), err=True)


@keys_group.command(name="revoke", help="Revoke a key by its id; it stops working at once.")
@click.argument("key_id")
@click.option("--db", default=None, help=DB_HELP)
def revoke_key(key_id: str, db: str | None) -> None:
    store = KeyStore(_db(db, create=False))
    try:
        revoked = store.revoke(key_id)
    finally:
        store.close()
    if not revoked:
        raise click.ClickException(f"no live key {key_id!r}")
    click.echo(f"revoked {key_id}")


@click.command(name="mcp", help="Serve one user's memory to an MCP client over stdio or streamable HTTP.",
               epilog="""\b
Examples:
  engram mcp --db agent.db --user alice                         # a host spawns it (Claude Desktop, IDEs)
  engram mcp --db agent.db --user alice --transport http --port 8765   # http://127.0.0.1:8765/mcp""")
@click.option("--db", default=None, help=DB_HELP)
@click.option("--user", "user_id", required=True, help="The user whose memory the tools read and write.")
@click.option("--embedder", "embedder_name", default=None, envvar="ENGRAM_EMBEDDER", help=EMBEDDER_HELP)
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio (the host spawns this process) or http (streamable HTTP at /mcp).")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: the address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="HTTP: the port.")
@click.option("--token", default=None, envvar="ENGRAM_MCP_TOKEN",
              help="HTTP: require 'Authorization: Bearer TOKEN' (or $ENGRAM_MCP_TOKEN); needed beyond loopback.")
def mcp_command(db: str | None, user_id: str, embedder_name: str | None, transport: str, host: str, port: int,
                token: str | None) -> None:
    from engram.mcp import is_loopback, serve
    from engram.stores.open import is_url

    if transport == "http" and not token and not is_loopback(host):
        raise click.UsageError(f"--host {host} would serve {user_id}'s memory to anyone who can reach it: "
                               "give --token (or $ENGRAM_MCP_TOKEN), or listen on loopback")
    target = _db(db, create=True)
    if not is_url(target) and target != ":memory:" and not os.path.exists(target):
        # The agent's memory starts empty here; say so (on stderr: stdout is the protocol).
        click.echo(f"engram mcp: no database at {target}; creating a new, empty one", err=True)
    serve(target, user_id, _embedder(embedder_name), transport="http" if transport == "http" else "stdio",
          host=host, port=port, token=token or None)
