python -m mockserver record --base-url https://api.example.com --token "$TOKEN" \
    --workspace ws_123 --out my-workspace --scrub-key "$SCRUB_KEY"
python -m mockserver serve --fixtures my-workspace     # or --mock-api-fixtures my-workspace
