"""The ``skdpsynth`` command: demo, synthesize, datasets, audit."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import pandas as pd

__all__ = ["main", "build_parser"]

METHODS = {
    "npgc": "NPGCSynthesizer",
    "marginals": "DPMarginalsSynthesizer",
    "histogram": "DPHistogramSynthesizer",
    "mst": "MSTSynthesizer",
    "dpctgan": "DPCTGANSynthesizer",
    "pategan": "PATEGANSynthesizer",
}


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV or Parquet file (by extension)."""
    path = Path(path)
    if not path.exists():
        raise SystemExit(f"error: input file {path} does not exist.")
    if path.suffix.lower() in (".parquet", ".pq"):
        return pd.read_parquet(path)
    return pd.read_csv(path)


def write_table(frame: pd.DataFrame, path: str | Path) -> None:
    """Write a CSV or Parquet file (by extension)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() in (".parquet", ".pq"):
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)


def _cmd_synthesize(args: argparse.Namespace) -> int:
    import skdpsynth

    X = read_table(args.input)
    cls = getattr(skdpsynth, METHODS[args.method])
    epsilon = None if args.epsilon.lower() == "none" else float(args.epsilon)
    params = {"epsilon": epsilon, "random_state": args.seed}
    if args.schema:
        params["schema"] = args.schema
    if args.delta is not None:
        params["delta"] = args.delta
    synth = cls(**params)
    if args.schema is None and epsilon is not None:
        print("no --schema given: the domain is estimated under DP with part of the budget "
              "(a schema from the codebook gives better results).", file=sys.stderr)
    synth.fit(X)
    n = args.n_samples or len(X)
    out = synth.sample(n)
    write_table(out, args.output)
    spent = synth.privacy_spent_
    log_path = Path(args.output).with_suffix(".budget.json")
    log_path.write_text(json.dumps({
        "method": args.method, "params": {k: str(v) for k, v in synth.get_params().items()},
        "privacy_spent": {"epsilon": spent.epsilon, "delta": spent.delta, "is_private": spent.is_private,
                          "neighbouring": spent.neighbouring},
        "budget_log": [r.to_dict() for r in synth.budget_log_],
    }, indent=2, default=str))
    print(f"wrote {n} synthetic rows to {args.output}; spent epsilon={spent.epsilon:.4g}, delta={spent.delta:.3g} "
          f"({'DP' if spent.is_private else 'NOT private'}); budget log in {log_path}")
    return 0


def _cmd_datasets(args: argparse.Namespace) -> int:
    from skdpsynth import datasets

    if args.action == "list":
        for name, info in datasets.list_datasets().items():
            print(f"{name:12s} {info}")
        return 0
    try:
        path = datasets.fetch_dataset(args.name, data_home=args.data_home)
    except (datasets.DatasetNotFoundError, ValueError) as exc:  # offline or unknown: the message says what to do
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.name}: {path}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from skdpsynth._demo import run_demo

    return run_demo(output=Path(args.output), n_students=args.n_students, epsilon=args.epsilon, seed=args.seed)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``skdpsynth`` command."""
    parser = argparse.ArgumentParser(prog="skdpsynth", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="synthesize and audit built-in simulated learner data (< 1 minute)")
    demo.add_argument("--output", default="skdpsynth-report", help="folder for the report (default: %(default)s)")
    demo.add_argument("--n-students", type=int, default=2000)
    demo.add_argument("--epsilon", type=float, default=2.0)
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=_cmd_demo)

    syn = sub.add_parser("synthesize", help="fit a DP synthesizer on a CSV/Parquet table and write synthetic rows")
    syn.add_argument("input")
    syn.add_argument("--method", choices=sorted(METHODS), default="npgc")
    syn.add_argument("--epsilon", required=True, help="privacy budget, or 'none' for a NON-private run")
    syn.add_argument("--delta", type=float, default=None)
    syn.add_argument("--schema", default=None, help="public schema (JSON); without it the domain is DP-estimated")
    syn.add_argument("--n-samples", type=int, default=None, help="rows to write (default: as many as the input)")
    syn.add_argument("--seed", type=int, default=None)
    syn.add_argument("-o", "--output", required=True, help="output .csv or .parquet")
    syn.set_defaults(func=_cmd_synthesize)

    ds = sub.add_parser("datasets", help="list or fetch the public datasets")
    ds.add_argument("action", choices=["list", "fetch"])
    ds.add_argument("name", nargs="?")
    ds.add_argument("--data-home", default=None)
    ds.set_defaults(func=_cmd_datasets)

    try:
        from skdpsynth.audit._cli import add_parser as add_audit_parser
    except ImportError:  # pragma: no cover - audit module missing
        add_audit_parser = None
    if add_audit_parser is not None:
        add_audit_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``skdpsynth`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "datasets" and args.action == "fetch" and not args.name:
        parser.error("datasets fetch needs a dataset name (see 'skdpsynth datasets list').")
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
