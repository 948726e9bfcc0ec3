"""The published figures and result files: README.md's Measured table, every docs span, the rerun commands.

Kept apart from the helpers in :mod:`benchmarks.registry` (which benchmarks import to compute intervals) so
that editing a figure or the list of allowed stale files changes no code a benchmark depends on. A document
with many figures of its own keeps them in ``benchmarks/_figures_<document>.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from benchmarks import _figures_aim, _figures_audit, _figures_caps, _figures_datasets, _figures_domain, _figures_npgc
from benchmarks.registry import (
    Figure,
    Value,
    ci_from_sd,
    interval,
    mean_ci,
    one,
    select,
    table_figure,
    value_range,
    values,
)


def _npgc_utility(dataset: str, method: str, field: str) -> Callable[[dict[str, Any]], Value]:
    """Mean [95 % t interval] over seeds of one method's field (rows of ``npgc_mst_utility`` or ``npgc_utility``)."""
    return lambda p: mean_ci(r[field] for r in select(p["rows"], dataset=dataset, method=method))


def _reference_fit(table: str, version: str) -> Callable[[dict[str, Any]], float]:
    return lambda p: one(p["reference"], table=table, epsilon=1.0, version=version)["fit_s"]


def _sampling(method: str) -> Callable[[dict[str, Any]], Value]:
    return lambda p: value_range(r["sample_n_s"] for r in select(p["rows"], dataset="adult", method=method))


def _side(dataset: str, method: str, field: str) -> Callable[[dict[str, Any]], Value]:
    def read(p: dict[str, Any]) -> Value:
        row = one(p["aggregate"], dataset=dataset, method=method)
        if field == "tstr":
            return ci_from_sd(row["tstr"], row.get("tstr_sd"), int(row["seeds"]))
        return Value(row[field])
    return read


def _per_seed(dataset: str, method: str, field: str) -> Callable[[dict[str, Any]], Value]:
    """One method's ``field`` in every seed of a side-by-side run, in seed order."""
    return lambda p: values(r[field] for r in sorted(select(p["rows"], dataset=dataset, method=method),
                                                     key=lambda r: r["seed"]))


def _ratio(dataset: str, ours: str, against: str, field: str) -> Callable[[dict[str, Any]], float]:
    return lambda p: one(p["ratios"], dataset=dataset, ours=ours, against=against)[field]


def _regeneration_drop(method: str) -> Callable[[dict[str, Any]], float]:
    def read(p: dict[str, Any]) -> float:
        curve = sorted(select(p["table"], method=method), key=lambda r: r["generation"])
        return 100 * (curve[-1]["overall"] - curve[0]["overall"])
    return read


def _regeneration_at(method: str, first: bool) -> Callable[[dict[str, Any]], float]:
    def read(p: dict[str, Any]) -> float:
        curve = sorted(select(p["table"], method=method), key=lambda r: r["generation"])
        return curve[0 if first else -1]["overall"]
    return read


def _kt(data: str, epsilon: Any, field: str = "macro_f1", model: str = "DKT") -> Callable[[dict[str, Any]], float]:
    return lambda p: one(p["knowledge_tracing"], model=model, data=data, epsilon=epsilon)[field]


_SEQ = {"o1": "DP-Markov o1", "o2": "DP-Markov o2", "histseq": "DP-HistSeq"}
_EPS3 = (1.0, 5.0, 10.0)


def _seq_tv(method: str, field: str = "transition_tv") -> Callable[[dict[str, Any]], Value]:
    return lambda p: values(one(p["oulad_aaa"], method=method, epsilon=e)[field] for e in _EPS3)


def _kt_list(data: str, model: str = "DKT") -> Callable[[dict[str, Any]], Value]:
    return lambda p: values(one(p["knowledge_tracing"], model=model, data=data, epsilon=e)["macro_f1"] for e in _EPS3)


def _gru_list(data: str, field: str = "gru_macro_f1") -> Callable[[dict[str, Any]], Value]:
    return lambda p: values(one(p["gru"], data=data, epsilon=e)[field] for e in _EPS3)


def _sequence_figures() -> list[Figure]:
    src = "sequences.json"
    figs = [
        Figure("seq.fit_s", src, lambda p: value_range(r["fit_s"] for r in p["oulad_aaa"]), ".2f", " s"),
        Figure("seq.sample_s", src, lambda p: value_range(r["sample_1000_s"] for r in p["oulad_aaa"]), ".2f", " s"),
        Figure("seq.label_tv.o1", src, lambda p: value_range(
            r["label_tv"] for r in select(p["oulad_aaa"], method="DP-Markov o1")), ".3f"),
        Figure("seq.label_tv.others.eps5_10", src, lambda p: value_range(
            r["label_tv"] for r in p["oulad_aaa"] if r["method"] != "DP-Markov o1" and r["epsilon"] >= 5), ".3f"),
        Figure("seq.label_tv.others.eps1", src, lambda p: value_range(
            r["label_tv"] for r in p["oulad_aaa"] if r["method"] != "DP-Markov o1" and r["epsilon"] == 1), ".2f"),
        Figure("seq.scaling.o1", src, lambda p: values(
            r["fit_s"] for r in sorted(select(p["scaling"], data="simulated", method="DP-Markov o1"),
                                       key=lambda r: r["events"])), ".3g"),
        Figure("seq.scaling.oulad_weekly", src, lambda p: one(p["scaling"], method="DP-Markov o1", data=next(
            r["data"] for r in p["scaling"] if r["data"].startswith("OULAD weekly")))["fit_s"], ".2f", " s"),
        Figure("kt.sakt.real", src, _kt("real", "-", model="SAKT"), ".3f"),
        Figure("kt.dkt.real.3", src, _kt("real", "-"), ".3f"),
        Figure("kt.majority.3", src, _kt("real", "-", "majority_macro_f1"), ".3f"),
        Figure("kt.fit_s.dkt", src, lambda p: p["kt_info"]["fit_seconds"]["DKT"], ".0f", " s"),
        Figure("kt.fit_s.sakt", src, lambda p: p["kt_info"]["fit_seconds"]["SAKT"], ".0f", " s"),
        Figure("gru.real", src, lambda p: one(p["gru"], data="real")["gru_macro_f1"], ".3f"),
        Figure("gru.o1", src, _gru_list("DP-Markov o1"), ".3f"),
        Figure("gru.o1.retention", src, _gru_list("DP-Markov o1", "retention"), ".2f"),
        Figure("gru.histseq", src, _gru_list("DP-HistSeq"), ".2f"),
    ]
    for short, method in _SEQ.items():
        figs.append(Figure(f"seq.tv.{short}", src, _seq_tv(method), ".3f"))
        figs.append(Figure(f"kt.dkt.{short}", src, _kt_list(method), ".3f"))
        figs.append(Figure(f"kt.sakt.{short}.eps10", src, _kt(method, 10.0, model="SAKT"), ".3f"))
        if short != "histseq":
            figs += [Figure(f"kt.dkt.{short}.eps{e:g}", src, _kt(method, e), ".3f") for e in (1.0, 10.0)]
    return figs


_REF_METHODS = {"ours": "skdpsynth.NPGC", "ref": "npgc (reference)"}
_REF_EPS = (0.5, 1.0, 2.0, 5.0, 10.0)
_REGEN = {"nonprivate": "skdpsynth.NPGC (non-private)", "eps10": "skdpsynth.NPGC (eps=10)",
          "reference": "npgc reference (non-private)", "copula": "Gaussian copula (copulas)", "ctgan": "CTGAN",
          "tvae": "TVAE"}


def _ref_rows(p: dict[str, Any], ds: str, who: str) -> list[dict[str, Any]]:
    return select(p["rows"], dataset=ds, method=_REF_METHODS[who])


def _npgc_reference_figures() -> list[Figure]:
    src = "npgc_reference.json"
    figs = []
    for ds in ("adult", "uci_dropout"):
        for who in _REF_METHODS:
            for field in ("quality", "column_shapes", "pair_trends"):
                figs.append(Figure(f"npgcref.{ds}.{who}.none.{field}", src,
                                   lambda p, d=ds, w=who, f=field: one(_ref_rows(p, d, w), epsilon="None")[f]))
            figs.append(Figure(f"npgcref.{ds}.{who}.eps", src, lambda p, d=ds, w=who: values(
                one(_ref_rows(p, d, w), epsilon=e)["quality"] for e in _REF_EPS)))
        figs.append(Figure(f"npgcref.{ds}.speedup", src, lambda p, d=ds: value_range(
            r["sampling speed-up (n rows)"] for r in select(p["speed"], dataset=d)), ".0f", "x"))
    figs += [
        Figure("npgcref.adult.ours.fit_s", src, lambda p: value_range(
            r["fit_s"] for r in _ref_rows(p, "adult", "ours")), ".1f", " s"),
        Figure("npgcref.adult.ours.sample_1m_s", src, lambda p: value_range(
            r["sample_1m_s"] for r in _ref_rows(p, "adult", "ours")), ".0f", " s"),
        Figure("npgcref.adult.ref.sample_1m_min", src, lambda p: value_range(
            r["sample_1m_s"] / 60 for r in _ref_rows(p, "adult", "ref")), ".0f", " min"),
        Figure("npgcref.adult.ours.sample_1m_gib", src, lambda p: value_range(
            r["sample_1m_peak_mib"] / 1024 for r in _ref_rows(p, "adult", "ours")), ".1f", " GiB"),
    ]
    for who in _REF_METHODS:
        figs += [Figure(f"npgcref.uci_dropout.{who}.sample_n_s", src, lambda p, w=who: value_range(
                     r["sample_n_s"] for r in _ref_rows(p, "uci_dropout", w)), ".2f"),
                 Figure(f"npgcref.uci_dropout.{who}.sample_1m_s", src, lambda p, w=who: value_range(
                     r["sample_1m_s"] for r in _ref_rows(p, "uci_dropout", w)), ".0f"),
                 Figure(f"npgcref.uci_dropout.{who}.sample_1m_gib", src, lambda p, w=who: value_range(
                     r["sample_1m_peak_mib"] / 1024 for r in _ref_rows(p, "uci_dropout", w)), ".1f", " GiB")]
    return figs


def _regeneration_figures() -> list[Figure]:
    figs = []
    for key, method in _REGEN.items():
        figs += [Figure(f"regen2k.{key}.first", "regeneration.json", _regeneration_at(method, True)),
                 Figure(f"regen2k.{key}.last", "regeneration.json", _regeneration_at(method, False)),
                 Figure(f"regen2k.{key}.loss", "regeneration.json",
                        lambda p, m=method: -_regeneration_drop(m)(p), ".2f")]
    figs += [Figure("regen.nonprivate.loss", "regeneration_n10000.json",
                    lambda p: -_regeneration_drop(_REGEN["nonprivate"])(p), ".2f"),
             Figure("regen.eps10.loss", "regeneration_n10000.json",
                    lambda p: -_regeneration_drop(_REGEN["eps10"])(p), ".1f")]
    return figs


def _scaling_figures() -> list[Figure]:
    src = "npgc_scaling_adult.json"

    def row(n: int, version: str, field: str) -> Callable[[dict[str, Any]], float]:
        return lambda p: one(p["rows"], table="adult", n=n, version=version)[field]

    def ratio(table: str, epsilon: float | None) -> Callable[[dict[str, Any]], float]:
        def read(p: dict[str, Any]) -> float:
            rows = select(p["reference"], table=table, epsilon=epsilon)
            return one(rows, version="after")["fit_s"] / one(rows, version="npgc 0.3.0")["fit_s"]
        return read

    return [
        Figure("npgcscal.1e6.after.fit_s", src, row(1000000, "after", "fit_s"), ".2f", " s"),
        Figure("npgcscal.1e6.after.mib", src, row(1000000, "after", "peak_mib"), ".0f", " MiB"),
        Figure("npgcscal.1e6.before.fit_s", src, row(1000000, "before", "fit_s"), ".2f", " s"),
        Figure("npgcscal.1e6.before.mib", src, row(1000000, "before", "peak_mib"), ".0f", " MiB"),
        Figure("npgcscal.1e5.after.fit_s", src, row(100000, "after", "fit_s"), ".2f", " s"),
        Figure("npgcscal.1e4.after.fit_s", src, row(10000, "after", "fit_s"), ".2f", " s"),
        Figure("npgcscal.1e4.before.fit_s", src, row(10000, "before", "fit_s"), ".2f", " s"),
        Figure("npgc.fit_ratio.uci_dropout.eps1", "npgc_scaling.json", ratio("uci_dropout (70 % split)", 1.0),
               ".2f", "x"),
        Figure("npgc.fit_ratio.uci_dropout.none", "npgc_scaling.json", ratio("uci_dropout (70 % split)", None),
               ".2f", "x"),
        Figure("npgc.fit_ratio.adult.eps1", "npgc_scaling.json", ratio("adult (70 % split)", 1.0), ".2f", "x"),
    ]


_SBS = {"aim": "AIM", "aim_x4": "AIM (target x4)", "pgm_aim": "private-pgm AIM"}
_SBS_SOURCES = {"uci_dropout": "tabular_side_by_side_pgm_jax.json", "adult": "tabular_side_by_side_pgm_jax_adult.json"}


def _aim_side_by_side_figures() -> list[Figure]:
    """docs/aim.md's table: our AIM and private-pgm's AIM, epsilon 1, 3 seeds each (mean, sd over seeds)."""
    figs = []
    fields = (("quality", ".3f", ""), ("shapes", ".3f", ""), ("pairs", ".3f", ""), ("workload_error", ".3f", ""),
              ("fit_cpu_s", "sig3", ""), ("peak_rss_mib", ",.0f", ""))
    for ds, src in _SBS_SOURCES.items():
        for key, method in _SBS.items():
            figs.append(Figure(f"sbs.{ds}.{key}.tstr_sd", src, lambda p, d=ds, m=method: (lambda r: Value(
                r["tstr"], kind="sd", sd=r["tstr_sd"]))(one(p["aggregate"], dataset=d, method=m))))
            figs += [Figure(f"sbs.{ds}.{key}.{field}", src, _side(ds, method, field), spec, unit)
                     for field, spec, unit in fields]
        figs += [
            Figure(f"sbs.{ds}.trtr", src, _side(ds, "AIM", "trtr")),
            Figure(f"sbs.{ds}.tstr_ratio", src, _ratio(ds, "AIM", "private-pgm AIM", "TSTR ours / theirs"), ".2f"),
            Figure(f"sbs.{ds}.quality_ratio", src, _ratio(ds, "AIM", "private-pgm AIM", "SDMetrics ours / theirs"),
                   ".2f"),
        ]
    figs += [
        Figure("sbs.uci_dropout.pgm_aim.seeds", _SBS_SOURCES["uci_dropout"],
               _per_seed("uci_dropout", "private-pgm AIM", "tstr"), ".3f"),
        Figure("sbs.adult.aim.pairs_seeds", _SBS_SOURCES["adult"], _per_seed("adult", "AIM", "pairs"), ".3f"),
    ]
    return figs


def _audit_speed_table(p: dict[str, Any]) -> str:
    """docs/audit.md's table of audit_speed.json: seconds and verdict per release, the task named once."""
    rows, previous = [], None
    for r in p["rows"]:
        tabular = r["task"].startswith("tabular")
        if r["task"] == previous:
            task = ""
        elif tabular:
            task = (f"tabular audit, UCI dropout ({r['n_train']:,} train + {r['n_holdout']:,} holdout, 37 columns; "
                    "4 checks)")
        else:
            task = (f"DKT + SAKT check, {r['n_train']:,} + {r['n_holdout']:,} simulated learners, "
                    f"{r['n_train']:,}-learner release (4 model fits)")
        previous = r["task"]
        if r["approved"]:
            verdict = "approved" if tabular else "passed"
        elif tabular:
            check = r["reasons"].split(":")[0]
            verdict = f"rejected (utility {r['tstr_trtr']:.3f})" if check == "utility" else f"rejected ({check})"
        else:
            verdict = "rejected"
        release = r["release"].replace("eps=", "epsilon ")
        rows.append([task, release, f"{r['seconds']:.1f}", verdict])
    return table_figure(["task", "release", "seconds", "verdict"], rows)


def _audit_check_seconds(field: str) -> Callable[[dict[str, Any]], Value]:
    return lambda p: value_range(r[field] for r in p["rows"] if r["task"].startswith("tabular"))


_TAB_METHODS = ("DPMarginals", "MST", "NPGC", "DPCTGAN", "PATEGAN", "CTGAN", "TVAE")
_TAB_DP = ("DPMarginals", "MST", "NPGC", "DPCTGAN", "PATEGAN")
_TAB_DATASETS = ("adult", "oulad", "uci_dropout", "uci_hesp")


def _g3(x: Any) -> str:
    """A cell as the benchmark's own tables write it (3 significant digits; empty when missing)."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return ""
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def _tabular_cell(p: dict[str, Any], ds: str, method: str, eps: float | None, field: str) -> float | None:
    rows = [r for r in p["rows"] if r["dataset"] == ds and r["method"] == method and r.get("epsilon") == eps
            and r["status"] == "ok" and _g3(r.get(field))]
    return sum(r[field] for r in rows) / len(rows) if rows else None


def _tabular_metric_table(field: str) -> Callable[[dict[str, Any]], str]:
    """docs/choosing.md's table of one metric of tabular.json: a row per method, a column per (dataset, eps)."""
    def read(p: dict[str, Any]) -> str:
        cols = [(ds, eps) for ds in _TAB_DATASETS for eps in (1.0, 10.0, None)]
        head = ["method", *(f"{ds} eps {'none' if e is None else e}" for ds, e in cols)]
        return table_figure(head, [[m, *(_g3(_tabular_cell(p, ds, m, e, field)) for ds, e in cols)]
                                     for m in _TAB_METHODS])
    return read


def _tabular_speed_table(p: dict[str, Any]) -> str:
    """docs/choosing.md's fit-time table of tabular.json (epsilon 1; CTGAN / TVAE non-private)."""
    methods = (("NPGC", 1.0), ("MST", 1.0), ("DPMarginals", 1.0), ("DPCTGAN", 1.0), ("PATEGAN", 1.0),
               ("CTGAN", None), ("TVAE", None))
    rows = []
    for ds in dict.fromkeys(r["dataset"] for r in p["rows"]):
        fit = {m: _tabular_cell(p, ds, m, e, "fit_s") for m, e in methods}
        n = one([r for r in p["rows"] if r["dataset"] == ds], method="NPGC", epsilon=1.0)["n_train"]
        ratios = [fit[m] / fit["NPGC"] if fit[m] and fit["NPGC"] else None for m in ("CTGAN", "TVAE", "MST")]
        rows.append([ds, str(n), *(_g3(fit[m]) for m, _ in methods), *(_g3(r) for r in ratios)])
    return table_figure(["dataset", "rows", "NPGC s", "MST s", "DP-Marginals s", "DP-CTGAN s", "PATE-GAN s",
                           "CTGAN s", "TVAE s", "CTGAN/NPGC", "TVAE/NPGC", "MST/NPGC"], rows)


def _tab_point(ds: str, method: str, eps: float | None, field: str) -> Callable[[dict[str, Any]], float]:
    def read(p: dict[str, Any]) -> float:
        value = _tabular_cell(p, ds, method, eps, field)
        if value is None:
            raise KeyError(f"no {field} for {ds} {method} eps {eps}")
        return value
    return read


def _tab_range(datasets: tuple[str, ...], methods: tuple[str, ...], field: str) -> Callable[[dict[str, Any]], Value]:
    """The range of ``field`` over every epsilon (and seed) of ``methods`` on ``datasets``."""
    return lambda p: value_range(r[field] for r in p["rows"] if r["dataset"] in datasets and r["method"] in methods
                                 and r["status"] == "ok" and _g3(r.get(field)))


def _tab_ratio(datasets: tuple[str, ...], methods: tuple[str, ...], base: str = "NPGC"
               ) -> Callable[[dict[str, Any]], Value]:
    """The range of fit-time ratios method / ``base`` (``base`` at epsilon 1, CTGAN / TVAE non-private)."""
    def read(p: dict[str, Any]) -> Value:
        out = []
        for ds in datasets:
            ref = _tabular_cell(p, ds, base, 1.0, "fit_s")
            for m in methods:
                fit = _tabular_cell(p, ds, m, None if m in ("CTGAN", "TVAE") else 1.0, "fit_s")
                out.append(fit / ref)
        return value_range(out)
    return read


def _tabular_prose_figures() -> list[Figure]:
    src = "tabular.json"
    big = ("uci_dropout", "oulad", "adult")
    return [
        Figure("tab.deep_vs_npgc.big", src, _tab_ratio(big, ("CTGAN", "TVAE")), ".0f", "x"),
        Figure("tab.ctgan_vs_npgc.adult", src, _tab_ratio(("adult",), ("CTGAN",)), ".0f", "x"),
        Figure("tab.tvae_vs_npgc.adult", src, _tab_ratio(("adult",), ("TVAE",)), ".0f", "x"),
        Figure("tab.ctgan_vs_npgc.hesp", src, _tab_ratio(("uci_hesp",), ("CTGAN",)), ".0f", "x"),
        Figure("tab.tvae_vs_npgc.hesp", src, _tab_ratio(("uci_hesp",), ("TVAE",)), ".0f", "x"),
        Figure("tab.mst_vs_npgc", src, _tab_ratio(_TAB_DATASETS, ("MST",)), ".2f", "x"),
        Figure("tab.dpctgan_vs_npgc", src, _tab_ratio(_TAB_DATASETS, ("DPCTGAN",)), ".0f", "x"),
        Figure("tab.mst.quality.oulad.eps1", src, _tab_point("oulad", "MST", 1.0, "quality"), ".2f"),
        Figure("tab.npgc.quality.uci_dropout.eps1", src, _tab_point("uci_dropout", "NPGC", 1.0, "quality"), ".2f"),
        Figure("tab.npgc.quality.uci_dropout.eps10", src, _tab_point("uci_dropout", "NPGC", 10.0, "quality"), ".2f"),
        Figure("tab.mst.quality.adult.eps1", src, _tab_point("adult", "MST", 1.0, "quality")),
        Figure("tab.npgc.quality.adult.eps1", src, _tab_point("adult", "NPGC", 1.0, "quality")),
        Figure("tab.ctgan.quality.adult", src, _tab_point("adult", "CTGAN", None, "quality"), ".2f"),
        Figure("tab.npgc.tstr.adult.eps1", src, _tab_point("adult", "NPGC", 1.0, "tstr_ratio"), ".2f"),
        Figure("tab.mst.tstr.adult.eps1", src, _tab_point("adult", "MST", 1.0, "tstr_ratio"), ".2f"),
        Figure("tab.mst.tstr.uci_dropout", src, _tab_range(("uci_dropout",), ("MST",), "tstr_ratio"), ".2f"),
        Figure("tab.npgc.tstr.uci_dropout", src, _tab_range(("uci_dropout",), ("NPGC",), "tstr_ratio"), ".2f"),
        Figure("tab.mst_npgc.tstr.oulad", src, _tab_range(("oulad",), ("MST", "NPGC"), "tstr_ratio"), ".2f"),
        Figure("tab.marginals.tstr.big", src, _tab_range(big, ("DPMarginals",), "tstr_ratio"), ".2f"),
        Figure("tab.dpctgan.quality", src, _tab_range(_TAB_DATASETS, ("DPCTGAN",), "quality"), ".1f"),
        Figure("tab.pategan.quality", src, _tab_range(_TAB_DATASETS, ("PATEGAN",), "quality"), ".2f"),
        Figure("tab.membership.big", src, _tab_range(big, _TAB_METHODS, "membership_auc"), ".2f"),
        *[Figure(f"tab.pategan_fixed.quality.{ds}.eps10", "tabular_pategan_fixed.json",
                 _tab_point(ds, "PATEGAN", 10.0, "quality"), ".2f") for ds in ("uci_dropout", "oulad", "uci_hesp")],
        Figure("tab.pategan_fixed.quality.eps1", "tabular_pategan_fixed.json", lambda p: value_range(
            r["quality"] for r in p["rows"] if r["epsilon"] == 1.0), ".2f"),
        Figure("tab.pategan_fixed.tstr", "tabular_pategan_fixed.json",
               _tab_range(_TAB_DATASETS, ("PATEGAN",), "tstr_ratio"), ".2f"),
        Figure("tab.membership.hesp.dp", src, _tab_range(("uci_hesp",), _TAB_DP, "membership_auc"), ".2f"),
        Figure("tab.membership.hesp.ctgan", src, _tab_point("uci_hesp", "CTGAN", None, "membership_auc"), ".2f"),
        Figure("tab.npgc.quality.oulad.eps1", src, _tab_point("oulad", "NPGC", 1.0, "quality"), ".2f"),
    ]


def _privacy_table(p: dict[str, Any]) -> str:
    """docs/privacy.md's table of the empirical privacy audit, one row per audit (the file's order)."""
    rows = []
    for r in p["rows"]:
        ref = r.get("mu_claimed") or r.get("mu_implied")
        mu = f"{r['mu_lower']:.2f} / " + (f"{ref:.2f}" if ref else "-")
        caught = "**yes**" if r["caught"] else "no"
        rows.append([r["synthesizer"], r["attack"], f"{r['epsilon']:.3g}", f"{r['epsilon_lower']:.2f}", mu,
                     f"{r['trials']:,}", caught])
    return table_figure(["synthesizer", "attack", "ε claimed", "ε lower (95 %)",
                           "μ lower / μ of the noise (zCDP) or μ implied by ε", "fits per dataset", "caught"], rows)


def _privacy_ratio(names: tuple[str, ...]) -> Callable[[dict[str, Any]], Value]:
    return lambda p: value_range(r["epsilon_lower"] / r["epsilon"] for r in p["rows"]
                                 if r["synthesizer"] in names and r["attack"] == "white-box" and not r["control"])


def _privacy_mu(name: str, field: str) -> Callable[[dict[str, Any]], float]:
    return lambda p: one([r for r in p["rows"] if round(r["epsilon"]) == 4], synthesizer=name,
                         attack="white-box")[field]


def _privacy_figures() -> list[Figure]:
    src = "privacy_audit.json"
    return [
        Figure("privacy.table", src, _privacy_table),
        Figure("privacy.audits", src, lambda p: len(p["rows"]), ".0f"),
        Figure("privacy.n_jobs", src, lambda p: p["n_jobs"], ".0f"),
        Figure("privacy.minutes", src, lambda p: p["seconds"] / 60, ".1f", " min"),
        Figure("privacy.honest_above", src, lambda p: sum(bool(r["above_claim"]) for r in p["rows"]
                                                           if not r["control"]), ".0f"),
        Figure("privacy.honest_caught", src, lambda p: sum(bool(r["caught"]) for r in p["rows"] if not r["control"]),
               ".0f"),
        Figure("privacy.controls_caught", src, lambda p: sum(bool(r["caught"]) for r in p["rows"] if r["control"]),
               ".0f"),
        Figure("privacy.controls", src, lambda p: sum(bool(r["control"]) for r in p["rows"]), ".0f"),
        Figure("privacy.ratio.counts", src, _privacy_ratio(("DP-Marginals", "DP-Histogram")), ".2f"),
        Figure("privacy.ratio.sequences", src, _privacy_ratio(("DP-Markov", "DP-HistSeq")), ".2f"),
        *[Figure(f"privacy.{name.lower()}.{field}", src, _privacy_mu(name, field), ".2f")
          for name in ("NPGC", "MST") for field in ("mu_lower", "mu_claimed")],
    ]


def _mst_speed_figures() -> list[Figure]:
    src = "mst_speed.json"

    def ratio(ds: str) -> Callable[[dict[str, Any]], Value]:
        return lambda p: interval(one(p["summary"], dataset=ds), "ratio")

    return [Figure(f"mst_speed.{ds}.ratio", src, ratio(ds), ".2f") for ds in ("uci_dropout", "adult")] + [
        Figure(f"mst_speed.{ds}.{side}", src, lambda p, ds=ds, side=side: one(p["summary"], dataset=ds)[
            f"{side}_cpu_s"], ".2f", " s") for ds in ("uci_dropout", "adult") for side in ("baseline", "current")]


def _engine_quality_table(p: dict[str, Any]) -> str:
    """docs/aim.md's no-loss table of engine_quality.json: each version's means, the differences and CPU ratios."""
    names = {"uci_dropout": "UCI dropout", "adult": "Adult"}
    rows = [[f"{names.get(r['dataset'], r['dataset'])}, {r['method']}", str(r["seeds"]),
             f"{r['baseline_tstr']:.3f} -> {r['current_tstr']:.3f}", interval(r, "tstr_diff").format("+.3f"),
             f"{r['baseline_quality']:.3f} -> {r['current_quality']:.3f}", interval(r, "quality_diff").format("+.3f"),
             f"{r['baseline_cpu_s']:.2f} -> {r['current_cpu_s']:.2f}", interval(r, "cpu_ratio").format(".2f")]
            for r in p["summary"]]
    return table_figure(["", "seeds", "TSTR before -> now", "difference", "SDMetrics before -> now", "difference",
                           "fit CPU s before -> now", "ratio"], rows)


_PAPER_SRC = "npgc_paper_table.json"
_PAPER_NAMES = {"uci_dropout": "UCI dropout", "uci_hesp": "UCI HESP", "adult": "Adult"}


def _paper_value(a: dict[str, Any], field: str) -> Value:
    """One aggregate field of npgc_paper_table.json with its interval (the point alone for one seed)."""
    return interval(a, field, "ci" if a["seeds"] > 1 else "point")


def _npgc_paper_table(p: dict[str, Any]) -> str:
    """docs/npgc.md's like-for-like table of npgc_paper_table.json: a row per dataset and method, 95 % t intervals."""
    specs = {"quality": ".3f", "shapes": ".3f", "pairs": ".3f", "disc_auc": ".3f", "dcr_share": ".3f", "tstr": ".3f",
             "fit_cpu_s": "sig3", "sample_s": "sig3"}
    rows = [[_PAPER_NAMES.get(a["dataset"], a["dataset"]), a["method"],
             "-" if a["epsilon"] is None else f"{a['epsilon']:g}", str(a["seeds"]),
             *("-" if a.get(f) is None else _paper_value(a, f).format(spec) for f, spec in specs.items())]
            for a in p["aggregate"]]
    return table_figure(["dataset", "method", "epsilon", "seeds", "overall", "column shapes", "pair trends",
                           "discr. AUC", "DCR share", "TSTR F1", "fit CPU s", "sample s"], rows)


def _npgc_paper_figures() -> list[Figure]:
    """The README's quality, TSTR and fit CPU figures of npgc_paper_table.json (UCI dropout), with intervals."""
    def read(method: str, field: str) -> Callable[[dict[str, Any]], Value]:
        return lambda p: _paper_value(one(p["aggregate"], dataset="uci_dropout", method=method), field)

    methods = {"npgc_nodp": "NPGC (not DP)", "ctgan": "CTGAN (not DP)", "tvae": "TVAE (not DP)", "npgc": "NPGC"}
    return [Figure(f"paper.{key}.{field}", _PAPER_SRC, read(method, field), "sig3" if field == "fit_cpu_s" else ".3f",
                   " s" if field == "fit_cpu_s" else "")
            for key, method in methods.items() for field in ("quality", "tstr", "fit_cpu_s")] + [
        Figure("paper.seeds", _PAPER_SRC, lambda p: p["seeds"], ".0f"),
        Figure("paper.epochs", _PAPER_SRC, lambda p: p["epochs"], ".0f"),
        Figure("paper.table", _PAPER_SRC, _npgc_paper_table)]


_CAPS_SRC = "caps_cycles.json"


def _ci_text(r: dict[str, Any], field: str, spec: str) -> str:
    """``+0.060 [+0.024, +0.095]``: a signed mean and its interval from ``field``, ``field_lo``, ``field_hi``."""
    return Value(r[field], r[field + "_lo"], r[field + "_hi"], "ci").format(spec)


def _caps_level(p: dict[str, Any], data: str, kind: str, eps: float, cycle: int) -> dict[str, Any]:
    return one(p[f"{data}_summary"], variant="caps", kind=kind, epsilon=eps, cycle=cycle)


def _caps_paired_table(data: str) -> Callable[[dict[str, Any]], str]:
    """docs/caps.md's table of caps_cycles.json: CAPS minus the one-shot model, per epsilon and later cycle."""
    def read(p: dict[str, Any]) -> str:
        rows = []
        for r in sorted(select(p[f"{data}_paired_summary"], variant="caps"), key=lambda r: (r["epsilon"], r["cycle"])):
            if r["cycle"] < 2:
                continue
            caps, base = (_caps_level(p, data, k, r["epsilon"], r["cycle"]) for k in ("caps", "oneshot"))
            rows.append([f"{r['epsilon']:g}", str(r["cycle"]), str(r["n"]), f"{caps['balanced_accuracy']:.3f}",
                         f"{base['balanced_accuracy']:.3f}", _ci_text(r, "d_balanced_accuracy", "+.3f"),
                         _ci_text(r, "d_balanced_accuracy_heldout", "+.3f"), f"{r['d_mae']:+.3f}",
                         _ci_text(r, "d_ajs_reconstruction", "+.4f"), _ci_text(r, "d_ajs_generation", "+.4f")])
        return table_figure(["ε", "cycle", "n", "CAPS BA", "one-shot BA", "Δ BA (other cohorts)",
                               "Δ BA (held-out cohort)", "Δ MAE", "Δ AJS reconstruction", "Δ AJS generation"], rows)
    return read


def _caps_epsilon_table(data: str) -> Callable[[dict[str, Any]], str]:
    """docs/caps.md's table of caps_cycles.json: balanced accuracy at epsilon 4 minus epsilon 1, per cycle."""
    def read(p: dict[str, Any]) -> str:
        rows = [[str(r["cycle"]), str(r["n"]), f"{r['d_balanced_accuracy']:+.3f} [{r['lo']:+.3f}, {r['hi']:+.3f}]"]
                for r in sorted(select(p[f"{data}_epsilon_effect"], variant="caps", kind="caps"),
                                key=lambda r: r["cycle"])]
        return table_figure(["cycle", "n", "Δ BA, ε 4 − ε 1 (95 % CI)"], rows)
    return read


def _caps_levels_table(data: str) -> Callable[[dict[str, Any]], str]:
    """docs/caps.md's table of caps_cycles.json: CAPS's levels per epsilon and cycle (BA: mean ± sd)."""
    def read(p: dict[str, Any]) -> str:
        rows = [[f"{r['epsilon']:g}", str(r["cycle"]), str(r["n"]),
                 f"{r['balanced_accuracy']:.3f} ± {r['balanced_accuracy_sd']:.3f}", f"{r['mae']:.3f}",
                 f"{r['ajs_reconstruction']:.4f}", f"{r['ajs_generation']:.4f}", f"{r['noise_multiplier']:.2f}"]
                for r in sorted(select(p[f"{data}_summary"], variant="caps", kind="caps"),
                                key=lambda r: (r["epsilon"], r["cycle"]))]
        return table_figure(["ε", "cycle", "n", "balanced accuracy", "MAE", "AJS reconstruction", "AJS generation",
                       "noise multiplier"], rows)
    return read


def _caps_variants_table(p: dict[str, Any]) -> str:
    """docs/caps.md's ablation table of caps_cycles.json: each variant minus the shipped method (simulated)."""
    effect = p["simulated_variant_effect"]
    rows = []
    for variant, eps in sorted({(r["variant"], r["epsilon"]) for r in effect}):
        first, last = (one(effect, variant=variant, epsilon=eps, cycle=c) for c in (1, 3))
        rows.append([variant, f"{eps:g}", str(first["n"]), _ci_text(first, "d_balanced_accuracy", "+.3f"),
                     _ci_text(last, "d_balanced_accuracy", "+.3f"), _ci_text(last, "d_ajs_reconstruction", "+.4f"),
                     _ci_text(last, "d_ajs_generation", "+.4f")])
    return table_figure(["variant (vs the default)", "ε", "n", "Δ BA cycle 1", "Δ BA cycle 3",
                           "Δ AJS reconstruction cycle 3", "Δ AJS generation cycle 3"], rows)


_CAPS_REAL_SRC = "caps_real.json"
#: docs/caps.md's factor table: (label, arm) -- each arm at its one epsilon (4, or no DP)
_CAPS_FACTORS = (("none (reference)", "oulad"), ("no DP", "oulad_nodp"),
                 ("public = GGG's other students", "oulad_pub_ggg"), ("700 students per cohort", "oulad_n700"),
                 ("all public rows (about 29,000)", "oulad_pub_all"))


def _caps_real_rows(p: dict[str, Any], arm: str) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    """An arm's cycle-1 (one-shot) level and its paired deltas by cycle (the arm's highest epsilon)."""
    eps = max(r["epsilon"] for r in select(p["paired_summary"], variant=arm))
    paired = {r["cycle"]: r for r in select(p["paired_summary"], variant=arm, epsilon=eps)}
    return one(p["levels"], variant=arm, epsilon=eps, cycle=1), paired


def _caps_real_paired_table(p: dict[str, Any]) -> str:
    """docs/caps.md's table of caps_real.json: CAPS minus one-shot on OULAD, per epsilon and later cycle."""
    rows = []
    for r in sorted(select(p["paired_summary"], variant="oulad"), key=lambda r: (r["epsilon"], r["cycle"])):
        level = lambda c, r=r: one(p["levels"], variant="oulad", epsilon=r["epsilon"], cycle=c)  # noqa: E731
        rows.append([f"{r['epsilon']:g}", str(r["cycle"]), str(r["n"]), f"{level(r['cycle'])['balanced_accuracy']:.3f}",
                     f"{level(1)['balanced_accuracy']:.3f}", _ci_text(r, "balanced_accuracy", "+.3f"),
                     _ci_text(r, "balanced_accuracy_heldout", "+.3f"), _ci_text(r, "ajs_reconstruction", "+.4f"),
                     _ci_text(r, "ajs_generation", "+.4f")])
    return table_figure(["ε", "cycle", "n", "CAPS BA", "one-shot BA", "Δ BA (other cohorts)", "Δ BA (held-out)",
                   "Δ AJS reconstruction", "Δ AJS generation"], rows)


def _caps_arm_row(p: dict[str, Any], arm: str) -> list[str]:
    base, paired = _caps_real_rows(p, arm)
    return [f"{base['balanced_accuracy']:.3f}", _ci_text(paired[2], "balanced_accuracy", "+.3f"),
            _ci_text(paired[3], "balanced_accuracy", "+.3f"), _ci_text(paired[3], "ajs_generation", "+.4f"),
            str(paired[3]["n"])]


def _caps_factor_table(p: dict[str, Any]) -> str:
    """docs/caps.md's one-factor-at-a-time table of caps_real.json (OULAD, epsilon 4 unless no DP)."""
    rows = [[label, f"`{arm}`", *_caps_arm_row(p, arm)] for label, arm in _CAPS_FACTORS]
    return table_figure(["factor", "arm", "one-shot BA", "Δ BA cycle 2", "Δ BA cycle 3",
                           "Δ AJS generation cycle 3", "n"], rows)


def _caps_public_table(p: dict[str, Any]) -> str:
    """docs/caps.md's case-study table of caps_real.json: 10,000 against 100,000 simulated public rows."""
    rows = [[label, *_caps_arm_row(p, arm)] for label, arm in (("10,000", "sim_pub10k"), ("100,000", "sim_pub100k"))]
    return table_figure(["public rows", "one-shot BA", "Δ BA cycle 2", "Δ BA cycle 3", "Δ AJS generation cycle 3",
                           "n"], rows)


def _caps_figures() -> list[Figure]:
    figs = [Figure("caps.variants.table", _CAPS_SRC, _caps_variants_table),
            Figure("caps_real.paired.table", _CAPS_REAL_SRC, _caps_real_paired_table),
            Figure("caps_real.factors.table", _CAPS_REAL_SRC, _caps_factor_table),
            Figure("caps_real.public.table", _CAPS_REAL_SRC, _caps_public_table)]
    for data in ("simulated", "oulad"):
        figs += [Figure(f"caps.{data}.paired.table", _CAPS_SRC, _caps_paired_table(data)),
                 Figure(f"caps.{data}.epsilon.table", _CAPS_SRC, _caps_epsilon_table(data)),
                 Figure(f"caps.{data}.levels.table", _CAPS_SRC, _caps_levels_table(data))]
    return figs


def _engine_quality_figures() -> list[Figure]:
    """The differences (now - before) and fit CPU ratios of engine_quality.json docs/aim.md quotes, with intervals."""
    def read(ds: str, method: str, field: str) -> Callable[[dict[str, Any]], Value]:
        return lambda p: interval(one(p["summary"], dataset=ds, method=method), field)

    return [Figure(f"engine_quality.{ds}.{method.lower()}.{field}", "engine_quality.json", read(ds, method, field),
                   ".2f" if field == "cpu_ratio" else "+.3f")
            for ds, method, field in _ENGINE_QUALITY_QUOTED]


_ENGINE_QUALITY_QUOTED = [("uci_dropout", "MST", "tstr_diff"), ("uci_dropout", "AIM", "tstr_diff"),
                          ("uci_dropout", "MST", "quality_diff"), ("adult", "AIM", "quality_diff"),
                          *[(ds, m, "cpu_ratio") for ds in ("uci_dropout", "adult") for m in ("MST", "AIM")]]


def _audit_tabular_seconds(p: dict[str, Any]) -> Value:
    return value_range(r["seconds"] for r in p["rows"] if r["task"].startswith("tabular"))


_PEARL_TASK_CHECKS = ("sequence_task", "knowledge_tracing")


def _pearl_fails(row: dict[str, Any], check: str) -> bool:
    failed = row.get("failed_checks") or []
    if check == "task":
        return any(c in _PEARL_TASK_CHECKS for c in failed)
    if check == "strict_privacy":
        return not (row.get("strict_privacy") or {}).get("passed", True)
    return check in failed


def _pearl_per_seed(count: Callable[[dict[str, Any]], bool], dataset: str | None = None, interval: bool = True
                    ) -> Callable[[dict[str, Any]], Value]:
    """PEARL grid: the number of audited settings (of ``dataset``) where ``count`` holds, per seed: mean and t."""
    def read(p: dict[str, Any]) -> Value:
        rows = [r for r in p["rows"] if r.get("status", "ok") == "ok"]
        seeds = sorted({int(r["seed"]) for r in rows})
        rows = [r for r in rows if dataset is None or r["dataset"] == dataset]
        value = mean_ci([sum(bool(count(r)) for r in rows if int(r["seed"]) == s) for s in seeds])
        if not interval or value.low is None:
            return Value(value.value)
        return Value(value.value, max(0.0, value.low), value.high, "ci")  # a count: the t interval clipped at 0
    return read


def _pearl_figures() -> list[Figure]:
    """The PEARL grid's figures: counts per seed (a seed is one pass over the grid), mean [95 % t over seeds]."""
    src = "pearl_grid.json"
    figs = [
        Figure("pearl.seeds", src, lambda p: len({int(r["seed"]) for r in p["rows"]}), ".0f"),
        Figure("pearl.settings_per_seed", src, _pearl_per_seed(lambda r: True, interval=False), ".0f"),
        Figure("pearl.approved_per_seed", src, _pearl_per_seed(lambda r: r.get("approved")), ".1f"),
        Figure("pearl.approved_strict_per_seed", src, _pearl_per_seed(lambda r: r.get("approved_strict")), ".1f"),
    ]
    for check in ("privacy", "strict_privacy", "utility", "task", "fairness"):
        figs.append(Figure(f"pearl.failures_per_seed.{check}", src,
                           _pearl_per_seed(lambda r, c=check: _pearl_fails(r, c)), ".1f"))
    for ds in ("uci_dropout", "uci_hesp", "oulad", "oulad_clicks", "kt_bkt"):
        figs.append(Figure(f"pearl.approved_per_seed.{ds}", src, _pearl_per_seed(lambda r: r.get("approved"), ds),
                           ".1f"))
    figs += [Figure("pearl.settings_per_seed.oulad", src, _pearl_per_seed(lambda r: True, "oulad", False), ".0f"),
             Figure("pearl.failures_per_seed.utility.oulad", src,
                    _pearl_per_seed(lambda r: _pearl_fails(r, "utility"), "oulad"), ".1f")]
    return figs


_NPGC_DATASETS = {"adult": "Adult", "uci_dropout": "UCI dropout", "oulad": "OULAD", "uci_hesp": "UCI HESP"}

def _vs_pgm(dataset: str, source: str, method: str, key: str) -> list[Figure]:
    """Our ``method`` against private-pgm's own on one table: TSTR, SDMetrics quality, CPU speed-up, peak-RSS ratio.

    Keys: ``{key}.*.{dataset}`` for ours, ``pgm_{method lower-cased}.*.{dataset}`` for theirs.
    """
    theirs = f"private-pgm {method}"
    figs = [Figure(f"{who}.{field}.{dataset}", source, _side(dataset, m, field))
            for who, m in ((key, method), (f"pgm_{method.lower()}", theirs)) for field in ("tstr", "quality")]
    return figs + [
        Figure(f"{key}.cpu_speedup.{dataset}", source, _ratio(dataset, method, theirs, "speed-up (CPU)"), ".0f", "x"),
        Figure(f"{key}.rss_ratio.{dataset}", source, _ratio(dataset, method, theirs, "peak RSS ours / theirs"),
               ".3f")]


FIGURES: list[Figure] = [
    # NPGC fit against the npgc 0.3.0 reference, training splits (best of 7)
    Figure("npgc.fit.adult", "npgc_scaling.json", _reference_fit("adult (70 % split)", "after"), ".2g", " s"),
    Figure("npgc.fit.adult.reference", "npgc_scaling.json", _reference_fit("adult (70 % split)", "npgc 0.3.0"),
           ".2g", " s"),
    Figure("npgc.fit.uci_dropout", "npgc_scaling.json", _reference_fit("uci_dropout (70 % split)", "after"),
           ".2g", " s"),
    Figure("npgc.fit.uci_dropout.reference", "npgc_scaling.json",
           _reference_fit("uci_dropout (70 % split)", "npgc 0.3.0"), ".2g", " s"),
    # NPGC fit at scale
    Figure("npgc.fit.1e6", "npgc_scaling.json",
           lambda p: one(p["rows"], table="adult", n=1000000, version="after")["fit_s"], ".2g", " s"),
    Figure("npgc.fit.1e6.mib", "npgc_scaling.json",
           lambda p: one(p["rows"], table="adult", n=1000000, version="after")["peak_mib"], ".0f", " MiB"),
    Figure("npgc.fit.1e7", "npgc_scaling.json", lambda p: one(p["rows"], table="stream")["fit_s"], ".2g", " s"),
    Figure("npgc.fit.1e7.mib", "npgc_scaling.json", lambda p: one(p["rows"], table="stream")["peak_mib"],
           ".0f", " MiB"),
    # NPGC sampling, Adult, 32,561 rows, over the six epsilons of npgc_reference
    Figure("npgc.sample.adult", "npgc_reference.json", _sampling("skdpsynth.NPGC"), ".1f", " s"),
    Figure("npgc.sample.adult.reference", "npgc_reference.json", _sampling("npgc (reference)"), ".0f", " s"),
    # NPGC against MST, epsilon 1, 10 seeds
    *[Figure(f"npgc.{field}.{ds}", "npgc_mst_utility.json", _npgc_utility(ds, "NPGC after", field))
      for ds in _NPGC_DATASETS for field in ("quality", "tstr_ratio")],
    *[Figure(f"mst.{field}.{ds}", "npgc_mst_utility.json", _npgc_utility(ds, "MST", field))
      for ds in _NPGC_DATASETS for field in ("quality", "tstr_ratio")],
    # NPGC against the non-private npgc 0.3.0, like for like (epsilon 1, 5 seeds)
    *[Figure(f"npgc24.{field}.{ds}", "npgc_utility.json", _npgc_utility(ds, "NPGC after", field))
      for ds in ("uci_dropout", "adult") for field in ("quality", "tstr_ratio")],
    *[Figure(f"npgcref24.quality.{ds}", "npgc_utility.json", _npgc_utility(ds, "npgc 0.3.0", "quality"))
      for ds in ("uci_dropout", "adult")],
    Figure("npgc_before.tstr_ratio.uci_dropout", "npgc_mst_utility.json",
           _npgc_utility("uci_dropout", "NPGC before", "tstr_ratio")),
    # regeneration: overall quality, first and tenth generation (Adult, 10,000 rows)
    Figure("regen.nonprivate.first", "regeneration_n10000.json",
           _regeneration_at("skdpsynth.NPGC (non-private)", True)),
    Figure("regen.nonprivate.last", "regeneration_n10000.json",
           _regeneration_at("skdpsynth.NPGC (non-private)", False)),
    Figure("regen.nonprivate.drop", "regeneration_n10000.json",
           _regeneration_drop("skdpsynth.NPGC (non-private)"), "+.2f"),
    Figure("regen.eps10.first", "regeneration_n10000.json", _regeneration_at("skdpsynth.NPGC (eps=10)", True)),
    Figure("regen.eps10.last", "regeneration_n10000.json", _regeneration_at("skdpsynth.NPGC (eps=10)", False)),
    Figure("regen.eps10.drop", "regeneration_n10000.json", _regeneration_drop("skdpsynth.NPGC (eps=10)"), "+.1f"),
    # regeneration of the other generators: Adult, 2,000 rows, 10 generations (4 for CTGAN / TVAE)
    *[Figure(f"regen.{key}.drop", "regeneration.json", _regeneration_drop(method), "+.0f")
      for key, method in (("copula", "Gaussian copula (copulas)"), ("ctgan", "CTGAN"), ("tvae", "TVAE"))],
    # AIM against private-pgm's AIM, epsilon 1, 3 seeds each
    *_vs_pgm("uci_dropout", "tabular_side_by_side_pgm_jax.json", "AIM", "aim"),
    Figure("aim_x4.tstr.uci_dropout", "tabular_side_by_side_pgm_jax.json",
           _side("uci_dropout", "AIM (target x4)", "tstr")),
    *_vs_pgm("adult", "tabular_side_by_side_pgm_jax_adult.json", "AIM", "aim"),
    # CTGAN / TVAE (not DP), one seed
    *[Figure(f"{m.lower()}.{field}.uci_dropout", "tabular_side_by_side_deep.json",
             _side("uci_dropout", f"{m} (not DP)", field), spec, unit)
      for m in ("CTGAN", "TVAE") for field, spec, unit in (("tstr", ".3f", ""), ("quality", ".3f", ""),
                                                             ("fit_s", ".0f", " s"))],
    Figure("tvae.tstr.adult", "tabular_side_by_side_tvae.json", _side("adult", "TVAE (not DP)", "tstr")),
    Figure("tvae.fit_s.adult", "tabular_side_by_side_tvae.json", _side("adult", "TVAE (not DP)", "fit_s"),
           ".0f", " s"),
    # MST memory probe (tabular benchmark)
    # MST's own fit process (tabular.json's probe reads getrusage, which after exec keeps the parent's peak)
    Figure("mst.fit_s.uci_dropout", _SBS_SOURCES["uci_dropout"], _side("uci_dropout", "MST", "fit_cpu_s"), "sig3",
           " s"),
    Figure("mst.rss.uci_dropout", _SBS_SOURCES["uci_dropout"], _side("uci_dropout", "MST", "peak_rss_mib"), ".0f",
           " MiB"),
    # private-pgm's MST in the same run (its mechanism unchanged, on our grid)
    Figure("pgm_mst.fit_s.uci_dropout", _SBS_SOURCES["uci_dropout"],
           _side("uci_dropout", "private-pgm MST", "fit_cpu_s"), ".0f", " s"),
    Figure("pgm_mst.rss.uci_dropout", _SBS_SOURCES["uci_dropout"],
           _side("uci_dropout", "private-pgm MST", "peak_rss_mib"), ",.0f", " MiB"),
    # (key "mst_sbs": "mst.<field>.<table>" are NPGC's MST comparison, npgc_mst_utility.json)
    *_vs_pgm("uci_dropout", _SBS_SOURCES["uci_dropout"], "MST", "mst_sbs"),
    # sequences, OULAD AAA
    Figure("markov.fit_s", "sequences.json",
           lambda p: value_range(r["fit_s"] for r in p["oulad_aaa"] if r["method"].startswith("DP-Markov")),
           ".1f", " s"),
    Figure("markov.sample_s", "sequences.json",
           lambda p: value_range(r["sample_1000_s"] for r in p["oulad_aaa"] if r["method"].startswith("DP-Markov")),
           ".1f", " s"),
    Figure("kt.dkt.markov_eps10", "sequences.json", _kt("DP-Markov o1", 10.0), ".2f"),
    Figure("kt.dkt.real", "sequences.json", _kt("real", "-"), ".2f"),
    Figure("kt.majority", "sequences.json", _kt("real", "-", "majority_macro_f1"), ".2f"),
    *_sequence_figures(),
    *_aim_side_by_side_figures(),
    *_privacy_figures(),
    *_mst_speed_figures(),
    Figure("engine_quality.table", "engine_quality.json", _engine_quality_table),
    Figure("engine_quality.seeds", "engine_quality.json", lambda p: p["seeds"], ".0f"),
    *_engine_quality_figures(),
    *_npgc_paper_figures(),
    *_caps_figures(),
    Figure("audit.table", "audit_speed.json", _audit_speed_table),
    Figure("tabular.fit_table", "tabular.json", _tabular_speed_table),
    *_tabular_prose_figures(),
    *[Figure(f"tabular.{field}_table", "tabular.json", _tabular_metric_table(field))
      for field in ("quality", "tstr_ratio", "membership_auc", "disc_auc")],
    Figure("audit.privacy_s", "audit_speed.json", _audit_check_seconds("privacy_s"), ".1f", " s"),
    Figure("audit.utility_s", "audit_speed.json", _audit_check_seconds("utility_s"), ".1f", " s"),
    *_npgc_reference_figures(),
    *_regeneration_figures(),
    *_scaling_figures(),
    Figure("npgc_before.tstr_ratio.adult", "npgc_mst_utility.json",
           _npgc_utility("adult", "NPGC before", "tstr_ratio")),
    # CAPS
    Figure("caps.cycle_s", "caps_timing.json", lambda p: p["rows"][0]["cycle_seconds_115x68"], ".1f", " s"),
    Figure("caps.pretrain_plus_cycle_s", "caps_timing.json",
           lambda p: p["rows"][0]["fit_seconds_pretrain_plus_cycle_without_replay"], ".0f", " s"),
    # PEARL audit speed and grid
    Figure("audit.tabular_s", "audit_speed.json", _audit_tabular_seconds, ".0f", " s"),
    Figure("audit.kt_s", "audit_speed.json",
           lambda p: one(p["rows"], task="knowledge tracing (DKT + SAKT)", release="fresh BKT simulation")["seconds"],
           ".0f", " s"),
    *_pearl_figures(),
    # each document's own list
    *_figures_aim.FIGURES, *_figures_audit.FIGURES, *_figures_caps.FIGURES, *_figures_datasets.FIGURES,
    *_figures_domain.FIGURES, *_figures_npgc.FIGURES,
]

#: README.md's Measured table: (what, figure text with ``{KEY}`` placeholders), in order
MEASURED: list[tuple[str, str]] = [
    ("NPGC fit, training splits, public schema, epsilon 1 (best of 7)",
     "Adult (22,792 x 15) {npgc.fit.adult} vs {npgc.fit.adult.reference} for the `npgc` reference; "
     "UCI dropout (3,096 x 37) {npgc.fit.uci_dropout} vs {npgc.fit.uci_dropout.reference}"),
    ("NPGC fit, 10^6 Adult-like rows / 10^7 rows from chunks",
     "{npgc.fit.1e6}, +{npgc.fit.1e6.mib} / {npgc.fit.1e7}, {npgc.fit.1e7.mib}"),
    ("NPGC sampling 32,561 rows, Adult (range over 6 epsilons)",
     "{npgc.sample.adult} vs {npgc.sample.adult.reference} for the reference"),
    ("NPGC at eps 1, 10 seeds: SDMetrics quality (MST)",
     "Adult {npgc.quality.adult} ({mst.quality.adult}), UCI dropout {npgc.quality.uci_dropout} "
     "({mst.quality.uci_dropout}), OULAD {npgc.quality.oulad} ({mst.quality.oulad}), "
     "UCI HESP {npgc.quality.uci_hesp} ({mst.quality.uci_hesp})"),
    ("NPGC at eps 1, 10 seeds: TSTR / TRTR macro-F1 (MST)",
     "Adult {npgc.tstr_ratio.adult} ({mst.tstr_ratio.adult}), UCI dropout {npgc.tstr_ratio.uci_dropout} "
     "({mst.tstr_ratio.uci_dropout})"),
    ("NPGC regeneration, 10 generations (Adult, 10,000 rows): overall quality, first -> last",
     "non-private {regen.nonprivate.first} -> {regen.nonprivate.last} ({regen.nonprivate.drop} points), "
     "eps 10 {regen.eps10.first} -> {regen.eps10.last} ({regen.eps10.drop} points); 2,000 rows: Gaussian copula "
     "{regen.copula.drop} points in 10 generations, CTGAN {regen.ctgan.drop} and TVAE {regen.tvae.drop} in 4"),
    ("AIM vs private-pgm's AIM (4d2b3c5, JAX), eps 1, side by side, 3 seeds each (one run per table)",
     "TSTR macro-F1 UCI dropout {aim.tstr.uci_dropout} vs {pgm_aim.tstr.uci_dropout} ({aim_x4.tstr.uci_dropout} "
     "with the outcome's pairs weighted), Adult {aim.tstr.adult} vs "
     "{pgm_aim.tstr.adult}; SDMetrics {aim.quality.uci_dropout} vs {pgm_aim.quality.uci_dropout}, "
     "{aim.quality.adult} vs {pgm_aim.quality.adult}; {aim.cpu_speedup.uci_dropout} / {aim.cpu_speedup.adult} "
     "faster (CPU s) at {aim.rss_ratio.uci_dropout} / {aim.rss_ratio.adult} of its peak RSS"),
    ("CTGAN / TVAE (not DP, 300 epochs), UCI dropout, one seed",
     "TSTR {ctgan.tstr.uci_dropout} / {tvae.tstr.uci_dropout}, SDMetrics {ctgan.quality.uci_dropout} / "
     "{tvae.quality.uci_dropout}, fit {ctgan.fit_s.uci_dropout} / {tvae.fit_s.uci_dropout} "
     "(TVAE on Adult: TSTR {tvae.tstr.adult}, {tvae.fit_s.adult})"),
    ("NPGC's paper table like for like: UCI dropout, one run, the same split and scoring for every method",
     "{paper.seeds} seeds, CTGAN / TVAE (not DP) at {paper.epochs} epochs. SDMetrics quality: NPGC not DP "
     "{paper.npgc_nodp.quality}, CTGAN {paper.ctgan.quality}, TVAE "
     "{paper.tvae.quality}, NPGC at eps 1 {paper.npgc.quality}; TSTR macro-F1 {paper.npgc_nodp.tstr} / "
     "{paper.ctgan.tstr} / {paper.tvae.tstr} / {paper.npgc.tstr}; fit CPU {paper.npgc_nodp.fit_cpu_s} / "
     "{paper.ctgan.fit_cpu_s} / {paper.tvae.fit_cpu_s} / {paper.npgc.fit_cpu_s}"),
    ("MST vs private-pgm's MST (4d2b3c5, JAX), UCI dropout, eps 1, side by side, 3 seeds each",
     "fit CPU {mst.fit_s.uci_dropout} vs {pgm_mst.fit_s.uci_dropout} ({mst_sbs.cpu_speedup.uci_dropout} faster), "
     "peak RSS of the fit process (Python and the data included) {mst.rss.uci_dropout} vs {pgm_mst.rss.uci_dropout}; "
     "TSTR macro-F1 {mst_sbs.tstr.uci_dropout} vs {pgm_mst.tstr.uci_dropout}, SDMetrics "
     "{mst_sbs.quality.uci_dropout} vs {pgm_mst.quality.uci_dropout}"),
    ("DP-Markov, OULAD AAA (350,298 events), orders 1-2, eps 1-10",
     "fit {markov.fit_s}, 1,000 learners sampled in {markov.sample_s}"),
    ("Knowledge tracing: DKT trained on DP-Markov data (eps 10)",
     "macro-F1 {kt.dkt.markov_eps10} on real held-out learners (majority floor {kt.majority}, "
     "real-trained {kt.dkt.real})"),
    ("CAPS: one cycle, 115 students x 68 features",
     "{caps.cycle_s} (target 60 s); pre-training on 100,000 rows plus one cycle {caps.pretrain_plus_cycle_s}"),
    ("PEARL audit, UCI dropout (4 checks)", "{audit.tabular_s}; DKT + SAKT check on 4,000 learners {audit.kt_s}"),
    ("PEARL grid (`benchmarks/pearl_grid.py --full`), per seed: mean [95 % t interval over seeds]",
     "{pearl.approved_per_seed} of {pearl.settings_per_seed} releases approved ({pearl.seeds} seed(s))"),
]

#: the command that regenerates each published file when its stamp does not say (files written before stamps)
RERUN: dict[str, str] = {
    "npgc_scaling.json": "python benchmarks/npgc_scaling.py",
    "npgc_scaling_adult.json": "python benchmarks/npgc_scaling.py --adult-only --before 2df9b90",
    "npgc_reference.json": "python benchmarks/npgc_reference.py",
    "npgc_mst_utility.json": "python benchmarks/npgc_reference.py --utility --seeds 10",
    "npgc_utility.json": "python benchmarks/npgc_utility.py",
    "regeneration_n10000.json": "python benchmarks/regeneration.py --rows 10000 --methods skdpsynth "
                                "--name regeneration_n10000",
    "regeneration.json": "python benchmarks/regeneration.py --rows 2000 --methods npgc copula && python "
                         "benchmarks/regeneration.py --rows 2000 --epochs 5 --generations 4 --methods ctgan tvae "
                         "--merge",
    "tabular_side_by_side_pgm_jax.json": "python benchmarks/tabular_side_by_side.py --datasets uci_dropout "
                                         "--epsilons 1 --seeds 3 --pgm-seeds 3 --pgm-python PGM_VENV/bin/python "
                                         "--pgm-src PRIVATE_PGM --pgm-timeout 6000 --name "
                                         "tabular_side_by_side_pgm_jax",
    "tabular_side_by_side_pgm_jax_adult.json": "python benchmarks/tabular_side_by_side.py --datasets adult "
                                               "--epsilons 1 --seeds 3 --pgm-seeds 3 --no-pgm-mst --pgm-python "
                                               "PGM_VENV/bin/python --pgm-src PRIVATE_PGM --pgm-timeout 6000 "
                                               "--name tabular_side_by_side_pgm_jax_adult",
    "tabular_side_by_side_deep.json": "python benchmarks/tabular_side_by_side.py --datasets uci_dropout --no-ours "
                                      "--deep-epochs 300 --name tabular_side_by_side_deep",
    "tabular_side_by_side_tvae.json": "python benchmarks/tabular_side_by_side.py --datasets adult --no-ours "
                                      "--deep-epochs 300 --deep-methods tvae --name tabular_side_by_side_tvae",
    "tabular.json": "python benchmarks/tabular.py",
    "caps_cycles.json": "python benchmarks/caps_cycles.py --workers 2 --progress FILE",
    "tabular_pategan_fixed.json": "python benchmarks/tabular.py --methods PATEGAN --name tabular_pategan_fixed "
                                  "(see the file's report for the options)",
    "sequences.json": "python benchmarks/sequences.py",
    "caps_timing.json": "python benchmarks/caps_cycles.py --timing-only",
    "audit_speed.json": "python benchmarks/audit_speed.py",
    "privacy_audit.json": "python benchmarks/privacy_audit.py --n-jobs 16",
    "mst_speed.json": "python benchmarks/mst_speed.py --repeats 10",
    "engine_quality.json": "python benchmarks/engine_quality.py --seeds 10",
    "domain_estimate.json": "python benchmarks/domain_estimate.py",
    "partition_selection.json": "python benchmarks/partition_selection.py",
    "pearl_grid.json": "python benchmarks/pearl_grid.py --full --seeds 3 --n-jobs 16",
}

#: published files allowed to be stale or unstamped, each with why; this set may only shrink
#: (``tests/test_results_fresh.py`` fails on an entry that has become fresh, so it is removed when rerun)
STALE_ALLOWED: dict[str, str] = {}


def published_files() -> list[str]:
    """The result files (relative to ``benchmarks/results/``) that a published figure comes from."""
    return sorted({f.source for f in FIGURES})
