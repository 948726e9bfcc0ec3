"""NPGCSynthesizer (skdpsynth, end-to-end DP) vs the PyPI reference ``npgc`` 0.3.0, side by side.

For Adult (32,561 x 15) and UCI dropout (4,424 x 37), for epsilon None (non-private)
and {0.5, 1, 2, 5, 10}: fit time, time and peak memory to sample as many rows as the
real table and 1,000,000 rows, and the SDMetrics quality report against the real
table. The reference's epsilon is what it *claims*: it is not DP (see docs/npgc.md).

Run: ``python benchmarks/npgc_reference.py`` (about 15 min on 2 cores) or
``--quick`` (Adult subsample, epsilon None and 1, no 1M-row sampling).

``--utility``: the audit of issue 15 at epsilon 1, side by side in one run -- NPGC
*before* (the package at ``--before``, a git revision extracted with ``git archive``)
and *after* (the working tree), and MST: TSTR macro-F1 / TRTR (HistGradientBoosting,
train on the synthetic table, test on the real 30 % holdout) and the SDMetrics quality
report against the whole 70 % training split, on Adult, UCI dropout, OULAD studentInfo
and UCI HESP, ``--seeds`` seeds each (fresh secure noise). Results:
``results/npgc_mst_utility.{json,md}`` (with ``--quick``: one seed on UCI dropout,
``results/npgc_mst_utility_quick.{json,md}``).
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the package, when not installed
from _common import RESULTS, SHARED_DATA, markdown_table, measure, write_results  # noqa: E402

from skdpsynth import NPGCSynthesizer  # noqa: E402
from skdpsynth.datasets import load_adult, load_uci_dropout  # noqa: E402
from skdpsynth.metrics import sdmetrics_quality  # noqa: E402

EPSILONS = [None, 0.5, 1.0, 2.0, 5.0, 10.0]
BIG = 1_000_000
#: the reference's integer inverse CDF builds an (n_rows x distinct values) float matrix; beyond this many
#: cells the 1M-row draw is not attempted and its time is extrapolated linearly from the real-size draw
REF_MAX_CELLS = 2e8


def load(name: str, quick: bool):
    if name == "adult":
        b = load_adult(path=SHARED_DATA / "adult" / "adult.data", download=False)
        X = b.train.reset_index(drop=True)
        if quick:
            X = X.sample(5000, random_state=0).reset_index(drop=True)
    else:
        b = load_uci_dropout(path=SHARED_DATA / "uci_dropout" / "data.csv", download=False)
        X = b.frame
    return X, b.schema


def ref_max_distinct(X: pd.DataFrame) -> int:
    """Largest number of distinct values among the columns the reference treats as integers."""
    out = 1
    for c in X.columns:
        v = X[c].dropna()
        if pd.api.types.is_numeric_dtype(v) and np.allclose(v % 1, 0):
            out = max(out, v.nunique())
    return out


def run_one(method: str, X, schema, eps, seed: int, big: bool) -> dict:
    row = {"method": method, "epsilon": "None" if eps is None else eps}
    if method == "skdpsynth.NPGC":
        model = NPGCSynthesizer(epsilon=eps, schema=schema, random_state=seed)
        _, t_fit, m_fit = measure(lambda: model.fit(X))
        sample = lambda n: model.sample(n, random_state=seed + 1)  # noqa: E731
        row["privacy_spent_epsilon"] = model.privacy_spent_.epsilon
    else:
        import npgc

        model = npgc.NPGC(epsilon=eps)
        _, t_fit, m_fit = measure(lambda: model.fit(X, random_state=seed))
        sample = lambda n: model.sample(n, seed=seed + 1)  # noqa: E731
        row["privacy_spent_epsilon"] = "not DP"
    synth, t_s, m_s = measure(lambda: sample(len(X)))
    row.update(fit_s=t_fit, fit_peak_mib=m_fit, sample_n_s=t_s, sample_n_peak_mib=m_s)
    if big:
        if method == "npgc (reference)" and ref_max_distinct(X) * BIG > REF_MAX_CELLS:
            row["sample_1m_s"] = t_s * BIG / len(X)
            row["sample_1m_note"] = (f"extrapolated: the reference would build a {BIG:,} x {ref_max_distinct(X):,} "
                                     "matrix")
        else:
            _, t_big, m_big = measure(lambda: sample(BIG))
            row.update(sample_1m_s=t_big, sample_1m_peak_mib=m_big)
    q = sdmetrics_quality(X, synth[X.columns], schema)
    row.update(quality=q["overall"], column_shapes=q["column_shapes"], pair_trends=q["column_pair_trends"])
    return row


def plot(rows: list[dict], datasets: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 4), squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        for method, colour in (("skdpsynth.NPGC", "C0"), ("npgc (reference)", "C3")):
            r = [x for x in rows if x["dataset"] == ds and x["method"] == method]
            dp = [x for x in r if x["epsilon"] != "None"]
            ax.plot([x["epsilon"] for x in dp], [x["quality"] for x in dp], "o-", color=colour,
                    label=method + (" (claimed eps, not DP)" if "reference" in method else " (DP)"))
            nonp = [x for x in r if x["epsilon"] == "None"]
            if nonp:
                ax.axhline(nonp[0]["quality"], color=colour, ls="--", lw=1, label=f"{method}, non-private")
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel("SDMetrics quality (overall)")
        ax.set_title(ds)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "npgc_reference_quality.png", dpi=120)

    fig, ax = plt.subplots(figsize=(7, 4))
    labels, ours, ref = [], [], []
    for ds in datasets:
        for key, name in (("fit_s", "fit"), ("sample_n_s", "sample n"), ("sample_1m_s", "sample 1M")):
            a = [x[key] for x in rows if x["dataset"] == ds and x["method"] == "skdpsynth.NPGC" and key in x]
            b = [x[key] for x in rows if x["dataset"] == ds and x["method"] == "npgc (reference)" and key in x]
            if a and b:
                labels.append(f"{ds}\n{name}")
                ours.append(np.median(a))
                ref.append(np.median(b))
    xs = np.arange(len(labels))
    ax.bar(xs - 0.2, ours, 0.4, label="skdpsynth.NPGC")
    ax.bar(xs + 0.2, ref, 0.4, label="npgc (reference)")
    ax.set_xticks(xs, labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("seconds (median over epsilons)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "npgc_reference_time.png", dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--utility", action="store_true", help="the epsilon-1 audit: NPGC before/after and MST")
    parser.add_argument("--before", default="3aa7b48", help="git revision of the 'before' NPGC (--utility)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per setting (--utility)")
    parser.add_argument("--datasets", nargs="*", default=None, help="(--utility) subset of the four tables")
    args = parser.parse_args()
    if args.utility:
        from _npgc_utility import run_utility

        if args.quick:  # one seed on UCI dropout, written beside the full results
            run_utility(args.before, 1, args.datasets or ["uci_dropout"], out_name="npgc_mst_utility_quick")
        else:
            run_utility(args.before, args.seeds, args.datasets)
        return
    logging.getLogger("npgc").setLevel(logging.WARNING)
    warnings.simplefilter("ignore")
    datasets = ["adult"] if args.quick else ["adult", "uci_dropout"]
    epsilons = [None, 1.0] if args.quick else EPSILONS
    rows = []
    for ds in datasets:
        X, schema = load(ds, args.quick)
        for eps in epsilons:
            for method in ("skdpsynth.NPGC", "npgc (reference)"):
                row = {"dataset": ds, "n_rows": len(X), "n_columns": X.shape[1],
                       **run_one(method, X, schema, eps, args.seed, big=not args.quick)}
                rows.append(row)
                print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    name = "npgc_reference_quick" if args.quick else "npgc_reference"
    cols = ["dataset", "method", "epsilon", "privacy_spent_epsilon", "fit_s", "sample_n_s", "sample_1m_s",
            "sample_1m_peak_mib", "quality", "column_shapes", "pair_trends"]
    speed = []
    for ds in datasets:
        for eps in epsilons:
            e = "None" if eps is None else eps
            a = next(r for r in rows if r["dataset"] == ds and r["epsilon"] == e and r["method"] == "skdpsynth.NPGC")
            b = next(r for r in rows if r["dataset"] == ds and r["epsilon"] == e and r["method"] != "skdpsynth.NPGC")
            speed.append({"dataset": ds, "epsilon": e, "sampling speed-up (n rows)": b["sample_n_s"] / a["sample_n_s"],
                          "quality difference (ours - reference)": a["quality"] - b["quality"]})
    md = [
        "# NPGCSynthesizer vs npgc 0.3.0 (PyPI reference)",
        "",
        f"One seed ({args.seed}); {'QUICK run: Adult subsample of 5,000 rows, no 1M-row draw; ' if args.quick else ''}"
        "times are wall-clock seconds on a shared 2-core machine (other jobs were running, so absolute times are "
        "noisy); peak memory is the RSS increase in MiB. The reference's epsilon is what it claims: it is not "
        "differentially private (marginals compose to d x eps/2, the domain and missing rates are read exactly, "
        "the correlation noise has no valid sensitivity). skdpsynth.NPGC spends exactly the requested (epsilon, "
        "delta=1e-6) with a public schema. Quality: SDMetrics QualityReport of a sample as large as the real "
        "table against the real table (training data; no holdout).",
        "",
        markdown_table(rows, cols),
        "",
        "## Speed-up and quality difference",
        "",
        markdown_table(speed),
        "",
        "Notes: " + ("; ".join(sorted({f"{r['dataset']}: {r['sample_1m_note']}" for r in rows
                                      if "sample_1m_note" in r})) or "none") + ".",
        "",
        "![quality](npgc_reference_quality.png)",
        "![time](npgc_reference_time.png)",
    ]
    write_results(name, {"rows": rows, "speed": speed, "epsilons": [str(e) for e in epsilons]}, "\n".join(md))
    if not args.quick:
        plot(rows, datasets)


if __name__ == "__main__":
    main()
