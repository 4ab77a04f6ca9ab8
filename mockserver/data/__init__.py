"""Datasets: the store's tables, loading and checking fixtures, the generator."""
