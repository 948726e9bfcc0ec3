"""``skdpsynth audit``: run the PEARL checks on files and write the ledger entry and the report.

Wired into :mod:`skdpsynth.cli` through :func:`add_parser` and :func:`run`::

    skdpsynth audit --train train.csv --holdout holdout.csv --synthetic release.csv --target Target \\
        --protected Gender --ledger ledger.jsonl --report report/ --schema schema.json --budget release.budget.json
    skdpsynth audit --verify-ledger ledger.jsonl

Exit status: 0 when the release is approved (or the ledger verifies), 1 when
it is rejected (or the ledger is broken), 2 on bad input, 3 on an internal
failure. Errors go through the command line's one handler
(:func:`skdpsynth._command.run_command`). Without ``--schema`` the tables are
read with pandas' kinds (the audit reads the real rows as they are; it releases
no synthetic data).
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import json
from pathlib import Path
from typing import Any

import pandas as pd

from skdpsynth._command import EXIT_OK, EXIT_REJECTED
from skdpsynth._io import InputError, check_output, dumps_json, print_stdout, read_schema, read_table, sha256_of
from skdpsynth.audit._auditor import ReleaseAuditor, pearl_checks
from skdpsynth.audit._ledger import Ledger

__all__ = ["add_parser", "run", "verify_ledger", "read_budget"]


def add_parser(subparsers: Any, parents: list[argparse.ArgumentParser] | None = None) -> argparse.ArgumentParser:
    """Add the ``audit`` sub-command to an ``argparse`` sub-parser collection and return its parser."""
    p = subparsers.add_parser(
        "audit", parents=parents or [],
        help="PEARL release audit of a synthetic table (validity, privacy, utility, task, fairness)",
        description="Audit a synthetic release against the real training and holdout data (both confidential). "
                    "Approves only when every applicable check passes; appends a hash-chained ledger entry and "
                    "writes a report. Exit status 0 = approved, 1 = rejected, 2 = bad input, 3 = internal error.",
    )
    p.add_argument("--train", help="real training rows the synthesizer saw (CSV or Parquet)")
    p.add_argument("--holdout", help="real rows the synthesizer never saw (CSV or Parquet)")
    p.add_argument("--synthetic", help="the release to audit (CSV or Parquet)")
    p.add_argument("--target", help="outcome column (per row, or per learner for sequences)")
    p.add_argument("--task", default="classification", choices=["classification", "sequence", "knowledge_tracing"])
    p.add_argument("--protected", nargs="+", default=None, help="protected attribute column(s) for fairness")
    p.add_argument("--positive", default=None, help="class of --target whose recall the fairness check compares")
    p.add_argument("--schema", default=None, help="public schema (JSON, TableSchema.to_json format)")
    p.add_argument("--budget", default=None, help="the release's budget record (written by 'skdpsynth synthesize')")
    p.add_argument("--ledger", default=None, help="ledger file (JSON lines) to append the audit to")
    p.add_argument("--verify-ledger", default=None, metavar="LEDGER",
                   help="verify every entry of a ledger (alone: verify only; exit 1 if it is broken)")
    p.add_argument("--report", default=None, help="folder for report.md / report.html / report.json / plots")
    p.add_argument("--force", action="store_true", help="write the report into an existing, non-empty folder")
    p.add_argument("--sep", default=None, help="CSV separator (default: sniffed)")
    p.add_argument("--encoding", default=None, help="CSV encoding (default: utf-8; e.g. latin-1)")
    p.add_argument("--id-col", default=None, help="learner id column (sequence / knowledge_tracing)")
    p.add_argument("--order-col", default=None, help="event order column (sequence / knowledge_tracing)")
    p.add_argument("--event-col", nargs="+", default=None, help="event column(s) (sequence)")
    p.add_argument("--skill-col", default="skill_id", help="skill column (knowledge_tracing)")
    p.add_argument("--correct-col", default="correct", help="0/1 response column (knowledge_tracing)")
    p.add_argument("--allow-shared-rows", action="store_true",
                   help="accept holdout rows identical to training rows (only where distinct people can share a row)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the checks' models")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of markdown")
    p.set_defaults(func=run)
    return p


# --------------------------------------------------------------------------- ledger
def verify_ledger(path: str | Path) -> int:
    """Verify a whole ledger; print the result; exit status 0 (intact) or 1 (broken)."""
    path = Path(path)
    if path.is_dir() or not path.exists():
        raise InputError(f"--verify-ledger {str(path)!r} is {'a folder' if path.is_dir() else 'missing'}; give the "
                         "ledger's .jsonl file.")
    ledger = Ledger(path)
    problems = ledger.problems()
    if not problems and ledger.verify():
        print_stdout(f"ledger {path}: {len(ledger)} entries, every hash and link verified (head "
                     f"{ledger.head[:12]}...).")
        return EXIT_OK
    more = f" ({len(problems) - 1} further problem(s) after it)" if len(problems) > 1 else ""
    print_stdout(f"ledger {path} is BROKEN: first bad entry: {problems[0] if problems else 'unknown'}{more}.")
    return EXIT_REJECTED


def _check_ledger_target(path: str, inputs: list[str | None]) -> None:
    """The ledger is appended to (never replaced): it must be a file that is no input and verifies."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"--ledger {path!r} is a folder; give a file such as {str(p / 'ledger.jsonl')!r}.")
    for src in inputs:
        if src is not None and p.resolve() == Path(src).resolve():
            raise InputError(f"--ledger {path!r} is an input of this audit; give the ledger's own .jsonl file.")
    problems = Ledger(p).problems() if p.exists() else []
    if problems:
        raise InputError(f"--ledger {path!r} is broken ({problems[0]}); nothing was audited. Inspect it with "
                         f"'skdpsynth audit --verify-ledger {path}'.")


# --------------------------------------------------------------------------- checks on the input
def _closest(name: str, options: list[str]) -> str:
    close = difflib.get_close_matches(name, options, n=1) or [o for o in options if o.lower() == name.lower()]
    return f" Did you mean {close[0]!r}?" if close else ""


def _require_columns(option: str, names: list[str], frames: dict[str, pd.DataFrame]) -> None:
    for name in names:
        for where, frame in frames.items():
            if name not in frame.columns:
                cols = [str(c) for c in frame.columns]
                shown = ", ".join(repr(c) for c in cols[:30]) + (" ..." if len(cols) > 30 else "")
                raise InputError(f"{option} {name!r} is not a column of {where} (columns: {shown})."
                                 f"{_closest(name, cols)}")


def _positive_label(value: str, target: str, frames: dict[str, pd.DataFrame]) -> Any:
    """The ``--positive`` class as it appears in the data (``"1"`` -> 1 for a numeric target)."""
    labels = pd.unique(pd.concat([f[target] for f in frames.values()]).dropna())
    for label in labels:
        if str(label) == value:
            return label.item() if hasattr(label, "item") else label
    shown = ", ".join(repr(str(v)) for v in sorted(labels, key=str)[:20])
    raise InputError(f"--positive {value!r} is not a class of --target {target!r} (classes: {shown})."
                     f"{_closest(value, [str(v) for v in labels])}")


def _check_names(args: argparse.Namespace, frames: dict[str, pd.DataFrame]) -> Any:
    if args.task == "classification" and not args.target:
        raise InputError("--target is required for --task classification.")
    if args.target:
        _require_columns("--target", [args.target], frames)
    if args.protected:
        _require_columns("--protected", list(args.protected), frames)
    for option, value in (("--id-col", args.id_col), ("--order-col", args.order_col)):
        if value:
            _require_columns(option, [value], frames)
    if args.event_col:
        _require_columns("--event-col", list(args.event_col), frames)
    if args.task == "knowledge_tracing":
        _require_columns("--skill-col", [args.skill_col], frames)
        _require_columns("--correct-col", [args.correct_col], frames)
    if args.positive is not None:
        if not args.target:
            raise InputError("--positive names a class of --target: give --target as well.")
        return _positive_label(args.positive, args.target, {k: v for k, v in frames.items() if k != "--synthetic"})
    return None


# --------------------------------------------------------------------------- the budget record
def read_budget(path: str | Path, synthetic: str | Path) -> dict[str, Any]:
    """Read ``synthesize``'s budget record and check that it describes the audited file."""
    path = Path(path)
    if path.is_dir() or not path.exists():
        raise InputError(f"--budget {str(path)!r} is {'a folder' if path.is_dir() else 'missing'}; give the "
                         ".budget.json file written beside the release.")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"--budget {str(path)!r} is not valid JSON ({exc}).") from exc
    spent = record.get("privacy_spent") if isinstance(record, dict) else None
    if not isinstance(spent, dict) or "epsilon" not in spent:
        raise InputError(f"--budget {str(path)!r} is not a budget record of 'skdpsynth synthesize' (no "
                         "privacy_spent).")
    expected = (record.get("release") or {}).get("sha256")
    if expected and expected != sha256_of(synthetic):
        raise InputError(f"--budget {str(path)!r} describes another release ({record['release'].get('file')!r}); "
                         "give the budget record written with this --synthetic file.")
    return record


def _budget_kwargs(audit: Any, record: dict[str, Any] | None) -> dict[str, Any]:
    """The keyword through which this version of ``ReleaseAuditor.audit`` takes the release's budget record."""
    if record is None:
        return {}
    accepted = inspect.signature(audit).parameters
    for name in ("privacy", "budget"):
        if name in accepted:
            return {name: record}
    return {}


# --------------------------------------------------------------------------- the command
def _save_report(report: Any, folder: str, force: bool) -> None:
    accepted = inspect.signature(report.save).parameters
    extra = {k: True for k in ("overwrite", "force") if k in accepted and force}
    report.save(folder, **extra)


def run(args: argparse.Namespace) -> int:
    """Run the audit described by parsed ``args``; print the summary; return the exit status."""
    if args.verify_ledger and not (args.train or args.holdout or args.synthetic):
        return verify_ledger(args.verify_ledger)
    missing = [f"--{n}" for n in ("train", "holdout", "synthetic") if not getattr(args, n)]
    if missing:
        raise InputError(f"audit needs {', '.join(missing)} (or --verify-ledger LEDGER alone).")
    if args.verify_ledger and verify_ledger(args.verify_ledger) != EXIT_OK:
        return EXIT_REJECTED
    inputs = [args.train, args.holdout, args.synthetic, args.schema, args.budget]
    if args.report:
        check_output(args.report, force=args.force, inputs=inputs, what="--report", kind="folder")
    if args.ledger:
        _check_ledger_target(args.ledger, inputs)
    schema = read_schema(args.schema) if args.schema else None
    frames = {f"--{n}": read_table(getattr(args, n), sep=args.sep, encoding=args.encoding, schema=schema, infer=True,
                                   what=f"--{n}") for n in ("train", "holdout", "synthetic")}
    positive = _check_names(args, frames)
    record = read_budget(args.budget, args.synthetic) if args.budget else None
    report = _audit(args, frames, schema, positive, record)
    if args.report:
        _save_report(report, args.report, args.force)
    status = EXIT_OK if report.approved else EXIT_REJECTED
    print_stdout(dumps_json(report.to_dict()) if args.json else report.to_markdown())
    return status


def _audit(args: argparse.Namespace, frames: dict[str, pd.DataFrame], schema: Any, positive: Any,
           record: dict[str, Any] | None) -> Any:
    event = args.event_col[0] if args.event_col and len(args.event_col) == 1 else args.event_col
    checks = pearl_checks(args.task, target=args.target, protected=args.protected, positive=positive,
                          schema=schema, id_col=args.id_col, order_col=args.order_col, event_col=event,
                          skill_col=args.skill_col, correct_col=args.correct_col)
    auditor = ReleaseAuditor(checks, ledger=args.ledger, schema=schema, random_state=args.seed)
    extra = _budget_kwargs(auditor.audit, record)
    if args.allow_shared_rows:
        if "allow_shared_rows" not in inspect.signature(auditor.audit).parameters:
            raise InputError("--allow-shared-rows is not supported by this version of the auditor.")
        extra["allow_shared_rows"] = True
    return auditor.audit(synthetic=frames["--synthetic"], X_train=frames["--train"], X_holdout=frames["--holdout"],
                         **extra)
