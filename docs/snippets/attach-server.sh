python -m mockserver serve --port 8080 --control-token s3cret &
pytest --mock-api-server http://127.0.0.1:8080 --mock-api-control-token s3cret
