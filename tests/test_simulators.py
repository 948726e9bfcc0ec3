"""Tests of the learner-data simulators (nothing private, no real data)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from sklearn.preprocessing import OneHotEncoder

from skdpsynth import TableSchema
from skdpsynth.datasets import (
    ACHIEVEMENT_CLASSES,
    ENGAGEMENT_CLASSES,
    OULAD_ACTIVITY_TYPES,
    make_clickstream,
    make_knowledge_tracing,
    make_learning_habits,
)


# ----------------------------------------------------------------------------- learning habits
def test_learning_habits_schema_and_shape():
    b = make_learning_habits(150, random_state=0)
    assert b.frame.shape == (150, 69)
    assert b.data.shape == (150, 68)
    assert b.target == "achievement"
    assert b.feature_names[:5] == ["w01_morning", "w01_afternoon", "w01_evening", "w01_night", "w02_morning"]
    assert b.feature_names[-1] == "w17_night"
    assert list(b.frame.columns) == b.feature_names + ["achievement"]
    assert isinstance(b.schema, TableSchema) and b.schema.public
    assert len(b.schema) == 69
    assert all(b.schema[c].categories == ENGAGEMENT_CLASSES for c in b.feature_names)
    assert b.schema["achievement"].categories == ACHIEVEMENT_CLASSES
    out = b.schema.validate(b.frame, clip=False)
    assert out.shape == b.frame.shape
    assert set(np.unique(b.data.to_numpy())) <= set(ENGAGEMENT_CLASSES)
    assert b.frame.notna().all().all()
    assert isinstance(b.description, str) and "68" in b.description


def test_learning_habits_other_week_counts():
    b = make_learning_habits(10, n_weeks=3, random_state=1)
    assert b.data.shape == (10, 12)
    assert b.feature_names[-1] == "w03_night"
    b = make_learning_habits(5, n_weeks=120, random_state=1)
    assert b.feature_names[0] == "w001_morning"
    assert b.data.shape == (5, 480)


def test_learning_habits_deterministic():
    a = make_learning_habits(80, random_state=7)
    b = make_learning_habits(80, random_state=7)
    c = make_learning_habits(80, random_state=8)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert not a.frame.equals(c.frame)


def test_learning_habits_all_classes_present_and_balanced():
    b = make_learning_habits(3000, random_state=0)
    freq = b.frame["achievement"].value_counts(normalize=True)
    assert set(freq.index) == set(ACHIEVEMENT_CLASSES)
    assert freq.min() > 0.25  # roughly tertiles, as in the paper
    levels = pd.Series(b.data.to_numpy().ravel()).value_counts(normalize=True)
    assert set(levels.index) == set(ENGAGEMENT_CLASSES)
    assert levels.min() > 0.05


def test_learning_habits_label_predictable():
    b = make_learning_habits(2000, random_state=0)
    X = OneHotEncoder().fit_transform(b.data)
    y = b.frame["achievement"].to_numpy()
    clf = LogisticRegression(max_iter=2000, C=0.1).fit(X[:1000], y[:1000])
    bacc = balanced_accuracy_score(y[1000:], clf.predict(X[1000:]))
    assert bacc > 0.42, bacc  # chance is 1/3


def test_learning_habits_features_correlated():
    b = make_learning_habits(1500, random_state=3)
    codes = b.data.apply(lambda s: s.map({c: i for i, c in enumerate(ENGAGEMENT_CLASSES)})).to_numpy(float)
    # same time frame in consecutive weeks: engagement persists
    r = np.corrcoef(codes[:, 0], codes[:, 4])[0, 1]
    assert r > 0.2, r


def test_learning_habits_label_noise_destroys_signal():
    b = make_learning_habits(2000, label_noise=1.0, random_state=0)
    X = OneHotEncoder().fit_transform(b.data)
    y = b.frame["achievement"].to_numpy()
    clf = LogisticRegression(max_iter=2000, C=0.1).fit(X[:1000], y[:1000])
    assert balanced_accuracy_score(y[1000:], clf.predict(X[1000:])) < 0.40
    assert b.latent["label_flipped"].all()


def test_learning_habits_cohort_shift_changes_distribution():
    def profile(shift):
        b = make_learning_habits(3000, cohort_shift=shift, random_state=11)
        v = pd.Series(b.data.to_numpy().ravel())
        night = b.data[[c for c in b.feature_names if c.endswith("night")]].to_numpy().ravel()
        return (v != "inactive").mean(), (night != "inactive").mean(), (b.frame["achievement"] == "high").mean()

    a0, n0, h0 = profile(0.0)
    a1, n1, h1 = profile(1.0)
    assert a1 > a0 + 0.03
    assert n1 > n0 + 0.03
    assert h1 > h0 + 0.05


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"n_students": 0}, ValueError),
        ({"n_students": 2.5}, TypeError),
        ({"n_students": 10, "n_weeks": 0}, ValueError),
        ({"n_students": 10, "label_noise": 1.5}, ValueError),
        ({"n_students": 10, "cohort_shift": float("nan")}, ValueError),
        ({"n_students": 10, "cohort_shift": "big"}, TypeError),
        ({"n_students": 10, "random_state": -1}, ValueError),
    ],
)
def test_learning_habits_validation(kwargs, exc):
    with pytest.raises(exc):
        make_learning_habits(**kwargs)


# ----------------------------------------------------------------------------- clickstream
def _bigram_unigram(frame, vocab):
    k = len(vocab)
    code = pd.Categorical(frame["activity"], categories=vocab).codes.astype(int)
    lid = frame["learner_id"].to_numpy()
    n = lid.max() + 1
    same = lid[1:] == lid[:-1]
    bi = (code[:-1] * k + code[1:])[same]
    B = np.zeros((n, k * k))
    np.add.at(B, (lid[1:][same], bi), 1)
    U = np.zeros((n, k))
    np.add.at(U, (lid, code), 1)
    return U, B


def test_clickstream_shape_and_schema():
    b = make_clickstream(200, min_length=5, max_length=30, random_state=0)
    f = b.frame
    assert list(f.columns) == ["learner_id", "position", "activity", "outcome"]
    assert b.target == "outcome"
    assert f["learner_id"].nunique() == 200
    lengths = f.groupby("learner_id").size()
    assert lengths.min() >= 5 and lengths.max() <= 30
    # positions are 0..L-1 per learner, sorted
    expected = np.concatenate([np.arange(L) for L in lengths.to_numpy()])
    np.testing.assert_array_equal(f["position"].to_numpy(), expected)
    assert f["learner_id"].is_monotonic_increasing
    # outcome constant within learner
    assert (f.groupby("learner_id")["outcome"].nunique() == 1).all()
    assert b.schema["vocabulary"] == OULAD_ACTIVITY_TYPES
    assert set(f["activity"]) <= set(OULAD_ACTIVITY_TYPES)
    assert set(f["outcome"]) == {"pass", "fail"}
    assert b.schema["max_length"] == 30
    b.table_schema.validate(f, clip=False)
    for P in b.transition_matrices.values():
        np.testing.assert_allclose(P.sum(1), 1.0)
        np.testing.assert_allclose(b.stationary @ P, b.stationary, atol=1e-12)


def test_clickstream_deterministic():
    a = make_clickstream(60, random_state=5).frame
    b = make_clickstream(60, random_state=5).frame
    c = make_clickstream(60, random_state=6).frame
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_clickstream_outcome_depends_on_order_not_frequencies():
    n = 2000
    b = make_clickstream(n, random_state=0)
    f = b.frame
    vocab = b.schema["vocabulary"]
    y = (f.groupby("learner_id")["outcome"].first() == "pass").to_numpy()
    # unigram frequencies are (nearly) the same in both outcome groups ...
    uni = f.groupby("outcome")["activity"].value_counts(normalize=True).unstack()
    assert (uni.loc["pass"] - uni.loc["fail"]).abs().max() < 0.02
    # ... but transition frequencies differ clearly
    trans = {}
    for o, g in f.groupby("outcome"):
        U, B = _bigram_unigram(g.assign(learner_id=pd.factorize(g["learner_id"])[0]), vocab)
        trans[o] = B.sum(0).reshape(len(vocab), -1)
        trans[o] = trans[o] / trans[o].sum(1, keepdims=True)
    assert np.abs(trans["pass"] - trans["fail"]).max() > 0.08
    # a classifier on unigram frequencies is at chance, one on bigram frequencies is not
    U, B = _bigram_unigram(f, vocab)
    half = n // 2
    aucs = {}
    for name, X in (("unigram", U / U.sum(1, keepdims=True)), ("bigram", B / np.maximum(B.sum(1, keepdims=True), 1))):
        clf = LogisticRegression(max_iter=3000).fit(X[:half], y[:half])
        aucs[name] = roc_auc_score(y[half:], clf.predict_proba(X[half:])[:, 1])
    assert aucs["unigram"] < 0.58, aucs
    assert aucs["bigram"] > 0.8, aucs


def test_clickstream_no_order_signal_at_zero_strength():
    b = make_clickstream(50, order_strength=0.0, random_state=0)
    P = list(b.transition_matrices.values())
    np.testing.assert_allclose(P[0], P[1])
    np.testing.assert_allclose(P[0], np.tile(b.stationary, (len(b.stationary), 1)))


def test_clickstream_custom_vocabulary_and_outcomes():
    b = make_clickstream(
        300, activity_types=["a", "b", "c", "d"], outcomes=["pass", "fail", "withdrawn"],
        outcome_weights=[0.5, 0.3, 0.2], min_length=3, max_length=3, random_state=2,
    )
    assert set(b.frame["activity"]) <= {"a", "b", "c", "d"}
    assert (b.frame.groupby("learner_id").size() == 3).all()
    assert set(b.frame["outcome"]) == {"pass", "fail", "withdrawn"}
    np.testing.assert_allclose(b.stationary, 0.25)


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"n_learners": 0}, ValueError),
        ({"n_learners": 10, "activity_types": ["a", "b"]}, ValueError),
        ({"n_learners": 10, "activity_types": ["a", "a", "b"]}, ValueError),
        ({"n_learners": 10, "activity_types": "abc"}, TypeError),
        ({"n_learners": 10, "outcomes": ["pass"]}, ValueError),
        ({"n_learners": 10, "min_length": 20, "max_length": 10}, ValueError),
        ({"n_learners": 10, "min_length": 0}, ValueError),
        ({"n_learners": 10, "order_strength": 1.5}, ValueError),
        ({"n_learners": 10, "activity_weights": [1, 1, 1]}, ValueError),
        ({"n_learners": 10, "outcome_weights": [1, -1]}, ValueError),
    ],
)
def test_clickstream_validation(kwargs, exc):
    with pytest.raises(exc):
        make_clickstream(**kwargs)


# ----------------------------------------------------------------------------- knowledge tracing
def _history_features(frame, n_skills):
    """Per response: prior attempts and prior correct answers on the same skill, last answer on it."""
    f = frame
    key = f["learner_id"].astype(np.int64) * n_skills + f["skill_id"].astype(np.int64)
    g = f.groupby(key, sort=False)["correct"]
    prior_n = g.cumcount().to_numpy()
    prior_c = (g.cumsum() - f["correct"]).to_numpy()
    last = g.shift(1).fillna(-1).to_numpy()
    skill = np.eye(n_skills)[f["skill_id"].to_numpy()]
    return np.column_stack([
        np.log1p(prior_n), prior_c / np.maximum(prior_n, 1), last == 1, last == 0, skill,
    ]).astype(float)


@pytest.mark.parametrize("model", ["bkt", "irt"])
def test_knowledge_tracing_shape_and_schema(model):
    b = make_knowledge_tracing(100, n_skills=6, seq_len=(5, 12), model=model, random_state=0)
    f = b.frame
    assert list(f.columns) == ["learner_id", "position", "skill_id", "correct"]
    assert b.target == "correct"
    lengths = f.groupby("learner_id").size()
    assert lengths.min() >= 5 and lengths.max() <= 12
    assert f["learner_id"].nunique() == 100
    assert set(f["correct"].unique()) <= {0, 1}
    assert set(f["skill_id"].unique()) <= set(range(6))
    assert b.schema["skills"] == tuple(range(6))
    b.table_schema.validate(f, clip=False)
    expected = np.concatenate([np.arange(L) for L in lengths.to_numpy()])
    np.testing.assert_array_equal(f["position"].to_numpy(), expected)
    fixed = make_knowledge_tracing(10, seq_len=7, model=model, random_state=0).frame
    assert (fixed.groupby("learner_id").size() == 7).all()


@pytest.mark.parametrize("model", ["bkt", "irt"])
def test_knowledge_tracing_deterministic(model):
    a = make_knowledge_tracing(40, model=model, random_state=3).frame
    b = make_knowledge_tracing(40, model=model, random_state=3).frame
    c = make_knowledge_tracing(40, model=model, random_state=4).frame
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


@pytest.mark.parametrize("model", ["bkt", "irt"])
def test_knowledge_tracing_next_response_predictable(model):
    n_skills = 8
    b = make_knowledge_tracing(1200, n_skills=n_skills, model=model, random_state=0)
    f = b.frame
    X = _history_features(f, n_skills)
    y = f["correct"].to_numpy()
    train = f["learner_id"].to_numpy() < 600
    clf = LogisticRegression(max_iter=2000).fit(X[train], y[train])
    acc = (clf.predict(X[~train]) == y[~train]).mean()
    majority = max(y[~train].mean(), 1 - y[~train].mean())
    auc = roc_auc_score(y[~train], clf.predict_proba(X[~train])[:, 1])
    assert acc > majority + 0.03, (acc, majority)
    assert auc > 0.65, auc


@pytest.mark.parametrize("model", ["bkt", "irt"])
def test_knowledge_tracing_practice_helps(model):
    b = make_knowledge_tracing(1500, n_skills=5, model=model, random_state=1)
    f = b.frame
    prior = f.groupby(["learner_id", "skill_id"]).cumcount()
    first = f.loc[prior == 0, "correct"].mean()
    later = f.loc[prior >= 5, "correct"].mean()
    assert later > first + 0.1, (first, later)


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"n_learners": 0}, ValueError),
        ({"n_learners": 5, "n_skills": 0}, ValueError),
        ({"n_learners": 5, "seq_len": (10, 5)}, ValueError),
        ({"n_learners": 5, "seq_len": (1, 2, 3)}, TypeError),
        ({"n_learners": 5, "seq_len": 0}, ValueError),
        ({"n_learners": 5, "model": "dkt"}, ValueError),
        ({"n_learners": 5, "p_repeat": 1.0}, ValueError),
    ],
)
def test_knowledge_tracing_validation(kwargs, exc):
    with pytest.raises(exc):
        make_knowledge_tracing(**kwargs)
