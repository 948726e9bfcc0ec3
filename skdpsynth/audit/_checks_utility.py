"""Predictive checks: utility (TSTR vs TRTR, classification or regression) and subgroup fairness."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from skdpsynth.audit._base import AuditData, BaseCheck, CheckResult, _as_list, require_columns, require_label
from skdpsynth.audit._checks_common import check_seed, is_schema, long_features
from skdpsynth.metrics._fairness import fairness_gaps
from skdpsynth.metrics._regression import target_task, tstr_regression_scores
from skdpsynth.metrics._utility import outcome_coverage, tstr_scores
from skdpsynth.privacy import geometric_variance

__all__ = ["UtilityCheck", "FairnessCheck"]


def _tstr_cached(data: AuditData, target: str, estimator: Any, seed: int, frames: tuple, key_extra: Any,
                 task: str = "classification") -> dict:
    key = ("tstr", task, target, repr(estimator), seed, key_extra)
    if key not in data.cache:
        syn, hold, train = frames
        score = tstr_regression_scores if task == "regression" else tstr_scores
        data.cache[key] = score(train, hold, syn, target=target, estimator=estimator, random_state=seed)
    return data.cache[key]


def _task_of(target: str, holdout: pd.DataFrame, schema: Any, task: str = "auto", max_classes: int = 10) -> str:
    if task not in ("auto", "classification", "regression"):
        raise ValueError(f"task must be 'auto', 'classification' or 'regression', got {task!r}.")
    if task != "auto":
        return task
    return target_task(holdout[target], schema=schema, name=target, max_classes=max_classes)


class UtilityCheck(BaseCheck):
    """Predictive usefulness: train on synthetic, test on real (TSTR) vs train on real (TRTR).

    Classification (PEARL). Fails when (a) a real outcome class with at least
    ``min_class_share`` of the real rows is missing from the release (the
    reason names it), (b) TSTR macro-F1 is at the no-skill floor (within
    ``floor_margin``), (c) there is no usable real comparison (TRTR itself at
    the floor, or not computable), or (d) TSTR / TRTR is below ``min_ratio``.
    The no-skill floor is the larger of the majority-class floor (macro-F1 of
    always predicting the majority class, PEARL's "near-zero performance")
    and the chance floor ``1 / n_classes`` (expected macro-F1 of guessing with
    the class frequencies): a model at chance beats the majority floor on
    balanced classes yet has learned nothing.

    Regression (a numeric outcome, e.g. grades 0-20). The same rule on R^2:
    fails when TRTR or TSTR R^2 is within ``floor_margin`` of the no-skill
    floor (R^2 of predicting the real training mean), or TSTR / TRTR R^2 is
    below ``min_ratio``; MAE is reported alongside.

    Score: TSTR / TRTR (0 when undefined).

    Parameters
    ----------
    target : str
        The outcome column.
    task : {"auto", "classification", "regression"}, default="auto"
        ``"auto"``: the public schema's kind of ``target`` (continuous or
        integer -> regression), else the values (fractions, or more than
        ``max_classes`` distinct whole numbers -> regression).
    min_ratio : float, default=0.8
    min_class_share : float, default=0.01
    floor_margin : float, default=0.02
    estimator : classifier or regressor, optional
        Default: one-hot encoding + HistGradientBoosting.
    id_col, event_col : str, optional
        For long tables (order-free per-learner features).
    random_state : int, optional
    max_classes : int, default=10
    """

    name = "utility"

    def __init__(self, *, target, task="auto", min_ratio=0.8, min_class_share=0.01, floor_margin=0.02,
                 estimator=None, id_col=None, event_col=None, random_state=None, max_classes=10):
        self.target = target
        self.task = task
        self.min_ratio = min_ratio
        self.min_class_share = min_class_share
        self.floor_margin = floor_margin
        self.estimator = estimator
        self.id_col = id_col
        self.event_col = event_col
        self.random_state = random_state
        self.max_classes = max_classes

    def check_inputs(self, holdout, schema=None) -> None:
        require_columns(self, holdout, {"target": self.target, "id": self.id_col, "event": self.event_col})

    def _frames(self, data: AuditData) -> tuple:
        if self.id_col is not None:
            feats = long_features(self, data, self.target)
            return feats if len(feats) == 3 else (*feats, None)
        return data.synthetic, data.holdout, data.train

    def _threshold(self) -> dict:
        return {"min_ratio": self.min_ratio, "min_class_share": self.min_class_share,
                "floor_margin": self.floor_margin}

    def _evaluate(self, data: AuditData) -> CheckResult:
        self.check_inputs(data.holdout, data.schema)
        if self.target not in data.synthetic.columns:
            msg = f"utility: the release lacks the target column {self.target!r}"
            return CheckResult(self.name, 0.0, False, self._threshold(), msg, {}, uses_confidential_data=False)
        if data.train is not None and self.target not in data.train.columns:
            raise ValueError(f"UtilityCheck: target column {self.target!r} is not in the train data.")
        frames = self._frames(data)
        task = _task_of(self.target, frames[1], None if self.id_col else data.schema, self.task, self.max_classes)
        if task == "regression":
            return self._regression(data, frames)
        return self._classification(data, frames)

    def _classification(self, data: AuditData, frames: tuple) -> CheckResult:
        real_y = pd.concat([f[self.target] for f in (frames[2], frames[1]) if f is not None])
        cov = outcome_coverage(real_y, frames[0][self.target], min_share=self.min_class_share)
        res = _tstr_cached(data, self.target, self.estimator, check_seed(data, self.random_state), frames,
                           (self.id_col, str(self.event_col)))
        tstr, trtr, majority = res["tstr_f1"], res["trtr_f1"], res["majority_floor"]
        chance = 1.0 / max(len(res["classes"]), 1)
        floor = max(majority, chance)
        ratio = res["ratio"] if np.isfinite(res["ratio"]) else 0.0
        fails, public = [], []
        if cov["missing"]:
            shares = ", ".join(f"{k!r} ({cov['real_shares'][str(k)]:.1%} of real rows)" for k in cov["missing"])
            fails.append(f"outcome class(es) missing from the release: {shares}")
            public.append(f"outcome class(es) missing from the release: {', '.join(repr(k) for k in cov['missing'])}")
        if not np.isfinite(trtr) or trtr <= floor + self.floor_margin:
            fails.append(f"no usable real comparison (train-on-real macro-F1 {trtr:.3f}, no-skill floor {floor:.3f})")
            public.append("no usable real comparison (train-on-real at the no-skill floor)")
        if tstr <= floor + self.floor_margin:
            fails.append(f"near-zero performance: TSTR macro-F1 {tstr:.3f} is at the no-skill floor {floor:.3f} "
                         f"(majority class {majority:.3f}, chance {chance:.3f})")
            public.append("near-zero performance: TSTR macro-F1 at the no-skill floor")
        if ratio < self.min_ratio:
            fails.append(f"TSTR/TRTR macro-F1 ratio {ratio:.3f} < {self.min_ratio}")
            public.append(f"TSTR/TRTR macro-F1 ratio below {self.min_ratio}")
        details = {
            "task": "classification", "tstr_f1": tstr, "trtr_f1": trtr, "ratio": res["ratio"],
            "majority_floor": majority, "chance_floor": chance, "no_skill_floor": floor,
            "per_class_tstr": res["per_class_tstr"], "per_class_trtr": res["per_class_trtr"],
            "trtr_method": res["trtr_method"], "missing_classes": cov["missing"],
            "missing_minor_classes": cov["missing_minor"], "covered_real_mass": cov["covered_mass"],
            "real_class_shares": cov["real_shares"], "synthetic_class_shares": cov["synthetic_shares"],
            "n_synthetic_used": res["n_synthetic_used"],
        }
        reason = ("utility: " + "; ".join(fails)) if fails else (
            f"TSTR macro-F1 {tstr:.3f} vs TRTR {trtr:.3f} (ratio {ratio:.3f} >= {self.min_ratio}); all outcome "
            "classes present")
        public_reason = ("utility: " + "; ".join(public)) if public else (
            f"utility: TSTR/TRTR macro-F1 ratio at least {self.min_ratio}; all outcome classes present")
        return CheckResult(self.name, float(ratio), not fails, self._threshold(), reason, details,
                           confidential=[k for k in details if k != "task"], public_reason=public_reason,
                           artifacts={"per_class_tstr": res["per_class_tstr"], "per_class_trtr": res["per_class_trtr"],
                                      "tstr_f1": tstr, "trtr_f1": trtr, "majority_floor": floor})  # plotted floor

    def _regression(self, data: AuditData, frames: tuple) -> CheckResult:
        res = _tstr_cached(data, self.target, self.estimator, check_seed(data, self.random_state), frames,
                           (self.id_col, str(self.event_col)), task="regression")
        tstr, trtr, floor = res["tstr_r2"], res["trtr_r2"], res["mean_floor_r2"]
        ratio = res["ratio"] if np.isfinite(res["ratio"]) else 0.0
        fails, public = [], []
        if not trtr > floor + self.floor_margin:
            fails.append(f"no usable real comparison (train-on-real R^2 {trtr:.3f}, mean-prediction floor "
                         f"{floor:.3f})")
            public.append("no usable real comparison (train-on-real R^2 at the mean-prediction floor)")
        if not tstr > floor + self.floor_margin:
            fails.append(f"near-zero performance: TSTR R^2 {tstr:.3f} is at the mean-prediction floor {floor:.3f}")
            public.append("near-zero performance: TSTR R^2 at the mean-prediction floor")
        if ratio < self.min_ratio:
            fails.append(f"TSTR/TRTR R^2 ratio {ratio:.3f} < {self.min_ratio} (MAE {res['tstr_mae']:.3g} vs "
                         f"{res['trtr_mae']:.3g})")
            public.append(f"TSTR/TRTR R^2 ratio below {self.min_ratio}")
        details = {"task": "regression", **{k: v for k, v in res.items() if not isinstance(v, np.ndarray)}}
        reason = ("utility: " + "; ".join(fails)) if fails else (
            f"TSTR R^2 {tstr:.3f} vs TRTR {trtr:.3f} (ratio {ratio:.3f} >= {self.min_ratio}); MAE "
            f"{res['tstr_mae']:.3g} vs {res['trtr_mae']:.3g}")
        public_reason = ("utility: " + "; ".join(public)) if public else (
            f"utility: TSTR/TRTR R^2 ratio at least {self.min_ratio}")
        return CheckResult(self.name, float(max(ratio, 0.0)), not fails, self._threshold(), reason, details,
                           confidential=[k for k in details if k != "task"], public_reason=public_reason,
                           artifacts={"bars": {"R^2": (max(tstr, 0.0), max(trtr, 0.0))}, "majority_floor": 0.0,
                                      "ylabel": "R^2 on the real holdout"})


class FairnessCheck(BaseCheck):
    """Subgroup performance of the train-on-synthetic model on the real holdout.

    For each protected attribute, the recall within each group (of the
    ``positive`` class, e.g. ``"Dropout"`` for at-risk prediction; by default
    the macro-averaged recall over classes) of a classifier trained on the
    release and tested on the real holdout. Fails when the worst-group recall
    gap exceeds ``max_gap`` or any group's recall is below ``min_recall``
    (PEARL's discussion: a small gap can hide uniformly poor predictions).
    Groups with fewer than ``min_support`` rows of the positive class (or
    rows, without ``positive``) are reported but not used. The same gaps for
    the model trained on real rows are reported for context.

    A protected attribute, target or ``positive`` class that is not in the
    data is an error naming it (a misspelling must not pass as "not
    applicable"). Not applicable when no attribute has two usable groups, or
    the target is numeric (recall needs classes). Score: ``1 - worst gap``.

    Published verdict (``ReleaseAuditor(verdict_epsilon=...)``, when the public
    schema lists the categories of the target and of every protected
    attribute): the same rule on a noisy histogram of (group, class, correct)
    of the model trained on the release, predicting each holdout person (the
    support rule on noisy counts too). Each person adds 1 to one cell per
    attribute: L1 sensitivity = the number of protected attributes.

    Parameters
    ----------
    target : str
    protected : str or list of str
        Protected attribute columns (e.g. ``["Gender", "Scholarship holder"]``).
    positive : label, optional
    max_gap : float, default=0.2
        Not published by PEARL (their PATE-GAN failures averaged a 0.244 gap).
    min_recall : float, default=0.4
    min_support : int, default=10
    estimator : classifier, optional
    random_state : int, optional
    """

    name = "fairness"
    dp_sensitivity = ("L1 = the number of protected attributes: each holdout person adds 1 to one (group, class, "
                      "correct) cell per attribute, the class and correctness of the model trained on the release")

    def __init__(self, *, target, protected, positive=None, max_gap=0.2, min_recall=0.4, min_support=10,
                 estimator=None, random_state=None):
        self.target = target
        self.protected = protected
        self.positive = positive
        self.max_gap = max_gap
        self.min_recall = min_recall
        self.min_support = min_support
        self.estimator = estimator
        self.random_state = random_state

    def check_inputs(self, holdout, schema=None) -> None:
        require_columns(self, holdout, {"target": self.target, "protected": self.protected})
        if self.positive is not None:
            spec = schema[self.target] if schema is not None and self.target in schema else None
            public = spec is not None and bool(spec.categories)
            values = spec.categories if public else holdout[self.target].dropna()
            require_label(self, self.positive, values, role="positive class", column=self.target, public=public)

    def _threshold(self) -> dict:
        return {"max_gap": self.max_gap, "min_recall": self.min_recall, "min_support": self.min_support}

    def _not_applicable(self, reason: str, details: dict | None = None) -> CheckResult:
        details = details or {}
        return CheckResult(self.name, float("nan"), True, self._threshold(), reason, details, applicable=False,
                           confidential=list(details))

    def _evaluate(self, data: AuditData) -> CheckResult:
        self.check_inputs(data.holdout, data.schema)
        attrs = _as_list(self.protected)
        if self.target not in data.synthetic.columns:
            return self._not_applicable(f"not applicable: the release lacks the target column {self.target!r}")
        if _task_of(self.target, data.holdout, data.schema) == "regression":
            return self._not_applicable(f"not applicable: the target {self.target!r} is numeric (subgroup recall "
                                        "needs classes)")
        frames = (data.synthetic, data.holdout, data.train)
        res = _tstr_cached(data, self.target, self.estimator, check_seed(data, self.random_state), frames,
                           (None, "None"))
        hold = data.holdout[data.holdout[self.target].notna()]
        syn_gaps = fairness_gaps(res["y_true"], res["y_pred_tstr"], hold[attrs], positive=self.positive,
                                 min_support=self.min_support)
        real_gaps = fairness_gaps(res["y_true"], res["y_pred_trtr"], hold[attrs], positive=self.positive,
                                  min_support=self.min_support)
        gap, low = syn_gaps["worst_gap"], syn_gaps["min_recall"]
        details = {"synthetic_trained": syn_gaps, "real_trained": real_gaps, "positive": self.positive}
        if not np.isfinite(gap):
            return self._not_applicable("not applicable: no protected attribute has two groups with enough support",
                                        details)
        fails = []
        if gap > self.max_gap:
            per = syn_gaps["per_attribute"][syn_gaps["worst_attribute"]]["groups"]
            used = {k: v["recall"] for k, v in per.items() if v["used"]}
            lo_g, hi_g = min(used, key=used.get), max(used, key=used.get)
            fails.append(f"worst-group recall gap {gap:.3f} > {self.max_gap} on {syn_gaps['worst_attribute']!r} "
                         f"({lo_g}: {used[lo_g]:.3f} vs {hi_g}: {used[hi_g]:.3f})")
        if low < self.min_recall:
            fails.append(f"minimum subgroup recall {low:.3f} < {self.min_recall}")
        reason = ("fairness: " + "; ".join(fails)) if fails else (
            f"worst-group recall gap {gap:.3f} <= {self.max_gap}; minimum subgroup recall {low:.3f} >= "
            f"{self.min_recall}")
        public_reason = self._rule(gap, low, syn_gaps["worst_attribute"])[1]
        recalls = {a: {g: v["recall"] for g, v in d["groups"].items()} for a, d in syn_gaps["per_attribute"].items()}
        real_recalls = {a: {g: v["recall"] for g, v in d["groups"].items()}
                        for a, d in real_gaps["per_attribute"].items()}
        return CheckResult(self.name, 1.0 - gap, not fails, self._threshold(), reason, details,
                           confidential=["synthetic_trained", "real_trained"], public_reason=public_reason,
                           artifacts={"recalls": recalls, "real_recalls": real_recalls})

    def _rule(self, gap: float, low: float, worst: Any) -> tuple[bool, str]:
        """The decision on the worst gap and the lowest recall, and its public reason (no figure)."""
        public = []
        if gap > self.max_gap:
            public.append(f"worst-group recall gap above {self.max_gap} on {worst!r}")
        if low < self.min_recall:
            public.append(f"minimum subgroup recall below {self.min_recall}")
        return not public, ("fairness: " + "; ".join(public)) if public else (
            f"fairness: worst-group recall gap at most {self.max_gap}; minimum subgroup recall at least "
            f"{self.min_recall}")

    def _public_levels(self, schema: Any) -> dict[str, list[str]] | None:
        """Categories of the target and each protected attribute from the public schema (None if one lacks them)."""
        names = [self.target, *_as_list(self.protected)]
        if not is_schema(schema) or any(n not in schema or not schema[n].categories for n in names):
            return None
        return {n: [str(c) for c in schema[n].categories] for n in names}

    def supports_dp_verdict(self, data: AuditData) -> bool:
        return self._public_levels(data.schema) is not None

    def dp_verdict(self, data: AuditData, answers, epsilon: float) -> tuple[bool, bool, str]:
        levels = self._public_levels(data.schema)
        attrs = _as_list(self.protected)
        if self.target not in data.synthetic.columns:
            return False, True, f"not applicable: the release lacks the target column {self.target!r}"
        res = _tstr_cached(data, self.target, self.estimator, check_seed(data, self.random_state),
                           (data.synthetic, data.holdout, data.train), (None, "None"))
        hold = data.holdout[data.holdout[self.target].notna()]
        classes = [str(self.positive)] if self.positive is not None else levels[self.target] + ["<other>"]
        y_true, y_pred = (np.asarray(pd.Series(y).astype(str)) for y in (res["y_true"], res["y_pred_tstr"]))
        cls = np.array([classes.index(v) if v in classes else -1 for v in y_true])
        if self.positive is None:
            cls[cls < 0] = len(classes) - 1
        shapes = [(len(levels[a]) + 2, len(classes), 2) for a in attrs]  # groups + missing + other
        cells, offset = [], 0
        for a, shape in zip(attrs, shapes):
            g = _group_index(hold[a], levels[a])
            cell = np.ravel_multi_index((g, np.maximum(cls, 0), (y_pred == y_true).astype(int)), shape)
            cells.append(np.where(cls >= 0, cell + offset, -1))
            offset += int(np.prod(shape))
        noisy = answers.histogram(np.column_stack(cells), offset, epsilon=epsilon,
                                  target=f"audit verdict {self.name!r}: (group, class, correct) of the synthetic-"
                                         "trained model on the holdout")
        counts = np.split(np.maximum(noisy, 0).astype(float), np.cumsum([int(np.prod(s)) for s in shapes])[:-1])
        cell_sd = float(np.sqrt(geometric_variance(len(attrs), epsilon)))  # public: from the parameters only
        gaps, lows = {}, []
        for a, c, shape in zip(attrs, counts, shapes):
            recalls = _noisy_recalls(c.reshape(shape), self.min_support, cell_sd)
            lows += recalls
            if len(recalls) >= 2:
                gaps[a] = max(recalls) - min(recalls)
        if not gaps:
            return False, True, "not applicable: no protected attribute has two groups with enough support"
        worst = max(gaps, key=gaps.get)
        passed, reason = self._rule(gaps[worst], min(lows), worst)
        return True, passed, reason


def _group_index(values: pd.Series, categories: list[str]) -> np.ndarray:
    """Each row's group: its category's index, then one cell for missing and one for anything else."""
    lookup = {c: i for i, c in enumerate(categories)}
    missing = values.isna().to_numpy()
    index = np.array([lookup.get(str(v), len(categories) + 1) for v in values], dtype=np.int64)
    index[missing] = len(categories)
    return index


def _noisy_recalls(counts: np.ndarray, min_support: int, cell_sd: float) -> list[float]:
    """Recall within each group with enough noisy support, from (group, class, correct) noisy counts.

    As :func:`skdpsynth.metrics.fairness_gaps` on exact rows (one class: the positive class's recall; several:
    the macro recall over the classes present), with the noise in mind: a group is used when its support clears
    ``min_support`` by two noise standard deviations, and a class is present when its count clears two, so cells
    that are noise alone (an empty group or class) do not decide the verdict.
    """
    out = []
    for group in counts:
        per_class = group.sum(axis=1)
        if per_class.sum() < min_support + 2.0 * cell_sd * np.sqrt(group.size):
            continue
        seen = per_class >= max(1.0, 2.0 * cell_sd * np.sqrt(2.0))
        if seen.any():
            out.append(float(np.mean(np.minimum(group[seen, 1] / per_class[seen], 1.0))))
    return out
