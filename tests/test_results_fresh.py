"""Every published figure is what its result file says, and every result file was written by the code as it is.

* README.md's Measured table and the ``<!-- fig:KEY -->`` spans of docs/*.md equal what
  ``python -m benchmarks.report`` writes from ``benchmarks/results/`` (``--check``);
* every result file named in ``benchmarks/published.py`` is stamped, and the sha256 of each repository file its
  benchmark had loaded equals the file's now -- otherwise the test names the file, the changed files and the
  command that regenerates it. ``STALE_ALLOWED`` lists, each with why, the files still to be rerun; an entry
  that has become fresh fails too, so the list only shrinks;
* no result file outside ``benchmarks/results/archive/`` holds an absolute path of a machine.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
for _name in [m for m in sys.modules if m == "benchmarks" or m.startswith("benchmarks.")]:
    if not str(getattr(sys.modules[_name], "__file__", "") or "").startswith(str(ROOT)):
        del sys.modules[_name]  # another distribution's "benchmarks" package (opacus ships one)
common = importlib.import_module("benchmarks._common")
registry = importlib.import_module("benchmarks.registry")
published = importlib.import_module("benchmarks.published")
report = importlib.import_module("benchmarks.report")

RESULTS = ROOT / "benchmarks" / "results"


def test_the_package_imported_is_this_repository_s():
    assert Path(report.__file__).resolve() == ROOT / "benchmarks" / "report.py"


def test_published_figures_match_the_result_files():
    diffs = {p.relative_to(ROOT).as_posix(): None for p, (old, new) in report.regenerate().items() if old != new}
    assert not diffs, f"{sorted(diffs)} differ from the result files: run python -m benchmarks.report"


def test_every_registered_figure_is_cited():
    """A registered figure nobody quotes is a figure nobody checks: README or a docs span cites each one."""
    cited = set()
    for template in (t for _, t in published.MEASURED):
        cited.update(report.PLACEHOLDER.findall(template))
    for path in report.documents():
        cited.update(m["key"] for m in report.SPAN.finditer(path.read_text()))
    keys = {f.key for f in published.FIGURES}
    assert len(keys) == len(published.FIGURES), "two figures share a key"
    assert keys - cited == set()
    assert cited - keys == set()


@pytest.mark.parametrize("doc", [p.relative_to(ROOT).as_posix() for p in report.documents()])
def test_docs_quote_no_figure_the_registry_does_not_write(doc):
    """A measured number in prose comes from a result file (a fig span) or is marked as past (a history span
    naming its commit); parameters and thresholds are written as code."""
    found = report.unregistered_figures((ROOT / doc).read_text())
    assert not found, f"{doc}: figures outside fig/history spans: {found[:8]}"


def test_unregistered_figures_are_found_outside_spans_code_and_history():
    text = ("Fit took 2.8 s and AUC 0.504. <!-- fig:k -->0.871<!-- /fig --> `max_auc=0.55`\n"
            "<!-- history:abc1234 -->0.575 -> 0.618 (at abc1234)<!-- /history -->\n"
            "<!-- history:def5678 -->0.51 without its commit<!-- /history -->\n```text\n0.999\n```\n")
    found = report.unregistered_figures(text)
    assert [f.split(" in:")[0] for f in found] == ["history:def5678 does not name its commit in its text",
                                                   "'2.8 s'", "'0.504'"]


@pytest.mark.parametrize("source", published.published_files())
def test_published_result_file_is_fresh(source):
    state = report.freshness(source)
    if source in published.STALE_ALLOWED:
        assert state.state != "fresh", (
            f"benchmarks/results/{source} is fresh now: remove it from STALE_ALLOWED in benchmarks/published.py")
        pytest.skip(f"allowed stale ({published.STALE_ALLOWED[source]}): {state.describe()}")
    assert state.state == "fresh", state.describe()


def test_stale_allowed_names_published_files_with_reasons():
    assert set(published.STALE_ALLOWED) <= set(published.published_files())
    assert all(reason.strip() for reason in published.STALE_ALLOWED.values())
    assert all(s in published.RERUN for s in published.STALE_ALLOWED if report.freshness(s).state == "unstamped")


def _result_files():
    for path in sorted(RESULTS.rglob("*")):
        if path.is_file() and "archive" not in path.relative_to(RESULTS).parts and path.suffix in (
                ".json", ".jsonl", ".md"):
            yield path


def test_no_result_file_holds_an_absolute_path():
    found = {p.relative_to(ROOT).as_posix(): common.absolute_paths(p.read_text()) for p in _result_files()}
    found = {k: v[:3] for k, v in found.items() if v}
    assert not found


# -- the machinery itself, on temporary files ----------------------------------------------------------------


def test_paths_are_made_relative_and_foreign_absolute_paths_are_found():
    root = str(common.ROOT)
    payload = {"a": f"{root}/benchmarks/results/x.json", "b": [f"see {root}/skdpsynth/base.py"],
               Path(root).name: {"deeper": Path(root) / "docs"}}
    out = common.relative_paths(payload)
    text = json.dumps(out)
    assert root not in text
    assert out["a"] == "benchmarks/results/x.json" and out["b"] == ["see skdpsynth/base.py"]
    assert common.absolute_paths(text) == []
    assert common.absolute_paths('{"x": "/home/someone/data.csv"}')
    assert common.absolute_paths("written to /opt/x") and not common.absolute_paths("10 MiB/s, ./x, https://a/b")


def test_write_results_stamps_and_refuses_absolute_paths(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    path = common.write_results("demo", {"rows": [{"data": str(common.ROOT / "README.md")}]}, "# demo")
    payload = json.loads(path.read_text())
    stamp = payload["stamp"]
    assert payload["rows"][0]["data"] == "README.md"
    assert {"commit", "dirty", "date", "command", "versions", "machine", "depends"} <= set(stamp)
    assert stamp["depends"]["benchmarks/_common.py"] == common.sha256(common.ROOT / "benchmarks" / "_common.py")
    assert all(k.split("/")[0] in common.DEPEND_DIRS for k in stamp["depends"])
    assert "numpy" in stamp["versions"]
    with pytest.raises(ValueError, match="absolute paths"):
        common.write_results("bad", {"where": "/home/someone/elsewhere.csv"}, "")
    assert not (tmp_path / "bad.json").exists()


def test_worker_processes_imports_count_as_dependencies():
    """A benchmark that fits in worker processes depends on what the workers import, not only the parent."""
    candidates = [p.stem for p in sorted((ROOT / "benchmarks").glob("_*.py")) if p.stem != "__init__"]
    unloaded = [n for n in candidates if n not in sys.modules and f"benchmarks.{n}" not in sys.modules]
    if not unloaded:
        pytest.skip("every benchmark helper is already imported in this process")
    name = unloaded[-1]
    rel = f"benchmarks/{name}.py"
    assert rel not in common.loaded_dependencies()
    code = (f"import sys; sys.path[:0] = [{str(ROOT / 'benchmarks')!r}]; import _common; "
            f"import importlib.util as u; print(u.find_spec({name!r}).origin)")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=120)
    assert rel in common.loaded_dependencies()  # find_spec alone consults the finders: the worker logged it


def test_freshness_sees_a_changed_dependency(tmp_path):
    (tmp_path / "benchmarks").mkdir()
    dep = tmp_path / "benchmarks" / "dep.py"
    dep.write_text("x = 1\n")
    results = tmp_path / "results"
    results.mkdir()
    stamp = {"command": "python benchmarks/dep.py --fast", "depends": {"benchmarks/dep.py": common.sha256(dep)}}
    (results / "r.json").write_text(json.dumps({"stamp": stamp}))
    (results / "u.json").write_text(json.dumps({"rows": []}))
    assert report.freshness("r.json", root=tmp_path, results=results).state == "fresh"
    assert report.freshness("u.json", root=tmp_path, results=results).state == "unstamped"
    dep.write_text("x = 2\n")
    state = report.freshness("r.json", root=tmp_path, results=results)
    assert (state.state, state.changed) == ("stale", ["benchmarks/dep.py"])
    assert "python benchmarks/dep.py --fast" in state.describe()
    dep.unlink()
    assert report.freshness("r.json", root=tmp_path, results=results).changed == ["benchmarks/dep.py (removed)"]


def test_freshness_ignores_docstrings_and_comments_but_not_code(tmp_path):
    """A change to a dependency's docstrings or comments keeps a result fresh; any change to its code does not."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    dep = tmp_path / "benchmarks" / "dep.py"
    dep.parent.mkdir()
    dep.write_text('"""Module."""\n\n\ndef f(x):\n    """Add one."""\n    return x + 1  # the count\n')
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "dep")
    results = tmp_path / "results"
    results.mkdir()
    stamp = {"commit": git("rev-parse", "HEAD"), "depends": {"benchmarks/dep.py": common.sha256(dep)}}
    (results / "r.json").write_text(json.dumps({"stamp": stamp}))

    def state() -> str:
        return report.freshness("r.json", root=tmp_path, results=results).state

    dep.write_text('"""Module, reworded."""\n\n\ndef f(x):\n    """Add one to x.\n\n    More words.\n    """\n'
                   '    # why: a new comment\n    return x + 1\n')
    assert state() == "fresh"
    dep.write_text('"""Module."""\n\n\ndef f(x):\n    """Add one."""\n    return x + 2  # the count\n')
    assert state() == "stale"
    dep.write_text('"""Module."""\n\n\ndef f(x):\n    return x + 1\n')  # a docstring-only function body stays code
    assert state() == "fresh"
    dep.write_text('"""Module."""\n\n\ndef f(x):\n    """Add one."""\n    "a statement"\n    return x + 1\n')
    assert state() == "stale"  # only the first string of a body is its docstring
    stamp["commit"] = "0" * 40  # a commit this checkout does not have: the hash alone decides
    (results / "r.json").write_text(json.dumps({"stamp": stamp}))
    dep.write_text('"""Module, reworded."""\n\n\ndef f(x):\n    """Add one."""\n    return x + 1  # the count\n')
    assert state() == "stale"


def test_impact_lists_the_published_files_that_depend_on_a_file():
    source = published.published_files()[0]
    stamp = report.load(source)["stamp"]
    dep = next(iter(stamp["depends"]))
    hits = {st.source: st for st in report.impact([dep, "no/such/file.py"])}
    assert source in hits and hits[source].changed == [dep]
    assert all(dep in report.load(s)["stamp"]["depends"] for s in hits)
    assert not report.impact(["no/such/file.py"])


def test_report_rewrites_spans_and_the_measured_table_and_check_sees_a_changed_figure(tmp_path):
    texts = report.figure_texts()
    key = published.FIGURES[0].key
    doc = f"Before <!-- fig:{key} -->9.99<!-- /fig --> after.\n"
    assert report.update_spans(doc, texts) == f"Before <!-- fig:{key} -->{texts[key]}<!-- /fig --> after.\n"
    quoted = f"the convention `<!-- fig:KEY -->TEXT<!-- /fig -->` and <!-- fig:{key} -->1<!-- /fig -->"
    assert report.update_spans(quoted, texts).startswith("the convention `<!-- fig:KEY -->TEXT<!-- /fig -->` and ")
    assert report.update_spans(quoted, texts).endswith(f"<!-- fig:{key} -->{texts[key]}<!-- /fig -->")
    with pytest.raises(KeyError, match="unknown figure"):
        report.update_spans("<!-- fig:no.such.figure -->1<!-- /fig -->", texts)
    readme = f"# x\n\n{report.START}\nold\n{report.END}\n\nrest\n"
    new = report.update_readme(readme, texts)
    assert new.startswith(f"# x\n\n{report.START}\n| what | figure |") and new.endswith(f"{report.END}\n\nrest\n")
    assert report.update_readme(new, texts) == new
    changed = dict(texts, **{key: texts[key] + "0"})
    assert report.update_readme(new, changed) != new


def test_intervals_are_student_t_intervals():
    v = registry.mean_ci([1.0, 2.0, 3.0])
    assert v.value == pytest.approx(2.0)
    assert (v.high - v.low) / 2 == pytest.approx(4.302653 * 1.0 / 3 ** 0.5, rel=1e-5)  # t(0.975, 2) sd / sqrt n
    assert registry.value_range([3, 1, 2]).format(".0f") == "1-3"
    assert registry.Value(0.5, 0.4, 0.6, "ci").format(".2f") == "0.50 [0.40, 0.60]"
