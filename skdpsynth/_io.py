"""The one table reader and writer of the command line (CSV or Parquet), with output-path safety.

One module on purpose (over 400 lines): every path, format and JSON rule of the command line lives here.

Reading: the format comes from the extension; a CSV's separator is sniffed
unless given. With a schema, every column is read as its declared kind.
Without one, every column is read as text: a column's kind must not depend on
any one person's value (one "unknown" in a date column, one "30.5" among ages),
so a release leaves kinds to the synthesizer's DP domain estimate. Only where
the data are read as they are anyway (a raw schema draft, an audit) does
``infer=True`` let pandas infer kinds (integers and booleans as its nullable
dtypes, ISO dates parsed).

Writing: every output path is checked before any work (:func:`check_output`):
an existing file is refused without ``force``, an input is never overwritten,
a folder or an unwritable location is an error. Tables and JSON are written to
a hidden partial file beside the target and moved into place only when complete
(:class:`TableWriter`), and never onto a file that appeared meanwhile unless
overwriting was asked for, so a failed run leaves nothing half-written and
nothing is overwritten by surprise.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import json
import math
import os
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from skdpsynth.exceptions import SchemaError, SkdpsynthError
from skdpsynth.schema import TableSchema

__all__ = ["InputError", "read_table", "read_schema", "check_output", "budget_path", "sha256_of", "TableWriter",
           "write_table", "write_json", "json_safe", "dumps_json", "print_stdout", "table_format"]

_CSV = {".csv": ",", ".tsv": "\t", ".txt": None}
_PARQUET = (".parquet", ".pq")
_COMPRESSED = (".gz", ".bz2", ".zip", ".xz", ".zst")
_DEFAULT_ENCODING = "utf-8-sig"  # utf-8, ignoring the byte-order mark Excel writes


class InputError(SkdpsynthError, ValueError):
    """A file or path given by the user cannot be used (the message says why and what to do)."""


# --------------------------------------------------------------------------- formats
def table_format(path: str | os.PathLike, *, writing: bool = False) -> str:
    """``"csv"`` or ``"parquet"`` from the file name; anything else is refused.

    Parameters
    ----------
    path : str or PathLike
        The file.
    writing : bool, default=False
        Output files may not be compressed CSV.

    Returns
    -------
    str
    """
    suffixes = [s.lower() for s in Path(path).suffixes]
    if not writing and len(suffixes) >= 2 and suffixes[-1] in _COMPRESSED and suffixes[-2] in _CSV:
        return "csv"
    if suffixes and suffixes[-1] in _CSV:
        return "csv"
    if suffixes and suffixes[-1] in _PARQUET:
        return "parquet"
    found = f"'{suffixes[-1]}'" if suffixes else "no extension"
    allowed = ".csv, .tsv or .parquet" if writing else ".csv, .tsv, .txt (optionally .gz/.zip) or .parquet"
    hint = " (in Excel: File > Save As > 'CSV UTF-8')" if suffixes and suffixes[-1] in (".xlsx", ".xls") else ""
    verb = "write" if writing else "read"
    raise InputError(f"cannot {verb} {str(path)!r}: unsupported file type ({found}); use {allowed}{hint}.")


# --------------------------------------------------------------------------- reading
def read_table(path: str | os.PathLike, *, sep: str | None = None, encoding: str | None = None,
               schema: TableSchema | None = None, infer: bool = False, what: str = "input") -> pd.DataFrame:
    """Read a CSV or Parquet table for the command line.

    Parameters
    ----------
    path : str or PathLike
        The file (format from its extension).
    sep : str, optional
        CSV separator; sniffed from the first lines when None.
    encoding : str, optional
        CSV text encoding (default ``utf-8-sig``).
    schema : TableSchema, optional
        Read each schema column as its declared kind: integers as ``Int64``,
        booleans as ``boolean``, datetimes parsed (time zones kept),
        categories with text labels as text. Values that do not fit are left
        as read, for :meth:`TableSchema.validate` to report.
    infer : bool, default=False
        Without a schema: let pandas infer each column's kind from its values
        (not private: for a raw draft or an audit). Otherwise every column is
        text (missing values NaN), whatever the file's values or stored types.
    what : str
        How the file is named in error messages (e.g. ``"--holdout"``).

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    InputError
        Missing, empty or unreadable file, a folder, an unsupported extension,
        or text that is not in ``encoding``.
    """
    path = Path(path)
    fmt = table_format(path)
    _check_readable(path, what)
    as_text = schema is None and not infer
    if fmt == "parquet":
        frame = _read_parquet(path, what)
    else:
        frame = _read_csv(path, sep, encoding or _DEFAULT_ENCODING, schema, as_text, what)
    if frame.shape[1] == 0 or len(frame) == 0:
        raise InputError(f"{what} {str(path)!r} has a header but no data rows.")
    if as_text:
        return _as_text(frame)
    frame = _plain_dtypes(frame)
    return _apply_kinds(frame, schema) if schema is not None else _parse_iso_dates(frame)


def _as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Every column as text (object), missing values NaN: the same rule for every value, whatever the others."""
    out = {}
    for name in frame.columns:
        col = frame[name]
        out[name] = col.astype(object).where(col.isna(), col.astype(str)).where(col.notna(), np.nan)
    return pd.DataFrame(out, index=frame.index)


def _check_readable(path: Path, what: str) -> None:
    if path.is_dir():
        raise InputError(f"{what} {str(path)!r} is a folder; give a .csv or .parquet file.")
    if not path.exists():
        raise InputError(f"{what} {str(path)!r} does not exist.")
    if path.stat().st_size == 0:
        raise InputError(f"{what} {str(path)!r} is empty (0 bytes).")


def _read_parquet(path: Path, what: str) -> pd.DataFrame:
    try:
        return pd.read_parquet(path, dtype_backend="numpy_nullable")
    except (OSError, ValueError) as exc:
        raise InputError(f"{what} {str(path)!r} is not a readable Parquet file ({exc}).") from exc


def _sniff(path: Path, encoding: str, default: str) -> str:
    """The separator of the first lines (of ``default`` when they do not tell)."""
    suffix = path.suffix.lower()
    if suffix in (".zip", ".zst"):
        return default  # not sniffed
    opener = {".gz": "gzip", ".bz2": "bz2", ".xz": "lzma"}.get(suffix)
    with (path.open("rb") if opener is None else __import__(opener).open(path, "rb")) as fh:
        raw = fh.read(65536)
    text = codecs.getincrementaldecoder(encoding)(errors="strict").decode(raw, final=False)
    lines = text.splitlines()[:50]
    if len(lines) > 1 and len(raw) == 65536:
        lines = lines[:-1]  # whole lines only
    try:
        return csv.Sniffer().sniff("\n".join(lines), delimiters=",;\t|").delimiter
    except csv.Error:
        return default


def _encoding_error(path: Path, what: str, encoding: str) -> InputError:
    # neither the byte nor its position is quoted: both are part of some person's value
    return InputError(
        f"{what} {str(path)!r} is not valid {encoding} text. Files saved by older Excel versions are often "
        "latin-1: try --encoding latin-1 (or --encoding cp1252).")


def _read_csv(path: Path, sep: str | None, encoding: str, schema: TableSchema | None, as_text: bool,
              what: str) -> pd.DataFrame:
    try:
        "".encode(encoding)
    except LookupError as exc:
        raise InputError(f"unknown --encoding {encoding!r} (e.g. utf-8, latin-1, cp1252).") from exc
    default = _CSV.get(path.suffixes[0].lower() if path.suffixes else "", ",") or ","
    try:
        sep = sep if sep is not None else _sniff(path, encoding, default)
        if as_text:
            return pd.read_csv(path, sep=sep, encoding=encoding, dtype=str, low_memory=False)
        text_cols = {} if schema is None else {s.name: str for s in schema.columns if _text_labels(s)}
        return pd.read_csv(path, sep=sep, encoding=encoding, dtype=text_cols or None, low_memory=False,
                           dtype_backend="numpy_nullable")
    except UnicodeDecodeError as exc:
        raise _encoding_error(path, what, encoding) from exc
    except pd.errors.EmptyDataError as exc:
        raise InputError(f"{what} {str(path)!r} has no columns (empty or blank lines only).") from exc
    except (pd.errors.ParserError, ValueError, OSError) as exc:
        raise InputError(f"{what} {str(path)!r} could not be read as CSV with separator {sep!r} ({exc}); "
                         "give the separator with --sep.") from exc


def _text_labels(spec: Any) -> bool:
    return spec.kind == "categorical" and all(isinstance(c, str) for c in spec.categories)


def _plain_dtypes(frame: pd.DataFrame) -> pd.DataFrame:
    """Keep nullable integers and booleans; floats as float64 and text as object (pandas' defaults)."""
    out = {}
    for name in frame.columns:
        col = frame[name]
        if isinstance(col.dtype, pd.Float64Dtype | pd.Float32Dtype):
            col = col.astype("float64")
        elif isinstance(col.dtype, pd.StringDtype):
            col = col.astype(object).where(col.notna(), np.nan)
        out[name] = col
    return pd.DataFrame(out, index=frame.index)


def _parse_iso_dates(frame: pd.DataFrame) -> pd.DataFrame:
    """Without a schema, text columns that all look like ISO dates (2021-09-01...) are parsed."""
    for name in frame.columns:
        col = frame[name]
        if col.dtype == object and col.notna().any():
            values = col.dropna().astype(str)
            if values.str.match(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$").all():
                parsed = _to_datetime(col)
                if parsed is not None:
                    frame[name] = parsed
    return frame


def _to_datetime(col: pd.Series) -> pd.Series | None:
    for kwargs in ({"format": "ISO8601"}, {"format": "mixed"}, {"format": "mixed", "utc": True}):
        try:
            return pd.to_datetime(col, **kwargs)
        except (ValueError, TypeError):
            continue
    return None


def _apply_kinds(frame: pd.DataFrame, schema: TableSchema) -> pd.DataFrame:
    out = {}
    for name in frame.columns:
        col = frame[name]
        out[name] = _as_kind(col, schema[name].kind) if name in schema else col
    return pd.DataFrame(out, index=frame.index)


def _as_kind(col: pd.Series, kind: str) -> pd.Series:
    """The column in its schema kind's dtype, or unchanged when its values do not fit (validation says why)."""
    if kind in ("integer", "continuous") and not pd.api.types.is_bool_dtype(col.dtype):
        num = pd.to_numeric(col, errors="coerce")
        if (num.isna() & col.notna()).any():
            return col
        values = num.astype("float64")
        if kind == "continuous":
            return values
        whole = values.dropna()
        return values.astype("Int64") if (whole == np.round(whole)).all() else col
    if kind == "boolean":
        if pd.api.types.is_bool_dtype(col.dtype):
            return col.astype("boolean")
        mapping = {"true": True, "false": False, "1": True, "0": False}
        text = col.astype(str).str.strip().str.lower().where(col.notna())
        if text.dropna().isin(list(mapping)).all():
            return text.map(mapping).astype("boolean")
        return col
    if kind == "datetime" and not pd.api.types.is_datetime64_any_dtype(col.dtype):
        parsed = _to_datetime(col)
        return col if parsed is None else parsed
    return col


def read_schema(path: str | os.PathLike, *, what: str = "--schema") -> TableSchema:
    """Read a schema JSON file; every problem names the file."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{what} {str(path)!r} is a folder; give the schema's .json file.")
    if not path.exists():
        raise InputError(f"{what} {str(path)!r} does not exist (draft one with 'skdpsynth schema draft DATA "
                         "--epsilon E -o draft.json', check it against the codebook, then 'skdpsynth schema confirm "
                         "draft.json -o schema.json').")
    try:
        return TableSchema.from_json(path)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} {str(path)!r} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg}).") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {str(path)!r} is not UTF-8 text.") from exc
    except (SchemaError, TypeError, AttributeError, KeyError) as exc:
        raise InputError(f"{what} {str(path)!r} is not a valid schema: {exc}") from exc


# --------------------------------------------------------------------------- output safety
def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def _probe_writable(folder: Path, what: str, path: Path) -> None:
    """Create and remove a file in ``folder`` (or its nearest existing parent): the only reliable check."""
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"{what} {str(path)!r}: {str(existing)!r} is a file, not a folder.")
    try:
        fd, probe = tempfile.mkstemp(prefix=".skdpsynth-probe-", dir=existing)
    except OSError as exc:
        raise InputError(f"{what} {str(path)!r}: cannot write in folder {str(existing)!r} "
                         f"({exc.strerror or exc}).") from exc
    os.close(fd)
    os.unlink(probe)


def check_output(path: str | os.PathLike, *, force: bool = False, inputs: Iterable[str | os.PathLike | None] = (),
                 what: str = "output", kind: str = "table") -> Path:
    """Check an output path before any work is done.

    Parameters
    ----------
    path : str or PathLike
        The file (or folder) to be written.
    force : bool, default=False
        Allow replacing an existing file, or writing into a non-empty folder
        (never over an input).
    inputs : iterable of paths
        Files the run reads; the output may be none of them.
    what : str
        How the path is named in error messages (e.g. ``"-o"``).
    kind : {"table", "json", "folder"}
        A ``.csv`` / ``.tsv`` / ``.parquet`` table, a ``.json`` file, or a folder.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    InputError
        With what to do instead.
    """
    path = Path(path)
    for src in inputs:
        if src is not None and _same_file(path, Path(src)):
            raise InputError(f"{what} {str(path)!r} is an input of this run; write the output to another file.")
    if kind == "folder":
        if path.exists() and not path.is_dir():
            raise InputError(f"{what} {str(path)!r} is a file; give a folder.")
        if path.is_dir() and any(path.iterdir()) and not force:
            raise InputError(f"{what} folder {str(path)!r} already exists and is not empty; choose another folder "
                             "or pass --force to write into it.")
        _probe_writable(path, what, path)
        return path
    if kind == "table":
        table_format(path, writing=True)
    elif path.suffix.lower() != ".json":
        raise InputError(f"{what} {str(path)!r}: the file name must end in .json.")
    if path.is_dir():
        example = str(path / ("release.csv" if kind == "table" else "schema.json"))
        raise InputError(f"{what} {str(path)!r} is a folder; give a file name such as {example!r}.")
    if path.exists() and not force:
        raise InputError(f"{what} {str(path)!r} already exists; pass --force to overwrite it or choose another name.")
    _probe_writable(path.parent, what, path)
    return path


def _place(tmp: Path, path: Path, overwrite: bool) -> None:
    """Move the complete ``tmp`` onto ``path``; without ``overwrite``, never onto a file that exists by now."""
    if overwrite:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)  # atomic, and fails if ``path`` exists
    except FileExistsError:
        tmp.unlink(missing_ok=True)
        raise InputError(f"{str(path)!r} appeared while this run was writing it; it was left as it is and nothing "
                         "was written. Pass --force to overwrite it, or choose another name.") from None
    except OSError:  # no hard links here (some network or FAT file systems)
        if path.exists():
            tmp.unlink(missing_ok=True)
            raise InputError(f"{str(path)!r} appeared while this run was writing it; nothing was written.") from None
        os.replace(tmp, path)
        return
    tmp.unlink()


def budget_path(output: str | os.PathLike) -> Path:
    """The budget record written beside an output, one per output file: ``o.csv`` -> ``o.csv.budget.json`` (so
    ``o.csv`` and ``o.parquet`` never share one)."""
    output = Path(output)
    return output.with_name(output.name + ".budget.json")


def sha256_of(path: str | os.PathLike) -> str:
    """The SHA-256 of a file, read in blocks (the budget record names the exact file it describes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class TableWriter:
    """Write a table in batches to a hidden partial file, moved onto ``path`` by :meth:`commit`.

    Parameters
    ----------
    path : str or PathLike
        Target file (``.csv``, ``.tsv`` or ``.parquet``); checked with :func:`check_output` beforehand.
    sep : str, optional
        CSV separator (default ``,``; tab for ``.tsv``).
    overwrite : bool, default=False
        Replace ``path`` if it exists at commit (only when the user asked to, e.g. ``--force``).
    """

    def __init__(self, path: str | os.PathLike, *, sep: str | None = None, overwrite: bool = False):
        self.path = Path(path)
        self.overwrite = overwrite
        self.format = table_format(self.path, writing=True)
        self.sep = sep or _CSV.get(self.path.suffix.lower()) or ","
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".partial", dir=self.path.parent)
        os.close(fd)
        self._tmp = Path(tmp)
        self._parquet = None
        self.n_rows = 0

    def write(self, batch: pd.DataFrame) -> None:
        """Append one batch."""
        if self.format == "csv":
            batch.to_csv(self._tmp, sep=self.sep, index=False, header=self.n_rows == 0,
                         mode="w" if self.n_rows == 0 else "a", encoding="utf-8")
        else:  # pyarrow only when a Parquet file is written (its import is slow)
            import pyarrow as pa
            import pyarrow.parquet as pq

            if self._parquet is None:
                table = pa.Table.from_pandas(batch, preserve_index=False)
                self._parquet = pq.ParquetWriter(self._tmp, table.schema)
            else:
                table = pa.Table.from_pandas(batch, schema=self._parquet.schema, preserve_index=False)
            self._parquet.write_table(table)
        self.n_rows += len(batch)

    def commit(self) -> Path:
        """Move the complete file onto ``path``."""
        if self._parquet is not None:
            self._parquet.close()
            self._parquet = None
        _place(self._tmp, self.path, self.overwrite)
        return self.path

    def abort(self) -> None:
        """Remove the partial file."""
        if self._parquet is not None:
            self._parquet.close()
            self._parquet = None
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is not None:
            self.abort()
        elif self._tmp.exists():
            self.commit()


def write_table(frame: pd.DataFrame, path: str | os.PathLike, *, sep: str | None = None,
                overwrite: bool = False) -> Path:
    """Write one table (CSV or Parquet by extension), complete or not at all (see :class:`TableWriter`)."""
    with TableWriter(path, sep=sep, overwrite=overwrite) as writer:
        writer.write(frame)
    return Path(path)


# --------------------------------------------------------------------------- JSON and terminal output
def json_safe(obj: Any) -> Any:
    """A structure that :func:`json.dumps` writes as strict JSON: inf as ``"inf"``, NaN as null."""
    if isinstance(obj, float | np.floating):
        value = float(obj)
        if math.isnan(value):
            return None
        return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, int | np.integer):
        return int(obj)
    if obj is None or isinstance(obj, str):
        return obj
    if obj is pd.NA or obj is pd.NaT:
        return None
    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if is_dataclass(obj) and not isinstance(obj, type):
        return json_safe(asdict(obj))
    if isinstance(obj, list | tuple | set | frozenset | np.ndarray):
        return [json_safe(v) for v in obj]
    if isinstance(obj, pd.Timestamp):
        return obj.isoformat()
    return str(obj)


def dumps_json(obj: Any) -> str:
    """Strict JSON text (never Infinity or NaN)."""
    return json.dumps(json_safe(obj), indent=2, allow_nan=False)


def write_json(obj: Any, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write strict JSON, complete or not at all (checked with :func:`check_output` beforehand; ``overwrite`` as in
    :class:`TableWriter`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(dumps_json(obj) + "\n")
        _place(Path(tmp), path, overwrite)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def print_stdout(text: str) -> bool:
    """Print to stdout; when the reader has gone (``... | head``) stop quietly and return False."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        silence_stdout()
        return False
    return True


def silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not fail after a broken pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (captured in-process)
        pass
