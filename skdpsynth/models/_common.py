"""Helpers shared by the torch models: seeding, long-table grouping, the early-stopping loop."""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from skdpsynth.utils._optional import import_optional
from skdpsynth.utils._random import check_random_state, torch_seed

torch = import_optional("torch", "skdpsynth.models")  # the deep extra

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def torch_threads(n_threads: int | None) -> Iterator[None]:
    """Use ``n_threads`` torch intra-op threads inside the block (None: leave as is); restored on exit."""
    before = torch.get_num_threads()
    if n_threads is not None:
        torch.set_num_threads(int(n_threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def seeded_torch(rng: np.random.Generator, n_threads: int | None = 1) -> Iterator[None]:
    """Run torch code on a private seed drawn from ``rng`` (and ``n_threads`` intra-op threads).

    The global torch RNG state and thread count are restored on exit. Small
    recurrent models run fastest single-threaded, and much slower with threads
    on a busy machine.
    """
    with torch.random.fork_rng(devices=[]), torch_threads(n_threads):
        torch.manual_seed(torch_seed(rng))
        yield


def group_long(
    table: pd.DataFrame, *, id_column: str, order_column: str, columns: Sequence[str], what: str = "table",
    allow_missing: Sequence[str] = (),
) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """Sort a long table by (id, order) and return (learner ids, start offsets, sorted columns).

    Rows of one learner need not be contiguous; the sort is stable so ties in
    ``order_column`` keep their input order. Raises ``ValueError`` naming the
    column on missing columns, missing values in key columns (except those in
    ``allow_missing``) or an empty table.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame in long format (one row per event), "
                        f"got {type(table).__name__}.")
    needed = [id_column, order_column, *columns]
    missing = [c for c in dict.fromkeys(needed) if c not in table.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; it has {list(table.columns)}.")
    if len(table) == 0:
        raise ValueError(f"{what} is empty: at least one event is needed.")
    for c in dict.fromkeys(needed):
        if c not in allow_missing and table[c].isna().any():
            raise ValueError(f"column {c!r} of {what} has {int(table[c].isna().sum())} missing value(s); "
                             "key and event columns must be complete.")
    ordered = table.sort_values([id_column, order_column], kind="stable")
    ids = ordered[id_column].to_numpy()
    change = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    starts = np.concatenate([[0], change])
    return ids[starts], starts, ordered[list(dict.fromkeys(columns))].reset_index(drop=True)


def split_validation(n: int, fraction: float, rng: np.random.Generator, stratify: np.ndarray | None = None,
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, validation); no validation set when ``fraction`` is 0 or ``n`` is tiny."""
    if fraction <= 0 or n < 10:
        return np.arange(n), np.arange(0)
    perm = rng.permutation(n)
    if stratify is not None:
        val = []
        for c in np.unique(stratify):
            members = perm[stratify[perm] == c]
            k = int(round(fraction * len(members)))
            val.append(members[:k])
        val = np.sort(np.concatenate(val))
    else:
        val = np.sort(perm[: max(1, int(round(fraction * n)))])
    mask = np.ones(n, dtype=bool)
    mask[val] = False
    return np.flatnonzero(mask), val


def train_with_early_stopping(
    module: torch.nn.Module,
    *,
    n_train: int,
    batch_loss: Callable[[np.ndarray], torch.Tensor],
    val_loss: Callable[[], float] | None,
    lr: float,
    batch_size: int,
    max_epochs: int,
    patience: int,
    rng: np.random.Generator,
    weight_decay: float = 0.0,
    verbose: int = 0,
) -> tuple[list[float], int]:
    """Adam on mini-batches (order from ``rng``); keeps the weights of the best validation epoch.

    Returns the validation-loss history and the best epoch (1-based; the last
    epoch when there is no validation set).
    """
    opt = torch.optim.Adam(module.parameters(), lr=lr, weight_decay=weight_decay)
    best, best_state, best_epoch, history, waited = np.inf, None, 0, [], 0
    epochs = range(1, max_epochs + 1)
    if verbose >= 1:
        from tqdm.auto import tqdm

        epochs = tqdm(epochs, desc=type(module).__name__)
    for epoch in epochs:
        module.train()
        perm = rng.permutation(n_train)
        for s in range(0, n_train, batch_size):
            idx = perm[s:s + batch_size]
            opt.zero_grad()
            loss = batch_loss(idx)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(module.parameters(), 5.0)
            opt.step()
        if val_loss is None:
            best_epoch = epoch
            continue
        module.eval()
        with torch.no_grad():
            v = float(val_loss())
        history.append(v)
        logger.debug("%s epoch %d validation loss %.4f", type(module).__name__, epoch, v)
        if v < best - 1e-4:
            best, best_state, best_epoch, waited = v, copy.deepcopy(module.state_dict()), epoch, 0
        else:
            waited += 1
            if waited >= patience:
                break
    if best_state is not None:
        module.load_state_dict(best_state)
    module.eval()
    return history, best_epoch


def rng_from(random_state) -> np.random.Generator:
    """The model's numpy stream (batch order, validation split, torch seed)."""
    return check_random_state(random_state)
