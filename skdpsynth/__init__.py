"""skdpsynth: differentially private synthetic learner data, the scikit-learn way.

Public names are imported lazily so that ``import skdpsynth`` does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from skdpsynth.synthesizers._registry import REGISTRY

__version__ = "0.1.0"

_LAZY = {
    "TableSchema": "skdpsynth.schema",
    "ColumnSpec": "skdpsynth.schema",
    "infer_schema": "skdpsynth.schema",
    "PublicGrid": "skdpsynth._grid",
    "BaseSynthesizer": "skdpsynth.base",
    "BaseTabularSynthesizer": "skdpsynth.base",
    "PrivacyBudgetError": "skdpsynth.exceptions",
    "SchemaError": "skdpsynth.exceptions",
    "DomainEstimateError": "skdpsynth.exceptions",
    "InvalidBudgetError": "skdpsynth.exceptions",
    "NotFittedError": "skdpsynth.exceptions",
    "PrivacyLeakWarning": "skdpsynth.exceptions",
    "SkdpsynthError": "skdpsynth.exceptions",
    "TSTRClassifier": "skdpsynth.tstr",
    "TSTRRegressor": "skdpsynth.tstr",
    "all_synthesizers": "skdpsynth.synthesizers._registry",
}
_LAZY.update({info.name: "skdpsynth.synthesizers" for info in REGISTRY})
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
