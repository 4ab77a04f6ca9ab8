"""`python -m mockserver record`: a real workspace recorded into a dataset the mock serves,
scrubbed of personal data by default, with a drift report of what the answers say that the
document does not. See docs/getting-started/record.md.

Recording a workspace (`mockserver/record/`)
--------------------------------------------

A recording is a walk: a queue of reads (`walk.py`), seeded with each workspace's lists in
`plan.ROOTS` order (parents before what points at them); each record a list returns queues
its detail read (`plan.DETAIL`) and its scoped lists (`plan.CHILDREN`). Each answer is
checked for drift (`drift.py`, the closed response schema as the self-check uses it), each
record scrubbed (`scrub.py`) and projected onto its table's schemas, then merged by key: the
same record met twice (list and detail, a user in two workspaces) is one record. The state
(scrubbed tables, the queue with each list's cursor, digests of the originals replaced) is
saved every 200 reads and on any exception; a read changes it only once its page is merged,
so a resumed walk repeats at most the page in flight. At the end (`run.py`) records the loader
would refuse are dropped, the bounds applied and dangling references dropped (`bound.py`), the
tables written as JSON, the dataset loaded by the fixture loader (a recording that does not
load fails), and every written file searched for the originals the scrubber replaced.
`differential.py` sends the walk's reads to two servers and compares the answers, the
source's scrubbed with the recording's key first.
"""
