"""Synthesizers: one private module per method, re-exported here (lazily: torch loads on first use)."""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "DPMarginalsSynthesizer": "skdpsynth.synthesizers._marginals",
    "NPGCSynthesizer": "skdpsynth.synthesizers._npgc",
    "DPHistogramSynthesizer": "skdpsynth.synthesizers._histogram",
    "MSTSynthesizer": "skdpsynth.synthesizers._mst",
    "DPCTGANSynthesizer": "skdpsynth.synthesizers._dpctgan",
    "PATEGANSynthesizer": "skdpsynth.synthesizers._pategan",
    "CTGANSynthesizer": "skdpsynth.synthesizers._ctgan",
    "TVAESynthesizer": "skdpsynth.synthesizers._ctgan",
    "CAPSSynthesizer": "skdpsynth.synthesizers._caps",
    "DPMarkovSynthesizer": "skdpsynth.synthesizers._markov",
    "DPHistSeqSynthesizer": "skdpsynth.synthesizers._histseq",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'skdpsynth.synthesizers' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
