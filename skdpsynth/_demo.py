"""``skdpsynth demo``: simulate learners, release DP synthetic data, audit it, write a report."""

from __future__ import annotations

import inspect
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from skdpsynth._io import check_output, write_table
from skdpsynth.audit import ReleaseAuditor, pearl_checks
from skdpsynth.datasets import make_learning_habits
from skdpsynth.synthesizers._npgc import NPGCSynthesizer
from skdpsynth.utils._optional import require

__all__ = ["run_demo", "choose_output_folder", "DEFAULT_FOLDER", "MIN_STUDENTS"]

DEFAULT_FOLDER = "skdpsynth-report"
#: fewest simulated students: the demo splits them 70/30 and each part needs every outcome class
MIN_STUDENTS = 100


def _say(msg: str) -> None:
    print(msg, flush=True)


def _save_report(report: object, folder: Path) -> None:
    """Save into the demo's own folder (chosen empty), which already holds the ledger and the release."""
    accepted = inspect.signature(report.save).parameters
    report.save(folder, **{k: True for k in ("overwrite", "force") if k in accepted})


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


def choose_output_folder(folder: str | Path, *, explicit: bool, force: bool = False) -> tuple[Path, str | None]:
    """The report folder: never one with files in it (unless ``force``), and never a file.

    Parameters
    ----------
    folder : str or Path
        The requested folder.
    explicit : bool
        Whether the user named it. The default folder, when taken, gives way to
        ``skdpsynth-report-2``, ``-3``, ...; a folder the user named is refused.
    force : bool, default=False
        Write into the folder even if it has files.

    Returns
    -------
    (Path, str or None)
        The folder and, when it differs from the request, a note saying so.
    """
    folder = Path(folder)
    if explicit or force:
        return check_output(folder, force=force, what="--output", kind="folder"), None
    candidate, k = folder, 1
    while candidate.exists() and (not candidate.is_dir() or any(candidate.iterdir())):
        k += 1
        candidate = folder.with_name(f"{folder.name}-{k}")
    check_output(candidate, what="--output", kind="folder")
    note = None if candidate == folder else f"{folder} already exists: writing this demo to {candidate} instead."
    return candidate, note


def run_demo(output: Path, n_students: int = 2000, epsilon: float = 2.0, seed: int = 0) -> int:
    """Run the demo and write its report into ``output``.

    Parameters
    ----------
    output : pathlib.Path
        Report folder (created; the command line never passes one that has files).
    n_students : int
        Simulated students (at least ``MIN_STUDENTS``).
    epsilon : float
        Privacy budget of the release.
    seed : int
        Seed of the simulation and of the demo synthesizer (a real release would leave it unset).

    Returns
    -------
    int
        Exit code (0).
    """
    if int(n_students) < MIN_STUDENTS:
        raise ValueError(f"--n-students must be at least {MIN_STUDENTS} (got {n_students}): the demo holds out 30% "
                         "of the students and audits the release against them.")
    require("matplotlib", "sdmetrics", purpose="skdpsynth demo")
    start = time.perf_counter()
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    data, train, holdout = _simulate(n_students, seed)
    synth = _fit(data, train, epsilon, seed)
    report, release = _audit(synth, data.target, train, holdout, output, seed)
    _print_quality(train, release, data.schema)
    _print_verdict(report)
    _save_report(report, output)
    _plot_marginals(train, release, [data.target, *list(data.frame.columns[:3])], output / "marginals.png")
    _say(f"report, plots, synthetic.csv and ledger.jsonl written to {output}/ ({time.perf_counter() - start:.1f} s)")
    return 0


def _simulate(n_students: int, seed: int) -> tuple:
    data = make_learning_habits(n_students, n_weeks=4, random_state=seed)
    frame, target = data.frame, data.target
    train, holdout = train_test_split(frame, test_size=0.3, stratify=frame[target], random_state=seed)
    _say(f"simulated {len(frame)} students x {frame.shape[1] - 1} weekly-habit features + '{target}' "
         f"({len(train)} private training rows, {len(holdout)} held out)")
    return data, train, holdout


def _fit(data: object, train: pd.DataFrame, epsilon: float, seed: int) -> object:
    synth = NPGCSynthesizer(epsilon=epsilon, schema=data.schema, random_state=seed).fit(train)
    spent = synth.privacy_spent_
    _say(f"fitted NPGCSynthesizer(epsilon={epsilon}) with the public schema: spent epsilon={spent.epsilon:.3f}, "
         f"delta={spent.delta:.1e} over {len(synth.budget_log_)} budget records")
    by_mech: dict[str, int] = {}
    for r in synth.budget_log_:
        by_mech[r.mechanism] = by_mech.get(r.mechanism, 0) + 1
    _say("  budget log: " + ", ".join(f"{k} x{v}" for k, v in by_mech.items()))
    return synth


def _audit(synth: object, target: str, train: pd.DataFrame, holdout: pd.DataFrame, output: Path,
           seed: int) -> tuple:
    n_release = synth.n_estimate_
    _say(f"release size: {n_release} rows, a DP estimate of the number of training students (the exact number is "
         "private)")
    auditor = ReleaseAuditor(pearl_checks("classification", target=target), ledger=output / "ledger.jsonl")
    # distinct simulated students can share an identical row of weekly habits: the split is by person
    shared = {"allow_shared_rows": True} if "allow_shared_rows" in inspect.signature(auditor.audit).parameters else {}
    report = auditor.audit(synth, X_train=train, X_holdout=holdout, n_samples=n_release, random_state=seed, **shared)
    release = report.synthetic if getattr(report, "synthetic", None) is not None else synth.sample()
    write_table(release, output / "synthetic.csv", overwrite=True)  # the folder was chosen empty, or --force
    return report, release


def _print_quality(train: pd.DataFrame, release: pd.DataFrame, schema: object) -> None:
    from skdpsynth.metrics import sdmetrics_quality

    with warnings.catch_warnings():  # SDMetrics' deprecated single-table report warns on import
        warnings.simplefilter("ignore", FutureWarning)
        quality = sdmetrics_quality(train, release, schema)
    pairs = quality["column_pair_trends"]
    pairs_txt = "n/a: no pair passes SDMetrics' association threshold" if pairs != pairs else f"{pairs:.3f}"
    _say(f"SDMetrics quality: overall {quality['overall']:.3f} (shapes {quality['column_shapes']:.3f}, "
         f"pair trends {pairs_txt})")


def _print_verdict(report: object) -> None:
    _say("PEARL audit:")
    for name, res in report.results.items():
        _say(f"  {name:10s} {'pass' if res.passed else 'FAIL'}  score={res.score:.3f}  {res.reason}")
    _say(f"verdict: {'APPROVED' if report.approved else 'REJECTED'}"
         + ("" if report.approved else " -- " + "; ".join(report.reasons)))
