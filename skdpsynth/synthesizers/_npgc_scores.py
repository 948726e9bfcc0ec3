"""NPGC's dependence for wide or small tables: clipped normal scores of adaptively chosen column pairs.

When measuring every pair's Kendall's tau at once would drown them in noise
(:func:`~._npgc_dependence.plan_dependence`), NPGC measures fewer, chosen
pairs, and measures them with a statistic whose sensitivity is four times
smaller than tau's in correlation units: the sum over people of the product of
the two columns' *clipped normal scores* (van der Waerden-type scores,
``s(c) = E[clip(Z, -C, C) | Z in cell c]`` under the released marginal). Tau is
a U-statistic (one person enters ``n - 1`` pairs of people, sensitivity ``4 /
n`` on a scale whose slope in ``r`` is ``2 / pi``); the score sum moves by one
product of bounded scores (at most ``C^2``), with slope ``(2 Phi(C) - 1)^2``
per person: ``C = 1`` gives ``2.2 / n`` in correlation units against tau's ``6.3 / n``.

The scores, their bounds and the model's expected score product (a power series
in ``r`` by Mehler's expansion, :class:`~._npgc_bridge.HermiteMoments`) come from
released marginals only.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri

from skdpsynth.privacy._answers import PrivateVector
from skdpsynth.privacy._copula_statistics import PairLayout, PrivateCopulaStatistics
from skdpsynth.privacy._mechanisms import gaussian_sigma
from skdpsynth.synthesizers._npgc_bridge import (
    R_MAX,
    HermiteMoments,
    horner,
    horner_slope,
    nearest_correlation,
    soft_completion_precision,
    solve_polynomials,
)

__all__ = ["ScoreModel", "adaptive_scores", "CLIP", "COMPLETION_WEIGHT"]

#: scores are conditional means of the latent normal clipped to [-CLIP, CLIP]
CLIP = 1.0
#: trust in a measured pair relative to the maximum-entropy completion (see :func:`soft_completion`)
COMPLETION_WEIGHT = 3.0


def _clipped_integral(t: np.ndarray, c: float) -> np.ndarray:
    """``int_-inf^t clip(z, -c, c) phi(z) dz`` (vectorised; ``t`` may be infinite)."""
    phi = lambda x: np.exp(-x * x / 2.0) / math.sqrt(2.0 * math.pi)  # noqa: E731
    tc = np.clip(t, -c, c)
    low = -c * ndtr(np.minimum(t, -c))
    mid = np.where(t > -c, phi(-c) - phi(tc), 0.0)
    high = np.where(t > c, c * (ndtr(t) - ndtr(c)), 0.0)
    return low + mid + high


class ScoreModel:
    """Clipped normal scores of every column and the copula's expected score products.

    Parameters
    ----------
    probabilities : list of ndarray
        Released cell probabilities of every column, on the cells the pair tables use.
    clip : float
        ``C``.
    """

    def __init__(self, probabilities: list[np.ndarray], clip: float = CLIP) -> None:
        d = len(probabilities)
        width = max(len(p) for p in probabilities)
        p = np.zeros((d, width))
        for j, q in enumerate(probabilities):
            total = q.sum()
            p[j, :len(q)] = q / total if total > 0 else 1.0 / len(q)
        cum = np.concatenate([np.zeros((d, 1)), np.cumsum(p, axis=1)], axis=1)
        cum[:, -1] = 1.0
        t = ndtri(np.clip(cum, 0.0, 1.0))  # -inf .. +inf
        mass = np.diff(_clipped_integral(t, clip), axis=1)
        edge = np.clip(t[:, 1:], -clip, clip)  # an empty cell scores its cut point
        self.scores = np.where(p > 1e-12, mass / np.where(p > 1e-12, p, 1.0), edge)
        self.scores[np.arange(width)[None, :] >= np.array([len(q) for q in probabilities])[:, None]] = 0.0  # padding
        self.bound = np.abs(self.scores).max(axis=1)
        u = HermiteMoments(probabilities).cell_coefficients  # (d, terms, width)
        self.alpha = np.einsum("dkx,dx->dk", u, self.scores)[:, 1:]  # E[s(X) h_k(Z)], k >= 1 (k = 0: mean 0)

    def sums(self, stats: PrivateCopulaStatistics, layout: PairLayout) -> PrivateVector:
        """The cohort's score-product sums ``sum_people s_i(x_i) s_j(x_j)`` of every pair, kept private."""
        return stats.score_sums(self.scores, self.bound, layout)

    def polynomials(self, iu: np.ndarray, ju: np.ndarray) -> np.ndarray:
        """Coefficients of the expected score product per person, ``sum_k r^k alpha_ik alpha_jk``."""
        return self.alpha[iu] * self.alpha[ju]



def adaptive_scores(stats: PrivateCopulaStatistics, layout: PairLayout, probabilities: list[np.ndarray],
                    n_hat: float, n_pairs: int, rounds: int, selection: float, *, rho: float | None = None,
                    epsilon: float | None = None) -> np.ndarray:
    """Latent correlation (d, d) from ``n_pairs`` adaptively chosen pairs; rho-zCDP (or epsilon-DP).

    Neighbouring relation: add or remove one person (one row).

    *Query.* For a pair ``(i, j)``, ``T_ij = sum_people s_i(x_i) s_j(x_j)``
    with public scores ``s`` (:class:`ScoreModel`, from released marginals).
    Adding or removing one person changes ``T_ij`` by that person's ``s_i
    s_j``, at most ``b_ij = max|s_i| max|s_j| <= C^2``: a vector of pairs
    ``E`` has L2 sensitivity ``sqrt(sum_E b_ij^2)`` and L1 sensitivity
    ``sum_E b_ij`` (:meth:`~skdpsynth.privacy._copula_statistics.PrivateCopulaStatistics.score_sums`).
    No row count enters the query (``n_hat``, released, only scales the model), so no padding is needed.

    *Rounds.* Each of ``rounds`` rounds (i) chooses its pairs one at a time
    with the exponential mechanism over the pairs not yet chosen (public), the
    utility of a pair being ``|T_ij - n_hat g_ij(R)|``, its distance from the
    expected sum under the copula ``R`` fitted to the pairs measured so far
    (post-processing of earlier releases); its sensitivity is the largest
    ``b_ij`` among the candidates;
    each choice costs ``rho_s / n_pairs`` (epsilon ``sqrt(8 rho_s /
    n_pairs)``, Cesar & Rogers 2021; with ``epsilon``, pure at ``epsilon_s /
    n_pairs``); (ii) releases the round's sums with the Gaussian mechanism on a
    public grid at ``rho_m / rounds`` (Laplace with ``epsilon``). By adaptive
    composition the whole costs ``rho_s + rho_m = rho`` (``selection`` is
    ``rho_s / rho``).

    *Post-processing.* Each measured pair's latent correlation solves ``n_hat
    g_ij(r) = noisy T_ij``; the unmeasured pairs follow from maximum entropy
    (:func:`soft_completion`, each measured pair trusted by its noise).
    """
    key, total = ("rho", rho) if rho is not None else ("epsilon", epsilon)
    d = len(probabilities)
    iu, ju = np.triu_indices(d, 1)
    model = ScoreModel(probabilities)
    sums = model.sums(stats, layout)
    poly = model.polynomials(iu, ju)
    scale = max(float(n_hat), 1.0)
    # a pair with a constant column (one released category or value) has bound 0: its sum is 0 whatever the
    # data, so it is neither chosen nor measured and keeps correlation 0 (public: the bounds come from the scores)
    available = np.array([sums.sensitivity([p])[1] > 0 for p in range(len(iu))], dtype=bool)
    n_pairs = min(n_pairs, int(available.sum()))
    if n_pairs == 0:
        return np.eye(d)
    if rounds == 0:  # every pair at once, nothing chosen
        live = np.flatnonzero(available)
        noisy, sigma = _measure(sums, live, total, key, None)
        corr = np.eye(d)
        corr[iu[live], ju[live]] = corr[ju[live], iu[live]] = _solve(poly[live], noisy / scale)
        return nearest_correlation(corr)
    per_pick = total * selection / n_pairs
    per_round = total * (1.0 - selection) / rounds
    sizes = np.diff(np.linspace(0, n_pairs, rounds + 1).round().astype(int))
    chosen, measured, sd = [], np.zeros(0), np.zeros(0)
    corr, theta = np.eye(d), None
    for t, size in enumerate(sizes):
        expected = scale * _expected(poly, corr[iu, ju])
        picks = [_choose(sums, expected, available, per_pick, key, (t, rounds)) for _ in range(size)]
        noisy, sigma = _measure(sums, picks, per_round, key, (t, rounds))
        chosen += picks
        measured = np.concatenate([measured, noisy / scale])
        sd = np.concatenate([sd, np.full(len(picks), sigma / scale)])
        last = t == len(sizes) - 1  # earlier rounds only guide the next choices: a looser tolerance
        corr, theta = _fit(poly, np.asarray(chosen), measured, sd, iu, ju, d, theta, 1e-10 if last else 1e-6)
    return corr


def _expected(poly: np.ndarray, r: np.ndarray) -> np.ndarray:
    return horner(poly, np.clip(r, -1.0, 1.0))


def _choose(sums: PrivateVector, expected: np.ndarray, available: np.ndarray, cost: float, key: str,
            round_) -> int:
    """One pair by the exponential mechanism, utility ``|T_ij - expected_ij|`` (sensitivity in ``sums``)."""
    cand = np.flatnonzero(available)
    target = (f"choice of a column pair for the normal-score dependence (round {round_[0] + 1} of {round_[1]}, "
              f"{len(cand)} candidates)")
    i = sums.select([[p] for p in cand], [[expected[p]] for p in cand], **{key: cost}, target=target)
    available[cand[i]] = False
    return int(cand[i])


def _measure(sums: PrivateVector, index, cost: float, key: str, round_) -> tuple[np.ndarray, float]:
    """The sums of the pairs ``index`` (all when None) on a public grid, and their noise sd (public)."""
    n = sums.size if index is None else len(index)
    which = (f"all {n} column pairs" if round_ is None
             else f"{n} column pairs chosen in round {round_[0] + 1} of {round_[1]}")
    target = f"normal-score sums of {which} (scores clipped at {CLIP:g})"
    out = sums.measure(index, **{key: cost}, target=target, real=True)
    l1, l2 = sums.sensitivity(index)
    if key == "rho":
        return out, gaussian_sigma(l2, cost) * 1.001  # the grid widens the sensitivity by at most 0.1 %
    return out, math.sqrt(2.0) * l1 / cost * 1.001


def _solve(c: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Latent correlations whose expected score products (per person) are ``measured``."""
    lo, hi = horner(c, np.full(len(c), -R_MAX)), horner(c, np.full(len(c), R_MAX))
    target = np.clip(measured, lo, hi)
    start = np.clip(target / np.maximum(np.abs(c[:, 0]), 1e-9), -0.9, 0.9)
    return solve_polynomials(c, target, start)


def _fit(poly, pairs, measured, sd, iu, ju, d, theta0, tol) -> tuple[np.ndarray, np.ndarray]:
    """Bridge the measured pairs, then complete by maximum entropy (post-processing); warm-started."""
    c = poly[pairs]
    r = _solve(c, measured)
    slope = np.maximum(np.abs(horner_slope(c, r)), 0.05 * np.maximum(np.abs(c[:, 0]), 1e-3))
    mu = COMPLETION_WEIGHT * (sd / slope) ** 2 + 1e-9
    return soft_completion_precision(r, iu[pairs], ju[pairs], d, mu, tol=tol, theta0=theta0)

