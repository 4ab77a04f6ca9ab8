"""Datasets: the store's tables, loading and checking fixtures, the generator.

Tables and fixtures
-------------------

`tables.py` maps each store table to the document schema(s) its records follow, its key field,
its id prefix and its cross-references. Stored records are the API shape plus internal fields
whose names start with `_` (never sent; handlers project with `ctx.shape(record, "Schema")`,
`ctx.page` drops them when it has no render, and the self-check refuses a response carrying one).
All YAML (fixtures, the generator's inputs, both documents) is read by `yamlload.py`.
`fixtures.py` loads `fixtures/<table>.yaml` (or `.json`) and `tokens.yaml`, overlays several
directories, validates every record against the closed schema and every reference, and fails
naming file, record and field. That check (`RecordCheck`) is the only one: `mock_api.add` and
the tests' record factories (`insert_checked`) use it too. The loader runs it a table at a
time (`first_schema_problem`, `first_dangling`: the per-table work once, then one tight loop
per schema or reference field); a test holds it to naming the record and message the
per-record checks (`schema_problem`, `dangling`) name first.
"""
