"""Declared parameter constraints, checked on public API only.

scikit-learn validates ``_parameter_constraints`` with a private module
(``sklearn.utils._param_validation``) that may change in any release, so the
synthesizers use this thin copy of its public behaviour instead: the same
constraint vocabulary, the same error type (:class:`InvalidParameterError`, a
``ValueError`` and a ``TypeError``) and the same message shape::

    The 'epsilon' parameter of NPGCSynthesizer must be a float in the range (0.0, inf) or None. Got -1 instead.

A constraint list (one per parameter) may hold:

* an :class:`Interval` (typed range) or :class:`StrOptions` (a set of strings);
* a type (any instance is valid), ``None`` (the value ``None``) or ``callable``;
* the strings ``"boolean"``, ``"random_state"``, ``"verbose"`` and ``"array-like"``
  (scikit-learn's meanings), or ``"no_validation"`` instead of a list.

Constraints only ever read parameters, which are public.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import clone

from skdpsynth.exceptions import InvalidParameterError

__all__ = ["Interval", "StrOptions", "InvalidParameterError", "validate_parameter_constraints", "make_constraint",
           "invalid_value", "check_param_validation"]


def _type_name(t: type) -> str:
    if t is Real:
        return "float"
    if t is Integral:
        return "int"
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


class _Constraint:
    """One admissible form of a parameter: ``is_satisfied_by(value)`` and a readable ``str``."""

    def is_satisfied_by(self, val: Any) -> bool:
        raise NotImplementedError

    def __str__(self) -> str:
        raise NotImplementedError


class _InstancesOf(_Constraint):
    def __init__(self, type_: type) -> None:
        self.type = type_

    def is_satisfied_by(self, val: Any) -> bool:
        return isinstance(val, self.type)

    def __str__(self) -> str:
        return f"an instance of {_type_name(self.type)!r}"


class _NoneConstraint(_Constraint):
    def is_satisfied_by(self, val: Any) -> bool:
        return val is None

    def __str__(self) -> str:
        return "None"


class _Callables(_Constraint):
    def is_satisfied_by(self, val: Any) -> bool:
        return callable(val)

    def __str__(self) -> str:
        return "a callable"


class _ArrayLikes(_Constraint):
    def is_satisfied_by(self, val: Any) -> bool:
        return (hasattr(val, "__len__") or hasattr(val, "shape") or hasattr(val, "__array__")) and not np.isscalar(val)

    def __str__(self) -> str:
        return "an array-like"


class _AnyOf(_Constraint):
    """A named union of constraints (``"boolean"``, ``"random_state"``, ``"verbose"``)."""

    def __init__(self, *constraints: _Constraint) -> None:
        self.constraints = constraints

    def is_satisfied_by(self, val: Any) -> bool:
        return any(c.is_satisfied_by(val) for c in self.constraints)

    def __str__(self) -> str:
        return _join(self.constraints)


class Interval(_Constraint):
    """Numbers of one type in a range.

    Parameters
    ----------
    type : {numbers.Integral, numbers.Real}
        ``Integral`` admits Python and NumPy integers; ``Real`` admits any real number.
    left, right : int, float or None
        The bounds; ``None`` is unbounded on that side.
    closed : {"left", "right", "both", "neither"}
        Which bounds belong to the interval.
    """

    def __init__(self, type: type, left: float | None, right: float | None, *, closed: str) -> None:  # noqa: A002
        if type not in (Integral, Real):
            raise ValueError(f"type must be numbers.Integral or numbers.Real, got {type!r}.")
        if closed not in ("left", "right", "both", "neither"):
            raise ValueError(f"closed must be 'left', 'right', 'both' or 'neither', got {closed!r}.")
        if left is not None and right is not None and right < left:
            raise ValueError(f"right ({right!r}) must not be below left ({left!r}).")
        self.type, self.left, self.right, self.closed = type, left, right, closed

    def __contains__(self, val: Any) -> bool:
        if not isinstance(val, Integral) and np.isnan(val):
            return False
        below = operator.lt if self.closed in ("left", "both") else operator.le
        above = operator.gt if self.closed in ("right", "both") else operator.ge
        if self.left is not None and below(val, self.left):
            return False
        return not (self.right is not None and above(val, self.right))

    def is_satisfied_by(self, val: Any) -> bool:
        return isinstance(val, self.type) and val in self

    def __str__(self) -> str:
        def bound(b: float | None, inf: str) -> str:
            if b is None:
                return inf
            return str(b if self.type is Integral else float(b))

        left = "[" if self.closed in ("left", "both") else "("
        right = "]" if self.closed in ("right", "both") else ")"
        kind = "an int" if self.type is Integral else "a float"
        return f"{kind} in the range {left}{bound(self.left, '-inf')}, {bound(self.right, 'inf')}{right}"


class StrOptions(_Constraint):
    """One of a set of strings.

    Parameters
    ----------
    options : set of str
        The admissible strings.
    """

    def __init__(self, options: set[str]) -> None:
        self.options = set(options)

    def is_satisfied_by(self, val: Any) -> bool:
        return isinstance(val, str) and val in self.options

    def __str__(self) -> str:
        return "a str among {" + ", ".join(repr(o) for o in sorted(self.options)) + "}"


_BOOLEAN = (_InstancesOf(bool), _InstancesOf(np.bool_))
_NAMED = {
    "boolean": lambda: _AnyOf(*_BOOLEAN),
    "random_state": lambda: _AnyOf(Interval(Integral, 0, 2**32 - 1, closed="both"),
                                   _InstancesOf(np.random.RandomState), _NoneConstraint()),
    "verbose": lambda: _AnyOf(Interval(Integral, 0, None, closed="left"), *_BOOLEAN),
    "array-like": _ArrayLikes,
}


def make_constraint(constraint: Any) -> _Constraint:
    """The constraint object for one entry of a constraint list (see the module docstring)."""
    if isinstance(constraint, _Constraint):
        return constraint
    if constraint is None:
        return _NoneConstraint()
    if constraint is callable:
        return _Callables()
    if isinstance(constraint, type):
        return _InstancesOf(constraint)
    if isinstance(constraint, str) and constraint in _NAMED:
        return _NAMED[constraint]()
    raise ValueError(f"unknown parameter constraint {constraint!r}.")


def _join(constraints: tuple[_Constraint, ...] | list[_Constraint]) -> str:
    shown = [str(c) for c in constraints]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def validate_parameter_constraints(constraints: Mapping[str, Any], params: Mapping[str, Any],
                                   caller_name: str) -> None:
    """Check every parameter that has constraints; raise on the first that satisfies none of them.

    Parameters
    ----------
    constraints : dict
        Parameter name -> list of constraints, or ``"no_validation"``.
    params : dict
        Parameter name -> value (e.g. ``estimator.get_params(deep=False)``).
    caller_name : str
        Named in the message (the estimator's class name).

    Raises
    ------
    InvalidParameterError
        ``"The 'name' parameter of caller must be <constraints>. Got <value> instead."``
    """
    for name, value in params.items():
        allowed = constraints.get(name, "no_validation")
        if isinstance(allowed, str) and allowed == "no_validation":
            continue
        made = [make_constraint(c) for c in allowed]
        if not any(c.is_satisfied_by(value) for c in made):
            raise InvalidParameterError(
                f"The {name!r} parameter of {caller_name} must be {_join(made)}. Got {value!r} instead.")


def invalid_value(constraint: Any) -> Any:
    """A value of an admissible type that this constraint refuses (for tests).

    Raises
    ------
    NotImplementedError
        When the constraint refuses no value of its own type (a type, ``None``, ``"boolean"``, ...).
    """
    c = make_constraint(constraint)
    if isinstance(c, StrOptions):
        return "not " + " or ".join(sorted(c.options))
    if isinstance(c, Interval):
        step = 1 if c.type is Integral else 1e-6
        if c.left is not None:
            return c.left - step
        if c.right is not None:
            return c.right + step
    if isinstance(c, _AnyOf) and str(c) == str(_NAMED["verbose"]()):
        return -1
    raise NotImplementedError(f"no invalid value of the right type for {c}.")


def check_param_validation(name: str, estimator: Any) -> None:
    """Every parameter has a declared constraint, and a bad value is refused by ``fit`` / ``partial_fit``.

    The public counterpart of scikit-learn's check of the same name: each parameter set to a value of no
    admissible type, then to an admissible type's invalid value (where one exists), must make every fit method
    raise :class:`InvalidParameterError` with the standard message before reading the data.

    Parameters
    ----------
    name : str
        The estimator's class name (as the message names it).
    estimator : estimator
        An instance with ``_parameter_constraints``.

    Raises
    ------
    AssertionError
        Naming the parameter and value that were not refused as they should be.
    """
    params = estimator.get_params(deep=False)
    declared = estimator._parameter_constraints
    assert set(declared) == set(params), (
        f"_parameter_constraints of {name} do not match its parameters: undeclared "
        f"{sorted(set(params) - set(declared))}, unknown {sorted(set(declared) - set(params))}.")
    rng = np.random.RandomState(0)
    X, y = rng.uniform(size=(20, 5)), rng.randint(0, 2, size=20)
    methods = [m for m in ("fit", "partial_fit") if hasattr(estimator, m)]
    expected = r"The '{}' parameter of {} must be .* Got .* instead\."
    for param, allowed in declared.items():
        if isinstance(allowed, str) and allowed == "no_validation":
            continue
        for value in [type("BadType", (), {})(), *_invalid_values(allowed)]:
            est = clone(estimator).set_params(**{param: value})
            for method in methods:
                try:
                    getattr(est, method)(X, y)
                except InvalidParameterError as exc:
                    assert re.search(expected.format(param, name), str(exc)), (
                        f"{name}.{method} refused {param}={value!r} with a message of another shape: {exc}")
                except Exception as exc:  # noqa: BLE001 - any other error means the value was not validated
                    raise AssertionError(f"{name}.{method} did not refuse {param}={value!r} as a parameter: it "
                                         f"went on and failed with {type(exc).__name__}: {exc}") from exc
                else:
                    raise AssertionError(f"{name}.{method} did not refuse {param}={value!r}.")


def _invalid_values(allowed: list) -> list:
    out = []
    for constraint in allowed:
        try:
            out.append(invalid_value(constraint))
        except NotImplementedError:
            continue
    return out
