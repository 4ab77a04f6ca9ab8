#!/bin/sh
# The image's entrypoint: `python -m mockserver serve` configured by MOCK_API_* variables
# (every serve option; see docs/getting-started/container.md). A directory mounted at /fixtures replaces the
# default dataset unless MOCK_API_FIXTURES names another. exec: the server is PID 1 and gets
# SIGTERM itself (it stops cleanly, exit 0).
set -e
if [ -z "${MOCK_API_FIXTURES:-}" ] && [ -n "$(ls -A /fixtures 2>/dev/null)" ]; then
    export MOCK_API_FIXTURES=/fixtures
fi
exec python3 -m mockserver serve "$@"
