# The mock as a container image (docs/getting-started/container.md): `python -m mockserver serve` on
# 0.0.0.0:8080, configured by MOCK_API_* variables (one per serve option), fixtures mountable
# at /fixtures, stopped cleanly by SIGTERM.
# BASE is any image with python3 (3.11+) and its venv module: the official slim image by
# default; scripts/test-image builds one from Debian's packages with mmdebstrap (registries
# out of reach).
ARG BASE=python:3.12-slim

FROM ${BASE} AS build
# Marks this stage's untagged image, so that scripts/test-image can remove it afterwards.
LABEL org.workspace-api-mock.stage=build
WORKDIR /src
# A CA bundle the build should trust to reach the package index (a TLS-inspecting proxy):
# scripts/test-image copies the host's here. Only this stage sees it.
COPY docker/extra-ca/ /tmp/extra-ca/
COPY pyproject.toml hatch_build.py README.md LICENSE ./
COPY mockserver mockserver
COPY spec spec
COPY fixtures fixtures
RUN set -e; \
    if [ -f /tmp/extra-ca/ca.crt ]; then export PIP_CERT=/tmp/extra-ca/ca.crt; fi; \
    export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_DEFAULT_TIMEOUT=120; \
    python3 -m venv /tmp/builder; \
    /tmp/builder/bin/pip install -q build; \
    /tmp/builder/bin/python -m build -q --wheel --outdir /dist .; \
    python3 -m venv /opt/mock; \
    /opt/mock/bin/pip install -q "$(ls /dist/*.whl)[redis]"; \
    /opt/mock/bin/pip uninstall -q -y pip setuptools watchfiles websockets; \
    find /opt/mock -name __pycache__ -prune -exec rm -rf {} +; \
    /opt/mock/bin/python -m compileall -q -j 0 /opt/mock/lib >/dev/null

FROM ${BASE} AS mock
COPY --from=build /opt/mock /opt/mock
COPY docker/entrypoint.sh /usr/local/bin/mock-entrypoint
# Bound to every interface inside the container (publish the port to choose who reaches it);
# the control API then needs MOCK_API_CONTROL_TOKEN and is off without one.
ENV PATH=/opt/mock/bin:$PATH PYTHONUNBUFFERED=1 HOME=/tmp \
    MOCK_API_HOST=0.0.0.0 MOCK_API_PORT=8080
RUN mkdir -p /fixtures
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=3s --start-period=60s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/openapi.json' % os.environ.get('MOCK_API_PORT', '8080'), timeout=2)"]
ENTRYPOINT ["mock-entrypoint"]
