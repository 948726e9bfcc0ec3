"""PEARL release-audit grid in the paper's shape: dataset x method x epsilon x seed, every release audited.

    python benchmarks/pearl_grid.py --full --seeds 3 --n-jobs 16  # every dataset, method and epsilon, seeds 0-2
    python benchmarks/pearl_grid.py --full --seeds 5 --resume     # add seeds 3-4 to a finished 3-seed run
    python benchmarks/pearl_grid.py --quick                      # CI smoke run (tiny data, every task kind)
    python benchmarks/pearl_grid.py --full --seeds 3 --report-only  # rebuild the report from the progress file

Datasets (``_pearl_data``): UCI 697, UCI 856, OULAD tables (epsilon 0.5, 1, 2,
5, 10), OULAD clickstreams and BKT-simulated knowledge tracing (epsilon 1, 5,
10). Methods (``_pearl_methods``): every registered DP synthesizer of the data
kind (DP-Histogram only where its joint table fits). Each setting fits the
synthesizer on the training people, audits the release (sampled at the DP size
estimate ``n_estimate_``) with ``ReleaseAuditor(pearl_checks(task, ...))`` and
appends the audit to that setting's hash-chained ledger. Settings run through
``_grid_runner.run_grid`` (joblib), the most expensive first (by the CPU
seconds measured per dataset and method, ``_pearl_methods.expected_cpu_s``) so
that many workers finish together; each finished setting is appended to a
progress file at once and printed with the count done and an estimate of the
time left, so an interrupted run keeps what it finished and ``--resume`` runs
only the rest.

The ledgers (about 40 kB a setting) go to a scratch folder
(``<tmp>/skdpsynth/pearl_grid_ledgers`` unless ``--ledger-dir`` says otherwise);
the results keep each ledger's name, entry count, head hash and verification.
Every path written to the results is relative to the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    RESULTS,
    ROOT,
    SHARED_DATA,
    _git,
    loaded_dependencies,
    measure,
    relative_paths,
    sha256,
    write_results,
)
from _grid_runner import run_grid  # noqa: E402
from _pearl_data import SCENARIOS, load_scenario  # noqa: E402
from _pearl_methods import (  # noqa: E402
    display_name,
    expected_cpu_s,
    grid_methods,
    histogram_fit,
    load_method,
    make_synthesizer,
)

QUICK_GRID = [("uci_hesp", "marginals", 5.0), ("oulad_clicks", "markov", 10.0), ("kt_bkt", "histseq", 10.0)]
QUICK_TASK_EPOCHS = 2  # GRU / DKT / SAKT epochs in quick mode (the full grid keeps pearl_checks' defaults)


def setting_key(s: dict) -> tuple:
    return s["dataset"], s["method"], float(s["epsilon"]), int(s["seed"])


#: fields of a setting that are run-time plumbing, not results (never written to the result files)
PLUMBING = ("ledger_dir", "shared")


def make_settings(quick: bool, seeds: int, datasets: list[str] | None = None, ledger_dir: str = "",
                  longest_first: bool = False) -> tuple:
    """(settings, skipped): every (dataset, method, epsilon, seed).

    Cheapest first within a seed (an interrupted serial run keeps the most settings), or with
    ``longest_first`` the most expensive first over all seeds (the shortest wall time on many workers).
    """
    fixed = {"quick": quick, "ledger_dir": ledger_dir, "shared": str(SHARED_DATA)}
    if quick:
        return [{"dataset": d, "method": m, "epsilon": e, "seed": 0, **fixed} for d, m, e in QUICK_GRID], []
    settings, skipped = [], []
    for seed in range(seeds):
        for name in datasets or list(SCENARIOS):
            sc = load_scenario(name, str(SHARED_DATA), False)
            for method in grid_methods(sc.kind):
                if method == "histogram":
                    fits, cells = histogram_fit(sc.schema)
                    if not fits:
                        if seed == 0:
                            skipped.append({"dataset": name, "method": display_name(method),
                                            "why": f"joint table of {cells:.2g} cells > max_cells 1e7"})
                        continue
                settings += [{"dataset": name, "method": method, "epsilon": e, "seed": seed, **fixed}
                             for e in sc.epsilons]
    from _pearl_methods import ORDER

    rank = {m: i for i, m in enumerate(ORDER)}
    settings.sort(key=lambda s: (s["seed"], rank.get(s["method"], len(ORDER))))  # stable: datasets keep their order
    if longest_first:
        settings.sort(key=lambda s: -expected_cpu_s(s["dataset"], s["method"]))
    return settings, skipped


def _strict_privacy(res: dict) -> dict:
    """PEARL's literal rule: AUC > 0.55, or any synthetic record copying a training record, fails."""
    d = res.get("details") or {}
    auc = d.get("membership_auc")
    copies = d.get("synthetic_copy_rate_train")
    if auc is None or copies is None:
        return {"passed": False, "reason": "privacy check did not run"}
    fails = []
    if auc > 0.55:
        fails.append(f"membership AUC {auc:.3f} > 0.55")
    if copies > 0 or (d.get("member_exact_rate") or 0) > 0:
        fails.append(f"{copies:.2%} of synthetic records copy a training record")
    return {"passed": not fails, "reason": "; ".join(fails) or "no exact copy, AUC <= 0.55"}


def _quick_task_models(checks: list) -> None:
    for _, check in checks:
        if type(check).__name__ == "KnowledgeTracingCheck":
            check.set_params(max_epochs=QUICK_TASK_EPOCHS)
        elif type(check).__name__ == "SequenceTaskCheck":
            from skdpsynth.models import GRUSequenceClassifier

            check.set_params(model=GRUSequenceClassifier(max_epochs=QUICK_TASK_EPOCHS))


def _result_row(name: str, r) -> dict:
    keep = ("membership_auc", "member_exact_rate", "nonmember_exact_rate", "synthetic_copy_rate_train",
            "tstr_f1", "trtr_f1", "ratio", "missing_classes", "gru_f1_synthetic", "gru_f1_real", "retention",
            "models", "epsilon", "delta", "is_private", "publishable", "error")
    details = {k: v for k, v in (r.details or {}).items() if k in keep}
    if name == "fairness" and r.details:
        for side in ("synthetic_trained", "real_trained"):
            g = r.details.get(side) or {}
            details[f"{side}_worst_gap"] = g.get("worst_gap")
            details[f"{side}_min_recall"] = g.get("min_recall")
            details[f"{side}_worst_attribute"] = g.get("worst_attribute")
    from skdpsynth.audit._base import jsonable

    return jsonable({"applicable": bool(r.applicable), "passed": bool(r.passed), "score": r.score,
                     "reason": r.reason, "could_not_run": "could not run" in (r.reason or ""), "details": details})


def audit_setting(setting: dict) -> dict:
    """Fit, audit and ledger one setting (module-level task for the grid runner)."""
    import torch

    from skdpsynth.audit import Ledger, ReleaseAuditor, pearl_checks

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    sc = load_scenario(setting["dataset"], setting["shared"], setting["quick"])
    seed = setting["seed"]
    est = make_synthesizer(setting["method"], setting["epsilon"], sc, seed, setting["quick"])
    _, fit_s, fit_mib = measure(lambda: est.fit(sc.train))
    eps = "none" if setting["epsilon"] is None else f"{setting['epsilon']:g}"
    ledger = Ledger(Path(setting["ledger_dir"]) / f"{setting['dataset']}_{setting['method']}_eps{eps}_seed{seed}.jsonl")
    checks = pearl_checks(sc.task, random_state=seed, **sc.checks_kwargs())
    if setting["quick"]:
        _quick_task_models(checks)
    auditor = ReleaseAuditor(checks, ledger=ledger, schema=sc.schema, random_state=seed)
    report, audit_s, _ = measure(lambda: auditor.audit(est, X_train=sc.train, X_holdout=sc.holdout,
                                                       allow_shared_rows=sc.allow_shared_rows))
    results = {name: _result_row(name, r) for name, r in report.results.items()}
    strict = _strict_privacy(results.get("privacy", {}))
    failed = [n for n, r in results.items() if r["applicable"] and not r["passed"]]
    return {"display": display_name(setting["method"]), "task": sc.task, "approved": bool(report.approved),
            "approved_strict": bool(report.approved and strict["passed"]), "strict_privacy": strict,
            "failed_checks": failed, "could_not_run": [n for n, r in results.items() if r["could_not_run"]],
            "checks": results, "fit_s": fit_s, "fit_peak_mib": fit_mib, "audit_s": audit_s,
            "n_estimate": int(est.n_estimate_), "epsilon_spent": _num(est.privacy_spent_.epsilon),
            "delta_spent": _num(est.privacy_spent_.delta), "ledger": ledger.path.name,
            "ledger_entries": len(ledger), "ledger_head": ledger.head, "ledger_ok": bool(ledger.verify())}


def _num(v) -> float | None:
    return None if v is None else float(v)


def _read_progress(path: Path) -> tuple[list[dict], list[dict]]:
    """(finished settings, invocation records) of a progress file."""
    if not path.exists():
        return [], []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in lines if r.get("status") != "invocation"], [r for r in lines if r.get("status") == "invocation"]


def stored(row: dict) -> dict:
    """A row as the result files hold it: no run-time plumbing, repository-relative paths only."""
    return relative_paths({k: v for k, v in row.items() if k not in PLUMBING})


def _load_worker_modules(settings: list[dict]) -> None:
    """Import what the workers imported, so that the result file's stamp lists (and hashes) that code too."""
    import skdpsynth.audit  # noqa: F401
    import skdpsynth.models  # noqa: F401

    for method in sorted({s["method"] for s in settings}):
        load_method(method)


def _cost(setting: dict) -> float:
    """The expected CPU seconds of a setting (quick mode: all alike, its tiny settings are not measured)."""
    return 1.0 if setting.get("quick") else expected_cpu_s(setting["dataset"], setting["method"])


def _clock(seconds: float) -> str:
    return f"{int(seconds // 3600)}:{int(seconds % 3600 // 60):02d}:{int(seconds % 60):02d}"


class _Progress:
    """Appends each finished setting to the progress file and prints it with the count done and the time left.

    The time left is the expected CPU seconds of the settings not yet finished (``expected_cpu_s``) at the pace
    measured so far (wall seconds per expected CPU second of the finished ones).
    """

    def __init__(self, todo: list[dict], path: Path) -> None:
        self.path, self.total, self.done = path, len(todo), 0
        self.expected_left = sum(map(_cost, todo))
        self.expected_done = 0.0
        self.start = time.perf_counter()

    def __call__(self, row: dict) -> None:
        with self.path.open("a") as fh:
            fh.write(json.dumps(stored(row), default=str) + "\n")
        self.done += 1
        cost = _cost(row)
        self.expected_done += cost
        self.expected_left -= cost
        elapsed = time.perf_counter() - self.start
        left = max(0.0, self.expected_left) * elapsed / max(self.expected_done, 1e-9)
        print(f"[{self.done}/{self.total}, {_clock(elapsed)} elapsed, ~{_clock(left)} left] {row['dataset']} "
              f"{row['method']} eps={row['epsilon']:g} seed={row['seed']}: {row['status']} "
              f"approved={row.get('approved')} failed={row.get('failed_checks')} "
              f"({row['wall_s']:.0f} s, {row.get('cpu_s', float('nan')):.0f} CPU s)", flush=True)


def _default_ledger_dir(name: str) -> Path:
    return Path(tempfile.gettempdir()) / "skdpsynth" / f"{name}_ledgers"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--quick", action="store_true", help="CI smoke run: one tiny setting per task kind")
    mode.add_argument("--full", action="store_true", help="the paper's grid")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. SEEDS-1 (full grid)")
    parser.add_argument("--datasets", nargs="*", default=None, choices=sorted(SCENARIOS))
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--resume", action="store_true", help="keep finished settings of the progress file")
    parser.add_argument("--report-only", action="store_true", help="rebuild the report from the progress file")
    parser.add_argument("--name", default=None,
                        help="result name (default pearl_grid, or pearl_grid_quick with --quick); a subset run "
                             "(--datasets) should take another name so as not to replace the full grid")
    parser.add_argument("--ledger-dir", type=Path, default=None,
                        help="folder of the per-setting ledgers (default: a scratch folder under the system's "
                             "temporary folder)")
    args = parser.parse_args(argv)
    from _pearl_report import markdown, summarise

    name = args.name or ("pearl_grid_quick" if args.quick else "pearl_grid")
    progress = RESULTS / f"{name}_progress.jsonl"
    ledgers = (args.ledger_dir or _default_ledger_dir(name)).resolve()
    seeds = 1 if args.quick else args.seeds
    settings, skipped = make_settings(args.quick, seeds, args.datasets, str(ledgers),
                                      longest_first=args.n_jobs != 1)
    done, invocations = _read_progress(progress) if (args.resume or args.report_only) else ([], [])
    wanted = {setting_key(s) for s in settings}
    done = [r for r in done if r["status"] == "ok" and setting_key(r) in wanted]
    start = time.perf_counter()
    if not args.report_only:
        have = {setting_key(r) for r in done}
        todo = [s for s in settings if setting_key(s) not in have]
        if not args.resume:
            shutil.rmtree(ledgers, ignore_errors=True)
            progress.unlink(missing_ok=True)
            invocations = []
        ledgers.mkdir(parents=True, exist_ok=True)
        progress.parent.mkdir(parents=True, exist_ok=True)
        import pearl_grid  # pickled by reference to an importable module

        print(f"{len(todo)} settings to run ({len(done)} kept from the progress file), n_jobs={args.n_jobs}, "
              f"expected {sum(expected_cpu_s(s['dataset'], s['method']) for s in todo) / 60:.0f} CPU min; "
              f"progress: {progress.relative_to(RESULTS.parents[1])}", flush=True)
        new = run_grid(todo, pearl_grid.audit_setting, n_jobs=args.n_jobs, on_result=_Progress(todo, progress))
        done += [stored(r) for r in new]
        wall = time.perf_counter() - start
        record = {"status": "invocation", "commit": _git("rev-parse", "HEAD"),
                  "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "settings_run": len(new),
                  "wall_s": wall, "cpu_s": sum(r.get("cpu_s") or 0.0 for r in new), "n_jobs": args.n_jobs,
                  "cpus": os.cpu_count(), "load_1min_at_end": round(os.getloadavg()[0], 1),
                  "depends": loaded_dependencies()}  # every repository module the run's processes imported
        with progress.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        invocations.append(record)
    canonical, _ = make_settings(args.quick, seeds, args.datasets)  # report order: by seed, cheapest first
    position = {setting_key(s): i for i, s in enumerate(canonical)}
    rows = sorted(done, key=lambda r: position[setting_key(r)])
    summary = summarise(rows, planned=len(settings), plan=settings)
    ran_on = {path: digest for r in invocations for path, digest in (r.get("depends") or {}).items()}
    changed = sorted(path for path, digest in ran_on.items()
                     if not (ROOT / path).is_file() or sha256(ROOT / path) != digest)
    timing = {"invocations": [{k: v for k, v in r.items() if k != "depends"} for r in invocations],
              "wall_s": sum(r["wall_s"] for r in invocations),
              "worker_cpu_s": sum(r.get("cpu_s") or 0.0 for r in rows),
              "worker_wall_s": sum(r.get("wall_s") or 0.0 for r in rows),
              "code_changed_since_run": changed}
    if changed:
        print(f"warning: {len(changed)} file(s) the run imported changed since: {', '.join(changed[:5])}",
              flush=True)
    n_jobs = invocations[-1]["n_jobs"] if invocations else args.n_jobs  # --report-only: the run's n_jobs
    md = markdown(rows, summary, skipped=skipped, quick=args.quick, seeds=seeds, timing=timing, name=name,
                  n_jobs=n_jobs, datasets=args.datasets)
    _load_worker_modules(settings)
    write_results(name, {"summary": summary, "skipped": skipped, "rows": rows, "quick": args.quick,
                         "seeds": seeds, "n_jobs": n_jobs, "timing": timing,
                         "ledgers": "scratch (not kept): " + str(ledgers) if args.ledger_dir is None
                         else str(ledgers)}, md, depends=sorted(ran_on))  # --report-only: the run's modules
    print(md)


if __name__ == "__main__":
    main()
