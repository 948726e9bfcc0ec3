"""The sequence handle: each query's declared sensitivity holds on neighbouring cohorts, and it gives nothing else."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from skdpsynth.privacy import BudgetAccountant, NoiseSource
from skdpsynth.privacy._sequences import PrivateSequences
from skdpsynth.synthesizers._sequence_data import EventRoles, read_event_table

ROLES = EventRoles("id", "t", ("event",), "label", ())
STATES = [("a",), ("b",), ("c",), ("d",)]
MAX_LENGTH = 12


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    """A simulated long table: ``n`` learners, 1-30 events each over four types, a pass/fail label."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 31, n)
    ids = np.repeat(np.arange(n), lengths)
    return pd.DataFrame({"id": ids, "t": np.arange(len(ids)) - np.repeat(np.cumsum(lengths) - lengths, lengths),
                         "event": rng.choice(list("abcd"), len(ids), p=[0.5, 0.3, 0.15, 0.05]),
                         "label": np.repeat(rng.choice(["pass", "fail"], n), lengths)})


def _learner(table: pd.DataFrame, events: str, label: str = "pass") -> pd.DataFrame:
    """``table`` with one more learner (id after the others) whose events are ``events``."""
    new = pd.DataFrame({"id": table["id"].max() + 1, "t": np.arange(len(events)), "event": list(events),
                        "label": label})
    return pd.concat([table, new], ignore_index=True)


def _handle(table: pd.DataFrame, epsilon: float | None = None) -> PrivateSequences:
    data = read_event_table(table, None, ROLES, duplicate_order="error", owner="test")
    accountant = BudgetAccountant(epsilon, 1e-6)
    return PrivateSequences(data, max_length=MAX_LENGTH, accountant=accountant,
                            noise=NoiseSource.reproducible_from(np.random.SeedSequence(0)))


def _label(learners: pd.DataFrame) -> np.ndarray:
    return (learners["label"] == "pass").to_numpy().astype(np.int64)


def _lengths(learners: pd.DataFrame, lengths: np.ndarray) -> np.ndarray:
    return _label(learners) * (MAX_LENGTH + 1) + lengths


def _neighbours():
    """(D, D with one more learner) pairs: a long repetitive learner, a short mixed one, a middle one removed."""
    base = _table(300)
    yield base, _learner(base, "a" * 40)
    yield base, _learner(base, "abdc", label="fail")
    yield base[base["id"] != 150], base


@pytest.mark.parametrize("order", [0, 1, 2])
def test_event_counts_move_by_at_most_the_declared_bound(order):
    for small, large in _neighbours():
        answers = []
        for table in (small, large):
            vector = _handle(table).event_counts(STATES, len(STATES), order=order, label=_label, n_labels=2)
            assert vector.sensitivity() == (MAX_LENGTH, MAX_LENGTH)  # from the handle's own truncation
            answers.append(vector.measure(target="model counts"))
        change = answers[1] - answers[0]
        assert np.abs(change).sum() <= MAX_LENGTH and np.sqrt((change ** 2).sum()) <= MAX_LENGTH
        assert change.min() >= 0  # adding a learner adds counts and moves nobody else's keys


def test_a_long_learner_reaches_the_bound_and_no_more():
    base = _table(100)
    small = _handle(base).event_counts(STATES, len(STATES), order=1, label=_label, n_labels=2)
    large = _handle(_learner(base, "a" * 40)).event_counts(STATES, len(STATES), order=1, label=_label, n_labels=2)
    change = large.measure(target="m") - small.measure(target="m")
    assert change.sum() == MAX_LENGTH  # truncated at max_length: 40 events count as 12


def test_learner_histograms_move_by_one_cell():
    n_cells = 2 * (MAX_LENGTH + 1)
    for small, large in _neighbours():
        a = _handle(small).learner_histogram(_lengths, n_cells, target="lengths")
        b = _handle(large).learner_histogram(_lengths, n_cells, target="lengths")
        assert np.abs(b - a).sum() == 1
        assert _handle(large).count() - _handle(small).count() == 1


def test_the_model_counts_are_charged_at_the_handles_sensitivity():
    handle = _handle(_table(200), epsilon=1.0)
    noisy = handle.event_counts(STATES, len(STATES), order=1, label=_label, n_labels=2).measure(
        epsilon=0.5, target="transitions")
    record = handle._accountant.records[-1]
    assert record.sensitivity == MAX_LENGTH and record.epsilon == 0.5
    assert noisy.shape == (2 * (len(STATES) + 1) * len(STATES),)


def test_the_handle_refuses_pickling_a_length_and_a_wrong_encoding():
    handle = _handle(_table(50), epsilon=1.0)
    with pytest.raises(TypeError, match="never pickled"):
        pickle.dumps(handle)
    with pytest.raises(TypeError):
        len(handle)
    with pytest.raises(ValueError, match="row-wise"):
        handle.learner_histogram(lambda learners, lengths: np.zeros(3, dtype=int), 2, epsilon=0.1, target="x")
    assert list(handle.learner_template.columns) == ["label"] and handle.learner_template.empty


def test_the_nonprivate_door_records_its_use_and_is_shut_when_private():
    private = _handle(_table(50), epsilon=1.0)
    with pytest.raises(PermissionError):
        private.observed_states("vocabulary")
    with pytest.raises(PermissionError):
        private.nonprivate_learners("schema")
    assert not private._accountant.records
    handle = _handle(_table(50))
    assert handle.observed_states("vocabulary read from the data") == STATES
    assert len(handle.nonprivate_learners("schema read from the data")) == 50
    assert [r.kind for r in handle._accountant.records] == ["none", "none"]


def test_events_outside_the_vocabulary_are_one_unreleased_state_or_dropped():
    handle = _handle(_learner(_table(20), "e" * 5))
    kept = handle.event_counts(STATES[:3], 4, order=0, label=_label, n_labels=2).measure(target="m")
    dropped = handle.event_counts(STATES[:3], 3, order=0, label=_label, n_labels=2).measure(target="m")
    assert kept.reshape(2, 4)[:, 3].sum() >= 5  # "d" and the new learner's "e" events: the unreleased state
    assert dropped.sum() == kept.sum() - kept.reshape(2, 4)[:, 3].sum()
