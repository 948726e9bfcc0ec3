"""The figures of docs/npgc.md kept apart from the shared list in :mod:`benchmarks.published`."""

from __future__ import annotations

from benchmarks.registry import Figure

FIGURES: list[Figure] = []
