"""MST fit time against the MST before the shared marginal engine, side by side in one run.

    nice python benchmarks/mst_speed.py [--baseline 78be7b7] [--repeats 10]

The baseline commit is exported with ``git archive`` into a temporary folder (beside a link to the shared data)
and each fit runs in a fresh process of either version, the two interleaved and their order alternated, so both
see the same machine load. Each process loads the dataset with its own version's loader, fits ``MSTSynthesizer``
at epsilon 1 (delta 1e-9, the public schema, ``random_state`` = the repeat) and reports the fit's CPU seconds
(``time.process_time``, the process's first fit: imports done, caches cold). Result: per dataset, the median CPU
seconds of each and the geometric mean of the paired ratios (current / baseline) with a 95 % t interval on the
log ratios; ``results/mst_speed.{json,md}``.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
import tabular  # noqa: E402,F401
from _common import SHARED_DATA, markdown_table, write_results  # noqa: E402

import skdpsynth.synthesizers._mst  # noqa: E402,F401  (the code measured: its files enter the stamp)

DATASETS = ("uci_dropout", "adult")
WORKER = """
import sys, time, warnings
root, dataset, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path[:0] = [root, root + "/benchmarks"]
warnings.simplefilter("ignore")
import tabular
import skdpsynth
assert skdpsynth.__file__.startswith(root), skdpsynth.__file__
train, _, schema, _ = tabular.load(dataset)
est = skdpsynth.MSTSynthesizer(epsilon=1.0, delta=1e-9, schema=schema, random_state=seed)
start = time.process_time()
est.fit(train)
print(time.process_time() - start)
"""


def export(commit: str, into: Path) -> Path:
    """``commit``'s files in ``into/repo``, with ``into/shared/data`` linked to the shared data."""
    archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=HERE.parent, capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into / "repo", filter="data")
    (into / "shared").mkdir()
    (into / "shared" / "data").symlink_to(SHARED_DATA.resolve(), target_is_directory=True)
    return into / "repo"


def fit_cpu(root: Path, dataset: str, seed: int) -> float:
    out = subprocess.run([sys.executable, "-c", WORKER, str(root), dataset, str(seed)], capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1",
                                                     "MPLBACKEND": "Agg"})
    return float(out.stdout.strip().splitlines()[-1])


def summarise(rows: list[dict]) -> list[dict]:
    out = []
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        cur = np.array([r["current_cpu_s"] for r in rows if r["dataset"] == ds])
        base = np.array([r["baseline_cpu_s"] for r in rows if r["dataset"] == ds])
        logs = np.log(cur / base)
        half = stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / math.sqrt(len(logs))
        out.append({"dataset": ds, "repeats": len(logs), "baseline_cpu_s": float(np.median(base)),
                    "current_cpu_s": float(np.median(cur)), "ratio": float(np.exp(logs.mean())),
                    "ratio_low": float(np.exp(logs.mean() - half)), "ratio_high": float(np.exp(logs.mean() + half))})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="78be7b7", help="the commit before the engine (default: 78be7b7)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    args = parser.parse_args(argv)
    rows, start = [], time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        baseline = export(args.baseline, Path(tmp))
        for ds in args.datasets:
            for seed in range(args.repeats):
                order = [("baseline", baseline), ("current", HERE.parent)]
                row = {"dataset": ds, "seed": seed}
                for label, root in order if seed % 2 == 0 else order[::-1]:
                    row[f"{label}_cpu_s"] = fit_cpu(root, ds, seed)
                rows.append(row)
                print(ds, seed, row, flush=True)
    summary = summarise(rows)
    table = markdown_table([{**s, "ratio": f"{s['ratio']:.2f} [{s['ratio_low']:.2f}, {s['ratio_high']:.2f}]"}
                            for s in summary], ["dataset", "repeats", "baseline_cpu_s", "current_cpu_s", "ratio"])
    md = "\n".join(["# MST fit time: current against the MST before the engine", "",
                    f"Baseline {args.baseline} (exported), the current code beside it; epsilon 1, delta 1e-9, public "
                    f"schemas; each fit in a fresh process, interleaved; {time.perf_counter() - start:.0f} s in all.",
                    "CPU seconds of the fit (median); ratio = geometric mean of current / baseline over the paired "
                    "repeats [95 % t interval].", "", table])
    write_results("mst_speed", {"baseline": args.baseline, "rows": rows, "summary": summary}, md)
    print(md)


if __name__ == "__main__":
    main()
