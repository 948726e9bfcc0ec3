"""The figures of docs/domain.md (results/domain_estimate.json and results/partition_selection.json)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.registry import Figure, Value, select, table_figure

_DE, _PS = "domain_estimate.json", "partition_selection.json"


def _k_of_n(scenario: str, field: str, want: Any, **match: Any) -> Callable[[dict[str, Any]], str]:
    """domain_estimate.json: 'k of n' fits of one scenario whose ``field`` equals ``want``."""
    def read(p: dict[str, Any]) -> str:
        rows = select(p["rows"], scenario=scenario, **match)
        return f"{sum(r.get(field) == want for r in rows)} of {len(rows)}"
    return read


def _mean(scenario: str, field: str, **match: Any) -> Callable[[dict[str, Any]], float]:
    """domain_estimate.json: the mean of ``field`` over the fits of one setting."""
    def read(p: dict[str, Any]) -> float:
        xs = [r[field] for r in select(p["rows"], scenario=scenario, status="fits", **match)]
        return sum(xs) / len(xs)
    return read


def _min_coverage(p: dict[str, Any]) -> float:
    """domain_estimate.json, Adult without a schema: the smallest share of a numeric column's values in range."""
    return min(r["min_coverage"] for r in select(p["rows"], scenario="adult", domain="no schema", status="fits"))


def _vocabulary(setting: str, what: str) -> Callable[[dict[str, Any]], Value | str | float]:
    """partition_selection.json, OULAD AAA: the common types released (share or per fit) or the transition error."""
    def read(p: dict[str, Any]) -> Value | str | float:
        rows = sorted(select(p["oulad"]["rows"], setting=setting), key=lambda r: r["seed"])
        if what == "per_fit":
            return " ".join(str(r["common_released"]) for r in rows)
        if what == "share":
            return 100 * sum(r["common_released"] for r in rows) / (len(rows) * len(p["oulad"]["common_types"]))
        return sum(r["transition_tv"] for r in rows if not r["refused"]) / sum(not r["refused"] for r in rows)
    return read


def _tables_cell(rows: list[dict[str, Any]], table: str) -> str:
    """One cell of the tables' grid: refusals and categories held by a fifth that were kept, over the fits."""
    refused = sum(bool(r["refused"]) for r in rows)
    kept = sum(r["kept"] for r in rows)
    held = sum(r["of"] for r in rows)
    if refused == len(rows):
        return f"refuses {refused}/{len(rows)}"
    if table.startswith("course"):
        per = {c: (sum(sum(r["common"][c].values()) for r in rows if not r["refused"]),
                   sum(len(r["common"][c]) for r in rows if not r["refused"])) for c in rows[0]["common"]}
        return ", ".join(f"{c} {k}/{n}" for c, (k, n) in per.items())
    return f"{kept}/{held} kept" + (f" ({refused} refused)" if refused else "")


def _tables(p: dict[str, Any]) -> str:
    """partition_selection.json: the 500-person tables' grid, one row per table, one column per domain_share."""
    rows = p["tables"]["rows"]
    shares = sorted({r["domain_share"] for r in rows})
    return table_figure(["500-person table", *(f"`domain_share` {s:g}" for s in shares)],
                        [[table, *(_tables_cell(select(rows, table=table, domain_share=s), table) for s in shares)]
                         for table in dict.fromkeys(r["table"] for r in rows)])


def _course_kept(share: float) -> Callable[[dict[str, Any]], str]:
    """partition_selection.json: the simulated course table's categories held by a fifth kept, over the fits."""
    def read(p: dict[str, Any]) -> str:
        rows = select(p["tables"]["rows"], table="course 500 (simulated)", domain_share=share)
        return f"{sum(r['kept'] for r in rows)} of {sum(r['of'] for r in rows)}"
    return read


_EST, _CODE = {"domain": "no schema"}, {"domain": "codebook schema"}
_GIVEN, _ESTIMATED = "defaults, outcome codebook given", "defaults, outcomes estimated"
_REFERENCE = "reference: public vocabulary (the module's 9 types), outcome codebook given"

FIGURES: list[Figure] = [
    *[Figure(f"dom.uci_dropout.eps{eps:g}.{key}", _DE, _mean("uci_dropout", "tstr_macro_f1", epsilon=eps, **match))
      for eps in (5.0, 1.0) for key, match in (("none", _EST), ("schema", _CODE))],
    Figure("dom.adult.quality.none", _DE, _mean("adult", "quality", **_EST)),
    Figure("dom.adult.quality.schema", _DE, _mean("adult", "quality", **_CODE)),
    Figure("dom.adult.min_coverage", _DE, _min_coverage),
    Figure("dom.small.npgc.fits", _DE, _k_of_n("small 500x3", "status", "fits", method="NPGC")),
    Figure("dom.small.mst.fits", _DE, _k_of_n("small 500x3", "status", "fits", method="MST")),
    Figure("dom.small.npgc.plausible", _DE, _k_of_n("small 500x3", "plausible", True, method="NPGC")),
    Figure("dom.small.dpmarginals.clean", _DE, _k_of_n("small 500x3", "clean_refusal", True, method="DPMarginals")),
    Figure("dom.student.eps5.fits", _DE, _k_of_n("student 649x30 (simulated)", "status", "fits", epsilon=5.0)),
    Figure("dom.student.eps5.medians", _DE, _mean("student 649x30 (simulated)", "medians_inside", epsilon=5.0),
           ".2f"),
    Figure("dom.student.eps1.clean", _DE, _k_of_n("student 649x30 (simulated)", "clean_refusal", True, epsilon=1.0)),
    Figure("dom.hesp.eps5.clean", _DE, _k_of_n("UCI HESP 145x31", "clean_refusal", True, epsilon=5.0)),
    Figure("dom.hesp.eps1.clean", _DE, _k_of_n("UCI HESP 145x31", "clean_refusal", True, epsilon=1.0)),
    Figure("ps.oulad.estimated.share", _PS, _vocabulary(_ESTIMATED, "share"), ".0f", " %"),
    Figure("ps.oulad.estimated.per_fit", _PS, _vocabulary(_ESTIMATED, "per_fit")),
    Figure("ps.oulad.given.share", _PS, _vocabulary(_GIVEN, "share"), ".0f", " %"),
    Figure("ps.oulad.given.per_fit", _PS, _vocabulary(_GIVEN, "per_fit")),
    Figure("ps.oulad.estimated.tv", _PS, _vocabulary(_ESTIMATED, "tv")),
    Figure("ps.oulad.given.tv", _PS, _vocabulary(_GIVEN, "tv")),
    Figure("ps.oulad.reference.tv", _PS, _vocabulary(_REFERENCE, "tv")),
    Figure("ps.tables", _PS, _tables),
    Figure("ps.course.kept.0.3", _PS, _course_kept(0.3)),
]
