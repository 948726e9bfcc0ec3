"""Subgroup performance: per-group recall, worst-group recall gap, minimum subgroup recall."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["subgroup_recalls", "fairness_gaps"]


def _recall(y_true: np.ndarray, y_pred: np.ndarray, positive: Any) -> float:
    if positive is not None:
        pos = y_true == positive
        return float((y_pred[pos] == positive).mean()) if pos.any() else float("nan")
    classes = np.unique(y_true)
    return float(np.mean([(y_pred[y_true == c] == c).mean() for c in classes])) if len(classes) else float("nan")


def subgroup_recalls(
    y_true: Any, y_pred: Any, groups: Any, *, positive: Any = None, min_support: int = 10,
) -> dict[str, dict[str, Any]]:
    """Recall within each group of one protected attribute.

    Parameters
    ----------
    y_true, y_pred : array-like
        True and predicted labels (compared as strings).
    groups : array-like
        Group of each row (missing values form the group ``"<NA>"``).
    positive : label, optional
        Recall of this class (e.g. ``"Dropout"`` for at-risk prediction); when
        None, the macro-averaged recall over the classes present in the group
        (balanced accuracy).
    min_support : int, default=10
        Groups with fewer rows of the positive class (or, without ``positive``,
        fewer rows) are reported but flagged ``"used": False``.

    Returns
    -------
    dict
        group -> ``{"recall", "n", "support", "used"}``.
    """
    yt = np.asarray(pd.Series(y_true).astype(str))
    yp = np.asarray(pd.Series(y_pred).astype(str))
    g = pd.Series(groups).astype(object)
    g = np.asarray(g.where(g.notna(), "<NA>").astype(str))
    if not (len(yt) == len(yp) == len(g)):
        raise ValueError(f"y_true, y_pred and groups differ in length ({len(yt)}, {len(yp)}, {len(g)}).")
    pos = None if positive is None else str(positive)
    out = {}
    for level in sorted(np.unique(g)):
        m = g == level
        support = int((yt[m] == pos).sum()) if pos is not None else int(m.sum())
        out[str(level)] = {"recall": _recall(yt[m], yp[m], pos), "n": int(m.sum()), "support": support,
                           "used": support >= min_support}
    return out


def fairness_gaps(
    y_true: Any, y_pred: Any, protected: pd.DataFrame | Mapping[str, Any], *, positive: Any = None,
    min_support: int = 10,
) -> dict[str, Any]:
    """Worst-group recall gap and minimum subgroup recall over protected attributes.

    Returns
    -------
    dict
        ``per_attribute``: attribute -> ``{"groups": subgroup_recalls(...),
        "gap": max - min recall over used groups, "min_recall": ...}``;
        ``worst_gap`` and ``min_recall`` over all attributes (NaN when no
        attribute has two usable groups), ``worst_attribute``.
    """
    frame = pd.DataFrame(protected)
    per = {}
    for name in frame.columns:
        groups = subgroup_recalls(y_true, y_pred, frame[name].to_numpy(), positive=positive, min_support=min_support)
        used = [v["recall"] for v in groups.values() if v["used"] and np.isfinite(v["recall"])]
        per[str(name)] = {
            "groups": groups,
            "gap": float(max(used) - min(used)) if len(used) >= 2 else float("nan"),
            "min_recall": float(min(used)) if used else float("nan"),
            "n_groups_used": len(used),
        }
    gaps = {k: v["gap"] for k, v in per.items() if np.isfinite(v["gap"])}
    mins = [v["min_recall"] for v in per.values() if np.isfinite(v["min_recall"])]
    worst = max(gaps, key=gaps.get) if gaps else None
    return {
        "per_attribute": per,
        "worst_gap": float(gaps[worst]) if worst is not None else float("nan"),
        "worst_attribute": worst,
        "min_recall": float(min(mins)) if mins else float("nan"),
    }
