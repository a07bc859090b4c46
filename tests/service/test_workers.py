"""``engram serve --workers N``: one rate limit for the whole server, whichever process answers."""

from __future__ import annotations

import gc
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engram.embedders.fake import FakeEmbedder
from engram.memory import Memory
from engram.service.auth import KeyStore
from engram.service.ratelimit import SharedRateLimiter

HOST = "127.0.0.1"


def test_shared_buckets_refill_like_in_process_ones(tmp_path: Path) -> None:
    now = [1000.0]
    first = SharedRateLimiter(str(tmp_path / "rl.db"), rate=2, burst=2, clock=lambda: now[0])
    second = SharedRateLimiter(str(tmp_path / "rl.db"), rate=2, burst=2, clock=lambda: now[0])
    try:
        assert first.acquire("k") == 0 and second.acquire("k") == 0
        assert first.acquire("k") == pytest.approx(0.5)
        assert second.acquire("k") == pytest.approx(0.5)
        now[0] += 0.5
        assert second.acquire("k") == 0
        assert first.acquire("other") == 0  # buckets are per key
        now[0] -= 100  # a clock set back refills nothing (and takes nothing)
        assert first.acquire("k") == pytest.approx(0.5)
        assert SharedRateLimiter(str(tmp_path / "off.db"), rate=0).acquire("k") == 0
    finally:
        first.close()
        second.close()


def test_processes_share_one_bucket(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        from engram.service.ratelimit import SharedRateLimiter
        limiter = SharedRateLimiter({str(tmp_path / "rl.db")!r}, rate=1e-6, burst=7)
        print(sum(limiter.acquire("k") == 0 for _ in range(10)))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outputs]
    assert sum(int(out) for out, _ in outputs) == 7


def test_a_new_limiter_waits_out_another_process_creating_the_file(tmp_path: Path) -> None:
    # SQLite turns a file to WAL only with the file to itself and fails at once, busy timeout or
    # not, while another connection writes: what a worker meets when another creates the file.
    path = str(tmp_path / "rl.db")
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE other (x)")
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.3, lambda: holder.execute("ROLLBACK")).start()
    started = time.monotonic()
    limiter = SharedRateLimiter(path, rate=1, burst=1)
    try:
        assert time.monotonic() - started >= 0.25  # it waited for the lock ...
        assert limiter.acquire("k") == 0  # ... and then works, in WAL mode
        assert limiter._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        limiter.close()
        holder.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def test_serve_with_workers_limits_a_key_once(tmp_path: Path) -> None:
    db = tmp_path / "svc.db"
    with Memory(db, embedder=FakeEmbedder(16)) as memory:
        memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
    keys = KeyStore(db)
    token = keys.create(["u1"], rate=0.001, burst=4)[1]
    keys.close()
    port = _free_port()
    code = "from engram.service.cli import serve_command; serve_command()"
    server = subprocess.Popen(
        [sys.executable, "-c", code, "--db", str(db), "--host", HOST, "--port", str(port), "--workers", "2",
         "--embedder", "hash-16", "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"http://{HOST}:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.2)
        time.sleep(1.0)  # both workers up (healthz answered by the first)
        statuses = []
        for _ in range(20):  # a new connection each: the kernel hands them to either worker
            with httpx.Client(headers={"Authorization": f"Bearer {token}"}) as client:
                statuses.append(client.get(f"{url}/v1/me").status_code)
        assert statuses.count(200) == 4, statuses  # per-process buckets would grant up to 8
        assert set(statuses) == {200, 429}
        # Nagle's algorithm off: with it, each response on a kept-alive connection waited for the
        # client's delayed ACK, 40 ms or more on Linux.
        with httpx.Client(base_url=url) as client:
            times = []
            for _ in range(15):
                started = time.perf_counter()
                assert client.get("/healthz").status_code == 200
                times.append(time.perf_counter() - started)
        assert statistics.median(times) < 0.030, times
    finally:
        server.terminate()
        server.wait(timeout=60)


@pytest.fixture
def restored_collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def test_serve_tunes_the_collector_of_its_own_process_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          restored_collector: None) -> None:
    import uvicorn
    from click.testing import CliRunner

    from engram.cli import cli
    from engram.service.workers import COLLECTOR_THRESHOLDS, build_app

    db = tmp_path / "svc.db"
    with Memory(db, embedder=FakeEmbedder(16)) as memory:
        memory.add("Acme prefers NET30 payment terms", user_id="u1")
    keys = KeyStore(db)
    keys.create(["u1"])
    keys.close()
    gc.set_threshold(700, 10, 10)
    _, close = build_app(str(db), "hash-16", 0.0, 200.0, 1 << 20, limiter_path=None)
    close()
    assert gc.get_threshold() == (700, 10, 10)  # building the app (as a library caller may) leaves it alone
    seen: list[tuple[int, int, int]] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: seen.append(gc.get_threshold()))
    result = CliRunner().invoke(cli, ["serve", "--db", str(db), "--embedder", "hash-16"])
    assert result.exit_code == 0, result.output
    assert seen == [COLLECTOR_THRESHOLDS] and gc.get_freeze_count() > 0
