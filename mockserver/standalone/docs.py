"""Human-facing pages: the interactive reference (/docs), the document as JSON (/openapi.json)
and the live request inspector (/__mock__/inspector).

Everything is served from the package (swagger-ui-dist is vendored under `static/`), so the
pages work offline and in CI without a CDN.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from .control import control_spec

if TYPE_CHECKING:
    from ..engine.app import MockApp

__all__ = ["STATIC_DIR", "Served", "docs_routes"]

STATIC_DIR = Path(__file__).parent / "static"

_DOCS_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{title} — reference</title>
  <link rel="icon" href="{prefix}/__mock__/static/swagger-ui/favicon-32x32.png">
  <link rel="stylesheet" href="{prefix}/__mock__/static/swagger-ui/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{prefix}/__mock__/static/swagger-ui/swagger-ui-bundle.js"></script>
  <script>
    // validatorUrl: null keeps the page offline (no call to the public validator badge).
    window.ui = SwaggerUIBundle({{
      url: "{url}", dom_id: "#swagger-ui", deepLinking: true, validatorUrl: null,
      tryItOutEnabled: false, persistAuthorization: true,
    }});
  </script>
</body>
</html>
"""

_INSPECTOR_PAGE = (STATIC_DIR / "inspector.html")


def _api_servers(prefix: str) -> list[dict[str, Any]]:
    return [{"url": prefix or "/",
             "description": "this mock: relative to where this document was loaded from"}]


def _control_servers(prefix: str) -> list[dict[str, Any]]:
    return [{"url": prefix or "/",
             "description": "this mock: relative to where this document was loaded from"},
            {"url": "/sessions/{session}",
             "description": "One session's state (the per-session operations; not the "
                            "`sessions` ones).",
             "variables": {"session": {"default": prefix.rsplit("/", 1)[-1] or "default"}}}]


class Served:
    """A document as served under a session prefix: its `servers` relative (DECISIONS H13),
    so "Try it out" calls the host and session the page came from and never a hard-coded
    address. The default's bytes are made once; a session's on each request (docs only)."""

    def __init__(self, document: dict[str, Any],
                 servers: Callable[[str], list[dict[str, Any]]]) -> None:
        self._document = document
        self._servers = servers
        self._default = self._encode("")

    def _encode(self, prefix: str) -> bytes:
        return orjson.dumps({**self._document, "servers": self._servers(prefix)}, default=str)

    def under(self, prefix: str) -> bytes:
        return self._encode(prefix) if prefix else self._default


def docs_routes(mock: MockApp) -> list[BaseRoute]:
    title = str(mock.spec.document.get("info", {}).get("title", "API"))
    # Serialised once per prefix it is served under (the default's at start): the document
    # never changes while the server runs; only its servers follow where it is served from.
    served = Served(mock.spec.document, _api_servers)
    control_served = Served(control_spec().document, _control_servers)

    async def openapi_json(request: Request) -> Response:
        return Response(served.under(request.scope.get("mock.prefix", "")),
                        media_type="application/json")

    async def control_openapi_json(request: Request) -> Response:
        return Response(control_served.under(request.scope.get("mock.prefix", "")),
                        media_type="application/json")

    # Under a session's base URL (/sessions/{name}/docs) the pages load from there too.
    async def docs(request: Request) -> Response:
        prefix = request.scope.get("mock.prefix", "")
        return HTMLResponse(_DOCS_PAGE.format(title=title, url=f"{prefix}/openapi.json",
                                              prefix=prefix))

    async def control_docs(request: Request) -> Response:
        prefix = request.scope.get("mock.prefix", "")
        return HTMLResponse(_DOCS_PAGE.format(title="Mock control API", prefix=prefix,
                                              url=f"{prefix}/__mock__/openapi.json"))

    async def favicon(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "swagger-ui" / "favicon-32x32.png")

    async def inspector(request: Request) -> Response:
        return HTMLResponse(_INSPECTOR_PAGE.read_text(encoding="utf-8"))

    return [
        Route("/docs", docs, methods=["GET"]),
        Route("/openapi.json", openapi_json, methods=["GET"]),
        Route("/__mock__/docs", control_docs, methods=["GET"]),
        Route("/__mock__/openapi.json", control_openapi_json, methods=["GET"]),
        Route("/__mock__/inspector", inspector, methods=["GET"]),
        Route("/favicon.ico", favicon, methods=["GET"]),
        Mount("/__mock__/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ]
