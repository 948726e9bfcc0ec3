"""The PEARL checks: validity, privacy, utility, sequence task, knowledge tracing, fairness.

Each is a :class:`~skdpsynth.audit.BaseCheck`: thresholds are parameters (PEARL's
where the paper publishes them, documented defaults otherwise), ``evaluate``
returns a :class:`~skdpsynth.audit.CheckResult` and the check is a scikit-learn
scorer. Scores are "greater is better".

Tables are one row per person. Sequence data are long tables (one row per
event) named by ``id_col`` (learner), ``order_col`` (position or time) and
``event_col`` (the event; several columns form a joint event); the learner's
outcome is ``target`` / ``label_col``, constant within a learner. The privacy
and utility checks see a long table through order-free per-learner features
(event counts and length, :func:`skdpsynth.metrics.sequence_features`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from skdpsynth.audit._base import AuditData, BaseCheck, CheckResult, _as_list
from skdpsynth.exceptions import PrivacyLeakWarning
from skdpsynth.metrics._fairness import fairness_gaps
from skdpsynth.metrics._privacy import nearest_neighbour_privacy
from skdpsynth.metrics._utility import outcome_coverage, tstr_scores
from skdpsynth.metrics._validity import schema_validity, sequence_features, sequence_validity

__all__ = ["ValidityCheck", "PrivacyCheck", "UtilityCheck", "SequenceTaskCheck", "KnowledgeTracingCheck",
           "FairnessCheck"]


def _is_schema(obj: Any) -> bool:
    return obj is not None and hasattr(obj, "columns") and hasattr(obj, "validate") and hasattr(obj, "names")


def _seed(data: AuditData, own: Any) -> int:
    if isinstance(own, (int, np.integer)) and not isinstance(own, bool):
        return int(own)
    return int(data.random_state)


def _long_features(check: BaseCheck, data: AuditData, label: str | None) -> tuple[pd.DataFrame, ...]:
    """Per-learner order-free features of synthetic, holdout (and train), on a shared vocabulary."""
    frames = [data.synthetic, data.holdout] + ([data.train] if data.train is not None else [])
    ev = _as_list(check.event_col)
    for name, f in zip(("synthetic", "holdout", "train"), frames):
        missing = [c for c in [check.id_col, *ev] + ([label] if label else []) if c not in f.columns]
        if missing:
            raise ValueError(f"{type(check).__name__}: {name} lacks column(s) {missing}.")
    feats = [sequence_features(f, id_col=check.id_col, event_col=check.event_col, label_col=label) for f in frames]
    cols = sorted(set().union(*(set(f.columns) for f in feats)) - {"n_events"} - ({label} if label else set()))
    ordered = ["n_events", *cols] + ([label] if label else [])
    return tuple(f.reindex(columns=ordered, fill_value=0.0).reset_index(drop=True) for f in feats)


# --------------------------------------------------------------------------- validity
class ValidityCheck(BaseCheck):
    """Schema conformance (tables) and sequence well-formedness (long tables).

    Score: the share of valid rows (or learners, for sequences; the smaller of
    the two when both apply). Passes when it is at least
    ``min_valid_fraction``.

    Parameters
    ----------
    schema : TableSchema, optional
        The public schema; default: the audit's schema. Without any, one is
        inferred from the real rows (not public: its findings are marked
        confidential).
    min_valid_fraction : float, default=1.0
        PEARL requires a fully valid release.
    id_col, event_col, order_col, label_col : str, optional
        Long-table columns; when ``id_col`` is given, sequences are checked too.
    vocabulary : sequence or dict, optional
        Allowed event values (per event column when a dict).
    max_length : int, optional
        Longest allowed sequence.
    """

    name = "validity"

    def __init__(self, *, schema=None, min_valid_fraction=1.0, id_col=None, event_col=None, order_col=None,
                 label_col=None, vocabulary=None, max_length=None):
        self.schema = schema
        self.min_valid_fraction = min_valid_fraction
        self.id_col = id_col
        self.event_col = event_col
        self.order_col = order_col
        self.label_col = label_col
        self.vocabulary = vocabulary
        self.max_length = max_length

    def _evaluate(self, data: AuditData) -> CheckResult:
        from skdpsynth.base import resolve_schema
        from skdpsynth.schema import infer_schema

        schema = resolve_schema(self.schema) if self.schema is not None else data.schema
        inferred = False
        if not _is_schema(schema):
            real = pd.concat([f for f in (data.train, data.holdout) if f is not None], ignore_index=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                schema = infer_schema(real)
            inferred = True
        details: dict[str, Any] = {"schema_source": "inferred from the real rows" if inferred else "public schema"}
        table = schema_validity(data.synthetic, schema)
        details["table"] = table
        scores = [table["valid_fraction"]]
        problems = []
        if table["missing_columns"]:
            problems.append(f"columns {table['missing_columns']} are missing")
        if table["extra_columns"]:
            problems.append(f"unexpected columns {table['extra_columns']}")
        for col, probs in table["problems"].items():
            problems.append(f"{col!r}: " + ", ".join(f"{n} values {p}" for p, n in probs.items()))
        if self.id_col is not None:
            if self.event_col is None:
                raise ValueError("ValidityCheck: give event_col with id_col to check sequences.")
            seq = sequence_validity(data.synthetic, id_col=self.id_col, event_col=self.event_col,
                                    order_col=self.order_col, label_col=self.label_col, vocabulary=self.vocabulary,
                                    max_length=self.max_length)
            details["sequences"] = seq
            scores.append(seq["valid_fraction"])
            if seq["missing_columns"]:
                problems.append(f"sequence columns {seq['missing_columns']} are missing")
            problems += [f"{n} learners: {p}" for p, n in seq["problems"].items()]
        score = float(min(scores))
        passed = score >= self.min_valid_fraction and not table["missing_columns"]
        if passed:
            reason = f"{score:.1%} of the release is valid against the {details['schema_source']}"
        else:
            reason = (f"only {score:.1%} of the release is valid (needs {self.min_valid_fraction:.0%}): "
                      + "; ".join(problems[:6]) + (" ..." if len(problems) > 6 else ""))
        return CheckResult(self.name, score, passed, {"min_valid_fraction": self.min_valid_fraction}, reason,
                           details, confidential=["table", "schema_source"] if inferred else [])


# --------------------------------------------------------------------------- privacy
class PrivacyCheck(BaseCheck):
    """Nearest-neighbour membership inference and exact-copy screening (PEARL).

    Members are the training rows, non-members an equal-size real holdout;
    each real row is scored by minus its Gower distance to the closest
    synthetic row (:func:`skdpsynth.metrics.nearest_neighbour_privacy`).

    Decision: fail when the attack's AUC exceeds ``max_auc`` (PEARL: 0.55), or
    when members are copied verbatim more often than non-members: the member
    exact-copy rate may exceed the non-member rate by at most
    ``copy_tolerance + copy_z * se`` (``se``: standard error of the difference
    of the two rates under equal rates).

    Why not "any exact copy fails" (PEARL's wording): on low-entropy discrete
    tables many real people share the same row, so a correct DP release
    reproduces real rows by chance -- for members and non-members alike. A
    rule that rejects any copy rejects correct DP releases; what signals
    memorisation is copying members *more* than equally likely non-members.
    Both rates, and the share of synthetic rows copying a training row, are
    reported.

    Score: ``1 - AUC`` (0.5 at chance; passes the AUC rule when >= ``1 - max_auc``).

    Parameters
    ----------
    max_auc : float, default=0.55
    copy_tolerance : float, default=0.01
    copy_z : float, default=2.0
    schema : TableSchema, optional
        Public bounds to scale numeric distances (default: the audit's schema,
        else the training range).
    id_col, event_col : str, optional
        For long tables: learners are compared through order-free features
        (event counts and length; the label when ``label_col`` is given).
    label_col : str, optional
    random_state : int, optional
        Seed of the balancing subsample (default: the audit's).
    """

    name = "privacy"
    requires_train = True

    def __init__(self, *, max_auc=0.55, copy_tolerance=0.01, copy_z=2.0, schema=None, id_col=None, event_col=None,
                 label_col=None, random_state=None):
        self.max_auc = max_auc
        self.copy_tolerance = copy_tolerance
        self.copy_z = copy_z
        self.schema = schema
        self.id_col = id_col
        self.event_col = event_col
        self.label_col = label_col
        self.random_state = random_state

    def _evaluate(self, data: AuditData) -> CheckResult:
        if self.id_col is not None:
            syn, hold, train = _long_features(self, data, self.label_col)
            schema = None
        else:
            syn, hold, train = data.synthetic, data.holdout, data.train
            schema = self.schema if self.schema is not None else (data.schema if _is_schema(data.schema) else None)
        res = nearest_neighbour_privacy(train, hold, syn, schema=schema, random_state=_seed(data, self.random_state))
        auc, pm, ph = res["membership_auc"], res["member_exact_rate"], res["nonmember_exact_rate"]
        n = res["n_members"]
        pooled = 0.5 * (pm + ph)
        se = math.sqrt(max(pooled * (1 - pooled), 0.0) * 2.0 / n) if n else 0.0
        allowed = self.copy_tolerance + self.copy_z * se
        auc_ok = auc <= self.max_auc
        copy_ok = pm - ph <= allowed
        fails = []
        if not auc_ok:
            fails.append(f"membership-inference AUC {auc:.3f} > {self.max_auc}")
        if not copy_ok:
            fails.append(f"{pm:.1%} of training rows appear verbatim in the release vs {ph:.1%} of holdout rows "
                         f"(allowed excess {allowed:.1%})")
        if fails:
            reason = "privacy: " + "; ".join(fails)
        else:
            reason = (f"membership-inference AUC {auc:.3f} <= {self.max_auc}; exact copies: members {pm:.1%}, "
                      f"non-members {ph:.1%}")
        details = {k: v for k, v in res.items() if not isinstance(v, np.ndarray)}
        details["allowed_copy_excess"] = allowed
        artifacts = {"member_distances": res["member_distances"], "nonmember_distances": res["nonmember_distances"]}
        confidential = [k for k in details if k != "n_synthetic"]
        return CheckResult(self.name, 1.0 - auc, auc_ok and copy_ok,
                           {"max_auc": self.max_auc, "copy_tolerance": self.copy_tolerance, "copy_z": self.copy_z},
                           reason, details, confidential=confidential, artifacts=artifacts)


# --------------------------------------------------------------------------- utility
def _tstr_cached(data: AuditData, target: str, estimator: Any, seed: int, frames: tuple, key_extra: Any) -> dict:
    key = ("tstr", target, repr(estimator), seed, key_extra)
    if key not in data.cache:
        syn, hold, train = frames
        data.cache[key] = tstr_scores(train, hold, syn, target=target, estimator=estimator, random_state=seed)
    return data.cache[key]


class UtilityCheck(BaseCheck):
    """Predictive usefulness: train on synthetic, test on real (TSTR) vs train on real (TRTR).

    Fails (PEARL) when (a) a real outcome class with at least
    ``min_class_share`` of the real rows is missing from the release (the
    reason names it), (b) TSTR macro-F1 is at the no-skill floor (within
    ``floor_margin``), (c) there is no usable real comparison (TRTR itself at
    the floor, or not computable), or (d) TSTR / TRTR is below ``min_ratio``.
    The no-skill floor is the larger of the majority-class floor (macro-F1 of
    always predicting the majority class, PEARL's "near-zero performance")
    and the chance floor ``1 / n_classes`` (expected macro-F1 of guessing with
    the class frequencies): a model at chance beats the majority floor on
    balanced classes yet has learned nothing.

    Score: TSTR / TRTR (0 when undefined).

    Parameters
    ----------
    target : str
        The outcome column.
    min_ratio : float, default=0.8
    min_class_share : float, default=0.01
    floor_margin : float, default=0.02
    estimator : classifier, optional
        Default: one-hot encoding + HistGradientBoostingClassifier.
    id_col, event_col : str, optional
        For long tables (order-free per-learner features).
    random_state : int, optional
    """

    name = "utility"

    def __init__(self, *, target, min_ratio=0.8, min_class_share=0.01, floor_margin=0.02, estimator=None,
                 id_col=None, event_col=None, random_state=None):
        self.target = target
        self.min_ratio = min_ratio
        self.min_class_share = min_class_share
        self.floor_margin = floor_margin
        self.estimator = estimator
        self.id_col = id_col
        self.event_col = event_col
        self.random_state = random_state

    def _frames(self, data: AuditData) -> tuple:
        if self.id_col is not None:
            feats = _long_features(self, data, self.target)
            return feats if len(feats) == 3 else (*feats, None)
        return data.synthetic, data.holdout, data.train

    def _evaluate(self, data: AuditData) -> CheckResult:
        threshold = {"min_ratio": self.min_ratio, "min_class_share": self.min_class_share,
                     "floor_margin": self.floor_margin}
        if self.target not in data.synthetic.columns:
            return CheckResult(self.name, 0.0, False, threshold,
                               f"utility: the release lacks the target column {self.target!r}", {})
        for label, frame in (("holdout", data.holdout), ("train", data.train)):
            if frame is not None and self.target not in frame.columns:
                raise ValueError(f"UtilityCheck: target column {self.target!r} is not in the {label} data.")
        frames = self._frames(data)
        real_y = pd.concat([f[self.target] for f in (frames[2], frames[1]) if f is not None])
        cov = outcome_coverage(real_y, frames[0][self.target], min_share=self.min_class_share)
        res = _tstr_cached(data, self.target, self.estimator, _seed(data, self.random_state), frames,
                           (self.id_col, str(self.event_col)))
        tstr, trtr, majority = res["tstr_f1"], res["trtr_f1"], res["majority_floor"]
        chance = 1.0 / max(len(res["classes"]), 1)
        floor = max(majority, chance)
        ratio = res["ratio"] if np.isfinite(res["ratio"]) else 0.0
        fails = []
        if cov["missing"]:
            shares = ", ".join(f"{k!r} ({cov['real_shares'][str(k)]:.1%} of real rows)" for k in cov["missing"])
            fails.append(f"outcome class(es) missing from the release: {shares}")
        if not np.isfinite(trtr) or trtr <= floor + self.floor_margin:
            fails.append(f"no usable real comparison (train-on-real macro-F1 {trtr:.3f}, no-skill floor {floor:.3f})")
        if tstr <= floor + self.floor_margin:
            fails.append(f"near-zero performance: TSTR macro-F1 {tstr:.3f} is at the no-skill floor {floor:.3f} "
                         f"(majority class {majority:.3f}, chance {chance:.3f})")
        if ratio < self.min_ratio:
            fails.append(f"TSTR/TRTR macro-F1 ratio {ratio:.3f} < {self.min_ratio}")
        details = {
            "tstr_f1": tstr, "trtr_f1": trtr, "ratio": res["ratio"], "majority_floor": majority,
            "chance_floor": chance, "no_skill_floor": floor,
            "per_class_tstr": res["per_class_tstr"], "per_class_trtr": res["per_class_trtr"],
            "trtr_method": res["trtr_method"], "missing_classes": cov["missing"],
            "missing_minor_classes": cov["missing_minor"], "covered_real_mass": cov["covered_mass"],
            "real_class_shares": cov["real_shares"], "synthetic_class_shares": cov["synthetic_shares"],
            "n_synthetic_used": res["n_synthetic_used"],
        }
        reason = ("utility: " + "; ".join(fails)) if fails else (
            f"TSTR macro-F1 {tstr:.3f} vs TRTR {trtr:.3f} (ratio {ratio:.3f} >= {self.min_ratio}); all outcome "
            "classes present")
        confidential = [k for k in details if k not in ("synthetic_class_shares", "n_synthetic_used")]
        return CheckResult(self.name, float(ratio), not fails, threshold, reason, details, confidential=confidential,
                           artifacts={"per_class_tstr": res["per_class_tstr"], "per_class_trtr": res["per_class_trtr"],
                                      "tstr_f1": tstr, "trtr_f1": trtr, "majority_floor": floor})  # plotted floor


# --------------------------------------------------------------------------- fairness
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

    Not applicable when no protected attribute is in the data or none has two
    usable groups. Score: ``1 - worst gap``.

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

    def _evaluate(self, data: AuditData) -> CheckResult:
        threshold = {"max_gap": self.max_gap, "min_recall": self.min_recall, "min_support": self.min_support}
        attrs = [c for c in _as_list(self.protected) if c in data.holdout.columns]
        if not attrs or self.target not in data.synthetic.columns:
            return CheckResult(self.name, float("nan"), True, threshold,
                               f"not applicable: protected attribute(s) {_as_list(self.protected)} not in the data",
                               {}, applicable=False)
        frames = (data.synthetic, data.holdout, data.train)
        res = _tstr_cached(data, self.target, self.estimator, _seed(data, self.random_state), frames, (None, "None"))
        hold = data.holdout[data.holdout[self.target].notna()]
        syn_gaps = fairness_gaps(res["y_true"], res["y_pred_tstr"], hold[attrs], positive=self.positive,
                                 min_support=self.min_support)
        real_gaps = fairness_gaps(res["y_true"], res["y_pred_trtr"], hold[attrs], positive=self.positive,
                                  min_support=self.min_support)
        gap, low = syn_gaps["worst_gap"], syn_gaps["min_recall"]
        details = {"synthetic_trained": syn_gaps, "real_trained": real_gaps, "positive": self.positive}
        if not np.isfinite(gap):
            return CheckResult(self.name, float("nan"), True, threshold,
                               "not applicable: no protected attribute has two groups with enough support",
                               details, applicable=False, confidential=list(details))
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
        recalls = {a: {g: v["recall"] for g, v in d["groups"].items()} for a, d in syn_gaps["per_attribute"].items()}
        real_recalls = {a: {g: v["recall"] for g, v in d["groups"].items()}
                        for a, d in real_gaps["per_attribute"].items()}
        return CheckResult(self.name, 1.0 - gap, not fails, threshold, reason, details,
                           confidential=["synthetic_trained", "real_trained"],
                           artifacts={"recalls": recalls, "real_recalls": real_recalls})


# --------------------------------------------------------------------------- sequence task
def _split_learners(frame: pd.DataFrame, id_col: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    ids = pd.unique(frame[id_col])
    rng = np.random.default_rng(seed)
    a = set(rng.permutation(ids)[: len(ids) // 2].tolist())
    mask = frame[id_col].isin(a).to_numpy()
    return frame[mask], frame[~mask]


class SequenceTaskCheck(BaseCheck):
    """Sequence-task suitability: a GRU sequence classifier trained on synthetic vs real sequences.

    A :class:`~skdpsynth.models.GRUSequenceClassifier` predicts each learner's
    outcome from the ordered events. Trained on the release and tested on the
    real holdout, its macro-F1 is compared with the same model trained on the
    real training learners (or, without them, on half of the holdout learners,
    both then tested on the other half). An order-free generator keeps event
    frequencies but not order, so the model it trains loses what order carries:
    the retention ratio drops.

    Fails when retention < ``min_retention``, when the synthetic-trained model
    is at the no-skill floor (within ``floor_margin``; the larger of the
    majority-class floor and chance ``1 / n_classes``), or when the real-trained
    model is (no usable comparison). Score: the retention ratio.

    Parameters
    ----------
    id_col, order_col, event_col, label_col : str
    min_retention : float, default=0.8
    floor_margin : float, default=0.02
    model : GRUSequenceClassifier, optional
        Default ``GRUSequenceClassifier(max_epochs=15)`` seeded by ``random_state``.
    random_state : int, optional
    """

    name = "sequence_task"

    def __init__(self, *, id_col, order_col, event_col, label_col, min_retention=0.8, floor_margin=0.02, model=None,
                 random_state=None):
        self.id_col = id_col
        self.order_col = order_col
        self.event_col = event_col
        self.label_col = label_col
        self.min_retention = min_retention
        self.floor_margin = floor_margin
        self.model = model
        self.random_state = random_state

    def _evaluate(self, data: AuditData) -> CheckResult:
        from sklearn.base import clone
        from sklearn.metrics import f1_score

        from skdpsynth.metrics._utility import majority_floor_f1
        from skdpsynth.models import GRUSequenceClassifier, sequences_from_long

        seed = _seed(data, self.random_state)
        threshold = {"min_retention": self.min_retention, "floor_margin": self.floor_margin}
        kw = {"id_column": self.id_col, "order_column": self.order_col, "event_columns": self.event_col,
              "label_column": self.label_col}
        if data.train is not None:
            real_fit, test, method = data.train, data.holdout, "train_vs_holdout"
        else:
            real_fit, test = _split_learners(data.holdout, self.id_col, seed)
            method = "half of the holdout learners vs the other half"
        s_seq, s_y, vocab = sequences_from_long(data.synthetic, **kw)
        r_seq, r_y, _ = sequences_from_long(real_fit, **kw, vocabulary=vocab)
        t_seq, t_y, _ = sequences_from_long(test, **kw, vocabulary=vocab)
        base = self.model if self.model is not None else GRUSequenceClassifier(max_epochs=15)
        t_y = np.asarray(t_y).astype(str)
        labels = sorted(set(t_y) | set(np.asarray(r_y).astype(str)))

        def fit_score(seqs, y) -> float:
            y = np.asarray(y).astype(str)
            if len(np.unique(y)) < 2:
                pred = np.full(len(t_y), y[0] if len(y) else "<none>")
            else:
                pred = clone(base).set_params(random_state=seed).fit(seqs, y).predict(t_seq).astype(str)
            return float(f1_score(t_y, pred, labels=labels, average="macro", zero_division=0))

        f_syn, f_real = fit_score(s_seq, s_y), fit_score(r_seq, r_y)
        floor = max(majority_floor_f1(np.asarray(r_y).astype(str), t_y), 1.0 / max(len(labels), 1))
        retention = f_syn / f_real if f_real > 0 else 0.0
        fails = []
        if f_real <= floor + self.floor_margin:
            fails.append(f"no usable real comparison (real-trained GRU macro-F1 {f_real:.3f}, floor {floor:.3f})")
        if f_syn <= floor + self.floor_margin:
            fails.append(f"the GRU trained on the release is at the no-skill floor ({f_syn:.3f} vs {floor:.3f})")
        if retention < self.min_retention:
            fails.append(f"GRU sequence-classifier retention {retention:.3f} < {self.min_retention} (synthetic-trained "
                         f"macro-F1 {f_syn:.3f} vs real-trained {f_real:.3f}): the release loses sequence information")
        reason = ("sequence task: " + "; ".join(fails)) if fails else (
            f"GRU retention {retention:.3f} >= {self.min_retention} (macro-F1 {f_syn:.3f} vs {f_real:.3f})")
        details = {"gru_f1_synthetic": f_syn, "gru_f1_real": f_real, "retention": retention, "no_skill_floor": floor,
                   "method": method, "n_synthetic_learners": len(s_seq), "n_test_learners": len(t_seq)}
        return CheckResult(self.name, float(retention), not fails, threshold, reason, details,
                           confidential=["gru_f1_synthetic", "gru_f1_real", "retention", "no_skill_floor",
                                         "n_test_learners"],
                           artifacts={"bars": {"GRU": (f_syn, f_real)}, "majority_floor": floor})


# --------------------------------------------------------------------------- knowledge tracing
class KnowledgeTracingCheck(BaseCheck):
    """Knowledge-tracing suitability: DKT and SAKT trained on the release, tested on real learners.

    Each model predicts every next response (correct or not) from the
    learner's (skill, correctness) history. For each model: macro-F1 on the
    real holdout when trained on the release, vs when trained on real learners
    (the training rows, or half of the holdout learners with both tested on the
    other half), vs the majority floor (macro-F1 of always predicting the
    majority response; PEARL's floor -- the models' macro-F1 at a 0.5
    threshold can sit below chance 0.5 on imbalanced responses even when they
    rank well, so chance is not used here). Fails when, for any model, the
    synthetic-trained macro-F1 is not above the floor by ``min_gain`` (PEARL: DKT/SAKT learned nothing from any
    tested synthetic KT data) or its retention is below ``min_retention``.
    Score: the smallest retention over the models.

    Parameters
    ----------
    id_col, order_col, skill_col, correct_col : str
    models : tuple of {"dkt", "sakt"}, default=("dkt", "sakt")
    min_retention : float, default=0.8
    min_gain : float, default=0.02
    max_epochs : int, default=10
    random_state : int, optional
    """

    name = "knowledge_tracing"

    def __init__(self, *, id_col="learner_id", order_col="position", skill_col="skill_id", correct_col="correct",
                 models=("dkt", "sakt"), min_retention=0.8, min_gain=0.02, max_epochs=10, random_state=None):
        self.id_col = id_col
        self.order_col = order_col
        self.skill_col = skill_col
        self.correct_col = correct_col
        self.models = models
        self.min_retention = min_retention
        self.min_gain = min_gain
        self.max_epochs = max_epochs
        self.random_state = random_state

    def _make(self, kind: str, seed: int) -> Any:
        from skdpsynth.models import DKT, SAKT

        cls = {"dkt": DKT, "sakt": SAKT}.get(str(kind).lower())
        if cls is None:
            raise ValueError(f"KnowledgeTracingCheck: unknown model {kind!r}; use 'dkt' or 'sakt'.")
        return cls(id_column=self.id_col, order_column=self.order_col, skill_column=self.skill_col,
                   correct_column=self.correct_col, max_epochs=self.max_epochs, random_state=seed)

    def _evaluate(self, data: AuditData) -> CheckResult:
        seed = _seed(data, self.random_state)
        threshold = {"min_retention": self.min_retention, "min_gain": self.min_gain}
        needed = [self.id_col, self.order_col, self.skill_col, self.correct_col]
        missing = [c for c in needed if c not in data.synthetic.columns]
        if missing:
            return CheckResult(self.name, 0.0, False, threshold,
                               f"knowledge tracing: the release lacks column(s) {missing} (paired skill and "
                               "correctness are required)", {})
        if data.train is not None:
            real_fit, test, method = data.train, data.holdout, "train_vs_holdout"
        else:
            real_fit, test = _split_learners(data.holdout, self.id_col, seed)
            method = "half of the holdout learners vs the other half"
        syn = data.synthetic
        bad = ~syn[self.correct_col].isin([0, 1, True, False])
        if bad.any():
            return CheckResult(self.name, 0.0, False, threshold,
                               f"knowledge tracing: {int(bad.sum())} responses in {self.correct_col!r} are not 0/1",
                               {})
        per, fails, bars = {}, [], {}
        for kind in self.models:
            ev_syn = self._make(kind, seed).fit(syn).evaluate(test)
            ev_real = self._make(kind, seed).fit(real_fit).evaluate(test)
            f_s, f_r, floor = ev_syn["macro_f1"], ev_real["macro_f1"], ev_syn["majority_macro_f1"]
            retention = f_s / f_r if f_r > 0 else 0.0
            per[kind] = {"f1_synthetic": f_s, "f1_real": f_r, "majority_floor": floor, "retention": retention,
                         "auc_synthetic": ev_syn["auc"], "auc_real": ev_real["auc"]}
            bars[kind.upper()] = (f_s, f_r)
            name = kind.upper()
            if f_r <= floor + self.min_gain:
                fails.append(f"{name}: no usable real comparison (real-trained macro-F1 {f_r:.3f}, floor {floor:.3f})")
            if f_s <= floor + self.min_gain:
                fails.append(f"{name} learned no next-response pattern from the release (macro-F1 {f_s:.3f} vs "
                             f"majority floor {floor:.3f})")
            elif retention < self.min_retention:
                fails.append(f"{name} retention {retention:.3f} < {self.min_retention} (macro-F1 {f_s:.3f} vs "
                             f"real-trained {f_r:.3f})")
        score = float(min(v["retention"] for v in per.values())) if per else 0.0
        reason = ("knowledge tracing: " + "; ".join(fails)) if fails else (
            "; ".join(f"{k.upper()} macro-F1 {v['f1_synthetic']:.3f} (real-trained {v['f1_real']:.3f}, floor "
                      f"{v['majority_floor']:.3f})" for k, v in per.items()))
        details = {"models": per, "method": method}
        return CheckResult(self.name, score, not fails, threshold, reason, details, confidential=["models"],
                           artifacts={"bars": bars, "majority_floor": min(v["majority_floor"] for v in per.values())
                                      if per else 0.0})
