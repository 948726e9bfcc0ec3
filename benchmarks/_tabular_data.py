"""Tabular benchmark datasets with public schemas (Adult, UCI dropout, UCI HESP, OULAD studentInfo).

Uses ``skdpsynth.datasets`` loaders when they exist; otherwise reads the files in
``shared/data`` with pandas. Schemas are *public* domain knowledge: Adult's
category lists come from ``adult.names`` (the UCI codebook); for the coded UCI
tables and OULAD the category lists are the codes of the published full table
(standing in for the codebooks) and numeric bounds are documented ranges,
widened to round numbers. Nothing here is estimated from a training split.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from skdpsynth import TableSchema

DATASETS = ("adult", "uci_dropout", "uci_hesp", "oulad")
TARGETS = {"adult": "income", "uci_dropout": "Target", "uci_hesp": "GRADE", "oulad": "final_result"}

_ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
                  "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
                  "income"]
_ADULT_NUMERIC = {"age": ("integer", 17, 90), "fnlwgt": ("continuous", 0, 1_500_000),
                  "education-num": ("integer", 1, 16), "capital-gain": ("continuous", 0, 100_000),
                  "capital-loss": ("continuous", 0, 5_000), "hours-per-week": ("integer", 1, 99)}


def _adult_categories(data_dir: Path) -> dict[str, list[str]]:
    cats = {}
    for line in (data_dir / "adult" / "adult.names").read_text().splitlines():
        if ":" in line and not line.startswith("|") and line.split(":")[0] in _ADULT_COLUMNS:
            name, rest = line.split(":", 1)
            rest = rest.strip().rstrip(".")
            if rest != "continuous":
                cats[name] = [c.strip() for c in rest.split(",")]
    cats["income"] = ["<=50K", ">50K"]
    return cats


def _adult(data_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, TableSchema]:
    def read(name: str, skip: int) -> pd.DataFrame:
        df = pd.read_csv(data_dir / "adult" / name, header=None, names=_ADULT_COLUMNS, skipinitialspace=True,
                         na_values="?", skiprows=skip)
        df["income"] = df["income"].str.rstrip(".")
        return df

    train, test = read("adult.data", 0), read("adult.test", 1)
    cats = _adult_categories(data_dir)
    spec = {}
    for c in _ADULT_COLUMNS:
        if c in _ADULT_NUMERIC:
            kind, lo, hi = _ADULT_NUMERIC[c]
            spec[c] = {"kind": kind, "lower": lo, "upper": hi, "nullable": False}
        else:
            spec[c] = {"kind": "categorical", "categories": cats[c],
                       "nullable": c in ("workclass", "occupation", "native-country")}
    return train, test, TableSchema.from_dict(spec)


def _coded_schema(df: pd.DataFrame, categorical: list[str], numeric: dict[str, tuple[str, float, float]]
                  ) -> TableSchema:
    spec = {}
    for c in df.columns:
        if c in numeric:
            kind, lo, hi = numeric[c]
            spec[c] = {"kind": kind, "lower": lo, "upper": hi, "nullable": bool(df[c].isna().any())}
        else:
            assert c in categorical, c
            values = sorted(df[c].dropna().unique().tolist(), key=str)
            spec[c] = {"kind": "categorical", "categories": values, "nullable": bool(df[c].isna().any())}
    return TableSchema.from_dict(spec)


def _split(df: pd.DataFrame, target: str, seed: int = 0, test_size: float = 0.3):
    from sklearn.model_selection import train_test_split

    strat = df[target] if df[target].value_counts().min() >= 2 else None
    tr, te = train_test_split(df, test_size=test_size, random_state=seed, stratify=strat)
    return tr.reset_index(drop=True), te.reset_index(drop=True)


def _dropout(data_dir: Path):
    df = pd.read_csv(data_dir / "uci_dropout" / "data.csv", sep=";", encoding="utf-8-sig")
    df.columns = [c.strip() for c in df.columns]
    numeric = {"Application order": ("integer", 0, 9), "Previous qualification (grade)": ("continuous", 95, 190),
               "Admission grade": ("continuous", 95, 190), "Age at enrollment": ("integer", 17, 70),
               "Unemployment rate": ("continuous", 7, 17), "Inflation rate": ("continuous", -1, 4),
               "GDP": ("continuous", -4.5, 4)}
    upper = {"credited": 20, "enrolled": 26, "evaluations": 45, "approved": 26, "without evaluations": 12}
    for sem in ("1st", "2nd"):
        for part, hi in upper.items():
            numeric[f"Curricular units {sem} sem ({part})"] = ("integer", 0, hi)
        numeric[f"Curricular units {sem} sem (grade)"] = ("continuous", 0, 20)
    categorical = [c for c in df.columns if c not in numeric]
    for c in categorical:
        df[c] = df[c].astype(str)
    schema = _coded_schema(df, categorical, numeric)
    tr, te = _split(df, "Target")
    return tr, te, schema


def _hesp(data_dir: Path):
    df = pd.read_csv(data_dir / "uci_hesp" / "students-performance.csv", encoding="utf-8-sig")
    df = df.drop(columns=["STUDENT ID"])
    df.columns = [f"a{c}" if c.isdigit() else c for c in df.columns]
    for c in df.columns:
        df[c] = df[c].astype(str)
    schema = _coded_schema(df, list(df.columns), {})
    tr, te = _split(df, "GRADE")
    return tr, te, schema


def _oulad(data_dir: Path):
    df = pd.read_csv(data_dir / "oulad" / "studentInfo.csv").drop(columns=["id_student"])
    numeric = {"num_of_prev_attempts": ("integer", 0, 6), "studied_credits": ("integer", 30, 660)}
    categorical = [c for c in df.columns if c not in numeric]
    schema = _coded_schema(df, categorical, numeric)
    tr, te = _split(df, "final_result")
    return tr, te, schema


def load_tabular(name: str, data_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, TableSchema]:
    """(train, holdout, public schema) of a benchmark dataset."""
    data_dir = Path(data_dir)
    loaders = {"adult": _adult, "uci_dropout": _dropout, "uci_hesp": _hesp, "oulad": _oulad}
    if name not in loaders:
        raise ValueError(f"unknown dataset {name!r}; choose from {DATASETS}.")
    train, test, schema = loaders[name](data_dir)
    train = schema.validate(train)
    test = schema.validate(test)
    return train, test, schema


def two_way_tvd(real: pd.DataFrame, synth: pd.DataFrame, schema: TableSchema, n_bins: int = 32) -> float:
    """Mean total-variation distance over all 2-way marginals on the public grid."""
    from skdpsynth._grid import PublicGrid

    grid = PublicGrid(schema, n_bins)
    a, b = grid.encode(schema.validate(real)), grid.encode(schema.validate(synth))
    sizes = grid.n_cells
    out = []
    d = a.shape[1]
    for i in range(d):
        for j in range(i + 1, d):
            m = int(sizes[i] * sizes[j])
            pa = np.bincount(a[:, i] * sizes[j] + a[:, j], minlength=m) / len(a)
            pb = np.bincount(b[:, i] * sizes[j] + b[:, j], minlength=m) / len(b)
            out.append(0.5 * np.abs(pa - pb).sum())
    return float(np.mean(out))
