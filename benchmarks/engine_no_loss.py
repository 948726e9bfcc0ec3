"""No-loss check of the shared marginal engine: MST and AIM on UCI dropout and Adult at epsilon 1.

    nice python benchmarks/engine_no_loss.py --label before
    nice python benchmarks/engine_no_loss.py --label after

(``--commit`` names the commit when the script runs from an exported copy of it, e.g. ``git archive``.)

Every fit runs in a fresh subprocess (``tabular_side_by_side.worker``: fit seconds, peak RSS), and its synthetic
table (as many rows as the training split) is scored as in ``tabular_side_by_side.py``: TSTR macro-F1
(HistGradientBoosting trained on synthetic rows, tested on the real 30 % holdout) and the SDMetrics quality
report against the training split (at most ``--metric-rows`` rows). Results:
``results/engine_no_loss_<label>.{json,md}``, with the commit, the date and the command line.
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from _common import markdown_table, write_results  # noqa: E402
from tabular_side_by_side import aggregate, fit_ours, score  # noqa: E402

DATASETS = ("uci_dropout", "adult")
METHODS = ("MST", "AIM")
COLUMNS = ("dataset", "method", "seeds", "tstr", "tstr_sd", "quality", "fit_s", "fit_cpu_s", "peak_rss_mib")


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE)
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "skdpsynth"], capture_output=True, text=True,
                           cwd=HERE).stdout.strip()
    return out.stdout.strip() + (" (+ uncommitted changes under skdpsynth/)" if dirty else "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True, help="results file suffix, e.g. before / after")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--methods", nargs="*", default=list(METHODS), choices=METHODS)
    parser.add_argument("--metric-rows", type=int, default=5000)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--commit", default=None, help="the commit measured (default: this checkout's HEAD)")
    args = parser.parse_args(argv)
    command = "python benchmarks/engine_no_loss.py " + " ".join(argv if argv is not None else sys.argv[1:])
    rows, start = [], time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for ds in args.datasets:
            for method in args.methods:
                for seed in range(args.seeds):
                    row = {"dataset": ds, "method": method, "epsilon": 1.0, "seed": seed}
                    try:
                        info, synth = fit_ours(ds, method, 1.0, seed, Path(tmp), args.timeout)
                        row.update(info, **score(ds, synth, seed, args.metric_rows), status="ok")
                    except Exception as exc:  # one failing fit is recorded, the run goes on
                        row.update(status="error", error=f"{type(exc).__name__}: {exc}"[:300])
                    rows.append(row)
                    print(ds, method, seed, {k: row.get(k) for k in ("status", "fit_s", "tstr", "quality")},
                          flush=True)
    agg = aggregate(rows)
    date = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    meta = {"label": args.label, "commit": args.commit or _commit(), "date": date, "command": command,
            "total_s": time.perf_counter() - start}
    table = markdown_table(agg.to_dict("records"), [c for c in COLUMNS if c in agg]) if not agg.empty else "(no fit)"
    errors = [f"- {r['dataset']} {r['method']} seed {r['seed']}: {r['error']}" for r in rows if r["status"] != "ok"]
    md = "\n".join([f"# Marginal engine no-loss check: {args.label}", "",
                    f"Commit {meta['commit']}, {meta['date']}; `{command}`; {meta['total_s']:.0f} s in all.",
                    "Epsilon 1, delta 1e-9, public schemas, 70/30 split (seed 0); TSTR macro-F1 on the real holdout, "
                    f"SDMetrics quality against the training split (at most {args.metric_rows} rows).", "",
                    table, "", *errors])
    write_results(f"engine_no_loss_{args.label}", {**meta, "rows": rows, "aggregate": agg.to_dict("records")}, md)
    print(md)


if __name__ == "__main__":
    main()
