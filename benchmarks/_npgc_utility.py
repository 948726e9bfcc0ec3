"""The epsilon-1 utility audit of issue 15 (``python benchmarks/npgc_reference.py --utility``).

NPGC before / after and MST side by side, in one run: every setting fits and
samples (the *before* package in a subprocess whose path starts with the package
extracted at the ``before`` revision), then the parent scores every synthetic
table with the current metrics: TSTR / TRTR macro-F1 (HistGradientBoosting,
one-hot; train on synthetic, test on the 30 % holdout) and the SDMetrics quality
report against the whole training split.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _common import SHARED_DATA, machine, markdown_table, write_results  # noqa: E402

DATASETS = ("uci_dropout", "adult", "oulad", "uci_hesp")
METHODS = ("NPGC before", "NPGC after", "MST")
ENV_1T = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def split(name: str):
    """(train, holdout, schema, target): 70 / 30 stratified (seed 0); Adult from its training file."""
    from sklearn.model_selection import train_test_split

    import skdpsynth.datasets as D

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "adult":
            b = D.load_adult(path=SHARED_DATA / "adult", download=False)
            frame = b.train.reset_index(drop=True)
        elif name == "oulad":
            b = D.load_oulad(path=SHARED_DATA / "oulad", download=False, with_clickstream=False)
            frame = b.tables["studentInfo"] if "studentInfo" in getattr(b, "tables", {}) else b.frame
            frame = frame.drop(columns=[c for c in ("id_student",) if c in frame.columns])
            imd = b.schema["imd_band"].categories
            if "10-20" not in imd and "10-20%" in imd:
                frame = frame.assign(imd_band=frame["imd_band"].replace({"10-20": "10-20%"}))
        else:
            loader = {"uci_dropout": D.load_uci_dropout, "uci_hesp": D.load_uci_hesp}[name]
            b = loader(path=SHARED_DATA / name, download=False)
            frame = b.frame
        schema = b.schema.select(list(frame.columns))
        y = frame[b.target]
        train, hold = train_test_split(frame, test_size=0.3, random_state=0,
                                       stratify=y if y.value_counts().min() >= 2 else None)
        train, hold = schema.validate(train.reset_index(drop=True)), schema.validate(hold.reset_index(drop=True))
    return train, hold, schema, b.target


def synthesize_task(task_path: str) -> None:
    """Fit one method on the task's training table and write the synthetic table (runs in the worker)."""
    warnings.simplefilter("ignore")
    import skdpsynth as S

    with open(task_path, "rb") as fh:
        task = pickle.load(fh)
    schema = S.TableSchema.from_dict(task["schema"])
    train = task["train"]
    cls = S.MSTSynthesizer if task["method"] == "MST" else S.NPGCSynthesizer
    extra = {"n_bins": 32} if task["method"] == "MST" else {}
    est = cls(epsilon=1.0, delta=1e-6, schema=schema, random_state=task["seed"], **extra)
    start = time.perf_counter()
    est.fit(train)
    fit_s = time.perf_counter() - start
    synth = est.sample(len(train), random_state=task["seed"])
    with open(task["out"], "wb") as fh:
        pickle.dump({"synthetic": synth, "fit_s": fit_s, "epsilon_spent": float(est.privacy_spent_.epsilon),
                     "records": len(est.budget_log_), "package": str(Path(S.__file__).parent)}, fh)


def _extract(rev: str, into: Path) -> Path:
    data = subprocess.run(["git", "archive", "--format=tar", rev, "skdpsynth"], cwd=ROOT, capture_output=True,
                          check=True).stdout
    (into / "before.tar").write_bytes(data)
    with tarfile.open(into / "before.tar") as tar:
        tar.extractall(into, filter="data")
    return into


def _synthesize(method: str, train, schema, seed: int, package: Path, tmp: Path) -> dict:
    task = tmp / f"task_{method.replace(' ', '_')}_{seed}.pkl"
    out = tmp / f"out_{method.replace(' ', '_')}_{seed}.pkl"
    with open(task, "wb") as fh:
        pickle.dump({"train": train, "schema": schema.to_dict(), "method": method, "seed": seed, "out": str(out)},
                    fh)
    env = {**os.environ, **ENV_1T, "PYTHONPATH": os.pathsep.join([str(package), str(HERE)])}
    cmd = [sys.executable, str(HERE / "_npgc_utility.py"), str(task)]  # imports skdpsynth from `package`
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=package, timeout=1800)
    if res.returncode != 0:
        raise RuntimeError(f"{method} seed {seed}: {res.stderr.strip().splitlines()[-1]}")
    with open(out, "rb") as fh:
        result = pickle.load(fh)
    if Path(result["package"]).resolve() != (package / "skdpsynth").resolve():
        raise RuntimeError(f"{method} ran the package at {result['package']}, not {package}")
    return result


def _score(train, hold, synth, schema, target, seed) -> dict:
    from skdpsynth import metrics as M

    ts = M.tstr_scores(train, hold, synth[train.columns], target=target, random_state=seed)
    q = M.sdmetrics_quality(train, synth[train.columns], schema)
    return {"tstr_f1": ts["tstr_f1"], "trtr_f1": ts["trtr_f1"], "tstr_ratio": ts["ratio"],
            "quality": q["overall"], "column_shapes": q["column_shapes"], "pair_trends": q["column_pair_trends"]}


def run_utility(before: str, n_seeds: int, datasets=None, out_name: str = "npgc_mst_utility") -> None:
    rows = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        packages = {"NPGC before": _extract(before, tmp), "NPGC after": ROOT, "MST": ROOT}
        for name in datasets or DATASETS:
            train, hold, schema, target = split(name)
            for method in METHODS:
                for seed in range(n_seeds):
                    out = _synthesize(method, train, schema, seed, packages[method], tmp)
                    row = {"dataset": name, "method": method, "seed": seed, "fit_s": out["fit_s"],
                           "epsilon_spent": out["epsilon_spent"], "budget_records": out["records"],
                           **_score(train, hold, out["synthetic"], schema, target, seed)}
                    rows.append(row)
                    print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
            _report(rows, before, n_seeds, time.perf_counter() - start, out_name)


def _report(rows: list[dict], before: str, n_seeds: int, total_s: float, out_name: str) -> None:
    df = pd.DataFrame(rows)
    metrics = ["tstr_ratio", "tstr_f1", "trtr_f1", "quality", "column_shapes", "pair_trends", "fit_s"]
    agg = df.groupby(["dataset", "method"], sort=False)[metrics].mean().reset_index()
    spread = df.groupby(["dataset", "method"], sort=False)["tstr_ratio"].agg(["min", "max"]).reset_index()
    agg = agg.merge(spread, on=["dataset", "method"]).rename(columns={"min": "ratio min", "max": "ratio max"})
    checks = []
    for ds in dict.fromkeys(df["dataset"]):
        a = agg[(agg["dataset"] == ds)].set_index("method")
        if "NPGC after" not in a.index:
            continue
        row = {"dataset": ds, "TSTR/TRTR after (>= 0.8)": a.loc["NPGC after", "tstr_ratio"],
               "SDMetrics after": a.loc["NPGC after", "quality"]}
        if "MST" in a.index:
            row["SDMetrics MST"] = a.loc["MST", "quality"]
            row["after >= MST"] = bool(a.loc["NPGC after", "quality"] >= a.loc["MST", "quality"])
        if "NPGC before" in a.index:
            row["TSTR/TRTR before"] = a.loc["NPGC before", "tstr_ratio"]
            row["SDMetrics before"] = a.loc["NPGC before", "quality"]
        checks.append(row)
    md = [
        "# NPGC at epsilon 1: the utility audit of issue 15 (before, after, MST; one run)",
        "",
        f"Machine: {machine()}; shared, BLAS at one thread. Total {total_s / 60:.1f} min. Before = NPGC at "
        f"`{before}`, after = the working tree, MST = the working tree's MSTSynthesizer (32 bins). epsilon = 1, "
        f"delta = 1e-6, public schemas from `skdpsynth.datasets`, {n_seeds} seeds per setting (fresh secure "
        "noise: seeds set the sampling only). Train / holdout: 70 / 30 stratified by the outcome (seed 0; Adult: "
        "its training file). TSTR: HistGradientBoosting on the synthetic table (as many rows as the training "
        "split), macro-F1 on the holdout, divided by TRTR (the same model trained on the real training split). "
        "SDMetrics: QualityReport of the synthetic table against the whole training split.",
        "",
        "## The targets",
        "",
        markdown_table(checks),
        "",
        "## All methods (mean over seeds)",
        "",
        markdown_table(agg.to_dict("records")),
        "",
        "## Every run",
        "",
        markdown_table(rows, ["dataset", "method", "seed", "tstr_ratio", "tstr_f1", "quality", "column_shapes",
                              "pair_trends", "fit_s", "epsilon_spent", "budget_records"]),
    ]
    write_results(out_name, {"rows": rows, "before": before, "seeds": n_seeds, "total_s": total_s},
                  "\n".join(md))
    print("\n".join(md), flush=True)


if __name__ == "__main__":  # a worker: one synthetic table, with the package first on PYTHONPATH
    synthesize_task(sys.argv[1])
