"""CAPS training loops: M1 pre-training, SPSSL (private DP-SGD step + public step), prior adaptation, replay.

Nothing here charges the budget: :class:`~skdpsynth.synthesizers.CAPSSynthesizer`
plans and charges DP-SGD (:mod:`skdpsynth.privacy._dpsgd`) before calling
:func:`spssl`. Two torch generators drive everything:

* ``gen`` (from ``random_state``): model initialisation, public samples, public
  steps, prior adaptation and replay. Its use never depends on the private data,
  so nothing released through it depends on the data outside DP-SGD.
* ``noise_gen`` (from the fit's :class:`~skdpsynth.privacy.NoiseSource`, secret
  and never stored): the Gaussian noise of DP-SGD, its Poisson batches and the
  reparametrisation noise of the private examples (part of the mechanism).
"""

from __future__ import annotations

import copy
import math
import warnings
from dataclasses import dataclass, fields
from typing import Any

import torch

from skdpsynth.privacy._dpsgd import DPSGDPlan, dp_optimizer, poisson_mask
from skdpsynth.synthesizers._caps_nn import M1VAE, FeatureCodec, M2Model, init_module

__all__ = ["TrainSettings", "pretrain_m1", "spssl", "dp_step", "public_step", "fit_prior", "generate_z1", "replay",
           "torch_seed_from"]


@dataclass(frozen=True)
class TrainSettings:
    """The estimator's training hyperparameters (see :class:`~skdpsynth.synthesizers.CAPSSynthesizer`)."""

    m1_hidden: tuple
    z1_dim: int
    m2_hidden: tuple
    z2_dim: int
    classifier_hidden: tuple
    beta1: float
    beta2: float
    alpha: float
    lr: float
    pretrain_epochs: int
    pretrain_batch_size: int
    n_public_samples: int
    public_batch_size: int
    replay_new: int
    replay_old: int
    replay_epochs: int
    replay_batch_size: int
    verbose: int

    @classmethod
    def of(cls, estimator: Any) -> TrainSettings:
        """Read the settings from an estimator's parameters."""
        return cls(**{f.name: getattr(estimator, f.name) for f in fields(cls)})


def progress(iterable, verbose: int, desc: str, total: int | None = None):
    """A tqdm bar when ``verbose >= 1``."""
    if verbose >= 1:
        from tqdm.auto import tqdm

        return tqdm(iterable, desc=desc, total=total, leave=False)
    return iterable


def torch_seed_from(gen: torch.Generator) -> int:
    """A fresh seed drawn from a torch generator."""
    return int(torch.randint(0, 2**62, (1,), generator=gen).item())


# -- M1 ----------------------------------------------------------------------------------------------
def train_m1(m1: M1VAE, codec: FeatureCodec, data: tuple, s: TrainSettings, epochs: int, batch_size: int,
             gen: torch.Generator, desc: str) -> M1VAE:
    """Adam on M1's negative ELBO over ``data`` = (codes, nums, observed) tensors (public or post-processed)."""
    codes, nums, obs = data
    n = len(codes)
    if n == 0 or epochs == 0:
        return m1
    x_all = torch.from_numpy(codec.one_hot(codes.numpy(), nums.numpy()))
    opt = torch.optim.Adam(m1.parameters(), lr=s.lr)
    m1.train()
    n_batches = max(1, math.ceil(n / batch_size))
    for _ in progress(range(epochs), s.verbose, desc):
        perm = torch.randperm(n, generator=gen)
        for b in range(n_batches):
            idx = perm[b * batch_size:(b + 1) * batch_size]
            noise = torch.randn((len(idx), m1.latent_dim), generator=gen)
            loss = m1.loss(codec, x_all[idx], codes[idx], nums[idx], obs[idx], noise, s.beta1).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    m1.eval()
    return m1


def pretrain_m1(codec: FeatureCodec, public, s: TrainSettings, gen: torch.Generator) -> M1VAE:
    """A fresh M1 trained on public, schema-normalised feature rows."""
    _, codes, nums, obs = codec.encode(public)
    m1 = init_module(lambda: M1VAE(codec.input_dim, codec.output_dim, codec.n_num, tuple(s.m1_hidden), s.z1_dim),
                     torch_seed_from(gen))
    return train_m1(m1, codec, (codes, nums, obs), s, s.pretrain_epochs, s.pretrain_batch_size, gen,
                    "CAPS: pre-train M1")


def sample_m1(m1: M1VAE, codec: FeatureCodec, n: int, gen: torch.Generator) -> tuple:
    """Feature codes drawn from M1 alone: z1 ~ N(0, I), x ~ p(x | z1)."""
    with torch.no_grad():
        out = m1.decoder(torch.randn((n, m1.latent_dim), generator=gen))
        return codec.draw(out, m1.logvar(), gen)


def encode_z1(m1: M1VAE, codec: FeatureCodec, codes, nums, gen: torch.Generator) -> torch.Tensor:
    """z1 ~ q(z1 | x) for feature codes."""
    with torch.no_grad():
        mu, lv = m1.encode(torch.from_numpy(codec.one_hot(codes.numpy(), nums.numpy())))
        return mu + (0.5 * lv).exp() * torch.randn(mu.shape, generator=gen)


# -- SPSSL ---------------------------------------------------------------------------------------------
def spssl(m1: M1VAE, codec: FeatureCodec, x_priv: torch.Tensor, y: torch.Tensor, n_labels: int, plan: DPSGDPlan,
          s: TrainSettings, *, gen: torch.Generator, noise_gen: torch.Generator, expected_batch_size: int) -> M2Model:
    """Semi-private semi-supervised learning of a fresh M2: per step one DP step on private rows, one public step.

    The private step follows ``plan`` (:func:`~skdpsynth.privacy._dpsgd.plan_dpsgd`,
    charged by the caller): a Poisson batch at ``plan.sample_rate`` drawn from
    ``noise_gen``, per-example clipping and Gaussian noise from ``noise_gen``
    (Opacus' ``DPOptimizer``), for ``plan.steps`` steps. The public step is plain
    Adam on the unlabelled loss of samples from M1 (public).
    """
    from opacus import GradSampleModule

    m2 = init_module(lambda: M2Model(s.z1_dim, n_labels, tuple(s.m2_hidden), s.z2_dim, tuple(s.classifier_hidden)),
                     torch_seed_from(gen))
    with torch.no_grad():
        mu_p, lv_p = m1.encode(x_priv)  # M1 is fixed during SPSSL; z1 is drawn per step
    codes, nums, _ = sample_m1(m1, codec, s.n_public_samples, gen)
    z1_pub = encode_z1(m1, codec, codes, nums, gen)
    m2.train()
    gsm = GradSampleModule(m2, loss_reduction="sum")
    params = [p for p in m2.parameters() if p.requires_grad]
    dp_opt = dp_optimizer(torch.optim.Adam(params, lr=s.lr), plan, noise_gen, expected_batch_size=expected_batch_size,
                          loss_reduction="mean")
    pub_opt = torch.optim.Adam(params, lr=s.lr)
    n = len(y)
    try:
        for _ in progress(range(plan.steps), s.verbose, "CAPS: SPSSL", total=plan.steps):
            idx = poisson_mask(n, plan.sample_rate, noise_gen).nonzero().squeeze(1)
            z1 = mu_p[idx] + (0.5 * lv_p[idx]).exp() * torch.randn((len(idx), mu_p.shape[1]), generator=noise_gen)
            noise2 = torch.randn((len(idx), s.z2_dim), generator=noise_gen)
            dp_step(gsm, dp_opt, z1, y[idx], noise2, s.beta2, s.alpha)
            b = torch.randint(0, len(z1_pub), (min(s.public_batch_size, len(z1_pub)),), generator=gen)
            public_step(gsm, pub_opt, z1_pub[b], torch.randn((len(b), s.z2_dim), generator=gen), s.beta2)
    finally:
        _detach_opacus(gsm, m2)
    m2.eval()
    return m2


def _detach_opacus(gsm, m2: M2Model) -> None:
    """Remove Opacus' hooks and per-example buffers so the released M2 is a plain module."""
    gsm._close()
    for p in m2.parameters():
        for attr in ("summed_grad", "grad_sample", "_forward_counter", "_current_grad_sample"):
            if hasattr(p, attr):
                delattr(p, attr)


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


# -- after SPSSL (post-processing) -------------------------------------------------------------------
def fit_prior(m1: M1VAE, m2: M2Model, codec: FeatureCodec, s: TrainSettings, gen: torch.Generator) -> tuple:
    """Per-label Gaussian moment-matched to the aggregate posterior q(z2 | y, z1) on public M1 samples."""
    codes, nums, _ = sample_m1(m1, codec, s.n_public_samples, gen)
    z1 = encode_z1(m1, codec, codes, nums, gen)
    with torch.no_grad():
        y = torch.multinomial(torch.softmax(m2.cls(z1), 1), 1, generator=gen).squeeze(1)
        mu2, lv2 = m2.posterior_z2(z1, y)
    means, stds = torch.zeros(m2.n_labels, s.z2_dim), torch.ones(m2.n_labels, s.z2_dim)
    for c in range(m2.n_labels):
        sel = y == c
        if int(sel.sum()) >= 2:
            means[c] = mu2[sel].mean(0)
            stds[c] = (lv2[sel].exp().mean(0) + mu2[sel].var(0)).sqrt().clamp(min=1e-3)
    return means, stds


def generate_z1(m2: M2Model, prior: tuple | None, y: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """z2 from the prior (N(0, I) or the adapted one), then z1 ~ p(z1 | y, z2)."""
    z2 = torch.randn((len(y), m2.z2_dim), generator=gen)
    if prior is not None:
        means, stds = prior
        z2 = means[y] + stds[y] * z2
    return m2.generate_z1(y, z2, gen)


def replay(m1_old: M1VAE, m2: M2Model, prior: tuple | None, codec: FeatureCodec, label_probs, s: TrainSettings,
           gen: torch.Generator) -> M1VAE:
    """Generative replay: M1 trained on samples of M1 + M2 and of the old M1 (post-processing)."""
    m1 = copy.deepcopy(m1_old)
    parts = []
    if s.replay_new:
        y = torch.multinomial(torch.as_tensor(label_probs, dtype=torch.float32), s.replay_new, replacement=True,
                              generator=gen)
        with torch.no_grad():
            out = m1_old.decoder(generate_z1(m2, prior, y, gen))
            parts.append(codec.draw(out, m1_old.logvar(), gen))
    if s.replay_old:
        parts.append(sample_m1(m1_old, codec, s.replay_old, gen))
    if not parts:
        return m1
    data = tuple(torch.cat([p[i] for p in parts]) for i in range(3))
    return train_m1(m1, codec, data, s, s.replay_epochs, s.replay_batch_size, gen, "CAPS: generative replay")
