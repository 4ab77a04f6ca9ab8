python -m mockserver serve --run-tool-code --tool-code-dir ./tools
