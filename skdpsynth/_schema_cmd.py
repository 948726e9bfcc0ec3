"""``skdpsynth schema draft`` and ``skdpsynth schema confirm``: a draft to check against the codebook, then confirmed.

The default draft is estimated under DP (``--epsilon``): a charged domain
estimate (:func:`skdpsynth.privacy.estimate_schema`) written as a draft, with
its budget record beside it. ``--raw`` reads the draft from the data as it is
(exact extremes and every category seen, each entry marked raw) and says why
that needs care. ``confirm`` writes the checked schema as public, refusing raw
entries that were neither replaced nor accepted by name.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import shlex
from dataclasses import replace
from pathlib import Path

from skdpsynth import __version__
from skdpsynth._command import EXIT_OK, say
from skdpsynth._io import budget_path, check_output, read_schema, read_table, sha256_of, write_json
from skdpsynth._synthesize import in_cli_words, spend_fields
from skdpsynth.exceptions import PrivacyBudgetError, SchemaError, SkdpsynthError
from skdpsynth.privacy import compose
from skdpsynth.privacy._standalone import estimate_schema_logged
from skdpsynth.schema import TableSchema

__all__ = ["draft", "confirm"]

_RAW_WHY = ("A raw draft holds the data's exact minimum and maximum and every category seen: these identify people "
            "(the oldest student, a course only one person took).")


def _print_checklist(schema: TableSchema, out: Path) -> None:
    print("Check before use (against the codebook, not the data):")
    for item in schema.checklist():
        print(f"  - {item}")
    accept = "".join(f" --accept {shlex.quote(m)}" for m in sorted(schema.raw))
    print(f"Then confirm it: skdpsynth schema confirm {shlex.quote(str(out))}{accept} -o schema.json")


def draft(args: argparse.Namespace) -> int:
    """Run ``skdpsynth schema draft``: a DP draft (``--epsilon``) or a raw one (``--raw``)."""
    if args.raw == (args.epsilon is not None):
        raise SkdpsynthError("schema draft needs either --epsilon E (a draft estimated under DP, charged to the "
                             "data's privacy budget: the safe default) or --raw (read from the data as it is, NOT "
                             "private), not " + ("both." if args.raw else "neither."))
    out = check_output(args.output, force=args.force, inputs=[args.input], what="-o", kind="json")
    if args.raw:
        return _raw_draft(args, out)
    record = check_output(budget_path(out), force=args.force, inputs=[args.input], what="budget file", kind="json")
    frame = read_table(args.input, sep=args.sep, encoding=args.encoding, what="input")  # every column as text
    log: list = []
    try:
        schema = estimate_schema_logged(frame, epsilon=args.epsilon, delta=args.delta, budget_log=log)
    except (PrivacyBudgetError, SchemaError) as exc:
        spent = _write_record(log, args, out, record, released=False)
        cost = (f"This attempt used the data (epsilon {spent:.3g} spent; budget record written to {record}): count "
                "it against your total budget." if log else "Nothing was spent.")
        raise SkdpsynthError(f"{in_cli_words(str(exc), args)}\n{cost}") from exc
    write_json(replace(schema, public=False).to_dict(), out, overwrite=args.force)
    spent = _write_record(log, args, out, record, released=True)
    print(f"wrote a DRAFT schema of {len(schema)} columns to {out}, estimated under differential privacy "
          f"(epsilon {spent:.3g} spent: count it against the data's total budget; budget record in {record}). "
          "It is not confirmed yet.")
    _print_checklist(schema, out)
    return EXIT_OK


def _write_record(log: list, args: argparse.Namespace, out: Path, record: Path, released: bool) -> float:
    """The DP draft's budget record (also for an estimate that refused after spending); return the epsilon spent."""
    if not log:
        return 0.0
    spent = compose(log)
    write_json({"skdpsynth_version": __version__,
                "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                "command": "schema draft", "status": "drafted" if released else "refused after spending (no draft)",
                "params": {"epsilon": args.epsilon, "delta": args.delta},
                "schema": {"file": out.name, "sha256": sha256_of(out)} if released else None,
                **spend_fields(spent, log)}, record, overwrite=args.force)
    return spent.epsilon


def _raw_draft(args: argparse.Namespace, out: Path) -> int:
    say(f"warning: --raw: {_RAW_WHY} Every such entry is marked raw, and 'schema confirm' refuses it until it is "
        "replaced with the codebook's or accepted by name. For a draft that is safe to keep, use --epsilon "
        "instead (a DP estimate).")
    frame = read_table(args.input, sep=args.sep, encoding=args.encoding, infer=True, what="input")
    schema = TableSchema.draft(frame)
    write_json(schema.to_dict(), out, overwrite=args.force)
    print(f"wrote a RAW DRAFT schema of {len(schema)} columns to {out}. It was read from the data: it is NOT "
          "private, and a release built on it is NOT end-to-end differentially private until it is confirmed.")
    _print_checklist(schema, out)
    return EXIT_OK


def confirm(args: argparse.Namespace) -> int:
    """Run ``skdpsynth schema confirm``: write the checked draft as a public schema."""
    out = check_output(args.output, force=args.force, inputs=[args.input], what="-o", kind="json")
    schema = read_schema(args.input, what="input")
    try:
        confirmed = schema.confirm(accept=args.accept or ())
    except SchemaError as exc:
        raise SkdpsynthError(f"{args.input}: {exc} Nothing was written.") from exc
    write_json(confirmed.to_dict(), out, overwrite=args.force)
    accepted = f" (accepted as read from the data: {', '.join(sorted(args.accept))})" if args.accept else ""
    print(f"wrote the confirmed (public) schema to {out}{accepted}. Give it to a release with --schema {out}.")
    return EXIT_OK
