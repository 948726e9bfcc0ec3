"""Loader of the Open University Learning Analytics Dataset (:func:`load_oulad`).

Steps: read the tables, keep the requested modules, build ``frame`` / ``ids``
from ``studentInfo``, then (optionally) read the click files into the long
``clickstream`` and the ``weekly`` aggregate.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from skdpsynth.datasets._fetch import find_file, resolve_folder
from skdpsynth.datasets._loader_utils import PathLike, _check_columns, _licence_line
from skdpsynth.datasets._schemas import (
    OULAD_MODULES,
    OULAD_PRESENTATIONS,
    OULAD_STUDENT_INFO_COLUMNS,
    oulad_student_info_schema,
)

__all__ = ["load_oulad"]

_OULAD_KEYS = ["code_module", "code_presentation", "id_student"]
# the tables read besides studentInfo, in this order; all but studentAssessment have a code_module column
_OTHER_TABLES = ("courses", "assessments", "vle", "studentRegistration", "studentAssessment")
_MODULE_TABLES = ("studentInfo", "courses", "assessments", "vle", "studentRegistration")


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
            a short text on the data set and its source.
    """
    mods = _check_modules(module)
    folder, main = resolve_folder("oulad", path=path, data_home=data_home, download=download)
    info_file = main if main is not None else find_file(folder, "studentInfo.csv")
    tables = _read_tables(folder, info_file)
    if mods is not None:
        _filter_tables(tables, mods)
    student_info = tables["studentInfo"]
    frame, ids = _student_frame(student_info)

    clickstream = weekly = None
    click_modules: list[str] = []
    if with_clickstream:
        raw = _read_clicks(folder, mods)
        if raw is not None:
            click_modules = sorted(pd.unique(raw["code_module"]).tolist())
            clickstream = _build_clickstream(raw, tables["vle"], student_info)
        weekly = _read_weekly(folder, raw, mods)

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
        description=_description(frame, mods, cohorts, click_modules),
    )


# ----------------------------------------------------------------------------- read / filter the tables
def _check_modules(module) -> list[str] | None:
    if module is None:
        return None
    mods = [module] if isinstance(module, str) else list(module)
    bad = [m for m in mods if m not in OULAD_MODULES]
    if bad or not mods:
        raise ValueError(f"module must be None or among {OULAD_MODULES}, got {module!r}.")
    return mods


def _read_tables(folder: Path, info_file: Path) -> dict[str, pd.DataFrame]:
    """``studentInfo`` (columns checked) then the other raw tables, keyed by their file stem."""
    student_info = pd.read_csv(info_file)
    _check_columns(student_info, ("id_student",) + OULAD_STUDENT_INFO_COLUMNS, info_file)
    tables = {"studentInfo": student_info}
    for name in _OTHER_TABLES:
        f = find_file(folder, f"{name}.csv")
        if f is None:
            raise FileNotFoundError(f"OULAD table {name}.csv is not in {folder}.")
        tables[name] = pd.read_csv(f)
    return tables


def _keep_modules(df: pd.DataFrame, mods: list[str]) -> pd.DataFrame:
    return df[df["code_module"].isin(mods)].reset_index(drop=True)


def _filter_tables(tables: dict[str, pd.DataFrame], mods: list[str]) -> None:
    """Keep only the modules ``mods`` in every table (in place); studentAssessment via its assessments."""
    for name in _MODULE_TABLES:
        tables[name] = _keep_modules(tables[name], mods)
    keep = tables["assessments"]["id_assessment"]
    sa = tables["studentAssessment"]
    tables["studentAssessment"] = sa[sa["id_assessment"].isin(keep)].reset_index(drop=True)


def _student_frame(student_info: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """``frame`` (the schema's columns, ``imd_band`` normalised) and the aligned ``id_student``."""
    frame = student_info[list(OULAD_STUDENT_INFO_COLUMNS)].copy()
    # the published file spells the 10-20 % band "10-20": normalise to the documented "10-20%"
    frame["imd_band"] = frame["imd_band"].replace({"10-20": "10-20%"})
    ids = student_info["id_student"].copy()
    return frame, ids


def _description(frame: pd.DataFrame, mods: list[str] | None, cohorts: list[str], click_modules: list[str]) -> str:
    return (
        f"OULAD: {len(frame)} student-presentation registrations"
        + (f" of module(s) {mods}" if mods else "")
        + f", presentations {cohorts}; clicks for modules {click_modules or 'none'}. "
        + _licence_line("oulad")
    )


# ----------------------------------------------------------------------------- clicks
def _read_csv_fast(path: Path, **kwargs) -> pd.DataFrame:
    try:
        return pd.read_csv(path, engine="pyarrow", **kwargs)
    except (ImportError, ValueError):  # pragma: no cover - pyarrow missing or option unsupported
        return pd.read_csv(path, **kwargs)


def _click_files(folder: Path) -> list[Path]:
    full = find_file(folder, "studentVle.csv")
    if full is not None:
        return [full]
    files = [p for p in sorted(folder.glob("studentVle_*.csv*"))
             if not p.name.startswith("studentVle_weekly") and p.suffix in (".csv", ".gz")]
    return files


def _read_clicks(folder: Path, mods: list[str] | None) -> pd.DataFrame | None:
    """All studentVle records of the click files (of the modules ``mods``); ``None`` when there is no click file."""
    files = _click_files(folder)
    if not files:
        return None
    raw = pd.concat([_read_csv_fast(f) for f in files], ignore_index=True)
    if mods is not None:
        raw = _keep_modules(raw, mods)
    return raw


def _read_weekly(folder: Path, raw: pd.DataFrame | None, mods: list[str] | None) -> pd.DataFrame | None:
    """The weekly aggregate file if present, else derived from the full ``studentVle.csv``, else ``None``."""
    weekly_file = find_file(folder, "studentVle_weekly.csv")
    if weekly_file is not None:
        weekly = _read_csv_fast(weekly_file)
        return weekly if mods is None else _keep_modules(weekly, mods)
    if raw is not None and find_file(folder, "studentVle.csv") is not None:
        return _weekly_from_clicks(raw)
    return None


def _weekly_from_clicks(raw: pd.DataFrame) -> pd.DataFrame:
    """The weekly aggregate described in shared/data/oulad/SOURCE.md: week = floor(date / 7)."""
    df = raw.assign(week=np.floor_divide(raw["date"].to_numpy(), 7))
    g = df.groupby(_OULAD_KEYS + ["week"], sort=True)
    out = g.agg(sum_click=("sum_click", "sum"), n_records=("sum_click", "size"),
                n_active_days=("date", "nunique")).reset_index()
    return out


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
