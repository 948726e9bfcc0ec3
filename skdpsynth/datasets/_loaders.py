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

This module holds the single-table loaders and :func:`load_dataset`; the
multi-table OULAD loader is in ``_oulad``.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
from sklearn.utils import Bunch

from skdpsynth.datasets._fetch import find_file, resolve_folder
from skdpsynth.datasets._loader_utils import PathLike, _check_columns, _licence_line
from skdpsynth.datasets._oulad import load_oulad
from skdpsynth.datasets._schemas import (
    ADULT_COLUMNS,
    UCI_DROPOUT_CODEBOOK,
    UCI_DROPOUT_COLUMNS,
    UCI_HESP_CODEBOOK,
    adult_schema,
    uci_dropout_schema,
    uci_hesp_schema,
)

__all__ = ["load_adult", "load_uci_dropout", "load_uci_hesp", "load_oulad", "load_dataset"]


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


# ----------------------------------------------------------------------------- dispatch
_LOADERS = {"adult": load_adult, "uci_dropout": load_uci_dropout, "uci_hesp": load_uci_hesp, "oulad": load_oulad}


def load_dataset(name: str, **kwargs) -> Bunch:
    """Load a dataset by name (see :func:`~skdpsynth.datasets.list_datasets`); ``kwargs`` go to its loader."""
    if name not in _LOADERS:
        raise ValueError(f"unknown dataset {name!r}; available: {sorted(_LOADERS)}.")
    return _LOADERS[name](**kwargs)
