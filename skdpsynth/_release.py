"""Release dtypes: decided by the public schema, never by the data or the draw."""

from __future__ import annotations

import numpy as np
import pandas as pd

from skdpsynth.exceptions import SchemaError
from skdpsynth.schema import ColumnSpec, TableSchema

__all__ = ["release_dtype", "restore_dtypes"]


def release_dtype(dtype: str, spec: ColumnSpec) -> str:
    """The dtype of a released column: decided by the schema, never by the data or the draw.

    An integer column is ``Int64`` when the schema declares it nullable and
    ``int64`` otherwise, whatever pandas made of the input (an int column with
    one missing value arrives as float64): so one missing value neither
    changes the release's dtype nor shows on the fitted estimator. Likewise
    continuous -> float64, boolean -> ``boolean`` / bool, integer-coded
    categories -> the integer dtypes; the input dtype only chooses between
    public representations (``category``, text, a datetime's time zone).
    """
    if dtype == "category":
        return "category"
    integer = "Int64" if spec.nullable else "int64"
    if spec.kind == "integer":
        return integer
    if spec.kind == "continuous":
        return "float64"
    if spec.kind == "boolean":
        return "boolean" if spec.nullable else "bool"
    if spec.kind == "datetime":
        return dtype if dtype.startswith("datetime64") else "datetime64[ns]"
    if dtype.lower().startswith(("int", "uint", "float")):  # numeric category codes
        whole = all(isinstance(c, (int, float, np.integer, np.floating)) and not isinstance(c, bool)
                    and float(c).is_integer() for c in spec.categories)
        return integer if whole else "float64"
    return dtype if dtype in ("object", "string", "str") else "object"


def restore_dtypes(table: pd.DataFrame, dtypes: dict[str, str], schema: TableSchema) -> pd.DataFrame:
    """Cast schema-normalised columns to the release dtypes (:func:`release_dtype`)."""
    out = {}
    for name, dtype in dtypes.items():
        col = table[name]
        spec = schema[name]
        target = release_dtype(dtype, spec)
        try:
            if target == "category":
                out[name] = pd.Categorical(col, categories=list(spec.categories))
            elif target.lower().startswith("int"):
                out[name] = pd.to_numeric(col).round().astype(target)  # also integer-coded categories
            elif target.startswith("datetime64"):
                out[name] = _restore_datetime(col, target)
            else:
                out[name] = col.astype(target)
        except (TypeError, ValueError) as exc:
            raise SchemaError(f"column {name!r}: cannot release as {target} ({exc}).") from exc
    return pd.DataFrame(out)


def _restore_datetime(col: pd.Series, dtype: str) -> pd.Series:
    """Normalised datetimes are naive UTC; a zone in the input dtype is put back."""
    values = pd.to_datetime(col)
    tz = pd.api.types.pandas_dtype(dtype).tz if "," in dtype else None
    if tz is None:
        return values.astype(dtype)
    return values.dt.tz_localize("UTC").dt.tz_convert(tz)
