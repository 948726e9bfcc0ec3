"""Utilities: random streams, input validation, parameter constraints, synthesizer checks."""

from skdpsynth.utils._param_validation import Interval, StrOptions
from skdpsynth.utils._random import check_random_state, spawn_generators
from skdpsynth.utils._validation import check_n_samples, check_table

__all__ = ["check_random_state", "spawn_generators", "check_table", "check_n_samples", "Interval", "StrOptions"]
