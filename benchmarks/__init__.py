"""Benchmarks of docs/design.md §7 (scripts; never timed tests)."""
