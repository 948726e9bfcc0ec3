"""The sequence synthesizers' observables do not follow one learner (issue 22), and their partition selection.

The attacks: add one learner with an event no one else has (or a label no one else has, or a sequence longer
than ``max_length``) to a table and watch what a user sees -- warnings, errors, the fitted attributes' kinds. The
first versions warned in every fit with the extra learner and in none without (epsilon >= 6.3 against a claim of
1): here every observable must be identical for D and D + 1 in every one of 20 seeds.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from skdpsynth.datasets import make_clickstream
from skdpsynth.exceptions import PrivacyBudgetError, SchemaError
from skdpsynth.privacy import BudgetAccountant, NoiseSource
from skdpsynth.privacy._domain_plan import discrete_gaussian_tail
from skdpsynth.privacy._partition import (
    WEIGHT_SCALE,
    bounded_key_weights,
    weighted_gaussian_selection,
    weighted_gaussian_threshold,
)
from skdpsynth.synthesizers import DPHistSeqSynthesizer, DPMarkovSynthesizer

COLS = {"id_column": "learner_id", "order_column": "position", "event_columns": "activity",
        "label_column": "outcome", "max_length": 40}
SEEDS = range(20)
VOCABULARY = ["resource", "oucontent", "forumng", "quiz", "url", "subpage", "homepage"]  # make_clickstream's
_NUMBER = re.compile(r"-?\d+(\.\d+)?(e[+-]?\d+)?")


@pytest.fixture(scope="module")
def clicks() -> pd.DataFrame:
    return make_clickstream(300, min_length=5, max_length=30, random_state=0).frame


def _observe(est, X: pd.DataFrame) -> dict:
    """What a user sees of one fit (numbers masked: noisy figures may differ, their presence may not)."""
    out: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est.fit(X)
            out["sample"] = [(str(c), str(t)) for c, t in est.sample(10, random_state=0).dtypes.items()]
        except Exception as exc:  # noqa: BLE001 -- the exception is the observable
            out["error"] = (type(exc).__name__, _NUMBER.sub("#", str(exc)))
    out["warnings"] = sorted({(w.category.__name__, _NUMBER.sub("#", str(w.message))) for w in caught})
    out["attributes"] = sorted(k for k in vars(est) if k.endswith("_"))
    return out


def _one_learner(events: str, label: str, length: int = 60) -> pd.DataFrame:
    return pd.DataFrame({"learner_id": 10_000, "position": range(length), "activity": events, "outcome": label})


@pytest.mark.parametrize("cls", [DPMarkovSynthesizer, DPHistSeqSynthesizer])
def test_observables_are_identical_with_one_more_learner(clicks, cls):
    # one learner extreme in every way at once: an event and a label no one else has, 500 events (max_length 40)
    plus = pd.concat([clicks, _one_learner("zzz-unique-event", "zzz-unique-label", length=500)], ignore_index=True)
    for seed in SEEDS:
        kw = dict(epsilon=2.0, mechanism="gaussian", random_state=seed, reproducible_noise=True, **COLS)
        a, b = _observe(cls(**kw), clicks), _observe(cls(**kw), plus)
        assert a == b, (seed, a, b)
        assert "error" not in a  # the releases happen: the attack could have seen a warning


def test_an_event_outside_the_public_vocabulary_is_refused_without_quoting_it(clicks):
    est = DPMarkovSynthesizer(epsilon=1.0, vocabulary=["homepage", "oucontent"], **COLS)
    with pytest.raises(SchemaError, match="not in the vocabulary") as err:
        est.fit(pd.concat([clicks, _one_learner("zzz-secret", "pass")], ignore_index=True))
    assert "zzz" not in str(err.value) and "secret" not in str(err.value)
    assert not hasattr(est, "budget_log_")


def test_truncation_is_stated_in_the_budget_record(clicks):
    est = DPHistSeqSynthesizer(epsilon=4.0, vocabulary=VOCABULARY, **{**COLS, "max_length": 12}).fit(clicks)
    (model,) = [r for r in est.budget_log_ if r.target.startswith("event frequencies")]
    assert "max_length=12" in model.target and "truncated" in model.target and model.sensitivity == 12
    assert est.sample(200, random_state=0).groupby("learner_id").size().max() <= 12


def test_a_learner_without_a_released_label_is_counted_with_noise_not_exactly(clicks):
    # the label domain is estimated: the group histogram gets one more cell, measured with the others
    est = DPMarkovSynthesizer(epsilon=4.0, vocabulary=VOCABULARY, reproducible_noise=True, random_state=0,
                              **COLS).fit(clicks)
    (groups,) = [r for r in est.budget_log_ if r.target.startswith("group histogram")]
    assert "not released" in groups.target and groups.sensitivity == 1.0
    assert est.group_counts_.shape == (len(est.learner_schema_["outcome"].categories),)


# -- the partition selection ----------------------------------------------------------------------------------------
def test_each_person_weighs_at_most_l2_norm_one():
    rng = np.random.default_rng(0)
    person = np.sort(rng.integers(0, 50, 2000))
    codes = rng.integers(0, 30, 2000)
    for bound in (1, 3, 10, 40):
        per_person = [bounded_key_weights(codes[person == p], person[person == p], bound, 30) for p in range(50)]
        norms = [np.sqrt((w.astype(float) ** 2).sum()) for w in per_person]
        assert max(norms) <= WEIGHT_SCALE and min(norms) > 0.99 * WEIGHT_SCALE
        assert max(np.count_nonzero(w) for w in per_person) <= bound
        total = bounded_key_weights(codes, person, bound, 30)
        np.testing.assert_array_equal(total, np.sum(per_person, axis=0))  # nobody's weight depends on another


@pytest.mark.parametrize(("bound", "sigma", "delta"), [(1, 3.0, 1e-3), (10, 40.0, 1e-6), (50, 500.0, 1e-9)])
def test_threshold_bounds_every_single_person_key_set_by_delta(bound, sigma, delta):
    s = WEIGHT_SCALE * sigma
    tau = weighted_gaussian_threshold(bound, s, delta)

    def leak(m):
        return max(t * discrete_gaussian_tail(s, m - math.floor(WEIGHT_SCALE / math.sqrt(t)))
                   for t in range(1, bound + 1))

    assert leak(tau) <= delta < leak(tau - 1)  # the smallest threshold that keeps one person's keys within delta


def test_selection_charges_before_it_draws_and_states_its_sensitivity():
    acc = BudgetAccountant(1.0, 1e-6, delta_zcdp=5e-7)
    noise = NoiseSource.reproducible_from(0)
    with pytest.raises(PrivacyBudgetError):
        weighted_gaussian_selection([5000, 300], contribution_bound=10, rho=1e3, delta=1e-7, noise=noise,
                                    accountant=acc, target="too much")
    assert not acc.records
    released, noisy = weighted_gaussian_selection(
        [200 * WEIGHT_SCALE, WEIGHT_SCALE], contribution_bound=10, rho=0.005, delta=1e-7, noise=noise,
        accountant=acc, target="keys")
    assert released.tolist() == [True, False] and noisy.dtype == np.int64
    assert [(r.kind, r.sensitivity) for r in acc.records] == [("zcdp", 1.0), ("approx", 1.0)]
    assert "L2 norm 1 per person" in str(acc.records[0].details)


def test_the_keys_only_one_person_holds_are_released_at_most_at_rate_delta():
    """One person alone holds t keys (weight 1 / sqrt(t) each): any of them released in at most delta of the draws."""
    sigma, delta, bound, draws = 2.0, 0.05, 4, 4000
    tau = weighted_gaussian_threshold(bound, WEIGHT_SCALE * sigma, delta)
    noise = NoiseSource.reproducible_from(1)
    for t in (1, bound):
        weight = math.floor(WEIGHT_SCALE / math.sqrt(t))
        noisy = weight + noise.discrete_gaussian(WEIGHT_SCALE * sigma, (draws, t))
        rate = (noisy >= tau).any(axis=1).mean()
        assert rate <= delta + 4 * math.sqrt(delta / draws), (t, rate)
    common = 10 * WEIGHT_SCALE + noise.discrete_gaussian(WEIGHT_SCALE * sigma, draws)
    assert (common >= tau).mean() > 0.99  # a key ten people hold passes: the threshold is not vacuous


def test_vocabulary_needs_fewer_learners_than_the_stability_histogram():
    """Scales with people: at epsilon 1 with the codebook's outcomes, a learner who visits 7 of 10 states."""
    from skdpsynth.synthesizers._sequence_domain import vocabulary_threshold

    est = DPMarkovSynthesizer(epsilon=1.0, **COLS)
    rule = vocabulary_threshold(est, None, "geometric", 0.1)
    learners_needed = rule.threshold * math.sqrt(7)  # each of them adds 1 / sqrt(7)
    assert learners_needed < 700 < 808  # 808: the stability histogram's count threshold at these settings
