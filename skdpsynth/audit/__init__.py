"""PEARL release audit: checks as scikit-learn scorers, ReleaseAuditor, AuditReport, Ledger.

PEARL (Privacy-Equivalence Audit and Release Ledger; papers/pearl.md) approves a
synthetic release only when every applicable check passes -- validity,
privacy, predictive usefulness, task suitability and (with protected
attributes) subgroup fairness -- and records why each rejected release fails.

The auditor needs only the synthesizer duck type ``sample`` / ``get_params`` /
``privacy_spent_`` (``budget_log_``): ``skdpsynth.synthesizers`` never imports
this package.
"""

from skdpsynth.audit._auditor import ReleaseAuditor, pearl_checks
from skdpsynth.audit._base import AuditData, BaseCheck, CheckResult, MissingTrainingDataError
from skdpsynth.audit._checks import (
    FairnessCheck,
    KnowledgeTracingCheck,
    PrivacyCheck,
    SequenceTaskCheck,
    UtilityCheck,
    ValidityCheck,
)
from skdpsynth.audit._ledger import Ledger, LedgerIntegrityError
from skdpsynth.audit._report import AuditReport

__all__ = [
    "AuditData",
    "AuditReport",
    "BaseCheck",
    "CheckResult",
    "FairnessCheck",
    "KnowledgeTracingCheck",
    "Ledger",
    "LedgerIntegrityError",
    "MissingTrainingDataError",
    "PrivacyCheck",
    "ReleaseAuditor",
    "SequenceTaskCheck",
    "UtilityCheck",
    "ValidityCheck",
    "pearl_checks",
]
