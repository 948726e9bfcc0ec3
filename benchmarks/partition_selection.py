"""DP-Markov's event vocabulary discovered under DP on OULAD module AAA: how many common activity types it releases.

    python benchmarks/partition_selection.py                       # this checkout, 5 seeds
    PYTHONPATH=<older checkout> python benchmarks/partition_selection.py --label before --commit <its commit>

Target (issue 24, item 3): at epsilon 1 without ``vocabulary=``, DP-Markov releases at least 80% of the activity
types that at least half of the learners visit. "defaults" are the checkout's (``domain_share`` 0.1 before, 0.2
after); the "domain_share 0.1" row holds the old default on the new mechanism. Each setting is fitted five
times with fresh privacy noise (``random_state`` seeds sampling only). A refusal counts as nothing released.
``transition_tv``: the order-1 transition error of 735 sampled learners against the real (truncated) ones,
row-mass-weighted total variation over the 9 activity types plus the unreleased state (so a type not discovered
costs its share; 0 = identical).

Results: ``results/partition_selection_<label>.json`` and, with both labels present, ``results/partition_selection.md``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, SHARED_DATA, markdown_table, write_results  # noqa: E402

OUTCOMES = {"final_result": {"kind": "categorical", "nullable": False,
                             "categories": ["Distinction", "Pass", "Fail", "Withdrawn"]}}
SETTINGS = {
    "defaults, outcome codebook given": {"schema": OUTCOMES},
    "defaults, outcomes estimated": {},
    "domain_share 0.1, outcome codebook given": {"domain_share": 0.1, "schema": OUTCOMES},
    "gaussian, outcome codebook given": {"mechanism": "gaussian", "schema": OUTCOMES},
    "gaussian, outcomes estimated": {"mechanism": "gaussian"},
    "reference: public vocabulary (the module's 9 types), outcome codebook given": {"schema": OUTCOMES,
                                                                                   "vocabulary": "catalogue"},
}


def oulad_aaa(folder: Path = SHARED_DATA / "oulad") -> tuple[pd.DataFrame, set]:
    """The long table of module AAA and the activity types at least half of its learners visit (also the
    fixture of tests/test_sequence_domain.py)."""
    from skdpsynth.datasets import load_oulad

    clicks = load_oulad(path=folder, module="AAA", download=False).clickstream
    table = pd.DataFrame({"learner": clicks["code_presentation"] + "-" + clicks["id_student"].astype(str),
                          "date": clicks["date"], "activity_type": clicks["activity_type"],
                          "final_result": clicks["final_result"]})
    n = table["learner"].nunique()
    visits = table.drop_duplicates(["learner", "activity_type"])["activity_type"].value_counts()
    return table, set(visits[visits >= n / 2].index)


UNRELEASED = "(unreleased)"


def transition_tv(real: pd.DataFrame, syn: pd.DataFrame, max_length: int) -> float:
    """Row-mass-weighted TV between real (truncated) and synthetic order-1 transition rows (as benchmarks/sequences.py),
    over the real types plus the unreleased state (missing events in the release)."""
    from skdpsynth.synthesizers._sequence_data import transition_frequencies

    vocab = sorted(real["activity_type"].unique()) + [UNRELEASED]
    real = real[real.groupby("learner").cumcount() < max_length]
    real = real.assign(date=real.groupby("learner").cumcount())
    syn = syn.assign(activity_type=syn["activity_type"].astype(object).fillna(UNRELEASED))
    kw = dict(id_column="learner", order_column="date", event_column="activity_type", states=vocab)
    tr, ts = transition_frequencies(real, **kw), transition_frequencies(syn, **kw)
    weight = np.bincount(pd.Index(vocab).get_indexer(real["activity_type"]), minlength=len(vocab) + 1).astype(float)
    weight[-1] = real["learner"].nunique()  # the START row
    return float((0.5 * np.abs(tr - ts).sum(axis=1) * weight).sum() / weight.sum())


def fit_once(table: pd.DataFrame, most: set, params: dict, seed: int) -> dict:
    """One fit: which of the common types are released, what it spent, or why it refused."""
    from skdpsynth.synthesizers import DPMarkovSynthesizer

    if params.get("vocabulary") == "catalogue":  # the VLE catalogue's types of this module (public)
        params = {**params, "vocabulary": sorted(table["activity_type"].unique())}
    est = DPMarkovSynthesizer(epsilon=1.0, id_column="learner", order_column="date", event_columns="activity_type",
                              label_column="final_result", max_length=200, duplicate_order="stable",
                              random_state=seed, **params)
    start = time.perf_counter()
    refused = ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(table)
        except Exception as exc:  # noqa: BLE001 -- a refusal is a result here
            refused = type(exc).__name__
    released = set() if refused else {s[0] for s in est.states_}
    tv = None if refused else round(transition_tv(table, est.sample(735, random_state=seed), 200), 4)
    return {"seed": seed, "refused": refused, "common_released": len(released & most), "transition_tv": tv,
            "other_released": len(released - most), "seconds": round(time.perf_counter() - start, 2),
            "epsilon_spent": round(est.privacy_spent_.epsilon, 6) if not refused else None}


def run(seeds: int) -> dict:
    table, most = oulad_aaa()
    rows = []
    for name, params in SETTINGS.items():
        for seed in range(seeds):
            rows.append({"setting": name, **fit_once(table, most, params, seed)})
            print(rows[-1], flush=True)
    return {"learners": int(table["learner"].nunique()), "common_types": sorted(most), "rows": rows}


def summary(rows: list[dict], n_common: int) -> list[dict]:
    out = []
    for name in SETTINGS:
        mine = [r for r in rows if r["setting"] == name]
        if mine:
            share = sum(r["common_released"] for r in mine) / (n_common * len(mine))
            out.append({"setting": name, "fits": len(mine), "refused": sum(bool(r["refused"]) for r in mine),
                        "common types released (mean share)": round(share, 3),
                        "per fit": " ".join(str(r["common_released"]) for r in mine),
                        "transition_tv (mean of fits)": _mean([r.get("transition_tv") for r in mine])})
    return out


def _mean(values: list) -> float | str:
    kept = [v for v in values if v is not None]
    return round(float(np.mean(kept)), 4) if kept else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--label", default="after")
    parser.add_argument("--commit", help="the checkout the package was imported from (default: this one's HEAD)")
    args = parser.parse_args()
    commit = args.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                           cwd=Path(__file__).resolve().parent).stdout.strip()
    result = {"commit": commit, "date": datetime.date.today().isoformat(),
              "command": "python benchmarks/partition_selection.py " + " ".join(sys.argv[1:]), **run(args.seeds)}
    n_common = len(result["common_types"])
    parts = []
    for label in ("before", "after"):
        path = RESULTS / f"partition_selection_{label}.json"
        data = result if label == args.label else (json.loads(path.read_text()) if path.exists() else None)
        if data:
            parts.append(f"## {label} (commit {data['commit']}, {data['date']}: `{data['command']}`)\n\n"
                         + markdown_table(summary(data["rows"], n_common)))
    head = (f"# DP vocabulary discovery on OULAD AAA ({result['learners']} learners, epsilon 1, max_length 200)\n\n"
            f"Common types (visited by at least half of the learners): {', '.join(result['common_types'])}. "
            "Target: at least 80% released.\n\n")
    (RESULTS / "partition_selection.md").write_text(head + "\n\n".join(parts) + "\n")
    write_results(f"partition_selection_{args.label}", result, head + parts[-1])


if __name__ == "__main__":
    main()
