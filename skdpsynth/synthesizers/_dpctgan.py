"""DP-CTGAN: a small CTGAN-style GAN whose discriminator is trained with DP-SGD (Opacus)."""

from __future__ import annotations

import math

from skdpsynth._grid import PublicGrid
from skdpsynth.base import BaseTabularSynthesizer
from skdpsynth.exceptions import PrivacyBudgetError
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord
from skdpsynth.synthesizers._gan_common import (
    GridEncoder,
    check_gan_params,
    generate,
    make_discriminator,
    make_generator,
    noisy_row_count,
)
from skdpsynth.utils._random import torch_seed

__all__ = ["DPCTGANSynthesizer"]

#: integer RDP orders (Opacus' fractional orders are slow for large sampling rates; integers are valid, a bit looser)
RDP_ORDERS = [1.25, 1.5, 1.75, *range(2, 65), 80, 96, 128, 192, 256, 512]


class DPCTGANSynthesizer(BaseTabularSynthesizer):
    """GAN with a DP-SGD discriminator (DP-CTGAN, Fang et al. 2022), kept small and correct.

    The table is encoded on the public grid (one-hot cells plus a within-bin
    position for binned numeric columns), the generator is an MLP with
    Gumbel-softmax blocks, the discriminator an MLP trained with DP-SGD:
    Poisson-sampled real rows, per-sample gradient clipping and Gaussian noise
    (Opacus ``GradSampleModule`` + ``DPOptimizer``); the noise multiplier is
    calibrated to the budget with ``opacus.accountants.utils.get_noise_multiplier``
    (RDP accountant).

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
        Seeds all randomness.

    Attributes
    ----------
    generator_ : torch.nn.Module
        The trained generator (the discriminator is discarded).
    noise_multiplier_ : float
        DP-SGD noise multiplier of the last cohort.
    n_steps_ : int
        Discriminator steps of the last cohort.

    Privacy
    -------
    Neighbouring relation: add/remove one person (one row). The number of rows
    is released with the geometric mechanism (L1 sensitivity 1,
    ``count_share * epsilon_model``), making the sampling rate and the number
    of steps DP. Each discriminator step Poisson-samples real rows with rate
    ``q``, clips every per-sample gradient to ``max_grad_norm`` (the fake rows
    in the batch come from the generator: post-processing) and adds Gaussian
    noise with standard deviation ``noise_multiplier * max_grad_norm`` (the
    person's L2 sensitivity); the subsampled Gaussian mechanism over all steps
    is accounted with RDP and recorded as one ``"dp-sgd"`` (epsilon, delta)
    record. The generator only ever sees the discriminator's outputs, so its
    training is post-processing. Composition within a cohort: basic
    (count + DP-SGD + domain).
    """

    def __init__(self, *, epsilon=1.0, delta=1e-5, schema=None, n_bins=16, epochs=10, batch_size=256, noise_dim=32,
                 hidden_dims=(128, 128), learning_rate=2e-4, max_grad_norm=1.0, count_share=0.02, domain_share=0.1,
                 cohort_composition="parallel", random_state=None):
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

    def _check_input(self, X, y, reset):
        check_gan_params(self, ("n_bins", "epochs", "batch_size", "noise_dim"), ("learning_rate", "max_grad_norm"))
        if not 0 < self.count_share < 1:
            raise ValueError(f"count_share must be in (0, 1), got {self.count_share!r}.")
        if self.epsilon is not None and not self.delta > 0:
            raise PrivacyBudgetError(f"DP-SGD needs delta > 0, got delta={self.delta!r}.")
        return super()._check_input(X, y, reset)

    def _fit_table(self, X, accountant: BudgetAccountant, rngs, first):
        import torch
        from opacus import GradSampleModule
        from opacus.accountants import RDPAccountant
        from opacus.accountants.utils import get_noise_multiplier
        from opacus.optimizers import DPOptimizer

        if first:
            self.grid_ = PublicGrid(self.schema_, self.n_bins)
            self.encoder_ = GridEncoder(self.grid_)
            self.generator_ = make_generator(self.noise_dim, tuple(self.hidden_dims), self.encoder_, rngs["model"])
        disc = make_discriminator(self.encoder_.dim, tuple(self.hidden_dims), rngs["model"])
        tgen = torch.Generator().manual_seed(torch_seed(rngs["model"]))
        data = torch.from_numpy(self.encoder_.transform(X))
        n = len(X)
        private = accountant.private
        if private:
            eps_left = self.epsilon - sum(r.epsilon for r in accountant.records)
            delta_left = self.delta - sum(r.delta for r in accountant.records)
            if delta_left <= 0:
                raise PrivacyBudgetError("DPCTGANSynthesizer: no delta left for DP-SGD after the domain estimate.")
            eps_count = self.count_share * eps_left
            n_pub = noisy_row_count(n, eps_count, rngs["noise"], accountant)
            eps_sgd = eps_left - eps_count
        else:
            accountant.spend(BudgetRecord("exact (non-private)", "number of rows", "none", epsilon=math.inf))
            n_pub = float(n)
        q = min(1.0, self.batch_size / n_pub)
        steps = int(self.epochs * math.ceil(n_pub / self.batch_size))
        expected = max(q * n_pub, 1.0)
        dgsm = GradSampleModule(disc, loss_reduction="sum")
        d_opt = torch.optim.Adam(dgsm.parameters(), lr=self.learning_rate, betas=(0.5, 0.9))
        if private:
            sigma = get_noise_multiplier(target_epsilon=eps_sgd, target_delta=delta_left, sample_rate=q, steps=steps,
                                         accountant="rdp", alphas=RDP_ORDERS)
            rdp = RDPAccountant()
            rdp.history = [(sigma, q, steps)]
            eps_achieved = float(rdp.get_epsilon(delta_left, alphas=RDP_ORDERS))
            record = BudgetRecord(
                "dp-sgd", "DP-CTGAN discriminator", "approx", epsilon=min(eps_achieved, eps_sgd), delta=delta_left,
                sensitivity=float(self.max_grad_norm), noise_scale=float(sigma * self.max_grad_norm),
                details={"noise_multiplier": float(sigma), "sample_rate": q, "steps": steps,
                         "max_grad_norm": float(self.max_grad_norm), "accountant": "rdp (opacus)",
                         "epsilon_rdp": eps_achieved, "poisson_sampling": True})
            accountant.spend(record)  # charged before any noise is drawn
            d_opt = DPOptimizer(d_opt, noise_multiplier=sigma, max_grad_norm=float(self.max_grad_norm),
                                expected_batch_size=int(round(expected)), loss_reduction="sum", generator=tgen)
        else:
            sigma = 0.0
            accountant.spend(BudgetRecord("exact (non-private)", "GAN discriminator on the data", "none",
                                          epsilon=math.inf))
        g_opt = torch.optim.Adam(self.generator_.parameters(), lr=self.learning_rate, betas=(0.5, 0.9))
        bce = torch.nn.BCEWithLogitsLoss(reduction="sum")
        batch_rng = rngs["model"]
        gen = self.generator_
        gen.train()
        fake_n = max(int(round(expected)), 1)
        for _ in range(steps):
            # discriminator (DP-SGD on the real rows)
            mask = batch_rng.random(n) < q
            real = data[torch.from_numpy(mask)]
            with torch.no_grad():
                z = torch.randn(fake_n, self.noise_dim, generator=tgen)
                fake = gen(z, generator=tgen)
            batch = torch.cat([real, fake])
            labels = torch.cat([torch.ones(len(real), 1), torch.zeros(fake_n, 1)])
            d_opt.zero_grad()
            loss = bce(dgsm(batch), labels)
            loss.backward()
            d_opt.step()
            # generator (post-processing: sees only the discriminator)
            dgsm.disable_hooks()
            for p in dgsm.parameters():
                p.requires_grad_(False)
            g_opt.zero_grad()
            z = torch.randn(fake_n, self.noise_dim, generator=tgen)
            g_loss = bce(dgsm(gen(z, generator=tgen)), torch.ones(fake_n, 1)) / fake_n
            g_loss.backward()
            g_opt.step()
            for p in dgsm.parameters():
                p.requires_grad_(True)
                p.grad = None
                if hasattr(p, "grad_sample"):
                    p.grad_sample = None
            dgsm.enable_hooks()
        self.noise_multiplier_ = float(sigma)
        self.n_steps_ = steps
        self.sample_rate_ = q
        gen.eval()

    def _sample_table(self, n_samples, rng):
        return generate(self.generator_, self.encoder_, n_samples, self.noise_dim, rng)
