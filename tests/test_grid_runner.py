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


@pytest.mark.slow  # benchmark infrastructure, not the package: a Dask cluster for a toy grid (about 6 s of CPU)
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


def test_on_result_streams_every_row_and_keeps_the_order():
    grid = make_grid(["toy"], ["DPMarginalsSynthesizer", "NoSuchSynthesizer"], [1.0], [0, 1])
    seen = []
    with joblib.parallel_backend("threading"):  # concurrent, completion order may differ; no process start-up
        rows = run_grid(grid, toy_task, n_jobs=2, on_result=seen.append)
    assert [r["method"] for r in rows] == [s["method"] for s in grid]
    assert [r["seed"] for r in rows] == [s["seed"] for s in grid]
    assert sorted(map(str, seen), key=str) == sorted(map(str, rows), key=str)


def _pearl_setting(tmp_path, dataset, method, epsilon):
    import pearl_grid

    return pearl_grid.audit_setting({"dataset": dataset, "method": method, "epsilon": epsilon, "seed": 0,
                                     "quick": True, "ledger_dir": str(tmp_path), "shared": str(pearl_grid.SHARED_DATA)})


@pytest.mark.slow  # about 5 s on an idle machine (DKT and SAKT, 2 epochs each), minutes on a loaded one
def test_pearl_grid_setting_runs_every_check_and_reports_both_privacy_rules(tmp_path):
    pytest.importorskip("torch")
    out = _pearl_setting(tmp_path, "kt_bkt", "histseq", 10.0)
    assert list(out["checks"]) == ["privacy_guarantee", "validity", "privacy", "knowledge_tracing"]
    assert out["checks"]["privacy_guarantee"]["passed"]
    assert out["could_not_run"] == []
    assert set(out["strict_privacy"]) == {"passed", "reason"}
    assert out["approved_strict"] <= out["approved"]
    assert out["ledger_ok"]


@pytest.mark.realdata
@pytest.mark.requires("torch")
def test_pearl_grid_rejects_a_non_private_release_for_its_guarantee(tmp_path):
    from _pearl_data import load_scenario
    from pearl_grid import SHARED_DATA

    if not (SHARED_DATA / "uci_hesp").exists():
        pytest.skip("shared data not available")
    load_scenario("uci_hesp", str(SHARED_DATA), True)
    out = _pearl_setting(tmp_path, "uci_hesp", "marginals", None)
    guarantee = out["checks"]["privacy_guarantee"]
    assert not guarantee["passed"] and "not differentially private" in guarantee["reason"]
    assert not out["approved"] and "privacy_guarantee" in out["failed_checks"]
    assert out["could_not_run"] == []
