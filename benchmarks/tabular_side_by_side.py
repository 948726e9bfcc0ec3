"""Side by side in one run: our NPGC, MST and AIM against private-pgm's MST and AIM, npgc 0.3.0 and SDV.

    python benchmarks/tabular_side_by_side.py --quick
    python benchmarks/tabular_side_by_side.py --pgm-python /venv/bin/python --pgm-src /path/to/private-pgm \\
        --ref-python /venv2/bin/python

Per dataset (Adult, UCI dropout, OULAD, UCI HESP; 70/30 stratified split,
seed 0) and epsilon: every fit runs in a fresh subprocess (fit seconds, peak
RSS of that process), then the synthetic table (as many rows as the training
split) is scored: SDMetrics QualityReport (overall, column shapes, pair
trends) against the training split, and TSTR macro-F1 (one-hot +
HistGradientBoosting trained on synthetic rows, tested on the real 30 %).
Our DP methods run ``--seeds`` seeds; private-pgm's MST and AIM per epsilon,
each ``--pgm-seeds`` seeds (default 1); the non-DP references once.
private-pgm gets our public grid's cell codes (the same discretisation, 32
bins) and its output is decoded uniformly inside the bins.
Order of the fits: every fast fit first, dataset by dataset (ours, private-pgm's
MST, the references), then private-pgm's AIM (6-40 min a fit on UCI dropout
or Adult, by machine and load) at the first epsilon on every table, smallest tables
first, then at the next epsilon: a run stopped for time keeps every fast fit
and the AIM fits it reached; the planned fits it did not reach are listed.
The references need their own environments (``--pgm-python``, ``--ref-python``);
a method whose environment is missing is listed as not run. private-pgm's newest
commit (4d2b3c5, JAX) runs with the versions of its release time, e.g.
``python -m venv pgm && pgm/bin/pip install "jax==0.7.0" "jaxlib==0.7.0" "chex==0.1.90"
"optax==0.2.5" "pandas==2.3.1" matplotlib -e private-pgm`` (jax 0.10 fails in its
estimation, pandas 3 in its sampler). CTGAN and TVAE (``--deep-epochs 300``, the
papers' epochs; ``--deep-methods``) run in this environment (the ``ctgan`` package
of the ``bench`` extra), after the fast fits and before private-pgm's AIM; at 300
epochs a CTGAN fit takes about 1 ms per training row and epoch on 2 cores.
The md records each environment's versions.
Results: ``results/tabular_side_by_side{,_quick}.{json,md,png}``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from _common import RESULTS, machine, markdown_table, write_results  # noqa: E402
from _peak_rss import peak_mib  # noqa: E402

DATASETS = ("uci_hesp", "uci_dropout", "oulad", "adult")
OURS = ("NPGC", "MST", "AIM", "AIM (target x4)")
AIM_ORDER = ("uci_hesp", "oulad", "uci_dropout", "adult")  # private-pgm AIM fits: smallest tables first
DEEP = {"ctgan": "CTGAN (not DP)", "tvae": "TVAE (not DP)"}  # the ctgan package, in our own environment
DELTA = 1e-9
N_BINS = 32


def _load(name: str):
    import tabular

    return tabular.load(name)


TARGET_WEIGHT = 4.0  # "AIM (target x4)": all 2-way marginals, those holding the outcome weighted 4


def make_ours(method: str, epsilon: float | None, schema, seed: int, columns=None, target=None):
    """One of our synthesizers at the benchmark's settings."""
    import skdpsynth as S
    from skdpsynth.synthesizers._aim import AIMSynthesizer

    if method == "AIM (target x4)":
        cols = list(columns)
        workload = {(a, b): (TARGET_WEIGHT if target in (a, b) else 1.0) for i, a in enumerate(cols)
                    for b in cols[i + 1:]}
        return AIMSynthesizer(epsilon=epsilon, delta=DELTA, schema=schema, random_state=seed, workload=workload)
    cls = {"NPGC": S.NPGCSynthesizer, "MST": S.MSTSynthesizer, "AIM": AIMSynthesizer}[method]
    return cls(epsilon=epsilon, delta=DELTA, schema=schema, random_state=seed)




def worker(spec: dict) -> None:
    """Fit one of our methods in this (fresh) process; print fit time and peak RSS; pickle the sample."""
    warnings.simplefilter("ignore")
    train, _, schema, target = _load(spec["dataset"])
    est = make_ours(spec["method"], spec["epsilon"], schema, spec["seed"], train.columns, target)
    base = peak_mib()
    start, cpu = time.perf_counter(), time.process_time()
    est.fit(train)
    fit_s, fit_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    peak = peak_mib()
    synth = est.sample(len(train), random_state=spec["seed"])
    Path(spec["out"]).write_bytes(pickle.dumps(synth))
    extra = {"rounds": getattr(est, "n_rounds_", None), "epsilon_spent": float(est.privacy_spent_.epsilon)}
    print(json.dumps({"fit_s": fit_s, "fit_cpu_s": fit_cpu_s, "peak_rss_mib": peak, "rss_before_fit_mib": base,
                      **extra}))


def _run(cmd: list[str], timeout: float) -> dict:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def fit_ours(dataset, method, epsilon, seed, tmp: Path, timeout) -> tuple[dict, pd.DataFrame]:
    out = tmp / f"{dataset}_{method}_{epsilon}_{seed}.pkl"
    spec = {"dataset": dataset, "method": method, "epsilon": epsilon, "seed": seed, "out": str(out)}
    info = _run([sys.executable, __file__, "--worker", json.dumps(spec)], timeout)
    return info, pickle.loads(out.read_bytes())


def fit_pgm(dataset, mechanism, epsilon, seed, tmp: Path, args) -> tuple[dict, pd.DataFrame]:
    """private-pgm's own mechanism on our grid codes (its code run unchanged, in its environment).

    With ``--pgm-aim-from DIR``, AIM's fit is read from ``DIR/{dataset}_aim.{json,csv}`` at epsilon 1 and
    ``DIR/{dataset}_aim_eps{epsilon:g}.{json,csv}`` at other epsilons (a run of ``_pgm_runner.py`` made
    earlier on the same codes) instead of being repeated.
    """
    from skdpsynth._grid import PublicGrid

    train, _, schema, _ = _load(dataset)
    grid = PublicGrid(schema, N_BINS)
    names = [g.spec.name for g in grid.columns]
    safe = [f"c{j}" for j in range(len(names))]  # private-pgm reads column names from the CSV header
    stem = f"{dataset}_aim" if epsilon == 1.0 else f"{dataset}_aim_eps{epsilon:g}"
    saved = Path(args.pgm_aim_from or "") / f"{stem}.csv"
    if mechanism == "aim" and args.pgm_aim_from and args.no_pgm_aim and not saved.exists():
        raise FileNotFoundError(f"no earlier private-pgm AIM fit at {saved} (and --no-pgm-aim)")
    if mechanism == "aim" and args.pgm_aim_from and saved.exists():
        info = json.loads([ln for ln in saved.with_suffix(".json").read_text().splitlines() if ln.startswith("{")][-1])
        codes = pd.read_csv(saved)[safe].to_numpy()  # private-pgm writes its own column order
        return {**info, "note": "fit read from an earlier run of _pgm_runner.py"}, _validated(
            grid.decode(codes, np.random.default_rng(seed)), schema)
    data, domain, out = tmp / f"{dataset}_codes.csv", tmp / f"{dataset}_domain.json", tmp / f"{dataset}_pgm.csv"
    pd.DataFrame(grid.encode(train), columns=safe).to_csv(data, index=False)
    domain.write_text(json.dumps({s: int(k) for s, k in zip(safe, grid.n_cells)}))
    info = _run([args.pgm_python, str(HERE / "_pgm_runner.py"), "--pgm-src", args.pgm_src, "--mechanism", mechanism,
                 "--data", str(data), "--domain", str(domain), "--epsilon", str(epsilon), "--delta", str(DELTA),
                 "--out", str(out), "--seed", str(seed)], args.pgm_timeout)
    codes = pd.read_csv(out)[safe].to_numpy()
    synth = grid.decode(codes, np.random.default_rng(seed))
    return info, _validated(synth, schema)


def fit_ref(dataset, method, epsilon, seed, tmp: Path, args) -> tuple[dict, pd.DataFrame]:
    train, _, schema, _ = _load(dataset)
    data, dtypes, out = tmp / f"{dataset}_train.csv", tmp / f"{dataset}_dtypes.json", tmp / f"{dataset}_{method}.csv"
    kinds = {c: ("str" if schema[c].kind in ("categorical", "boolean") else "float") for c in train.columns}
    train.to_csv(data, index=False)
    dtypes.write_text(json.dumps(kinds))
    deep = method in DEEP
    python = (args.deep_python or sys.executable) if deep else args.ref_python
    cmd = [python, str(HERE / "_ref_runner.py"), "--method", method, "--data", str(data), "--dtypes",
           str(dtypes), "--out", str(out), "--seed", str(seed)]
    cmd += ["--epsilon", str(epsilon)] if epsilon is not None else []
    cmd += ["--epochs", str(args.deep_epochs)] if deep else []
    info = _run(cmd, args.deep_timeout if deep else args.ref_timeout)
    synth = pd.read_csv(out, dtype={c: ("str" if k == "str" else "float") for c, k in kinds.items()})
    for c, k in kinds.items():  # CSV text back to the schema's labels (which may be integers); "1.0" -> 1
        if k == "str":
            lookup = {str(x): x for x in schema[c].categories}
            synth[c] = synth[c].map(lambda v, lk=lookup: lk.get(str(v), lk.get(str(int(float(v))), v)
                                                               if _is_float(v) else v) if isinstance(v, str) else v)
    return info, _validated(synth, schema)


def _is_float(v) -> bool:
    try:
        return float(v).is_integer()
    except (TypeError, ValueError):
        return False


def _validated(synth: pd.DataFrame, schema) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return schema.validate(synth)
        except Exception:  # a reference that leaves the public domain is scored as it is
            return synth


def score(dataset: str, synth: pd.DataFrame, seed: int, metric_rows: int) -> dict:
    from skdpsynth import metrics as M

    train, hold, schema, target = _load(dataset)
    sub = lambda df, s: df if len(df) <= metric_rows else df.sample(metric_rows, random_state=s)  # noqa: E731
    out = {}
    try:
        q = M.sdmetrics_quality(sub(train, 0), sub(synth, seed)[train.columns], schema)
        out.update(quality=q["overall"], shapes=q["column_shapes"], pairs=q["column_pair_trends"])
    except Exception as exc:  # recorded, the other metric still runs
        out["quality_error"] = f"{type(exc).__name__}: {exc}"
    try:  # AIM's workload error on the shared 32-bin grid: mean TVD over all 2-way marginals
        from _tabular_data import two_way_tvd

        out["workload_error"] = two_way_tvd(train, synth[train.columns], schema, n_bins=N_BINS)
    except Exception as exc:
        out["workload_error_error"] = f"{type(exc).__name__}: {exc}"
    try:
        ts = M.tstr_scores(train, hold, synth[train.columns], target=target, random_state=seed)
        out.update(tstr=ts["tstr_f1"], trtr=ts["trtr_f1"])
    except Exception as exc:
        out["tstr_error"] = f"{type(exc).__name__}: {exc}"
    return out


def settings(datasets, epsilons, seeds: int, args) -> list[dict]:
    """Every fit of the run, the fast ones first and private-pgm's AIM (6-40 min a fit) last.

    Dataset by dataset: ours at each epsilon, private-pgm's MST at each epsilon, the non-DP references. Then
    private-pgm's AIM at the first epsilon on every table (smallest tables first, ``AIM_ORDER``), then at the
    next epsilon, and so on: a run stopped for time keeps every fast fit and the AIM fits it reached.
    """
    out = []
    for ds in datasets:
        if not args.no_ours:
            out += [dict(dataset=ds, method=m, epsilon=eps, seed=s, kind="ours") for eps in epsilons
                    for m in (args.methods or OURS) for s in range(seeds)]
        if args.pgm_python and not args.no_pgm_mst:
            out += [dict(dataset=ds, method="private-pgm MST", epsilon=e, seed=s, kind="pgm_mst")
                    for e in epsilons for s in range(args.pgm_seeds)]
        if args.ref_python:
            out.append(dict(dataset=ds, method="npgc 0.3.0 (not DP)", epsilon=1.0, seed=0, kind="npgc"))
            out.append(dict(dataset=ds, method="SDV GaussianCopula (not DP)", epsilon=None, seed=0,
                            kind="gaussian_copula"))
    if args.deep_epochs:  # minutes a fit: after every fast fit, before private-pgm's AIM
        out += [dict(dataset=ds, method=DEEP[kind], epsilon=None, seed=0, kind=kind) for ds in datasets
                for kind in args.deep_methods]
    if args.pgm_python and (not args.no_pgm_aim or args.pgm_aim_from):
        order = [d for d in AIM_ORDER if d in datasets] + [d for d in datasets if d not in AIM_ORDER]
        out += [dict(dataset=ds, method="private-pgm AIM", epsilon=e, seed=s, kind="pgm_aim")
                for e in epsilons for ds in order for s in range(args.pgm_seeds)]
    return out


def run_setting(s: dict, tmp: Path, args) -> dict:
    row = {k: s[k] for k in ("dataset", "method", "epsilon", "seed")}
    try:
        if s["kind"] == "ours":
            info, synth = fit_ours(s["dataset"], s["method"], s["epsilon"], s["seed"], tmp, args.ours_timeout)
        elif s["kind"].startswith("pgm"):
            info, synth = fit_pgm(s["dataset"], s["kind"][4:], s["epsilon"], s["seed"], tmp, args)
        else:
            info, synth = fit_ref(s["dataset"], s["kind"], s["epsilon"], s["seed"], tmp, args)  # kind = runner method
        row.update(info)
        row.update(score(s["dataset"], synth, s["seed"], args.metric_rows))
        row["status"] = "ok"
    except Exception as exc:  # one failing fit is recorded, the run goes on
        row.update(status="error", error=f"{type(exc).__name__}: {exc}"[:300])
    return row


def aggregate(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame([r for r in rows if r["status"] == "ok"])
    if df.empty:
        return df
    df["eps"] = df["epsilon"].map(lambda e: "none" if e is None or (isinstance(e, float) and math.isnan(e)) else e)
    metrics = [c for c in ("fit_s", "fit_cpu_s", "peak_rss_mib", "quality", "shapes", "pairs", "workload_error", "tstr",
                           "trtr") if c in df]
    g = df.groupby(["dataset", "eps", "method"], sort=False)
    agg = g[metrics].mean()
    agg["seeds"] = g.size()
    if "tstr" in df:
        agg["tstr_sd"] = g["tstr"].std()
    return agg.reset_index()


PAIRS = (("AIM", "private-pgm AIM"), ("AIM (target x4)", "private-pgm AIM"), ("MST", "private-pgm MST"),
         ("AIM", "private-pgm MST"))


def ratios(agg: pd.DataFrame) -> list[dict]:
    """Ours against private-pgm's, measured in this run: speed-ups (theirs / ours) and utility (ours / theirs)."""
    out = []
    for (ds, eps), sub in agg.groupby(["dataset", "eps"], sort=False):
        by = sub.set_index("method")
        for ours, ref in PAIRS:
            if ours not in by.index or ref not in by.index:
                continue
            a, b = by.loc[ours], by.loc[ref]
            row = {"dataset": ds, "epsilon": eps, "ours": ours, "against": ref, "our seeds": int(a["seeds"]),
                   "their seeds": int(b["seeds"])}
            for col, label in (("fit_s", "speed-up (wall)"), ("fit_cpu_s", "speed-up (CPU)")):
                if col in by and a[col] > 0:
                    row[label] = b[col] / a[col]
            if "peak_rss_mib" in by and b["peak_rss_mib"] > 0:
                row["peak RSS ours / theirs"] = a["peak_rss_mib"] / b["peak_rss_mib"]
            for col, label in (("quality", "SDMetrics ours / theirs"), ("tstr", "TSTR ours / theirs")):
                if col in by and b[col] > 0:
                    row[label] = a[col] / b[col]
            out.append(row)
    return out


def plot(agg: pd.DataFrame, name: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(agg["dataset"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.6 * len(datasets), 3.8), squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        sub = agg[(agg["dataset"] == ds) & (agg["eps"].astype(str).isin(["1.0", "none"]))]
        for k, r in enumerate(sub.itertuples()):
            ax.scatter(r.fit_s, r.quality, color=f"C{k % 10}", label=r.method, s=40)
        ax.set_xscale("log")
        ax.set_xlabel("fit seconds (log)")
        ax.set_ylabel("SDMetrics quality")
        ax.set_title(f"{ds}, eps 1")
        ax.legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    file = f"{name}.png"
    fig.savefig(RESULTS / file, dpi=110)
    plt.close(fig)
    return file


def markdown(agg: pd.DataFrame, rows: list[dict], args, total_s: float, plot_file: str | None) -> str:
    planned = getattr(args, "planned", rows)
    aim_eps = list(dict.fromkeys(f"{t['epsilon']:g}" for t in planned if t.get("kind") == "pgm_aim"))
    pgm = ([] if args.no_pgm_mst else ["MST per epsilon"]) + ([
        "AIM per table at epsilon " + " and ".join(aim_eps) + ", run after every other fit (epsilon "
        f"{aim_eps[0]} on every table first, smallest tables first; 25-30 min a fit on UCI dropout or Adult on 2 "
        "cores)"] if aim_eps else [])
    lines = [f"# Tabular side by side{' (quick)' if args.quick else ''}", "",
             f"Machine: {machine()}, shared with other jobs. Total wall time {total_s / 60:.1f} min.", "",
             "Protocol: 70/30 stratified split (seed 0); each fit in a fresh subprocess (fit wall seconds and CPU "
             "seconds of the fit process -- on a loaded machine CPU seconds are the fairer speed measure; peak "
             "RSS = the fit process's maximum resident set, Python and data included); SDMetrics QualityReport on "
             "at most "
             f"{args.metric_rows} rows of the training split and of the synthetic table; TSTR macro-F1 "
             "(HistGradientBoosting trained on synthetic, tested on the real 30 %); workload error = mean "
             "total-variation distance over all 2-way marginals on the shared 32-bin grid (AIM's workload). "
             "delta = 1e-9. " + ("" if args.no_ours else f"Our DP methods: {args.seeds} seed(s), mean (TSTR sd "
                                 "over seeds in brackets). ")
             + (f"private-pgm's {' and '.join(pgm)}, {args.pgm_seeds} seed(s) each, on our 32-bin public grid, "
                "decoded uniformly inside the bins. " if args.pgm_python and pgm else "")
             + ("npgc 0.3.0 at its claimed epsilon 1 (not DP) and SDV GaussianCopula (not DP) once. "
                if args.ref_python else "") + (
                 f"CTGAN and TVAE (not DP; the ctgan package, {args.deep_epochs} epochs, its other defaults, on the "
                 "CPU) once." if args.deep_epochs else "CTGAN / TVAE (not DP) are not part of this run (their fit "
                 "times and scores at reduced epochs: results/tabular.md)."),
             "", "Environments: " + getattr(args, "versions", "not recorded") + ".",
             "", "Methods planned in this run: " + ", ".join(dict.fromkeys(r["method"] for r in planned))
             + "; AIM (target x4) = our AIM with the workload of all 2-way marginals, "
             "those holding the outcome weighted 4.", ""]
    cols = ["method", "seeds", "fit_s", "fit_cpu_s", "peak_rss_mib", "quality", "shapes", "pairs", "workload_error",
            "tstr", "tstr_sd", "trtr"]
    for (ds, eps), sub in (agg.groupby(["dataset", "eps"], sort=False) if not agg.empty else []):
        lines += [f"## {ds}, epsilon {eps}", "", markdown_table(sub[[c for c in cols if c in sub]].to_dict("records"),
                                                                [c for c in cols if c in sub], digits=3), ""]
    rat = ratios(agg) if not agg.empty else []
    if rat:
        lines += ["## Ours against private-pgm (this run)", "",
                  "Speed-up = their fit seconds / ours (means over each side's seeds); utility ratios = ours / "
                  "theirs (the issue's targets: speed-up >= 100, memory <= 0.1, SDMetrics and TSTR ratios >= 1).", "",
                  markdown_table(rat), ""]
    if plot_file:
        lines += [f"![quality vs fit time]({plot_file})", ""]
    errors = [r for r in rows if r["status"] != "ok"]
    if errors:
        lines += ["## Not run / failed", "", markdown_table([{k: r.get(k) for k in ("dataset", "method", "epsilon",
                                                                                     "error")} for r in errors]), ""]
    rest = planned[len(rows):]
    if rest:
        lines += ["## Planned, not run", "", "Fits of the plan that the run had not reached when this file was "
                  "written (the run ended or was stopped before them):", "",
                  markdown_table([{k: t[k] for k in ("dataset", "method", "epsilon", "seed")} for t in rest]), ""]
    return "\n".join(lines)


def versions(args) -> str:
    """The versions each environment of the run holds (private-pgm's commit and its numerical stack)."""
    probe = ("import importlib.metadata as m, sys\nfor p in sys.argv[1:]:\n    try:\n        print(p, m.version(p))\n"
             "    except m.PackageNotFoundError:\n        print(p, 'absent')")

    def pkgs(python, names):
        try:
            out = subprocess.run([python, "-c", probe, *names], capture_output=True, text=True, timeout=120)
            return ", ".join(out.stdout.split("\n")[:-1]) or out.stderr.strip().splitlines()[-1]
        except Exception as exc:  # an environment that cannot answer is reported as such
            return f"unknown ({type(exc).__name__})"

    parts = ["ours: " + pkgs(sys.executable, ["numpy", "scipy", "pandas", "scikit-learn", "sdmetrics"]
                             + (["ctgan", "torch"] if args.deep_epochs else []))]
    if args.pgm_python:
        commit = subprocess.run(["git", "-C", args.pgm_src, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or "unknown"
        parts.append(f"private-pgm {commit}: " + pkgs(args.pgm_python, ["jax", "jaxlib", "numpy", "scipy",
                                                                          "pandas"]))
    if args.ref_python:
        parts.append("references: " + pkgs(args.ref_python, ["npgc", "sdv", "numpy", "pandas"]))
    return "; ".join(parts)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="UCI HESP and dropout, epsilon 1, one seed, no pgm AIM")
    parser.add_argument("--datasets", nargs="*")
    parser.add_argument("--epsilons", nargs="*", type=float)
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--methods", nargs="*", choices=OURS, help="our methods to run (default: all)")
    parser.add_argument("--name", default=None, help="results file stem (default tabular_side_by_side[_quick])")
    parser.add_argument("--metric-rows", type=int, default=None)
    parser.add_argument("--pgm-python", default=os.environ.get("PRIVATE_PGM_PYTHON"))
    parser.add_argument("--pgm-src", default=os.environ.get("PRIVATE_PGM_SRC"))
    parser.add_argument("--ref-python", default=os.environ.get("REFERENCE_PYTHON"))
    parser.add_argument("--no-pgm-aim", action="store_true")
    parser.add_argument("--no-pgm-mst", action="store_true")
    parser.add_argument("--pgm-seeds", type=int, default=1, help="seeds of each private-pgm fit (default 1)")
    parser.add_argument("--pgm-aim-from", default=None, help="folder of earlier private-pgm AIM fits to reuse")
    parser.add_argument("--ours-timeout", type=float, default=600)
    parser.add_argument("--pgm-timeout", type=float, default=1800)
    parser.add_argument("--ref-timeout", type=float, default=600)
    parser.add_argument("--deep-epochs", type=int, default=0,
                        help="CTGAN and TVAE at this many epochs (the papers' 300); 0 = not run (default)")
    parser.add_argument("--deep-methods", nargs="+", choices=list(DEEP), default=list(DEEP))
    parser.add_argument("--deep-python", default=None, help="Python with the ctgan package (default: this one)")
    parser.add_argument("--deep-timeout", type=float, default=3600)
    parser.add_argument("--no-ours", action="store_true", help="only the references")
    args = parser.parse_args(argv)
    if args.worker:
        return worker(json.loads(args.worker))
    if args.quick:
        args.no_pgm_aim = True
    datasets = args.datasets or (["uci_hesp", "uci_dropout"] if args.quick else list(DATASETS))
    epsilons = args.epsilons or ([1.0] if args.quick else [1.0, 5.0])
    args.seeds = args.seeds or (1 if args.quick else 3)
    args.metric_rows = args.metric_rows or (1000 if args.quick else 5000)
    if args.pgm_python and not args.pgm_src:
        parser.error("--pgm-python needs --pgm-src (a private-pgm checkout)")
    name = args.name or "tabular_side_by_side" + ("_quick" if args.quick else "")
    todo = settings(datasets, epsilons, args.seeds, args)
    args.versions = versions(args)
    args.planned = todo
    rows: list[dict] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for k, s in enumerate(todo):
            rows.append(run_setting(s, Path(tmp), args))
            r = rows[-1]
            print(f"[{k + 1}/{len(todo)}] {s['dataset']} {s['method']} eps={s['epsilon']} seed={s['seed']}: "
                  f"{r['status']} fit={r.get('fit_s', float('nan')):.2f}s q={r.get('quality', float('nan')):.3f} "
                  f"tstr={r.get('tstr', float('nan')):.3f} {r.get('error', '')}", flush=True)
            agg = aggregate(rows)  # checkpoint after every fit: a run ended from outside keeps what it measured
            plot_file = plot(agg, name) if not agg.empty else None
            md = markdown(agg, rows, args, time.perf_counter() - start, plot_file)
            if k + 1 < len(todo):
                md = md.replace("\n", f"\n\n**Partial: {k + 1} of {len(todo)} fits done (the rest were not run).**\n",
                                1)
            write_results(name, {"rows": rows, "aggregate": agg.to_dict("records"),
                                 "ratios": ratios(agg) if not agg.empty else [], "quick": args.quick,
                                 "datasets": datasets, "epsilons": epsilons, "seeds": args.seeds, "done": k + 1,
                                 "planned": [{k2: v for k2, v in t.items()} for t in todo],
                                 "total_s": time.perf_counter() - start}, md)
    print(md)


if __name__ == "__main__":
    main()
