"""ReleaseAuditor: validate the inputs, sample once, run every check, approve or reject, log to the ledger."""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import time
import uuid
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone

from skdpsynth.audit._base import (
    AuditData,
    AuditError,
    BaseCheck,
    CheckResult,
    HoldoutOverlapError,
    MissingTrainingDataError,
    jsonable,
    public_verdict,
)
from skdpsynth.audit._ledger import Ledger
from skdpsynth.audit._pearl import TASKS, pearl_checks
from skdpsynth.audit._provenance import library_versions, synthesizer_record
from skdpsynth.audit._report import AuditReport
from skdpsynth.audit._spend import public_schema, release_privacy
from skdpsynth.metrics._fidelity import marginal_histograms
from skdpsynth.privacy._accounting import check_budget
from skdpsynth.privacy._threshold import VerdictAnswers
from skdpsynth.schema import resolve_schema

__all__ = ["ReleaseAuditor", "pearl_checks", "TASKS"]


def _fingerprint(frame: pd.DataFrame) -> str:
    return hashlib.sha256(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes()).hexdigest()


def shares_rows(X_train: pd.DataFrame, X_holdout: pd.DataFrame) -> bool:
    """Whether any holdout row is an exact duplicate of a training row (on the shared columns; rows hashed)."""
    cols = [c for c in X_holdout.columns if c in X_train.columns]
    if not cols or len(X_train) == 0:
        return False
    hold = pd.util.hash_pandas_object(X_holdout[cols], index=False).to_numpy()
    train = pd.util.hash_pandas_object(X_train[cols], index=False).to_numpy()
    return bool(np.isin(hold, train).any())


class ReleaseAuditor(BaseEstimator):
    """Run PEARL checks on one release and decide: approved only if every applicable check passes.

    Parameters
    ----------
    checks : list of (name, check)
        e.g. ``pearl_checks("classification", target="Target")``.
    ledger : None, str, PathLike or Ledger, default=None
        Where to append one hash-chained entry per audit.
    schema : TableSchema, optional
        Public schema shared with the checks (validity, distance scaling);
        default: the synthesizer's ``schema_`` when it is public. A schema is
        never read from the real rows.
    n_samples : int, optional
        Rows (learners) to sample from a synthesizer; default: its DP estimate
        ``n_estimate_`` of the number of people (the exact training size is
        private).
    on_error : {"fail", "raise"}, default="fail"
        A check that raises is recorded as failed with the error as its
        reason (fail closed), or the error propagates.
    random_state : int, default=0
        Seeds the sample drawn from a synthesizer and the checks' models.
    verdict_epsilon : float, optional
        Publish the verdicts of the checks that read confidential rows as noisy
        threshold tests: each such check with a DP rule (``dp_sensitivity``)
        recomputes its decision from noisy histograms costing an equal share of
        ``verdict_epsilon`` (pure DP under add/remove one person of the train
        and holdout rows); the cost goes in the ledger entry's
        ``audit_budget``. Default None: those verdicts stay confidential (the
        public copy of the ledger says a verdict exists, not what it is).
        A training person's total loss is the synthesizer's epsilon plus this.

    Examples
    --------
    >>> auditor = ReleaseAuditor(checks=pearl_checks("classification", target="Target"))  # doctest: +SKIP
    >>> report = auditor.audit(synth, X_train=train, X_holdout=holdout)                  # doctest: +SKIP
    >>> report.approved, report.public_reasons                                            # doctest: +SKIP
    """

    def __init__(self, checks, *, ledger=None, schema=None, n_samples=None, on_error="fail", random_state=0,
                 verdict_epsilon=None):
        self.checks = checks
        self.ledger = ledger
        self.schema = schema
        self.n_samples = n_samples
        self.on_error = on_error
        self.random_state = random_state
        self.verdict_epsilon = verdict_epsilon

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
        check_budget(self.verdict_epsilon, 0.0, name="verdict_epsilon")
        return [(n, clone(c) if isinstance(c, BaseEstimator) else c) for n, c in checks]

    @staticmethod
    def _check_tables(synthesizer: Any, synthetic: Any, X_train: Any, X_holdout: Any) -> None:
        if synthesizer is None and synthetic is None:
            raise ValueError("give a fitted synthesizer or a synthetic table to audit.")
        if not isinstance(X_holdout, pd.DataFrame) or len(X_holdout) == 0:
            raise ValueError("X_holdout must be a non-empty pandas DataFrame of real rows not used for training.")
        if X_train is not None and not isinstance(X_train, pd.DataFrame):
            raise TypeError("X_train must be a pandas DataFrame.")
        if synthetic is not None and not isinstance(synthetic, pd.DataFrame):
            raise TypeError("synthetic must be a pandas DataFrame.")

    def _schema(self, synthesizer: Any) -> Any:
        if self.schema is not None:
            return resolve_schema(self.schema)
        return public_schema(synthesizer) if synthesizer is not None else None

    def _preflight(self, checks: list, X_train: Any, X_holdout: pd.DataFrame, schema: Any,
                   allow_shared_rows: bool) -> None:
        """Everything that must hold before any work: columns, training rows, a clean holdout."""
        for _, check in checks:
            if hasattr(check, "check_inputs"):
                check.check_inputs(X_holdout, schema)
        needs = [n for n, c in checks if getattr(c, "requires_train", False)]
        if needs and X_train is None:
            raise MissingTrainingDataError(
                f"check(s) {needs} need the synthesizer's training rows (members of the membership attack): pass "
                "X_train, or drop those checks.")
        if X_train is not None and not allow_shared_rows and shares_rows(X_train, X_holdout):
            raise HoldoutOverlapError(
                "X_holdout shares rows with X_train (exact duplicate rows): the holdout must be people the "
                "synthesizer never saw, or the membership attack compares members with members. Split by person "
                "before fitting (e.g. train_test_split on one row per person, GroupShuffleSplit on learner ids). "
                "If distinct people can share an identical row in this table (a low-entropy table), pass "
                "allow_shared_rows=True.")

    @staticmethod
    def _release(synthesizer: Any, synthetic: Any, n: int | None, seed: int,
                 spend: dict | None) -> tuple[pd.DataFrame, str, bool, int | None]:
        """The table to audit, where it came from, whether its size is public, the DP size estimate."""
        n_est = getattr(synthesizer, "n_estimate_", None) if synthesizer is not None else None
        if n_est is None and spend is not None:
            n_est = spend.get("n_estimate")
        if synthetic is not None:
            return synthetic, "given", n_est is not None and len(synthetic) == int(n_est), n_est
        if n is None:
            if n_est is None:
                raise AuditError(
                    f"{type(synthesizer).__name__} has no n_estimate_ (a DP estimate of the number of people) to size "
                    "the release: pass n_samples= (a public size; len(X_train) would reveal the private n).")
            n = int(n_est)
        synthetic = synthesizer.sample(int(n), random_state=seed)
        return synthetic, "sampled from the synthesizer", n_est is not None and int(n) == int(n_est), n_est

    def _run(self, checks: list[tuple[str, BaseCheck]], data: AuditData) -> dict[str, CheckResult]:
        results: dict[str, CheckResult] = {}
        for name, check in checks:
            try:
                res = check.evaluate(data)
            except Exception as exc:
                if self.on_error == "raise":
                    raise
                # the message may quote confidential data, and whether it fails may depend on one person: nothing
                # is logged or warned; the confidential reason says it
                res = CheckResult(name, float("nan"), False, None,
                                  f"{name}: the check could not run ({type(exc).__name__}: {exc})",
                                  {"error": f"{type(exc).__name__}: {exc}"}, confidential=["error"],
                                  public_reason=f"{name}: the check could not run ({type(exc).__name__})")
            res.name = name
            results[name] = res
        return results

    def _publish(self, checks: list[tuple[str, BaseCheck]], data: AuditData,
                 results: dict[str, CheckResult]) -> dict | None:
        """Noisy verdicts of the confidential checks with a DP rule (the set decided from public facts); the budget."""
        if self.verdict_epsilon is None:
            return None
        chosen = [(n, c) for n, c in checks if results[n].uses_confidential_data
                  and getattr(c, "dp_sensitivity", None) is not None and c.supports_dp_verdict(data)]
        if not chosen:
            return None
        answers, share = VerdictAnswers(self.verdict_epsilon), self.verdict_epsilon / len(chosen)
        for name, check in chosen:
            try:
                applicable, passed, reason = check.dp_verdict(data, answers, share)
            except Exception:
                if self.on_error == "raise":
                    raise
                applicable, passed, reason = True, False, f"{name}: failed (its DP rule could not be computed)"
            results[name].verdict = public_verdict("dp", applicable, passed, reason, epsilon=share,
                                                   sensitivity=check.dp_sensitivity)
        return answers.budget()

    def audit(
        self,
        synthesizer: Any = None,
        *,
        synthetic: pd.DataFrame | None = None,
        X_train: pd.DataFrame | None = None,
        X_holdout: pd.DataFrame,
        n_samples: int | None = None,
        privacy: Any = None,
        random_state: int | None = None,
        allow_shared_rows: bool = False,
    ) -> AuditReport:
        """Audit a fitted synthesizer (sampled once) or a ready synthetic table.

        Before any work the inputs are checked: every column a check names
        (target, protected attributes, positive class, long-table columns) must
        be in ``X_holdout`` (:class:`UnknownColumnError`), and ``X_holdout``
        must not overlap ``X_train``: no shared row (:class:`HoldoutOverlapError`).

        Parameters
        ----------
        synthesizer : fitted synthesizer, optional
            Duck type: ``sample(n, random_state=...)``, ``get_params``,
            ``privacy_spent_`` (and ``budget_log_``, ``n_estimate_``), recorded
            in the ledger.
        synthetic : DataFrame, optional
            A ready release; give this or ``synthesizer`` (both: the table is
            audited and the synthesizer recorded).
        X_train : DataFrame, optional
            The synthesizer's training rows (confidential); needed by the
            privacy check.
        X_holdout : DataFrame
            Real rows the synthesizer never saw (confidential).
        n_samples : int, optional
            Overrides the auditor's ``n_samples`` (default: ``n_estimate_``).
        privacy : dict or path, optional
            The guarantee of a ``synthetic`` table audited without its
            synthesizer: the budget JSON written by ``skdpsynth synthesize``
            beside the output (see :func:`release_privacy`).
        random_state : int, optional
            Overrides the auditor's ``random_state``.
        allow_shared_rows : bool, default=False
            Accept holdout rows identical to training rows (only for tables
            where distinct people can share a row).

        Returns
        -------
        AuditReport
        """
        checks = self._validated_checks()
        self._check_tables(synthesizer, synthetic, X_train, X_holdout)
        schema = self._schema(synthesizer)
        spend = release_privacy(synthesizer, privacy)
        self._preflight(checks, X_train, X_holdout, schema, allow_shared_rows)
        seed = self.random_state if random_state is None else random_state
        seed = int(seed) if seed is not None else int(np.random.SeedSequence().entropy % (2**31))
        start = time.perf_counter()
        n = n_samples if n_samples is not None else self.n_samples
        synthetic, source, size_public, n_est = self._release(synthesizer, synthetic, n, seed, spend)
        data = AuditData(synthetic=synthetic, holdout=X_holdout, train=X_train, schema=schema,
                         synthesizer=synthesizer, random_state=seed, privacy=spend, release_size_public=size_public)
        results = self._run(checks, data)
        audit_budget = self._publish(checks, data, results)
        try:
            artifacts = {"marginals": marginal_histograms(X_holdout, synthetic, schema=schema)}
        except (TypeError, ValueError):  # plots are optional (and the report without them says nothing more)
            artifacts = {}
        rec = synthesizer_record(synthesizer)
        report = AuditReport(
            results=results, synthesizer=rec, privacy=spend,
            seeds={"audit_random_state": seed, "synthesizer_random_state": rec.get("random_state")},
            data={"synthetic_source": source, "n_synthetic": int(len(synthetic)),
                  "release_size": "dp_estimate" if size_public else "chosen",
                  "n_estimate": None if n_est is None else int(n_est),
                  "n_train": None if X_train is None else int(len(X_train)), "n_holdout": int(len(X_holdout)),
                  "synthetic_sha256": _fingerprint(synthetic)},
            library_versions=library_versions(),
            timestamp=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            audit_id=uuid.uuid4().hex, elapsed_s=time.perf_counter() - start,
            checks={name: {"class": type(c).__name__,
                           "params": jsonable(c.get_params(deep=False)) if hasattr(c, "get_params") else {}}
                    for name, c in checks},
            synthetic=synthetic, schema=schema, artifacts=artifacts, audit_budget=audit_budget,
        )
        self._log(report)
        return report

    def _log(self, report: AuditReport) -> None:
        ledger = self.ledger
        if ledger is None:
            return
        if isinstance(ledger, (str, os.PathLike)):
            ledger = Ledger(ledger)
        entry = ledger.record_audit(report)
        report.ledger_entry = {"path": str(ledger.path), "seq": entry["seq"], "hash": entry["hash"]}
