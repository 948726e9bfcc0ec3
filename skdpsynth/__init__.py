"""skdpsynth: differentially private synthetic learner data, the scikit-learn way.

Public names are imported lazily so that ``import skdpsynth`` does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "TableSchema": "skdpsynth.schema",
    "ColumnSpec": "skdpsynth.schema",
    "infer_schema": "skdpsynth.schema",
    "BaseSynthesizer": "skdpsynth.base",
    "BaseTabularSynthesizer": "skdpsynth.base",
    "PrivacyBudgetError": "skdpsynth.exceptions",
    "SchemaError": "skdpsynth.exceptions",
    "NotFittedError": "skdpsynth.exceptions",
    "PrivacyLeakWarning": "skdpsynth.exceptions",
    "SkdpsynthError": "skdpsynth.exceptions",
    "DPMarginalsSynthesizer": "skdpsynth.synthesizers",
    "NPGCSynthesizer": "skdpsynth.synthesizers",
    "DPHistogramSynthesizer": "skdpsynth.synthesizers",
    "MSTSynthesizer": "skdpsynth.synthesizers",
    "DPCTGANSynthesizer": "skdpsynth.synthesizers",
    "PATEGANSynthesizer": "skdpsynth.synthesizers",
    "CTGANSynthesizer": "skdpsynth.synthesizers",
    "TVAESynthesizer": "skdpsynth.synthesizers",
    "CAPSSynthesizer": "skdpsynth.synthesizers",
    "DPMarkovSynthesizer": "skdpsynth.synthesizers",
    "DPHistSeqSynthesizer": "skdpsynth.synthesizers",
    "TSTRClassifier": "skdpsynth.tstr",
    "TSTRRegressor": "skdpsynth.tstr",
}
_SUBMODULES = {"privacy", "datasets", "metrics", "audit", "models", "synthesizers", "utils", "schema", "base",
               "exceptions"}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _SUBMODULES:
        return importlib.import_module(f"skdpsynth.{name}")
    raise AttributeError(f"module 'skdpsynth' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(__all__) | _SUBMODULES)
