"""NPGC's dependence: Kendall's tau of column pairs, its private release, and the latent correlation.

* Exact pair counts: ``S`` = concordant minus discordant pairs of two
  discretised columns, an integer computed from their contingency table
  (:func:`~skdpsynth.privacy._copula_statistics.concordances`, inside the privacy core, which answers them only
  under DP; the functions on codes here serve the non-private mode and the tests).
* The private release (:func:`release_correlation`): every pair's tau at once,
  integer noise on integer numerators (:func:`noisy_kendall_tau`), or, when that
  would drown the pairs in noise, chosen pairs measured with clipped normal
  scores (:mod:`._npgc_scores`); the sensitivity arguments are in their docstrings.
* Post-processing: tau to the latent correlation (:mod:`._npgc_bridge`), the
  unmeasured pairs by maximum entropy, the repair to a correlation matrix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skdpsynth.privacy._copula_statistics import (
    PairLayout,
    PrivateCopulaStatistics,
    concordance,
    concordances,
    padded_concordances,
    pair_numerators,
    public_numerator,
)
from skdpsynth.synthesizers._npgc_bridge import PairBridge, nearest_correlation
from skdpsynth.synthesizers._npgc_scores import CLIP, adaptive_scores

__all__ = ["concordance", "concordances", "kendall_tau_a", "pair_tables", "all_pairs_concordance",
           "all_pairs_tau_a", "public_numerator", "pair_numerators", "noisy_kendall_tau", "DependencePlan",
           "plan_dependence", "release_correlation", "exact_correlation", "tau_to_correlation",
           "nearest_correlation"]

#: tables with at most this many columns measure every pair's Kendall's tau at once
SMALL_TABLE = 5
#: wider ones measure every pair's normal scores at once when that leaves a correlation noise sd at most this
ALL_PAIRS_SD = 0.03
#: ... and no dependence at all (the budget measures the marginals again) when even chosen pairs would be this noisy
OUT_OF_REACH_SD = 0.25
#: slope of the expected clipped-score product in r at 0 for two continuous columns: (2 Phi(1) - 1)^2
_SCORE_SLOPE = 0.466
#: otherwise this many pairs per column are measured, chosen adaptively (:func:`~._npgc_scores.adaptive_scores`) ...
PAIRS_PER_COLUMN = 1.5
#: ... in this many rounds ...
ROUNDS = 4
#: ... with this share of the dependence budget spent on choosing them
SELECTION_SHARE = 0.5


# ---------------------------------------------------------------------------------------- exact pair counts
def _table(codes_x: np.ndarray, codes_y: np.ndarray, nx: int, ny: int) -> np.ndarray:
    return np.bincount(codes_x * ny + codes_y, minlength=nx * ny).reshape(nx, ny)


def kendall_tau_a(codes_x: np.ndarray, codes_y: np.ndarray, nx: int, ny: int, pad: int = 0) -> float:
    """Kendall's tau-a ``S / C(m, 2)`` of two columns of cell indices (``nx``, ``ny`` cells, ordered).

    ``m`` is the number of people plus ``pad`` dummies in cell (0, 0) (see :func:`noisy_kendall_tau`).
    """
    table = _table(np.asarray(codes_x), np.asarray(codes_y), nx, ny)
    table[0, 0] += pad
    m = len(codes_x) + pad
    return concordance(table) / math.comb(m, 2) if m >= 2 else 0.0


def pair_tables(codes: np.ndarray, cells: np.ndarray) -> tuple[np.ndarray, PairLayout]:
    """Contingency tables of every pair ``(i < j)`` of columns of cell codes, flat (:class:`PairLayout`)."""
    layout = PairLayout(cells)
    flat = np.zeros(layout.size, dtype=np.int64)
    if codes.shape[1] > 1:
        layout.add(flat, np.ascontiguousarray(np.asarray(codes, dtype=np.int64).T))
    return flat, layout


def all_pairs_concordance(codes: np.ndarray, cells: np.ndarray, pad: int = 0) -> np.ndarray:
    """``S`` of every pair of columns (``np.triu_indices`` order), with ``pad`` dummies in cell (0, 0); int64."""
    return padded_concordances(*pair_tables(codes, cells), pad)


def all_pairs_tau_a(codes: np.ndarray, cells: np.ndarray, pad: int = 0) -> np.ndarray:
    """Kendall's tau-a of every pair of columns (exact; used without noise in the non-private mode)."""
    m = codes.shape[0] + pad
    s = all_pairs_concordance(codes, cells, pad)
    return s / math.comb(m, 2) if m >= 2 else np.zeros(len(s))


# ---------------------------------------------------------------------------------------- private release
def _tau_target(p: int, a: int, what: str | None = None) -> str:
    pairs = f"all {p} column pairs" if what is None else f"{p} column pairs {what}"
    return (f"Kendall's tau of {pairs} (padded to at least {a} people; concordant minus "
            f"discordant pairs on C({a}, 2) pairs)")


def noisy_kendall_tau(stats: PrivateCopulaStatistics, layout: PairLayout, a: int, *, rho: float | None = None,
                      epsilon: float | None = None, what: str | None = None) -> np.ndarray:
    """Kendall's tau-a of every pair, from its numerator on ``C(a, 2)`` pairs released with integer noise.

    The query and its sensitivity (``2 (a - 1)`` per pair: L2 ``sqrt(P) 2 (a - 1)`` for the discrete Gaussian
    at ``rho``, L1 ``P 2 (a - 1)`` for the geometric mechanism at ``epsilon``) are stated by
    :meth:`~skdpsynth.privacy._copula_statistics.PrivateCopulaStatistics.kendall_numerators`; the noisy
    integers are divided by the public ``C(a, 2)`` (post-processing). Not clipped.
    """
    q = stats.kendall_numerators(layout, a)
    return q.measure(rho=rho, epsilon=epsilon, target=_tau_target(q.size, int(a), what)) / math.comb(int(a), 2)


@dataclass(frozen=True)
class DependencePlan:
    """How the dependence budget is spent (public: from d, a and the budget only).

    Attributes
    ----------
    statistic : {"tau", "scores", "none"}
        Kendall's tau (:func:`noisy_kendall_tau`), clipped normal scores
        (:mod:`._npgc_scores`), or nothing: the dependence is out of reach and
        its budget measures the marginals a second time.
    n_pairs : int
        Pairs measured (all of them, or as many chosen adaptively).
    rounds : int
        Rounds of choosing then measuring (0: all pairs at once, nothing chosen).
    selection : float
        Share of the dependence budget spent on choosing the pairs.
    """

    statistic: str
    n_pairs: int
    rounds: int
    selection: float


def plan_dependence(d: int, a: int, cost: dict) -> DependencePlan:
    """The dependence release for ``d`` columns, a public size ``a`` and the dependence budget ``cost``.

    Up to ``SMALL_TABLE`` columns: every pair's Kendall's tau at once. Wider
    tables: clipped normal scores, whose noise per pair is about a third of
    tau's (:mod:`._npgc_scores`); every pair at once when that leaves a latent
    correlation noise sd of at most ``ALL_PAIRS_SD`` (approximately ``sqrt(P)
    C^2 / (0.47 a sqrt(2 rho))``, or the Laplace sd with ``epsilon``), else
    ``PAIRS_PER_COLUMN * d`` pairs chosen adaptively: the noise grows with the
    number of pairs measured while the pairs that matter do not. When even
    those would carry a noise sd above ``OUT_OF_REACH_SD`` (a few hundred
    people for dozens of columns at epsilon 1), no dependence is measured.
    """
    p = d * (d - 1) // 2
    if d <= SMALL_TABLE:
        return DependencePlan("tau", p, 0, 0.0)
    per_pair = CLIP ** 2 / (_SCORE_SLOPE * a)
    if "rho" in cost:
        sd_all = math.sqrt(p) * per_pair / math.sqrt(2.0 * cost["rho"])
    else:
        sd_all = math.sqrt(2.0) * p * per_pair / cost["epsilon"]
    k = min(p, max(1, round(PAIRS_PER_COLUMN * d)))
    if sd_all <= ALL_PAIRS_SD or k >= p:
        return DependencePlan("scores", p, 0, 0.0)
    if sd_all * math.sqrt(k / p / (1.0 - SELECTION_SHARE)) > OUT_OF_REACH_SD:
        return DependencePlan("none", 0, 0, 0.0)
    return DependencePlan("scores", k, min(ROUNDS, k), SELECTION_SHARE)


def release_correlation(stats: PrivateCopulaStatistics, a: int, probs: list[np.ndarray], n_hat: float,
                        cost: dict) -> np.ndarray:
    """The latent correlation from the cohort's pair tables at ``cost`` (``{"rho": .}`` or ``{"epsilon": .}``).

    ``stats`` answers only DP queries; ``a``, ``probs`` (noisy marginals on
    the dependence cells) and ``n_hat`` are released. All pairs' Kendall's tau
    at once (:func:`noisy_kendall_tau`) or chosen pairs' normal scores
    (:func:`~._npgc_scores.adaptive_scores`), as :func:`plan_dependence` says.
    """
    d = len(probs)
    layout = PairLayout([len(p) for p in probs])
    plan = plan_dependence(d, a, cost)
    if plan.statistic == "scores":
        return adaptive_scores(stats, layout, probs, n_hat, plan.n_pairs, plan.rounds, plan.selection, **cost)
    iu, ju = np.triu_indices(d, 1)
    finite = (n_hat - 1.0) / n_hat if n_hat > 1 else 1.0  # sample tau-a = population tau-a * n / (n - 1)
    tau = noisy_kendall_tau(stats, layout, a, **cost)
    corr = np.eye(d)
    r = PairBridge(probs, iu, ju).correlation(np.clip(tau, -1.0, 1.0) * finite)
    corr[iu, ju] = r
    corr[ju, iu] = r
    return nearest_correlation(corr)


def exact_correlation(tables: np.ndarray, n: int, probs: list[np.ndarray]) -> np.ndarray:
    """Non-private mode: the latent correlation from the exact tau-a of every pair."""
    d = len(probs)
    s = padded_concordances(tables, PairLayout([len(p) for p in probs]))
    tau = s / math.comb(n, 2) if n >= 2 else np.zeros(len(s))
    return tau_to_correlation(tau, probs, float(n), d)


def tau_to_correlation(tau_a: np.ndarray, probs: list[np.ndarray], n: float, d: int) -> np.ndarray:
    """Latent correlation (d, d) from tau-a of every pair (``np.triu_indices`` order); post-processing.

    Tie-free pairs: ``sin(pi tau_b / 2)``; pairs with a coarse column: the
    correlation whose discretised copula reproduces tau-a (:class:`PairBridge`),
    with the finite-sample factor ``(n - 1) / n`` of tau-a (``n``: the number of people).
    """
    iu, ju = np.triu_indices(d, 1)
    finite = (n - 1.0) / n if n > 1 else 1.0
    r = PairBridge(probs, iu, ju).correlation(np.clip(tau_a, -1.0, 1.0) * finite)
    corr = np.eye(d)
    corr[iu, ju] = r
    corr[ju, iu] = r
    return nearest_correlation(corr)
