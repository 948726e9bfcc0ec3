"""The benchmark scripts (each runs as ``python benchmarks/NAME.py``) and the report of their published figures."""
