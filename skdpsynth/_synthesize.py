"""``skdpsynth synthesize``: fit a registered table synthesizer on a file and write a release and its budget record.

Kept apart from :mod:`skdpsynth.cli` (argument parsing and the error handler)
so that each module has one job.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import inspect
import shlex
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from skdpsynth._io import TableWriter, check_output, read_schema, read_table, table_format, write_json
from skdpsynth.exceptions import PrivacyBudgetError, SchemaError, SkdpsynthError
from skdpsynth.privacy._domain import DRAFT_COMMAND
from skdpsynth.synthesizers._registry import SynthesizerInfo, by_method

__all__ = ["synthesize", "budget_path", "budget_record"]

#: cells (rows x columns) per sampled batch: bounds memory for wide tables and large releases
BATCH_CELLS = 2_000_000
#: the words every advice to draft a schema contains (said at most once per run)
DRAFT_HINT = "skdpsynth schema draft"


def _say(message: str) -> None:
    print(f"skdpsynth: {message}", file=sys.stderr, flush=True)


def budget_path(output: str | Path) -> Path:
    """The budget record written beside a release: ``release.csv`` -> ``release.budget.json``."""
    output = Path(output)
    return output.with_name(output.name[: -len(output.suffix)] + ".budget.json" if output.suffix else
                            output.name + ".budget.json")


def _load(info: SynthesizerInfo) -> type:
    try:
        return info.load()
    except ImportError as exc:
        missing = exc.name or "an optional package"
        raise SkdpsynthError(f"--method {info.method} needs {missing}, which is not installed "
                             f"(pip install {missing}).") from exc


def _synth_params(info: SynthesizerInfo, cls: type, args: argparse.Namespace, schema: Any) -> dict[str, Any]:
    """Constructor arguments from the command line; options the method does not take are refused."""
    accepted = inspect.signature(cls).parameters
    if not info.private and args.epsilon is not None:
        raise SkdpsynthError(f"--method {info.method} is not differentially private; it runs only with "
                             "--epsilon none (a NON-private release).")
    if args.reproducible_noise and args.seed is None:
        raise SkdpsynthError("--reproducible-noise derives the privacy noise from --seed: give --seed as well.")
    params: dict[str, Any] = {"random_state": args.seed}
    wanted = {"epsilon": args.epsilon, "delta": args.delta, "schema": schema,
              "reproducible_noise": True if args.reproducible_noise else None}
    for name, value in wanted.items():
        if name == "epsilon" or value is not None:
            if name not in accepted:
                raise SkdpsynthError(f"--method {info.method} does not support --{name.replace('_', '-')}.")
            params[name] = value
    if "verbose" in accepted:
        params["verbose"] = True
    return params


def _warn_before_fit(args: argparse.Namespace, schema: Any) -> None:
    if args.epsilon is None:
        _say("warning: --epsilon none: this is a NON-private run. The release is not differentially private "
             "and must not be shared as if it were.")
    if args.reproducible_noise:
        _say(f"warning: --reproducible-noise derives the privacy noise from --seed {args.seed}: anyone who knows "
             "the seed can remove the noise. This release is NOT publishable (tests and papers only).")
    if schema is not None and not schema.public:
        _say(f'warning: the schema {args.schema!r} is marked "public": false (drafted from the data): its bounds '
             "and categories come from the private rows, so this release is NOT end-to-end differentially "
             'private. Check every entry against the codebook, then set "public": true.')
    elif schema is None and args.epsilon is not None:
        _say("note: no --schema: the domain (bounds, categories) is estimated under DP with part of the budget; "
             "a schema from the codebook gives better results.")


def _cost(synth: Any) -> str:
    """What a failed fit has spent, in one sentence."""
    if getattr(synth, "budget_log_", ()):
        spent = synth.privacy_spent_
        return f"This attempt used the data (epsilon {spent.epsilon:.3g} spent): count it against your total budget."
    return "Nothing was spent."


def _draft_command(args: argparse.Namespace) -> str:
    return f"skdpsynth schema draft {shlex.quote(str(args.input))} -o schema.json"


def _in_cli_words(text: str, args: argparse.Namespace) -> str:
    """The library's advice (Python API words, a placeholder file name) said for this command line."""
    text = text.replace(DRAFT_COMMAND, _draft_command(args))
    for api, cli in _CLI_WORDS:
        text = text.replace(api, cli)
    return text


#: the domain estimate's advice in Python API words, and the same advice for ``skdpsynth synthesize``
_CLI_WORDS = (("` (or TableSchema.draft(X)) writes", "` writes"), ("schema=schema.json", "--schema schema.json"),
              ("Or raise epsilon or domain_share.", "Or raise --epsilon."), ("or set delta.", "or set --delta."))


def _draft_hint(args: argparse.Namespace) -> str:
    return ("Without --schema the domain must be estimated under DP, and it could not be at this budget. Write a "
            f"schema instead: run\n    {_draft_command(args)}\ncheck it against the codebook, then pass --schema "
            "schema.json.")


@contextmanager
def _cli_advice(args: argparse.Namespace, shown: list[str]) -> Iterator[None]:
    """Warnings raised inside, in command-line words; their text is kept in ``shown``."""
    previous = warnings.showwarning

    def show(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        text = _in_cli_words(str(message), args)
        shown.append(text)
        previous(text, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _fit(cls: type, params: dict[str, Any], X: pd.DataFrame, args: argparse.Namespace, schema: Any) -> Any:
    """Fit; the domain estimate's warnings and refusals say what to do in command-line words, once."""
    synth = cls(**params)
    _say(f"fitting {cls.__name__} on {X.shape[1]} columns ...")
    shown: list[str] = []
    try:
        with _cli_advice(args, shown):
            synth.fit(X)
    except (PrivacyBudgetError, SchemaError) as exc:
        if schema is None and args.epsilon is not None:
            message = _in_cli_words(str(exc), args)
            hinted = any(DRAFT_HINT in text for text in [message, *shown])
            raise SkdpsynthError(f"{message}\n{_cost(synth)}" + ("" if hinted else f" {_draft_hint(args)}")) from exc
        raise
    return synth


def _release_size(synth: Any, args: argparse.Namespace, n_rows: int, private: bool) -> tuple[int, bool]:
    """Rows to release, and whether that is the synthesizer's DP estimate of the number of people."""
    if args.n_samples is not None:
        if private and args.n_samples == n_rows:
            _say("warning: --n-samples equals the exact number of training rows: a release of that size reveals "
                 "the exact number of people, which DP otherwise protects. Leave --n-samples out to use a DP "
                 "estimate.")
        return args.n_samples, False
    n = getattr(synth, "n_estimate_", None)
    if n is None:
        raise SkdpsynthError(f"{type(synth).__name__} gives no DP estimate of the number of people; pass "
                             "--n-samples.")
    _say(f"release size: {int(n)} rows, a DP estimate of the number of people (the exact number is private; "
         "--n-samples sets another size).")
    return int(n), True


def _write_release(synth: Any, n: int, out: Path, sep: str | None) -> str:
    """Sample in bounded batches into ``out``; return the file's SHA-256."""
    from tqdm.auto import tqdm

    batch = max(1_000, min(100_000, BATCH_CELLS // max(len(getattr(synth, "columns_", ())) or 1, 1)))
    with TableWriter(out, sep=sep) as writer, tqdm(total=n, unit="rows", desc="sampling", file=sys.stderr,
                                                   delay=2, disable=None, leave=False) as bar:
        for part in synth.sample_batches(n, batch_size=batch):
            writer.write(part)
            bar.update(len(part))
    digest = hashlib.sha256()
    with open(out, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def budget_record(synth: Any, info: SynthesizerInfo, args: argparse.Namespace, n: int, is_estimate: bool,
                  out: Path, sha256: str) -> dict[str, Any]:
    """What the budget file says about one release (strict JSON once passed through ``json_safe``)."""
    from skdpsynth import __version__

    spent = synth.privacy_spent_
    schema_ = getattr(synth, "schema_", None)
    params = {k: v for k, v in synth.get_params().items() if k != "schema"}
    return {
        "skdpsynth_version": __version__,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "method": info.method,
        "synthesizer": type(synth).__name__,
        "params": params,
        "schema": {"file": args.schema, "source": "given" if args.schema else
                   ("estimated under DP" if args.epsilon is not None else "read from the data (not private)"),
                   "public": None if schema_ is None else bool(schema_.public)},
        "privacy_spent": {"epsilon": spent.epsilon, "delta": spent.delta, "is_private": spent.is_private,
                          "publishable": spent.publishable, "reproducible_noise": spent.reproducible_noise,
                          "composition": spent.composition, "neighbouring": spent.neighbouring,
                          "per_cohort": spent.per_cohort},
        "n_estimate": getattr(synth, "n_estimate_", None),
        "n_samples": n,
        "n_samples_dp_estimate": is_estimate,
        "release": {"file": out.name, "format": table_format(out, writing=True), "sha256": sha256},
        "budget_log": [r.to_dict() for r in synth.budget_log_],
    }


def _summary(spent: Any, n: int, out: Path, record: Path) -> str:
    if not spent.is_private:
        verdict = "NOT differentially private"
    elif not spent.publishable:
        verdict = "differentially private only against someone who does not know the seed: NOT publishable"
    else:
        verdict = "differentially private"
    return (f"wrote {n} synthetic rows to {out}; privacy: epsilon={spent.epsilon:.4g}, delta={spent.delta:.3g} "
            f"({verdict}); budget record in {record}")


def synthesize(args: argparse.Namespace) -> int:
    """Run ``skdpsynth synthesize`` with parsed ``args``; return the exit status."""
    info = by_method(args.method)
    inputs = [args.input, args.schema]
    out = check_output(args.output, force=args.force, inputs=inputs, what="-o")
    record = check_output(budget_path(out), force=args.force, inputs=inputs, what="budget file", kind="json")
    schema = read_schema(args.schema) if args.schema else None
    cls = _load(info)
    params = _synth_params(info, cls, args, schema)
    X = read_table(args.input, sep=args.sep, encoding=args.encoding, schema=schema, what="input")
    _warn_before_fit(args, schema)
    synth = _fit(cls, params, X, args, schema)
    spent = synth.privacy_spent_
    schema_ = getattr(synth, "schema_", None)
    if schema is None and schema_ is not None and not schema_.public and args.epsilon is not None:
        _say("warning: the domain was read from the data: this release is NOT end-to-end differentially private.")
    n, is_estimate = _release_size(synth, args, len(X), spent.is_private)
    sep = args.sep if out.suffix.lower() == ".csv" else None
    sha256 = _write_release(synth, n, out, sep)
    write_json(budget_record(synth, info, args, n, is_estimate, out, sha256), record)
    print(_summary(spent, n, out, record), flush=True)
    return 0
