"""The ``skdpsynth`` command: demo, synthesize, schema draft / confirm, datasets, audit.

Every sub-command shares one error handler (:func:`run_command`): problems
are reported as ``skdpsynth: error: ...`` on stderr without a traceback
(``--debug`` shows it). Exit status: 0 success, 1 a rejected audit (or a
ledger that fails verification), 2 bad input or a missing extra (the message names it), 3 an internal failure
(a broken import of ours included).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from skdpsynth import _demo, _schema_cmd, datasets
from skdpsynth._command import EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_REJECTED, PROG, run_command
from skdpsynth._command import Parser as _Parser
from skdpsynth._synthesize import MAX_ROWS, synthesize
from skdpsynth.audit import _cli as audit_cli
from skdpsynth.exceptions import SkdpsynthError
from skdpsynth.synthesizers._registry import REGISTRY

__all__ = ["main", "build_parser", "run_command", "EXIT_OK", "EXIT_REJECTED", "EXIT_INPUT", "EXIT_INTERNAL"]

#: ``--method`` choices: the registered table synthesizers
TABLE_METHODS = tuple(info.method for info in REGISTRY if info.data == "table")


# --------------------------------------------------------------------------- argument types
def epsilon_arg(text: str) -> float | None:
    """``--epsilon``: a positive number, or ``none`` for a non-private run."""
    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number; give a positive privacy budget such as 1.0, or 'none' for a NON-private "
            "run.") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(
            f"{text!r}: epsilon must be a positive finite number (or 'none' for a NON-private run).")
    return value


def positive_float(text: str) -> float:
    """A positive finite number."""
    value = epsilon_arg(text)
    if value is None:
        raise argparse.ArgumentTypeError("a positive number is required here ('none' is not accepted).")
    return value


def positive_int(text: str) -> int:
    """A positive integer."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number.") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a positive whole number is required.")
    return value


# --------------------------------------------------------------------------- sub-commands
def _cmd_datasets(args: argparse.Namespace) -> int:
    if args.action == "list":
        for name, info in datasets.list_datasets().items():
            print(f"{name:12s} {info}")
        return EXIT_OK
    if not args.name:
        raise SkdpsynthError("datasets fetch needs a dataset name (see 'skdpsynth datasets list').")
    path = datasets.fetch_dataset(args.name, data_home=args.data_home)
    print(f"{args.name}: {path}")
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    folder, note = _demo.choose_output_folder(args.output or _demo.DEFAULT_FOLDER, explicit=args.output is not None,
                                              force=args.force)
    if note:
        print(note, file=sys.stderr)
    return _demo.run_demo(output=folder, n_students=args.n_students, epsilon=args.epsilon, seed=args.seed)


# --------------------------------------------------------------------------- parser
def _add_read_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sep", default=None, help="CSV separator (default: sniffed from the first lines)")
    p.add_argument("--encoding", default=None, help="CSV text encoding (default: utf-8; e.g. latin-1, cp1252)")


def _add_synthesize(sub: Any, common: argparse.ArgumentParser) -> None:
    syn = sub.add_parser("synthesize", parents=[common],
                         help="fit a DP synthesizer on a CSV/Parquet table and write synthetic rows",
                         description="Fit a differentially private synthesizer on a table and write a synthetic "
                                     "release and its budget record (OUTPUT.budget.json, e.g. release.csv."
                                     "budget.json; also written when a fit refuses after spending).")
    syn.add_argument("input", help="the private table (.csv, .tsv or .parquet)")
    syn.add_argument("--method", choices=TABLE_METHODS, default="npgc", help="synthesizer (default: %(default)s)")
    syn.add_argument("--epsilon", type=epsilon_arg, required=True,
                     help="privacy budget (e.g. 1.0), or 'none' for a NON-private run")
    syn.add_argument("--delta", type=float, default=None, help="delta of (epsilon, delta)-DP (default: the method's)")
    syn.add_argument("--schema", default=None,
                     help="confirmed public schema (JSON); without it every column is read as text and the domain "
                          "(kinds, bounds, categories) is DP-estimated")
    syn.add_argument("--n-samples", type=positive_int, default=None,
                     help=f"rows to write (default: a DP estimate of the number of people; above {MAX_ROWS:,} only "
                          "with --force)")
    syn.add_argument("--seed", type=int, default=None, help="seed of the sampling (not of the privacy noise)")
    syn.add_argument("--reproducible-noise", action="store_true",
                     help="derive the privacy noise from --seed (tests and papers only: NOT publishable)")
    syn.add_argument("-o", "--output", required=True, help="output .csv, .tsv or .parquet")
    syn.add_argument("--force", action="store_true",
                     help=f"overwrite existing output files; allow --n-samples above {MAX_ROWS:,}")
    _add_read_options(syn)
    syn.set_defaults(func=synthesize)


def _add_schema(sub: Any, common: argparse.ArgumentParser) -> None:
    schema = sub.add_parser("schema", help="draft a schema to check against the codebook, then confirm it")
    actions = schema.add_subparsers(dest="schema_action", required=True, metavar="ACTION", parser_class=_Parser)
    draft = actions.add_parser(
        "draft", parents=[common], help="draft a schema from a table (under DP with --epsilon, or --raw)",
        description="Draft a schema (column kinds, bounds, categories) from a table, to check against the codebook. "
                    "--epsilon E estimates it under DP (charged to the data's budget; its budget record is written "
                    "beside it); --raw reads it from the data as it is (NOT private: each bound and category list "
                    "is marked raw and must be replaced or accepted by name before it is confirmed).")
    draft.add_argument("input", help="the table (.csv, .tsv or .parquet)")
    draft.add_argument("-o", "--output", required=True, help="schema file to write (.json)")
    draft.add_argument("--epsilon", type=positive_float, default=None,
                       help="privacy budget of the DP draft (count it against the data's total budget)")
    draft.add_argument("--delta", type=float, default=1e-6, help="delta of the DP draft (default: %(default)s)")
    draft.add_argument("--raw", action="store_true", help="read the draft from the data as it is (NOT private)")
    draft.add_argument("--force", action="store_true", help="overwrite an existing schema file")
    _add_read_options(draft)
    draft.set_defaults(func=_schema_cmd.draft)
    confirm = actions.add_parser(
        "confirm", parents=[common], help="write a checked draft as a confirmed (public) schema",
        description="Confirm a draft checked against the codebook: write it as a public schema. Entries the draft "
                    "read from the data (marked raw) are refused unless each was replaced or is accepted by name "
                    "with --accept (e.g. --accept age.bounds --accept gender.categories).")
    confirm.add_argument("input", help="the checked draft (.json)")
    confirm.add_argument("-o", "--output", required=True, help="confirmed schema file to write (.json)")
    confirm.add_argument("--accept", action="append", default=[], metavar="ENTRY",
                         help="a raw entry to keep as read from the data (COLUMN.bounds or COLUMN.categories); "
                              "repeat for each")
    confirm.add_argument("--force", action="store_true", help="overwrite an existing schema file")
    confirm.set_defaults(func=_schema_cmd.confirm)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``skdpsynth`` command."""
    parser = _Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--debug", action="store_true", help="show the traceback of errors")
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show the traceback of errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    demo = sub.add_parser("demo", parents=[common],
                          help="synthesize and audit built-in simulated learner data (< 1 minute)")
    demo.add_argument("--output", default=None,
                      help="folder for the report (default: skdpsynth-report, or a new name if that exists)")
    demo.add_argument("--force", action="store_true", help="write into an existing, non-empty --output folder")
    demo.add_argument("--n-students", type=positive_int, default=2000)
    demo.add_argument("--epsilon", type=positive_float, default=2.0)
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=_cmd_demo)

    _add_synthesize(sub, common)
    _add_schema(sub, common)

    ds = sub.add_parser("datasets", parents=[common], help="list or fetch the public datasets")
    ds.add_argument("action", choices=["list", "fetch"])
    ds.add_argument("name", nargs="?")
    ds.add_argument("--data-home", default=None)
    ds.set_defaults(func=_cmd_datasets)

    audit_cli.add_parser(sub, parents=[common])
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``skdpsynth`` command; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (status 2) and --help (status 0)
        return exc.code if isinstance(exc.code, int) else EXIT_INPUT
    return run_command(args.func, args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
