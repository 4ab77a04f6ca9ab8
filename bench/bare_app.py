"""The baseline: a bare Starlette app on uvicorn serving fixed bytes at one path."""

from __future__ import annotations

import sys
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

BODY = Path(sys.argv[2]).read_bytes()


async def conversations(request: Request) -> Response:
    return Response(BODY, media_type="application/json")


app = Starlette(routes=[Route("/v1/conversations", conversations)])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
                access_log=False)
