"""Pure metric functions on data: f(train, holdout, synthetic, ...) -> float | dict."""

from skdpsynth.metrics._encoding import (
    column_kinds,
    default_classifier,
    default_regressor,
    gower_encode,
    make_tabular_pipeline,
)
from skdpsynth.metrics._fairness import fairness_gaps, subgroup_recalls
from skdpsynth.metrics._fidelity import ajs, js_divergence, marginal_histograms
from skdpsynth.metrics._privacy import (
    dcr_share,
    exact_copy_rates,
    membership_inference_auc,
    nearest_neighbour_privacy,
)
from skdpsynth.metrics._quality import sdmetrics_metadata, sdmetrics_quality
from skdpsynth.metrics._regression import target_task, tstr_regression_scores
from skdpsynth.metrics._utility import (
    discriminator_auc,
    fit_predict_classifier,
    majority_floor_f1,
    outcome_coverage,
    tstr_scores,
)
from skdpsynth.metrics._validity import schema_validity, sequence_features, sequence_validity

__all__ = [
    "sdmetrics_quality",
    "sdmetrics_metadata",
    "ajs",
    "js_divergence",
    "marginal_histograms",
    "column_kinds",
    "default_classifier",
    "default_regressor",
    "gower_encode",
    "make_tabular_pipeline",
    "dcr_share",
    "exact_copy_rates",
    "membership_inference_auc",
    "nearest_neighbour_privacy",
    "discriminator_auc",
    "fit_predict_classifier",
    "majority_floor_f1",
    "outcome_coverage",
    "tstr_scores",
    "tstr_regression_scores",
    "target_task",
    "fairness_gaps",
    "subgroup_recalls",
    "schema_validity",
    "sequence_features",
    "sequence_validity",
]
