"""Normalising one column against its :class:`~skdpsynth.schema.ColumnSpec` (the work of ``TableSchema.validate``).

Messages name what is wrong without counts; a value from the data is shown as an
example only for a draft schema (``public=False``): the messages of a confirmed
schema show nothing of the data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from skdpsynth.utils._validation import distinct_objects

if TYPE_CHECKING:
    from skdpsynth._column_spec import ColumnSpec

__all__ = ["normalise_column", "category_codes"]

_SEE = "to see the values present, draft a schema from the data (`skdpsynth schema draft DATA --raw -o draft.json`)"


_TZ_MESSAGE = ("dates with a time zone or UTC offset, and a schema's dates have none: convert them to one zone and "
               "drop it first (pandas: X[col].dt.tz_convert('UTC').dt.tz_localize(None); or .dt.tz_localize(None) "
               "for local wall-clock time), or write them without an offset")


def _example(values: Any, public: bool) -> str:
    """An example of an offending value, only for a draft: a confirmed schema's messages show no data."""
    return f" (e.g. {values!r})" if not public else ""


def _missing_message() -> str:
    return "missing values but the column is declared nullable=False (give it a 'fill' or make it nullable)"


def _fill_missing(values: pd.Series, isna: np.ndarray, spec: ColumnSpec) -> tuple[pd.Series, str | None]:
    """Missing values of a non-nullable column: its ``fill``, or an error message."""
    if not isna.any() or spec.nullable:
        return values, None
    if spec.fill is None:
        return values, _missing_message()
    out = values.copy()
    out[isna] = spec.fill
    return out, None


def normalise_column(col: pd.Series, spec: ColumnSpec, clip: bool,
                      public: bool = True) -> tuple[pd.Series | None, str | None, np.ndarray | None]:
    """The normalised column, or an error message (no counts; examples only for a draft), and which rows were
    clipped (a bool mask for a bounded column, None for a categorical one or on error)."""
    if spec.kind in ("categorical", "boolean"):
        return _normalise_categorical(col, spec, public)
    if spec.kind in ("continuous", "integer") and isinstance(col.dtype, np.dtype) and col.dtype.kind in "iuf":
        return _normalise_numbers(col, spec, clip)
    isna = col.isna().to_numpy()
    if isna.any() and not spec.nullable and spec.fill is None:
        return None, _missing_message(), None
    if spec.kind in ("continuous", "integer"):
        if pd.api.types.is_bool_dtype(col.dtype):
            num = col.astype(float)
        else:
            num = pd.to_numeric(col, errors="coerce")
        bad = num.isna().to_numpy() & ~isna
        if bad.any():
            return None, f"non-numeric values{_example(col[bad].iloc[0], public)} in a {spec.kind} column", None
        values = num.to_numpy(dtype=float)
        if spec.kind == "integer":
            frac = ~isna & (np.abs(values - np.round(values)) > 1e-9)
            if frac.any():
                return None, "non-whole values in an integer column; declare it continuous", None
        lo, hi = spec.numeric_bounds
        outside = ~isna & ((values < lo) | (values > hi))
        if outside.any() and not clip:
            return None, f"values outside the public bounds [{lo}, {hi}]", None
        out, _ = _fill_missing(pd.Series(np.clip(values, lo, hi), index=col.index), isna, spec)
        return out, None, outside
    try:
        ts = pd.to_datetime(col, errors="raise")
    except (ValueError, TypeError):
        return None, "values that are not dates/times", None
    if getattr(ts.dt, "tz", None) is not None:  # shifting them to naive UTC silently would move every date
        return None, _TZ_MESSAGE, None
    ts = ts.astype("datetime64[ns]")
    outside = ~isna & ((ts < spec.lower) | (ts > spec.upper)).to_numpy()
    if outside.any() and not clip:
        return None, f"values outside [{spec.lower}, {spec.upper}]", None
    out, _ = _fill_missing(ts.clip(spec.lower, spec.upper), isna, spec)
    return out, None, outside


def _normalise_numbers(col: pd.Series, spec: ColumnSpec, clip: bool) -> tuple[pd.Series | None, str | None,
                                                                           np.ndarray | None]:
    """:func:`normalise_column` of a NumPy integer or float column: the same checks and results, fewer passes
    (integers are whole and never missing; NaN fails every comparison)."""
    values = col.to_numpy()
    whole = values.dtype.kind in "iu"
    isna = None if whole else np.isnan(values)
    if isna is not None and not spec.nullable and spec.fill is None and isna.any():
        return None, _missing_message(), None
    if spec.kind == "integer" and not whole:
        frac = np.abs(values - np.round(values)) > 1e-9  # False where missing
        if frac.any():
            return None, "non-whole values in an integer column; declare it continuous", None
    lo, hi = spec.numeric_bounds
    out = values.astype(float)  # a copy, clipped in place
    outside = (out < lo) | (out > hi)
    if not clip and outside.any():
        return None, f"values outside the public bounds [{lo}, {hi}]", None
    np.clip(out, lo, hi, out=out)
    out = pd.Series(out, index=col.index)
    if isna is not None:
        out, _ = _fill_missing(out, isna, spec)
    return out, None, outside


def _normalise_categorical(col: pd.Series, spec: ColumnSpec,
                           public: bool = True) -> tuple[pd.Series | None, str | None, None]:
    codes, uniq_norm, msg = _categorical_parts(col, spec, public)
    if msg:
        return None, msg, None
    # code -1 (missing) picks the trailing NaN, or the fill of a column that is not nullable
    missing = spec.fill if not spec.nullable and spec.fill is not None else np.nan
    values = np.array([*uniq_norm, missing], dtype=object)[codes]
    return pd.Series(values, index=col.index, dtype=object), None, None


def category_codes(col: pd.Series, spec: ColumnSpec, public: bool = True) -> tuple[np.ndarray | None, str | None, None]:
    """A categorical / boolean column checked as :func:`normalise_column` checks it, returned as int64 codes into
    ``spec.categories`` (-1 for missing; the fill's code for a column that is not nullable) instead of objects."""
    fast = _known_category_codes(col, spec)
    if fast is not None:
        return fast, None, None
    codes, uniq_norm, msg = _categorical_parts(col, spec, public)
    if msg:
        return None, msg, None
    index = {c: i for i, c in enumerate(spec.categories)}
    missing = index[spec.fill] if not spec.nullable and spec.fill is not None else -1
    lookup = np.array([*(index[v] for v in uniq_norm), missing], dtype=np.int64)
    return lookup[codes], None, None


def _known_category_codes(col: pd.Series, spec: ColumnSpec) -> np.ndarray | None:
    """Codes by one lookup in the categories' hash table when every value is a category or missing (and missing
    is allowed); None otherwise, for :func:`_categorical_parts` to name the problem."""
    values = col.to_numpy(dtype=object)
    found = distinct_objects(values)
    if found is None:
        return _lookup_categories(values, spec)
    rows, objects = found  # each distinct object looked up once
    codes = _lookup_categories(objects, spec)
    return None if codes is None else codes[rows]


def _lookup_categories(values: np.ndarray, spec: ColumnSpec) -> np.ndarray | None:
    """:func:`_known_category_codes` of an object array."""
    codes = pd.Index(list(spec.categories), dtype=object).get_indexer(values).astype(np.int64)
    unmatched = np.flatnonzero(codes < 0)
    if unmatched.size:
        if not pd.isna(values[unmatched]).all():
            return None  # unknown values (or spellings such as "true" for a boolean)
        if not spec.nullable:
            if spec.fill is None:
                return None
            codes[unmatched] = list(spec.categories).index(spec.fill)
    return codes


def _categorical_parts(col: pd.Series, spec: ColumnSpec, public: bool) -> tuple[np.ndarray, list, str | None]:
    """Codes into the column's distinct values, the values normalised, or an error message."""
    # work on the distinct values only (C-level hashing), then broadcast back
    codes, uniq = pd.factorize(col.to_numpy(dtype=object), use_na_sentinel=True)
    if not spec.nullable and spec.fill is None and (codes == -1).any():
        return codes, [], _missing_message()
    uniq = [v.item() if isinstance(v, np.generic) else v for v in uniq]
    if spec.kind == "boolean":
        # True == 1 and False == 0 hash alike, so the numeric codes are covered too
        mapping = {True: True, False: False, "True": True, "False": False, "true": True, "false": False}
        uniq_norm = [mapping.get(v, "?") for v in uniq]
        bad_codes = [i for i, m in enumerate(uniq_norm) if m == "?"]
        if bad_codes:
            return codes, [], f"values that are not booleans{_example(uniq[bad_codes[0]], public)}"
    else:
        uniq_norm = uniq
        unknown = sorted({repr(v) for v in uniq if v not in set(spec.categories)})
        if unknown:
            shown = (f" ({', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''})" if not public
                     else f"; {_SEE}")
            return codes, [], f"values not among the schema's categories{shown}; add them to 'categories'"
    return codes, uniq_norm, None
