"""The sequence synthesizers' DP domain: the vocabulary and label domain compose with the model (issue 11).

Without ``vocabulary=``, DP-Markov discovers the event vocabulary under DP. With ``mechanism="gaussian"`` the
vocabulary and the label/static domain are charged in zCDP together with the model (the model's planned records are
passed as ``later=``); a refusal spends only a noisy count and names the settings that would work.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from skdpsynth.datasets import make_clickstream
from skdpsynth.exceptions import SchemaError
from skdpsynth.privacy._domain import DomainEstimateError
from skdpsynth.synthesizers import DPHistSeqSynthesizer, DPMarkovSynthesizer
from skdpsynth.synthesizers._sequence_domain import vocabulary_threshold

COLS = {"id_column": "learner_id", "order_column": "position", "event_columns": "activity"}
OULAD = dict(id_column="learner", order_column="date", event_columns="activity_type", label_column="final_result",
             max_length=300, duplicate_order="stable")


@pytest.fixture(scope="module")
def oulad_aaa():
    """OULAD module AAA as a long table (735 learners), and the activity types most of them visit."""
    from conftest import real_data_path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from partition_selection import oulad_aaa as load  # the benchmark's table, one copy

    return load(real_data_path("oulad"))


def _within(spent, epsilon: float, delta: float) -> bool:
    return spent.is_private and spent.epsilon <= epsilon * (1 + 1e-9) and spent.delta <= delta * (1 + 1e-9)


@pytest.mark.realdata
@pytest.mark.usefixtures("reproducible_noise")
def test_oulad_vocabulary_discovered_at_epsilon_one_with_gaussian(data_dir, oulad_aaa):
    table, most = oulad_aaa
    assert len(most) == 7  # homepage, oucontent, subpage, forumng, resource, url, dataplus
    est = DPMarkovSynthesizer(epsilon=1.0, delta=1e-6, mechanism="gaussian", **OULAD, random_state=0)
    # public planning: a state needs about 283 learners; dataplus (the rarest of the seven) has 384
    rule = vocabulary_threshold(est, table[["final_result"]], "gaussian", 0.1)
    assert rule.threshold + 2 * rule.sd < 384 * rule.per_learner
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # learners whose label was not released are left out
        est.fit(table)
    assert most <= {s[0] for s in est.states_}
    assert _within(est.privacy_spent_, 1.0, 1e-6) and est.privacy_spent_.epsilon > 0.99
    # everything composes in zCDP (approx: the stability thresholds' delta only)
    assert {r.kind for r in est.budget_log_} == {"zcdp", "approx"}
    assert all(r.epsilon == 0 for r in est.budget_log_ if r.kind == "approx")
    assert est.sample(200, random_state=0)["learner"].nunique() == 200


@pytest.mark.realdata
@pytest.mark.usefixtures("reproducible_noise")
def test_oulad_defaults_discover_common_types_with_the_outcome_codebook(data_dir, oulad_aaa):
    """Issue 24: the stability histogram refused here (a state needed about 808 learners); the weighted partition
    selection, at the default domain_share 0.2, needs about 116 * sqrt(d) learners who visit d states each
    (benchmarks/partition_selection.py: 6-7 of the 7 common types per fit)."""
    table, most = oulad_aaa
    outcomes = {"final_result": {"kind": "categorical", "nullable": False,
                                 "categories": ["Distinction", "Pass", "Fail", "Withdrawn"]}}
    est = DPMarkovSynthesizer(epsilon=1.0, delta=1e-6, **OULAD, schema=outcomes, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the types not released become the unreleased state
        est.fit(table)
    released = {s[0] for s in est.states_}
    assert len(released & most) >= 5 and released <= set(table["activity_type"])
    assert _within(est.privacy_spent_, 1.0, 1e-6)
    # the vocabulary is charged in zCDP (the accountant converts it once, at half the domain's delta); the model
    # stays pure
    vocabulary = [r for r in est.budget_log_ if r.target.startswith("event vocabulary")]
    assert {r.kind for r in vocabulary} == {"zcdp", "approx"}
    assert all(r.epsilon == 0 for r in vocabulary if r.kind == "approx")
    assert {r.kind for r in est.budget_log_ if not r.target.startswith("event vocabulary")} == {"pure"}


@pytest.mark.realdata
@pytest.mark.usefixtures("reproducible_noise")
def test_oulad_small_domain_share_with_estimated_outcomes_refuses_and_names_what_works(data_dir, oulad_aaa):
    # the vocabulary's half of a 0.1 slice: a state needs a weight of about 320, the common types gather about 270
    table, _ = oulad_aaa
    est = DPMarkovSynthesizer(epsilon=1.0, delta=1e-6, **OULAD, domain_share=0.1, random_state=0)
    with pytest.raises(SchemaError, match="mechanism='gaussian'") as err:
        est.fit(table)
    assert "vocabulary=" in str(err.value) and "735" not in str(err.value)
    assert not [r for r in est.budget_log_ if r.target.startswith(("transition", "group", "length"))]


@pytest.mark.usefixtures("reproducible_noise")
def test_simulated_vocabulary_composes_with_the_model_and_stays_within_budget():
    clicks = make_clickstream(600, min_length=5, max_length=30, random_state=0)
    vocab = set(clicks.schema["vocabulary"])
    labels = {"outcome": {"kind": "categorical", "categories": ["pass", "fail"], "nullable": False}}
    for cls, kw in ((DPMarkovSynthesizer, {"label_column": "outcome"}), (DPHistSeqSynthesizer, {}),
                    (DPMarkovSynthesizer, {"label_column": "outcome", "schema": labels}),
                    (DPHistSeqSynthesizer, {"label_column": "outcome", "vocabulary": sorted(vocab)})):
        frame = clicks.frame if "label_column" in kw else clicks.frame.drop(columns="outcome")
        est = cls(epsilon=1.0, delta=1e-6, mechanism="gaussian", **COLS, max_length=30, max_states_per_learner=8,
                  random_state=0, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            est.fit(frame)
        released = {s[0] for s in est.states_}
        assert released and released <= vocab, (cls, kw)
        assert _within(est.privacy_spent_, 1.0, 1e-6) and est.privacy_spent_.epsilon > 0.99, (cls, kw)
        assert {r.kind for r in est.budget_log_} == {"zcdp", "approx"}, (cls, kw)
        rho = {part: sum(r.rho for r in est.budget_log_ if r.target.startswith(part))
               for part in ("event vocabulary", "label/static domain")}
        estimated = [part for part, r in rho.items() if r > 0]
        if len(estimated) == 2:  # both estimated: half of the domain's rho each
            assert rho["event vocabulary"] == pytest.approx(rho["label/static domain"], rel=1e-6)
        else:  # one estimated: all of it, several times what the epsilon slice (0.1) buys on its own
            from skdpsynth.privacy._accounting import approx_dp_to_zcdp

            assert estimated == (["label/static domain"] if "vocabulary" in kw else ["event vocabulary"])
            assert rho[estimated[0]] > 3 * approx_dp_to_zcdp(0.1, 1e-7)


@pytest.mark.usefixtures("reproducible_noise")
def test_simulated_refusal_spends_only_a_count_and_says_why():
    # 150 learners: fewer than even a state that every learner visits alone needs at epsilon 1 (about 255)
    clicks = make_clickstream(150, min_length=5, max_length=30, random_state=1)
    est = DPMarkovSynthesizer(epsilon=1.0, delta=1e-6, **COLS, max_length=30, random_state=0)
    with pytest.raises(DomainEstimateError, match="every learner visits alone") as err:
        est.fit(clicks.frame.drop(columns="outcome"))
    assert "vocabulary=" in str(err.value) and "150" not in str(err.value)
    spent = [r for r in est.budget_log_ if r.kind != "none"]
    assert len(spent) == 1 and spent[0].kind == "zcdp" and "number of people" in spent[0].target


def _canary_table(n_common: int = 120) -> pd.DataFrame:
    """Many learners share five common states; one canary learner visits a common state, then a state of its own."""
    rng = np.random.default_rng(0)
    rows = [(i, p, e) for i in range(n_common) for p, e in enumerate(rng.choice([f"c{j}" for j in range(5)], size=5))]
    rows += [(n_common, p, e) for p, e in enumerate(["c0", "canary", "c1"])]
    return pd.DataFrame(rows, columns=["learner_id", "position", "activity"])


def test_canary_state_within_the_bound_is_released_no_more_often_than_delta():
    """The canary's own state IS a candidate (within its first two distinct states): only the threshold hides it.

    Under the zCDP wiring it must be released with probability at most delta; at a generous budget the common
    states are released in every fit, so the attack is not vacuous.
    """
    from scipy.stats import beta

    table = _canary_table()
    fits, hits, common, delta = 150, 0, 0, 0.02
    for _ in range(fits):
        est = DPMarkovSynthesizer(epsilon=4.0, delta=delta, mechanism="gaussian", **COLS, max_length=5,
                                  max_states_per_learner=2, domain_share=0.5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the canary's state becomes the unreleased one
            est.fit(table)
        released = {s[0] for s in est.states_}
        hits += "canary" in released
        common += released == {f"c{j}" for j in range(5)}
        assert _within(est.privacy_spent_, 4.0, delta)
    lower = beta.ppf(0.001, hits, fits - hits + 1) if hits else 0.0  # one-sided 99.9% Clopper-Pearson bound
    assert lower <= delta and hits / fits <= 0.05, (hits, fits)
    assert common >= 0.9 * fits  # the release works: the attack could have seen the canary


@pytest.mark.parametrize("mechanism", ["geometric", "gaussian"])
def test_static_values_outside_a_given_schema_are_counted_not_printed(mechanism):
    from skdpsynth.schema import TableSchema

    data = make_clickstream(400, min_length=5, max_length=20, random_state=0)
    frame = data.frame.copy()
    credits = dict(zip(frame["learner_id"].unique(), np.random.default_rng(0).integers(30, 120, 400)))
    frame["credits"] = frame["learner_id"].map(credits)
    schema = TableSchema.from_dict({"outcome": {"kind": "categorical", "categories": list(data.schema["outcomes"]),
                                                "nullable": False},
                                    "credits": {"kind": "integer", "lower": 0, "upper": 240, "nullable": False}})
    one_above = frame.copy()
    one_above.loc[one_above["learner_id"] == frame["learner_id"].iloc[0], "credits"] = 300  # one learner
    for table in (frame, one_above):
        est = DPMarkovSynthesizer(epsilon=1.0, **COLS, label_column="outcome", static_columns="credits",
                                  vocabulary=list(data.schema["vocabulary"]), schema=schema, max_length=20,
                                  mechanism=mechanism)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(table)
        assert not [w for w in caught if "clipped" in str(w.message)]
        (clip,) = [r for r in est.budget_log_ if "clipped to the public bounds" in r.target]
        assert clip.sensitivity == 1.0
        assert (clip.kind, bool(clip.epsilon)) == (("pure", True) if mechanism == "geometric" else ("zcdp", False))
        assert set(est.clip_counts_) == {"credits"}
        assert est.privacy_spent_.epsilon <= 1.0 + 1e-9
    # a second cohort under the schema fixed by the first is counted too
    est.partial_fit(one_above)
    assert sum("clipped to the public bounds" in r.target for r in est.budget_log_) == 2
