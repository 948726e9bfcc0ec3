"""The figures of docs/audit.md, quickstart.md, privacy.md and README.md's prose (apart from the shared list)."""

from __future__ import annotations

from benchmarks.registry import Figure

FIGURES: list[Figure] = []
