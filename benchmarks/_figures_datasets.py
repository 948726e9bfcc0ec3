"""The figures of docs/datasets.md, sequences.md and choosing.md (apart from the shared list)."""

from __future__ import annotations

from typing import Any

from benchmarks.registry import Figure, Value, select, value_range


def _sample_kevents(p: dict[str, Any]) -> Value:
    """sequences.json, OULAD AAA: thousands of events in 1,000 sampled learners, over every method and epsilon."""
    return value_range(r["synthetic_events"] / 1000 for r in p["oulad_aaa"])


def _mib_per_million(p: dict[str, Any]) -> Value:
    """sequences.json, simulated scaling: DP-Markov o1's peak fit memory per million events (1 M and 10 M events)."""
    rows = [r for r in select(p["scaling"], data="simulated", method="DP-Markov o1") if r["events"] >= 1_000_000]
    return value_range(r["fit_peak_mib"] / (r["events"] / 1e6) for r in rows)


FIGURES: list[Figure] = [
    Figure("sequences.doc.sample_kevents", "sequences.json", _sample_kevents, ".0f", " k"),
    Figure("sequences.doc.scaling.mib_per_million", "sequences.json", _mib_per_million, ".0f", " MiB"),
]
