"""The ``skdpsynth`` command: demo, synthesize, schema draft, datasets, audit.

Every sub-command shares one error handler (:func:`run_command`): problems
are reported as ``skdpsynth: error: ...`` on stderr without a traceback
(``--debug`` shows it). Exit status: 0 success, 1 a rejected audit (or a
ledger that fails verification), 2 bad input, 3 an internal failure.
"""

from __future__ import annotations

import argparse
import math
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from skdpsynth.exceptions import PrivacyLeakWarning, SkdpsynthError
from skdpsynth.synthesizers._registry import REGISTRY

__all__ = ["main", "build_parser", "run_command", "EXIT_OK", "EXIT_REJECTED", "EXIT_INPUT", "EXIT_INTERNAL"]

EXIT_OK, EXIT_REJECTED, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
#: ``--method`` choices: the registered table synthesizers
TABLE_METHODS = tuple(info.method for info in REGISTRY if info.data == "table")
PROG = "skdpsynth"


class _Parser(argparse.ArgumentParser):
    """Argument errors as ``skdpsynth: error: ...`` (exit 2), like every other error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_INPUT, f"{PROG}: error: {message}\n")


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
def _cmd_synthesize(args: argparse.Namespace) -> int:
    from skdpsynth._synthesize import synthesize

    return synthesize(args)


def _cmd_schema_draft(args: argparse.Namespace) -> int:
    from skdpsynth._io import check_output, read_table, write_json
    from skdpsynth.schema import TableSchema

    out = check_output(args.output, force=args.force, inputs=[args.input], what="-o", kind="json")
    if not hasattr(TableSchema, "draft"):
        raise SkdpsynthError("this installation of skdpsynth cannot draft schemas (TableSchema.draft is missing); "
                             "upgrade skdpsynth, or write the schema by hand (see the schema guide).")
    frame = read_table(args.input, sep=args.sep, encoding=args.encoding, what="input")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # said below, in plain words
        schema = TableSchema.draft(frame)
    write_json(schema.to_dict(), out)
    print(f"wrote a DRAFT schema of {len(schema)} columns to {out}. It was read from the data, so it is marked "
          '"public": false and a release built on it is NOT end-to-end differentially private.')
    items = schema.checklist()
    print("Check before use (against the codebook, not the data):")
    for item in [items] if isinstance(items, str) else list(items):
        print(f"  - {item}")
    print(f"Then give it to a release with --schema {out}.")
    return EXIT_OK


def _cmd_datasets(args: argparse.Namespace) -> int:
    from skdpsynth import datasets

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
    from skdpsynth._demo import DEFAULT_FOLDER, choose_output_folder, run_demo

    folder, note = choose_output_folder(args.output or DEFAULT_FOLDER, explicit=args.output is not None,
                                        force=args.force)
    if note:
        print(note, file=sys.stderr)
    return run_demo(output=folder, n_students=args.n_students, epsilon=args.epsilon, seed=args.seed)


# --------------------------------------------------------------------------- parser
def _add_read_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sep", default=None, help="CSV separator (default: sniffed from the first lines)")
    p.add_argument("--encoding", default=None, help="CSV text encoding (default: utf-8; e.g. latin-1, cp1252)")


def _add_synthesize(sub: Any, common: argparse.ArgumentParser) -> None:
    syn = sub.add_parser("synthesize", parents=[common],
                         help="fit a DP synthesizer on a CSV/Parquet table and write synthetic rows",
                         description="Fit a differentially private synthesizer on a table and write a synthetic "
                                     "release and its budget record (OUTPUT with extension .budget.json).")
    syn.add_argument("input", help="the private table (.csv, .tsv or .parquet)")
    syn.add_argument("--method", choices=TABLE_METHODS, default="npgc", help="synthesizer (default: %(default)s)")
    syn.add_argument("--epsilon", type=epsilon_arg, required=True,
                     help="privacy budget (e.g. 1.0), or 'none' for a NON-private run")
    syn.add_argument("--delta", type=float, default=None, help="delta of (epsilon, delta)-DP (default: the method's)")
    syn.add_argument("--schema", default=None, help="public schema (JSON); without it the domain is DP-estimated")
    syn.add_argument("--n-samples", type=positive_int, default=None,
                     help="rows to write (default: a DP estimate of the number of people)")
    syn.add_argument("--seed", type=int, default=None, help="seed of the sampling (not of the privacy noise)")
    syn.add_argument("--reproducible-noise", action="store_true",
                     help="derive the privacy noise from --seed (tests and papers only: NOT publishable)")
    syn.add_argument("-o", "--output", required=True, help="output .csv, .tsv or .parquet")
    syn.add_argument("--force", action="store_true", help="overwrite existing output files")
    _add_read_options(syn)
    syn.set_defaults(func=_cmd_synthesize)


def _add_schema(sub: Any, common: argparse.ArgumentParser) -> None:
    schema = sub.add_parser("schema", help="write a draft schema to check against the codebook")
    actions = schema.add_subparsers(dest="schema_action", required=True, metavar="ACTION")
    draft = actions.add_parser("draft", parents=[common], help="draft a schema from a table (NOT private: review it)",
                               description="Draft a schema (column kinds, bounds, categories) from a table. The "
                                           "draft is read from the data: check every entry against the codebook.")
    draft.add_argument("input", help="the table (.csv, .tsv or .parquet)")
    draft.add_argument("-o", "--output", required=True, help="schema file to write (.json)")
    draft.add_argument("--force", action="store_true", help="overwrite an existing schema file")
    _add_read_options(draft)
    draft.set_defaults(func=_cmd_schema_draft)


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

    from skdpsynth.audit._cli import add_parser as add_audit_parser

    add_audit_parser(sub, parents=[common])
    return parser


# --------------------------------------------------------------------------- one error handler
def _show_warning(message: Any, category: type, filename: str, lineno: int, file: Any = None,
                  line: Any = None) -> None:
    label = "privacy warning" if issubclass(category, PrivacyLeakWarning) else "warning"
    print(f"{PROG}: {label}: {message}", file=sys.stderr)


@contextmanager
def cli_warnings(debug: bool = False) -> Iterator[None]:
    """Warnings as one plain line each; libraries' deprecation notices only with ``--debug``."""
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        if not debug:
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
        warnings.showwarning = _show_warning
        yield


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def run_command(func: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    """Run a sub-command: its exit status, or the status of the error it raised (reported on stderr)."""
    from skdpsynth._io import silence_stdout

    debug = bool(getattr(args, "debug", False))
    try:
        with cli_warnings(debug):
            return int(func(args) or 0)
    except BrokenPipeError:  # the reader went away (``... | head``): nothing to report
        silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        _error("interrupted.")
        return 130
    except (SkdpsynthError, ValueError, OSError) as exc:
        if debug:
            traceback.print_exc()
        _error(str(exc) or type(exc).__name__)
        return EXIT_INPUT
    except MemoryError:
        if debug:
            traceback.print_exc()
        _error("out of memory; try a smaller table or --n-samples.")
        return EXIT_INTERNAL
    except Exception as exc:  # an internal failure: say so, no traceback unless asked
        if debug:
            traceback.print_exc()
        _error(f"internal error ({type(exc).__name__}: {exc}). This is a bug in skdpsynth: please report it "
               "with the output of the same command run with --debug.")
        return EXIT_INTERNAL


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
