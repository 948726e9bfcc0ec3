"""Public pre-training rows for CAPS' M1: given rows, a simulator the caller passes, or a data-free surrogate.

Nothing here reads private data: the rows come from ``public_data`` (a table,
or a callable that simulates one) or, when it is None, from independent uniform
draws over the public schema (docs/caps.md). The simulator is a parameter so
that the synthesizers do not depend on :mod:`skdpsynth.datasets`; e.g.
``public_data=functools.partial(make_learning_habits, n_weeks=17)``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from skdpsynth._grid import seconds_to_datetime
from skdpsynth.exceptions import SchemaError
from skdpsynth.schema import TableSchema

__all__ = ["check_public_frame", "public_rows", "source_name", "uniform_surrogate"]

#: ``pretrain_source_`` when no public data is given
UNIFORM = "surrogate: independent uniform draws from the schema"


def source_name(simulator: Callable) -> str:
    """``"surrogate: <name>"`` of a simulator (the wrapped function of a ``functools.partial``)."""
    while isinstance(simulator, functools.partial):
        simulator = simulator.func
    return "surrogate: " + getattr(simulator, "__name__", type(simulator).__name__)


def check_public_frame(pub: pd.DataFrame, features: list[str], schema: TableSchema | None, *, target: str,
                       what: str = "public_data") -> pd.DataFrame:
    """The feature columns of public rows, checked against the private feature schema (raises SchemaError)."""
    cols = [c for c in pub.columns if c != target]
    if cols != list(features):
        raise SchemaError(
            f"{what} has columns {cols[:8]}... but the private features are {list(features)[:8]}...: "
            "the public data must share the private data's feature schema (same columns, same order).")
    if len(pub) < 2:
        raise SchemaError(f"{what} needs at least two rows.")
    if schema is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                schema.select(features).validate(pub[features], clip=False)
        except SchemaError as exc:
            raise SchemaError(f"{what} does not match the feature schema: {exc}") from exc
    return pub[list(features)]


def _as_frame(out: Any, what: str) -> pd.DataFrame:
    """A simulator's output: a DataFrame, or a scikit-learn style Bunch with a ``data`` DataFrame."""
    if isinstance(out, pd.DataFrame):
        return out
    data = getattr(out, "data", None)
    if isinstance(data, pd.DataFrame):
        return data
    raise SchemaError(f"{what} must return a DataFrame (or a Bunch whose 'data' is one), got {type(out).__name__}.")


def uniform_surrogate(schema: TableSchema, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` rows drawn independently and uniformly from each column's public domain."""
    cols = {}
    for spec in schema.columns:
        u = rng.random(n)
        if spec.kind in ("categorical", "boolean"):
            cats = np.array(spec.categories, dtype=object)
            cols[spec.name] = cats[np.minimum((u * len(cats)).astype(int), len(cats) - 1)]
            continue
        lo, hi = spec.numeric_bounds
        v = lo + u * (hi - lo)
        if spec.kind == "integer":
            v = np.round(v)
        cols[spec.name] = seconds_to_datetime(v) if spec.kind == "datetime" else v
    return pd.DataFrame(cols)


def public_rows(public_data: pd.DataFrame | Callable | None, schema: TableSchema, n_surrogate: int,
                rng: np.random.Generator, *, target: str) -> tuple[pd.DataFrame, str]:
    """Schema-normalised public feature rows for M1 and where they came from (``pretrain_source_``).

    Parameters
    ----------
    public_data : DataFrame, callable or None
        Public rows; or a simulator called as ``public_data(n_surrogate,
        random_state=seed)``; or None for :func:`uniform_surrogate`.
    schema : TableSchema
        Public feature schema.
    n_surrogate : int
        Rows to simulate.
    rng : numpy.random.Generator
        Seeds the simulator or the uniform draws (governed by ``random_state``).
    target : str
        The label column, dropped from public rows that carry it.

    Returns
    -------
    (DataFrame, str)
    """
    features = list(schema.names)
    if public_data is None:
        return schema.validate(uniform_surrogate(schema, n_surrogate, rng)), UNIFORM
    if isinstance(public_data, pd.DataFrame):
        frame, source = public_data, "public_data"
    else:
        source = source_name(public_data)
        frame = _as_frame(public_data(n_surrogate, random_state=int(rng.integers(0, 2**31 - 1))), source)
        frame = check_public_frame(frame, features, schema, target=target, what=f"public_data ({source})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return schema.validate(frame[features]), source
