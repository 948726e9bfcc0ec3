"""Release ledger: append-only, hash-chained JSON lines; round trip and tamper detection."""

from __future__ import annotations

import json
import multiprocessing
import re

import numpy as np
import pytest
from test_audit import make_students, student_schema

from skdpsynth.audit import Ledger, LedgerIntegrityError, ReleaseAuditor, ValidityCheck, pearl_checks, redact


def _filled(tmp_path, n=4) -> Ledger:
    led = Ledger(tmp_path / "ledger.jsonl")
    for i in range(n):
        led.append("note", {"i": i, "value": 0.5 * i, "nested": {"k": [1, 2, i]}})
    return led


def _lines(led: Ledger) -> list[str]:
    return led.path.read_text().splitlines()


def _write(led: Ledger, lines: list[str]) -> None:
    led.path.write_text("\n".join(lines) + "\n")


def test_round_trip(tmp_path):
    led = _filled(tmp_path)
    entries = led.read()
    assert [e["seq"] for e in entries] == [0, 1, 2, 3]
    assert entries[0]["prev_hash"] == "0" * 64
    assert all(b["prev_hash"] == a["hash"] for a, b in zip(entries, entries[1:]))
    assert entries[2]["nested"] == {"k": [1, 2, 2]} and entries[3]["value"] == 1.5
    assert led.verify() and led.problems() == []
    assert led.head == entries[-1]["hash"]
    assert len(Ledger(led.path)) == 4  # a fresh handle reads the same file


def test_edit_is_detected(tmp_path):
    led = _filled(tmp_path)
    lines = _lines(led)
    entry = json.loads(lines[1])
    entry["value"] = 99.0
    lines[1] = json.dumps(entry, sort_keys=True, separators=(",", ":"))
    _write(led, lines)
    assert not led.verify()
    assert any("line 2" in p and "edited" in p for p in led.problems())
    with pytest.raises(LedgerIntegrityError):
        led.verify(raise_on_error=True)


def test_deletion_and_reordering_are_detected(tmp_path):
    led = _filled(tmp_path)
    lines = _lines(led)
    _write(led, lines[:1] + lines[2:])
    assert not led.verify()
    _write(led, [lines[0], lines[2], lines[1], lines[3]])
    assert not led.verify()
    _write(led, lines)
    assert led.verify()


def test_truncation_is_detected_with_a_known_head(tmp_path):
    led = _filled(tmp_path)
    head = led.head
    _write(led, _lines(led)[:-1])
    assert led.verify()  # a shorter chain is still a chain ...
    assert not led.verify(head=head)  # ... but not the one whose head was published


def test_no_append_to_a_broken_ledger(tmp_path):
    led = _filled(tmp_path)
    lines = _lines(led)
    _write(led, lines[:1] + lines[2:])
    with pytest.raises(LedgerIntegrityError):
        led.append("note", {"i": 9})
    with pytest.raises(ValueError, match="reserved"):
        Ledger(tmp_path / "other.jsonl").append("note", {"hash": "x"})


def test_garbage_line_is_reported(tmp_path):
    led = _filled(tmp_path)
    led.path.write_text(led.path.read_text() + "not json\n")
    assert not led.verify()
    assert "not valid JSON" in led.problems()[0]


def test_audit_and_release_entries(tmp_path):
    from skdpsynth import DPMarginalsSynthesizer

    train, holdout = make_students(300, 0), make_students(300, 1)
    synth = DPMarginalsSynthesizer(epsilon=1.0, schema=student_schema(), random_state=3).fit(train)
    led = Ledger(tmp_path / "pearl.jsonl")
    led.record_fit(synth, n_rows=len(train))
    from skdpsynth.audit import PrivacyCheck

    report = ReleaseAuditor([("validity", ValidityCheck(schema=student_schema())), ("privacy", PrivacyCheck())],
                            ledger=led, random_state=7).audit(synth, X_train=train, X_holdout=holdout)
    led.record_release(report.synthetic, synthesizer=synth, report=report, destination="s3://bucket/release.csv")
    fit, audit, release = led.read()
    assert led.verify()
    assert fit["event"] == "fit" and fit["synthesizer"]["params"]["epsilon"] == 1.0
    assert fit["synthesizer"]["budget_log"][0]["mechanism"] == synth.budget_log_[0].mechanism
    assert audit["event"] == "audit" and audit["approved"] == report.approved
    assert audit["results"]["privacy"]["details"]["membership_auc"] == pytest.approx(
        report.results["privacy"].details["membership_auc"])
    assert audit["seeds"] == {"audit_random_state": 7, "synthesizer_random_state": 3}
    assert audit["synthesizer"]["privacy_spent"]["epsilon"] <= 1.0
    assert {"numpy", "pandas", "sklearn", "skdpsynth", "python"} <= set(audit["library_versions"])
    assert {"results.privacy.details", "results.privacy.passed", "approved"} <= set(audit["confidential_fields"])
    assert "results.validity.details.table" not in audit["confidential_fields"]  # public schema, synthetic only
    assert release["audit_id"] == report.audit_id and release["n_rows"] == len(report.synthetic)
    assert len(release["synthetic_sha256"]) == 64


# --------------------------------------------------------------------------- concurrency and incremental checks
def _writer(path: str, worker: int, n: int) -> None:
    led = Ledger(path)
    for i in range(n):
        led.append("note", {"worker": worker, "i": i})


def test_concurrent_writer_processes_keep_one_chain(tmp_path):
    path = str(tmp_path / "shared.jsonl")
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 100)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert all(p.exitcode == 0 for p in procs)
    led = Ledger(path)
    assert led.verify(raise_on_error=True)
    entries = led.read()
    assert [e["seq"] for e in entries] == list(range(400))
    for w in range(4):
        assert sorted(e["i"] for e in entries if e["worker"] == w) == list(range(100))
    assert led.lock_path.exists()


def test_first_bad_entry_is_reported_with_line_and_seq(tmp_path):
    led = _filled(tmp_path, n=6)
    lines = _lines(led)
    entry = json.loads(lines[3])
    entry["value"] = -1.0
    lines[3] = json.dumps(entry)
    lines[4] = lines[4][:-5]  # a damaged line after it
    _write(led, lines)
    with pytest.raises(LedgerIntegrityError) as err:
        led.verify(raise_on_error=True)
    assert (err.value.line, err.value.seq) == (4, 3) and "edited" in err.value.problem
    assert "line 4 (seq 3)" in str(err.value)
    assert len(led.problems()) == 2 and led.problems()[1].startswith("line 5")


def test_append_checks_only_the_tail(tmp_path, monkeypatch):
    import skdpsynth.audit._ledger as ledger_module

    led = _filled(tmp_path, n=50)
    calls = []
    real = ledger_module._entry_problems
    monkeypatch.setattr(ledger_module, "_entry_problems", lambda *a: calls.append(1) or real(*a))
    led.append("note", {"i": 50})
    assert calls == []  # nothing new since this process verified: the old entries are not re-read
    other = Ledger(led.path)  # another handle (or process) appends ...
    other.append("note", {"i": 51})
    Ledger._marks.clear()  # ... seen from a process that has not verified it yet
    led.append("note", {"i": 52})
    assert len(calls) == 52  # a first append verifies everything once
    calls.clear()
    led.append("note", {"i": 53})
    assert calls == []
    assert led.verify()


def test_append_refuses_a_ledger_cut_or_rewritten_since_it_was_verified(tmp_path):
    led = _filled(tmp_path)
    _write(led, _lines(led)[:-1])  # a valid, shorter chain
    with pytest.raises(LedgerIntegrityError, match="no longer holds"):
        led.append("note", {"i": 9})
    assert led.verify()  # verifying on demand accepts the shorter chain (use head= to catch that) ...
    led.append("note", {"i": 9})  # ... and appending continues from it
    lines = _lines(led)
    last = json.loads(lines[-1])
    last["i"] = 10
    last["hash"] = "f" * 64
    lines[-1] = json.dumps(last, sort_keys=True, separators=(",", ":"))
    _write(led, lines)
    with pytest.raises(LedgerIntegrityError, match="edited"):
        led.append("note", {"i": 11})


# --------------------------------------------------------------------------- publishing
def _numbers(obj, out):
    """Every number in a JSON-like object."""
    if isinstance(obj, dict):
        for v in obj.values():
            _numbers(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _numbers(v, out)
    elif isinstance(obj, (int, float, np.integer, np.floating)) and not isinstance(obj, bool):
        out.append(obj.item() if hasattr(obj, "item") else obj)
    return out


def _found(number, text: str) -> bool:
    if isinstance(number, int):
        return re.search(rf"(?<![\w.]){number}(?![\w.])", text) is not None
    return repr(float(number)) in text


@pytest.mark.usefixtures("reproducible_noise")
def test_redacted_ledger_reveals_no_confidential_number(tmp_path):
    """The attacker's view: a published (redacted) ledger must not contain any confidential value."""
    from skdpsynth import DPMarginalsSynthesizer

    n_train, n_holdout, synth_seed, check_seed, audit_seed = 613, 587, 12345, 4242, 9876
    train, holdout = make_students(n_train, 21), make_students(n_holdout, 22)
    synth = DPMarginalsSynthesizer(epsilon=1.0, schema=student_schema(), random_state=synth_seed).fit(train)
    assert synth.n_estimate_ not in (n_train, n_holdout)  # the DP estimate is public; these must not leak
    led = Ledger(tmp_path / "ledger.jsonl")
    led.record_fit(synth, n_rows=n_train)
    checks = pearl_checks("classification", target="outcome", protected="group", positive="dropout",
                          schema=student_schema(), random_state=check_seed)
    auditor = ReleaseAuditor(checks, ledger=led, random_state=audit_seed)
    report = auditor.audit(synth, X_train=train, X_holdout=holdout)
    exact = auditor.audit(synth, X_train=train, X_holdout=holdout, n_samples=n_train)  # a release of the exact n
    led.record_release(report.synthetic, synthesizer=synth, report=report)
    led.record_release(exact.synthetic, synthesizer=synth, report=exact)
    assert led.verify()

    secrets = [n_train, n_holdout, synth_seed, check_seed, audit_seed]
    for rep in (report, exact):
        secrets += [rep.elapsed_s]
        for res in rep.results.values():
            if res.uses_confidential_data:
                secrets += [res.score, res.elapsed_s]
            secrets += _numbers({k: res.details[k] for k in res.confidential if k in res.details}, [])
    named = report.results
    assert named["privacy"].details["membership_auc"] in secrets
    assert named["utility"].details["tstr_f1"] in secrets and named["utility"].details["trtr_f1"] in secrets
    # specific values only: 0, 1, 0.5 or a threshold like 0.8 may also appear for public reasons, and counts of
    # synthetic rows in a release of the DP estimate's size equal that public estimate
    secrets = [s for s in secrets if (isinstance(s, int) and s > 20 and s != synth.n_estimate_)
               or (isinstance(s, float) and len(repr(s)) >= 8)]
    entries = led.read()
    full = json.dumps(entries)
    assert all(_found(s, full) for s in (n_train, n_holdout, synth_seed, check_seed, audit_seed))  # the test sees
    published = json.dumps(led.redacted())
    leaked = [s for s in secrets if _found(s, published)]
    assert leaked == []
    for entry, red in zip(entries, led.redacted()):
        assert red["nonce"] == "<redacted>" and entry["nonce"] != "<redacted>"
        assert red["hash"] == entry["hash"] and red["redacted"] is True
    audit = led.redacted()[1]
    # the exact verdict reads the real rows: the public copy says one exists, not what it is
    assert audit["reasons"] == audit["public_reasons"] == audit["approved"] == "<redacted>"
    assert audit["results"]["privacy"]["passed"] == "<redacted>"
    assert audit["verdict"] == {"source": "confidential", "approved": None, "public_reasons": None, "epsilon": 0.0}
    assert audit["results"]["validity"]["passed"] is True  # release and public schema only
    assert all(red["approved"] == "<redacted>" for red in led.redacted()[2:])  # the release entries too
    assert audit["privacy"]["epsilon"] == report.privacy["epsilon"]
    assert redact(entries[0])["n_rows"] == "<redacted>"
