"""Distribution fidelity: AJS, the mean class-conditional Jensen-Shannon divergence (papers/caps.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from skdpsynth.metrics._encoding import _as_float, _category_key, check_same_columns, column_kinds

__all__ = ["ajs", "js_divergence"]


def js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence (base 2, in [0, 1]) between two histograms (normalised here)."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if p.sum() <= 0 or q.sum() <= 0:
        return 1.0 if p.sum() != q.sum() else 0.0
    p, q = p / p.sum(), q / q.sum()
    m = 0.5 * (p + q)

    def kl(a: np.ndarray) -> float:
        nz = a > 0
        return float(np.sum(a[nz] * np.log2(a[nz] / m[nz])))

    return float(min(1.0, max(0.0, 0.5 * kl(p) + 0.5 * kl(q))))


def ajs(
    real: pd.DataFrame, synthetic: pd.DataFrame, *, target: str, schema: Any = None, n_bins: int = 10,
    return_details: bool = False,
) -> float | dict[str, Any]:
    """Mean over classes and features of the JS divergence between class-conditional distributions.

    For every real class ``c`` and feature ``f`` the histogram of ``f`` among
    real rows with target ``c`` is compared with the same among synthetic rows
    (numeric features on ``n_bins`` equal-width bins over the schema bounds or
    the real range, missing as one more bin; categorical by value). A class the
    synthetic data lack contributes the maximum, 1. Lower is better.

    Returns
    -------
    float, or dict with ``ajs`` and ``per_class`` / ``per_feature`` means when ``return_details``.
    """
    if target not in real.columns:
        raise ValueError(f"target column {target!r} is not in real.")
    synthetic = check_same_columns(real, synthetic, names=("real", "synthetic"))
    kinds = column_kinds(real, schema)
    features = [c for c in real.columns if c != target]
    ry, sy = _category_key(real[target]), _category_key(synthetic[target])
    classes = [c for c in np.unique(ry) if c != "<NA>"]
    codes = {}
    for f in features:
        if kinds[f] == "categorical":
            keys = np.concatenate([_category_key(real[f]), _category_key(synthetic[f])])
            _, inv = np.unique(keys, return_inverse=True)
            codes[f] = (inv[:len(real)], inv[len(real):], int(inv.max()) + 1)
        else:
            rv, sv = _as_float(real[f], kinds[f]), _as_float(synthetic[f], kinds[f])
            if schema is not None and f in schema and schema[f].kind in ("continuous", "integer", "datetime"):
                lo, hi = schema[f].numeric_bounds
            else:
                fin = rv[np.isfinite(rv)]
                lo, hi = (float(fin.min()), float(fin.max())) if len(fin) else (0.0, 1.0)
            edges = np.linspace(lo, hi if hi > lo else lo + 1.0, n_bins + 1)

            def binned(v: np.ndarray, edges: np.ndarray = edges) -> np.ndarray:
                b = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, n_bins - 1)
                return np.where(np.isnan(v), n_bins, b)

            codes[f] = (binned(rv), binned(sv), n_bins + 1)
    table = np.full((len(classes), len(features)), np.nan)
    for i, c in enumerate(classes):
        rm, sm = ry == c, sy == c
        for j, f in enumerate(features):
            rc, sc, k = codes[f]
            if not sm.any():
                table[i, j] = 1.0
                continue
            table[i, j] = js_divergence(np.bincount(rc[rm], minlength=k), np.bincount(sc[sm], minlength=k))
    value = float(np.mean(table)) if table.size else float("nan")
    if not return_details:
        return value
    return {"ajs": value,
            "per_class": {str(c): float(v) for c, v in zip(classes, table.mean(axis=1))},
            "per_feature": {f: float(v) for f, v in zip(features, table.mean(axis=0))}}
