"""PEARL release-audit grid (the paper's RQ2): dataset x method x epsilon x seed, every release audited.

    python benchmarks/pearl_grid.py             # 2 datasets x 4 methods x 3 budgets x 4 seeds = 96 settings
    python benchmarks/pearl_grid.py --seeds 1   # 24 settings
    python benchmarks/pearl_grid.py --quick     # smoke run (HESP, 2 methods, 1 budget, 1 seed)

Each setting fits a synthesizer on the training split, audits the release with
``skdpsynth.audit.ReleaseAuditor(pearl_checks("classification", target=...,
protected=...))`` and appends the audit to that setting's hash-chained ledger
(``results/pearl_grid_ledgers/``; ``pearl_grid_quick_ledgers/`` in quick mode). The summary counts approved releases and
failures by check, as in PEARL's RQ2 (96 settings, 12 approved; 45 privacy,
34 utility, 12 task failures, overlapping).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, SHARED_DATA, machine, markdown_table, measure, write_results  # noqa: E402
from _grid_runner import make_grid, run_grid  # noqa: E402

DATASETS = ("uci_dropout", "oulad")
METHODS = ("DPMarginals", "MST", "NPGC", "PATEGAN")
EPSILONS = (1.0, 5.0, 10.0)
AUDIT_ROWS = 3000  # members / non-members handed to the auditor (the synthesizer sees the whole training split)


def _protected(name: str) -> list[str]:
    """Protected attributes for the fairness check."""
    import skdpsynth.datasets as D

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "uci_dropout":
            b = D.load_uci_dropout(path=SHARED_DATA / name, download=False)
        elif name == "uci_hesp":
            b = D.load_uci_hesp(path=SHARED_DATA / name, download=False)
        elif name == "oulad":
            return ["gender", "disability"]
        else:
            return []
    prot = getattr(b, "protected", None) or []
    return [p for p in ([prot] if isinstance(prot, str) else list(prot))][:2]


def audit_setting(setting: dict) -> dict:
    """Fit, audit, ledger one setting (module-level task for the grid runner)."""
    import torch
    from tabular import load, make_synthesizer

    from skdpsynth.audit import Ledger, ReleaseAuditor, pearl_checks

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    train, hold, schema, target = load(setting["dataset"])
    seed = setting["seed"]
    est = make_synthesizer(setting["method"], setting["epsilon"], schema, seed, setting["quick"], len(train))
    if setting["method"] == "PATEGAN" and not setting["quick"]:
        est.set_params(n_iter=200)  # the same on every dataset in this grid
    _, fit_s, _ = measure(lambda: est.fit(train))
    members = train if len(train) <= AUDIT_ROWS else train.sample(AUDIT_ROWS, random_state=seed)
    holdout = hold if len(hold) <= AUDIT_ROWS else hold.sample(AUDIT_ROWS, random_state=seed + 1)
    eps = "none" if setting["epsilon"] is None else f"{setting['epsilon']:g}"
    ledger = Ledger(Path(setting["ledger_dir"]) / f"{setting['dataset']}_{setting['method']}_eps{eps}_seed{seed}.jsonl")
    checks = pearl_checks("classification", target=target, protected=_protected(setting["dataset"]) or None,
                          schema=schema, random_state=seed)
    auditor = ReleaseAuditor(checks, ledger=ledger, schema=schema, n_samples=len(members), random_state=seed)
    report, audit_s, _ = measure(lambda: auditor.audit(est, X_train=members.reset_index(drop=True),
                                                       X_holdout=holdout.reset_index(drop=True)))
    results = {}
    for name, r in report.results.items():
        results[name] = {"applicable": bool(r.applicable), "passed": bool(r.passed),
                         "score": None if r.score is None else float(r.score), "reason": r.reason}
    return {"approved": bool(report.approved), "failed_checks": [n for n, r in results.items()
                                                                  if r["applicable"] and not r["passed"]],
            "checks": results, "reasons": list(report.reasons), "fit_s": fit_s, "audit_s": audit_s,
            "epsilon_spent": float(est.privacy_spent_.epsilon), "ledger": ledger.path.name
            if hasattr(ledger, "path") else str(ledger), "ledger_ok": bool(ledger.verify())}


def summarise(rows: list[dict]) -> dict:
    ok = [r for r in rows if r["status"] == "ok"]
    fails = Counter(c for r in ok for c in r["failed_checks"])
    return {"settings": len(rows), "audited": len(ok), "approved": sum(r["approved"] for r in ok),
            "failures_by_check": dict(fails), "errors": len(rows) - len(ok)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--append", action="store_true",
                        help="keep the rows and ledgers of results/pearl_grid.json and run only the missing settings")
    args = parser.parse_args(argv)
    name = "pearl_grid_quick" if args.quick else "pearl_grid"
    ledgers = RESULTS / f"{name}_ledgers"
    if args.quick:
        settings = make_grid(["uci_hesp"], ["DPMarginals", "MST"], [5.0], [0], quick=True, ledger_dir=str(ledgers))
    else:
        settings = make_grid(DATASETS, METHODS, EPSILONS, range(args.seeds), quick=False, ledger_dir=str(ledgers))
    previous: list[dict] = []
    if args.append and (RESULTS / f"{name}.json").exists():
        previous = [r for r in json.loads((RESULTS / f"{name}.json").read_text())["rows"] if r["status"] == "ok"]
        have = {(r["dataset"], r["method"], r["epsilon"], r["seed"]) for r in previous}
        settings = [s for s in settings if (s["dataset"], s["method"], s["epsilon"], s["seed"]) not in have]
    elif ledgers.exists():
        shutil.rmtree(ledgers)
    ledgers.mkdir(parents=True, exist_ok=True)
    import pearl_grid  # pickled by reference to an importable module

    start = time.perf_counter()
    rows = previous + run_grid(settings, pearl_grid.audit_setting, n_jobs=args.n_jobs)
    total_s = time.perf_counter() - start
    summary = summarise(rows)
    md = _markdown(rows, summary, args, total_s)
    write_results(name, {"summary": summary, "rows": rows, "total_s": total_s, "quick": args.quick}, md)
    print(md)


def _markdown(rows, summary, args, total_s) -> str:
    import pandas as pd

    ok = [r for r in rows if r["status"] == "ok"]
    table = []
    if ok:
        df = pd.DataFrame([{"dataset": r["dataset"], "method": r["method"], "epsilon": r["epsilon"],
                            "approved": r["approved"], **{f"fail_{c}": c in r["failed_checks"]
                                                          for c in ("validity", "privacy", "utility", "fairness")}}
                           for r in ok])
        agg = df.groupby(["dataset", "method", "epsilon"]).agg(
            settings=("approved", "size"), approved=("approved", "sum"),
            privacy=("fail_privacy", "sum"), utility=("fail_utility", "sum"), fairness=("fail_fairness", "sum"),
            validity=("fail_validity", "sum")).reset_index()
        table = agg.to_dict("records")
    fails = summary["failures_by_check"]
    lines = [
        "# PEARL audit grid" + (" (quick smoke run)" if args.quick else ""),
        "",
        f"Machine: {machine()}; wall time of the last invocation {total_s / 60:.1f} min.",
        "",
        f"**{summary['approved']} of {summary['audited']} releases approved**; failures by check (overlapping): "
        + ", ".join(f"{k} {v}" for k, v in sorted(fails.items())) + (f"; {summary['errors']} settings errored"
                                                                        if summary["errors"] else "") + ".",
        "",
        "PEARL paper (RQ2): 96 settings, 12 approved; 45 privacy, 34 utility, 12 task failures. The paper's "
        "task failures come from sequence / knowledge-tracing releases; this grid audits tabular releases "
        "(validity, privacy, utility, fairness), so the fairness check takes the task check's place.",
        "",
        "Grid: " + ("HESP, DP-Marginals and MST, epsilon 5, one seed." if args.quick else
                    f"datasets {list(DATASETS)} x methods {list(METHODS)} x epsilon {list(EPSILONS)} x "
                    f"seeds 0-{args.seeds - 1} = {summary['settings']} settings.")
        + f" The synthesizer is fitted on the whole training split; the auditor gets at most {AUDIT_ROWS} "
        "training rows (members) and as many holdout rows (non-members), and a synthetic sample of that size. "
        "PATE-GAN runs at 200 iterations (reduced). Thresholds: the `pearl_checks` defaults "
        "(membership AUC <= 0.55, no exact copies beyond the non-member rate, TSTR/TRTR >= 0.8, every outcome "
        "class with >= 1 % real mass present, macro-F1 above the majority floor, fairness gap rules).",
        "",
        "Every audit is appended to a hash-chained ledger per setting in `results/pearl_grid[_quick]_ledgers/` "
        f"(all verified: {all(r.get('ledger_ok') for r in ok)}).",
        "",
        "## Per cell (dataset x method x epsilon)",
        "",
        markdown_table(table) if table else "(none)",
        "",
    ]
    errors = [r for r in rows if r["status"] != "ok"]
    if errors:
        lines += ["## Errors", "", markdown_table([{k: r[k] for k in ("dataset", "method", "epsilon", "seed", "error")}
                                                   for r in errors]), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
