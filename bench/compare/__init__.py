"""Helpers of bench/compare.py: datasets, format adapters, measurement."""
