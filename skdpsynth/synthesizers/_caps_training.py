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
import hashlib
import math
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import torch

from skdpsynth.privacy._dpsgd import DPSGDPlan
from skdpsynth.synthesizers._caps_nn import M1VAE, FeatureCodec, M2Model, init_module

__all__ = ["TrainSettings", "pretrain_m1", "spssl", "dp_step", "public_step", "fit_prior", "generate_z1", "replay",
           "labelled_replay", "torch_seed_from"]


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
    private_part: str
    private_lr: float | None
    public_steps: int
    label_replay: int
    replay_anchor: str
    unlabelled_trains_classifier: bool
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


#: pre-trained M1s by (public rows, settings, seed): a pure function of public inputs, so a refit with the same
#: public data and random_state (a benchmark's one-shot baseline, cross-validation) skips the pre-training
_PRETRAINED: OrderedDict = OrderedDict()
_PRETRAINED_MAX = 4


def _pretrain_key(codec: FeatureCodec, codes: torch.Tensor, nums: torch.Tensor, s: TrainSettings,
                  seed: int) -> tuple:
    # the codec's layout too: two schemas that differ only in a missing class nobody uses encode the same rows to
    # the same codes, but their networks have different widths
    layout = tuple((h.name, h.n_classes) for h in codec.cat_heads) + tuple(h.name for h in codec.num_heads)
    digest = hashlib.sha256(codes.numpy().tobytes() + nums.numpy().tobytes()).hexdigest()
    return (digest, tuple(codes.shape), layout, tuple(s.m1_hidden), s.z1_dim, s.beta1, s.lr, s.pretrain_epochs,
            s.pretrain_batch_size, seed)


def pretrain_m1(codec: FeatureCodec, public, s: TrainSettings, gen: torch.Generator) -> M1VAE:
    """A fresh M1 trained on public, schema-normalised feature rows.

    Draws one seed from ``gen`` and runs on its own generator, so that the
    stream ``gen`` continues identically whether or not the result is cached.
    """
    _, codes, nums, obs = codec.encode(public)
    seed = torch_seed_from(gen)
    key = _pretrain_key(codec, codes, nums, s, seed)
    if key in _PRETRAINED:
        _PRETRAINED.move_to_end(key)
        return copy.deepcopy(_PRETRAINED[key])
    own = torch.Generator().manual_seed(seed)
    m1 = init_module(lambda: M1VAE(codec.input_dim, codec.output_dim, codec.n_num, tuple(s.m1_hidden), s.z1_dim),
                     torch_seed_from(own))
    m1 = train_m1(m1, codec, (codes, nums, obs), s, s.pretrain_epochs, s.pretrain_batch_size, own,
                  "CAPS: pre-train M1")
    _PRETRAINED[key] = copy.deepcopy(m1)
    while len(_PRETRAINED) > _PRETRAINED_MAX:
        _PRETRAINED.popitem(last=False)
    return m1


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
def spssl(m1: M1VAE, codec: FeatureCodec, open_private: Callable, n_labels: int, plan: DPSGDPlan,
          s: TrainSettings, *, gen: torch.Generator, expected_batch_size: int,
          labelled: tuple | None = None) -> M2Model:
    """Semi-private semi-supervised learning of a fresh M2: DP steps on private rows, public steps in between.

    The private steps follow ``plan`` (:func:`~skdpsynth.privacy._dpsgd.plan_dpsgd`):
    ``open_private(optimizer, expected_batch_size)`` is the private table's DP-SGD door
    (:meth:`~skdpsynth.privacy.PrivateTable.dpsgd`), which charges the plan and returns the optimizer that
    clips every example's gradient and adds the noise, and the Poisson batches of the cohort's rows encoded by
    M1 (public) as ``[mean of z1 | log-variance of z1 | label]``; for ``plan.steps`` steps, on the parameters of
    ``s.private_part`` (``"head"``: :class:`~._caps_nn.LabelHead`; ``"all"``: all
    of M2). ``s.public_steps`` plain Adam steps, spread evenly between them, train
    all of M2 on the unlabelled loss of samples from M1 (public) and, when
    ``labelled`` = (mean, log-variance of z1, labels) is given, on the labelled loss
    of rows generated by the previous cycle's release (post-processing, public).
    """
    from opacus import GradSampleModule

    m2 = init_module(lambda: M2Model(s.z1_dim, n_labels, tuple(s.m2_hidden), s.z2_dim, tuple(s.classifier_hidden)),
                     torch_seed_from(gen))
    codes, nums, _ = sample_m1(m1, codec, s.n_public_samples, gen)
    z1_pub = encode_z1(m1, codec, codes, nums, gen)
    m2.train()
    dp_lr = s.lr if s.private_lr is None else s.private_lr
    if labelled is not None:  # start from what the previous release knew: the head at the private rate
        warm_up(m2, labelled, s, dp_lr, gen)
    private = m2.head if s.private_part == "head" else m2
    frozen = m2.body_parameters() if s.private_part == "head" else []
    gsm = GradSampleModule(private, loss_reduction="sum")
    dp_opt, batches = open_private(torch.optim.Adam(list(private.parameters()), lr=dp_lr), expected_batch_size)
    pub_opt = torch.optim.Adam(list(m2.parameters()), lr=s.lr)
    steps = plan.steps
    try:
        for k in progress(range(steps), s.verbose, "CAPS: SPSSL", total=steps):
            batch = batches.draw()
            z = (batch.shape[1] - 1) // 2  # M1 is fixed during SPSSL; z1 is drawn per step
            z1 = batch[:, :z] + (0.5 * batch[:, z:2 * z]).exp() * torch.randn((len(batch), z), generator=gen)
            noise2 = torch.randn((len(batch), s.z2_dim), generator=gen)
            dp_step(m2, gsm, dp_opt, z1, batch[:, 2 * z].long(), noise2, s.beta2, s.alpha, frozen=frozen)
            for _ in range(_share(k + 1, steps, s.public_steps) - _share(k, steps, s.public_steps)):
                public_step(m2, gsm, pub_opt, *_public_batch(z1_pub, labelled, s, gen), s.beta2, s.alpha,
                            s.unlabelled_trains_classifier)
    finally:
        _detach_opacus(gsm, m2)
    m2.eval()
    return m2


def warm_up(m2: M2Model, labelled: tuple, s: TrainSettings, head_lr: float, gen: torch.Generator) -> None:
    """``s.public_steps`` Adam steps of the labelled loss on the previous release's rows (public), before SPSSL.

    The head trains at ``head_lr`` (the private steps' rate), the rest at ``s.lr``:
    the private steps then start from the previous cycles' classifier and label
    embeddings instead of from random ones (the rows are post-processing of a release).
    """
    opt = torch.optim.Adam([{"params": m2.body_parameters(), "lr": s.lr},
                            {"params": list(m2.head.parameters()), "lr": head_lr}])
    for _ in range(s.public_steps):
        z1, y, noise = _labelled_batch(labelled, s, gen)
        opt.zero_grad(set_to_none=True)
        m2(z1, y, noise, s.beta2, s.alpha).mean().backward()
        opt.step()
    opt.zero_grad(set_to_none=True)


def _share(k: int, steps: int, total: int) -> int:
    """Public steps due after ``k`` of ``steps`` private steps (``total`` spread evenly)."""
    return (k * total) // max(steps, 1)


def _labelled_batch(labelled: tuple, s: TrainSettings, gen: torch.Generator) -> tuple:
    """(z1, y, noise) of a batch of the previous release's rows, z1 drawn from q(z1 | x)."""
    mu, lv, y = labelled
    j = torch.randint(0, len(y), (min(s.public_batch_size, len(y)),), generator=gen)
    z1 = mu[j] + (0.5 * lv[j]).exp() * torch.randn((len(j), mu.shape[1]), generator=gen)
    return z1, y[j], torch.randn((len(j), s.z2_dim), generator=gen)


def _public_batch(z1_pub: torch.Tensor, labelled: tuple | None, s: TrainSettings, gen: torch.Generator) -> tuple:
    """(unlabelled z1, its noise, labelled (z1, y, noise) or None) for one public step."""
    b = torch.randint(0, len(z1_pub), (min(s.public_batch_size, len(z1_pub)),), generator=gen)
    out = (z1_pub[b], torch.randn((len(b), s.z2_dim), generator=gen))
    return (*out, None if labelled is None else _labelled_batch(labelled, s, gen))


def _detach_opacus(gsm, m2: M2Model) -> None:
    """Remove Opacus' hooks and per-example buffers so the released M2 is a plain module."""
    gsm._close()
    for p in m2.parameters():
        for attr in ("summed_grad", "grad_sample", "_forward_counter", "_current_grad_sample"):
            if hasattr(p, attr):
                delattr(p, attr)


def dp_step(m2: M2Model, gsm, dp_opt, z1, y, noise, beta2: float, alpha: float, frozen=()) -> None:
    """One DP-Adam step on a Poisson batch of private rows.

    ``gsm`` (Opacus ``GradSampleModule``, ``loss_reduction="sum"``, wrapping the
    private part of ``m2``) records each example's gradient of its labelled loss;
    ``dp_opt`` (Opacus ``DPOptimizer`` over the private part) clips each to
    ``max_grad_norm``, sums, adds N(0, (noise_multiplier * max_grad_norm)^2) noise,
    divides by the expected batch size and steps. The parameters in ``frozen`` (the
    rest of M2) get no gradient. Gradients and per-example gradients are cleared
    before and after, so nothing of a public step can mix in. An empty batch still
    takes a (noise-only) step, as the accountant assumes.
    """
    for p in frozen:
        p.requires_grad_(False)
    try:
        dp_opt.zero_grad(set_to_none=True)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            m2(z1, y, noise, beta2, alpha).sum().backward()
        dp_opt.step()
        dp_opt.zero_grad(set_to_none=True)
    finally:
        for p in frozen:
            p.requires_grad_(True)


def public_step(m2: M2Model, gsm, pub_opt, z1_pub, noise, labelled, beta2: float, alpha: float,
                train_classifier: bool = True) -> None:
    """One plain Adam step on public rows (per-example hooks disabled).

    The loss is the mean unlabelled loss of ``z1_pub`` plus, when ``labelled`` =
    (z1, y, noise) is given, the mean labelled loss (with the classification term).
    """
    gsm.disable_hooks()
    try:
        pub_opt.zero_grad(set_to_none=True)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            loss = m2.unlabelled_loss(z1_pub, noise, beta2, train_classifier).mean()
            if labelled is not None:
                loss = loss + m2(*labelled, beta2, alpha).mean()
            loss.backward()
        pub_opt.step()
        pub_opt.zero_grad(set_to_none=True)
    finally:
        gsm.enable_hooks()


# -- after SPSSL (post-processing) -------------------------------------------------------------------
def fit_prior(m1: M1VAE, m2: M2Model, codec: FeatureCodec, s: TrainSettings, gen: torch.Generator,
              labelled: tuple | None = None) -> tuple:
    """Per-label Gaussian moment-matched to the aggregate posterior q(z2 | y, z1) (post-processing).

    The z1 population: public samples of M1 labelled by q(y | z1) and, when given,
    the previous release's labelled rows ``labelled`` = (mean, log-variance of z1,
    labels), both public.
    """
    codes, nums, _ = sample_m1(m1, codec, s.n_public_samples, gen)
    z1 = encode_z1(m1, codec, codes, nums, gen)
    with torch.no_grad():
        y = torch.multinomial(torch.softmax(m2.cls(z1), 1), 1, generator=gen).squeeze(1)
        if labelled is not None:
            mu, lv, yl = labelled
            z1 = torch.cat([z1, mu + (0.5 * lv).exp() * torch.randn(mu.shape, generator=gen)])
            y = torch.cat([y, yl])
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


def generate_rows(m1: M1VAE, m2: M2Model, prior: tuple | None, codec: FeatureCodec, label_probs, n: int,
                  gen: torch.Generator) -> tuple:
    """((codes, nums, observed), labels) of ``n`` rows of a release: y ~ label_probs, z2, z1 ~ M2, x ~ M1."""
    y = torch.multinomial(torch.as_tensor(label_probs, dtype=torch.float32), n, replacement=True, generator=gen)
    with torch.no_grad():
        out = m1.decoder(generate_z1(m2, prior, y, gen))
        return codec.draw(out, m1.logvar(), gen), y


def labelled_replay(release: tuple, m1_now: M1VAE, codec: FeatureCodec, n: int, gen: torch.Generator) -> tuple:
    """Labelled rows generated by the previous cycle's release, as (mean, log-variance of z1 under ``m1_now``, y).

    ``release`` = (M1, M2, prior, label probabilities) of that cycle: all
    released, so the rows are post-processing, public for the next cycle.
    """
    m1, m2, prior, probs = release
    (codes, nums, _), y = generate_rows(m1, m2, prior, codec, probs, n, gen)
    with torch.no_grad():
        mu, lv = m1_now.encode(torch.from_numpy(codec.one_hot(codes.numpy(), nums.numpy())))
    return mu, lv, y


def replay(m1_old: M1VAE, m2: M2Model, prior: tuple | None, codec: FeatureCodec, label_probs, s: TrainSettings,
           gen: torch.Generator, anchor: tuple | None = None) -> M1VAE:
    """Generative replay: M1 trained on samples of M1 + M2 mixed with old rows (post-processing).

    The old rows are ``s.replay_old`` samples of the old M1 (the paper) or, when
    ``anchor`` = (codes, nums, observed) of public rows is given, rows drawn from
    those (public), which keeps M1 anchored to its pre-training data instead of
    to its own ever older samples.
    """
    m1 = copy.deepcopy(m1_old)
    parts = []
    if s.replay_new:
        parts.append(generate_rows(m1_old, m2, prior, codec, label_probs, s.replay_new, gen)[0])
    if s.replay_old:
        if anchor is None:
            parts.append(sample_m1(m1_old, codec, s.replay_old, gen))
        else:
            pick = torch.randint(0, len(anchor[0]), (s.replay_old,), generator=gen)
            parts.append(tuple(a[pick] for a in anchor))
    if not parts:
        return m1
    data = tuple(torch.cat([p[i] for p in parts]) for i in range(3))
    return train_m1(m1, codec, data, s, s.replay_epochs, s.replay_batch_size, gen, "CAPS: generative replay")
