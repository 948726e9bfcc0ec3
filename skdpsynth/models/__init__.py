"""Small torch models the audit trains on synthetic and real sequences.

* :class:`GRUSequenceClassifier` -- classify a learner's event sequence into an outcome.
* :class:`DKT` -- Deep Knowledge Tracing (Piech et al. 2015): an RNN over (skill, correct) interactions
  predicting whether the next response is correct.
* :class:`SAKT` -- Self-Attentive Knowledge Tracing (Pandey & Karypis 2019).
* :func:`sequences_from_long` -- turn a long-format event table into the classifier's input.

Imported lazily: ``import skdpsynth.models`` does not import torch until a model is used.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "GRUSequenceClassifier": "skdpsynth.models._gru",
    "sequences_from_long": "skdpsynth.models._gru",
    "DKT": "skdpsynth.models._kt",
    "SAKT": "skdpsynth.models._kt",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'skdpsynth.models' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
