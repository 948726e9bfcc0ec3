"""The figures of docs/datasets.md, docs/sequences.md and docs/choosing.md kept apart from :mod:`benchmarks.published`."""

from __future__ import annotations

from benchmarks.registry import Figure

FIGURES: list[Figure] = []
