"""The figures of docs/npgc.md kept apart from the shared list in :mod:`benchmarks.published`.

They read the previous release's side of ``npgc_mst_utility.json`` (10 seeds, epsilon 1: SDMetrics quality of
the release it was run against) and the per-generation losses of the 2,000-row regeneration loops of
``regeneration.json`` (Adult, overall quality).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.registry import Figure, Value, mean_ci, select, value_range

_UTILITY = "npgc_mst_utility.json"
_REGEN = "regeneration.json"
_DATASETS = ("uci_dropout", "adult", "oulad", "uci_hesp")


def _before_quality(ds: str) -> Callable[[dict[str, Any]], Value]:
    """Mean [95 % t interval] of the previous release's SDMetrics quality over the seeds."""
    return lambda p: mean_ci(r["quality"] for r in select(p["rows"], dataset=ds, method="NPGC before"))


def _loss_per_generation(p: dict[str, Any], method: str) -> float:
    """Quality points lost per refit: (first - last generation's overall quality) * 100 / refits."""
    curve = sorted(select(p["table"], method=method), key=lambda r: r["generation"])
    return 100 * (curve[0]["overall"] - curve[-1]["overall"]) / (len(curve) - 1)


FIGURES: list[Figure] = [
    *[Figure(f"npgc.doc.before.quality.{ds}", _UTILITY, _before_quality(ds)) for ds in _DATASETS],
    Figure("npgc.doc.regen2k.nonprivate.loss_per_gen", _REGEN,
           lambda p: _loss_per_generation(p, "skdpsynth.NPGC (non-private)"), ".2f"),
    Figure("npgc.doc.regen2k.eps10.loss_per_gen", _REGEN,
           lambda p: _loss_per_generation(p, "skdpsynth.NPGC (eps=10)"), ".1f"),
    Figure("npgc.doc.regen2k.deep.loss_per_gen", _REGEN,
           lambda p: value_range(_loss_per_generation(p, m) for m in ("CTGAN", "TVAE")), ".1f"),
]
