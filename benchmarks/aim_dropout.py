"""AIMSynthesizer settings measured on one table at epsilon 1 (issue 15's protocol), one process, seed by seed.

    python benchmarks/aim_dropout.py --seeds 5 --configs '[{}, {"rounds": 148}]'

The table's 70 / 30 split (stratified by the outcome, seed 0; the split of
``tabular_side_by_side.py``): each setting fits ``AIMSynthesizer(epsilon=1,
delta=1e-9, schema=<public schema>, **setting)`` on the training split for
every seed (fresh secure noise; the seed sets the model draws and sampling),
samples as many rows, and scores TSTR macro-F1 (one-hot + HistGradientBoosting
trained on the synthetic rows, tested on the real 30 %) against TRTR. Fit time
is CPU seconds of this process (``time.process_time``; BLAS at one thread), the
figure to read on a shared machine; wall seconds are beside it. SDMetrics
quality with ``--quality`` (on at most 3,000 rows). A setting's ``"target_weight": w``
stands for the workload of all 2-way marginals with those holding the outcome
weighted ``w``. Results:
``results/aim_<dataset>.{json,md}`` (``--name`` to change).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from _common import machine, markdown_table, write_results  # noqa: E402


def run_one(train, hold, schema, target, setting: dict, seed: int, quality: bool) -> dict:
    """Fit, sample and score one setting at one seed."""
    from skdpsynth import metrics as M
    from skdpsynth.synthesizers._aim import AIMSynthesizer

    kwargs = dict(setting)
    if "target_weight" in kwargs:  # all 2-way marginals, those with the outcome weighted up
        w = float(kwargs.pop("target_weight"))
        cols = list(train.columns)
        kwargs["workload"] = {(a, b): (w if target in (a, b) else 1.0) for i, a in enumerate(cols)
                              for b in cols[i + 1:]}
    est = AIMSynthesizer(epsilon=1.0, delta=1e-9, schema=schema, random_state=seed, **kwargs)
    start, cpu = time.perf_counter(), time.process_time()
    est.fit(train)
    fit_cpu, fit_wall = time.process_time() - cpu, time.perf_counter() - start
    synth = est.sample(len(train), random_state=seed)[train.columns]
    ts = M.tstr_scores(train, hold, synth, target=target, random_state=seed)
    row = {"setting": json.dumps(setting, sort_keys=True), "seed": seed, "tstr": ts["tstr_f1"],
           "trtr": ts["trtr_f1"], "fit_cpu_s": fit_cpu, "fit_wall_s": fit_wall, "rounds": est.n_rounds_,
           "model_cells": int(est.model_.tree.cells()), "epsilon_spent": float(est.privacy_spent_.epsilon)}
    if quality:
        sub = lambda df, s: df if len(df) <= 3000 else df.sample(3000, random_state=s)  # noqa: E731
        q = M.sdmetrics_quality(sub(train, 0), sub(synth, seed), schema)
        row.update(quality=q["overall"], shapes=q["column_shapes"], pairs=q["column_pair_trends"])
    return row


def summarise(rows: list[dict]) -> list[dict]:
    out = []
    for setting in dict.fromkeys(r["setting"] for r in rows):
        rs = [r for r in rows if r["setting"] == setting]
        t = np.array([r["tstr"] for r in rs])
        s = {"setting": setting, "seeds": len(rs), "TSTR mean": t.mean(), "TSTR sd": t.std(ddof=1) if len(t) > 1
             else float("nan"), "TSTR min": t.min(), "TRTR": rs[0]["trtr"],
             "fit CPU s mean": float(np.mean([r["fit_cpu_s"] for r in rs])),
             "fit CPU s max": float(np.max([r["fit_cpu_s"] for r in rs])),
             "rounds mean": float(np.mean([r["rounds"] for r in rs]))}
        if "quality" in rs[0]:
            s["SDMetrics mean"] = float(np.mean([r["quality"] for r in rs]))
        out.append(s)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="uci_dropout")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--configs", default="[{}]", help="JSON list of AIMSynthesizer keyword settings")
    parser.add_argument("--quality", action="store_true", help="also the SDMetrics quality report")
    parser.add_argument("--name", default=None, help="results file stem (default aim_<dataset>)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import tabular

    train, hold, schema, target = tabular.load(args.dataset)
    rows = []
    start = time.perf_counter()
    for setting in json.loads(args.configs):
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            rows.append(run_one(train, hold, schema, target, setting, seed, args.quality))
            print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in rows[-1].items()}, flush=True)
    summary = summarise(rows)
    md = [f"# AIMSynthesizer on {args.dataset} at epsilon 1: settings side by side (one run)", "",
          f"Machine: {machine()}; shared, BLAS at one thread; {time.perf_counter() - start:.0f} s wall in all. "
          "epsilon = 1, delta = 1e-9, public schema; 70 / 30 split (seed 0); TSTR = macro-F1 of "
          "HistGradientBoosting trained on as many synthetic rows as the training split, tested on the real 30 %. "
          "Fit time in CPU seconds of the fitting process (the machine is shared).", "",
          markdown_table(summary), "", "## Every run", "", markdown_table(rows)]
    write_results(args.name or f"aim_{args.dataset}", {"rows": rows, "summary": summary}, "\n".join(md))
    print("\n".join(md[4:5]))


if __name__ == "__main__":
    main()
