"""Shared encodings for the metrics: column kinds, Gower-style encoding, a default classifier."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder

__all__ = ["column_kinds", "gower_encode", "default_classifier", "default_regressor", "make_tabular_pipeline",
           "check_same_columns"]


def check_same_columns(reference: pd.DataFrame, other: pd.DataFrame, *, names: tuple[str, str]) -> pd.DataFrame:
    """``other`` with ``reference``'s columns in order; a clear error naming what is missing."""
    if not isinstance(reference, pd.DataFrame) or not isinstance(other, pd.DataFrame):
        raise TypeError(f"{names[0]} and {names[1]} must be pandas DataFrames.")
    missing = [c for c in reference.columns if c not in other.columns]
    if missing:
        raise ValueError(f"{names[1]} lacks columns {missing} that {names[0]} has.")
    return other[list(reference.columns)]


def column_kinds(frame: pd.DataFrame, schema: Any = None) -> dict[str, str]:
    """``"numeric"``, ``"datetime"`` or ``"categorical"`` per column (schema first, then dtype)."""
    kinds = {}
    for name in frame.columns:
        if schema is not None and name in schema:
            kind = schema[name].kind
            kinds[name] = {"continuous": "numeric", "integer": "numeric", "datetime": "datetime"}.get(
                kind, "categorical")
            continue
        dt = frame[name].dtype
        if pd.api.types.is_bool_dtype(dt):
            kinds[name] = "categorical"
        elif pd.api.types.is_datetime64_any_dtype(dt):
            kinds[name] = "datetime"
        elif pd.api.types.is_numeric_dtype(dt):
            kinds[name] = "numeric"
        else:
            kinds[name] = "categorical"
    return kinds


def _as_float(col: pd.Series, kind: str) -> np.ndarray:
    if kind == "datetime":
        ts = pd.to_datetime(col, errors="coerce")
        out = ts.astype("int64").to_numpy(dtype=float) / 1e9
        out[ts.isna().to_numpy()] = np.nan
        return out
    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)


def _category_key(col: pd.Series) -> np.ndarray:
    """Hashable keys with numpy scalars unwrapped and missing values as one sentinel."""
    values = col.astype(object).to_numpy()
    isna = pd.isna(values)
    out = np.empty(len(values), dtype=object)
    out[:] = [repr(v.item() if isinstance(v, np.generic) else v) for v in values]
    out[isna] = "<NA>"
    return out


def gower_encode(
    frames: Sequence[pd.DataFrame], *, schema: Any = None, range_from: int = 0
) -> tuple[list[np.ndarray], list[np.ndarray], list[str], list[str]]:
    """Encode tables on shared scales for Gower-style distances.

    Numeric (and datetime) columns are divided by their range -- the public
    schema bounds when ``schema`` gives them, else the range of
    ``frames[range_from]`` (the training rows); categorical columns become
    integer codes shared by all frames (missing is one more code).

    Parameters
    ----------
    frames : sequence of DataFrame
        Tables with the same columns.
    schema : TableSchema, optional
        Column kinds and public bounds.
    range_from : int, default=0
        Which frame's observed range scales numeric columns without a schema.

    Returns
    -------
    numeric : list of ndarray (n_i, p_num) float32, NaN = missing
    codes : list of ndarray (n_i, p_cat) int32
    numeric_names, categorical_names : list of str
    """
    cols = list(frames[0].columns)
    kinds = column_kinds(frames[range_from], schema)
    num_names = [c for c in cols if kinds[c] in ("numeric", "datetime")]
    cat_names = [c for c in cols if kinds[c] == "categorical"]
    numeric = [np.empty((len(f), len(num_names)), dtype=np.float32) for f in frames]
    for j, name in enumerate(num_names):
        vals = [_as_float(f[name], kinds[name]) for f in frames]
        if schema is not None and name in schema and schema[name].kind in ("continuous", "integer", "datetime"):
            lo, hi = schema[name].numeric_bounds
        else:
            ref = vals[range_from]
            ref = ref[np.isfinite(ref)]
            lo, hi = (float(ref.min()), float(ref.max())) if len(ref) else (0.0, 1.0)
        span = hi - lo if hi > lo else 1.0
        for out, v in zip(numeric, vals):
            out[:, j] = (v - lo) / span
    codes = [np.empty((len(f), len(cat_names)), dtype=np.int32) for f in frames]
    for j, name in enumerate(cat_names):
        keys = [_category_key(f[name]) for f in frames]
        _, inverse = np.unique(np.concatenate(keys), return_inverse=True)
        start = 0
        for out, k in zip(codes, keys):
            out[:, j] = inverse[start:start + len(k)]
            start += len(k)
    return numeric, codes, num_names, cat_names


class _DatetimeToSeconds(TransformerMixin, BaseEstimator):
    """Datetime columns as float seconds since the epoch (NaN when missing)."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        frame = pd.DataFrame(X)
        return np.column_stack([_as_float(frame[c], "datetime") for c in frame.columns])


class _ToFloat(TransformerMixin, BaseEstimator):
    """Numeric columns (nullable extension dtypes included) as float64, NaN for missing."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        frame = pd.DataFrame(X)
        return np.column_stack([pd.to_numeric(frame[c], errors="coerce").astype(float).to_numpy()
                                for c in frame.columns]) if frame.shape[1] else np.empty((len(frame), 0))


def make_tabular_pipeline(estimator: BaseEstimator, frame: pd.DataFrame) -> BaseEstimator:
    """Wrap ``estimator`` so that it takes a mixed-type DataFrame like ``frame``.

    Text, category and boolean columns are one-hot encoded (unknown categories
    at predict time are ignored, missing is its own category), datetimes become
    seconds, numeric columns become float64 -- with NaN kept when the estimator
    accepts missing values (its ``allow_nan`` tag, e.g. HistGradientBoosting),
    else median-imputed plus missing-indicator columns. An estimator that is already a
    :class:`~sklearn.pipeline.Pipeline` is returned as is (a clone): it is
    trusted to encode its input.
    """
    if isinstance(estimator, Pipeline):
        return clone(estimator)
    kinds = column_kinds(frame)
    cats = [c for c, k in kinds.items() if k == "categorical"]
    dates = [c for c, k in kinds.items() if k == "datetime"]
    nums = [c for c, k in kinds.items() if k == "numeric"]
    try:
        allow_nan = bool(estimator.__sklearn_tags__().input_tags.allow_nan)
    except AttributeError:  # not a scikit-learn estimator: be safe
        allow_nan = False
    parts = []
    if nums:
        numeric = _ToFloat() if allow_nan else Pipeline([
            ("as_float", _ToFloat()), ("impute", SimpleImputer(strategy="median", add_indicator=True,
                                                               keep_empty_features=True))])
        parts.append(("numeric", numeric, nums))
    if cats:
        parts.append(("categorical", Pipeline([
            ("as_text", _AsText()),
            ("onehot", OneHotEncoder(handle_unknown="ignore", sparse_output=False)),
        ]), cats))
    if dates:
        parts.append(("datetime", _DatetimeToSeconds(), dates))
    pre = ColumnTransformer(parts, remainder="drop", verbose_feature_names_out=False)
    return Pipeline([("encode", pre), ("model", clone(estimator))])


class _AsText(TransformerMixin, BaseEstimator):
    """Categorical values as strings (missing -> "<NA>") so that mixed types one-hot encode."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        frame = pd.DataFrame(X)
        return np.column_stack([_category_key(frame[c]) for c in frame.columns]).astype(str)


def _validation_split_possible(y: Any, validation_fraction: Any, *, stratified: bool) -> bool:
    """Whether the internal (stratified) validation split of HistGradientBoosting can be drawn from ``y``.

    Mirrors the conditions under which scikit-learn's ``train_test_split``
    raises: a class with a single row, or fewer validation (or training) rows
    than classes.
    """
    y = np.asarray(y)
    n = len(y)
    if isinstance(validation_fraction, (int, np.integer)) and not isinstance(validation_fraction, bool):
        n_val = int(validation_fraction)
    else:
        n_val = int(np.ceil(float(validation_fraction) * n))
    n_fit = n - n_val
    if n_val < 1 or n_fit < 1:
        return False
    if not stratified:
        return True
    _, counts = np.unique(y.astype(str), return_counts=True)
    return bool(counts.min() >= 2 and n_val >= len(counts) and n_fit >= len(counts))


class _SafeEarlyStoppingMixin:
    """Fit without early stopping when the validation split cannot be drawn (instead of raising).

    A synthetic release may contain a class with one row; the stratified
    validation split of early stopping then raises. The model is fitted with
    ``early_stopping=False`` in that case (``get_params`` is unchanged).
    """

    _stratified_split = True

    def fit(self, X: Any, y: Any, sample_weight: Any = None, **fit_params: Any):
        n = len(y)
        splits = self.early_stopping is True or (self.early_stopping == "auto" and n > 10_000)
        if not splits or self.validation_fraction is None or fit_params.get("X_val") is not None or \
                _validation_split_possible(y, self.validation_fraction, stratified=self._stratified_split):
            return super().fit(X, y, sample_weight, **fit_params)
        saved = self.early_stopping
        self.early_stopping = False
        try:
            return super().fit(X, y, sample_weight, **fit_params)
        finally:
            self.early_stopping = saved


class SafeHistGradientBoostingClassifier(_SafeEarlyStoppingMixin, HistGradientBoostingClassifier):
    """HistGradientBoostingClassifier whose early stopping never makes ``fit`` raise on rare classes."""


class SafeHistGradientBoostingRegressor(_SafeEarlyStoppingMixin, HistGradientBoostingRegressor):
    """HistGradientBoostingRegressor whose early stopping never makes ``fit`` raise on tiny tables."""

    _stratified_split = False


def _model_seed(random_state: Any) -> int | None:
    return None if random_state is None else int(np.random.default_rng(random_state).integers(2**31 - 1))


def default_classifier(frame: pd.DataFrame, *, random_state: Any = None) -> BaseEstimator:
    """The audit's downstream classifier: one-hot encoding + HistGradientBoostingClassifier.

    Boosting runs at most 100 iterations with early stopping on a 10 % stratified
    validation split; when that split cannot be drawn (a class with a single
    row, e.g. in a small synthetic release) the model is fitted without early
    stopping instead of raising.
    """
    model = SafeHistGradientBoostingClassifier(early_stopping=True, random_state=_model_seed(random_state))
    return make_tabular_pipeline(model, frame)


def default_regressor(frame: pd.DataFrame, *, random_state: Any = None) -> BaseEstimator:
    """The audit's downstream regressor: one-hot encoding + HistGradientBoostingRegressor (early stopping as above)."""
    model = SafeHistGradientBoostingRegressor(early_stopping=True, random_state=_model_seed(random_state))
    return make_tabular_pipeline(model, frame)
