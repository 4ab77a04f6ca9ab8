"""The document: loading spec/*.yaml. Shared by the mock and the gate."""
