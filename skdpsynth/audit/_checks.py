"""The PEARL checks, one module per responsibility (re-exported here).

* :mod:`._checks_validity` -- :class:`ValidityCheck` (schema and sequence well-formedness);
* :mod:`._checks_privacy` -- :class:`PrivacyGuaranteeCheck` (the formal guarantee) and
  :class:`PrivacyCheck` (nearest-neighbour membership attack, exact copies);
* :mod:`._checks_utility` -- :class:`UtilityCheck` (TSTR vs TRTR, classification or
  regression) and :class:`FairnessCheck` (subgroup recall);
* :mod:`._checks_tasks` -- :class:`SequenceTaskCheck` (GRU) and :class:`KnowledgeTracingCheck`
  (DKT / SAKT).

Each is a :class:`~skdpsynth.audit.BaseCheck`: thresholds are parameters (PEARL's
where the paper publishes them, documented defaults otherwise), ``evaluate``
returns a :class:`~skdpsynth.audit.CheckResult` and the check is a scikit-learn
scorer. Scores are "greater is better".

Tables are one row per person. Sequence data are long tables (one row per
event) named by ``id_col`` (learner), ``order_col`` (position or time) and
``event_col`` (the event; several columns form a joint event); the learner's
outcome is ``target`` / ``label_col``, constant within a learner. The privacy
and utility checks see a long table through order-free per-learner features
(event counts and length, :func:`skdpsynth.metrics.sequence_features`).
"""

from skdpsynth.audit._checks_privacy import PrivacyCheck, PrivacyGuaranteeCheck
from skdpsynth.audit._checks_tasks import KnowledgeTracingCheck, SequenceTaskCheck
from skdpsynth.audit._checks_utility import FairnessCheck, UtilityCheck
from skdpsynth.audit._checks_validity import ValidityCheck

__all__ = ["ValidityCheck", "PrivacyGuaranteeCheck", "PrivacyCheck", "UtilityCheck", "SequenceTaskCheck",
           "KnowledgeTracingCheck", "FairnessCheck"]
