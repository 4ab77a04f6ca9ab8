docker build -f docker/gate.Dockerfile -t workspace-api-gate .
docker run --rm workspace-api-gate --base-url https://staging.example --token "$TOKEN" \
    --read-token "$READ_TOKEN" --report junit:/dev/stdout
