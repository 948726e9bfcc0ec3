"""Run a grid of benchmark settings (dataset x method x epsilon x seed) through joblib.

The grid goes through ``joblib.Parallel(n_jobs=...)`` and nothing else, so any
joblib backend runs it unchanged -- processes on one machine, or a Dask / Ray
cluster::

    from distributed import Client
    import joblib
    client = Client("tcp://scheduler:8786")        # or LocalCluster()
    with joblib.parallel_backend("dask"):
        results = run_grid(settings, task, n_jobs=-1)

Every setting carries its own integer seed, so results do not depend on the
backend, the number of workers or the order in which settings finish.
"""

from __future__ import annotations

import itertools
import logging
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import joblib
import numpy as np
import pandas as pd

__all__ = ["make_grid", "run_grid", "toy_task"]

logger = logging.getLogger(__name__)


def make_grid(datasets: Iterable[str], methods: Iterable[str], epsilons: Iterable[float | None],
              seeds: Iterable[int], **fixed: Any) -> list[dict[str, Any]]:
    """Every combination, as a list of dicts (``fixed`` entries are added to each)."""
    return [{"dataset": d, "method": m, "epsilon": e, "seed": int(s), **fixed}
            for d, m, e, s in itertools.product(datasets, methods, epsilons, seeds)]


def _run_one(task: Callable[[dict], dict], setting: dict) -> dict:
    start, cpu = time.perf_counter(), time.process_time()
    try:
        out = task(dict(setting))
        status, error = "ok", None
    except Exception as exc:  # a failed setting is a result, not a crash of the grid
        out, status = {}, "error"
        error = f"{type(exc).__name__}: {exc}"
        logger.warning("setting %s failed: %s\n%s", setting, error, traceback.format_exc())
    return {**setting, **out, "status": status, "error": error, "wall_s": time.perf_counter() - start,
            "cpu_s": time.process_time() - cpu}


def run_grid(settings: Sequence[dict], task: Callable[[dict], dict], *, n_jobs: int = 1, verbose: int = 0,
             on_result: Callable[[dict], None] | None = None) -> list[dict]:
    """Run ``task(setting)`` for every setting with ``joblib.Parallel``.

    Parameters
    ----------
    settings : sequence of dict
        From :func:`make_grid` (or hand-made); each should hold its seed.
    task : callable
        Module-level function (picklable) returning a dict of results.
    n_jobs : int, default=1
        joblib's ``n_jobs`` under the active backend (``joblib.parallel_backend``).
    verbose : int, default=0
        joblib verbosity.
    on_result : callable, optional
        Called with each row as soon as its setting finishes (in completion
        order), e.g. to append it to a progress file so that an interrupted
        grid keeps what it finished.

    Returns
    -------
    list of dict
        One row per setting, in the order of ``settings``: the setting, the
        task's results, ``status`` ("ok" / "error"), ``error``, ``wall_s`` and
        ``cpu_s`` (the CPU seconds of the worker process, all its threads).
    """
    if on_result is None:
        return list(joblib.Parallel(n_jobs=n_jobs, verbose=verbose)(
            joblib.delayed(_run_one)(task, s) for s in settings))
    rows: list[dict | None] = [None] * len(settings)
    jobs = (joblib.delayed(_run_indexed)(task, i, s) for i, s in enumerate(settings))
    for i, row in joblib.Parallel(n_jobs=n_jobs, verbose=verbose, return_as="generator_unordered")(jobs):
        on_result(row)
        rows[i] = row
    return [r for r in rows if r is not None]


def _run_indexed(task: Callable[[dict], dict], index: int, setting: dict) -> tuple[int, dict]:
    return index, _run_one(task, setting)


def comparable(rows: Sequence[dict], drop: Sequence[str] = ("wall_s",)) -> list[dict]:
    """Rows without timing fields (timings differ between runs; everything else must not)."""
    return [{k: v for k, v in r.items() if k not in drop and not k.endswith("_s") and not k.endswith("_mib")}
            for r in rows]


def _toy_data(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 400
    group = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    score = np.where(group == "a", rng.normal(70, 8, n), rng.normal(55, 10, n)).clip(0, 100)
    passed = score + rng.normal(0, 5, n) > 60
    return pd.DataFrame({"group": group, "score": score, "passed": passed})


def toy_task(setting: dict) -> dict:
    """A small real task for tests and smoke runs: fit a synthesizer on simulated data, report fidelity.

    ``setting["method"]`` names a synthesizer class of :mod:`skdpsynth` (fitted with
    ``reproducible_noise=True`` so that every backend gives the same rows: not a publishable release);
    returns the spent epsilon, the mean absolute error of the category shares
    and of the pass rate, and a checksum of the synthetic rows.
    """
    import skdpsynth
    from skdpsynth import TableSchema

    schema = TableSchema.from_dict({
        "group": {"kind": "categorical", "categories": ["a", "b", "c"], "nullable": False},
        "score": {"kind": "continuous", "lower": 0, "upper": 100, "nullable": False},
        "passed": {"kind": "boolean", "nullable": False},
    })
    X = _toy_data(setting["seed"])
    cls = getattr(skdpsynth, setting["method"])
    # reproducible_noise: a toy for tests of the runner (identical results on every backend), never a release
    est = cls(epsilon=setting["epsilon"], schema=schema, random_state=setting["seed"], reproducible_noise=True).fit(X)
    S = est.sample(len(X), random_state=setting["seed"])
    share_err = float(np.abs(X["group"].value_counts(normalize=True).sub(
        S["group"].value_counts(normalize=True), fill_value=0)).mean())
    return {"epsilon_spent": float(est.privacy_spent_.epsilon), "share_mae": share_err,
            "pass_rate_err": float(abs(X["passed"].mean() - S["passed"].astype(bool).mean())),
            "checksum": int(pd.util.hash_pandas_object(S, index=False).sum() % (2**61))}
