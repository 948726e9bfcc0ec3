"""Pure metric functions: privacy distances, TSTR, coverage, discriminator, fairness, AJS, validity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_audit import make_students, student_schema
from threadpoolctl import threadpool_limits

from skdpsynth.metrics import (
    ajs,
    default_classifier,
    discriminator_auc,
    exact_copy_rates,
    fairness_gaps,
    gower_encode,
    majority_floor_f1,
    marginal_histograms,
    membership_inference_auc,
    nearest_neighbour_privacy,
    outcome_coverage,
    schema_validity,
    sequence_features,
    sequence_validity,
    subgroup_recalls,
    target_task,
    tstr_regression_scores,
    tstr_scores,
)
from skdpsynth.metrics._privacy import gower_min_distances


@pytest.fixture(autouse=True)
def _one_thread():
    with threadpool_limits(1):
        yield


def brute_force_gower(a: pd.DataFrame, b: pd.DataFrame, ranges: dict[str, float]) -> np.ndarray:
    """Reference Gower distances with explicit loops (tiny inputs only)."""
    out = np.zeros((len(a), len(b)))
    for i in range(len(a)):
        for j in range(len(b)):
            total = 0.0
            for c in a.columns:
                x, y = a[c].iloc[i], b[c].iloc[j]
                if c in ranges:
                    if pd.isna(x) and pd.isna(y):
                        d = 0.0
                    elif pd.isna(x) or pd.isna(y):
                        d = 1.0
                    else:
                        d = min(abs(x - y) / ranges[c], 1.0)
                else:
                    d = 0.0 if (x == y or (pd.isna(x) and pd.isna(y))) else 1.0
                total += d
            out[i, j] = total / a.shape[1]
    return out


def test_gower_distances_match_brute_force():
    rng = np.random.default_rng(0)
    a = pd.DataFrame({"x": rng.normal(size=7), "c": rng.choice(["u", "v", None], 7), "z": rng.uniform(0, 5, 7)})
    b = pd.DataFrame({"x": rng.normal(size=9), "c": rng.choice(["u", "v", None], 9), "z": rng.uniform(0, 5, 9)})
    a.loc[2, "x"] = np.nan
    b.loc[[1, 4], "x"] = np.nan
    (na, nb), (ca, cb), nums, cats = gower_encode([a, b])
    assert nums == ["x", "z"] and cats == ["c"]
    span = {c: float(a[c].max() - a[c].min()) for c in ("x", "z")}
    expected = brute_force_gower(b, a, span)  # queries = b, reference = a
    ref_min, q_min, _ = gower_min_distances(nb, cb, na, ca, chunk_size=4)
    np.testing.assert_allclose(ref_min, expected.min(axis=0), atol=1e-6)
    np.testing.assert_allclose(q_min, expected.min(axis=1), atol=1e-6)


def test_schema_bounds_scale_distances():
    schema = student_schema()
    a = make_students(5, 0)
    (na,), _, nums, _ = gower_encode([a], schema=schema)
    np.testing.assert_allclose(na[:, nums.index("score")], a["score"] / 100, rtol=1e-6)


def test_membership_auc_copy_vs_independent():
    train, holdout, fresh = make_students(400, 0), make_students(400, 1), make_students(400, 2)
    copy = nearest_neighbour_privacy(train, holdout, train)
    assert copy["membership_auc"] == 1.0
    assert copy["member_exact_rate"] == 1.0 and copy["nonmember_exact_rate"] == 0.0
    assert copy["dcr_share"] == 1.0 and copy["synthetic_copy_rate_train"] == 1.0
    auc = membership_inference_auc(train, holdout, fresh)
    assert 0.42 < auc < 0.58
    # half copied, half fresh: the attack sees it
    mixed = pd.concat([train.iloc[:200], fresh.iloc[:200]])
    assert membership_inference_auc(train, holdout, mixed) > 0.7


def test_membership_sets_are_balanced():
    train, holdout = make_students(600, 0), make_students(200, 1)
    res = nearest_neighbour_privacy(train, holdout, make_students(300, 2), random_state=0)
    assert res["n_members"] == res["n_nonmembers"] == 200
    assert len(res["member_distances"]) == 200


def test_exact_copy_rates_on_discrete_data_are_symmetric():
    rng = np.random.default_rng(1)

    def draw(n):
        return pd.DataFrame({"a": rng.integers(0, 2, n), "b": rng.choice(["x", "y"], n)})

    rates = exact_copy_rates(draw(300), draw(300), draw(300))
    assert rates["member_exact_rate"] == 1.0 and rates["nonmember_exact_rate"] == 1.0


def test_privacy_metrics_name_missing_columns():
    train = make_students(20, 0)
    with pytest.raises(ValueError, match="synthetic lacks columns"):
        nearest_neighbour_privacy(train, train, train.drop(columns="course"))


def test_tstr_scores_oracle_and_missing_class():
    train, holdout, fresh = make_students(600, 0), make_students(600, 1), make_students(600, 2)
    res = tstr_scores(train, holdout, fresh, target="outcome", random_state=0)
    assert res["trtr_f1"] > 0.6 and res["ratio"] > 0.85
    assert res["majority_floor"] < 0.3
    assert set(res["classes"]) == {"dropout", "enrolled", "graduate"}
    lacking = tstr_scores(train, holdout, fresh[fresh["outcome"] != "graduate"], target="outcome", random_state=0)
    assert lacking["per_class_tstr"]["graduate"] == 0.0
    assert lacking["tstr_f1"] < res["tstr_f1"]


def test_tstr_without_training_rows_cross_validates_holdout():
    holdout, fresh = make_students(400, 1), make_students(400, 2)
    res = tstr_scores(None, holdout, fresh, target="outcome", random_state=0)
    assert "cross-validation" in res["trtr_method"] and res["trtr_f1"] > 0.5


def test_majority_floor():
    assert majority_floor_f1(["a", "a", "b"], ["a", "b", "b", "b"]) == pytest.approx((2 * 1 / 5) / 2)


def test_outcome_coverage_names_missing_classes():
    real = ["a"] * 90 + ["b"] * 9 + ["c"] * 1 + ["d"] * 0
    cov = outcome_coverage(real, ["a"] * 50, min_share=0.05)
    assert cov["missing"] == ["b"] and cov["missing_minor"] == ["c"]
    assert cov["covered_mass"] == pytest.approx(0.9)


def test_discriminator_auc_separates_shifted_release():
    real, fresh = make_students(400, 0), make_students(400, 2)
    shifted = fresh.assign(score=(fresh["score"] + 30).clip(0, 100))
    same = discriminator_auc(real, fresh, random_state=0)
    assert same < 0.65
    assert discriminator_auc(real, shifted, random_state=0) > 0.85


def test_subgroup_recalls_and_gaps():
    y_true = np.array(["r", "r", "r", "r", "ok", "r", "r", "ok"])
    y_pred = np.array(["r", "r", "ok", "ok", "ok", "r", "r", "r"])
    groups = np.array(["A", "A", "A", "A", "A", "B", "B", "B"])
    rec = subgroup_recalls(y_true, y_pred, groups, positive="r", min_support=1)
    assert rec["A"]["recall"] == 0.5 and rec["B"]["recall"] == 1.0 and rec["A"]["support"] == 4
    gaps = fairness_gaps(y_true, y_pred, {"g": groups}, positive="r", min_support=1)
    assert gaps["worst_gap"] == 0.5 and gaps["min_recall"] == 0.5 and gaps["worst_attribute"] == "g"
    sparse = fairness_gaps(y_true, y_pred, {"g": groups}, positive="r", min_support=3)
    assert np.isnan(sparse["worst_gap"])  # group B has only 2 positives


def test_ajs():
    real = make_students(500, 0)
    assert ajs(real, real, target="outcome") == 0.0
    other = make_students(500, 3)
    small = ajs(real, other, target="outcome", schema=student_schema())
    assert 0 < small < 0.1
    lacking = ajs(real, other[other["outcome"] != "dropout"], target="outcome", return_details=True)
    assert lacking["per_class"]["'dropout'"] == 1.0
    assert lacking["ajs"] > small


def test_schema_validity_counts_problems():
    schema = student_schema()
    df = make_students(50, 0)
    assert schema_validity(df, schema)["valid_fraction"] == 1.0
    bad = df.astype({"attendance": object})
    bad.loc[0, "score"] = -5
    bad.loc[1, "course"] = "chemistry"
    bad.loc[1, "attendance"] = "often"
    res = schema_validity(bad.drop(columns="group"), schema)
    assert res["missing_columns"] == ["group"] and res["valid_fraction"] == 0.0
    res = schema_validity(bad, schema)
    assert res["n_invalid_rows"] == 2
    assert res["problems"] == {"score": {"outside the public bounds": 1}, "attendance": {"not numeric": 1},
                               "course": {"not among the schema's categories": 1}}


def test_sequence_validity():
    ev = pd.DataFrame({"id": [1, 1, 1, 2, 2, 3], "t": [0, 1, 1, 0, 1, 0], "e": ["a", "b", "a", "a", "z", "b"],
                       "y": ["p", "p", "p", "f", "p", "f"]})
    res = sequence_validity(ev, id_col="id", event_col="e", order_col="t", label_col="y", vocabulary=["a", "b"],
                            max_length=2)
    assert res["n_learners"] == 3 and res["n_invalid_learners"] == 2
    assert res["problems"]["'t' not strictly increasing within a learner"] == 1
    assert res["problems"]["'e' outside the vocabulary"] == 1
    assert res["problems"]["'y' not constant within a learner"] == 1
    assert res["problems"]["longer than max_length=2"] == 1
    assert res["valid_fraction"] == pytest.approx(1 / 3)


def test_sequence_features_ignore_order():
    ev = pd.DataFrame({"id": [1, 1, 1, 2, 2, 2], "e": ["a", "b", "a", "a", "a", "b"], "y": ["p"] * 3 + ["f"] * 3})
    feats = sequence_features(ev, id_col="id", event_col="e", label_col="y")
    assert list(feats.columns) == ["n_events", "count=a", "count=b", "y"]
    assert feats.loc[1, ["n_events", "count=a", "count=b"]].tolist() == feats.loc[2, ["n_events", "count=a",
                                                                                      "count=b"]].tolist()


def test_a_synthetic_class_with_a_single_row_does_not_stop_the_classifier():
    train, holdout, fresh = make_students(300, 0), make_students(300, 1), make_students(300, 2)
    lone = pd.concat([fresh[fresh["outcome"] != "dropout"], fresh[fresh["outcome"] == "dropout"].iloc[:1]])
    assert (lone["outcome"] == "dropout").sum() == 1
    res = tstr_scores(train, holdout, lone, target="outcome", random_state=0)
    assert np.isfinite(res["tstr_f1"]) and "dropout" in res["per_class_tstr"]
    model = default_classifier(lone.drop(columns="outcome"), random_state=0)
    model.fit(lone.drop(columns="outcome"), lone["outcome"])
    assert model[-1].get_params()["early_stopping"] is True  # unchanged; only that fit went without it
    # early stopping still runs when the split can be drawn
    model.fit(fresh.drop(columns="outcome"), fresh["outcome"])
    assert model[-1].n_iter_ <= 100


def _graded(n, seed):
    frame = make_students(n, seed)
    rng = np.random.default_rng(seed + 100)
    grade = (frame["score"] / 5 + 4 * frame["attendance"] + rng.normal(0, 1, n)).round().clip(0, 20)
    return frame.drop(columns="outcome").assign(grade=grade.astype(int))


def test_tstr_regression_scores():
    train, holdout, fresh = _graded(500, 0), _graded(500, 1), _graded(500, 2)
    res = tstr_regression_scores(train, holdout, fresh, target="grade", random_state=0)
    assert res["trtr_r2"] > 0.5 and res["ratio"] > 0.85
    assert res["mean_floor_r2"] <= 0.01 and res["tstr_mae"] < res["mean_floor_mae"]
    noise = fresh.assign(grade=np.random.default_rng(0).permutation(fresh["grade"].to_numpy()))
    assert tstr_regression_scores(train, holdout, noise, target="grade", random_state=0)["ratio"] < 0.3
    cv = tstr_regression_scores(None, holdout, fresh, target="grade", random_state=0)
    assert "cross-validation" in cv["trtr_method"] and cv["trtr_r2"] > 0.4


def test_target_task():
    assert target_task(pd.Series(["a", "b"])) == "classification"
    assert target_task(pd.Series([0, 1, 2, 1])) == "classification"
    assert target_task(pd.Series(np.arange(21))) == "regression"
    assert target_task(pd.Series([0.5, 1.0])) == "regression"
    assert target_task(pd.Series([0, 1]), schema=student_schema(), name="score") == "regression"
    assert target_task(pd.Series([1.5]), schema=student_schema(), name="course") == "classification"


def test_marginal_histograms_are_shares_on_shared_bins():
    real, syn = make_students(200, 0), make_students(150, 1)
    marg = marginal_histograms(real, syn, schema=student_schema())
    assert marg["score"]["kind"] == "numeric" and marg["score"]["edges"][0] == 0.0
    assert marg["course"]["kind"] == "categorical" and set(marg["course"]["labels"]) <= {"'math'", "'bio'", "'art'"}
    for m in marg.values():
        assert sum(m["real"]) == pytest.approx(1.0) and sum(m["synthetic"]) == pytest.approx(1.0)


def test_discriminator_error_does_not_print_the_private_size():
    tiny = make_students(3, 0)
    with pytest.raises(ValueError) as err:
        discriminator_auc(tiny, make_students(50, 1), cv=5)
    assert "3 " not in str(err.value) and "50" not in str(err.value)
