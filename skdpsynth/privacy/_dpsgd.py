"""DP-SGD privacy accounting: RDP, tight PLD epsilon, mu-GDP and its regret.

DP-SGD (Abadi et al. 2016) with Poisson sampling at rate ``q``, per-example
clipping to L2 norm ``C`` and Gaussian noise of standard deviation
``noise_multiplier * C`` is a composition of ``steps`` Poisson-subsampled Gaussian
mechanisms. Neighbouring relation: add or remove one person (one example; the
clipping bounds that person's L2 contribution to every noisy sum by ``C``).

This module reports the same mechanism four ways (as papers/caps.md, Table 1):

* ``epsilon_rdp`` -- Renyi-DP accounting (Mironov 2017) as in Opacus' ``RDPAccountant``;
  what the noise is calibrated with (:func:`calibrate_noise_multiplier`).
* ``epsilon_pld`` -- the tight numerical epsilon from Google's ``dp_accounting``
  privacy-loss-distribution (PLD) accountant (pessimistic discretisation, so an
  upper bound up to the grid).
* ``mu`` -- the mu of the mu-GDP (Gaussian DP, Dong et al. 2022) tradeoff curve that
  lies below the numerically computed one (``gdpnum``, Gomez et al. 2025).
* ``regret`` -- Kaissis et al.'s (2024) regret Delta: how far that Gaussian curve is
  from the mechanism's true tradeoff curve (< 1e-2 is "well captured").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from scipy.optimize import brentq
from scipy.stats import norm

from skdpsynth.privacy._accounting import BudgetRecord
from skdpsynth.utils._optional import import_optional

__all__ = [
    "DPSGDPlan",
    "plan_dpsgd",
    "dpsgd_record",
    "dp_optimizer",
    "poisson_mask",
    "dpsgd_privacy_report",
    "calibrate_noise_multiplier",
    "gdp_delta",
    "gdp_epsilon",
    "dpsgd_accounting_table",
    "rdp_epsilon",
    "pld_epsilon",
]


#: Renyi orders: Opacus' defaults extended to large orders (valid for every order; tighter for heavy noise)
RDP_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)) + [64, 80, 96, 128, 160, 192, 256, 320,
                                                                           384, 512, 768, 1024]


def _check_dpsgd(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> None:
    if not (isinstance(noise_multiplier, (int, float)) and noise_multiplier > 0 and math.isfinite(noise_multiplier)):
        raise ValueError(f"noise_multiplier must be a positive finite number, got {noise_multiplier!r}.")
    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}.")
    if int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps!r}.")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")


def rdp_epsilon(*, noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """Epsilon of DP-SGD by Opacus' RDP accountant (orders :data:`RDP_ORDERS`).

    Parameters
    ----------
    noise_multiplier, sample_rate, steps, delta
        As in :func:`dpsgd_privacy_report`.

    Returns
    -------
    float
    """
    RDPAccountant = import_optional("opacus.accountants", "DP-SGD accounting").RDPAccountant

    _check_dpsgd(noise_multiplier, sample_rate, steps, delta)
    if steps == 0:
        return 0.0
    acc = RDPAccountant()
    acc.history = [(float(noise_multiplier), float(sample_rate), int(steps))]
    return float(acc.get_epsilon(delta=delta, alphas=RDP_ORDERS))


def _pld(noise_multiplier: float, sample_rate: float, steps: int, grid_step: float):
    pld = import_optional("dp_accounting.pld.privacy_loss_distribution", "DP-SGD accounting")

    return pld.from_gaussian_mechanism(
        standard_deviation=float(noise_multiplier), sampling_prob=float(sample_rate), use_connect_dots=True,
        value_discretization_interval=grid_step, pessimistic_estimate=True,
    ).self_compose(int(steps))


def pld_epsilon(*, noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                grid_step: float = 1e-4) -> float:
    """Tight numerical epsilon of DP-SGD (``dp_accounting`` PLD, add/remove neighbours).

    Parameters
    ----------
    noise_multiplier, sample_rate, steps, delta
        As in :func:`dpsgd_privacy_report`.
    grid_step : float, default=1e-4
        Discretisation of the privacy loss (pessimistic rounding).

    Returns
    -------
    float
    """
    _check_dpsgd(noise_multiplier, sample_rate, steps, delta)
    if steps == 0:
        return 0.0
    return float(_pld(noise_multiplier, sample_rate, steps, grid_step).get_epsilon_for_delta(delta))


def gdp_delta(mu: float, epsilon: float) -> float:
    """delta(epsilon) of a mu-GDP mechanism (Dong, Roth & Su 2022, Corollary 2.13)."""
    if mu <= 0:
        return 0.0
    return float(norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2))


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon such that mu-GDP implies (epsilon, delta)-DP.

    Parameters
    ----------
    mu : float
        GDP parameter (>= 0).
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    float
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    if mu <= 0 or gdp_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gdp_delta(mu, hi) > delta:
        hi *= 2
    return float(brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, hi, xtol=1e-12))


def dpsgd_privacy_report(*, noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                         grid_step: float = 1e-4) -> dict[str, float]:
    """Privacy of DP-SGD under four accountants (the CAPS paper's Table 1 columns).

    Neighbouring relation: add or remove one person (one training example;
    per-example clipping bounds its influence on each noisy gradient sum).

    Parameters
    ----------
    noise_multiplier : float
        Gaussian noise standard deviation divided by the clipping norm.
    sample_rate : float
        Poisson sampling probability of each example per step.
    steps : int
        Number of noisy (private) steps.
    delta : float
        The delta at which epsilons are reported.
    grid_step : float, default=1e-4
        PLD discretisation interval (for ``epsilon_pld``, ``mu`` and ``regret``).

    Returns
    -------
    dict
        ``epsilon_rdp`` (Opacus RDP accountant), ``epsilon_pld`` (tight numerical,
        ``dp_accounting``), ``mu`` (mu-GDP, pessimistic, ``gdpnum``), ``regret``
        (Kaissis et al.'s Delta for that mu), ``epsilon_gdp`` (epsilon implied by
        mu-GDP at ``delta``), and the inputs.

    Examples
    --------
    >>> r = dpsgd_privacy_report(noise_multiplier=9.4, sample_rate=0.328, steps=2000, delta=1e-5)
    >>> round(r["mu"], 2)
    1.57
    """
    PLDConverter = import_optional("gdpnum", "DP-SGD accounting").PLDConverter

    _check_dpsgd(noise_multiplier, sample_rate, steps, delta)
    out = {"noise_multiplier": float(noise_multiplier), "sample_rate": float(sample_rate), "steps": int(steps),
           "delta": float(delta)}
    if steps == 0:
        return {**out, "epsilon_rdp": 0.0, "epsilon_pld": 0.0, "mu": 0.0, "regret": 0.0, "epsilon_gdp": 0.0}
    pld = _pld(noise_multiplier, sample_rate, steps, grid_step)
    mu, regret = PLDConverter(pld).get_mu_and_regret()
    return {
        **out,
        "epsilon_rdp": rdp_epsilon(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                                   delta=delta),
        "epsilon_pld": float(pld.get_epsilon_for_delta(delta)),
        "mu": float(mu),
        "regret": float(regret),
        "epsilon_gdp": gdp_epsilon(float(mu), delta),
    }


def _calibrated(epsilon: float, delta: float, sample_rate: float, steps: int,
                epsilon_tolerance: float) -> tuple[float, float]:
    """Validated calibration: (noise multiplier, its RDP epsilon)."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}.")
    _check_dpsgd(1.0, sample_rate, steps, delta)
    if steps < 1:
        raise ValueError("steps must be >= 1 to calibrate a noise multiplier.")
    return _calibrate_rdp(float(epsilon), float(delta), float(sample_rate), int(steps), float(epsilon_tolerance))


@lru_cache(maxsize=256)
def _calibrate_rdp(epsilon: float, delta: float, sample_rate: float, steps: int,
                   epsilon_tolerance: float) -> tuple[float, float]:
    """Opacus' binary search over :data:`RDP_ORDERS`, and the RDP epsilon it reaches.

    A pure function of public (or already DP) settings, cached: refits with the
    same settings skip the search.
    """
    get_noise_multiplier = import_optional("opacus.accountants.utils", "DP-SGD accounting").get_noise_multiplier

    sigma = float(get_noise_multiplier(target_epsilon=epsilon, target_delta=delta, sample_rate=sample_rate,
                                       steps=steps, accountant="rdp", epsilon_tolerance=epsilon_tolerance,
                                       alphas=RDP_ORDERS))
    eps_rdp = rdp_epsilon(noise_multiplier=sigma, sample_rate=sample_rate, steps=steps, delta=delta)
    if eps_rdp > epsilon:  # pragma: no cover - get_noise_multiplier guarantees this
        raise RuntimeError(f"calibrated sigma={sigma} gives RDP epsilon {eps_rdp} > {epsilon}.")
    return sigma, eps_rdp


def calibrate_noise_multiplier(*, epsilon: float, delta: float, sample_rate: float, steps: int,
                               epsilon_tolerance: float = 0.01, verify_pld: bool = False,
                               grid_step: float = 1e-4) -> float:
    """Smallest noise multiplier (to ``epsilon_tolerance``) whose RDP epsilon is <= ``epsilon``.

    Uses Opacus' ``get_noise_multiplier`` with the RDP accountant over
    :data:`RDP_ORDERS` (binary search; the returned sigma's RDP epsilon is at most
    ``epsilon``).

    Parameters
    ----------
    epsilon, delta : float
        Target guarantee of the whole DP-SGD run.
    sample_rate : float
        Poisson sampling rate.
    steps : int
        Number of private steps.
    epsilon_tolerance : float, default=0.01
        Precision of the search (the RDP epsilon lies in ``[epsilon - tol, epsilon]``).
    verify_pld : bool, default=False
        Also check that the tight PLD epsilon is within the target (it always is
        when RDP is; raises ``RuntimeError`` otherwise).
    grid_step : float, default=1e-4
        PLD discretisation for ``verify_pld``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        When no noise multiplier up to 1e6 reaches the target.
    """
    sigma, _ = _calibrated(epsilon, delta, sample_rate, steps, epsilon_tolerance)
    if verify_pld:
        eps_pld = pld_epsilon(noise_multiplier=sigma, sample_rate=sample_rate, steps=steps, delta=delta,
                              grid_step=grid_step)
        if eps_pld > epsilon * (1 + 1e-9):
            raise RuntimeError(f"calibrated sigma={sigma}: PLD epsilon {eps_pld} exceeds the target {epsilon}.")
    return sigma


def dpsgd_accounting_table(rows: Iterable[Mapping[str, Any]], *, digits: int = 2) -> str:
    """Render accounting reports as a markdown table in the form of the CAPS paper's Table 1.

    Parameters
    ----------
    rows : iterable of mapping
        Outputs of :func:`dpsgd_privacy_report`.
    digits : int, default=2
        Decimals of the epsilons and mu.

    Returns
    -------
    str
        Columns: epsilon (RDP), epsilon (PLD), mu, Delta (regret), and the DP-SGD
        settings (noise multiplier, sample rate, steps, delta).
    """
    lines = ["| ε (RDP) | ε (PLD) | μ | Δ (regret) | noise multiplier | sample rate | steps | δ |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['epsilon_rdp']:.{digits}f} | {r['epsilon_pld']:.{digits}f} | {r['mu']:.{digits}f} | "
            f"{r['regret'] * 100:.2f}·10⁻² | {r['noise_multiplier']:.4g} | {r['sample_rate']:.4g} | "
            f"{int(r['steps'])} | {r['delta']:.3g} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class DPSGDPlan:
    """A calibrated DP-SGD run: the one path CAPS, DP-CTGAN and PATE-GAN's student share.

    Attributes
    ----------
    noise_multiplier : float
        Noise standard deviation over ``max_grad_norm``.
    sample_rate : float
        Poisson sampling rate (from a public or DP-estimated cohort size, never the exact n).
    steps : int
        Private steps.
    max_grad_norm : float
        Per-example clipping norm (the L2 sensitivity of each noisy sum).
    epsilon, delta : float
        The RDP guarantee of the run (``epsilon`` at most the target).
    """

    noise_multiplier: float
    sample_rate: float
    steps: int
    max_grad_norm: float
    epsilon: float
    delta: float


def plan_dpsgd(*, epsilon: float, delta: float, sample_rate: float, steps: int, max_grad_norm: float) -> DPSGDPlan:
    """Calibrate DP-SGD to (epsilon, delta) by RDP (:func:`calibrate_noise_multiplier`).

    Neighbouring relation: add/remove one person (one example); clipping bounds
    that person's L2 contribution to every noisy gradient sum by
    ``max_grad_norm``.

    Parameters
    ----------
    epsilon, delta : float
        Budget of the whole run (``delta > 0``).
    sample_rate : float
        Poisson sampling rate, from a public size or a DP count (never the exact n).
    steps : int
        Private steps (>= 1), likewise public or from a DP count.
    max_grad_norm : float
        Per-example clipping norm.

    Returns
    -------
    DPSGDPlan
        Its ``epsilon`` is the RDP epsilon reached (at most the target).
    """
    if not (max_grad_norm > 0 and math.isfinite(max_grad_norm)):
        raise ValueError(f"max_grad_norm must be a positive finite number, got {max_grad_norm!r}.")
    sigma, eps = _calibrated(epsilon, delta, sample_rate, steps, 0.01)
    return DPSGDPlan(float(sigma), float(sample_rate), int(steps), float(max_grad_norm), min(eps, epsilon), delta)


def dpsgd_record(plan: DPSGDPlan, target: str) -> BudgetRecord:
    """The budget record of a planned DP-SGD run (charge it before the first step)."""
    return BudgetRecord(
        "dp-sgd", target, "approx", epsilon=plan.epsilon, delta=plan.delta, sensitivity=plan.max_grad_norm,
        noise_scale=plan.noise_multiplier * plan.max_grad_norm,
        details={"noise_multiplier": plan.noise_multiplier, "sample_rate": plan.sample_rate, "steps": plan.steps,
                 "max_grad_norm": plan.max_grad_norm, "accountant": "rdp (opacus)", "poisson_sampling": True},
    )


def dp_optimizer(optimizer, plan: DPSGDPlan, generator, *, expected_batch_size: int, loss_reduction: str = "sum"):
    """Opacus' ``DPOptimizer`` for ``plan``, its Gaussian noise drawn from ``generator``.

    ``generator`` must come from :meth:`NoiseSource.torch_generator` (seeded
    from the fit's noise source, never stored), as must the Poisson batches
    (:func:`poisson_mask`): both are part of the mechanism. Opacus'
    ``secure_mode`` needs ``torchcsprng``, which has no build for current
    torch; the generator is therefore seeded from the OS's CSPRNG instead.
    """
    from opacus.optimizers import DPOptimizer

    return DPOptimizer(optimizer, noise_multiplier=plan.noise_multiplier, max_grad_norm=plan.max_grad_norm,
                       expected_batch_size=max(int(expected_batch_size), 1), loss_reduction=loss_reduction,
                       generator=generator)


def poisson_mask(n: int, sample_rate: float, generator):
    """One Poisson-sampled batch: a boolean torch mask over ``n`` examples, drawn from the noise ``generator``."""
    import torch

    return torch.rand(n, generator=generator) < sample_rate


class PoissonBatches:
    """A cohort's encoded rows, given out only as Poisson-sampled batches for per-sample-clipped DP-SGD steps.

    Made by :meth:`~skdpsynth.privacy.PrivateTable.dpsgd`, together with the optimizer that clips every
    example's gradient to ``max_grad_norm`` and adds the plan's Gaussian noise; the batches are drawn at the
    plan's sampling rate from the same secret generator. Neighbouring relation and sensitivity: as for
    :func:`plan_dpsgd` (one person is one example; clipping bounds their L2 contribution to each noisy sum).
    There is no length: the number of people is private.
    """

    def __init__(self, rows, sample_rate: float, generator) -> None:
        self.__rows = rows
        self._sample_rate = float(sample_rate)
        self._generator = generator

    def __reduce__(self):
        raise TypeError("the rows of a cohort are private and never pickled")

    def draw(self):
        """One Poisson-sampled batch (a torch tensor of encoded rows; its size is part of the mechanism)."""
        return self.__rows[poisson_mask(len(self.__rows), self._sample_rate, self._generator)]
