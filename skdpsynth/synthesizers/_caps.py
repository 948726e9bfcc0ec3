"""CAPS: cyclic adaptive private synthesis (Ito, Hsu & Ogata; papers/caps.md).

One cycle per cohort:

1. (first cycle only) pre-train M1, an unconditional VAE over the features, on
   public data (or a documented data-free surrogate);
2. SPSSL: train a fresh M2 (Kingma et al. 2014) on M1's latent z1 with the label,
   the private labelled loss through DP-Adam (Opacus: Poisson sampling,
   per-example clipping, Gaussian noise) and the unlabelled loss on samples from
   M1 (public) through plain Adam steps;
3. release: M1 + M2 and a DP label histogram;
4. generative replay: update M1 on samples of M1 + M2 mixed with samples of the old
   M1 (post-processing), for the next cycle.
"""

from __future__ import annotations

import copy
import logging
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from skdpsynth.base import BaseTabularSynthesizer, resolve_schema
from skdpsynth.exceptions import PrivacyBudgetError, SchemaError
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord
from skdpsynth.privacy._mechanisms import geometric_mechanism
from skdpsynth.schema import ColumnSpec, TableSchema
from skdpsynth.utils._random import check_random_state, torch_seed
from skdpsynth.utils._validation import check_n_samples

__all__ = ["CAPSSynthesizer"]

logger = logging.getLogger(__name__)


def _label_categories(spec: ColumnSpec) -> tuple:
    """The public label space of the target column's spec."""
    if spec.kind in ("categorical", "boolean"):
        return tuple(spec.categories)
    if spec.kind == "integer" and spec.upper - spec.lower + 1 <= 100:
        return tuple(range(int(spec.lower), int(spec.upper) + 1))
    raise SchemaError(
        f"target column {spec.name!r} must be categorical, boolean or a small integer range (a class label); "
        f"its schema kind is {spec.kind!r}."
    )


def _progress(iterable, verbose: int, desc: str, total: int | None = None):
    if verbose >= 1:
        from tqdm.auto import tqdm

        return tqdm(iterable, desc=desc, total=total, leave=False)
    return iterable


class CAPSSynthesizer(BaseTabularSynthesizer):
    """Cyclic adaptive private synthesis: M1 (public VAE) + M2 (DP semi-supervised), one cycle per cohort.

    ``fit`` pre-trains M1 on public data and runs one cycle; each ``partial_fit``
    runs one more cycle on a new cohort (new people); the label space may change
    between cycles (``label_space=``). ``sample`` draws labels from the cycle's DP
    label histogram (or fixes them with ``conditions``), then z2 from the prior,
    z1 from M2 and x from M1.

    Parameters
    ----------
    epsilon : float or None, default=1.0
        Budget per cohort (cycle). ``None`` trains without DP (not private).
    delta : float, default=1e-5
        delta per cohort (DP-SGD, and the domain when ``schema`` is None).
    target : str
        The label column (categorical; its public categories are the label space).
    public_data : DataFrame or None, default=None
        Public, unlabelled feature rows (same feature columns and schema) to
        pre-train M1. When None a surrogate is simulated from the public schema:
        :func:`skdpsynth.datasets.make_learning_habits` when the features are the
        learning-habit schema, otherwise independent uniform draws from the schema.
    schema : TableSchema, dict, path or None, default=None
        Public domain of features and target (should be given; estimated under DP
        with ``domain_share`` of the budget otherwise).
    m1_hidden : tuple of int, default=(128,)
        Hidden layers of M1's encoder (mirrored in its decoder).
    z1_dim : int, default=16
        M1 latent size.
    m2_hidden : tuple of int, default=(32,)
        Hidden layers of M2's encoder and decoder.
    z2_dim : int, default=4
        M2 latent size.
    classifier_hidden : tuple of int, default=(32,)
        Hidden layers of q(y | z1).
    beta1, beta2 : float, default=1.0
        KL weights of M1 and M2.
    alpha : float, default=1.0
        Weight of the classification term ``-log q(y | z1)`` in the labelled loss.
    pretrain_epochs : int, default=10
        Epochs of M1 pre-training on the public data.
    pretrain_batch_size : int, default=256
    n_surrogate : int, default=10000
        Rows of surrogate public data when ``public_data`` is None.
    epochs : int, default=30
        Private epochs of SPSSL: ``steps = round(epochs / sample_rate)`` DP steps.
    batch_size : int, default=32
        Expected private batch: ``sample_rate = batch_size / n_cohort``.
    max_grad_norm : float, default=1.0
        Per-example clipping norm.
    lr : float, default=1e-3
        Adam learning rate of the DP steps, the public steps and M1.
    n_public_samples : int, default=2000
        Unlabelled samples drawn from M1 for SPSSL's unlabelled loss.
    public_batch_size : int, default=64
        Batch of the public step taken after each DP step.
    replay_new, replay_old : int, default=10000
        Generative replay: samples from M1 + M2 and from the old M1 (the paper's
        10,000 + 10,000, replay ratio 0.5).
    replay_epochs : int, default=3
    replay_batch_size : int, default=256
    adapt_prior : bool, default=False
        After SPSSL, replace p(z2 | y) = N(0, I) by a Gaussian moment-matched to
        the aggregate posterior q(z2 | y, z1) over the public samples (post-
        processing); used for sampling and for the replay into the next cycle's M1.
    label_share : float, default=0.1
        Share of the cohort's epsilon for the DP label histogram.
    max_noise_multiplier : float, default=50.0
        Refuse (before any spend) a cohort whose calibrated noise multiplier exceeds this.
    domain_share : float, default=0.1
        Share of epsilon and delta for the DP schema when ``schema`` is None.
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        "parallel": every cohort is different people (each person's guarantee is
        one cycle's (epsilon, delta)); "sequential" when people may recur.
    random_state : int, Generator or None, default=None
    verbose : int, default=0
        ``>= 1`` shows tqdm progress bars (pre-training, SPSSL, replay).

    Attributes
    ----------
    n_cycles_ : int
        Cycles run (= ``n_cohorts_``).
    label_space_ : tuple
        The current cycle's label space.
    label_probs_ : ndarray
        DP label distribution of the current cycle (for sampling).
    dpsgd_ : list of dict
        Per cycle: noise multiplier, sample rate, steps and the accounting report.
    m1_, m2_ : torch modules
        The released M1 (of the current cycle) and M2.

    Privacy
    -------
    Neighbouring relation: add/remove one person (one row) of a cohort. Per
    cycle: the label histogram (L1 sensitivity 1, two-sided geometric,
    ``label_share * epsilon``), then DP-SGD on the labelled loss (per-example L2
    clipping to ``max_grad_norm``, Gaussian noise ``noise_multiplier *
    max_grad_norm``, Poisson sampling at ``batch_size / n``; the noise multiplier
    is calibrated with the RDP accountant so that its epsilon is at most the rest
    of the budget and its delta is ``delta``), recorded as one ``"dp-sgd"``
    ``approx`` record with its RDP epsilon and, in ``details``, the PLD epsilon and
    mu-GDP. Public data, samples from M1 and generative replay are not charged
    (public / post-processing). The cohort size ``n`` sets the sample rate and is
    treated as public (class sizes usually are). Cohorts compose per
    ``cohort_composition``.
    """

    def __init__(self, *, epsilon=1.0, delta=1e-5, target=None, public_data=None, schema=None,
                 m1_hidden=(128,), z1_dim=16, m2_hidden=(32,), z2_dim=4, classifier_hidden=(32,),
                 beta1=1.0, beta2=1.0, alpha=1.0, pretrain_epochs=10, pretrain_batch_size=256,
                 n_surrogate=10000, epochs=30, batch_size=32, max_grad_norm=1.0, lr=1e-3,
                 n_public_samples=2000, public_batch_size=64, replay_new=10000, replay_old=10000,
                 replay_epochs=3, replay_batch_size=256, adapt_prior=False, label_share=0.1,
                 max_noise_multiplier=50.0, domain_share=0.1, cohort_composition="parallel",
                 random_state=None, verbose=0):
        self.epsilon = epsilon
        self.delta = delta
        self.target = target
        self.public_data = public_data
        self.schema = schema
        self.m1_hidden = m1_hidden
        self.z1_dim = z1_dim
        self.m2_hidden = m2_hidden
        self.z2_dim = z2_dim
        self.classifier_hidden = classifier_hidden
        self.beta1 = beta1
        self.beta2 = beta2
        self.alpha = alpha
        self.pretrain_epochs = pretrain_epochs
        self.pretrain_batch_size = pretrain_batch_size
        self.n_surrogate = n_surrogate
        self.epochs = epochs
        self.batch_size = batch_size
        self.max_grad_norm = max_grad_norm
        self.lr = lr
        self.n_public_samples = n_public_samples
        self.public_batch_size = public_batch_size
        self.replay_new = replay_new
        self.replay_old = replay_old
        self.replay_epochs = replay_epochs
        self.replay_batch_size = replay_batch_size
        self.adapt_prior = adapt_prior
        self.label_share = label_share
        self.max_noise_multiplier = max_noise_multiplier
        self.domain_share = domain_share
        self.cohort_composition = cohort_composition
        self.random_state = random_state
        self.verbose = verbose

    # -- public API ---------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, *, label_space: Sequence | None = None) -> CAPSSynthesizer:
        """Pre-train M1 on public data, then run the first cycle on cohort ``X``.

        Parameters
        ----------
        X : pandas.DataFrame
            The first cohort: features and the ``target`` column.
        y : array-like, optional
            The label, when not a column of ``X`` (named ``target``).
        label_space : sequence, optional
            Public label space of this cycle (default: the schema's categories of ``target``).

        Returns
        -------
        self
        """
        self._pending_label_space = None if label_space is None else tuple(label_space)
        try:
            return super().fit(X, y)
        finally:
            self._pending_label_space = None

    def partial_fit(self, X: Any, y: Any = None, *, label_space: Sequence | None = None) -> CAPSSynthesizer:
        """Run one more cycle (SPSSL on the new cohort, then generative replay).

        Parameters
        ----------
        X : pandas.DataFrame
            The new cohort (different people, same feature columns).
        y : array-like, optional
            As in :meth:`fit`.
        label_space : sequence, optional
            Public label space of this cycle when it differs from the previous
            cycle's (e.g. exam grades -> essay grades); M2 and the label histogram
            then use it.

        Returns
        -------
        self
        """
        if not hasattr(self, "budget_log_"):
            return self.fit(X, y, label_space=label_space)
        self._pending_label_space = None if label_space is None else tuple(label_space)
        try:
            return super().partial_fit(X, y)
        finally:
            self._pending_label_space = None

    @property
    def n_cycles_(self) -> int:
        """Number of cycles run."""
        self._check_fitted()
        return self.n_cohorts_

    def sample(self, n_samples: int, *, random_state: Any = None,
               conditions: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Draw synthetic rows (post-processing: spends no budget).

        Parameters
        ----------
        n_samples : int
            Number of rows.
        random_state : None, int or Generator
            ``None`` continues the synthesizer's own stream.
        conditions : mapping, optional
            ``{target: label}`` fixes the label of every row (conditional
            generation); only the target can be conditioned on.

        Returns
        -------
        pandas.DataFrame
        """
        self._check_fitted()
        n_samples = check_n_samples(n_samples)
        label = None
        if conditions:
            if not isinstance(conditions, Mapping):
                raise TypeError(f"conditions must be a mapping like {{{self.target!r}: label}}.")
            other = [k for k in conditions if k != self.target]
            if other:
                raise ValueError(f"CAPSSynthesizer can only condition on the target {self.target!r}; got {other}.")
            label = conditions[self.target]
            if label not in self.label_space_:
                raise ValueError(
                    f"condition {self.target!r}={label!r} is not in the current label space {list(self.label_space_)}.")
        rng = self._sample_rng_ if random_state is None else check_random_state(random_state)
        self._sample_label = label
        try:
            return self._sample(n_samples, rng)
        finally:
            self._sample_label = None

    def predict_label_proba(self, X: pd.DataFrame) -> np.ndarray:
        """q(y | z1) of the released M2 on feature rows (z1 = M1 encoder mean); columns follow ``label_space_``."""
        import torch

        self._check_fitted()
        x = self._feature_tensor(X)
        with torch.no_grad():
            mu, _ = self.m1_.encode(x)
            return torch.softmax(self.m2_.cls(mu), 1).numpy()

    def predict_label(self, X: pd.DataFrame) -> np.ndarray:
        """Most probable label under q(y | z1)."""
        p = self.predict_label_proba(X)
        return np.array(self.label_space_, dtype=object)[p.argmax(1)]

    def reconstruct(self, X: pd.DataFrame, *, random_state: Any = None) -> pd.DataFrame:
        """Pass labelled rows through M1 + M2: z1 ~ q(z1|x), z2 ~ q(z2|y,z1), z1' ~ p(z1|y,z2), x' ~ p(x|z1').

        Used to evaluate reconstruction (as in the paper's AJS of reconstruction);
        applies the released model to ``X``: nothing is stored.
        """
        import torch

        self._check_fitted()
        g = torch.Generator().manual_seed(torch_seed(check_random_state(random_state)))
        x = self._feature_tensor(X)
        labels = self._label_codes(X[self.target])
        y = torch.from_numpy(labels)
        with torch.no_grad():
            mu, lv = self.m1_.encode(x)
            z1 = mu + (0.5 * lv).exp() * torch.randn(mu.shape, generator=g)
            m2, l2 = self.m2_.posterior_z2(z1, y)
            z2 = m2 + (0.5 * l2).exp() * torch.randn(m2.shape, generator=g)
            z1r = self.m2_.generate_z1(y, z2, g)
            out = self.m1_.decoder(z1r)
            feats = self.codec_.sample(out, self.m1_.logvar(), g)
        feats[self.target] = np.array(self.label_space_, dtype=object)[labels]
        return feats[list(self.columns_)]

    # -- validation (no budget) ----------------------------------------------------------
    def _features(self, columns) -> list[str]:
        return [c for c in columns if c != self.target]

    def _check_params(self) -> None:
        if self.target is None or not isinstance(self.target, str):
            raise ValueError("CAPSSynthesizer needs target=<name of the label column> (a string).")
        for name in ("epochs", "batch_size", "pretrain_epochs", "pretrain_batch_size", "z1_dim", "z2_dim",
                     "n_public_samples", "public_batch_size", "replay_batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}.")
        for name in ("replay_new", "replay_old", "replay_epochs", "n_surrogate"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {v!r}.")
        for name in ("max_grad_norm", "lr", "max_noise_multiplier"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"{name} must be positive, got {v!r}.")
        for name in ("beta1", "beta2", "alpha"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or v < 0:
                raise ValueError(f"{name} must be >= 0, got {v!r}.")
        if not 0 < self.label_share < 1:
            raise ValueError(f"label_share must be in (0, 1), got {self.label_share!r}.")
        if self.cohort_composition not in ("parallel", "sequential"):
            raise ValueError(f"cohort_composition must be 'parallel' or 'sequential', got {self.cohort_composition!r}.")

    def _check_input(self, X: Any, y: Any, reset: bool) -> pd.DataFrame:
        self._check_params()
        frame = self._check_columns(
            X, y, reset, y_name=self.target,
            why="CAPS needs the same feature space (and target) in every cycle, in the same order.")
        if self.target not in frame.columns:
            raise SchemaError(f"target column {self.target!r} is not in X (columns: {list(frame.columns)[:10]}...).")
        features = self._features(frame.columns)
        if not features:
            raise SchemaError("X has no feature columns besides the target.")
        target = frame[self.target]
        if target.isna().any():
            raise SchemaError(f"target column {self.target!r} has {int(target.isna().sum())} missing values; "
                              "every private row needs a label.")
        if pd.api.types.is_float_dtype(target.dtype) and (np.abs(target - np.round(target)) > 0).any():
            raise SchemaError(f"target column {self.target!r} holds non-integer numbers: CAPS needs a class label.")
        if target.nunique() < 2:
            raise SchemaError(f"target column {self.target!r} is constant: M2 needs at least two classes.")
        schema = self.schema_ if not reset else resolve_schema(self.schema)
        if schema is not None:
            missing = [c for c in frame.columns if c not in schema]
            if missing:
                raise SchemaError(f"columns {missing} are not in the schema.")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                schema.select(features).validate(frame[features])
            labels = self._pending_label_space or (
                self.label_space_ if not reset else _label_categories(schema[self.target]))
            self._check_labels(target, labels)
        elif self._pending_label_space is not None:
            self._check_labels(target, self._pending_label_space)
        if reset:
            self._check_public(features, schema)
        self._plan_ = self._plan(len(frame), schema_given=(resolve_schema(self.schema) is not None) or not reset)
        return frame

    def _check_labels(self, target: pd.Series, labels: Sequence) -> None:
        if len(labels) < 2:
            raise SchemaError(f"the label space of {self.target!r} needs at least two classes, got {list(labels)}.")
        values = [v.item() if isinstance(v, np.generic) else v for v in target.to_numpy(dtype=object)]
        unknown = sorted({repr(v) for v in values if v not in set(labels)})
        if unknown:
            raise SchemaError(f"target column {self.target!r} has labels {unknown[:5]} outside this cycle's label "
                              f"space {list(labels)}; pass label_space=[...] to partial_fit for a new label space.")

    def _check_public(self, features: list[str], schema: TableSchema | None) -> None:
        pub = self.public_data
        if pub is None:
            return
        if not isinstance(pub, pd.DataFrame):
            raise SchemaError("public_data must be a pandas DataFrame of feature rows.")
        cols = [c for c in pub.columns if c != self.target]
        if cols != features:
            raise SchemaError(
                f"public_data has columns {cols[:8]}... but the private features are {features[:8]}...: "
                "the public data must share the private data's feature schema (same columns, same order).")
        if len(pub) < 2:
            raise SchemaError("public_data needs at least two rows.")
        if schema is not None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    schema.select(features).validate(pub[features], clip=False)
            except SchemaError as exc:
                raise SchemaError(f"public_data does not match the feature schema: {exc}") from exc

    def _budget_split(self, schema_given: bool) -> tuple[float, float, float]:
        """(epsilon of the label histogram, epsilon of DP-SGD, delta of DP-SGD)."""
        eps_dom, delta_dom = self._domain_budget(schema_given)
        eps_label = self.label_share * self.epsilon
        return eps_label, self.epsilon - eps_dom - eps_label, self.delta - delta_dom

    def _plan(self, n: int, schema_given: bool) -> dict:
        from skdpsynth.privacy._dpsgd import calibrate_noise_multiplier

        q = min(1.0, self.batch_size / n)
        steps = max(1, int(round(self.epochs / q)))
        plan = {"n": n, "sample_rate": q, "steps": steps, "noise_multiplier": 0.0}
        if self.epsilon is None:
            return plan
        eps_label, eps_sgd, delta_sgd = self._budget_split(schema_given)
        if eps_sgd <= 0 or delta_sgd <= 0:
            raise PrivacyBudgetError(
                f"nothing is left for DP-SGD (epsilon {eps_sgd:.3g}, delta {delta_sgd:.3g}); lower label_share or "
                "domain_share, or give a schema; DP-SGD needs delta > 0.")
        try:
            sigma = calibrate_noise_multiplier(epsilon=eps_sgd, delta=delta_sgd, sample_rate=q, steps=steps)
        except ValueError as exc:
            raise PrivacyBudgetError(
                f"a cohort of {n} people is too small for epsilon={self.epsilon}: no DP-SGD noise multiplier "
                f"reaches epsilon={eps_sgd:.3g} with {steps} steps at sample rate {q:.3g} ({exc})") from exc
        if sigma > self.max_noise_multiplier:
            raise PrivacyBudgetError(
                f"a cohort of {n} people is too small for epsilon={self.epsilon} with epochs={self.epochs}, "
                f"batch_size={self.batch_size}: DP-SGD would need noise multiplier {sigma:.3g} "
                f"(> max_noise_multiplier={self.max_noise_multiplier}), i.e. noise that swamps the gradients. "
                "Raise epsilon, lower epochs, or raise batch_size.")
        plan.update(noise_multiplier=sigma, epsilon_sgd=eps_sgd, delta_sgd=delta_sgd, epsilon_label=eps_label)
        return plan

    def _planned_model_cost(self, X, eps_dom, delta_dom):
        if self.epsilon is None:
            return []
        eps_label, eps_sgd, delta_sgd = self._budget_split(False)
        return [BudgetRecord("geometric", "label histogram", "pure", epsilon=eps_label),
                BudgetRecord("dp-sgd", "M2 labelled loss", "approx", epsilon=eps_sgd, delta=delta_sgd)]

    def _resolve_domain(self, X, accountant, rng) -> TableSchema:
        schema = super()._resolve_domain(X, accountant, rng)
        spec = schema[self.target]
        labels = self._pending_label_space or _label_categories(spec)
        return self._with_labels(schema, labels, nullable=spec.nullable and resolve_schema(self.schema) is None)

    def _with_labels(self, schema: TableSchema, labels: Sequence, nullable: bool = False) -> TableSchema:
        spec = ColumnSpec(self.target, "categorical", categories=tuple(labels), nullable=nullable)
        return replace(schema, columns=tuple(spec if c.name == self.target else c for c in schema.columns))

    # -- fitting --------------------------------------------------------------------------
    def _fit_cohort(self, X, accountant, rngs, first):
        if not first and self._pending_label_space is not None:
            self.schema_ = self._with_labels(self.schema_, self._pending_label_space)
        super()._fit_cohort(X, accountant, rngs, first)

    def _feature_tensor(self, X: pd.DataFrame):
        import torch

        feats = self.codec_.schema.names
        missing = [c for c in feats if c not in X.columns]
        if missing:
            raise SchemaError(f"X lacks feature columns {missing[:5]}.")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            Xn = self.codec_.schema.validate(X[list(feats)])
        return torch.from_numpy(self.codec_.one_hot(*self.codec_.codes(Xn)[:2]))

    def _label_codes(self, values: pd.Series) -> np.ndarray:
        lookup = {v: i for i, v in enumerate(self.label_space_)}
        obj = [v.item() if isinstance(v, np.generic) else v for v in values.to_numpy(dtype=object)]
        try:
            return np.array([lookup[v] for v in obj], dtype=np.int64)
        except KeyError as exc:
            raise ValueError(f"label {exc.args[0]!r} is not in the label space {list(self.label_space_)}.") from None

    def _fit_table(self, X: pd.DataFrame, accountant: BudgetAccountant, rngs: dict, first: bool) -> None:
        import torch

        from skdpsynth.synthesizers._caps_nn import FeatureCodec

        gen = torch.Generator().manual_seed(torch_seed(rngs["model"]))
        features = self._features(X.columns)
        if first:
            self.codec_ = FeatureCodec(self.schema_.select(features))
            self.dpsgd_ = []
            self._m1_next = self._pretrain_m1(gen)
        labels = tuple(self.schema_[self.target].categories)
        target = X[self.target]
        keep = ~target.isna().to_numpy()
        if not keep.all():  # only possible with a DP-estimated schema that dropped a rare label
            warnings.warn(f"{int((~keep).sum())} rows whose label was not released by the DP schema are left out "
                          "of the labelled loss and the label histogram.", UserWarning, stacklevel=3)
        Xk = X.loc[keep]
        self.label_space_ = labels
        y = self._label_codes(Xk[self.target])
        plan = self._plan_
        cohort_n = int(keep.sum())

        # -- budget: plan everything, then charge before any noise is drawn ----------------------
        if accountant.private:
            from skdpsynth.privacy._dpsgd import dpsgd_privacy_report

            report = dpsgd_privacy_report(noise_multiplier=plan["noise_multiplier"], sample_rate=plan["sample_rate"],
                                          steps=plan["steps"], delta=plan["delta_sgd"])
            eps_sgd = report["epsilon_rdp"]
            sgd_record = BudgetRecord(
                "dp-sgd", f"M2 labelled loss (cycle {accountant.cohort})", "approx", epsilon=eps_sgd,
                delta=plan["delta_sgd"], sensitivity=float(self.max_grad_norm),
                noise_scale=plan["noise_multiplier"] * float(self.max_grad_norm),
                details={"noise_multiplier": plan["noise_multiplier"], "sample_rate": plan["sample_rate"],
                         "steps": plan["steps"], "epsilon_pld": report["epsilon_pld"], "mu": report["mu"],
                         "regret": report["regret"], "accountant": "rdp (opacus)",
                         "clip_norm": float(self.max_grad_norm)},
            )
            accountant.require([BudgetRecord("geometric", "label histogram", "pure", epsilon=plan["epsilon_label"]),
                                sgd_record], what=f"CAPS cycle {accountant.cohort}")
            counts = np.bincount(y, minlength=len(labels))
            noisy = geometric_mechanism(counts, sensitivity=1.0, epsilon=plan["epsilon_label"], rng=rngs["noise"],
                                        accountant=accountant, target=f"histogram of label {self.target!r}")
            accountant.spend(sgd_record)
        else:
            report = {"epsilon_rdp": math.inf}
            noisy = np.bincount(y, minlength=len(labels))
            accountant.spend(BudgetRecord("exact (non-private)", f"label histogram of {self.target!r}", "none",
                                          epsilon=math.inf))
            accountant.spend(BudgetRecord("exact (non-private)", "M2 labelled loss (no DP-SGD)", "none",
                                          epsilon=math.inf))
        c = np.clip(noisy.astype(float), 0, None)
        self.label_probs_ = c / c.sum() if c.sum() > 0 else np.full(len(labels), 1 / len(labels))

        # -- SPSSL -----------------------------------------------------------------------------------
        self.m1_ = self._m1_next
        x_priv = torch.from_numpy(self.codec_.one_hot(*self.codec_.codes(Xk[features])[:2]))
        self.m2_ = self._spssl(x_priv, torch.from_numpy(y), len(labels), plan, cohort_n, gen, rngs["noise"])
        del x_priv
        self.prior_ = self._fit_prior(gen) if self.adapt_prior else None
        self.dpsgd_.append({**{k: plan[k] for k in ("noise_multiplier", "sample_rate", "steps")},
                            "cycle": accountant.cohort, "report": report})
        # -- generative replay (post-processing) ----------------------------------------------------
        self._m1_next = self._replay(gen)

    # -- training pieces ------------------------------------------------------------------
    def _new_m1(self, gen):
        from skdpsynth.synthesizers._caps_nn import M1VAE, init_module

        c = self.codec_
        return init_module(lambda: M1VAE(c.input_dim, c.output_dim, c.n_num, tuple(self.m1_hidden), self.z1_dim),
                           int(torch_seed_from(gen)))

    def _surrogate(self, gen) -> pd.DataFrame:
        """Data-free public surrogate from the public schema (documented in docs/caps.md)."""
        import torch

        schema = self.codec_.schema
        seed = int(torch_seed_from(gen))
        try:
            from skdpsynth.datasets import make_learning_habits

            n_weeks = len(schema) // 4
            ref = make_learning_habits(2, n_weeks=max(n_weeks, 1), random_state=0)
            ref_schema = ref.schema.select(ref.feature_names)
            if ref_schema.names == schema.names and all(
                    tuple(ref_schema[n].categories or ()) == tuple(schema[n].categories or ()) for n in schema.names):
                self.pretrain_source_ = "surrogate: make_learning_habits"
                return make_learning_habits(self.n_surrogate, n_weeks=n_weeks, random_state=seed).frame[
                    list(schema.names)]
        except (ImportError, ValueError, AttributeError, KeyError, TypeError):  # pragma: no cover - best effort
            pass
        self.pretrain_source_ = "surrogate: independent uniform draws from the schema"
        n = self.n_surrogate
        g = torch.Generator().manual_seed(seed)
        cols = {}
        for spec in schema.columns:
            u = torch.rand(n, generator=g).numpy()
            if spec.kind in ("categorical", "boolean"):
                cats = np.array(spec.categories, dtype=object)
                cols[spec.name] = cats[np.minimum((u * len(cats)).astype(int), len(cats) - 1)]
            else:
                lo, hi = spec.numeric_bounds
                v = lo + u * (hi - lo)
                if spec.kind == "integer":
                    v = np.round(v)
                cols[spec.name] = pd.to_datetime(v, unit="s") if spec.kind == "datetime" else v
        return pd.DataFrame(cols)

    def _train_m1(self, m1, codes, nums, obs, epochs, batch_size, gen, desc):
        import torch

        n = len(codes)
        if n == 0 or epochs == 0:
            return m1
        x_all = torch.from_numpy(self.codec_.one_hot(codes.numpy(), nums.numpy()))
        opt = torch.optim.Adam(m1.parameters(), lr=self.lr)
        m1.train()
        n_batches = max(1, math.ceil(n / batch_size))
        for _ in _progress(range(epochs), self.verbose, desc):
            perm = torch.randperm(n, generator=gen)
            for b in range(n_batches):
                idx = perm[b * batch_size:(b + 1) * batch_size]
                noise = torch.randn((len(idx), m1.latent_dim), generator=gen)
                loss = m1.loss(self.codec_, x_all[idx], codes[idx], nums[idx], obs[idx], noise, self.beta1).mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        m1.eval()
        return m1

    def _pretrain_m1(self, gen):
        pub = self.public_data
        if pub is not None:
            self.pretrain_source_ = "public_data"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                pub = self.codec_.schema.validate(pub[list(self.codec_.schema.names)])
        else:
            pub = self._surrogate(gen)
        _, codes, nums, obs = self.codec_.encode(pub)
        m1 = self._new_m1(gen)
        return self._train_m1(m1, codes, nums, obs, self.pretrain_epochs, self.pretrain_batch_size, gen,
                              "CAPS: pre-train M1")

    def _sample_m1(self, m1, n, gen):
        """Feature codes drawn from M1 alone: z1 ~ N(0, I), x ~ p(x | z1)."""
        import torch

        with torch.no_grad():
            out = m1.decoder(torch.randn((n, m1.latent_dim), generator=gen))
            return self._draw_codes(out, m1.logvar(), gen)

    def _draw_codes(self, out, logvar, gen):
        """(codes, nums, obs) tensors drawn from decoder output (no DataFrame round trip)."""
        import torch

        c = self.codec_
        n = out.shape[0]
        codes = torch.zeros((n, len(c.cat_heads)), dtype=torch.int64)
        for k, idx in c.groups.items():
            s, e = c.group_slices[k]
            probs = torch.softmax(out[:, s:e].reshape(n * len(idx), k), 1)
            codes[:, idx] = torch.multinomial(probs, 1, generator=gen).reshape(n, len(idx))
        if c.n_num:
            mean = torch.sigmoid(out[:, c.n_cat_units:])
            nums = (mean + (0.5 * logvar).exp() * torch.randn(mean.shape, generator=gen)).clamp(0, 1)
        else:
            nums = torch.zeros((n, 0))
        obs = torch.ones_like(nums)
        flag_idx = {h.flag_of: i for i, h in enumerate(c.cat_heads) if h.flag_of}
        for j, h in enumerate(c.num_heads):
            if h.name in flag_idx:
                miss = codes[:, flag_idx[h.name]] == 1
                nums[miss, j] = 0.5
                obs[miss, j] = 0.0
        return codes, nums.float(), obs.float()

    def _encode_z1(self, m1, codes, nums, gen):
        import torch

        with torch.no_grad():
            x = torch.from_numpy(self.codec_.one_hot(codes.numpy(), nums.numpy()))
            mu, lv = m1.encode(x)
            return mu + (0.5 * lv).exp() * torch.randn(mu.shape, generator=gen)

    def _spssl(self, x_priv, y, n_labels, plan, n, gen, noise_rng):
        """Semi-private semi-supervised learning of a fresh M2 (DP step on private rows + plain public step)."""
        import torch
        from opacus import GradSampleModule
        from opacus.optimizers import DPOptimizer

        from skdpsynth.synthesizers._caps_nn import M2Model, init_module

        m1 = self.m1_
        m2 = init_module(lambda: M2Model(self.z1_dim, n_labels, tuple(self.m2_hidden), self.z2_dim,
                                         tuple(self.classifier_hidden)), int(torch_seed_from(gen)))
        with torch.no_grad():
            mu_p, lv_p = m1.encode(x_priv)  # M1 is fixed during SPSSL; z1 is drawn per step
        codes, nums, _ = self._sample_m1(m1, self.n_public_samples, gen)
        z1_pub = self._encode_z1(m1, codes, nums, gen)
        q, steps, sigma = plan["sample_rate"], plan["steps"], plan["noise_multiplier"]
        private = self.epsilon is not None
        m2.train()
        gsm = GradSampleModule(m2, loss_reduction="sum")
        params = [p for p in m2.parameters() if p.requires_grad]
        noise_gen = torch.Generator().manual_seed(torch_seed(noise_rng))
        dp_opt = DPOptimizer(torch.optim.Adam(params, lr=self.lr), noise_multiplier=sigma if private else 0.0,
                             max_grad_norm=float(self.max_grad_norm), expected_batch_size=max(1, int(round(q * n))),
                             loss_reduction="mean", generator=noise_gen)
        pub_opt = torch.optim.Adam(params, lr=self.lr)
        beta2, alpha = float(self.beta2), float(self.alpha)
        try:
            for _ in _progress(range(steps), self.verbose, "CAPS: SPSSL", total=steps):
                # private step: Poisson sample, per-example clip, Gaussian noise (Opacus DPOptimizer)
                mask = torch.rand(n, generator=gen) < q
                idx = mask.nonzero().squeeze(1)
                eps1 = torch.randn((len(idx), mu_p.shape[1]), generator=gen)
                z1 = mu_p[idx] + (0.5 * lv_p[idx]).exp() * eps1
                noise2 = torch.randn((len(idx), self.z2_dim), generator=gen)
                dp_step(gsm, dp_opt, z1, y[idx], noise2, beta2, alpha)
                # public step: unlabelled loss on samples from M1, hooks off, its own optimizer
                b = torch.randint(0, len(z1_pub), (min(self.public_batch_size, len(z1_pub)),), generator=gen)
                noise_u = torch.randn((len(b), self.z2_dim), generator=gen)
                public_step(gsm, pub_opt, z1_pub[b], noise_u, beta2)
        finally:
            gsm._close()
            for p in m2.parameters():
                for attr in ("summed_grad", "grad_sample", "_forward_counter", "_current_grad_sample"):
                    if hasattr(p, attr):
                        delattr(p, attr)
        m2.eval()
        return m2

    def _fit_prior(self, gen):
        """Per-label Gaussian moment-matched to the aggregate posterior q(z2 | y, z1) on public M1 samples."""
        import torch

        codes, nums, _ = self._sample_m1(self.m1_, self.n_public_samples, gen)
        z1 = self._encode_z1(self.m1_, codes, nums, gen)
        with torch.no_grad():
            probs = torch.softmax(self.m2_.cls(z1), 1)
            y = torch.multinomial(probs, 1, generator=gen).squeeze(1)
            mu2, lv2 = self.m2_.posterior_z2(z1, y)
        k, d = self.m2_.n_labels, self.z2_dim
        means, stds = torch.zeros(k, d), torch.ones(k, d)
        for c in range(k):
            sel = y == c
            if int(sel.sum()) >= 2:
                m = mu2[sel].mean(0)
                v = lv2[sel].exp().mean(0) + mu2[sel].var(0)
                means[c], stds[c] = m, v.sqrt().clamp(min=1e-3)
        return means, stds

    def _generate_z1(self, y, gen):
        import torch

        n = len(y)
        z2 = torch.randn((n, self.z2_dim), generator=gen)
        if self.prior_ is not None:
            means, stds = self.prior_
            z2 = means[y] + stds[y] * z2
        return self.m2_.generate_z1(y, z2, gen)

    def _replay(self, gen):
        """Generative replay: M1 trained on samples of M1 + M2 and of the old M1 (post-processing)."""
        import torch

        m1_old = self.m1_
        m1 = copy.deepcopy(m1_old)
        parts = []
        if self.replay_new:
            y = torch.multinomial(torch.as_tensor(self.label_probs_, dtype=torch.float32), self.replay_new,
                                  replacement=True, generator=gen)
            with torch.no_grad():
                out = m1_old.decoder(self._generate_z1(y, gen))
                parts.append(self._draw_codes(out, m1_old.logvar(), gen))
        if self.replay_old:
            parts.append(self._sample_m1(m1_old, self.replay_old, gen))
        if not parts:
            return m1
        codes, nums, obs = (torch.cat([p[i] for p in parts]) for i in range(3))
        return self._train_m1(m1, codes, nums, obs, self.replay_epochs, self.replay_batch_size, gen,
                              "CAPS: generative replay")

    # -- sampling --------------------------------------------------------------------------
    def _sample_table(self, n_samples: int, rng: np.random.Generator) -> pd.DataFrame:
        import torch

        g = torch.Generator().manual_seed(torch_seed(rng))
        label = getattr(self, "_sample_label", None)
        if label is None:
            y_np = rng.choice(len(self.label_space_), size=n_samples, p=self.label_probs_)
        else:
            y_np = np.full(n_samples, list(self.label_space_).index(label))
        y = torch.from_numpy(y_np.astype(np.int64))
        with torch.no_grad():
            out = self.m1_.decoder(self._generate_z1(y, g))
            feats = self.codec_.sample(out, self.m1_.logvar(), g)
        feats[self.target] = np.array(self.label_space_, dtype=object)[y_np]
        return feats

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_sample_label", None)
        return state


def dp_step(gsm, dp_opt, z1, y, noise, beta2: float, alpha: float) -> None:
    """One DP-Adam step on a Poisson batch of private rows.

    ``gsm`` (Opacus ``GradSampleModule``, ``loss_reduction="sum"``) records each
    example's gradient of its labelled loss; ``dp_opt`` (Opacus ``DPOptimizer``)
    clips each to ``max_grad_norm``, sums, adds N(0, (noise_multiplier *
    max_grad_norm)^2) noise, divides by the expected batch size and steps. Gradients
    and per-example gradients are cleared before and after, so nothing of a public
    step can mix in. An empty batch still takes a (noise-only) step, as the
    accountant assumes.
    """
    dp_opt.zero_grad(set_to_none=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        gsm(z1, y, noise, beta2, alpha).sum().backward()
    dp_opt.step()
    dp_opt.zero_grad(set_to_none=True)


def public_step(gsm, pub_opt, z1_pub, noise, beta2: float) -> None:
    """One plain Adam step of the unlabelled loss on public samples (per-example hooks disabled)."""
    m2 = gsm._module
    gsm.disable_hooks()
    try:
        pub_opt.zero_grad(set_to_none=True)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            m2.unlabelled_loss(z1_pub, noise, beta2).mean().backward()
        pub_opt.step()
        pub_opt.zero_grad(set_to_none=True)
    finally:
        gsm.enable_hooks()


def torch_seed_from(gen) -> int:
    """A fresh seed drawn from a torch generator."""
    import torch

    return int(torch.randint(0, 2**62, (1,), generator=gen).item())
