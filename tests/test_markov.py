"""DPMarkovSynthesizer: budget, structure recovered, label groups, knowledge tracing, bad input, real OULAD data."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_estimator

from skdpsynth.datasets import make_clickstream, make_knowledge_tracing
from skdpsynth.exceptions import PrivacyBudgetError, SchemaError
from skdpsynth.schema import TableSchema
from skdpsynth.synthesizers import DPHistSeqSynthesizer, DPMarkovSynthesizer
from skdpsynth.synthesizers._sequence_data import transition_frequencies
from skdpsynth.utils.estimator_checks import check_param_validation, check_synthesizer

COLS = {"id_column": "learner_id", "order_column": "position", "event_columns": "activity"}


@pytest.fixture(scope="module")
def clicks():
    """Simulated clickstreams: two outcome groups that differ only in event order."""
    return make_clickstream(1500, min_length=10, max_length=40, random_state=0)


def _tv_error(model_probs: np.ndarray, true_p: np.ndarray) -> float:
    """Mean total-variation distance between rows of two transition matrices."""
    return float(0.5 * np.abs(model_probs - true_p).sum(axis=-1).mean())


def _asymmetry(table: pd.DataFrame, states: list, outcome: str) -> float:
    """Order signal: total |P(a then b) - P(b then a)| over consecutive pairs of one outcome group.

    Zero when events are exchangeable (order-free); the simulated groups favour opposite directions.
    """
    part = table[table["outcome"] == outcome]
    t = transition_frequencies(part, id_column="learner_id", order_column="position", event_column="activity",
                               states=states)[:-1]
    freq = part["activity"].value_counts(normalize=True).reindex(states).fillna(0).to_numpy()
    joint = freq[:, None] * t
    return float(np.abs(joint - joint.T).sum())


def test_budget_never_exceeds_request(clicks):
    vocab = list(clicks.schema["vocabulary"])
    for kwargs in ({"domain_share": 0.5}, {"label_column": "outcome", "domain_share": 0.6},
                   {"label_column": "outcome", "vocabulary": vocab}, {"vocabulary": vocab},
                   {"label_column": "outcome", "order": 2, "mechanism": "gaussian",
                    "vocabulary": vocab}):
        est = DPMarkovSynthesizer(epsilon=1.0, delta=1e-6, **COLS, max_length=40, random_state=0, **kwargs)
        est.fit(clicks.frame if "label_column" in kwargs else clicks.frame.drop(columns="outcome"))
        spent = est.privacy_spent_
        assert spent.is_private and spent.epsilon <= 1.0 + 1e-9 and spent.delta <= 1e-6 + 1e-15, (kwargs, spent)
        assert spent.epsilon > 0.99, "the budget is meant to be used"
        assert all(r.sensitivity is not None for r in est.budget_log_)
        model = [r for r in est.budget_log_ if "transition" in r.target]
        assert len(model) == 1 and model[0].sensitivity == 40  # max_length transitions per learner


def test_check_synthesizer(clicks):
    # all 1,500 learners: the label categories are estimated under DP, and some checks fit on part of the table,
    # where 600 learners left about 280 against a release threshold of about 246 (a refusal in some draws)
    small = clicks.frame
    est = DPMarkovSynthesizer(epsilon=1.0, **COLS, label_column="outcome", vocabulary=list(clicks.schema["vocabulary"]),
                              max_length=40, random_state=0)
    # "sample_schema" counts rows; a sequence synthesizer's n_samples counts learners (checked below instead)
    checks = ["determinism", "noise_unrecoverable", "budget", "no_training_rows", "pickle_roundtrip", "clone"]
    assert set(check_synthesizer(est, small, checks=checks).values()) == {"passed"}
    out = clone(est).fit(small).sample(17, random_state=0)
    assert list(out.columns) == list(small.columns)
    assert out["learner_id"].nunique() == 17
    assert (out.groupby("learner_id")["position"].apply(lambda s: (s.to_numpy() == np.arange(len(s))).all())).all()


# scikit-learn's generic checks feed numeric 2-D arrays; a long event table with named id / order / event
# columns is not one, so every check that fits on such an array is inapplicable.
INAPPLICABLE = {name: "fits on a numeric 2-D array; the synthesizer needs a long-format event table (DataFrame)" for
                name in [
                    "check_fit_score_takes_y", "check_estimators_overwrite_params", "check_dont_overwrite_parameters",
                    "check_estimators_fit_returns_self", "check_readonly_memmap_input",
                    "check_n_features_in_after_fitting", "check_positive_only_tag_during_fit",
                    "check_estimators_dtypes", "check_complex_data", "check_dtype_object",
                    "check_pipeline_consistency", "check_estimators_pickle", "check_f_contiguous_array_estimator",
                    "check_methods_sample_order_invariance", "check_methods_subset_invariance",
                    "check_fit2d_1sample", "check_fit2d_1feature", "check_dict_unchanged", "check_fit_idempotent",
                    "check_fit_check_is_fitted", "check_n_features_in", "check_fit1d", "check_fit2d_predict1d",
                    "check_estimator_sparse_tag",
                ]}


@pytest.mark.parametrize("cls", [DPMarkovSynthesizer, DPHistSeqSynthesizer])
def test_sklearn_check_estimator(cls):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(cls(random_state=0), expected_failed_checks=INAPPLICABLE, on_fail="raise")
    passed = {r["check_name"] for r in results if r["status"] == "passed"}
    assert {"check_get_params_invariance", "check_set_params", "check_no_attributes_set_in_init",
            "check_estimators_unfitted", "check_estimators_empty_data_messages",
            "check_estimator_sparse_matrix"} <= passed


@pytest.mark.parametrize("cls", [DPMarkovSynthesizer, DPHistSeqSynthesizer])
def test_parameter_constraints_cover_every_parameter(cls):
    check_param_validation(cls.__name__, cls())


@pytest.mark.usefixtures("reproducible_noise")
def test_lengths_and_label_groups_preserved(clicks):
    # noise from the seed: with secure noise the mean-length gap stayed below 2.5 in 100 of 100 fits (largest 2.41)
    # but reached 2.61 once in CI
    est = DPMarkovSynthesizer(epsilon=1.0, **COLS, label_column="outcome", vocabulary=list(clicks.schema["vocabulary"]),
                              max_length=40, random_state=0)
    out = est.fit(clicks.frame).sample(2000, random_state=0)
    lengths = out.groupby("learner_id").size()
    assert lengths.min() >= 1 and lengths.max() <= 40
    real_len = clicks.frame.groupby("learner_id").size()
    assert abs(lengths.mean() - real_len.mean()) < 2.5
    real_lab = clicks.frame.drop_duplicates("learner_id")["outcome"].value_counts(normalize=True)
    syn_lab = out.drop_duplicates("learner_id")["outcome"].value_counts(normalize=True)
    assert set(syn_lab.index) == set(real_lab.index)
    assert (syn_lab - real_lab).abs().max() < 0.05
    assert (out.groupby("learner_id")["outcome"].nunique() == 1).all()


def test_transitions_recovered_as_epsilon_grows(clicks):
    states = list(clicks.schema["vocabulary"])
    truth = np.stack([clicks.transition_matrices[o] for o in ("pass", "fail")])  # (outcome, from, to)
    errors = {}
    for eps in (0.3, 3.0, 30.0):
        errs = []
        for seed in range(3):
            est = DPMarkovSynthesizer(epsilon=eps, **COLS, label_column="outcome", vocabulary=states,
                                      schema={"outcome": {"kind": "categorical", "categories": ["pass", "fail"],
                                                          "nullable": False}},
                                      max_length=40, random_state=seed).fit(clicks.frame)
            errs.append(_tv_error(est.transition_probs_[:, :len(states), :], truth))
        errors[eps] = np.mean(errs)
    assert errors[30.0] < errors[3.0] < errors[0.3], errors
    assert errors[30.0] < 0.05, errors


def test_order_kept_by_markov_and_lost_by_histseq(clicks):
    states = list(clicks.schema["vocabulary"])
    real = {o: _asymmetry(clicks.frame, states, o) for o in ("pass", "fail")}
    kw = dict(epsilon=5.0, **COLS, label_column="outcome", vocabulary=states, max_length=40, random_state=0)
    markov = DPMarkovSynthesizer(**kw).fit(clicks.frame).sample(1500, random_state=1)
    hist = DPHistSeqSynthesizer(**kw).fit(clicks.frame).sample(1500, random_state=1)
    for o in ("pass", "fail"):
        assert real[o] > 0.2, real
        assert _asymmetry(markov, states, o) > 0.7 * real[o]
        assert _asymmetry(hist, states, o) < 0.25 * real[o]
    # and the event mix is kept by both
    real_freq = clicks.frame["activity"].value_counts(normalize=True)
    for syn in (markov, hist):
        assert (syn["activity"].value_counts(normalize=True).reindex(real_freq.index) - real_freq).abs().max() < 0.03


def test_order_two_captures_second_order_dependence():
    """Events alternate a, x, b, x, a, x, b ...: the event after x depends on the one before x."""
    rng = np.random.default_rng(0)
    n, L = 800, 20
    first = rng.integers(0, 2, n)
    seq = np.empty((n, L), dtype=object)
    for t in range(L):
        if t % 2:
            seq[:, t] = "x"
        else:
            k = (first + t // 2) % 2
            flip = rng.random(n) < 0.05
            seq[:, t] = np.where(k ^ flip, "b", "a")
    table = pd.DataFrame({"learner_id": np.repeat(np.arange(n), L), "position": np.tile(np.arange(L), n),
                          "activity": seq.ravel()})
    states = ["a", "b", "x"]

    def second_order_accuracy(model):
        out = model.fit(table).sample(800, random_state=0)
        t2 = transition_frequencies(out, id_column="learner_id", order_column="position", event_column="activity",
                                    states=states, lag=2)
        return t2[0, 1] + t2[1, 0]  # lag-2: a -> b and b -> a (the alternation)

    kw = dict(epsilon=5.0, **COLS, vocabulary=states, max_length=L, random_state=0)
    assert second_order_accuracy(DPMarkovSynthesizer(order=2, **kw)) > 1.6
    assert second_order_accuracy(DPMarkovSynthesizer(order=1, **kw)) < 1.3


def test_partial_fit_adds_cohort_counts_and_composes(clicks):
    f = clicks.frame.drop(columns="outcome")
    a, b = f[f.learner_id < 700], f[f.learner_id >= 700]
    kw = dict(epsilon=1.0, **COLS, vocabulary=list(clicks.schema["vocabulary"]), max_length=40, random_state=0)
    est = DPMarkovSynthesizer(**kw).fit(a)
    before = est.transition_counts_.sum()
    est.partial_fit(b)
    assert est.n_cohorts_ == 2
    assert est.transition_counts_.sum() > 1.5 * before
    assert est.privacy_spent_.epsilon == pytest.approx(1.0)
    seq = DPMarkovSynthesizer(**{**kw, "cohort_composition": "sequential"}).fit(a).partial_fit(b)
    assert seq.privacy_spent_.epsilon == pytest.approx(2.0)
    with pytest.raises(SchemaError, match="not in the vocabulary"):
        est.partial_fit(b.assign(activity="unknown_type"))


@pytest.mark.requires("torch")
def test_knowledge_tracing_joint_state_keeps_next_response_signal():
    from skdpsynth.models import DKT

    kt = make_knowledge_tracing(1500, n_skills=8, random_state=0).frame
    train, test = kt[kt.learner_id < 1200], kt[kt.learner_id >= 1200]
    vocab = {"skill_id": list(range(8)), "correct": [0, 1]}
    est = DPMarkovSynthesizer(epsilon=10.0, id_column="learner_id", order_column="position",
                              event_columns=["skill_id", "correct"], vocabulary=vocab, max_length=50, random_state=0)
    syn = est.fit(train).sample(1200, random_state=1)
    assert set(syn.columns) == set(kt.columns) and syn["correct"].isin([0, 1]).all()
    res = DKT(id_column="learner_id", order_column="position", skill_column="skill_id", correct_column="correct",
              max_epochs=6, random_state=0).fit(syn).evaluate(test)
    assert res["macro_f1"] > res["majority_macro_f1"] + 0.15, res


def test_vocabulary_discovered_under_dp_hides_rare_events(clicks):
    f = clicks.frame.drop(columns="outcome")
    f.loc[f.index[:3], "activity"] = "rare_event"  # one learner's rare event
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # three events are far below the noise: no warning may name them
        est = DPMarkovSynthesizer(epsilon=4.0, delta=1e-6, **COLS, max_length=40, random_state=0).fit(f)
    released = {s[0] for s in est.states_}
    assert "rare_event" not in released and released == set(clicks.schema["vocabulary"])
    voc = [r for r in est.budget_log_ if r.target.startswith("event vocabulary") and r.kind == "approx"]
    # after a pure noisy count of learners: the threshold's half of the domain's delta (the other half converts
    # the composed zCDP domain releases), and the whole fit within the delta claimed
    assert len(voc) == 1 and voc[0].delta == pytest.approx(5e-7)
    assert est.privacy_spent_.delta <= 1e-6 * (1 + 1e-9)
    assert est.n_states_ == len(est.states_) + 1  # the unreleased state exists whenever the vocabulary is discovered
    out = est.sample(300, random_state=0)
    assert set(out["activity"].dropna()) <= released


def test_static_columns_and_label_are_per_learner(clicks):
    f = clicks.frame.copy()
    f["group"] = np.where(f.learner_id % 3 == 0, "evening", "day")
    est = DPMarkovSynthesizer(epsilon=2.0, **COLS, label_column="outcome", static_columns="group",
                              vocabulary=list(clicks.schema["vocabulary"]),
                              max_length=40, random_state=0).fit(f)
    out = est.sample(500, random_state=0)
    assert list(out.columns) == list(f.columns)
    assert (out.groupby("learner_id")[["group", "outcome"]].nunique(dropna=False) == 1).all().all()
    assert abs((out.drop_duplicates("learner_id")["group"] == "evening").mean() - 1 / 3) < 0.08


@pytest.mark.usefixtures("reproducible_noise")
def test_label_given_as_y(clicks):
    f = clicks.frame
    kw = dict(epsilon=2.0, **COLS, label_column="outcome", vocabulary=list(clicks.schema["vocabulary"]),
              max_length=40, random_state=0)
    est = DPMarkovSynthesizer(**kw).fit(f.drop(columns="outcome"), f["outcome"].to_numpy())
    assert est.n_features_in_ == 3 and list(est.feature_names_in_) == ["learner_id", "position", "activity"]
    out = est.sample(20, random_state=0)
    assert list(out.columns) == list(f.columns)
    ref = DPMarkovSynthesizer(**kw).fit(f).sample(20, random_state=0)
    assert DPMarkovSynthesizer(**kw).fit(f).n_features_in_ == 4
    pd.testing.assert_frame_equal(out, ref)  # joining y is the same as giving the column


def test_non_private_mode_is_logged(clicks):
    est = DPMarkovSynthesizer(epsilon=None, **COLS, label_column="outcome", max_length=40, random_state=0)
    spent = est.fit(clicks.frame).privacy_spent_
    assert not spent.is_private and np.isinf(spent.epsilon)


def _tiny():
    return pd.DataFrame({"learner_id": [1, 1, 1, 2, 2, 3], "position": [0, 1, 2, 0, 1, 0],
                         "activity": ["a", "b", "a", "b", "b", "a"]})


def test_bad_input_is_rejected_before_any_budget():
    est = DPMarkovSynthesizer(epsilon=1.0, **COLS, vocabulary=["a", "b"], max_length=5, random_state=0)
    t = _tiny()
    cases = [
        (t.assign(position=[0, 0, 1, 0, 1, 0]), ValueError, "duplicate_order"),
        (t.assign(activity=["a", "b", "c", "b", "b", "a"]), SchemaError, "not in the vocabulary"),
        (t.assign(learner_id=[1, 1, np.nan, 2, 2, 3]), ValueError, "'learner_id'"),
        (t.assign(activity=["a", None, "a", "b", "b", "a"]), ValueError, "'activity'"),
        (t.iloc[:0], ValueError, "empty"),
        (t.assign(extra=1), SchemaError, "no role"),
        (t.iloc[:3], ValueError, "at least two"),
        (t.drop(columns="position"), SchemaError, "position"),
        (t.to_numpy(), TypeError, "long-format"),
    ]
    for X, exc, msg in cases:
        fresh = clone(est)
        with pytest.raises(exc, match=msg):
            fresh.fit(X)
        assert not hasattr(fresh, "budget_log_")
    with pytest.raises(ValueError, match="label_column"):
        clone(est).fit(t, y=np.zeros(len(t)))
    with pytest.raises(ValueError, match="vary within a learner"):
        DPMarkovSynthesizer(**COLS, label_column="y", vocabulary=["a", "b"]).fit(t.assign(y=[0, 1, 0, 0, 0, 1]))
    with pytest.raises(ValueError, match="order must be 1 or 2"):
        DPMarkovSynthesizer(**COLS, order=3).fit(t)
    with pytest.raises(PrivacyBudgetError):
        DPMarkovSynthesizer(epsilon=-1, **COLS).fit(t)
    with pytest.raises(PrivacyBudgetError, match="delta > 0"):
        DPMarkovSynthesizer(epsilon=1.0, delta=0.0, **COLS).fit(t)
    assert DPMarkovSynthesizer(epsilon=1.0, delta=0.0, **COLS, vocabulary=["a", "b"]).fit(t).privacy_spent_.delta == 0
    big = DPMarkovSynthesizer(**COLS, order=2, label_column="y", vocabulary=[f"e{i}" for i in range(400)])
    with pytest.raises(ValueError, match="max_cells"):  # refused before the label domain is estimated
        big.fit(t.assign(activity=["e1", "e2", "e1", "e2", "e2", "e1"], y=[0, 0, 0, 1, 1, 1]))
    assert not hasattr(big, "budget_log_")


@pytest.mark.usefixtures("reproducible_noise")
def test_documented_handling_unsorted_noncontiguous_ties_and_single_events():
    t = _tiny()
    kw = dict(epsilon=1.0, **COLS, vocabulary=["a", "b"], max_length=5, random_state=0)
    base = DPMarkovSynthesizer(**kw).fit(t).sample(50, random_state=0)
    shuffled = DPMarkovSynthesizer(**kw).fit(t.iloc[[5, 3, 0, 4, 2, 1]]).sample(50, random_state=0)
    pd.testing.assert_frame_equal(base, shuffled)  # rows in any order, learners non-contiguous: same fit
    # ties kept in row order when asked
    tied = t.assign(position=[0, 0, 1, 0, 1, 0])
    est = DPMarkovSynthesizer(**{**kw, "duplicate_order": "stable"}).fit(tied)
    assert est.sample(10).shape[0] >= 10
    # learner 3 has a single event: counted as START -> a (one transition)
    exact = DPMarkovSynthesizer(**{**kw, "epsilon": None}).fit(t)
    V = 2
    assert exact.transition_counts_[0, V].tolist() == [2, 1]  # from START: learners 1 and 3 start with a, 2 with b


@pytest.mark.realdata
def test_oulad_aaa_clickstreams(data_dir):
    from skdpsynth.datasets import load_oulad

    oulad = load_oulad(path=data_dir / "oulad", module="AAA", download=False)
    clicks = oulad.clickstream.assign(learner=lambda d: d["code_presentation"] + "-" + d["id_student"].astype(str))
    table = clicks[["learner", "date", "activity_type", "final_result"]]
    assert table["learner"].nunique() == 735
    # the VLE's activity types come from the course catalogue (vle.csv), public course-design metadata
    vocab = sorted(oulad.tables["vle"]["activity_type"].unique())
    # the outcome categories are the OULAD codebook's
    labels = {"kind": "categorical", "nullable": False, "categories": ["Distinction", "Pass", "Fail", "Withdrawn"]}
    est = DPMarkovSynthesizer(epsilon=1.0, id_column="learner", order_column="date", event_columns="activity_type",
                              label_column="final_result", vocabulary=vocab, max_length=300,
                              schema={"final_result": labels}, duplicate_order="stable", label_share=0.2,
                              random_state=0)
    # 44 learners have a Distinction: the label histogram's Laplace noise (scale 1 / (0.2 * epsilon) = 5) erases
    # the category with probability 0.5 exp(-44 / 5) < 1e-3 (at the default share 0.05, scale 20: 5.5 %)
    out = est.fit(table).sample(1000, random_state=0)
    assert est.privacy_spent_.epsilon <= 1.0 + 1e-9
    assert list(out.columns) == list(table.columns)
    assert out.groupby("learner").size().max() <= 300
    real_groups = set(table["final_result"])
    assert set(out["final_result"]) == real_groups  # Withdrawn and Distinction survive
    assert set(out["activity_type"].dropna()) <= set(table["activity_type"])
    real_len = np.minimum(table.groupby("learner").size(), 300)
    assert abs(out.groupby("learner").size().median() - real_len.median()) < 0.35 * real_len.median()


def test_gaussian_mechanism_with_discovered_domain_stays_within_budget(clicks):
    est = DPMarkovSynthesizer(epsilon=8.0, delta=1e-5, **COLS, label_column="outcome", mechanism="gaussian",
                              domain_share=0.3, max_length=40, random_state=0).fit(clicks.frame)
    spent = est.privacy_spent_
    assert spent.epsilon <= 8.0 * (1 + 1e-9) and spent.delta <= 1e-5 * (1 + 1e-9)
    kinds = {r.kind for r in est.budget_log_}
    # the domain composes in zCDP with the model (noisy counts included); approx: the stability thresholds' delta
    assert kinds == {"approx", "zcdp"}
    assert est.sample(50, random_state=0)["learner_id"].nunique() == 50


def _canary_table(n_common: int = 150, n_private: int = 64) -> pd.DataFrame:
    """Many learners share five common states; one canary learner visits two of them, then private states."""
    rng = np.random.default_rng(0)
    rows = [(i, p, e) for i in range(n_common)
            for p, e in enumerate(rng.choice([f"c{j}" for j in range(5)], size=6))]
    canary = ["c0", "c1"] + [f"private{j}" for j in range(n_private)]
    rows += [(n_common, p, e) for p, e in enumerate(canary)]
    return pd.DataFrame(rows, columns=["learner_id", "position", "activity"])


def test_vocabulary_attack_states_beyond_the_contribution_bound_are_never_released():
    """An attacker refits many times and watches for the canary's private states.

    The canary counts only its first two distinct states (common ones), so its private states must not even be
    candidates: the release rate must be consistent with at most delta (the old code released one in 32-35%).
    """
    from scipy.stats import beta

    table = _canary_table()
    fits, hits, delta = 300, 0, 0.02
    for _ in range(fits):
        est = DPMarkovSynthesizer(epsilon=2.0, delta=delta, **COLS, max_states_per_learner=2, domain_share=0.5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the canary's events become the unreleased state
            est.fit(table)
        hits += any(str(s[0]).startswith("private") for s in est.states_)
    lower = beta.ppf(0.001, hits, fits - hits + 1) if hits else 0.0  # one-sided 99.9% Clopper-Pearson bound
    assert lower <= delta and hits / fits <= 0.05, (hits, fits)
    assert {s[0] for s in est.states_} <= {f"c{j}" for j in range(5)}


def test_bounded_key_counts_and_weights_count_only_the_first_distinct_states():
    from skdpsynth.privacy._partition import bounded_key_counts, bounded_key_weights

    codes = np.array([0, 0, 1, 2, 3, 2, 1, 0])
    learner = np.array([0, 0, 0, 0, 0, 1, 1, 1])
    # learner 0 visits 0, 1, then 2, 3 (beyond the bound); learner 1 visits 2, 1, then 0
    np.testing.assert_array_equal(bounded_key_counts(codes, learner, 2, 4), [1, 2, 1, 0])
    # each learner's two states get floor(1024 / sqrt(2)) = 724: L2 norm at most 1024 per learner
    np.testing.assert_array_equal(bounded_key_weights(codes, learner, 2, 4), [724, 1448, 724, 0])
    # without the bound learner 0 spreads over 4 states (512 each), learner 1 over 3 (591 each)
    np.testing.assert_array_equal(bounded_key_weights(codes, learner, 10, 4), [1103, 1103, 1103, 512])


def _label_canary(clicks) -> pd.DataFrame:
    f = clicks.frame.copy()
    f.loc[f.learner_id == 0, "outcome"] = "canary-label"  # one learner's unique label
    return f


def test_learner_domain_estimated_under_dp_hides_a_unique_label(clicks):
    f = _label_canary(clicks)
    est = DPMarkovSynthesizer(epsilon=1.0, **COLS, label_column="outcome", vocabulary=list(clicks.schema["vocabulary"]),
                              max_length=40)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one learner left out is far below the noise of the group histogram
        est.fit(f)
    groups = [r for r in est.budget_log_ if r.target.startswith("group histogram")]
    assert len(groups) == 1 and "not released" in groups[0].target  # the left-out learners' cell
    assert est.privacy_spent_.is_private
    assert set(est.learner_schema_["outcome"].categories) == {"pass", "fail"}
    assert any(r.kind == "approx" and "'outcome'" in r.target for r in est.budget_log_)
    out = est.sample(500, random_state=0)
    assert set(out["outcome"]) == {"pass", "fail"}  # the label is complete by contract: no missing cell


def test_non_public_learner_schema_is_recorded_as_non_private(clicks):
    from skdpsynth.schema import infer_schema

    f = _label_canary(clicks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = infer_schema(f.drop_duplicates("learner_id")[["outcome"]])
    assert not schema.public and "canary-label" in schema["outcome"].categories
    kw = dict(epsilon=1.0, **COLS, label_column="outcome", vocabulary=list(clicks.schema["vocabulary"]), max_length=40)
    est = DPMarkovSynthesizer(**kw, schema=schema).fit(f)
    assert "canary-label" in est.learner_schema_["outcome"].categories
    spent = est.privacy_spent_
    assert not spent.is_private and np.isinf(spent.epsilon)
    assert any(r.kind == "none" and "not confirmed public" in r.target for r in est.budget_log_)
    est.partial_fit(f.assign(learner_id=f.learner_id + 10_000))
    assert sum(r.kind == "none" for r in est.budget_log_) == 2  # every cohort measured on that domain
    public = DPMarkovSynthesizer(**kw, schema={"outcome": {"kind": "categorical", "nullable": False,
                                                           "categories": ["pass", "fail", "canary-label"]}}).fit(f)
    assert public.privacy_spent_.is_private


def test_n_estimate_is_a_dp_count_and_the_default_release_size(clicks):
    est = DPMarkovSynthesizer(epsilon=1.0, **COLS, vocabulary=list(clicks.schema["vocabulary"]), max_length=40)
    est.fit(clicks.frame.drop(columns="outcome"))
    assert isinstance(est.n_estimate_, int) and abs(est.n_estimate_ - 1500) < 300
    assert est.sample(random_state=0)["learner_id"].nunique() == est.n_estimate_
    assert not any("1500" in r.target or "1500" in str(r.details) for r in est.budget_log_)


def test_n_estimate_weighs_the_label_and_length_totals(clicks):
    # both noisy histograms count every learner once; their totals weighted by inverse noise variance give sd 37
    # over 60 fits (the length histogram's total alone: sd 81), so 150 is four standard deviations
    schema = TableSchema.from_dict({"outcome": {"kind": "categorical", "categories": list(clicks.schema["outcomes"]),
                                                "nullable": False}})
    est = DPMarkovSynthesizer(epsilon=1.0, **COLS, label_column="outcome", vocabulary=list(clicks.schema["vocabulary"]),
                              schema=schema, max_length=40)
    for fitted in (clone(est).fit(clicks.frame) for _ in range(3)):
        groups, lengths = fitted.group_counts_.sum(), fitted.length_counts_.sum()  # 2 label cells, 2 x 20 length
        assert min(groups, lengths) - 1 <= fitted.n_estimate_ <= max(groups, lengths) + 1  # a weighted mean
        assert abs(fitted.n_estimate_ - 1500) < 150


def test_release_dtypes_follow_the_schema_not_the_draw():
    rng = np.random.default_rng(0)
    n, L = 400, 6
    table = pd.DataFrame({"learner_id": np.repeat(np.arange(n), L), "position": np.tile(np.arange(L), n),
                          "activity": rng.integers(0, 3, n * L), "grade": np.repeat(rng.integers(0, 2, n), L)})
    schema = {"grade": {"kind": "categorical", "categories": [0, 1], "nullable": False}}
    public = DPMarkovSynthesizer(epsilon=2.0, **COLS, label_column="grade", vocabulary=[0, 1, 2], schema=schema,
                                 max_length=L).fit(table)
    nullable = DPMarkovSynthesizer(epsilon=2.0, **COLS, label_column="grade", vocabulary=[0, 1, 2],
                                   schema={"grade": {**schema["grade"], "nullable": True}}, max_length=L).fit(table)
    discovered = DPMarkovSynthesizer(epsilon=20.0, delta=1e-3, **COLS, label_column="grade", schema=schema,
                                     max_length=L).fit(table)
    for seed in range(3):
        a, b, c = (est.sample(20, random_state=seed) for est in (public, nullable, discovered))
        assert a["activity"].dtype == "int64" and a["grade"].dtype == "int64"
        assert b["grade"].dtype == "Int64" and b["activity"].dtype == "int64"
        # a DP-discovered vocabulary has the unreleased state: nullable whether or not it was drawn
        assert c["activity"].dtype == "Int64" and c["grade"].dtype == "int64"
