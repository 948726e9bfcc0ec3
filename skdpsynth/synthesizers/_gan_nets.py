"""The torch networks of the small GAN synthesizers (DP-CTGAN, PATE-GAN): generator, discriminator, sampling.

Needs the ``deep`` extra; the synthesizers import this module only when they fit or sample.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from skdpsynth.synthesizers._gan_common import GridEncoder, _Block

__all__ = ["init_from_numpy", "BlockGenerator", "make_generator", "make_discriminator", "generate"]


def init_from_numpy(module, rng: np.random.Generator) -> None:
    """Initialise every Linear layer from ``rng`` (PyTorch's default uniform ranges; no global torch RNG)."""
    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear):
            bound = 1.0 / math.sqrt(layer.in_features)
            with torch.no_grad():
                layer.weight.copy_(torch.from_numpy(rng.uniform(-bound, bound, layer.weight.shape).astype(np.float32)))
                layer.bias.copy_(torch.from_numpy(rng.uniform(-bound, bound, layer.bias.shape).astype(np.float32)))


class BlockGenerator(torch.nn.Module):
    """MLP generator with block-wise output activations (softmax cells, sigmoid positions).

    ``forward(z, generator=g)`` uses Gumbel-softmax with noise from the torch
    generator ``g`` (training; ``hard=True``: straight-through one-hot cells);
    ``forward(z)`` returns plain softmax
    probabilities (sampling then draws the cells with numpy).
    """

    def __init__(self, noise_dim: int, hidden: tuple[int, ...], blocks: tuple[_Block, ...], dim: int) -> None:
        super().__init__()
        nn = torch.nn
        layers, prev = [], noise_dim
        for h in hidden:
            layers += [nn.Linear(prev, h), nn.ReLU()]
            prev = h
        layers.append(nn.Linear(prev, dim))
        self.net = nn.Sequential(*layers)
        self.blocks = blocks

    def forward(self, z, generator=None, tau: float = 0.2, hard: bool = False):
        raw = self.net(z)
        parts = []
        for b in self.blocks:
            logits = raw[:, b.start:b.start + b.n_cells]
            if generator is not None:
                e = torch.empty_like(logits).exponential_(generator=generator)
                soft = torch.softmax((logits - torch.log(e)) / tau, dim=1)
                if hard:  # straight-through: one-hot forward (like the real rows), soft gradient
                    one_hot = torch.zeros_like(soft).scatter_(1, soft.argmax(dim=1, keepdim=True), 1.0)
                    soft = one_hot - soft.detach() + soft
                parts.append(soft)
            else:
                parts.append(torch.softmax(logits, dim=1))
            if b.offset is not None:
                parts.append(torch.sigmoid(raw[:, b.offset:b.offset + 1]))
        return torch.cat(parts, dim=1)


def make_generator(noise_dim: int, hidden: tuple[int, ...], encoder: GridEncoder, rng: np.random.Generator
                   ) -> BlockGenerator:
    """A :class:`BlockGenerator` for ``encoder``'s layout, initialised from ``rng``."""
    gen = BlockGenerator(noise_dim, tuple(hidden), encoder.blocks, encoder.dim)
    init_from_numpy(gen, rng)
    return gen


def make_discriminator(dim: int, hidden: tuple[int, ...], rng: np.random.Generator):
    """An MLP discriminator (no batch norm or dropout, so Opacus can compute per-sample gradients)."""
    nn = torch.nn
    layers, prev = [], dim
    for h in hidden:
        layers += [nn.Linear(prev, h), nn.LeakyReLU(0.2)]
        prev = h
    layers.append(nn.Linear(prev, 1))
    disc = nn.Sequential(*layers)
    init_from_numpy(disc, rng)
    return disc


def generate(generator, encoder: GridEncoder, n: int, noise_dim: int, rng: np.random.Generator,
             batch: int = 4096) -> pd.DataFrame:
    """Sample ``n`` rows: latent noise and cell draws from ``rng`` (post-processing)."""
    generator.eval()
    outs = []
    with torch.no_grad():
        for start in range(0, n, batch):
            m = min(batch, n - start)
            z = torch.from_numpy(rng.standard_normal((m, noise_dim)).astype(np.float32))
            outs.append(generator(z).numpy())
    raw = np.concatenate(outs) if outs else np.zeros((0, encoder.dim), dtype=np.float32)
    return encoder.inverse(raw, rng)
