"""Predictive usefulness for numeric outcomes: train on synthetic / train on real, R^2 and MAE."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.metrics import mean_absolute_error, r2_score
from sklearn.model_selection import KFold, cross_val_predict
from threadpoolctl import threadpool_limits

from skdpsynth.metrics._encoding import check_same_columns, default_regressor, make_tabular_pipeline
from skdpsynth.utils._random import check_random_state

__all__ = ["tstr_regression_scores", "target_task"]

_NUMERIC_KINDS = ("continuous", "integer")


def target_task(real_y: Any, *, schema: Any = None, name: str | None = None, max_classes: int = 10) -> str:
    """``"classification"`` or ``"regression"`` for an outcome column.

    The public schema decides when it declares the column (continuous or
    integer kinds are regression targets, categorical and boolean ones
    classes). Otherwise: booleans, text and categories are classes; numeric
    values with fractions, or whole numbers with more than ``max_classes``
    distinct values (e.g. grades 0-20), are a regression target.
    """
    if schema is not None and name is not None and name in schema:
        return "regression" if schema[name].kind in _NUMERIC_KINDS else "classification"
    y = pd.Series(real_y)
    if pd.api.types.is_bool_dtype(y.dtype) or not pd.api.types.is_numeric_dtype(y.dtype):
        return "classification"
    values = y.dropna().to_numpy(dtype=float)
    if len(values) == 0:
        return "classification"
    if np.any(values != np.round(values)):
        return "regression"
    return "regression" if len(np.unique(values)) > max_classes else "classification"


def _numeric_target(frame: pd.DataFrame, target: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Rows whose target is a number, and that target as float."""
    y = pd.to_numeric(frame[target], errors="coerce").astype(float)
    keep = y.notna().to_numpy()
    return frame[keep], y.to_numpy()[keep]


def _fit_predict(estimator: BaseEstimator | None, X_fit: pd.DataFrame, y_fit: np.ndarray, X_pred: pd.DataFrame,
                 seed: int, n_threads: int | None) -> np.ndarray:
    model = default_regressor(X_fit, random_state=seed) if estimator is None else make_tabular_pipeline(
        estimator, X_fit)
    with warnings.catch_warnings(), threadpool_limits(n_threads):
        warnings.simplefilter("ignore", UserWarning)
        model.fit(X_fit, y_fit)
        return np.asarray(model.predict(X_pred), dtype=float)


def _scores(y_true: np.ndarray, pred: np.ndarray) -> tuple[float, float]:
    return float(r2_score(y_true, pred)), float(mean_absolute_error(y_true, pred))


def tstr_regression_scores(
    train: pd.DataFrame | None,
    holdout: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    target: str,
    estimator: BaseEstimator | None = None,
    cv: int = 5,
    random_state: Any = 0,
    n_threads: int | None = 1,
) -> dict[str, Any]:
    """Train-on-synthetic / train-on-real R^2 and MAE on the real holdout, for a numeric outcome.

    Parameters
    ----------
    train : DataFrame or None
        Real training rows for TRTR; when None, TRTR is estimated by
        ``cv``-fold cross-validation within ``holdout``.
    holdout : DataFrame
        Real rows never used for training: the test set.
    synthetic : DataFrame
        The release (rows whose target is missing or not a number are dropped).
    target : str
        The numeric outcome column.
    estimator : regressor, optional
        Default: one-hot encoding + ``HistGradientBoostingRegressor``.
    cv : int, default=5
    random_state : int, Generator or None, default=0
    n_threads : int or None, default=1

    Returns
    -------
    dict
        ``tstr_r2``, ``trtr_r2``, ``ratio`` (TSTR / TRTR R^2; NaN when TRTR
        R^2 <= 0), ``mean_floor_r2`` (R^2 of predicting the real training
        mean: the no-skill floor), ``tstr_mae``, ``trtr_mae``,
        ``mean_floor_mae``, ``trtr_method``, ``n_synthetic_used``,
        ``n_synthetic_missing_target``, and the arrays ``y_true``,
        ``y_pred_tstr``, ``y_pred_trtr``.
    """
    for name, frame in (("holdout", holdout), ("synthetic", synthetic), ("train", train)):
        if frame is not None and target not in frame.columns:
            raise ValueError(f"target column {target!r} is not in {name} (columns: {list(frame.columns)[:8]}...).")
    features = [c for c in holdout.columns if c != target]
    synthetic = check_same_columns(holdout, synthetic, names=("holdout", "synthetic"))
    syn, y_syn = _numeric_target(synthetic, target)
    hold, y_true = _numeric_target(holdout, target)
    if len(hold) < 2:
        raise ValueError("the holdout needs at least two rows with a numeric target.")
    seed = int(check_random_state(random_state).integers(2**31 - 1))
    if len(syn) == 0:
        pred_s = np.full(len(hold), np.nan)
        tstr_r2, tstr_mae = float("-inf"), float("inf")
    else:
        pred_s = _fit_predict(estimator, syn[features], y_syn, hold[features], seed, n_threads)
        tstr_r2, tstr_mae = _scores(y_true, pred_s)
    if train is not None:
        tr, y_tr = _numeric_target(check_same_columns(holdout, train, names=("holdout", "train")), target)
        pred_r = _fit_predict(estimator, tr[features], y_tr, hold[features], seed, n_threads)
        method, ref_mean = "train_vs_holdout", float(np.mean(y_tr))
    else:
        k = max(2, int(min(cv, len(hold) // 2)))
        model = default_regressor(hold[features], random_state=seed) if estimator is None else \
            make_tabular_pipeline(estimator, hold[features])
        with warnings.catch_warnings(), threadpool_limits(n_threads):
            warnings.simplefilter("ignore", UserWarning)
            pred_r = np.asarray(cross_val_predict(model, hold[features], y_true,
                                                  cv=KFold(k, shuffle=True, random_state=seed)), dtype=float)
        method, ref_mean = f"{k}-fold cross-validation on the holdout", float(np.mean(y_true))
    trtr_r2, trtr_mae = _scores(y_true, pred_r)
    floor_pred = np.full(len(y_true), ref_mean)
    floor_r2, floor_mae = _scores(y_true, floor_pred)
    return {
        "tstr_r2": tstr_r2,
        "trtr_r2": trtr_r2,
        "ratio": float(tstr_r2 / trtr_r2) if trtr_r2 > 0 and np.isfinite(tstr_r2) else float("nan"),
        "mean_floor_r2": floor_r2,
        "tstr_mae": tstr_mae,
        "trtr_mae": trtr_mae,
        "mean_floor_mae": floor_mae,
        "trtr_method": method,
        "n_synthetic_used": int(len(syn)),
        "n_synthetic_missing_target": int(len(synthetic) - len(syn)),
        "y_true": y_true,
        "y_pred_tstr": pred_s,
        "y_pred_trtr": pred_r,
    }
