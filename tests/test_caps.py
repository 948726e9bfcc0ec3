"""CAPSSynthesizer: cycles, DP-SGD accounting, label-space changes, conditions, bad input."""

from __future__ import annotations

import functools
import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from skdpsynth.datasets import make_learning_habits  # noqa: E402
from skdpsynth.exceptions import PrivacyBudgetError, SchemaError  # noqa: E402
from skdpsynth.privacy._dpsgd import rdp_epsilon  # noqa: E402
from skdpsynth.synthesizers import CAPSSynthesizer  # noqa: E402
from skdpsynth.utils.estimator_checks import check_synthesizer  # noqa: E402

N_WEEKS = 3  # 12 features: small and fast; the benchmark uses the paper's 17 weeks (68 features)
TINY = dict(target="achievement", m1_hidden=(32,), z1_dim=4, m2_hidden=(16,), z2_dim=2, classifier_hidden=(16,),
            pretrain_epochs=1, n_surrogate=400, epochs=2, batch_size=16, n_public_samples=128, public_batch_size=32,
            public_steps=20, replay_new=200, replay_old=200, replay_epochs=1, label_replay=100)
EXPECTED = 110  # a public planning size for the cohorts of 105 / 111 / 115 people
#: for tests not about where the cohort size comes from: with a public size the DP-SGD plan is the same in every
#: fit, and its calibration (about 1 of 1.3 s of CPU in a tiny fit) is computed once per process (it is cached on
#: its settings); with a DP count each fit calibrates anew. The DP count's path is tested by
#: test_cohort_size_does_not_leak, test_schema_estimated_under_dp, test_two_cycles_on_oulad_presentations, CAPS's
#: privacy checks (tests/test_common.py) and its neighbour test (tests/test_neighbours.py)
PUBLIC_SIZE = {"expected_cohort_size": EXPECTED}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def cohort(n, shift, seed):
    return make_learning_habits(n, n_weeks=N_WEEKS, cohort_shift=shift, random_state=seed)


@pytest.fixture(scope="module")
def cohorts():
    return [cohort(105, 0.0, 1), cohort(111, 0.3, 2), cohort(115, 0.6, 3)]


@pytest.fixture(scope="module")
def schema(cohorts):
    return cohorts[0].schema


def tiny(schema, **kw):
    return CAPSSynthesizer(**{**TINY, "schema": schema, "random_state": 0, **kw})


@pytest.fixture(scope="module")
def three_cycles(cohorts, schema):
    est = tiny(schema, epsilon=2.0, delta=1e-5, expected_cohort_size=EXPECTED)
    est.fit(cohorts[0].frame)
    for b in cohorts[1:]:
        est.partial_fit(b.frame)
    return est


@pytest.mark.slow  # every check, 8 fits; CAPS's privacy checks run by default (tests/test_common.py, caps-privacy)
def test_check_synthesizer(cohorts, schema):
    result = check_synthesizer(tiny(schema, epsilon=1.0), cohorts[0].frame)
    assert set(result.values()) == {"passed"}


def test_three_cycles_spend_and_log(three_cycles):
    est = three_cycles
    assert est.n_cycles_ == 3 and est.n_cohorts_ == 3
    spent = est.privacy_spent_
    assert spent.is_private and spent.composition == "parallel"
    assert len(spent.per_cohort) == 3
    for eps, delta in spent.per_cohort:
        assert 0 < eps <= 2.0 and delta <= 1e-5
    assert spent.epsilon == max(e for e, _ in spent.per_cohort) <= 2.0
    sgd = [r for r in est.budget_log_ if r.mechanism == "dp-sgd"]
    assert [r.cohort for r in sgd] == [0, 1, 2]
    for r in sgd:
        d = r.details
        # the record's epsilon is the RDP accountant's for exactly these settings, within the DP-SGD share
        assert r.epsilon == pytest.approx(rdp_epsilon(noise_multiplier=d["noise_multiplier"],
                                                      sample_rate=d["sample_rate"], steps=d["steps"], delta=r.delta))
        assert r.epsilon <= 2.0 * (1 - est.label_share) + 1e-12
        assert d["epsilon_pld"] <= r.epsilon and d["mu"] > 0
        assert d["noise_multiplier"] > 0.5 and d["steps"] >= 1
    labels = [r for r in est.budget_log_ if r.mechanism == "geometric"]
    assert len(labels) == 3 and all(r.epsilon == pytest.approx(0.2) for r in labels)
    # the sample rate follows the public expected cohort size, never the cohorts' exact sizes (105, 111, 115)
    assert [round(r.details["sample_rate"], 4) for r in sgd] == [round(16 / EXPECTED, 4)] * 3


def test_sequential_composition_sums(cohorts, schema):
    est = tiny(schema, epsilon=1.0, cohort_composition="sequential", **PUBLIC_SIZE)
    est.fit(cohorts[0].frame).partial_fit(cohorts[1].frame)
    per = est.privacy_spent_.per_cohort
    assert est.privacy_spent_.epsilon == pytest.approx(sum(e for e, _ in per))
    assert est.privacy_spent_.epsilon <= 2.0


def test_samples_valid_and_conditions(three_cycles, schema):
    s = three_cycles.sample(300, random_state=0)
    assert list(s.columns) == list(three_cycles.columns_)
    for c in schema.names:
        assert s[c].isin(schema[c].categories).all(), c
    high = three_cycles.sample(50, random_state=1, conditions={"achievement": "high"})
    assert (high["achievement"] == "high").all()
    with pytest.raises(ValueError, match="label space"):
        three_cycles.sample(5, conditions={"achievement": "excellent"})
    with pytest.raises(ValueError, match="only condition on the target"):
        three_cycles.sample(5, conditions={"w01_morning": "active"})
    before = three_cycles.privacy_spent_
    three_cycles.sample(10)
    assert three_cycles.privacy_spent_ == before


def test_label_space_change(cohorts, schema):
    est = tiny(schema, epsilon=1.0, **PUBLIC_SIZE)
    est.fit(cohorts[0].frame)
    essay = cohorts[1].frame.copy()
    essay["achievement"] = np.where(essay["achievement"] == "low", "fail", "pass")
    n_log = len(est.budget_log_)
    with pytest.raises(SchemaError, match="label_space"):
        est.partial_fit(essay)  # labels outside the old label space: refused before any spend
    assert len(est.budget_log_) == n_log and est.n_cycles_ == 1
    est.partial_fit(essay, label_space=["fail", "pass"])
    assert est.label_space_ == ("fail", "pass") and est.n_cycles_ == 2
    assert est.schema_["achievement"].categories == ("fail", "pass")
    out = est.sample(100, random_state=0)
    assert set(out["achievement"]) <= {"fail", "pass"}
    assert est.predict_label_proba(cohorts[2].frame).shape == (115, 2)
    # and the new space persists for the next cycle
    third = cohorts[2].frame.copy()
    third["achievement"] = np.where(third["achievement"] == "high", "pass", "fail")
    est.partial_fit(third)
    assert est.n_cycles_ == 3 and est.privacy_spent_.epsilon <= 1.0


def test_bad_input_before_any_spend(cohorts, schema):
    X = cohorts[0].frame
    with pytest.raises(ValueError, match="target"):
        CAPSSynthesizer(**{**TINY, "target": None}, schema=schema).fit(X)
    with pytest.raises(SchemaError, match="not in X"):
        tiny(schema).fit(X.drop(columns="achievement"))
    # a label outside the schema's label space is bad input: refused before any spend, without quoting it
    canary = X.assign(achievement=np.where(np.arange(len(X)) == 0, "zzz-canary", X["achievement"]))
    with pytest.raises(SchemaError, match="outside this cycle's label space") as err:
        tiny(schema).fit(canary)
    assert "zzz-canary" not in str(err.value)
    for eps in (0, -1.0):
        with pytest.raises(PrivacyBudgetError):
            tiny(schema, epsilon=eps).fit(X)
    bad_pub = cohorts[1].data.drop(columns=["w01_morning"])
    with pytest.raises(SchemaError, match="public_data"):
        tiny(schema, public_data=bad_pub).fit(X)
    wrong_values = cohorts[1].data.replace("active", "busy")
    with pytest.raises(SchemaError, match="public_data does not match"):
        tiny(schema, public_data=wrong_values).fit(X)
    # a tiny cohort at a tiny epsilon: the calibrated noise would be absurd -> refused up front
    est = tiny(schema, epsilon=0.05, epochs=20, expected_cohort_size=30)
    with pytest.raises(PrivacyBudgetError, match="too small"):
        est.fit(X.iloc[:30])
    assert not hasattr(est, "budget_log_")
    est = tiny(schema, epsilon=1.0, **PUBLIC_SIZE).fit(X)
    n_log = len(est.budget_log_)
    with pytest.raises(SchemaError, match="differ"):
        est.partial_fit(cohorts[1].frame.drop(columns=["w02_night"]))
    with pytest.raises(PrivacyBudgetError, match="too small"):
        est.set_params(epsilon=0.05, epochs=20, expected_cohort_size=30).partial_fit(cohorts[1].frame.iloc[:30])
    assert len(est.budget_log_) == n_log


def test_public_data_and_surrogate(cohorts, schema):
    pub = make_learning_habits(300, n_weeks=N_WEEKS, cohort_shift=-0.5, random_state=9).data
    est = tiny(schema, public_data=pub, **PUBLIC_SIZE).fit(cohorts[0].frame)
    assert est.pretrain_source_ == "public_data"
    est2 = tiny(schema, public_data=functools.partial(make_learning_habits, n_weeks=N_WEEKS),
                **PUBLIC_SIZE).fit(cohorts[0].frame)
    assert est2.pretrain_source_ == "surrogate: make_learning_habits"
    # a schema that is not the learning-habit one falls back to independent uniform draws
    frame = cohorts[0].frame.iloc[:, :5].join(cohorts[0].frame["achievement"])
    est3 = tiny(schema.select(frame.columns), **PUBLIC_SIZE).fit(frame)
    assert est3.pretrain_source_.startswith("surrogate: independent uniform")


def test_non_private_mode(cohorts, schema):
    est = tiny(schema, epsilon=None).fit(cohorts[0].frame)
    assert not est.privacy_spent_.is_private and math.isinf(est.privacy_spent_.epsilon)


def _plain_values(obj, seen=None, depth=0):
    """Every (key, value) reachable from ``obj`` (attributes, records, dicts; list items with key None), torch
    modules skipped."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 8 or isinstance(obj, (torch.nn.Module, torch.Tensor, pd.DataFrame, type)):
        return
    seen.add(id(obj))
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k, v
            yield from _plain_values(v, seen, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield None, v
            yield from _plain_values(v, seen, depth + 1)
    elif hasattr(obj, "__dict__"):
        yield from _plain_values(vars(obj), seen, depth + 1)


def _sample_rates(est):
    return [float(v) for k, v in _plain_values(est) if k == "sample_rate"]


@pytest.fixture(scope="module")
def neighbours():
    """Neighbouring cohorts: 120 people, and the same 120 plus one."""
    big = cohort(121, 0.0, 4).frame
    return big.iloc[:120], big


@pytest.mark.usefixtures("reproducible_noise")
def test_cohort_size_does_not_leak(neighbours, schema):
    """An attacker holding the fitted estimator, its pickle and its budget log cannot read the exact n."""
    small, big = neighbours
    fits = {}
    for label, kw in (("public", {"expected_cohort_size": 100}), ("dp count", {})):
        for X in (small, big):
            est = tiny(schema, epsilon=1.0, random_state=3, **kw).fit(X)
            n = len(X)
            rates = _sample_rates(est)
            assert rates and all(r > 0 for r in rates)
            for q in rates:  # batch_size / sample_rate is the public or DP size, not n
                assert not math.isclose(est.batch_size / q, n, rel_tol=0, abs_tol=1e-6), (label, q)
            restored = pickle.loads(pickle.dumps(est))
            leaks = [(k, v) for k, v in _plain_values(restored)
                     if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and v == n]
            assert not leaks, (label, n, leaks)
            assert isinstance(est.n_estimate_, int) and est.n_estimate_ >= 1
            fits[label, n] = est
    # with a public size the whole plan is the same for both neighbours: nothing in it depends on n
    plan = lambda e: ([r.details for r in e.budget_log_ if r.mechanism == "dp-sgd"],  # noqa: E731
                      [{k: v for k, v in d.items() if k != "cycle"} for d in e.dpsgd_])
    assert plan(fits["public", 120]) == plan(fits["public", 121])
    assert not any(r.mechanism == "geometric" and "number of people" in r.target
                   for r in fits["public", 120].budget_log_)
    # without one, a small DP count is charged, named in the log, and sets the sample rate
    est = fits["dp count", 121]
    count = [r for r in est.budget_log_ if "number of people" in r.target]
    assert len(count) == 1 and count[0].epsilon == pytest.approx(est.size_share * 1.0)
    sgd = next(r for r in est.budget_log_ if r.mechanism == "dp-sgd")
    assert sgd.details["cohort_size_source"].startswith("dp_count")
    assert sgd.details["sample_rate"] == pytest.approx(min(1.0, 16 / sgd.details["cohort_size"]))
    assert est.privacy_spent_.epsilon <= 1.0 + 1e-9


def test_neighbouring_fits_get_fresh_noise(neighbours, schema):
    """Same random_state on neighbouring data: the noise differs (secure); seeded noise would expose the person."""
    small, big = neighbours
    added = np.bincount([list(schema["achievement"].categories).index(big["achievement"].iloc[-1])], minlength=3)
    seeded = [tiny(schema, epsilon=1.0, expected_cohort_size=100, reproducible_noise=True).fit(X) for X in (small, big)]
    # identical noise: the difference of the released histograms is exactly the added person's label
    np.testing.assert_array_equal(seeded[1].label_counts_ - seeded[0].label_counts_, added)
    secure = [tiny(schema, epsilon=1.0, expected_cohort_size=100).fit(X) for X in (small, big, small)]
    assert not np.array_equal(secure[1].label_counts_ - secure[0].label_counts_, added)
    # DP-SGD's noise and batches are fresh too: the same data and random_state give a different M2
    w = [torch.cat([p.detach().flatten() for p in e.m2_.parameters()]) for e in (secure[0], secure[2])]
    assert not torch.equal(w[0], w[1])
    assert not secure[0].privacy_spent_.reproducible_noise and seeded[0].privacy_spent_.reproducible_noise


def test_global_torch_rng_untouched_and_pickle(cohorts, schema):
    state = torch.random.get_rng_state().clone()
    est = tiny(schema, **PUBLIC_SIZE).fit(cohorts[0].frame)
    est.sample(20)
    assert torch.equal(state, torch.random.get_rng_state())
    clone = pickle.loads(pickle.dumps(est))
    pd.testing.assert_frame_equal(est.sample(40, random_state=5, conditions={"achievement": "low"}),
                                  clone.sample(40, random_state=5, conditions={"achievement": "low"}))
    rec = est.reconstruct(cohorts[1].frame, random_state=0)
    assert rec.shape == cohorts[1].frame.shape and (rec["achievement"] == cohorts[1].frame["achievement"]).all()


def test_dp_step_clips_and_public_step_does_not_mix():
    """The private step's update is (sum of clipped per-example gradients + noise) / expected batch size,
    and a public step in between leaves no per-example gradients behind."""
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    from skdpsynth.synthesizers._caps_nn import M2Model, init_module
    from skdpsynth.synthesizers._caps_training import dp_step, public_step

    m2 = init_module(lambda: M2Model(4, 3, (8,), 2, (8,)), 0)
    ref = init_module(lambda: M2Model(4, 3, (8,), 2, (8,)), 0)
    gsm = GradSampleModule(m2, loss_reduction="sum")
    params = list(m2.parameters())
    C, E = 0.1, 5
    dp_opt = DPOptimizer(torch.optim.SGD(params, lr=1.0), noise_multiplier=0.0, max_grad_norm=C,
                         expected_batch_size=E, loss_reduction="mean")
    pub_opt = torch.optim.SGD(params, lr=0.0)
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(6, 4, generator=g) * 10  # large per-example gradients: clipping binds
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    noise = torch.randn(6, 2, generator=g)
    public_step(m2, gsm, pub_opt, torch.randn(7, 4, generator=g), torch.randn(7, 2, generator=g), None, 1.0, 1.0)
    assert all(getattr(p, "grad_sample", None) is None for p in params)
    before = [p.detach().clone() for p in params]
    dp_step(m2, gsm, dp_opt, z1, y, noise, 1.0, 1.0)
    update = torch.cat([(b - p.detach()).flatten() for b, p in zip(before, params)])
    # independent per-example gradients on an identical copy
    expected = torch.zeros_like(update)
    for i in range(6):
        ref.zero_grad()
        ref(z1[i:i + 1], y[i:i + 1], noise[i:i + 1], 1.0, 1.0).sum().backward()
        gi = torch.cat([p.grad.flatten() for p in ref.parameters()])
        expected += gi * min(1.0, C / (gi.norm() + 1e-6))
    torch.testing.assert_close(update, expected / E, rtol=1e-4, atol=1e-6)
    assert update.norm() <= 6 * C / E + 1e-6
    assert all(p.grad is None for p in params)


def test_private_head_step_touches_only_the_head():
    """private_part="head": the DP step updates only q(y | z1) and the label embeddings, by the clipped
    per-example gradients of those parameters alone; the rest of M2 is untouched (it learns from public rows)."""
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    from skdpsynth.synthesizers._caps_nn import M2Model, init_module
    from skdpsynth.synthesizers._caps_training import dp_step

    m2 = init_module(lambda: M2Model(4, 3, (8,), 2, ()), 0)
    ref = init_module(lambda: M2Model(4, 3, (8,), 2, ()), 0)
    head = list(m2.head.parameters())
    assert sum(p.numel() for p in head) == 4 * 3 + 3 + 2 * 8 * 3  # linear classifier + two label embeddings
    gsm = GradSampleModule(m2.head, loss_reduction="sum")
    C, E = 0.05, 4
    dp_opt = DPOptimizer(torch.optim.SGD(head, lr=1.0), noise_multiplier=0.0, max_grad_norm=C, expected_batch_size=E,
                         loss_reduction="mean")
    g = torch.Generator().manual_seed(1)
    z1, y, noise = torch.randn(5, 4, generator=g) * 5, torch.tensor([0, 1, 2, 0, 1]), torch.randn(5, 2, generator=g)
    body_before = [p.detach().clone() for p in m2.body_parameters()]
    head_before = [p.detach().clone() for p in head]
    dp_step(m2, gsm, dp_opt, z1, y, noise, 1.0, 1.0, frozen=m2.body_parameters())
    assert all(torch.equal(b, p) for b, p in zip(body_before, m2.body_parameters()))
    assert all(p.requires_grad for p in m2.parameters())
    update = torch.cat([(b - p.detach()).flatten() for b, p in zip(head_before, head)])
    expected = torch.zeros_like(update)
    for i in range(5):
        ref.zero_grad()
        ref(z1[i:i + 1], y[i:i + 1], noise[i:i + 1], 1.0, 1.0).sum().backward()
        gi = torch.cat([p.grad.flatten() for p in ref.head.parameters()])
        expected += gi * min(1.0, C / (gi.norm() + 1e-6))
    torch.testing.assert_close(update, expected / E, rtol=1e-4, atol=1e-6)


def test_empty_poisson_batch_is_noise_only():
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    from skdpsynth.synthesizers._caps_nn import M2Model, init_module
    from skdpsynth.synthesizers._caps_training import dp_step

    m2 = init_module(lambda: M2Model(4, 3, (8,), 2, (8,)), 0)
    gsm = GradSampleModule(m2, loss_reduction="sum")
    params = list(m2.parameters())
    dp_opt = DPOptimizer(torch.optim.SGD(params, lr=1.0), noise_multiplier=2.0, max_grad_norm=1.0,
                         expected_batch_size=4, loss_reduction="mean", generator=torch.Generator().manual_seed(1))
    before = [p.detach().clone() for p in params]
    dp_step(m2, gsm, dp_opt, torch.zeros(0, 4), torch.zeros(0, dtype=torch.long), torch.zeros(0, 2), 1.0, 1.0)
    update = torch.cat([(b - p.detach()).flatten() for b, p in zip(before, params)])
    assert update.std().item() == pytest.approx(2.0 / 4, rel=0.15)


@pytest.mark.slow  # scikit-learn's whole suite: about 7 s of CPU (tests/test_common.py's checks run by default)
def test_check_estimator_applicable_checks(cohorts, schema):
    """scikit-learn's checks, minus those that cannot apply to a labelled DP synthesizer (see docs/caps.md)."""
    from sklearn.utils.estimator_checks import check_estimator

    est = CAPSSynthesizer(**{**TINY, "target": "y", "n_surrogate": 200, "replay_new": 50, "replay_old": 50},
                          epsilon=None, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None, expected_failed_checks=INAPPLICABLE)
    failed = [r for r in results if r["status"] == "failed"]
    assert not failed, [(r["check_name"], str(r["exception"])[:200]) for r in failed]


def test_declared_parameters_are_validated():
    """scikit-learn's check_param_validation: one constraint per parameter, each enforced before any work."""
    from skdpsynth.utils.estimator_checks import check_param_validation

    check_param_validation("CAPSSynthesizer", CAPSSynthesizer(**{**TINY, "target": "y"}, epsilon=None,
                                                               random_state=0))


# checks of scikit-learn's suite that do not apply, with the reason: none fail. (check_array_api_input is
# skipped by scikit-learn itself without SCIPY_ARRAY_API.) scikit-learn's checks pass y as a separate argument;
# it is joined as the label column named by ``target`` ("y").
INAPPLICABLE: dict[str, str] = {}


def test_progress_bars_only_when_verbose(cohorts, schema, capsys):
    tiny(schema, **PUBLIC_SIZE).fit(cohorts[0].frame)
    assert "CAPS" not in capsys.readouterr().err
    # another seed: not the cached pre-training
    tiny(schema, verbose=1, random_state=7, **PUBLIC_SIZE).fit(cohorts[0].frame)
    err = capsys.readouterr().err
    assert "CAPS: pre-train M1" in err and "CAPS: SPSSL" in err and "CAPS: generative replay" in err


@pytest.mark.slow
def test_learns_the_label_on_68_features():
    """Paper-sized cohorts: without DP, q(y | z1) clearly beats chance (1/3) on a held-out cohort; with DP at
    epsilon 4 it stays a valid classifier (the paper, too, finds DP accuracy close to chance at n ~ 100)."""
    from sklearn.metrics import balanced_accuracy_score

    train = make_learning_habits(115, cohort_shift=0.0, random_state=11).frame
    test = make_learning_habits(400, cohort_shift=0.3, random_state=12).frame
    pub = make_learning_habits(5000, cohort_shift=-0.5, random_state=13).data
    scores = {}
    for eps in (None, 4.0):
        est = CAPSSynthesizer(target="achievement", epsilon=eps, schema=make_learning_habits(2).schema,
                              public_data=pub, pretrain_epochs=5, replay_new=0, replay_old=0, random_state=0)
        est.fit(train)
        scores[eps] = balanced_accuracy_score(test["achievement"], est.predict_label(test))
    assert scores[None] > 0.45 and scores[4.0] > 0.28, scores


@pytest.mark.slow  # a 1,500-person cohort (about 9 s of CPU); the no-schema domain estimate runs by default in
# tests/test_observables_kinds.py (CAPS without a schema, up to its model)
def test_schema_estimated_under_dp(cohorts):
    """Without a schema the domain is estimated under DP from the first cohort and charged to it (needs a
    larger cohort: at n ~ 100 no category clears the DP release threshold)."""
    big = cohort(1500, 0.0, 5).frame
    est = CAPSSynthesizer(**{**TINY, "random_state": 0, "batch_size": 150}, epsilon=20.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        est.fit(big)
    spent = est.privacy_spent_
    assert spent.is_private and spent.epsilon <= 20.0 and spent.delta <= 1e-5
    mechanisms = {r.mechanism for r in est.budget_log_}
    assert "dp-sgd" in mechanisms and len(mechanisms) >= 3  # domain + label histogram + DP-SGD
    sgd = next(r for r in est.budget_log_ if r.mechanism == "dp-sgd")
    assert sgd.epsilon <= 20.0 * (1 - est.domain_share - est.label_share) + 1e-12
    assert sgd.delta <= 1e-5 * (1 - est.domain_share) + 1e-18
    assert set(est.sample(50, random_state=0)["achievement"].dropna()) <= set(est.label_space_)


@pytest.mark.slow  # two CAPS cycles on real OULAD cohorts; cycles on simulated cohorts run by default
@pytest.mark.realdata
def test_two_cycles_on_oulad_presentations(data_dir):
    """Real cohorts: two presentations of OULAD module GGG (different students), weekly clicks discretised."""
    from skdpsynth import TableSchema

    info = pd.read_csv(data_dir / "oulad" / "studentInfo.csv")
    weekly = pd.read_csv(data_dir / "oulad" / "studentVle_weekly.csv.gz")
    key = ["code_module", "code_presentation", "id_student"]
    weekly = weekly[(weekly.code_module == "GGG") & weekly.week.between(0, 5)]
    clicks = weekly.pivot_table(index=key, columns="week", values="sum_click", fill_value=0)
    clicks = clicks.reindex(columns=range(6), fill_value=0)
    levels = np.select([clicks.to_numpy() == 0, clicks.to_numpy() <= 30], ["inactive", "active"], "dedicated")
    feats = pd.DataFrame(levels, index=clicks.index, columns=[f"w{w}" for w in range(6)]).reset_index()
    frame = info[info.code_module == "GGG"][key + ["final_result"]].merge(feats, on=key, how="left")
    frame[[f"w{w}" for w in range(6)]] = frame[[f"w{w}" for w in range(6)]].fillna("inactive")
    schema = TableSchema.from_dict({
        **{f"w{w}": {"kind": "categorical", "categories": ["inactive", "active", "dedicated"], "nullable": False}
           for w in range(6)},
        "final_result": {"kind": "categorical", "categories": ["Withdrawn", "Fail", "Pass", "Distinction"],
                         "nullable": False}})
    cohorts = [frame[frame.code_presentation == p].sample(110, random_state=0)[list(schema.names)]
               for p in ("2013J", "2014J")]
    assert set(cohorts[0].final_result) <= set(schema["final_result"].categories)
    est = CAPSSynthesizer(**{**TINY, "target": "final_result"}, schema=schema, epsilon=2.0, random_state=0)
    est.fit(cohorts[0]).partial_fit(cohorts[1])
    assert est.n_cycles_ == 2 and est.privacy_spent_.epsilon <= 2.0
    out = est.sample(200, random_state=0)
    assert set(out.final_result) <= {"Withdrawn", "Fail", "Pass", "Distinction"}
    assert est.predict_label_proba(cohorts[1]).shape == (110, 4)


def test_label_replay_carries_the_previous_release(cohorts, schema):
    """From cycle 2 on, rows generated by the previous release are public labelled rows of SPSSL (same label
    space only); they cost nothing, and a new label space turns them off."""
    est = tiny(schema, epsilon=1.0, expected_cohort_size=EXPECTED).fit(cohorts[0].frame)
    assert est.dpsgd_[-1]["label_replay_rows"] == 0
    n_log = len(est.budget_log_)
    est.partial_fit(cohorts[1].frame)
    assert est.dpsgd_[-1]["label_replay_rows"] == TINY["label_replay"]
    assert len(est.budget_log_) == n_log + 2  # this cycle's label histogram and DP-SGD only
    essay = cohorts[2].frame.assign(achievement=lambda d: np.where(d.achievement == "low", "fail", "pass"))
    est.partial_fit(essay, label_space=["fail", "pass"])
    assert est.dpsgd_[-1]["label_replay_rows"] == 0
    assert est.dpsgd_[-1]["private_parameters"] == sum(p.numel() for p in est.m2_.head.parameters())


def test_replay_anchor_draws_public_rows():
    """replay_anchor="public": the old half of the replay comes from the given public rows, not from M1."""
    from skdpsynth.synthesizers._caps_nn import M1VAE, FeatureCodec, M2Model, init_module
    from skdpsynth.synthesizers._caps_training import TrainSettings, replay

    b = make_learning_habits(50, n_weeks=N_WEEKS, random_state=0)
    codec = FeatureCodec(b.schema.select(b.feature_names))
    m1 = init_module(lambda: M1VAE(codec.input_dim, codec.output_dim, 0, (8,), 2), 0)
    m2 = init_module(lambda: M2Model(2, 3, (8,), 2, ()), 0)
    s = TrainSettings.of(CAPSSynthesizer(**{**TINY, "replay_new": 0, "replay_old": 30, "replay_epochs": 1,
                                            "lr": 0.0}))
    seen = []
    import skdpsynth.synthesizers._caps_training as training

    original = training.train_m1
    try:
        training.train_m1 = lambda m, c, data, *a, **k: seen.append(data) or m
        anchor = codec.encode(b.data)[1:]
        replay(m1, m2, None, codec, [1 / 3] * 3, s, torch.Generator().manual_seed(0), anchor=anchor)
    finally:
        training.train_m1 = original
    rows = {tuple(r) for r in anchor[0].tolist()}
    assert len(seen[0][0]) == 30 and all(tuple(r) in rows for r in seen[0][0].tolist())


@pytest.mark.usefixtures("reproducible_noise")
def test_pretraining_is_reused_only_for_identical_public_inputs(cohorts, schema):
    """A refit with the same public rows and random_state reuses the pre-trained M1 (same weights, same
    release); other public rows or another seed pre-train afresh."""
    from skdpsynth.synthesizers import _caps_training as training

    pub = make_learning_habits(300, n_weeks=N_WEEKS, cohort_shift=-0.5, random_state=9).data
    fits = [tiny(schema, public_data=p, random_state=r, epsilon=1.0).fit(cohorts[0].frame)
            for p, r in ((pub, 0), (pub, 0), (pub.iloc[::-1].reset_index(drop=True), 0), (pub, 1))]
    w = [torch.cat([p.detach().flatten() for p in e.m1_.parameters()]) for e in fits]
    assert torch.equal(w[0], w[1]) and not torch.equal(w[0], w[2]) and not torch.equal(w[0], w[3])
    pd.testing.assert_frame_equal(fits[0].sample(30, random_state=0), fits[1].sample(30, random_state=0))
    assert len(training._PRETRAINED) <= training._PRETRAINED_MAX


def test_pretraining_is_not_reused_across_network_widths(cohorts, schema):
    """Two schemas that differ only in a missing class that no public row uses encode those rows to the same
    codes; the cache handed the first schema's M1 to the second (seen in CI: "mat1 and mat2 shapes cannot be
    multiplied (1500x36 and 37x32)" after a DP domain estimate made one column nullable in one fit, not the next)."""
    from dataclasses import replace

    from skdpsynth.synthesizers._caps_nn import FeatureCodec
    from skdpsynth.synthesizers._caps_training import TrainSettings, pretrain_m1

    features = schema.select([c for c in schema.names if c != "achievement"])
    first = features.columns[0]
    nullable = replace(features, columns=(replace(first, nullable=not first.nullable), *features.columns[1:]))
    est = tiny(schema, random_state=0)
    pub = features.validate(make_learning_habits(200, n_weeks=N_WEEKS, random_state=3).data[list(features.names)])
    for sch in (features, nullable):
        codec = FeatureCodec(sch)
        m1 = pretrain_m1(codec, pub, TrainSettings.of(est), torch.Generator().manual_seed(0))
        m1.encode(codec.encode(pub)[0])  # the width M1 was built for is this codec's


def test_benchmark_pairing_and_metrics():
    """The benchmark's one-shot pairing uses every baseline run once per cycle; AJS is 0 on identical tables."""
    import itertools
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from caps_cycles import _blocks, ajs, baseline_order

    orders = ["".join(o) for o in itertools.permutations("012")]
    for cycle in (2, 3):
        base = [baseline_order(o, cycle) for o in orders]
        assert sorted(base) == sorted(orders)
        assert all(b[0] == o[cycle - 1] for o, b in zip(orders, base))
    b = make_learning_habits(60, random_state=0)
    blocks = _blocks(list(b.feature_names), 17, ["morning", "afternoon", "evening", "night"], [0, 4, 8, 12, 17])
    assert len(blocks) == 16 and sorted(sum(blocks, [])) == sorted(b.feature_names)
    assert ajs(b.frame, b.frame, "achievement", blocks, b.schema) == 0.0
    other = make_learning_habits(60, cohort_shift=2.0, random_state=1).frame
    assert 0 < ajs(b.frame, other, "achievement", blocks, b.schema) <= 1


def test_unlabelled_loss_can_leave_the_classifier_to_the_labels():
    """unlabelled_trains_classifier=False: U(z1) still trains M2's generative part but gives q(y | z1) no
    gradient (it learns from labelled rows only); True is Kingma et al.'s M2."""
    from skdpsynth.synthesizers._caps_nn import M2Model, init_module

    g = torch.Generator().manual_seed(0)
    z1, noise = torch.randn(9, 4, generator=g), torch.randn(9, 2, generator=g)
    grads = {}
    for train in (False, True):
        m2 = init_module(lambda: M2Model(4, 3, (8,), 2, ()), 0)
        m2.unlabelled_loss(z1, noise, 1.0, train_classifier=train).mean().backward()
        cls = [p.grad for p in m2.head.cls.parameters()]
        grads[train] = (cls, [p.grad for p in m2.body_parameters()])
    assert all(gr is None or not gr.any() for gr in grads[False][0])
    assert all(gr is not None and gr.abs().sum() > 0 for gr in grads[True][0])
    assert all(gr is not None and gr.abs().sum() > 0 for gr in grads[False][1])


def test_adapt_prior_matches_the_aggregate_posterior(cohorts, schema):
    """adapt_prior=True: p(z2 | y) is the Gaussian of the aggregate posterior q(z2 | y, z1) over public z1
    (samples of M1 labelled by q(y | z1)); False keeps N(0, I)."""
    from skdpsynth.synthesizers._caps_training import encode_z1, sample_m1

    kw = dict(epsilon=None, n_public_samples=3000, replay_new=0, replay_old=0)
    off = tiny(schema, adapt_prior=False, **kw).fit(cohorts[0].frame)
    assert off.prior_ is None
    est = tiny(schema, **kw).fit(cohorts[0].frame)
    means, stds = est.prior_
    assert means.shape == stds.shape == (3, TINY["z2_dim"]) and bool((stds > 0).all())
    g = torch.Generator().manual_seed(5)
    codes, nums, _ = sample_m1(est.m1_, est.codec_, 6000, g)
    z1 = encode_z1(est.m1_, est.codec_, codes, nums, g)
    with torch.no_grad():
        y = torch.multinomial(torch.softmax(est.m2_.cls(z1), 1), 1, generator=g).squeeze(1)
        mu2, lv2 = est.m2_.posterior_z2(z1, y)
    for c in range(3):
        sel = y == c
        if int(sel.sum()) < 200:
            continue
        sd = (lv2[sel].exp().mean(0) + mu2[sel].var(0)).sqrt()
        torch.testing.assert_close(means[c], mu2[sel].mean(0), atol=0.1 + 0.15 * float(sd.max()), rtol=0)
        torch.testing.assert_close(stds[c], sd, atol=0.1, rtol=0.2)


def test_private_part_sets_what_dp_sgd_noises(cohorts, schema):
    """private_part="all" trains (and noises) every parameter of M2 privately; "head" only the label head."""
    n = {}
    for part in ("head", "all"):
        est = tiny(schema, epsilon=1.0, expected_cohort_size=EXPECTED, private_part=part, replay_new=0,
                   replay_old=0).fit(cohorts[0].frame)
        n[part] = est.dpsgd_[-1]["private_parameters"]
        assert n[part] == sum(p.numel() for p in (est.m2_.head if part == "head" else est.m2_).parameters())
    assert n["head"] < n["all"]
