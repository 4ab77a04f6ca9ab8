"""The standalone server: the ASGI wiring (server.py), the control API, docs and
inspector, the CLI, static assets."""
