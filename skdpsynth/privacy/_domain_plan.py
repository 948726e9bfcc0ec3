"""The budget of the DP domain estimate: its parts, how they are charged, and its Gaussian stability histogram.

A domain estimate is a few measurements: a count of people, one histogram of
every column on the public binning, the keys of the categorical columns (and of
the integer columns, to recognise codes), and a check of the mass beyond the
estimated bounds. :func:`plan_domain` sizes them from public quantities only
(the budget, the number of columns of each kind) and picks how they are charged:

* ``"zcdp"`` -- when the model after the domain is charged in zCDP (its planned
  records include zCDP ones): every part is a zCDP record, so the domain's
  rho composes with the model's before the single conversion to (epsilon,
  delta). The domain gets exactly the rho that leaves the model what it would
  have after a pure ``epsilon_domain`` slice -- several times the rho that slice
  would buy on its own;
* ``"approx"`` -- otherwise: the count is a pure record, and the other parts
  either compose in zCDP among themselves and are charged as ONE (epsilon,
  delta) record (converted once), or are Laplace / geometric records, whichever
  gives the lower release thresholds (a public choice);
* ``"pure"`` -- ``delta = 0``: geometric noise only, no key discovery.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import erfc
from scipy.stats import norm

from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord, approx_dp_to_zcdp
from skdpsynth.privacy._mechanisms import discrete_gaussian_mechanism, geometric_mechanism, stability_histogram
from skdpsynth.privacy._mechanisms import stability_threshold as laplace_stability_threshold
from skdpsynth.privacy._noise import NoiseSource

__all__ = ["Part", "DomainPlan", "DomainRun", "plan_domain", "gaussian_stability_histogram",
           "gaussian_stability_threshold", "discrete_gaussian_tail"]

#: relative weight of each part in the split of the budget (times its number of columns)
WEIGHTS = {"bins": 1.0, "categories": 1.5, "codes": 0.5, "tail": 0.5}
#: share of the domain budget spent on the count of people (rho in zCDP mode, epsilon otherwise)
COUNT_SHARE = {"zcdp": 0.03, "approx": 0.15, "pure": 0.15}


def discrete_gaussian_tail(sigma: float, m: int) -> float:
    """An upper bound on ``P[X >= m]`` for ``X ~ N_Z(0, sigma^2)`` (exact sum for small sigma).

    For ``sigma >= 2`` the numerator is bounded by ``exp(-m^2 / 2 sigma^2)`` plus
    the Gaussian integral from ``m``, the normaliser from below by the full
    integral minus its peak (sums of a unimodal function).
    """
    if m <= 0:
        return 1.0
    if sigma < 2:
        xs = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61)
        w = np.exp(-(xs.astype(float) ** 2) / (2 * sigma**2))
        return float(w[xs >= m].sum() / w.sum())
    num = math.exp(-(m**2) / (2 * sigma**2)) + sigma * math.sqrt(math.pi / 2) * erfc(m / (sigma * math.sqrt(2)))
    return min(1.0, num / (sigma * math.sqrt(2 * math.pi) - 1))


def gaussian_stability_threshold(contribution_bound: int, sigma: float, delta: float) -> int:
    """Release threshold ``1 + m`` with ``k P[N_Z(0, sigma^2) >= m] <= delta`` (smallest such integer m)."""
    k = int(contribution_bound)
    lo, hi = 1, max(2, int(sigma * math.sqrt(2 * math.log(max(k, 1) / delta) + 2)) + 2)
    while k * discrete_gaussian_tail(sigma, hi) > delta:
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if k * discrete_gaussian_tail(sigma, mid) <= delta:
            hi = mid
        else:
            lo = mid + 1
    return 1 + lo


def gaussian_stability_histogram(
    counts, *, contribution_bound: int, rho: float, delta: float, noise: NoiseSource,
    accountant: BudgetAccountant, target: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Release the keys of a histogram whose key set is private, with discrete Gaussian noise.

    The zCDP counterpart of :func:`skdpsynth.privacy.stability_histogram`
    (Wilson et al. 2020; Wilkins, Kifer et al. 2024). The caller bounds each
    person to at most ``k = contribution_bound`` distinct keys, each counted
    once, and passes exactly the keys so counted (all counts > 0). Each count
    gets ``N_Z(0, sigma^2)`` noise, ``sigma = sqrt(k / (2 rho))``, and a key is
    released when its noisy count reaches ``1 + m``, ``m`` the smallest integer
    with ``k P[N_Z(0, sigma^2) >= m] <= delta``
    (:func:`gaussian_stability_threshold`).

    Privacy (add/remove one person). On the keys both neighbours hold, counts
    differ by at most 1 in at most ``k`` entries: L2 sensitivity ``sqrt(k)``, so
    the noisy counts are ``rho``-zCDP (Canonne, Kamath & Steinke 2020, Thm. 4),
    and thresholding is post-processing. The keys only the larger neighbour
    holds -- at most ``k``, each of count 1 -- are released with probability at
    most ``delta`` in all (union bound), and their noise is independent of the
    rest; conditioned on none being released, the output is the zCDP part. The
    release is therefore ``delta``-approximately ``rho``-zCDP (Bun & Steinke
    2016, Def. 8.1), which composes by adding rho and delta. It is charged as
    a zCDP record (``rho``, sensitivity ``sqrt(k)``) and an approximate record
    (``epsilon = 0``, ``delta``).

    Parameters
    ----------
    counts : array-like of int
        People per key after contribution bounding, all > 0.
    contribution_bound : int
        Most keys one person counts towards.
    rho : float
        zCDP cost of the counts.
    delta : float
        Probability budget of the threshold.
    noise, accountant, target
        As for :func:`skdpsynth.privacy.laplace_mechanism`.

    Returns
    -------
    released : ndarray of bool
    noisy : ndarray of int64
    """
    k = int(contribution_bound)
    if k < 1 or not (rho > 0 and 0 < delta < 1):
        raise ValueError(f"need contribution_bound >= 1, rho > 0 and 0 < delta < 1, got {k}, {rho}, {delta}.")
    counts = np.asarray(counts).astype(np.int64)
    if np.any(counts <= 0):
        raise ValueError("gaussian_stability_histogram takes only keys that were counted (every count > 0).")
    sigma = math.sqrt(k / (2 * rho))
    threshold = gaussian_stability_threshold(k, sigma, delta)
    details = {"threshold": threshold, "contribution_bound": k}
    records = [BudgetRecord("gaussian stability histogram", target, "zcdp", rho=rho, sensitivity=math.sqrt(k),
                            noise_scale=sigma, details=details),
               BudgetRecord("gaussian stability histogram (threshold)", target, "approx", epsilon=0.0, delta=delta,
                            sensitivity=math.sqrt(k), noise_scale=sigma, details=details)]
    accountant.require(records, what=target)
    for record in records:
        accountant.spend(record)
    noisy = counts + noise.discrete_gaussian(sigma, counts.shape)
    return noisy >= threshold, noisy


@dataclass(frozen=True)
class Part:
    """One measurement of the domain estimate, sized from public quantities.

    ``width`` is the number of columns a person touches (one cell each): the
    squared L2 sensitivity (Gaussian) or the L1 sensitivity (Laplace).
    ``cost`` is rho (Gaussian) or epsilon (Laplace); ``delta`` is the
    threshold's delta of a key-discovery part.
    """

    name: str
    mechanism: str
    width: int
    cost: float
    delta: float = 0.0

    @property
    def sd(self) -> float:
        """Standard deviation of the noise of one cell."""
        if self.mechanism == "gaussian":
            return math.sqrt(self.width / (2 * self.cost))
        a = math.exp(-self.cost / self.width)
        return math.sqrt(2 * a) / (1 - a)

    def cell_threshold(self, fp: float) -> float:
        """Noisy count that an empty cell exceeds with probability at most ``fp`` (utility, not privacy)."""
        if self.mechanism == "gaussian":
            return float(norm.isf(fp) * self.sd)
        a = math.exp(-self.cost / self.width)
        return float(max(1, math.ceil(math.log(fp * (1 + a)) / math.log(a))))

    @property
    def release_threshold(self) -> int:
        """Noisy count a key needs to be released (key-discovery parts)."""
        if self.mechanism == "gaussian":
            return gaussian_stability_threshold(self.width, self.sd, self.delta)
        return laplace_stability_threshold(self.width, self.cost, self.delta)

    def records(self, target: str) -> list[BudgetRecord]:
        """What this part charges (for the up-front check)."""
        if self.mechanism == "laplace":
            kind = "approx" if self.delta else "pure"
            return [BudgetRecord("geometric", target, kind, epsilon=self.cost, delta=self.delta)]
        out = [BudgetRecord("discrete gaussian", target, "zcdp", rho=self.cost)]
        return out + ([BudgetRecord("threshold", target, "approx", delta=self.delta)] if self.delta else [])


@dataclass(frozen=True)
class DomainPlan:
    """The parts of one domain estimate and how they are charged (decided before any noise is drawn)."""

    mode: str
    count: Part
    parts: dict[str, Part]
    epsilon: float
    delta: float
    rho: float = 0.0
    delta_conversion: float = 0.0
    label: str = "DP domain estimate"
    summary: BudgetRecord | None = field(default=None)

    @property
    def records(self) -> list[BudgetRecord]:
        """Everything the estimate will charge (for ``accountant.require``)."""
        out = self.count.records(f"{self.label}: number of people")
        if self.summary is not None:
            return out + [self.summary]
        for part in self.parts.values():
            out += part.records(f"{self.label}: {part.name}")
        return out


def _split(total: float, widths: dict[str, int]) -> dict[str, float]:
    weight = {k: WEIGHTS[k] * w for k, w in widths.items()}
    s = sum(weight.values())
    return {k: total * w / s for k, w in weight.items()}


def _merit(parts: dict[str, Part], widths: dict[str, int]) -> float:
    """Sum over parts of columns x log(threshold in people): lower is better (a public comparison)."""
    score = 0.0
    for name, part in parts.items():
        t = part.release_threshold if part.delta else part.cell_threshold(1e-6)
        score += widths[name] * math.log(max(t, 1.0))
    return score


def _approx_parts(eps: float, delta: float, widths: dict[str, int]) -> tuple[dict[str, Part], float, float]:
    """Best of: all parts Gaussian, converted once (rho, delta_conversion) or all Laplace (rho = 0)."""
    keys = [k for k in ("categories", "codes") if k in widths]
    d_thr = {k: delta / 2 / len(keys) for k in keys}
    dz = delta / 2 if keys else delta
    rho = approx_dp_to_zcdp(eps, dz)
    gauss = {k: Part(k, "gaussian", w, c, d_thr.get(k, 0.0)) for (k, w), c in
             zip(widths.items(), _split(rho, widths).values())}
    lap = {k: Part(k, "laplace", w, c, delta / len(keys) if k in keys else 0.0) for (k, w), c in
           zip(widths.items(), _split(eps, widths).values())}
    if _merit(gauss, widths) <= _merit(lap, widths):
        return gauss, rho, dz
    return lap, 0.0, 0.0


def plan_domain(
    widths: dict[str, int], epsilon: float, delta: float, *, accountant: BudgetAccountant | None = None,
    later=(), label: str = "DP domain estimate", columns: dict[str, str] | None = None,
) -> DomainPlan:
    """Size and charge-mode of every part of a domain estimate, from public quantities only.

    Parameters
    ----------
    widths : dict
        Number of columns in each part (``"bins"``, ``"categories"``,
        ``"codes"``, ``"tail"``); parts of width 0 are left out.
    epsilon, delta : float
        The slice of the budget given to the domain.
    accountant : BudgetAccountant, optional
        The cohort's accountant; with ``later`` it allows the zCDP mode.
    later : sequence of BudgetRecord
        What the model will charge after the domain (its planned records).
    label : str
        Prefix of the budget-log targets.
    columns : dict, optional
        The columns of each part, as text for the budget log.

    Returns
    -------
    DomainPlan
    """
    widths = {k: int(w) for k, w in widths.items() if w}
    if delta <= 0:
        widths = {k: w for k, w in widths.items() if k not in ("categories", "codes")}
    later = list(later)
    zcdp = (accountant is not None and delta > 0 and accountant.delta_zcdp > 0
            and any(r.kind == "zcdp" for r in later))
    if zcdp:
        reserve = sum(r.epsilon for r in later if r.kind in ("pure", "approx"))
        rho = accountant.remaining_rho(reserve_epsilon=reserve) - sum(r.rho for r in later if r.kind == "zcdp")
        if rho > 0:
            count = Part("count", "gaussian", 1, COUNT_SHARE["zcdp"] * rho)
            rest = _split(rho - count.cost, widths)
            keys = [k for k in ("categories", "codes") if k in widths]
            parts = {k: Part(k, "gaussian", w, rest[k], delta / len(keys) if k in keys else 0.0)
                     for k, w in widths.items()}
            return DomainPlan("zcdp", count, parts, epsilon, delta, rho=rho, label=label)
    mode = "approx" if delta > 0 else "pure"
    count = Part("count", "laplace", 1, COUNT_SHARE[mode] * epsilon)
    eps_rest = epsilon - count.cost
    if mode == "pure":
        parts = {k: Part(k, "laplace", w, c) for (k, w), c in zip(widths.items(), _split(eps_rest, widths).values())}
        return DomainPlan(mode, count, parts, epsilon, delta, label=label)
    parts, rho, dz = _approx_parts(eps_rest, delta, widths)
    summary = None
    if rho:
        what = "; ".join(f"{p} of {(columns or {}).get(p, '')}".strip() for p in parts)
        # the Gaussian parts compose into one Gaussian mechanism of sensitivity sqrt(2 rho) in units of its noise
        summary = BudgetRecord(
            "zCDP composition, converted once", f"{label}: {what}", "approx", epsilon=eps_rest,
            delta=delta, sensitivity=math.sqrt(2 * rho), noise_scale=1.0,
            details={"rho": rho, "delta_conversion": dz, "sensitivity_unit": "noise sd (all parts composed)",
                     "parts": [
                {"part": p.name, "mechanism": "discrete gaussian" if not p.delta else "gaussian stability histogram",
                 "l2_sensitivity": math.sqrt(p.width), "rho": p.cost, "noise_sd": p.sd, "threshold_delta": p.delta}
                for p in parts.values()]})
    return DomainPlan(mode, count, parts, epsilon, delta, rho=rho, delta_conversion=dz, label=label,
                      summary=summary)


class DomainRun:
    """Charges a :class:`DomainPlan` part by part (in ``"approx"`` mode with a Gaussian summary, once, up front)."""

    def __init__(self, plan: DomainPlan, accountant: BudgetAccountant, noise: NoiseSource) -> None:
        self.plan = plan
        self.noise = noise
        self._main = accountant
        self._acc = accountant

    def count(self, n: int) -> int:
        """A noisy count of people (the first charge)."""
        part, target = self.plan.count, f"{self.plan.label}: number of people"
        kw = dict(noise=self.noise, accountant=self._main, target=target)
        if part.mechanism == "gaussian":
            return int(discrete_gaussian_mechanism([n], l2_sensitivity=1.0, rho=part.cost, **kw)[0])
        return int(geometric_mechanism([n], sensitivity=1.0, epsilon=part.cost, **kw)[0])

    def open(self) -> None:
        """Charge the summary record (Gaussian parts converted once); its parts then charge a sub-accountant."""
        plan = self.plan
        if plan.summary is None:
            return
        self._main.spend(plan.summary)
        self._acc = BudgetAccountant(plan.summary.epsilon, plan.summary.delta,
                                     delta_zcdp=plan.delta_conversion, cohort=self._main.cohort,
                                     noise=self._main.noise)

    def histogram(self, counts: np.ndarray, name: str, what: str) -> np.ndarray:
        """Noisy integer counts of a part where each person is in one cell per column."""
        part = self.plan.parts[name]
        kw = dict(noise=self.noise, accountant=self._acc, target=f"{self.plan.label}: {what}")
        if part.mechanism == "gaussian":
            return discrete_gaussian_mechanism(counts, l2_sensitivity=math.sqrt(part.width), rho=part.cost, **kw)
        return geometric_mechanism(counts, sensitivity=float(part.width), epsilon=part.cost, **kw)

    def keys(self, counts: np.ndarray, name: str, what: str) -> tuple[np.ndarray, np.ndarray]:
        """Released keys of a key-discovery part (each person holds at most one key per column)."""
        part = self.plan.parts[name]
        kw = dict(contribution_bound=part.width, noise=self.noise, accountant=self._acc,
                  target=f"{self.plan.label}: {what}")
        if part.mechanism == "gaussian":
            return gaussian_stability_histogram(counts, rho=part.cost, delta=part.delta, **kw)
        return stability_histogram(counts, epsilon=part.cost, delta=part.delta, **kw)
