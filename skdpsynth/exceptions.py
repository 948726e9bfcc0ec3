"""Exceptions and warnings raised by skdpsynth (every class here: modules import them, never the reverse)."""

from __future__ import annotations

from sklearn.exceptions import NotFittedError as _SkNotFittedError

__all__ = [
    "SkdpsynthError",
    "InvalidParameterError",
    "PrivacyBudgetError",
    "InvalidBudgetError",
    "SchemaError",
    "DomainEstimateError",
    "NotFittedError",
    "PrivacyLeakWarning",
]


class SkdpsynthError(Exception):
    """Base class of every error raised by skdpsynth."""


class InvalidParameterError(SkdpsynthError, ValueError, TypeError):
    """A constructor parameter of the wrong type or value (raised by ``fit`` before any data are read).

    A ``ValueError`` and a ``TypeError``, as scikit-learn's error of the same name;
    the message names the parameter, what it must be and the value given.
    """


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


class DomainEstimateError(PrivacyBudgetError, SchemaError):
    """The DP domain estimate cannot work for some columns at this budget (each named, with what to do).

    Raised by :func:`skdpsynth.privacy.estimate_schema` before anything but a
    noisy count of people is measured when the budget and that count say so
    (the count is in the budget log); rarely, after the estimate, when nothing
    could be released for a column whose values are spread too thinly
    (identifiers, free text).
    """


class NotFittedError(SkdpsynthError, _SkNotFittedError):
    """A synthesizer was used before ``fit``."""


class PrivacyLeakWarning(UserWarning):
    """Something was computed from private data without differential privacy.

    Raised, for example, by :func:`skdpsynth.infer_schema`, which reads the domain
    (bounds, categories) straight from the data. A release built on such a schema is
    not end-to-end differentially private unless the domain really is public.
    """
