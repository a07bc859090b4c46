"""Helpers shared by the service tests: an app over a fresh store, and a real server in a thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI

from engram.ext import Embedder
from engram.memory import Memory
from engram.service import KeyStore, ServiceSettings, create_app


@dataclass
class Harness:
    app: FastAPI
    memory: Memory
    keys: KeyStore
    db: Path

    def key(self, *users: str, admin: bool = False, **kw: Any) -> str:
        return self.keys.create(users, admin=admin, **kw)[1]

    def close(self) -> None:
        self.keys.close()
        self.memory.close()


def harness(tmp_path: Path, embedder: Embedder, settings: ServiceSettings | None = None) -> Harness:
    db = tmp_path / "engram.db"
    memory = Memory(db, embedder=embedder)
    keys = KeyStore(db)
    return Harness(create_app(memory, keys, settings), memory, keys, db)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running(app: FastAPI) -> Iterator[str]:
    """``app`` served by uvicorn on a free loopback port for the duration of the block."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
