"""From a codebook to column entries: the common forms a dataset's documentation gives a domain in.

* a list of categories (``["Dropout", "Enrolled", "Graduate"]``);
* an integer code table (``{1: "single", 2: "married", ...}``, as UCI's variable
  tables give): the codes are the categories, the labels documentation;
* a documented range (``("integer", 0, 20)`` or ``{"kind": ..., "lower": ...,
  "upper": ...}``).

Nothing here reads data. The entries are plain dicts in the schema file's form;
:meth:`skdpsynth.TableSchema.from_codebook` and
:meth:`skdpsynth.ColumnSpec.from_codes` check them and build the (public) schema,
so this module needs nothing from :mod:`skdpsynth.schema`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from skdpsynth.exceptions import SchemaError

__all__ = ["codes_entry", "range_entry", "codebook_entries"]


def codes_entry(name: str, codes: Mapping | Iterable, *, nullable: bool = False) -> dict[str, Any]:
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
    dict
        The column's entry (``name``, ``kind``, ``categories``, ``nullable``).
    """
    if isinstance(codes, (str, bytes)):
        raise SchemaError(f"column {name!r}: give the categories as a list or a code table, not a string.")
    cats = tuple(codes.keys()) if isinstance(codes, Mapping) else tuple(codes)
    return {"name": name, "kind": "categorical", "categories": cats, "nullable": nullable}


def range_entry(name: str, documented: Sequence | Mapping, *, nullable: bool = False) -> dict[str, Any]:
    """A numeric or datetime column from a documented range: ``(kind, lower, upper)`` or a dict of those keys."""
    if isinstance(documented, Mapping):
        return {"nullable": nullable, **documented, "name": name}
    if isinstance(documented, (str, bytes)) or len(documented) != 3:
        raise SchemaError(f"column {name!r}: a range is (kind, lower, upper), got {documented!r}.")
    kind, lower, upper = documented
    return {"name": name, "kind": kind, "lower": lower, "upper": upper, "nullable": nullable}


def _nullable(name: str, nullable: bool | Collection[str]) -> bool:
    return bool(nullable) if isinstance(nullable, bool) else name in nullable


def codebook_entries(
    codes: Mapping[str, Mapping | Iterable] | None = None, *, ranges: Mapping[str, Sequence | Mapping] | None = None,
    booleans: Iterable[str] = (), order: Iterable[str] | None = None, nullable: bool | Collection[str] = False,
) -> list[dict[str, Any]]:
    """The column entries of a codebook's code tables, category lists and documented ranges, in table order.

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
    list of dict

    Examples
    --------
    >>> entries = codebook_entries({"Marital status": {1: "single", 2: "married"}},
    ...                            ranges={"Age at enrollment": ("integer", 15, 100)})
    >>> entries[0]["categories"]
    (1, 2)
    """
    entries: dict[str, dict[str, Any]] = {}
    sources = [(n, codes_entry, v) for n, v in (codes or {}).items()]
    sources += [(n, range_entry, v) for n, v in (ranges or {}).items()]
    for name, build, value in sources:
        if name in entries:
            raise SchemaError(f"column {name!r} is described more than once in the codebook.")
        entries[name] = build(name, value, nullable=_nullable(name, nullable))
    for name in booleans:
        if name in entries:
            raise SchemaError(f"column {name!r} is described more than once in the codebook.")
        entries[name] = {"name": name, "kind": "boolean", "nullable": _nullable(name, nullable)}
    names = list(order) if order is not None else list(entries)
    missing = [n for n in names if n not in entries]
    extra = [n for n in entries if n not in names]
    if missing or extra:
        raise SchemaError(f"the codebook does not match the column order: undescribed {missing}, not in the order "
                          f"{extra}.")
    return [entries[n] for n in names]
