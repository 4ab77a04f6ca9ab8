"""Mock server and conformance gate for the Workspace Messaging and Automation API v1."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
