"""Partition selection on course-sized data (issue 24, target 3): event vocabularies and table categories.

    python benchmarks/partition_selection.py                        # this checkout, 5 seeds, both scenarios
    PYTHONPATH=<older checkout> python benchmarks/partition_selection.py --raw before.json   # rows only
    python benchmarks/partition_selection.py --before before.json   # this checkout, merged with a "before" run
    python benchmarks/partition_selection.py --only tables          # one scenario (the other's rows are dropped)

Targets (issue 24, item 3), both at epsilon 1 and delta 1e-6:

* ``oulad``: without ``vocabulary=``, DP-Markov releases at least 80% of the activity types that at least half
  of OULAD module AAA's learners visit. "defaults" are the checkout's (``domain_share="auto"``: 0.2 under the
  geometric model); the outcome column's categories are either given (the codebook) or estimated too (no schema
  at all). Each setting is fitted five times with fresh privacy noise (``random_state`` seeds sampling only). A
  refusal counts as nothing released. ``transition_tv``: the order-1 transition error of 735 sampled learners
  against the real (truncated) ones, row-mass-weighted total variation over the 9 activity types plus the
  unreleased state (so a type not discovered costs its share; 0 = identical).
* ``tables``: a 500-person table without a schema keeps every category held by at least 20% of its people.
  Two tables: a simulated course table (a 4-category grade, every grade held by 20-30% exactly, a 2-category
  gender, a score and an age) and 500 people sampled from OULAD studentInfo (6 text columns, 2 integer ones).
  NPGC (its domain estimate composes in zCDP with the model) at the default ``domain_share`` 0.1 and at 0.2 and
  0.3, five seeds (table and noise); for every category held by at least 20% of the people: was it released.

Results: ``results/partition_selection.{json,md}``.
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

from _common import SHARED_DATA, markdown_table, write_results  # noqa: E402

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


def run_oulad(seeds: int) -> dict:
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


# ------------------------------------------------------------------------------------------ tables
#: the share of people a category must hold to be counted as one the estimate should keep
COMMON = 0.2
DOMAIN_SHARES = (0.1, 0.2, 0.3)


def course_table(n: int = 500, seed: int = 0) -> pd.DataFrame:
    """A simulated course table: every grade held by 20-30% of the people exactly, a gender, a score and an age."""
    rng = np.random.default_rng(seed)
    grade = np.repeat(np.array(["A", "B", "C", "D"]), np.round(n * np.array([0.3, 0.27, 0.23, 0.2])).astype(int))
    grade = rng.permutation(np.resize(grade, n))
    base = {"A": 80.0, "B": 68.0, "C": 58.0, "D": 45.0}
    return pd.DataFrame({"grade": grade, "gender": rng.choice(["F", "M"], n, p=[0.55, 0.45]),
                         "score": (np.vectorize(base.get)(grade) + rng.normal(0, 6, n)).clip(0, 100).round(1),
                         "age": rng.integers(18, 31, n)})


def student_info_sample(n: int = 500, seed: int = 0) -> pd.DataFrame:
    """``n`` people sampled from OULAD studentInfo (all modules): 6 text columns and 2 integer ones."""
    frame = pd.read_csv(SHARED_DATA / "oulad" / "studentInfo.csv")
    cols = ["code_presentation", "gender", "highest_education", "age_band", "disability", "final_result",
            "num_of_prev_attempts", "studied_credits"]
    return frame[cols].sample(n, random_state=seed).reset_index(drop=True)


TABLES = {"course 500 (simulated)": course_table, "OULAD studentInfo 500 (sampled)": student_info_sample}


def fit_table(name: str, share: float, seed: int) -> dict:
    """One NPGC fit without a schema: for every category held by >= 20% of the people, whether it was released."""
    from skdpsynth.synthesizers import NPGCSynthesizer

    X = TABLES[name](seed=seed)
    est = NPGCSynthesizer(epsilon=1.0, delta=1e-6, domain_share=share, random_state=seed)
    refused = ""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(X)
        except Exception as exc:  # noqa: BLE001 -- a refusal is a result here
            refused = f"{type(exc).__name__}: {str(exc)[:160]}"
    specs = {} if refused else {c.name: c for c in est.schema_.columns}
    common = {}
    for col in X.columns:
        if X[col].dtype != object:
            continue
        shares = X[col].value_counts(normalize=True)
        spec = specs.get(col)
        kept = set(spec.categories) if spec is not None and spec.kind == "categorical" else set()
        common[col] = {str(v): v in kept for v in shares[shares >= COMMON].index}
    flat = [ok for col in common.values() for ok in col.values()]
    return {"table": name, "domain_share": share, "seed": seed, "refused": refused, "common": common,
            "kept": int(sum(flat)), "of": len(flat), "seconds": round(time.perf_counter() - start, 2)}


def run_tables(seeds: int) -> dict:
    rows = []
    for name in TABLES:
        for share in DOMAIN_SHARES:
            for seed in range(seeds):
                rows.append(fit_table(name, share, seed))
                print({k: v for k, v in rows[-1].items() if k != "common"}, flush=True)
    return {"rows": rows}


def table_summary(rows: list[dict]) -> list[dict]:
    out = []
    for name in TABLES:
        for share in DOMAIN_SHARES:
            mine = [r for r in rows if r["table"] == name and r["domain_share"] == share]
            if not mine:
                continue
            cols = {}
            for r in mine:
                for col, cats in r["common"].items():
                    n, k = cols.get(col, (0, 0))
                    cols[col] = (n + len(cats), k + sum(cats.values()))
            out.append({"table": name, "domain_share": share, "fits": len(mine),
                        "refused": sum(bool(r["refused"]) for r in mine),
                        "all kept": sum(r["kept"] == r["of"] and not r["refused"] for r in mine),
                        "categories >= 20% kept": f"{sum(r['kept'] for r in mine)}/{sum(r['of'] for r in mine)}",
                        "per column (kept/held over fits)": "; ".join(f"{c} {k}/{n}" for c, (n, k) in cols.items())})
    return out


# ------------------------------------------------------------------------------------------ report
def _commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent).stdout.strip()


def report(result: dict) -> str:
    """The markdown of a run (and of its merged "before" run)."""
    parts = [f"# Partition selection on course-sized data (issue 24, target 3)\n\nepsilon 1, delta 1e-6; "
             f"{result['seeds']} seeds per setting. {result['note']}"]
    for label, data in (("before", result.get("before")), ("after", result)):
        if not data:
            continue
        where = f"commit {data['commit']}, {data['date']}: `{data['command']}`"
        if "oulad" in data:
            o = data["oulad"]
            parts.append(f"## OULAD AAA vocabulary, {label} ({where})\n\n{o['learners']} learners, max_length 200; "
                         f"common types (visited by at least half of the learners): {', '.join(o['common_types'])}. "
                         "Target: at least 80% released.\n\n" + markdown_table(summary(o["rows"],
                                                                                        len(o["common_types"]))))
        if "tables" in data:
            parts.append(f"## 500-person tables without a schema (NPGC), {label} ({where})\n\nTarget: every "
                         "category held by at least 20% of the people released ('all kept': fits that kept every "
                         "one).\n\n" + markdown_table(table_summary(data["tables"]["rows"])))
    return "\n\n".join(parts) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--only", choices=["oulad", "tables"], help="one scenario only")
    parser.add_argument("--raw", help="write the rows only to this JSON file (e.g. a run on an older checkout)")
    parser.add_argument("--before", help="a --raw run to merge as the 'before' rows")
    parser.add_argument("--commit", help="the checkout the package was imported from (default: this one's HEAD)")
    parser.add_argument("--note", default="", help="a sentence on what 'before' and 'after' are")
    args = parser.parse_args()
    start = time.perf_counter()
    result = {"commit": args.commit or _commit(), "date": datetime.date.today().isoformat(), "seeds": args.seeds,
              "command": "python benchmarks/partition_selection.py " + " ".join(sys.argv[1:])}
    if args.only in (None, "oulad"):
        result["oulad"] = run_oulad(args.seeds)
    if args.only in (None, "tables"):
        result["tables"] = run_tables(args.seeds)
    result["seconds"] = round(time.perf_counter() - start, 1)
    if args.raw:
        Path(args.raw).write_text(json.dumps(result, indent=1, default=str))
        return
    if args.before:
        result["before"] = json.loads(Path(args.before).read_text())
    result["note"] = args.note
    write_results("partition_selection", result, report(result))


if __name__ == "__main__":
    main()
