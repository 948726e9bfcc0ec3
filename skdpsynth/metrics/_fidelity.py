"""Distribution fidelity: AJS (mean class-conditional Jensen-Shannon divergence, papers/caps.md), marginals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from skdpsynth.metrics._encoding import _as_float, _category_key, check_same_columns, column_kinds

__all__ = ["ajs", "js_divergence", "marginal_histograms"]


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


def _is_numeric_marginal(real: pd.Series, kind: str | None) -> bool:
    if kind is not None:
        return kind in ("continuous", "integer") and real.nunique() > 12
    return bool(pd.to_numeric(real, errors="coerce").notna().mean() > 0.95 and real.nunique() > 12)


def marginal_histograms(real: pd.DataFrame, synthetic: pd.DataFrame, *, schema: Any = None, max_columns: int = 12,
                        n_bins: int = 24, max_categories: int = 12) -> dict[str, dict[str, Any]]:
    """Per-column shares of ``real`` and ``synthetic`` on shared bins (what a marginal plot needs, no rows).

    Numeric columns are binned on the public schema bounds (else the real
    range) into ``n_bins`` bins; other columns by value (the ``max_categories``
    most frequent real values). The shares of ``real`` are statistics of
    confidential data when ``real`` is.

    Returns
    -------
    dict
        column -> ``{"kind": "numeric", "edges", "real", "synthetic"}`` or
        ``{"kind": "categorical", "labels", "real", "synthetic"}`` (shares).
    """
    out: dict[str, dict[str, Any]] = {}
    cols = [c for c in real.columns if c in synthetic.columns][:max_columns]
    for c in cols:
        kind = schema[c].kind if schema is not None and c in schema else None
        r, s = real[c], synthetic[c]
        if _is_numeric_marginal(r, kind):
            rv = pd.to_numeric(r, errors="coerce").dropna().to_numpy(dtype=float)
            sv = pd.to_numeric(s, errors="coerce").dropna().to_numpy(dtype=float)
            if kind in ("continuous", "integer"):
                lo, hi = schema[c].numeric_bounds
            else:
                lo, hi = (float(rv.min()), float(rv.max())) if len(rv) else (0.0, 1.0)
            edges = np.linspace(lo, hi if hi > lo else lo + 1.0, n_bins + 1)

            def shares(v: np.ndarray, edges: np.ndarray = edges) -> list[float]:
                h, _ = np.histogram(np.clip(v, edges[0], edges[-1]), bins=edges)
                return (h / max(h.sum(), 1)).tolist()

            out[str(c)] = {"kind": "numeric", "edges": edges.tolist(), "real": shares(rv), "synthetic": shares(sv)}
        else:
            rc = pd.Series(_category_key(r)).value_counts(normalize=True)
            sc = pd.Series(_category_key(s)).value_counts(normalize=True)
            labels = list(rc.index[:max_categories])
            out[str(c)] = {"kind": "categorical", "labels": [str(x) for x in labels],
                           "real": [float(rc.get(x, 0.0)) for x in labels],
                           "synthetic": [float(sc.get(x, 0.0)) for x in labels]}
    return out
