"""DPHistSeqSynthesizer: the order-free baseline keeps marginals and destroys order."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from skdpsynth.datasets import make_clickstream
from skdpsynth.synthesizers import DPHistSeqSynthesizer, DPMarkovSynthesizer
from skdpsynth.utils.estimator_checks import check_synthesizer

COLS = {"id_column": "learner_id", "order_column": "position", "event_columns": "activity"}


@pytest.fixture(scope="module")
def clicks():
    return make_clickstream(1200, min_length=10, max_length=40, random_state=1)


def _kw(clicks, **extra):
    kw = dict(epsilon=5.0, **COLS, label_column="outcome", vocabulary=list(clicks.schema["vocabulary"]),
              max_length=40, random_state=0)
    return {**kw, **extra}


def test_budget_and_checks(clicks):
    est = DPHistSeqSynthesizer(**_kw(clicks, epsilon=1.0))
    checks = ["determinism", "noise_unrecoverable", "budget", "no_training_rows", "pickle_roundtrip", "clone"]
    # all 1,200 learners: the label categories are estimated under DP, and the checks that refit on part of 600
    # learners left about 300 against a release threshold of about 246 (refused in a clean-clone CI run)
    assert set(check_synthesizer(est, clicks.frame, checks=checks).values()) == {"passed"}
    fitted = clone(est).fit(clicks.frame)
    assert fitted.privacy_spent_.epsilon <= 1.0 + 1e-9
    model = [r for r in fitted.budget_log_ if "event frequencies" in r.target]
    assert len(model) == 1 and model[0].sensitivity == 40


def test_marginals_kept(clicks):
    out = DPHistSeqSynthesizer(**_kw(clicks)).fit(clicks.frame).sample(1500, random_state=0)
    real = clicks.frame
    for o in ("pass", "fail"):
        r = real[real.outcome == o]["activity"].value_counts(normalize=True)
        s = out[out.outcome == o]["activity"].value_counts(normalize=True).reindex(r.index).fillna(0)
        assert (s - r).abs().max() < 0.03
    rl, sl = real.groupby("learner_id").size(), out.groupby("learner_id").size()
    assert abs(rl.mean() - sl.mean()) < 2.5 and sl.max() <= 40
    assert set(out["outcome"]) == {"pass", "fail"}


@pytest.mark.slow
@pytest.mark.requires("torch")
def test_gru_task_check_separates_markov_from_histseq(clicks):
    """The outcome is in the order only: a GRU trained on DP-Markov data predicts real outcomes, on DP-HistSeq not."""
    from skdpsynth.models import GRUSequenceClassifier, sequences_from_long

    test = make_clickstream(400, min_length=10, max_length=40, random_state=2).frame
    enc = dict(id_column="learner_id", order_column="position", event_columns="activity", label_column="outcome")
    vocab = list(clicks.schema["vocabulary"])
    xt, yt, _ = sequences_from_long(test, vocabulary=vocab, **enc)
    scores = {}
    for cls in (DPMarkovSynthesizer, DPHistSeqSynthesizer):
        syn = cls(**_kw(clicks)).fit(clicks.frame).sample(1200, random_state=0)
        xs, ys, _ = sequences_from_long(syn, vocabulary=vocab, **enc)
        # no early stop: the order signal is found after a plateau at chance that can outlast a short patience
        # (CI once stopped both models at 0.47)
        gru = GRUSequenceClassifier(max_epochs=15, patience=15, random_state=0)
        scores[cls.__name__] = gru.fit(xs, ys).score(xt, yt)
    assert scores["DPMarkovSynthesizer"] > 0.7, scores
    assert scores["DPHistSeqSynthesizer"] < 0.6, scores


def test_partial_fit(clicks):
    f = clicks.frame
    est = DPHistSeqSynthesizer(**_kw(clicks)).fit(f[f.learner_id < 600])
    before = est.event_counts_.sum()
    est.partial_fit(f[f.learner_id >= 600])
    assert est.event_counts_.sum() > 1.5 * before and est.n_cohorts_ == 2
    assert est.privacy_spent_.epsilon == pytest.approx(5.0)


def test_unknown_event_rejected_before_budget(clicks):
    f = clicks.frame.copy()
    f.loc[f.index[0], "activity"] = "not-an-activity"
    est = DPHistSeqSynthesizer(**_kw(clicks))
    with pytest.raises(ValueError, match="not in the vocabulary"):
        est.fit(f)
    assert not hasattr(est, "budget_log_")
    np.testing.assert_array_equal(est.get_params()["vocabulary"], clicks.schema["vocabulary"])
