"""Privacy core: the one door to the private data.

Everything that draws noise from, or measures, private data lives here: the
noise source (:class:`NoiseSource`, secure by default), the mechanisms (each
states its sensitivity and charges the accountant before drawing), the
accountant and composition, DP domain estimation, DP-SGD accounting, and the
post-processing of noisy statistics.

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
    discrete_gaussian_mechanism,
    dp_count,
    exponential_mechanism,
    exponential_mechanism_zcdp,
    gaussian_mechanism,
    gaussian_sigma,
    geometric_mechanism,
    geometric_variance,
    laplace_mechanism,
    stability_histogram,
    stability_threshold,
)
from skdpsynth.privacy._noise import NoiseSource
from skdpsynth.privacy._postprocess import normalise_counts, project_to_simplex
from skdpsynth.privacy._table import PrivateTable

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
    "NoiseSource",
    "PrivateTable",
    "discrete_gaussian_mechanism",
    "dp_count",
    "exponential_mechanism",
    "exponential_mechanism_zcdp",
    "gaussian_mechanism",
    "normalise_counts",
    "project_to_simplex",
    "stability_histogram",
    "stability_threshold",
    "gaussian_sigma",
    "geometric_mechanism",
    "geometric_variance",
    "laplace_mechanism",
]
