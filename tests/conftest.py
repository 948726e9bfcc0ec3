"""Shared fixtures. Real data live in ../shared/data (CI has them there).

Locally, tests that need real data skip when it is absent; under CI
(``SKDPSYNTH_REQUIRE_DATA=1``, set by .ci/run) they fail instead.

A test whose assertion holds for one fixed noise draw (two routes to the same release, a bound
measured on a fixed draw) asks for the ``reproducible_noise`` fixture once, instead of passing
``reproducible_noise=True`` to every synthesizer it builds. Tests of ``reproducible_noise`` itself
set it explicitly.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from skdpsynth.synthesizers._registry import SynthesizerInfo
from skdpsynth.utils._optional import missing

DATA_DIR = Path(os.environ.get("SKDPSYNTH_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def real_data_path(*parts: str) -> Path:
    """Path under shared/data; skips (or fails under CI) when absent."""
    path = DATA_DIR.joinpath(*parts)
    if not path.exists():
        msg = f"real data not found at {path}"
        if os.environ.get("SKDPSYNTH_REQUIRE_DATA") == "1":
            pytest.fail(msg + " (SKDPSYNTH_REQUIRE_DATA=1)")
        pytest.skip(msg)
    return path


@pytest.fixture
def reproducible_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every synthesizer built in the test derives its privacy noise from ``random_state``.

    The default of ``reproducible_noise`` becomes True for every synthesizer class (the registered
    ones, and every subclass imported by then, those a test defines included); an explicit ``reproducible_noise=False``
    still gives secure noise. Such releases are stamped not publishable, as with the parameter.
    """
    from skdpsynth.base import BaseSynthesizer
    from skdpsynth.synthesizers._registry import REGISTRY

    # the registry names every public synthesizer (tests/test_common.py checks it against a crawl of the package);
    # loading its classes imports no network library, where the crawl would import torch in every worker
    classes = [*(info.load() for info in REGISTRY), *_subclasses(BaseSynthesizer)]
    for init in {cls.__init__ for cls in classes}:
        if "reproducible_noise" in (getattr(init, "__kwdefaults__", None) or {}):  # object.__init__ has none
            monkeypatch.setitem(init.__kwdefaults__, "reproducible_noise", True)


def _subclasses(cls: type) -> list[type]:
    return [c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))]


@pytest.fixture
def data_dir() -> Path:
    """The shared/data folder (skips or fails when missing)."""
    return real_data_path()


def make_mixed(n: int = 600, seed: int = 0) -> pd.DataFrame:
    """A small mixed-type table with missing values (simulated; nothing private)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "score": rng.normal(60, 12, n).clip(0, 100),
        "age": rng.integers(17, 40, n),
        "course": rng.choice(["math", "bio", "art"], n, p=[0.5, 0.3, 0.2]),
        "online": rng.random(n) < 0.4,
        "enrolled": pd.to_datetime("2020-09-01") + pd.to_timedelta(rng.integers(0, 400, n), unit="D"),
    })
    df.loc[rng.random(n) < 0.1, "score"] = np.nan
    return df


@pytest.fixture
def mixed_frame() -> pd.DataFrame:
    """:func:`make_mixed`'s 600 rows."""
    return make_mixed()


@pytest.fixture
def mixed_schema():
    """The public schema of ``mixed_frame``."""
    return make_mixed_schema()


def make_mixed_schema():
    """The public schema of :func:`make_mixed`'s tables."""
    from skdpsynth import TableSchema

    return TableSchema.from_dict({
        "score": {"kind": "continuous", "lower": 0, "upper": 100},
        "age": {"kind": "integer", "lower": 17, "upper": 70, "nullable": False},
        "course": {"kind": "categorical", "categories": ["math", "bio", "art", "history"]},
        "online": {"kind": "boolean"},
        "enrolled": {"kind": "datetime", "lower": "2020-01-01", "upper": "2022-12-31"},
    })


def _required_packages(item: pytest.Item) -> list[str]:
    """Packages named by ``requires`` marks, and those the synthesizers a test is parametrized with need."""
    names = [name for mark in item.iter_markers("requires") for name in mark.args]
    for value in getattr(getattr(item, "callspec", None), "params", {}).values():
        cls = value.load() if isinstance(value, SynthesizerInfo) else value if isinstance(value, type) else type(value)
        names += getattr(cls, "_requires", ())
    return names


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that needs an absent optional package (an extra) is skipped: marked ``requires("torch", ...)``,
    or parametrized with a synthesizer whose fit needs one (its ``_requires``)."""
    for item in items:
        absent = missing(*_required_packages(item))
        if absent:
            item.add_marker(pytest.mark.skip(reason=f"needs {', '.join(absent)} (an extra that is not installed)"))
