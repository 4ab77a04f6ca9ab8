"""One log line per request (method, path, status, latency, redacted token), text or JSON.

The pipeline calls `log_request` only when `REQUEST_LOGGER` is enabled for INFO (a cached
check), so an unconfigured logger costs nothing. The CLI calls `configure_logging`.
Named `requestlog` rather than `logging` so that it never shadows the standard module.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson

from .auth import redact

__all__ = ["REQUEST_LOGGER", "configure_logging", "log_request", "printable"]

REQUEST_LOGGER = logging.getLogger("mockserver.requests")


def _token(authorization: str | None) -> str:
    if not authorization:
        return "-"
    _, _, token = authorization.partition(" ")
    return redact(token.strip() or authorization)


# Control characters (C0, DEL, C1) as Python escapes, so that a request line cannot write a
# forged log line (`%0a` in a path) or move the terminal's cursor.
_ESCAPES = {c: ascii(chr(c))[1:-1] for c in (*range(0x20), *range(0x7F, 0xA0))}


def printable(text: str) -> str:
    """`text` with its control characters escaped (`\\n`, `\\x1b` ...), for a text log."""
    return text.translate(_ESCAPES)


def log_request(method: str, path: str, status: int, latency_ms: float,
                authorization: str | None, *, fault: str | None = None,
                ignored: tuple[str, ...] = ()) -> None:
    token = _token(authorization)
    REQUEST_LOGGER.info(
        "%s %s %d %.1fms token=%s%s%s", printable(method), printable(path), status, latency_ms, token,
        f" fault={printable(fault)}" if fault else "",
        f" ignored_params={printable(','.join(ignored))}" if ignored else "",
        extra={"request": {"method": method, "path": path, "status": status,
                           "latency_ms": round(latency_ms, 3), "token": token,
                           **({"fault": fault} if fault else {}),
                           **({"ignored_params": list(ignored)} if ignored else {})}},
    )


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and the request's fields."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        request = getattr(record, "request", None)
        if request is not None:
            payload.update(request)
        else:
            payload["message"] = record.getMessage()
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(payload).decode()


def configure_logging(format: str = "text", *, level: int | str = logging.INFO,
                      stream: Any = None) -> logging.Handler:
    """Send the request log (and the proxy's violations) to `stream` (stderr) as text or JSON."""
    if format not in ("text", "json"):
        raise ValueError(f"log format must be text or json, not {format!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    if format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    for name in ("mockserver.requests", "mockserver.proxy", "mockserver.errors"):
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            logger.removeHandler(old)
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False
    return handler
