"""Torch parts of CAPS: the feature codec, M1 (a VAE over x) and M2 (Kingma's M2 on z1).

Nothing here touches the privacy budget; :mod:`skdpsynth.synthesizers._caps_training`
runs the training steps and :mod:`skdpsynth.synthesizers._caps` decides which data
flow through which step. All randomness comes from explicit
``torch.Generator`` objects (never the global torch RNG).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from skdpsynth._grid import seconds_to_datetime
from skdpsynth.schema import TableSchema

__all__ = ["FeatureCodec", "M1VAE", "M2Model", "LabelHead", "mlp", "init_module"]

_LOG2PI = math.log(2 * math.pi)


def mlp(sizes: list[int]) -> nn.Sequential:
    """Linear layers with ELU between them (Opacus-compatible: only ``nn.Linear`` has parameters)."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ELU())
    return nn.Sequential(*layers)


def init_module(factory, seed: int):
    """Build a module with its weight initialisation drawn from ``seed`` (global torch RNG untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return factory()


@dataclass(frozen=True)
class _Head:
    name: str
    kind: str            # "cat" (categorical / boolean / missing flag) or "num"
    n_classes: int       # for "cat"
    categories: tuple    # for "cat" of a categorical column (missing appended when nullable)
    lo: float = 0.0
    hi: float = 1.0
    spec_kind: str = ""  # schema kind of the column
    flag_of: str = ""    # for a numeric column's missing flag: the column name


class FeatureCodec:
    """Encode a schema-normalised feature table for the networks and decode samples back.

    Categorical and boolean columns become one categorical head each (the missing
    value is one more class when the column is nullable). Numeric and datetime
    columns become one Gaussian head on the value scaled to [0, 1] by the public
    bounds, plus a two-class missing-flag head when nullable. Heads with the same
    number of classes are laid out contiguously so their losses are computed in one
    vectorised call.

    Parameters
    ----------
    schema : TableSchema
        Public schema of the features (the target excluded).
    """

    def __init__(self, schema: TableSchema) -> None:
        self.schema = schema
        heads: list[_Head] = []
        for spec in schema.columns:
            if spec.kind in ("categorical", "boolean"):
                cats = tuple(spec.categories) + ((None,) if spec.nullable else ())
                heads.append(_Head(spec.name, "cat", len(cats), cats, spec_kind=spec.kind))
            else:
                lo, hi = spec.numeric_bounds
                heads.append(_Head(spec.name, "num", 0, (), lo, hi if hi > lo else lo + 1.0, spec_kind=spec.kind))
                if spec.nullable:
                    heads.append(_Head(spec.name + "__missing", "cat", 2, (False, True), flag_of=spec.name))
        self.cat_heads = [h for h in heads if h.kind == "cat"]
        self.num_heads = [h for h in heads if h.kind == "num"]
        # group categorical heads by their number of classes
        self.groups: dict[int, list[int]] = {}
        for i, h in enumerate(self.cat_heads):
            self.groups.setdefault(h.n_classes, []).append(i)
        self.group_slices = {}
        start = 0
        for k, idx in self.groups.items():
            self.group_slices[k] = (start, start + k * len(idx))
            start += k * len(idx)
        self.n_cat_units = start
        self.n_num = len(self.num_heads)
        self.input_dim = self.n_cat_units + self.n_num
        self.output_dim = self.n_cat_units + self.n_num

    # -- data -> arrays -----------------------------------------------------------
    def codes(self, X: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(categorical codes (n, n_cat_heads), scaled numbers (n, n_num), observed mask (n, n_num))."""
        n = len(X)
        codes = np.zeros((n, len(self.cat_heads)), dtype=np.int64)
        nums = np.full((n, self.n_num), 0.5, dtype=np.float32)
        obs = np.ones((n, self.n_num), dtype=np.float32)
        for j, h in enumerate(self.num_heads):
            spec = self.schema[h.name]
            col = X[h.name]
            if spec.kind == "datetime":
                v = pd.to_datetime(col).astype("datetime64[ns]").astype("int64").to_numpy().astype(float) / 1e9
                v[col.isna().to_numpy()] = np.nan
            else:
                v = col.to_numpy(dtype=float)
            miss = np.isnan(v)
            nums[:, j] = np.where(miss, 0.5, (np.clip(v, h.lo, h.hi) - h.lo) / (h.hi - h.lo))
            obs[:, j] = ~miss
        for i, h in enumerate(self.cat_heads):
            if h.flag_of:
                codes[:, i] = X[h.flag_of].isna().to_numpy().astype(np.int64)
                continue
            col = X[h.name]
            isna = col.isna().to_numpy()
            known = [c for c in h.categories if c is not None]
            obj = col.to_numpy(dtype=object)
            c = pd.Categorical(np.where(isna, None, obj), categories=known).codes.astype(np.int64)
            c[isna] = len(known)  # the missing class (only reachable for nullable columns)
            codes[:, i] = c
        return codes, nums, obs

    def one_hot(self, codes: np.ndarray, nums: np.ndarray) -> np.ndarray:
        """Network input: one-hot blocks in group layout, then scaled numbers."""
        n = len(codes)
        out = np.zeros((n, self.input_dim), dtype=np.float32)
        for k, idx in self.groups.items():
            s, _ = self.group_slices[k]
            cols = s + np.arange(len(idx))[None, :] * k + codes[:, idx]
            out[np.arange(n)[:, None], cols] = 1.0
        out[:, self.n_cat_units:] = nums
        return out

    def encode(self, X: pd.DataFrame) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Tensors (input, codes, nums, observed) of a feature table."""
        codes, nums, obs = self.codes(X)
        return (torch.from_numpy(self.one_hot(codes, nums)), torch.from_numpy(codes), torch.from_numpy(nums),
                torch.from_numpy(obs))

    # -- likelihood ------------------------------------------------------------------
    def nll(self, out: torch.Tensor, num_logvar: torch.Tensor, codes: torch.Tensor, nums: torch.Tensor,
            obs: torch.Tensor) -> torch.Tensor:
        """Per-row negative log-likelihood of the features under the decoder output ``out``."""
        n = out.shape[0]
        total = out.new_zeros(n)
        for k, idx in self.groups.items():
            s, e = self.group_slices[k]
            logits = out[:, s:e].reshape(n, len(idx), k)
            total = total + F.cross_entropy(logits.transpose(1, 2), codes[:, idx], reduction="none").sum(1)
        if self.n_num:
            mean = torch.sigmoid(out[:, self.n_cat_units:])
            lv = num_logvar.expand_as(mean)
            g = 0.5 * (_LOG2PI + lv + (nums - mean) ** 2 / lv.exp())
            total = total + (g * obs).sum(1)
        return total

    def draw(self, out: torch.Tensor, num_logvar: torch.Tensor,
             generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(codes, nums, observed) tensors drawn from decoder output, for training on samples (no DataFrame)."""
        n = out.shape[0]
        codes = torch.zeros((n, len(self.cat_heads)), dtype=torch.int64)
        for k, idx in self.groups.items():
            s, e = self.group_slices[k]
            probs = torch.softmax(out[:, s:e].reshape(n * len(idx), k), 1)
            codes[:, idx] = torch.multinomial(probs, 1, generator=generator).reshape(n, len(idx))
        if self.n_num:
            mean = torch.sigmoid(out[:, self.n_cat_units:])
            nums = (mean + (0.5 * num_logvar).exp() * torch.randn(mean.shape, generator=generator)).clamp(0, 1)
        else:
            nums = torch.zeros((n, 0))
        obs = torch.ones_like(nums)
        flag_idx = {h.flag_of: i for i, h in enumerate(self.cat_heads) if h.flag_of}
        for j, h in enumerate(self.num_heads):
            if h.name in flag_idx:
                miss = codes[:, flag_idx[h.name]] == 1
                nums[miss, j] = 0.5
                obs[miss, j] = 0.0
        return codes, nums.float(), obs.float()

    def sample(self, out: torch.Tensor, num_logvar: torch.Tensor, generator: torch.Generator) -> pd.DataFrame:
        """Draw feature rows from the decoder output (schema-normalised types)."""
        n = out.shape[0]
        codes = np.zeros((n, len(self.cat_heads)), dtype=np.int64)
        for k, idx in self.groups.items():
            s, e = self.group_slices[k]
            probs = torch.softmax(out[:, s:e].reshape(n * len(idx), k), dim=1)
            draw = torch.multinomial(probs, 1, generator=generator).reshape(n, len(idx))
            codes[:, idx] = draw.numpy()
        cols: dict[str, np.ndarray] = {}
        flags = {h.flag_of: codes[:, i].astype(bool) for i, h in enumerate(self.cat_heads) if h.flag_of}
        if self.n_num:
            mean = torch.sigmoid(out[:, self.n_cat_units:])
            std = (0.5 * num_logvar).exp().expand_as(mean)
            u = (mean + std * torch.randn(mean.shape, generator=generator)).clamp(0, 1).numpy().astype(float)
            for j, h in enumerate(self.num_heads):
                v = h.lo + u[:, j] * (h.hi - h.lo)
                if h.spec_kind == "integer":
                    v = np.clip(np.round(v), math.ceil(h.lo), math.floor(h.hi))
                if h.name in flags:
                    v = np.where(flags[h.name], np.nan, v)
                if h.spec_kind == "datetime":
                    cols[h.name] = seconds_to_datetime(v)
                else:
                    cols[h.name] = v
        for i, h in enumerate(self.cat_heads):
            if h.flag_of:
                continue
            arr = np.array(h.categories, dtype=object)[codes[:, i]]
            cols[h.name] = np.where(pd.isna(arr), np.nan, arr).astype(object)
        return pd.DataFrame({name: cols[name] for name in self.schema.names})


class M1VAE(nn.Module):
    """M1: an unconditional VAE over the features, p(z1) = N(0, I), p(x | z1) per feature.

    Parameters
    ----------
    input_dim, output_dim : int
        Sizes from :class:`FeatureCodec`.
    n_num : int
        Number of Gaussian heads (their log-variances are free parameters).
    hidden : tuple of int
        Hidden layer sizes of encoder and decoder.
    latent_dim : int
        Size of z1.
    """

    def __init__(self, input_dim: int, output_dim: int, n_num: int, hidden: tuple[int, ...], latent_dim: int):
        super().__init__()
        h = list(hidden)
        self.latent_dim = latent_dim
        self.encoder = mlp([input_dim, *h, 2 * latent_dim])
        self.decoder = mlp([latent_dim, *h[::-1], output_dim])
        self.num_logvar = nn.Parameter(torch.full((max(n_num, 1),), -3.0))
        self.n_num = n_num

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log-variance of q(z1 | x)."""
        mu, logvar = self.encoder(x).chunk(2, dim=1)
        return mu, logvar.clamp(-10, 6)

    def logvar(self) -> torch.Tensor:
        """Log-variances of the Gaussian heads (clamped)."""
        return self.num_logvar[: self.n_num].clamp(-7, 2)

    def loss(self, codec: FeatureCodec, x, codes, nums, obs, noise: torch.Tensor, beta: float) -> torch.Tensor:
        """Per-row negative ELBO (beta-weighted KL)."""
        mu, logvar = self.encode(x)
        z = mu + (0.5 * logvar).exp() * noise
        nll = codec.nll(self.decoder(z), self.logvar(), codes, nums, obs)
        kl = 0.5 * (mu ** 2 + logvar.exp() - 1 - logvar).sum(1)
        return nll + beta * kl


class LabelHead(nn.Module):
    """The label-dependent parameters of M2: q(y | z1) and the label embeddings of its encoder and decoder.

    With ``private_part="head"`` only these few parameters are trained on the
    private cohort (DP-SGD noise is added per parameter, so a small private part
    gets a much larger signal-to-noise ratio than the whole of M2).
    """

    def __init__(self, z1_dim: int, n_labels: int, classifier_hidden: tuple[int, ...], enc_width: int,
                 dec_width: int):
        super().__init__()
        self.cls = mlp([z1_dim, *classifier_hidden, n_labels])
        self.enc_label = nn.Linear(n_labels, enc_width, bias=False)
        self.dec_label = nn.Linear(n_labels, dec_width, bias=False)


class _Conditioned(nn.Module):
    """An MLP whose first layer is ``W x + E y + b``: the label enters through an embedding ``E`` kept elsewhere."""

    def __init__(self, in_dim: int, sizes: list[int]):
        super().__init__()
        self.inp = nn.Linear(in_dim, sizes[0])
        self.rest = nn.Sequential(nn.ELU(), mlp(sizes)) if len(sizes) > 1 else nn.Identity()

    def forward(self, x: torch.Tensor, label_part: torch.Tensor) -> torch.Tensor:
        return self.rest(self.inp(x) + label_part)


class M2Model(nn.Module):
    """Kingma et al.'s M2 on M1's latent z1, with label y.

    q(z2 | y, z1) and p(z1 | y, z2) diagonal Gaussians, q(y | z1) categorical,
    p(z2) = N(0, I) during training. The label enters the encoder and the decoder
    through embeddings (equivalent to concatenating its one-hot code); those and
    the classifier form :attr:`head` (:class:`LabelHead`), the part trained on the
    private cohort when ``private_part="head"``.

    ``forward`` returns the per-example labelled loss used by the private
    (DP-SGD) step: ``L(z1, y) + alpha * CE(q(y | z1), y)`` with
    ``L = -E_q[log p(z1 | y, z2)] + beta2 * KL(q(z2 | y, z1) || N(0, I))``.
    """

    def __init__(self, z1_dim: int, n_labels: int, hidden: tuple[int, ...], z2_dim: int,
                 classifier_hidden: tuple[int, ...]):
        super().__init__()
        h = list(hidden)
        self.n_labels = n_labels
        self.z2_dim = z2_dim
        enc_sizes, dec_sizes = [*h, 2 * z2_dim], [*h[::-1], 2 * z1_dim]
        self.enc = _Conditioned(z1_dim, enc_sizes)
        self.dec = _Conditioned(z2_dim, dec_sizes)
        self.head = LabelHead(z1_dim, n_labels, tuple(classifier_hidden), enc_sizes[0], dec_sizes[0])

    def cls(self, z1: torch.Tensor) -> torch.Tensor:
        """Logits of q(y | z1)."""
        return self.head.cls(z1)

    def body_parameters(self) -> list[nn.Parameter]:
        """Every parameter outside :attr:`head` (trained on public data only with ``private_part="head"``)."""
        head = {id(p) for p in self.head.parameters()}
        return [p for p in self.parameters() if id(p) not in head]

    def _encode(self, z1: torch.Tensor, y1h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu2, lv2 = self.enc(z1, self.head.enc_label(y1h)).chunk(2, dim=1)
        return mu2, lv2.clamp(-10, 6)

    def _decode(self, z2: torch.Tensor, y1h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu1, lv1 = self.dec(z2, self.head.dec_label(y1h)).chunk(2, dim=1)
        return mu1, lv1.clamp(-8, 4)

    def _l(self, z1: torch.Tensor, y1h: torch.Tensor, noise: torch.Tensor, beta2: float) -> torch.Tensor:
        mu2, lv2 = self._encode(z1, y1h)
        z2 = mu2 + (0.5 * lv2).exp() * noise
        mu1, lv1 = self._decode(z2, y1h)
        rec = 0.5 * (_LOG2PI + lv1 + (z1 - mu1) ** 2 / lv1.exp()).sum(1)
        kl = 0.5 * (mu2 ** 2 + lv2.exp() - 1 - lv2).sum(1)
        return rec + beta2 * kl

    def forward(self, z1: torch.Tensor, y: torch.Tensor, noise: torch.Tensor, beta2: float,
                alpha: float) -> torch.Tensor:
        """Per-example labelled loss plus the alpha-weighted classification loss."""
        y1h = F.one_hot(y, self.n_labels).to(z1.dtype)
        ce = F.cross_entropy(self.cls(z1), y, reduction="none")
        return self._l(z1, y1h, noise, beta2) + alpha * ce

    def unlabelled_loss(self, z1: torch.Tensor, noise: torch.Tensor, beta2: float,
                        train_classifier: bool = True) -> torch.Tensor:
        """Per-example U(z1) = sum_y q(y|z1) L(z1, y) - H(q(y|z1)) (minimisation form).

        With ``train_classifier=False`` q(y | z1) enters as fixed weights: U then
        trains the generative part only, and q(y | z1) learns from labels alone.
        """
        n, k = z1.shape[0], self.n_labels
        logits = self.cls(z1)
        if not train_classifier:
            logits = logits.detach()
        q = torch.softmax(logits, 1)
        ys = torch.arange(k).repeat_interleave(n)
        z1r = z1.repeat(k, 1)
        L = self._l(z1r, F.one_hot(ys, k).to(z1.dtype), noise.repeat(k, 1), beta2).reshape(k, n).T
        ent = -(q * torch.log_softmax(logits, 1)).sum(1)
        return (q * L).sum(1) - ent

    @torch.no_grad()
    def generate_z1(self, y: torch.Tensor, z2: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """z1 ~ p(z1 | y, z2)."""
        mu1, lv1 = self._decode(z2, F.one_hot(y, self.n_labels).to(z2.dtype))
        return mu1 + (0.5 * lv1).exp() * torch.randn(mu1.shape, generator=generator)

    @torch.no_grad()
    def posterior_z2(self, z1: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log-variance of q(z2 | y, z1)."""
        return self._encode(z1, F.one_hot(y, self.n_labels).to(z1.dtype))
