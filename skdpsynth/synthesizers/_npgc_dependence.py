"""NPGC's dependence: Kendall's tau of column pairs, its private release, and the latent correlation.

* Exact pair counts: ``S`` = concordant minus discordant pairs of two
  discretised columns, an integer computed from their contingency table
  (:func:`concordances`, O(cells) per pair, vectorised over the pairs).
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

from skdpsynth.privacy._accounting import BudgetAccountant
from skdpsynth.privacy._mechanisms import discrete_gaussian_mechanism, geometric_mechanism
from skdpsynth.privacy._noise import NoiseSource
from skdpsynth.synthesizers._npgc_bridge import PairBridge, nearest_correlation
from skdpsynth.synthesizers._npgc_scores import CLIP, adaptive_scores
from skdpsynth.synthesizers._npgc_statistics import PairLayout

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
def concordances(tables: np.ndarray) -> np.ndarray:
    """``S`` (concordant minus discordant pairs) of every table of a stack (P, nx, ny), exactly (int64).

    ``ge[i, l]`` counts ``x >= i, y >= l`` and ``le[i, l]`` counts ``x >= i, y <= l`` (2-D cumulative sums),
    so the cost is O(cells) per table; tied pairs (same row or same column) count 0.
    """
    t = np.asarray(tables, dtype=np.int64)
    if t.shape[-2] < 2 or t.shape[-1] < 2:
        return np.zeros(t.shape[:-2], dtype=np.int64)
    ge = t[..., ::-1, ::-1].cumsum(-2).cumsum(-1)[..., ::-1, ::-1]
    le = t[..., ::-1, :].cumsum(-2)[..., ::-1, :].cumsum(-1)
    return ((t[..., :-1, :-1] * ge[..., 1:, 1:]).sum((-2, -1))
            - (t[..., :-1, 1:] * le[..., 1:, :-1]).sum((-2, -1)))


def concordance(table: np.ndarray) -> int:
    """``S`` of one contingency table (rows and columns ordered), exactly."""
    return int(concordances(np.asarray(table)[None])[0])


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


def padded_concordances(tables: np.ndarray, layout: PairLayout, pad: int = 0) -> np.ndarray:
    """``S`` of every pair's table with ``pad`` dummy people added in cell (0, 0), ``np.triu_indices`` order."""
    out = []
    for _, block in layout.blocks(tables):
        if pad > 0:
            block = block.copy()
            block[:, 0, 0] += pad
        out.append(concordances(block))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def all_pairs_tau_a(codes: np.ndarray, cells: np.ndarray, pad: int = 0) -> np.ndarray:
    """Kendall's tau-a of every pair of columns (exact; used without noise in the non-private mode)."""
    m = codes.shape[0] + pad
    s = all_pairs_concordance(codes, cells, pad)
    return s / math.comb(m, 2) if m >= 2 else np.zeros(len(s))


def public_numerator(s: np.ndarray, m: int, a: int) -> np.ndarray:
    """``S`` re-expressed on the public number of pairs ``C(a, 2)``: ``floor(S C(a, 2) / C(m, 2) + 1/2)``.

    Computed in exact integer arithmetic. It is ``S`` itself when ``m = a``.
    Rounding half up is monotone and commutes with integer shifts, so an
    integer bound on how far the unrounded value moves also bounds the rounded
    one (:func:`noisy_kendall_tau`).
    """
    ca, cm = math.comb(a, 2), math.comb(m, 2)
    return np.array([(2 * int(v) * ca + cm) // (2 * cm) for v in s], dtype=np.int64)


def pair_numerators(tables: np.ndarray, layout: PairLayout, n: int, a: int) -> np.ndarray:
    """The released query before noise: every pair's padded ``S`` on ``C(a, 2)`` pairs (private, exact)."""
    m = max(n, a)
    return public_numerator(padded_concordances(tables, layout, m - n), m, a)


# ---------------------------------------------------------------------------------------- private release
def _tau_target(p: int, a: int, what: str | None = None) -> str:
    pairs = f"all {p} column pairs" if what is None else f"{p} column pairs {what}"
    return (f"Kendall's tau of {pairs} (padded to at least {a} people; concordant minus "
            f"discordant pairs on C({a}, 2) pairs)")


def noisy_kendall_tau(q: np.ndarray, a: int, *, noise: NoiseSource, accountant: BudgetAccountant,
                      rho: float | None = None, epsilon: float | None = None, what: str | None = None) -> np.ndarray:
    """Kendall's tau-a of ``P`` column pairs, released with integer noise; rho-zCDP (or epsilon-DP).

    Neighbouring relation: add or remove one person (one row).

    *Query.* The data are padded with ``max(0, a - n)`` dummy people in cell
    (0, 0), so the query sees ``m = max(n, a)`` people, where ``a >= 2`` is
    public (derived from already released counts). Per pair, ``tau = S /
    C(m, 2)`` and the released integer is ``q = round(tau C(a, 2))``
    (:func:`public_numerator`, :func:`pair_numerators`): ``S`` itself whenever ``n <= a``.

    *Sensitivity of q: 2 (a - 1) per pair.* Let ``D' = D + one person``, ``|D|
    = n``. (i) ``n < a``: both are padded to exactly ``a`` people and ``D'``
    replaces one dummy by the person. That person's ``a - 1`` pair terms (each
    -1, 0 or +1) change by at most 2 each, the others not at all, so ``|dS| <=
    2 (a - 1)``, which is tight (with ``a - 1`` people at cell (1, 1), the
    dummy is concordant with all of them and a person at (2, 0) discordant
    with all). Since ``m = a``, ``q = S``: ``|dq| <= 2 (a - 1)``.
    (ii) ``n >= a``: no padding, ``m = n -> n + 1``. With ``|S| <= C(n, 2)``
    and the new person's terms ``s``, ``|s| <= n``, ``tau - tau' = 4 S / (n (n
    - 1)(n + 1)) - 2 s / (n (n + 1))``, each part at most ``2 / (n + 1)``, so
    ``|dtau| <= 4 / (n + 1) < 4 / a`` and ``|d(tau C(a, 2))| < 2 (a - 1)``.
    In both cases the unrounded value moves by at most the integer ``K = 2 (a
    - 1)``, hence so does ``q`` (rounding half up is monotone and commutes
    with integer shifts). The raw ``S`` would not do: it moves by up to ``n``
    when ``n >= a``, a private and unbounded sensitivity; rescaling to the
    public ``C(a, 2)`` pairs bounds it. On the tau scale: ``4 / a`` per pair.
    Coarsening a column's cells (public, :func:`~._npgc_statistics.dependence_map`)
    changes none of this: the person still has one cell per column.

    *Mechanism.* One person moves every pair, so the vector ``q`` has L2
    sensitivity ``sqrt(P) 2 (a - 1)`` (discrete Gaussian, rho-zCDP) and L1
    sensitivity ``P 2 (a - 1)`` (two-sided geometric, epsilon-DP, when
    ``epsilon`` is given instead of ``rho``). There is no failure probability:
    the bound holds for every ``a``; padding only biases tau towards 0 in the
    rare event ``n < a``. The noisy integers are divided by the public
    ``C(a, 2)`` (post-processing).

    Parameters
    ----------
    q : ndarray of int
        The exact numerators of the pairs (:func:`pair_numerators`; private).
    a : int
        Public lower size of the query (>= 2).
    noise, accountant
        Where the noise comes from and where the cost is charged.
    rho, epsilon : float
        Exactly one: the zCDP or pure-DP cost.
    what : str, optional
        How the pairs were chosen, for the budget log (None: all pairs).

    Returns
    -------
    ndarray of float
        Noisy tau-a of every pair, not clipped.
    """
    a = int(a)
    if a < 2 or (rho is None) == (epsilon is None):
        raise ValueError("noisy_kendall_tau needs a >= 2 and exactly one of rho and epsilon.")
    p, k = len(q), 2 * (a - 1)
    kw = {"noise": noise, "accountant": accountant, "target": _tau_target(p, a, what)}
    if rho is not None:
        noisy = discrete_gaussian_mechanism(q, l2_sensitivity=math.sqrt(p) * k, rho=rho, **kw)
    else:
        noisy = geometric_mechanism(q, sensitivity=float(p * k), epsilon=epsilon, **kw)
    return noisy / math.comb(a, 2)


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


def release_correlation(tables: np.ndarray, n: int, a: int, probs: list[np.ndarray], n_hat: float, cost: dict, *,
                        noise: NoiseSource, accountant: BudgetAccountant) -> np.ndarray:
    """The latent correlation from the private pair tables at ``cost`` (``{"rho": .}`` or ``{"epsilon": .}``).

    ``tables``, ``n`` are exact (private); ``a``, ``probs`` (noisy marginals on
    the dependence cells) and ``n_hat`` are released. All pairs' Kendall's tau
    at once (:func:`noisy_kendall_tau`) or chosen pairs' normal scores
    (:func:`~._npgc_scores.adaptive_scores`), as :func:`plan_dependence` says.
    """
    d = len(probs)
    layout = PairLayout([len(p) for p in probs])
    plan = plan_dependence(d, a, cost)
    if plan.statistic == "scores":
        return adaptive_scores(tables, layout, probs, n_hat, plan.n_pairs, plan.rounds, plan.selection,
                               noise=noise, accountant=accountant, **cost)
    q = pair_numerators(tables, layout, n, a)
    iu, ju = np.triu_indices(d, 1)
    finite = (n_hat - 1.0) / n_hat if n_hat > 1 else 1.0  # sample tau-a = population tau-a * n / (n - 1)
    tau = noisy_kendall_tau(q, a, noise=noise, accountant=accountant, **cost)
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
