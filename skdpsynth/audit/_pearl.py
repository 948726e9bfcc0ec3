"""pearl_checks: the PEARL check set for a task, with PEARL's (or documented default) thresholds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skdpsynth.audit._base import BaseCheck
from skdpsynth.audit._checks import (
    FairnessCheck,
    KnowledgeTracingCheck,
    PrivacyCheck,
    PrivacyGuaranteeCheck,
    SequenceTaskCheck,
    UtilityCheck,
    ValidityCheck,
)

__all__ = ["pearl_checks", "TASKS"]

TASKS = ("classification", "regression", "sequence", "knowledge_tracing")


def _guarantee(on: bool, epsilon_max: float, delta_max: float) -> list[tuple[str, BaseCheck]]:
    return [("privacy_guarantee", PrivacyGuaranteeCheck(epsilon_max=epsilon_max, delta_max=delta_max))] if on else []


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
    privacy_guarantee: bool = True,
    epsilon_max: float = 10.0,
    delta_max: float = 1e-5,
) -> list[tuple[str, BaseCheck]]:
    """The PEARL check set for a task, with PEARL's (or documented default) thresholds.

    Every set starts with :class:`PrivacyGuaranteeCheck` (on by default): the
    release must carry a formal, publishable DP guarantee within
    ``epsilon_max`` / ``delta_max``; an empirical attack alone never approves
    a release.

    Parameters
    ----------
    task : {"classification", "regression", "sequence", "knowledge_tracing"}
        ``classification``: validity, privacy, utility (+ fairness when
        ``protected`` is given); a numeric target is detected and audited as
        regression. ``regression``: validity, privacy, utility with a
        regressor (R^2 / MAE). ``sequence`` (long event table with one outcome
        per learner): validity of the sequences, privacy and utility on
        order-free per-learner features, and the GRU sequence task.
        ``knowledge_tracing`` (long response table): validity, privacy, and
        DKT + SAKT next-response suitability (+ utility when ``target`` names
        a per-learner outcome).
    target : str
        Outcome column (per row, or per learner for sequences).
    protected : str or list of str, optional
        Protected attributes for the fairness check (classification tables).
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
    privacy_guarantee : bool, default=True
        Include :class:`PrivacyGuaranteeCheck`. Leave it on for a release;
        turn it off only to study the empirical checks on crafted tables.
    epsilon_max, delta_max : float
        The guarantee's limits.

    Returns
    -------
    list of (name, check)
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}.")
    rs = random_state
    checks = _guarantee(privacy_guarantee, epsilon_max, delta_max)
    if task in ("classification", "regression"):
        if target is None:
            raise ValueError(f"pearl_checks({task!r}) needs target=<outcome column>.")
        if protected and task == "regression":
            raise ValueError("the fairness check compares subgroup recalls of a classifier; it does not apply to "
                             "task='regression' (leave protected out).")
        checks += [
            ("validity", ValidityCheck(schema=schema)),
            ("privacy", PrivacyCheck(schema=schema, random_state=rs)),
            ("utility", UtilityCheck(target=target, task="auto" if task == "classification" else "regression",
                                     random_state=rs)),
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
        return checks + [
            ("validity", ValidityCheck(schema=schema, id_col=id_col, order_col=order_col, event_col=event_col,
                                       label_col=target)),
            ("privacy", PrivacyCheck(id_col=id_col, event_col=event_col, label_col=target, random_state=rs)),
            ("utility", UtilityCheck(target=target, id_col=id_col, event_col=event_col, random_state=rs)),
            ("sequence_task", SequenceTaskCheck(id_col=id_col, order_col=order_col, event_col=event_col,
                                                label_col=target, random_state=rs)),
        ]
    events = [skill_col, correct_col]
    checks += [
        ("validity", ValidityCheck(schema=schema, id_col=id_col, order_col=order_col, event_col=events,
                                   vocabulary={correct_col: [0, 1]}, label_col=target)),
        ("privacy", PrivacyCheck(id_col=id_col, event_col=events, label_col=target, random_state=rs)),
    ]
    if target is not None:
        checks.append(("utility", UtilityCheck(target=target, id_col=id_col, event_col=events, random_state=rs)))
    checks.append(("knowledge_tracing", KnowledgeTracingCheck(id_col=id_col, order_col=order_col, skill_col=skill_col,
                                                              correct_col=correct_col, random_state=rs)))
    return checks
