"""Empirical privacy audit of every DP synthesizer, with deliberately broken controls.

For each synthesizer and epsilon in {1, 4}: ``audit_privacy`` fits it ``trials``
times on each of two neighbouring datasets (100 people with / without a canary
whose record is unique; public schema or vocabulary given), attacks every
release (white-box: likelihood-ratio test on the released noisy statistics;
black-box: the canary's record in the synthetic data) and reports one-sided 95%
lower confidence bounds on epsilon and mu (Clopper-Pearson, threshold chosen on
half of the fits). Expected: every bound below its claim; every control above.

Controls (defined here, never in the package), each a DP-Marginals that claims
epsilon but is broken:

* ``half noise``: charges epsilon, draws its noise at scale ``1 / (2 eps)``;
* ``stored seed``: ``reproducible_noise=True`` with a fixed ``random_state`` --
  the attacker regenerates the noise from the parameters;
* ``unnoised domain``: reads its schema from the data (``infer_schema``) and
  calls it public, so the canary's unique category enters the release domain.

Run: ``python benchmarks/privacy_audit.py`` (``--quick`` for a smoke run with
fewer fits; ``--only NAME ... --merge`` to rerun some settings into the existing
results; ``--resume`` to finish an interrupted run: results are saved after every
audit). Results:
``benchmarks/results/privacy_audit.{json,md,png}`` (``privacy_audit_quick.*``
with ``--quick``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import RESULTS, markdown_table, write_results  # noqa: E402

from skdpsynth.exceptions import PrivacyLeakWarning  # noqa: E402
from skdpsynth.schema import infer_schema  # noqa: E402
from skdpsynth.synthesizers._marginals import DPMarginalsSynthesizer  # noqa: E402

EPSILONS = (1.0, 4.0)
#: level of every bound; the verdicts use the family-wise level ALPHA / FAMILY (Bonferroni over at most
#: FAMILY audits in one result table)
ALPHA = 0.05
FAMILY = 40


# ---------------------------------------------------------------------------------- broken controls
class _HalfScaleNoise:
    """A noise source whose Laplace / Gaussian draws have half the requested scale (a bug, on purpose)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def discrete_laplace(self, scale: float, size: Any):
        return self._inner.discrete_laplace(scale / 2.0, size)

    def discrete_gaussian(self, sigma: float, size: Any):
        return self._inner.discrete_gaussian(sigma / 2.0, size)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class HalfNoiseMarginals(DPMarginalsSynthesizer):
    """Broken control: charges epsilon (and logs scale 1/eps) but adds noise of scale 1/(2 eps)."""

    def _private_view(self, Xn, ctx):  # the handle's queries draw from the halved noise source
        return super()._private_view(Xn, dataclasses.replace(ctx, noise=_HalfScaleNoise(ctx.noise)))


class InferredDomainMarginals(DPMarginalsSynthesizer):
    """Broken control: takes its domain from the data (categories, bounds) and calls it public."""

    def _resolve_domain(self, X, ctx):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            return dataclasses.replace(infer_schema(X), public=True, raw=frozenset())  # certifies the raw values


def stored_seed_marginals(epsilon: float) -> DPMarginalsSynthesizer:
    """Broken control: the privacy noise derives from a fixed, published random_state."""
    return DPMarginalsSynthesizer(epsilon=epsilon, reproducible_noise=True, random_state=0)


CONTROLS: dict[str, Callable[[float], Any]] = {
    "half noise": lambda eps: HalfNoiseMarginals(epsilon=eps),
    "stored seed": stored_seed_marginals,
    "unnoised domain": lambda eps: InferredDomainMarginals(epsilon=eps),
}


# ---------------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class Setting:
    """One synthesizer (or control) to audit at every epsilon."""

    name: str
    make: Callable[[float], Any]
    trials: int
    quick_trials: int
    attacks: tuple[str, ...] = ("white-box", "black-box")
    control: str | None = None
    epsilons: tuple[float, ...] = EPSILONS


def _registered(method: str, **params: Any) -> Callable[[float], Any]:
    def make(eps: float) -> Any:
        from skdpsynth.synthesizers._registry import by_method

        return by_method(method).load()(epsilon=eps, **params)
    return make


SEQ = {"max_length": 5}
#: DP-SGD / PATE models at the smallest sizes that still train (their fits cost 0.07-2 s each)
DPCTGAN = {"epochs": 1, "batch_size": 50, "hidden_dims": (16,), "noise_dim": 8}
PATEGAN = {"n_teachers": 5, "n_iter": 5, "teacher_steps": 1, "student_steps": 1, "buffer_iters": 1,
           "hidden_dims": (16,), "noise_dim": 8}
CAPS = {"target": "course", "expected_cohort_size": 100, "m1_hidden": (8,), "z1_dim": 2, "m2_hidden": (8,),
        "z2_dim": 2, "classifier_hidden": (8,), "pretrain_epochs": 1, "n_surrogate": 200, "epochs": 1,
        "batch_size": 16, "n_public_samples": 100, "replay_new": 100, "replay_old": 100, "replay_epochs": 1,
        "public_steps": 5, "label_replay": 0}  # label_replay acts from cycle 2 only; an audited fit is one cycle
WB, BB = ("white-box",), ("black-box",)
SETTINGS: tuple[Setting, ...] = (
    Setting("DP-Marginals", _registered("marginals"), 10_000, 300, WB),
    Setting("DP-Marginals", _registered("marginals"), 1_000, 100, BB),
    Setting("DP-Histogram", _registered("histogram"), 10_000, 300, WB),
    Setting("DP-Histogram", _registered("histogram"), 1_000, 100, BB),
    Setting("NPGC", _registered("npgc"), 2_000, 100, WB),
    Setting("NPGC", _registered("npgc"), 1_000, 100, BB),
    Setting("MST", _registered("mst"), 2_000, 100, WB),
    Setting("MST", _registered("mst"), 1_000, 100, BB),
    Setting("DP-Markov", _registered("markov", **SEQ), 2_000, 100, WB),
    Setting("DP-Markov", _registered("markov", **SEQ), 1_000, 100, BB),
    Setting("DP-HistSeq", _registered("histseq", **SEQ), 2_000, 100, WB),
    Setting("DP-HistSeq", _registered("histseq", **SEQ), 1_000, 100, BB),
    # no released statistics to test (DP-SGD / PATE): the white-box attack would fall back to this black-box one
    Setting("PATE-GAN", _registered("pategan", **PATEGAN), 1_000, 30, BB),
    Setting("CAPS", _registered("caps", **CAPS), 500, 20, BB, epsilons=(1.0,)),
    Setting("DP-CTGAN", _registered("dpctgan", **DPCTGAN), 50, 10, BB, epsilons=(1.0,)),
    Setting("DP-Marginals (half noise)", CONTROLS["half noise"], 10_000, 300, WB, control="half noise"),
    *(Setting(f"DP-Marginals ({c})", CONTROLS[c], 2_000, 300, WB, control=c) for c in ("stored seed",
                                                                                       "unnoised domain")),
    *(Setting(f"DP-Marginals ({c})", CONTROLS[c], 1_000, 100, BB, control=c, epsilons=(1.0,))
      for c in ("stored seed", "unnoised domain")),
)


STATIC_NOTES = (
    "White-box attacks read the released noisy counts: DP-Marginals `counts_`, DP-Histogram `counts_`, NPGC "
    "`cell_counts_` (its Kendall-tau measurement is released only as the repaired correlation, so the attack "
    "sees the marginals' share of the budget: at most `sqrt(marginal_share) * mu_claimed`), MST `one_way_counts_` "
    "and `two_way_counts_` (2 columns: one tree, no selection step), DP-Markov / DP-HistSeq length and "
    "transition / event counts. The test is the exact likelihood ratio of those counts (exact counts of both "
    "neighbours from a non-private refit; noise law and scale from the budget log).",
    "DP-CTGAN, PATE-GAN and CAPS release no noisy statistics (DP-SGD / PATE): they are audited black-box "
    "(the white-box attack would fall back to the same score), at tiny model sizes. Their fits cost 0.07 s "
    "(PATE-GAN), 1 s (CAPS) and 2-4 s (DP-CTGAN) each, so CAPS gets 500 and DP-CTGAN 50 fits per "
    "dataset instead of 1,000 (to fit the 30-minute budget on 2 cores); such bounds can only be small (a "
    "perfect test on m measuring fits shows at most about log(m / 3.7)).",
    "A perfect distinguisher (the stored-seed and unnoised-domain controls) reaches the largest bound the "
    "number of fits allows: about log(m / 3.7) for epsilon with m measuring fits per dataset (4.9 for m = 500, "
    "5.6 for m = 1,000).",
    "zCDP synthesizers claim (epsilon, delta) at their delta (NPGC 1e-6, MST 1e-9, converted from rho); their "
    "`mu_claimed` is `sqrt(2 rho)` of the Gaussian noise they add, the quantity their mu bound is compared with.",
)


def _ported(setting: Setting) -> str | None:
    """None when the synthesizer runs on the new privacy core, else why it is skipped."""
    try:
        est = setting.make(1.0)
    except Exception as exc:  # noqa: BLE001 - a synthesizer that cannot be built is reported, not fatal
        return f"cannot be built ({type(exc).__name__}: {exc})"
    if "reproducible_noise" not in est.get_params():
        return "not yet ported to the new privacy core (no reproducible_noise parameter)"
    return None


# ---------------------------------------------------------------------------------- running
def _key(row: dict) -> tuple:
    return row["synthesizer"], row["attack"], round(row["epsilon"], 6)


def run(settings: list[Setting], quick: bool, n_jobs: int, skip: set = frozenset(),
        save: Callable[[list[dict], list[str]], Any] | None = None) -> tuple[list[dict], list[str]]:
    """Audit every setting (but those in ``skip``); ``save(rows, notes)`` after each audit."""
    from skdpsynth.audit._privacy_audit import audit_privacy

    rows, notes = [], []
    for s in settings:
        why = _ported(s)
        if why is not None:
            if f"{s.name}: skipped, {why}." not in notes:
                notes.append(f"{s.name}: skipped, {why}.")
                print(notes[-1], flush=True)
            continue
        for eps in s.epsilons:
            for attack in s.attacks:
                trials = s.quick_trials if quick else s.trials
                if (s.name, attack, round(eps, 6)) in skip:
                    continue
                try:
                    res = audit_privacy(s.make(eps), attack=attack, trials=trials, n_people=100, n_jobs=n_jobs,
                                        progress=False, random_state=0)
                except Exception as exc:  # noqa: BLE001 - one failing synthesizer must not stop the audit
                    notes.append(f"{s.name} eps={eps:g} {attack}: failed ({type(exc).__name__}: {exc}).")
                    print(notes[-1], flush=True)
                    continue
                rows.append(_row(s, res, attack))
                print(f"{s.name:32s} eps={eps:g} {attack:9s} eps_lower={res.epsilon_lower:.3f} "
                      f"mu_lower={res.mu_lower:.3f} trials={trials} {res.seconds:.1f} s", flush=True)
                if save is not None:
                    save(rows, notes)
    return rows, notes


def _row(s: Setting, res: Any, attack: str) -> dict:
    row = {"synthesizer": s.name, "epsilon": res.epsilon, "delta": res.delta, "epsilon_lower": res.epsilon_lower,
           "mu_lower": res.mu_lower, "trials": res.trials, "control": s.control, "attack": attack}
    if res.mu_claimed is not None:
        row["mu_claimed"] = res.mu_claimed
    if res.mu_implied is not None:
        row["mu_implied"] = res.mu_implied
    row.update(fpr=res.fpr, fnr=res.fnr, above_claim=res.violation, publishable=res.publishable,
               seconds=res.seconds, measuring_trials=res.trials - res.selection_trials,
               errors={k: list(v) for k, v in res.errors.items()})
    return row


def judge(rows: list[dict]) -> list[dict]:
    """Add the family-wise bounds (Bonferroni over FAMILY audits) and the verdict ``caught`` to every row."""
    from skdpsynth.audit._privacy_bounds import epsilon_lower_bound, mu_lower_bound

    if len(rows) > FAMILY:
        raise ValueError(f"{len(rows)} audits exceed the family size {FAMILY} the verdicts are corrected for.")
    alpha = ALPHA / FAMILY
    out = []
    for r in rows:
        m = r["measuring_trials"]
        (fp, fn), (mfp, mfn) = r["errors"]["epsilon"], r["errors"]["mu"]
        eps_fw = epsilon_lower_bound(fp, m, fn, m, delta=r["delta"], alpha=alpha)
        mu_fw = mu_lower_bound(mfp, m, mfn, m, alpha=alpha)
        mu_claim = r.get("mu_claimed", r.get("mu_implied"))
        caught = eps_fw > r["epsilon"] + 1e-9 or (mu_claim is not None and mu_fw > mu_claim + 1e-9)
        out.append({**r, "epsilon_lower_familywise": eps_fw, "mu_lower_familywise": mu_fw, "caught": bool(caught)})
    return out


def _order(row: dict) -> tuple:
    names = [(s.name, s.attacks) for s in SETTINGS]
    index = next((i for i, (n, a) in enumerate(names) if n == row["synthesizer"] and row["attack"] in a), len(names))
    return index, row["epsilon"]


def merge(old: dict, rows: list[dict], notes: list[str], ran: list[Setting]) -> tuple[list[dict], list[str]]:
    """Rows of a previous result file, with this run's rows replacing those of the same audits."""
    fresh = {_key(r) for r in rows}
    kept = [r for r in old.get("rows", []) if _key(r) not in fresh]
    ran_names = {s.name for s in ran}
    kept_notes = [n for n in old.get("notes", []) if n.split(":")[0].split(" eps=")[0] not in ran_names]
    return sorted(kept + rows, key=_order), kept_notes + notes


def verdicts(rows: list[dict]) -> list[str]:
    """Which expectations failed: honest synthesizers caught, controls not caught, weak pure-DP audits."""
    bad = []
    for r in rows:
        label = f"{r['synthesizer']} eps={r['epsilon']:g} {r['attack']}"
        if r["control"] is None and r["caught"]:
            bad.append(f"{label}: lower bound above the claim (family-wise)")
        if r["control"] is not None and r["attack"] == "white-box" and not r["caught"]:
            bad.append(f"{label}: control not caught")
        if (r["control"] is None and r["attack"] == "white-box" and r["synthesizer"] in ("DP-Marginals",
                                                                                         "DP-Histogram")
                and r["epsilon_lower"] < r["epsilon"] / 2):
            bad.append(f"{label}: lower bound below half the claim")
    return bad


def plot(rows: list[dict], path: Path) -> None:
    """Lower bound against claim: epsilon (left) and mu (right); controls as red crosses."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    markers = {"white-box": "o", "black-box": "s"}
    names = sorted({r["synthesizer"] for r in rows if r["control"] is None})
    palette = [plt.cm.tab10(i) for i in range(10) if i != 3]  # red is for the controls
    colours = {n: palette[i % len(palette)] for i, n in enumerate(names)}
    for ax, claim, lower, title in ((axes[0], "epsilon", "epsilon_lower", "epsilon"),
                                    (axes[1], None, "mu_lower", "mu (GDP)")):
        top = 0.0
        for r in rows:
            x = r["epsilon"] if claim else r.get("mu_claimed", r.get("mu_implied"))
            if x is None or not math.isfinite(x):
                continue
            if r["control"] is not None:
                ax.scatter(x, r[lower], marker="X", s=90, color="red", edgecolor="black", zorder=3)
            else:
                i = names.index(r["synthesizer"])
                jitter = (i - (len(names) - 1) / 2) * 0.012 * max(x, 1.0)  # side by side at equal claims
                ax.scatter(x + jitter, r[lower], marker=markers.get(r["attack"], "^"), s=40, alpha=0.85,
                           color=colours[r["synthesizer"]])
            top = max(top, x, r[lower])
        ax.plot([0, top * 1.1], [0, top * 1.1], "k--", lw=1)
        ax.set_xlabel(f"claimed {title}" + ("" if claim else " (of the noise added, or implied by pure epsilon)"))
        ax.set_ylabel(f"95% lower bound on {title}")
        ax.set_title(f"{title}: audit lower bound vs claim (dashed: equal)")
    handles = [plt.Line2D([], [], color=colours[n], marker="o", ls="", label=n) for n in names]
    handles += [plt.Line2D([], [], color="red", marker="X", ls="", markeredgecolor="black", markersize=9,
                           label="broken control"),
                plt.Line2D([], [], color="grey", marker="o", ls="", label="white-box"),
                plt.Line2D([], [], color="grey", marker="s", ls="", label="black-box")]
    axes[0].legend(handles=handles, fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def markdown(rows: list[dict], notes: list[str], bad: list[str], quick: bool, n_jobs: int) -> str:
    """The results page."""
    cols = ["synthesizer", "control", "attack", "epsilon", "delta", "epsilon_lower", "mu_lower", "mu_claimed",
            "mu_implied", "trials", "above_claim", "epsilon_lower_familywise", "mu_lower_familywise", "caught",
            "seconds"]
    shown = [{**r, "control": r["control"] or "-"} for r in rows]
    lines = [
        f"# Empirical privacy audit{' (quick)' if quick else ''}", "",
        "`python benchmarks/privacy_audit.py" + (" --quick" if quick else "") + f"` ({n_jobs} jobs): "
        f"{sum(r['seconds'] for r in rows) / 60:.1f} min of audits (wall time, machine shared).", "",
        "Neighbouring datasets: 100 people with / without a canary whose record is unique (tables: a category and "
        "an age no one else has, public schema given; sequences: a learner with `max_length=5` events of an event "
        "no one else produces, public vocabulary given). `trials` = fits per dataset; half choose the threshold "
        "test, half measure it. `epsilon_lower`, `mu_lower`: one-sided 95% lower bounds (Clopper-Pearson, the "
        "two error rates jointly); `above_claim`: one of them exceeds the claim (epsilon; mu against `mu_claimed` "
        "for Gaussian mechanisms, against `mu_implied` -- the most any test can show against pure epsilon-DP -- "
        "otherwise). A 95% bound exceeds the claim of a mechanism it tests tightly with probability up to 5%, so "
        f"the verdict `caught` uses the same tests at the family-wise level (Bonferroni over at most {FAMILY} "
        f"audits, alpha = 0.05 / {FAMILY}: `*_familywise`; {len(rows)} audits here): every honest synthesizer "
        "should pass and every broken control be caught, with probability 0.95 for the whole table.", "",
        markdown_table(shown, cols), "",
    ]
    lines += ["## Checks", ""] + ([f"- FAILED: {b}" for b in bad] or [
        "- no honest synthesizer is caught (family-wise); every control is caught (white-box, family-wise); "
        "DP-Marginals / DP-Histogram white-box 95% bounds are at least half the claimed epsilon."]) + [""]
    lines += ["## Notes", ""] + [f"- {n}" for n in [*STATIC_NOTES, *notes]] + [""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few fits per setting (smoke run)")
    parser.add_argument("--only", nargs="*", help="names of the settings to run (substring match)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other rows of the existing result file (rerun some settings)")
    parser.add_argument("--resume", action="store_true",
                        help="as --merge, and skip the audits the result file already has")
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args(argv)
    settings = [s for s in SETTINGS if not args.only or any(o.lower() in s.name.lower() for o in args.only)]
    name = "privacy_audit_quick" if args.quick else "privacy_audit"
    path = RESULTS / f"{name}.json"
    old = json.loads(path.read_text()) if (args.merge or args.resume) and path.exists() else {}
    skip = {_key(r) for r in old.get("rows", [])} if args.resume else set()

    def save(rows: list[dict], notes: list[str]) -> list[str]:  # after every audit: a crash loses one at most
        rows, notes = merge(old, rows, notes, settings) if old else (sorted(rows, key=_order), notes)
        rows = judge(rows)
        bad = verdicts(rows)
        write_results(name, {"quick": args.quick, "n_jobs": args.n_jobs, "alpha": ALPHA, "family": FAMILY,
                             "seconds": sum(r["seconds"] for r in rows), "rows": rows, "notes": notes,
                             "failed_checks": bad},
                      markdown(rows, notes, bad, args.quick, args.n_jobs))
        if rows:
            plot(rows, RESULTS / f"{name}.png")
        return bad

    start = time.perf_counter()
    rows, notes = run(settings, args.quick, args.n_jobs, skip=skip, save=save)
    bad = save(rows, notes)
    print(f"done in {(time.perf_counter() - start) / 60:.1f} min; {len(bad)} failed checks", flush=True)
    for b in bad:
        print("FAILED:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
