"""NPGC fit scaling: time and peak memory against rows and columns, before and after, side by side in one run.

Every measurement runs in a fresh Python process (so the peak RSS is the fit's
own), one at a time, with BLAS at one thread (the machine is shared): the
table is built first, then ``NPGCSynthesizer(epsilon=1, schema=...).fit`` is
timed (best of ``--repeats``) and its peak RSS increase over the process with
the table loaded is sampled every 5 ms. *Before* is the package at
``--before`` (a git revision, extracted with ``git archive``), *after* the
working tree.

Tables: ``adult`` (Adult's training rows resampled with replacement to n rows;
15 columns, 9 of them text) and ``synthetic`` (d columns from a 3-factor
Gaussian copula: continuous, small and wide integer, text categorical and
boolean columns in turn). Grid: n in {1e4, 1e5, 1e6} x d in {15, 50, 100};
plus 1e7 Adult-like rows fitted from a generator of 100,000-row chunks (after
only: the before version needs the table in memory), and the fit on the UCI
dropout and Adult training splits against the ``npgc`` 0.3.0 reference.

Run: ``python benchmarks/npgc_scaling.py`` (about 30 min on 2 shared cores;
``--quick``: n up to 1e5, d = 15 only; ``--adult-only``: the Adult-like rows only, to
``results/npgc_scaling_adult.{json,md}``). Results: ``results/npgc_scaling.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_DATA, machine, markdown_table, write_results  # noqa: E402

DEFAULT_BEFORE = "3aa7b48"  # the last commit before the redesigned NPGC (bfef005)
TIMEOUT_S = 900
ENV_1T = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


# ------------------------------------------------------------------------------------------ in the worker
def _adult(n: int, seed: int = 0):
    from skdpsynth.datasets import load_adult

    b = load_adult(path=SHARED_DATA / "adult", download=False)
    return b.train.sample(n, replace=True, random_state=seed).reset_index(drop=True), b.schema


def _synthetic_spec(d: int) -> dict:
    kinds = ["continuous", "integer", "categorical", "continuous", "boolean", "wide"]
    spec = {}
    for j in range(d):
        kind = kinds[j % len(kinds)]
        if kind == "continuous":
            spec[f"c{j}"] = {"kind": "continuous", "lower": 0, "upper": 100, "nullable": j % 4 == 0}
        elif kind == "integer":
            spec[f"c{j}"] = {"kind": "integer", "lower": 0, "upper": 30, "nullable": False}
        elif kind == "wide":
            spec[f"c{j}"] = {"kind": "integer", "lower": 0, "upper": 5000, "nullable": False}
        elif kind == "categorical":
            spec[f"c{j}"] = {"kind": "categorical", "categories": ["a", "b", "c", "d", "e", "f"]}
        else:
            spec[f"c{j}"] = {"kind": "boolean", "nullable": False}
    return spec


def _synthetic(n: int, d: int, seed: int = 0, start: int = 0):
    import numpy as np
    import pandas as pd
    from scipy.special import ndtr

    from skdpsynth import TableSchema

    spec = _synthetic_spec(d)
    rng = np.random.default_rng([seed, start])
    loadings = np.random.default_rng(seed).normal(0, 0.6, (d, 3))
    cats = np.array(["a", "b", "c", "d", "e", "f"], dtype=object)
    cols = {}
    factors = rng.standard_normal((n, 3)).astype(np.float32)
    for j, (name, s) in enumerate(spec.items()):
        z = factors @ loadings[j].astype(np.float32) + rng.standard_normal(n, dtype=np.float32)
        z /= np.sqrt(1.0 + loadings[j] @ loadings[j])
        if s["kind"] == "continuous":
            x = (50 + 15 * z).clip(0, 100).astype(float)
            if s["nullable"]:
                x[rng.random(n) < 0.05] = np.nan
            cols[name] = x
        elif s["kind"] == "integer":
            cols[name] = np.clip(np.round(s["upper"] * ndtr(z)), 0, s["upper"]).astype(np.int64)
        elif s["kind"] == "categorical":
            cols[name] = cats[np.digitize(z, [-1.0, -0.4, 0.0, 0.5, 1.2])]
        else:
            cols[name] = z > 0.3
    return pd.DataFrame(cols), TableSchema.from_dict(spec)


def training_split(name: str):
    """The 70 % training split (stratified by the outcome, seed 0) of Adult's training file or UCI dropout."""
    from sklearn.model_selection import train_test_split

    from skdpsynth.datasets import load_adult, load_uci_dropout

    if name == "adult":
        b = load_adult(path=SHARED_DATA / "adult", download=False)
        frame = b.train.reset_index(drop=True)
    else:
        b = load_uci_dropout(path=SHARED_DATA / "uci_dropout", download=False)
        frame = b.frame
    train, _ = train_test_split(frame, test_size=0.3, random_state=0, stratify=frame[b.target])
    return train.reset_index(drop=True), b.schema


def _chunk_stream(n: int, rows: int):
    from skdpsynth.datasets import load_adult

    b = load_adult(path=SHARED_DATA / "adult", download=False)
    for i, start in enumerate(range(0, n, rows)):
        yield b.train.sample(min(rows, n - start), replace=True, random_state=i).reset_index(drop=True)


def worker(task: dict) -> dict:
    """One measurement (runs in a fresh process)."""
    import warnings

    warnings.simplefilter("ignore")
    from _common import measure

    import skdpsynth
    from skdpsynth import NPGCSynthesizer

    out = {"package": str(Path(skdpsynth.__file__).parent)}
    if task["table"] == "stream":
        from skdpsynth.datasets import load_adult

        schema = load_adult(path=SHARED_DATA / "adult", download=False).schema
        est = NPGCSynthesizer(epsilon=1.0, schema=schema, random_state=0)
        _, t, mib = measure(lambda: est.fit(_chunk_stream(task["n"], task["chunk_rows"])))
        return {**out, "fit_s": t, "peak_mib": mib, "n_estimate": est.n_estimate_}
    if task["table"] == "adult":
        X, schema = _adult(task["n"])
    elif task["table"] == "synthetic":
        X, schema = _synthetic(task["n"], task["d"])
    else:  # a benchmark training split, for the comparison with the reference
        X, schema = training_split(task["split"])
    times, peaks = [], []
    for _ in range(task["repeats"]):
        if task.get("reference"):
            import logging

            import npgc

            logging.getLogger("npgc").setLevel(logging.WARNING)
            est = npgc.NPGC(epsilon=task["epsilon"])
            _, t, mib = measure(lambda est=est: est.fit(X, random_state=0))
        else:
            est = NPGCSynthesizer(epsilon=task["epsilon"], schema=schema, random_state=0)
            _, t, mib = measure(lambda est=est: est.fit(X))
        times.append(t)
        peaks.append(mib)
    return {**out, "fit_s": min(times), "fit_median_s": sorted(times)[len(times) // 2], "peak_mib": max(peaks),
            "n_rows": len(X), "n_columns": X.shape[1]}


# ------------------------------------------------------------------------------------------ the parent
def _extract(rev: str, into: Path) -> Path:
    """The package at ``rev`` (``git archive``, nothing in the repository is touched)."""
    data = subprocess.run(["git", "archive", "--format=tar", rev, "skdpsynth"], cwd=ROOT, capture_output=True,
                          check=True).stdout
    tar_path = into / "before.tar"
    tar_path.write_bytes(data)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into, filter="data")
    return into


def run_task(task: dict, package_root: Path) -> dict:
    env = {**os.environ, **ENV_1T, "PYTHONPATH": os.pathsep.join([str(package_root), str(ROOT / "benchmarks")])}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(task)]
    start = time.perf_counter()
    try:
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=package_root)
    except subprocess.TimeoutExpired:
        return {**task, "status": f"timeout ({TIMEOUT_S} s)"}
    if res.returncode != 0:
        return {**task, "status": "error: " + res.stderr.strip().splitlines()[-1][:200]}
    row = {**task, **json.loads(res.stdout.strip().splitlines()[-1]), "status": "ok",
           "wall_s": time.perf_counter() - start}
    print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items() if k != "package"}, flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="git revision of the 'before' package")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--adult-only", action="store_true",
                        help="the Adult-like rows only (n = 1e4, 1e5, 1e6), to results/npgc_scaling_adult.{json,md}")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--report-only", action="store_true", help="re-render the markdown from the saved JSON")
    parser.add_argument("--skip-before-above", type=float, default=6e7,
                        help="skip 'before' where n x d exceeds this (it builds an n x d key matrix per column)")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    if args.report_only:
        from _common import RESULTS

        saved = json.loads((RESULTS / f"{_results_name(args)}.json").read_text())
        args.before = saved["before"]
        _report(saved["rows"], saved["reference"], args)
        return
    rows_n = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    widths = [] if args.adult_only else [15] if args.quick else [15, 50, 100]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        before = _extract(args.before, Path(tmp))
        versions = {"before": before, "after": ROOT}
        # the headline: Adult-like rows
        for n in rows_n:
            for version, root in versions.items():
                rep = 1 if n >= 1_000_000 and not args.adult_only else args.repeats
                rows.append(run_task({"table": "adult", "n": n, "d": 15, "epsilon": 1.0, "repeats": rep,
                                      "version": version}, root))
        for d in widths:
            for n in rows_n:
                for version, root in versions.items():
                    if version == "before" and n * d > args.skip_before_above:
                        rows.append({"table": "synthetic", "n": n, "d": d, "version": version,
                                     "status": f"not run (n x d > {args.skip_before_above:.0e})"})
                        continue
                    rep = 1 if n * d >= 1e7 else args.repeats
                    rows.append(run_task({"table": "synthetic", "n": n, "d": d, "epsilon": 1.0, "repeats": rep,
                                          "version": version}, root))
        n_stream = 1_000_000 if args.quick else 10_000_000
        if not args.adult_only:
            rows.append(run_task({"table": "stream", "n": n_stream, "d": 15, "chunk_rows": 100_000, "epsilon": 1.0,
                                  "repeats": 1, "version": "after"}, ROOT))
        reference = []
        for table in () if args.adult_only else ("uci_dropout", "adult"):
            for eps in (1.0, None):
                for version, root in versions.items():
                    reference.append(run_task({"table": f"{table} (70 % split)", "split": table, "epsilon": eps,
                                               "repeats": 7, "version": version}, root))
                reference.append(run_task({"table": f"{table} (70 % split)", "split": table, "epsilon": eps,
                                           "repeats": 7, "version": "npgc 0.3.0", "reference": True}, ROOT))
    _report(rows, reference, args)


def _report(rows: list[dict], reference: list[dict], args) -> None:
    def cell(r):
        return r if r.get("status") == "ok" else {**r, "fit_s": r.get("status"), "peak_mib": ""}

    grid = [cell(r) for r in rows if r["table"] != "stream"]
    pairs = []
    for r in grid:
        if r["version"] != "after":
            continue
        b = next((x for x in grid if x["version"] == "before" and x["table"] == r["table"] and x["n"] == r["n"]
                  and x["d"] == r["d"]), None)
        pairs.append({"table": r["table"], "rows": r["n"], "columns": r["d"],
                      "fit s before": b["fit_s"] if b else "", "fit s after": r["fit_s"],
                      "peak MiB before": b["peak_mib"] if b else "", "peak MiB after": r["peak_mib"],
                      "speed-up": (b["fit_s"] / r["fit_s"]) if b and isinstance(b["fit_s"], float)
                      and isinstance(r["fit_s"], float) else ""})
    stream = [cell(r) for r in rows if r["table"] == "stream"]
    ref_rows = [{"table": r["table"], "epsilon": "None" if r["epsilon"] is None else r["epsilon"],
                 "version": r["version"], "fit s (best of 7)": r.get("fit_s", r.get("status")),
                 "median s": r.get("fit_median_s", ""), "peak MiB": r.get("peak_mib", "")} for r in reference]
    md = [
        "# NPGC fit scaling, before and after (one run)",
        "",
        f"Machine: {machine()}; shared with other jobs, BLAS at one thread; each measurement in a fresh process. "
        f"Before = `{args.before}`, after = the working tree. Fit time: best of {args.repeats}"
        f"{'' if args.adult_only else ' (one run at 1e6 rows, and at 1e5 rows x 100 columns)'}; "
        "peak MiB: the RSS increase during `fit` over the process holding the table, sampled every 5 ms (a lower "
        "bound: a fit that reuses memory freed while the table was built shows almost none). epsilon = 1, "
        "delta = 1e-6, public schema. Before is not run where n x d exceeds "
        f"{args.skip_before_above:.0e} (its n x d key matrices would take several GiB).",
        "",
        "## Fit time and peak memory",
        "",
        markdown_table(pairs),
        "",
        f"## {stream[0]['n'] if stream else 10**7:,} Adult-like rows from a generator of 100,000-row chunks (after; "
        "the table is never in memory)",
        "",
        markdown_table([{"rows": r["n"], "chunk rows": r["chunk_rows"], "fit s": r["fit_s"],
                         "peak MiB": r["peak_mib"]} for r in stream]) if stream else "not run",
        "",
        "## Against the npgc 0.3.0 reference (training splits of the benchmark tables)",
        "",
        markdown_table(ref_rows) if ref_rows else "not run",
    ]
    if args.adult_only:
        md = md[:7]
    write_results(_results_name(args), {"rows": rows, "reference": reference, "before": args.before}, "\n".join(md))
    print("\n".join(md))


def _results_name(args) -> str:
    return "npgc_scaling_adult" if args.adult_only else "npgc_scaling_quick" if args.quick else "npgc_scaling"


if __name__ == "__main__":
    main()
