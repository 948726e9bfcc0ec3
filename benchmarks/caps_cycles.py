"""CAPS on the paper's protocol (papers/caps.md §4): cycles vs one-shot models on the same cohort.

(Over 400 lines: one script for the protocol, its metrics, statistics, plots and the accounting table.)

Protocol (default): all 6 orders of the 3 cohorts x 5 seeds x epsilon {1, 2, 4} (the paper's 3! x 5 = 30 runs per
epsilon). Each cycle's model is evaluated as in §4.2-4.3: q(y | z1) is tested on the *other* cohorts (balanced
accuracy, MAE of the ordinal classes); AJS compares the cycle's own cohort with its reconstruction and with
conditional generation from prior samples (z2, y). A model at cycle t has seen the earlier cohorts (through M1 and
the replayed rows), which are among the "other cohorts" it is tested on; ``balanced_accuracy_heldout`` is also
measured on a cohort no model ever sees (simulated: 1,000 students at cohort_shift 0.3; OULAD: 1,000 GGG students
of the three presentations outside the cohorts).

Pairing: every cycle t >= 2 is paired with a one-shot model (fresh M1 pre-trained on the public data, one cycle)
of the *same* cohort with the same epsilon and seed: the delta (cycle minus one-shot) removes the cohort from the
comparison. Cycle 1 of a run is such a one-shot model, so the baselines are the cycle-1 models of the runs that
start with that cohort (:func:`baseline_order`; each used once per cycle); the privacy noise is fresh in every fit
(secure noise source), so a run and its baseline share the seed (pre-trained M1, initialisations), not the DP
noise. Intervals are 95 % t-intervals over the runs (30 per epsilon and cycle).

AJS (the paper's formula): mean over the classes c and 16 features f_h of JS(P_c^(h), Q_c^(h)) (base 2). The paper
does not list its f_h; here f_h are 4 time frames x 4 blocks of the semester (weeks 1-4, 5-8, 9-12, 13-17), f_h(x)
= the engagement score of that frame in that block (sum of the ordinal codes inactive 0 / active 1 / dedicated 2:
a learner's habit of that time of day in that part of the semester). On OULAD: 2 channels (clicks, active days) x
8 blocks of two weeks (the last has three). ``ajs_marginal`` (the 68 per-feature marginals) is reported beside it.
Reconstructions are drawn 4 times per learner; conditional generation draws 300 rows per class.

Variants (``VARIANTS``): "caps" is the shipped method; "no_bias_fix" turns prior adaptation off and anchors the
replay on the old M1 (the paper); the others change one default each (ablations). The ablations run on epsilon 1
and 4 and the Latin-square orders 012 / 120 / 201 (every cohort once at every cycle) and are compared with "caps"
run by run (:func:`variant_effect`); blocks are run in priority order (:func:`default_blocks`).

Simulated cohorts: 105 / 111 / 115 students with the paper's schema (``make_learning_habits``, 17 weeks x 4 time
frames, 3 engagement classes, achievement low / middle / high), cohort_shift 0.0 / 0.3 / 0.6. Surrogate public data:
10,000 simulated learners at cohort_shift -0.5 and another seed (the paper: 100,000 LLM-simulated learners; a
surrogate from the private simulator's family is kinder than that). ``expected_cohort_size=110``: the public class
size, as the paper plans DP-SGD from the class size.

OULAD: module GGG, presentations 2013J, 2014B, 2014J (105 / 111 / 115 students drawn from each); 17 weeks x (clicks:
inactive / active / dedicated, active days: none / 1-2 / 3+); final_result as the label. Public pre-training data:
students of the other modules who never took GGG, each channel discretised with that module's own threshold (its
75th percentile of non-zero weekly clicks, resp. active days, from public rows only) so that the top class means a
top-quarter week in every module, as GGG's fixed thresholds (30 clicks, 2 days) roughly do; with GGG's thresholds
applied to all modules the public rows had 32 % "dedicated" weeks against GGG's 11 %.

Usage: python benchmarks/caps_cycles.py [--quick] [--workers 2] [--skip-oulad] [--progress FILE]
       python benchmarks/caps_cycles.py --from-progress FILE   (assemble results from a partial run)
       python benchmarks/caps_cycles.py --accounting-only      (the paper's Table 1 reconstruction)
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, SHARED_DATA, markdown_table, write_results  # noqa: E402

from skdpsynth import TableSchema  # noqa: E402
from skdpsynth.datasets import make_learning_habits  # noqa: E402
from skdpsynth.synthesizers import CAPSSynthesizer  # noqa: E402

SIM_SIZES = (105, 111, 115)
SIM_SHIFTS = (0.0, 0.3, 0.6)
SIM_ORDER = ("low", "middle", "high")
OULAD_ORDER = ("Withdrawn", "Fail", "Pass", "Distinction")
EXPECTED_COHORT = 110
DELTA = 1e-5
METRICS = ("balanced_accuracy", "mae", "ajs_reconstruction", "ajs_generation", "ajs_marginal_reconstruction",
           "ajs_marginal_generation", "balanced_accuracy_heldout")
#: the benchmark's estimator settings beyond the defaults (the defaults are the method as shipped)
CONFIG: dict = {}
QUICK_CONFIG: dict = {"pretrain_epochs": 1, "m1_hidden": (32,), "z1_dim": 8, "epochs": 4, "public_steps": 40,
                      "n_public_samples": 300, "replay_new": 500, "replay_old": 500, "replay_epochs": 1,
                      "label_replay": 300}
#: variants run beside the shipped method ("caps"); each is a set of parameter overrides
VARIANTS: dict = {
    "caps": {},
    # the compounding-bias fix off: no prior adaptation, replay anchored to the old M1's samples (the paper)
    "no_bias_fix": {"adapt_prior": False, "replay_anchor": "model"},
    # ablations of the defaults, one change each (seed 0, epsilon 1 and 4; compared with "caps" run by run)
    "private_all": {"private_part": "all"},
    "small_batch": {"batch_size": 32, "epochs": 30, "private_lr": None},
    "alpha_0": {"alpha": 0.0},
    "alpha_0.1": {"alpha": 0.1},
    "alpha_10": {"alpha": 10.0},
    "replay_model": {"replay_anchor": "model"},
    "no_label_replay": {"label_replay": 0},
    "no_adapt_prior": {"adapt_prior": False},
    "unlabelled_cls": {"unlabelled_trains_classifier": True},
}
#: variants run on two seeds (the others are ablations, on the first seed only)
MAIN_VARIANTS = ("caps", "no_bias_fix")
N_RECON = 4
N_GEN = 300


# -- metrics ---------------------------------------------------------------------------------------
def js_rows(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence (base 2, in [0, 1]) between the rows of two probability matrices."""
    m = 0.5 * (p + q)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl_p = np.where(p > 0, p * np.log2(p / m), 0.0).sum(1)
        kl_q = np.where(q > 0, q * np.log2(q / m), 0.0).sum(1)
    return 0.5 * kl_p + 0.5 * kl_q


def category_codes(frame: pd.DataFrame, columns: list[str], schema: TableSchema) -> np.ndarray:
    """Ordinal codes (n, len(columns)) of categorical columns in their schema order."""
    return np.stack([pd.Categorical(frame[c], categories=schema[c].categories).codes for c in columns], 1)


def habit_features(frame: pd.DataFrame, blocks: list[list[str]], schema: TableSchema) -> np.ndarray:
    """The paper's f_h: per block of (week, channel) columns, the sum of their ordinal codes."""
    return np.stack([category_codes(frame, b, schema).sum(1) for b in blocks], 1)


def _ajs(values_real: np.ndarray, values_syn: np.ndarray, y_real, y_syn, n_values: np.ndarray) -> float:
    """Mean over the classes present in the real rows and over columns of JS(real | y=c, synthetic | y=c)."""
    vals = []
    for c in pd.unique(y_real):
        a, b = values_real[y_real == c], values_syn[y_syn == c]
        if len(a) == 0 or len(b) == 0:
            continue
        k = int(n_values.max())
        p = np.stack([(a == v).mean(0) for v in range(k)], 1)
        q = np.stack([(b == v).mean(0) for v in range(k)], 1)
        vals.append(js_rows(p, q).mean())
    return float(np.mean(vals))


def ajs(real: pd.DataFrame, syn: pd.DataFrame, target: str, blocks: list[list[str]], schema: TableSchema) -> float:
    """The paper's AJS over the 16 habit features ``blocks`` (see the module docstring)."""
    fr, fs = habit_features(real, blocks, schema), habit_features(syn, blocks, schema)
    n_values = np.array([sum(len(schema[c].categories) - 1 for c in b) + 1 for b in blocks])
    return _ajs(fr, fs, real[target].to_numpy(), syn[target].to_numpy(), n_values)


def ajs_marginal(real: pd.DataFrame, syn: pd.DataFrame, target: str, schema: TableSchema) -> float:
    """AJS over every feature's own marginal (the earlier benchmark's metric)."""
    cols = [c for c in real.columns if c != target]
    n_values = np.array([len(schema[c].categories) for c in cols])
    return _ajs(category_codes(real, cols, schema), category_codes(syn, cols, schema), real[target].to_numpy(),
                syn[target].to_numpy(), n_values)


def classify_metrics(est, test: pd.DataFrame, target: str, order) -> tuple[float, float]:
    """Balanced accuracy and MAE (ordinal ranks) of q(y | z1) on ``test``."""
    from sklearn.metrics import balanced_accuracy_score

    pred = est.predict_label(test)
    rank = {c: i for i, c in enumerate(order)}
    mae = float(np.mean(np.abs(np.array([rank[p] for p in pred]) - test[target].map(rank).to_numpy())))
    return float(balanced_accuracy_score(test[target], pred)), mae


def conditional_sample(est, n_per_class: int, seed: int) -> pd.DataFrame:
    """``n_per_class`` rows per label from prior samples (z2, y)."""
    parts = [est.sample(n_per_class, random_state=seed + i, conditions={est.target: c})
             for i, c in enumerate(est.label_space_)]
    return pd.concat(parts, ignore_index=True)


def m1_nll(est, frame: pd.DataFrame) -> float:
    """Diagnostic: M1's reconstruction negative log-likelihood per feature (z1 = encoder mean)."""
    import torch

    codec = est.codec_
    x, codes, nums, obs = codec.encode(codec.schema.validate(frame[list(codec.schema.names)]))
    with torch.no_grad():
        mu, _ = est.m1_.encode(x)
        return float(codec.nll(est.m1_.decoder(mu), est.m1_.logvar(), codes, nums, obs).mean()) / len(codec.schema)


def evaluate(est, cohorts, i: int, data: dict, seed: int) -> dict:
    """One fitted model on cohort ``i``: the paper's metrics plus M1 diagnostics."""
    target, schema, blocks = data["target"], data["schema"], data["blocks"]
    own = cohorts[i]
    others = pd.concat([c for j, c in enumerate(cohorts) if j != i], ignore_index=True)
    ba, mae = classify_metrics(est, others, target, data["order"])
    ba_held, _ = classify_metrics(est, data["heldout"], target, data["order"])
    rec = pd.concat([est.reconstruct(own, random_state=seed * 100 + r) for r in range(N_RECON)], ignore_index=True)
    gen = conditional_sample(est, N_GEN, seed)
    return {"balanced_accuracy": ba, "mae": mae, "balanced_accuracy_heldout": ba_held,
            "ajs_reconstruction": ajs(own, rec, target, blocks, schema),
            "ajs_generation": ajs(own, gen, target, blocks, schema),
            "ajs_marginal_reconstruction": ajs_marginal(own, rec, target, schema),
            "ajs_marginal_generation": ajs_marginal(own, gen, target, schema),
            "m1_nll_cohorts": float(np.mean([m1_nll(est, c) for c in cohorts])),
            "m1_nll_public": m1_nll(est, data["public_holdout"])}


# -- data --------------------------------------------------------------------------------------------
def _blocks(names: list[str], n_weeks: int, channels: list[str], edges: list[int]) -> list[list[str]]:
    """Columns per (channel, block of weeks); ``names[w * len(channels) + k]`` is week w, channel k."""
    out = []
    for k, _ in enumerate(channels):
        for a, b in zip(edges[:-1], edges[1:]):
            out.append([names[w * len(channels) + k] for w in range(a, min(b, n_weeks))])
    return out


def simulated(n_public: int = 10000) -> dict:
    """The simulated case study: cohorts, schema, f_h blocks and the surrogate public data."""
    cohorts = [make_learning_habits(n, cohort_shift=s, random_state=100 + i).frame
               for i, (n, s) in enumerate(zip(SIM_SIZES, SIM_SHIFTS))]
    bunch = make_learning_habits(2, random_state=0)
    feats = list(bunch.feature_names)
    blocks = _blocks(feats, 17, ["morning", "afternoon", "evening", "night"], [0, 4, 8, 12, 17])
    return {"name": "simulated", "cohorts": cohorts, "schema": bunch.schema, "blocks": blocks,
            "target": "achievement", "order": SIM_ORDER,
            "public": make_learning_habits(n_public, cohort_shift=-0.5, random_state=999).data,
            "heldout": make_learning_habits(1000, cohort_shift=0.3, random_state=200).frame,
            "public_holdout": make_learning_habits(1000, cohort_shift=-0.5, random_state=998).data}


def _discretise(clicks: np.ndarray, days: np.ndarray, click_cut, day_cut) -> tuple[np.ndarray, np.ndarray]:
    ccls = np.select([clicks == 0, clicks <= np.asarray(click_cut)[:, None]], ["inactive", "active"], "dedicated")
    dcls = np.select([days == 0, days <= np.asarray(day_cut)[:, None]], ["none", "1-2 days"], "3+ days")
    return ccls, dcls


def _module_cut(values: np.ndarray, mods: np.ndarray, module: str, own: float, q: float) -> dict:
    """Per module: ``own`` for the private module, else the ``q`` quantile of that module's non-zero values."""
    out = {}
    for m in pd.unique(mods):
        v = values[mods == m]
        out[m] = float(own) if m == module else float(np.quantile(v[v > 0], q))
    return out


def oulad(module: str = "GGG", sizes=SIM_SIZES, n_weeks: int = 17, click_cut: int = 30, n_public: int = 10000,
          public_quantile: float = 0.75) -> dict:
    """OULAD cohorts (three presentations of ``module``) and public rows from the other modules."""
    root = SHARED_DATA / "oulad"
    info = pd.read_csv(root / "studentInfo.csv")
    weekly = pd.read_csv(root / "studentVle_weekly.csv.gz")
    weekly = weekly[(weekly.week >= 0) & (weekly.week < n_weeks)]
    key = ["code_module", "code_presentation", "id_student"]
    clicks = weekly.pivot_table(index=key, columns="week", values="sum_click", fill_value=0)
    days = weekly.pivot_table(index=key, columns="week", values="n_active_days", fill_value=0)
    clicks = clicks.reindex(columns=range(n_weeks), fill_value=0)
    days = days.reindex(index=clicks.index, columns=range(n_weeks), fill_value=0)
    mods = clicks.index.get_level_values("code_module")
    # the private module keeps the public schema's thresholds; each public module gets its own, from its own rows
    cuts = _module_cut(clicks.to_numpy(), np.asarray(mods), module, click_cut, public_quantile)
    day_cuts = _module_cut(days.to_numpy(), np.asarray(mods), module, 2, public_quantile)
    ccls, dcls = _discretise(clicks.to_numpy(), days.to_numpy(), np.array([cuts[m] for m in mods]),
                             np.array([day_cuts[m] for m in mods]))
    cols = {}
    for w in range(n_weeks):
        cols[f"w{w:02d}_clicks"] = ccls[:, w]
        cols[f"w{w:02d}_days"] = dcls[:, w]
    feats = pd.DataFrame(cols, index=clicks.index).reset_index()
    frame = info[key + ["final_result"]].merge(feats, on=key, how="left")
    fcols = list(cols)
    for c in fcols:  # students without any VLE record in these weeks: inactive throughout
        frame[c] = frame[c].fillna("inactive" if c.endswith("clicks") else "none")
    spec = {c: {"kind": "categorical", "categories": (["inactive", "active", "dedicated"] if c.endswith("clicks")
                                                       else ["none", "1-2 days", "3+ days"]), "nullable": False}
            for c in fcols}
    spec["final_result"] = {"kind": "categorical", "categories": list(OULAD_ORDER), "nullable": False}
    schema = TableSchema.from_dict(spec)
    mod = frame[frame.code_module == module]
    pres = sorted(mod.code_presentation.unique())[-3:]
    rng = np.random.default_rng(0)
    cohorts, rest = [], []
    for p, n in zip(pres, sizes):
        sub = mod[mod.code_presentation == p]
        pick = rng.permutation(len(sub))
        cohorts.append(sub.iloc[pick[:n]][fcols + ["final_result"]].reset_index(drop=True))
        rest.append(sub.iloc[pick[n:]][fcols + ["final_result"]])
    rest = pd.concat(rest)
    heldout = rest.sample(n=min(1000, len(rest)), random_state=0)
    module_rest = rest.drop(heldout.index).reset_index(drop=True)  # this module's rows in neither (a diagnostic)
    heldout = heldout.reset_index(drop=True)
    public = frame[(frame.code_module != module) & ~frame.id_student.isin(set(mod.id_student))][fcols]
    public = public.sample(frac=1.0, random_state=0).reset_index(drop=True)
    blocks = _blocks(fcols, n_weeks, ["clicks", "days"], [0, 2, 4, 6, 8, 10, 12, 14, 17])
    return {"name": "oulad", "cohorts": cohorts, "schema": schema, "blocks": blocks, "target": "final_result",
            "order": OULAD_ORDER, "heldout": heldout, "module_rest": module_rest,
            "public": public.iloc[:n_public].reset_index(drop=True),
            "public_holdout": public.iloc[n_public:n_public + 1000].reset_index(drop=True),
            "presentations": list(pres), "public_click_cuts": {m: round(v, 1) for m, v in cuts.items()},
            "public_day_cuts": day_cuts}


# -- runs ------------------------------------------------------------------------------------------------
def _estimator(data: dict, eps: float, seed: int, cfg: dict) -> CAPSSynthesizer:
    """The benchmark's estimator; ``cfg`` may override ``delta`` and ``expected_cohort_size`` too."""
    params = {"delta": DELTA, "expected_cohort_size": EXPECTED_COHORT, **cfg}
    return CAPSSynthesizer(epsilon=eps, target=data["target"], schema=data["schema"], public_data=data["public"],
                           random_state=seed, **params)


def _row(est, data, i, eps, seed, extra) -> dict:
    plan = est.dpsgd_[-1]
    return {**extra, "cohort": i, "epsilon": eps, "seed": seed, **evaluate(est, data["cohorts"], i, data, seed),
            "noise_multiplier": plan["noise_multiplier"], "sample_rate": plan["sample_rate"], "steps": plan["steps"],
            "private_parameters": plan["private_parameters"], "epsilon_pld": plan["report"].get("epsilon_pld"),
            "mu": plan["report"].get("mu"), "spent_epsilon": est.privacy_spent_.per_cohort[-1][0]}


def run_task(task: tuple) -> list[dict]:
    """One (data set, variant, epsilon, order, seed): the three cycles (cycle 1 is a one-shot model)."""
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    data_name, variant, eps, order, seed, cfg = task
    data = _DATA[data_name]
    start = time.perf_counter()
    est = _estimator(data, eps, seed, cfg)
    rows = []
    tag = {"data": data_name, "variant": variant, "adapt_prior": est.adapt_prior, "order": "".join(map(str, order)),
           "kind": "caps"}
    for t, i in enumerate(order):
        if t == len(order) - 1:  # nothing follows the last cycle: its generative replay would be unused
            est.set_params(replay_new=0, replay_old=0)
        (est.fit if t == 0 else est.partial_fit)(data["cohorts"][i])
        rows.append(_row(est, data, i, eps, seed, {**tag, "cycle": t + 1}))
    for r in rows:
        r["task_seconds"] = time.perf_counter() - start
    return rows


def baseline_order(order: str, cycle: int) -> str:
    """The run whose cycle 1 is the one-shot baseline of ``order``'s cycle ``cycle``.

    Cycle 1 of a run is a one-shot model (fresh M1 from the public data, one cycle) of its first cohort, fitted
    with the same seed (same pre-trained M1) and fresh DP noise. The two runs that start with cohort c are the
    baselines of the two runs that have c at cycle 2 (and of the two that have it at cycle 3), one each:
    cycle 2 of (a, c, b) is paired with cycle 1 of (c, a, b); cycle 3 of (a, b, c) with cycle 1 of (c, a, b).
    Within a cycle every baseline model is used once, so the 30 deltas of a cycle share no DP noise.
    """
    o = list(order)
    c = o[cycle - 1]
    rest = [x for k, x in enumerate(o) if k != cycle - 1]
    return "".join([c, *rest]) if cycle > 1 else order


_DATA: dict = {}


def _init_worker(datasets: dict) -> None:
    _DATA.update(datasets)


def run_all(tasks: list[tuple], datasets: dict, workers: int, progress: Path | None) -> list[dict]:
    """Run the tasks (in ``workers`` processes), appending each task's rows to ``progress`` as it completes."""
    rows, t0 = [], time.perf_counter()
    if workers <= 1:
        _init_worker(datasets)
        results = map(run_task, tasks)
    else:
        import multiprocessing as mp

        pool = mp.get_context("fork").Pool(workers, initializer=_init_worker, initargs=(datasets,))
        results = pool.imap_unordered(run_task, tasks)  # a stopped run keeps every task that finished
    for k, out in enumerate(results):
        rows += out
        if progress is not None:
            with progress.open("a") as fh:
                fh.write(json.dumps(out, default=str) + "\n")
        r = out[0]
        print(f"[{time.perf_counter() - t0:6.0f}s] {k + 1}/{len(tasks)} {r['data']} {r['variant']} eps={r['epsilon']} "
              f"order={r['order']} seed={r['seed']}", flush=True)
    return rows


# -- statistics -----------------------------------------------------------------------------------------
def t_interval(x) -> tuple[float, float, float]:
    """Mean and 95 % t-interval."""
    from scipy.stats import t as student

    x = np.asarray(x, dtype=float)
    m = float(x.mean())
    if len(x) < 2:
        return m, float("nan"), float("nan")
    half = float(student.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))
    return m, m - half, m + half


def _with_baseline(rows: list[dict]):
    """Each row with the key and row of its one-shot baseline (:func:`baseline_order`); rows without one skipped."""
    df = pd.DataFrame(rows)
    first = df[df.cycle == 1].set_index(["variant", "epsilon", "order", "seed"])
    for _, r in df.iterrows():
        key = (r["variant"], r["epsilon"], baseline_order(r["order"], int(r["cycle"])), r["seed"])
        if key in first.index:  # a partial grid may miss the baseline run
            yield r, key, first.loc[key]


def paired(rows: list[dict]) -> list[dict]:
    """Cycle minus one-shot on the same cohort, epsilon and seed (:func:`baseline_order`); cycle 1: delta 0."""
    out = []
    for r, key, b in _with_baseline(rows):
        assert int(b["cohort"]) == int(r["cohort"])
        rec = {"variant": r["variant"], "epsilon": r["epsilon"], "adapt_prior": bool(r["adapt_prior"]),
               "cycle": int(r["cycle"]), "cohort": int(r["cohort"]), "seed": r["seed"], "order": r["order"],
               "baseline_order": key[2]}
        rec.update({f"delta_{m}": float(r[m] - b[m]) for m in METRICS})
        out.append(rec)
    return out


def oneshot_rows(rows: list[dict]) -> list[dict]:
    """The one-shot baseline of every cycle (a copy of the matching cycle-1 row, tagged with the cycle)."""
    return [{**b.to_dict(), "variant": key[0], "epsilon": key[1], "seed": key[3], "order": r["order"],
             "cycle": int(r["cycle"]), "kind": "oneshot"} for r, key, b in _with_baseline(rows)]


def summarise_paired(pairs: list[dict]) -> list[dict]:
    """Per variant, epsilon and cycle: mean delta and its 95 % interval, for every metric."""
    df = pd.DataFrame(pairs)
    out = []
    for (v, eps, cyc), g in df.groupby(["variant", "epsilon", "cycle"]):
        rec = {"variant": v, "epsilon": eps, "cycle": int(cyc), "n": len(g)}
        for m in METRICS:
            mean, lo, hi = t_interval(g[f"delta_{m}"])
            rec.update({f"d_{m}": mean, f"d_{m}_lo": lo, f"d_{m}_hi": hi})
        out.append(rec)
    return out


def summarise_levels(rows: list[dict]) -> list[dict]:
    """Per variant, kind (caps / one-shot), epsilon and cycle: mean, sd and 95 % interval of each metric."""
    df = pd.DataFrame(rows)
    out = []
    cols = [*METRICS, "m1_nll_cohorts", "m1_nll_public", "noise_multiplier"]
    for (v, kind, eps, cyc), g in df.groupby(["variant", "kind", "epsilon", "cycle"]):
        rec = {"variant": v, "kind": kind, "epsilon": eps, "cycle": int(cyc), "n": len(g)}
        for m in cols:
            mean, lo, hi = t_interval(g[m])
            rec.update({m: mean, f"{m}_sd": float(g[m].std(ddof=1)) if len(g) > 1 else 0.0, f"{m}_lo": lo,
                        f"{m}_hi": hi})
        out.append(rec)
    return out


def epsilon_effect(rows: list[dict], hi: float = 4.0, lo: float = 1.0) -> list[dict]:
    """Balanced accuracy at epsilon ``hi`` minus at ``lo``, paired by variant, kind, order, seed and cycle."""
    df = pd.DataFrame(rows)
    key = ["variant", "kind", "order", "seed", "cycle"]
    a = df[df.epsilon == hi].set_index(key)["balanced_accuracy"]
    b = df[df.epsilon == lo].set_index(key)["balanced_accuracy"]
    d = (a - b).dropna().reset_index()
    out = []
    for (v, kind, cyc), g in d.groupby(["variant", "kind", "cycle"]):
        mean, l95, h95 = t_interval(g["balanced_accuracy"])
        out.append({"variant": v, "kind": kind, "cycle": int(cyc), "n": len(g), "d_balanced_accuracy": mean,
                    "lo": l95, "hi": h95})
    return out


def variant_effect(rows: list[dict], metrics=("balanced_accuracy", "ajs_reconstruction", "ajs_generation"),
                   base: str = "caps") -> list[dict]:
    """Each variant minus ``base`` on the same data, epsilon, order, seed and cycle (an ablation, run by run).

    Cycle 1 compares two one-shot models; cycles >= 2 show what the change does to the cyclic model.
    """
    df = pd.DataFrame(rows)
    key = ["epsilon", "order", "seed", "cycle"]
    ref = df[df.variant == base].set_index(key)
    out = []
    for v, g in df[df.variant != base].groupby("variant"):
        d = (g.set_index(key)[list(metrics)] - ref[list(metrics)]).dropna().reset_index()
        for (eps, cyc), h in d.groupby(["epsilon", "cycle"]):
            rec = {"variant": v, "epsilon": eps, "cycle": int(cyc), "n": len(h)}
            for m in metrics:
                mean, lo, hi = t_interval(h[m])
                rec.update({f"d_{m}": mean, f"d_{m}_lo": lo, f"d_{m}_hi": hi})
            out.append(rec)
    return out


# -- accounting (paper's Table 1, for the settings run) ----------------------------------------------
def accounting_rows(rows: list[dict]) -> list[dict]:
    """dpsgd_privacy_report of every DP-SGD plan run, at the run's delta and at the paper's delta 1e-3."""
    from skdpsynth.privacy import dpsgd_privacy_report

    plans = sorted({(r["epsilon"], r["noise_multiplier"], r["sample_rate"], int(r["steps"])) for r in rows})
    out = []
    for eps, sigma, q, steps in plans:
        for delta in (DELTA, 1e-3):
            rep = dpsgd_privacy_report(noise_multiplier=sigma, sample_rate=q, steps=steps, delta=delta)
            out.append({"epsilon_requested": eps, **rep})
    return out


# -- plots -----------------------------------------------------------------------------------------------
def _errorbars(ax, levels: pd.DataFrame, metric: str) -> None:
    colours = {eps: f"C{k}" for k, eps in enumerate(sorted(levels["epsilon"].unique()))}
    for (eps, kind), sub in levels.groupby(["epsilon", "kind"]):
        sub = sub.sort_values("cycle")
        err = [sub[metric] - sub[f"{metric}_lo"], sub[f"{metric}_hi"] - sub[metric]]
        one = kind == "oneshot"
        ax.errorbar(sub["cycle"] + (0.06 if one else 0), sub[metric], yerr=err, marker="o", color=colours[eps],
                    mfc="white" if one else colours[eps], capsize=3, linestyle=":" if one else "-",
                    label=f"ε={eps:g} {'one-shot (same cohort)' if kind == 'oneshot' else 'CAPS'}")
    ax.set_xlabel("cycle")
    ax.set_xticks(sorted(levels["cycle"].unique()))


def plot_figures(levels: list[dict], pairs_summary: list[dict], prefix: Path, title: str, chance: float) -> list[str]:
    """Fig. 2 (balanced accuracy, MAE), Fig. 3 (AJS reconstruction, generation) and the paired deltas."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lv, ps = pd.DataFrame(levels), pd.DataFrame(pairs_summary)
    paths = []
    for fig_name, metrics in (("fig2", ("balanced_accuracy", "mae")), ("fig3", ("ajs_reconstruction",
                                                                                "ajs_generation"))):
        sub = lv[lv.variant == "caps"]
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
        for ax, m in zip(axes, metrics):
            _errorbars(ax, sub, m)
            ax.set_title(m.replace("_", " ") + " (mean, 95 % CI)")
        if fig_name == "fig2":
            axes[0].axhline(chance, color="grey", lw=0.8, ls="--")
        axes[0].legend(fontsize=7)
        fig.suptitle(title)
        fig.tight_layout()
        path = prefix.with_name(prefix.name + f"_{fig_name}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path.name)
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.6))
    for ax, m in zip(axes, ("balanced_accuracy", "mae", "ajs_reconstruction", "ajs_generation")):
        for (v, eps), sub in ps[ps.variant.isin(MAIN_VARIANTS)].groupby(["variant", "epsilon"]):
            sub = sub.sort_values("cycle")
            err = [sub[f"d_{m}"] - sub[f"d_{m}_lo"], sub[f"d_{m}_hi"] - sub[f"d_{m}"]]
            ax.errorbar(sub["cycle"] + (0.08 if v != "caps" else 0), sub[f"d_{m}"], yerr=err, marker="o",
                        capsize=3, linestyle="-" if v == "caps" else "--", label=f"{v} ε={eps:g}")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title(f"Δ {m.replace('_', ' ')} (cycle − one-shot)")
        ax.set_xlabel("cycle")
        ax.set_xticks(sorted(ps["cycle"].unique()))
    axes[0].legend(fontsize=7)
    fig.suptitle(title + ": paired deltas, 95 % CI")
    fig.tight_layout()
    path = prefix.with_name(prefix.name + "_paired.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path.name)
    return paths


PAPER_TABLE_1 = {1.0: (0.83, 0.35, 0.43e-2), 2.0: (1.75, 0.63, 0.24e-2), 4.0: (3.49, 1.12, 0.96e-2)}


def accounting(quick: bool) -> None:
    """The paper's Table 1 (delta 1e-3): reconstruct each row's unpublished (sample rate, steps) by search."""
    from skdpsynth.privacy import dpsgd_privacy_report
    from skdpsynth.privacy._dpsgd import calibrate_noise_multiplier, dpsgd_accounting_table

    rates = [0.05, 0.3] if quick else [0.05, 0.1, 0.3]
    steps = [100, 500] if quick else [100, 200, 500, 1000]
    best, tried = [], []
    for eps, (e_tight, mu, regret) in PAPER_TABLE_1.items():
        cands = []
        for q, T in itertools.product(rates, steps):
            sigma = calibrate_noise_multiplier(epsilon=eps, delta=1e-3, sample_rate=q, steps=T, epsilon_tolerance=1e-3)
            r = dpsgd_privacy_report(noise_multiplier=sigma, sample_rate=q, steps=T, delta=1e-3)
            r["mismatch"] = abs(r["epsilon_pld"] - e_tight) / e_tight + abs(r["mu"] - mu) / mu + abs(
                r["regret"] - regret) / regret
            cands.append(r)
            tried.append({"target_epsilon_rdp": eps, **r})
            print(f"accounting eps={eps} q={q} T={T}: pld={r['epsilon_pld']:.3f} mu={r['mu']:.3f} "
                  f"regret={r['regret']:.4f}", flush=True)
        best.append(min(cands, key=lambda r: r["mismatch"]))
    ref = dpsgd_privacy_report(noise_multiplier=9.4, sample_rate=0.328, steps=2000, delta=1e-5)
    paper = ["| ε (RDP) | ε (tight) | μ | Δ (regret) |", "|---|---|---|---|"] + [
        f"| {e} | {v[0]} | {v[1]} | {v[2] * 100:.2f}·10⁻² |" for e, v in PAPER_TABLE_1.items()]
    md = ["# DP-SGD accounting (papers/caps.md, Table 1)", "",
          "Paper (delta = 1e-3; sample rate and steps not published):", "", *paper, "",
          f"Reconstruction: for each row, RDP-calibrated noise over sample rates {rates} x steps {steps}; the "
          "setting closest to the paper's row (sum of relative errors of tight epsilon, mu, regret):", "",
          dpsgd_accounting_table(best), "",
          "Reference example (Gomez et al. 2025; METHODS.md: mu 1.5686, regret 0.00102):", "",
          dpsgd_accounting_table([ref], digits=4), "",
          "All settings tried: `caps_accounting.json`."]
    write_results("caps_accounting_quick" if quick else "caps_accounting",
                  {"paper": {str(k): v for k, v in PAPER_TABLE_1.items()}, "best": best, "tried": tried,
                   "reference": ref}, "\n".join(md))


def timing(quick: bool) -> None:
    """Seconds of one cycle (115 x 68) and of M1 pre-training on 100,000 rows at the default parameters."""
    from _common import measure

    data = simulated(2000 if quick else 10000)
    cohorts, schema = data["cohorts"], data["schema"]
    rows = []
    for threads in (1,):  # the grid runs one torch thread per worker; 2 threads were slower on the shared cores
        import torch

        torch.set_num_threads(threads)
        est = CAPSSynthesizer(epsilon=1.0, delta=DELTA, target="achievement", schema=schema,
                              public_data=data["public"], expected_cohort_size=EXPECTED_COHORT,
                              random_state=threads).fit(cohorts[0])
        _, cycle_s, cycle_mb = measure(lambda e=est: e.partial_fit(cohorts[2]))
        n_pub = 10_000 if quick else 100_000
        big = make_learning_habits(n_pub, cohort_shift=-0.5, random_state=7).data
        pre = CAPSSynthesizer(epsilon=1.0, delta=DELTA, target="achievement", schema=schema, public_data=big,
                              expected_cohort_size=EXPECTED_COHORT, random_state=10 + threads, replay_new=0,
                              replay_old=0)
        _, whole, _ = measure(lambda e=pre: e.fit(cohorts[0]))
        rows.append({"torch_threads": threads, "cycle_seconds_115x68": cycle_s, "cycle_peak_mib": cycle_mb,
                     "pretrain_rows": n_pub, "fit_seconds_pretrain_plus_cycle_without_replay": whole,
                     "dpsgd_steps": est.dpsgd_[-1]["steps"]})
        print(rows[-1], flush=True)
    write_timing(rows, quick)


def write_timing(rows: list[dict], quick: bool = False) -> None:
    """caps_timing.{json,md} from :func:`timing`'s rows."""
    write_results("caps_timing_quick" if quick else "caps_timing", {"rows": rows}, "\n".join([
        "# CAPS timing at the default parameters", "",
        "One cycle = partial_fit on 115 students x 68 features (SPSSL, prior adaptation, generative replay). "
        "Pre-training = fit with 100,000 public rows plus one cycle without replay. Shared 2-core machine.", "",
        markdown_table(rows, digits=4)]))


# -- targets and report ------------------------------------------------------------------------------
def targets(pairs_summary: list[dict], eps_effect: list[dict], last: int) -> list[dict]:
    """The issue's targets, each with the figure it is judged on (variant "caps" unless named)."""
    ps = pd.DataFrame(pairs_summary)
    caps, out = ps[ps.variant == "caps"], []
    for _, r in caps[caps.cycle >= 2].iterrows():
        out.append({"target": f"Δ balanced accuracy > 0, CI above 0 (ε={r.epsilon:g}, cycle {r.cycle})",
                    "value": f"{r.d_balanced_accuracy:+.3f} [{r.d_balanced_accuracy_lo:+.3f}, "
                             f"{r.d_balanced_accuracy_hi:+.3f}] (n={r.n})",
                    "met": bool(r.d_balanced_accuracy_lo > 0)})
    for _, r in caps[caps.cycle == last].iterrows():
        out.append({"target": f"reconstruction AJS below the one-shot at the last cycle (ε={r.epsilon:g})",
                    "value": f"{r.d_ajs_reconstruction:+.4f} [{r.d_ajs_reconstruction_lo:+.4f}, "
                             f"{r.d_ajs_reconstruction_hi:+.4f}]",
                    "met": bool(r.d_ajs_reconstruction_hi < 0)})
    for _, r in caps[caps.cycle == last].iterrows():
        out.append({"target": f"generation AJS no worse than the one-shot at the last cycle (ε={r.epsilon:g})",
                    "value": f"{r.d_ajs_generation:+.4f} [{r.d_ajs_generation_lo:+.4f}, {r.d_ajs_generation_hi:+.4f}]",
                    "met": bool(r.d_ajs_generation <= 0)})
    for r in eps_effect:
        if r["variant"] == "caps":
            out.append({"target": f"ε 4 beats ε 1 beyond noise ({r['kind']}, cycle {r['cycle']})",
                        "value": f"{r['d_balanced_accuracy']:+.3f} [{r['lo']:+.3f}, {r['hi']:+.3f}] (n={r['n']})",
                        "met": bool(r["lo"] > 0)})
    return out


_LEVEL_COLS = ["variant", "kind", "epsilon", "cycle", "n", "balanced_accuracy", "balanced_accuracy_heldout", "mae",
               "ajs_reconstruction",
               "ajs_generation", "ajs_marginal_generation", "m1_nll_cohorts", "m1_nll_public", "noise_multiplier"]
_PAIR_COLS = ["variant", "epsilon", "cycle", "n", "d_balanced_accuracy", "d_balanced_accuracy_lo",
              "d_balanced_accuracy_hi", "d_balanced_accuracy_heldout", "d_balanced_accuracy_heldout_lo",
              "d_balanced_accuracy_heldout_hi", "d_mae", "d_ajs_reconstruction", "d_ajs_reconstruction_lo",
              "d_ajs_reconstruction_hi", "d_ajs_generation", "d_ajs_generation_lo", "d_ajs_generation_hi"]


def report(rows: list[dict], data: dict, prefix: Path, title: str) -> tuple[dict, list[str]]:
    """Summaries, targets, accounting and figures of one data set's rows: (payload part, markdown lines)."""
    from skdpsynth.privacy._dpsgd import dpsgd_accounting_table

    pairs = paired(rows)
    ps, lv, ee = summarise_paired(pairs), summarise_levels(rows + oneshot_rows(rows)), epsilon_effect(rows)
    ve = variant_effect(rows)
    last = int(max(r["cycle"] for r in rows))
    acct = accounting_rows(rows)
    figs = plot_figures(lv, ps, prefix, title, chance=1 / len(data["order"]))
    tg = targets(ps, ee, last)
    part = {"rows": rows, "paired": pairs, "paired_summary": ps, "summary": lv, "epsilon_effect": ee,
            "variant_effect": ve, "targets": tg, "accounting": acct, "figures": figs}
    md = [f"## {title}", "", "### Targets", "", markdown_table(tg, digits=3), "",
          "### Paired deltas (cycle − one-shot on the same cohort, same ε and seed; mean and 95 % interval)", "",
          markdown_table(ps, columns=_PAIR_COLS, digits=3), "",
          "### Levels (mean over runs; one-shot = fresh model on the same cohort)", "",
          markdown_table(lv, columns=_LEVEL_COLS, digits=4), "",
          "### ε 4 minus ε 1 (balanced accuracy, paired by order, seed and cycle)", "",
          markdown_table(ee, digits=3) if ee else "(one ε only)", "",
          "### Variants and ablations minus the shipped method (same ε, order, seed and cycle; 95 % interval)",
          "", markdown_table(ve, digits=3) if ve else "(no variant run)", "",
          "### DP-SGD accounting of the settings run (paper's Table 1 columns)", "",
          dpsgd_accounting_table(acct), "", "Figures: " + ", ".join(f"`{f}`" for f in figs), ""]
    return part, md


#: the ablations' orders: a Latin square (every cohort once at every cycle), half the cost of all six
LATIN_ORDERS = [(0, 1, 2), (1, 2, 0), (2, 0, 1)]


def tasks_for(blocks: list[tuple], epsilons, orders, cfg) -> list[tuple]:
    """Tasks block by block, each block = (data set, variant, seed, epsilons or None, orders or None).

    Blocks are handed out in the given order, so a run stopped early holds the first blocks (whole, up to
    the tasks in flight).
    """
    return [(d, v, eps, order, seed, {**cfg, **VARIANTS[v]})
            for d, v, seed, eps_list, ords in blocks for eps in (eps_list or epsilons) for order in (ords or orders)]


def default_blocks(seeds: list[int], variants: list[str], oulad_seeds: list[int], with_oulad: bool,
                   ablation_seeds: list[int] | None = None) -> list[tuple]:
    """Priority: the method on simulated cohorts (3 seeds), OULAD (first seed), the rest of the seeds, then the
    bias-fix-off variant (epsilon 1 and 4, first seed), the ablations (epsilon 1 and 4, first seed, the
    Latin-square orders), the bias-fix-off variant's second seed and OULAD's second seed; then the
    ablations' further seeds, OULAD's further seeds and the bias-fix-off variant's further seeds."""
    ablation_seeds = seeds[:1] if ablation_seeds is None else ablation_seeds
    first, rest = seeds[:3], seeds[3:]
    second = [v for v in variants if v in MAIN_VARIANTS[1:]]
    ablations = [v for v in variants if v not in MAIN_VARIANTS]
    blocks = [("simulated", "caps", s, None, None) for s in first]
    blocks += [("oulad", "caps", s, None, None) for s in oulad_seeds[:1] if with_oulad]
    blocks += [("simulated", "caps", s, None, None) for s in rest]
    blocks += [("simulated", v, s, [1.0, 4.0], None) for v in second for s in seeds[:1]]
    blocks += [("simulated", v, s, [1.0, 4.0], LATIN_ORDERS) for v in ablations for s in ablation_seeds[:1]]
    blocks += [("simulated", v, s, [1.0, 4.0], None) for v in second for s in seeds[1:2]]
    blocks += [("oulad", "caps", s, None, None) for s in oulad_seeds[1:2] if with_oulad]
    blocks += [("simulated", v, s, [1.0, 4.0], LATIN_ORDERS) for s in ablation_seeds[1:] for v in ablations]
    blocks += [("oulad", "caps", s, None, None) for s in oulad_seeds[2:] if with_oulad]
    blocks += [("simulated", v, s, [1.0, 4.0], None) for v in second for s in seeds[2:]]
    return blocks


def load_progress(path: Path) -> list[dict]:
    """Rows of the completed tasks of a (possibly partial) run."""
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            rows += json.loads(line)
    return rows


def write_all(rows: list[dict], datasets: dict, grid: dict, name: str, note: str) -> None:
    """The results JSON (``grid``, ``simulated_paired``, ...), markdown and figures."""
    payload: dict = {"grid": grid, "note": note}
    md = ["# CAPS on the paper's protocol" + (" (quick smoke run)" if grid.get("quick") else ""), "", note, "",
          "Protocol, metrics and data: see the docstring of `benchmarks/caps_cycles.py`.", ""]
    for key, title in (("simulated", "Simulated cohorts (105 / 111 / 115 students, 68 features)"),
                       ("oulad", "OULAD GGG (3 presentations, 34 features)")):
        sub = [r for r in rows if r.get("data") == key]
        if not sub:
            continue
        part, lines = report(sub, datasets[key], RESULTS / name.replace("caps_cycles", f"caps_cycles_{key}"),
                             title)
        payload.update({f"{key}_{k}": v for k, v in part.items()})
        if key == "oulad":
            payload["oulad_presentations"] = datasets[key]["presentations"]
            payload["oulad_public_click_cuts"] = datasets[key]["public_click_cuts"]
        md += lines
    write_results(name, payload, "\n".join(md))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 4 orders, 1 seed, epsilon 1 and 4, tiny model")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--epsilons", default="1,2,4")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--skip-oulad", action="store_true")
    ap.add_argument("--oulad-seeds", type=int, default=5)
    ap.add_argument("--ablation-seeds", type=int, default=3)
    ap.add_argument("--progress", type=Path, default=None, help="append each task's rows to this JSONL file")
    ap.add_argument("--from-progress", type=Path, default=None, help="assemble results from a progress file")
    ap.add_argument("--resume", action="store_true", help="skip the tasks already in --progress")
    ap.add_argument("--note", default="")
    ap.add_argument("--accounting-only", action="store_true", help="only the paper's Table 1 reconstruction")
    ap.add_argument("--timing-only", action="store_true", help="time one cycle and M1 pre-training")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    if args.accounting_only:
        accounting(args.quick)
        return
    if args.timing_only:
        timing(args.quick)
        return
    cfg = dict(QUICK_CONFIG if args.quick else CONFIG)
    orders = list(itertools.permutations(range(3)))
    seeds = list(range(1 if args.quick else args.seeds))
    epsilons = [1.0, 4.0] if args.quick else [float(e) for e in args.epsilons.split(",")]
    variants = ["caps"] if args.quick else args.variants.split(",")
    if args.quick:  # the orders whose cycles 2 and 3 have their one-shot baselines among them
        orders = [(0, 1, 2), (1, 0, 2), (2, 0, 1), (2, 1, 0)]
    datasets = {"simulated": simulated(1000 if args.quick else 10000)}
    if not args.skip_oulad and (SHARED_DATA / "oulad" / "studentVle_weekly.csv.gz").exists():
        datasets["oulad"] = oulad(n_public=1000 if args.quick else 10000)
    blocks = default_blocks(seeds, variants, seeds[:args.oulad_seeds], "oulad" in datasets,
                            seeds[:args.ablation_seeds])
    tasks = tasks_for(blocks, epsilons, orders, cfg)
    grid = {"orders": ["".join(map(str, o)) for o in orders], "seeds": seeds, "epsilons": epsilons,
            "variants": {v: VARIANTS[v] for v in variants}, "adapt_prior": sorted({VARIANTS[v].get(
                "adapt_prior", True) for v in variants}), "config": cfg, "expected_cohort_size": EXPECTED_COHORT,
            "delta": DELTA, "oulad_seeds": seeds[:args.oulad_seeds] if "oulad" in datasets else [],
            "quick": args.quick, "tasks": len(tasks),
            "blocks": [{"data": d, "variant": v, "seed": s, "epsilons": e or epsilons,
                        "orders": ["".join(map(str, o)) for o in (ords or orders)]} for d, v, s, e, ords in blocks]}
    name = "caps_cycles_quick" if args.quick else "caps_cycles"
    if args.from_progress is not None:
        rows = load_progress(args.from_progress)
    else:
        start = time.perf_counter()
        rows = load_progress(args.progress) if args.resume and args.progress.exists() else []
        have = {(r["data"], r["variant"], r["epsilon"], r["order"], r["seed"]) for r in rows}
        todo = [t for t in tasks if (t[0], t[1], t[2], "".join(map(str, t[3])), t[4]) not in have]
        rows += run_all(todo, datasets, args.workers, args.progress)
        grid["wall_seconds_last_session"] = round(time.perf_counter() - start)
    done = {(r["data"], r["variant"], r["epsilon"], r["order"], r["seed"]) for r in rows}
    grid["tasks_completed"] = len(done)
    note = args.note or (f"Grid: {len(done)} of {len(tasks)} tasks (data x variant x ε x order x seed) completed; "
                         "see `grid` for what each task is.")
    write_all(rows, datasets, grid, name, note)
    print(f"wrote {RESULTS / name}.json ({len(rows)} rows)", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
