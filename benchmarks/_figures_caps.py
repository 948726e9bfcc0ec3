"""The figures of docs/caps.md's prose, read from ``caps_cycles.json`` and ``caps_real.json``.

Where a sentence states a verdict ("every interval above 0"), the verdict is a figure too, so that a rerun
that changes it changes the sentence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from benchmarks.registry import Figure, mean_ci, one, select, table_figure

_CC = "caps_cycles.json"
_CR = "caps_real.json"
Reader = Callable[[dict[str, Any]], str]


def _signed(v: float, spec: str) -> str:
    return f"{v:+{spec}}".replace("-", "−")


def _ci(row: dict[str, Any], field: str, spec: str = ".4f", lo: str = "_lo", hi: str = "_hi") -> str:
    """``+v [lo, hi]`` of a summary row's field."""
    return f"{_signed(row[field], spec)} [{_signed(row[field + lo], spec)}, {_signed(row[field + hi], spec)}]"


def _span(values: Iterable[float], spec: str = ".3f", signed: bool = True) -> str:
    """``a to b`` (signed) or ``a–b`` (magnitudes) of ``values``; one value when they are equal."""
    xs = sorted(values)
    fmt = (lambda v: _signed(v, spec)) if signed else (lambda v: format(v, spec))
    low, high = fmt(xs[0]), fmt(xs[-1])
    return low if low == high else (f"{low} to {high}" if signed else f"{low}–{high}")


def _verdict(rows: list[dict[str, Any]], field: str, side: str, lo: str = "_lo", hi: str = "_hi") -> str:
    """How many of the rows' 95 % intervals of ``field`` lie above (``side="above"``) or below 0."""
    inside = [r[field + lo] > 0 if side == "above" else r[field + hi] < 0 for r in rows]
    if all(inside):
        return f"every 95 % interval {side} 0" if len(rows) > 1 else f"interval {side} 0"
    if not any(inside):
        return "every interval across 0" if side == "above" or len(rows) > 1 else "interval across 0"
    return f"{sum(inside)} of {len(rows)} intervals {side} 0"


def _cc_paired(data: str, variant: str = "caps", cycles: tuple[int, ...] = (2, 3),
               epsilons: tuple[float, ...] | None = None) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    def rows(p: dict[str, Any]) -> list[dict[str, Any]]:
        return [r for r in select(p[f"{data}_paired_summary"], variant=variant)
                if r["cycle"] in cycles and (epsilons is None or r["epsilon"] in epsilons)]
    return rows


def _cc_effect(variant: str, cycle: int = 3) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    return lambda p: select(p["simulated_variant_effect"], variant=variant, cycle=cycle)


def _cc_ci(key: str, variant: str, eps: float, cycle: int, field: str, spec: str = ".4f") -> Reader:
    return lambda p: _ci(one(p[key], variant=variant, epsilon=eps, cycle=cycle), field, spec)


def _ajs_range(variant: str) -> Reader:
    """The range of a variant's cycle-3 AJS deltas, reconstruction and generation, over epsilon."""
    return lambda p: _span((r[f] for r in _cc_effect(variant)(p) for f in ("d_ajs_reconstruction",
                                                                             "d_ajs_generation")), ".3f")


def _eps_effect(p: dict[str, Any], data: str) -> list[dict[str, Any]]:
    """The shipped method's epsilon-4-minus-epsilon-1 rows, with their interval as ``x``, ``x_lo``, ``x_hi``."""
    return [{"x": r["d_balanced_accuracy"], "x_lo": r["lo"], "x_hi": r["hi"]}
            for r in select(p[f"{data}_epsilon_effect"], variant="caps", kind="caps")]


def _range_of(rows: Callable, field: str, spec: str = ".3f", signed: bool = True, negate: bool = False) -> Reader:
    return lambda p: _span(((-r[field] if negate else r[field]) for r in rows(p)), spec, signed)


def _verdict_of(rows: Callable, field: str, side: str) -> Reader:
    return lambda p: _verdict(rows(p), field, side)


def _level(data: str, eps: float, cycle: int, field: str = "balanced_accuracy", spec: str = ".3f") -> Reader:
    return lambda p: format(one(p[f"{data}_summary"], variant="caps", kind="caps", epsilon=eps, cycle=cycle)[field],
                            spec)


def _gap_change(variant: str, eps: float) -> Reader:
    """Within a run: (generation - reconstruction AJS) at cycle 3 minus at cycle 1, mean [95 % CI] over runs."""
    def read(p: dict[str, Any]) -> str:
        runs: dict[tuple, dict[int, float]] = {}
        for r in select(p["simulated_rows"], variant=variant, kind="caps", epsilon=eps):
            runs.setdefault((r["order"], r["seed"]), {})[r["cycle"]] = r["ajs_generation"] - r["ajs_reconstruction"]
        v = mean_ci(c[3] - c[1] for c in runs.values() if 1 in c and 3 in c)
        return f"{_signed(v.value, '.4f')} [{_signed(v.low, '.4f')}, {_signed(v.high, '.4f')}]"
    return read


# caps_real.json
def _cr_paired(arm: str, eps: float, cycle: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda p: one(p["paired_summary"], variant=arm, epsilon=eps, cycle=cycle)


def _cr_ci(arm: str, eps: float, cycle: int, field: str, spec: str = ".4f") -> Reader:
    return lambda p: _ci(_cr_paired(arm, eps, cycle)(p), field, spec)


def _cr_oulad_later(p: dict[str, Any]) -> list[dict[str, Any]]:
    """The OULAD arm's paired rows at the later cycles (cycle minus the one-shot model)."""
    return [r for r in select(p["paired_summary"], variant="oulad") if r["cycle"] >= 2]


def _cells_above(field: str) -> Reader:
    """The (epsilon, cycle) cells of the OULAD arm whose paired delta's 95 % interval lies above 0."""
    def read(p: dict[str, Any]) -> str:
        cells = [f"ε {r['epsilon']:g}, cycle {r['cycle']}" for r in _cr_oulad_later(p) if r[field + "_lo"] > 0]
        return "; ".join(cells) or "none"
    return read


def _cr_level(arm: str, eps: float, field: str = "balanced_accuracy", cycle: int = 1) -> Reader:
    return lambda p: f"{one(p['levels'], variant=arm, epsilon=eps, cycle=cycle)[field]:.3f}"


def _cr_contrast(name: str, cycle: int, field: str, spec: str = ".4f") -> Reader:
    return lambda p: _ci(one(p["contrasts"], contrast=name, epsilon=1.0, cycle=cycle), field, spec)


def _cr_within(arm: str, field: str, spec: str = ".4f") -> Reader:
    return lambda p: _ci(one(p["within_run"], arm=arm, epsilon=1.0, cycle=3), field, spec)


def _cr_plan(arm: str, field: str, spec: str) -> Reader:
    return lambda p: _span({r[field] for r in select(p["rows"], variant=arm, kind="caps")}, spec, signed=False)


def _cr_noise(arm: str, eps: float) -> Reader:
    return lambda p: _span({r["noise_multiplier"] for r in select(p["rows"], variant=arm, epsilon=eps)}, ".2f",
                           signed=False)


def _drift(field: str, spec: str = ".2f", signed: bool = False, data: str = "OULAD GGG") -> Reader:
    """The range of ``field`` over the pairs of cohorts of ``data`` (not the cohorts-vs-public rows)."""
    return lambda p: _span((r[field] for r in p["drift"]["pairs"] if r["data"] == data and "transfer_gap" in r),
                           spec, signed)


def _public_auc(b: str, field: str = "domain_auc") -> Reader:
    """Cohorts against public rows ``b``: the domain classifier's AUC (or the rows compared, ``n_each``)."""
    return lambda p: f"{one(p['drift']['pairs'], b=b)[field]:,.{0 if field == 'n_each' else 2}f}"


def _withdrawn(p: dict[str, Any]) -> str:
    rows = [r for r in p["drift"]["labels"] if r["data"] == "OULAD GGG"]
    return ", ".join(f"{100 * r['Withdrawn']:.0f} % in {r['cohort']}" for r in rows)


def _pooling(data: str, field: str) -> Reader:
    def read(p: dict[str, Any]) -> str:
        row = one(p["drift"]["pooling_gain"], data=data)
        return _ci(row, "gain", ".3f") if field == "gain" else f"{row[field]:.3f}"
    return read


def _task_seconds(p: dict[str, Any]) -> str:
    secs = sorted({(r["variant"], r["data"], r["epsilon"], r["order"], r["seed"]): r["task_seconds"]
                   for key in ("simulated_rows", "oulad_rows") for r in p[key]}.values())
    return f"{secs[len(secs) // 2]:.0f} s (middle half {secs[len(secs) // 4]:.0f}–{secs[3 * len(secs) // 4]:.0f} s)"


def _pld_below_rdp(p: dict[str, Any]) -> str:
    return _span((100 * (1 - r["epsilon_pld"] / r["epsilon_rdp"]) for r in p["simulated_accounting"]), ".0f",
                 signed=False) + " %"


def _bias(rows: list[tuple[str, dict[str, Any]]], recon: str, gen: str) -> str:
    """Whether the paper's compounding bias shows: reconstruction AJS below the one-shot's and generation AJS
    above it, each 95 % interval excluding 0, in any of the labelled rows."""
    hits = [label for label, r in rows if r[recon + "_hi"] < 0 and r[gen + "_lo"] > 0]
    return "appears (" + ", ".join(hits) + ")" if hits else "does not appear"


def _bias_package(p: dict[str, Any]) -> str:
    rows = [(f"ε {e:g}", one(p["simulated_paired_summary"], variant="no_bias_fix", epsilon=e, cycle=3))
            for e in (1.0, 4.0)]
    return _bias(rows, "d_ajs_reconstruction", "d_ajs_generation")


def _bias_paper(p: dict[str, Any]) -> str:
    return _bias([("ε 1", one(p["paired_summary"], variant="sim_paper", epsilon=1.0, cycle=3))],
                 "ajs_reconstruction", "ajs_generation")


def _accounting_table(p: dict[str, Any]) -> str:
    """The DP-SGD accounting of the settings run (the paper's Table 1 columns), one row per setting and delta."""
    head = ["ε requested", "δ", "noise multiplier", "sample rate", "steps", "ε (RDP)", "ε (PLD)", "μ", "regret Δ"]
    rows = [[f"{r['epsilon_requested']:g}", f"{r['delta']:g}", f"{r['noise_multiplier']:.3f}",
             f"{r['sample_rate']:.3g}", f"{r['steps']:.0f}", f"{r['epsilon_rdp']:.3f}", f"{r['epsilon_pld']:.3f}",
             f"{r['mu']:.3f}", f"{r['regret']:.2e}"] for r in p["simulated_accounting"]]
    return table_figure(head, rows)


def _table1(p: dict[str, Any]) -> str:
    """The paper's Table 1 rows beside the closest reconstruction found (``caps_accounting.json``)."""
    head = ["ε (RDP)", "tight ε: paper / ours", "μ: paper / ours", "regret: paper / ours", "our sample rate",
            "our steps"]
    rows = []
    for (eps, (tight, mu, regret)), r in zip(sorted(p["paper"].items(), key=lambda kv: float(kv[0])), p["best"],
                                             strict=True):
        rows.append([f"{float(eps):g}", f"{tight:.2f} / {r['epsilon_pld']:.2f}", f"{mu:.2f} / {r['mu']:.2f}",
                     f"{regret:.4f} / {r['regret']:.4f}", f"{r['sample_rate']:g}", f"{r['steps']:.0f}"])
    return table_figure(head, rows)


def _tight_below_target(p: dict[str, Any]) -> str:
    return _span((100 * (1 - r["epsilon_pld"] / r["epsilon_rdp"]) for r in p["best"]), ".0f", signed=False) + " %"


_ABLATION_LOSSES = ("private_all", "small_batch", "no_label_replay")

FIGURES: list[Figure] = [
    # simulated cohorts: CAPS minus one-shot (cycles 2 and 3, every epsilon)
    Figure("caps.doc.sim.d_ba", _CC, _range_of(_cc_paired("simulated"), "d_balanced_accuracy")),
    Figure("caps.doc.sim.d_ba.verdict", _CC, _verdict_of(_cc_paired("simulated"), "d_balanced_accuracy", "above")),
    Figure("caps.doc.sim.d_ba_heldout", _CC, _range_of(_cc_paired("simulated"), "d_balanced_accuracy_heldout")),
    Figure("caps.doc.sim.d_ba_heldout.verdict", _CC,
           _verdict_of(_cc_paired("simulated"), "d_balanced_accuracy_heldout", "above")),
    Figure("caps.doc.sim.d_mae", _CC, _range_of(_cc_paired("simulated"), "d_mae", ".2f")),
    Figure("caps.doc.sim.d_recon.verdict", _CC,
           _verdict_of(_cc_paired("simulated", cycles=(3,)), "d_ajs_reconstruction", "below")),
    Figure("caps.doc.sim.d_gen.verdict", _CC,
           _verdict_of(_cc_paired("simulated", cycles=(3,)), "d_ajs_generation", "below")),
    Figure("caps.doc.sim.ablation_losses", _CC, lambda p: _span(
        (r["d_balanced_accuracy"] for v in _ABLATION_LOSSES for r in _cc_effect(v)(p)), ".3f")),
    Figure("caps.doc.sim.eps_effect", _CC, lambda p: _span(
        r["d_balanced_accuracy"] for r in select(p["simulated_epsilon_effect"], variant="caps", kind="caps"))),
    Figure("caps.doc.sim.eps_effect.verdict", _CC, lambda p: _verdict(_eps_effect(p, "simulated"), "x", "above")),
    Figure("caps.doc.sim.noise.eps1", _CC, _level("simulated", 1.0, 1, "noise_multiplier", ".1f")),
    Figure("caps.doc.sim.noise.eps4", _CC, _level("simulated", 4.0, 1, "noise_multiplier", ".1f")),
    Figure("caps.doc.sim.eps4.cycle3", _CC, _level("simulated", 4.0, 3)),
    Figure("caps.doc.sim.eps4.cycle1", _CC, _level("simulated", 4.0, 1)),
    # the bias fix off (no_bias_fix) against its own one-shot model, cycle 3
    *[Figure(f"caps.doc.nobias.{f}.eps{e:g}", _CC,
             _cc_ci("simulated_paired_summary", "no_bias_fix", e, 3, f"d_ajs_{f}"))
      for f in ("generation", "reconstruction") for e in (1.0, 4.0)],
    *[Figure(f"caps.doc.nobias.gap.eps{e:g}", _CC, _gap_change("no_bias_fix", e)) for e in (1.0, 4.0)],
    # ablations (variant minus the default, cycle 3)
    *[Figure(f"caps.doc.abl.{v}.d_ba", _CC, _range_of(_cc_effect(v), "d_balanced_accuracy"))
      for v in ("alpha_0", "alpha_0.1", "alpha_10", "private_all", "small_batch", "no_label_replay",
                "replay_model", "no_adapt_prior")],
    *[Figure(f"caps.doc.abl.{v}.d_ba.verdict", _CC, _verdict_of(_cc_effect(v), "d_balanced_accuracy", "above"))
      for v in ("alpha_10", "replay_model", "no_adapt_prior")],
    *[Figure(f"caps.doc.abl.{v}.d_ajs", _CC, _ajs_range(v))
      for v in ("alpha_0", "private_all", "small_batch", "no_label_replay")],
    *[Figure(f"caps.doc.abl.{v}.gen.eps{e:g}", _CC, _cc_ci("simulated_variant_effect", v, e, 3, "d_ajs_generation"))
      for v in ("no_bias_fix", "replay_model") for e in (1.0, 4.0)],
    Figure("caps.doc.abl.unlabelled_cls.verdict", _CC, lambda p: _verdict(
        [r for r in select(p["simulated_variant_effect"], variant="unlabelled_cls") if r["cycle"] in (1, 3)],
        "d_balanced_accuracy", "above")),
    *[Figure(f"caps.doc.abl.unlabelled_cls.eps{e:g}.cycle{c}", _CC,
             _cc_ci("simulated_variant_effect", "unlabelled_cls", e, c, "d_balanced_accuracy", ".3f"))
      for e in (1.0, 4.0) for c in (1, 3)],
    # OULAD (caps_cycles)
    Figure("caps.doc.oulad.oneshot", _CC, lambda p: " / ".join(
        format(one(p["oulad_summary"], variant="caps", kind="caps", epsilon=e, cycle=1)["balanced_accuracy"], ".2f")
        for e in (1.0, 2.0, 4.0))),
    Figure("caps.doc.oulad.eps_effect", _CC, lambda p: _span(
        r["d_balanced_accuracy"] for r in select(p["oulad_epsilon_effect"], variant="caps", kind="caps"))),
    Figure("caps.doc.oulad.eps_effect.verdict", _CC, lambda p: _verdict(_eps_effect(p, "oulad"), "x", "above")),
    Figure("caps.doc.oulad.d_ba", _CC, _range_of(_cc_paired("oulad"), "d_balanced_accuracy")),
    Figure("caps.doc.oulad.d_ba.verdict", _CC, _verdict_of(_cc_paired("oulad"), "d_balanced_accuracy", "above")),
    Figure("caps.doc.oulad.d_gen.eps24", _CC, _range_of(_cc_paired("oulad", cycles=(3,), epsilons=(2.0, 4.0)),
                                                       "d_ajs_generation", ".4f")),
    Figure("caps.doc.oulad.d_gen.eps24.verdict", _CC, _verdict_of(
        _cc_paired("oulad", cycles=(3,), epsilons=(2.0, 4.0)), "d_ajs_generation", "below")),
    Figure("caps.doc.oulad.d_gen.eps1.verdict", _CC, _verdict_of(
        _cc_paired("oulad", cycles=(3,), epsilons=(1.0,)), "d_ajs_generation", "below")),
    # caps_real: OULAD at delta 1e-3, the factors, the drift, the case study and the paper's training
    Figure("caps.doc.real.plan", _CR, lambda p: p["grid"]["note"]),
    Figure("caps.doc.real.noise.eps4", _CR, _cr_noise("oulad", 4.0)),
    Figure("caps.doc.real.noise.eps1", _CR, _cr_noise("oulad", 1.0)),
    Figure("caps.doc.real.d_ba", _CR, _range_of(_cr_oulad_later, "balanced_accuracy")),
    Figure("caps.doc.real.d_ba.verdict", _CR, _verdict_of(_cr_oulad_later, "balanced_accuracy", "above")),
    Figure("caps.doc.real.d_ba.cells_above", _CR, _cells_above("balanced_accuracy")),
    Figure("caps.doc.real.d_heldout.cells_above", _CR, _cells_above("balanced_accuracy_heldout")),
    Figure("caps.doc.real.nodp.oneshot", _CR, _cr_level("oulad_nodp", float("inf"))),
    Figure("caps.doc.real.ref.oneshot", _CR, _cr_level("oulad", 4.0)),
    Figure("caps.doc.real.pub_all.oneshot", _CR, _cr_level("oulad_pub_all", 4.0)),
    Figure("caps.doc.real.pub_all.cycle3", _CR, _cr_level("oulad_pub_all", 4.0, cycle=3)),
    Figure("caps.doc.real.pub_all.d_ba", _CR, _cr_ci("oulad_pub_all", 4.0, 3, "balanced_accuracy", ".3f")),
    Figure("caps.doc.real.pub_all.d_heldout", _CR,
           _cr_ci("oulad_pub_all", 4.0, 3, "balanced_accuracy_heldout", ".3f")),
    Figure("caps.doc.real.n700.steps", _CR, _cr_plan("oulad_n700", "steps", ".0f")),
    Figure("caps.doc.real.n700.q", _CR, _cr_plan("oulad_n700", "sample_rate", ".2f")),
    Figure("caps.doc.real.n700.noise", _CR, _cr_noise("oulad_n700", 4.0)),
    Figure("caps.doc.real.n700.d_ba", _CR, _cr_ci("oulad_n700", 4.0, 3, "balanced_accuracy", ".3f")),
    Figure("caps.doc.drift.auc", _CR, _drift("domain_auc")),
    Figure("caps.doc.public.auc.other_modules", _CR, _public_auc("public: other modules")),
    Figure("caps.doc.public.auc.ggg_rest", _CR, _public_auc("public: GGG rest")),
    Figure("caps.doc.public.n.ggg_rest", _CR, _public_auc("public: GGG rest", "n_each")),
    Figure("caps.doc.public.auc.sim", _CR, _public_auc("public (shift -0.5)")),
    Figure("caps.doc.drift.auc.sim", _CR, _drift("domain_auc", data="simulated")),
    Figure("caps.doc.drift.marginal_tv", _CR, _drift("marginal_tv")),
    Figure("caps.doc.drift.marginal_tv.sim", _CR, _drift("marginal_tv", data="simulated")),
    Figure("caps.doc.drift.label_tv", _CR, _drift("label_tv")),
    Figure("caps.doc.drift.withdrawn", _CR, _withdrawn),
    Figure("caps.doc.drift.transfer_gap", _CR, _drift("transfer_gap", signed=True)),
    Figure("caps.doc.pool.one", _CR, _pooling("OULAD GGG", "ba_one_cohort")),
    Figure("caps.doc.pool.two", _CR, _pooling("OULAD GGG", "ba_two_cohorts")),
    Figure("caps.doc.pool.gain", _CR, _pooling("OULAD GGG", "gain")),
    Figure("caps.doc.pool.gain.sim", _CR, _pooling("simulated", "gain")),
    *[Figure(f"caps.doc.pub100k.{f}", _CR, _cr_contrast("sim_pub100k − sim_pub10k", 3, f, s))
      for f, s in (("balanced_accuracy", ".3f"), ("ajs_generation", ".4f"))],
    *[Figure(f"caps.doc.paper.{arm}.{f}", _CR, _cr_ci(arm, 1.0, 3, f, ".3f" if f == "balanced_accuracy" else ".4f"))
      for arm in ("sim_paper", "sim_paper_fix") for f in ("ajs_reconstruction", "ajs_generation", "balanced_accuracy")],
    *[Figure(f"caps.doc.paper.within.{f}", _CR, _cr_within("sim_paper", f))
      for f in ("ajs_generation", "ajs_reconstruction")],
    *[Figure(f"caps.doc.paper.fix_minus_off.{f}", _CR,
             _cr_contrast("sim_paper_fix − sim_paper", 3, f, ".3f" if f == "balanced_accuracy" else ".4f"))
      for f in ("ajs_generation", "ajs_reconstruction", "balanced_accuracy")],
    # accounting and speed (caps_cycles)
    Figure("caps.doc.pld_below_rdp", _CC, _pld_below_rdp),
    Figure("caps.doc.accounting.table", _CC, _accounting_table),
    Figure("caps.doc.table1", "caps_accounting.json", _table1),
    Figure("caps.doc.table1.tight_below", "caps_accounting.json", _tight_below_target),
    Figure("caps.doc.gomez.mu", "caps_accounting.json", lambda p: f"{p['reference']['mu']:.4f}"),
    Figure("caps.doc.gomez.regret", "caps_accounting.json", lambda p: f"{p['reference']['regret']:.5f}"),
    Figure("caps.doc.bias.verdict.package", _CC, _bias_package),
    Figure("caps.doc.bias.verdict.paper", _CR, _bias_paper),
    Figure("caps.doc.task_s", _CC, _task_seconds),
]
