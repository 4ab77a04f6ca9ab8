python -m mockserver serve --run-tool-code          # or MOCK_API_RUN_TOOL_CODE=1
