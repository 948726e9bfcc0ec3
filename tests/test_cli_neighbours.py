"""`skdpsynth synthesize` on neighbouring tables: nothing it says or writes may depend on one person.

D is a small table; D' is D plus one extreme person. With the same public inputs (arguments, no schema) and the
same seed, every observable except the noisy numbers must be identical: exit status, stdout and stderr with their
numbers masked, the names of the files written, the release's columns and dtypes, and the budget record's
structure. Before every column was read as text, pandas' inference on the private values decided kinds: one
"unknown" made a date column text (and the run refused after spending), one "30.5" made every released age a
float, one "unknown" made a numeric column categorical -- each a deterministic tell.

The privacy noise is derived from the seed (``--reproducible-noise``) so that D and D' get the same noise and any
difference comes from the one person alone; epsilon is high (8) so that the DP decisions of the domain estimate
are far from their thresholds on this 400-row table (a change there would need the one person to move a noisy
count by more than the noise, which is what DP bounds, not what this test is about).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from skdpsynth.cli import main

N = 400
SEEDS = (0, 1)
#: one extra person per case: (name, their row as written in the CSV)
EXTREME = {
    "outlier": {"age": "999", "course": "math", "enrolled": "2021-09-06", "outcome": "pass"},
    "unique category": {"age": "20", "course": "only-me", "enrolled": "2021-09-06", "outcome": "pass"},
    "text in a number": {"age": "unknown", "course": "math", "enrolled": "2021-09-06", "outcome": "pass"},
    "non-ISO date": {"age": "20", "course": "math", "enrolled": "06/09/2021", "outcome": "pass"},
    "fraction in integers": {"age": "30.5", "course": "math", "enrolled": "2021-09-06", "outcome": "pass"},
    "missing in integers": {"age": "", "course": "math", "enrolled": "2021-09-06", "outcome": "pass"},
}


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    weeks = pd.date_range("2021-09-06", periods=4, freq="7D").strftime("%Y-%m-%d")
    return pd.DataFrame({"age": rng.integers(18, 24, N).astype(str), "course": rng.choice(["math", "bio", "art"], N),
                         "enrolled": rng.choice(weeks, N), "outcome": rng.choice(["pass", "fail"], N)})


def _mask(text: str, folder: Path) -> str:
    return re.sub(r"\d[\d,.e+-]*", "#", text.replace(str(folder), "DIR"))


def _structure(obj):
    """A JSON record's keys and value types, its numbers and texts dropped."""
    if isinstance(obj, dict):
        return {k: _structure(v) for k, v in obj.items() if k not in ("created", "sha256")}
    if isinstance(obj, list):
        return [_structure(v) for v in obj]
    return type(obj).__name__ if not isinstance(obj, str) else "str"


def _observe(frame: pd.DataFrame, folder: Path, seed: int, capsys) -> dict:
    folder.mkdir()
    frame.to_csv(folder / "data.csv", index=False)
    code = main(["synthesize", str(folder / "data.csv"), "--method", "marginals", "--epsilon", "40", "--seed",
                 str(seed), "--reproducible-noise", "-o", str(folder / "release.parquet")])
    cap = capsys.readouterr()
    written = sorted(p.name for p in folder.iterdir() if p.name != "data.csv")
    seen = {"exit": code, "stdout": _mask(cap.out, folder), "stderr": _mask(cap.err, folder), "files": written}
    if (folder / "release.parquet").exists():
        release = pd.read_parquet(folder / "release.parquet")
        seen["release"] = [(c, str(release[c].dtype)) for c in release.columns]
    if (folder / "release.parquet.budget.json").exists():
        seen["budget"] = _structure(json.loads((folder / "release.parquet.budget.json").read_text()))
    return seen


@pytest.mark.parametrize("case", list(EXTREME))
def test_synthesize_says_and_writes_the_same_with_one_extreme_person_more(case, tmp_path, capsys):
    D = _table()
    D_plus = pd.concat([D, pd.DataFrame([EXTREME[case]])], ignore_index=True)
    for seed in SEEDS:
        without = _observe(D, tmp_path / f"D-{seed}", seed, capsys)
        with_one = _observe(D_plus, tmp_path / f"D+1-{seed}", seed, capsys)
        assert with_one == without, f"{case}, seed {seed}"
