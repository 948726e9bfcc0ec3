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

Without a schema the columns' kinds are not known in advance (they are a DP
answer, :mod:`._domain_kinds`): the plan then has a ``kinds`` part measured
first, with ``KINDS_SHARE`` of what the count leaves, and the other parts share
the rest; their sizes are placeholders (every column in every part) until
:meth:`DomainPlan.split` sizes them by the released kinds. The total charged
(and checked up front) does not depend on the split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.special import erfc
from scipy.stats import norm

from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord, approx_dp_to_zcdp
from skdpsynth.privacy._mechanisms import discrete_gaussian_mechanism, geometric_mechanism, stability_histogram
from skdpsynth.privacy._mechanisms import stability_threshold as laplace_stability_threshold
from skdpsynth.privacy._noise import NoiseSource

__all__ = ["Part", "DomainPlan", "DomainRun", "plan_domain", "gaussian_stability_histogram",
           "gaussian_stability_threshold", "discrete_gaussian_tail"]

#: relative weight of each part in the split of the budget (times its number of columns). Categories at 2.5 kept
#: more of the categories held by a fifth of 500 people at every domain_share tried, but made 500-person tables
#: of three numeric columns refuse at epsilon 1 (their bins need more people than the noisy count shows): kept at 1.5
WEIGHTS = {"bins": 1.0, "categories": 1.5, "codes": 0.5, "tail": 0.5}
#: share of the domain budget spent on the count of people (rho in zCDP mode, epsilon otherwise)
COUNT_SHARE = {"zcdp": 0.03, "approx": 0.15, "pure": 0.15}
#: share of what the count leaves spent on the columns' kinds, when they are measured (no schema)
KINDS_SHARE = 0.12
#: the parts that discover keys (and spend delta on a release threshold)
KEY_PARTS = ("categories", "codes")


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
    """The parts of one domain estimate and how they are charged (decided before any noise is drawn).

    With a ``kinds`` part, ``parts`` are placeholders until :meth:`split` sizes
    them by the released kinds: they share ``rest`` (rho or epsilon) and
    ``key_delta`` (the key parts' thresholds) whatever the split.
    """

    mode: str
    count: Part
    parts: dict[str, Part]
    epsilon: float
    delta: float
    rho: float = 0.0
    delta_conversion: float = 0.0
    label: str = "DP domain estimate"
    summary: BudgetRecord | None = field(default=None)
    kinds: Part | None = None
    rest: float = 0.0
    key_delta: float = 0.0

    @property
    def records(self) -> list[BudgetRecord]:
        """Everything the estimate will charge (for ``accountant.require``)."""
        out = self.count.records(f"{self.label}: number of people")
        if self.summary is not None:
            return out + [self.summary]
        if self.kinds is not None:
            out += self.kinds.records(f"{self.label}: kinds")
        for part in self.parts.values():
            out += part.records(f"{self.label}: {part.name}")
        return out

    def split(self, widths: dict[str, int]) -> DomainPlan:
        """The parts sized by the released kinds (the number of columns of each part): same total cost."""
        if self.kinds is None:
            return self
        parts = _sized_parts(self.rest, self.kinds.mechanism, _widths(widths, self.delta), self.key_delta)
        return replace(self, parts=parts)


def _widths(widths: dict[str, int], delta: float) -> dict[str, int]:
    """Parts with at least one column (no key discovery without delta)."""
    return {k: int(w) for k, w in widths.items() if w and (delta > 0 or k not in KEY_PARTS)}


def _sized_parts(total: float, mechanism: str, widths: dict[str, int], key_delta: float) -> dict[str, Part]:
    """``total`` (rho or epsilon) split over the parts by weight; ``key_delta`` shared by the key parts."""
    keys = [k for k in KEY_PARTS if k in widths]
    return {k: Part(k, mechanism, w, c, key_delta / len(keys) if k in keys else 0.0)
            for (k, w), c in zip(widths.items(), _split(total, widths).values())}


def _with_kinds(total: float, mechanism: str, widths: dict[str, int], key_delta: float,
                kinds: int) -> tuple[Part | None, dict[str, Part], float]:
    """(kinds part or None, the other parts, what they share) for a budget ``total`` of one mechanism."""
    part = Part("kinds", mechanism, kinds, KINDS_SHARE * total) if kinds else None
    rest = total - (part.cost if part else 0.0)
    return part, _sized_parts(rest, mechanism, widths, key_delta), rest


def _split(total: float, widths: dict[str, int]) -> dict[str, float]:
    weight = {k: WEIGHTS[k] * w for k, w in widths.items()}
    s = sum(weight.values()) or 1.0
    return {k: total * w / s for k, w in weight.items()}


def _merit(parts: dict[str, Part], widths: dict[str, int]) -> float:
    """Sum over parts of columns x log(threshold in people): lower is better (a public comparison)."""
    score = 0.0
    for name, part in parts.items():
        t = part.release_threshold if part.delta else part.cell_threshold(1e-6)
        score += widths[name] * math.log(max(t, 1.0))
    return score


def _approx_parts(eps: float, delta: float, widths: dict[str, int], kinds: int):
    """Best of: all parts Gaussian, converted once (rho, delta_conversion) or all Laplace (rho = 0)."""
    keyed = any(k in widths for k in KEY_PARTS)
    dz = delta / 2 if keyed else delta
    rho = approx_dp_to_zcdp(eps, dz)
    gauss = _with_kinds(rho, "gaussian", widths, delta / 2 if keyed else 0.0, kinds)
    lap = _with_kinds(eps, "laplace", widths, delta if keyed else 0.0, kinds)
    if _merit(gauss[1], widths) <= _merit(lap[1], widths):
        return gauss, rho, dz, delta / 2 if keyed else 0.0
    return lap, 0.0, 0.0, delta if keyed else 0.0


def plan_domain(
    widths: dict[str, int], epsilon: float, delta: float, *, accountant: BudgetAccountant | None = None,
    later=(), label: str = "DP domain estimate", columns: dict[str, str] | None = None, kinds: int = 0,
    compose: bool = False,
) -> DomainPlan:
    """Size and charge-mode of every part of a domain estimate, from public quantities only.

    Parameters
    ----------
    widths : dict
        Number of columns in each part (``"bins"``, ``"categories"``,
        ``"codes"``, ``"tail"``); parts of width 0 are left out. With
        ``kinds``, placeholders (public: e.g. every column in every part) until
        :meth:`DomainPlan.split`.
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
    kinds : int, default=0
        Number of columns whose kinds are measured first (a part of its own).
    compose : bool, default=False
        Charge in zCDP whenever the accountant converts zCDP at a positive
        delta, even when ``later`` holds no zCDP records: the caller has
        reserved that delta for the domain's own releases (a sequence model
        charged in pure DP whose vocabulary and label domain compose with
        each other). The rho is then what the accountant has left beyond
        ``later`` (its pure records reserved as epsilon).

    Returns
    -------
    DomainPlan
    """
    widths = _widths(widths, delta)
    later = list(later)
    zcdp = (accountant is not None and delta > 0 and accountant.delta_zcdp > 0
            and (compose or any(r.kind == "zcdp" for r in later)))
    if zcdp:
        reserve = sum(r.epsilon for r in later if r.kind in ("pure", "approx"))
        rho = accountant.remaining_rho(reserve_epsilon=reserve) - sum(r.rho for r in later if r.kind == "zcdp")
        if rho > 0:
            count = Part("count", "gaussian", 1, COUNT_SHARE["zcdp"] * rho)
            key_delta = delta if any(k in widths for k in KEY_PARTS) else 0.0
            kind_part, parts, rest = _with_kinds(rho - count.cost, "gaussian", widths, key_delta, kinds)
            return DomainPlan("zcdp", count, parts, epsilon, delta, rho=rho, label=label, kinds=kind_part,
                              rest=rest, key_delta=key_delta)
    mode = "approx" if delta > 0 else "pure"
    count = Part("count", "laplace", 1, COUNT_SHARE[mode] * epsilon)
    eps_rest = epsilon - count.cost
    if mode == "pure":
        kind_part, parts, rest = _with_kinds(eps_rest, "laplace", widths, 0.0, kinds)
        return DomainPlan(mode, count, parts, epsilon, delta, label=label, kinds=kind_part, rest=rest)
    (kind_part, parts, rest), rho, dz, key_delta = _approx_parts(eps_rest, delta, widths, kinds)
    summary = None
    if rho:
        summary = _summary(parts, kind_part, rho, dz, eps_rest, delta, label, columns)
    return DomainPlan(mode, count, parts, epsilon, delta, rho=rho, delta_conversion=dz, label=label,
                      summary=summary, kinds=kind_part, rest=rest, key_delta=key_delta)


def _summary(parts: dict[str, Part], kinds: Part | None, rho: float, dz: float, eps: float, delta: float,
             label: str, columns: dict[str, str] | None) -> BudgetRecord:
    """ONE (epsilon, delta) record for the Gaussian parts composed in zCDP and converted once."""
    shown = ([kinds] if kinds else []) + ([] if kinds else list(parts.values()))
    what = "; ".join(f"{p.name} of {(columns or {}).get(p.name, '')}".strip() for p in shown)
    if kinds:
        what += "; then, sized by the released kinds: " + ", ".join(parts)
    details = {"rho": rho, "delta_conversion": dz, "sensitivity_unit": "noise sd (all parts composed)",
               "parts": [{"part": p.name, "mechanism": "discrete gaussian" if not p.delta
                          else "gaussian stability histogram", "l2_sensitivity": math.sqrt(p.width), "rho": p.cost,
                          "noise_sd": p.sd, "threshold_delta": p.delta} for p in shown]}
    if kinds:
        details["parts"].append({"part": "the rest, split by the released kinds", "rho": rho - kinds.cost})
    # the Gaussian parts compose into one Gaussian mechanism of sensitivity sqrt(2 rho) in units of its noise
    return BudgetRecord("zCDP composition, converted once", f"{label}: {what}", "approx", epsilon=eps,
                        delta=delta, sensitivity=math.sqrt(2 * rho), noise_scale=1.0, details=details)


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

    def split(self, widths: dict[str, int]) -> None:
        """Size the parts after the kinds by the released kinds (:meth:`DomainPlan.split`)."""
        self.plan = self.plan.split(widths)

    @property
    def parts_accountant(self) -> BudgetAccountant:
        """Where the parts are charged: the summary's sub-accountant once opened, else the cohort's."""
        return self._acc

    def histogram(self, counts: np.ndarray, name: str, what: str) -> np.ndarray:
        """Noisy integer counts of a part where each person is in one cell per column."""
        part = self.plan.kinds if name == "kinds" else self.plan.parts[name]
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
