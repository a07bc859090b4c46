"""A test session's PostgreSQL server is stopped when the session is killed (engram.testing.reaper):
killed, ``atexit`` never runs, and the server had run on, holding its port and shared memory."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.postgres

_STARTS = """
import sys, time
from engram.testing.pgserver import start_postgres
server = start_postgres()
print(server.port, server.root, flush=True)
time.sleep(120)
"""


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="the watchdog looks for its process in /proc")
def test_a_killed_session_leaves_no_server_running() -> None:
    child = subprocess.Popen([sys.executable, "-c", _STARTS], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert child.stdout is not None
    port_text, root = child.stdout.readline().split(" ", 1)
    port, root = int(port_text), root.strip()
    assert _listening(port) and Path(root).is_dir()
    child.send_signal(signal.SIGKILL)  # no atexit, no finally
    child.wait(10)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (_listening(port) or Path(root).exists()):
        time.sleep(0.25)
    assert not _listening(port), "the server outlived the session that started it"
    assert not Path(root).exists()
