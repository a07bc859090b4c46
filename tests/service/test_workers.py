"""``engram serve --workers N``: one rate limit for the whole server, whichever process answers, and
connections spread over the workers."""

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
from engram.service.listen import SPREADS
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


def _server_sockets(port: int) -> dict[str, str]:
    """Inode -> TCP state of the sockets on this port's server side ("0A" listening, "01" connected)."""
    states = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                states[fields[9]] = fields[3]
    return states


def _connections_by_worker(server: int, port: int) -> list[int]:
    """How many connections each worker process of ``server`` holds on ``port``, most first."""
    connected = {inode for inode, state in _server_sockets(port).items() if state == "01"}
    counts = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) != server:
                continue
            links = [os.readlink(fd) for fd in Path(f"/proc/{entry}/fd").iterdir()]
        except OSError:
            continue
        held = sum(link.startswith("socket:[") and link[8:-1] in connected for link in links)
        if held:
            counts.append(held)
    return sorted(counts, reverse=True)


def _assert_connections_spread(server: int, port: int) -> None:
    """A client pool's 16 connections, opened at once, reach both workers: on one shared socket
    the worker awake when they came accepted all 16 in most tries, the other idle meanwhile."""
    deadline = time.monotonic() + 90
    while sum(state == "0A" for state in _server_sockets(port).values()) < 2:  # both workers listen
        assert time.monotonic() < deadline, "the second worker did not start"
        time.sleep(0.2)
    request = f"GET /healthz HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode()
    for _ in range(2):  # a round lands on one worker with odds 2 ** -15 when the kernel spreads them
        clients = [socket.create_connection((HOST, port), timeout=10) for _ in range(16)]
        try:
            for client in clients:
                client.sendall(request)
            for client in clients:
                assert client.recv(4096).startswith(b"HTTP/1.1 200")  # accepted, answered, still open
            assert len(_connections_by_worker(server, port)) == 2
        finally:
            for client in clients:
                client.close()


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
        if SPREADS:
            _assert_connections_spread(server.pid, port)
        else:
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


@pytest.mark.skipif(not SPREADS, reason="the kernel spreads connections over sockets sharing a port on Linux only")
def test_each_worker_unpickles_a_socket_of_its_own_on_the_held_port() -> None:
    import pickle

    from engram.service.listen import WorkerSockets, reserve_port

    with reserve_port(HOST, 0) as held:
        port = held.getsockname()[1]
        with pytest.raises(OSError):  # a second server on the port is refused, not given half its connections
            reserve_port(HOST, port)
        handed = WorkerSockets(HOST, port)
        assert handed == []  # the supervisor holds no listening socket
        first, second = pickle.loads(pickle.dumps(handed)), pickle.loads(pickle.dumps(handed))
        try:
            assert first[0].fileno() != second[0].fileno()
            assert first[0].getsockname() == second[0].getsockname() == (HOST, port)
            first[0].listen()
            second[0].listen()
        finally:
            first[0].close()
            second[0].close()


def test_serve_refuses_a_port_in_use(tmp_path: Path) -> None:
    db = tmp_path / "svc.db"
    with Memory(db, embedder=FakeEmbedder(16)) as memory:
        memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
    KeyStore(db).close()
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = "from engram.service.cli import serve_command; serve_command()"
        done = subprocess.run(
            [sys.executable, "-c", code, "--db", str(db), "--host", HOST, "--port", str(port), "--workers", "2",
             "--embedder", "hash-16", "--log-level", "warning"],
            capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert f"cannot listen on {HOST}:{port}" in done.stderr or not SPREADS


@pytest.mark.skipif(not SPREADS, reason="the kernel spreads connections over sockets sharing a port on Linux only")
def test_the_port_is_held_over_a_time_wait_left_by_a_server_without_shared_ports() -> None:
    from engram.service.listen import reserve_port

    with socket.socket() as plain:  # a single-process server, as uvicorn binds it
        plain.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        plain.bind((HOST, 0))
        plain.listen()
        port = plain.getsockname()[1]
        with socket.create_connection((HOST, port)) as client:
            accepted, _ = plain.accept()
            accepted.close()  # the server closes first (a keep-alive timeout): its side waits in TIME_WAIT
            client.recv(1)
    assert "06" in _server_sockets(port).values()  # TIME_WAIT
    with reserve_port(HOST, port) as held:
        assert held.getsockname()[1] == port


@pytest.mark.skipif(not SPREADS, reason="the kernel spreads connections over sockets sharing a port on Linux only")
def test_a_worker_that_cannot_bind_exits_as_failed_to_start() -> None:
    import pickle

    from uvicorn.config import STARTUP_FAILURE

    from engram.service.listen import WorkerSockets

    with socket.socket() as plain:
        plain.bind((HOST, 0))
        plain.listen()
        handed = pickle.dumps(WorkerSockets(HOST, plain.getsockname()[1]))
        with pytest.raises(SystemExit) as exited:  # not restarted twice a second by the supervisor
            pickle.loads(handed)
    assert exited.value.code == STARTUP_FAILURE
