"""Synthetic feedback loop: 10 generations, each fitted on the previous generation's output.

Generation 0 is the real table; generation k is sampled from a model fitted on
generation k - 1 (as many rows as the real table). Each generation is scored with
the SDMetrics quality report against the ORIGINAL real table (papers/npgc-en.md:
NPGC 96.43 % -> 95.27 % over 10 generations, CTGAN / Copula-GAN / TVAE to 50-60 %).

Methods: skdpsynth.NPGC non-private and at epsilon 10 (public schema), the PyPI
reference ``npgc`` 0.3.0 (non-private), a parametric Gaussian copula
(``copulas.multivariate.GaussianMultivariate``, categories label-encoded), and CTGAN
and TVAE (``ctgan`` package, reduced epochs).

Reductions (stated in the results): Adult is subsampled (``--rows``, default 3,000;
the reference's sampler builds an n x distinct-values matrix), CTGAN / TVAE train for
``--epochs`` (default 30) epochs with batch 500 on CPU, one seed.

Run: ``python benchmarks/regeneration.py`` or ``--quick`` (1,000 rows, 4 generations,
5 epochs). The stored results were made on a heavily shared 2-core machine with::

    python benchmarks/regeneration.py --rows 2000 --methods npgc copula
    python benchmarks/regeneration.py --rows 2000 --epochs 5 --generations 4 --methods ctgan tvae --merge
    python benchmarks/regeneration.py --rows 10000 --methods skdpsynth --name regeneration_n10000
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the package, when not installed
from _common import RESULTS, SHARED_DATA, markdown_table, write_results  # noqa: E402

from skdpsynth import NPGCSynthesizer  # noqa: E402
from skdpsynth.datasets import load_adult  # noqa: E402
from skdpsynth.metrics import sdmetrics_quality  # noqa: E402

NAN = "__missing__"


class _Baseline:
    """Common preprocessing for the third-party models: categories' NaN as a label, dtypes restored."""

    def __init__(self, template: pd.DataFrame):
        self.cat = [c for c in template.columns if not pd.api.types.is_numeric_dtype(template[c])]
        self.num = [c for c in template.columns if c not in self.cat]
        self.dtypes = template.dtypes

    def encode(self, X: pd.DataFrame) -> pd.DataFrame:
        X = X.copy()
        X[self.cat] = X[self.cat].astype(object).fillna(NAN)
        for c in self.num:
            X[c] = X[c].astype(float)
        return X

    def decode(self, S: pd.DataFrame) -> pd.DataFrame:
        S = S.copy()
        for c in self.cat:
            S[c] = S[c].astype(object).where(S[c] != NAN, np.nan)
        for c in self.num:
            S[c] = pd.to_numeric(S[c], errors="coerce").round().astype(float)
            if pd.api.types.is_integer_dtype(self.dtypes[c]) and not S[c].isna().any():
                S[c] = S[c].astype(self.dtypes[c])
        return S


def make_models(schema, epochs: int, seed: int) -> dict:
    def npgc_ours(eps):
        def fit_sample(X, n, gen):
            m = NPGCSynthesizer(epsilon=eps, schema=schema, random_state=seed + gen).fit(X)
            return m.sample(n, random_state=seed + 100 + gen)
        return fit_sample

    def npgc_ref(X, n, gen):
        import npgc

        m = npgc.NPGC(epsilon=None)
        m.fit(X, random_state=seed + gen)
        return m.sample(n, seed=seed + 100 + gen)

    def gaussian_copula(X, n, gen):
        from copulas.multivariate import GaussianMultivariate

        pre = _Baseline(X)
        E = pre.encode(X)
        cats = {c: sorted(E[c].unique()) for c in pre.cat}
        for c in pre.cat:
            E[c] = E[c].map({v: i for i, v in enumerate(cats[c])}).astype(float)
        # Beta marginals, as SDV's GaussianCopulaSynthesizer by default (parametric: the point of the comparison)
        m = GaussianMultivariate(distribution="copulas.univariate.BetaUnivariate", random_state=seed + gen)
        m.fit(E)
        S = m.sample(n)
        for c in pre.cat:
            idx = np.clip(np.rint(S[c].to_numpy(dtype=float)), 0, len(cats[c]) - 1).astype(int)
            S[c] = np.array(cats[c], dtype=object)[idx]
        return pre.decode(S[X.columns])

    def deep(cls_name):
        def fit_sample(X, n, gen):
            import torch
            from ctgan import CTGAN, TVAE

            torch.manual_seed(seed + gen)
            pre = _Baseline(X)
            E = pre.encode(X)
            if cls_name == "CTGAN":
                m = CTGAN(epochs=epochs, batch_size=500, verbose=False, enable_gpu=False)
            else:
                m = TVAE(epochs=epochs, batch_size=500, enable_gpu=False)
            m.fit(E, pre.cat)
            return pre.decode(m.sample(n)[X.columns])
        return fit_sample

    return {
        "skdpsynth.NPGC (non-private)": npgc_ours(None),
        "skdpsynth.NPGC (eps=10)": npgc_ours(10.0),
        "npgc reference (non-private)": npgc_ref,
        "Gaussian copula (copulas)": gaussian_copula,
        "CTGAN": deep("CTGAN"),
        "TVAE": deep("TVAE"),
    }


def plot(curves: dict, n_gen: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, scores in curves.items():
        ax.plot(range(1, len(scores) + 1), scores, "o-", ms=3, label=name)
    ax.set_xlabel("generation")
    ax.set_ylabel("SDMetrics quality vs the original data")
    ax.set_xticks(range(1, n_gen + 1))
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--generations", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", nargs="*", default=None, help="subset of method names (substring match)")
    parser.add_argument("--name", default=None, help="results file name (default regeneration[_quick])")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other methods' curves from an earlier run's JSON (same rows / generations)")
    args = parser.parse_args()
    rows = args.rows or (1000 if args.quick else 3000)
    n_gen = args.generations or (4 if args.quick else 10)
    epochs = args.epochs or (5 if args.quick else 30)
    warnings.simplefilter("ignore")
    logging.getLogger("npgc").setLevel(logging.WARNING)
    try:
        import torch

        torch.set_num_threads(2)
    except ImportError:  # pragma: no cover
        pass

    b = load_adult(path=SHARED_DATA / "adult" / "adult.data", download=False)
    real = b.train.sample(rows, random_state=args.seed).reset_index(drop=True)
    schema = b.schema
    models = make_models(schema, epochs, args.seed)
    if args.methods:
        models = {k: v for k, v in models.items() if any(m.lower() in k.lower() for m in args.methods)}
    curves, times, table = {}, {}, []
    for name, fit_sample in models.items():
        data, scores, t0 = real, [], time.perf_counter()
        for gen in range(1, n_gen + 1):
            data = fit_sample(data, len(real), gen)
            q = sdmetrics_quality(real, data[real.columns], schema)
            scores.append(q["overall"])
            table.append({"method": name, "generation": gen, **q})
            print(f"{name} gen {gen}: {q['overall']:.4f} ({time.perf_counter() - t0:.0f}s)", flush=True)
        curves[name] = scores
        times[name] = time.perf_counter() - t0
    name = args.name or ("regeneration_quick" if args.quick else "regeneration")
    settings = {name_: {"epochs": epochs} for name_ in curves}
    previous = RESULTS / f"{name}.json"
    if args.merge and previous.exists():
        import json

        old = json.loads(previous.read_text())
        if old.get("rows") == rows:
            for k, v in old["curves"].items():
                if k not in curves:
                    curves[k] = v
                    times[k] = old["seconds"][k]
                    settings[k] = old.get("settings", {}).get(k, {"epochs": old.get("epochs")})
                    table += [r for r in old["table"] if r["method"] == k]
    n_gen = max(len(v) for v in curves.values())
    summary = [{"method": k, "generations": len(v), "generation 1": v[0], "last generation": v[-1],
                "loss (points)": 100 * (v[0] - v[-1]),
                "loss per generation (points)": 100 * (v[0] - v[-1]) / max(len(v) - 1, 1),
                "minutes (fit+sample+score, all generations)": times[k] / 60,
                "epochs": settings[k]["epochs"] if k in ("CTGAN", "TVAE") else ""}
               for k, v in curves.items()]
    md = [
        "# Regeneration stability (synthetic feedback loop)",
        "",
        f"Adult, random subsample of {rows:,} rows (seed {args.seed}) as the real table; up to {n_gen} generations "
        "(CTGAN / TVAE fewer where listed, to fit the time budget), each "
        "fitted on the previous generation's output and sampled to the same size; SDMetrics quality overall against "
        "the ORIGINAL subsample. CTGAN / TVAE: epochs as listed (batch 500, CPU), reduced from the packages' 300 "
        "epochs to keep the run short on a shared 2-core machine. One seed. NPGC uses the public Adult schema "
        "(eps=10 spends epsilon 10 on each generation's input; only generation 1 touches the real data). Loss = "
        "generation 1 minus the last "
        "generation, in percentage points.",
        "",
        markdown_table(summary),
        "",
        "## Every generation",
        "",
        markdown_table(table, ["method", "generation", "overall", "column_shapes", "column_pair_trends"]),
        "",
        f"![curves]({name}.png)",
    ]
    write_results(name, {"rows": rows, "generations": n_gen, "epochs": epochs, "settings": settings,
                         "curves": curves, "seconds": times, "table": table}, "\n".join(md))
    plot(curves, n_gen, RESULTS / f"{name}.png")


if __name__ == "__main__":
    main()
