"""Partition selection whose cost scales with people, not with their contributions.

Releasing the set of keys (event types, categories) that people hold is a
partition selection: a key only one person holds must not appear except with a
small probability ``delta``. The stability histogram counts each person once
per key, so a person who holds ``k`` keys moves the counts by ``sqrt(k)`` in L2
norm and the threshold grows with ``sqrt(k)``.

Here each person spreads a weight of L2 norm 1 over the distinct keys they hold
(``1 / sqrt(d)`` on each of their ``d`` keys): the weighted Gaussian mechanism
of Gopi et al. (2020, "Differentially private set union", section 4), with the
threshold a key held by one person alone must pass taken over every ``d`` up to
the contribution bound (their Theorem 4.2; Desfontaines, Voss, Gipson & Mandayam
2022 study the optimal thresholds). A key used by ``n`` people who hold ``d``
keys each gathers ``n / sqrt(d)``: on OULAD module AAA (735 learners, about
7 activity types each) that is what lets the types most learners use pass at
epsilon 1.

Weights are integers (``floor(scale / sqrt(d))`` with a public ``scale``) and
the noise is discrete Gaussian on them, so no released number is a raw
floating-point Gaussian draw (Mironov 2012).
"""

from __future__ import annotations

import math

import numpy as np

from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord
from skdpsynth.privacy._domain_plan import discrete_gaussian_tail
from skdpsynth.privacy._noise import NoiseSource

__all__ = ["WEIGHT_SCALE", "bounded_key_counts", "bounded_key_weights", "weighted_gaussian_selection",
           "weighted_gaussian_threshold"]

#: public integer scale of the weights: a person with d keys puts floor(WEIGHT_SCALE / sqrt(d)) on each
WEIGHT_SCALE = 1024


def _first_keys(codes: np.ndarray, person: np.ndarray, bound: int, n_codes: int) -> np.ndarray:
    """Record positions of each person's first ``bound`` distinct keys (one per (person, key), in record order)."""
    pair = person.astype(np.int64) * n_codes + codes
    _, first = np.unique(pair, return_index=True)
    first = np.sort(first)
    who = person[first]
    rank = np.arange(len(first)) - np.searchsorted(who, who, side="left")
    return first[rank < bound]


def bounded_key_counts(codes: np.ndarray, person: np.ndarray, bound: int, n_codes: int) -> np.ndarray:
    """People per key when each person counts only their first ``bound`` distinct keys (L1 sensitivity ``bound``).

    Parameters are those of :func:`bounded_key_weights`; returns an int64 array of length ``n_codes``.
    """
    return np.bincount(codes[_first_keys(codes, person, bound, n_codes)], minlength=n_codes).astype(np.int64)


def bounded_key_weights(codes: np.ndarray, person: np.ndarray, bound: int, n_codes: int,
                        scale: int = WEIGHT_SCALE) -> np.ndarray:
    """Integer weight of every key: each person's first ``bound`` distinct keys get ``floor(scale / sqrt(d))``.

    Parameters
    ----------
    codes : ndarray of int
        Key code of every record (in ``0 .. n_codes - 1``), records sorted by person then order.
    person : ndarray of int
        Person index of every record (non-decreasing).
    bound : int
        Most distinct keys one person counts towards (their first ones, in record order).
    n_codes : int
        Number of key codes.
    scale : int, default=WEIGHT_SCALE
        Public integer scale: one person's weights have L2 norm at most ``scale``.

    Returns
    -------
    ndarray of int64 of length ``n_codes``
        Summed weights; a key no one counted has weight 0 (it is not a candidate).
    """
    kept = _first_keys(codes, person, bound, n_codes)
    owner = person[kept]
    d = np.bincount(owner)[owner]  # distinct keys each person counts (<= bound)
    weight = np.floor(scale / np.sqrt(d))
    return np.bincount(codes[kept], weights=weight, minlength=n_codes).astype(np.int64)


def weighted_gaussian_threshold(contribution_bound: int, sigma: float, delta: float,
                                scale: int = WEIGHT_SCALE) -> int:
    """Smallest integer ``tau`` with ``t P[N_Z(0, sigma^2) >= tau - floor(scale / sqrt(t))] <= delta`` for every
    ``t <= contribution_bound`` (a person alone holds ``t`` keys, each of weight ``floor(scale / sqrt(t))``)."""
    k = int(contribution_bound)
    weights = [math.floor(scale / math.sqrt(t)) for t in range(1, k + 1)]

    def leaks(tau: int) -> bool:
        return any(t * discrete_gaussian_tail(sigma, tau - w) > delta for t, w in enumerate(weights, start=1))

    lo, hi = 1, scale + max(2, int(sigma * math.sqrt(2 * math.log(max(k, 1) / delta) + 2)) + 2)
    while leaks(hi):
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if leaks(mid):
            lo = mid + 1
        else:
            hi = mid
    return lo


def weighted_gaussian_selection(
    weights, *, contribution_bound: int, rho: float, delta: float, noise: NoiseSource,
    accountant: BudgetAccountant, target: str, scale: int = WEIGHT_SCALE,
) -> tuple[np.ndarray, np.ndarray]:
    """Release the keys whose noisy weight passes the threshold; ``delta``-approximately ``rho``-zCDP.

    The caller weighs each person's first ``k = contribution_bound`` distinct
    keys by ``floor(scale / sqrt(d))`` (``d <= k`` keys; :func:`bounded_key_weights`)
    and passes exactly the keys so weighted (all weights > 0). Each weight gets
    ``N_Z(0, sigma^2)`` noise, ``sigma = scale / sqrt(2 rho)``, and a key is
    released when its noisy weight reaches :func:`weighted_gaussian_threshold`.

    Privacy (add/remove one person, all their records). A person's weights
    have L2 norm at most ``scale`` (``d`` keys of at most ``scale / sqrt(d)``),
    and nobody else's weights depend on them: on the keys both neighbours hold
    the weights move by at most ``scale`` in L2 norm, so the noisy weights are
    ``rho``-zCDP (Canonne, Kamath & Steinke 2020, Thm. 4) and thresholding is
    post-processing. The keys only the larger neighbour holds are that
    person's own -- ``t <= d <= k`` of them, each of weight at most
    ``floor(scale / sqrt(t))`` -- and are released with probability at most
    ``delta`` in all (union bound; the threshold's definition); their noise is
    independent of the rest. So the release is ``delta``-approximately
    ``rho``-zCDP (Bun & Steinke 2016, Def. 8.1), charged as a zCDP record
    (``rho``, L2 sensitivity 1 in units of ``scale``) and an approximate record
    (``epsilon = 0``, ``delta``), before any noise is drawn.

    Parameters
    ----------
    weights : array-like of int
        Summed integer weight of every candidate key, all > 0.
    contribution_bound : int
        Most keys one person counts towards.
    rho : float
        zCDP cost of the noisy weights.
    delta : float
        Probability budget of the threshold.
    noise, accountant, target
        As for :func:`skdpsynth.privacy.laplace_mechanism`.
    scale : int, default=WEIGHT_SCALE
        The weights' public integer scale.

    Returns
    -------
    released : ndarray of bool
    noisy : ndarray of int64
        Noisy weights, in units of ``1 / scale``.
    """
    k = int(contribution_bound)
    if k < 1 or not (rho > 0 and 0 < delta < 1) or scale * scale < k:
        raise ValueError(f"need contribution_bound >= 1, rho > 0, 0 < delta < 1 and scale^2 >= contribution_bound, "
                         f"got {k}, {rho}, {delta}, {scale}.")
    weights = np.asarray(weights).astype(np.int64)
    if np.any(weights <= 0):
        raise ValueError("weighted_gaussian_selection takes only keys that were weighted (every weight > 0).")
    sigma = scale / math.sqrt(2 * rho)
    threshold = weighted_gaussian_threshold(k, sigma, delta, scale)
    details = {"threshold": threshold / scale, "contribution_bound": k, "weights": "L2 norm 1 per person"}
    kw = dict(sensitivity=1.0, noise_scale=sigma / scale, details=details)
    records = [BudgetRecord("weighted gaussian partition selection", target, "zcdp", rho=rho, **kw),
               BudgetRecord("weighted gaussian partition selection (threshold)", target, "approx", epsilon=0.0,
                            delta=delta, **kw)]
    accountant.require(records, what=target)
    for record in records:
        accountant.spend(record)
    noisy = weights + noise.discrete_gaussian(sigma, weights.shape)
    return noisy >= threshold, noisy
