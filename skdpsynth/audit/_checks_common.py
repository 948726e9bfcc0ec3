"""Helpers shared by the PEARL checks: seeds, long-table features, learner splits."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from skdpsynth.audit._base import AuditData, BaseCheck, _as_list
from skdpsynth.metrics._validity import sequence_features

__all__ = ["is_schema", "check_seed", "long_features", "split_learners"]


def is_schema(obj: Any) -> bool:
    """Duck-typed :class:`~skdpsynth.schema.TableSchema` test."""
    return obj is not None and hasattr(obj, "columns") and hasattr(obj, "validate") and hasattr(obj, "names")


def check_seed(data: AuditData, own: Any) -> int:
    """The check's own int seed, else the audit's."""
    if isinstance(own, (int, np.integer)) and not isinstance(own, bool):
        return int(own)
    return int(data.random_state)


def long_features(check: BaseCheck, data: AuditData, label: str | None) -> tuple[pd.DataFrame, ...]:
    """Per-learner order-free features of synthetic, holdout (and train), on a shared vocabulary."""
    frames = [data.synthetic, data.holdout] + ([data.train] if data.train is not None else [])
    ev = _as_list(check.event_col)
    for name, f in zip(("synthetic", "holdout", "train"), frames):
        missing = [c for c in [check.id_col, *ev] + ([label] if label else []) if c not in f.columns]
        if missing:
            raise ValueError(f"{type(check).__name__}: {name} lacks column(s) {missing}.")
    feats = [sequence_features(f, id_col=check.id_col, event_col=check.event_col, label_col=label) for f in frames]
    cols = sorted(set().union(*(set(f.columns) for f in feats)) - {"n_events"} - ({label} if label else set()))
    ordered = ["n_events", *cols] + ([label] if label else [])
    return tuple(f.reindex(columns=ordered, fill_value=0.0).reset_index(drop=True) for f in feats)


def split_learners(frame: pd.DataFrame, id_col: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two random halves of the learners of a long table."""
    ids = pd.unique(frame[id_col])
    rng = np.random.default_rng(seed)
    a = set(rng.permutation(ids)[: len(ids) // 2].tolist())
    mask = frame[id_col].isin(a).to_numpy()
    return frame[mask], frame[~mask]
