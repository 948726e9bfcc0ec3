"""The figures of docs/audit.md that are not in :mod:`benchmarks._published`'s shared list."""

from __future__ import annotations

from benchmarks.registry import Figure

FIGURES: list[Figure] = []
