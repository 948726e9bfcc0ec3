"""Estimate a table's domain (schema) under differential privacy.

Used by every tabular synthesizer when the user gives no schema, so that ``fit``
stays end-to-end DP. Column names and dtypes are structural metadata and are
taken as public; the *values* (bounds, category labels) are estimated:

* numeric and datetime columns: two DP quantiles (``bound_quantiles``) by the
  exponential mechanism over a fixed, data-independent candidate grid;
  utility ``-|#{x < c} - q n|`` has sensitivity 1 under add/remove-one-person;
* categorical columns: the stability histogram of
  :func:`skdpsynth.privacy.stability_histogram` (each person holds one label
  per column) -- (eps, delta)-DP for an unknown label set;
* boolean columns cost nothing (their domain is public).

Every column may be missing (``nullable=True``): whether a column has missing
values is not revealed; the missing cell is noised like any other.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from skdpsynth.exceptions import SchemaError
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord
from skdpsynth.privacy._mechanisms import exponential_mechanism, stability_histogram, stability_threshold
from skdpsynth.schema import ColumnSpec, TableSchema

__all__ = ["estimate_schema", "column_kind_from_dtype", "plan_schema_cost"]

# Data-independent candidates for numeric bounds: every integer in [-1000, 1000] and +-10^(k/40), 1e-4 .. 1e12.
_MAG = 10.0 ** np.linspace(-4, 12, 16 * 40 + 1)
NUMERIC_CANDIDATES = np.unique(np.concatenate([-_MAG, _MAG, np.arange(-1000.0, 1001.0)]))
# Datetime candidates: every ~9 days from 1900 to 2100, in seconds since the epoch.
DATETIME_CANDIDATES = np.linspace(
    pd.Timestamp("1900-01-01").value / 1e9, pd.Timestamp("2100-01-01").value / 1e9, 8001
)


def column_kind_from_dtype(series: pd.Series) -> str:
    """Column kind read from the dtype only (public metadata, never from values)."""
    dt = series.dtype
    if pd.api.types.is_bool_dtype(dt):
        return "boolean"
    if pd.api.types.is_datetime64_any_dtype(dt):
        return "datetime"
    if pd.api.types.is_integer_dtype(dt):
        return "integer"
    if pd.api.types.is_float_dtype(dt):
        return "continuous"
    if pd.api.types.is_object_dtype(dt):
        # object columns holding only numbers (never looking at the numbers themselves)
        nonnull = series.dropna()
        if len(nonnull) and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in nonnull):
            return "continuous"
    return "categorical"


def _column_cost(kind: str, eps_col: float, delta_col: float) -> list[BudgetRecord]:
    if kind == "boolean":
        return []
    if kind == "categorical":
        return [BudgetRecord("stability-histogram", "", "approx", epsilon=eps_col, delta=delta_col)]
    return [BudgetRecord("exponential", "", "pure", epsilon=eps_col / 2)] * 2


def _per_column_budget(kinds: list[str], epsilon: float, delta: float) -> tuple[float, float, float]:
    """(epsilon per categorical column, epsilon per numeric column, delta per categorical column).

    Category discovery needs far more budget than bounds (its threshold grows as log(1/delta)/eps), so when
    both kinds are present each kind gets half of ``epsilon``, split equally within the kind.
    """
    n_cat = sum(k == "categorical" for k in kinds)
    n_num = sum(k in ("continuous", "integer", "datetime") for k in kinds)
    share_cat = 0.5 if n_cat and n_num else float(n_cat > 0)
    eps_cat = epsilon * share_cat / n_cat if n_cat else 0.0
    eps_num = epsilon * (1 - share_cat) / n_num if n_num else 0.0
    return eps_cat, eps_num, (delta / n_cat if n_cat else 0.0)


def plan_schema_cost(X: pd.DataFrame, epsilon: float, delta: float) -> list[BudgetRecord]:
    """The records :func:`estimate_schema` will charge (for up-front budget checks)."""
    kinds = [column_kind_from_dtype(X[c]) for c in X.columns]
    eps_cat, eps_num, delta_col = _per_column_budget(kinds, epsilon, delta)
    return [r for k in kinds for r in _column_cost(k, eps_cat if k == "categorical" else eps_num, delta_col)]


def _dp_quantile(
    values: np.ndarray, q: float, candidates: np.ndarray, epsilon: float, noise, accountant, target
) -> float:
    # The exponential mechanism locates a rank only to within about 2 ln(m) / eps people (m candidates),
    # so extreme quantiles are pulled inwards to rank max(q n, 4 ln(m) / eps) from their end.
    # Changing n by one moves this target by at most 1, so the utility keeps sensitivity 1.
    n = len(values)
    min_rank = min(4.0 * math.log(len(candidates)) / epsilon, n / 2)
    rank = max(q * n, min_rank) if q <= 0.5 else n - max((1 - q) * n, min_rank)
    rank = min(max(rank, 0.0), float(n))
    ordered = np.sort(values)
    below = np.searchsorted(ordered, candidates, side="left")
    at_or_below = np.searchsorted(ordered, candidates, side="right")
    # tie-aware: a candidate is exact when the target rank falls inside its block of equal values
    utility = -np.maximum(np.maximum(below - rank, rank - at_or_below), 0.0)
    return float(candidates[exponential_mechanism(utility, sensitivity=1.0, epsilon=epsilon, noise=noise,
                                                  accountant=accountant, target=target)])


def _numeric_spec(name: str, col: pd.Series, kind: str, eps_col: float, quantiles, noise, accountant) -> ColumnSpec:
    if kind == "datetime":
        ts = pd.to_datetime(col).dropna()
        values = ts.astype("datetime64[ns]").astype("int64").to_numpy() / 1e9
        candidates = DATETIME_CANDIDATES
    else:
        values = pd.to_numeric(col, errors="coerce").dropna().to_numpy(dtype=float)
        candidates = NUMERIC_CANDIDATES
    bounds = [
        _dp_quantile(values, q, candidates, eps_col / 2, noise, accountant, f"DP {q:g}-quantile of column {name!r}")
        for q in quantiles
    ]
    lo, hi = min(bounds), max(bounds)
    if lo == hi:  # widen to the neighbouring candidates: a zero-width domain cannot be synthesized
        i = int(np.searchsorted(candidates, lo))
        lo, hi = candidates[max(i - 1, 0)], candidates[min(i + 1, len(candidates) - 1)]
    if kind == "datetime":
        return ColumnSpec(name, kind, pd.Timestamp(lo, unit="s"), pd.Timestamp(hi, unit="s"), nullable=True)
    if kind == "integer":
        lo, hi = math.floor(lo), math.ceil(hi)
    return ColumnSpec(name, kind, lo, hi, nullable=True)


def _categorical_spec(name: str, col: pd.Series, eps_col: float, delta_col: float, noise, accountant) -> ColumnSpec:
    counts = col.dropna().astype(object).value_counts(sort=False)
    if len(counts) == 0:  # nothing to count: the column is all missing, no key can be released
        raise SchemaError(f"column {name!r}: no category can be released at this budget; give the categories "
                          "in a schema.")
    released, _ = stability_histogram(counts.to_numpy(), contribution_bound=1, epsilon=eps_col, delta=delta_col,
                                      noise=noise, accountant=accountant,
                                      target=f"category discovery in column {name!r}")
    kept = [k for k, ok in zip(counts.index, released) if ok]
    if not kept:
        raise SchemaError(
            f"column {name!r}: no category is frequent enough to be released at this budget "
            f"(threshold {stability_threshold(1, eps_col, delta_col)} people); give the categories in a schema."
        )
    return ColumnSpec(name, "categorical", categories=tuple(sorted(kept, key=str)), nullable=True)


def estimate_schema(
    X: pd.DataFrame,
    *,
    epsilon: float,
    delta: float,
    accountant: BudgetAccountant,
    noise,
    bound_quantiles: tuple[float, float] = (0.01, 0.99),
) -> TableSchema:
    """Estimate a public-grade schema of ``X`` under (epsilon, delta)-DP.

    Categorical and numeric columns each get half of ``epsilon`` when both are
    present (all of it otherwise), split equally within the kind; numeric
    columns spend half of their share on each bound; ``delta`` is split over the
    categorical columns; booleans cost nothing.

    Parameters
    ----------
    X : pandas.DataFrame
        The private table.
    epsilon, delta : float
        Budget for the whole domain; charged to ``accountant``.
    accountant : BudgetAccountant
        Where the cost is charged.
    noise : NoiseSource
        Where the noise comes from.
    bound_quantiles : (float, float), default=(0.01, 0.99)
        Quantiles used as bounds; values beyond them are clipped.

    Returns
    -------
    TableSchema
    """
    if delta <= 0 and any(column_kind_from_dtype(X[c]) == "categorical" for c in X.columns):
        raise SchemaError(
            "discovering categories under DP needs delta > 0; give a schema with the categories or set delta."
        )
    kinds = {c: column_kind_from_dtype(X[c]) for c in X.columns}
    planned = plan_schema_cost(X, epsilon, delta)
    accountant.require(planned, what="estimating the schema under DP")
    eps_cat, eps_num, delta_col = _per_column_budget(list(kinds.values()), epsilon, delta)
    cols = []
    for name in X.columns:
        kind = kinds[name]
        if kind == "boolean":
            cols.append(ColumnSpec(name, "boolean", nullable=True))
        elif kind == "categorical":
            cols.append(_categorical_spec(name, X[name], eps_cat, delta_col, noise, accountant))
        else:
            cols.append(_numeric_spec(name, X[name], kind, eps_num, bound_quantiles, noise, accountant))
    return TableSchema(tuple(cols))


def drop_unreleased_categories(X: pd.DataFrame, schema: TableSchema) -> pd.DataFrame:
    """Mark categories that the DP schema did not release as missing, with a warning.

    Such labels were too rare to be released privately; keeping them would leak
    them. They become missing values (the column's missing cell), and the
    warning names the column and how many values were affected.
    """
    out = X.copy()
    affected = {}
    for spec in schema.columns:
        if spec.kind != "categorical":
            continue
        col = out[spec.name]
        unknown = col.notna() & ~col.astype(object).isin(spec.categories)
        if unknown.any():
            affected[spec.name] = int(unknown.sum())
            out[spec.name] = col.astype(object).where(~unknown, np.nan)
    if affected:  # the columns only: how many values were affected is private
        warnings.warn(
            "rare categories not released by the DP domain estimate are treated as missing in columns "
            + ", ".join(repr(k) for k in affected),
            UserWarning,
            stacklevel=3,
        )
    return out
