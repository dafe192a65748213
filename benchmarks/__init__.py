"""Benchmarks of DESIGN §7 (scripts; never timed tests)."""
