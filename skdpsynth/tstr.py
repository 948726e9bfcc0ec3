"""Train on synthetic, test on real -- as scikit-learn meta-estimators.

:class:`TSTRClassifier` / :class:`TSTRRegressor` fit a synthesizer on the
training fold, sample a synthetic table, and fit a downstream model on the
synthetic rows only; ``predict`` / ``score`` then run on real rows. Inside
``cross_validate`` this is cross-validated TSTR with nothing new to learn::

    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import cross_validate
    from skdpsynth import NPGCSynthesizer, TSTRClassifier

    tstr = TSTRClassifier(NPGCSynthesizer(epsilon=1), HistGradientBoostingClassifier(), target="Target")
    cross_validate(tstr, X, y, cv=5, scoring="f1_macro")

Privacy: each fold's synthesizer spends its own budget on its training fold;
the downstream model sees only synthetic rows (post-processing). The folds
overlap, so the k fitted synthesizers together are *not* an epsilon-DP release
of the data: cross-validated TSTR is an evaluation tool for the data holder.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, RegressorMixin, clone
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.utils.validation import check_is_fitted

from skdpsynth.metrics._encoding import make_tabular_pipeline
from skdpsynth.utils._random import check_random_state

__all__ = ["TSTRClassifier", "TSTRRegressor"]


def _as_frame(X: Any) -> pd.DataFrame:
    if isinstance(X, pd.DataFrame):
        return X
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"Expected a 2D table, got an array with {arr.ndim} dimension(s).")
    return pd.DataFrame(arr, columns=[f"x{i}" for i in range(arr.shape[1])])


class _TSTRBase(MetaEstimatorMixin, BaseEstimator):
    _default_estimator: type

    def __init__(self, synthesizer, estimator=None, *, target="target", n_samples=None, preprocess="auto",
                 random_state=None):
        self.synthesizer = synthesizer
        self.estimator = estimator
        self.target = target
        self.n_samples = n_samples
        self.preprocess = preprocess
        self.random_state = random_state

    def _fit_synthetic(self, X: Any, y: Any) -> pd.DataFrame:
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y (it is joined to X as column {self.target!r}).")
        if self.preprocess not in ("auto", None):
            raise ValueError(f"preprocess must be 'auto' or None, got {self.preprocess!r}.")
        frame = _as_frame(X)
        if self.target in frame.columns:
            raise ValueError(f"X already has a column named {self.target!r}; choose another target= name.")
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != len(frame):
            raise ValueError(f"y must be 1-D with one value per row of X ({len(frame)}), got shape {y.shape}.")
        self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
        self.n_features_in_ = frame.shape[1]
        joined = frame.assign(**{self.target: y})
        rng = check_random_state(self.random_state)
        self.synthesizer_ = clone(self.synthesizer).fit(joined)
        synthetic = self.synthesizer_.sample(self._release_size(), random_state=int(rng.integers(2**31 - 1)))
        if self.target not in synthetic.columns:
            raise ValueError(f"the synthesizer's samples lack the target column {self.target!r}.")
        kept = synthetic[synthetic[self.target].notna()]
        self.n_synthetic_ = len(kept)
        self._seed_ = int(rng.integers(2**31 - 1))
        return kept

    def _release_size(self) -> int | None:
        """``n_samples``, else None: the synthesizer's default, its DP estimate ``n_estimate_`` (never the exact n)."""
        if self.n_samples is not None:
            return int(self.n_samples)
        if not hasattr(self.synthesizer_, "n_estimate_"):
            raise ValueError(f"{type(self.synthesizer_).__name__} has no DP estimate of the number of people "
                             "(n_estimate_); set n_samples.")
        return None

    def _model(self, Xs: pd.DataFrame) -> BaseEstimator:
        est = self.estimator if self.estimator is not None else self._default_estimator(random_state=self._seed_)
        return make_tabular_pipeline(est, Xs) if self.preprocess == "auto" else clone(est)

    def _features(self, X: Any) -> pd.DataFrame:
        check_is_fitted(self, "estimator_")
        frame = _as_frame(X)
        missing = [c for c in self.feature_names_in_ if c not in frame.columns]
        if missing:
            raise ValueError(f"X lacks columns {missing} seen in fit.")
        return frame[list(self.feature_names_in_)]

    def predict(self, X: Any) -> np.ndarray:
        """Predictions of the synthetic-trained model on (real) rows."""
        features = self._features(X)  # raises NotFittedError before fit
        return self.estimator_.predict(features)


class TSTRClassifier(ClassifierMixin, _TSTRBase):
    """Classifier trained on synthetic data only (train on synthetic, test on real).

    ``fit(X, y)`` joins ``y`` to ``X`` as column ``target``, fits a clone of
    ``synthesizer`` on that table, samples ``n_samples`` rows (default: the
    synthesizer's default release size, its DP estimate ``n_estimate_`` of the
    number of people) and fits a clone of ``estimator`` on them;
    ``predict`` / ``predict_proba`` / ``score`` use real rows.

    Parameters
    ----------
    synthesizer : synthesizer
        Unfitted; cloned and fitted on every ``fit`` (spending its budget).
    estimator : classifier, default=None
        Default ``HistGradientBoostingClassifier``.
    target : str, default="target"
        Name of the outcome column inside the synthesized table.
    n_samples : int, optional
        Synthetic rows to train on (default: the synthesizer's ``n_estimate_``,
        a DP estimate of the number of training rows; the exact number is
        private).
    preprocess : {"auto", None}, default="auto"
        ``"auto"`` wraps the estimator (unless it is already a Pipeline) in a
        one-hot encoder for text / category / boolean columns (unknown
        categories ignored, missing = own category), datetimes as seconds and
        numeric columns as float (NaN kept): see
        :func:`skdpsynth.metrics.make_tabular_pipeline`. ``None`` uses the
        estimator as is.
    random_state : int, Generator or None
        Seeds the sampling and the default estimator (the synthesizer keeps its own ``random_state``).

    Attributes
    ----------
    synthesizer_ : fitted synthesizer (``privacy_spent_`` tells this fold's spend)
    estimator_ : fitted classifier
    classes_ : ndarray
        The classes the synthetic rows contained.
    n_synthetic_ : int
        Synthetic rows used (rows with a missing target are dropped).
    """

    _default_estimator = HistGradientBoostingClassifier

    def fit(self, X: Any, y: Any) -> TSTRClassifier:
        """Fit the synthesizer on ``(X, y)`` and the classifier on its samples."""
        syn = self._fit_synthetic(X, y)
        Xs, ys = syn.drop(columns=[self.target]), syn[self.target].to_numpy()
        real_kind = np.asarray(y).dtype.kind
        if real_kind in "iub" and pd.api.types.is_numeric_dtype(ys):
            ys = np.round(ys.astype(float)).astype(np.asarray(y).dtype)
        if len(pd.unique(ys)) < 2:
            est = DummyClassifier(strategy="most_frequent")
        else:
            est = self._model(Xs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            self.estimator_ = est.fit(Xs, ys)
        self.classes_ = self.estimator_.classes_
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities (columns follow ``classes_``)."""
        features = self._features(X)  # raises NotFittedError before fit
        return self.estimator_.predict_proba(features)


class TSTRRegressor(RegressorMixin, _TSTRBase):
    """Regressor trained on synthetic data only (train on synthetic, test on real).

    As :class:`TSTRClassifier`, with default estimator
    ``HistGradientBoostingRegressor`` and ``score`` = R^2 on real rows.
    """

    _default_estimator = HistGradientBoostingRegressor

    def fit(self, X: Any, y: Any) -> TSTRRegressor:
        """Fit the synthesizer on ``(X, y)`` and the regressor on its samples."""
        syn = self._fit_synthetic(X, y)
        Xs, ys = syn.drop(columns=[self.target]), pd.to_numeric(syn[self.target]).to_numpy(dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            self.estimator_ = self._model(Xs).fit(Xs, ys)
        return self
