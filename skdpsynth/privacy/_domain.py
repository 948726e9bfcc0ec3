"""Estimate a table's public domain (schema) under differential privacy, when none is given.

Column names and dtypes are structural metadata and taken as public; a column's
kind follows its dtype only (text and object columns are categorical, never
judged by whether their values look like numbers). Everything about the values
is measured, all columns at once (budget and modes: :mod:`._domain_plan`):

1. a noisy count of people -- and, from public quantities and that count, ONE
   error naming every column that cannot be estimated at this budget, before
   anything else is measured;
2. one histogram of every numeric, integer, datetime and boolean column on a
   public scale-free binning (:mod:`._domain_bins`), missing values in a cell of
   their own; every person is in one cell per column (L2 sensitivity
   ``sqrt(d)``). Bounds are quantiles of the noisy CDF over the bins the noise
   cannot explain (found at several resolutions); nullability is the noisy
   missing count against a threshold;
3. one joint stability histogram over the keys ``(column, value)`` of the
   categorical columns, a column's missing values being one more key
   (contribution bound: their number; candidates exactly the counted keys),
   and one over the integer columns, so that integer codes (a few values spread
   over a wide range, nearly all people on them) are recognised and kept as
   the codes they are;
4. a noisy check of the mass below and above every estimated bound (for
   integer codes: of the missing or unreleased mass): a bound with more than
   1% beyond it is widened and reported, with the noisy figure only.

Values outside the estimated domain are clipped (numeric) or treated as missing
(unreleased categories); a column found not nullable gets a ``fill`` (its noisy
median or mode) for the few missing values the noise cannot tell from none.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from skdpsynth.exceptions import DomainEstimateError, SchemaError
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord
from skdpsynth.privacy._domain_bins import (
    DATETIME_BINS,
    INTEGER_BINS,
    NUMERIC_BINS,
    numeric_values,
    widen_bin,
)
from skdpsynth.privacy._domain_columns import (
    DEFAULT_QUANTILES,
    MISSING,
    NUMERIC,
    TAIL_SHARE,
    Z_TAIL,
    Column,
    bounds,
    decide,
    false_positive_rate,
    show,
    spec_of,
    tail_cells,
    tightened,
    unreleased_notes,
)
from skdpsynth.privacy._domain_plan import DomainPlan, DomainRun, plan_domain
from skdpsynth.schema import TableSchema

__all__ = ["estimate_schema", "column_kind_from_dtype", "plan_schema_cost", "drop_unreleased_categories",
           "DomainEstimateError", "DRAFT_COMMAND"]

DRAFT_COMMAND = "skdpsynth schema draft DATA --raw -o draft.json"


def column_kind_from_dtype(series: pd.Series) -> str:
    """Column kind read from the dtype only (public metadata, never from the values)."""
    dt = series.dtype
    if pd.api.types.is_bool_dtype(dt):
        return "boolean"
    if pd.api.types.is_datetime64_any_dtype(dt):
        return "datetime"
    if pd.api.types.is_integer_dtype(dt):
        return "integer"
    if pd.api.types.is_float_dtype(dt):
        return "continuous"
    return "categorical"


def _widths(cols: list[Column], delta: float) -> dict[str, int]:
    count = {k: sum(c.kind == k for c in cols) for k in ("continuous", "integer", "datetime", "boolean",
                                                            "categorical")}
    numeric = count["continuous"] + count["integer"] + count["datetime"]
    return {"bins": numeric + count["boolean"], "categories": count["categorical"],
            "codes": count["integer"] if delta > 0 else 0, "tail": numeric}


def _prepare(X: pd.DataFrame) -> list[Column]:
    cols = []
    for name in X.columns:
        c = Column(str(name), column_kind_from_dtype(X[name]))
        if c.kind in NUMERIC:
            c.bins = {"datetime": DATETIME_BINS, "integer": INTEGER_BINS}.get(c.kind, NUMERIC_BINS)
            c.values = numeric_values(X[name], c.kind)
        cols.append(c)
    return cols


def plan_schema_cost(X: pd.DataFrame, epsilon: float, delta: float, **kwargs) -> list[BudgetRecord]:
    """The records :func:`estimate_schema` will charge for ``X`` (for up-front budget checks)."""
    return _plan(_prepare(X), epsilon, delta, **kwargs).records


def _names(cols: list[Column]) -> str:
    """Column names for the budget log (public), the first few then how many more."""
    shown = ", ".join(repr(c.name) for c in cols[:6])
    return shown + (f" and {len(cols) - 6} more" if len(cols) > 6 else "")


def _part_columns(cols: list[Column]) -> dict[str, list[Column]]:
    return {"bins": [c for c in cols if c.kind in (*NUMERIC, "boolean")],
            "categories": [c for c in cols if c.kind == "categorical"],
            "codes": [c for c in cols if c.kind == "integer"], "tail": [c for c in cols if c.kind in NUMERIC]}


def _plan(cols, epsilon, delta, accountant=None, later=(), label="DP domain estimate") -> DomainPlan:
    columns = {k: f"{len(v)} columns ({_names(v)})" for k, v in _part_columns(cols).items()}
    return plan_domain(_widths(cols, delta), epsilon, delta, accountant=accountant, later=later, label=label,
                       columns=columns)


def _check_feasible(cols: list[Column], plan: DomainPlan, n_hat: int, label: str) -> None:
    """ONE error naming every column the estimate cannot serve at this budget (only the count is spent)."""
    problems = []
    sd = plan.count.sd
    for c in cols:
        if c.kind in NUMERIC:  # the mass of a typical column, spread over a few bins, must be seen
            need = 1.25 * np.sqrt(c.bins.spread) * plan.parts["bins"].cell_threshold(false_positive_rate(plan, c))
            what = "bounds"
        elif c.kind == "categorical":
            need = 1.5 * plan.parts["categories"].release_threshold  # its top category: two thirds of the people
            what = "categories"
        else:
            continue
        # a lower confidence bound: a lucky count must not let a doomed fit spend (nor a very noisy one refuse)
        if n_hat - min(2 * sd, 0.25 * need) < need:
            problems.append(f"{c.name!r} ({what} need about {int(np.ceil(need)):,} people)")
    if problems:
        raise DomainEstimateError(
            f"{label}: the domain cannot be estimated under DP at this budget for column(s) "
            f"{', '.join(problems)}; the table has about {max(n_hat, 0):,} people (a noisy count: the only thing "
            f"measured, see the budget log). Give the public domain instead: `{DRAFT_COMMAND}` (or "
            "TableSchema.draft(X)) writes a draft to check against the codebook, then pass schema=schema.json. "
            "Or raise epsilon or domain_share.")


def _measure_bins(X: pd.DataFrame, cols: list[Column], run: DomainRun) -> None:
    """One mechanism: every binned column's histogram (with a missing cell), booleans' [missing, False, True]."""
    parts, layout = [], []
    for c in cols:
        if c.kind in NUMERIC:
            ok = np.isfinite(c.values)
            h = np.bincount(c.bins.encode(c.values[ok]), minlength=c.bins.n_bins)
            parts.append(np.append(h, (~ok).sum()))
        elif c.kind == "boolean":
            col = X[c.name]
            parts.append(np.array([col.isna().sum(), (col == False).sum(), (col == True).sum()]))  # noqa: E712
        else:
            continue
        layout.append(c)
    if not layout:
        return
    sizes = [len(p) for p in parts]
    noisy = run.histogram(np.concatenate(parts), "bins", f"histograms of {len(layout)} columns ({_names(layout)}) "
                          "on the public scale-free binning, missing values in a cell of their own")
    for c, chunk in zip(layout, np.split(noisy, np.cumsum(sizes)[:-1])):
        c.sd = run.plan.parts["bins"].sd
        if c.kind == "boolean":
            c.missing, c.noisy = float(chunk[0]), chunk[1:].astype(float)
        else:
            c.missing, c.noisy = float(chunk[-1]), chunk[:-1].astype(float)


def _release_keys(X: pd.DataFrame, cols: list[Column], run: DomainRun, part: str) -> None:
    """Joint stability histogram over the keys (column, value) of the categorical (or integer) columns."""
    kind = "categorical" if part == "categories" else "integer"
    members = [c for c in cols if c.kind == kind]
    if not members or part not in run.plan.parts:
        return
    keys, counts = [], []
    for c in members:
        col = X[c.name]
        vc = col.dropna().astype(object).value_counts(sort=False)
        keys += [(c, v.item() if isinstance(v, np.generic) else v) for v in vc.index]
        counts.append(vc.to_numpy())
        n_missing = int(col.isna().sum())
        if kind == "categorical" and n_missing:  # "missing" is one more key of the column (still one per person)
            keys.append((c, MISSING))
            counts.append(np.array([n_missing]))
    counts = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
    if not len(counts):
        return
    what = (f"{'categories' if part == 'categories' else 'values'} of {len(members)} {kind} columns "
            f"({_names(members)}; joint stability histogram, keys = (column, value))")
    released, noisy = run.keys(counts, part, what)
    for c in members:
        c.key_sd = run.plan.parts[part].sd
    for (c, value), ok, v in zip(keys, released, noisy):
        if ok and value is MISSING:
            c.missing_released, c.missing = True, float(v)
        elif ok:
            c.keys[value] = float(v)


def _tail_check(X: pd.DataFrame, cols: list[Column], run: DomainRun, n_hat: int) -> list[str]:
    """Noisy mass beyond each bound (and missing-or-unreleased mass): widen, decide nullability, report."""
    members = [c for c in cols if c.kind in NUMERIC]
    notes = unreleased_notes(cols, run.plan, n_hat)
    if not members or "tail" not in run.plan.parts:
        return notes
    parts = [tail_cells(X, c) for c in members]
    what = (f"check of {len(members)} numeric columns ({_names(members)}): mass below and above each estimated "
            "bound (integer codes: missing or not released)")
    noisy = run.histogram(np.concatenate(parts), "tail", what)
    sd_tail, sd_bins = run.plan.parts["tail"].sd, run.plan.parts["bins"].sd
    for c, chunk in zip(members, np.split(noisy, np.cumsum([len(p) for p in parts])[:-1])):
        n_col = max(n_hat - (c.missing if c.binned else 0.0), 1.0)
        if not c.binned:  # integer codes: missing or unreleased, against released
            c.missing = float(chunk[0])
            if chunk[0] >= max(Z_TAIL * sd_tail, TAIL_SHARE * n_hat):
                notes.append(f"{c.name!r}: about {chunk[0] / max(n_hat, 1):.1%} of values are missing or codes that "
                             "were not released (treated as missing)")
            continue
        significant = max(Z_TAIL * sd_tail, TAIL_SHARE * n_col)
        for side, mass in (("below", chunk[0]), ("above", chunk[1])):
            if mass < significant:
                continue
            if tightened(c, side):  # the mass may lie in the edge bin beyond its released values: its edge first
                c.loose.add(side)
            else:
                start = c.lo_bin if side == "below" else c.hi_bin
                new = widen_bin(c.noisy, start, -1 if side == "below" else 1, sd_bins, mass)
                if side == "below":
                    c.lo_bin = new
                else:
                    c.hi_bin = new
            lo, hi = bounds(c)
            notes.append(f"{c.name!r}: about {mass / n_col:.1%} of values (a noisy count) lay {side} the estimated "
                         f"bound; widened to [{show(c, lo)}, {show(c, hi)}]")
    return notes


def estimate_schema(
    X: pd.DataFrame, *, epsilon: float, delta: float, accountant: BudgetAccountant, noise, later=(),
    bound_quantiles: tuple[float, float] | None = None, label: str = "DP domain estimate",
) -> TableSchema:
    """Estimate a public-grade schema of ``X`` under (epsilon, delta)-DP (see the module docstring).

    Parameters
    ----------
    X : pandas.DataFrame
        The private table (one row per person).
    epsilon, delta : float
        The slice of the budget for the whole domain; never exceeded.
    accountant : BudgetAccountant
        Where the cost is charged.
    noise : NoiseSource
        Where the noise comes from.
    later : sequence of BudgetRecord
        What the model will charge after the domain; when it includes zCDP
        records (and the accountant converts zCDP at a positive delta), the
        domain is charged in zCDP and composes with the model.
    bound_quantiles : (float, float), optional
        Quantiles of the noisy CDF used as bounds (default (0.002, 0.998)).
    label : str
        Prefix of the budget-log targets.

    Returns
    -------
    TableSchema
        Public (DP); non-nullable columns carry a ``fill``.

    Raises
    ------
    DomainEstimateError
        Before anything but a noisy count is measured, naming every column that
        cannot be estimated at this budget; or, after the estimate, naming the
        columns for which nothing could be released.
    """
    cols = _prepare(X)
    if delta <= 0 and any(c.kind == "categorical" for c in cols):
        raise SchemaError("discovering categories under DP needs delta > 0; give a schema with the categories "
                          f"(`{DRAFT_COMMAND}` drafts one) or set delta.")
    plan = _plan(cols, epsilon, delta, accountant, later, label)
    accountant.require(plan.records + list(later), what=f"{label} and the model after it")
    run = DomainRun(plan, accountant, noise)
    n_hat = run.count(len(X))
    _check_feasible(cols, plan, n_hat, label)
    run.open()
    _measure_bins(X, cols, run)
    _release_keys(X, cols, run, "categories")
    _release_keys(X, cols, run, "codes")
    q = tuple(bound_quantiles) if bound_quantiles is not None else DEFAULT_QUANTILES
    failed = [c.name for c in cols if not decide(c, plan, n_hat, q)]
    if failed:
        raise DomainEstimateError(
            f"{label}: nothing could be released for column(s) {failed} at this budget (values too spread out: no "
            "category or value range holds enough people; the budget spent is in the budget log). Drop "
            f"identifier-like columns, or give the public domain: `{DRAFT_COMMAND}`, then schema=schema.json.")
    notes = _tail_check(X, cols, run, n_hat)
    if notes:
        warnings.warn(f"{label}: " + "; ".join(notes) + f". Values outside the domain are clipped. For documented "
                      f"bounds and categories, give a schema (`{DRAFT_COMMAND}` drafts one).", UserWarning,
                      stacklevel=3)
    return TableSchema(tuple(spec_of(c, plan, n_hat) for c in cols))


def drop_unreleased_categories(X: pd.DataFrame, schema: TableSchema) -> pd.DataFrame:
    """Fit ``X`` into a DP-estimated domain, silently: the estimate reported both through noisy counts.

    Categories the estimate did not release become missing values (then the
    column's ``fill`` when it is not nullable, in ``schema.validate``); numeric
    and datetime values are clipped to the estimated bounds. No message says
    which columns were affected or how much: that is private.
    """
    out = X.copy()
    for spec in schema.columns:
        col = out[spec.name]
        if spec.kind == "categorical":
            unknown = col.notna() & ~col.astype(object).isin(spec.categories)
            if unknown.any():
                out[spec.name] = col.astype(object).where(~unknown, np.nan)
        elif spec.kind in ("continuous", "integer") and pd.api.types.is_numeric_dtype(col.dtype) \
                and not pd.api.types.is_bool_dtype(col.dtype):
            out[spec.name] = col.clip(spec.lower, spec.upper)
        elif spec.kind == "datetime" and pd.api.types.is_datetime64_any_dtype(col.dtype) and col.dt.tz is None:
            out[spec.name] = col.clip(spec.lower, spec.upper)
    return out
