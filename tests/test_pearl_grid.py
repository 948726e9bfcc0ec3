"""The PEARL grid's bookkeeping: intervals over seeds, rates with Wilson intervals, stored rows, ordering, resume."""

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _pearl_report as report  # noqa: E402
import pearl_grid  # noqa: E402
from _common import absolute_paths  # noqa: E402
from _pearl_methods import expected_cpu_s  # noqa: E402


def test_t_interval_over_seeds():
    t = report.t_interval([10, 12, 14])
    assert t["mean"] == pytest.approx(12.0)
    half = 4.302652729911275 * 2.0 / math.sqrt(3)  # t(0.975, 2) * sd / sqrt(n)
    assert (t["low"], t["high"]) == pytest.approx((12 - half, 12 + half))
    one = report.t_interval([7])
    assert one["mean"] == 7 and one["low"] is None and one["high"] is None


def test_wilson_interval_matches_its_closed_form():
    w = report.wilson(5, 10)
    assert w["rate"] == 0.5
    assert (w["low"], w["high"]) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    zero = report.wilson(0, 10)
    assert zero["low"] == 0.0 and zero["high"] == pytest.approx(0.2775, abs=1e-4)
    assert report.wilson(0, 0)["rate"] is None


def _row(seed, dataset, method, approved, failed, strict_ok=True):
    checks = {c: {"applicable": True, "passed": c not in failed, "details": {}, "reason": ""}
              for c in ("privacy_guarantee", "validity", "privacy", "utility", "fairness")}
    return {"dataset": dataset, "method": method, "display": method.upper(), "epsilon": 1.0, "seed": seed,
            "status": "ok", "approved": approved, "approved_strict": approved and strict_ok,
            "strict_privacy": {"passed": strict_ok, "reason": ""}, "failed_checks": failed, "could_not_run": [],
            "checks": checks, "ledger_ok": True, "wall_s": 1.0, "cpu_s": 1.0}


@pytest.mark.realdata
def test_summary_counts_per_seed_and_rates_per_dataset_and_method():
    """The summary's counts and rates, and the report written from them (its setup lines load every dataset)."""
    if not (pearl_grid.SHARED_DATA / "oulad").exists():
        pytest.skip("shared data not available")
    rows = [_row(0, "a", "m", True, []), _row(0, "b", "m", False, ["utility"]),
            _row(1, "a", "m", False, ["utility", "fairness"], strict_ok=False), _row(1, "b", "n", False, ["privacy"])]
    plan = [{k: r[k] for k in ("dataset", "method", "epsilon", "seed")} for r in rows]
    s = report.summarise(rows, planned=4, plan=plan)
    assert s["seeds"] == [0, 1]
    assert s["approved_per_seed"]["values"] == [1.0, 0.0]
    assert s["failures_per_seed"]["utility"]["values"] == [1.0, 1.0]
    assert s["failures_per_seed"]["strict_privacy"]["values"] == [0.0, 1.0]
    assert s["rates"]["utility"]["k"] == 2 and s["rates"]["utility"]["n"] == 4
    assert s["by_dataset"]["a"]["rates"]["approved"]["k"] == 1
    assert s["by_method"]["M"]["rates"]["fairness"]["k"] == 1
    assert "task" not in s["rates"]  # no task check applies to these rows
    md = report.markdown(rows, s, skipped=[], quick=False, seeds=2, timing={}, n_jobs=2)
    assert "Approved per seed: 0.5 [" in md and "12 = 12 %" in md
    assert "Data substitutions" in md and "Method settings" in md


def test_stored_rows_hold_no_plumbing_and_no_absolute_path(tmp_path):
    row = {"dataset": "a", "ledger_dir": str(tmp_path), "shared": str(pearl_grid.SHARED_DATA),
           "note": f"see {pearl_grid.ROOT / 'benchmarks'}"}
    out = pearl_grid.stored(row)
    assert "ledger_dir" not in out and "shared" not in out
    assert not absolute_paths(json.dumps(out))


def test_settings_run_most_expensive_first_on_several_workers():
    settings, _ = pearl_grid.make_settings(False, 2, ["kt_bkt"], longest_first=True)  # simulated: no data needed
    costs = [expected_cpu_s(s["dataset"], s["method"]) for s in settings]
    assert costs == sorted(costs, reverse=True)
    assert {s["seed"] for s in settings} == {0, 1}
    serial, _ = pearl_grid.make_settings(False, 2, ["kt_bkt"])
    assert [s["seed"] for s in serial] == sorted(s["seed"] for s in serial)  # a seed at a time
    assert sorted(map(pearl_grid.setting_key, serial)) == sorted(map(pearl_grid.setting_key, settings))


def test_progress_file_separates_settings_from_invocations(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"dataset": "a", "status": "ok"}) + "\n"
                    + json.dumps({"status": "invocation", "wall_s": 3.0}) + "\n")
    done, runs = pearl_grid._read_progress(path)
    assert [r["dataset"] for r in done] == ["a"] and runs[0]["wall_s"] == 3.0
    assert pearl_grid._read_progress(tmp_path / "missing.jsonl") == ([], [])
