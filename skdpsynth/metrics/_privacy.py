"""Nearest-neighbour privacy metrics: membership-inference AUC, exact copies, DCR share.

All three come from one pass over Gower-style distances between the synthetic
rows and the real rows (training members and an equal-size real holdout of
non-members), computed in chunks so that a few thousand rows take seconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from skdpsynth.metrics._encoding import check_same_columns, gower_encode
from skdpsynth.utils._random import check_random_state

__all__ = ["nearest_neighbour_privacy", "membership_inference_auc", "exact_copy_rates", "dcr_share",
           "gower_min_distances"]


def _balanced(train: pd.DataFrame, holdout: pd.DataFrame,
              rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    n = min(len(train), len(holdout))
    if len(train) > n:
        train = train.iloc[np.sort(rng.choice(len(train), n, replace=False))]
    if len(holdout) > n:
        holdout = holdout.iloc[np.sort(rng.choice(len(holdout), n, replace=False))]
    return train, holdout


def gower_min_distances(
    num_q: np.ndarray, cat_q: np.ndarray, num_r: np.ndarray, cat_r: np.ndarray, *,
    split: int | None = None, chunk_size: int = 512,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gower distances between query rows and reference rows, reduced on the fly.

    The distance is the mean over columns of ``min(|a - b|, 1)`` for scaled
    numeric columns (0 when both missing, 1 when one is) and of ``a != b`` for
    categorical codes.

    Parameters
    ----------
    num_q, cat_q : ndarray
        Query rows (numeric scaled, categorical codes).
    num_r, cat_r : ndarray
        Reference rows.
    split : int, optional
        The reference rows ``[:split]`` and ``[split:]`` are two groups; the
        query minima are returned per group.
    chunk_size : int, default=512
        Query rows per block (memory is ``chunk_size * n_reference`` floats).

    Returns
    -------
    ref_min : ndarray (n_reference,)
        Each reference row's distance to its closest query row.
    q_min_a, q_min_b : ndarray (n_query,)
        Each query row's distance to its closest reference row in the first and
        second group (``q_min_b`` is all ``inf`` when ``split`` is None).
    """
    n_q, n_r = num_q.shape[0], num_r.shape[0]
    p = num_q.shape[1] + cat_q.shape[1]
    if p == 0:
        raise ValueError("no columns to compare.")
    split = n_r if split is None else split
    nan_cols = [j for j in range(num_r.shape[1]) if np.isnan(num_r[:, j]).any() or np.isnan(num_q[:, j]).any()]
    ref_min = np.full(n_r, np.inf, dtype=np.float32)
    q_a = np.full(n_q, np.inf, dtype=np.float32)
    q_b = np.full(n_q, np.inf, dtype=np.float32)
    for start in range(0, n_q, chunk_size):
        stop = min(start + chunk_size, n_q)
        dist = np.zeros((stop - start, n_r), dtype=np.float32)
        for j in range(num_q.shape[1]):
            a = num_q[start:stop, j][:, None]
            b = num_r[:, j][None, :]
            d = np.abs(a - b)
            if j in nan_cols:
                na, nb = np.isnan(a), np.isnan(b)
                d = np.where(na | nb, (na ^ nb).astype(np.float32), d)
            np.minimum(d, 1.0, out=d)
            dist += d
        for j in range(cat_q.shape[1]):
            dist += cat_q[start:stop, j][:, None] != cat_r[:, j][None, :]
        dist /= p
        np.minimum(ref_min, dist.min(axis=0), out=ref_min)
        if split > 0:
            q_a[start:stop] = dist[:, :split].min(axis=1)
        if split < n_r:
            q_b[start:stop] = dist[:, split:].min(axis=1)
    return ref_min, q_a, q_b


def nearest_neighbour_privacy(
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    schema: Any = None,
    balance: bool = True,
    chunk_size: int = 512,
    random_state: Any = 0,
) -> dict[str, Any]:
    """Membership inference, exact copies and DCR share from nearest-neighbour distances.

    Protocol (PEARL): members are the training rows, non-members an equal-size
    real holdout never shown to the synthesizer. Each real row's score is minus
    its Gower distance to the closest synthetic row; the attack's AUC is the
    AUC of that score against membership (0.5 = chance). Distances: numeric
    columns scaled by the public schema bounds (or the training range), missing
    vs present counts 1, categorical columns by mismatch.

    Parameters
    ----------
    train : DataFrame
        Training rows (members); these are confidential.
    holdout : DataFrame
        Real rows not used for training (non-members); confidential.
    synthetic : DataFrame
        The release.
    schema : TableSchema, optional
        Public column kinds and bounds.
    balance : bool, default=True
        Subsample the larger of ``train`` / ``holdout`` to the smaller's size.
    chunk_size : int, default=512
        Synthetic rows per distance block.
    random_state : int, Generator or None, default=0
        For the balancing subsample.

    Returns
    -------
    dict
        ``membership_auc``; ``member_exact_rate`` / ``nonmember_exact_rate``
        (share of members / non-members with an identical synthetic row);
        ``synthetic_copy_rate_train`` / ``synthetic_copy_rate_holdout`` (share
        of synthetic rows identical to some member / non-member);
        ``dcr_share`` (share of synthetic rows closer to a member than to a
        non-member, ties halved; 0.5 is ideal); ``n_members``,
        ``n_nonmembers``, ``n_synthetic``; and the arrays
        ``member_distances``, ``nonmember_distances`` (for plots).
    """
    holdout = check_same_columns(train, holdout, names=("train", "holdout"))
    synthetic = check_same_columns(train, synthetic, names=("train", "synthetic"))
    if len(train) == 0 or len(holdout) == 0 or len(synthetic) == 0:
        raise ValueError("train, holdout and synthetic must all have rows.")
    rng = check_random_state(random_state)
    if balance:
        train, holdout = _balanced(train, holdout, rng)
    (num_m, num_h, num_s), (cat_m, cat_h, cat_s), _, _ = gower_encode([train, holdout, synthetic], schema=schema)
    n_m = len(train)
    ref_min, q_train, q_hold = gower_min_distances(
        num_s, cat_s, np.vstack([num_m, num_h]), np.vstack([cat_m, cat_h]), split=n_m, chunk_size=chunk_size)
    d_m, d_h = ref_min[:n_m].astype(float), ref_min[n_m:].astype(float)
    labels = np.r_[np.ones(len(d_m)), np.zeros(len(d_h))]
    auc = float(roc_auc_score(labels, -np.r_[d_m, d_h]))
    closer = (q_train < q_hold).mean() + 0.5 * (q_train == q_hold).mean()
    return {
        "membership_auc": auc,
        "member_exact_rate": float((d_m == 0).mean()),
        "nonmember_exact_rate": float((d_h == 0).mean()),
        "synthetic_copy_rate_train": float((q_train == 0).mean()),
        "synthetic_copy_rate_holdout": float((q_hold == 0).mean()),
        "dcr_share": float(closer),
        "median_member_distance": float(np.median(d_m)),
        "median_nonmember_distance": float(np.median(d_h)),
        "n_members": int(len(d_m)),
        "n_nonmembers": int(len(d_h)),
        "n_synthetic": int(len(synthetic)),
        "member_distances": d_m,
        "nonmember_distances": d_h,
    }


def membership_inference_auc(train: pd.DataFrame, holdout: pd.DataFrame, synthetic: pd.DataFrame,
                             **kwargs: Any) -> float:
    """AUC of the nearest-neighbour membership attack (see :func:`nearest_neighbour_privacy`)."""
    return nearest_neighbour_privacy(train, holdout, synthetic, **kwargs)["membership_auc"]


def exact_copy_rates(train: pd.DataFrame, holdout: pd.DataFrame, synthetic: pd.DataFrame,
                     **kwargs: Any) -> dict[str, float]:
    """Shares of members and of non-members that appear verbatim in ``synthetic``.

    On low-entropy discrete tables many real rows coincide, so a correct DP
    release reproduces some real rows by chance; what signals copying is a
    member rate above the non-member rate.
    """
    res = nearest_neighbour_privacy(train, holdout, synthetic, **kwargs)
    keys = ("member_exact_rate", "nonmember_exact_rate", "synthetic_copy_rate_train", "synthetic_copy_rate_holdout")
    return {k: res[k] for k in keys}


def dcr_share(train: pd.DataFrame, holdout: pd.DataFrame, synthetic: pd.DataFrame, **kwargs: Any) -> float:
    """Share of synthetic rows closer to a training row than to a holdout row (0.5 ideal)."""
    return nearest_neighbour_privacy(train, holdout, synthetic, **kwargs)["dcr_share"]
