"""``skdpsynth synthesize``: fit a registered table synthesizer on a file and write a release and its budget record.

Kept apart from :mod:`skdpsynth.cli` (argument parsing) and :mod:`skdpsynth._command` (the error handler) so
that each module has one job. What the run says and writes depends on its public inputs (arguments, schema,
column names) and on DP answers only: without ``--schema`` every column is read as text and the synthesizer's
DP domain estimate decides its kind. Whatever a run spends is written to its budget record, also when it
refuses after spending.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import inspect
import shlex
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from skdpsynth import __version__
from skdpsynth._command import say as _say
from skdpsynth._io import (
    TableWriter,
    budget_path,
    check_output,
    read_schema,
    read_table,
    sha256_of,
    table_format,
    write_json,
)
from skdpsynth.exceptions import PrivacyBudgetError, SchemaError, SkdpsynthError
from skdpsynth.privacy import PrivacySpent
from skdpsynth.privacy._domain import DRAFT_COMMAND
from skdpsynth.synthesizers._registry import SynthesizerInfo, by_method

__all__ = ["synthesize", "budget_path", "budget_record", "spend_fields", "in_cli_words", "MAX_ROWS"]

#: cells (rows x columns) per sampled batch: bounds memory for wide tables and large releases
BATCH_CELLS = 2_000_000
#: the largest --n-samples written without --force (a public limit, checked before anything is read)
MAX_ROWS = 10_000_000
#: the words every advice to draft a schema contains (said at most once per run)
DRAFT_HINT = "skdpsynth schema draft"


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


def _check_size(args: argparse.Namespace) -> None:
    """Refuse an absurd --n-samples before anything is read (a public limit; --force lifts it)."""
    if args.n_samples is not None and args.n_samples > MAX_ROWS and not args.force:
        raise SkdpsynthError(f"--n-samples {args.n_samples:,} is more than {MAX_ROWS:,} rows: writing them would take "
                             "a long time and a lot of disk. Nothing was read or spent. Pass --force to write them "
                             "anyway, or leave --n-samples out to release a DP estimate of the number of people.")


def _check_confirmed(args: argparse.Namespace, schema: Any) -> None:
    """A private release needs a confirmed schema: refuse a draft before anything is read or spent."""
    if schema is None or schema.public or args.epsilon is None:
        return
    raw = sorted(schema.raw)
    accept = "".join(f" --accept {shlex.quote(m)}" for m in raw)
    raise SkdpsynthError(
        f'--schema {args.schema!r} is a draft, not confirmed ("public": false): a release built on it would NOT be '
        "end-to-end differentially private. Nothing was read or spent. Check every entry against the codebook, "
        f"then confirm it and give --schema confirmed.json:\n    skdpsynth schema confirm "
        f"{shlex.quote(str(args.schema))}{accept} -o confirmed.json\n"
        + (f"(its entries {raw} were read from the data: replace each with the codebook's and remove its mark, or "
           "accept it by name as above.) " if raw else "")
        + "Or run with --epsilon none for a NON-private release.")


def _warn_before_fit(args: argparse.Namespace, schema: Any) -> None:
    if args.epsilon is None:
        _say("warning: --epsilon none: this is a NON-private run. The release is not differentially private "
             "and must not be shared as if it were.")
    if args.reproducible_noise:
        _say(f"warning: --reproducible-noise derives the privacy noise from --seed {args.seed}: anyone who knows "
             "the seed can remove the noise. This release is NOT publishable (tests and papers only).")
    if schema is None and args.epsilon is not None:
        _say("note: no --schema: every column is read as text and the domain (kinds, bounds, categories) is "
             "estimated under DP with part of the budget; a schema from the codebook gives better results.")


def _cost(spent: PrivacySpent | None, record: Path) -> str:
    """What a failed run has spent, in one sentence."""
    if spent is None:
        return "Nothing was spent."
    return (f"This attempt used the data (epsilon {spent.epsilon:.3g} spent; budget record written to {record}): "
            "count it against your total budget.")


def _draft_command(args: argparse.Namespace) -> str:
    return f"skdpsynth schema draft {shlex.quote(str(args.input))} --raw -o draft.json"


def in_cli_words(text: str, args: argparse.Namespace) -> str:
    """The library's advice (Python API words, a placeholder file name) said for this command line."""
    text = text.replace(DRAFT_COMMAND, _draft_command(args))
    for api, cli in _CLI_WORDS:
        text = text.replace(api, cli)
    return text


#: how a checked draft becomes the schema a release takes
_CONFIRM = "confirm it (`skdpsynth schema confirm draft.json -o schema.json`)"
#: the domain estimate's advice in Python API words, and the same advice for ``skdpsynth synthesize``
_CLI_WORDS = (("` (or TableSchema.draft(X)) writes", "` writes"),
              ("then pass schema=schema.json", f"{_CONFIRM}, then pass --schema schema.json"),
              ("then schema=schema.json", f"then check it, {_CONFIRM} and pass --schema schema.json"),
              ("schema=schema.json", "--schema schema.json"),
              ("Or raise epsilon or domain_share.", "Or raise --epsilon."), ("or set delta.", "or set --delta."))


def _draft_hint(args: argparse.Namespace) -> str:
    return ("Without --schema the domain must be estimated under DP, and it could not be at this budget. Write a "
            f"schema instead: run\n    {_draft_command(args)}\ncheck it against the codebook, {_CONFIRM}, then "
            "pass --schema schema.json.")


@contextmanager
def _cli_advice(args: argparse.Namespace, shown: list[str]) -> Iterator[None]:
    """Warnings raised inside, in command-line words; their text is kept in ``shown``."""
    previous = warnings.showwarning

    def show(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        text = in_cli_words(str(message), args)
        shown.append(text)
        previous(text, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _fit(cls: type, params: dict[str, Any], X: pd.DataFrame, args: argparse.Namespace, schema: Any,
         record: tuple[SynthesizerInfo, Path]) -> Any:
    """Fit; the domain estimate's warnings and refusals say what to do in command-line words, once. A fit that
    fails after spending leaves its budget record (``record``: the method and the file) and says so."""
    synth = cls(**params)
    _say(f"fitting {cls.__name__} on {X.shape[1]} columns ...")
    shown: list[str] = []
    try:
        with _cli_advice(args, shown):
            synth.fit(X)
    except BaseException as exc:
        spent = None
        if getattr(synth, "budget_log_", ()):
            spent = synth.privacy_spent_
            write_json(budget_record(synth, record[0], args, None), record[1], overwrite=args.force)
        if isinstance(exc, (PrivacyBudgetError, SchemaError)) and schema is None and args.epsilon is not None:
            message = in_cli_words(str(exc), args)
            hinted = any(DRAFT_HINT in text for text in [message, *shown])
            raise SkdpsynthError(f"{message}\n{_cost(spent, record[1])}"
                                 + ("" if hinted else f" {_draft_hint(args)}")) from exc
        if spent is not None:
            _say(_cost(spent, record[1]))
        raise
    return synth


def _release_size(synth: Any, args: argparse.Namespace, private: bool) -> tuple[int, bool]:
    """Rows to release, and whether that is the synthesizer's DP estimate of the number of people."""
    if args.n_samples is not None:
        if private:  # said whatever the size: whether it equals the number of people is private
            _say("note: --n-samples sets the release size; a size equal to the number of people would reveal that "
                 "number, which DP otherwise protects. Leave --n-samples out to release a DP estimate.")
        return args.n_samples, False
    n = getattr(synth, "n_estimate_", None)
    if n is None:
        raise SkdpsynthError(f"{type(synth).__name__} gives no DP estimate of the number of people; pass "
                             "--n-samples.")
    _say(f"release size: {int(n)} rows, a DP estimate of the number of people (the exact number is private; "
         "--n-samples sets another size).")
    return int(n), True


def _write_release(synth: Any, n: int, out: Path, sep: str | None, overwrite: bool) -> str:
    """Sample in bounded batches into a hidden file beside ``out``, renamed only when complete; return its SHA-256."""
    batch = max(1_000, min(100_000, BATCH_CELLS // max(len(getattr(synth, "columns_", ())) or 1, 1)))
    _say(f"sampling {n:,} rows into {out} ...")
    with TableWriter(out, sep=sep, overwrite=overwrite) as writer, \
            tqdm(total=n, unit="rows", desc="sampling", file=sys.stderr, delay=2, disable=None, leave=False) as bar:
        for part in synth.sample_batches(n, batch_size=batch):
            writer.write(part)
            bar.update(len(part))
    return sha256_of(out)


def spend_fields(spent: PrivacySpent, budget_log: Any) -> dict[str, Any]:
    """The budget file's account of what was spent (a release's, or a DP schema draft's)."""
    return {
        "privacy_spent": {"epsilon": spent.epsilon, "delta": spent.delta, "is_private": spent.is_private,
                          "publishable": spent.publishable, "reproducible_noise": spent.reproducible_noise,
                          "composition": spent.composition, "neighbouring": spent.neighbouring,
                          "per_cohort": spent.per_cohort},
        "budget_log": [r.to_dict() for r in budget_log],
    }


def budget_record(synth: Any, info: SynthesizerInfo, args: argparse.Namespace,
                  release: dict[str, Any] | None) -> dict[str, Any]:
    """What the budget file says about one run (strict JSON once passed through ``json_safe``).

    ``release`` is ``{"n": rows, "is_estimate": bool, "file": Path, "sha256": str}``, or None for a run that
    stopped after spending (a refusal, an interruption): then ``"status"`` says so and there is no release."""
    schema_ = getattr(synth, "schema_", None)
    params = {k: v for k, v in synth.get_params().items() if k != "schema"}
    out = release["file"] if release else None
    return {
        "skdpsynth_version": __version__,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "status": "released" if release else "stopped after spending (no release)",
        "method": info.method,
        "synthesizer": type(synth).__name__,
        "params": params,
        "schema": {"file": args.schema, "source": "given" if args.schema else
                   ("estimated under DP" if args.epsilon is not None else "read from the data (not private)"),
                   "public": None if schema_ is None else bool(schema_.public)},
        "n_estimate": getattr(synth, "n_estimate_", None),
        "n_samples": release["n"] if release else None,
        "n_samples_dp_estimate": release["is_estimate"] if release else None,
        "release": {"file": out.name, "format": table_format(out, writing=True), "sha256": release["sha256"]}
        if release else None,
        **spend_fields(synth.privacy_spent_, synth.budget_log_),
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
    _check_size(args)
    inputs = [args.input, args.schema]
    out = check_output(args.output, force=args.force, inputs=inputs, what="-o")
    record = check_output(budget_path(out), force=args.force, inputs=inputs, what="budget file", kind="json")
    schema = read_schema(args.schema) if args.schema else None
    _check_confirmed(args, schema)
    cls = _load(info)
    params = _synth_params(info, cls, args, schema)
    # without a schema, a private run reads text (kinds are the DP estimate's); a NON-private one lets pandas infer
    X = read_table(args.input, sep=args.sep, encoding=args.encoding, schema=schema, infer=args.epsilon is None,
                   what="input")
    _warn_before_fit(args, schema)
    synth = _fit(cls, params, X, args, schema, (info, record))
    spent = synth.privacy_spent_
    schema_ = getattr(synth, "schema_", None)
    if schema is None and schema_ is not None and not schema_.public and args.epsilon is not None:
        _say("warning: the domain was read from the data: this release is NOT end-to-end differentially private.")
    n, is_estimate = _release_size(synth, args, spent.is_private)
    sep = args.sep if out.suffix.lower() == ".csv" else None
    try:
        sha256 = _write_release(synth, n, out, sep, overwrite=args.force)
    except BaseException:  # the fit has spent: its record is written even though no release is
        write_json(budget_record(synth, info, args, None), record, overwrite=args.force)
        _say(_cost(spent, record).replace("This attempt", "The fit"))
        raise
    release = {"n": n, "is_estimate": is_estimate, "file": out, "sha256": sha256}
    write_json(budget_record(synth, info, args, release), record, overwrite=args.force)
    print(_summary(spent, n, out, record), flush=True)
    return 0
