"""Privacy checks: the formal guarantee of the release, and the empirical nearest-neighbour attack."""

from __future__ import annotations

import math

import numpy as np

from skdpsynth.audit._base import AuditData, BaseCheck, CheckResult, require_columns
from skdpsynth.audit._checks_common import check_seed, is_schema, long_features
from skdpsynth.metrics._encoding import gower_encode
from skdpsynth.metrics._privacy import gower_min_distances, nearest_neighbour_privacy

__all__ = ["PrivacyCheck", "PrivacyGuaranteeCheck"]

#: equal-width bins of the distance to the closest release row in (0, 1]; cell 0 holds exact copies
_DP_BINS = 50
_DP_CELLS = _DP_BINS + 1


def _nonprivate(reasons: list[str]) -> str:
    """Why a release carries no DP guarantee: a non-private fit, or parts computed without DP."""
    shown = "; ".join(reasons[:3]) + (f"; and {len(reasons) - 3} more" if len(reasons) > 3 else "")
    if not reasons:
        return "not differentially private: the release states no finite epsilon"
    if any("epsilon=None" in r for r in reasons):
        return "not differentially private: a non-private fit (epsilon=None)"
    return f"not end-to-end DP: computed without DP: {shown}"


class PrivacyGuaranteeCheck(BaseCheck):
    """The release must carry a formal, publishable differential-privacy guarantee within stated limits.

    Reads the release's guarantee (the synthesizer's ``privacy_spent_`` and
    budget log, or the budget file passed as ``privacy=`` to
    :meth:`ReleaseAuditor.audit`). Fails, naming why, when the release

    * is not differentially private (``epsilon=None``, or something was read
      from the data without DP, e.g. a schema not confirmed public: not
      end-to-end DP),
    * spends more than ``epsilon_max`` / ``delta_max``,
    * is not publishable: its noise was derived from ``random_state``
      (``reproducible_noise=True``), so whoever knows the seed can remove it,
      or the budget file does not say where the noise came from,
    * or carries no stated guarantee at all (a bare table).

    Uses no confidential data: score, reason and details are public.
    Score: 1 when it passes, else 0.

    Parameters
    ----------
    epsilon_max : float, default=10.0
        Largest acceptable epsilon (PEARL's grid tops out at 10).
    delta_max : float, default=1e-5
        Largest acceptable delta.
    require_publishable : bool, default=True
        Reject reproducible-noise releases.
    """

    name = "privacy_guarantee"

    def __init__(self, *, epsilon_max=10.0, delta_max=1e-5, require_publishable=True):
        self.epsilon_max = epsilon_max
        self.delta_max = delta_max
        self.require_publishable = require_publishable

    def _evaluate(self, data: AuditData) -> CheckResult:
        threshold = {"epsilon_max": self.epsilon_max, "delta_max": self.delta_max,
                     "require_publishable": self.require_publishable}
        spend = data.privacy
        if spend is None:
            return self._result(False, threshold, ["no formal DP guarantee is known for this release (audit its "
                                                   "synthesizer, or pass privacy= with the budget file written "
                                                   "beside the table)"], {})
        fails = []
        eps, delta = spend.get("epsilon"), float(spend.get("delta") or 0.0)
        if not spend.get("is_private") or eps is None or not math.isfinite(eps):
            fails.append(_nonprivate(spend.get("nonprivate_reasons") or []))
        else:
            if eps > self.epsilon_max + 1e-12:
                fails.append(f"epsilon {eps:.4g} exceeds epsilon_max {self.epsilon_max:g}")
            if delta > self.delta_max * (1 + 1e-9):
                fails.append(f"delta {delta:.3g} exceeds delta_max {self.delta_max:.3g}")
        if self.require_publishable and spend.get("is_private") and not spend.get("publishable"):
            if spend.get("reproducible_noise"):
                fails.append("not publishable: the privacy noise was derived from random_state "
                             "(reproducible_noise=True), so whoever knows the seed can remove it")
            else:
                fails.append("not publishable: the budget does not say that the noise came from a secure source")
        return self._result(not fails, threshold, fails, dict(spend))

    def _result(self, passed: bool, threshold: dict, fails: list[str], details: dict) -> CheckResult:
        if passed:
            eps, delta = details["epsilon"], details["delta"]
            reason = (f"formal guarantee epsilon={eps:.4g}, delta={delta:.3g} (<= {self.epsilon_max:g}, "
                      f"{self.delta_max:.3g}), publishable")
        else:
            reason = "privacy guarantee: " + "; ".join(fails)
        return CheckResult(self.name, 1.0 if passed else 0.0, passed, threshold, reason, details,
                           uses_confidential_data=False)


def _distance_histograms(members: np.ndarray, nonmembers: np.ndarray, bins: int = 40) -> dict:
    """Densities of the two distance samples on shared bins (aggregates for the plot; no per-row values)."""
    hi = float(max(np.max(members, initial=0.0), np.max(nonmembers, initial=0.0), 1e-9))
    edges = np.linspace(0.0, hi, bins + 1)
    return {"edges": edges.tolist(),
            "members": np.histogram(members, bins=edges, density=True)[0].tolist(),
            "nonmembers": np.histogram(nonmembers, bins=edges, density=True)[0].tolist()}


class PrivacyCheck(BaseCheck):
    """Nearest-neighbour membership inference and exact-copy screening (PEARL).

    Members are the training rows, non-members an equal-size real holdout;
    each real row is scored by minus its Gower distance to the closest
    synthetic row (:func:`skdpsynth.metrics.nearest_neighbour_privacy`).

    Decision: fail when the attack's AUC exceeds ``max_auc`` (PEARL: 0.55), or
    when members are copied verbatim more often than non-members: the member
    exact-copy rate may exceed the non-member rate by at most
    ``copy_tolerance + copy_z * se`` (``se``: standard error of the difference
    of the two rates under equal rates).

    Why not "any exact copy fails" (PEARL's wording): on low-entropy discrete
    tables many real people share the same row, so a correct DP release
    reproduces real rows by chance -- for members and non-members alike. A
    rule that rejects any copy rejects correct DP releases; what signals
    memorisation is copying members *more* than equally likely non-members.
    Both rates, and the share of synthetic rows copying a training row, are
    reported.

    An empirical attack bounds nothing: a release can pass it and still not
    be private. The formal guarantee is :class:`PrivacyGuaranteeCheck`.

    Published verdict (``ReleaseAuditor(verdict_epsilon=...)``, tables only):
    the same rule on two noisy histograms of every member's and every
    non-member's distance to the closest release row (cell 0: an exact copy;
    then 50 equal bins of (0, 1]; ties within a bin count one half). Distances
    are scaled by the public schema, else by the release's own range, so each
    person's cell depends on that person and the release alone: L1 sensitivity 1.

    Score: ``1 - AUC`` (0.5 at chance; passes the AUC rule when >= ``1 - max_auc``).

    Parameters
    ----------
    max_auc : float, default=0.55
    copy_tolerance : float, default=0.01
    copy_z : float, default=2.0
    schema : TableSchema, optional
        Public bounds to scale numeric distances (default: the audit's schema,
        else the training range).
    id_col, event_col : str, optional
        For long tables: learners are compared through order-free features
        (event counts and length; the label when ``label_col`` is given).
    label_col : str, optional
    random_state : int, optional
        Seed of the balancing subsample (default: the audit's).
    """

    name = "privacy"
    requires_train = True
    dp_sensitivity = ("L1 1: each person adds 1 to one cell of the member or the non-member histogram of distances "
                      "to the closest release row")

    def __init__(self, *, max_auc=0.55, copy_tolerance=0.01, copy_z=2.0, schema=None, id_col=None, event_col=None,
                 label_col=None, random_state=None):
        self.max_auc = max_auc
        self.copy_tolerance = copy_tolerance
        self.copy_z = copy_z
        self.schema = schema
        self.id_col = id_col
        self.event_col = event_col
        self.label_col = label_col
        self.random_state = random_state

    def check_inputs(self, holdout, schema=None) -> None:
        if self.id_col is not None:
            require_columns(self, holdout, {"id": self.id_col, "event": self.event_col, "label": self.label_col})

    def _evaluate(self, data: AuditData) -> CheckResult:
        if self.id_col is not None:
            syn, hold, train = long_features(self, data, self.label_col)
            schema = None
        else:
            syn, hold, train = data.synthetic, data.holdout, data.train
            schema = self.schema if self.schema is not None else (data.schema if is_schema(data.schema) else None)
        res = nearest_neighbour_privacy(train, hold, syn, schema=schema,
                                        random_state=check_seed(data, self.random_state))
        auc, pm, ph = res["membership_auc"], res["member_exact_rate"], res["nonmember_exact_rate"]
        allowed, auc_ok, copy_ok, public_reason = self._rule(auc, pm, ph, res["n_members"])
        fails = []
        if not auc_ok:
            fails.append(f"membership-inference AUC {auc:.3f} > {self.max_auc}")
        if not copy_ok:
            fails.append(f"{pm:.1%} of training rows appear verbatim in the release vs {ph:.1%} of holdout rows "
                         f"(allowed excess {allowed:.1%})")
        reason = ("privacy: " + "; ".join(fails)) if fails else (
            f"membership-inference AUC {auc:.3f} <= {self.max_auc}; exact copies: members {pm:.1%}, "
            f"non-members {ph:.1%}")
        details = {k: v for k, v in res.items() if not isinstance(v, np.ndarray)}
        details["allowed_copy_excess"] = allowed
        artifacts = {"membership_hist": _distance_histograms(res["member_distances"], res["nonmember_distances"]),
                     "membership_auc": auc}
        return CheckResult(self.name, 1.0 - auc, auc_ok and copy_ok,
                           {"max_auc": self.max_auc, "copy_tolerance": self.copy_tolerance, "copy_z": self.copy_z},
                           reason, details, confidential=list(details), artifacts=artifacts,
                           public_reason=public_reason)

    def _rule(self, auc: float, pm: float, ph: float, n: float) -> tuple[float, bool, bool, str]:
        """The decision on (AUC, member and non-member exact-copy rates, people per side) and its public reason."""
        pooled = 0.5 * (pm + ph)
        se = math.sqrt(max(pooled * (1 - pooled), 0.0) * 2.0 / n) if n else 0.0
        allowed = self.copy_tolerance + self.copy_z * se
        auc_ok, copy_ok = auc <= self.max_auc, pm - ph <= allowed
        public = []
        if not auc_ok:
            public.append(f"membership-inference AUC above {self.max_auc}")
        if not copy_ok:
            public.append("training rows appear verbatim in the release more often than holdout rows")
        reason = ("privacy: " + "; ".join(public)) if public else (
            f"privacy: membership-inference AUC at most {self.max_auc}; no excess verbatim copies of training rows")
        return allowed, auc_ok, copy_ok, reason

    def supports_dp_verdict(self, data: AuditData) -> bool:
        return self.id_col is None  # long tables share a vocabulary read from every frame

    def dp_cells(self, data: AuditData) -> np.ndarray:
        """Each real person's histogram cell, members (training rows) first, then non-members (holdout rows).

        Cells ``0 .. 50`` are members (0: an exact copy of a release row, then
        50 bins of the distance in (0, 1]), ``51 .. 101`` non-members. Column
        kinds and numeric ranges come from the public schema, else from the
        release, so a person's cell depends on that person and the release only.
        """
        cols = list(data.synthetic.columns)
        schema = self.schema if self.schema is not None else (data.schema if is_schema(data.schema) else None)
        (num_s, num_m, num_h), (cat_s, cat_m, cat_h), _, _ = gower_encode(
            [data.synthetic, data.train[cols], data.holdout[cols]], schema=schema, range_from=0)
        dist, _, _ = gower_min_distances(num_s, cat_s, np.vstack([num_m, num_h]), np.vstack([cat_m, cat_h]))
        return _distance_cells(dist) + np.r_[np.zeros(len(num_m), int), np.full(len(num_h), _DP_CELLS)]

    def dp_verdict(self, data: AuditData, answers, epsilon: float) -> tuple[bool, bool, str]:
        noisy = answers.histogram(self.dp_cells(data)[:, None], 2 * _DP_CELLS, epsilon=epsilon,
                                  target=f"audit verdict {self.name!r}: distances to the closest release row")
        members, nonmembers = np.maximum(noisy, 0).astype(float).reshape(2, _DP_CELLS)
        n_m, n_h = members.sum(), nonmembers.sum()
        if n_m < 1 or n_h < 1:
            return True, False, "privacy: too few people in the noisy counts to compare members and non-members"
        farther = np.cumsum(nonmembers[::-1])[::-1] - nonmembers  # non-members strictly farther than each cell
        auc = float((members * (farther + 0.5 * nonmembers)).sum() / (n_m * n_h))
        _, auc_ok, copy_ok, reason = self._rule(auc, members[0] / n_m, nonmembers[0] / n_h, min(n_m, n_h))
        return True, auc_ok and copy_ok, reason


def _distance_cells(distances: np.ndarray) -> np.ndarray:
    """Cell of each distance: 0 for an exact copy, else one of ``_DP_BINS`` equal bins of (0, 1] (NaN: the last)."""
    d = np.nan_to_num(np.asarray(distances, dtype=float), nan=1.0)
    return np.where(d <= 0, 0, 1 + np.minimum(np.floor(d * _DP_BINS), _DP_BINS - 1)).astype(np.int64)
