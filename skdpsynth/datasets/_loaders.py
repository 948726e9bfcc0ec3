"""Loaders of real public education datasets (and Adult as a general benchmark).

Each loader reads a local copy (``path=``: a file or a folder laid out like
``shared/data/<name>/``), else the cache folder (``data_home``), else downloads
from the publisher into the cache (``download=True``). It returns a
:class:`sklearn.utils.Bunch` with the table (``frame``), a public
:class:`~skdpsynth.TableSchema` written from the dataset's documentation
(``schema``, never computed from the data), the ``target`` column, the natural
``protected`` attributes and a ``description``.

Identifiers (Adult has none; ``STUDENT ID`` in HESP, ``id_student`` in OULAD) are
not part of ``frame``: they are returned separately as ``ids`` so that a
synthesizer fitted on ``frame`` with ``schema`` never models them.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from skdpsynth.datasets._fetch import DATASETS, find_file, resolve_folder
from skdpsynth.datasets._schemas import (
    ADULT_COLUMNS,
    OULAD_MODULES,
    OULAD_PRESENTATIONS,
    OULAD_STUDENT_INFO_COLUMNS,
    UCI_DROPOUT_CODEBOOK,
    UCI_DROPOUT_COLUMNS,
    UCI_HESP_CODEBOOK,
    adult_schema,
    oulad_student_info_schema,
    uci_dropout_schema,
    uci_hesp_schema,
)
from skdpsynth.exceptions import SchemaError

__all__ = ["load_adult", "load_uci_dropout", "load_uci_hesp", "load_oulad", "load_dataset"]

PathLike = str | os.PathLike


def _check_columns(df: pd.DataFrame, expected: Sequence[str], where: Path) -> None:
    missing = [c for c in expected if c not in df.columns]
    if missing:
        raise SchemaError(f"{where}: expected columns {missing} are missing; found {list(df.columns)}.")


def _licence_line(name: str) -> str:
    info = DATASETS[name]
    return f"Source: {info.page}. Licence: {info.licence}. Cite: {info.citation}"


# ----------------------------------------------------------------------------- Adult
def _read_adult_file(path: Path) -> pd.DataFrame:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        first = fh.readline()
    skip = 1 if first.startswith("|") else 0  # adult.test starts with "|1x3 Cross validator"
    df = pd.read_csv(path, header=None, names=list(ADULT_COLUMNS), skipinitialspace=True, na_values=["?"],
                     keep_default_na=False, skiprows=skip)
    # adult.test labels end with "." (">50K."): normalise to the adult.data spelling
    df["income"] = df["income"].str.rstrip(".")
    return df


def load_adult(*, path: PathLike | None = None, data_home: PathLike | None = None, download: bool = True) -> Bunch:
    """UCI Adult (Census Income), train (``adult.data``) and test (``adult.test``) parts.

    Parameters
    ----------
    path : path, optional
        A folder holding ``adult.data`` and ``adult.test``, or one of those files
        (the other is looked for next to it; if absent only the given file is loaded).
    data_home : path, optional
        Cache folder (default ``$SKDPSYNTH_DATA_HOME`` or ``~/.cache/skdpsynth``).
    download : bool, default=True
        Download from the UCI archive into the cache when not found.

    Returns
    -------
    Bunch
        ``frame`` (all rows: train then test; ``?`` read as missing; test labels
        without the trailing "."), ``train`` and ``test`` (the two parts, index
        continuing from train), ``schema`` (from ``adult.names``), ``target``
        (``"income"``), ``target_names``, ``protected`` (``["sex", "race"]``),
        ``description``.
    """
    folder, main = resolve_folder("adult", path=path, data_home=data_home, download=download)
    files = {}
    if main is not None and not main.name.startswith(("adult.data", "adult.test")):
        files["data"] = main  # an arbitrarily named single file
    else:
        for part in ("data", "test"):
            found = find_file(folder, f"adult.{part}")
            if found is not None:
                files[part] = found
    parts = {k: _read_adult_file(v) for k, v in files.items()}
    frame = pd.concat([parts[k] for k in ("data", "test") if k in parts], ignore_index=True)
    n_train = len(parts.get("data", ()))
    train = frame.iloc[:n_train].copy()
    test = frame.iloc[n_train:].copy()
    return Bunch(
        frame=frame,
        train=train,
        test=test,
        schema=adult_schema(),
        target="income",
        target_names=["<=50K", ">50K"],
        protected=["sex", "race"],
        description=(
            f"UCI Adult: {len(train)} train + {len(test)} test rows, 14 features and 'income'. Missing values "
            f"('?') in workclass, occupation, native-country. {_licence_line('adult')}"
        ),
    )


# ----------------------------------------------------------------------------- UCI dropout
def load_uci_dropout(*, path: PathLike | None = None, data_home: PathLike | None = None,
                     download: bool = True) -> Bunch:
    """UCI 697 "Predict Students' Dropout and Academic Success" (4,424 students).

    Column names have surrounding whitespace stripped (the published header has
    ``"Daytime/evening attendance\\t"``). Coded variables keep their integer codes;
    ``codebook`` maps them to the documented meanings.

    Parameters
    ----------
    path : path, optional
        ``data.csv`` or the folder holding it.
    data_home : path, optional
        Cache folder.
    download : bool, default=True
        Download from the UCI archive into the cache when not found.

    Returns
    -------
    Bunch
        ``frame``, ``schema`` (from the UCI variable table), ``target``
        (``"Target"``), ``target_names`` (Dropout, Enrolled, Graduate),
        ``protected`` (Gender, Educational special needs, International),
        ``codebook``, ``description``.
    """
    folder, main = resolve_folder("uci_dropout", path=path, data_home=data_home, download=download)
    file = main if main is not None else find_file(folder, "data.csv")
    frame = pd.read_csv(file, sep=";", encoding="utf-8-sig")
    frame.columns = [str(c).strip() for c in frame.columns]
    _check_columns(frame, UCI_DROPOUT_COLUMNS, file)
    frame = frame[list(UCI_DROPOUT_COLUMNS)]
    return Bunch(
        frame=frame,
        schema=uci_dropout_schema(),
        target="Target",
        target_names=["Dropout", "Enrolled", "Graduate"],
        protected=["Gender", "Educational special needs", "International"],
        codebook=UCI_DROPOUT_CODEBOOK,
        description=(
            f"UCI 697 (Instituto Politecnico de Portalegre): {len(frame)} students, 36 features (demographic, "
            f"socio-economic, macro-economic, 1st/2nd semester academic) and 'Target'. {_licence_line('uci_dropout')}"
        ),
    )


# ----------------------------------------------------------------------------- UCI HESP
def load_uci_hesp(*, path: PathLike | None = None, data_home: PathLike | None = None,
                  download: bool = True) -> Bunch:
    """UCI 856 "Higher Education Students Performance Evaluation" (145 students).

    Columns keep the UCI layout (``"1"`` ... ``"30"``, ``"COURSE ID"``, ``"GRADE"``);
    ``column_descriptions`` and ``codebook`` give the documented meanings. The
    identifier ``STUDENT ID`` is returned as ``ids``, not in ``frame``.

    Parameters
    ----------
    path : path, optional
        ``students-performance.csv`` or the folder holding it.
    data_home : path, optional
        Cache folder.
    download : bool, default=True
        Download from the UCI archive into the cache when not found.

    Returns
    -------
    Bunch
        ``frame``, ``ids``, ``schema`` (from the UCI attribute table), ``target``
        (``"GRADE"``), ``target_names`` (0 Fail ... 7 AA), ``protected``
        (``["2"]``, sex), ``codebook``, ``column_descriptions``, ``description``.
    """
    folder, main = resolve_folder("uci_hesp", path=path, data_home=data_home, download=download)
    file = main if main is not None else find_file(folder, "students-performance.csv")
    raw = pd.read_csv(file, encoding="utf-8-sig")
    raw.columns = [str(c).strip() for c in raw.columns]
    schema = uci_hesp_schema()
    _check_columns(raw, ("STUDENT ID",) + schema.names, file)
    frame = raw[list(schema.names)]
    return Bunch(
        frame=frame,
        ids=raw["STUDENT ID"],
        schema=schema,
        target="GRADE",
        target_names=list(UCI_HESP_CODEBOOK["GRADE"][1].values()),
        protected=["2"],
        codebook={k: v[1] for k, v in UCI_HESP_CODEBOOK.items()},
        column_descriptions={k: v[0] for k, v in UCI_HESP_CODEBOOK.items()} | {"COURSE ID": "Course ID"},
        description=(
            f"UCI 856 (Near East University, 2019): {len(frame)} students, 30 questionnaire attributes "
            f"(coded), COURSE ID and GRADE (0 Fail ... 7 AA). {_licence_line('uci_hesp')}"
        ),
    )


# ----------------------------------------------------------------------------- OULAD
_OULAD_KEYS = ["code_module", "code_presentation", "id_student"]


def _read_csv_fast(path: Path, **kwargs) -> pd.DataFrame:
    try:
        return pd.read_csv(path, engine="pyarrow", **kwargs)
    except (ImportError, ValueError):  # pragma: no cover - pyarrow missing or option unsupported
        return pd.read_csv(path, **kwargs)


def _check_modules(module) -> list[str] | None:
    if module is None:
        return None
    mods = [module] if isinstance(module, str) else list(module)
    bad = [m for m in mods if m not in OULAD_MODULES]
    if bad or not mods:
        raise ValueError(f"module must be None or among {OULAD_MODULES}, got {module!r}.")
    return mods


def _click_files(folder: Path) -> list[Path]:
    full = find_file(folder, "studentVle.csv")
    if full is not None:
        return [full]
    files = [p for p in sorted(folder.glob("studentVle_*.csv*"))
             if not p.name.startswith("studentVle_weekly") and p.suffix in (".csv", ".gz")]
    return files


def _weekly_from_clicks(raw: pd.DataFrame) -> pd.DataFrame:
    """The weekly aggregate described in shared/data/oulad/SOURCE.md: week = floor(date / 7)."""
    df = raw.assign(week=np.floor_divide(raw["date"].to_numpy(), 7))
    g = df.groupby(_OULAD_KEYS + ["week"], sort=True)
    out = g.agg(sum_click=("sum_click", "sum"), n_records=("sum_click", "size"),
                n_active_days=("date", "nunique")).reset_index()
    return out


def load_oulad(
    *,
    path: PathLike | None = None,
    data_home: PathLike | None = None,
    download: bool = True,
    module: str | Sequence[str] | None = None,
    with_clickstream: bool = True,
) -> Bunch:
    """Open University Learning Analytics Dataset (OULAD).

    Parameters
    ----------
    path : path, optional
        The folder with the OULAD CSV files (``studentInfo.csv``, ``courses.csv``,
        ``assessments.csv``, ``vle.csv``, ``studentRegistration.csv``,
        ``studentAssessment.csv``, optionally gzipped; clicks in
        ``studentVle.csv`` or per-module ``studentVle_<MODULE>.csv.gz``; weekly
        aggregate ``studentVle_weekly.csv.gz``), or ``studentInfo.csv`` itself.
    data_home : path, optional
        Cache folder.
    download : bool, default=True
        Download from the publisher (mirror: UCI 349) into the cache when not found.
    module : str or list of str, optional
        Keep only these modules (``"AAA"`` ... ``"GGG"``) in every table.
    with_clickstream : bool, default=True
        Build ``clickstream`` and ``weekly`` (set False to skip reading the click files).

    Returns
    -------
    Bunch
        ``frame``
            ``studentInfo`` without ``id_student`` (``imd_band`` "10-20" normalised
            to "10-20%"), validated by ``schema``.
        ``ids``
            ``id_student`` aligned with ``frame`` (join key with ``code_module``
            and ``code_presentation``).
        ``schema``, ``target`` (``"final_result"``), ``target_names``, ``protected``
            (``gender``, ``disability``, ``imd_band``, ``age_band``).
        ``tables``
            dict of the raw tables: ``studentInfo`` (with ``id_student``),
            ``courses``, ``assessments``, ``vle``, ``studentRegistration``, ``studentAssessment``.
        ``clickstream``
            long event table, one row per studentVle record: ``id_student``,
            ``code_module``, ``code_presentation``, ``date``, ``activity_type``
            (from ``vle.csv`` via ``id_site``), ``sum_click``, ``final_result``;
            sorted by learner (module, presentation, student) then ``date``
            (stable: file order within a day). ``None`` when no click file exists.
        ``clickstream_modules``
            the modules covered by the click files found (the stored copy has AAA only).
        ``weekly``
            weekly clicks per student and week (``week = floor(date / 7)``), from
            ``studentVle_weekly.csv.gz`` or derived from the full ``studentVle.csv``.
        ``cohorts``
            the presentations present, in chronological order (2013B, 2013J, 2014B,
            2014J): successive cohorts, e.g. ``frame[frame.code_presentation == c]``.
        ``description``
    """
    mods = _check_modules(module)
    folder, main = resolve_folder("oulad", path=path, data_home=data_home, download=download)
    info_file = main if main is not None else find_file(folder, "studentInfo.csv")

    def table(name: str) -> pd.DataFrame:
        f = find_file(folder, name)
        if f is None:
            raise FileNotFoundError(f"OULAD table {name} is not in {folder}.")
        return pd.read_csv(f)

    student_info = pd.read_csv(info_file)
    _check_columns(student_info, ("id_student",) + OULAD_STUDENT_INFO_COLUMNS, info_file)
    tables = {"studentInfo": student_info}
    for name in ("courses", "assessments", "vle", "studentRegistration", "studentAssessment"):
        tables[name] = table(f"{name}.csv")
    if mods is not None:
        for name in ("studentInfo", "courses", "assessments", "vle", "studentRegistration"):
            t = tables[name]
            tables[name] = t[t["code_module"].isin(mods)].reset_index(drop=True)
        keep = tables["assessments"]["id_assessment"]
        sa = tables["studentAssessment"]
        tables["studentAssessment"] = sa[sa["id_assessment"].isin(keep)].reset_index(drop=True)
    student_info = tables["studentInfo"]

    frame = student_info[list(OULAD_STUDENT_INFO_COLUMNS)].copy()
    # the published file spells the 10-20 % band "10-20": normalise to the documented "10-20%"
    frame["imd_band"] = frame["imd_band"].replace({"10-20": "10-20%"})
    ids = student_info["id_student"].copy()

    clickstream = weekly = None
    click_modules: list[str] = []
    if with_clickstream:
        files = _click_files(folder)
        raw = None
        if files:
            raw = pd.concat([_read_csv_fast(f) for f in files], ignore_index=True)
            if mods is not None:
                raw = raw[raw["code_module"].isin(mods)].reset_index(drop=True)
            click_modules = sorted(pd.unique(raw["code_module"]).tolist())
            clickstream = _build_clickstream(raw, tables["vle"], student_info)
        weekly_file = find_file(folder, "studentVle_weekly.csv")
        if weekly_file is not None:
            weekly = _read_csv_fast(weekly_file)
            if mods is not None:
                weekly = weekly[weekly["code_module"].isin(mods)].reset_index(drop=True)
        elif raw is not None and find_file(folder, "studentVle.csv") is not None:
            weekly = _weekly_from_clicks(raw)

    present = set(frame["code_presentation"])
    cohorts = [p for p in OULAD_PRESENTATIONS if p in present]
    return Bunch(
        frame=frame,
        ids=ids,
        schema=oulad_student_info_schema(),
        target="final_result",
        target_names=["Distinction", "Pass", "Fail", "Withdrawn"],
        protected=["gender", "disability", "imd_band", "age_band"],
        tables=tables,
        clickstream=clickstream,
        clickstream_modules=click_modules,
        weekly=weekly,
        cohorts=cohorts,
        description=(
            f"OULAD: {len(frame)} student-presentation registrations"
            + (f" of module(s) {mods}" if mods else "")
            + f", presentations {cohorts}; clicks for modules {click_modules or 'none'}. "
            + _licence_line("oulad")
        ),
    )


def _learner_key(df: pd.DataFrame) -> np.ndarray:
    """One int64 per (module, presentation, student): fast joins and sorting (unknown codes -> -1)."""
    mod = pd.Categorical(df["code_module"], categories=OULAD_MODULES).codes.astype(np.int64)
    pres = pd.Categorical(df["code_presentation"], categories=OULAD_PRESENTATIONS).codes.astype(np.int64)
    return ((mod + 1) * 8 + (pres + 1)) * 10**10 + df["id_student"].to_numpy(np.int64)


def _build_clickstream(raw: pd.DataFrame, vle: pd.DataFrame, student_info: pd.DataFrame) -> pd.DataFrame:
    """studentVle rows + activity_type (via id_site) + final_result, sorted by learner and date (vectorised)."""
    site_index = pd.Index(vle["id_site"].to_numpy())
    pos = site_index.get_indexer(raw["id_site"].to_numpy())
    activity = vle["activity_type"].to_numpy(dtype=object)
    act = np.where(pos >= 0, activity[np.maximum(pos, 0)], None)
    kpos = pd.Index(_learner_key(student_info)).get_indexer(_learner_key(raw))
    results = student_info["final_result"].to_numpy(dtype=object)
    res = np.where(kpos >= 0, results[np.maximum(kpos, 0)], None)
    out = pd.DataFrame({
        "id_student": raw["id_student"].to_numpy(np.int64),
        "code_module": raw["code_module"].to_numpy(dtype=object),
        "code_presentation": raw["code_presentation"].to_numpy(dtype=object),
        "date": raw["date"].to_numpy(np.int64),
        "activity_type": act,
        "sum_click": raw["sum_click"].to_numpy(np.int64),
        "final_result": res,
    })
    order = np.lexsort((out["date"].to_numpy(), _learner_key(out)))  # stable: file order within a day
    return out.iloc[order].reset_index(drop=True)


# ----------------------------------------------------------------------------- dispatch
_LOADERS = {"adult": load_adult, "uci_dropout": load_uci_dropout, "uci_hesp": load_uci_hesp, "oulad": load_oulad}


def load_dataset(name: str, **kwargs) -> Bunch:
    """Load a dataset by name (see :func:`~skdpsynth.datasets.list_datasets`); ``kwargs`` go to its loader."""
    if name not in _LOADERS:
        raise ValueError(f"unknown dataset {name!r}; available: {sorted(_LOADERS)}.")
    return _LOADERS[name](**kwargs)
