"""Engram over HTTP: ``create_app`` builds the FastAPI service; ``KeyStore`` manages its API keys."""

from engram.service.app import create_app
from engram.service.auth import ApiKey, KeyStore
from engram.service.deps import ServiceSettings

__all__ = ["ApiKey", "KeyStore", "ServiceSettings", "create_app"]
