"""Noise-adding mechanisms. Each charges its cost to a :class:`BudgetAccountant`
*before* drawing noise, and draws only from the generator it is given.

Sensitivities are under the add/remove-one-person relation
(:data:`skdpsynth.privacy.NEIGHBOURING`). Noise comes from NumPy's PCG64, which is
not a cryptographic generator, and continuous noise is subject to the
floating-point attacks of Mironov (2012); counts therefore use integer
(geometric) noise where the release is a count. For deployments that need
protection against those attacks, see docs/privacy.md.
"""

from __future__ import annotations

import math

import numpy as np

from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord

__all__ = ["laplace_mechanism", "geometric_mechanism", "gaussian_mechanism", "exponential_mechanism",
           "gaussian_sigma"]


def _check_positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float, np.floating)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}.")


def laplace_mechanism(
    values, *, sensitivity: float, epsilon: float, rng: np.random.Generator, accountant: BudgetAccountant,
    target: str,
) -> np.ndarray:
    """Laplace mechanism: ``values + Laplace(sensitivity / epsilon)``; epsilon-DP.

    Parameters
    ----------
    values : array-like
        The exact statistic.
    sensitivity : float
        Its L1 sensitivity under add/remove-one-person.
    epsilon : float
        Cost, charged as a pure record.
    rng : numpy.random.Generator
        The noise stream.
    accountant : BudgetAccountant
        Where the cost is charged.
    target : str
        What is measured (goes in the budget log).

    Returns
    -------
    numpy.ndarray
    """
    _check_positive("sensitivity", sensitivity)
    _check_positive("epsilon", epsilon)
    scale = sensitivity / epsilon
    accountant.spend(BudgetRecord("laplace", target, "pure", epsilon=epsilon, sensitivity=sensitivity,
                                  noise_scale=scale))
    values = np.asarray(values, dtype=float)
    return values + rng.laplace(0.0, scale, size=values.shape)


def geometric_mechanism(
    counts, *, sensitivity: float, epsilon: float, rng: np.random.Generator, accountant: BudgetAccountant,
    target: str,
) -> np.ndarray:
    """Two-sided geometric (discrete Laplace) mechanism for integer counts; epsilon-DP.

    Adds ``G1 - G2`` with ``G1, G2 ~ Geometric(1 - exp(-epsilon / sensitivity))``,
    the discrete analogue of Laplace (Ghosh, Roughgarden & Sundararajan 2009):
    the output stays an integer, which avoids floating-point attacks on counts.

    Parameters
    ----------
    counts : array-like of int
        Exact counts.
    sensitivity : float
        L1 sensitivity (integer) under add/remove-one-person; a histogram in
        which each person falls in one cell has sensitivity 1.
    epsilon : float
        Cost (pure).
    rng, accountant, target
        As for :func:`laplace_mechanism`.

    Returns
    -------
    numpy.ndarray of int64
    """
    _check_positive("sensitivity", sensitivity)
    _check_positive("epsilon", epsilon)
    alpha = math.exp(-epsilon / sensitivity)
    accountant.spend(BudgetRecord("geometric", target, "pure", epsilon=epsilon, sensitivity=sensitivity,
                                  noise_scale=sensitivity / epsilon))
    counts = np.asarray(counts)
    p = 1.0 - alpha
    noise = rng.geometric(p, size=counts.shape) - rng.geometric(p, size=counts.shape)
    return counts.astype(np.int64) + noise.astype(np.int64)


def gaussian_sigma(l2_sensitivity: float, rho: float) -> float:
    """Noise standard deviation giving rho-zCDP: ``sigma = l2_sensitivity / sqrt(2 rho)``."""
    _check_positive("rho", rho)
    return l2_sensitivity / math.sqrt(2.0 * rho)


def gaussian_mechanism(
    values, *, l2_sensitivity: float, rho: float, rng: np.random.Generator, accountant: BudgetAccountant,
    target: str,
) -> np.ndarray:
    """Gaussian mechanism: ``values + N(0, sigma^2)``, ``sigma = l2_sensitivity / sqrt(2 rho)``; rho-zCDP.

    (Bun & Steinke 2016, Prop. 1.6.)

    Parameters
    ----------
    values : array-like
        The exact statistic.
    l2_sensitivity : float
        Its L2 sensitivity under add/remove-one-person.
    rho : float
        Cost, charged as a zCDP record.
    rng, accountant, target
        As for :func:`laplace_mechanism`.

    Returns
    -------
    numpy.ndarray
    """
    _check_positive("l2_sensitivity", l2_sensitivity)
    sigma = gaussian_sigma(l2_sensitivity, rho)
    accountant.spend(BudgetRecord("gaussian", target, "zcdp", rho=rho, sensitivity=l2_sensitivity,
                                  noise_scale=sigma))
    values = np.asarray(values, dtype=float)
    return values + rng.normal(0.0, sigma, size=values.shape)


def exponential_mechanism(
    utilities, *, sensitivity: float, epsilon: float, rng: np.random.Generator, accountant: BudgetAccountant,
    target: str, monotonic: bool = False,
) -> int:
    """Exponential mechanism: pick index ``i`` with probability ``exp(eps u_i / (2 s))``; epsilon-DP.

    Implemented with the Gumbel-max trick (McSherry & Talwar 2007).

    Parameters
    ----------
    utilities : array-like of float
        Utility of each candidate (candidates themselves must be public).
    sensitivity : float
        Sensitivity of every utility under add/remove-one-person.
    epsilon : float
        Cost (pure).
    monotonic : bool, default=False
        When utilities all move in the same direction between neighbours the
        factor 2 can be dropped (e.g. counts).
    rng, accountant, target
        As for :func:`laplace_mechanism`.

    Returns
    -------
    int
        The chosen index.
    """
    _check_positive("sensitivity", sensitivity)
    _check_positive("epsilon", epsilon)
    factor = 1.0 if monotonic else 2.0
    accountant.spend(BudgetRecord("exponential", target, "pure", epsilon=epsilon, sensitivity=sensitivity,
                                  noise_scale=factor * sensitivity / epsilon))
    u = np.asarray(utilities, dtype=float)
    logits = epsilon * u / (factor * sensitivity)
    return int(np.argmax(logits + rng.gumbel(size=u.shape)))
