"""One column's public description (:class:`ColumnSpec`) and its JSON form.

Kept apart from :mod:`skdpsynth.schema` so that the column checks (:mod:`skdpsynth._schema_columns`) can name the type
without importing the schema module that uses them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from skdpsynth._codebook import codes_entry
from skdpsynth.exceptions import SchemaError

__all__ = ["ColumnSpec", "KINDS", "column_from_dict"]

KINDS = ("continuous", "integer", "categorical", "boolean", "datetime")
_NUMERIC = ("continuous", "integer", "datetime")


def _to_timestamp(value: Any, name: str) -> pd.Timestamp:
    try:
        out = pd.Timestamp(value)
    except (ValueError, TypeError) as exc:
        raise SchemaError(f"column {name!r}: bound {value!r} is not a date/time.") from exc
    if out is pd.NaT:
        raise SchemaError(f"column {name!r}: bound {value!r} is not a date/time.")
    return out


def _to_number(value: Any, name: str, key: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise SchemaError(f"column {name!r}: {key!r} must be a number, got {value!r}.")
    return float(value)


@dataclass(frozen=True)
class ColumnSpec:
    """The public description of one column.

    Parameters
    ----------
    name : str
        Column name.
    kind : {"continuous", "integer", "categorical", "boolean", "datetime"}
        How values are modelled.
    lower, upper : float, int or pandas.Timestamp, optional
        Public bounds of numeric and datetime columns (required for those kinds).
        Values outside are clipped into ``[lower, upper]`` before any statistic.
    categories : tuple, optional
        Public category list of a categorical column (required for that kind).
        Booleans always have ``(False, True)``.
    nullable : bool, default=True
        Whether the column may be missing. Missingness is then one more cell of
        the column's histogram, so its frequency is noised like any other value.
    fill : optional
        For a column that is not nullable: the value written in place of a
        missing value (instead of an error). The DP domain estimate sets it to
        the column's noisy median or mode, for the few missing values the noise
        cannot tell from none. Must lie in the column's domain.
    """

    name: str
    kind: str
    lower: Any = None
    upper: Any = None
    categories: tuple | None = None
    nullable: bool = True
    fill: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SchemaError(f"column names must be non-empty strings, got {self.name!r}.")
        if self.kind not in KINDS:
            raise SchemaError(f"column {self.name!r}: kind {self.kind!r} is not one of {KINDS}.")
        if not isinstance(self.nullable, (bool, np.bool_)):
            raise SchemaError(f"column {self.name!r}: 'nullable' must be true or false, got {self.nullable!r}.")
        if self.kind == "boolean":
            object.__setattr__(self, "categories", (False, True))
        if self.kind == "categorical":
            if not self.categories or isinstance(self.categories, (str, bytes, Mapping)):
                raise SchemaError(f"column {self.name!r}: a categorical column needs a non-empty 'categories' list "
                                  f"(got {self.categories!r}).")
            cats = tuple(self.categories)
            dup = sorted({repr(c) for c in cats if cats.count(c) > 1})
            if dup:
                raise SchemaError(f"column {self.name!r}: categories contain duplicates ({', '.join(dup)}).")
            object.__setattr__(self, "categories", cats)
        if self.kind in _NUMERIC:
            if self.lower is None or self.upper is None:
                raise SchemaError(
                    f"column {self.name!r}: a {self.kind} column needs public 'lower' and 'upper' bounds "
                    "(from the codebook), or leave the schema out to estimate them under DP."
                )
            if self.kind == "datetime":
                lo, hi = _to_timestamp(self.lower, self.name), _to_timestamp(self.upper, self.name)
            else:
                lo, hi = _to_number(self.lower, self.name, "lower"), _to_number(self.upper, self.name, "upper")
                if not (math.isfinite(lo) and math.isfinite(hi)):
                    raise SchemaError(f"column {self.name!r}: bounds must be finite.")
                if self.kind == "integer":
                    lo, hi = float(math.ceil(lo)), float(math.floor(hi))
            if lo > hi:
                raise SchemaError(f"column {self.name!r}: lower bound {lo} exceeds upper bound {hi}.")
            object.__setattr__(self, "lower", lo)
            object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "nullable", bool(self.nullable))
        if self.fill is not None:
            object.__setattr__(self, "fill", self._checked_fill(self.fill))

    def _checked_fill(self, fill: Any) -> Any:
        if self.kind in ("categorical", "boolean"):
            if fill not in self.categories:
                raise SchemaError(f"column {self.name!r}: 'fill' {fill!r} is not one of its categories.")
            return fill
        value = _to_timestamp(fill, self.name) if self.kind == "datetime" else _to_number(fill, self.name, "fill")
        if not self.lower <= value <= self.upper:
            raise SchemaError(f"column {self.name!r}: 'fill' {fill!r} is outside [{self.lower}, {self.upper}].")
        return value

    @classmethod
    def from_codes(cls, name: str, codes: Mapping | Iterable, *, nullable: bool = False) -> ColumnSpec:
        """A categorical column from a code table ``{code: meaning}`` (the codes are the categories) or a list."""
        return column_from_dict(codes_entry(name, codes, nullable=nullable))

    @property
    def numeric_bounds(self) -> tuple[float, float]:
        """Bounds as floats (datetimes in seconds since the epoch)."""
        if self.kind == "datetime":
            return self.lower.value / 1e9, self.upper.value / 1e9
        return float(self.lower), float(self.upper)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly description."""
        d = {k: v for k, v in asdict(self).items() if v is not None and k != "name"}
        if self.kind == "datetime":
            d["lower"], d["upper"] = self.lower.isoformat(), self.upper.isoformat()
            if self.fill is not None:
                d["fill"] = self.fill.isoformat()
        if isinstance(d.get("fill"), np.generic):
            d["fill"] = d["fill"].item()
        if self.kind == "boolean":
            d.pop("categories", None)
        if "categories" in d:
            d["categories"] = [c.item() if isinstance(c, np.generic) else c for c in d["categories"]]
        return d



_KEYS = ("name", "kind", "lower", "upper", "categories", "nullable", "fill")
_NUMERIC_KEYS = {"lower", "upper"}


def column_from_dict(item: dict) -> ColumnSpec:
    """One column of a schema dict (e.g. an edited draft): every mistake is an error naming the column and field."""
    name = item.get("name")
    unknown = set(item) - set(_KEYS)
    if unknown:
        raise SchemaError(f"column {name!r}: unknown schema keys {sorted(unknown)} (allowed: {list(_KEYS[1:])}).")
    if "kind" not in item:
        raise SchemaError(f"column {name!r}: missing 'kind' (one of {KINDS}).")
    kind = item["kind"]
    if kind in ("categorical", "boolean") and _NUMERIC_KEYS & set(item):
        raise SchemaError(f"column {name!r}: 'lower'/'upper' apply to numeric and datetime kinds, not {kind!r}; "
                          "remove them (or change the kind).")
    if kind in _NUMERIC and "categories" in item:
        raise SchemaError(f"column {name!r}: 'categories' apply to categorical columns, not {kind!r}; remove them "
                          "(or change the kind to 'categorical').")
    if "categories" in item and not isinstance(item["categories"], (list, tuple)):
        raise SchemaError(f"column {name!r}: 'categories' must be a list, got {item['categories']!r}.")
    return ColumnSpec(**item)

