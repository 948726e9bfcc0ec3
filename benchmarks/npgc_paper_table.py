"""NPGC's paper table, like for like: NPGC, CTGAN, TVAE, DP-CTGAN, MST and AIM fitted in one run.

    python benchmarks/npgc_paper_table.py --quick                   # UCI dropout, 10 epochs, one seed
    python benchmarks/npgc_paper_table.py --seeds 3 --workers 16 --cuda
    python benchmarks/npgc_paper_table.py --seeds 3 --resume        # continue a stopped run
    python benchmarks/npgc_paper_table.py --report-only             # rebuild the report from the progress file

The paper (papers/npgc-en.md, section 4) compares NPGC with CTGAN and TVAE on UCI tables (Adult, Student
Dropout, ...): SDMetrics quality (overall 0.962, column shapes, column pair trends), discriminator AUC, DCR
share, TSTR and fit time (NPGC 0.65 s, CTGAN 821 s, TVAE 268 s). Its summary states neither the epochs of CTGAN
and TVAE nor an epsilon nor the split; this run uses the ``ctgan`` package's default of 300 epochs
(``--epochs`` overrides), NPGC non-private (the paper's exact-marginal mode) and at ``--epsilon`` beside the
DP methods (DP-CTGAN, MST, AIM of this package) at the same epsilon and delta.

Per dataset (``tabular.load``: Adult's published train / test files; UCI dropout 70/30 stratified, seed 0),
method and seed, one fit runs in a fresh process (``--workers`` of them at a time): fit wall and CPU seconds,
the process's peak RSS, then as many synthetic rows as the training split, timed (sample seconds), then the
scores: SDMetrics QualityReport (overall, column shapes, column pair trends) on at most ``--quality-rows``
rows of the training split and of the synthetic table, discriminator AUC (``skdpsynth.metrics``, 3-fold, at most
``--metric-rows`` (``tabular.METRIC_ROWS``) rows a side; 0.5 = indistinguishable), DCR share and membership
AUC (the same rows and a holdout), and TSTR macro-F1 (HistGradientBoosting trained on the synthetic rows,
tested on the real holdout, and TRTR). Means with 95 % Student-t intervals over seeds.

Every finished fit is appended to ``results/NAME_progress.jsonl`` and the report is rewritten, so a stopped run
keeps what it measured; ``--resume`` skips the fits already there. CTGAN and TVAE need the ``ctgan`` package (the
``bench`` extra); without it the run stops at once unless ``--skip-deep`` drops them (the report says so).
Results: ``results/npgc_paper_table{,_quick}.{json,md}``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from _common import RESULTS, machine, markdown_table, write_results  # noqa: E402
from _peak_rss import peak_mib  # noqa: E402

DATASETS = ("adult", "uci_dropout")  # the two tables the paper's summary names that /work/shared/data holds
#: method -> (private, uses the epsilon); the order of the report's rows
METHODS: dict[str, bool] = {"NPGC (not DP)": False, "CTGAN (not DP)": False, "TVAE (not DP)": False,
                            "NPGC": True, "DP-CTGAN": True, "MST": True, "AIM": True}
DEEP = ("CTGAN (not DP)", "TVAE (not DP)")
DELTA = 1e-9
#: the paper's figures as its summary gives them (papers/npgc-en.md, section 4)
PAPER = {"quality": {"NPGC (not DP)": 0.962},
         "fit_s": {"NPGC (not DP)": 0.65, "CTGAN (not DP)": 821.0, "TVAE (not DP)": 268.0}}
#: relative cost of one fit (for ordering: the longest fits start first when several run at a time)
COST = {"CTGAN (not DP)": 100.0, "TVAE (not DP)": 40.0, "DP-CTGAN": 20.0, "AIM": 5.0, "MST": 1.0, "NPGC": 0.1,
        "NPGC (not DP)": 0.1}
METRICS = ("quality", "shapes", "pairs", "disc_auc", "dcr_share", "membership_auc", "tstr", "trtr", "fit_s",
           "fit_cpu_s", "sample_s", "peak_rss_mib")


# ------------------------------------------------------------------------------------------ one fit (worker)
def _deep(method: str, epochs: int, cuda: bool, seed: int) -> Any:
    """CTGAN or TVAE of the ``ctgan`` package at ``epochs``, its other settings at their defaults."""
    from ctgan import CTGAN, TVAE

    model = (CTGAN(epochs=epochs, enable_gpu=cuda, verbose=False) if method.startswith("CTGAN")
             else TVAE(epochs=epochs, enable_gpu=cuda))
    model.set_random_state(seed)
    return model


class _DeepAdapter:
    """Fit / sample a ``ctgan`` model on a schema-validated frame (discrete columns as text, labels restored)."""

    def __init__(self, model: Any, schema: Any) -> None:
        self.model, self.schema = model, schema

    def fit(self, train: pd.DataFrame) -> _DeepAdapter:
        self.discrete_ = [c for c in train.columns if self.schema[c].kind in ("categorical", "boolean")]
        self.labels_ = {c: {str(v): v for v in train[c].dropna().unique()} for c in self.discrete_}
        frame = train.copy()
        for c in frame.columns:
            frame[c] = frame[c].map(lambda v: "<NA>" if pd.isna(v) else str(v)) if c in self.discrete_ \
                else frame[c].astype(float)
        self.model.fit(frame, discrete_columns=self.discrete_)
        return self

    def sample(self, n: int, random_state: int | None = None) -> pd.DataFrame:
        out = self.model.sample(n)
        for c in self.discrete_:
            out[c] = out[c].map(lambda v, lk=self.labels_[c]: lk.get(str(v), np.nan))
        return out


def make(method: str, schema: Any, seed: int, epsilon: float, epochs: int, cuda: bool) -> Any:
    """The estimator of one fit (``epsilon`` is used by the DP methods only)."""
    import skdpsynth as S
    from skdpsynth.synthesizers._aim import AIMSynthesizer

    if method in DEEP:
        return _DeepAdapter(_deep(method, epochs, cuda, seed), schema)
    if method == "NPGC (not DP)":
        return S.NPGCSynthesizer(epsilon=None, schema=schema, random_state=seed)
    cls = {"NPGC": S.NPGCSynthesizer, "DP-CTGAN": S.DPCTGANSynthesizer, "MST": S.MSTSynthesizer,
           "AIM": AIMSynthesizer}[method]
    return cls(epsilon=epsilon, delta=DELTA, schema=schema, random_state=seed)


def _sub(frame: pd.DataFrame, n: int | None, seed: int) -> pd.DataFrame:
    return frame if n is None or len(frame) <= n else frame.sample(n, random_state=seed).reset_index(drop=True)


def score(train: pd.DataFrame, hold: pd.DataFrame, synth: pd.DataFrame, schema: Any, target: str, seed: int,
          quality_rows: int | None, metric_rows: int, threads: int) -> dict[str, Any]:
    """The paper's metrics for one synthetic table (a failing metric is recorded and the others still run)."""
    from skdpsynth import metrics as M

    synth = synth[train.columns]
    out: dict[str, Any] = {}
    errors: dict[str, str] = {}

    def guarded(name: str, fn: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn()
        except Exception as exc:  # recorded; the other metrics still run
            errors[name] = f"{type(exc).__name__}: {exc}"[:300]
            return None
        finally:
            out[f"{name}_metric_s"] = time.perf_counter() - t0

    q = guarded("quality", lambda: M.sdmetrics_quality(_sub(train, quality_rows, 0), _sub(synth, quality_rows, seed),
                                                       schema)) or {}
    out.update(quality=q.get("overall"), shapes=q.get("column_shapes"), pairs=q.get("column_pair_trends"))
    tr, ho, sy = _sub(train, metric_rows, seed), _sub(hold, metric_rows, seed + 1), _sub(synth, metric_rows, seed + 2)
    out["disc_auc"] = guarded("disc_auc", lambda: M.discriminator_auc(tr, sy, cv=3, max_rows=metric_rows,
                                                                      random_state=seed, n_threads=threads))
    nn = guarded("dcr", lambda: M.nearest_neighbour_privacy(tr, ho, sy, schema=schema, random_state=seed)) or {}
    out.update(dcr_share=nn.get("dcr_share"), membership_auc=nn.get("membership_auc"))
    ts = guarded("tstr", lambda: M.tstr_scores(train, hold, synth, target=target, random_state=seed,
                                               n_threads=threads)) or {}
    out.update(tstr=ts.get("tstr_f1"), trtr=ts.get("trtr_f1"))
    out["metric_errors"] = errors or None
    return out


def worker(spec: dict[str, Any]) -> None:
    """Fit, sample and score one setting in this (fresh) process; print one JSON line."""
    warnings.simplefilter("ignore")
    import tabular
    import torch
    from _common import loaded_dependencies

    torch.set_num_threads(spec["threads"])
    train, hold, schema, target = tabular.load(spec["dataset"])
    est = make(spec["method"], schema, spec["seed"], spec["epsilon"], spec["epochs"], spec["cuda"])
    base = peak_mib()
    start, cpu = time.perf_counter(), time.process_time()
    est.fit(train)
    fit_s, fit_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    peak = peak_mib()
    start = time.perf_counter()
    synth = est.sample(len(train), random_state=spec["seed"])
    sample_s = time.perf_counter() - start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            synth = schema.validate(synth)
        except Exception:  # a generator that leaves the public domain is scored as it is
            pass
    spent = getattr(est, "privacy_spent_", None)
    row = {"fit_s": fit_s, "fit_cpu_s": fit_cpu_s, "sample_s": sample_s, "n_sample": len(synth),
           "n_train": len(train), "peak_rss_mib": peak, "rss_before_fit_mib": base,
           "epsilon_spent": float(spent.epsilon) if spent is not None and spent.is_private else None,
           "model_epochs": spec["epochs"] if spec["method"] in DEEP else getattr(est, "epochs", None)}
    row.update(score(train, hold, synth, schema, target, spec["seed"], spec["quality_rows"], spec["metric_rows"],
                     spec["threads"]))
    row["depends"] = sorted(loaded_dependencies())
    print(json.dumps(row, default=float))


# ------------------------------------------------------------------------------------------ the run
def plan(datasets: list[str], methods: list[str], seeds: int, epsilon: float, args: argparse.Namespace) -> list[dict]:
    """Every fit of the run; with several workers the longest fits (by :data:`COST` and rows) start first."""
    out = [{"dataset": ds, "method": m, "epsilon": epsilon if METHODS[m] else None, "seed": s,
            "epochs": args.epochs if m in DEEP else None}
           for ds in datasets for m in methods for s in range(seeds)]
    if args.workers > 1:
        rows = {"adult": 32561, "uci_dropout": 3096, "uci_hesp": 3000, "oulad": 22800}
        out.sort(key=lambda t: -COST[t["method"]] * rows.get(t["dataset"], 10000))
    return out


def key(t: dict[str, Any]) -> str:
    return json.dumps([t["dataset"], t["method"], t["epsilon"], t["seed"], t["epochs"]])


def run_one(t: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    spec = {**t, "threads": args.threads, "cuda": args.cuda and t["method"] in DEEP, "quality_rows": args.quality_rows,
            "metric_rows": args.metric_rows, "epochs": args.epochs}
    row = dict(t)
    start = time.perf_counter()
    try:
        out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], capture_output=True, text=True,
                             timeout=args.fit_timeout, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        if out.returncode != 0:
            lines = out.stderr.strip().splitlines()
            raise RuntimeError(lines[-1] if lines else f"exit {out.returncode}")
        row.update(json.loads(out.stdout.strip().splitlines()[-1]))
        row["status"] = "ok"
    except Exception as exc:  # one failing fit is recorded, the run goes on
        row.update(status="error", error=f"{type(exc).__name__}: {exc}"[:300])
    row["process_s"] = time.perf_counter() - start
    return row


def _read_progress(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _ci(values: list[float]) -> tuple[float, float, float]:
    from registry import mean_ci

    v = mean_ci(values)
    return (v.value, v.value if v.low is None else v.low, v.value if v.high is None else v.high)


def aggregate(rows: list[dict]) -> list[dict]:
    """Mean and 95 % interval over seeds per (dataset, method)."""
    out = []
    ok = [r for r in rows if r.get("status") == "ok"]
    for ds in dict.fromkeys(r["dataset"] for r in ok):
        for m in METHODS:
            sub = [r for r in ok if r["dataset"] == ds and r["method"] == m]
            if not sub:
                continue
            agg = {"dataset": ds, "method": m, "epsilon": sub[0]["epsilon"], "seeds": len(sub),
                   "epochs": sub[0].get("model_epochs"), "n_train": sub[0].get("n_train"),
                   "n_sample": sub[0].get("n_sample")}
            for f in METRICS:
                vals = [r[f] for r in sub if isinstance(r.get(f), (int, float)) and math.isfinite(r[f])]
                if vals:
                    agg[f], agg[f + "_low"], agg[f + "_high"] = _ci(vals)
            out.append(agg)
    return out


def _fmt(a: dict, f: str, spec: str) -> str:
    if f not in a:
        return "-"
    text = format(a[f], spec)
    if a["seeds"] > 1:
        text += f" [{format(a[f + '_low'], spec)}, {format(a[f + '_high'], spec)}]"
    return text


def _claims(agg: list[dict], ds: str) -> list[dict]:
    """The paper's ranking claims, checked on this run's means (for one dataset)."""
    by = {a["method"]: a for a in agg if a["dataset"] == ds}
    if "NPGC (not DP)" not in by:
        return []

    def rank(field: str, best: str, higher: bool, among: tuple[str, ...]) -> dict:
        have = {m: by[m][field] for m in among if m in by and field in by[m]}
        if best not in have or len(have) < 2:
            return {"holds": "not measured"}
        top = (max if higher else min)(have, key=have.get)
        return {"holds": "yes" if top == best else f"no ({top} {have[top]:.3f} vs {have[best]:.3f})"}

    nd = ("NPGC (not DP)", "CTGAN (not DP)", "TVAE (not DP)")
    claims = [("best column shapes (NPGC, vs CTGAN / TVAE)", "shapes", "NPGC (not DP)", True),
              ("best column pair trends (NPGC)", "pairs", "NPGC (not DP)", True),
              ("best overall quality (NPGC)", "quality", "NPGC (not DP)", True),
              ("lowest discriminator AUC (NPGC)", "disc_auc", "NPGC (not DP)", False),
              ("lowest DCR share (NPGC)", "dcr_share", "NPGC (not DP)", False),
              ("best TSTR (TVAE)", "tstr", "TVAE (not DP)", True),
              ("fastest fit (NPGC)", "fit_s", "NPGC (not DP)", False)]
    return [{"dataset": ds, "paper's claim": c, **rank(f, b, h, nd)} for c, f, b, h in claims]


def markdown(rows: list[dict], todo: list[dict], args: argparse.Namespace, total_s: float, env: dict) -> str:
    agg = aggregate(rows)
    done = {key(r) for r in rows}
    rest = [t for t in todo if key(t) not in done]
    epochs = args.epochs
    lines = [f"# NPGC's paper table, like for like{' (quick)' if args.quick else ''}", ""]
    if rest:
        lines += [f"**Partial: {len(todo) - len(rest)} of {len(todo)} fits done.**", ""]
    lines += [
        f"Machine: {machine()}; {env.get('torch_device', 'CPU')} for CTGAN / TVAE; {args.workers} fit(s) at a time, "
        f"{args.threads} torch thread(s) each. Wall time of this run {total_s / 60:.1f} min"
        f"{' (the machine was shared with other jobs)' if args.quick else ''}.", "",
        "Environment: " + ", ".join(f"{k} {v}" for k, v in env.items() if k != "torch_device") + ".", "",
        "Protocol (the same for every method, one run): split as in `benchmarks/tabular.py` (Adult: the published "
        "adult.data / adult.test files, 32,561 / 16,281 rows; UCI dropout: 70/30 stratified, seed 0, 3,096 / 1,328 "
        "rows); each fit in a fresh process; sample = as many rows as the training split; SDMetrics QualityReport "
        f"on {'all' if args.quality_rows is None else f'at most {args.quality_rows:,}'} rows of the training split "
        f"and of the synthetic table; discriminator AUC (3-fold, at most {args.metric_rows:,} rows a side; 0.5 = "
        "indistinguishable), DCR share (share of synthetic rows closer to the training split than to the holdout; "
        "0.5 = no leak) on the same rows; TSTR macro-F1 = HistGradientBoosting trained on the synthetic table, "
        "tested on the real holdout (TRTR: trained on the training split). "
        f"CTGAN and TVAE: the `ctgan` package, {epochs} epochs, its other defaults. NPGC (not DP) = "
        f"`NPGCSynthesizer(epsilon=None)`; NPGC, DP-CTGAN (its default 10 epochs), MST and AIM at epsilon "
        f"{args.epsilon:g}, delta {DELTA:g}. "
        f"{args.seeds} seed(s); mean [95 % Student-t interval over seeds].", ""]
    if args.skip_reason:
        lines += [f"Not run: {args.skip_reason}", ""]
    cols = [("method", None), ("epsilon", None), ("seeds", None), ("quality", ".3f"), ("shapes", ".3f"),
            ("pairs", ".3f"), ("disc_auc", ".3f"), ("dcr_share", ".3f"), ("tstr", ".3f"), ("fit_s", ".3g"),
            ("sample_s", ".3g"), ("peak_rss_mib", ".0f")]
    heads = {"quality": "overall", "shapes": "column shapes", "pairs": "pair trends", "disc_auc": "discr. AUC",
             "dcr_share": "DCR share", "tstr": "TSTR F1", "fit_s": "fit s", "sample_s": "sample s",
             "peak_rss_mib": "peak RSS MiB"}
    for ds in dict.fromkeys(a["dataset"] for a in agg):
        sub = [a for a in agg if a["dataset"] == ds]
        table = [{heads.get(c, c): (a[c] if spec is None else _fmt(a, c, spec)) if c != "epsilon"
                  else ("-" if a["epsilon"] is None else f"{a['epsilon']:g}") for c, spec in cols} for a in sub]
        trtr = [a["trtr"] for a in sub if "trtr" in a]
        lines += [f"## {ds} (training rows {sub[0].get('n_train', '')})".replace(" ()", ""), "",
                  markdown_table(table, [heads.get(c, c) for c, _ in cols]), ""]
        if trtr:
            lines += [f"TRTR macro-F1 (real training split): {trtr[0]:.3f}.", ""]
    # the paper's figures beside ours
    side = []
    for a in agg:
        for f, label in (("quality", "SDMetrics overall"), ("fit_s", "fit seconds")):
            if a["method"] in PAPER[f]:
                side.append({"dataset": a["dataset"], "method": a["method"], "figure": label,
                             "paper": PAPER[f][a["method"]], "this run": _fmt(a, f, ".3g"),
                             "epochs here": a.get("epochs") or "-"})
    if side:
        lines += ["## The paper's figures beside this run's", "",
                  "The paper's summary gives one overall quality (0.962, table not named: one dataset or a mean "
                  "over its five) and one fit time per model (table, epochs and hardware not named).", "",
                  markdown_table(side), ""]
    claims = [c for ds in dict.fromkeys(a["dataset"] for a in agg) for c in _claims(agg, ds)]
    if claims:
        lines += ["## The paper's claims on this run's means", "", markdown_table(claims), ""]
    lines += ["## Differences from the paper's setting", "",
              "- Datasets: the paper uses five UCI tables (Adult, Student Dropout, ... ) and a learning platform's "
              f"logs; this run: {', '.join(args.datasets)}.",
              "- Split: the paper's is not stated; here Adult's published train / test files and UCI dropout "
              "70/30 (seed 0). Quality and discriminator are scored against the training split.",
              f"- Epochs: the paper's summary does not state them; here {epochs} for CTGAN and TVAE "
              f"({'the ctgan default' if epochs == 300 else 'reduced from the ctgan default of 300 for time'}).",
              "- Privacy: the paper's table compares non-private models; NPGC (not DP) is that setting, the DP rows "
              f"are extra, at epsilon {args.epsilon:g}.",
              "- Hardware: the paper's is not stated; here the machine above"
              f" ({'GPU for CTGAN / TVAE' if args.cuda else 'CPU only'}).",
              f"- Metric rows: SDMetrics on {'all' if args.quality_rows is None else f'{args.quality_rows:,}'} rows, "
              f"discriminator and DCR on {args.metric_rows:,} rows a side (the paper's counts are not stated).", ""]
    errors = [r for r in rows if r.get("status") != "ok"]
    if errors:
        lines += ["## Failed fits", "", markdown_table([{k: r.get(k) for k in ("dataset", "method", "seed", "error")}
                                                        for r in errors]), ""]
    if rest:
        lines += ["## Planned, not run", "", markdown_table([{k: t[k] for k in ("dataset", "method", "seed")}
                                                             for t in rest]), ""]
    return "\n".join(lines)


def environment(args: argparse.Namespace) -> dict[str, str]:
    """Versions of the packages the fits use, and the torch device of CTGAN / TVAE."""
    from importlib import metadata

    env = {}
    for name in ("skdpsynth", "ctgan", "torch", "sdmetrics", "scikit-learn", "numpy", "pandas"):
        try:
            env[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            env[name] = "absent"
    if args.cuda:
        import torch

        env["torch_device"] = f"GPU ({torch.cuda.get_device_name(0)})"
    return env


def _write(name: str, rows: list[dict], todo: list[dict], args: argparse.Namespace, total_s: float,
           env: dict) -> str:
    md = markdown(rows, todo, args, total_s, env)
    depends = sorted({d for r in rows for d in r.get("depends", [])})
    payload = {"rows": [{k: v for k, v in r.items() if k != "depends"} for r in rows], "aggregate": aggregate(rows),
               "paper": PAPER, "datasets": args.datasets, "methods": args.methods, "epsilon": args.epsilon,
               "delta": DELTA, "seeds": args.seeds, "epochs": args.epochs, "cuda": args.cuda,
               "workers": args.workers, "threads": args.threads, "quality_rows": args.quality_rows,
               "metric_rows": args.metric_rows,
               "skipped": args.skip_reason, "environment": env, "quick": args.quick,
               "done": len(rows), "planned": len(todo), "total_s": total_s}
    write_results(name, payload, md, depends=depends)
    return md


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true",
                        help="UCI dropout, 10 epochs, one seed, SDMetrics on 2,000 rows")
    parser.add_argument("--datasets", nargs="+", default=None, help=f"default {' '.join(DATASETS)}")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=None, help="default: all")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per fit (default 3; --quick 1)")
    parser.add_argument("--epsilon", type=float, default=1.0, help="epsilon of the DP methods (default 1)")
    parser.add_argument("--epochs", type=int, default=None, help="CTGAN / TVAE epochs (default 300; --quick 10)")
    parser.add_argument("--cuda", action="store_true", help="CTGAN / TVAE on the GPU (fails if torch sees none)")
    parser.add_argument("--skip-deep", action="store_true", help="run without CTGAN / TVAE when ctgan is absent")
    parser.add_argument("--workers", type=int, default=1, help="fits at a time, one process each (default 1)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads a fit (default cores / workers)")
    parser.add_argument("--quality-rows", type=int, default=None,
                        help="rows a side for SDMetrics (default all; --quick 2,000)")
    parser.add_argument("--metric-rows", type=int, default=None,
                        help="rows a side for the discriminator and DCR (default tabular.METRIC_ROWS; --quick 1,000)")
    parser.add_argument("--fit-timeout", type=float, default=6 * 3600, help="seconds a fit (default 6 h)")
    parser.add_argument("--name", default=None, help="results stem (default npgc_paper_table[_quick])")
    parser.add_argument("--resume", action="store_true", help="keep the fits of the progress file")
    parser.add_argument("--report-only", action="store_true", help="rebuild the report from the progress file")
    args = parser.parse_args(argv)
    if args.worker:
        return worker(json.loads(args.worker))
    args.datasets = args.datasets or (["uci_dropout"] if args.quick else list(DATASETS))
    args.methods = args.methods or list(METHODS)
    args.seeds = args.seeds or (1 if args.quick else 3)
    args.epochs = args.epochs or (10 if args.quick else 300)
    if args.quality_rows is None and args.quick:
        args.quality_rows = 2000
    if args.metric_rows is None:
        from tabular import METRIC_ROWS

        args.metric_rows = 1000 if args.quick else METRIC_ROWS
    args.threads = args.threads or max(1, (os.cpu_count() or 1) // args.workers)
    args.skip_reason = None
    if any(m in DEEP for m in args.methods) and importlib.util.find_spec("ctgan") is None:
        if not args.skip_deep:
            parser.error("CTGAN / TVAE need the ctgan package (pip install ctgan, or the package's bench extra); "
                         "pass --skip-deep to run the other methods without them")
        args.methods = [m for m in args.methods if m not in DEEP]
        args.skip_reason = "CTGAN and TVAE (the ctgan package is not installed here; --skip-deep)."
    if args.cuda:
        import torch

        if not torch.cuda.is_available():
            parser.error("--cuda: torch sees no GPU here (a CPU-only torch build, or no device)")
    name = args.name or "npgc_paper_table" + ("_quick" if args.quick else "")
    progress = RESULTS / f"{name}_progress.jsonl"
    todo = plan(args.datasets, args.methods, args.seeds, args.epsilon, args)
    wanted = {key(t) for t in todo}
    rows = [r for r in _read_progress(progress) if key(r) in wanted] if (args.resume or args.report_only) else []
    env = environment(args)
    start = time.perf_counter()
    if args.report_only:
        old = RESULTS / f"{name}.json"
        total = json.loads(old.read_text()).get("total_s", float("nan")) if old.exists() else float("nan")
        print(_write(name, rows, todo, args, total, env))
        return None
    done = {key(r) for r in rows}
    pending = [t for t in todo if key(t) not in done]
    RESULTS.mkdir(parents=True, exist_ok=True)
    progress.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(todo)} fits planned, {len(rows)} already done, {len(pending)} to run, {args.workers} at a time",
          flush=True)
    from joblib import Parallel, delayed

    jobs = Parallel(n_jobs=args.workers, backend="threading", return_as="generator_unordered")(
        delayed(run_one)(t, args) for t in pending)
    md = ""
    for k, row in enumerate(jobs, 1):
        rows.append(row)
        with progress.open("a") as fh:
            fh.write(json.dumps(row, default=float) + "\n")
        elapsed = time.perf_counter() - start
        eta = elapsed / k * (len(pending) - k)
        print(f"[{len(rows)}/{len(todo)}] {row['dataset']} {row['method']} seed={row['seed']}: {row['status']} "
              f"fit={row.get('fit_s', float('nan')):.2f}s sample={row.get('sample_s', float('nan')):.2f}s "
              f"q={row.get('quality') or float('nan'):.3f} auc={row.get('disc_auc') or float('nan'):.3f} "
              f"tstr={row.get('tstr') or float('nan'):.3f} {row.get('error', '')} "
              f"(elapsed {elapsed / 60:.1f} min, about {eta / 60:.0f} min left)", flush=True)
        md = _write(name, rows, todo, args, elapsed, env)
    print(md)
    return None


if __name__ == "__main__":
    main()
