python -m mockserver serve --clock 2026-11-01T12:00:00Z
MOCK_API_CLOCK=real python -m mockserver serve      # the same option from the environment
