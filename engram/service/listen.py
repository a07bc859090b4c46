"""Where ``engram serve --workers N`` listens: on Linux, each worker on a socket of its own, all on
one port (``SO_REUSEPORT``), so that the kernel spreads new connections over the workers.

Uvicorn's workers otherwise accept on one shared socket, and the worker awake when connections
arrive accepts every one waiting: 16 keep-alive connections opened at once went 16 to one worker in
9 of 12 tries, and the other worker idled while they lasted. A load balancer or an application's
connection pool opens its connections in such bursts and keeps them, so the server served as one
process: ~100 retrievals/s against ~200 on two cores (docs/scaling.md, "Several service workers").
With a socket each, the kernel picks a worker by a hash of each connection's addresses.
"""

from __future__ import annotations

import errno
import logging
import socket
import sys
from typing import Any

from uvicorn.config import STARTUP_FAILURE

__all__ = ["SPREADS", "WorkerSockets", "address", "reserve_port"]

#: Whether this platform spreads connections over sockets sharing a port. BSD and macOS accept
#: ``SO_REUSEPORT`` but hand every connection to one socket; Windows has no such option.
SPREADS = sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _shared(host: str, port: int, *, reuse_address: bool) -> socket.socket:
    sock = socket.socket(_family(host), socket.SOCK_STREAM)
    try:
        if reuse_address:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


class WorkerSockets(list[socket.socket]):
    """The sockets uvicorn's supervisor hands each worker it starts, made in the worker itself.

    The supervisor pickles its sockets into every worker process it starts (and restarts). This
    list pickles as its address alone, and unpickles, in the worker, as a socket of the worker's own
    bound to it, beside the others sharing it. In the supervisor it is empty.
    """

    def __init__(self, host: str, port: int) -> None:
        super().__init__()
        self.host, self.port = host, port

    def __reduce__(self) -> tuple[Any, ...]:
        return _worker_socket, (self.host, self.port)


def _worker_socket(host: str, port: int) -> list[socket.socket]:
    """The socket a worker starting listens on. A worker that cannot bind (the address left the
    host) exits as one that failed to start, so the supervisor stops instead of restarting it twice
    a second for as long as the address is gone."""
    try:
        return [_shared(host, port, reuse_address=True)]
    except OSError as exc:
        logging.getLogger("uvicorn.error").error("a worker cannot listen on %s: %s", address(host, port), exc)
        sys.exit(STARTUP_FAILURE)


def address(host: str, port: int) -> str:
    """``host:port``, an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def reserve_port(host: str, port: int) -> socket.socket:
    """A socket the supervisor holds the port with while its workers listen beside it. It never
    listens itself, so it takes no connections; it keeps the port this server's while a worker
    restarts, and resolves port 0 once, for all of them.

    Raises ``OSError`` (``EADDRINUSE``) when the port is taken, even by another server of this
    user's sharing it too: the two would otherwise split its connections between them.
    """
    with socket.socket(_family(host), socket.SOCK_STREAM) as alone:  # fails on a port another listens on
        alone.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        alone.bind((host, port))
        port = alone.getsockname()[1]
    # Without SO_REUSEADDR: Linux lets two sockets that both have it bind one port while neither
    # listens, so another server's check above would pass while this one holds the port. But then a
    # connection in TIME_WAIT from a server without SO_REUSEPORT (a single-process `engram serve`
    # that closed it first) refuses the bind for a minute; nothing listens there (the check passed).
    try:
        return _shared(host, port, reuse_address=False)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        return _shared(host, port, reuse_address=True)
