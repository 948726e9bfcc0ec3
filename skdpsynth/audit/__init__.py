"""PEARL release audit: checks as scikit-learn scorers, ReleaseAuditor, AuditReport (+ Display), Ledger.

PEARL (Privacy-Equivalence Audit and Release Ledger; papers/pearl.md) approves a
synthetic release only when every applicable check passes -- the formal privacy
guarantee, validity, empirical privacy, predictive usefulness, task suitability
and (with protected attributes) subgroup fairness -- and records why each
rejected release fails.

The auditor needs only the synthesizer duck type ``sample`` / ``get_params`` /
``privacy_spent_`` (``budget_log_``, ``n_estimate_``): ``skdpsynth.synthesizers``
never imports this package.
"""

from skdpsynth.audit._auditor import ReleaseAuditor, pearl_checks
from skdpsynth.audit._base import (
    AuditData,
    AuditError,
    BaseCheck,
    CheckResult,
    HoldoutOverlapError,
    MissingTrainingDataError,
    UnknownColumnError,
)
from skdpsynth.audit._checks import (
    FairnessCheck,
    KnowledgeTracingCheck,
    PrivacyCheck,
    PrivacyGuaranteeCheck,
    SequenceTaskCheck,
    UtilityCheck,
    ValidityCheck,
)
from skdpsynth.audit._display import AuditReportDisplay
from skdpsynth.audit._ledger import Ledger, LedgerIntegrityError, redact
from skdpsynth.audit._privacy_attacks import BlackBoxAttack, Measurement, WhiteBoxAttack, register_statistics
from skdpsynth.audit._privacy_audit import PrivacyAuditResult, audit_privacy
from skdpsynth.audit._privacy_bounds import clopper_pearson, epsilon_lower_bound, mu_lower_bound
from skdpsynth.audit._privacy_canary import Neighbours, make_neighbours
from skdpsynth.audit._report import AuditReport
from skdpsynth.audit._spend import release_privacy

__all__ = [
    "AuditData",
    "AuditError",
    "AuditReport",
    "AuditReportDisplay",
    "BaseCheck",
    "BlackBoxAttack",
    "CheckResult",
    "FairnessCheck",
    "HoldoutOverlapError",
    "KnowledgeTracingCheck",
    "Ledger",
    "LedgerIntegrityError",
    "Measurement",
    "MissingTrainingDataError",
    "Neighbours",
    "PrivacyAuditResult",
    "PrivacyCheck",
    "PrivacyGuaranteeCheck",
    "ReleaseAuditor",
    "SequenceTaskCheck",
    "UnknownColumnError",
    "UtilityCheck",
    "ValidityCheck",
    "WhiteBoxAttack",
    "audit_privacy",
    "clopper_pearson",
    "epsilon_lower_bound",
    "make_neighbours",
    "mu_lower_bound",
    "pearl_checks",
    "register_statistics",
    "redact",
    "release_privacy",
]
