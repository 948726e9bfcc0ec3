"""CAPS: cyclic adaptive private synthesis (Ito, Hsu & Ogata; papers/caps.md).

(Over 400 lines: about 150 are the estimator's parameter documentation.)

One cycle per cohort:

1. (first cycle only) pre-train M1, an unconditional VAE over the features, on
   public data (:mod:`._caps_surrogate`);
2. SPSSL (:mod:`._caps_training`): train a fresh M2 (Kingma et al. 2014) on M1's
   latent z1 with the label, the private labelled loss through DP-SGD
   (:mod:`skdpsynth.privacy._dpsgd`) and the unlabelled loss on samples from M1
   (public) through plain Adam steps;
3. release: M1 + M2 and a DP label histogram;
4. generative replay: update M1 on samples of M1 + M2 mixed with samples of the old
   M1 (post-processing), for the next cycle.

This module is the estimator: parameters, validation, label spaces, one cycle's
flow and sampling. What a cycle charges, and the DP-SGD plan from a public or DP
cohort size, is in :mod:`._caps_privacy`; the networks in :mod:`._caps_nn`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Interval

from skdpsynth.base import BaseTabularSynthesizer, FitContext, TableInput
from skdpsynth.exceptions import SchemaError
from skdpsynth.privacy._accounting import BudgetRecord
from skdpsynth.privacy._postprocess import normalise_counts
from skdpsynth.schema import ColumnSpec, TableSchema, resolve_schema
from skdpsynth.synthesizers._caps_privacy import CyclePrivacy, dpsgd_report
from skdpsynth.synthesizers._caps_surrogate import check_public_frame, public_rows
from skdpsynth.utils._random import check_random_state, torch_seed

__all__ = ["CAPSSynthesizer"]

_POS_INT = [Interval(Integral, 1, None, closed="left")]
_NONNEG_INT = [Interval(Integral, 0, None, closed="left")]
_POS = [Interval(Real, 0, None, closed="neither")]
_NONNEG = [Interval(Real, 0, None, closed="left")]
_SHARE = [Interval(Real, 0, 1, closed="neither")]
_LAYERS = [tuple, list]


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


def _label_space_arg(label_space: Sequence | None) -> tuple | None:
    if label_space is None:
        return None
    if isinstance(label_space, str) or not isinstance(label_space, Sequence):
        raise TypeError(f"label_space must be a sequence of labels, got {label_space!r}.")
    if len(set(label_space)) < 2 or len(set(label_space)) != len(label_space):
        raise SchemaError(f"label_space needs at least two distinct labels, got {list(label_space)}.")
    return tuple(label_space)


class CAPSSynthesizer(BaseTabularSynthesizer):
    """Cyclic adaptive private synthesis: M1 (public VAE) + M2 (DP semi-supervised), one cycle per cohort.

    ``fit`` pre-trains M1 on public data and runs one cycle; each ``partial_fit``
    runs one more cycle on a new cohort (new people); the label space may change
    between cycles (``label_space=``). ``sample`` draws labels from the cycle's DP
    label histogram (or fixes them with ``sample(n, conditions={target: label})``),
    then z2 from the prior, z1 from M2 and x from M1.

    Parameters
    ----------
    epsilon : float or None, default=1.0
        Budget per cohort (cycle). ``None`` trains without DP (not private).
    delta : float, default=1e-5
        delta per cohort (DP-SGD, and the domain when ``schema`` is None); must be > 0.
    target : str
        The label column (categorical; its public categories are the label space).
    public_data : DataFrame, callable or None, default=None
        Public, unlabelled feature rows (same feature columns and schema) to
        pre-train M1; or a simulator of such rows, called as
        ``public_data(n_surrogate, random_state=seed)`` and returning a DataFrame
        or a Bunch with a ``data`` DataFrame (e.g.
        ``functools.partial(make_learning_habits, n_weeks=17)``). When None, a
        data-free surrogate of independent uniform draws from the public schema.
    schema : TableSchema, dict, path or None, default=None
        Public domain of features and target (should be given; estimated under DP
        with ``domain_share`` of the budget otherwise).
    expected_cohort_size : int or None, default=None
        Public number of people expected in each cohort (e.g. a class size). It
        alone sets DP-SGD's Poisson sample rate ``q = min(1, batch_size /
        expected_cohort_size)`` and ``steps = round(epochs / q)``, so the plan and
        a refusal (``max_noise_multiplier``) happen before any budget is spent.
        ``None``: each cycle first charges a small DP count of the cohort
        (``size_share * epsilon``, a ``"number of people"`` record in
        ``budget_log_``) and plans from it. The exact cohort size is never used:
        with Poisson sampling at rate ``q`` the DP-SGD guarantee holds whatever
        the actual size; a wrong value only changes the realised batch size
        (about ``q`` times the actual size).
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
        Rows of simulated public data when ``public_data`` is None or a callable.
    epochs : int, default=30
        Private epochs of SPSSL: ``steps = round(epochs / sample_rate)`` DP steps.
    batch_size : int, default=32
        Expected private batch, relative to ``expected_cohort_size`` (or its DP count).
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
    size_share : float, default=0.05
        Share of the cohort's epsilon for the DP count of the cohort when
        ``expected_cohort_size`` is None (unused otherwise).
    max_noise_multiplier : float, default=50.0
        Refuse a cohort whose calibrated noise multiplier exceeds this.
    domain_share : float, default=0.1
        Share of epsilon and delta for the DP schema when ``schema`` is None.
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        "parallel": every cohort is different people (each person's guarantee is
        one cycle's (epsilon, delta)); "sequential" when people may recur.
    random_state : int, Generator or None, default=None
        Seeds everything that is not privacy noise: initialisation, public
        samples and steps, replay, sampling.
    reproducible_noise : bool, default=False
        Derive the privacy noise from random_state (tests and papers only: such
        a release is not publishable). By default the label noise, DP-SGD's
        Gaussian noise and its Poisson batches come from fresh OS entropy.
    verbose : int, default=0
        ``>= 1`` shows tqdm progress bars (pre-training, SPSSL, replay).

    Attributes
    ----------
    n_cycles_ : int
        Cycles run (= ``n_cohorts_``).
    n_estimate_ : int
        DP estimate of the latest cohort's size: the noisy label histogram's
        total, combined (inverse-variance) with the DP count when there is one.
    label_space_ : tuple
        The current cycle's label space.
    label_counts_ : ndarray of int
        The current cycle's noisy label histogram (DP).
    label_probs_ : ndarray
        Its projection onto the simplex (for sampling).
    dpsgd_ : list of dict
        Per cycle: noise multiplier, sample rate, steps, the planning cohort size
        and its source (public or DP), and the accounting report.
    m1_, m2_ : torch modules
        The released M1 (of the current cycle) and M2.
    m1_next_ : torch module
        M1 after generative replay: the next cycle's M1.
    pretrain_source_ : str
        Where M1's pre-training rows came from.

    Privacy
    -------
    Neighbouring relation: add/remove one person (one row) of a cohort. Per
    cycle: when ``expected_cohort_size`` is None, a DP count of the cohort
    (geometric, ``size_share * epsilon``); the label histogram (L1 sensitivity 1,
    two-sided geometric, ``label_share * epsilon``); then DP-SGD on the labelled
    loss (per-example L2 clipping to ``max_grad_norm``, Gaussian noise
    ``noise_multiplier * max_grad_norm``, Poisson sampling at rate ``q``), its
    noise multiplier calibrated by the RDP accountant to the rest of the budget
    (and ``delta``), charged as one ``"dp-sgd"`` ``approx`` record before the first
    step (``details``: the PLD epsilon, mu-GDP and the planning cohort size and
    its source). ``q`` and the steps come only from ``expected_cohort_size`` or
    the DP count, never from the exact size: Poisson subsampling at a fixed rate
    ``q`` gives the same guarantee for any actual cohort size. Public data,
    samples from M1 and generative replay are not charged (public /
    post-processing). Cohorts compose per ``cohort_composition``.
    """

    _parameter_constraints: dict = {
        **BaseTabularSynthesizer._parameter_constraints,
        "target": [str, None],
        "public_data": [pd.DataFrame, callable, None],
        "expected_cohort_size": [Interval(Integral, 1, None, closed="left"), None],
        "m1_hidden": _LAYERS, "z1_dim": _POS_INT, "m2_hidden": _LAYERS, "z2_dim": _POS_INT,
        "classifier_hidden": _LAYERS, "beta1": _NONNEG, "beta2": _NONNEG, "alpha": _NONNEG,
        "pretrain_epochs": _NONNEG_INT, "pretrain_batch_size": _POS_INT, "n_surrogate": _NONNEG_INT,
        "epochs": _POS_INT, "batch_size": _POS_INT, "max_grad_norm": _POS, "lr": _POS,
        "n_public_samples": _POS_INT, "public_batch_size": _POS_INT, "replay_new": _NONNEG_INT,
        "replay_old": _NONNEG_INT, "replay_epochs": _NONNEG_INT, "replay_batch_size": _POS_INT,
        "adapt_prior": ["boolean"], "label_share": _SHARE, "size_share": _SHARE, "max_noise_multiplier": _POS,
        "cohort_composition": BaseTabularSynthesizer._COMPOSITION, "verbose": ["verbose"],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-5, target=None, public_data=None, schema=None,
                 expected_cohort_size=None, m1_hidden=(128,), z1_dim=16, m2_hidden=(32,), z2_dim=4,
                 classifier_hidden=(32,), beta1=1.0, beta2=1.0, alpha=1.0, pretrain_epochs=10,
                 pretrain_batch_size=256, n_surrogate=10000, epochs=30, batch_size=32, max_grad_norm=1.0, lr=1e-3,
                 n_public_samples=2000, public_batch_size=64, replay_new=10000, replay_old=10000,
                 replay_epochs=3, replay_batch_size=256, adapt_prior=False, label_share=0.1, size_share=0.05,
                 max_noise_multiplier=50.0, domain_share=0.1, cohort_composition="parallel",
                 random_state=None, reproducible_noise=False, verbose=0):
        self.epsilon = epsilon
        self.delta = delta
        self.target = target
        self.public_data = public_data
        self.schema = schema
        self.expected_cohort_size = expected_cohort_size
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
        self.size_share = size_share
        self.max_noise_multiplier = max_noise_multiplier
        self.domain_share = domain_share
        self.cohort_composition = cohort_composition
        self.random_state = random_state
        self.reproducible_noise = reproducible_noise
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
        return super().fit(X, y, label_space=_label_space_arg(label_space))

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
            then use it, and so do later cycles.

        Returns
        -------
        self
        """
        return super().partial_fit(X, y, label_space=_label_space_arg(label_space))

    @property
    def n_cycles_(self) -> int:
        """Number of cycles run."""
        self._check_fitted()
        return self.n_cohorts_

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
        labels = self._label_codes(X[self.target], self.label_space_)
        y = torch.from_numpy(labels)
        with torch.no_grad():
            mu, lv = self.m1_.encode(x)
            z1 = mu + (0.5 * lv).exp() * torch.randn(mu.shape, generator=g)
            m2, l2 = self.m2_.posterior_z2(z1, y)
            z2 = m2 + (0.5 * l2).exp() * torch.randn(m2.shape, generator=g)
            out = self.m1_.decoder(self.m2_.generate_z1(y, z2, g))
            feats = self.codec_.sample(out, self.m1_.logvar(), g)
        feats[self.target] = np.array(self.label_space_, dtype=object)[labels]
        return feats[list(self.columns_)]

    # -- validation (no budget) ----------------------------------------------------------
    def _features(self, columns) -> list[str]:
        return [c for c in columns if c != self.target]

    def _check_settings(self) -> None:
        """Semantic checks the declared constraints cannot express."""
        if self.target is None:
            raise ValueError("CAPSSynthesizer needs target=<name of the label column> (a string).")
        for name in ("m1_hidden", "m2_hidden", "classifier_hidden"):
            layers = getattr(self, name)
            if not all(isinstance(h, (int, np.integer)) and not isinstance(h, bool) and h > 0 for h in layers):
                raise ValueError(f"{name} must be a sequence of positive integers, got {layers!r}.")

    def _check_input(self, X: Any, y: Any, reset: bool) -> TableInput:
        self._check_settings()
        frame = self._check_columns(
            X, y, reset, y_name=self.target,
            why="CAPS needs the same feature space (and target) in every cycle, in the same order.")
        features = self._check_target(frame)
        schema = resolve_schema(self.schema) if reset else self.schema_
        if schema is not None:
            missing = [c for c in frame.columns if c not in schema]
            if missing:
                raise SchemaError(f"columns {missing} are not in the schema.")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                schema.select(features).validate(frame[features])
        if reset and isinstance(self.public_data, pd.DataFrame):
            check_public_frame(self.public_data, features, schema, target=self.target)
        self._privacy(reset).check_before_spend()  # with a public size: plan and refuse before any spend
        # the target is validated against this cycle's label space in _fit_cohort (it may change per cycle)
        return TableInput(frame)

    def _check_target(self, frame: pd.DataFrame) -> list[str]:
        if self.target not in frame.columns:
            raise SchemaError(f"target column {self.target!r} is not in X (columns: {list(frame.columns)[:10]}...).")
        features = self._features(frame.columns)
        if not features:
            raise SchemaError("X has no feature columns besides the target.")
        target = frame[self.target]
        if target.isna().any():
            raise SchemaError(f"target column {self.target!r} has missing values; every private row needs a label.")
        if pd.api.types.is_float_dtype(target.dtype) and (np.abs(target - np.round(target)) > 0).any():
            raise SchemaError(f"target column {self.target!r} holds non-integer numbers: CAPS needs a class label.")
        if target.nunique() < 2:
            raise SchemaError(f"target column {self.target!r} is constant: M2 needs at least two classes.")
        return features

    def _check_labels(self, target: pd.Series, labels: Sequence) -> None:
        if len(labels) < 2:
            raise SchemaError(f"the label space of {self.target!r} needs at least two classes, got {list(labels)}.")
        values = [v.item() if isinstance(v, np.generic) else v for v in target.to_numpy(dtype=object)]
        unknown = sorted({repr(v) for v in values if v not in set(labels)})
        if unknown:
            raise SchemaError(f"target column {self.target!r} has labels {unknown[:5]} outside this cycle's label "
                              f"space {list(labels)}; pass label_space=[...] to partial_fit for a new label space.")

    def _privacy(self, first: bool) -> CyclePrivacy:
        """This cycle's budget split and DP-SGD schedule (parameters only; raises before any spend)."""
        return CyclePrivacy.of(self, self._domain_budget(resolve_schema(self.schema) is not None or not first))

    def _planned_model_cost(self, X, eps_dom, delta_dom) -> list[BudgetRecord]:
        return [] if self.epsilon is None else self._privacy(True).planned_records()

    # -- label spaces ------------------------------------------------------------------------
    def _resolve_domain(self, X: pd.DataFrame, ctx: FitContext) -> TableSchema:
        schema = super()._resolve_domain(X, ctx)
        spec = schema[self.target]
        labels = ctx.params.get("label_space") or _label_categories(spec)
        return self._with_labels(schema, labels, nullable=spec.nullable and resolve_schema(self.schema) is None)

    def _with_labels(self, schema: TableSchema, labels: Sequence, nullable: bool = False) -> TableSchema:
        spec = ColumnSpec(self.target, "categorical", categories=tuple(labels), nullable=nullable)
        return replace(schema, columns=tuple(spec if c.name == self.target else c for c in schema.columns))

    def _fit_cohort(self, data: TableInput, ctx: FitContext) -> None:
        space = ctx.params.get("label_space")
        given = resolve_schema(self.schema)
        target = data.frame[self.target]
        if not ctx.first:  # before any spend
            self._check_labels(target, space or self.label_space_)
        elif given is not None or space is not None:
            self._check_labels(target, space or _label_categories(given[self.target]))
        previous = None if ctx.first else self.schema_
        if previous is not None and space is not None:
            self.schema_ = self._with_labels(previous, space)
        try:
            super()._fit_cohort(data, ctx)
        except BaseException:
            if previous is not None:
                self.schema_ = previous
            raise

    # -- one cycle ---------------------------------------------------------------------------------
    def _fit_table(self, X: pd.DataFrame, ctx: FitContext) -> None:
        import torch

        from skdpsynth.synthesizers._caps_nn import FeatureCodec
        from skdpsynth.synthesizers._caps_training import TrainSettings, fit_prior, pretrain_m1, replay, spssl

        s = TrainSettings.of(self)
        gen = torch.Generator().manual_seed(torch_seed(ctx.rng))
        labels = tuple(self.schema_[self.target].categories)
        if len(labels) < 2:
            raise SchemaError(f"the label space of {self.target!r} needs at least two classes, got {list(labels)}.")
        Xk, y = self._labelled_rows(X, labels)
        if ctx.first:  # public work first: a bad public_data fails before the cycle's own charges
            codec = FeatureCodec(self.schema_.select(self._features(X.columns)))
            public, source = public_rows(self.public_data, codec.schema, self.n_surrogate, ctx.rng, target=self.target)
            m1 = pretrain_m1(codec, public, s, gen)
        else:
            codec, m1, source = self.codec_, self.m1_next_, self.pretrain_source_
        privacy = self._privacy(ctx.first)
        plan, size = privacy.plan_cycle(len(y), ctx)
        noisy, n_estimate = privacy.release_labels(y, len(labels), plan, size, ctx)
        noise_gen = (ctx.noise.torch_generator() if ctx.accountant.private
                     else torch.Generator().manual_seed(torch_seed(ctx.rng)))
        x_priv = torch.from_numpy(codec.one_hot(*codec.codes(Xk[list(codec.schema.names)])[:2]))
        m2 = spssl(m1, codec, x_priv, torch.from_numpy(y), len(labels), plan, s, gen=gen, noise_gen=noise_gen,
                   expected_batch_size=max(1, round(plan.sample_rate * size["cohort_size"])))
        probs, empty = normalise_counts(noisy)
        probs = np.full(len(labels), 1 / len(labels)) if empty else probs
        prior = fit_prior(m1, m2, codec, s, gen) if self.adapt_prior else None
        self.m1_next_ = replay(m1, m2, prior, codec, probs, s, gen)  # post-processing, for the next cycle
        self.codec_, self.m1_, self.m2_, self.prior_, self.pretrain_source_ = codec, m1, m2, prior, source
        self.label_space_, self.label_counts_, self.label_probs_, self.n_estimate_ = labels, noisy, probs, n_estimate
        if ctx.first:
            self.dpsgd_ = []
        report = dpsgd_report(plan) if ctx.accountant.private else {"epsilon_rdp": math.inf}
        self.dpsgd_.append({"cycle": ctx.cohort, "noise_multiplier": plan.noise_multiplier,
                            "sample_rate": plan.sample_rate, "steps": plan.steps, **size, "report": dict(report)})

    def _labelled_rows(self, X: pd.DataFrame, labels: tuple) -> tuple[pd.DataFrame, np.ndarray]:
        keep = X[self.target].notna().to_numpy()
        if not keep.all():  # only possible with a DP-estimated schema that dropped a rare label
            warnings.warn(f"rows whose label {self.target!r} was not released by the DP schema are left out of the "
                          "labelled loss and the label histogram.", UserWarning, stacklevel=4)
        Xk = X.loc[keep]
        return Xk, self._label_codes(Xk[self.target], labels)

    # -- helpers -------------------------------------------------------------------------------
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

    @staticmethod
    def _label_codes(values: pd.Series, labels: Sequence) -> np.ndarray:
        lookup = {v: i for i, v in enumerate(labels)}
        obj = [v.item() if isinstance(v, np.generic) else v for v in values.to_numpy(dtype=object)]
        try:
            return np.array([lookup[v] for v in obj], dtype=np.int64)
        except KeyError as exc:
            raise ValueError(f"label {exc.args[0]!r} is not in the label space {list(labels)}.") from None

    # -- sampling --------------------------------------------------------------------------
    def _check_conditions(self, conditions: Mapping[str, Any] | None):
        """The label fixed by ``conditions`` (or None)."""
        if not conditions:
            return None
        if not isinstance(conditions, Mapping):
            raise TypeError(f"conditions must be a mapping like {{{self.target!r}: label}}.")
        other = [k for k in conditions if k != self.target]
        if other:
            raise ValueError(f"CAPSSynthesizer can only condition on the target {self.target!r}; got {other}.")
        label = conditions[self.target]
        if label not in self.label_space_:
            raise ValueError(
                f"condition {self.target!r}={label!r} is not in the current label space {list(self.label_space_)}.")
        return label

    def _sample_table(self, n_samples: int, rng: np.random.Generator,
                      conditions: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Rows from the released model; ``conditions={target: label}`` fixes the label (conditional generation)."""
        import torch

        from skdpsynth.synthesizers._caps_training import generate_z1

        label = self._check_conditions(conditions)
        g = torch.Generator().manual_seed(torch_seed(rng))
        if label is None:
            y_np = rng.choice(len(self.label_space_), size=n_samples, p=self.label_probs_)
        else:
            y_np = np.full(n_samples, list(self.label_space_).index(label))
        y = torch.from_numpy(y_np.astype(np.int64))
        with torch.no_grad():
            out = self.m1_.decoder(generate_z1(self.m2_, self.prior_, y, g))
            feats = self.codec_.sample(out, self.m1_.logvar(), g)
        feats[self.target] = np.array(self.label_space_, dtype=object)[y_np]
        return feats
