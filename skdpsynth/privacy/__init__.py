"""Privacy core: mechanisms, budget records, composition and accounting.

Neighbouring relation: add or remove all records of one person
(:data:`NEIGHBOURING`).
"""

from skdpsynth.privacy._accounting import (
    NEIGHBOURING,
    BudgetAccountant,
    BudgetRecord,
    PrivacySpent,
    approx_dp_to_zcdp,
    check_budget,
    compose,
    zcdp_to_approx_dp,
)
from skdpsynth.privacy._domain import estimate_schema, plan_schema_cost
from skdpsynth.privacy._dpsgd import dpsgd_privacy_report
from skdpsynth.privacy._mechanisms import (
    exponential_mechanism,
    gaussian_mechanism,
    gaussian_sigma,
    geometric_mechanism,
    laplace_mechanism,
)

__all__ = [
    "NEIGHBOURING",
    "BudgetAccountant",
    "BudgetRecord",
    "PrivacySpent",
    "approx_dp_to_zcdp",
    "check_budget",
    "compose",
    "zcdp_to_approx_dp",
    "estimate_schema",
    "plan_schema_cost",
    "dpsgd_privacy_report",
    "exponential_mechanism",
    "gaussian_mechanism",
    "gaussian_sigma",
    "geometric_mechanism",
    "laplace_mechanism",
]
