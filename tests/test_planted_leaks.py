"""The default suite fails when a leak is planted at run time: each of five, alone.

(a) the exact number of people stored on the fitted model, (b) a few training rows stored on it, (c) every noise
sampler returning zeros, (d) a warning iff one person lies beyond 4 standard deviations, (e) a ValueError after
fitting iff one person lies beyond 6. Each runs the default-suite test that must catch it, in its own interpreter
with the leak planted by ``tests/plant_leaks.py``: the run must fail, in that test, with that test's message. The
same selection passes unplanted.

The six runs are children forked, one after another, from one interpreter that has imported the libraries and
nothing of the tests (pytest, scikit-learn, the registered synthesizers' modules; the selection trains no network,
so torch is not imported): each child is a fresh pytest session that loads the plant as a plugin, and what it would
spend importing is paid once. The plugins the selection does not use are off in each child (``PLUGINS``). Where
``os.fork`` is missing, each run is a new interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
NO_COUNT = "tests/test_neighbours.py::test_no_exact_count_on_the_fitted_model[npgc]"
NEIGHBOURS = "tests/test_neighbours.py::test_tables_with_a_public_schema[npgc]"
CHECKS = "tests/test_common.py::test_synthesizer_checks[npgc]"
#: each plant: the test that must catch it, and what its failure says
CATCHES = {
    "exact_n": (NO_COUNT, "keeps the exact number of people on the fitted model"),
    "rows": (CHECKS, "failed check 'no_training_rows'"),
    # with no noise every released count is the exact one
    "zero_noise": (NO_COUNT, "keeps the exact number of people on the fitted model"),
    "warning": (NEIGHBOURS, "observables that follow one person"),
    "error": (NEIGHBOURS, "observables that follow one person"),
}
SELECTION = list(dict.fromkeys(test for test, _ in CATCHES.values()))
#: plugins the selection does not use, off in each run: their packages would be imported, and (pytest rewrites the
#: asserts of every module of a plugin's distribution, uncached where bytecode is not written) compiled again in
#: each run: about 3 of 4 s of CPU per run
PLUGINS = ["-p", "no:xdist", "-p", "no:hypothesispytest", "-p", "no:faker", "-p", "no:benchmark"]

#: run by ``python -c``: import the libraries once, then fork one pytest session per run
DRIVER = """\
import json, os, sys
import numpy, pandas, sklearn, pytest  # noqa: F401 (imports paid once, before the forks)
from sklearn.utils.estimator_checks import estimator_checks_generator  # noqa: F401
from skdpsynth.synthesizers._registry import REGISTRY
for info in REGISTRY:
    info.load()  # every registered synthesizer, as the reproducible_noise fixture loads them
import skdpsynth.datasets  # noqa: F401 (the selection's modules import it)

runs, PLUGINS = json.loads(sys.argv[1]), json.loads(sys.argv[2])
codes = []
for plant, selection, log in runs:
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1); os.dup2(fd, 2)
        os.environ["SKDPSYNTH_PLANT"] = plant
        code = pytest.main(["-q", *PLUGINS, "-p", "plant_leaks", *selection])
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(int(code))
    codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print(json.dumps(codes))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}


def _run_all(runs: list[tuple[str, list[str]]], folder: Path) -> dict[str, tuple[int, str]]:
    """``{plant: (exit status, output)}`` of a pytest session per (plant, selection)."""
    logs = [str(folder / f"run-{plant or 'none'}.log") for plant, _ in runs]
    if hasattr(os, "fork"):
        args = json.dumps([[p, s, log] for (p, s), log in zip(runs, logs)])
        proc = subprocess.run([sys.executable, "-c", DRIVER, args, json.dumps(PLUGINS)], cwd=TESTS.parent, env=_env(),
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        codes = json.loads(proc.stdout.strip().splitlines()[-1])
    else:
        codes = []
        for (plant, selection), log in zip(runs, logs):
            with open(log, "w") as out:
                codes.append(subprocess.run([sys.executable, "-m", "pytest", "-q", *PLUGINS, "-p", "plant_leaks",
                                             *selection], cwd=TESTS.parent, env={**_env(), "SKDPSYNTH_PLANT": plant},
                                            stdout=out, stderr=subprocess.STDOUT, timeout=600).returncode)
    return {plant: (code, Path(log).read_text()) for (plant, _), code, log in zip(runs, codes, logs)}


def test_each_planted_leak_fails_the_suite_and_the_selection_passes_unplanted(tmp_path):
    # one test, not one per plant: the runs share the forking interpreter (under xdist, one test per plant would
    # import everything again on each worker)
    planted = [(plant, [test]) for plant, (test, _) in CATCHES.items()]
    runs = _run_all([*planted, ("", SELECTION)], tmp_path)
    problems = []
    for plant, (test, message) in CATCHES.items():
        code, out = runs[plant]
        if code != 1:
            problems.append(f"planted {plant!r} was not caught (exit {code}):\n{out[-1500:]}")
        elif f"FAILED {test}" not in out or message not in out:
            problems.append(f"planted {plant!r} failed otherwise than by {test}:\n{out[-1500:]}")
    code, out = runs[""]
    if code != 0:
        problems.append(f"the selection fails unplanted (exit {code}):\n{out[-3000:]}")
    assert not problems, "\n\n".join(problems)
