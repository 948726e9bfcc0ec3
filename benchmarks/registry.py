"""The helpers of the published figures: :class:`Figure`, :class:`Value` and the intervals they are written with.

A :class:`Figure` names a result file under ``benchmarks/results/``, reads one value (with its interval where the
file holds seeds) from the file's JSON and formats it. The lists -- :data:`FIGURES`, README.md's Measured table
(:data:`MEASURED`), the rerun commands (:data:`RERUN`) and the files allowed to be stale (:data:`STALE_ALLOWED`)
-- live in :mod:`benchmarks.published`; ``python -m benchmarks.report`` writes the Measured table and every
``<!-- fig:KEY -->...<!-- /fig -->`` span of docs/*.md from them, and ``tests/test_results_fresh.py`` checks
that the text matches and that every published file was written by the code as it is now (its stamp's
``depends`` hashes). Only the files listed there are published; older experiments live in
``benchmarks/results/archive/`` and are not maintained.

Intervals: ``v [lo, hi]`` is a mean and its 95 % Student-t interval over seeds; ``lo-hi`` is the range of a
set of settings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from scipy import stats

__all__ = ["Figure", "Value", "ci_from_sd", "interval", "mean_ci", "one", "select", "table_figure", "value_range",
           "values"]


@dataclass(frozen=True)
class Value:
    """A figure's value: a point, a point with a 95 % interval (``kind="ci"``) or a range (``kind="range"``)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    kind: str = "point"
    items: tuple[float, ...] = ()
    sd: float | None = None

    def format(self, spec: str) -> str:
        """The value written with the format ``spec`` (e.g. ``".3f"``)."""
        if self.kind == "sd":
            return f"{_format(self.value, spec)} ({_format(self.sd, spec)})"
        if self.kind == "list":
            return " / ".join(_format(v, spec) for v in self.items)
        if self.kind == "range":
            low, high = _format(self.low, spec), _format(self.high, spec)
            return low if low == high else f"{low}-{high}"
        text = _format(self.value, spec)
        if self.kind == "ci":
            text += f" [{_format(self.low, spec)}, {_format(self.high, spec)}]"
        return text


def _format(x: float, spec: str) -> str:
    """``format(x, spec)``; the spec ``"sig3"`` writes 3 significant digits, whole numbers from 100 (``1,087``)."""
    if spec == "sig3":
        return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"
    return format(x, spec)


def mean_ci(values: Iterable[float], level: float = 0.95) -> Value:
    """The mean of ``values`` and its Student-t interval at ``level``."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        raise ValueError("no values")
    mean = sum(xs) / n
    if n == 1:
        return Value(mean)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return Value(mean, mean - half, mean + half, "ci")


def ci_from_sd(mean: float, sd: float | None, n: int, level: float = 0.95) -> Value:
    """A mean with its Student-t interval from a standard deviation over ``n`` seeds."""
    if n < 2 or sd is None or not math.isfinite(sd):
        return Value(mean)
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return Value(mean, mean - half, mean + half, "ci")


def value_range(values: Iterable[float]) -> Value:
    """The range (min-max) of ``values``."""
    xs = [float(v) for v in values]
    return Value(None, min(xs), max(xs), "range")


def values(items: Iterable[float]) -> Value:
    """Several values written ``a / b / c`` (e.g. one per epsilon)."""
    return Value(None, kind="list", items=tuple(float(v) for v in items))


def select(rows: list[dict[str, Any]], **match: Any) -> list[dict[str, Any]]:
    """The rows whose fields equal ``match`` (at least one, or ``KeyError``)."""
    out = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    if not out:
        raise KeyError(f"no row with {match}")
    return out


def interval(row: dict[str, Any], field: str, kind: str = "ci") -> Value:
    """``row[field]`` with its interval ``row[field_low]``, ``row[field_high]`` (the runs' summary rows)."""
    return Value(row[field], row[f"{field}_low"], row[f"{field}_high"], kind)


def table_figure(head: list[str], rows: list[list[str]]) -> str:
    """A figure that is a whole table: blank lines, the header, its rule and one line per row.

    The cells are written already formatted (``_common.markdown_table`` formats dict rows, which cannot hold the
    repeated column names some of these tables have).
    """
    lines = ["", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n\n"


def one(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    """The single row whose fields equal ``match``."""
    out = select(rows, **match)
    if len(out) != 1:
        raise KeyError(f"{len(out)} rows with {match}")
    return out[0]


@dataclass(frozen=True)
class Figure:
    """One published number.

    Parameters
    ----------
    key : str
        The name used in ``<!-- fig:KEY -->`` spans and in :data:`MEASURED` templates.
    source : str
        The result file, relative to ``benchmarks/results/``.
    read : callable
        Maps the file's JSON payload to a :class:`Value`, a plain number, or text written as it stands (a table).
    spec : str
        The format specification of the number(s).
    unit : str
        Text written after the value (e.g. ``" s"``).
    """

    key: str
    source: str
    read: Callable[[dict[str, Any]], Value | float | int | str]
    spec: str = ".3f"
    unit: str = ""

    def render(self, payload: dict[str, Any]) -> str:
        """The figure's text from the source file's payload."""
        value = self.read(payload)
        if isinstance(value, str):  # a block written by the reader itself (e.g. a table)
            return value
        if not isinstance(value, Value):
            value = Value(float(value))
        return value.format(self.spec) + self.unit

