"""The PEARL grid's datasets: UCI 697, UCI 856, OULAD tables, OULAD clickstreams and simulated knowledge tracing.

Each :class:`Scenario` holds the public facts of one dataset (schema or
vocabulary, target, task of :func:`skdpsynth.audit.pearl_checks`, protected
attributes, at-risk class, the paper's epsilon grid) and a fixed split of
people into training rows (what the synthesizer sees) and a holdout (people it
never sees). Splits are by person and do not depend on the grid's seed: the
seed varies the synthesizer and the audit, as in the paper.

Sizes follow the paper where it gives them (papers/pearl.md, section 3): UCI 856
101 training records (the 70 % split of its 145), UCI 697 2,100 records, OULAD
1,820 students. OULAD clickstreams stand in for ACT-MOOC (not redistributable,
not in shared/data): module AAA, the only module whose raw clicks are stored.
Knowledge tracing uses the package's BKT simulator: ASSISTments and EdNet are
not in shared/data (their terms restrict redistribution), so no real KT data is
audited.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["Scenario", "SCENARIOS", "load_scenario", "TABLE_EPSILONS", "SEQUENCE_EPSILONS"]

TABLE_EPSILONS = (0.5, 1.0, 2.0, 5.0, 10.0)
SEQUENCE_EPSILONS = (1.0, 5.0, 10.0)
SPLIT_SEED = 0  # the split of people is fixed; the grid's seeds vary the synthesizer and the audit
AT_RISK = {"Fail", "Withdrawn"}


@dataclass
class Scenario:
    """One dataset of the grid: public facts plus a fixed train / holdout split of people."""

    name: str
    paper_name: str
    kind: str  # "table" or "sequence" (the registry's data kinds)
    task: str  # pearl_checks task
    train: pd.DataFrame
    holdout: pd.DataFrame
    target: str | None
    epsilons: tuple[float, ...]
    schema: Any = None
    protected: list[str] = field(default_factory=list)
    positive: Any = None
    sequence: dict[str, Any] = field(default_factory=dict)  # synthesizer columns, vocabulary, max_length
    allow_shared_rows: bool = False
    notes: str = ""

    def checks_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`pearl_checks` for this dataset."""
        if self.kind == "table":
            return {"target": self.target, "protected": self.protected or None, "positive": self.positive,
                    "schema": self.schema}
        seq = self.sequence
        kw = {"id_col": seq["id_column"], "order_col": seq["order_column"]}
        if self.task == "sequence":
            kw.update(target=self.target, event_col=seq["event_columns"])
        return kw


def _data(shared: Any, name: str) -> Any:
    from pathlib import Path

    return Path(shared) / name


def _split_rows(frame: pd.DataFrame, target: str, n_train: int | None, n_holdout: int | None,
                groups: np.ndarray | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Stratified split of people (``groups``: person ids, all rows of a person on one side)."""
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(SPLIT_SEED)
    if groups is not None:
        people = pd.unique(groups)
        perm = rng.permutation(people)
        n_tr = n_train or int(round(0.7 * len(people)))
        n_ho = n_holdout or len(people) - n_tr
        chosen_tr, chosen_ho = set(perm[:n_tr].tolist()), set(perm[n_tr:n_tr + n_ho].tolist())
        tr = frame[np.isin(groups, list(chosen_tr))]
        ho = frame[np.isin(groups, list(chosen_ho))]
        if n_train is not None and len(tr) > n_train:  # several rows of one person: keep one registration each
            tr = tr.sample(n_train, random_state=SPLIT_SEED)
        if n_holdout is not None and len(ho) > n_holdout:
            ho = ho.sample(n_holdout, random_state=SPLIT_SEED + 1)
        return tr.reset_index(drop=True), ho.reset_index(drop=True)
    y = frame[target]
    strat = y if y.value_counts().min() >= 2 else None
    size = n_train if n_train is not None else 0.7
    tr, ho = train_test_split(frame, train_size=size, random_state=SPLIT_SEED, stratify=strat)
    if n_holdout is not None and len(ho) > n_holdout:
        ho = ho.sample(n_holdout, random_state=SPLIT_SEED + 1)
    return tr.reset_index(drop=True), ho.reset_index(drop=True)


def _uci_dropout(shared: Any, quick: bool) -> Scenario:
    import skdpsynth.datasets as D

    b = D.load_uci_dropout(path=_data(shared, "uci_dropout"), download=False)
    frame = b.schema.validate(b.frame)
    train, hold = _split_rows(frame, b.target, 300 if quick else 2100, 300 if quick else None)
    return Scenario("uci_dropout", "UCI 697", "table", "classification", train, hold, b.target, TABLE_EPSILONS,
                    schema=b.schema, protected=list(b.protected), positive="Dropout",
                    notes="2,100 training students (the paper's size), holdout the other 2,324; protected: the "
                          "loader's documented attributes (Gender, Educational special needs, International); "
                          "at-risk class Dropout")


def _uci_hesp(shared: Any, quick: bool) -> Scenario:
    import skdpsynth.datasets as D

    b = D.load_uci_hesp(path=_data(shared, "uci_hesp"), download=False)
    frame = b.schema.validate(b.frame)
    train, hold = _split_rows(frame, b.target, None, None)
    return Scenario("uci_hesp", "UCI 856", "table", "classification", train, hold, b.target, TABLE_EPSILONS,
                    schema=b.schema, protected=list(b.protected), positive=0,
                    notes="70/30 split of 145 students: 101 training rows (the paper's 101), 44 holdout; protected: "
                          "attribute 2 (sex, the loader's documented attribute); at-risk class GRADE 0 (Fail)")


def _oulad_table(shared: Any, quick: bool) -> Scenario:
    import skdpsynth.datasets as D

    b = D.load_oulad(path=_data(shared, "oulad"), download=False, with_clickstream=False)
    frame = b.schema.validate(b.frame)
    n = 300 if quick else 1820
    train, hold = _split_rows(frame, b.target, n, n, groups=b.ids.to_numpy())
    from skdpsynth.audit._auditor import shares_rows

    return Scenario("oulad", "OULAD", "table", "classification", train, hold, b.target, TABLE_EPSILONS,
                    schema=b.schema, protected=["disability", "imd_band"], positive="Withdrawn",
                    allow_shared_rows=shares_rows(train, hold),
                    notes="1,820 training registrations (the paper's 1,820 students) and 1,820 holdout ones, split "
                          "by student; protected: disability and imd_band (the paper's); at-risk class Withdrawn")


def _clickstream(shared: Any, quick: bool) -> Scenario:
    import skdpsynth.datasets as D
    from skdpsynth.datasets._schemas import OULAD_ACTIVITY_TYPES_ALL

    o = D.load_oulad(path=_data(shared, "oulad"), module="AAA", download=False)
    c = o.clickstream
    key = c["code_presentation"].astype(str) + "-" + c["id_student"].astype(str)
    ids = pd.factorize(key)[0]
    max_length = 30 if quick else 100
    long = pd.DataFrame({"learner_id": ids, "activity_type": c["activity_type"].astype(str).to_numpy(),
                         "outcome": np.where(c["final_result"].isin(sorted(AT_RISK)), "at_risk", "on_track")})
    long["position"] = long.groupby("learner_id").cumcount()  # clicks in date order (file order within a day)
    long = long[long["position"] < max_length][["learner_id", "position", "activity_type", "outcome"]]
    n_learners = long["learner_id"].nunique()
    train, hold = _split_rows(long, "outcome", 200 if quick else None, 100 if quick else None,
                              groups=long["learner_id"].to_numpy())
    seq = {"id_column": "learner_id", "order_column": "position", "event_columns": "activity_type",
           "label_column": "outcome", "vocabulary": list(OULAD_ACTIVITY_TYPES_ALL), "max_length": max_length,
           "schema": {"outcome": {"kind": "categorical", "categories": ["at_risk", "on_track"], "nullable": False}}}
    return Scenario("oulad_clicks", "ACT-MOOC (here: OULAD clickstreams)", "sequence", "sequence", train, hold,
                    "outcome", SEQUENCE_EPSILONS, sequence=seq,
                    notes=f"OULAD module AAA clickstreams ({n_learners} learners with clicks; 70/30 split by learner): "
                          f"each learner's first {max_length} click records' activity types in date order; outcome "
                          "at_risk (Fail or Withdrawn) vs on_track (Pass or Distinction), predicted from the activity "
                          "sequence; public vocabulary: OULAD's documented activity types")


def _knowledge_tracing(shared: Any, quick: bool) -> Scenario:
    from skdpsynth.datasets import make_knowledge_tracing

    n_train, n_hold = (150, 100) if quick else (1000, 500)
    kt = make_knowledge_tracing(n_train + n_hold, n_skills=10, seq_len=(20, 50), random_state=SPLIT_SEED).frame
    train = kt[kt["learner_id"] < n_train].reset_index(drop=True)
    hold = kt[kt["learner_id"] >= n_train].reset_index(drop=True)
    seq = {"id_column": "learner_id", "order_column": "position", "event_columns": ["skill_id", "correct"],
           "label_column": None, "vocabulary": {"skill_id": list(range(10)), "correct": [0, 1]}, "max_length": 50,
           "schema": None}
    return Scenario("kt_bkt", "ASSISTments / EdNet (here: BKT simulator)", "sequence", "knowledge_tracing", train,
                    hold, None, SEQUENCE_EPSILONS, sequence=seq,
                    notes=f"skdpsynth.datasets.make_knowledge_tracing (BKT, 10 skills, 20-50 responses): {n_train} "
                          f"training and {n_hold} holdout learners; no real ASSISTments-style data: none is in "
                          "shared/data and their terms do not allow shipping a copy")


SCENARIOS = {"uci_dropout": _uci_dropout, "uci_hesp": _uci_hesp, "oulad": _oulad_table,
             "oulad_clicks": _clickstream, "kt_bkt": _knowledge_tracing}


@functools.lru_cache(maxsize=16)
def load_scenario(name: str, shared: str, quick: bool = False) -> Scenario:
    """The scenario ``name`` (cached per process: joblib workers load each dataset once)."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown dataset {name!r}; choose from {sorted(SCENARIOS)}.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SCENARIOS[name](shared, quick)
