"""The privacy of one CAPS cycle: budget split, DP-SGD plan from a public or DP cohort size, and the charges.

Neighbouring relation: add/remove one person (one row) of the cohort. The exact
cohort size is never used when private: DP-SGD's Poisson sample rate and steps
come from ``expected_cohort_size`` (public) or from a charged DP count. With
Poisson subsampling at a fixed rate ``q`` the guarantee holds for any actual
size, so a public or DP planning size is sound; nothing derived from the exact
size reaches an attribute, a budget record or an error message.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from skdpsynth.base import FitContext
from skdpsynth.exceptions import PrivacyBudgetError
from skdpsynth.privacy._accounting import BudgetRecord
from skdpsynth.privacy._dpsgd import DPSGDPlan, dpsgd_privacy_report, dpsgd_record, plan_dpsgd
from skdpsynth.privacy._mechanisms import geometric_variance
from skdpsynth.privacy._postprocess import inverse_variance_mean
from skdpsynth.privacy._table import PrivateTable

__all__ = ["CyclePrivacy", "COUNT_TARGET", "dpsgd_target"]

COUNT_TARGET = "number of people in the cohort (sets the DP-SGD sample rate; expected_cohort_size=None)"
_PUBLIC = "expected_cohort_size (public)"
_DP = "dp_count (see the 'number of people' record)"


def dpsgd_target(cycle: int) -> str:
    """What a cycle's DP-SGD run is logged as."""
    return f"M2 labelled loss (cycle {cycle})"


@functools.lru_cache(maxsize=128)
def dpsgd_report(plan: DPSGDPlan) -> dict:
    """The four-accountant report of a plan (a pure function of public numbers: cached)."""
    return dpsgd_privacy_report(noise_multiplier=plan.noise_multiplier, sample_rate=plan.sample_rate,
                                steps=plan.steps, delta=plan.delta)


@dataclass(frozen=True)
class CyclePrivacy:
    """One cycle's budget and DP-SGD schedule, read from the estimator's parameters only (public).

    Attributes
    ----------
    epsilon : float or None
        The cycle's request (None: not private).
    count, label, sgd : float
        Epsilon of the DP cohort count (0 with a public size), of the label
        histogram and of DP-SGD (the rest once the domain, if estimated, is paid).
    delta_sgd : float
        delta of DP-SGD.
    """

    epsilon: float | None
    count: float
    label: float
    sgd: float
    delta_sgd: float
    expected_cohort_size: int | None
    batch_size: int
    epochs: int
    max_grad_norm: float
    max_noise_multiplier: float
    target: str

    @classmethod
    def of(cls, est: Any, domain: tuple[float, float]) -> CyclePrivacy:
        """The split for ``est`` after ``domain`` = (epsilon, delta) of the DP schema (zeros if given or later).

        Raises ``PrivacyBudgetError`` (before any spend) when nothing is left for DP-SGD.
        """
        common = dict(expected_cohort_size=est.expected_cohort_size, batch_size=int(est.batch_size),
                      epochs=int(est.epochs), max_grad_norm=float(est.max_grad_norm),
                      max_noise_multiplier=float(est.max_noise_multiplier), target=est.target)
        if est.epsilon is None:
            return cls(None, 0.0, 0.0, 0.0, 0.0, **common)
        eps_dom, delta_dom = domain
        count = est.size_share * est.epsilon if est.expected_cohort_size is None else 0.0
        label = est.label_share * est.epsilon
        out = cls(est.epsilon, count, label, est.epsilon - eps_dom - count - label, est.delta - delta_dom, **common)
        if out.sgd <= 0 or out.delta_sgd <= 0:
            raise PrivacyBudgetError(
                f"nothing is left for DP-SGD (epsilon {out.sgd:.3g}, delta {out.delta_sgd:.3g}); lower "
                "label_share, size_share or domain_share, or give a schema; DP-SGD needs delta > 0.")
        return out

    # -- planning (no spend) -------------------------------------------------------------------
    def schedule(self, n_plan: int) -> tuple[float, int]:
        """Poisson sample rate and steps from a public or DP cohort size."""
        q = min(1.0, self.batch_size / n_plan)
        return q, max(1, int(round(self.epochs / q)))

    def plan(self, n_plan: int, size: str) -> DPSGDPlan:
        """Calibrate DP-SGD for a planning size; refuse absurd noise (``PrivacyBudgetError``)."""
        q, steps = self.schedule(n_plan)
        try:
            plan = plan_dpsgd(epsilon=float(self.sgd), delta=float(self.delta_sgd), sample_rate=q, steps=steps,
                              max_grad_norm=self.max_grad_norm)
        except ValueError as exc:
            raise PrivacyBudgetError(
                f"{size} is too small for epsilon={self.epsilon}: no DP-SGD noise multiplier reaches "
                f"epsilon={self.sgd:.3g} with {steps} steps at sample rate {q:.3g} ({exc})") from exc
        if plan.noise_multiplier > self.max_noise_multiplier:
            raise PrivacyBudgetError(
                f"{size} is too small for epsilon={self.epsilon} with epochs={self.epochs}, "
                f"batch_size={self.batch_size}: DP-SGD would need noise multiplier {plan.noise_multiplier:.3g} "
                f"(> max_noise_multiplier={self.max_noise_multiplier}), i.e. noise that swamps the gradients. "
                "Raise epsilon, lower epochs, or raise batch_size.")
        return plan

    def check_before_spend(self) -> None:
        """With a public size, plan now: a refusal comes before any budget is spent."""
        if self.epsilon is not None and self.expected_cohort_size is not None:
            self.plan(int(self.expected_cohort_size), "the expected cohort size (expected_cohort_size)")

    def planned_records(self) -> list[BudgetRecord]:
        """What the cycle will charge at most (for the accountant's up-front check)."""
        planned = [BudgetRecord("geometric", "label histogram", "pure", epsilon=self.label),
                   BudgetRecord("dp-sgd", "M2 labelled loss", "approx", epsilon=self.sgd, delta=self.delta_sgd)]
        if self.count:
            planned.append(BudgetRecord("geometric", COUNT_TARGET, "pure", epsilon=self.count))
        return planned

    # -- the cycle's charges ----------------------------------------------------------------------
    def plan_cycle(self, table: PrivateTable, labelled: Callable, ctx: FitContext) -> tuple[DPSGDPlan, dict]:
        """The DP-SGD plan and its planning size: public, or a DP count of the labelled people charged now (exact,
        and recorded as such, only when not private)."""
        in_count = lambda rows: np.where(labelled(rows), 0, -1)  # noqa: E731 -- people with a label: one cell
        if self.epsilon is None:  # not private anyway
            public = self.expected_cohort_size is not None
            n_plan = int(self.expected_cohort_size) if public else max(int(table.histogram(
                in_count, 1, target=COUNT_TARGET)[0]), 1)
            q, steps = self.schedule(n_plan)
            return (DPSGDPlan(0.0, q, steps, self.max_grad_norm, math.inf, 0.0),
                    {"cohort_size": n_plan, "cohort_size_source": _PUBLIC if public else "exact (not private)"})
        if self.expected_cohort_size is not None:
            n_plan = int(self.expected_cohort_size)
            return (self.plan(n_plan, "the expected cohort size (expected_cohort_size)"),
                    {"cohort_size": n_plan, "cohort_size_source": _PUBLIC})
        table.require(self.planned_records(), what=f"CAPS cycle {ctx.cohort}")
        n_plan = max(int(table.histogram(in_count, 1, epsilon=self.count, target=COUNT_TARGET)[0]), 1)
        size = (f"a cohort whose DP size estimate is {n_plan} (that DP count, epsilon={self.count:.3g}, is spent "
                "and in budget_log_; give expected_cohort_size to plan before any spend)")
        return self.plan(n_plan, size), {"cohort_size": n_plan, "cohort_size_source": _DP}

    def release_labels(self, table: PrivateTable, label_codes: Callable, k: int, plan: DPSGDPlan, size: dict,
                       ctx: FitContext) -> tuple[np.ndarray, int, dict]:
        """Check the cycle's plan, then charge the label histogram (a person is in one cell: L1 sensitivity 1).

        Returns (noisy label counts, DP size estimate, the details the DP-SGD record will carry); the DP-SGD run
        itself is charged by the table when the private steps open (before the first one).
        """
        what = f"histogram of label {self.target!r}"
        if self.epsilon is None:
            counts = table.histogram(label_codes, k, target=what)  # exact, recorded as not private
            return counts, max(int(counts.sum()), 1), {}
        report = dpsgd_report(plan)
        details = {**size, "epsilon_pld": report["epsilon_pld"], "mu": report["mu"], "regret": report["regret"]}
        record = dpsgd_record(plan, dpsgd_target(ctx.cohort))
        table.require([BudgetRecord("geometric", "label histogram", "pure", epsilon=self.label),
                       replace(record, details={**record.details, **details})], what=f"CAPS cycle {ctx.cohort}")
        noisy = table.histogram(label_codes, k, epsilon=self.label, target=what)
        count = size["cohort_size"] if size["cohort_size_source"] == _DP else None
        return noisy, self.size_estimate(int(noisy.sum()), k, count), details

    def size_estimate(self, total: int, k: int, count: int | None) -> int:
        """Inverse-variance mean of the noisy label total and the DP count (post-processing), at least 1."""
        if count is None:
            return max(total, 1)
        variances = [k * geometric_variance(1.0, self.label), geometric_variance(1.0, self.count)]
        return max(int(round(inverse_variance_mean([total, count], variances)[0])), 1)
