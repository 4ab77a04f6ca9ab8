scripts/serve      # creates .venv and installs when needed, serves the default fixtures on http://127.0.0.1:8080
scripts/test       # creates .venv and installs when needed, runs Spectral, Redocly, ruff, mypy, import-linter and every test (CI runs this)
