"""GRU sequence classifier: one outcome per learner from their event sequence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import f1_score
from sklearn.utils.validation import check_is_fitted

from skdpsynth.models._common import (
    group_long,
    rng_from,
    seeded_torch,
    split_validation,
    torch_threads,
    train_with_early_stopping,
)
from skdpsynth.utils._optional import import_optional

torch = import_optional("torch", "GRUSequenceClassifier")  # the deep extra

__all__ = ["GRUSequenceClassifier", "sequences_from_long"]


def sequences_from_long(
    table: pd.DataFrame,
    *,
    id_column: str,
    order_column: str,
    event_columns: str | Sequence[str],
    label_column: str | None = None,
    vocabulary: Sequence[Any] | None = None,
) -> tuple[list[np.ndarray], np.ndarray | None, list[Any]]:
    """Turn a long-format event table into integer token sequences, one per learner.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per event. Rows of a learner need not be contiguous nor sorted;
        they are ordered by ``order_column`` (ties keep their row order).
    id_column, order_column : str
        Learner identifier and event time / position.
    event_columns : str or list of str
        The event; several columns form a joint event (a tuple).
    label_column : str, optional
        One outcome per learner (its first row's value is used; it must be
        constant within a learner).
    vocabulary : sequence, optional
        Events in token order (tuples for several event columns). Token ``i + 1``
        is ``vocabulary[i]``; events not in it become token ``len(vocabulary) + 1``
        (the out-of-vocabulary token), as do missing events (e.g. a DP release's
        unreleased events). Default: the sorted (non-missing) events of ``table``.
        Pass the vocabulary of the training table when encoding a test table.

    Returns
    -------
    sequences : list of ndarray of int64
        Tokens in ``1 .. len(vocabulary) + 1``, in learner-id order (0 is padding).
    y : ndarray or None
        The learners' labels.
    vocabulary : list
        The vocabulary used.
    """
    cols = [event_columns] if isinstance(event_columns, str) else list(event_columns)
    extra = [label_column] if label_column is not None else []
    _, starts, data = group_long(table, id_column=id_column, order_column=order_column, columns=cols + extra,
                                 allow_missing=cols)
    if len(cols) == 1:
        events = pd.Series(data[cols[0]].to_numpy(), dtype=object)
    else:
        events = pd.Series(list(zip(*(data[c].to_numpy() for c in cols))), dtype=object)
    if vocabulary is None:
        present = events[data[cols].notna().all(axis=1).to_numpy()]
        vocabulary = sorted(pd.unique(present), key=lambda v: (str(type(v)), v))
    vocabulary = list(vocabulary)
    lookup = {v: i + 1 for i, v in enumerate(vocabulary)}
    tokens = events.map(lookup).fillna(len(vocabulary) + 1).to_numpy(dtype=np.int64)
    sequences = np.split(tokens, starts[1:])
    y = None
    if label_column is not None:
        lab = data[label_column].astype(str).to_numpy()
        lengths = np.diff(np.r_[starts, len(lab)])
        if not np.array_equal(lab, np.repeat(lab[starts], lengths)):
            raise ValueError(f"label column {label_column!r} varies within a learner; give one outcome per learner.")
        lab = data[label_column].to_numpy()
        y = lab[starts]
    return sequences, y, vocabulary


class _GRUNet(torch.nn.Module):
    def __init__(self, n_tokens: int, embedding_dim: int, hidden_size: int, n_classes: int, dropout: float):
        super().__init__()
        self.emb = torch.nn.Embedding(n_tokens, embedding_dim, padding_idx=0)
        self.gru = torch.nn.GRU(embedding_dim, hidden_size, batch_first=True)
        self.drop = torch.nn.Dropout(dropout)
        self.out = torch.nn.Linear(hidden_size, n_classes)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = torch.nn.utils.rnn.pack_padded_sequence(self.emb(tokens), lengths, batch_first=True,
                                                         enforce_sorted=False)
        _, h = self.gru(packed)
        return self.out(self.drop(h[-1]))


class GRUSequenceClassifier(ClassifierMixin, BaseEstimator):
    """Classify a learner's event sequence (a GRU over token embeddings).

    Input format: a list of 1-D integer arrays, one per learner, tokens
    ``>= 1`` (0 is reserved for padding). Build it from a long-format event
    table with :func:`sequences_from_long`, encoding the test table with the
    training vocabulary. Tokens beyond the largest token seen in ``fit`` are
    mapped to one shared unknown embedding.

    Parameters
    ----------
    embedding_dim : int, default=16
    hidden_size : int, default=32
    max_length : int or None, default=400
        Longer sequences keep their first ``max_length`` events.
    dropout : float, default=0.1
    lr : float, default=3e-3
    batch_size : int, default=64
    max_epochs : int, default=30
    patience : int, default=4
        Early stopping: epochs without improvement of the validation loss.
    validation_fraction : float, default=0.15
        Stratified validation split for early stopping (none when 0).
    class_weight : {"balanced", None}, default="balanced"
        Weight classes inversely to their frequency (macro-F1 is the target metric).
    random_state : None, int or Generator
        Seeds the split, batch order and (through a private ``torch`` seed) initialisation.
    n_threads : int or None, default=1
        torch intra-op threads while fitting / predicting (restored afterwards); None leaves torch's setting.
    verbose : int, default=0

    Attributes
    ----------
    classes_ : ndarray
    n_tokens_ : int
        Embedding rows (padding, tokens, unknown).
    best_epoch_ : int
    """

    def __init__(self, *, embedding_dim=16, hidden_size=32, max_length=400, dropout=0.1, lr=3e-3, batch_size=64,
                 max_epochs=30, patience=4, validation_fraction=0.15, class_weight="balanced", random_state=None,
                 n_threads=1, verbose=0):
        self.embedding_dim = embedding_dim
        self.hidden_size = hidden_size
        self.max_length = max_length
        self.dropout = dropout
        self.lr = lr
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.class_weight = class_weight
        self.random_state = random_state
        self.n_threads = n_threads
        self.verbose = verbose

    def _check_sequences(self, sequences) -> list[np.ndarray]:
        if isinstance(sequences, (pd.DataFrame, np.ndarray)) and getattr(sequences, "ndim", 1) == 2:
            raise TypeError("sequences must be a list of 1-D integer arrays (one per learner); build it from a long "
                            "table with skdpsynth.models.sequences_from_long.")
        out = []
        for i, s in enumerate(sequences):
            a = np.asarray(s)
            if a.ndim != 1 or len(a) == 0 or not np.issubdtype(a.dtype, np.integer):
                raise ValueError(f"sequence {i} must be a non-empty 1-D array of integer tokens, got {a!r:.60}.")
            if a.min() < 1:
                raise ValueError(f"sequence {i} holds token {a.min()}; tokens start at 1 (0 is padding).")
            out.append(a.astype(np.int64))
        if not out:
            raise ValueError("no sequences given.")
        return out

    def _pad(self, seqs: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
        cap = self.max_length or max(len(s) for s in seqs)
        lengths = np.array([min(len(s), cap) for s in seqs])
        pad = np.zeros((len(seqs), lengths.max()), dtype=np.int64)
        for i, s in enumerate(seqs):  # one copy per learner (not per event)
            pad[i, :lengths[i]] = s[:lengths[i]]
        pad[pad >= self.n_tokens_ - 1] = self.n_tokens_ - 1
        return torch.from_numpy(pad), torch.from_numpy(lengths)

    def fit(self, sequences, y) -> GRUSequenceClassifier:
        """Fit on token sequences and one label per sequence.

        Parameters
        ----------
        sequences : list of 1-D int arrays
        y : array-like of shape (n_sequences,)

        Returns
        -------
        self
        """
        seqs = self._check_sequences(sequences)
        y = np.asarray(y)
        if len(y) != len(seqs):
            raise ValueError(f"y has {len(y)} labels for {len(seqs)} sequences.")
        self.classes_, codes = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"y has a single class {self.classes_[0]!r}; a classifier needs at least two.")
        self.n_tokens_ = int(max(s.max() for s in seqs)) + 2
        rng = rng_from(self.random_state)
        tr, va = split_validation(len(seqs), self.validation_fraction, rng, stratify=codes)
        tokens, lengths = self._pad(seqs)
        target = torch.from_numpy(codes.astype(np.int64))
        weight = None
        if self.class_weight == "balanced":
            freq = np.bincount(codes[tr], minlength=len(self.classes_)).astype(float)
            weight = torch.tensor(len(tr) / (len(freq) * np.maximum(freq, 1)), dtype=torch.float32)
        loss_fn = torch.nn.CrossEntropyLoss(weight=weight)
        with seeded_torch(rng, self.n_threads):
            self.module_ = _GRUNet(self.n_tokens_, self.embedding_dim, self.hidden_size, len(self.classes_),
                                   self.dropout)

            def batch_loss(idx):
                rows = tr[idx]
                return loss_fn(self.module_(tokens[rows], lengths[rows]), target[rows])

            def val_loss():
                return float(loss_fn(self.module_(tokens[va], lengths[va]), target[va]))

            self.validation_loss_, self.best_epoch_ = train_with_early_stopping(
                self.module_, n_train=len(tr), batch_loss=batch_loss, val_loss=val_loss if len(va) else None,
                lr=self.lr, batch_size=self.batch_size, max_epochs=self.max_epochs, patience=self.patience, rng=rng,
                verbose=self.verbose)
        return self

    def predict_proba(self, sequences) -> np.ndarray:
        """Class probabilities, shape (n_sequences, n_classes)."""
        check_is_fitted(self, "module_")
        seqs = self._check_sequences(sequences)
        out = []
        self.module_.eval()
        with torch.no_grad(), torch_threads(self.n_threads):
            for s in range(0, len(seqs), 512):
                tokens, lengths = self._pad(seqs[s:s + 512])
                out.append(torch.softmax(self.module_(tokens, lengths), dim=1).numpy())
        return np.concatenate(out)

    def predict(self, sequences) -> np.ndarray:
        """Most probable class per sequence."""
        return self.classes_[self.predict_proba(sequences).argmax(axis=1)]

    def score(self, sequences, y, sample_weight=None) -> float:
        """Macro-F1 on ``(sequences, y)`` (the audit's metric)."""
        return float(f1_score(np.asarray(y), self.predict(sequences), average="macro", sample_weight=sample_weight))
