# The conformance gate as a container (docs/getting-started/container.md): `python -m mockserver conform`
# as the entrypoint, run against a team's server:
#   docker build -f docker/gate.Dockerfile -t workspace-api-gate .
#   docker run --rm workspace-api-gate --base-url https://staging.example --token TOKEN
# A file of its own: Docker's classic builder builds every stage before the target, so a gate
# stage in the Dockerfile would cost every build of the mock's image its packages.
ARG BASE=python:3.12-slim

# The mock's build stage, instruction for instruction (keep in step with the Dockerfile: the
# build cache then shares it between the two images).
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

FROM build AS gate-build
RUN set -e; \
    if [ -f /tmp/extra-ca/ca.crt ]; then export PIP_CERT=/tmp/extra-ca/ca.crt; fi; \
    export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_DEFAULT_TIMEOUT=120; \
    python3 -m venv /opt/gate; \
    /opt/gate/bin/pip install -q "$(ls /dist/*.whl)[conform]"; \
    /opt/gate/bin/pip uninstall -q -y pip setuptools; \
    /opt/gate/bin/python -m compileall -q -j 0 /opt/gate/lib >/dev/null

FROM ${BASE} AS gate
COPY --from=gate-build /opt/gate /opt/gate
ENV PATH=/opt/gate/bin:$PATH PYTHONUNBUFFERED=1 HOME=/tmp
USER 10001:10001
ENTRYPOINT ["python3", "-m", "mockserver", "conform"]
