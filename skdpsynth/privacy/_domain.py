"""Estimate a table's public domain (schema) under differential privacy, when none is given.

Column names are structural metadata and taken as public. A column's kind is
NOT read from its dtype (pandas decides a dtype from every value, so it is a
statistic of the private data): it is a DP answer (:mod:`._domain_kinds`).
Everything about the values is measured, all columns at once (budget and
modes: :mod:`._domain_plan`):

1. a noisy count of people;
2. one histogram of every column's value classes (missing, boolean, integer,
   decimal, ISO date, text; one cell per person and column, L2 sensitivity
   ``sqrt(d)``): each column's kind is post-processing of its noisy counts, and
   the remaining budget is split by those kinds. Then, from public quantities,
   the noisy count and the kinds, ONE error naming every column that cannot be
   estimated at this budget, before anything else is measured;
3. one histogram of every numeric, integer, datetime and boolean column on a
   public scale-free binning (:mod:`._domain_bins`), missing values (and values
   of another class) in a cell of their own; every person is in one cell per
   column (L2 sensitivity ``sqrt(d)``). Bounds are quantiles of the noisy CDF
   over the bins the noise cannot explain (found at several resolutions);
   nullability is the noisy missing count against a threshold;
4. one joint stability histogram over the keys ``(column, value)`` of the
   categorical columns, a column's missing values being one more key
   (contribution bound: their number; candidates exactly the counted keys),
   and one over the integer columns, so that integer codes (a few values spread
   over a wide range, nearly all people on them) are recognised and kept as
   the codes they are;
5. a noisy check of the mass below and above every estimated bound (for
   integer codes: of the missing or unreleased mass): a bound with more than
   1% beyond it is widened and reported, with the noisy figure only.

Fitting the table into the estimate (:func:`drop_unreleased_categories`) is a
public rule applied to each value on its own: values of another class than the
column's kind become missing; categories of a text column that were not
released become the category ``"(other)"`` when the noisy count says they hold
more people than the noise explains (the warning then names the column), else
missing; decimals in an integer column are rounded; numbers and dates are
clipped to the estimated bounds; a column found not nullable gets a ``fill``
(its noisy median or mode) for missing values.
Every message depends on public inputs and noisy answers only, and says so.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from skdpsynth.exceptions import DomainEstimateError, SchemaError
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord
from skdpsynth.privacy._domain_bins import DATETIME_BINS, INTEGER_BINS, NUMERIC_BINS, widen_bin
from skdpsynth.privacy._domain_columns import (
    DEFAULT_QUANTILES,
    MISSING,
    NUMERIC,
    OTHER,
    TAIL_SHARE,
    Z_TAIL,
    Column,
    bounds,
    codes_unreleased,
    decide,
    false_positive_rate,
    show,
    spec_of,
    tail_cells,
    tightened,
    unreleased_notes,
)
from skdpsynth.privacy._domain_kinds import MISSING as MISSING_CLASS
from skdpsynth.privacy._domain_kinds import Parsed, class_counts, decide_kind, parse_column
from skdpsynth.privacy._domain_plan import DomainPlan, DomainRun, plan_domain
from skdpsynth.schema import TableSchema

__all__ = ["estimate_schema", "column_kind_from_dtype", "plan_schema_cost", "drop_unreleased_categories",
           "check_time_zones", "DomainEstimateError", "DRAFT_COMMAND"]

DRAFT_COMMAND = "skdpsynth schema draft DATA --raw -o draft.json"


def column_kind_from_dtype(series: pd.Series) -> str:
    """Column kind read from the dtype only.

    Not used by the estimate: a dtype that pandas inferred depends on the
    values (one NaN makes an int column float64). Only for a dtype the user
    declared.
    """
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


def check_time_zones(X: pd.DataFrame) -> None:
    """Refuse time-zone-aware datetime columns before anything is spent (the domain's dates are naive).

    The dtype is the user's declaration (pandas never makes one from naive values); no value is quoted.
    """
    aware = [str(c) for c in X.columns
             if isinstance(X[c].dtype, pd.DatetimeTZDtype)]
    if aware:
        raise SchemaError(
            f"column(s) {aware} hold time-zone-aware dates, and a domain's dates carry no time zone (they would be "
            "shifted silently). Convert them first: X[col].dt.tz_convert('UTC').dt.tz_localize(None) for UTC, or "
            ".dt.tz_localize(None) for local wall-clock time.")


def _kind_widths(cols: list[Column], delta: float) -> dict[str, int]:
    """Columns per part, from the released kinds (DP answers)."""
    count = {k: sum(c.kind == k for c in cols) for k in ("continuous", "integer", "datetime", "boolean",
                                                            "categorical")}
    numeric = count["continuous"] + count["integer"] + count["datetime"]
    return {"bins": numeric + count["boolean"], "categories": count["categorical"],
            "codes": count["integer"] if delta > 0 else 0, "tail": numeric}


def plan_schema_cost(X: pd.DataFrame, epsilon: float, delta: float, **kwargs) -> list[BudgetRecord]:
    """The records :func:`estimate_schema` will charge for ``X`` (for up-front budget checks; its shape only)."""
    return _plan([str(c) for c in X.columns], epsilon, delta, **kwargs).records


def _names_of(names: list[str]) -> str:
    """Column names for the budget log (public), the first few then how many more."""
    shown = ", ".join(repr(n) for n in names[:6])
    return shown + (f" and {len(names) - 6} more" if len(names) > 6 else "")


def _names(cols: list[Column]) -> str:
    return _names_of([c.name for c in cols])


def _plan(names: list[str], epsilon, delta, accountant=None, later=(), label="DP domain estimate",
          compose: bool = False) -> DomainPlan:
    """The plan of a table (its column names): the kinds first, then every column in every part (placeholders)."""
    d = len(names)
    return plan_domain({k: d for k in ("bins", "categories", "codes", "tail")}, epsilon, delta,
                       accountant=accountant, later=later, label=label, kinds=d, compose=compose,
                       columns={"kinds": f"{d} columns ({_names_of(names)})"})


def _measure_kinds(X: pd.DataFrame, parsed: list[Parsed], run: DomainRun) -> list[Column]:
    """One mechanism: every column's value classes (one cell per person and column); the kinds decided from it."""
    counts = [class_counts(p) for p in parsed]
    names = [str(c) for c in X.columns]
    noisy = run.histogram(np.concatenate(counts), "kinds",
                          f"kinds of {len(names)} columns ({_names_of(names)}): people per value class (missing, "
                          "boolean, integer, decimal, date, text)")
    sd = run.plan.kinds.sd
    cols = []
    for name, p, chunk in zip(names, parsed, np.split(noisy, len(names))):
        c = Column(name, decide_kind(chunk, sd))
        if c.kind in NUMERIC:
            c.bins = {"datetime": DATETIME_BINS, "integer": INTEGER_BINS}.get(c.kind, NUMERIC_BINS)
        if c.kind in (*NUMERIC, "boolean"):
            values = p.values(c.kind)
            c.values = np.round(values) if c.kind == "integer" else values
        cols.append(c)
    return cols


def _check_feasible(cols: list[Column], plan: DomainPlan, n_hat: int, label: str) -> None:
    """ONE error naming every column the estimate cannot serve at this budget (only the count and kinds spent)."""
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
            f"{', '.join(problems)} (kinds as estimated under DP); the table has about {max(n_hat, 0):,} people (a "
            "noisy count; only it and the columns' kinds were measured, see the budget log). Give the public domain "
            f"instead: `{DRAFT_COMMAND}` (or TableSchema.draft(X)) writes a draft to check against the codebook, "
            "then pass schema=schema.json. Or raise epsilon or domain_share.")


def _measure_bins(cols: list[Column], run: DomainRun) -> None:
    """One mechanism: every binned column's histogram (with a missing cell), booleans' [missing, False, True]."""
    parts, layout = [], []
    for c in cols:
        if c.kind in NUMERIC:
            ok = np.isfinite(c.values)
            h = np.bincount(c.bins.encode(c.values[ok]), minlength=c.bins.n_bins)
            parts.append(np.append(h, (~ok).sum()))
        elif c.kind == "boolean":
            v = c.values
            parts.append(np.array([np.isnan(v).sum(), (v == 0).sum(), (v == 1).sum()]))
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


def _key_values(X: pd.DataFrame, c: Column, p: Parsed) -> tuple[pd.Series, int]:
    """A column's key values (raw objects of a categorical column, whole numbers of an integer one) and how many
    people have none (missing, or of another class)."""
    if c.kind == "categorical":
        present = p.classes != MISSING_CLASS
        return X[c.name][present].astype(object), int((~present).sum())
    v = c.values[np.isfinite(c.values)]
    return pd.Series(v.astype(np.int64), dtype=object), int(len(c.values) - len(v))


def _release_keys(X: pd.DataFrame, parsed: dict[str, Parsed], cols: list[Column], run: DomainRun,
                  part: str) -> None:
    """Joint stability histogram over the keys (column, value) of the categorical (or integer) columns."""
    kind = "categorical" if part == "categories" else "integer"
    members = [c for c in cols if c.kind == kind]
    if not members or part not in run.plan.parts:
        return
    keys, counts = [], []
    for c in members:
        values, n_missing = _key_values(X, c, parsed[c.name])
        vc = values.value_counts(sort=False)
        keys += [(c, v.item() if isinstance(v, np.generic) else v) for v in vc.index]
        counts.append(vc.to_numpy())
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


def _tail_check(cols: list[Column], run: DomainRun, n_hat: int) -> list[str]:
    """Noisy mass beyond each bound (and missing-or-unreleased mass): widen, decide nullability, report."""
    members = [c for c in cols if c.kind in NUMERIC]
    notes = unreleased_notes(cols, run.plan, n_hat)
    if not members or "tail" not in run.plan.parts:
        return notes
    parts = [tail_cells(c) for c in members]
    what = (f"check of {len(members)} numeric columns ({_names(members)}): mass below and above each estimated "
            "bound (integer codes: missing or not released)")
    noisy = run.histogram(np.concatenate(parts), "tail", what)
    sd_tail, sd_bins = run.plan.parts["tail"].sd, run.plan.parts["bins"].sd
    for c, chunk in zip(members, np.split(noisy, np.cumsum([len(p) for p in parts])[:-1])):
        n_col = max(n_hat - (c.missing if c.binned else 0.0), 1.0)
        if not c.binned:  # integer codes: missing or unreleased, against released
            c.missing = float(chunk[0])
            if codes_unreleased(c, run.plan):  # exactly the columns that become nullable
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
    bound_quantiles: tuple[float, float] | None = None, label: str = "DP domain estimate", compose: bool = False,
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
    compose : bool, default=False
        Charge in zCDP at the accountant's ``delta_zcdp`` even when ``later``
        holds no zCDP records (see :func:`~._domain_plan.plan_domain`).

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
    check_time_zones(X)
    plan = _plan([str(c) for c in X.columns], epsilon, delta, accountant, later, label, compose)
    accountant.require(plan.records + list(later), what=f"{label} and the model after it")
    run = DomainRun(plan, accountant, noise)
    n_hat = run.count(len(X))
    run.open()
    parsed = {str(name): parse_column(X[name]) for name in X.columns}
    cols = _measure_kinds(X, list(parsed.values()), run)
    if delta <= 0 and any(c.kind == "categorical" for c in cols):
        raise DomainEstimateError(
            f"{label}: discovering categories under DP needs delta > 0, and column(s) "
            f"{[c.name for c in cols if c.kind == 'categorical']} hold text (kinds as estimated under DP; only the "
            f"count and the kinds were measured). Give a schema with the categories (`{DRAFT_COMMAND}` drafts one) "
            "or set delta.")
    run.split(_kind_widths(cols, delta))
    _check_feasible(cols, run.plan, n_hat, label)
    _measure_bins(cols, run)
    _release_keys(X, parsed, cols, run, "categories")
    _release_keys(X, parsed, cols, run, "codes")
    q = tuple(bound_quantiles) if bound_quantiles is not None else DEFAULT_QUANTILES
    failed = [c.name for c in cols if not decide(c, run.plan, n_hat, q)]
    if failed:
        raise DomainEstimateError(
            f"{label}: nothing could be released for column(s) {failed} at this budget (from the noisy answers: no "
            "category or value range holds enough people; the budget spent is in the budget log). Drop "
            f"identifier-like columns, or give the public domain: `{DRAFT_COMMAND}`, then schema=schema.json.")
    notes = _tail_check(cols, run, n_hat)
    if notes:
        warnings.warn(f"{label} (noisy figures): " + "; ".join(notes) + ". Values outside the domain are clipped. "
                      f"For documented bounds and categories, give a schema (`{DRAFT_COMMAND}` drafts one).",
                      UserWarning, stacklevel=3)
    return TableSchema(tuple(spec_of(c, run.plan, n_hat) for c in cols))


def drop_unreleased_categories(X: pd.DataFrame, schema: TableSchema) -> pd.DataFrame:
    """Fit ``X`` into a DP-estimated domain, silently, by a public rule applied to each value on its own.

    Every value is read by its own form (:func:`~._domain_kinds.parse_column`),
    as the kinds were counted: values of another class than the column's kind
    become missing values (then the column's ``fill`` when it is not nullable,
    in ``schema.validate``); categories the estimate did not release become
    ``"(other)"`` when the schema has that category, else missing; decimals
    in an integer column are rounded; numbers and dates are clipped to the
    estimated bounds. No message says which columns were affected or how much:
    that is private.
    """
    out = X.copy()
    for spec in schema.columns:
        out[spec.name] = _fit_column(X[spec.name], spec)
    return out


def _numeric_categories(categories: tuple) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
               for v in categories)


def _fit_column(col: pd.Series, spec) -> pd.Series:
    """One column in its estimated kind (see :func:`drop_unreleased_categories`)."""
    p = parse_column(col)
    if spec.kind in ("continuous", "integer"):
        v = p.numbers if spec.kind == "continuous" else np.round(p.numbers)
        return pd.Series(np.clip(v, spec.lower, spec.upper), index=col.index)
    if spec.kind == "datetime":
        lo, hi = ((pd.Timestamp(b) - pd.Timestamp("1970-01-01")).total_seconds() for b in (spec.lower, spec.upper))
        return pd.Series(pd.to_datetime(np.clip(p.seconds, lo, hi), unit="s"), index=col.index)
    if spec.kind == "boolean":
        return pd.Series(np.array([np.nan, False, True], dtype=object)[np.nan_to_num(p.truth, nan=-1).astype(int) + 1],
                         index=col.index)
    if _numeric_categories(spec.categories):  # integer codes: read as numbers, as they were counted
        values = pd.Series([int(v) if v.is_integer() else v for v in p.numbers.tolist()], index=col.index,
                           dtype=object)
    else:
        values = col.astype(object).where(p.classes != MISSING_CLASS, np.nan)
    unknown = values.notna() & ~values.isin(list(spec.categories))
    return values.where(~unknown, OTHER if OTHER in spec.categories else np.nan)
