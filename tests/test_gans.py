"""DP-CTGAN and PATE-GAN: accounting (recomputed independently), public-grid encoding, contract."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import make_mixed, make_mixed_schema
from sklearn.utils.estimator_checks import check_estimator

from skdpsynth import DPCTGANSynthesizer, PATEGANSynthesizer, PrivacyBudgetError
from skdpsynth._grid import PublicGrid
from skdpsynth.privacy import NoiseSource, zcdp_to_approx_dp
from skdpsynth.privacy._pate import GNMaxAggregator, pate_record, plan_pate, teacher_partition
from skdpsynth.synthesizers._gan_common import GridEncoder
from skdpsynth.utils.estimator_checks import check_synthesizer

pytestmark = pytest.mark.requires("torch", "opacus")  # an extra


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny networks: one intra-op thread is fastest (and fair on a shared machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

_TINY_DP = {"epochs": 1, "batch_size": 64, "hidden_dims": (16,), "noise_dim": 8}
_TINY_PATE = {"n_iter": 3, "n_teachers": 4, "teacher_steps": 1, "batch_size": 16, "hidden_dims": (16,), "noise_dim": 8}


def test_grid_encoder_round_trip(mixed_frame, mixed_schema):
    X = mixed_schema.validate(mixed_frame)
    enc = GridEncoder(PublicGrid(mixed_schema, 16))
    M = enc.transform(X)
    assert M.shape == (len(X), enc.dim) and M.dtype == np.float32
    for b in enc.blocks:  # exactly one cell per column, positions in [0, 1]
        np.testing.assert_array_equal(M[:, b.start:b.start + b.n_cells].sum(1), 1.0)
        if b.offset is not None:
            assert ((M[:, b.offset] >= 0) & (M[:, b.offset] <= 1)).all()
    back = enc.inverse(M, np.random.default_rng(0))  # one-hot rows decode to the same cells and positions
    np.testing.assert_allclose(back["score"], X["score"], atol=1e-3)
    assert (back["course"].fillna("NA") == X["course"].fillna("NA")).all()
    assert (back["online"].fillna("NA") == X["online"].fillna("NA")).all()


# ------------------------------------------------------------------------------------------ DP-CTGAN
@pytest.fixture(scope="module")
def dpctgan_fits():
    """DP-CTGAN fitted at epsilon 0.5 and 3 (each DP-SGD fit calibrates its noise: about 2 s of CPU)."""
    return {eps: DPCTGANSynthesizer(epsilon=eps, delta=1e-5, schema=make_mixed_schema(), random_state=0, **_TINY_DP)
            .fit(make_mixed()) for eps in (0.5, 3.0)}


@pytest.mark.parametrize("epsilon", [0.5, 3.0])
def test_dpctgan_accounting_recomputes(dpctgan_fits, epsilon):
    from opacus.accountants import RDPAccountant

    est = dpctgan_fits[epsilon]
    clip, count, sgd = est.budget_log_
    assert "clipped to the public bounds" in clip.target and math.isclose(clip.epsilon, 0.01 * epsilon)
    assert count.mechanism == "geometric" and math.isclose(count.epsilon, 0.02 * 0.99 * epsilon)
    assert sgd.mechanism == "dp-sgd" and sgd.kind == "approx" and sgd.delta == 1e-5
    d = sgd.details
    acc = RDPAccountant()
    acc.history = [(d["noise_multiplier"], d["sample_rate"], d["steps"])]
    eps_check = acc.get_epsilon(1e-5)  # Opacus' default (fractional) orders: at least as tight
    assert eps_check <= sgd.epsilon * (1 + 1e-6)
    assert sgd.epsilon <= 0.98 * epsilon * (1 + 1e-9)
    assert d["steps"] == est.n_steps_ and d["sample_rate"] == est.sample_rate_
    assert sgd.noise_scale == pytest.approx(d["noise_multiplier"] * d["max_grad_norm"])
    assert est.privacy_spent_.epsilon <= epsilon * (1 + 1e-9)
    assert est.privacy_spent_.delta <= 1e-5


def test_dpctgan_noise_grows_as_epsilon_shrinks(dpctgan_fits):
    assert dpctgan_fits[0.5].noise_multiplier_ > dpctgan_fits[3.0].noise_multiplier_ > 0


def test_dpctgan_non_private(mixed_frame, mixed_schema):
    est = DPCTGANSynthesizer(epsilon=None, schema=mixed_schema, random_state=0, **_TINY_DP).fit(mixed_frame)
    assert est.noise_multiplier_ == 0 and not est.privacy_spent_.is_private
    out = est.sample(100, random_state=0)
    assert list(out.columns) == list(mixed_frame.columns)
    assert out["score"].dropna().between(0, 100).all()


@pytest.mark.parametrize("params, error", [({"delta": 0.0}, PrivacyBudgetError), ({"epochs": 0}, ValueError),
                                           ({"max_grad_norm": -1.0}, ValueError), ({"count_share": 1.0}, ValueError),
                                           ({"hidden_dims": (0,)}, ValueError)])
def test_dpctgan_bad_parameters_before_any_budget(mixed_frame, mixed_schema, params, error):
    est = DPCTGANSynthesizer(schema=mixed_schema, **{**_TINY_DP, **params})
    with pytest.raises(error):
        est.fit(mixed_frame)
    assert not hasattr(est, "budget_log_")


@pytest.mark.slow  # about 4 s of CPU; every check of DP-CTGAN also runs with -m slow below
def test_dpctgan_checks_quick(mixed_frame, mixed_schema):
    # "budget" and "no_training_rows" run in every default run with these settings: tests/test_common.py,
    # test_synthesizer_checks[dpctgan-privacy] (each DP-SGD fit calibrates its noise anew: about 1.5 s of CPU)
    check_synthesizer(DPCTGANSynthesizer(epsilon=1.0, schema=mixed_schema, random_state=0, **_TINY_DP), mixed_frame,
                      checks=["determinism"])


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [1.0, None])
def test_dpctgan_synthesizer_checks(mixed_frame, mixed_schema, epsilon):
    check_synthesizer(DPCTGANSynthesizer(epsilon=epsilon, schema=mixed_schema, random_state=0, **_TINY_DP),
                      mixed_frame)


@pytest.mark.slow
def test_dpctgan_sklearn_check_estimator():
    # scikit-learn's checks fit 1-40 rows: no DP domain estimate is possible there (it refuses before spending,
    # see tests/test_domain.py), so the API checks run on the non-private path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(DPCTGANSynthesizer(epsilon=None, random_state=0, **_TINY_DP))


# ------------------------------------------------------------------------------------------ PATE-GAN
@pytest.mark.parametrize("epsilon", [1.0, 10.0])
def test_pategan_accounting_is_data_independent(mixed_frame, mixed_schema, epsilon):
    est = PATEGANSynthesizer(epsilon=epsilon, delta=1e-5, schema=mixed_schema, random_state=0, **_TINY_PATE)
    est.fit(mixed_frame)
    # the noisy count of clipped values, the DP count of people (n_estimate_), then every vote query
    clip, count, rec = est.budget_log_
    assert "clipped to the public bounds" in clip.target and math.isclose(clip.epsilon, 0.01 * epsilon)
    assert count.mechanism == "geometric" and math.isclose(count.epsilon, 0.02 * 0.99 * epsilon)
    T = _TINY_PATE["n_iter"] * _TINY_PATE["batch_size"]
    assert rec.kind == "zcdp" and rec.details["queries"] == T == est.n_queries_
    assert rec.sensitivity == pytest.approx(math.sqrt(2))
    # each query: Gaussian on a vote histogram with L2 sensitivity sqrt(2) -> rho_q = 2 / (2 sigma^2)
    assert rec.rho == pytest.approx(T / est.vote_sigma_ ** 2)
    assert zcdp_to_approx_dp(rec.rho, 1e-5) <= epsilon * (1 + 1e-9)
    assert est.privacy_spent_.epsilon == pytest.approx(epsilon, rel=1e-6)  # the whole budget, no more


def test_pategan_more_queries_more_noise(mixed_frame, mixed_schema):
    s1 = PATEGANSynthesizer(epsilon=1.0, schema=mixed_schema, random_state=0, **_TINY_PATE).fit(mixed_frame)
    s2 = PATEGANSynthesizer(epsilon=1.0, schema=mixed_schema, random_state=0,
                            **{**_TINY_PATE, "n_iter": 12}).fit(mixed_frame)
    assert s2.vote_sigma_ == pytest.approx(2 * s1.vote_sigma_)


def test_pategan_non_private_and_no_teachers_kept(mixed_frame, mixed_schema):
    est = PATEGANSynthesizer(epsilon=None, schema=mixed_schema, random_state=0, **_TINY_PATE).fit(mixed_frame)
    assert est.vote_sigma_ == 0 and not est.privacy_spent_.is_private
    assert not any("teacher" in k for k in vars(est) if k.endswith("_"))
    out = est.sample(50, random_state=0)
    assert isinstance(out, pd.DataFrame) and len(out) == 50


def test_pategan_checks_quick(mixed_frame, mixed_schema):
    check_synthesizer(PATEGANSynthesizer(epsilon=1.0, schema=mixed_schema, random_state=0, **_TINY_PATE), mixed_frame,
                      checks=["determinism", "budget", "no_training_rows", "pickle_roundtrip"])


@pytest.mark.slow
@pytest.mark.realdata
def test_pategan_learns_without_mode_collapse(data_dir):
    """Regression: absolute teacher votes were all "fake", the student saw one class and the generator collapsed
    (quality 0.29-0.33 and one dominant outcome class on UCI dropout even without noise)."""
    from skdpsynth.datasets import load_uci_dropout
    from skdpsynth.metrics import sdmetrics_quality

    d = load_uci_dropout(path=str(data_dir / "uci_dropout" / "data.csv"))
    est = PATEGANSynthesizer(epsilon=None, schema=d.schema, random_state=0).fit(d.frame)
    syn = est.sample(len(d.frame), random_state=1)
    shares = syn[d.target].value_counts(normalize=True)
    assert len(shares) > 1 and shares.iloc[0] < 0.9
    assert sdmetrics_quality(d.frame, syn, d.schema)["overall"] > 0.55


@pytest.mark.parametrize("params", [{"n_teachers": 0}, {"n_iter": 1.5}, {"learning_rate": 0.0}])
def test_pategan_bad_parameters_before_any_budget(mixed_frame, mixed_schema, params):
    est = PATEGANSynthesizer(schema=mixed_schema, **{**_TINY_PATE, **params})
    with pytest.raises(ValueError, match=next(iter(params))):
        est.fit(mixed_frame)
    assert not hasattr(est, "budget_log_")


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [1.0, None])
def test_pategan_synthesizer_checks(mixed_frame, mixed_schema, epsilon):
    check_synthesizer(PATEGANSynthesizer(epsilon=epsilon, schema=mixed_schema, random_state=0, **_TINY_PATE),
                      mixed_frame)


@pytest.mark.slow
def test_pategan_sklearn_check_estimator():
    # scikit-learn's checks fit 1-40 rows: no DP domain estimate is possible there (it refuses before spending,
    # see tests/test_domain.py), so the API checks run on the non-private path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(PATEGANSynthesizer(epsilon=None, random_state=0, **_TINY_PATE))


# ------------------------------------------------------------------------------------------ shared
@pytest.mark.parametrize("cls, params", [(DPCTGANSynthesizer, _TINY_DP), (PATEGANSynthesizer, _TINY_PATE)])
def test_progress_bar_only_when_verbose(mixed_frame, mixed_schema, capsys, cls, params):
    cls(schema=mixed_schema, random_state=0, **params).fit(mixed_frame)
    assert capsys.readouterr().err == ""  # library use: silent
    est = cls(schema=mixed_schema, random_state=0, verbose=True, **params).fit(mixed_frame)
    err = capsys.readouterr().err
    assert ("DP-CTGAN:" in err or "PATE-GAN:" in err) and "it/s" in err
    assert isinstance(est.n_estimate_, int) and est.n_estimate_ >= 1


def test_gnmax_plan_and_query_budget():
    plan = plan_pate(rho=0.5, queries=40, n_teachers=10)
    assert plan.sigma == pytest.approx(math.sqrt(40 / 0.5)) and plan.rho == pytest.approx(0.5)
    rec = pate_record(plan, "votes")
    assert rec.kind == "zcdp" and rec.rho == pytest.approx(0.5) and rec.details["queries"] == 40
    agg = GNMaxAggregator(plan, NoiseSource.reproducible_from(0))
    labels = agg.labels(np.array([10] * 30 + [0] * 10))  # unanimous votes survive sigma ~ 9 mostly
    assert labels.dtype == bool and labels[:30].mean() > 0.6 and labels[30:].mean() < 0.4
    with pytest.raises(RuntimeError, match="40 queries"):
        agg.labels(np.array([5]))  # the plan paid for 40
    with pytest.raises(ValueError, match="vote counts"):
        GNMaxAggregator(plan, NoiseSource.secure()).labels(np.array([11]))


def test_teacher_partition_is_secret_and_uniform():
    a, b = teacher_partition(5000, 7, NoiseSource.secure()), teacher_partition(5000, 7, NoiseSource.secure())
    assert not np.array_equal(a, b)
    assert set(np.unique(a)) == set(range(7)) and np.bincount(a).min() > 600
    np.testing.assert_array_equal(teacher_partition(100, 3, NoiseSource.reproducible_from(1)),
                                  teacher_partition(100, 3, NoiseSource.reproducible_from(1)))
