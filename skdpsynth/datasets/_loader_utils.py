"""Helpers shared by the dataset loaders."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from skdpsynth.datasets._fetch import DATASETS
from skdpsynth.exceptions import SchemaError

PathLike = str | os.PathLike


def _check_columns(df: pd.DataFrame, expected: Sequence[str], where: Path) -> None:
    missing = [c for c in expected if c not in df.columns]
    if missing:
        raise SchemaError(f"{where}: expected columns {missing} are missing; found {list(df.columns)}.")


def _licence_line(name: str) -> str:
    info = DATASETS[name]
    return f"Source: {info.page}. Licence: {info.licence}. Cite: {info.citation}"
