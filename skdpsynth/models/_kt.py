"""Knowledge-tracing models: DKT (Piech et al. 2015) and SAKT (Pandey & Karypis 2019).

Both read a long-format response table -- one row per answered item, with a
learner id, an order (time or position), the skill practised and whether the
answer was correct (0/1) -- and predict, at every step, whether the learner's
*next* response is correct given the next skill and the history so far.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score
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

torch = import_optional("torch", "DKT / SAKT")  # the deep extra

__all__ = ["DKT", "SAKT"]


class _KTBase(BaseEstimator):
    """Data preparation, training and evaluation shared by DKT and SAKT."""

    def _columns(self) -> list[str]:
        return [self.skill_column, self.correct_column]

    def _encode(self, table: pd.DataFrame, what: str) -> dict[str, torch.Tensor]:
        """Long table -> padded windows (skill index, correct, mask), shape (n_windows, max_length)."""
        _, starts, data = group_long(table, id_column=self.id_column, order_column=self.order_column,
                                     columns=self._columns(), what=what, allow_missing=[self.skill_column])
        correct = data[self.correct_column]
        values = pd.unique(correct)
        ok = all(v in (0, 1) or v is True or v is False for v in values)
        if not ok:
            raise ValueError(f"column {self.correct_column!r} must hold 0/1 (or booleans); found {list(values)[:5]}.")
        r = correct.to_numpy().astype(np.int64)
        skills = data[self.skill_column].to_numpy()
        if not hasattr(self, "skills_"):  # fitting: the skill vocabulary is the training table's
            present = pd.unique(skills[pd.notna(skills)])
            self.skills_ = np.array(sorted(present, key=lambda v: (str(type(v)), v)), dtype=object)
        index = {s: i + 1 for i, s in enumerate(self.skills_)}
        unknown = len(self.skills_) + 1
        q = pd.Series(skills, dtype=object).map(index).fillna(unknown).to_numpy(dtype=np.int64)
        n = len(q)
        learner = np.zeros(n, dtype=np.int64)
        learner[starts[1:]] = 1
        learner = np.cumsum(learner)
        pos = np.arange(n) - starts[learner]
        T = int(self.max_length)
        window = np.cumsum(np.r_[0, (np.diff(learner) != 0) | (pos[1:] % T == 0)])
        col = pos % T
        n_win = int(window[-1]) + 1
        Q = np.zeros((n_win, T), dtype=np.int64)
        R = np.zeros((n_win, T), dtype=np.int64)
        M = np.zeros((n_win, T), dtype=bool)
        Q[window, col] = q
        R[window, col] = r
        M[window, col] = True
        width = max(int(M.sum(axis=1).max()), 2)
        return {"q": torch.from_numpy(Q[:, :width]), "r": torch.from_numpy(R[:, :width]),
                "m": torch.from_numpy(M[:, :width])}

    def _logits(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Logits of the next response, shape (n, T - 1): position t predicts response t + 1."""
        return self.module_(batch["q"], batch["r"])

    @staticmethod
    def _take(data: dict[str, torch.Tensor], idx) -> dict[str, torch.Tensor]:
        return {k: v[idx] for k, v in data.items()}

    def fit(self, table: pd.DataFrame, y: Any = None) -> _KTBase:
        """Fit on a long response table.

        Parameters
        ----------
        table : pandas.DataFrame
            One row per response with ``id_column``, ``order_column``,
            ``skill_column`` and ``correct_column`` (0/1). Sequences longer than
            ``max_length`` are cut into consecutive windows.
        y : ignored

        Returns
        -------
        self
        """
        if hasattr(self, "skills_"):
            del self.skills_
        data = self._encode(table, "the training table")
        rng = rng_from(self.random_state)
        tr, va = split_validation(len(data["q"]), self.validation_fraction, rng)
        n_q = len(self.skills_) + 2
        bce = torch.nn.BCEWithLogitsLoss()

        def masked_loss(batch):
            logits = self._logits(batch)
            mask = batch["m"][:, 1:]
            return bce(logits[mask], batch["r"][:, 1:][mask].float())

        with seeded_torch(rng, self.n_threads):
            self.module_ = self._build(n_q, data["q"].shape[1])
            val = self._take(data, torch.from_numpy(va)) if len(va) else None
            self.validation_loss_, self.best_epoch_ = train_with_early_stopping(
                self.module_, n_train=len(tr),
                batch_loss=lambda idx: masked_loss(self._take(data, torch.from_numpy(tr[idx]))),
                val_loss=(lambda: masked_loss(val)) if val is not None else None, lr=self.lr,
                batch_size=self.batch_size, max_epochs=self.max_epochs, patience=self.patience, rng=rng,
                verbose=self.verbose)
        return self

    def predict_next(self, table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Probability that each response after a learner's first is correct.

        Parameters
        ----------
        table : pandas.DataFrame
            Long response table (skills unseen in ``fit`` share one unknown embedding).

        Returns
        -------
        y_true : ndarray of int
            The observed responses (every response but each window's first).
        proba : ndarray of float
            The predicted probability of a correct response.
        """
        check_is_fitted(self, "module_")
        data = self._encode(table, "the evaluation table")
        ys, ps = [], []
        self.module_.eval()
        with torch.no_grad(), torch_threads(self.n_threads):
            for s in range(0, len(data["q"]), 256):
                batch = self._take(data, slice(s, s + 256))
                p = torch.sigmoid(self._logits(batch))
                mask = batch["m"][:, 1:]
                ps.append(p[mask].numpy())
                ys.append(batch["r"][:, 1:][mask].numpy())
        return np.concatenate(ys), np.concatenate(ps)

    def evaluate(self, table: pd.DataFrame) -> dict[str, float]:
        """Next-response metrics on a long table.

        Returns
        -------
        dict
            ``macro_f1`` (threshold ``threshold``), ``auc``, ``accuracy``,
            ``n_predictions`` and ``majority_macro_f1`` -- the macro-F1 of
            always predicting the table's majority response (the floor a model
            that learned nothing reaches).
        """
        y, p = self.predict_next(table)
        pred = (p >= self.threshold).astype(int)
        major = int(y.mean() >= 0.5)
        return {
            "macro_f1": float(f1_score(y, pred, average="macro", labels=[0, 1], zero_division=0)),
            "auc": float(roc_auc_score(y, p)) if len(np.unique(y)) == 2 else float("nan"),
            "accuracy": float(accuracy_score(y, pred)),
            "n_predictions": int(len(y)),
            "majority_macro_f1": float(f1_score(y, np.full_like(y, major), average="macro", labels=[0, 1],
                                                zero_division=0)),
        }

    def score(self, table: pd.DataFrame, y: Any = None) -> float:
        """Next-response macro-F1 on a long table."""
        return self.evaluate(table)["macro_f1"]

    def _build(self, n_q: int, width: int) -> torch.nn.Module:  # pragma: no cover - abstract
        raise NotImplementedError


_KT_PARAMS = """
    id_column, order_column, skill_column, correct_column : str
        Column names of the long response table (defaults ``"id"``, ``"order"``,
        ``"skill"``, ``"correct"``).
    max_length : int, default=100
        Window length: longer sequences are cut into consecutive windows.
    lr : float, default=3e-3
    batch_size : int, default=64
    max_epochs : int, default=20
    patience : int, default=3
        Early stopping on the validation loss (weights of the best epoch kept).
    validation_fraction : float, default=0.1
        Share of windows held out for early stopping.
    threshold : float, default=0.5
        Probability above which a response is predicted correct.
    random_state : None, int or Generator
        Seeds the split, batch order and (through a private torch seed) initialisation and dropout.
    n_threads : int or None, default=1
        torch intra-op threads while fitting / predicting (restored afterwards); None leaves torch's setting.
    verbose : int, default=0
"""


class _DKTNet(torch.nn.Module):
    def __init__(self, n_q: int, emb: int, hidden: int, cell: str, dropout: float):
        super().__init__()
        self.emb = torch.nn.Embedding(2 * n_q, emb, padding_idx=0)
        rnn = torch.nn.LSTM if cell == "lstm" else torch.nn.GRU
        self.rnn = rnn(emb, hidden, batch_first=True)
        self.drop = torch.nn.Dropout(dropout)
        self.out = torch.nn.Linear(hidden, n_q)

    def forward(self, q: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        x = self.emb(2 * q[:, :-1] + r[:, :-1])
        h, _ = self.rnn(x)
        logits = self.out(self.drop(h))
        return logits.gather(2, q[:, 1:].unsqueeze(-1)).squeeze(-1)


class DKT(_KTBase):
    __doc__ = f"""Deep Knowledge Tracing (Piech et al. 2015): an LSTM (or GRU) over (skill, correct) interactions.

    The hidden state after interaction ``t`` gives one logit per skill; the
    logit of skill ``q_(t+1)`` predicts whether response ``t + 1`` is correct.

    Parameters
    ----------
    {_KT_PARAMS.strip()}
    embedding_dim : int, default=32
    hidden_size : int, default=64
    cell : {{"lstm", "gru"}}, default="lstm"
    dropout : float, default=0.1

    Attributes
    ----------
    skills_ : ndarray
        Skills seen in ``fit`` (others, and missing skills, share one unknown index).
    best_epoch_ : int
    """

    def __init__(self, *, id_column="id", order_column="order", skill_column="skill", correct_column="correct",
                 embedding_dim=32, hidden_size=64, cell="lstm", dropout=0.1, max_length=100, lr=3e-3,
                 batch_size=64, max_epochs=20, patience=3, validation_fraction=0.1, threshold=0.5,
                 random_state=None, n_threads=1, verbose=0):
        self.id_column = id_column
        self.order_column = order_column
        self.skill_column = skill_column
        self.correct_column = correct_column
        self.embedding_dim = embedding_dim
        self.hidden_size = hidden_size
        self.cell = cell
        self.dropout = dropout
        self.max_length = max_length
        self.lr = lr
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.threshold = threshold
        self.random_state = random_state
        self.n_threads = n_threads
        self.verbose = verbose

    def _build(self, n_q: int, width: int) -> torch.nn.Module:
        if self.cell not in ("lstm", "gru"):
            raise ValueError(f"cell must be 'lstm' or 'gru', got {self.cell!r}.")
        return _DKTNet(n_q, self.embedding_dim, self.hidden_size, self.cell, self.dropout)


class _SAKTNet(torch.nn.Module):
    def __init__(self, n_q: int, d: int, heads: int, width: int, dropout: float):
        super().__init__()
        self.inter = torch.nn.Embedding(2 * n_q, d, padding_idx=0)
        self.exer = torch.nn.Embedding(n_q, d, padding_idx=0)
        self.pos = torch.nn.Embedding(width, d)
        self.attn = torch.nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        self.norm1 = torch.nn.LayerNorm(d)
        self.ffn = torch.nn.Sequential(torch.nn.Linear(d, d), torch.nn.ReLU(), torch.nn.Dropout(dropout),
                                       torch.nn.Linear(d, d))
        self.norm2 = torch.nn.LayerNorm(d)
        self.out = torch.nn.Linear(d, 1)

    def forward(self, q: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        T = q.shape[1] - 1
        pos = torch.arange(T, device=q.device)
        keys = self.inter(2 * q[:, :-1] + r[:, :-1]) + self.pos(pos)
        query = self.exer(q[:, 1:])
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=q.device), diagonal=1)
        a, _ = self.attn(query, keys, keys, attn_mask=causal, need_weights=False)
        h = self.norm1(a + query)
        h = self.norm2(h + self.ffn(h))
        return self.out(h).squeeze(-1)


class SAKT(_KTBase):
    __doc__ = f"""Self-Attentive Knowledge Tracing (Pandey & Karypis 2019).

    Keys and values are the past interactions (skill, correct) plus a position
    embedding; the query at step ``t`` is the embedding of the next skill
    ``q_(t+1)``; a causal mask lets it attend to interactions ``0 .. t`` only.
    One attention block with residual connections, layer norms and a
    feed-forward layer, then a logit.

    Parameters
    ----------
    {_KT_PARAMS.strip()}
    embedding_dim : int, default=32
    n_heads : int, default=2
    dropout : float, default=0.1

    Attributes
    ----------
    skills_ : ndarray
    best_epoch_ : int
    """

    def __init__(self, *, id_column="id", order_column="order", skill_column="skill", correct_column="correct",
                 embedding_dim=32, n_heads=2, dropout=0.1, max_length=100, lr=3e-3, batch_size=64, max_epochs=20,
                 patience=3, validation_fraction=0.1, threshold=0.5, random_state=None, n_threads=1, verbose=0):
        self.id_column = id_column
        self.order_column = order_column
        self.skill_column = skill_column
        self.correct_column = correct_column
        self.embedding_dim = embedding_dim
        self.n_heads = n_heads
        self.dropout = dropout
        self.max_length = max_length
        self.lr = lr
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.threshold = threshold
        self.random_state = random_state
        self.n_threads = n_threads
        self.verbose = verbose

    def _build(self, n_q: int, width: int) -> torch.nn.Module:
        return _SAKTNet(n_q, self.embedding_dim, self.n_heads, int(self.max_length), self.dropout)
