"""MST and AIM releases against those of the versions before the shared marginal engine, side by side in one run.

    nice python benchmarks/engine_quality.py [--baseline 78be7b7] [--seeds 10]

The baseline commit is exported with ``git archive`` (:func:`mst_speed.export`). For each dataset, method and
seed, both versions fit in a fresh process of their own (interleaved, their order alternated, so both see the same
machine load): the version's own loader and public schema, epsilon 1, delta 1e-9, ``random_state`` = the seed,
secure noise; the fit's CPU seconds, then as many synthetic rows as the training split. This run's scoring
(``tabular_side_by_side.score``: TSTR macro-F1 of HistGradientBoosting on the real 30 % holdout, SDMetrics
quality on at most ``--metric-rows`` rows) scores both releases alike. Result: per dataset and method, each
version's mean TSTR and quality, the difference current - baseline with a 95 % t interval over the seeds, and the
geometric mean of the fit CPU ratio current / baseline with its interval; ``results/engine_quality.{json,md}``.
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from _common import markdown_table, write_results  # noqa: E402
from mst_speed import export  # noqa: E402
from tabular_side_by_side import score  # noqa: E402

import skdpsynth.synthesizers._aim  # noqa: E402,F401  (the code measured: its files enter the stamp)
import skdpsynth.synthesizers._mst  # noqa: E402,F401

DATASETS = ("uci_dropout", "adult")
METHODS = ("MST", "AIM")
WORKER = """
import pickle, sys, time, warnings
root, dataset, method, seed, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
sys.path[:0] = [root, root + "/benchmarks"]
warnings.simplefilter("ignore")
import tabular
import skdpsynth
assert skdpsynth.__file__.startswith(root), skdpsynth.__file__
train, _, schema, _ = tabular.load(dataset)
cls = {"MST": skdpsynth.MSTSynthesizer, "AIM": skdpsynth.AIMSynthesizer}[method]
est = cls(epsilon=1.0, delta=1e-9, schema=schema, random_state=seed)
start = time.process_time()
est.fit(train)
cpu = time.process_time() - start
with open(out, "wb") as f:
    pickle.dump(est.sample(len(train), random_state=seed)[list(train.columns)], f)
print(cpu)
"""


def fit(root: Path, dataset: str, method: str, seed: int, out: Path) -> tuple[float, object]:
    """One fit in a fresh process of the version at ``root``: (fit CPU seconds, its synthetic table)."""
    done = subprocess.run([sys.executable, "-c", WORKER, str(root), dataset, method, str(seed), str(out)],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"})
    return float(done.stdout.strip().splitlines()[-1]), pickle.loads(out.read_bytes())


def _interval(x: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95 % Student-t interval."""
    half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else float("nan")
    return float(x.mean()), float(x.mean() - half), float(x.mean() + half)


def summarise(rows: list[dict]) -> list[dict]:
    out = []
    for ds, method in dict.fromkeys((r["dataset"], r["method"]) for r in rows):
        sub = [r for r in rows if r["dataset"] == ds and r["method"] == method]
        row = {"dataset": ds, "method": method, "seeds": len(sub)}
        for metric in ("tstr", "quality"):
            base, cur = (np.array([r[f"{side}_{metric}"] for r in sub]) for side in ("baseline", "current"))
            row.update({f"baseline_{metric}": float(base.mean()), f"current_{metric}": float(cur.mean())})
            row.update(zip((f"{metric}_diff", f"{metric}_diff_low", f"{metric}_diff_high"), _interval(cur - base)))
        logs = np.log(np.array([r["current_cpu_s"] / r["baseline_cpu_s"] for r in sub]))
        mean, low, high = _interval(logs)
        row.update(baseline_cpu_s=float(np.median([r["baseline_cpu_s"] for r in sub])),
                   current_cpu_s=float(np.median([r["current_cpu_s"] for r in sub])),
                   cpu_ratio=math.exp(mean), cpu_ratio_low=math.exp(low), cpu_ratio_high=math.exp(high))
        out.append(row)
    return out


def markdown(summary: list[dict], args, seconds: float) -> str:
    cell = lambda s, m: f"{s[m]:+.3f} [{s[m + '_low']:+.3f}, {s[m + '_high']:+.3f}]"  # noqa: E731
    table = markdown_table([{
        "dataset": s["dataset"], "method": s["method"], "seeds": s["seeds"],
        "TSTR before -> now": f"{s['baseline_tstr']:.3f} -> {s['current_tstr']:.3f}", "TSTR diff": cell(s, "tstr_diff"),
        "quality before -> now": f"{s['baseline_quality']:.3f} -> {s['current_quality']:.3f}",
        "quality diff": cell(s, "quality_diff"),
        "fit CPU s before -> now": f"{s['baseline_cpu_s']:.2f} -> {s['current_cpu_s']:.2f}",
        "fit CPU ratio": f"{s['cpu_ratio']:.2f} [{s['cpu_ratio_low']:.2f}, {s['cpu_ratio_high']:.2f}]"}
        for s in summary])
    return "\n".join([
        "# MST and AIM: the current engine against the versions before it", "",
        f"Baseline {args.baseline} (exported) and the current code, side by side in one run; epsilon 1, delta 1e-9, "
        f"public schemas, secure noise, {args.seeds} seeds; each fit in a fresh process, interleaved; both releases "
        f"scored by this run's code (TSTR macro-F1 on the real 30 % holdout, SDMetrics quality on at most "
        f"{args.metric_rows} rows); {seconds / 60:.1f} min in all.",
        "Diff = current - baseline, mean [95 % t interval over the seeds]; fit CPU: medians, and the geometric mean "
        "of the per-seed ratios current / baseline [95 % t interval].", "", table])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="78be7b7", help="the commit before the engine (default: 78be7b7)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--methods", nargs="*", default=list(METHODS), choices=METHODS)
    parser.add_argument("--metric-rows", type=int, default=2000)
    args = parser.parse_args(argv)
    rows, start = [], time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        baseline = export(args.baseline, Path(tmp))
        for ds in args.datasets:
            for method in args.methods:
                for seed in range(args.seeds):
                    order = [("baseline", baseline), ("current", HERE.parent)]
                    row = {"dataset": ds, "method": method, "seed": seed}
                    for label, root in order if seed % 2 == 0 else order[::-1]:
                        cpu, synth = fit(root, ds, method, seed, Path(tmp) / "synth.pkl")
                        scores = score(ds, synth, seed, args.metric_rows)
                        row.update({f"{label}_cpu_s": cpu, f"{label}_tstr": scores["tstr"],
                                    f"{label}_quality": scores["quality"]})
                    rows.append(row)
                    print(ds, method, seed, {k: round(v, 3) for k, v in row.items() if isinstance(v, float)},
                          flush=True)
    summary = summarise(rows)
    md = markdown(summary, args, time.perf_counter() - start)
    write_results("engine_quality", {"baseline": args.baseline, "seeds": args.seeds, "metric_rows": args.metric_rows,
                                     "rows": rows, "summary": summary}, md)
    print(md)


if __name__ == "__main__":
    main()
