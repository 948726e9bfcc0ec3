"""The ledger's file format: canonical JSON lines, the chain rules, the writers' lock and redaction."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None
    import msvcrt

__all__ = ["GENESIS", "REDACTED", "LedgerIntegrityError", "redact"]

GENESIS = "0" * 64
REDACTED = "<redacted>"


class LedgerIntegrityError(ValueError):
    """The ledger file was edited, truncated, reordered or is not valid JSON lines.

    Attributes
    ----------
    line : int or None
        Line number (1-based) of the first bad entry.
    seq : int or None
        Its ``seq`` when it could be read.
    problem : str
        What is wrong with it.
    """

    def __init__(self, message: str, *, line: int | None = None, seq: int | None = None, problem: str = ""):
        super().__init__(message)
        self.line = line
        self.seq = seq
        self.problem = problem or message

    @property
    def where(self) -> str:
        """``"line N (seq S)"`` (or ``"ledger"`` for a problem of the whole file)."""
        if self.line is None:
            return "ledger"
        return f"line {self.line}" + (f" (seq {self.seq})" if self.seq is not None else "")


def _canonical(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _digest(entry: dict[str, Any]) -> str:
    return hashlib.sha256(_canonical({k: v for k, v in entry.items() if k != "hash"})).hexdigest()


@dataclass(frozen=True)
class _Mark:
    """The end of what a handle has verified: byte offset, line number, seq and hash of the last entry."""

    offset: int = 0
    line: int = 0
    seq: int = -1
    hash: str = GENESIS
    start: int = 0


@dataclass
class _Line:
    lineno: int
    start: int
    end: int
    entry: dict | None
    error: str | None
    raw: bytes = b""


def _parse(raw: bytes) -> tuple[dict | None, str | None]:
    if not raw.endswith(b"\n"):
        return None, "is incomplete (no final newline: an interrupted or partial write)"
    try:
        entry = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"is not valid JSON ({getattr(exc, 'msg', exc)})"
    if not isinstance(entry, dict):
        return None, "is not a JSON object"
    return entry, None


def _iter_lines(fh: Any, start: int, lineno: int) -> Iterator[_Line]:
    """Non-blank lines from byte ``start`` on (``lineno``: the number of lines before it)."""
    fh.seek(start)
    pos = start
    for raw in fh:
        lineno += 1
        end = pos + len(raw)
        if raw.strip():
            entry, error = _parse(raw)
            yield _Line(lineno, pos, end, entry, error, raw)
        pos = end


def _hash_matches(line: _Line) -> bool:
    """Whether the entry's ``hash`` is the digest of the rest of it.

    Fast path: a line as written is the canonical JSON of the entry, so the
    digest is the SHA-256 of the line with its ``"hash"`` member cut out (no
    re-serialisation). Any other line is re-serialised canonically and checked.
    """
    h = line.entry.get("hash")
    if not isinstance(h, str):
        return False
    member = b'"hash":' + json.dumps(h).encode()
    raw = line.raw.rstrip(b"\r\n")
    for cut in (b"," + member, member + b","):
        if raw.count(cut) == 1 and hashlib.sha256(raw.replace(cut, b"")).hexdigest() == h:
            return True
    return h == _digest(line.entry)


def _entry_problems(line: _Line, prev_hash: str | None, expected_seq: int) -> list[str]:
    if line.error:
        return [line.error]
    e, out = line.entry, []
    if e.get("seq") != expected_seq:
        out.append(f"seq {e.get('seq')!r} where {expected_seq} was expected (entries deleted, inserted or reordered)")
    if prev_hash is not None and e.get("prev_hash") != prev_hash:  # None: the line before was unreadable
        out.append("prev_hash does not match the previous entry's hash (entries deleted, inserted or reordered)")
    if not _hash_matches(line):
        out.append("content does not match its hash (edited)")
    return out


def _error(path: Path, line: int | None, seq: Any, problem: str) -> LedgerIntegrityError:
    err = LedgerIntegrityError("", line=line, seq=seq if isinstance(seq, int) else None, problem=problem)
    err.args = (f"{path}: {err.where}: {problem}",)
    return err


@contextmanager
def _file_lock(path: Path, exclusive: bool) -> Iterator[None]:
    """An advisory lock on ``path`` (created): exclusive for writers, shared for readers."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        if exclusive:
            raise
        fd = None  # a read-only folder (a published ledger): readers go without the lock
    try:
        if fd is not None:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            else:  # pragma: no cover - Windows
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
        yield
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock


def _redact_path(node: Any, parts: list[str]) -> None:
    key, rest = parts[0], parts[1:]
    if isinstance(node, dict):
        keys = list(node) if key == "*" else [key] if key in node else []
    elif isinstance(node, list) and key == "*":
        keys = list(range(len(node)))
    else:
        return
    for k in keys:
        if rest:
            _redact_path(node[k], rest)
        else:
            node[k] = REDACTED


def redact(entry: dict[str, Any]) -> dict[str, Any]:
    """A copy of a ledger entry with every field in its ``confidential_fields`` replaced by ``"<redacted>"``.

    ``seq``, ``prev_hash`` and ``hash`` are kept (the chain's links stay
    visible); ``"redacted": true`` marks the copy.
    """
    out = copy.deepcopy(entry)
    for path in entry.get("confidential_fields", []):
        if path and path.split(".", 1)[0] not in ("seq", "prev_hash", "hash", "confidential_fields"):
            _redact_path(out, path.split("."))
    out["redacted"] = True
    return out
