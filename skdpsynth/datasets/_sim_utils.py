"""Shared helpers of the simulators: argument validation, categorical draws and long-table indexing."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from skdpsynth.schema import ColumnSpec


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} ({value!r}).")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}.")
    return int(value)


def _check_float(value, name: str, lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} ({value!r}).")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value}.")
    bad_lo = v <= lo if lo_open else v < lo
    bad_hi = v >= hi if hi_open else v > hi
    if bad_lo or bad_hi:
        lb = "(" if lo_open else "["
        rb = ")" if hi_open else "]"
        raise ValueError(f"{name} must be in {lb}{lo}, {hi}{rb}, got {value}.")
    return v


def _check_labels(values, name: str, min_count: int) -> tuple:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence (list or tuple) of labels, got {values!r}.")
    vals = tuple(values)
    if len(vals) < min_count:
        raise ValueError(f"{name} needs at least {min_count} entries, got {len(vals)}.")
    if len(set(vals)) != len(vals):
        raise ValueError(f"{name} contains duplicates: {vals!r}.")
    return vals


def _check_weights(weights, n: int, name: str) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"{name} must have {n} entries, got shape {w.shape}.")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"{name} must be finite and strictly positive, got {w.tolist()}.")
    return w / w.sum()


def _categorical_draw(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One draw per row of a (n, k) probability matrix (vectorised inverse CDF)."""
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random(probs.shape[:-1] + (1,)) * cdf[..., -1:]
    return np.minimum((u > cdf).sum(axis=-1), probs.shape[-1] - 1)


def _long_index(lengths: np.ndarray, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mask of the used cells of an (n, hi) sequence array, and the learner and position of each used cell."""
    n = len(lengths)
    mask = np.arange(hi)[None, :] < lengths[:, None]
    learner = np.broadcast_to(np.arange(n)[:, None], (n, hi))[mask]
    position = np.broadcast_to(np.arange(hi)[None, :], (n, hi))[mask]
    return mask, learner, position


def _sequence_id_columns(n: int, hi: int) -> tuple[ColumnSpec, ColumnSpec]:
    """ColumnSpecs of the ``learner_id`` and ``position`` columns of a long sequence table."""
    return (
        ColumnSpec("learner_id", "integer", lower=0, upper=max(n - 1, 0), nullable=False),
        ColumnSpec("position", "integer", lower=0, upper=hi - 1, nullable=False),
    )
