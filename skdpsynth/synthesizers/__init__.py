"""Synthesizers: one module per method."""

from skdpsynth.synthesizers._marginals import DPMarginalsSynthesizer

__all__ = ["DPMarginalsSynthesizer"]
