"""The synthesizer contract: scikit-learn's estimator API plus ``sample``.

:class:`BaseSynthesizer` owns what every synthesizer shares -- declared
parameters, the privacy budget per cohort, the budget log and its composition,
where randomness comes from, ``partial_fit`` bookkeeping and ``sample``.
:class:`BaseTabularSynthesizer` adds the public schema (given, or estimated under
DP) and dtype round trips.

Randomness. Privacy noise comes from a :class:`~skdpsynth.privacy.NoiseSource`
made fresh for each cohort from OS entropy and never stored, whatever
``random_state`` says (``reproducible_noise=True`` derives it from
``random_state`` instead, for tests and papers; such a release is marked not
publishable). ``random_state`` governs everything else: initialisation,
batching that is not part of a privacy mechanism, and sampling.

(A little over 400 lines: the two base classes of the contract and their documentation; release dtypes
live in ``_release.py``.)
"""

from __future__ import annotations

import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from skdpsynth._release import release_dtype, restore_dtypes
from skdpsynth.exceptions import (
    InvalidBudgetError,
    InvalidParameterError,
    NotFittedError,
    PrivacyBudgetError,
    PrivacyLeakWarning,
    SchemaError,
)
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord, PrivacySpent, check_budget, compose
from skdpsynth.privacy._clipping import (
    CLIP_COUNT_SHARE,
    ClipTally,
    clip_cost,
    release_clip_counts,
    warn_clipped_exactly,
)
from skdpsynth.privacy._domain import drop_unreleased_categories, estimate_schema
from skdpsynth.privacy._noise import NoiseSource
from skdpsynth.privacy._table import PrivateTable
from skdpsynth.schema import TableSchema, infer_schema, resolve_schema
from skdpsynth.utils._optional import require
from skdpsynth.utils._param_validation import Interval, StrOptions, validate_parameter_constraints
from skdpsynth.utils._random import check_random_state, cohort_seed_sequence
from skdpsynth.utils._validation import check_n_samples, check_table

__all__ = ["BaseSynthesizer", "BaseTabularSynthesizer", "FitContext", "TableInput"]

#: rows drawn per batch by :meth:`BaseSynthesizer.sample_batches` (and by ``sample`` for large n)
SAMPLE_BATCH = 100_000


@dataclass
class FitContext:
    """What one ``fit`` / ``partial_fit`` call gives a synthesizer's cohort hook.

    Attributes
    ----------
    accountant : BudgetAccountant
        This cohort's budget: plan with ``require``, charge through the
        mechanisms in :mod:`skdpsynth.privacy`.
    noise : NoiseSource
        The only source of privacy noise (secure unless ``reproducible_noise``).
    rng : numpy.random.Generator
        Everything that is not privacy noise (initialisation, model batching),
        governed by ``random_state``.
    first : bool
        True for ``fit`` (a fresh model), False for ``partial_fit``.
    params : dict
        Extra keyword arguments given to ``fit`` / ``partial_fit``.
    """

    accountant: BudgetAccountant
    noise: NoiseSource
    rng: np.random.Generator
    first: bool
    params: dict = field(default_factory=dict)

    @property
    def cohort(self) -> int:
        """Index of this ``fit`` / ``partial_fit`` call (0 = ``fit``)."""
        return self.accountant.cohort


class BaseSynthesizer(BaseEstimator, ABC):
    """Base class of all synthesizers.

    Subclasses declare their parameters in ``_parameter_constraints`` (extending
    this class's, as ``{**BaseSynthesizer._parameter_constraints, ...}``) and
    implement:

    * ``_check_input(X, y, reset) -> data``: validation and normalisation,
      before any budget is spent; the returned data go to the cohort hook and
      are never stored;
    * ``_fit_cohort(data, ctx)``: fit one cohort, spending through ``ctx``
      (:class:`FitContext`), and set ``n_estimate_``;
    * ``_sample(n_samples, rng, **params) -> DataFrame``.

    Parameters common to every synthesizer: ``epsilon`` (per cohort; ``None`` =
    non-private), ``delta``, ``random_state`` and ``reproducible_noise``.

    Fitted attributes
    -----------------
    budget_log_ : tuple of BudgetRecord
        Every use of the private data, in order.
    n_cohorts_ : int
        Number of ``fit`` / ``partial_fit`` calls folded in.
    n_estimate_ : int
        A DP estimate of the number of people the fitted model represents
        (the latest cohort, or all cohorts for synthesizers that pool them):
        the default release size, since the exact number is private.
    privacy_spent_ : PrivacySpent
        Derived from ``budget_log_`` on every read; never above the request.
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither"), None],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "random_state": ["random_state", np.random.Generator, np.random.SeedSequence],
        "reproducible_noise": ["boolean"],
    }
    #: import names of the optional packages ``fit`` needs (an extra), checked before anything is read or spent
    _requires: tuple[str, ...] = ()

    # -- public API -------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, **fit_params: Any) -> BaseSynthesizer:
        """Fit from scratch on one cohort (the target, if any, is a column of ``X``).

        Parameters
        ----------
        X : pandas.DataFrame or array-like
            Private data, one row (or, for sequences, one learner) per person.
        y : array-like, optional
            Joined to ``X`` as one more column to synthesize.
        **fit_params
            Options of the synthesizer's fit, passed to its cohort hook.

        Returns
        -------
        self
        """
        self._check_request()
        data = self._check_input(X, y, reset=True)
        self.budget_log_ = ()
        self._delta_zcdp_ = {}
        self.n_cohorts_ = 0
        self._run_cohort(data, first=True, fit_params=fit_params)
        self._sample_rng_ = check_random_state(cohort_seed_sequence(self.random_state, -1))
        return self

    def partial_fit(self, X: Any, y: Any = None, **fit_params: Any) -> BaseSynthesizer:
        """Fold in a new cohort (new people); equivalent to ``fit`` when not fitted.

        The cohort gets its own budget (``epsilon``, ``delta``); how cohorts
        compose is set by ``cohort_composition`` and shown by ``privacy_spent_``.

        Parameters
        ----------
        X : pandas.DataFrame or array-like
            The new cohort, with the same columns as before.
        y : array-like, optional
            As in :meth:`fit`.
        **fit_params
            As in :meth:`fit`.

        Returns
        -------
        self
        """
        if not hasattr(self, "budget_log_"):
            return self.fit(X, y, **fit_params)
        self._check_request()
        data = self._check_input(X, y, reset=False)
        self._run_cohort(data, first=False, fit_params=fit_params)
        return self

    def sample(self, n_samples: int | None = None, *, random_state: Any = None, **params: Any) -> pd.DataFrame:
        """Draw synthetic data (post-processing: spends no budget).

        Parameters
        ----------
        n_samples : int, optional
            Number of rows (for sequence synthesizers: learners). Default:
            ``n_estimate_``, a DP estimate of the number of people. Passing the
            exact training size releases that number, which DP protects.
        random_state : None, int or Generator
            ``None`` continues the synthesizer's own stream (successive calls
            differ); an int gives a reproducible draw.
        **params
            Options of the synthesizer's sampler (e.g. ``conditions``).

        Returns
        -------
        pandas.DataFrame
        """
        n_samples, rng = self._sample_request(n_samples, random_state)
        if n_samples <= SAMPLE_BATCH:
            return self._sample(n_samples, rng, **params)
        return pd.concat(list(self._batches(n_samples, rng, SAMPLE_BATCH, params)), ignore_index=True)

    def sample_batches(self, n_samples: int | None = None, *, batch_size: int = SAMPLE_BATCH,
                       random_state: Any = None, **params: Any) -> Iterator[pd.DataFrame]:
        """Draw ``n_samples`` rows in batches of at most ``batch_size``, so memory stays bounded for any n.

        Parameters
        ----------
        n_samples, random_state, **params
            As in :meth:`sample`.
        batch_size : int
            Rows per batch.

        Yields
        ------
        pandas.DataFrame
        """
        n_samples, rng = self._sample_request(n_samples, random_state)
        batch_size = check_n_samples(batch_size)
        return self._batches(n_samples, rng, batch_size, params)

    @property
    def privacy_spent_(self) -> PrivacySpent:
        """The guarantee of everything fitted so far, derived from ``budget_log_``."""
        self._check_fitted()
        return compose(self.budget_log_, delta_zcdp=self._delta_zcdp_,
                       composition=getattr(self, "cohort_composition", "parallel"))

    # -- machinery --------------------------------------------------------------
    def _check_request(self) -> None:
        """Parameters and budget, validated before any data is read or any budget spent."""
        try:
            validate_parameter_constraints(self._parameter_constraints, self.get_params(deep=False),
                                           caller_name=type(self).__name__)
        except InvalidParameterError as exc:
            if "'epsilon'" in str(exc) or "'delta'" in str(exc):
                raise InvalidBudgetError(str(exc)) from None
            raise
        require(*self._requires, purpose=type(self).__name__)
        check_budget(self.epsilon, self.delta)
        why = self._delta_required_by()
        if why and self.epsilon is not None and not self.delta > 0:
            raise PrivacyBudgetError(f"{type(self).__name__} {why}, which gives (epsilon, delta)-DP only with "
                                     f"delta > 0; set delta (e.g. 1e-9), got delta={self.delta!r}.")
        if self.reproducible_noise and not isinstance(self.random_state, (Integral, np.random.SeedSequence)):
            raise ValueError(
                "reproducible_noise=True derives the privacy noise from random_state, so random_state must be an "
                f"int or SeedSequence (got {self.random_state!r}). Leave reproducible_noise=False for a release."
            )

    def _delta_required_by(self) -> str | None:
        """Why this synthesizer's mechanism needs ``delta > 0`` (e.g. "measures under zCDP"), or None; override."""
        return None

    def _sample_request(self, n_samples: int | None, random_state: Any) -> tuple[int, np.random.Generator]:
        self._check_fitted()
        if n_samples is None:
            n_samples = self.n_estimate_
        n_samples = check_n_samples(n_samples)
        rng = self._sample_rng_ if random_state is None else check_random_state(random_state)
        return n_samples, rng

    def _batches(self, n: int, rng: np.random.Generator, size: int, params: dict) -> Iterator[pd.DataFrame]:
        for start in range(0, n, size):
            yield self._sample(min(size, n - start), rng, **params)

    def _check_fitted(self) -> None:
        if not hasattr(self, "budget_log_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with appropriate "
                "arguments before using this estimator."
            )

    def _delta_for_zcdp(self, data: Any) -> float:
        """Share of ``delta`` at which this cohort's zCDP part is converted (override if needed)."""
        return self.delta

    def _run_cohort(self, data: Any, first: bool, fit_params: dict) -> None:
        cohort = self.n_cohorts_
        model_seed, noise_seed = cohort_seed_sequence(self.random_state, cohort).spawn(2)
        noise = NoiseSource.reproducible_from(noise_seed) if self.reproducible_noise else NoiseSource.secure()
        accountant = BudgetAccountant(self.epsilon, self.delta, delta_zcdp=self._delta_for_zcdp(data), cohort=cohort,
                                      noise="reproducible" if self.reproducible_noise else "secure")
        ctx = FitContext(accountant, noise, check_random_state(model_seed), first, dict(fit_params))
        try:
            self._fit_cohort(data, ctx)
        finally:
            # whatever was spent is logged, even if the fit failed half-way
            self.budget_log_ = self.budget_log_ + accountant.records
            self._delta_zcdp_ = {**self._delta_zcdp_, cohort: accountant.delta_zcdp}
        self.n_cohorts_ = cohort + 1

    @abstractmethod
    def _check_input(self, X: Any, y: Any, reset: bool) -> Any:
        """Validate ``X`` (and ``y``) before any budget is spent; return the data for ``_fit_cohort``."""

    @abstractmethod
    def _fit_cohort(self, data: Any, ctx: FitContext) -> None:
        """Fit one cohort, spending only through ``ctx``; set ``n_estimate_``."""

    @abstractmethod
    def _sample(self, n_samples: int, rng: np.random.Generator, **params: Any) -> pd.DataFrame:
        """Draw ``n_samples`` rows from the fitted model (post-processing)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.non_deterministic = False
        tags.requires_fit = True
        return tags


@dataclass
class TableInput:
    """A validated cohort: the table as given and, when the schema is known up front, its normalised form."""

    frame: pd.DataFrame
    normalised: pd.DataFrame | None = None
    #: with ``normalised``: the exact tally of the values the schema clipped (private; released only noisily)
    clipped: ClipTally | None = None


class BaseTabularSynthesizer(BaseSynthesizer):
    """Base of synthesizers for one-row-per-person tables.

    Adds: the public schema (parameter ``schema``; when None, estimated under DP
    with ``domain_share`` of epsilon and delta, or read without privacy when
    ``epsilon=None``), validation of every cohort against it, and release
    dtypes decided by the schema. Subclasses implement ``_fit_table(Xn, ctx)``
    on the schema-normalised table and ``_sample_table(n, rng, **params)``.

    Fitted attributes
    -----------------
    schema_ : TableSchema
        The domain used (given, DP-estimated, or inferred non-privately).
    feature_names_in_ : ndarray of str
        Column names, when ``X`` was a DataFrame.
    n_features_in_ : int
        Number of columns (including a joined ``y``).
    dtypes_ : dict of str to str
        Release dtypes, decided by the schema (:func:`release_dtype`).
    clip_counts_ : dict of str to float
        Set when a fixed schema's bounded columns were counted (:meth:`_count_clipped`): the latest cohort's noisy
        count of the values clipped to the public bounds, per column (released under DP; never the exact count).
    """

    _parameter_constraints: dict = {
        **BaseSynthesizer._parameter_constraints,
        "schema": [TableSchema, dict, str, os.PathLike, None],
        "domain_share": [Interval(Real, 0, 1, closed="neither")],
    }
    #: parameter constraint for synthesizers that have ``cohort_composition``
    _COMPOSITION = [StrOptions({"parallel", "sequential"})]

    def _check_input(self, X: Any, y: Any, reset: bool) -> TableInput:
        frame = self._check_columns(X, y, reset)
        schema = resolve_schema(getattr(self, "schema", None))
        if schema is None:
            return TableInput(frame)
        normalised, masks = schema._validate_for_fit(frame)  # fails before any budget is spent
        return TableInput(frame, normalised, ClipTally().add(masks))

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
        elif tuple(frame.columns) != self.columns_:
            added = [c for c in frame.columns if c not in self.columns_]
            lost = [c for c in self.columns_ if c not in frame.columns]
            detail = (f"new columns {added}, missing columns {lost}" if added or lost
                      else "the same columns in a different order")
            count = (f"X has {n_x} features, but {type(self).__name__} is expecting {self.n_features_in_} "
                     "features as input: " if n_x != self.n_features_in_ else "")
            raise SchemaError(f"{count}this cohort's columns differ from the first cohort's ({detail}); {why}")
        return frame

    def _fit_cohort(self, data: TableInput, ctx: FitContext) -> None:
        if ctx.first:
            self.schema_ = self._resolve_domain(data.frame, ctx)
            # release dtypes from the schema: the raw input dtypes (float64 for an int column with one
            # missing value) are never kept
            self.dtypes_ = {c: release_dtype(self.schema_[c], data.frame[c].dtype) for c in self.columns_}
        if not self.schema_.public and self.epsilon is not None:
            ctx.accountant.declare_nonprivate("domain read from the data (schema not confirmed public)")
        given = resolve_schema(getattr(self, "schema", None))
        if data.normalised is not None and given is not None and self.schema_ == given:
            Xn, clipped = data.normalised, data.clipped
        else:
            X = data.frame
            if given is None and self.epsilon is not None:
                X = drop_unreleased_categories(X, self.schema_)  # labels the DP domain did not release
            Xn, masks = self.schema_._validate_for_fit(X)
            # where the domain was estimated on this very cohort, the estimate's noisy tail check covers its bounds
            clipped = None if ctx.first and given is None else ClipTally().add(masks)
        self._count_clipped(clipped, ctx)
        self._fit_table(self._private_view(Xn, ctx) if self._takes_table else Xn, ctx)

    def _private_view(self, Xn: Any, ctx: FitContext) -> Any:
        """What ``_fit_table`` receives when ``_takes_table``: the cohort behind a handle of DP queries."""
        return PrivateTable(Xn, self.schema_, accountant=ctx.accountant, noise=ctx.noise)

    #: True for synthesizers whose ``_fit_table`` takes a :class:`~skdpsynth.privacy.PrivateTable` (the rows seen
    #: only through DP queries) instead of the normalised DataFrame; see ``tests/test_boundary.py`` for the list of
    #: those not converted yet
    _takes_table: bool = False

    #: True for models charged wholly in zCDP when the cohort converts zCDP at a positive delta: the clipped values
    #: are then counted by the Gaussian mechanism, so the whole fit stays Gaussian (and its mu-GDP claim holds)
    _zcdp_model: bool = False

    def _count_clipped(self, clipped: ClipTally | None, ctx: FitContext) -> None:
        """Release how many values a fixed schema clipped in this cohort as a noisy count per column (charged:
        ``CLIP_COUNT_SHARE`` of epsilon, see :meth:`_domain_budget`, or of rho for a zCDP model), warning about the
        columns above the noise; never the exact count. Sets ``clip_counts_``."""
        if not clipped:  # nothing fixed, or no bounded column (public): nothing to count
            return
        if self.epsilon is None:
            warn_clipped_exactly(clipped, stacklevel=6)
            return
        cost = clip_cost(ctx.accountant, zcdp=self._zcdp_model and ctx.accountant.delta_zcdp > 0)
        self.clip_counts_ = release_clip_counts(clipped, noise=ctx.noise, accountant=ctx.accountant,
                                                label=type(self).__name__, stacklevel=6, **cost)

    def _domain_budget(self, schema_given: bool) -> tuple[float, float]:
        """(epsilon, delta) slice of a cohort's budget for the public domain (public: parameters only).

        With the domain fixed (given, or estimated on an earlier cohort): ``CLIP_COUNT_SHARE`` of epsilon for the
        noisy count of the values it clips (:meth:`_count_clipped`). Nothing with ``epsilon=None``. Otherwise, for
        the DP domain estimate on the first cohort, ``domain_share`` of both. The slice is a
        ceiling: within it the estimate spends only on what is unknown (booleans need a missing cell only), and when
        the model is charged in zCDP the estimate composes with it, so the model keeps what it would have after the
        slice while the domain gets several times the rho the slice buys alone (``skdpsynth.privacy._domain_plan``).
        """
        if self.epsilon is None:
            return 0.0, 0.0
        if schema_given:  # the noisy count of the values a fixed schema clips (pure DP, no delta)
            fixed = resolve_schema(getattr(self, "schema", None)) or getattr(self, "schema_", None)
            bounded = fixed is None or any(c.kind in ("continuous", "integer", "datetime") for c in fixed.columns)
            return (self.epsilon * CLIP_COUNT_SHARE if bounded else 0.0), 0.0
        share = getattr(self, "domain_share", 0.1)
        return self.epsilon * share, self.delta * share

    def _delta_for_zcdp(self, data: Any) -> float:
        # the domain is estimated on the first cohort only; later cohorts keep their whole delta
        _, delta_dom = self._domain_budget(getattr(self, "schema", None) is not None or self.n_cohorts_ > 0)
        return self.delta - delta_dom

    def _resolve_domain(self, X: pd.DataFrame, ctx: FitContext) -> TableSchema:
        schema = resolve_schema(getattr(self, "schema", None))
        if schema is not None:
            return schema
        if self.epsilon is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                inferred = infer_schema(X)
            ctx.accountant.declare_nonprivate("domain read from the data (epsilon=None)")
            return inferred
        eps_dom, delta_dom = self._domain_budget(False)
        share = getattr(self, "domain_share", 0.1)
        # the whole plan (domain and model) is checked against the budget before anything is measured
        return estimate_schema(X, epsilon=eps_dom, delta=delta_dom, accountant=ctx.accountant, noise=ctx.noise,
                               later=self._planned_model_cost(tuple(self.columns_), eps_dom, delta_dom),
                               bound_quantiles=getattr(self, "bound_quantiles", None),
                               label=f"{type(self).__name__} DP domain estimate (domain_share={share:g})")

    def _planned_model_cost(self, columns: tuple[str, ...], eps_dom: float, delta_dom: float) -> list[BudgetRecord]:
        """Records the model will charge after the domain (for the up-front check); override.

        Public inputs only (the column names, the parameters): the plan, and a refusal it leads to, must not
        depend on anyone's values (the columns' kinds are not known yet: the estimate decides them).

        When they include zCDP records, the domain estimate is charged in zCDP too and composes with the model
        (the model must then spend what ``accountant.remaining_rho()`` leaves); otherwise the estimate stays
        within its (epsilon, delta) slice on its own.
        """
        return []

    def _sample(self, n_samples: int, rng: np.random.Generator, **params: Any) -> pd.DataFrame:
        table = self._sample_table(n_samples, rng, **params)
        return restore_dtypes(table[list(self.columns_)], self.schema_, self.dtypes_)

    @abstractmethod
    def _fit_table(self, X: pd.DataFrame, ctx: FitContext) -> None:
        """Fit on the schema-normalised table, spending only through ``ctx``; set ``n_estimate_``."""

    @abstractmethod
    def _sample_table(self, n_samples: int, rng: np.random.Generator, **params: Any) -> pd.DataFrame:
        """Draw ``n_samples`` rows in the schema-normalised form."""
