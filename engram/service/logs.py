"""Structured logs: one JSON object per line, with the request each line belongs to."""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

__all__ = ["JSONFormatter", "configure_logging", "install_record_factory", "request_context"]

#: Set by the service middleware for the duration of a request; lines logged anywhere below it
#: (the pipeline's ``[MEM:RETRIEVE]`` lines included) carry the request's id without being passed it.
request_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "engram_request_context", default=None
)

_STANDARD = frozenset(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        # Fields passed with ``extra=`` (method, path, status, duration_ms...) go in as they are.
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


_installed: list[bool] = []


def install_record_factory() -> None:
    """Stamp the current request's fields on every record as it is made (idempotent).

    At creation rather than at formatting: handlers may format later, elsewhere (queues, test
    capture), when the request's context is gone.
    """
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        context = request_context.get()
        if context:
            for key, value in context.items():
                setattr(record, key, value)
        return record

    logging.setLogRecordFactory(factory)
    _installed.append(True)


def configure_logging(level: str = "info", stream: TextIO | None = None) -> None:
    """Route ``engram`` and ``uvicorn`` loggers to one JSON handler (idempotent)."""
    install_record_factory()
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JSONFormatter())
    for name in ("engram", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False
    # The middleware writes one access line per request with more fields than uvicorn's own.
    logging.getLogger("uvicorn.access").disabled = True
