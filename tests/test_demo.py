"""The `skdpsynth demo` command runs end to end, writes its report and never overwrites a folder."""

import sys
import warnings

import pytest

from skdpsynth._demo import choose_output_folder, run_demo
from skdpsynth.cli import main

pytestmark = pytest.mark.requires("matplotlib", "sdmetrics")  # an extra


def test_demo_writes_report(tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["demo", "--output", str(out), "--n-students", "600", "--epsilon", "5"]) == 0
    cap = capsys.readouterr()
    assert "PEARL audit" in cap.out and "verdict:" in cap.out and "DP estimate" in cap.out
    assert "Warning" not in cap.err and "deprecated" not in cap.err and "Traceback" not in cap.err
    assert (out / "synthetic.csv").exists() and (out / "ledger.jsonl").exists()
    assert (out / "marginals.png").stat().st_size > 1000
    assert any(p.suffix in (".md", ".html") for p in out.iterdir())
    # a second demo into the same folder is refused before any work; nothing is overwritten
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert main(["demo", "--output", str(out), "--n-students", "600"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before


@pytest.mark.slow  # a second demo run; the default demo test already asserts no warning reaches stderr
def test_sdmetrics_deprecation_does_not_reach_the_demo(tmp_path, capsys):
    sys.modules.pop("sdmetrics.reports.single_table", None)  # its import is what warns
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert run_demo(tmp_path / "r", n_students=300, epsilon=5.0) == 0
    assert not [w for w in caught if issubclass(w.category, FutureWarning) and "sdmetrics" in str(w.filename)]
    assert "FutureWarning" not in capsys.readouterr().err


def test_default_folder_gives_way_to_a_new_name(tmp_path):
    taken = tmp_path / "skdpsynth-report"
    taken.mkdir()
    (taken / "report.md").write_text("first run")
    folder, note = choose_output_folder(taken, explicit=False)
    assert folder == tmp_path / "skdpsynth-report-2" and "instead" in note and str(folder) in note
    (tmp_path / "empty").mkdir()
    assert choose_output_folder(tmp_path / "empty", explicit=True) == (tmp_path / "empty", None)


def test_demo_refuses_too_few_students(tmp_path, capsys):
    assert main(["demo", "--n-students", "1", "--output", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "--n-students must be at least" in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()
