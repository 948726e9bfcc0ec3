"""The figures of docs/audit.md, quickstart.md, privacy.md and README.md's prose (apart from the shared list).

They read ``audit_speed.json`` (one audit per release: NPGC at epsilon 1 on UCI dropout, and the DKT + SAKT check
on simulated learners), ``npgc_mst_utility.json`` (NPGC at epsilon 1 on UCI dropout, 10 seeds: the TSTR / TRTR
ratio the utility check compares with 0.8) and ``pearl_grid.json`` (the PEARL grid's audits per seed). Where a
sentence of the documents depends on a verdict, the reader writes the verdict too, so that a rerun keeps the
sentence true.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.registry import Figure, Value, one, select, value_range

_SPEED = "audit_speed.json"
_UTILITY = "npgc_mst_utility.json"
_GRID = "pearl_grid.json"
_KT = "knowledge tracing (DKT + SAKT)"
_MIN_RATIO = 0.8  # UtilityCheck's default min_ratio (PEARL's TSTR / TRTR >= 0.8)


def _npgc_eps1_audit(p: dict[str, Any]) -> str:
    """The benchmark's audit of an NPGC epsilon-1 release of UCI dropout: its verdict and utility ratio."""
    r = one(p["rows"], task="tabular (UCI dropout)", release="NPGC eps=1")
    return f"{'approved' if r['approved'] else 'rejected'} (TSTR/TRTR ratio {r['tstr_trtr']:.3f})"


def _npgc_ratios(p: dict[str, Any]) -> list[float]:
    return [r["tstr_ratio"] for r in select(p["rows"], dataset="uci_dropout", method="NPGC after")]


def _k_of_n(flags: list[bool]) -> str:
    """"k of n": how many of ``flags`` are true."""
    return f"{sum(flags)} of {len(flags)}"


def _npgc_below(p: dict[str, Any]) -> str:
    """How many of the 10 NPGC epsilon-1 fits of UCI dropout fall below the utility check's 0.8: "k of n"."""
    return _k_of_n([x < _MIN_RATIO for x in _npgc_ratios(p)])


def _npgc_eps1(prefix: str) -> list[Figure]:
    """The same two figures for each document that states them (keys are per document)."""
    return [Figure(f"{prefix}.npgc_eps1.ratios", _UTILITY, lambda p: value_range(_npgc_ratios(p)), ".2f"),
            Figure(f"{prefix}.npgc_eps1.below", _UTILITY, _npgc_below)]


def _kt_row(p: dict[str, Any], release: str) -> dict[str, Any]:
    return one(p["rows"], task=_KT, release=release)


def _kt_real_f1(p: dict[str, Any]) -> Value:
    r = _kt_row(p, "fresh BKT simulation")
    return value_range([r["dkt_f1_real"], r["sakt_f1_real"]])


def _kt_retention(p: dict[str, Any]) -> Value:
    r = _kt_row(p, "fresh BKT simulation")
    return value_range([r["dkt_f1_syn"] / r["dkt_f1_real"], r["sakt_f1_syn"] / r["sakt_f1_real"]])


def _kt_unpaired(p: dict[str, Any]) -> str:
    """Macro-F1 of DKT and SAKT trained on the shuffled release, against the majority floor, and the verdict."""
    r = _kt_row(p, "responses shuffled (unpaired)")
    f1 = value_range([r["dkt_f1_syn"], r["sakt_f1_syn"]]).format(".2f")
    return f"{f1} (majority floor {r['floor']:.2f}); the check {'passes' if r['approved'] else 'rejects'} it"


def _targets(p: dict[str, Any]) -> str:
    """Whether the runs of audit_speed.json meet the benchmark's targets (30 s tabular, 2 min KT)."""
    tab = max(r["seconds"] for r in p["rows"] if r["task"].startswith("tabular"))
    kt = max(r["seconds"] for r in select(p["rows"], task=_KT))
    missed = [name for name, secs, limit in (("tabular", tab, 30), ("KT", kt, 120)) if secs > limit]
    return "both met" if not missed else f"missed for {' and '.join(missed)}"


def _grid_rows(p: dict[str, Any], dataset: str, method: str, epsilon: float) -> list[dict[str, Any]]:
    return select(p["rows"], dataset=dataset, method=method, epsilon=epsilon)


def _grid_failed(dataset: str, method: str, epsilon: float, check: str) -> Callable[[dict[str, Any]], str]:
    """"k of n": the grid's seeds of one setting whose ``check`` failed."""
    def read(p: dict[str, Any]) -> str:
        return _k_of_n([check in r["failed_checks"] for r in _grid_rows(p, dataset, method, epsilon)])
    return read


def _grid_failed_all(dataset: str, epsilon: float, check: str) -> Callable[[dict[str, Any]], str]:
    """"k of n": the grid's releases of one dataset at one epsilon (every method and seed) failing ``check``."""
    def read(p: dict[str, Any]) -> str:
        return _k_of_n([check in r["failed_checks"]
                        for r in select(p["rows"], dataset=dataset, epsilon=epsilon) if check in r["checks"]])
    return read


FIGURES: list[Figure] = [
    # docs/audit.md
    Figure("audit.npgc_eps1.audit", _SPEED, _npgc_eps1_audit),
    *_npgc_eps1("audit"),
    Figure("audit.mst_eps10.grid_ratio", _GRID, lambda p: value_range(
        r["checks"]["utility"]["details"]["ratio"] for r in _grid_rows(p, "uci_dropout", "mst", 10.0)), ".3f"),
    Figure("audit.mst_eps10.grid_failed", _GRID, _grid_failed("uci_dropout", "mst", 10.0, "utility")),
    Figure("audit.kt.real_f1", _SPEED, _kt_real_f1, ".2f"),
    Figure("audit.kt.retention", _SPEED, _kt_retention, ".2f"),
    Figure("audit.kt.unpaired", _SPEED, _kt_unpaired),
    Figure("audit.npgc_hesp_eps10.auc", _GRID, lambda p: value_range(
        r["checks"]["privacy"]["details"]["membership_auc"] for r in _grid_rows(p, "uci_hesp", "npgc", 10.0)), ".3f"),
    Figure("audit.npgc_hesp_eps10.failed", _GRID, _grid_failed("uci_hesp", "npgc", 10.0, "privacy")),
    Figure("audit.hesp_eps05.privacy_failed", _GRID, _grid_failed_all("uci_hesp", 0.5, "privacy")),
    Figure("audit.targets", _SPEED, _targets),
    # docs/quickstart.md
    Figure("quickstart.npgc_eps1.audit", _SPEED, _npgc_eps1_audit),
    *_npgc_eps1("quickstart"),
    # README.md
    *_npgc_eps1("readme"),
]
