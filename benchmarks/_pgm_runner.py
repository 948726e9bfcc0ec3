"""Run private-pgm's own MST or AIM mechanism on a discretised table, in its own environment.

Called by ``tabular_side_by_side.py`` as a subprocess with the Python of an
environment where private-pgm (``mbi``) and its dependencies are installed; the
private-pgm checkout's ``mechanisms/`` folder is put on the path and its code
is run unchanged (nothing of it is copied here). Input: a CSV of cell codes and
a JSON domain (cells per column); output: a CSV of synthetic codes and, on
stdout, one JSON line with the fit time and the process's peak RSS.

    python _pgm_runner.py --pgm-src /path/to/private-pgm --mechanism aim \\
        --data codes.csv --domain domain.json --epsilon 1 --delta 1e-9 --out synth.csv
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import sys
import time
from pathlib import Path

from _peak_rss import peak_mib  # this folder is on sys.path: the runner is run as a script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pgm-src", required=True)
    parser.add_argument("--mechanism", choices=["aim", "mst"], required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--domain", required=True)
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-model-size", type=float, default=80.0, help="AIM's limit in MB (its default 80)")
    parser.add_argument("--max-cells", type=int, default=10000, help="workload marginals up to this size (its default)")
    args = parser.parse_args()

    sys.path.insert(0, str(Path(args.pgm_src) / "mechanisms"))
    import numpy as np
    from mbi import Dataset

    np.random.seed(args.seed)  # noqa: NPY002 -- private-pgm's mechanisms draw from the global numpy state
    data = Dataset.load(args.data, args.domain)
    base = peak_mib()
    start, cpu = time.perf_counter(), time.process_time()
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        if args.mechanism == "mst":
            from mst import MST

            synth = MST(data, args.epsilon, args.delta)
        else:
            from aim import AIM

            workload = [cl for cl in itertools.combinations(data.domain, 2) if data.domain.size(cl) <= args.max_cells]
            mech = AIM(args.epsilon, args.delta, max_model_size=args.max_model_size)
            _, synth = mech.run(data, [(cl, 1.0) for cl in workload], num_synth_rows=data.records)
    fit_s, fit_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    synth.df.to_csv(args.out, index=False)
    peak = peak_mib()
    rounds = log.getvalue().count("Measuring Clique")
    print(json.dumps({"fit_s": fit_s, "fit_cpu_s": fit_cpu_s, "peak_rss_mib": peak, "rss_before_fit_mib": base,
                      "rounds": rounds}))


if __name__ == "__main__":
    main()
