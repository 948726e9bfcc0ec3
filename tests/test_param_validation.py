"""Parameter constraints on public scikit-learn API only: semantics, messages, the check, no private import."""

from __future__ import annotations

import ast
import re
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from skdpsynth import DPHistogramSynthesizer, InvalidBudgetError, InvalidParameterError, NPGCSynthesizer
from skdpsynth.base import BaseSynthesizer
from skdpsynth.utils import Interval, StrOptions
from skdpsynth.utils._param_validation import invalid_value, validate_parameter_constraints
from skdpsynth.utils.estimator_checks import check_param_validation

ROOT = Path(__file__).resolve().parents[1]


def _error(constraints, value):
    try:
        validate_parameter_constraints({"p": constraints}, {"p": value}, "Est")
    except InvalidParameterError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("value, ok", [(0, False), (1e-9, True), (0.999, True), (1, False), (np.nan, False),
                                       (np.float32(0.5), True), ("0.5", False)])
def test_an_open_real_interval_admits_exactly_its_inside(value, ok):
    assert (_error([Interval(Real, 0, 1, closed="neither")], value) is None) == ok


@pytest.mark.parametrize("value, ok", [(1, True), (np.int64(7), True), (0, False), (1.0, False), (None, True)])
def test_an_integer_interval_admits_integers_only(value, ok):
    assert (_error([Interval(Integral, 1, None, closed="left"), None], value) is None) == ok


def test_the_message_names_parameter_estimator_constraints_and_value_like_scikit_learn():
    assert _error([Interval(Real, 0, None, closed="neither"), None], -1) == (
        "The 'p' parameter of Est must be a float in the range (0.0, inf) or None. Got -1 instead.")
    assert _error([StrOptions({"b", "a"})], "c") == (
        "The 'p' parameter of Est must be a str among {'a', 'b'}. Got 'c' instead.")
    assert _error(["boolean"], 1) == (
        "The 'p' parameter of Est must be an instance of 'bool' or an instance of 'numpy.bool'. Got 1 instead.")


def test_invalid_values_are_refused_by_the_constraint_they_come_from():
    for c in (Interval(Integral, 2, None, closed="left"), Interval(Real, 0, 1, closed="right"), StrOptions({"x"}),
              "verbose"):
        assert _error([c], invalid_value(c)) is not None


def test_the_error_is_a_value_and_type_error_and_a_bad_budget_is_one_too():
    assert issubclass(InvalidParameterError, ValueError) and issubclass(InvalidParameterError, TypeError)
    with pytest.raises(InvalidBudgetError, match=r"The 'epsilon' parameter of NPGCSynthesizer must be"):
        NPGCSynthesizer(epsilon=-1.0).fit(pd.DataFrame({"a": [1.0, 2.0]}))


class _Planted(BaseSynthesizer):
    """A synthesizer whose parameter ``size`` is declared, or not, and whose fit validates, or not."""

    _parameter_constraints = {**BaseSynthesizer._parameter_constraints,
                              "size": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, *, epsilon=None, delta=0.0, size=3, random_state=None, reproducible_noise=False):
        self.epsilon = epsilon
        self.delta = delta
        self.size = size
        self.random_state = random_state
        self.reproducible_noise = reproducible_noise

    def _check_input(self, X, y, reset):
        return X

    def _fit_cohort(self, data, ctx):
        self.n_estimate_ = 1

    def _sample(self, n_samples, rng, **params):
        return pd.DataFrame({"a": np.zeros(n_samples)})


class _Undeclared(_Planted):
    _parameter_constraints = BaseSynthesizer._parameter_constraints


class _Unchecked(_Planted):
    def _check_request(self) -> None:  # the planted fault: nothing is validated
        pass


def test_check_param_validation_passes_a_synthesizer_and_catches_both_planted_faults():
    check_param_validation("_Planted", _Planted())
    check_param_validation("DPHistogramSynthesizer", DPHistogramSynthesizer())
    with pytest.raises(AssertionError, match="undeclared \\['size'\\]"):
        check_param_validation("_Undeclared", _Undeclared())
    with pytest.raises(AssertionError, match="did not refuse"):
        check_param_validation("_Unchecked", _Unchecked())


def _private_sklearn_imports(path: Path) -> list[str]:
    """Imports of a private scikit-learn module (a dotted component starting with ``_``)."""
    if path.suffix == ".py":
        names = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.append(node.module)
            elif isinstance(node, ast.Import):
                names += [a.name for a in node.names]
    else:  # code blocks in the documentation
        names = re.findall(r"^\s*(?:from|import)\s+(sklearn[\w.]*)", path.read_text(encoding="utf-8"), flags=re.M)
    return [n for n in names if n.split(".")[0] == "sklearn" and any(p.startswith("_") for p in n.split(".")[1:])]


def test_no_private_scikit_learn_import_anywhere():
    files = [p for d in ("skdpsynth", "tests", "benchmarks", "docs", "examples") for p in (ROOT / d).rglob("*")
             if p.suffix in (".py", ".md") and "_build" not in p.parts]
    found = {str(p.relative_to(ROOT)): bad for p in [*files, ROOT / "README.md"] if p.exists()
             for bad in [_private_sklearn_imports(p)] if bad}
    assert not found, found
