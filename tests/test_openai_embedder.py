"""The OpenAI-compatible embedder against a small local fake server (never the internet)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import numpy as np
import pytest

from engram.embedders.openai_http import OpenAIHTTPEmbedder
from engram.errors import EmbedderError

SEEN: list[dict[str, Any]] = []


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        SEEN.append({"body": body, "auth": self.headers.get("Authorization")})
        if body["model"] == "broken":
            self.send_response(500)
            self.end_headers()
            return
        data = [{"index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(body["input"])]
        out = json.dumps({"data": list(reversed(data))}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def test_batches_orders_and_normalizes(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_KEY", "sk-test")
    SEEN.clear()
    embedder = OpenAIHTTPEmbedder(base_url=server, model="m", dimensions=3, api_key_env="TEST_KEY", batch_size=2)
    vectors = embedder.embed_batch(["a", "bbb", "cc"])
    assert len(SEEN) == 2 and SEEN[0]["auth"] == "Bearer sk-test"
    assert vectors.shape == (3, 3)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    expected = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
    np.testing.assert_allclose(vectors[0], expected, rtol=1e-6)
    assert vectors[1][0] > vectors[2][0]  # rows kept in input order despite the reversed response
    assert embedder.model_id == "openai-http:m"


def test_server_error_is_typed(server: str) -> None:
    with pytest.raises(EmbedderError):
        OpenAIHTTPEmbedder(base_url=server, model="broken", dimensions=3).embed_batch(["x"])


def test_wrong_dimensions_are_refused(server: str) -> None:
    with pytest.raises(EmbedderError):
        OpenAIHTTPEmbedder(base_url=server, model="m", dimensions=5).embed_batch(["x"])
