"""Audit data, check results, audit errors and the base class of checks (estimators and sklearn scorers)."""

from __future__ import annotations

import difflib
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from skdpsynth.audit._spend import public_schema, release_privacy
from skdpsynth.exceptions import SkdpsynthError

__all__ = ["AuditData", "CheckResult", "BaseCheck", "AuditError", "MissingTrainingDataError", "HoldoutOverlapError",
           "UnknownColumnError", "jsonable", "public_verdict"]


class AuditError(SkdpsynthError, ValueError):
    """The audit cannot run as asked (raised before any check runs)."""


class MissingTrainingDataError(AuditError):
    """A check needs the synthesizer's training rows (e.g. membership inference) and was given none."""


class HoldoutOverlapError(AuditError):
    """``X_holdout`` shares rows with ``X_train``: the holdout must be people the synthesizer never saw."""


class UnknownColumnError(AuditError):
    """A check names a column (target, protected attribute, ...) or a class that is not in the data."""


def jsonable(obj: Any) -> Any:
    """A JSON-friendly copy: numpy scalars unwrapped, arrays to lists, NaN/inf to strings, keys to str."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if hasattr(obj, "to_dict"):
        return jsonable(obj.to_dict())
    return repr(obj)


@dataclass
class AuditData:
    """What the checks of one audit share.

    Attributes
    ----------
    synthetic : DataFrame
        The release under audit (sampled once and shared by every check).
    holdout : DataFrame
        Real rows the synthesizer never saw (confidential): the test set and
        the membership attack's non-members.
    train : DataFrame or None
        The synthesizer's training rows (confidential): the attack's members
        and the train-on-real reference. Checks that need them say so.
    schema : TableSchema or None
        The public schema, if known (never one read from the real rows).
    synthesizer : object or None
        The fitted synthesizer (duck type: ``sample``, ``get_params``,
        ``privacy_spent_``), when the release came from one.
    random_state : int
        Seed shared by the checks' own randomness (models, subsamples).
    privacy : dict or None
        The release's formal guarantee (see :func:`skdpsynth.audit.release_privacy`).
    release_size_public : bool
        True when the release's size is a DP estimate (``n_estimate_``), so
        counts of synthetic rows reveal nothing; otherwise they are treated as
        confidential (the size may be the exact private n).
    cache : dict
        Results shared between checks (e.g. the TSTR predictions the utility and
        fairness checks both use).
    """

    synthetic: pd.DataFrame
    holdout: pd.DataFrame
    train: pd.DataFrame | None = None
    schema: Any = None
    synthesizer: Any = None
    random_state: int = 0
    privacy: dict | None = None
    release_size_public: bool = False
    cache: dict = field(default_factory=dict, repr=False)


@dataclass
class CheckResult:
    """The outcome of one check.

    Attributes
    ----------
    name : str
        The check's name in the audit.
    score : float
        Greater is better (each check documents its score).
    passed : bool
        Whether the release passes (always True when not ``applicable``).
    threshold : Any
        The decision rule's thresholds (public).
    reason : str
        One readable sentence: why it failed, or what it found when it passed
        (may quote confidential numbers).
    details : dict
        Raw numbers (JSON-friendly).
    applicable : bool
        False when the check does not apply (e.g. no protected attribute);
        it then does not count towards approval.
    confidential : list of str
        Keys of ``details`` computed on confidential (real) data.
    artifacts : dict
        Aggregates for plots; never written to the ledger or the JSON report.
    elapsed_s : float
        Wall time of the check.
    public_reason : str
        The reason without confidential numbers: which rule failed (or that
        the check passed). Default: the check's name and verdict. It still
        tells pass from fail, so it is published only as part of ``verdict``.
    uses_confidential_data : bool, default=True
        Whether the result depends on confidential data. It must itself be
        decided from public inputs only (the release, the schema, the
        parameters). When True, everything the check found -- ``score``,
        ``passed``, ``applicable``, ``reason``, ``public_reason``, ``details``,
        ``elapsed_s`` -- is a confidential field of the ledger entry.
    verdict : dict
        What the ledger's public copy says about this check (set by
        :class:`ReleaseAuditor`): ``source`` (``"public"``: the result uses no
        confidential data; ``"dp"``: recomputed from charged noisy answers;
        ``"confidential"``: not published), ``applicable``, ``passed`` and
        ``public_reason`` (None unless published), ``epsilon`` (its cost) and
        ``sensitivity`` (the statement of what one person changes).
    """

    name: str
    score: float
    passed: bool
    threshold: Any
    reason: str
    details: dict = field(default_factory=dict)
    applicable: bool = True
    confidential: list = field(default_factory=list)
    artifacts: dict = field(default_factory=dict, repr=False)
    elapsed_s: float = 0.0
    public_reason: str = ""
    uses_confidential_data: bool = True
    verdict: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.public_reason:
            if not self.uses_confidential_data:
                self.public_reason = self.reason
            else:
                verdict = "not applicable" if not self.applicable else ("passed" if self.passed else "failed")
                self.public_reason = f"{self.name}: {verdict} (details confidential)"
        if not self.verdict and not self.uses_confidential_data:
            self.verdict = public_verdict("public", self.applicable, self.passed, self.public_reason)
        elif not self.verdict:
            self.verdict = public_verdict("confidential")

    def confidential_paths(self) -> list[str]:
        """Dotted paths, relative to this result's dict, of the fields computed on confidential data.

        The list depends on ``uses_confidential_data`` alone (a public fact),
        so a published ledger's structure does not depend on the private rows.
        """
        if self.uses_confidential_data:
            return list(_FOUND)
        # wall time is a side channel of whatever else ran in the process: never published
        return [f"details.{k}" for k in self.confidential] + ["elapsed_s"]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (without the plot artifacts)."""
        return jsonable({
            "name": self.name, "score": self.score, "passed": self.passed, "applicable": self.applicable,
            "threshold": self.threshold, "reason": self.reason, "public_reason": self.public_reason,
            "details": self.details, "confidential_fields": list(self.confidential),
            "uses_confidential_data": self.uses_confidential_data, "elapsed_s": self.elapsed_s,
            "verdict": self.verdict,
        })


#: what a check found: all of it is confidential when the check reads confidential data
_FOUND = ("score", "passed", "applicable", "reason", "public_reason", "details", "confidential_fields", "elapsed_s")


def public_verdict(source: str, applicable: bool | None = None, passed: bool | None = None,
                   public_reason: str | None = None, *, epsilon: float = 0.0,
                   sensitivity: str | None = None) -> dict[str, Any]:
    """A check's verdict as the ledger's public copy shows it (always the same keys).

    ``source`` is ``"public"`` (computed from public inputs), ``"dp"``
    (recomputed from charged noisy answers) or ``"confidential"`` (not
    published: ``applicable``, ``passed`` and ``public_reason`` are None).
    """
    if source not in ("public", "dp", "confidential"):
        raise ValueError(f"unknown verdict source {source!r}.")
    shown = source != "confidential"
    return {"source": source, "applicable": bool(applicable) if shown else None,
            "passed": bool(passed) if shown else None, "public_reason": public_reason if shown else None,
            "epsilon": float(epsilon), "sensitivity": sensitivity}


def _as_list(cols: Any) -> list[str]:
    if cols is None:
        return []
    return [cols] if isinstance(cols, str) else list(cols)


def _suggest(name: Any, options: Iterable[Any]) -> str:
    close = difflib.get_close_matches(str(name), [str(o) for o in options], n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def require_columns(check: Any, frame: pd.DataFrame, roles: dict[str, Any]) -> None:
    """Raise :class:`UnknownColumnError` naming each role's column that ``frame`` lacks, and the columns it has.

    ``roles`` maps a role (``"target"``, ``"protected"``, ...) to a column name
    or a list of names (None: not used).
    """
    available = [str(c) for c in frame.columns]
    problems = []
    for role, cols in roles.items():
        for col in _as_list(cols):
            if col not in frame.columns:
                problems.append(f"{role} column {col!r} is not in the data; {_suggest(col, available)}".rstrip())
    if problems:
        shown = available[:40] + (["..."] if len(available) > 40 else [])
        raise UnknownColumnError(f"{type(check).__name__}: " + "; ".join(problems) + f". Available columns: {shown}.")


def require_label(check: Any, label: Any, values: Iterable[Any], *, role: str, column: str,
                  public: bool = True) -> None:
    """Raise :class:`UnknownColumnError` when ``label`` is not among ``values`` (compared as text).

    ``public=False``: the values were read from confidential rows; the message
    then quotes none of them (nor a close match).
    """
    values = sorted({str(v) for v in values})
    if str(label) in values:
        return
    if not public:
        raise UnknownColumnError(
            f"{type(check).__name__}: {role} {label!r} is not a value of {column!r} in the holdout (its values are "
            "confidential and not quoted); give a schema that lists the column's categories to see them.")
    raise UnknownColumnError(
        f"{type(check).__name__}: {role} {label!r} is not a value of {column!r}; {_suggest(label, values)}"
        f"its values: {values[:40]}.")


class BaseCheck(BaseEstimator, ABC):
    """Base of the PEARL checks.

    A check is a small estimator: its thresholds are parameters (``get_params``,
    ``clone`` and ``repr`` work), ``evaluate(AuditData) -> CheckResult`` runs it,
    and calling it as ``check(estimator, X, y=None)`` makes it a scikit-learn
    scorer: ``estimator`` is a fitted synthesizer (or a fitted
    :class:`~skdpsynth.tstr.TSTRClassifier`, whose synthesizer is used), ``X``
    (with ``y`` joined) is the real holdout; the check samples a release of
    ``len(X)`` rows (learners for sequence checks), evaluates it and returns the
    score (NaN when not applicable). Nothing is fitted on ``X`` beyond the
    check's own evaluation models. Checks that need the training rows raise
    :class:`MissingTrainingDataError` as scorers.

    Subclasses implement ``_evaluate(data) -> CheckResult`` and may override
    ``check_inputs(holdout, schema)``, which :class:`ReleaseAuditor` calls
    before any work to reject misspelled columns.
    """

    #: default name in an audit
    name: str = "check"
    #: whether the check needs the synthesizer's training rows
    requires_train: bool = False
    #: what one person changes in the noisy answers of :meth:`dp_verdict` (None: the check has no DP rule)
    dp_sensitivity: str | None = None

    def evaluate(self, data: AuditData) -> CheckResult:
        """Run the check on shared audit data."""
        if self.requires_train and data.train is None:
            raise MissingTrainingDataError(
                f"{type(self).__name__} needs the synthesizer's training rows (the members of the membership "
                "attack): pass X_train to ReleaseAuditor.audit. As a cross-validation scorer it cannot see the "
                "training fold; use it through ReleaseAuditor instead.")
        start = time.perf_counter()
        result = self._evaluate(data)
        result.elapsed_s = time.perf_counter() - start
        return result

    def check_inputs(self, holdout: pd.DataFrame, schema: Any = None) -> None:
        """Reject columns or labels that are not in the data (before any work); no-op by default."""

    def supports_dp_verdict(self, data: AuditData) -> bool:
        """Whether :meth:`dp_verdict` applies to these inputs, decided from public facts only (schema, params)."""
        return self.dp_sensitivity is not None

    def dp_verdict(self, data: AuditData, answers: Any, epsilon: float) -> tuple[bool, bool, str]:
        """The check's rule recomputed from noisy answers: ``(applicable, passed, public_reason)``.

        ``answers`` is a :class:`skdpsynth.privacy._threshold.VerdictAnswers`;
        the check spends exactly ``epsilon`` through it and uses its confidential
        rows only to build the per-person cells it hands over. Only checks with
        a ``dp_sensitivity`` implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} has no DP rule for its verdict.")

    @abstractmethod
    def _evaluate(self, data: AuditData) -> CheckResult:
        """The check's measurement and verdict on ``data``."""

    def _id_col(self) -> str | None:
        return getattr(self, "id_col", None)

    def n_persons(self, frame: pd.DataFrame) -> int:
        """Rows, or learners when the check reads a long table (``id_col``)."""
        id_col = self._id_col()
        return int(frame[id_col].nunique()) if id_col is not None and id_col in frame.columns else len(frame)

    def __call__(self, estimator: Any, X: Any, y: Any = None) -> float:
        """Scorer protocol: sample from the fitted ``estimator`` and score against ``X`` (real holdout)."""
        synthesizer = getattr(estimator, "synthesizer_", estimator)
        if not hasattr(synthesizer, "sample"):
            raise TypeError(f"{type(self).__name__} scores fitted synthesizers (with a 'sample' method); got "
                            f"{type(estimator).__name__}.")
        if self.requires_train:
            self.evaluate(AuditData(synthetic=pd.DataFrame(), holdout=pd.DataFrame()))  # raises the clear error
        holdout = X if isinstance(X, pd.DataFrame) else pd.DataFrame(X)
        if y is not None:
            name = getattr(y, "name", None) or getattr(self, "target", None) or "y"
            if name in holdout.columns:
                raise ValueError(f"cannot join y as column {name!r}: X already has it.")
            holdout = holdout.assign(**{name: np.asarray(y)})
        seed = getattr(self, "random_state", 0)
        synthetic = synthesizer.sample(self.n_persons(holdout), random_state=seed)
        data = AuditData(synthetic=synthetic, holdout=holdout, synthesizer=synthesizer,
                         random_state=seed if isinstance(seed, int) else 0, schema=public_schema(synthesizer),
                         privacy=release_privacy(synthesizer))
        result = self.evaluate(data)
        return float(result.score) if result.applicable else float("nan")
