"""``skdpsynth demo``: simulate learners, release DP synthetic data, audit it, write a report."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

__all__ = ["run_demo"]


def _say(msg: str) -> None:
    print(msg, flush=True)


def _plot_marginals(real: pd.DataFrame, synthetic: pd.DataFrame, columns: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(columns), figsize=(3.2 * len(columns), 3), squeeze=False)
    for ax, col in zip(axes[0], columns):
        r = real[col].value_counts(normalize=True)
        s = synthetic[col].value_counts(normalize=True).reindex(r.index, fill_value=0)
        x = np.arange(len(r))
        ax.bar(x - 0.2, r.to_numpy(), 0.4, label="real")
        ax.bar(x + 0.2, s.to_numpy(), 0.4, label="synthetic")
        ax.set_xticks(x, [str(i) for i in r.index], rotation=30, fontsize=8)
        ax.set_title(col, fontsize=9)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_demo(output: Path, n_students: int = 2000, epsilon: float = 2.0, seed: int = 0) -> int:
    """Run the demo and write its report into ``output``.

    Parameters
    ----------
    output : pathlib.Path
        Report folder (created).
    n_students : int
        Simulated students.
    epsilon : float
        Privacy budget of the release.
    seed : int
        Seed of the simulation and of the demo synthesizer (a real release would leave it unset).

    Returns
    -------
    int
        Exit code (0).
    """
    from skdpsynth import NPGCSynthesizer
    from skdpsynth.audit import ReleaseAuditor, pearl_checks
    from skdpsynth.datasets import make_learning_habits
    from skdpsynth.metrics import sdmetrics_quality

    start = time.perf_counter()
    output.mkdir(parents=True, exist_ok=True)
    data = make_learning_habits(n_students, n_weeks=4, random_state=seed)
    frame, target = data.frame, data.target
    train, holdout = train_test_split(frame, test_size=0.3, stratify=frame[target], random_state=seed)
    _say(f"simulated {len(frame)} students x {frame.shape[1] - 1} weekly-habit features + '{target}' "
         f"({len(train)} private training rows, {len(holdout)} held out)")

    synth = NPGCSynthesizer(epsilon=epsilon, schema=data.schema, random_state=seed).fit(train)
    spent = synth.privacy_spent_
    _say(f"fitted NPGCSynthesizer(epsilon={epsilon}) with the public schema: spent epsilon={spent.epsilon:.3f}, "
         f"delta={spent.delta:.1e} over {len(synth.budget_log_)} budget records")
    by_mech: dict[str, int] = {}
    for r in synth.budget_log_:
        by_mech[r.mechanism] = by_mech.get(r.mechanism, 0) + 1
    _say("  budget log: " + ", ".join(f"{k} x{v}" for k, v in by_mech.items()))

    auditor = ReleaseAuditor(pearl_checks("classification", target=target), ledger=output / "ledger.jsonl")
    report = auditor.audit(synth, X_train=train, X_holdout=holdout, random_state=seed)
    release = report.synthetic if getattr(report, "synthetic", None) is not None else synth.sample(len(train))
    release.to_csv(output / "synthetic.csv", index=False)
    quality = sdmetrics_quality(train, release, data.schema)
    pairs = quality["column_pair_trends"]
    pairs_txt = "n/a: no pair passes SDMetrics' association threshold" if pairs != pairs else f"{pairs:.3f}"
    _say(f"SDMetrics quality: overall {quality['overall']:.3f} (shapes {quality['column_shapes']:.3f}, "
         f"pair trends {pairs_txt})")
    _say("PEARL audit:")
    for name, res in report.results.items():
        _say(f"  {name:10s} {'pass' if res.passed else 'FAIL'}  score={res.score:.3f}  {res.reason}")
    _say(f"verdict: {'APPROVED' if report.approved else 'REJECTED'}"
         + ("" if report.approved else " -- " + "; ".join(report.reasons)))
    report.save(output)
    _plot_marginals(train, release, [target, *list(frame.columns[:3])], output / "marginals.png")
    _say(f"report, plots, synthetic.csv and ledger.jsonl written to {output}/ ({time.perf_counter() - start:.1f} s)")
    return 0
