"""`python -m mockserver record`: a real workspace recorded into a dataset the mock serves,
scrubbed of personal data by default, with a drift report of what the answers say that the
document does not. See docs/getting-started/record.md."""
