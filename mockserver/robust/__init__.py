"""Robustness mode: answers varied within the document (issue 31).

A *variation plan* is a list of independent items, each one way an answer may differ from the
mock's faithful answer and still be valid against the document: a nullable field null, an
array empty, a field the document does not list, a page of one, a documented error status, a
429 with a long `Retry-After`, a slow or dropped answer. `catalogue` reads what the document
allows, `plan` checks, draws and describes items, `runtime` applies a plan to a session, and
`pytest` runs a test's body under hypothesis over drawn plans (`strategies`).
"""
