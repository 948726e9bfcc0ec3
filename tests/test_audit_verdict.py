"""What the ledger's public copy says about the private rows: nothing unaccounted.

The audit reads the training rows and a real holdout. Its exact verdict is a statistic of them, so the public copy
of the ledger (``redact``) must look the same for neighbouring data (one person added), except for the noisy
numbers of the opt-in noisy threshold tests, whose cost is recorded.
"""

from __future__ import annotations

import ast
import copy
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_audit import make_students, student_schema
from threadpoolctl import threadpool_limits

from skdpsynth import DPMarginalsSynthesizer
from skdpsynth.audit import (
    AuditData,
    FairnessCheck,
    Ledger,
    PrivacyCheck,
    PrivacyGuaranteeCheck,
    ReleaseAuditor,
    ValidityCheck,
    pearl_checks,
    redact,
)
from skdpsynth.exceptions import PrivacyBudgetError

ROOT = Path(__file__).resolve().parents[1]
#: fields that differ between any two runs (ids, times, the chain's links), not between neighbours
RUN_FIELDS = ("nonce", "hash", "prev_hash", "timestamp", "audit_timestamp", "audit_id")
GUARANTEE = {"epsilon": 1.0, "delta": 1e-6, "is_private": True, "publishable": True, "reproducible_noise": False}


@pytest.fixture(autouse=True)
def _one_thread():
    with threadpool_limits(1):
        yield


@pytest.fixture(scope="module")
def fixed_release():
    """Training rows, a holdout, and one DP release of the training rows, sampled once and kept fixed."""
    train, holdout = make_students(160, 10), make_students(160, 11)
    synth = DPMarginalsSynthesizer(epsilon=1.0, schema=student_schema(), random_state=0).fit(train)
    return train, holdout, synth, synth.sample(random_state=1)


EXTREME = {
    "outlier score": {"score": 1e6, "attendance": 0.5, "course": "math", "group": "A", "outcome": "graduate"},
    "unique outcome": {"score": 50.0, "attendance": 0.5, "course": "math", "group": "A", "outcome": "expelled"},
    "unique course": {"score": 50.0, "attendance": 0.5, "course": "zoology", "group": "B", "outcome": "dropout"},
    "missing score": {"score": np.nan, "attendance": 2.0, "course": "art", "group": "Z", "outcome": "dropout"},
}


def _with(frame: pd.DataFrame, row: dict) -> pd.DataFrame:
    return pd.concat([frame, pd.DataFrame([row])], ignore_index=True)


def _published(auditor_kw: dict, synth, release, train, holdout, tmp: Path) -> tuple[dict, list[str]]:
    """The public copy of the audit's ledger entry and every warning the audit raised."""
    path = tmp / f"ledger-{len(list(tmp.iterdir()))}.jsonl"
    checks = pearl_checks("classification", target="outcome", protected="group", positive="dropout",
                          schema=student_schema(), random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ReleaseAuditor(checks, ledger=path, random_state=0, **auditor_kw).audit(
            synth, synthetic=release, X_train=train, X_holdout=holdout)
    entry = Ledger(path).redacted()[0]
    return entry, sorted(f"{w.category.__name__}: {w.message}" for w in caught)


def _masked(entry: dict) -> dict:
    """Run-specific fields and the noisy verdicts (post-processed DP answers) masked."""
    out = {k: v for k, v in copy.deepcopy(entry).items() if k not in RUN_FIELDS}
    noisy = [v for r in out["results"].values() for v in [r["verdict"]] if v["source"] == "dp"]
    for v in noisy:
        v.update(applicable="<noisy>", passed="<noisy>", public_reason="<noisy>")
    if out["verdict"]["source"] == "dp":
        out["verdict"].update(approved="<noisy>", public_reasons="<noisy>")
    return out


@pytest.mark.parametrize("where, verdict_epsilon", [("holdout", None), ("holdout", 1.0), ("train", 1.0)])
def test_the_public_ledger_entry_is_the_same_for_neighbouring_data(fixed_release, tmp_path, where, verdict_epsilon):
    train, holdout, synth, release = fixed_release
    kw = {"verdict_epsilon": verdict_epsilon}
    base, base_warnings = _published(kw, synth, release, train, holdout, tmp_path)
    shown = "confidential" if verdict_epsilon is None else "dp"
    assert base["results"]["privacy"]["verdict"]["source"] == base["results"]["fairness"]["verdict"]["source"] == shown
    assert base["results"]["utility"]["verdict"]["source"] == "confidential"  # no DP rule: not published
    if verdict_epsilon is not None:  # privacy and fairness share the budget; both charges are in the public copy
        assert [r["epsilon"] for r in base["audit_budget"]["records"]] == [0.5, 0.5]
    for name, person in EXTREME.items():
        t, h = (_with(train, person), holdout) if where == "train" else (train, _with(holdout, person))
        entry, caught = _published(kw, synth, release, t, h, tmp_path)
        assert caught == base_warnings, name
        assert entry["confidential_fields"] == base["confidential_fields"], name
        assert _masked(entry) == _masked(base), name
    # the public copy quotes no exact count of people (the noisy size estimate and the release's own length are
    # public and may equal the true count by chance, so they are left out of the search)
    text = json.dumps(_without_release_sizes(base, base["data"]["n_synthetic"]))
    assert all(f'"{n}"' not in text and f": {n}," not in text for n in (len(train), len(holdout)))


def _without_release_sizes(node, release_size: int):
    """``node`` with the DP size estimates and the release's length (``n_rows`` equal to it) removed, at any depth."""
    if isinstance(node, dict):
        return {k: _without_release_sizes(v, release_size) for k, v in node.items()
                if k not in ("n_estimate", "n_synthetic") and not (k == "n_rows" and v == release_size)}
    if isinstance(node, list):
        return [_without_release_sizes(v, release_size) for v in node]
    return node


def _support_attack_tables(dropouts_in_b: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    train, holdout = make_students(300, 20), make_students(300, 21)
    keep = ~((holdout["group"] == "B") & (holdout["outcome"] == "dropout"))
    holdout = holdout[keep].reset_index(drop=True)
    person = {"score": 20.0, "attendance": 0.1, "course": "math", "group": "B", "outcome": "dropout"}
    for _ in range(dropouts_in_b):
        holdout = _with(holdout, person)
    return train, holdout


def test_attack_one_person_flips_the_fairness_check_applicability_but_not_the_public_copy(tmp_path):
    """The leak: the published per-check bits were exact statistics of the holdout.

    Group B has 9 at-risk holdout rows; a tenth person makes the fairness check applicable (``min_support=10``).
    The exact ``applicable`` bit tells D from D + that person every time; the public copy must not.
    """
    release = make_students(300, 22)
    entries, exact = [], []
    for n_b in (9, 10):
        train, holdout = _support_attack_tables(n_b)
        led = Ledger(tmp_path / f"ledger-{n_b}.jsonl")
        checks = [("fairness", FairnessCheck(target="outcome", protected="group", positive="dropout")),
                  ("validity", ValidityCheck(schema=student_schema()))]
        report = ReleaseAuditor(checks, ledger=led).audit(synthetic=release, X_train=train, X_holdout=holdout,
                                                          privacy=GUARANTEE)
        exact.append((report.results["fairness"].applicable, report.approved, report.public_reasons))
        entries.append(_masked(led.redacted()[0]))
    assert exact[0][0] != exact[1][0]  # the distinguishing statistic, on the exact results
    assert entries[0] == entries[1]  # ... is not in the published copy
    assert entries[0]["results"]["fairness"]["applicable"] == "<redacted>"
    assert entries[0]["approved"] == entries[0]["public_reasons"] == "<redacted>"


def test_noisy_verdict_is_charged_and_published(fixed_release, tmp_path):
    train, holdout, synth, release = fixed_release
    checks = [("privacy_guarantee", PrivacyGuaranteeCheck()), ("validity", ValidityCheck(schema=student_schema())),
              ("privacy", PrivacyCheck(schema=student_schema()))]
    led = Ledger(tmp_path / "ledger.jsonl")
    report = ReleaseAuditor(checks, ledger=led, verdict_epsilon=0.5).audit(
        synth, synthetic=release, X_train=train, X_holdout=holdout)
    budget = report.audit_budget
    assert budget["epsilon"] == pytest.approx(0.5) and budget["delta"] == 0.0
    (record,) = budget["records"]
    assert record["mechanism"] == "geometric" and record["sensitivity"] == 1.0 and "'privacy'" in record["target"]
    assert record["noise"] == "secure"
    public = led.redacted()[0]
    assert public["audit_budget"] == json.loads(json.dumps(budget))
    assert public["results"]["privacy"]["verdict"]["source"] == "dp"
    assert public["results"]["privacy"]["verdict"]["sensitivity"] == PrivacyCheck.dp_sensitivity
    assert public["verdict"]["source"] == "dp" and isinstance(public["verdict"]["approved"], bool)
    assert public["approved"] == "<redacted>"  # the exact verdict stays with the custodian
    assert "Published verdict: " in report.to_markdown() and "noisy threshold tests" in report.to_markdown()


def test_checks_without_a_dp_rule_keep_the_verdict_confidential(fixed_release):
    train, holdout, synth, release = fixed_release
    report = ReleaseAuditor(pearl_checks("classification", target="outcome", schema=student_schema()),
                            verdict_epsilon=1.0).audit(synth, synthetic=release, X_train=train, X_holdout=holdout)
    assert report.results["utility"].verdict["source"] == "confidential"
    assert report.verdict == {"source": "confidential", "approved": None, "public_reasons": None, "epsilon": 1.0}


@pytest.mark.parametrize("copying", [True, False])
def test_noisy_privacy_verdict_follows_the_exact_rule_at_a_large_epsilon(copying):
    train, holdout = make_students(400, 30), make_students(400, 31)
    release = train.copy() if copying else make_students(400, 32)
    checks = [("privacy", PrivacyCheck(schema=student_schema()))]
    report = ReleaseAuditor(checks, verdict_epsilon=50.0).audit(synthetic=release, X_train=train,
                                                                 X_holdout=holdout)
    exact, noisy = report.results["privacy"], report.results["privacy"].verdict
    assert exact.passed is (not copying) and noisy["passed"] is (not copying)
    assert noisy["public_reason"] == exact.public_reason


def test_one_person_changes_one_cell_of_the_privacy_histograms():
    """The sensitivity the privacy check states: everyone else's cell is unchanged when one person joins."""
    train, holdout, release = make_students(200, 40), make_students(200, 41), make_students(200, 42)
    check = PrivacyCheck()  # no schema: ranges from the release, never from the real rows
    cells = check.dp_cells(AuditData(synthetic=release, holdout=holdout, train=train))
    for person in EXTREME.values():
        bigger = check.dp_cells(AuditData(synthetic=release, holdout=holdout, train=_with(train, person)))
        assert np.array_equal(bigger[:len(train)], cells[:len(train)])
        assert np.array_equal(bigger[len(train) + 1:], cells[len(train):])


def test_a_bad_verdict_epsilon_is_refused_before_any_work(fixed_release):
    train, holdout, synth, release = fixed_release
    with pytest.raises(PrivacyBudgetError, match="verdict_epsilon"):
        ReleaseAuditor([("privacy", PrivacyCheck())], verdict_epsilon=-1.0).audit(
            synth, synthetic=release, X_train=train, X_holdout=holdout)


def test_redact_keeps_the_structure():
    entry = {"a": 1, "results": {"x": {"passed": True, "details": {"k": 2}}}, "confidential_fields":
             ["results.x.passed", "results.x.details"]}
    assert redact(entry)["results"]["x"] == {"passed": "<redacted>", "details": "<redacted>"}


def _top_level_imports(path: Path, local: set[str], package: str) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            mod = node.module.removeprefix(package)
            if mod in local:
                names.add(mod)
    return names


def _has_cycle(graph: dict[str, set[str]]) -> bool:
    state: dict[str, int] = {}

    def visit(node: str) -> bool:
        state[node] = 1
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1 or (nxt not in state and visit(nxt)):
                return True
        state[node] = 2
        return False

    return any(node not in state and visit(node) for node in graph)


@pytest.mark.parametrize("folder, package", [("skdpsynth/audit", "skdpsynth.audit."), ("benchmarks", "")])
def test_no_import_circle_and_no_function_local_import_of_a_sibling(folder, package):
    files = {p.stem: p for p in (ROOT / folder).glob("*.py")}
    graph = {name: _top_level_imports(path, set(files), package) for name, path in files.items()}
    assert not _has_cycle(graph)
    for name in ("_display", "_report", "_pearl_reasons", "_pearl_report"):
        if name not in files:
            continue
        tree = ast.parse(files[name].read_text(encoding="utf-8"))
        local = [n.module for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for n in ast.walk(f)
                 if isinstance(n, ast.ImportFrom) and (n.module or "").removeprefix(package) in files]
        assert local == [], name


def test_an_unknown_positive_class_quotes_no_holdout_value():
    train, holdout = make_students(50, 50), make_students(50, 51)
    holdout.loc[0, "outcome"] = "secret-label"
    check = FairnessCheck(target="outcome", protected="group", positive="secret-labe")
    with pytest.raises(ValueError, match="not quoted") as err:  # values read from the holdout
        ReleaseAuditor([("fairness", check)]).audit(synthetic=train, X_train=train, X_holdout=holdout)
    assert "secret" not in str(err.value).replace("'secret-labe'", "")
    with pytest.raises(ValueError, match="graduate"):  # the schema's categories are public
        ReleaseAuditor([("fairness", check)], schema=student_schema()).audit(
            synthetic=train, X_train=train, X_holdout=holdout)


@pytest.mark.parametrize("positive", ["dropout", None])
def test_noisy_fairness_verdict_follows_the_exact_rule_at_a_large_epsilon(positive):
    train, holdout = make_students(400, 60), make_students(400, 61)
    fair = make_students(400, 62)
    biased = fair.assign(outcome=np.where(fair["group"] == "B", "graduate", fair["outcome"]))  # B never drops out
    for release, expect in ((fair, True), (biased, False)):
        check = FairnessCheck(target="outcome", protected="group", positive=positive, max_gap=0.3, min_recall=0.3)
        report = ReleaseAuditor([("fairness", check)], schema=student_schema(), verdict_epsilon=200.0).audit(
            synthetic=release, X_train=train, X_holdout=holdout, privacy=GUARANTEE)
        exact, noisy = report.results["fairness"], report.results["fairness"].verdict
        assert exact.passed is expect and noisy["source"] == "dp"
        assert (noisy["applicable"], noisy["passed"], noisy["public_reason"]) == (
            exact.applicable, exact.passed, exact.public_reason)
    (record,) = report.audit_budget["records"]
    assert record["sensitivity"] == 1.0 and record["epsilon"] == 200.0  # one protected attribute


def test_noisy_fairness_support_rule_is_decided_on_noisy_counts(tmp_path):
    """The attack above, with a published verdict: the applicability bit is noisy, not exact."""
    from skdpsynth.privacy._threshold import VerdictAnswers

    release = make_students(300, 22)
    check = FairnessCheck(target="outcome", protected="group", positive="dropout")
    rates = []
    for n_b in (17, 18):  # near where the noisy support rule turns (10 plus two noise deviations at epsilon 0.5)
        train, holdout = _support_attack_tables(n_b)
        data = AuditData(synthetic=release, holdout=holdout, train=train, schema=student_schema())
        check.evaluate(data)  # the model trained on the release, shared through the cache
        rates.append(np.mean([check.dp_verdict(data, VerdictAnswers(0.5), 0.5)[0] for _ in range(200)]))
    assert all(0.1 < r < 0.9 for r in rates), rates  # both bits occur on both neighbours: no deterministic tell
