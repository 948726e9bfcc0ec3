"""Utilities: random streams, input validation, progress output, synthesizer checks."""

from skdpsynth.utils._random import check_random_state, spawn_generators
from skdpsynth.utils._validation import check_n_samples, check_table

__all__ = ["check_random_state", "spawn_generators", "check_table", "check_n_samples"]
