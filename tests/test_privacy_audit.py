"""Empirical privacy audit: bounds, attacks, honest mechanisms below their claim, broken controls caught."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import binomtest

from skdpsynth.audit._privacy_audit import PrivacyAuditResult, audit_privacy, claimed_mu
from skdpsynth.audit._privacy_bounds import (
    ThresholdTest,
    clopper_pearson,
    epsilon_lower_bound,
    evaluate_test,
    mu_implied_by_epsilon,
    mu_lower_bound,
    select_test,
)
from skdpsynth.audit._privacy_canary import Neighbours, audit_schema, make_neighbours
from skdpsynth.privacy import BudgetAccountant, NoiseSource, discrete_gaussian_mechanism, geometric_mechanism
from skdpsynth.synthesizers._marginals import DPMarginalsSynthesizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from privacy_audit import HalfNoiseMarginals, InferredDomainMarginals, stored_seed_marginals  # noqa: E402

PER_RATE = 1 - math.sqrt(0.95)  # each of the two rates' level, so that both hold with probability 0.95


# ------------------------------------------------------------------------------------------ statistics
@pytest.mark.parametrize("k, n", [(0, 50), (3, 50), (17, 200), (200, 200)])
def test_clopper_pearson_matches_the_exact_binomial_interval(k, n):
    two_sided = binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
    assert clopper_pearson(k, n, alpha=0.05) == pytest.approx(two_sided.high, rel=1e-9)
    assert clopper_pearson(k, n, alpha=0.05, side="lower") == pytest.approx(two_sided.low, abs=1e-12)


def test_clopper_pearson_vectorised_and_validated():
    out = clopper_pearson(np.array([0, 1, 2]), 10)
    assert out.shape == (3,) and np.all(np.diff(out) > 0)
    assert clopper_pearson(0, 100) == pytest.approx(1 - 0.05 ** (1 / 100))
    with pytest.raises(ValueError):
        clopper_pearson(3, 2)
    with pytest.raises(ValueError):
        clopper_pearson(1, 2, side="both")


def test_epsilon_and_mu_bounds_of_a_perfect_and_a_useless_test():
    u = 1 - PER_RATE ** (1 / 500)
    assert epsilon_lower_bound(0, 500, 0, 500) == pytest.approx(math.log((1 - u) / u))
    assert mu_lower_bound(0, 500, 0, 500) == pytest.approx(2 * ndtri(1 - u))
    assert epsilon_lower_bound(250, 500, 250, 500) == 0.0
    assert mu_lower_bound(250, 500, 250, 500) == 0.0
    # delta lowers the bound; the two directions are symmetric
    assert epsilon_lower_bound(10, 500, 100, 500, delta=0.1) < epsilon_lower_bound(10, 500, 100, 500)
    assert epsilon_lower_bound(10, 500, 100, 500) == pytest.approx(epsilon_lower_bound(100, 500, 10, 500))
    assert epsilon_lower_bound(np.array([0, 250]), 500, np.array([0, 250]), 500).shape == (2,)


def test_mu_implied_by_epsilon_is_the_diagonal_of_the_dp_tradeoff():
    eps = 1.0
    a = 1 / (1 + math.e)
    assert mu_implied_by_epsilon(eps) == pytest.approx(ndtri(1 - a) - ndtri(a))
    assert mu_implied_by_epsilon(math.inf) == math.inf


def test_select_test_finds_the_orientation_and_the_cut():
    out, inn = np.array([0.0, 1, 2, 3] * 50), np.array([5.0, 6, 7, 8] * 50)
    test = select_test(out, inn)
    assert test.sign == 1 and 3 < test.threshold <= 5
    flipped = select_test(-out, -inn, measure="mu")
    assert flipped.sign == -1
    ev = evaluate_test(test, out, inn)
    assert ev["fpr"] == ev["fnr"] == 0 and ev["epsilon_lower"] > 3.5
    assert ThresholdTest(4.0).counts(out, inn) == (0, 0)


def _bounds_from_draws(draw_out: np.ndarray, draw_in: np.ndarray, alpha: float = 0.05) -> dict:
    k = len(draw_out) // 2
    test = select_test(draw_out[:k], draw_in[:k])
    mu_test = select_test(draw_out[:k], draw_in[:k], measure="mu")
    ev = evaluate_test(test, draw_out[k:], draw_in[k:], alpha=alpha)
    ev["mu_lower"] = evaluate_test(mu_test, draw_out[k:], draw_in[k:], alpha=alpha)["mu_lower"]
    return ev


# A valid 95% bound exceeds the epsilon of a mechanism it tests tightly with probability up to 5%: the
# mechanism-level tests below use seeded noise (deterministic), the audits of synthesizers (fresh noise) check
# the claim at level 1 - 1e-3 (``violation_at``), so that they fail by chance at most once in a thousand runs.
STRICT = 1e-3


@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_geometric_mechanism_audit_is_tight_and_below_the_claim(eps):
    # 4,000 releases per neighbour of one count (the canary's cell: 7 without, 8 with)
    noise = NoiseSource.reproducible_from(int(eps))
    n = 4000
    kw = {"sensitivity": 1.0, "epsilon": eps, "noise": noise, "accountant": BudgetAccountant(2 * eps, 0.0),
          "target": "canary cell"}
    out = geometric_mechanism(np.full(n, 7), **kw).astype(float)
    inn = geometric_mechanism(np.full(n, 8), **kw).astype(float)
    assert _bounds_from_draws(out, inn)["epsilon_lower"] >= eps / 2
    strict = _bounds_from_draws(out, inn, alpha=STRICT)
    assert strict["epsilon_lower"] <= eps and strict["mu_lower"] <= mu_implied_by_epsilon(eps)


def test_discrete_gaussian_audit_stays_below_the_noise_mu():
    rho = 0.5  # sigma = 1: mu = 1
    acc = BudgetAccountant(100.0, 1e-6, delta_zcdp=1e-6)
    kw = {"l2_sensitivity": 1.0, "rho": rho, "noise": NoiseSource.reproducible_from(0), "accountant": acc,
          "target": "cell"}
    out = discrete_gaussian_mechanism(np.full(4000, 7), **kw).astype(float)
    inn = discrete_gaussian_mechanism(np.full(4000, 8), **kw).astype(float)
    assert _bounds_from_draws(out, inn)["mu_lower"] >= 0.5
    assert _bounds_from_draws(out, inn, alpha=STRICT)["mu_lower"] <= math.sqrt(2 * rho)


# ------------------------------------------------------------------------------------------ neighbours
def test_table_neighbours_differ_by_one_unique_canary():
    nb = make_neighbours(DPMarginalsSynthesizer(), n_people=50, random_state=0)
    assert len(nb.with_canary) == 50 and len(nb.without) == 49
    canary = nb.canary.iloc[0]
    assert canary["course"] not in set(nb.without["course"]) and canary["age"] > nb.without["age"].max()
    assert nb.schema == audit_schema() and canary["course"] in audit_schema()["course"].categories
    with pytest.raises(ValueError):
        make_neighbours(DPMarginalsSynthesizer(), n_people=1)


# ------------------------------------------------------------------------------------------ the audit
def test_honest_dp_marginals_stay_below_their_claim():
    res = audit_privacy(DPMarginalsSynthesizer(epsilon=1.0), trials=300, progress=False, random_state=0)
    assert isinstance(res, PrivacyAuditResult)
    assert res.epsilon == 1.0 and res.delta == 0.0 and res.publishable
    assert res.epsilon_lower >= 0.0 and res.mu_claimed is None and res.mu_implied == mu_implied_by_epsilon(1.0)
    assert not res.violation_at(STRICT)
    assert res.bounds_at(0.05) == pytest.approx((res.epsilon_lower, res.mu_lower))
    assert res.bounds_at(STRICT)[0] <= res.epsilon_lower
    assert res.trials == 300 and len(res.scores_out) == len(res.scores_in) == 300 and res.selection_trials == 150
    json.dumps(res.to_dict())


def _one_column(nb: Neighbours) -> Neighbours:
    """The canary's category alone: all of the budget on one cell (the strongest test for a broken scale)."""
    cols = ["course"]
    return Neighbours(nb.without[cols], nb.with_canary[cols], nb.canary[cols], "table",
                      {"schema": audit_schema().select(cols)})


@pytest.mark.parametrize("control", ["half noise", "stored seed", "unnoised domain"])
def test_broken_controls_are_caught(control):
    make = {"half noise": HalfNoiseMarginals, "stored seed": stored_seed_marginals,
            "unnoised domain": InferredDomainMarginals}[control]
    est = make(epsilon=1.0) if control != "stored seed" else make(1.0)
    nb = _one_column(make_neighbours(est, random_state=1)) if control == "half noise" else None
    res = audit_privacy(est, trials=400 if control == "half noise" else 200, neighbours=nb, progress=False,
                        random_state=0)
    assert res.epsilon == pytest.approx(1.0)
    assert res.violation and res.epsilon_lower > 1.0
    assert res.publishable is (control != "stored seed")


def test_black_box_and_callable_attacks_run():
    est = DPMarginalsSynthesizer(epsilon=4.0)
    bb = audit_privacy(est, attack="black-box", trials=40, progress=False, random_state=0)
    assert bb.attack == "black-box" and not bb.violation_at(STRICT)

    def noisy_canary_count(fitted, neighbours):
        return float(fitted.counts_[0][-1])  # the canary's category is the schema's last

    cb = audit_privacy(est, attack=noisy_canary_count, trials=40, progress=False, random_state=0)
    assert cb.attack == "noisy_canary_count" and not cb.violation_at(STRICT)


def test_claimed_mu_only_for_gaussian_logs():
    est = DPMarginalsSynthesizer(epsilon=1.0, schema=audit_schema()).fit(
        make_neighbours(DPMarginalsSynthesizer(), random_state=0).with_canary)
    assert claimed_mu(est) is None


@pytest.mark.parametrize("kwargs", [{"trials": 2}, {"selection_fraction": 1.0}, {"alpha": 0.0},
                                    {"attack": "grey-box"}, {"attack": 3}])
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        audit_privacy(DPMarginalsSynthesizer(), progress=False, **kwargs)


def test_sequence_neighbours_and_audit_below_the_claim():
    from skdpsynth.synthesizers import DPHistSeqSynthesizer

    est = DPHistSeqSynthesizer(epsilon=1.0, max_length=4)
    nb = make_neighbours(est, n_people=30, random_state=0)
    assert nb.kind == "sequence" and nb.public_params == {"vocabulary": ["a", "b", "c", "x"]}
    assert len(nb.canary) == 4 and set(nb.canary["event"]) == {"x"} and "x" not in set(nb.without["event"])
    assert nb.with_canary["id"].nunique() == 30
    res = audit_privacy(est, trials=60, n_people=30, progress=False, random_state=0)
    assert res.n_people == 30 and not res.violation_at(STRICT) and res.epsilon == pytest.approx(1.0)


def test_gaussian_synthesizer_reports_the_mu_of_its_noise():
    from skdpsynth.synthesizers import MSTSynthesizer

    nb = make_neighbours(MSTSynthesizer(), random_state=0)
    fitted = MSTSynthesizer(epsilon=4.0, schema=audit_schema()).fit(nb.with_canary)
    rho = sum(r.rho for r in fitted.budget_log_)
    assert claimed_mu(fitted) == pytest.approx(math.sqrt(2 * rho))
    res = audit_privacy(MSTSynthesizer(epsilon=4.0), trials=60, neighbours=nb, progress=False, random_state=0)
    assert res.mu_claimed == pytest.approx(math.sqrt(2 * rho))
    assert res.mu_implied is None and not res.violation_at(STRICT)
