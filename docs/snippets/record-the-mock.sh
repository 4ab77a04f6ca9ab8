python -m mockserver record --base-url http://localhost:8080 --token mock-write-token \
    --workspace ws_alpine --out my-workspace --scrub-key try-it --rate 0 --quiet --differential
grep finding my-workspace/reports/drift.md
