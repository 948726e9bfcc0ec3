"""DP-Histogram and the non-private CTGAN / TVAE adapters: contract, accounting, recovery, refusals."""

import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.utils.estimator_checks import check_estimator

from skdpsynth import (
    CTGANSynthesizer,
    DPHistogramSynthesizer,
    DPMarginalsSynthesizer,
    SchemaError,
    TableSchema,
    TVAESynthesizer,
)
from skdpsynth.privacy import NoiseSource
from skdpsynth.utils._random import check_random_state, cohort_seed_sequence
from skdpsynth.utils.estimator_checks import check_param_validation, check_synthesizer


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny networks: one intra-op thread is fastest (and fair on a shared machine)."""
    try:
        import torch
    except ImportError:  # a core install: the tests that train networks are skipped
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

_PAIR_SCHEMA = TableSchema.from_dict({
    "course": {"kind": "categorical", "categories": ["math", "bio", "art"], "nullable": False},
    "online": {"kind": "boolean", "nullable": False},
    "grade": {"kind": "integer", "lower": 0, "upper": 4, "nullable": False},
})


def _dependent(n, rng):
    course = rng.choice(["math", "bio", "art"], n, p=[0.5, 0.3, 0.2])
    online = np.where(course == "math", rng.random(n) < 0.9, rng.random(n) < 0.1)
    grade = np.where(online, rng.integers(3, 5, n), rng.integers(0, 3, n))
    return pd.DataFrame({"course": course, "online": online, "grade": grade})


# ------------------------------------------------------------------------------------------ DP-Histogram
def test_histogram_sklearn_check_estimator():
    # scikit-learn's checks fit 1-40 rows: no DP domain estimate is possible there (it refuses before spending,
    # see tests/test_domain.py), so the API checks run on the non-private path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(DPHistogramSynthesizer(epsilon=None, random_state=0), expected_failed_checks={
            "check_dtype_object": "10 object columns x up to 9 cells = 3e10 joint cells: refused by max_cells "
                                  "(the documented limit of a full contingency table)",
        })


@pytest.mark.parametrize("epsilon", [1.0, None])
def test_histogram_synthesizer_checks(mixed_frame, mixed_schema, epsilon):
    check_synthesizer(DPHistogramSynthesizer(epsilon=epsilon, schema=mixed_schema, random_state=0), mixed_frame)


def test_histogram_budget_is_one_geometric_release():
    X = _dependent(1000, np.random.default_rng(0))
    est = DPHistogramSynthesizer(epsilon=0.7, schema=_PAIR_SCHEMA, random_state=0).fit(X)
    clip, rec = est.budget_log_  # the noisy count of clipped grades, then the histogram
    assert "clipped to the public bounds" in clip.target and math.isclose(clip.epsilon, 0.007)
    assert rec.mechanism == "geometric" and rec.kind == "pure"
    assert rec.sensitivity == 1.0 and math.isclose(rec.epsilon, 0.7 * 0.99)
    assert est.n_cells_ == 3 * 2 * 5
    assert math.isclose(est.privacy_spent_.epsilon, 0.7) and est.privacy_spent_.delta == 0


def test_histogram_keeps_the_joint_distribution_marginals_do_not():
    rng = np.random.default_rng(1)
    X = _dependent(20000, rng)
    hist = DPHistogramSynthesizer(epsilon=2.0, schema=_PAIR_SCHEMA, random_state=0).fit(X).sample(20000, random_state=0)
    marg = DPMarginalsSynthesizer(epsilon=2.0, schema=_PAIR_SCHEMA, random_state=0).fit(X).sample(20000, random_state=0)

    def joint(df):
        return df.groupby(["course", "online", "grade"]).size().div(len(df))

    real = joint(X)
    tvd_hist = 0.5 * real.sub(joint(hist), fill_value=0).abs().sum()
    tvd_marg = 0.5 * real.sub(joint(marg), fill_value=0).abs().sum()
    assert tvd_hist < 0.03
    assert tvd_marg > 0.2


def test_histogram_non_private_is_the_empirical_joint():
    X = _dependent(500, np.random.default_rng(2))
    est = DPHistogramSynthesizer(epsilon=None, schema=_PAIR_SCHEMA, random_state=0).fit(X)
    codes = est.grid_.encode(_PAIR_SCHEMA.validate(X))
    flat = np.ravel_multi_index(tuple(codes.T), tuple(est.grid_.n_cells))
    np.testing.assert_allclose(est.probabilities_, np.bincount(flat, minlength=est.n_cells_) / len(X))
    assert not est.privacy_spent_.is_private


def test_histogram_refuses_large_tables_before_any_budget():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({f"x{i}": rng.normal(size=50) for i in range(9)})
    schema = TableSchema.from_dict({c: {"kind": "continuous", "lower": -5, "upper": 5} for c in X})
    est = DPHistogramSynthesizer(epsilon=1.0, schema=schema, n_bins=20)
    with pytest.raises(SchemaError, match="max_cells") as info:
        est.fit(X)
    assert "'x8'" in str(info.value) and "n_bins" in str(info.value)
    assert not hasattr(est, "budget_log_")


def test_histogram_partial_fit_adds_cohorts():
    rng = np.random.default_rng(4)
    est = DPHistogramSynthesizer(epsilon=1.0, schema=_PAIR_SCHEMA, random_state=0)
    est.partial_fit(_dependent(3000, rng))
    total_1 = est.counts_.sum()
    est.partial_fit(_dependent(3000, rng))
    assert abs(est.counts_.sum() - 2 * total_1) < 600  # counts of different people add up (noise aside)
    assert est.privacy_spent_.per_cohort == ((1.0, 0.0), (1.0, 0.0))
    assert math.isclose(est.privacy_spent_.epsilon, 1.0)  # parallel: different people


@pytest.mark.parametrize("bad", [{"n_bins": 0}, {"max_cells": -1}])
def test_histogram_bad_parameters(mixed_frame, mixed_schema, bad):
    est = DPHistogramSynthesizer(schema=mixed_schema, **bad)
    with pytest.raises(ValueError, match=next(iter(bad))):
        est.fit(mixed_frame)
    assert not hasattr(est, "budget_log_")


# ------------------------------------------------------------------------------------------ CTGAN / TVAE
_TINY_CTGAN = {"epochs": 1, "batch_size": 50, "pac": 5, "generator_dim": (16,), "discriminator_dim": (16,),
               "embedding_dim": 8}
_TINY_TVAE = {"epochs": 1, "batch_size": 50, "compress_dims": (16,), "decompress_dims": (16,), "embedding_dim": 8}


@pytest.mark.parametrize("cls, params", [
    pytest.param(CTGANSynthesizer, _TINY_CTGAN, marks=pytest.mark.slow),  # rdt's mixture fits take ~20 s
    (TVAESynthesizer, _TINY_TVAE),
])
def test_adapters_fit_sample_and_log_non_private(mixed_frame, mixed_schema, cls, params):
    est = cls(schema=mixed_schema, random_state=0, **params).fit(mixed_frame.iloc[:100])
    spent = est.privacy_spent_
    assert not spent.is_private and math.isinf(spent.epsilon)
    assert all(r.kind == "none" for r in est.budget_log_)
    out = est.sample(300, random_state=0)
    assert list(out.columns) == list(mixed_frame.columns)
    assert out["age"].dtype == mixed_frame["age"].dtype
    assert out["enrolled"].dtype == mixed_frame["enrolled"].dtype
    assert set(out["course"].dropna()) <= set(mixed_schema["course"].categories)
    assert out["score"].dropna().between(0, 100).all()
    pd.testing.assert_frame_equal(out, est.sample(300, random_state=0))


@pytest.mark.parametrize("cls", [CTGANSynthesizer, TVAESynthesizer])
def test_adapters_refuse_an_epsilon(mixed_frame, cls):
    est = cls(epsilon=1.0)
    with pytest.raises(ValueError, match="not differentially private"):
        est.fit(mixed_frame)
    assert not hasattr(est, "budget_log_")


@pytest.mark.requires("ctgan")
def test_ctgan_batch_must_be_a_multiple_of_pac(mixed_frame):
    with pytest.raises(ValueError, match="multiple of pac"):
        CTGANSynthesizer(batch_size=55, pac=10).fit(mixed_frame)


@pytest.mark.slow
@pytest.mark.parametrize("cls, params", [(CTGANSynthesizer, _TINY_CTGAN), (TVAESynthesizer, _TINY_TVAE)])
def test_adapters_synthesizer_checks(mixed_frame, mixed_schema, cls, params):
    check_synthesizer(cls(schema=mixed_schema, random_state=0, **params), mixed_frame.iloc[:200])


@pytest.mark.slow
@pytest.mark.parametrize("cls, params", [(CTGANSynthesizer, _TINY_CTGAN), (TVAESynthesizer, _TINY_TVAE)])
def test_adapters_sklearn_check_estimator(cls, params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(cls(random_state=0, **params))


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


def test_histogram_secure_fits_differ_and_keep_no_noise_state():
    X = _dependent(1000, np.random.default_rng(5))
    a, b = (DPHistogramSynthesizer(epsilon=1.0, schema=_PAIR_SCHEMA, random_state=0).fit(X) for _ in range(2))
    assert not np.array_equal(a.counts_, b.counts_)
    assert a.privacy_spent_.publishable
    for est in (a, pickle.loads(pickle.dumps(a))):
        # the only generator is the sampling stream, derived from random_state alone (not from the noise)
        assert _random_objects(est) == ["est._sample_rng_"]
        assert est._sample_rng_.bit_generator.state == \
            check_random_state(cohort_seed_sequence(0, -1)).bit_generator.state
    seeded = [DPHistogramSynthesizer(epsilon=1.0, schema=_PAIR_SCHEMA, random_state=0, reproducible_noise=True).fit(X)
              for _ in range(2)]
    np.testing.assert_array_equal(seeded[0].counts_, seeded[1].counts_)
    assert not seeded[0].privacy_spent_.publishable


def test_histogram_n_estimate_is_the_noisy_total():
    n = 3000
    X = _dependent(n, np.random.default_rng(6))
    est = DPHistogramSynthesizer(epsilon=1.0, schema=_PAIR_SCHEMA, random_state=0).fit(X)
    assert est.counts_.dtype == np.int64
    assert est.n_estimate_ == est.counts_.sum() and isinstance(est.n_estimate_, int)
    assert abs(est.n_estimate_ - n) < 60  # 30 cells of discrete Laplace noise, scale 1
    assert len(est.sample(random_state=0)) == est.n_estimate_


@pytest.mark.parametrize("given", [True, False])
def test_histogram_cell_refusal_comes_first_and_hides_n(given):
    # with a schema the grid is public: refused before anything is read or spent. Without one the columns' kinds
    # (and so their cells) are a DP answer: refused from the estimated grid, after the domain's share only
    n = 57 if given else 3001
    rng = np.random.default_rng(7)
    X = pd.DataFrame({f"x{i}": rng.normal(size=n) for i in range(9)})
    schema = TableSchema.from_dict({c: {"kind": "continuous", "lower": -5, "upper": 5} for c in X}) if given else None
    est = DPHistogramSynthesizer(epsilon=1.0 if given else 20.0, schema=schema, n_bins=20)
    with pytest.raises(SchemaError, match="max_cells") as info:
        est.fit(X)
    assert str(n) not in str(info.value)
    if given:
        assert not hasattr(est, "budget_log_")
    else:
        assert est.budget_log_ and all("domain" in r.target for r in est.budget_log_)


def test_histogram_wide_table_refused_from_its_width_alone():
    # 24 columns have at least 2**24 cells whatever they hold: refused before any spend, without reading values
    X = pd.DataFrame({f"c{i}": ["a", "b"] * 10 for i in range(24)})
    est = DPHistogramSynthesizer(epsilon=1.0)
    with pytest.raises(SchemaError, match="whatever the columns hold"):
        est.fit(X)
    assert not hasattr(est, "budget_log_")


def test_histogram_parameter_validation():
    check_param_validation("DPHistogramSynthesizer", DPHistogramSynthesizer())
