"""Robustness mode: answers varied within the document, to find what a client cannot handle."""
