"""Post-processing of noisy statistics (no access to private data, no budget)."""

from __future__ import annotations

import numpy as np

__all__ = ["project_to_simplex", "normalise_counts", "inverse_variance_mean"]


def project_to_simplex(counts: np.ndarray, total: float | np.ndarray | None = None, *, axis: int = -1) -> np.ndarray:
    """Euclidean projection of noisy counts onto ``{x >= 0, sum(x) = total}`` along ``axis`` ("norm-sub").

    Clipping at zero alone adds the positive part of the noise of every empty
    cell, a bias that grows with the number of cells; projecting subtracts one
    common shift from every cell instead (Wang et al. 2020). ``total`` defaults
    to the (unbiased) noisy total clipped at zero; when a total is not positive
    the counts become zeros.

    Parameters
    ----------
    counts : ndarray
        Noisy counts.
    total : float or ndarray, optional
        Target sum of each slice along ``axis``.
    axis : int, default=-1
        Axis along which each slice is one histogram.

    Returns
    -------
    ndarray of float, same shape as ``counts``
    """
    c = np.moveaxis(np.asarray(counts, dtype=float), axis, -1)
    shape = c.shape
    if c.size == 0:
        return np.moveaxis(c.copy(), -1, axis)
    flat = c.reshape(-1, shape[-1])
    if total is None:
        tot = np.maximum(flat.sum(axis=1), 0.0)
    else:
        tot = np.maximum(np.broadcast_to(np.asarray(total, dtype=float), shape[:-1]).reshape(-1), 0.0)
    u = -np.sort(-flat, axis=1)
    css = np.cumsum(u, axis=1) - tot[:, None]
    ind = np.arange(1, shape[-1] + 1)
    cond = u - css / ind > 0
    last = shape[-1] - 1 - np.argmax(cond[:, ::-1], axis=1)  # last index where cond holds
    theta = css[np.arange(len(flat)), last] / (last + 1)
    out = np.maximum(flat - theta[:, None], 0.0)
    out[tot <= 0] = 0.0
    return np.moveaxis(out.reshape(shape), -1, axis)


def normalise_counts(counts: np.ndarray, *, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Project noisy counts (:func:`project_to_simplex`) and normalise along ``axis``.

    Returns
    -------
    probs : ndarray
        Each slice sums to one, or is all zeros where nothing survived the projection.
    empty : ndarray of bool
        Slices with no mass.
    """
    c = project_to_simplex(counts, axis=axis)
    tot = c.sum(axis=axis, keepdims=True)
    probs = np.where(tot > 0, c / np.where(tot > 0, tot, 1.0), 0.0)
    return probs, np.squeeze(tot <= 0, axis=axis)


def inverse_variance_mean(values, variances) -> tuple[float, float]:
    """The inverse-variance weighted mean of independent noisy estimates of one quantity, and its variance.

    The one copy of the size estimate every synthesizer makes from its released totals (each marginal, histogram
    or count estimates the number of people). Exact estimates (variance 0) win outright: their mean, variance 0.
    Post-processing.

    Parameters
    ----------
    values, variances : array-like of float
        The estimates and their noise variances.

    Returns
    -------
    mean, variance : float
    """
    values = np.asarray(values, dtype=float)
    variances = np.asarray(variances, dtype=float)
    exact = variances <= 0
    if exact.any():
        return float(values[exact].mean()), 0.0
    weights = 1.0 / variances
    return float(np.sum(weights * values) / weights.sum()), float(1.0 / weights.sum())
