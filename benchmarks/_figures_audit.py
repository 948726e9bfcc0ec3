"""The figures of docs/audit.md, docs/quickstart.md, docs/privacy.md and README.md's prose, apart from :mod:`benchmarks.published`."""

from __future__ import annotations

from benchmarks.registry import Figure

FIGURES: list[Figure] = []
