"""The figures of docs/datasets.md, sequences.md and choosing.md (apart from the shared list)."""

from __future__ import annotations

from benchmarks.registry import Figure

FIGURES: list[Figure] = []
