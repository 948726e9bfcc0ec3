"""``skdpsynth audit``: run the PEARL checks on files and write the ledger entry and the report.

Wired into :mod:`skdpsynth.cli` through :func:`add_parser` and :func:`run`::

    skdpsynth audit --train train.csv --holdout holdout.csv --synthetic release.csv --target Target \\
        --protected Gender --ledger ledger.jsonl --report report/ --schema schema.json

Exit status: 0 when the release is approved, 1 when it is rejected, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["add_parser", "run", "read_table"]


def read_table(path: str | Path, *, sep: str | None = None, encoding: str = "utf-8-sig") -> pd.DataFrame:
    """Read a CSV (separator sniffed unless ``sep`` is given) or Parquet file (by extension)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if path.suffix.lower() in (".parquet", ".pq"):
        return pd.read_parquet(path)
    if sep is None:
        return pd.read_csv(path, sep=None, engine="python", encoding=encoding)
    return pd.read_csv(path, sep=sep, encoding=encoding)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``audit`` sub-command to an ``argparse`` sub-parser collection and return its parser."""
    p = subparsers.add_parser(
        "audit",
        help="PEARL release audit of a synthetic table (validity, privacy, utility, task, fairness)",
        description="Audit a synthetic release against the real training and holdout data (both confidential). "
                    "Approves only when every applicable check passes; appends a hash-chained ledger entry and "
                    "writes a report. Exit status 0 = approved, 1 = rejected, 2 = bad input.",
    )
    p.add_argument("--train", required=True, help="real training rows the synthesizer saw (CSV or Parquet)")
    p.add_argument("--holdout", required=True, help="real rows the synthesizer never saw (CSV or Parquet)")
    p.add_argument("--synthetic", required=True, help="the release to audit (CSV or Parquet)")
    p.add_argument("--target", help="outcome column (per row, or per learner for sequences)")
    p.add_argument("--task", default="classification", choices=["classification", "sequence", "knowledge_tracing"])
    p.add_argument("--protected", nargs="+", default=None, help="protected attribute column(s) for fairness")
    p.add_argument("--positive", default=None, help="class whose recall the fairness check compares")
    p.add_argument("--schema", default=None, help="public schema (JSON, TableSchema.to_json format)")
    p.add_argument("--ledger", default=None, help="ledger file (JSON lines) to append the audit to")
    p.add_argument("--report", default=None, help="folder for report.md / report.html / report.json / plots")
    p.add_argument("--sep", default=None, help="CSV separator (default: sniffed)")
    p.add_argument("--encoding", default="utf-8-sig", help="CSV encoding (default: utf-8-sig)")
    p.add_argument("--id-col", default=None, help="learner id column (sequence / knowledge_tracing)")
    p.add_argument("--order-col", default=None, help="event order column (sequence / knowledge_tracing)")
    p.add_argument("--event-col", nargs="+", default=None, help="event column(s) (sequence)")
    p.add_argument("--skill-col", default="skill_id", help="skill column (knowledge_tracing)")
    p.add_argument("--correct-col", default="correct", help="0/1 response column (knowledge_tracing)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the checks' models")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of markdown")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the audit described by parsed ``args``; print the summary; return the exit status."""
    from skdpsynth.audit._auditor import ReleaseAuditor, pearl_checks
    from skdpsynth.schema import TableSchema

    try:
        train = read_table(args.train, sep=args.sep, encoding=args.encoding)
        holdout = read_table(args.holdout, sep=args.sep, encoding=args.encoding)
        synthetic = read_table(args.synthetic, sep=args.sep, encoding=args.encoding)
        schema = TableSchema.from_json(args.schema) if args.schema else None
        if args.task == "classification" and not args.target:
            raise ValueError("--target is required for --task classification")
        for name, frame in (("train", train), ("holdout", holdout), ("synthetic", synthetic)):
            if args.target and args.target not in frame.columns:
                raise ValueError(f"--target {args.target!r} is not a column of --{name} (columns: "
                                 f"{list(frame.columns)[:10]}...)")
        event = args.event_col[0] if args.event_col and len(args.event_col) == 1 else args.event_col
        checks = pearl_checks(args.task, target=args.target, protected=args.protected, positive=args.positive,
                              schema=schema, id_col=args.id_col, order_col=args.order_col, event_col=event,
                              skill_col=args.skill_col, correct_col=args.correct_col)
    except (OSError, ValueError) as exc:
        print(f"skdpsynth audit: error: {exc}", file=sys.stderr)
        return 2
    auditor = ReleaseAuditor(checks, ledger=args.ledger, schema=schema, random_state=args.seed)
    report = auditor.audit(synthetic=synthetic, X_train=train, X_holdout=holdout)
    if args.report:
        report.save(args.report)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.to_markdown())
    return 0 if report.approved else 1


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (``python -m skdpsynth.audit._cli ...``)."""
    parser = argparse.ArgumentParser(prog="skdpsynth")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
