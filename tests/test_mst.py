"""MSTSynthesizer: contract, zCDP budget split, tree recovery, consistency helpers, real-data 2-way error."""

import math
import pickle
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.utils.estimator_checks import check_estimator

from skdpsynth import MSTSynthesizer, PrivacyBudgetError, TableSchema
from skdpsynth.privacy import NoiseSource, project_to_simplex, zcdp_to_approx_dp
from skdpsynth.synthesizers._engine import pool, size_estimate
from skdpsynth.synthesizers._graphical_model import Measurement
from skdpsynth.utils._random import check_random_state, cohort_seed_sequence
from skdpsynth.utils.estimator_checks import check_param_validation, check_synthesizer


def _chain(n, rng):
    """a -> b -> c -> d strongly dependent (each copies its parent 85 % of the time), e independent."""
    levels = np.array(["p", "q", "r", "s"], dtype=object)
    a = rng.integers(4, size=n)
    cols = [a]
    for _ in range(3):
        prev = cols[-1]
        cols.append(np.where(rng.random(n) < 0.85, prev, rng.integers(4, size=n)))
    e = rng.integers(4, size=n)
    return pd.DataFrame({k: levels[v] for k, v in zip("abcde", [*cols, e])})


_CHAIN_SCHEMA = TableSchema.from_dict({k: {"kind": "categorical", "categories": ["p", "q", "r", "s"],
                                           "nullable": False} for k in "abcde"})


def test_sklearn_check_estimator():
    # scikit-learn's checks fit 1-40 rows: no DP domain estimate is possible there (it refuses before spending,
    # see tests/test_domain.py), so the API checks run on the non-private path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(MSTSynthesizer(epsilon=None, random_state=0))


@pytest.mark.parametrize("epsilon", [1.0, None])
def test_synthesizer_checks(mixed_frame, mixed_schema, epsilon):
    check_synthesizer(MSTSynthesizer(epsilon=epsilon, delta=1e-6, schema=mixed_schema, random_state=0), mixed_frame)


def test_synthesizer_checks_without_schema(mixed_frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check_synthesizer(MSTSynthesizer(epsilon=8.0, delta=1e-3, random_state=0), mixed_frame)


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 5.0])
def test_budget_split_in_thirds_and_never_exceeded(epsilon):
    rng = np.random.default_rng(0)
    X = _chain(2000, rng)
    est = MSTSynthesizer(epsilon=epsilon, delta=1e-9, schema=_CHAIN_SCHEMA, random_state=0).fit(X)
    log = est.budget_log_
    assert all(r.kind == "zcdp" for r in log)
    one = sum(r.rho for r in log if r.target.startswith("1-way"))
    sel = sum(r.rho for r in log if "selection" in r.target)
    two = sum(r.rho for r in log if r.target.startswith("2-way"))
    assert math.isclose(one, est.rho_ / 3, rel_tol=1e-9)
    assert math.isclose(sel, est.rho_ / 3, rel_tol=1e-9)
    assert math.isclose(two, est.rho_ / 3, rel_tol=1e-9)
    assert len([r for r in log if r.target.startswith("2-way")]) == 4  # d - 1 edges
    assert len([r for r in log if "selection" in r.target]) == 4  # d - 1 exponential-mechanism steps
    # every Gaussian noise scale matches its share: sigma = 1 / sqrt(2 rho_i)
    for r in log:
        if r.mechanism == "discrete gaussian":
            assert math.isclose(r.noise_scale, 1 / math.sqrt(2 * r.rho), rel_tol=1e-9)
            assert r.sensitivity == 1.0
    spent = est.privacy_spent_
    assert spent.epsilon <= epsilon * (1 + 1e-9)
    assert math.isclose(spent.epsilon, zcdp_to_approx_dp(est.rho_, 1e-9), rel_tol=1e-9)
    assert spent.epsilon > 0.99 * epsilon  # the budget is used, not wasted


def test_tree_is_recovered_and_dependence_kept():
    rng = np.random.default_rng(1)
    X = _chain(5000, rng)
    est = MSTSynthesizer(epsilon=2.0, schema=_CHAIN_SCHEMA, random_state=0).fit(X)
    edges = {frozenset(e) for e in est.edges_}
    assert {frozenset((0, 1)), frozenset((1, 2)), frozenset((2, 3))} <= edges
    synth = est.sample(20000, random_state=0)
    for u, v in [("a", "b"), ("b", "c"), ("c", "d")]:
        same_real = (X[u] == X[v]).mean()
        same_syn = (synth[u] == synth[v]).mean()
        assert abs(same_real - same_syn) < 0.05, (u, v, same_real, same_syn)
    # e is independent of everything in the data and stays so
    assert abs((synth["a"] == synth["e"]).mean() - 0.25) < 0.03


def test_non_private_tree_is_the_exact_maximum_spanning_tree():
    rng = np.random.default_rng(2)
    X = _chain(3000, rng)
    est = MSTSynthesizer(epsilon=None, schema=_CHAIN_SCHEMA, random_state=0).fit(X)
    assert {frozenset(e) for e in est.edges_} >= {frozenset((0, 1)), frozenset((1, 2)), frozenset((2, 3))}
    assert not est.privacy_spent_.is_private
    # exact tables: the model's 1-way and tree 2-way marginals equal the data's
    assert est.model_.total == len(X)
    for j, col in enumerate("abcde"):
        freq = X[col].value_counts(normalize=True).reindex(["p", "q", "r", "s"]).to_numpy()
        np.testing.assert_allclose(est.model_.project((j,)) / len(X), freq, atol=1e-4)
    for a, b in est.edges_:
        np.testing.assert_allclose(est.model_.project((a, b)), est.two_way_counts_[(a, b)], atol=0.5)


def test_rare_cells_are_compressed_and_decoded_inside_the_merged_set():
    rng = np.random.default_rng(3)
    n = 3000
    cats = [f"c{i}" for i in range(12)]
    p = np.r_[[0.45, 0.45], np.full(10, 0.01)]
    X = pd.DataFrame({"x": rng.choice(cats, n, p=p), "y": rng.choice(["u", "v"], n)})
    schema = TableSchema.from_dict({"x": {"kind": "categorical", "categories": cats, "nullable": False},
                                    "y": {"kind": "categorical", "categories": ["u", "v"], "nullable": False}})
    est = MSTSynthesizer(epsilon=0.5, schema=schema, random_state=0).fit(X)
    merged = max(len(g) for g in est.compression_.groups[0])
    assert merged >= 5 and est.compression_.sizes[0] == 12 - merged + 1  # the 1 % categories fall below 3 sigma
    out = est.sample(5000, random_state=1)
    assert set(out["x"]) <= set(cats)
    assert 0.05 < out["x"].isin(cats[2:]).mean() < 0.2  # the merged mass (10 % real) is kept roughly


def test_partial_fit_keeps_the_tree_and_charges_each_cohort():
    rng = np.random.default_rng(4)
    est = MSTSynthesizer(epsilon=1.0, schema=_CHAIN_SCHEMA, random_state=0)
    est.partial_fit(_chain(2000, rng))
    edges = list(est.edges_)
    est.partial_fit(_chain(2000, rng))
    assert est.edges_ == edges
    assert est.n_cohorts_ == 2
    spent = est.privacy_spent_
    assert len(spent.per_cohort) == 2
    assert all(e <= 1.0 + 1e-9 for e, _ in spent.per_cohort)
    assert not any("selection" in r.target for r in est.budget_log_ if r.cohort == 1)


def test_bad_input_fails_before_any_budget(mixed_frame, mixed_schema):
    for params, error in [({"n_bins": 0}, ValueError), ({"epsilon": -1.0}, PrivacyBudgetError)]:
        est = MSTSynthesizer(schema=mixed_schema, random_state=0, **params)
        with pytest.raises(error):
            est.fit(mixed_frame)
        assert not hasattr(est, "budget_log_") or len(est.budget_log_) == 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-50, 50), min_size=1, max_size=30), st.floats(0.1, 100))
def test_project_simplex(values, total):
    x = np.array(values)
    p = project_to_simplex(x, total)
    assert (p >= 0).all()
    assert math.isclose(p.sum(), total, rel_tol=1e-9)
    # optimality: no feasible point of a random sample is closer
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.dirichlet(np.ones(len(x))) * total
        assert np.sum((x - p) ** 2) <= np.sum((x - q) ** 2) + 1e-9


def test_size_estimate_weights_totals_by_inverse_variance_and_exact_totals_win():
    rng = np.random.default_rng(5)
    n, cells = 2000, [4, 40]
    # a marginal of many cells has a noisier total: the estimate leans on the one with few cells
    meas = [Measurement((j,), rng.multinomial(n, np.full(k, 1 / k)) + rng.normal(0, 30, k), 900.0)
            for j, k in enumerate(cells)]
    w = np.array([1 / (900 * k) for k in cells])
    totals = np.array([m.counts.sum() for m in meas])
    assert math.isclose(size_estimate(meas), float(w @ totals / w.sum()))
    assert size_estimate([*meas, Measurement((2,), np.array([n - 5, 5]), 0.0)]) == n
    assert size_estimate([Measurement((0,), np.array([-40.0, 10.0]), 4.0)]) == 1.0  # at least one person
    # cohorts of different people add up, counts and variances
    pooled = {m.clique: m for m in pool([meas[:1], meas[:1]])}
    np.testing.assert_allclose(pooled[(0,)].counts, 2 * meas[0].counts)
    np.testing.assert_allclose(pooled[(0,)].variance, 1800.0)


@pytest.mark.realdata
def test_adult_two_way_error_matches_private_pgm(data_dir):
    """Mean 2-way TVD on Adult at eps 1, delta 1e-9 within 10 % of private-pgm's 0.052-0.078 (METHODS.md)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from _tabular_data import load_tabular, two_way_tvd

    train, _, schema = load_tabular("adult", data_dir)
    tvds = []
    for seed in (0, 1):
        est = MSTSynthesizer(epsilon=1.0, delta=1e-9, schema=schema, n_bins=100, random_state=seed).fit(train)
        tvds.append(two_way_tvd(train, est.sample(len(train), random_state=seed), schema, n_bins=100))
        assert est.privacy_spent_.epsilon <= 1.0 + 1e-9
    assert 0.052 * 0.9 <= np.mean(tvds) <= 0.078 * 1.1, tvds


def test_single_column_spends_everything_on_its_marginal():
    X = pd.DataFrame({"a": np.random.default_rng(6).choice(["p", "q"], 500)})
    schema = TableSchema.from_dict({"a": {"kind": "categorical", "categories": ["p", "q"], "nullable": False}})
    est = MSTSynthesizer(epsilon=1.0, schema=schema, random_state=0).fit(X)
    (rec,) = est.budget_log_
    assert math.isclose(rec.rho, est.rho_) and est.edges_ == []
    assert est.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-6)
    assert set(est.sample(50, random_state=0)["a"]) <= {"p", "q"}


# ------------------------------------------------------------------------------------------ new core
def _random_objects(obj, path="est", seen=None, depth=0):
    """Paths of every NoiseSource, SeedSequence, Generator or BitGenerator reachable from ``obj``."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 8:
        return []
    seen.add(id(obj))
    if isinstance(obj, (NoiseSource, np.random.SeedSequence, np.random.Generator, np.random.BitGenerator)):
        return [path]
    if isinstance(obj, dict):
        items = [(f"{path}[{k!r}]", v) for k, v in obj.items()]
    elif isinstance(obj, (list, tuple)):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(obj)]
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        items = [(f"{path}.{k}", v) for k, v in vars(obj).items()]
    else:
        return []
    return [p for sub, child in items for p in _random_objects(child, sub, seen, depth + 1)]


def test_secure_fits_differ_and_keep_no_noise_state():
    X = _chain(1000, np.random.default_rng(7))
    a, b = (MSTSynthesizer(epsilon=1.0, schema=_CHAIN_SCHEMA, random_state=0).fit(X) for _ in range(2))
    assert any(not np.array_equal(u, v) for u, v in zip(a.one_way_counts_, b.one_way_counts_))
    assert a.privacy_spent_.publishable
    for est in (a, pickle.loads(pickle.dumps(a))):
        # the only generator is the sampling stream, derived from random_state alone (not from the noise)
        assert _random_objects(est) == ["est._sample_rng_"]
        assert est._sample_rng_.bit_generator.state == \
            check_random_state(cohort_seed_sequence(0, -1)).bit_generator.state
    seeded = [MSTSynthesizer(epsilon=1.0, schema=_CHAIN_SCHEMA, random_state=0, reproducible_noise=True).fit(X)
              for _ in range(2)]
    assert all(np.array_equal(u, v) for u, v in zip(seeded[0].one_way_counts_, seeded[1].one_way_counts_))
    assert not seeded[0].privacy_spent_.publishable


def test_released_statistics_are_noisy_integer_counts():
    n = 4000
    X = _chain(n, np.random.default_rng(8))
    est = MSTSynthesizer(epsilon=1.0, schema=_CHAIN_SCHEMA, random_state=0).fit(X)
    assert {r.mechanism for r in est.budget_log_} == {"discrete gaussian", "exponential (zCDP)"}
    assert all(c.dtype == np.int64 for c in est.one_way_counts_)
    assert all(t.dtype == np.int64 for t in est.two_way_counts_.values())
    # n_estimate_ comes from the noisy 1-way totals (sigma ~ 22 per cell here) and is the default size
    assert isinstance(est.n_estimate_, int) and abs(est.n_estimate_ - n) < 200
    assert len(est.sample(random_state=0)) == est.n_estimate_


def test_impossible_plan_is_refused_before_any_budget():
    rng = np.random.default_rng(9)
    X = pd.DataFrame({"u": rng.normal(size=300), "v": rng.normal(size=300)})
    est = MSTSynthesizer(epsilon=1.0, delta=0.0)  # zCDP cannot be converted at delta = 0
    with pytest.raises(PrivacyBudgetError, match="delta > 0"):
        est.fit(X)
    assert not hasattr(est, "budget_log_")


@pytest.mark.filterwarnings("ignore:values outside the public bounds")
def test_planned_cost_without_schema_is_what_the_model_spends():
    """The up-front check (domain + model, before any spend) plans exactly what is then charged."""
    rng = np.random.default_rng(10)
    n = 1000  # the DP domain estimate at epsilon 1 needs a few hundred people per column
    X = pd.DataFrame({"u": rng.normal(size=n), "v": rng.normal(size=n), "w": rng.normal(size=n)})
    est = MSTSynthesizer(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    spent = est.privacy_spent_
    assert spent.epsilon <= 1.0 + 1e-9 and spent.delta <= 1e-6 * (1 + 1e-9)
    # the model is charged in zCDP, so the domain is too: it composes with the model, which keeps what it
    # would have after a pure 0.1 slice
    domain = [r for r in est.budget_log_ if "DP domain estimate" in r.target]
    assert domain and {r.kind for r in domain} <= {"zcdp", "approx"}
    plan = est._planned_model_cost(tuple(X.columns), 0.1, 1e-7)  # public: the column names only
    assert len(plan) == len(est.budget_log_) - len(domain)
    assert math.isclose(sum(r.rho for r in plan), est.rho_, rel_tol=1e-9)


def test_parameter_validation():
    check_param_validation("MSTSynthesizer", MSTSynthesizer())
