"""The synthesizer contract: scikit-learn's estimator API plus ``sample``.

:class:`BaseSynthesizer` owns what every synthesizer shares -- the privacy budget
per cohort, the budget log and its composition, random streams, ``partial_fit``
bookkeeping and ``sample``'s random-state semantics. :class:`BaseTabularSynthesizer`
adds the public schema (given, or estimated under DP) and dtype round trips.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from skdpsynth.exceptions import NotFittedError, PrivacyLeakWarning, SchemaError
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord, PrivacySpent, check_budget, compose
from skdpsynth.privacy._domain import drop_unreleased_categories, estimate_schema, plan_schema_cost
from skdpsynth.schema import TableSchema, infer_schema
from skdpsynth.utils._random import _seed_sequence, check_random_state
from skdpsynth.utils._validation import check_n_samples, check_table

__all__ = ["BaseSynthesizer", "BaseTabularSynthesizer", "resolve_schema"]


class BaseSynthesizer(BaseEstimator):
    """Base class of all synthesizers.

    Subclasses implement ``_check_input(X, y, reset)`` (validation, no budget),
    ``_fit_cohort(X, accountant, rngs, first)`` (spend through ``accountant``)
    and ``_sample(n_samples, rng) -> DataFrame``. They must define the
    parameters ``epsilon``, ``delta`` and ``random_state`` (and may define
    ``cohort_composition``).

    Fitted attributes
    -----------------
    budget_log_ : tuple of BudgetRecord
        Every use of the private data, in order.
    n_cohorts_ : int
        Number of ``fit`` / ``partial_fit`` calls folded in.
    privacy_spent_ : PrivacySpent
        Derived from ``budget_log_`` on every read; never above the request.
    """

    #: names of the independent random streams given to ``_fit_cohort``
    _rng_streams: tuple[str, ...] = ("domain", "noise", "model")
    #: scratch a subclass's ``_check_input`` may leave for ``_fit_cohort``; cleared after every fit call
    _validated: Any = None

    # -- public API -------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> BaseSynthesizer:
        """Fit from scratch on one cohort (the target, if any, is a column of ``X``).

        Parameters
        ----------
        X : pandas.DataFrame or array-like
            Private data, one row (or, for sequences, one learner) per person.
        y : array-like, optional
            Joined to ``X`` as one more column to synthesize.

        Returns
        -------
        self
        """
        check_budget(self.epsilon, self.delta)
        try:
            X = self._check_input(X, y, reset=True)
            self._root_seed_ = _seed_sequence(self.random_state)
            self.budget_log_ = ()
            self._delta_zcdp_ = {}
            self.n_cohorts_ = 0
            self._run_cohort(X, first=True)
        finally:
            self._validated = None  # validation scratch holds training rows: never keep it
        self._sample_rng_ = np.random.Generator(np.random.PCG64(self._root_seed_.spawn(1)[0]))
        return self

    def partial_fit(self, X: Any, y: Any = None) -> BaseSynthesizer:
        """Fold in a new cohort (new people); equivalent to ``fit`` when not fitted.

        The cohort gets its own budget (``epsilon``, ``delta``); how cohorts
        compose is set by ``cohort_composition`` and shown by ``privacy_spent_``.

        Parameters
        ----------
        X : pandas.DataFrame or array-like
            The new cohort, with the same columns as before.
        y : array-like, optional
            As in :meth:`fit`.

        Returns
        -------
        self
        """
        if not hasattr(self, "budget_log_"):
            return self.fit(X, y)
        check_budget(self.epsilon, self.delta)
        try:
            X = self._check_input(X, y, reset=False)
            self._run_cohort(X, first=False)
        finally:
            self._validated = None  # validation scratch holds training rows: never keep it
        return self

    def sample(self, n_samples: int, *, random_state: Any = None) -> pd.DataFrame:
        """Draw synthetic data (post-processing: spends no budget).

        Parameters
        ----------
        n_samples : int
            Number of rows (for sequence synthesizers: learners).
        random_state : None, int or Generator
            ``None`` continues the synthesizer's own stream (successive calls
            differ); an int gives a reproducible draw.

        Returns
        -------
        pandas.DataFrame
        """
        self._check_fitted()
        n_samples = check_n_samples(n_samples)
        rng = self._sample_rng_ if random_state is None else check_random_state(random_state)
        return self._sample(n_samples, rng)

    @property
    def privacy_spent_(self) -> PrivacySpent:
        """The guarantee of everything fitted so far, derived from ``budget_log_``."""
        self._check_fitted()
        return compose(self.budget_log_, delta_zcdp=self._delta_zcdp_,
                       composition=getattr(self, "cohort_composition", "parallel"))

    # -- machinery --------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "budget_log_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with appropriate "
                "arguments before using this estimator."
            )

    def _delta_for_zcdp(self, X: Any) -> float:
        """Share of ``delta`` at which this cohort's zCDP part is converted (override if needed)."""
        return self.delta

    def _run_cohort(self, X: Any, first: bool) -> None:
        cohort = self.n_cohorts_
        seed = self._root_seed_.spawn(1)[0]
        children = seed.spawn(len(self._rng_streams))
        rngs = {k: np.random.Generator(np.random.PCG64(s)) for k, s in zip(self._rng_streams, children)}
        accountant = BudgetAccountant(self.epsilon, self.delta, delta_zcdp=self._delta_for_zcdp(X), cohort=cohort)
        try:
            self._fit_cohort(X, accountant, rngs, first)
        finally:
            # whatever was spent is logged, even if the fit failed half-way
            self.budget_log_ = self.budget_log_ + tuple(accountant.records)
            self._delta_zcdp_ = {**self._delta_zcdp_, cohort: accountant.delta_zcdp}
        self.n_cohorts_ = cohort + 1

    def _check_input(self, X: Any, y: Any, reset: bool) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _fit_cohort(self, X: Any, accountant: BudgetAccountant, rngs: dict, first: bool) -> None:  # pragma: no cover
        raise NotImplementedError

    def _sample(self, n_samples: int, rng: np.random.Generator) -> pd.DataFrame:  # pragma: no cover
        raise NotImplementedError

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.non_deterministic = False
        tags.requires_fit = True
        return tags


def resolve_schema(schema: Any) -> TableSchema | None:
    """Accept a TableSchema, a dict, or a path to a JSON file."""
    if schema is None or isinstance(schema, TableSchema):
        return schema
    if isinstance(schema, Mapping):
        return TableSchema.from_dict(schema)
    if isinstance(schema, (str, os.PathLike)):
        return TableSchema.from_json(schema)
    raise SchemaError(f"schema must be a TableSchema, a dict or a JSON path; got {type(schema).__name__}.")


class BaseTabularSynthesizer(BaseSynthesizer):
    """Base of synthesizers for one-row-per-person tables.

    Adds: the public schema (parameter ``schema``; when None, estimated under DP
    with ``domain_share`` of epsilon and delta, or read without privacy when
    ``epsilon=None``), validation of every cohort against it, and restoring the
    input's column order and dtypes on ``sample``. Subclasses implement
    ``_fit_table(Xn, accountant, rngs, first)`` on the schema-normalised table
    and ``_sample_table(n, rng)``.

    Fitted attributes
    -----------------
    schema_ : TableSchema
        The domain used (given, DP-estimated, or inferred non-privately).
    feature_names_in_ : ndarray of str
        Column names, when ``X`` was a DataFrame.
    n_features_in_ : int
        Number of columns (including a joined ``y``).
    dtypes_ : dict of str to str
        Input dtype names, restored on ``sample``.
    """

    def _check_input(self, X: Any, y: Any, reset: bool) -> pd.DataFrame:
        frame = self._check_columns(X, y, reset)
        schema = resolve_schema(getattr(self, "schema", None))
        if schema is not None:  # fail before any budget is spent; _fit_cohort reuses the normalised table
            self._validated = (frame, schema.validate(frame))
        return frame

    def _check_columns(self, X: Any, y: Any, reset: bool, *, y_name: str = "y",
                       why: str = "every cohort must have the same columns in the same order.") -> pd.DataFrame:
        """Validate the table; on ``fit`` record its columns and dtypes, on ``partial_fit`` require the same."""
        frame = check_table(X, y, y_name=y_name)
        n_x = frame.shape[1] - (y is not None)
        if reset:
            self.n_features_in_ = n_x
            if isinstance(X, pd.DataFrame):
                self.feature_names_in_ = np.asarray(frame.columns[:n_x], dtype=object)
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            self.columns_ = tuple(frame.columns)
            self.dtypes_ = {c: str(frame[c].dtype) for c in frame.columns}
        elif tuple(frame.columns) != self.columns_:
            raise SchemaError(
                f"X has {n_x} features, but {type(self).__name__} is expecting {self.n_features_in_} features "
                f"as input: this cohort's columns {list(frame.columns)} differ from the first cohort's "
                f"{list(self.columns_)}; {why}"
            )
        return frame

    def _fit_cohort(self, X: pd.DataFrame, accountant: BudgetAccountant, rngs: dict, first: bool) -> None:
        cached = self._validated  # (input, normalised table) from _check_input; fit/partial_fit clear it
        if first:
            self.schema_ = self._resolve_domain(X, accountant, rngs["domain"])
        if not self.schema_.public and self.epsilon is not None:
            accountant.records.append(BudgetRecord(
                "exact (non-private)", "domain read from the data by infer_schema", "none",
                epsilon=math.inf, cohort=accountant.cohort,
            ))
        if cached is not None and cached[0] is X and self.schema_ is resolve_schema(getattr(self, "schema", None)):
            Xn = cached[1]
        else:
            if getattr(self, "schema", None) is None and self.epsilon is not None:
                X = drop_unreleased_categories(X, self.schema_)  # labels the DP domain did not release
            Xn = self.schema_.validate(X)
        self._fit_table(Xn, accountant, rngs, first)

    def _domain_budget(self, schema_given: bool) -> tuple[float, float]:
        if schema_given or self.epsilon is None:
            return 0.0, 0.0
        share = getattr(self, "domain_share", 0.1)
        return self.epsilon * share, self.delta * share

    def _delta_for_zcdp(self, X: Any) -> float:
        _, delta_dom = self._domain_budget(getattr(self, "schema", None) is not None)
        return self.delta - delta_dom

    def _resolve_domain(self, X: pd.DataFrame, accountant: BudgetAccountant, rng: np.random.Generator) -> TableSchema:
        schema = resolve_schema(getattr(self, "schema", None))
        if schema is not None:
            return schema
        if self.epsilon is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                inferred = infer_schema(X)
            accountant.records.append(BudgetRecord(
                "exact (non-private)", "domain read from the data (epsilon=None)", "none", epsilon=math.inf,
                cohort=accountant.cohort))
            return inferred
        eps_dom, delta_dom = self._domain_budget(False)
        planned = plan_schema_cost(X, eps_dom, delta_dom) + self._planned_model_cost(X, eps_dom, delta_dom)
        accountant.require(planned, what=f"{type(self).__name__}.fit without a schema")
        return estimate_schema(X, epsilon=eps_dom, delta=delta_dom, accountant=accountant, rng=rng,
                               bound_quantiles=getattr(self, "bound_quantiles", (0.01, 0.99)))

    def _planned_model_cost(self, X: pd.DataFrame, eps_dom: float, delta_dom: float) -> list[BudgetRecord]:
        """Records the model will charge after the domain (for the up-front check); override."""
        return []

    def _sample(self, n_samples: int, rng: np.random.Generator) -> pd.DataFrame:
        table = self._sample_table(n_samples, rng)
        return restore_dtypes(table[list(self.columns_)], self.dtypes_, self.schema_)

    def _fit_table(  # pragma: no cover
        self, X: pd.DataFrame, accountant: BudgetAccountant, rngs: dict, first: bool
    ) -> None:
        raise NotImplementedError

    def _sample_table(self, n_samples: int, rng: np.random.Generator) -> pd.DataFrame:  # pragma: no cover
        raise NotImplementedError


def restore_dtypes(table: pd.DataFrame, dtypes: dict[str, str], schema: TableSchema) -> pd.DataFrame:
    """Cast schema-normalised columns back to the input dtypes (nullable variants when values are missing)."""
    out = {}
    for name, dtype in dtypes.items():
        col = table[name]
        spec = schema[name]
        has_na = bool(col.isna().any())
        try:
            if dtype == "category":
                out[name] = pd.Categorical(col, categories=list(spec.categories))
            elif dtype.startswith(("int", "uint")) or dtype.startswith(("Int", "UInt")):
                target = dtype.capitalize() if has_na and dtype.islower() else dtype
                out[name] = pd.to_numeric(col).round().astype(target)  # also integer-coded categories
            elif dtype == "bool":
                out[name] = col.astype("boolean") if has_na else col.astype(bool)
            elif dtype.startswith("datetime64"):
                out[name] = pd.to_datetime(col).astype(dtype)
            elif dtype == "object" and spec.kind in ("continuous", "integer"):
                out[name] = col.astype(object)
            else:
                out[name] = col.astype(dtype)
        except (TypeError, ValueError):
            out[name] = col
    return pd.DataFrame(out)
