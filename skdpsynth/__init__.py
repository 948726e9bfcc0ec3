"""skdpsynth: differentially private synthetic learner data, the scikit-learn way.

Public names are imported lazily, and none needs an extra to be imported: ``import skdpsynth`` and
``from skdpsynth import CAPSSynthesizer`` work on the core install; what needs ``skdpsynth[deep]`` or
``skdpsynth[report]`` says so when it is used.
"""

from __future__ import annotations

import importlib
from typing import Any

from skdpsynth.synthesizers._registry import REGISTRY

#: the one place the version is written (pyproject.toml reads it)
__version__ = "0.2.0.dev0"

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
    "InvalidParameterError": "skdpsynth.exceptions",
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
