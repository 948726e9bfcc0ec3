"""AIM's workload, candidates and the quality scores of its selection step.

The workload and the candidates are public (column indices and the public
domain sizes); the model's answers are post-processing. The selection itself is a
query of the private table (:meth:`._engine.MarginalEngine.select`).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from skdpsynth.synthesizers._aim_pairs import all_pair_marginals
from skdpsynth.synthesizers._graphical_model import MarkovModel
from skdpsynth.synthesizers._junction_tree import Clique

__all__ = ["resolve_workload", "weighted_workload", "candidates_from_workload", "marginal_counts", "model_answers"]


def resolve_workload(workload, names: list[str]) -> list[Clique]:
    """Workload cliques (sorted column indices) from an int (all k-way marginals), a list or a dict of column tuples."""
    return list(weighted_workload(workload, names))


def weighted_workload(workload, names: list[str]) -> dict[Clique, float]:
    """Workload cliques and their weights (1 each unless ``workload`` is a dict of column tuple -> weight > 0).

    A clique named more than once keeps the largest weight.
    """
    d = len(names)
    if workload is None or isinstance(workload, (int, np.integer)):
        k = 2 if workload is None else int(workload)
        return {tuple(c): 1.0 for c in itertools.combinations(range(d), min(k, d))} if d > 1 else {}
    entries = workload.items() if isinstance(workload, dict) else ((cl, 1.0) for cl in workload)
    index = {n: i for i, n in enumerate(names)}
    out: dict[Clique, float] = {}
    for cl, weight in entries:
        cols = (cl,) if isinstance(cl, (str, int, np.integer)) else tuple(cl)
        try:
            idx = tuple(sorted({index[c] if c in index else int(c) for c in cols}))
        except (ValueError, TypeError):
            raise ValueError(f"workload entry {cl!r} names columns that are not in the table.") from None
        if not idx or max(idx) >= d or min(idx) < 0:
            raise ValueError(f"workload entry {cl!r} names columns that are not in the table.")
        if not (isinstance(weight, (int, float, np.integer, np.floating)) and math.isfinite(weight) and weight > 0):
            raise ValueError(f"workload weight of {cl!r} must be a positive number, got {weight!r}.")
        out[idx] = max(out.get(idx, 0.0), float(weight))
    return dict(sorted(out.items()))


def candidates_from_workload(workload, weights: dict[Clique, float] | None = None) -> dict[Clique, float]:
    """AIM's candidates: the workload's downward closure, each weighted by its overlap with the workload.

    ``weight(r) = sum_{w in workload} c_w |r ∩ w|`` with workload weights
    ``c_w`` (1 each by default; McKenna et al. 2022, Sec. 4).
    """
    weights = {w: 1.0 for w in workload} if weights is None else weights
    closure: set[Clique] = set()
    for w in workload:
        for k in range(1, len(w) + 1):
            closure.update(itertools.combinations(w, k))
    degree: dict[int, float] = {}
    for w in workload:
        for a in w:
            degree[a] = degree.get(a, 0.0) + weights[w]
    # |r ∩ w| = sum over a in r of [a in w], so weight(r) = sum over a in r of the weights of the cliques holding a
    return {r: float(sum(degree[a] for a in r)) for r in sorted(closure, key=lambda c: (len(c), c))}


def marginal_counts(codes: np.ndarray, clique: Clique, sizes: np.ndarray) -> np.ndarray:
    """Exact counts of ``clique`` (shape: the attributes' sizes) from cell codes."""
    shape = [int(sizes[a]) for a in clique]
    flat = np.ravel_multi_index(codes[:, list(clique)].T, shape) if len(clique) > 1 else codes[:, clique[0]]
    return np.bincount(flat, minlength=math.prod(shape)).reshape(shape)


def model_answers(model: MarkovModel, cliques: list[Clique], n_draws: int, rng: np.random.Generator
                  ) -> dict[Clique, np.ndarray]:
    """The model's counts on each clique: exact for cliques within a tree clique and for pairs; else drawn.

    Pairs across tree cliques come from one pass over the tree (:func:`._aim_pairs.all_pair_marginals`).

    Larger cliques that no tree clique covers are counted on ``n_draws`` model draws.

    Post-processing of the model (drawn with the model's generator, not privacy noise).
    """
    sizes = model.tree.sizes
    out, missing = {}, []
    for cl in cliques:
        mu = model.project(cl)
        if mu is None:
            missing.append(cl)
        else:
            out[cl] = mu
    pairs = [cl for cl in missing if len(cl) == 2]
    out.update(all_pair_marginals(model, pairs))
    missing = [cl for cl in missing if len(cl) != 2]
    if missing:
        draws = model.sample(n_draws, rng)
        scale = model.total / n_draws
        for cl in missing:
            out[cl] = marginal_counts(draws, cl, sizes) * scale
    return out

