"""The default suite fails when a leak is planted at run time: each of five, alone.

(a) the exact number of people stored on the fitted model, (b) a few training rows stored on it, (c) every noise
sampler returning zeros, (d) a warning iff one person lies beyond 4 standard deviations, (e) a ValueError after
fitting iff one person lies beyond 6. Each runs the tests that must catch it, in a fresh interpreter with the leak
planted by ``tests/plant_leaks.py``, and the run must fail; the same selection passes unplanted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SELECTION = [
    "tests/test_neighbours.py::test_tables_with_a_public_schema[npgc]",
    "tests/test_neighbours.py::test_no_exact_count_on_the_fitted_model[npgc]",
    "tests/test_common.py::test_synthesizer_checks[npgc]",
]


def _run(plant: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SKDPSYNTH_PLANT": plant, "PYTHONPATH": str(TESTS)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "plant_leaks", *SELECTION],
                          cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("plant", ["exact_n", "rows", "zero_noise", "warning", "error"])
def test_a_planted_leak_fails_the_suite(plant):
    run = _run(plant)
    assert run.returncode == 1, f"planted {plant!r} was not caught:\n{run.stdout[-2000:]}"


def test_the_selection_passes_unplanted():
    run = _run("")
    assert run.returncode == 0, run.stdout[-3000:]
