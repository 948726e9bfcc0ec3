"""Distinguishing attacks of the privacy audit: white-box (released statistics) and black-box (synthetic data).

An attack maps one fitted synthesizer (trained with or without the canary) to
a score, higher meaning "the canary was in". The attacker is as strong as the
DP definition allows: it knows both neighbouring datasets, the synthesizer's
class and parameters, and -- white-box -- everything the fitted synthesizer
holds; only the privacy noise is hidden from it.

White-box score, lexicographic in three parts:

1. *domain*: how many of the canary's unique values the released domain
   (schema, vocabulary) excludes -- none when the domain is public, decisive
   when it was read from the data;
2. *replay*: when the noise derives from ``random_state``
   (``reproducible_noise=True``) the attacker refits with the same parameters
   on each neighbour and recognises the release;
3. *likelihood ratio*: the log-likelihood ratio of the released noisy
   statistics under "in" versus "out" (exact statistics of both neighbours
   from a non-private refit, noise law and scale from the budget log), summed
   over the measurements -- the Neyman-Pearson optimal test for these
   statistics. Synthesizers without a registered statistic fall back to the
   black-box score.

Black-box score: how often the canary's unique record (all its cells) appears
in ``sample()``, ties broken by the share of its single cells (table) or events
(sequences).
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from skdpsynth.audit._privacy_canary import Neighbours
from skdpsynth.exceptions import SchemaError
from skdpsynth.schema import TableSchema

__all__ = ["Measurement", "WhiteBoxAttack", "BlackBoxAttack", "STATISTICS", "register_statistics"]

#: weights of the lexicographic white-box score
_W_REPLAY = 1e12
_W_DOMAIN = 1e9
#: bins for matching numeric canary values in a synthetic table
_MATCH_BINS = 32


@dataclass(frozen=True)
class Measurement:
    """One released noisy statistic and the noise that the budget log says it carries.

    Attributes
    ----------
    name : str
        What it is (an attribute of the fitted synthesizer).
    noisy : numpy.ndarray
        The released values.
    noise : {"laplace", "gaussian"}
        Noise law (discrete Laplace / geometric, or (discrete) Gaussian).
    scale : float or None
        Laplace scale or Gaussian standard deviation (None on a non-private fit).
    exact_out, exact_in : numpy.ndarray or None
        The exact statistic on each neighbour, when the extractor computes it
        (e.g. on a layout chosen from noisy counts); otherwise the attack takes
        it from a non-private refit.
    """

    name: str
    noisy: np.ndarray
    noise: str = "laplace"
    scale: float | None = None
    exact_out: np.ndarray | None = None
    exact_in: np.ndarray | None = None


def _noise_of(record: Any) -> str:
    return "gaussian" if "gaussian" in record.mechanism else "laplace"


def _matching(est: Any, prefix: str) -> list:
    """Private records whose target starts with ``prefix``, in log order."""
    return [r for r in getattr(est, "budget_log_", ()) if r.kind != "none" and r.target.startswith(prefix)]


def _measurements(name: str, arrays: list, records: list) -> list[Measurement]:
    """Pair arrays with their records (scale None -- a non-private fit -- when the counts differ)."""
    if len(records) != len(arrays):
        records = [None] * len(arrays)
    return [Measurement(name if len(arrays) == 1 else f"{name}[{j}]", np.asarray(a, dtype=float),
                        _noise_of(r) if r is not None else "laplace", r.noise_scale if r is not None else None)
            for j, (a, r) in enumerate(zip(arrays, records))]


def _marginals_statistics(est: Any, neighbours: Neighbours) -> list[Measurement]:
    return _measurements("counts_", list(est.counts_), _matching(est, "histogram of column"))


def _histogram_statistics(est: Any, neighbours: Neighbours) -> list[Measurement]:
    return _measurements("counts_", [est.counts_], _matching(est, "joint histogram"))


def _npgc_statistics(est: Any, neighbours: Neighbours) -> list[Measurement]:
    counts = np.concatenate([np.asarray(c, dtype=float) for c in est.cell_counts_])
    return _measurements("cell_counts_", [counts], _matching(est, "histograms of all"))


def _mst_two_way_exact(est: Any, X: pd.DataFrame, edge: tuple[int, int]) -> np.ndarray:
    """Exact 2-way counts of ``X`` on the fit's compressed cells (its public layout)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        codes = est.grid_.encode(est.schema_.validate(X))
    a, b = edge
    sizes = [int(m.max()) + 1 for m in est.maps_]
    flat = est.maps_[a][codes[:, a]] * sizes[b] + est.maps_[b][codes[:, b]]
    return np.bincount(flat, minlength=sizes[a] * sizes[b]).reshape(sizes[a], sizes[b]).astype(float)


def _mst_statistics(est: Any, neighbours: Neighbours) -> list[Measurement]:
    out = _measurements("one_way_counts_", list(est.one_way_counts_), _matching(est, "1-way marginal of"))
    two = _measurements("two_way_counts_", [est.two_way_counts_[e] for e in est.edges_],
                        _matching(est, "2-way marginal of"))
    for m, edge in zip(two, est.edges_):
        try:
            exact = [_mst_two_way_exact(est, neighbours.data(b), edge) for b in (False, True)]
        except (SchemaError, KeyError, ValueError, IndexError):  # a domain the neighbours do not fit
            exact = [None, None]
        out.append(Measurement(m.name, m.noisy, m.noise, m.scale, *exact))
    return out


def _sequence_statistics(est: Any, neighbours: Neighbours) -> list[Measurement]:
    model = "transition_counts_" if hasattr(est, "transition_counts_") else "event_counts_"
    out = []
    if getattr(est, "group_counts_", None) is not None:
        out += _measurements("group_counts_", [est.group_counts_], _matching(est, "group histogram"))
    out += _measurements("length_counts_", [est.length_counts_], _matching(est, "length histogram"))
    out += _measurements(model, [getattr(est, model)], _matching(est, est._model_name))
    return out


#: class name -> extractor of its released noisy statistics (looked up along the MRO)
STATISTICS: dict[str, Callable[[Any, Neighbours], list[Measurement]]] = {
    "DPMarginalsSynthesizer": _marginals_statistics,
    "DPHistogramSynthesizer": _histogram_statistics,
    "NPGCSynthesizer": _npgc_statistics,
    "MSTSynthesizer": _mst_statistics,
    "DPMarkovSynthesizer": _sequence_statistics,
    "DPHistSeqSynthesizer": _sequence_statistics,
}


def register_statistics(class_name: str, extractor: Callable[[Any, Neighbours], list[Measurement]]) -> None:
    """Teach the white-box attack where a synthesizer keeps its noisy statistics.

    Parameters
    ----------
    class_name : str
        The synthesizer's class name (subclasses inherit the extractor).
    extractor : callable
        ``extractor(fitted, neighbours) -> list of Measurement``, in the same
        order for a private and a non-private (``epsilon=None``) fit.
    """
    STATISTICS[class_name] = extractor


def _extractor(est: Any) -> Callable[[Any, Neighbours], list[Measurement]] | None:
    for cls in type(est).__mro__:
        if cls.__name__ in STATISTICS:
            return STATISTICS[cls.__name__]
    return None


def _quiet_fit(est: Any, X: pd.DataFrame) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X)


def _log_likelihood_ratio(m: Measurement, exact_out: np.ndarray, exact_in: np.ndarray) -> float:
    """``log p(noisy | in) - log p(noisy | out)`` over the cells where the neighbours differ."""
    if m.exact_out is not None and m.exact_in is not None:
        exact_out, exact_in = m.exact_out, m.exact_in
    if m.scale is None or not m.noisy.shape == exact_out.shape == exact_in.shape:
        return 0.0  # e.g. a domain read from the data: the neighbours' statistics are not comparable
    diff = exact_in != exact_out
    y, e0, e1 = m.noisy[diff], exact_out[diff], exact_in[diff]
    if m.noise == "gaussian":
        return float(np.sum((y - e0) ** 2 - (y - e1) ** 2) / (2.0 * m.scale ** 2))
    return float(np.sum(np.abs(y - e0) - np.abs(y - e1)) / m.scale)


# -- the canary in a release ----------------------------------------------------------
def _canary_values(neighbours: Neighbours) -> dict[str, Any]:
    if neighbours.kind == "sequence":
        row = neighbours.canary.iloc[0]
        return {c: row[c] for c in neighbours.columns["event"]}
    return neighbours.canary.iloc[0].to_dict()


def _cell_matches(table: pd.DataFrame, canary: dict[str, Any], schema: TableSchema | None) -> np.ndarray:
    """(rows, columns) booleans: row's value in the canary's cell of that column."""
    out = np.zeros((len(table), len(canary)), dtype=bool)
    for j, (name, value) in enumerate(canary.items()):
        col = table[name]
        spec = schema[name] if schema is not None and name in schema else None
        if spec is not None and spec.kind in ("continuous", "integer"):
            lo, hi = spec.numeric_bounds
            half = max((hi - lo) / _MATCH_BINS / 2, 0.5 if spec.kind == "integer" else 0.0)
            x = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
            out[:, j] = np.abs(x - float(value)) <= half
        else:
            out[:, j] = col.astype(object).to_numpy() == value
    return out


def _table_score(table: pd.DataFrame, neighbours: Neighbours) -> float:
    matches = _cell_matches(table, _canary_values(neighbours), neighbours.schema)
    joint = float(np.all(matches, axis=1).sum()) if len(table) else 0.0
    return joint + float(matches.sum()) / (matches.size + 1)


def _sequence_score(table: pd.DataFrame, neighbours: Neighbours) -> float:
    cols = neighbours.columns
    canary = _canary_values(neighbours)
    hits = np.all([table[c].astype(object).to_numpy() == v for c, v in canary.items()], axis=0)
    ids = table[cols["id"]].to_numpy()
    per_learner = pd.Series(hits).groupby(ids).agg(["sum", "size"])
    length = len(neighbours.canary)
    joint = float(((per_learner["sum"] == length) & (per_learner["size"] == length)).sum())
    return joint + float(hits.sum()) / (len(hits) + 1)


def _release_table(est: Any) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.sample()


def _fingerprint(table: pd.DataFrame) -> int:
    """A hash of the table's values (equal tables, equal hashes)."""
    if not len(table):
        return 0
    rows = pd.util.hash_pandas_object(table, index=False).to_numpy()
    return _digest([repr(tuple(table.columns)).encode(), rows.tobytes()])


def _digest(parts: list[bytes]) -> int:
    """A hash that is the same in every process (Python's ``hash`` of bytes is salted per interpreter, and the
    trials run in worker processes while the seed replays are fingerprinted in the parent)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return int.from_bytes(h.digest()[:8], "little")


def _domain_evidence(est: Any, neighbours: Neighbours) -> float:
    """Minus the number of canary values the released domain excludes (0 when the domain is public)."""
    canary = _canary_values(neighbours)
    if neighbours.kind == "sequence":
        states = getattr(est, "states_", None)
        state = tuple(canary[c] for c in neighbours.columns["event"])
        return 0.0 if states is None or state in {tuple(s) for s in states} else -1.0
    schema = getattr(est, "schema_", None)
    if schema is None:
        return 0.0
    excluded = 0
    for name, value in canary.items():
        spec = schema[name] if name in schema else None
        if spec is None:
            continue
        if spec.kind in ("categorical", "boolean"):
            excluded += value not in spec.categories
        elif spec.kind in ("continuous", "integer"):
            lo, hi = spec.numeric_bounds
            excluded += not lo <= float(value) <= hi
    return -float(excluded)


@dataclass
class _Replay:
    """The releases an attacker who knows the seed regenerates on each neighbour."""

    out: int | None = None
    inn: int | None = None

    def evidence(self, fingerprint: int) -> float:
        if self.inn is not None and fingerprint == self.inn and fingerprint != self.out:
            return 1.0
        if self.out is not None and fingerprint == self.out and fingerprint != self.inn:
            return -1.0
        return 0.0


def _table_fingerprint(fitted: Any, neighbours: Neighbours) -> int:
    return _fingerprint(_release_table(fitted))


def _statistics_fingerprint(fitted: Any, neighbours: Neighbours) -> int:
    """A hash of the released noisy statistics (falls back to the synthetic table without an extractor)."""
    extract = _extractor(fitted)
    if extract is None:
        return _table_fingerprint(fitted, neighbours)
    return _digest([np.ascontiguousarray(m.noisy).tobytes() for m in extract(fitted, neighbours)])


def _prepare_replay(estimator: Any, neighbours: Neighbours,
                    fingerprint: Callable[[Any, Neighbours], int]) -> _Replay:
    params = estimator.get_params(deep=False)
    if not params.get("reproducible_noise", False):
        return _Replay()
    prints = [fingerprint(_quiet_fit(clone(estimator), neighbours.data(b)), neighbours) for b in (False, True)]
    return _Replay(*prints)


class BlackBoxAttack:
    """Black-box attack: counts the canary's unique record (and cells) in ``sample()``.

    The attacker sees the synthetic table only (plus, as the DP definition
    allows, the synthesizer's parameters: when ``reproducible_noise=True`` it
    regenerates the release on each neighbour and recognises it).
    """

    name = "black-box"

    def __init__(self) -> None:
        self._replay = _Replay()

    def prepare(self, estimator: Any, neighbours: Neighbours) -> BlackBoxAttack:
        """Precompute what does not depend on the trial (the seed replays). Returns self."""
        self._replay = _prepare_replay(estimator, neighbours, _table_fingerprint)
        return self

    def __call__(self, fitted: Any, neighbours: Neighbours) -> float:
        """Score one release (higher: the canary was in)."""
        table = _release_table(fitted)
        score = _sequence_score(table, neighbours) if neighbours.kind == "sequence" else _table_score(table,
                                                                                                     neighbours)
        if self._replay.out is not None:
            score += _W_REPLAY * self._replay.evidence(_fingerprint(table))
        return score


@dataclass
class _Exact:
    """Exact statistics of both neighbours, from non-private refits."""

    out: list[np.ndarray] = field(default_factory=list)
    inn: list[np.ndarray] = field(default_factory=list)


class WhiteBoxAttack:
    """White-box attack: likelihood-ratio test on the released noisy statistics.

    See the module docstring for the score. Register the statistics of new
    synthesizers with :func:`register_statistics`; without them the attack uses
    the domain, the seed replay and the black-box score.
    """

    name = "white-box"

    def __init__(self) -> None:
        self._replay = _Replay()
        self._exact = _Exact()
        self._black_box = BlackBoxAttack()

    def prepare(self, estimator: Any, neighbours: Neighbours) -> WhiteBoxAttack:
        """Precompute the exact statistics of both neighbours and the seed replays. Returns self."""
        self._replay = _prepare_replay(estimator, neighbours, _statistics_fingerprint)
        extract = _extractor(estimator)
        if extract is None:  # scored by the black-box attack (the replay above covers the seed)
            return self
        exact = []
        for b in (False, True):
            est = _quiet_fit(clone(estimator).set_params(epsilon=None), neighbours.data(b))
            exact.append([np.asarray(m.noisy, dtype=float) for m in extract(est, neighbours)])
        self._exact = _Exact(*exact)
        return self

    def likelihood_ratio(self, fitted: Any, neighbours: Neighbours) -> float:
        """Log-likelihood ratio of the release's noisy statistics ("in" over "out")."""
        extract = _extractor(fitted)
        if extract is None or not self._exact.out:
            return 0.0
        measurements = extract(fitted, neighbours)
        if len(measurements) != len(self._exact.out):
            return 0.0
        return sum(_log_likelihood_ratio(m, e0, e1)
                   for m, e0, e1 in zip(measurements, self._exact.out, self._exact.inn))

    def __call__(self, fitted: Any, neighbours: Neighbours) -> float:
        """Score one release (higher: the canary was in)."""
        score = _W_DOMAIN * _domain_evidence(fitted, neighbours)
        if self._replay.out is not None:
            score += _W_REPLAY * self._replay.evidence(_statistics_fingerprint(fitted, neighbours))
        if _extractor(fitted) is None:
            return score + self._black_box(fitted, neighbours)
        return score + self.likelihood_ratio(fitted, neighbours)
