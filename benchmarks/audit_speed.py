"""Speed of the PEARL audit.

1. A full tabular audit (validity, privacy, utility, fairness) of UCI dropout
   (4,424 students, 37 columns; 50/50 train/holdout split) for releases of
   NPGC at epsilon 1, 5, 10 (public schema) and a copy of the training rows.
   Target: <= 30 s per audit on 2 cores.
2. The knowledge-tracing check (DKT + SAKT, each trained on the release and on
   real learners) on 4,000 simulated learners (2,000 train, 2,000 holdout) and
   a 2,000-learner release. Target: <= 2 min.

Run: ``python benchmarks/audit_speed.py`` (``--quick`` for a smoke run on fewer
rows / learners). Results: ``benchmarks/results/audit_speed.{json,md}`` and
``audit_speed.png``.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import RESULTS, SHARED_DATA, markdown_table, measure, write_results  # noqa: E402


def tabular(quick: bool) -> list[dict]:
    from skdpsynth import NPGCSynthesizer
    from skdpsynth.audit import ReleaseAuditor, pearl_checks
    from skdpsynth.datasets._schemas import uci_dropout_schema

    df = pd.read_csv(SHARED_DATA / "uci_dropout" / "data.csv", sep=";", encoding="utf-8-sig")
    df.columns = [c.strip() for c in df.columns]
    if quick:
        df = df.sample(1000, random_state=0)
    idx = np.random.default_rng(0).permutation(len(df))
    train, holdout = df.iloc[idx[: len(df) // 2]], df.iloc[idx[len(df) // 2:]]
    schema = uci_dropout_schema()
    checks = pearl_checks("classification", target="Target", protected=["Gender", "Debtor"], schema=schema)
    rows = []
    releases: list[tuple[str, object, pd.DataFrame | None]] = [("copy of training rows", None, train.copy())]
    for eps in (1.0, 5.0, 10.0):
        synth = NPGCSynthesizer(epsilon=eps, schema=schema, random_state=0).fit(train)
        releases.append((f"NPGC eps={eps:g}", synth, None))
    for name, synth, table in releases:
        auditor = ReleaseAuditor(checks, random_state=0)
        report, secs, mem = measure(lambda s=synth, t=table, a=auditor: a.audit(s, synthetic=t, X_train=train,
                                                                          X_holdout=holdout))
        row = {"task": "tabular (UCI dropout)", "release": name, "n_train": len(train), "n_holdout": len(holdout),
               "seconds": secs, "peak_mib": mem, "approved": report.approved,
               "reasons": " / ".join(report.reasons) or "-"}
        for check, res in report.results.items():
            row[f"{check}_s"] = res.elapsed_s
        row["membership_auc"] = report.results["privacy"].details["membership_auc"]
        row["tstr_trtr"] = report.results["utility"].details["ratio"]
        rows.append(row)
        print(f"{name}: {secs:.1f} s, approved={report.approved}", flush=True)
    return rows


def knowledge_tracing(quick: bool) -> list[dict]:
    from skdpsynth.audit import AuditData, KnowledgeTracingCheck
    from skdpsynth.datasets import make_knowledge_tracing

    n = 300 if quick else 2000
    train = make_knowledge_tracing(n, random_state=0).frame
    holdout = make_knowledge_tracing(n, random_state=1).frame
    holdout = holdout.assign(learner_id=holdout["learner_id"] + 10 * n)
    good = make_knowledge_tracing(n, random_state=2).frame
    unpaired = good.assign(correct=np.random.default_rng(0).permutation(good["correct"].to_numpy()))
    rows = []
    for name, release in (("fresh BKT simulation", good), ("responses shuffled (unpaired)", unpaired)):
        check = KnowledgeTracingCheck(random_state=0)
        res, secs, mem = measure(lambda r=release, c=check: c.evaluate(AuditData(synthetic=r, holdout=holdout,
                                                                           train=train)))
        m = res.details["models"]
        rows.append({"task": "knowledge tracing (DKT + SAKT)", "release": name, "n_train": n, "n_holdout": n,
                     "n_events": len(train) + len(holdout) + len(release), "seconds": secs, "peak_mib": mem,
                     "approved": res.passed, "reasons": res.reason,
                     "dkt_f1_syn": m["dkt"]["f1_synthetic"], "dkt_f1_real": m["dkt"]["f1_real"],
                     "sakt_f1_syn": m["sakt"]["f1_synthetic"], "sakt_f1_real": m["sakt"]["f1_real"],
                     "floor": m["dkt"]["majority_floor"]})
        print(f"KT {name}: {secs:.1f} s, passed={res.passed}", flush=True)
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = [f"{r['task'].split(' ')[0]}: {r['release']}" for r in rows]
    ax.barh(labels, [r["seconds"] for r in rows], color=["C0" if "tabular" in r["task"] else "C1" for r in rows])
    ax.axvline(30, color="C0", ls="--", lw=1, label="tabular target 30 s")
    ax.axvline(120, color="C1", ls="--", lw=1, label="KT target 120 s")
    ax.set_xlabel("wall seconds per audit / check")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run on fewer rows / learners")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = tabular(args.quick) + knowledge_tracing(args.quick)
    name = "audit_speed_quick" if args.quick else "audit_speed"
    cols = ["task", "release", "n_train", "n_holdout", "seconds", "peak_mib", "approved", "reasons"]
    md = [f"# PEARL audit speed{' (quick smoke run)' if args.quick else ''}", "",
          f"Machine: {os.cpu_count()} CPUs (shared with other jobs while measured). The audit's classifiers run "
          "single-threaded (metrics n_threads=1, torch models n_threads=1). One run per row (no repeats). Tabular: "
          "HistGradientBoosting with early stopping (<= 100 iterations); KT: DKT and SAKT at max_epochs=10 with "
          "early stopping, 4 fits per check (2 models x synthetic / real).", "",
          markdown_table(rows, cols), "", "Per-check seconds (tabular):", "",
          markdown_table([r for r in rows if "tabular" in r["task"]],
                         ["release", "validity_s", "privacy_s", "utility_s", "fairness_s", "membership_auc",
                          "tstr_trtr"]), "", "Knowledge tracing (macro-F1 on real holdout learners):", "",
          markdown_table([r for r in rows if "knowledge" in r["task"]],
                         ["release", "dkt_f1_syn", "dkt_f1_real", "sakt_f1_syn", "sakt_f1_real", "floor"])]
    write_results(name, {"rows": rows}, "\n".join(md))
    plot(rows, RESULTS / f"{name}.png")


if __name__ == "__main__":
    main()
