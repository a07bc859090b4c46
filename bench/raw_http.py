"""A lean HTTP/1.1 keep-alive client for load generators: one asyncio stream per client, requests
written as bytes, answers read by Content-Length; no pooling, redirects, cookies or decoding.

The load generator runs on the cores it measures: httpx spent ~2.5-3 ms of CPU a request there
(a sixth of the whole budget at 150 requests/s on 2 cores), this ~0.3 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any
from urllib.parse import urlsplit

__all__ = ["RawClient", "RawHttpError"]


class RawHttpError(Exception):
    """The connection broke or the answer was not HTTP/1.1 this client can read."""


class RawClient:
    """One keep-alive connection; ``post_json`` sends a request and returns (status, body bytes)."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self._head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"{self.host}:{self.port}", **headers}.items())
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def post_json(self, path: str, body: Any) -> tuple[int, bytes]:
        data = json.dumps(body).encode()
        request = (f"POST {path} HTTP/1.1\r\n{self._head}Content-Type: application/json\r\n"
                   f"Content-Length: {len(data)}\r\n\r\n").encode() + data
        try:
            if self._writer is None:
                self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
            assert self._reader is not None
            self._writer.write(request)
            head = await self._reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length, close = 0, False
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"connection" and value.strip().lower() == b"close":
                    close = True
                elif name == b"transfer-encoding":
                    raise ValueError("chunked answers are not read by this client")
            payload = await self._reader.readexactly(length)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            await self.close()
            raise RawHttpError(type(exc).__name__) from exc
        if close:
            await self.close()
        return status, payload

    async def close(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
