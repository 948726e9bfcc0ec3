"""Statistics of an empirical privacy audit: Clopper-Pearson bounds, epsilon and mu-GDP lower bounds.

A distinguishing test between two neighbouring datasets has a false-positive
rate (says "the canary is in" when it is not) and a false-negative rate. An
(epsilon, delta)-DP mechanism forces every test to satisfy
``FPR + e^eps FNR >= 1 - delta`` and ``FNR + e^eps FPR >= 1 - delta``
(Kairouz, Oh & Viswanath 2015), so upper confidence bounds on both rates give a
lower confidence bound on epsilon (Jagielski, Ullman & Oprea 2020; Nasr et al.
2021). A mu-GDP mechanism forces ``FNR >= Phi(Phi^-1(1 - FPR) - mu)`` (Dong,
Roth & Su 2022), which gives a lower bound on mu from the same rates.

The two rates are estimated from independent fits (the false positives from
fits on the dataset without the canary, the false negatives from fits on the
one with it), so each Clopper-Pearson bound is taken at level
``sqrt(1 - alpha)``: both hold together with probability ``1 - alpha``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri
from scipy.stats import beta

__all__ = [
    "clopper_pearson",
    "epsilon_lower_bound",
    "mu_lower_bound",
    "mu_implied_by_epsilon",
    "ThresholdTest",
    "select_test",
    "evaluate_test",
]


def clopper_pearson(k, n, *, alpha: float = 0.05, side: str = "upper"):
    """Exact (Clopper-Pearson) confidence bound on a binomial proportion.

    Parameters
    ----------
    k : int or array-like of int
        Number of successes (e.g. false positives).
    n : int or array-like of int
        Number of trials (> 0).
    alpha : float, default=0.05
        One minus the confidence level of the one-sided bound.
    side : {"upper", "lower"}, default="upper"
        Which one-sided bound.

    Returns
    -------
    float or numpy.ndarray
        ``P(p <= bound) >= 1 - alpha`` (upper) or ``P(p >= bound) >= 1 - alpha`` (lower).

    Examples
    --------
    >>> round(clopper_pearson(0, 100), 4)
    0.0295
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    if np.any(n <= 0) or np.any(k < 0) or np.any(k > n):
        raise ValueError("clopper_pearson needs 0 <= k <= n and n > 0.")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}.")
    if side == "upper":
        out = np.where(k >= n, 1.0, beta.ppf(1 - alpha, k + 1, np.maximum(n - k, 1e-300)))
    elif side == "lower":
        out = np.where(k <= 0, 0.0, beta.ppf(alpha, np.maximum(k, 1e-300), n - k + 1))
    else:
        raise ValueError(f"side must be 'upper' or 'lower', got {side!r}.")
    return float(out) if out.ndim == 0 else out


def _per_rate_alpha(alpha: float) -> float:
    """Level of each of two independent bounds so that both hold with probability ``1 - alpha``."""
    return 1.0 - math.sqrt(1.0 - alpha)


def _rate_bounds(false_positives, negatives, false_negatives, positives, alpha):
    a = _per_rate_alpha(alpha)
    return (clopper_pearson(false_positives, negatives, alpha=a),
            clopper_pearson(false_negatives, positives, alpha=a))


def epsilon_lower_bound(false_positives, negatives, false_negatives, positives, *, delta: float = 0.0,
                        alpha: float = 0.05):
    """One-sided lower confidence bound on epsilon from a test's error counts.

    ``max(log((1 - delta - FNR_u) / FPR_u), log((1 - delta - FPR_u) / FNR_u), 0)``
    with ``FPR_u``, ``FNR_u`` Clopper-Pearson upper bounds that hold together
    with probability ``1 - alpha``.

    Parameters
    ----------
    false_positives : int or array-like
        Fits without the canary that the test called "in".
    negatives : int or array-like
        Fits without the canary.
    false_negatives : int or array-like
        Fits with the canary that the test called "out".
    positives : int or array-like
        Fits with the canary.
    delta : float, default=0.0
        The delta of the claim being tested.
    alpha : float, default=0.05
        The bound holds with probability at least ``1 - alpha``.

    Returns
    -------
    float or numpy.ndarray
        Elementwise (one value per test when arrays are given).

    Examples
    --------
    A perfect test on 500 + 500 fits:

    >>> round(epsilon_lower_bound(0, 500, 0, 500), 2)
    4.91
    """
    fpr_u, fnr_u = _rate_bounds(false_positives, negatives, false_negatives, positives, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1.0 - delta - fnr_u, 0.0) / fpr_u)
        b = np.log(np.maximum(1.0 - delta - fpr_u, 0.0) / fnr_u)
    out = np.maximum(np.maximum(np.nan_to_num(a, nan=0.0, neginf=0.0), np.nan_to_num(b, nan=0.0, neginf=0.0)), 0.0)
    return float(out) if np.ndim(out) == 0 else out


def mu_lower_bound(false_positives, negatives, false_negatives, positives, *, alpha: float = 0.05):
    """One-sided lower confidence bound on mu (Gaussian DP) from a test's error counts.

    ``max(Phi^-1(1 - FPR_u) - Phi^-1(FNR_u), 0)`` with the same joint
    Clopper-Pearson bounds as :func:`epsilon_lower_bound`: a mu-GDP mechanism
    has ``FNR >= Phi(Phi^-1(1 - FPR) - mu)`` for every test.

    Parameters
    ----------
    false_positives, negatives, false_negatives, positives : int or array-like
        As for :func:`epsilon_lower_bound`.
    alpha : float, default=0.05
        The bound holds with probability at least ``1 - alpha``.

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> round(mu_lower_bound(0, 500, 0, 500), 2)
    4.88
    """
    fpr_u, fnr_u = _rate_bounds(false_positives, negatives, false_negatives, positives, alpha)
    out = np.maximum(ndtri(1.0 - np.asarray(fpr_u)) - ndtri(np.asarray(fnr_u)), 0.0)
    out = np.nan_to_num(out, nan=0.0)
    return float(out) if np.ndim(out) == 0 else out


def mu_implied_by_epsilon(epsilon: float) -> float:
    """The largest mu-GDP lower bound any test can show against a pure epsilon-DP mechanism.

    The trade-off curve of (epsilon, 0)-DP touches the diagonal ``FPR = FNR``
    at ``1 / (1 + e^eps)``, where ``Phi^-1(1 - FPR) - Phi^-1(FNR)`` is largest:
    ``2 Phi^-1(e^eps / (1 + e^eps))``. A mu lower bound above it refutes the
    epsilon claim as well.
    """
    if not math.isfinite(epsilon):
        return math.inf
    return float(2.0 * ndtri(1.0 / (1.0 + math.exp(-epsilon))))


@dataclass(frozen=True)
class ThresholdTest:
    """A test "the canary is in when ``sign * score >= sign * threshold``".

    Attributes
    ----------
    threshold : float
        Cut point on the attack's score.
    sign : {1, -1}
        1: high scores mean "in"; -1: low scores mean "in".
    """

    threshold: float
    sign: int = 1

    def counts(self, scores_out: np.ndarray, scores_in: np.ndarray) -> tuple[int, int]:
        """(false positives, false negatives) of this test on the two sets of scores."""
        fp = int(np.sum(self.sign * np.asarray(scores_out) >= self.sign * self.threshold))
        fn = int(np.sum(self.sign * np.asarray(scores_in) < self.sign * self.threshold))
        return fp, fn


def _all_tests(scores_out: np.ndarray, scores_in: np.ndarray, sign: int):
    """Error counts of every threshold at the distinct scores, for one orientation (vectorised)."""
    s0, s1 = np.sort(sign * scores_out), np.sort(sign * scores_in)
    cuts = np.unique(np.concatenate([s0, s1, [np.inf]]))
    fp = len(s0) - np.searchsorted(s0, cuts, side="left")  # s0 >= cut
    fn = np.searchsorted(s1, cuts, side="left")  # s1 < cut
    return cuts, fp, fn


def select_test(scores_out, scores_in, *, measure: str = "epsilon", delta: float = 0.0,
                alpha: float = 0.05) -> ThresholdTest:
    """The threshold test whose lower bound is largest on these (selection) scores.

    Parameters
    ----------
    scores_out, scores_in : array-like of float
        Attack scores of fits without / with the canary.
    measure : {"epsilon", "mu"}, default="epsilon"
        Which bound to maximise.
    delta, alpha : float
        As for :func:`epsilon_lower_bound`.

    Returns
    -------
    ThresholdTest
    """
    s0 = np.nan_to_num(np.asarray(scores_out, dtype=float), nan=0.0)
    s1 = np.nan_to_num(np.asarray(scores_in, dtype=float), nan=0.0)
    best, best_value = ThresholdTest(np.inf, 1), -1.0
    for sign in (1, -1):
        cuts, fp, fn = _all_tests(s0, s1, sign)
        if measure == "epsilon":
            values = epsilon_lower_bound(fp, len(s0), fn, len(s1), delta=delta, alpha=alpha)
        elif measure == "mu":
            values = mu_lower_bound(fp, len(s0), fn, len(s1), alpha=alpha)
        else:
            raise ValueError(f"measure must be 'epsilon' or 'mu', got {measure!r}.")
        i = int(np.argmax(values))
        if values[i] > best_value:
            best, best_value = ThresholdTest(float(sign * cuts[i]), sign), float(values[i])
    return best


def evaluate_test(test: ThresholdTest, scores_out, scores_in, *, delta: float = 0.0,
                  alpha: float = 0.05) -> dict[str, float]:
    """Error rates and both lower bounds of one (pre-selected) test on fresh scores.

    Returns
    -------
    dict
        ``fpr``, ``fnr`` (point estimates), ``fpr_upper``, ``fnr_upper`` (joint
        Clopper-Pearson bounds), ``epsilon_lower`` and ``mu_lower``.
    """
    n0, n1 = len(scores_out), len(scores_in)
    fp, fn = test.counts(np.nan_to_num(np.asarray(scores_out, dtype=float), nan=0.0),
                         np.nan_to_num(np.asarray(scores_in, dtype=float), nan=0.0))
    fpr_u, fnr_u = _rate_bounds(fp, n0, fn, n1, alpha)
    return {
        "fpr": fp / n0, "fnr": fn / n1, "fpr_upper": float(fpr_u), "fnr_upper": float(fnr_u),
        "epsilon_lower": epsilon_lower_bound(fp, n0, fn, n1, delta=delta, alpha=alpha),
        "mu_lower": mu_lower_bound(fp, n0, fn, n1, alpha=alpha),
    }
