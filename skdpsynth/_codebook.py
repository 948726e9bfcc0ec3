"""From a codebook to a schema: the common forms a dataset's documentation gives a domain in.

* a list of categories (``["Dropout", "Enrolled", "Graduate"]``);
* an integer code table (``{1: "single", 2: "married", ...}``, as UCI's variable
  tables give): the codes are the categories, the labels documentation;
* a documented range (``("integer", 0, 20)`` or ``{"kind": ..., "lower": ...,
  "upper": ...}``).

Nothing here reads data: these build :class:`~skdpsynth.schema.ColumnSpec` and
:class:`~skdpsynth.schema.TableSchema` from what the codebook says, so the
result is public (``public=True``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from skdpsynth.exceptions import SchemaError
from skdpsynth.schema import ColumnSpec, TableSchema

__all__ = ["codes_column", "range_column", "schema_from_codebook"]


def codes_column(name: str, codes: Mapping | Iterable, *, nullable: bool = False) -> ColumnSpec:
    """A categorical column from a code table (``{code: label}``, codes kept) or a list of categories.

    Parameters
    ----------
    name : str
        Column name.
    codes : mapping or iterable
        ``{code: meaning}`` (the codes become the categories, in the table's
        order) or the categories themselves.
    nullable : bool, default=False
        Whether the column may be missing.

    Returns
    -------
    ColumnSpec
    """
    if isinstance(codes, (str, bytes)):
        raise SchemaError(f"column {name!r}: give the categories as a list or a code table, not a string.")
    cats = tuple(codes.keys()) if isinstance(codes, Mapping) else tuple(codes)
    return ColumnSpec(name, "categorical", categories=cats, nullable=nullable)


def range_column(name: str, documented: Sequence | Mapping, *, nullable: bool = False) -> ColumnSpec:
    """A numeric or datetime column from a documented range: ``(kind, lower, upper)`` or a dict of those keys."""
    if isinstance(documented, Mapping):
        return ColumnSpec(name, **{"nullable": nullable, **documented})
    if len(documented) != 3:
        raise SchemaError(f"column {name!r}: a range is (kind, lower, upper), got {documented!r}.")
    kind, lower, upper = documented
    return ColumnSpec(name, kind, lower, upper, nullable=nullable)


def _nullable(name: str, nullable: bool | Collection[str]) -> bool:
    return bool(nullable) if isinstance(nullable, bool) else name in nullable


def schema_from_codebook(
    codes: Mapping[str, Mapping | Iterable] | None = None, *, ranges: Mapping[str, Sequence | Mapping] | None = None,
    booleans: Iterable[str] = (), order: Iterable[str] | None = None, nullable: bool | Collection[str] = False,
) -> TableSchema:
    """A public schema from a codebook's code tables, category lists and documented ranges.

    Parameters
    ----------
    codes : dict, optional
        ``{column: {code: meaning}}`` or ``{column: [categories]}``.
    ranges : dict, optional
        ``{column: (kind, lower, upper)}`` (or a dict with those keys).
    booleans : iterable of str
        Boolean columns (their domain needs nothing more).
    order : iterable of str, optional
        Column order (e.g. the table's columns); by default codes, then ranges,
        then booleans. Every column must be described exactly once.
    nullable : bool or collection of str, default=False
        Whether columns may be missing: one answer for all, or the names of
        those that may.

    Returns
    -------
    TableSchema

    Examples
    --------
    >>> schema = schema_from_codebook(
    ...     {"Marital status": {1: "single", 2: "married"}, "Target": ["Dropout", "Graduate"]},
    ...     ranges={"Age at enrollment": ("integer", 15, 100)})
    >>> schema["Marital status"].categories
    (1, 2)
    """
    specs: dict[str, ColumnSpec] = {}
    sources = [(n, "codes", v) for n, v in (codes or {}).items()] + [(n, "range", v) for n, v in
                                                                       (ranges or {}).items()]
    sources += [(n, "boolean", None) for n in booleans]
    for name, what, value in sources:
        if name in specs:
            raise SchemaError(f"column {name!r} is described more than once in the codebook.")
        null = _nullable(name, nullable)
        if what == "codes":
            specs[name] = codes_column(name, value, nullable=null)
        elif what == "range":
            specs[name] = range_column(name, value, nullable=null)
        else:
            specs[name] = ColumnSpec(name, "boolean", nullable=null)
    names = list(order) if order is not None else list(specs)
    missing = [n for n in names if n not in specs]
    extra = [n for n in specs if n not in names]
    if missing or extra:
        raise SchemaError(f"the codebook does not match the column order: undescribed {missing}, not in the order "
                          f"{extra}.")
    return TableSchema(tuple(specs[n] for n in names))


def _apply(schema: TableSchema, specs: Sequence[ColumnSpec], changes: Mapping[str, Mapping[str, Any]]) -> TableSchema:
    """``schema`` with whole columns replaced by ``specs`` and fields of others changed (used by ``TableSchema``)."""
    from dataclasses import replace

    given = {s.name: s for s in specs}
    unknown = [n for n in [*given, *changes] if n not in schema]
    if unknown:
        raise SchemaError(f"columns {unknown} are not in the schema; it has {list(schema.names)}.")
    cols = []
    for c in schema.columns:
        spec = given.get(c.name, c)
        if c.name in changes:
            spec = replace(spec, **changes[c.name])
        cols.append(spec)
    return replace(schema, columns=tuple(cols))
