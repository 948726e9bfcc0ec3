"""A draft schema's raw marks: which entries were read from the private rows, and what confirming them takes.

A draft read from the data (:meth:`skdpsynth.TableSchema.draft`) holds each
column's observed minimum and maximum and the categories seen. Exact extremes
and categories only one person has identify people, so each such entry is
marked raw (``"age.bounds"``, ``"course.categories"``) and a schema with raw
marks is never public: :meth:`~skdpsynth.TableSchema.confirm` refuses it until
every mark is gone, each entry replaced (from the codebook) or accepted by
name. Nothing here reads data: the marks name columns and fields only.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from skdpsynth.exceptions import SchemaError

__all__ = ["FIELDS", "raw_marks", "check_marks", "marks_left", "check_accept", "checklist"]

#: the entries a mark can name: a field of the draft and the column kinds that have it
FIELDS = {"bounds": ("continuous", "integer", "datetime"), "categories": ("categorical",)}
_WHY = ("exact extremes and categories that only one person has identify people, so a schema holding them "
        "must not be called public by accident")


def raw_marks(columns: Iterable[Any]) -> frozenset[str]:
    """The mark of every entry a draft read from the data: each column's bounds or categories."""
    return frozenset(f"{c.name}.{f}" for c in columns for f, kinds in FIELDS.items() if c.kind in kinds)


def _split(mark: str) -> tuple[str, str]:
    name, _, what = mark.rpartition(".")
    return name, what


def check_marks(marks: Any, columns: Sequence[Any]) -> frozenset[str]:
    """``marks`` as a frozenset; each must name a column of the schema and a field its kind has."""
    if isinstance(marks, (str, bytes, Mapping)) or not isinstance(marks, Iterable):
        raise SchemaError(f"'raw' must be a list of entries such as \"age.bounds\", got {marks!r}.")
    kinds = {c.name: c.kind for c in columns}
    out = set()
    for mark in marks:
        name, what = _split(mark) if isinstance(mark, str) else ("", "")
        if kinds.get(name) not in FIELDS.get(what, ()):
            raise SchemaError(f"'raw' entry {mark!r} does not name a column's bounds (numeric and datetime columns) "
                              "or categories (categorical columns), e.g. \"age.bounds\"; the schema's columns are "
                              f"{list(kinds)}.")
        out.add(mark)
    return frozenset(out)


def marks_left(marks: frozenset[str], replaced: Collection[str], changes: Mapping[str, Mapping[str, Any]]
               ) -> frozenset[str]:
    """The marks that remain after whole columns ``replaced`` and fields ``changes`` (bounds: both of them)."""
    def kept(mark: str) -> bool:
        name, what = _split(mark)
        if name in replaced:
            return False
        given = set(changes.get(name, ()))
        return not ({"lower", "upper"} <= given if what == "bounds" else "categories" in given)

    return frozenset(m for m in marks if kept(m))


def check_accept(marks: frozenset[str], accept: Iterable[str]) -> None:
    """Refuse to confirm while a raw entry is neither replaced nor accepted by name (say why and how)."""
    accept = [accept] if isinstance(accept, str) else list(accept)
    unknown = sorted(set(accept) - marks)
    if unknown:
        raise SchemaError(f"cannot accept {unknown}: not raw entries of this schema (its raw entries: "
                          f"{sorted(marks) or 'none'}).")
    left = sorted(marks - set(accept))
    if left:
        raise SchemaError(
            f"the draft still holds entries read from the data: {left}. They are the observed bounds and the "
            f"categories seen, and {_WHY}. Replace each with the codebook's (with_columns, or edit the file and "
            "remove its mark from \"raw\"), or accept it explicitly, one by one: confirm(accept=[...]) or "
            "'skdpsynth schema confirm FILE --accept " + " --accept ".join(left) + "'.")


def checklist(columns: Iterable[Any], marks: frozenset[str], public: bool) -> list[str]:
    """What to check before a draft may be called public: one line per column, then what confirming takes."""
    lines = []
    for c in columns:
        if c.kind in FIELDS["bounds"]:
            raw = " are the data's exact minimum and maximum (RAW)" if f"{c.name}.bounds" in marks else ""
            what = (f"bounds [{c.lower}, {c.upper}]{raw}: replace them with the documented range (a wider range "
                    "costs nothing)")
        elif c.kind == "categorical":
            raw = " are the values seen in the data (RAW)" if f"{c.name}.categories" in marks else ""
            what = (f"{len(c.categories)} categories{raw}: list every category the codebook documents (integer "
                    "codes too), not only these")
        else:
            what = "nothing to widen"
        missing = ('drafted as "may be missing": set "nullable": false only where the codebook says it never is'
                   if c.nullable else "check that it is never missing")
        lines.append(f"{c.name!r} ({c.kind}): {what}; {missing}.")
    if marks:
        lines.append(f"Entries marked raw ({len(marks)}) keep the schema from being public: replace each, or accept "
                     "it by name ('skdpsynth schema confirm FILE --accept age.bounds ...', or "
                     f"confirm(accept=[...])); {_WHY}.")
    elif not public:
        lines.append("When every column is checked, confirm it ('skdpsynth schema confirm FILE', or confirm()); "
                     "until then a fit with it is recorded as not end-to-end DP.")
    return lines
