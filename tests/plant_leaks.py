"""Leaks planted at run time, to show the default suite catches each (``tests/test_planted_leaks.py``).

Loaded as a pytest plugin (``-p plant_leaks``) with ``SKDPSYNTH_PLANT`` naming one leak. Not a test module.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd

from skdpsynth.base import BaseSynthesizer
from skdpsynth.privacy._noise import NoiseSource

PLANT = os.environ.get("SKDPSYNTH_PLANT", "")


def _max_z(X) -> float:
    num = X.select_dtypes("number") if isinstance(X, pd.DataFrame) else pd.DataFrame()
    if num.empty:
        return 0.0
    z = (num - num.mean()) / num.std().replace(0, 1)
    return float(np.nanmax(np.abs(z.to_numpy(dtype=float))))


_fit = BaseSynthesizer.fit


def _planted_fit(self, X, y=None, **params):
    if PLANT == "warning" and _max_z(X) > 4:
        warnings.warn("an unusual value was seen", UserWarning, stacklevel=2)
    out = _fit(self, X, y, **params)
    if PLANT == "exact_n":
        self.people_ = len(X)
    elif PLANT == "rows" and isinstance(X, pd.DataFrame):
        self.examples_ = X.head(3).copy()
    elif PLANT == "error" and _max_z(X) > 6:
        raise ValueError("an unusual value was seen")
    return out


def _zeros(self, *args, **kwargs):
    size = kwargs.get("size", args[-1] if args else ())
    return np.zeros(size)


if PLANT:
    BaseSynthesizer.fit = _planted_fit
if PLANT == "zero_noise":
    for name in ("discrete_laplace", "discrete_gaussian", "gumbel", "geometric"):
        setattr(NoiseSource, name, _zeros)
