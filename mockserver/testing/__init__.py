"""The test integration: the pytest plugin (`mockserver.pytest_plugin` is its public
name), the in-process httpx transports, and the mock without pytest:
`from mockserver.testing.api import MockApi; with MockApi.start() as api: ...`."""
