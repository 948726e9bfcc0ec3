"""A graphical model on a junction tree, estimated from noisy marginals (post-processing for AIM).

The model is ``p(x) ∝ exp(sum_r theta_r(x_r))`` with one log-potential table
per measured clique ``r``; inference is sum-product on a junction tree whose
cliques cover the measured ones (:mod:`._junction_tree`), vectorised in numpy.
Estimation minimises Private-PGM's objective (McKenna, Sheldon & Miklau 2019),
the inverse-variance weighted squared error between the model's marginals
and the noisy measurements, ``sum_r ||mu_r - y_r||^2 / (2 var_r)``, over the
graphical models of that tree. Each step tries an IPF-like, scale-free
preconditioned step, ``theta_r += s g_r w_r / W_r`` (``W_r`` sums the weights
of the measurements that share ``r``'s home clique) with IPF's direction
``g_r = log(y_r / mu_r)`` where a cell must grow and ``(y_r - mu_r) / mu_r``
(at least -1) where it must shrink, counts floored at one person
(:func:`_ipf_direction`), and keeps it when it lowers the loss by at least 1e-4 of it; otherwise it takes
a mirror-descent step (Private-PGM's, ``theta_r -= alpha w_r (mu_r - y_r)``,
Armijo line search on ``alpha``), which always descends, and retries the
IPF-like step after 1, 2, 4, ... steps. The IPF-like step fits a newly measured
clique in a few steps but stops descending once overlapping noisy measurements
disagree: alone it stalled 20-40 % above the optimum (``tests/test_aim.py``),
and 1.8x above it at the last round of one AIM fit on UCI dropout. Everything
here reads only noisy measurements: no privacy cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from skdpsynth.privacy import project_to_simplex
from skdpsynth.synthesizers._junction_tree import Clique, JunctionTree

__all__ = ["Measurement", "MarkovModel", "combine", "estimate", "pair_start"]

_TINY = 1e-300
_IPF_MIN_STEP = 0.125  # the shortest IPF-like step tried
_STALL = 1e-4  # relative loss decrease an IPF-like step must reach (else a mirror-descent step is taken)


@dataclass(frozen=True)
class Measurement:
    """A noisy marginal: counts on ``clique`` (shape: the attributes' sizes) with per-cell variance.

    ``variance`` is a float, or an array of the counts' shape (e.g. cells merged by domain compression).
    """

    clique: Clique
    counts: np.ndarray
    variance: float | np.ndarray


def combine(measurements: list[Measurement]) -> list[Measurement]:
    """One measurement per clique: the inverse-variance mean of its measurements (a sufficient statistic)."""
    groups: dict[Clique, list[Measurement]] = {}
    for m in measurements:
        groups.setdefault(m.clique, []).append(m)
    out = []
    for cl, ms in groups.items():
        if any(np.any(np.asarray(m.variance) <= 0) for m in ms):  # exact counts win outright
            exact = [m for m in ms if np.all(np.asarray(m.variance) <= 0)] or ms[:1]
            out.append(Measurement(cl, np.mean([m.counts for m in exact], axis=0), 0.0))
            continue
        w = [1.0 / np.asarray(m.variance, float) for m in ms]
        total_w = sum(w)
        y = sum(wi * m.counts.astype(float) for wi, m in zip(w, ms)) / total_w
        var = 1.0 / total_w
        out.append(Measurement(cl, y, float(var) if np.ndim(var) == 0 else var))
    return out


@lru_cache(maxsize=65536)
def _axes_not_in(sup: Clique, sub: Clique) -> tuple[int, ...]:
    s = set(sub)
    return tuple(i for i, a in enumerate(sup) if a not in s)


@lru_cache(maxsize=65536)
def _expand_shape_cached(sup: Clique, sub: Clique, sizes: tuple[int, ...]) -> tuple[int, ...]:
    s = set(sub)
    return tuple(sizes[a] if a in s else 1 for a in sup)


def _expand_shape(sup: Clique, sub: Clique, sizes) -> tuple[int, ...]:
    return _expand_shape_cached(sup, sub, sizes if isinstance(sizes, tuple) else tuple(int(v) for v in sizes))


def _logsumexp(t: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    if not axes:
        return t
    m = t.max(axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return (np.log(np.exp(t - m).sum(axis=axes, keepdims=True)) + m).squeeze(axis=axes)


class MarkovModel:
    """Calibrated clique marginals of a junction-tree model (counts summing to ``total``).

    Parameters
    ----------
    tree : JunctionTree
        The inference structure.
    potentials : dict of clique to ndarray
        Log-potentials on cliques covered by the tree.
    total : float
        Number of people the marginals sum to.
    """

    def __init__(self, tree: JunctionTree, potentials: dict[Clique, np.ndarray], total: float,
                 homes: dict[Clique, int] | None = None) -> None:
        self.tree = tree
        self.potentials = potentials
        self.total = float(total)
        self.homes = homes if homes is not None else {cl: tree.home(cl) for cl in potentials}
        if min(self.homes.values(), default=0) < 0:
            raise ValueError("a potential's clique is not covered by the junction tree.")
        self.marginals = self._calibrate()

    # -- inference -------------------------------------------------------------------
    def _clique_potentials(self) -> list[np.ndarray]:
        sizes = self.tree.size_tuple
        cliques = self.tree.cliques
        tables: list[np.ndarray | None] = [None] * len(cliques)
        for cl, theta in sorted(self.potentials.items(), key=lambda kv: -len(kv[0])):  # whole-clique tables first
            h = self.homes[cl]
            part = theta.reshape(_expand_shape_cached(cliques[h], cl, sizes))
            if tables[h] is None:
                tables[h] = part + np.zeros([sizes[a] for a in cliques[h]]) if len(cl) < len(cliques[h]) else (
                    part.astype(float, copy=True))
            else:
                tables[h] = tables[h] + part
        return [np.zeros([sizes[a] for a in cl]) if t is None else t for cl, t in zip(cliques, tables)]

    def _calibrate(self) -> list[np.ndarray]:
        """Sum-product: upward messages (log space between cliques), then marginals from the root down.

        Each clique's belief is exponentiated once, relative to its largest cell; the message to the parent is
        its sum over the attributes outside the separator, added to the parent in log space (no underflow
        however many children); going down, ``mu_i = belief_i * mu_parent(S) / message_i(S)``.
        """
        tree, sizes = self.tree, self.tree.size_tuple
        logs = self._clique_potentials()
        belief: list[np.ndarray | None] = [None] * len(logs)
        msg: list[np.ndarray | None] = [None] * len(logs)
        for i in reversed(tree.order):
            t = logs[i]
            top = t.max()
            belief[i] = np.exp(t - top) if np.isfinite(top) else np.ones_like(t)
            p = tree.parent[i]
            if p >= 0:
                axes = _axes_not_in(tree.cliques[i], tree.separators[i])
                msg[i] = belief[i].sum(axis=axes) if axes else belief[i]
                logs[p] = logs[p] + np.log(np.maximum(msg[i], _TINY)).reshape(
                    _expand_shape_cached(tree.cliques[p], tree.separators[i], sizes))
        out: list[np.ndarray | None] = [None] * len(logs)
        for i in tree.order:
            p = tree.parent[i]
            if p < 0:
                out[i] = belief[i] * (max(self.total, _TINY) / belief[i].sum())
            else:
                sep = tree.separators[i]
                above = out[p].sum(axis=_axes_not_in(tree.cliques[p], sep))
                ratio = above / np.maximum(msg[i], _TINY)
                out[i] = belief[i] * ratio.reshape(_expand_shape_cached(tree.cliques[i], sep, sizes))
        return out

    def project(self, clique: Clique) -> np.ndarray | None:
        """The model's counts on ``clique`` when one tree clique covers it (None otherwise)."""
        h = self.homes[clique] if clique in self.homes else self.tree.home(clique)
        if h < 0:
            return None
        return self.marginals[h].sum(axis=_axes_not_in(self.tree.cliques[h], clique))

    def _visit(self, i: int, a: int, sep_in: Clique | None, phi: np.ndarray | None, targets: list[int],
               outs: list[Clique]) -> tuple[dict[int, np.ndarray], list[np.ndarray]]:
        """In clique ``i``: ``P(a, b)`` for ``b`` in ``targets`` and ``P(a, S)`` for each separator in ``outs``.

        ``phi = P(a, sep_in)`` (shape ``(k_a, *sep_in)``), or None in ``a``'s home clique. Away from home
        the joint ``P(a, clique) = phi * mu / mu(sep_in)`` is formed for a few values of ``a`` at a time
        (at most about 2 million cells), so memory stays bounded by the model size.
        """
        sizes = self.tree.size_tuple
        cl, mu = self.tree.cliques[i], self.marginals[i]
        k_a = sizes[a]
        if phi is None:
            pairs = {b: np.moveaxis(mu.sum(axis=_axes_not_in(cl, tuple(sorted((a, b))))), int(b < a), 0)
                     for b in targets}
            seps = []
            for sep in outs:
                if a in sep:
                    m = mu.sum(axis=_axes_not_in(cl, sep))
                    onehot = np.eye(k_a).reshape((k_a,) + tuple(k_a if x == a else 1 for x in sep))
                    seps.append(onehot * m[None])
                else:
                    u = tuple(sorted(set(sep) | {a}))
                    seps.append(np.moveaxis(mu.sum(axis=_axes_not_in(cl, u)), u.index(a), 0))
            return pairs, seps
        below = mu.sum(axis=_axes_not_in(cl, sep_in)).reshape(_expand_shape(cl, sep_in, sizes))
        cond = np.where(below > 0, mu / np.where(below > 0, below, 1.0), 0.0)
        step = max(1, int(2_000_000 // max(mu.size, 1)))
        pairs = {b: np.zeros((k_a, sizes[b])) for b in targets}
        seps = [np.zeros((k_a,) + tuple(sizes[x] for x in sep)) for sep in outs]
        for lo in range(0, k_a, step):
            chunk = phi[lo:lo + step]
            joint = chunk.reshape((len(chunk),) + _expand_shape(cl, sep_in, sizes)) * cond[None]
            for b in targets:
                pairs[b][lo:lo + step] = joint.sum(axis=tuple(1 + k for k in _axes_not_in(cl, (b,))))
            for sep, out in zip(outs, seps):
                out[lo:lo + step] = joint.sum(axis=tuple(1 + k for k in _axes_not_in(cl, sep)))
        return pairs, seps

    def pair_marginals(self, pairs: list[tuple[int, int]]) -> dict[tuple[int, int], np.ndarray]:
        """Exact model counts of attribute pairs, also across tree cliques.

        From the home clique of ``a``, ``P(a, S)`` is carried along the tree
        (``P(a, S_out) = sum P(a, S_in) mu_C / mu_C(S_in)`` over the clique's
        other attributes) and closed in every clique holding a wanted ``b``.
        """
        tree = self.tree
        wanted: dict[int, set[int]] = {}
        for a, b in pairs:
            wanted.setdefault(a, set()).add(b)
        out: dict[tuple[int, int], np.ndarray] = {}
        for a, targets in wanted.items():
            home = tree.home((a,))
            todo = set(targets)
            state = {home: (None, None)}  # clique -> (incoming separator, P(a, separator))
            queue = [home]
            while queue and todo:
                i = queue.pop()
                sep_in, phi = state[i]
                here = [b for b in tree.cliques[i] if b in todo]
                nxt = [j for j in tree.neighbours[i] if j not in state]
                outs = [tuple(sorted(set(tree.cliques[i]) & set(tree.cliques[j]))) for j in nxt]
                found, seps = self._visit(i, a, sep_in, phi, here, outs)
                for b, table in found.items():
                    out[(a, b)] = table
                    todo.discard(b)
                for j, sep, table in zip(nxt, outs, seps):
                    state[j] = (sep, table)
                    queue.append(j)
        return out

    # -- sampling --------------------------------------------------------------------
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` rows of attribute codes, clique by clique from the root (forward sampling)."""
        tree, sizes = self.tree, self.tree.sizes
        codes = np.zeros((n, len(sizes)), dtype=np.int64)
        for i in tree.order:
            cl, sep = tree.cliques[i], tree.separators[i]
            new = tuple(a for a in cl if a not in sep)
            if not new:
                continue
            perm = [cl.index(a) for a in sep] + [cl.index(a) for a in new]
            n_sep = math.prod(int(sizes[a]) for a in sep)
            table = np.transpose(self.marginals[i], perm).reshape(n_sep, -1)
            codes[:, list(new)] = _conditional_draw(table, codes, sep, new, sizes, rng)
        return codes


def _conditional_draw(table: np.ndarray, codes: np.ndarray, sep: Clique, new: Clique, sizes: np.ndarray,
                      rng: np.random.Generator) -> np.ndarray:
    """Draw ``new`` given the already drawn ``sep`` from a (separator x new) table of counts."""
    rows = table.sum(axis=1, keepdims=True)
    probs = np.where(rows > 0, table / np.where(rows > 0, rows, 1.0), 1.0 / table.shape[1])
    cdf = np.cumsum(probs, axis=1)
    cdf /= cdf[:, -1:]
    flat_cdf = (cdf + np.arange(len(cdf))[:, None]).ravel()
    row = np.ravel_multi_index(codes[:, list(sep)].T, [int(sizes[a]) for a in sep]) if sep else np.zeros(
        len(codes), dtype=np.int64)
    pos = np.searchsorted(flat_cdf, row + rng.random(len(codes)), side="right")
    idx = np.clip(pos - row * table.shape[1], 0, table.shape[1] - 1)
    return np.column_stack(np.unravel_index(idx, [int(sizes[a]) for a in new]))


class _Objective:
    """``sum_r w_r ||mu_r - y_r||^2 / 2`` over the measurements, on one flat vector of all their cells."""

    def __init__(self, model: MarkovModel, meas: list[Measurement], weights: list[np.ndarray]) -> None:
        tree = model.tree
        self.cliques = [m.clique for m in meas]
        self.homes = [model.homes[cl] for cl in self.cliques]
        self.axes = [_axes_not_in(tree.cliques[h], cl) for h, cl in zip(self.homes, self.cliques)]
        self.shapes = [m.counts.shape for m in meas]
        self.bounds = np.cumsum([0] + [m.counts.size for m in meas])
        self.y = np.concatenate([np.ravel(m.counts).astype(float) for m in meas])
        self.w = np.concatenate([np.ravel(w) for w in weights])

    def marginals(self, model: MarkovModel) -> np.ndarray:
        """The model's counts on every measured cell (flat)."""
        return np.concatenate([(model.marginals[h].sum(axis=ax) if ax else model.marginals[h]).ravel()
                               for h, ax in zip(self.homes, self.axes)])

    def loss(self, mu: np.ndarray) -> float:
        r = mu - self.y
        return 0.5 * float(np.dot(self.w * r, r))

    def tables(self, flat: np.ndarray) -> dict[Clique, np.ndarray]:
        """A flat vector cut into one table per measured clique."""
        b = self.bounds
        return {cl: flat[b[k]:b[k + 1]].reshape(shape) for k, (cl, shape) in enumerate(zip(self.cliques, self.shapes))}

    def evaluate(self, model: MarkovModel) -> tuple[float, np.ndarray]:
        mu = self.marginals(model)
        return self.loss(mu), mu


def _moved(model: MarkovModel, delta: dict[Clique, np.ndarray]) -> MarkovModel:
    return MarkovModel(model.tree, {cl: t + delta[cl] for cl, t in model.potentials.items()}, model.total, model.homes)


def _ipf_direction(mu: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bounded IPF-like change of each cell's log-potential towards its measurement (counts floored at one person).

    Up: ``log(y / mu)``, IPF's own step, not its linearisation ``(y - mu) / mu``, which overshoots without bound
    where the model holds almost nobody and a noisy count is large. Down: ``(y - mu) / mu``, at least -1 per step.
    """
    floor_mu = np.maximum(mu, 1.0)
    up = np.log(np.maximum(y, 1.0) / floor_mu)
    return np.where(y > mu, up, np.maximum((y - mu) / floor_mu, -1.0))


def _mirror_step(model: MarkovModel, obj: _Objective, mu: np.ndarray, loss: float, alpha: float):
    """One mirror-descent step ``theta_r -= alpha w_r (mu_r - y_r)`` with an Armijo line search on ``alpha``.

    Private-PGM's step (McKenna et al. 2019, Algorithm 1): with the entropic mirror map, the direction is a descent
    direction of the loss (its derivative is ``-g^T Cov g <= 0``), so a small enough ``alpha`` always lowers it.
    Returns (model, loss, marginals, next alpha), or a None model when no step of at least ``1e-6`` times the
    first one helps.
    """
    grad = obj.w * (mu - obj.y)
    floor = alpha * 1e-6
    while alpha > floor:
        trial = _moved(model, obj.tables(-alpha * grad))
        new_loss, new_mu = obj.evaluate(trial)
        if loss - new_loss >= 0.5 * alpha * float(np.dot(grad, mu - new_mu)):
            return trial, new_loss, new_mu, alpha * 1.2
        alpha *= 0.5
    return None, loss, mu, alpha


def estimate(tree: JunctionTree, measurements: list[Measurement], total: float, *,
             potentials: dict[Clique, np.ndarray] | None = None, iters: int = 100, tol: float = 1e-7) -> MarkovModel:
    """The graphical model on ``tree`` closest to the measurements (weighted least squares).

    Each step: the IPF-like step when it lowers the loss by at least ``1e-4`` of it, else a mirror-descent step
    (:func:`_mirror_step`; the IPF-like step is retried after 1, 2, 4, ... steps); see the module docstring.

    Parameters
    ----------
    tree : JunctionTree
        Must cover every measured clique.
    measurements : list of Measurement
        One per clique (see :func:`combine`); variance 0 means exact counts.
    total : float
        Number of people (e.g. the inverse-variance mean of the noisy totals).
    potentials : dict, optional
        Warm start (cliques missing from it start at zero).
    iters : int
        Most steps.
    tol : float
        Stop when a mirror-descent step lowers the loss by less than this fraction (or none lowers it).

    Returns
    -------
    MarkovModel
    """
    sizes = tree.sizes
    meas = list(measurements)
    variances = [np.broadcast_to(np.asarray(m.variance, float), m.counts.shape) for m in meas]
    top = max((float(v.max()) for v in variances if v.size), default=0.0)
    floor = 1e-6 * top if top > 0 else 1.0
    weights = [1.0 / np.maximum(v, floor) for v in variances]
    theta = {m.clique: np.zeros([int(sizes[a]) for a in m.clique]) for m in meas}
    for cl, t in (potentials or {}).items():
        if cl in theta:
            theta[cl] = t.copy()
    model = MarkovModel(tree, theta, total)
    obj = _Objective(model, meas, weights)
    mean_w = np.array([float(np.mean(w)) for w in weights])
    homes = obj.homes
    share = [mean_w[k] / sum(mean_w[j] for j in range(len(meas)) if homes[j] == homes[k]) for k in range(len(meas))]
    scale = np.concatenate([np.ravel(share[k] * w / mean_w[k]) for k, w in enumerate(weights)])  # IPF-like
    loss, mu = obj.evaluate(model)
    step = 1.0  # the IPF-like step's length
    alpha = 1.0 / float(np.max(obj.w * np.maximum(mu, 1.0)))  # the mirror-descent step's
    next_ipf, backoff = 0, 1  # after a failed IPF-like step, the next try waits 1, 2, 4, ... iterations
    for t in range(iters):
        if t >= next_ipf:
            trial = _moved(model, obj.tables(step * scale * _ipf_direction(mu, obj.y)))
            new_loss, new_mu = obj.evaluate(trial)
            if loss - new_loss >= _STALL * loss:
                model, loss, mu = trial, new_loss, new_mu
                step, backoff = min(1.0, step * 1.5), 1
                continue
            step = max(step * 0.5, _IPF_MIN_STEP)
            next_ipf, backoff = t + backoff, 2 * backoff
        trial, new_loss, new_mu, alpha = _mirror_step(model, obj, mu, loss, alpha)
        if trial is None or loss - new_loss < tol * loss:
            if trial is not None:
                model = trial
            break
        model, loss, mu = trial, new_loss, new_mu
    return model


def pair_start(tree: JunctionTree, measurements: list[Measurement], total: float, *, rake: int = 4,
               floor: float = 1e-3) -> dict[Clique, np.ndarray]:
    """Log-potentials close to the measurements of a tree of pairs (a warm start for :func:`estimate`).

    Every attribute's counts are the inverse-variance mean of its own 1-way measurement and of the margins of the
    measured pairs holding it, projected onto ``{x >= 0, sum x = total}``. Each tree clique that is a measured
    pair gets a table with those margins, the closer (least squares) to its measurement of two: the measured
    table's least-squares correction to the margins, or its projection onto ``{x >= 0, sum x = total}``, each
    at least ``floor`` of the mean cell (no cell impossible) and raked ``rake`` times to the margins. A table
    enters as the log of its conditional given the clique's separator (the root as its log counts), so the
    model holds each table. Other cliques start at zero. Post-processing of the measurements.
    """
    sizes = tree.size_tuple
    parts: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
    for m in measurements:
        var = np.broadcast_to(np.asarray(m.variance, float), m.counts.shape)
        counts = np.asarray(m.counts, float)
        for k, a in enumerate(m.clique):
            if len(m.clique) <= 2:
                other = tuple(i for i in range(len(m.clique)) if i != k)
                parts.setdefault(a, []).append((counts.sum(axis=other), var.sum(axis=other)))
    one: dict[int, np.ndarray] = {}
    for a, pieces in parts.items():
        weights = [1.0 / np.maximum(v, 1e-12) for _, v in pieces]
        mean = sum(w * y for w, (y, _) in zip(weights, pieces)) / sum(weights)
        one[a] = project_to_simplex(mean, total)
    measured = {m.clique: m for m in measurements}
    out: dict[Clique, np.ndarray] = {}
    for i in tree.order:
        cl = tree.cliques[i]
        if len(cl) != 2 or cl not in measured:
            continue
        y = np.asarray(measured[cl].counts, float)
        rows, cols = one[cl[0]], one[cl[1]]
        tables = [_raked(t, rows, cols, rake) for t in _table_starts(y, rows, cols, total, floor * total / y.size)]
        table = min(tables, key=lambda t: float(np.sum((t - y) ** 2)))
        log_t = np.log(np.maximum(table, _TINY))
        sep = tree.separators[i]
        if sep:
            log_t = log_t - _logsumexp(log_t, _axes_not_in(cl, sep)).reshape(_expand_shape(cl, sep, sizes))
        out[cl] = log_t
    return out


def _table_starts(y: np.ndarray, rows: np.ndarray, cols: np.ndarray, total: float, floor: float
                  ) -> list[np.ndarray]:
    """Two non-negative starts for a noisy pair table ``y`` with target margins ``rows`` and ``cols``."""
    a, b = y.shape
    dr, dc = rows - y.sum(axis=1), cols - y.sum(axis=0)
    affine = y + dr[:, None] / b + dc[None, :] / a - dr.sum() / (a * b)  # least squares with these margins
    simplex = project_to_simplex(y.ravel(), total).reshape(y.shape)
    return [np.maximum(affine, floor), simplex + floor]


def _raked(table: np.ndarray, rows: np.ndarray, cols: np.ndarray, times: int) -> np.ndarray:
    """``table`` scaled alternately to the row and column sums, ``times`` times each."""
    for _ in range(times):
        table = table * (rows / np.maximum(table.sum(axis=1), _TINY))[:, None]
        table = table * (cols / np.maximum(table.sum(axis=0), _TINY))[None, :]
    return table
