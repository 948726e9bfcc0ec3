"""Pure metric functions on data: f(train, holdout, synthetic, ...) -> float | dict."""

from skdpsynth.metrics._quality import sdmetrics_metadata, sdmetrics_quality

__all__ = ["sdmetrics_quality", "sdmetrics_metadata"]
