"""Finding dataset files: a local path, the cache folder, or a download from the publisher.

The cache folder is ``data_home`` if given, else the environment variable
``SKDPSYNTH_DATA_HOME``, else ``~/.cache/skdpsynth``; each dataset lives in
``<data_home>/<name>/`` laid out like ``shared/data/<name>/``.
"""

from __future__ import annotations

import io
import logging
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from skdpsynth.exceptions import SkdpsynthError

__all__ = ["DatasetNotFoundError", "get_data_home", "list_datasets", "fetch_dataset", "DATASETS"]

logger = logging.getLogger(__name__)

_TIMEOUT_S = 60


class DatasetNotFoundError(SkdpsynthError, FileNotFoundError):
    """A dataset's files are neither at the given path, nor in the cache, nor downloadable."""


@dataclass(frozen=True)
class _Source:
    """One way to obtain files: a direct file URL (saved as ``target``) or a zip archive (all files unpacked)."""

    url: str
    kind: str  # "file" or "zip"
    target: str | None = None  # for kind="file": the file name to write


@dataclass(frozen=True)
class DatasetInfo:
    """Registry entry of a public dataset."""

    name: str
    title: str
    licence: str
    page: str
    citation: str
    required: tuple[str, ...]  # file names that must exist (a ".gz" variant also counts)
    optional: tuple[str, ...] = ()
    sources: tuple[_Source, ...] = field(default_factory=tuple)
    any_csv_as: str | None = None  # when the archive names the main CSV differently, store it under this name


_UCI = "https://archive.ics.uci.edu"

DATASETS: dict[str, DatasetInfo] = {
    "adult": DatasetInfo(
        name="adult",
        title="UCI Adult / Census Income (48,842 people, income <=50K / >50K)",
        licence="CC BY 4.0",
        page=f"{_UCI}/dataset/2/adult",
        citation="R. Kohavi (1996), Scaling Up the Accuracy of Naive-Bayes Classifiers: a Decision-Tree "
                 "Hybrid, KDD-96.",
        required=("adult.data", "adult.test"),
        optional=("adult.names",),
        sources=(
            _Source(f"{_UCI}/ml/machine-learning-databases/adult/adult.names", "file", "adult.names"),
            _Source(f"{_UCI}/ml/machine-learning-databases/adult/adult.data", "file", "adult.data"),
            _Source(f"{_UCI}/ml/machine-learning-databases/adult/adult.test", "file", "adult.test"),
            _Source(f"{_UCI}/static/public/2/adult.zip", "zip"),
        ),
    ),
    "uci_dropout": DatasetInfo(
        name="uci_dropout",
        title="UCI 697 Predict Students' Dropout and Academic Success (4,424 students, 3 outcomes)",
        licence="CC BY 4.0",
        page=f"{_UCI}/dataset/697/predict+students+dropout+and+academic+success",
        citation="V. Realinho, J. Machado, L. Baptista, M. V. Martins (2022), Predicting Student Dropout and "
                 "Academic Success, Data 7(11):146.",
        required=("data.csv",),
        sources=(_Source(f"{_UCI}/static/public/697/predict+students+dropout+and+academic+success.zip", "zip"),),
        any_csv_as="data.csv",
    ),
    "uci_hesp": DatasetInfo(
        name="uci_hesp",
        title="UCI 856 Higher Education Students Performance Evaluation (145 students, grade 0-7)",
        licence="CC BY 4.0",
        page=f"{_UCI}/dataset/856/higher+education+students+performance+evaluation",
        citation="N. Yilmaz, B. Sekeroglu (2019), Student Performance Classification Using Artificial "
                 "Intelligence Techniques, ICSCCW 2019, AISC 1095.",
        required=("students-performance.csv",),
        sources=(_Source(f"{_UCI}/static/public/856/higher+education+students+performance+evaluation.zip", "zip"),),
        any_csv_as="students-performance.csv",
    ),
    "oulad": DatasetInfo(
        name="oulad",
        title="Open University Learning Analytics Dataset (32,593 registrations, 22 presentations, VLE clicks)",
        licence="CC BY 4.0",
        page="https://analyse.kmi.open.ac.uk/open_dataset",
        citation="J. Kuzilek, M. Hlosta, Z. Zdrahal (2017), Open University Learning Analytics dataset, "
                 "Scientific Data 4:170171.",
        required=("studentInfo.csv", "courses.csv", "assessments.csv", "vle.csv", "studentRegistration.csv",
                  "studentAssessment.csv"),
        optional=("studentVle.csv",),
        sources=(
            _Source("https://analyse.kmi.open.ac.uk/open_dataset/download", "zip"),
            _Source(f"{_UCI}/static/public/349/open+university+learning+analytics+dataset.zip", "zip"),
        ),
    ),
}


def get_data_home(data_home: str | os.PathLike | None = None) -> Path:
    """The cache folder: ``data_home``, else ``$SKDPSYNTH_DATA_HOME``, else ``~/.cache/skdpsynth``.

    The folder is not created here.
    """
    if data_home is not None:
        return Path(data_home).expanduser()
    env = os.environ.get("SKDPSYNTH_DATA_HOME")
    if env:
        return Path(env).expanduser()
    return Path("~/.cache/skdpsynth").expanduser()


def _info(name: str) -> DatasetInfo:
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; available: {sorted(DATASETS)}.")
    return DATASETS[name]


def find_file(folder: Path, filename: str) -> Path | None:
    """``folder/filename`` or its ``.gz`` variant, if present."""
    for candidate in (folder / filename, folder / (filename + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def _complete(folder: Path, info: DatasetInfo) -> bool:
    return folder.is_dir() and all(find_file(folder, f) is not None for f in info.required)


def list_datasets() -> dict[str, str]:
    """The real public datasets the package can load: name -> one-line description.

    Returns
    -------
    dict of str to str
        E.g. ``{"adult": "UCI Adult ... [CC BY 4.0] https://...", ...}``.
    """
    return {k: f"{v.title} [{v.licence}] {v.page}" for k, v in DATASETS.items()}


def _download_bytes(url: str) -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": "skdpsynth (dataset fetch)"})
    with urllib.request.urlopen(req, timeout=_TIMEOUT_S) as resp:  # noqa: S310 - fixed https URLs
        return resp.read()


def _extract_zip(data: bytes, dest: Path) -> None:
    """Extract every file of a zip (and of zips nested in it) flat into ``dest`` by base name."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for member in zf.infolist():
            if member.is_dir():
                continue
            base = Path(member.filename).name
            if not base or base.startswith(".") or "__MACOSX" in member.filename:
                continue
            content = zf.read(member)
            if base.lower().endswith(".zip"):
                _extract_zip(content, dest)
            else:
                (dest / base).write_bytes(content)


def _download(info: DatasetInfo, folder: Path) -> None:
    """Fill ``folder`` with the dataset's required files from the publisher (atomic per file)."""
    errors = []
    with tempfile.TemporaryDirectory(prefix=f"skdpsynth-{info.name}-") as tmp:
        tmpdir = Path(tmp)
        for src in info.sources:
            if all(find_file(tmpdir, f) is not None for f in info.required):
                break
            try:
                logger.info("downloading %s", src.url)
                body = _download_bytes(src.url)
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                errors.append(f"{src.url}: {exc}")
                continue
            if src.kind == "file":
                (tmpdir / src.target).write_bytes(body)
            else:
                try:
                    _extract_zip(body, tmpdir)
                except zipfile.BadZipFile as exc:
                    errors.append(f"{src.url}: not a zip archive ({exc})")
                    continue
        if info.any_csv_as and find_file(tmpdir, info.any_csv_as) is None:
            csvs = sorted(p for p in tmpdir.iterdir() if p.suffix.lower() == ".csv")
            if len(csvs) == 1:
                csvs[0].rename(tmpdir / info.any_csv_as)
        missing = [f for f in info.required if find_file(tmpdir, f) is None]
        if missing:
            detail = "; ".join(errors) if errors else "the archive did not contain them"
            raise DatasetNotFoundError(
                f"could not download dataset {info.name!r}: files {missing} not obtained ({detail}). "
                f"If you are offline, download it by hand from {info.page} and pass path=<folder>, "
                f"or place the files in {folder}."
            )
        folder.mkdir(parents=True, exist_ok=True)
        for f in info.required + info.optional:
            got = find_file(tmpdir, f)
            if got is not None:
                part = folder / (got.name + ".part")
                shutil.copyfile(got, part)
                os.replace(part, folder / got.name)


def resolve_folder(name: str, *, path: str | os.PathLike | None, data_home: str | os.PathLike | None,
                   download: bool) -> tuple[Path, Path | None]:
    """Where the dataset's files are: ``(folder, main_file_or_None)``.

    ``path`` may be a file (the main table; other files are looked for next to it)
    or a folder laid out like ``shared/data/<name>/``. Without ``path`` the cache
    folder is used, downloading into it when allowed.
    """
    info = _info(name)
    if path is not None:
        p = Path(path).expanduser()
        if p.is_file():
            return p.parent, p
        if p.is_dir():
            missing = [f for f in info.required if find_file(p, f) is None]
            if missing:
                raise DatasetNotFoundError(f"dataset {name!r}: files {missing} are not in the folder {p}.")
            return p, None
        raise DatasetNotFoundError(f"dataset {name!r}: path {p} does not exist.")
    folder = get_data_home(data_home) / name
    if _complete(folder, info):
        return folder, None
    if not download:
        missing = [f for f in info.required if find_file(folder, f) is None]
        raise DatasetNotFoundError(
            f"dataset {name!r} is not in the cache folder {folder} (missing {missing}) and download=False. "
            f"Pass path=<file or folder>, set data_home / SKDPSYNTH_DATA_HOME, or allow download "
            f"(source: {info.page})."
        )
    _download(info, folder)
    return folder, None


def fetch_dataset(name: str, data_home: str | os.PathLike | None = None, *, force: bool = False) -> Path:
    """Download a dataset into the cache folder (if not already there) and return that folder.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets`.
    data_home : path, optional
        Cache folder (default ``$SKDPSYNTH_DATA_HOME`` or ``~/.cache/skdpsynth``).
    force : bool, default=False
        Download again even when the files are cached.

    Returns
    -------
    pathlib.Path
        ``<data_home>/<name>``.

    Raises
    ------
    DatasetNotFoundError
        When the download fails (e.g. offline); the message says how to supply the files by hand.
    """
    info = _info(name)
    folder = get_data_home(data_home) / name
    if force or not _complete(folder, info):
        _download(info, folder)
    return folder
