docker build -t workspace-api-mock .                        # base: the official python:3.12-slim
docker run --rm -p 8080:8080 -e MOCK_API_CONTROL_TOKEN=choose-one workspace-api-mock
docker run --rm -p 8080:8080 -v "$PWD/my-fixtures:/fixtures:ro" workspace-api-mock   # your dataset
