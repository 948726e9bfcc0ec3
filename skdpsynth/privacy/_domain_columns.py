"""What the DP domain estimate decides for each column from its noisy counts (post-processing only).

:mod:`._domain` measures; everything here reads released noisy statistics and the
public binning, never the private rows (except :func:`tail_cells`, which lays a
column's values on the cells of the check that :mod:`._domain` then measures).
Every warning text here quotes noisy figures only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from skdpsynth.privacy._domain_bins import ScaleFreeBins, anchored, quantile_bins, supported_bins
from skdpsynth.privacy._domain_plan import DomainPlan
from skdpsynth.schema import ColumnSpec

__all__ = ["Column", "NUMERIC", "MISSING", "OTHER", "TAIL_SHARE", "Z_TAIL", "DEFAULT_QUANTILES",
           "false_positive_rate", "decide", "bounds", "tightened", "tail_cells", "unreleased_notes", "codes_unreleased",
           "show", "spec_of"]

NUMERIC = ("continuous", "integer", "datetime")
FP = 0.05  # expected number of empty bins the detection lets through, per table
Z_NULL = 2.5  # noisy missing count above this many noise sds: the column is nullable
TAIL_SHARE = 0.01  # more than this share beyond a bound (and Z_TAIL noise sds): widen it and say so
Z_TAIL = 4.0
CODE_SPAN, CODE_UNRELEASED, CODE_TOP = 64, 0.25, 0.8
DEFAULT_QUANTILES = (0.002, 0.998)
MISSING = object()  # the key of a categorical column's missing values
#: the category that stands for every category of a text column that was not released (held by too few people)
OTHER = "(other)"


@dataclass
class Column:
    """One column during the estimate: what was measured (noisy) and what was decided from it."""

    name: str
    kind: str
    bins: ScaleFreeBins | None = None
    values: np.ndarray | None = None
    noisy: np.ndarray | None = None
    missing: float = 0.0
    keys: dict = field(default_factory=dict)
    lo_bin: int = 0
    hi_bin: int = 0
    median: float | None = None
    codes: bool = False
    sd: float = 0.0
    key_sd: float = 0.0
    missing_released: bool = False
    loose: set = field(default_factory=set)  # edges ("below"/"above") that released values may no longer tighten

    @property
    def binned(self) -> bool:
        return self.kind in NUMERIC and not self.codes


def false_positive_rate(plan: DomainPlan, c: Column) -> float:
    """False-positive rate per test: single bins and windows at every level of every binned column."""
    return FP / ((1 + c.bins.levels) * c.bins.n_bins * plan.parts["bins"].width)


def looks_like_codes(released: dict, n_col: float) -> bool:
    """Integer codes: a few released values spread over a wide range, none dominating, holding most people.

    Decided from released (noisy) keys only. Small ranges stay integer (their
    integers are cells of their own anyway), as do counts dominated by one
    value (capital gains: 0) and dense ranges (ages).
    """
    if len(released) < 2:
        return False
    span = max(released) - min(released)
    held = sum(max(v, 0.0) for v in released.values())
    return (span > CODE_SPAN and len(released) <= span / 4 and held >= (1 - CODE_UNRELEASED) * n_col
            and max(released.values()) <= CODE_TOP * n_col)


def decide(c: Column, plan: DomainPlan, n_hat: int, q: tuple[float, float]) -> bool:
    """Bounds (and codes) of one column from its noisy counts; False when nothing could be estimated."""
    c.codes = c.kind == "integer" and looks_like_codes(c.keys, max(n_hat - c.missing, 1.0))
    if c.kind == "categorical" or c.codes:
        return bool(c.keys)
    if c.kind not in NUMERIC:
        return True
    bins = plan.parts["bins"]
    fp = false_positive_rate(plan, c)
    support = supported_bins(c.noisy, bins.sd, bins.cell_threshold(fp), fp, c.bins.levels)
    support = anchored(support, c.noisy, bins.sd)
    den = np.where(support, np.clip(c.noisy, 0, None), 0.0)
    if c.keys:  # released integer values are DP outputs: they may widen the range
        for v in c.keys:
            den[c.bins.encode(np.array([float(v)]))[0]] += 1e-9
    found = quantile_bins(den, q)
    if found is None:
        return False
    c.lo_bin, c.hi_bin = found
    mid = quantile_bins(den, (0.5, 0.5))
    c.median = c.bins.centre(mid[0], c.kind == "integer")
    return True


def tail_cells(c: Column) -> np.ndarray:
    """The cells of one column in the check of the mass beyond its bounds (one cell per person).

    Reads the column's values (private): the check that :mod:`._domain` measures.
    """
    v = c.values
    if c.binned:
        lo, hi = bounds(c)
        return np.array([(v < lo).sum(), (v > hi).sum(), len(v) - (v < lo).sum() - (v > hi).sum()])
    inside = np.isin(v, np.array(list(c.keys), dtype=float))  # NaN (missing) is never inside
    return np.array([(~inside).sum(), inside.sum()])


def bounds(c: Column) -> tuple[float, float]:
    """Value bounds of the chosen bins; for integers, released values may tighten an edge bin or widen them."""
    lo, hi = c.bins.bounds(c.lo_bin, c.hi_bin, c.kind == "integer")
    if c.kind == "integer" and c.keys:
        if "below" not in c.loose:
            lo = explained_edge(c, c.lo_bin, min)
        if "above" not in c.loose:
            hi = explained_edge(c, c.hi_bin, max)
        lo, hi = min(lo, float(min(c.keys))), max(hi, float(max(c.keys)))
    return lo, hi


def tightened(c: Column, side: str) -> bool:
    """Whether released values moved this edge inside its bin (then mass beyond it may lie in that bin)."""
    if c.kind != "integer" or not c.keys or side in c.loose:
        return False
    i = c.lo_bin if side == "below" else c.hi_bin
    edge = c.bins.bounds(i, i, True)[0 if side == "below" else 1]
    return explained_edge(c, i, min if side == "below" else max) != edge


def explained_edge(c: Column, i: int, pick) -> float:
    """The edge of bin ``i``, or its outermost released value when the released values hold the bin's mass."""
    a, b = c.bins.left(i), c.bins.right(i)
    inside = [v for v in c.keys if a <= v < b]
    edge = c.bins.bounds(i, i, True)[0 if pick is min else 1]
    if not inside:
        return edge
    slack = 2 * np.sqrt(c.sd**2 + len(inside) * c.key_sd**2)
    return float(pick(inside)) if sum(c.keys[v] for v in inside) >= c.noisy[i] - slack else edge


def unreleased(c: Column, plan: DomainPlan, n_hat: int) -> tuple[float, float]:
    """Noisy number of people with a category that was not released, and its noise sd (post-processing)."""
    held = sum(c.keys.values()) + (c.missing if c.missing_released else 0.0)
    sd = np.sqrt(plan.count.sd**2 + (len(c.keys) + c.missing_released) * c.key_sd**2)
    return n_hat - held, float(sd)


def has_other(c: Column, plan: DomainPlan, n_hat: int) -> bool:
    """Whether a text column's unreleased categories hold more people than the noise explains (then they are
    released as :data:`OTHER`, not as missing values, and the warning names the column)."""
    if c.kind != "categorical" or c.codes or not c.keys:
        return False
    mass, sd = unreleased(c, plan, n_hat)
    return mass >= max(Z_NULL * sd, TAIL_SHARE * n_hat)


def codes_unreleased(c: Column, plan: DomainPlan) -> bool:
    """Whether integer codes have missing or unreleased values beyond the noise (then the column is nullable and
    the warning names it)."""
    return c.missing >= Z_NULL * plan.parts["tail"].sd


def unreleased_notes(cols: list[Column], plan: DomainPlan, n_hat: int) -> list[str]:
    """Warnings (noisy figures only) naming every text column whose unreleased categories become :data:`OTHER`."""
    notes = []
    for c in cols:
        if has_other(c, plan, n_hat):
            mass, _ = unreleased(c, plan, n_hat)
            notes.append(f"{c.name!r}: about {mass / max(n_hat, 1):.1%} of values (a noisy figure) are categories "
                         f"held by too few people to be released (released as {OTHER!r})")
    return notes


def show(c: Column, value: float) -> str:
    """A bound as the warning shows it (dates as dates)."""
    return str(pd.Timestamp(value, unit="s").date()) if c.kind == "datetime" else f"{value:g}"


def spec_of(c: Column, plan: DomainPlan, n_hat: int) -> ColumnSpec:
    """The public spec of one column from its noisy statistics (post-processing)."""
    if c.kind == "boolean":
        nullable = c.missing >= Z_NULL * plan.parts["bins"].sd
        return ColumnSpec(c.name, "boolean", nullable=nullable, fill=None if nullable else bool(np.argmax(c.noisy)))
    if c.kind == "categorical" or c.codes:
        if c.codes:
            nullable = codes_unreleased(c, plan)
            cats = sorted(c.keys)
        else:  # nullable when its missing key was released; rare categories more than noise: one more category
            nullable = c.missing_released
            cats = sorted(c.keys, key=str) + ([OTHER] if has_other(c, plan, n_hat) and OTHER not in c.keys else [])
        fill = None if nullable else max(c.keys, key=c.keys.get)
        return ColumnSpec(c.name, "categorical", categories=tuple(cats), nullable=nullable, fill=fill)
    lo, hi = bounds(c)
    nullable = c.missing >= Z_NULL * plan.parts["bins"].sd
    fill = None if nullable else float(np.clip(c.median, lo, hi))
    if c.kind == "datetime":
        ts = lambda s: pd.Timestamp(s, unit="s")  # noqa: E731
        return ColumnSpec(c.name, "datetime", ts(lo), ts(hi), nullable=nullable, fill=None if nullable else ts(fill))
    if c.kind == "integer":
        fill = None if fill is None else int(round(fill))
    return ColumnSpec(c.name, c.kind, lo, hi, nullable=nullable, fill=fill)


