"""The figures of docs/aim.md kept apart from the shared list in :mod:`benchmarks.published`.

They read the current AIM's side of ``engine_quality.json`` (10 seeds, AIM at its defaults, epsilon 1): the
Measured table and the per-seed spread of SDMetrics quality on Adult.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from benchmarks.registry import Figure, Value, mean_ci, select, table_figure, value_range

_SRC = "engine_quality.json"
_NAMES = {"uci_dropout": "UCI dropout (3,096 training rows, 37 columns)",
          "adult": "Adult (32,561 training rows, 15 columns)"}


def _aim_rows(p: dict[str, Any], ds: str) -> list[dict[str, Any]]:
    return select(p["rows"], dataset=ds, method="AIM")


def _measured_table(p: dict[str, Any]) -> str:
    """The current AIM at its defaults: TSTR and SDMetrics mean [95 % t interval], median fit CPU seconds."""
    rows = []
    for ds, name in _NAMES.items():
        rs = _aim_rows(p, ds)
        rows.append([name, str(len(rs)), mean_ci(r["current_tstr"] for r in rs).format(".3f"),
                     mean_ci(r["current_quality"] for r in rs).format(".3f"),
                     f"{statistics.median(r['current_cpu_s'] for r in rs):.2f}"])
    return table_figure(["table", "seeds", "TSTR macro-F1", "SDMetrics quality", "fit, CPU s (median)"], rows)


def _quality_range(ds: str, side: str) -> Callable[[dict[str, Any]], Value]:
    return lambda p: value_range(r[f"{side}_quality"] for r in _aim_rows(p, ds))


FIGURES: list[Figure] = [
    Figure("aim.measured.table", _SRC, _measured_table),
    *[Figure(f"aim.adult.quality_range.{side}", _SRC, _quality_range("adult", side))
      for side in ("current", "baseline")],
]
