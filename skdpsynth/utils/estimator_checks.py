"""Checks every skdpsynth synthesizer must pass (beside scikit-learn's ``check_estimator``).

Use them on your own synthesizer::

    from skdpsynth.utils.estimator_checks import check_synthesizer
    check_synthesizer(MySynthesizer(epsilon=1.0, random_state=0), X)

:func:`find_synthesizers` crawls the synthesizer modules for public classes and
:func:`check_registry` asserts that each is registered (the common tests run only
what the registry lists).
"""

from __future__ import annotations

import importlib
import inspect
import math
import pickle
import pkgutil
import sys
from collections.abc import Callable

import numpy as np
import pandas as pd
from sklearn.base import clone

from skdpsynth.base import BaseSynthesizer
from skdpsynth.privacy._accounting import compose
from skdpsynth.privacy._noise import NoiseSource
from skdpsynth.synthesizers._registry import REGISTRY
from skdpsynth.utils._param_validation import check_param_validation

__all__ = ["check_synthesizer", "SYNTHESIZER_CHECKS", "find_synthesizers", "check_registry", "check_param_validation"]


def _fit(est, X):
    return clone(est).fit(X)


def check_determinism(est, X) -> None:
    """Reproducibility where it is allowed, fresh noise where it is required.

    With ``reproducible_noise=True`` (an explicit opt-in) the same
    ``random_state`` gives the same model and the same samples. By default the
    privacy noise is fresh on every fit whatever ``random_state`` says, so two
    private fits on the same data differ. ``sample(random_state=None)`` moves on.
    """
    if "reproducible_noise" in est.get_params():
        seeded = clone(est).set_params(reproducible_noise=True, random_state=7)
        a, b = _fit(seeded, X), _fit(seeded, X)
        pd.testing.assert_frame_equal(a.sample(50, random_state=1), b.sample(50, random_state=1))
        assert a.privacy_spent_.reproducible_noise or est.epsilon is None
    if getattr(est, "epsilon", None) is not None:
        secure = clone(est).set_params(random_state=7)
        a, b = _fit(secure, X), _fit(secure, X)
        assert not a.sample(50, random_state=1).equals(b.sample(50, random_state=1)), (
            "two fits with the same random_state gave identical releases: the privacy noise follows the seed")
    else:
        a = _fit(est, X)
    first, second = a.sample(50), a.sample(50)
    assert not first.equals(second), "successive sample() calls with random_state=None returned the same rows"


def check_noise_unrecoverable(est, X) -> None:
    """Nothing on the fitted estimator (or its pickle) can regenerate a noise draw.

    The object graph holds no :class:`~numpy.random.SeedSequence` and no
    noise source; the only generator allowed is the sampling stream
    ``_sample_rng_`` (post-processing).
    """
    fitted = _fit(est, X)
    found = _find_types(fitted, (np.random.SeedSequence, NoiseSource), set(), skip=("_sample_rng_",))
    assert found is None, f"{type(est).__name__} keeps {found}, from which noise could be regenerated"
    pickle.dumps(fitted)


def _find_types(obj, types: tuple, seen: set, depth: int = 0, skip: tuple = ()) -> str | None:
    if id(obj) in seen or depth > 6:
        return None
    seen.add(id(obj))
    if isinstance(obj, types):
        return type(obj).__name__
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        items = vars(obj).items()
    else:
        return None
    for key, child in items:
        if key in skip:
            continue
        found = _find_types(child, types, seen, depth + 1)
        if found:
            return f"{found} at {key!r}"
    return None


def check_n_estimate(est, X) -> None:
    """``n_estimate_`` is a positive int and the default release size."""
    fitted = _fit(est, X)
    n_hat = fitted.n_estimate_
    assert isinstance(n_hat, (int, np.integer)) and n_hat >= 1, f"n_estimate_ must be an int >= 1, got {n_hat!r}"
    out = fitted.sample(random_state=0)
    id_column = getattr(fitted, "id_column", None)  # sequence synthesizers count learners, not rows
    released = out[id_column].nunique() if id_column in out.columns else len(out)
    assert released == n_hat, f"sample() released {released} people, not n_estimate_={n_hat}"


def check_budget(est, X) -> None:
    """The spend never exceeds the request and is exactly what the budget log composes to."""
    fitted = _fit(est, X)
    spent = fitted.privacy_spent_
    log = fitted.budget_log_
    assert len(log) > 0, "budget_log_ is empty: every use of the private data must be logged"
    composition = getattr(est, "cohort_composition", "parallel")
    recomposed = compose(log, delta_zcdp=fitted._delta_zcdp_, composition=composition)
    assert math.isclose(recomposed.epsilon, spent.epsilon, rel_tol=1e-12) or recomposed.epsilon == spent.epsilon
    if est.epsilon is None:
        assert not spent.is_private and math.isinf(spent.epsilon)
        return
    assert spent.is_private, "a synthesizer with a finite epsilon logged a non-private computation"
    assert spent.epsilon <= est.epsilon * (1 + 1e-9), f"spent epsilon {spent.epsilon} > requested {est.epsilon}"
    assert spent.delta <= est.delta * (1 + 1e-9) + 1e-15, f"spent delta {spent.delta} > requested {est.delta}"
    before = spent
    fitted.sample(20)
    assert fitted.privacy_spent_ == before, "sampling changed the privacy spend"


def _contains_rows(obj, rows: set, seen: set, depth: int = 0) -> str | None:
    if id(obj) in seen or depth > 6:
        return None
    seen.add(id(obj))
    if isinstance(obj, pd.DataFrame):
        if len(obj) and rows & set(map(tuple, obj.astype(str).itertuples(index=False))):
            return "a DataFrame holding training rows"
        return None
    if isinstance(obj, np.ndarray) and obj.ndim == 2 and obj.dtype != object and obj.size < 5_000_000:
        as_rows = set(map(tuple, np.asarray(obj).astype(str)))
        return "an array holding training rows" if rows & as_rows else None
    children = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else (
        vars(obj).values() if hasattr(obj, "__dict__") and not isinstance(obj, type) else ())
    for child in children:
        found = _contains_rows(child, rows, seen, depth + 1)
        if found:
            return found
    return None


def check_no_training_rows(est, X) -> None:
    """The fitted estimator keeps no training rows (tables of the training data)."""
    fitted = _fit(est, X)
    frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(X)
    rows = set(map(tuple, frame.astype(str).itertuples(index=False)))
    found = _contains_rows(fitted, rows, set())
    assert found is None, f"{type(est).__name__} stores {found}"


def check_pickle_roundtrip(est, X) -> None:
    """A pickled and restored synthesizer samples exactly as the original."""
    fitted = _fit(est, X)
    restored = pickle.loads(pickle.dumps(fitted))
    pd.testing.assert_frame_equal(fitted.sample(30, random_state=3), restored.sample(30, random_state=3))
    assert restored.privacy_spent_ == fitted.privacy_spent_


def check_clone(est, X) -> None:
    """``clone`` gives an unfitted copy with identical parameters; fitting never changes parameters."""
    params = est.get_params(deep=False)
    fitted = _fit(est, X)
    assert set(fitted.get_params(deep=False)) == set(params)
    for k, v in fitted.get_params(deep=False).items():
        assert v is params[k] or repr(v) == repr(params[k]), f"fit changed parameter {k!r}"
    copy = clone(fitted)
    assert not hasattr(copy, "budget_log_"), "clone returned a fitted estimator"


def check_sample_schema(est, X) -> None:
    """Samples have the training columns in order, the requested length, and no budget cost."""
    fitted = _fit(est, X)
    out = fitted.sample(17, random_state=0)
    assert isinstance(out, pd.DataFrame)
    if hasattr(fitted, "columns_"):
        assert tuple(out.columns) == tuple(fitted.columns_)
        assert len(out) == 17


SYNTHESIZER_CHECKS: dict[str, Callable] = {
    "determinism": check_determinism,
    "noise_unrecoverable": check_noise_unrecoverable,
    "n_estimate": check_n_estimate,
    "budget": check_budget,
    "no_training_rows": check_no_training_rows,
    "pickle_roundtrip": check_pickle_roundtrip,
    "clone": check_clone,
    "sample_schema": check_sample_schema,
}


def check_synthesizer(estimator, X, *, checks: list[str] | None = None) -> dict[str, str]:
    """Run the common synthesizer checks; raise ``AssertionError`` on the first failure.

    Parameters
    ----------
    estimator : BaseSynthesizer
        An unfitted synthesizer with an integer ``random_state``.
    X : pandas.DataFrame
        Data it can be fitted on (a few hundred rows suffice).
    checks : list of str, optional
        Subset of :data:`SYNTHESIZER_CHECKS` (default: all).

    Returns
    -------
    dict of str to str
        ``{check name: "passed"}``.
    """
    names = list(SYNTHESIZER_CHECKS) if checks is None else checks
    for name in names:
        try:
            SYNTHESIZER_CHECKS[name](estimator, X)
        except AssertionError as exc:
            raise AssertionError(f"{type(estimator).__name__} failed check {name!r}: {exc}") from exc
    return {name: "passed" for name in names}


def find_synthesizers(package: str = "skdpsynth.synthesizers") -> list[type]:
    """Every public, concrete :class:`~skdpsynth.base.BaseSynthesizer` subclass defined in ``package``.

    Imports every module of the package, so the answer does not depend on what happens to be
    imported already; a module whose optional dependency (an extra) is missing is passed over.

    Parameters
    ----------
    package : str, default="skdpsynth.synthesizers"
        Dotted name of the package to crawl.

    Returns
    -------
    list of type
        Sorted by class name.
    """
    pkg = importlib.import_module(package)
    found = []
    for info in pkgutil.iter_modules(pkg.__path__, package + "."):
        try:
            module = importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            if (exc.name or "skdpsynth").partition(".")[0] == "skdpsynth":
                raise
            continue  # an optional dependency is not installed: nothing in this module can run here
        found += [obj for name, obj in vars(module).items()
                  if isinstance(obj, type) and issubclass(obj, BaseSynthesizer) and obj.__module__ == module.__name__
                  and not name.startswith("_") and not inspect.isabstract(obj)]
    return sorted(found, key=lambda cls: cls.__name__)


def check_registry() -> None:
    """Every public synthesizer class is registered, and every registry line names one.

    A synthesizer missing from :mod:`skdpsynth.synthesizers._registry` is neither exported, nor
    offered by the command line, nor run through the common tests.

    Raises
    ------
    AssertionError
        Naming the classes not registered, or the registry lines that name no public synthesizer.
    """
    found = {cls.__name__: cls.__module__ for cls in find_synthesizers()}
    missing = sorted(set(found) - {info.name for info in REGISTRY})
    assert not missing, (f"public synthesizers not registered: {missing}; add a SynthesizerInfo line for each to "
                         "skdpsynth/synthesizers/_registry.py (or make the class private with a leading underscore)")
    # a line whose module was passed over (a missing extra) cannot be checked here
    stale = sorted(info.name for info in REGISTRY if found.get(info.name) != info.module and info.module in sys.modules)
    assert not stale, f"registry lines that name no public synthesizer class of their module: {stale}"
