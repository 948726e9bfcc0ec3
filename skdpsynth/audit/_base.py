"""Audit data, check results and the base class of checks (estimators and sklearn scorers)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

__all__ = ["AuditData", "CheckResult", "BaseCheck", "MissingTrainingDataError", "jsonable"]


class MissingTrainingDataError(ValueError):
    """A check needs the synthesizer's training rows (e.g. membership inference) and was given none."""


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
        The public schema, if known.
    synthesizer : object or None
        The fitted synthesizer (duck type: ``sample``, ``get_params``,
        ``privacy_spent_``), when the release came from one.
    random_state : int
        Seed shared by the checks' own randomness (models, subsamples).
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
        The decision rule's thresholds.
    reason : str
        One readable sentence: why it failed, or what it found when it passed.
    details : dict
        Raw numbers (JSON-friendly).
    applicable : bool
        False when the check does not apply (e.g. no protected attribute);
        it then does not count towards approval.
    confidential : list of str
        Keys of ``details`` computed on confidential (real) data.
    artifacts : dict
        Arrays for plots; not written to the ledger.
    elapsed_s : float
        Wall time of the check.
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (without the plot artifacts)."""
        return jsonable({
            "name": self.name, "score": self.score, "passed": self.passed, "applicable": self.applicable,
            "threshold": self.threshold, "reason": self.reason, "details": self.details,
            "confidential_fields": list(self.confidential), "elapsed_s": self.elapsed_s,
        })


def _as_list(cols: Any) -> list[str]:
    if cols is None:
        return []
    return [cols] if isinstance(cols, str) else list(cols)


class BaseCheck(BaseEstimator):
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
    """

    #: default name in an audit
    name: str = "check"
    #: whether the check needs the synthesizer's training rows
    requires_train: bool = False

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

    def _evaluate(self, data: AuditData) -> CheckResult:  # pragma: no cover - abstract
        raise NotImplementedError

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
                         random_state=seed if isinstance(seed, int) else 0,
                         schema=getattr(synthesizer, "schema_", None))
        result = self.evaluate(data)
        return float(result.score) if result.applicable else float("nan")
