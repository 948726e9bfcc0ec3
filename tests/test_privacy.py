"""Privacy core: mechanisms charge before noise, noise has the stated scale, composition is right."""

import math

import numpy as np
import pytest

from skdpsynth import PrivacyBudgetError
from skdpsynth.privacy import (
    BudgetAccountant,
    BudgetRecord,
    NoiseSource,
    approx_dp_to_zcdp,
    compose,
    exponential_mechanism,
    gaussian_mechanism,
    geometric_mechanism,
    geometric_variance,
    laplace_mechanism,
    zcdp_to_approx_dp,
)


def rng():
    return NoiseSource.reproducible_from(123)


def seeded(i):
    return NoiseSource.reproducible_from(i)


def test_laplace_noise_scale_and_record():
    acc = BudgetAccountant(1.0, 0.0)
    out = laplace_mechanism(np.zeros(200_000), sensitivity=2.0, epsilon=0.5, noise=rng(), accountant=acc, target="t")
    # Laplace(b) has variance 2 b^2 with b = sensitivity / epsilon = 4
    assert out.var() == pytest.approx(2 * 16, rel=0.03)
    (rec,) = acc.records
    # the scale is widened by the rounding to the public grid (at most 0.1 %)
    assert rec.kind == "pure" and rec.epsilon == 0.5 and rec.sensitivity == 2.0
    assert rec.noise_scale == pytest.approx(4.0, rel=1e-3) and rec.noise_scale >= 4.0


def test_geometric_is_integer_with_discrete_laplace_variance():
    acc = BudgetAccountant(1.0, 0.0)
    out = geometric_mechanism(np.full(200_000, 10), sensitivity=1, epsilon=1.0, noise=rng(), accountant=acc, target="h")
    assert out.dtype == np.int64
    alpha = math.exp(-1.0)
    assert out.mean() == pytest.approx(10, abs=0.02)
    assert out.var() == pytest.approx(2 * alpha / (1 - alpha) ** 2, rel=0.03)
    wide = geometric_mechanism(np.zeros(200_000, dtype=np.int64), sensitivity=3, epsilon=1.0, noise=rng(),
                               accountant=BudgetAccountant(1.0, 0.0), target="h")
    assert wide.var() == pytest.approx(geometric_variance(3.0, 1.0), rel=0.03)  # the variance NPGC plans with
    assert geometric_variance(1.0, 1.0) == pytest.approx(2 * alpha / (1 - alpha) ** 2)


def test_gaussian_sigma_matches_zcdp():
    acc = BudgetAccountant(10.0, 1e-6, delta_zcdp=1e-6)
    out = gaussian_mechanism(np.zeros(100_000), l2_sensitivity=3.0, rho=0.5, noise=rng(), accountant=acc, target="g")
    assert out.std() == pytest.approx(3.0 / math.sqrt(1.0), rel=0.02)
    assert acc.records[0].rho == 0.5 and acc.records[0].kind == "zcdp"


def test_exponential_mechanism_prefers_high_utility_and_is_random_at_low_eps():
    acc = BudgetAccountant(1e6, 0.0)
    picks = [exponential_mechanism([0, 0, 1000, 0], sensitivity=1.0, epsilon=1.0, noise=seeded(i),
                                   accountant=acc, target="e") for i in range(50)]
    assert set(picks) == {2}
    low = [exponential_mechanism([0, 0, 1, 0], sensitivity=1.0, epsilon=1e-3, noise=seeded(i),
                                 accountant=acc, target="e") for i in range(400)]
    assert len(set(low)) == 4


def test_overspend_raises_before_noise_and_records_nothing():
    acc = BudgetAccountant(1.0, 0.0)
    laplace_mechanism([1.0], sensitivity=1, epsilon=0.7, noise=rng(), accountant=acc, target="a")
    noise = rng()
    state = noise._generator.bit_generator.state
    with pytest.raises(PrivacyBudgetError, match="needs epsilon=1.1"):
        laplace_mechanism([1.0], sensitivity=1, epsilon=0.4, noise=noise, accountant=acc, target="b")
    assert noise._generator.bit_generator.state == state  # no noise was drawn
    assert len(acc.records) == 1


@pytest.mark.parametrize("eps", [0, -1, math.inf, math.nan, "1"])
def test_invalid_epsilon(eps):
    with pytest.raises(PrivacyBudgetError):
        BudgetAccountant(eps, 1e-6)


def test_zcdp_conversion_is_tighter_than_the_simple_bound_and_inverts():
    for rho in (0.01, 0.1, 1.0):
        eps = zcdp_to_approx_dp(rho, 1e-6)
        assert eps <= rho + 2 * math.sqrt(rho * math.log(1e6)) + 1e-12
        assert eps > rho
    for eps in (0.5, 1.0, 5.0):
        rho = approx_dp_to_zcdp(eps, 1e-5)
        assert zcdp_to_approx_dp(rho, 1e-5) <= eps
        assert zcdp_to_approx_dp(rho * 1.01, 1e-5) > eps


def test_compose_within_and_across_cohorts():
    recs = [
        BudgetRecord("laplace", "a", "pure", epsilon=0.3, cohort=0),
        BudgetRecord("stab", "b", "approx", epsilon=0.2, delta=1e-7, cohort=0),
        BudgetRecord("gauss", "c", "zcdp", rho=0.01, cohort=0),
        BudgetRecord("laplace", "a", "pure", epsilon=0.4, cohort=1),
    ]
    conv = zcdp_to_approx_dp(0.01, 1e-6)
    par = compose(recs, delta_zcdp={0: 1e-6, 1: 1e-6}, composition="parallel")
    assert par.per_cohort[0] == pytest.approx((0.5 + conv, 1e-7 + 1e-6))
    assert par.per_cohort[1] == pytest.approx((0.4, 0.0))
    assert par.epsilon == pytest.approx(0.5 + conv)
    seq = compose(recs, delta_zcdp={0: 1e-6, 1: 1e-6}, composition="sequential")
    assert seq.epsilon == pytest.approx(0.9 + conv)
    assert seq.is_private


def test_non_private_records_make_epsilon_infinite():
    spent = compose([BudgetRecord("exact (non-private)", "x", "none", epsilon=math.inf)])
    assert math.isinf(spent.epsilon) and not spent.is_private


def test_accountant_refuses_non_private_under_budget():
    acc = BudgetAccountant(1.0, 0.0)
    with pytest.raises(PrivacyBudgetError, match="non-private"):
        acc.spend(BudgetRecord("exact", "x", "none", epsilon=math.inf))


def test_remaining_rho_fills_budget_exactly():
    acc = BudgetAccountant(1.0, 1e-6, delta_zcdp=1e-6)
    laplace_mechanism([0.0], sensitivity=1, epsilon=0.2, noise=rng(), accountant=acc, target="dom")
    rho = acc.remaining_rho()  # counts the 0.2 already charged
    gaussian_mechanism([0.0], l2_sensitivity=1, rho=rho, noise=rng(), accountant=acc, target="rest")
    eps, delta = acc.spent()
    assert eps == pytest.approx(1.0, rel=1e-6) and eps <= 1.0 + 1e-9
    assert delta == 1e-6


def test_a_whole_zcdp_budget_reads_back_as_at_most_the_request():
    # epsilon 1 -> rho -> epsilon used to read 1.0000000000000007, so `privacy_spent_.epsilon <= 1.0` was False
    from skdpsynth import NPGCSynthesizer
    from skdpsynth.datasets import make_learning_habits

    data = make_learning_habits(300, n_weeks=2, random_state=0)
    for epsilon in (0.3, 1.0, 3.0):
        spent = NPGCSynthesizer(epsilon=epsilon, schema=data.schema, random_state=0).fit(data.frame).privacy_spent_
        assert spent.epsilon <= epsilon and spent.epsilon == pytest.approx(epsilon, rel=1e-6)


def test_inverse_variance_mean_weights_by_precision_and_exact_estimates_win():
    from skdpsynth.privacy._postprocess import inverse_variance_mean

    mean, var = inverse_variance_mean([100.0, 110.0], [1.0, 4.0])
    assert mean == pytest.approx((100 / 1 + 110 / 4) / (1 / 1 + 1 / 4)) and var == pytest.approx(0.8)
    assert inverse_variance_mean([100.0, 97.0, 140.0], [0.0, 0.0, 9.0]) == (98.5, 0.0)
