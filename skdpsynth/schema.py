"""The public domain of a table: column kinds, bounds, categories, missingness.

A schema is *public* information: it must come from documentation, a codebook or
domain knowledge, not from the private rows. Synthesizers use it to lay public
grids (histogram cells, category lists) so that no value of the private data leaks
through the domain. When no schema is given, synthesizers estimate one under
differential privacy (:func:`skdpsynth.privacy.estimate_schema`) and charge it to the
budget; :func:`infer_schema` reads it straight from the data and warns that doing so
is not private.
"""

# The table's schema and its JSON form (one column: _column_spec; column checks: _schema_columns).
from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from skdpsynth import _schema_draft
from skdpsynth._codebook import codebook_entries
from skdpsynth._column_spec import KINDS, ColumnSpec, column_from_dict
from skdpsynth._schema_columns import category_codes as _category_codes
from skdpsynth._schema_columns import normalise_column
from skdpsynth.exceptions import PrivacyLeakWarning, SchemaError

__all__ = ["ColumnSpec", "TableSchema", "infer_schema", "resolve_schema", "KINDS"]


@dataclass(frozen=True)
class TableSchema:
    """The public domain of a table: an ordered collection of :class:`ColumnSpec`.

    Parameters
    ----------
    columns : tuple of ColumnSpec
        One spec per column, in table order.
    public : bool, default=True
        ``False`` when the schema was read from private data without DP
        (:func:`infer_schema`) or is a draft not yet confirmed; releases built
        on it are then flagged as not end-to-end DP.
    raw : frozenset of str, default=frozenset()
        Entries of a draft read from the raw data, each named ``"column.bounds"``
        or ``"column.categories"`` (see :meth:`draft`). A schema with raw
        entries is never public: :meth:`confirm` refuses it until each is
        replaced (:meth:`with_columns`) or accepted by name.

    Examples
    --------
    >>> schema = TableSchema.from_dict({
    ...     "age": {"kind": "integer", "lower": 17, "upper": 70},
    ...     "course": {"kind": "categorical", "categories": ["A", "B"]},
    ... })
    >>> schema.names
    ('age', 'course')
    """

    columns: tuple[ColumnSpec, ...]
    public: bool = field(default=True)
    raw: frozenset[str] = field(default=frozenset())

    def __post_init__(self) -> None:
        cols = tuple(self.columns)
        names = [c.name for c in cols]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise SchemaError(f"schema lists columns {dup} more than once.")
        if not cols:
            raise SchemaError("a schema needs at least one column.")
        object.__setattr__(self, "columns", cols)
        object.__setattr__(self, "raw", _schema_draft.check_marks(self.raw, cols))
        if self.public and self.raw:
            raise SchemaError(f'the schema says "public": true but entries {sorted(self.raw)} are marked raw (read '
                              'from the data), so it is not public. Set "public": false, then confirm it: replace '
                              "each entry with the codebook's and remove its mark, or accept each by name "
                              "('skdpsynth schema confirm FILE --accept ENTRY -o schema.json', or "
                              "confirm(accept=[...])).")

    # construction -------------------------------------------------------------
    @classmethod
    def from_dict(cls, spec: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> TableSchema:
        """Build from ``{name: {"kind": ..., ...}}``, ``{"columns": ...}`` or a list of dicts with ``name``."""
        if isinstance(spec, Mapping) and "columns" in spec and not isinstance(spec.get("columns"), Mapping | str) or (
            isinstance(spec, Mapping) and isinstance(spec.get("columns"), Mapping) and "kind" not in spec["columns"]
        ):
            extra = sorted(set(spec) - {"columns", "public", "raw"})
            if extra:
                raise SchemaError(f"unknown schema keys {extra} (a schema file has 'public', 'raw' and 'columns').")
            public = spec.get("public", True)
            if not isinstance(public, bool):
                raise SchemaError(f"'public' must be true or false (JSON, unquoted), got {public!r}.")
            raw = spec.get("raw", ())
            spec = spec["columns"]
        else:
            public, raw = True, ()
        if isinstance(spec, Mapping):
            bad = [k for k, v in spec.items() if not isinstance(v, Mapping)]
            if bad:
                raise SchemaError(f"column {bad[0]!r}: its entry must be an object like {{\"kind\": ...}}.")
            items = [dict(v, name=k) for k, v in spec.items()]
        else:
            items = [dict(v) for v in spec]
        return cls(tuple(column_from_dict(item) for item in items), public=public, raw=raw)

    @classmethod
    def from_codebook(cls, codes: Mapping | None = None, **kwargs: Any) -> TableSchema:
        """A public schema from code tables, category lists and documented ranges (see
        :func:`skdpsynth._codebook.codebook_entries`: ``ranges=``, ``booleans=``, ``order=``, ``nullable=``).

        Examples
        --------
        >>> schema = TableSchema.from_codebook(
        ...     {"Marital status": {1: "single", 2: "married"}, "Target": ["Dropout", "Graduate"]},
        ...     ranges={"Age at enrollment": ("integer", 15, 100)})
        >>> schema["Marital status"].categories
        (1, 2)
        """
        return cls(tuple(column_from_dict(e) for e in codebook_entries(codes, **kwargs)))

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> TableSchema:
        """Read a schema written by :meth:`to_json` (or by hand); errors name the file, line or field."""
        try:
            with open(path, encoding="utf-8") as fh:
                spec = json.load(fh)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"schema file {os.fspath(path)!r} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                              f"column {exc.colno}.") from None
        try:
            return cls.from_dict(spec)
        except SchemaError as exc:
            raise SchemaError(f"schema file {os.fspath(path)!r}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly description (round-trips through :meth:`from_dict`)."""
        raw = {"raw": sorted(self.raw)} if self.raw else {}
        return {"public": self.public, **raw, "columns": {c.name: c.to_dict() for c in self.columns}}

    def to_json(self, path: str | os.PathLike) -> None:
        """Write the schema as JSON."""
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, indent=2, default=str)

    @classmethod
    def draft(cls, X: pd.DataFrame, *, max_categories: int = 50) -> TableSchema:
        """A schema to finish from the codebook: kinds, bounds and categories as read from ``X`` -- NOT private.

        Every bound and category list is the data's own (the observed minimum
        and maximum, the categories seen) and is marked raw in ``raw``
        (``"age.bounds"``, ``"course.categories"``): exact extremes and
        categories only one person has identify people. The draft is not public
        and :meth:`confirm` refuses it until each raw entry is replaced with the
        codebook's (:meth:`with_columns`) or accepted by name. Every column is
        drafted nullable (whether anyone is missing is private; set
        ``nullable`` false where the codebook says so). :meth:`checklist` says
        what to check. For a draft that is safe to keep, estimate it under DP
        (``skdpsynth schema draft DATA --epsilon E``, or
        :func:`skdpsynth.privacy.estimate_schema`).

        Parameters
        ----------
        X : pandas.DataFrame
            The table (private: the draft must not be published as it is).
        max_categories : int, default=50
            As in :func:`infer_schema`.

        Returns
        -------
        TableSchema
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            read = infer_schema(X, max_categories=max_categories)
        return replace(read, columns=tuple(replace(c, nullable=True) for c in read.columns))

    def confirm(self, *, accept: Iterable[str] = ()) -> TableSchema:
        """The same schema marked public: call only once every field is checked against the codebook.

        Parameters
        ----------
        accept : iterable of str
            Raw entries (``"age.bounds"``, ``"course.categories"``) to keep as
            read from the data, each named explicitly. Every raw entry must be
            replaced (:meth:`with_columns`) or accepted here.

        Returns
        -------
        TableSchema

        Raises
        ------
        SchemaError
            A raw entry neither replaced nor accepted (all are named), or an
            accepted name that is not a raw entry.
        """
        _schema_draft.check_accept(self.raw, accept)
        return replace(self, public=True, raw=frozenset())

    def checklist(self) -> list[str]:
        """What to check before a drafted schema may be called public (one line per column, then the file)."""
        return _schema_draft.checklist(self.columns, self.raw, self.public)

    # access -------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        """Column names in order."""
        return tuple(c.name for c in self.columns)

    def __getitem__(self, name: str) -> ColumnSpec:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"column {name!r} is not in the schema; it has {list(self.names)}.")

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __len__(self) -> int:
        return len(self.columns)

    def with_columns(self, *specs: ColumnSpec, changes: Mapping[str, Mapping[str, Any]] | None = None) -> TableSchema:
        """A copy with whole columns replaced by ``specs`` and fields changed, e.g. a draft widened to the codebook:
        ``draft.with_columns(ColumnSpec.from_codes("Course", codes), changes={"age": {"lower": 15, "upper": 99}})``.
        Keeps ``public`` as it is (confirm a draft with :meth:`confirm`); a replaced column, its categories, or both
        its bounds, lose their raw marks."""
        changes = changes or {}
        given = {s.name: s for s in specs}
        unknown = [n for n in [*given, *changes] if n not in self]
        if unknown:
            raise SchemaError(f"columns {unknown} are not in the schema; it has {list(self.names)}.")
        cols = tuple(replace(given.get(c.name, c), **changes.get(c.name, {})) for c in self.columns)
        return replace(self, columns=cols, raw=_schema_draft.marks_left(self.raw, given, changes))

    def select(self, names: Iterable[str]) -> TableSchema:
        """The sub-schema of ``names`` (in that order)."""
        columns = tuple(self[n] for n in names)
        return replace(self, columns=columns, raw=_schema_draft.marks_left(self.raw, set(self.names) - set(names), {}))

    # validation ---------------------------------------------------------------
    def _validate_for_fit(self, X: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
        """:meth:`validate` without the warning: the normalised table and the clipped-row mask of each bounded
        column, for a fit to count through a mechanism."""
        masks: dict[str, np.ndarray] = {}
        return pd.DataFrame(self._normalised_columns(X, clipped=masks), index=X.index), masks

    def validate(self, X: pd.DataFrame, *, clip: bool = True) -> pd.DataFrame:
        """Check ``X`` against the schema and return a normalised copy.

        Numeric and datetime values outside the public bounds are clipped to
        them (a :class:`UserWarning` names the columns; how many is private); clipping is what
        bounds each person's influence, so it is not an error. A synthesizer's
        fit shows no such exact warning: it releases a noisy count of the clipped
        values per column, charged to its budget (``skdpsynth.privacy._clipping``). Everything else
        that does not fit is an error, all columns listed at once.

        Parameters
        ----------
        X : pandas.DataFrame
            The table; must have exactly the schema's columns.
        clip : bool, default=True
            Clip out-of-bounds values; when False they are an error.

        Returns
        -------
        pandas.DataFrame
            Continuous / integer columns as float64, datetimes as datetime64[ns],
            categorical and boolean columns as object; NaN marks missing values.

        Raises
        ------
        SchemaError
            Missing or extra columns, unknown categories, text in numeric
            columns, non-whole values in integer columns, missing values in
            non-nullable columns.
        """
        return pd.DataFrame(self._normalised_columns(X, clip=clip, stacklevel=3), index=X.index)

    def _normalised_columns(self, X: pd.DataFrame, *, clip: bool = True, category_codes: bool = False,
                            stacklevel: int = 2, clipped: dict | None = None) -> dict[str, Any]:
        """:meth:`validate`'s checks, errors and warning, its columns returned one by one (no DataFrame is
        assembled, so no consolidated copy); with ``category_codes`` categorical and boolean columns come as
        int64 codes into their ``categories`` (-1 missing) instead of objects.

        A fit passes ``clipped``: it receives ``{column: mask of clipped rows}`` for every bounded column and no
        warning is shown (whether a column was clipped is private: the fit counts it through a mechanism,
        :mod:`skdpsynth.privacy._clipping`)."""
        missing = [n for n in self.names if n not in X.columns]
        extra = [n for n in X.columns if n not in self.names]
        problems: list[str] = []
        if missing:
            problems.append(f"columns {missing} are in the schema but not in the data")
        if extra:
            problems.append(f"columns {extra} are not in the schema; add them to the schema or drop them")
        if problems:
            raise SchemaError("; ".join(problems) + ".")
        out = {}
        masks = {}
        for spec in self.columns:
            if category_codes and spec.kind in ("categorical", "boolean"):
                values, msg, mask = _category_codes(X[spec.name], spec, self.public)
            else:
                values, msg, mask = normalise_column(X[spec.name], spec, clip, self.public)
            if msg:
                problems.append(f"{spec.name!r}: {msg}")
                continue
            if mask is not None:
                masks[spec.name] = mask
            out[spec.name] = values
        if problems:
            raise SchemaError("data do not match the schema: " + "; ".join(problems) + ".")
        if clipped is not None:
            clipped.update(masks)
            return out
        warn_clipped_columns([name for name, mask in masks.items() if mask.any()], stacklevel=stacklevel)
        return out


def warn_clipped_columns(names: list[str], stacklevel: int = 2) -> None:
    """The data holder's warning (not a fit's): the columns whose values were clipped to the public bounds, by
    name only -- how many is private."""
    if names:
        warnings.warn("values outside the public bounds were clipped to them in columns "
                      + ", ".join(repr(n) for n in names), UserWarning, stacklevel=stacklevel + 1)



def infer_schema(X: pd.DataFrame, *, max_categories: int = 50) -> TableSchema:
    """Read a schema straight from the data -- NOT differentially private.

    Bounds are the observed minimum and maximum, categories the observed values.
    Use it only when the domain is public anyway (then prefer writing the schema
    from the codebook), or for non-private experiments. Emits a
    :class:`~skdpsynth.exceptions.PrivacyLeakWarning` and marks the schema
    ``public=False``, which synthesizers record in their budget log, with every
    bound and category list marked raw (see :meth:`TableSchema.draft`).

    Parameters
    ----------
    X : pandas.DataFrame
        The table.
    max_categories : int, default=50
        Integer columns with at most this many distinct values and text columns
        become categorical; integer columns with more become ``integer``.

    Returns
    -------
    TableSchema
    """
    warnings.warn(
        "infer_schema reads bounds and categories from the private data without noise: the resulting "
        "release is not end-to-end differentially private unless this domain is public.",
        PrivacyLeakWarning,
        stacklevel=2,
    )
    cols = []
    for name in X.columns:
        col = X[name]
        nullable = bool(col.isna().any())
        nonnull = col.dropna()
        if len(nonnull) == 0:
            raise SchemaError(f"column {name!r} is entirely missing; its domain cannot be inferred.")
        if pd.api.types.is_bool_dtype(col.dtype):
            cols.append(ColumnSpec(name, "boolean", nullable=nullable))
        elif pd.api.types.is_datetime64_any_dtype(col.dtype):
            cols.append(ColumnSpec(name, "datetime", nonnull.min(), nonnull.max(), nullable=nullable))
        elif pd.api.types.is_numeric_dtype(col.dtype):
            vals = nonnull.to_numpy(dtype=float)
            whole = bool(np.all(vals == np.round(vals)))
            kind = "integer" if whole else "continuous"
            cols.append(ColumnSpec(name, kind, float(vals.min()), float(vals.max()), nullable=nullable))
        else:
            cats = sorted(pd.unique(nonnull.astype(object)).tolist(), key=str)
            cols.append(ColumnSpec(name, "categorical", categories=tuple(cats), nullable=nullable))
    return TableSchema(tuple(cols), public=False, raw=_schema_draft.raw_marks(cols))


def resolve_schema(schema: Any) -> TableSchema | None:
    """Accept a TableSchema, a dict, or a path to a JSON file (``None`` passes through)."""
    if schema is None or isinstance(schema, TableSchema):
        return schema
    if isinstance(schema, Mapping):
        return TableSchema.from_dict(schema)
    if isinstance(schema, (str, os.PathLike)):
        return TableSchema.from_json(schema)
    raise SchemaError(f"schema must be a TableSchema, a dict or a JSON path; got {type(schema).__name__}.")
