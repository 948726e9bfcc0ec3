"""AIMSynthesizer: contract, adaptive zCDP accounting, junction trees, estimation, selection, decoding."""

import itertools
import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

from skdpsynth import MSTSynthesizer, PrivacyBudgetError, TableSchema
from skdpsynth._grid import PublicGrid
from skdpsynth.privacy import BudgetAccountant, NoiseSource, PrivateTable
from skdpsynth.synthesizers._aim import AIMSynthesizer
from skdpsynth.synthesizers._aim_pairs import all_pair_marginals
from skdpsynth.synthesizers._aim_selection import (
    candidates_from_workload,
    resolve_workload,
    weighted_workload,
)
from skdpsynth.synthesizers._compression import compress_column, expand_codes
from skdpsynth.synthesizers._engine import MarginalEngine
from skdpsynth.synthesizers._graphical_model import MarkovModel, Measurement, combine, estimate
from skdpsynth.synthesizers._junction_tree import build_junction_tree, grow, grow_cells
from skdpsynth.utils.estimator_checks import check_param_validation, check_synthesizer

LEVELS = np.array(["p", "q", "r", "s"], dtype=object)
CHAIN_SCHEMA = TableSchema.from_dict({k: {"kind": "categorical", "categories": list(LEVELS), "nullable": False}
                                      for k in "abcde"})


def _chain(n, rng):
    """a -> b -> c -> d (each copies its parent 85 % of the time), e independent."""
    cols = [rng.integers(4, size=n)]
    for _ in range(3):
        cols.append(np.where(rng.random(n) < 0.85, cols[-1], rng.integers(4, size=n)))
    cols.append(rng.integers(4, size=n))
    return pd.DataFrame({k: LEVELS[v] for k, v in zip("abcde", cols)})


def _running_intersection(jt) -> bool:
    for a in range(len(jt.sizes)):
        holders = [i for i, cl in enumerate(jt.cliques) if a in cl]
        if not holders:
            return False
        seen, stack = {holders[0]}, [holders[0]]
        while stack:
            u = stack.pop()
            for v in jt.neighbours[u]:
                if v not in seen and a in jt.cliques[v]:
                    seen.add(v)
                    stack.append(v)
        if seen != set(holders):
            return False
    return True


def _counts(X, clique, sizes):
    shape = [int(sizes[a]) for a in clique]
    flat = np.ravel_multi_index(X[:, list(clique)].T, shape)
    return np.bincount(flat, minlength=math.prod(shape)).reshape(shape).astype(float)


# ------------------------------------------------------------------------------------------ contract
@pytest.mark.parametrize("epsilon", [1.0, None])
def test_synthesizer_checks(mixed_frame, mixed_schema, epsilon):
    # without a budget the greedy rounds run until the model explains every marginal and each estimate runs to
    # 150 iterations (2 s a fit here, 9 fits): the checks test the contract, not the fit's accuracy, so d + 1
    # rounds of 30 iterations (12 -> 4 s)
    small = {"rounds": 1, "max_iters": 30} if epsilon is None else {}
    est = AIMSynthesizer(epsilon=epsilon, delta=1e-6, schema=mixed_schema, random_state=0, **small)
    check_synthesizer(est, mixed_frame)


def test_synthesizer_checks_without_schema(mixed_frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check_synthesizer(AIMSynthesizer(epsilon=8.0, delta=1e-3, random_state=0), mixed_frame)


def test_parameter_validation():
    check_param_validation("AIMSynthesizer", AIMSynthesizer())


def test_refusals_before_any_spend(mixed_frame, mixed_schema):
    for params, error in [({"delta": 0.0}, PrivacyBudgetError), ({"workload": [("score", "nope")]}, ValueError),
                          ({"rounds": 0}, ValueError), ({"decode_share": 1.0}, ValueError),
                          ({"workload": {("score", "passed"): 0.0}}, ValueError)]:
        est = AIMSynthesizer(schema=mixed_schema, random_state=0, **params)
        with pytest.raises(error):
            est.fit(mixed_frame)
        assert not hasattr(est, "budget_log_") or not any(r.kind == "zcdp" for r in est.budget_log_)


# ------------------------------------------------------------------------------------------ privacy
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_budget_is_spent_exactly_and_logged_per_round(epsilon):
    X = _chain(3000, np.random.default_rng(0))
    est = AIMSynthesizer(epsilon=epsilon, schema=CHAIN_SCHEMA, random_state=0).fit(X)
    log = est.budget_log_
    assert all(r.kind == "zcdp" for r in log)
    spent = est.privacy_spent_
    assert spent.epsilon <= epsilon * (1 + 1e-9)
    assert spent.epsilon > epsilon * (1 - 1e-6)  # the last round spends what is left
    assert math.isclose(sum(r.rho for r in log), est.rho_, rel_tol=1e-9)
    selections = [r for r in log if r.mechanism == "exponential (zCDP)"]
    measures = [r for r in log if r.mechanism == "discrete gaussian"]
    assert len(selections) == est.n_rounds_ == len(est.selected_)
    assert len(measures) == 5 + est.n_rounds_  # five 1-way marginals, then one per round
    for r in measures:
        assert r.sensitivity == 1.0 and math.isclose(r.noise_scale, 1 / math.sqrt(2 * r.rho), rel_tol=1e-9)
    # the workload of all pairs weighs a pair 2 (d - 1) and a column d - 1: sensitivity max weight = 8
    assert {r.sensitivity for r in selections} == {8.0}
    # annealing: the noise never grows from one round to the next
    sigmas = [r.noise_scale for r in measures[5:]]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(sigmas, sigmas[1:-1]))


def test_released_statistics_are_noisy_integers_and_n_estimate():
    n = 4000
    X = _chain(n, np.random.default_rng(1))
    est = AIMSynthesizer(epsilon=1.0, schema=CHAIN_SCHEMA, random_state=0).fit(X)
    assert all(c.dtype == np.int64 for _, c, _, _ in est.measurements_)
    assert isinstance(est.n_estimate_, int) and abs(est.n_estimate_ - n) < 200
    assert len(est.sample(random_state=0)) == est.n_estimate_


def test_secure_fits_differ_reproducible_fits_agree():
    X = _chain(1500, np.random.default_rng(2))
    a, b = (AIMSynthesizer(epsilon=1.0, schema=CHAIN_SCHEMA, random_state=0).fit(X) for _ in range(2))
    assert any(not np.array_equal(u[1], v[1]) for u, v in zip(a.measurements_, b.measurements_))
    assert a.privacy_spent_.publishable
    seeded = [AIMSynthesizer(epsilon=1.0, schema=CHAIN_SCHEMA, random_state=3, reproducible_noise=True).fit(X)
              for _ in range(2)]
    pd.testing.assert_frame_equal(seeded[0].sample(100, random_state=0), seeded[1].sample(100, random_state=0))
    assert not seeded[0].privacy_spent_.publishable
    restored = pickle.loads(pickle.dumps(a))
    pd.testing.assert_frame_equal(restored.sample(50, random_state=1), a.sample(50, random_state=1))


def test_partial_fit_keeps_the_model_and_charges_each_cohort():
    rng = np.random.default_rng(4)
    est = AIMSynthesizer(epsilon=1.0, schema=CHAIN_SCHEMA, random_state=0)
    est.partial_fit(_chain(2000, rng))
    selected, tree = list(est.selected_), list(est.model_.tree.cliques)
    est.partial_fit(_chain(2000, rng))
    assert est.selected_ == selected and est.model_.tree.cliques == tree
    assert est.n_cohorts_ == 2 and len(est.privacy_spent_.per_cohort) == 2
    assert all(e <= 1.0 + 1e-9 for e, _ in est.privacy_spent_.per_cohort)
    assert not any(r.mechanism.startswith("exponential") for r in est.budget_log_ if r.cohort == 1)
    assert 3600 < est.n_hat_ < 4400  # both cohorts pooled


# ------------------------------------------------------------------------------------------ utility
def test_dependence_is_recovered():
    X = _chain(6000, np.random.default_rng(5))
    est = AIMSynthesizer(epsilon=2.0, schema=CHAIN_SCHEMA, random_state=0).fit(X)
    assert {("a", "b"), ("b", "c"), ("c", "d")} <= set(est.selected_)
    synth = est.sample(20000, random_state=0)
    for u, v in [("a", "b"), ("b", "c"), ("c", "d")]:
        assert abs((X[u] == X[v]).mean() - (synth[u] == synth[v]).mean()) < 0.04
    assert abs((synth["a"] == synth["e"]).mean() - 0.25) < 0.03


def test_non_private_fit_reproduces_the_marginals():
    X = _chain(3000, np.random.default_rng(6))
    est = AIMSynthesizer(epsilon=None, schema=CHAIN_SCHEMA, random_state=0).fit(X)
    assert not est.privacy_spent_.is_private
    for j, col in enumerate("abcde"):
        freq = X[col].value_counts().reindex(list(LEVELS)).to_numpy()
        np.testing.assert_allclose(est.model_.project((j,)), freq, rtol=1e-3)
    assert {("a", "b"), ("b", "c"), ("c", "d")} <= set(est.selected_)


def test_workload_restricts_the_candidates():
    X = _chain(3000, np.random.default_rng(7))
    est = AIMSynthesizer(epsilon=2.0, schema=CHAIN_SCHEMA, workload=[("a", "b"), ("d", "e")], random_state=0).fit(X)
    assert est.workload_ == [("a", "b"), ("d", "e")]
    assert set(est.selected_) <= {("a",), ("b",), ("d",), ("e",), ("a", "b"), ("d", "e")}


def test_weighted_workload_weights_the_candidates_and_the_selection():
    names = list("abcde")
    weights = weighted_workload({("a", "b"): 3.0, ("b", "c"): 1, ("c", "b"): 2.0}, names)
    assert weights == {(0, 1): 3.0, (1, 2): 2.0}  # a pair named twice keeps its largest weight
    cands = candidates_from_workload(list(weights), weights)
    assert cands[(0,)] == 3.0 and cands[(1,)] == 5.0 and cands[(0, 1)] == 8.0 and cands[(1, 2)] == 7.0
    assert candidates_from_workload([(0, 1), (1, 2)]) == candidates_from_workload([(0, 1), (1, 2)],
                                                                                  {(0, 1): 1.0, (1, 2): 1.0})
    X = _chain(3000, np.random.default_rng(7))
    workload = {(u, v): (4.0 if "a" in (u, v) else 1.0) for u, v in itertools.combinations("abcde", 2)}
    est = AIMSynthesizer(epsilon=1.0, schema=CHAIN_SCHEMA, workload=workload, random_state=0).fit(X)
    selections = [r for r in est.budget_log_ if r.mechanism == "exponential (zCDP)"]
    # a's four pairs weigh 4 each, the six others 1: the heaviest candidate is a pair with a, 16 + 7 = 23
    assert {r.sensitivity for r in selections} == {23.0}
    assert est.privacy_spent_.epsilon <= 1.0 + 1e-9


def test_ordered_columns_merge_adjacent_cells_and_categories_a_rare_cell():
    schema = TableSchema.from_dict({"n": {"kind": "integer", "lower": 0, "upper": 9, "nullable": True},
                                    "c": {"kind": "categorical", "categories": list("pqrst"), "nullable": False}})
    num, cat = PublicGrid(schema, 32).columns
    noisy = np.array([50, 3, -2, 4, 30, 1, 1, 2, 9, 40, 7])  # ten values, then the missing cell
    mapping, groups, probs = compress_column(num, noisy, threshold=10.0)
    assert [list(g) for g in groups] == [[0], [1, 2, 3, 4], [5, 6, 7, 8], [9], [10]]
    assert all(np.all(np.diff(g) == 1) for g in groups[:-1])  # runs of adjacent values
    assert list(mapping) == [0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 4]
    assert all(math.isclose(p.sum(), 1.0) for p in probs) and probs[1][1] == 0.0  # a negative count gets none
    mapping, groups, _ = compress_column(cat, np.array([50, 3, 40, 2, 1]), threshold=10.0)
    assert [list(g) for g in groups] == [[0], [2], [1, 3, 4]] and list(mapping) == [0, 2, 1, 2, 2]
    assert [list(g) for g in compress_column(cat, np.array([50, 3, 40, 20, 30]), 10.0)[1]] == [[i] for i in range(5)]
    assert [list(g) for g in compress_column(num, noisy, None)[1]] == [[i] for i in range(11)]
    codes = expand_codes(np.repeat(np.arange(5), 2000), groups=[np.array([0]), np.array([1, 2, 3, 4]),
                                                                 np.array([5, 6, 7, 8]), np.array([9]), np.array([10])],
                         probs=[np.ones(1), np.array([0.5, 0, 0.5, 0]), np.full(4, 0.25), np.ones(1), np.ones(1)],
                         rng=np.random.default_rng(0))
    assert set(codes[2000:4000]) == {1, 3} and set(codes[4000:6000]) == {5, 6, 7, 8}
    assert (codes[:2000] == 0).all() and (codes[-2000:] == 10).all()


def test_binned_columns_keep_point_masses_and_integer_values():
    rng = np.random.default_rng(8)
    n = 4000
    gain = np.where(rng.random(n) < 0.8, 0.0, rng.uniform(1, 5000, n)).round()
    X = pd.DataFrame({"gain": gain, "age": rng.integers(18, 90, n), "y": np.where(gain > 0, "hi", "lo")})
    schema = TableSchema.from_dict({"gain": {"kind": "integer", "lower": 0, "upper": 99999, "nullable": False},
                                    "age": {"kind": "integer", "lower": 17, "upper": 100, "nullable": False},
                                    "y": {"kind": "categorical", "categories": ["hi", "lo"], "nullable": False}})
    zeros = (X["gain"] == 0).mean()  # 0.809
    for cls in (AIMSynthesizer, MSTSynthesizer):
        est = cls(epsilon=1.0, schema=schema, random_state=0).fit(X)
        out = est.sample(n, random_state=0)
        # the zero point mass kept: 0.77-0.85 over 80 fits of each (sd about 0.015); a bin decoded uniformly
        # would put almost none exactly at 0
        assert abs((out["gain"] == 0).mean() - zeros) < 0.08, cls
        assert out["age"].between(17, 100).all() and (out["age"] % 1 == 0).all()
        ages = out["age"].value_counts(normalize=True)
        assert ages.index.nunique() > 40  # values, not 32 bin midpoints
        assert any("fine 1-way" in r.target for r in est.budget_log_)
        assert est.privacy_spent_.epsilon <= 1.0 + 1e-9
    off = AIMSynthesizer(epsilon=1.0, schema=schema, decode_share=0.0, random_state=0).fit(X)
    assert not any("fine 1-way" in r.target for r in off.budget_log_)


# ------------------------------------------------------------------------------------------ engine
def test_junction_tree_covers_cliques_and_keeps_running_intersection():
    rng = np.random.default_rng(9)
    sizes = rng.integers(2, 6, size=9)
    for _ in range(20):
        cliques = [tuple(sorted(rng.choice(9, size=2, replace=False))) for _ in range(rng.integers(1, 12))]
        jt = build_junction_tree(sizes, cliques)
        assert _running_intersection(jt)
        assert all(jt.home(cl) >= 0 for cl in cliques)
        pairs = list(itertools.combinations(range(9), 2))
        bound = grow_cells(jt, pairs)
        for cl, b in zip(pairs, bound):
            grown = grow(jt, cl)
            assert _running_intersection(grown) and grown.home(cl) >= 0
            assert all(grown.home(c) >= 0 for c in jt.cliques)
            assert grown.cells() <= b


def _joint(model: MarkovModel) -> np.ndarray:
    """Brute-force joint counts of a small model (product of clique marginals over separators)."""
    tree = model.tree
    sizes = tree.size_tuple
    log = np.zeros(sizes)
    for i, cl in enumerate(tree.cliques):
        shape = [sizes[a] if a in cl else 1 for a in range(len(sizes))]
        log = log + np.log(np.maximum(model.marginals[i], 1e-300)).reshape(shape)
        sep = tree.separators[i]
        if tree.parent[i] >= 0 and sep:
            s = model.marginals[i].sum(axis=tuple(k for k, a in enumerate(cl) if a not in sep))
            log = log - np.log(np.maximum(s, 1e-300)).reshape([sizes[a] if a in sep else 1 for a in range(len(sizes))])
        elif tree.parent[i] >= 0:
            log = log - math.log(model.total)
    return np.exp(log)


def test_estimation_fits_consistent_measurements_and_pairs_are_exact():
    rng = np.random.default_rng(10)
    n, sizes = 20000, np.array([3, 4, 2, 3, 5, 2])
    X = np.zeros((n, 6), int)
    X[:, 0] = rng.integers(3, size=n)
    for j in range(1, 6):
        X[:, j] = np.where(rng.random(n) < 0.6, X[:, j - 1] % sizes[j], rng.integers(sizes[j], size=n))
    cliques = [(j,) for j in range(6)] + [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (0, 5)]
    jt = build_junction_tree(sizes, cliques)
    model = estimate(jt, combine([Measurement(cl, _counts(X, cl, sizes), 0.0) for cl in cliques]), n, iters=400)
    for cl in cliques:
        np.testing.assert_allclose(model.project(cl), _counts(X, cl, sizes), atol=0.02 * n / _counts(X, cl, sizes).size)
    joint = _joint(model)
    assert math.isclose(joint.sum(), n, rel_tol=1e-6)
    pairs = list(itertools.combinations(range(6), 2))
    exact = model.pair_marginals(pairs)
    one_pass = all_pair_marginals(model, pairs)
    for a, b in pairs:
        brute = joint.sum(axis=tuple(k for k in range(6) if k not in (a, b)))
        np.testing.assert_allclose(exact[(a, b)], brute, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(one_pass[(a, b)], brute, rtol=1e-6, atol=1e-6)
    draws = model.sample(200000, rng)
    emp = _counts(draws, (0, 3), sizes) * n / len(draws)
    assert np.abs(emp - exact[(0, 3)]).sum() / n < 0.02


def test_estimation_reaches_the_least_squares_optimum_of_inconsistent_noisy_measurements():
    """Within 1 % of the exact optimum (weighted NNLS on the full joint); IPF-like steps alone stalled 20-40 % above."""
    from scipy.optimize import nnls

    for seed in range(5):
        rng = np.random.default_rng(seed)
        n, sizes = 3000, np.array([3, 4, 2, 3, 5, 2])
        X = np.zeros((n, 6), int)
        X[:, 0] = rng.integers(3, size=n)
        for j in range(1, 6):
            X[:, j] = np.where(rng.random(n) < 0.6, X[:, j - 1] % sizes[j], rng.integers(sizes[j], size=n))
        cliques = [(j,) for j in range(6)] + [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (0, 5), (1, 2)]
        sd = {1: 40.0, 2: 20.0}
        meas = combine([Measurement(cl, _counts(X, cl, sizes) + rng.normal(0, sd[len(cl)], [sizes[a] for a in cl]),
                                    sd[len(cl)] ** 2) for cl in cliques])
        jt = build_junction_tree(sizes, [m.clique for m in meas])

        def loss(marginal, meas=meas):
            return 0.5 * sum(float(np.sum((marginal(m.clique) - m.counts) ** 2 / m.variance)) for m in meas)

        cells = np.array(list(itertools.product(*[range(k) for k in sizes])))
        rows, rhs = [np.full(len(cells), 1e3)], [1e3 * n]  # the total, nearly exactly
        for m in meas:
            for idx in itertools.product(*[range(sizes[a]) for a in m.clique]):
                rows.append(np.all(cells[:, list(m.clique)] == idx, axis=1) / math.sqrt(m.variance))
                rhs.append(m.counts[idx] / math.sqrt(m.variance))
        joint = nnls(np.array(rows, float), np.array(rhs))[0].reshape(sizes)
        optimum = loss(lambda cl, joint=joint: joint.sum(axis=tuple(k for k in range(6) if k not in cl)))
        model = estimate(jt, meas, n, iters=150)
        assert (1 - 1e-6) * optimum <= loss(model.project) <= 1.01 * optimum


def test_a_warm_start_that_holds_almost_nobody_in_a_measured_cell_does_not_overshoot():
    """AIM's collapse on Adult, in small: two near-identical columns (education x education-num).

    The 1-way model puts ``n p_i^2`` (under one person) on a rare diagonal cell whose noisy pair count is ``n p_i``.
    IPF's linearised step ``(y - mu) / max(mu, 1)`` moved that cell's log-potential by about ``n p_i`` (to 160-540
    in 8 of 10 seeds) and a later round put everyone in one cell; IPF's own step ``log(y / mu)`` stays near
    ``log n``.
    """
    from skdpsynth.synthesizers._engine import fit_model

    for seed in range(5):
        rng = np.random.default_rng(seed)
        n, k, sigma = 48842, 16, 20.0
        p = np.sort(rng.dirichlet(np.full(k, 0.5)))
        joint, sizes = np.diag(n * p), np.array([k, k])
        one = [Measurement((a,), joint.sum(axis=1 - a) + rng.normal(0, sigma, k), sigma**2) for a in (0, 1)]
        first = fit_model(one, sizes, n, iters=100)
        pair = Measurement((0, 1), joint + rng.normal(0, sigma, (k, k)), sigma**2)
        model = fit_model([*one, pair], sizes, n, model=first, iters=100)
        assert max(float(np.abs(t).max()) for t in model.potentials.values()) < 4 * math.log(n), seed
        assert 0.5 * np.abs(model.project((0, 1)).sum(axis=1) / n - p).sum() < 0.01, seed


def test_all_pair_marginals_agree_with_the_per_attribute_traversal_on_random_trees():
    rng = np.random.default_rng(11)
    for _ in range(8):
        d = 9
        sizes = rng.integers(2, 5, size=d)
        cliques = [(j,) for j in range(d)] + [tuple(sorted(rng.choice(d, size=int(rng.integers(2, 4)), replace=False)))
                                              for _ in range(int(rng.integers(2, 9)))]
        jt = build_junction_tree(sizes, cliques)
        potentials = {cl: rng.normal(0, 1, [int(sizes[a]) for a in cl]) for cl in cliques}
        model = MarkovModel(jt, potentials, 1000.0)
        pairs = [p for p in itertools.combinations(range(d), 2) if rng.random() < 0.7]
        ref, fast = model.pair_marginals(pairs), all_pair_marginals(model, pairs)
        assert set(fast) == set(pairs)
        for p in pairs:
            np.testing.assert_allclose(fast[p], ref[p], rtol=1e-9, atol=1e-9)


def test_noisy_measurements_are_combined_by_inverse_variance():
    y1, y2 = np.array([10.0, 30.0]), np.array([20.0, 10.0])
    (m,) = combine([Measurement((0,), y1, 1.0), Measurement((0,), y2, 3.0)])
    np.testing.assert_allclose(m.counts, 0.75 * y1 + 0.25 * y2)
    assert math.isclose(m.variance, 0.75)


def test_workload_candidates_and_scores():
    workload = resolve_workload(None, ["a", "b", "c"])
    assert workload == [(0, 1), (0, 2), (1, 2)]
    cands = candidates_from_workload(workload)
    assert cands[(0,)] == 2 and cands[(0, 1)] == 4


def _engine(X, epsilon, seed=0):
    schema = TableSchema.from_dict({c: {"kind": "categorical", "categories": list(LEVELS), "nullable": False}
                                    for c in X.columns})
    accountant = BudgetAccountant(epsilon, 1e-6, delta_zcdp=1e-6)
    table = PrivateTable(schema.validate(X), schema, accountant=accountant,
                         noise=NoiseSource.reproducible_from(np.random.SeedSequence(seed)))
    return MarginalEngine(table, PublicGrid(schema, 32)), accountant


def test_engine_selects_the_worst_explained_marginal_and_charges_its_sensitivity():
    X = _chain(3000, np.random.default_rng(0))[["a", "b", "e"]]
    independent = {cl: np.full((4, 4), 3000 / 16) for cl in [(0, 1), (0, 2), (1, 2)]}
    cliques = list(independent)
    exact, _ = _engine(X, None)
    # without noise the argmax of w (error - penalty): the dependent pair, unless weights and penalties say otherwise
    assert cliques[exact.select(cliques, list(independent.values()), rho=None, target="t")] == (0, 1)
    assert cliques[exact.select(cliques, list(independent.values()), rho=None, penalties=[1e6, 0, 0],
                                target="t")] != (0, 1)
    picks = []
    for seed in range(20):
        engine, accountant = _engine(X, 10.0, seed)
        picks.append(cliques[engine.select(cliques, list(independent.values()), rho=0.05, weights=[1, 2, 3],
                                           target="t")])
        (record,) = accountant.records
        assert record.mechanism.startswith("exponential") and math.isclose(record.rho, 0.05)
        assert record.sensitivity == 3.0  # max w_r: one person moves each utility by at most its weight
    assert picks.count((0, 1)) >= 18  # a large gap in L1 error survives the noise
    m = engine.measure((0, 1), rho=0.5)
    assert m.counts.dtype == np.int64 and m.counts.shape == (4, 4) and m.variance == 1.0


@pytest.mark.realdata
def test_dropout_fit_uses_the_target(data_dir):
    """UCI dropout at eps 1: the budget spent, the target measured with a predictor (timings: the benchmark)."""
    from skdpsynth.datasets import load_uci_dropout

    b = load_uci_dropout(path=data_dir / "uci_dropout", download=False)
    est = AIMSynthesizer(epsilon=1.0, schema=b.schema, random_state=0).fit(b.frame)
    assert est.privacy_spent_.epsilon <= 1.0 + 1e-9
    assert any(b.target in cl and len(cl) == 2 for cl in est.selected_)


@pytest.mark.slow  # an Adult fit and a sample (a few seconds)
@pytest.mark.realdata
@pytest.mark.parametrize("seed", [2, 5])  # the two of 12 seeds that collapsed before the bounded IPF step
def test_adult_fit_keeps_its_one_way_marginals(data_dir, seed):
    """The release's 1-way shares stay near the data's: a collapsed estimate (one cell holding everyone) fails."""
    from skdpsynth.datasets import load_adult

    b = load_adult(path=data_dir / "adult", download=False)
    X = b.frame
    est = AIMSynthesizer(epsilon=1.0, delta=1e-9, schema=b.schema, random_state=seed, reproducible_noise=True).fit(X)
    synth = est.sample(len(X), random_state=0)
    for col in ("education", "workclass", "marital-status", "relationship"):
        real = X[col].astype(str).value_counts(normalize=True)
        fake = synth[col].astype(str).value_counts(normalize=True)
        tvd = 0.5 * real.subtract(fake, fill_value=0).abs().sum()
        assert tvd < 0.1, f"{col}: 1-way TVD {tvd:.2f} (the healthy seeds reach at most 0.03)"
