"""The formal guarantee of a release: from a fitted synthesizer or from the budget file written beside a table.

:func:`release_privacy` turns either into one public summary::

    {"epsilon": 2.0, "delta": 1e-6, "is_private": True, "publishable": True,
     "reproducible_noise": False, "method": "npgc", "nonprivate_reasons": [],
     "n_estimate": 1203, "source": "synthesizer"}

``epsilon`` is None for a non-private release. Everything here is public (the
privacy spend is releasable); ``n_estimate`` is a DP estimate.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["release_privacy", "public_schema"]


def public_schema(synthesizer: Any) -> Any:
    """The synthesizer's ``schema_`` when it is public (given, or estimated under DP), else None."""
    cand = getattr(synthesizer, "schema_", None)
    if cand is not None and hasattr(cand, "validate") and getattr(cand, "public", False):
        return cand
    return None


def _number(value: Any, key: str) -> float | None:
    if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
        return None
    if isinstance(value, str) and value.lower() in ("inf", "infinity"):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"privacy: {key!r} must be a number or null, got {value!r}.") from None
    return float(value)


def _nonprivate_reasons(budget_log: Any) -> list[str]:
    """What was computed without DP, from the ``kind == "none"`` records of a budget log."""
    out = []
    for rec in budget_log or ():
        rec = rec.to_dict() if hasattr(rec, "to_dict") else rec
        if isinstance(rec, Mapping) and rec.get("kind") == "none":
            target = str(rec.get("target", "a computation without DP"))
            if target not in out:
                out.append(target)
    return out


def _reproducible(budget_log: Any) -> bool | None:
    """Whether any record's noise was derived from a seed (None: the log does not say)."""
    seen = None
    for rec in budget_log or ():
        rec = rec.to_dict() if hasattr(rec, "to_dict") else rec
        if isinstance(rec, Mapping) and "noise" in rec:
            seen = bool(seen) or rec["noise"] == "reproducible"
    return seen


def _from_synthesizer(synthesizer: Any) -> dict[str, Any] | None:
    try:
        spent = synthesizer.privacy_spent_
    except Exception:  # noqa: BLE001 - an unfitted duck type or one without accounting
        return None
    log = getattr(synthesizer, "budget_log_", ())
    reasons = _nonprivate_reasons(log)
    private = bool(getattr(spent, "is_private", True)) and math.isfinite(spent.epsilon)
    reproducible = bool(getattr(spent, "reproducible_noise", False)) or bool(_reproducible(log))
    if getattr(synthesizer, "epsilon", 0) is None and not any("epsilon=None" in r for r in reasons):
        reasons.insert(0, "epsilon=None (non-private fit)")
    n_est = getattr(synthesizer, "n_estimate_", None)
    return {
        "epsilon": float(spent.epsilon) if private else None,
        "delta": float(spent.delta),
        "is_private": private,
        "publishable": private and not reproducible,
        "reproducible_noise": reproducible,
        "method": type(synthesizer).__name__,
        "nonprivate_reasons": reasons,
        "n_estimate": None if n_est is None else int(n_est),
        "source": "synthesizer",
    }


def _load(privacy: Any) -> tuple[Mapping[str, Any], str]:
    if isinstance(privacy, (str, os.PathLike)):
        path = Path(privacy)
        try:
            with open(path, encoding="utf-8") as fh:
                return json.load(fh), f"budget file {path.name}"
        except OSError as exc:
            raise ValueError(f"privacy: cannot read the budget file {path} ({exc.strerror}).") from exc
        except json.JSONDecodeError as exc:
            raise ValueError(f"privacy: {path} is not valid JSON ({exc.msg}).") from exc
    if isinstance(privacy, Mapping):
        return privacy, "given"
    raise TypeError(f"privacy must be a dict or the path of a budget JSON file, got {type(privacy).__name__}.")


def _from_budget(privacy: Any) -> dict[str, Any]:
    raw, source = _load(privacy)
    flat = dict(raw.get("privacy_spent", {})) if isinstance(raw.get("privacy_spent"), Mapping) else {}
    flat.update({k: v for k, v in raw.items() if k != "privacy_spent"})
    if "epsilon" not in flat:
        raise ValueError("privacy: the budget has no 'epsilon' (null for a non-private release); expected the JSON "
                         "written by `skdpsynth synthesize` beside the output.")
    eps = _number(flat.get("epsilon"), "epsilon")
    delta = _number(flat.get("delta", 0.0), "delta") or 0.0
    if eps is not None and eps < 0 or not 0 <= delta < 1:
        raise ValueError(f"privacy: epsilon must be >= 0 (or null) and delta in [0, 1); got {eps!r}, {delta!r}.")
    log = flat.get("budget_log")
    reasons = _nonprivate_reasons(log)
    private = bool(flat.get("is_private", True)) and eps is not None and math.isfinite(eps) and not reasons
    if eps is None and not reasons:
        reasons = ["epsilon=None (non-private fit)"]
    reproducible = flat.get("reproducible_noise", _reproducible(log))
    publishable = flat.get("publishable")
    if publishable is None:
        # fail closed: a budget that does not say where its noise came from is not known to be publishable
        publishable = private and reproducible is False
    n_est = flat.get("n_estimate")
    return {
        "epsilon": eps if private else None,
        "delta": float(delta),
        "is_private": private,
        "publishable": bool(publishable) and private and not reproducible,
        "reproducible_noise": reproducible if reproducible is None else bool(reproducible),
        "method": flat.get("method"),
        "synthesizer": flat.get("synthesizer"),
        "nonprivate_reasons": reasons,
        "n_estimate": None if n_est is None else int(n_est),
        "source": source,
    }


def release_privacy(synthesizer: Any = None, privacy: Any = None) -> dict[str, Any] | None:
    """The formal guarantee of a release, as a public summary (None when nothing is known).

    Parameters
    ----------
    synthesizer : fitted synthesizer, optional
        Read from its ``privacy_spent_`` and ``budget_log_``.
    privacy : dict or path, optional
        For a table audited without its synthesizer: the budget JSON written
        by ``skdpsynth synthesize`` beside the output (keys ``epsilon``,
        ``delta``, ``is_private``, ``publishable``, ``reproducible_noise``,
        ``method``; a nested ``privacy_spent`` and a ``budget_log`` are read
        too), or the same as a dict.

    Returns
    -------
    dict or None
    """
    if synthesizer is not None and privacy is not None:
        raise ValueError("give privacy= only with a synthetic table audited without its synthesizer: a synthesizer "
                         "reports its own spend (privacy_spent_).")
    if privacy is not None:
        return _from_budget(privacy)
    if synthesizer is not None:
        return _from_synthesizer(synthesizer)
    return None
