"""The small torch task models learn real structure, and only from what is there."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

torch = pytest.importorskip("torch")  # the deep extra: skipped on a core install

from skdpsynth.models import DKT, SAKT, GRUSequenceClassifier, sequences_from_long  # noqa: E402


def simulate_kt(n_learners: int, *, n_skills: int = 8, seed: int = 0, skill_seed: int = 123) -> pd.DataFrame:
    """Responses from a learner-ability + skill-difficulty + practice model (real KT structure)."""
    difficulty = np.random.default_rng(skill_seed).normal(0, 1, n_skills)
    rng = np.random.default_rng(seed)
    lengths = rng.integers(20, 50, size=n_learners)
    ability = rng.normal(0, 1.2, n_learners)
    ids = np.repeat(np.arange(n_learners), lengths)
    order = np.arange(len(ids)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    skill = rng.integers(0, n_skills, len(ids))
    df = pd.DataFrame({"learner": ids, "t": order, "kc": skill})
    practice = df.groupby(["learner", "kc"]).cumcount().to_numpy()
    logit = ability[ids] - difficulty[skill] + 0.3 * practice
    df["ok"] = (rng.random(len(ids)) < 1 / (1 + np.exp(-logit))).astype(int)
    return df


def simulate_order_clicks(n_learners: int, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    """Every learner has the same bag of events; the label is whether event 2 comes before event 3.

    Event counts carry no information, only order does.
    """
    rng = np.random.default_rng(seed)
    bag = np.array([1, 1, 2, 3, 4, 4, 5, 6, 6, 7])
    seqs = [rng.permutation(bag) for _ in range(n_learners)]
    y = np.array([int(np.argmax(s == 2) < np.argmax(s == 3)) for s in seqs])
    return seqs, y


KT_COLS = {"id_column": "learner", "order_column": "t", "skill_column": "kc", "correct_column": "ok"}


@pytest.mark.parametrize("model", [DKT, pytest.param(SAKT, marks=pytest.mark.slow)])  # each trains for 3 s
def test_kt_models_beat_majority_floor(model):
    train, test = simulate_kt(800, seed=0), simulate_kt(300, seed=1)
    est = model(**KT_COLS, max_epochs=8, random_state=0).fit(train)
    res = est.evaluate(test)
    assert res["macro_f1"] > res["majority_macro_f1"] + 0.15, res
    assert res["auc"] > 0.65, res
    assert res["n_predictions"] == len(test) - 300  # every response but each learner's first


@pytest.mark.parametrize("model", [DKT, SAKT])
def test_kt_models_learn_nothing_from_shuffled_responses(model):
    """Responses permuted across the whole table: no structure left, so no model should beat AUC 0.5 by much."""
    train, test = simulate_kt(500, seed=0), simulate_kt(300, seed=1)
    train["ok"] = np.random.default_rng(5).permutation(train["ok"].to_numpy())
    res = model(**KT_COLS, max_epochs=5, random_state=0).fit(train).evaluate(test)
    assert res["auc"] < 0.6, res


def test_kt_reproducible_and_leaves_global_torch_rng_alone():
    train = simulate_kt(200, seed=0)
    torch.manual_seed(0)
    before = torch.rand(1)
    torch.manual_seed(0)
    a = DKT(**KT_COLS, max_epochs=2, random_state=3).fit(train)
    after = torch.rand(1)
    assert torch.equal(before, after), "fit consumed the global torch RNG"
    b = clone(a).fit(train)
    np.testing.assert_array_equal(a.predict_next(train)[1], b.predict_next(train)[1])


def test_kt_unknown_skill_and_long_sequences():
    train = simulate_kt(200, seed=0)
    test = simulate_kt(50, seed=1)
    test.loc[test.index[:5], "kc"] = 99  # never seen in fit: shares the unknown embedding
    est = SAKT(**KT_COLS, max_length=16, max_epochs=2, random_state=0).fit(train)  # windows of 16
    y, p = est.predict_next(test)
    assert len(y) == len(p) and np.all((p >= 0) & (p <= 1))


def test_kt_bad_input():
    train = simulate_kt(50, seed=0)
    with pytest.raises(ValueError, match="'ok'"):
        DKT(**KT_COLS).fit(train.assign(ok=train["ok"] * 2))
    with pytest.raises(ValueError, match="'learner'"):
        DKT(**KT_COLS).fit(train.assign(learner=train["learner"].where(train.index > 3)))
    with pytest.raises(ValueError, match="empty"):
        DKT(**KT_COLS).fit(train.iloc[:0])
    with pytest.raises(ValueError, match="lacks column"):
        DKT().fit(train)


def test_gru_learns_order_dependent_labels():
    seqs, y = simulate_order_clicks(1200, seed=0)
    test_seqs, test_y = simulate_order_clicks(400, seed=1)
    clf = GRUSequenceClassifier(max_epochs=25, random_state=0).fit(seqs, y)
    assert clf.score(test_seqs, test_y) > 0.8  # chance is 0.5; event counts are identical for everyone
    proba = clf.predict_proba(test_seqs)
    np.testing.assert_allclose(proba.sum(axis=1), 1, rtol=1e-5)
    assert set(clf.predict(test_seqs)) <= set(clf.classes_)


def test_sequences_from_long_round_trip_and_gru_on_long_table():
    rng = np.random.default_rng(0)
    seqs, y = simulate_order_clicks(60, seed=2)
    names = np.array(["", "view", "quiz", "forum", "page", "wiki", "url", "glossary"])
    long = pd.DataFrame({
        "student": np.repeat(np.arange(60), 10),
        "pos": np.tile(np.arange(10), 60),
        "activity": names[np.concatenate(seqs)],
        "result": np.repeat(np.where(y == 1, "pass", "fail"), 10),
    }).sample(frac=1.0, random_state=1)  # rows shuffled: learners spread over non-contiguous rows
    got, labels, vocab = sequences_from_long(long, id_column="student", order_column="pos",
                                             event_columns="activity", label_column="result")
    assert len(got) == 60 and vocab == sorted(vocab)
    decoded = [np.array(vocab, dtype=object)[s - 1] for s in got]
    assert all((d == names[s]).all() for d, s in zip(decoded, seqs))
    assert list(labels) == list(np.where(y == 1, "pass", "fail"))
    # a test table encoded with the training vocabulary: unseen events get the OOV token
    other = long.assign(activity=long["activity"].replace("wiki", "oucontent"))
    got2, _, _ = sequences_from_long(other, id_column="student", order_column="pos", event_columns="activity",
                                     vocabulary=vocab)
    assert max(s.max() for s in got2) == len(vocab) + 1
    clf = GRUSequenceClassifier(max_epochs=2, random_state=rng.integers(100)).fit(got, labels)
    assert clf.predict(got2).shape == (60,)


def test_gru_bad_input():
    with pytest.raises(TypeError, match="list of 1-D"):
        GRUSequenceClassifier().fit(np.zeros((3, 4), dtype=int), [0, 1, 0])
    with pytest.raises(ValueError, match="tokens start at 1"):
        GRUSequenceClassifier().fit([np.array([0, 1]), np.array([1, 2])], [0, 1])
    with pytest.raises(ValueError, match="single class"):
        GRUSequenceClassifier().fit([np.array([1]), np.array([1, 2])], [0, 0])


def test_missing_events_map_to_the_unknown_token():
    """A DP release may write unreleased events as missing: they become the OOV token / unknown skill."""
    long = pd.DataFrame({"id": [0, 0, 0, 1, 1], "t": [0, 1, 2, 0, 1], "ev": ["a", None, "b", "b", "a"]})
    seqs, _, vocab = sequences_from_long(long, id_column="id", order_column="t", event_columns="ev")
    assert vocab == ["a", "b"] and seqs[0].tolist() == [1, 3, 2]
    kt = simulate_kt(60, seed=0).astype({"kc": float})
    kt.loc[kt.index[:4], "kc"] = np.nan
    est = DKT(**KT_COLS, max_epochs=1, random_state=0).fit(kt)
    assert np.nan not in list(est.skills_) and len(est.predict_next(kt)[0]) == len(kt) - 60
    with pytest.raises(ValueError, match="'ok'"):
        DKT(**KT_COLS).fit(kt.assign(ok=kt["ok"].where(kt.index > 2)))
