"""The figures of docs/domain.md kept apart from the shared list in :mod:`benchmarks.published`."""

from __future__ import annotations

from benchmarks.registry import Figure

#: Empty: the two benchmarks docs/domain.md quotes (results/domain_estimate.json, results/partition_selection.json)
#: are stale since the domain estimate changed (kinds as a DP answer), so their figures stand in history spans.
#: Register them here once a rerun makes the files fresh.
FIGURES: list[Figure] = []
