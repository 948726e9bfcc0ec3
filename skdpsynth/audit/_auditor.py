"""ReleaseAuditor: sample once, run every check, approve or reject, log to the ledger."""

from __future__ import annotations

import datetime as _dt
import hashlib
import logging
import os
import time
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone

from skdpsynth.audit._base import AuditData, BaseCheck, CheckResult, MissingTrainingDataError
from skdpsynth.audit._checks import (
    FairnessCheck,
    KnowledgeTracingCheck,
    PrivacyCheck,
    SequenceTaskCheck,
    UtilityCheck,
    ValidityCheck,
)
from skdpsynth.audit._ledger import Ledger, library_versions, synthesizer_record
from skdpsynth.audit._report import AuditReport

__all__ = ["ReleaseAuditor", "pearl_checks"]

logger = logging.getLogger("skdpsynth.audit")
logger.addHandler(logging.NullHandler())

TASKS = ("classification", "sequence", "knowledge_tracing")


def pearl_checks(
    task: str = "classification",
    *,
    target: str | None = None,
    protected: str | Sequence[str] | None = None,
    positive: Any = None,
    schema: Any = None,
    id_col: str | None = None,
    order_col: str | None = None,
    event_col: str | Sequence[str] | None = None,
    skill_col: str = "skill_id",
    correct_col: str = "correct",
    random_state: int | None = None,
) -> list[tuple[str, BaseCheck]]:
    """The PEARL check set for a task, with PEARL's (or documented default) thresholds.

    Parameters
    ----------
    task : {"classification", "sequence", "knowledge_tracing"}
        ``classification``: validity, privacy, utility (+ fairness when
        ``protected`` is given). ``sequence`` (long event table with one
        outcome per learner): validity of the sequences, privacy and utility
        on order-free per-learner features, and the GRU sequence task.
        ``knowledge_tracing`` (long response table): validity, privacy, and
        DKT + SAKT next-response suitability (+ utility when ``target`` names
        a per-learner outcome).
    target : str
        Outcome column (per row, or per learner for sequences).
    protected : str or list of str, optional
        Protected attributes for the fairness check (tables only).
    positive : label, optional
        Class whose recall the fairness check compares (default: macro recall).
    schema : TableSchema, optional
        Public schema for validity and distance scaling.
    id_col, order_col, event_col : str
        Long-table columns (sequence and knowledge-tracing tasks).
    skill_col, correct_col : str
        Knowledge-tracing columns.
    random_state : int, optional
        Seed of every check's models (default: the auditor's).

    Returns
    -------
    list of (name, check)
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}.")
    rs = random_state
    if task == "classification":
        if target is None:
            raise ValueError("pearl_checks('classification') needs target=<outcome column>.")
        checks: list[tuple[str, BaseCheck]] = [
            ("validity", ValidityCheck(schema=schema)),
            ("privacy", PrivacyCheck(schema=schema, random_state=rs)),
            ("utility", UtilityCheck(target=target, random_state=rs)),
        ]
        if protected:
            checks.append(("fairness", FairnessCheck(target=target, protected=protected, positive=positive,
                                                     random_state=rs)))
        return checks
    if id_col is None or order_col is None:
        raise ValueError(f"pearl_checks({task!r}) needs id_col and order_col (long event table).")
    if task == "sequence":
        if target is None or event_col is None:
            raise ValueError("pearl_checks('sequence') needs target=<outcome column> and event_col.")
        return [
            ("validity", ValidityCheck(schema=schema, id_col=id_col, order_col=order_col, event_col=event_col,
                                       label_col=target)),
            ("privacy", PrivacyCheck(id_col=id_col, event_col=event_col, label_col=target, random_state=rs)),
            ("utility", UtilityCheck(target=target, id_col=id_col, event_col=event_col, random_state=rs)),
            ("sequence_task", SequenceTaskCheck(id_col=id_col, order_col=order_col, event_col=event_col,
                                                label_col=target, random_state=rs)),
        ]
    events = [skill_col, correct_col]
    checks = [
        ("validity", ValidityCheck(schema=schema, id_col=id_col, order_col=order_col, event_col=events,
                                   vocabulary={correct_col: [0, 1]}, label_col=target)),
        ("privacy", PrivacyCheck(id_col=id_col, event_col=events, label_col=target, random_state=rs)),
    ]
    if target is not None:
        checks.append(("utility", UtilityCheck(target=target, id_col=id_col, event_col=events, random_state=rs)))
    checks.append(("knowledge_tracing", KnowledgeTracingCheck(id_col=id_col, order_col=order_col, skill_col=skill_col,
                                                              correct_col=correct_col, random_state=rs)))
    return checks


def _fingerprint(frame: pd.DataFrame) -> str:
    return hashlib.sha256(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes()).hexdigest()


class ReleaseAuditor(BaseEstimator):
    """Run PEARL checks on one release and decide: approved only if every applicable check passes.

    Parameters
    ----------
    checks : list of (name, check)
        e.g. ``pearl_checks("classification", target="Target")``.
    ledger : None, str, PathLike or Ledger, default=None
        Where to append one hash-chained entry per audit.
    schema : TableSchema, optional
        Public schema shared with the checks (validity, distance scaling).
    n_samples : int, optional
        Rows (learners) to sample from a synthesizer; default: as many as the
        training rows (learners), else the holdout's.
    on_error : {"fail", "raise"}, default="fail"
        A check that raises is recorded as failed with the error as its
        reason (fail closed), or the error propagates.
    random_state : int, default=0
        Seeds the sample drawn from a synthesizer and the checks' models.

    Examples
    --------
    >>> auditor = ReleaseAuditor(checks=pearl_checks("classification", target="Target"))  # doctest: +SKIP
    >>> report = auditor.audit(synth, X_train=train, X_holdout=holdout)                  # doctest: +SKIP
    >>> report.approved, report.reasons                                                   # doctest: +SKIP
    """

    def __init__(self, checks, *, ledger=None, schema=None, n_samples=None, on_error="fail", random_state=0):
        self.checks = checks
        self.ledger = ledger
        self.schema = schema
        self.n_samples = n_samples
        self.on_error = on_error
        self.random_state = random_state

    def _validated_checks(self) -> list[tuple[str, BaseCheck]]:
        checks = list(self.checks or [])
        if not checks:
            raise ValueError("ReleaseAuditor needs at least one (name, check) pair; see pearl_checks().")
        names = []
        for item in checks:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                    and hasattr(item[1], "evaluate")):
                raise TypeError(f"checks must be (name, check) pairs with an 'evaluate' method; got {item!r:.80}.")
            names.append(item[0])
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"check names must be unique; {dup} repeat.")
        if self.on_error not in ("fail", "raise"):
            raise ValueError(f"on_error must be 'fail' or 'raise', got {self.on_error!r}.")
        return [(n, clone(c) if isinstance(c, BaseEstimator) else c) for n, c in checks]

    def _persons(self, checks: list[tuple[str, BaseCheck]], frame: pd.DataFrame) -> int:
        for _, c in checks:
            id_col = getattr(c, "id_col", None)
            if id_col is not None and id_col in frame.columns:
                return int(frame[id_col].nunique())
        return len(frame)

    def audit(
        self,
        synthesizer: Any = None,
        *,
        synthetic: pd.DataFrame | None = None,
        X_train: pd.DataFrame | None = None,
        X_holdout: pd.DataFrame,
        n_samples: int | None = None,
        random_state: int | None = None,
    ) -> AuditReport:
        """Audit a fitted synthesizer (sampled once) or a ready synthetic table.

        Parameters
        ----------
        synthesizer : fitted synthesizer, optional
            Duck type: ``sample(n, random_state=...)``, ``get_params``,
            ``privacy_spent_`` (and ``budget_log_``), recorded in the ledger.
        synthetic : DataFrame, optional
            A ready release (e.g. from CTGAN); give this or ``synthesizer``
            (both: the table is audited and the synthesizer recorded).
        X_train : DataFrame, optional
            The synthesizer's training rows (confidential); needed by the
            privacy check.
        X_holdout : DataFrame
            Real rows the synthesizer never saw (confidential).
        n_samples : int, optional
            Overrides the auditor's ``n_samples``.
        random_state : int, optional
            Overrides the auditor's ``random_state``.

        Returns
        -------
        AuditReport
        """
        checks = self._validated_checks()
        if synthesizer is None and synthetic is None:
            raise ValueError("give a fitted synthesizer or a synthetic table to audit.")
        if not isinstance(X_holdout, pd.DataFrame) or len(X_holdout) == 0:
            raise ValueError("X_holdout must be a non-empty pandas DataFrame of real rows not used for training.")
        if X_train is not None and not isinstance(X_train, pd.DataFrame):
            raise TypeError("X_train must be a pandas DataFrame.")
        needs = [n for n, c in checks if getattr(c, "requires_train", False)]
        if needs and X_train is None:
            raise MissingTrainingDataError(
                f"check(s) {needs} need the synthesizer's training rows (members of the membership attack): pass "
                "X_train, or drop those checks.")
        seed = self.random_state if random_state is None else random_state
        seed = int(seed) if seed is not None else int(np.random.SeedSequence().entropy % (2**31))
        start = time.perf_counter()
        if synthetic is None:
            n = n_samples or self.n_samples or self._persons(checks, X_train if X_train is not None else X_holdout)
            synthetic = synthesizer.sample(int(n), random_state=seed)
            source = "sampled from the synthesizer"
        else:
            if not isinstance(synthetic, pd.DataFrame):
                raise TypeError("synthetic must be a pandas DataFrame.")
            source = "given"
        schema = self.schema
        if schema is not None:
            from skdpsynth.base import resolve_schema

            schema = resolve_schema(schema)
        elif synthesizer is not None:
            cand = getattr(synthesizer, "schema_", None)
            if cand is not None and hasattr(cand, "validate") and getattr(cand, "public", False):
                schema = cand
        data = AuditData(synthetic=synthetic, holdout=X_holdout, train=X_train, schema=schema,
                         synthesizer=synthesizer, random_state=seed)
        results: dict[str, CheckResult] = {}
        for name, check in checks:
            try:
                res = check.evaluate(data)
            except Exception as exc:
                if self.on_error == "raise":
                    raise
                logger.warning("check %s raised %s: %s", name, type(exc).__name__, exc)
                res = CheckResult(name, float("nan"), False, None,
                                  f"{name}: the check could not run ({type(exc).__name__}: {exc})",
                                  {"error": f"{type(exc).__name__}: {exc}"})
            res.name = name
            results[name] = res
        report = AuditReport(
            results=results,
            synthesizer=synthesizer_record(synthesizer),
            seeds={"audit_random_state": seed,
                   "synthesizer_random_state": synthesizer_record(synthesizer).get("random_state")},
            data={"synthetic_source": source, "n_synthetic": int(len(synthetic)),
                  "n_train": None if X_train is None else int(len(X_train)), "n_holdout": int(len(X_holdout)),
                  "synthetic_sha256": _fingerprint(synthetic)},
            library_versions=library_versions(),
            timestamp=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            audit_id=uuid.uuid4().hex,
            elapsed_s=time.perf_counter() - start,
            checks={name: repr(c) for name, c in checks},
            synthetic=synthetic,
            holdout=X_holdout,
            schema=schema,
        )
        ledger = self.ledger
        if ledger is not None:
            if isinstance(ledger, (str, os.PathLike)):
                ledger = Ledger(ledger)
            entry = ledger.record_audit(report)
            report.ledger_entry = {"path": str(ledger.path), "seq": entry["seq"], "hash": entry["hash"]}
        return report

