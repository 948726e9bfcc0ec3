"""Sequence synthesizers: DP-Markov (order 1, 2) vs DP-HistSeq on OULAD clickstreams, scaling, and KT/GRU tasks.

Run ``python benchmarks/sequences.py`` (``--quick`` for a smoke run). Writes
``results/sequences.json``, ``results/sequences.md`` and ``results/sequences_*.png``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import RESULTS, SHARED_DATA, markdown_table, measure, write_results  # noqa: E402

from skdpsynth.datasets import load_oulad, make_clickstream, make_knowledge_tracing  # noqa: E402
from skdpsynth.models import DKT, SAKT, GRUSequenceClassifier, sequences_from_long  # noqa: E402
from skdpsynth.synthesizers import DPHistSeqSynthesizer, DPMarkovSynthesizer  # noqa: E402
from skdpsynth.synthesizers._sequence_data import transition_frequencies  # noqa: E402

OULAD_LABELS = ["Distinction", "Pass", "Fail", "Withdrawn"]
METHODS = {
    "DP-Markov o1": (DPMarkovSynthesizer, {"order": 1}),
    "DP-Markov o2": (DPMarkovSynthesizer, {"order": 2}),
    "DP-HistSeq": (DPHistSeqSynthesizer, {}),
}


def oulad_aaa() -> tuple[pd.DataFrame, list[str]]:
    oulad = load_oulad(path=SHARED_DATA / "oulad", module="AAA", download=False)
    clicks = oulad.clickstream
    table = pd.DataFrame({
        "learner": clicks["code_presentation"] + "-" + clicks["id_student"].astype(str),
        "date": clicks["date"], "activity_type": clicks["activity_type"], "final_result": clicks["final_result"],
    })
    return table, sorted(oulad.tables["vle"]["activity_type"].unique())


def tv_transitions(real: pd.DataFrame, syn: pd.DataFrame, vocab: list[str], max_length: int) -> float:
    """Mean TV distance between real (truncated) and synthetic order-1 transition rows, weighted by real mass."""
    real = real.sort_values(["learner", "date"], kind="stable")
    real = real[real.groupby("learner").cumcount() < max_length]
    real = real.assign(date=real.groupby("learner").cumcount())
    kw = dict(id_column="learner", order_column="date", event_column="activity_type", states=vocab)
    tr, ts = transition_frequencies(real, **kw), transition_frequencies(syn, **kw)
    prev = pd.Index(vocab).get_indexer(real["activity_type"])
    weight = np.bincount(prev, minlength=len(vocab) + 1).astype(float)[: len(vocab) + 1]
    weight[-1] = real["learner"].nunique()
    tv = 0.5 * np.abs(tr - ts).sum(axis=1)
    return float((tv * weight).sum() / weight.sum())


def bench_oulad(quick: bool) -> list[dict]:
    table, vocab = oulad_aaa()
    rows = []
    max_length = 300
    schema = {"final_result": {"kind": "categorical", "categories": OULAD_LABELS, "nullable": False}}
    real_lab = table.drop_duplicates("learner")["final_result"].value_counts(normalize=True)
    for name, (cls, extra) in METHODS.items():
        for eps in ([1.0] if quick else [1.0, 5.0, 10.0]):
            est = cls(epsilon=eps, id_column="learner", order_column="date", event_columns="activity_type",
                      label_column="final_result", vocabulary=vocab, schema=schema, max_length=max_length,
                      duplicate_order="stable", random_state=0, **extra)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, fit_s, fit_mb = measure(lambda est=est: est.fit(table))
            syn, sample_s, sample_mb = measure(lambda est=est: est.sample(1000, random_state=1))
            syn_lab = syn.drop_duplicates("learner")["final_result"].value_counts(normalize=True)
            rows.append({
                "method": name, "epsilon": eps, "fit_s": fit_s, "fit_peak_mib": fit_mb, "sample_1000_s": sample_s,
                "sample_peak_mib": sample_mb, "synthetic_events": len(syn),
                "transition_tv": tv_transitions(table, syn, vocab, max_length),
                "label_tv": float(0.5 * (syn_lab.reindex(OULAD_LABELS).fillna(0)
                                         - real_lab.reindex(OULAD_LABELS).fillna(0)).abs().sum()),
                "label_groups": int(syn["final_result"].nunique()),
                "mean_length": float(syn.groupby("learner").size().mean()),
                "real_mean_length_truncated": float(np.minimum(table.groupby("learner").size(), max_length).mean()),
            })
            print(rows[-1], flush=True)
    return rows


def simulated_log(n_events: int, seed: int = 0, n_states: int = 20) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n_learners = max(n_events // 100, 2)
    lengths = rng.integers(50, 151, n_learners)
    lengths = lengths[: np.searchsorted(np.cumsum(lengths), n_events) + 1]
    ids = np.repeat(np.arange(len(lengths), dtype=np.int32), lengths)
    pos = (np.arange(len(ids)) - np.repeat(np.cumsum(lengths) - lengths, lengths)).astype(np.int32)
    ev = ((pos.astype(np.int64) * 7 + rng.integers(0, 3, len(ids)) + ids) % n_states).astype(np.int16)
    return pd.DataFrame({"id": ids, "order": pos, "event": ev})


def bench_scaling(quick: bool) -> list[dict]:
    rows = []
    sizes = [10_000, 100_000] if quick else [10_000, 100_000, 1_000_000, 10_000_000]
    for n in sizes:
        log = simulated_log(n)
        for name in ("DP-Markov o1", "DP-Markov o2", "DP-HistSeq"):
            cls, extra = METHODS[name]
            est = cls(epsilon=1.0, vocabulary=list(range(20)), max_length=150, random_state=0, **extra)
            _, fit_s, fit_mb = measure(lambda est=est, log=log: est.fit(log))
            _, sample_s, _ = measure(lambda est=est: est.sample(1000, random_state=0))
            rows.append({"data": "simulated", "events": len(log), "learners": int(log["id"].nunique()),
                         "method": name, "fit_s": fit_s, "fit_peak_mib": fit_mb, "sample_1000_s": sample_s})
            print(rows[-1], flush=True)
        del log
    if not quick:  # all OULAD weekly data: event = weekly click level (public bins), order = week
        weekly = pd.read_csv(SHARED_DATA / "oulad" / "studentVle_weekly.csv.gz")
        bins = [0, 5, 20, 50, 150, np.inf]
        levels = ["1-5", "6-20", "21-50", "51-150", "151+"]
        log = pd.DataFrame({
            "id": weekly["code_module"] + weekly["code_presentation"] + weekly["id_student"].astype(str),
            "order": weekly["week"], "event": pd.cut(weekly["sum_click"], bins, labels=levels).astype(str)})
        est = DPMarkovSynthesizer(epsilon=1.0, vocabulary=levels, max_length=43, random_state=0)
        _, fit_s, fit_mb = measure(lambda: est.fit(log))
        _, sample_s, _ = measure(lambda: est.sample(1000, random_state=0))
        rows.append({"data": "OULAD weekly (all modules)", "events": len(log), "learners": int(log["id"].nunique()),
                     "method": "DP-Markov o1", "fit_s": fit_s, "fit_peak_mib": fit_mb, "sample_1000_s": sample_s})
        print(rows[-1], flush=True)
    return rows


def bench_kt(quick: bool) -> tuple[list[dict], dict]:
    n = 1000 if quick else 4000
    kt = make_knowledge_tracing(n + n // 4, n_skills=10, random_state=0).frame
    train, test = kt[kt.learner_id < n], kt[kt.learner_id >= n]
    cols = dict(id_column="learner_id", order_column="position", skill_column="skill_id", correct_column="correct")
    epochs = 4 if quick else 15
    timing = {}
    rows = []
    for model in (DKT, SAKT):
        est, secs, _ = measure(lambda model=model: model(**cols, max_epochs=epochs, random_state=0).fit(train))
        timing[model.__name__] = secs
        rows.append({"model": model.__name__, "data": "real", "epsilon": "-", **_kt_metrics(est.evaluate(test))})
        print(rows[-1], flush=True)
    vocab = {"skill_id": list(range(10)), "correct": [0, 1]}
    for name, (cls, extra) in METHODS.items():
        for eps in ([10.0] if quick else [1.0, 5.0, 10.0]):
            syn = cls(epsilon=eps, id_column="learner_id", order_column="position",
                      event_columns=["skill_id", "correct"], vocabulary=vocab, max_length=50, random_state=0,
                      **extra).fit(train).sample(n, random_state=1)
            models = (DKT, SAKT) if eps == 10.0 else (DKT,)
            for model in models:
                res = model(**cols, max_epochs=epochs, random_state=0).fit(syn).evaluate(test)
                rows.append({"model": model.__name__, "data": name, "epsilon": eps, **_kt_metrics(res)})
                print(rows[-1], flush=True)
    return rows, {"n_train_learners": n, "n_train_events": len(train), "fit_seconds": timing}


def _kt_metrics(res: dict) -> dict:
    return {"macro_f1": res["macro_f1"], "auc": res["auc"], "majority_macro_f1": res["majority_macro_f1"]}


def bench_gru(quick: bool) -> list[dict]:
    n = 600 if quick else 1500
    train = make_clickstream(n, min_length=10, max_length=40, random_state=0)
    test = make_clickstream(500, min_length=10, max_length=40, random_state=1).frame
    vocab = list(train.schema["vocabulary"])
    enc = dict(id_column="learner_id", order_column="position", event_columns="activity", label_column="outcome")
    xt, yt, _ = sequences_from_long(test, vocabulary=vocab, **enc)
    xr, yr, _ = sequences_from_long(train.frame, vocabulary=vocab, **enc)
    epochs = 5 if quick else 20
    real = GRUSequenceClassifier(max_epochs=epochs, random_state=0).fit(xr, yr).score(xt, yt)
    rows = [{"data": "real", "epsilon": "-", "gru_macro_f1": real, "retention": 1.0}]
    for name in ("DP-Markov o1", "DP-HistSeq"):
        cls, extra = METHODS[name]
        for eps in ([10.0] if quick else [1.0, 5.0, 10.0]):
            syn = cls(epsilon=eps, id_column="learner_id", order_column="position", event_columns="activity",
                      label_column="outcome", vocabulary=vocab, max_length=40, random_state=0,
                      **extra).fit(train.frame).sample(n, random_state=1)
            xs, ys, _ = sequences_from_long(syn, vocabulary=vocab, **enc)
            f1 = GRUSequenceClassifier(max_epochs=epochs, random_state=0).fit(xs, ys).score(xt, yt)
            rows.append({"data": name, "epsilon": eps, "gru_macro_f1": f1, "retention": f1 / real})
            print(rows[-1], flush=True)
    return rows


def plots(oulad: list[dict], scaling: list[dict], kt: list[dict]) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    sim = pd.DataFrame([r for r in scaling if r["data"] == "simulated"])
    for name, g in sim.groupby("method"):
        axes[0].loglog(g["events"], g["fit_s"], "o-", label=name)
    axes[0].set(xlabel="events", ylabel="fit seconds", title="fit time vs log size (simulated)")
    for name, g in sim.groupby("method"):
        axes[1].loglog(g["events"], np.maximum(g["fit_peak_mib"], 0.1), "o-", label=name)
    axes[1].set(xlabel="events", ylabel="peak RSS increase (MiB)", title="fit memory vs log size")
    axes[0].legend()
    k = pd.DataFrame([r for r in kt if r["model"] == "DKT" and r["data"] != "real"])
    for name, g in k.groupby("data"):
        axes[2].plot(g["epsilon"].astype(float), g["macro_f1"], "o-", label=name)
    real = next(r for r in kt if r["model"] == "DKT" and r["data"] == "real")
    axes[2].axhline(real["macro_f1"], color="k", ls="--", label="DKT on real")
    axes[2].axhline(real["majority_macro_f1"], color="gray", ls=":", label="majority floor")
    axes[2].set(xlabel="epsilon", ylabel="next-response macro-F1 (real test)", title="DKT trained on synthetic KT")
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "sequences.png", dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    t0 = time.time()
    oulad = bench_oulad(args.quick)
    scaling = bench_scaling(args.quick)
    kt, kt_info = bench_kt(args.quick)
    gru = bench_gru(args.quick)
    name = "sequences_quick" if args.quick else "sequences"
    md = [
        "# Sequence synthesizers (DP-Markov, DP-HistSeq)",
        "",
        f"Run: {'--quick (reduced)' if args.quick else 'full'}, one seed (random_state=0) per setting; "
        f"total {time.time() - t0:.0f} s on a shared 2-core machine (timings are noisy: other jobs ran at the "
        "same time). Peak memory = peak RSS increase sampled every 5 ms (memory freed by an earlier fit and reused "
        "reads as ~0, so only the large runs' figures are informative).",
        "",
        "## OULAD module AAA (350,298 click records, 735 learner-presentations, label final_result)",
        "",
        "Order = `date` (ties kept in file order), events = `activity_type` (public vocabulary from vle.csv), "
        "label categories public (OULAD codebook), max_length=300. transition_tv: row-mass-weighted total "
        "variation between real (truncated) and synthetic order-1 transition rows (0 = identical).",
        "",
        markdown_table(oulad),
        "",
        "## Scaling",
        "",
        "Simulated logs (20 event types, 50-150 events per learner, max_length=150, epsilon=1) and, in the full "
        "run, all OULAD weekly data (event = weekly click level in 5 public bins, order = week).",
        "",
        markdown_table(scaling),
        "",
        "## Knowledge tracing: DKT trained on synthetic (skill, correct) sequences, tested on real learners",
        "",
        f"make_knowledge_tracing (BKT), {kt_info['n_train_learners']} training learners "
        f"({kt_info['n_train_events']} responses), 10 skills; event_columns=[skill_id, correct] (joint state). "
        f"Fit time on the real training data: DKT {kt_info['fit_seconds']['DKT']:.1f} s, "
        f"SAKT {kt_info['fit_seconds']['SAKT']:.1f} s (single torch thread each, early stopping).",
        "",
        markdown_table(kt),
        "",
        "## Clickstream task: GRU classifier trained on synthetic, tested on real (outcome depends on order only)",
        "",
        markdown_table(gru),
    ]
    payload = {"oulad_aaa": oulad, "scaling": scaling, "knowledge_tracing": kt, "kt_info": kt_info, "gru": gru}
    write_results(name, payload, "\n".join(md))
    if not args.quick:
        plots(oulad, scaling, kt)


if __name__ == "__main__":
    main()
