"""Task-suitability checks for sequences: a GRU sequence classifier, and DKT / SAKT knowledge tracing."""

from __future__ import annotations

from typing import Any

import numpy as np

from skdpsynth.audit._base import AuditData, BaseCheck, CheckResult, require_columns
from skdpsynth.audit._checks_common import check_seed, split_learners

__all__ = ["SequenceTaskCheck", "KnowledgeTracingCheck"]


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
        Default ``GRUSequenceClassifier(max_epochs=15, patience=15)`` seeded by ``random_state``: every epoch is
        trained and the best validation epoch kept, because an order signal is found after a plateau at chance
        that a short patience can outlast (both models then score at chance and the retention is meaningless).
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

    def check_inputs(self, holdout, schema=None) -> None:
        require_columns(self, holdout, {"id": self.id_col, "order": self.order_col, "event": self.event_col,
                                        "label": self.label_col})

    def _evaluate(self, data: AuditData) -> CheckResult:
        from sklearn.base import clone
        from sklearn.metrics import f1_score

        from skdpsynth.metrics._utility import majority_floor_f1
        from skdpsynth.models import GRUSequenceClassifier, sequences_from_long

        seed = check_seed(data, self.random_state)
        threshold = {"min_retention": self.min_retention, "floor_margin": self.floor_margin}
        kw = {"id_column": self.id_col, "order_column": self.order_col, "event_columns": self.event_col,
              "label_column": self.label_col}
        if data.train is not None:
            real_fit, test, method = data.train, data.holdout, "train_vs_holdout"
        else:
            real_fit, test = split_learners(data.holdout, self.id_col, seed)
            method = "half of the holdout learners vs the other half"
        s_seq, s_y, vocab = sequences_from_long(data.synthetic, **kw)
        r_seq, r_y, _ = sequences_from_long(real_fit, **kw, vocabulary=vocab)
        t_seq, t_y, _ = sequences_from_long(test, **kw, vocabulary=vocab)
        base = self.model if self.model is not None else GRUSequenceClassifier(max_epochs=15, patience=15)
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
        fails, public = [], []
        if f_real <= floor + self.floor_margin:
            fails.append(f"no usable real comparison (real-trained GRU macro-F1 {f_real:.3f}, floor {floor:.3f})")
            public.append("no usable real comparison (real-trained GRU at the no-skill floor)")
        if f_syn <= floor + self.floor_margin:
            fails.append(f"the GRU trained on the release is at the no-skill floor ({f_syn:.3f} vs {floor:.3f})")
            public.append("the GRU trained on the release is at the no-skill floor")
        if retention < self.min_retention:
            fails.append(f"GRU sequence-classifier retention {retention:.3f} < {self.min_retention} (synthetic-trained "
                         f"macro-F1 {f_syn:.3f} vs real-trained {f_real:.3f}): the release loses sequence information")
            public.append(f"GRU sequence-classifier retention below {self.min_retention}: the release loses sequence "
                          "information")
        reason = ("sequence task: " + "; ".join(fails)) if fails else (
            f"GRU retention {retention:.3f} >= {self.min_retention} (macro-F1 {f_syn:.3f} vs {f_real:.3f})")
        details = {"gru_f1_synthetic": f_syn, "gru_f1_real": f_real, "retention": retention, "no_skill_floor": floor,
                   "method": method, "n_synthetic_learners": len(s_seq), "n_test_learners": len(t_seq)}
        public_reason = ("sequence task: " + "; ".join(public)) if public else (
            f"sequence task: GRU retention at least {self.min_retention}")
        secret = [k for k in details if k != "method" and (k != "n_synthetic_learners" or not data.release_size_public)]
        return CheckResult(self.name, float(retention), not fails, threshold, reason, details, confidential=secret,
                           public_reason=public_reason,
                           artifacts={"bars": {"GRU": (f_syn, f_real)}, "majority_floor": floor})


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

    def check_inputs(self, holdout, schema=None) -> None:
        require_columns(self, holdout, {"id": self.id_col, "order": self.order_col, "skill": self.skill_col,
                                        "correct": self.correct_col})

    def _make(self, kind: str, seed: int) -> Any:
        from skdpsynth.models import DKT, SAKT

        cls = {"dkt": DKT, "sakt": SAKT}.get(str(kind).lower())
        if cls is None:
            raise ValueError(f"KnowledgeTracingCheck: unknown model {kind!r}; use 'dkt' or 'sakt'.")
        return cls(id_column=self.id_col, order_column=self.order_col, skill_column=self.skill_col,
                   correct_column=self.correct_col, max_epochs=self.max_epochs, random_state=seed)

    def _evaluate(self, data: AuditData) -> CheckResult:
        seed = check_seed(data, self.random_state)
        threshold = {"min_retention": self.min_retention, "min_gain": self.min_gain}
        needed = [self.id_col, self.order_col, self.skill_col, self.correct_col]
        missing = [c for c in needed if c not in data.synthetic.columns]
        if missing:
            return CheckResult(self.name, 0.0, False, threshold,
                               f"knowledge tracing: the release lacks column(s) {missing} (paired skill and "
                               "correctness are required)", {}, uses_confidential_data=False)
        if data.train is not None:
            real_fit, test, method = data.train, data.holdout, "train_vs_holdout"
        else:
            real_fit, test = split_learners(data.holdout, self.id_col, seed)
            method = "half of the holdout learners vs the other half"
        syn = data.synthetic
        bad = ~syn[self.correct_col].isin([0, 1, True, False])
        if bad.any():
            return CheckResult(self.name, 0.0, False, threshold,
                               f"knowledge tracing: {int(bad.sum())} responses in {self.correct_col!r} are not 0/1",
                               {}, public_reason=f"knowledge tracing: responses in {self.correct_col!r} are not 0/1")
        per, fails, public, bars = {}, [], [], {}
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
                public.append(f"{name}: no usable real comparison")
            if f_s <= floor + self.min_gain:
                fails.append(f"{name} learned no next-response pattern from the release (macro-F1 {f_s:.3f} vs "
                             f"majority floor {floor:.3f})")
                public.append(f"{name} learned no next-response pattern from the release")
            elif retention < self.min_retention:
                fails.append(f"{name} retention {retention:.3f} < {self.min_retention} (macro-F1 {f_s:.3f} vs "
                             f"real-trained {f_r:.3f})")
                public.append(f"{name} retention below {self.min_retention}")
        score = float(min(v["retention"] for v in per.values())) if per else 0.0
        reason = ("knowledge tracing: " + "; ".join(fails)) if fails else (
            "; ".join(f"{k.upper()} macro-F1 {v['f1_synthetic']:.3f} (real-trained {v['f1_real']:.3f}, floor "
                      f"{v['majority_floor']:.3f})" for k, v in per.items()))
        details = {"models": per, "method": method}
        public_reason = ("knowledge tracing: " + "; ".join(public)) if public else (
            f"knowledge tracing: every model learned from the release (retention at least {self.min_retention})")
        return CheckResult(self.name, score, not fails, threshold, reason, details, confidential=["models"],
                           public_reason=public_reason,
                           artifacts={"bars": bars, "majority_floor": min(v["majority_floor"] for v in per.values())
                                      if per else 0.0})
