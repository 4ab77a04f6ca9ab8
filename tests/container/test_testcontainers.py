"""mockserver.testing.containers.MockApiContainer against the built image: healthy on start,
base URL, the fixtures' tokens, the control client with its token, options as MOCK_API_*,
and a container that cannot start reported with its log."""

from __future__ import annotations

import httpx
import pytest

from mockserver.testing.containers import MockApiContainer

from .conftest import run_label


def _container(image: str, **kwargs) -> MockApiContainer:
    made = MockApiContainer(image, network_mode="host", health_timeout=30, **kwargs)
    return made.with_kwargs(labels={"org.workspace-api-mock.run": run_label()})


def test_started_healthy_with_tokens_and_a_control_client(image) -> None:
    with _container(image, options={"rate_limit": 3}) as mock:
        assert mock.health() == "healthy"
        assert mock.base_url == f"http://127.0.0.1:{mock.port}"
        assert (mock.tokens.write, mock.tokens.read) == ("mock-write-token", "mock-read-token")
        with mock.client() as client:
            for _ in range(3):
                assert client.get("/v1/conversations",
                                  params={"workspace_id": "ws_harborview"}).status_code == 200
            limited = client.get("/v1/conversations", params={"workspace_id": "ws_harborview"})
            assert limited.status_code == 429  # options={"rate_limit": 3} reached the server
        with mock.client(mock.tokens.read) as reader:
            assert reader.post("/v1/tickets/xd_lucas_meyer_hot_tub/resolve",
                               json={}).status_code == 403
        assert httpx.get(f"{mock.base_url}/__mock__/clock").status_code == 403
        with mock.control() as control:
            assert control.post("clock", json={"advance_seconds": 60}).status_code == 200
            assert control.post("rate-limits", json={"per_minute": 0}).status_code == 200
        with mock.client() as client:  # the control call lifted the limit
            assert client.get("/v1/conversations",
                              params={"workspace_id": "ws_harborview"}).status_code == 200


def test_a_container_that_exits_is_reported_with_its_log(image) -> None:
    mock = _container(image, options={"rate_limit": "lots"})
    try:
        with pytest.raises(RuntimeError) as failed:
            mock.start()
        assert "not healthy" in str(failed.value)
        assert "MOCK_API_RATE_LIMIT='lots'" in str(failed.value)
    finally:
        mock.stop()
