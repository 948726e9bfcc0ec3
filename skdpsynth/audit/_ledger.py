"""The release ledger: append-only, hash-chained JSON lines, safe for concurrent writers.

Every entry is one JSON object on one line with ``seq`` (0, 1, ...),
``prev_hash`` (the previous entry's ``hash``; 64 zeros for the first),
``timestamp`` (UTC, ISO 8601), ``event`` (``"fit"``, ``"partial_fit"``,
``"audit"``, ``"release"``, ...), a random ``nonce`` and the event's payload;
``hash`` is the SHA-256 of the canonical JSON (sorted keys, no spaces) of
everything else. Any edit of an entry changes its hash; deleting or reordering
entries breaks the ``prev_hash`` chain or the ``seq`` numbering. Truncating the
tail leaves a valid shorter chain: keep the last ``head`` somewhere else (e.g.
in the release notes) and pass it to :meth:`Ledger.verify` to detect that too.

Concurrency. Appends hold an exclusive ``fcntl.flock`` on a lock file beside
the ledger (``<name>.lock``), so several processes (or machines sharing the
folder over NFS, where Linux maps ``flock`` to POSIX locks) can append to one
ledger: numbering stays contiguous and the chain unbroken.

Verification. The process remembers, per ledger file, the end of what it last
verified (offset, line, ``seq``, ``hash``). The first append verifies the whole
file; later appends (through any handle of the same file) re-check only the
last verified line and whatever other writers appended since, so appending does
not slow down as the ledger grows. A ledger shorter than what was verified, or
whose last verified line changed, is refused.
:meth:`Ledger.verify` re-checks everything on demand and reports the first
bad entry (line, ``seq``, what is wrong).

Publishing. Fields computed from confidential data (everything a check that
reads the real rows found -- its score, pass/fail, applicability, reasons and
details --, the exact verdict, exact sizes of the private tables), seeds and
the nonce are listed in each entry's ``confidential_fields`` (dotted paths,
``*`` for any key); :func:`redact` / :meth:`Ledger.redacted` replace them with
``"<redacted>"``. Which paths are listed depends on public facts only, so a
published entry has the same structure for neighbouring data. A verdict is
published only through ``verdict`` (public checks, or noisy threshold tests
whose cost is the entry's ``audit_budget``). The nonce keeps the published hashes from confirming
guesses of the redacted values; a redacted ledger still shows its ``seq`` /
``prev_hash`` / ``hash`` links, while the content hashes can be checked only
by whoever holds the full ledger.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from skdpsynth.audit._base import jsonable
from skdpsynth.audit._ledger_format import (
    GENESIS,
    REDACTED,
    LedgerIntegrityError,
    _canonical,
    _digest,
    _entry_problems,
    _error,
    _file_lock,
    _iter_lines,
    _Line,
    _Mark,
    _parse,
    redact,
)
from skdpsynth.audit._provenance import library_versions, synthesizer_confidential, synthesizer_record

__all__ = ["Ledger", "LedgerIntegrityError", "redact", "library_versions", "synthesizer_record", "REDACTED"]

_RESERVED = {"seq", "prev_hash", "hash", "timestamp", "event", "confidential_fields", "nonce"}


class Ledger:
    """Append-only, hash-chained JSON-lines log of fits, audits and releases (safe for concurrent writers).

    Parameters
    ----------
    path : str or PathLike
        The ``.jsonl`` file (created on the first append); ``<path>.lock``
        beside it serialises writers.

    Examples
    --------
    >>> import tempfile, os
    >>> led = Ledger(os.path.join(tempfile.mkdtemp(), "ledger.jsonl"))
    >>> _ = led.append("note", {"text": "first"})
    >>> led.verify()
    True
    """

    #: the last verified mark per ledger file, shared by the handles of this process
    _marks: dict[str, _Mark] = {}

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    @property
    def _mark(self) -> _Mark | None:
        return Ledger._marks.get(self._key())

    @_mark.setter
    def _mark(self, mark: _Mark | None) -> None:
        if mark is None:
            Ledger._marks.pop(self._key(), None)
        else:
            Ledger._marks[self._key()] = mark

    def _key(self) -> str:
        return os.path.realpath(self.path)

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    @property
    def lock_path(self) -> Path:
        """The lock file beside the ledger."""
        return self.path.with_name(self.path.name + ".lock")

    def _lock(self, exclusive: bool):
        if exclusive:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        return _file_lock(self.lock_path, exclusive)

    # reading -----------------------------------------------------------------
    def _lines(self) -> Iterator[_Line]:
        if not self.path.exists():
            return
        with self._lock(exclusive=False), open(self.path, "rb") as fh:
            yield from _iter_lines(fh, 0, 0)

    def read(self) -> list[dict[str, Any]]:
        """All entries, oldest first (not verified; see :meth:`verify`)."""
        out = []
        for ln in self._lines():
            if ln.error:
                raise _error(self.path, ln.lineno, None, ln.error)
            out.append(ln.entry)
        return out

    def redacted(self) -> list[dict[str, Any]]:
        """All entries with their confidential fields redacted (:func:`redact`): the publishable ledger."""
        return [redact(e) for e in self.read()]

    def __len__(self) -> int:
        return sum(1 for _ in self._lines())

    @property
    def head(self) -> str:
        """The last entry's hash (64 zeros for an empty ledger)."""
        last = None
        for ln in self._lines():
            last = ln
        if last is None:
            return GENESIS
        if last.error:
            raise _error(self.path, last.lineno, None, last.error)
        return last.entry.get("hash", GENESIS)

    # verification --------------------------------------------------------------
    def _walk(self, fh: Any, mark: _Mark, *, first_only: bool) -> tuple[_Mark, list[LedgerIntegrityError], int]:
        """Verify from ``mark`` to the end; return the new mark, the problems and the last line number."""
        prev, seq, cur, problems, last_line = mark.hash, mark.seq, mark, [], mark.line
        for ln in _iter_lines(fh, mark.offset, mark.line):
            last_line = ln.lineno
            found = _entry_problems(ln, prev, seq + 1)
            entry_seq = ln.entry.get("seq") if ln.entry else None
            if found:
                problems.append(_error(self.path, ln.lineno, entry_seq, "; ".join(found)))
                if first_only:
                    break
            if ln.entry is None:
                seq, prev = seq + 1, None
                continue
            seq = entry_seq if isinstance(entry_seq, int) else seq + 1  # resync: one deletion is one problem
            prev = ln.entry.get("hash")
            cur = _Mark(ln.end, ln.lineno, seq, prev, ln.start)
        return cur, problems, last_line

    def _still_there(self, fh: Any, mark: _Mark) -> bool:
        """Whether the last verified line is still where and what it was."""
        if mark.offset == 0:
            return True
        fh.seek(mark.start)
        entry, error = _parse(fh.read(mark.offset - mark.start))
        return error is None and entry.get("hash") == mark.hash == _digest(entry) and entry.get("seq") == mark.seq

    def _verified_end(self, fh: Any) -> tuple[_Mark, int]:
        """Verify what is new since this handle's mark (everything on first use); raise on the first problem."""
        mark = self._mark
        if mark is not None and (os.fstat(fh.fileno()).st_size < mark.offset or not self._still_there(fh, mark)):
            self._mark = None
            _, problems, _ = self._walk(fh, _Mark(), first_only=True)
            if problems:
                raise problems[0]
            raise _error(self.path, mark.line, mark.seq,
                         "the ledger no longer holds what this handle verified there (entries were removed or "
                         "rewritten)")
        new, problems, last_line = self._walk(fh, mark or _Mark(), first_only=True)
        if problems:
            raise problems[0]
        self._mark = new
        return new, last_line

    def problems(self, *, head: str | None = None) -> list[str]:
        """Every integrity problem found, as ``"line N (seq S): what"`` (empty when the ledger verifies)."""
        return [f"{p.where}: {p.problem}" for p in self._problems(head)]

    def _problems(self, head: str | None) -> list[LedgerIntegrityError]:
        if not self.path.exists():
            found, mark = [], _Mark()
        else:
            with self._lock(exclusive=False), open(self.path, "rb") as fh:
                mark, found, _ = self._walk(fh, _Mark(), first_only=False)
        if not found:
            self._mark = mark
        if head is not None and mark.hash != head:
            found.append(_error(self.path, None, None, f"last hash {mark.hash[:12]}... differs from the expected "
                                                       f"head {head[:12]}... (truncated or extended)"))
        return found

    def verify(self, *, head: str | None = None, raise_on_error: bool = False) -> bool:
        """Check every hash, the chain and the numbering (the whole file).

        Parameters
        ----------
        head : str, optional
            The expected last hash, kept elsewhere: detects a truncated tail.
        raise_on_error : bool, default=False
            Raise :class:`LedgerIntegrityError` for the first bad entry (its
            ``line``, ``seq`` and ``problem``) instead of returning False.

        Returns
        -------
        bool
        """
        found = self._problems(head)
        if found and raise_on_error:
            raise found[0]
        return not found

    # writing -----------------------------------------------------------------
    def append(self, event: str, payload: dict[str, Any], *, confidential_fields: list[str] | None = None
               ) -> dict[str, Any]:
        """Append one entry under the writers' lock and return it (with ``seq``, ``prev_hash``, ``hash``).

        What other writers appended since this handle last looked is verified
        first (the whole file on the handle's first use): nothing is appended
        to a broken chain. ``confidential_fields`` are dotted paths into
        ``payload`` (``*`` for any key); the nonce is always confidential.
        """
        if not isinstance(event, str) or not event:
            raise ValueError("event must be a non-empty string such as 'audit' or 'release'.")
        clash = sorted(_RESERVED & set(payload))
        if clash:
            raise ValueError(f"payload keys {clash} are reserved by the ledger.")
        body = jsonable(payload)
        confidential = sorted({*(confidential_fields or []), "nonce"})
        with self._lock(exclusive=True), open(self.path, "a+b") as fh:
            mark, last_line = self._verified_end(fh)
            entry = {"seq": mark.seq + 1, "prev_hash": mark.hash,
                     "timestamp": _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds"), "event": event,
                     "nonce": secrets.token_hex(16), **body, "confidential_fields": confidential}
            entry["hash"] = _digest(entry)
            line = _canonical(entry) + b"\n"
            fh.seek(0, os.SEEK_END)
            start = fh.tell()
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
            self._mark = _Mark(start + len(line), last_line + 1, entry["seq"], entry["hash"], start)
        return entry

    def record_fit(self, synthesizer: Any, *, event: str = "fit", n_rows: int | None = None,
                   note: str | None = None) -> dict[str, Any]:
        """Log a fit (or ``event="partial_fit"``): class, params, privacy spend, budget log, DP size estimate.

        ``n_rows`` (the exact size of the private table) and the seeds are confidential fields.
        """
        rec = synthesizer_record(synthesizer)
        payload: dict[str, Any] = {"synthesizer": rec, "library_versions": library_versions()}
        confidential = synthesizer_confidential(rec)
        if n_rows is not None:
            payload["n_rows"] = int(n_rows)
            confidential.append("n_rows")
        if note:
            payload["note"] = note
        return self.append(event, payload, confidential_fields=confidential)

    def record_audit(self, report: Any) -> dict[str, Any]:
        """Log an :class:`~skdpsynth.audit.AuditReport` (its ``ledger_payload``)."""
        payload, confidential = report.ledger_payload()
        return self.append("audit", payload, confidential_fields=confidential)

    def record_release(self, synthetic: Any, *, synthesizer: Any = None, report: Any = None,
                       destination: str | None = None, note: str | None = None) -> dict[str, Any]:
        """Log a release: a SHA-256 fingerprint of the released table, its columns and size, the audit it passed.

        The row count is public only when it is the synthesizer's DP estimate
        ``n_estimate_`` (the default release size); otherwise it may be the
        exact private size and is a confidential field. The audit's exact
        verdict (``approved``, ``reasons``, ``public_reasons``) is confidential
        whenever a check read confidential rows; ``verdict`` is what may be
        published (see :attr:`AuditReport.verdict`).
        """
        digest = hashlib.sha256(pd.util.hash_pandas_object(synthetic, index=False).to_numpy().tobytes()).hexdigest()
        rec = synthesizer_record(synthesizer)
        n = int(len(synthetic))
        payload: dict[str, Any] = {"synthetic_sha256": digest, "n_rows": n,
                                   "columns": [str(c) for c in synthetic.columns], "synthesizer": rec,
                                   "library_versions": library_versions()}
        confidential = synthesizer_confidential(rec)
        size_public = rec.get("n_estimate") == n or (
            report is not None and report.data.get("release_size") == "dp_estimate"
            and report.data.get("n_synthetic") == n)
        if not size_public:
            confidential.append("n_rows")
        if report is not None:
            payload.update(approved=bool(report.approved), reasons=list(report.reasons),
                           public_reasons=list(report.public_reasons), verdict=report.verdict,
                           audit_id=report.audit_id)
            secret = any(r.uses_confidential_data for r in report.results.values())
            confidential += ["reasons", "approved", "public_reasons"] if secret else ["reasons"]
        if destination is not None:
            payload["destination"] = str(destination)
        if note:
            payload["note"] = note
        return self.append("release", payload, confidential_fields=confidential)
