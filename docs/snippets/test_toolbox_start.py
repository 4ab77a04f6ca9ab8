import unittest

from mockserver.testing.api import MockApi


def test_a_script_or_a_notebook():
    with MockApi.start(clock="2026-11-01T12:00:00Z") as api:
        client = api.client()                                # httpx, in process
        assert client.get("/v1/models").status_code == 200
        print(api.base_url, api.tokens.write)                # or any HTTP client, over loopback
        api.assert_called("listModels", times=1)


class TicketTests(unittest.TestCase):
    @MockApi.start(rate_limit=2)                             # a fresh mock per call
    def test_rate_limited(self, mock_api):
        client = mock_api.client()
        params = {"workspace_id": mock_api.workspaces.primary}
        codes = [client.get("/v1/tickets", params=params).status_code for _ in range(3)]
        self.assertEqual(codes, [200, 200, 429])
