"""Predictive-usefulness metrics: TSTR / TRTR, discriminator AUC, outcome-group coverage."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone
from sklearn.metrics import f1_score, roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from threadpoolctl import threadpool_limits

from skdpsynth.metrics._encoding import check_same_columns, default_classifier, make_tabular_pipeline
from skdpsynth.utils._random import check_random_state

__all__ = ["tstr_scores", "discriminator_auc", "outcome_coverage", "majority_floor_f1", "fit_predict_classifier"]


def _label_key(values: Any) -> np.ndarray:
    """Labels as comparable Python objects (numpy scalars unwrapped; whole floats as ints)."""
    out = []
    for v in pd.Series(values).astype(object).to_numpy():
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        out.append(v)
    return np.array(out, dtype=object)


def outcome_coverage(real_y: Any, synthetic_y: Any, *, min_share: float = 0.01) -> dict[str, Any]:
    """Which real outcome classes the synthetic data lack.

    Parameters
    ----------
    real_y, synthetic_y : array-like
        Outcome labels of the real and synthetic rows (missing labels ignored).
    min_share : float, default=0.01
        A real class with at least this share of the real rows must appear.

    Returns
    -------
    dict
        ``missing`` (classes with real share >= ``min_share`` and no synthetic
        row), ``missing_minor`` (rarer classes that are absent),
        ``covered_mass`` (real share of the classes present in ``synthetic_y``),
        ``real_shares`` and ``synthetic_shares`` (class -> share).
    """
    real = pd.Series(_label_key(pd.Series(real_y).dropna()))
    syn = pd.Series(_label_key(pd.Series(synthetic_y).dropna()))
    if len(real) == 0:
        raise ValueError("real_y has no labels.")
    rs = real.value_counts(normalize=True)
    ss = syn.value_counts(normalize=True) if len(syn) else pd.Series(dtype=float)
    present = set(ss.index)
    missing = [k for k in rs.index if k not in present and rs[k] >= min_share]
    minor = [k for k in rs.index if k not in present and rs[k] < min_share]
    return {
        "missing": missing,
        "missing_minor": minor,
        "covered_mass": float(rs[[k for k in rs.index if k in present]].sum()),
        "real_shares": {str(k): float(v) for k, v in rs.items()},
        "synthetic_shares": {str(k): float(v) for k, v in ss.items()},
    }


def majority_floor_f1(train_y: Any, test_y: Any) -> float:
    """Macro-F1 on ``test_y`` of always predicting ``train_y``'s majority class (the 'no skill' floor)."""
    tr, te = _label_key(train_y), _label_key(test_y)
    majority = pd.Series(tr).value_counts().index[0]
    labels = sorted(set(te) | set(tr), key=str)
    return float(f1_score(te.astype(str), np.full(len(te), str(majority)), labels=[str(v) for v in labels],
                          average="macro", zero_division=0))


def fit_predict_classifier(
    estimator: BaseEstimator | None, X_fit: pd.DataFrame, y_fit: Any, X_pred: pd.DataFrame, *, random_state: Any = 0,
    n_threads: int | None = 1,
) -> np.ndarray:
    """Fit a classifier (default: one-hot + HistGradientBoosting) and predict; labels as strings.

    With a single training class the prediction is that class (nothing to learn).
    ``n_threads`` caps OpenMP / BLAS threads while fitting (None: library defaults).
    """
    y = _label_key(y_fit).astype(str)
    classes = np.unique(y)
    if len(classes) == 1:
        return np.full(len(X_pred), classes[0], dtype=object)
    model = default_classifier(X_fit, random_state=random_state) if estimator is None else make_tabular_pipeline(
        estimator, X_fit)
    with warnings.catch_warnings(), threadpool_limits(n_threads):
        warnings.simplefilter("ignore", UserWarning)
        model.fit(X_fit, y)
        return np.asarray(model.predict(X_pred)).astype(str)


def tstr_scores(
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
    """Train-on-synthetic / train-on-real macro-F1 on the real holdout.

    Parameters
    ----------
    train : DataFrame or None
        Real training rows (the synthesizer's input) for TRTR. When None, TRTR
        is estimated by ``cv``-fold cross-validation within ``holdout`` and
        ``trtr_method`` says so.
    holdout : DataFrame
        Real rows never used for training: the test set.
    synthetic : DataFrame
        The release (rows with a missing target are dropped and counted).
    target : str
        The outcome column.
    estimator : classifier, optional
        Default: one-hot encoding + ``HistGradientBoostingClassifier``; any
        classifier is wrapped with the same encoding.
    cv : int, default=5
        Folds for the holdout-only TRTR.
    random_state : int, Generator or None, default=0
        Seeds the classifiers and folds.
    n_threads : int or None, default=1
        OpenMP / BLAS threads while fitting (one is fastest for tables of a few
        thousand rows and robust on shared machines; None: library defaults).

    Returns
    -------
    dict
        ``tstr_f1``, ``trtr_f1``, ``ratio`` (TSTR / TRTR; NaN when TRTR is 0),
        ``majority_floor``, ``per_class_tstr`` / ``per_class_trtr`` (class ->
        F1), ``classes``, ``trtr_method``, ``n_synthetic_used``, ``y_true``,
        ``y_pred_tstr``, ``y_pred_trtr`` (arrays, for further analysis).
    """
    frames = [("holdout", holdout), ("synthetic", synthetic)] + ([("train", train)] if train is not None else [])
    for name, frame in frames:
        if target not in frame.columns:
            raise ValueError(f"target column {target!r} is not in {name} (columns: {list(frame.columns)[:8]}...).")
    features = [c for c in holdout.columns if c != target]
    synthetic = check_same_columns(holdout, synthetic, names=("holdout", "synthetic"))
    syn = synthetic[synthetic[target].notna()]
    hold = holdout[holdout[target].notna()]
    if len(hold) < 2:
        raise ValueError("the holdout needs at least two rows with a target.")
    y_true = _label_key(hold[target]).astype(str)
    ref_y = train[target].dropna() if train is not None else hold[target]
    labels = sorted(set(y_true) | set(_label_key(ref_y).astype(str)))
    rng = check_random_state(random_state)
    seed = int(rng.integers(2**31 - 1))

    def f1(pred: np.ndarray) -> tuple[float, dict[str, float]]:
        per = f1_score(y_true, pred, labels=labels, average=None, zero_division=0)
        return float(np.mean(per)), {k: float(v) for k, v in zip(labels, per)}

    if len(syn) == 0:
        pred_s = np.full(len(hold), "<none>", dtype=object)
    else:
        pred_s = fit_predict_classifier(estimator, syn[features], syn[target], hold[features], random_state=seed,
                                        n_threads=n_threads)
    tstr, per_s = f1(pred_s)
    if train is not None:
        tr = check_same_columns(holdout, train, names=("holdout", "train"))
        tr = tr[tr[target].notna()]
        pred_r = fit_predict_classifier(estimator, tr[features], tr[target], hold[features], random_state=seed,
                                        n_threads=n_threads)
        method, floor = "train_vs_holdout", majority_floor_f1(tr[target], hold[target])
    else:
        counts = pd.Series(y_true).value_counts()
        k = int(min(cv, counts.min())) if len(counts) > 1 else 0
        if k < 2:
            pred_r, method = np.full(len(hold), "<none>", dtype=object), "unavailable"
        else:
            model = default_classifier(hold[features], random_state=seed) if estimator is None else \
                make_tabular_pipeline(estimator, hold[features])
            folds = StratifiedKFold(k, shuffle=True, random_state=seed)
            with warnings.catch_warnings(), threadpool_limits(n_threads):
                warnings.simplefilter("ignore", UserWarning)
                pred_r = np.asarray(cross_val_predict(model, hold[features], y_true, cv=folds)).astype(str)
            method = f"{k}-fold cross-validation on the holdout"
        floor = majority_floor_f1(hold[target], hold[target])
    trtr, per_r = f1(pred_r)
    if method == "unavailable":
        trtr = float("nan")
    return {
        "tstr_f1": tstr,
        "trtr_f1": trtr,
        "ratio": float(tstr / trtr) if trtr and np.isfinite(trtr) and trtr > 0 else float("nan"),
        "majority_floor": floor,
        "per_class_tstr": per_s,
        "per_class_trtr": per_r,
        "classes": labels,
        "trtr_method": method,
        "n_synthetic_used": int(len(syn)),
        "n_synthetic_missing_target": int(len(synthetic) - len(syn)),
        "y_true": y_true,
        "y_pred_tstr": np.asarray(pred_s).astype(str),
        "y_pred_trtr": np.asarray(pred_r).astype(str),
    }


def discriminator_auc(
    real: pd.DataFrame, synthetic: pd.DataFrame, *, estimator: BaseEstimator | None = None, cv: int = 5,
    max_rows: int = 5000, random_state: Any = 0, n_threads: int | None = 1,
) -> float:
    """Cross-validated AUC of a classifier telling real from synthetic rows (0.5 = indistinguishable).

    The larger table is subsampled so both classes have the same size (at most
    ``max_rows`` each).
    """
    synthetic = check_same_columns(real, synthetic, names=("real", "synthetic"))
    rng = check_random_state(random_state)
    n = min(len(real), len(synthetic), max_rows)
    if n < cv:
        # the sizes themselves are not printed: the real one is private
        raise ValueError(f"need at least {cv} real and {cv} synthetic rows (cv={cv}).")
    r = real.iloc[np.sort(rng.choice(len(real), n, replace=False))]
    s = synthetic.iloc[np.sort(rng.choice(len(synthetic), n, replace=False))]
    X = pd.concat([r, s.astype(r.dtypes.to_dict(), errors="ignore")], ignore_index=True)
    y = np.r_[np.zeros(n), np.ones(n)]
    seed = int(rng.integers(2**31 - 1))
    model = default_classifier(X, random_state=seed) if estimator is None else make_tabular_pipeline(estimator, X)
    folds = StratifiedKFold(cv, shuffle=True, random_state=seed)
    with warnings.catch_warnings(), threadpool_limits(n_threads):
        warnings.simplefilter("ignore", UserWarning)
        proba = cross_val_predict(clone(model), X, y, cv=folds, method="predict_proba")[:, 1]
    return float(roc_auc_score(y, proba))
