from wsapi_client import AuthenticatedClient
from wsapi_client.api.conversations import list_conversations

client = AuthenticatedClient(base_url="http://127.0.0.1:8080", token="mock-write-token")
page = list_conversations.sync(client=client, workspace_id="ws_harborview")
# Polling: send back the datetime you parsed; any ISO 8601 form is taken (DECISIONS B17).
newer = list_conversations.sync(client=client, workspace_id="ws_harborview",
                                updated_since=page.data[0].updated_at)
