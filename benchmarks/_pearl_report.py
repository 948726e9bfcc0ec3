"""The PEARL grid's report: the paper's figures and ours side by side, with a reason for every difference.

Intervals. Approved counts are counted per seed (one seed = the whole grid once) and summarised by their mean
over seeds with a 95 % Student-t interval (seeds are the independent replicates). Failure and approval
*rates* pool every audited setting of all seeds and carry a 95 % Wilson score interval over settings: it
treats settings as independent, which they are not quite (the same dataset x method x epsilon recurs once per
seed), so it is narrower than an interval clustered by seed would be; the per-seed table beside it shows the
spread between seeds.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

import numpy as np
from _common import markdown_table
from _pearl_methods import display_name
from _pearl_reasons import differences, setup_lines
from scipy import stats

__all__ = ["summarise", "markdown", "PAPER", "t_interval", "wilson"]

#: the paper's figures (papers/pearl.md, sections 3-4)
PAPER = {
    "settings": 96, "approved": 12, "privacy": 45, "utility": 34, "task": 12,
    "approved_by_dataset": {"UCI 697 + OULAD (tables)": 9, "UCI 856": 0, "ACT-MOOC": 3, "ASSISTments / EdNet": 0},
    "markov_classifier_retention": (0.922, 0.997), "markov_gru_retention": (0.943, 0.978), "kt_real_f1": 0.61,
    "pategan_fairness": (3, 5, 0.244),
}
TASK_CHECKS = ("sequence_task", "knowledge_tracing")
CHECK_ORDER = ("privacy_guarantee", "validity", "privacy", "utility", "sequence_task", "knowledge_tracing",
               "fairness")
GROUP = {"uci_dropout": "UCI 697 + OULAD (tables)", "oulad": "UCI 697 + OULAD (tables)", "uci_hesp": "UCI 856",
         "oulad_clicks": "ACT-MOOC", "kt_bkt": "ASSISTments / EdNet"}


def _ok(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r.get("status") == "ok"]


def _coverage(ok: list[dict], plan: list[dict]) -> list[dict]:
    """Planned vs audited settings per dataset and method (labels a partial grid)."""
    want = Counter((s["dataset"], display_name(s["method"])) for s in plan)
    have = Counter((r["dataset"], r["display"]) for r in ok)
    return [{"dataset": d, "method": m, "planned": n, "audited": have.get((d, m), 0)} for (d, m), n in want.items()]


def t_interval(values: list[float], level: float = 0.95) -> dict[str, Any]:
    """Mean of ``values`` (one per seed) with its Student-t interval; no interval from a single value."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        return {"mean": None, "low": None, "high": None, "n": 0, "values": []}
    mean = sum(xs) / n
    if n == 1:
        return {"mean": mean, "low": None, "high": None, "n": 1, "values": xs}
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": n, "values": xs}


def wilson(k: int, n: int, z: float = 1.959963984540054) -> dict[str, Any]:
    """``k`` of ``n`` as a rate with its 95 % Wilson score interval."""
    if n == 0:
        return {"k": k, "n": 0, "rate": None, "low": None, "high": None}
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return {"k": k, "n": n, "rate": p, "low": max(0.0, centre - half), "high": min(1.0, centre + half)}


def _fails(r: dict, check: str) -> bool:
    if check == "task":
        return any(c in TASK_CHECKS for c in r["failed_checks"])
    if check == "strict_privacy":
        return not r["strict_privacy"]["passed"]
    return check in r["failed_checks"]


def _applies(rs: list[dict], check: str) -> bool:
    names = TASK_CHECKS if check == "task" else ("privacy",) if check == "strict_privacy" else (check,)
    return any((r["checks"].get(c) or {}).get("applicable") for r in rs for c in names)


RATE_CHECKS = ("privacy", "strict_privacy", "utility", "task", "fairness", "validity", "privacy_guarantee")


def _rates(rs: list[dict]) -> dict[str, Any]:
    """Approval and per-check failure rates of a set of settings (Wilson), checks that never applied left out."""
    out = {"approved": wilson(sum(r["approved"] for r in rs), len(rs)),
           "approved_strict": wilson(sum(r["approved_strict"] for r in rs), len(rs))}
    for c in RATE_CHECKS:
        if _applies(rs, c):
            out[c] = wilson(sum(_fails(r, c) for r in rs), len(rs))
    return out


def _per_seed(ok: list[dict], seeds: list[int], key: str = "approved") -> dict[str, Any]:
    by = Counter(r["seed"] for r in ok if r[key])
    return t_interval([by.get(s, 0) for s in seeds])


def summarise(rows: list[dict], planned: int, plan: list[dict] | None = None) -> dict[str, Any]:
    """Counts of the grid: approvals under both privacy rules, failures by check, checks that could not run.

    With several seeds: approved counts per seed with their mean and 95 % t interval over seeds (overall, per
    dataset and per method), and approval / per-check failure rates with 95 % Wilson intervals over settings.
    """
    ok = _ok(rows)
    fails = Counter(c for r in ok for c in r["failed_checks"])
    task = sum(any(c in TASK_CHECKS for c in r["failed_checks"]) for r in ok)
    strict_priv = sum(not r["strict_privacy"]["passed"] for r in ok)
    seeds = sorted({int(s["seed"]) for s in (plan or ok)})
    by_seed = []
    for seed in seeds:
        rs = [r for r in ok if r["seed"] == seed]
        f = Counter(c for r in rs for c in r["failed_checks"])
        by_seed.append({"seed": seed, "planned": sum(int(s["seed"]) == seed for s in plan or []),
                        "audited": len(rs), "approved": sum(r["approved"] for r in rs),
                        "approved_strict": sum(r["approved_strict"] for r in rs),
                        "failures_by_check": {c: f[c] for c in CHECK_ORDER if f[c]},
                        "task_failures": sum(_fails(r, "task") for r in rs),
                        "strict_privacy_failures": sum(_fails(r, "strict_privacy") for r in rs)})
    datasets = list(dict.fromkeys(r["dataset"] for r in ok))
    methods = list(dict.fromkeys(r["display"] for r in ok))
    return {
        "planned": planned, "audited": len(ok), "errors": len(rows) - len(ok),
        "approved": sum(r["approved"] for r in ok), "approved_strict": sum(r["approved_strict"] for r in ok),
        "failures_by_check": {c: fails[c] for c in CHECK_ORDER if fails[c]}, "task_failures": task,
        "strict_privacy_failures": strict_priv,
        "seeds": seeds, "by_seed": by_seed,
        "settings_per_seed": t_interval([b["audited"] for b in by_seed]),
        "approved_per_seed": _per_seed(ok, seeds), "approved_strict_per_seed": _per_seed(ok, seeds, "approved_strict"),
        "failures_per_seed": {c: t_interval([sum(_fails(r, c) for r in ok if r["seed"] == s) for s in seeds])
                              for c in RATE_CHECKS if _applies(ok, c)},
        "rates": _rates(ok),
        "by_dataset": {d: {"approved_per_seed": _per_seed([r for r in ok if r["dataset"] == d], seeds),
                           "rates": _rates([r for r in ok if r["dataset"] == d])} for d in datasets},
        "by_method": {m: {"approved_per_seed": _per_seed([r for r in ok if r["display"] == m], seeds),
                          "rates": _rates([r for r in ok if r["display"] == m])} for m in methods},
        "could_not_run": [{"dataset": r["dataset"], "method": r["method"], "epsilon": r["epsilon"], "seed": r["seed"],
                           "checks": r["could_not_run"]} for r in ok if r["could_not_run"]],
        "ledgers_verified": all(r.get("ledger_ok") for r in ok),
        "coverage": _coverage(ok, plan or []),
    }


def _ci(t: dict[str, Any], digits: int = 1) -> str:
    """``mean [low, high]`` of :func:`t_interval` (the values alone for one seed)."""
    if not t or t["mean"] is None:
        return "-"
    if t["low"] is None:
        return f"{t['mean']:g}"
    return f"{t['mean']:.{digits}f} [{t['low']:.{digits}f}, {t['high']:.{digits}f}]"


def _mean(t: dict[str, Any]) -> str:
    """The mean alone (settings per seed: the same in every complete seed)."""
    return "-" if not t or t["mean"] is None else f"{t['mean']:g}"


def _pct(w: dict[str, Any] | None) -> str:
    """``k/n = p % [low, high]`` of :func:`wilson`."""
    if not w or w["rate"] is None:
        return "-"
    return f"{w['k']}/{w['n']} = {100 * w['rate']:.0f} % [{100 * w['low']:.0f}, {100 * w['high']:.0f}]"


def _paper(count: int) -> str:
    return f"{count} = {100 * count / PAPER['settings']:.0f} %"


def _side_by_side(s: dict) -> list[dict]:
    """The paper's RQ2 counts (of 96) beside ours: per seed (mean, t interval) and as a rate (Wilson)."""
    r, per = s["rates"], s.get("failures_per_seed", {})
    n = s["settings_per_seed"]
    rows = [{"": "settings audited", "paper (of 96)": PAPER["settings"],
             "ours per seed": _mean(n) + (f" x {len(s['seeds'])} seeds" if len(s["seeds"]) > 1 else ""),
             "ours, rate over all settings": f"{s['audited']} settings"}]
    spec = [("approved", "approved", PAPER["approved"], s["approved_per_seed"], r.get("approved")),
            ("approved (strict: any exact copy fails)", "-", PAPER["approved"], s["approved_strict_per_seed"],
             r.get("approved_strict")),
            ("failed privacy (ours: members copied no more than non-members, AUC <= 0.55)", "privacy",
             PAPER["privacy"], per.get("privacy"), r.get("privacy")),
            ("failed privacy (strict, the paper's rule: AUC > 0.55 or any exact copy)", "-", PAPER["privacy"],
             per.get("strict_privacy"), r.get("strict_privacy")),
            ("failed utility (TSTR/TRTR, missing class, no-skill floor)", "utility", PAPER["utility"],
             per.get("utility"), r.get("utility")),
            ("failed task (GRU; DKT / SAKT)", "task", PAPER["task"], per.get("task"), r.get("task"))]
    for label, _, paper, t, w in spec:
        rows.append({"": label, "paper (of 96)": _paper(paper),
                     "ours per seed": _ci(t) if t else "- (no such check ran)",
                     "ours, rate over all settings": _pct(w) if w else "-"})
    for label, key, paper in [("failed fairness", "fairness", "not counted (PATE-GAN eps 10: 3 of 5 seeds)"),
                              ("failed validity", "validity", "not reported"),
                              ("failed formal privacy guarantee", "privacy_guarantee", "no such check")]:
        rows.append({"": label, "paper (of 96)": paper,
                     "ours per seed": _ci(per[key]) if key in per else "- (no such check ran)",
                     "ours, rate over all settings": _pct(r.get(key)) if key in r else "-"})
    rows.append({"": "a check could not run", "paper (of 96)": "-", "ours per seed": "-",
                 "ours, rate over all settings": f"{len(s['could_not_run'])} settings"})
    return rows


def _by_seed_table(s: dict) -> list[dict]:
    out = []
    for b in s["by_seed"]:
        f = b["failures_by_check"]
        out.append({"seed": b["seed"], "audited": f"{b['audited']} of {b['planned']}" if b["planned"] else
                    b["audited"], "approved": b["approved"], "approved (strict)": b["approved_strict"],
                    "privacy": f.get("privacy", 0), "privacy (strict)": b["strict_privacy_failures"],
                    "utility": f.get("utility", 0), "task": b["task_failures"], "fairness": f.get("fairness", 0),
                    "validity": f.get("validity", 0), "guarantee": f.get("privacy_guarantee", 0)})
    return out


def _by_dataset(ok: list[dict], s: dict) -> list[dict]:
    out = []
    for group, paper in PAPER["approved_by_dataset"].items():
        names = [d for d in s["by_dataset"] if GROUP.get(d) == group]
        rs = [r for r in ok if GROUP.get(r["dataset"]) == group]
        if not rs:
            out.append({"paper dataset": group, "ours": "- (not in this run)", "settings per seed": "-",
                        "paper approved": paper, "ours approved per seed": "-", "ours approved, rate": "-",
                        "strict": "-"})
            continue
        per = _per_seed(rs, s["seeds"])
        out.append({"paper dataset": group, "ours": ", ".join(names) or "-",
                    "settings per seed": _mean(t_interval([sum(r["seed"] == x for r in rs) for x in s["seeds"]])),
                    "paper approved": paper, "ours approved per seed": _ci(per),
                    "ours approved, rate": _pct(wilson(sum(r["approved"] for r in rs), len(rs))),
                    "strict": _pct(wilson(sum(r["approved_strict"] for r in rs), len(rs)))})
    return out


def _rates_table(groups: dict[str, dict], label: str) -> list[dict]:
    """Per dataset or method: approved per seed (t) and each check's failure rate (Wilson)."""
    out = []
    for name, g in groups.items():
        r = g["rates"]
        out.append({label: name, "settings": r["approved"]["n"], "approved per seed": _ci(g["approved_per_seed"]),
                    "approved": _pct(r["approved"]),
                    **{c.replace("_", " "): _pct(r.get(c)) for c in RATE_CHECKS}})
    return out


def _cells(ok: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in ok:
        groups[(r["dataset"], r["display"], r["epsilon"])].append(r)
    out = []
    for (d, m, e), rs in groups.items():
        fails = Counter(c for r in rs for c in r["failed_checks"])
        out.append({"dataset": d, "method": m, "epsilon": e, "settings": len(rs),
                    "approved": sum(r["approved"] for r in rs),
                    "approved strict": sum(r["approved_strict"] for r in rs),
                    "failed checks (count)": ", ".join(f"{c} {n}" for c, n in sorted(fails.items())) or "-"})
    return out


def _detail(r: dict, check: str, key: str) -> Any:
    return ((r["checks"].get(check) or {}).get("details") or {}).get(key)


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _sequence_rows(ok: list[dict]) -> list[dict]:
    out = []
    for r in ok:
        if r["dataset"] != "oulad_clicks":
            continue
        out.append({"method": r["display"], "epsilon": r["epsilon"], "seed": r["seed"],
                    "classifier retention (TSTR/TRTR)": _num(_detail(r, "utility", "ratio")),
                    "GRU retention": _num(_detail(r, "sequence_task", "retention")),
                    "GRU macro-F1 syn / real": f"{_num(_detail(r, 'sequence_task', 'gru_f1_synthetic')):.3f} / "
                                               f"{_num(_detail(r, 'sequence_task', 'gru_f1_real')):.3f}",
                    "approved": r["approved"]})
    return out


def _kt_rows(ok: list[dict]) -> list[dict]:
    out = []
    for r in ok:
        if r["dataset"] != "kt_bkt":
            continue
        models = _detail(r, "knowledge_tracing", "models") or {}
        row = {"method": r["display"], "epsilon": r["epsilon"], "seed": r["seed"]}
        for k, v in models.items():
            row[f"{k.upper()} macro-F1 syn / real / floor"] = (f"{_num(v['f1_synthetic']):.3f} / "
                                                             f"{_num(v['f1_real']):.3f} / "
                                                             f"{_num(v['majority_floor']):.3f}")
            row[f"{k.upper()} AUC syn / real"] = f"{_num(v['auc_synthetic']):.3f} / {_num(v['auc_real']):.3f}"
        row["task passed"] = r["checks"].get("knowledge_tracing", {}).get("passed")
        out.append(row)
    return out


def _fairness_rows(ok: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in ok:
        f = r["checks"].get("fairness")
        if f is not None:
            groups[(r["dataset"], r["display"])].append(r)
    out = []
    for (d, m), rs in groups.items():
        app = [r for r in rs if r["checks"]["fairness"]["applicable"]]
        gap = [_num(_detail(r, "fairness", "synthetic_trained_worst_gap")) for r in app]
        real = [_num(_detail(r, "fairness", "real_trained_worst_gap")) for r in app]
        out.append({"dataset": d, "method": m, "settings": len(rs), "applicable": len(app),
                    "failed": sum(not r["checks"]["fairness"]["passed"] for r in app),
                    "mean worst gap (synthetic-trained)": float(np.nanmean(gap)) if gap else float("nan"),
                    "mean worst gap (real-trained)": float(np.nanmean(real)) if real else float("nan")})
    return out


def _range(vals: list[float]) -> str:
    vals = [v for v in vals if np.isfinite(v)]
    return f"{min(vals):.3f}-{max(vals):.3f}" if vals else "n/a"


def _figures(ok: list[dict]) -> list[dict]:
    seq = _sequence_rows(ok)
    mk = [r for r in seq if r["method"] == "DP-Markov"]
    hs = [r for r in seq if r["method"] == "DP-HistSeq"]
    pate = [r for r in ok if r["display"] == "PATE-GAN" and r["epsilon"] == 10.0 and "fairness" in r["checks"]
            and r["checks"]["fairness"]["applicable"]]
    pf = [r for r in pate if not r["checks"]["fairness"]["passed"]]
    gaps = [_num(_detail(r, "fairness", "synthetic_trained_worst_gap")) for r in pf]
    kt = [r for r in ok if r["dataset"] == "kt_bkt"]
    kt_real = [_num(v["f1_real"]) for r in kt for v in (_detail(r, "knowledge_tracing", "models") or {}).values()]
    kt_pass = sum(bool(r["checks"].get("knowledge_tracing", {}).get("passed")) for r in kt)
    return [
        {"figure": "DP-Markov classifier retention (ACT-MOOC / OULAD clicks)", "paper": "0.922-0.997",
         "ours": _range([r["classifier retention (TSTR/TRTR)"] for r in mk])},
        {"figure": "DP-Markov GRU retention", "paper": "0.943-0.978", "ours": _range([r["GRU retention"] for r in mk])},
        {"figure": "DP-HistSeq classifier retention", "paper": "above 1.0 (order-free artifact)",
         "ours": _range([r["classifier retention (TSTR/TRTR)"] for r in hs])},
        {"figure": "DP-HistSeq GRU retention", "paper": "not reported separately",
         "ours": _range([r["GRU retention"] for r in hs])},
        {"figure": "KT real-data macro-F1 (DKT / SAKT)", "paper": "about 0.61", "ours": _range(kt_real)},
        {"figure": "KT releases where DKT and SAKT both learned (task passed)", "paper": "0 (none)",
         "ours": f"{kt_pass} of {len(kt)}"},
        {"figure": "PATE-GAN eps 10: fairness failures / mean worst-group recall gap", "paper": "3 of 5 seeds / 0.244",
         "ours": f"{len(pf)} of {len(pate)} settings ("
                 + ", ".join(sorted({r["dataset"] for r in pate})) + " x seeds) / "
                 + (f"{np.mean(gaps):.3f}" if gaps else "n/a")},
    ]


def _timing_lines(rows: list[dict], timing: dict[str, Any]) -> list[str]:
    inv = timing.get("invocations") or []
    if not inv:
        return ["Wall time: not recorded (rows from an older progress file)."]
    runs = "; ".join(f"{r['date']} on {r.get('cpus')} CPUs, n_jobs {r.get('n_jobs')}, {r['settings_run']} settings "
                     f"in {r['wall_s'] / 60:.1f} min (commit {str(r.get('commit'))[:10]}, 1-min load at the end "
                     f"{r.get('load_1min_at_end')})" for r in inv)
    changed = timing.get("code_changed_since_run") or []
    warn = ([f"**Warning: {len(changed)} file(s) that the run imported changed after it** ("
             + ", ".join(f"`{c}`" for c in changed[:8]) + (", ..." if len(changed) > 8 else "")
             + "): these rows describe the code of the run, not the code as it is now.", ""] if changed else [])
    return warn + [f"**Wall time: {timing['wall_s'] / 60:.1f} min** over {len(inv)} invocation(s): {runs}. The audited "
            f"settings took {timing['worker_cpu_s'] / 60:.1f} min of worker CPU time and "
            f"{timing['worker_wall_s'] / 60:.1f} min of worker wall time."]


def markdown(rows: list[dict], summary: dict, *, skipped: list[dict], quick: bool, seeds: int,
             timing: dict[str, Any] | None = None, name: str = "pearl_grid", n_jobs: int = 1,
             datasets: list[str] | None = None) -> str:
    """The report (written to ``results/NAME.md``)."""
    ok = _ok(rows)
    s = summary
    timing = timing or {}
    complete = s["audited"] == s["planned"]
    per_seed = ", ".join(f"seed {b['seed']}: {b['approved']} of {b['audited']}" for b in s["by_seed"])
    head = [
        "# PEARL audit grid" + (" (quick smoke run: tiny data, not comparable to the paper)" if quick else ""),
        "",
        *_timing_lines(rows, timing),
        "",
        (f"**Grid size: {s['audited']} of {s['planned']} planned settings audited**"
         + ("" if complete else " (a subset: the rest did not finish; `--resume` continues)")
         + f"; seeds 0-{seeds - 1}, {_mean(s['settings_per_seed'])} settings per seed."
         if not quick else f"**{s['audited']} settings.**"),
        "",
        f"**Approved per seed: {_ci(s['approved_per_seed'])}** ("
        + (f"mean [95 % t interval over {len(s['seeds'])} seeds]; " if len(s["seeds"]) > 1 else "one seed, no "
           "interval: ") + f"{per_seed}) under our privacy rule (members copied no more often than non-members); "
        f"**{_ci(s['approved_strict_per_seed'])}** under the paper's strict rule (any exact copy fails). Over all "
        f"settings: {_pct(s['rates']['approved'])} approved (95 % Wilson interval over settings); the paper: "
        f"{_paper(PAPER['approved'])} of 96.",
        "",
        "Intervals: counts per seed are a mean with a 95 % Student-t interval over seeds (a seed is one pass over "
        "the whole grid); rates pool the settings of all seeds with a 95 % Wilson interval, which treats settings "
        "as independent (the same cell recurs once per seed), so it is narrower than an interval clustered by "
        "seed. A one-seed run has no interval.",
        "",
    ]
    errors = [r for r in rows if r.get("status") != "ok"]
    parts = head + setup_lines(quick, seeds, n_jobs, name, datasets) + [
        "## The paper's table and ours, side by side", "", markdown_table(_side_by_side(s)), "",
        "Failures overlap (a release can fail several checks), as in the paper. The paper's 96 settings span its "
        "seeds; ours per seed is one pass over our grid.", "",
        "### Per seed", "", markdown_table(_by_seed_table(s)), "",
        "### Approved by dataset, the paper's grouping", "", markdown_table(_by_dataset(ok, s)), "",
        "### Per dataset: approved per seed (t) and failure rates (Wilson)", "",
        markdown_table(_rates_table(s["by_dataset"], "dataset")) if ok else "(none)", "",
        "### Per method: approved per seed (t) and failure rates (Wilson)", "",
        markdown_table(_rates_table(s["by_method"], "method")) if ok else "(none)", "",
        "A dash: the check never applies there (e.g. the task checks on tables).", "",
        "## Differences from the paper, named", "", *differences(ok, s, skipped), "",
        "## The paper's other figures against ours", "", markdown_table(_figures(ok)), "",
    ]
    seq, kt, fair = _sequence_rows(ok), _kt_rows(ok), _fairness_rows(ok)
    if seq:
        parts += ["### Sequences (OULAD clickstreams, the paper's ACT-MOOC setting)", "", markdown_table(seq), ""]
    if kt:
        parts += ["### Knowledge tracing (BKT simulator)", "", markdown_table(kt), ""]
    if fair:
        parts += ["### Fairness (at-risk recall by protected group)", "", markdown_table(fair), ""]
    if not complete and s["coverage"]:
        parts += ["## Coverage of this subset (planned vs audited settings)", "", markdown_table(s["coverage"]), ""]
    parts += ["## Per cell (dataset x method x epsilon, over seeds)", "",
              markdown_table(_cells(ok)) if ok else "(none)", ""]
    if skipped:
        parts += ["## Not run (by design)", "", markdown_table(skipped), ""]
    parts += ["## Checks that could not run", "",
              (markdown_table(s["could_not_run"]) if s["could_not_run"] else "None: every check of every audited "
               "setting ran to a verdict."), ""]
    if errors:
        parts += ["## Settings that errored", "",
                  markdown_table([{k: r.get(k) for k in ("dataset", "method", "epsilon", "seed", "error")}
                                  for r in errors]), ""]
    parts += ["Every audit was appended to a hash-chained ledger per setting (in `--ledger-dir`, by default a "
              "scratch folder that is not kept: about 40 kB a setting); each row of the JSON keeps its ledger's name, "
              "entry count and head hash "
              f"(all verified when written: {s['ledgers_verified']})."]
    return "\n".join(parts)
