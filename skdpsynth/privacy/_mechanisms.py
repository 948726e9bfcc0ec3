"""Noise-adding mechanisms: the only code that adds privacy noise to statistics of private data.

Each mechanism charges its cost to a :class:`BudgetAccountant` *before* drawing
noise, and draws only from the :class:`~skdpsynth.privacy.NoiseSource` it is given
(secure by default). Sensitivities are under the add/remove-one-person relation
(:data:`skdpsynth.privacy.NEIGHBOURING`).

No mechanism releases a raw floating-point Laplace or Gaussian draw (Mironov
2012): counts get integer noise (discrete Laplace / discrete Gaussian), and real
statistics are rounded to a public grid ``g`` and noised there in units of ``g``
(the sensitivity is widened by the rounding, ``d g`` in L1 or ``sqrt(d) g`` in
L2, and charged as such).
"""

from __future__ import annotations

import math

import numpy as np

from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord
from skdpsynth.privacy._noise import NoiseSource

__all__ = [
    "laplace_mechanism",
    "geometric_mechanism",
    "geometric_variance",
    "gaussian_mechanism",
    "discrete_gaussian_mechanism",
    "exponential_mechanism",
    "exponential_mechanism_zcdp",
    "stability_histogram",
    "dp_count",
    "gaussian_sigma",
    "stability_threshold",
]

#: rounding to the public grid widens the sensitivity by at most this fraction
_GRID_SLACK = 1e-3


def _check_positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}.")


def _grid(sensitivity: float, inflation: float) -> float:
    """A power of two ``g`` with ``inflation * g <= _GRID_SLACK * sensitivity`` (public: from parameters only)."""
    return 2.0 ** math.floor(math.log2(_GRID_SLACK * sensitivity / max(inflation, 1.0)))


def laplace_mechanism(
    values, *, sensitivity: float, epsilon: float, noise: NoiseSource, accountant: BudgetAccountant, target: str,
) -> np.ndarray:
    """Laplace mechanism on a public grid; epsilon-DP.

    ``values`` are rounded to a public grid ``g`` (a power of two with
    ``d g <= 0.001 sensitivity``), and discrete Laplace noise of scale
    ``(sensitivity + d g) / (g epsilon)`` grid units is added, so the output is a
    multiple of ``g`` (never a raw floating-point draw).

    Parameters
    ----------
    values : array-like
        The exact statistic (``d`` numbers).
    sensitivity : float
        Its L1 sensitivity under add/remove-one-person.
    epsilon : float
        Cost, charged as a pure record.
    noise : NoiseSource
        Where the noise comes from.
    accountant : BudgetAccountant
        Where the cost is charged.
    target : str
        What is measured (goes in the budget log).

    Returns
    -------
    numpy.ndarray of float
    """
    _check_positive("sensitivity", sensitivity)
    _check_positive("epsilon", epsilon)
    values = np.asarray(values, dtype=float)
    g = _grid(sensitivity, values.size)
    widened = sensitivity + values.size * g
    accountant.spend(BudgetRecord("laplace (discrete, on a grid)", target, "pure", epsilon=epsilon,
                                  sensitivity=sensitivity, noise_scale=widened / epsilon, details={"grid": g}))
    k = np.round(values / g) + noise.discrete_laplace(widened / (g * epsilon), values.shape)
    return k * g


def geometric_mechanism(
    counts, *, sensitivity: float, epsilon: float, noise: NoiseSource, accountant: BudgetAccountant, target: str,
) -> np.ndarray:
    """Two-sided geometric (discrete Laplace) mechanism for integer counts; epsilon-DP.

    Adds integer noise with ``P(k) ∝ exp(-epsilon |k| / sensitivity)`` (Ghosh,
    Roughgarden & Sundararajan 2009).

    Parameters
    ----------
    counts : array-like of int
        Exact counts.
    sensitivity : float
        L1 sensitivity under add/remove-one-person; a histogram in which each
        person falls in one cell has sensitivity 1.
    epsilon : float
        Cost (pure).
    noise, accountant, target
        As for :func:`laplace_mechanism`.

    Returns
    -------
    numpy.ndarray of int64
    """
    _check_positive("sensitivity", sensitivity)
    _check_positive("epsilon", epsilon)
    accountant.spend(BudgetRecord("geometric", target, "pure", epsilon=epsilon, sensitivity=sensitivity,
                                  noise_scale=sensitivity / epsilon))
    counts = np.asarray(counts).astype(np.int64)
    return counts + noise.discrete_laplace(sensitivity / epsilon, counts.shape)


def gaussian_sigma(l2_sensitivity: float, rho: float) -> float:
    """Noise standard deviation giving rho-zCDP: ``sigma = l2_sensitivity / sqrt(2 rho)``.

    Parameters
    ----------
    l2_sensitivity : float
        Largest L2 change of the statistic when one person is added or removed.
    rho : float
        zCDP budget, > 0.

    Returns
    -------
    float
        The standard deviation of the (discrete) Gaussian noise (a public quantity: it depends on no data).
    """
    _check_positive("rho", rho)
    return l2_sensitivity / math.sqrt(2.0 * rho)


def geometric_variance(sensitivity: float, epsilon: float) -> float:
    """Variance of the two-sided geometric noise giving epsilon-DP at L1 ``sensitivity``.

    Parameters
    ----------
    sensitivity : float
        Largest L1 change of the counts when one person is added or removed.
    epsilon : float
        Pure-DP budget, > 0.

    Returns
    -------
    float
        ``2 alpha / (1 - alpha)^2`` with ``alpha = exp(-epsilon / sensitivity)``: the variance of the noise
        :func:`geometric_mechanism` adds at these settings (a public quantity: it depends on no data).
    """
    _check_positive("epsilon", epsilon)
    alpha = math.exp(-epsilon / sensitivity)
    return 2.0 * alpha / (1.0 - alpha) ** 2


def discrete_gaussian_mechanism(
    counts, *, l2_sensitivity: float, rho: float, noise: NoiseSource, accountant: BudgetAccountant, target: str,
) -> np.ndarray:
    """Discrete Gaussian mechanism for integer statistics; rho-zCDP.

    Adds integer noise ``N_Z(0, sigma^2)``, ``sigma = l2_sensitivity / sqrt(2
    rho)``, which is rho-zCDP for an integer-valued query of that L2 sensitivity
    under add/remove-one-person (Canonne, Kamath & Steinke 2020, Thm. 4).

    Parameters
    ----------
    counts : array-like of int
        The exact integer statistic.
    l2_sensitivity : float
        Its L2 sensitivity.
    rho : float
        Cost, charged as a zCDP record.
    noise, accountant, target
        As for :func:`laplace_mechanism`.

    Returns
    -------
    numpy.ndarray of int64
    """
    _check_positive("l2_sensitivity", l2_sensitivity)
    sigma = gaussian_sigma(l2_sensitivity, rho)
    accountant.spend(BudgetRecord("discrete gaussian", target, "zcdp", rho=rho, sensitivity=l2_sensitivity,
                                  noise_scale=sigma))
    counts = np.asarray(counts).astype(np.int64)
    return counts + noise.discrete_gaussian(sigma, counts.shape)


def gaussian_mechanism(
    values, *, l2_sensitivity: float, rho: float, noise: NoiseSource, accountant: BudgetAccountant, target: str,
) -> np.ndarray:
    """Gaussian mechanism for real statistics, on a public grid; rho-zCDP.

    ``values`` are rounded to a public grid ``g`` (``sqrt(d) g <= 0.001
    l2_sensitivity``) and discrete Gaussian noise is added in grid units with
    ``sigma = (l2_sensitivity + sqrt(d) g) / sqrt(2 rho)`` (Canonne, Kamath &
    Steinke 2020): rho-zCDP, and the output is a multiple of ``g``.

    Parameters
    ----------
    values : array-like
        The exact statistic (``d`` numbers).
    l2_sensitivity : float
        Its L2 sensitivity under add/remove-one-person.
    rho : float
        Cost, charged as a zCDP record.
    noise, accountant, target
        As for :func:`laplace_mechanism`.

    Returns
    -------
    numpy.ndarray of float
    """
    _check_positive("l2_sensitivity", l2_sensitivity)
    values = np.asarray(values, dtype=float)
    g = _grid(l2_sensitivity, math.sqrt(values.size))
    widened = l2_sensitivity + math.sqrt(values.size) * g
    sigma = gaussian_sigma(widened, rho)
    accountant.spend(BudgetRecord("gaussian (discrete, on a grid)", target, "zcdp", rho=rho,
                                  sensitivity=l2_sensitivity, noise_scale=sigma, details={"grid": g}))
    k = np.round(values / g) + noise.discrete_gaussian(sigma / g, values.shape)
    return k * g


def exponential_mechanism(
    utilities, *, sensitivity: float, epsilon: float, noise: NoiseSource, accountant: BudgetAccountant,
    target: str, monotonic: bool = False,
) -> int:
    """Exponential mechanism: pick ``i`` with probability ``∝ exp(eps u_i / (2 s))``; epsilon-DP.

    Gumbel-max (McSherry & Talwar 2007) with Gumbel draws from ``noise``; only
    the chosen index is released.

    Parameters
    ----------
    utilities : array-like of float
        Utility of each candidate (the candidates themselves must be public).
    sensitivity : float
        Sensitivity of every utility under add/remove-one-person.
    epsilon : float
        Cost (pure).
    monotonic : bool, default=False
        When utilities all move in the same direction between neighbours the
        factor 2 can be dropped (e.g. counts).
    noise, accountant, target
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
    return _gumbel_argmax(epsilon * np.asarray(utilities, dtype=float) / (factor * sensitivity), noise)


def exponential_mechanism_zcdp(
    utilities, *, sensitivity: float, rho: float, noise: NoiseSource, accountant: BudgetAccountant, target: str,
) -> int:
    """Exponential mechanism charged in zCDP: epsilon ``sqrt(8 rho)``, which is rho-zCDP.

    An epsilon-DP exponential mechanism is ``epsilon^2 / 8``-zCDP (Cesar &
    Rogers 2021), the accounting MST and AIM use for their selection steps.

    Parameters
    ----------
    utilities : array-like of float
        Utility of each (public) candidate.
    sensitivity : float
        Sensitivity of every utility under add/remove-one-person.
    rho : float
        Cost, charged as a zCDP record.
    noise, accountant, target
        As for :func:`laplace_mechanism`.

    Returns
    -------
    int
    """
    _check_positive("sensitivity", sensitivity)
    _check_positive("rho", rho)
    epsilon = math.sqrt(8.0 * rho)
    accountant.spend(BudgetRecord("exponential (zCDP)", target, "zcdp", rho=rho, sensitivity=sensitivity,
                                  noise_scale=2.0 * sensitivity / epsilon))
    return _gumbel_argmax(epsilon * np.asarray(utilities, dtype=float) / (2.0 * sensitivity), noise)


def _gumbel_argmax(logits: np.ndarray, noise: NoiseSource) -> int:
    return int(np.argmax(logits + noise.gumbel(logits.shape)))


def stability_threshold(contribution_bound: int, epsilon: float, delta: float) -> int:
    """Release threshold of :func:`stability_histogram` (an integer count).

    A key that only one person holds has count 1; with discrete Laplace noise
    of scale ``t = k / epsilon`` (``alpha = exp(-1/t)``) it reaches ``1 + m``
    with probability ``alpha^m / (1 + alpha) <= delta / k`` when ``m >= t
    log(k / delta)``. The person holds at most ``k`` keys, so the chance that
    any of them is released is at most ``delta``.
    """
    t = contribution_bound / epsilon
    return 1 + math.ceil(t * math.log(contribution_bound / delta))


def stability_histogram(
    counts, *, contribution_bound: int, epsilon: float, delta: float, noise: NoiseSource,
    accountant: BudgetAccountant, target: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Release the keys of a histogram whose key set is private; (epsilon, delta)-DP.

    Stability-based histogram (Korolova et al. 2009; Wilson et al. 2020). The
    caller bounds each person's contribution to at most ``contribution_bound``
    distinct keys, each counted once, and passes exactly the keys that were
    counted (``counts > 0`` after bounding: a key beyond a person's bound must
    not be a candidate). Each count gets discrete Laplace noise of scale
    ``k / epsilon`` (L1 sensitivity ``k`` under add/remove-one-person) and a key
    is released when its noisy count reaches :func:`stability_threshold`.

    Parameters
    ----------
    counts : array-like of int
        People per key after contribution bounding, all > 0.
    contribution_bound : int
        Most keys one person counts towards.
    epsilon, delta : float
        Cost, charged as one approximate-DP record.
    noise, accountant, target
        As for :func:`laplace_mechanism`.

    Returns
    -------
    released : ndarray of bool
        Which keys are released.
    noisy : ndarray of int64
        Their noisy counts (meaningful where released).
    """
    k = int(contribution_bound)
    if k < 1:
        raise ValueError(f"contribution_bound must be a positive integer, got {contribution_bound!r}.")
    _check_positive("epsilon", epsilon)
    _check_positive("delta", delta)
    counts = np.asarray(counts).astype(np.int64)
    if np.any(counts <= 0):
        raise ValueError("stability_histogram takes only keys that were counted (every count > 0).")
    threshold = stability_threshold(k, epsilon, delta)
    accountant.spend(BudgetRecord("stability histogram", target, "approx", epsilon=epsilon, delta=delta,
                                  sensitivity=float(k), noise_scale=k / epsilon,
                                  details={"threshold": threshold, "contribution_bound": k}))
    noisy = counts + noise.discrete_laplace(k / epsilon, counts.shape)
    return noisy >= threshold, noisy


def dp_count(
    n: int, *, epsilon: float, noise: NoiseSource, accountant: BudgetAccountant, target: str = "number of people",
) -> int:
    """A noisy count of people (sensitivity 1 under add/remove-one-person); epsilon-DP.

    Parameters
    ----------
    n : int
        The exact count.
    epsilon : float
        Cost (pure).
    noise, accountant, target
        As for :func:`laplace_mechanism`.

    Returns
    -------
    int
        ``n`` plus discrete Laplace noise (may be below 1; clip as post-processing).
    """
    return int(geometric_mechanism([int(n)], sensitivity=1.0, epsilon=epsilon, noise=noise,
                                   accountant=accountant, target=target)[0])
