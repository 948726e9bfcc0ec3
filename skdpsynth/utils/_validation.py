"""Input validation shared by every synthesizer and metric.

All checks run before any privacy budget is spent and name the offending column or
parameter.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
import scipy.sparse as sp

from skdpsynth.exceptions import SchemaError


def _array_to_frame(X: object) -> pd.DataFrame:
    arr = np.asarray(X)
    if np.iscomplexobj(arr):
        raise ValueError("Complex data not supported: give real numbers or categories.")
    if arr.ndim == 1:
        raise ValueError(
            "Expected 2D array, got 1D array instead. Reshape your data with "
            "array.reshape(-1, 1) for a single column, or pass a pandas DataFrame."
        )
    if arr.ndim != 2:
        raise ValueError(f"Expected a 2D table, got an array with {arr.ndim} dimensions.")
    return pd.DataFrame(arr, columns=[f"x{i}" for i in range(arr.shape[1])])


def check_table(X: object, y: object = None, *, y_name: str = "y", min_rows: int = 2) -> pd.DataFrame:
    """Validate a training table and return it as a DataFrame (the input is not modified).

    Parameters
    ----------
    X : pandas.DataFrame or array-like of shape (n_samples, n_features)
        The private table, one row per person. A 2-D NumPy array is accepted and
        its columns are named ``x0, x1, ...``. Sparse matrices are rejected.
    y : array-like of shape (n_samples,), optional
        A target to synthesize with ``X``: joined as one more column, named after
        the Series or ``y_name``.
    y_name : str, default="y"
        Column name for an unnamed ``y``.
    min_rows : int, default=2
        Fewest rows accepted.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    TypeError
        Sparse input.
    ValueError
        Empty input, too few rows, complex numbers, infinite values.
    SchemaError
        Duplicate, missing or non-string column names; a column mixing numbers
        and text.
    """
    if sp.issparse(X) or (isinstance(X, pd.DataFrame) and any(isinstance(d, pd.SparseDtype) for d in X.dtypes)):
        raise TypeError(
            "sparse input is not supported: synthesizers model each column's distribution; "
            "convert with X.toarray() or a dense pandas DataFrame."
        )
    if isinstance(X, pd.Series):
        X = X.to_frame()
    frame = X if isinstance(X, pd.DataFrame) else _array_to_frame(X)
    bad_names = [c for c in frame.columns if not isinstance(c, str) or c == ""]
    if bad_names:
        raise SchemaError(
            f"column names must be non-empty strings; got {bad_names!r}. Rename them, "
            "e.g. X.columns = X.columns.astype(str)."
        )
    dup = frame.columns[frame.columns.duplicated()].unique().tolist()
    if dup:
        raise SchemaError(f"duplicate column names {dup!r}: every column needs a unique name.")
    if frame.shape[1] == 0:
        raise ValueError(f"0 feature(s) (shape=({frame.shape[0]}, 0)) while a minimum of 1 is required.")
    if y is not None:
        arr = np.asarray(y)
        ys = y if isinstance(y, pd.Series) else pd.Series(arr.ravel() if arr.ndim > 1 and arr.shape[1] == 1 else arr)
        if ys.ndim != 1 or len(ys) != len(frame):
            raise ValueError(f"y has {len(ys)} values but X has {len(frame)} rows; they must match.")
        name = ys.name if isinstance(ys.name, str) and ys.name else y_name
        if name in frame.columns:
            raise SchemaError(f"y is named {name!r}, which is already a column of X; rename one of them.")
        frame = frame.copy()
        frame[name] = ys.to_numpy()
    n, d = frame.shape
    if d == 0:
        raise ValueError(f"0 feature(s) (shape=({n}, 0)) while a minimum of 1 is required.")
    if n == 0:
        raise ValueError(f"0 sample(s) (shape=(0, {d})) while a minimum of {min_rows} is required.")
    if n < min_rows:
        raise ValueError(
            f"n_samples = {n}: a synthesizer needs at least {min_rows} rows (people) to learn from."
        )
    _check_columns(frame)
    return frame


def _has_inf(col: pd.Series) -> bool:
    """Whether a numeric column holds an infinite value (integer columns cannot; floats are read without a copy)."""
    if pd.api.types.is_integer_dtype(col.dtype):
        return False
    if isinstance(col.dtype, np.dtype) and col.dtype.kind == "f":
        return bool(np.isinf(col.to_numpy()).any())
    return bool(np.isinf(col.to_numpy(dtype=float, na_value=np.nan)).any())


#: rows sampled to decide whether an object column repeats a few objects (:func:`distinct_objects`)
_IDENTITY_SAMPLE = 4096


def distinct_objects(values: np.ndarray, codes: bool = True) -> tuple[np.ndarray | None, np.ndarray] | None:
    """``(codes, objects)`` with ``values == objects[codes]``, the objects told apart by identity; None when most
    values are distinct objects. ``codes=False``: the objects only (``codes`` is None).

    Text columns repeat a few string objects (readers and constructors share them), so looking up the references,
    machine integers, is several times faster than hashing the values, and one object has one value: whatever is
    decided for ``objects`` holds for every row. Equal values may still be different objects.
    """
    values = np.ascontiguousarray(values, dtype=object)
    refs = np.frombuffer(memoryview(values), dtype=np.intp)  # the objects' addresses; ``values`` keeps them alive
    head_codes, known = pd.factorize(refs[:_IDENTITY_SAMPLE])
    if len(known) > len(head_codes) // 4:
        return None
    table = _AddressTable.build(known)
    if table is None:  # every slot layout tried collides: hash every reference
        out, uniq = pd.factorize(refs)
        return (out if codes else None), values[_a_row_of_each(out, len(uniq))]
    out, new = table.lookup(refs, codes)
    objects = values[_a_row_of_each(head_codes, len(known))]
    if new.size:  # objects the head does not hold
        new_codes, extra = pd.factorize(refs[new])
        if codes:
            out[new] = len(known) + new_codes
        objects = np.concatenate([objects, values[new[_a_row_of_each(new_codes, len(extra))]]])
    return out, objects


def _a_row_of_each(codes: np.ndarray, k: int) -> np.ndarray:
    """A position of every code ``0 .. k - 1`` in ``codes`` (each occurs; any position will do)."""
    where = np.zeros(k, dtype=np.intp)
    where[codes] = np.arange(len(codes))
    return where


class _AddressTable:
    """A table of a few addresses without collisions: slot = the top bits of ``address * multiplier`` (mod 2**64)."""

    #: odd multipliers tried in turn (Fibonacci hashing, then a few more)
    MULTIPLIERS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                   0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9)

    def __init__(self, refs: np.ndarray, multiplier: int, bits: int) -> None:
        self.multiplier, self.bits = multiplier, bits
        slots = _address_slots(refs, multiplier, bits)
        self.refs = np.zeros(1 << bits, dtype=np.intp)
        self.codes = np.zeros(1 << bits, dtype=np.intp)
        self.refs[slots] = refs
        self.codes[slots] = np.arange(len(refs))

    @classmethod
    def build(cls, refs: np.ndarray) -> _AddressTable | None:
        """A table of ``refs`` (distinct), or None when every multiplier tried collides."""
        bits = min(16, max(8, (2 * len(refs) ** 2).bit_length()))  # about 2 k^2 slots: few collisions
        for multiplier in cls.MULTIPLIERS:
            if len(np.unique(_address_slots(refs, multiplier, bits))) == len(refs):
                return cls(refs, multiplier, bits)
        return None

    def lookup(self, refs: np.ndarray, codes: bool = True) -> tuple[np.ndarray | None, np.ndarray]:
        """The code of every address (None unless ``codes``), and the positions of those not in the table (their
        codes are wrong)."""
        slots = _address_slots(refs, self.multiplier, self.bits)
        return (self.codes[slots] if codes else None), np.flatnonzero(self.refs[slots] != refs)


def _address_slots(refs: np.ndarray, multiplier: int, bits: int) -> np.ndarray:
    slots = refs.view(np.uint64) * np.uint64(multiplier)  # wraps around: the product mod 2**64
    slots >>= np.uint64(64 - bits)
    return slots.view(np.intp)


def _distinct_present(col: pd.Series) -> np.ndarray:
    """The distinct non-missing values of an object column (one hashing pass, no copy of the column)."""
    try:  # C-level hashing of the whole column, then the (few) missing markers dropped from the distinct values
        uniq = pd.unique(col.to_numpy())
    except TypeError:  # unhashable values (lists, dicts): reported by the caller
        return col.dropna().to_numpy()
    return uniq[~pd.isna(uniq)]


def _present_objects(col: pd.Series) -> np.ndarray | None:
    """Distinct non-missing values (or objects) of an object column, to tell its type; None for text only."""
    found = distinct_objects(col.to_numpy(), codes=False)
    if found is None:
        if pd.api.types.infer_dtype(col, skipna=True) == "string":
            return None  # text only: one type scan in C, no hashing
        return _distinct_present(col)
    objects = found[1][~pd.isna(found[1])]
    return None if all(isinstance(v, str) for v in objects) else objects


def _check_columns(frame: pd.DataFrame) -> None:
    problems = []
    for name in frame.columns:
        col = frame[name]
        if pd.api.types.is_complex_dtype(col.dtype):
            raise ValueError(f"Complex data not supported (column {name!r}).")
        if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
            if _has_inf(col):
                problems.append(f"{name!r} contains infinite values (inf); replace them by NaN or finite numbers")
        elif col.dtype == object:
            values = _present_objects(col)  # kinds of the distinct values (equal values share a kind)
            if values is None:
                continue  # text only
            kinds = {_value_kind(v) for v in values}
            if "other" in kinds:
                bad = next(v for v in col.dropna().to_numpy() if _value_kind(v) == "other")
                raise TypeError(
                    f"column {name!r} holds a value of type {type(bad).__name__}: argument must be a string "
                    "or a number."
                )
            if kinds == {"number"}:
                values = col.to_numpy(dtype=float, na_value=np.nan)
                if np.isinf(values).any():
                    problems.append(f"{name!r} contains infinite values (inf)")
            elif len(kinds) > 1:
                problems.append(
                    f"{name!r} mixes numbers and text; cast it to one type (e.g. X[{name!r}].astype(str))"
                )
    if problems:
        raise ValueError("invalid column(s): " + "; ".join(problems) + ".")


def _value_kind(v: object) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "number"
    if isinstance(v, numbers.Number):
        return "number"
    if isinstance(v, str):
        return "text"
    if isinstance(v, (pd.Timestamp, np.datetime64)):
        return "datetime"
    return "other"


def check_n_samples(n_samples: object) -> int:
    """Validate the number of rows to sample.

    Parameters
    ----------
    n_samples : int
        Must be a positive integer.

    Returns
    -------
    int
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, (numbers.Integral,)) or n_samples <= 0:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}.")
    return int(n_samples)
