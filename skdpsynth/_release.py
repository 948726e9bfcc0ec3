"""Release dtypes: decided by the public schema, never by the data or the draw."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from skdpsynth.exceptions import SchemaError
from skdpsynth.schema import ColumnSpec, TableSchema

__all__ = ["release_dtype", "restore_dtypes"]


def release_dtype(spec: ColumnSpec, declared: Any = None) -> str:
    """The dtype of a released column: decided by the schema, never by the data or the draw.

    The input's dtype is not consulted (pandas decides it from every value: an
    int column with one missing value arrives as float64, with one "unknown" as
    object, so it would let one person change the release), except pandas'
    ``category``, which pandas never infers: a ``declared`` category dtype keeps a
    categorical column ``category`` (with the schema's categories). An integer column
    is ``Int64`` when the schema declares it nullable and ``int64`` otherwise;
    continuous -> float64; boolean -> ``boolean`` / bool; datetime ->
    ``datetime64[ns]`` (naive: zones are refused before a fit); categorical ->
    the integer dtypes when every category is a whole number, float64 when every
    one is a number, else object.
    """
    if spec.kind == "categorical" and str(declared) == "category":
        return "category"
    integer = "Int64" if spec.nullable else "int64"
    if spec.kind == "integer":
        return integer
    if spec.kind == "continuous":
        return "float64"
    if spec.kind == "boolean":
        return "boolean" if spec.nullable else "bool"
    if spec.kind == "datetime":
        return "datetime64[ns]"
    numbers = all(isinstance(c, (int, float, np.integer, np.floating)) and not isinstance(c, (bool, np.bool_))
                  for c in spec.categories)
    if not numbers:
        return "object"
    return integer if all(float(c).is_integer() for c in spec.categories) else "float64"


def restore_dtypes(table: pd.DataFrame, schema: TableSchema, dtypes: dict[str, str] | None = None) -> pd.DataFrame:
    """Cast the schema-normalised columns of ``table`` to their release dtypes (``dtypes``, as decided by
    :func:`release_dtype` at fit, or the schema's)."""
    out = {}
    for name in table.columns:
        col = table[name]
        target = dtypes[name] if dtypes else release_dtype(schema[name])
        try:
            if target == "category":
                out[name] = pd.Categorical(col, categories=list(schema[name].categories))
            elif target.lower().startswith("int"):
                out[name] = pd.to_numeric(col).round().astype(target)  # also integer-coded categories
            elif target.startswith("datetime64"):
                out[name] = pd.to_datetime(col).astype(target)
            else:
                out[name] = col.astype(target)
        except (TypeError, ValueError) as exc:
            raise SchemaError(f"column {name!r}: cannot release as {target} ({exc}).") from exc
    return pd.DataFrame(out)
