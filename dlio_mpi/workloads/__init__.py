"""Shipped workload descriptions (YAML)."""
