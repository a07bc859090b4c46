"""Engram over HTTP: ``create_app`` builds the FastAPI service; ``KeyStore`` manages its API keys.

The names load on first use, so ``engram --help`` and the CLI's key commands do not import FastAPI.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from engram.extras import needs

if TYPE_CHECKING:
    from engram.service.app import create_app
    from engram.service.auth import ApiKey, KeyStore
    from engram.service.deps import ServiceSettings

__all__ = ["ApiKey", "KeyStore", "ServiceSettings", "create_app"]

_HOME = {"create_app": "app", "ApiKey": "auth", "KeyStore": "auth", "ServiceSettings": "deps"}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        with needs(f"engram.service.{name}", "service"):
            return getattr(import_module(f"engram.service.{_HOME[name]}"), name)
    raise AttributeError(f"module 'engram.service' has no attribute {name!r}")
