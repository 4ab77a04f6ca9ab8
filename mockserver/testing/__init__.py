"""The test integration: the pytest plugin (`mockserver.pytest_plugin` is its public
name) and the in-process httpx transports."""
