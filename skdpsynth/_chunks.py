"""Tables that outgrow one machine: fit from an iterable of chunks or a Dask DataFrame.

A synthesizer whose measurements are functions of *additive* sufficient
statistics (counts, contingency tables) can compute them per chunk or per
partition and merge them, then add its noise once, to the merged statistics:
the release and its privacy accounting are those of a fit on the whole table.
This module is the shared part: recognising chunked input and the map-reduce
over it (locally, or on a Dask cluster through ``dask.delayed`` with a tree
reduction, so only the statistics travel). A synthesizer supplies the
per-chunk function and the merge (NPGC: :mod:`skdpsynth.privacy._copula_statistics`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import pandas as pd

__all__ = ["is_chunked", "is_dask_frame", "iter_frames", "leading_rows", "map_reduce"]

S = TypeVar("S")

#: statistics merged per task of the tree reduction on a Dask cluster
FAN_IN = 8


def is_dask_frame(X: Any) -> bool:
    """Whether ``X`` is a Dask DataFrame (checked without importing Dask)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "to_delayed") and hasattr(X, "npartitions")


def is_chunked(X: Any) -> bool:
    """Whether ``X`` is chunked input: a Dask DataFrame, an iterator of DataFrames, or a list / tuple of them.

    A list of rows (array-like) is not chunked input; a generator or other
    iterator is (its items must be DataFrames).
    """
    if is_dask_frame(X):
        return True
    if isinstance(X, (list, tuple)):
        return len(X) > 0 and all(isinstance(c, pd.DataFrame) for c in X)
    return isinstance(X, Iterator)


def iter_frames(X: Any) -> Iterator[pd.DataFrame]:
    """The chunks of chunked input as pandas DataFrames (a Dask DataFrame's partitions one at a time)."""
    if is_dask_frame(X):
        for part in X.to_delayed():
            yield part.compute()
        return
    for chunk in X:
        if not isinstance(chunk, pd.DataFrame):
            raise TypeError(f"chunked input must yield pandas DataFrames, got {type(chunk).__name__}.")
        yield chunk


def leading_rows(X: Any, min_rows: int) -> tuple[pd.DataFrame, Iterable[pd.DataFrame] | None]:
    """The first chunks joined until they hold ``min_rows`` rows, and the rest (None when nothing is left).

    For a Dask DataFrame the head is read without consuming it (the rest is the
    whole frame again, and the head is only for checking columns and dtypes).
    """
    if is_dask_frame(X):
        return X.head(min_rows, npartitions=-1), None
    it = iter_frames(X)
    head: list[pd.DataFrame] = []
    rows = 0
    for chunk in it:
        head.append(chunk)
        rows += len(chunk)
        if rows >= min_rows:
            break
    if not head:
        raise ValueError("chunked input yielded no chunks.")
    joined = head[0] if len(head) == 1 else pd.concat(head, ignore_index=True)
    return joined, it


def map_reduce(X: Any, statistics: Callable[[pd.DataFrame], S], merge: Callable[[S, S], S], *,
               first: S | None = None, rest: Iterable[pd.DataFrame] | None = None) -> S:
    """``merge`` of ``statistics(chunk)`` over every chunk of ``X``.

    Locally (iterables) one chunk at a time, so memory holds one chunk and the
    running statistics. A Dask DataFrame is reduced where it lives: one
    ``statistics`` task per partition and a tree of ``merge`` tasks
    (:data:`FAN_IN` at a time), computed with the active scheduler (a
    ``distributed.Client`` when one is running); only statistics reach the
    caller.

    Parameters
    ----------
    X : chunked input
        See :func:`is_chunked`.
    statistics : callable
        ``DataFrame -> statistics`` (module-level, picklable, for a cluster).
    merge : callable
        ``(statistics, statistics) -> statistics``, associative.
    first : statistics, optional
        Already computed statistics to start from (e.g. of the leading chunks).
    rest : iterable of DataFrame, optional
        The chunks still to read, when ``first`` covers the leading ones (iterables only).
    """
    if is_dask_frame(X):
        import dask

        level = [dask.delayed(statistics)(part) for part in X.to_delayed()]
        while len(level) > 1:
            level = [dask.delayed(_merge_all)(merge, *level[i:i + FAN_IN]) for i in range(0, len(level), FAN_IN)]
        (out,) = dask.compute(level[0])
        return out if first is None else merge(first, out)
    acc = first
    for chunk in (iter_frames(X) if rest is None else rest):
        stats = statistics(chunk)
        acc = stats if acc is None else merge(acc, stats)
    if acc is None:
        raise ValueError("chunked input yielded no chunks.")
    return acc


def _merge_all(merge: Callable[[S, S], S], *parts: S) -> S:
    out = parts[0]
    for p in parts[1:]:
        out = merge(out, p)
    return out


def chunks_of(frame: pd.DataFrame, rows: int) -> Iterator[pd.DataFrame]:
    """``frame`` as consecutive chunks of at most ``rows`` rows (views, no copy)."""
    for start in itertools.count(0, rows):
        if start >= len(frame):
            return
        yield frame.iloc[start:start + rows]
