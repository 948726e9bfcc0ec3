"""Optional dependencies: which extra installs each, and the imports that say so when one is missing.

The core install (NPGC, MST, AIM, the DP histograms and sequence models, the
audit's table checks, the command line) needs none of these. A class or
function that does needs them raises :class:`ImportError` naming the extra when
it is used -- ``fit`` or a call -- never at ``import skdpsynth``.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Any

__all__ = ["EXTRAS", "import_optional", "require", "deferred_import", "missing"]

#: the extra that installs each optional package the code imports (import names)
EXTRAS: dict[str, tuple[str, ...]] = {
    "deep": ("torch", "opacus", "dp_accounting", "gdpnum"),
    "report": ("matplotlib", "sdmetrics"),
    "bench": ("ctgan",),
}
_EXTRA_OF = {module: extra for extra, modules in EXTRAS.items() for module in modules}


def import_optional(name: str, purpose: str) -> ModuleType:
    """Import ``name``; if an optional package it needs is absent, say which extra installs it.

    Parameters
    ----------
    name : str
        Module to import (an optional package, one of its submodules, or a module of ours that imports one).
    purpose : str
        What needs it, for the message (e.g. ``"CAPSSynthesizer"``).

    Returns
    -------
    module

    Raises
    ------
    ImportError
        ``"<purpose> needs 'torch', which is not installed: pip install "skdpsynth[deep]""``. An import error
        of anything else (a broken installation) is raised unchanged.
    """
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        extra = _EXTRA_OF.get(exc.name or "")
        if extra is None:
            raise
        raise ImportError(f"{purpose} needs {exc.name!r}, which is not installed: "
                          f'pip install "skdpsynth[{extra}]"', name=exc.name) from exc


def require(*names: str, purpose: str) -> None:
    """Import each optional package now, so that a missing one is reported before any work (or budget) is spent."""
    for name in names:
        import_optional(name, purpose)


def missing(*names: str) -> list[str]:
    """Those of ``names`` (top-level packages) that are not installed; nothing is imported (for skipping tests)."""
    def absent(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is None
        except ImportError:
            return True

    return [name for name in names if absent(name)]


class _Deferred:
    """A module imported on first attribute access, so that importing its user does not import it."""

    def __init__(self, name: str, purpose: str) -> None:
        self._name, self._purpose = name, purpose

    def __getattr__(self, attr: str) -> Any:
        return getattr(import_optional(self._name, self._purpose), attr)

    def __repr__(self) -> str:
        return f"<deferred import of {self._name!r}>"


def deferred_import(name: str, purpose: str) -> Any:
    """``name`` as a stand-in module, imported (with :func:`import_optional`) when an attribute is first read."""
    return _Deferred(name, purpose)
