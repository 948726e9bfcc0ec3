"""The benchmark grid runner gives identical results under joblib's default backend and a Dask cluster."""

import sys
from pathlib import Path

import joblib
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from _grid_runner import comparable, make_grid, run_grid, toy_task  # noqa: E402


def _grid():
    return make_grid(["toy"], ["DPMarginalsSynthesizer", "MSTSynthesizer", "DPHistogramSynthesizer"], [1.0, None],
                     [0])


def test_make_grid_is_the_full_product():
    grid = _grid()
    assert len(grid) == 1 * 3 * 2 * 1
    assert len({tuple(sorted(s.items(), key=str)) for s in grid}) == len(grid)


def test_default_and_dask_backends_agree():
    distributed = pytest.importorskip("distributed")
    grid = _grid()
    local = run_grid(grid, toy_task, n_jobs=2)
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None)
    with cluster, distributed.Client(cluster):
        with joblib.parallel_backend("dask"):
            on_dask = run_grid(grid, toy_task, n_jobs=-1)
    assert all(r["status"] == "ok" for r in local), [r["error"] for r in local]
    assert comparable(local) == comparable(on_dask)
    # results are real: the budget is respected and private runs differ from non-private ones
    for r in local:
        if r["epsilon"] is not None:
            assert r["epsilon_spent"] <= r["epsilon"] * (1 + 1e-9)
    assert len({r["checksum"] for r in local}) == len(local)


def test_failed_setting_is_reported_not_raised():
    rows = run_grid([{"dataset": "toy", "method": "NoSuchSynthesizer", "epsilon": 1.0, "seed": 0}], toy_task)
    assert rows[0]["status"] == "error" and "NoSuchSynthesizer" in rows[0]["error"]
