"""Partition selection at course size (issue 24, target 3): categories held by a fifth of 500 people are kept,
and a sequence model's vocabulary and label domain compose in zCDP under a pure model.

The table test is not flaky by construction: the failure probability of the release is computed from the
mechanism's public plan (its noise and threshold) and asserted negligible before the table is fitted.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from skdpsynth.datasets import make_clickstream
from skdpsynth.privacy import BudgetAccountant, NoiseSource
from skdpsynth.privacy._accounting import approx_dp_to_zcdp
from skdpsynth.privacy._domain import _plan
from skdpsynth.privacy._domain_plan import discrete_gaussian_tail, gaussian_stability_histogram
from skdpsynth.privacy._standalone import estimate_schema_logged
from skdpsynth.synthesizers import DPMarkovSynthesizer
from skdpsynth.synthesizers._sequence_domain import domain_share

DELTA = 1e-6
COLS = {"id_column": "learner_id", "order_column": "position", "event_columns": "activity"}


def course_table(seed: int, n: int = 500) -> pd.DataFrame:
    """500 people: four grades held by 30, 27, 23 and 20% of them exactly, and a score."""
    rng = np.random.default_rng(seed)
    grade = rng.permutation(np.repeat(np.array(["A", "B", "C", "D"]), [150, 135, 115, 100]))
    return pd.DataFrame({"grade": grade, "score": rng.normal(62, 12, n).clip(0, 100).round(1)})


def _miss_bound(sd: float, threshold: int, people: int) -> float:
    """Upper bound on the probability that a key held by ``people`` misses ``threshold`` (symmetric noise)."""
    return discrete_gaussian_tail(sd, people - threshold + 1)


def test_a_fifth_of_500_people_is_kept_at_epsilon_one_with_negligible_failure_probability():
    names = ["grade", "score"]
    # the public plan of the stand-alone estimate at (1, 1e-6), sized by the columns' kinds (a text column and a
    # decimal one: 500 people leave no doubt, the kinds' noise sd is about 25). With two more columns (a gender,
    # an age) the same bound is about 4e-5 per fit: course tables wider than this need a larger budget
    plan = _plan(names, 1.0, DELTA).split({"bins": 1, "categories": 1, "tail": 1})
    part = plan.parts["categories"]
    assert part.width == 1  # one key per person: L2 sensitivity 1
    smallest = 100  # grade D, a fifth of the people
    failure = 4 * _miss_bound(part.sd, part.release_threshold, smallest)  # four grades held by >= a fifth
    assert failure < 1e-9, (part.sd, part.release_threshold)  # about 2.5e-12
    for seed in range(3):
        X = course_table(seed)
        log = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            schema = estimate_schema_logged(X, epsilon=1.0, delta=DELTA, budget_log=log,
                                            noise=NoiseSource.reproducible_from(seed))
        assert set(schema["grade"].categories) >= {"A", "B", "C", "D"}
        spent = BudgetAccountant(1.0, DELTA)
        for record in log:
            spent.spend(record)  # raises if the log exceeds (1, 1e-6)
        assert spent.spent()[0] <= 1.0 + 1e-9 and spent.spent()[1] <= DELTA * (1 + 1e-9)


def test_the_release_rate_of_a_key_matches_the_planned_noise_and_threshold():
    """The plan's miss probability is the mechanism's: 100-person keys at a budget where about half are kept."""
    rho, k, delta, trials = 0.001, 2, 1e-7, 4000
    acc = BudgetAccountant(50.0, 0.5, delta_zcdp=0.1)
    released, noisy = gaussian_stability_histogram(np.full(trials, 100), contribution_bound=k, rho=rho, delta=delta,
                                                   noise=NoiseSource.reproducible_from(1), accountant=acc,
                                                   target="keys held by 100 people")
    sd = np.sqrt(k / (2 * rho))
    threshold = int(acc.records[0].details["threshold"])
    assert np.std(noisy - 100) == pytest.approx(sd, rel=0.05)
    expected = 1 - _miss_bound(sd, threshold, 100)
    assert abs(released.mean() - expected) < 4 * np.sqrt(expected * (1 - expected) / trials) + 0.02


def _fit_markov(frame: pd.DataFrame, **kw) -> DPMarkovSynthesizer:
    est = DPMarkovSynthesizer(epsilon=1.0, delta=DELTA, **COLS, max_length=30, max_states_per_learner=8,
                              random_state=0, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return est.fit(frame)


@pytest.mark.usefixtures("reproducible_noise")
def test_pure_model_vocabulary_and_label_domain_compose_in_zcdp_and_are_converted_once():
    clicks = make_clickstream(600, min_length=5, max_length=30, random_state=0)
    est = _fit_markov(clicks.frame, label_column="outcome")
    assert est.mechanism == "geometric" and {s[0] for s in est.states_} <= set(clicks.schema["vocabulary"])
    spent = est.privacy_spent_
    assert spent.is_private and spent.epsilon <= 1.0 + 1e-9 and spent.delta <= DELTA * (1 + 1e-9)
    share = domain_share(est)
    assert est._delta_zcdp_ == {0: pytest.approx(0.5 * DELTA)}  # half the domain's delta converts its zCDP
    domain = [r for r in est.budget_log_ if r.target.startswith(("event vocabulary", "label/static domain"))]
    assert {r.kind for r in domain} == {"zcdp", "approx"} and all(r.epsilon == 0 for r in domain if r.kind == "approx")
    assert {r.kind for r in est.budget_log_ if r not in domain} == {"pure"}  # the model stays pure
    rho = {p: sum(r.rho for r in domain if r.target.startswith(p)) for p in ("event vocabulary", "label/static")}
    assert rho["event vocabulary"] == pytest.approx(rho["label/static"], rel=1e-6)
    # each gets more than twice what its own (epsilon / 2, delta / 2) slice would buy after its count
    alone = approx_dp_to_zcdp(0.85 * share / 2, DELTA / 4)
    assert min(rho.values()) > 2 * alone


@pytest.mark.usefixtures("reproducible_noise")
def test_pure_model_with_the_whole_domain_given_converts_nothing():
    clicks = make_clickstream(300, min_length=5, max_length=30, random_state=2)
    labels = {"outcome": {"kind": "categorical", "categories": ["pass", "fail"], "nullable": False}}
    est = _fit_markov(clicks.frame, label_column="outcome", schema=labels,
                      vocabulary=sorted(clicks.schema["vocabulary"]))
    assert est._delta_zcdp_ == {0: 0.0}
    assert {r.kind for r in est.budget_log_} <= {"pure", "none"} and est.privacy_spent_.delta == 0
