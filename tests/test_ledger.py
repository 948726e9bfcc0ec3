"""Release ledger: append-only, hash-chained JSON lines; round trip and tamper detection."""

from __future__ import annotations

import json

import pytest
from test_audit import make_students, student_schema

from skdpsynth.audit import Ledger, LedgerIntegrityError, ReleaseAuditor, ValidityCheck


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
    assert "results.privacy.details.membership_auc" in audit["confidential_fields"]
    assert "results.validity.details.table" not in audit["confidential_fields"]  # public schema, synthetic only
    assert release["audit_id"] == report.audit_id and release["n_rows"] == len(report.synthetic)
    assert len(release["synthetic_sha256"]) == 64
