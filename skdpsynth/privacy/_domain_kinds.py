"""Column kinds decided from a DP answer, never from pandas' dtype inference on the private values.

Without a schema, a column's kind cannot be read from its dtype: pandas decides
the dtype from every value (one "30.5" makes an int column float64, one
"unknown" makes it object, one NaN makes it float64), so the dtype is itself a
statistic of the private data. Instead every value is put into one public class
by its own form, whatever the column's dtype:

``missing``  NaN, None, NaT, an empty string;
``boolean``  a bool, or the text ``True`` / ``False`` (any case);
``integer``  a finite whole number, or text that spells one (``"18"``, ``"-3"``, ``"1e3"``);
``decimal``  a finite number that is not whole, or text that spells one (``"30.5"``);
``date``     a time-zone-naive date or datetime, or ISO 8601 text (``2021-09-01``,
             ``2021-09-01T08:00``, a trailing ``Z`` read as UTC);
``text``     anything else (infinities, dates with an offset, words).

The per-column counts of these classes are released by one Gaussian (or
geometric) mechanism: every person has one value per column, so one person
changes one cell of each column's count by 1 (L1 sensitivity ``d``, L2
``sqrt(d)`` for ``d`` columns). The kind is then post-processing of the noisy
counts (:func:`decide_kind`): the class holding the most people among boolean,
number (integer + decimal), date and text decides; a number column is
continuous when its decimal count is significant (``Z_KIND`` noise sds and
``DECIMAL_SHARE`` of its numbers), else integer. Values of another class than
the column's kind are treated as missing (decimals in an integer column are
rounded): a public rule, applied to each value on its own, and never reported.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["CLASSES", "Parsed", "parse_column", "class_counts", "decide_kind", "Z_KIND", "DECIMAL_SHARE"]

CLASSES = ("missing", "boolean", "integer", "decimal", "date", "text")
MISSING, BOOLEAN, INTEGER, DECIMAL, DATE, TEXT = range(len(CLASSES))
#: noise sds a class (or the decimals of a number column) needs before it can decide a kind
Z_KIND = 4.0
#: a number column with at least this share of decimals (and Z_KIND sds) is continuous
DECIMAL_SHARE = 0.01

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?Z?$")
_BOOL_WORDS = {"true": True, "false": False}
_EPOCH = pd.Timestamp("1970-01-01")


@dataclass
class Parsed:
    """One column's values by class (private: only :func:`class_counts` of it is ever released).

    ``numbers`` holds the value of integer and decimal entries, ``seconds`` of
    dates (since the epoch, naive), ``truth`` of booleans (1.0 / 0.0); NaN
    elsewhere.
    """

    classes: np.ndarray
    numbers: np.ndarray
    seconds: np.ndarray
    truth: np.ndarray

    def values(self, kind: str) -> np.ndarray:
        """The column's values in ``kind`` (NaN where a value is of another class: treated as missing)."""
        if kind == "datetime":
            return self.seconds
        if kind == "boolean":
            return self.truth
        return self.numbers


def _seconds(ts: pd.Timestamp) -> float:
    return (ts - _EPOCH).total_seconds()


def _classify(value) -> tuple[int, float]:
    """The class of one value and its number (seconds for a date, 1/0 for a boolean)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return BOOLEAN, float(value)
    if isinstance(value, (int, float)):
        if not np.isfinite(value):
            return TEXT, np.nan
        return (INTEGER if float(value).is_integer() else DECIMAL), float(value)
    if isinstance(value, (_dt.date, np.datetime64)):
        ts = pd.Timestamp(value)
        return (DATE, _seconds(ts)) if ts.tzinfo is None else (TEXT, np.nan)
    if not isinstance(value, str):
        return TEXT, np.nan
    s = value.strip()
    if not s:
        return MISSING, np.nan
    if s.lower() in _BOOL_WORDS:
        return BOOLEAN, float(_BOOL_WORDS[s.lower()])
    if _NUMBER.match(s):
        x = float(s)
        if np.isfinite(x):
            return (INTEGER if x.is_integer() else DECIMAL), x
        return TEXT, np.nan
    if _ISO.match(s):
        try:
            ts = pd.Timestamp(s.rstrip("Z"))
        except (ValueError, OverflowError):
            return TEXT, np.nan
        return DATE, _seconds(ts)
    return TEXT, np.nan


def _typed(col: pd.Series) -> tuple[np.ndarray, np.ndarray] | None:
    """Classes and numbers of a NumPy bool / number / naive datetime column, vectorised (None for others)."""
    dt = col.dtype
    isna = col.isna().to_numpy()
    if pd.api.types.is_bool_dtype(dt):
        return np.where(isna, MISSING, BOOLEAN), col.astype(float).to_numpy(dtype=float, na_value=np.nan)
    if pd.api.types.is_datetime64_any_dtype(dt):  # a time zone is refused before this (check_time_zones)
        secs = (col - _EPOCH).dt.total_seconds().to_numpy(dtype=float, na_value=np.nan)
        return np.where(isna, MISSING, DATE), secs
    if pd.api.types.is_numeric_dtype(dt):
        v = col.to_numpy(dtype=float, na_value=np.nan)
        finite = np.isfinite(v)
        cls = np.where(isna, MISSING, np.where(~finite, TEXT, np.where(v == np.round(v), INTEGER, DECIMAL)))
        return cls, np.where(finite, v, np.nan)
    return None


def parse_column(col: pd.Series) -> Parsed:
    """Every value's class and value, by its own form (each distinct object classified once)."""
    typed = _typed(col)
    if typed is None:
        codes, uniq = pd.factorize(col.to_numpy(dtype=object), use_na_sentinel=True)
        found = [_classify(v) for v in uniq]
        cls_u = np.array([c for c, _ in found] + [MISSING], dtype=np.int64)
        val_u = np.array([x for _, x in found] + [np.nan], dtype=float)
        classes, values = cls_u[codes], val_u[codes]
    else:
        classes, values = typed
    classes = np.asarray(classes, dtype=np.int64)
    pick = lambda *keep: np.where(np.isin(classes, keep), values, np.nan)  # noqa: E731
    return Parsed(classes, pick(INTEGER, DECIMAL), pick(DATE), pick(BOOLEAN))


def class_counts(parsed: Parsed) -> np.ndarray:
    """People per class (one cell per person: the column's part of the kinds histogram)."""
    return np.bincount(parsed.classes, minlength=len(CLASSES))


def decide_kind(noisy: np.ndarray, sd: float) -> str:
    """A column's kind from its noisy class counts (post-processing; see the module docstring).

    Returns ``"categorical"`` when no class stands out of the noise (the
    estimate then finds nothing for the column and says so, from DP answers).
    """
    m = np.clip(np.asarray(noisy, dtype=float), 0, None)
    mass = {"boolean": m[BOOLEAN], "number": m[INTEGER] + m[DECIMAL], "datetime": m[DATE], "categorical": m[TEXT]}
    best = max(mass, key=mass.get)  # ties: the first in this order
    if mass[best] < Z_KIND * sd or best == "categorical":
        return "categorical"
    if best != "number":
        return best
    decimals = m[DECIMAL] >= max(Z_KIND * sd, DECIMAL_SHARE * mass["number"])
    return "continuous" if decimals else "integer"
