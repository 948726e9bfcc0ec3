"""Tabular benchmark: every tabular synthesizer on Adult, UCI dropout, UCI HESP and OULAD studentInfo.

    python benchmarks/tabular.py            # full run (reduced GAN settings, see the markdown)
    python benchmarks/tabular.py --quick    # smoke run: two datasets, two budgets, tiny GANs

Per setting (dataset x method x epsilon x seed): fit and sample time, peak RSS
increase of the fit, SDMetrics quality, discriminator AUC, DCR share,
nearest-neighbour membership-inference AUC, TSTR macro-F1 and its ratio to TRTR.
Settings run through :mod:`_grid_runner` (joblib; a Dask cluster runs them
unchanged). Results: ``results/tabular.{json,md}`` and ``results/tabular_*.png``.
"""

from __future__ import annotations

import argparse
import functools
import math
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, SHARED_DATA, machine, markdown_table, measure, write_results  # noqa: E402
from _grid_runner import make_grid, run_grid  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0, 5.0, 10.0)
DATASETS = ("uci_hesp", "uci_dropout", "oulad", "adult")  # cheapest first
DP_METHODS = ("DPMarginals", "DPHistogram", "MST", "NPGC", "DPCTGAN", "PATEGAN")
NONPRIVATE = ("CTGAN", "TVAE")
METRIC_ROWS = 2000  # rows of train / holdout / synthetic used by the distance and discriminator metrics
DELTA = 1e-6


# ------------------------------------------------------------------------------------------ data
@functools.lru_cache(maxsize=8)
def load(name: str) -> tuple[pd.DataFrame, pd.DataFrame, object, str]:
    """(train, holdout, public schema, target); ``skdpsynth.datasets`` loaders when present."""
    from sklearn.model_selection import train_test_split

    try:
        import skdpsynth.datasets as D

        path = SHARED_DATA / name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if name == "adult":
                b = D.load_adult(path=path, download=False)
                train, hold = b.train.reset_index(drop=True), b.test.reset_index(drop=True)
            else:
                loader = {"uci_dropout": D.load_uci_dropout, "uci_hesp": D.load_uci_hesp}.get(name)
                if loader is not None:
                    b = loader(path=path, download=False)
                    frame = b.frame
                else:
                    b = D.load_oulad(path=path, download=False, with_clickstream=False)
                    frame = b.tables["studentInfo"] if "studentInfo" in getattr(b, "tables", {}) else b.frame
                    frame = frame.drop(columns=[c for c in ("id_student",) if c in frame.columns])
                    imd = b.schema["imd_band"].categories
                    if "10-20" not in imd and "10-20%" in imd:  # the published file spells one band without '%'
                        frame = frame.assign(imd_band=frame["imd_band"].replace({"10-20": "10-20%"}))
                y = frame[b.target]
                train, hold = train_test_split(frame, test_size=0.3, random_state=0,
                                               stratify=y if y.value_counts().min() >= 2 else None)
                train, hold = train.reset_index(drop=True), hold.reset_index(drop=True)
            schema = b.schema.select(list(train.columns)) if hasattr(b.schema, "select") else b.schema
            target = b.target
    except (ImportError, AttributeError, KeyError):
        from _tabular_data import TARGETS, load_tabular

        train, hold, schema = load_tabular(name, SHARED_DATA)
        target = TARGETS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train, hold = schema.validate(train), schema.validate(hold)
    return train, hold, schema, target


# ------------------------------------------------------------------------------------------ methods
def make_synthesizer(method: str, epsilon: float | None, schema, seed: int, quick: bool, n_rows: int):
    """The estimator of a setting (GANs at reduced settings; see the markdown)."""
    import skdpsynth as S

    common = {"schema": schema, "random_state": seed}
    if method == "DPMarginals":
        return S.DPMarginalsSynthesizer(epsilon=epsilon, delta=DELTA, n_bins=32, **common)
    if method == "DPHistogram":
        return S.DPHistogramSynthesizer(epsilon=epsilon, delta=DELTA, n_bins=8, **common)
    if method == "MST":
        return S.MSTSynthesizer(epsilon=epsilon, delta=DELTA, n_bins=32, **common)
    if method == "NPGC":
        return S.NPGCSynthesizer(epsilon=epsilon, delta=DELTA, **common)
    if method == "DPCTGAN":
        epochs = 2 if quick else (3 if n_rows > 10000 else 20)
        return S.DPCTGANSynthesizer(epsilon=epsilon, delta=DELTA, epochs=epochs, batch_size=256,
                                    hidden_dims=(128, 128), **common)
    if method == "PATEGAN":
        n_iter = 20 if quick else (100 if n_rows > 10000 else 200)
        return S.PATEGANSynthesizer(epsilon=epsilon, delta=DELTA, n_iter=n_iter,
                                    n_teachers=max(5, min(50, n_rows // 100)), **common)
    if method == "CTGAN":
        epochs = 2 if quick else (5 if n_rows > 10000 else 50)
        return S.CTGANSynthesizer(epochs=epochs, batch_size=500, **common)
    if method == "TVAE":
        epochs = 2 if quick else (5 if n_rows > 10000 else 50)
        return S.TVAESynthesizer(epochs=epochs, batch_size=500, **common)
    raise ValueError(f"unknown method {method!r}")


def _subsample(df: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    return df if len(df) <= n else df.sample(n, random_state=seed).reset_index(drop=True)


def evaluate_setting(setting: dict) -> dict:
    """Fit, sample and score one setting (a module-level task for the grid runner)."""
    import torch

    from skdpsynth import metrics as M

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    train, hold, schema, target = load(setting["dataset"])
    est = make_synthesizer(setting["method"], setting["epsilon"], schema, setting["seed"], setting["quick"],
                           len(train))
    _, fit_s, fit_mib = measure(lambda: est.fit(train))
    synth, sample_s, _ = measure(lambda: est.sample(len(train), random_state=setting["seed"]))
    out = {"fit_s": fit_s, "sample_s": sample_s, "fit_peak_mib": fit_mib,
           "epsilon_spent": float(est.privacy_spent_.epsilon), "delta_spent": float(est.privacy_spent_.delta),
           "n_train": len(train)}
    if hasattr(est, "epochs"):
        out["epochs"] = est.epochs
    seed = setting["seed"]
    tr, ho, sy = (_subsample(train, METRIC_ROWS, seed), _subsample(hold, METRIC_ROWS, seed + 1),
                  _subsample(synth, METRIC_ROWS, seed + 2))
    t0 = time.perf_counter()
    failures = {}

    def guarded(name, fn):
        try:
            return fn()
        except Exception as exc:  # one failing metric is recorded, the others still run
            failures[name] = f"{type(exc).__name__}: {exc}"
            return None

    q = guarded("quality", lambda: M.sdmetrics_quality(_subsample(tr, 1000, seed), _subsample(sy, 1000, seed),
                                                       schema)) or {}
    out["quality"] = q.get("overall", np.nan)
    out["column_shapes"] = q.get("column_shapes")
    out["column_pair_trends"] = q.get("column_pair_trends")
    auc = guarded("disc_auc", lambda: M.discriminator_auc(tr, sy, cv=3, max_rows=METRIC_ROWS, random_state=seed))
    out["disc_auc"] = np.nan if auc is None else auc
    nn = guarded("nn_privacy", lambda: M.nearest_neighbour_privacy(tr, ho, sy, schema=schema, random_state=seed)) or {}
    out["membership_auc"] = nn.get("membership_auc", np.nan)
    out["dcr_share"] = nn.get("dcr_share", np.nan)
    out["copy_rate_train"] = nn.get("synthetic_copy_rate_train", np.nan)
    ts = guarded("tstr", lambda: M.tstr_scores(_subsample(train, 10000, seed), _subsample(hold, 5000, seed + 1),
                                               _subsample(synth, 10000, seed + 2), target=target,
                                               random_state=seed)) or {}
    out["tstr_f1"], out["trtr_f1"] = ts.get("tstr_f1", np.nan), ts.get("trtr_f1", np.nan)
    out["tstr_ratio"] = ts.get("ratio", np.nan)
    out["metric_errors"] = failures or None
    out["metrics_s"] = time.perf_counter() - t0
    return out


def _histogram_feasible(name: str) -> tuple[bool, float]:
    from skdpsynth._grid import PublicGrid

    _, _, schema, _ = load(name)
    cells = float(np.prod(PublicGrid(schema, 8).n_cells.astype(float)))
    return cells <= 1e7, cells


def mst_memory_probe(dataset: str = "uci_dropout") -> dict:
    """MST's fit in a fresh process: peak RSS of the whole process (MiB) and fit seconds."""
    code = (
        "import sys, time, resource, warnings; warnings.simplefilter('ignore');"
        f"sys.path[:0] = [{str(ROOT)!r}, {str(Path(__file__).parent)!r}];"
        "import tabular as T; tr, ho, sc, tg = T.load(%r);" % dataset +
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024;"
        "import skdpsynth as S; t = time.perf_counter();"
        "S.MSTSynthesizer(epsilon=1.0, delta=1e-9, schema=sc, n_bins=32, random_state=0).fit(tr);"
        "print(time.perf_counter() - t, base, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    fit_s, base, peak = map(float, out.stdout.split()[-3:])
    return {"dataset": dataset, "fit_s": fit_s, "rss_before_fit_mib": base, "peak_rss_mib": peak,
            "fit_increase_mib": peak - base}


# ------------------------------------------------------------------------------------------ report
def _agg(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame([r for r in rows if r["status"] == "ok"])
    metrics = ["fit_s", "sample_s", "fit_peak_mib", "quality", "disc_auc", "dcr_share", "membership_auc",
               "tstr_f1", "trtr_f1", "tstr_ratio"]
    df["eps"] = df["epsilon"].map(lambda e: "none" if e is None or (isinstance(e, float) and math.isnan(e)) else e)
    return df.groupby(["dataset", "method", "eps"], sort=False)[metrics].mean().reset_index()


def _plots(agg: pd.DataFrame, prefix: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    for metric, label in [("quality", "SDMetrics quality"), ("tstr_ratio", "TSTR / TRTR macro-F1")]:
        datasets = list(dict.fromkeys(agg["dataset"]))
        fig, axes = plt.subplots(1, len(datasets), figsize=(4 * len(datasets), 3.4), squeeze=False)
        for ax, ds in zip(axes[0], datasets):
            sub = agg[agg["dataset"] == ds]
            for method, g in sub.groupby("method", sort=False):
                priv = g[g["eps"] != "none"]
                if len(priv):
                    ax.plot(priv["eps"].astype(float), priv[metric], marker="o", label=method)
                else:
                    ax.axhline(float(g[metric].iloc[0]), ls="--", lw=1, label=f"{method} (non-private)",
                               color="grey" if method == "CTGAN" else "black")
            ax.set_xscale("log")
            ax.set_title(ds)
            ax.set_xlabel("epsilon")
            ax.set_ylabel(label)
        axes[0][-1].legend(fontsize=7, loc="best")
        fig.tight_layout()
        name = f"{prefix}_{metric}.png"
        fig.savefig(RESULTS / name, dpi=110)
        plt.close(fig)
        files.append(name)
    return files


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run")
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--methods", nargs="*", default=None)
    parser.add_argument("--seeds", type=int, default=1, help="seeds of the cheap DP methods")
    parser.add_argument("--verbose", type=int, default=0, help="joblib progress output")
    parser.add_argument("--epsilons", nargs="*", type=float, default=None)
    parser.add_argument("--name", default=None, help="result file name (default: tabular / tabular_quick)")
    args = parser.parse_args(argv)
    quick = args.quick
    datasets = args.datasets or (["uci_hesp"] if quick else list(DATASETS))
    epsilons = args.epsilons or ([1.0, 10.0] if quick else list(EPSILONS))
    methods = args.methods or list(DP_METHODS + NONPRIVATE)
    try:
        import skdpsynth.synthesizers._npgc  # noqa: F401
    except ImportError:
        methods = [m for m in methods if m != "NPGC"]
    settings, skipped = [], []
    for ds in datasets:
        feasible, cells = _histogram_feasible(ds)
        for m in methods:
            if m == "DPHistogram" and not feasible:
                skipped.append({"dataset": ds, "method": m, "reason": f"{cells:.3g} cells > 1e7 at n_bins=8"})
                continue
            if m in NONPRIVATE:
                settings += make_grid([ds], [m], [None], [0], quick=quick)
            elif m in ("DPCTGAN", "PATEGAN") and not quick:
                settings += make_grid([ds], [m], [1.0, 10.0], [0], quick=quick)
            else:
                settings += make_grid([ds], [m], epsilons, range(args.seeds), quick=quick)
    import tabular  # the task must be pickled by reference to an importable module, not __main__

    name = args.name or ("tabular_quick" if quick else "tabular")
    start = time.perf_counter()
    rows: list[dict] = []
    probe = None
    for ds in datasets:  # checkpoint: the result files are rewritten after every dataset
        rows += run_grid([s for s in settings if s["dataset"] == ds], tabular.evaluate_setting, n_jobs=args.n_jobs,
                         verbose=args.verbose)
        if ds == "uci_dropout" and "MST" in methods:
            try:
                probe = mst_memory_probe("uci_dropout")
            except Exception as exc:  # the grid's results matter more than the probe
                probe = {"error": f"{type(exc).__name__}: {exc}"}
        total_s = time.perf_counter() - start
        done = list(dict.fromkeys(r["dataset"] for r in rows))
        agg = _agg(rows)
        plots = _plots(agg, name)
        md = _markdown(agg, rows, skipped, probe, quick, total_s, plots, args.seeds)
        if len(done) < len(datasets):
            md = md.replace("\n", f"\n\n**Partial: datasets completed so far: {done}.**\n", 1)
        write_results(name, {"settings": len(settings), "total_s": total_s, "rows": rows, "skipped": skipped,
                             "mst_memory_probe": probe, "quick": quick, "datasets_done": done}, md)
    print(md)


def _speed_table(agg: pd.DataFrame) -> tuple[list[dict], str]:
    rows = []
    for ds in dict.fromkeys(agg["dataset"]):
        sub = agg[agg["dataset"] == ds]

        def fit(method: str, eps=None, sub=sub) -> float:
            g = sub[sub["method"] == method]
            if eps is not None:
                g = g[g["eps"] == eps]
            return float(g["fit_s"].mean()) if len(g) else float("nan")

        npgc = fit("NPGC", 1.0)
        rows.append({"dataset": ds, "NPGC fit s (eps 1)": npgc, "MST fit s (eps 1)": fit("MST", 1.0),
                     "CTGAN fit s": fit("CTGAN"), "TVAE fit s": fit("TVAE"),
                     "MST / NPGC": fit("MST", 1.0) / npgc, "CTGAN / NPGC": fit("CTGAN") / npgc,
                     "TVAE / NPGC": fit("TVAE") / npgc})
    return rows, markdown_table(rows, digits=3)


def _markdown(agg, rows, skipped, probe, quick, total_s, plots, n_seeds) -> str:
    eps_list = sorted({r["epsilon"] for r in rows
                       if r["epsilon"] is not None and r["method"] in ("MST", "NPGC", "DPMarginals")})
    errors = [r for r in rows if r["status"] != "ok"]
    speed_rows, speed_md = _speed_table(agg)
    epochs = sorted({(r["dataset"], r["method"], r.get("epochs")) for r in rows if r.get("epochs")}, key=str)
    lines = [
        "# Tabular benchmark" + (" (quick smoke run)" if quick else ""),
        "",
        f"Machine: {machine()}; shared with other jobs (2 cores, loaded), torch at 1 thread. "
        f"Total wall time {total_s / 60:.1f} min.",
        "",
        "Protocol: train/holdout = Adult's official split; other datasets 70/30 stratified (seed 0). Public "
        "schemas from `skdpsynth.datasets` (codebooks). delta = 1e-6 for every DP method. Metrics on at most "
        f"{METRIC_ROWS} rows of train / holdout / synthetic (distance metrics, discriminator AUC with 3-fold CV, "
        "SDMetrics quality on 1,000 rows); TSTR/TRTR on up to 10,000 synthetic / training rows and 5,000 holdout rows "
        "(one-hot + HistGradientBoosting, macro-F1). Fit memory = peak RSS increase during `fit` in the "
        "benchmark process (a lower bound once earlier settings have grown the heap; see the MST probe below "
        "for a fresh-process figure).",
        "",
        "**Reductions (stated honestly).** "
        + ("Quick mode: HESP only, epsilon in {1, 10}, one seed, GANs at 2 epochs / 20 iterations. "
           if quick else
           f"Cheap DP methods (DP-Marginals, DP-Histogram, MST, NPGC): epsilon in {eps_list}, "
           f"{n_seeds} seed(s). "
           "DP-CTGAN and PATE-GAN: epsilon in {1, 10} only, one seed; DP-CTGAN 20 epochs (3 on Adult / OULAD), "
           "PATE-GAN 200 iterations (100 on Adult / OULAD). CTGAN / TVAE: one seed, 50 epochs (5 on Adult / "
           "OULAD) instead of the package default 300 -- their fit time scales linearly with epochs, so their "
           "300-epoch fit time is about 6x (60x on Adult / OULAD) the figure shown. ")
        + "DP-Histogram only where the full table has at most 1e7 cells at 8 bins per numeric column.",
        "",
        "Epochs used: " + "; ".join(f"{d}/{m}: {e}" for d, m, e in epochs) if epochs else "",
        "",
        "## Speed (the headline): fit time on the same machine",
        "",
        speed_md,
        "",
    ]
    if probe and "error" not in probe:
        lines += [
            "## MST memory on UCI dropout (37 columns)",
            "",
            f"Fresh process, epsilon 1, delta 1e-9, 32 bins: fit {probe['fit_s']:.2f} s, peak RSS of the whole "
            f"process {probe['peak_rss_mib']:.0f} MiB (of which {probe['rss_before_fit_mib']:.0f} MiB before the fit: "
            f"Python, pandas, the data), so the fit adds {probe['fit_increase_mib']:.0f} MiB. Public private-pgm "
            "MST: ~4 GB and ~5 min on the same table (METHODS.md: 278 s, 3.7 GB).",
            "",
        ]
    cols = ["dataset", "method", "eps", "quality", "disc_auc", "dcr_share", "membership_auc", "tstr_f1", "trtr_f1",
            "tstr_ratio", "fit_s", "sample_s", "fit_peak_mib"]
    lines += ["## All results (mean over seeds)", "", markdown_table(agg[cols].to_dict("records"), cols, digits=3), ""]
    lines += [f"![{p}]({p})" for p in plots] + [""]
    if skipped:
        lines += ["## Not run", "", markdown_table(skipped), ""]
    if errors:
        lines += ["## Errors", "", markdown_table([{k: r[k] for k in ("dataset", "method", "epsilon", "error")}
                                                   for r in errors]), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
