"""NPGC at epsilon 1 against the npgc 0.3.0 reference, like for like, in one run (issue 24, target 2).

    python benchmarks/npgc_utility.py                      # before = HEAD, 5 seeds, UCI dropout and Adult
    python benchmarks/npgc_utility.py --before 65c29af --seeds 5 --datasets uci_dropout adult

Per dataset: one 70 / 30 split stratified by the outcome (seed 0; Adult: its
training file), public schemas from ``skdpsynth.datasets``. Per seed, three
synthetic tables of as many rows as the training split:

* ``NPGC before``: NPGCSynthesizer of the ``--before`` revision (fitted in a
  subprocess whose path starts with that revision's package);
* ``NPGC after``: NPGCSynthesizer of the working tree;
* ``npgc 0.3.0``: the PyPI reference at its claimed epsilon 1 (not DP), fed
  categorical columns as text and the others as floats, fitted in this process.

NPGC runs at epsilon 1, delta 1e-6 (the package default). Every table is
scored by the same code against the same real rows: TSTR / TRTR macro-F1
(one-hot + HistGradientBoosting trained on the synthetic table, tested on the
real 30 % holdout, divided by the same model trained on the real training
split) and the SDMetrics QualityReport against the whole training split.
Results: ``results/npgc_utility.{json,md}``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from _common import markdown_table, write_results  # noqa: E402
from _npgc_utility import _extract, _synthesize, split  # noqa: E402

DATASETS = ("uci_dropout", "adult")
METHODS = ("NPGC before", "NPGC after", "npgc 0.3.0")


def reference(train: pd.DataFrame, schema, seed: int) -> tuple[pd.DataFrame, float]:
    """npgc 0.3.0 at its claimed epsilon 1 (not DP) and its fit seconds; labels mapped back to the schema's."""
    import npgc

    text = {c for c in train.columns if schema[c].kind in ("categorical", "boolean")}
    X = pd.DataFrame({c: (train[c].astype(object).map(lambda v: v if pd.isna(v) else str(v)) if c in text
                          else train[c].astype(float)) for c in train.columns})
    model = npgc.NPGC(epsilon=1.0)
    start = time.perf_counter()
    model.fit(X, random_state=seed)
    fit_s = time.perf_counter() - start
    synth = model.sample(len(train), seed=seed + 1)
    for c in text:
        lookup = {str(x): x for x in schema[c].categories}
        synth[c] = synth[c].map(lambda v, lk=lookup: lk.get(str(v), v))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            synth = schema.validate(synth)
        except Exception:  # a reference that leaves the public domain is scored as it is
            pass
    return synth[train.columns], fit_s


def score(train, hold, synth, schema, target, seed) -> dict:
    from skdpsynth import metrics as M

    ts = M.tstr_scores(train, hold, synth[train.columns], target=target, random_state=seed)
    q = M.sdmetrics_quality(train, synth[train.columns], schema)
    return {"tstr_f1": ts["tstr_f1"], "trtr_f1": ts["trtr_f1"], "tstr_ratio": ts["ratio"], "quality": q["overall"],
            "column_shapes": q["column_shapes"], "pair_trends": q["column_pair_trends"]}


def run(before: str, seeds: int, datasets, out_name: str) -> None:
    rows: list[dict] = []
    start = time.perf_counter()
    root = HERE.parent
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        packages = {"NPGC before": _extract(before, tmp), "NPGC after": root}
        for name in datasets:
            train, hold, schema, target = split(name)
            for seed in range(seeds):
                for method in METHODS:
                    if method in packages:
                        out = _synthesize(method, train, schema, seed, packages[method], tmp)
                        synth, fit_s = out["synthetic"], out["fit_s"]
                    else:
                        synth, fit_s = reference(train, schema, seed)
                    row = {"dataset": name, "method": method, "seed": seed, "fit_s": fit_s,
                           **score(train, hold, synth, schema, target, seed)}
                    rows.append(row)
                    print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
            report(rows, before, seeds, time.perf_counter() - start, out_name)


def report(rows: list[dict], before: str, seeds: int, total_s: float, out_name: str) -> None:
    df = pd.DataFrame(rows)
    metrics = ["tstr_ratio", "tstr_f1", "trtr_f1", "quality", "column_shapes", "pair_trends", "fit_s"]
    agg = df.groupby(["dataset", "method"], sort=False)[metrics].agg(["mean", "std"])
    agg.columns = [f"{m} {s}" if s == "std" else m for m, s in agg.columns]
    agg = agg.reset_index()
    checks = []
    for ds in dict.fromkeys(df["dataset"]):
        a = agg[agg["dataset"] == ds].set_index("method")
        if not {"NPGC after", "npgc 0.3.0"} <= set(a.index):
            continue
        ref_q = a.loc["npgc 0.3.0", "quality"]
        row = {"dataset": ds}
        for m in ("NPGC before", "NPGC after"):
            if m in a.index:
                tag = m.split()[1]
                row[f"TSTR/TRTR {tag}"] = a.loc[m, "tstr_ratio"]
                row[f"SDMetrics {tag}"] = a.loc[m, "quality"]
                row[f"gap to npgc {tag}"] = ref_q - a.loc[m, "quality"]
        row["SDMetrics npgc 0.3.0"] = ref_q
        row["TSTR/TRTR npgc 0.3.0"] = a.loc["npgc 0.3.0", "tstr_ratio"]
        row["ratio >= 0.8"] = bool(a.loc["NPGC after", "tstr_ratio"] >= 0.8)
        row["gap <= 0.02"] = bool(ref_q - a.loc["NPGC after", "quality"] <= 0.02)
        checks.append(row)
    md = [
        "# NPGC at epsilon 1 against npgc 0.3.0, like for like (issue 24, target 2)",
        "",
        f"Total {total_s / 60:.1f} min on a shared 2-core machine. NPGC: epsilon 1, delta 1e-6 (the package default), "
        f"before = `{before}`, after = the working tree; npgc 0.3.0 at its claimed epsilon 1 (not DP). {seeds} seeds "
        "each (NPGC's privacy noise is fresh: seeds set the sampling only). Split 70 / 30 stratified by the outcome "
        "(seed 0; Adult: its training file). TSTR / TRTR: HistGradientBoosting (one-hot) macro-F1 on the real 30 % "
        "holdout, trained on the synthetic table (as many rows as the training split) over the same model trained "
        "on the real training split. SDMetrics: QualityReport of each synthetic table against the whole training "
        "split (the same real rows for all three). Target: TSTR/TRTR >= 0.8 and SDMetrics within 0.02 of npgc "
        "0.3.0 (gap = npgc - NPGC).",
        "",
        "## The targets (mean over seeds)",
        "",
        markdown_table(checks),
        "",
        "## All methods (mean and sd over seeds)",
        "",
        markdown_table(agg.to_dict("records")),
        "",
        "## Every run",
        "",
        markdown_table(rows, ["dataset", "method", "seed", "tstr_ratio", "tstr_f1", "quality", "column_shapes",
                              "pair_trends", "fit_s"]),
    ]
    write_results(out_name, {"rows": rows, "before": before, "seeds": seeds, "total_s": total_s,
                             "delta": 1e-6, "epsilon": 1.0}, "\n".join(md))
    print("\n".join(md), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="HEAD", help="git revision of the 'before' NPGC")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--name", default="npgc_utility", help="result file name under results/")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    run(args.before, args.seeds, args.datasets, args.name)


if __name__ == "__main__":
    main()
