"""Exceptions and warnings raised by skdpsynth.

:class:`DomainEstimateError` (a :class:`PrivacyBudgetError` and a
:class:`SchemaError`) is defined beside the DP domain estimate in
:mod:`skdpsynth.privacy` and re-exported here on first use, so that importing
this module stays cheap.
"""

from __future__ import annotations

from typing import Any

from sklearn.exceptions import NotFittedError as _SkNotFittedError
from sklearn.utils._param_validation import InvalidParameterError

__all__ = [
    "SkdpsynthError",
    "PrivacyBudgetError",
    "InvalidBudgetError",
    "SchemaError",
    "DomainEstimateError",  # noqa: F822 - defined in skdpsynth.privacy, resolved by __getattr__ below
    "NotFittedError",
    "PrivacyLeakWarning",
]


class SkdpsynthError(Exception):
    """Base class of every error raised by skdpsynth."""


class PrivacyBudgetError(SkdpsynthError, ValueError):
    """A privacy request cannot be met.

    Raised *before* any noise is drawn: when the requested budget is invalid, when a
    planned spend would exceed it, or when the data are too small for the requested
    guarantee. Nothing has been spent when this is raised.
    """


class InvalidBudgetError(PrivacyBudgetError, InvalidParameterError):
    """An ``epsilon`` or ``delta`` parameter of the wrong type or range (raised before any work)."""


class SchemaError(SkdpsynthError, ValueError):
    """The data do not match the (public) schema, or the schema itself is invalid.

    The message lists every offending column and what to do about it.
    """


class NotFittedError(SkdpsynthError, _SkNotFittedError):
    """A synthesizer was used before ``fit``."""


class PrivacyLeakWarning(UserWarning):
    """Something was computed from private data without differential privacy.

    Raised, for example, by :func:`skdpsynth.infer_schema`, which reads the domain
    (bounds, categories) straight from the data. A release built on such a schema is
    not end-to-end differentially private unless the domain really is public.
    """


def __getattr__(name: str) -> Any:
    if name == "DomainEstimateError":
        from skdpsynth.privacy._domain import DomainEstimateError

        return DomainEstimateError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
