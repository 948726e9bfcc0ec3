"""Fit a reference synthesizer (npgc 0.3.0, SDV GaussianCopula, CTGAN or TVAE) in its own environment.

Called by ``tabular_side_by_side.py`` with the Python of an environment where the
reference's PyPI package is installed (``npgc``, ``sdv``, ``ctgan``); one fit per
process. Input: a CSV and a JSON of column dtypes; output: a CSV of synthetic rows
and, on stdout, one JSON line with the fit time and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

from _peak_rss import peak_mib  # this folder is on sys.path: the runner is run as a script


def fit_npgc(X, args, discrete):
    import npgc

    model = npgc.NPGC(epsilon=args.epsilon)
    model.fit(X, random_state=args.seed)
    return lambda n: model.sample(n, seed=args.seed + 1)


def fit_gaussian_copula(X, args, discrete):
    from sdv.metadata import Metadata
    from sdv.single_table import GaussianCopulaSynthesizer

    if hasattr(Metadata, "detect_from_dataframe"):
        metadata = Metadata.detect_from_dataframe(X)
    else:  # sdv 2: one table among several
        metadata = Metadata.detect_from_dataframes({"table": X})
    model = GaussianCopulaSynthesizer(metadata)
    try:
        model.fit(X)
    except Exception:  # sdv 2 takes {table name: frame}
        model.fit({"table": X})

    def sample(n):
        synth = model.sample(n)
        return synth["table"] if isinstance(synth, dict) else synth

    return sample


def fit_deep(X, args, discrete):
    """CTGAN or TVAE (the ``ctgan`` package) at ``--epochs`` on the CPU, its other settings at their defaults."""
    import torch
    from ctgan import CTGAN, TVAE

    torch.manual_seed(args.seed)
    model = (CTGAN(epochs=args.epochs, verbose=False, enable_gpu=False) if args.method == "ctgan"
             else TVAE(epochs=args.epochs, enable_gpu=False))
    model.fit(X, discrete_columns=discrete)
    return model.sample


#: runner method -> fit(X, args, discrete columns) returning sample(n)
FITTERS = {"npgc": fit_npgc, "gaussian_copula": fit_gaussian_copula, "ctgan": fit_deep, "tvae": fit_deep}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", choices=list(FITTERS), required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--dtypes", required=True)
    parser.add_argument("--epsilon", type=float, default=None)
    parser.add_argument("--epochs", type=int, default=300, help="CTGAN / TVAE epochs (the papers' 300)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import pandas as pd

    dtypes = json.loads(open(args.dtypes).read())
    X = pd.read_csv(args.data, dtype={c: ("str" if t == "str" else "float") for c, t in dtypes.items()})
    base = peak_mib()
    start, cpu = time.perf_counter(), time.process_time()
    sample = FITTERS[args.method](X, args, [c for c, t in dtypes.items() if t == "str"])
    fit_s, fit_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    peak = peak_mib()
    sample(len(X)).to_csv(args.out, index=False)
    print(json.dumps({"fit_s": fit_s, "fit_cpu_s": fit_cpu_s, "peak_rss_mib": peak, "rss_before_fit_mib": base}))


if __name__ == "__main__":
    main()
