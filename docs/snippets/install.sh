pip install /path/to/workspace-api-mock pytest                 # a clone (git clone ... /path/to/workspace-api-mock)
pip install "/path/to/workspace-api-mock[robust,redis]"        # with extras (the table below)
pip wheel --no-deps -w dist /path/to/workspace-api-mock        # a wheel to keep, copy or vendor ...
pip install dist/workspace_api_mock-0.1.0-py3-none-any.whl     # ... installed anywhere
pip install "workspace-api-mock[robust] @ git+https://git.example.com/your-org/workspace-api-mock.git@main"
