"""``/docs``: Swagger UI over /openapi.json, its script and style served from the installed
``swagger-ui-bundle-v2`` package (part of the ``service`` extra) rather than a CDN, so the page
works offline and loads no third-party code on the origin whose /ui holds an API key.

The page keeps the service's Content-Security-Policy: its one script of our own (``ui/docs.js``)
starts Swagger UI, so no inline script is needed.
"""

from __future__ import annotations

import importlib
from importlib import resources
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

from engram.errors import NotFound

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
_ASSETS = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css"}
_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Engram API</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/docs.js"></script>
</body>
</html>
"""
_MISSING = "Swagger UI is not installed: pip install 'swagger-ui-bundle-v2' (part of Engram's [service] extra)"


def _bundle() -> Path | None:
    try:
        bundle = importlib.import_module("swagger_ui_bundle")
    except ImportError:
        return None
    return Path(str(bundle.swagger_ui_path))


@router.get("/docs")
def docs_page() -> Response:
    if _bundle() is None:
        raise NotFound(_MISSING)
    return HTMLResponse(_PAGE, headers={"Cache-Control": "no-cache"})


@router.get("/docs/{name}")
def docs_asset(name: str) -> Response:
    if name == "docs.js":
        body = resources.files("engram.service").joinpath("ui", "docs.js").read_bytes()
        return Response(body, media_type="text/javascript", headers={"Cache-Control": "no-cache"})
    media = _ASSETS.get(name)
    folder = _bundle()
    if media is None or folder is None:
        raise NotFound(_MISSING if folder is None else "no such file")
    # The bundle's files change only with the package's version: a day's caching is safe.
    return Response((folder / name).read_bytes(), media_type=media, headers={"Cache-Control": "max-age=86400"})
