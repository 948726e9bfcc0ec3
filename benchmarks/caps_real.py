"""CAPS on real cohorts (OULAD) and the compounding bias, one factor at a time.

Questions (issue 25): does CAPS beat its one-shot model at every cycle on real cohorts (paired intervals above 0),
and if not, what limits it (cohort size, drift between cohorts, public data)? Does the "compounding bias" of
papers/caps.md §4.3 (reconstruction improves over the cycles while conditional generation degrades, more so at
small epsilon) reproduce, and what does the bias fix (prior adaptation + replay anchored on public rows) do to it?

Every arm runs the three cycles of ``caps_cycles.run_task`` (same metrics: balanced accuracy of q(y | z1) on the
other cohorts and on a held-out cohort, AJS of reconstruction and of conditional generation) on the Latin-square
orders 012 / 120 / 201 (every cohort once at every cycle) x seeds. Pairing: the cycle-t model of a cohort is paired
with the cycle-1 (one-shot) model of the *same* cohort, epsilon and seed (the run of that seed that starts with
it), so each seed gives three pairs per cycle; 95 % t-intervals over the pairs. Variants are compared run by run
(same epsilon, order, seed, cycle, hence the same cohort).

Arms (``ARMS``; delta 1e-3, the paper's, unless named):

* ``oulad`` — the shipped method on OULAD GGG (105 / 111 / 115 students of 2013J / 2014B / 2014J, 34 features,
  final_result), 10,000 public rows of other modules; epsilon 1 and 4. (delta 1e-5, all six orders:
  ``caps_cycles.md``.)
* factors, each one change of ``oulad`` at epsilon 4: ``oulad_nodp`` (no DP at all: is there a cyclic gain to
  be had?), ``oulad_n700`` (700 students per presentation, ``expected_cohort_size=700``), ``oulad_pub_all``
  (every public row of the other modules, about 2.5x as many), ``oulad_pub_ggg`` (public rows = GGG students in
  neither a cohort nor the held-out set: public data from the *same* module; a diagnostic of what closer public
  data would do, not a setting with a guarantee for those students).
* the compounding bias: ``sim_paper`` / ``sim_paper_fix`` on the simulated case study — the paper's training
  (all of M2 private, no label replay, unlabelled loss trains the classifier) with the fix off (replay anchored
  on the old M1, no prior adaptation: the paper) and on; ``oulad_paper`` / ``oulad_paper_fix`` the same on
  OULAD; epsilon 1 (the paper: the bias is larger at small epsilon) and 4.
* the case study at the paper's public size: ``sim_pub10k`` / ``sim_pub100k`` (the shipped method, delta 1e-3,
  10,000 vs 100,000 simulated public rows).

Drift (no training, cheap): per pair of cohorts, the cross-validated AUC of a logistic regression telling them
apart (0.5 = no drift), the mean total-variation distance of the per-feature marginals and of the label
distribution, and the transfer gap of a non-private logistic regression for the label (balanced accuracy within a
cohort by 5-fold CV minus trained on one cohort and tested on the other); for OULAD's presentations (all
students), the simulated cohorts (700 each at the case study's shifts) and public vs private rows.

Usage:
  python benchmarks/caps_real.py --workers 1 --progress benchmarks/results/caps_real_progress.jsonl --resume
  python benchmarks/caps_real.py --full --workers 16 --progress /tmp/caps_real_full.jsonl   (the whole grid)
  python benchmarks/caps_real.py --from-progress FILE   (assemble results of a partial run)
  python benchmarks/caps_real.py --drift-only
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import caps_cycles as cc  # noqa: E402
from _common import markdown_table, write_results  # noqa: E402

from skdpsynth.datasets import make_learning_habits  # noqa: E402

DELTA = 1e-3
LATIN = [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
#: the paper's training of M2 (papers/caps.md §3.2): all of M2 private, no label replay, classifier in U
PAPER = {"private_part": "all", "label_replay": 0, "unlabelled_trains_classifier": True}
NO_FIX = {"adapt_prior": False, "replay_anchor": "model"}
FIX = {"adapt_prior": True, "replay_anchor": "public"}
#: arm -> (data set, estimator overrides, what it is)
ARMS: dict[str, tuple[str, dict, str]] = {
    "oulad": ("oulad", {}, "shipped method, OULAD GGG 105/111/115, 10k public rows of other modules"),
    "oulad_nodp": ("oulad", {}, "as oulad, no DP (epsilon=None)"),
    "oulad_n700": ("oulad_n700", {"expected_cohort_size": 700}, "as oulad, 700 students per presentation"),
    "oulad_pub_all": ("oulad_pub_all", {}, "as oulad, all public rows of the other modules"),
    "oulad_pub_ggg": ("oulad_pub_ggg", {}, "as oulad, public rows = GGG students outside cohorts and held-out"),
    "sim_paper": ("sim", {**PAPER, **NO_FIX}, "paper's training, bias fix off (simulated, 10k public)"),
    "sim_paper_fix": ("sim", {**PAPER, **FIX}, "paper's training, bias fix on (simulated, 10k public)"),
    "oulad_paper": ("oulad", {**PAPER, **NO_FIX}, "paper's training, bias fix off (OULAD)"),
    "oulad_paper_fix": ("oulad", {**PAPER, **FIX}, "paper's training, bias fix on (OULAD)"),
    "sim_pub10k": ("sim", {}, "shipped method, simulated case study, 10k public rows"),
    "sim_pub100k": ("sim100k", {}, "shipped method, simulated case study, 100k public rows (the paper's size)"),
}
NODP = math.inf  # the epsilon recorded for the no-DP arm (the estimator gets epsilon=None)


def blocks(full: bool) -> list[tuple[str, list[float], list[int]]]:
    """(arm, epsilons, seeds) in priority order: a run stopped early holds the first blocks."""
    if full:
        s5 = list(range(5))
        return [("oulad", [1.0, 4.0], s5), ("oulad_nodp", [NODP], s5), ("oulad_n700", [4.0], s5),
                ("oulad_pub_ggg", [4.0], s5), ("oulad_pub_all", [4.0], s5),
                ("sim_paper", [1.0, 4.0], s5), ("sim_paper_fix", [1.0, 4.0], s5),
                ("oulad_paper", [1.0], s5), ("oulad_paper_fix", [1.0], s5),
                ("sim_pub10k", [1.0], s5), ("sim_pub100k", [1.0], s5)]
    # the reduced run of a 2-core machine shared with other jobs: the main comparison at epsilon 4 on three
    # seeds, one seed of each factor, then the further seeds
    factors = [("oulad_nodp", [NODP]), ("sim_paper", [1.0]), ("sim_paper_fix", [1.0]), ("oulad_pub_ggg", [4.0])]
    out = [("oulad", [4.0], [0, 1, 2])] + [(a, e, [0]) for a, e in factors] + [("oulad", [4.0], [3, 4])]
    out += [(a, e, [1]) for a, e in factors]
    return out + [("oulad_n700", [4.0], [0, 1]), ("oulad", [1.0], [0, 1, 2, 3, 4]),
                  ("oulad_pub_all", [4.0], [0, 1]), ("sim_pub10k", [1.0], [0]), ("sim_pub100k", [1.0], [0]),
                  ("sim_pub10k", [1.0], [1]), ("sim_pub100k", [1.0], [1])]


def tasks_for(block_list) -> list[tuple]:
    """One task per (arm, epsilon, seed, order), seeds outermost within a block (pre-training is cached per seed)."""
    out = []
    for arm, epsilons, seeds in block_list:
        data, cfg, _ = ARMS[arm]
        for seed in seeds:
            for eps in epsilons:
                for order in LATIN:
                    out.append((data, arm, eps, order, seed, {"delta": DELTA, **cfg}))
    return out


# -- data ------------------------------------------------------------------------------------------------
def load_data(names: set[str]) -> dict:
    """The data sets the tasks need (``caps_cycles`` loaders)."""
    out: dict = {}
    if names & {"oulad", "oulad_pub_all", "oulad_pub_ggg"}:
        base = cc.oulad()
        out["oulad"] = base
        if "oulad_pub_all" in names:  # every public row but the 1,000 that ``oulad`` keeps for the M1 diagnostic
            pool = cc.oulad(n_public=10**9)["public"]
            keep = np.r_[0:10000, 11000:len(pool)]
            out["oulad_pub_all"] = {**base, "public": pool.iloc[keep].reset_index(drop=True)}
        if "oulad_pub_ggg" in names:
            rest = base["module_rest"].drop(columns=[base["target"]])
            out["oulad_pub_ggg"] = {**base, "public": rest.iloc[200:].reset_index(drop=True),
                                    "public_holdout": rest.iloc[:200].reset_index(drop=True)}
    if "oulad_n700" in names:
        out["oulad_n700"] = cc.oulad(sizes=(700, 700, 700))
    if "sim" in names:
        out["sim"] = cc.simulated(10000)
    if "sim100k" in names:
        out["sim100k"] = cc.simulated(100000)
    return out


# -- runs ------------------------------------------------------------------------------------------------
def run_one(task: tuple) -> list[dict]:
    """One task of :func:`caps_cycles.run_task`; the no-DP arm runs with epsilon=None and is recorded as inf."""
    data, arm, eps, order, seed, cfg = task
    try:
        rows = cc.run_task((data, arm, None if eps == NODP else eps, order, seed, cfg))
    except Exception as exc:  # noqa: BLE001 - one failed task must not stop the grid; it is reported and rerun
        print(f"FAILED {arm} eps={eps} order={order} seed={seed}: {exc!r}", flush=True)
        return []
    for r in rows:
        r["epsilon"], r["delta"] = eps, cfg["delta"]
    return rows


def run_all(tasks: list[tuple], datasets: dict, workers: int, progress: Path | None) -> list[dict]:
    """Run ``tasks`` in ``workers`` processes, appending each task's rows to ``progress`` as it completes."""
    rows, t0 = [], time.perf_counter()
    if workers <= 1:
        cc._init_worker(datasets)
        results = map(run_one, tasks)
    else:
        import multiprocessing as mp

        pool = mp.get_context("fork").Pool(workers, initializer=cc._init_worker, initargs=(datasets,))
        results = pool.imap_unordered(run_one, tasks)
    for k, out in enumerate(results):
        if not out:
            continue
        rows += out
        if progress is not None:
            with progress.open("a") as fh:
                fh.write(json.dumps(out, default=str) + "\n")
        r = out[0]
        print(f"[{time.perf_counter() - t0:6.0f}s] {k + 1}/{len(tasks)} {r['variant']} eps={r['epsilon']} "
              f"order={r['order']} seed={r['seed']} ({r['task_seconds']:.0f}s)", flush=True)
    return rows


def _key(r) -> tuple:
    return (r["variant"], r["epsilon"], r["order"], r["seed"])


def load_progress(path: Path) -> list[dict]:
    """Rows of the completed tasks (the last copy of a task wins)."""
    by_task: dict = {}
    for line in path.read_text().splitlines():
        if line.strip():
            out = json.loads(line)
            by_task[_key(out[0])] = out
    return [r for out in by_task.values() for r in out]


# -- statistics -----------------------------------------------------------------------------------------
METRICS = ("balanced_accuracy", "balanced_accuracy_heldout", "mae", "ajs_reconstruction", "ajs_generation",
           "generation_gap")


def _frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    df["generation_gap"] = df["ajs_generation"] - df["ajs_reconstruction"]
    return df


def paired(rows: list[dict]) -> pd.DataFrame:
    """Cycle t >= 2 minus the one-shot model (cycle 1) of the same cohort, arm, epsilon and seed."""
    df = _frame(rows)
    first = df[df.cycle == 1].set_index(["variant", "epsilon", "seed", "cohort"])
    out = []
    for _, r in df[df.cycle >= 2].iterrows():
        k = (r["variant"], r["epsilon"], r["seed"], r["cohort"])
        if k not in first.index:
            continue
        b = first.loc[k]
        out.append({"variant": r["variant"], "epsilon": r["epsilon"], "cycle": int(r["cycle"]), "seed": r["seed"],
                    "order": r["order"], **{m: float(r[m] - b[m]) for m in METRICS}})
    return pd.DataFrame(out)


def summarise(d: pd.DataFrame, by: list[str], metrics=METRICS) -> list[dict]:
    """Mean and 95 % t-interval of each metric per group."""
    out = []
    for key, g in d.groupby(by):
        rec = {k: getattr(v, "item", lambda v=v: v)() for k, v in zip(by, key if isinstance(key, tuple) else (key,))}
        rec["n"] = len(g)
        for m in metrics:
            mean, lo, hi = cc.t_interval(g[m])
            rec.update({m: mean, f"{m}_lo": lo, f"{m}_hi": hi})
        out.append(rec)
    return out


def levels(rows: list[dict]) -> list[dict]:
    return summarise(_frame(rows), ["variant", "epsilon", "cycle"])


def contrast(rows: list[dict], a: str, b: str) -> list[dict]:
    """Arm ``a`` minus arm ``b`` run by run (same epsilon, order, seed and cycle, hence the same cohort)."""
    df = _frame(rows)
    key = ["epsilon", "order", "seed", "cycle"]
    x, y = df[df.variant == a].set_index(key), df[df.variant == b].set_index(key)
    d = (x[list(METRICS)] - y[list(METRICS)]).dropna().reset_index()
    if d.empty:
        return []
    return [{"contrast": f"{a} − {b}", **r} for r in summarise(d, ["epsilon", "cycle"])]


def within_run(rows: list[dict], arm: str) -> list[dict]:
    """Cycle t minus cycle 1 of the same run (the paper's Fig. 3 reading: a trend over the cycles of one run)."""
    df = _frame(rows)
    df = df[df.variant == arm]
    first = df[df.cycle == 1].set_index(["epsilon", "order", "seed"])
    out = []
    for _, r in df[df.cycle >= 2].iterrows():
        k = (r["epsilon"], r["order"], r["seed"])
        if k in first.index:
            out.append({"epsilon": r["epsilon"], "cycle": int(r["cycle"]),
                        **{m: float(r[m] - first.loc[k][m]) for m in METRICS}})
    if not out:
        return []
    return [{"arm": arm, **r} for r in summarise(pd.DataFrame(out), ["epsilon", "cycle"])]


# -- drift --------------------------------------------------------------------------------------------------
def _onehot(frames: list[pd.DataFrame], cols: list[str]) -> list[np.ndarray]:
    allf = pd.get_dummies(pd.concat(frames, ignore_index=True)[cols].astype(str)).to_numpy(float)
    cuts = np.cumsum([0] + [len(f) for f in frames])
    return [allf[a:b] for a, b in zip(cuts[:-1], cuts[1:])]


def _tv_marginals(a: pd.DataFrame, b: pd.DataFrame, cols: list[str]) -> float:
    tv = []
    for c in cols:
        pa, pb = a[c].astype(str).value_counts(normalize=True), b[c].astype(str).value_counts(normalize=True)
        tv.append(0.5 * pa.subtract(pb, fill_value=0).abs().sum())
    return float(np.mean(tv))


def pair_drift(a: pd.DataFrame, b: pd.DataFrame, cols: list[str], target: str | None, seed: int = 0) -> dict:
    """Domain AUC, marginal TV, label TV and the label model's transfer gap between two frames."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict, cross_val_score

    xa, xb = _onehot([a, b], cols)
    n = min(len(xa), len(xb), 2000)
    rng = np.random.default_rng(seed)
    ia, ib = rng.choice(len(xa), n, replace=False), rng.choice(len(xb), n, replace=False)
    x = np.vstack([xa[ia], xb[ib]])
    d = np.r_[np.zeros(n), np.ones(n)]
    lr = LogisticRegression(C=0.1, max_iter=2000)
    auc = float(cross_val_score(lr, x, d, cv=StratifiedKFold(5, shuffle=True, random_state=seed),
                                scoring="roc_auc").mean())
    out = {"n_each": n, "domain_auc": auc, "marginal_tv": _tv_marginals(a, b, cols)}
    if target is not None:
        ya, yb = a[target].astype(str).to_numpy(), b[target].astype(str).to_numpy()
        out["label_tv"] = _tv_marginals(a, b, [target])
        within = cross_val_predict(lr, xa, ya, cv=StratifiedKFold(5, shuffle=True, random_state=seed))
        ba_within = float(balanced_accuracy_score(ya, within))
        ba_transfer = float(balanced_accuracy_score(yb, lr.fit(xa, ya).predict(xb)))
        out.update({"ba_within_a": ba_within, "ba_a_to_b": ba_transfer, "transfer_gap": ba_within - ba_transfer})
    return out


def pooling_gain(draws: int = 20, n: int = 110) -> list[dict]:
    """The most that carrying earlier cohorts can add, without privacy: a logistic regression for the label
    trained on one cohort of ``n`` vs on two (the earlier cohort added), tested on the third; mean over the six
    orders per draw, 95 % t-interval over ``draws`` fresh draws of the cohorts (OULAD: ``n`` students of each
    GGG presentation; simulated: new cohorts at the case study's shifts)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import balanced_accuracy_score

    big = cc.oulad(sizes=(700, 700, 700))
    target = big["target"]
    out = []
    for data in ("OULAD GGG", "simulated"):
        one, two = [], []
        for d in range(draws):
            rng = np.random.default_rng(d)
            if data == "OULAD GGG":
                co = [c.iloc[rng.choice(len(c), n, replace=False)] for c in big["cohorts"]]
                y_name = target
            else:
                co = [make_learning_habits(n, cohort_shift=s, random_state=5000 + 3 * d + i).frame
                      for i, s in enumerate(cc.SIM_SHIFTS)]
                y_name = "achievement"
            cols = [c for c in co[0].columns if c != y_name]
            xs = _onehot(co, cols)
            ys = [c[y_name].astype(str).to_numpy() for c in co]
            a1, a2 = [], []
            for a, b, c in ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)):
                lr = LogisticRegression(C=0.1, max_iter=2000)
                a1.append(balanced_accuracy_score(ys[c], lr.fit(xs[a], ys[a]).predict(xs[c])))
                a2.append(balanced_accuracy_score(ys[c], lr.fit(np.vstack([xs[a], xs[b]]),
                                                                np.r_[ys[a], ys[b]]).predict(xs[c])))
            one.append(np.mean(a1))
            two.append(np.mean(a2))
        m1, l1, h1 = cc.t_interval(one)
        m2, l2, h2 = cc.t_interval(two)
        g, gl, gh = cc.t_interval(np.subtract(two, one))
        out.append({"data": data, "n_per_cohort": n, "draws": draws, "ba_one_cohort": m1, "ba_two_cohorts": m2,
                    "gain": g, "gain_lo": gl, "gain_hi": gh})
    return out


def drift() -> dict:
    """Drift between the cohorts of OULAD GGG and of the simulated case study, and public vs private."""
    big = cc.oulad(sizes=(700, 700, 700))
    target, cols = big["target"], [c for c in big["cohorts"][0].columns if c != big["target"]]
    pres = big["presentations"]
    rows = []
    for i in range(3):
        for j in range(3):
            if i != j:
                rows.append({"data": "OULAD GGG", "a": pres[i], "b": pres[j],
                             **pair_drift(big["cohorts"][i], big["cohorts"][j], cols, target)})
    sim = [make_learning_habits(700, cohort_shift=s, random_state=100 + i).frame
           for i, s in enumerate(cc.SIM_SHIFTS)]
    scols = [c for c in sim[0].columns if c != "achievement"]
    for i in range(3):
        for j in range(3):
            if i != j:
                rows.append({"data": "simulated", "a": f"shift {cc.SIM_SHIFTS[i]}", "b": f"shift {cc.SIM_SHIFTS[j]}",
                             **pair_drift(sim[i], sim[j], scols, "achievement")})
    pooled = pd.concat(big["cohorts"], ignore_index=True)
    rows.append({"data": "OULAD", "a": "GGG cohorts", "b": "public: other modules",
                 **pair_drift(pooled, big["public"], cols, None)})
    small = cc.oulad()  # the cohorts of 105 / 111 / 115: the rest of GGG is the public_ggg arm's public data
    rows.append({"data": "OULAD", "a": "GGG cohorts", "b": "public: GGG rest",
                 **pair_drift(pooled, small["module_rest"], cols, None)})
    spub = make_learning_habits(2000, cohort_shift=-0.5, random_state=999).data
    rows.append({"data": "simulated", "a": "cohorts", "b": "public (shift -0.5)",
                 **pair_drift(pd.concat(sim, ignore_index=True), spub, scols, None)})
    labels = [{"data": "OULAD GGG", "cohort": p, "n": len(c),
               **c[target].value_counts(normalize=True).round(3).to_dict()} for p, c in zip(pres, big["cohorts"])]
    return {"pairs": rows, "labels": labels, "pooling_gain": pooling_gain()}


# -- report -------------------------------------------------------------------------------------------------
def _ci(r: dict, m: str, digits: int = 3) -> str:
    if r is None or m not in r or r[m] is None or not np.isfinite(r[m]):
        return ""
    if not np.isfinite(r.get(f"{m}_lo", np.nan)):
        return f"{r[m]:+.{digits}f}"
    return f"{r[m]:+.{digits}f} [{r[m + '_lo']:+.{digits}f}, {r[m + '_hi']:+.{digits}f}]"


def _eps(e: float) -> str:
    return "none (no DP)" if e == NODP else f"{e:g}"


def report(rows: list[dict], drift_part: dict | None, grid: dict) -> tuple[dict, str]:
    """Payload and markdown."""
    pairs = paired(rows)
    ps = summarise(pairs, ["variant", "epsilon", "cycle"]) if not pairs.empty else []
    lv = levels(rows)
    arms = sorted({r["variant"] for r in rows}, key=list(ARMS).index)
    contrasts = []
    for a, b in (("sim_paper_fix", "sim_paper"), ("oulad_paper_fix", "oulad_paper"), ("sim_pub100k", "sim_pub10k")):
        if a in arms and b in arms:
            contrasts += contrast(rows, a, b)
    trends = [t for a in arms if "paper" in a or a == "oulad" for t in within_run(rows, a)]
    payload = {"grid": grid, "arms": {a: {"data": ARMS[a][0], "overrides": ARMS[a][1], "what": ARMS[a][2]}
                                      for a in ARMS}, "rows": rows, "paired": pairs.to_dict("records"),
               "paired_summary": ps, "levels": lv, "contrasts": contrasts, "within_run": trends, "drift": drift_part}
    md = ["# CAPS on real cohorts and the compounding bias", "", grid["note"], "",
          "Protocol: the docstring of `benchmarks/caps_real.py`. δ = 1e-3 (the paper's) in every arm. "
          "Orders 012 / 120 / 201; each cycle-t model is paired with the one-shot (cycle-1) model of the same "
          "cohort, ε and seed; 95 % t-intervals over the pairs (n).", ""]
    md += ["## CAPS minus one-shot, per arm (paired)", "",
           "| arm | ε | cycle | n | Δ BA (other cohorts) | Δ BA (held-out) | Δ AJS reconstruction "
           "| Δ AJS generation |", "|---|---|---|---|---|---|---|---|"]
    for r in ps:
        md.append(f"| {r['variant']} | {_eps(r['epsilon'])} | {r['cycle']} | {r['n']} | "
                  f"{_ci(r, 'balanced_accuracy')} | {_ci(r, 'balanced_accuracy_heldout')} | "
                  f"{_ci(r, 'ajs_reconstruction', 4)} | {_ci(r, 'ajs_generation', 4)} |")
    md += ["", "## Levels (mean over runs)", "",
           "| arm | ε | cycle | n | BA (other cohorts) | BA (held-out) | AJS reconstruction | AJS generation |",
           "|---|---|---|---|---|---|---|---|"]
    for r in lv:
        md.append(f"| {r['variant']} | {_eps(r['epsilon'])} | {r['cycle']} | {r['n']} | "
                  f"{r['balanced_accuracy']:.3f} | {r['balanced_accuracy_heldout']:.3f} | "
                  f"{r['ajs_reconstruction']:.4f} | {r['ajs_generation']:.4f} |")
    if trends:
        md += ["", "## Compounding bias: cycle t minus cycle 1 within a run (the paper's Fig. 3 reading)", "",
               "The bias of the paper = reconstruction AJS falls while generation AJS rises over the cycles. "
               "Cohorts differ between cycles of a run; the Latin orders balance them over runs.", "",
               "| arm | ε | cycle | n | Δ AJS reconstruction | Δ AJS generation | Δ (generation − reconstruction) |",
               "|---|---|---|---|---|---|---|"]
        for r in trends:
            md.append(f"| {r['arm']} | {_eps(r['epsilon'])} | {r['cycle']} | {r['n']} | "
                      f"{_ci(r, 'ajs_reconstruction', 4)} | {_ci(r, 'ajs_generation', 4)} | "
                      f"{_ci(r, 'generation_gap', 4)} |")
    if contrasts:
        md += ["", "## Contrasts (run by run: same ε, order, seed, cycle)", "",
               "| contrast | ε | cycle | n | Δ BA | Δ AJS reconstruction | Δ AJS generation |",
               "|---|---|---|---|---|---|---|"]
        for r in contrasts:
            md.append(f"| {r['contrast']} | {_eps(r['epsilon'])} | {r['cycle']} | {r['n']} | "
                      f"{_ci(r, 'balanced_accuracy')} | {_ci(r, 'ajs_reconstruction', 4)} | "
                      f"{_ci(r, 'ajs_generation', 4)} |")
    if drift_part:
        md += ["", "## Drift between cohorts (no training of CAPS)", "",
               "domain AUC: 5-fold CV AUC of a logistic regression (one-hot features, C 0.1) telling the two apart "
               "(0.5 = indistinguishable); marginal TV: mean total variation of the per-feature marginals; "
               "transfer gap: the label model's balanced accuracy within a (5-fold CV) minus trained on a, tested "
               "on b.", "",
               markdown_table(drift_part["pairs"], digits=3), "", markdown_table(drift_part["labels"], digits=3),
               "", "Non-private ceiling of carrying a cohort: logistic regression (C 0.1) trained on one cohort vs on "
               "two, tested on the third (mean over the 6 orders; 95 % interval over fresh draws of the cohorts):",
               "", markdown_table(drift_part["pooling_gain"], digits=3)]
    return payload, "\n".join(md)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--full", action="store_true", help="the whole grid (5 seeds everywhere; ~240 tasks)")
    ap.add_argument("--arms", default="", help="comma-separated arms to keep (default: all of the grid)")
    ap.add_argument("--progress", type=Path, default=None)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--from-progress", type=Path, default=None)
    ap.add_argument("--max-tasks", type=int, default=None, help="stop after this many tasks of the plan")
    ap.add_argument("--drift-only", action="store_true")
    ap.add_argument("--no-drift", action="store_true")
    ap.add_argument("--drift-from", type=Path, default=None, help="take the drift part from a --drift-only JSON")
    ap.add_argument("--name", default=None)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    name = args.name or ("caps_real_full" if args.full else "caps_real")
    if args.drift_from is not None:
        drift_part = json.loads(args.drift_from.read_text())["drift"]
    else:
        drift_part = None if args.no_drift else drift()
    if args.drift_only:
        write_results(name + "_drift", {"drift": drift_part}, "# Drift between cohorts\n\n"
                      + markdown_table(drift_part["pairs"], digits=3) + "\n\n"
                      + markdown_table(drift_part["pooling_gain"], digits=3))
        return
    bl = blocks(args.full)
    if args.arms:
        keep = set(args.arms.split(","))
        bl = [b for b in bl if b[0] in keep]
    tasks = tasks_for(bl)
    if args.from_progress is not None:
        rows = load_progress(args.from_progress)
    else:
        rows = load_progress(args.progress) if args.resume and args.progress and args.progress.exists() else []
        have = {_key(r) for r in rows}
        todo = [t for t in tasks if (t[1], t[2], "".join(map(str, t[3])), t[4]) not in have]
        if args.max_tasks is not None:
            todo = todo[:args.max_tasks]
        datasets = load_data({t[0] for t in todo})
        rows += run_all(todo, datasets, args.workers, args.progress)
    done = {_key(r) for r in rows}
    grid = {"delta": DELTA, "orders": ["".join(map(str, o)) for o in LATIN], "full": args.full,
            "blocks": [{"arm": a, "epsilons": e, "seeds": s} for a, e, s in bl], "tasks_planned": len(tasks),
            "tasks_completed": len(done),
            "note": f"{len(done)} of {len(tasks)} planned tasks (arm x ε x order x seed) completed"
                    + ("" if args.full else " (the reduced plan; `--full` is the whole grid)") + "."}
    payload, md = report(rows, drift_part, grid)
    write_results(name, payload, md)
    print(f"wrote {name} ({len(rows)} rows)", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
