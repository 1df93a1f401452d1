"""Benchmarks: the hook against its floor (`make bench`) and the whole stack (`make bench-e2e`)."""
