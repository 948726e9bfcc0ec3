"""Validity of a release: schema conformance of tables and well-formedness of event sequences."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from skdpsynth.metrics._encoding import _category_key

__all__ = ["schema_validity", "sequence_validity", "sequence_features"]

_BOOL_KEYS = {repr(v) for v in (True, False, 0, 1, "True", "False", "true", "false")}


def _invalid_mask(col: pd.Series, spec: Any) -> tuple[np.ndarray, dict[str, int]]:
    isna = col.isna().to_numpy()
    bad = np.zeros(len(col), dtype=bool)
    counts: dict[str, int] = {}

    def flag(name: str, mask: np.ndarray) -> None:
        nonlocal bad
        if mask.any():
            counts[name] = int(mask.sum())
            bad |= mask

    if not spec.nullable:
        flag("missing in a non-nullable column", isna)
    if spec.kind in ("continuous", "integer"):
        num = col.astype(float).to_numpy() if pd.api.types.is_bool_dtype(col.dtype) else pd.to_numeric(
            col, errors="coerce").to_numpy(dtype=float)
        flag("not numeric", np.isnan(num) & ~isna)
        lo, hi = spec.numeric_bounds
        with np.errstate(invalid="ignore"):
            flag("outside the public bounds", ~np.isnan(num) & ((num < lo) | (num > hi)))
            if spec.kind == "integer":
                flag("not a whole number", ~np.isnan(num) & (np.abs(num - np.round(num)) > 1e-9))
    elif spec.kind == "datetime":
        ts = pd.to_datetime(col, errors="coerce")
        if getattr(ts.dt, "tz", None) is not None:
            ts = ts.dt.tz_convert(None)
        tsn = ts.isna().to_numpy()
        flag("not a date/time", tsn & ~isna)
        flag("outside the public bounds", ~tsn & ((ts < spec.lower) | (ts > spec.upper)).to_numpy())
    elif spec.kind == "boolean":
        keys = _category_key(col)
        flag("not a boolean", ~isna & ~np.isin(keys, list(_BOOL_KEYS)))
    else:
        keys = _category_key(col)
        allowed = [repr(c.item() if isinstance(c, np.generic) else c) for c in spec.categories]
        flag("not among the schema's categories", ~isna & ~np.isin(keys, allowed))
    return bad, counts


def schema_validity(synthetic: pd.DataFrame, schema: Any) -> dict[str, Any]:
    """How well a table conforms to a public :class:`~skdpsynth.schema.TableSchema`.

    Checks column presence, types, bounds (no clipping: values outside the
    public bounds are invalid), integer-ness, categories and missingness.

    Returns
    -------
    dict
        ``valid_fraction`` (share of rows without any violation; 0 when columns
        are missing), ``n_invalid_rows``, ``missing_columns``,
        ``extra_columns``, ``problems`` (column -> {problem: count}).
    """
    if not isinstance(synthetic, pd.DataFrame):
        raise TypeError("synthetic must be a pandas DataFrame.")
    missing = [n for n in schema.names if n not in synthetic.columns]
    extra = [c for c in synthetic.columns if c not in schema.names]
    bad = np.zeros(len(synthetic), dtype=bool)
    problems: dict[str, dict[str, int]] = {}
    for spec in schema.columns:
        if spec.name not in synthetic.columns:
            continue
        mask, counts = _invalid_mask(synthetic[spec.name], spec)
        bad |= mask
        if counts:
            problems[spec.name] = counts
    n = len(synthetic)
    frac = 0.0 if (missing or n == 0) else float(1 - bad.mean())
    return {"valid_fraction": frac, "n_invalid_rows": int(bad.sum()), "n_rows": n, "missing_columns": missing,
            "extra_columns": extra, "problems": problems}


def _as_list(cols: str | Sequence[str] | None) -> list[str]:
    if cols is None:
        return []
    return [cols] if isinstance(cols, str) else list(cols)


def sequence_validity(
    events: pd.DataFrame, *, id_col: str, event_col: str | Sequence[str], order_col: str | None = None,
    label_col: str | None = None, vocabulary: dict[str, Sequence[Any]] | Sequence[Any] | None = None,
    max_length: int | None = None,
) -> dict[str, Any]:
    """Well-formedness of a long-format event table (one row per event).

    A learner's sequence is valid when: the id is present; every event value
    is present (and in ``vocabulary`` when given); positions in ``order_col``
    are present and strictly increasing in table order (no duplicates); the
    label is constant within the learner; the length is at most ``max_length``.

    Returns
    -------
    dict
        ``valid_fraction`` (share of valid learners), ``n_learners``,
        ``n_invalid_learners``, ``problems`` (problem -> number of learners),
        ``missing_columns``.
    """
    ev = _as_list(event_col)
    needed = [id_col, *ev, *_as_list(order_col), *_as_list(label_col)]
    missing = [c for c in needed if c not in events.columns]
    if missing:
        return {"valid_fraction": 0.0, "n_learners": 0, "n_invalid_learners": 0, "problems": {},
                "missing_columns": missing}
    ids = events[id_col]
    frame = events.loc[ids.notna()]
    problems: dict[str, int] = {}
    if ids.isna().any():
        problems["events without a learner id"] = int(ids.isna().sum())
    gid = pd.factorize(frame[id_col])[0]
    n_learners = int(gid.max()) + 1 if len(gid) else 0
    bad = np.zeros(n_learners, dtype=bool)

    def flag(name: str, row_mask: np.ndarray) -> None:
        learners = np.unique(gid[row_mask])
        if len(learners):
            problems[name] = len(learners)
            bad[learners] = True

    vocab = vocabulary
    for c in ev:
        flag(f"missing {c!r}", frame[c].isna().to_numpy())
        allowed = vocab.get(c) if isinstance(vocab, dict) else (vocab if len(ev) == 1 else None)
        if allowed is not None:
            keys = _category_key(frame[c])
            allowed_keys = [repr(a.item() if isinstance(a, np.generic) else a) for a in allowed]
            flag(f"{c!r} outside the vocabulary", frame[c].notna().to_numpy() & ~np.isin(keys, allowed_keys))
    if order_col is not None:
        pos = pd.to_numeric(frame[order_col], errors="coerce").to_numpy(dtype=float)
        flag(f"missing or non-numeric {order_col!r}", np.isnan(pos))
        same = np.r_[False, gid[1:] == gid[:-1]]
        with np.errstate(invalid="ignore"):
            flag(f"{order_col!r} not strictly increasing within a learner", same & ~(pos > np.r_[np.nan, pos[:-1]]))
        # a learner whose rows are not contiguous breaks the order as well
        starts = np.r_[True, gid[1:] != gid[:-1]]
        reentered = np.bincount(gid[starts], minlength=n_learners) > 1
        if reentered.any():
            problems["events of a learner not contiguous"] = int(reentered.sum())
            bad |= reentered
    if label_col is not None:
        nun = frame.groupby(gid, sort=True)[label_col].nunique(dropna=False).to_numpy()
        inconsistent = nun > 1
        if inconsistent.any():
            problems[f"{label_col!r} not constant within a learner"] = int(inconsistent.sum())
            bad |= inconsistent
    if max_length is not None and n_learners:
        too_long = np.bincount(gid, minlength=n_learners) > max_length
        if too_long.any():
            problems[f"longer than max_length={max_length}"] = int(too_long.sum())
            bad |= too_long
    return {"valid_fraction": float(1 - bad.mean()) if n_learners else 0.0, "n_learners": n_learners,
            "n_invalid_learners": int(bad.sum()), "problems": problems, "missing_columns": []}


def sequence_features(
    events: pd.DataFrame, *, id_col: str, event_col: str | Sequence[str], label_col: str | None = None,
    order_col: str | None = None, vocabulary: Sequence[Any] | None = None,
) -> pd.DataFrame:
    """Order-free per-learner features of a long event table: event counts and length (+ label).

    The features a classifier without sequence structure sees: two learners
    whose events are permutations of each other get the same row. Columns are
    ``n_events``, ``count=<event>`` (one per event value in ``vocabulary``, or
    every value seen), and ``label_col``'s first value. Rows are indexed by the
    learner id.
    """
    ev = _as_list(event_col)
    frame = events.loc[events[id_col].notna()]
    if order_col is not None:
        frame = frame.sort_values([id_col, order_col], kind="stable")
    key = frame[ev[0]].astype(str) if len(ev) == 1 else frame[ev].astype(str).agg("|".join, axis=1)
    if vocabulary is not None:
        cats = [str(v) for v in vocabulary]
        key = pd.Categorical(key, categories=cats)
    counts = pd.crosstab(frame[id_col], key)
    if vocabulary is not None:
        counts = counts.reindex(columns=cats, fill_value=0)
    counts.columns = [f"count={c}" for c in counts.columns]
    out = counts.astype(float)
    out.insert(0, "n_events", frame.groupby(id_col).size().reindex(out.index).to_numpy(dtype=float))
    if label_col is not None:
        out[label_col] = frame.groupby(id_col)[label_col].first().reindex(out.index)
    return out
