"""The noise source and discrete samplers, tested against their exact distributions."""

import math
import pickle

import numpy as np
import pytest
from scipy import stats

from skdpsynth.privacy import (
    BudgetAccountant,
    NoiseSource,
    discrete_gaussian_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    stability_histogram,
    stability_threshold,
)


def _chi2_against(draws: np.ndarray, pmf) -> float:
    """p-value of a chi-square goodness-of-fit test of integer draws against ``pmf``.

    Each tail, beyond the first and last cells expected to hold at least 5 draws, is pooled into that cell, with
    the pmf's whole tail mass (its support widened well past the draws): a lone far draw, as likely as the pmf
    says, then no longer makes a cell of expectation 0.01 hold 1 (which failed about 2 % of runs at sigma 0.7).
    """
    lo, hi = int(draws.min()), int(draws.max())
    width = hi - lo + 50
    support = np.arange(lo - width, hi + width + 1)
    p = pmf(support)
    p = p / p.sum()
    observed = np.bincount(draws - support[0], minlength=len(support)).astype(float)
    expected = p * len(draws)
    kept = np.flatnonzero(expected >= 5)
    first, last = kept[0], kept[-1]
    obs = observed[first:last + 1].copy()
    exp = expected[first:last + 1].copy()
    obs[0] += observed[:first].sum()
    exp[0] += expected[:first].sum()
    obs[-1] += observed[last + 1:].sum()
    exp[-1] += expected[last + 1:].sum()
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


@pytest.mark.parametrize("scale", [0.5, 2.0, 30.0])
def test_discrete_laplace_matches_its_pmf(scale):
    draws = NoiseSource.secure().discrete_laplace(scale, 200_000)
    pmf = lambda k: np.exp(-np.abs(k) / scale)  # noqa: E731
    assert _chi2_against(draws, pmf) > 1e-4
    alpha = math.exp(-1 / scale)
    assert draws.var() == pytest.approx(2 * alpha / (1 - alpha) ** 2, rel=0.03)


@pytest.mark.parametrize("sigma", [0.7, 3.0, 50.0])
def test_discrete_gaussian_matches_its_pmf(sigma):
    draws = NoiseSource.secure().discrete_gaussian(sigma, 200_000)
    pmf = lambda k: np.exp(-(k.astype(float) ** 2) / (2 * sigma**2))  # noqa: E731
    assert _chi2_against(draws, pmf) > 1e-4
    assert abs(draws.mean()) < 5 * sigma / math.sqrt(len(draws))


def test_a_chi2_test_would_see_the_wrong_distribution():
    # the goodness-of-fit test above can fail: a discrete Laplace is not a discrete Gaussian of the same variance
    draws = NoiseSource.secure().discrete_laplace(3.0, 200_000)
    sd = draws.std()
    assert _chi2_against(draws, lambda k: np.exp(-(k.astype(float) ** 2) / (2 * sd**2))) < 1e-6


def test_secure_source_is_not_reproducible_and_not_picklable():
    a, b = NoiseSource.secure(), NoiseSource.secure()
    assert not np.array_equal(a.discrete_gaussian(10.0, 100), b.discrete_gaussian(10.0, 100))
    with pytest.raises(TypeError, match="never pickled"):
        pickle.dumps(a)
    assert not a.reproducible


def test_reproducible_source_repeats_and_says_so():
    a, b = NoiseSource.reproducible_from(5), NoiseSource.reproducible_from(5)
    assert np.array_equal(a.discrete_laplace(2.0, 50), b.discrete_laplace(2.0, 50))
    assert a.reproducible
    acc = BudgetAccountant(1.0, 0.0, noise="reproducible")
    laplace_mechanism([1.0], sensitivity=1.0, epsilon=1.0, noise=a, accountant=acc, target="t")
    assert acc.records[0].noise == "reproducible"


def test_real_valued_releases_lie_on_a_public_grid():
    acc = BudgetAccountant(5.0, 1e-6, delta_zcdp=1e-6)
    out = laplace_mechanism([0.1234567, 3.3], sensitivity=1.0, epsilon=1.0, noise=NoiseSource.secure(),
                            accountant=acc, target="x")
    g = acc.records[0].details["grid"]
    assert np.allclose(out / g, np.round(out / g))
    out = gaussian_mechanism(np.linspace(0, 1, 10), l2_sensitivity=1.0, rho=0.1, noise=NoiseSource.secure(),
                             accountant=acc, target="y")
    g = acc.records[1].details["grid"]
    assert np.allclose(out / g, np.round(out / g))


def test_discrete_gaussian_mechanism_returns_integers_with_the_stated_sigma():
    acc = BudgetAccountant(10.0, 1e-6, delta_zcdp=1e-6)
    out = discrete_gaussian_mechanism(np.zeros(50_000, dtype=int), l2_sensitivity=1.0, rho=0.02,
                                      noise=NoiseSource.secure(), accountant=acc, target="counts")
    assert out.dtype == np.int64
    assert out.std() == pytest.approx(acc.records[0].noise_scale, rel=0.03)


def test_stability_histogram_refuses_uncounted_candidates():
    acc = BudgetAccountant(1.0, 1e-3)
    with pytest.raises(ValueError, match="counted"):
        stability_histogram([3, 0], contribution_bound=1, epsilon=1.0, delta=1e-3, noise=NoiseSource.secure(),
                            accountant=acc, target="keys")
    assert acc.records == ()


def test_stability_threshold_bounds_the_release_of_a_singleton():
    # a key held by one person (count 1) is released with probability <= delta / k; measured with k = 1
    eps, delta, trials = 1.0, 0.05, 40_000
    released, _ = stability_histogram(np.ones(trials, dtype=int), contribution_bound=1, epsilon=eps, delta=delta,
                                      noise=NoiseSource.secure(), accountant=BudgetAccountant(eps, delta),
                                      target="singletons")
    rate = released.mean()
    upper = stats.beta.ppf(0.999, released.sum() + 1, trials - released.sum())
    assert rate <= delta and upper <= 1.2 * delta
    assert stability_threshold(1, eps, delta) == 1 + math.ceil(math.log(1 / delta))
