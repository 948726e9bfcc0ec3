"""Synthesizers: one private module per method, re-exported here (lazily: torch loads on first use).

The list lives in :mod:`skdpsynth.synthesizers._registry`.
"""

from __future__ import annotations

from typing import Any

from skdpsynth.synthesizers._registry import REGISTRY, all_synthesizers

_LAZY = {info.name: info for info in REGISTRY}

__all__ = sorted(_LAZY) + ["all_synthesizers"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return _LAZY[name].load()
    raise AttributeError(f"module 'skdpsynth.synthesizers' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
