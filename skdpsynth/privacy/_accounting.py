"""Budget records, the per-fit accountant and composition.

Neighbouring relation used throughout skdpsynth: two datasets are neighbours when
one is obtained from the other by **adding or removing all records of one person**
(one row of a table, one learner's whole sequence). Every mechanism states its
sensitivity under this relation.

Composition. A fit spends its budget through records of three kinds:

* ``"pure"``   -- (epsilon, 0)-DP (Laplace, geometric, exponential mechanisms);
* ``"approx"`` -- (epsilon, delta)-DP (thresholding, DP-SGD after its own accounting);
* ``"zcdp"``   -- rho-zCDP (Gaussian mechanism).

Within one cohort they compose sequentially: rho adds up and is converted once to
(epsilon, delta_zcdp) with the tight conversion of Canonne, Kamath & Steinke
(2020); pure and approximate records add up by basic composition. Across cohorts
(successive ``partial_fit`` calls) the spend is the maximum (``"parallel"``: the
cohorts are different people) or the sum (``"sequential"``) of the cohorts' spends.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.optimize import brentq

from skdpsynth.exceptions import PrivacyBudgetError

__all__ = [
    "BudgetRecord",
    "PrivacySpent",
    "BudgetAccountant",
    "zcdp_to_approx_dp",
    "approx_dp_to_zcdp",
    "compose",
    "check_budget",
]

NEIGHBOURING = "add/remove one person (all of their records)"
_TOL = 1e-9


@lru_cache(maxsize=4096)  # pure function of two floats; fits convert the same totals again and again
def zcdp_to_approx_dp(rho: float, delta: float) -> float:
    """Smallest epsilon such that rho-zCDP implies (epsilon, delta)-DP.

    Uses the conversion of Canonne, Kamath & Steinke (2020, Prop. 12):
    ``eps = inf_{a>1} rho*a + (log(1/(a*delta)) + (a-1)*log(1-1/a)) / (a-1)``,
    which is tighter than ``rho + 2*sqrt(rho*log(1/delta))``.

    Parameters
    ----------
    rho : float
        zCDP parameter, >= 0.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    float
    """
    if rho <= 0:
        return 0.0
    if not 0 < delta < 1:
        raise PrivacyBudgetError(f"delta must be in (0, 1) to convert zCDP, got {delta}.")
    alphas = np.concatenate([1 + np.logspace(-6, 0, 400), np.linspace(2, 2000, 4000)])
    eps = rho * alphas + (np.log(1 / (alphas * delta)) + (alphas - 1) * np.log1p(-1 / alphas)) / (alphas - 1)
    simple = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    return float(max(0.0, min(eps.min(), simple)))


@lru_cache(maxsize=1024)
def approx_dp_to_zcdp(epsilon: float, delta: float) -> float:
    """Largest rho whose conversion (:func:`zcdp_to_approx_dp`) stays within (epsilon, delta)."""
    if epsilon <= 0:
        return 0.0
    hi = epsilon  # rho <= eps always suffices as an upper bracket: conversion >= rho
    f = lambda r: zcdp_to_approx_dp(r, delta) - epsilon  # noqa: E731
    if f(hi) <= 0:
        return hi
    rho = brentq(f, 1e-12, hi, xtol=1e-14)
    # step down until the conversion is within budget (brentq's root may sit a hair above)
    while zcdp_to_approx_dp(rho, delta) > epsilon:
        rho *= 1 - 1e-9
    return float(rho)


def check_budget(epsilon: float | None, delta: float, *, name: str = "epsilon") -> None:
    """Validate a privacy request; raises :class:`PrivacyBudgetError` before any work."""
    if epsilon is None:
        return
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating, np.integer)):
        raise PrivacyBudgetError(f"{name} must be a positive number or None (non-private), got {epsilon!r}.")
    if not math.isfinite(epsilon) or epsilon <= 0:
        raise PrivacyBudgetError(f"{name} must be a positive finite number, got {epsilon!r}.")
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating, np.integer)) or not 0 <= delta < 1:
        raise PrivacyBudgetError(f"delta must be in [0, 1), got {delta!r}.")


@dataclass(frozen=True)
class BudgetRecord:
    """One use of the private data, as charged to the budget.

    Parameters
    ----------
    mechanism : str
        e.g. ``"gaussian"``, ``"geometric"``, ``"exponential"``, ``"dp-sgd"``,
        ``"exact (non-private)"``.
    target : str
        What was measured, e.g. ``"histogram of column 'age'"``.
    kind : {"pure", "approx", "zcdp", "none"}
        The guarantee of this record (``"none"``: computed without DP).
    epsilon, delta, rho : float
        Its cost (``rho`` for zCDP records; epsilon infinite for ``"none"``).
    sensitivity : float, optional
        Sensitivity under :data:`NEIGHBOURING` (L1 for Laplace / geometric, L2
        for Gaussian, utility sensitivity for the exponential mechanism).
    noise_scale : float, optional
        Laplace / geometric scale or Gaussian standard deviation.
    cohort : int
        Which ``fit`` / ``partial_fit`` call (0 = ``fit``).
    details : dict
        Extra facts, e.g. DP-SGD ``noise_multiplier``, ``steps``.
    noise : {"secure", "reproducible"}
        Where the noise came from: fresh OS entropy, or derived from a seed
        (``reproducible_noise=True``: not publishable, whoever knows the seed
        can remove the noise).
    """

    mechanism: str
    target: str
    kind: str
    epsilon: float = 0.0
    delta: float = 0.0
    rho: float = 0.0
    sensitivity: float | None = None
    noise_scale: float | None = None
    cohort: int = 0
    neighbouring: str = NEIGHBOURING
    details: dict = field(default_factory=dict)
    noise: str = "secure"

    def __post_init__(self) -> None:
        if self.kind not in ("pure", "approx", "zcdp", "none"):
            raise ValueError(f"unknown record kind {self.kind!r}.")
        if self.noise not in ("secure", "reproducible"):
            raise ValueError(f"unknown noise source {self.noise!r}.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)


@dataclass(frozen=True)
class PrivacySpent:
    """What a fitted synthesizer has spent, derived from its budget log.

    Attributes
    ----------
    epsilon, delta : float
        Overall guarantee across all cohorts under ``composition``
        (``inf`` epsilon when anything was computed without DP).
    per_cohort : tuple of (epsilon, delta)
        The guarantee of each ``fit`` / ``partial_fit`` call.
    composition : str
        ``"parallel"`` or ``"sequential"`` across cohorts.
    is_private : bool
        False when any record is non-private.
    neighbouring : str
        The neighbouring relation.
    reproducible_noise : bool
        True when any noise was derived from a seed (``reproducible_noise=True``).
    publishable : bool
        ``is_private and not reproducible_noise``: the guarantee holds against
        someone who holds the release, the estimator and its parameters.
    """

    epsilon: float
    delta: float
    per_cohort: tuple[tuple[float, float], ...] = ()
    composition: str = "parallel"
    is_private: bool = True
    neighbouring: str = NEIGHBOURING
    reproducible_noise: bool = False

    @property
    def publishable(self) -> bool:
        """Whether this guarantee holds for a published release (private, secure noise)."""
        return self.is_private and not self.reproducible_noise

    def __iter__(self):  # allows ``eps, delta = est.privacy_spent_``
        return iter((self.epsilon, self.delta))


def _compose_cohort(records: Sequence[BudgetRecord], delta_zcdp: float) -> tuple[float, float]:
    if any(r.kind == "none" for r in records):
        return math.inf, 0.0
    eps = sum(r.epsilon for r in records if r.kind in ("pure", "approx"))
    delta = sum(r.delta for r in records if r.kind in ("pure", "approx"))
    rho = sum(r.rho for r in records if r.kind == "zcdp")
    if rho > 0:
        eps += zcdp_to_approx_dp(rho, delta_zcdp)
        delta += delta_zcdp
    return eps, delta


def compose(
    records: Iterable[BudgetRecord],
    *,
    delta_zcdp: dict[int, float] | float = 0.0,
    composition: str = "parallel",
) -> PrivacySpent:
    """Compose a budget log into one :class:`PrivacySpent`.

    Parameters
    ----------
    records : iterable of BudgetRecord
        The log.
    delta_zcdp : float or dict of int to float
        The delta at which each cohort's zCDP part is converted (the share of
        that cohort's delta reserved for it).
    composition : {"parallel", "sequential"}
        Across cohorts.

    Returns
    -------
    PrivacySpent
    """
    records = list(records)
    cohorts = sorted({r.cohort for r in records})
    per = []
    for c in cohorts:
        dz = delta_zcdp.get(c, 0.0) if isinstance(delta_zcdp, dict) else delta_zcdp
        per.append(tuple(map(_tidy, _compose_cohort([r for r in records if r.cohort == c], dz))))
    if not per:
        return PrivacySpent(0.0, 0.0, (), composition, True)
    if composition == "parallel":
        eps, delta = max(p[0] for p in per), max(p[1] for p in per)
    elif composition == "sequential":
        eps, delta = sum(p[0] for p in per), sum(p[1] for p in per)
    else:
        raise ValueError(f"composition must be 'parallel' or 'sequential', got {composition!r}.")
    private = all(r.kind != "none" for r in records)
    reproducible = any(r.noise == "reproducible" for r in records)
    return PrivacySpent(_tidy(eps), _tidy(delta), tuple(per), composition, private,
                        reproducible_noise=reproducible)


def _tidy(value: float) -> float:
    """``value`` to 12 significant digits: the round trip epsilon -> rho -> epsilon of a zCDP budget leaves
    floating-point residue (epsilon 1 read back as 1.0000000000000007), far below any meaningful privacy
    difference; the records keep their exact costs."""
    return float(f"{float(value):.12g}") if math.isfinite(value) else float(value)


class BudgetAccountant:
    """Tracks one cohort's spend against its request and refuses to overspend.

    A synthesizer plans its whole spend up front with :meth:`require` (which
    raises :class:`PrivacyBudgetError` before any noise is drawn) and then
    charges each mechanism with :meth:`spend`, which checks again.

    Parameters
    ----------
    epsilon : float or None
        The request for this cohort; ``None`` means non-private (only
        ``kind="none"`` records are accepted).
    delta : float
        The request's delta.
    delta_zcdp : float, default=0.0
        Share of ``delta`` reserved for converting the zCDP part.
    cohort : int, default=0
        Index of the ``fit`` / ``partial_fit`` call.
    noise : {"secure", "reproducible"}, default="secure"
        Stamped on every record charged (see :class:`BudgetRecord`).

    The API is narrow: :meth:`require` (plan), :meth:`spend` (charge),
    :meth:`declare_nonprivate` (a computation without DP, recorded as such),
    :meth:`remaining_epsilon` / :meth:`remaining_rho` and :meth:`spent`.
    ``records`` is a read-only view of the log.
    """

    def __init__(self, epsilon: float | None, delta: float, *, delta_zcdp: float = 0.0, cohort: int = 0,
                 noise: str = "secure") -> None:
        check_budget(epsilon, delta)
        if delta_zcdp > delta + _TOL:
            raise PrivacyBudgetError(f"delta_zcdp={delta_zcdp} exceeds delta={delta}.")
        self.epsilon = epsilon
        self.delta = delta
        self.delta_zcdp = delta_zcdp
        self.cohort = cohort
        self.noise = noise
        self._records: list[BudgetRecord] = []

    @property
    def records(self) -> tuple[BudgetRecord, ...]:
        """The records charged so far (read-only)."""
        return tuple(self._records)

    @property
    def private(self) -> bool:
        """Whether this accountant enforces a DP budget."""
        return self.epsilon is not None

    def spent(self, extra: Sequence[BudgetRecord] = ()) -> tuple[float, float]:
        """(epsilon, delta) of the records so far, plus ``extra``."""
        return _compose_cohort([*self._records, *extra], self.delta_zcdp)

    def _fits(self, extra: Sequence[BudgetRecord]) -> tuple[bool, float, float]:
        # "none" records (a non-public schema) make the release non-private but do not use the DP budget
        eps, delta = _compose_cohort([r for r in [*self._records, *extra] if r.kind != "none"], self.delta_zcdp)
        if not self.private:
            return True, eps, delta
        return eps <= self.epsilon * (1 + _TOL) + _TOL and delta <= self.delta * (1 + _TOL) + 1e-15, eps, delta

    def require(self, planned: Sequence[BudgetRecord], what: str = "this fit") -> None:
        """Raise :class:`PrivacyBudgetError` if ``planned`` would not fit; spends nothing."""
        ok, eps, delta = self._fits(list(planned))
        if not ok:
            raise PrivacyBudgetError(
                f"{what} needs epsilon={eps:.6g}, delta={delta:.3g} but the budget is "
                f"epsilon={self.epsilon}, delta={self.delta}; raise the budget or lower the plan."
            )

    def spend(self, record: BudgetRecord) -> BudgetRecord:
        """Charge one record (raises before recording if it would overspend)."""
        if self.private and record.kind == "none":
            raise PrivacyBudgetError(f"non-private computation {record.target!r} under a DP budget.")
        # a copy stamped with this fit's cohort and noise source (details copied: the log must not change later)
        record = replace(record, cohort=self.cohort, noise=self.noise, details=dict(record.details))
        self.require([record], what=record.target)
        self._records.append(record)
        return record

    charge = spend

    def declare_nonprivate(self, target: str, mechanism: str = "exact (non-private)") -> BudgetRecord:
        """Record a computation made without DP (the release becomes non-private; no budget is used)."""
        record = BudgetRecord(mechanism, target, "none", epsilon=math.inf, cohort=self.cohort)
        self._records.append(record)
        return record

    def remaining_epsilon(self) -> float:
        """Epsilon left for pure-DP spending (request minus pure and approximate records so far)."""
        used = sum(r.epsilon for r in self._records if r.kind in ("pure", "approx"))
        return max(self.epsilon - used, 0.0)

    def remaining_delta(self) -> float:
        """Delta left for approximate-DP spending, once ``delta_zcdp`` is reserved for the zCDP part."""
        used = sum(r.delta for r in self._records if r.kind in ("pure", "approx"))
        return max(self.delta - self.delta_zcdp - used, 0.0)

    def spent_rho(self) -> float:
        """rho of the zCDP records so far."""
        return sum(r.rho for r in self._records if r.kind == "zcdp")

    def remaining_rho(self, reserve_epsilon: float = 0.0) -> float:
        """rho still available for zCDP charges, keeping ``reserve_epsilon`` for later pure charges.

        Accounts for everything already charged: pure and approximate records
        reduce the epsilon left, and rho already spent is subtracted.
        """
        used = sum(r.epsilon for r in self._records if r.kind in ("pure", "approx"))
        eps = self.epsilon - used - reserve_epsilon
        if eps <= 0:
            return 0.0
        return max(approx_dp_to_zcdp(eps, self.delta_zcdp) - self.spent_rho(), 0.0)
