"""Provenance records for the ledger: library versions, a fitted synthesizer, and which of their fields are secret.

Seeds are confidential: whoever knows ``random_state`` can regenerate the
release's sampling (and, with ``reproducible_noise=True``, remove the privacy
noise). Every field holding a seed is listed by :func:`seed_paths`.
"""

from __future__ import annotations

import importlib
import platform
import sys
from dataclasses import asdict, is_dataclass
from typing import Any

from skdpsynth.audit._base import jsonable

__all__ = ["library_versions", "synthesizer_record", "synthesizer_confidential", "seed_paths", "is_seed_name"]


def library_versions() -> dict[str, str]:
    """Versions of Python and of the libraries that shape a release."""
    out = {"python": platform.python_version()}
    for name in ("skdpsynth", "numpy", "pandas", "scipy", "sklearn", "torch", "opacus"):
        mod = sys.modules.get(name)
        if mod is None and name in ("skdpsynth", "numpy", "pandas", "scipy", "sklearn"):
            mod = importlib.import_module(name)
        if mod is not None:
            out[name] = str(getattr(mod, "__version__", "unknown"))
    return out


def is_seed_name(name: str) -> bool:
    """Whether a parameter name holds a seed (``random_state``, ``seed``, ``*_seed`` ...)."""
    name = name.lower()
    return "random_state" in name or "seed" in name


def seed_paths(params: dict[str, Any], prefix: str) -> list[str]:
    """Dotted paths of ``params`` entries that hold seeds, or estimators (whose repr may carry one)."""
    out = []
    for key, value in params.items():
        carries = hasattr(value, "get_params") or (isinstance(value, str) and "random_state=" in value)
        if is_seed_name(str(key)) or carries:
            out.append(f"{prefix}.{key}")
    return out


def synthesizer_record(synthesizer: Any) -> dict[str, Any]:
    """Class, parameters, seed, privacy spend, budget log and DP size estimate of a fitted synthesizer (duck-typed).

    Confidential fields of the record: :func:`synthesizer_confidential`.
    """
    if synthesizer is None:
        return {"class": None}
    rec: dict[str, Any] = {"class": f"{type(synthesizer).__module__}.{type(synthesizer).__qualname__}"}
    try:
        params = synthesizer.get_params(deep=False)
    except Exception:  # noqa: BLE001 - any duck type
        params = {}
    rec["params"] = jsonable(params)
    rec["random_state"] = jsonable(params.get("random_state"))
    try:
        spent = synthesizer.privacy_spent_
        rec["privacy_spent"] = jsonable(asdict(spent) if is_dataclass(spent) else spent)
        if hasattr(spent, "publishable"):
            rec["privacy_spent"]["publishable"] = bool(spent.publishable)
    except Exception as exc:  # noqa: BLE001 - unfitted or no accounting
        rec["privacy_spent"] = f"unavailable ({type(exc).__name__})"
    log = getattr(synthesizer, "budget_log_", None)
    rec["budget_log"] = None if log is None else [jsonable(r.to_dict() if hasattr(r, "to_dict") else r) for r in log]
    schema = getattr(synthesizer, "schema_", None)
    if schema is not None and hasattr(schema, "public"):
        rec["schema_public"] = bool(schema.public)
    n_est = getattr(synthesizer, "n_estimate_", None)
    if n_est is not None:
        rec["n_estimate"] = int(n_est)  # a DP estimate: public
    return rec


def synthesizer_confidential(record: dict[str, Any], prefix: str = "synthesizer") -> list[str]:
    """Dotted paths (under ``prefix``) of the confidential fields of a :func:`synthesizer_record`: its seeds."""
    if record.get("class") is None:
        return []
    return [f"{prefix}.random_state", *seed_paths(record.get("params") or {}, f"{prefix}.params")]
