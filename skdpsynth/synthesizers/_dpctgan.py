"""DP-CTGAN: a small CTGAN-style GAN whose discriminator is trained with DP-SGD (Opacus)."""

from __future__ import annotations

import math
import warnings
from numbers import Real

import numpy as np
import pandas as pd

from skdpsynth._grid import PublicGrid
from skdpsynth.base import BaseTabularSynthesizer, FitContext
from skdpsynth.exceptions import PrivacyBudgetError
from skdpsynth.privacy._dpsgd import DPSGDPlan, plan_dpsgd
from skdpsynth.privacy._table import PrivateTable
from skdpsynth.synthesizers._gan_common import (
    GAN_CONSTRAINTS,
    POSITIVE_INT,
    POSITIVE_REAL,
    GridEncoder,
    check_hidden_dims,
    progress,
)
from skdpsynth.utils._optional import deferred_import
from skdpsynth.utils._param_validation import Interval
from skdpsynth.utils._random import torch_seed

#: the torch networks, imported when a fit or sample first needs them (the ``deep`` extra)
_nets = deferred_import("skdpsynth.synthesizers._gan_nets", "DPCTGANSynthesizer")

__all__ = ["DPCTGANSynthesizer"]


class DPCTGANSynthesizer(BaseTabularSynthesizer):
    """GAN with a DP-SGD discriminator (DP-CTGAN, Fang et al. 2022), kept small and correct.

    The table is encoded on the public grid (one-hot cells plus a within-bin
    position for binned numeric columns), the generator is an MLP with
    Gumbel-softmax blocks, the discriminator an MLP trained with DP-SGD:
    Poisson-sampled real rows, per-sample gradient clipping and Gaussian noise
    (Opacus ``GradSampleModule`` + ``DPOptimizer``); the noise multiplier is
    calibrated to the budget by :func:`skdpsynth.privacy._dpsgd.plan_dpsgd`
    (RDP accountant), the same path as CAPS.

    What differs from CTGAN, for privacy: no conditional vectors and no
    training-by-sampling (CTGAN picks real rows matching a condition drawn from
    the data's category frequencies, which is data-dependent batch selection);
    no per-column Gaussian mixtures fitted on the data (the public grid replaces
    mode-specific normalisation); no PacGAN packing (a packed sample mixes
    several people).

    Parameters
    ----------
    epsilon : float or None, default=1.0
        Budget per cohort. ``None`` = plain (non-private) GAN training.
    delta : float, default=1e-5
        DP-SGD delta (minus the domain's share when ``schema`` is None); must be > 0.
    schema : TableSchema, dict, path or None, default=None
        Public domain; estimated under DP with ``domain_share`` of the budget when None.
    n_bins : int, default=16
        Bins per continuous column.
    epochs : int, default=10
        Passes over the data (in expectation); steps = ``epochs * ceil(n / batch_size)``
        with ``n`` a DP count of the rows.
    batch_size : int, default=256
        Expected real rows per discriminator step (sampling rate ``batch_size / n``).
    noise_dim : int, default=32
        Latent dimension.
    hidden_dims : tuple of int, default=(128, 128)
        Hidden layers of both networks.
    learning_rate : float, default=2e-4
        Adam learning rate of both networks.
    max_grad_norm : float, default=1.0
        Per-sample gradient clipping norm of the discriminator.
    count_share : float, default=0.02
        Share of the model's epsilon spent on the DP row count.
    domain_share : float, default=0.1
        Share of epsilon and delta spent on the domain when ``schema`` is None.
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        How ``partial_fit`` cohorts compose (``partial_fit`` continues training on the new cohort).
    random_state : int, Generator or None, default=None
        Seeds everything that is not privacy noise (initialisation, the
        generated rows, sampling).
    reproducible_noise : bool, default=False
        Derive the privacy noise (DP-SGD noise, Poisson batches, the row count)
        from ``random_state`` (for tests and papers only: such a release is not
        publishable). By default it comes from fresh OS entropy and nothing can
        regenerate it.
    verbose : bool or int, default=False
        When true, shows a tqdm progress bar over the training steps.

    Attributes
    ----------
    generator_ : torch.nn.Module
        The trained generator (the discriminator is discarded).
    noise_multiplier_ : float
        DP-SGD noise multiplier of the last cohort (0 when not private).
    n_steps_ : int
        Discriminator steps of the last cohort.
    sample_rate_ : float
        Poisson sampling rate of the last cohort (``batch_size`` over the DP count).
    n_estimate_ : int
        The DP row count of the last cohort (the exact count when ``epsilon=None``).

    Privacy
    -------
    Neighbouring relation: add/remove one person (one row). The number of rows
    is released with the geometric mechanism (L1 sensitivity 1,
    ``count_share * epsilon_model``), making the sampling rate and the number
    of steps DP; it is also ``n_estimate_``. Then one ``"dp-sgd"`` (epsilon,
    delta) record is charged for the whole run, before the first step. Each
    discriminator step Poisson-samples real rows with rate ``q`` (from the
    secret noise source), clips every per-sample gradient to
    ``max_grad_norm`` (the fake rows in the batch come from the generator:
    post-processing) and adds Gaussian noise with standard deviation
    ``noise_multiplier * max_grad_norm`` (the person's L2 sensitivity) from the
    same secret source; the subsampled Gaussian mechanism over all steps is
    accounted with RDP. The generator only ever sees the discriminator's
    outputs, so its training is post-processing. Composition within a cohort:
    basic (domain + count + DP-SGD).
    """

    _parameter_constraints: dict = {
        **BaseTabularSynthesizer._parameter_constraints,
        **GAN_CONSTRAINTS,
        "epochs": POSITIVE_INT,
        "batch_size": POSITIVE_INT,
        "max_grad_norm": POSITIVE_REAL,
        "count_share": [Interval(Real, 0, 1, closed="neither")],
        "cohort_composition": BaseTabularSynthesizer._COMPOSITION,
    }

    _requires = ("torch", "opacus")

    def __init__(self, *, epsilon=1.0, delta=1e-5, schema=None, n_bins=16, epochs=10, batch_size=256, noise_dim=32,
                 hidden_dims=(128, 128), learning_rate=2e-4, max_grad_norm=1.0, count_share=0.02, domain_share=0.1,
                 cohort_composition="parallel", random_state=None, reproducible_noise=False, verbose=False):
        self.epsilon = epsilon
        self.delta = delta
        self.schema = schema
        self.n_bins = n_bins
        self.epochs = epochs
        self.batch_size = batch_size
        self.noise_dim = noise_dim
        self.hidden_dims = hidden_dims
        self.learning_rate = learning_rate
        self.max_grad_norm = max_grad_norm
        self.count_share = count_share
        self.domain_share = domain_share
        self.cohort_composition = cohort_composition
        self.random_state = random_state
        self.reproducible_noise = reproducible_noise
        self.verbose = verbose

    def _check_request(self) -> None:
        super()._check_request()
        check_hidden_dims(self.hidden_dims)

    def _delta_required_by(self) -> str:
        return "trains with DP-SGD"

    def _delta_for_zcdp(self, data) -> float:
        return 0.0  # no zCDP part: the delta left after the domain is DP-SGD's

    _takes_table = True

    def _fit_table(self, table: PrivateTable, ctx: FitContext) -> None:
        if ctx.first:
            self.grid_ = PublicGrid(self.schema_, self.n_bins)
            self.encoder_ = GridEncoder(self.grid_)
            self.generator_ = _nets.make_generator(self.noise_dim, tuple(self.hidden_dims), self.encoder_, ctx.rng)
        n_pub, q, steps, plan = self._plan(table)
        self._train(table, q, steps, n_pub, plan, ctx)
        self.n_estimate_ = int(n_pub)
        self.noise_multiplier_ = plan.noise_multiplier if plan is not None else 0.0
        self.n_steps_ = steps
        self.sample_rate_ = q

    def _plan(self, table: PrivateTable) -> tuple[int, float, int, DPSGDPlan | None]:
        """DP row count, then the sampling schedule and the DP-SGD plan (the table charges it before any step)."""
        target = "number of people (sets the sampling rate and steps)"
        if not table.private:
            n = max(table.count(target=target), 1)
            q, steps = self._schedule(n)
            return n, q, steps, None
        if table.remaining_delta() <= 0:
            raise PrivacyBudgetError("DPCTGANSynthesizer: no delta left for DP-SGD after the domain estimate.")
        n_pub = max(table.count(epsilon=self.count_share * table.remaining_epsilon(), target=target), 1)
        q, steps = self._schedule(n_pub)
        plan = plan_dpsgd(epsilon=table.remaining_epsilon(), delta=table.remaining_delta(),
                          sample_rate=q, steps=steps, max_grad_norm=float(self.max_grad_norm))
        return n_pub, q, steps, plan

    def _schedule(self, n_pub: int) -> tuple[float, int]:
        """Sampling rate and number of steps from a DP (or, without privacy, the exact) row count."""
        return min(1.0, self.batch_size / n_pub), int(self.epochs * math.ceil(n_pub / self.batch_size))

    def _train(self, table: PrivateTable, q: float, steps: int, n_pub: int, plan: DPSGDPlan | None,
               ctx: FitContext) -> None:
        import torch
        from opacus import GradSampleModule

        disc = _nets.make_discriminator(self.encoder_.dim, tuple(self.hidden_dims), ctx.rng)
        model_gen = torch.Generator().manual_seed(torch_seed(ctx.rng))  # generated rows: post-processing
        expected = max(int(round(q * n_pub)), 1)
        dgsm = GradSampleModule(disc, loss_reduction="sum")
        d_opt = torch.optim.Adam(dgsm.parameters(), lr=self.learning_rate, betas=(0.5, 0.9))
        # the table charges the plan, then gives the rows out only as Poisson batches beside the clipping optimizer
        d_opt, batches = table.dpsgd(self.encoder_.transform, d_opt, plan=plan, sample_rate=q,
                                     expected_batch_size=expected, target="DP-CTGAN discriminator",
                                     generator=torch.Generator().manual_seed(torch_seed(ctx.rng)))
        g_opt = torch.optim.Adam(self.generator_.parameters(), lr=self.learning_rate, betas=(0.5, 0.9))
        gen = self.generator_
        gen.train()
        with warnings.catch_warnings():
            # Opacus' per-sample hooks warn when the inputs (data rows) need no gradient: harmless here
            warnings.filterwarnings("ignore", message="Full backward hook is firing", category=UserWarning)
            try:
                for _ in progress(range(steps), self.verbose, "DP-CTGAN", total=steps):
                    real = batches.draw()
                    self._discriminator_step(dgsm, d_opt, real, expected, model_gen)
                    self._generator_step(dgsm, g_opt, expected, model_gen)
            finally:
                dgsm._close()
                gen.eval()

    def _discriminator_step(self, dgsm, d_opt, real, n_fake: int, model_gen) -> None:
        """One DP-SGD step: real rows labelled 1, generated rows 0 (per-sample clipping and noise by ``d_opt``)."""
        import torch

        with torch.no_grad():
            fake = self.generator_(torch.randn(n_fake, self.noise_dim, generator=model_gen), generator=model_gen)
        batch = torch.cat([real, fake])
        labels = torch.cat([torch.ones(len(real), 1), torch.zeros(n_fake, 1)])
        d_opt.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(dgsm(batch), labels, reduction="sum").backward()
        d_opt.step()

    def _generator_step(self, dgsm, g_opt, n_fake: int, model_gen) -> None:
        """Generator step against the (DP) discriminator: post-processing, per-sample hooks off."""
        import torch

        dgsm.disable_hooks()
        for p in dgsm.parameters():
            p.requires_grad_(False)
        g_opt.zero_grad()
        z = torch.randn(n_fake, self.noise_dim, generator=model_gen)
        logits = dgsm(self.generator_(z, generator=model_gen))
        torch.nn.functional.binary_cross_entropy_with_logits(logits, torch.ones(n_fake, 1), reduction="mean").backward()
        g_opt.step()
        for p in dgsm.parameters():
            p.requires_grad_(True)
            p.grad = None
            if hasattr(p, "grad_sample"):
                p.grad_sample = None
        dgsm.enable_hooks()

    def _sample_table(self, n_samples: int, rng: np.random.Generator) -> pd.DataFrame:
        return _nets.generate(self.generator_, self.encoder_, n_samples, self.noise_dim, rng)
